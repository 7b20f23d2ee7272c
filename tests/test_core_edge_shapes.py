"""Edge shapes PyTorch accepts: empty dimensions, 0-d inputs, leading dimensions that broadcast.

``softmax`` and ``scaled_dot_product_attention`` give torch's result (shape and values) wherever
``torch.softmax`` and ``F.scaled_dot_product_attention`` give one, and a ``ValueError`` naming
the argument wherever they refuse.  One deliberate difference: when leading dimensions broadcast
*and* a tensor is empty, torch's SDPA returns q's leading shape; ours keeps the broadcast shape,
as torch itself does for the same inputs broadcast by hand.  ``flash_attention`` equals ``scaled_dot_product_attention`` on
every such shape, numpy and torch alike.  Shapes come from hypothesis.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import attncourse as ac
from support import F, torch

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
size = st.integers(0, 3)  # 0 included: empty dimensions


@st.composite
def attention_shapes(draw):
    """Shapes of q, k, v whose leading dimensions broadcast (each may drop or shrink to 1)."""
    lead = draw(st.lists(st.integers(0, 3), max_size=2))
    L, S, E, Ev = draw(size), draw(size), draw(size), draw(size)

    def leading():
        dims = [1 if draw(st.booleans()) else n for n in lead]
        return tuple(dims[draw(st.integers(0, len(dims))) :])  # drop some leading dims

    return leading() + (L, E), leading() + (S, E), leading() + (S, Ev)


def _arrays(seed, *shapes):
    rng = np.random.default_rng(seed)
    return [rng.normal(size=shape) for shape in shapes]


@SETTINGS
@given(shape=st.lists(size, max_size=3), seed=st.integers(0, 2**16))
def test_softmax_of_any_shape_and_axis(shape, seed):
    (x,) = _arrays(seed, tuple(shape))
    for axis in range(-max(x.ndim, 1), max(x.ndim, 1)):
        out = ac.softmax(x, axis)
        assert isinstance(out, np.ndarray) and out.shape == x.shape and out.dtype == x.dtype
        if x.size:
            np.testing.assert_allclose(out.sum(axis) if x.ndim else out, 1.0)
            assert (out > 0).all()


@SETTINGS
@given(shape=st.lists(size, max_size=3), seed=st.integers(0, 2**16))
def test_softmax_of_any_shape_and_axis_is_torchs(shape, seed):
    pytest.importorskip("torch")
    (x,) = _arrays(seed, tuple(shape))
    for axis in range(-max(x.ndim, 1), max(x.ndim, 1)):
        expected = torch.softmax(torch.from_numpy(x), axis)
        np.testing.assert_allclose(ac.softmax(x, axis), expected.numpy(), rtol=1e-12, atol=1e-15)
        torch.testing.assert_close(ac.softmax(torch.from_numpy(x), axis), expected)


@pytest.mark.parametrize("axis", [1, -2, 2])
def test_softmax_of_a_0d_input_refuses_the_axes_torch_refuses(axis):
    with pytest.raises(ValueError, match=rf"softmax: axis={axis} is out of range for x of shape \(\)"):
        ac.softmax(np.float64(2.0), axis)


def test_softmax_of_0d_and_empty_inputs():
    assert ac.softmax(np.float64(-3.0)).shape == () and float(ac.softmax(np.float64(-3.0))) == 1.0
    assert ac.softmax(np.zeros((2, 0))).shape == (2, 0)
    assert ac.softmax(np.zeros((0, 4)), axis=0).shape == (0, 4)


@SETTINGS
@given(shapes=attention_shapes(), seed=st.integers(0, 2**16), is_causal=st.booleans())
def test_attention_on_edge_shapes(shapes, seed, is_causal):
    q, k, v = _arrays(seed, *shapes)
    out, weights = ac.scaled_dot_product_attention(q, k, v, is_causal=is_causal)
    lead = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    L, S, Ev = q.shape[-2], k.shape[-2], v.shape[-1]
    assert out.shape == lead + (L, Ev) and weights.shape == lead + (L, S)
    np.testing.assert_allclose(out, weights @ v, rtol=1e-12, atol=1e-12)
    if S == 0:
        assert (out == 0).all()  # nothing to attend to: zeros, as torch
    tiled = ac.flash_attention(q, k, v, is_causal=is_causal, block_size=2)
    np.testing.assert_allclose(tiled, out, rtol=1e-10, atol=1e-12)
    # Broadcasting by hand changes nothing.
    by_hand = [np.broadcast_to(a, lead + a.shape[-2:]).copy() for a in (q, k, v)]
    np.testing.assert_allclose(ac.scaled_dot_product_attention(*by_hand, is_causal=is_causal)[0], out)


@SETTINGS
@given(shapes=attention_shapes(), seed=st.integers(0, 2**16), is_causal=st.booleans())
def test_attention_on_edge_shapes_is_torchs(shapes, seed, is_causal):
    pytest.importorskip("torch")
    q, k, v = _arrays(seed, *shapes)
    out, _ = ac.scaled_dot_product_attention(q, k, v, is_causal=is_causal)
    lead = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    # torch on the inputs broadcast by hand: broadcasting is then torch's too.
    qt, kt, vt = (torch.from_numpy(np.broadcast_to(a, lead + a.shape[-2:]).copy()) for a in (q, k, v))
    expected = F.scaled_dot_product_attention(qt, kt, vt, is_causal=is_causal)
    np.testing.assert_allclose(out, expected.numpy(), rtol=1e-10, atol=1e-12)
    # torch broadcasting by itself gives the same, except where a tensor is empty: there its
    # shortcut returns q's leading shape, e.g. q (1, 2, 3), k (0, 4, 3) -> (1, 2, Ev), not (0, 2, Ev).
    q_t, k_t, v_t = (torch.from_numpy(a) for a in (q, k, v))
    direct = F.scaled_dot_product_attention(q_t, k_t, v_t, is_causal=is_causal)
    if direct.shape == expected.shape:
        torch.testing.assert_close(direct, expected)
    else:
        assert 0 in q.shape + k.shape + v.shape and direct.shape == q.shape[:-1] + v.shape[-1:]
    torch.testing.assert_close(
        ac.scaled_dot_product_attention(q_t, k_t, v_t, is_causal=is_causal)[0], expected
    )
    torch.testing.assert_close(ac.flash_attention(q_t, k_t, v_t, is_causal=is_causal, block_size=2), expected)


@pytest.mark.parametrize(
    "shapes",
    [
        ((), (7, 8), (7, 4)),  # 0-d q
        ((8,), (7, 8), (7, 4)),  # 1-d q
        ((5, 8), (8,), (7, 4)),  # 1-d k
        ((), (), ()),
    ],
    ids=["0-d q", "1-d q", "1-d k", "all 0-d"],
)
def test_fewer_than_two_dims_fail_as_in_torch(shapes):
    q, k, v = _arrays(0, *shapes)
    for attend in (ac.scaled_dot_product_attention, ac.flash_attention):
        with pytest.raises(ValueError, match=r"(?s)q, k and v need at least 2 dimensions.*q: \("):
            attend(q, k, v)
    pytest.importorskip("torch")
    with pytest.raises(RuntimeError, match="at least 2 dimensional"):
        F.scaled_dot_product_attention(*(torch.from_numpy(np.asarray(a)) for a in (q, k, v)))


@pytest.mark.parametrize(
    "shapes",
    [
        ((2, 5, 8), (3, 7, 8), (3, 7, 4)),  # batch 2 against 3
        ((2, 3, 5, 8), (2, 2, 7, 8), (2, 3, 7, 4)),  # heads 3 against 2 in k only
    ],
)
def test_leading_dims_that_do_not_broadcast_fail_as_in_torch(shapes):
    q, k, v = _arrays(0, *shapes)
    for attend in (ac.scaled_dot_product_attention, ac.flash_attention):
        with pytest.raises(ValueError, match=r"(?s)leading \(batch/head\) dimensions .* do not broadcast"):
            attend(q, k, v)
    pytest.importorskip("torch")
    with pytest.raises(RuntimeError):
        F.scaled_dot_product_attention(*(torch.from_numpy(a) for a in (q, k, v)))
