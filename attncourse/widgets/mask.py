"""The mask explorer: padding and causal masks, the masked scores and the weights."""

from __future__ import annotations

from typing import Any, Optional, Sequence, Tuple

import numpy as np

from .. import explore
from ..plotting import heatmap, mask_overlay
from ._core import Control, Explorer, Frame, caption
from ._paint import CellLabels, Hatching, Painter, Renderer

__all__ = ["render_mask", "mask_explorer"]


class _MaskPainter(Painter):
    size = (9.8, 3.3)

    def __init__(self, tokens: Tuple[str, ...], seed: int) -> None:
        super().__init__()
        reference = explore.mask_view(0, False, tokens, seed)  # nothing blocked: every cell labelled
        labels, mask, L = list(reference.tokens), reference.mask, len(tokens)
        self.axes = self.fig.subplots(1, 3)
        ax_mask, ax_scores, ax_weights = self.axes
        mask_overlay(mask, None, labels, labels, ax=ax_mask, title="mask (hatched = blocked)")
        scores = reference.scores  # the same at every setting: masking comes after the scores
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
        mask_overlay(mask, reference.weights, labels, labels, ax=ax_weights, title="weights (rows sum to 1)")
        for ax in self.axes:  # -inf scores, and rows past L: blank
            ax.images[0].set_cmap(ax.images[0].get_cmap().with_extremes(bad="white"))
        for text in list(ax_weights.texts):  # mask_overlay labelled the weights; relabelled per frame
            text.remove()
        self.score_cells, self.weight_cells = CellLabels(ax_scores), CellLabels(ax_weights)
        self.cell_labels += [self.score_cells, self.weight_cells]
        self.hatches = [Hatching(ax_mask, (L, L)), Hatching(ax_weights, (L, L))]
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

    def background_key(self, view: Any) -> Any:
        return view.tokens, view.queries  # the tick labels show which tokens are padding, and L

    def paint(self, view: Any) -> str:
        labels, queries, mask = list(view.tokens), list(view.queries), view.mask
        L, S = mask.shape
        # The axes keep S rows; the rows past L (no such query) stay blank.
        real = np.zeros((S, S), dtype=bool)
        real[:L] = True

        def rows(a: np.ndarray, fill: Any = np.nan) -> np.ndarray:
            out = np.full((S, S), fill, dtype=np.result_type(a, type(fill)))
            out[:L] = a
            return out

        blocked = rows(~mask, False)
        ax_mask, ax_scores, ax_weights = self.axes
        for ax in self.axes:
            ax.set_xticks(range(S), labels=labels, rotation=45, ha="right", rotation_mode="anchor")
            ax.set_yticks(range(L), labels=queries)
        ax_mask.images[0].set_data(rows(mask.astype(float)))
        ax_scores.images[0].set_data(rows(np.where(mask, view.scores, np.nan)))  # blocked cells left blank
        self.score_cells.set(
            rows(view.scores, 0.0), "{:.1f}", self.lo, self.hi, show=real, blocked=blocked, blocked_text="−∞"
        )
        ax_weights.images[0].set_data(rows(view.weights))
        self.weight_cells.set(rows(view.weights, 0.0), "{:.2f}", 0.0, 1.0, show=rows(mask, False))
        for hatching in self.hatches:
            hatching.show(blocked)
        empty = view.empty_rows
        kind = "padding + causal" if view.causal else "padding only"
        self.suptitle.set_text(
            f"L = {L} queries, S = {S} keys, {view.pad_length} padded; {kind}"
            + (f": {len(empty)} rows with nothing to attend to are all 0" if empty else "")
        )
        return caption(
            f"L = {L} queries against S = {S} keys, padding length {view.pad_length}, causal "
            f"{'on' if view.causal else 'off'}: "
            f"{int(mask.sum())} of {mask.size} query-key pairs may attend.",
            "Row sums of the weights: "
            + ", ".join(f"{s:.2f}" for s in view.row_sums)
            + (f" (rows {', '.join(str(i + 1) for i in empty)} have no key to attend to)" if empty else ""),
        )

    def alt(self, view: Any) -> str:
        blocked = int((~view.mask).sum())
        empty = (
            f"; rows {', '.join(str(i + 1) for i in view.empty_rows)} are all zero" if view.empty_rows else ""
        )
        return (
            f"Three heatmaps of {len(view.queries)} queries over the keys '{' '.join(view.tokens)}' "
            f"({view.pad_length} padded, causal "
            f"{'on' if view.causal else 'off'}): the mask with {blocked} of {view.mask.size} cells blocked "
            f"(hatched), the scores with the blocked cells minus infinity, and the weights, whose rows sum "
            f"to 1{empty}."
        )


def _mask_renderer(tokens: Sequence[str], seed: int) -> Renderer:
    tokens = tuple(tokens)
    return Renderer(
        lambda pad_length, causal, n_queries=None: explore.mask_view(
            pad_length, causal, tokens, seed, n_queries
        ),
        lambda: _MaskPainter(tokens, seed),
    )


def render_mask(
    pad_length: int,
    causal: bool,
    tokens: Sequence[str] = explore.TOKENS,
    seed: int = 0,
    n_queries: Optional[int] = None,
) -> Frame:
    """Draw :func:`attncourse.explore.mask_view`: the mask, the masked scores, the weights."""
    return _mask_renderer(tokens, seed)(pad_length=pad_length, causal=causal, n_queries=n_queries)


def mask_explorer(
    *,
    pad_length: int = explore.DEFAULT_PAD_LENGTH,
    causal: bool = explore.DEFAULT_CAUSAL,
    n_queries: Optional[int] = None,
    tokens: Sequence[str] = explore.TOKENS,
    seed: int = 0,
    mode: str = "auto",
) -> Explorer:
    """A causal toggle, the number of queries L and the keys' padding: the mask, the scores, the weights.

    Draws :func:`attncourse.explore.mask_view`: blocked cells are hatched, blocked scores are
    ``-inf``, their weights exactly 0; a query with nothing left to see gets a row of zeros.
    With ``L < S`` the causal mask stays aligned to the top left, as PyTorch's ``is_causal``.

    Parameters
    ----------
    pad_length : int
        The starting number of padded positions, ``0 .. len(tokens)``.
    causal : bool
        Whether the causal mask starts on.
    n_queries : int, optional
        The starting number of queries ``L`` (default: all, ``L = S``); the slider offers every
        second length up to ``S`` (2, 4, 6 for six tokens).
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
    # Every second length up to S: each value multiplies the frames the HTML book embeds.
    query_counts = tuple(sorted({len(tokens), *range(len(tokens) % 2 or 2, len(tokens) + 1, 2)}))
    return Explorer(
        "mask",
        [
            Control("causal", "causal", (False, True), bool(causal), kind="toggle", labels=("off", "on")),
            Control("n_queries", "queries L", query_counts, int(n_queries or len(tokens))),
            Control(
                "pad_length",
                "padding of the keys",
                tuple(range(len(tokens) + 1)),
                int(pad_length),
                kind="int",
            ),
        ],
        _mask_renderer(tokens, seed),
        alt="Three heatmaps: the boolean mask, the masked scores and the attention weights.",
        mode=mode,
    )
