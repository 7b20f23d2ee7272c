"""Chapter 2: what each prompt promises about its inputs."""

from __future__ import annotations

import numpy as np

from . import _rules as r

FLOATS = ("float16", "float32", "float64")


def _qkv(c, batched=True, same_E=True):
    q, k, v = (np.asarray(c[n]) for n in ("q", "k", "v"))
    out = []
    for name, x in (("q", q), ("k", k), ("v", v)):
        out += r.finite(name, x) + r.dtype_in(name, x, FLOATS)
        out += r.ndim_in(name, x, range(2, 8) if batched else (2,))
    if out:
        return out
    if same_E and q.shape[-1] != k.shape[-1]:
        out.append("q and k differ in width E")
    if k.shape[-2] != v.shape[-2]:
        out.append("k and v hold different numbers of keys")
    try:
        np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    except ValueError:
        out.append("the batch axes of q, k, v do not broadcast")
    return out


def batched_attention(c):
    # q (..., L, E), k (..., S, E), v (..., S, Ev)
    return _qkv(c)


def output_jacobian(c):
    # q (L, E), k (S, E), v (S, Ev): no batch axes
    return _qkv(c, batched=False)


def query_for_weights(c):
    # k (S, E), S = E, invertible; p (S,) or (N, S), positive, rows sum to 1
    k, p = np.asarray(c["k"]), np.asarray(c["p"])
    out = r.finite("k", k) + r.ndim_in("k", k, (2,)) + r.ndim_in("p", p, (1, 2)) + r.finite("p", p)
    if out:
        return out
    if k.shape[0] != k.shape[1]:
        out.append(f"k has shape {k.shape}; the prompt promises S = E")
    elif abs(np.linalg.det(k)) < 1e-8:
        out.append("k is not invertible")
    if p.shape[-1] != k.shape[0]:
        out.append("p's last axis is not S")
    if np.any(p <= 0) or not np.allclose(p.sum(-1), 1):
        out.append("p is not positive with rows summing to 1")
    return out


def predict_key_stretch(c):
    return [] if not c else [f"a predict exercise takes no inputs, got {sorted(c)}"]


def recover_key_lengths(c):
    # q (L, E), directions (S, E) of rows of length 1, weights (L, S) positive, rows summing to 1, the
    # weights of unscaled attention over keys lengths[:, None] * directions with positive lengths,
    # queries varied enough that only one set of lengths fits
    q, d, w = (r._array(c[n]) for n in ("q", "directions", "weights"))
    out = []
    for name, x in (("q", q), ("directions", d), ("weights", w)):
        out += r.finite(name, x) + r.dtype_in(name, x, FLOATS) + r.ndim_in(name, x, (2,))
    if out:
        return out
    L, S = w.shape
    if q.shape[0] != L or d.shape[0] != S or q.shape[1] != d.shape[1]:
        return [f"shapes q {q.shape}, directions {d.shape}, weights {w.shape} do not fit together"]
    tol = 1e-5 if np.float32 in (q.dtype, d.dtype, w.dtype) else 1e-9
    if not np.allclose(np.linalg.norm(d.astype(float), axis=-1), 1, atol=tol):
        out.append("a direction is not of length 1")
    if np.any(w <= 0) or not np.allclose(w.sum(-1), 1, atol=tol):
        out.append("the weights are not positive with rows summing to 1")
        return out
    c_ = q.astype(float) @ d.astype(float).T
    system = np.zeros((L, S, S + L))
    system[:, np.arange(S), np.arange(S)] = c_
    system[np.arange(L), :, S + np.arange(L)] = -1.0
    system = system.reshape(L * S, S + L)
    if np.linalg.matrix_rank(system) < S + L:
        out.append("the queries do not fix the lengths (more than one set fits)")
        return out
    lengths = np.linalg.lstsq(system, np.log(w.astype(float)).ravel(), rcond=None)[0][:S]
    if np.any(lengths <= 0):
        out.append("the lengths that fit are not all positive")
    s = c_ * lengths
    e = np.exp(s - s.max(-1, keepdims=True))
    if not np.allclose(e / e.sum(-1, keepdims=True), w, rtol=1e-4 if tol > 1e-9 else 1e-8, atol=0):
        out.append("no positive lengths give these weights")
    return out


PROMISES = {
    "ch02.batched_attention": batched_attention,
    "ch02.output_jacobian": output_jacobian,
    "ch02.query_for_weights": query_for_weights,
    "ch02.predict_key_stretch": predict_key_stretch,
    "ch02.recover_key_lengths": recover_key_lengths,
}
