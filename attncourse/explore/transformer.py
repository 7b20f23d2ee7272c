"""The Transformer explorer's view: a trained model's attention maps, layer by layer, head by head."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence, Tuple

import numpy as np

from .._backend import AttentionInputError
from .._validation import int_at_least, public

__all__ = ["TransformerView", "as_head_maps", "transformer_view"]


@dataclass(frozen=True, eq=False)
class TransformerView:
    """What the Transformer explorer shows (see :func:`transformer_view`)."""

    tokens: Tuple[str, ...]  # the sequence, L labels
    layer: int  # 0-based
    head: int  # 0-based
    weights: np.ndarray  # (L, L) this head's map
    previous_cells: Tuple[Tuple[int, int], ...]  # (query, key) = (i, i - 1)
    induction_cells: Tuple[Tuple[int, int], ...]  # (i, j): key j follows an earlier copy of token i
    previous_scores: np.ndarray  # (n_layers, H) mean weight on the previous token
    induction_scores: np.ndarray  # (n_layers, H) mean weight on induction cells, over rows that have one


def as_head_maps(weights: Sequence[Any]) -> np.ndarray:
    """One ``(H, L, L)`` (or ``(1, H, L, L)``) array or tensor per layer -> ``(n_layers, H, L, L)`` numpy."""
    maps = []
    for w in weights:
        if hasattr(w, "detach"):  # a torch tensor: no torch import needed to read it
            w = w.detach().float().cpu().numpy()
        w = np.asarray(w, dtype=np.float64)
        if w.ndim == 4 and w.shape[0] == 1:
            w = w[0]  # (1, H, L, L) -> (H, L, L)
        if w.ndim != 3 or w.shape[1] != w.shape[2]:
            raise AttentionInputError(
                f"transformer_view: weights must hold one (H, L, L) or (1, H, L, L) map per layer; "
                f"got shape {tuple(w.shape)}."
            )
        maps.append(w)
    if not maps or len({m.shape for m in maps}) != 1:
        raise AttentionInputError(
            "transformer_view: weights must be a non-empty list of same-shape maps; got "
            f"{[m.shape for m in maps]}."
        )
    return np.stack(maps)  # (n_layers, H, L, L)


@public("transformer_view")
def transformer_view(
    weights: Sequence[Any], tokens: Sequence[Any], layer: int = 0, head: int = 0
) -> TransformerView:
    """One head's attention map, and how much each head looks like a previous-token or induction head.

    A previous-token head puts its weight on key ``i - 1``; an induction head, at a token seen
    before, puts it on the key right *after* that earlier copy (``tokens[j - 1] == tokens[i]``,
    ``j <= i``): the token that came next last time, i.e. the one to predict now.

    Parameters
    ----------
    weights : sequence of arrays or tensors
        One ``(H, L, L)`` or ``(1, H, L, L)`` map per layer (what ``TinyTransformer`` returns).
    tokens : sequence, length L
        The input tokens (ids or strings); equal tokens are compared, and labels are ``str(t)``.
    layer, head : int
        0-based.

    Examples
    --------
    >>> L = 6
    >>> prev = np.eye(L, k=-1)[None, None]; prev[..., 0, 0] = 1  # a previous-token head
    >>> v = transformer_view([prev], [1, 2, 3, 1, 2, 3], 0, 0)
    >>> float(v.previous_scores[0, 0]), v.induction_cells[:2]
    (1.0, ((3, 1), (4, 2)))
    """
    maps = as_head_maps(weights)
    n_layers, H, L, _ = maps.shape
    labels = tuple(str(t.item() if hasattr(t, "item") else t) for t in tokens)
    if len(labels) != L:
        raise AttentionInputError(f"tokens must have L={L} entries (the maps' size); got {len(labels)}.")
    layer = int_at_least("layer", layer, 0)
    head = int_at_least("head", head, 0)
    if layer >= n_layers or head >= H:
        raise AttentionInputError(
            f"layer must be below {n_layers} and head below {H}; got layer {layer}, head {head}."
        )
    previous = tuple((i, i - 1) for i in range(1, L))
    induction = tuple((i, j) for i in range(L) for j in range(1, i + 1) if labels[j - 1] == labels[i])
    rows = np.arange(1, L)
    previous_scores = maps[:, :, rows, rows - 1].mean(-1)  # (n_layers, H, L-1) -> (n_layers, H)
    on_copy = np.zeros((L, L), dtype=bool)
    for i, j in induction:
        on_copy[i, j] = True
    has_copy = on_copy.any(-1)  # (L,) rows with an earlier copy
    if has_copy.any():
        induction_scores = (maps * on_copy).sum(-1)[..., has_copy].mean(-1)  # (n_layers, H)
    else:
        induction_scores = np.zeros((n_layers, H))
    return TransformerView(
        tokens=labels,
        layer=layer,
        head=head,
        weights=maps[layer, head],
        previous_cells=previous,
        induction_cells=induction,
        previous_scores=previous_scores,
        induction_scores=induction_scores,
    )
