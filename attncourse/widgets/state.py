"""The fixed-state explorer: a linear, delta or gated state after n pairs, its saved recall, and top-k."""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from ..explore import state as view_of
from ._core import Control, Explorer, Frame, caption
from ._paint import ACCENT, Painter, Renderer

__all__ = ["state_explorer", "render_state"]

_NAMES = {"linear": "linear attention", "delta": "DeltaNet", "gated": "Gated DeltaNet"}


class _StatePainter(Painter):
    size = (9.8, 2.8)
    blit = False  # three small panels: every frame drawn whole

    def __init__(self, recall: Mapping[str, Any]) -> None:
        super().__init__()
        reference = view_of.state_view(recall, "delta", max(view_of.STATE_SIZES), 4, 4)
        self.ax_state, self.ax_curve, self.ax_topk = self.fig.subplots(1, 3)
        self.heat = self.ax_state.imshow(reference.state, cmap="RdBu_r", vmin=-1, vmax=1)
        self.ax_state.set_xticks([]), self.ax_state.set_yticks([])
        self.state_title = self.ax_state.set_title(" ", fontsize=8)
        self.band = None
        (self.curve,) = self.ax_curve.plot([], [], "o-", color="#1f77b4", lw=1.5, ms=3)
        (self.here,) = self.ax_curve.plot([], [], "o", color=ACCENT, ms=7, mfc="none", mew=2)
        self.ax_curve.set_xscale("log", base=2)
        pairs = reference.saved_pairs
        self.ax_curve.set_xticks(pairs, [str(n) for n in pairs])
        self.ax_curve.set_xlim(min(pairs) / 1.4, max(pairs) * 1.4)
        self.ax_curve.set_ylim(0, 1.05)
        self.ax_curve.set_xlabel("stored pairs n", fontsize=8)
        self.ax_curve.set_ylabel("recall (saved runs)", fontsize=8)
        self.ax_curve.tick_params(labelsize=7)
        self.missing = self.ax_curve.text(
            0.5, 0.5, "", ha="center", va="center", fontsize=8, transform=self.ax_curve.transAxes
        )
        self.curve_title = self.ax_curve.set_title(" ", fontsize=8)
        self.scores = self.ax_topk.imshow(reference.scores, cmap="cividis")
        self.kept = self.ax_topk.imshow(np.zeros(reference.scores.shape + (4,)))
        self.ax_topk.set_xlabel("key", fontsize=8), self.ax_topk.set_ylabel("query", fontsize=8)
        self.ax_topk.set_xticks([]), self.ax_topk.set_yticks([])
        self.topk_title = self.ax_topk.set_title(" ", fontsize=8)
        self._freeze(reference)

    def paint(self, view: Any) -> str:
        E, n = view.state_size, view.pairs
        bound = max(float(np.abs(view.state).max()), 1e-9)
        self.heat.set_data(view.state)
        self.heat.set_clim(-bound, bound)
        self.heat.set_extent((-0.5, E - 0.5, E - 0.5, -0.5))
        self.ax_state.set_xlim(-0.5, E - 0.5), self.ax_state.set_ylim(E - 0.5, -0.5)
        self.state_title.set_text(f"{_NAMES[view.method]}: state {E} x {E} after {n} pair{'s' * (n > 1)}")
        if self.band is not None:
            self.band.remove()
            self.band = None
        if view.saved_mean is None:
            self.curve.set_data([], []), self.here.set_data([], [])
            self.missing.set_text(f"not trained at E = {E}")
            self.curve_title.set_text(f"{_NAMES[view.method]}, E = {E}")
        else:
            x = np.asarray(view.saved_pairs, dtype=float)
            self.curve.set_data(x, view.saved_mean)
            self.band = self.ax_curve.fill_between(
                x, view.saved_min, view.saved_max, color="#1f77b4", alpha=0.2
            )
            self.here.set_data([n], [view.accuracy] if view.accuracy is not None else [np.nan])
            self.missing.set_text("")
            self.curve_title.set_text(f"{_NAMES[view.method]}, E = {E}: three seeds")
        self.scores.set_data(view.scores)
        self.scores.set_clim(np.nanmin(view.scores), np.nanmax(view.scores))
        overlay = np.zeros(view.kept.shape + (4,))
        overlay[view.kept] = (0.84, 0.15, 0.16, 0.75)  # the accent, over the kept keys
        self.kept.set_data(overlay)
        self.topk_title.set_text(f"top-{view.top_k} keys kept per query (red)")
        if view.accuracy is None:
            acc = f"no saved runs of {_NAMES[view.method]} at E = {E}"
        else:
            acc = (
                f"recall accuracy in the saved runs {view.accuracy:.2f} (mean over three seeds; chance 0.016)"
            )
        keys = (
            "one random unit key with a random value"
            if n == 1
            else f"{n} random unit keys with random values"
        )
        return caption(
            f"{_NAMES[view.method]} with a state of {E} x {E} ({E * E} numbers), {n} stored pair"
            f"{'s' * (n > 1)}: {acc}.",
            f"The heat map is the state after writing {keys}; reading each "
            f"key back misses its value by {100 * view.recall_error:.0f}% on average. Right: a 12-token causal "
            f"score matrix; each query keeps its {view.top_k} highest-scoring allowed keys.",
        )

    def alt(self, view: Any) -> str:
        pairs = f"{view.pairs} pair{'s' * (view.pairs > 1)}"
        if view.accuracy is None:
            curve = "an empty recall plot (no saved runs at this state size)"
        else:
            curve = f"recall accuracy against stored pairs with the current number circled (saved recall {view.accuracy:.2f})"
        return (
            f"Three panels: the {view.state_size} by {view.state_size} state of {_NAMES[view.method]} after "
            f"{pairs} as a heat map; {curve}; and a causal score matrix with each query's {view.top_k} kept "
            "keys in red."
        )


