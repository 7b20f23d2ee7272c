"""Input checks shared by the numerical modules, and the one place errors get their function's name.

Every check here raises ``AttentionInputError`` (or ``AttentionTypeError``) with a message that
names the argument, shows the shape or value it got and says what was expected; none of them
knows which public function called it.  The public function is decorated with
:func:`public`, which prefixes the message with its own name once, at the boundary where the
user called it (``"softmax: axis=3 is out of range ..."``), the way einops reports the pattern
a failing call was given.  A public function called by another one (``cached_attention`` calls
``flash_attention``) reports the outer name: the one the user typed.
"""

from __future__ import annotations

import contextvars
import functools
import math
from typing import Any, Callable, Dict, Optional, Tuple, TypeVar

import numpy as np

from ._backend import AttentionInputError, AttentionTypeError, fmt_shape

__all__ = [
    "public",
    "positive_int",
    "int_at_least",
    "positive_number",
    "as_float",
    "check_axis",
    "check_same_float",
    "check_qkv",
    "check_scale",
    "check_mask",
    "broadcast_shapes",
    "check_rope_scaling",
]

Array = Any
F = TypeVar("F", bound=Callable[..., Any])

# The name of the outermost public function running now (None outside any).
_CALLER: contextvars.ContextVar[Optional[str]] = contextvars.ContextVar("attncourse_caller", default=None)


def public(name: str) -> Callable[[F], F]:
    """Decorate a public function so that the errors it raises start with ``name``.

    Only the outermost decorated call adds its name; the message is changed in place, so the
    exception keeps its type and its traceback.

    >>> @public("double")
    ... def double(n):
    ...     return 2 * positive_int("n", n)
    >>> double(0)
    Traceback (most recent call last):
    ...
    attncourse._backend.AttentionInputError: double: n must be a positive integer; got 0.
    """

    def decorate(func: F) -> F:
        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if _CALLER.get() is not None:  # called from another public function: it reports
                return func(*args, **kwargs)
            token = _CALLER.set(name)
            try:
                return func(*args, **kwargs)
            except AttentionInputError as e:
                if e.args and isinstance(e.args[0], str):
                    e.args = (f"{name}: {e.args[0]}",) + e.args[1:]
                raise
            finally:
                _CALLER.reset(token)

        return wrapper  # type: ignore[return-value]

    return decorate


def _is_integer(n: Any) -> bool:
    """A Python or numpy integer, and not a ``bool``."""
    return isinstance(n, (int, np.integer)) and not isinstance(n, bool)


def positive_int(name: str, n: Any) -> int:
    """``n`` as an ``int`` if it is an integer >= 1 (``bool`` is refused), else an error naming it."""
    if not _is_integer(n) or n < 1:
        raise AttentionInputError(f"{name} must be a positive integer; got {n!r}.")
    return int(n)


def int_at_least(name: str, n: Any, minimum: int) -> int:
    """``n`` as an ``int`` if it is an integer >= ``minimum`` (``bool`` is refused), else an error."""
    if not _is_integer(n) or n < minimum:
        raise AttentionInputError(f"{name} must be an integer >= {minimum}; got {n!r}.")
    return int(n)


def positive_number(name: str, x: Any) -> float:
    """``x`` as a ``float`` if it is a real number > 0 (``bool`` is refused), else an error naming it."""
    if isinstance(x, bool) or not isinstance(x, (int, float, np.integer, np.floating)) or not x > 0:
        raise AttentionInputError(f"{name} must be a positive number; got {x!r}.")
    return float(x)


def as_float(ops, name: str, x: Array) -> Array:
    """``x`` as a floating array: integers are promoted (float64 / torch's default), bool and complex refused."""
    x = ops.asarray(x)
    if ops.is_floating(x):
        return x
    if ops.is_integer(x):
        return ops.astype(x, ops.float_dtype_for(None))
    raise AttentionTypeError(f"{name} must hold real numbers; got dtype {x.dtype}.")


def check_axis(axis: Any, x: Array) -> int:
    """``axis`` must index a dimension of ``x``; a 0-d ``x`` accepts ``-1`` and ``0`` (as torch does)."""
    ndim = max(int(x.ndim), 1)
    if not _is_integer(axis) or not -ndim <= axis < ndim:
        raise AttentionInputError(f"axis={axis!r} is out of range for x of shape {fmt_shape(x)}.")
    return int(axis)


