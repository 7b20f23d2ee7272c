"""Chapter 6 exercises, continued: the causal leak (6.8), padded cross-attention (6.9) and the entropy under a mask (6.10)."""

from __future__ import annotations

import numpy as np

from .. import padding_mask
from .. import scaled_dot_product_attention as sdpa
from ._common import (
    INVERTED_MASK,
    NAN_FULLY_MASKED,
    nan_masked_softmax,
    swap,
)
from ._registry import Case, Diagnosis, Exercise, grouped, register

__all__: list = []

NEEDS = ("import numpy as np", "from attncourse import softmax")


# ----------------------------------------------------------------------------- 6.8 causal leak (diagnose)
def _leak_cases():
    rng = np.random.default_rng(608)
    n = rng.normal
    return grouped(
        "values",
        Case("L=4, E=3", q=n(size=(4, 3)), k=n(size=(4, 3)), v=n(size=(4, 2))),
    ) + grouped(
        "batch dimensions",
        Case("a batch of 2, L=3", q=n(size=(2, 3, 2)), k=n(size=(2, 3, 2)), v=n(size=(2, 3, 3))),
        Case(
            "batch and heads (2, 2), L=3",
            q=n(size=(2, 2, 3, 4)),
            k=n(size=(2, 2, 3, 4)),
            v=n(size=(2, 2, 3, 2)),
        ),
    )


def _leaky(q, k, v, diagonal):
    L = q.shape[-2]
    return sdpa(q, k, v, np.tril(np.ones((L, L), dtype=bool), k=diagonal))


