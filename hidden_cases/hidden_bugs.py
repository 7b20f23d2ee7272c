"""Hidden cases, Appendix A (spot the bug): other grids, layer and head counts, scalings, caches, float32."""

import numpy as np

from attncourse.exercises import Case, grouped
from attncourse.exercises.chapters.bugs import (
    _chunk_case,
    _delta_case,
    _fused_case,
    _grid_cases,
    _rollout_case,
)
from attncourse.exercises.chapters.bugs_modern import _cross_case, _partial_case, _sink_case, _yarn_case


def chunk_window_weights():
    rng = np.random.default_rng(19101)
    return (
        grouped(
            "chunk after a cache",
            _chunk_case("(2, 3) heads, a chunk of 2 after 6 cached, window 5", rng, (2, 3), 2, 8, 4, 5),
            _chunk_case("one new token after 9 cached, window 1", rng, (), 1, 10, 2, 1),
            _chunk_case("a chunk of 6 after 1 cached, window 2", rng, (), 6, 7, 3, 2),
        )
        + grouped(
            "prompt, no cache",
            _chunk_case("a prompt of 5, window 4: all but the first token", rng, (), 5, 5, 2, 4),
            _chunk_case("a prompt of 7, window 3", rng, (3,), 7, 7, 4, 3),
        )
        + grouped(
            "dtype",
            _chunk_case(
                "float32, 2 heads, a chunk of 3 after 5 cached, window 4", rng, (2,), 3, 8, 2, 4, np.float32
            ),
        )
    )


def grid_positions():
    return grouped("grids", *_grid_cases((2, 2, 4), (5, 3, 8))) + grouped(
        "wide and tall", *_grid_cases((2, 6, 12), (6, 4, 20))
    )


def cls_rollout():
    rng = np.random.default_rng(19103)
    return grouped(
        "layers",
        _rollout_case("2 layers, 3 images, 1 head, N=6", rng, 2, 3, 1, 6),
        _rollout_case("5 layers, 1 image, 3 heads, N=9", rng, 5, 1, 3, 9),
    ) + grouped(
        "dtype",
        _rollout_case("float32, 2 layers, 2 images, 4 heads, N=3", rng, 2, 2, 4, 3, dtype=np.float32),
    )


def gated_delta_layer():
    rng = np.random.default_rng(19104)
    return grouped(
        "recurrence",
        _delta_case("4 heads, L=5, E=6, Ev=2", rng, 4, 5, 6, 2),
        _delta_case("1 head, L=12, E=4, Ev=4", rng, 1, 12, 4, 4),
    ) + grouped("dtype", _delta_case("float32, 3 heads, L=6, E=8, Ev=3", rng, 3, 6, 8, 3, np.float32))


def fused_qkv_attention():
    rng = np.random.default_rng(19105)
    return grouped(
        "heads",
        _fused_case("batch (2, 2), L=2, d=6, 3 heads", rng, (2, 2), 2, 6, 3),
        _fused_case("L=6, d=12, 2 heads", rng, (), 6, 12, 2),
        _fused_case("L=1, d=4, 4 heads of width 1", rng, (), 1, 4, 4),
    ) + grouped(
        "dtype", _fused_case("float32, a batch of 3, L=4, d=8, 2 heads", rng, (3,), 4, 8, 2, np.float32)
    )


def yarn_scores():
    rng = np.random.default_rng(19106)
    return grouped(
        "scaling",
        _yarn_case("factor 2, trained on 64 positions, L=7, E=16", rng, (7, 16), 2, 64),
        _yarn_case("batch (2, 2), factor 32, trained on 16 positions, L=3, E=8", rng, (2, 2, 3, 8), 32, 16),
        _yarn_case("factor 6, trained on 4 positions, L=6, E=6", rng, (6, 6), 6, 4),
    ) + grouped(
        "dtype",
        _yarn_case(
            "float32, 3 heads, factor 4, trained on 8 positions, L=4, E=4", rng, (3, 4, 4), 4, 8, np.float32
        ),
    )


def partial_rope_attention():
    rng = np.random.default_rng(19107)
    return grouped(
        "shape",
        _partial_case("L=7, E=6, rotary_dim 2", rng, (), 7, 6, 2, 2),
        _partial_case("3 heads, L=4, E=10, rotary_dim 8, Ev=5", rng, (3,), 4, 10, 5, 8),
        _partial_case("L=2, E=4, rotary_dim 2", rng, (), 2, 4, 3, 2),
    ) + grouped(
        "dtype",
        _partial_case("float32, 2 heads, L=5, E=8, rotary_dim 6", rng, (2,), 5, 8, 4, 6, np.float32),
    )


def sink_cache_weights():
    rng = np.random.default_rng(19108)
    return grouped(
        "stream",
        _sink_case("L=14, E=8, 4 sinks, window 6", rng, 14, 8, 4, 6),
        _sink_case("L=7, E=2, 1 sink, window 1", rng, 7, 2, 1, 1),
        _sink_case("L=10, E=4, 2 sinks, window 5", rng, 10, 4, 2, 5),
    ) + grouped("dtype", _sink_case("float32, L=9, E=6, 3 sinks, window 3", rng, 9, 6, 3, 3, np.float32))


def predict_first_drift():
    return grouped("prediction", Case("the same stream and cache"))


def cross_decode():
    rng = np.random.default_rng(19110)
    return grouped(
        "decoding",
        _cross_case("a memory of one token, T=3, D=4, E=2, Dv=2", rng, 1, 3, 4, 2, 2),
        _cross_case("S=9, T=7, D=8, E=4, Dv=5", rng, 9, 7, 8, 4, 5),
    ) + grouped("dtype", _cross_case("float32, S=3, T=2, D=6, E=6, Dv=3", rng, 3, 2, 6, 6, 3, np.float32))


HIDDEN = {
    "bugs.chunk_window_weights": chunk_window_weights,
    "bugs.grid_positions": grid_positions,
    "bugs.cls_rollout": cls_rollout,
    "bugs.gated_delta_layer": gated_delta_layer,
    "bugs.fused_qkv_attention": fused_qkv_attention,
    "bugs.yarn_scores": yarn_scores,
    "bugs.partial_rope_attention": partial_rope_attention,
    "bugs.sink_cache_weights": sink_cache_weights,
    "bugs.predict_first_drift": predict_first_drift,
    "bugs.cross_decode": cross_decode,
}