def check_same_float(ops, **arrays: Array) -> None:
    """The named arrays are floating point and share one dtype (and, for torch, one device)."""
    for name, a in arrays.items():
        if not ops.is_floating(a):
            raise AttentionTypeError(f"{name} must be floating point; got dtype {a.dtype}.")
    names = " and ".join([", ".join(list(arrays)[:-1]), list(arrays)[-1]]) if len(arrays) > 1 else "x"
    dtypes = {n: a.dtype for n, a in arrays.items()}
    if len(set(dtypes.values())) > 1:
        listed = ", ".join(f"{n}: {d}" for n, d in dtypes.items())
        raise AttentionTypeError(f"{names} must share one dtype; got {listed}.")
    devices = {n: ops.device(a) for n, a in arrays.items()}
    if len(set(devices.values())) > 1:
        listed = ", ".join(f"{n}: {d}" for n, d in devices.items())
        raise AttentionInputError(f"{names} must be on one device; got {listed}.")


def broadcast_shapes(what: str, shapes: Dict[str, Tuple[int, ...]]) -> Tuple[int, ...]:
    """The broadcast of ``shapes``, or an error listing each named shape."""
    try:
        return tuple(np.broadcast_shapes(*shapes.values()))
    except ValueError:
        listed = "\n".join(f"  {n}: {s}" for n, s in shapes.items())
        raise AttentionInputError(f"the {what} do not broadcast:\n{listed}") from None


def check_qkv(
    q: Array, k: Array, v: Array, enable_gqa: bool = False
) -> Tuple[Tuple[int, ...], Tuple[int, int, int, int]]:
    """Shapes of ``q (..., L, E)``, ``k (..., S, E)``, ``v (..., S, Ev)``: the broadcast leading
    shape and ``(L, S, E, Ev)``, or an error that lays out all three shapes.

    With ``enable_gqa`` (grouped-query attention, torch's meaning) ``q`` is ``(..., H, L, E)`` and
    ``k``, ``v`` are ``(..., H_kv, S, E)`` with ``H % H_kv == 0``; the leading shape returned is that
    of the query heads, ``(..., H)``.  Without it, a head count in dimension -3 that neither equals
    nor broadcasts to the other is an error naming both counts.
    """
    layout = (
        f"  q: {fmt_shape(q)}  expected (..., {'H, ' if enable_gqa else ''}L, E)\n"
        f"  k: {fmt_shape(k)}  expected (..., {'H_kv, ' if enable_gqa else ''}S, E)\n"
        f"  v: {fmt_shape(v)}  expected (..., {'H_kv, ' if enable_gqa else ''}S, Ev)"
    )
    if q.ndim < 2 or k.ndim < 2 or v.ndim < 2:
        raise AttentionInputError(f"q, k and v need at least 2 dimensions.\n{layout}")
    L, E = (int(n) for n in q.shape[-2:])
    S, Ek = (int(n) for n in k.shape[-2:])
    Sv, Ev = (int(n) for n in v.shape[-2:])
    if E != Ek:
        raise AttentionInputError(
            "q and k must share their last dimension E (each query is compared with each key by a "
            f"dot product); got E={E} for q and E={Ek} for k.\n{layout}"
        )
    if S != Sv:
        raise AttentionInputError(
            f"k and v must have the same length S (one value per key); got S={S} keys and S={Sv} values.\n{layout}"
        )
    q_lead, k_lead, v_lead = tuple(q.shape[:-2]), tuple(k.shape[:-2]), tuple(v.shape[:-2])
    if enable_gqa:
        if q.ndim < 3 or k.ndim < 3 or v.ndim < 3:
            raise AttentionInputError(f"enable_gqa=True needs a head dimension (-3) in q, k and v.\n{layout}")
        H, H_k, H_v = int(q.shape[-3]), int(k.shape[-3]), int(v.shape[-3])
        if H_k != H_v:
            raise AttentionInputError(
                f"k and v must have the same number of key/value heads H_kv (dimension -3); "
                f"got H_kv={H_k} for k and H_kv={H_v} for v.\n{layout}"
            )
        if H_k == 0 or H % H_k:
            raise AttentionInputError(
                "with enable_gqa=True the number of query heads H must be a multiple of the number of "
                f"key/value heads H_kv (query head h reads key/value head h // (H / H_kv)); got H={H} "
                f"query heads and H_kv={H_k} key/value heads.\n{layout}"
            )
        k_lead, v_lead = k_lead[:-1] + (H,), v_lead[:-1] + (H,)  # each KV head serves H / H_kv query heads
    try:
        lead = broadcast_shapes(
            f"leading (batch/head) dimensions of q, k and v\n{layout}\n  leading shapes",
            {"q": q_lead, "k": k_lead, "v": v_lead},
        )
    except AttentionInputError as e:
        heads = {n: int(a.shape[-3]) for n, a in (("q", q), ("k", k), ("v", v)) if a.ndim >= 3}
        H = heads.get("q")
        kv = next((n for n in (heads.get("k"), heads.get("v")) if n not in (None, 1, H)), None)
        if not enable_gqa and H not in (None, 1) and kv is not None:
            e.args = (
                f"{e.args[0]}\n  q has H={H} heads and k, v have H_kv={kv} in dimension -3 (the heads "
                "of (B, H, L, E) inputs). For grouped-query attention (fewer key/value heads than query "
                "heads, H % H_kv == 0) pass enable_gqa=True.",
            )
        raise
    return lead, (L, S, E, Ev)


