"""Chapter 2 exercises: dot-product attention (unscaled; scaling is chapter 3)."""

from __future__ import annotations

import numpy as np

from ... import scaled_dot_product_attention as sdpa
from ... import softmax
from ..engine.registry import SHARED_MISTAKES, Case, Diagnosis, Exercise, grouped, register
from ._shared import swap

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


# ----------------------------------------------------------------------------- 2.1 batched attention
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
        number="2.1",
        title="batched dot-product attention",
        points=2,
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


# ----------------------------------------------------------------------------- 2.2 output Jacobian
def _jac_q(q, k, v, with_outer=True, scale=1.0):
    w = softmax(scale * q @ k.T)  # (L, S)
    k_mean = w @ k  # (L, E): the weighted mean key of each query
    centred = k[None, :, :] - k_mean[:, None, :] if with_outer else np.broadcast_to(k, (len(q),) + k.shape)
    # sum_j w_ij v_j (k_j - k_mean_i)^T: (L, S, Ev) x (L, S, E) -> (L, Ev, E)
    return scale * np.einsum("ls,sv,lse->lve", w, v, centred)


def _jac_cases():
    rng = np.random.default_rng(202)
    n = rng.normal
    return grouped(
        "Jacobians",
        Case("L=1, S=3, E=2, Ev=2", q=np.array([[1.0, 0.0]]), k=n(size=(3, 2)), v=n(size=(3, 2))),
        Case("L=2, S=4, E=3, Ev=5", q=n(size=(2, 3)), k=n(size=(4, 3)), v=n(size=(4, 5))),
        Case("L=3, S=2, E=4, Ev=1", q=n(size=(3, 4)), k=n(size=(2, 4)), v=n(size=(2, 1))),
    ) + grouped(
        "large scores",
        Case(
            "scores in the hundreds (the weights are nearly one-hot)",
            q=np.array([[30.0, 0.0], [10.0, 10.0]]),
            k=np.array([[10.0, 0.0], [0.0, 10.0], [9.0, 1.0]]),
            v=n(size=(3, 2)),
        ),
    )


