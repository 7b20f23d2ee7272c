"""The toy data that a chapter and its explorer share, defined once (numpy only).

A chapter imports these names and prints what it computes from them; its explorer in
:mod:`attncourse.explore` imports the same names, so the explorer's default view shows the
chapter's numbers (``tests/test_explorer_ties.py`` checks it against the notebooks' saved outputs).
Arrays are read-only: copy one before changing it.

=========================  ======================================================  =========
name                       what it is                                              chapters
=========================  ======================================================  =========
``kernel_function``        ``2 sin(x) + x^0.8``, the curve kernel regression       0
                           recovers
``kernel_regression_data``  its noisy training and held-out points                 0
``repeat_task``            chapter 8's task: filler, then a segment repeated       8, 11
``SENTENCE``               "the cat sat on the mat", six tokens                    4, 5, 6
``EMBEDDING``              word -> ``d_model = 4`` zeros and ones                  4
``W_Q, W_K, W_V``          integer ``(4, 4)`` projections (-1, 0, 1)               4
``KEYS_2D``, ``VALUES_2D``  five keys and values in the plane: the explorer's       2
                           picture of dot-product attention
``SOFTMAX_SCORES``         six scores for the temperature section, with
                           ``SOFTMAX_WORDS`` naming them                           1
``SOFTMAX_TEMPERATURES``   the temperatures the chapter plots                      1
``PE_TRAIN_LENGTH``        the training length ``N`` of the extrapolation study    7
``PE_D_MODEL``             its ``d_model``                                         7
``scaling_draw``           the random queries and keys of the saturation tables    3
``ONLINE_SCORES``          the online-softmax walk-through's row, with
                           ``ONLINE_VALUES`` (one value per key)                   9
``ROPE_HEAD_DIM``          head width and training length of the context-
``ROPE_TRAIN_LENGTH``      extension model, and ``rope_scalings`` for it           11
``HEADS_VOCAB``            the toy sentence's words, with ``heads_embedding``,     5
``heads_projections``      its ``d_model = 8`` table, and the random ``W_Q, W_K,
                           W_V, W_O`` of the per-head maps (``HEADS_N_HEADS``
                           heads, query ``HEADS_QUERY``)
=========================  ======================================================  =========
"""

from __future__ import annotations

from typing import Dict, Sequence, Tuple

import numpy as np

__all__ = [
    "KERNEL_N",
    "KERNEL_NOISE",
    "kernel_function",
    "kernel_regression_data",
    "repeat_task",
    "SENTENCE",
    "EMBEDDING",
    "W_Q",
    "W_K",
    "W_V",
    "embed",
    "KEYS_2D",
    "VALUES_2D",
    "SOFTMAX_SCORES",
    "SOFTMAX_WORDS",
    "SOFTMAX_TEMPERATURES",
    "PE_TRAIN_LENGTH",
    "PE_D_MODEL",
    "SCALING_N_ROWS",
    "SCALING_N_KEYS",
    "scaling_draw",
    "ONLINE_SCORES",
    "ONLINE_VALUES",
    "ROPE_HEAD_DIM",
    "ROPE_TRAIN_LENGTH",
    "ROPE_FACTOR",
    "rope_scalings",
    "HEADS_VOCAB",
    "HEADS_D_MODEL",
    "HEADS_N_HEADS",
    "HEADS_QUERY",
    "heads_embedding",
    "heads_projections",
]


def _frozen(rows: Sequence[Sequence[float]]) -> np.ndarray:
    array = np.array(rows, dtype=np.float64)
    array.flags.writeable = False
    return array


# -- chapter 4: self-attention by hand ---------------------------------------------------------

SENTENCE: Tuple[str, ...] = ("the", "cat", "sat", "on", "the", "mat")

# word -> d_model = 4 numbers; the two copies of "the" share a row.
EMBEDDING: Dict[str, Tuple[float, ...]] = {
    "the": (1.0, 0.0, 0.0, 1.0),
    "cat": (0.0, 1.0, 1.0, 0.0),
    "sat": (0.0, 1.0, 0.0, 1.0),
    "on": (1.0, 0.0, 1.0, 0.0),
    "mat": (0.0, 0.0, 1.0, 1.0),
}

# (d_model, E) = (4, 4) projections of small integers: every product can be checked by hand, and
# the scale 1/sqrt(E) is 1/2.
W_Q = _frozen([[0, 1, -1, 1], [0, 1, 1, 0], [0, 1, 0, 0], [1, -1, 0, -1]])
W_K = _frozen([[0, -1, -1, 0], [-1, -1, 1, -1], [1, 0, 0, 0], [1, 1, 0, 1]])
W_V = _frozen([[1, 0, 0, 0], [0, 0, 1, 1], [1, 1, 0, 0], [1, 0, 1, 0]])


