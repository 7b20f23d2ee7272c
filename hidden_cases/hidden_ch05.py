"""Hidden cases, chapter 5 (multi-head attention)."""

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


def _weights(rng, d, dtype=np.float64):
    names = ("W_q", "W_k", "W_v", "W_o")
    return {name: (rng.normal(size=(d, d)) / np.sqrt(d)).astype(dtype) for name in names}


def weights_from_dealt_heads():
    rng = np.random.default_rng(1501)

    def case(label, d, H, dtype=np.float64):
        return Case(label, **_weights(rng, d, dtype), n_heads=H)

    return _kinds(
        [
            case("d_model=16, 2 heads of width 8", 16, 2),
            case("d_model=12, 6 heads of width 2", 12, 6),
            case("d_model=6, 6 heads of width 1", 6, 6),
            case("d_model=8, 2 heads of width 4", 8, 2),
            case("d_model=3, one head", 3, 1),
            case("float32, d_model=10, 5 heads of width 2", 10, 5, np.float32),
        ],
        "several heads",
        "several heads",
        "edge counts",
        "edge counts",
        "edge counts",
        "dtype",
    )


def merge_copied_heads():
    from attncourse.exercises.chapters.ch05 import copied_head_case

    rng = np.random.default_rng(1502)
    return _kinds(
        [
            copied_head_case(rng, "6 heads of width 2", 12, 6, 1, 5),
            copied_head_case(rng, "4 heads of width 4", 16, 4, 1, 3),
            copied_head_case(rng, "3 heads of width 1", 3, 3, 0, 1),
            copied_head_case(rng, "2 heads of width 5", 10, 2, 0, 1),
            copied_head_case(rng, "float32, 5 heads of width 2", 10, 5, 0, 3, np.float32),
        ],
        "several heads",
        "several heads",
        "edge counts",
        "edge counts",
        "edge counts",
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


def mha_uneven_heads():
    rng = np.random.default_rng(1505)

    def case(label, B, L, widths, dtype=np.float64):
        d = sum(widths)
        Ws = {
            n: (rng.normal(size=(d, d)) / np.sqrt(d) * 1.5).astype(dtype)
            for n in ("W_q", "W_k", "W_v", "W_o")
        }
        return Case(label, x=rng.normal(size=(B, L, d)).astype(dtype), **Ws, widths=np.array(widths))

    return _kinds(
        [
            case("widths [6, 1, 1], B=2, L=5", 2, 5, (6, 1, 1)),
            case("widths [2, 3, 5], B=3, L=3", 3, 3, (2, 3, 5)),
            case("widths [1, 7], B=1, L=6", 1, 6, (1, 7)),
            case("widths [2, 2, 2, 6], B=2, L=4", 2, 4, (2, 2, 2, 6)),
            case("widths [1, 1], B=2, L=3", 2, 3, (1, 1)),
            case("float32, widths [4, 1, 3], B=2, L=5", 2, 5, (4, 1, 3), np.float32),
        ],
        "uneven widths",
        "uneven widths",
        "edge widths",
        "edge widths",
        "edge widths",
        "dtype",
    )


def predict_causal_top_keys():
    return _kinds([Case("causal, d_head = 1, L = 12")], "the count")


def mha_forward():
    rng = np.random.default_rng(1507)

    def case(label, B, L, d, H, dtype=np.float64):
        return Case(label, x=rng.normal(size=(B, L, d)).astype(dtype), **_weights(rng, d, dtype), n_heads=H)

    return _kinds(
        [
            case("B=3, L=4, d_model=12, 6 heads", 3, 4, 12, 6),
            case("B=2, L=2, d_model=6, 3 heads of width 2", 2, 2, 6, 3),
            case("B=4, L=5, d_model=8, 4 heads", 4, 5, 8, 4),
            case("B=5, L=3, d_model=4, 2 heads", 5, 3, 4, 2),
            case("B=2, one token, d_model=6, 2 heads", 2, 1, 6, 2),
            case("float32, B=2, L=5, d_model=8, 2 heads", 2, 5, 8, 2, np.float32),
        ],
        "batches",
        "batches",
        "batches",
        "batches",
        "batches",
        "dtype",
    )


HIDDEN = {
    "ch05.weights_from_dealt_heads": weights_from_dealt_heads,
    "ch05.merge_copied_heads": merge_copied_heads,
    "ch05.multi_head_attention": multi_head_attention,
    "ch05.predict_causal_top_keys": predict_causal_top_keys,
    "ch05.mha_uneven_heads": mha_uneven_heads,
    "ch05.mha_forward": mha_forward,
}


def heads_from_averaged_weights():
    from attncourse.exercises.chapters.ch05 import _averaged_maps

    rng = np.random.default_rng(1506)

    def case(label, B, L, d, H, scale=1.0, dtype=np.float64):
        q, k = scale * rng.normal(size=(B, L, d)), scale * rng.normal(size=(B, L, d))
        return Case(
            label, q=q.astype(dtype), k=k.astype(dtype), weights=_averaged_maps(q, k, H).astype(dtype)
        )

    return (
        grouped(
            "head counts",
            case("d_model=10, 5 heads", 2, 3, 10, 5),
            case("d_model=24, 8 heads, L=7", 1, 7, 24, 8),
        )
        + grouped(
            "edge counts",
            case("one head, d_model=6", 1, 5, 6, 1),
            case("d_model=5, 5 heads", 2, 4, 5, 5),
        )
        + grouped("dtype", case("float32, d_model=12, 6 heads", 2, 4, 12, 6, dtype=np.float32))
    )


HIDDEN.update(
    {
        "ch05.heads_from_averaged_weights": heads_from_averaged_weights,
    }
)
