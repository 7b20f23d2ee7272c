"""The scaling explorer: chapter 3's random rows of weights without and with the 1/sqrt(d_k) scale."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence, Tuple

from .. import explore
from ..i18n import tr
from ..plotting import attention_heatmap
from ._core import Control, Explorer, Frame, caption
from ._paint import LINE_COLOURS, CellLabels, Painter, Renderer

__all__ = ["render_scaling", "scaling_explorer"]


@dataclass(frozen=True, eq=False)
class _Shown:
    """A scaling view and the variant on screen."""

    view: explore.ScalingView
    variant: str


class _ScalingPainter(Painter):
    size = (9.8, 3.0)

    def __init__(self, seed: int, d_k_values: Tuple[int, ...]) -> None:
        super().__init__()
        reference = explore.scaling_view(explore.DEFAULT_D_K, seed)
        L, S = reference.weights["scaled"].shape
        queries, keys = [f"row {i}" for i in range(L)], [str(j) for j in range(S)]
        ax_map, ax_curve = self.fig.subplots(1, 2, gridspec_kw={"width_ratios": [1.25, 1]})
        attention_heatmap(
            reference.weights["scaled"], queries, keys, ax=ax_map, annotate=False, colorbar=True
        )
        ax_map.tick_params(labelsize=7)
        ax_map.set_xlabel("key (each row has its own 16)", fontsize=8)
        self.image = ax_map.images[0]
        self.cells = CellLabels(ax_map, fontsize=5.5)
        self.cell_labels.append(self.cells)
        self.title = ax_map.set_title(" ", fontsize=9)
        views = [explore.scaling_view(d, seed) for d in d_k_values]
        self.markers = {}
        for name, colour in zip(explore.VARIANTS, LINE_COLOURS):
            ax_curve.plot(
                d_k_values, [v.stats[name].entropy for v in views], "o-", ms=3, color=colour, label=name
            )
            (self.markers[name],) = ax_curve.plot([1], [0], "o", ms=10, mfc="none", mec=colour, mew=2.5)
        ax_curve.axhline(reference.max_entropy, color="0.5", lw=0.8, ls="--")
        self.here = ax_curve.axvline(1, color="0.5", lw=0.8)
        ax_curve.set_xscale("log", base=2)
        ax_curve.set_ylim(0, reference.max_entropy * 1.08)
        ax_curve.set_xlabel("d_k")
        ax_curve.set_title("mean entropy (nats); dashed: uniform", fontsize=9)
        ax_curve.legend(fontsize=8, frameon=False, loc="lower left")
        self.suptitle = self.fig.suptitle(" ", fontsize=10)
        self._animate(
            self.image, *ax_map.spines.values(), self.title, self.here, *self.markers.values(), self.suptitle
        )
        self._freeze(_Shown(reference, "scaled"))

    def paint(self, shown: Any) -> str:
        view, variant = shown.view, shown.variant
        stats = view.stats[variant]
        formula = {"unscaled": "q·k", "scaled": "q·k / √d_k"}[variant]
        self.image.set_data(view.weights[variant])
        self.cells.set(view.weights[variant], "{:.1f}", 0.0, 1.0)
        self.title.set_text(
            f"{variant}: softmax({formula})\nmax {stats.max_weight:.2f} · entropy {stats.entropy:.2f} · "
            f"mean ‖J‖ {stats.grad_norm:.2f}"
        )
        for name, marker in self.markers.items():
            marker.set_data([view.d_k], [view.stats[name].entropy])
            marker.set_visible(name == variant)
        self.here.set_xdata([view.d_k, view.d_k])
        self.suptitle.set_text(f"d_k = {view.d_k}: score spread {stats.score_std:.2f} {variant}")
        L, S = view.weights["scaled"].shape
        fields = dict(d_k=str(view.d_k), n=str(view.n_queries_averaged), S=str(S), L=str(L))
        if variant == "unscaled":
            heading = tr(
                "d_k = {d_k}, unscaled scores; means over chapter 3's {n} random rows, each a query against "
                "its own {S} keys (the map shows the first {L}).",
                **fields,
            )
        else:
            heading = tr(
                "d_k = {d_k}, scaled scores; means over chapter 3's {n} random rows, each a query against "
                "its own {S} keys (the map shows the first {L}).",
                **fields,
            )
        return caption(heading, *(_stats_line(name, view) for name in explore.VARIANTS))

    def alt(self, shown: Any) -> str:
        view, variant = shown.view, shown.variant
        stats = view.stats[variant]
        fields = dict(d_k=str(view.d_k), largest=f"{stats.max_weight:.2f}", entropy=f"{stats.entropy:.2f}")
        if variant == "unscaled":
            return tr(
                "At d_k = {d_k}, unscaled: a heatmap of the attention weights of 6 rows, each a query over "
                "its own 16 keys (mean largest weight {largest}), and the mean entropy against d_k from 1 to "
                "1024, the unscaled curve falling, the scaled one flat (here {entropy} nats unscaled).",
                **fields,
            )
        return tr(
            "At d_k = {d_k}, scaled: a heatmap of the attention weights of 6 rows, each a query over its "
            "own 16 keys (mean largest weight {largest}), and the mean entropy against d_k from 1 to 1024, "
            "the unscaled curve falling, the scaled one flat (here {entropy} nats scaled).",
            **fields,
        )


def _stats_line(variant: str, view: explore.ScalingView) -> str:
    """The caption line of one variant's numbers."""
    stats = view.stats[variant]
    fields = dict(
        std=f"{stats.score_std:.3g}",
        largest=f"{stats.max_weight:.3f}",
        entropy=f"{stats.entropy:.3f}",
        uniform=f"{view.max_entropy:.3f}",
        median=f"{stats.median_grad_norm:.3g}",
        mean=f"{stats.grad_norm:.3f}",
    )
    if variant == "unscaled":
        return tr(
            "unscaled: score std {std}, largest weight {largest}, entropy {entropy} nats (uniform "
            "{uniform}), softmax Jacobian norm median {median}, mean {mean}",
            **fields,
        )
    return tr(
        "scaled: score std {std}, largest weight {largest}, entropy {entropy} nats (uniform {uniform}), "
        "softmax Jacobian norm median {median}, mean {mean}",
        **fields,
    )


