"""Hidden cases, chapter 9 (efficient attention): empty halves, key blocks of one key and of every key,
an empty cache, keys taken out with scores in the hundreds, a long RoPE decode, float32."""

import numpy as np

from attncourse.exercises import Case, grouped
from attncourse.exercises.chapters.ch09 import (
    _partial,
    _static_case,
    _tiled_case,
    grads_case,
    remove_case,
    rope_case,
)


def merge_partials():
    rng = np.random.default_rng(1901)
    cases = []
    # a batch (2, 3) of rows; half 2 has no visible key for some rows
    s, v = rng.normal(size=(2, 3, 6)), rng.normal(size=(2, 6, 4))
    s2 = s[..., 4:].copy()
    s2[0, 1] = -np.inf
    s2[1, :] = -np.inf
    (m1, l1, a1), (m2, l2, a2) = _partial(s[..., :4], v[:, :4]), _partial(s2, v[:, 4:])
    cases += grouped(
        "empty halves",
        Case("batch dims, half 2 empty for some rows", m1=m1, l1=l1, acc1=a1, m2=m2, l2=l2, acc2=a2),
    )
    # a row with no visible key in either half
    s, v = rng.normal(size=(3, 4)), rng.normal(size=(4, 2))
    s[1] = -np.inf
    (m1, l1, a1), (m2, l2, a2) = _partial(s[:, :1], v[:1]), _partial(s[:, 1:], v[1:])
    cases += grouped(
        "empty halves", Case("a row with nothing to attend to", m1=m1, l1=l1, acc1=a1, m2=m2, l2=l2, acc2=a2)
    )
    # half 2's maximum far above half 1's
    s, v = rng.normal(size=(2, 5)), rng.normal(size=(5, 3))
    s[:, 3:] += 50
    (m1, l1, a1), (m2, l2, a2) = _partial(s[:, :3], v[:3]), _partial(s[:, 3:], v[3:])
    cases += grouped("merge", Case("the second half dominates", m1=m1, l1=l1, acc1=a1, m2=m2, l2=l2, acc2=a2))
    s, v = rng.normal(size=(2, 4)), rng.normal(size=(4, 2))
    f = [
        a.astype(np.float32) for pair in (_partial(s[:, :2], v[:2]), _partial(s[:, 2:], v[2:])) for a in pair
    ]
    cases += grouped("dtype", Case("float32", m1=f[0], l1=f[1], acc1=f[2], m2=f[3], l2=f[4], acc2=f[5]))
    return cases


def key_block_grads():
    rng = np.random.default_rng(19021)
    cases = [
        grads_case("a block of one key", rng, (), 3, 5, 2, 2, 2, 3),
        grads_case("the block is every key", rng, (), 2, 4, 3, 2, 0, 4),
        grads_case("one query, S=9, keys 6..8", rng, (), 1, 9, 4, 3, 6, 9),
        grads_case("batch (2, 2), L=3, S=6, keys 0..2", rng, (2, 2), 3, 6, 2, 3, 0, 3),
        grads_case("float32, 2 heads, L=4, S=8, keys 3..6", rng, (2,), 4, 8, 3, 2, 3, 7, np.float32),
    ]
    return (
        grouped("key blocks", *cases[0:3])
        + grouped("batch dims", *cases[3:4])
        + grouped("dtype", *cases[4:5])
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


def rope_decode():
    rng = np.random.default_rng(19051)
    return grouped(
        "decoding",
        rope_case("T=12 tokens, d_model=8, E=8, Ev=4", rng, 12, 8, 8, 4, 2.5),
        rope_case("T=3 tokens, d_model=4, E=2, Ev=3", rng, 3, 4, 2, 3, 4.0),
    ) + grouped("dtype", rope_case("float32, T=7, d_model=6, E=4, Ev=2", rng, 7, 6, 4, 2, 3.0, np.float32))


HIDDEN = {
    "ch09.merge_partials": merge_partials,
    "ch09.key_block_grads": key_block_grads,
    "ch09.static_cache_step": static_cache_step,
    "ch09.remove_keys": remove_keys,
    "ch09.rope_decode": rope_decode,
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
