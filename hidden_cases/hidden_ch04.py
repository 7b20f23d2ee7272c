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


def unpermute():
    rng = np.random.default_rng(1403)
    return grouped(
        "batch dimensions",
        Case("a batch (2, 4, 3)", out_permuted=rng.normal(size=(2, 4, 3)), perm=np.array([2, 3, 1, 0])),
    ) + grouped(
        "tokens",
        Case("L=6", out_permuted=rng.normal(size=(6, 2)), perm=np.array([5, 0, 1, 2, 3, 4])),
        Case("identity", out_permuted=rng.normal(size=(3, 3)), perm=np.array([0, 1, 2])),
    )


def attention_overtakes_projections():
    return _kinds(
        [
            Case("d_model=4096, E=Ev=128", d_model=4096, E=128, Ev=128),
            Case("d_model=100, E=10, Ev=30", d_model=100, E=10, Ev=30),
            Case("d_model=768, E=64, several Ev", d_model=768, E=64, Ev=np.array([16, 256])),
        ],
        "values",
        "values",
        "values",
    )


HIDDEN = {
    "ch04.project_qkv": project_qkv,
    "ch04.attention_with_counts": attention_with_counts,
    "ch04.unpermute": unpermute,
    "ch04.attention_overtakes_projections": attention_overtakes_projections,
}


def predict_projection_parameters():
    return grouped("the count", Case("d_model=512, d_k=d_v=64"))


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
        "ch04.predict_projection_parameters": predict_projection_parameters,
        "ch04.self_attention_out": fix_output_mix,
    }
)
