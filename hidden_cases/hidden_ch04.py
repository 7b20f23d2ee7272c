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


def recover_permutation():
    from attncourse.exercises.chapters.ch04 import _shuffled_run

    out, out_p = _shuffled_run(1403, 10, 16, 4, [7, 2, 9, 0, 4, 1, 8, 3, 6, 5])
    close = np.array([[1.0, 2.0, 3.0], [1.001, 2.0, 3.0], [-1.0, 0.5, 0.0], [10.0, 10.0, -10.0]])
    return _kinds(
        [
            Case("L=10, d_v=4, float32 rerun", out=out, out_permuted=out_p),
            Case(
                "L=4, two rows 1e-3 apart, a long row",
                out=close,
                out_permuted=(close[[3, 0, 1, 2]] * (1 + 1e-7)).astype(np.float32),
            ),
            Case("L=3, the same run twice (a swap)", out=close[:3], out_permuted=close[[1, 0, 2]]),
        ],
        "the layer run again on the shuffled tokens",
        "the layer run again on the shuffled tokens",
        "the same run twice",
    )


def recover_value_projection():
    from attncourse.exercises.chapters.ch04 import value_projection_case

    return _kinds(
        [
            value_projection_case("L=10, d_model=8, d_k=4, d_v=2", 492, 10, 8, 4, 2),
            value_projection_case("L=6, d_model=5, d_k=4, d_v=3", 408, 6, 5, 4, 3),
            value_projection_case("L=d_model=4, d_k=2, d_v=3", 423, 4, 4, 2, 3),
        ],
        "more tokens than d_model",
        "more tokens than d_model",
        "exactly d_model tokens",
    )


HIDDEN = {
    "ch04.project_qkv": project_qkv,
    "ch04.attention_with_counts": attention_with_counts,
    "ch04.recover_permutation": recover_permutation,
    "ch04.recover_value_projection": recover_value_projection,
}


def predict_cross_projection_parameters():
    return _kinds([Case("decoder 512, encoder 768, d_k=64, d_v=80, biases")], "the count")


def fix_output_mix():
    rng = np.random.default_rng(1406)
    n = rng.normal
    return _kinds(
        [
            Case(
                "L=6, d_model=3, d_k=5, d_v=4",
                x=n(size=(6, 3)),
                W_q=n(size=(3, 5)),
                W_k=n(size=(3, 5)),
                W_v=n(size=(3, 4)),
            ),
            Case(
                "float32, L=4, d_model=8, d_k=d_v=2",
                x=n(size=(4, 8)).astype(np.float32),
                W_q=n(size=(8, 2)).astype(np.float32),
                W_k=n(size=(8, 2)).astype(np.float32),
                W_v=n(size=(8, 2)).astype(np.float32),
            ),
            Case(
                "batch (3, 4, 4), d_k=3, d_v=1",
                x=n(size=(3, 4, 4)),
                W_q=n(size=(4, 3)),
                W_k=n(size=(4, 3)),
                W_v=n(size=(4, 1)),
            ),
        ],
        "shapes",
        "shapes",
        "batch dimensions",
    )


HIDDEN.update(
    {
        "ch04.predict_cross_projection_parameters": predict_cross_projection_parameters,
        "ch04.self_attention_out": fix_output_mix,
    }
)
