"""The efficient-attention explorer's view: the online softmax over chapter 9's row, block by block."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Tuple

import numpy as np

from .._backend import AttentionInputError
from .._validation import int_at_least, public
from ..functional import softmax
from ..toy_data import ONLINE_SCORES, ONLINE_VALUES

__all__ = ["ROW_LENGTH", "BLOCK_SIZES", "DEFAULT_BLOCK_SIZE", "EfficientView", "efficient_view", "n_blocks"]

ROW_LENGTH = len(ONLINE_SCORES)  # S: keys in the row, 5
# one key at a time (chapter 9's first walk-through), blocks of 2, 2, 1 (its second), the whole row
BLOCK_SIZES: Tuple[int, ...] = (1, 2, ROW_LENGTH)
DEFAULT_BLOCK_SIZE = 2


def n_blocks(block_size: int, S: int = ROW_LENGTH) -> int:
    """How many tiles a row of ``S`` keys takes: ``ceil(S / block_size)``."""
    return math.ceil(S / block_size)


@dataclass(frozen=True, eq=False)
class EfficientView:
    """What the efficient-attention explorer shows (see :func:`efficient_view`)."""

    block_size: int
    step: int  # blocks seen so far, 1 .. n_blocks
    n_blocks: int
    scores: np.ndarray  # (S,) one query's scores
    values: np.ndarray  # (S,) one number per key (Ev = 1)
    running_max: np.ndarray  # (step,) m after each block
    running_sum: np.ndarray  # (step,) l after each block, relative to the current m
    running_out: np.ndarray  # (step,) acc / l after each block: the output of the keys seen so far
    weights_so_far: np.ndarray  # (S,) exp(s - m) / l over the keys seen, 0 beyond
    out_so_far: float  # the output from the keys seen so far
    weights: np.ndarray  # (S,) the exact softmax of the whole row
    out: float  # the exact output
    floats_held: int  # scores held at once per query: the block size
    floats_full: int  # what a full row would hold: S


@public("efficient_view")
def efficient_view(block_size: int = DEFAULT_BLOCK_SIZE, step: int = 1) -> EfficientView:
    r"""The online softmax after ``step`` blocks of ``block_size`` keys, against the exact one.

    The row is chapter 9's worked example, ``toy_data.ONLINE_SCORES`` = [3, 1, 4, 1, 5], with one
    value per key, ``toy_data.ONLINE_VALUES``.  It keeps a running maximum :math:`m`, a running sum
    :math:`\ell = \sum_j e^{s_j - m}` and a running output; a new block with a larger maximum
    rescales both by :math:`e^{m_{old} - m_{new}}`.  After the last block the weights and the
    output equal the full softmax's, while only ``block_size`` scores per query were ever held at
    once.

    Examples
    --------
    >>> view = efficient_view(2, 3)  # blocks [3, 1], [4, 1], [5], as the chapter folds them
    >>> view.running_max.tolist(), np.round(view.running_sum, 4).tolist()
    ([3.0, 4.0, 5.0], [1.1353, 1.4675, 1.5398])
    >>> bool(np.allclose(view.weights_so_far, view.weights)), bool(np.isclose(view.out_so_far, view.out))
    (True, True)
    >>> float(efficient_view(2, 1).weights_so_far[2:].max())
    0.0
    """
    block_size = int_at_least("block_size", block_size, 1)
    total = n_blocks(block_size)
    step = int_at_least("step", step, 1)
    if step > total:
        raise AttentionInputError(f"step must be at most {total} (= S / block_size); got {step}.")
    scores = np.array(ONLINE_SCORES)  # (S,)
    values = np.array(ONLINE_VALUES)  # (S,)
    m, denom, acc = -np.inf, 0.0, 0.0  # running max, sum of exp(s - m), sum of exp(s - m) * v
    maxima, sums, outs = [], [], []
    for b in range(step):
        block = slice(b * block_size, (b + 1) * block_size)
        m_new = max(m, float(scores[block].max()))
        rescale = math.exp(m - m_new) if np.isfinite(m) else 0.0  # older terms, relative to the new max
        p = np.exp(scores[block] - m_new)  # (b,)
        denom = denom * rescale + float(p.sum())
        acc = acc * rescale + float(p @ values[block])  # (b,) @ (b,) -> ()
        m = m_new
        maxima.append(m)
        sums.append(denom)
        outs.append(acc / denom)
    seen = min(step * block_size, ROW_LENGTH)
    weights_so_far = np.zeros(ROW_LENGTH)
    weights_so_far[:seen] = np.exp(scores[:seen] - m) / denom
    weights = softmax(scores)
    return EfficientView(
        block_size=block_size,
        step=step,
        n_blocks=total,
        scores=scores,
        values=values,
        running_max=np.array(maxima),
        running_sum=np.array(sums),
        running_out=np.array(outs),
        weights_so_far=weights_so_far,
        out_so_far=acc / denom,
        weights=weights,
        out=float(weights @ values),
        floats_held=block_size,
        floats_full=ROW_LENGTH,
    )
