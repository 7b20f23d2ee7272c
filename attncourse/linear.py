"""Attention without the softmax: linear attention and the delta rule, as recurrences (chapter 13).

Chapter 9's tiled attention keeps, for every query, a running sum of ``exp(score) * value`` over
the keys.  Drop the softmax and the sum no longer depends on the query: with a feature map
``phi`` (applied to queries and keys), causal attention becomes a recurrence over positions with a
fixed-size state,

    S_t = S_{t-1} + phi(k_t)^T v_t        (E, Ev): the state, one outer product added per token
    z_t = z_{t-1} + phi(k_t)              (E,):    the running normaliser
    out_t = phi(q_t) S_t / (phi(q_t) . z_t)

so a decoder keeps ``E * Ev`` numbers per head however long the sequence, instead of a KV cache
that grows with it (Katharopoulos et al., 2020, "Transformers are RNNs").

A state that only ever adds cannot overwrite what it stored.  The **delta rule** (DeltaNet; Schlag
et al., 2021; Yang et al., 2024) first reads what the state holds for the key, ``k_t S``, and
writes only the correction ``beta_t (v_t - k_t S)``; Gated DeltaNet (Yang et al., 2025) also
multiplies the state by a decay ``alpha_t`` before each write, to forget.

Shape letters as in ``functional``: ``q, k (..., L, E)``, ``v (..., L, Ev)``; leading dimensions
(batch ``B``, heads ``H``) broadcast.  numpy arrays and torch tensors (any device) are accepted.
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Tuple

import numpy as np

from ._backend import AttentionInputError, AttentionTypeError, fmt_shape, namespace
from ._validation import as_float, broadcast_shapes, check_qkv, check_same_float, check_scale, public

__all__ = ["linear_attention", "elu_feature_map", "delta_rule"]

Array = Any  # a numpy array or a torch tensor


@public("elu_feature_map")
def elu_feature_map(x: Array) -> Array:
    """``elu(x) + 1``: ``x + 1`` for ``x > 0``, ``exp(x)`` otherwise (Katharopoulos et al., 2020).

    Every feature is positive, so ``phi(q) . phi(k) > 0``: a similarity that, like ``exp`` in the
    softmax, never goes negative, and the normaliser of ``linear_attention`` never vanishes.

    >>> import numpy as np
    >>> elu_feature_map(np.array([-1000.0, -1.0, 0.0, 2.0])).round(4)
    array([0.    , 0.3679, 1.    , 3.    ])
    """
    ops = namespace(x=x)
    x = as_float(ops, "x", x)
    below = x - ops.maximum(x, ops.zeros_like(x))  # min(x, 0): exp never sees a large positive x
    return ops.where(x > 0, x + 1, ops.exp(below))


@public("linear_attention")
def linear_attention(
    q: Array,
    k: Array,
    v: Array,
    *,
    feature_map: Optional[Callable[[Array], Array]] = None,
    causal: bool = True,
    normalize: bool = True,
) -> Array:
    r"""Linear attention :math:`\phi(q_t) S_t / (\phi(q_t) \cdot z_t)`, with no softmax and no scale.

    Parameters
    ----------
    q, k : (..., L, E)
    v : (..., L, Ev)
        With ``causal=False`` the keys and values may be longer or shorter than the queries,
        ``(..., S, E)`` and ``(..., S, Ev)``.
    feature_map : callable, optional
        ``phi``, applied to ``q`` and to ``k``; it may change their width ``E``.  ``None`` is the
        identity; ``elu_feature_map`` keeps every similarity positive.
    causal : bool
        ``S_t`` and ``z_t`` sum over the keys ``j <= t`` (the recurrence); ``False``: over every key.
    normalize : bool
        Divide by ``phi(q_t) . z_t``, the sum of the similarities (the softmax's denominator without
        the ``exp``); ``False`` returns the numerator ``phi(q_t) S_t``.  The denominator is 0 where
        every similarity is: use a positive feature map when normalising.

    Returns
    -------
    out : (..., L, Ev), the same kind, device and dtype as ``q``.

    Notes
    -----
    The causal case is computed with a cumulative sum over positions, which forms every state
    ``S_t`` at once (``(..., L, E, Ev)`` numbers); the recurrence of the module docstring gives the
    same numbers keeping one state, and the masked quadratic form below the same again.

    Examples
    --------
    The output equals the weights ``phi(q) phi(k)^T`` (lower triangle, rows divided by their sums)
    times ``v``: attention with ``phi(q) . phi(k)`` in place of ``exp(q . k)``.

    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> q, k, v = rng.normal(size=(2, 5, 4)), rng.normal(size=(2, 5, 4)), rng.normal(size=(2, 5, 3))
    >>> out = linear_attention(q, k, v, feature_map=elu_feature_map)
    >>> sims = np.tril(elu_feature_map(q) @ elu_feature_map(k).swapaxes(-1, -2))   # (2, 5, 5)
    >>> bool(np.allclose(out, (sims / sims.sum(-1, keepdims=True)) @ v))
    True
    """
    ops = namespace(q=q, k=k, v=v)
    q, k, v = ops.asarray(q), ops.asarray(k), ops.asarray(v)
    check_same_float(ops, q=q, k=k, v=v)
    lead, (L, S, E, Ev) = check_qkv(q, k, v)
    if causal and L != S:
        raise AttentionInputError(
            f"causal=True needs one key and value per query (the recurrence runs over one sequence); "
            f"got L={L} queries and S={S} keys: q {fmt_shape(q)}, k {fmt_shape(k)}, v {fmt_shape(v)}."
        )
    phi_q, phi_k = _feature_map(ops, feature_map, q, k)

    out_dtype = q.dtype
    work = ops.compute_dtype(q)  # float32 for half precision: the sums grow with L
    phi_q, phi_k, v = ops.astype(phi_q, work), ops.astype(phi_k, work), ops.astype(v, work)
    if causal:
        # The recurrence's running sums, all at once: a cumulative sum over positions gives every
        # S_t (a fast path that keeps all L states, (..., L, E, Ev); the loop over t of the module
        # docstring computes the same numbers, keeping one).
        state = ops.cumsum(phi_k[..., :, :, None] * v[..., :, None, :], axis=-3)  # (..., L, E, Ev)
        num = (phi_q[..., :, None, :] @ state)[..., 0, :]  # (..., L, 1, E) @ (..., L, E, Ev) -> (..., L, Ev)
        z = ops.cumsum(phi_k, axis=-2)  # (..., L, E): z_t for every t
    else:
        state = ops.swap_last(phi_k) @ v  # (..., E, S) @ (..., S, Ev) -> (..., E, Ev): one state
        num = phi_q @ state  # (..., L, E) @ (..., E, Ev) -> (..., L, Ev)
        z = ops.sum(phi_k, axis=-2)  # (..., 1, E): every key
    if normalize:
        num = num / ops.sum(phi_q * z, axis=-1)  # (..., L, Ev) / (..., L, 1)
    return ops.astype(num, out_dtype)  # (..., L, Ev): the leading dims of q, k and v broadcast


def _feature_map(ops, feature_map, q: Array, k: Array) -> Tuple[Array, Array]:
    """``phi(q), phi(k)``, checked: same kind, leading shape kept, one feature width for both."""
    if feature_map is None:
        return q, k
    if not callable(feature_map):
        raise AttentionTypeError(
            f"feature_map must be a function of one array (e.g. elu_feature_map) or None; "
            f"got {type(feature_map).__name__}."
        )
    phi_q, phi_k = feature_map(q), feature_map(k)
    for name, x, phi in (("q", q, phi_q), ("k", k, phi_k)):
        if ops.name != namespace(phi=phi).name or tuple(phi.shape[:-1]) != tuple(x.shape[:-1]):
            raise AttentionInputError(
                f"feature_map must map {name} of shape {fmt_shape(x)} = (..., L, E) to an array of the "
                f"same kind and shape (..., L, E'); got {type(phi).__name__} of shape {fmt_shape(phi)}."
            )
    if phi_q.shape[-1] != phi_k.shape[-1]:
        raise AttentionInputError(
            f"feature_map must give q and k the same width; got {fmt_shape(phi_q)} for q and "
            f"{fmt_shape(phi_k)} for k."
        )
    return phi_q, phi_k


@public("delta_rule")
def delta_rule(
    q: Array,
    k: Array,
    v: Array,
    beta: Array,
    *,
    decay: Optional[Array] = None,
    scale: Optional[float] = None,
    initial_state: Optional[Array] = None,
) -> Tuple[Array, Array]:
    r"""The delta rule (DeltaNet), and with ``decay`` Gated DeltaNet, as a loop over positions.

    For ``t = 0 .. L-1``, with the state ``S (..., E, Ev)`` (zero unless ``initial_state``)::

        S     <- decay_t * S                    forget (Gated DeltaNet's alpha_t; 1 by default)
        u_t    = beta_t * (v_t - k_t S)         what the state gets wrong for k_t, times beta_t
        S     <- S + k_t^T u_t                  write the correction under k_t
        out_t  = scale * q_t S                  read

    With ``beta_t = 1`` and a unit-length ``k_t``, ``k_t S = v_t`` right after the write: the state
    holds exactly ``v_t`` for ``k_t`` (and, with orthonormal keys, still holds every earlier pair).
    Models normalise ``q`` and ``k`` to unit length and keep ``beta`` in ``(0, 1)`` (a sigmoid), which
    keeps the state bounded; this function does neither for them.

    Parameters
    ----------
    q, k : (..., L, E)
    v : (..., L, Ev)
    beta : (..., L), or a number
        The writing strength of each position.
    decay : (..., L), or a number, optional
        Multiplies the state before each write; ``None`` means 1 (plain DeltaNet).
    scale : float, optional
        Multiplies the outputs; ``None`` means ``1 / sqrt(E)``, the convention of
        flash-linear-attention's reference recurrences.
    initial_state : (..., E, Ev), optional

    Returns
    -------
    out : (..., L, Ev)
    state : (..., E, Ev), the state after the last position (pass it on as ``initial_state``).
        Both the same kind, device and dtype as ``q``; leading dimensions broadcast over all inputs.

    Examples
    --------
    Three orthonormal keys, each written once with ``beta = 1``, then read back:

    >>> import numpy as np
    >>> keys = np.eye(3)                                  # (L=3, E=3): orthonormal
    >>> values = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    >>> _, state = delta_rule(keys, keys, values, beta=1.0)
    >>> keys @ state                                      # recall: every value, exactly
    array([[1., 2.],
           [3., 4.],
           [5., 6.]])

    Splitting the sequence and passing the state on gives the same outputs:

    >>> rng = np.random.default_rng(0)
    >>> q, k, v, beta = rng.normal(size=(6, 4)), rng.normal(size=(6, 4)), rng.normal(size=(6, 2)), rng.random(6)
    >>> out, _ = delta_rule(q, k, v, beta)
    >>> first, state = delta_rule(q[:4], k[:4], v[:4], beta[:4])
    >>> second, _ = delta_rule(q[4:], k[4:], v[4:], beta[4:], initial_state=state)
    >>> bool(np.allclose(np.concatenate([first, second]), out))
    True
    """
    ops = namespace(q=q, k=k, v=v, beta=beta, decay=decay, initial_state=initial_state)
    q, k, v = ops.asarray(q), ops.asarray(k), ops.asarray(v)
    beta, decay = _per_position(ops, beta, q), _per_position(ops, decay, q)
    initial_state = None if initial_state is None else ops.asarray(initial_state)
    given = {"beta": beta, "decay": decay, "initial_state": initial_state}
    check_same_float(ops, q=q, k=k, v=v, **{n: a for n, a in given.items() if a is not None})
    lead, (L, S, E, Ev) = check_qkv(q, k, v)
    if S != L:
        raise AttentionInputError(
            f"q, k and v must have the same length L (one key and value per query); got L={L} "
            f"queries and {S} keys: q {fmt_shape(q)}, k {fmt_shape(k)}, v {fmt_shape(v)}."
        )
    scale = check_scale(scale, E)
    if initial_state is not None and (initial_state.ndim < 2 or tuple(initial_state.shape[-2:]) != (E, Ev)):
        raise AttentionInputError(
            f"initial_state must be (..., E, Ev) = (..., {E}, {Ev}) for q {fmt_shape(q)} and "
            f"v {fmt_shape(v)}; got {fmt_shape(initial_state)}."
        )
    # Every input broadcasts to (..., L): beta and decay as they are, the others without their
    # feature axes.
    shapes = {"q, k and v (leading dims, L)": lead + (L,)}
    shapes.update({n: tuple(a.shape) for n, a in (("beta", beta), ("decay", decay)) if a is not None})
    if initial_state is not None:
        shapes["initial_state (leading dims, L)"] = tuple(initial_state.shape[:-2]) + (L,)
    full = broadcast_shapes("shapes (..., L) of the inputs", shapes)
    if full[-1] != L:
        raise AttentionInputError(
            f"beta and decay must be (..., L) with L={L}; got "
            + ", ".join(f"{n} {s}" for n, s in shapes.items() if n in ("beta", "decay"))
            + "."
        )
    lead = full[:-1]

    out_dtype = q.dtype
    work = ops.compute_dtype(q)  # float32 for half precision: the state accumulates
    q, k, v = ops.astype(q, work), ops.astype(k, work), ops.astype(v, work)
    beta = ops.broadcast_to(ops.astype(beta, work), full)  # (..., L)
    decay = None if decay is None else ops.broadcast_to(ops.astype(decay, work), full)
    state = ops.zeros(lead + (E, Ev), like=q)
    if initial_state is not None:
        state = state + ops.astype(initial_state, work)  # (..., E, Ev), broadcast to the full lead
    outs = []
    for t in range(L):
        q_t, k_t, v_t = q[..., t : t + 1, :], k[..., t : t + 1, :], v[..., t : t + 1, :]  # (..., 1, .)
        if decay is not None:
            state = decay[..., t, None, None] * state  # (..., 1, 1) * (..., E, Ev): forget
        # What the state returns for k_t now, and the correction toward v_t: (..., 1, Ev).
        u_t = beta[..., t, None, None] * (v_t - k_t @ state)  # (..., 1, E) @ (..., E, Ev) -> (..., 1, Ev)
        state = state + ops.swap_last(k_t) @ u_t  # (..., E, 1) @ (..., 1, Ev) -> (..., E, Ev)
        outs.append(q_t @ state)  # (..., 1, E) @ (..., E, Ev) -> (..., 1, Ev)
    out = (
        scale * ops.concatenate(outs, axis=-2) if outs else ops.zeros(lead + (0, Ev), like=q)
    )  # (..., L, Ev)
    return ops.astype(out, out_dtype), ops.astype(state, out_dtype)


def _per_position(ops, x: Any, like: Array) -> Optional[Array]:
    """``beta`` or ``decay``: a plain number becomes an array of ``like``'s kind, dtype and device."""
    if x is None:
        return None
    if isinstance(x, (int, float)) and not isinstance(x, bool):
        return ops.astype(ops.from_numpy(np.asarray(float(x)), like=like), like.dtype)
    return ops.asarray(x)
