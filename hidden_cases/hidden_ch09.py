"""Hidden cases, chapter 9 (efficient attention): empty halves, key blocks of one key and of every key,
an empty cache, rows far below zero and rows with one key far above the rest, float32."""

import numpy as np

from attncourse.exercises import Case, grouped
from attncourse.exercises.chapters.ch09 import _far_case, _partial, _static_case, grads_case, wide_case


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


def predict_tile_size():
    return grouped("prediction", Case("228 KiB, d_head = 128, float16 blocks, float32 scores"))


def predict_causal_tiles():
    return grouped("prediction", Case("L = S = 4096, blocks of 256"))


def online_attention():
    rng = np.random.default_rng(19061)
    return (
        grouped(
            "far rows",
            _far_case(
                "L=4, S=9, blocks of 4: rows at -2000, 0, -750, 40",
                rng,
                (4, 9),
                2,
                [-2000.0, 0, -750.0, 40.0],
                4,
            ),
            _far_case("L=1, S=3, blocks of 5 (one block)", rng, (1, 3), 2, [-1000.0], 5),
            _far_case(
                "L=2, S=5, blocks of 2: rows at -15000 and -30000", rng, (2, 5), 2, [-15000.0, -30000.0], 2
            ),
            wide_case(
                "L=3, S=5, blocks of 2: row 0 has one key 900 above, rows 1-2 at -1000",
                rng,
                3,
                5,
                3,
                2,
                900.0,
            ),
            wide_case(
                "L=2, S=4, blocks of 4 (one block): row 0 has one key 2000 above, row 1 at -1000",
                rng,
                2,
                4,
                2,
                4,
                2000.0,
            ),
        )
        + grouped(
            "batch dims",
            _far_case("batch (2, 2), L=2, S=3, blocks of 2", rng, (2, 2, 2, 3), 2, [-800.0, 0.0], 2),
        )
        + grouped(
            "dtype",
            _far_case(
                "float32, L=3, S=5, blocks of 2: rows at -200, 1 and -1000",
                rng,
                (3, 5),
                3,
                [-200.0, 1.0, -1000.0],
                2,
                np.float32,
            ),
        )
    )


HIDDEN = {
    "ch09.merge_partials": merge_partials,
    "ch09.key_block_grads": key_block_grads,
    "ch09.static_cache_step": static_cache_step,
    "ch09.predict_tile_size": predict_tile_size,
    "ch09.predict_causal_tiles": predict_causal_tiles,
    "ch09.online_attention": online_attention,
}


def causal_tiled_attention():
    rng = np.random.default_rng(1907)
    n = rng.normal
    cases = [
        Case("block size 1", q=n(size=(4, 2)), k=n(size=(4, 2)), v=n(size=(4, 2)), block_size=1),
        Case(
            "one block holds everything", q=n(size=(5, 3)), k=n(size=(5, 3)), v=n(size=(5, 1)), block_size=8
        ),
        Case(
            "batch and heads, L=10, blocks of 4",
            q=n(size=(2, 2, 10, 4)),
            k=n(size=(2, 2, 10, 4)),
            v=n(size=(2, 2, 10, 3)),
            block_size=4,
        ),
        Case(
            "float32, large scores",
            q=(4 * n(size=(9, 8))).astype(np.float32),
            k=(4 * n(size=(9, 8))).astype(np.float32),
            v=n(size=(9, 2)).astype(np.float32),
            block_size=2,
        ),
    ]
    return grouped("tiles", *cases[0:2]) + grouped("batch dims", *cases[2:3]) + grouped("dtype", *cases[3:4])


HIDDEN["ch09.causal_tiled_attention"] = causal_tiled_attention
