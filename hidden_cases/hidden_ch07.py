"""Hidden cases, chapter 7 (positional encoding)."""

import numpy as np

from attncourse.exercises import Case, grouped


def sinusoidal_table():
    return grouped(
        "shape",
        Case("one position pair: (1, 2)", n_positions=1, d_model=2),
        Case("(50, 16)", n_positions=50, d_model=16),
        Case("(3, 64)", n_positions=3, d_model=64),
        Case("(128, 4)", n_positions=128, d_model=4),
    )


def rotation_angles():
    return grouped(
        "positions",
        Case("50 positions, E=16", positions=np.arange(50), E=16),
        Case("positions [0, 100, 7], E=4", positions=np.array([0, 100, 7]), E=4),
        Case("one pair: E=2", positions=np.arange(3), E=2),
        Case("E=128", positions=np.array([1, 2, 1000]), E=128),
    )


def apply_rotary():
    rng = np.random.default_rng(1703)
    return (
        grouped(
            "batch dims",
            Case("batch (2, 4, 8), positions 0..3", x=rng.normal(size=(2, 4, 8)), positions=np.arange(4)),
        )
        + grouped(
            "positions",
            Case("positions [100, 7, 0]", x=rng.normal(size=(3, 6)), positions=np.array([100, 7, 0])),
            Case("E=2", x=rng.normal(size=(5, 2)), positions=np.arange(5)),
        )
        + grouped(
            "dtype",
            Case(
                "float32, E=64", x=rng.normal(size=(3, 64)).astype(np.float32), positions=np.array([0, 1, 50])
            ),
        )
    )


def apply_rotary_interleaved():
    rng = np.random.default_rng(1704)
    return (
        grouped(
            "batch dims",
            Case("batch (2, 3, 8), positions 0..2", x=rng.normal(size=(2, 3, 8)), positions=np.arange(3)),
        )
        + grouped(
            "positions", Case("positions [12, 4]", x=rng.normal(size=(2, 6)), positions=np.array([12, 4]))
        )
        + grouped(
            "dtype",
            Case(
                "float32, E=32",
                x=rng.normal(size=(4, 32)).astype(np.float32),
                positions=np.array([3, 1, 4, 1]),
            ),
        )
    )


HIDDEN = {
    "ch07.sinusoidal_table": sinusoidal_table,
    "ch07.rotation_angles": rotation_angles,
    "ch07.apply_rotary": apply_rotary,
    "ch07.apply_rotary_interleaved": apply_rotary_interleaved,
}


def alibi_attention():
    rng = np.random.default_rng(1705)
    n = rng.normal
    return grouped(
        "heads",
        Case("8 heads, L=5", q=n(size=(1, 8, 5, 2)), k=n(size=(1, 8, 5, 2)), v=n(size=(1, 8, 5, 3))),
        Case("one head, L=6", q=n(size=(2, 1, 6, 4)), k=n(size=(2, 1, 6, 4)), v=n(size=(2, 1, 6, 1))),
    ) + grouped(
        "dtype",
        Case(
            "float32, 2 heads, L=3",
            q=n(size=(1, 2, 3, 8)).astype(np.float32),
            k=n(size=(1, 2, 3, 8)).astype(np.float32),
            v=n(size=(1, 2, 3, 2)).astype(np.float32),
        ),
    )


def rope_pair_score():
    rng = np.random.default_rng(1706)
    return grouped(
        "pairs",
        Case(
            "batch (2, 3) of pairs, one offset",
            q=rng.normal(size=(2, 3, 2)),
            k=rng.normal(size=(2, 3, 2)),
            offset=7,
            theta=0.01,
        ),
        Case(
            "large offsets",
            q=rng.normal(size=(4, 2)),
            k=rng.normal(size=(4, 2)),
            offset=np.array([100, -100, 1000, 3]),
            theta=1.0,
        ),
    ) + grouped(
        "dtype",
        Case(
            "float32",
            q=rng.normal(size=(3, 2)).astype(np.float32),
            k=rng.normal(size=(3, 2)).astype(np.float32),
            offset=np.array([1, 2, 3]),
            theta=0.5,
        ),
    )


def predict_longest_wavelength():
    return grouped("prediction", Case("E = 128, base 10000, the slowest pair"))


HIDDEN.update(
    {
        "ch07.alibi_attention": alibi_attention,
        "ch07.rope_pair_score": rope_pair_score,
        "ch07.predict_longest_wavelength": predict_longest_wavelength,
    }
)
