"""Helpers shared by the explorers' views: entropy, the softmax Jacobian, divisors.

Their input checks are the package's own (``attncourse._validation``)."""

from __future__ import annotations

from typing import Tuple

import numpy as np

from .._validation import int_at_least, public

__all__ = ["TOKENS", "entropy", "softmax_jacobian", "divisors"]

# The toy sentence used by the heads, mask and self-attention explorers.
TOKENS: Tuple[str, ...] = ("the", "cat", "sat", "on", "the", "mat")


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


@public("divisors")
def divisors(n: int) -> Tuple[int, ...]:
    """The positive divisors of ``n``, ascending: the head counts that can split ``d_model = n``.

    >>> divisors(12)
    (1, 2, 3, 4, 6, 12)
    """
    n = int_at_least("n", n, 1)
    return tuple(h for h in range(1, n + 1) if n % h == 0)
