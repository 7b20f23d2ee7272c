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


def predict_shapes(c):
    return [] if not c else [f"a predict exercise takes no inputs, got {sorted(c)}"]


def attend_each_query(c):
    # q (L, E), k (S, E), v (S, Ev)
    return _qkv(c, batched=False)


PROMISES = {
    "ch02.batched_attention": batched_attention,
    "ch02.output_jacobian": output_jacobian,
    "ch02.query_for_weights": query_for_weights,
    "ch02.predict_shapes": predict_shapes,
    "ch02.attend_each_query": attend_each_query,
}
