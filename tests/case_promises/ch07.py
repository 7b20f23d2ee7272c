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


def _move_rotated_keys(inputs):
    """k (..., S, E) floats, E even; integer old (S,) and new (S,)."""
    k, old, new = inputs["k"], inputs["old"], inputs["new"]
    out = _float_array("k", k) + r.ndim_in("k", k, (2, 3, 4, 5))
    out += r.integer("old", old) + r.integer("new", new)
    if out:
        return out
    S, E = np.shape(k)[-2:]
    if E % 2:
        out.append(f"E = {E} is odd")
    return out + r.shape_is("old", old, (S,)) + r.shape_is("new", new, (S,))


def _recover_alibi_slopes(inputs):
    """scores, weights (H, L, L), L >= 2; weights produced from scores by one distance slope per head."""
    s, w = inputs["scores"], inputs["weights"]
    out = _float_array("scores", s) + _float_array("weights", w)
    out += r.ndim_in("scores", s, (3,)) + r.ndim_in("weights", w, (3,))
    if out:
        return out
    H, L, L2 = np.shape(s)
    if L != L2 or np.shape(w) != (H, L, L) or L < 2:
        return [f"scores {np.shape(s)} and weights {np.shape(w)} are not both (H, L, L) with L >= 2"]
    if np.asarray(s).dtype != np.asarray(w).dtype:
        out.append("scores and weights differ in dtype")
    w64, s64 = np.asarray(w, dtype=np.float64), np.asarray(s, dtype=np.float64)
    tol = 1e-5 if np.asarray(w).dtype == np.float32 else 1e-10
    below = np.tril(np.ones((L, L), dtype=bool))
    if np.any(w64[:, ~below] != 0):
        out.append("a weight on a key after its query is not 0")
    if np.any(w64[:, below] <= 0):
        out.append("a weight on a visible key is not positive")
    if np.abs(w64.sum(-1) - 1).max() > tol:
        out.append("a row of weights does not sum to 1")
    if out:
        return out
    # one slope per head: log w_ij - s_ij + m (i - j) is the same for every visible key of a row
    distance = np.arange(L)[:, None] - np.arange(L)[None, :]
    resid = np.where(below, np.log(np.where(below, w64, 1.0)) - s64, 0.0)  # (H, L, L)
    m = resid[:, L - 1, L - 1] - resid[:, L - 1, L - 2]  # (H,)
    rest = np.where(below, resid + m[:, None, None] * distance, np.nan)
    spread = np.nanmax(rest, axis=-1) - np.nanmin(rest, axis=-1)
    if np.nanmax(spread) > (1e-3 if tol > 1e-6 else 1e-8):
        out.append("the weights are not the content scores with one distance slope per head")
    return out


def _alibi_chunk_attention(inputs):
    """q (B, H, C, d), k (B, H, S, d), v (B, H, S, Ev), S >= C >= 1, H a power of two, one dtype."""
    q, k, v = inputs["q"], inputs["k"], inputs["v"]
    out = []
    for name in ("q", "k", "v"):
        out += _float_array(name, inputs[name]) + r.ndim_in(name, inputs[name], (4,))
        out += r.dtype_in(name, inputs[name], (str(q.dtype),))
    if out:
        return out
    (B, H, C, d), S = np.shape(q), np.shape(v)[-2]
    if np.shape(k) != (B, H, S, d) or np.shape(v)[:2] != (B, H):
        out.append(
            f"q {np.shape(q)}, k {np.shape(k)}, v {np.shape(v)} are not (B, H, C, d), (B, H, S, d), (B, H, S, Ev)"
        )
    if not 1 <= C <= S:
        out.append(f"C = {C} is not between 1 and S = {S}")
    if H & (H - 1):
        out.append(f"H = {H} is not a power of two")
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
    "ch07.move_rotated_keys": _move_rotated_keys,
    "ch07.recover_alibi_slopes": _recover_alibi_slopes,
    "ch07.alibi_chunk_attention": _alibi_chunk_attention,
    "ch07.rope_position": _rope_position,
    "ch07.predict_encoder_alibi_weight": _nothing,
}
