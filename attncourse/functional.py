"""Softmax and scaled dot-product attention, for numpy arrays and torch tensors alike.

Shape letters (as in PyTorch's SDPA docs): ``L`` queries, ``S`` keys/values, ``E`` the
query/key width, ``Ev`` the value width; any leading dimensions (batch ``B``, heads ``H``)
broadcast.  Masks are boolean and ``True`` means "this query may attend to this key".
"""

from __future__ import annotations

import math
from typing import Any, Optional, Tuple

import numpy as np

from ._backend import AttentionInputError, AttentionTypeError, common_kind, fmt_shape, ops_for

__all__ = ["softmax", "scaled_dot_product_attention", "split_heads", "merge_heads"]

Array = Any  # a numpy array or a torch tensor


def _as_float(x: Array, ops, func: str, name: str) -> Array:
    """Return ``x`` as a floating array (integer input is promoted, bool/complex refused)."""
    x = ops.asarray(x)
    if ops.is_floating(x):
        return x
    if ops.is_integer(x):
        return ops.astype(x, ops.float_dtype_for(None))
    raise AttentionTypeError(f"{func}: {name} must hold real numbers; got dtype {x.dtype}.")


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
    """
    ops = ops_for(common_kind("softmax", x=x))
    x = _as_float(x, ops, "softmax", "x")
    out_dtype = x.dtype
    if not -x.ndim <= axis < max(x.ndim, 1):
        raise AttentionInputError(f"softmax: axis={axis} is out of range for x of shape {fmt_shape(x)}.")
    x = ops.astype(x, ops.compute_dtype(x))
    # The max only shifts the exponent; it carries no gradient (softmax is shift-invariant).
    row_max = ops.amax(ops.detach(x), axis)
    row_max = ops.where(ops.isneginf(row_max), ops.zeros_like(row_max), row_max)
    e = ops.exp_(x - row_max)  # in place on the fresh difference: one (..., L, S) array fewer
    total = ops.sum(e, axis)
    # An all -inf row sums to 0: divide by 1 instead, so the row stays all zeros.
    total = ops.where(total == 0, total + 1, total)
    return ops.astype(e / total, out_dtype)


def _check_float(func: str, kind: str, ops, **arrays: Array) -> None:
    """q, k, v must be floating point and share one dtype (and one device for torch)."""
    for name, a in arrays.items():
        if not ops.is_floating(a):
            raise AttentionTypeError(f"{func}: {name} must be floating point; got dtype {a.dtype}.")
    dtypes = {name: a.dtype for name, a in arrays.items()}
    if len(set(dtypes.values())) > 1:
        listed = ", ".join(f"{n}: {d}" for n, d in dtypes.items())
        raise AttentionTypeError(f"{func}: q, k and v must share one dtype; got {listed}.")
    if kind == "torch":
        devices = {name: a.device for name, a in arrays.items()}
        if len(set(devices.values())) > 1:
            listed = ", ".join(f"{n}: {d}" for n, d in devices.items())
            raise AttentionInputError(f"{func}: q, k and v must be on one device; got {listed}.")


def _broadcast(shapes: dict, func: str, what: str) -> tuple:
    try:
        return tuple(np.broadcast_shapes(*shapes.values()))
    except ValueError:
        listed = "\n".join(f"  {n}: {s}" for n, s in shapes.items())
        raise AttentionInputError(f"{func}: the {what} do not broadcast:\n{listed}") from None


def _check_qkv(func: str, q: Array, k: Array, v: Array) -> tuple:
    """Validate shapes; return the broadcast leading shape and (L, S, E, Ev)."""
    layout = (
        f"  q: {fmt_shape(q)}  expected (..., L, E)\n"
        f"  k: {fmt_shape(k)}  expected (..., S, E)\n"
        f"  v: {fmt_shape(v)}  expected (..., S, Ev)"
    )
    if q.ndim < 2 or k.ndim < 2 or v.ndim < 2:
        raise AttentionInputError(f"{func}: q, k and v need at least 2 dimensions.\n{layout}")
    L, E = q.shape[-2:]
    S, Ek = k.shape[-2:]
    Sv, Ev = v.shape[-2:]
    if E != Ek:
        raise AttentionInputError(
            f"{func}: q and k must share their last dimension E (each query is compared with "
            f"each key by a dot product); got E={E} for q and E={Ek} for k.\n{layout}"
        )
    if S != Sv:
        raise AttentionInputError(
            f"{func}: k and v must have the same length S (one value per key); "
            f"got S={S} keys and S={Sv} values.\n{layout}"
        )
    lead = _broadcast(
        {"q": tuple(q.shape[:-2]), "k": tuple(k.shape[:-2]), "v": tuple(v.shape[:-2])},
        func,
        f"leading (batch/head) dimensions of q, k and v\n{layout}\n  leading shapes",
    )
    return lead, (int(L), int(S), int(E), int(Ev))


def _check_scale(func: str, scale: Any, E: int) -> float:
    """``None`` means ``1/sqrt(E)``; otherwise a plain number (not an array, not a bool)."""
    if scale is None:
        return 1.0 / math.sqrt(E) if E > 0 else 1.0
    if isinstance(scale, bool) or not isinstance(scale, (int, float, np.floating, np.integer)):
        raise AttentionTypeError(f"{func}: scale must be a Python number or None; got {type(scale).__name__}.")
    return float(scale)


def _check_mask(func: str, mask: Array, ops, scores_shape: tuple) -> None:
    if not ops.is_bool(mask):
        hint = ""
        if ops.is_integer(mask) or ops.is_floating(mask):
            hint = (
                "\nA 0/1 or float mask is ambiguous (is 1 'keep' or 'block'? is it added to the scores?)."
                "\nattncourse masks are boolean with True = may attend. Convert explicitly:"
                "\n  Hugging Face attention_mask (1 = keep)   -> from_hf_attention_mask(m)"
                "\n  nn.MultiheadAttention masks (True = block) -> from_blocked_mask(m)"
                "\n  additive float mask (0 / -inf)             -> from_additive_mask(m)"
            )
        raise AttentionTypeError(
            f"{func}: mask must be boolean (True = may attend); got dtype {mask.dtype}.{hint}"
        )
    try:
        joint = tuple(np.broadcast_shapes(tuple(mask.shape), scores_shape))
    except ValueError:
        joint = None
    if joint != scores_shape:
        raise AttentionInputError(
            f"{func}: mask of shape {fmt_shape(mask)} does not broadcast to the scores' shape "
            f"{scores_shape} = (..., L, S).\n"
            "  A per-key padding mask (B, S) needs singleton axes: mask[:, None, :] for (B, L, S) "
            "scores, mask[:, None, None, :] for (B, H, L, S)."
        )


def scaled_dot_product_attention(
    q: Array,
    k: Array,
    v: Array,
    mask: Optional[Array] = None,
    *,
    is_causal: bool = False,
    scale: Optional[float] = None,
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
    """
    func = "scaled_dot_product_attention"
    kind = common_kind(func, q=q, k=k, v=v, mask=mask)
    ops = ops_for(kind)
    q, k, v = ops.asarray(q), ops.asarray(k), ops.asarray(v)
    _check_float(func, kind, ops, q=q, k=k, v=v)
    lead, (L, S, E, Ev) = _check_qkv(func, q, k, v)
    scale = _check_scale(func, scale, E)
    if mask is not None:
        mask = ops.asarray(mask)
        _check_mask(func, mask, ops, lead + (L, S))
        if kind == "torch" and mask.device != q.device:
            raise AttentionInputError(f"{func}: mask is on {mask.device} but q is on {q.device}.")
    if is_causal:
        causal = ops.tril_mask(L, S, like=q)
        mask = causal if mask is None else ops.logical_and(mask, causal)

    out_dtype = q.dtype
    work = ops.compute_dtype(q)  # float32 for half precision: no overflow in q @ k^T or exp
    q, k, v = ops.astype(q, work), ops.astype(k, work), ops.astype(v, work)

    scores = (q * scale) @ ops.swap_last(k)  # (..., L, E) @ (..., E, S) -> (..., L, S); scale q, not the scores
    if mask is not None:
        scores = ops.where(mask, scores, -ops.inf)  # blocked keys get exp(-inf) = 0
    weights = softmax(scores, axis=-1)  # (..., L, S); all-blocked rows are all zeros
    out = weights @ v  # (..., L, S) @ (..., S, Ev) -> (..., L, Ev)
    return ops.astype(out, out_dtype), ops.astype(weights, out_dtype)


