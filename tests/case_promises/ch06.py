"""Chapter 6 (masked attention): what each prompt promises about its inputs."""

from __future__ import annotations

import numpy as np

from case_promises import _rules as r

FLOATS = ("float16", "float32", "float64")


def _positive_int(name, x, least=1):
    out = r.integer(name, x)
    return out if out or x >= least else [f"{name} = {x} is below {least}"]


def _causal_mask(inputs):
    return _positive_int("L", inputs["L"]) + _positive_int("S", inputs["S"])


def _packed(inputs):
    d = np.asarray(inputs["doc_ids"])
    out = r.integer("doc_ids", d) + r.ndim_in("doc_ids", d, (2,))
    for row in d.reshape(-1, d.shape[-1]) if d.ndim == 2 else []:
        starts = [row[0]] + [b for a, b in zip(row[:-1], row[1:]) if a != b]  # the id of each run
        if len(starts) != len(set(map(int, starts))):
            out.append(f"row {row.tolist()} reuses an id after its document ended")
    return out


def _logsumexp(inputs):
    s, m = inputs["scores"], np.asarray(inputs["mask"])
    out = r.dtype_in("scores", s, FLOATS) + r.finite("scores", s) + r.dtype_in("mask", m, ("bool",))
    try:
        np.broadcast_shapes(m.shape, np.shape(s))
    except ValueError:
        out.append(f"mask {m.shape} does not broadcast against scores {np.shape(s)}")
    return out


def _lengths(name, n, size, top, least=0):
    n = np.asarray(n)
    out = r.integer(name, n) + r.shape_is(name, n, (size,))
    if not out and n.size and (n.min() < least or n.max() > top):
        out.append(f"{name} has entries outside {least} .. {top}")
    return out


def _qkv(inputs, same_length):
    q, k, v = inputs["q"], inputs["k"], inputs["v"]
    out = []
    for name in ("q", "k", "v"):
        out += (
            r.dtype_in(name, inputs[name], FLOATS)
            + r.finite(name, inputs[name])
            + r.ndim_in(name, inputs[name], (3,))
        )
        out += r.dtype_in(name, inputs[name], (str(q.dtype),))
    if out:
        return out
    if q.shape[0] != k.shape[0] or k.shape[:2] != v.shape[:2] or q.shape[-1] != k.shape[-1]:
        out.append(f"q {q.shape}, k {k.shape}, v {v.shape} do not fit together")
    if same_length and q.shape[1] != k.shape[1]:
        out.append("self-attention with L != S")
    return out


def _ring(inputs):
    """q (B, E), k_cache (B, W, E), v_cache (B, W, Ev), one float dtype; pos (B,) integers >= 0; the
    slots no position reached hold finite leftovers that a wrong mask would visibly use; every case
    mixes a buffer still filling with one that has wrapped around."""
    q, k, v, pos = inputs["q"], inputs["k_cache"], inputs["v_cache"], np.asarray(inputs["pos"])
    out = []
    for name, x in (("q", q), ("k_cache", k), ("v_cache", v)):
        out += r.dtype_in(name, x, FLOATS) + r.finite(name, x) + r.dtype_in(name, x, (str(q.dtype),))
    out += r.ndim_in("q", q, (2,)) + r.ndim_in("k_cache", k, (3,)) + r.ndim_in("v_cache", v, (3,))
    out += r.integer("pos", pos) + r.shape_is("pos", pos, (np.shape(q)[0],))
    if out:
        return out
    B, W = k.shape[:2]
    if q.shape != (B, k.shape[2]) or v.shape[:2] != (B, W):
        return [f"q {q.shape}, k_cache {k.shape}, v_cache {v.shape} do not fit together"]
    if (pos < 0).any():
        out.append("a negative position")
    if W > 1 and not ((pos < W - 1).any() and (pos >= W).any()):
        out.append("the batch does not mix a filling buffer with a wrapped one")
    return out


def _additive(inputs):
    # bias: any shape, float16/32/64; a kept entry is a finite position term in [-60000, 0], a
    # blocked one -inf or its own dtype's finfo.min
    bias = inputs["bias"]
    out = r.dtype_in("bias", bias, FLOATS)
    if out:
        return out
    a = np.asarray(bias)
    position = np.isfinite(a) & (a <= 0) & (a >= -60000)
    allowed = position | (a == -np.inf) | (a == np.finfo(a.dtype).min)
    if not allowed.all():
        out.append(
            "bias holds entries that are neither a position term in [-60000, 0], -inf nor its own dtype's finfo.min"
        )
    return out


