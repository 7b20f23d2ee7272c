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


def width_from_predictions(c):
    # x_query (L,), x_key (S,), y_value (S,), pred (L,): made with one width in [0.1, 3], and no
    # other width in [0.02, 60] gives the same predictions
    out = _vector("x_query", c["x_query"]) + _vector("x_key", c["x_key"]) + _vector("y_value", c["y_value"])
    out += _vector("pred", c["pred"])
    if out:
        return out
    xq, xk, y, pred = (np.asarray(c[n], dtype=np.float64) for n in ("x_query", "x_key", "y_value", "pred"))
    if len(xk) != len(y) or len(pred) != len(xq):
        return ["x_key and y_value, or x_query and pred, differ in length"]
    d2 = (xq[:, None] - xk[None, :]) ** 2

    def misfit(widths):  # the largest gap to pred of each width's predictions
        s = -d2 / (2 * np.asarray(widths, dtype=np.float64)[..., None, None] ** 2)
        a = np.exp(s - s.max(-1, keepdims=True))
        return np.abs((a / a.sum(-1, keepdims=True)) @ y - pred).max(-1)

    grid = np.logspace(np.log10(0.02), np.log10(60), 20001)
    gaps = misfit(grid)
    best = grid[gaps.argmin()]
    fine = np.linspace(best * 0.999, best * 1.001, 4001)
    w = fine[misfit(fine).argmin()]
    scale = max(1.0, np.abs(pred).max())
    if misfit(w) > 1e-6 * scale or not 0.1 * 0.999 <= w <= 3 * 1.001:
        out.append("pred is not the kernel's predictions for one width between 0.1 and 3")
    elif np.any(gaps[np.abs(np.log(grid / w)) > 0.01] < 1e-4 * scale):
        out.append("a width more than 1 % away gives predictions within 1e-4 of pred")
    return out


PROMISES = {
    "ch00.kernel_regression": kernel_regression,
    "ch00.far_from_the_data": far_from_the_data,
    "ch00.additive_score_cost": additive_score_cost,
    "ch00.effective_keys": effective_keys,
    "ch00.width_from_predictions": width_from_predictions,
}