def check_scale(scale: Any, E: int) -> float:
    """``None`` means ``1/sqrt(E)`` (1 for ``E = 0``: every score is then an empty sum, 0); else a
    plain real number."""
    if scale is None:
        return 1.0 / math.sqrt(E) if E > 0 else 1.0
    if isinstance(scale, bool) or not isinstance(scale, (int, float, np.floating, np.integer)):
        raise AttentionTypeError(f"scale must be a Python number or None; got {type(scale).__name__}.")
    return float(scale)


_CONVERTERS = (
    "\nA 0/1 or float mask is ambiguous (is 1 'keep' or 'block'? is it added to the scores?)."
    "\nattncourse masks are boolean with True = may attend. Convert explicitly:"
    "\n  Hugging Face attention_mask (1 = keep)   -> from_hf_attention_mask(m)"
    "\n  nn.MultiheadAttention masks (True = block) -> from_blocked_mask(m)"
    "\n  additive float mask (0 / -inf)             -> from_additive_mask(m)"
)


def check_mask(ops, mask: Array, scores_shape: Tuple[int, ...], like: Array) -> Array:
    """A boolean mask broadcastable to ``scores_shape = (..., L, S)`` on ``like``'s device."""
    mask = ops.asarray(mask)
    if not ops.is_bool(mask):
        hint = _CONVERTERS if ops.is_integer(mask) or ops.is_floating(mask) else ""
        raise AttentionTypeError(f"mask must be boolean (True = may attend); got dtype {mask.dtype}.{hint}")
    try:
        joint = tuple(np.broadcast_shapes(tuple(mask.shape), scores_shape))
    except ValueError:
        joint = None
    if joint != scores_shape:
        raise AttentionInputError(
            f"mask of shape {fmt_shape(mask)} does not broadcast to the scores' shape {scores_shape} = (..., L, S).\n"
            "  A per-key padding mask (B, S) needs singleton axes: mask[:, None, :] for (B, L, S) "
            "scores, mask[:, None, None, :] for (B, H, L, S)."
        )
    if ops.device(mask) != ops.device(like):
        raise AttentionInputError(f"mask is on {ops.device(mask)} but q is on {ops.device(like)}.")
    return mask


# RoPE scaling dicts in Hugging Face's ``rope_parameters`` form: the keys each type reads, and
# which of them it cannot do without (transformers' ``_validate_*_rope_parameters``).
_ROPE_KEYS = {
    "default": (set(), set()),
    "linear": ({"factor"}, set()),
    "dynamic": ({"factor", "original_max_position_embeddings"}, set()),
    "yarn": (
        {"factor", "original_max_position_embeddings"},
        {"attention_factor", "beta_fast", "beta_slow", "mscale", "mscale_all_dim", "truncate"},
    ),
    "llama3": ({"factor", "original_max_position_embeddings", "low_freq_factor", "high_freq_factor"}, set()),
}
_ROPE_COMMON = {"rope_type", "type", "rope_theta", "partial_rotary_factor"}


