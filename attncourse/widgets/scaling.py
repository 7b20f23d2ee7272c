"""The scaling explorer: attention weights of random q, k without and with the 1/sqrt(d_k) scale."""

from __future__ import annotations

from typing import Any, Sequence, Tuple

from .. import explore
from ..plotting import attention_heatmap
from ._core import Control, Explorer, Frame, caption
from ._paint import LINE_COLOURS, Painter, Renderer

__all__ = ["render_scaling", "scaling_explorer"]


class _ScalingPainter(Painter):
    size = (9.8, 2.9)

    def __init__(self, seed: int, d_k_values: Tuple[int, ...]) -> None:
        super().__init__()
        reference = explore.scaling_view(explore.DEFAULT_D_K, seed)
        L, S = reference.weights["scaled"].shape
        queries, keys = [f"q{i + 1}" for i in range(L)], [f"k{j + 1}" for j in range(S)]
        ax_raw, ax_scaled, ax_curve = self.fig.subplots(1, 3, gridspec_kw={"width_ratios": [1, 1.2, 0.9]})
        self.images, self.titles = {}, {}
        for ax, name in ((ax_raw, "unscaled"), (ax_scaled, "scaled")):
            attention_heatmap(
                reference.weights[name],
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
        for name, colour in zip(("unscaled", "scaled"), LINE_COLOURS):
            ax_curve.plot(
                d_k_values, [v.stats[name].entropy for v in views], "o-", ms=3, color=colour, label=name
            )
            (self.markers[name],) = ax_curve.plot([1], [0], "o", ms=9, mfc="none", mec=colour, mew=2)
        ax_curve.axhline(reference.max_entropy, color="0.5", lw=0.8, ls="--")
        self.here = ax_curve.axvline(1, color="0.5", lw=0.8)
        ax_curve.set_xscale("log", base=2)
        ax_curve.set_ylim(0, reference.max_entropy * 1.08)
        ax_curve.set_xlabel("d_k")
        ax_curve.set_title("mean entropy (nats)", fontsize=10)
        ax_curve.legend(fontsize=8, frameon=False, loc="lower left")
        self.suptitle = self.fig.suptitle(" ", fontsize=11)
        self._animate(self.here, *self.markers.values(), self.suptitle)
        self._freeze(reference)

    def paint(self, view: Any) -> str:
        formulas = {"unscaled": "q·k", "scaled": "q·k / √d_k"}
        for name in ("unscaled", "scaled"):
            self.images[name].set_data(view.weights[name])
            self.titles[name].set_text(
                f"{name}: softmax({formulas[name]})\nmax {view.stats[name].max_weight:.2f} · "
                f"entropy {view.stats[name].entropy:.2f} · grad {view.stats[name].grad_norm:.2f}"
            )
            self.markers[name].set_data([view.d_k], [view.stats[name].entropy])
        self.here.set_xdata([view.d_k, view.d_k])
        self.suptitle.set_text(
            f"d_k = {view.d_k}: score spread {view.stats['unscaled'].score_std:.1f} unscaled, "
            f"{view.stats['scaled'].score_std:.2f} scaled"
        )
        S = view.weights["scaled"].shape[-1]
        return caption(
            f"d_k = {view.d_k}; means over {view.n_queries_averaged} random queries against {S} keys "
            "(the maps show 6 of the queries).",
            *(
                f"{name}: score std {view.stats[name].score_std:.3g}, max weight {view.stats[name].max_weight:.3f}, "
                f"entropy {view.stats[name].entropy:.3f} nats (uniform {view.max_entropy:.3f}), "
                f"softmax gradient norm {view.stats[name].grad_norm:.3f}"
                for name in ("unscaled", "scaled")
            ),
        )

    def alt(self, view: Any) -> str:
        unscaled, scaled = view.stats["unscaled"], view.stats["scaled"]
        return (
            f"At d_k = {view.d_k}: heatmaps of the attention weights of 6 queries over 8 keys, unscaled "
            f"(mean largest weight {unscaled.max_weight:.2f}) and scaled by 1/sqrt(d_k) (mean largest "
            f"weight {scaled.max_weight:.2f}); and the mean entropy against d_k from 1 to 1024, the unscaled "
            f"curve falling, the scaled one flat (here {unscaled.entropy:.2f} and {scaled.entropy:.2f} nats)."
        )


def _scaling_renderer(seed: int, d_k_values: Sequence[int]) -> Renderer:
    d_k_values = tuple(int(d) for d in d_k_values)
    return Renderer(lambda d_k: explore.scaling_view(d_k, seed), lambda: _ScalingPainter(seed, d_k_values))


def render_scaling(d_k: int, seed: int = 0, d_k_values: Sequence[int] = explore.D_K_VALUES) -> Frame:
    """Draw :func:`attncourse.explore.scaling_view`: weights without and with ``1/sqrt(d_k)``.

    The third panel is the mean entropy against ``d_k`` over ``d_k_values``, with ``d_k`` marked.
    """
    return _scaling_renderer(seed, d_k_values)(d_k=d_k)


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
