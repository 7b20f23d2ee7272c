"""The dot-product explorer: turn and stretch a query in the plane, see the scores and the weights."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..explore import dot_product as view_of
from ..i18n import tr
from ._core import Control, Explorer, Frame, caption
from ._paint import ACCENT, BAR_COLOUR, Painter, Renderer

__all__ = ["render_dot_product", "dot_product_explorer"]


class _DotProductPainter(Painter):
    size = (9.8, 3.2)

    def __init__(self) -> None:
        super().__init__()
        reference = view_of.dot_product_view()
        S = len(reference.k)
        self.names = [f"k{j}" for j in range(S)]
        ax_plane, self.ax_scores, self.ax_weights = self.fig.subplots(
            1, 3, gridspec_kw={"width_ratios": [1.1, 1, 1]}
        )
        lim = 4.6
        ax_plane.set_xlim(-lim, lim)
        ax_plane.set_ylim(-lim, lim)
        ax_plane.set_aspect("equal")
        ax_plane.axhline(0, color="0.85", lw=0.8)
        ax_plane.axvline(0, color="0.85", lw=0.8)
        for j, (kx, ky) in enumerate(reference.k):
            ax_plane.annotate(
                "", (kx, ky), (0, 0), arrowprops={"arrowstyle": "->", "color": BAR_COLOUR, "lw": 1.5}
            )
            ax_plane.text(
                kx * 1.12, ky * 1.12, self.names[j], color=BAR_COLOUR, fontsize=9, ha="center", va="center"
            )
        ax_plane.scatter(*reference.v.T, marker="s", s=18, color="0.6", label="values")
        (self.query,) = ax_plane.plot([0, 1], [0, 1], color=ACCENT, lw=2.5, label="query")
        (self.tip,) = ax_plane.plot([1], [1], "o", color=ACCENT, ms=5)
        (self.out,) = ax_plane.plot([0], [0], "*", color="black", ms=12, label="output")
        ax_plane.legend(fontsize=7, loc="lower left", frameon=False)
        ax_plane.tick_params(labelsize=7)
        self.title_plane = ax_plane.set_title(" ", fontsize=9)
        positions = np.arange(S)
        self.bars_scores = self.ax_scores.bar(positions, np.ones(S), color=BAR_COLOUR)
        self.ax_scores.axhline(0, color="0.3", lw=0.8)
        self.ax_scores.set_xticks(positions, labels=self.names)
        reach = float(np.linalg.norm(reference.k, axis=-1).max()) * max(
            view_of.LENGTHS
        )  # the largest |q . k|
        self.ax_scores.set_ylim(-1.05 * reach, 1.05 * reach)
        self.ax_scores.set_title("scores q·k", fontsize=9)
        self.bars_weights = self.ax_weights.bar(positions, np.ones(S) / S, color=BAR_COLOUR)
        self.labels = [self.ax_weights.text(j, 0, "", ha="center", va="bottom", fontsize=8) for j in range(S)]
        self.ax_weights.set_ylim(0, 1.12)
        self.ax_weights.set_xticks(positions, labels=self.names)
        self.ax_weights.set_title("weights = softmax(scores)", fontsize=9)
        # Only these change from frame to frame; the axes, keys and values are the kept background.
        self._animate(
            self.query,
            self.tip,
            self.out,
            self.title_plane,
            *self.bars_scores,
            *self.bars_weights,
            *self.labels,
        )
        self._freeze(reference)

    def paint(self, view: Any) -> str:
        qx, qy = view.q
        self.query.set_data([0, qx], [0, qy])
        self.tip.set_data([qx], [qy])
        self.out.set_data([view.out[0]], [view.out[1]])
        self.title_plane.set_text(f"query at {view.angle:g}°, length {view.length:g}")
        for bar, score in zip(self.bars_scores, view.scores):
            bar.set_height(score)
        for bar, text, w in zip(self.bars_weights, self.labels, view.weights):
            bar.set_height(w)
            text.set_position((bar.get_x() + bar.get_width() / 2, w + 0.02))
            text.set_text(f"{w:.2f}")
        return caption(
            tr(
                "q = ({qx}, {qy}): scores {scores}",
                qx=f"{view.q[0]:.2f}",
                qy=f"{view.q[1]:.2f}",
                scores=", ".join(f"{n} {s:.2f}" for n, s in zip(self.names, view.scores)),
            ),
            tr(
                "weights {weights}; output = Σ weight · value = ({ox}, {oy})",
                weights=", ".join(f"{n} {w:.3f}" for n, w in zip(self.names, view.weights)),
                ox=f"{view.out[0]:.2f}",
                oy=f"{view.out[1]:.2f}",
            ),
        )

    def alt(self, view: Any) -> str:
        top = int(np.argmax(view.weights))
        return tr(
            "A query arrow at {angle} degrees, length {length}, among five key arrows in the plane, with "
            "the output (the weighted mean of the values) as a star; bar charts of the five scores and of "
            "the weights, the largest {top} on {key}.",
            angle=f"{view.angle:g}",
            length=f"{view.length:g}",
            top=f"{view.weights[top]:.2f}",
            key=self.names[top],
        )


def _renderer() -> Renderer:
    return Renderer(lambda angle, length: view_of.dot_product_view(angle, length), _DotProductPainter)


def render_dot_product(angle: float = view_of.DEFAULT_ANGLE, length: float = view_of.DEFAULT_LENGTH) -> Frame:
    """Draw :func:`attncourse.explore.dot_product_view`: the plane, the scores, the weights."""
    return _renderer()(angle=angle, length=length)


def dot_product_explorer(
    *, angle: int = view_of.DEFAULT_ANGLE, length: float = view_of.DEFAULT_LENGTH, mode: str = "auto"
) -> Explorer:
    """Turn a query (``angle``, in 45° steps) and stretch it (``length``): the scores and the weights.

    Draws :func:`attncourse.explore.dot_product_view`: five keys in the plane, the query, and the
    output (the weights' blend of the values).  Pointing the query at a key raises that key's
    weight; a longer query makes every score larger in size, so the softmax sharpens.

    Examples
    --------
    >>> ex = dot_product_explorer(mode="live")
    >>> sorted(ex.controls), ex.mode
    (['angle', 'length'], 'live')
    """
    return Explorer(
        "dot_product",
        [
            Control(
                "angle",
                tr("query angle"),
                view_of.ANGLES,
                int(angle),
                labels=tuple(f"{a}°" for a in view_of.ANGLES),
            ),
            Control("length", tr("query length"), view_of.LENGTHS, float(length)),
        ],
        _renderer(),
        alt=tr(
            "A query and five keys in the plane, with bar charts of the scores and the attention weights."
        ),
        mode=mode,
    )
