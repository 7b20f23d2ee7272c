"""Boolean attention masks (True = may attend) and converters from the other conventions.

Libraries disagree on what a mask means:

=============================  ==============================  ==========================
convention                     "this key is visible" is ...    convert with
=============================  ==============================  ==========================
attncourse, torch SDPA (bool)  ``True``                        (none needed)
nn.MultiheadAttention (bool)   ``False`` (True = blocked)      ``from_blocked_mask``
Hugging Face attention_mask    ``1`` (0 = padding)             ``from_hf_attention_mask``
additive float mask            ``0.0`` (-inf = blocked)        ``from_additive_mask``
valid lengths (d2l)            position < length               ``padding_mask``
=============================  ==============================  ==========================
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from ._backend import AttentionInputError, AttentionTypeError, fmt_shape, namespace
from ._validation import positive_int, public

__all__ = [
    "causal_mask",
    "sliding_window_mask",
    "padding_mask",
    "from_blocked_mask",
    "to_blocked_mask",
    "from_hf_attention_mask",
    "from_additive_mask",
    "to_additive_mask",
]

Array = Any


@public("causal_mask")
def causal_mask(L: int, S: Optional[int] = None, *, like: Optional[Array] = None) -> Array:
    """Boolean ``(L, S)`` mask, True on and below the diagonal: query ``i`` sees keys ``0..i``.

    Top-left aligned, as ``torch.nn.functional.scaled_dot_product_attention(is_causal=True)``.
    For a KV cache (``L < S`` with the queries at the end) use ``causal_mask(S)[-L:]``.
    Returns numpy, or a torch tensor on ``like``'s device when ``like`` is a tensor.

    >>> causal_mask(3).astype(int)
    array([[1, 0, 0],
           [1, 1, 0],
           [1, 1, 1]])
    """
    L = positive_int("L", L)
    S = L if S is None else positive_int("S", S)
    return namespace(like=like).tril_mask(L, S, like=like)


@public("sliding_window_mask")
def sliding_window_mask(
    L: int, window: int, S: Optional[int] = None, *, like: Optional[Array] = None
) -> Array:
    """Boolean ``(L, S)`` mask of causal attention within a window: True where ``i - window < j <= i``.

    Query ``i`` sees the ``window`` keys ending at its own position, ``i - window + 1 .. i`` (the
    window counts the query itself; fewer near the start).  Top-left aligned like
    ``causal_mask``; ``window >= max(L, S)`` gives ``causal_mask(L, S)``.  This is the pattern of
    Hugging Face's sliding-window causal mask (``masking_utils``: ``kv_idx > q_idx - sliding_window``
    and ``kv_idx <= q_idx``), used by Mistral-style models with ``sliding_window`` in their config.
    For a KV cache (the ``L`` queries are the last of ``S`` positions) use
    ``sliding_window_mask(S, window)[-L:]``.  Returns numpy, or a torch tensor on ``like``'s device.

    >>> sliding_window_mask(5, 3).astype(int)
    array([[1, 0, 0, 0, 0],
           [1, 1, 0, 0, 0],
           [1, 1, 1, 0, 0],
           [0, 1, 1, 1, 0],
           [0, 0, 1, 1, 1]])
    """
    L = positive_int("L", L)
    window = positive_int("window", window)
    S = L if S is None else positive_int("S", S)
    ops = namespace(like=like)
    i = ops.arange(L, like=like)[:, None]  # (L, 1): query positions
    j = ops.arange(S, like=like)[None, :]  # (1, S): key positions
    return ops.logical_and(j <= i, j > i - window)  # (L, S)


@public("padding_mask")
def padding_mask(lengths: Array, S: int) -> Array:
    """Boolean ``(B, S)`` mask, True for the first ``lengths[b]`` keys of sequence ``b``.

    ``lengths`` is a sequence of ints, a numpy integer array or a torch integer tensor (the
    result is then a tensor on its device).  To use it with ``(B, H, L, S)`` scores, add the
    head and query axes: ``padding_mask(lengths, S)[:, None, None, :]``.

    >>> padding_mask([2, 3], 4).astype(int)
    array([[1, 1, 0, 0],
           [1, 1, 1, 0]])
    """
    S = positive_int("S", S)
    ops = namespace(lengths=lengths)
    lengths = ops.asarray(lengths)
    if not ops.is_integer(lengths):
        raise AttentionTypeError(f"lengths must be integers; got dtype {lengths.dtype}.")
    if lengths.ndim != 1:
        raise AttentionInputError(f"lengths must be 1-d (B,); got shape {fmt_shape(lengths)}.")
    too_long = [int(n) for n in lengths if int(n) > S]
    if too_long:
        raise AttentionInputError(
            f"lengths {too_long} exceed the sequence length S={S}; got lengths={[int(n) for n in lengths]}."
        )
    negative = [int(n) for n in lengths if int(n) < 0]
    if negative:
        raise AttentionInputError(f"lengths must be >= 0; got {negative}.")
    positions = ops.arange(S, like=lengths)  # (S,)
    return positions[None, :] < lengths[:, None]  # (1, S) < (B, 1) -> (B, S)


def _require_bool(ops, mask: Array, meaning: str) -> Array:
    mask = ops.asarray(mask)
    if not ops.is_bool(mask):
        raise AttentionTypeError(f"expected a boolean mask ({meaning}); got dtype {mask.dtype}.")
    return mask


@public("from_blocked_mask")
def from_blocked_mask(blocked: Array) -> Array:
    """From ``nn.MultiheadAttention`` / ``nn.Transformer`` boolean masks (True = blocked).

    Works for both ``attn_mask`` (L, S) and ``key_padding_mask`` (B, S); for the latter add
    axes before attending: ``from_blocked_mask(kpm)[:, None, None, :]``.

    >>> import numpy as np
    >>> from_blocked_mask(np.array([False, True]))
    array([ True, False])
    """
    ops = namespace(blocked=blocked)
    return ops.logical_not(_require_bool(ops, blocked, "True = blocked"))


@public("to_blocked_mask")
def to_blocked_mask(mask: Array) -> Array:
    """To ``nn.MultiheadAttention``'s convention (True = blocked): the logical NOT."""
    ops = namespace(mask=mask)
    return ops.logical_not(_require_bool(ops, mask, "True = may attend"))


