"""Hidden cases, chapter 9 (efficient attention): sinks on masked rows and on scores near 900 and -750, beams with empty caches and beams all from one parent,
an empty cache, keys taken out with scores in the hundreds, a split decode with scores near 900 and -700, float32."""

import numpy as np

from attncourse.exercises import grouped
from attncourse.exercises.chapters.ch09 import (
    _static_case,
    _tiled_case,
    beam_case,
    remove_case,
    sink_case,
    split_case,
)


def add_sink():
    rng = np.random.default_rng(1901)
    return (
        grouped(
            "sinks",
            sink_case("one head, one query, S=3", rng, 1, 1, 1, 3, 2, 2),
            sink_case("B=3, H=2, L=5, S=8, Ev=4", rng, 3, 2, 5, 8, 4, 4),
        )
        + grouped("heads and positions", sink_case("B=1, H=4 heads, L=4 queries, S=6", rng, 1, 4, 4, 6, 3, 2))
        + grouped(
            "large scores",
            sink_case("B=1, H=2, L=3, S=5, scores near 900", rng, 1, 2, 3, 5, 2, 2, offset=900.0),
            sink_case("B=1, H=3, L=2, S=4, scores near -750", rng, 1, 3, 2, 4, 2, 3, offset=-750.0),
        )
        + grouped(
            "masked rows",
            sink_case(
                "B=1, H=3, L=2: a head's rows all masked",
                rng,
                1,
                3,
                2,
                4,
                2,
                2,
                masked=[(0, 0, 0), (0, 0, 1), (0, 2, 1)],
            ),
        )
        + grouped(
            "dtype",
            sink_case(
                "float32, B=2, H=2, L=3, S=6, scores near 100", rng, 2, 2, 3, 6, 4, 2, 100.0, dtype=np.float32
            ),
        )
    )


def beam_cache_step():
    rng = np.random.default_rng(19021)
    return (
        grouped(
            "beams",
            beam_case(
                "5 beams of 3 tokens, 2 new, parents [4, 4, 0, 1, 2]", rng, 5, 3, 2, 2, 2, [4, 4, 0, 1, 2]
            ),
            beam_case("3 beams, empty caches, 3 new, parents [0, 0, 1]", rng, 3, 0, 3, 3, 2, [0, 0, 1]),
            beam_case("2 beams of 2 tokens, 4 new, parents kept [0, 1]", rng, 2, 2, 4, 2, 3, [0, 1]),
            beam_case("4 beams of 7 tokens, 2 new, all from beam 3", rng, 4, 7, 2, 4, 2, [3, 3, 3, 3]),
        )
        + grouped(
            "one new token",
            beam_case("4 beams of 5 tokens, 1 new, parents [1, 2, 3, 0]", rng, 4, 5, 1, 2, 2, [1, 2, 3, 0]),
        )
        + grouped(
            "dtype",
            beam_case(
                "float32, 4 beams of 4 tokens, 3 new, parents [3, 0, 0, 2]",
                rng,
                4,
                4,
                3,
                4,
                3,
                [3, 0, 0, 2],
                np.float32,
            ),
        )
    )


def static_cache_step():
    rng = np.random.default_rng(19031)
    return grouped(
        "lengths",
        _static_case("4 sequences of 0, 6, 3 and 1 tokens, 7 slots", rng, [0, 6, 3, 1], 7, 2, 3),
        _static_case("2 sequences both at 2 tokens, 3 slots", rng, [2, 2], 3, 3, 1),
    ) + grouped("dtype", _static_case("float32, 3 sequences, 5 slots", rng, [4, 0, 2], 5, 3, 2, np.float32))


def remove_keys():
    rng = np.random.default_rng(19041)
    return (
        grouped(
            "keys taken out",
            remove_case("one query, S=9, keys 3..5 taken out", rng, (), 1, 9, 4, 3, [3, 4, 5]),
            remove_case("L=5, S=4, the last key taken out, E=2, Ev=1", rng, (), 5, 4, 2, 1, [3]),
        )
        + grouped(
            "large scores",
            remove_case("L=2, S=6, keys 0 and 1, scores near 900", rng, (), 2, 6, 6, 3, [0, 1], 900.0),
        )
        + grouped("batch dims", remove_case("batch (2, 2), L=3, S=5, key 2", rng, (2, 2), 3, 5, 3, 2, [2]))
        + grouped(
            "dtype",
            remove_case(
                "float32, 2 heads, L=4, S=8, keys 1, 4, 6", rng, (2,), 4, 8, 4, 3, [1, 4, 6], 2.0, np.float32
            ),
        )
    )


def split_decode():
    rng = np.random.default_rng(19051)
    return (
        grouped(
            "splits",
            split_case("T=2 keys, 2 workers", rng, (), 2, 2, 2, 2),
            split_case("T=13 keys, 4 workers (parts of 4, 3, 3, 3)", rng, (), 13, 4, 3, 4, 3.0),
        )
        + grouped("batch dims", split_case("batch (2, 2), T=6, 2 workers", rng, (2, 2), 6, 2, 3, 2))
        + grouped(
            "large scores",
            split_case("T=8, 4 workers, scores near 900", rng, (), 8, 4, 2, 4, 1.0, 900.0),
            split_case("T=5, 2 workers, scores near -700", rng, (), 5, 3, 2, 2, 1.0, -700.0),
        )
        + grouped(
            "dtype", split_case("float32, 2 heads, T=9, 3 workers", rng, (2,), 9, 4, 2, 3, dtype=np.float32)
        )
    )


HIDDEN = {
    "ch09.add_sink": add_sink,
    "ch09.beam_cache_step": beam_cache_step,
    "ch09.static_cache_step": static_cache_step,
    "ch09.remove_keys": remove_keys,
    "ch09.split_decode": split_decode,
}


def causal_tiled_attention():
    rng = np.random.default_rng(1907)
    return (
        grouped(
            "tiles",
            _tiled_case("block size 1", rng, (), 4, 4, 2, 2, 1),
            _tiled_case("one block holds everything", rng, (), 5, 5, 3, 1, 8),
            _tiled_case("L=6 new of S=10, blocks of 4", rng, (), 6, 10, 3, 2, 4),
            _tiled_case("L=2 new of S=11, blocks of 5", rng, (), 2, 11, 2, 3, 5),
            _tiled_case("L=5 new of S=7, block size 1", rng, (), 5, 7, 2, 2, 1),
        )
        + grouped(
            "batch dims",
            _tiled_case("batch and heads, L=10 new of S=13, blocks of 4", rng, (2, 2), 10, 13, 4, 3, 4),
        )
        + grouped(
            "dtype", _tiled_case("float32, L=9 new of S=12, blocks of 2", rng, (), 9, 12, 8, 2, 2, np.float32)
        )
    )


HIDDEN["ch09.causal_tiled_attention"] = causal_tiled_attention
