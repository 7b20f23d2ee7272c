"""delta_rule (DeltaNet, and Gated DeltaNet with ``decay``) against a written-out loop.

Also: exact store and recall with orthonormal keys, overwriting a key, what the decay forgets,
the initial state, flash-linear-attention's reference recurrences where fla is installed, torch
gradients, and the errors.
"""

import math

import numpy as np
import pytest
from fla_reference import naive

from attncourse import delta_rule, linear_attention
from support import DEVICES, assert_close, torch


def loop_delta_rule(q, k, v, beta, decay=None, scale=None, initial_state=None):
    """2-d ``q, k (L, E)``, ``v (L, Ev)``, ``beta (L,)``: the recurrence, one number at a time."""
    q, k, v = (np.asarray(a, np.float64) for a in (q, k, v))
    L, E = q.shape
    Ev = v.shape[1]
    scale = 1 / math.sqrt(E) if scale is None else scale
    S = np.zeros((E, Ev)) if initial_state is None else np.array(initial_state, np.float64)
    out = np.zeros((L, Ev))
    for t in range(L):
        if decay is not None:
            S = decay[t] * S
        for c in range(Ev):
            recalled = sum(k[t, e] * S[e, c] for e in range(E))  # (k_t S)[c]
            u = beta[t] * (v[t, c] - recalled)
            for e in range(E):
                S[e, c] += k[t, e] * u
        for c in range(Ev):
            out[t, c] = scale * sum(q[t, e] * S[e, c] for e in range(E))
    return out, S


def _inputs(rng, lead=(), L=6, E=4, Ev=3):
    q, k, v = rng.normal(size=(*lead, L, E)), rng.normal(size=(*lead, L, E)), rng.normal(size=(*lead, L, Ev))
    k = k / np.linalg.norm(k, axis=-1, keepdims=True)  # unit keys, as models use them
    return q, k, v, rng.uniform(0.1, 0.9, size=(*lead, L))


