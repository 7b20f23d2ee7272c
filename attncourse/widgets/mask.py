"""The mask explorer: padding and causal masks, the masked scores and the weights."""

from __future__ import annotations

from typing import Any, Callable, Dict, Optional, Sequence, Tuple

import numpy as np

from .. import explore
from ..i18n import tr
from ..plotting import heatmap, mask_overlay
from ..toy_data import SENTENCE
from ._core import Control, Explorer, Frame, caption, resolve_mode
from ._paint import CellLabels, Hatching, Painter, Renderer

__all__ = ["MASK_KINDS", "render_mask", "mask_explorer"]

# What the blocked score cells say, per fill.
_FILL_TEXT = {"-inf": "−∞", "-1e9": "−1e9", "0": "0", "-1e9 fp16": "−∞"}
# The mask control: padding alone, or with the causal mask; with L < S, the two alignments.
MASK_KINDS = ("padding", "causal", "causal, L = S/2, top-left", "causal, L = S/2, bottom-right")


def _mask_label(kind: str) -> str:
    """What the mask control's button for ``kind`` (one of MASK_KINDS) says."""
    if kind == "padding":
        return tr("padding")
    if kind == "causal":
        return tr("causal")
    if kind == "causal, L = S/2, top-left":
        return tr("causal, L = S/2, top-left")
    return tr("causal, L = S/2, bottom-right")


def _side_label(side: str) -> str:
    """What the padding-side control's button for ``side`` ("right" or "left") says."""
    return tr("left") if side == "left" else tr("right")


def _mask_settings(kind: str, S: int) -> Tuple[bool, Optional[int], str]:
    """``(causal, n_queries, align)`` for a value of the mask control."""
    if kind not in MASK_KINDS:
        raise ValueError(f"mask must be one of {MASK_KINDS}; got {kind!r}.")
    if kind in ("padding", "causal"):
        return kind == "causal", None, "top-left"
    return True, max(1, S // 2), kind.rsplit(", ", 1)[1]


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
        mask_overlay(mask, reference.weights, labels, labels, ax=ax_weights, title="weights")
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
            rows(view.scores, 0.0),
            "{:.1f}",
            self.lo,
            self.hi,
            show=real,
            blocked=blocked,
            blocked_text=_FILL_TEXT[view.fill],
        )
        weights = rows(view.weights, 0.0)
        ax_weights.images[0].set_data(rows(view.weights))  # NaN (blank) past L and in NaN rows
        self.weight_cells.set(weights, "{:.2f}", 0.0, 1.0, show=rows(mask, False) & ~np.isnan(weights))
        grey = (64, 64, 64)
        for i, j in zip(*np.nonzero(real & (blocked | np.isnan(weights)))):
            w = weights[i, j]  # a blocked key's weight (not 0 with a finite fill), or NaN
            if np.isnan(w) or w > 0.005:
                self.weight_cells.items.append((i, j, "nan" if np.isnan(w) else f"{w:.2f}", grey))
        for hatching in self.hatches:
            hatching.show(blocked)
        empty, nan_rows = view.empty_rows, view.nan_rows
        if not view.causal:
            kind = "padding only"
        elif L < S:
            kind = f"padding + causal, {view.align}"
        else:
            kind = "padding + causal"
        if nan_rows:
            outcome = f"{len(nan_rows)} rows NaN"
        elif view.blocked_weight > 0.005:
            outcome = f"up to {view.blocked_weight:.2f} of a row's weight on blocked keys"
        elif empty:
            outcome = f"{len(empty)} rows with nothing to attend to are all 0"
        else:
            outcome = "blocked keys get 0"
        self.suptitle.set_text(
            f"L = {L}, S = {S}, {view.pad_length} padded on the {view.pad_side}; {kind}; "
            f"fill {view.fill}: {outcome}"
        )
        return caption(_data_line(view), _pairs_line(view), _fill_line(view))

    def alt(self, view: Any) -> str:
        return _alt_text(view)


def _causal(view: Any) -> str:
    """The causal mask as the caption and the alt text say it: off, on, or on with its diagonal where L < S."""
    L, S = view.mask.shape
    return ("on, " + view.align if L < S else "on") if view.causal else "off"


