"""Chapter 0 exercises: kernel regression, the encoder-decoder bottleneck, additive attention."""

from __future__ import annotations

import numpy as np

from ... import softmax
from ...pooling import nadaraya_watson
from ..engine.registry import Case, Diagnosis, Exercise, grouped, register

__all__: list = []

SOFTMAX_NEEDS = ("import numpy as np", "from attncourse import softmax")


# ----------------------------------------------------------------------------- 0.1 kernel regression
def _nw_cases():
    rng = np.random.default_rng(1)
    x_key = np.sort(rng.uniform(0, 5, size=8))
    return grouped(
        "predictions",
        Case(
            "three keys, width 1",
            x_query=np.array([0.0, 1.5]),
            x_key=np.array([0.0, 1.0, 3.0]),
            y_value=np.array([1.0, 2.0, -1.0]),
            width=1.0,
        ),
        Case(
            "8 noisy samples, width 0.5",
            x_query=np.linspace(0, 5, 6),
            x_key=x_key,
            y_value=np.sin(x_key) + 0.1 * rng.normal(size=8),
            width=0.5,
        ),
    ) + grouped(
        "far queries and narrow kernels",
        Case(
            "a query 512 from the keys (its kernel values underflow), width 8",
            x_query=np.array([-512.0, 0.25]),
            x_key=np.array([0.0, 0.25, 0.5]),
            y_value=np.array([2.0, -1.0, 4.0]),
            width=8.0,
        ),
    )


def _nw(x_query, x_key, y_value, width, factor=2.0, power=2):
    diff = np.abs(np.asarray(x_query)[:, None] - np.asarray(x_key)[None, :])  # (L, 1) - (1, S) -> (L, S)
    return softmax(-(diff**power) / (factor * width**2)) @ y_value  # (L, S) @ (S,) -> (L,)


