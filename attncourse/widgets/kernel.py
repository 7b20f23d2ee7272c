"""The kernel explorer: Nadaraya-Watson regression as attention, against the kernel's width."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..explore import kernel as view_of
from ..i18n import tr
from ._core import Control, Explorer, Frame, caption
from ._paint import ACCENT, BAR_COLOUR, LINE_COLOURS, Painter, Renderer

__all__ = ["render_kernel", "kernel_explorer"]


class _KernelPainter(Painter):
    size = (9.8, 3.2)

    def __init__(self, seed: int) -> None:
        super().__init__()
        reference = view_of.kernel_view(seed=seed)
        self.ax_fit, self.ax_weights = self.fig.subplots(1, 2)
        self.ax_fit.scatter(reference.x_key, reference.y_value, s=12, color="0.55", label="keys, values")
        self.ax_fit.plot(
            reference.x_grid, reference.y_true, "--", color=LINE_COLOURS[0], lw=1.2, label="true"
        )
        (self.curve,) = self.ax_fit.plot(
            reference.x_grid, reference.y_grid, color=LINE_COLOURS[1], lw=2, label="prediction"
        )
        self.query = self.ax_fit.axvline(reference.query, color=ACCENT, lw=1)
        (self.point,) = self.ax_fit.plot([reference.query], [reference.prediction], "o", color=ACCENT, ms=7)
        self.ax_fit.set_xlabel("x")
        self.ax_fit.legend(fontsize=7, loc="lower left", frameon=False)
        self.title_fit = self.ax_fit.set_title(" ", fontsize=9)
        self.stems = self.ax_weights.bar(reference.x_key, reference.weights, width=0.06, color=BAR_COLOUR)
        self.query_w = self.ax_weights.axvline(reference.query, color=ACCENT, lw=1)
        self.ax_weights.set_xlim(self.ax_fit.get_xlim())
        self.ax_weights.set_ylim(0, 1.0)
        self.ax_weights.set_xlabel("key x_i")
        self.title_weights = self.ax_weights.set_title(" ", fontsize=9)
        self._animate(
            self.curve, self.query, self.point, self.title_fit, *self.stems, self.query_w, self.title_weights
        )
        self._freeze(reference)

    def paint(self, view: Any) -> str:
        self.curve.set_data(view.x_grid, view.y_grid)
        self.curve.set_marker("." if view.leave_one_out else "None")
        self.query.set_xdata([view.query, view.query])
        self.query_w.set_xdata([view.query, view.query])
        self.point.set_data([view.query], [view.prediction])
        for bar, w in zip(self.stems, view.weights):
            bar.set_height(w)
        if view.leave_one_out:
            self.title_fit.set_text(
                f"w = {view.width:g}, each point from the others: leave-one-out error {view.loo_mse:.3f}"
            )
            self.title_weights.set_text(
                f"weights of the training point x = {view.query:.2f} (its own: 0, masked)"
            )
        else:
            self.title_fit.set_text(f"width w = {view.width:g}: mean squared error {view.mse:.3f}")
            self.title_weights.set_text(
                f"weights of the query x = {view.query:g} (largest {view.weights.max():.2f})"
            )
        fields = dict(
            width=f"{view.width:g}",
            x=f"{view.query:.3g}",
            prediction=f"{view.prediction:.3f}",
            true=f"{float(view_of.true_function(np.array(view.query))):.3f}",
            largest=f"{view.weights.max():.3f}",
            n=str(int(np.sum(view.weights >= 0.5 * view.weights.max()))),
            keys=str(len(view.weights)),
        )
        if view.leave_one_out:
            first = tr(
                "Kernel width {width}: the prediction at the training point {x} is {prediction} (true value "
                "{true}); its largest weight is {largest}, and {n} of the {keys} keys get at least half of "
                "it. Leave-one-out: its weight on its own key is 0.",
                **fields,
            )
        else:
            first = tr(
                "Kernel width {width}: the prediction at x = {x} is {prediction} (true value {true}); its "
                "largest weight is {largest}, and {n} of the {keys} keys get at least half of it.",
                **fields,
            )
        return caption(
            first,
            tr("Mean squared error of the curve against the true function: {mse}.", mse=f"{view.mse:.3f}"),
            tr(
                "Error at the training points against their noisy values: {train} when each may attend to "
                "itself, {loo} leave-one-out.",
                train=f"{view.train_mse:.3f}",
                loo=f"{view.loo_mse:.3f}",
            ),
        )

    def alt(self, view: Any) -> str:
        if view.leave_one_out:
            return tr(
                "Leave-one-out kernel regression with width {width}: each of {n} noisy points predicted "
                "from the others (error {error}), and the weights of the training point x = {x}, zero on "
                "itself, the largest {largest}.",
                width=f"{view.width:g}",
                n=str(len(view.x_key)),
                error=f"{view.loo_mse:.3f}",
                x=f"{view.query:.2f}",
                largest=f"{view.weights.max():.2f}",
            )
        return tr(
            "Kernel regression with width {width}: {n} noisy points, the true function and the prediction "
            "curve (mean squared error {error}), the query x = {x} marked with its prediction {prediction}; "
            "beside it, the query's weights over the keys, the largest {largest}.",
            width=f"{view.width:g}",
            n=str(len(view.x_key)),
            error=f"{view.mse:.3f}",
            x=f"{view.query:g}",
            prediction=f"{view.prediction:.2f}",
            largest=f"{view.weights.max():.2f}",
        )


def _renderer(seed: int) -> Renderer:
    return Renderer(
        lambda width, query, leave_one_out=False: view_of.kernel_view(width, query, seed, leave_one_out),
        lambda: _KernelPainter(seed),
    )


def render_kernel(
    width: float = view_of.DEFAULT_WIDTH,
    query: float = view_of.DEFAULT_QUERY,
    seed: int = 0,
    leave_one_out: bool = False,
) -> Frame:
    """Draw :func:`attncourse.explore.kernel_view`: the fit and one query's weights."""
    return _renderer(seed)(width=width, query=query, leave_one_out=leave_one_out)