# Each line in one piece per variant (the padding side, the causal mask, the fill, the rows with
# nothing to attend to), so that a translation is one whole sentence and the book's English lines
# can be matched back to it; the values (numbers, tokens, the fill) are the fields ``f``.
_PAIRS: Dict[Tuple[str, bool, str], Callable[[dict], str]] = {  # (pad side, L < S, causal)
    ("right", False, "off"): lambda f: tr(
        "L = {L} queries against S = {S} keys, {pad} padded on the right, causal off: {allowed} "
        "of {pairs} query-key pairs may attend.",
        **f,
    ),
    ("right", False, "on"): lambda f: tr(
        "L = {L} queries against S = {S} keys, {pad} padded on the right, causal on: {allowed} "
        "of {pairs} query-key pairs may attend.",
        **f,
    ),
    ("right", True, "off"): lambda f: tr(
        "L = {L} queries (the last {last} tokens) against S = {S} keys, {pad} padded on the "
        "right, causal off: {allowed} of {pairs} query-key pairs may attend.",
        **f,
    ),
    ("right", True, "on, top-left"): lambda f: tr(
        "L = {L} queries (the last {last} tokens) against S = {S} keys, {pad} padded on the "
        "right, causal on, top-left: {allowed} of {pairs} query-key pairs may attend.",
        **f,
    ),
    ("right", True, "on, bottom-right"): lambda f: tr(
        "L = {L} queries (the last {last} tokens) against S = {S} keys, {pad} padded on the "
        "right, causal on, bottom-right: {allowed} of {pairs} query-key pairs may attend.",
        **f,
    ),
    ("left", False, "off"): lambda f: tr(
        "L = {L} queries against S = {S} keys, {pad} padded on the left, causal off: {allowed} "
        "of {pairs} query-key pairs may attend.",
        **f,
    ),
    ("left", False, "on"): lambda f: tr(
        "L = {L} queries against S = {S} keys, {pad} padded on the left, causal on: {allowed} of "
        "{pairs} query-key pairs may attend.",
        **f,
    ),
    ("left", True, "off"): lambda f: tr(
        "L = {L} queries (the last {last} tokens) against S = {S} keys, {pad} padded on the "
        "left, causal off: {allowed} of {pairs} query-key pairs may attend.",
        **f,
    ),
    ("left", True, "on, top-left"): lambda f: tr(
        "L = {L} queries (the last {last} tokens) against S = {S} keys, {pad} padded on the "
        "left, causal on, top-left: {allowed} of {pairs} query-key pairs may attend.",
        **f,
    ),
    ("left", True, "on, bottom-right"): lambda f: tr(
        "L = {L} queries (the last {last} tokens) against S = {S} keys, {pad} padded on the "
        "left, causal on, bottom-right: {allowed} of {pairs} query-key pairs may attend.",
        **f,
    ),
}
_FILLS: Dict[Tuple[str, bool], Callable[[dict], str]] = {  # (fill, some rows have no key)
    ("-inf", False): lambda f: tr(
        "Blocked scores filled with -inf (attncourse's softmax: a row with no key is all zeros); "
        "largest share of a row's weight on blocked keys: {share}. Row sums of the weights: "
        "{sums}",
        **f,
    ),
    ("-inf", True): lambda f: tr(
        "Blocked scores filled with -inf (attncourse's softmax: a row with no key is all zeros); "
        "largest share of a row's weight on blocked keys: {share}. Row sums of the weights: "
        "{sums} (rows {rows} have no key to attend to)",
        **f,
    ),
    ("-1e9", False): lambda f: tr(
        "Blocked scores filled with -1e9 (float64; a row with no key spreads its weight over "
        "blocked keys); largest share of a row's weight on blocked keys: {share}. Row sums of "
        "the weights: {sums}",
        **f,
    ),
    ("-1e9", True): lambda f: tr(
        "Blocked scores filled with -1e9 (float64; a row with no key spreads its weight over "
        "blocked keys); largest share of a row's weight on blocked keys: {share}. Row sums of "
        "the weights: {sums} (rows {rows} have no key to attend to)",
        **f,
    ),
    ("0", False): lambda f: tr(
        "Blocked scores filled with 0 (e^0 = 1: blocked keys keep weight); largest share of a "
        "row's weight on blocked keys: {share}. Row sums of the weights: {sums}",
        **f,
    ),
    ("0", True): lambda f: tr(
        "Blocked scores filled with 0 (e^0 = 1: blocked keys keep weight); largest share of a "
        "row's weight on blocked keys: {share}. Row sums of the weights: {sums} (rows {rows} "
        "have no key to attend to)",
        **f,
    ),
    ("-1e9 fp16", False): lambda f: tr(
        "Blocked scores filled with -1e9 fp16 (float16 scores: -1e9 overflows to -inf, and a "
        "plain softmax of a row of -inf is NaN); largest share of a row's weight on blocked "
        "keys: {share}. Row sums of the weights: {sums}",
        **f,
    ),
    ("-1e9 fp16", True): lambda f: tr(
        "Blocked scores filled with -1e9 fp16 (float16 scores: -1e9 overflows to -inf, and a "
        "plain softmax of a row of -inf is NaN); largest share of a row's weight on blocked "
        "keys: {share}. Row sums of the weights: {sums} (rows {rows} have no key to attend to)",
        **f,
    ),
}
_ALTS: Dict[
    Tuple[str, str, str], Callable[[dict], str]
] = {  # (pad side, causal, rows: "", "NaN", "all zero")
    ("right", "off", ""): lambda f: tr(
        "Three heatmaps of {n} queries over the keys '{keys}' ({pad} padded on the right, causal "
        "off): the mask with {blocked} of {cells} cells blocked (hatched), the scores with the "
        "blocked cells filled with {fill}, and the weights, with up to {share} of a row's weight "
        "on blocked keys.",
        **f,
    ),
    ("right", "off", "NaN"): lambda f: tr(
        "Three heatmaps of {n} queries over the keys '{keys}' ({pad} padded on the right, causal "
        "off): the mask with {blocked} of {cells} cells blocked (hatched), the scores with the "
        "blocked cells filled with {fill}, and the weights, with up to {share} of a row's weight "
        "on blocked keys; rows {rows} are NaN.",
        **f,
    ),
    ("right", "off", "all zero"): lambda f: tr(
        "Three heatmaps of {n} queries over the keys '{keys}' ({pad} padded on the right, causal "
        "off): the mask with {blocked} of {cells} cells blocked (hatched), the scores with the "
        "blocked cells filled with {fill}, and the weights, with up to {share} of a row's weight "
        "on blocked keys; rows {rows} are all zero.",
        **f,
    ),
    ("right", "on", ""): lambda f: tr(
        "Three heatmaps of {n} queries over the keys '{keys}' ({pad} padded on the right, causal "
        "on): the mask with {blocked} of {cells} cells blocked (hatched), the scores with the "
        "blocked cells filled with {fill}, and the weights, with up to {share} of a row's weight "
        "on blocked keys.",
        **f,
    ),
    ("right", "on", "NaN"): lambda f: tr(
        "Three heatmaps of {n} queries over the keys '{keys}' ({pad} padded on the right, causal "
        "on): the mask with {blocked} of {cells} cells blocked (hatched), the scores with the "
        "blocked cells filled with {fill}, and the weights, with up to {share} of a row's weight "
        "on blocked keys; rows {rows} are NaN.",
        **f,
    ),
    ("right", "on", "all zero"): lambda f: tr(
        "Three heatmaps of {n} queries over the keys '{keys}' ({pad} padded on the right, causal "
        "on): the mask with {blocked} of {cells} cells blocked (hatched), the scores with the "
        "blocked cells filled with {fill}, and the weights, with up to {share} of a row's weight "
        "on blocked keys; rows {rows} are all zero.",
        **f,
    ),
    ("right", "on, top-left", ""): lambda f: tr(
        "Three heatmaps of {n} queries over the keys '{keys}' ({pad} padded on the right, causal "
        "on, top-left): the mask with {blocked} of {cells} cells blocked (hatched), the scores "
        "with the blocked cells filled with {fill}, and the weights, with up to {share} of a "
        "row's weight on blocked keys.",
        **f,
    ),
    ("right", "on, top-left", "NaN"): lambda f: tr(
        "Three heatmaps of {n} queries over the keys '{keys}' ({pad} padded on the right, causal "
        "on, top-left): the mask with {blocked} of {cells} cells blocked (hatched), the scores "
        "with the blocked cells filled with {fill}, and the weights, with up to {share} of a "
        "row's weight on blocked keys; rows {rows} are NaN.",
        **f,
    ),
    ("right", "on, top-left", "all zero"): lambda f: tr(
        "Three heatmaps of {n} queries over the keys '{keys}' ({pad} padded on the right, causal "
        "on, top-left): the mask with {blocked} of {cells} cells blocked (hatched), the scores "
        "with the blocked cells filled with {fill}, and the weights, with up to {share} of a "
        "row's weight on blocked keys; rows {rows} are all zero.",
        **f,
    ),
    ("right", "on, bottom-right", ""): lambda f: tr(
        "Three heatmaps of {n} queries over the keys '{keys}' ({pad} padded on the right, causal "
        "on, bottom-right): the mask with {blocked} of {cells} cells blocked (hatched), the "
        "scores with the blocked cells filled with {fill}, and the weights, with up to {share} "
        "of a row's weight on blocked keys.",
        **f,
    ),
    ("right", "on, bottom-right", "NaN"): lambda f: tr(
        "Three heatmaps of {n} queries over the keys '{keys}' ({pad} padded on the right, causal "
        "on, bottom-right): the mask with {blocked} of {cells} cells blocked (hatched), the "
        "scores with the blocked cells filled with {fill}, and the weights, with up to {share} "
        "of a row's weight on blocked keys; rows {rows} are NaN.",
        **f,
    ),
    ("right", "on, bottom-right", "all zero"): lambda f: tr(
        "Three heatmaps of {n} queries over the keys '{keys}' ({pad} padded on the right, causal "
        "on, bottom-right): the mask with {blocked} of {cells} cells blocked (hatched), the "
        "scores with the blocked cells filled with {fill}, and the weights, with up to {share} "
        "of a row's weight on blocked keys; rows {rows} are all zero.",
        **f,
    ),
    ("left", "off", ""): lambda f: tr(
        "Three heatmaps of {n} queries over the keys '{keys}' ({pad} padded on the left, causal "
        "off): the mask with {blocked} of {cells} cells blocked (hatched), the scores with the "
        "blocked cells filled with {fill}, and the weights, with up to {share} of a row's weight "
        "on blocked keys.",
        **f,
    ),
    ("left", "off", "NaN"): lambda f: tr(
        "Three heatmaps of {n} queries over the keys '{keys}' ({pad} padded on the left, causal "
        "off): the mask with {blocked} of {cells} cells blocked (hatched), the scores with the "
        "blocked cells filled with {fill}, and the weights, with up to {share} of a row's weight "
        "on blocked keys; rows {rows} are NaN.",
        **f,
    ),
    ("left", "off", "all zero"): lambda f: tr(
        "Three heatmaps of {n} queries over the keys '{keys}' ({pad} padded on the left, causal "
        "off): the mask with {blocked} of {cells} cells blocked (hatched), the scores with the "
        "blocked cells filled with {fill}, and the weights, with up to {share} of a row's weight "
        "on blocked keys; rows {rows} are all zero.",
        **f,
    ),
    ("left", "on", ""): lambda f: tr(
        "Three heatmaps of {n} queries over the keys '{keys}' ({pad} padded on the left, causal "
        "on): the mask with {blocked} of {cells} cells blocked (hatched), the scores with the "
        "blocked cells filled with {fill}, and the weights, with up to {share} of a row's weight "
        "on blocked keys.",
        **f,
    ),
    ("left", "on", "NaN"): lambda f: tr(
        "Three heatmaps of {n} queries over the keys '{keys}' ({pad} padded on the left, causal "
        "on): the mask with {blocked} of {cells} cells blocked (hatched), the scores with the "
        "blocked cells filled with {fill}, and the weights, with up to {share} of a row's weight "
        "on blocked keys; rows {rows} are NaN.",
        **f,
    ),
    ("left", "on", "all zero"): lambda f: tr(
        "Three heatmaps of {n} queries over the keys '{keys}' ({pad} padded on the left, causal "
        "on): the mask with {blocked} of {cells} cells blocked (hatched), the scores with the "
        "blocked cells filled with {fill}, and the weights, with up to {share} of a row's weight "
        "on blocked keys; rows {rows} are all zero.",
        **f,
    ),
    ("left", "on, top-left", ""): lambda f: tr(
        "Three heatmaps of {n} queries over the keys '{keys}' ({pad} padded on the left, causal "
        "on, top-left): the mask with {blocked} of {cells} cells blocked (hatched), the scores "
        "with the blocked cells filled with {fill}, and the weights, with up to {share} of a "
        "row's weight on blocked keys.",
        **f,
    ),
    ("left", "on, top-left", "NaN"): lambda f: tr(
        "Three heatmaps of {n} queries over the keys '{keys}' ({pad} padded on the left, causal "
        "on, top-left): the mask with {blocked} of {cells} cells blocked (hatched), the scores "
        "with the blocked cells filled with {fill}, and the weights, with up to {share} of a "
        "row's weight on blocked keys; rows {rows} are NaN.",
        **f,
    ),
    ("left", "on, top-left", "all zero"): lambda f: tr(
        "Three heatmaps of {n} queries over the keys '{keys}' ({pad} padded on the left, causal "
        "on, top-left): the mask with {blocked} of {cells} cells blocked (hatched), the scores "
        "with the blocked cells filled with {fill}, and the weights, with up to {share} of a "
        "row's weight on blocked keys; rows {rows} are all zero.",
        **f,
    ),
    ("left", "on, bottom-right", ""): lambda f: tr(
        "Three heatmaps of {n} queries over the keys '{keys}' ({pad} padded on the left, causal "
        "on, bottom-right): the mask with {blocked} of {cells} cells blocked (hatched), the "
        "scores with the blocked cells filled with {fill}, and the weights, with up to {share} "
        "of a row's weight on blocked keys.",
        **f,
    ),
    ("left", "on, bottom-right", "NaN"): lambda f: tr(
        "Three heatmaps of {n} queries over the keys '{keys}' ({pad} padded on the left, causal "
        "on, bottom-right): the mask with {blocked} of {cells} cells blocked (hatched), the "
        "scores with the blocked cells filled with {fill}, and the weights, with up to {share} "
        "of a row's weight on blocked keys; rows {rows} are NaN.",
        **f,
    ),
    ("left", "on, bottom-right", "all zero"): lambda f: tr(
        "Three heatmaps of {n} queries over the keys '{keys}' ({pad} padded on the left, causal "
        "on, bottom-right): the mask with {blocked} of {cells} cells blocked (hatched), the "
        "scores with the blocked cells filled with {fill}, and the weights, with up to {share} "
        "of a row's weight on blocked keys; rows {rows} are all zero.",
        **f,
    ),
}


