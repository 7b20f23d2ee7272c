"""The fixed-state explorer's view: what a linear or delta state holds after storing n random pairs
(linear attention with the chapter's feature map, elu + 1, and its normaliser),
the saved recall accuracy of the trained models at that state size, and the saved accuracy of the
trained stack under top-k attention."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Optional, Tuple

import numpy as np

from .._backend import AttentionInputError
from .._validation import positive_int, public
from ..linear import delta_rule, elu_feature_map, linear_attention

__all__ = ["STATE_METHODS", "STATE_SIZES", "STATE_PAIRS", "STATE_TOP_K", "StateView", "state_view"]

# No "gated": its heat map would need a constant decay, which the chapter shows only fades the newest
# pairs of a beta = 1 delta state; the trained Gated DeltaNet's decay is per token and not saved.
STATE_METHODS = ("linear", "delta")
STATE_SIZES = (4, 8, 16)  # the saved runs' head widths E (a state of E x E)
STATE_PAIRS = (1, 4, 16)  # of the saved runs' 1, 2, 4, 8, 16
STATE_TOP_K = (1, 4, 8, 16)  # of the saved top-k runs' 1, 2, 4, 8, 16


@dataclass(frozen=True, eq=False)
class StateView:
    """What the fixed-state explorer shows (see :func:`state_view`)."""

    method: str
    state_size: int
    pairs: int
    top_k: int
    state: np.ndarray  # (E, E): the state S after writing the pairs
    recall_error: float  # mean |read_i - v_i| / |v_i| over the stored pairs (read_i: key i's read of S)
    key_overlap: Optional[float]  # mean cosine between two written keys' features (None: one pair)
    saved_pairs: Tuple[int, ...]  # the saved runs' numbers of pairs
    saved_mean: Optional[np.ndarray]  # (len(saved_pairs),) accuracy, mean over seeds; None if not run
    saved_min: Optional[np.ndarray]
    saved_max: Optional[np.ndarray]
    accuracy: Optional[float]  # the saved mean accuracy at (method, E, pairs); None if not run
    topk_ks: Tuple[int, ...]  # the saved top-k runs' values of top_k
    topk_curves: Mapping[str, np.ndarray]  # ranking -> (len(topk_ks),) accuracy, mean over seeds
    topk_accuracy: Mapping[str, float]  # ranking -> that accuracy at the chosen top_k
    topk_pairs: int  # the stored pairs of the saved top-k runs
    topk_length: int  # their sequence length


def _stored_state(method: str, E: int, n: int) -> Tuple[np.ndarray, float, Optional[float]]:
    """The state after writing ``n`` random unit keys with random values, the mean relative miss
    of reading each key back, and the mean cosine between two different keys' features (what
    the state writes: phi(k) for linear attention, k for the delta rule)."""
    rng = np.random.default_rng(1300 + 31 * E + n)
    keys = rng.normal(size=(n, E))
    keys /= np.linalg.norm(keys, axis=-1, keepdims=True)  # unit keys, as the delta rule wants
    values = rng.normal(size=(n, E))
    if method == "linear":
        # the chapter's linear attention: S = sum phi(k_i)^T v_i with phi = elu + 1, and each key
        # reads phi(k) S / (phi(k) . z), z = sum phi(k_i) (the normaliser)
        features = elu_feature_map(keys)  # (n, E)
        state = features.T @ values
        read = linear_attention(keys, keys, values, feature_map=elu_feature_map, causal=False)
    else:
        features = keys
        _, state = delta_rule(keys, keys, values, np.ones(n))  # beta = 1, no decay
        state = np.asarray(state)
        read = keys @ state  # (n, E): what each stored key reads back
    error = np.linalg.norm(read - values, axis=-1) / np.linalg.norm(values, axis=-1)
    unit = features / np.linalg.norm(features, axis=-1, keepdims=True)
    cosines = (unit @ unit.T)[~np.eye(n, dtype=bool)]  # (n (n - 1),): every ordered pair i != j
    return state, float(error.mean()), float(cosines.mean()) if n > 1 else None


def _topk_curves(topk: Mapping[str, Any]) -> Tuple[Tuple[int, ...], dict]:
    """The saved top-k runs as ranking -> accuracy per top_k, mean over seeds."""
    ks = tuple(int(k) for k in topk["ks"])
    runs = {"exact": topk["exact"], **{f"rank-{r}": topk["indexer"][str(r)] for r in topk["ranks"]}}
    curves = {}
    for name, acc in runs.items():
        acc = np.asarray(acc, dtype=np.float64)  # (seeds, ks)
        if acc.ndim != 2 or acc.shape[1] != len(ks):
            raise AttentionInputError(
                f"topk: the {name!r} runs must be (seeds, {len(ks)}) accuracies, one per top_k in "
                f"{list(ks)}; got shape {acc.shape}."
            )
        curves[name] = acc.mean(0)
    return ks, curves


@public("state_view")
def state_view(
    recall: Mapping[str, Any],
    topk: Mapping[str, Any],
    method: str = "delta",
    state_size: int = 8,
    pairs: int = 4,
    top_k: int = 4,
) -> StateView:
    """A state after storing ``pairs`` random pairs, the saved recall accuracy, and the saved top-k runs.

    Parameters
    ----------
    recall : mapping
        What ``scripts/experiments/recall_state_size.py`` saves in
        ``attncourse/data/recall_state_size.json``: ``pairs``, and ``recall[method][str(E)]``, the
        accuracy ``(seeds, pairs)`` of each method trained at head width ``E``.
    topk : mapping
        What ``recall_hybrid.py`` saves under ``"topk"`` in ``recall_hybrid.json``: the all-softmax
        stack with top-k attention, ``ks``, ``ranks``, ``n_pairs``, ``L``, and the accuracy
        ``(seeds, ks)`` of the ``exact`` ranking and of each rank-r ``indexer``.
    method : str
        ``"linear"`` (the chapter's linear attention: a sum of outer products of ``elu + 1``
        features and values, read with its normaliser) or ``"delta"`` (the delta rule, beta = 1).
    state_size : int
        ``E``: the heat map shows an ``E x E`` state, written with ``pairs`` random unit keys of width
        ``E`` and random values of width ``E`` (not a trained model's state: the runs save none).
    pairs : int
        How many pairs are written (the accuracy is looked up at this number in the saved runs).
    top_k : int
        One of the saved runs' ``ks``: the saved accuracies at it are picked out.

    Examples
    --------
    >>> runs = {"pairs": [1, 4], "recall": {"delta": {"4": [[1.0, 0.5], [0.8, 0.5]]}}}
    >>> topk = {"ks": [1, 2], "ranks": [1], "n_pairs": 4, "L": 12,
    ...         "exact": [[1.0, 1.0]], "indexer": {"1": [[0.25, 0.5]]}}
    >>> v = state_view(runs, topk, "delta", 4, 4, 2)
    >>> v.state.shape, v.accuracy, v.topk_accuracy["rank-1"]
    ((4, 4), 0.5, 0.5)
    """
    if method not in STATE_METHODS:
        raise AttentionInputError(f"method must be one of {STATE_METHODS}; got {method!r}.")
    state_size = positive_int("state_size", state_size)
    pairs = positive_int("pairs", pairs)
    top_k = positive_int("top_k", top_k)
    ks, curves = _topk_curves(topk)
    if top_k not in ks:
        raise AttentionInputError(f"top_k must be one of the saved runs' {list(ks)}; got {top_k}.")
    saved_pairs = tuple(int(n) for n in recall["pairs"])
    runs = recall["recall"].get(method, {}).get(str(state_size))
    if runs is None:
        mean = lo = hi = None
        accuracy = None
    else:
        acc = np.asarray(runs, dtype=np.float64)  # (seeds, pairs)
        mean, lo, hi = acc.mean(0), acc.min(0), acc.max(0)
        accuracy = float(mean[saved_pairs.index(pairs)]) if pairs in saved_pairs else None
    state, error, overlap = _stored_state(method, state_size, pairs)
    return StateView(
        method=method,
        state_size=state_size,
        pairs=pairs,
        top_k=top_k,
        state=state,
        recall_error=error,
        key_overlap=overlap,
        saved_pairs=saved_pairs,
        saved_mean=mean,
        saved_min=lo,
        saved_max=hi,
        accuracy=accuracy,
        topk_ks=ks,
        topk_curves=curves,
        topk_accuracy={name: float(curve[ks.index(top_k)]) for name, curve in curves.items()},
        topk_pairs=int(topk["n_pairs"]),
        topk_length=int(topk["L"]),
    )
