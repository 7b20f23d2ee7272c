"""Memory-efficient attention: online softmax, tiled (FlashAttention-style) attention, a KV cache.

``scaled_dot_product_attention`` builds the whole ``(..., L, S)`` matrix of scores.  The functions
here never do: they read the keys and values in blocks of ``block_size`` and keep, for every
query, three running quantities that are enough to finish the softmax later:

* ``m``, the largest score seen so far (the shift that keeps ``exp`` from overflowing),
* ``l``, the sum of ``exp(score - m)`` seen so far (the softmax's denominator),
* ``acc``, the sum of ``exp(score - m) * value`` seen so far (the numerator of the output).

When a new block raises the maximum from ``m`` to ``m_new``, everything accumulated so far was
computed with the old shift, so ``l`` and ``acc`` are multiplied by ``exp(m - m_new)``.  After
the last block, ``out = acc / l``.  The queries are taken ``block_size`` at a time as well (as
FlashAttention does), so only one ``(..., block_size, block_size)`` tile of scores exists at a
time: beyond the output, memory does not grow with ``L`` or ``S`` at all.

The loop is written once, against the operations of ``_backend`` (``ops.matmul``,
``ops.fast_exp_`` ...), and runs unchanged on numpy arrays and on torch tensors on any device.

Shape letters as in ``functional``: ``q (..., L, E)``, ``k (..., S, E)``, ``v (..., S, Ev)``.
Masks are boolean, ``True`` = may attend.  numpy and torch (any device) are both accepted.
"""

from __future__ import annotations

from typing import Any, Optional, Tuple

from ._backend import AttentionInputError, fmt_shape, namespace
from ._validation import (
    as_float,
    check_axis,
    check_mask,
    check_qkv,
    check_same_float,
    check_scale,
    positive_int,
    public,
)
from .functional import group_query_heads, group_query_heads_count, ungroup_query_heads
from .masks import causal_mask

__all__ = ["flash_attention", "online_softmax", "KVCache", "cached_attention"]

Array = Any  # a numpy array or a torch tensor


@public("online_softmax")
def online_softmax(x: Array, axis: int = -1) -> Array:
    """Softmax whose maximum and sum are found in ONE pass over ``axis`` (the online softmax).

    The usual stable softmax reads the row twice before it can write anything: once for the
    maximum, once for the sum of ``exp(x - max)``.  Here each element is read once for both:
    the running maximum ``m`` and running sum ``l`` are updated element by element, and ``l`` is
    rescaled by ``exp(m_old - m_new)`` whenever the maximum grows.  The result equals
    ``softmax(x, axis)``, including all-zero rows for rows that are entirely ``-inf``.

    This is a teaching function (a Python loop over ``axis``); ``flash_attention`` applies the
    same update to whole blocks of scores at once.

    Examples
    --------
    >>> import numpy as np
    >>> online_softmax(np.array([1.0, 2.0, 3.0])).round(4)
    array([0.09  , 0.2447, 0.6652])
    >>> online_softmax(np.array([[1000.0, 1000.0], [-np.inf, -np.inf]]))
    array([[0.5, 0.5],
           [0. , 0. ]])
    """
    ops = namespace(x=x)
    x = as_float(ops, "x", x)
    axis = check_axis(axis, x)
    out_dtype = x.dtype
    if x.ndim == 0 or 0 in x.shape:
        from .functional import softmax  # nothing to loop over: the 0-d and empty cases of softmax

        return softmax(x, axis)
    x = ops.moveaxis(ops.astype(x, ops.compute_dtype(x)), axis, -1)  # x[..., j]: element j of every row
    m = ops.zeros_like(x[..., 0:1]) - ops.inf  # running maximum, starts at -inf
    l = ops.zeros_like(x[..., 0:1])  # running sum of exp(x - m)
    for j in range(x.shape[-1]):  # one pass: each element is read once
        xj = x[..., j : j + 1]
        m_new = ops.maximum(m, xj)
        shift = ops.where(ops.isneginf(m_new), ops.zeros_like(m_new), m_new)  # -inf - -inf would be nan
        l = l * ops.exp(m - shift) + ops.exp(xj - shift)
        m = m_new
    shift = ops.where(ops.isneginf(m), ops.zeros_like(m), m)
    l = ops.where(l == 0, l + 1, l)  # an all -inf row: 0 / 1 = zeros, not nan
    out = ops.exp(x - shift) / l  # the only other pass: writing the result
    return ops.astype(ops.moveaxis(out, -1, axis), out_dtype)


