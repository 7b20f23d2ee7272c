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


def recover_permutation(c):
    # out (L, d), out_permuted (L, d) = out's rows reordered up to rounding; no two rows of out that close
    a, b = np.asarray(c["out"], dtype=np.float64), np.asarray(c["out_permuted"], dtype=np.float64)
    out = r.finite("out", a) + r.finite("out_permuted", b) + r.ndim_in("out", a, (2,))
    if out or a.shape != b.shape:
        return out + ([] if a.shape == b.shape else ["out and out_permuted differ in shape"])
    d = np.sqrt(((b[:, None] - a[None]) ** 2).sum(-1))
    nearest = d.argmin(1)
    scale = np.abs(a).max()
    if sorted(nearest) != list(range(len(a))) or d.min(1).max() > 1e-5 * scale:
        out.append("out_permuted is not out's rows reordered up to rounding")
    gaps = np.sqrt(((a[:, None] - a[None]) ** 2).sum(-1))
    if gaps[~np.eye(len(a), dtype=bool)].min() < 1e-5 * scale:
        out.append("two rows of out are as close as rounding")
    return out


def recover_value_projection(c):
    # x (L, d_model) with L >= d_model, W_q and W_k (d_model, d_k), out (L, d_v) made by one W_v,
    # tokens spread out enough that exactly one W_v gives out
    out = _tokens_and_weights(c, names=("W_q", "W_k"))
    o = np.asarray(c["out"])
    out += r.finite("out", o) + r.ndim_in("out", o, (2,))
    if out:
        return out
    x, W_q, W_k = (np.asarray(c[n], dtype=np.float64) for n in ("x", "W_q", "W_k"))
    if x.ndim != 2 or x.shape[0] < x.shape[1] or o.shape[0] != x.shape[0]:
        return [f"x {x.shape} and out {o.shape}: not L >= d_model tokens with one output row each"]
    q, k = x @ W_q, x @ W_k
    s = q @ k.T / np.sqrt(q.shape[-1])
    w = np.exp(s - s.max(-1, keepdims=True))
    mixed = (w / w.sum(-1, keepdims=True)) @ x
    if np.linalg.cond(mixed) > 100:
        out.append("the tokens are not spread out enough for one W_v (condition number over 100)")
    # and the layer's weights are far from singular, so undoing the mixing first is accurate too
    if np.linalg.cond(w / w.sum(-1, keepdims=True)) > 1000:
        out.append("the layer's weights are nearly singular (condition number over 1000)")
    W_v = np.linalg.lstsq(mixed, o, rcond=None)[0]
    if np.abs(mixed @ W_v - o).max() > 1e-9 * max(1.0, np.abs(o).max()):
        out.append("no W_v gives out")
    return out


def predict_cross_projection_parameters(c):
    return [] if not c else [f"a predict exercise takes no inputs, got {sorted(c)}"]


def self_attention_out(c):
    # x (..., L, d_model), W_q, W_k (d_model, d_k), W_v (d_model, d_v)
    return _tokens_and_weights(c)


PROMISES = {
    "ch04.project_qkv": project_qkv,
    "ch04.attention_with_counts": attention_with_counts,
    "ch04.recover_permutation": recover_permutation,
    "ch04.recover_value_projection": recover_value_projection,
    "ch04.predict_cross_projection_parameters": predict_cross_projection_parameters,
    "ch04.self_attention_out": self_attention_out,
}
