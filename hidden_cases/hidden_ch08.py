"""Hidden cases, chapter 8 (a Transformer block): one position, one head per feature, two-row logs, float32."""

import numpy as np

from attncourse.exercises import Case, grouped


def _weights(rng, d, d_ff, dtype=np.float64):
    w = {name: rng.normal(size=(d, d)) / np.sqrt(d) for name in ("W_q", "W_k", "W_v", "W_o")}
    w["W_1"] = rng.normal(size=(d, d_ff)) / np.sqrt(d)
    w["W_2"] = rng.normal(size=(d_ff, d)) / np.sqrt(d_ff)
    return {name: a.astype(dtype) for name, a in w.items()}


def value_ablation_difference():
    from attncourse.exercises.chapters.ch08 import _ablation_case

    rng = np.random.default_rng(1801)
    return (
        grouped(
            "heads",
            _ablation_case(rng, "one position, d_model=6, 3 heads, head 2", 1, 1, 6, 3, 2),
            _ablation_case(rng, "B=3, L=6, d_model=10, 5 heads, head 0", 3, 6, 10, 5, 0),
            _ablation_case(rng, "B=1, L=4, d_model=16, 2 heads, head 0", 1, 4, 16, 2, 0),
        )
        + grouped(
            "one feature per head, one head",
            _ablation_case(rng, "d_model=8, 8 heads of one feature, head 7", 2, 3, 8, 8, 7),
            _ablation_case(rng, "d_model=6, 1 head, L=7", 1, 7, 6, 1, 0),
        )
        + grouped(
            "dtype",
            _ablation_case(rng, "float32, d_model=12, 6 heads, head 1", 1, 4, 12, 6, 1, np.float32),
        )
    )


def post_norm_blocks():
    from attncourse.exercises.chapters.ch08 import _centred_rows, _scaled_to, _stack

    rng = np.random.default_rng(1802)
    n = rng.normal
    return (
        grouped(
            "mixed stacks",
            Case("one post-norm block", streams=_stack(rng, n(size=(1, 2, 4)), ("post",))),
            Case(
                "pre, then post, d_model=8, 4 heads",
                streams=_stack(rng, n(size=(2, 3, 8)), ("pre", "post"), n_heads=4),
            ),
            Case(
                "a large stream",
                streams=_stack(rng, 20 * n(size=(1, 4, 6)) - 7, ("pre", "post", "pre"), n_heads=3),
            ),
        )
        + grouped(
            "look-alikes",
            Case(
                "mean-0 rows with variance 1 over all rows, d_model=6",
                streams=_scaled_to(
                    rng, _centred_rows(rng, 1, 4, 6, [[0.5, 2.0, 0.25, 1.2]]), "global", n_heads=3
                ),
            ),
            Case(
                "rows of norm sqrt(d_model), d_model=4",
                streams=_scaled_to(rng, n(size=(2, 2, 4)) - 0.7, "row norm"),
            ),
        )
        + grouped(
            "dtype",
            Case(
                "float32, 4 blocks",
                streams=_stack(rng, n(size=(1, 3, 4)), ("post", "post", "pre", "post"), dtype=np.float32),
            ),
        )
    )


def attention_head_count():
    from attncourse.exercises.chapters.ch08 import _head_case

    rng = np.random.default_rng(1813)
    return (
        grouped(
            "head counts",
            _head_case(rng, "two positions, d_model=6, 3 heads", 2, 2, 6, 3),
            _head_case(rng, "d_model=10, 5 heads of two features", 1, 5, 10, 5),
            _head_case(rng, "d_model=6, 6 heads of one feature", 2, 3, 6, 6),
        )
        + grouped(
            "one head, many heads",
            _head_case(rng, "d_model=12, 1 head, one sequence of 3", 1, 3, 12, 1),
            _head_case(rng, "d_model=16, 8 heads", 2, 4, 16, 8),
            _head_case(rng, "d_model=8, 8 heads of one feature", 1, 6, 8, 8),
        )
        + grouped(
            "small rows",
            _head_case(rng, "x spread over about 0.003, d_model=8, 8 heads", 1, 5, 8, 8, spread=2e-3),
            _head_case(rng, "x spread over about 0.003, d_model=12, 4 heads", 2, 4, 12, 4, spread=2e-3),
        )
        + grouped(
            "dtype",
            _head_case(rng, "float32, d_model=8, 2 heads", 2, 5, 8, 2, dtype=np.float32),
            _head_case(rng, "float32, d_model=12, 12 heads", 1, 4, 12, 12, dtype=np.float32),
        )
    )


def layer_norm_parameters():
    from attncourse.exercises.chapters.ch08 import _ln_case

    rng = np.random.default_rng(1804)
    return (
        grouped(
            "shapes",
            _ln_case(rng, "two rows", (2, 3), spread=3.0),
            _ln_case(rng, "x (1, 9, 16)", (1, 9, 16)),
            _ln_case(rng, "large inputs", (4, 5), spread=300.0),
        )
        + grouped("small rows", _ln_case(rng, "rows spread over about 0.002", (8, 6), spread=2e-3))
        + grouped("dtype", _ln_case(rng, "float32, x (3, 3, 4)", (3, 3, 4), dtype=np.float32))
    )


def sampling_settings():
    from attncourse.exercises.chapters.ch08 import _sampling_case

    rng = np.random.default_rng(1815)
    return (
        grouped(
            "temperature",
            _sampling_case(rng, "one row, V=2", 1, 2, [1.7], [2]),
            _sampling_case(rng, "logits in the tens, V=20", 2, 20, [5.0, 12.0], [20, 20], scale=20.0),
        )
        + grouped("top-k", _sampling_case(rng, "top-2 of 30, T = 0.4", 2, 30, [0.4, 2.2], [2, 9]))
        + grouped(
            "dtype", _sampling_case(rng, "float32, V=50", 2, 50, [0.6, 1.1], [50, 10], dtype=np.float32)
        )
    )


HIDDEN = {
    "ch08.value_ablation_difference": value_ablation_difference,
    "ch08.post_norm_blocks": post_norm_blocks,
    "ch08.attention_head_count": attention_head_count,
    "ch08.layer_norm_parameters": layer_norm_parameters,
    "ch08.sampling_settings": sampling_settings,
}
