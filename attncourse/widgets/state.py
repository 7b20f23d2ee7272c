"""The fixed-state explorer: a linear (elu + 1) or delta state after n random pairs, the trained models' saved
recall, and the trained stack's saved accuracy under top-k attention."""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from ..explore import state as view_of
from ..i18n import tr
from ._core import Control, Explorer, Frame, caption
from ._paint import ACCENT, Painter, Renderer

__all__ = ["state_explorer", "render_state"]

_NAMES = {"linear": "linear attention", "delta": "DeltaNet"}  # in the plots' titles (English)
# the top-k panel's rankings: the exact scores, then the rank-r stand-in indexers
# (colour, marker, line width): the exact ranking thick and grey underneath, so a rank-r indexer that
# ranks exactly (rank 4 = the full score at the stack's width 4) is seen lying on it
_RANKING_STYLE = {
    "exact": ("#aaaaaa", "o", 4.0),
    "rank-1": ("#440154", "s", 1.2),
    "rank-2": ("#21918c", "^", 1.2),
    "rank-4": ("#d8a600", "v", 1.2),
}


class _StatePainter(Painter):
    size = (10.6, 2.9)
    blit = False  # three small panels: every frame drawn whole

    def __init__(self, recall: Mapping[str, Any], topk: Mapping[str, Any]) -> None:
        super().__init__()
        reference = view_of.state_view(recall, topk, "delta", max(view_of.STATE_SIZES), 4, 4)
        self.ax_state, self.ax_curve, self.ax_topk = self.fig.subplots(1, 3)
        self.heat = self.ax_state.imshow(reference.state, cmap="RdBu_r", vmin=-1, vmax=1)
        self.fig.colorbar(self.heat, ax=self.ax_state, shrink=0.8).ax.tick_params(labelsize=7)
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
        ks = reference.topk_ks
        for name, curve in reference.topk_curves.items():  # the saved runs: the same in every frame
            colour, marker, width = _RANKING_STYLE.get(name, ("grey", ".", 1.2))
            self.ax_topk.plot(ks, curve, marker=marker, color=colour, lw=width, ms=3, label=name)
        self.ax_topk.set_xscale("log", base=2)
        self.ax_topk.set_xticks(ks, [str(k) for k in ks])
        self.ax_topk.set_xlim(min(ks) / 1.4, max(ks) * 1.4)
        self.ax_topk.set_ylim(0, 1.05)
        self.ax_topk.set_xlabel("top_k: keys read per query", fontsize=8)
        self.ax_topk.set_ylabel("accuracy (saved runs)", fontsize=8)
        self.ax_topk.tick_params(labelsize=7)
        self.ax_topk.legend(fontsize=7, loc="center left", title="ranked by", title_fontsize=7)
        self.topk_here = self.ax_topk.axvline(4, color=ACCENT, lw=1.5, ls="--")
        self.ax_topk.set_title(
            f"trained 4-layer softmax stack, {reference.topk_pairs} pairs: top-k", fontsize=8
        )
        self._freeze(reference)

    def paint(self, view: Any) -> str:
        E, n = view.state_size, view.pairs
        bound = max(float(np.abs(view.state).max()), 1e-9)
        self.heat.set_data(view.state)
        self.heat.set_clim(-bound, bound)
        self.heat.set_extent((-0.5, E - 0.5, E - 0.5, -0.5))
        self.ax_state.set_xlim(-0.5, E - 0.5), self.ax_state.set_ylim(E - 0.5, -0.5)
        self.state_title.set_text(f"{_NAMES[view.method]}, {n} random pair{'s' * (n > 1)}: state {E} x {E}")
        if self.band is not None:
            self.band.remove()
            self.band = None
        if view.saved_mean is None:
            self.curve.set_data([], []), self.here.set_data([], [])
            self.missing.set_text(f"not trained at E = {E}")
            self.curve_title.set_text(f"trained {_NAMES[view.method]}, E = {E}")
        else:
            x = np.asarray(view.saved_pairs, dtype=float)
            self.curve.set_data(x, view.saved_mean)
            self.band = self.ax_curve.fill_between(
                x, view.saved_min, view.saved_max, color="#1f77b4", alpha=0.2
            )
            self.here.set_data([n], [view.accuracy] if view.accuracy is not None else [np.nan])
            self.missing.set_text("")
            self.curve_title.set_text(f"trained {_NAMES[view.method]}, E = {E}: three seeds")
        self.topk_here.set_xdata([view.top_k, view.top_k])
        return caption(_summary(view), _left(view), _right(view))

    def alt(self, view: Any) -> str:
        fields = dict(rows=str(view.state_size), cols=str(view.state_size), k=str(view.top_k))
        if view.pairs > 1:
            fields["n"] = str(view.pairs)
        if view.accuracy is not None:
            fields["recall"] = f"{view.accuracy:.2f}"
        if view.method == "linear":
            return _linear_alt(view, fields)
        return _delta_alt(view, fields)


