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


def kernel_classifier():
    from attncourse.exercises.chapters.ch00 import class_case

    return _kinds(
        [
            Case(
                "one key, two classes",
                x_query=np.array([-1.0, 0.5, 4.0]),
                x_key=np.array([0.5]),
                label=np.array([1]),
                n_classes=2,
                width=1.0,
            ),
            class_case(
                "20 keys, five classes, classes 0 and 4 without keys, width 0.5",
                1001,
                20,
                6,
                5,
                0.5,
                missing=(0, 4),
            ),
            class_case("10 keys, three classes, float32, width 1.2", 1002, 10, 4, 3, 1.2, dtype=np.float32),
            class_case(
                "9 keys, four classes, queries 300 away on both sides, width 0.1",
                1003,
                9,
                2,
                4,
                0.1,
                far=(-300.0, 306.0),
            ),
        ],
        "probabilities",
        "probabilities",
        "probabilities",
        "far queries and narrow kernels",
    )


def additive_long_query():
    return _kinds([Case("four keys, w_v = (1, 2), q = c (1, 0), c -> infinity")], "prediction")


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


def regression_from_counts():
    from attncourse.exercises.chapters.ch00 import counts_case

    return _kinds(
        [
            Case(
                "one place, 4 readings",
                x_query=np.array([-1.0, 0.5, 3.0]),
                x_place=np.array([0.5]),
                count=np.array([4]),
                y_mean=np.array([2.5]),
                width=1.0,
            ),
            counts_case("8 places, up to 1000 readings, width 1.5", 1005, 8, 6, 1.5, most=1000),
            counts_case("4 places, float32, width 0.5", 1006, 4, 5, 0.5, dtype=np.float32),
            counts_case(
                "6 places, queries 300 away on both sides, width 0.1", 1007, 6, 2, 0.1, far=(-300.0, 300.0)
            ),
            counts_case(
                "5 places, float32, up to 10^12 readings, width 1.2",
                1008,
                5,
                4,
                1.2,
                most=10**12,
                dtype=np.float32,
            ),
            counts_case(
                "9 places, up to 10^11 readings, width 0.4",
                1009,
                9,
                3,
                0.4,
                most=10**11,
            ),
        ],
        "a few places",
        "a few places",
        "a few places",
        "far queries and narrow kernels",
        "years of readings",
        "years of readings",
    )


HIDDEN = {
    "ch00.kernel_regression": kernel_regression,
    "ch00.kernel_classifier": kernel_classifier,
    "ch00.additive_long_query": additive_long_query,
    "ch00.effective_keys": effective_keys,
    "ch00.regression_from_counts": regression_from_counts,
}
