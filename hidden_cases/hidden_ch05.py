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


def predict_summed_scores_rank():
    return _kinds([Case("d_model = 8, H = 4, L = 10")], "the count")


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


def merge_single_heads():
    rng = np.random.default_rng(1505)

    def case(label, d, H, dtype=np.float64):
        d_head = d // H
        proj = {
            n: (rng.normal(size=(H, d, d_head)) / np.sqrt(d)).astype(dtype) for n in ("W_q", "W_k", "W_v")
        }
        return Case(label, **proj, W_o=(rng.normal(size=(H, d_head, d)) / np.sqrt(d)).astype(dtype))

    return _kinds(
        [
            case("6 modules, d_model=12, d_head=2", 12, 6),
            case("2 modules, d_model=10, d_head=5", 10, 2),
            case("5 modules of width 1", 5, 5),
            case("float32, 3 modules, d_model=12, d_head=4", 12, 3, np.float32),
        ],
        "modules",
        "modules",
        "modules",
        "modules",
    )


def predict_causal_top_keys():
    return _kinds([Case("causal, d_head = 1, L = 12")], "the count")


def mha_forward():
    rng = np.random.default_rng(1507)
    return _kinds(
        [
            Case(
                "B=1, L=4, d_model=12, 6 heads", x=rng.normal(size=(1, 4, 12)), **_weights(rng, 12), n_heads=6
            ),
            Case(
                "B=3, L=2, d_model=6, 3 heads of width 2",
                x=rng.normal(size=(3, 2, 6)),
                **_weights(rng, 6),
                n_heads=3,
            ),
            Case(
                "float32, 2 heads, d_model=8",
                x=rng.normal(size=(2, 5, 8)).astype(np.float32),
                **_weights(rng, 8, np.float32),
                n_heads=2,
            ),
            Case("one head, d_model=6", x=rng.normal(size=(2, 3, 6)), **_weights(rng, 6), n_heads=1),
            Case("d_head = 1, 5 heads", x=rng.normal(size=(1, 4, 5)), **_weights(rng, 5), n_heads=5),
        ],
        "heads",
        "heads",
        "heads",
        "heads",
        "heads",
    )


HIDDEN = {
    "ch05.weights_from_dealt_heads": weights_from_dealt_heads,
    "ch05.predict_summed_scores_rank": predict_summed_scores_rank,
    "ch05.multi_head_attention": multi_head_attention,
    "ch05.predict_causal_top_keys": predict_causal_top_keys,
    "ch05.merge_single_heads": merge_single_heads,
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