def _linear_alt(view: Any, fields: dict) -> str:
    """The alt text of a frame of linear attention."""
    if view.accuracy is None and view.pairs == 1:
        return tr(
            "Three panels: the {rows} by {cols} state of linear attention after 1 random pair as a heat map; "
            "an empty recall plot (no saved runs at this state size); and the trained stack's saved accuracy "
            "against top_k for the exact ranking and each stand-in indexer, with top_k = {k} marked.",
            **fields,
        )
    if view.accuracy is None:
        return tr(
            "Three panels: the {rows} by {cols} state of linear attention after {n} random pairs as a heat "
            "map; an empty recall plot (no saved runs at this state size); and the trained stack's saved "
            "accuracy against top_k for the exact ranking and each stand-in indexer, with top_k = {k} marked.",
            **fields,
        )
    if view.pairs == 1:
        return tr(
            "Three panels: the {rows} by {cols} state of linear attention after 1 random pair as a heat map; "
            "the trained models' recall accuracy against stored pairs with the current number circled (saved "
            "recall {recall}); and the trained stack's saved accuracy against top_k for the exact ranking and "
            "each stand-in indexer, with top_k = {k} marked.",
            **fields,
        )
    return tr(
        "Three panels: the {rows} by {cols} state of linear attention after {n} random pairs as a heat map; "
        "the trained models' recall accuracy against stored pairs with the current number circled (saved "
        "recall {recall}); and the trained stack's saved accuracy against top_k for the exact ranking and "
        "each stand-in indexer, with top_k = {k} marked.",
        **fields,
    )


def _delta_alt(view: Any, fields: dict) -> str:
    """The alt text of a frame of DeltaNet."""
    if view.accuracy is None and view.pairs == 1:
        return tr(
            "Three panels: the {rows} by {cols} state of DeltaNet after 1 random pair as a heat map; an empty "
            "recall plot (no saved runs at this state size); and the trained stack's saved accuracy against "
            "top_k for the exact ranking and each stand-in indexer, with top_k = {k} marked.",
            **fields,
        )
    if view.accuracy is None:
        return tr(
            "Three panels: the {rows} by {cols} state of DeltaNet after {n} random pairs as a heat map; an "
            "empty recall plot (no saved runs at this state size); and the trained stack's saved accuracy "
            "against top_k for the exact ranking and each stand-in indexer, with top_k = {k} marked.",
            **fields,
        )
    if view.pairs == 1:
        return tr(
            "Three panels: the {rows} by {cols} state of DeltaNet after 1 random pair as a heat map; the "
            "trained models' recall accuracy against stored pairs with the current number circled (saved "
            "recall {recall}); and the trained stack's saved accuracy against top_k for the exact ranking and "
            "each stand-in indexer, with top_k = {k} marked.",
            **fields,
        )
    return tr(
        "Three panels: the {rows} by {cols} state of DeltaNet after {n} random pairs as a heat map; the "
        "trained models' recall accuracy against stored pairs with the current number circled (saved recall "
        "{recall}); and the trained stack's saved accuracy against top_k for the exact ranking and each "
        "stand-in indexer, with top_k = {k} marked.",
        **fields,
    )


