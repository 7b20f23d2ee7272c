"""The fixed-state explorer's view: what a linear, delta or gated state holds after storing n pairs,
the saved recall accuracy at that state size, and the keys top-k attention keeps."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Optional, Tuple

import numpy as np

from .._backend import AttentionInputError
from .._validation import positive_int, public
from ..linear import delta_rule
from ..sparse import topk_attention

__all__ = ["STATE_METHODS", "STATE_SIZES", "STATE_PAIRS", "STATE_TOP_K", "StateView", "state_view"]

STATE_METHODS = ("linear", "delta", "gated")
STATE_SIZES = (4, 8, 16)  # the saved runs' head widths E (a state of E x E)
STATE_PAIRS = (1, 4, 16)  # of the saved runs' 1, 2, 4, 8, 16
STATE_TOP_K = (2, 4, 8)
GATE = 0.9  # the gated state's constant decay in the heat map
TOPK_LENGTH = 12  # the causal score matrix the top-k panel shows


@dataclass(frozen=True, eq=False)
class StateView:
    """What the fixed-state explorer shows (see :func:`state_view`)."""

    method: str
    state_size: int
    pairs: int
    top_k: int
    state: np.ndarray  # (E, E): the state after writing the pairs
    recall_error: float  # mean |k_i S - v_i| / |v_i| over the stored pairs
    saved_pairs: Tuple[int, ...]  # the saved runs' numbers of pairs
    saved_mean: Optional[np.ndarray]  # (len(saved_pairs),) accuracy, mean over seeds; None if not run
    saved_min: Optional[np.ndarray]
    saved_max: Optional[np.ndarray]
    accuracy: Optional[float]  # the saved mean accuracy at (method, E, pairs); None if not run
    scores: np.ndarray  # (L, L) scaled scores, future keys NaN
    kept: np.ndarray  # (L, L) bool: the keys each query keeps


def _stored_state(method: str, E: int, n: int) -> Tuple[np.ndarray, float]:
    rng = np.random.default_rng(1300 + 31 * E + n)
    keys = rng.normal(size=(n, E))
    keys /= np.linalg.norm(keys, axis=-1, keepdims=True)  # unit keys, as the delta rule wants
    values = rng.normal(size=(n, E))
    if method == "linear":
        state = keys.T @ values  # a sum of outer products k_i^T v_i
    else:
        decay = np.full(n, GATE) if method == "gated" else None
        _, state = delta_rule(keys, keys, values, np.ones(n), decay=decay)
        state = np.asarray(state)
    read = keys @ state  # (n, E): what each stored key reads back
    error = np.linalg.norm(read - values, axis=-1) / np.linalg.norm(values, axis=-1)
    return state, float(error.mean())


def _topk_panel(top_k: int) -> Tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(1313)
    q, k = rng.normal(size=(2, TOPK_LENGTH, 4))
    v = np.zeros((TOPK_LENGTH, 1))
    _, weights = topk_attention(q, k, v, top_k, is_causal=True)
    scores = q @ k.T / 2.0  # scaled by 1 / sqrt(4)
    causal = np.tril(np.ones((TOPK_LENGTH, TOPK_LENGTH), dtype=bool))
    return np.where(causal, scores, np.nan), np.asarray(weights) > 0


@public("state_view")
def state_view(
    recall: Mapping[str, Any], method: str = "delta", state_size: int = 8, pairs: int = 4, top_k: int = 4
) -> StateView:
    """The state after storing ``pairs`` key/value pairs, the saved recall accuracy, and top-k's kept keys.

    Parameters
    ----------
    recall : mapping
        What ``scripts/experiments/recall_state_size.py`` saves in
        ``attncourse/data/recall_state_size.json``: ``pairs``, and ``recall[method][str(E)]``, the
        accuracy ``(seeds, pairs)`` of each method trained at head width ``E``.
    method : str
        ``"linear"`` (a sum of outer products), ``"delta"`` (the delta rule, beta = 1) or ``"gated"``
        (the delta rule with a constant decay of 0.9).
    state_size : int
        ``E``: the heat map shows an ``E x E`` state, written with ``pairs`` random unit keys of width
        ``E`` and random values of width ``E``.
    pairs : int
        How many pairs are written (the accuracy is looked up at this number in the saved runs).
    top_k : int
        How many keys each query of a 12-token causal score matrix keeps (``ac.topk_attention``).

    Examples
    --------
    >>> runs = {"pairs": [1, 4], "recall": {"delta": {"4": [[1.0, 0.5], [0.8, 0.5]]}}}
    >>> v = state_view(runs, "delta", 4, 4, 2)
    >>> v.state.shape, v.accuracy, int(v.kept.sum(-1).max())
    ((4, 4), 0.5, 2)
    """
    if method not in STATE_METHODS:
        raise AttentionInputError(f"method must be one of {STATE_METHODS}; got {method!r}.")
    state_size = positive_int("state_size", state_size)
    pairs = positive_int("pairs", pairs)
    top_k = positive_int("top_k", top_k)
    saved_pairs = tuple(int(n) for n in recall["pairs"])
    runs = recall["recall"].get(method, {}).get(str(state_size))
    if runs is None:
        mean = lo = hi = None
        accuracy = None
    else:
        acc = np.asarray(runs, dtype=np.float64)  # (seeds, pairs)
        mean, lo, hi = acc.mean(0), acc.min(0), acc.max(0)
        accuracy = float(mean[saved_pairs.index(pairs)]) if pairs in saved_pairs else None
    state, error = _stored_state(method, state_size, pairs)
    scores, kept = _topk_panel(top_k)
    return StateView(
        method=method,
        state_size=state_size,
        pairs=pairs,
        top_k=top_k,
        state=state,
        recall_error=error,
        saved_pairs=saved_pairs,
        saved_mean=mean,
        saved_min=lo,
        saved_max=hi,
        accuracy=accuracy,
        scores=scores,
        kept=kept,
    )