def _mha_window(inputs):
    from case_promises.ch05 import _mha

    return _mha(inputs) + _positive_int("window", inputs["window"])


def _streaming(inputs):
    """weights (H, L, L), float32 or float64, rows summing to 1: each head the softmax under a causal
    window of `window >= 1` keys plus `n_sink >= 0` sinks, window + n_sink < L; blocked keys exactly 0."""
    from attncourse.exercises.chapters.ch06.attention_under_masks import _streaming_mask

    w = inputs["weights"]
    out = (
        r.dtype_in("weights", w, ("float32", "float64"))
        + r.finite("weights", w)
        + r.ndim_in("weights", w, (3,))
    )
    if out:
        return out
    H, L, L2 = w.shape
    if L != L2:
        return [f"weights {w.shape} is not (H, L, L)"]
    if (w < 0).any() or not np.allclose(w.sum(axis=-1), 1.0, atol=1e-5):
        out.append("weights are not rows of softmax weights")
    for h in range(H):
        seen = w[h] != 0
        fits = [
            (win, s)
            for win in range(1, L)
            for s in range(0, L - win)
            if np.array_equal(seen, _streaming_mask(L, win, s))
        ]
        if len(fits) != 1:
            out.append(f"head {h}: {len(fits)} settings with window + n_sink < L give its pattern")
    return out


def _decoder(inputs):
    q, k, v = inputs["q"], inputs["k"], inputs["v"]
    out = []
    for name in ("q", "k", "v"):
        out += r.dtype_in(name, inputs[name], FLOATS) + r.finite(name, inputs[name])
    if np.shape(q) != np.shape(k) or np.shape(v)[:-1] != np.shape(q)[:-1] or np.ndim(q) < 2:
        out.append(
            f"q {np.shape(q)}, k {np.shape(k)}, v {np.shape(v)} are not (..., L, E), (..., L, E), (..., L, Ev)"
        )
    return out


def _lengths_out(inputs):
    """q, k (B, S, E), v and out (B, S, Ev), one float dtype; out is the padded attention of some
    lengths 0 .. S, and of exactly one (the next closest length's output is far off)."""
    from attncourse.exercises.chapters.ch06.attention_under_masks import _padded_out

    q, k, v, o = (inputs[n] for n in ("q", "k", "v", "out"))
    out = _qkv(inputs, same_length=True)
    out += r.dtype_in("out", o, (str(q.dtype),)) + r.finite("out", o)
    if out:
        return out
    if o.shape != v.shape:
        return [f"out {o.shape} is not v's shape {v.shape}"]
    S = k.shape[1]
    for b in range(q.shape[0]):
        qb, kb, vb, ob = (a[b].astype(np.float64) for a in (q, k, v, o))
        gaps = sorted(np.abs(_padded_out(qb, kb, vb, n) - ob).max() for n in range(S + 1))
        if gaps[0] > 1e-3:
            out.append(f"row {b}: out is no padded attention of q, k, v")
        elif gaps[1] < 1e-2:
            out.append(f"row {b}: two lengths give nearly the same output")
    return out


def _cache(inputs):
    """masks (N, L, L) boolean, any pattern."""
    m = np.asarray(inputs["masks"])
    out = r.dtype_in("masks", m, ("bool",)) + r.ndim_in("masks", m, (3,))
    if not out and m.shape[1] != m.shape[2]:
        out.append(f"masks {m.shape} are not (N, L, L)")
    return out


PROMISES = {
    "ch06.make_causal_mask": _causal_mask,
    "ch06.packed_causal_mask": _packed,
    "ch06.masked_logsumexp": _logsumexp,
    "ch06.ring_cache_attention": _ring,
    "ch06.mask_from_additive": _additive,
    "ch06.local_global_attention": _mha_window,
    "ch06.streaming_settings": _streaming,
    "ch06.key_major_decoder": _decoder,
    "ch06.lengths_from_output": _lengths_out,
    "ch06.first_wrong_cached_output": _cache,
}
