"""Chapter 8 (the Transformer block): what each prompt promises about its inputs."""

from __future__ import annotations

import numpy as np

from case_promises import _rules as r

FLOATS = ("float16", "float32", "float64")


def _float_array(name, x):
    return r.dtype_in(name, x, FLOATS) + r.finite(name, x)


def _ln(h):
    mu = h.mean(-1, keepdims=True)
    return (h - mu) / np.sqrt(h.var(-1, keepdims=True) + 1e-5)


def _value_ablation_difference(inputs):
    x = inputs["x"]
    out = _float_array("x", x) + r.ndim_in("x", x, (3,))
    if out:
        return out
    d = np.shape(x)[-1]
    shapes = {"v_weight": (d, d), "v_bias": (d,), "out_weight": (d, d), "out_bias": (d,)}
    for name, shape in shapes.items():
        out += _float_array(name, inputs[name]) + r.shape_is(name, inputs[name], shape)
        out += r.dtype_in(name, inputs[name], (str(np.asarray(x).dtype),))
    H, head = inputs["n_heads"], inputs["head"]
    out += r.integer("n_heads", H) + r.integer("head", head)
    if out:
        return out
    if not (1 <= H <= d and d % H == 0):
        return [f"n_heads={H} does not divide d_model={d}"]
    if not 0 <= head < H:
        return [f"head={head} is not a head of {H} (counted from 0)"]
    # the answer is what out_proj makes of the head's value bias: far from 0, so that the two
    # ablations are told apart, and so is the head from its neighbour
    dh = d // H
    W, b = np.asarray(inputs["out_weight"], np.float64), np.asarray(inputs["v_bias"], np.float64)
    left = W[:, head * dh : (head + 1) * dh] @ b[head * dh : (head + 1) * dh]
    if np.abs(left).max() < 1e-2:
        out.append("the switched-off head's value bias leaves almost nothing: the ablations agree")
    return out


def _attention_head_count(inputs):
    x, h, W_v, W_o = (inputs[k] for k in ("x", "h", "W_v", "W_o"))
    out = _float_array("x", x) + _float_array("h", h) + r.ndim_in("x", x, (3,))
    if out:
        return out
    d = np.shape(x)[-1]
    out += r.shape_is("h", h, np.shape(x))
    for name in ("W_v", "W_o"):
        out += _float_array(name, inputs[name]) + r.shape_is(name, inputs[name], (d, d))
    for name in ("h", "W_v", "W_o"):
        out += r.dtype_in(name, inputs[name], (str(np.asarray(x).dtype),))
    if out:
        return out
    x, h, W_v, W_o = (np.asarray(a, dtype=np.float64) for a in (x, h, W_v, W_o))
    if np.linalg.cond(W_o) > 1e3:
        out.append(f"W_o is all but singular (condition number {np.linalg.cond(W_o):.1e})")
        return out
    # h - x = (each head's causal attention over its values LN(x) W_v, heads side by side) @ W_o.
    # For each split into H heads: how far each position's merged output lies from the mixes
    # (weights adding to 1, a constraint row weighted heavily) of its head's values at keys <= t
    B, L, _ = x.shape
    merged = (h - x).reshape(-1, d) @ np.linalg.inv(W_o)
    merged = merged.reshape(B, L, d)
    v = _ln(x) @ W_v
    scale = 1 + np.abs(merged).max()
    gaps = {}
    for H in (n for n in range(1, d + 1) if d % n == 0):
        dh, worst = d // H, 0.0
        for b in range(B):
            for t in range(L):
                for j in range(H):
                    cols = slice(j * dh, (j + 1) * dh)
                    A = np.vstack([v[b, : t + 1, cols].T, 1e3 * np.ones((1, t + 1))])
                    rhs = np.concatenate([merged[b, t, cols], [1e3]])
                    w = np.linalg.lstsq(A, rhs, rcond=None)[0]
                    worst = max(worst, float(np.abs(A[:-1] @ w - rhs[:-1]).max()) / scale)
        gaps[H] = worst
    rounding = 1e-5 if np.asarray(inputs["x"]).dtype == np.float32 else 1e-10
    fitting = [H for H, g in gaps.items() if g < rounding]
    # "no two heads attend alike": the attention's own split fits (and so do its refinements),
    # every coarser or straddling split misses by far more than rounding
    if not fitting:
        out.append(f"no split into heads reproduces h: gaps {gaps}")
    elif any(rounding <= g < 1e-2 for g in gaps.values()):
        out.append(f"a split into heads misses h by little: gaps {gaps}: not one clear answer")
    elif any(f % min(fitting) for f in fitting):
        out.append(f"the splits that fit, {fitting}, are not all refinements of the fewest")
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