register(
    Exercise(
        id="ch06.fix_causal_leak",
        number="6.8",
        title="a decoder that peeks",
        points=2,
        function="decoder_attention",
        hint="query i may see keys 0..i: the lower triangle with the diagonal and nothing above it",
        kind="diagnose",
        forbids=("torch.nn.functional.scaled_dot_product_attention",),
        description="A small language model trained with this causal self-attention reaches almost zero "
        "training loss, then generates nonsense. Changing the token at position $t + 1$ changes the "
        "output at position $t$. Find the leak in the function (it returns `(out, weights)`, shaped "
        "`(..., L, Ev)` and `(..., L, L)`) and fix it; `softmax` is handed out, PyTorch's attention "
        "functions are not.",
        solution='''
            def decoder_attention(q, k, v):
                """Causal self-attention: query t sees keys 0..t. Returns (out, weights)."""
                L = q.shape[-2]
                ### BEGIN SOLUTION
                allowed = np.tril(np.ones((L, L), dtype=bool))  # True on and below the diagonal
                ### END SOLUTION
                scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])  # (..., L, E) @ (..., E, L) -> (..., L, L)
                weights = softmax(np.where(allowed, scores, -np.inf))
                return weights @ v, weights  # (..., L, L) @ (..., L, Ev) -> (..., L, Ev)
        ''',
        stub="allowed = np.tril(np.ones((L, L), dtype=bool), k=1)",
        reference=lambda q, k, v: _leaky(q, k, v, 0),
        public_cases=_leak_cases,
        outputs=("out", "weights"),
        distributions=("weights",),
        needs=NEEDS,
        diagnoses=(
            Diagnosis(
                "query t puts weight on key t + 1, one step in its future: during training each position "
                "could copy the very token it should predict. Which diagonal does your mask keep last?",
                name="causal off by one (sees the next token)",
                hint="the last allowed key of query t is t itself: np.tril(...) with k=0",
                variant=lambda q, k, v: _leaky(q, k, v, 1),
            ),
            Diagnosis(
                "query t gives key t no weight: may a token attend to itself?",
                name="causal off by one (misses itself)",
                hint="the diagonal must stay True (k=0)",
                variant=lambda q, k, v: _leaky(q, k, v, -1) if q.shape[-2] > 1 else None,
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 6.9 padded cross-attention (extend)
def _padded_cross_cases():
    rng = np.random.default_rng(609)
    n = rng.normal
    return grouped(
        "values",
        Case(
            "B=2, L=3 queries, S=4 keys, lengths [4, 2]",
            q=n(size=(2, 3, 4)),
            k=n(size=(2, 4, 4)),
            v=n(size=(2, 4, 2)),
            key_lengths=np.array([4, 2]),
        ),
        Case(
            "B=2, more queries than keys: L=4, S=2, lengths [1, 2]",
            q=n(size=(2, 4, 3)),
            k=n(size=(2, 2, 3)),
            v=n(size=(2, 2, 2)),
            key_lengths=np.array([1, 2]),
        ),
    ) + grouped(
        "fully padded sources",
        Case(
            "B=2, L=2, S=5, one source fully padded",
            q=n(size=(2, 2, 3)),
            k=n(size=(2, 5, 3)),
            v=n(size=(2, 5, 3)),
            key_lengths=np.array([3, 0]),
        ),
    )


def _padded_cross(q, k, v, key_lengths):
    mask = padding_mask(np.asarray(key_lengths), k.shape[-2])[:, None, :]  # (B, S) -> (B, 1, S)
    return sdpa(q, k, v, mask)


def _padded_queries(q, k, v, key_lengths):
    L, S = q.shape[-2], k.shape[-2]
    if L == S:
        return None
    rows = np.arange(L)[None, :, None] < np.asarray(key_lengths)[:, None, None]  # (B, L, 1): masks queries
    return sdpa(q, k, v, rows)


register(
    Exercise(
        id="ch06.padded_cross_attention",
        number="6.9",
        title="cross-attention over padded sources",
        points=3,
        function="padded_cross_attention",
        hint="mask the keys past each source's length, (B, 1, S), the same for every query; -inf before the softmax, all zeros for a source with no real token",
        kind="extend",
        forbids=("torch.nn.functional.scaled_dot_product_attention",),
        description="A decoder's queries `q (B, L, E)` attend to an encoder's keys and values "
        "`k (B, S, E)`, `v (B, S, Ev)`, where source sequence `b` has `key_lengths[b]` real tokens and "
        "padding after them ($L \\ne S$ in general). Build the mask yourself and return scaled "
        "`(out (B, L, Ev), weights (B, L, S))`. No weight may fall on padding, and a source with "
        "no real tokens gives all-zero weights and outputs. `softmax` is handed out; PyTorch's "
        "attention functions are not.",
        solution='''
            def padded_cross_attention(q, k, v, key_lengths):
                """Scaled cross-attention of q (B, L, E) over padded k (B, S, E), v (B, S, Ev)."""
                ### BEGIN SOLUTION
                S = k.shape[-2]
                real = np.arange(S)[None, :] < np.asarray(key_lengths)[:, None]  # (1, S) < (B, 1) -> (B, S)
                mask = real[:, None, :]  # (B, S) -> (B, 1, S): the same keys for every query
                scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])  # (B, L, E) @ (B, E, S) -> (B, L, S)
                weights = softmax(np.where(mask, scores, -np.inf))  # a fully padded source: all zeros
                return weights @ v, weights  # (B, L, S) @ (B, S, Ev) -> (B, L, Ev)
                ### END SOLUTION
        ''',
        reference=_padded_cross,
        public_cases=_padded_cross_cases,
        outputs=("out", "weights"),
        distributions=("weights",),
        needs=NEEDS,
        diagnoses=(
            Diagnosis(
                "you masked queries, not keys: padding is in the source, so it is the columns (keys) of "
                "the (L, S) weights that must get weight 0, shaped (B, 1, S)",
                variant=_padded_queries,
            ),
            Diagnosis(
                INVERTED_MASK,
                variant=lambda q, k, v, n: sdpa(
                    q, k, v, ~padding_mask(np.asarray(n), k.shape[-2])[:, None, :]
                ),
            ),
            Diagnosis(
                NAN_FULLY_MASKED,
                variant=lambda q, k, v, n: (
                    nan_masked_softmax(
                        q @ swap(k) / np.sqrt(q.shape[-1]),
                        padding_mask(np.asarray(n), k.shape[-2])[:, None, :],
                    )
                    @ v,
                    nan_masked_softmax(
                        q @ swap(k) / np.sqrt(q.shape[-1]),
                        padding_mask(np.asarray(n), k.shape[-2])[:, None, :],
                    ),
                ),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 6.10 entropy under a mask (derive)
def _uniform_entropy(lengths, S):
    lengths = np.asarray(lengths, dtype=np.float64)
    return np.log(np.where(lengths > 0, lengths, 1.0))  # a row with nothing to attend to: zeros, entropy 0


register(
    Exercise(
        id="ch06.masked_uniform_entropy",
        number="6.10",
        title="the entropy of a padded query's weights",
        points=1,
        function="masked_uniform_entropy",
        hint="with n visible keys and equal scores, what is each visible weight, and what is the entropy of n equal weights?",
        kind="derive",
        description="Every score in a row is the same, and a padding mask leaves the first `lengths[b]` "
        "of the `S` keys visible. Derive the entropy $-\\sum_j p_j \\ln p_j$ (nats) of the masked softmax "
        "weights of each row as a closed form in `lengths` (and `S`, if it matters), and return it, "
        "one value per row, shape `lengths.shape`. A row with nothing to attend to has all-zero "
        "weights: entropy 0. numpy; no attncourse function.",
        solution='''
            def masked_uniform_entropy(lengths, S):
                """Entropy (nats) of masked softmax weights over equal scores with lengths[b] visible keys."""
                ### BEGIN SOLUTION
                # n equal visible scores -> weight 1/n each: -n * (1/n) log(1/n) = log n; S does not matter
                n = np.asarray(lengths, dtype=float)
                return np.log(np.where(n > 0, n, 1.0))  # no visible key: all-zero weights, entropy 0
                ### END SOLUTION
        ''',
        reference=_uniform_entropy,
        public_cases=lambda: grouped(
            "entropies",
            Case("lengths [4, 2, 1], S=4", lengths=np.array([4, 2, 1]), S=4),
            Case("lengths [5, 9], S=9", lengths=np.array([5, 9]), S=9),
            Case("lengths [0, 7]: a fully padded row, S=7", lengths=np.array([0, 7]), S=7),
        ),
        diagnoses=(
            Diagnosis(
                "the masked keys get weight 0, so only the visible ones count: the entropy is log(lengths), "
                "not log(S)",
                variant=lambda lengths, S: np.full(np.shape(lengths), np.log(S)),
            ),
            Diagnosis(
                "that is in bits (log base 2); this course measures entropy in nats: np.log",
                variant=lambda lengths, S: _uniform_entropy(lengths, S) / np.log(2),
            ),
        ),
    )
)
