"""What the appendix's prompts (Appendix A, common bugs) promise about their inputs."""

from __future__ import annotations

import numpy as np

from ._rules import dtype_in, finite, integer, ndim_in, shape_is

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


def padded_head_weights(c):  # A.2: q (B*H, L, E), k (B*H, S, E), keep (B, S), n_heads = H
    q, k, keep, H = c["q"], c["k"], c["keep"], c["n_heads"]
    out = _floats(q=q, k=k) + _boolean("keep", keep) + integer("n_heads", H)
    out += ndim_in("q", q, [3]) + ndim_in("keep", keep, [2])
    if out:
        return out
    B, S = keep.shape
    out += shape_is("q", q, (B * H, None, None)) + shape_is("k", k, (B * H, S, q.shape[-1]))
    return out


def sentence_embeddings(c):  # A.3: hidden (B, L, D), keep (B, L) True for real tokens
    hidden, keep = c["hidden"], c["keep"]
    out = _floats(hidden=hidden) + _boolean("keep", keep) + ndim_in("hidden", hidden, [3])
    if out:
        return out
    out += shape_is("keep", keep, hidden.shape[:2])
    if not out and not keep.any(axis=1).all():
        out.append("a sentence has no real token; its mean is undefined")
    return out


def add_positions(c):  # A.4: x (B, L, D), keep (B, L) with the pads first, table (P, D), P > L
    x, keep, table = c["x"], c["keep"], c["table"]
    out = (
        _floats(x=x, table=table)
        + _boolean("keep", keep)
        + ndim_in("x", x, [3])
        + ndim_in("table", table, [2])
    )
    if out:
        return out
    B, L, D = x.shape
    out += shape_is("keep", keep, (B, L)) + shape_is("table", table, (None, D))
    if table.shape[0] <= L:
        out.append(f"table has {table.shape[0]} rows; the prompt promises P > L = {L}")
    if np.any(keep[:, :-1] & ~keep[:, 1:]):
        out.append("a pad follows a real token; the prompt promises the pads come first")
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
    "bugs.padded_head_weights": padded_head_weights,
    "bugs.sentence_embeddings": sentence_embeddings,
    "bugs.add_positions": add_positions,
    "bugs.fused_qkv_attention": fused_qkv_attention,
    "bugs.yarn_scores": yarn_scores,
    "bugs.partial_rope_attention": partial_rope_attention,
    "bugs.sink_cache_weights": sink_cache_weights,
    "bugs.predict_first_drift": no_inputs,
    "bugs.cross_decode": cross_decode,
}
