"""The Transformer explorer: a trained model's attention maps, layer by layer and head by head."""

from __future__ import annotations

from typing import Any, Optional, Sequence, Union

import numpy as np

from ..explore import transformer as view_of
from ..i18n import tr
from ..plotting import attention_heatmap, heatmap
from ._core import Control, Explorer, Frame, caption
from ._paint import ACCENT, Painter, Renderer

__all__ = ["render_transformer", "transformer_explorer"]


class _TransformerPainter(Painter):
    size = (9.8, 4.4)
    blit = False

    def __init__(
        self, maps: np.ndarray, tokens: Sequence[str], scores: Optional[view_of.HeadScores] = None
    ) -> None:
        from matplotlib.patches import Rectangle

        super().__init__()
        reference = view_of.transformer_view(maps, tokens, 0, 0, scores=scores)
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
        layers, heads = [f"layer {i}" for i in range(n_layers)], [f"head {h}" for h in range(H)]
        self.outlines = []
        over = f", {reference.n_scored} held-out sequences" if reference.held_out else ""
        for ax, table, title in (
            (ax_prev, reference.previous_scores, "previous-token score" + over),
            (ax_ind, reference.induction_scores, "induction score" + over),
        ):
            heatmap(table, layers, heads, ax=ax, vmin=0, vmax=1, title=title, annotate=True, colorbar=False)
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
        self.title.set_text(f"layer {view.layer}, head {view.head}")
        where = dict(layer=view.layer, head=view.head)
        tokens = " ".join(view.tokens)
        if view.held_out:
            seq_prev = view.sequence_previous[view.layer, view.head]
            seq_ind = view.sequence_induction[view.layer, view.head]
            return caption(
                tr(
                    "Layer {layer}, head {head}: previous-token score {prev}, induction score {ind}, averaged "
                    "over {n} held-out sequences (the tables).",
                    prev=f"{prev:.2f}",
                    ind=f"{ind:.2f}",
                    n=view.n_scored,
                    **where,
                ),
                tr(
                    "On the sequence shown, {tokens}: mean weight on the previous token {prev}; on the keys "
                    "right after an earlier copy of the query's token (circled) {ind}.",
                    tokens=tokens,
                    prev=f"{seq_prev:.2f}",
                    ind=f"{seq_ind:.2f}",
                ),
            )
        return caption(
            tr(
                "Layer {layer}, head {head}: mean weight on the previous token {prev}; on the key right after "
                "an earlier copy of the query's token (circled) {ind}.",
                prev=f"{prev:.2f}",
                ind=f"{ind:.2f}",
                **where,
            ),
            tr("Over the sequence {tokens}.", tokens=tokens),
        )

    def alt(self, view: Any) -> str:
        prev, ind = view.previous_scores[view.layer, view.head], view.induction_scores[view.layer, view.head]
        fields = dict(
            layer=view.layer, head=view.head, L=len(view.tokens), prev=f"{prev:.2f}", ind=f"{ind:.2f}"
        )
        if view.held_out:
            return tr(
                "The attention map of layer {layer}, head {head} over a {L}-token sequence, with the cells "
                "right after an earlier copy circled; beside it, tables of every head's previous-token score "
                "(this head {prev}) and induction score (this head {ind}), averaged over {n} held-out "
                "sequences.",
                n=view.n_scored,
                **fields,
            )
        return tr(
            "The attention map of layer {layer}, head {head} over a {L}-token sequence, with the cells right "
            "after an earlier copy circled; beside it, tables of every head's previous-token score (this "
            "head {prev}) and induction score (this head {ind}).",
            **fields,
        )


def _is_model(source: Any) -> bool:
    return hasattr(source, "parameters") and callable(source)


HeldOut = Union[view_of.HeadScores, tuple]


def _held_out_scores(source: Any, held_out: Optional[HeldOut]) -> Optional[view_of.HeadScores]:
    """The tables' scores: given, or measured by running the model on ``(tokens, rows)``."""
    if held_out is None or isinstance(held_out, view_of.HeadScores):
        return held_out
    if not (isinstance(held_out, tuple) and len(held_out) == 2 and _is_model(source)):
        raise ValueError(
            "transformer_explorer: held_out must be a HeadScores (from attncourse.explore.transformer."
            "head_scores), or, with a model as the source, a pair (tokens (B, L), induction_rows (B, L) "
            f"or None); got {type(held_out).__name__} with a {type(source).__name__} source."
        )
    import torch

    tokens, rows = held_out
    ids = torch.as_tensor(tokens)
    with torch.no_grad():
        _, weights = source(ids)  # one (B, H, L, L) per layer
    return view_of.head_scores(weights, ids, rows)


def _maps_and_tokens(source: Any, tokens: Any):
    if _is_model(source):  # a model: run it on the tokens once
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


def _renderer(maps: np.ndarray, labels: Sequence[str], scores: Optional[view_of.HeadScores]) -> Renderer:
    return Renderer(
        lambda layer, head: view_of.transformer_view(maps, labels, layer, head, scores=scores),
        lambda: _TransformerPainter(maps, labels, scores),
    )


def render_transformer(
    source: Any, tokens: Any, layer: int = 0, head: int = 0, *, held_out: Optional[HeldOut] = None
) -> Frame:
    """Draw :func:`attncourse.explore.transformer_view` for ``layer``, ``head`` (0-based)."""
    maps, labels = _maps_and_tokens(source, tokens)
    return _renderer(maps, labels, _held_out_scores(source, held_out))(layer=layer, head=head)


def transformer_explorer(
    source: Any,
    tokens: Any,
    *,
    held_out: Optional[HeldOut] = None,
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
    held_out : HeadScores or (tokens, induction_rows), optional
        What the score tables show: scores from :func:`attncourse.explore.transformer.head_scores`,
        or, with a model as ``source``, a batch ``tokens (B, L)`` (and the rows ``(B, L)`` the
        induction score counts, or None) that the model is run on and scored over, as chapter 8
        scores its held-out sequences.  Default: the scores on ``tokens`` alone.
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
    source = source if model is None else model
    maps, labels = _maps_and_tokens(source, tokens)
    scores = _held_out_scores(source, held_out)
    n_layers, H = maps.shape[:2]
    return Explorer(
        "transformer",
        [
            Control(
                "layer",
                tr("layer"),
                tuple(range(n_layers)),
                int(layer),
                kind="toggle",
                labels=tuple(str(i) for i in range(n_layers)),
            ),
            Control(
                "head",
                tr("head"),
                tuple(range(H)),
                int(head),
                kind="toggle",
                labels=tuple(str(h) for h in range(H)),
            ),
        ],
        _renderer(maps, labels, scores),
        alt=tr("A trained model's attention map for one layer and head, with tables scoring every head."),
        mode=mode,
    )
