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
                "very low temperature (needs the max subtracted)",
                logits=np.array([[3.0, 2.0, 1.0], [0.5, 0.4, 0.45]]),
                temperature=0.001,
            ),
            Case("very high temperature", logits=rng.normal(size=(2, 5)) * 3, temperature=100.0),
            Case("batch dimensions (2, 3, 4)", logits=rng.normal(size=(2, 3, 4)), temperature=2.0),
            Case("float32", logits=rng.normal(size=(3, 6)).astype(np.float32), temperature=0.7),
        ],
        "extreme temperatures",
        "values",
        "batch dimensions",
        "values",
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


def entropy():
    rng = np.random.default_rng(1103)
    logits = rng.normal(size=(2, 3, 5))
    p = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    return _kinds(
        [
            Case("uniform over 8 and one-hot rows", p=np.array([[1 / 8] * 8, [0, 0, 1, 0, 0, 0, 0, 0]])),
            Case("batch dimensions (2, 3, 5)", p=p),
            Case("float32 with zeros", p=np.array([[0.25, 0.0, 0.75], [0.0, 0.5, 0.5]], dtype=np.float32)),
            Case("two outcomes", p=np.array([0.9, 0.1])),
        ],
        "zero probabilities",
        "batch dimensions",
        "zero probabilities",
        "values",
    )


def softmax_jacobian():
    rng = np.random.default_rng(1104)
    return _kinds(
        [
            Case("large logits", x=np.array([1000.0, 1001.0, 999.0])),
            Case("six random logits", x=rng.normal(size=6) * 2),
            Case("float32", x=rng.normal(size=4).astype(np.float32)),
            Case("nearly one-hot", x=np.array([10.0, -10.0, 0.0])),
        ],
        "large logits",
        "values",
        "values",
        "values",
    )


HIDDEN = {
    "ch01.temperature_softmax": temperature_softmax,
    "ch01.stable_softmax": stable_softmax,
    "ch01.attention_entropy": entropy,
    "ch01.softmax_jacobian": softmax_jacobian,
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
