"""Chapter 4 exercises: self-attention, its projections, permutation equivariance and its cost."""

from __future__ import annotations

import numpy as np

from .. import scaled_dot_product_attention as sdpa
from .. import softmax
from ._registry import Case, Diagnosis, Exercise, grouped, register

__all__: list = []


# ----------------------------------------------------------------------------- 4.1 projections
def _project_cases():
    rng = np.random.default_rng(401)
    n = rng.normal

    def weights(d_model, d_k, d_v):
        return {"W_q": n(size=(d_model, d_k)), "W_k": n(size=(d_model, d_k)), "W_v": n(size=(d_model, d_v))}

    # every group has a square case (W and W.T both fit) and a case where d_model, d_k, d_v differ
    return grouped(
        "shapes",
        Case("square weights (4, 4)", x=n(size=(3, 4)), **weights(4, 4, 4)),
        Case("d_model=4 -> d_k=2, d_v=3", x=n(size=(5, 4)), **weights(4, 2, 3)),
    ) + grouped(
        "batch dimensions",
        Case("a batch (2, 3, 4), square weights", x=n(size=(2, 3, 4)), **weights(4, 4, 4)),
        Case("batch and heads (2, 2, 3, 4), d_k=2, d_v=5", x=n(size=(2, 2, 3, 4)), **weights(4, 2, 5)),
    )


def _transposed_projection(x, W_q, W_k, W_v):
    if any(W.shape[0] != W.shape[1] for W in (W_q, W_k, W_v)):
        return None
    return x @ W_q.T, x @ W_k.T, x @ W_v.T


