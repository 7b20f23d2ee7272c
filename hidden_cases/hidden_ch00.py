"""Hidden cases, chapter 0 (why attention): one key, very narrow and very wide kernels, batch dims, float32."""

import numpy as np

from attncourse.exercises import Case


def _kinds(cases, *groups):
    """The cases, each put in the public group of its kind (same order)."""
    cases = list(cases)
    if len(cases) != len(groups):
        raise ValueError(f"{len(cases)} cases, {len(groups)} groups")
    for case, group in zip(cases, groups):
        case.group = group
    return cases


def kernel_regression():
    rng = np.random.default_rng(1000)
    x_key = rng.uniform(-3, 3, size=10)
    y = np.cos(x_key)
    return _kinds(
        [
            Case(
                "one key",
                x_query=np.array([-1.0, 0.0, 2.0]),
                x_key=np.array([0.5]),
                y_value=np.array([3.0]),
                width=1.0,
            ),
            Case(
                "narrow kernel, far queries",
                x_query=np.array([-10.0, 10.0]),
                x_key=x_key,
                y_value=y,
                width=0.05,
            ),
            Case(
                "wide kernel: close to the mean",
                x_query=np.linspace(-3, 3, 5),
                x_key=x_key,
                y_value=y,
                width=100.0,
            ),
            Case(
                "float32",
                x_query=np.linspace(-2, 2, 7).astype(np.float32),
                x_key=x_key.astype(np.float32),
                y_value=y.astype(np.float32),
                width=0.7,
            ),
        ],
        "far queries and narrow kernels",
        "far queries and narrow kernels",
        "predictions",
        "predictions",
    )


def far_from_the_data():
    rng = np.random.default_rng(1002)
    x = rng.uniform(-3, 3, 7)
    return _kinds(
        [
            Case("seven random keys, width 0.5", x_key=x, y_value=rng.normal(size=7), width=0.5),
            Case(
                "three keys share the smallest x, float32",
                x_key=np.array([-1.0, 2.0, -1.0, 0.0, -1.0], dtype=np.float32),
                y_value=np.array([3.0, 1.0, 6.0, -2.0, 0.0], dtype=np.float32),
                width=1.5,
            ),
            Case(
                "two keys, both ends shared by none, width 10",
                x_key=np.array([5.0, -5.0]),
                y_value=np.array([-1.0, 8.0]),
                width=10.0,
            ),
        ],
        "distinct keys",
        "keys at the same place",
        "distinct keys",
    )


def additive_score_cost():
    return _kinds([Case("E_q=500, two directions of 300, h=128, 25 -> 30 tokens")], "the counts")


def effective_keys():
    rng = np.random.default_rng(1004)
    x_key = rng.uniform(-2, 2, size=7)
    return _kinds(
        [
            Case("one key", x_query=np.array([0.0, 3.0]), x_key=np.array([1.0]), width=0.5),
            Case("7 unsorted keys, width 0.7", x_query=rng.uniform(-2, 2, size=5), x_key=x_key, width=0.7),
            Case(
                "float32, width 0.2",
                x_query=np.array([0.0, 0.3], dtype=np.float32),
                x_key=np.array([0.0, 0.1, 0.6, 1.0], dtype=np.float32),
                width=0.2,
            ),
            Case(
                "a query 1000 from the keys, width 0.05",
                x_query=np.array([1000.0, 0.0]),
                x_key=np.array([-0.05, 0.05, 0.4]),
                width=0.05,
            ),
        ],
        "counts",
        "counts",
        "counts",
        "far queries and narrow kernels",
    )


def values_from_predictions():
    from attncourse.exercises.chapters.ch00 import values_case

    return _kinds(
        [
            values_case("S=8 keys, L=12 queries, width 0.7", 3, 8, 4, 0.7),
            values_case("S=4 keys, L=4 queries, width 0.5, float32", 4, 4, 0, 0.5, np.float32),
            values_case("S=3 keys, L=5 queries, width 1", 4, 3, 2, 1.0),
        ],
        "more queries than keys",
        "as many queries as keys",
        "more queries than keys",
    )


HIDDEN = {
    "ch00.kernel_regression": kernel_regression,
    "ch00.far_from_the_data": far_from_the_data,
    "ch00.additive_score_cost": additive_score_cost,
    "ch00.effective_keys": effective_keys,
    "ch00.values_from_predictions": values_from_predictions,
}
