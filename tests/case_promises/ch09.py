"""What chapter 9's prompts promise about their inputs."""

from __future__ import annotations

import numpy as np

from ._rules import _array, dtype_in, finite, integer, ndim_in

FLOATS = ("float32", "float64")


def _positive_int(name, x):
    problems = integer(name, x)
    return problems or ([] if int(x) >= 1 else [f"{name} = {x}; the prompt needs at least 1"])


def _floats(**arrays):
    return [p for name, x in arrays.items() for p in dtype_in(name, x, FLOATS) + finite(name, x)]


def merge_partials(inputs):
    problems = []
    for half in ("1", "2"):
        m, l, acc = (_array(inputs[f"{n}{half}"]) for n in ("m", "l", "acc"))
        problems += dtype_in(f"m{half}", m, FLOATS) + _floats(**{f"l{half}": l, f"acc{half}": acc})
        if np.any(np.isnan(m)) or np.any(m == np.inf):
            problems.append(f"m{half} holds NaN or +inf; only -inf (an empty half) is allowed")
        if m.shape != l.shape or acc.shape[:-1] != m.shape:
            problems.append(
                f"half {half}: m {m.shape}, l {l.shape}, acc {acc.shape} are not (..., L), (..., L), (..., L, Ev)"
            )
            continue
        empty = m == -np.inf
        if np.any(l[empty] != 0) or np.any(acc[empty] != 0):
            problems.append(f"half {half}: an empty row (m = -inf) does not arrive with l = 0, acc = 0")
        if np.any(l[~empty] < 1 - 1e-6):
            problems.append(f"half {half}: a non-empty row has l below 1 (its maximum term is exp(0) = 1)")
    return problems


def key_block_grads(inputs):
    q, kb, vb, dout, out, lse = (inputs[n] for n in ("q", "k_blk", "v_blk", "dout", "out", "lse"))
    problems = _floats(q=q, k_blk=kb, v_blk=vb, dout=dout, out=out, lse=lse)
    if problems:
        return problems
    q, kb, vb, dout, out, lse = (_array(a) for a in (q, kb, vb, dout, out, lse))
    if min(q.ndim, kb.ndim, vb.ndim) < 2:
        return ["q, k_blk, v_blk are (..., n, features)"]
    lead, L, E = q.shape[:-2], q.shape[-2], q.shape[-1]
    if kb.shape[:-2] != lead or kb.shape[-1] != E:
        problems.append(f"k_blk {kb.shape} is not (..., b, E) for q {q.shape}")
    if vb.shape[:-1] != kb.shape[:-1]:
        problems.append(f"v_blk {vb.shape} is not (..., b, Ev) for k_blk {kb.shape}")
    Ev = vb.shape[-1]
    if dout.shape != lead + (L, Ev) or out.shape != lead + (L, Ev):
        problems.append(f"dout {dout.shape} / out {out.shape} are not (..., L, Ev) = {lead + (L, Ev)}")
    if lse.shape != lead + (L,):
        problems.append(f"lse {lse.shape} is not (..., L)")
    elif kb.shape[:-1] == lead + (kb.shape[-2],):
        # lse is the log-sum over all keys: at least the block's own share
        s = q @ np.swapaxes(kb, -1, -2) / np.sqrt(E)
        block = np.log(np.exp(s - s.max(-1, keepdims=True)).sum(-1)) + s.max(-1)
        if np.any(block > lse + 1e-4 * np.maximum(1, np.abs(lse))):
            problems.append("lse is smaller than the log-sum of the block's own scores")
    return problems


def static_cache_step(inputs):
    q, kn, vn, kc, vc, lengths = (
        inputs[n] for n in ("q_new", "k_new", "v_new", "k_cache", "v_cache", "lengths")
    )
    problems = _floats(q_new=q, k_new=kn, v_new=vn, k_cache=kc, v_cache=vc) + integer("lengths", lengths)
    problems += (
        ndim_in("lengths", lengths, (1,)) + ndim_in("k_cache", kc, (3,)) + ndim_in("v_cache", vc, (3,))
    )
    if problems:
        return problems
    B, T, E = _array(kc).shape
    Ev = _array(vc).shape[-1]
    ln = _array(lengths)
    if ln.shape != (B,):
        problems.append(f"lengths {ln.shape} is not (B,) = ({B},)")
    elif np.any(ln < 0) or np.any(ln >= T):
        problems.append(f"lengths {ln.tolist()} are not each in 0 .. T - 1 = {T - 1}")
    for name, x, shape in (("q_new", q, (B, 1, E)), ("k_new", kn, (B, 1, E)), ("v_new", vn, (B, 1, Ev))):
        if _array(x).shape != shape:
            problems.append(f"{name} {_array(x).shape} is not {shape}")
    if _array(vc).shape[:2] != (B, T):
        problems.append(f"v_cache {_array(vc).shape} is not (B, T, Ev)")
    return problems


