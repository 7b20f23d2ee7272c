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


PROMISES = {
    "ch05.heads_for_lookups": _heads_for_lookups,
    "ch05.predict_heads_for_three_lookups": _nothing,
    "ch05.multi_head_attention": _mha,
    "ch05.predict_kdim_vdim_parameters": _nothing,
    "ch05.weights_from_torch": _weights_from_torch,
    "ch05.predict_mha_parameters": _nothing,
    "ch05.mha_forward": _mha,
}
