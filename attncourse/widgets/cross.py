"""The captioner explorer: a digit, the letter the decoder writes, and where that letter reads the image."""

from __future__ import annotations

from typing import Any, Mapping

from ..explore import cross as view_of
from ..i18n import tr
from ._core import Control, Explorer, Frame, caption
from ._paint import PatchMapsPainter, Renderer

__all__ = ["cross_explorer", "render_cross"]


class _CrossPainter(PatchMapsPainter):
    size = (9.8, 2.4)
    blit = False  # two or four maps: every frame drawn whole

    def __init__(self, captions: Mapping[str, Any]) -> None:
        super().__init__()
        reference = view_of.cross_view(captions, 0, 0, "each head")
        extent = (-0.5, 7.5, 7.5, -0.5)  # the 4 x 4 map stretched over the 8 x 8 image
        self._build_maps(reference.image, reference.maps[0], max(2, len(reference.maps)), extent)
        self._freeze(reference)

    def paint(self, view: Any) -> str:
        shown = view.written[: view.step] + "[" + (view.letter if view.letter != "end" else "end") + "]"
        self.image_title.set_text(f"label {view.label}: {shown}")
        self._paint_maps(view, lambda r, c: (2 * c - 0.5, 2 * r - 0.5, 2))
        tops = ", ".join(f"({r}, {c})" for r, c in view.top_patches)
        fields = dict(written=view.written, step=str(view.step), letter=view.letter)
        if view.heads == "averaged":
            first = tr(
                "The captioner wrote '{written}'; step {step} writes '{letter}'. Shown: the decoder's "
                "cross-attention over the 16 patches, heads averaged, beside the encoder's rollout.",
                **fields,
            )
        else:
            first = tr(
                "The captioner wrote '{written}'; step {step} writes '{letter}'. "
                "Shown: each head's cross-attention over the 16 patches.",
                **fields,
            )
        return caption(
            first, tr("Largest cell (outlined, row and column on the 4 x 4 grid): {cells}.", cells=tops)
        )

    def alt(self, view: Any) -> str:
        fields = dict(digit=str(view.label), letter=view.letter, written=view.written)
        if view.letter == "end":  # the end mark after the name, not one of its letters
            if view.heads == "averaged":
                return tr(
                    "A handwritten {digit} of 8 by 8 pixels, and, for the end mark after the written name "
                    "'{written}', its heads' mean and the encoder's rollout laid over the image, each with "
                    "its largest patch outlined.",
                    digit=fields["digit"],
                    written=fields["written"],
                )
            return tr(
                "A handwritten {digit} of 8 by 8 pixels, and, for the end mark after the written name "
                "'{written}', one map per head laid over the image, each with its largest patch outlined.",
                digit=fields["digit"],
                written=fields["written"],
            )
        if view.heads == "averaged":
            return tr(
                "A handwritten {digit} of 8 by 8 pixels, and, for the letter '{letter}' of the written name "
                "'{written}', its heads' mean and the encoder's rollout laid over the image, each with its "
                "largest patch outlined.",
                **fields,
            )
        return tr(
            "A handwritten {digit} of 8 by 8 pixels, and, for the letter '{letter}' of the written name "
            "'{written}', one map per head laid over the image, each with its largest patch outlined.",
            **fields,
        )


def _heads_label(heads: str) -> str:
    """One of ``CROSS_HEADS`` as the reader reads it."""
    return tr("averaged") if heads == "averaged" else tr("each head")


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
                tr("digit"),
                tuple(range(len(shown))),
                int(image),
                kind="toggle",
                labels=tuple(str(s["label"]) for s in shown),
            ),
            Control(
                "step",
                tr("step"),
                view_of.CROSS_STEPS,
                int(step),
                kind="toggle",
                labels=tuple(str(s) for s in view_of.CROSS_STEPS),
            ),
            Control(
                "heads",
                tr("heads"),
                view_of.CROSS_HEADS,
                heads,
                kind="toggle",
                labels=tuple(_heads_label(h) for h in view_of.CROSS_HEADS),
            ),
        ],
        _renderer(captions),
        alt=tr(
            "A digit and where each letter of its name, written by the captioner's decoder, reads the image."
        ),
        mode=mode,
    )
