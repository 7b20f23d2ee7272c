"""Chapter 0: what each prompt promises about its inputs."""

from __future__ import annotations

import numpy as np

from . import _rules as r

FLOATS = ("float16", "float32", "float64")


def _vector(name, x):
    return r.ndim_in(name, x, (1,)) + r.finite(name, x) + r.dtype_in(name, np.asarray(x), FLOATS)


def _positive_number(name, x):
    if np.ndim(x) != 0:
        return [f"{name} is not one number"]
    return [] if np.isfinite(float(x)) and float(x) > 0 else [f"{name} = {x} is not a positive number"]


def kernel_regression(c):
    # x_query (L,), x_key (S,), y_value (S,), width > 0
    out = _vector("x_query", c["x_query"]) + _vector("x_key", c["x_key"]) + _vector("y_value", c["y_value"])
    if np.shape(c["y_value"]) != np.shape(c["x_key"]):
        out.append("y_value and x_key differ in length")
    return out + _positive_number("width", c["width"])


def kernel_weight_ratio(c):
    # d1, d2: numbers or arrays of the same shape; width > 0
    out = r.finite("d1", c["d1"]) + r.finite("d2", c["d2"]) + _positive_number("width", c["width"])
    if np.shape(c["d1"]) != np.shape(c["d2"]):
        out.append("d1 and d2 differ in shape")
    return out


def additive_score_cost(c):
    return [] if not c else [f"a predict exercise takes no inputs, got {sorted(c)}"]


def effective_keys(c):
    # x_query (L,), x_key (S,), width > 0
    return (
        _vector("x_query", c["x_query"])
        + _vector("x_key", c["x_key"])
        + _positive_number("width", c["width"])
    )


def bilinear_attention(c):
    # q (..., L, E_q), k (..., S, E_k), v (..., S, Ev), W (E_q, E_k)
    q, k, v, W = (np.asarray(c[n]) for n in ("q", "k", "v", "W"))
    out = []
    for name, x in (("q", q), ("k", k), ("v", v), ("W", W)):
        out += r.finite(name, x) + r.dtype_in(name, x, FLOATS)
    if min(q.ndim, k.ndim, v.ndim) < 2 or W.ndim != 2:
        return out + ["q, k, v need at least two axes and W exactly two"]
    if W.shape != (q.shape[-1], k.shape[-1]):
        out.append(f"W has shape {W.shape}; the prompt promises (E_q, E_k) = {(q.shape[-1], k.shape[-1])}")
    if k.shape[-2] != v.shape[-2]:
        out.append("k and v hold different numbers of keys")
    try:
        np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    except ValueError:
        out.append("the batch axes of q, k, v do not broadcast")
    return out


PROMISES = {
    "ch00.kernel_regression": kernel_regression,
    "ch00.kernel_weight_ratio": kernel_weight_ratio,
    "ch00.additive_score_cost": additive_score_cost,
    "ch00.effective_keys": effective_keys,
    "ch00.bilinear_attention": bilinear_attention,
}