def _method_label(method: str) -> str:
    """One of ``STATE_METHODS`` as an option label: "linear" in the reader's language, "delta" as is."""
    return tr("linear") if method == "linear" else method


def _summary(view: Any) -> str:
    """The caption's first line: the method, its state's size, the stored pairs and the saved recall."""
    E, n = view.state_size, view.pairs
    fields = dict(rows=str(E), cols=str(E), numbers=str(E * E), n=str(n))
    linear = view.method == "linear"
    if view.accuracy is None:  # the saved runs have no model of this method and size
        fields["E"] = str(E)
        if linear and n == 1:
            return tr(
                "linear attention with a state of {rows} x {cols} ({numbers} numbers, plus the normaliser's "
                "{z}), 1 stored pair: no saved runs of linear attention at E = {E}.",
                z=str(E),
                **fields,
            )
        if linear:
            return tr(
                "linear attention with a state of {rows} x {cols} ({numbers} numbers, plus the normaliser's "
                "{z}), {n} stored pairs: no saved runs of linear attention at E = {E}.",
                z=str(E),
                **fields,
            )
        if n == 1:
            return tr(
                "DeltaNet with a state of {rows} x {cols} ({numbers} numbers), 1 stored pair: no saved runs "
                "of DeltaNet at E = {E}.",
                **fields,
            )
        return tr(
            "DeltaNet with a state of {rows} x {cols} ({numbers} numbers), {n} stored pairs: no saved runs "
            "of DeltaNet at E = {E}.",
            **fields,
        )
    fields["accuracy"] = f"{view.accuracy:.2f}"
    if linear and n == 1:
        return tr(
            "linear attention with a state of {rows} x {cols} ({numbers} numbers, plus the normaliser's {z}), "
            "1 stored pair: recall accuracy of the trained models {accuracy} (mean over three seeds; chance "
            "0.016).",
            z=str(E),
            **fields,
        )
    if linear:
        return tr(
            "linear attention with a state of {rows} x {cols} ({numbers} numbers, plus the normaliser's {z}), "
            "{n} stored pairs: recall accuracy of the trained models {accuracy} (mean over three seeds; "
            "chance 0.016).",
            z=str(E),
            **fields,
        )
    if n == 1:
        return tr(
            "DeltaNet with a state of {rows} x {cols} ({numbers} numbers), 1 stored pair: recall accuracy of "
            "the trained models {accuracy} (mean over three seeds; chance 0.016).",
            **fields,
        )
    return tr(
        "DeltaNet with a state of {rows} x {cols} ({numbers} numbers), {n} stored pairs: recall accuracy of "
        "the trained models {accuracy} (mean over three seeds; chance 0.016).",
        **fields,
    )


def _left(view: Any) -> str:
    """The caption's second line: how the state on the left was written, and how well it reads back."""
    fields = dict(error=f"{100 * view.recall_error:.0f}")
    linear = view.method == "linear"
    if view.key_overlap is None:  # one pair: no two keys to compare
        if linear:
            return tr(
                "Left: not a trained model's state (the runs save none) but the state S after writing one "
                "random unit key with a random value, the keys through the chapter's feature map, elu + 1 (a "
                "key k reads phi(k) S / (phi(k) . z)), each frame on its own colour scale; reading each key "
                "back misses its value by {error}% on average (a read of all zeros would miss by 100%).",
                **fields,
            )
        return tr(
            "Left: not a trained model's state (the runs save none) but the state S after writing one random "
            "unit key with a random value (the delta rule with beta = 1), each frame on its own colour scale; "
            "reading each key back misses its value by {error}% on average (a read of all zeros would miss by "
            "100%).",
            **fields,
        )
    fields.update(n=str(view.pairs), cosine=f"{view.key_overlap:.2f}")
    if linear:
        return tr(
            "Left: not a trained model's state (the runs save none) but the state S after writing {n} random "
            "unit keys with random values, the keys through the chapter's feature map, elu + 1 (a key k reads "
            "phi(k) S / (phi(k) . z)), each frame on its own colour scale; reading each key back misses its "
            "value by {error}% on average (a read of all zeros would miss by 100%); two written features have "
            "a cosine of {cosine} on average.",
            **fields,
        )
    return tr(
        "Left: not a trained model's state (the runs save none) but the state S after writing {n} random unit "
        "keys with random values (the delta rule with beta = 1), each frame on its own colour scale; reading "
        "each key back misses its value by {error}% on average (a read of all zeros would miss by 100%); two "
        "written keys have a cosine of {cosine} on average.",
        **fields,
    )


