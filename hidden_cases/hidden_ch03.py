"""Hidden cases, chapter 3 (scaling)."""

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


def scaled_scores():
    rng = np.random.default_rng(1301)
    n = rng.normal
    return _kinds(
        [
            Case("E=64, float32", q=n(size=(4, 64)).astype(np.float32), k=n(size=(6, 64)).astype(np.float32)),
            Case("E=2", q=n(size=(3, 2)), k=n(size=(3, 2))),
            Case("float16", q=n(size=(2, 16)).astype(np.float16), k=n(size=(5, 16)).astype(np.float16)),
            Case("batch and heads (2, 2, L, E)", q=n(size=(2, 2, 3, 8)), k=n(size=(2, 2, 4, 8))),
        ],
        "values",
        "values",
        "values",
        "batch dimensions",
    )


def score_variance():
    rng = np.random.default_rng(1302)
    n = rng.normal
    return _kinds(
        [
            Case("E=64", q=n(size=(1000, 64)), k=n(size=(1000, 64))),
            Case("E=1", q=n(size=(300, 1)), k=n(size=(300, 1))),
            Case("entries with standard deviation 3", q=n(size=(400, 8)) * 3, k=n(size=(400, 8))),
            Case("few pairs", q=n(size=(5, 4)), k=n(size=(5, 4))),
        ],
        "variances",
        "variances",
        "variances",
        "variances",
    )


def scaled_attention():
    rng = np.random.default_rng(1303)
    n = rng.normal
    return _kinds(
        [
            Case(
                "E=64, Ev=8, float32",
                q=n(size=(3, 64)).astype(np.float32),
                k=n(size=(5, 64)).astype(np.float32),
                v=n(size=(5, 8)).astype(np.float32),
            ),
            Case(
                "float16",
                q=n(size=(4, 16)).astype(np.float16),
                k=n(size=(4, 16)).astype(np.float16),
                v=n(size=(4, 4)).astype(np.float16),
            ),
            Case("one query", q=n(size=(1, 9)), k=n(size=(3, 9)), v=n(size=(3, 2))),
            Case(
                "batch and heads, L != S",
                q=n(size=(2, 3, 2, 4)),
                k=n(size=(2, 3, 5, 4)),
                v=n(size=(2, 3, 5, 6)),
            ),
            Case("large logits", q=n(size=(2, 4)) * 30, k=n(size=(3, 4)) * 30, v=n(size=(3, 3))),
        ],
        "values",
        "values",
        "values",
        "batch dimensions",
        "values",
    )


HIDDEN = {
    "ch03.scaled_scores": scaled_scores,
    "ch03.score_variance": score_variance,
    "ch03.scaled_attention": scaled_attention,
}


def predict_score_variance():
    return _kinds([Case("d_k = 80, Var(q_i) = 2.5, Var(k_i) = 3")], "the number")


def expected_abs_score():
    return _kinds(
        [
            Case("d_k=1, T=1", d_k=1, T=1.0),
            Case("d_k=512, T from 1 to sqrt(512)", d_k=512, T=np.array([1.0, 4.0, np.sqrt(512)])),
            Case("float32 temperatures, d_k=32", d_k=32, T=np.array([0.1, 3.0], dtype=np.float32)),
        ],
        "values",
        "values",
        "values",
    )


def fix_late_scaling():
    rng = np.random.default_rng(1306)
    n = rng.normal
    return _kinds(
        [
            Case("L=4, S=2, E=64", q=n(size=(4, 64)), k=n(size=(2, 64)), v=n(size=(2, 3))),
            Case("batch and heads", q=n(size=(2, 2, 3, 8)), k=n(size=(2, 2, 5, 8)), v=n(size=(2, 2, 5, 2))),
            Case(
                "float32, E=9",
                q=n(size=(3, 9)).astype(np.float32),
                k=n(size=(3, 9)).astype(np.float32),
                v=n(size=(3, 4)).astype(np.float32),
            ),
        ],
        "values",
        "batch dimensions",
        "values",
    )


HIDDEN.update(
    {
        "ch03.predict_score_variance": predict_score_variance,
        "ch03.expected_abs_score": expected_abs_score,
        "ch03.fix_late_scaling": fix_late_scaling,
    }
)
