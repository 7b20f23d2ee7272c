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


def kernel_classifier(c):
    # x_query (L,), x_key (S,), label (S,) integers in 0 .. n_classes - 1, n_classes a positive integer,
    # width > 0; a class may have no key, queries may lie far from every key
    out = (
        _vector("x_query", c["x_query"])
        + _vector("x_key", c["x_key"])
        + _positive_number("width", c["width"])
    )
    n_classes, label = c["n_classes"], np.asarray(c["label"])
    if not isinstance(n_classes, (int, np.integer)) or isinstance(n_classes, bool) or n_classes < 1:
        return out + [f"n_classes = {n_classes!r} is not a positive integer"]
    if label.dtype.kind not in "iu" or label.shape != np.shape(c["x_key"]):
        out.append("label is not one integer per key")
    elif np.any(label < 0) or np.any(label >= n_classes):
        out.append("a label outside 0 .. n_classes - 1")
    return out


def additive_long_query(c):
    return [] if not c else [f"a predict exercise takes no inputs, got {sorted(c)}"]


def effective_keys(c):
    # x_query (L,), x_key (S,), width > 0
    return (
        _vector("x_query", c["x_query"])
        + _vector("x_key", c["x_key"])
        + _positive_number("width", c["width"])
    )


def regression_from_counts(c):
    # x_query (L,), x_place (S,) distinct, count (S,) positive integers up to 10^12, y_mean (S,),
    # width > 0; queries may lie far from every place
    out = _vector("x_query", c["x_query"]) + _vector("x_place", c["x_place"]) + _vector("y_mean", c["y_mean"])
    out += _positive_number("width", c["width"])
    count = np.asarray(c["count"])
    if (
        count.dtype.kind not in "iu"
        or count.shape != np.shape(c["x_place"])
        or np.any(count < 1)
        or np.any(count > 10**12)
    ):
        out.append("count is not one positive integer per place")
    if not out and np.shape(c["y_mean"]) != np.shape(c["x_place"]):
        out.append("y_mean is not one number per place")
    if not out and len(np.unique(c["x_place"])) < len(c["x_place"]):
        out.append("two places are the same: the prompt says the places are distinct")
    return out


PROMISES = {
    "ch00.kernel_regression": kernel_regression,
    "ch00.kernel_classifier": kernel_classifier,
    "ch00.additive_long_query": additive_long_query,
    "ch00.effective_keys": effective_keys,
    "ch00.regression_from_counts": regression_from_counts,
}
