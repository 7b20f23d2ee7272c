"""head_grid: one labelled panel per head, on one 0..1 colour scale; clear errors on bad shapes."""

from __future__ import annotations

import numpy as np
import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from attncourse.plotting_multihead import head_grid  # noqa: E402


def _weights(H, L, S, seed=0):
    w = np.random.default_rng(seed).random((H, L, S))
    return w / w.sum(-1, keepdims=True)


@pytest.mark.parametrize("shape", [(3, 4, 5), (1, 3, 4, 5)])
def test_one_panel_per_head_with_labels(shape):
    w = _weights(3, 4, 5).reshape(shape)
    fig = head_grid(w, list("abcd"), list("vwxyz"), ncols=2)
    try:
        panels = [ax for ax in fig.axes if ax.images and ax.get_title().startswith("head")]
        assert [ax.get_title() for ax in panels] == ["head 0", "head 1", "head 2"]
        for h, ax in enumerate(panels):
            np.testing.assert_allclose(ax.images[0].get_array(), w.reshape(3, 4, 5)[h])
            assert ax.images[0].get_clim() == (0.0, 1.0)
            assert [t.get_text() for t in ax.get_xticklabels()] == list("vwxyz")
            assert [t.get_text() for t in ax.get_yticklabels()] == list("abcd")
        spare = [ax for ax in fig.axes if not ax.axison]
        assert len(spare) == 1  # 2 x 2 grid, 3 heads
    finally:
        plt.close(fig)


def test_torch_weights_are_accepted():
    torch = pytest.importorskip("torch")
    w = torch.softmax(torch.randn(1, 2, 3, 3, requires_grad=True), dim=-1)
    fig = head_grid(w)
    try:
        assert sum(1 for ax in fig.axes if ax.images) >= 2
    finally:
        plt.close(fig)


@pytest.mark.parametrize("shape", [(4, 5), (2, 2, 4, 5)])
def test_bad_shape_is_a_value_error(shape):
    with pytest.raises(ValueError, match=r"head_grid: weights must be \(H, L, S\)"):
        head_grid(np.zeros(shape))
