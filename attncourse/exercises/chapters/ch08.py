"""Chapter 8 exercises: what a head switched off through its values still adds, post-norm blocks told from their outputs, an attention layer's head count without its query and key weights, a layer norm's gamma and beta, and a sampler's settings, each recovered from what they did."""

from __future__ import annotations

import math

import numpy as np

from ... import merge_heads, split_heads
from ... import scaled_dot_product_attention as sdpa
from ..engine.registry import Case, Diagnosis, Exercise, grouped, register

__all__: list = []

# 8.3 is about an attention layer whose query and key weights are lost: no built-in layer stands in.
NO_LAYERS = (
    "torch.nn.TransformerEncoderLayer",
    "torch.nn.TransformerDecoderLayer",
    "torch.nn.MultiheadAttention",
    "torch.nn.functional.multi_head_attention_forward",
)
UNBIASED_VAR = "your layer norm divides the squared deviations by d - 1, the unbiased variance"


def _layer_norm(x, ddof=0):
    mu = x.mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(x.var(axis=-1, ddof=ddof, keepdims=True) + 1e-5)


_erf = np.vectorize(math.erf, otypes=[np.float64])


def _gelu(z):
    return z * 0.5 * (1.0 + _erf(z / math.sqrt(2.0)))  # the exact GELU, z * Phi(z)


# ----------------------------------------------------------------------------- 8.1 a head switched off through its values
def _value_ablation(
    x, v_weight, v_bias, out_weight, out_bias, n_heads, head, *, part="head", layout="blocks", keys=False
):
    """The second ablation's sublayer output minus the first's: what head ``head`` still adds when
    only its rows of ``v_proj.weight`` are zero.  Its attention weights add up to 1, so at every
    position it outputs its slice of ``v_proj.bias``, which ``out_proj`` maps into the stream."""
    x = np.asarray(x, dtype=np.float64)
    vb, W = np.asarray(v_bias, dtype=np.float64), np.asarray(out_weight, dtype=np.float64)
    d, H = W.shape[0], int(n_heads)
    dh = d // H
    cols = np.arange(head * dh, (head + 1) * dh)  # merge_heads: head h at columns h*dh .. (h+1)*dh
    if layout == "strided":  # head h taken as every n_heads-th feature
        cols = np.arange(head, d, H)
    elif layout == "next":  # the head after it, as if `head` counted from 1 ... wrapped around
        cols = (cols + dh) % d
    if part == "all heads":  # every head's value bias, not only the switched-off head's
        left = W @ vb
    elif part == "rows":  # out_proj's rows for the head, not the columns that read it
        left = W[cols, :].T @ vb[cols]
    elif part == "nothing":  # the two ablations taken to be the same
        left = np.zeros(d)
    else:
        left = W[:, cols] @ vb[cols]
    if part == "with out_bias":  # out_proj's bias counted, though both ablations keep it
        left = W[:, cols] @ vb[cols] + np.asarray(out_bias, dtype=np.float64)
    B, L, _ = x.shape
    diff = np.broadcast_to(left, (B, L, d)).copy()
    if keys:  # the value bias summed over the keys a position reads, not mixed with weights
        diff *= np.arange(1, L + 1)[None, :, None]
    return diff


def _ablation_case(rng, name, B, L, d, n_heads, head, dtype=np.float64):
    """An attention sublayer's input and its v_proj and out_proj parameters, in nn.Linear's layout."""
    bound = 1 / np.sqrt(d)  # nn.Linear's initialisation range, then a trained-looking value bias
    return Case(
        name,
        x=rng.normal(size=(B, L, d)).astype(dtype),
        v_weight=rng.uniform(-bound, bound, size=(d, d)).astype(dtype),
        v_bias=rng.normal(size=d).astype(dtype),
        out_weight=rng.uniform(-bound, bound, size=(d, d)).astype(dtype),
        out_bias=rng.normal(size=d).astype(dtype),
        n_heads=n_heads,
        head=head,
    )


def _ablation_cases():
    rng = np.random.default_rng(801)
    return (
        grouped(
            "heads",
            _ablation_case(rng, "B=2, L=4, d_model=8, 2 heads, head 1", 2, 4, 8, 2, 1),
            _ablation_case(rng, "B=1, L=5, d_model=12, 3 heads, head 0", 1, 5, 12, 3, 0),
            _ablation_case(rng, "B=2, L=3, d_model=12, 4 heads, head 2", 2, 3, 12, 4, 2),
        )
        + grouped(
            "one feature per head, one head",
            _ablation_case(rng, "B=1, L=4, d_model=6, 6 heads of one feature, head 4", 1, 4, 6, 6, 4),
            _ablation_case(rng, "B=2, L=3, d_model=4, 1 head", 2, 3, 4, 1, 0),
        )
        + grouped(
            "dtype",
            _ablation_case(rng, "float32, B=2, L=5, d_model=16, 4 heads, head 3", 2, 5, 16, 4, 3, np.float32),
        )
    )


