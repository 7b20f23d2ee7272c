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


def predict_mlp_share():
    return grouped("prediction", Case("d_ff = 4 d_model"))


def pre_norm_block():
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


def fix_post_norm():
    rng = np.random.default_rng(1804)
    n = rng.normal
    return grouped(
        "shape",
        Case("L=1, d_model=8", x=n(size=(1, 1, 8)) * 4, W_1=n(size=(8, 16)) / 3, W_2=n(size=(16, 8)) / 4),
        Case("B=3, L=4, d_model=4", x=n(size=(3, 4, 4)) + 2, W_1=n(size=(4, 4)), W_2=n(size=(4, 4))),
    ) + grouped(
        "dtype",
        Case(
            "float32",
            x=n(size=(2, 3, 6)).astype(np.float32) * 5,
            W_1=(n(size=(6, 24)) / 3).astype(np.float32),
            W_2=(n(size=(24, 6)) / 5).astype(np.float32),
        ),
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
    "ch08.predict_mlp_share": predict_mlp_share,
    "ch08.pre_norm_block": pre_norm_block,
    "ch08.fix_post_norm": fix_post_norm,
    "ch08.next_token_loss": next_token_loss,
}