register(
    Exercise(
        id="ch04.project_qkv",
        number="4.1",
        title="queries, keys and values from x",
        points=1,
        hint="each projection is one matrix product with x on the left",
        function="project_qkv",
        description="Project the tokens `x (..., L, d_model)` with `W_q`, `W_k (d_model, d_k)` and "
        "`W_v (d_model, d_v)`; return `(q, k, v)`.",
        solution='''
            def project_qkv(x, W_q, W_k, W_v):
                """(q, k, v) = (x W_q, x W_k, x W_v) for x (..., L, d_model)."""
                ### BEGIN SOLUTION
                q = x @ W_q  # (..., L, d_model) @ (d_model, d_k) -> (..., L, d_k)
                k = x @ W_k  # (..., L, d_model) @ (d_model, d_k) -> (..., L, d_k)
                v = x @ W_v  # (..., L, d_model) @ (d_model, d_v) -> (..., L, d_v)
                return q, k, v
                ### END SOLUTION
        ''',
        reference=lambda x, W_q, W_k, W_v: (x @ W_q, x @ W_k, x @ W_v),
        public_cases=_project_cases,
        outputs=("q", "k", "v"),
        diagnoses=(
            Diagnosis(
                "multiplied by W transposed: with W of shape (d_model, d_k) the projection is x @ W",
                variant=_transposed_projection,
            ),
            Diagnosis(
                "k and v are both x @ W_q: which weight matrix makes each of the three?",
                name="one matrix for all three",
                hint="q = x @ W_q, k = x @ W_k, v = x @ W_v",
                variant=lambda x, W_q, W_k, W_v: (
                    (x @ W_q, x @ W_q, x @ W_q) if W_q.shape == W_k.shape == W_v.shape else None
                ),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 4.2 self-attention
def _self_attention(x, W_q, W_k, W_v, scale=None):
    return sdpa(x @ W_q, x @ W_k, x @ W_v, scale=scale)


def _self_attention_cases():
    rng = np.random.default_rng(402)
    n = rng.normal

    def weights(d_model, d_k, d_v, scale=1.0):
        return {
            "W_q": n(size=(d_model, d_k)) * scale,
            "W_k": n(size=(d_model, d_k)) * scale,
            "W_v": n(size=(d_model, d_v)),
        }

    # d_k differs from d_model and from d_v in every case: a scale by the wrong width shows
    return grouped(
        "shapes",
        Case("L=3, d_model=6, d_k=2, d_v=4", x=n(size=(3, 6)), **weights(6, 2, 4)),
        Case("L=5, d_model=4, d_k=3, d_v=2", x=n(size=(5, 4)), **weights(4, 3, 2)),
    ) + grouped(
        "batch dimensions",
        Case("a batch of 2, L=4, d_model=8, d_k=3, d_v=5", x=n(size=(2, 4, 8)), **weights(8, 3, 5, 0.5)),
        Case("batch and heads (2, 2, 3, 6), d_k=2, d_v=4", x=n(size=(2, 2, 3, 6)), **weights(6, 2, 4, 0.5)),
    )


register(
    Exercise(
        id="ch04.self_attention_forward",
        number="4.2",
        title="self-attention from x and its weights",
        points=3,
        hint="project first; then scaled dot-product attention of q, k, v",
        function="self_attention_forward",
        description="Self-attention of `x (..., L, d_model)`: project with `W_q`, `W_k (d_model, d_k)` "
        "and `W_v (d_model, d_v)`, scale the scores by $1/\\sqrt{d_k}$, and return `(out (..., L, d_v), "
        "weights (..., L, L))`.",
        solution='''
            def self_attention_forward(x, W_q, W_k, W_v):
                """Scaled self-attention of x (..., L, d_model): (out (..., L, d_v), weights (..., L, L))."""
                ### BEGIN SOLUTION
                q, k, v = x @ W_q, x @ W_k, x @ W_v  # (..., L, d_model) @ (d_model, d_k) -> (..., L, d_k)
                scores = q @ np.swapaxes(k, -1, -2)  # (..., L, d_k) @ (..., d_k, L) -> (..., L, L)
                scores = scores / np.sqrt(q.shape[-1])
                weights = softmax(scores)
                return weights @ v, weights  # (..., L, L) @ (..., L, d_v) -> (..., L, d_v)
                ### END SOLUTION
        ''',
        reference=_self_attention,
        public_cases=_self_attention_cases,
        outputs=("out", "weights"),
        distributions=("weights",),
        needs=("import numpy as np", "from attncourse import softmax"),
        diagnoses=(
            Diagnosis(
                "you scaled by sqrt(d_model), the width of x; the scores are dot products of d_k numbers, "
                "so scale by 1/sqrt(d_k)",
                variant=lambda x, W_q, W_k, W_v: _self_attention(
                    x, W_q, W_k, W_v, scale=1 / np.sqrt(x.shape[-1])
                ),
            ),
            Diagnosis(
                "the scores are unscaled: divide by sqrt(d_k)",
                variant=lambda x, W_q, W_k, W_v: _self_attention(x, W_q, W_k, W_v, scale=1.0),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 4.3 permutation
def _unpermute_cases():
    rng = np.random.default_rng(403)
    return grouped(
        "tokens",
        Case("L=3, a cycle", out_permuted=rng.normal(size=(3, 2)), perm=np.array([1, 2, 0])),
        Case("L=5", out_permuted=rng.normal(size=(5, 3)), perm=np.array([3, 0, 4, 1, 2])),
    ) + grouped(
        "batch dimensions",
        Case("a batch (2, 4, 4)", out_permuted=rng.normal(size=(2, 4, 4)), perm=np.array([2, 0, 3, 1])),
        Case(
            "batch and heads (3, 2, 3, 3)",
            out_permuted=rng.normal(size=(3, 2, 3, 3)),
            perm=np.array([1, 2, 0]),
        ),
    )


register(
    Exercise(
        id="ch04.unpermute",
        number="4.3",
        title="undo a permutation of the tokens",
        points=1,
        hint="undo a permutation with its inverse, np.argsort(perm)",
        function="unpermute",
        description="Self-attention without positions is permutation-equivariant: "
        "`attend(x[perm]) == attend(x)[perm]`. Given `out_permuted = attend(x)[perm]` (tokens on axis "
        "-2) and `perm`, return `attend(x)`: the rows back in their original order.",
        solution='''
            def unpermute(out_permuted, perm):
                """Undo out_permuted = out[..., perm, :]: return out (tokens on axis -2)."""
                ### BEGIN SOLUTION
                inverse = np.argsort(perm)  # row j of out went to position inverse[j]
                return out_permuted[..., inverse, :]  # (..., L, d): rows back in the original order
                ### END SOLUTION
        ''',
        reference=lambda out_permuted, perm: out_permuted[..., np.argsort(perm), :],
        public_cases=_unpermute_cases,
        diagnoses=(
            Diagnosis(
                "you applied the permutation again; undo it with its inverse, np.argsort(perm)",
                variant=lambda out_permuted, perm: out_permuted[..., perm, :],
            ),
            Diagnosis(
                "the rows are still in the permuted order: nothing was undone",
                name="returned unchanged",
                hint="index the rows with the inverse permutation, np.argsort(perm)",
                variant=lambda out_permuted, perm: (
                    None if np.array_equal(perm, np.arange(len(perm))) else out_permuted
                ),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 4.4 quadratic cost
def _bytes_cases():
    return grouped(
        "sizes",
        Case("B=1, H=1, L=4, float32", batch=1, n_heads=1, seq_len=4, bytes_per_element=4),
        Case("B=2, H=8, L=1024, float16", batch=2, n_heads=8, seq_len=1024, bytes_per_element=2),
        Case("B=3, H=2, L=5, float64", batch=3, n_heads=2, seq_len=5, bytes_per_element=8),
    )


register(
    Exercise(
        id="ch04.score_matrix_bytes",
        number="4.4",
        title="memory of the attention weights",
        points=1,
        hint="one L x L matrix per head and per batch element",
        function="score_matrix_bytes",
        description="How many bytes do the attention weights `(batch, n_heads, L, L)` take, at "
        "`bytes_per_element` bytes each? (The N^2 in attention's cost.)",
        solution='''
            def score_matrix_bytes(batch, n_heads, seq_len, bytes_per_element):
                """Bytes of the (batch, n_heads, L, L) attention weights."""
                ### BEGIN SOLUTION
                return batch * n_heads * seq_len * seq_len * bytes_per_element  # one L x L matrix per head
                ### END SOLUTION
        ''',
        reference=lambda batch, n_heads, seq_len, bytes_per_element: (
            batch * n_heads * seq_len**2 * bytes_per_element
        ),
        public_cases=_bytes_cases,
        diagnoses=(
            Diagnosis(
                "the weights form an L x L matrix: their size grows with the square of the sequence length",
                variant=lambda b, h, n, e: b * h * n * e,
            ),
            Diagnosis(
                "each head has its own L x L weights: multiply by n_heads",
                variant=lambda b, h, n, e: b * n * n * e,
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 4.5 parameters (predict)
register(
    Exercise(
        id="ch04.predict_projection_parameters",
        number="4.5",
        title="predict the projections' size",
        points=1,
        function="predict_projection_parameters",
        hint="what shape does each of W_Q, W_K and W_V have, and how many numbers does that hold?",
        kind="predict",
        description="Before running anything: a self-attention layer with $d_{model} = 512$ projects to "
        "$d_k = d_v = 64$ with three weight matrices $W_Q, W_K, W_V$ and no biases. How many numbers "
        "do the three hold together? Return the count (exact).",
        solution='''
            def predict_projection_parameters():
                """Entries of W_Q, W_K, W_V (d_model=512 -> d_k=d_v=64, no biases)."""
                ### BEGIN SOLUTION
                d_model, d_k, d_v = 512, 64, 64
                return d_model * d_k + d_model * d_k + d_model * d_v  # three (d_model, 64) matrices
                ### END SOLUTION
        ''',
        reference=lambda: np.array(3 * 512 * 64),
        public_cases=lambda: grouped("the count", Case("d_model=512, d_k=d_v=64")),
        diagnoses=(
            Diagnosis(
                "that is one matrix; there are three, W_Q, W_K and W_V", variant=lambda: np.array(512 * 64)
            ),
            Diagnosis(
                "each matrix maps d_model=512 to 64, so it is (512, 64), not (512, 512)",
                variant=lambda: np.array(3 * 512 * 512),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 4.6 symmetric scores (diagnose)
def _copy_paste_cases():
    rng = np.random.default_rng(406)
    n = rng.normal
    return grouped(
        "shapes",
        Case("L=4, d_model=6, d_k=3", x=n(size=(4, 6)), W_q=n(size=(6, 3)), W_k=n(size=(6, 3))),
        Case("square weights, L=3, d_model=d_k=4", x=n(size=(3, 4)), W_q=n(size=(4, 4)), W_k=n(size=(4, 4))),
    ) + grouped(
        "batch dimensions",
        Case(
            "a batch of 2, L=3, d_model=4, d_k=2", x=n(size=(2, 3, 4)), W_q=n(size=(4, 2)), W_k=n(size=(4, 2))
        ),
        Case(
            "batch and heads (2, 2, 3, 4), square weights",
            x=n(size=(2, 2, 3, 4)),
            W_q=n(size=(4, 4)),
            W_k=n(size=(4, 4)),
        ),
    )


def _symmetric_scores(weights):
    """Whether the softmax weights (..., L, L) come from symmetric scores.

    With s symmetric, log w_ij - log w_ji = log Z_j - log Z_i: the antisymmetric part of log w is a
    difference c_j - c_i, which its first row gives.
    """
    w = np.asarray(weights, dtype=np.float64)
    if w.ndim < 2 or w.shape[-1] != w.shape[-2] or w.shape[-1] < 2 or not (w > 0).all():
        return False
    log_w = np.log(w)
    a = log_w - np.swapaxes(log_w, -1, -2)
    row = a[..., :1, :]  # c_j - c_0
    return bool(np.allclose(a, row - np.swapaxes(row, -1, -2), atol=1e-4))


def _self_weights(x, W_q, W_k):
    q, k = x @ W_q, x @ W_k
    return softmax(q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1]))


register(
    Exercise(
        id="ch04.fix_symmetric_scores",
        number="4.6",
        title="scores that are always symmetric",
        points=2,
        function="self_attention_weights",
        hint="queries and keys need their own projections: the keys are x @ W_k",
        kind="diagnose",
        forbids=("torch.nn.functional.scaled_dot_product_attention",),
        description="This function should return the self-attention weights `(..., L, L)` of "
        "`x (..., L, d_model)`. Symptom: before the softmax the score matrix is always symmetric "
        "(token $i$ scores token $j$ exactly as $j$ scores $i$), whatever `W_k` is; changing `W_k` "
        "changes nothing. Find the bug and fix it.",
        solution='''
            def self_attention_weights(x, W_q, W_k):
                """Scaled self-attention weights (..., L, L) of x (..., L, d_model)."""
                q = x @ W_q  # (..., L, d_model) @ (d_model, d_k) -> (..., L, d_k)
                ### BEGIN SOLUTION
                k = x @ W_k  # (..., L, d_model) @ (d_model, d_k) -> (..., L, d_k)
                ### END SOLUTION
                scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])  # (..., L, d_k) @ (..., d_k, L) -> (..., L, L)
                return softmax(scores)
        ''',
        stub="k = x @ W_q  # (..., L, d_model) @ (d_model, d_k) -> (..., L, d_k)",
        reference=_self_weights,
        public_cases=_copy_paste_cases,
        distributions=("result",),
        needs=("import numpy as np", "from attncourse import softmax"),
        diagnoses=(
            Diagnosis(
                "the weights before the softmax are symmetric: token i scores token j exactly as j scores "
                "i. Which matrix makes the keys, and what would make q_i . k_j = q_j . k_i for every pair?",
                name="keys projected with W_q",
                hint="queries and keys need their own projections: k = x @ W_k",
                variant=lambda x, W_q, W_k: _self_weights(x, W_q, W_q),
            ),
            Diagnosis(
                "the scores before the softmax are still symmetric: token i scores token j exactly as j "
                "scores i. For q_i . k_j = q_j . k_i to hold for every pair, what must the queries and "
                "the keys have in common, and do yours still have it?",
                name="scores still symmetric",
                hint="the keys come from x and W_k alone, with nothing of W_q in them: k = x @ W_k",
                symptom=lambda outputs, x, W_q, W_k: _symmetric_scores(outputs[0]),
            ),
            Diagnosis(
                "the scores do not depend on W_k at all: what are the queries compared with?",
                name="keys not projected",
                hint="the keys must be projected too: q @ (x @ W_k)^T, not q @ x^T",
                variant=lambda x, W_q, W_k: (
                    softmax(x @ W_q @ np.swapaxes(x, -1, -2) / np.sqrt(W_q.shape[-1]))
                    if W_q.shape[0] == W_q.shape[1]
                    else None
                ),
            ),
        ),
    )
)
