"""Chapter 8 (the Transformer block): what each prompt promises about its inputs."""

from __future__ import annotations

import numpy as np

from case_promises import _rules as r

FLOATS = ("float16", "float32", "float64")


def _nothing(inputs):
    return [] if not inputs else [f"a predict exercise takes no inputs, got {sorted(inputs)}"]


def _float_array(name, x):
    return r.dtype_in(name, x, FLOATS) + r.finite(name, x)


def _ln(h):
    mu = h.mean(-1, keepdims=True)
    return (h - mu) / np.sqrt(h.var(-1, keepdims=True) + 1e-5)


def _pre_norm(x, W_q, W_k, W_v, W_o, W_1, W_2, n_heads):
    """The chapter's pre-norm block (causal, exact GELU, no biases), written here from the prompt."""
    from math import erf, sqrt

    B, L, d = x.shape

    def attend(h):
        q, k, v = ((h @ W).reshape(B, L, n_heads, -1).transpose(0, 2, 1, 3) for W in (W_q, W_k, W_v))
        s = q @ k.transpose(0, 1, 3, 2) / np.sqrt(d // n_heads)
        s = np.where(np.tril(np.ones((L, L), dtype=bool)), s, -np.inf)
        w = np.exp(s - s.max(-1, keepdims=True))
        w /= w.sum(-1, keepdims=True)
        return (w @ v).transpose(0, 2, 1, 3).reshape(B, L, d) @ W_o

    gelu = np.vectorize(lambda z: z * 0.5 * (1 + erf(z / sqrt(2))))
    s = x + attend(_ln(x))
    return s + gelu(_ln(s) @ W_1) @ W_2


def _block_head_count(inputs):
    x, y = inputs["x"], inputs["y"]
    out = _float_array("x", x) + _float_array("y", y) + r.ndim_in("x", x, (3,))
    if out:
        return out
    d = np.shape(x)[-1]
    out += r.shape_is("y", y, np.shape(x))
    for name in ("W_q", "W_k", "W_v", "W_o"):
        out += _float_array(name, inputs[name]) + r.shape_is(name, inputs[name], (d, d))
    d_ff = np.shape(inputs["W_1"])[-1]
    out += r.shape_is("W_1", inputs["W_1"], (d, d_ff)) + r.shape_is("W_2", inputs["W_2"], (d_ff, d))
    for name in ("y", "W_q", "W_k", "W_v", "W_o", "W_1", "W_2"):
        out += r.dtype_in(name, inputs[name], (str(x.dtype),))
    if out:
        return out
    a = {k: np.asarray(v, dtype=np.float64) for k, v in inputs.items()}
    rounding = (1e-4 if x.dtype == np.float32 else 1e-10) * (1 + np.abs(a["y"]).max())
    gaps = [
        np.abs(
            _pre_norm(a["x"], *(a[k] for k in ("W_q", "W_k", "W_v", "W_o", "W_1", "W_2")), h) - a["y"]
        ).max()
        for h in range(1, d + 1)
        if d % h == 0
    ]
    # at most one head count reproduces y (up to rounding); every other one misses by a few hundredths
    if sum(g < rounding for g in gaps) > 1 or any(rounding <= g < 0.03 for g in gaps):
        out.append(f"the head counts' gaps to y are {np.round(gaps, 4).tolist()}: not one clear answer")
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
    "ch08.predict_zero_init_gradients": _nothing,
    "ch08.post_norm_blocks": _post_norm_blocks,
    "ch08.block_head_count": _block_head_count,
    "ch08.layer_norm_parameters": _layer_norm_parameters,
    "ch08.sampling_settings": _sampling_settings,
}