def kernel_explorer(
    *,
    width: float = view_of.DEFAULT_WIDTH,
    query: float = view_of.DEFAULT_QUERY,
    seed: int = 0,
    leave_one_out: bool = False,
    mode: str = "auto",
) -> Explorer:
    """Kernel width, query and leave-one-out: Nadaraya-Watson regression, i.e. attention with a fixed
    similarity.

    Draws :func:`attncourse.explore.kernel_view` (which uses
    :func:`attncourse.pooling.nadaraya_watson`): a narrow kernel puts nearly all the weight
    on the nearest keys and follows the noise; a wide one spreads it over every key and
    flattens the curve towards the mean of the values.  Leave-one-out on predicts each training
    point from the others (its own key masked), as chapter 0 does to fit the width: the error at
    the training points then stops falling to 0 as the kernel narrows.

    Examples
    --------
    >>> ex = kernel_explorer(mode="live")
    >>> ex.values()
    {'width': 0.3, 'query': 2.5, 'leave_one_out': False}
    """
    return Explorer(
        "kernel",
        [
            Control("width", tr("kernel width w"), view_of.WIDTHS, float(width)),
            Control("query", tr("query x"), view_of.QUERIES, float(query)),
            Control(
                "leave_one_out",
                tr("leave-one-out"),
                view_of.LEAVE_ONE_OUT,
                bool(leave_one_out),
                kind="toggle",
                labels=(tr("off"), tr("on")),
            ),
        ],
        _renderer(seed),
        alt=tr(
            "Kernel regression on noisy points at one kernel width, and one query's attention weights; "
            "leave-one-out on or off."
        ),
        mode=mode,
    )
