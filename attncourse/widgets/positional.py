"""The positional explorer: the sinusoidal table, one position's encoding, dot products and RoPE."""

from __future__ import annotations

from typing import Any, Sequence, Tuple

import numpy as np

from .. import explore
from ..plotting import heatmap
from ._core import Control, Explorer, Frame, caption
from ._paint import ACCENT, BAR_COLOUR, LINE_COLOURS, Painter, Renderer

__all__ = ["render_positional", "positional_explorer"]


class _PositionalPainter(Painter):
    size = (9.8, 5.0)

    def __init__(self, d_model_values: Tuple[int, ...], n_positions: int, seed: int) -> None:
        from matplotlib.patches import Rectangle

        super().__init__()
        self.n_positions, self.seed = n_positions, seed
        d_max = max(d_model_values)
        reference = explore.positional_view(d_max, 0, n_positions, seed)
        (self.ax_table, self.ax_row), (self.ax_dots, self.ax_rope) = self.fig.subplots(2, 2)
        heatmap(
            reference.pe,
            ax=self.ax_table,
            cmap="cividis",
            vmin=-1,
            vmax=1,
            annotate=False,
            colorbar=True,
            xlabel="dimension",
            ylabel="position",
            title=" ",
        )
        self.here = self.ax_table.add_patch(
            Rectangle((-0.5, -0.5), d_max, 1, fill=False, edgecolor=ACCENT, lw=2)
        )
        self.bars = self.ax_row.bar(np.arange(d_max), reference.row, color=BAR_COLOUR, width=0.8)
        self.ax_row.set_ylim(-1.1, 1.1)
        self.ax_row.axhline(0, color="0.3", lw=0.8)
        self.ax_row.set_xlabel("dimension")
        self.title_row = self.ax_row.set_title(" ")
        (self.dots,) = self.ax_dots.plot([0], [0], "o-", ms=3, color=LINE_COLOURS[0])
        (self.rope,) = self.ax_rope.plot([0], [0], "o-", ms=3, color=LINE_COLOURS[1])
        self.titles = []
        for ax in (self.ax_dots, self.ax_rope):
            ax.axvline(0, color="0.5", lw=0.8)
            ax.axhline(0, color="0.8", lw=0.8, zorder=0)
            ax.set_xlim(-n_positions, n_positions)
            ax.set_xlabel("offset j - position")
            self.titles.append(ax.set_title(" "))
        self._animate(self.here, *self.bars, self.title_row, self.dots, self.rope, *self.titles)
        self._freeze(reference)

    def background_key(self, view: Any) -> Any:
        return view.d_model  # the table, the axes' ranges and their ticks

    @staticmethod
    def _limits(values: np.ndarray) -> Tuple[float, float]:
        spread = float(values.max() - values.min()) or 1.0
        return float(values.min()) - 0.08 * spread, float(values.max()) + 0.08 * spread

    def paint(self, view: Any) -> str:
        position, d_model, P = view.position, view.d_model, view.n_positions
        # What depends on d_model only (the background): the table, the ranges of the curves.
        table = self.ax_table.images[0]
        table.set_data(view.pe)
        table.set_extent((-0.5, d_model - 0.5, P - 0.5, -0.5))
        self.ax_table.set_xlim(-0.5, d_model - 0.5)
        self.ax_table.set_title(f"sinusoidal table, d_model = {d_model}")
        self.ax_row.set_xlim(-0.5, d_model - 0.5)
        self.ax_dots.set_ylim(
            *self._limits(
                view.pe_dots if position == 0 else explore.positional_view(d_model, 0, P, self.seed).pe_dots
            )
        )
        self.ax_rope.set_ylim(*self._limits(view.rope_scores))  # every position's scores
        # What moves with the position.
        self.here.set_y(position - 0.5)
        self.here.set_width(d_model)
        for i, bar in enumerate(self.bars):
            bar.set_visible(i < d_model)
            bar.set_height(view.row[i] if i < d_model else 0.0)
        self.title_row.set_text(f"encoding of position {position}")
        self.dots.set_data(view.offsets, view.pe_dots)
        self.rope.set_data(view.offsets, view.rope_row)
        self.titles[0].set_text(f"PE[{position}] · PE[j]   (d_model/2 = {d_model // 2} at offset 0)")
        self.titles[1].set_text(f"RoPE: query at {position} · key at j, / √d_model")
        near = np.abs(view.offsets) <= 2
        return caption(
            f"d_model = {d_model}, position {position}: the encoding starts "
            + ", ".join(f"{x:.2f}" for x in view.row[:6])
            + ", ...",
            "Dot products with the encodings at offsets "
            + ", ".join(str(o) for o in view.offsets[near])
            + ": "
            + ", ".join(f"{x:.2f}" for x in view.pe_dots[near])
            + " (the same curve, shifted, at every position).",
        )

    def alt(self, view: Any) -> str:
        return (
            f"Sinusoidal encoding table for d_model = {view.d_model} with position {view.position} outlined, a "
            f"bar chart of that position's encoding, and line charts against the offset of the dot product of "
            f"encodings (peak {view.d_model // 2} at offset 0) and of the RoPE score of a query and a key."
        )


