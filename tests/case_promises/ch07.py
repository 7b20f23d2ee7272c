"""Chapter 7 (positional encoding): what each prompt promises about its inputs."""

from __future__ import annotations

import numpy as np

from attncourse import apply_rope
from case_promises import _rules as r

FLOATS = ("float16", "float32", "float64")


def _nothing(inputs):
    return [] if not inputs else [f"a predict exercise takes no inputs, got {sorted(inputs)}"]


def _float_array(name, x):
    return r.dtype_in(name, x, FLOATS) + r.finite(name, x)


def _rope_left_padded(inputs):
    x, n = inputs["x"], np.asarray(inputs["lengths"])
    out = _float_array("x", x) + r.ndim_in("x", x, (3,)) + r.integer("lengths", n)
    if out:
        return out
    B, L, E = np.shape(x)
    if E % 2:
        out.append(f"E = {E} is odd")
    out += r.shape_is("lengths", n, (B,))
    if not out and (n.min() < 0 or n.max() > L):
        out.append("lengths has entries outside 0 .. L")
    return out


def _rotation_angles(inputs):
    p, E = inputs["positions"], inputs["E"]
    out = r.integer("positions", p) + r.ndim_in("positions", p, (1,)) + r.integer("E", E)
    return out if out or (E > 0 and E % 2 == 0) else [f"E = {E} is not a positive even number"]


def _rope_2d(inputs):
    x, rows, cols = inputs["x"], inputs["rows"], inputs["cols"]
    out = _float_array("x", x) + r.ndim_in("x", x, (2, 3, 4, 5))
    out += r.integer("rows", rows) + r.integer("cols", cols)
    if out:
        return out
    N, E = np.shape(x)[-2:]
    if E % 4:
        out.append(f"E = {E} is not divisible by 4")
    return out + r.shape_is("rows", rows, (N,)) + r.shape_is("cols", cols, (N,))


def _alibi_slopes(inputs):
    n = inputs["n_heads"]
    out = r.integer("n_heads", n)
    return out if out or n >= 1 else [f"n_heads = {n} is below 1"]


def _alibi_attention(inputs):
    q, k, v = inputs["q"], inputs["k"], inputs["v"]
    out = []
    for name in ("q", "k", "v"):
        out += _float_array(name, inputs[name]) + r.ndim_in(name, inputs[name], (4,))
        out += r.dtype_in(name, inputs[name], (str(q.dtype),))
    if not out and (np.shape(q) != np.shape(k) or np.shape(v)[:3] != np.shape(q)[:3]):
        out.append(
            f"q {np.shape(q)}, k {np.shape(k)}, v {np.shape(v)} are not (B, H, L, d), (B, H, L, d), (B, H, L, Ev)"
        )
    return out


def _rope_position(inputs):
    """y is x turned by half-split RoPE (base 10000) at integer positions 0 <= p < 2000; E >= 8 even."""
    x, y = inputs["x"], inputs["y"]
    out = _float_array("x", x) + _float_array("y", y)
    if out:
        return out
    x64, y64 = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    E = x64.shape[-1] if x64.ndim else 0
    if x64.shape != y64.shape or E < 8 or E % 2:
        return [f"x {x64.shape} and y {y64.shape} are not one shape (..., E), E >= 8 even"]
    if np.dtype(np.asarray(x).dtype) != np.dtype(np.asarray(y).dtype):
        out.append("x and y differ in dtype")
    # every position 0..1999: exactly one must turn each x into its y
    p = np.arange(2000).reshape((2000,) + (1,) * (x64.ndim - 1))
    turned = apply_rope(np.broadcast_to(x64, (2000,) + x64.shape), p)
    tol = 1e-4 if np.asarray(x).dtype == np.float32 else 1e-9
    hits = (np.abs(turned - y64).max(axis=-1) <= tol * (1 + np.abs(y64).max(axis=-1))).sum(axis=0)
    if np.any(hits != 1):
        out.append(f"{int(np.sum(hits != 1))} vector(s) are not x turned at exactly one position below 2000")
    return out


PROMISES = {
    "ch07.rope_left_padded": _rope_left_padded,
    "ch07.rotation_angles": _rotation_angles,
    "ch07.rope_2d": _rope_2d,
    "ch07.alibi_slopes": _alibi_slopes,
    "ch07.alibi_attention": _alibi_attention,
    "ch07.rope_position": _rope_position,
    "ch07.predict_alibi_recent_heads": _nothing,
}
