"""Chapter 4: what each prompt promises about its inputs."""

from __future__ import annotations

import numpy as np

from . import _rules as r

FLOATS = ("float16", "float32", "float64")


def _tokens_and_weights(c, names=("W_q", "W_k", "W_v")):
    x = np.asarray(c["x"])
    out = r.finite("x", x) + r.dtype_in("x", x, FLOATS) + r.ndim_in("x", x, range(2, 8))
    Ws = [np.asarray(c[n]) for n in names]
    for n, W in zip(names, Ws):
        out += r.finite(n, W) + r.ndim_in(n, W, (2,))
    if out:
        return out
    if any(W.shape[0] != x.shape[-1] for W in Ws):
        out.append("a weight matrix's first axis is not d_model")
    if Ws[0].shape[1] != Ws[1].shape[1]:
        out.append("W_q and W_k differ in d_k")
    return out


def project_qkv(c):
    # x (..., L, d_model), W_q, W_k (d_model, d_k), W_v (d_model, d_v)
    return _tokens_and_weights(c)


def attention_with_counts(c):
    # q (..., L, E), k (..., S, E), v (..., S, Ev), counts (S,) ints >= 0 (a count may be 0)
    from .ch02 import _qkv

    out = _qkv(c)
    counts = np.asarray(c["counts"])
    out += r.integer("counts", counts) + r.shape_is("counts", counts, (np.asarray(c["k"]).shape[-2],))
    if not out and np.any(counts < 0):
        out.append("a count is negative")
    if not out and counts.sum() == 0:
        out.append("every count is 0: no sequence to attend to")
    return out


def _weights_rows(name, w):
    # a layer's weights: entries in [0, 1], each row sums to 1 (float32 rounding allowed)
    out = r.finite(name, w) + r.ndim_in(name, w, range(2, 8))
    if out:
        return out
    w = np.asarray(w, dtype=np.float64)
    if w.shape[-1] != w.shape[-2]:
        out.append(f"{name} {w.shape} is not (..., L, L)")
    if w.min() < 0 or not np.allclose(w.sum(-1), 1, atol=1e-5):
        out.append(f"{name}'s rows are not distributions")
    return out


def output_without_token(c):
    # weights (..., L, L), v (..., L, d_v), out (..., L, d_v) = weights @ v of one run; 0 <= j < L (an int)
    w, v, o = (np.asarray(c[n]) for n in ("weights", "v", "out"))
    out = _weights_rows("weights", w) + r.finite("v", v) + r.finite("out", o)
    for n, a in (("weights", w), ("v", v), ("out", o)):
        out += r.dtype_in(n, a, FLOATS)
    if out:
        return out
    if v.shape[:-1] != w.shape[:-1] or o.shape != v.shape:
        return [f"weights {w.shape}, v {v.shape} and out {o.shape} are not one run's"]
    rtol = 1e-5 if np.float32 in (w.dtype, v.dtype, o.dtype) else 1e-10
    if not np.allclose(w.astype(np.float64) @ v.astype(np.float64), o, rtol=rtol, atol=rtol):
        out.append("out is not weights @ v")
    j, L = c["j"], w.shape[-1]
    if not isinstance(j, (int, np.integer)) or isinstance(j, bool) or not 0 <= j < L:
        return out + [f"j = {j!r} is not an int in 0 .. L - 1"]
    if L < 2:
        out.append("one token: nothing is left after the deletion")
    if w[..., :, j].max() > 0.99:  # the other keys' weights would be lost in rounding
        out.append("a query gives token j nearly all its weight")
    return out


def add_projection_biases(c):
    # q (..., L, d_k), weights (..., L, L), out (..., L, d_v), b_k (d_k,), b_v (d_v,)
    q, w, o, b_k, b_v = (np.asarray(c[n]) for n in ("q", "weights", "out", "b_k", "b_v"))
    out = _weights_rows("weights", w)
    for n, a in (("q", q), ("out", o), ("b_k", b_k), ("b_v", b_v)):
        out += r.finite(n, a) + r.dtype_in(n, a, FLOATS)
    if out:
        return out
    if q.shape[:-1] != w.shape[:-1] or o.shape[:-1] != w.shape[:-1]:
        out.append(f"q {q.shape}, weights {w.shape} and out {o.shape} are not one run's")
    out += r.shape_is("b_k", b_k, q.shape[-1:]) + r.shape_is("b_v", b_v, o.shape[-1:])
    return out


def predict_distinct_weights(c):
    return [] if not c else [f"a predict exercise takes no inputs, got {sorted(c)}"]


def self_attention_in_blocks(c):
    # x (..., L, d_model), W_q, W_k (d_model, d_k), W_v (d_model, d_v), block an int >= 1 that does
    # not divide L (the symptom: where it does, the handed-out code is right)
    out = _tokens_and_weights(c)
    block = c["block"]
    if not isinstance(block, (int, np.integer)) or isinstance(block, bool) or block < 1:
        out.append(f"block = {block!r} is not an int >= 1")
    elif not out and np.asarray(c["x"]).shape[-2] % block == 0:
        # the prompt says the handed-out code is right there: such a case would pass the bug
        out.append(f"block = {block} divides L = {np.asarray(c['x']).shape[-2]}")
    return out


PROMISES = {
    "ch04.project_qkv": project_qkv,
    "ch04.attention_with_counts": attention_with_counts,
    "ch04.output_without_token": output_without_token,
    "ch04.add_projection_biases": add_projection_biases,
    "ch04.predict_distinct_weights": predict_distinct_weights,
    "ch04.self_attention_in_blocks": self_attention_in_blocks,
}