def _layer_norm_parameters(inputs):
    x, y = inputs["x"], inputs["y"]
    out = _float_array("x", x) + _float_array("y", y) + r.dtype_in("y", y, (str(np.asarray(x).dtype),))
    if out:
        return out
    out += r.shape_is("y", y, np.shape(x))
    if np.ndim(x) < 2:
        out.append("x has no rows")
    if out:
        return out
    d = np.shape(x)[-1]
    n = _ln(np.asarray(x, dtype=np.float64)).reshape(-1, d)
    if len(n) < 2 or n.std(0).min() < 1e-3:
        out.append("the log has one row, or rows whose normalised features do not differ")
        return out
    # y is a layer norm's output: feature by feature an exact line in the normalised x
    Y = np.asarray(y, dtype=np.float64).reshape(-1, d)
    for i in range(d):
        A = np.stack([n[:, i], np.ones(len(n))], 1)
        resid = Y[:, i] - A @ np.linalg.lstsq(A, Y[:, i], rcond=None)[0]
        if np.abs(resid).max() > 1e-4 * (1 + np.abs(Y[:, i]).max()):
            out.append(f"feature {i} of y is not gamma * LN(x) + beta")
            break
    return out


def _sampling_settings(inputs):
    z, p = inputs["logits"], inputs["probs"]
    out = _float_array("logits", z) + _float_array("probs", p) + r.ndim_in("logits", z, (2,))
    out += r.dtype_in("probs", p, (str(np.asarray(z).dtype),))
    if out:
        return out
    out += r.shape_is("probs", p, np.shape(z))
    if out:
        return out
    z, p = np.asarray(z, dtype=np.float64), np.asarray(p, dtype=np.float64)
    if p.min() < 0 or np.abs(p.sum(-1) - 1).max() > 1e-5:
        out.append("probs holds rows that are not distributions")
    for i, (zi, pi) in enumerate(zip(z, p)):
        kept = pi > 0
        k = int(kept.sum())
        if k < 2:
            out.append(f"row {i} kept fewer than two tokens")
        elif len(np.unique(zi)) < len(zi):
            out.append(f"row {i} has equal logits")
        elif not np.array_equal(np.sort(np.flatnonzero(kept)), np.sort(np.argsort(zi)[-k:])):
            out.append(f"row {i}'s tokens of nonzero probability are not its {k} largest logits")
        else:  # softmax(z / T) on the kept tokens, T > 0
            slope, _ = np.polyfit(zi[kept], np.log(pi[kept]), 1)
            c = np.log(pi[kept]) - slope * zi[kept]
            if slope <= 0 or np.ptp(c) > 1e-4:
                out.append(f"row {i} is not softmax(z / T) over its kept tokens for any T > 0")
    return out


PROMISES = {
    "ch08.value_ablation_difference": _value_ablation_difference,
    "ch08.post_norm_blocks": _post_norm_blocks,
    "ch08.attention_head_count": _attention_head_count,
    "ch08.layer_norm_parameters": _layer_norm_parameters,
    "ch08.sampling_settings": _sampling_settings,
}
