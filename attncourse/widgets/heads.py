"""The heads explorer: one attention map per head as the number of heads changes."""

from __future__ import annotations

import math
from typing import Any, Sequence, Tuple

import numpy as np

from .. import explore
from ..plotting import attention_heatmap
from ._core import Control, Explorer, Frame, caption
from ._paint import CellLabels, Painter, Renderer

__all__ = ["render_heads", "heads_explorer"]


class _HeadsPainter(Painter):
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
                reference.weights[h],
                tokens,
                tokens,
                ax=ax,
                colorbar=False,
                annotate=False,
                xlabel=None,
                ylabel=None,
            )
            self.axes.append(ax)
            self.cells.append(CellLabels(ax))
            self.cell_labels.append(self.cells[-1])
            self.titles.append(ax.set_title(" ", fontsize=9, pad=3))
        self.cax = self.fig.add_axes([0, 0, 0.1, 0.1])
        self.fig.colorbar(ScalarMappable(Normalize(0, 1), "viridis"), cax=self.cax)
        self.cax.tick_params(labelsize=8)
        self.suptitle = self.fig.suptitle(" ", fontsize=11, y=1 - 0.12 / self.size[1], va="top")

    def background_key(self, view: Any) -> Any:
        return view.n_heads  # the grid is laid out anew for each head count; nothing else changes

    def paint(self, view: Any) -> str:
        n_heads, tokens, L = view.n_heads, list(view.tokens), len(view.tokens)
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
            ax.images[0].set_data(view.weights[h])
            self.cells[h].set(view.weights[h], "{:.2f}", 0.0, 1.0, show=np.full((L, L), n_heads == 1))
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
            f"n_heads = {n_heads}: d_head = {view.d_head}, scores scaled by 1/√{view.d_head}; "
            f"parameters {view.n_params} for any n_heads"
        )
        return caption(
            f"n_heads = {n_heads}, d_model = {view.d_model}, d_head = {view.d_head}; "
            f"each head's slice of W_Q, W_K, W_V: {view.n_params_per_head} weights; "
            f"all parameters (W_Q, W_K, W_V, W_O and biases): {view.n_params}.",
            "Rows are queries, columns keys, over the sentence: " + " ".join(tokens) + ".",
        )

    def alt(self, view: Any) -> str:
        return (
            f"{view.n_heads} attention heatmap{'s' if view.n_heads > 1 else ''}, one per head "
            f"(d_head = {view.d_head}), over the sentence '{' '.join(view.tokens)}'; rows are queries, "
            f"columns keys; {view.n_params} parameters whatever the number of heads."
        )


def _heads_renderer(d_model: int, tokens: Sequence[str], seed: int) -> Renderer:
    tokens = tuple(tokens)
    return Renderer(
        lambda n_heads: explore.heads_view(n_heads, d_model, tokens, seed),
        lambda: _HeadsPainter(d_model, tokens, seed),
    )


def render_heads(
    n_heads: int,
    d_model: int = explore.DEFAULT_D_MODEL_HEADS,
    tokens: Sequence[str] = explore.TOKENS,
    seed: int = 0,
) -> Frame:
    """Draw :func:`attncourse.explore.heads_view`: one attention map per head."""
    return _heads_renderer(d_model, tokens, seed)(n_heads=n_heads)


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
