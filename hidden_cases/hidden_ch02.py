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


def query_weights():
    rng = np.random.default_rng(1201)
    return _kinds(
        [
            Case("one key", q=rng.normal(size=4), k=rng.normal(size=(1, 4))),
            Case("E=16, S=7", q=rng.normal(size=16), k=rng.normal(size=(7, 16))),
            Case(
                "large scores", q=np.array([30.0, 20.0]), k=np.array([[10.0, 0.0], [0.0, 10.0], [5.0, 5.0]])
            ),
            Case(
                "float32",
                q=rng.normal(size=3).astype(np.float32),
                k=rng.normal(size=(5, 3)).astype(np.float32),
            ),
        ],
        "weights",
        "weights",
        "weights",
        "weights",
    )


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


def cross_attention():
    rng = np.random.default_rng(1203)
    n = rng.normal
    return _kinds(
        [
            Case(
                "L = S (shapes alone cannot tell the roles apart)", x_dec=n(size=(4, 3)), x_enc=n(size=(4, 3))
            ),
            Case("one decoder token", x_dec=n(size=(1, 5)), x_enc=n(size=(6, 5))),
            Case("batched (2, L, d), (2, S, d)", x_dec=n(size=(2, 3, 4)), x_enc=n(size=(2, 5, 4))),
            Case("float32", x_dec=n(size=(2, 3)).astype(np.float32), x_enc=n(size=(7, 3)).astype(np.float32)),
        ],
        "values",
        "values",
        "batch dimensions",
        "values",
    )


HIDDEN = {
    "ch02.query_weights": query_weights,
    "ch02.batched_attention": dot_product_attention,
    "ch02.cross_attention": cross_attention,
}


def predict_shapes():
    return _kinds([Case("q (2, 5, 8), k (2, 7, 8), v (2, 7, 3)")], "the shapes")


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


HIDDEN.update({"ch02.predict_shapes": predict_shapes, "ch02.fix_softmax_axis": fix_softmax_axis})
