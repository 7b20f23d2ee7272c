"""The kernel explorer: Nadaraya-Watson regression as attention, against the kernel's width."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..explore import kernel as view_of
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
        n_half = int(np.sum(view.weights >= 0.5 * view.weights.max()))
        where = "the training point" if view.leave_one_out else "x ="
        return caption(
            f"Kernel width {view.width:g}: the prediction at {where} {view.query:.3g} is {view.prediction:.3f} "
            f"(true value {float(view_of.true_function(np.array(view.query))):.3f}); its largest weight is "
            f"{view.weights.max():.3f}, and {n_half} of the {len(view.weights)} keys get at least half of "
            "it." + (" Leave-one-out: its weight on its own key is 0." if view.leave_one_out else ""),
            f"Mean squared error of the curve against the true function: {view.mse:.3f}.",
            f"Error at the training points against their noisy values: {view.train_mse:.3f} when each may "
            f"attend to itself, {view.loo_mse:.3f} leave-one-out.",
        )

    def alt(self, view: Any) -> str:
        if view.leave_one_out:
            return (
                f"Leave-one-out kernel regression with width {view.width:g}: each of {len(view.x_key)} noisy points "
                f"predicted from the others (error {view.loo_mse:.3f}), and the weights of the training "
                f"point x = {view.query:.2f}, zero on itself, the largest {view.weights.max():.2f}."
            )
        return (
            f"Kernel regression with width {view.width:g}: {len(view.x_key)} noisy points, the true function and the "
            "prediction "
            f"curve (mean squared error {view.mse:.3f}), the query x = {view.query:g} marked with its "
            "prediction "
            f"{view.prediction:.2f}; beside it, the query's weights over the keys, the largest "
            f"{view.weights.max():.2f}."
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
            Control("width", "kernel width w", view_of.WIDTHS, float(width)),
            Control("query", "query x", view_of.QUERIES, float(query)),
            Control(
                "leave_one_out",
                "leave-one-out",
                view_of.LEAVE_ONE_OUT,
                bool(leave_one_out),
                kind="toggle",
                labels=("off", "on"),
            ),
        ],
        _renderer(seed),
        alt="Kernel regression on noisy points at one kernel width, and one query's attention weights; "
        "leave-one-out on or off.",
        mode=mode,
    )