def _data_line(view: Any) -> str:
    """The caption's first line: the explorer's sentence, q and k."""
    f = dict(sentence=" ".join(view.sentence), E=view.width, seed=view.seed, width=view.width)
    if view.pad_length:
        return tr(
            "The explorer's own data, not the chapter's batch: the sentence '{sentence}' (padding replaces its "
            "last tokens) and random q, k of width E = {E} (seed {seed}); scores q·k/√{width}.",
            **f,
        )
    return tr(
        "The explorer's own data, not the chapter's batch: the sentence '{sentence}' and random q, k of width "
        "E = {E} (seed {seed}); scores q·k/√{width}.",
        **f,
    )


def _pairs_line(view: Any) -> str:
    """The caption's second line: the queries, the keys, the padding, the causal mask and what may attend."""
    L, S = view.mask.shape
    f = dict(L=L, last=L, S=S, pad=view.pad_length, allowed=int(view.mask.sum()), pairs=view.mask.size)
    return _PAIRS[view.pad_side, L < S, _causal(view)](f)


def _fill_line(view: Any) -> str:
    """The caption's third line: the fill and what it does, the weight on blocked keys, the row sums."""
    f = dict(
        share=f"{view.blocked_weight:.3f}",
        sums=", ".join("nan" if np.isnan(s) else f"{s:.2f}" for s in view.row_sums),
        rows=", ".join(str(i) for i in view.empty_rows),
    )
    return _FILLS[view.fill, bool(view.empty_rows)](f)


