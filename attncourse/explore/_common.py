"""Helpers shared by the explorers' views: entropy, the softmax Jacobian, divisors, input checks."""

from __future__ import annotations

from typing import Any, Tuple

import numpy as np

from .._backend import AttentionInputError

__all__ = ["TOKENS", "entropy", "softmax_jacobian", "divisors"]

# The toy sentence used by the heads, mask and self-attention explorers.
TOKENS: Tuple[str, ...] = ("the", "cat", "sat", "on", "the", "mat")


def check_int(func: str, name: str, n: Any, minimum: int = 1) -> int:
    """``n`` as an int, or an :class:`AttentionInputError` that names ``func`` and ``name``."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < minimum:
        raise AttentionInputError(f"{func}: {name} must be an integer >= {minimum}; got {n!r}.")
    return int(n)


def check_positive(func: str, name: str, x: Any) -> float:
    """``x`` as a float > 0, or an :class:`AttentionInputError`."""
    if isinstance(x, bool) or not isinstance(x, (int, float, np.number)) or not x > 0:
        raise AttentionInputError(f"{func}: {name} must be a positive number; got {x!r}.")
    return float(x)


def entropy(p: np.ndarray, axis: int = -1) -> np.ndarray:
    """Shannon entropy in nats of distributions along ``axis`` (``0 log 0 = 0``).

    It is ``log(n)`` for a uniform distribution over ``n`` outcomes and 0 for a one-hot one.

    >>> import math
    >>> float(entropy(np.full(4, 0.25))) == math.log(4)
    True
    >>> float(entropy(np.array([1.0, 0.0, 0.0])))
    0.0
    """
    p = np.asarray(p, dtype=np.float64)
    log_p = np.log(np.where(p > 0, p, 1.0))  # zeros contribute 0 * log(1) = 0, and no warning
    return 0.0 - (p * log_p).sum(axis=axis)  # 0.0 - 0.0, not -0.0, for a one-hot p


def softmax_jacobian(p: np.ndarray) -> np.ndarray:
    r"""Jacobian of softmax at output ``p (..., n)``: :math:`\mathrm{diag}(p) - p p^\top`, ``(..., n, n)``.

    It vanishes as ``p`` approaches one-hot: a saturated softmax passes almost no gradient back.

    >>> softmax_jacobian(np.array([0.5, 0.5]))
    array([[ 0.25, -0.25],
           [-0.25,  0.25]])
    """
    p = np.asarray(p, dtype=np.float64)
    eye = np.eye(p.shape[-1])
    return (
        p[..., :, None] * eye - p[..., :, None] * p[..., None, :]
    )  # (..., n, 1) * (..., 1, n) -> (..., n, n)


def divisors(n: int) -> Tuple[int, ...]:
    """The positive divisors of ``n``, ascending: the head counts that can split ``d_model = n``.

    >>> divisors(12)
    (1, 2, 3, 4, 6, 12)
    """
    n = check_int("divisors", "n", n)
    return tuple(h for h in range(1, n + 1) if n % h == 0)
