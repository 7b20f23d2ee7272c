"""The positional explorer's view: sinusoidal encodings and RoPE seen from one position."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Tuple

import numpy as np

from .._backend import AttentionInputError
from .._validation import int_at_least, public
from ..positional import apply_rope, sinusoidal_positional_encoding

__all__ = [
    "D_MODEL_VALUES",
    "POSITIONS",
    "N_POSITIONS",
    "DEFAULT_D_MODEL",
    "DEFAULT_POSITION",
    "PositionalView",
    "positional_view",
]

D_MODEL_VALUES: Tuple[int, ...] = (16, 32, 64)
N_POSITIONS = 32
POSITIONS: Tuple[int, ...] = (0, 4, 8, 12, 16, 20, 24, 28)
DEFAULT_D_MODEL = 32
DEFAULT_POSITION = 8


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