def _alt_text(view: Any) -> str:
    """The picture's alt text."""
    if view.nan_rows:
        said, rows = "NaN", view.nan_rows
    elif view.empty_rows and view.blocked_weight <= 0.005:
        said, rows = "all zero", view.empty_rows
    else:
        said, rows = "", ()
    f = dict(
        n=len(view.queries),
        keys=" ".join(view.tokens),
        pad=view.pad_length,
        blocked=int((~view.mask).sum()),
        cells=view.mask.size,
        fill=view.fill,
        share=f"{view.blocked_weight:.2f}",
        rows=", ".join(str(i) for i in rows),
    )
    return _ALTS[view.pad_side, _causal(view), said](f)


def _mask_renderer(
    tokens: Sequence[str], seed: int, pad_length: int = explore.DEFAULT_PAD_LENGTH
) -> Renderer:
    tokens = tuple(tokens)

    def view(mask: str, pad_side: str, fill: str, pad_length: int = pad_length) -> explore.MaskView:
        causal, n_queries, align = _mask_settings(mask, len(tokens))
        return explore.mask_view(
            pad_length, causal, tokens, seed, n_queries, align=align, pad_side=pad_side, fill=fill
        )

    return Renderer(view, lambda: _MaskPainter(tokens, seed))


def render_mask(
    pad_length: int,
    mask: str = "padding",
    *,
    pad_side: str = "right",
    fill: str = "-inf",
    tokens: Sequence[str] = SENTENCE,
    seed: int = 0,
) -> Frame:
    """Draw :func:`attncourse.explore.mask_view`: the mask, the masked scores, the weights.

    ``mask`` is one of :data:`MASK_KINDS`: padding alone, or with the causal mask (with ``L = S``,
    or with the last ``S/2`` tokens as queries and the diagonal top-left or bottom-right).
    """
    return _mask_renderer(tokens, seed)(mask=mask, pad_side=pad_side, pad_length=pad_length, fill=fill)


