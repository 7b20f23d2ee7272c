"""Chapter 8 (the Transformer block): what each prompt promises about its inputs."""

from __future__ import annotations

import numpy as np

from case_promises import _rules as r

FLOATS = ("float16", "float32", "float64")


def _nothing(inputs):
    return [] if not inputs else [f"a predict exercise takes no inputs, got {sorted(inputs)}"]


def _float_array(name, x):
    return r.dtype_in(name, x, FLOATS) + r.finite(name, x)


def _parallel_block(inputs):
    x, n = inputs["x"], inputs["n_heads"]
    out = _float_array("x", x) + r.ndim_in("x", x, (3,)) + r.integer("n_heads", n)
    if out:
        return out
    d = np.shape(x)[-1]
    for name in ("W_q", "W_k", "W_v", "W_o"):
        out += _float_array(name, inputs[name]) + r.shape_is(name, inputs[name], (d, d))
    d_ff = np.shape(inputs["W_1"])[-1]
    out += r.shape_is("W_1", inputs["W_1"], (d, d_ff)) + r.shape_is("W_2", inputs["W_2"], (d_ff, d))
    for name in ("W_q", "W_k", "W_v", "W_o", "W_1", "W_2"):
        out += r.dtype_in(name, inputs[name], (str(x.dtype),))
    if n < 1 or d % n:
        out.append(f"n_heads = {n} does not divide d_model = {d}")
    return out


def _post_norm_blocks(inputs):
    s = inputs["streams"]
    out = _float_array("streams", s) + r.ndim_in("streams", s, (4,))
    if out:
        return out
    a = np.asarray(s, dtype=np.float64)
    if a.shape[0] < 2:
        out.append("streams holds no block's output")
    if a.shape[-1] < 2:
        out.append("d_model < 2: every row of width 1 normalises to 0")
    # each block's output either came out of a layer norm (every row mean 0, variance 1 up to
    # epsilon and rounding) or stays clear of it, in some row, by more than rounding
    tol = 1e-4
    for i, o in enumerate(a[1:]):
        dev = np.maximum(np.abs(o.mean(-1)), np.abs(o.var(-1) - 1))
        if tol < dev.max() < 1e-2:
            out.append(
                f"block {i}'s output is neither normalised nor clear of it (max deviation {dev.max():.1e})"
            )
    return out


def _head_removal_cost(inputs):
    w, v, W_o, u = inputs["weights"], inputs["v"], inputs["W_o"], inputs["u"]
    out = []
    for name in ("weights", "v", "W_o", "u"):
        out += _float_array(name, inputs[name])
    out += r.ndim_in("weights", w, (4,)) + r.ndim_in("v", v, (4,)) + r.ndim_in("u", u, (3,))
    if out:
        return out
    B, H, L, S = np.shape(w)
    d_head = np.shape(v)[-1]
    if L != S:
        out.append("weights is not (B, H, L, L)")
    out += r.shape_is("v", v, (B, H, L, None)) + r.shape_is("W_o", W_o, (H * d_head, None))
    out += r.shape_is("u", u, (B, L, np.shape(W_o)[-1]))
    a = np.asarray(w, dtype=np.float64)
    if not out and (np.any(np.triu(a, 1) != 0) or not np.allclose(a.sum(-1), 1, atol=1e-3)):
        out.append("weights are not causal attention maps whose rows sum to 1")
    return out


def _next_token_loss(inputs):
    logits, tokens, lengths = inputs["logits"], np.asarray(inputs["tokens"]), np.asarray(inputs["lengths"])
    out = _float_array("logits", logits) + r.ndim_in("logits", logits, (3,))
    out += r.integer("tokens", tokens) + r.integer("lengths", lengths)
    if out:
        return out
    B, L, V = np.shape(logits)
    out += r.shape_is("tokens", tokens, (B, L)) + r.shape_is("lengths", lengths, (B,))
    if not out and (tokens.min() < 0 or tokens.max() >= V):
        out.append("tokens holds ids outside 0 .. V - 1")
    if not out and (lengths.min() < 0 or lengths.max() > L):
        out.append("lengths has entries outside 0 .. L")
    if not out and not np.any(np.arange(L)[None, :] + 1 < lengths[:, None]):
        out.append("no pair (b, t) has a real target: the mean is over nothing")
    return out


PROMISES = {
    "ch08.predict_block_parameters": _nothing,
    "ch08.post_norm_blocks": _post_norm_blocks,
    "ch08.parallel_block": _parallel_block,
    "ch08.head_removal_cost": _head_removal_cost,
    "ch08.next_token_loss": _next_token_loss,
}
