"""What each slider explorer shows, computed without any front end.

Every explorer in :mod:`attncourse.widgets` is a thin view over one function here: the function
takes the values of the explorer's controls and returns a dict of plain numpy arrays and numbers,
which the widget draws.  So what a reader sees can be tested, and recomputed in a chapter, with
nothing but numpy and the attncourse core.

=====================  ===========================  ==========================================
function               controls                     what it returns
=====================  ===========================  ==========================================
``softmax_view``       temperature                  the distribution and its entropy
``scaling_view``       d_k                          scaled vs unscaled scores, weights,
                                                    max weight, entropy, softmax gradient norm
``heads_view``         n_heads                      one attention map per head, d_head,
                                                    the parameter count
``mask_view``          padding length, causal       the mask, the masked scores, the weights
``positional_view``    d_model, position            the sinusoidal table, one row, dot product
                                                    against offset, RoPE scores
=====================  ===========================  ==========================================

The tuples ``TEMPERATURES``, ``D_K_VALUES``, ``POSITIONS`` and ``D_MODEL_VALUES`` (and the
divisors from :func:`divisors`) are the values the explorers' sliders offer; the ``DEFAULT_*``
names are the values they start at.  Entropies are in nats.
"""

from __future__ import annotations

import math
from typing import Any, Dict, Sequence, Tuple

import numpy as np

from ._backend import AttentionInputError
from .functional import merge_heads, scaled_dot_product_attention, softmax, split_heads
from .masks import causal_mask, padding_mask
from .positional import apply_rope, sinusoidal_positional_encoding

__all__ = [
    "TOKENS",
    "LOGITS",
    "LOGIT_LABELS",
    "TEMPERATURES",
    "DEFAULT_TEMPERATURE",
    "D_K_VALUES",
    "DEFAULT_D_K",
    "DEFAULT_D_MODEL_HEADS",
    "DEFAULT_N_HEADS",
    "MASK_LENGTH",
    "DEFAULT_PAD_LENGTH",
    "DEFAULT_CAUSAL",
    "D_MODEL_VALUES",
    "POSITIONS",
    "N_POSITIONS",
    "DEFAULT_D_MODEL",
    "DEFAULT_POSITION",
    "entropy",
    "softmax_jacobian",
    "divisors",
    "softmax_view",
    "scaling_view",
    "heads_view",
    "mask_view",
    "positional_view",
]

# The toy sentence used by the heads and mask explorers.
TOKENS: Tuple[str, ...] = ("the", "cat", "sat", "on", "the", "mat")

# Softmax: five candidate next words and their scores.
LOGIT_LABELS: Tuple[str, ...] = ("mat", "rug", "sofa", "roof", "moon")
LOGITS: Tuple[float, ...] = (3.0, 2.0, 1.0, 0.5, -1.0)
TEMPERATURES: Tuple[float, ...] = (0.1, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 5.0, 10.0)
DEFAULT_TEMPERATURE = 1.0

# Scaling: powers of two from 1 to 1024.
D_K_VALUES: Tuple[int, ...] = tuple(2**i for i in range(11))
DEFAULT_D_K = 64
_SCALING_QUERIES, _SCALING_KEYS, _SCALING_STAT_QUERIES = 6, 8, 256

# Multi-head: n_heads runs over the divisors of d_model.
DEFAULT_D_MODEL_HEADS = 12
DEFAULT_N_HEADS = 3

# Masks: one sequence of MASK_LENGTH tokens, the last pad_length of them padding.
MASK_LENGTH = len(TOKENS)
DEFAULT_PAD_LENGTH = 2
DEFAULT_CAUSAL = False
_MASK_E = 4

# Positional encodings.
D_MODEL_VALUES: Tuple[int, ...] = (16, 32, 64)
N_POSITIONS = 32
POSITIONS: Tuple[int, ...] = (0, 4, 8, 12, 16, 20, 24, 28)
DEFAULT_D_MODEL = 32
DEFAULT_POSITION = 8

View = Dict[str, Any]


