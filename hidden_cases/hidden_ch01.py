"""Hidden cases, chapter 1 (softmax)."""

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


def temperature_softmax():
    rng = np.random.default_rng(1101)
    return _kinds(
        [
            Case(
                "temperatures 0.001 and 0.002 (needs the max subtracted)",
                logits=np.array([[3.0, 2.0, 1.0], [0.5, 0.4, 0.45]]),
                temperature=np.array([0.001, 0.002]),
            ),
            Case("one temperature, 100", logits=rng.normal(size=(2, 5)) * 3, temperature=100.0),
            Case(
                "logits (2, 3, 4), temperatures (2, 3)",
                logits=rng.normal(size=(2, 3, 4)),
                temperature=rng.uniform(0.5, 3, size=(2, 3)),
            ),
            Case(
                "float32, 4 rows of 4 (square)",
                logits=rng.normal(size=(4, 4)).astype(np.float32),
                temperature=np.array([0.3, 1.0, 3.0, 9.0], dtype=np.float32),
            ),
            Case("one row, temperatures of shape ()", logits=rng.normal(size=5), temperature=np.array(0.7)),
            Case(
                "float32 logits (2, 2, 3), temperatures (2, 2) with two zeros, a three-way tie",
                logits=np.array(
                    [[[1.0, 1.0, 1.0], [0.2, -0.3, 0.9]], [[2.0, 5.0, -1.0], [-4.0, -4.0, -5.0]]],
                    dtype=np.float32,
                ),
                temperature=np.array([[0.0, 0.5], [2.0, 0.0]], dtype=np.float32),
            ),
            Case(
                "one row, temperature 0 given as a plain number",
                logits=np.array([0.1, 0.3, 0.2]),
                temperature=0.0,
            ),
        ],
        "extreme temperatures",
        "one temperature",
        "batch dimensions",
        "a temperature per row",
        "one temperature",
        "greedy rows (temperature 0)",
        "greedy rows (temperature 0)",
    )


def stable_softmax():
    rng = np.random.default_rng(1102)
    return _kinds(
        [
            Case("float32 logits in the hundreds", x=(rng.normal(size=(4, 6)) * 300).astype(np.float32)),
            Case("float16 logits up to 20", x=(rng.uniform(-20, 20, size=(3, 5))).astype(np.float16)),
            Case("very negative logits", x=np.array([[-1000.0, -1001.0, -1002.0], [1.0, 2.0, 4.0]])),
            Case("rows on very different scales", x=np.array([[0.0, 1.0, 2.0], [1000.0, 999.0, 998.0]])),
            Case("batch dimensions (2, 3, 4)", x=rng.normal(size=(2, 3, 4))),
            Case("-inf entries get weight 0", x=np.array([[0.0, -np.inf, 1.0], [-np.inf, 2.0, 2.0]])),
            Case(
                "a single row of one logit and others",
                x=np.array([[5.0, 5.0, 5.0, 5.0], [0.0, 0.0, 10.0, 0.0]]),
            ),
        ],
        "extreme logits",
        "extreme logits",
        "extreme logits",
        "extreme logits",
        "batch dimensions",
        "extreme logits",
        "values",
    )


def temperature_derivative():
    rng = np.random.default_rng(1103)
    return _kinds(
        [
            Case("two logits, T = 0.3", logits=np.array([1.0, 0.0]), temperature=0.3),
            Case("rows (4, 6), T = 3", logits=rng.normal(size=(4, 6)), temperature=3.0),
            Case("float32, T = 0.8", logits=rng.normal(size=(2, 5)).astype(np.float32), temperature=0.8),
            Case("batch (2, 1, 3), T = 1.2", logits=rng.normal(size=(2, 1, 3)), temperature=1.2),
            Case(
                "logits near -2000, T = 0.25", logits=np.array([-2000.0, -2001.0, -1999.0]), temperature=0.25
            ),
        ],
        "derivatives",
        "derivatives",
        "derivatives",
        "batch dimensions",
        "large logits",
    )


def entropy_gradient():
    rng = np.random.default_rng(1104)
    return _kinds(
        [
            Case("two logits", x=np.array([0.3, -0.4])),
            Case("rows (5, 6)", x=rng.normal(size=(5, 6)) * 2),
            Case("float32", x=rng.normal(size=(3, 4)).astype(np.float32)),
            Case("batch (2, 2, 5)", x=rng.normal(size=(2, 2, 5))),
            Case("logits near -700 and two -inf", x=np.array([[-700.0, -np.inf, -701.0, -np.inf, -699.5]])),
        ],
        "gradients",
        "gradients",
        "gradients",
        "batch dimensions",
        "large and masked logits",
    )


HIDDEN = {
    "ch01.temperature_softmax": temperature_softmax,
    "ch01.stable_softmax": stable_softmax,
    "ch01.temperature_derivative": temperature_derivative,
    "ch01.entropy_gradient": entropy_gradient,
}


def logit_gap():
    return _kinds(
        [
            Case("a grid of targets, n=100", p=np.linspace(0.05, 0.95, 7), n=100),
            Case("almost certain, n=3", p=np.array([0.999, 0.9999]), n=3),
            Case("float32 targets, n=5", p=np.array([0.3, 0.6], dtype=np.float32), n=5),
        ],
        "gaps",
        "gaps",
        "gaps",
    )


def predict_overflow_logit():
    return _kinds([Case("float32, a row of 1000 equal logits")], "the number")


HIDDEN.update(
    {
        "ch01.logit_gap": logit_gap,
        "ch01.predict_overflow_logit": predict_overflow_logit,
    }
)
