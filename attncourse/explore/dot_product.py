"""The dot-product explorer's view: one query in the plane against five keys, and the weights."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Tuple

import numpy as np

from .._validation import positive_number, public
from ..functional import scaled_dot_product_attention
from ..toy_data import KEYS_2D, VALUES_2D

__all__ = [
    "KEYS_2D",
    "VALUES_2D",
    "ANGLES",
    "LENGTHS",
    "DEFAULT_ANGLE",
    "DEFAULT_LENGTH",
    "DotProductView",
    "dot_product_view",
]

# Five keys in the plane (S, E) = (5, 2), and the values paired with them (S, Ev) = (5, 2).
# KEYS_2D, VALUES_2D: five keys and values in the plane, from attncourse.toy_data (chapter 2 prints them).
ANGLES: Tuple[int, ...] = tuple(range(0, 360, 45))  # degrees
LENGTHS: Tuple[float, ...] = (0.5, 1.0, 2.0, 4.0)
DEFAULT_ANGLE = 45
DEFAULT_LENGTH = 1.0


@dataclass(frozen=True, eq=False)
class DotProductView:
    """What the dot-product explorer shows (see :func:`dot_product_view`)."""

    angle: float  # degrees
    length: float
    q: np.ndarray  # (E,) = (2,)
    k: np.ndarray  # (S, E)
    v: np.ndarray  # (S, Ev)
    scores: np.ndarray  # (S,) q . k_j, unscaled as in chapter 2
    weights: np.ndarray  # (S,)
    out: np.ndarray  # (Ev,) the weighted sum of the values


@public("dot_product_view")
def dot_product_view(angle: float = DEFAULT_ANGLE, length: float = DEFAULT_LENGTH) -> DotProductView:
    r"""A query :math:`q = \ell(\cos\theta, \sin\theta)` against the five keys of ``KEYS_2D``.

    The scores are :math:`q \cdot k_j`, unscaled as in chapter 2 (``scale=1.0``; the scale is
    chapter 3), the weights their softmax, and the output the weighted sum of ``VALUES_2D``:
    turning the query towards a key raises that key's weight, and a longer query sharpens the
    weights (its scores grow with its length).

    Examples
    --------
    >>> v = dot_product_view(0, 4.0)  # pointing along the first key
    >>> int(v.weights.argmax()), bool(np.isclose(v.weights.sum(), 1.0))
    (0, True)
    >>> bool(dot_product_view(0, 0.5).weights.max() < v.weights.max())
    True
    """
    length = positive_number("length", length)
    theta = math.radians(float(angle))
    q = length * np.array([math.cos(theta), math.sin(theta)])  # (E,)
    k, v = np.array(KEYS_2D), np.array(VALUES_2D)
    # (1, E), (S, E), (S, Ev) -> (1, Ev), (1, S); chapter 2 does not scale the scores
    out, weights = scaled_dot_product_attention(q[None], k, v, scale=1.0)
    return DotProductView(
        angle=float(angle),
        length=length,
        q=q,
        k=k,
        v=v,
        scores=k @ q,  # (S, E) @ (E,) -> (S,)
        weights=weights[0],
        out=out[0],
    )
