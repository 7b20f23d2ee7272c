"""Hidden cases, chapter 11 (today's attention): multi-head layers with permuted heads, pairings
dealt out in turn, float32, stacks of one layer, of six and with a full layer, sinks behind windows of one token, other
bases and scalings,
a prompt in one chunk and chunks as long as the window, pools of one-slot blocks and of one block."""

import numpy as np

from attncourse.exercises import Case, grouped
from attncourse.exercises.chapters._ch11_serving import block_table_case, prefill_case
from attncourse.exercises.chapters.ch11 import kv_map_case, range_case


def predict_cache_gib():
    return grouped("prediction", Case("the same model and sequence"))


def kv_head_map():
    rng = np.random.default_rng(1912)
    cases = [
        kv_map_case("H = H_kv = 2, heads swapped", rng, 2, 2, 3, 4, 3, 2, [1, 0]),
        kv_map_case("H = H_kv = 3, heads permuted", rng, 3, 3, 2, 5, 4, 3, [2, 0, 1]),
        kv_map_case("H=8, H_kv=4, dealt out in turn", rng, 8, 4, 2, 3, 2, 2, [0, 1, 2, 3, 0, 1, 2, 3]),
        kv_map_case(
            "one query row, H=6, H_kv=2, the chapter's pairing", rng, 6, 2, 1, 6, 4, 3, [0, 0, 0, 1, 1, 1]
        ),
        kv_map_case(
            "float32, H=8, H_kv=4, L=2, S=7", rng, 8, 4, 2, 7, 8, 2, [1, 3, 0, 2, 0, 1, 2, 3], np.float32
        ),
    ]
    return grouped("layers", *cases[0:4]) + grouped("dtype", *cases[4:5])


def stack_reach():
    w = lambda *ws: np.array(ws, dtype=np.int64)  # noqa: E731
    cases = [
        Case("one layer of window 1, T=5", T=5, windows=w(1), n_sinks=0),
        Case("six layers of window 5, 1 sink, T=40", T=40, windows=w(5, 5, 5, 5, 5, 5), n_sinks=1),
        Case("a full layer first, then windows 3, 3, T=25", T=25, windows=w(0, 3, 3), n_sinks=0),
        Case("three layers of window 1, 3 sinks, T=9", T=9, windows=w(1, 1, 1), n_sinks=3),
        Case(
            "five windowed layers, then a full one (Gemma 3), T=30",
            T=30,
            windows=w(4, 4, 4, 4, 4, 0),
            n_sinks=0,
        ),
        Case("windows wider than the sequence, T=6", T=6, windows=w(9, 2), n_sinks=0),
    ]
    return grouped("windows, sinks and a full layer", *cases[0:3]) + grouped("mixed stacks", *cases[3:6])


def pairs_in_range():
    cases = [
        range_case("E=6, base 50, linear factor 3, N=10, L=25", 6, 50.0, 3.0, 25, 10, "linear"),
        range_case("E=6, base 50, no scaling, N=12, L=20", 6, 50.0, 1.0, 20, 12, "none"),
        range_case(
            "the chapter's head: E=16, N=32, L=128, dynamic factor 4", 16, 10000.0, 4.0, 128, 32, "dynamic"
        ),
        range_case(
            "float32, E=14, base 500, dynamic factor 3, N=16, L=40",
            14,
            500.0,
            3.0,
            40,
            16,
            "dynamic",
            np.float32,
        ),
    ]
    return grouped("linear and unscaled", *cases[0:2]) + grouped("dynamic", *cases[2:4])


def window_prefill():
    rng = np.random.default_rng(1915)
    cases = [
        prefill_case("chunks of 2 as long as the window, T=7", rng, (7, 3), 2, 2, 2),
        prefill_case("one chunk, the whole prompt: T=5, window 2", rng, (5, 2), 3, 2, 5),
        prefill_case("chunks as long as the window: T=11, window 4", rng, (11, 4), 2, 4, 4),
        prefill_case("a wide window, short chunks: T=12, window 7, chunks of 3", rng, (12, 2), 2, 7, 3),
        prefill_case("batch and heads, T=9, window 2, chunks of 4", rng, (2, 2, 9, 3), 2, 2, 4),
        prefill_case("float32, T=10, window 5, chunks of 3", rng, (10, 4), 3, 5, 3, np.float32),
    ]
    return grouped("chunks", *cases[0:4]) + grouped("batch dims", *cases[4:5]) + grouped("dtype", *cases[5:6])


def recover_block_table():
    rng = np.random.default_rng(1916)
    cases = [
        block_table_case("one block, 2 tokens of 4", rng, 3, 4, 2, 3, [2], 2, [(0, 0, 1)]),
        block_table_case("blocks of 1 slot, 4 tokens, 1 head", rng, 6, 1, 1, 3, [5, 0, 4, 2], 4),
        block_table_case(
            "12 blocks of 3, 14 tokens, a table in pool order",
            rng,
            12,
            3,
            2,
            2,
            [1, 4, 6, 9, 11],
            14,
            [(0, 0, 2), (3, 2, 2), (10, 4, 1)],
        ),
        block_table_case(
            "float32, 7 blocks of 4, 11 tokens",
            rng,
            7,
            4,
            3,
            2,
            [6, 2, 4],
            11,
            [(1, 2, 2), (0, 1, 3)],
            np.float32,
        ),
    ]
    return grouped("pools", *cases[0:3]) + grouped("dtype", *cases[3:4])


HIDDEN = {
    "ch11.predict_cache_gib": predict_cache_gib,
    "ch11.kv_head_map": kv_head_map,
    "ch11.stack_reach": stack_reach,
    "ch11.pairs_in_range": pairs_in_range,
    "ch11.window_prefill": window_prefill,
    "ch11.recover_block_table": recover_block_table,
}
