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


def _copied_heads(inputs):
    """5.2: the course's layer, at least two heads, exactly two of them with equal blocks of W_q, W_k
    and W_v, and different blocks of W_o."""
    out = _square_weights(inputs)
    if out:
        return out
    n = inputs["n_heads"]
    d = np.shape(inputs["W_q"])[0]
    if n < 2:
        return [f"n_heads = {n}: a layer with two copies of a head has two heads at least"]
    dh = d // n
    Ws = [np.asarray(inputs[name]) for name in ("W_q", "W_k", "W_v")]
    pairs = [
        (a, b)
        for b in range(n)
        for a in range(b)
        if all(np.array_equal(W[:, a * dh : (a + 1) * dh], W[:, b * dh : (b + 1) * dh]) for W in Ws)
    ]
    if len(pairs) != 1:
        return [f"{len(pairs)} pairs of heads with the same blocks of W_q, W_k, W_v, not exactly one"]
    (a, b), W_o = pairs[0], np.asarray(inputs["W_o"])
    if np.allclose(W_o[a * dh : (a + 1) * dh], W_o[b * dh : (b + 1) * dh]):
        out.append(f"heads {a} and {b} have the same blocks of W_o too")
    return out


def _square_weights(inputs):
    """Four (d_model, d_model) float matrices of one dtype and a head count that divides d_model."""
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


def _uneven_heads(inputs):
    """5.5: x (B, L, d_model), four (d_model, d_model) matrices, an array of positive integer widths
    adding up to d_model."""
    x, widths = inputs["x"], inputs["widths"]
    out = r.dtype_in("x", x, FLOATS) + r.ndim_in("x", x, (3,)) + r.finite("x", x)
    if out:
        return out
    d = np.shape(x)[-1]
    for name in ("W_q", "W_k", "W_v", "W_o"):
        out += r.shape_is(name, inputs[name], (d, d)) + r.finite(name, inputs[name])
        out += r.dtype_in(name, inputs[name], (str(x.dtype),))  # one precision per case
    if (
        not isinstance(widths, np.ndarray)
        or widths.ndim != 1
        or widths.dtype.kind not in "iu"
        or not widths.size
    ):
        return out + [f"widths is not a non-empty integer array: {widths!r}"]
    if (widths < 1).any():
        out.append(f"widths are not positive: {widths!r}")
    elif widths.sum() != d:
        out.append(f"widths add up to {sum(widths)}, not d_model = {d}")
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
    "ch05.merge_copied_heads": _copied_heads,
    "ch05.multi_head_attention": _mha,
    "ch05.predict_causal_top_keys": _nothing,
    "ch05.mha_uneven_heads": _uneven_heads,
    "ch05.heads_from_averaged_weights": _heads_from_averaged_weights,
    "ch05.mha_forward": _mha,
}
