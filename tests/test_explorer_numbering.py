"""One numbering: the explorers count rows, positions, keys, heads, layers, images and steps from 0,
as the chapters' code does (Python indices).  Counts (``blocks seen``, ``4 heads``) stay counts.

Each check reads what the reader sees (a caption, an alt text, a tick label, a control's option
labels) and would fail on labels that count from 1.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("ipywidgets")
pytest.importorskip("matplotlib")

from attncourse import explore  # noqa: E402
from attncourse import widgets as aw  # noqa: E402
from attncourse.toy_data import SENTENCE  # noqa: E402

pytestmark = pytest.mark.slow  # renders every explorer


def _texts(labels) -> list:
    return [t.get_text() for t in labels]


def _option_labels(explorer, name: str) -> list:
    return [label for label, _ in explorer.controls[name].options]


def test_self_attention_names_the_query_by_its_index():
    """Chapter 4 calls "cat" row 1 of the sentence; the explorer's slider (0..5) and caption agree."""
    assert SENTENCE.index("cat") == 1
    for token, word in enumerate(SENTENCE):
        frame = aw.render_self_attention(token)
        assert f"Query '{word}' at position {token} of" in frame.caption, token
        assert f"'{word}' (position {token}) outlined" in frame.alt, token
        top = int(np.argmax(explore.self_attention_view(token, "original").row))
        assert f"is on '{SENTENCE[top]}' (position {top})." in frame.alt, token
    explorer = aw.self_attention_explorer(mode="live")
    slider = explorer.controls["token"]
    assert (slider.min, slider.max, slider.value) == (0, len(SENTENCE) - 1, 1)


def test_scaling_map_numbers_its_rows_and_keys_from_0():
    from attncourse.widgets.scaling import _scaling_renderer

    renderer = _scaling_renderer(0, explore.D_K_VALUES)
    renderer(d_k=explore.DEFAULT_D_K)
    ax = renderer.painter.image.axes
    L, S = explore.scaling_view(explore.DEFAULT_D_K, 0).weights["scaled"].shape
    assert _texts(ax.get_yticklabels()) == [f"row {i}" for i in range(L)]
    assert _texts(ax.get_xticklabels()) == [str(j) for j in range(S)]


def test_dot_product_names_its_keys_k0_onwards():
    """Chapter 2 names its keys k_0, k_1, ...: so does the explorer, in its ticks and caption."""
    from attncourse.widgets.dot_product import _renderer

    renderer = _renderer()
    frame = renderer(angle=45, length=1.0)
    view = explore.dot_product_view(45, 1.0)
    names = [f"k{j}" for j in range(len(view.k))]
    assert _texts(renderer.painter.ax_scores.get_xticklabels()) == names
    assert _texts(renderer.painter.ax_weights.get_xticklabels()) == names
    assert "scores " + ", ".join(f"{n} {s:.2f}" for n, s in zip(names, view.scores)) in frame.caption
    top = int(np.argmax(view.weights))
    assert frame.alt.endswith(f"{view.weights[top]:.2f} on k{top}.")


def test_heads_are_numbered_from_0_and_all_is_a_value_of_its_own():
    from attncourse.widgets.heads import _heads_renderer

    renderer = _heads_renderer(explore.DEFAULT_D_MODEL_HEADS, explore.TOKENS, 1)  # render_heads' defaults
    view = explore.heads_view(4)
    renderer(n_heads=4, head="all")
    assert [t.get_text() for t in renderer.painter.titles[:4]] == ["head 0", "head 1", "head 2", "head 3"]
    for head in range(4):
        frame = renderer(n_heads=4, head=head)
        assert renderer.painter.titles[0].get_text() == f"head {head} of 4"
        w = view.weights[head]
        i, j = np.unravel_index(int(np.argmax(w)), w.shape)
        tokens = view.tokens
        assert f"Head {head} of 4 (heads 0 to 3," in frame.caption
        assert f"'{tokens[i]}' (position {i}) attending to '{tokens[j]}' (position {j})." in frame.caption
        assert f"heatmap of head {head} of 4" in frame.alt
    explorer = aw.heads_explorer(mode="live")
    assert _option_labels(explorer, "head") == ["all", "0", "1", "2", "3"]
    for bad in (4, -1, "1", True):
        with pytest.raises(ValueError, match=r"head must be 'all' or a head index from 0 to 3"):
            aw.render_heads(4, head=bad)


def test_mask_lists_rows_by_their_index():
    """Left padding with the causal mask leaves the first rows with nothing to attend to: row 0 is one."""
    view = explore.mask_view(2, True, SENTENCE, 0, pad_side="left")
    assert view.empty_rows[0] == 0
    rows = ", ".join(str(i) for i in view.empty_rows)
    caption = aw.render_mask(2, "causal", pad_side="left").caption
    assert f"(rows {rows} have no key to attend to)" in caption
    assert f"; rows {rows} are all zero" in aw.render_mask(2, "causal", pad_side="left").alt
    nan = explore.mask_view(2, True, SENTENCE, 0, pad_side="left", fill="-1e9 fp16")
    assert nan.nan_rows[0] == 0
    alt = aw.render_mask(2, "causal", pad_side="left", fill="-1e9 fp16").alt
    assert f"; rows {', '.join(str(i) for i in nan.nan_rows)} are NaN" in alt


