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


def predict_cosine_factor(c):
    return [] if not c else [f"a predict exercise takes no inputs, got {sorted(c)}"]


def recover_scale(c):
    # q (..., L, E), k (..., S, E), weights (..., L, S): the softmax over the keys of c q k^T, one c > 0
    # for every row; weights may be exactly 0, but every row has at least two above 0
    q, k, w = (np.asarray(c[n]) for n in ("q", "k", "weights"))
    out = []
    for name, x in (("q", q), ("k", k), ("weights", w)):
        out += r.finite(name, x) + r.dtype_in(name, x, FLOATS) + r.ndim_in(name, x, range(2, 8))
    if out:
        return out
    if q.shape[-1] != k.shape[-1]:
        return ["q and k differ in width E"]
    try:
        s = np.broadcast_arrays(q.astype(np.float64) @ np.swapaxes(k.astype(np.float64), -1, -2), w)[0]
    except ValueError:
        return ["weights is not shaped (..., L, S) for these q and k"]
    w64 = w.astype(np.float64)
    out += r.in_range("weights", w64, 0.0, 1.0)
    if not np.allclose(w64.sum(-1), 1, atol=1e-5):
        out.append("a row of weights does not sum to 1")
    if ((w64 > 0).sum(-1) < 2).any():
        out.append("a row has fewer than two weights above 0")
    if out:
        return out
    # one scale for every row: take it from the largest and another weight of row 0, then check all
    top = w64.reshape(-1, w64.shape[-1])[0].argmax()
    flat_s, flat_w = s.reshape(-1, s.shape[-1])[0], w64.reshape(-1, w64.shape[-1])[0]
    other = int(np.argmax((flat_w > 0) & (np.arange(flat_w.size) != top)))
    scale = np.log(flat_w[top] / flat_w[other]) / (flat_s[top] - flat_s[other])
    if not scale > 0:
        return ["the scale is not positive"]
    e = np.exp(scale * s - (scale * s).max(-1, keepdims=True))
    if not np.allclose(e / e.sum(-1, keepdims=True), w64, rtol=1e-4, atol=1e-6):
        out.append("the weights are not softmax(c q k^T) for one c")
    return out


def weights_not_normalised(c):
    # q (..., L, E), k (..., S, E), v (..., S, Ev)
    return _qkv(c)


PROMISES = {
    "ch03.scaled_scores": scaled_scores,
    "ch03.init_std_for_unscaled_scores": init_std_for_unscaled_scores,
    "ch03.attention_with_scale": attention_with_scale,
    "ch03.predict_cosine_factor": predict_cosine_factor,
    "ch03.recover_scale": recover_scale,
    "ch03.weights_not_normalised": weights_not_normalised,
}
