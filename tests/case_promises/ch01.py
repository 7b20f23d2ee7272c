"""Chapter 1: what each prompt promises about its inputs."""

from __future__ import annotations

import numpy as np

from . import _rules as r

FLOATS = ("float16", "float32", "float64")


def _logits(name, x, allow_neg_inf=False):
    a = np.asarray(x)
    out = r.dtype_in(name, a, FLOATS) + r.ndim_in(name, a, range(1, 8)) + r.no_nan(name, a)
    finite_or = np.isfinite(a) | (np.isneginf(a) if allow_neg_inf else False)
    return out + ([] if np.all(finite_or) else [f"{name} holds entries the prompt does not allow"])


def temperature_softmax(c):
    # logits (..., n); temperature: one number, or (...) = logits' shape without its last axis;
    # 0 (greedy) or positive
    logits, t = np.asarray(c["logits"]), np.asarray(c["temperature"])
    out = _logits("logits", logits)
    if t.ndim and t.shape != logits.shape[:-1]:
        out.append(f"temperature has shape {t.shape}; the prompt promises () or {logits.shape[:-1]}")
    if np.any(~np.isfinite(t)) or np.any(t < 0):
        out.append("a temperature is negative or not finite")
    return out


def stable_softmax(c):
    # x (..., n), any shape; logits may be huge; -inf gets weight 0 (the public case says so)
    x = np.asarray(c["x"])
    out = _logits("x", x, allow_neg_inf=True)
    if x.size and np.any(np.all(np.isneginf(x), axis=-1)):
        out.append("a row of x is all -inf: the prompt never says what such a row gives")
    return out


def temperature_derivative(c):
    # logits (..., n), finite; one temperature > 0
    t = c["temperature"]
    out = _logits("logits", c["logits"])
    return out + ([] if np.ndim(t) == 0 and float(t) > 0 else ["temperature is not one positive number"])


def entropy_gradient(c):
    # x (..., n); -inf allowed (a masked key), not a whole row of them
    x = np.asarray(c["x"])
    out = _logits("x", x, allow_neg_inf=True)
    if np.any(np.all(np.isneginf(x), axis=-1)):
        out.append("a row of x is all -inf (no softmax exists)")
    return out


def logit_gap(c):
    # 1/n <= p < 1 (p may be an array), n an integer >= 2
    p, n = np.asarray(c["p"], dtype=np.float64), c["n"]
    out = r.integer("n", n)
    if not out and n < 2:
        out.append("n < 2")
    if not out and (np.any(p < 1 / n) or np.any(p >= 1)):
        out.append(f"p outside [1/n, 1): {p}")
    return out


def predict_overflow_logit(c):
    return [] if not c else [f"a predict exercise takes no inputs, got {sorted(c)}"]


PROMISES = {
    "ch01.temperature_softmax": temperature_softmax,
    "ch01.stable_softmax": stable_softmax,
    "ch01.temperature_derivative": temperature_derivative,
    "ch01.entropy_gradient": entropy_gradient,
    "ch01.logit_gap": logit_gap,
    "ch01.predict_overflow_logit": predict_overflow_logit,
}
