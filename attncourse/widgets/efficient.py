"""The efficient-attention explorer: the online softmax block by block, and what the block size trades."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..explore import efficient as view_of
from ..i18n import tr
from ._core import Control, DependentControl, Explorer, Frame, caption
from ._paint import ACCENT, BAR_COLOUR, LINE_COLOURS, Painter, Renderer

__all__ = ["render_efficient", "efficient_explorer"]

_UNSEEN = "0.82"


class _EfficientPainter(Painter):
    size = (9.8, 3.3)
    blit = False

    def __init__(self) -> None:
        from matplotlib.patches import Rectangle

        super().__init__()
        reference = view_of.efficient_view(view_of.DEFAULT_BLOCK_SIZE, 1)
        S = view_of.ROW_LENGTH
        self.ax_scores, self.ax_weights, ax_cost = self.fig.subplots(
            1, 3, gridspec_kw={"width_ratios": [1.3, 1.3, 1]}
        )
        keys = np.arange(S)
        self.bars = self.ax_scores.bar(keys, reference.scores, color=_UNSEEN, width=0.85)
        self.ax_scores.axhline(0, color="0.3", lw=0.8)
        (self.max_line,) = self.ax_scores.plot(
            [-0.5, S - 0.5], [0, 0], color=ACCENT, lw=1.2, ls="--", label="running max m"
        )
        self.block = self.ax_scores.add_patch(
            Rectangle((-0.5, 0), 1, 1, fill=False, edgecolor=ACCENT, lw=1.5)
        )
        self.ax_scores.set_ylim(min(0.0, reference.scores.min()) - 0.3, reference.scores.max() + 1.6)
        self.ax_scores.set_xticks(keys, labels=[str(j) for j in keys])
        self.ax_scores.legend(fontsize=7, loc="upper left", frameon=False)
        self.ax_scores.set_xlabel("key")
        self.title_scores = self.ax_scores.set_title(" ", fontsize=9)
        self.bars_weights = self.ax_weights.bar(
            keys, np.zeros(S), color=BAR_COLOUR, width=0.85, label="so far"
        )
        self.ax_weights.plot(
            keys, reference.weights, "_", color="black", ms=7, mew=1.5, label="exact softmax"
        )
        self.ax_weights.set_ylim(0, 1.05)
        self.ax_weights.set_xticks(keys, labels=[str(j) for j in keys])
        self.ax_weights.legend(fontsize=7, loc="upper left", frameon=False)
        self.ax_weights.set_xlabel("key")
        self.title_weights = self.ax_weights.set_title(" ", fontsize=9)
        sizes = np.array(view_of.BLOCK_SIZES)
        ax_cost.plot(sizes, sizes, "o-", color=LINE_COLOURS[0], ms=3, label="scores held per query (b)")
        ax_cost.plot(
            sizes,
            [view_of.n_blocks(b) for b in sizes],
            "s-",
            color=LINE_COLOURS[1],
            ms=3,
            label="tiles, loop steps (S/b)",
        )
        (self.here,) = ax_cost.plot([1, 1], [1, 1], "o", ms=9, mfc="none", mec=ACCENT, mew=2)
        ax_cost.set_xscale("log", base=2)
        ax_cost.set_yscale("log", base=2)
        ax_cost.set_xticks(sizes, labels=[str(b) for b in sizes])
        ax_cost.set_xlabel("block size b")
        ax_cost.legend(fontsize=7, loc="upper center", frameon=False)
        ax_cost.set_ylim(0.7, 2 * S)
        ax_cost.set_title(f"memory against steps, S = {S}", fontsize=9)
        self._freeze(reference)

    def paint(self, view: Any) -> str:
        b, seen = view.block_size, min(view.step * view.block_size, view_of.ROW_LENGTH)
        start = (view.step - 1) * b
        for j, bar in enumerate(self.bars):
            bar.set_color(BAR_COLOUR if j < seen else _UNSEEN)
        m = float(view.running_max[-1])
        self.max_line.set_ydata([m, m])
        self.block.set_bounds(
            start - 0.5, self.ax_scores.get_ylim()[0], b, np.diff(self.ax_scores.get_ylim())[0]
        )
        self.title_scores.set_text(
            f"{view.step} of {view.n_blocks} blocks seen: m = {m:g}, ℓ = {view.running_sum[-1]:.4f}"
        )
        for bar, w in zip(self.bars_weights, view.weights_so_far):
            bar.set_height(w)
        self.title_weights.set_text(f"weights so far; output {view.out_so_far:.4f} (exact {view.out:.4f})")
        self.here.set_data([b, b], [b, view.n_blocks])
        return caption(
            tr(
                "Block size {b}, after {step} of {n} blocks (keys 0 to {last} seen): running max m = {m}, "
                "running sum ℓ = {ell}, output so far {out} (exact {exact}).",
                b=b,
                step=view.step,
                n=view.n_blocks,
                last=seen - 1,
                m=f"{m:g}",
                ell=f"{view.running_sum[-1]:.4f}",
                out=f"{view.out_so_far:.4f}",
                exact=f"{view.out:.4f}",
            ),
            self._history(view),
        )

    @staticmethod
    def _history(view: Any) -> str:
        """The caption's second line: the running values after each block, and what the loop holds."""
        fields = dict(
            maxes=", ".join(f"{x:g}" for x in view.running_max),
            sums=", ".join(f"{x:.4f}" for x in view.running_sum),
            outs=", ".join(f"{x:.4f}" for x in view.running_out),
            held=view.floats_held,
            full=view.floats_full,
            n=view.n_blocks,
        )
        one_score, one_step = view.floats_held == 1, view.n_blocks == 1
        if one_score and one_step:
            return tr(
                "After each block: m = {maxes}; ℓ = {sums}; output {outs}.  Held at once: {held} score per "
                "query of {full}; the loop takes {n} step.",
                **fields,
            )
        if one_score:
            return tr(
                "After each block: m = {maxes}; ℓ = {sums}; output {outs}.  Held at once: {held} score per "
                "query of {full}; the loop takes {n} steps.",
                **fields,
            )
        if one_step:
            return tr(
                "After each block: m = {maxes}; ℓ = {sums}; output {outs}.  Held at once: {held} scores per "
                "query of {full}; the loop takes {n} step.",
                **fields,
            )
        return tr(
            "After each block: m = {maxes}; ℓ = {sums}; output {outs}.  Held at once: {held} scores per "
            "query of {full}; the loop takes {n} steps.",
            **fields,
        )

    def alt(self, view: Any) -> str:
        seen = min(view.step * view.block_size, view_of.ROW_LENGTH)
        fields = dict(
            b=view.block_size,
            step=view.step,
            n=view.n_blocks,
            S=view_of.ROW_LENGTH,
            scores=", ".join(f"{x:g}" for x in view.scores),
            seen=seen,
            m=f"{view.running_max[-1]:.2f}",
        )
        if view.step == view.n_blocks:
            return tr(
                "The online softmax with block size {b}, after {step} of {n} blocks: a bar chart of the {S} "
                "scores {scores} with the first {seen} seen and the running maximum {m} as a line; the weights "
                "so far, equal to the exact softmax; and, against the block size, the scores held per query "
                "rising while the loop's steps fall.",
                **fields,
            )
        return tr(
            "The online softmax with block size {b}, after {step} of {n} blocks: a bar chart of the {S} "
            "scores {scores} with the first {seen} seen and the running maximum {m} as a line; the weights "
            "so far, not yet equal to the exact softmax; and, against the block size, the scores held per "
            "query rising while the loop's steps fall.",
            **fields,
        )


