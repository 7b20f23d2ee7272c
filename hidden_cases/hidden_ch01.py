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


def attention_kl():
    rng = np.random.default_rng(1105)
    t32 = rng.normal(size=(3, 6)).astype(np.float32) * 3
    s32 = (t32 + rng.normal(size=(3, 6)).astype(np.float32)).astype(np.float32)
    s32[1, 2] -= 300.0  # the student's weight on one key underflows in float32
    t32[2, 4] -= 300.0  # the teacher's weight on one key underflows in float32
    masked_t = rng.normal(size=(2, 2, 5))
    masked_s = rng.normal(size=(2, 2, 5)) * 2
    masked_t[..., 1] = masked_s[..., 1] = -np.inf  # key 1 masked in every row
    masked_t[0, 1, 3] = masked_s[0, 1, 3] = -np.inf
    return _kinds(
        [
            Case(
                "a row identical to its teacher (KL 0) and one that is not",
                teacher=np.array([[1.0, 2.0, 3.0], [1.0, 2.0, 3.0]]),
                student=np.array([[1.0, 2.0, 3.0], [3.0, 2.0, 1.0]]),
            ),
            Case("rows (5, 7)", teacher=rng.normal(size=(5, 7)) * 2, student=rng.normal(size=(5, 7))),
            Case(
                "batch dimensions (2, 2, 3, 2)",
                teacher=rng.normal(size=(2, 2, 3, 2)),
                student=rng.normal(size=(2, 2, 3, 2)),
            ),
            Case("float32 (3, 6), each side 300 below on one key", teacher=t32, student=s32),
            Case(
                "float64 scores near -2000, one row shifted by 1000",
                teacher=np.array([[-2000.0, -2001.0, -1999.0], [1000.0, 0.0, 1000.0]]),
                student=np.array([[-2000.0, -1999.0, -2003.0], [1000.0, 1000.0, 0.0]]),
            ),
            Case("masked keys in (2, 2, 5)", teacher=masked_t, student=masked_s),
        ],
        "values",
        "values",
        "batch dimensions",
        "scores far apart",
        "scores far apart",
        "masked keys",
    )


def log_sigmoid():
    rng = np.random.default_rng(1106)
    return _kinds(
        [
            Case("scores (2, 3, 4) in [-6, 6]", z=rng.uniform(-6, 6, size=(2, 3, 4))),
            Case("float32 scores (5,) in [-3, 3]", z=rng.uniform(-3, 3, size=5).astype(np.float32)),
            Case(
                "float64 scores (2, 3) from -999 to -60, and -0.5",
                z=np.append(-rng.uniform(60, 999, size=5), -0.5).reshape(2, 3),
            ),
            Case(
                "float32 scores from -110 to -89, and -3",
                z=np.array([-110.0, -100.0, -89.0, -3.0], dtype=np.float32),
            ),
            Case(
                "float64 scores (4,) from 60 to 999, and 0.5", z=np.append(rng.uniform(60, 999, size=3), 0.5)
            ),
            Case(
                "float32 scores from 89 to 110, and 1.5",
                z=np.array([[89.0, 100.0, 110.0, 1.5]], dtype=np.float32),
            ),
        ],
        "moderate scores",
        "moderate scores",
        "very negative scores",
        "very negative scores",
        "very positive scores",
        "very positive scores",
    )


def smooth_max_slope():
    rng = np.random.default_rng(1107)
    masked = rng.normal(size=(2, 3, 4)) * 5
    masked[0, :, 1] = -np.inf
    masked[1, 2, [0, 3]] = -np.inf
    return _kinds(
        [
            Case("rows (4, 6), T = 0.7", x=rng.normal(size=(4, 6)) * 2, temperature=0.7),
            Case(
                "float32 rows (2, 5), T = 1.5", x=rng.normal(size=(2, 5)).astype(np.float32), temperature=1.5
            ),
            Case("equal scores: log n, T = 10", x=np.full((2, 7), 4.0), temperature=10.0),
            Case(
                "scores near -3000 and 3000, T = 1/64",
                x=np.array([[-3000.0, -2999.96875, -3000.03125], [3000.0, 2999.984375, 2999.0]]),
                temperature=0.015625,
            ),
            Case(
                "float32 scores near 500 in steps of 1/8, T = 1/16",
                x=(500 + rng.integers(-8, 8, size=(3, 4)) / 8).astype(np.float32),
                temperature=0.0625,
            ),
            Case("-inf entries in (2, 3, 4), T = 0.3", x=masked, temperature=0.3),
        ],
        "slopes",
        "slopes",
        "slopes",
        "large scores and small temperatures",
        "large scores and small temperatures",
        "masked entries",
    )


HIDDEN.update(
    {
        "ch01.smooth_max_slope": smooth_max_slope,
        "ch01.attention_kl": attention_kl,
        "ch01.log_sigmoid": log_sigmoid,
    }
)
