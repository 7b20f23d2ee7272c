"""The captioner explorer: a digit, the letter the decoder writes, and where that letter reads the image."""

from __future__ import annotations

from typing import Any, Mapping

from ..explore import cross as view_of
from ._core import Control, Explorer, Frame, caption
from ._paint import ACCENT, Painter, Renderer

__all__ = ["cross_explorer", "render_cross"]


class _CrossPainter(Painter):
    size = (9.8, 2.4)
    blit = False  # two or four maps: every frame drawn whole

    def __init__(self, captions: Mapping[str, Any]) -> None:
        super().__init__()
        reference = view_of.cross_view(captions, 0, 0, "each head")
        n_maps = max(2, len(reference.maps))
        axes = self.fig.subplots(1, n_maps + 1)
        self.ax_image, self.ax_maps = axes[0], list(axes[1:])
        extent = (-0.5, 7.5, 7.5, -0.5)  # the 4 x 4 map stretched over the 8 x 8 image
        self.picture = self.ax_image.imshow(reference.image, cmap="gray_r", vmin=0, vmax=1)
        self.backdrops, self.overlays, self.outlines = [], [], []
        for ax in self.ax_maps:
            self.backdrops.append(ax.imshow(reference.image, cmap="gray_r", vmin=0, vmax=1))
            self.overlays.append(ax.imshow(reference.maps[0], cmap="magma", alpha=0.65, extent=extent))
            self.outlines.append(ax.plot([], [], color=ACCENT, lw=2)[0])
        for ax in axes:
            ax.set_xticks([]), ax.set_yticks([])
        self.image_title = self.ax_image.set_title(" ", fontsize=9)
        self.map_titles = [ax.set_title(" ", fontsize=8) for ax in self.ax_maps]
        self._freeze(reference)

    def paint(self, view: Any) -> str:
        self.picture.set_data(view.image)
        shown = view.written[: view.step] + "[" + (view.letter if view.letter != "end" else "end") + "]"
        self.image_title.set_text(f"label {view.label}: {shown}")
        for k, ax in enumerate(self.ax_maps):
            visible = k < len(view.maps)
            ax.set_visible(visible)
            if not visible:
                continue
            grid = view.maps[k]
            self.backdrops[k].set_data(view.image)
            self.overlays[k].set_data(grid)
            self.overlays[k].set_clim(0, max(float(grid.max()), 1e-9))
            r, c = view.top_patches[k]
            x0, y0 = 2 * c - 0.5, 2 * r - 0.5
            self.outlines[k].set_data([x0, x0 + 2, x0 + 2, x0, x0], [y0, y0, y0 + 2, y0 + 2, y0])
            self.map_titles[k].set_text(view.titles[k])
        tops = ", ".join(f"({r}, {c})" for r, c in view.top_patches)
        what = (
            "the decoder's cross-attention over the 16 patches, heads averaged, beside the encoder's rollout"
            if view.heads == "averaged"
            else "each head's cross-attention over the 16 patches"
        )
        return caption(
            f"The captioner wrote '{view.written}'; step {view.step + 1} writes '{view.letter}'. Shown: {what}.",
            f"Largest cell (outlined, row and column on the 4 x 4 grid): {tops}.",
        )

    def alt(self, view: Any) -> str:
        maps = "its heads' mean and the encoder's rollout" if view.heads == "averaged" else "one map per head"
        return (
            f"A handwritten {view.label} of 8 by 8 pixels, and, for the letter '{view.letter}' of the "
            f"written name '{view.written}', {maps} laid over the image, each with its largest patch outlined."
        )


def _renderer(captions: Mapping[str, Any]) -> Renderer:
    return Renderer(
        lambda image, step, heads: view_of.cross_view(captions, image, step, heads),
        lambda: _CrossPainter(captions),
    )


def render_cross(
    captions: Mapping[str, Any], image: int = 0, step: int = 0, heads: str = "averaged"
) -> Frame:
    """Draw :func:`attncourse.explore.cross_view` for one image, decoder step and head choice."""
    return _renderer(captions)(image=image, step=step, heads=heads)


def cross_explorer(
    captions: Mapping[str, Any], *, image: int = 0, step: int = 0, heads: str = "averaged", mode: str = "auto"
) -> Explorer:
    """Pick a digit, a decoder step and the heads: where each letter of the digit's name reads the image.

    Draws :func:`attncourse.explore.cross_view` from what the captioner's script saved.

    Examples
    --------
    >>> import numpy as np
    >>> shown = [{"image": np.zeros((8, 8)).tolist(), "label": 1, "written": "one",
    ...           "cross_attention_per_head": np.full((2, 4, 16), 1 / 16).tolist(),
    ...           "rollout_mean": np.full(16, 1 / 16).tolist()}]
    >>> cross_explorer({"shown": shown}, mode="live").values()
    {'image': 0, 'step': 0, 'heads': 'averaged'}
    """
    shown = captions["shown"]
    return Explorer(
        "cross",
        [
            Control(
                "image",
                "digit",
                tuple(range(len(shown))),
                int(image),
                kind="toggle",
                labels=tuple(str(s["label"]) for s in shown),
            ),
            Control(
                "step",
                "step",
                view_of.CROSS_STEPS,
                int(step),
                kind="toggle",
                labels=tuple(str(s + 1) for s in view_of.CROSS_STEPS),
            ),
            Control("heads", "heads", view_of.CROSS_HEADS, heads, kind="toggle"),
        ],
        _renderer(captions),
        alt="A digit and where each letter of its name, written by the captioner's decoder, reads the image.",
        mode=mode,
    )
