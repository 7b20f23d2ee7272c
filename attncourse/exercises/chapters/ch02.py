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
def _design(k, p, fix="shortest", log=True, keys=None):
    """The query (or one per row of p) with weights softmax(k @ q) = p; ``fix`` picks the free
    constant: "shortest" (the task), "mean 0" (scores of mean 0) or "none" (scores log p)."""
    k = np.asarray(k, dtype=np.float64)
    target = np.log(np.asarray(p, dtype=np.float64)) if log else np.asarray(p, dtype=np.float64)
    if fix == "mean 0":
        target = target - target.mean(axis=-1, keepdims=True)
    solve_with = k if keys is None else keys
    a = np.linalg.solve(solve_with, target.T).T  # one query with those scores, per row
    if fix != "shortest":
        return a
    b = np.linalg.solve(solve_with, np.ones(k.shape[0]))  # the direction that adds c to every score
    return a - (a @ b)[..., None] / (b @ b) * b  # the point of the line a + c b nearest 0


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
        hint="softmax(s) = p fixes s only up to one number c added to every score: the queries that work "
        "form a line q(c); which point of a line lies nearest the origin?",
        kind="derive",
        description="Run attention backwards. There are as many keys as dimensions: `k (S, E)` with "
        "$S = E$ and `k` invertible. Given target weights `p (S,)`, all positive and summing to 1, "
        "find a query `q (E,)` whose unscaled weights `softmax(k @ q)` equal `p`. Many queries do; "
        "return the shortest of them (the least Euclidean length). `p` may also be `(N, S)`, one "
        "target per row; then return `(N, E)`, one query per row. numpy's linear-algebra routines "
        "(`np.linalg.solve`, `np.linalg.inv`, `np.linalg.lstsq`) may be used.",
        solution='''
            def query_for_weights(k, p):
                """The shortest query (E,) (or (N, E)) whose weights softmax(k @ q) are p (S,) (or (N, S))."""
                ### BEGIN SOLUTION
                # softmax(log p + c) = p for every c: the queries that work are a + c b, with
                # k a = log p and k b = (1, ..., 1)
                a = np.linalg.solve(k, np.log(p).T).T  # (E,) or (N, E)
                b = np.linalg.solve(k, np.ones(k.shape[0]))  # (E,)
                c = -(a @ b) / (b @ b)  # () or (N,): |a + c b|^2 is least where its derivative in c is 0
                return a + np.asarray(c)[..., None] * b
                ### END SOLUTION
        ''',
        reference=_design,
        public_cases=_design_cases,
        needs=NEEDS,
        diagnoses=(
            Diagnosis(
                "softmax(k @ q) gives p, but a shorter query gives it too",
                name="a query that works, not the shortest",
                hint="all the queries that work differ by multiples of one vector: which one is shortest?",
                variant=lambda k, p: _design(k, p, fix="none"),
            ),
            Diagnosis(
                "softmax(k @ q) gives p, but a shorter query gives it too",
                name="scores of mean 0",
                hint="scores of mean 0 are one choice of the free number, not the shortest query's",
                variant=lambda k, p: _design(k, p, fix="mean 0"),
            ),
            Diagnosis(
                "the scores are the weights themselves: softmax(p) is not p. Which scores does "
                "softmax turn into p?",
                variant=lambda k, p: _design(k, p, log=False),
            ),
            Diagnosis(
                "you solved with k's transpose: the scores are k @ q, one row of k per key",
                variant=lambda k, p: _design(k, p, keys=np.asarray(k, dtype=np.float64).T),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 2.4 a key that can win (predict)
# Six keys in the plane. k4 lies inside the quadrilateral k0 k2 k3 k5 (k1 too), so no query ranks it
# first. Stretched by c it becomes a corner once c k4 crosses the edge k0-k2 (x / 3 + y / 2 = 1):
# c (1 / 3 + 0.1 / 2) = 1, c = 60 / 23; from there on a query across that edge ranks it first.
_KEYS_24 = np.array([[3.0, 0.0], [1.2, 1.0], [0.0, 2.0], [-1.0, 0.0], [1.0, 0.1], [0.0, -0.5]])


def _factor_query_at_key():
    """The factor at which c k4 beats every other key for the query that points at k4 itself."""
    k4 = _KEYS_24[4]
    return np.delete(_KEYS_24, 4, axis=0).dot(k4).max() / k4.dot(k4)


def _factor_k1_a_corner():
    """Where the ray through k4 leaves the polygon k0 k1 k2 ... when k1 is taken for a corner."""
    # k0 + s (k1 - k0) = t k4: solve for t
    (t, _s) = np.linalg.solve(np.column_stack([_KEYS_24[4], _KEYS_24[0] - _KEYS_24[1]]), _KEYS_24[0])
    return t


register(
    Exercise(
        id="ch02.predict_key_stretch",
        number="2.4",
        title="how far must a key be stretched to win?",
        points=2,
        function="predict_key_stretch",
        hint="for a query of direction d the winner is the key that reaches furthest along d; draw the six keys "
        "and ask which directions could favour k4",
        kind="predict",
        tolerance=(0.01, 0.0),
        description="Six keys in the plane: `k0 = (3, 0)`, `k1 = (1.2, 1)`, `k2 = (0, 2)`, `k3 = (-1, 0)`, "
        "`k4 = (1, 0.1)`, `k5 = (0, -0.5)`. A query `q` in the plane gets the unscaled weights "
        "`softmax(k @ q)`. No query, of any direction and any length, gives `k4` a larger weight than each "
        "of the other five. Now `k4` is stretched to `c * k4` with a factor `c > 1`, the other keys "
        "unchanged. Above which factor `c` is there a query that gives the stretched key a larger weight "
        "than each of the other five? Return `c` (within 1 %).",
        solution='''
            def predict_key_stretch():
                """The factor c above which some query ranks c * k4 first among the six keys."""
                ### BEGIN SOLUTION
                # the weights rank the keys as the scores q . k do, so for a query of direction d the
                # winner is the key reaching furthest along d: a corner of the keys' convex hull. The
                # corners are k0, k2, k3 and k5; k1 and k4 lie inside. c * k4 starts to win when it leaves
                # the hull, through the edge from k0 = (3, 0) to k2 = (0, 2), the line x / 3 + y / 2 = 1:
                # c * (1 / 3 + 0.1 / 2) = 1. (Pointing the query at k4 asks for more: it must then beat k0.)
                return 1 / (1 / 3 + 0.1 / 2)  # 60 / 23
                ### END SOLUTION
        ''',
        reference=lambda: 1 / (1 / 3 + 0.1 / 2),
        public_cases=lambda: grouped("the factor", Case("six keys in the plane, k4 stretched")),
        outputs=("c",),
        diagnoses=(
            Diagnosis(
                "that factor answers a narrower question (a query picked in advance, or the key outgrowing "
                "k0); the question is whether any query at all ranks the stretched key first",
                name="query pointed at the key",
                variant=_factor_query_at_key,
            ),
            Diagnosis(
                "that factor answers a narrower question (a query picked in advance, or the key outgrowing "
                "k0); the question is whether any query at all ranks the stretched key first",
                name="query along k0",
                variant=lambda: 3.0,
            ),
            Diagnosis(
                "k1 is taken for one of the keys that bound where the others reach; can k1 itself ever win?",
                name="k1 taken for a corner",
                variant=_factor_k1_a_corner,
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 2.5 key lengths from weights
def _lengths(q, directions, weights, per_row=True, log=True, unit_queries=False):
    q = np.asarray(q, dtype=np.float64)
    d = np.asarray(directions, dtype=np.float64)
    w = np.asarray(weights, dtype=np.float64)
    if unit_queries:
        q = q / np.linalg.norm(q, axis=-1, keepdims=True)
    L, S = w.shape
    c = q @ d.T  # (L, S): the score of key j per unit of its length
    target = np.log(w) if log else w
    rows = np.zeros((L * S, S + (L if per_row else 0)))
    i, j = np.divmod(np.arange(L * S), S)
    rows[np.arange(L * S), j] = c.ravel()  # length_j * c_ij ...
    if per_row:
        rows[np.arange(L * S), S + i] = -1.0  # ... minus query i's log-normaliser
    return np.linalg.lstsq(rows, target.ravel(), rcond=None)[0][:S]


def _lengths_case(label, rng, L, S, E, lengths=None, dtype=np.float64):
    d = rng.normal(size=(S, E))
    d /= np.linalg.norm(d, axis=-1, keepdims=True)
    q = rng.normal(size=(L, E)) * rng.uniform(0.5, 2.0, size=(L, 1))
    lengths = rng.uniform(0.3, 3.0, size=S) if lengths is None else np.asarray(lengths, dtype=float)
    w = softmax(q @ (lengths[:, None] * d).T)
    q, d, w = (a.astype(dtype) for a in (q, d, w))
    if dtype != np.float64:
        d = d / np.linalg.norm(d, axis=-1, keepdims=True)
        w = w / w.sum(axis=-1, keepdims=True)
    return Case(label, q=q, directions=d, weights=w)


def _lengths_cases():
    rng = np.random.default_rng(2050)
    q = np.array([[1.0, 0.5], [-0.5, 1.5]])
    d = np.array([[1.0, 0.0], [0.0, 1.0], [-0.6, 0.8]])
    return grouped(
        "lengths",
        Case(
            "L=2, S=3, E=2",
            q=q,
            directions=d,
            weights=softmax(q @ (np.array([2.37, 0.61, 1.74])[:, None] * d).T),
        ),
        _lengths_case("L=S=4, E=3", rng, 4, 4, 3),
        _lengths_case("L=3, S=5, E=4", rng, 3, 5, 4),
    ) + grouped(
        "lengths far apart",
        _lengths_case(
            "L=5, S=6, E=3, one key 10 times another",
            rng,
            5,
            6,
            3,
            lengths=[0.27, 3.13, 1.17, 0.46, 2.21, 1.63],
        ),
    )


register(
    Exercise(
        id="ch02.recover_key_lengths",
        number="2.5",
        title="how long were the keys?",
        points=2,
        function="key_lengths",
        hint="each score is a key's length times a number you can compute; softmax keeps each row's scores "
        "only up to a number of that row's own",
        kind="derive",
        description="A layer's keys were made as `lengths[:, None] * directions`: the `directions (S, E)` "
        "are rows of length 1, the `lengths (S,)` are positive and unknown. You are given the directions, "
        "the queries `q (L, E)` and the unscaled attention weights `weights (L, S)` the layer gave them "
        "(all positive). Recover the lengths and return them as `(S,)`. The queries are varied enough "
        "that only one set of lengths fits. numpy's linear-algebra routines (`np.linalg.solve`, "
        "`np.linalg.lstsq`, `np.linalg.pinv`) may be used.",
        solution='''
            def key_lengths(q, directions, weights):
                """The lengths (S,) of the keys, from q (L, E), directions (S, E) and weights (L, S)."""
                ### BEGIN SOLUTION
                L, S = weights.shape
                c = q @ directions.T  # (L, S): q_i . k_j = length_j * (q_i . direction_j)
                # softmax keeps the scores up to one number z_i per row: log w_ij = length_j c_ij - z_i,
                # L * S equations, linear in the S lengths and the L numbers z
                system = np.zeros((L, S, S + L))
                system[:, np.arange(S), np.arange(S)] = c  # the coefficient of length_j
                system[np.arange(L), :, S + np.arange(L)] = -1.0  # the coefficient of z_i
                rows = system.reshape(L * S, S + L)
                unknowns = np.linalg.lstsq(rows, np.log(weights).ravel(), rcond=None)[0]
                return unknowns[:S]
                ### END SOLUTION
        ''',
        reference=_lengths,
        public_cases=_lengths_cases,
        outputs=("lengths",),
        needs=NEEDS,
        diagnoses=(
            Diagnosis(
                "these lengths treat the weights as if they were the scores",
                name="weights taken for scores",
                hint="softmax changes its scores: which scores give these weights, and how far are they fixed?",
                variant=lambda q, directions, weights: _lengths(q, directions, weights, log=False),
            ),
            Diagnosis(
                "these lengths fit each query's scores as if the softmax had kept their level",
                name="no number per query",
                hint="softmax gives the same weights when one number is added to a whole row of scores: "
                "each query brings one more unknown",
                variant=lambda q, directions, weights: _lengths(q, directions, weights, per_row=False),
            ),
            Diagnosis(
                "these lengths come out as if every query had length 1",
                name="queries taken as unit vectors",
                hint="a score is |q| |k| cos: the query's own length is in it too",
                variant=lambda q, directions, weights: _lengths(q, directions, weights, unit_queries=True),
            ),
        ),
    )
)