def _renderer(recall: Mapping[str, Any]) -> Renderer:
    return Renderer(
        lambda method, state_size, pairs, top_k: view_of.state_view(recall, method, state_size, pairs, top_k),
        lambda: _StatePainter(recall),
    )


def render_state(
    recall: Mapping[str, Any], method: str = "delta", state_size: int = 8, pairs: int = 4, top_k: int = 4
) -> Frame:
    """Draw :func:`attncourse.explore.state_view` for one method, state size, number of pairs and top-k."""
    return _renderer(recall)(method=method, state_size=state_size, pairs=pairs, top_k=top_k)


def state_explorer(
    recall: Mapping[str, Any],
    *,
    method: str = "delta",
    state_size: int = 8,
    pairs: int = 4,
    top_k: int = 4,
    mode: str = "auto",
) -> Explorer:
    """Pick a method, a state size, a number of stored pairs and top-k: the state, its recall, the kept keys.

    Draws :func:`attncourse.explore.state_view` from what ``recall_state_size.py`` saved.

    Examples
    --------
    >>> runs = {"pairs": [1, 4, 16], "recall": {"delta": {"8": [[1.0, 0.5, 0.2]]}}}
    >>> state_explorer(runs, mode="live").values()
    {'method': 'delta', 'state_size': 8, 'pairs': 4, 'top_k': 4}
    """
    return Explorer(
        "state",
        [
            Control("method", "method", view_of.STATE_METHODS, method, kind="toggle"),
            Control("state_size", "E", view_of.STATE_SIZES, int(state_size), kind="toggle"),
            Control("pairs", "pairs", view_of.STATE_PAIRS, int(pairs), kind="toggle"),
            Control("top_k", "top-k", view_of.STATE_TOP_K, int(top_k), kind="toggle"),
        ],
        _renderer(recall),
        alt="A fixed-size state after storing key/value pairs, its saved recall accuracy, and top-k's kept keys.",
        mode=mode,
    )
