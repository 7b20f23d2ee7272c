"""Appendix A exercises: spot the bug.

The student version of each cell shows working-looking code with one classic bug (the ``stub``);
the student returns the function fixed.  The diagnoses recognise the bug itself, so checking the
unfixed code already explains what is wrong.
"""

from __future__ import annotations

import numpy as np

from .. import causal_mask, softmax, split_heads
from .. import scaled_dot_product_attention as sdpa
from ._common import D_MODEL_SCALE, INVERTED_MASK, swap
from ._method import RegisteredHeads
from ._registry import Case, Diagnosis, Exercise, grouped, register

__all__: list = []

TORCH_NEEDS = ("import torch", "from torch import nn")


# ----------------------------------------------------------------------------- A.1 transpose typo
def _transpose_cases():
    rng = np.random.default_rng(901)
    return grouped(
        "shape",
        Case("L=2, S=3, E=4", q=rng.normal(size=(2, 4)), k=rng.normal(size=(3, 4))),
        Case("a batch of 2, L=S=3, E=2", q=rng.normal(size=(2, 3, 2)), k=rng.normal(size=(2, 3, 2))),
        Case("batch (2, 2), L=3, S=2, E=3", q=rng.normal(size=(2, 2, 3, 3)), k=rng.normal(size=(2, 2, 2, 3))),
    ) + grouped(
        "dtype",
        Case(
            "float32, L=2, S=4, E=3",
            q=rng.normal(size=(2, 3)).astype(np.float32),
            k=rng.normal(size=(4, 3)).astype(np.float32),
        ),
    )


