"""The efficient-attention explorer's view: the online softmax over one row of scores, block by block."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Tuple

import numpy as np

from .._backend import AttentionInputError
from .._validation import int_at_least, public
from ..functional import softmax

__all__ = ["ROW_LENGTH", "BLOCK_SIZES", "DEFAULT_BLOCK_SIZE", "EfficientView", "efficient_view", "n_blocks"]

ROW_LENGTH = 32  # S: keys in the row
BLOCK_SIZES: Tuple[int, ...] = (4, 8, 16, 32)
DEFAULT_BLOCK_SIZE = 8


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
    weights_so_far: np.ndarray  # (S,) exp(s - m) / l over the keys seen, 0 beyond
    out_so_far: float  # the output from the keys seen so far
    weights: np.ndarray  # (S,) the exact softmax of the whole row
    out: float  # the exact output
    floats_held: int  # scores held at once per query: the block size
    floats_full: int  # what a full row would hold: S


@public("efficient_view")
def efficient_view(block_size: int = DEFAULT_BLOCK_SIZE, step: int = 1, seed: int = 0) -> EfficientView:
    r"""The online softmax after ``step`` blocks of ``block_size`` keys, against the exact one.

    It keeps a running maximum :math:`m`, a running sum :math:`\ell = \sum_j e^{s_j - m}` and a
    running output; a new block with a larger maximum rescales both by :math:`e^{m_{old} - m_{new}}`.
    After the last block the weights and the output equal the full softmax's, while only
    ``block_size`` scores per query were ever held at once.

    Examples
    --------
    >>> last = efficient_view(8, 4)
    >>> bool(np.allclose(last.weights_so_far, last.weights)), bool(np.isclose(last.out_so_far, last.out))
    (True, True)
    >>> float(efficient_view(8, 1).weights_so_far[8:].max())
    0.0
    """
    block_size = int_at_least("block_size", block_size, 1)
    total = n_blocks(block_size)
    step = int_at_least("step", step, 1)
    if step > total:
        raise AttentionInputError(f"step must be at most {total} (= S / block_size); got {step}.")
    rng = np.random.default_rng(seed)
    scores = rng.normal(0, 2, ROW_LENGTH)  # (S,)
    values = rng.normal(0, 1, ROW_LENGTH)  # (S,)
    m, denom, acc = -np.inf, 0.0, 0.0  # running max, sum of exp(s - m), sum of exp(s - m) * v
    maxima, sums = [], []
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
        weights_so_far=weights_so_far,
        out_so_far=acc / denom,
        weights=weights,
        out=float(weights @ values),
        floats_held=block_size,
        floats_full=ROW_LENGTH,
    )
