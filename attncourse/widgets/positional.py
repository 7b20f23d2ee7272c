"""The positional explorer: the sinusoidal table, one position's encoding, dot products and RoPE."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence, Tuple

import numpy as np

from .. import explore
from ..i18n import tr
from ..plotting import heatmap
from ._core import Control, DependentControl, Explorer, Frame, caption
from ._paint import ACCENT, BAR_COLOUR, LINE_COLOURS, Painter, Renderer

__all__ = ["render_positional", "positional_explorer"]


PAST = "past training length"  # the sinusoidal table past the training length of chapter 7's study
ENCODINGS = ("sinusoidal", "RoPE", PAST)


@dataclass(frozen=True, eq=False)
class _Shown:
    """A positional view and the encoding on screen."""

    view: Any  # explore.PositionalView, or explore.ExtrapolationView for PAST
    encoding: str


class _PositionalPainter(Painter):
    """Sinusoidal: the table, one position's encoding, the dot product against the offset.

    RoPE: the score matrix of a query and a key rotated to every pair of positions, the query
    rotated to one position, and that position's scores against the offset.
    """

    size = (9.8, 3.3)

    def __init__(self, d_model_values: Tuple[int, ...], n_positions: int, seed: int) -> None:
        from matplotlib.patches import Rectangle

        super().__init__()
        self.n_positions, self.seed = n_positions, seed
        d_max = max(d_model_values)
        reference = explore.positional_view(d_max, 0, n_positions, seed)
        self.ax_table, self.ax_row, self.ax_curve = self.fig.subplots(
            1, 3, gridspec_kw={"width_ratios": [1, 1, 1]}
        )
        heatmap(
            reference.pe,
            ax=self.ax_table,
            cmap="cividis",
            vmin=-1,
            vmax=1,
            annotate=False,
            colorbar=True,
            title=" ",
        )
        self.here = self.ax_table.add_patch(
            Rectangle((-0.5, -0.5), d_max, 1, fill=False, edgecolor=ACCENT, lw=2)
        )
        self.bars = self.ax_row.bar(np.arange(d_max), reference.row, color=BAR_COLOUR, width=0.8)
        self.ax_row.axhline(0, color="0.3", lw=0.8)
        # Past the training length: the range each dimension took in training, and the training length.
        self.seen = [
            self.ax_row.step([0], [0], where="mid", color="0.35", lw=1.2, ls=ls, label=label)[0]
            for ls, label in (("-", "range seen in training"), ("-", None))
        ]
        self.train_line_table = self.ax_table.axhline(0, color=ACCENT, lw=1.5, ls="--")
        self.train_line_curve = self.ax_curve.axvline(0, color=ACCENT, lw=1.5, ls="--", label=" ")
        (self.marker,) = self.ax_curve.plot([0], [0], "o", ms=8, mfc="none", mec=ACCENT, mew=2)
        self.ax_row.set_xlabel("dimension")
        self.title_row = self.ax_row.set_title(" ", fontsize=9)
        (self.curve,) = self.ax_curve.plot([0], [0], "o-", ms=3, color=LINE_COLOURS[1])
        self.zero_line = self.ax_curve.axvline(0, color="0.5", lw=0.8)
        self.ax_curve.axhline(0, color="0.8", lw=0.8, zorder=0)
        self.ax_curve.set_xlim(-n_positions, n_positions)
        self.ax_curve.set_xlabel("offset j - position")
        self.title_curve = self.ax_curve.set_title(" ", fontsize=9)
        self._animate(self.here, *self.bars, self.title_row, self.curve, self.marker, self.title_curve)
        # laid out for the widest text: three-digit positions and the past-training-length titles
        widest = explore.extrapolation_view(d_max, max(explore.EXTRAPOLATION_POSITIONS))
        self._freeze(_Shown(widest, PAST))

    def background_key(self, shown: Any) -> Any:
        return shown.view.d_model, shown.encoding  # the table, the axes' ranges and their ticks

    @staticmethod
    def _limits(values: np.ndarray) -> Tuple[float, float]:
        spread = float(values.max() - values.min()) or 1.0
        return float(values.min()) - 0.08 * spread, float(values.max()) + 0.08 * spread

    def _show_past(self, past: bool) -> None:
        for artist in (*self.seen, self.train_line_table, self.train_line_curve, self.marker):
            artist.set_visible(past)
        self.zero_line.set_visible(not past)
        legends = [self.ax_row.get_legend(), self.ax_curve.get_legend()]
        for legend in legends:
            if legend is not None:
                legend.remove()
        if past:
            self.ax_row.legend(handles=[self.seen[0]], fontsize=7, frameon=False, loc="lower left")
            self.ax_curve.legend(
                handles=[self.train_line_curve], fontsize=7, frameon=False, loc="lower right"
            )

    def _paint_past(self, view: Any) -> str:
        d_model, P, N, position = view.d_model, view.pe.shape[0], view.train_length, view.position
        table = self.ax_table.images[0]
        table.set_data(view.pe)
        table.set_extent((-0.5, d_model - 0.5, P - 0.5, -0.5))
        table.set_cmap("cividis")
        table.set_clim(-1, 1)
        self.ax_table.set_xlim(-0.5, d_model - 0.5)
        self.ax_table.set_ylim(P - 0.5, -0.5)
        self.ax_table.set_xlabel("dimension")
        self.ax_table.set_ylabel("position")
        self.ax_table.set_title(f"sinusoidal table; training length N = {N}", fontsize=9)
        self.train_line_table.set_ydata([N - 0.5, N - 0.5])
        dims = np.arange(d_model)
        self.seen[0].set_data(dims, view.high)
        self.seen[1].set_data(dims, view.low)
        self.ax_row.set_xlim(-0.5, d_model - 0.5)
        self.ax_row.set_ylim(-1.1, 1.1)
        positions = np.arange(P)
        self.curve.set_data(positions, view.outside)
        self.curve.set_marker("")
        self.ax_curve.set_xlim(-0.5, P - 0.5)
        self.ax_curve.set_ylim(-0.5, d_model + 0.5)
        self.ax_curve.set_xlabel("position")
        self.train_line_curve.set_xdata([N - 0.5, N - 0.5])
        self.train_line_curve.set_label(f"training length N = {N}")
        self._show_past(True)
        # What moves with the position.
        self.here.set_y(position - 0.5)
        self.here.set_width(d_model)
        for i, bar in enumerate(self.bars):
            bar.set_visible(i < d_model)
            bar.set_height(view.row[i] if i < d_model else 0.0)
            bar.set_color(ACCENT if i < d_model and view.outside_row[i] else BAR_COLOUR)
        self.marker.set_data([position], [view.outside[position]])
        n_out = int(view.outside[position])
        where = "inside" if position < N else "past"
        self.title_row.set_text(f"position {position} ({where} N): {n_out} outside (red)")
        self.title_curve.set_text("dimensions outside the training range")
        return caption(
            tr(
                "Sinusoidal encoding, d_model = {d_model}, trained on positions 0..{last}: position {position} "
                "has {n_out} of {total} dimensions outside the range those positions covered.",
                d_model=d_model,
                last=N - 1,
                position=position,
                n_out=n_out,
                total=d_model,
            ),
            tr(
                "Every position below N = {N} has 0; position {at} has {n_at}, and positions "
                "{first}..{last} between {low} and {high}: values a model trained on N positions never saw.",
                N=N,
                at=N,
                n_at=int(view.outside[N]),
                first=N + 1,
                last=P - 1,
                low=int(view.outside[N + 1 :].min()),
                high=int(view.outside[N + 1 :].max()),
            ),
        )

    def paint(self, shown: Any) -> str:
        if shown.encoding == PAST:
            return self._paint_past(shown.view)
        self._show_past(False)
        self.curve.set_marker("o")
        self.ax_curve.set_xlabel("offset j - position")
        self.ax_curve.set_xlim(-self.n_positions, self.n_positions)
        for bar in self.bars:
            bar.set_color(BAR_COLOUR)
        view, rope = shown.view, shown.encoding == "RoPE"
        position, d_model, P = view.position, view.d_model, view.n_positions
        # What depends on d_model and the encoding only (the background): the table, the ranges.
        table = self.ax_table.images[0]
        if rope:
            table.set_data(view.rope_scores)
            table.set_extent((-0.5, P - 0.5, P - 0.5, -0.5))
            table.set_cmap("viridis")
            table.set_clim(*self._limits(view.rope_scores))
            self.ax_table.set_xlim(-0.5, P - 0.5)
            self.ax_table.set_xlabel("key position n")
            self.ax_table.set_ylabel("query position m")
            self.ax_table.set_title(f"RoPE scores q_m · k_n / √{d_model}", fontsize=9)
            row, curve = view.rope_q, view.rope_row
        else:
            table.set_data(view.pe)
            table.set_extent((-0.5, d_model - 0.5, P - 0.5, -0.5))
            table.set_cmap("cividis")
            table.set_clim(-1, 1)
            self.ax_table.set_xlim(-0.5, d_model - 0.5)
            self.ax_table.set_xlabel("dimension")
            self.ax_table.set_ylabel("position")
            self.ax_table.set_title(f"sinusoidal table, d_model = {d_model}", fontsize=9)
            row, curve = view.row, view.pe_dots
        self.ax_table.set_ylim(P - 0.5, -0.5)
        self.ax_row.set_xlim(-0.5, d_model - 0.5)
        half = d_model // 2
        # A rotation keeps the length of each pair (i, i + d/2): the bars' range is the same at every
        # position.
        reach = float(np.hypot(view.rope_q[:half], view.rope_q[half:]).max()) * 1.1
        self.ax_row.set_ylim(*((-reach, reach) if rope else (-1.1, 1.1)))
        # The sinusoid's curve at position 0 spans every offset's value (it depends on |offset| only).
        at_zero = explore.positional_view(d_model, 0, P, self.seed).pe_dots
        self.ax_curve.set_ylim(*self._limits(view.rope_scores if rope else at_zero))
        # What moves with the position.
        self.here.set_y(position - 0.5)
        self.here.set_width(P if rope else d_model)
        for i, bar in enumerate(self.bars):
            bar.set_visible(i < d_model)
            bar.set_height(row[i] if i < d_model else 0.0)
        self.curve.set_data(view.offsets, curve)
        if rope:
            self.title_row.set_text(f"the query rotated to position {position}")
            self.title_curve.set_text(f"q at {position} · k at j, against the offset")
        else:
            self.title_row.set_text(f"encoding of position {position}")
            self.title_curve.set_text(f"PE[{position}] · PE[j]: {d_model // 2} at offset 0")
        near = np.abs(view.offsets) <= 2
        first = dict(d_model=d_model, position=position, start=", ".join(f"{x:.2f}" for x in row[:6]))
        second = dict(
            offsets=", ".join(str(o) for o in view.offsets[near]),
            values=", ".join(f"{x:.2f}" for x in curve[near]),
        )
        if rope:
            return caption(
                tr(
                    "RoPE, d_model = {d_model}, position {position}: the rotated query starts {start}, ...",
                    **first,
                ),
                tr(
                    "RoPE scores of the query with the keys at offsets {offsets}: {values} (the same curve, "
                    "shifted, at every position).",
                    **second,
                ),
            )
        return caption(
            tr(
                "sinusoidal, d_model = {d_model}, position {position}: the encoding starts {start}, ...",
                **first,
            ),
            tr(
                "Dot products of the encoding with the keys at offsets {offsets}: {values} (the same curve, "
                "shifted, at every position).",
                **second,
            ),
        )

    def alt(self, shown: Any) -> str:
        view = shown.view
        if shown.encoding == PAST:
            return tr(
                "The sinusoidal table for d_model = {d_model} over {P} positions with a dashed line at the "
                "training length N = {N} and position {position} outlined; a bar chart of that position's "
                "encoding against the range each dimension took in training, {n_out} dimensions outside it; "
                "and the count of such dimensions against the position, 0 before N and {n_at} at N.",
                d_model=view.d_model,
                P=view.pe.shape[0],
                N=view.train_length,
                position=view.position,
                n_out=int(view.outside[view.position]),
                n_at=int(view.outside[view.train_length]),
            )
        if shown.encoding == "RoPE":
            return tr(
                "RoPE with d_model = {d_model}: the matrix of scores of a query and a key rotated to every "
                "pair of positions, constant along each diagonal, with row {row} outlined; a bar chart of the "
                "query rotated to position {position}; and its scores against the offset.",
                d_model=view.d_model,
                row=view.position,
                position=view.position,
            )
        return tr(
            "Sinusoidal encoding table for d_model = {d_model} with position {position} outlined, a bar "
            "chart of that position's encoding, and the dot product of encodings against the offset (peak "
            "{peak} at offset 0).",
            d_model=view.d_model,
            position=view.position,
            peak=view.d_model // 2,
        )


def _positional_renderer(d_model_values: Sequence[int], n_positions: int, seed: int) -> Renderer:
    d_model_values = tuple(int(d) for d in d_model_values)

    def view(d_model: int, position: int, encoding: str = "sinusoidal") -> _Shown:
        if encoding == PAST:
            return _Shown(explore.extrapolation_view(d_model, position), encoding)
        return _Shown(explore.positional_view(d_model, position, n_positions, seed), encoding)

    return Renderer(view, lambda: _PositionalPainter(d_model_values, n_positions, seed))


def render_positional(
    d_model: int,
    position: int,
    n_positions: int = explore.N_POSITIONS,
    seed: int = 0,
    d_model_values: Sequence[int] = explore.D_MODEL_VALUES,
    encoding: str = "sinusoidal",
) -> Frame:
    """Draw :func:`attncourse.explore.positional_view` for ``encoding`` ``"sinusoidal"`` or ``"RoPE"``,
    :func:`attncourse.explore.extrapolation_view` for ``"past training length"``.

    ``d_model_values`` are the widths the figure is laid out for (``d_model`` must be one).
    """
    renderer = _positional_renderer(d_model_values, n_positions, seed)
    return renderer(d_model=d_model, position=position, encoding=encoding)


def positional_explorer(
    *,
    d_model: int = explore.DEFAULT_D_MODEL,
    position: int = explore.DEFAULT_POSITION,
    encoding: str = "sinusoidal",
    d_model_values: Sequence[int] = explore.D_MODEL_VALUES,
    positions: Sequence[int] = explore.POSITIONS[::2],
    past_positions: Sequence[int] = explore.EXTRAPOLATION_POSITIONS,
    n_positions: int = explore.N_POSITIONS,
    seed: int = 0,
    mode: str = "auto",
) -> Explorer:
    """Sinusoid or RoPE, ``d_model`` and position: the table, one row, and scores against the offset.

    Draws :func:`attncourse.explore.positional_view`: the dot product of two positions'
    sinusoidal encodings, and the RoPE score of a query and a key, depend on their offset only,
    so the curves move with the position but keep their shape.

    Parameters
    ----------
    d_model, position : int
        The starting values; one of ``d_model_values`` and of ``positions``.
    encoding : {"sinusoidal", "RoPE", "past training length"}
        The view shown first.  The third is the sinusoidal table past the training length of
        chapter 7's extrapolation study (``attncourse.toy_data.PE_TRAIN_LENGTH``), marked with a
        dashed line, with the dimensions of each position that leave the range seen in training.
    d_model_values : sequence of int
        The widths offered (default 16, 32, 64); each even.
    positions : sequence of int
        The positions offered (default 0, 8, 16, 24), each below ``n_positions``.
    past_positions : sequence of int
        The positions offered past the training length (default 16, 32, 64, 112).
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
    positions = tuple(int(p) for p in positions)
    past_positions = tuple(int(p) for p in past_positions)

    def position_control(values: dict) -> Control:
        if values["encoding"] == PAST:  # past the training length: positions up to 4 N
            start = position if position in past_positions else past_positions[0]
            return Control("position", tr("position"), past_positions, start)
        return Control("position", tr("position"), positions, int(position))

    return Explorer(
        "positional",
        [
            Control(
                "encoding",
                tr("encoding"),
                ENCODINGS,
                encoding,
                kind="toggle",
                labels=(tr("sinusoidal"), "RoPE", tr("past training length")),
            ),
            Control("d_model", "d_model", tuple(int(d) for d in d_model_values), int(d_model)),
            DependentControl("position", position_control),
        ],
        _positional_renderer(d_model_values, n_positions, seed),
        alt=tr(
            "Sinusoidal encodings or RoPE scores: a heatmap, one position's vector, and scores against offset."
        ),
        mode=mode,
    )
