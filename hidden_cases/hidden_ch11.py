"""Hidden cases, chapter 11 (today's attention): batch axes, float32, an MQA group of 8, chunks
shorter than the sinks, large windows, other bases, scalings and stacked output projections."""

import numpy as np

from attncourse.exercises import Case, grouped
from attncourse.exercises.chapters.ch11 import range_case


def predict_cache_gib():
    return grouped("prediction", Case("the same model and sequence"))


def gqa_attention():
    rng = np.random.default_rng(1902)
    n = rng.normal
    mask = np.ones((2, 1, 3, 5), dtype=bool)
    mask[1, :, :, 3:] = False  # padding in the second sequence
    cases = [
        Case("H=8, H_kv=1", q=n(size=(8, 2, 4)), k=n(size=(1, 3, 4)), v=n(size=(1, 3, 2)), mask=None),
        Case(
            "H = H_kv = 3 (plain multi-head)",
            q=n(size=(3, 2, 4)),
            k=n(size=(3, 4, 4)),
            v=n(size=(3, 4, 4)),
            mask=None,
        ),
        Case(
            "batch, H=4, H_kv=2, padding mask",
            q=n(size=(2, 4, 3, 4)),
            k=n(size=(2, 2, 5, 4)),
            v=n(size=(2, 2, 5, 3)),
            mask=mask,
        ),
        Case(
            "float32, H=6, H_kv=2",
            q=n(size=(6, 3, 4)).astype(np.float32),
            k=n(size=(2, 3, 4)).astype(np.float32),
            v=n(size=(2, 3, 4)).astype(np.float32),
            mask=None,
        ),
    ]
    return grouped("grouping", *cases[0:2]) + grouped("masking", *cases[2:3]) + grouped("dtype", *cases[3:4])


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


def fix_rolling_cache():
    rng = np.random.default_rng(1905)
    n = rng.normal
    cases = [
        Case("window 2, T=5", q=n(size=(5, 3)), k=n(size=(5, 3)), v=n(size=(5, 2)), window=2),
        Case(
            "window as long as the sequence", q=n(size=(4, 2)), k=n(size=(4, 2)), v=n(size=(4, 2)), window=4
        ),
        Case(
            "batch and heads, window 2",
            q=n(size=(2, 2, 6, 4)),
            k=n(size=(2, 2, 6, 4)),
            v=n(size=(2, 2, 6, 3)),
            window=2,
        ),
        Case(
            "float32, window 3",
            q=n(size=(7, 4)).astype(np.float32),
            k=n(size=(7, 4)).astype(np.float32),
            v=n(size=(7, 4)).astype(np.float32),
            window=3,
        ),
    ]
    return (
        grouped("rolling window", *cases[0:2])
        + grouped("batch dims", *cases[2:3])
        + grouped("dtype", *cases[3:4])
    )


def absorb_value_side():
    rng = np.random.default_rng(1906)
    n = rng.normal
    cases = [
        Case("one head", W_UV=n(size=(1, 4, 3)), W_O=n(size=(3, 6))),
        Case("r larger than d_model", W_UV=n(size=(3, 9, 2)), W_O=n(size=(6, 4))),
        Case("float32", W_UV=n(size=(2, 3, 3)).astype(np.float32), W_O=n(size=(6, 3)).astype(np.float32)),
    ]
    return grouped("absorbed projection", *cases[0:2]) + grouped("dtype", *cases[2:3])


HIDDEN = {
    "ch11.predict_cache_gib": predict_cache_gib,
    "ch11.gqa_attention": gqa_attention,
    "ch11.window_sink_chunk": window_sink_chunk,
    "ch11.pairs_in_range": pairs_in_range,
    "ch11.fix_rolling_cache": fix_rolling_cache,
    "ch11.absorb_value_side": absorb_value_side,
}
