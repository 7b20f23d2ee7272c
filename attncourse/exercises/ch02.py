"""Chapter 2 exercises: dot-product attention (unscaled; scaling is chapter 3)."""

from __future__ import annotations

import numpy as np

from .. import scaled_dot_product_attention as sdpa
from .. import softmax
from ._common import swap
from ._registry import SHARED_MISTAKES, Case, Diagnosis, Exercise, grouped, register

__all__: list = []

NEEDS = ("import numpy as np", "from attncourse import softmax")
SCALED_TOO_EARLY = (
    "the weights are flatter than expected by a factor that depends on E: is attention in this chapter "
    "scaled at all?"
)
SHARED_MISTAKES[SCALED_TOO_EARLY] = (
    "scaled too early",
    "in this chapter attention is unscaled (the 1/sqrt(E) comes in chapter 3)",
)


def _attend(q, k, v, scale=1.0):
    return sdpa(q, k, v, scale=scale)


# ----------------------------------------------------------------------------- 2.1 one query
def _query_cases():
    rng = np.random.default_rng(201)
    return grouped(
        "weights",
        Case("E=3, S=4", q=rng.normal(size=3), k=rng.normal(size=(4, 3))),
        Case("two keys", q=np.array([1.0, 0.0]), k=np.array([[2.0, 0.0], [0.0, 2.0]])),
        Case("large scores", q=np.array([40.0, 30.0]), k=np.array([[20.0, 0.0], [0.0, 20.0], [9.0, 9.0]])),
    )


register(
    Exercise(
        id="ch02.query_weights",
        number="2.1",
        title="weights for one query",
        points=1,
        hint="one dot product per key, then a softmax",
        function="query_weights",
        description="One query `q` of shape (E,) against keys `k` of shape (S, E): return the S "
        "attention weights, the softmax of the dot products.",
        solution='''
            def query_weights(q, k):
                """Attention weights (S,) of one query q (E,) over keys k (S, E); unscaled."""
                ### BEGIN SOLUTION
                scores = k @ q  # (S, E) @ (E,) -> (S,): one dot product per key
                return softmax(scores)
                ### END SOLUTION
        ''',
        reference=lambda q, k: softmax(k @ q),
        public_cases=_query_cases,
        distributions=("result",),
        needs=NEEDS,
        diagnoses=(
            Diagnosis(
                "these are the raw scores k . q; turn them into weights with softmax",
                variant=lambda q, k: k @ q,
            ),
            Diagnosis(SCALED_TOO_EARLY, variant=lambda q, k: softmax(k @ q / np.sqrt(q.shape[-1]))),
        ),
    )
)


# ----------------------------------------------------------------------------- 2.2 batched attention
def _batched_cases():
    rng = np.random.default_rng(202)
    n = rng.normal
    return grouped(
        "values",
        Case("L=2, S=3, E=4, Ev=5", q=n(size=(2, 4)), k=n(size=(3, 4)), v=n(size=(3, 5))),
        Case("L=S=3, E=2, Ev=3", q=n(size=(3, 2)), k=n(size=(3, 2)), v=n(size=(3, 3))),
    ) + grouped(
        "batch dimensions",
        Case("a batch of 2, L=S=3", q=n(size=(2, 3, 4)), k=n(size=(2, 3, 4)), v=n(size=(2, 3, 2))),
        Case(
            "batch and heads (2, 2), L=2, S=4",
            q=n(size=(2, 2, 2, 3)),
            k=n(size=(2, 2, 4, 3)),
            v=n(size=(2, 2, 4, 2)),
        ),
    )


def _swapped_qk(q, k, v):
    weights = softmax(k @ swap(q))  # (..., S, L): the classic slip
    return weights @ v, weights


