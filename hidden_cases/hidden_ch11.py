"""Hidden cases, chapter 11 (today's attention): batch axes, float32, a group of four heads and no
pooling at all, chunks shorter than the sinks, large windows, other bases and scalings, a window
as long as the sequence, block tables of one block and of one-slot blocks."""

import numpy as np

from attncourse.exercises import Case, grouped
from attncourse.exercises.chapters.ch11 import paged_case, range_case


def predict_cache_gib():
    return grouped("prediction", Case("the same model and sequence"))


def mha_to_gqa():
    rng = np.random.default_rng(1912)
    n = rng.normal
    cases = [
        Case("H=8 heads of 2 -> H_kv=2, d_model=3", W=n(size=(16, 3)), H=8, H_kv=2),
        Case("H = H_kv = 3 (nothing to pool)", W=n(size=(6, 4)), H=3, H_kv=3),
        Case("H=6 heads of 1 -> H_kv=2, d_model=5", W=n(size=(6, 5)), H=6, H_kv=2),
        Case("float32, H=4 heads of 4 -> H_kv=2", W=n(size=(16, 3)).astype(np.float32), H=4, H_kv=2),
    ]
    return grouped("grouping", *cases[0:3]) + grouped("dtype", *cases[3:4])


def window_sink_chunk():
    cases = [
        Case("one new query, S=9, window 3, 2 sinks", L=1, S=9, window=3, n_sinks=2),
        Case("window larger than S", L=4, S=6, window=10, n_sinks=1),
        Case("no sinks", L=5, S=12, window=3, n_sinks=0),
        Case("window 1, 3 sinks, L=S=6", L=6, S=6, window=1, n_sinks=3),
    ]
    return grouped("chunk of new queries", *cases[0:3]) + grouped("sinks still causal", *cases[3:4])


def pairs_in_range():
    cases = [
        range_case(
            "the chapter's head: E=16, N=32, L=128, dynamic factor 4", 16, 10000.0, 4.0, 128, 32, "dynamic"
        ),
        range_case("E=6, base 50, linear factor 3, N=10, L=25", 6, 50.0, 3.0, 25, 10, "linear"),
        range_case(
            "float32, E=10, base 1000, dynamic factor 4, N=20, L=60",
            10,
            1000.0,
            4.0,
            60,
            20,
            "dynamic",
            np.float32,
        ),
        range_case("E=6, base 50, no scaling, N=12, L=20", 6, 50.0, 1.0, 20, 12, "none"),
    ]
    return grouped("scaled", *cases[0:3]) + grouped("unscaled", *cases[3:4])


def ring_buffer_decode():
    rng = np.random.default_rng(1915)
    n = rng.normal
    cases = [
        Case("window 2, T=5", q=n(size=(5, 3)), k=n(size=(5, 3)), v=n(2, 1, size=(5, 2)), window=2),
        Case(
            "window as long as the sequence", q=n(size=(4, 2)), k=n(size=(4, 2)), v=n(size=(4, 2)), window=4
        ),
        Case(
            "batch and heads, window 3",
            q=n(size=(2, 2, 6, 4)),
            k=n(size=(2, 2, 6, 4)),
            v=n(size=(2, 2, 6, 3)),
            window=3,
        ),
        Case(
            "float32, window 4",
            q=n(size=(7, 4)).astype(np.float32),
            k=n(size=(7, 4)).astype(np.float32),
            v=n(size=(7, 4)).astype(np.float32),
            window=4,
        ),
    ]
    return (
        grouped("decoding", *cases[0:2]) + grouped("batch dims", *cases[2:3]) + grouped("dtype", *cases[3:4])
    )


def paged_decode():
    rng = np.random.default_rng(1916)
    cases = [
        paged_case("one block, 2 tokens of 4", rng, 3, 4, 2, 3, 2, [2], 2),
        paged_case("blocks 0, 3, 1 of 5; 9 tokens", rng, 5, 3, 2, 2, 3, [0, 3, 1], 9),
        paged_case("blocks of 1 slot, 4 tokens, 1 head", rng, 6, 1, 1, 3, 2, [5, 0, 4, 2], 4),
        paged_case("float32, blocks 2, 0 of 4; 7 tokens", rng, 4, 4, 3, 2, 2, [2, 0], 7, np.float32),
    ]
    return grouped("block table", *cases[0:3]) + grouped("dtype", *cases[3:4])


HIDDEN = {
    "ch11.predict_cache_gib": predict_cache_gib,
    "ch11.mha_to_gqa": mha_to_gqa,
    "ch11.window_sink_chunk": window_sink_chunk,
    "ch11.pairs_in_range": pairs_in_range,
    "ch11.ring_buffer_decode": ring_buffer_decode,
    "ch11.paged_decode": paged_decode,
}
