"""Hidden cases, chapter 7 (positional encoding)."""

import numpy as np

from attncourse import apply_rope
from attncourse.exercises import Case, grouped


def rope_left_padded():
    rng = np.random.default_rng(1711)
    n = rng.normal
    return grouped(
        "values",
        Case("B=2, L=40, E=16: positions far from 0", x=n(size=(2, 40, 16)), lengths=np.array([40, 33])),
        Case("one pair: E=2, lengths [3, 1, 2]", x=n(size=(3, 3, 2)), lengths=np.array([3, 1, 2])),
    ) + grouped(
        "edge rows",
        Case("one slot, lengths [1, 0]", x=n(size=(2, 1, 4)), lengths=np.array([1, 0])),
        Case(
            "float32, E=8, every row padded",
            x=n(size=(3, 6, 8)).astype(np.float32),
            lengths=np.array([5, 1, 0]),
        ),
    )


def rotation_angles():
    return grouped(
        "positions",
        Case("50 positions, E=16", positions=np.arange(50), E=16),
        Case("positions [0, 100, 7], E=4", positions=np.array([0, 100, 7]), E=4),
        Case("one pair: E=2", positions=np.arange(3), E=2),
        Case("E=128", positions=np.array([1, 2, 1000]), E=128),
    )


def rope_2d():
    rng = np.random.default_rng(1703)
    grid = np.array([(r, c) for r in range(3) for c in range(3)])
    return (
        grouped(
            "grids",
            Case("a 3 x 3 grid, E=16", x=rng.normal(size=(9, 16)), rows=grid[:, 0], cols=grid[:, 1]),
            Case(
                "one patch far out, E=4", x=rng.normal(size=(1, 4)), rows=np.array([30]), cols=np.array([2])
            ),
        )
        + grouped(
            "batch dims",
            Case(
                "batch (2, 3), E=8",
                x=rng.normal(size=(2, 3, 8)),
                rows=np.array([0, 1, 2]),
                cols=np.array([2, 2, 0]),
            ),
        )
        + grouped(
            "dtype",
            Case(
                "float32, E=32",
                x=rng.normal(size=(4, 32)).astype(np.float32),
                rows=np.array([3, 1, 4, 1]),
                cols=np.array([5, 9, 2, 6]),
            ),
        )
    )


def alibi_slopes():
    return grouped(
        "head counts",
        Case("1 head", n_heads=1),
        Case("5 heads", n_heads=5),
        Case("16 heads", n_heads=16),
        Case("24 heads", n_heads=24),
        Case("3 heads", n_heads=3),
    )


HIDDEN = {
    "ch07.rope_left_padded": rope_left_padded,
    "ch07.rotation_angles": rotation_angles,
    "ch07.rope_2d": rope_2d,
    "ch07.alibi_slopes": alibi_slopes,
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


def rope_position():
    rng = np.random.default_rng(1760)

    def case(label, shape, positions, dtype=np.float64):
        x = rng.normal(size=shape).astype(dtype)
        return Case(label, x=x, y=apply_rope(x, np.asarray(positions)).astype(dtype))

    return grouped(
        "positions",
        case("E=8, positions 0, 2, 999, 1998", (4, 8), [0, 2, 999, 1998]),
        case("E=32, (3, 2) vectors", (3, 2, 32), [[11, 1700], [250, 4], [1024, 63]]),
    ) + grouped(
        "dtype",
        case("float32, E=8, positions 6, 1234", (2, 8), [6, 1234], np.float32),
    )


def predict_alibi_recent_heads():
    return grouped("prediction", Case("16 heads, 2048 keys, the 100 most recent"))


HIDDEN.update(
    {
        "ch07.alibi_attention": alibi_attention,
        "ch07.rope_position": rope_position,
        "ch07.predict_alibi_recent_heads": predict_alibi_recent_heads,
    }
)
