"""The positional explorer's view: sinusoidal encodings and RoPE seen from one position."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional, Tuple

import numpy as np

from .._backend import AttentionInputError
from .._validation import int_at_least, public
from ..positional import apply_rope, sinusoidal_positional_encoding
from ..toy_data import PE_D_MODEL, PE_TRAIN_LENGTH

__all__ = [
    "D_MODEL_VALUES",
    "POSITIONS",
    "N_POSITIONS",
    "DEFAULT_D_MODEL",
    "DEFAULT_POSITION",
    "EXTRAPOLATION_POSITIONS",
    "PositionalView",
    "positional_view",
    "ExtrapolationView",
    "extrapolation_view",
]

D_MODEL_VALUES: Tuple[int, ...] = (16, 32, 64)
N_POSITIONS = 32
POSITIONS: Tuple[int, ...] = (0, 4, 8, 12, 16, 20, 24, 28)
DEFAULT_D_MODEL = 32
DEFAULT_POSITION = 8
# The positions the explorer offers past the training length (PE_TRAIN_LENGTH = 32).
EXTRAPOLATION_POSITIONS: Tuple[int, ...] = (16, 32, 64, 112)


@dataclass(frozen=True, eq=False)
class PositionalView:
    """What the positional explorer shows (see :func:`positional_view`)."""

    d_model: int
    position: int
    n_positions: int
    pe: np.ndarray  # (n_positions, d_model) the sinusoidal table
    row: np.ndarray  # (d_model,) pe[position]
    offsets: np.ndarray  # (n_positions,) j - position
    pe_dots: np.ndarray  # (n_positions,) pe[position] . pe[j]
    rope_q: np.ndarray  # (d_model,) the query vector rotated to `position`
    rope_scores: np.ndarray  # (n_positions, n_positions) query at m . key at n, / sqrt(d_model)
    rope_row: np.ndarray  # (n_positions,) rope_scores[position]


@public("positional_view")
def positional_view(
    d_model: int = DEFAULT_D_MODEL,
    position: int = DEFAULT_POSITION,
    n_positions: int = N_POSITIONS,
    seed: int = 0,
    base: float = 10000.0,
) -> PositionalView:
    r"""Sinusoidal encodings and RoPE seen from one position.

    ``pe_dots[j]`` is the dot product of position ``position``'s encoding with position ``j``'s,
    shown against the offset ``j - position``: it depends on the offset only
    (:math:`\sum_i \cos(\text{offset}\cdot\omega_i)` for even ``d_model``), is symmetric in it and
    largest at 0.  ``rope_scores[m, n]`` is the score of one query vector rotated to position
    ``m`` against one key vector rotated to position ``n``; it too depends on ``n - m`` only, so
    every diagonal of the matrix is constant.

    Parameters
    ----------
    d_model : int
        Even.
    position : int
        In ``0 .. n_positions - 1``.
    n_positions : int
    seed : int
        Seed of the random query and key vectors used for RoPE.
    base : float

    Returns
    -------
    PositionalView

    Examples
    --------
    >>> v = positional_view(16, 4)
    >>> v.pe.shape, float(v.pe_dots[v.offsets == 0][0])
    ((32, 16), 8.0)
    >>> bool(np.allclose(positional_view(16, 0).pe_dots[:8], positional_view(16, 20).pe_dots[20:28]))
    True
    """
    d_model = int_at_least("d_model", d_model, 1)
    if d_model % 2:
        raise AttentionInputError(f"d_model must be even (sin/cos and RoPE work in pairs); got {d_model}.")
    n_positions = int_at_least("n_positions", n_positions, 1)
    position = int_at_least("position", position, 0)
    if position >= n_positions:
        raise AttentionInputError(f"position must be below n_positions={n_positions}; got {position}.")
    pe = sinusoidal_positional_encoding(n_positions, d_model, base=base)  # (P, d_model)
    row = pe[position]  # (d_model,)
    pe_dots = pe @ row  # (P, d_model) @ (d_model,) -> (P,)
    rng = np.random.default_rng(seed)
    q, k = rng.standard_normal((2, 1, d_model))  # one query and one key vector, (1, d_model) each
    positions = np.arange(n_positions)
    q_rot = apply_rope(np.broadcast_to(q, (n_positions, d_model)), positions, base=base)  # (P, d_model)
    k_rot = apply_rope(np.broadcast_to(k, (n_positions, d_model)), positions, base=base)  # (P, d_model)
    rope_scores = q_rot @ k_rot.T / math.sqrt(d_model)  # (P, d_model) @ (d_model, P) -> (P, P)
    return PositionalView(
        d_model=d_model,
        position=position,
        n_positions=n_positions,
        pe=pe,
        row=row,
        offsets=positions - position,
        pe_dots=pe_dots,
        rope_q=q_rot[position],
        rope_scores=rope_scores,
        rope_row=rope_scores[position],
    )


@dataclass(frozen=True, eq=False)
class ExtrapolationView:
    """What the positional explorer shows past the training length (see :func:`extrapolation_view`)."""

    d_model: int
    position: int
    train_length: int  # N: the positions 0 .. N - 1 a model was trained on
    pe: np.ndarray  # (n_positions, d_model) the sinusoidal table, far past N
    row: np.ndarray  # (d_model,) pe[position]
    low: np.ndarray  # (d_model,) the smallest value each dimension took at positions 0 .. N - 1
    high: np.ndarray  # (d_model,) the largest
    outside: np.ndarray  # (n_positions,) int: dimensions of each position outside [low, high]
    outside_row: np.ndarray  # (d_model,) bool: which of pe[position]'s dimensions are outside


@public("extrapolation_view")
def extrapolation_view(
    d_model: int = PE_D_MODEL,
    position: int = PE_TRAIN_LENGTH,
    train_length: int = PE_TRAIN_LENGTH,
    n_positions: Optional[int] = None,
    base: float = 10000.0,
) -> ExtrapolationView:
    """The sinusoidal encoding past a training length ``N``: which dimensions leave the range seen.

    A model trained on sequences of ``N`` positions only ever saw each dimension of the encoding
    between its smallest and largest value over positions ``0 .. N - 1``.  Past ``N`` the slow
    pairs keep turning, and ``outside[p]`` counts the dimensions of position ``p`` that lie
    outside that range: 0 for every ``p < N``, most of them right after.  Chapter 7 prints the
    same count for ``d_model = N = 32`` (:mod:`attncourse.toy_data`).

    Parameters
    ----------
    d_model : int
        Even.
    position : int
        In ``0 .. n_positions - 1``.
    train_length : int
    n_positions : int, optional
        Rows of the table (default ``4 * train_length``).

    Examples
    --------
    >>> v = extrapolation_view(32, 32)
    >>> int(v.outside[:32].max()), int(v.outside[32])
    (0, 22)
    """
    d_model = int_at_least("d_model", d_model, 2)
    if d_model % 2:
        raise AttentionInputError(f"d_model must be even (sin/cos come in pairs); got {d_model}.")
    train_length = int_at_least("train_length", train_length, 1)
    n_positions = 4 * train_length if n_positions is None else int_at_least("n_positions", n_positions, 1)
    position = int_at_least("position", position, 0)
    if position >= n_positions:
        raise AttentionInputError(f"position must be below n_positions={n_positions}; got {position}.")
    pe = sinusoidal_positional_encoding(n_positions, d_model, base=base)  # (P, d_model)
    seen = pe[:train_length]  # (N, d_model): what training showed
    low, high = seen.min(axis=0), seen.max(axis=0)  # (d_model,) each
    beyond = (pe < low) | (pe > high)  # (P, d_model)
    return ExtrapolationView(
        d_model=d_model,
        position=position,
        train_length=train_length,
        pe=pe,
        row=pe[position],
        low=low,
        high=high,
        outside=beyond.sum(axis=1),
        outside_row=beyond[position],
    )