def embed(tokens: Sequence[str] = SENTENCE) -> np.ndarray:
    """The rows of :data:`EMBEDDING` for ``tokens``, stacked: ``X (L, d_model)``, a fresh array.

    >>> embed(("the", "mat"))
    array([[1., 0., 0., 1.],
           [0., 0., 1., 1.]])
    """
    unknown = [t for t in tokens if t not in EMBEDDING]
    if unknown:
        raise ValueError(f"tokens: no embedding for {unknown}; the table has {sorted(EMBEDDING)}.")
    return np.array([EMBEDDING[t] for t in tokens], dtype=np.float64)  # (L, d_model)


# -- chapter 2: dot-product attention in the plane --------------------------------------------------

# Five keys (S, E) = (5, 2) pointing in different directions, and their values (S, Ev) = (5, 2).
KEYS_2D = _frozen([[2.0, 0.0], [1.0, 1.5], [-1.0, 1.0], [-1.5, -1.0], [0.5, -2.0]])
VALUES_2D = _frozen([[3.0, 0.5], [1.0, 3.0], [-2.5, 2.0], [-3.0, -2.0], [1.0, -3.0]])

# -- chapter 1: softmax and temperature -----------------------------------------------------------

SOFTMAX_SCORES: Tuple[float, ...] = (3.0, 1.5, 1.0, 0.2, -0.5, -1.0)
SOFTMAX_WORDS: Tuple[str, ...] = ("mat", "rug", "sofa", "bed", "roof", "moon")  # candidate next words
SOFTMAX_TEMPERATURES: Tuple[float, ...] = (0.25, 0.5, 1.0, 2.0, 5.0)

# -- chapter 7: past the training length ----------------------------------------------------------

PE_TRAIN_LENGTH = 32
PE_D_MODEL = 32

# -- chapter 0: kernel regression ----------------------------------------------------------------

KERNEL_N = 50  # training points, and as many held-out ones
KERNEL_NOISE = 0.5  # standard deviation of the noise on the values


def kernel_function(x: np.ndarray) -> np.ndarray:
    """The curve chapter 0's kernel regression recovers: ``2 sin(x) + x^0.8`` on ``[0, 5]``."""
    return 2 * np.sin(x) + x**0.8


def kernel_regression_data(rng: np.random.Generator) -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``x_train, y_train, x_val, y_val``: ``KERNEL_N`` sorted inputs each, values with noise.

    Drawn from ``rng`` in this order (training inputs, their noise, held-out inputs, their
    noise), so chapter 0 and its explorer, each passing ``np.random.default_rng(0)``, hold the
    same points.

    >>> x_train, y_train, x_val, y_val = kernel_regression_data(np.random.default_rng(0))
    >>> x_train.shape, bool(np.all(np.diff(x_train) >= 0))
    ((50,), True)
    """
    x_train = np.sort(rng.uniform(0, 5, KERNEL_N))
    y_train = kernel_function(x_train) + rng.normal(0, KERNEL_NOISE, KERNEL_N)
    x_val = np.sort(rng.uniform(0, 5, KERNEL_N))
    y_val = kernel_function(x_val) + rng.normal(0, KERNEL_NOISE, KERNEL_N)
    return x_train, y_train, x_val, y_val


# -- chapter 8 (and 11's experiments): copy the repeated segment ----------------------------------


def repeat_task(
    n_seq: int, rng: np.random.Generator, L: int = 32, V: int = 32
) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``tokens (n_seq, L)``, ``repeat_from (n_seq,)`` and ``determined (n_seq, L)``.

    Each sequence is filler, then a segment of 4 to 10 distinct tokens (of ``V``) repeated to the
    end; from ``repeat_from`` on, every next token is determined by the one a segment earlier
    (``determined`` is True there).  Chapter 8 builds the same sequences in its own cell, with
    the same draws from ``rng``.

    >>> tokens, start, det = repeat_task(2, np.random.default_rng(0))
    >>> tokens.shape, det.shape
    ((2, 32), (2, 32))
    >>> bool(det[0, start[0]]), bool(det[0, start[0] - 1])
    (True, False)
    """
    tokens = np.empty((n_seq, L), dtype=np.int64)
    repeat_from = np.empty(n_seq, dtype=np.int64)
    for i in range(n_seq):
        n = rng.integers(4, 11)  # the segment's length
        r = rng.integers(0, L - 2 * n + 1)  # filler before it, room for two copies
        perm = rng.permutation(V)
        segment, others = perm[:n], perm[n:]
        tokens[i, :r] = rng.choice(others, size=r)  # filler never uses the segment's tokens
        tokens[i, r:] = np.resize(segment, L - r)  # the segment, repeated
        repeat_from[i] = r + n
    determined = np.arange(L)[None, :] >= repeat_from[:, None]  # (n_seq, L)
    return tokens, repeat_from, determined


# -- chapter 3: the softmax saturates -------------------------------------------------------------

SCALING_N_ROWS = 1000  # rows (one query each) measured at every d_k
SCALING_N_KEYS = 16  # keys per row, S


