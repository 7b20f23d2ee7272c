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
        points=1,
        function="kernel_regression",
        hint="one row of weights per query: the (L, S) differences x_query[:, None] - x_key[None, :], a softmax over each row, then a weighted sum of y_value",
        kind="implement",
        description="Predict at each query point of `x_query (L,)` a weighted average of the training "
        "targets `y_value (S,)`, as the chapter's kernel regression does: key `x_key[j]` weighs more "
        "the nearer it lies to the query, through the chapter's Gaussian kernel of width `width`, and "
        "one query's weights sum to 1. Return the predictions `(L,)`.",
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


# ----------------------------------------------------------------------------- 0.2 a classifier (extend)
def _class_weights(x_query, x_key, width, factor=2.0):
    xq, xk = np.asarray(x_query, dtype=np.float64), np.asarray(x_key, dtype=np.float64)
    return softmax(-((xq[:, None] - xk[None, :]) ** 2) / (factor * float(width) ** 2))  # (L, S)


def _classify(x_query, x_key, label, n_classes, width, factor=2.0, how="sum"):
    weights = _class_weights(x_query, x_key, width, factor)  # (L, S)
    one_hot = (np.asarray(label)[:, None] == np.arange(int(n_classes))[None, :]).astype(np.float64)  # (S, C)
    if how == "mean":  # each class's weight divided by its number of keys, renormalised
        per_class = (weights @ one_hot) / np.maximum(one_hot.sum(axis=0), 1.0)
        return per_class / per_class.sum(axis=-1, keepdims=True)
    if how == "nearest":  # all of a query's probability on the class of its heaviest key
        return one_hot[weights.argmax(axis=-1)]
    if how == "rounded":  # the labels averaged as numbers, rounded to a class
        average = np.clip(np.rint(weights @ np.asarray(label, dtype=np.float64)), 0, int(n_classes) - 1)
        return (average[:, None] == np.arange(int(n_classes))[None, :]).astype(np.float64)
    return weights @ one_hot  # (L, S) @ (S, C) -> (L, C)


def _naive_classify(x_query, x_key, label, n_classes, width):
    with np.errstate(all="ignore"):
        e = np.exp(-((np.asarray(x_query)[:, None] - np.asarray(x_key)[None, :]) ** 2) / (2 * width**2))
        one_hot = (np.asarray(label)[:, None] == np.arange(int(n_classes))[None, :]).astype(np.float64)
        return (e / e.sum(axis=-1, keepdims=True)) @ one_hot


def class_case(label, seed, S, L, n_classes, width, missing=(), far=(), dtype=np.float64):
    """S keys on [0, 6] with labels drawn from the classes not in `missing`, L queries among them and
    the queries `far`: x_query, x_key, label, n_classes, width."""
    rng = np.random.default_rng(seed)
    x_key = rng.uniform(0, 6, S)
    present = np.array([c for c in range(n_classes) if c not in missing])
    # every class but the missing ones at least once, the rest at random: classes of unequal sizes
    labels = np.concatenate([present, rng.choice(present, S - len(present))])
    rng.shuffle(labels)
    x_query = np.concatenate([rng.uniform(-0.5, 6.5, L), np.asarray(far, dtype=float)])
    return Case(
        label,
        x_query=x_query.astype(dtype),
        x_key=x_key.astype(dtype),
        label=labels.astype(np.int64),
        n_classes=n_classes,
        width=width,
    )


def _class_cases():
    return grouped(
        "probabilities",
        Case(
            "five keys, three classes, width 1",
            x_query=np.array([0.0, 1.5, 3.0, 4.5]),
            x_key=np.array([0.0, 1.0, 2.0, 3.0, 4.0]),
            label=np.array([0, 2, 2, 1, 0]),
            n_classes=3,
            width=1.0,
        ),
        class_case("12 keys, four classes, class 2 has no key, width 0.7", 7, 12, 5, 4, 0.7, missing=(2,)),
    ) + grouped(
        "far queries and narrow kernels",
        class_case("8 keys, three classes, a query 500 away, width 0.2", 8, 8, 3, 3, 0.2, far=(-500.0,)),
    )