def check_rope_scaling(scaling: Any, base: Optional[float]) -> Tuple[Optional[Dict[str, Any]], float]:
    """A RoPE ``scaling`` dict (Hugging Face's ``rope_parameters`` form) checked, and the base.

    Returns ``(params, base)``: ``params`` is ``None`` for no scaling (``scaling=None`` or
    ``rope_type="default"``), else a copy with ``rope_type`` set; ``base`` is ``base``, or the
    dict's ``rope_theta``, or 10000.  Unknown keys, missing required keys, a rotary fraction
    below 1 and a ``rope_theta`` that contradicts ``base`` are errors naming the key and value.
    """
    if scaling is None:
        return None, 10000.0 if base is None else positive_number("base", base)
    if not isinstance(scaling, dict):
        raise AttentionTypeError(
            f"scaling must be a dict like {{'rope_type': 'linear', 'factor': 2.0}} or None; "
            f"got {type(scaling).__name__}."
        )
    params = dict(scaling)
    rope_type = params.pop("rope_type", params.pop("type", "default"))  # "type": the older key
    params.pop("type", None)
    if rope_type not in _ROPE_KEYS:
        raise AttentionInputError(
            f"scaling['rope_type'] must be one of {sorted(_ROPE_KEYS)}; got {rope_type!r}."
        )
    theta = params.pop("rope_theta", None)
    if theta is not None:
        theta = positive_number("scaling['rope_theta']", theta)
        if base is not None and float(base) != theta:
            raise AttentionInputError(
                f"base={base!r} and scaling['rope_theta']={theta!r} disagree; give the base once."
            )
    base = positive_number("base", base) if base is not None else (theta if theta is not None else 10000.0)
    fraction = params.pop("partial_rotary_factor", 1.0)
    if fraction != 1.0:
        raise AttentionInputError(
            f"scaling['partial_rotary_factor'] must be 1.0 (apply_rope rotates every feature of x); "
            f"got {fraction!r}. Rotate a slice yourself: apply_rope(x[..., :d]) with d = E * fraction."
        )
    required, optional = _ROPE_KEYS[rope_type]
    unknown = sorted(set(params) - required - optional)
    if unknown:
        raise AttentionInputError(
            f"scaling of rope_type {rope_type!r} does not use the key(s) {unknown}; it reads "
            f"{sorted(required | optional | _ROPE_COMMON)}."
        )
    missing = sorted(k for k in required if params.get(k) is None)
    if missing:
        hint = (
            " (the length the model was trained at; transformers reads it from the model config's "
            "max_position_embeddings when the dict lacks it)"
            if "original_max_position_embeddings" in missing
            else ""
        )
        raise AttentionInputError(f"scaling of rope_type {rope_type!r} needs the key(s) {missing}{hint}.")
    if rope_type == "default":
        return None, base
    params["factor"] = positive_number("scaling['factor']", params["factor"])
    if "original_max_position_embeddings" in params:
        params["original_max_position_embeddings"] = positive_int(
            "scaling['original_max_position_embeddings']", params["original_max_position_embeddings"]
        )
    if rope_type == "llama3":
        low = positive_number("scaling['low_freq_factor']", params["low_freq_factor"])
        high = positive_number("scaling['high_freq_factor']", params["high_freq_factor"])
        if not high > low:
            raise AttentionInputError(
                f"scaling['high_freq_factor'] must exceed scaling['low_freq_factor']; got "
                f"high_freq_factor={high!r} and low_freq_factor={low!r}."
            )
    if rope_type == "yarn":
        for key in ("attention_factor", "beta_fast", "beta_slow"):
            if params.get(key) is not None:
                params[key] = positive_number(f"scaling[{key!r}]", params[key])
        for key in ("mscale", "mscale_all_dim"):  # 0 is allowed: transformers then ignores the pair
            if params.get(key) is not None and params[key] != 0:
                params[key] = positive_number(f"scaling[{key!r}]", params[key])
    params["rope_type"] = rope_type
    return params, base