def scaling_draw(d_k: int, seed: int = 0) -> Tuple[np.ndarray, np.ndarray]:
    """``q (SCALING_N_ROWS, d_k)`` and ``k (SCALING_N_ROWS, SCALING_N_KEYS, d_k)``, float32.

    Standard normal entries; row ``n`` is one query against its own 16 keys.  Each ``d_k`` has its
    own generator, seeded by ``(seed, d_k)``, so a width's draw does not depend on which widths
    were drawn before it: chapter 3's saturation tables and its scaling explorer hold the same rows.

    >>> q, k = scaling_draw(64)
    >>> q.shape, k.shape, q.dtype.name
    ((1000, 64), (1000, 16, 64), 'float32')
    """
    if int(d_k) != d_k or d_k < 1:
        raise ValueError(f"d_k: expected a positive integer width; got {d_k!r}.")
    rng = np.random.default_rng((seed, int(d_k)))
    q = rng.standard_normal((SCALING_N_ROWS, int(d_k)), dtype=np.float32)  # a query per row
    k = rng.standard_normal((SCALING_N_ROWS, SCALING_N_KEYS, int(d_k)), dtype=np.float32)  # S keys each
    return q, k


# -- chapter 9: the online softmax by hand --------------------------------------------------------

ONLINE_SCORES: Tuple[float, ...] = (3.0, 1.0, 4.0, 1.0, 5.0)  # small enough to follow by hand
ONLINE_VALUES: Tuple[float, ...] = (2.0, -1.0, 0.5, 3.0, -2.0)  # one value per key (E_v = 1)

# -- chapter 11: stretching RoPE's context ---------------------------------------------------------

ROPE_HEAD_DIM = 16  # the context-extension model's head width: 8 rotating pairs
ROPE_TRAIN_LENGTH = 32  # its training length N
ROPE_FACTOR = 4.0  # new length / training length


def rope_scalings(
    factor: float = ROPE_FACTOR, train_length: int = ROPE_TRAIN_LENGTH
) -> Dict[str, Dict[str, float]]:
    """The four context-extension scalings as Hugging Face ``rope_parameters`` dicts, fresh.

    linear (position interpolation), dynamic (NTK-aware), yarn and llama3 (Llama 3.1's, with
    ``low_freq_factor`` 1 and ``high_freq_factor`` 4), each stretching a model trained on
    ``train_length`` tokens by ``factor``; pass one as ``apply_rope(x, scaling=...)``.

    >>> rope_scalings(4.0)["dynamic"]
    {'rope_type': 'dynamic', 'factor': 4.0, 'original_max_position_embeddings': 32}
    """
    factor, trained = float(factor), {"original_max_position_embeddings": int(train_length)}
    return {
        "linear": {"rope_type": "linear", "factor": factor},
        "dynamic": {"rope_type": "dynamic", "factor": factor, **trained},
        "yarn": {"rope_type": "yarn", "factor": factor, **trained},
        "llama3": {
            "rope_type": "llama3",
            "factor": factor,
            "low_freq_factor": 1.0,
            "high_freq_factor": 4.0,
            **trained,
        },
    }


# -- chapter 5: one map per head ------------------------------------------------------------------

HEADS_VOCAB: Tuple[str, ...] = ("cat", "mat", "on", "sat", "the")  # SENTENCE's words, sorted
HEADS_D_MODEL = 8  # the worked example's width: 1, 2, 4 or 8 heads
HEADS_N_HEADS = 4  # the per-head maps: four heads of d_head = 2
HEADS_QUERY = "sat"  # the query whose largest weight per head the chapter prints


def heads_embedding(d_model: int = HEADS_D_MODEL, seed: int = 0) -> np.ndarray:
    """Chapter 5's embedding table: ``(len(HEADS_VOCAB), d_model)``, a fresh array.

    Normal entries of standard deviation 2, rounded to one decimal so that they print short; row
    ``i`` belongs to ``HEADS_VOCAB[i]``, so the two copies of "the" share a row.

    >>> table = heads_embedding()
    >>> table.shape, table[0, :3]
    ((5, 8), array([ 0.3, -0.3,  1.3]))
    """
    d_model = int(d_model)
    if d_model < 1:
        raise ValueError(f"d_model: expected a positive width; got {d_model}.")
    return np.random.default_rng(seed).normal(scale=2.0, size=(len(HEADS_VOCAB), d_model)).round(1)


def heads_projections(d_model: int = HEADS_D_MODEL, seed: int = 1) -> np.ndarray:
    """Chapter 5's untrained ``W_Q, W_K, W_V, W_O``: ``(4, d_model, d_model)``, used as ``x @ W``.

    Uniform on ``[-1/sqrt(d_model), 1/sqrt(d_model)]``, the range of ``nn.Linear``'s default
    initialisation; no biases.  The same matrices serve every number of heads: head ``h`` owns
    columns ``h d_head`` to ``(h + 1) d_head`` of ``W_Q``, ``W_K`` and ``W_V``.

    >>> w_q, w_k, w_v, w_o = heads_projections()
    >>> w_q.shape, bool(abs(w_q).max() <= 8 ** -0.5)
    ((8, 8), True)
    """
    d_model = int(d_model)
    if d_model < 1:
        raise ValueError(f"d_model: expected a positive width; got {d_model}.")
    bound = 1.0 / np.sqrt(d_model)
    return np.random.default_rng(seed).uniform(-bound, bound, size=(4, d_model, d_model))
