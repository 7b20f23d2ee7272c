"""The heads explorer's view: multi-head self-attention over a toy sentence, one map per head.

Its data are chapter 5's (:mod:`attncourse.toy_data`): the embedding table, the untrained
projections and the sentence of the per-head maps, so the default view, four heads of
``d_head = 2``, is the chapter's picture and prints the chapter's numbers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence, Tuple

import numpy as np

from .. import toy_data
from .._backend import AttentionInputError
from .._validation import int_at_least, public
from ..functional import merge_heads, scaled_dot_product_attention, split_heads
from ._common import TOKENS, divisors

__all__ = ["DEFAULT_D_MODEL_HEADS", "DEFAULT_N_HEADS", "HEAD_SCALES", "HeadsView", "heads_view"]

# Chapter 5's per-head maps: d_model = 8 and four heads; n_heads runs over the divisors of d_model.
DEFAULT_D_MODEL_HEADS = toy_data.HEADS_D_MODEL
DEFAULT_N_HEADS = toy_data.HEADS_N_HEADS
# What the scores are divided by the square root of: the head's width (right) or the model's (a bug).
HEAD_SCALES: Tuple[str, ...] = ("d_head", "d_model")


@dataclass(frozen=True, eq=False)
class HeadsView:
    """What the heads explorer shows (see :func:`heads_view`)."""

    tokens: Tuple[str, ...]
    n_heads: int
    d_model: int
    d_head: int
    scale: float  # 1/sqrt(d_head), or 1/sqrt(d_model) with scale_by="d_model" (the bug)
    x: np.ndarray  # (L, d_model) the embeddings
    weights: np.ndarray  # (n_heads, L, L)
    out: np.ndarray  # (L, d_model)
    n_params: int  # W_Q, W_K, W_V, W_O (no biases, as in the chapter's layer): independent of n_heads
    n_params_per_head: int  # each head's slice of W_Q, W_K, W_V: 3 d_model d_head
    scale_by: str = "d_head"
    mean_entropy: float = 0.0  # of the rows of every head's map, in nats (ln L: uniform)


@public("heads_view")
def heads_view(
    n_heads: int = DEFAULT_N_HEADS,
    d_model: int = DEFAULT_D_MODEL_HEADS,
    tokens: Sequence[str] = TOKENS,
    seed: int = 1,
    scale_by: str = "d_head",
) -> HeadsView:
    """Multi-head self-attention over a toy sentence: one attention map per head.

    Chapter 5's data: each token's row of :func:`attncourse.toy_data.heads_embedding` (so a
    repeated word gets the same one), and the untrained ``W_Q, W_K, W_V, W_O`` of
    :func:`attncourse.toy_data.heads_projections`, ``(d_model, d_model)`` each, the same ones for
    every ``n_heads``: splitting into heads only decides which columns each head owns, so
    ``d_head`` shrinks as ``n_heads`` grows while the parameter count stays
    ``4 d_model^2`` (the four projections without biases, as in the chapter's
    ``ac.MultiHeadAttention(d_model, n_heads, bias=False)``).  The defaults are the
    chapter's per-head maps: ``d_model = 8``, four heads of ``d_head = 2``.

    Parameters
    ----------
    n_heads : int
        Must divide ``d_model``.
    d_model : int
        The width of the embedding table and of the projections.
    tokens : sequence of str, length L
        Words of :data:`attncourse.toy_data.HEADS_VOCAB`.
    seed : int
        Seed of the projections (1: the chapter's).
    scale_by : {"d_head", "d_model"}
        Divide the scores by ``sqrt(d_head)`` (right: each head's dot product sums ``d_head``
        terms) or by ``sqrt(d_model)``, chapter 5's bug: a temperature ``sqrt(n_heads)`` too high,
        which flattens every map the more the more heads there are.

    Returns
    -------
    HeadsView
        ``weights[h, i]``: how much token ``i`` attends to each token in head ``h``.

    Examples
    --------
    >>> v = heads_view()
    >>> v.weights.shape, v.d_head, v.n_params
    ((4, 6, 6), 2, 256)
    >>> print(f"{v.weights[0, 2].max():.2f}")  # head 0, query "sat": the chapter prints 0.20
    0.20
    >>> heads_view(1).n_params == heads_view(8).n_params
    True
    >>> heads_view(8, scale_by="d_model").mean_entropy > heads_view(8).mean_entropy
    True
    """
    d_model = int_at_least("d_model", d_model, 1)
    n_heads = int_at_least("n_heads", n_heads, 1)
    if d_model % n_heads:
        raise AttentionInputError(
            f"n_heads={n_heads} does not divide d_model={d_model}; "
            f"n_heads must be one of {list(divisors(d_model))}."
        )
    if scale_by not in HEAD_SCALES:
        raise AttentionInputError(f"scale_by must be one of {HEAD_SCALES}; got {scale_by!r}.")
    tokens = tuple(str(t) for t in tokens)
    if not tokens:
        raise AttentionInputError("tokens must not be empty.")
    unknown = sorted({t for t in tokens if t not in toy_data.HEADS_VOCAB})
    if unknown:
        raise AttentionInputError(
            f"tokens: no embedding for {unknown}; the table has {list(toy_data.HEADS_VOCAB)}."
        )
    embedding = toy_data.heads_embedding(d_model)  # (V, d_model)
    x = embedding[[toy_data.HEADS_VOCAB.index(t) for t in tokens]]  # (L, d_model)
    w_q, w_k, w_v, w_o = toy_data.heads_projections(d_model, seed)  # (d_model, d_model) each
    d_head = d_model // n_heads
    q = split_heads(x @ w_q, n_heads)  # (L, d_model) @ (d_model, d_model) -> (L, d_model) -> (H, L, d_head)
    k = split_heads(x @ w_k, n_heads)  # (H, L, d_head)
    v = split_heads(x @ w_v, n_heads)  # (H, L, d_head)
    scale = 1.0 / math.sqrt(d_head if scale_by == "d_head" else d_model)
    heads_out, weights = scaled_dot_product_attention(q, k, v, scale=scale)  # (H, L, d_head), (H, L, L)
    out = merge_heads(heads_out) @ w_o  # (H, L, d_head) -> (L, d_model) @ (d_model, d_model) -> (L, d_model)
    return HeadsView(
        tokens=tokens,
        n_heads=n_heads,
        d_model=d_model,
        d_head=d_head,
        scale=scale,
        x=x,
        weights=weights,
        out=out,
        n_params=4 * d_model * d_model,  # no biases
        n_params_per_head=3 * d_model * d_head,
        scale_by=scale_by,
        mean_entropy=float(-(weights * np.log(np.maximum(weights, 1e-300))).sum(-1).mean()),
    )
