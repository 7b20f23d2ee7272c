"""Slider explorers, one per idea, that work in live Jupyter, in Colab and in the HTML book.

Each explorer draws what a function of :mod:`attncourse.explore` computes and returns an
ipywidgets widget (a :class:`Explorer`, which is a ``VBox``):

=========================  ===========================  =======================================
explorer                   controls                     picture
=========================  ===========================  =======================================
``softmax_explorer``       temperature                  scores / T and the softmax weights
``scaling_explorer``       d_k (1 to 1024)              unscaled vs scaled weights, entropy
                                                        against d_k
``heads_explorer``         n_heads (divisors of 12)     one attention map per head
``mask_explorer``          padding length, causal       mask, masked scores, weights
``positional_explorer``    d_model, position            sinusoidal table, one row, dot product
                                                        against offset, RoPE scores
=========================  ===========================  =======================================

Two ways to show a picture, chosen by ``mode``:

``"frames"``
    Every picture for every value of every control is drawn once, up front, into an
    ``Image``; the images sit in a ``Stack`` (nested, one level per control) whose
    ``selected_index`` is ``jslink``-ed to its control.  Switching frames happens in the
    browser, so it works in the HTML book with no kernel (the notebook's saved widget state
    holds the frames) and is instant in Jupyter too.  Needs ipywidgets 8 (``Stack``).
``"live"``
    One ``Image`` redrawn by a Python callback when a control moves: for ipywidgets 7 (Colab),
    which has no ``Stack``.  ``Explorer.redraw_ms`` records how long each redraw took.
``"auto"`` (default)
    ``"frames"`` with ipywidgets 8 or later, ``"live"`` before.

Figures are made with :class:`matplotlib.figure.Figure` (never pyplot, so nothing is shown
twice in a notebook) and the helpers of :mod:`attncourse.plotting`.
"""

from __future__ import annotations

import io
import itertools
import math
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple

import ipywidgets as widgets
import numpy as np

from . import explore
from .plotting import attention_heatmap, heatmap, mask_overlay

__all__ = [
    "DPI",
    "MODES",
    "Frame",
    "Control",
    "Explorer",
    "ipywidgets_major",
    "resolve_mode",
    "render_softmax",
    "render_scaling",
    "render_heads",
    "render_mask",
    "render_positional",
    "softmax_explorer",
    "scaling_explorer",
    "heads_explorer",
    "mask_explorer",
    "positional_explorer",
]

DPI = 70  # small PNGs: every frame of every explorer is embedded in the HTML book
MODES = ("auto", "frames", "live")
_BAR_COLOUR = "#3b528b"  # a viridis blue
_ACCENT = "#d62728"  # red: the "you are here" outline, visible on both ends of cividis
_LINE_COLOURS = ("#440154", "#21918c")  # viridis purple and teal: apart in grey scale too


# --------------------------------------------------------------------------------------------
# Frames and painters
#
# A painter owns one matplotlib figure.  It builds the figure once (with the helpers of
# attncourse.plotting) and lays it out once, for a fixed reference view; the layout then stays.
# The artists that change from frame to frame are marked "animated": a full draw leaves them
# out, and that background (axes, tick labels, colour bars) is kept per background key, so a
# frame costs restoring the background, drawing the changed artists on it and encoding the PNG.
# Text is the slow part of a matplotlib draw, and most of the text never changes.  A frame's
# bytes do not depend on which frames were drawn before it.


@dataclass(frozen=True)
class Frame:
    """One picture an explorer can show: PNG bytes and a caption (HTML) with its numbers."""

    png: bytes
    caption: str


def _caption(*parts: str) -> str:
    return '<div class="attncourse-caption">' + "<br>".join(parts) + "</div>"


class _Painter:
    """One figure, built and laid out once, repainted for each frame."""

    size: Tuple[float, float] = (9.8, 3.0)
    constrained = True

    def __init__(self) -> None:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure

        # A bare Figure is not registered with pyplot, so the inline backend never shows it.
        self.fig = Figure(figsize=self.size, dpi=DPI, layout="constrained" if self.constrained else None)
        FigureCanvasAgg(self.fig)
        self.dynamic: list = []  # drawn on every frame, in this order (so keep it in z-order)
        self.cell_labels: List[_CellLabels] = []  # written last, over everything
        self._backgrounds: Dict[Any, Any] = {}

    def _animate(self, *artists: Any) -> None:
        for artist in artists:
            artist.set_animated(True)
            self.dynamic.append(artist)

    def _freeze(self, reference: dict) -> None:
        """Paint ``reference``, lay the figure out for it, and keep that layout from now on."""
        self.paint(reference)
        self.fig.canvas.draw()
        self.fig.canvas.draw()  # constrained layout settles in a second pass (rotated tick labels)
        if self.constrained:
            if hasattr(self.fig, "set_layout_engine"):  # matplotlib >= 3.6
                self.fig.set_layout_engine("none")
            else:
                self.fig.set_constrained_layout(False)

    def background_key(self, view: dict) -> Any:
        """What the non-animated artists depend on (the background is redrawn when it changes)."""
        return ()

    def paint(self, view: dict) -> str:  # pragma: no cover - every painter overrides it
        """Update the artists for ``view``; return the caption."""
        raise NotImplementedError

    def frame(self, view: dict) -> Frame:
        from PIL import Image

        caption = self.paint(view)
        canvas = self.fig.canvas
        key = self.background_key(view)
        if key in self._backgrounds:
            canvas.restore_region(self._backgrounds[key])
        else:
            canvas.draw()  # everything but the animated artists
            self._backgrounds[key] = canvas.copy_from_bbox(self.fig.bbox)
        for artist in self.dynamic:
            if artist.get_visible():
                self.fig.draw_artist(artist)
        image = Image.frombuffer("RGBA", canvas.get_width_height(), canvas.buffer_rgba()).convert("RGB")
        for labels in self.cell_labels:
            labels.draw(image)
        buffer = io.BytesIO()
        image.save(buffer, format="png")
        return Frame(buffer.getvalue(), caption)


