"""Hidden cases, chapter 12 (cross-attention): other shapes, float32, a source of one token,
examples with a one-token source, every source token removed, other model sizes."""

import numpy as np

from attncourse import softmax
from attncourse.exercises import Case, grouped


def predict_cross_kv_cost():
    return grouped("prediction", Case("the same decoder and source"))


def masked_cross_attention():
    rng = np.random.default_rng(1902)
    n = rng.normal

    def case(name, B, L, S, d, E, Ev, lengths=None, dtype=np.float64):
        padding = None if lengths is None else np.arange(S) < np.array(lengths)[:, None]
        return Case(
            name,
            x=n(size=(B, L, d)).astype(dtype),
            memory=n(size=(B, S, d)).astype(dtype),
            W_q=n(size=(d, E)).astype(dtype),
            W_k=n(size=(d, E)).astype(dtype),
            W_v=n(size=(d, Ev)).astype(dtype),
            src_padding=padding,
        )

    return (
        grouped(
            "shape", case("S=1 source token, L=3", 2, 3, 1, 4, 2, 2), case("L=1, S=6, E=5", 1, 1, 6, 3, 5, 2)
        )
        + grouped("source padding", case("lengths 2, 6 and 1, L=5, S=6", 3, 5, 6, 4, 3, 3, lengths=[2, 6, 1]))
        + grouped(
            "dtype", case("float32, lengths 1 and 4", 2, 3, 4, 3, 2, 2, lengths=[1, 4], dtype=np.float32)
        )
    )


def fix_prefix_mask():
    return grouped("prefix mask", Case("S=5, L=3", S=5, L=3), Case("S=3, L=6", S=3, L=6)) + grouped(
        "one side empty or short", Case("S=2, L=1", S=2, L=1), Case("S=1, L=1", S=1, L=1)
    )


def remove_source_tokens():
    rng = np.random.default_rng(1904)

    def case(name, B, L, S, Ev, keep, dtype=np.float64):
        return Case(
            name,
            weights=softmax(rng.normal(size=(B, L, S))).astype(dtype),
            v=rng.normal(size=(B, S, Ev)).astype(dtype),
            keep=np.array(keep, dtype=bool),
        )

    return (
        grouped(
            "removed tokens",
            case("nothing removed", 1, 2, 3, 2, [[True] * 3]),
            case(
                "all but one removed", 2, 3, 4, 2, [[False, False, True, False], [True, False, False, False]]
            ),
        )
        + grouped(
            "every token removed",
            case("B=2, every token of sequence 0 removed", 2, 3, 2, 2, [[False, False], [True, False]]),
        )
        + grouped(
            "dtype",
            case("float32, B=2", 2, 2, 3, 2, [[True, False, True], [False, True, True]], dtype=np.float32),
        )
    )


def encoder_decoder_parameters():
    return grouped(
        "count",
        Case("the 2017 big model: 1024, 4096, 6 + 6", d_model=1024, d_ff=4096, n_encoder=6, n_decoder=6),
        Case("encoder deeper than decoder: 64, 256, 4 + 1", d_model=64, d_ff=256, n_encoder=4, n_decoder=1),
        Case("one layer each: 8, 8", d_model=8, d_ff=8, n_encoder=1, n_decoder=1),
    )


def packed_cross_mask():
    return grouped(
        "packed examples",
        Case(
            "four examples, one-token sources",
            src_lengths=np.array([1, 1, 2, 1]),
            tgt_lengths=np.array([2, 3, 1, 1]),
        ),
        Case("two examples, long source", src_lengths=np.array([6, 1]), tgt_lengths=np.array([1, 5])),
    ) + grouped(
        "one example", Case("source 1, target 3", src_lengths=np.array([1]), tgt_lengths=np.array([3]))
    )


HIDDEN = {
    "ch12.predict_cross_kv_cost": predict_cross_kv_cost,
    "ch12.masked_cross_attention": masked_cross_attention,
    "ch12.fix_prefix_mask": fix_prefix_mask,
    "ch12.remove_source_tokens": remove_source_tokens,
    "ch12.encoder_decoder_parameters": encoder_decoder_parameters,
    "ch12.packed_cross_mask": packed_cross_mask,
}
