"""The scaling explorer's view: random queries against random keys, with and without 1/sqrt(d_k)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Dict, Tuple

import numpy as np

from .._validation import int_at_least, public
from ..functional import softmax
from ._common import entropy, softmax_jacobian

__all__ = ["D_K_VALUES", "DEFAULT_D_K", "VARIANTS", "ScalingStats", "ScalingView", "scaling_view"]

# Powers of two from 1 to 1024.
D_K_VALUES: Tuple[int, ...] = tuple(2**i for i in range(11))
DEFAULT_D_K = 64
VARIANTS: Tuple[str, ...] = ("unscaled", "scaled")
_QUERIES, _KEYS, _STAT_QUERIES = 6, 8, 256


@dataclass(frozen=True)
class ScalingStats:
    """Averages over the 256 queries, for one variant (scaled or unscaled)."""

    score_std: float  # standard deviation of the scores
    max_weight: float  # mean of each query's largest weight
    entropy: float  # mean entropy in nats (log S is uniform)
    grad_norm: float  # mean Frobenius norm of the softmax Jacobian


@dataclass(frozen=True, eq=False)
class ScalingView:
    """What the scaling explorer shows (see :func:`scaling_view`)."""

    d_k: int
    scale: float  # 1/sqrt(d_k)
    q: np.ndarray  # (L, d_k), the queries shown
    k: np.ndarray  # (S, d_k)
    scores: Dict[str, np.ndarray]  # variant -> (L, S)
    weights: Dict[str, np.ndarray]  # variant -> (L, S)
    stats: Dict[str, ScalingStats]  # variant -> averages over n_queries_averaged queries
    max_entropy: float  # log S
    n_queries_averaged: int


@public("scaling_view")
def scaling_view(d_k: int = DEFAULT_D_K, seed: int = 0) -> ScalingView:
    r"""Scores of random queries against random keys of width ``d_k``, with and without the scale.

    The entries of the queries and the ``S = 8`` keys are standard normal, so each score
    :math:`q \cdot k` has variance ``d_k``.  Unscaled, the scores spread out as ``d_k`` grows and
    the softmax saturates (one weight near 1, entropy and gradient near 0); divided by
    :math:`\sqrt{d_k}` they keep variance 1 at every width.  The vectors for a smaller ``d_k``
    are the first ``d_k`` columns of the same draw, so moving the slider lengthens the same
    vectors rather than drawing new ones.  The summary numbers are averages over 256 queries
    (so they change smoothly with ``d_k``); the arrays hold the first ``L = 6`` of them.

    Parameters
    ----------
    d_k : int
        The query/key width ``E``.
    seed : int
        Seed of the draw.

    Returns
    -------
    ScalingView
        ``scores``, ``weights`` and ``stats`` are keyed by ``"unscaled"`` and ``"scaled"``.

    Examples
    --------
    >>> small, large = scaling_view(1), scaling_view(1024)
    >>> large.stats["unscaled"].entropy < small.stats["unscaled"].entropy
    True
    >>> bool(np.allclose(large.weights["scaled"].sum(-1), 1.0))
    True
    """
    d_k = int_at_least("d_k", d_k, 1)
    rng = np.random.default_rng(seed)
    width = max(d_k, D_K_VALUES[-1])
    # Prefixes of one draw: (N, d_k) queries, of which the first L are shown, and (S, d_k) keys.
    q_all = rng.standard_normal((_STAT_QUERIES, width))[:, :d_k]
    k = rng.standard_normal((_KEYS, width))[:, :d_k]
    scale = 1.0 / math.sqrt(d_k)
    # einsum, not @: a product this small runs faster without BLAS's threads (which stall on a
    # busy machine); the weights are softmax(scores * scale), as scaled_dot_product_attention's.
    scores_all = np.einsum("ne,se->ns", q_all, k)  # (N, d_k), (S, d_k) -> (N, S)
    scores, weights, stats = {}, {}, {}
    for name, variant_scores in (("unscaled", scores_all), ("scaled", scores_all * scale)):
        variant_weights = softmax(variant_scores)
        jacobian = softmax_jacobian(variant_weights)  # (N, S, S): d weights / d scores, one per query
        scores[name], weights[name] = variant_scores[:_QUERIES], variant_weights[:_QUERIES]
        stats[name] = ScalingStats(
            score_std=float(variant_scores.std()),
            max_weight=float(variant_weights.max(axis=-1).mean()),
            entropy=float(entropy(variant_weights).mean()),
            grad_norm=float(np.linalg.norm(jacobian, axis=(-2, -1)).mean()),
        )
    return ScalingView(
        d_k=d_k,
        scale=scale,
        q=q_all[:_QUERIES],
        k=k,
        scores=scores,
        weights=weights,
        stats=stats,
        max_entropy=math.log(_KEYS),
        n_queries_averaged=_STAT_QUERIES,
    )
