"""Top-k sparse attention: each query attends to the ``top_k`` keys an indexer ranks highest (chapter 13).

Dense attention compares every query with every key and mixes every value: ``L * S`` scores and
``L * S * Ev`` multiply-adds for the output.  Most of the weight usually sits on a few keys, so a
query that attends only to its ``top_k`` best keys loses little and, for ``top_k << S``, does a
fraction of the work.  Which keys are best has to be known *before* the scores are computed: a
cheap **indexer** ranks the keys (DeepSeek Sparse Attention, 2025, uses a "lightning indexer" with
few heads, a small width and 8-bit numbers), and the real attention then reads only the keys it
picked::

    index_scores (..., L, S)  --top_k per row-->  idx (..., L, top_k)
    k[idx], v[idx]            (..., L, top_k, E), (..., L, top_k, Ev)   gathered per query
    softmax(q . k[idx] * scale) @ v[idx]                                  top_k scores per query

Without ``index_scores`` the indexer is the attention's own scores ``q k^T * scale``, which ranks
perfectly but saves nothing on the indexing step: the reference a cheap indexer is measured against.

Shape letters as in ``functional``: ``q (..., L, E)``, ``k (..., S, E)``, ``v (..., S, Ev)``.
numpy arrays and torch tensors (any device) are accepted.
"""

from __future__ import annotations

from typing import Any, Optional, Tuple

import numpy as np

from ._backend import AttentionInputError, fmt_shape, namespace
from ._validation import as_float, check_qkv, check_same_float, check_scale, positive_int, public
from .functional import softmax

__all__ = ["topk_attention"]

Array = Any  # a numpy array or a torch tensor


@public("topk_attention")
def topk_attention(
    q: Array,
    k: Array,
    v: Array,
    top_k: int,
    *,
    index_scores: Optional[Array] = None,
    is_causal: bool = False,
    scale: Optional[float] = None,
) -> Tuple[Array, Array]:
    """Attention of each query to the ``top_k`` keys with the largest ``index_scores``; ``(out, weights)``.

    Parameters
    ----------
    q : (..., L, E)
    k : (..., S, E)
    v : (..., S, Ev)
    top_k : int
        Keys kept per query.  ``top_k`` >= the number of keys a query may attend to keeps them all
        (dense attention).
    index_scores : (..., L, S), optional
        The indexer's ranking of the keys for each query, broadcastable to the scores' shape; any
        float dtype.  ``None``: the scaled scores ``q k^T * scale``.  Ties go to the lower key index.
    is_causal : bool
        Only keys ``j <= i`` may be picked for query ``i`` (top-left aligned, as in
        ``scaled_dot_product_attention``); a query with fewer than ``top_k`` of them keeps them all.
    scale : float, optional
        Multiplies the scores; ``None`` means ``1 / sqrt(E)``.

    Returns
    -------
    out : (..., L, Ev)
    weights : (..., L, S)
        Zero outside the kept keys.  Equal to ``scaled_dot_product_attention(q, k, v, kept)`` with
        ``kept`` the boolean ``(..., L, S)`` mask of the kept keys.  Same kind, device and dtype as ``q``.

    Examples
    --------
    >>> import numpy as np
    >>> from attncourse import scaled_dot_product_attention
    >>> rng = np.random.default_rng(0)
    >>> q, k, v = rng.normal(size=(4, 8)), rng.normal(size=(6, 8)), rng.normal(size=(6, 3))
    >>> out, weights = topk_attention(q, k, v, top_k=2)
    >>> (weights > 0).sum(-1)                                    # two keys per query
    array([2, 2, 2, 2])
    >>> kept = weights > 0
    >>> bool(np.allclose(out, scaled_dot_product_attention(q, k, v, kept)[0]))
    True
    >>> dense, _ = scaled_dot_product_attention(q, k, v)
    >>> bool(np.allclose(topk_attention(q, k, v, top_k=6)[0], dense))   # top_k >= S: dense
    True
    """
    ops = namespace(q=q, k=k, v=v, index_scores=index_scores)
    q, k, v = ops.asarray(q), ops.asarray(k), ops.asarray(v)
    check_same_float(ops, q=q, k=k, v=v)
    lead, (L, S, E, Ev) = check_qkv(q, k, v)
    top_k = positive_int("top_k", top_k)
    scale = check_scale(scale, E)

    out_dtype = q.dtype
    work = ops.compute_dtype(q)  # float32 for half precision
    q, k, v = ops.astype(q, work), ops.astype(k, work), ops.astype(v, work)
    if index_scores is None:  # the ideal indexer: the attention's own scores
        index_scores = (q * scale) @ ops.swap_last(k)  # (..., L, E) @ (..., E, S) -> (..., L, S)
    else:
        index_scores = _check_index_scores(ops, index_scores, lead + (L, S), like=q)
    index_scores = ops.broadcast_to(index_scores, lead + (L, S))
    allowed = ops.tril_mask(L, S, like=q) if is_causal else None  # (L, S), True = may be picked

    idx, valid = _select_keys(ops, index_scores, top_k, allowed)  # (..., L, K), K = min(top_k, S)
    # Gather each query's own keys and values: (..., 1, S, E) at (..., L, K, 1) -> (..., L, K, E).
    k_sel = ops.take_along_axis(ops.broadcast_to(k, lead + (S, E))[..., None, :, :], idx[..., None], axis=-2)
    v_sel = ops.take_along_axis(ops.broadcast_to(v, lead + (S, Ev))[..., None, :, :], idx[..., None], axis=-2)
    q = ops.broadcast_to(q, lead + (L, E))[..., :, None, :]  # (..., L, 1, E): one query per row
    scores = (q * scale) @ ops.swap_last(k_sel)  # (..., L, 1, E) @ (..., L, E, K) -> (..., L, 1, K)
    scores = ops.where(valid[..., :, None, :], scores, -ops.inf)  # picked but not allowed: weight 0
    weights_kept = softmax(scores, axis=-1)  # (..., L, 1, K)
    out = (weights_kept @ v_sel)[..., 0, :]  # (..., L, 1, K) @ (..., L, K, Ev) -> (..., L, Ev)
    # The weights back in their key positions, zero elsewhere: (..., L, K) -> (..., L, S).
    weights = ops.scatter_along_axis(ops.zeros(lead + (L, S), like=q), idx, weights_kept[..., 0, :], axis=-1)
    return ops.astype(out, out_dtype), ops.astype(weights, out_dtype)


