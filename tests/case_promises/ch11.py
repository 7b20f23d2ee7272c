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


def _attention(q, k, v):
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    w = np.exp(scores - scores.max(-1, keepdims=True))
    return (w / w.sum(-1, keepdims=True)) @ v


def kv_head_map(inputs):
    """H a multiple of H_kv; out is each query head's unmasked attention over one key/value head, and
    exactly one fits: the best fit within 1e-5 (float32's rounding), every other head at least 1e-2 off."""
    q, k, v, out = (inputs[n] for n in ("q", "k", "v", "out"))
    problems = []
    for name, x in (("q", q), ("k", k), ("v", v), ("out", out)):
        problems += dtype_in(name, x, FLOATS) + finite(name, x) + ndim_in(name, x, (3,))
    if problems:
        return problems
    q, k, v, out = (_array(x).astype(np.float64) for x in (q, k, v, out))
    (H, L, E), (H_kv, S, _) = q.shape, k.shape
    problems += shape_is("k", k, (H_kv, S, E)) + shape_is("v", v, (H_kv, S, None))
    problems += shape_is("out", out, (H, L, v.shape[-1]))
    if problems:
        return problems
    if H % H_kv:
        problems.append(f"H = {H} is not a multiple of H_kv = {H_kv}")
    err = np.abs(_attention(q[:, None], k[None], v[None]) - out[:, None]).max(axis=(-2, -1))  # (H, H_kv)
    for h, row in enumerate(err):
        fits = np.sort(row)
        if fits[0] > 1e-5:
            problems.append(
                f"query head {h}'s output is no key/value head's attention (best {fits[0]:.1e} off)"
            )
        elif len(fits) > 1 and fits[1] < 1e-2:
            problems.append(f"query head {h}'s output fits two key/value heads")
    return problems


def stack_reach(inputs):
    T, windows, n_sinks = inputs["T"], inputs["windows"], inputs["n_sinks"]
    problems = _positive_int("T", T) + integer("n_sinks", n_sinks) + integer("windows", windows)
    problems += ndim_in("windows", windows, (1,))
    if problems:
        return problems
    if _array(windows).size < 1:
        problems.append("windows names no layer")
    if np.any(_array(windows) < 0):
        problems.append(f"windows {_array(windows).tolist()} holds a negative window")
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


def window_prefill(inputs):
    q, k, v, window, chunk = (inputs[n] for n in ("q", "k", "v", "window", "chunk"))
    problems = _positive_int("window", window) + _positive_int("chunk", chunk)
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


def recover_block_table(inputs):
    """The pool is (n_blocks, block_size, H, E), k (length, H, E); exactly one table fits: each of the
    sequence's blocks of tokens is held by exactly one pool block (in the slots it fills), no pool
    block twice."""
    k_pool, k = inputs["k_pool"], inputs["k"]
    problems = []
    for name, x in (("k_pool", k_pool), ("k", k)):
        problems += dtype_in(name, x, FLOATS) + finite(name, x)
    problems += ndim_in("k_pool", k_pool, (4,)) + ndim_in("k", k, (3,))
    if problems:
        return problems
    k_pool, k = _array(k_pool), _array(k)
    n_blocks, b, H, E = k_pool.shape
    problems += shape_is("k", k, (None, H, E))
    if problems or k.shape[0] < 1:
        return problems or ["k holds no token"]
    used = []
    for start in range(0, k.shape[0], b):
        tokens = k[start : start + b]
        fits = [p for p in range(n_blocks) if np.array_equal(k_pool[p, : len(tokens)], tokens)]
        if len(fits) != 1:
            problems.append(
                f"tokens {start} .. {start + len(tokens) - 1} are held by {len(fits)} blocks, not one"
            )
        used += fits
    if len(set(used)) != len(used):
        problems.append("one pool block holds two of the sequence's blocks")
    return problems


PROMISES = {
    "ch11.predict_cache_gib": predict_cache_gib,
    "ch11.kv_head_map": kv_head_map,
    "ch11.stack_reach": stack_reach,
    "ch11.pairs_in_range": pairs_in_range,
    "ch11.window_prefill": window_prefill,
    "ch11.recover_block_table": recover_block_table,
}