_FONTS: Dict[int, Any] = {}


def _font(pixels: int):
    """matplotlib's own DejaVu Sans, as a PIL font of ``pixels`` pixels."""
    if pixels not in _FONTS:
        from matplotlib import font_manager
        from PIL import ImageFont

        _FONTS[pixels] = ImageFont.truetype(
            font_manager.findfont(font_manager.FontProperties(family="DejaVu Sans")), pixels
        )
    return _FONTS[pixels]


class _CellLabels:
    """Numbers written into the cells of a heatmap after the draw.

    The same picture as ``heatmap(..., annotate=True)``, but written with PIL: a heatmap has
    up to 36 labels that change on every frame, and matplotlib's text is the slow part of a draw.
    """

    def __init__(self, ax, fontsize: float = 8) -> None:
        self.ax = ax
        self.font = _font(round(fontsize * DPI / 72))
        self.items: list = []

    def set(
        self,
        values: np.ndarray,
        fmt: str,
        lo: float,
        hi: float,
        show: Optional[np.ndarray] = None,
        blocked: Optional[np.ndarray] = None,
        blocked_text: str = "",
    ) -> None:
        """Label cell (i, j) with ``fmt.format(values[i, j])`` where ``show``, ``blocked_text`` where ``blocked``."""
        from matplotlib.colors import to_rgb

        dark, light, grey = (
            tuple(round(255 * c) for c in to_rgb(name)) for name in ("black", "white", "0.25")
        )
        self.items = []
        for (i, j), value in np.ndenumerate(values):
            if blocked is not None and blocked[i, j]:
                self.items.append((i, j, blocked_text, grey))
            elif show is None or show[i, j]:
                bright = hi > lo and (value - lo) / (hi - lo) > 0.6  # as plotting.heatmap colours its labels
                self.items.append((i, j, fmt.format(value), dark if bright else light))

    def draw(self, image) -> None:
        from PIL import ImageDraw

        if not self.ax.get_visible():
            return
        draw, height = ImageDraw.Draw(image), image.height
        for i, j, text, colour in self.items:
            x, y = self.ax.transData.transform((j, i))  # display pixels, origin at the bottom left
            draw.text((x, height - y), text, fill=colour, font=self.font, anchor="mm")


_HATCH_CELL = 12  # sub-pixels per cell side in the hatching image