register(
    Exercise(
        id="ch00.kernel_classifier",
        number="0.2",
        title="kernel regression as a classifier",
        points=3,
        function="class_probabilities",
        hint="a class's probability at a query is about the keys of that class: what do those keys "
        "contribute in the chapter's weighted average?",
        kind="extend",
        description="The training targets are now classes, not numbers: `label (S,)` holds, for the "
        "key `x_key[j]`, an integer class in `0 .. n_classes - 1` (which of `n_classes` crops grows "
        "at that place, say). Turn the chapter's Gaussian-kernel regression of width `width` into a "
        "classifier: return, for every query of `x_query (L,)`, a probability for each class, an "
        "array `(L, n_classes)` whose rows sum to 1, in which each key counts for what it weighs in "
        "the chapter's regression. A class may have no key; queries may lie far from every key.",
        solution='''
            def class_probabilities(x_query, x_key, label, n_classes, width):
                """Each query's probability (L, n_classes) for every class, Gaussian kernel over x_key (S,)."""
                ### BEGIN SOLUTION
                weights = softmax(-((x_query[:, None] - x_key[None, :]) ** 2) / (2 * width**2))  # (L, S)
                # a class label is a name, not a number to average: the value of key j is a row of
                # n_classes numbers, 1 at its class and 0 elsewhere
                indicator = (label[:, None] == np.arange(n_classes)[None, :]).astype(float)  # (S, C)
                return weights @ indicator  # (L, S) @ (S, C) -> (L, C): the weight on each class's keys
                ### END SOLUTION
        ''',
        reference=_classify,
        public_cases=_class_cases,
        needs=SOFTMAX_NEEDS,
        diagnoses=(
            Diagnosis(
                "your answer averages the labels as numbers and gives all the probability to the class "
                "nearest that average: is class 1 between class 0 and class 2?",
                name="labels averaged as numbers",
                hint="a label names a class; a key's class should count only for that class",
                variant=lambda xq, xk, lab, C, w: _classify(xq, xk, lab, C, w, how="rounded"),
            ),
            Diagnosis(
                "your probabilities are all 0 or 1: one key decides, where the regression averages",
                name="the heaviest key's class",
                hint="every key has a weight, and the weights of a class's keys add up",
                variant=lambda xq, xk, lab, C, w: _classify(xq, xk, lab, C, w, how="nearest"),
            ),
            Diagnosis(
                "a class with many keys near the query counts as much as a class with one: your "
                "answer divides each class's weight by its number of keys",
                name="weights averaged within a class",
                hint="two keys of the same class near a query give that class twice the support",
                variant=lambda xq, xk, lab, C, w: _classify(xq, xk, lab, C, w, how="mean"),
            ),
            Diagnosis(
                "the probabilities are those of a kernel sqrt(2) times narrower: what is in the "
                "kernel's denominator?",
                name="kernel without the factor 2",
                variant=lambda xq, xk, lab, C, w: _classify(xq, xk, lab, C, w, factor=1.0),
            ),
            Diagnosis(
                "a query far from every key gets NaN: its kernel values all underflow to 0. Weights "
                "from a softmax never do",
                name="underflow far from every key",
                variant=_naive_classify,
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 0.3 additive weights for a long query
_KEYS_03 = np.array([[3.0, 0.0], [0.0, 1.0], [1.0, -0.5], [-1.0, 1.0]])  # (S, 2)
_W_V_03 = np.array([1.0, 2.0])


def _long_query_weights(c=None, w_v=_W_V_03, mode=None):
    """Additive weights (W_q = W_k = I) of the four keys for the query c (1, 0); c None: the limit
    as c grows, where the first tanh coordinate is 1 for every key and the second stays tanh(k_j2)."""
    if mode == "dot product":
        return np.eye(len(_KEYS_03))[0]  # every weight on the key furthest along the query
    if mode == "all saturated":
        return np.full(len(_KEYS_03), 1.0 / len(_KEYS_03))
    if c is None:
        hidden = np.stack([np.ones(len(_KEYS_03)), np.tanh(_KEYS_03[:, 1])], axis=-1)  # (S, 2)
    else:
        hidden = np.tanh(c * np.array([1.0, 0.0]) + _KEYS_03)  # (S, 2)
    return softmax(hidden @ w_v)


register(
    Exercise(
        id="ch00.additive_long_query",
        number="0.3",
        title="additive weights for a very long query",
        points=1,
        function="additive_long_query",
        hint="follow each coordinate of tanh(W_q q + W_k k) separately as c grows",
        kind="predict",
        description="Take the chapter's additive score $w_v^\\top \\tanh(W_q q + W_k k)$ with "
        "$W_q = W_k = I$ (queries, keys and the hidden layer all 2 wide) and $w_v = (1, 2)$, and four "
        "keys `k0 = (3, 0)`, `k1 = (0, 1)`, `k2 = (1, -0.5)`, `k3 = (-1, 1)`. The query is "
        "$q = c\\,(1, 0)$. With dot-product scores, a longer and longer query of this direction gives "
        "more and more of its weight to `k0`, the key furthest along it. What happens to the additive "
        "weights of the four keys as $c \\to \\infty$? Return their limit, an array of four weights in "
        "the order `k0 .. k3` (each within 0.5 %).",
        solution='''
            def additive_long_query():
                """The limit of the four additive weights as the query c (1, 0) grows without bound."""
                ### BEGIN SOLUTION
                # tanh(c + k_j1) -> 1 for every key: the first coordinate stops telling keys apart;
                # the second, tanh(0 + k_j2), does not depend on c. The scores tend to 1 + 2 tanh(k_j2)
                k2nd = np.array([0.0, 1.0, -0.5, 1.0])
                scores = 1.0 + 2.0 * np.tanh(k2nd)
                return np.exp(scores) / np.exp(scores).sum()
                ### END SOLUTION
        ''',
        reference=lambda: _long_query_weights(),
        public_cases=lambda: grouped(
            "prediction", Case("four keys, w_v = (1, 2), q = c (1, 0), c -> infinity")
        ),
        outputs=("weights",),
        tolerance=(0.005, 0.0),
        diagnoses=(
            Diagnosis(
                "that is the dot product's limit, not the additive score's",
                name="the dot product's limit",
                hint="what does tanh do to a coordinate that grows without bound?",
                variant=lambda: _long_query_weights(mode="dot product"),
            ),
            Diagnosis(
                "your weights treat every key alike: does every coordinate of the tanh grow with c?",
                name="every coordinate saturated",
                hint="the query has a 0 in its second coordinate",
                variant=lambda: _long_query_weights(mode="all saturated"),
            ),
            Diagnosis(
                "your weights count the two coordinates of the tanh alike",
                name="w_v left out",
                hint="w_v weighs the hidden coordinates before they are added",
                variant=lambda: _long_query_weights(w_v=np.ones(2)),
            ),
            Diagnosis(
                "those are the weights of a query of unit length, not of the limit",
                name="the weights at c = 1",
                hint="the question asks for c growing without bound",
                variant=lambda: _long_query_weights(c=1.0),
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


# ----------------------------------------------------------------------------- 0.5 from a summary (extend)
def _from_counts(x_query, x_place, count, y_mean, width, factor=2.0, power=1.0):
    """Kernel regression on the raw readings: `count[j]` keys at x_place[j] whose values average y_mean[j].
    `power` is the power of the counts in the weights (1: the raw data; 0: counts ignored)."""
    xq, xp = np.asarray(x_query, dtype=np.float64), np.asarray(x_place, dtype=np.float64)
    scores = -((xq[:, None] - xp[None, :]) ** 2) / (factor * float(width) ** 2)  # (L, S)
    # count[j] equal weights e^{s_j} at place j: the place weighs count[j] e^{s_j} = e^{s_j + log count[j]}
    weights = softmax(scores + power * np.log(np.asarray(count, dtype=np.float64)))
    return weights @ np.asarray(y_mean, dtype=np.float64)  # (L, S) @ (S,) -> (L,)


def _counts_after_softmax(x_query, x_place, count, y_mean, width):
    """Each place's softmax weight times its count, not renormalised."""
    weights = softmax(-((np.asarray(x_query)[:, None] - np.asarray(x_place)[None, :]) ** 2) / (2 * width**2))
    return (weights * np.asarray(count, dtype=np.float64)) @ np.asarray(y_mean, dtype=np.float64)


def _naive_counts(x_query, x_place, count, y_mean, width):
    with np.errstate(all="ignore"):
        e = np.exp(-((np.asarray(x_query)[:, None] - np.asarray(x_place)[None, :]) ** 2) / (2 * width**2))
        e = e * np.asarray(count, dtype=np.float64)
        return (e / e.sum(axis=-1, keepdims=True)) @ np.asarray(y_mean, dtype=np.float64)


def counts_case(label, seed, S, L, width, most=20, far=(), dtype=np.float64):
    """S distinct places 0.3 to 1.5 apart with counts 1..most (not all equal), L queries among them
    and the queries `far` from them: x_query, x_place, count, y_mean, width."""
    rng = np.random.default_rng(seed)
    x_place = np.cumsum(rng.uniform(0.3, 1.5, S)) - 1.0
    rng.shuffle(x_place)
    count = rng.integers(1, most + 1, S)
    if S > 1 and np.all(count == count[0]):
        count[0] = count[0] % most + 1
    y_mean = rng.normal(size=S) * 2
    x_query = np.concatenate(
        [rng.uniform(x_place.min() - 1, x_place.max() + 1, L), np.asarray(far, dtype=float)]
    )
    return Case(
        label,
        x_query=x_query.astype(dtype),
        x_place=x_place.astype(dtype),
        count=count.astype(np.int64),
        y_mean=y_mean.astype(dtype),
        width=width,
    )


def _counts_cases():
    return (
        grouped(
            "a few places",
            Case(
                "three places, 1, 5 and 2 readings, width 1",
                x_query=np.array([0.0, 1.5, 2.5]),
                x_place=np.array([0.0, 1.0, 3.0]),
                count=np.array([1, 5, 2]),
                y_mean=np.array([1.0, 2.0, -1.0]),
                width=1.0,
            ),
            counts_case("6 places, up to 20 readings each, width 0.6", 5, 6, 5, 0.6),
        )
        + grouped(
            "far queries and narrow kernels",
            counts_case("5 places, a query 400 away, width 0.3", 6, 5, 3, 0.3, far=(-400.0,)),
        )
        + grouped(
            "years of readings",
            counts_case("7 places, up to 10^12 readings each, width 0.8", 8, 7, 4, 0.8, most=10**12),
        )
    )


register(
    Exercise(
        id="ch00.regression_from_counts",
        number="0.5",
        title="kernel regression from a summary",
        points=3,
        function="regression_from_counts",
        hint="write the prediction on the raw readings as a sum over readings, then gather the readings "
        "that share a place: what do their weights have in common?",
        kind="extend",
        description="A sensor log was summarised before it reached you: the readings were taken at "
        "`S` distinct places `x_place (S,)`, `count[j]` of them at place `j` (a positive integer, "
        "as large as $10^{12}$: the log ran for years), and of their values only the mean "
        "`y_mean[j]` was kept. Return the predictions `(L,)` at "
        "`x_query (L,)` that the chapter's Gaussian-kernel regression of width `width` would make "
        "if it were run on the original readings, each reading a key at its place with its own "
        "value. Queries may lie far from every place.",
        solution='''
            def regression_from_counts(x_query, x_place, count, y_mean, width):
                """The kernel regression's predictions (L,) on the readings that count and y_mean summarise."""
                ### BEGIN SOLUTION
                scores = -((x_query[:, None] - x_place[None, :]) ** 2) / (2 * width**2)  # (L, S)
                # the count[j] readings at place j share one weight each, so the place weighs count[j]
                # times as much as one reading there; their values add up to count[j] * y_mean[j]
                weights = softmax(scores + np.log(count))  # e^(s + log c) = c e^s, rows sum to 1
                return weights @ y_mean  # (L, S) @ (S,) -> (L,)
                ### END SOLUTION
        ''',
        reference=_from_counts,
        public_cases=_counts_cases,
        needs=SOFTMAX_NEEDS,
        diagnoses=(
            Diagnosis(
                "your predictions are those of a regression with one reading per place",
                name="counts ignored",
                hint="a place with many readings holds many keys",
                variant=lambda xq, xp, c, y, w: _from_counts(xq, xp, c, y, w, power=0.0),
            ),
            Diagnosis(
                "a query's weights in your answer do not sum to 1",
                name="weights not renormalised",
                hint="the raw regression's weights over all the readings sum to 1",
                variant=_counts_after_softmax,
            ),
            Diagnosis(
                "your answer counts each place's readings twice over",
                name="counts squared",
                hint="the mean already divides the place's sum by its count",
                variant=lambda xq, xp, c, y, w: _from_counts(xq, xp, c, y, w, power=2.0),
            ),
            Diagnosis(
                "your answer gives a place with many readings less weight, not more",
                name="divided by the counts",
                variant=lambda xq, xp, c, y, w: _from_counts(xq, xp, c, y, w, power=-1.0),
            ),
            Diagnosis(
                "the predictions are those of a kernel sqrt(2) times narrower: what is in the kernel's "
                "denominator?",
                name="kernel without the factor 2",
                variant=lambda xq, xp, c, y, w: _from_counts(xq, xp, c, y, w, factor=1.0),
            ),
            Diagnosis(
                "a query far from every place gets NaN: its kernel values all underflow to 0. Weights "
                "from a softmax never do",
                name="underflow far from every place",
                variant=_naive_counts,
            ),
        ),
    )
)
