"""Chapter 5 (multi-head attention): what each prompt promises about its inputs."""

from __future__ import annotations

import numpy as np

from case_promises import _rules as r

FLOATS = ("float16", "float32", "float64")


def _nothing(inputs):
    """A predict exercise: the function takes no inputs."""
    return [] if not inputs else [f"a predict exercise takes no inputs, got {sorted(inputs)}"]


def _heads_for_lookups(inputs):
    w, offsets, threshold = inputs["weights"], np.asarray(inputs["offsets"]), inputs["threshold"]
    out = r.dtype_in("weights", w, FLOATS) + r.ndim_in("weights", w, (4,)) + r.finite("weights", w)
    out += r.integer("offsets", offsets) + r.ndim_in("offsets", offsets, (1,))
    a = np.asarray(w, dtype=np.float64)
    L = a.shape[-1]
    if a.shape[-2] != L:
        out.append("weights is not (B, H, L, L)")
    if np.any(np.triu(a[..., :, :], 1) != 0):
        out.append("weights are not causal: a query puts weight on a later key")
    if not np.allclose(a.sum(-1), 1, atol=1e-2):  # the saved maps are rounded to 3 decimals
        out.append("a row of weights does not sum to 1")
    if offsets.size and (offsets.min() < 1 or offsets.max() >= L):
        out.append("an offset d is outside 1 .. L - 1: no query t >= max(offsets) has key t - d")
    if not isinstance(threshold, (float, int, np.floating)) or not 0 <= threshold < 1:
        out.append("threshold is not a weight in [0, 1)")
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


def _weights_from_torch(inputs):
    w_in, w_out = inputs["in_proj_weight"], inputs["out_proj_weight"]
    d = np.shape(w_out)[0]
    return (
        r.shape_is("in_proj_weight", w_in, (3 * d, d))
        + r.shape_is("out_proj_weight", w_out, (d, d))
        + r.dtype_in("in_proj_weight", w_in, FLOATS)
        + r.finite("in_proj_weight", w_in)
        + r.finite("out_proj_weight", w_out)
    )


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
    "ch05.heads_for_lookups": _heads_for_lookups,
    "ch05.predict_heads_for_three_lookups": _nothing,
    "ch05.multi_head_attention": _mha,
    "ch05.predict_kdim_vdim_parameters": _nothing,
    "ch05.weights_from_torch": _weights_from_torch,
    "ch05.heads_from_averaged_weights": _heads_from_averaged_weights,
    "ch05.mha_forward": _mha,
}
