"""The mask explorer's view: padding and causal masks, the masked scores and the weights."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional, Sequence, Tuple

import numpy as np

from .._backend import AttentionInputError
from .._validation import int_at_least, public
from ..functional import scaled_dot_product_attention
from ..masks import causal_mask, padding_mask
from ._common import TOKENS

__all__ = ["MASK_LENGTH", "DEFAULT_PAD_LENGTH", "DEFAULT_CAUSAL", "MaskView", "mask_view"]

# One key sequence of MASK_LENGTH tokens, the last pad_length of them padding.
MASK_LENGTH = len(TOKENS)
DEFAULT_PAD_LENGTH = 2
DEFAULT_CAUSAL = False
_E = 4


@dataclass(frozen=True, eq=False)
class MaskView:
    """What the mask explorer shows (see :func:`mask_view`)."""

    tokens: Tuple[str, ...]  # the S keys, "<pad>" where padded
    queries: Tuple[str, ...]  # the L queries
    pad_length: int
    causal: bool
    n_real: int  # real (unpadded) keys
    mask: np.ndarray  # (L, S) bool, True = may attend
    scores: np.ndarray  # (L, S) scaled, before masking
    masked_scores: np.ndarray  # (L, S) -inf where blocked
    weights: np.ndarray  # (L, S)
    row_sums: np.ndarray  # (L,)
    empty_rows: Tuple[int, ...]  # the queries with nothing to attend to


@public("mask_view")
def mask_view(
    pad_length: int = DEFAULT_PAD_LENGTH,
    causal: bool = DEFAULT_CAUSAL,
    tokens: Sequence[str] = TOKENS,
    seed: int = 0,
    n_queries: Optional[int] = None,
) -> MaskView:
    """Attention over one key sequence whose last ``pad_length`` tokens are padding.

    The padding mask hides the padded keys from every query; ``causal=True`` also hides every
    key after the query (top-left aligned, as PyTorch's ``is_causal``).  Blocked scores become
    ``-inf`` before the softmax, so their weights are exactly 0 and each row still sums to 1,
    except a row with no key left to see, which is all zeros.

    Parameters
    ----------
    pad_length : int
        From 0 to ``S = len(tokens)``.
    causal : bool
    tokens : sequence of str, length S
        The real key tokens; the padded positions are shown as ``<pad>``.
    seed : int
        Seed of the random ``q, k, v`` (width 4).
    n_queries : int, optional
        ``L``, from 1 to ``S``: the first ``L`` positions are the queries (``None``: all of
        them, ``L = S``).  With ``L < S`` the causal mask stays top-left aligned, as PyTorch's
        ``is_causal``: query ``i`` sees keys ``0 .. i``.

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
    n_real = S - pad_length
    rng = np.random.default_rng(seed)
    q, k, v = rng.standard_normal((3, S, _E))  # each (S, E); the queries are the first L rows
    q = q[:L]
    mask = np.broadcast_to(padding_mask([n_real], S), (L, S))  # (1, S) -> (L, S): the same keys hidden
    if causal:
        mask = mask & causal_mask(L, S)  # (L, S) & (L, S)
    scores = q @ k.T / math.sqrt(_E)  # (L, E) @ (E, S) -> (L, S)
    _, weights = scaled_dot_product_attention(q, k, v, mask)  # (L, S)
    labels = tokens[:n_real] + ("<pad>",) * pad_length
    return MaskView(
        tokens=labels,
        queries=labels[:L],
        pad_length=pad_length,
        causal=bool(causal),
        n_real=n_real,
        mask=np.array(mask),
        scores=scores,
        masked_scores=np.where(mask, scores, -np.inf),
        weights=weights,
        row_sums=weights.sum(axis=-1),
        empty_rows=tuple(int(i) for i in np.flatnonzero(~mask.any(axis=-1))),
    )
