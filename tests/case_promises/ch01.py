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


def attention_kl(c):
    # teacher, student (..., n): one shape, one dtype (float32 or float64); scores finite or -inf;
    # a -inf key is -inf in both rows; no row entirely -inf
    t, s = np.asarray(c["teacher"]), np.asarray(c["student"])
    out = _logits("teacher", t, allow_neg_inf=True) + _logits("student", s, allow_neg_inf=True)
    if t.dtype not in (np.float32, np.float64) or s.dtype != t.dtype:
        out.append(f"dtypes {t.dtype}, {s.dtype}: the prompt promises one dtype, float32 or float64")
    if t.shape != s.shape:
        out.append(f"shapes {t.shape} and {s.shape} differ")
    elif not np.array_equal(np.isneginf(t), np.isneginf(s)):
        out.append("a key is masked in one row and not in the other")
    elif np.any(np.all(np.isneginf(t), axis=-1)):
        out.append("a row is masked entirely")
    if not out and np.abs(np.where(np.isfinite(t), t, 0)).max() > 1e4:
        out.append("scores beyond the thousands")
    return out


def log_sigmoid(c):
    # z: any shape, float32 or float64, finite, in [-1000, 1000]
    z = np.asarray(c["z"])
    out = r.dtype_in("z", z, ("float32", "float64")) + r.no_nan("z", z)
    if not np.all(np.isfinite(z)) or np.any(np.abs(z) > 1000):
        out.append("a score outside [-1000, 1000]")
    return out


def smooth_max_slope(c):
    # x (..., n): finite or -inf, no row entirely -inf; one temperature > 0 (as small as 0.001)
    x, t = np.asarray(c["x"]), c["temperature"]
    out = _logits("x", x, allow_neg_inf=True)
    if np.any(np.all(np.isneginf(x), axis=-1)):
        out.append("a row of x is all -inf")
    if not (np.ndim(t) == 0 and float(t) >= 0.001):
        out.append("temperature is not one number of at least 0.001")
    return out


PROMISES = {
    "ch01.temperature_softmax": temperature_softmax,
    "ch01.stable_softmax": stable_softmax,
    "ch01.temperature_derivative": temperature_derivative,
    "ch01.entropy_gradient": entropy_gradient,
    "ch01.attention_kl": attention_kl,
    "ch01.log_sigmoid": log_sigmoid,
    "ch01.smooth_max_slope": smooth_max_slope,
}
