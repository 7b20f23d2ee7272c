"""The self-attention explorer: pick a token of the sentence, see what it attends to."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..explore import self_attention as view_of
from ..i18n import tr
from ..plotting import attention_heatmap
from ..toy_data import SENTENCE
from ._core import Control, Explorer, Frame, caption
from ._paint import ACCENT, BAR_COLOUR, CellLabels, Painter, Renderer

__all__ = ["render_self_attention", "self_attention_explorer"]


class _SelfAttentionPainter(Painter):
    size = (9.8, 3.4)

    def __init__(self) -> None:
        from matplotlib.patches import Rectangle

        super().__init__()
        reference = view_of.self_attention_view(view_of.DEFAULT_TOKEN, "original")
        L = len(reference.tokens)
        self.ax_map, self.ax_row = self.fig.subplots(1, 2, gridspec_kw={"width_ratios": [1, 1.2]})
        attention_heatmap(
            reference.weights,
            reference.tokens,
            reference.tokens,
            ax=self.ax_map,
            annotate=False,
            colorbar=True,
        )
        self.ax_map.set_aspect("equal")
        self.ax_map.tick_params(labelsize=8)
        self.cells = CellLabels(self.ax_map, fontsize=7)
        self.cell_labels.append(self.cells)
        self.here = self.ax_map.add_patch(Rectangle((-0.5, -0.5), L, 1, fill=False, edgecolor=ACCENT, lw=2.5))
        self.bars = self.ax_row.bar(np.arange(L), reference.row, color=BAR_COLOUR)
        self.values = [self.ax_row.text(j, 0, "", ha="center", va="bottom", fontsize=8) for j in range(L)]
        self.ax_row.set_ylim(0, 1.05)
        self.ax_row.axhline(1 / L, color="0.4", lw=1, ls="--", label="uniform")
        self.ax_row.legend(fontsize=8, frameon=False, loc="upper right")
        self.ax_row.set_xlabel("key")
        self.title_map = self.ax_map.set_title(" ", fontsize=9)
        self.title_row = self.ax_row.set_title(" ", fontsize=9)
        self._animate(
            self.ax_map.images[0], self.here, *self.bars, *self.values, self.title_map, self.title_row
        )
        self._freeze(reference)

    def background_key(self, view: Any) -> Any:
        return view.order  # the tick labels follow the word order

    def paint(self, view: Any) -> str:
        tokens, L = list(view.tokens), len(view.tokens)
        self.ax_map.set_xticks(range(L), labels=tokens)
        self.ax_map.set_yticks(range(L), labels=tokens)
        self.ax_row.set_xticks(range(L), labels=tokens)
        self.ax_map.images[0].set_data(view.weights)
        self.cells.set(view.weights, "{:.2f}", 0.0, 1.0)
        self.here.set_y(view.token - 0.5)
        for bar, text, w in zip(self.bars, self.values, view.row):
            bar.set_height(w)
            text.set_position((bar.get_x() + bar.get_width() / 2, w + 0.02))
            text.set_text(f"{w:.2f}")
        word = tokens[view.token]
        self.title_map.set_text(f"softmax(QKᵀ/2), {view.order} order")
        self.title_row.set_text(f"'{word}' (position {view.token}) attends to")
        # The quotes are part of the word fields: a bare token such as "on" is also a catalog message
        # (an option label), and retranslate would translate it inside a line.
        return caption(
            tr(
                "Query {word} at position {position} of {sentence}: weights {weights}",
                word=f"'{word}'",
                position=str(view.token),
                sentence=f"'{' '.join(tokens)}'",
                weights=", ".join(f"{t} {w:.3f}" for t, w in zip(tokens, view.row)),
            ),
            tr(
                "Its output, the weighted sum of the value rows: [{output}]. Shuffle the words and each word "
                "keeps the same weights, moved with the words: self-attention alone does not see order.",
                output=", ".join(f"{x:.2f}" for x in view.out[view.token]),
            ),
        )

    def alt(self, view: Any) -> str:
        word, top = view.tokens[view.token], int(np.argmax(view.row))
        return tr(
            "A heatmap of the self-attention weights over {sentence} with the row of {word} (position "
            "{position}) outlined, and a bar chart of that row: its largest weight, {top}, is on {top_word} "
            "(position {top_position}).",
            sentence=f"'{' '.join(view.tokens)}'",
            word=f"'{word}'",
            position=str(view.token),
            top=f"{view.row[top]:.2f}",
            top_word=f"'{view.tokens[top]}'",
            top_position=str(top),
        )


def _renderer() -> Renderer:
    return Renderer(view_of.self_attention_view, _SelfAttentionPainter)


def render_self_attention(token: int = view_of.DEFAULT_TOKEN, order: str = "original") -> Frame:
    """Draw :func:`attncourse.explore.self_attention_view`: the weights map and one token's row."""
    return _renderer()(token=token, order=order)


def self_attention_explorer(
    *, token: int = view_of.DEFAULT_TOKEN, order: str = "original", mode: str = "auto"
) -> Explorer:
    """Pick a token of "the cat sat on the mat" (and the word order): what does it attend to?

    Draws :func:`attncourse.explore.self_attention_view`: chapter 4's model (its embedding
    table, its integer ``W_Q, W_K, W_V`` and the scale 1/2, from :mod:`attncourse.toy_data`), so
    the default view, the query "cat", shows the weights the chapter computes by hand.  The two
    copies of "the" attend identically, and shuffling the words only shuffles each row.

    Examples
    --------
    >>> ex = self_attention_explorer(mode="live")
    >>> ex.values()
    {'order': 'original', 'token': 1}
    """
    order_names = {"original": tr("original"), "shuffled": tr("shuffled")}
    return Explorer(
        "self_attention",
        [
            Control(
                "order",
                tr("word order"),
                tuple(view_of.ORDERS),
                order,
                kind="toggle",
                labels=tuple(order_names[o] for o in view_of.ORDERS),
            ),
            Control(
                "token", tr("query token (position)"), tuple(range(len(SENTENCE))), int(token), kind="int"
            ),
        ],
        _renderer(),
        alt=tr(
            "A heatmap of self-attention weights over a six-word sentence and a bar chart of one token's row."
        ),
        mode=mode,
    )
