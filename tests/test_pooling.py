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
    out_t, weights_t = additive_attention(*t, mask=torch.from_numpy(mask))
    assert isinstance(out_t, torch.Tensor)
    np.testing.assert_allclose(out_t.numpy(), out, rtol=1e-12)


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: nadaraya_watson(np.zeros(2), np.zeros(3), np.zeros(3), width=0), "width"),
        (lambda: nadaraya_watson(np.zeros((2, 1)), np.zeros(3), np.zeros(3)), r"x_query .*\(2, 1\)"),
        (lambda: nadaraya_watson(np.zeros(2), np.zeros(3), np.zeros(4)), r"y_value .*\(4,\)"),
        (
            lambda: additive_scores(np.zeros((2, 3)), np.zeros((4, 5)), np.zeros((7, 3)), np.zeros((6, 5)), np.zeros(7)),
            r"W_k \(6, 5\)",
        ),
    ],
)
def test_errors_name_the_argument(call, match):
    with pytest.raises(AttentionInputError, match=match):
        call()
