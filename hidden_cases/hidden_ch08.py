"""Hidden cases, chapter 8 (a Transformer block): one head, one token, float32, padding edge cases."""

import numpy as np

from attncourse.exercises import Case, grouped


def _weights(rng, d, d_ff, dtype=np.float64):
    w = {name: rng.normal(size=(d, d)) / np.sqrt(d) for name in ("W_q", "W_k", "W_v", "W_o")}
    w["W_1"] = rng.normal(size=(d, d_ff)) / np.sqrt(d)
    w["W_2"] = rng.normal(size=(d_ff, d)) / np.sqrt(d_ff)
    return {name: a.astype(dtype) for name, a in w.items()}


def predict_block_parameters():
    return grouped("prediction", Case("d_model=64, n_heads=4, d_ff=256"))


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


def parallel_block():
    rng = np.random.default_rng(1803)
    n = rng.normal
    return grouped(
        "shape",
        Case("one head", x=n(size=(2, 3, 4)), **_weights(rng, 4, 16), n_heads=1),
        Case("8 heads, d_model=16, L=5", x=n(size=(1, 5, 16)), **_weights(rng, 16, 32), n_heads=8),
        Case("a large residual stream", x=10 * n(size=(1, 4, 6)) + 5, **_weights(rng, 6, 6), n_heads=2),
    ) + grouped(
        "dtype",
        Case(
            "float32",
            x=n(size=(2, 4, 8)).astype(np.float32),
            **_weights(rng, 8, 32, np.float32),
            n_heads=4,
        ),
    )


def head_removal_cost():
    from attncourse.exercises.chapters.ch08 import _removal_case

    rng = np.random.default_rng(1814)
    return grouped(
        "values",
        _removal_case(rng, "one head", 2, 1, 4, 3, 5),
        _removal_case(rng, "one position", 3, 2, 1, 2, 4),
        _removal_case(rng, "8 heads, d_head=1, head 5 copies key t - 1", 1, 8, 6, 1, 8, planted=5),
    ) + grouped(
        "dtype",
        _removal_case(rng, "float32, 4 heads", 3, 4, 4, 2, 6, dtype=np.float32),
    )


def next_token_loss():
    rng = np.random.default_rng(1805)
    return (
        grouped(
            "large logits",
            Case(
                "large logits",
                logits=rng.normal(size=(2, 3, 6)) * 1000,
                tokens=rng.integers(0, 6, size=(2, 3)),
                lengths=np.array([3, 3]),
            ),
        )
        + grouped(
            "padding",
            Case(
                "a sequence of one token (no target) beside full ones",
                logits=rng.normal(size=(3, 4, 5)),
                tokens=rng.integers(0, 5, size=(3, 4)),
                lengths=np.array([1, 4, 2]),
            ),
        )
        + grouped(
            "dtype",
            Case(
                "float32 logits, V=50",
                logits=rng.normal(size=(2, 6, 50)).astype(np.float32) * 3,
                tokens=rng.integers(0, 50, size=(2, 6)),
                lengths=np.array([6, 4]),
            ),
        )
    )


HIDDEN = {
    "ch08.predict_block_parameters": predict_block_parameters,
    "ch08.post_norm_blocks": post_norm_blocks,
    "ch08.parallel_block": parallel_block,
    "ch08.head_removal_cost": head_removal_cost,
    "ch08.next_token_loss": next_token_loss,
}