def _scaling_renderer(seed: int, d_k_values: Sequence[int]) -> Renderer:
    d_k_values = tuple(int(d) for d in d_k_values)
    return Renderer(
        lambda d_k, variant="scaled": _Shown(explore.scaling_view(d_k, seed), variant),
        lambda: _ScalingPainter(seed, d_k_values),
    )


def render_scaling(
    d_k: int, seed: int = 0, d_k_values: Sequence[int] = explore.D_K_VALUES, variant: str = "scaled"
) -> Frame:
    """Draw :func:`attncourse.explore.scaling_view`: the weights of ``variant`` (scaled or unscaled).

    The second panel is the mean entropy against ``d_k`` over ``d_k_values``, with ``d_k`` marked.
    """
    return _scaling_renderer(seed, d_k_values)(d_k=d_k, variant=variant)


def scaling_explorer(
    *,
    d_k: int = explore.DEFAULT_D_K,
    d_k_values: Sequence[int] = explore.D_K_VALUES,
    variant: str = "scaled",
    seed: int = 0,
    mode: str = "auto",
) -> Explorer:
    """A ``d_k`` slider and a scaled/unscaled toggle: chapter 3's random rows of attention weights.

    Draws :func:`attncourse.explore.scaling_view`: the weights map of the chosen variant (6 of the
    chapter's 1000 rows, each a query against its own 16 keys), the mean largest weight, entropy
    and softmax Jacobian norm (median and mean) of both, which are the numbers of the chapter's
    tables at each ``d_k``, and the entropy against ``d_k``.  Unscaled, the weights saturate (one
    key per query) as ``d_k`` grows; scaled, they do not.

    Parameters
    ----------
    d_k : int
        The starting value; one of ``d_k_values``.
    d_k_values : sequence of int
        The slider's values (default: powers of two from 1 to 1024).
    variant : {"scaled", "unscaled"}
        The variant shown first.
    seed : int
        Seed of the random queries and keys; 0 is the chapter's draw.
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
        [
            Control(
                "variant",
                tr("scores"),
                explore.VARIANTS,
                variant,
                kind="toggle",
                labels=(tr("unscaled q·k"), tr("scaled q·k/√d_k")),
            ),
            Control("d_k", "d_k", d_k_values, int(d_k)),
        ],
        _scaling_renderer(seed, d_k_values),
        alt=tr("Heatmaps of attention weights without and with scaling, and entropy against d_k."),
        mode=mode,
    )
