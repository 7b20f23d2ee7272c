"""The kernel explorer's view: Nadaraya-Watson kernel regression, a query pooling noisy values."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Tuple

import numpy as np

from .. import toy_data
from .._validation import positive_number, public
from ..pooling import nadaraya_watson

__all__ = [
    "WIDTHS",
    "QUERIES",
    "DEFAULT_WIDTH",
    "DEFAULT_QUERY",
    "N_KEYS",
    "LEAVE_ONE_OUT",
    "KernelView",
    "kernel_view",
    "true_function",
]

WIDTHS: Tuple[float, ...] = (0.05, 0.1, 0.2, 0.3, 0.5, 1.0, 2.0, 5.0)
QUERIES: Tuple[float, ...] = (0.5, 1.5, 2.5, 3.5, 4.5)
DEFAULT_WIDTH = 0.3  # one of the widths chapter 0 prints
DEFAULT_QUERY = 2.5
N_KEYS = toy_data.KERNEL_N  # chapter 0's training points
LEAVE_ONE_OUT: Tuple[bool, ...] = (False, True)
_GRID = 101


true_function = toy_data.kernel_function  # the function the noisy training values come from


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
    leave_one_out: bool = False  # True: the curve and the query are training points, self masked
    train_mse: float = 0.0  # error at the training points against their values, each may attend to itself
    loo_mse: float = 0.0  # the same with each point kept from attending to itself (leave-one-out)


@public("kernel_view")
def kernel_view(
    width: float = DEFAULT_WIDTH, query: float = DEFAULT_QUERY, seed: int = 0, leave_one_out: bool = False
) -> KernelView:
    r"""Nadaraya-Watson regression with a Gaussian kernel of width ``width`` on chapter 0's 50 noisy
    training points (``toy_data.kernel_regression_data``; ``seed=0`` draws the chapter's).

    Each prediction :math:`f(x) = \sum_i \mathrm{softmax}_i(-(x - x_i)^2 / 2w^2)\, y_i` is
    attention with the input as the query, the training inputs as keys and their targets as
    values (:func:`attncourse.pooling.nadaraya_watson`).  A narrow kernel follows the noise, a
    wide one flattens towards the mean of all the values.

    ``leave_one_out=False`` draws the prediction on a grid and at ``query``.  ``True`` predicts
    each training point from the others only (a mask keeps each query from its own key, chapter
    0's fit of the width), draws those predictions, and moves the query to the nearest training
    point, whose weight on itself is then 0.  Both modes report the error at the training points
    with and without that mask (``train_mse``, ``loo_mse``): the first falls towards 0 as the
    kernel narrows (each point predicts itself), the second does not.

    Examples
    --------
    >>> narrow, wide = kernel_view(0.05), kernel_view(5.0)
    >>> float(narrow.weights.max()) > float(wide.weights.max())
    True
    >>> bool(np.isclose(kernel_view().weights.sum(), 1.0))
    True
    >>> narrow.train_mse < narrow.loo_mse
    True
    """
    width = positive_number("width", width)
    if leave_one_out not in LEAVE_ONE_OUT:
        raise ValueError(f"kernel_view: leave_one_out must be True or False; got {leave_one_out!r}.")
    leave_one_out = bool(leave_one_out)
    x_key, y_value, _, _ = toy_data.kernel_regression_data(np.random.default_rng(seed))  # (S,), (S,)
    on_keys, _ = nadaraya_watson(x_key, x_key, y_value, width)  # (S,): each point may see itself
    not_self = ~np.eye(N_KEYS, dtype=bool)  # (S, S): True = may attend
    loo, loo_weights = nadaraya_watson(x_key, x_key, y_value, width, mask=not_self)  # (S,), (S, S)
    train_mse = float(np.mean((on_keys - y_value) ** 2))
    loo_mse = float(np.mean((loo - y_value) ** 2))
    if leave_one_out:
        nearest = int(np.argmin(np.abs(x_key - float(query))))
        x_grid, y_grid = x_key, loo
        query, weights, prediction = float(x_key[nearest]), loo_weights[nearest], float(loo[nearest])
    else:
        x_grid = np.linspace(0, 5, _GRID)  # (G,)
        y_grid, _ = nadaraya_watson(x_grid, x_key, y_value, width)  # (G,)
        at_query, w = nadaraya_watson(np.array([float(query)]), x_key, y_value, width)  # (1,), (1, S)
        query, weights, prediction = float(query), w[0], float(at_query[0])
    y_true = true_function(x_grid)
    return KernelView(
        width=width,
        query=query,
        x_key=x_key,
        y_value=y_value,
        x_grid=x_grid,
        y_grid=y_grid,
        y_true=y_true,
        weights=weights,
        prediction=prediction,
        mse=float(np.mean((y_grid - y_true) ** 2)),
        leave_one_out=leave_one_out,
        train_mse=train_mse,
        loo_mse=loo_mse,
    )