def test_efficient_numbers_keys_from_0_and_counts_blocks():
    from attncourse.widgets.efficient import _renderer

    renderer = _renderer()
    frame = renderer(block_size=2, step=1)
    S = len(explore.efficient_view(2, 1).scores)
    assert _texts(renderer.painter.ax_scores.get_xticklabels()) == [str(j) for j in range(S)]
    assert _texts(renderer.painter.ax_weights.get_xticklabels()) == [str(j) for j in range(S)]
    assert "after 1 of 3 blocks (keys 0 to 1 seen)" in frame.caption  # a count of blocks, keys by index
    assert renderer.painter.title_scores.get_text().startswith("1 of 3 blocks seen:")
    assert "after 1 of 3 blocks:" in frame.alt
    assert f"keys 0 to {S - 1} seen" in renderer(block_size=1, step=S).caption
    explorer = aw.efficient_explorer(mode="live")
    assert explorer.specs[1].values == (1, 2, 3)  # "blocks seen" is a count: 1 to 3


def _layer_maps(n_layers=2, H=4, L=5, seed=0):
    rng = np.random.default_rng(seed)
    w = rng.random((n_layers, 1, H, L, L))
    return list(w / w.sum(-1, keepdims=True))


def test_transformer_numbers_layers_and_heads_from_0():
    from attncourse.widgets.transformer import _renderer

    maps, tokens = _layer_maps(), ["3", "1", "4", "1", "5"]
    explorer = aw.transformer_explorer(maps, tokens, mode="live")
    assert _option_labels(explorer, "layer") == ["0", "1"]
    assert _option_labels(explorer, "head") == ["0", "1", "2", "3"]
    stacked = explore.transformer.as_head_maps(maps)
    renderer = _renderer(stacked, tokens, None)
    for layer, head in ((0, 0), (1, 3)):
        frame = renderer(layer=layer, head=head)
        assert frame.caption.startswith(f'<div class="attncourse-caption">Layer {layer}, head {head}:')
        assert f"The attention map of layer {layer}, head {head} over" in frame.alt
        assert renderer.painter.title.get_text() == f"layer {layer}, head {head}"
    for ax in renderer.painter.fig.axes:
        if ax.get_title().startswith(("previous-token score", "induction score")):
            assert _texts(ax.get_yticklabels()) == ["layer 0", "layer 1"]
            assert _texts(ax.get_xticklabels()) == ["head 0", "head 1", "head 2", "head 3"]


def _vision_maps(n=3, n_layers=2, n_heads=4, seed=0):
    rng = np.random.default_rng(seed)
    return {
        "images": rng.random((n, 8, 8)).tolist(),
        "labels": [7, 0, 3][:n],
        "patch_sizes": [2],
        "2": {
            "cls_attention": (0.9 * rng.dirichlet(np.ones(16), size=(n, n_layers, n_heads))).tolist(),
            "rollout": (0.7 * rng.dirichlet(np.ones(16), size=n)).tolist(),
        },
    }


def test_vision_numbers_images_layers_and_heads_from_0():
    maps = _vision_maps()
    rows = np.asarray(maps["2"]["cls_attention"])
    for layer in (0, 1):
        view = explore.vision_view(maps, 2, 2, f"layer {layer}")
        np.testing.assert_array_equal(view.maps.reshape(4, 16), rows[2, layer])  # layer index `layer`
        assert view.titles == tuple(f"layer {layer}, head {h}" for h in range(4))
    explorer = aw.vision_explorer(maps, mode="live")
    assert _option_labels(explorer, "image") == ["0", "1", "2"]
    assert _option_labels(explorer, "view") == ["layer 0", "layer 1", "rollout"]
    assert explorer.values()["view"] == "layer 1"  # the last layer, as before
    with pytest.raises(ValueError, match="view must be one of"):
        explore.vision_view(maps, 0, 2, "layer 2")


def test_cross_numbers_steps_and_heads_from_0():
    rng = np.random.default_rng(0)
    captions = {
        "shown": [
            {
                "image": rng.random((8, 8)).tolist(),
                "label": 7,
                "written": "seven",
                "cross_attention_per_head": rng.dirichlet(np.ones(16), size=(4, 6)).tolist(),
                "rollout_mean": rng.dirichlet(np.ones(16)).tolist(),
            }
        ]
    }
    for step, letter in enumerate("seven"):
        assert f"step {step} writes '{letter}'" in aw.render_cross(captions, 0, step).caption
    assert "step 5 writes 'end'" in aw.render_cross(captions, 0, 5).caption
    view = explore.cross_view(captions, 0, 0, "each head")
    assert view.titles == tuple(f"'s': head {h}" for h in range(4))
    explorer = aw.cross_explorer(captions, mode="live")
    assert _option_labels(explorer, "step") == [str(s) for s in explore.CROSS_STEPS] == list("012345")


def test_positional_names_positions_by_index():
    frame = aw.render_positional(explore.DEFAULT_D_MODEL, 0)
    assert f"d_model = {explore.DEFAULT_D_MODEL}, position 0:" in frame.caption
