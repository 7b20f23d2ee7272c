"""The Transformer explorer: a trained model's attention maps, layer by layer and head by head."""

from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np

from ..explore import transformer as view_of
from ..plotting import attention_heatmap, heatmap
from ._core import Control, Explorer, Frame, caption
from ._paint import ACCENT, Painter, Renderer

__all__ = ["render_transformer", "transformer_explorer"]


class _TransformerPainter(Painter):
    size = (9.8, 4.4)
    blit = False

    def __init__(self, maps: np.ndarray, tokens: Sequence[str]) -> None:
        from matplotlib.patches import Rectangle

        super().__init__()
        reference = view_of.transformer_view(maps, tokens, 0, 0)
        n_layers, H = reference.induction_scores.shape
        grid = self.fig.add_gridspec(2, 2, width_ratios=[1.5, 1])
        self.ax_map = self.fig.add_subplot(grid[:, 0])
        ax_prev, ax_ind = self.fig.add_subplot(grid[0, 1]), self.fig.add_subplot(grid[1, 1])
        attention_heatmap(
            reference.weights,
            reference.tokens,
            reference.tokens,
            ax=self.ax_map,
            annotate=False,
            colorbar=True,
        )
        self.ax_map.set_aspect("equal")
        self.ax_map.tick_params(labelsize=7)
        cells = np.array(reference.induction_cells).reshape(-1, 2)
        self.ax_map.scatter(
            cells[:, 1],
            cells[:, 0],
            s=40,
            facecolors="none",
            edgecolors="white",
            lw=1.1,
            label="after the earlier copy",
        )
        if cells.size:
            self.ax_map.legend(fontsize=7, loc="upper right", frameon=True, framealpha=0.8)
        layers, heads = [f"layer {i + 1}" for i in range(n_layers)], [f"head {h + 1}" for h in range(H)]
        self.outlines = []
        for ax, scores, title in (
            (ax_prev, reference.previous_scores, "previous-token score"),
            (ax_ind, reference.induction_scores, "induction score"),
        ):
            heatmap(scores, layers, heads, ax=ax, vmin=0, vmax=1, title=title, annotate=True, colorbar=False)
            ax.title.set_fontsize(9)
            ax.tick_params(labelsize=8)
            self.outlines.append(
                ax.add_patch(Rectangle((-0.5, -0.5), 1, 1, fill=False, edgecolor=ACCENT, lw=2.5))
            )
        self.title = self.ax_map.set_title(" ", fontsize=9)
        self._freeze(reference)

    def paint(self, view: Any) -> str:
        self.ax_map.images[0].set_data(view.weights)
        for outline in self.outlines:
            outline.set_xy((view.head - 0.5, view.layer - 0.5))
        prev, ind = view.previous_scores[view.layer, view.head], view.induction_scores[view.layer, view.head]
        self.title.set_text(f"layer {view.layer + 1}, head {view.head + 1}")
        return caption(
            f"Layer {view.layer + 1}, head {view.head + 1}: mean weight on the previous token {prev:.2f}; "
            f"on the key right after an earlier copy of the query's token (circled) {ind:.2f}.",
            f"Over the sequence {' '.join(view.tokens)}.",
        )

    def alt(self, view: Any) -> str:
        prev, ind = view.previous_scores[view.layer, view.head], view.induction_scores[view.layer, view.head]
        return (
            f"The attention map of layer {view.layer + 1}, head {view.head + 1} over a "
            f"{len(view.tokens)}-token "
            f"sequence, with the cells right after an earlier copy circled; beside it, tables of every "
            f"head's previous-token score (this head {prev:.2f}) and induction score (this head {ind:.2f})."
        )


def _maps_and_tokens(source: Any, tokens: Any):
    if hasattr(source, "parameters") and callable(source):  # a model: run it on the tokens once
        import torch

        ids = tokens if hasattr(tokens, "dim") else torch.as_tensor(tokens)
        ids = ids[None] if ids.dim() == 1 else ids
        with torch.no_grad():
            _, weights = source(ids)
        return view_of.as_head_maps([w[:1] for w in weights]), [str(t) for t in ids[0].tolist()]
    if hasattr(tokens, "dim") and tokens.dim() == 2:
        tokens = tokens[0]
    labels = [str(t.item() if hasattr(t, "item") else t) for t in tokens]
    return view_of.as_head_maps(source), labels


def _renderer(maps: np.ndarray, labels: Sequence[str]) -> Renderer:
    return Renderer(
        lambda layer, head: view_of.transformer_view(maps, labels, layer, head),
        lambda: _TransformerPainter(maps, labels),
    )


def render_transformer(source: Any, tokens: Any, layer: int = 0, head: int = 0) -> Frame:
    """Draw :func:`attncourse.explore.transformer_view` for ``layer``, ``head`` (0-based)."""
    maps, labels = _maps_and_tokens(source, tokens)
    return _renderer(maps, labels)(layer=layer, head=head)


def transformer_explorer(
    source: Any,
    tokens: Any,
    *,
    layer: int = 0,
    head: int = 0,
    mode: str = "auto",
    model: Optional[Any] = None,
) -> Explorer:
    """A trained model's heads, layer by layer: pick a layer and a head, see its attention map.

    Draws :func:`attncourse.explore.transformer_view`.  The circled cells are where an
    induction head puts its weight (the key right after an earlier copy of the query's token);
    the tables score every head as a previous-token head and as an induction head.

    Parameters
    ----------
    source : model or sequence of arrays
        A model that returns ``(logits, weights)`` (e.g. :class:`attncourse.TinyTransformer`),
        run once on ``tokens``; or its attention maps, one ``(1, H, L, L)`` or ``(H, L, L)``
        per layer.
    tokens : sequence or tensor
        The token ids ``(L,)`` or ``(1, L)`` (labels are their ``str``).
    layer, head : int
        The 0-based starting layer and head.
    mode : {"auto", "frames", "live"}

    Examples
    --------
    >>> import numpy as np
    >>> maps = [np.full((1, 2, 4, 4), 0.25)] * 3  # three layers of two uniform heads
    >>> ex = transformer_explorer(maps, [5, 6, 5, 6], mode="live")
    >>> ex.values()
    {'layer': 0, 'head': 0}
    """
    maps, labels = _maps_and_tokens(source if model is None else model, tokens)
    n_layers, H = maps.shape[:2]
    return Explorer(
        "transformer",
        [
            Control(
                "layer",
                "layer",
                tuple(range(n_layers)),
                int(layer),
                kind="toggle",
                labels=tuple(str(i + 1) for i in range(n_layers)),
            ),
            Control(
                "head",
                "head",
                tuple(range(H)),
                int(head),
                kind="toggle",
                labels=tuple(str(h + 1) for h in range(H)),
            ),
        ],
        _renderer(maps, labels),
        alt="A trained model's attention map for one layer and head, with tables scoring every head.",
        mode=mode,
    )
