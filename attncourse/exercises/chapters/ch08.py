"""Chapter 8 exercises: a Transformer block's size, a parallel block's forward pass, which head's removal costs most, and the training loss."""

from __future__ import annotations

import math

import numpy as np

from ... import merge_heads, softmax, split_heads
from ... import scaled_dot_product_attention as sdpa
from ..engine.registry import SHARED_MISTAKES, Case, Diagnosis, Exercise, grouped, register
from ._shared import D_MODEL_SCALE

__all__: list = []

TORCH_NEEDS = (
    "import torch",
    "import torch.nn.functional as F",
    "from attncourse import scaled_dot_product_attention, split_heads, merge_heads",
)
# The block exercises are about the block: attention is handed out, a whole layer is not.
NO_LAYERS = (
    "torch.nn.TransformerEncoderLayer",
    "torch.nn.TransformerDecoderLayer",
    "torch.nn.MultiheadAttention",
    "torch.nn.functional.multi_head_attention_forward",
)
POST_NORM = (
    "every output row has mean 0 and variance 1: the residual stream itself came out normalised. "
    "In a pre-norm block, what does the layer norm see, and what is added to x untouched?"
)
SHARED_MISTAKES[POST_NORM] = (
    "post-norm instead of pre-norm",
    "pre-norm normalises only the sublayer's input and adds its output to the untouched stream: x + f(LN(x))",
)
UNBIASED_VAR = "your layer norm divides the squared deviations by d - 1, the unbiased variance"


def _layer_norm(x, ddof=0):
    mu = x.mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(x.var(axis=-1, ddof=ddof, keepdims=True) + 1e-5)


_erf = np.vectorize(math.erf, otypes=[np.float64])


def _gelu(z):
    return z * 0.5 * (1.0 + _erf(z / math.sqrt(2.0)))  # the exact GELU, z * Phi(z)


def _gelu_tanh(z):
    return (
        0.5 * z * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (z + 0.044715 * z**3)))
    )  # GPT-2's approximation


# ----------------------------------------------------------------------------- 8.1 block size (predict)
def _block_parameters():
    d, d_ff = 64, 256
    attention = 4 * d * d + 4 * d  # W_Q, W_K, W_V, W_O and their biases
    norms = 2 * (d + d)  # two layer norms, each a gamma and a beta of d numbers
    mlp = d * d_ff + d_ff + d_ff * d + d  # up (d -> d_ff) and down (d_ff -> d), with biases
    return np.array(attention + norms + mlp)


