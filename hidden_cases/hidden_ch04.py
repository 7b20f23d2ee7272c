"""Hidden cases, chapter 4 (self-attention)."""

import numpy as np

from attncourse.exercises import Case, grouped


def _kinds(cases, *groups):
    """The cases, each put in the public group of its kind (same order)."""
    cases = list(cases)
    if len(cases) != len(groups):
        raise ValueError(f"{len(cases)} cases, {len(groups)} groups")
    for case, group in zip(cases, groups):
        case.group = group
    return cases


def project_qkv():
    rng = np.random.default_rng(1401)
    n = rng.normal
    return grouped(
        "batch dimensions",
        Case(
            "a batch (2, 5, 8), d_k=4, d_v=6",
            x=n(size=(2, 5, 8)),
            W_q=n(size=(8, 4)),
            W_k=n(size=(8, 4)),
            W_v=n(size=(8, 6)),
        ),
    ) + grouped(
        "shapes",
        Case("one token", x=n(size=(1, 3)), W_q=n(size=(3, 3)), W_k=n(size=(3, 3)), W_v=n(size=(3, 3))),
        Case(
            "float32",
            x=n(size=(4, 6)).astype(np.float32),
            W_q=n(size=(6, 2)).astype(np.float32),
            W_k=n(size=(6, 2)).astype(np.float32),
            W_v=n(size=(6, 2)).astype(np.float32),
        ),
    )


def attention_with_counts():
    rng = np.random.default_rng(1402)
    n = rng.normal
    return _kinds(
        [
            Case(
                "float32, L=3, S=4, E=8, Ev=2, counts 1, 7, 2, 3",
                q=n(size=(3, 8)).astype(np.float32),
                k=n(size=(4, 8)).astype(np.float32),
                v=n(size=(4, 2)).astype(np.float32),
                counts=np.array([1, 7, 2, 3]),
            ),
            Case(
                "all counts 0 but one",
                q=n(size=(2, 4)),
                k=n(size=(3, 4)),
                v=n(size=(3, 3)),
                counts=np.array([0, 0, 4]),
            ),
            Case(
                "a batch of 3, L=1, S=2, E=2, Ev=5, counts 2, 9",
                q=n(size=(3, 1, 2)),
                k=n(size=(3, 2, 2)),
                v=n(size=(3, 2, 5)),
                counts=np.array([2, 9]),
            ),
        ],
        "counts",
        "a key that occurs 0 times",
        "batch dimensions",
    )


def output_without_token():
    from attncourse.exercises.chapters.ch04 import layer_run

    def case(label, seed, L, j, **kw):
        run = layer_run(seed, L, **kw)
        return Case(label, out=run["out"], weights=run["weights"], v=run["v"], j=j)

    return _kinds(
        [
            case("L=2: one token left, d_v=3", 1431, 2, 0, d_v=3),
            case("float32, L=7, d_v=4, token 3 deleted", 1432, 7, 3, d_v=4, dtype=np.float32),
            case("a batch of 3, L=5, token 4 deleted", 1433, 5, 4, batch=(3,)),
        ],
        "one sentence",
        "one sentence",
        "batch dimensions",
    )


def add_projection_biases():
    from attncourse.exercises.chapters.ch04 import layer_run

    def case(label, seed, L, d_k, d_v, batch=(), dtype=np.float64):
        run = layer_run(seed, L, d_k=d_k, d_v=d_v, batch=batch, dtype=dtype)
        rng = np.random.default_rng(seed + 1)
        b_k, b_v = (rng.normal(size=n).astype(dtype) for n in (d_k, d_v))
        return Case(label, q=run["q"], out=run["out"], weights=run["weights"], b_k=b_k, b_v=b_v)

    return _kinds(
        [
            case("one token, d_k=2, d_v=3", 1441, 1, 2, 3),
            case("float32, L=6, d_k=5, d_v=2", 1442, 6, 5, 2, dtype=np.float32),
            case("a batch of 3, L=2, d_k=3, d_v=1", 1443, 2, 3, 1, batch=(3,)),
        ],
        "one sentence",
        "one sentence",
        "batch dimensions",
    )


def self_attention_in_blocks():
    rng = np.random.default_rng(1461)
    n = rng.normal

    def case(label, L, block, d_model=4, d_k=3, d_v=2, batch=(), dtype=np.float64):
        return Case(
            label,
            x=n(size=(*batch, L, d_model)).astype(dtype),
            W_q=n(size=(d_model, d_k)).astype(dtype),
            W_k=n(size=(d_model, d_k)).astype(dtype),
            W_v=n(size=(d_model, d_v)).astype(dtype),
            block=block,
        )

    return _kinds(
        [
            case("L=7, block=5 (a last block of 2)", 7, 5),
            case("float32, L=8, block=3, d_model=6, d_k=4", 8, 3, d_model=6, d_k=4, dtype=np.float32),
            case("a batch of 3, L=6, block=4, d_v=1", 6, 4, d_v=1, batch=(3,)),
        ],
        "blocks of several sizes",
        "blocks of several sizes",
        "batch dimensions",
    )


def predict_distinct_weights():
    return _kinds([Case("11 tokens, 5 words")], "the count")


HIDDEN = {
    "ch04.project_qkv": project_qkv,
    "ch04.attention_with_counts": attention_with_counts,
    "ch04.output_without_token": output_without_token,
    "ch04.add_projection_biases": add_projection_biases,
    "ch04.predict_distinct_weights": predict_distinct_weights,
    "ch04.self_attention_in_blocks": self_attention_in_blocks,
}
