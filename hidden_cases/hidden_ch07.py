"""Hidden cases, chapter 7 (positional encoding)."""

import numpy as np

from attncourse import apply_rope, softmax
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


def move_rotated_keys():
    rng = np.random.default_rng(1733)

    def case(label, shape, old, new, dtype=np.float64):
        return Case(label, k=rng.normal(size=shape).astype(dtype), old=np.array(old), new=np.array(new))

    return (
        grouped(
            "caches",
            case("one pair: E=2, a window of 3 after 90 dropped", (3, 2), [90, 91, 92], [0, 1, 2]),
            case("four sinks and a window, E=12", (7, 12), [0, 1, 2, 3, 61, 62, 63], [0, 1, 2, 3, 4, 5, 6]),
            case("keys in no order, some unmoved, E=10", (4, 10), [3, 8, 1, 40], [3, 2, 1, 70]),
        )
        + grouped(
            "batch dims",
            case("batch (2,), S=3, E=4", (2, 3, 4), [5, 6, 7], [1, 2, 3]),
        )
        + grouped(
            "dtype",
            case("float32, batch (2, 2), S=3, E=8", (2, 2, 3, 8), [30, 31, 32], [0, 1, 2], np.float32),
        )
    )


def recover_alibi_slopes():
    rng = np.random.default_rng(1704)

    def case(label, slopes, L, dtype=np.float64, scale=1.0):
        slopes = np.asarray(slopes, dtype=np.float64)
        scores = scale * rng.normal(size=(slopes.shape[0], L, L))
        distance = np.arange(L)[:, None] - np.arange(L)[None, :]
        weights = softmax(np.where(distance >= 0, scores - slopes[:, None, None] * distance, -np.inf))
        return Case(label, scores=scores.astype(dtype), weights=weights.astype(dtype))

    return grouped(
        "heads",
        case("8 heads, L=3, the chapter's slopes", 2.0 ** (-np.arange(1, 9)), 3),
        case("2 heads, L=7, large content scores", [0.8, 0.03], 7, scale=3.0),
        case("4 heads, L=2, a steep head", [2.5, 1.0, 0.5, 0.1], 2),
    ) + grouped(
        "dtype",
        case("float32, 3 heads, L=4", [1.1, 0.4, 0.09], 4, dtype=np.float32),
    )


HIDDEN = {
    "ch07.rope_left_padded": rope_left_padded,
    "ch07.rotation_angles": rotation_angles,
    "ch07.move_rotated_keys": move_rotated_keys,
    "ch07.recover_alibi_slopes": recover_alibi_slopes,
}


def alibi_chunk_attention():
    rng = np.random.default_rng(1705)
    n = rng.normal

    def case(label, B, H, C, S, d, Ev, dtype=np.float64):
        return Case(
            label,
            q=n(size=(B, H, C, d)).astype(dtype),
            k=n(size=(B, H, S, d)).astype(dtype),
            v=n(size=(B, H, S, Ev)).astype(dtype),
        )

    return grouped(
        "chunks",
        case("one head, C=4, S=10", 2, 1, 4, 10, 2, 3),
        case("8 heads, C=2, S=3", 1, 8, 2, 3, 4, 1),
        case("one new token, 2 heads, S=9", 2, 2, 1, 9, 3, 2),
        case("C = S = 5, 4 heads", 1, 4, 5, 5, 2, 2),
    ) + grouped("dtype", case("float32, 2 heads, C=2, S=8", 1, 2, 2, 8, 4, 3, np.float32))


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


def predict_encoder_alibi_weight():
    return grouped("prediction", Case("position 2 of 4096, head 1 of 8"))


HIDDEN.update(
    {
        "ch07.alibi_chunk_attention": alibi_chunk_attention,
        "ch07.rope_position": rope_position,
        "ch07.predict_encoder_alibi_weight": predict_encoder_alibi_weight,
    }
)
