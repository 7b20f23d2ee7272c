"""Attention before Transformers: kernel regression and additive (Bahdanau) attention.

Nadaraya-Watson kernel regression is attention with a fixed similarity: a query ``x`` pools the
values ``y_i`` with weights that say how close ``x`` is to each key ``x_i``.  With a Gaussian
kernel of width ``w`` the weights are exactly a softmax of ``-(x - x_i)^2 / (2 w^2)``.

Additive attention scores a query against a key with a small learned network,
``w_v . tanh(W_q q + W_k k)``, where dot-product attention uses ``q . k``.

Both accept numpy arrays or torch tensors and return the same kind (they are built from
``softmax`` and array arithmetic only).
"""

from __future__ import annotations

from typing import Any

from ._backend import AttentionInputError, fmt_shape, is_torch, namespace
from ._validation import check_mask, public
from .functional import softmax

__all__ = ["additive_attention", "additive_scores", "gaussian_kernel_scores", "nadaraya_watson"]

Array = Any


def _width(width: Any) -> Any:
    """A positive float, or a positive one-element torch tensor (kept, so a width can be learned)."""
    bad = AttentionInputError(f"width must be a positive number, got {width!r}.")
    if is_torch(width):
        if width.numel() != 1 or not float(width.detach()) > 0:
            raise bad
        return width.reshape(())
    try:
        w = float(width)
    except (TypeError, ValueError):
        raise bad from None
    if not w > 0:
        raise bad
    return w


@public("gaussian_kernel_scores")
def gaussian_kernel_scores(x_query: Array, x_key: Array, width: float | Array = 1.0) -> Array:
    """Scores ``-(x_query[i] - x_key[j])^2 / (2 width^2)``, shape ``(L, S)``, for 1-d inputs.

    ``width`` is a positive number, or a one-element torch tensor (with torch inputs) that
    gradients can flow into: a kernel width learned by gradient descent.

    Examples
    --------
    >>> import numpy as np
    >>> gaussian_kernel_scores(np.array([0.0]), np.array([0.0, 1.0, 2.0]))
    array([[-0. , -0.5, -2. ]])
    """
    w = _width(width)
    ops = namespace(x_query=x_query, x_key=x_key, width=w if is_torch(w) else None)
    x_query, x_key = ops.asarray(x_query), ops.asarray(x_key)
    if x_query.ndim != 1 or x_key.ndim != 1:
        raise AttentionInputError(
            f"x_query and x_key must be 1-d (L,) and (S,), got x_query {fmt_shape(x_query)} "
            f"and x_key {fmt_shape(x_key)}."
        )
    diff = x_query[:, None] - x_key[None, :]  # (L, 1) - (1, S) -> (L, S)
    return -(diff**2) / (2.0 * w * w)


@public("nadaraya_watson")
def nadaraya_watson(
    x_query: Array,
    x_key: Array,
    y_value: Array,
    width: float | Array = 1.0,
    mask: Array | None = None,
) -> tuple[Array, Array]:
    """Kernel regression ``f(x) = sum_i softmax_i(-(x - x_i)^2 / 2w^2) y_i``: ``(predictions, weights)``.

    Parameters
    ----------
    x_query : (L,)  points where we want a prediction (the queries)
    x_key : (S,)    training inputs (the keys)
    y_value : (S,) or (S, Ev)  training targets (the values): one number, or one vector, per key
    width : float   the kernel's width ``w``; small = local average, large = global mean (a
        one-element torch tensor with torch inputs, to learn it by gradient descent)
    mask : optional boolean, broadcastable to ``(L, S)``; True = may attend.  ``~eye(S)`` with the
        keys as queries leaves each point out of its own prediction (leave-one-out).

    Returns
    -------
    predictions : (L,) or (L, Ev)
    weights : (L, S), each row sums to 1 (a row with nothing to attend to is all zero)

    Examples
    --------
    >>> import numpy as np
    >>> pred, weights = nadaraya_watson(np.array([0.0, 5.0]), np.array([0.0, 5.0]), np.array([1.0, 3.0]), 0.1)
    >>> np.round(pred, 6)
    array([1., 3.])

    Leave-one-out: each key predicts its own value from the others only.

    >>> x = np.array([0.0, 1.0, 2.0])
    >>> pred, _ = nadaraya_watson(x, x, np.array([1.0, 2.0, 6.0]), 0.01, mask=~np.eye(3, dtype=bool))
    >>> np.round(pred, 6)
    array([2. , 3.5, 2. ])
    """
    scores = gaussian_kernel_scores(x_query, x_key, width)
    ops = namespace(x_query=x_query, y_value=y_value, mask=mask)
    y_value = ops.asarray(y_value)
    if y_value.ndim not in (1, 2) or y_value.shape[0] != scores.shape[1]:
        raise AttentionInputError(
            f"y_value must have one value per key, shape ({scores.shape[1]},) or "
            f"({scores.shape[1]}, Ev), got {fmt_shape(y_value)}."
        )
    if mask is not None:
        mask = check_mask(ops, mask, tuple(scores.shape), like=scores)
        scores = ops.where(mask, scores, -ops.inf)
    weights = softmax(scores, axis=-1)  # (L, S): each query's weights over the keys
    return weights @ y_value, weights  # (L, S) @ (S,) -> (L,), or (L, S) @ (S, Ev) -> (L, Ev)


