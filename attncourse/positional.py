"""Positional information: sinusoidal encodings, rotary embeddings (RoPE) with Hugging Face's
context-extension scalings, and ALiBi's linear biases."""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from ._backend import AttentionInputError, AttentionTypeError, fmt_shape, is_torch, namespace
from ._validation import check_rope_scaling, positive_int, public

__all__ = [
    "sinusoidal_positional_encoding",
    "apply_rope",
    "rope_angles",
    "rope_frequencies",
    "alibi_slopes",
    "alibi_bias",
]

Array = Any


@public("sinusoidal_positional_encoding")
def sinusoidal_positional_encoding(
    n_positions: int, d_model: int, *, base: float = 10000.0, like: Optional[Array] = None
) -> Array:
    r"""The sinusoidal table of "Attention Is All You Need", shape ``(n_positions, d_model)``.

    :math:`PE[pos, 2i] = \sin(pos / base^{2i/d})`, :math:`PE[pos, 2i+1] = \cos(pos / base^{2i/d})`.
    Returns numpy float64, or a tensor with ``like``'s device and float dtype.

    >>> pe = sinusoidal_positional_encoding(4, 6)
    >>> pe.shape, pe[0].tolist()
    ((4, 6), [0.0, 1.0, 0.0, 1.0, 0.0, 1.0])
    """
    n_positions = positive_int("n_positions", n_positions)
    d_model = positive_int("d_model", d_model)
    pos = np.arange(n_positions, dtype=np.float64)[:, None]  # (P, 1)
    two_i = np.arange(0, d_model, 2, dtype=np.float64)  # (ceil(d/2),): the even column indices
    angles = pos / base ** (two_i / d_model)  # (P, 1) / (ceil(d/2),) -> (P, ceil(d/2))
    pe = np.zeros((n_positions, d_model))
    pe[:, 0::2] = np.sin(angles)
    pe[:, 1::2] = np.cos(angles[:, : d_model // 2])  # an odd d_model has one sin column more
    return namespace(like=like).from_numpy(pe, like=like)  # a tensor on like's device, in its float dtype


def _rope_inv_freq(E: int, base: float, params: Optional[dict], seq_len: Optional[float]):
    """``(inv_freq (E/2,) float64, attention_factor)`` for checked ``params`` (transformers' formulas)."""
    exponents = np.arange(0, E, 2, dtype=np.float64) / E  # 2i / E
    inv_freq = base**-exponents  # pair i turns by base^(-2i/E) per position
    if params is None:
        return inv_freq, 1.0
    kind, factor = params["rope_type"], params["factor"]
    if kind == "linear":  # position interpolation: every frequency / factor (= positions / factor)
        return inv_freq / factor, 1.0
    original = params["original_max_position_embeddings"]
    if kind == "dynamic":  # NTK-aware: a larger base once the sequence outgrows the training length
        if E <= 2:
            raise AttentionInputError(
                f"rope_type 'dynamic' needs E >= 4 (its exponent is E / (E - 2)); got E={E}."
            )
        seq_len = original if seq_len is None else max(seq_len, original)
        base = base * ((factor * seq_len / original) - (factor - 1)) ** (E / (E - 2))
        return base**-exponents, 1.0
    if kind == "llama3":  # long wavelengths / factor, short ones kept, a smooth blend between
        low, high = params["low_freq_factor"], params["high_freq_factor"]
        wavelen = 2 * np.pi / inv_freq
        smooth = (original / wavelen - low) / (
            high - low
        )  # 0 at wavelen = original / low, 1 at original / high
        blended = (1 - smooth) * inv_freq / factor + smooth * inv_freq
        out = np.where(wavelen > original / low, inv_freq / factor, inv_freq)
        medium = (wavelen >= original / high) & (wavelen <= original / low)
        return np.where(medium, blended, out), 1.0
    # yarn: pairs that turn fewer than beta_slow times over the training length are interpolated
    # (/ factor), pairs that turn more than beta_fast times are kept, a linear ramp in between.
    beta_fast, beta_slow = params.get("beta_fast") or 32, params.get("beta_slow") or 1

    def pair_of(turns: float) -> float:  # the (fractional) pair index that turns `turns` times
        return E * np.log(original / (turns * 2 * np.pi)) / (2 * np.log(base))

    low, high = pair_of(beta_fast), pair_of(beta_slow)
    if params.get("truncate", True):
        low, high = np.floor(low), np.ceil(high)
    low, high = max(low, 0), min(high, E - 1)
    if low == high:
        high += 0.001  # as transformers does, against a division by zero
    ramp = np.clip((np.arange(E // 2) - low) / (high - low), 0, 1)  # 0: keep, 1: interpolate
    inv_freq = (inv_freq / factor) * ramp + inv_freq * (1 - ramp)

    def mscale(scale: float, m: float = 1.0) -> float:
        return 1.0 if scale <= 1 else 0.1 * m * np.log(scale) + 1.0

    attention = params.get("attention_factor")
    if attention is None:
        if params.get("mscale") and params.get("mscale_all_dim"):
            attention = mscale(factor, params["mscale"]) / mscale(factor, params["mscale_all_dim"])
        else:
            attention = mscale(factor)
    return inv_freq, float(attention)


def _even_width(E: Any) -> int:
    E = positive_int("E", E)
    if E % 2:
        raise AttentionInputError(f"E must be even (features are rotated in pairs); got E={E}.")
    return E


@public("rope_frequencies")
def rope_frequencies(
    E: int,
    *,
    base: Optional[float] = None,
    scaling: Optional[dict] = None,
    seq_len: Optional[float] = None,
    like: Optional[Array] = None,
):
    r"""RoPE's rotation frequencies, ``(inv_freq (E/2,), attention_factor)``, with optional scaling.

    Pair ``i`` of features turns by ``inv_freq[i]`` radians per position; unscaled that is
    :math:`\text{base}^{-2i/E}`.  ``scaling`` is a dict in Hugging Face's ``rope_parameters``
    form, and the result equals transformers' ``ROPE_INIT_FUNCTIONS[rope_type](config, ...)``
    for a config with ``head_dim = E``, ``rope_theta = base`` and that dict:

    * ``{"rope_type": "linear", "factor": s}``: position interpolation, every frequency / ``s``.
    * ``{"rope_type": "dynamic", "factor": s, "original_max_position_embeddings": n}``: NTK-aware
      scaling.  For ``seq_len > n`` the base becomes
      :math:`\text{base}\,(s \cdot \text{seq\_len}/n - (s - 1))^{E/(E-2)}`; up to ``n`` nothing
      changes.  ``n`` is what transformers reads from the model's ``max_position_embeddings``.
    * ``{"rope_type": "yarn", "factor": s, "original_max_position_embeddings": n, ...}``:
      pairs that turn more than ``beta_fast`` (32) times in ``n`` positions are kept, fewer than
      ``beta_slow`` (1) times are divided by ``s``, a linear ramp in between (``truncate``,
      default True, rounds the ramp's ends outwards).  ``attention_factor`` defaults to
      ``0.1 ln s + 1`` (or the ``mscale`` / ``mscale_all_dim`` ratio when both are given).
    * ``{"rope_type": "llama3", "factor": s, "low_freq_factor": a, "high_freq_factor": b,
      "original_max_position_embeddings": n}``: wavelengths above ``n / a`` are divided by ``s``,
      those below ``n / b`` kept, a smooth blend between.

    ``rope_theta`` in the dict is the base (then leave ``base`` out, or give the same value).
    ``attention_factor`` is 1 except for YaRN; ``apply_rope`` multiplies the rotated features by it,
    as transformers multiplies cos and sin, so a score ``q . k`` grows by its square.
    Returns numpy float64, or a tensor with ``like``'s device and float dtype.

    >>> inv, att = rope_frequencies(8, scaling={"rope_type": "linear", "factor": 4.0})
    >>> inv.round(5).tolist(), att
    ([0.25, 0.025, 0.0025, 0.00025], 1.0)
    """
    E = _even_width(E)
    params, base = check_rope_scaling(scaling, base)
    if seq_len is not None:
        seq_len = float(seq_len)
    inv_freq, attention = _rope_inv_freq(E, base, params, seq_len)
    return namespace(like=like).from_numpy(inv_freq, like=like), attention


@public("rope_angles")
def rope_angles(
    positions: Array, E: int, *, base: Optional[float] = None, scaling: Optional[dict] = None
) -> Array:
    """Rotation angles ``positions[..., None] * inv_freq``, shape ``(..., E/2)``.

    ``inv_freq`` is ``base^(-2i/E)``, or the scaled frequencies of ``rope_frequencies`` when
    ``scaling`` is given ("dynamic" takes the sequence length as the largest position + 1, as
    transformers does from the position ids).  float64 for numpy and for float64 tensors, float32
    for other tensors.  The attention factor of YaRN is not an angle: ``apply_rope`` applies it.

    >>> rope_angles([0, 1, 2], 4).round(4).tolist()
    [[0.0, 0.0], [1.0, 0.01], [2.0, 0.02]]
    """
    ops = namespace(positions=positions)
    positions = ops.asarray(positions)
    if ops.name == "torch":  # float32 angles for tensors unless the positions are float64
        dtype = ops.torch.float64 if positions.dtype == ops.torch.float64 else ops.torch.float32
    else:
        dtype = np.float64
    params, base = check_rope_scaling(scaling, base)
    if params is None:
        inv_freq = base ** (-2 * ops.arange(E // 2, like=positions, dtype=dtype) / E)  # (E/2,)
    else:
        E = _even_width(E)
        dynamic = params["rope_type"] == "dynamic" and int(np.prod(tuple(positions.shape))) > 0
        seq_len = float(positions.max()) + 1 if dynamic else None  # transformers: max(position_ids) + 1
        inv_freq, _ = _rope_inv_freq(E, base, params, seq_len)
        inv_freq = ops.astype(ops.from_numpy(inv_freq, like=positions), dtype)
    return ops.astype(positions, dtype)[..., None] * inv_freq  # (..., L, 1) * (E/2,) -> (..., L, E/2)


@public("apply_rope")
def apply_rope(
    x: Array,
    positions: Optional[Array] = None,
    *,
    base: Optional[float] = None,
    interleaved: bool = False,
    scaling: Optional[dict] = None,
) -> Array:
    """Rotate the last dimension of ``x (..., L, E)`` by position-dependent angles (RoPE).

    Pair ``i`` of features is rotated by the angle ``pos * base^(-2i/E)``.  Which features form
    a pair is the layout:

    * ``interleaved=False`` (default, GPT-NeoX / Hugging Face ``rotate_half``): feature ``i``
      pairs with feature ``i + E/2``;
    * ``interleaved=True`` (GPT-J / Meta's original LLaMA): feature ``2i`` pairs with ``2i+1``.

    ``positions`` defaults to ``0..L-1``; it may be any integer or float array broadcastable
    to ``x.shape[:-1]`` (e.g. ``(L,)`` or ``(B, L)``).  A rotation keeps norms, and the score
    ``rope(q, m) . rope(k, n)`` depends on ``m - n`` only.  ``base`` defaults to 10000.  The
    angles are float64 for numpy and for float64 tensors (integer positions included), float32 for
    other tensors (as transformers computes them).

    ``scaling`` stretches the context a model was trained for: a dict in Hugging Face's
    ``rope_parameters`` form, ``{"rope_type": "linear" | "dynamic" | "yarn" | "llama3",
    "factor": ..., ...}`` with that library's keys and defaults (see ``rope_frequencies``), giving
    the rotation transformers gives for the same dict.  "dynamic" takes the sequence length as the
    largest position + 1 (transformers' rotary module also remembers the longest length it has
    seen; this function keeps no state).  YaRN's ``attention_factor`` multiplies the result, as
    transformers multiplies cos and sin: applied to q and to k, it scales the scores by its square.

    >>> import numpy as np
    >>> x = np.ones((3, 4))
    >>> np.allclose(np.linalg.norm(apply_rope(x), axis=-1), 2.0)
    True
    """
    ops = namespace(x=x, positions=positions if is_torch(positions) else None)
    x = ops.asarray(x)
    if not ops.is_floating(x):
        raise AttentionTypeError(f"x must be floating point; got dtype {x.dtype}.")
    if x.ndim < 2:
        raise AttentionInputError(f"x must be (..., L, E); got shape {fmt_shape(x)}.")
    L, E = int(x.shape[-2]), int(x.shape[-1])
    if E % 2:
        raise AttentionInputError(
            f"the last dimension E of x must be even (features are rotated in pairs); "
            f"got E={E} for x of shape {fmt_shape(x)}."
        )
    if positions is None:
        positions = ops.arange(L, like=x)
    else:
        positions = ops.to_device_of(ops.asarray(positions), x)
    try:
        np.broadcast_shapes(tuple(positions.shape), tuple(x.shape[:-1]))
    except ValueError:
        raise AttentionInputError(
            f"positions of shape {fmt_shape(positions)} do not broadcast to x.shape[:-1] = "
            f"{tuple(x.shape[:-1])} = (..., L)."
        ) from None

    if ops.name == "torch" and x.dtype == ops.torch.float64 and not ops.is_floating(positions):
        positions = ops.astype(positions, ops.torch.float64)  # float64 x: float64 angles, not float32
    angles = rope_angles(positions, E, base=base, scaling=scaling)  # (..., L, E/2)
    work = ops.compute_dtype(x)
    cos, sin = ops.astype(ops.cos(angles), work), ops.astype(ops.sin(angles), work)
    attention = rope_frequencies(E, base=base, scaling=scaling)[1] if scaling is not None else 1.0
    if attention != 1.0:  # YaRN: transformers returns cos * attention_factor, sin * attention_factor
        cos, sin = cos * attention, sin * attention
    xw = ops.astype(x, work)
    if interleaved:
        x1, x2 = xw[..., 0::2], xw[..., 1::2]  # pairs (2i, 2i+1)
        r1, r2 = x1 * cos - x2 * sin, x1 * sin + x2 * cos
        out = ops.stack([r1, r2], -1).reshape(*r1.shape[:-1], E)  # (..., E/2, 2) -> (..., E), re-interleaved
    else:
        half = E // 2
        x1, x2 = xw[..., :half], xw[..., half:]  # pairs (i, i + E/2)
        out = ops.concatenate([x1 * cos - x2 * sin, x1 * sin + x2 * cos], -1)
    return ops.astype(out, x.dtype)


# ----------------------------------------------------------------------------------------------
# ALiBi: a linear bias on the scores instead of a rotation of q and k
# ----------------------------------------------------------------------------------------------


@public("alibi_slopes")
def alibi_slopes(n_heads: int, *, like: Optional[Array] = None) -> Array:
    r"""The per-head slopes of ALiBi (Press, Smith & Lewis, 2022), shape ``(n_heads,)``.

    For ``n`` a power of two the slopes are the geometric sequence :math:`2^{-8k/n}`,
    ``k = 1 .. n`` (8 heads: 1/2, 1/4, ..., 1/256).  Otherwise, with ``m`` the largest power of
    two below ``n``: the ``m`` slopes for ``m`` heads, then every other slope of the sequence for
    ``2m`` heads (its 1st, 3rd, 5th ...) until there are ``n``.  This is the paper's rule as its
    code, BLOOM (``_get_alibi_slopes``) and MPT (``build_mpt_alibi_tensor``) compute it.
    Returns numpy float64, or a tensor with ``like``'s device and float dtype.

    >>> alibi_slopes(4).tolist()
    [0.25, 0.0625, 0.015625, 0.00390625]
    >>> [round(float(x), 4) for x in alibi_slopes(6)]    # 4 heads' slopes, then 8 heads' 1st and 3rd
    [0.25, 0.0625, 0.0156, 0.0039, 0.5, 0.125]
    """
    n_heads = positive_int("n_heads", n_heads)

    def power_of_two(n: int) -> np.ndarray:  # 2^(-8/n), 2^(-16/n), ..., 2^(-8)
        return 2.0 ** (-8.0 * np.arange(1, n + 1) / n)

    m = 2 ** int(np.floor(np.log2(n_heads)))  # the largest power of two <= n_heads
    slopes = power_of_two(m)
    if m != n_heads:  # the odd-numbered slopes of 2m heads fill the rest
        slopes = np.concatenate([slopes, power_of_two(2 * m)[0::2][: n_heads - m]])
    return namespace(like=like).from_numpy(slopes, like=like)


@public("alibi_bias")
def alibi_bias(n_heads: int, L: int, S: Optional[int] = None, *, like: Optional[Array] = None) -> Array:
    r"""ALiBi's additive bias, ``bias[h, i, j] = -slope_h * (i - j)``, shape ``(n_heads, L, S)``.

    Added to the scores of head ``h`` before the softmax: a key ``i - j`` positions back costs
    ``slope_h * (i - j)``, so each head forgets at its own rate and no position is embedded.
    Query ``i`` and key ``j`` count from 0 (top-left aligned, as ``causal_mask``); for ``j > i`` the
    bias is positive, so use it with a causal mask.  For the last ``L`` of ``S`` positions (a KV
    cache) take ``alibi_bias(n_heads, S)[:, -L:]``.  BLOOM and MPT add ``slope_h * j`` instead,
    which differs by ``slope_h * i`` along each row, a constant the softmax ignores.

    The scores of ``scaled_dot_product_attention`` take a boolean mask, not a bias: add the bias
    to ``q @ k^T * scale`` yourself (or pass it as ``attn_mask`` to torch's SDPA, which adds float
    masks).  Returns numpy float64, or a tensor with ``like``'s device and float dtype.

    >>> alibi_bias(1, 3).tolist()    # one head, slope 1/256
    [[[0.0, 0.00390625, 0.0078125], [-0.00390625, 0.0, 0.00390625], [-0.0078125, -0.00390625, 0.0]]]
    """
    n_heads = positive_int("n_heads", n_heads)
    L = positive_int("L", L)
    S = L if S is None else positive_int("S", S)
    j_minus_i = np.arange(S, dtype=np.float64)[None, :] - np.arange(L, dtype=np.float64)[:, None]  # (L, S)
    bias = (
        alibi_slopes(n_heads)[:, None, None] * j_minus_i
    )  # -slope * (i - j): (H, 1, 1) * (L, S) -> (H, L, S)
    return namespace(like=like).from_numpy(bias, like=like)
