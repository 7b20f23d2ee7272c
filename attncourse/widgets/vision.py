"""The Vision Transformer explorer: an image, its patch grid, and where [CLS] looks, per head or by rollout."""

from __future__ import annotations

from typing import Any, Mapping

from ..explore import vision as view_of
from ..i18n import tr
from ._core import Control, Explorer, Frame, caption
from ._paint import PatchMapsPainter, Renderer

__all__ = ["render_vision", "vision_explorer"]


class _VisionPainter(PatchMapsPainter):
    size = (9.8, 2.4)
    blit = False  # the grid and the maps change size with the patch size: every frame drawn whole

    def __init__(self, maps: Mapping[str, Any]) -> None:
        super().__init__()
        reference = view_of.vision_view(maps, 0, int(maps["patch_sizes"][0]), "layer 0")
        H, W = reference.image.shape
        extent = (-0.5, W - 0.5, H - 0.5, -0.5)
        self._build_maps(reference.image, reference.maps[0], len(reference.titles), extent)
        self.grid_lines = []
        self._freeze(reference)

    def paint(self, view: Any) -> str:
        P = view.patch_size
        H, W = view.image.shape
        for line in self.grid_lines:
            line.remove()
        self.grid_lines = [self.ax_image.axvline(x - 0.5, color="tab:orange", lw=1) for x in range(P, W, P)]
        self.grid_lines += [self.ax_image.axhline(y - 0.5, color="tab:orange", lw=1) for y in range(P, H, P)]
        self.image_title.set_text(f"label {view.label}, {P}x{P} patches")
        self._paint_maps(view, lambda r, c: (c * P - 0.5, r * P - 0.5, P))
        fields = dict(height=str(P), width=str(P), n=str(view.grid[0] * view.grid[1]))
        if view.view == "rollout":
            first = tr(
                "{height} x {width} patches: N = {n} tokens and [CLS]. "
                "Shown: the rollout's share of each patch in the final [CLS] token.",
                **fields,
            )
        else:
            first = tr(
                "{height} x {width} patches: N = {n} tokens and [CLS]. "
                "Shown: the weight [CLS] puts on each patch in layer {layer}, head by head.",
                layer=_layer(view.view),
                **fields,
            )
        tops = ", ".join(f"({r}, {c})" for r, c in view.top_patches)
        return caption(first, tr("Largest cell (outlined, row and column on the grid): {cells}.", cells=tops))

    def alt(self, view: Any) -> str:
        fields = dict(digit=str(view.label), height=str(view.patch_size), width=str(view.patch_size))
        if view.view == "rollout":
            return tr(
                "A handwritten {digit} of 8 by 8 pixels with a grid of {height} by {width} patches drawn over "
                "it, and one rollout map laid over the image, each with its largest patch outlined.",
                **fields,
            )
        return tr(
            "A handwritten {digit} of 8 by 8 pixels with a grid of {height} by {width} patches drawn over "
            "it, and {k} head maps of layer {layer} laid over the image, each with its largest patch outlined.",
            k=str(len(view.maps)),
            layer=_layer(view.view),
            **fields,
        )


def _layer(view: str) -> str:
    """The layer's number of a view "layer n" of ``VISION_VIEWS``."""
    return view.partition(" ")[2]


def _view_label(view: str) -> str:
    """One of ``VISION_VIEWS`` as an option label: the rollout, or a layer ("layer 1")."""
    if view == "rollout":
        return tr("rollout")
    return tr("layer {n}", n=_layer(view))


def _renderer(maps: Mapping[str, Any]) -> Renderer:
    return Renderer(
        lambda image, patch_size, view: view_of.vision_view(maps, image, patch_size, view),
        lambda: _VisionPainter(maps),
    )


def render_vision(
    maps: Mapping[str, Any], image: int = 0, patch_size: int = 2, view: str = "layer 1"
) -> Frame:
    """Draw :func:`attncourse.explore.vision_view` for one image, patch size and view."""
    return _renderer(maps)(image=image, patch_size=patch_size, view=view)


def vision_explorer(
    maps: Mapping[str, Any], *, image: int = 0, patch_size: int = 2, view: str = "layer 1", mode: str = "auto"
) -> Explorer:
    """Pick an image, a patch size, and a layer or the rollout: where [CLS] looks in the image.

    Draws :func:`attncourse.explore.vision_view` from the maps that the chapter's sweep script
    saved (one trained ViT per patch size): the image with its patch grid, then every head's
    [CLS] attention over the patches of the chosen layer, or the attention rollout.

    Examples
    --------
    >>> import numpy as np
    >>> maps = {"images": np.zeros((2, 4, 4)).tolist(), "labels": [3, 5], "patch_sizes": [2],
    ...         "2": {"cls_attention": np.full((2, 2, 2, 4), 0.2).tolist(), "rollout": np.full((2, 4), 0.2).tolist()}}
    >>> ex = vision_explorer(maps, mode="live")
    >>> ex.values()
    {'image': 0, 'patch_size': 2, 'view': 'layer 1'}
    """
    n_images = len(maps["images"])
    sizes = tuple(int(p) for p in maps["patch_sizes"])
    return Explorer(
        "vision",
        [
            Control(
                "image",
                tr("image"),
                tuple(range(n_images)),
                int(image),
                kind="toggle",
                labels=tuple(str(i) for i in range(n_images)),
            ),
            Control(
                "patch_size",
                tr("patch size"),
                sizes,
                int(patch_size),
                kind="toggle",
                labels=tuple(f"{p}x{p}" for p in sizes),
            ),
            Control(
                "view",
                tr("[CLS] reads"),
                view_of.VISION_VIEWS,
                view,
                kind="toggle",
                labels=tuple(_view_label(v) for v in view_of.VISION_VIEWS),
            ),
        ],
        _renderer(maps),
        alt=tr(
            "A digit with its patch grid and where the Vision Transformer's [CLS] token looks, per head or by "
            "rollout."
        ),
        mode=mode,
    )
