"""The mask explorer's view: padding and causal masks, the fill value, the masked scores and the weights."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional, Sequence, Tuple

import numpy as np

from .._backend import AttentionInputError
from .._validation import int_at_least, public
from ..functional import softmax
from ..masks import causal_mask
from ..toy_data import SENTENCE

__all__ = [
    "MASK_LENGTH",
    "DEFAULT_PAD_LENGTH",
    "DEFAULT_CAUSAL",
    "ALIGNMENTS",
    "FILLS",
    "PAD_SIDES",
    "MaskView",
    "mask_view",
]

# One key sequence of MASK_LENGTH tokens, pad_length of them padding (at the end or the start).
MASK_LENGTH = len(SENTENCE)
DEFAULT_PAD_LENGTH = 2
DEFAULT_CAUSAL = False
ALIGNMENTS: Tuple[str, ...] = ("top-left", "bottom-right")
PAD_SIDES: Tuple[str, ...] = ("right", "left")
# What blocked scores are replaced by: -inf (with attncourse's softmax, which gives a row with no
# key a row of zeros), the constants -1e9 and 0, and -1e9 written into float16 scores (it
# overflows to -inf there, and a plain softmax of a row of -inf is NaN).
FILLS: Tuple[str, ...] = ("-inf", "-1e9", "0", "-1e9 fp16")
_E = 4


@dataclass(frozen=True, eq=False)
class MaskView:
    """What the mask explorer shows (see :func:`mask_view`)."""

    tokens: Tuple[str, ...]  # the S keys, "<pad>" where padded
    sentence: Tuple[str, ...]  # the S tokens given, before padding: the view's own sentence
    seed: int  # of the view's own random q and k, one row per position
    width: int  # E, the width of q and k (the scores are scaled by 1/sqrt(E))
    queries: Tuple[str, ...]  # the L queries: the last L tokens
    pad_length: int
    pad_side: str  # "right" (padding at the end) or "left" (at the start)
    causal: bool
    align: str  # the causal mask's alignment when L < S
    fill: str  # what blocked scores become, one of FILLS
    n_real: int  # real (unpadded) keys
    mask: np.ndarray  # (L, S) bool, True = may attend
    scores: np.ndarray  # (L, S) scaled, before masking
    masked_scores: np.ndarray  # (L, S) the blocked scores replaced by the fill (as stored)
    weights: np.ndarray  # (L, S), NaN in a row a plain softmax cannot normalise
    row_sums: np.ndarray  # (L,)
    blocked_weight: float  # the largest share of a row's weight on blocked keys (NaN rows ignored)
    nan_rows: Tuple[int, ...]  # the queries whose weights are NaN
    empty_rows: Tuple[int, ...]  # the queries with nothing to attend to


@public("mask_view")
def mask_view(
    pad_length: int = DEFAULT_PAD_LENGTH,
    causal: bool = DEFAULT_CAUSAL,
    tokens: Sequence[str] = SENTENCE,
    seed: int = 0,
    n_queries: Optional[int] = None,
    *,
    align: str = "top-left",
    pad_side: str = "right",
    fill: str = "-inf",
) -> MaskView:
    """Attention over one key sequence of which ``pad_length`` tokens are padding.

    The padding mask hides the padded keys from every query; ``causal=True`` also hides every
    key after the query.  With ``fill="-inf"`` (the course's convention) blocked scores become
    ``-inf`` before attncourse's softmax, so their weights are exactly 0 and each row still
    sums to 1, except a row with no key left to see, which is all zeros.  The other fills show
    what goes wrong without it: ``"0"`` leaks weight to blocked keys, ``"-1e9"`` spreads a
    row with nothing to see evenly over blocked keys, and ``"-1e9 fp16"`` overflows to
    ``-inf`` in float16 scores, where a plain softmax turns such a row into NaN.

    Parameters
    ----------
    pad_length : int
        From 0 to ``S = len(tokens)``.
    causal : bool
    tokens : sequence of str, length S
        The real key tokens; the padded positions are shown as ``<pad>``.
    seed : int
        Seed of the view's own random ``q`` and ``k`` (width ``E = 4``), one row per position.
        They are drawn here, not taken from chapter 6's batch.
    n_queries : int, optional
        ``L``, from 1 to ``S`` (``None``: all of them, ``L = S``).  The queries are the *last*
        ``L`` positions, as when a decoder with a KV cache feeds its newest tokens.
    align : {"top-left", "bottom-right"}
        Where the causal mask's diagonal sits when ``L < S``: top-left is PyTorch's
        ``is_causal`` (query ``i`` sees keys ``0 .. i``), bottom-right is what a cache needs
        (query ``i`` sees keys ``0 .. i + S - L``, the rows of full causal attention).
    pad_side : {"right", "left"}
        Padding after the tokens (training batches) or before them (batched generation).
    fill : one of :data:`FILLS`

    Returns
    -------
    MaskView

    Examples
    --------
    >>> v = mask_view(2, causal=True)
    >>> v.mask.astype(int)
    array([[1, 0, 0, 0, 0, 0],
           [1, 1, 0, 0, 0, 0],
           [1, 1, 1, 0, 0, 0],
           [1, 1, 1, 1, 0, 0],
           [1, 1, 1, 1, 0, 0],
           [1, 1, 1, 1, 0, 0]])
    >>> float(v.weights[~v.mask].max())
    0.0
    >>> left = mask_view(2, causal=True, pad_side="left")
    >>> left.empty_rows, mask_view(2, True, pad_side="left", fill="-1e9 fp16").nan_rows
    ((0, 1), (0, 1))
    >>> mask_view(1, n_queries=3).weights.shape
    (3, 6)
    """
    tokens = tuple(str(t) for t in tokens)
    S = len(tokens)
    if S < 1:
        raise AttentionInputError("tokens must not be empty.")
    pad_length = int_at_least("pad_length", pad_length, 0)
    if pad_length > S:
        raise AttentionInputError(
            f"pad_length must be at most L={S} (the number of tokens); got {pad_length}."
        )
    L = S if n_queries is None else int_at_least("n_queries", n_queries, 1)
    if L > S:
        raise AttentionInputError(f"n_queries must be at most S={S} (the number of tokens); got {L}.")
    for name, value, allowed in (
        ("align", align, ALIGNMENTS),
        ("pad_side", pad_side, PAD_SIDES),
        ("fill", fill, FILLS),
    ):
        if value not in allowed:
            raise AttentionInputError(f"{name} must be one of {allowed}; got {value!r}.")
    n_real = S - pad_length
    if pad_side == "right":
        labels = tokens[:n_real] + ("<pad>",) * pad_length
    else:
        labels = ("<pad>",) * pad_length + tokens[:n_real]
    positions = np.arange(S)
    keep = positions >= pad_length if pad_side == "left" else positions < n_real  # (S,) real keys
    rng = np.random.default_rng(seed)
    # each (S, E), one row per position; a v is drawn too (and not shown: the view has no outputs)
    q, k, _ = rng.standard_normal((3, S, _E))
    q = q[S - L :]  # (L, E): the newest L positions are the queries
    mask = np.broadcast_to(keep, (L, S))  # (S,) -> (L, S): the same keys hidden from every query
    if causal:
        # top-left: query i sees keys 0..i; bottom-right: the last L rows of the (S, S) mask
        mask = mask & (causal_mask(L, S) if align == "top-left" else causal_mask(S)[S - L :])
    mask = np.array(mask)
    scores = q @ k.T / math.sqrt(_E)  # (L, E) @ (E, S) -> (L, S)
    if fill == "-inf":
        masked = np.where(mask, scores, -np.inf)
        weights = softmax(masked)  # attncourse's: a row of -inf gives zeros
    elif fill == "-1e9 fp16":
        with np.errstate(over="ignore"):  # -1e9 does not fit in float16: it becomes -inf
            masked = np.where(mask, scores.astype(np.float16), np.float16(-1e9))
        with np.errstate(invalid="ignore"):  # -inf - (-inf) = NaN: shown, not warned
            shifted = masked.astype(np.float32) - masked.astype(np.float32).max(axis=-1, keepdims=True)
            e = np.exp(shifted)
            weights = (e / e.sum(axis=-1, keepdims=True)).astype(np.float64)  # a plain softmax
    else:
        masked = np.where(mask, scores, -1e9 if fill == "-1e9" else 0.0)
        weights = softmax(masked)
    nan_rows = tuple(int(i) for i in np.flatnonzero(np.isnan(weights).any(axis=-1)))
    return MaskView(
        tokens=labels,
        sentence=tokens,
        seed=int(seed),
        width=_E,
        queries=labels[S - L :],
        pad_length=pad_length,
        pad_side=pad_side,
        causal=bool(causal),
        align=align,
        fill=fill,
        n_real=n_real,
        mask=mask,
        scores=scores,
        masked_scores=masked,
        weights=weights,
        row_sums=weights.sum(axis=-1),
        blocked_weight=float(np.where(mask, 0.0, np.nan_to_num(weights)).sum(axis=-1).max()),
        nan_rows=nan_rows,
        empty_rows=tuple(int(i) for i in np.flatnonzero(~mask.any(axis=-1))),
    )