def _ablation_variant(**kw):
    return lambda *a: _value_ablation(*a, **kw)


register(
    Exercise(
        id="ch08.value_ablation_difference",
        number="8.1",
        title="a head switched off another way",
        points=2,
        function="value_ablation_difference",
        hint="with every value of the head replaced by the same vector, what can its attention weights still change?",
        kind="extend",
        description="Two people each switched off head `head` of the same attention sublayer "
        "(`ac.MultiHeadAttention`, `n_heads` heads, causal, no dropout). The first zeroed the "
        "columns of `out_proj.weight` that read the head, as this chapter's `without_heads` does. "
        "The second zeroed only the rows of `v_proj.weight` that compute the head's values and left "
        "everything else as it was. Their log kept the sublayer's input `x (B, L, d_model)` (what "
        "the layer norm handed it) and the parameters `v_weight (d_model, d_model)`, "
        "`v_bias (d_model,)`, `out_weight (d_model, d_model)` and `out_bias (d_model,)` as "
        "`nn.Linear` stores them (`out = inp @ weight.T + bias`), before either change; the "
        "query and key weights were not kept. Heads are counted from 0. Return the second "
        "sublayer's output minus the first's, `(B, L, d_model)`. The arrays are float64 or "
        "float32. numpy or torch; no attncourse function.",
        needs=("import numpy as np", "import torch"),
        solution='''
            def value_ablation_difference(x, v_weight, v_bias, out_weight, out_bias, n_heads, head):
                """The second ablation's attention output minus the first's, at every position of x."""
                ### BEGIN SOLUTION
                d = out_weight.shape[0]
                dh = d // n_heads
                cols = slice(head * dh, (head + 1) * dh)  # the head's features, as merge_heads lays them
                # with its weight rows zero, every value of the head is its bias slice; weights that
                # add up to 1 mix copies of one vector into that vector, whatever the queries and keys
                b = np.asarray(v_bias, dtype=np.float64)[cols]
                left = np.asarray(out_weight, dtype=np.float64)[:, cols] @ b  # what out_proj makes of it
                # the first ablation removes the head's columns; everything else is the same in both
                return np.broadcast_to(left, np.shape(x)).copy()
                ### END SOLUTION
        ''',
        reference=_value_ablation,
        public_cases=_ablation_cases,
        diagnoses=(
            Diagnosis(
                "your two ablations give the same output: they do not",
                name="the same ablation",
                hint="zeroing a head's value weights leaves one of v_proj's parameters in place",
                variant=_ablation_variant(part="nothing"),
            ),
            Diagnosis(
                "your difference carries something of the other heads, which are the same in both sublayers",
                name="every head's bias",
                hint="the other heads are the same in both sublayers",
                variant=_ablation_variant(part="all heads"),
            ),
            Diagnosis(
                "your difference contains out_proj's bias, which both sublayers add",
                name="out_proj's bias counted",
                hint="which of out_proj's parameters did the first person change?",
                variant=_ablation_variant(part="with out_bias"),
            ),
            Diagnosis(
                "your difference grows with the number of keys a position reads",
                name="values summed over the keys",
                hint="what do one head's attention weights at one position add up to?",
                variant=_ablation_variant(keys=True),
            ),
            Diagnosis(
                "you took the head's part of out_proj.weight along the wrong axis",
                name="out_proj's rows",
                hint="in out = inp @ weight.T + bias, which axis of weight meets the head's features?",
                variant=_ablation_variant(part="rows"),
            ),
            Diagnosis(
                "the features you took for the head are not the ones merge_heads gives it",
                name="strided head features",
                hint="which columns of the merged output hold head h?",
                variant=_ablation_variant(layout="strided"),
            ),
            Diagnosis(
                "you took the features of another head",
                name="another head",
                hint="heads are counted from 0",
                variant=_ablation_variant(layout="next"),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 8.2 which blocks are post-norm (probe)
def _post_norm_blocks(streams):
    s = np.asarray(streams, dtype=np.float64)[1:]  # (n_blocks, B, L, d): each block's output
    mean_ok = np.abs(s.mean(axis=-1)) < 1e-3  # every row of a post-norm output: mean 0 ...
    var_ok = np.abs(s.var(axis=-1) - 1.0) < 1e-3  # ... and (biased) variance 1, up to epsilon
    return (mean_ok & var_ok).reshape(len(s), -1).all(axis=1)


def _stack(rng, x, kinds, *, n_heads=2, d_ff=None, centred=(), small=(), dtype=np.float64):
    """The streams of a stack whose block i is post-norm where kinds[i] is "post"."""
    d = x.shape[-1]
    d_ff = d_ff or 2 * d
    streams = [x]
    for i, kind in enumerate(kinds):
        w = {name: rng.normal(size=(d, d)) / np.sqrt(d) for name in ("W_q", "W_k", "W_v", "W_o")}
        w["W_1"] = rng.normal(size=(d, d_ff)) / np.sqrt(d)
        w["W_2"] = rng.normal(size=(d_ff, d)) / np.sqrt(d_ff)
        if i in centred:  # sublayers whose outputs have mean 0 in every row
            w["W_o"] -= w["W_o"].mean(axis=1, keepdims=True)
            w["W_2"] -= w["W_2"].mean(axis=1, keepdims=True)
        if i in small:  # sublayers that add little
            w["W_o"] *= 0.02
            w["W_2"] *= 0.02
        streams.append(_block(streams[-1], **w, n_heads=n_heads, post=kind == "post", parallel=False))
    return np.stack(streams).astype(dtype)


def _scaled_to(rng, x, kind, n_heads=2):
    """A pre-norm block, then a post-norm one: the streams.  The first block's input rows are
    rescaled until its output has squared norm d in every row (kind "row norm") or variance 1 over
    all rows (kind "global"): its output is c x + f, and f moves only a little with c."""
    d = x.shape[-1]
    w = {name: rng.normal(size=(d, d)) / np.sqrt(d) for name in ("W_q", "W_k", "W_v", "W_o")}
    w["W_1"] = rng.normal(size=(d, 2 * d)) / np.sqrt(d)
    w["W_2"] = rng.normal(size=(2 * d, d)) / np.sqrt(2 * d)
    w["W_o"] *= 0.3  # sublayers that leave room for the rescaled input: |f|^2 < d
    w["W_2"] *= 0.3
    if kind == "global":  # sublayers whose outputs have mean 0 in every row
        w["W_o"] -= w["W_o"].mean(axis=1, keepdims=True)
        w["W_2"] -= w["W_2"].mean(axis=1, keepdims=True)
    for _ in range(500):  # a fixed point: solve for c with f held, recompute f
        f = _block(x, **w, n_heads=n_heads, parallel=False) - x
        if kind == "row norm":  # per row: c^2 |x|^2 + 2 c x.f + |f|^2 = d, the positive root
            a, b, c0 = (x * x).sum(-1), 2 * (x * f).sum(-1), (f * f).sum(-1) - d
        else:  # one c for all rows: mean((c x + f)^2) = 1 (x and f of mean 0 over all rows)
            a, b, c0 = (x * x).mean(), 2 * (x * f).mean(), (f * f).mean() - 1
        c = (-b + np.sqrt(b * b - 4 * a * c0)) / (2 * a)
        c = np.sqrt(c)  # half a step: the plain iteration overshoots
        x = x * (c[..., None] if np.ndim(c) else c)
        if np.all(np.abs(c - 1) < 1e-12):
            break
    else:
        raise RuntimeError("the rescaling did not settle")
    y = _block(x, **w, n_heads=n_heads, parallel=False)
    return np.concatenate([x[None], _stack(rng, y, ("post",), n_heads=n_heads)])  # then a post-norm block


def _centred_rows(rng, B, L, d, scales):
    x = rng.normal(size=(B, L, d))
    x -= x.mean(axis=-1, keepdims=True)
    x /= x.std(axis=-1, keepdims=True)
    return x * np.asarray(scales, dtype=np.float64).reshape(B, L, 1)


def _post_norm_cases(seed=802):
    rng = np.random.default_rng(seed)
    return (
        grouped(
            "mixed stacks",
            Case(
                "3 blocks (post, pre, post), B=2, L=3, d_model=4",
                streams=_stack(rng, rng.normal(size=(2, 3, 4)), ("post", "pre", "post")),
            ),
            Case(
                "4 blocks, B=1, L=5, d_model=6, 3 heads",
                streams=_stack(
                    rng, 3 * rng.normal(size=(1, 5, 6)) + 1, ("pre", "pre", "post", "pre"), n_heads=3
                ),
            ),
        )
        + grouped(
            "look-alikes",
            Case(
                "a pre-norm block whose output rows have mean 0 and, over all rows, variance 1; then a post-norm one",
                streams=_scaled_to(
                    rng, _centred_rows(rng, 2, 3, 4, [[0.3, 3.0, 1.5], [2.5, 0.2, 1.0]]), "global"
                ),
            ),
            Case(
                "a pre-norm block whose output has mean 0 and variance 1 over all rows, not in each; then a post-norm one",
                streams=_scaled_to(
                    rng,
                    _centred_rows(rng, 2, 3, 4, [[1.0, 0.5, 2.0], [0.7, 1.5, 1.0]])
                    + np.array([[0.8, -0.3, 0.0], [-0.5, 0.4, -0.4]])[..., None],
                    "global",
                ),
            ),
            Case(
                "a pre-norm block whose output rows all have norm sqrt(d_model), then a post-norm one, d_model=6",
                streams=_scaled_to(rng, rng.normal(size=(2, 3, 6)) + 0.5, "row norm", n_heads=3),
            ),
            Case(
                "a pre-norm block that adds little after a post-norm one",
                streams=_stack(
                    rng, rng.normal(size=(2, 4, 8)), ("post", "pre", "pre"), n_heads=4, small=(1, 2)
                ),
            ),
        )
        + grouped(
            "dtype",
            Case(
                "float32, 3 blocks (pre, post, post)",
                streams=_stack(rng, rng.normal(size=(2, 3, 8)), ("pre", "post", "post"), dtype=np.float32),
            ),
        )
    )


register(
    Exercise(
        id="ch08.post_norm_blocks",
        number="8.2",
        title="which blocks of a stack are post-norm",
        points=2,
        function="post_norm_blocks",
        hint="what does a block whose last step is a layer norm (gamma = 1, beta = 0) leave in every row of the stream?",
        kind="implement",
        description="A stack of sequential blocks was assembled from two code bases: some blocks are "
        "pre-norm, some post-norm, and nobody recorded which. You have only the residual stream, "
        "`streams (n_blocks + 1, B, L, d_model)`: `streams[0]` is the stack's input and `streams[i + 1]` "
        "what block `i` hands to the next one, over B sequences. Every layer norm is still as "
        "`nn.LayerNorm` initialises it ($\\epsilon = 10^{-5}$) and there is no final layer norm. Return a bool array `(n_blocks,)`: True where block `i` is post-norm. The streams are "
        "float64 or float32, exact up to their rounding.",
        solution='''
            def post_norm_blocks(streams):
                """True for each block whose output came out of a layer norm."""
                ### BEGIN SOLUTION
                out = np.asarray(streams, dtype=np.float64)[1:]  # (n_blocks, B, L, d)
                mean = out.mean(axis=-1)  # a post-norm block ends in LN: every row has mean 0 ...
                var = out.var(axis=-1)  # ... and variance 1 (biased, up to epsilon)
                normed = (np.abs(mean) < 1e-3) & (np.abs(var - 1) < 1e-3)  # (n_blocks, B, L)
                return normed.reshape(len(out), -1).all(axis=1)
                ### END SOLUTION
        ''',
        reference=_post_norm_blocks,
        public_cases=_post_norm_cases,
        diagnoses=(
            Diagnosis(
                "a pre-norm block whose output rows have mean 0 but not variance 1 came out as post-norm",
                name="mean only",
                hint="a layer norm fixes two statistics of each row",
                variant=lambda streams: (
                    (np.abs(np.asarray(streams, np.float64)[1:].mean(-1)) < 1e-3)
                    .reshape(len(streams) - 1, -1)
                    .all(axis=1)
                ),
            ),
            Diagnosis(
                UNBIASED_VAR,
                name="unbiased variance",
                hint="layer norm divides by d, not d - 1",
                variant=lambda streams: (
                    (
                        (np.abs(np.asarray(streams, np.float64)[1:].mean(-1)) < 1e-3)
                        & (np.abs(np.asarray(streams, np.float64)[1:].var(-1, ddof=1) - 1) < 1e-3)
                    )
                    .reshape(len(streams) - 1, -1)
                    .all(axis=1)
                ),
            ),
            Diagnosis(
                "a pre-norm block whose output rows have norm sqrt(d_model) but not mean 0 came out as post-norm",
                name="row norm only",
                hint="a row of norm sqrt(d) need not have mean 0",
                variant=lambda streams: (
                    (
                        np.abs(
                            np.linalg.norm(np.asarray(streams, np.float64)[1:], axis=-1) ** 2
                            / np.shape(streams)[-1]
                            - 1
                        )
                        < 1e-3
                    )
                    .reshape(len(streams) - 1, -1)
                    .all(axis=1)
                ),
            ),
            Diagnosis(
                "your test looks at the whole block output at once: a layer norm acts on each row (each "
                "position of each sequence) separately",
                name="statistics over all rows",
                hint="a layer norm normalises each position's vector on its own",
                variant=lambda streams: np.array(
                    [
                        abs(float(np.mean(o))) < 1e-3 and abs(float(np.var(o)) - 1) < 1e-3
                        for o in np.asarray(streams, np.float64)[1:]
                    ]
                ),
            ),
        ),
    )
)


def _block(
    x,
    W_q,
    W_k,
    W_v,
    W_o,
    W_1,
    W_2,
    n_heads,
    post=False,
    ddof=0,
    scale=None,
    causal=True,
    parallel=True,
    gelu=_gelu,
):
    def attend(h):
        q, k, v = (split_heads(h @ W, n_heads) for W in (W_q, W_k, W_v))  # (B, L, d) -> (B, H, L, d_head)
        return merge_heads(sdpa(q, k, v, is_causal=causal, scale=scale)[0]) @ W_o  # -> (B, L, d)

    def mlp(h):
        return gelu(h @ W_1) @ W_2  # (B, L, d) -> (B, L, d_ff) -> (B, L, d)

    if post:  # the two sublayers in sequence, each followed by its norm
        x = _layer_norm(x + attend(x), ddof)
        return _layer_norm(x + mlp(x), ddof)
    if parallel:  # GPT-J / PaLM: both sublayers read one normalised copy of x
        h = _layer_norm(x, ddof)
        return x + attend(h) + mlp(h)
    x = x + attend(_layer_norm(x, ddof))  # the chapter's sequential pre-norm block
    return x + mlp(_layer_norm(x, ddof))


# ----------------------------------------------------------------------------- 8.3 how many heads, without queries and keys (inverse)
def _divisors(d):
    return [h for h in range(1, d + 1) if d % h == 0]


def _head_case(rng, name, B, L, d, n_heads, dtype=np.float64, sharp=2.0, spread=1.0):
    """A causal pre-norm attention sublayer with ``n_heads`` heads: the stream before and after
    it, and its value and output projections (the query and key weights are not handed out).
    ``spread`` scales x: at 2e-3 its rows' variance is about epsilon's."""
    W_q, W_k = (rng.normal(size=(d, d)) * sharp / np.sqrt(d) for _ in range(2))
    W_v = rng.normal(size=(d, d)) / np.sqrt(d)
    W_o = np.linalg.qr(rng.normal(size=(d, d)))[0] * rng.uniform(0.7, 1.4, size=d)  # well conditioned
    x = (rng.normal(size=(B, L, d)) * 1.5 + rng.normal(size=(1, 1, d))) * spread
    n = _layer_norm(x)
    q, k, v = (split_heads(n @ W, n_heads) for W in (W_q, W_k, W_v))
    h = x + merge_heads(sdpa(q, k, v, is_causal=True)[0]) @ W_o
    return Case(name, x=x.astype(dtype), h=h.astype(dtype), W_v=W_v.astype(dtype), W_o=W_o.astype(dtype))


def _head_misfits(x, h, W_v, W_o, *, summed_to_one=True, causal=True, undo_out=True, normed=True):
    """For each head count that divides d_model: the largest misfit, over every sequence, every
    position and every head, of that position's merged output (before W_o) as a mix of the
    head's value rows over the keys it may read, the mix's weights adding up to 1."""
    x, h, W_v, W_o = (np.asarray(a, dtype=np.float64) for a in (x, h, W_v, W_o))
    B, L, d = x.shape
    a = h - x  # what the attention added to the stream
    u = np.linalg.solve(W_o.T, a.reshape(-1, d).T).T.reshape(B, L, d) if undo_out else a
    v = (_layer_norm(x) if normed else x) @ W_v  # (B, L, d): every head's values, side by side
    misfits = {}
    for H in _divisors(d):
        dh, worst = d // H, 0.0
        for b in range(B):
            for t in range(L):
                keys = np.arange(t + 1 if causal else L)
                for j in range(H):
                    sl = slice(j * dh, (j + 1) * dh)
                    V, target = v[b, keys, sl].T, u[b, t, sl]  # (dh, keys), (dh,)
                    if summed_to_one:  # weights p with sum 1: target - V[:, -1] = (V[:, :-1] - V[:, -1]) p'
                        A, rhs = V[:, :-1] - V[:, -1:], target - V[:, -1]
                    else:
                        A, rhs = V, target
                    if A.shape[1] == 0:
                        r = np.abs(rhs).max()
                    else:
                        p = np.linalg.lstsq(A, rhs, rcond=None)[0]
                        r = np.abs(A @ p - rhs).max()
                    worst = max(worst, float(r))
        misfits[H] = worst
    return misfits, 1 + float(np.abs(u).max())


def _attention_heads(x, h, W_v, W_o, finest=False, **search):
    misfits, scale = _head_misfits(x, h, W_v, W_o, **search)
    tol = 1e-3 * scale  # far above float32 rounding, far below a wrong split's misfit
    fits = [H for H, r in misfits.items() if r < tol]
    if not fits:
        return np.array(-1)
    return np.array(max(fits) if finest else min(fits))


def _heads_variant(**search):
    return lambda x, h, W_v, W_o: _attention_heads(x, h, W_v, W_o, **search)


def _head_count_cases():
    rng = np.random.default_rng(813)
    return (
        grouped(
            "head counts",
            _head_case(rng, "B=2, L=4, d_model=8, 2 heads", 2, 4, 8, 2),
            _head_case(rng, "B=1, L=5, d_model=12, 3 heads", 1, 5, 12, 3),
            _head_case(rng, "B=2, L=3, d_model=4, 4 heads of one feature", 2, 3, 4, 4),
        )
        + grouped(
            "one head, many heads",
            _head_case(rng, "B=1, L=6, d_model=8, 1 head", 1, 6, 8, 1),
            _head_case(rng, "B=2, L=4, d_model=12, 6 heads", 2, 4, 12, 6),
            _head_case(rng, "B=1, L=4, d_model=6, 6 heads of one feature", 1, 4, 6, 6),
        )
        + grouped(
            "small rows",
            _head_case(
                rng, "x spread over about 0.003, B=2, L=4, d_model=6, 6 heads", 2, 4, 6, 6, spread=2e-3
            ),
            _head_case(
                rng, "x spread over about 0.003, B=1, L=5, d_model=8, 2 heads", 1, 5, 8, 2, spread=2e-3
            ),
        )
        + grouped(
            "dtype",
            _head_case(rng, "float32, B=2, L=4, d_model=16, 4 heads", 2, 4, 16, 4, dtype=np.float32),
            _head_case(rng, "float32, B=1, L=5, d_model=8, 8 heads", 1, 5, 8, 8, dtype=np.float32),
        )
    )


register(
    Exercise(
        id="ch08.attention_head_count",
        number="8.3",
        title="how many heads, without the queries and keys",
        points=5,
        function="attention_head_count",
        hint="in one head, what do all the columns of one position's output have in common?",
        kind="implement",
        description="A block of this chapter's kind (pre-norm, causal multi-head self-attention, no "
        "biases, the first layer norm still at its initialisation: $\\gamma = 1$, $\\beta = 0$, "
        "$\\epsilon = 10^{-5}$) was saved without its configuration, and its query and key weights "
        "were lost. What is left: the value and output projections, each used as `h @ W`, "
        "`W_v (d_model, d_model)` and `W_o (d_model, d_model)` (invertible), and a log of the "
        "residual stream just before and just after the attention sublayer, `x (B, L, d_model)` and "
        "`h` of the same shape. Return the number of heads the attention had. No two of its heads "
        "attend alike. The arrays are float64 or float32, exact up to their rounding. numpy or "
        "torch; no attncourse function.",
        solution='''
            def attention_head_count(x, h, W_v, W_o):
                """The number of heads of the causal attention that took the stream from x to h."""
                ### BEGIN SOLUTION
                x, h, W_v, W_o = (np.asarray(a, dtype=np.float64) for a in (x, h, W_v, W_o))
                B, L, d = x.shape
                # h = x + merged @ W_o: undo the residual and the output projection
                merged = np.linalg.solve(W_o.T, (h - x).reshape(-1, d).T).T.reshape(B, L, d)
                mu = x.mean(axis=-1, keepdims=True)
                v = (x - mu) / np.sqrt(x.var(axis=-1, keepdims=True) + 1e-5) @ W_v  # all heads' values
                scale = 1 + np.abs(merged).max()

                def fits(H):  # in each head, position t's output is ONE mix (weights adding to 1)
                    dh = d // H  # of that head's value rows 0..t, the same mix in every column
                    for b in range(B):
                        for t in range(1, L):
                            for j in range(H):
                                cols = slice(j * dh, (j + 1) * dh)
                                last = v[b, t, cols]
                                A = (v[b, :t, cols] - last).T  # (dh, t): weights of keys 0..t-1
                                rhs = merged[b, t, cols] - last
                                p = np.linalg.lstsq(A, rhs, rcond=None)[0]
                                if np.abs(A @ p - rhs).max() > 1e-3 * scale:
                                    return False
                    return True

                # a split of each head into smaller ones fits as well: the fewest heads that fit
                return next(H for H in range(1, d + 1) if d % H == 0 and fits(H))
                ### END SOLUTION
        ''',
        reference=_attention_heads,
        public_cases=_head_count_cases,
        needs=("import numpy as np", "import torch"),
        forbids=NO_LAYERS,
        diagnoses=(
            Diagnosis(
                "your count splits the features into more heads than the attention had: each of your "
                "heads lies inside one of its heads",
                name="a finer split",
                hint="if a split into H heads fits, which other splits fit as well?",
                variant=_heads_variant(finest=True),
            ),
            Diagnosis(
                "your count is too small: a split whose heads straddle two of the attention's heads "
                "passed your test",
                name="weights not summing to one",
                hint="what do one head's attention weights at one position add up to?",
                variant=_heads_variant(summed_to_one=False),
            ),
            Diagnosis(
                "your test lets a position's output mix in the values of positions after it",
                name="the attention is not causal",
                hint="which keys may position t read in this block?",
                variant=_heads_variant(causal=False),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 8.4 a layer norm's gamma and beta (inverse)
def _normalised(x, axis=-1, ddof=0, eps=1e-5):
    mu = x.mean(axis=axis, keepdims=True)
    return (x - mu) / np.sqrt(x.var(axis=axis, ddof=ddof, keepdims=True) + eps)


def _ln_parameters(x, y, axis=-1, ddof=0, eps=1e-5, fit="regression"):
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    d = x.shape[-1]
    if axis == -1:
        n = _normalised(x, ddof=ddof, eps=eps).reshape(-1, d)  # (rows, d): what gamma and beta act on
    else:  # each feature normalised over the rows
        n = _normalised(x.reshape(-1, d), axis=0, ddof=ddof, eps=eps)
    y = y.reshape(-1, d)
    dn, dy = n - n.mean(0), y - y.mean(0)
    gamma = (dn * dy).sum(0) / (dn * dn).sum(
        0
    )  # feature by feature: y = gamma * n + beta, fitted over the rows
    if fit == "spread":  # the ratio of spreads, which loses gamma's sign
        gamma = np.sqrt((dy * dy).sum(0) / (dn * dn).sum(0))
    beta = y.mean(0) - gamma * n.mean(0)
    if fit == "mean":  # beta taken as y's mean, as if every feature of n averaged 0 over the rows
        beta = y.mean(0)
    return gamma, beta


def _ln_case(rng, name, shape, spread=1.0, dtype=np.float64, signs=True):
    d = shape[-1]
    x = rng.normal(size=shape) * spread * rng.uniform(0.5, 2.0, size=shape[:-1] + (1,))
    x = x + rng.normal(size=shape[:-1] + (1,)) * 3 * spread  # each row its own offset
    gamma = rng.uniform(0.5, 2.0, size=d) * (rng.choice([-1.0, 1.0], size=d) if signs else 1.0)
    beta = rng.normal(size=d)
    y = gamma * _normalised(x) + beta
    return Case(name, x=x.astype(dtype), y=y.astype(dtype))


def _ln_cases():
    rng = np.random.default_rng(804)
    return (
        grouped(
            "shapes",
            _ln_case(rng, "x (2, 5, 4)", (2, 5, 4)),
            _ln_case(rng, "x (12, 6), some gammas negative", (12, 6)),
        )
        + grouped(
            "small rows",
            _ln_case(rng, "x (3, 4, 5), each row spread over about 0.003", (3, 4, 5), spread=3e-3),
        )
        + grouped(
            "dtype",
            _ln_case(rng, "float32, x (2, 6, 8)", (2, 6, 8), dtype=np.float32),
        )
    )


register(
    Exercise(
        id="ch08.layer_norm_parameters",
        number="8.4",
        title="a layer norm's gamma and beta, from what it did",
        points=2,
        function="layer_norm_parameters",
        hint="what does the layer norm compute before gamma and beta act, and how does each feature then depend on it?",
        kind="implement",
        outputs=("gamma", "beta"),
        description="A checkpoint lost one layer norm's learned parameters, but a debugging log kept "
        "a batch of its inputs `x (..., d)` and the outputs `y` (same shape) it produced from them "
        "($\\epsilon = 10^{-5}$, as in `nn.LayerNorm`). Recover its `gamma (d,)` and `beta (d,)` and "
        "return them as a pair. The arrays are float64 or float32, and the log holds enough to "
        "determine both. numpy or torch; no attncourse function.",
        needs=("import numpy as np", "import torch"),
        solution='''
            def layer_norm_parameters(x, y):
                """The (gamma, beta) of the layer norm that turned x into y."""
                ### BEGIN SOLUTION
                x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
                d = x.shape[-1]
                mu = x.mean(axis=-1, keepdims=True)  # each row over its own features
                n = (x - mu) / np.sqrt(x.var(axis=-1, keepdims=True) + 1e-5)  # before gamma and beta
                n, y = n.reshape(-1, d), y.reshape(-1, d)  # (rows, d)
                # feature i: y[:, i] = gamma[i] * n[:, i] + beta[i], a straight line through every row
                dn, dy = n - n.mean(axis=0), y - y.mean(axis=0)
                gamma = (dn * dy).sum(axis=0) / (dn * dn).sum(axis=0)
                beta = y.mean(axis=0) - gamma * n.mean(axis=0)
                return gamma, beta
                ### END SOLUTION
        ''',
        reference=_ln_parameters,
        public_cases=_ln_cases,
        diagnoses=(
            Diagnosis(
                "you normalised each feature over the rows; the layer norm normalised each row over its features",
                name="normalised over the rows",
                hint="which axis do a layer norm's mean and variance run over?",
                variant=lambda x, y: _ln_parameters(x, y, axis=0),
            ),
            Diagnosis(
                UNBIASED_VAR,
                name="unbiased variance",
                hint="layer norm divides by d, not d - 1",
                variant=lambda x, y: _ln_parameters(x, y, ddof=1),
            ),
            Diagnosis(
                "your gamma and beta are off only where a row's spread is small: epsilon is part of the layer norm",
                name="epsilon left out",
                hint="nn.LayerNorm divides by sqrt(variance + eps)",
                variant=lambda x, y: _ln_parameters(x, y, eps=0.0),
            ),
            Diagnosis(
                "your gamma has the right size but not always the right sign",
                name="gamma's sign lost",
                hint="a ratio of spreads cannot tell gamma from -gamma",
                variant=lambda x, y: _ln_parameters(x, y, fit="spread"),
            ),
            Diagnosis(
                "your beta is y's mean over the rows: a feature of the normalised rows need not average 0 over the rows",
                name="beta as the mean of y",
                hint="what does a layer norm make 0: a row's mean, or a feature's?",
                variant=lambda x, y: _ln_parameters(x, y, fit="mean"),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 8.5 a sampler's settings (inverse)
def _sampling_case(rng, name, N, V, temperatures, top_ks, scale=2.0, dtype=np.float64):
    logits = rng.normal(size=(N, V)) * scale
    probs = np.empty((N, V))
    for i, (T, k) in enumerate(zip(temperatures, top_ks)):
        z = logits[i] / T
        z = np.where(logits[i] >= np.sort(logits[i])[-k], z, -np.inf)  # the k largest logits stay
        probs[i] = np.exp(z - z.max()) / np.exp(z - z.max()).sum()
    return Case(name, logits=logits.astype(dtype), probs=probs.astype(dtype))


def _sampling_settings(logits, probs, invert=False, all_tokens=False, floor=False, normaliser=False):
    z, p = np.asarray(logits, dtype=np.float64), np.asarray(probs, dtype=np.float64)
    kept = p > 0
    T = np.empty(len(z))
    for i in range(len(z)):
        keep = np.ones_like(kept[i]) if floor else kept[i]
        zi, lp = z[i][keep], np.log(np.maximum(p[i][keep], 1e-30))
        if normaliser:  # log p read as z / T, the log-sum-exp forgotten
            T[i] = np.mean(zi / lp)
            continue
        dz, dl = zi - zi.mean(), lp - lp.mean()
        T[i] = (dz * dz).sum() / (dz * dl).sum()  # log p = z / T - const on the kept tokens
    k = np.full(len(z), z.shape[-1]) if all_tokens else kept.sum(-1)
    return (1 / T if invert else T), k


def _sampling_cases():
    rng = np.random.default_rng(815)
    return (
        grouped(
            "temperature",
            _sampling_case(rng, "3 rows, V=6, no top-k", 3, 6, [0.5, 1.0, 2.5], [6, 6, 6]),
            _sampling_case(rng, "2 rows, V=10, T below and above 1", 2, 10, [0.3, 4.0], [10, 10]),
        )
        + grouped(
            "top-k",
            _sampling_case(rng, "4 rows, V=8, top-k 2, 5, 8, 3", 4, 8, [0.7, 1.5, 1.0, 2.0], [2, 5, 8, 3]),
        )
        + grouped(
            "dtype",
            _sampling_case(
                rng,
                "float32, 3 rows, V=12, top-k 4, 12, 7",
                3,
                12,
                [0.8, 1.3, 3.0],
                [4, 12, 7],
                dtype=np.float32,
            ),
        )
    )


register(
    Exercise(
        id="ch08.sampling_settings",
        number="8.5",
        title="a sampler's temperature and top-k, from what it sampled from",
        points=3,
        function="sampling_settings",
        hint="on the tokens the sampler kept, how does log p depend on the logits?",
        kind="implement",
        outputs=("temperature", "top_k"),
        description="A generation log kept, for each sampled token, the model's `logits (N, V)` and "
        "the distribution the token was drawn from, `probs (N, V)`, but not the sampler's settings. "
        "Each row was sampled as `model.generate` samples, with its own temperature $T > 0$ and "
        "possibly restricted to the top $k$ tokens ($k = V$: no restriction). Return "
        "`(temperature (N,), top_k (N,))`. Every row kept at least two tokens and no two logits "
        "of a row are equal. The arrays are float64 or float32. numpy or torch; no attncourse "
        "function.",
        needs=("import numpy as np", "import torch"),
        solution='''
            def sampling_settings(logits, probs):
                """Each row's temperature and top-k, read from the distribution it was sampled from."""
                ### BEGIN SOLUTION
                z, p = np.asarray(logits, dtype=np.float64), np.asarray(probs, dtype=np.float64)
                kept = p > 0  # the tokens outside the top k have probability 0
                top_k = kept.sum(axis=-1)
                temperature = np.empty(len(z))
                for i in range(len(z)):
                    zi, log_p = z[i][kept[i]], np.log(p[i][kept[i]])
                    # on the kept tokens log p = z / T - log(sum): a line in z whose slope is 1 / T
                    slope = np.polyfit(zi, log_p, 1)[0]
                    temperature[i] = 1 / slope
                return temperature, top_k
                ### END SOLUTION
        ''',
        reference=_sampling_settings,
        public_cases=_sampling_cases,
        diagnoses=(
            Diagnosis(
                "your temperatures are upside down: a row sampled at T = 2 came out as 0.5",
                name="1 / T",
                hint="does a higher temperature make log p steeper or flatter in z?",
                variant=lambda z, p: _sampling_settings(z, p, invert=True),
            ),
            Diagnosis(
                "your top_k counts every token of the vocabulary, also the ones the sampler dropped",
                name="k = V everywhere",
                hint="what probability does a token outside the top k get?",
                variant=lambda z, p: _sampling_settings(z, p, all_tokens=True),
            ),
            Diagnosis(
                "your temperature is fitted on every token, also those the sampler dropped",
                name="dropped tokens in the fit",
                hint="a token outside the top k says nothing about T",
                variant=lambda z, p: _sampling_settings(z, p, floor=True),
            ),
            Diagnosis(
                "your temperature reads log p as the logit over T: the softmax also divides by a sum",
                name="normaliser forgotten",
                hint="log softmax(z / T) = z / T - log sum exp(z / T)",
                variant=lambda z, p: _sampling_settings(z, p, normaliser=True),
            ),
        ),
    )
)
