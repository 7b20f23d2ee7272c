"""Chapter 3: what each prompt promises about its inputs."""

from __future__ import annotations

import numpy as np

from . import _rules as r
from .ch02 import _qkv

FLOATS = ("float16", "float32", "float64")


def scaled_scores(c):
    # q (..., L, E), k (..., S, E)
    q, k = np.asarray(c["q"]), np.asarray(c["k"])
    out = []
    for name, x in (("q", q), ("k", k)):
        out += r.finite(name, x) + r.dtype_in(name, x, FLOATS) + r.ndim_in(name, x, range(2, 8))
    if not out and q.shape[-1] != k.shape[-1]:
        out.append("q and k differ in width E")
    return out


def two_part_attention(c):
    # q_c (..., H, L, Dc), k_c (..., H, S, Dc), q_r (..., H, L, Dr), k_r (..., S, Dr) with no head axis,
    # v (..., H, S, Dv); the scale must not be read from one part's width: Dc != Dr, neither 1
    names = ("q_c", "k_c", "q_r", "k_r", "v")
    a = {n: np.asarray(c[n]) for n in names}
    out = []
    for n in names:
        out += r.finite(n, a[n]) + r.dtype_in(n, a[n], FLOATS)
        out += r.ndim_in(n, a[n], range(2, 8) if n == "k_r" else range(3, 8))
    if out:
        return out
    Dc, Dr = a["q_c"].shape[-1], a["q_r"].shape[-1]
    if a["k_c"].shape[-1] != Dc or a["k_r"].shape[-1] != Dr:
        out.append("a query part and its key part differ in width")
    if Dc == Dr or 1 in (Dc, Dr):
        out.append("Dc equals Dr, or one of them is 1: a scale from one part's width passes")
    if a["k_r"].ndim != a["k_c"].ndim - 1:
        out.append("k_r does not have exactly one axis (the heads) fewer than k_c")
    lead = a["q_c"].shape[:-1]
    if a["q_r"].shape[:-1] != lead:
        out.append("q_c and q_r differ in their leading axes")
    S = a["k_c"].shape[-2]
    if a["k_r"].shape[-2] != S or a["v"].shape[-2] != S:
        out.append("k_c, k_r and v hold different numbers of keys")
    if a["k_c"].shape[:-2] != a["v"].shape[:-2] or a["k_c"].shape[:-3] != a["k_r"].shape[:-2]:
        out.append("the batch and head axes of the keys and values disagree")
    return out


def packed_head_attention(c):
    # q (..., L, n_heads * D), k (..., S, n_heads * D), v (..., S, n_heads * Dv), n_heads an int;
    # several heads, and the width D of a head differs from the whole width (so n_heads > 1)
    out = _qkv(c)
    H = c["n_heads"]
    out += r.integer("n_heads", H)
    if out:
        return out
    q, v = np.asarray(c["q"]), np.asarray(c["v"])
    if H < 2:
        out.append("one head: the whole width is the head's width")
    if q.shape[-1] % H or v.shape[-1] % H:
        out.append("a last axis is not n_heads blocks")
        return out
    # the kernel pads a head's width to a multiple of 8: where it does, the padded width must differ
    # from every other width a scale could wrongly be taken from
    D = q.shape[-1] // H
    padded = -(-D // 8) * 8
    if padded != D and padded in (H, H * D):
        out.append(f"the padded width {padded} equals n_heads or the whole width")
    return out


def predict_cosine_factor(c):
    return [] if not c else [f"a predict exercise takes no inputs, got {sorted(c)}"]


def recover_scale(c):
    # q (..., L, E), k (..., S, E), weights (..., L, S): the softmax over the keys of c q k^T, one c > 0
    # for every row; weights may be exactly 0, but every row has at least two above 0
    # candidates: a 1-d array of positive floats holding the layer's c, with 1/sqrt(E), 1/E and 1
    q, k, w = (np.asarray(c[n]) for n in ("q", "k", "weights"))
    cand = np.asarray(c["candidates"], dtype=np.float64)
    out = r.finite("candidates", cand) + r.ndim_in("candidates", cand, (1,))
    if not out and not (cand > 0).all():
        out.append("a candidate is not positive")
    for name, x in (("q", q), ("k", k), ("weights", w)):
        out += r.finite(name, x) + r.dtype_in(name, x, FLOATS) + r.ndim_in(name, x, range(2, 8))
    if out:
        return out
    if q.shape[-1] != k.shape[-1]:
        return ["q and k differ in width E"]
    try:
        s = np.broadcast_arrays(q.astype(np.float64) @ np.swapaxes(k.astype(np.float64), -1, -2), w)[0]
    except ValueError:
        return ["weights is not shaped (..., L, S) for these q and k"]
    w64 = w.astype(np.float64)
    out += r.in_range("weights", w64, 0.0, 1.0)
    if not np.allclose(w64.sum(-1), 1, atol=1e-5):
        out.append("a row of weights does not sum to 1")
    if ((w64 > 0).sum(-1) < 2).any():
        out.append("a row has fewer than two weights above 0")
    if out:
        return out
    # one scale for every row: take it from the largest and another weight of row 0, then check all
    top = w64.reshape(-1, w64.shape[-1])[0].argmax()
    flat_s, flat_w = s.reshape(-1, s.shape[-1])[0], w64.reshape(-1, w64.shape[-1])[0]
    other = int(np.argmax((flat_w > 0) & (np.arange(flat_w.size) != top)))
    scale = np.log(flat_w[top] / flat_w[other]) / (flat_s[top] - flat_s[other])
    if not scale > 0:
        return ["the scale is not positive"]
    e = np.exp(scale * s - (scale * s).max(-1, keepdims=True))
    if not np.allclose(e / e.sum(-1, keepdims=True), w64, rtol=1e-4, atol=1e-6):
        out.append("the weights are not softmax(c q k^T) for one c")
    if not np.isclose(cand, scale, rtol=1e-3).any():
        out.append("the layer's scale is not among the candidates")
    E = q.shape[-1]
    for name, x in (("1/sqrt(E)", 1 / np.sqrt(E)), ("1/E", 1 / E), ("1", 1.0)):
        if not np.isclose(cand, x, rtol=0.05).any():
            out.append(f"{name} is not among the candidates")
    if np.any(np.diff(np.sort(cand)) / np.sort(cand)[:-1] < 0.05):
        out.append("two candidates lie within 5 % of each other")
    return out


def weights_not_normalised(c):
    # q (..., L, E), k (..., S, E), v (..., S, Ev)
    return _qkv(c)


PROMISES = {
    "ch03.scaled_scores": scaled_scores,
    "ch03.two_part_attention": two_part_attention,
    "ch03.packed_head_attention": packed_head_attention,
    "ch03.predict_cosine_factor": predict_cosine_factor,
    "ch03.recover_scale": recover_scale,
    "ch03.weights_not_normalised": weights_not_normalised,
}
