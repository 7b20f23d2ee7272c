"""The pure functions behind the slider explorers: the numbers each picture shows."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import attncourse as ac
from attncourse import explore


# -- helpers ---------------------------------------------------------------------------------


def test_entropy_uniform_and_one_hot():
    assert explore.entropy(np.full(8, 1 / 8)) == pytest.approx(math.log(8))
    assert explore.entropy(np.array([0.0, 1.0, 0.0])) == 0.0
    np.testing.assert_allclose(explore.entropy(np.array([[0.5, 0.5], [1.0, 0.0]])), [math.log(2), 0.0])


def test_softmax_jacobian_matches_autograd(rng):
    scores = torch.tensor(rng.normal(size=5), requires_grad=True)
    expected = torch.autograd.functional.jacobian(lambda s: torch.softmax(s, -1), scores)
    p = ac.softmax(scores.detach().numpy())
    np.testing.assert_allclose(explore.softmax_jacobian(p), expected.numpy(), atol=1e-12)


def test_divisors():
    assert explore.divisors(12) == (1, 2, 3, 4, 6, 12)
    assert explore.divisors(1) == (1,)
    with pytest.raises(ValueError, match="n must be an integer >= 1"):
        explore.divisors(0)


# -- softmax ---------------------------------------------------------------------------------


def test_softmax_view_values():
    view = explore.softmax_view(2.0, [1.0, 2.0, 3.0])
    np.testing.assert_allclose(view.weights, ac.softmax(np.array([0.5, 1.0, 1.5])))
    assert view.weights.sum() == pytest.approx(1.0)
    assert view.max_entropy == pytest.approx(math.log(3))
    assert view.max_weight == pytest.approx(view.weights.max())


def test_softmax_temperature_orders_entropy():
    entropies = [explore.softmax_view(t).entropy for t in explore.TEMPERATURES]
    assert all(a < b for a, b in zip(entropies, entropies[1:])), entropies
    cold, hot = explore.softmax_view(explore.TEMPERATURES[0]), explore.softmax_view(explore.TEMPERATURES[-1])
    assert cold.max_weight > 0.99  # nearly one-hot on the largest logit
    assert np.argmax(cold.weights) == np.argmax(explore.LOGITS)
    assert hot.entropy > 0.95 * hot.max_entropy  # nearly uniform


@pytest.mark.parametrize("bad", [0.0, -1.0, True, "1"])
def test_softmax_view_refuses_bad_temperature(bad):
    with pytest.raises(ValueError, match="temperature must be a positive number"):
        explore.softmax_view(bad)


# -- scaling ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def scaling_views():
    return [explore.scaling_view(d) for d in explore.D_K_VALUES]


def test_unscaled_entropy_falls_as_d_k_grows(scaling_views):
    entropies = [v.stats["unscaled"].entropy for v in scaling_views]
    assert all(a > b for a, b in zip(entropies, entropies[1:])), entropies
    assert entropies[-1] < 0.1 * scaling_views[-1].max_entropy  # saturated: almost one-hot
    grads = [v.stats["unscaled"].grad_norm for v in scaling_views]
    assert grads[-1] < 0.2 * grads[0]  # and the gradient through softmax vanishes


def test_scaled_entropy_does_not_fall(scaling_views):
    entropies = np.array([v.stats["scaled"].entropy for v in scaling_views])
    assert entropies.max() - entropies.min() < 0.1 * scaling_views[0].max_entropy, entropies
    grads = np.array([v.stats["scaled"].grad_norm for v in scaling_views])
    assert grads.min() > 0.8 * grads.max()


def test_score_spread_is_sqrt_d_k(scaling_views):
    for view in scaling_views[4:]:  # d_k >= 16: enough terms for the variance to show
        d_k = view.d_k
        assert view.stats["unscaled"].score_std == pytest.approx(math.sqrt(d_k), rel=0.25)
        assert view.stats["scaled"].score_std == pytest.approx(1.0, rel=0.25)


def test_scaling_view_matches_attention():
    view = explore.scaling_view(32, seed=3)
    q, k = view.q, view.k
    np.testing.assert_allclose(view.scores["unscaled"], q @ k.T)
    np.testing.assert_allclose(view.scores["scaled"], q @ k.T / math.sqrt(32))
    _, weights = ac.scaled_dot_product_attention(q, k, k)
    np.testing.assert_allclose(view.weights["scaled"], weights)
    np.testing.assert_allclose(view.weights["unscaled"], ac.softmax(q @ k.T))
    small = explore.scaling_view(8, seed=3)
    np.testing.assert_array_equal(small.q, q[:, :8])  # the same vectors, shorter


# -- heads -----------------------------------------------------------------------------------


def test_heads_view_parameter_count_is_constant():
    counts = {h: explore.heads_view(h).n_params for h in explore.divisors(12)}
    assert set(counts.values()) == {4 * 12 * 12 + 4 * 12}
    module = ac.MultiHeadAttention(12, 4)
    assert sum(p.numel() for p in module.parameters()) == counts[4]


def test_heads_view_shapes_and_d_head():
    for n_heads in explore.divisors(12):
        view = explore.heads_view(n_heads)
        assert view.d_head * n_heads == 12
        assert view.weights.shape == (n_heads, 6, 6)
        np.testing.assert_allclose(view.weights.sum(-1), 1.0)
        assert view.n_params_per_head * n_heads == 3 * 12 * 12


def test_heads_view_repeated_token_gets_the_same_row():
    view = explore.heads_view(3)
    first, second = [i for i, t in enumerate(view.tokens) if t == "the"]
    np.testing.assert_allclose(view.weights[:, first], view.weights[:, second])


def test_heads_view_matches_per_head_attention():
    view = explore.heads_view(4, seed=1)
    x = view.x
    rng = np.random.default_rng(1)
    rng.standard_normal((5, 12))  # the embedding draw (5 distinct tokens)
    w_q, w_k, w_v, w_o = rng.standard_normal((4, 12, 12)) / math.sqrt(12)
    for h in range(4):
        cols = slice(3 * h, 3 * h + 3)
        scores = (x @ w_q[:, cols]) @ (x @ w_k[:, cols]).T / math.sqrt(3)  # (L, 3) @ (3, L) -> (L, L)
        np.testing.assert_allclose(view.weights[h], ac.softmax(scores), atol=1e-12)


def test_heads_view_refuses_a_non_divisor():
    with pytest.raises(ValueError, match=r"n_heads=5 does not divide d_model=12.*\[1, 2, 3, 4, 6, 12\]"):
        explore.heads_view(5)


# -- masks -----------------------------------------------------------------------------------


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("pad_length", range(explore.MASK_LENGTH + 1))
def test_masked_weights_are_zero(pad_length, causal):
    view = explore.mask_view(pad_length, causal)
    mask, weights = view.mask, view.weights
    assert mask.shape == (6, 6) and mask.dtype == bool
    assert (weights[~mask] == 0).all()
    assert np.isneginf(view.masked_scores[~mask]).all()
    np.testing.assert_array_equal(view.masked_scores[mask], view.scores[mask])
    assert not mask[:, 6 - pad_length :].any()  # padded keys are hidden from every query
    if causal:
        assert not np.triu(mask, 1).any()
    has_key = mask.any(axis=-1)
    np.testing.assert_allclose(view.row_sums[has_key], 1.0)
    np.testing.assert_array_equal(view.row_sums[~has_key], 0.0)  # nothing to attend to: zeros
    assert view.empty_rows == tuple(np.flatnonzero(~has_key))
    assert view.tokens[6 - pad_length :] == ("<pad>",) * pad_length


def test_mask_view_matches_sdpa_with_is_causal():
    view = explore.mask_view(1, True)
    rng = np.random.default_rng(0)
    q, k, v = rng.standard_normal((3, 6, 4))
    _, expected = ac.scaled_dot_product_attention(q, k, v, ac.padding_mask([5], 6), is_causal=True)
    np.testing.assert_allclose(view.weights, expected)


def test_mask_view_refuses_too_much_padding():
    with pytest.raises(ValueError, match="pad_length must be at most L=6"):
        explore.mask_view(7)


# -- positional ------------------------------------------------------------------------------


@pytest.mark.parametrize("d_model", explore.D_MODEL_VALUES)
def test_dot_vs_offset_is_symmetric_and_peaks_at_zero(d_model):
    view = explore.positional_view(d_model, 16)
    by_offset = dict(zip(view.offsets.tolist(), view.pe_dots))
    for offset in range(1, 16):
        assert by_offset[offset] == pytest.approx(by_offset[-offset], abs=1e-9)
        assert by_offset[offset] < by_offset[0]
    assert by_offset[0] == pytest.approx(d_model / 2)


def test_dot_vs_offset_does_not_depend_on_position():
    curves = [
        dict(zip(v.offsets.tolist(), v.pe_dots))
        for v in (explore.positional_view(32, p) for p in explore.POSITIONS)
    ]
    for offset in range(-3, 4):
        values = [c[offset] for c in curves if offset in c]
        np.testing.assert_allclose(values, values[0], atol=1e-9)


def test_rope_scores_depend_on_offset_only():
    view = explore.positional_view(16, 4)
    scores = view.rope_scores
    for diagonal in range(-5, 6):
        values = np.diagonal(scores, diagonal)
        np.testing.assert_allclose(values, values[0], atol=1e-9)
    np.testing.assert_allclose(view.rope_row, scores[4])


def test_positional_view_table_and_row():
    view = explore.positional_view(16, 5)
    np.testing.assert_allclose(view.pe, ac.sinusoidal_positional_encoding(32, 16))
    np.testing.assert_allclose(view.row, view.pe[5])
    np.testing.assert_array_equal(view.offsets, np.arange(32) - 5)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"d_model": 15}, "d_model must be even"),
        ({"position": 32}, "position must be below n_positions=32"),
        ({"position": -1}, "position must be an integer >= 0"),
    ],
)
def test_positional_view_refuses_bad_input(kwargs, message):
    with pytest.raises(ValueError, match=message):
        explore.positional_view(**kwargs)


def test_explore_imports_no_front_end():
    import subprocess
    import sys

    code = (
        "import sys, attncourse.explore; "
        "bad = [m for m in ('matplotlib', 'ipywidgets', 'torch') if m in sys.modules]; "
        "sys.exit(', '.join(bad) or 0)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, f"attncourse.explore imported {result.stderr or result.stdout}"
