"""Chapter 3: what each prompt promises about its inputs."""

from __future__ import annotations

import numpy as np

from . import _rules as r
from .ch02 import _qkv

FLOATS = ("float16", "float32", "float64")


def scaled_scores(c):
    # q (..., L, E), k (..., S, E)
    q, k = np.asarray(c["q"]), np.asarray(c["k"])
    out = []
    for name, x in (("q", q), ("k", k)):
        out += r.finite(name, x) + r.dtype_in(name, x, FLOATS) + r.ndim_in(name, x, range(2, 8))
    if not out and q.shape[-1] != k.shape[-1]:
        out.append("q and k differ in width E")
    return out


def _positive_int(name, x):
    out = r.integer(name, x)
    return out if out else ([] if np.all(np.asarray(x) > 0) else [f"{name} is not positive"])


def init_std_for_unscaled_scores(c):
    # d_k an int or an array of ints; d_model an int; token_var > 0
    out = _positive_int("d_k", c["d_k"]) + _positive_int("d_model", c["d_model"])
    if np.ndim(c["d_model"]) != 0:
        out.append("d_model is not one number")
    t = c["token_var"]
    return out + ([] if np.ndim(t) == 0 and float(t) > 0 else ["token_var is not one positive number"])


def attention_with_scale(c):
    # q (..., L, E), k (..., S, E), v (..., S, Ev)
    return _qkv(c)


def predict_self_score(c):
    return [] if not c else [f"a predict exercise takes no inputs, got {sorted(c)}"]


def unit_variance_scale(c):
    # d_k an int; mu a float or an array (finite)
    out = _positive_int("d_k", c["d_k"])
    if np.ndim(c["d_k"]) != 0:
        out.append("d_k is not one number")
    return out + r.finite("mu", c["mu"])


def weights_not_normalised(c):
    # q (..., L, E), k (..., S, E), v (..., S, Ev)
    return _qkv(c)


PROMISES = {
    "ch03.scaled_scores": scaled_scores,
    "ch03.init_std_for_unscaled_scores": init_std_for_unscaled_scores,
    "ch03.attention_with_scale": attention_with_scale,
    "ch03.predict_self_score": predict_self_score,
    "ch03.unit_variance_scale": unit_variance_scale,
    "ch03.weights_not_normalised": weights_not_normalised,
}