register(
    Exercise(
        id="ch02.output_jacobian",
        number="2.2",
        title="how an output moves with its query",
        points=3,
        function="output_jacobian",
        hint="out_i = sum_j w_ij v_j and only the weights depend on q_i; chain dw/ds (chapter 1) with ds/dq_i",
        kind="derive",
        description="Training moves the queries, so it needs $\\partial\\, \\text{out}_i / \\partial q_i$: "
        "how query $i$'s output changes when its own query vector moves. For unscaled attention of "
        "`q (L, E)` over `k (S, E)`, `v (S, Ev)`, derive it and return all $L$ of them as one array "
        "`(L, Ev, E)`, entry `[i, a, b]` $= \\partial\\, \\text{out}_{i,a} / \\partial q_{i,b}$. "
        "Scores may be in the hundreds.",
        solution='''
            def output_jacobian(q, k, v):
                """d out_i / d q_i for unscaled attention of q (L, E) over k (S, E), v (S, Ev): (L, Ev, E)."""
                ### BEGIN SOLUTION
                w = softmax(q @ k.T)  # (L, S)
                k_mean = w @ k  # (L, E): each query's weighted mean key
                centred = k[None, :, :] - k_mean[:, None, :]  # (L, S, E): k_j - k_mean_i
                # out_i = sum_j w_ij v_j and dw_ij/dq_i = w_ij (k_j - k_mean_i): sum_j w_ij v_j (k_j - k_mean_i)^T
                return np.einsum("ls,sv,lse->lve", w, v, centred)  # (L, Ev, E)
                ### END SOLUTION
        ''',
        reference=_jac_q,
        public_cases=_jac_cases,
        outputs=("result",),
        needs=NEEDS,
        diagnoses=(
            Diagnosis(
                "each Jacobian is off by a term that is the same for every key: the weights sum to 1, so "
                "moving q_i cannot raise them all. The softmax's Jacobian has two terms",
                variant=lambda q, k, v: _jac_q(q, k, v, with_outer=False),
            ),
            Diagnosis(
                "the entries are [i, b, a] instead of [i, a, b]: the rows follow the output, the columns "
                "the query",
                name="transposed Jacobians",
                variant=lambda q, k, v: (
                    np.swapaxes(_jac_q(q, k, v), -1, -2) if v.shape[1] == k.shape[1] else None
                ),
            ),
            Diagnosis(
                SCALED_TOO_EARLY,
                variant=lambda q, k, v: _jac_q(q, k, v, scale=1 / np.sqrt(q.shape[-1])),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 2.3 query for given weights
def _design(k, p, centre=True, log=True):
    target = np.log(p) if log else np.asarray(p, dtype=np.float64)
    if centre:
        target = target - target.mean(axis=-1, keepdims=True)
    return np.linalg.solve(k, target.T).T  # k q = target for each row of p


def _design_cases():
    rng = np.random.default_rng(203)
    return grouped(
        "queries",
        Case("E=S=2", k=np.array([[2.0, 0.0], [1.0, 1.0]]), p=np.array([0.75, 0.25])),
        Case("E=S=3, random keys", k=rng.normal(size=(3, 3)), p=np.array([0.2, 0.5, 0.3])),
        Case(
            "E=S=4, two pairs of equal weights", k=rng.normal(size=(4, 4)), p=np.array([0.3, 0.3, 0.2, 0.2])
        ),
    ) + grouped(
        "several targets",
        Case("E=S=3, three targets (3, 3)", k=rng.normal(size=(3, 3)), p=rng.dirichlet(np.ones(3), size=3)),
        Case("E=S=4, two targets (2, 4)", k=rng.normal(size=(4, 4)), p=rng.dirichlet(np.ones(4), size=2)),
    )


register(
    Exercise(
        id="ch02.query_for_weights",
        number="2.3",
        title="a query that asks for given weights",
        points=2,
        function="query_for_weights",
        hint="softmax(s) = p fixes s only up to one number added to every score; which s has mean 0?",
        kind="derive",
        description="Run attention backwards. There are as many keys as dimensions: `k (S, E)` with "
        "$S = E$ and `k` invertible. Given target weights `p (S,)`, all positive and summing to 1, "
        "find a query `q (E,)` whose unscaled weights `softmax(k @ q)` equal `p`. Many queries do; "
        "return the one whose scores `k @ q` have mean 0. `p` may also be `(N, S)`, one target per "
        "row; then return `(N, E)`, one query per row.",
        solution='''
            def query_for_weights(k, p):
                """The query (E,) (or (N, E)) whose weights softmax(k @ q) are p (S,) (or (N, S)), scores of mean 0."""
                ### BEGIN SOLUTION
                scores = np.log(p)  # softmax(log p) = p: any scores log p + c work
                scores = scores - scores.mean(axis=-1, keepdims=True)  # the one with mean 0
                return np.linalg.solve(k, scores.T).T  # k @ q = scores, for each row of p
                ### END SOLUTION
        ''',
        reference=_design,
        public_cases=_design_cases,
        needs=NEEDS,
        diagnoses=(
            Diagnosis(
                "softmax(k @ q) is right but the scores do not have mean 0: softmax ignores a number added "
                "to every score, so the question picks one",
                name="scores not centred",
                variant=lambda k, p: _design(k, p, centre=False),
            ),
            Diagnosis(
                "the scores are the weights themselves (centred): softmax(p) is not p. Which scores does "
                "softmax turn into p?",
                variant=lambda k, p: _design(k, p, log=False),
            ),
            Diagnosis(
                "you solved with k's transpose: the scores are k @ q, one row of k per key",
                variant=lambda k, p: (
                    np.linalg.solve(k.T, (np.log(p) - np.log(p).mean(-1, keepdims=True)).T).T
                ),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 2.4 shapes (predict)
register(
    Exercise(
        id="ch02.predict_shapes",
        number="2.4",
        title="predict the shapes when the batches differ",
        points=1,
        function="predict_shapes",
        hint="matrix products broadcast their leading axes as + and * do: line the shapes up from the right",
        kind="predict",
        description="Without running anything: `q` has shape `(4, 1, 6, 8)`, `k` `(3, 10, 8)` and `v` "
        "`(3, 10, 5)`. What are the shapes of `out` and `weights` in `out, weights = "
        "dot_product_attention(q, k, v)`, the chapter's function (`q @ k.swapaxes(-2, -1)`, a softmax, "
        "`weights @ v`)? Return the two shapes as tuples, `(out_shape, weights_shape)`.",
        solution='''
            def predict_shapes():
                """(shape of out, shape of weights) for q (4, 1, 6, 8), k (3, 10, 8), v (3, 10, 5)."""
                ### BEGIN SOLUTION
                # leading axes broadcast: (4, 1) against (3,) -> (4, 3); then L=6 queries, S=10 keys, Ev=5
                out_shape = (4, 3, 6, 5)
                weights_shape = (4, 3, 6, 10)
                return out_shape, weights_shape
                ### END SOLUTION
        ''',
        reference=lambda: (np.array([4, 3, 6, 5]), np.array([4, 3, 6, 10])),
        public_cases=lambda: grouped("the shapes", Case("q (4, 1, 6, 8), k (3, 10, 8), v (3, 10, 5)")),
        outputs=("out_shape", "weights_shape"),
        diagnoses=(
            Diagnosis(
                "the axis of length 1 in q does not stay 1: it broadcasts against k's leading 3",
                variant=lambda: (np.array([4, 1, 6, 5]), np.array([4, 1, 6, 10])),
            ),
            Diagnosis(
                "there is one output per query, not per key: out has L=6 rows and the weights one column per key",
                variant=lambda: (np.array([4, 3, 10, 5]), np.array([4, 3, 10, 6])),
            ),
            Diagnosis(
                "the output is a weighted sum of values, so its last axis is the values' width Ev=5, not E=8",
                variant=lambda: (np.array([4, 3, 6, 8]), np.array([4, 3, 6, 10])),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 2.5 outputs that fade (diagnose)
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
        id="ch02.attend_each_query",
        former_ids=("ch02.fix_softmax_axis",),
        number="2.5",
        title="outputs that fade as queries are added",
        points=2,
        function="attend_each_query",
        hint="each query's weights must sum to 1 on their own: sum over the keys' axis only, keeping it for the division",
        kind="diagnose",
        forbids=("torch.nn.functional.scaled_dot_product_attention",),
        description="This function computes unscaled attention for `q (L, E)`, `k (S, E)`, `v (S, Ev)` and "
        "returns `(out (L, Ev), weights (L, S))`. "
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
        stub="weights = e / e.sum()",
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