def validate_attention(q, k, v, mask, scale, enable_gqa=False):
    """The checks of ``scaled_dot_product_attention``, for the tiled variants: returns
    ``ops, q, k, v, mask, scale, lead, (L, S, E, Ev), H``.

    ``H`` is 0 unless grouped-query attention regrouped the query heads (``enable_gqa`` with
    ``H != H_kv``): then ``q, k, v, mask`` are the grouped views of ``group_query_heads``, ``lead``
    is ``(..., H_kv, H / H_kv)``, and ``ungroup_query_heads(out, H)`` gives back ``(..., H, L, Ev)``.
    """
    ops = namespace(q=q, k=k, v=v, mask=mask)
    q, k, v = ops.asarray(q), ops.asarray(k), ops.asarray(v)
    check_same_float(ops, q=q, k=k, v=v)
    lead, (L, S, E, Ev) = check_qkv(q, k, v, enable_gqa)
    scale = check_scale(scale, E)
    if mask is not None:
        mask = check_mask(ops, mask, lead + (L, S), like=q)
    H = group_query_heads_count(q, k, enable_gqa)
    if H:
        q, k, v, mask, lead = group_query_heads(q, k, v, mask, lead)
    return ops, q, k, v, mask, scale, lead, (L, S, E, Ev), H


@public("flash_attention")
def flash_attention(
    q: Array,
    k: Array,
    v: Array,
    mask: Optional[Array] = None,
    *,
    is_causal: bool = False,
    scale: Optional[float] = None,
    block_size: int = 256,
    enable_gqa: bool = False,
) -> Array:
    r"""Attention :math:`\mathrm{softmax}(q k^\top \cdot \text{scale}) v` computed tile by tile.

    The same result as ``scaled_dot_product_attention(q, k, v, mask, is_causal=..., scale=...)[0]``
    (the weights are never formed, so only the output is returned), with the same checks, the
    same error messages and the same mask semantics, but the ``(..., L, S)`` matrix of scores is
    never built: the queries are taken ``block_size`` at a time, and for each block of queries the
    keys and values are read in blocks of ``block_size`` and combined by an online softmax
    (running maximum, running sum, running output).  Beyond the output, memory holds one
    ``(..., block_size, block_size)`` tile of scores and the block's running statistics.

    Parameters
    ----------
    q : (..., L, E)
    k : (..., S, E)
    v : (..., S, Ev)
    mask : boolean, broadcastable to (..., L, S), optional
        ``True`` = this query may attend to this key.  Each tile reads its own rows and columns.
    is_causal : bool
        Top-left aligned causal mask (query ``i`` sees keys ``0..i``), as
        ``torch.nn.functional.scaled_dot_product_attention(is_causal=True)``; combined with
        ``mask`` by AND.  Tiles that no query may see are skipped.
    scale : float, optional
        Multiplies the scores; ``None`` means ``1 / sqrt(E)``.
    block_size : int
        Queries and keys per tile.  Any positive value gives the same result (up to rounding);
        the last block may be shorter.
    enable_gqa : bool
        Grouped-query attention as in ``scaled_dot_product_attention``: ``k``, ``v`` carry
        ``H_kv`` heads in dimension -3, ``H % H_kv == 0``, query head ``h`` reads key/value head
        ``h // (H / H_kv)``.  Each tile of keys is read once for the ``H / H_kv`` query heads that
        share it (no copy of the keys and values).

    Returns
    -------
    out : (..., L, Ev), same kind, device and dtype as ``q``.  A query row with nothing to attend
        to is all zeros (no NaN, no warning; finite gradients on the torch path).  float16 and
        bfloat16 are computed in float32.

    Notes
    -----
    Gradients flow through the loop by autograd, which keeps every tile's intermediates for
    the backward pass: training through this function saves memory only in the forward pass.
    FlashAttention's own backward pass recomputes each tile instead of storing it.

    Examples
    --------
    >>> import numpy as np
    >>> from attncourse import scaled_dot_product_attention
    >>> rng = np.random.default_rng(0)
    >>> q, k, v = rng.normal(size=(2, 6, 8)), rng.normal(size=(2, 10, 8)), rng.normal(size=(2, 10, 3))
    >>> out = flash_attention(q, k, v, block_size=4)      # blocks of 4, 4 and 2 keys
    >>> bool(np.allclose(out, scaled_dot_product_attention(q, k, v)[0]))
    True
    """
    ops, q, k, v, mask, scale, lead, (L, S, _, Ev), H = validate_attention(q, k, v, mask, scale, enable_gqa)
    block_size = positive_int("block_size", block_size)
    out_dtype = q.dtype
    work = ops.compute_dtype(q)  # float32 for half precision
    q, k, v = ops.astype(q, work), ops.astype(k, work), ops.astype(v, work)
    out = _tiled_attention(ops, q, k, v, mask, is_causal, scale, block_size, lead, L, S, Ev)
    if H:  # (..., H_kv, H / H_kv, L, Ev) -> (..., H, L, Ev)
        out = ungroup_query_heads(out, H)
    return ops.astype(out, out_dtype)


