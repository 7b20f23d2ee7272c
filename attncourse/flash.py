"""Memory-efficient attention: online softmax, tiled (FlashAttention-style) attention, a KV cache.

``scaled_dot_product_attention`` builds the whole ``(..., L, S)`` matrix of scores.  The functions
here never do: they read the keys and values in blocks of ``block_size`` and keep, for every
query, three running quantities that are enough to finish the softmax later:

* ``m``, the largest score seen so far (the shift that keeps ``exp`` from overflowing),
* ``l``, the sum of ``exp(score - m)`` seen so far (the softmax's denominator),
* ``acc``, the sum of ``exp(score - m) * value`` seen so far (the numerator of the output).

When a new block raises the maximum from ``m`` to ``m_new``, everything accumulated so far was
computed with the old shift, so ``l`` and ``acc`` are multiplied by ``exp(m - m_new)``.  After
the last block, ``out = acc / l``.  Only an ``(..., L, block_size)`` block of scores exists at a
time, so the extra memory grows like ``L * block_size`` instead of ``L * S``.

Shape letters as in ``functional``: ``q (..., L, E)``, ``k (..., S, E)``, ``v (..., S, Ev)``.
Masks are boolean, ``True`` = may attend.  numpy and torch (any device) are both accepted.
"""

from __future__ import annotations

import math
from typing import Any, Optional, Tuple

import numpy as np

from ._backend import AttentionInputError, AttentionTypeError, common_kind, fmt_shape, ops_for
from .functional import _as_float, _check_float, _check_mask, _check_qkv, _check_scale
from .masks import causal_mask

__all__ = ["flash_attention", "online_softmax", "KVCache", "cached_attention"]

Array = Any  # a numpy array or a torch tensor


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
    ops = ops_for(common_kind("online_softmax", x=x))
    x = _as_float(x, ops, "online_softmax", "x")
    out_dtype = x.dtype
    if not -x.ndim <= axis < max(x.ndim, 1):
        raise AttentionInputError(
            f"online_softmax: axis={axis} is out of range for x of shape {fmt_shape(x)}."
        )
    x = ops.astype(x, ops.compute_dtype(x))
    # Move ``axis`` last so that x[..., j] is "the j-th element of every row".
    if ops.name == "numpy":
        x = np.moveaxis(x, axis, -1)
    else:
        x = x.movedim(axis, -1)
    row = x[..., 0:1]
    m = ops.zeros_like(row) - ops.inf  # running maximum, starts at -inf
    l = ops.zeros_like(row)  # running sum of exp(x - m)
    for j in range(x.shape[-1]):  # one pass: each element is read once
        xj = x[..., j : j + 1]
        m_new = ops.where(xj > m, xj, m)
        shift = ops.where(ops.isneginf(m_new), ops.zeros_like(m_new), m_new)  # -inf - -inf would be nan
        l = l * ops.exp(m - shift) + ops.exp(xj - shift)
        m = m_new
    shift = ops.where(ops.isneginf(m), ops.zeros_like(m), m)
    l = ops.where(l == 0, l + 1, l)  # an all -inf row: 0 / 1 = zeros, not nan
    out = ops.exp(x - shift) / l  # the only other pass: writing the result
    out = np.moveaxis(out, -1, axis) if ops.name == "numpy" else out.movedim(-1, axis)
    return ops.astype(out, out_dtype)


def _check_block_size(func: str, block_size: Any) -> int:
    if isinstance(block_size, bool) or not isinstance(block_size, (int, np.integer)) or block_size < 1:
        raise AttentionInputError(f"{func}: block_size must be a positive integer; got {block_size!r}.")
    return int(block_size)


