"""Kernel regression and additive attention (chapter 0): brute-force loops, torch parity, errors."""

import numpy as np
import pytest

from attncourse import AttentionInputError
from attncourse.pooling import additive_attention, additive_scores, nadaraya_watson


def test_nadaraya_watson_matches_a_loop():
    rng = np.random.default_rng(0)
    xq, xk, y = rng.normal(size=4), rng.normal(size=6), rng.normal(size=6)
    pred, weights = nadaraya_watson(xq, xk, y, width=0.7)
    for i, x in enumerate(xq):
        kern = np.exp(-((x - xk) ** 2) / (2 * 0.7**2))
        np.testing.assert_allclose(weights[i], kern / kern.sum(), rtol=1e-12)
        np.testing.assert_allclose(pred[i], (kern * y).sum() / kern.sum(), rtol=1e-12)


def test_width_limits():
    xk, y = np.array([0.0, 1.0, 2.0]), np.array([1.0, 2.0, 6.0])
    wide, _ = nadaraya_watson(np.array([0.0]), xk, y, width=1e4)
    narrow, _ = nadaraya_watson(np.array([2.0]), xk, y, width=1e-3)
    np.testing.assert_allclose(wide, [y.mean()], rtol=1e-6)  # very wide: the global mean
    np.testing.assert_allclose(narrow, [6.0])  # very narrow: the nearest key's value


def test_vector_values_pool_column_by_column():
    rng = np.random.default_rng(2)
    xq, xk, y = rng.normal(size=3), rng.normal(size=5), rng.normal(size=(5, 4))
    pred, weights = nadaraya_watson(xq, xk, y, width=0.5)
    assert pred.shape == (3, 4)
    for j in range(4):
        col, w_col = nadaraya_watson(xq, xk, y[:, j], width=0.5)
        np.testing.assert_allclose(pred[:, j], col, rtol=1e-12)
        np.testing.assert_allclose(weights, w_col)


def test_leave_one_out_mask_matches_dropping_the_point():
    rng = np.random.default_rng(3)
    x, y = rng.uniform(0, 5, size=7), rng.normal(size=7)
    pred, weights = nadaraya_watson(x, x, y, width=0.8, mask=~np.eye(7, dtype=bool))
    assert np.all(np.diag(weights) == 0)
    for i in range(7):
        others = np.arange(7) != i
        alone, _ = nadaraya_watson(x[i : i + 1], x[others], y[others], width=0.8)
        np.testing.assert_allclose(pred[i], alone[0], rtol=1e-12)


def test_torch_mask_and_gradient_through_the_values():
    torch = pytest.importorskip("torch")
    x = torch.linspace(0, 1, 5, dtype=torch.float64)
    y = torch.randn(5, dtype=torch.float64, generator=torch.Generator().manual_seed(0), requires_grad=True)
    pred, weights = nadaraya_watson(x, x, y, width=0.3, mask=~torch.eye(5, dtype=torch.bool))
    assert isinstance(pred, torch.Tensor) and torch.all(weights.diagonal() == 0)
    pred.sum().backward()
    # d(sum of predictions)/dy_j is the total weight key j receives
    torch.testing.assert_close(y.grad, weights.sum(0))


def test_a_tensor_width_gets_the_gradient_of_the_loss():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(4)
    x, y = torch.from_numpy(rng.uniform(0, 5, size=9)), torch.from_numpy(rng.normal(size=9))
    loo = ~torch.eye(9, dtype=torch.bool)

    def loss(width):
        pred, _ = nadaraya_watson(x, x, y, width=width, mask=loo)
        return ((pred - y) ** 2).mean()

    width = torch.tensor(0.7, dtype=torch.float64, requires_grad=True)
    loss(width).backward()
    eps = 1e-6
    numeric = (loss(0.7 + eps) - loss(0.7 - eps)) / (2 * eps)  # float widths: no graph
    assert width.grad is not None and abs(width.grad.item()) > 1e-4
    torch.testing.assert_close(width.grad, numeric, rtol=1e-5, atol=1e-9)
    with pytest.raises(AttentionInputError, match="mixed"):
        nadaraya_watson(x.numpy(), x.numpy(), y.numpy(), width=width)


def test_additive_matches_a_loop_and_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    q, k, v = rng.normal(size=(2, 3, 4)), rng.normal(size=(2, 5, 6)), rng.normal(size=(2, 5, 2))
    W_q, W_k, w_v = rng.normal(size=(7, 4)), rng.normal(size=(7, 6)), rng.normal(size=7)
    scores = additive_scores(q, k, W_q, W_k, w_v)
    for b in range(2):
        for i in range(3):
            for j in range(5):
                expected = w_v @ np.tanh(W_q @ q[b, i] + W_k @ k[b, j])
                assert abs(scores[b, i, j] - expected) < 1e-12
    mask = np.array([True, True, False, True, False])
    out, weights = additive_attention(q, k, v, W_q, W_k, w_v, mask=mask)
    assert np.all(weights[..., ~mask] == 0)
    np.testing.assert_allclose(weights.sum(-1), 1.0)
    t = [torch.from_numpy(a) for a in (q, k, v, W_q, W_k, w_v)]
    out_t, _weights_t = additive_attention(*t, mask=torch.from_numpy(mask))
    assert isinstance(out_t, torch.Tensor)
    np.testing.assert_allclose(out_t.numpy(), out, rtol=1e-12)


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: nadaraya_watson(np.zeros(2), np.zeros(3), np.zeros(3), width=0), "width"),
        (lambda: nadaraya_watson(np.zeros(2), np.zeros(3), np.zeros(3), width="wide"), "width"),
        (lambda: nadaraya_watson(np.zeros((2, 1)), np.zeros(3), np.zeros(3)), r"x_query .*\(2, 1\)"),
        (lambda: nadaraya_watson(np.zeros(2), np.zeros(3), np.zeros(4)), r"y_value .*\(4,\)"),
        (lambda: nadaraya_watson(np.zeros(2), np.zeros(3), np.zeros((3, 2, 2))), r"y_value .*\(3, 2, 2\)"),
        (
            lambda: nadaraya_watson(np.zeros(2), np.zeros(3), np.zeros(3), mask=np.ones((2, 3))),
            "mask must be boolean",
        ),
        (
            lambda: nadaraya_watson(np.zeros(2), np.zeros(3), np.zeros(3), mask=np.ones((2, 4), bool)),
            r"mask of shape \(2, 4\)",
        ),
        (
            lambda: additive_scores(
                np.zeros((2, 3)), np.zeros((4, 5)), np.zeros((7, 3)), np.zeros((6, 5)), np.zeros(7)
            ),
            r"W_k \(6, 5\)",
        ),
    ],
)
def test_errors_name_the_argument(call, match):
    with pytest.raises(AttentionInputError, match=match):
        call()