@pytest.mark.parametrize("kind", ["numpy", "torch"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("gated", [False, True])
@pytest.mark.parametrize("with_state", [False, True])
def test_matches_the_loop(rng, kind, dtype, gated, with_state):
    q, k, v, beta = _inputs(rng)
    decay = rng.uniform(0.5, 1.0, size=6) if gated else None
    state0 = rng.normal(size=(4, 3)) if with_state else None
    ref_out, ref_state = loop_delta_rule(q, k, v, beta, decay, None, state0)
    arrays = {"q": q, "k": k, "v": v, "beta": beta, "decay": decay, "initial_state": state0}
    arrays = {n: None if a is None else a.astype(dtype) for n, a in arrays.items()}
    if kind == "torch":
        arrays = {n: None if a is None else torch.as_tensor(a) for n, a in arrays.items()}
    out, state = delta_rule(**arrays)
    assert (
        type(out) is type(arrays["q"]) and str(out.dtype).endswith(dtype) and str(state.dtype).endswith(dtype)
    )
    assert_close(out, ref_out, dtype=getattr(torch, dtype))
    assert_close(state, ref_state, dtype=getattr(torch, dtype))


def test_leading_dims_broadcast_per_slice(rng):
    # q, k, v (2, 3, L, .); beta per head only (3, L); decay per batch entry (2, 1, L); state per head.
    q, k, v, _ = _inputs(rng, lead=(2, 3))
    beta, decay, state0 = (
        rng.uniform(0.1, 1, size=(3, 6)),
        rng.uniform(0.5, 1, size=(2, 1, 6)),
        rng.normal(size=(3, 4, 3)),
    )
    out, state = delta_rule(q, k, v, beta, decay=decay, scale=0.7, initial_state=state0)
    assert out.shape == (2, 3, 6, 3) and state.shape == (2, 3, 4, 3)
    for b in range(2):
        for h in range(3):
            ref_out, ref_state = loop_delta_rule(
                q[b, h], k[b, h], v[b, h], beta[h], decay[b, 0], 0.7, state0[h]
            )
            np.testing.assert_allclose(out[b, h], ref_out, rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(state[b, h], ref_state, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("kind", ["numpy", "torch"])
def test_orthonormal_keys_store_and_recall_exactly(rng, kind):
    E = 8
    keys = np.linalg.qr(rng.normal(size=(E, E)))[0]  # (L=E, E): orthonormal rows
    values = rng.normal(size=(E, 5))
    ones = np.ones(E)
    if kind == "torch":
        keys, values, ones = (torch.as_tensor(a) for a in (keys, values, ones))
    out, state = delta_rule(keys, keys, values, ones, scale=1.0)
    # Each read right after its write returns the value just stored, and after all E writes the
    # state returns every value for its key: the writes do not disturb one another.
    assert_close(out, values)
    assert_close(keys @ state, values)


def test_a_second_write_replaces_the_first(rng):
    k = np.array([[1.0, 0.0], [1.0, 0.0]])  # the same key twice
    v = np.array([[1.0, 2.0], [5.0, 7.0]])
    _, state = delta_rule(k, k, v, beta=1.0)
    np.testing.assert_allclose(k[0] @ state, v[1])  # the delta rule overwrites...
    adds = linear_attention(k, k, v, normalize=False)[-1]
    np.testing.assert_allclose(adds, v[0] + v[1])  # ...where linear attention's state adds


def test_without_decay_equals_decay_one_and_beta_number_equals_array(rng):
    q, k, v, beta = _inputs(rng, lead=(2,))
    out, state = delta_rule(q, k, v, beta)
    out1, state1 = delta_rule(q, k, v, beta, decay=np.ones((2, 6)))
    np.testing.assert_array_equal(out1, out)
    np.testing.assert_array_equal(state1, state)
    np.testing.assert_array_equal(delta_rule(q, k, v, 0.5)[0], delta_rule(q, k, v, np.full(6, 0.5))[0])


def test_decay_forgets():
    rng = np.random.default_rng(0)
    q, k, v, beta = _inputs(rng, L=5)
    state0 = rng.normal(size=(4, 3))
    decay = np.array([0.9, 0.5, 0.8, 1.0, 0.7])
    # Nothing written (beta = 0): the state only decays, by the product of the decays.
    _, state = delta_rule(q, k, v, np.zeros(5), decay=decay, initial_state=state0)
    np.testing.assert_allclose(state, np.prod(decay) * state0, rtol=1e-12)
    # decay = 0 at step 3 wipes everything before it: the result is that of starting at step 3.
    decay[3] = 0.0
    out, state = delta_rule(q, k, v, beta, decay=decay, initial_state=state0)
    tail, tail_state = delta_rule(q[3:], k[3:], v[3:], beta[3:], decay=decay[3:])
    np.testing.assert_allclose(out[3:], tail, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(state, tail_state, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("kind", ["numpy", "torch"])
def test_initial_state_continues_a_split_sequence(rng, kind):
    q, k, v, beta = _inputs(rng, lead=(2, 2), L=9)
    decay = rng.uniform(0.5, 1, size=(2, 2, 9))
    if kind == "torch":
        q, k, v, beta, decay = (torch.as_tensor(a) for a in (q, k, v, beta, decay))
    out, state = delta_rule(q, k, v, beta, decay=decay)
    first, mid = delta_rule(q[..., :4, :], k[..., :4, :], v[..., :4, :], beta[..., :4], decay=decay[..., :4])
    second, last = delta_rule(
        q[..., 4:, :], k[..., 4:, :], v[..., 4:, :], beta[..., 4:], decay=decay[..., 4:], initial_state=mid
    )
    cat = torch.cat if kind == "torch" else np.concatenate
    assert_close(cat([first, second], -2), out)
    assert_close(last, state)


@pytest.mark.parametrize("device", DEVICES)
def test_torch_device_and_gradients(rng, device):
    q, k, v, beta = _inputs(rng, lead=(2,), L=4, E=3, Ev=2)
    decay = rng.uniform(0.5, 1, size=(2, 4))
    tensors = [torch.tensor(a, device=device, requires_grad=True) for a in (q, k, v, beta, decay)]
    out, state = delta_rule(*tensors[:4], decay=tensors[4])
    assert out.device.type == device and state.device.type == device
    assert_close(out.cpu(), delta_rule(q, k, v, beta, decay=decay)[0])
    if device == "cpu":
        assert torch.autograd.gradcheck(lambda *a: delta_rule(*a[:4], decay=a[4]), tuple(tensors))


def test_half_precision_keeps_dtype(rng):
    q, k, v, beta = (torch.tensor(a, dtype=torch.bfloat16) for a in _inputs(rng, L=32, E=8, Ev=4))
    out, state = delta_rule(q, k, v, beta)
    ref_out, ref_state = delta_rule(q.double(), k.double(), v.double(), beta.double())
    assert out.dtype == state.dtype == torch.bfloat16
    assert_close(out, ref_out)
    assert_close(state, ref_state)


@pytest.mark.parametrize("with_state", [False, True])
def test_against_fla_delta_rule_recurrence(rng, with_state):
    """fla's delta_rule_recurrence: layout (B, H, L, .), scale 1/sqrt(E), float32 inside."""
    fla = naive("delta_rule")
    q, k, v, beta = _inputs(rng, lead=(2, 3), L=7, E=4, Ev=5)
    state0 = rng.normal(size=(2, 3, 4, 5)) if with_state else None
    args = [torch.tensor(a, dtype=torch.float32) for a in (q, k, v, beta)]
    theirs, their_state = fla.delta_rule_recurrence(
        *args, initial_state=None if state0 is None else torch.tensor(state0, dtype=torch.float32)
    )
    ours, our_state = delta_rule(
        *args, initial_state=None if state0 is None else torch.tensor(state0, dtype=torch.float32)
    )
    assert_close(ours, theirs)
    assert_close(our_state, their_state)


def test_against_fla_gated_delta_rule_recurrence(rng):
    """fla's naive_recurrent_gated_delta_rule: layout (B, L, H, .), the gate as a log: decay = exp(g)."""
    fla = naive("gated_delta_rule")
    q, k, v, beta = _inputs(rng, lead=(2, 3), L=7, E=4, Ev=5)  # (B, H, L, .)
    g = np.log(rng.uniform(0.5, 1.0, size=(2, 3, 7)))
    state0 = rng.normal(size=(2, 3, 4, 5))
    to_fla = [
        torch.tensor(a, dtype=torch.float32).transpose(1, 2) for a in (q, k, v, beta, g)
    ]  # (B, L, H, .)
    theirs, their_state = fla.naive_recurrent_gated_delta_rule(
        *to_fla, scale=0.6, initial_state=torch.tensor(state0, dtype=torch.float32), output_final_state=True
    )
    ours, our_state = delta_rule(
        *(torch.tensor(a, dtype=torch.float32) for a in (q, k, v, beta)),
        decay=torch.tensor(np.exp(g), dtype=torch.float32),
        scale=0.6,
        initial_state=torch.tensor(state0, dtype=torch.float32),
    )
    assert_close(ours, theirs.transpose(1, 2))
    assert_close(our_state, their_state)


ERRORS = [
    ("beta length", dict(beta=(5,)), "beta"),
    ("decay length", dict(decay=(4,)), "decay"),
    (
        "state shape",
        dict(initial_state=(3, 3)),
        r"initial_state must be \(\.\.\., E, Ev\) = \(\.\.\., 4, 3\)",
    ),
    ("state lead", dict(beta=(2, 6), initial_state=(3, 4, 3)), "do not broadcast.*initial_state"),
    ("k length", dict(k=(5, 4)), "k and v must have the same length"),
    ("q length", dict(q=(5, 4)), "q, k and v must have the same length L"),
    ("E mismatch", dict(k=(6, 5)), "q and k must share their last dimension E"),
]


@pytest.mark.parametrize("shapes,match", [e[1:] for e in ERRORS], ids=[e[0] for e in ERRORS])
def test_errors_name_the_argument(rng, shapes, match):
    given = {"q": (6, 4), "k": (6, 4), "v": (6, 3), "beta": (6,), **shapes}
    if given["k"] == (5, 4):
        given["v"] = (5, 3)
    arrays = {n: rng.normal(size=s) for n, s in given.items()}
    with pytest.raises(ValueError, match=f"(?s)delta_rule: .*{match}"):
        delta_rule(**arrays)


def test_kind_and_dtype_errors(rng):
    q, k, v, beta = _inputs(rng)
    with pytest.raises(TypeError, match="numpy arrays and torch tensors cannot be mixed"):
        delta_rule(q, k, v, torch.tensor(beta))
    with pytest.raises(TypeError, match="must share one dtype"):
        delta_rule(q, k, v, beta.astype(np.float32))
    with pytest.raises(TypeError, match="scale must be a Python number"):
        delta_rule(q, k, v, beta, scale="1")