def _validate(func: str, q, k, v, mask, scale, block_size):
    """The checks of scaled_dot_product_attention (same helpers, same messages), plus block_size."""
    kind = common_kind(func, q=q, k=k, v=v, mask=mask)
    ops = ops_for(kind)
    q, k, v = ops.asarray(q), ops.asarray(k), ops.asarray(v)
    _check_float(func, kind, ops, q=q, k=k, v=v)
    lead, (L, S, E, Ev) = _check_qkv(func, q, k, v)
    scale = _check_scale(func, scale, E)
    block_size = _check_block_size(func, block_size)
    if mask is not None:
        mask = ops.asarray(mask)
        _check_mask(func, mask, ops, lead + (L, S))
        if kind == "torch" and mask.device != q.device:
            raise AttentionInputError(f"{func}: mask is on {mask.device} but q is on {q.device}.")
    return kind, ops, q, k, v, mask, scale, block_size, lead, (L, S, E, Ev)


def _mask_columns(mask, j0: int, j1: int, S: int):
    """Columns j0:j1 of a mask broadcastable to (..., L, S); a size-1 last axis is kept whole."""
    if mask is None or mask.ndim == 0 or (mask.shape[-1] == 1 and S != 1):
        return mask
    return mask[..., j0:j1]


def flash_attention(
    q: Array,
    k: Array,
    v: Array,
    mask: Optional[Array] = None,
    *,
    is_causal: bool = False,
    scale: Optional[float] = None,
    block_size: int = 256,
) -> Array:
    r"""Attention :math:`\mathrm{softmax}(q k^\top \cdot \text{scale}) v` computed block by block.

    The same result as ``scaled_dot_product_attention(q, k, v, mask, is_causal=..., scale=...)[0]``
    (the weights are never formed, so only the output is returned), with the same checks, the
    same error messages and the same mask semantics, but the ``(..., L, S)`` matrix of scores is
    never built: keys and values are read in blocks of ``block_size`` and an online softmax
    (running maximum, running sum, running output) combines the blocks.  Extra memory grows like
    ``L * block_size``, not ``L * S``.

    Parameters
    ----------
    q : (..., L, E)
    k : (..., S, E)
    v : (..., S, Ev)
    mask : boolean, broadcastable to (..., L, S), optional
        ``True`` = this query may attend to this key.  It is read one block of columns at a time.
    is_causal : bool
        Top-left aligned causal mask (query ``i`` sees keys ``0..i``), as
        ``torch.nn.functional.scaled_dot_product_attention(is_causal=True)``; combined with
        ``mask`` by AND.  Blocks that no query may see are skipped.
    scale : float, optional
        Multiplies the scores; ``None`` means ``1 / sqrt(E)``.
    block_size : int
        Number of keys per block.  Any positive value gives the same result (up to rounding);
        the last block may be shorter.

    Returns
    -------
    out : (..., L, Ev), same kind, device and dtype as ``q``.  A query row with nothing to attend
        to is all zeros (no NaN, no warning; finite gradients on the torch path).  float16 and
        bfloat16 are computed in float32.

    Notes
    -----
    Gradients flow through the loop by autograd, which keeps every block's intermediates for
    the backward pass: training through this function saves memory only in the forward pass.
    FlashAttention's own backward pass recomputes each block instead of storing it.

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
    func = "flash_attention"
    kind, ops, q, k, v, mask, scale, block_size, lead, (L, S, _, Ev) = _validate(
        func, q, k, v, mask, scale, block_size
    )
    out_dtype = q.dtype
    work = ops.compute_dtype(q)  # float32 for half precision
    q, k, v = ops.astype(q, work), ops.astype(k, work), ops.astype(v, work)
    tiles = _tiles_torch if kind == "torch" else _tiles_numpy
    out = tiles(q, k, v, mask, is_causal, scale, block_size, lead, L, S, Ev)
    return ops.astype(out, out_dtype)


# exp(x) = 2 ** (x * log2(e)): folding log2(e) into the scale lets the loop call exp2, which is
# cheaper than exp (FlashAttention's kernels do the same).  Scores, m and the shift are then all
# in base-2 units; the softmax weights, and so the output, are unchanged.
LOG2_E = 1.0 / math.log(2.0)


def _tiles_numpy(q, k, v, mask, is_causal, scale, block_size, lead, L, S, Ev):
    """The online-softmax loop over key blocks, numpy (in place, one score buffer reused)."""
    qs = q * q.dtype.type(scale * LOG2_E)  # fold the scale into q: (L, E) multiplications, not (L, S)
    m = np.full(lead + (L, 1), -np.inf, dtype=q.dtype)  # running max of the scores
    l = np.zeros(lead + (L, 1), dtype=q.dtype)  # running sum of exp(score - m)
    acc = np.zeros(lead + (L, Ev), dtype=q.dtype)  # running sum of exp(score - m) @ v
    rows = np.arange(L)[:, None]
    buf = None
    for j0 in range(0, S, block_size):
        j1 = min(j0 + block_size, S)
        if is_causal and j0 > L - 1:
            break  # top-left causal: no query sees keys past L - 1
        if buf is None or buf.shape[-1] != j1 - j0:
            buf = np.empty(lead + (L, j1 - j0), dtype=q.dtype)  # the only (L, block) array
        kT = np.swapaxes(k[..., j0:j1, :], -1, -2)
        s = np.matmul(qs, kT, out=buf)  # (..., L, E) @ (..., E, b) -> (..., L, b)
        allowed = _mask_columns(mask, j0, j1, S)
        if is_causal:
            causal = rows >= np.arange(j0, j1)  # (L, b): query i sees key j <= i
            allowed = causal if allowed is None else np.logical_and(allowed, causal)
        if allowed is not None:
            np.copyto(s, -np.inf, where=np.logical_not(allowed))
        m_new = np.maximum(m, s.max(axis=-1, keepdims=True))
        shift = np.where(np.isneginf(m_new), 0, m_new)  # a row blocked so far: exp(-inf - 0) = 0
        p = np.exp2(np.subtract(s, shift, out=s), out=s)  # (..., L, b), in place
        alpha = np.exp2(m - shift)  # rescales what was summed with the old maximum
        l = l * alpha + p.sum(axis=-1, keepdims=True)
        acc = acc * alpha + p @ v[..., j0:j1, :]  # (..., L, b) @ (..., b, Ev) -> (..., L, Ev)
        m = m_new
    return acc / np.where(l == 0, 1, l)  # rows with nothing to attend to: 0 / 1 = 0


def _tiles_torch(q, k, v, mask, is_causal, scale, block_size, lead, L, S, Ev):
    """The same loop for torch on any device.

    Without autograd the block of scores lives in one reused buffer, updated in place; with
    autograd (q, k or v requiring grad) every step is out of place so backward can run
    through the loop.
    """
    import torch

    grad = torch.is_grad_enabled() and (q.requires_grad or k.requires_grad or v.requires_grad)
    qs = q * (scale * LOG2_E)  # fold the scale into q
    m = torch.full(lead + (L, 1), -math.inf, dtype=q.dtype, device=q.device)
    l = torch.zeros(lead + (L, 1), dtype=q.dtype, device=q.device)
    acc = torch.zeros(lead + (L, Ev), dtype=q.dtype, device=q.device)
    rows = torch.arange(L, device=q.device)[:, None]
    buf = None
    for j0 in range(0, S, block_size):
        j1 = min(j0 + block_size, S)
        if is_causal and j0 > L - 1:
            break  # top-left causal: no query sees keys past L - 1
        kT = k[..., j0:j1, :].mT
        if grad:
            s = qs @ kT  # (..., L, E) @ (..., E, b) -> (..., L, b)
        else:
            if buf is None or buf.shape[-1] != j1 - j0:
                buf = torch.empty(lead + (L, j1 - j0), dtype=q.dtype, device=q.device)
            s = torch.matmul(qs, kT, out=buf)  # the same product, into the reused buffer
        allowed = _mask_columns(mask, j0, j1, S)
        if is_causal:
            causal = rows >= torch.arange(j0, j1, device=q.device)  # (L, b)
            allowed = causal if allowed is None else allowed & causal
        if allowed is not None:
            s = s.masked_fill(~allowed, -math.inf) if grad else s.masked_fill_(~allowed, -math.inf)
        # The maximum only shifts the exponent (the result does not depend on it): no gradient.
        m_new = torch.maximum(m, s.detach().amax(dim=-1, keepdim=True))
        shift = m_new.masked_fill(torch.isneginf(m_new), 0.0)  # a row blocked so far: exp(-inf) = 0
        p = torch.exp2(s - shift) if grad else s.sub_(shift).exp2_()  # (..., L, b)
        alpha = torch.exp2(m - shift)
        if grad:
            l = l * alpha + p.sum(dim=-1, keepdim=True)
            acc = acc * alpha + p @ v[..., j0:j1, :]  # (..., L, b) @ (..., b, Ev) -> (..., L, Ev)
        else:
            l.mul_(alpha).add_(p.sum(dim=-1, keepdim=True))
            acc.mul_(alpha).add_(p @ v[..., j0:j1, :])
        m = m_new
    return acc / l.masked_fill(l == 0, 1.0)  # rows with nothing to attend to: 0 / 1 = 0


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

    def append(self, k: Array, v: Array) -> Tuple[Array, Array]:
        """Add ``k (..., n, E)`` and ``v (..., n, Ev)`` for ``n`` new tokens; return all of them."""
        func = "KVCache.append"
        kind = common_kind(func, k=k, v=v, cached_k=self.k)
        ops = ops_for(kind)
        k, v = ops.asarray(k), ops.asarray(v)
        if k.ndim < 2 or v.ndim < 2 or k.shape[:-1] != v.shape[:-1]:
            raise AttentionInputError(
                f"{func}: k (..., n, E) and v (..., n, Ev) must agree on every axis but the last; "
                f"got k: {fmt_shape(k)}, v: {fmt_shape(v)}."
            )
        if self.k is not None and (
            k.shape[:-2] != self.k.shape[:-2]
            or k.shape[-1] != self.k.shape[-1]
            or v.shape[-1] != self.v.shape[-1]
        ):
            raise AttentionInputError(
                f"{func}: new k {fmt_shape(k)} and v {fmt_shape(v)} do not fit the cache's "
                f"k {fmt_shape(self.k)} and v {fmt_shape(self.v)} (only the length axis -2 may differ)."
            )
        if self.k is None:
            self.k, self.v = k, v
        else:
            self.k = ops.concatenate([self.k, k], axis=-2)  # (..., S, E) + (..., n, E) -> (..., S + n, E)
            self.v = ops.concatenate([self.v, v], axis=-2)
        return self.k, self.v


def cached_attention(
    q: Array,
    k: Array,
    v: Array,
    cache: KVCache,
    *,
    scale: Optional[float] = None,
    block_size: int = 256,
) -> Array:
    """Causal attention of ``L`` new queries to every cached key plus the ``L`` new ones.

    ``k`` and ``v`` are the new tokens' keys and values; they are appended to ``cache`` first,
    so ``S = len(cache)`` keys are attended to.  The new queries are the LAST ``L`` positions,
    so the causal mask is aligned bottom-right: ``causal_mask(S)[-L:]`` (query ``i`` of the new
    ones sees keys ``0 .. S - L + i``), not the top-left ``is_causal`` of
    ``scaled_dot_product_attention``, which would let the first new query see only key 0.

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
        raise AttentionInputError(f"cached_attention: {L} new queries but only {S} keys (L must be <= S).")
    mask = causal_mask(S, like=q)[S - L :]  # (L, S): the last L rows, bottom-right aligned
    return flash_attention(q, k_all, v_all, mask, scale=scale, block_size=block_size)
