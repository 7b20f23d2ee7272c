"""Softmax and scaled dot-product attention, for numpy arrays and torch tensors alike.

Shape letters (as in PyTorch's SDPA docs): ``L`` queries, ``S`` keys/values, ``E`` the
query/key width, ``Ev`` the value width; any leading dimensions (batch ``B``, heads ``H``)
broadcast.  Masks are boolean and ``True`` means "this query may attend to this key".
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

__all__ = ["softmax", "scaled_dot_product_attention", "split_heads", "merge_heads"]

Array = Any  # a numpy array or a torch tensor


@public("softmax")
def softmax(x: Array, axis: int = -1) -> Array:
    """Numerically stable softmax along ``axis``.

    The row maximum is subtracted before ``exp`` so large scores cannot overflow, ``-inf``
    entries get weight exactly 0, and a row that is entirely ``-inf`` (nothing to attend to)
    becomes a row of zeros instead of NaN.  float16/bfloat16 are computed in float32.

    Parameters
    ----------
    x : numpy array or torch tensor (integer input is promoted to a float dtype)
    axis : int
        The axis that sums to one.

    Returns
    -------
    The same kind, device and dtype as ``x``.

    Examples
    --------
    >>> import numpy as np
    >>> softmax(np.array([1.0, 2.0, 3.0])).round(4)
    array([0.09  , 0.2447, 0.6652])
    >>> softmax(np.array([1000.0, 1000.0]))          # no overflow
    array([0.5, 0.5])
    >>> softmax(np.array([-np.inf, -np.inf]))        # nothing to attend to: zeros, not nan
    array([0., 0.])
    >>> softmax(np.float64(3.0)), softmax(np.zeros((2, 0))).shape   # 0-d and empty, as torch
    (array(1.), (2, 0))
    """
    ops = namespace(x=x)
    x = as_float(ops, "x", x)
    axis = check_axis(axis, x)
    out_dtype = x.dtype
    if x.ndim == 0:  # a single score is a one-element row (axis -1 or 0, as torch.softmax allows)
        return softmax(x.reshape((1,)), 0).reshape(())
    if x.shape[axis] == 0:  # rows of no elements: nothing to normalise, an empty result
        return ops.zeros_like(x)
    x = ops.astype(x, ops.compute_dtype(x))
    # The max only shifts the exponent; it carries no gradient (softmax is shift-invariant).
    row_max = ops.amax(ops.detach(x), axis)
    row_max = ops.where(ops.isneginf(row_max), ops.zeros_like(row_max), row_max)
    e = ops.exp_(x - row_max)  # in place on the fresh difference: one (..., L, S) array fewer
    total = ops.sum(e, axis)
    # An all -inf row sums to 0: divide by 1 instead, so the row stays all zeros.
    total = ops.where(total == 0, total + 1, total)
    return ops.astype(e / total, out_dtype)


@public("scaled_dot_product_attention")
def scaled_dot_product_attention(
    q: Array,
    k: Array,
    v: Array,
    mask: Optional[Array] = None,
    *,
    is_causal: bool = False,
    scale: Optional[float] = None,
    enable_gqa: bool = False,
) -> Tuple[Array, Array]:
    r"""Attention :math:`\mathrm{softmax}(q k^\top \cdot \text{scale}) v`, returning ``(out, weights)``.

    Parameters
    ----------
    q : (..., L, E)
    k : (..., S, E)
    v : (..., S, Ev)
    mask : boolean, broadcastable to (..., L, S), optional
        ``True`` = this query may attend to this key.
    is_causal : bool
        Also block keys after the query (top-left aligned: query ``i`` sees keys ``0..i``),
        as ``torch.nn.functional.scaled_dot_product_attention(is_causal=True)`` does.
        Combined with ``mask`` by AND.
    scale : float, optional
        Multiplies the scores; ``None`` means ``1 / sqrt(E)``.
    enable_gqa : bool
        Grouped-query attention, with the meaning of torch's ``enable_gqa``: ``q`` is
        ``(..., H, L, E)`` and ``k``, ``v`` carry ``H_kv`` heads, ``(..., H_kv, S, E)``, with
        ``H % H_kv == 0``; query head ``h`` reads key/value head ``h // (H / H_kv)`` (so consecutive
        query heads share one; ``H_kv = 1`` is multi-query attention).  The key/value heads are
        not copied: the queries are viewed as ``(..., H_kv, H / H_kv, L, E)`` instead.  Without
        it, a head count in dimension -3 that differs from ``q``'s (and is not 1, which
        broadcasts) is an error naming both counts.

    Returns
    -------
    out : (..., L, Ev)
    weights : (..., L, S)
        Each row sums to 1, except a row with nothing to attend to, which is all zeros (and so
        is its output row).  Same kind, device and dtype as ``q``.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> q, k, v = rng.normal(size=(1, 8)), rng.normal(size=(5, 8)), rng.normal(size=(5, 10))
    >>> out, weights = scaled_dot_product_attention(q, k, v)
    >>> out.shape, weights.shape, float(weights.sum())
    ((1, 10), (1, 5), 1.0)

    Grouped-query attention: 8 query heads share 2 key/value heads (4 query heads each).

    >>> q, k, v = rng.normal(size=(1, 8, 3, 4)), rng.normal(size=(1, 2, 6, 4)), rng.normal(size=(1, 2, 6, 4))
    >>> out, weights = scaled_dot_product_attention(q, k, v, enable_gqa=True)
    >>> out.shape, weights.shape
    ((1, 8, 3, 4), (1, 8, 3, 6))
    >>> same = scaled_dot_product_attention(q[:, 5], k[:, 5 // 4], v[:, 5 // 4])[0]   # head 5 reads KV head 1
    >>> bool(np.allclose(out[:, 5], same))
    True
    """
    ops = namespace(q=q, k=k, v=v, mask=mask)
    q, k, v = ops.asarray(q), ops.asarray(k), ops.asarray(v)
    check_same_float(ops, q=q, k=k, v=v)
    lead, (L, S, E, Ev) = check_qkv(q, k, v, enable_gqa)
    scale = check_scale(scale, E)
    if mask is not None:
        mask = check_mask(ops, mask, lead + (L, S), like=q)
    H = group_query_heads_count(q, k, enable_gqa)
    if H:  # (..., H, L, E) queries -> (..., H_kv, H / H_kv, L, E) against (..., H_kv, 1, S, E) keys
        q, k, v, mask, lead = group_query_heads(q, k, v, mask, lead)
    if is_causal:
        causal = ops.tril_mask(L, S, like=q)
        mask = causal if mask is None else ops.logical_and(mask, causal)

    out_dtype = q.dtype
    work = ops.compute_dtype(q)  # float32 for half precision: no overflow in q @ k^T or exp
    q, k, v = ops.astype(q, work), ops.astype(k, work), ops.astype(v, work)

    # Scale q, not the scores: (L, E) multiplications instead of (L, S).  q takes the leading
    # shape of all three, so the weights have it too when only v has a batch or head axis.
    q = ops.broadcast_to(q, lead + (L, E))
    scores = (q * scale) @ ops.swap_last(k)  # (..., L, E) @ (..., E, S) -> (..., L, S)
    if mask is not None:
        scores = ops.where(mask, scores, -ops.inf)  # blocked keys get exp(-inf) = 0
    weights = softmax(scores, axis=-1)  # (..., L, S); all-blocked rows are all zeros
    out = weights @ v  # (..., L, S) @ (..., S, Ev) -> (..., L, Ev)
    if H:  # (..., H_kv, H / H_kv, L, .) -> (..., H, L, .)
        out, weights = ungroup_query_heads(out, H), ungroup_query_heads(weights, H)
    return ops.astype(out, out_dtype), ops.astype(weights, out_dtype)


def group_query_heads_count(q: Array, k: Array, enable_gqa: bool) -> int:
    """``H`` when grouped-query attention needs the query heads grouped (``H != H_kv``), else 0."""
    if not enable_gqa or q.shape[-3] == k.shape[-3]:
        return 0
    return int(q.shape[-3])


def group_query_heads(q: Array, k: Array, v: Array, mask: Optional[Array], lead: Tuple[int, ...]):
    """Views for grouped-query attention, checked beforehand by ``check_qkv(..., enable_gqa=True)``.

    ``q (..., H, L, E)`` becomes ``(..., H_kv, G, L, E)`` with ``G = H / H_kv`` (query head
    ``h = g_kv * G + g`` is row ``g`` of group ``g_kv``: it reads key/value head ``h // G``), and
    ``k``, ``v`` gain a size-1 group axis, ``(..., H_kv, 1, S, .)``, which broadcasts over the ``G``
    query heads of their group without a copy.  A mask with one entry per query head is split the
    same way; one with a size-1 (or no) head axis broadcasts as it is.  Returns ``q, k, v, mask``
    and the new leading shape ``(..., H_kv, G)``.
    """
    H, H_kv = int(q.shape[-3]), int(k.shape[-3])
    G = H // H_kv
    q = q.reshape(tuple(q.shape[:-3]) + (H_kv, G) + tuple(q.shape[-2:]))
    k, v = k[..., None, :, :], v[..., None, :, :]
    if mask is not None and mask.ndim >= 3:
        if mask.shape[-3] == H:
            mask = mask.reshape(tuple(mask.shape[:-3]) + (H_kv, G) + tuple(mask.shape[-2:]))
        else:  # a size-1 head axis
            mask = mask[..., None, :, :]
    return q, k, v, mask, tuple(lead[:-1]) + (H_kv, G)


def ungroup_query_heads(x: Array, H: int) -> Array:
    """``(..., H_kv, G, L, .) -> (..., H, L, .)``: the inverse of ``group_query_heads`` for results."""
    return x.reshape(tuple(x.shape[:-4]) + (H,) + tuple(x.shape[-2:]))


@public("split_heads")
def split_heads(x: Array, n_heads: int) -> Array:
    """``(..., L, d_model) -> (..., n_heads, L, d_head)`` with ``d_head = d_model // n_heads``.

    Head ``h`` owns columns ``h*d_head : (h+1)*d_head`` of the last axis, the layout that
    ``torch.nn.MultiheadAttention`` uses.

    >>> import numpy as np
    >>> split_heads(np.zeros((2, 5, 12)), 3).shape
    (2, 3, 5, 4)
    """
    n_heads = positive_int("n_heads", n_heads)
    if x.ndim < 2:
        raise AttentionInputError(f"x must be (..., L, d_model); got shape {fmt_shape(x)}.")
    *lead, L, d_model = x.shape
    if d_model % n_heads:
        raise AttentionInputError(
            f"d_model={d_model} is not divisible by n_heads={n_heads}; x has shape {fmt_shape(x)}."
        )
    d_head = d_model // n_heads
    x = x.reshape(*lead, L, n_heads, d_head)  # (..., L, d_model) -> (..., L, H, d_head)
    return namespace(x=x).swap_axes(x, -3, -2)  # -> (..., H, L, d_head)


@public("merge_heads")
def merge_heads(x: Array) -> Array:
    """``(..., n_heads, L, d_head) -> (..., L, n_heads * d_head)``: the inverse of ``split_heads``.

    >>> import numpy as np
    >>> x = np.arange(24.0).reshape(1, 2, 12)
    >>> bool((merge_heads(split_heads(x, 4)) == x).all())
    True
    """
    if x.ndim < 3:
        raise AttentionInputError(f"x must be (..., n_heads, L, d_head); got shape {fmt_shape(x)}.")
    *lead, H, L, d_head = x.shape
    x = namespace(x=x).swap_axes(x, -3, -2)  # (..., H, L, d_head) -> (..., L, H, d_head)
    return x.reshape(*lead, L, H * d_head)  # -> (..., L, d_model)
