"""The heads explorer: one attention map per head as the number of heads changes."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence, Tuple, Union

import numpy as np

from .. import explore, toy_data
from ..explore.heads import HEAD_SCALES
from ..i18n import tr
from ..plotting import attention_heatmap
from ._core import Control, DependentControl, Explorer, Frame, caption
from ._paint import CellLabels, Painter, Renderer

__all__ = ["ALL_HEADS", "render_heads", "heads_explorer"]

ALL_HEADS = "all"  # the head control's value that shows every head


@dataclass(frozen=True, eq=False)
class _Shown:
    """A heads view and the head on screen (its index, from 0, or ``"all"``)."""

    view: explore.HeadsView
    head: Union[int, str]

    @property
    def all_heads(self) -> bool:
        return self.head == ALL_HEADS


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
        # The first map is also the one picked head's map: it changes within one layout.
        ax = self.axes[0]
        self._animate(ax.images[0], *ax.spines.values(), self.titles[0], self.suptitle)

    def background_key(self, shown: Any) -> Any:
        # The grid is laid out anew for each number of maps on screen; with every head on screen the
        # maps after the first sit in the background, so the scale they were computed with is part of it.
        return (shown.view.n_heads, shown.view.scale_by) if shown.all_heads else 1

    def paint(self, shown: Any) -> str:
        view, head = shown.view, shown.head
        picked = range(view.n_heads) if shown.all_heads else [head]  # which heads' maps are on screen
        n_heads, tokens, L = len(picked), list(view.tokens), len(view.tokens)
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
            weights = view.weights[picked[h]]
            ax.images[0].set_data(weights)
            self.cells[h].set(weights, "{:.2f}", 0.0, 1.0, show=np.full((L, L), n_heads == 1))
            self.titles[h].set_text(f"head {picked[h]}" + ("" if shown.all_heads else f" of {view.n_heads}"))
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
        by = view.d_head if view.scale_by == "d_head" else view.d_model
        self.suptitle.set_text(
            f"n_heads = {view.n_heads}: d_head = {view.d_head}, scores divided by √{view.scale_by} = √{by}"
            + (" (the bug)" if view.scale_by == "d_model" and view.n_heads > 1 else "")
            + f"; parameters {view.n_params} for any n_heads"
        )
        if not shown.all_heads:
            w = view.weights[head]
            i, j = np.unravel_index(int(np.argmax(w)), w.shape)
            focus = tr(
                "Head {head} of {n} (heads 0 to {last}, d_head = {d_head}): its largest weight, {w}, is "
                "'{query}' (position {i}) attending to '{key}' (position {j}).",
                head=head,
                n=view.n_heads,
                last=view.n_heads - 1,
                d_head=view.d_head,
                w=f"{w[i, j]:.2f}",
                query=tokens[i],
                i=i,
                key=tokens[j],
                j=j,
            )
        elif view.n_heads > 1:
            focus = tr(
                "All {n} heads, each with its own d_head = {d_head} slice of the projections.",
                n=view.n_heads,
                d_head=view.d_head,
            )
        else:
            focus = tr("One head: d_head = d_model = {d_head}, the projections whole.", d_head=view.d_head)
        query = []
        if toy_data.HEADS_QUERY in tokens:  # the query whose rows chapter 5 prints
            i = tokens.index(toy_data.HEADS_QUERY)
            query.append(
                tr(
                    "Query '{query}', its largest weight (uniform: 1/{L} = {uniform}): {heads}.",
                    query=tokens[i],
                    L=L,
                    uniform=f"{1 / L:.2f}",
                    heads="; ".join(  # data, as it is in every language: each head, its most-weighted key, the weight
                        f"head {h} '{tokens[int(view.weights[h, i].argmax())]}' {view.weights[h, i].max():.2f}"
                        for h in picked
                    ),
                )
            )
        scale = dict(
            by="d_head" if view.scale_by == "d_head" else "d_model",
            factor=f"{1 / view.scale:.3g}",
            entropy=f"{view.mean_entropy:.3f}",
            L=L,
            uniform=f"{math.log(L):.3f}",
        )
        if view.scale_by == "d_model" and view.n_heads > 1:
            scale_line = tr(
                "Scores divided by √{by} = {factor}; mean row entropy {entropy} nats "
                "(uniform: ln {L} = {uniform}), flatter than with √d_head.",
                **scale,
            )
        else:
            scale_line = tr(
                "Scores divided by √{by} = {factor}; mean row entropy {entropy} nats (uniform: ln {L} = {uniform}).",
                **scale,
            )
        return caption(
            focus,
            *query,
            tr(
                "n_heads = {n}, d_model = {d_model}, d_head = {d_head}; each head's slice of W_Q, W_K, W_V: "
                "{per_head} weights; all parameters (W_Q, W_K, W_V, W_O, no biases): {params}.",
                n=view.n_heads,
                d_model=view.d_model,
                d_head=view.d_head,
                per_head=view.n_params_per_head,
                params=view.n_params,
            ),
            scale_line,
            tr(
                "Rows are queries, columns keys, over the sentence: {sentence}. Chapter 5's untrained layer "
                "(d_model = {d_model}); its per-head maps are the four heads with √d_head, and the other head "
                "counts cut the same W_Q, W_K, W_V into other slices.",
                sentence=" ".join(tokens),
                d_model=view.d_model,
            ),
        )

    def alt(self, shown: Any) -> str:
        view, head = shown.view, shown.head
        fields = dict(n=view.n_heads, d_head=view.d_head, by=view.scale_by, sentence=" ".join(view.tokens))
        if not shown.all_heads:
            w = view.weights[head]
            i, j = np.unravel_index(int(np.argmax(w)), w.shape)
            return tr(
                "The attention heatmap of head {head} of {n} (d_head = {d_head}, scores divided by the square "
                "root of {by}) over the sentence '{sentence}', weights written in each cell; the largest, {w}, "
                "is '{query}' attending to '{key}'.",
                head=head,
                w=f"{w[i, j]:.2f}",
                query=view.tokens[i],
                key=view.tokens[j],
                **fields,
            )
        if view.n_heads > 1:
            return tr(
                "{n} attention heatmaps, one per head (d_head = {d_head}, scores divided by the square root of "
                "{by}), over the sentence '{sentence}'; rows are queries, columns keys; {params} parameters "
                "whatever the number of heads.",
                params=view.n_params,
                **fields,
            )
        return tr(
            "{n} attention heatmap, one per head (d_head = {d_head}, scores divided by the square root of "
            "{by}), over the sentence '{sentence}'; rows are queries, columns keys; {params} parameters "
            "whatever the number of heads.",
            params=view.n_params,
            **fields,
        )


def _shown(view: explore.HeadsView, head: Union[int, str]) -> _Shown:
    """The view with the head on screen, checked: ``"all"`` or an index ``0 .. n_heads - 1``."""
    if head != ALL_HEADS and not (
        isinstance(head, (int, np.integer)) and not isinstance(head, bool) and 0 <= head < view.n_heads
    ):
        raise ValueError(
            f"head must be {ALL_HEADS!r} or a head index from 0 to {view.n_heads - 1}; got {head!r}."
        )
    return _Shown(view, head if head == ALL_HEADS else int(head))


def _heads_renderer(d_model: int, tokens: Sequence[str], seed: int) -> Renderer:
    tokens = tuple(tokens)
    return Renderer(
        lambda n_heads, head=ALL_HEADS, scale_by="d_head": _shown(
            explore.heads_view(n_heads, d_model, tokens, seed, scale_by), head
        ),
        lambda: _HeadsPainter(d_model, tokens, seed),
    )


def render_heads(
    n_heads: int,
    d_model: int = explore.DEFAULT_D_MODEL_HEADS,
    tokens: Sequence[str] = explore.TOKENS,
    seed: int = 1,
    head: Union[int, str] = ALL_HEADS,
    scale_by: str = "d_head",
) -> Frame:
    """Draw :func:`attncourse.explore.heads_view`: one attention map per head (``head="all"``), or
    head ``head`` alone (an index from 0, as the chapters count heads)."""
    return _heads_renderer(d_model, tokens, seed)(n_heads=n_heads, head=head, scale_by=scale_by)


def _head_control(values: dict) -> Control:
    heads = tuple(range(values["n_heads"])) if values["n_heads"] > 1 else ()  # one head: "all" is it
    return Control(
        "head",
        tr("which head"),
        (ALL_HEADS,) + heads,
        ALL_HEADS,
        labels=(tr("all"),) + tuple(str(h) for h in heads),
    )


def heads_explorer(
    *,
    n_heads: int = explore.DEFAULT_N_HEADS,
    d_model: int = explore.DEFAULT_D_MODEL_HEADS,
    tokens: Sequence[str] = explore.TOKENS,
    seed: int = 1,
    scale_by: str = "d_head",
    mode: str = "auto",
) -> Explorer:
    """An ``n_heads`` slider over the divisors of ``d_model``, which head, and the scale: the maps.

    Draws :func:`attncourse.explore.heads_view` on chapter 5's data (the default view is the
    chapter's four per-head maps): as ``n_heads`` grows each head gets a narrower
    slice (``d_head = d_model / n_heads``) of the same projections, and the parameter count
    stays the same.  The second slider shows all the heads or one of them (counted from 0), large,
    with its weights written in; it offers as many heads as the first slider gives.  The scale toggle
    divides the scores by ``sqrt(d_head)`` (right) or ``sqrt(d_model)`` (chapter 5's bug), which
    flattens the maps more the more heads there are.

    Parameters
    ----------
    n_heads : int
        The starting value; a divisor of ``d_model``.
    d_model : int
        The model width (default 8, chapter 5's: four head counts, 1, 2, 4 and 8).
    tokens : sequence of str
        The sentence (default "the cat sat on the mat"), words of chapter 5's embedding table.
    seed : int
        Seed of the projections (default 1: chapter 5's, whose four-head maps are the default view).
    scale_by : {"d_head", "d_model"}
        The starting scale.
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
        [
            Control("n_heads", tr("n_heads"), explore.divisors(d_model), int(n_heads)),
            DependentControl("head", _head_control),
            Control(
                "scale_by",
                tr("scores divided by"),
                HEAD_SCALES,
                scale_by,
                kind="toggle",
                labels=("√d_head", tr("√d_model (bug)")),
            ),
        ],
        _heads_renderer(d_model, tokens, seed),
        alt=tr(
            "One attention heatmap per head, or one head's, over a six-word sentence, with the scores "
            "divided by the square root of d_head or, the bug, of d_model."
        ),
        mode=mode,
    )
