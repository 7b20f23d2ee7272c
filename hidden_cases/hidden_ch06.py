"""Hidden cases, chapter 6 (masks): fully masked rows, broadcasting, float16, one head."""

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


def make_causal_mask():
    return _kinds(
        [
            Case("more queries than keys: L=5, S=3", L=5, S=3),
            Case("one query, S=3", L=1, S=3),
            Case("L=S=6", L=6, S=6),
            Case("L=2, S=7", L=2, S=7),
        ],
        "masks",
        "masks",
        "masks",
        "masks",
    )


def packed_causal_mask():
    return _kinds(
        [
            Case("one-token documents", doc_ids=np.array([[4, 5, 6, 7]])),
            Case("one position", doc_ids=np.array([[0], [3]])),
            Case(
                "three rows, L=6",
                doc_ids=np.array([[0, 0, 0, 1, 1, 2], [5, 5, 5, 5, 5, 5], [1, 2, 2, 2, 3, 3]]),
            ),
        ],
        "masks",
        "masks",
        "masks",
    )


def masked_logsumexp():
    rng = np.random.default_rng(1603)
    causal = np.tril(np.ones((3, 4), dtype=bool))
    return _kinds(
        [
            Case(
                "every row fully masked but one",
                scores=rng.normal(size=(3, 3)),
                mask=np.array([[0, 0, 0], [1, 0, 1], [0, 0, 0]], dtype=bool),
            ),
            Case(
                "a (3, 4) mask broadcast over a batch (2, 3, 4)",
                scores=rng.normal(size=(2, 3, 4)),
                mask=causal,
            ),
            Case(
                "scores near -1000, one visible key per row",
                scores=rng.normal(size=(2, 4)) - 1000,
                mask=np.array([[0, 0, 1, 0], [1, 0, 0, 0]], dtype=bool),
            ),
            Case(
                "float32 with a fully masked row",
                scores=rng.normal(size=(3, 4)).astype(np.float32),
                mask=np.array([[1, 1, 1, 1], [0, 0, 0, 0], [0, 0, 1, 1]], dtype=bool),
            ),
            Case(
                "masked scores of 5000",
                scores=np.array([[5000.0, 0.0, 1.0, 5000.0]]),
                mask=np.array([[0, 1, 1, 0]], dtype=bool),
            ),
        ],
        "fully masked rows",
        "batch dimensions",
        "values",
        "fully masked rows",
        "values",
    )


def ring_cache_attention():
    from attncourse.exercises.chapters.ch06.building_masks import _ring_case

    rng = np.random.default_rng(16040)
    return _kinds(
        [
            _ring_case(rng, "B=2, W=6, E=4, positions 7 and 2", [7, 2], 6, 4, 3),
            _ring_case(rng, "one slot: W=1, positions 0 and 5", [0, 5], 1, 3, 2),
            _ring_case(rng, "B=3, W=8, E=16, positions 6, 8 and 1000", [6, 8, 1000], 8, 16, 4),
            _ring_case(rng, "float32, B=2, W=5, E=8, positions 3 and 17", [3, 17], 5, 8, 3, np.float32),
        ],
        "values",
        "values",
        "values",
        "dtype",
    )


def mask_from_additive():
    from attncourse.exercises.chapters.ch06.building_masks import position_bias

    f16, f32, f64 = (float(np.finfo(t).min) for t in (np.float16, np.float32, np.float64))
    pad = np.array([[1, 0, 0], [1, 1, 1], [0, 0, 0]], dtype=bool)[:, None, None, :]  # (3, 1, 1, 3)
    window = np.tril(np.ones((4, 4), dtype=bool)) & ~np.tril(np.ones((4, 4), dtype=bool), k=-2)
    causal = np.tril(np.ones((3, 4), dtype=bool), k=1)
    mixed = position_bias(causal, np.arange(1, 4), np.arange(4), 3.0, f64, np.float64)
    mixed[0, 3], mixed[2, 0] = -np.inf, -np.inf
    far = np.array([4000, 6000, 118000, 125000])  # a query at 124000: one key after it
    return _kinds(
        [
            Case(
                "float16 padding with position terms, a fully padded row (3, 2, 1, 3)",
                bias=position_bias(
                    pad, [2], np.arange(3), np.array([1.0, 0.0625])[:, None, None], f16, np.float16
                ),
            ),
            Case(
                "float32 window (4, 4), slope 1/16, finfo.min",
                bias=position_bias(window, np.arange(4), np.arange(4), 0.0625, f32, np.float32),
            ),
            Case("float64, -inf and finfo.min mixed (3, 4)", bias=mixed),
            Case(
                "float16, a key 60000 back, -inf and finfo.min mixed (2, 4)",
                bias=np.stack(
                    [
                        position_bias(far <= 124000, [124000], far, 0.5, f16, np.float16)[0],
                        position_bias(far <= 124000, [124000], far, 0.25, -np.inf, np.float16)[0],
                    ]
                ),
            ),
            Case(
                "float64, a key 60000 back, finfo.min (1, 4)",
                bias=position_bias(far <= 124000, [124000], far, 0.5, f64, np.float64),
            ),
        ],
        "position terms and masks",
        "position terms and masks",
        "position terms and masks",
        "far keys",
        "far keys",
    )