register(
    Exercise(
        id="ch08.predict_block_parameters",
        number="8.1",
        title="predict a block's size",
        points=2,
        function="predict_block_parameters",
        hint="count attention (four d x d matrices and their biases), the MLP (two matrices and their biases) and the two layer norms separately",
        kind="predict",
        description="Before running anything: how many parameters does "
        "`TransformerBlock(d_model=64, n_heads=4)` have? Its MLP is $d_{ff} = 4\\,d_{model}$ wide, and "
        "every linear layer and both layer norms have biases. Return the count (exact), worked out "
        "by hand: nothing built, nothing run. Plain Python or numpy; no attncourse function.",
        solution='''
            def predict_block_parameters():
                """Parameters of TransformerBlock(d_model=64, n_heads=4), d_ff = 256, with biases."""
                ### BEGIN SOLUTION
                d, d_ff = 64, 4 * 64
                attention = 4 * (d * d + d)  # W_Q, W_K, W_V, W_O (d, d) and a bias each; heads change nothing
                norms = 2 * (2 * d)  # two layer norms: gamma and beta
                mlp = (d * d_ff + d_ff) + (d_ff * d + d)  # up and down projections with biases
                return attention + norms + mlp
                ### END SOLUTION
        ''',
        reference=_block_parameters,
        public_cases=lambda: grouped("prediction", Case("d_model=64, n_heads=4, d_ff=256")),
        diagnoses=(
            Diagnosis(
                "your count leaves out the layer norms' parameters",
                name="layer norms left out",
                hint="each layer norm learns a scale and a shift per feature",
                variant=lambda: _block_parameters() - 4 * 64,
            ),
            Diagnosis(
                "your count leaves out the biases (the layer norms' shifts among them)",
                name="biases left out",
                hint="every linear layer and both layer norms have biases",
                variant=lambda: np.array(4 * 64 * 64 + 2 * 64 + 2 * 64 * 256),
            ),
            Diagnosis(
                "your count has an MLP only d_model wide",
                name="MLP of width d_model",
                hint="the MLP's hidden layer is d_ff wide",
                variant=lambda: np.array(4 * 64 * 64 + 4 * 64 + 4 * 64 + 2 * (64 * 64 + 64)),
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
        "what block `i` hands to the next one, over B sequences. Every layer norm is still at its "
        "initialisation ($\\gamma = 1$, $\\beta = 0$, $\\epsilon = 10^{-5}$) and there is no final layer "
        "norm. Return a bool array `(n_blocks,)`: True where block `i` is post-norm. The streams are "
        "float64 or float32, exact up to their rounding; allow for that, and for $\\epsilon$, but for "
        "nothing more: a pre-norm block's output may come within a few hundredths of whatever a "
        "post-norm one leaves.",
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


# ----------------------------------------------------------------------------- 8.3 pre-norm block (implement)
def _block_cases():
    rng = np.random.default_rng(803)

    def weights(d, d_ff, dtype=np.float64):
        w = {name: rng.normal(size=(d, d)) / np.sqrt(d) for name in ("W_q", "W_k", "W_v", "W_o")}
        w["W_1"] = rng.normal(size=(d, d_ff)) / np.sqrt(d)
        w["W_2"] = rng.normal(size=(d_ff, d)) / np.sqrt(d_ff)
        return {name: a.astype(dtype) for name, a in w.items()}

    return grouped(
        "shape",
        Case(
            "B=1, L=3, d_model=4, 2 heads, d_ff=8", x=rng.normal(size=(1, 3, 4)), **weights(4, 8), n_heads=2
        ),
        Case(
            "B=2, L=4, d_model=6, 3 heads, d_ff=12", x=rng.normal(size=(2, 4, 6)), **weights(6, 12), n_heads=3
        ),
    ) + grouped(
        "dtype",
        Case(
            "float32, B=2, L=3, d_model=4, 2 heads, d_ff=8",
            x=rng.normal(size=(2, 3, 4)).astype(np.float32),
            **weights(4, 8, np.float32),
            n_heads=2,
        ),
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


SEQUENTIAL = (
    "the MLP read the stream after attention had been added: in a parallel block both sublayers read "
    "the same normalised input, taken before either adds anything"
)


register(
    Exercise(
        id="ch08.parallel_block",
        number="8.3",
        title="a parallel block's forward pass",
        points=5,
        function="parallel_block",
        hint="compare each piece with the prompt: the normalisation, the attention, the MLP and its GELU, "
        "and what is added to x",
        kind="implement",
        array_kind="torch",
        description="GPT-J, GPT-NeoX and PaLM use a *parallel* block instead of the chapter's "
        "sequential one: attention and the MLP both read one layer-normed copy of the input and both "
        "outputs are added to the stream at once, "
        "$x \\leftarrow x + \\operatorname{MHA}(\\operatorname{LN}(x)) + "
        "\\operatorname{GELU}(\\operatorname{LN}(x) W_1) W_2$ (the two sublayers can then run "
        "side by side). Write its forward pass on torch tensors for `x (B, L, d_model)` and return "
        "`(B, L, d_model)`. Layer norm has no learned scale or shift ($\\gamma = 1, \\beta = 0$, "
        "$\\epsilon = 10^{-5}$); the attention is causal multi-head self-attention with `n_heads` heads, "
        "projections used as `h @ W_q` (all four `(d_model, d_model)`), `W_1 (d_model, d_ff)`, "
        "`W_2 (d_ff, d_model)`, no biases anywhere, exact GELU. `scaled_dot_product_attention`, "
        "`split_heads` and `merge_heads` are handed out; PyTorch's Transformer layers are not.",
        solution='''
            def parallel_block(x, W_q, W_k, W_v, W_o, W_1, W_2, n_heads):
                """One causal parallel block without biases or norm parameters: (B, L, d_model) -> same."""
                ### BEGIN SOLUTION
                h = F.layer_norm(x, (x.shape[-1],))  # one normalised copy, read by both sublayers
                q = split_heads(h @ W_q, n_heads)  # (B, L, d_model) -> (B, H, L, d_head)
                k = split_heads(h @ W_k, n_heads)
                v = split_heads(h @ W_v, n_heads)
                out, _ = scaled_dot_product_attention(q, k, v, is_causal=True)  # (B, H, L, d_head)
                attention = merge_heads(out) @ W_o  # (B, H, L, d_head) -> (B, L, d_model)
                mlp = F.gelu(h @ W_1) @ W_2  # (B, L, d_model) -> (B, L, d_ff) -> (B, L, d_model)
                return x + attention + mlp  # both added to the un-normalised stream at once
                ### END SOLUTION
        ''',
        reference=_block,
        public_cases=_block_cases,
        needs=TORCH_NEEDS,
        forbids=NO_LAYERS,
        diagnoses=(
            Diagnosis(
                SEQUENTIAL,
                name="sequential, not parallel",
                hint="compute LN(x) once, before either sublayer",
                variant=lambda *a: _block(*a, parallel=False),
            ),
            Diagnosis(POST_NORM, variant=lambda *a: _block(*a, post=True)),
            Diagnosis(
                UNBIASED_VAR,
                name="layer norm divides by d (the biased variance), not d - 1",
                hint="torch's var() and numpy's var(ddof=1) divide by d - 1; F.layer_norm divides by d",
                variant=lambda *a: _block(*a, ddof=1),
            ),
            Diagnosis(
                "the attention is not causal: position t sees t + 1",
                name="the attention is not causal",
                hint="a decoder block's attention is causal: is_causal=True",
                variant=lambda *a: _block(*a, causal=False),
            ),
            Diagnosis(D_MODEL_SCALE, variant=lambda *a: _block(*a, scale=1 / np.sqrt(a[0].shape[-1]))),
            Diagnosis(
                "your GELU is the tanh approximation; this block uses the exact GELU",
                name="tanh GELU",
                hint="F.gelu's default, approximate='none', is the exact one: z * Phi(z)",
                variant=lambda *a: _block(*a, gelu=_gelu_tanh),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 8.4 which head's removal costs most (extend)
def _maps(rng, B, H, L):
    scores = rng.normal(size=(B, H, L, L)) * 2
    causal = np.tril(np.ones((L, L), dtype=bool))
    return softmax(np.where(causal, scores, -np.inf))  # (B, H, L, L): causal rows that sum to 1


def _removal_case(rng, name, B, H, L, d_head, d_model, dtype=np.float64, planted=None):
    weights = _maps(rng, B, H, L)
    if planted is not None:  # one head puts all its weight on the key after the previous copy
        weights[:, planted] = 0.0
        weights[:, planted, :, 0] = 1.0
        weights[:, planted, 1:, :] = np.eye(L)[:-1]
    v = rng.normal(size=(B, H, L, d_head))
    W_o = rng.normal(size=(H * d_head, d_model)) / np.sqrt(H * d_head)
    u = rng.normal(size=(B, L, d_model))
    arrays = dict(weights=weights, v=v, W_o=W_o, u=u)
    return Case(name, **{k: a.astype(dtype) for k, a in arrays.items()})


def _removal_cost(weights, v, W_o, u, layout="rows", maps=True, sign=1.0, reduce="mean"):
    weights, v, W_o, u = (np.asarray(a, dtype=np.float64) for a in (weights, v, W_o, u))
    H, d_head = v.shape[-3], v.shape[-1]
    heads = weights @ v if maps else v  # (B, H, L, d_head): each head's output before W_o
    if layout == "rows":
        W_h = W_o.reshape(H, d_head, -1)  # rows h * d_head .. (h + 1) * d_head belong to head h
    else:
        W_h = np.swapaxes(W_o.reshape(d_head, H, -1), 0, 1)  # rows h, h + H, ...: interleaved heads
    if layout == "transposed maps":
        heads = np.swapaxes(weights, -1, -2) @ v
        W_h = W_o.reshape(H, d_head, -1)
    written = np.einsum("bhld,hdm->bhlm", heads, W_h)  # (B, H, L, d_model): what head h adds
    drop = (written * u[:, None]).sum(-1)  # (B, H, L): its share of the correct token's logit
    total = drop.sum(axis=(0, 2)) if reduce == "sum" else drop.mean(axis=(0, 2))
    return sign * total


def _removal_cases():
    rng = np.random.default_rng(814)
    return grouped(
        "values",
        _removal_case(rng, "B=1, 2 heads, L=4, d_head=2, d_model=4", 1, 2, 4, 2, 4),
        _removal_case(rng, "B=2, 3 heads, L=3, d_head=2, d_model=5", 2, 3, 3, 2, 5),
        _removal_case(
            rng, "B=2, 4 heads, L=5, d_head=3, d_model=6, head 2 copies key t - 1", 2, 4, 5, 3, 6, planted=2
        ),
    ) + grouped(
        "dtype",
        _removal_case(
            rng, "float32, B=2, 2 heads, L=3, d_head=4, d_model=3", 2, 2, 3, 4, 3, dtype=np.float32
        ),
    )


register(
    Exercise(
        id="ch08.head_removal_cost",
        number="8.4",
        title="which head's removal costs most, from its maps",
        points=2,
        function="head_removal_cost",
        hint="what does head h add to the stream at position t, and which part of that does the correct token's logit read?",
        kind="extend",
        description="The chapter removed each head and reran the model to measure the cost. In a "
        "model whose *last* layer is attention only, no rerun is needed: the logits are the residual "
        "stream read by the unembedding, so removing a head of that layer takes away exactly what "
        "that head wrote. You are given the layer's attention maps `weights (B, H, L, L)`, its values "
        "`v (B, H, L, d_head)`, its output matrix `W_o (H * d_head, d_model)` (used as "
        "`merged @ W_o`, where `merged` puts head `h` in columns `h * d_head:(h + 1) * d_head`) and "
        "`u (B, L, d_model)`, the unembedding row of the correct next token at each position (the "
        "correct logit at `(b, t)` is `stream[b, t] @ u[b, t]`). Return `cost (H,)`: for each head, "
        "the mean over all `(b, t)` of how much the correct token's logit falls when that head is "
        "removed (its rows of `W_o` zeroed). The costliest head is `cost.argmax()`. numpy or torch; "
        "no attncourse function.",
        solution='''
            def head_removal_cost(weights, v, W_o, u):
                """Mean drop of the correct token's logit when each head of the last layer is removed: (H,)."""
                ### BEGIN SOLUTION
                H, d_head = v.shape[-3], v.shape[-1]
                heads = weights @ v  # (B, H, L, L) @ (B, H, L, d_head) -> (B, H, L, d_head)
                W_h = W_o.reshape(H, d_head, -1)  # (H, d_head, d_model): head h's rows of W_o
                written = np.einsum("bhld,hdm->bhlm", heads, W_h)  # (B, H, L, d_model): what head h adds
                drop = (written * u[:, None]).sum(-1)  # (B, H, L): the part of the correct logit it supplies
                return drop.mean(axis=(0, 2))  # (H,): averaged over every position of every sequence
                ### END SOLUTION
        ''',
        reference=_removal_cost,
        public_cases=_removal_cases,
        diagnoses=(
            Diagnosis(
                "your costs are the logits each head adds with the wrong sign: removing a head that "
                "supports the correct token must lower its logit, a positive cost",
                name="sign flipped",
                hint="cost = what the head contributed to the correct logit",
                variant=lambda w, v, W_o, u: _removal_cost(w, v, W_o, u, sign=-1.0),
            ),
            Diagnosis(
                "you gave head h the rows h, h + H, h + 2H, ... of W_o; merge_heads puts head h in one "
                "block of d_head consecutive columns, so it reads one block of d_head consecutive rows",
                name="interleaved head rows",
                hint="W_o.reshape(H, d_head, d_model)[h] is head h's part",
                variant=lambda w, v, W_o, u: (
                    _removal_cost(w, v, W_o, u, layout="interleaved")
                    if v.shape[-3] > 1 and v.shape[-1] > 1
                    else None
                ),
            ),
            Diagnosis(
                "the maps are missing from your costs: a head writes weights @ v at each position, not v",
                name="values without the maps",
                hint="multiply each head's maps by its values first",
                variant=lambda w, v, W_o, u: _removal_cost(w, v, W_o, u, maps=False),
            ),
            Diagnosis(
                "you used the maps transposed (key j reading query i): row t of a head's map says how "
                "query t mixes the values, weights @ v",
                name="transposed maps",
                hint="heads = weights @ v, with queries along the rows",
                variant=lambda w, v, W_o, u: _removal_cost(w, v, W_o, u, layout="transposed maps"),
            ),
            Diagnosis(
                "you summed over the positions; the cost is the mean over every (b, t)",
                name="summed, not averaged",
                hint="divide by B * L",
                variant=lambda w, v, W_o, u: _removal_cost(w, v, W_o, u, reduce="sum"),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 8.5 padded loss (extend)
def _loss_cases():
    rng = np.random.default_rng(805)
    return (
        grouped(
            "padding",
            Case(
                "B=2, L=4, V=5, no padding",
                logits=rng.normal(size=(2, 4, 5)),
                tokens=rng.integers(0, 5, size=(2, 4)),
                lengths=np.array([4, 4]),
            ),
            Case(
                "B=3, L=5, V=4, lengths [5, 3, 2]",
                logits=rng.normal(size=(3, 5, 4)) * 2,
                tokens=rng.integers(0, 4, size=(3, 5)),
                lengths=np.array([5, 3, 2]),
            ),
        )
        + grouped(
            "large logits",
            Case(
                "logits in the thousands, B=2, L=3, V=4, lengths [3, 2]",
                logits=rng.normal(size=(2, 3, 4)) * 1000,
                tokens=rng.integers(0, 4, size=(2, 3)),
                lengths=np.array([3, 2]),
            ),
        )
        + grouped(
            "dtype",
            Case(
                "float32 logits, B=2, L=4, V=6, lengths [4, 3]",
                logits=(rng.normal(size=(2, 4, 6)) * 2).astype(np.float32),
                tokens=rng.integers(0, 6, size=(2, 4)),
                lengths=np.array([4, 3]),
            ),
        )
    )


def _loss(logits, tokens, lengths, shift=1, use_lengths=True, per_sequence=False):
    logits = np.asarray(logits, dtype=np.float64)
    B, L = logits.shape[:2]
    log_p = logits - logits.max(-1, keepdims=True)
    log_p = log_p - np.log(np.exp(log_p).sum(-1, keepdims=True))  # (B, L, V) log-softmax
    t = np.arange(L - shift)
    targets = tokens[:, shift:]  # (B, L - shift)
    picked = np.take_along_axis(log_p[:, : L - shift], targets[..., None], axis=-1)[..., 0]  # (B, L - shift)
    keep = (t[None, :] + shift < lengths[:, None]) if use_lengths else np.ones_like(picked, dtype=bool)
    if per_sequence:
        rows = [-(picked[b][keep[b]]).mean() for b in range(B) if keep[b].any()]
        return np.array(np.mean(rows))
    return np.array(-(picked[keep]).sum() / keep.sum())


register(
    Exercise(
        id="ch08.next_token_loss",
        number="8.5",
        title="the training loss, with padding",
        points=3,
        function="next_token_loss",
        hint="position t predicts token t + 1: drop the last position's logits and the first token, and average only over real targets",
        kind="extend",
        description="The model of this chapter is trained on sequences of one length. Batches of real "
        "text come padded: sequence `b` of `tokens (B, L)` has `lengths[b]` real tokens, then padding. "
        "Given the model's `logits (B, L, V)` (position `t` predicts token `t + 1`), return the mean "
        "cross-entropy $-\\log p(\\text{tokens}[b, t+1])$ over every pair $(b, t)$ whose target is a real "
        "token ($t + 1 < \\text{lengths}[b]$), each such prediction counting once. Logits can be large: "
        "use a stable log-softmax. Return a scalar; numpy or torch, no attncourse function.",
        solution='''
            def next_token_loss(logits, tokens, lengths):
                """Mean next-token cross-entropy over the positions whose target is a real token."""
                ### BEGIN SOLUTION
                L = logits.shape[-2]
                shifted = logits - logits.max(axis=-1, keepdims=True)  # stable: the largest logit becomes 0
                log_p = shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))  # (B, L, V) log-softmax
                targets = tokens[:, 1:]  # position t predicts token t + 1: (B, L - 1)
                picked = np.take_along_axis(log_p[:, :-1], targets[..., None], axis=-1)[..., 0]  # (B, L - 1)
                real = np.arange(1, L)[None, :] < np.asarray(lengths)[:, None]  # target t + 1 is a real token
                return -picked[real].sum() / real.sum()  # each real prediction counts once
                ### END SOLUTION
        ''',
        reference=_loss,
        public_cases=_loss_cases,
        diagnoses=(
            Diagnosis(
                "the targets are not shifted: position t's logits predict token t + 1, not token t "
                "(a model scored on its own input token can learn to copy it)",
                variant=lambda lg, tk, n: _loss(lg, tk, n, shift=0),
            ),
            Diagnosis(
                "the padding counts in your mean: leave out every position whose target t + 1 is at or "
                "past the sequence's length",
                variant=lambda lg, tk, n: (
                    _loss(lg, tk, n, use_lengths=False) if (n < tk.shape[1]).any() else None
                ),
            ),
            Diagnosis(
                "you averaged each sequence, then the sequences: a short sequence then weighs as much as a "
                "long one. Average over all real predictions at once",
                variant=lambda lg, tk, n: (
                    _loss(lg, tk, n, per_sequence=True) if len(set(np.asarray(n).tolist())) > 1 else None
                ),
            ),
        ),
    )
)
