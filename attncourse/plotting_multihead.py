"""Per-head attention maps: one labelled heatmap per head, on one shared colour scale.

Used by the multi-head attention chapter (and by anything that wants to look at what each head
of a layer attends to).  Sits on :mod:`attncourse.plotting` and matplotlib.
"""

from __future__ import annotations

import math
from typing import Any, Optional, Sequence, Tuple

from .plotting import attention_heatmap, to_numpy

__all__ = ["head_grid"]


def head_grid(
    weights: Any,
    queries: Optional[Sequence[str]] = None,
    keys: Optional[Sequence[str]] = None,
    *,
    ncols: Optional[int] = None,
    title: Optional[str] = None,
    annotate: Optional[bool] = None,
    panel_size: Tuple[float, float] = (3.2, 2.9),
):
    """Draw ``weights (H, L, S)`` (or ``(1, H, L, S)``) as a grid of ``H`` attention heatmaps.

    Every panel uses the colour range 0..1 (viridis), so the heads can be compared by eye; one
    colour bar serves them all.  ``queries``/``keys`` label the rows/columns, ``ncols`` defaults
    to ``min(H, 4)``, and cell values are written in when each map has at most 36 cells (unless
    ``annotate`` says otherwise).  Returns the matplotlib figure.
    """
    import matplotlib.pyplot as plt

    w = to_numpy(weights)
    if w.ndim == 4 and w.shape[0] == 1:
        w = w[0]  # (1, H, L, S) -> (H, L, S)
    if w.ndim != 3:
        raise ValueError(f"head_grid: weights must be (H, L, S) or (1, H, L, S); got shape {tuple(w.shape)}.")
    n_heads, L, S = w.shape
    ncols = min(n_heads, 4) if ncols is None else ncols
    if ncols < 1:
        raise ValueError(f"head_grid: ncols must be a positive integer; got {ncols}.")
    nrows = math.ceil(n_heads / ncols)
    if annotate is None:
        annotate = L * S <= 36
    fig, axes = plt.subplots(
        nrows,
        ncols,
        figsize=(panel_size[0] * ncols, panel_size[1] * nrows),
        squeeze=False,
        layout="constrained",
    )
    for h, ax in enumerate(axes.ravel()):
        if h >= n_heads:
            ax.set_axis_off()  # a spare panel in the last row
            continue
        attention_heatmap(w[h], queries, keys, ax=ax, title=f"head {h}", annotate=annotate, colorbar=False)
    fig.colorbar(
        axes[0, 0].images[0], ax=axes.ravel().tolist(), fraction=0.03, pad=0.02, label="attention weight"
    )
    if title:
        fig.suptitle(title)
    return fig
