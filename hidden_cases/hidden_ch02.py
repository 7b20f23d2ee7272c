"""Hidden cases, chapter 2 (dot-product attention)."""

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


def dot_product_attention():
    rng = np.random.default_rng(1202)
    n = rng.normal
    return _kinds(
        [
            Case("L != S, E != Ev", q=n(size=(3, 2)), k=n(size=(6, 2)), v=n(size=(6, 5))),
            Case("one query", q=n(size=(1, 4)), k=n(size=(3, 4)), v=n(size=(3, 2))),
            Case("one key", q=n(size=(4, 3)), k=n(size=(1, 3)), v=n(size=(1, 3))),
            Case(
                "batch and heads (2, 3, L, E)",
                q=n(size=(2, 3, 4, 5)),
                k=n(size=(2, 3, 6, 5)),
                v=n(size=(2, 3, 6, 2)),
            ),
            Case(
                "float32",
                q=n(size=(2, 4, 3)).astype(np.float32),
                k=n(size=(2, 5, 3)).astype(np.float32),
                v=n(size=(2, 5, 3)).astype(np.float32),
            ),
            Case("large scores", q=n(size=(2, 3)) * 20, k=n(size=(4, 3)) * 20, v=n(size=(4, 2))),
        ],
        "values",
        "values",
        "values",
        "batch dimensions",
        "batch dimensions",
        "values",
    )


def output_jacobian():
    rng = np.random.default_rng(1202)
    n = rng.normal
    return _kinds(
        [
            Case("two keys", q=n(size=(2, 3)), k=n(size=(2, 3)), v=n(size=(2, 2))),
            Case("L=4, S=6, E=2, Ev=3", q=n(size=(4, 2)), k=n(size=(6, 2)), v=n(size=(6, 3))),
            Case(
                "float32, L=2, S=3, E=Ev=3",
                q=n(size=(2, 3)).astype(np.float32),
                k=n(size=(3, 3)).astype(np.float32),
                v=n(size=(3, 3)).astype(np.float32),
            ),
            Case(
                "scores of +-200, two keys tied",
                q=np.array([[20.0, 20.0], [-10.0, 10.0]]),
                k=np.array([[10.0, 0.0], [0.0, 10.0], [-5.0, -5.0]]),
                v=n(size=(3, 2)),
            ),
        ],
        "Jacobians",
        "Jacobians",
        "Jacobians",
        "large scores",
    )


def query_for_weights():
    rng = np.random.default_rng(1203)
    return _kinds(
        [
            Case("E=S=5", k=rng.normal(size=(5, 5)), p=rng.dirichlet(np.ones(5))),
            Case("a nearly one-hot target", k=rng.normal(size=(3, 3)), p=np.array([0.998, 0.001, 0.001])),
            Case(
                "float32 keys and target",
                k=rng.normal(size=(3, 3)).astype(np.float32),
                p=np.array([0.5, 0.3, 0.2], dtype=np.float32),
            ),
            Case(
                "E=S=2, four targets (4, 2)", k=rng.normal(size=(2, 2)), p=rng.dirichlet(np.ones(2), size=4)
            ),
        ],
        "queries",
        "queries",
        "queries",
        "several targets",
    )


HIDDEN = {
    "ch02.batched_attention": dot_product_attention,
    "ch02.output_jacobian": output_jacobian,
    "ch02.query_for_weights": query_for_weights,
}


def predict_shapes():
    return _kinds([Case("q (4, 1, 6, 8), k (3, 10, 8), v (3, 10, 5)")], "the shapes")


def fix_softmax_axis():
    rng = np.random.default_rng(1205)
    n = rng.normal
    return _kinds(
        [
            Case("two queries, S=5", q=n(size=(2, 3)), k=n(size=(5, 3)), v=n(size=(5, 2))),
            Case("L=6, S=2", q=n(size=(6, 2)), k=n(size=(2, 2)), v=n(size=(2, 4))),
            Case(
                "float32",
                q=n(size=(4, 3)).astype(np.float32),
                k=n(size=(3, 3)).astype(np.float32),
                v=n(size=(3, 3)).astype(np.float32),
            ),
        ],
        "outputs",
        "outputs",
        "outputs",
    )


HIDDEN.update({"ch02.predict_shapes": predict_shapes, "ch02.attend_each_query": fix_softmax_axis})