def remove_keys(inputs):
    q, k_rm, v_rm, out, lse = (inputs[n] for n in ("q", "k_rm", "v_rm", "out", "lse"))
    problems = _floats(q=q, k_rm=k_rm, v_rm=v_rm, out=out, lse=lse)
    if problems:
        return problems
    q, k_rm, v_rm, out, lse = (_array(a).astype(float) for a in (q, k_rm, v_rm, out, lse))
    if min(q.ndim, k_rm.ndim, v_rm.ndim) < 2:
        return ["q, k_rm, v_rm are (..., n, features)"]
    lead, L, E = q.shape[:-2], q.shape[-2], q.shape[-1]
    if k_rm.shape[:-2] != lead or k_rm.shape[-1] != E or v_rm.shape[:-1] != k_rm.shape[:-1]:
        return [f"k_rm {k_rm.shape} / v_rm {v_rm.shape} are not (..., r, E), (..., r, Ev) for q {q.shape}"]
    Ev = v_rm.shape[-1]
    if out.shape != lead + (L, Ev) or lse.shape != lead + (L,):
        return [f"out {out.shape} / lse {lse.shape} are not (..., L, Ev) = {lead + (L, Ev)}, (..., L)"]
    # "the keys taken out never hold more than 0.9 of a row's weight": their weights in the finished
    # pass, rebuilt from lse, sum to at most 0.9 in every row
    share = np.exp(q @ np.swapaxes(k_rm, -1, -2) / np.sqrt(E) - lse[..., None]).sum(axis=-1)
    if np.any(share > 0.9 + 1e-6):
        problems.append(
            f"the keys taken out hold up to {share.max():.3f} of a row's weight (promised <= 0.9)"
        )
    # "scores may be in the hundreds": no more than that
    if np.abs(q @ np.swapaxes(k_rm, -1, -2) / np.sqrt(E)).max() >= 1000:
        problems.append("a score of 1000 or more; the prompt says scores may be in the hundreds")
    return problems


def rope_decode(inputs):
    x, W_q, W_k, W_v = (inputs[n] for n in ("x", "W_q", "W_k", "W_v"))
    problems = _floats(x=x, W_q=W_q, W_k=W_k, W_v=W_v) + ndim_in("x", x, (2,))
    problems += ndim_in("W_q", W_q, (2,)) + ndim_in("W_k", W_k, (2,)) + ndim_in("W_v", W_v, (2,))
    if problems:
        return problems
    x, W_q, W_k, W_v = (_array(a) for a in (x, W_q, W_k, W_v))
    d_model = x.shape[1]
    if W_q.shape[0] != d_model or W_k.shape != W_q.shape or W_v.shape[0] != d_model:
        problems.append(
            f"W_q {W_q.shape}, W_k {W_k.shape}, W_v {W_v.shape} are not (d_model, E), (d_model, E), (d_model, Ev)"
        )
    elif W_q.shape[1] % 2:
        problems.append(f"E = {W_q.shape[1]} is odd; half-split RoPE pairs the features")
    if x.shape[0] < 1:
        problems.append("x holds no token")
    return problems


def causal_tiled_attention(inputs):
    q, k, v, block_size = inputs["q"], inputs["k"], inputs["v"], inputs["block_size"]
    problems = _positive_int("block_size", block_size) + _floats(q=q, k=k, v=v)
    if problems:
        return problems
    q, k, v = _array(q), _array(k), _array(v)
    if (
        q.ndim < 2
        or q.shape[:-2] != k.shape[:-2]
        or q.shape[-1] != k.shape[-1]
        or v.shape[:-1] != k.shape[:-1]
    ):
        problems.append(
            f"q {q.shape}, k {k.shape}, v {v.shape} are not (..., L, E), (..., S, E), (..., S, Ev)"
        )
    elif q.shape[-2] > k.shape[-2]:
        problems.append(f"L = {q.shape[-2]} > S = {k.shape[-2]}; the queries are the last L of the S tokens")
    return problems


PROMISES = {
    "ch09.merge_partials": merge_partials,
    "ch09.key_block_grads": key_block_grads,
    "ch09.static_cache_step": static_cache_step,
    "ch09.remove_keys": remove_keys,
    "ch09.rope_decode": rope_decode,
    "ch09.causal_tiled_attention": causal_tiled_attention,
}
