"""Chapter 5 exercises: multi-head attention."""

from __future__ import annotations

import numpy as np

from .. import merge_heads, split_heads
from .. import scaled_dot_product_attention as sdpa
from ._common import D_MODEL_SCALE
from ._registry import Case, Diagnosis, Exercise, grouped, register

__all__: list = []

MHA_NEEDS = ("import numpy as np", "from attncourse import softmax, split_heads, merge_heads")


# ----------------------------------------------------------------------------- 5.1 split heads
def _split_cases():
    rng = np.random.default_rng(501)
    return grouped(
        "heads",
        Case("(1, 3, 4) into 2 heads", x=np.arange(12.0).reshape(1, 3, 4), n_heads=2),
        Case("(2, 4, 6) into 3 heads", x=rng.normal(size=(2, 4, 6)), n_heads=3),
    ) + grouped(
        "batch dimensions",
        Case("no batch: (3, 4) into 2 heads", x=rng.normal(size=(3, 4)), n_heads=2),
        Case("batch and more: (2, 2, 3, 6) into 3 heads", x=rng.normal(size=(2, 2, 3, 6)), n_heads=3),
    )


def _split_no_transpose(x, n_heads):
    *lead, L, d_model = x.shape
    return x.reshape(*lead, n_heads, L, d_model // n_heads)


def _split_interleaved(x, n_heads):
    *lead, L, d_model = x.shape
    return np.moveaxis(x.reshape(*lead, L, d_model // n_heads, n_heads), -1, -3)


register(
    Exercise(
        id="ch05.split_into_heads",
        number="5.1",
        title="split into heads",
        points=2,
        hint="reshape to (..., L, H, d_head), then swap the L and H axes",
        function="split_into_heads",
        description="Reshape `x (..., L, d_model)` into `(..., n_heads, L, d_head)` with "
        "`d_head = d_model // n_heads`; head `h` owns columns `h*d_head : (h+1)*d_head`.",
        solution='''
            def split_into_heads(x, n_heads):
                """(..., L, d_model) -> (..., n_heads, L, d_head); head h owns columns h*d_head:(h+1)*d_head."""
                ### BEGIN SOLUTION
                *lead, L, d_model = x.shape
                x = x.reshape(*lead, L, n_heads, d_model // n_heads)  # (..., L, d_model) -> (..., L, H, d_head)
                return np.swapaxes(x, -3, -2)  # -> (..., H, L, d_head)
                ### END SOLUTION
        ''',
        reference=split_heads,
        public_cases=_split_cases,
        diagnoses=(
            Diagnosis(
                "you reshaped straight to (..., H, L, d_head), which mixes tokens across heads: reshape to "
                "(..., L, H, d_head) first, then swap the L and H axes",
                variant=_split_no_transpose,
            ),
            Diagnosis(
                "head h must own the contiguous columns h*d_head:(h+1)*d_head; you dealt the columns out "
                "to the heads in turn. Reshape to (..., L, H, d_head), not (..., L, d_head, H)",
                variant=_split_interleaved,
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 5.2 merge heads
def _combine_cases():
    rng = np.random.default_rng(502)
    return grouped(
        "heads",
        Case("2 heads of (3, 2)", x=np.arange(12.0).reshape(1, 2, 3, 2)),
        Case("a batch of 2, 3 heads of (4, 2)", x=rng.normal(size=(2, 3, 4, 2))),
    ) + grouped(
        "batch dimensions",
        Case("no batch: 2 heads of (3, 4)", x=rng.normal(size=(2, 3, 4))),
        Case("batch and more: (2, 2), 3 heads of (2, 2)", x=rng.normal(size=(2, 2, 3, 2, 2))),
    )


def _combine_no_transpose(x):
    *lead, H, L, d_head = x.shape
    return x.reshape(*lead, L, H * d_head)


register(
    Exercise(
        id="ch05.combine_heads",
        number="5.2",
        title="merge the heads back",
        points=1,
        hint="the reverse of split_into_heads, in the reverse order",
        function="combine_heads",
        description="The inverse of 5.1: `(..., n_heads, L, d_head) -> (..., L, n_heads * d_head)`.",
        solution='''
            def combine_heads(x):
                """(..., n_heads, L, d_head) -> (..., L, n_heads * d_head): the inverse of split_into_heads."""
                ### BEGIN SOLUTION
                *lead, H, L, d_head = x.shape
                x = np.swapaxes(x, -3, -2)  # (..., H, L, d_head) -> (..., L, H, d_head)
                return x.reshape(*lead, L, H * d_head)  # -> (..., L, d_model)
                ### END SOLUTION
        ''',
        reference=merge_heads,
        public_cases=_combine_cases,
        diagnoses=(
            Diagnosis(
                "you reshaped without moving the head axis: swap the H and L axes first, then reshape to "
                "(..., L, H * d_head)",
                variant=_combine_no_transpose,
            ),
            Diagnosis(
                "each token's features are interleaved across the heads (feature j of every head, then "
                "feature j + 1): which axes were swapped before the reshape?",
                name="head and feature axes swapped",
                hint="move the head axis next to d_head: (..., H, L, d_head) -> (..., L, H, d_head)",
                variant=lambda x: np.swapaxes(np.swapaxes(x, -3, -2), -1, -2).reshape(
                    *x.shape[:-3], x.shape[-2], x.shape[-3] * x.shape[-1]
                ),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 5.3 forward pass
def mha_reference(x, W_q, W_k, W_v, W_o, n_heads, mask=None, *, scale=None, use_w_o=True):
    """Multi-head attention with the package's core, used by chapters 5 and 6."""
    q = split_heads(x @ W_q, n_heads)  # (B, L, d_model) -> (B, H, L, d_head)
    k = split_heads(x @ W_k, n_heads)
    v = split_heads(x @ W_v, n_heads)
    if mask is not None:
        mask = np.asarray(mask, dtype=bool)
    heads, weights = sdpa(q, k, v, mask, scale=scale)  # (B, H, L, d_head), (B, H, L, L)
    out = merge_heads(heads)  # (B, L, d_model)
    return (out @ W_o if use_w_o else out), weights


def _mha_cases():
    rng = np.random.default_rng(503)

    def weights(d):
        return [rng.normal(size=(d, d)) / np.sqrt(d) for _ in range(4)]

    return grouped(
        "heads",
        Case(
            "B=1, L=3, d_model=4, 2 heads",
            x=rng.normal(size=(1, 3, 4)),
            **dict(zip(("W_q", "W_k", "W_v", "W_o"), weights(4))),
            n_heads=2,
        ),
        Case(
            "B=2, L=4, d_model=6, 3 heads",
            x=rng.normal(size=(2, 4, 6)),
            **dict(zip(("W_q", "W_k", "W_v", "W_o"), weights(6))),
            n_heads=3,
        ),
        Case(
            "B=2, L=1, d_model=4, 2 heads",
            x=rng.normal(size=(2, 1, 4)),
            **dict(zip(("W_q", "W_k", "W_v", "W_o"), weights(4))),
            n_heads=2,
        ),
    )


register(
    Exercise(
        id="ch05.multi_head_attention",
        number="5.3",
        title="the multi-head forward pass",
        points=4,
        hint="split after projecting, scale by sqrt(d_head), merge before W_o",
        function="multi_head_attention",
        description="Multi-head self-attention of `x (B, L, d_model)` with weight matrices `W_q`, "
        "`W_k`, `W_v`, `W_o` (each `(d_model, d_model)`, used as `x @ W`) and `n_heads` heads: return "
        "`(out (B, L, d_model), weights (B, n_heads, L, L))`.",
        solution='''
            def multi_head_attention(x, W_q, W_k, W_v, W_o, n_heads):
                """Multi-head self-attention: returns (out (B, L, d_model), weights (B, H, L, L))."""
                ### BEGIN SOLUTION
                d_head = x.shape[-1] // n_heads
                q = split_heads(x @ W_q, n_heads)  # (B, L, d_model) -> (B, H, L, d_head)
                k = split_heads(x @ W_k, n_heads)
                v = split_heads(x @ W_v, n_heads)
                scores = q @ np.swapaxes(k, -1, -2)  # (B, H, L, d_head) @ (B, H, d_head, L) -> (B, H, L, L)
                scores = scores / np.sqrt(d_head)  # each head scales by its own width
                weights = softmax(scores)  # each head has its own (L, L) weights
                out = merge_heads(weights @ v) @ W_o  # (B, H, L, d_head) -> (B, L, d_model) -> (B, L, d_model)
                return out, weights
                ### END SOLUTION
        ''',
        reference=mha_reference,
        public_cases=_mha_cases,
        outputs=("out", "weights"),
        distributions=("weights",),
        needs=MHA_NEEDS,
        diagnoses=(
            Diagnosis(
                D_MODEL_SCALE,
                variant=lambda x, W_q, W_k, W_v, W_o, h: mha_reference(
                    x, W_q, W_k, W_v, W_o, h, scale=1 / np.sqrt(x.shape[-1])
                ),
            ),
            Diagnosis(
                "out skips the output projection: multiply the merged heads by W_o",
                variant=lambda x, W_q, W_k, W_v, W_o, h: mha_reference(
                    x, W_q, W_k, W_v, W_o, h, use_w_o=False
                ),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 5.4 parameter count
def _count(d_model, n_heads, bias, matrices=4, per_head=False, biases=True):
    n = matrices * d_model * d_model + (matrices * d_model if bias and biases else 0)
    return n * n_heads if per_head else n


def _count_cases():
    return grouped(
        "counts",
        Case("d_model=8, 2 heads, with biases", d_model=8, n_heads=2, bias=True),
        Case("d_model=512, 8 heads, no biases", d_model=512, n_heads=8, bias=False),
    )


register(
    Exercise(
        id="ch05.mha_parameter_count",
        number="5.4",
        title="parameters of multi-head attention",
        points=1,
        hint="count the four weight matrices and their biases; do the heads add any?",
        function="mha_parameter_count",
        description="How many trainable numbers does multi-head attention with `d_model`, `n_heads` "
        "and (optional) biases hold? Compare with `sum(p.numel() for p in nn.MultiheadAttention(...).parameters())`.",
        solution='''
            def mha_parameter_count(d_model, n_heads, bias):
                """Trainable numbers in multi-head attention (W_Q, W_K, W_V, W_O and their biases)."""
                ### BEGIN SOLUTION
                weights = 4 * d_model * d_model  # W_Q, W_K, W_V, W_O: the heads share them
                biases = 4 * d_model if bias else 0
                return weights + biases  # n_heads does not appear
                ### END SOLUTION
        ''',
        reference=_count,
        public_cases=_count_cases,
        diagnoses=(
            Diagnosis(
                "the count does not depend on the number of heads: the heads split W_Q, W_K, W_V "
                "(each d_model x d_model) between them instead of having their own",
                variant=lambda d, h, b: _count(d, h, b, per_head=True),
            ),
            Diagnosis(
                "you left out W_O: there are four (d_model, d_model) matrices",
                variant=lambda d, h, b: _count(d, h, b, matrices=3),
            ),
            Diagnosis(
                "bias=True adds one d_model-long vector per projection: 4 * d_model more",
                variant=lambda d, h, b: _count(d, h, b, biases=False) if b else None,
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 5.5 from torch
def _from_torch_cases():
    rng = np.random.default_rng(505)
    return grouped(
        "weights",
        Case("d_model=4", in_proj_weight=rng.normal(size=(12, 4)), out_proj_weight=rng.normal(size=(4, 4))),
        Case("d_model=6", in_proj_weight=rng.normal(size=(18, 6)), out_proj_weight=rng.normal(size=(6, 6))),
    )


def _from_torch(in_proj_weight, out_proj_weight, transpose=True):
    W_q, W_k, W_v = np.split(in_proj_weight, 3, axis=0)
    if transpose:
        return W_q.T, W_k.T, W_v.T, out_proj_weight.T
    return W_q, W_k, W_v, out_proj_weight


register(
    Exercise(
        id="ch05.weights_from_torch",
        number="5.5",
        title="weights from nn.MultiheadAttention",
        points=2,
        hint="torch stacks q, k, v in in_proj_weight and computes x @ weight.T",
        function="weights_from_torch",
        description="`nn.MultiheadAttention` stores `in_proj_weight (3*d_model, d_model)` (the q, k, v "
        "blocks stacked) and `out_proj.weight (d_model, d_model)`, and computes `x @ weight.T`. Return "
        "`(W_q, W_k, W_v, W_o)` in this course's `x @ W` convention.",
        solution='''
            def weights_from_torch(in_proj_weight, out_proj_weight):
                """nn.MultiheadAttention's weights -> (W_q, W_k, W_v, W_o) for the x @ W convention."""
                ### BEGIN SOLUTION
                W_q, W_k, W_v = np.split(in_proj_weight, 3, axis=0)  # (3*d, d) -> three (d, d) blocks
                # nn.Linear computes x @ weight.T, so each block is transposed for x @ W
                return W_q.T, W_k.T, W_v.T, out_proj_weight.T
                ### END SOLUTION
        ''',
        reference=_from_torch,
        public_cases=_from_torch_cases,
        outputs=("W_q", "W_k", "W_v", "W_o"),
        diagnoses=(
            Diagnosis(
                "torch's Linear computes x @ weight.T: transpose each block (and out_proj_weight) for the x @ W convention",
                variant=lambda a, b: _from_torch(a, b, transpose=False),
            ),
            Diagnosis(
                "W_q, W_k, W_v are right but W_o is not: how does out_proj compute its output?",
                name="out_proj not transposed",
                hint="out_proj is an nn.Linear too: transpose its weight",
                variant=lambda a, b: _from_torch(a, b)[:3] + (b,),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 5.6 parameters (predict)
register(
    Exercise(
        id="ch05.predict_mha_parameters",
        number="5.6",
        title="predict a grouped-query layer's size",
        points=1,
        function="predict_mha_parameters",
        kind="predict",
        description="Exercise 5.4 counted a multi-head layer. Now share keys and values: $d_{model} = 512$, "
        "8 query heads of $d_{head} = 64$, but only 2 key/value heads (grouped-query attention, as in "
        "Exercise 5.7), no biases. $W_Q$ and $W_O$ stay $(512, 512)$; $W_K$ and $W_V$ make only the 2 "
        "shared heads. How many parameters? Return the count (exact).",
        solution='''
            def predict_mha_parameters():
                """Parameters of grouped-query attention: d_model 512, 8 query heads, 2 key/value heads."""
                ### BEGIN SOLUTION
                d_model, d_head, n_kv = 512, 64, 2
                # W_Q and W_O: (512, 512) each; W_K and W_V: (512, 2 * 64) each
                return 2 * d_model * d_model + 2 * d_model * n_kv * d_head
                ### END SOLUTION
        ''',
        reference=lambda: np.array(2 * 512 * 512 + 2 * 512 * 128),
        public_cases=lambda: grouped("the count", Case("d_model=512, 8 query heads, 2 key/value heads")),
        hint="W_K maps 512 features to the 2 shared heads' 2 * 64",
        diagnoses=(
            Diagnosis(
                "that is plain multi-head attention's count: the 2 shared key/value heads need smaller W_K and W_V",
                name="no sharing",
                hint="W_K and W_V are (512, 2 * 64), not (512, 512)",
                variant=lambda: np.array(4 * 512 * 512),
            ),
            Diagnosis(
                "W_O is missing: the heads' outputs still go through the output projection",
                name="forgot W_O",
                hint="W_O is (512, 512)",
                variant=lambda: np.array(512 * 512 + 2 * 512 * 128),
            ),
            Diagnosis(
                "only one of W_K and W_V was shrunk",
                name="one shared projection",
                hint="keys and values are both shared",
                variant=lambda: np.array(3 * 512 * 512 + 512 * 128),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 5.7 grouped-query (extend)
def _gqa_cases():
    rng = np.random.default_rng(507)
    n = rng.normal
    # one group: H // G and G differ in every case but the first, and L != S, so repeating by G,
    # np.tile for np.repeat or interleaved groups fail the group however the cases line up
    return grouped(
        "grouped heads",
        Case(
            "4 query heads, 2 key/value heads",
            q=n(size=(1, 4, 3, 2)),
            k=n(size=(1, 2, 5, 2)),
            v=n(size=(1, 2, 5, 3)),
        ),
        Case(
            "6 query heads, 3 key/value heads, B=2",
            q=n(size=(2, 6, 2, 4)),
            k=n(size=(2, 3, 2, 4)),
            v=n(size=(2, 3, 2, 4)),
        ),
        Case(
            "6 query heads, 2 key/value heads, L=2, S=4, Ev=3",
            q=n(size=(1, 6, 2, 2)),
            k=n(size=(1, 2, 4, 2)),
            v=n(size=(1, 2, 4, 3)),
        ),
    )


def _gqa(q, k, v, tile=False):
    group = q.shape[-3] // k.shape[-3]  # query heads per key/value head
    if tile:
        k, v = np.concatenate([k] * group, axis=-3), np.concatenate([v] * group, axis=-3)
    else:
        k, v = np.repeat(k, group, axis=-3), np.repeat(v, group, axis=-3)
    return sdpa(q, k, v)


register(
    Exercise(
        id="ch05.grouped_query_attention",
        number="5.7",
        title="grouped-query attention",
        points=4,
        function="grouped_query_attention",
        hint="query head h uses key/value head h // (H/G): give every query head its keys and values, then attend as usual",
        kind="extend",
        description="Grouped-query attention (GQA, used by Llama 2 70B and Mistral) keeps all `H` query "
        "heads but only `G` key/value heads, `H % G == 0`: query heads `0 .. H/G - 1` share key/value head "
        "0, the next `H/G` share head 1, and so on. This shrinks the keys and values (and the KV cache) "
        "by `H/G`. Given `q (B, H, L, d_head)`, `k (B, G, S, d_head)`, `v (B, G, S, Ev)`, return "
        "`(out (B, H, L, Ev), weights (B, H, L, S))` with scores scaled by $1/\\sqrt{d_{head}}$.",
        solution='''
            def grouped_query_attention(q, k, v):
                """GQA: H query heads share G key/value heads in consecutive groups of H // G."""
                ### BEGIN SOLUTION
                group = q.shape[1] // k.shape[1]  # query heads per key/value head
                k = np.repeat(k, group, axis=1)  # (B, G, S, d_head) -> (B, H, S, d_head): 0,0,1,1,...
                v = np.repeat(v, group, axis=1)  # (B, G, S, Ev) -> (B, H, S, Ev)
                scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])  # (B, H, L, d) @ (B, H, d, S) -> (B, H, L, S)
                weights = softmax(scores)
                return weights @ v, weights  # (B, H, L, S) @ (B, H, S, Ev) -> (B, H, L, Ev)
                ### END SOLUTION
        ''',
        reference=_gqa,
        public_cases=_gqa_cases,
        outputs=("out", "weights"),
        distributions=("weights",),
        needs=MHA_NEEDS,
        forbids=("torch.nn.functional.scaled_dot_product_attention",),
        diagnoses=(
            Diagnosis(
                "the groups are interleaved: query head h got key/value head h % G (np.tile). Consecutive "
                "query heads share one key/value head, h // (H // G): use np.repeat along the head axis",
                variant=lambda q, k, v: _gqa(q, k, v, tile=True),
            ),
            Diagnosis(
                D_MODEL_SCALE,
                variant=lambda q, k, v: sdpa(
                    q,
                    np.repeat(k, q.shape[1] // k.shape[1], axis=1),
                    np.repeat(v, q.shape[1] // k.shape[1], axis=1),
                    scale=1 / np.sqrt(q.shape[1] * q.shape[-1]),
                ),
            ),
        ),
    )
)
