"""The self-attention explorer's view: the toy sentence of chapter 4, one token's attention."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Tuple

import numpy as np

from .._backend import AttentionInputError
from .._validation import int_at_least, public
from ..functional import scaled_dot_product_attention
from ..toy_data import EMBEDDING, SENTENCE, W_K, W_Q, W_V, embed

__all__ = ["EMBEDDING", "ORDERS", "DEFAULT_TOKEN", "SelfAttentionView", "self_attention_view"]

# The sentence in its own order, and the same words shuffled (self-attention cannot tell).
ORDERS: Dict[str, Tuple[int, ...]] = {"original": (0, 1, 2, 3, 4, 5), "shuffled": (5, 2, 0, 4, 1, 3)}
DEFAULT_TOKEN = 1  # "cat", the query chapter 4 works through by hand


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
def self_attention_view(token: int = DEFAULT_TOKEN, order: str = "original") -> SelfAttentionView:
    r"""Chapter 4's self-attention over "the cat sat on the mat": :math:`Q = XW_Q,\ K = XW_K,\ V = XW_V`.

    The model is the chapter's, from :mod:`attncourse.toy_data`: its embedding table
    (``EMBEDDING``, ``d_model = 4``), its integer ``(4, 4)`` matrices ``W_Q, W_K, W_V`` and the
    scale :math:`1/\sqrt{E} = 1/2`.  ``order`` ``"shuffled"`` permutes the words: every token's
    row of weights is permuted with them and otherwise unchanged (self-attention is
    permutation-equivariant without positions).

    Examples
    --------
    >>> round(float(self_attention_view(1).row[5]), 4)  # cat -> mat, as chapter 4 prints it
    0.4241
    >>> a, b = self_attention_view(1), self_attention_view(4, "shuffled")  # "cat" in both orders
    >>> a.tokens[1], b.tokens[4]
    ('cat', 'cat')
    >>> bool(np.allclose(a.row[list(ORDERS["shuffled"])], b.row))
    True
    """
    if order not in ORDERS:
        raise AttentionInputError(f"order must be one of {tuple(ORDERS)}; got {order!r}.")
    token = int_at_least("token", token, 0)
    if token >= len(SENTENCE):
        raise AttentionInputError(f"token must be below L={len(SENTENCE)}; got {token}.")
    tokens = tuple(SENTENCE[i] for i in ORDERS[order])
    x = embed(tokens)  # (L, d_model)
    q, k, v = x @ W_Q, x @ W_K, x @ W_V  # (L, d_model) @ (d_model, E) -> (L, E)
    out, weights = scaled_dot_product_attention(q, k, v)  # (L, Ev), (L, L); scale 1/sqrt(E) = 1/2
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
