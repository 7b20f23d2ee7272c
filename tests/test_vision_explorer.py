"""The Vision Transformer explorer: its view (pure numpy) and its frames."""

import json
from pathlib import Path

import numpy as np
import pytest

from attncourse import explore

ROOT = Path(__file__).resolve().parents[1]


def fake_maps(n=2, sizes=(2, 4), n_layers=2, n_heads=4, side=8, seed=0):
    """Maps shaped like the sweep script's: random rows that sum to less than 1 ([CLS] keeps some)."""
    rng = np.random.default_rng(seed)
    maps = {
        "images": rng.random((n, side, side)).tolist(),
        "labels": list(range(n)),
        "patch_sizes": list(sizes),
    }
    for P in sizes:
        N = (side // P) ** 2
        maps[str(P)] = {
            "cls_attention": (0.9 * rng.dirichlet(np.ones(N), size=(n, n_layers, n_heads))).tolist(),
            "rollout": (0.7 * rng.dirichlet(np.ones(N), size=n)).tolist(),
        }
    return maps


def test_view_lays_rows_on_the_grid_row_major():
    maps = fake_maps()
    rows = np.asarray(maps["4"]["cls_attention"])[1, 0]  # image 1, layer 0: (heads, 4)
    v = explore.vision_view(maps, 1, 4, "layer 0")
    assert v.grid == (2, 2) and v.maps.shape == (4, 2, 2) and v.label == 1
    np.testing.assert_array_equal(v.maps[:, 0, 1], rows[:, 1])  # patch 1 is the top-right one
    np.testing.assert_array_equal(v.maps[:, 1, 0], rows[:, 2])
    for k, (r, c) in enumerate(v.top_patches):
        assert v.maps[k, r, c] == v.maps[k].max()


def test_rollout_view_has_one_map():
    maps = fake_maps()
    v = explore.vision_view(maps, 0, 2, "rollout")
    assert v.maps.shape == (1, 4, 4) and len(v.titles) == 1
    np.testing.assert_array_equal(v.maps[0].ravel(), maps["2"]["rollout"][0])


@pytest.mark.parametrize(
    "kwargs, pattern",
    [
        (dict(image=5), r"vision_view: image must be below 2; got 5"),
        (dict(patch_size=3), r"patch_size must be one of \[2, 4\]; got 3"),
        (dict(view="layer 2"), r"view must be one of"),
    ],
)
def test_view_errors(kwargs, pattern):
    with pytest.raises(ValueError, match=pattern):
        explore.vision_view(fake_maps(), **kwargs)


def test_saved_maps_fit_the_view():
    path = ROOT / "attncourse" / "data" / "vit_digits_maps.json"
    maps = json.loads(path.read_text())
    for P in maps["patch_sizes"]:
        for view in explore.VISION_VIEWS:
            v = explore.vision_view(maps, len(maps["images"]) - 1, P, view)
            assert v.maps.shape[1:] == (8 // P, 8 // P)
            assert (v.maps >= 0).all() and v.maps.sum() <= len(
                v.maps
            ) + 1e-6  # rows of weights, [CLS] excluded


@pytest.mark.slow
def test_frames_switch_with_every_control():
    widgets = pytest.importorskip("attncourse.widgets")
    ipywidgets = pytest.importorskip("ipywidgets")
    if not hasattr(ipywidgets, "Stack"):
        pytest.skip("frames mode needs ipywidgets 8")
    maps = fake_maps()
    ex = widgets.vision_explorer(maps, mode="frames")
    assert len(ex.frames) == 2 * 2 * 3  # images x patch sizes x views
    default = ex.frames[(0, 2, "layer 1")]
    assert default == widgets.render_vision(maps, 0, 2, "layer 1")
    for key in ((1, 2, "layer 1"), (0, 4, "layer 1"), (0, 2, "rollout")):
        other = ex.frames[key]
        assert other.png != default.png and other.caption != default.caption and other.alt != default.alt
    assert ex.frame_bytes() < 1_250_000


def test_live_mode_redraws():
    widgets = pytest.importorskip("attncourse.widgets")
    ex = widgets.vision_explorer(fake_maps(), mode="live")
    assert ex.values() == {"image": 0, "patch_size": 2, "view": "layer 1"}
    ex.controls["view"].value = "rollout"
    assert ex.values()["view"] == "rollout"


@pytest.mark.parametrize("which", ["vision", "cross"])
def test_every_map_is_laid_over_the_chosen_image(which):
    """One painter draws every frame; after switching images, each map's backdrop is the new image."""
    pytest.importorskip("matplotlib")
    if which == "vision":
        from attncourse.widgets.vision import _renderer

        renderer, controls = _renderer(fake_maps()), dict(image=1, patch_size=2, view="layer 0")
    else:
        from attncourse.results import saved_results
        from attncourse.widgets.cross import _renderer

        renderer, controls = (
            _renderer(saved_results("digit_captioner.json")),
            dict(image=2, step=0, heads="each head"),
        )
    first = renderer(**{**controls, "image": 0})
    later = renderer(**controls)
    painter = renderer.painter
    chosen = np.asarray(painter.picture.get_array())
    shown = [ax.get_visible() for ax in painter.ax_maps]
    for backdrop, visible in zip(painter.backdrops, shown):
        if visible:
            np.testing.assert_array_equal(np.asarray(backdrop.get_array()), chosen)
    assert later.png != first.png


def _painted(which: str):
    """The painter of the ViT's or the captioner's explorer after drawing one frame."""
    pytest.importorskip("matplotlib")
    if which == "vision":
        from attncourse.widgets.vision import _renderer

        renderer, controls = _renderer(fake_maps()), dict(image=1, patch_size=2, view="layer 0")
    else:
        from attncourse.results import saved_results
        from attncourse.widgets.cross import _renderer

        renderer, controls = (
            _renderer(saved_results("digit_captioner.json")),
            dict(image=2, step=1, heads="each head"),
        )
    renderer(**controls)
    return renderer.painter


@pytest.mark.parametrize("which", ["vision", "cross"])
def test_the_maps_of_a_frame_share_one_colour_scale_with_a_bar(which):
    """Maps shown side by side are compared: one scale (0 to the largest cell shown) and one bar."""
    painter = _painted(which)
    shown = [k for k, ax in enumerate(painter.ax_maps) if ax.get_visible()]
    assert len(shown) >= 2
    tops = {np.asarray(painter.overlays[k].get_array()).max() for k in shown}
    assert len(tops) > 1  # the maps' own maxima differ, so a per-map scale would mislead
    for k in shown:
        assert painter.overlays[k].get_clim() == (0, max(tops))
    assert painter.colorbar.mappable is painter.overlays[0]


@pytest.mark.parametrize("which", ["vision", "cross"])
def test_no_ink_hides_a_low_weight(which):
    """The maps are opaque; the digit's ink lies over them in translucent white, never in black."""
    painter = _painted(which)
    for overlay, backdrop in zip(painter.overlays, painter.backdrops):
        assert overlay.get_alpha() is None and backdrop.get_zorder() > overlay.get_zorder()
        paper, ink = backdrop.cmap(0.0), backdrop.cmap(1.0)
        assert paper[3] == 0.0  # where there is no ink the weight shows unchanged
        assert ink[:3] == (1.0, 1.0, 1.0) and 0 < ink[3] < 1  # ink lightens the weight, never blacks it out
        lowest = overlay.cmap(0.0)
        assert sum(lowest[:3]) > 0.3  # the lowest weight is a colour, not black (as magma's was)