def _positional_renderer(d_model_values: Sequence[int], n_positions: int, seed: int) -> Renderer:
    d_model_values = tuple(int(d) for d in d_model_values)
    return Renderer(
        lambda d_model, position: explore.positional_view(d_model, position, n_positions, seed),
        lambda: _PositionalPainter(d_model_values, n_positions, seed),
    )


def render_positional(
    d_model: int,
    position: int,
    n_positions: int = explore.N_POSITIONS,
    seed: int = 0,
    d_model_values: Sequence[int] = explore.D_MODEL_VALUES,
) -> Frame:
    """Draw :func:`attncourse.explore.positional_view`: table, one row, dot vs offset, RoPE.

    ``d_model_values`` are the widths the figure is laid out for (``d_model`` must be one).
    """
    return _positional_renderer(d_model_values, n_positions, seed)(d_model=d_model, position=position)


def positional_explorer(
    *,
    d_model: int = explore.DEFAULT_D_MODEL,
    position: int = explore.DEFAULT_POSITION,
    d_model_values: Sequence[int] = explore.D_MODEL_VALUES,
    positions: Sequence[int] = explore.POSITIONS,
    n_positions: int = explore.N_POSITIONS,
    seed: int = 0,
    mode: str = "auto",
) -> Explorer:
    """``d_model`` and position sliders: the sinusoidal table, one row, dot product vs offset, RoPE.

    Draws :func:`attncourse.explore.positional_view`: the dot product of two positions'
    encodings, and the RoPE score of a query and a key, depend on their offset only, so the
    curves move with the position but keep their shape.

    Parameters
    ----------
    d_model, position : int
        The starting values; one of ``d_model_values`` and of ``positions``.
    d_model_values : sequence of int
        The widths offered (default 16, 32, 64); each even.
    positions : sequence of int
        The positions offered (default 0, 4, ..., 28), each below ``n_positions``.
    n_positions : int
        Rows of the table (default 32).
    seed : int
        Seed of the RoPE query and key vectors.
    mode : {"auto", "frames", "live"}
        ``"frames"`` precomputes every picture and switches in the browser (the HTML book; needs
        ipywidgets 8); ``"live"`` redraws from Python (ipywidgets 7); ``"auto"`` picks by version.

    Returns
    -------
    Explorer
        An ipywidgets ``VBox``: display it (or leave it last in a cell).
    """
    return Explorer(
        "positional",
        [
            Control("d_model", "d_model", tuple(int(d) for d in d_model_values), int(d_model)),
            Control("position", "position", tuple(int(p) for p in positions), int(position)),
        ],
        _positional_renderer(d_model_values, n_positions, seed),
        alt="Sinusoidal encoding heatmap, one position's encoding, and dot products against offset.",
        mode=mode,
    )
