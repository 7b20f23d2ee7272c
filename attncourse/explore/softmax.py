"""The softmax explorer's view: a distribution over a few candidate words at a temperature."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence, Tuple

import numpy as np

from .._backend import AttentionInputError
from .._validation import positive_number, public
from ..functional import softmax
from ..toy_data import SOFTMAX_SCORES, SOFTMAX_TEMPERATURES, SOFTMAX_WORDS
from ._common import entropy

__all__ = [
    "LOGIT_LABELS",
    "LOGITS",
    "TEMPERATURES",
    "FRAME_TEMPERATURES",
    "SCORE_VALUES",
    "DEFAULT_TEMPERATURE",
    "SoftmaxView",
    "softmax_view",
]

# Chapter 1's six scores (its temperature section), named as candidate next words.
LOGIT_LABELS: Tuple[str, ...] = SOFTMAX_WORDS
LOGITS: Tuple[float, ...] = SOFTMAX_SCORES
# The temperature slider: all of these where pictures are drawn on demand; in the HTML book,
# where every picture is drawn in advance, the five temperatures the chapter plots.
TEMPERATURES: Tuple[float, ...] = (0.1, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 5.0, 10.0)
FRAME_TEMPERATURES: Tuple[float, ...] = SOFTMAX_TEMPERATURES
# The values a score can be set to in the HTML book (besides its own).
SCORE_VALUES: Tuple[float, ...] = (-2.0, 2.0, 5.0)
DEFAULT_TEMPERATURE = 1.0


@dataclass(frozen=True, eq=False)
class SoftmaxView:
    """What the softmax explorer shows (see :func:`softmax_view`)."""

    logits: np.ndarray  # (n,)
    temperature: float
    scaled_logits: np.ndarray  # (n,) logits / temperature
    weights: np.ndarray  # (n,) sums to 1
    entropy: float  # nats
    max_entropy: float  # log n, the uniform distribution's
    max_weight: float


@public("softmax_view")
def softmax_view(temperature: float = DEFAULT_TEMPERATURE, logits: Sequence[float] = LOGITS) -> SoftmaxView:
    """Softmax of ``logits / temperature``: the distribution and how spread out it is.

    Parameters
    ----------
    temperature : float
        Positive.  Below 1 it sharpens the distribution towards the largest logit; above 1 it
        flattens it towards uniform.
    logits : sequence of float, shape (n,)

    Returns
    -------
    SoftmaxView

    Examples
    --------
    >>> v = softmax_view(1.0, [1.0, 2.0, 3.0])
    >>> v.weights.round(4)
    array([0.09  , 0.2447, 0.6652])
    >>> softmax_view(0.1).entropy < softmax_view(1.0).entropy < softmax_view(10.0).entropy
    True
    """
    temperature = positive_number("temperature", temperature)
    logits = np.asarray(logits, dtype=np.float64)
    if logits.ndim != 1 or logits.size < 2:
        raise AttentionInputError(f"logits must be 1-d with at least 2 entries; got shape {logits.shape}.")
    scaled = logits / temperature
    weights = softmax(scaled)
    return SoftmaxView(
        logits=logits,
        temperature=temperature,
        scaled_logits=scaled,
        weights=weights,
        entropy=float(entropy(weights)),
        max_entropy=math.log(logits.size),
        max_weight=float(weights.max()),
    )
