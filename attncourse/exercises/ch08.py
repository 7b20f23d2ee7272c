"""Chapter 8 exercises: a Transformer block's size, its pre-norm forward pass, and the training loss."""

from __future__ import annotations

import math

import numpy as np

from .. import merge_heads, split_heads
from .. import scaled_dot_product_attention as sdpa
from ._common import D_MODEL_SCALE
from ._registry import SHARED_MISTAKES, Case, Diagnosis, Exercise, grouped, register

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
UNBIASED_VAR = (
    "layer norm divides by d (the biased variance), not d - 1: torch's var() and numpy's var(ddof=1) "
    "use d - 1; F.layer_norm does it right"
)


def _layer_norm(x, ddof=0):
    mu = x.mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(x.var(axis=-1, ddof=ddof, keepdims=True) + 1e-5)


_erf = np.vectorize(math.erf, otypes=[np.float64])


def _gelu(z):
    return z * 0.5 * (1.0 + _erf(z / math.sqrt(2.0)))  # the exact GELU, z * Phi(z)


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
        "every linear layer and both layer norms have biases. Return the count (exact), then check it "
        "with `sum(p.numel() for p in block.parameters())`.",
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
                "the two layer norms have parameters too: a gamma and a beta of d_model numbers each",
                variant=lambda: _block_parameters() - 4 * 64,
            ),
            Diagnosis(
                "the biases are missing: 4 * 64 in attention, 256 + 64 in the MLP, 2 * 64 in the norms' betas",
                variant=lambda: np.array(4 * 64 * 64 + 2 * 64 + 2 * 64 * 256),
            ),
            Diagnosis(
                "the MLP is d_ff = 4 * d_model = 256 wide: its two matrices are (64, 256) and (256, 64)",
                variant=lambda: np.array(4 * 64 * 64 + 4 * 64 + 4 * 64 + 2 * (64 * 64 + 64)),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 8.2 MLP share (predict)
register(
    Exercise(
        id="ch08.predict_mlp_share",
        number="8.2",
        title="where a block's weights are",
        points=1,
        function="predict_mlp_share",
        hint="write each part's weight count as a multiple of d_model squared",
        kind="predict",
        description="Counting only the weight matrices (no biases, no layer norms) of a block with "
        "$d_{ff} = 4\\,d_{model}$: what fraction of them sits in the MLP rather than in attention? "
        "Return a number between 0 and 1; anything within 2% passes. Does it depend on $d_{model}$?",
        solution='''
            def predict_mlp_share():
                """Fraction of a block's weight-matrix entries in the MLP when d_ff = 4 d_model."""
                ### BEGIN SOLUTION
                attention = 4  # W_Q, W_K, W_V, W_O: 4 d^2
                mlp = 2 * 4  # (d, 4d) and (4d, d): 8 d^2
                return mlp / (mlp + attention)  # 2/3, for every d_model
                ### END SOLUTION
        ''',
        reference=lambda: np.array(2.0 / 3.0),
        public_cases=lambda: grouped("prediction", Case("d_ff = 4 d_model")),
        tolerance=(0.02, 0.0),
        diagnoses=(
            Diagnosis(
                "the MLP has two matrices of d x 4d, 8 d^2 in all, against attention's four d x d (4 d^2)",
                variant=lambda: np.array(0.5),
            ),
            Diagnosis(
                "that is the attention's share; the MLP holds the other two thirds",
                variant=lambda: np.array(1.0 / 3.0),
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


def _block(x, W_q, W_k, W_v, W_o, W_1, W_2, n_heads, post=False, ddof=0, scale=None, causal=True):
    def attend(h):
        q, k, v = (split_heads(h @ W, n_heads) for W in (W_q, W_k, W_v))  # (B, L, d) -> (B, H, L, d_head)
        return merge_heads(sdpa(q, k, v, is_causal=causal, scale=scale)[0]) @ W_o  # -> (B, L, d)

    def mlp(h):
        return _gelu(h @ W_1) @ W_2  # (B, L, d) -> (B, L, d_ff) -> (B, L, d)

    if post:
        x = _layer_norm(x + attend(x), ddof)
        return _layer_norm(x + mlp(x), ddof)
    x = x + attend(_layer_norm(x, ddof))
    return x + mlp(_layer_norm(x, ddof))


register(
    Exercise(
        id="ch08.pre_norm_block",
        number="8.3",
        title="a pre-norm block's forward pass",
        points=5,
        function="pre_norm_block",
        hint="normalise only the input of each sublayer, and add the sublayer's output to the unnormalised x",
        kind="implement",
        array_kind="torch",
        description="The forward pass of one causal pre-norm block on torch tensors, "
        "$x \\leftarrow x + \\operatorname{MHA}(\\operatorname{LN}(x))$, then "
        "$x \\leftarrow x + \\operatorname{GELU}(\\operatorname{LN}(x) W_1) W_2$, for `x (B, L, d_model)`. "
        "Layer norm has no learned scale or shift ($\\gamma = 1, \\beta = 0$, $\\epsilon = 10^{-5}$); "
        "the attention is causal multi-head self-attention with `n_heads` heads, projections used as "
        "`h @ W_q` (all four `(d_model, d_model)`), no biases anywhere, exact GELU. "
        "`scaled_dot_product_attention`, `split_heads` and `merge_heads` are handed out.",
        solution='''
            def pre_norm_block(x, W_q, W_k, W_v, W_o, W_1, W_2, n_heads):
                """One causal pre-norm block without biases or norm parameters: (B, L, d_model) -> same."""
                ### BEGIN SOLUTION
                d_model = x.shape[-1]
                h = F.layer_norm(x, (d_model,))  # each position to mean 0, variance 1 (biased)
                q = split_heads(h @ W_q, n_heads)  # (B, L, d_model) -> (B, H, L, d_head)
                k = split_heads(h @ W_k, n_heads)
                v = split_heads(h @ W_v, n_heads)
                out, _ = scaled_dot_product_attention(q, k, v, is_causal=True)  # (B, H, L, d_head)
                x = x + merge_heads(out) @ W_o  # (B, H, L, d_head) -> (B, L, d_model); the stream stays un-normalised
                h = F.layer_norm(x, (d_model,))
                return x + F.gelu(h @ W_1) @ W_2  # (B, L, d_model) -> (B, L, d_ff) -> (B, L, d_model)
                ### END SOLUTION
        ''',
        reference=_block,
        public_cases=_block_cases,
        needs=TORCH_NEEDS,
        forbids=NO_LAYERS,
        diagnoses=(
            Diagnosis(POST_NORM, variant=lambda *a: _block(*a, post=True)),
            Diagnosis(UNBIASED_VAR, variant=lambda *a: _block(*a, ddof=1)),
            Diagnosis(
                "the attention is not causal: a decoder block must not let position t see t + 1 "
                "(is_causal=True)",
                variant=lambda *a: _block(*a, causal=False),
            ),
            Diagnosis(D_MODEL_SCALE, variant=lambda *a: _block(*a, scale=1 / np.sqrt(a[0].shape[-1]))),
        ),
    )
)


# ----------------------------------------------------------------------------- 8.4 post-norm by mistake (diagnose)
def _mlp_cases():
    rng = np.random.default_rng(804)
    return grouped(
        "shape",
        Case(
            "B=1, L=3, d_model=4, d_ff=8",
            x=3 * rng.normal(size=(1, 3, 4)) + 1,
            W_1=rng.normal(size=(4, 8)) / 2,
            W_2=rng.normal(size=(8, 4)) / 3,
        ),
        Case(
            "B=2, L=2, d_model=6, d_ff=12",
            x=rng.normal(size=(2, 2, 6)),
            W_1=rng.normal(size=(6, 12)) / 2,
            W_2=rng.normal(size=(12, 6)) / 3,
        ),
    ) + grouped(
        "dtype",
        Case(
            "float32, B=1, L=2, d_model=4, d_ff=8",
            x=(2 * rng.normal(size=(1, 2, 4)) - 1).astype(np.float32),
            W_1=(rng.normal(size=(4, 8)) / 2).astype(np.float32),
            W_2=(rng.normal(size=(8, 4)) / 3).astype(np.float32),
        ),
    )


def _mlp_sublayer(x, W_1, W_2, mode="pre"):
    if mode == "post":
        return _layer_norm(x + _gelu(x @ W_1) @ W_2)
    if mode == "no_residual":
        return _gelu(_layer_norm(x) @ W_1) @ W_2
    if mode == "norm_output":
        return x + _layer_norm(_gelu(x @ W_1) @ W_2)
    return x + _gelu(_layer_norm(x) @ W_1) @ W_2


register(
    Exercise(
        id="ch08.fix_post_norm",
        number="8.4",
        title="a pre-norm block that is not",
        points=2,
        function="mlp_sublayer",
        hint="in a pre-norm block only the sublayer's input is normalised: x + f(LN(x))",
        kind="diagnose",
        array_kind="torch",
        description="This is meant to be the MLP half of a *pre-norm* block (no layer-norm parameters, "
        "no biases). Symptom: with `W_2 = 0`, so that the MLP adds nothing, it should return `x` "
        "unchanged; it returns `x` normalised to mean 0 and variance 1 at every position. Find the bug "
        "and fix it.",
        solution='''
            def mlp_sublayer(x, W_1, W_2):
                """The MLP sublayer of a pre-norm block: x + GELU(LN(x) W_1) W_2."""
                d_model = x.shape[-1]
                ### BEGIN SOLUTION
                return x + F.gelu(F.layer_norm(x, (d_model,)) @ W_1) @ W_2  # only the sublayer's input is normalised
                ### END SOLUTION
        ''',
        stub="return F.layer_norm(x + F.gelu(x @ W_1) @ W_2, (d_model,))  # only the sublayer's input is normalised",
        reference=_mlp_sublayer,
        public_cases=_mlp_cases,
        needs=TORCH_NEEDS,
        forbids=NO_LAYERS,
        diagnoses=(
            Diagnosis(POST_NORM, variant=lambda x, W_1, W_2: _mlp_sublayer(x, W_1, W_2, "post")),
            Diagnosis(
                "the output no longer contains x: what happens to the input of a residual sublayer?",
                name="residual missing",
                hint="add the sublayer's output to x instead of returning it alone",
                variant=lambda x, W_1, W_2: _mlp_sublayer(x, W_1, W_2, "no_residual"),
            ),
            Diagnosis(
                "the MLP's output was normalised, its input was not: which of the two does pre-norm normalise?",
                name="normalised the output",
                hint="pre-norm normalises the sublayer's input: x + f(LN(x))",
                variant=lambda x, W_1, W_2: _mlp_sublayer(x, W_1, W_2, "norm_output"),
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
        "use a stable log-softmax.",
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
