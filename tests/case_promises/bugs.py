"""What the appendix's prompts (Appendix A, common bugs) promise about their inputs."""

from __future__ import annotations

import numpy as np

from ._rules import dtype_in, finite, in_range, integer, ndim_in, shape_is

FLOATS = ("float32", "float64")


def _floats(**arrays):
    out = []
    for name, x in arrays.items():
        out += dtype_in(name, x, FLOATS) + finite(name, x)
    return out


def _boolean(name, x):
    return dtype_in(name, x, ["bool"])


def chunk_window_weights(c):  # A.1: q (..., L, E), k (..., S, E) torch, L <= S, an int window >= 1
    q, k, window = c["q"], c["k"], c["window"]
    out = _floats(q=q, k=k) + ndim_in("q", q, range(2, 6)) + integer("window", window)
    if out:
        return out
    out += shape_is("k", k, (*q.shape[:-2], None, q.shape[-1]))
    if not out and q.shape[-2] > k.shape[-2]:
        out.append(f"L = {q.shape[-2]} > S = {k.shape[-2]}; the prompt promises the chunk is in the cache")
    if window < 1:
        out.append(f"window = {window}; the prompt promises at least 1")
    return out


def grid_positions(c):  # A.2: ints grid_h, grid_w >= 1 and d_model a multiple of 4
    gh, gw, d = c["grid_h"], c["grid_w"], c["d_model"]
    out = integer("grid_h", gh) + integer("grid_w", gw) + integer("d_model", d)
    if out:
        return out
    if gh < 1 or gw < 1:
        out.append(f"a {gh} x {gw} grid has no patch")
    if d < 4 or d % 4:
        out.append(f"d_model = {d} is not a positive multiple of 4")
    return out


def cls_rollout(c):  # A.3: weights (n_layers, B, H, N, N), every row a distribution
    w = c["weights"]
    out = _floats(weights=w) + ndim_in("weights", w, [5])
    if out:
        return out
    out += shape_is("weights", w, (None, None, None, w.shape[-1], w.shape[-1])) + in_range("weights", w, 0, 1)
    tol = 1e-5 if w.dtype == np.float32 else 1e-12
    if not out and not np.allclose(w.sum(axis=-1), 1, atol=tol):
        out.append("a row of weights does not sum to 1; the prompt promises distributions")
    return out


def gated_delta_layer(c):  # A.4: q, k (H, L, E), v (H, L, Ev), a, b (H, L), A_log, dt_bias (H,)
    q, k, v, a, b = c["q"], c["k"], c["v"], c["a"], c["b"]
    A_log, dt_bias = c["A_log"], c["dt_bias"]
    out = _floats(q=q, k=k, v=v, a=a, b=b, A_log=A_log, dt_bias=dt_bias) + ndim_in("q", q, [3])
    if out:
        return out
    H, L, E = q.shape
    out += shape_is("k", k, q.shape) + shape_is("v", v, (H, L, None))
    out += shape_is("a", a, (H, L)) + shape_is("b", b, (H, L))
    out += shape_is("A_log", A_log, (H,)) + shape_is("dt_bias", dt_bias, (H,))
    if not out and (np.linalg.norm(q, axis=-1).min() == 0 or np.linalg.norm(k, axis=-1).min() == 0):
        out.append("a query or key of length 0 cannot be L2-normalised")
    return out


def fused_qkv_attention(c):  # A.5: x (..., L, d), W (d, 3d), n_heads divides d
    x, W, H = c["x"], c["W"], c["n_heads"]
    out = _floats(x=x, W=W) + ndim_in("x", x, range(2, 6)) + ndim_in("W", W, [2]) + integer("n_heads", H)
    if out:
        return out
    d = x.shape[-1]
    out += shape_is("W", W, (d, 3 * d))
    if H < 1 or d % H:
        out.append(f"n_heads = {H} does not divide d = {d}")
    return out


def yarn_scores(c):  # A.6: q, k (..., L, E) at positions 0..L-1, a float factor >= 1, an int length
    q, k, factor, length = c["q"], c["k"], c["factor"], c["original_length"]
    out = _floats(q=q, k=k) + ndim_in("q", q, range(2, 6)) + integer("original_length", length)
    if out:
        return out
    out += shape_is("k", k, q.shape)
    if q.shape[-1] % 2:
        out.append(f"E = {q.shape[-1]} is odd; RoPE rotates pairs")
    if not isinstance(factor, float) or factor < 1:
        out.append(f"factor {factor!r} is not a float >= 1")
    if length < 1:
        out.append(f"original_length {length} is not a training length")
    return out


def partial_rope_attention(c):  # A.7: q, k (..., L, E), v (..., L, Ev), rotary_dim even, 2 <= it < E
    q, k, v, R = c["q"], c["k"], c["v"], c["rotary_dim"]
    out = _floats(q=q, k=k, v=v) + ndim_in("q", q, range(2, 6)) + integer("rotary_dim", R)
    if out:
        return out
    out += shape_is("k", k, q.shape) + shape_is("v", v, (*q.shape[:-1], None))
    if R % 2 or not 2 <= R < q.shape[-1]:
        out.append(f"rotary_dim = {R} with E = {q.shape[-1]}; the prompt promises it even, 2 <= it < E")
    return out


def sink_cache_weights(c):  # A.8: q, k (L, E), n_sink sinks, a window of the last `window` tokens
    q, k, n_sink, window = c["q"], c["k"], c["n_sink"], c["window"]
    out = _floats(q=q, k=k) + ndim_in("q", q, [2]) + integer("n_sink", n_sink) + integer("window", window)
    if out:
        return out
    out += shape_is("k", k, q.shape)
    if q.shape[-1] % 2:
        out.append(f"E = {q.shape[-1]} is odd; RoPE rotates pairs")
    if n_sink < 0 or window < 1:
        out.append(f"n_sink = {n_sink}, window = {window}: a cache needs n_sink >= 0 and window >= 1")
    return out


def cross_decode(c):  # A.10: memory (S, D), y (T, D), W_q, W_k (D, E), W_v (D, Dv)
    memory, y, W_q, W_k, W_v = c["memory"], c["y"], c["W_q"], c["W_k"], c["W_v"]
    out = _floats(memory=memory, y=y, W_q=W_q, W_k=W_k, W_v=W_v)
    for name, x in (("memory", memory), ("y", y), ("W_q", W_q), ("W_k", W_k), ("W_v", W_v)):
        out += ndim_in(name, x, [2])
    if out:
        return out
    D = memory.shape[1]
    out += shape_is("y", y, (None, D)) + shape_is("W_q", W_q, (D, None)) + shape_is("W_k", W_k, W_q.shape)
    return out + shape_is("W_v", W_v, (D, None))


def no_inputs(c):  # A.9: a prediction takes no inputs
    return [] if not c else [f"a prediction takes no inputs; got {sorted(c)}"]


PROMISES = {
    "bugs.chunk_window_weights": chunk_window_weights,
    "bugs.grid_positions": grid_positions,
    "bugs.cls_rollout": cls_rollout,
    "bugs.gated_delta_layer": gated_delta_layer,
    "bugs.fused_qkv_attention": fused_qkv_attention,
    "bugs.yarn_scores": yarn_scores,
    "bugs.partial_rope_attention": partial_rope_attention,
    "bugs.sink_cache_weights": sink_cache_weights,
    "bugs.predict_first_drift": no_inputs,
    "bugs.cross_decode": cross_decode,
}
