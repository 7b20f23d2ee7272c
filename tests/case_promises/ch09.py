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


def add_sink(inputs):
    out, lse, sink = inputs["out"], inputs["lse"], inputs["sink"]
    problems = _floats(out=out, sink=sink) + dtype_in("lse", lse, FLOATS)
    problems += ndim_in("out", out, (4,)) + ndim_in("lse", lse, (3,)) + ndim_in("sink", sink, (1,))
    if problems:
        return problems
    out, lse, sink = _array(out), _array(lse), _array(sink)
    B, H, L, _ = out.shape
    if lse.shape != (B, H, L):
        problems.append(f"lse {lse.shape} is not (B, H, L) = {(B, H, L)}")
    if sink.shape != (H,):
        problems.append(f"sink {sink.shape} is not (H,) = ({H},)")
    if problems:
        return problems
    if np.any(np.isnan(lse)) or np.any(lse == np.inf):
        problems.append("lse holds NaN or +inf; only -inf (a row with every key masked) is allowed")
    masked = lse == -np.inf
    if np.any(out[masked] != 0):
        problems.append("a row with lse = -inf does not arrive with out = 0")
    # "scores may be in the hundreds": lse lies within log(S) of a row's largest score, the sinks near them
    if np.any(np.abs(lse[~masked]) >= 1000) or np.any(np.abs(sink) >= 1000):
        problems.append("an lse or a sink of 1000 or more; the prompt says scores may be in the hundreds")
    return problems


def beam_cache_step(inputs):
    names = ("q", "k_new", "v_new", "k_cache", "v_cache")
    q, kn, vn, kc, vc = (inputs[n] for n in names)
    parents = inputs["parents"]
    problems = _floats(q=q, k_new=kn, v_new=vn, k_cache=kc, v_cache=vc) + integer("parents", parents)
    problems += ndim_in("parents", parents, (1,))
    problems += [p for n in names for p in ndim_in(n, inputs[n], (3,))]
    if problems:
        return problems
    q, kn, vn, kc, vc, parents = (_array(a) for a in (q, kn, vn, kc, vc, parents))
    B, n, E = q.shape
    t, Ev = kc.shape[1], vn.shape[-1]
    for name, x, shape in (
        ("k_new", kn, (B, n, E)),
        ("v_new", vn, (B, n, Ev)),
        ("k_cache", kc, (B, t, E)),
        ("v_cache", vc, (B, t, Ev)),
        ("parents", parents, (B,)),
    ):
        if x.shape != shape:
            problems.append(f"{name} {x.shape} is not {shape}")
    if n < 1:
        problems.append("no new token")
    if parents.size and (parents.min() < 0 or parents.max() >= B):
        problems.append(f"parents {parents.tolist()} are not each in 0 .. B - 1 = {B - 1}")
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


def split_decode(inputs):
    q, k, v, n_splits = inputs["q"], inputs["k"], inputs["v"], inputs["n_splits"]
    problems = _floats(q=q, k=k, v=v) + _positive_int("n_splits", n_splits)
    if problems:
        return problems
    q, k, v = _array(q), _array(k), _array(v)
    if q.ndim < 2 or q.shape[-2] != 1:
        return [f"q {q.shape} is not (..., 1, E): one new query"]
    if k.shape[:-2] != q.shape[:-2] or k.shape[-1] != q.shape[-1] or v.shape[:-1] != k.shape[:-1]:
        return [f"k {k.shape}, v {v.shape} are not (..., T, E), (..., T, Ev) for q {q.shape}"]
    T = k.shape[-2]
    if not 2 <= int(n_splits) <= T:
        problems.append(f"n_splits = {n_splits}; the prompt promises 2 <= n_splits <= T = {T}")
    # "scores may be in the hundreds": no more than that
    if np.abs(q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])).max() >= 1000:
        problems.append("a score of 1000 or more; the prompt says scores may be in the hundreds")
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
    "ch09.add_sink": add_sink,
    "ch09.beam_cache_step": beam_cache_step,
    "ch09.static_cache_step": static_cache_step,
    "ch09.remove_keys": remove_keys,
    "ch09.split_decode": split_decode,
    "ch09.causal_tiled_attention": causal_tiled_attention,
}
