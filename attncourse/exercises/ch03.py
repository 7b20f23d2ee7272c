"""Chapter 3 exercises: scaling the scores by 1/sqrt(d_k)."""

from __future__ import annotations

import numpy as np

from .. import scaled_dot_product_attention as sdpa
from ._common import swap
from ._registry import Case, Diagnosis, Exercise, register

__all__: list = []

UNSCALED = "these scores are unscaled: divide by sqrt(E), the width of q and k"
DIVIDED_BY_E = "divided by E; divide by sqrt(E) (the scores' variance is E, their standard deviation sqrt(E))"
TIMES_SQRT = "multiplied by sqrt(E); divide by it"


# ----------------------------------------------------------------------------- 3.1 scaled scores
def _scores(q, k, scale):
    return q @ swap(k) * scale


def _scores_cases():
    rng = np.random.default_rng(301)
    return [
        Case("L=3, S=5, E=4", q=rng.normal(size=(3, 4)), k=rng.normal(size=(5, 4))),
        Case("a batch of 2, E=9", q=rng.normal(size=(2, 2, 9)), k=rng.normal(size=(2, 3, 9))),
    ]


register(
    Exercise(
        id="ch03.scaled_scores",
        number="3.1",
        title="scaled scores",
        points=1,
        hint="q k^T, divided by the square root of the last dimension",
        function="scaled_scores",
        description="The scores $q k^\\top / \\sqrt{E}$ for `q (..., L, E)` and `k (..., S, E)`.",
        solution='''
            def scaled_scores(q, k):
                """Scores q k^T / sqrt(E): (..., L, E), (..., S, E) -> (..., L, S)."""
                ### BEGIN SOLUTION
                E = q.shape[-1]
                return q @ np.swapaxes(k, -1, -2) / np.sqrt(E)  # (..., L, E) @ (..., E, S) -> (..., L, S)
                ### END SOLUTION
        ''',
        reference=lambda q, k: _scores(q, k, 1 / np.sqrt(q.shape[-1])),
        public_cases=_scores_cases,
        diagnoses=(
            Diagnosis(UNSCALED, variant=lambda q, k: _scores(q, k, 1.0)),
            Diagnosis(DIVIDED_BY_E, variant=lambda q, k: _scores(q, k, 1 / q.shape[-1])),
            Diagnosis(TIMES_SQRT, variant=lambda q, k: _scores(q, k, np.sqrt(q.shape[-1]))),
        ),
    )
)


# ----------------------------------------------------------------------------- 3.2 variance
def _variances(q, k, ddof=0):
    scores = (q * k).sum(axis=-1)
    return scores.var(ddof=ddof), (scores / np.sqrt(q.shape[-1])).var(ddof=ddof)


def _variance_cases():
    rng = np.random.default_rng(302)
    return [
        Case("N=2000 pairs, E=16", q=rng.normal(size=(2000, 16)), k=rng.normal(size=(2000, 16))),
        Case("N=500 pairs, E=4", q=rng.normal(size=(500, 4)), k=rng.normal(size=(500, 4))),
    ]


def _all_pairs(q, k):
    scores = q @ k.T
    return scores.var(), (scores / np.sqrt(q.shape[-1])).var()


register(
    Exercise(
        id="ch03.score_variance",
        number="3.2",
        title="the variance of the scores",
        points=2,
        hint="one dot product per row pair, then .var() before and after scaling",
        function="score_variance",
        description="Row `i` of `q (N, E)` and row `i` of `k (N, E)` are one sampled (query, key) pair. "
        "Return the variance (numpy's `var`, ddof=0) of the N dot products, unscaled and scaled by "
        "$1/\\sqrt{E}$. For standard normal entries the first is close to E, the second close to 1.",
        solution='''
            def score_variance(q, k):
                """(variance of the N dot products q[i] . k[i], the same after scaling by 1/sqrt(E))."""
                ### BEGIN SOLUTION
                scores = (q * k).sum(axis=-1)  # (N, E) -> (N,): one dot product per pair
                return scores.var(), (scores / np.sqrt(q.shape[-1])).var()
                ### END SOLUTION
        ''',
        reference=_variances,
        public_cases=_variance_cases,
        outputs=("unscaled", "scaled"),
        diagnoses=(
            Diagnosis(
                "used the sample variance (ddof=1); this exercise uses numpy's default, ddof=0",
                variant=lambda q, k: _variances(q, k, ddof=1),
            ),
            Diagnosis(
                "you used every pair (q @ k.T); pair row i of q with row i of k only",
                variant=_all_pairs,
            ),
            Diagnosis(
                "returned standard deviations; the exercise asks for variances",
                variant=lambda q, k: tuple(np.sqrt(v) for v in _variances(q, k)),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 3.3 scaled attention
def _attention_cases():
    rng = np.random.default_rng(303)
    return [
        Case(
            "L=2, S=3, E=4, Ev=6",
            q=rng.normal(size=(2, 4)),
            k=rng.normal(size=(3, 4)),
            v=rng.normal(size=(3, 6)),
        ),
        Case(
            "a batch of 2, E=16, Ev=4",
            q=rng.normal(size=(2, 3, 16)),
            k=rng.normal(size=(2, 5, 16)),
            v=rng.normal(size=(2, 5, 4)),
        ),
    ]


register(
    Exercise(
        id="ch03.scaled_attention",
        number="3.3",
        title="scaled dot-product attention",
        points=3,
        hint="scale the scores before the softmax, not after",
        function="scaled_attention",
        description="Attention with the scores scaled by $1/\\sqrt{E}$: return `(out, weights)` for "
        "`q (..., L, E)`, `k (..., S, E)`, `v (..., S, Ev)`.",
        solution='''
            def scaled_attention(q, k, v):
                """softmax(q k^T / sqrt(E)) v: returns (out (..., L, Ev), weights (..., L, S))."""
                ### BEGIN SOLUTION
                scores = q @ np.swapaxes(k, -1, -2)  # (..., L, E) @ (..., E, S) -> (..., L, S)
                scores = scores / np.sqrt(q.shape[-1])
                weights = softmax(scores)
                return weights @ v, weights  # (..., L, S) @ (..., S, Ev) -> (..., L, Ev)
                ### END SOLUTION
        ''',
        reference=lambda q, k, v: sdpa(q, k, v),
        public_cases=_attention_cases,
        outputs=("out", "weights"),
        distributions=("weights",),
        needs=("import numpy as np", "from attncourse import softmax"),
        diagnoses=(
            Diagnosis(
                "you scaled by sqrt(Ev), the width of the values; the scale uses E, the width of q and k",
                variant=lambda q, k, v: sdpa(q, k, v, scale=1 / np.sqrt(v.shape[-1])),
            ),
            Diagnosis(UNSCALED, variant=lambda q, k, v: sdpa(q, k, v, scale=1.0)),
            Diagnosis(DIVIDED_BY_E, variant=lambda q, k, v: sdpa(q, k, v, scale=1 / q.shape[-1])),
        ),
    )
)
