"""Pictures of attention: labelled heatmaps, mask overlays, and figures as PNG bytes.

Sits on the numerical core and matplotlib.  Colour maps are perceptually uniform and readable
in grey scale (viridis for weights, cividis for signed values), so colour-blind readers lose
nothing.
"""

from __future__ import annotations

import io
from typing import Any, Optional, Sequence

import numpy as np

__all__ = ["to_numpy", "heatmap", "attention_heatmap", "mask_overlay", "figure_to_png"]


def to_numpy(x: Any) -> np.ndarray:
    """A numpy copy of an array or tensor (any device, detached), for plotting."""
    if hasattr(x, "detach"):
        x = x.detach().float().cpu().numpy() if x.dtype.is_floating_point else x.detach().cpu().numpy()
    return np.asarray(x)


def _axes(ax):
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(4, 3.4))
    return ax


def heatmap(
    values: Any,
    row_labels: Optional[Sequence[str]] = None,
    col_labels: Optional[Sequence[str]] = None,
    *,
    ax=None,
    title: Optional[str] = None,
    cmap: str = "viridis",
    vmin: Optional[float] = None,
    vmax: Optional[float] = None,
    annotate: Optional[bool] = None,
    fmt: str = "{:.2f}",
    colorbar: bool = True,
    xlabel: Optional[str] = None,
    ylabel: Optional[str] = None,
    colorbar_label: Optional[str] = None,
):
    """Draw a 2-d array as a heatmap with optional tick labels and cell values; returns ``ax``.

    ``colorbar_label`` says what the colour measures.  With more than 10 columns the column
    labels stand upright and, like the row labels of a map with more than 10 rows, are set
    small, so that many labels do not run into each other on a narrow panel.
    """
    values = to_numpy(values)
    if values.ndim != 2:
        raise ValueError(f"heatmap: values must be 2-d; got shape {values.shape}.")
    ax = _axes(ax)
    image = ax.imshow(values, cmap=cmap, vmin=vmin, vmax=vmax, aspect="auto")
    n_rows, n_cols = values.shape
    if row_labels is not None:
        ax.set_yticks(range(n_rows), labels=list(row_labels), fontsize=7 if n_rows > 10 else None)
    if col_labels is not None:
        rotate = n_cols > 6
        upright = n_cols > 10
        ax.set_xticks(
            range(n_cols),
            labels=list(col_labels),
            rotation=90 if upright else 45 if rotate else 0,
            ha="center" if upright or not rotate else "right",
            rotation_mode="default" if upright or not rotate else "anchor",
            fontsize=7 if upright else None,
        )
    if annotate is None:
        annotate = n_rows * n_cols <= 64
    if annotate:
        lo, hi = image.get_clim()
        for i in range(n_rows):
            for j in range(n_cols):
                if np.isfinite(values[i, j]):
                    # Dark text on the bright end of the colour map, light text elsewhere.
                    bright = hi > lo and (values[i, j] - lo) / (hi - lo) > 0.6
                    ax.text(
                        j,
                        i,
                        fmt.format(values[i, j]),
                        ha="center",
                        va="center",
                        fontsize=8,
                        color="black" if bright else "white",
                    )
    if title:
        ax.set_title(title)
    if xlabel:
        ax.set_xlabel(xlabel)
    if ylabel:
        ax.set_ylabel(ylabel)
    if colorbar:
        ax.figure.colorbar(image, ax=ax, fraction=0.046, pad=0.04, label=colorbar_label)
    return ax


def attention_heatmap(
    weights: Any,
    queries: Optional[Sequence[str]] = None,
    keys: Optional[Sequence[str]] = None,
    **kwargs,
):
    """Attention weights ``(L, S)``: rows are queries, columns keys, values in [0, 1]."""
    kwargs.setdefault("colorbar_label", "attention weight")
    kwargs.setdefault("vmin", 0.0)
    kwargs.setdefault("vmax", 1.0)
    kwargs.setdefault("xlabel", "key")
    kwargs.setdefault("ylabel", "query")
    return heatmap(weights, queries, keys, **kwargs)


def mask_overlay(
    mask: Any,
    weights: Optional[Any] = None,
    queries: Optional[Sequence[str]] = None,
    keys: Optional[Sequence[str]] = None,
    *,
    ax=None,
    title: Optional[str] = None,
    legend: bool = False,
    colorbar: bool = True,
):
    """A boolean mask ``(L, S)`` drawn over the weights: blocked cells hatched in grey.

    Without ``weights`` the allowed cells are shown in one colour, so the mask's shape is the
    picture.  True = may attend.  ``legend=True`` names the hatched cells (and, without
    ``weights``, the allowed colour) in a legend under the axes; ``colorbar=False`` leaves out
    the weights' colour bar (for panels that share one).
    """
    mask = to_numpy(mask).astype(bool)
    ax = _axes(ax)
    base = to_numpy(weights) if weights is not None else mask.astype(float)
    attention_heatmap(
        base,
        queries,
        keys,
        ax=ax,
        title=title,
        annotate=weights is not None and base.size <= 64,
        colorbar=colorbar and weights is not None,
    )
    from matplotlib.patches import Patch, Rectangle

    blocked = dict(facecolor="0.85", edgecolor="0.5", hatch="//", lw=0.5)
    for i, j in zip(*np.nonzero(~mask)):
        ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, zorder=4, **blocked))
    if legend:
        handles = [Patch(label="blocked: weight 0", **blocked)]
        if weights is None:
            allowed = ax.images[0].cmap(ax.images[0].norm(1.0))
            handles.insert(0, Patch(facecolor=allowed, edgecolor="0.5", lw=0.5, label="allowed"))
        ax.legend(
            handles=handles,
            loc="upper center",
            bbox_to_anchor=(0.5, 0.0),
            borderaxespad=_points_below_axes(ax) / 8 + 0.3,  # in units of the legend's font size
            ncol=len(handles),
            fontsize=8,
            frameon=False,
        )
    return ax


def _points_below_axes(ax) -> float:
    """How far the tick labels and the x label reach below ``ax``, in points.

    Points do not change when a layout later resizes the axes, so a legend placed this far
    below the axes clears the labels in the final figure too.
    """
    renderer = ax.figure.canvas.get_renderer()
    below = ax.get_window_extent(renderer).y0 - ax.get_tightbbox(renderer).y0
    return max(float(below), 0.0) * 72 / ax.figure.dpi


def figure_to_png(fig, dpi: int = 80) -> bytes:
    """PNG bytes of a matplotlib figure (then closed), e.g. for an ``ipywidgets.Image``."""
    import matplotlib.pyplot as plt

    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi, bbox_inches="tight")
    plt.close(fig)
    return buffer.getvalue()
