"""Messages and wrong variants shared by several chapters' exercises."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ... import softmax
from ..engine.registry import SHARED_MISTAKES, Diagnosis

__all__ = [
    "UNSCALED",
    "DIVIDED_BY_E",
    "TIMES_SQRT",
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
    "the weights go to the keys that should be hidden and skip the ones that should be seen: "
    "what does True mean in your mask, and which branch of np.where keeps the score?"
)
D_MODEL_SCALE = (
    "the heads' weights are flatter than expected, by the same factor in every head: each head's "
    "scores are dot products of how many numbers?"
)
NO_MAX = (
    "NaN where the expected row is finite, for large logits: what does exp(1000) give in floating "
    "point, and what is inf / inf?"
)
NAN_FULLY_MASKED = (
    "a row where every key is masked came out as NaN (0/0): what should a query with nothing to "
    "attend to get?"
)
LARGE_NEGATIVE = (
    "a fully masked row came out uniform (1/S each): with every score equal to the same large "
    "negative number, what does softmax do?"
)
BROADCAST = (
    "the shapes do not line up when you divide by the row sums: what shape does a sum over the "
    "last axis have, and does it broadcast against (rows, columns)?"
)
SHARED_MISTAKES.update(
    {
        INVERTED_MASK: (
            "inverted mask",
            "True must mean 'may attend': swap the two branches of np.where, or use ~mask",
        ),
        D_MODEL_SCALE: ("scale by d_model", "scale by 1/sqrt(d_head), not 1/sqrt(d_model)"),
        NO_MAX: (
            "missing max subtraction",
            "subtract each row's maximum before exp (the softmax does not change)",
        ),
        NAN_FULLY_MASKED: (
            "NaN for a fully masked row",
            "give a row with nothing to attend to all zeros (np.where on the row's sum, or nan_to_num)",
        ),
        LARGE_NEGATIVE: (
            "large negative instead of -inf",
            "use -inf for blocked keys, and give rows with nothing to attend to all zeros",
        ),
        BROADCAST: ("reduced axis dropped", "keep the reduced axis (keepdims=True)", r"sum"),
    }
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


# The scale of dot-product scores (chapter 3 and its layers).
UNSCALED = (
    "the scores are larger than expected by a factor of sqrt(E), whatever the inputs: what makes "
    "them grow with the width E?"
)
DIVIDED_BY_E = (
    "the scores are smaller than expected by a factor of sqrt(E): the scores' variance is E; what is "
    "their standard deviation?"
)
TIMES_SQRT = "the scores are E times the expected ones: did the scale go the right way?"
SHARED_MISTAKES.update(
    {
        UNSCALED: ("unscaled scores", "divide the scores by sqrt(E), the width of q and k"),
        DIVIDED_BY_E: ("divided by E", "divide by sqrt(E), not E"),
        TIMES_SQRT: ("multiplied by sqrt(E)", "divide by sqrt(E) instead of multiplying"),
    }
)