def _hatch_tile() -> np.ndarray:
    """One blocked cell as ``mask_overlay`` draws it: light grey, "//" hatching, a grey edge."""
    k = _HATCH_CELL
    tile = np.ones((k, k, 4))
    tile[..., :3] = 0.85
    rows, cols = np.indices((k, k))
    lines = (rows + cols) % (k // 2) == k // 2 - 1  # rising diagonals, two per cell
    lines[0, :] = lines[:, 0] = True  # the cell's top and left edges (its neighbours draw the others)
    tile[lines, :3] = 0.5
    return tile


class _Hatching:
    """Hatched blocked cells over a heatmap, as one image: far cheaper than one patch per cell."""

    def __init__(self, ax, shape: Tuple[int, int]) -> None:
        rows, cols = shape
        self.tiles = np.tile(_hatch_tile(), (rows, cols, 1))  # (rows*k, cols*k, RGBA)
        self.image = ax.imshow(
            np.zeros_like(self.tiles),
            extent=(-0.5, cols - 0.5, rows - 0.5, -0.5),
            interpolation="nearest",
            zorder=4,
        )

    def show(self, blocked: np.ndarray) -> None:
        k = _HATCH_CELL
        rgba = self.tiles.copy()
        rgba[..., 3] = np.kron(blocked.astype(float), np.ones((k, k)))  # opaque where blocked
        self.image.set_data(rgba)


class _SoftmaxPainter(_Painter):
    size = (7.6, 2.5)

    def __init__(self, logits: Tuple[float, ...], labels: Tuple[str, ...]) -> None:
        super().__init__()
        n = len(logits)
        self.labels = list(labels) if len(labels) == n else [str(i) for i in range(n)]
        self.ax_scores, ax_weights = self.fig.subplots(1, 2)
        positions = np.arange(n)
        self.bars_scores = self.ax_scores.bar(positions, np.ones(n), color=_BAR_COLOUR)
        self.ax_scores.axhline(0, color="0.3", lw=0.8)
        self.ax_scores.set_xticks(positions, labels=self.labels)
        self.bars_weights = ax_weights.bar(positions, np.ones(n) / n, color=_BAR_COLOUR)
        ax_weights.axhline(1 / n, color="0.4", lw=1, ls="--", label="uniform")
        self.values = [ax_weights.text(i, 0, "", ha="center", va="bottom", fontsize=8) for i in range(n)]
        ax_weights.set_ylim(0, 1.12)
        ax_weights.set_xticks(positions, labels=self.labels)
        ax_weights.legend(loc="upper right", fontsize=8, frameon=False)
        self.title_scores = self.ax_scores.set_title(" ")
        self.title_weights = ax_weights.set_title(" ")
        self._freeze(explore.softmax_view(explore.DEFAULT_TEMPERATURE, logits))

    def background_key(self, view: dict) -> Any:
        return view["temperature"]  # the score axis rescales with T: everything is redrawn

    def paint(self, view: dict) -> str:
        scaled = view["scaled_logits"]
        for bar, height in zip(self.bars_scores, scaled):
            bar.set_height(height)
        lo, hi = min(0.0, float(scaled.min())), max(0.0, float(scaled.max()))
        margin = 0.12 * (hi - lo)
        self.ax_scores.set_ylim(lo - (margin if lo < 0 else 0.0), hi + margin)
        for bar, text, w in zip(self.bars_weights, self.values, view["weights"]):
            bar.set_height(w)
            text.set_position((bar.get_x() + bar.get_width() / 2, w + 0.02))
            text.set_text(f"{w:.2f}")
        self.title_scores.set_text(f"scores / T   (T = {view['temperature']:g})")
        self.title_weights.set_text(
            f"softmax: entropy {view['entropy']:.2f} of {view['max_entropy']:.2f} nats"
        )
        return _caption(
            f"T = {view['temperature']:g}: weights "
            + ", ".join(f"{label} {w:.3f}" for label, w in zip(self.labels, view["weights"])),
            f"entropy {view['entropy']:.3f} nats (uniform: {view['max_entropy']:.3f}); "
            f"top weight {view['max_weight']:.3f}",
        )


class _ScalingPainter(_Painter):
    size = (9.8, 2.9)

    def __init__(self, seed: int, d_k_values: Tuple[int, ...]) -> None:
        super().__init__()
        reference = explore.scaling_view(explore.DEFAULT_D_K, seed)
        L, S = reference["weights_scaled"].shape
        queries, keys = [f"q{i + 1}" for i in range(L)], [f"k{j + 1}" for j in range(S)]
        ax_raw, ax_scaled, ax_curve = self.fig.subplots(1, 3, gridspec_kw={"width_ratios": [1, 1.2, 0.9]})
        self.images, self.titles = {}, {}
        for ax, name in ((ax_raw, "unscaled"), (ax_scaled, "scaled")):
            attention_heatmap(
                reference[f"weights_{name}"],
                queries,
                keys,
                ax=ax,
                annotate=False,
                colorbar=name == "scaled",
                xlabel=None,
                ylabel=None,
            )
            ax.tick_params(labelsize=8)
            self.images[name] = ax.images[0]
            self.titles[name] = ax.set_title(" ", fontsize=9)
            self._animate(ax.images[0], *ax.spines.values(), self.titles[name])
        views = [explore.scaling_view(d, seed) for d in d_k_values]
        self.markers = {}
        for name, colour in zip(("unscaled", "scaled"), _LINE_COLOURS):
            ax_curve.plot(
                d_k_values, [v[f"entropy_{name}"] for v in views], "o-", ms=3, color=colour, label=name
            )
            (self.markers[name],) = ax_curve.plot([1], [0], "o", ms=9, mfc="none", mec=colour, mew=2)
        ax_curve.axhline(reference["max_entropy"], color="0.5", lw=0.8, ls="--")
        self.here = ax_curve.axvline(1, color="0.5", lw=0.8)
        ax_curve.set_xscale("log", base=2)
        ax_curve.set_ylim(0, reference["max_entropy"] * 1.08)
        ax_curve.set_xlabel("d_k")
        ax_curve.set_title("mean entropy (nats)", fontsize=10)
        ax_curve.legend(fontsize=8, frameon=False, loc="lower left")
        self.suptitle = self.fig.suptitle(" ", fontsize=11)
        self._animate(self.here, *self.markers.values(), self.suptitle)
        self._freeze(reference)

    def paint(self, view: dict) -> str:
        formulas = {"unscaled": "q·k", "scaled": "q·k / √d_k"}
        for name in ("unscaled", "scaled"):
            self.images[name].set_data(view[f"weights_{name}"])
            self.titles[name].set_text(
                f"{name}: softmax({formulas[name]})\nmax {view[f'max_weight_{name}']:.2f} · "
                f"entropy {view[f'entropy_{name}']:.2f} · grad {view[f'grad_norm_{name}']:.2f}"
            )
            self.markers[name].set_data([view["d_k"]], [view[f"entropy_{name}"]])
        self.here.set_xdata([view["d_k"], view["d_k"]])
        self.suptitle.set_text(
            f"d_k = {view['d_k']}: score spread {view['score_std_unscaled']:.1f} unscaled, "
            f"{view['score_std_scaled']:.2f} scaled"
        )
        S = view["weights_scaled"].shape[-1]
        return _caption(
            f"d_k = {view['d_k']}; means over {view['n_queries_averaged']} random queries against {S} keys "
            "(the maps show 6 of the queries).",
            *(
                f"{name}: score std {view[f'score_std_{name}']:.3g}, max weight {view[f'max_weight_{name}']:.3f}, "
                f"entropy {view[f'entropy_{name}']:.3f} nats (uniform {view['max_entropy']:.3f}), "
                f"softmax gradient norm {view[f'grad_norm_{name}']:.3f}"
                for name in ("unscaled", "scaled")
            ),
        )


class _HeadsPainter(_Painter):
    """Up to ``d_model`` small maps, placed by hand for each ``n_heads`` (no layout engine).

    The maps are labelled with their weights only when there is a single head; with many
    heads the tokens label the first column and (for up to three columns) the bottom row.
    """

    size = (9.8, 3.3)
    constrained = False
    _LEFT, _RIGHT, _TOP, _BOTTOM, _HGAP, _VGAP, _CBAR = 0.55, 0.85, 0.62, 0.55, 0.12, 0.32, 0.12  # inches

    def __init__(self, d_model: int, tokens: Tuple[str, ...], seed: int) -> None:
        from matplotlib.cm import ScalarMappable
        from matplotlib.colors import Normalize

        super().__init__()
        reference = explore.heads_view(d_model, d_model, tokens, seed)  # one map per possible head
        self.axes, self.cells, self.titles = [], [], []
        for h in range(d_model):
            ax = self.fig.add_axes([0, 0, 0.1, 0.1], visible=False)
            attention_heatmap(
                reference["weights"][h],
                tokens,
                tokens,
                ax=ax,
                colorbar=False,
                annotate=False,
                xlabel=None,
                ylabel=None,
            )
            self.axes.append(ax)
            self.cells.append(_CellLabels(ax))
            self.cell_labels.append(self.cells[-1])
            self.titles.append(ax.set_title(" ", fontsize=9, pad=3))
        self.cax = self.fig.add_axes([0, 0, 0.1, 0.1])
        self.fig.colorbar(ScalarMappable(Normalize(0, 1), "viridis"), cax=self.cax)
        self.cax.tick_params(labelsize=8)
        self.suptitle = self.fig.suptitle(" ", fontsize=11, y=1 - 0.12 / self.size[1], va="top")

    def background_key(self, view: dict) -> Any:
        return view["n_heads"]  # the grid is laid out anew for each head count; nothing else changes

    def paint(self, view: dict) -> str:
        n_heads, tokens, L = view["n_heads"], list(view["tokens"]), len(view["tokens"])
        width, height = self.size
        n_cols = min(n_heads, max(6, math.ceil(math.sqrt(2.5 * n_heads))))
        n_rows = math.ceil(n_heads / n_cols)
        avail_w = width - self._LEFT - self._RIGHT
        avail_h = height - self._TOP - self._BOTTOM
        side = min(
            (avail_w - (n_cols - 1) * self._HGAP) / n_cols, (avail_h - (n_rows - 1) * self._VGAP) / n_rows
        )
        x0 = self._LEFT + (avail_w - (n_cols * side + (n_cols - 1) * self._HGAP)) / 2
        y_top = height - self._TOP - (avail_h - (n_rows * side + (n_rows - 1) * self._VGAP)) / 2  # centred
        for h, ax in enumerate(self.axes):
            ax.set_visible(h < n_heads)
            if h >= n_heads:
                continue
            row, col = divmod(h, n_cols)
            left = x0 + col * (side + self._HGAP)
            bottom = y_top - (row + 1) * side - row * self._VGAP
            ax.set_position([left / width, bottom / height, side / width, side / height])
            ax.images[0].set_data(view["weights"][h])
            self.cells[h].set(view["weights"][h], "{:.2f}", 0.0, 1.0, show=np.full((L, L), n_heads == 1))
            self.titles[h].set_text(f"head {h + 1}")
            ax.set_yticks(range(L), labels=tokens) if col == 0 else ax.set_yticks([])
            if row == n_rows - 1 and (col == 0 or n_cols <= 3):
                ax.set_xticks(range(L), labels=tokens, rotation=90 if n_cols > 3 else 0, ha="center")
            else:
                ax.set_xticks([])
            ax.tick_params(labelsize=7 if n_cols > 3 else 8, length=2)
        grid_right = x0 + n_cols * side + (n_cols - 1) * self._HGAP
        grid_height = n_rows * side + (n_rows - 1) * self._VGAP
        self.cax.set_position(
            [
                (grid_right + 0.15) / width,
                (y_top - grid_height) / height,
                self._CBAR / width,
                grid_height / height,
            ]
        )
        self.suptitle.set_text(
            f"n_heads = {n_heads}: d_head = {view['d_head']}, scores scaled by 1/√{view['d_head']}; "
            f"parameters {view['n_params']} for any n_heads"
        )
        return _caption(
            f"n_heads = {n_heads}, d_model = {view['d_model']}, d_head = {view['d_head']}; "
            f"each head's slice of W_Q, W_K, W_V: {view['n_params_per_head']} weights; "
            f"all parameters (W_Q, W_K, W_V, W_O and biases): {view['n_params']}.",
            "Rows are queries, columns keys, over the sentence: " + " ".join(tokens) + ".",
        )


class _MaskPainter(_Painter):
    size = (9.8, 3.3)

    def __init__(self, tokens: Tuple[str, ...], seed: int) -> None:
        super().__init__()
        reference = explore.mask_view(0, False, tokens, seed)  # nothing blocked: every cell labelled
        labels, mask, L = list(reference["tokens"]), reference["mask"], len(tokens)
        self.axes = self.fig.subplots(1, 3)
        ax_mask, ax_scores, ax_weights = self.axes
        mask_overlay(mask, None, labels, labels, ax=ax_mask, title="mask (hatched = blocked)")
        scores = reference["scores"]  # the same at every setting: masking comes after the scores
        self.lo, self.hi = float(scores.min()), float(scores.max())
        heatmap(
            scores,
            labels,
            labels,
            ax=ax_scores,
            cmap="cividis",
            colorbar=False,
            annotate=False,
            fmt="{:.1f}",
            vmin=self.lo,
            vmax=self.hi,
            title="masked scores",
        )
        mask_overlay(
            mask, reference["weights"], labels, labels, ax=ax_weights, title="weights (rows sum to 1)"
        )
        scores_image = ax_scores.images[0]
        scores_image.set_cmap(scores_image.get_cmap().with_extremes(bad="white"))  # -inf cells: blank
        for text in list(ax_weights.texts):  # mask_overlay labelled the weights; relabelled per frame
            text.remove()
        self.score_cells, self.weight_cells = _CellLabels(ax_scores), _CellLabels(ax_weights)
        self.cell_labels += [self.score_cells, self.weight_cells]
        self.hatches = [_Hatching(ax_mask, (L, L)), _Hatching(ax_weights, (L, L))]
        for ax in self.axes:
            ax.set_aspect("equal")
            ax.tick_params(labelsize=8)
            ax.set_xlabel("key")
        ax_scores.set_ylabel(None)
        ax_weights.set_ylabel(None)
        self.suptitle = self.fig.suptitle(" ", fontsize=11)
        # Drawn in this order on the background: pictures, hatching, frames, title (labels last).
        self._animate(
            *(ax.images[0] for ax in self.axes),
            *(hatching.image for hatching in self.hatches),
            *(spine for ax in self.axes for spine in ax.spines.values()),
            self.suptitle,
        )
        self._freeze(explore.mask_view(L, True, tokens, seed))  # laid out for the longest labels, <pad>

    def background_key(self, view: dict) -> Any:
        return view["tokens"]  # the tick labels show which tokens are padding

    def paint(self, view: dict) -> str:
        labels, mask = list(view["tokens"]), view["mask"]
        blocked = ~mask
        ax_mask, ax_scores, ax_weights = self.axes
        for ax in self.axes:
            ax.set_xticks(range(len(labels)), labels=labels, rotation=45, ha="right", rotation_mode="anchor")
            ax.set_yticks(range(len(labels)), labels=labels)
        ax_mask.images[0].set_data(mask.astype(float))
        ax_scores.images[0].set_data(np.where(mask, view["scores"], np.nan))  # blocked cells left blank
        self.score_cells.set(view["scores"], "{:.1f}", self.lo, self.hi, blocked=blocked, blocked_text="−∞")
        ax_weights.images[0].set_data(view["weights"])
        self.weight_cells.set(view["weights"], "{:.2f}", 0.0, 1.0, show=mask)  # blocked cells are hatched
        for hatching in self.hatches:
            hatching.show(blocked)
        empty = view["empty_rows"]
        kind = "padding + causal" if view["causal"] else "padding only"
        self.suptitle.set_text(
            f"{view['pad_length']} padded of {len(labels)}, {kind}"
            + (f": {len(empty)} rows with nothing to attend to are all 0" if empty else "")
        )
        return _caption(
            f"Padding length {view['pad_length']}, causal {'on' if view['causal'] else 'off'}: "
            f"{int(mask.sum())} of {mask.size} query-key pairs may attend.",
            "Row sums of the weights: "
            + ", ".join(f"{s:.2f}" for s in view["row_sums"])
            + (f" (rows {', '.join(str(i + 1) for i in empty)} have no key to attend to)" if empty else ""),
        )


class _PositionalPainter(_Painter):
    size = (9.8, 5.0)

    def __init__(self, d_model_values: Tuple[int, ...], n_positions: int, seed: int) -> None:
        from matplotlib.patches import Rectangle

        super().__init__()
        self.n_positions, self.seed = n_positions, seed
        d_max = max(d_model_values)
        reference = explore.positional_view(d_max, 0, n_positions, seed)
        (self.ax_table, self.ax_row), (self.ax_dots, self.ax_rope) = self.fig.subplots(2, 2)
        heatmap(
            reference["pe"],
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
            Rectangle((-0.5, -0.5), d_max, 1, fill=False, edgecolor=_ACCENT, lw=2)
        )
        self.bars = self.ax_row.bar(np.arange(d_max), reference["row"], color=_BAR_COLOUR, width=0.8)
        self.ax_row.set_ylim(-1.1, 1.1)
        self.ax_row.axhline(0, color="0.3", lw=0.8)
        self.ax_row.set_xlabel("dimension")
        self.title_row = self.ax_row.set_title(" ")
        (self.dots,) = self.ax_dots.plot([0], [0], "o-", ms=3, color=_LINE_COLOURS[0])
        (self.rope,) = self.ax_rope.plot([0], [0], "o-", ms=3, color=_LINE_COLOURS[1])
        self.titles = []
        for ax in (self.ax_dots, self.ax_rope):
            ax.axvline(0, color="0.5", lw=0.8)
            ax.axhline(0, color="0.8", lw=0.8, zorder=0)
            ax.set_xlim(-n_positions, n_positions)
            ax.set_xlabel("offset j - position")
            self.titles.append(ax.set_title(" "))
        self._animate(self.here, *self.bars, self.title_row, self.dots, self.rope, *self.titles)
        self._freeze(reference)

    def background_key(self, view: dict) -> Any:
        return view["d_model"]  # the table, the axes' ranges and their ticks

    @staticmethod
    def _limits(values: np.ndarray) -> Tuple[float, float]:
        spread = float(values.max() - values.min()) or 1.0
        return float(values.min()) - 0.08 * spread, float(values.max()) + 0.08 * spread

    def paint(self, view: dict) -> str:
        position, d_model, P = view["position"], view["d_model"], view["n_positions"]
        # What depends on d_model only (the background): the table, the ranges of the curves.
        table = self.ax_table.images[0]
        table.set_data(view["pe"])
        table.set_extent((-0.5, d_model - 0.5, P - 0.5, -0.5))
        self.ax_table.set_xlim(-0.5, d_model - 0.5)
        self.ax_table.set_title(f"sinusoidal table, d_model = {d_model}")
        self.ax_row.set_xlim(-0.5, d_model - 0.5)
        self.ax_dots.set_ylim(
            *self._limits(
                view["pe_dots"]
                if position == 0
                else explore.positional_view(d_model, 0, P, self.seed)["pe_dots"]
            )
        )
        self.ax_rope.set_ylim(*self._limits(view["rope_scores"]))  # every position's scores
        # What moves with the position.
        self.here.set_y(position - 0.5)
        self.here.set_width(d_model)
        for i, bar in enumerate(self.bars):
            bar.set_visible(i < d_model)
            bar.set_height(view["row"][i] if i < d_model else 0.0)
        self.title_row.set_text(f"encoding of position {position}")
        self.dots.set_data(view["offsets"], view["pe_dots"])
        self.rope.set_data(view["offsets"], view["rope_row"])
        self.titles[0].set_text(f"PE[{position}] · PE[j]   (d_model/2 = {d_model // 2} at offset 0)")
        self.titles[1].set_text(f"RoPE: query at {position} · key at j, / √d_model")
        near = np.abs(view["offsets"]) <= 2
        return _caption(
            f"d_model = {d_model}, position {position}: the encoding starts "
            + ", ".join(f"{x:.2f}" for x in view["row"][:6])
            + ", ...",
            "Dot products with the encodings at offsets "
            + ", ".join(str(o) for o in view["offsets"][near])
            + ": "
            + ", ".join(f"{x:.2f}" for x in view["pe_dots"][near])
            + " (the same curve, shifted, at every position).",
        )


class _Renderer:
    """``renderer(**controls) -> Frame``: the pure function's view, drawn by one painter.

    The painter (and its figure) is built on the first call and reused by every later one.
    """

    def __init__(self, view: Callable[..., dict], painter: Callable[[], _Painter]) -> None:
        self.view, self.make_painter = view, painter
        self._built: Optional[_Painter] = None

    @property
    def painter(self) -> _Painter:
        if self._built is None:
            self._built = self.make_painter()
        return self._built

    def __call__(self, **controls: Any) -> Frame:
        return self.painter.frame(self.view(**controls))

    def warm(self, settings: Iterable[dict]) -> None:
        """Draw every background these settings need, so that each later frame only repaints."""
        painter = self.painter
        for controls in settings:
            view = self.view(**controls)
            if painter.background_key(view) not in painter._backgrounds:
                painter.frame(view)


def _softmax_renderer(logits: Sequence[float], labels: Sequence[str]) -> _Renderer:
    logits, labels = tuple(float(x) for x in logits), tuple(labels)
    return _Renderer(
        lambda temperature: explore.softmax_view(temperature, logits),
        lambda: _SoftmaxPainter(logits, labels),
    )


def _scaling_renderer(seed: int, d_k_values: Sequence[int]) -> _Renderer:
    d_k_values = tuple(int(d) for d in d_k_values)
    return _Renderer(lambda d_k: explore.scaling_view(d_k, seed), lambda: _ScalingPainter(seed, d_k_values))


def _heads_renderer(d_model: int, tokens: Sequence[str], seed: int) -> _Renderer:
    tokens = tuple(tokens)
    return _Renderer(
        lambda n_heads: explore.heads_view(n_heads, d_model, tokens, seed),
        lambda: _HeadsPainter(d_model, tokens, seed),
    )


def _mask_renderer(tokens: Sequence[str], seed: int) -> _Renderer:
    tokens = tuple(tokens)
    return _Renderer(
        lambda pad_length, causal: explore.mask_view(pad_length, causal, tokens, seed),
        lambda: _MaskPainter(tokens, seed),
    )


def _positional_renderer(d_model_values: Sequence[int], n_positions: int, seed: int) -> _Renderer:
    d_model_values = tuple(int(d) for d in d_model_values)
    return _Renderer(
        lambda d_model, position: explore.positional_view(d_model, position, n_positions, seed),
        lambda: _PositionalPainter(d_model_values, n_positions, seed),
    )


def render_softmax(
    temperature: float, logits: Sequence[float] = explore.LOGITS, labels: Sequence[str] = explore.LOGIT_LABELS
) -> Frame:
    """Draw :func:`attncourse.explore.softmax_view`: bars of ``logits / T`` and of the weights."""
    return _softmax_renderer(logits, labels)(temperature=temperature)


def render_scaling(d_k: int, seed: int = 0, d_k_values: Sequence[int] = explore.D_K_VALUES) -> Frame:
    """Draw :func:`attncourse.explore.scaling_view`: weights without and with ``1/sqrt(d_k)``.

    The third panel is the mean entropy against ``d_k`` over ``d_k_values``, with ``d_k`` marked.
    """
    return _scaling_renderer(seed, d_k_values)(d_k=d_k)


def render_heads(
    n_heads: int,
    d_model: int = explore.DEFAULT_D_MODEL_HEADS,
    tokens: Sequence[str] = explore.TOKENS,
    seed: int = 0,
) -> Frame:
    """Draw :func:`attncourse.explore.heads_view`: one attention map per head."""
    return _heads_renderer(d_model, tokens, seed)(n_heads=n_heads)


def render_mask(
    pad_length: int, causal: bool, tokens: Sequence[str] = explore.TOKENS, seed: int = 0
) -> Frame:
    """Draw :func:`attncourse.explore.mask_view`: the mask, the masked scores, the weights."""
    return _mask_renderer(tokens, seed)(pad_length=pad_length, causal=causal)


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


# --------------------------------------------------------------------------------------------
# The explorer: controls plus either precomputed frames or a live image


def ipywidgets_major() -> int:
    """The installed ipywidgets' major version (7 in older Colab, 8 in current Jupyter)."""
    return int(widgets.__version__.split(".")[0])


def resolve_mode(mode: str = "auto") -> str:
    """``"frames"`` or ``"live"``: what ``mode`` means with the installed ipywidgets."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}; got {mode!r}.")
    if mode == "auto":
        return "frames" if ipywidgets_major() >= 8 else "live"
    if mode == "frames" and not hasattr(widgets, "Stack"):
        raise ValueError(
            f"mode='frames' needs ipywidgets 8 or later (for Stack); this is ipywidgets {widgets.__version__}. "
            "Use mode='live'."
        )
    return mode


@dataclass(frozen=True)
class Control:
    """One control of an explorer: the keyword it sets, its label, the values it offers.

    ``kind`` is ``"int"`` (an ``IntSlider``; values must be ``0, 1, ..., n - 1``),
    ``"select"`` (a ``SelectionSlider``) or ``"toggle"`` (``ToggleButtons``).  ``labels`` are
    the option labels shown (default: the values).
    """

    name: str
    label: str
    values: Tuple[Any, ...]
    default: Any
    kind: str = "select"
    labels: Optional[Tuple[str, ...]] = None

    def __post_init__(self) -> None:
        if self.default not in self.values:
            raise ValueError(f"{self.name}: default {self.default!r} is not one of {self.values}.")
        if self.kind == "int" and tuple(self.values) != tuple(range(len(self.values))):
            raise ValueError(f"{self.name}: an 'int' control's values must be 0..n-1; got {self.values}.")
        if self.kind not in ("int", "select", "toggle"):
            raise ValueError(f"{self.name}: kind must be 'int', 'select' or 'toggle'; got {self.kind!r}.")

    @property
    def default_index(self) -> int:
        return list(self.values).index(self.default)

    @property
    def linked_trait(self) -> str:
        """The trait whose number is the frame index: ``value`` for an IntSlider, else ``index``."""
        return "value" if self.kind == "int" else "index"

    def make_widget(self) -> widgets.Widget:
        common = {"description": self.label, "style": {"description_width": "initial"}}
        if self.kind == "int":
            widget = widgets.IntSlider(
                value=self.default,
                min=0,
                max=len(self.values) - 1,
                step=1,
                continuous_update=True,
                layout=widgets.Layout(width="380px"),
                **common,
            )
        else:
            labels = self.labels or tuple(f"{v:g}" if isinstance(v, float) else str(v) for v in self.values)
            options = list(zip(labels, self.values))
            if self.kind == "select":
                widget = widgets.SelectionSlider(
                    options=options,
                    value=self.default,
                    continuous_update=True,
                    layout=widgets.Layout(width="380px"),
                    **common,
                )
            else:
                widget = widgets.ToggleButtons(
                    options=options,
                    value=self.default,
                    description=self.label,
                    style={"description_width": "initial", "button_width": "64px"},
                )
        widget.add_class(f"attncourse-control-{self.name}")
        return widget


def _frame_widget(frame: Frame) -> widgets.Widget:
    # No tooltip on the Image: ipywidgets 8's ImageView fails to render one (it reads the
    # description an Image does not have).  The caption under it carries the numbers as text.
    return widgets.VBox([widgets.Image(value=frame.png, format="png"), widgets.HTML(frame.caption)])


class Explorer(widgets.VBox):
    """Controls above a picture; ``mode`` ``"frames"`` (precomputed) or ``"live"`` (redrawn).

    Parameters
    ----------
    name : str
        Short name, also a CSS class (``attncourse-<name>``) on the box.
    controls : sequence of Control
        One or more controls; in frames mode each adds one level of nested ``Stack``.
    render : callable
        ``render(**{control.name: value, ...}) -> Frame``.  If it has a ``warm(settings)``
        method, live mode calls it with every setting first (the explorers' renderers draw the
        figures' static backgrounds then, so that a redraw only repaints what changes).
    alt : str
        A one-line description of the picture, for the notebook's alt text (``Explorer.alt``).
    mode : {"auto", "frames", "live"}

    Attributes
    ----------
    controls : dict of str to widget
    mode : str
        ``"frames"`` or ``"live"``.
    frames : dict of tuple to Frame
        Frames mode: every frame, keyed by the controls' values in order.
    links : list
        Frames mode: the ``jslink`` objects, control trait -> ``Stack.selected_index``.
    redraw_ms : list of float
        Live mode: how long each redraw took (render, encode, hand to the widget), in ms.
    """

    def __init__(
        self,
        name: str,
        controls: Sequence[Control],
        render: Callable[..., Frame],
        *,
        alt: str = "",
        mode: str = "auto",
    ) -> None:
        super().__init__()
        self.name = name
        self.mode = resolve_mode(mode)
        self.specs: Tuple[Control, ...] = tuple(controls)
        if not self.specs:
            raise ValueError("an explorer needs at least one control")
        self.render = render
        self.alt = alt
        self.controls: Dict[str, widgets.Widget] = {c.name: c.make_widget() for c in self.specs}
        self.frames: Dict[Tuple[Any, ...], Frame] = {}
        self.links: List[Any] = []
        self.redraw_ms: List[float] = []
        self.stack: Optional[widgets.Widget] = None
        self.image: Optional[widgets.Image] = None
        self.caption: Optional[widgets.HTML] = None
        display = self._build_frames(self.specs, ()) if self.mode == "frames" else self._build_live()
        if self.mode == "frames":
            self.stack = display
        self.children = [widgets.VBox(list(self.controls.values())), display]
        self.add_class("attncourse-explorer")
        self.add_class(f"attncourse-{name}")

    def __repr__(self) -> str:  # short and deterministic, for the notebook's text/plain output
        names = ", ".join(c.name for c in self.specs)
        return f"<{self.name} explorer: {names}>"

    def values(self) -> Dict[str, Any]:
        """The controls' current values, by name."""
        return {name: widget.value for name, widget in self.controls.items()}

    # -- frames: nested Stacks, one level per control ----------------------------------------

    def _build_frames(self, specs: Tuple[Control, ...], fixed: Tuple[Any, ...]) -> widgets.Widget:
        spec, rest = specs[0], specs[1:]
        children = []
        for value in spec.values:
            key = fixed + (value,)
            if rest:
                children.append(self._build_frames(rest, key))
            else:
                frame = self.frames[key] = self.render(**dict(zip((c.name for c in self.specs), key)))
                children.append(_frame_widget(frame))
        stack = widgets.Stack(children=children, selected_index=spec.default_index)
        stack.add_class("attncourse-frames")
        # Runs in the browser, so the HTML book switches frames without a kernel.
        self.links.append(
            widgets.jslink((self.controls[spec.name], spec.linked_trait), (stack, "selected_index"))
        )
        return stack

    # -- live: one image, redrawn from Python -----------------------------------------------

    def _build_live(self) -> widgets.Widget:
        warm = getattr(self.render, "warm", None)
        if warm is not None:  # backgrounds first: then no redraw has to lay out or draw tick labels
            names = [c.name for c in self.specs]
            warm(dict(zip(names, combo)) for combo in itertools.product(*(c.values for c in self.specs)))
        frame = self.render(**self.values())
        self.image = widgets.Image(value=frame.png, format="png")
        self.caption = widgets.HTML(frame.caption)
        for widget in self.controls.values():
            widget.observe(self._redraw, names="value")
        box = widgets.VBox([self.image, self.caption])
        box.add_class("attncourse-live")
        return box

    def _redraw(self, change: Optional[dict] = None) -> None:
        start = time.perf_counter()
        frame = self.render(**self.values())
        self.image.value = frame.png
        self.caption.value = frame.caption
        self.redraw_ms.append((time.perf_counter() - start) * 1000.0)

    # -- what is on screen -----------------------------------------------------------------

    def shown(self) -> Frame:
        """The frame on screen now: the live image, or the Stack's selected frame.

        In frames mode the Stacks follow the controls through ``jslink``, i.e. in the browser;
        without a front end (in tests), copy each link's source trait to its target first.
        """
        if self.mode == "live":
            return Frame(self.image.value, self.caption.value)
        node = self.stack
        while isinstance(node, widgets.Stack):
            node = node.children[node.selected_index]
        image, caption = node.children
        return Frame(image.value, caption.value)

    def frame_bytes(self) -> int:
        """Total PNG bytes of the precomputed frames (0 in live mode)."""
        return sum(len(f.png) for f in self.frames.values())


# --------------------------------------------------------------------------------------------
# The five explorers


def softmax_explorer(
    *,
    temperature: float = explore.DEFAULT_TEMPERATURE,
    temperatures: Sequence[float] = explore.TEMPERATURES,
    logits: Sequence[float] = explore.LOGITS,
    labels: Sequence[str] = explore.LOGIT_LABELS,
    mode: str = "auto",
) -> Explorer:
    """A temperature slider over ``softmax(logits / T)``: the weights and their entropy.

    Draws :func:`attncourse.explore.softmax_view`.  Low temperatures sharpen the distribution
    towards the largest score, high ones flatten it towards uniform.

    Parameters
    ----------
    temperature : float
        The starting value; one of ``temperatures``.
    temperatures : sequence of float
        The slider's values (default ``0.1 .. 10``, 9 values).
    logits, labels : sequences of the same length
        The scores and their names (default: five candidate next words).
    mode : {"auto", "frames", "live"}
        ``"frames"`` precomputes every picture and switches in the browser (the HTML book; needs
        ipywidgets 8); ``"live"`` redraws from Python (ipywidgets 7); ``"auto"`` picks by version.

    Returns
    -------
    Explorer
        An ipywidgets ``VBox``: display it (or leave it last in a cell).

    Examples
    --------
    >>> ex = softmax_explorer(mode="live")
    >>> ex.controls["temperature"].value, ex.mode
    (1.0, 'live')
    """
    return Explorer(
        "softmax",
        [Control("temperature", "temperature T", tuple(float(t) for t in temperatures), float(temperature))],
        _softmax_renderer(logits, labels),
        alt="Bar charts of the scores divided by the temperature and of the softmax weights.",
        mode=mode,
    )


def scaling_explorer(
    *,
    d_k: int = explore.DEFAULT_D_K,
    d_k_values: Sequence[int] = explore.D_K_VALUES,
    seed: int = 0,
    mode: str = "auto",
) -> Explorer:
    """A ``d_k`` slider: attention weights of random q, k without and with the ``1/sqrt(d_k)`` scale.

    Draws :func:`attncourse.explore.scaling_view`: the two weight maps side by side, the mean
    max weight, entropy and softmax gradient norm of each, and the entropy against ``d_k``.

    Parameters
    ----------
    d_k : int
        The starting value; one of ``d_k_values``.
    d_k_values : sequence of int
        The slider's values (default: powers of two from 1 to 1024).
    seed : int
        Seed of the random queries and keys.
    mode : {"auto", "frames", "live"}
        ``"frames"`` precomputes every picture and switches in the browser (the HTML book; needs
        ipywidgets 8); ``"live"`` redraws from Python (ipywidgets 7); ``"auto"`` picks by version.

    Returns
    -------
    Explorer
        An ipywidgets ``VBox``: display it (or leave it last in a cell).
    """
    d_k_values = tuple(int(d) for d in d_k_values)
    return Explorer(
        "scaling",
        [Control("d_k", "d_k", d_k_values, int(d_k))],
        _scaling_renderer(seed, d_k_values),
        alt="Heatmaps of attention weights without and with scaling, and entropy against d_k.",
        mode=mode,
    )


def heads_explorer(
    *,
    n_heads: int = explore.DEFAULT_N_HEADS,
    d_model: int = explore.DEFAULT_D_MODEL_HEADS,
    tokens: Sequence[str] = explore.TOKENS,
    seed: int = 0,
    mode: str = "auto",
) -> Explorer:
    """An ``n_heads`` slider over the divisors of ``d_model``: one attention map per head.

    Draws :func:`attncourse.explore.heads_view`: as ``n_heads`` grows each head gets a narrower
    slice (``d_head = d_model / n_heads``) of the same projections, and the parameter count
    stays the same.

    Parameters
    ----------
    n_heads : int
        The starting value; a divisor of ``d_model``.
    d_model : int
        The model width (default 12: six head counts, 1, 2, 3, 4, 6 and 12).
    tokens : sequence of str
        The sentence (default "the cat sat on the mat").
    seed : int
        Seed of the embeddings and projections.
    mode : {"auto", "frames", "live"}
        ``"frames"`` precomputes every picture and switches in the browser (the HTML book; needs
        ipywidgets 8); ``"live"`` redraws from Python (ipywidgets 7); ``"auto"`` picks by version.

    Returns
    -------
    Explorer
        An ipywidgets ``VBox``: display it (or leave it last in a cell).
    """
    tokens = tuple(tokens)
    return Explorer(
        "heads",
        [Control("n_heads", "n_heads", explore.divisors(d_model), int(n_heads))],
        _heads_renderer(d_model, tokens, seed),
        alt="One attention heatmap per head over a six-word sentence.",
        mode=mode,
    )


def mask_explorer(
    *,
    pad_length: int = explore.DEFAULT_PAD_LENGTH,
    causal: bool = explore.DEFAULT_CAUSAL,
    tokens: Sequence[str] = explore.TOKENS,
    seed: int = 0,
    mode: str = "auto",
) -> Explorer:
    """A padding-length slider and a causal toggle: the mask, the masked scores and the weights.

    Draws :func:`attncourse.explore.mask_view`: blocked cells are hatched, blocked scores are
    ``-inf``, their weights exactly 0; a query with nothing left to see gets a row of zeros.

    Parameters
    ----------
    pad_length : int
        The starting number of padded positions, ``0 .. len(tokens)``.
    causal : bool
        Whether the causal mask starts on.
    tokens : sequence of str
        The sequence (default "the cat sat on the mat"); padded positions show as ``<pad>``.
    seed : int
        Seed of the random q, k, v.
    mode : {"auto", "frames", "live"}
        ``"frames"`` precomputes every picture and switches in the browser (the HTML book; needs
        ipywidgets 8); ``"live"`` redraws from Python (ipywidgets 7); ``"auto"`` picks by version.

    Returns
    -------
    Explorer
        An ipywidgets ``VBox``: display it (or leave it last in a cell).
    """
    tokens = tuple(tokens)
    return Explorer(
        "mask",
        [
            Control("causal", "causal", (False, True), bool(causal), kind="toggle", labels=("off", "on")),
            Control(
                "pad_length", "padding length", tuple(range(len(tokens) + 1)), int(pad_length), kind="int"
            ),
        ],
        _mask_renderer(tokens, seed),
        alt="Three heatmaps: the boolean mask, the masked scores and the attention weights.",
        mode=mode,
    )


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
