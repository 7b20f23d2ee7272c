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


def far_from_the_data(c):
    # x_key (S,), y_value (S,) with S >= 2; width > 0; keys may share a place
    out = (
        _vector("x_key", c["x_key"])
        + _vector("y_value", c["y_value"])
        + _positive_number("width", c["width"])
    )
    if not out and np.shape(c["x_key"]) != np.shape(c["y_value"]):
        out.append("x_key and y_value differ in length")
    if not out and len(np.unique(c["x_key"])) < 2:
        out.append("every key at one place: there is no left and right")
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


def values_from_predictions(c):
    # x_query (L,), x_key (S,), L >= S, width > 0, pred (L,) = the kernel's predictions of exactly one y_value
    out = _vector("x_query", c["x_query"]) + _vector("x_key", c["x_key"]) + _vector("pred", c["pred"])
    out += _positive_number("width", c["width"])
    if out:
        return out
    xq, xk, pred = (np.asarray(c[n], dtype=np.float64) for n in ("x_query", "x_key", "pred"))
    if len(xq) < len(xk) or len(pred) != len(xq):
        return ["fewer queries than keys, or pred not one number per query"]
    s = -((xq[:, None] - xk[None, :]) ** 2) / (2 * float(c["width"]) ** 2)
    a = np.exp(s - s.max(-1, keepdims=True))
    weights = a / a.sum(-1, keepdims=True)
    if np.linalg.cond(weights) > 100:
        out.append("the queries do not pin down one set of values (condition number over 100)")
    y = np.linalg.lstsq(weights, pred, rcond=None)[0]
    if np.abs(weights @ y - pred).max() > 1e-6 * max(1.0, np.abs(pred).max()):
        out.append("no set of values gives pred")
    return out


PROMISES = {
    "ch00.kernel_regression": kernel_regression,
    "ch00.far_from_the_data": far_from_the_data,
    "ch00.additive_score_cost": additive_score_cost,
    "ch00.effective_keys": effective_keys,
    "ch00.values_from_predictions": values_from_predictions,
}
