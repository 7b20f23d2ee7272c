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
    if v.crossover is not None:
        assert (
            kv_cache.kv_cache_bytes(32, kv, 128, v.crossover, kv_lora_rank=rank, rope_head_dim=rope) >= 14e9
        )
    else:
        assert window and v.cache_gib.max() < v.weights_gib
    np.testing.assert_array_equal(
        v.mask, kv_cache.window_sink_mask(16, 4, sinks) if window else np.tril(np.ones((16, 16), dtype=bool))
    )


def test_rope_view_linear_and_yarn_ends():
    lin = modern.rope_scaling_view("linear", 8)
    np.testing.assert_allclose(lin.ratio, 1 / 8)
    yarn = modern.rope_scaling_view("yarn", 4)
    assert yarn.ratio[0] == pytest.approx(1.0) and yarn.ratio[-1] == pytest.approx(0.25)
    assert yarn.attention_factor == pytest.approx(0.1 * np.log(4) + 1)
    assert np.all(np.diff(yarn.ratio) <= 1e-12)  # slower pairs are slowed at least as much
    with pytest.raises(ValueError, match="scaling"):
        modern.rope_scaling_view("ntk", 4)


def test_widgets_render_every_frame():
    pytest.importorskip("ipywidgets")
    from attncourse.widgets import modern as w

    ex = w.modern_explorer(mode="live")
    assert ex.values() == {"kind": "GQA-8", "window": 0, "sinks": 0}
    frame = w.render_modern("MLA-512", 4096, 4)
    assert frame.png[:4] == b"\x89PNG" and "window" in frame.caption and frame.alt
    frame = w.render_rope_scaling("llama3", 8)
    assert "llama3" in frame.caption and frame.png[:4] == b"\x89PNG"
