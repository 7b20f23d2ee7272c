"""Messages and wrong variants shared by several chapters' exercises."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .. import softmax
from ._registry import Diagnosis

__all__ = [
    "INVERTED_MASK",
    "D_MODEL_SCALE",
    "NO_MAX",
    "NAN_FULLY_MASKED",
    "LARGE_NEGATIVE",
    "BROADCAST",
    "swap",
    "naive_softmax",
    "nan_masked_softmax",
    "inverted_mask",
]

INVERTED_MASK = (
    "your mask seems inverted: True must mean 'may attend' (the key is visible), False 'blocked'. "
    "Swap the two branches of np.where, or use ~mask"
)
D_MODEL_SCALE = (
    "did you scale by sqrt(d_model) instead of sqrt(d_head)? Each head's scores are dot products "
    "of d_head numbers, so the scale is 1/sqrt(d_head)"
)
NO_MAX = (
    "forgot to subtract the max: overflow to nan. exp(x) is inf for large x and inf/inf is NaN; "
    "subtract each row's maximum first (the softmax does not change)"
)
NAN_FULLY_MASKED = (
    "a row where every key is masked came out as NaN (0/0): a query with nothing to attend to "
    "must get an all-zero row"
)
LARGE_NEGATIVE = (
    "a fully masked row came out uniform (1/S each): a large negative number instead of -inf "
    "makes the masked keys equal, not absent. Use -inf, and give rows with nothing to attend to all zeros"
)
BROADCAST = (
    "the shapes do not line up: keep the reduced axis (keepdims=True) so a (rows, 1) array "
    "broadcasts against (rows, columns)"
)


def swap(x: np.ndarray) -> np.ndarray:
    """Swap the last two axes: ``(..., S, E) -> (..., E, S)``."""
    return np.swapaxes(x, -1, -2)


def naive_softmax(x: np.ndarray) -> np.ndarray:
    """Softmax without subtracting the maximum, in ``x``'s own dtype: overflows to NaN."""
    e = np.exp(x)
    return e / e.sum(axis=-1, keepdims=True)


def nan_masked_softmax(scores: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Stable masked softmax that leaves a fully masked row as NaN (the classic slip)."""
    s = np.where(mask, scores, -np.inf)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def inverted_mask(fn: Callable[..., Any], position: int) -> Diagnosis:
    """The mistake "True means blocked": ``fn`` run with the mask argument negated."""

    def variant(*args: Any) -> Any:
        args = list(args)
        args[position] = ~np.asarray(args[position], dtype=bool)
        return fn(*args)

    return Diagnosis(INVERTED_MASK, variant=variant)


def masked_softmax_reference(scores: np.ndarray, mask: np.ndarray) -> np.ndarray:
    return softmax(np.where(mask, scores, -np.inf))
