"""Chapter 11's explorer views and widgets: the numbers they show come from the package's functions."""

from __future__ import annotations

import numpy as np
import pytest

from attncourse import kv_cache
from attncourse.explore import modern


@pytest.mark.parametrize("kind", list(modern.ATTENTION_KINDS))
@pytest.mark.parametrize("window,sinks", [(0, 0), (4096, 0), (4096, 4)])
def test_cache_view_numbers(kind, window, sinks):
    v = modern.cache_view(kind, window, sinks)
    kv, rank, rope = modern.ATTENTION_KINDS[kind]
    per_layer = (rank + rope) if rank else 2 * kv * 128
    assert v.per_token_kib == 32 * per_layer * 2 / 1024
    kept = np.minimum(v.contexts, window + sinks) if window else v.contexts
    np.testing.assert_allclose(v.cache_gib, kept * 32 * per_layer * 2 / 2**30)
    if v.crossover is not None:  # the first length at which the cache holds as many bytes as the weights

        def cache(tokens):
            return kv_cache.kv_cache_bytes(32, kv, 128, tokens, kv_lora_rank=rank, rope_head_dim=rope)

        assert cache(v.crossover) >= 2 * 8.03e9 > cache(v.crossover - 1)
        assert v.weights_gib == 2 * 8.03e9 / 2**30  # Llama-3-8B's weights, whatever the attention
    else:
        assert window and v.cache_gib.max() < v.weights_gib
    np.testing.assert_array_equal(
        v.mask, kv_cache.window_sink_mask(16, 4, sinks) if window else np.tril(np.ones((16, 16), dtype=bool))
    )


def test_cache_view_is_llama_3_8b_with_each_attention():
    config = kv_cache.MODEL_CONFIGS[modern.BASE_MODEL]
    assert modern.BASE_MODEL == "Llama-3-8B" and config["params"] == 8.03e9
    assert modern.ATTENTION_KINDS[modern.DEFAULT_KIND] == (config["n_kv_heads"], None, 0) == (8, None, 0)
    assert modern.ATTENTION_KINDS["MHA"][0] == config["n_heads"] == 32
    assert modern.WINDOWS[1] == kv_cache.MODEL_CONFIGS["Mistral-7B-v0.1"]["window"]
    with pytest.raises(TypeError):
        config["params"] = 7.0e9  # read-only: the chapter and the explorer share it


def test_rope_view_linear_and_yarn_ends():
    lin = modern.rope_scaling_view("linear", 8)
    np.testing.assert_allclose(lin.ratio, 1 / 8)
    yarn = modern.rope_scaling_view("yarn", 4)
    assert yarn.ratio[0] == pytest.approx(1.0) and yarn.ratio[-1] == pytest.approx(0.25)
    assert yarn.attention_factor == pytest.approx(0.1 * np.log(4) + 1)
    assert np.all(np.diff(yarn.ratio) <= 1e-12)  # slower pairs are slowed at least as much
    with pytest.raises(ValueError, match="scaling"):
        modern.rope_scaling_view("ntk", 4)


@pytest.mark.slow
def test_widgets_render_every_frame():
    pytest.importorskip("ipywidgets")
    from attncourse.widgets import modern as w

    ex = w.modern_explorer(mode="live")
    assert ex.values() == {"kind": "GQA-8", "window": 0, "sinks": 0}
    frame = w.render_modern("MLA-512", 4096, 4)
    assert frame.png[:4] == b"\x89PNG" and "window" in frame.caption and frame.alt
    frame = w.render_rope_scaling("llama3", 8)
    assert "llama3" in frame.caption and frame.png[:4] == b"\x89PNG"


@pytest.mark.slow
def test_sinks_without_a_window_say_they_change_nothing():
    """With no window every token is kept, so the sinks control has no effect: the frame says so
    instead of repeating the sink-free frame word for word."""
    pytest.importorskip("matplotlib")
    from attncourse.widgets.modern import render_modern

    plain, with_sinks = render_modern(window=0, sinks=0), render_modern(window=0, sinks=4)
    assert with_sinks.png == plain.png  # the same cache and mask: nothing to draw differently
    assert "sinks count only beside a window" in with_sinks.caption and "sinks" not in plain.caption
    assert "sinks change nothing" in with_sinks.alt
    windowed = render_modern(window=modern.WINDOWS[1], sinks=4)
    assert f"a window of {modern.WINDOWS[1]} tokens + 4 sinks" in windowed.caption
    assert "count only" not in windowed.caption