register(
    Exercise(
        id="ch00.kernel_regression",
        number="0.1",
        title="Nadaraya-Watson kernel regression",
        points=2,
        function="kernel_regression",
        hint="one row of weights per query: the (L, S) differences x_query[:, None] - x_key[None, :], a softmax over each row, then a weighted sum of y_value",
        kind="implement",
        description="Predict at each query point `x_query (L,)` a weighted average of the training "
        "targets `y_value (S,)`, weighting key `x_key[j]` by a Gaussian kernel of width `width`: "
        "$f(x) = \\sum_j \\operatorname{softmax}_j\\big(-(x - x_j)^2 / 2w^2\\big)\\, y_j$. Return the "
        "predictions `(L,)`.",
        solution='''
            def kernel_regression(x_query, x_key, y_value, width):
                """Gaussian-kernel (Nadaraya-Watson) predictions (L,) at x_query (L,) from x_key, y_value (S,)."""
                ### BEGIN SOLUTION
                diff = x_query[:, None] - x_key[None, :]  # (L, 1) - (1, S) -> (L, S)
                weights = softmax(-(diff**2) / (2 * width**2))  # near keys weigh more; rows sum to 1
                return weights @ y_value  # (L, S) @ (S,) -> (L,)
                ### END SOLUTION
        ''',
        reference=lambda x_query, x_key, y_value, width: nadaraya_watson(x_query, x_key, y_value, width)[0],
        public_cases=_nw_cases,
        needs=SOFTMAX_NEEDS,
        diagnoses=(
            Diagnosis(
                "the weights are too peaked, as if the width were w / sqrt(2): what is in the kernel's "
                "denominator?",
                name="kernel without the factor 2",
                hint="the kernel is exp(-(x - x_j)^2 / (2 w^2)): the factor 2 is in the denominator",
                variant=lambda xq, xk, y, w: _nw(xq, xk, y, w, factor=1.0),
            ),
            Diagnosis(
                "you used the distance |x - x_j| instead of its square: the Gaussian kernel squares it",
                variant=lambda xq, xk, y, w: _nw(xq, xk, y, w, power=1),
            ),
            Diagnosis(
                "the scores lost their minus sign, so far keys weigh more than near ones",
                variant=lambda xq, xk, y, w: softmax(((xq[:, None] - xk[None, :]) ** 2) / (2 * w**2)) @ y,
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 0.2 far from the data (derive)
def _far_cases():
    return grouped(
        "distinct keys",
        Case(
            "three keys in order, width 1",
            x_key=np.array([1.0, 2.0, 4.0]),
            y_value=np.array([1.0, 3.0, 2.0]),
            width=1.0,
        ),
        Case(
            "five keys out of order, width 0.3",
            x_key=np.array([0.5, -2.0, 3.0, 1.0, -0.5]),
            y_value=np.array([4.0, -1.0, 0.5, 2.0, 7.0]),
            width=0.3,
        ),
    ) + grouped(
        "keys at the same place",
        Case(
            "two keys share the largest x, width 2",
            x_key=np.array([0.0, 3.0, 1.0, 3.0]),
            y_value=np.array([5.0, 1.0, 0.0, 2.0]),
            width=2.0,
        ),
    )


def _far(x_key, y_value, width, how="limits"):
    x, y = np.asarray(x_key, dtype=np.float64), np.asarray(y_value, dtype=np.float64)
    if how == "mean":  # as if every key weighed the same far away
        return np.array([y.mean(), y.mean()])
    if how == "first":  # the first of the keys at the end, ties not shared
        return np.array([y[np.argmin(x)], y[np.argmax(x)]])
    left, right = y[x == x.min()].mean(), y[x == x.max()].mean()
    return np.array([right, left]) if how == "swapped" else np.array([left, right])


register(
    Exercise(
        id="ch00.far_from_the_data",
        number="0.2",
        title="what the regression predicts far from the data",
        points=2,
        function="far_predictions",
        hint="write the score of key j for a query x as a polynomial in x: which of its terms are the "
        "same for every key, and which one grows fastest as x moves away?",
        kind="derive",
        description="Kernel regression with the chapter's Gaussian kernel of width `width` is fitted to "
        "keys `x_key (S,)` with values `y_value (S,)`. What does it predict for a query far to the "
        "left of every key, and far to the right, in the limit? Return the two limits "
        "`(left, right)` exactly, from the keys and values alone. Keys may share a place.",
        solution='''
            def far_predictions(x_key, y_value, width):
                """The predictions' limits as the query goes to -inf and to +inf."""
                ### BEGIN SOLUTION
                # score_j(x) = -(x - x_j)^2 / 2w^2 = -x^2 / 2w^2 + x x_j / w^2 - x_j^2 / 2w^2: the first term is
                # the same for every key and cancels in the softmax; the x x_j term grows fastest, so far to
                # the right all the weight goes to the largest x_j (shared equally by keys at that place)
                right = y_value[x_key == x_key.max()].mean()
                left = y_value[x_key == x_key.min()].mean()
                return left, right
                ### END SOLUTION
        ''',
        reference=_far,
        needs=SOFTMAX_NEEDS,
        public_cases=_far_cases,
        outputs=("limits",),
        diagnoses=(
            Diagnosis(
                "your limits are where the prediction goes as the kernel gets wide, not as the query "
                "moves away: far from every key, do the keys still weigh the same?",
                name="the mean of the values",
                hint="compare the scores of two keys for a query far away: their difference grows with the query",
                variant=lambda x_key, y_value, width: _far(x_key, y_value, width, "mean"),
            ),
            Diagnosis(
                "your two limits are each other's: which key does a query far to the right end up nearest?",
                name="left and right swapped",
                variant=lambda x_key, y_value, width: _far(x_key, y_value, width, "swapped"),
            ),
            Diagnosis(
                "where two keys share the outermost place, your limit is one key's value: how do keys "
                "with the same score share the weight?",
                name="a tie given to one key",
                hint="keys at the same place get the same score, and so the same weight",
                variant=lambda x_key, y_value, width: (
                    None
                    if np.allclose(_far(x_key, y_value, width, "first"), _far(x_key, y_value, width))
                    else _far(x_key, y_value, width, "first")
                ),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 0.3 additive score's cost
def _additive_cost(E_q=500, E_k=600, h=128, source=25, target=30, with_v=True, per="pair-unit"):
    parameters = h * E_q + h * E_k + (h if with_v else 0)
    tanh = {"pair-unit": target * source * h, "pair": target * source, "key-unit": source * h}[per]
    return np.array(parameters), np.array(tanh)


register(
    Exercise(
        id="ch00.additive_score_cost",
        number="0.3",
        title="what Bahdanau's score network costs",
        points=1,
        function="additive_score_cost",
        hint="write down the shapes of W_q, W_k and w_v first; then ask how many (query, key) pairs the decoder scores, and what one score evaluates",
        kind="predict",
        description="A translation model reads a 25-token source with a *bidirectional* RNN encoder: two "
        "RNNs, one left to right and one right to left, each with a hidden state of 300 numbers; the "
        "key at a token is the two directions' states there, side by side. The decoder's state (the "
        "query) has 500 numbers, and the score is the chapter's additive one, "
        "$w_v^\\top \\tanh(W_q q + W_k k)$, with a hidden width $h = 128$ and no biases. The decoder "
        "writes a 30-token translation, scoring every source token at every step. Before running "
        "anything, write down (a) how many parameters the score network has, (b) how many "
        "evaluations of $\\tanh$ of one number the decoder makes over the whole translation. Return "
        "the two counts `(parameters, tanh_evaluations)` as integers.",
        solution='''
            def additive_score_cost():
                """(parameters of the additive score network, tanh evaluations for one translation)."""
                ### BEGIN SOLUTION
                E_q, E_k, h = 500, 2 * 300, 128  # a key is both directions' states side by side
                parameters = h * E_q + h * E_k + h  # W_q (h, E_q), W_k (h, E_k), w_v (h,)
                tanh_evaluations = 30 * 25 * h  # every (target step, source token) pair, h numbers each
                return parameters, tanh_evaluations
                ### END SOLUTION
        ''',
        reference=_additive_cost,
        public_cases=lambda: grouped(
            "the counts", Case("E_q=500, two directions of 300, h=128, 25 -> 30 tokens")
        ),
        outputs=("parameters", "tanh_evaluations"),
        diagnoses=(
            Diagnosis(
                "your parameter count takes a key to be one direction's state",
                name="one direction's key",
                hint="a key is the two directions' states side by side",
                variant=lambda: _additive_cost(E_k=300),
            ),
            Diagnosis(
                "your parameter count leaves out one of the score network's three arrays",
                name="w_v left out",
                hint="the network is W_q, W_k and the vector w_v",
                variant=lambda: _additive_cost(with_v=False),
            ),
            Diagnosis(
                "your tanh count treats one score as one tanh of one number",
                name="one tanh per score",
                hint="tanh acts on a vector of h numbers for every score",
                variant=lambda: _additive_cost(per="pair"),
            ),
            Diagnosis(
                "your tanh count is that of one decoder step",
                name="one decoder step",
                hint="the decoder scores every source token again at each of its steps",
                variant=lambda: _additive_cost(per="key-unit"),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 0.4 effective keys
def _effective_cases():
    rng = np.random.default_rng(4)
    x_key = np.sort(rng.uniform(0, 5, size=10))
    return grouped(
        "counts",
        Case(
            "three keys, width 1",
            x_query=np.array([0.0, 1.5, 3.0]),
            x_key=np.array([0.0, 1.0, 3.0]),
            width=1.0,
        ),
        Case("10 keys, width 0.4", x_query=np.linspace(0, 5, 4), x_key=x_key, width=0.4),
        Case("10 keys, width 50 (nearly every key)", x_query=np.array([1.0, 4.0]), x_key=x_key, width=50.0),
    ) + grouped(
        "far queries and narrow kernels",
        Case(
            "a query 300 from the keys, width 0.01",
            x_query=np.array([-300.0, 0.5]),
            x_key=np.array([0.0, 0.5, 0.51, 2.0]),
            width=0.01,
        ),
    )


def _alpha(x_query, x_key, width, factor=2.0):
    diff = np.asarray(x_query)[:, None] - np.asarray(x_key)[None, :]  # (L, S)
    return softmax(-(diff**2) / (factor * width**2))


def _effective(x_query, x_key, width):
    return 1.0 / (_alpha(x_query, x_key, width) ** 2).sum(axis=-1)


def _entropy_count(x_query, x_key, width):
    a = _alpha(x_query, x_key, width)
    return np.exp(-(a * np.log(np.where(a > 0, a, 1.0))).sum(axis=-1))


register(
    Exercise(
        id="ch00.effective_keys",
        number="0.4",
        title="how many keys a query averages",
        points=2,
        function="effective_keys",
        hint="if a query's weights were m equal numbers 1/m, what would the sum of their squares be?",
        kind="extend",
        description="The width experiment says a narrow kernel averages few training points and a "
        "wide one nearly all. Put a number on it. For each query of `x_query (L,)`, take its "
        "Gaussian-kernel weights over the keys `x_key (S,)` (width `width`, as in the chapter), draw "
        "two keys independently from those weights, and let $P_i$ be the chance that both draws "
        "pick the same key. Return the *effective number of keys* $1 / P_i$ for every query, an "
        "array `(L,)`: it is $m$ when a query splits its weight equally over $m$ keys.",
        solution='''
            def effective_keys(x_query, x_key, width):
                """The effective number of keys (L,) each query averages, Gaussian kernel over x_key (S,)."""
                ### BEGIN SOLUTION
                diff = x_query[:, None] - x_key[None, :]  # (L, 1) - (1, S) -> (L, S)
                alpha = softmax(-(diff**2) / (2 * width**2))  # each row sums to 1
                return 1.0 / (alpha**2).sum(axis=-1)  # (L, S) -> (L,)
                ### END SOLUTION
        ''',
        reference=_effective,
        public_cases=_effective_cases,
        needs=SOFTMAX_NEEDS,
        diagnoses=(
            Diagnosis(
                "the counts are below 1 where they should lie between 1 and S: this is the chance itself, not its reciprocal",
                variant=lambda xq, xk, w: (_alpha(xq, xk, w) ** 2).sum(axis=-1),
            ),
            Diagnosis(
                "every count is 1: the weights of one query already sum to 1, so summing them counts nothing",
                variant=lambda xq, xk, w: 1.0 / _alpha(xq, xk, w).sum(axis=-1),
            ),
            Diagnosis(
                "the counts are those of a kernel sqrt(2) times narrower: what is in the kernel's denominator?",
                name="kernel without the factor 2",
                variant=lambda xq, xk, w: 1.0 / (_alpha(xq, xk, w, factor=1.0) ** 2).sum(axis=-1),
            ),
            Diagnosis(
                "that is exp(entropy), another effective count: it agrees on equal weights and differs on unequal ones. "
                "What is the chance that two independent draws pick the same key?",
                variant=_entropy_count,
            ),
            Diagnosis(
                "a query far from every key gets NaN or inf: its kernel values all underflow to 0. "
                "Weights from a softmax never do",
                variant=lambda xq, xk, w: _naive_effective(xq, xk, w),
            ),
        ),
    )
)


def _naive_effective(x_query, x_key, width):
    with np.errstate(all="ignore"):
        e = np.exp(-((np.asarray(x_query)[:, None] - np.asarray(x_key)[None, :]) ** 2) / (2 * width**2))
        a = e / e.sum(axis=-1, keepdims=True)
        return 1.0 / (a**2).sum(axis=-1)


# ----------------------------------------------------------------------------- 0.5 which values (extend)
def _kernel_weights(x_query, x_key, width, factor=2.0, normalised=True):
    scores = -((np.asarray(x_query)[:, None] - np.asarray(x_key)[None, :]) ** 2) / (
        factor * width**2
    )  # (L, S)
    return softmax(scores) if normalised else np.exp(scores)


def values_case(label, seed, S, extra, width, dtype=np.float64):
    """Keys 0.8 to 1.6 apart, a query near each key and `extra` more anywhere, and the predictions
    of values drawn at random: x_query, x_key, width and pred (the values held back)."""
    rng = np.random.default_rng(seed)
    x_key = np.cumsum(rng.uniform(0.8, 1.6, S))
    x_query = np.concatenate(
        [x_key + rng.uniform(-0.2, 0.2, S), rng.uniform(x_key[0] - 1, x_key[-1] + 1, extra)]
    )
    rng.shuffle(x_query)
    y_value = rng.normal(size=S) * 2
    pred = _kernel_weights(x_query, x_key, width) @ y_value  # (L, S) @ (S,) -> (L,)
    return Case(
        label,
        x_query=x_query.astype(dtype),
        x_key=x_key.astype(dtype),
        width=width,
        pred=pred.astype(dtype),
    )


def _values_cases():
    return grouped(
        "as many queries as keys",
        values_case("S=6 keys, L=6 queries, width 0.6", 1, 6, 0, 0.6),
    ) + grouped(
        "more queries than keys",
        values_case("S=4 keys, L=6 queries, width 0.5", 2, 4, 2, 0.5),
        values_case("S=5 keys, L=8 queries, width 0.9", 1, 5, 3, 0.9),
    )


def _values_from(x_query, x_key, width, pred, **how):
    weights = _kernel_weights(x_query, x_key, width, **how)  # (L, S)
    return np.linalg.lstsq(weights, np.asarray(pred, dtype=np.float64), rcond=None)[0]  # (S,)


def _nearest_prediction(x_query, x_key, width, pred):
    nearest = np.abs(np.asarray(x_key)[:, None] - np.asarray(x_query)[None, :]).argmin(axis=1)  # (S,)
    return np.asarray(pred)[nearest]


register(
    Exercise(
        id="ch00.values_from_predictions",
        number="0.5",
        title="which values made these predictions?",
        points=3,
        function="values_from_predictions",
        hint="every prediction is a weighted sum of the unknown values, with weights you can compute: "
        "write all L predictions as one matrix times the values",
        kind="extend",
        description="Someone ran the chapter's Gaussian-kernel regression of width `width` on keys "
        "`x_key (S,)` and reported its predictions `pred (L,)` at the queries `x_query (L,)`, but lost "
        "the values `y_value (S,)` it was fitted to. Recover them. Every case has at least as many "
        "queries as keys, placed so that exactly one set of values gives `pred`.",
        solution='''
            def values_from_predictions(x_query, x_key, width, pred):
                """The values y_value (S,) that the kernel regression turned into pred at x_query."""
                ### BEGIN SOLUTION
                weights = softmax(-((x_query[:, None] - x_key[None, :]) ** 2) / (2 * width**2))  # (L, S)
                # pred = weights @ y_value: L equations in S unknowns, L >= S, one solution
                return np.linalg.lstsq(weights, pred, rcond=None)[0]  # (S,)
                ### END SOLUTION
        ''',
        reference=_values_from,
        public_cases=_values_cases,
        outputs=("y_value",),
        needs=SOFTMAX_NEEDS,
        diagnoses=(
            Diagnosis(
                "your values are the predictions at the queries nearest each key: a prediction there "
                "still mixes in the other keys' values",
                name="the nearest prediction",
                hint="each prediction is a weighted sum of all the values, not the value of one key",
                variant=_nearest_prediction,
            ),
            Diagnosis(
                "your values would give pred if the kernel's weights did not sum to 1",
                name="weights not normalised",
                hint="the chapter's weights are a softmax of the scores",
                variant=lambda x_query, x_key, width, pred: _values_from(
                    x_query, x_key, width, pred, normalised=False
                ),
            ),
            Diagnosis(
                "your values fit a kernel written differently from the chapter's: compare your exponent "
                "with the chapter's score",
                name="the kernel without its factor 2",
                hint="the chapter's score is -(x - x_i)^2 / (2 w^2)",
                variant=lambda x_query, x_key, width, pred: _values_from(
                    x_query, x_key, width, pred, factor=1.0
                ),
            ),
        ),
    )
)