@public("additive_scores")
def additive_scores(q: Array, k: Array, W_q: Array, W_k: Array, w_v: Array) -> Array:
    """Bahdanau's scores ``w_v . tanh(W_q q_i + W_k k_j)``, shape ``(..., L, S)``.

    Shapes: ``q (..., L, E_q)``, ``k (..., S, E_k)``, ``W_q (H, E_q)``, ``W_k (H, E_k)``,
    ``w_v (H,)``.  Queries and keys need not share a dimension: each is projected to ``H``.
    """
    ops = namespace(q=q, k=k, W_q=W_q, W_k=W_k, w_v=w_v)
    q, k, W_q, W_k, w_v = (ops.asarray(a) for a in (q, k, W_q, W_k, w_v))
    if W_q.ndim != 2 or W_k.ndim != 2 or w_v.ndim != 1 or not (W_q.shape[0] == W_k.shape[0] == w_v.shape[0]):
        raise AttentionInputError(
            f"expected W_q (H, E_q), W_k (H, E_k), w_v (H,) with one H, got W_q {fmt_shape(W_q)}, "
            f"W_k {fmt_shape(W_k)}, w_v {fmt_shape(w_v)}."
        )
    if q.shape[-1] != W_q.shape[1] or k.shape[-1] != W_k.shape[1]:
        raise AttentionInputError(
            f"q's last dim must be W_q's E_q and k's W_k's E_k; got q {fmt_shape(q)}, "
            f"W_q {fmt_shape(W_q)}, k {fmt_shape(k)}, W_k {fmt_shape(W_k)}."
        )
    q_proj = q @ ops.swap_last(W_q)  # (..., L, E_q) @ (E_q, H) -> (..., L, H)
    k_proj = k @ ops.swap_last(W_k)  # (..., S, E_k) @ (E_k, H) -> (..., S, H)
    hidden = ops.tanh(q_proj[..., :, None, :] + k_proj[..., None, :, :])  # (..., L, S, H)
    return hidden @ w_v  # (..., L, S, H) @ (H,) -> (..., L, S)


@public("additive_attention")
def additive_attention(
    q: Array, k: Array, v: Array, W_q: Array, W_k: Array, w_v: Array, mask: Array | None = None
) -> tuple[Array, Array]:
    """Additive attention: softmax of :func:`additive_scores` pools ``v (..., S, Ev)``; ``(out, weights)``.

    ``mask`` is boolean, broadcastable to ``(..., L, S)``, True = may attend.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> q, k, v = rng.normal(size=(2, 3)), rng.normal(size=(4, 5)), rng.normal(size=(4, 6))
    >>> out, w = additive_attention(q, k, v, rng.normal(size=(7, 3)), rng.normal(size=(7, 5)), rng.normal(size=7))
    >>> out.shape, w.shape, np.allclose(w.sum(-1), 1)
    ((2, 6), (2, 4), True)
    """
    scores = additive_scores(q, k, W_q, W_k, w_v)
    ops = namespace(q=q, v=v, mask=mask)
    if mask is not None:
        mask = check_mask(ops, mask, tuple(scores.shape), like=scores)
        scores = ops.where(mask, scores, -ops.inf)
    weights = softmax(scores, axis=-1)  # (..., L, S)
    return weights @ ops.asarray(v), weights  # (..., L, S) @ (..., S, Ev) -> (..., L, Ev)