def _select_keys(ops, index_scores: Array, top_k: int, allowed: Optional[Array]) -> Tuple[Array, Array]:
    """The ``K = min(top_k, S)`` best keys of every row, and which of them may be attended to.

    Keys that may not be picked are ranked last (``-inf``); a stable descending sort keeps the lower
    key index first among equal scores.  Under the causal mask the blocked keys of a row are the
    highest indices, so even an allowed key scored ``-inf`` ranks before them: a row with fewer
    allowed keys than ``top_k`` picks all of them, and the rest of its picks are marked invalid.
    """
    S = int(index_scores.shape[-1])
    if allowed is not None:
        index_scores = ops.where(allowed, index_scores, -ops.inf)
    idx = ops.argsort_descending(index_scores)[..., : min(top_k, S)]  # (..., L, K): best first
    if allowed is None:
        return idx, idx >= 0  # every pick is allowed
    return idx, ops.take_along_axis(ops.broadcast_to(allowed, tuple(idx.shape[:-1]) + (S,)), idx, axis=-1)


def _check_index_scores(ops, index_scores: Array, scores_shape: Tuple[int, ...], like: Array) -> Array:
    """Real numbers broadcastable to ``scores_shape = (..., L, S)``, on ``like``'s device."""
    index_scores = as_float(ops, "index_scores", index_scores)
    try:
        joint = tuple(np.broadcast_shapes(tuple(index_scores.shape), scores_shape))
    except ValueError:
        joint = None
    if joint != scores_shape:
        raise AttentionInputError(
            f"index_scores of shape {fmt_shape(index_scores)} does not broadcast to the scores' shape "
            f"{scores_shape} = (..., L, S): one score per query and key."
        )
    if ops.device(index_scores) != ops.device(like):
        raise AttentionInputError(
            f"index_scores is on {ops.device(index_scores)} but q is on {ops.device(like)}."
        )
    return index_scores
