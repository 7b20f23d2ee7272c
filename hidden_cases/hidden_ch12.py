"""Hidden cases, chapter 12 (cross-attention): other shapes, float32, images of one latent, text
before any image, padding latents, examples with a one-token source, every source token removed,
resamplers over examples with no real features, packed rows of four examples and of one-token
targets, heads of width 1, beam steps with one beam per source, an empty cache and a hypothesis
continued by every row of its source."""

import numpy as np

from attncourse import softmax
from attncourse.exercises import Case, grouped
from attncourse.exercises.chapters._ch12_decoder import beam_inputs, packed_inputs
from attncourse.exercises.chapters.ch12 import image_inputs, resampler_inputs


def predict_beam_cache_bytes():
    return grouped("prediction", Case("the same clips, beams and tokens"))


def interleaved_image_attention():
    rng = np.random.default_rng(1922)
    return (
        grouped(
            "one image",
            image_inputs(
                rng, "B=1, L=5, the image at the last position, 1 latent", [[4]], [[1]], L=5, gate=0.6
            ),
            image_inputs(rng, "B=3, L=2, an image at 0, 1 and 0", [[0], [1], [0]], [[2], [1], [3]], L=2, E=2),
        )
        + grouped(
            "several images",
            image_inputs(
                rng, "B=1, L=7, images at 1, 4 and 5, gate -1.7", [[1, 4, 5]], [[1, 2, 3]], L=7, gate=-1.7
            ),
            image_inputs(
                rng, "B=2, L=3, every position an image", [[0, 1, 2], [0, 1, 2]], [[1, 1, 2], [2, 1, 1]], L=3
            ),
        )
        + grouped(
            "padding latents",
            image_inputs(
                rng, "B=3, L=4, 1, 2 and 1 images", [[3], [0, 2], [1]], [[1], [3, 2], [4]], L=4, Ev=1
            ),
        )
        + grouped(
            "dtype",
            image_inputs(rng, "float32, B=1, L=6", [[2, 3]], [[2, 2]], L=6, E=5, gate=-0.7, dtype=np.float32),
        )
    )


def prefix_decoder_mask():
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
            Case(  # the kept tokens' weights underflowed to exactly 0: the row has nothing left
                "kept tokens whose weights are 0",
                weights=softmax(np.array([[[0.0, 800.0, 0.0], [1.0, 0.5, -1.0]]])),
                v=rng.normal(size=(1, 3, 2)),
                keep=np.array([[True, False, True]]),
            ),
        )
        + grouped(
            "dtype",
            case("float32, B=2", 2, 2, 3, 2, [[True, False, True], [False, True, True]], dtype=np.float32),
        )
    )


def latent_resampler():
    rng = np.random.default_rng(1925)
    return (
        grouped(
            "shape",
            resampler_inputs(rng, "B=3, N=1 feature, R=1 latent", [1, 1, 1], N=1, R=1),
            resampler_inputs(rng, "B=1, N=7, R=5, d=6, Ev=4", [7], N=7, R=5, d=6, Ev=4),
        )
        + grouped(
            "feature padding",
            resampler_inputs(rng, "B=3, N=5, 1, 5 and 2 real features", [1, 5, 2], N=5, R=2),
        )
        + grouped(
            "an example with no features",
            resampler_inputs(rng, "B=2, N=3, 0 and 0 real features", [0, 0], N=3),
        )
        + grouped(
            "dtype",
            resampler_inputs(rng, "float32, B=1, N=4, 1 real", [1], N=4, R=4, dtype=np.float32),
        )
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


def packed_decoder_block():
    rng = np.random.default_rng(1917)

    def case(name, tgt, src, d, H, d_ff, dtype=np.float64):
        return Case(name, **packed_inputs(rng, tgt, src, d, H, d_ff, dtype))

    return (
        grouped("one example", case("target 1, source 5, d=12, 3 heads", [1], [5], 12, 3, 24))
        + grouped(
            "packed examples",
            case(
                "four examples, targets 2, 1, 3, 1; sources 1, 3, 2, 2; d=4, 4 heads (width 1)",
                [2, 1, 3, 1],
                [1, 3, 2, 2],
                4,
                4,
                4,
            ),
            case("targets 1, 1; sources 4, 1; d=6, 2 heads", [1, 1], [4, 1], 6, 2, 10),
        )
        + grouped(
            "dtype",
            case(
                "float32, targets 3, 1, 2; sources 2, 2, 3; 2 heads",
                [3, 1, 2],
                [2, 2, 3],
                8,
                2,
                8,
                dtype=np.float32,
            ),
        )
    )


def beam_decoder_step():
    rng = np.random.default_rng(1918)

    def case(name, *shape, lengths, dtype=np.float64, parents=None):
        inputs = beam_inputs(rng, *shape, lengths, dtype)[0]
        if parents is not None:
            inputs["parents"] = np.array(parents, dtype=np.int64)
        return Case(name, **inputs)

    return (
        grouped(
            "hypotheses reordered",
            case("3 sources x 2 beams, 5 cached, S=5, d=6, 2 heads", 3, 2, 5, 5, 6, 2, 12, lengths=[5, 5, 5]),
            case(
                "2 sources x 3 beams, every row continues its source's first hypothesis, 2 cached",
                2,
                3,
                2,
                3,
                8,
                4,
                8,
                lengths=[3, 3],
                parents=[0, 0, 0, 3, 3, 3],
            ),
        )
        + grouped(
            "source padding",
            case("lengths 1, 4 and 2, 2 beams, 1 cached, 4 heads", 3, 2, 1, 4, 8, 4, 8, lengths=[1, 4, 2]),
        )
        + grouped(
            "first step",
            case(
                "an empty cache, 1 beam per source, 2 sources, S=2, 1 head",
                2,
                1,
                0,
                2,
                8,
                1,
                8,
                lengths=[1, 2],
            ),
        )
        + grouped(
            "dtype",
            case(
                "float32, 2 sources x 2 beams, 6 cached, S=2, d=4",
                2,
                2,
                6,
                2,
                4,
                2,
                8,
                lengths=[2, 1],
                dtype=np.float32,
            ),
        )
    )


HIDDEN = {
    "ch12.predict_beam_cache_bytes": predict_beam_cache_bytes,
    "ch12.interleaved_image_attention": interleaved_image_attention,
    "ch12.prefix_decoder_mask": prefix_decoder_mask,
    "ch12.remove_source_tokens": remove_source_tokens,
    "ch12.latent_resampler": latent_resampler,
    "ch12.packed_cross_mask": packed_cross_mask,
    "ch12.packed_decoder_block": packed_decoder_block,
    "ch12.beam_decoder_step": beam_decoder_step,
}
