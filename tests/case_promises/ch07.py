"""Chapter 7 (positional encoding): what each prompt promises about its inputs."""

from __future__ import annotations

import numpy as np

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


def _rope_pair_score(inputs):
    q, k, offset, theta = inputs["q"], inputs["k"], inputs["offset"], inputs["theta"]
    out = _float_array("q", q) + _float_array("k", k) + r.integer("offset", offset)
    if out:
        return out
    if np.shape(q) != np.shape(k) or np.shape(q)[-1] != 2:
        out.append(f"q {np.shape(q)} and k {np.shape(k)} are not both (..., 2)")
    else:
        try:
            np.broadcast_shapes(np.shape(offset), np.shape(q)[:-1])
        except ValueError:
            out.append(f"offset {np.shape(offset)} does not broadcast against {np.shape(q)[:-1]}")
    if not isinstance(theta, (float, np.floating)) or not np.isfinite(theta):
        out.append(f"theta = {theta!r} is not a finite float")
    return out


PROMISES = {
    "ch07.rope_left_padded": _rope_left_padded,
    "ch07.rotation_angles": _rotation_angles,
    "ch07.rope_2d": _rope_2d,
    "ch07.alibi_slopes": _alibi_slopes,
    "ch07.alibi_attention": _alibi_attention,
    "ch07.rope_pair_score": _rope_pair_score,
    "ch07.predict_alibi_recent_heads": _nothing,
}