register(
    Exercise(
        id="bugs.transpose_typo",
        number="A.1",
        title="a transpose that does not transpose",
        points=2,
        function="attention_scores",
        hint="transpose takes two axes: the last two, -2 and -1",
        kind="diagnose",
        description="This function should return the scaled scores `q @ k^T / sqrt(E)` for torch "
        "tensors `q (..., L, E)` and `k (..., S, E)`. It fails. Fix it.",
        solution='''
            def attention_scores(q, k):
                """Scaled scores q k^T / sqrt(E) for torch tensors q (..., L, E), k (..., S, E)."""
                ### BEGIN SOLUTION
                return q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5  # (..., L, E) @ (..., E, S) -> (..., L, S)
                ### END SOLUTION
        ''',
        stub="return q @ k.transpose(-1-2) / q.shape[-1] ** 0.5  # (..., L, E) @ (..., E, S) -> (..., L, S)",
        reference=lambda q, k: q @ swap(k) / np.sqrt(q.shape[-1]),
        public_cases=_transpose_cases,
        needs=TORCH_NEEDS,
        array_kind="torch",
        diagnoses=(
            Diagnosis(
                "transpose() complained about its arguments: how many numbers did you pass it? "
                "Evaluate the expression inside the parentheses by hand",
                name="one axis instead of two",
                hint="-1-2 is one number, -3: pass the two axes separated by a comma",
                error=r"transpose\(\).*(missing|invalid|argument)|axes don't match",
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- A.2 head scale
def _head_weights(x, W_q, W_k, n_heads, scale=None):
    q = split_heads(x @ W_q, n_heads)  # (B, H, L, d_head)
    k = split_heads(x @ W_k, n_heads)
    if scale is None:
        scale = 1 / np.sqrt(q.shape[-1])
    return softmax(q @ swap(k) * scale)


def _head_cases():
    rng = np.random.default_rng(902)
    return grouped(
        "heads",
        Case(
            "B=1, L=3, d_model=8, 2 heads",
            x=rng.normal(size=(1, 3, 8)),
            W_q=rng.normal(size=(8, 8)),
            W_k=rng.normal(size=(8, 8)),
            n_heads=2,
        ),
        Case(
            "B=2, L=4, d_model=12, 4 heads",
            x=rng.normal(size=(2, 4, 12)),
            W_q=rng.normal(size=(12, 12)),
            W_k=rng.normal(size=(12, 12)),
            n_heads=4,
        ),
    )


register(
    Exercise(
        id="bugs.head_scale",
        number="A.2",
        title="the scale of a head",
        points=2,
        function="head_weights",
        hint="each head's scores are dot products of d_head numbers: scale by sqrt(d_head)",
        kind="diagnose",
        description="Per-head attention weights `(B, H, L, L)` of `x (B, L, d_model)`. The heads come "
        "out too flat. Fix it.",
        solution='''
            def head_weights(x, W_q, W_k, n_heads):
                """Per-head attention weights (B, H, L, L) of x (B, L, d_model)."""
                B, L, d_model = x.shape
                d_head = d_model // n_heads
                q = (x @ W_q).reshape(B, L, n_heads, d_head).swapaxes(1, 2)  # -> (B, H, L, d_head)
                k = (x @ W_k).reshape(B, L, n_heads, d_head).swapaxes(1, 2)
                scores = q @ k.swapaxes(-1, -2)  # (B, H, L, d_head) @ (B, H, d_head, L) -> (B, H, L, L)
                ### BEGIN SOLUTION
                scores = scores / np.sqrt(d_head)
                ### END SOLUTION
                return softmax(scores)
        ''',
        stub="scores = scores / np.sqrt(d_model)",
        reference=_head_weights,
        public_cases=_head_cases,
        distributions=("result",),
        needs=("import numpy as np", "from attncourse import softmax"),
        diagnoses=(
            Diagnosis(
                D_MODEL_SCALE,
                variant=lambda x, W_q, W_k, h: _head_weights(x, W_q, W_k, h, scale=1 / np.sqrt(x.shape[-1])),
            ),
            Diagnosis(
                "the heads are sharper than expected: is there any scale left?",
                name="no scale",
                hint="divide each head's scores by sqrt(d_head)",
                variant=lambda x, W_q, W_k, h: _head_weights(x, W_q, W_k, h, scale=1.0),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- A.3 mask polarity
def _causal_cases():
    rng = np.random.default_rng(903)
    return grouped(
        "shape",
        Case("L=S=3", q=rng.normal(size=(3, 4)), k=rng.normal(size=(3, 4)), v=rng.normal(size=(3, 2))),
        Case(
            "a batch of 2, L=S=4",
            q=rng.normal(size=(2, 4, 4)),
            k=rng.normal(size=(2, 4, 4)),
            v=rng.normal(size=(2, 4, 3)),
        ),
        Case(
            "batch (2, 2), L=S=3",
            q=rng.normal(size=(2, 2, 3, 2)),
            k=rng.normal(size=(2, 2, 3, 2)),
            v=rng.normal(size=(2, 2, 3, 2)),
        ),
    ) + grouped(
        "dtype",
        Case(
            "float32, L=S=3",
            q=rng.normal(size=(3, 2)).astype(np.float32),
            k=rng.normal(size=(3, 2)).astype(np.float32),
            v=rng.normal(size=(3, 2)).astype(np.float32),
        ),
    )


def _masked_late(q, k, v):
    allowed = causal_mask(q.shape[-2], k.shape[-2])
    w = softmax(q @ swap(k) / np.sqrt(q.shape[-1])) * allowed
    return w @ v, w


def _causal_attention(q, k, v, invert=False):
    allowed = causal_mask(q.shape[-2], k.shape[-2])
    return sdpa(q, k, v, ~allowed if invert else allowed)


register(
    Exercise(
        id="bugs.mask_polarity",
        number="A.3",
        title="a causal mask the wrong way round",
        points=2,
        function="causal_attention",
        hint="True means may attend: keep the score where the mask is True, -inf elsewhere",
        kind="diagnose",
        description="Causal self-attention returning `(out, weights)`: each query should see itself and "
        "the keys before it. The weights look upside down. Fix it.",
        solution='''
            def causal_attention(q, k, v):
                """Causal attention (query i sees keys 0..i): returns (out, weights)."""
                L, S = q.shape[-2], k.shape[-2]
                allowed = np.tril(np.ones((L, S), dtype=bool))  # True = may attend
                scores = q @ np.swapaxes(k, -1, -2)  # (..., L, E) @ (..., E, S) -> (..., L, S)
                scores = scores / np.sqrt(q.shape[-1])
                ### BEGIN SOLUTION
                scores = np.where(allowed, scores, -np.inf)  # keep the allowed scores, block the rest
                ### END SOLUTION
                weights = softmax(scores)
                return weights @ v, weights  # (..., L, S) @ (..., S, Ev) -> (..., L, Ev)
        ''',
        stub="scores = np.where(allowed, -np.inf, scores)  # keep the allowed scores, block the rest",
        reference=_causal_attention,
        public_cases=_causal_cases,
        outputs=("out", "weights"),
        distributions=("weights",),
        needs=("import numpy as np", "from attncourse import softmax"),
        diagnoses=(
            Diagnosis(INVERTED_MASK, variant=lambda q, k, v: _causal_attention(q, k, v, invert=True)),
            Diagnosis(
                "the rows of the weights no longer sum to 1: the blocked keys' weight was removed after "
                "the softmax had shared it out. Where must the mask act?",
                name="masked after the softmax",
                hint="block the scores (with -inf) before the softmax",
                variant=lambda q, k, v: _masked_late(q, k, v),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- A.4 plain list
def _count_cases():
    return grouped(
        "counts",
        Case("d_model=8, 2 heads", d_model=8, n_heads=2),
        Case("d_model=12, 3 heads", d_model=12, n_heads=3),
    )


register(
    Exercise(
        id="bugs.plain_list",
        number="A.4",
        title="layers the optimizer cannot see",
        points=2,
        function="count_parameters",
        hint="a plain list hides its layers from parameters(): hold them in an nn.ModuleList",
        kind="diagnose",
        description="A module with one `nn.Linear` per head; `count_parameters` counts what "
        "`model.parameters()` finds (and so what an optimizer would train). It finds nothing. Fix the module.",
        solution='''
            class PerHeadProjections(nn.Module):
                """One query projection (d_model -> d_head) per head."""

                def __init__(self, d_model, n_heads):
                    super().__init__()
                    d_head = d_model // n_heads
                    ### BEGIN SOLUTION
                    self.heads = nn.ModuleList([nn.Linear(d_model, d_head) for _ in range(n_heads)])
                    ### END SOLUTION

                def forward(self, x):
                    return torch.cat([head(x) for head in self.heads], dim=-1)  # -> (B, L, d_model)


            def count_parameters(d_model, n_heads):
                """How many numbers model.parameters() yields (what an optimizer would train)."""
                model = PerHeadProjections(d_model, n_heads)
                return sum(p.numel() for p in model.parameters())
        ''',
        stub="self.heads = [nn.Linear(d_model, d_head) for _ in range(n_heads)]",
        reference=lambda d_model, n_heads: d_model * d_model + d_model,
        public_cases=_count_cases,
        needs=TORCH_NEEDS,
        method=lambda: RegisteredHeads(
            "PerHeadProjections", lambda d_model, n_heads: d_model * d_model + d_model
        ),
        diagnoses=(
            Diagnosis(
                "model.parameters() found no parameters, though the module builds one nn.Linear per head: "
                "how does an nn.Module find the layers it holds?",
                name="layers in a plain list",
                hint="layers in a plain Python list are invisible to nn.Module: use the container torch provides for them",
                variant=lambda d_model, n_heads: 0,
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- A.5 swapped q and k
def _swapped_cases():
    rng = np.random.default_rng(905)
    return grouped(
        "shape",
        Case("L=2 queries, S=4 keys", q=rng.normal(size=(2, 3)), k=rng.normal(size=(4, 3))),
        Case("L=S=3", q=rng.normal(size=(3, 2)), k=rng.normal(size=(3, 2))),
        Case("L=4 queries, S=2 keys", q=rng.normal(size=(4, 2)), k=rng.normal(size=(2, 2))),
    )


register(
    Exercise(
        id="bugs.swapped_qk",
        number="A.5",
        title="queries and keys swapped",
        points=1,
        function="cross_attention_weights",
        hint="the scores are (L, S): the queries on the left, q @ k.T",
        kind="diagnose",
        description="Attention weights `(L, S)` of queries `q (L, E)` over keys `k (S, E)`. The shape "
        "is wrong whenever L != S. Fix it.",
        solution='''
            def cross_attention_weights(q, k):
                """Scaled attention weights (L, S) of queries q (L, E) over keys k (S, E)."""
                ### BEGIN SOLUTION
                scores = q @ k.T / np.sqrt(q.shape[-1])  # (L, E) @ (E, S) -> (L, S)
                ### END SOLUTION
                return softmax(scores)
        ''',
        stub="scores = k @ q.T / np.sqrt(q.shape[-1])  # (L, E) @ (E, S) -> (L, S)",
        reference=lambda q, k: softmax(q @ k.T / np.sqrt(q.shape[-1])),
        public_cases=_swapped_cases,
        distributions=("result",),
        needs=("import numpy as np", "from attncourse import softmax"),
        diagnoses=(
            Diagnosis(
                "the shape is right but each column sums to 1, not each row: over which axis was the "
                "softmax taken?",
                name="softmax over the queries",
                hint="one row per query, normalised over the keys: softmax(q @ k.T / sqrt(E), axis=-1)",
                variant=lambda q, k: softmax(q @ k.T / np.sqrt(q.shape[-1]), axis=0),
            ),
            Diagnosis(
                "the weights have one row per key and one column per query: which of q and k gives the rows?",
                name="q and k swapped",
                hint="one row per query: the query matrix goes on the left of the product",
                variant=lambda q, k: softmax(k @ q.T / np.sqrt(q.shape[-1])),
            ),
        ),
    )
)