def local_global_attention():
    rng = np.random.default_rng(1606)
    n = rng.normal
    cases = [
        Case("one head: global", x=n(size=(2, 3, 4)), **_weights(rng, 4), n_heads=1, window=2),
        Case("6 heads, L=7, window 3", x=n(size=(1, 7, 12)), **_weights(rng, 12), n_heads=6, window=3),
        Case("window longer than L", x=n(size=(2, 3, 4)), **_weights(rng, 4), n_heads=2, window=5),
        Case(
            "float32, 4 heads, window 2",
            x=n(size=(2, 5, 8)).astype(np.float32),
            **_weights(rng, 8, np.float32),
            n_heads=4,
            window=2,
        ),
    ]
    # scored in groups, as the public cases: a one-head case passes a wrong head scale by coincidence
    groups = ["windows", "windows", "edge windows", "windows"]
    for case, group in zip(cases, groups):
        case.group = group
    return cases


HIDDEN = {
    "ch06.make_causal_mask": make_causal_mask,
    "ch06.packed_causal_mask": packed_causal_mask,
    "ch06.masked_logsumexp": masked_logsumexp,
    "ch06.ring_cache_attention": ring_cache_attention,
    "ch06.mask_from_additive": mask_from_additive,
    "ch06.local_global_attention": local_global_attention,
}


def streaming_settings():
    from attncourse.exercises.chapters.ch06.attention_under_masks import _settings_case

    rng = np.random.default_rng(1617)
    return _kinds(
        [
            _settings_case(rng, "4 heads, L=16", 16, [(8, 4), (15, 0), (3, 12), (1, 1)]),
            _settings_case(rng, "one head, L=3", 3, [(1, 1)]),
            _settings_case(rng, "float32, 2 heads, L=10", 10, [(2, 0), (7, 2)], np.float32),
            _settings_case(rng, "2 heads, L=6, one-key windows", 6, [(1, 4), (1, 3)]),
        ],
        "settings",
        "heads without sinks or with a one-key window",
        "heads without sinks or with a one-key window",
        "heads without sinks or with a one-key window",
    )


def key_major_decoder():
    rng = np.random.default_rng(1608)
    n = rng.normal
    return _kinds(
        [
            Case("L=6", q=n(size=(6, 4)), k=n(size=(6, 4)), v=n(size=(6, 2))),
            Case("batch and heads", q=n(size=(2, 2, 4, 3)), k=n(size=(2, 2, 4, 3)), v=n(size=(2, 2, 4, 3))),
            Case(
                "float32",
                q=n(size=(5, 8)).astype(np.float32),
                k=n(size=(5, 8)).astype(np.float32),
                v=n(size=(5, 2)).astype(np.float32),
            ),
        ],
        "values",
        "batch dimensions",
        "values",
    )


def lengths_from_output():
    from attncourse.exercises.chapters.ch06.attention_under_masks import _lengths_case

    rng = np.random.default_rng(1629)
    return _kinds(
        [
            _lengths_case(rng, "B=4, S=8, E=4, Ev=3, lengths from 1 to 8", [8, 1, 5, 2], 8, 4, 3),
            _lengths_case(
                rng,
                "float32, B=3, S=6, E=16, Ev=2, a row with no real token",
                [0, 6, 4],
                6,
                16,
                2,
                np.float32,
            ),
            _lengths_case(rng, "one sequence, S=3, E=2, Ev=5", [2], 3, 2, 5),
            _lengths_case(rng, "float32, B=2, S=10, E=8, Ev=8", [9, 3], 10, 8, 8, np.float32),
        ],
        "lengths",
        "fully padded rows",
        "lengths",
        "lengths",
    )


HIDDEN.update(
    {
        "ch06.streaming_settings": streaming_settings,
        "ch06.key_major_decoder": key_major_decoder,
        "ch06.lengths_from_output": lengths_from_output,
    }
)


def first_wrong_cached_output():
    from attncourse.exercises.chapters.ch06.kv_cache_masks import _cache_stack

    return _kinds(
        [
            Case(
                "L=8, four masks",
                masks=_cache_stack(8, ("window", 1), ("leak", 0, 7), ("prefix", 5), ("packed", 4)),
            ),
            Case(
                "L=4, three masks",
                masks=_cache_stack(4, ("left padded", 3), ("two-sided window", 1), ("padded both ways", 4)),
            ),
            Case("L=1, one mask", masks=_cache_stack(1, ("causal",))),
            Case(
                "L=10, three masks",
                masks=_cache_stack(10, ("leak", 8, 9), ("global last",), ("window", 4)),
            ),
        ],
        "masks",
        "masks",
        "masks",
        "masks",
    )


HIDDEN["ch06.first_wrong_cached_output"] = first_wrong_cached_output
