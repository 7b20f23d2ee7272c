"""Chapter 5 (multi-head attention): what each prompt promises about its inputs."""

from __future__ import annotations

import numpy as np

from case_promises import _rules as r

FLOATS = ("float16", "float32", "float64")


def _nothing(inputs):
    """A predict exercise: the function takes no inputs."""
    return [] if not inputs else [f"a predict exercise takes no inputs, got {sorted(inputs)}"]


def _dealt_weights(inputs):
    """5.1: four (d_model, d_model) float matrices of one dtype and a head count that divides d_model."""
    n = inputs["n_heads"]
    d = np.shape(inputs["W_q"])[0]
    out = r.integer("n_heads", n)
    for name in ("W_q", "W_k", "W_v", "W_o"):
        w = inputs[name]
        out += r.shape_is(name, w, (d, d)) + r.finite(name, w) + r.dtype_in(name, w, FLOATS)
        out += r.dtype_in(name, w, (str(np.asarray(inputs["W_q"]).dtype),))  # one precision per case
    if not out and (n < 1 or d % n):
        out.append(f"n_heads = {n} does not divide d_model = {d}")
    return out


def _mha(inputs, spec_heads=True):
    x, n = inputs["x"], inputs["n_heads"]
    out = r.dtype_in("x", x, FLOATS) + r.ndim_in("x", x, (3,)) + r.finite("x", x) + r.integer("n_heads", n)
    d = np.shape(x)[-1]
    for name in ("W_q", "W_k", "W_v", "W_o"):
        out += r.shape_is(name, inputs[name], (d, d)) + r.finite(name, inputs[name])
        out += r.dtype_in(name, inputs[name], (str(x.dtype),))  # one precision per case
    if not out and (n < 1 or d % n):
        out.append(f"n_heads = {n} does not divide d_model = {d}")
    return out


def _single_heads(inputs):
    """5.5: H modules' (d_model, d_head) projections and (d_head, d_model) outputs, H * d_head = d_model."""
    W_q = inputs["W_q"]
    out = r.ndim_in("W_q", W_q, (3,))
    if out:
        return out
    H, d, d_head = np.shape(W_q)
    for name, shape in (
        ("W_q", (H, d, d_head)),
        ("W_k", (H, d, d_head)),
        ("W_v", (H, d, d_head)),
        ("W_o", (H, d_head, d)),
    ):
        w = inputs[name]
        out += r.shape_is(name, w, shape) + r.finite(name, w) + r.dtype_in(name, w, FLOATS)
        out += r.dtype_in(name, w, (str(np.asarray(W_q).dtype),))  # one precision per case
    if H * d_head != d:
        out.append(f"H * d_head = {H * d_head} is not d_model = {d}")
    return out


def _heads_from_averaged_weights(inputs):
    q, k, w = (np.asarray(inputs[n]) for n in ("q", "k", "weights"))
    out = []
    for name, a in (("q", q), ("k", k), ("weights", w)):
        out += r.ndim_in(name, a, (3,))
    if out:
        return out
    B, L, d = q.shape
    out += r.shape_is("k", k, (B, L, d)) + r.shape_is("weights", w, (B, L, L))
    if out:
        return out
    if not np.allclose(w.sum(-1), 1, atol=1e-5) or w.min() < 0:
        out.append("weights are not attention maps whose rows sum to 1")
    # exactly one head count reproduces the maps: the next best is clear of rounding
    from attncourse.exercises.chapters.ch05 import _averaged_maps

    errs = sorted(
        float(np.abs(_averaged_maps(q.astype(float), k.astype(float), H) - w).max())
        for H in range(1, d + 1)
        if d % H == 0
    )
    if errs[0] > 1e-5 or (len(errs) > 1 and errs[1] < 1e-2):
        out.append(f"no single head count reproduces the maps (errors {errs[:2]})")
    return out


PROMISES = {
    "ch05.weights_from_dealt_heads": _dealt_weights,
    "ch05.predict_summed_scores_rank": _nothing,
    "ch05.multi_head_attention": _mha,
    "ch05.predict_causal_top_keys": _nothing,
    "ch05.merge_single_heads": _single_heads,
    "ch05.heads_from_averaged_weights": _heads_from_averaged_weights,
    "ch05.mha_forward": _mha,
}
