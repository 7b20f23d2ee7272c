"""The scaling explorer's view: chapter 3's random rows of scores, with and without 1/sqrt(d_k)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Dict, Tuple

import numpy as np

from .._validation import int_at_least, public
from ..functional import softmax
from ..toy_data import scaling_draw
from ._common import entropy, softmax_jacobian

__all__ = ["D_K_VALUES", "DEFAULT_D_K", "VARIANTS", "ScalingStats", "ScalingView", "scaling_view"]

# Powers of two from 1 to 1024, chapter 3's grid.
D_K_VALUES: Tuple[int, ...] = tuple(2**i for i in range(11))
DEFAULT_D_K = 64
VARIANTS: Tuple[str, ...] = ("unscaled", "scaled")
_SHOWN = 6  # rows drawn in the map


@dataclass(frozen=True)
class ScalingStats:
    """Averages over chapter 3's 1000 rows, for one variant (scaled or unscaled)."""

    score_std: float  # standard deviation of the scores
    max_weight: float  # mean of each row's largest weight
    entropy: float  # mean entropy in nats (log S is uniform)
    grad_norm: float  # mean Frobenius norm of the softmax Jacobian
    median_grad_norm: float  # its median: the typical row


@dataclass(frozen=True, eq=False)
class ScalingView:
    """What the scaling explorer shows (see :func:`scaling_view`)."""

    d_k: int
    scale: float  # 1/sqrt(d_k)
    q: np.ndarray  # (L, d_k), the queries of the rows shown
    k: np.ndarray  # (L, S, d_k), each shown row's own keys
    scores: Dict[str, np.ndarray]  # variant -> (L, S)
    weights: Dict[str, np.ndarray]  # variant -> (L, S)
    stats: Dict[str, ScalingStats]  # variant -> averages over n_queries_averaged rows
    max_entropy: float  # log S
    n_queries_averaged: int


@public("scaling_view")
def scaling_view(d_k: int = DEFAULT_D_K, seed: int = 0) -> ScalingView:
    r"""Chapter 3's saturation measurement at one width ``d_k``: random rows, with and without the scale.

    Each of the 1000 rows is a query against its own ``S = 16`` keys, all standard normal
    (:func:`attncourse.toy_data.scaling_draw`, the draw chapter 3's tables print), so each score
    :math:`q \cdot k` has variance ``d_k``.  Unscaled, the scores spread out as ``d_k`` grows and
    the softmax saturates (one weight near 1, entropy and gradient near 0); divided by
    :math:`\sqrt{d_k}` they keep variance 1 at every width.  The summary numbers are averages
    (and the median Jacobian norm) over the 1000 rows, as the chapter's tables; the arrays hold
    the first ``L = 6`` rows.  Each ``d_k`` has its own draw, as in the chapter.

    Parameters
    ----------
    d_k : int
        The query/key width ``E``.
    seed : int
        Seed of the draw; 0 is the chapter's.

    Returns
    -------
    ScalingView
        ``scores``, ``weights`` and ``stats`` are keyed by ``"unscaled"`` and ``"scaled"``.

    Examples
    --------
    >>> view = scaling_view(64)
    >>> view.weights["scaled"].shape, view.n_queries_averaged
    ((6, 16), 1000)
    >>> view.stats["unscaled"].max_weight > view.stats["scaled"].max_weight
    True
    >>> bool(np.allclose(view.weights["scaled"].sum(-1), 1.0))
    True
    """
    d_k = int_at_least("d_k", d_k, 1)
    q_all, k_all = scaling_draw(d_k, seed)  # (N, d_k), (N, S, d_k), float32
    scale = 1.0 / math.sqrt(d_k)
    # each row's query against its own S keys, in float32 as the chapter computes them:
    # (N, d_k), (N, S, d_k) -> (N, S); the weights are softmax(scores * scale), as SDPA's
    scores_all = np.einsum("nd,nsd->ns", q_all, k_all).astype(np.float64)
    scores, weights, stats = {}, {}, {}
    for name, variant_scores in (("unscaled", scores_all), ("scaled", scores_all * scale)):
        variant_weights = softmax(variant_scores)
        jacobian = softmax_jacobian(variant_weights)  # (N, S, S): d weights / d scores, one per row
        norms = np.linalg.norm(jacobian, axis=(-2, -1))  # (N,)
        scores[name], weights[name] = variant_scores[:_SHOWN], variant_weights[:_SHOWN]
        stats[name] = ScalingStats(
            score_std=float(variant_scores.std()),
            max_weight=float(variant_weights.max(axis=-1).mean()),
            entropy=float(entropy(variant_weights).mean()),
            grad_norm=float(norms.mean()),
            median_grad_norm=float(np.median(norms)),
        )
    return ScalingView(
        d_k=d_k,
        scale=scale,
        q=q_all[:_SHOWN].astype(np.float64),
        k=k_all[:_SHOWN].astype(np.float64),
        scores=scores,
        weights=weights,
        stats=stats,
        max_entropy=math.log(k_all.shape[1]),
        n_queries_averaged=len(q_all),
    )