# The loop's exponential is the backend's ``fast_exp``: exp2 for torch, with log2(e) folded into
# the scale (cheaper than exp; FlashAttention's kernels do the same), exp for numpy (see
# ``_backend``).  Scores, m and the shift are in that function's units; the softmax weights, and
# so the output, are unchanged.


def _tile_of(mask, i0: int, i1: int, j0: int, j1: int):
    """Rows i0:i1 and columns j0:j1 of a mask broadcastable to (..., L, S); size-1 axes kept whole."""
    if mask is None:
        return None
    if mask.ndim < 2:
        mask = mask.reshape((1,) * (2 - mask.ndim) + tuple(mask.shape))  # () or (S,) -> (1, 1) or (1, S)
    if mask.shape[-2] != 1:
        mask = mask[..., i0:i1, :]
    if mask.shape[-1] != 1:
        mask = mask[..., j0:j1]
    return mask


def _tiled_attention(ops, q, k, v, mask, is_causal, scale, block, lead, L, S, Ev):
    """The online-softmax loop, written once for every backend.

    For each block of queries (the outer loop) the keys are read block by block (the inner
    loop) and folded into the running max ``m``, sum ``l`` and output ``acc`` of that block; a
    finished block writes its rows of ``out``.  The tile of scores is updated in place.  Without
    autograd the two matmul results live in buffers reused from tile to tile (a fresh 1 MiB
    array per tile costs as much as a pass over it); with autograd every tile is kept for the
    backward pass, so each is a fresh array (in-place updates of a fresh matmul result are
    allowed: see ``_backend``).
    """
    reuse = not ops.requires_grad(q, k, v)
    buffers: dict = {}

    def buffer(name, shape):
        if not reuse:
            return None
        if name not in buffers or tuple(buffers[name].shape) != shape:
            buffers[name] = ops.empty(shape, like=q)
        return buffers[name]

    out = ops.zeros(lead + (L, Ev), like=q)  # rows with nothing to attend to stay 0
    positions = ops.arange(max(L, S), like=q)
    ones = ops.zeros((min(block, S), 1), like=q) + 1  # row sums as p @ ones: one BLAS pass
    for i0 in range(0, L, block):
        i1 = min(i0 + block, L)
        # Fold the scale and log2(e) into the block of queries: (b, E) products, not (b, b).
        qs = ops.broadcast_to(q[..., i0:i1, :] * (scale * ops.FAST_EXP_SCALE), lead + (i1 - i0, q.shape[-1]))
        m = ops.zeros(lead + (i1 - i0, 1), like=q) - ops.inf  # running max of each query's scores
        l = ops.zeros(lead + (i1 - i0, 1), like=q)  # running sum of fast_exp(score - m)
        acc = ops.zeros(lead + (i1 - i0, Ev), like=q)  # running sum of fast_exp(score - m) * value
        for j0 in range(0, S, block):
            j1 = min(j0 + block, S)
            if is_causal and j0 > i1 - 1:
                break  # top-left causal: this block's queries see no key from j0 on
            # (..., bq, E) @ (..., E, bk) -> (..., bq, bk)
            s = ops.matmul(qs, ops.swap_last(k[..., j0:j1, :]), out=buffer("s", lead + (i1 - i0, j1 - j0)))
            allowed = _tile_of(mask, i0, i1, j0, j1)
            if is_causal and j1 - 1 > i0:  # the tile reaches above the diagonal
                causal = positions[i0:i1, None] >= positions[None, j0:j1]  # (bq, bk): key j <= query i
                allowed = causal if allowed is None else ops.logical_and(allowed, causal)
            if allowed is not None:
                s = ops.masked_fill_(s, ops.logical_not(allowed), -ops.inf)
            # The maximum only shifts the exponent (the result does not depend on it): no gradient.
            m_new = ops.maximum(m, ops.amax(ops.detach(s), -1))  # (..., bq, 1)
            shift = ops.where(ops.isneginf(m_new), 0.0, m_new)  # a row blocked so far: fast_exp(-inf - 0) = 0
            p = ops.fast_exp_(ops.sub_(s, shift))  # (..., bq, bk), in place
            # (..., bq, bk) @ (..., bk, Ev) -> (..., bq, Ev)
            pv = ops.matmul(p, v[..., j0:j1, :], out=buffer("pv", lead + (i1 - i0, Ev)))
            alpha = ops.fast_exp(m - shift)  # rescales what was summed with the old maximum (0 at first)
            l = ops.add_(ops.mul_(l, alpha), ops.matmul(p, ones[: j1 - j0]))  # (..., bq, bk) @ (bk, 1)
            acc = ops.add_(ops.mul_(acc, alpha), pv)
            m = m_new
        out[..., i0:i1, :] = acc / ops.where(l == 0, 1.0, l)  # rows with nothing to attend to: 0 / 1 = 0
    return out


