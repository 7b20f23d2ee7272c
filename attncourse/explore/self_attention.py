"""The self-attention explorer's view: the toy sentence of chapter 4, one token's attention."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Tuple

import numpy as np

from .._backend import AttentionInputError
from .._validation import int_at_least, public
from ..functional import scaled_dot_product_attention
from ._common import TOKENS

__all__ = ["EMBEDDING", "ORDERS", "DEFAULT_TOKEN", "SelfAttentionView", "self_attention_view"]

# Chapter 4's hand-written embedding table: word -> d_model = 4 numbers.
EMBEDDING: Dict[str, Tuple[float, ...]] = {
    "the": (1.0, 0.0, 0.0, 0.5),
    "cat": (0.0, 1.0, 1.0, 0.0),
    "sat": (0.0, 1.0, 0.0, 1.0),
    "on": (1.0, 0.0, 1.0, 0.0),
    "mat": (0.0, 0.0, 1.0, 1.0),
}
# The sentence in its own order, and the same words shuffled (self-attention cannot tell).
ORDERS: Dict[str, Tuple[int, ...]] = {"original": (0, 1, 2, 3, 4, 5), "shuffled": (5, 2, 0, 4, 1, 3)}
DEFAULT_TOKEN = 1
_E = 3


@dataclass(frozen=True, eq=False)
class SelfAttentionView:
    """What the self-attention explorer shows (see :func:`self_attention_view`)."""

    tokens: Tuple[str, ...]  # the sentence in the chosen order
    order: str
    token: int  # the query's position in that order
    x: np.ndarray  # (L, d_model)
    q: np.ndarray  # (L, E)
    k: np.ndarray  # (L, E)
    v: np.ndarray  # (L, Ev)
    weights: np.ndarray  # (L, L)
    row: np.ndarray  # (L,) weights[token]
    out: np.ndarray  # (L, Ev)


@public("self_attention_view")
def self_attention_view(
    token: int = DEFAULT_TOKEN, order: str = "original", seed: int = 0
) -> SelfAttentionView:
    r"""Self-attention over "the cat sat on the mat": :math:`Q = XW_Q,\ K = XW_K,\ V = XW_V`.

    ``W_Q, W_K, W_V (4, 3)`` are random, rounded to one decimal (as in chapter 4).  ``order``
    ``"shuffled"`` permutes the words: every token's row of weights is permuted with them and
    otherwise unchanged (self-attention is permutation-equivariant without positions).

    Examples
    --------
    >>> a, b = self_attention_view(1), self_attention_view(4, "shuffled")  # "cat" in both orders
    >>> a.tokens[1], b.tokens[4]
    ('cat', 'cat')
    >>> bool(np.allclose(a.row[list(ORDERS["shuffled"])], b.row))
    True
    """
    if order not in ORDERS:
        raise AttentionInputError(f"order must be one of {tuple(ORDERS)}; got {order!r}.")
    token = int_at_least("token", token, 0)
    if token >= len(TOKENS):
        raise AttentionInputError(f"token must be below L={len(TOKENS)}; got {token}.")
    rng = np.random.default_rng(seed)
    w_q, w_k, w_v = rng.normal(size=(3, 4, _E)).round(1)  # each (d_model, E)
    tokens = tuple(TOKENS[i] for i in ORDERS[order])
    x = np.array([EMBEDDING[t] for t in tokens])  # (L, d_model)
    q, k, v = x @ w_q, x @ w_k, x @ w_v  # (L, d_model) @ (d_model, E) -> (L, E)
    out, weights = scaled_dot_product_attention(q, k, v)  # (L, Ev), (L, L); scale 1/sqrt(E)
    return SelfAttentionView(
        tokens=tokens,
        order=order,
        token=token,
        x=x,
        q=q,
        k=k,
        v=v,
        weights=weights,
        row=weights[token],
        out=out,
    )
