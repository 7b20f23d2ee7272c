"""Hidden cases, chapter 5 (multi-head attention)."""

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


def _weights(rng, d, dtype=np.float64):
    names = ("W_q", "W_k", "W_v", "W_o")
    return {name: (rng.normal(size=(d, d)) / np.sqrt(d)).astype(dtype) for name in names}


def split_into_heads():
    rng = np.random.default_rng(1501)
    return _kinds(
        [
            Case("no batch: (L, d_model) = (3, 4), 2 heads", x=rng.normal(size=(3, 4)), n_heads=2),
            Case("one head", x=rng.normal(size=(2, 3, 4)), n_heads=1),
            Case("d_head = 1", x=rng.normal(size=(1, 2, 4)), n_heads=4),
            Case("batch and more: (2, 2, 3, 8), 4 heads", x=rng.normal(size=(2, 2, 3, 8)), n_heads=4),
        ],
        "batch dimensions",
        "heads",
        "heads",
        "batch dimensions",
    )


def combine_heads():
    rng = np.random.default_rng(1502)
    return _kinds(
        [
            Case("no batch: (2, 3, 2)", x=rng.normal(size=(2, 3, 2))),
            Case("one head", x=rng.normal(size=(2, 1, 3, 4))),
            Case("(3, 4, 5, 2)", x=rng.normal(size=(3, 4, 5, 2))),
        ],
        "batch dimensions",
        "heads",
        "heads",
    )


def multi_head_attention():
    rng = np.random.default_rng(1503)
    return _kinds(
        [
            Case("4 heads, d_model=8, L=5, B=3", x=rng.normal(size=(3, 5, 8)), **_weights(rng, 8), n_heads=4),
            Case("one head", x=rng.normal(size=(2, 3, 4)), **_weights(rng, 4), n_heads=1),
            Case("d_head = 1", x=rng.normal(size=(1, 4, 4)), **_weights(rng, 4), n_heads=4),
            Case(
                "float32, 2 heads",
                x=rng.normal(size=(2, 6, 8)).astype(np.float32),
                **_weights(rng, 8, np.float32),
                n_heads=2,
            ),
            Case("one token", x=rng.normal(size=(2, 1, 6)), **_weights(rng, 6), n_heads=3),
        ],
        "heads",
        "heads",
        "heads",
        "heads",
        "heads",
    )


def mha_parameter_count():
    return _kinds(
        [
            Case("d_model=768, 12 heads, with biases", d_model=768, n_heads=12, bias=True),
            Case("d_model=4, 1 head, with biases", d_model=4, n_heads=1, bias=True),
            Case("d_model=64, 64 heads, no biases", d_model=64, n_heads=64, bias=False),
        ],
        "counts",
        "counts",
        "counts",
    )


def weights_from_torch():
    rng = np.random.default_rng(1505)
    return _kinds(
        [
            Case(
                "d_model=2", in_proj_weight=rng.normal(size=(6, 2)), out_proj_weight=rng.normal(size=(2, 2))
            ),
            Case(
                "d_model=8, float32",
                in_proj_weight=rng.normal(size=(24, 8)).astype(np.float32),
                out_proj_weight=rng.normal(size=(8, 8)).astype(np.float32),
            ),
        ],
        "weights",
        "weights",
    )


HIDDEN = {
    "ch05.split_into_heads": split_into_heads,
    "ch05.combine_heads": combine_heads,
    "ch05.multi_head_attention": multi_head_attention,
    "ch05.mha_parameter_count": mha_parameter_count,
    "ch05.weights_from_torch": weights_from_torch,
}


def predict_mha_parameters():
    return _kinds([Case("d_model=512, 8 query heads, 2 key/value heads")], "the count")


def grouped_query_attention():
    rng = np.random.default_rng(1507)
    n = rng.normal
    return _kinds(
        [
            Case(
                "one key/value head for 4 query heads (multi-query)",
                q=n(size=(2, 4, 3, 2)),
                k=n(size=(2, 1, 4, 2)),
                v=n(size=(2, 1, 4, 2)),
            ),
            Case(
                "G = H: ordinary multi-head",
                q=n(size=(1, 3, 2, 4)),
                k=n(size=(1, 3, 5, 4)),
                v=n(size=(1, 3, 5, 2)),
            ),
            Case(
                "8 query heads, 2 groups, L != S",
                q=n(size=(1, 8, 4, 4)),
                k=n(size=(1, 2, 6, 4)),
                v=n(size=(1, 2, 6, 3)),
            ),
            Case(
                "float32, 4 heads, 2 groups",
                q=n(size=(2, 4, 3, 8)).astype(np.float32),
                k=n(size=(2, 2, 3, 8)).astype(np.float32),
                v=n(size=(2, 2, 3, 8)).astype(np.float32),
            ),
        ],
        "grouped heads",
        "grouped heads",
        "grouped heads",
        "grouped heads",
    )


HIDDEN.update(
    {
        "ch05.predict_mha_parameters": predict_mha_parameters,
        "ch05.grouped_query_attention": grouped_query_attention,
    }
)
