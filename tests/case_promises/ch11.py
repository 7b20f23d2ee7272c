"""What chapter 11's prompts promise about their inputs."""

from __future__ import annotations

import numpy as np

from ._rules import _array, dtype_in, finite, integer, ndim_in, shape_is

FLOATS = ("float32", "float64")


def _positive_int(name, x):
    problems = integer(name, x)
    return problems or ([] if int(x) >= 1 else [f"{name} = {x}; the prompt needs at least 1"])


def predict_cache_gib(inputs):
    return [] if not inputs else [f"a prediction takes no inputs; got {sorted(inputs)}"]


def mha_to_gqa(inputs):
    W, H, H_kv = inputs["W"], inputs["H"], inputs["H_kv"]
    problems = _positive_int("H", H) + _positive_int("H_kv", H_kv) + dtype_in("W", W, FLOATS) + finite("W", W)
    problems += ndim_in("W", W, (2,))
    if problems:
        return problems
    if H % H_kv:
        problems.append(f"H = {H} is not a multiple of H_kv = {H_kv}")
    if _array(W).shape[0] % H:
        problems.append(f"W has {_array(W).shape[0]} rows, not H * d_head for H = {H}")
    return problems


def window_sink_chunk(inputs):
    L, S, window, n_sinks = inputs["L"], inputs["S"], inputs["window"], inputs["n_sinks"]
    problems = _positive_int("L", L) + _positive_int("S", S) + _positive_int("window", window)
    problems += integer("n_sinks", n_sinks)
    if problems:
        return problems
    if L > S:
        problems.append(f"L = {L} new queries cannot be the last L of S = {S} positions")
    if n_sinks < 0:
        problems.append(f"n_sinks = {n_sinks} is negative")
    return problems


def pairs_in_range(inputs):
    theta, scaled, N, L = inputs["theta"], inputs["scaled"], inputs["N"], inputs["L"]
    problems = _positive_int("N", N) + _positive_int("L", L)
    for name, x in (("theta", theta), ("scaled", scaled)):
        problems += dtype_in(name, x, FLOATS) + finite(name, x) + ndim_in(name, x, (1,))
    if problems:
        return problems
    if _array(theta).shape != _array(scaled).shape:
        problems.append("theta and scaled have different shapes; both are (P,)")
    if not N < L:
        problems.append(f"N = {N} is not below L = {L}")
    if np.any(_array(theta) <= 0) or np.any(_array(scaled) <= 0):
        problems.append("a frequency is not positive")
    return problems


def ring_buffer_decode(inputs):
    q, k, v, window = inputs["q"], inputs["k"], inputs["v"], inputs["window"]
    problems = _positive_int("window", window)
    for name, x in (("q", q), ("k", k), ("v", v)):
        problems += dtype_in(name, x, FLOATS) + finite(name, x)
    if problems:
        return problems
    q, k, v = _array(q), _array(k), _array(v)
    if min(q.ndim, k.ndim, v.ndim) < 2:
        return ["q, k and v are (..., T, E) / (..., T, Ev)"]
    if q.shape != k.shape:
        problems.append(f"q {q.shape} and k {k.shape} differ; both are (..., T, E)")
    if v.shape[:-1] != k.shape[:-1]:
        problems.append(f"v {v.shape} does not match k {k.shape} but in its last axis")
    return problems


def paged_decode(inputs):
    q, kp, vp, table, length = (inputs[n] for n in ("q", "k_pool", "v_pool", "block_table", "length"))
    problems = (
        _positive_int("length", length) + integer("block_table", table) + ndim_in("block_table", table, (1,))
    )
    for name, x in (("q", q), ("k_pool", kp), ("v_pool", vp)):
        problems += dtype_in(name, x, FLOATS) + finite(name, x)
    problems += ndim_in("q", q, (2,)) + ndim_in("k_pool", kp, (4,)) + ndim_in("v_pool", vp, (4,))
    if problems:
        return problems
    q, kp, vp, table = _array(q), _array(kp), _array(vp), _array(table)
    n_blocks, b, H, E = kp.shape
    problems += shape_is("q", q, (H, E)) + shape_is("v_pool", vp, (n_blocks, b, H, None))
    if table.min() < 0 or table.max() >= n_blocks:
        problems.append(f"block_table {table.tolist()} names a block outside 0 .. {n_blocks - 1}")
    if len(set(table.tolist())) != len(table):
        problems.append(f"block_table {table.tolist()} lists a block twice")
    if not (len(table) - 1) * b < length <= len(table) * b:
        problems.append(f"{len(table)} blocks of {b} do not lay out exactly {length} tokens")
    return problems


PROMISES = {
    "ch11.predict_cache_gib": predict_cache_gib,
    "ch11.mha_to_gqa": mha_to_gqa,
    "ch11.window_sink_chunk": window_sink_chunk,
    "ch11.pairs_in_range": pairs_in_range,
    "ch11.ring_buffer_decode": ring_buffer_decode,
    "ch11.paged_decode": paged_decode,
}