def split_heads(x: Array, n_heads: int) -> Array:
    """``(..., L, d_model) -> (..., n_heads, L, d_head)`` with ``d_head = d_model // n_heads``.

    Head ``h`` owns columns ``h*d_head : (h+1)*d_head`` of the last axis, the layout that
    ``torch.nn.MultiheadAttention`` uses.

    >>> import numpy as np
    >>> split_heads(np.zeros((2, 5, 12)), 3).shape
    (2, 3, 5, 4)
    """
    if isinstance(n_heads, bool) or not isinstance(n_heads, (int, np.integer)) or n_heads < 1:
        raise AttentionInputError(f"split_heads: n_heads must be a positive integer; got {n_heads!r}.")
    if x.ndim < 2:
        raise AttentionInputError(f"split_heads: x must be (..., L, d_model); got shape {fmt_shape(x)}.")
    *lead, L, d_model = x.shape
    if d_model % n_heads:
        raise AttentionInputError(
            f"split_heads: d_model={d_model} is not divisible by n_heads={n_heads}; "
            f"x has shape {fmt_shape(x)}."
        )
    d_head = d_model // n_heads
    x = x.reshape(*lead, L, n_heads, d_head)  # (..., L, d_model) -> (..., L, H, d_head)
    return _swap_l_h(x)  # -> (..., H, L, d_head)


def _swap_l_h(x: Array) -> Array:
    # (..., L, H, d) <-> (..., H, L, d): swap the third- and second-to-last axes.
    if common_kind("split_heads", x=x) == "torch":
        return x.transpose(-3, -2)
    return np.swapaxes(x, -3, -2)


def merge_heads(x: Array) -> Array:
    """``(..., n_heads, L, d_head) -> (..., L, n_heads * d_head)``: the inverse of ``split_heads``.

    >>> import numpy as np
    >>> x = np.arange(24.0).reshape(1, 2, 12)
    >>> bool((merge_heads(split_heads(x, 4)) == x).all())
    True
    """
    if x.ndim < 3:
        raise AttentionInputError(
            f"merge_heads: x must be (..., n_heads, L, d_head); got shape {fmt_shape(x)}."
        )
    *lead, H, L, d_head = x.shape
    x = _swap_l_h(x)  # (..., H, L, d_head) -> (..., L, H, d_head)
    return x.reshape(*lead, L, H * d_head)  # -> (..., L, d_model)
