"""The kernel explorer's view: Nadaraya-Watson kernel regression, a query pooling noisy values."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Tuple

import numpy as np

from .._validation import positive_number, public
from ..pooling import nadaraya_watson

__all__ = [
    "WIDTHS",
    "QUERIES",
    "DEFAULT_WIDTH",
    "DEFAULT_QUERY",
    "N_KEYS",
    "KernelView",
    "kernel_view",
    "true_function",
]

WIDTHS: Tuple[float, ...] = (0.05, 0.1, 0.2, 0.35, 0.5, 1.0, 2.0, 5.0)
QUERIES: Tuple[float, ...] = (0.5, 1.5, 2.5, 3.5, 4.5)
DEFAULT_WIDTH = 0.35
DEFAULT_QUERY = 2.5
N_KEYS = 40
_GRID = 101


def true_function(x: np.ndarray) -> np.ndarray:
    """The function the noisy training values come from: ``2 sin(x) + x^0.8``."""
    return 2 * np.sin(x) + x**0.8


@dataclass(frozen=True, eq=False)
class KernelView:
    """What the kernel explorer shows (see :func:`kernel_view`)."""

    width: float
    query: float
    x_key: np.ndarray  # (S,) training inputs
    y_value: np.ndarray  # (S,) noisy targets
    x_grid: np.ndarray  # (G,) where the curve is drawn
    y_grid: np.ndarray  # (G,) the prediction there
    y_true: np.ndarray  # (G,) the true function there
    weights: np.ndarray  # (S,) the query's weights over the keys
    prediction: float  # at the query
    mse: float  # mean squared error of the curve against the true function


@public("kernel_view")
def kernel_view(width: float = DEFAULT_WIDTH, query: float = DEFAULT_QUERY, seed: int = 0) -> KernelView:
    r"""Nadaraya-Watson regression with a Gaussian kernel of width ``width`` on 40 noisy points.

    Each prediction :math:`f(x) = \sum_i \mathrm{softmax}_i(-(x - x_i)^2 / 2w^2)\, y_i` is
    attention with the input as the query, the training inputs as keys and their targets as
    values (:func:`attncourse.pooling.nadaraya_watson`).  A narrow kernel follows the noise, a
    wide one flattens towards the mean of all the values.

    Examples
    --------
    >>> narrow, wide = kernel_view(0.05), kernel_view(5.0)
    >>> float(narrow.weights.max()) > float(wide.weights.max())
    True
    >>> bool(np.isclose(kernel_view().weights.sum(), 1.0))
    True
    """
    width = positive_number("width", width)
    rng = np.random.default_rng(seed)
    x_key = np.sort(rng.uniform(0, 5, N_KEYS))  # (S,)
    y_value = true_function(x_key) + rng.normal(0, 0.5, N_KEYS)  # (S,)
    x_grid = np.linspace(0, 5, _GRID)  # (G,)
    y_grid, _ = nadaraya_watson(x_grid, x_key, y_value, width)  # (G,), (G, S)
    prediction, weights = nadaraya_watson(np.array([float(query)]), x_key, y_value, width)  # (1,), (1, S)
    y_true = true_function(x_grid)
    return KernelView(
        width=width,
        query=float(query),
        x_key=x_key,
        y_value=y_value,
        x_grid=x_grid,
        y_grid=y_grid,
        y_true=y_true,
        weights=weights[0],
        prediction=float(prediction[0]),
        mse=float(np.mean((y_grid - y_true) ** 2)),
    )