def _renderer() -> Renderer:
    return Renderer(lambda block_size, step: view_of.efficient_view(block_size, step), _EfficientPainter)


def render_efficient(block_size: int = view_of.DEFAULT_BLOCK_SIZE, step: int = 1) -> Frame:
    """Draw :func:`attncourse.explore.efficient_view`: the row block by block, the weights, the trade-off."""
    return _renderer()(block_size=block_size, step=step)


def _step_control(values: dict) -> Control:
    total = view_of.n_blocks(values["block_size"])
    return Control("step", tr("blocks seen"), tuple(range(1, total + 1)), 1)


def efficient_explorer(*, block_size: int = view_of.DEFAULT_BLOCK_SIZE, mode: str = "auto") -> Explorer:
    """Block size and step: the online softmax over chapter 9's row [3, 1, 4, 1, 5], block by block.

    Draws :func:`attncourse.explore.efficient_view`: the running maximum and sum after each
    block, the weights so far against the exact softmax (equal after the last block), the output
    so far with one value per key (``toy_data.ONLINE_VALUES``), and what the block size trades:
    scores held at once per query against steps of the loop.  Block size 1 is the chapter's
    element-by-element walk-through, 2 its blocks [3, 1], [4, 1], [5] (the default), 5 the whole
    row at once.  The ``step`` slider offers as many steps as the block size gives blocks.

    Examples
    --------
    >>> ex = efficient_explorer(mode="live")
    >>> ex.values()
    {'block_size': 2, 'step': 1}
    >>> ex.controls["block_size"].value = 1
    >>> ex.specs[1].values
    (1, 2, 3, 4, 5)
    """
    return Explorer(
        "efficient",
        [
            Control("block_size", tr("block size"), view_of.BLOCK_SIZES, int(block_size)),
            DependentControl("step", _step_control),
        ],
        _renderer(),
        alt=tr("The online softmax over a row of scores, block by block, and the block size's trade-off."),
        mode=mode,
    )