def _right(view: Any) -> str:
    """The caption's third line: the saved top-k runs at the chosen top_k (the rankings named as in the legend)."""
    return tr(
        "Right: the saved top-k runs (the chapter's four-layer all-softmax stack, {pairs} pairs, {length} "
        "positions, mean over three seeds); at top_k = {k}, ranked by {accuracies}.",
        pairs=str(view.topk_pairs),
        length=str(view.topk_length),
        k=str(view.top_k),
        accuracies=", ".join(f"{name} {a:.2f}" for name, a in view.topk_accuracy.items()),
    )


def _renderer(recall: Mapping[str, Any], topk: Mapping[str, Any]) -> Renderer:
    return Renderer(
        lambda method, state_size, pairs, top_k: view_of.state_view(
            recall, topk, method, state_size, pairs, top_k
        ),
        lambda: _StatePainter(recall, topk),
    )


def render_state(
    recall: Mapping[str, Any],
    topk: Mapping[str, Any],
    method: str = "delta",
    state_size: int = 8,
    pairs: int = 4,
    top_k: int = 4,
) -> Frame:
    """Draw :func:`attncourse.explore.state_view` for one method, state size, number of pairs and top-k."""
    return _renderer(recall, topk)(method=method, state_size=state_size, pairs=pairs, top_k=top_k)


def state_explorer(
    recall: Mapping[str, Any],
    topk: Mapping[str, Any],
    *,
    method: str = "delta",
    state_size: int = 8,
    pairs: int = 4,
    top_k: int = 4,
    mode: str = "auto",
) -> Explorer:
    """Pick a method, a state size, a number of stored pairs and top-k: a state, the saved recall, top-k.

    Draws :func:`attncourse.explore.state_view` from what ``recall_state_size.py`` saved (``recall``)
    and the ``"topk"`` runs ``recall_hybrid.py`` saved (``topk``).

    Examples
    --------
    >>> runs = {"pairs": [1, 4, 16], "recall": {"delta": {"8": [[1.0, 0.5, 0.2]]}}}
    >>> topk = {"ks": [1, 4, 8, 16], "ranks": [1], "n_pairs": 16, "L": 48,
    ...         "exact": [[1.0, 1.0, 1.0, 1.0]], "indexer": {"1": [[0.1, 0.3, 0.5, 0.8]]}}
    >>> state_explorer(runs, topk, mode="live").values()
    {'method': 'delta', 'state_size': 8, 'pairs': 4, 'top_k': 4}
    """
    return Explorer(
        "state",
        [
            Control(
                "method",
                tr("update rule"),  # not "method": the catalog's "method" is the grader's status
                view_of.STATE_METHODS,
                method,
                kind="toggle",
                labels=tuple(_method_label(m) for m in view_of.STATE_METHODS),
            ),
            Control("state_size", "E", view_of.STATE_SIZES, int(state_size), kind="toggle"),
            Control("pairs", tr("pairs"), view_of.STATE_PAIRS, int(pairs), kind="toggle"),
            Control("top_k", tr("top-k"), view_of.STATE_TOP_K, int(top_k), kind="toggle"),
        ],
        _renderer(recall, topk),
        alt=tr(
            "A fixed-size state after storing random key/value pairs, the trained models' saved recall "
            "accuracy, and the trained stack's saved accuracy under top-k attention."
        ),
        mode=mode,
    )