def mask_explorer(
    *,
    mask: str = "padding",
    pad_side: str = "right",
    pad_length: int = explore.DEFAULT_PAD_LENGTH,
    fill: str = "-inf",
    pad_lengths: Optional[Sequence[int]] = None,
    tokens: Sequence[str] = SENTENCE,
    seed: int = 0,
    mode: str = "auto",
) -> Explorer:
    """The mask (padding, causal, and its alignment), the padding side and length, and the fill value.

    Draws :func:`attncourse.explore.mask_view`: blocked cells are hatched and their scores
    replaced by the fill.  With ``-inf`` their weights are exactly 0 and a query with nothing
    left to see gets a row of zeros; ``0`` leaks weight to blocked keys; ``-1e9`` gives a row
    with nothing to see uniform weights over blocked keys; ``-1e9`` in float16 overflows to
    ``-inf``, and a plain softmax turns such a row into NaN.  Left padding with the causal mask
    makes those rows.  With ``L = S/2`` the queries are the last tokens, as with a KV cache:
    the bottom-right diagonal gives the rows of full causal attention, the top-left one
    (PyTorch's ``is_causal``) does not.

    Parameters
    ----------
    mask : one of MASK_KINDS
        The starting mask.
    pad_side : {"right", "left"}
    pad_length : int
        The starting number of padded positions, one of ``pad_lengths``.
    fill : one of ``attncourse.explore.FILLS``
    pad_lengths : sequence of int, optional
        The padding lengths offered.  Default: every length from 0 to ``S`` in live mode; in
        frames mode only ``pad_length`` (each value would multiply the frames the HTML book
        embeds), and then there is no padding-length control.
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
    if pad_lengths is None:
        pad_lengths = range(len(tokens) + 1) if resolve_mode(mode) == "live" else (pad_length,)
    lengths = tuple(sorted({int(n) for n in pad_lengths} | {int(pad_length)}))
    controls = [
        Control(
            "mask",
            tr("mask"),
            MASK_KINDS,
            mask,
            kind="toggle",
            labels=tuple(_mask_label(k) for k in MASK_KINDS),
        ),
        Control(
            "pad_side",
            tr("padding on the"),
            explore.PAD_SIDES,
            pad_side,
            kind="toggle",
            labels=tuple(_side_label(side) for side in explore.PAD_SIDES),
        ),
        Control("fill", tr("blocked scores filled with"), explore.FILLS, fill, kind="toggle"),
    ]
    if len(lengths) > 1:
        controls.insert(2, Control("pad_length", tr("padded tokens"), lengths, int(pad_length)))
    return Explorer(
        "mask",
        controls,
        _mask_renderer(tokens, seed, int(pad_length)),
        alt=tr("Three heatmaps: the boolean mask, the masked scores and the attention weights."),
        mode=mode,
    )