def _int(func: str, name: str, n: Any, minimum: int = 1) -> int:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < minimum:
        raise AttentionInputError(f"{func}: {name} must be an integer >= {minimum}; got {n!r}.")
    return int(n)


def entropy(p: np.ndarray, axis: int = -1) -> np.ndarray:
    """Shannon entropy in nats of distributions along ``axis`` (``0 log 0 = 0``).

    It is ``log(n)`` for a uniform distribution over ``n`` outcomes and 0 for a one-hot one.

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
    n = _int("divisors", "n", n)
    return tuple(h for h in range(1, n + 1) if n % h == 0)


def softmax_view(
    temperature: float = DEFAULT_TEMPERATURE,
    logits: Sequence[float] = LOGITS,
) -> View:
    """Softmax of ``logits / temperature``: the distribution and how spread out it is.

    Parameters
    ----------
    temperature : float
        Positive.  Below 1 it sharpens the distribution towards the largest logit; above 1 it
        flattens it towards uniform.
    logits : sequence of float, shape (n,)

    Returns
    -------
    dict with ``logits (n,)``, ``temperature``, ``scaled_logits (n,)``, ``weights (n,)`` (sums to
    1), ``entropy`` (nats), ``max_entropy`` (``log n``, the uniform distribution's) and
    ``max_weight``.

    Examples
    --------
    >>> v = softmax_view(1.0, [1.0, 2.0, 3.0])
    >>> v["weights"].round(4)
    array([0.09  , 0.2447, 0.6652])
    >>> softmax_view(0.1)["entropy"] < softmax_view(1.0)["entropy"] < softmax_view(10.0)["entropy"]
    True
    """
    func = "softmax_view"
    if (
        isinstance(temperature, bool)
        or not isinstance(temperature, (int, float, np.number))
        or not temperature > 0
    ):
        raise AttentionInputError(f"{func}: temperature must be a positive number; got {temperature!r}.")
    logits = np.asarray(logits, dtype=np.float64)
    if logits.ndim != 1 or logits.size < 2:
        raise AttentionInputError(
            f"{func}: logits must be 1-d with at least 2 entries; got shape {logits.shape}."
        )
    scaled = logits / temperature
    weights = softmax(scaled)
    return {
        "logits": logits,
        "temperature": float(temperature),
        "scaled_logits": scaled,
        "weights": weights,
        "entropy": float(entropy(weights)),
        "max_entropy": math.log(logits.size),
        "max_weight": float(weights.max()),
    }


def scaling_view(d_k: int = DEFAULT_D_K, seed: int = 0) -> View:
    r"""Scores of random queries against random keys of width ``d_k``, with and without the scale.

    The entries of the queries and the ``S = 8`` keys are standard normal, so each score
    :math:`q \cdot k` has variance ``d_k``.  Unscaled, the scores spread out as ``d_k`` grows and
    the softmax saturates (one weight near 1, entropy and gradient near 0); divided by
    :math:`\sqrt{d_k}` they keep variance 1 at every width.  The vectors for a smaller ``d_k``
    are the first ``d_k`` columns of the same draw, so moving the slider lengthens the same
    vectors rather than drawing new ones.  The summary numbers are averages over 256 queries
    (so they change smoothly with ``d_k``); the arrays hold the first ``L = 6`` of them.

    Parameters
    ----------
    d_k : int
        The query/key width ``E``.
    seed : int
        Seed of the draw.

    Returns
    -------
    dict with ``d_k``, ``scale`` (``1/sqrt(d_k)``), ``q (L, d_k)``, ``k (S, d_k)``,
    ``scores_unscaled`` and ``scores_scaled (L, S)``, ``weights_unscaled`` and
    ``weights_scaled (L, S)``, and per variant (suffix ``_unscaled`` / ``_scaled``), averaged over
    ``n_queries_averaged`` = 256 queries: ``score_std`` (standard deviation of the scores), ``max_weight``,
    ``entropy`` (nats; ``log S`` is uniform) and ``grad_norm`` (Frobenius norm of the softmax
    Jacobian); plus ``max_entropy`` = ``log S``.

    Examples
    --------
    >>> small, large = scaling_view(1), scaling_view(1024)
    >>> large["entropy_unscaled"] < small["entropy_unscaled"]
    True
    >>> bool(np.allclose(large["weights_scaled"].sum(-1), 1.0))
    True
    """
    func = "scaling_view"
    d_k = _int(func, "d_k", d_k)
    rng = np.random.default_rng(seed)
    width = max(d_k, D_K_VALUES[-1])
    # Prefixes of one draw: (N, d_k) queries, of which the first L are shown, and (S, d_k) keys.
    q_all = rng.standard_normal((_SCALING_STAT_QUERIES, width))[:, :d_k]
    k = rng.standard_normal((_SCALING_KEYS, width))[:, :d_k]
    scale = 1.0 / math.sqrt(d_k)
    # einsum, not @: a product this small runs faster without BLAS's threads (which stall on a
    # busy machine); the weights are softmax(scores * scale), as scaled_dot_product_attention's.
    scores_all = np.einsum("ne,se->ns", q_all, k)  # (N, d_k), (S, d_k) -> (N, S)
    weights_scaled = softmax(scores_all * scale)
    weights_unscaled = softmax(scores_all)
    shown = slice(0, _SCALING_QUERIES)
    view: View = {
        "d_k": d_k,
        "scale": scale,
        "q": q_all[shown],
        "k": k,
        "scores_unscaled": scores_all[shown],
        "scores_scaled": scores_all[shown] * scale,
        "weights_unscaled": weights_unscaled[shown],
        "weights_scaled": weights_scaled[shown],
        "max_entropy": math.log(_SCALING_KEYS),
        "n_queries_averaged": _SCALING_STAT_QUERIES,
    }
    for name, scores, weights in (
        ("unscaled", scores_all, weights_unscaled),
        ("scaled", scores_all * scale, weights_scaled),
    ):
        view[f"score_std_{name}"] = float(scores.std())
        view[f"max_weight_{name}"] = float(weights.max(axis=-1).mean())
        view[f"entropy_{name}"] = float(entropy(weights).mean())
        jacobian = softmax_jacobian(weights)  # (N, S, S): d weights / d scores, one per query
        view[f"grad_norm_{name}"] = float(np.linalg.norm(jacobian, axis=(-2, -1)).mean())
    return view


def heads_view(
    n_heads: int = DEFAULT_N_HEADS,
    d_model: int = DEFAULT_D_MODEL_HEADS,
    tokens: Sequence[str] = TOKENS,
    seed: int = 0,
) -> View:
    """Multi-head self-attention over a toy sentence: one attention map per head.

    Each distinct token gets a random embedding (so a repeated word gets the same one), and
    ``W_Q, W_K, W_V, W_O`` are random ``(d_model, d_model)`` matrices, the same ones for every
    ``n_heads``: splitting into heads only decides which columns each head owns, so ``d_head``
    shrinks as ``n_heads`` grows while the parameter count stays ``4 d_model^2 + 4 d_model``
    (the four projections with their biases, as in :class:`attncourse.MultiHeadAttention`).

    Parameters
    ----------
    n_heads : int
        Must divide ``d_model``.
    d_model : int
    tokens : sequence of str, length L
    seed : int

    Returns
    -------
    dict with ``tokens``, ``n_heads``, ``d_model``, ``d_head``, ``scale`` (``1/sqrt(d_head)``),
    ``x (L, d_model)``, ``weights (n_heads, L, L)`` (row ``i`` of head ``h``: how much token
    ``i`` attends to each token), ``out (L, d_model)``, ``n_params`` (total, independent of
    ``n_heads``) and ``n_params_per_head`` (each head's share of ``W_Q, W_K, W_V``:
    ``3 d_model d_head``).

    Examples
    --------
    >>> v = heads_view(4)
    >>> v["weights"].shape, v["d_head"], v["n_params"]
    ((4, 6, 6), 3, 624)
    >>> heads_view(1)["n_params"] == heads_view(12)["n_params"]
    True
    """
    func = "heads_view"
    d_model = _int(func, "d_model", d_model)
    n_heads = _int(func, "n_heads", n_heads)
    if d_model % n_heads:
        raise AttentionInputError(
            f"{func}: n_heads={n_heads} does not divide d_model={d_model}; "
            f"n_heads must be one of {list(divisors(d_model))}."
        )
    tokens = tuple(str(t) for t in tokens)
    if not tokens:
        raise AttentionInputError(f"{func}: tokens must not be empty.")
    rng = np.random.default_rng(seed)
    vocab = list(dict.fromkeys(tokens))  # distinct tokens in order of appearance
    embedding = rng.standard_normal((len(vocab), d_model))  # (V, d_model)
    x = embedding[[vocab.index(t) for t in tokens]]  # (L, d_model)
    w_q, w_k, w_v, w_o = rng.standard_normal((4, d_model, d_model)) / math.sqrt(d_model)
    d_head = d_model // n_heads
    q = split_heads(x @ w_q, n_heads)  # (L, d_model) @ (d_model, d_model) -> (L, d_model) -> (H, L, d_head)
    k = split_heads(x @ w_k, n_heads)  # (H, L, d_head)
    v = split_heads(x @ w_v, n_heads)  # (H, L, d_head)
    heads_out, weights = scaled_dot_product_attention(
        q, k, v
    )  # (H, L, d_head), (H, L, L); scale 1/sqrt(d_head)
    out = merge_heads(heads_out) @ w_o  # (H, L, d_head) -> (L, d_model) @ (d_model, d_model) -> (L, d_model)
    return {
        "tokens": tokens,
        "n_heads": n_heads,
        "d_model": d_model,
        "d_head": d_head,
        "scale": 1.0 / math.sqrt(d_head),
        "x": x,
        "weights": weights,
        "out": out,
        "n_params": 4 * d_model * d_model + 4 * d_model,
        "n_params_per_head": 3 * d_model * d_head,
    }


def mask_view(
    pad_length: int = DEFAULT_PAD_LENGTH,
    causal: bool = DEFAULT_CAUSAL,
    tokens: Sequence[str] = TOKENS,
    seed: int = 0,
) -> View:
    """Self-attention over one sequence whose last ``pad_length`` tokens are padding.

    The padding mask hides the padded keys from every query; ``causal=True`` also hides every
    key after the query.  Blocked scores become ``-inf`` before the softmax, so their weights are
    exactly 0 and each row still sums to 1, except a row with no key left to see, which is all
    zeros (``pad_length = L`` with nothing real to attend to).

    Parameters
    ----------
    pad_length : int
        From 0 to ``L = len(tokens)``.
    causal : bool
    tokens : sequence of str, length L
        The real tokens; the padded positions are shown as ``<pad>``.
    seed : int
        Seed of the random ``q, k, v (L, 4)``.

    Returns
    -------
    dict with ``tokens`` (with ``<pad>`` where padded), ``pad_length``, ``causal``, ``n_real``,
    ``mask (L, L)`` (bool, True = may attend), ``scores (L, L)`` (scaled, before masking),
    ``masked_scores (L, L)`` (``-inf`` where blocked), ``weights (L, L)``, ``row_sums (L,)`` and
    ``empty_rows`` (the queries with nothing to attend to).

    Examples
    --------
    >>> v = mask_view(2, causal=True)
    >>> v["mask"].astype(int)
    array([[1, 0, 0, 0, 0, 0],
           [1, 1, 0, 0, 0, 0],
           [1, 1, 1, 0, 0, 0],
           [1, 1, 1, 1, 0, 0],
           [1, 1, 1, 1, 0, 0],
           [1, 1, 1, 1, 0, 0]])
    >>> float(v["weights"][~v["mask"]].max())
    0.0
    """
    func = "mask_view"
    tokens = tuple(str(t) for t in tokens)
    L = len(tokens)
    if L < 1:
        raise AttentionInputError(f"{func}: tokens must not be empty.")
    pad_length = _int(func, "pad_length", pad_length, minimum=0)
    if pad_length > L:
        raise AttentionInputError(
            f"{func}: pad_length must be at most L={L} (the number of tokens); got {pad_length}."
        )
    n_real = L - pad_length
    rng = np.random.default_rng(seed)
    q, k, v = rng.standard_normal((3, L, _MASK_E))  # each (L, E)
    mask = np.broadcast_to(
        padding_mask([n_real], L), (L, L)
    )  # (1, S) -> (L, S): the same keys hidden from every query
    if causal:
        mask = mask & causal_mask(L)  # (L, S) & (L, S)
    scores = q @ k.T / math.sqrt(_MASK_E)  # (L, E) @ (E, S) -> (L, S)
    masked_scores = np.where(mask, scores, -np.inf)
    _, weights = scaled_dot_product_attention(q, k, v, mask)  # (L, S)
    row_sums = weights.sum(axis=-1)
    return {
        "tokens": tokens[:n_real] + ("<pad>",) * pad_length,
        "pad_length": pad_length,
        "causal": bool(causal),
        "n_real": n_real,
        "mask": np.array(mask),
        "scores": scores,
        "masked_scores": masked_scores,
        "weights": weights,
        "row_sums": row_sums,
        "empty_rows": tuple(int(i) for i in np.flatnonzero(~mask.any(axis=-1))),
    }


def positional_view(
    d_model: int = DEFAULT_D_MODEL,
    position: int = DEFAULT_POSITION,
    n_positions: int = N_POSITIONS,
    seed: int = 0,
    base: float = 10000.0,
) -> View:
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
    dict with ``d_model``, ``position``, ``pe (n_positions, d_model)``, ``row (d_model,)``
    (``pe[position]``), ``offsets (n_positions,)`` (``j - position``), ``pe_dots (n_positions,)``,
    ``rope_scores (n_positions, n_positions)`` and ``rope_row (n_positions,)``
    (``rope_scores[position]``).

    Examples
    --------
    >>> v = positional_view(16, 4)
    >>> v["pe"].shape, float(v["pe_dots"][v["offsets"] == 0][0])
    ((32, 16), 8.0)
    >>> bool(np.allclose(positional_view(16, 0)["pe_dots"][:8], positional_view(16, 20)["pe_dots"][20:28]))
    True
    """
    func = "positional_view"
    d_model = _int(func, "d_model", d_model)
    if d_model % 2:
        raise AttentionInputError(
            f"{func}: d_model must be even (sin/cos and RoPE work in pairs); got {d_model}."
        )
    n_positions = _int(func, "n_positions", n_positions)
    position = _int(func, "position", position, minimum=0)
    if position >= n_positions:
        raise AttentionInputError(
            f"{func}: position must be below n_positions={n_positions}; got {position}."
        )
    pe = sinusoidal_positional_encoding(n_positions, d_model, base=base)  # (P, d_model)
    row = pe[position]  # (d_model,)
    pe_dots = pe @ row  # (P, d_model) @ (d_model,) -> (P,)
    rng = np.random.default_rng(seed)
    q, k = rng.standard_normal((2, 1, d_model))  # one query and one key vector, (1, d_model) each
    positions = np.arange(n_positions)
    q_rot = apply_rope(np.broadcast_to(q, (n_positions, d_model)), positions, base=base)  # (P, d_model)
    k_rot = apply_rope(np.broadcast_to(k, (n_positions, d_model)), positions, base=base)  # (P, d_model)
    rope_scores = q_rot @ k_rot.T / math.sqrt(d_model)  # (P, d_model) @ (d_model, P) -> (P, P)
    return {
        "d_model": d_model,
        "position": position,
        "n_positions": n_positions,
        "pe": pe,
        "row": row,
        "offsets": positions - position,
        "pe_dots": pe_dots,
        "rope_scores": rope_scores,
        "rope_row": rope_scores[position],
    }