class KVCache:
    """The keys and values of every token seen so far, grown along the sequence axis (``-2``).

    During autoregressive decoding each new token needs the keys and values of all earlier
    tokens.  They never change (a causal model's earlier positions do not see later ones), so
    they are computed once and kept here instead of being recomputed at every step.

    >>> import numpy as np
    >>> cache = KVCache()
    >>> k_all, v_all = cache.append(np.zeros((2, 3, 4)), np.zeros((2, 3, 5)))
    >>> k_all, v_all = cache.append(np.ones((2, 1, 4)), np.ones((2, 1, 5)))
    >>> len(cache), k_all.shape, v_all.shape
    (4, (2, 4, 4), (2, 4, 5))
    """

    def __init__(self) -> None:
        self.k: Optional[Array] = None
        self.v: Optional[Array] = None

    def __len__(self) -> int:
        return 0 if self.k is None else int(self.k.shape[-2])

    @public("KVCache.append")
    def append(self, k: Array, v: Array) -> Tuple[Array, Array]:
        """Add ``k (..., n, E)`` and ``v (..., n, Ev)`` for ``n`` new tokens; return all of them."""
        ops = namespace(k=k, v=v, cached_k=self.k)
        k, v = ops.asarray(k), ops.asarray(v)
        if k.ndim < 2 or v.ndim < 2 or k.shape[:-1] != v.shape[:-1]:
            raise AttentionInputError(
                "k (..., n, E) and v (..., n, Ev) must agree on every axis but the last; "
                f"got k: {fmt_shape(k)}, v: {fmt_shape(v)}."
            )
        if self.k is not None and (
            k.shape[:-2] != self.k.shape[:-2]
            or k.shape[-1] != self.k.shape[-1]
            or v.shape[-1] != self.v.shape[-1]
        ):
            raise AttentionInputError(
                f"new k {fmt_shape(k)} and v {fmt_shape(v)} do not fit the cache's "
                f"k {fmt_shape(self.k)} and v {fmt_shape(self.v)} (only the length axis -2 may differ)."
            )
        if self.k is None:
            self.k, self.v = k, v
        else:
            self.k = ops.concatenate([self.k, k], axis=-2)  # (..., S, E) + (..., n, E) -> (..., S + n, E)
            self.v = ops.concatenate([self.v, v], axis=-2)
        return self.k, self.v


@public("cached_attention")
def cached_attention(
    q: Array,
    k: Array,
    v: Array,
    cache: KVCache,
    *,
    scale: Optional[float] = None,
    block_size: int = 256,
    enable_gqa: bool = False,
) -> Array:
    """Causal attention of ``L`` new queries to every cached key plus the ``L`` new ones.

    ``k`` and ``v`` are the new tokens' keys and values; they are appended to ``cache`` first,
    so ``S = len(cache)`` keys are attended to.  The new queries are the LAST ``L`` positions,
    so the causal mask is aligned bottom-right: ``causal_mask(S)[-L:]`` (query ``i`` of the new
    ones sees keys ``0 .. S - L + i``), not the top-left ``is_causal`` of
    ``scaled_dot_product_attention``, which would let the first new query see only key 0.
    With ``enable_gqa`` the cache holds ``H_kv`` key/value heads for ``H`` query heads (see
    ``flash_attention``): the cache is ``H / H_kv`` times smaller than with one per query head.

    >>> import numpy as np
    >>> from attncourse import scaled_dot_product_attention
    >>> rng = np.random.default_rng(0)
    >>> q, k, v = rng.normal(size=(3, 5, 4)), rng.normal(size=(3, 5, 4)), rng.normal(size=(3, 5, 4))
    >>> cache = KVCache()
    >>> steps = [cached_attention(q[:, t:t+1], k[:, t:t+1], v[:, t:t+1], cache) for t in range(5)]
    >>> full, _ = scaled_dot_product_attention(q, k, v, is_causal=True)
    >>> bool(np.allclose(np.concatenate(steps, axis=-2), full))
    True
    """
    k_all, v_all = cache.append(k, v)
    L, S = q.shape[-2], k_all.shape[-2]
    if L > S:
        raise AttentionInputError(f"{L} new queries but only {S} keys (L must be <= S).")
    # (L, S): the last L rows of the causal mask, bottom-right aligned.  One new query (a decode
    # step) is the last position and sees every key: no mask, so a step costs O(S), not O(S^2).
    mask = None if L == 1 else causal_mask(S, like=q)[S - L :]
    return flash_attention(q, k_all, v_all, mask, scale=scale, block_size=block_size, enable_gqa=enable_gqa)
