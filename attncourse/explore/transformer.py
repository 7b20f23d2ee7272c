"""The Transformer explorer's view: a trained model's attention maps, layer by layer, head by head."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Sequence, Tuple

import numpy as np

from .._backend import AttentionInputError
from .._validation import int_at_least, public

__all__ = ["HeadScores", "TransformerView", "as_head_maps", "head_scores", "transformer_view"]


@dataclass(frozen=True, eq=False)
class HeadScores:
    """How much each head looks like a previous-token or an induction head (see :func:`head_scores`)."""

    previous: np.ndarray  # (n_layers, H) mean weight on key t - 1
    induction: np.ndarray  # (n_layers, H) mean weight on the keys right after earlier copies
    n_sequences: int  # how many sequences the means run over


@dataclass(frozen=True, eq=False)
class TransformerView:
    """What the Transformer explorer shows (see :func:`transformer_view`)."""

    tokens: Tuple[str, ...]  # the sequence, L labels
    layer: int  # 0-based
    head: int  # 0-based
    weights: np.ndarray  # (L, L) this head's map
    previous_cells: Tuple[Tuple[int, int], ...]  # (query, key) = (i, i - 1)
    induction_cells: Tuple[Tuple[int, int], ...]  # (i, j): key j follows an earlier copy of token i
    previous_scores: np.ndarray  # (n_layers, H) the tables: the scores given, else this sequence's
    induction_scores: np.ndarray  # (n_layers, H) idem, over rows that have an earlier copy
    held_out: bool  # the tables hold scores given by the caller (e.g. over a held-out batch)
    n_scored: int  # how many sequences the tables' scores average over
    sequence_previous: np.ndarray  # (n_layers, H) the scores on the sequence shown
    sequence_induction: np.ndarray  # (n_layers, H)


def _to_numpy(x: Any) -> np.ndarray:
    if hasattr(x, "detach"):  # a torch tensor: no torch import needed to read it
        x = x.detach().cpu().numpy()
    return np.asarray(x)


def _batched_maps(weights: Sequence[Any]) -> np.ndarray:
    """One ``(H, L, L)`` or ``(B, H, L, L)`` map per layer -> ``(n_layers, B, H, L, L)`` float64."""
    maps = []
    for w in weights:
        w = _to_numpy(w).astype(np.float64)
        if w.ndim == 3:
            w = w[None]  # (H, L, L) -> (1, H, L, L)
        if w.ndim != 4 or w.shape[2] != w.shape[3]:
            raise AttentionInputError(
                f"weights must hold one (H, L, L) or (B, H, L, L) map per layer; got shape {tuple(w.shape)}."
            )
        maps.append(w)
    if not maps or len({m.shape for m in maps}) != 1:
        raise AttentionInputError(
            f"weights must be a non-empty list of same-shape maps; got {[m.shape for m in maps]}."
        )
    return np.stack(maps)  # (n_layers, B, H, L, L)


def as_head_maps(weights: Sequence[Any]) -> np.ndarray:
    """One ``(H, L, L)`` (or ``(1, H, L, L)``) array or tensor per layer -> ``(n_layers, H, L, L)`` numpy."""
    try:
        maps = _batched_maps(weights)
    except AttentionInputError as error:
        raise AttentionInputError(f"transformer_view: {error}") from None
    if maps.shape[1] != 1:
        raise AttentionInputError(
            f"transformer_view: weights must hold one (H, L, L) or (1, H, L, L) map per layer; "
            f"got shape {maps.shape[1:]} (a batch: use head_scores for a batch)."
        )
    return maps[:, 0]  # (n_layers, 1, H, L, L) -> (n_layers, H, L, L)


@public("head_scores")
def head_scores(weights: Sequence[Any], tokens: Any, induction_rows: Optional[Any] = None) -> HeadScores:
    """Every head's previous-token and induction score, averaged over one sequence or a batch.

    The **previous-token score** of a head is the mean weight query ``t`` puts on key ``t - 1``
    (over ``t >= 1``).  Its **induction score** is the mean, over the rows counted, of the total
    weight query ``t`` puts on the keys ``j <= t`` whose previous token equals token ``t``
    (``tokens[j - 1] == tokens[t]``): the tokens that followed earlier copies of the current one.

    Parameters
    ----------
    weights : sequence of arrays or tensors
        One ``(H, L, L)`` or ``(B, H, L, L)`` map per layer (what ``TinyTransformer`` returns).
    tokens : array or tensor, ``(L,)`` or ``(B, L)``
        The input tokens; equal tokens are compared.
    induction_rows : bool array or tensor ``(B, L)``, optional
        The query rows the induction score averages over (chapter 8: the positions whose next
        token is determined).  Default: every row whose token occurred before.

    Examples
    --------
    >>> prev = np.eye(4, k=-1)[None]; prev[0, 0, 0] = 1  # one previous-token head, (H, L, L)
    >>> s = head_scores([prev], [1, 2, 3, 1])  # row 3 has an earlier copy
    >>> float(s.previous[0, 0]), float(s.induction[0, 0]), s.n_sequences
    (1.0, 0.0, 1)
    """
    maps = _batched_maps(weights)  # (n_layers, B, H, L, L)
    n_layers, B, H, L, _ = maps.shape
    ids = _to_numpy(tokens)
    ids = ids[None] if ids.ndim == 1 else ids
    if ids.shape != (B, L):
        raise AttentionInputError(f"tokens must have shape (B, L) = {(B, L)} (the maps'); got {ids.shape}.")
    t = np.arange(L)
    previous = maps[..., t[1:], t[1:] - 1].mean(axis=(1, 3))  # (n_layers, B, H, L-1) -> (n_layers, H)
    # after_copy[b, i, j]: key j <= i follows an earlier copy of token i (key 0 follows nothing)
    after_copy = (ids[:, None, :-1] == ids[:, :, None]) & (t[None, 1:] <= t[:, None])  # (B, L, L-1)
    after_copy = np.concatenate([np.zeros((B, L, 1), dtype=bool), after_copy], axis=2)  # (B, L, L)
    if induction_rows is None:
        rows = after_copy.any(-1)  # (B, L) rows with an earlier copy
    else:
        rows = _to_numpy(induction_rows).astype(bool)
        rows = rows[None] if rows.ndim == 1 else rows
        if rows.shape != (B, L):
            raise AttentionInputError(f"induction_rows must have shape (B, L) = {(B, L)}; got {rows.shape}.")
    on_copies = (maps * after_copy[None, :, None]).sum(-1)  # (n_layers, B, H, L)
    if rows.any():
        induction = on_copies.transpose(0, 2, 1, 3)[..., rows].mean(
            -1
        )  # (n_layers, H, B, L) -> (n_layers, H)
    else:
        induction = np.zeros((n_layers, H))
    return HeadScores(previous=previous, induction=induction, n_sequences=B)


@public("transformer_view")
def transformer_view(
    weights: Sequence[Any],
    tokens: Sequence[Any],
    layer: int = 0,
    head: int = 0,
    *,
    scores: Optional[HeadScores] = None,
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
    scores : HeadScores, optional
        What the tables show, e.g. :func:`head_scores` over a held-out batch (chapter 8's table).
        Default: the scores on this one sequence.

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
    if scores is not None and (scores.previous.shape, scores.induction.shape) != ((n_layers, H),) * 2:
        raise AttentionInputError(
            f"scores must hold ({n_layers}, {H}) previous and induction scores (the maps' layers and "
            f"heads); got {scores.previous.shape} and {scores.induction.shape}."
        )
    previous = tuple((i, i - 1) for i in range(1, L))
    induction = tuple((i, j) for i in range(L) for j in range(1, i + 1) if labels[j - 1] == labels[i])
    on_sequence = head_scores(maps, np.array(labels, dtype=object))  # maps (n_layers, H, L, L): B = 1
    table = on_sequence if scores is None else scores
    return TransformerView(
        tokens=labels,
        layer=layer,
        head=head,
        weights=maps[layer, head],
        previous_cells=previous,
        induction_cells=induction,
        previous_scores=table.previous,
        induction_scores=table.induction,
        held_out=scores is not None,
        n_scored=table.n_sequences,
        sequence_previous=on_sequence.previous,
        sequence_induction=on_sequence.induction,
    )
