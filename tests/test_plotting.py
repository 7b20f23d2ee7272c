"""The figure helpers say what their colours mean and keep their labels apart."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from attncourse.masks import causal_mask  # noqa: E402
from attncourse.plotting import attention_heatmap, heatmap, mask_overlay  # noqa: E402


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _colorbar_label(ax):
    colorbar_axes = [a for a in ax.figure.axes if a is not ax]
    assert len(colorbar_axes) == 1
    return colorbar_axes[0].get_ylabel()


def test_attention_heatmap_colorbar_names_the_weights():
    ax = attention_heatmap(np.full((3, 3), 1 / 3))
    assert _colorbar_label(ax) == "attention weight"


def test_heatmap_colorbar_label_is_passed_through():
    ax = heatmap(np.eye(3), colorbar_label="cosine similarity")
    assert _colorbar_label(ax) == "cosine similarity"
    ax = attention_heatmap(np.eye(3), colorbar_label="mean weight")
    assert _colorbar_label(ax) == "mean weight"


@pytest.mark.parametrize("n, rotation", [(4, 0.0), (8, 45.0), (16, 90.0)])
def test_many_column_labels_stand_upright(n, rotation):
    labels = [f"{i}:tok" for i in range(n)]
    ax = heatmap(np.zeros((n, n)), labels, labels)
    assert ax.get_xticklabels()[0].get_rotation() == rotation
    if rotation != 45.0:  # a slanted label's box overlaps its neighbour's even when the ink does not
        ax.figure.canvas.draw()
        boxes = [t.get_window_extent() for t in ax.get_xticklabels()]
        assert not any(a.overlaps(b) for a, b in zip(boxes, boxes[1:]))  # neighbours do not collide


def _legend_texts(ax):
    legend = ax.get_legend()
    return [] if legend is None else [t.get_text() for t in legend.get_texts()]


def test_mask_overlay_legend_names_both_colours_without_weights():
    labels = ["the", "cat", "sat", "on"]
    ax = mask_overlay(causal_mask(4), None, labels, labels, legend=True)
    assert _legend_texts(ax) == ["allowed", "blocked: weight 0"]
    allowed = ax.get_legend().get_patches()[0].get_facecolor()
    image = ax.images[0]
    assert np.allclose(allowed, image.cmap(image.norm(1.0)))  # the colour the allowed cells have
    ax.figure.canvas.draw()
    renderer = ax.figure.canvas.get_renderer()
    legend_top = ax.get_legend().get_window_extent(renderer).y1
    assert legend_top <= ax.xaxis.label.get_window_extent(renderer).y0  # below the "key" label
    for tick in ax.get_xticklabels():
        assert legend_top <= tick.get_window_extent(renderer).y0


def test_mask_overlay_legend_with_weights_names_the_hatching_only():
    mask = causal_mask(3)
    ax = mask_overlay(mask, np.tril(np.full((3, 3), 0.3)), legend=True)
    assert _legend_texts(ax) == ["blocked: weight 0"]
    assert _colorbar_label(ax) == "attention weight"


def test_mask_overlay_draws_no_legend_unless_asked():
    assert mask_overlay(causal_mask(3)).get_legend() is None


def test_mask_overlay_colorbar_can_be_left_out():
    mask = causal_mask(3)
    ax = mask_overlay(mask, np.tril(np.full((3, 3), 0.3)), colorbar=False)
    assert ax.figure.axes == [ax]
