"""Chapter 13: what each prompt promises about its inputs."""

from __future__ import annotations

import numpy as np

from attncourse.exercises.chapters._ch13_sparse import boundary_ties

from ._rules import dtype_in, finite, in_range, integer, shape_is

FLOATS = ("float32", "float64")


def _none(case):
    return [] if not case else [f"a predict exercise takes no inputs, got {sorted(case)}"]


def _qkv(c, per_position=()):
    q = np.asarray(c["q"])
    *lead, L, E = q.shape
    p = shape_is("k", c["k"], (*lead, L, E)) + shape_is("v", c["v"], (*lead, L, None))
    for n in ("q", "k", "v") + tuple(per_position):
        p += dtype_in(n, c[n], FLOATS) + finite(n, c[n])
    for n in per_position:
        p += shape_is(n, c[n], (*lead, L))
    return p


def _recover_decays(c):
    q = np.asarray(c["q"])
    p = _qkv(c) + shape_is("out", c["out"], q.shape[:-1] + (np.asarray(c["v"]).shape[-1],))
    p += dtype_in("out", c["out"], FLOATS) + finite("out", c["out"])
    return p + ([] if q.shape[-2] >= 2 else ["L must be >= 2 (decays of positions 1 to L - 1)"])


def _unit_keys(c):
    norms = np.linalg.norm(np.asarray(c["k"], dtype=np.float64), axis=-1)
    ok = np.allclose(norms, 1.0, atol=1e-6)
    return [] if ok else [f"keys must have unit length, norms span {norms.min():.6g} to {norms.max():.6g}"]


def _chunked_delta(c):
    p = _qkv(c, ("beta",)) + integer("chunk_size", c["chunk_size"])
    p += [] if p else _unit_keys(c)
    return p + ([] if not p and c["chunk_size"] >= 1 else ["chunk_size must be >= 1"])


def _sparse(c):
    q = np.asarray(c["q"])
    *lead, H, L, E = q.shape
    p = shape_is("k", c["k"], (*lead, H, L, E)) + shape_is("v", c["v"], (*lead, H, L, None))
    iq = np.asarray(c["iq"])
    p += shape_is("iq", iq, (*lead, L, None, None))
    if not p:
        p += shape_is("ik", c["ik"], (*lead, L, iq.shape[-1])) + shape_is(
            "iw", c["iw"], (*lead, L, iq.shape[-2])
        )
    for n in ("q", "k", "v", "iq", "ik", "iw"):
        p += dtype_in(n, c[n], FLOATS) + finite(n, c[n])
    p += integer("top_k", c["top_k"])
    p += [] if not p and c["top_k"] >= 1 else ["top_k must be >= 1"]
    if not p and boundary_ties(c["iq"], c["ik"], c["iw"], int(c["top_k"])):
        p.append("a query's top_k-th and next index scores tie (the prompt promises no tie there)")
    return p


def _chunked_linear(c):
    p = _qkv(c) + integer("chunk_size", c["chunk_size"])
    return p + ([] if not p and c["chunk_size"] >= 1 else ["chunk_size must be >= 1"])


def _recover_values(c):
    q = np.asarray(c["q"])
    *lead, L, E = q.shape
    p = shape_is("k", c["k"], (*lead, L, E)) + shape_is("beta", c["beta"], (*lead, L))
    p += shape_is("out", c["out"], (*lead, L, None))
    for n in ("q", "k", "beta", "out"):
        p += dtype_in(n, c[n], FLOATS) + finite(n, c[n])
    if p:
        return p
    p += in_range("beta", np.asarray(c["beta"]), 0.0, 1.0)
    if not np.all(np.asarray(c["beta"]) > 0):
        p.append("beta must be in (0, 1]")
    p += _unit_keys(c)
    # "determined by what you are given": each query reads its own key's write
    qk = np.sum(np.asarray(c["q"], dtype=np.float64) * np.asarray(c["k"], dtype=np.float64), -1)
    return p + (
        [] if np.abs(qk).min() > 0.1 else ["a query nearly orthogonal to its key: values not determined"]
    )


PROMISES = {
    "ch13.predict_hybrid_mib": _none,
    "ch13.recover_decays": _recover_decays,
    "ch13.chunked_linear_attention": _chunked_linear,
    "ch13.chunked_delta_rule": _chunked_delta,
    "ch13.indexed_sparse_attention": _sparse,
    "ch13.recover_delta_values": _recover_values,
}
