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


def predict_key_stretch():
    return _kinds([Case("six keys in the plane, k4 stretched")], "the factor")


def _lengths_case(name, rng, L, S, E, lengths=None, dtype=np.float64, scale=(0.5, 2.0)):
    d = rng.normal(size=(S, E))
    d /= np.linalg.norm(d, axis=-1, keepdims=True)
    q = rng.normal(size=(L, E)) * rng.uniform(*scale, size=(L, 1))
    lengths = rng.uniform(0.3, 3.0, size=S) if lengths is None else np.asarray(lengths, dtype=float)
    s = q @ (lengths[:, None] * d).T
    w = np.exp(s - s.max(axis=-1, keepdims=True))
    w /= w.sum(axis=-1, keepdims=True)
    q, d, w = (a.astype(dtype) for a in (q, d, w))
    if dtype != np.float64:  # the promises hold at the case's own precision
        d = d / np.linalg.norm(d, axis=-1, keepdims=True)
        w = w / w.sum(axis=-1, keepdims=True)
    return Case(name, q=q, directions=d, weights=w)


def recover_key_lengths():
    rng = np.random.default_rng(2051)
    return _kinds(
        [
            _lengths_case("L=2, S=4, E=5", rng, 2, 4, 5),
            _lengths_case("L=S=3, E=2", rng, 3, 3, 2),
            _lengths_case("float32, L=4, S=3, E=3", rng, 4, 3, 3, dtype=np.float32),
            _lengths_case("L=6, S=8, E=4, short queries", rng, 6, 8, 4, scale=(0.2, 0.5)),
            _lengths_case(
                "L=4, S=5, E=2, lengths from 0.2 to 4", rng, 4, 5, 2, lengths=[0.2, 4.0, 1.0, 2.5, 0.6]
            ),
        ],
        "lengths",
        "lengths",
        "lengths",
        "lengths",
        "lengths far apart",
    )


HIDDEN.update(
    {"ch02.predict_key_stretch": predict_key_stretch, "ch02.recover_key_lengths": recover_key_lengths}
)