@public("from_hf_attention_mask")
def from_hf_attention_mask(attention_mask: Array) -> Array:
    """From a Hugging Face ``attention_mask`` (B, S) of 1 = real token, 0 = padding.

    Returns a boolean ``(B, 1, 1, S)`` mask ready for ``(B, H, L, S)`` scores.

    >>> import numpy as np
    >>> from_hf_attention_mask(np.array([[1, 1, 0]])).shape
    (1, 1, 1, 3)
    """
    ops = namespace(attention_mask=attention_mask)
    m = ops.asarray(attention_mask)
    if m.ndim != 2:
        raise AttentionInputError(f"attention_mask must be (B, S); got shape {fmt_shape(m)}.")
    if ops.is_bool(m):
        keep = m
    else:
        values = {float(x) for x in np.unique(np.asarray(m.tolist()))}
        if not values <= {0.0, 1.0}:
            raise AttentionInputError(
                f"attention_mask must hold only 0 (padding) and 1 (keep); got values {sorted(values)}."
            )
        keep = m == 1
    return keep[:, None, None, :]  # (B, S) -> (B, 1, 1, S)


@public("from_additive_mask")
def from_additive_mask(additive: Array) -> Array:
    """From an additive float mask (0 = keep, -inf = blocked) to a boolean one.

    Values at or below ``-1e4`` also count as blocked (the finite "large negative" masks some
    libraries use); anything else that is not 0 is refused: a learned bias is not a mask.
    """
    ops = namespace(additive=additive)
    a = ops.asarray(additive)
    if not ops.is_floating(a):
        raise AttentionTypeError(f"expected a float mask (0 / -inf); got dtype {a.dtype}.")
    keep, blocked = a == 0, a <= -1e4
    if not bool(ops.logical_and(ops.logical_not(keep), ops.logical_not(blocked)).sum() == 0):
        raise AttentionInputError(
            f"an additive mask holds only 0 (keep) and -inf or a large negative number (block); "
            f"mask of shape {fmt_shape(a)} holds other values, so it is a bias, not a mask."
        )
    return keep


@public("to_additive_mask")
def to_additive_mask(mask: Array, dtype: Any = None) -> Array:
    """To an additive float mask: 0.0 where True (may attend), ``-inf`` where False.

    ``dtype`` defaults to float64 for numpy and the default float dtype for torch.
    """
    ops = namespace(mask=mask)
    mask = _require_bool(ops, mask, "True = may attend")
    if dtype is None:
        dtype = ops.float_dtype_for(None)
    zeros = ops.astype(ops.zeros_like(mask), dtype)
    return ops.where(mask, zeros, zeros - ops.inf)