register(
    Exercise(
        id="ch02.batched_attention",
        number="2.2",
        title="batched dot-product attention",
        points=3,
        hint="scores (..., L, S) from q and k with its last two axes swapped",
        function="batched_attention",
        description="Queries `q (..., L, E)`, keys `k (..., S, E)`, values `v (..., S, Ev)`, with any "
        "leading (batch) dimensions: return `(out, weights)` with `out (..., L, Ev)` and `weights "
        "(..., L, S)`. No scaling yet.",
        solution='''
            def batched_attention(q, k, v):
                """Unscaled attention: returns (out (..., L, Ev), weights (..., L, S))."""
                ### BEGIN SOLUTION
                scores = q @ np.swapaxes(k, -1, -2)  # (..., L, E) @ (..., E, S) -> (..., L, S)
                weights = softmax(scores)  # each row (one query) sums to 1
                out = weights @ v  # (..., L, S) @ (..., S, Ev) -> (..., L, Ev)
                return out, weights
                ### END SOLUTION
        ''',
        reference=_attend,
        public_cases=_batched_cases,
        outputs=("out", "weights"),
        distributions=("weights",),
        needs=NEEDS,
        diagnoses=(
            Diagnosis(
                "q and k are swapped: the scores are q @ k^T, one row per query, shape (..., L, S)",
                variant=_swapped_qk,
            ),
            Diagnosis(
                SCALED_TOO_EARLY, variant=lambda q, k, v: _attend(q, k, v, scale=1 / np.sqrt(q.shape[-1]))
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 2.3 cross-attention
def _cross_cases():
    rng = np.random.default_rng(203)
    n = rng.normal
    return grouped(
        "values",
        Case("2 decoder tokens, 4 encoder tokens", x_dec=n(size=(2, 3)), x_enc=n(size=(4, 3))),
        Case("3 decoder tokens, 3 encoder tokens", x_dec=n(size=(3, 2)), x_enc=n(size=(3, 2))),
    ) + grouped(
        "batch dimensions",
        Case("a batch of 2, L=3, S=2", x_dec=n(size=(2, 3, 4)), x_enc=n(size=(2, 2, 4))),
        Case("batch and heads (2, 2), L=S=3", x_dec=n(size=(2, 2, 3, 2)), x_enc=n(size=(2, 2, 3, 2))),
    )


register(
    Exercise(
        id="ch02.cross_attention",
        number="2.3",
        title="cross-attention",
        points=2,
        hint="the decoder tokens are the queries; the encoder tokens are both keys and values",
        function="cross_attention",
        description="In cross-attention the decoder's tokens ask and the encoder's tokens answer: "
        "queries come from `x_dec (..., L, d)`, keys and values from `x_enc (..., S, d)`. Return the "
        "output (one row per decoder token), unscaled.",
        solution='''
            def cross_attention(x_dec, x_enc):
                """Unscaled cross-attention: queries from x_dec (..., L, d); keys, values: x_enc (..., S, d)."""
                ### BEGIN SOLUTION
                scores = x_dec @ np.swapaxes(x_enc, -1, -2)  # (..., L, d) @ (..., d, S) -> (..., L, S)
                weights = softmax(scores)
                return weights @ x_enc  # (..., L, S) @ (..., S, d) -> (..., L, d): one row per decoder token
                ### END SOLUTION
        ''',
        reference=lambda x_dec, x_enc: _attend(x_dec, x_enc, x_enc)[0],
        public_cases=_cross_cases,
        needs=NEEDS,
        diagnoses=(
            Diagnosis(
                "queries must come from the decoder (x_dec), keys and values from the encoder (x_enc): "
                "the output needs one row per decoder token",
                variant=lambda x_dec, x_enc: _attend(x_enc, x_dec, x_dec)[0],
            ),
            Diagnosis(
                "this is self-attention over x_dec; cross-attention takes its keys and values from x_enc",
                variant=lambda x_dec, x_enc: _attend(x_dec, x_dec, x_dec)[0],
            ),
            Diagnosis(
                SCALED_TOO_EARLY,
                variant=lambda x_dec, x_enc: _attend(x_dec, x_enc, x_enc, scale=1 / np.sqrt(x_dec.shape[-1]))[
                    0
                ],
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 2.4 shapes (predict)
register(
    Exercise(
        id="ch02.predict_shapes",
        number="2.4",
        title="predict the shapes",
        points=1,
        function="predict_shapes",
        hint="weights: one number per (query, key) pair; out: one row per query, as wide as what?",
        kind="predict",
        description="Without running anything: `q` has shape `(2, 5, 8)`, `k` `(2, 7, 8)` and `v` "
        "`(2, 7, 3)`. What are the shapes of `out` and `weights` in `out, weights = attention(q, k, v)`? "
        "Return the two shapes as tuples, `(out_shape, weights_shape)`.",
        solution='''
            def predict_shapes():
                """(shape of out, shape of weights) for q (2, 5, 8), k (2, 7, 8), v (2, 7, 3)."""
                ### BEGIN SOLUTION
                out_shape = (2, 5, 3)  # one output per query (L=5), as wide as the values (Ev=3)
                weights_shape = (2, 5, 7)  # one weight per (query, key) pair: (B, L, S)
                return out_shape, weights_shape
                ### END SOLUTION
        ''',
        reference=lambda: (np.array([2, 5, 3]), np.array([2, 5, 7])),
        public_cases=lambda: grouped("the shapes", Case("q (2, 5, 8), k (2, 7, 8), v (2, 7, 3)")),
        outputs=("out_shape", "weights_shape"),
        diagnoses=(
            Diagnosis(
                "there is one output per query, not per key: out is (B, L, Ev), and the weights (B, L, S)",
                variant=lambda: (np.array([2, 7, 3]), np.array([2, 7, 5])),
            ),
            Diagnosis(
                "the output is a weighted sum of values, so its last axis is the values' width Ev=3, not E=8",
                variant=lambda: (np.array([2, 5, 8]), np.array([2, 5, 7])),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 2.5 wrong axis (diagnose)
def _whole_matrix(scores, v):
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    w = e / e.sum()
    return w @ v, w


def _axis_cases():
    rng = np.random.default_rng(205)
    n = rng.normal
    return grouped(
        "outputs",
        Case("L=3 queries, S=4 keys", q=n(size=(3, 2)), k=n(size=(4, 2)), v=n(size=(4, 3))),
        Case("L=S=3", q=n(size=(3, 4)), k=n(size=(3, 4)), v=n(size=(3, 2))),
    )


register(
    Exercise(
        id="ch02.fix_softmax_axis",
        number="2.5",
        title="outputs that fade as queries are added",
        points=2,
        function="attend_each_query",
        hint="each query's weights must sum to 1 on their own: sum over the keys' axis only, keeping it for the division",
        kind="diagnose",
        forbids=("torch.nn.functional.scaled_dot_product_attention",),
        description="This function computes unscaled attention for `q (L, E)`, `k (S, E)`, `v (S, Ev)` and "
        "returns `(out, weights)`, normalising the exponentials as the chapter did for one query. "
        "Symptom: with one query it is right; with more, every output shrinks towards 0, the more "
        "queries the smaller, and adding a query changes the outputs of all the others. Find the bug "
        "and fix it.",
        solution='''
            def attend_each_query(q, k, v):
                """Unscaled attention of q (L, E) over k (S, E), v (S, Ev): (out (L, Ev), weights (L, S))."""
                scores = q @ k.T  # (L, E) @ (E, S) -> (L, S)
                e = np.exp(scores - scores.max(axis=-1, keepdims=True))  # (L, S), each row's max is 1
                ### BEGIN SOLUTION
                weights = e / e.sum(axis=-1, keepdims=True)  # (L, S) / (L, 1): each query's row sums to 1
                ### END SOLUTION
                return weights @ v, weights  # (L, S) @ (S, Ev) -> (L, Ev)
        ''',
        stub="weights = e / e.sum()  # (L, S) / (L, 1): each query's row sums to 1",
        reference=lambda q, k, v: _attend(q, k, v),
        public_cases=_axis_cases,
        outputs=("out", "weights"),
        distributions=("weights",),
        needs=NEEDS,
        diagnoses=(
            Diagnosis(
                "the whole weights matrix sums to 1, so each row sums to less than 1 and the queries share "
                "one budget of weight. Which numbers should one query's weights be divided by?",
                name="normalised over the whole matrix",
                hint="divide each row by its own sum: e.sum(axis=-1, keepdims=True)",
                variant=lambda q, k, v: _whole_matrix(q @ k.T, v),
            ),
            Diagnosis(
                "each column of the weights sums to 1 and the rows do not: the queries compete with each "
                "other for every key. Over which axis should one query's weights add up to 1?",
                name="wrong softmax axis",
                hint="normalise each row, over the keys: softmax(..., axis=-1)",
                variant=lambda q, k, v: (softmax(q @ k.T, axis=0) @ v, softmax(q @ k.T, axis=0)),
            ),
            Diagnosis(SCALED_TOO_EARLY, variant=lambda q, k, v: _attend(q, k, v, scale=None)),
        ),
    )
)
