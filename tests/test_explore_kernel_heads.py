"""The kernel explorer's leave-one-out switch (chapter 0) and the heads explorer's scale (chapter 5)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from attncourse import explore
from attncourse.explore import kernel


def test_leave_one_out_off_is_the_explorer_as_before():
    plain, off = kernel.kernel_view(0.3, 2.5), kernel.kernel_view(0.3, 2.5, leave_one_out=False)
    assert off.query == 2.5 and not off.leave_one_out
    np.testing.assert_array_equal(off.weights, plain.weights)
    assert len(off.x_grid) == 101  # the curve on the grid, not at the keys


@pytest.mark.parametrize("width", kernel.WIDTHS)
def test_leave_one_out_masks_the_query_s_own_key(width):
    view = kernel.kernel_view(width, 2.5, leave_one_out=True)
    own = int(np.argmin(np.abs(view.x_key - 2.5)))
    assert view.query == view.x_key[own]  # the query moves to the nearest training point
    assert view.weights[own] == 0
    assert view.weights.sum() == pytest.approx(1.0)
    # Its prediction is the others' values pooled with its weights.
    assert view.prediction == pytest.approx(float(view.weights @ view.y_value))
    np.testing.assert_array_equal(view.x_grid, view.x_key)


def test_training_error_falls_as_the_kernel_narrows_and_leave_one_out_error_does_not():
    narrow, best = kernel.kernel_view(0.05), kernel.kernel_view(0.3)
    assert narrow.train_mse < best.train_mse  # each point predicts itself more and more
    assert narrow.loo_mse > best.loo_mse  # the honest error prefers the wider kernel
    for view in (narrow, best):
        assert view.train_mse < view.loo_mse
        # by hand: each training point predicted from all the others
        x, y, w = view.x_key, view.y_value, view.width
        scores = -((x[:, None] - x[None, :]) ** 2) / (2 * w**2)
        np.fill_diagonal(scores, -np.inf)
        p = np.exp(scores - scores.max(1, keepdims=True))
        p /= p.sum(1, keepdims=True)
        assert view.loo_mse == pytest.approx(float(np.mean((p @ y - y) ** 2)))


def test_leave_one_out_must_be_a_bool():
    with pytest.raises(ValueError, match="leave_one_out must be True or False"):
        kernel.kernel_view(leave_one_out="yes")


@pytest.mark.parametrize("n_heads", [2, 4, 8])  # the divisors of chapter 5's d_model = 8, past 1
def test_scaling_by_d_model_flattens_every_head_and_more_so_with_more_heads(n_heads):
    right, bug = explore.heads_view(n_heads), explore.heads_view(n_heads, scale_by="d_model")
    assert right.scale == pytest.approx(1 / math.sqrt(right.d_head))
    assert bug.scale == pytest.approx(1 / math.sqrt(bug.d_model))
    assert bug.mean_entropy > right.mean_entropy
    # The bug is the right scores at a temperature sqrt(n_heads) too high.
    scores = np.log(right.weights) / math.sqrt(n_heads)
    expected = np.exp(scores - scores.max(-1, keepdims=True))
    np.testing.assert_allclose(bug.weights, expected / expected.sum(-1, keepdims=True), atol=1e-10)


def test_with_one_head_the_two_scales_agree_and_the_bug_grows_with_the_heads():
    np.testing.assert_allclose(
        explore.heads_view(1, scale_by="d_model").weights, explore.heads_view(1).weights
    )
    gaps = [
        explore.heads_view(h, scale_by="d_model").mean_entropy - explore.heads_view(h).mean_entropy
        for h in (2, 8)
    ]
    assert gaps[1] > gaps[0] > 0


def test_scale_by_must_be_named():
    with pytest.raises(ValueError, match="scale_by must be one of"):
        explore.heads_view(4, scale_by="sqrt")
