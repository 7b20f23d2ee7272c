"""Chapter 13's fixed-state explorer: its view (pure numpy), its frames, and what it reads."""

import numpy as np
import pytest

import attncourse as ac
from attncourse import explore


def fake_recall(methods=("linear", "delta"), sizes=(4, 8), seed=0):
    """Saved results shaped like the script's: per method and E, accuracy (seeds, pairs)."""
    rng = np.random.default_rng(seed)
    pairs = [1, 2, 4, 8, 16]
    return {
        "pairs": pairs,
        "recall": {m: {str(E): rng.random((3, len(pairs))).tolist() for E in sizes} for m in methods},
    }


def test_accuracy_is_the_saved_mean_over_seeds_at_the_chosen_pairs_with_its_band():
    recall = fake_recall()
    runs = np.asarray(recall["recall"]["linear"]["8"])
    v = explore.state_view(recall, "linear", 8, 4, 2)
    assert v.accuracy == pytest.approx(runs[:, 2].mean())  # pairs [1, 2, 4, ...]: 4 is the third
    np.testing.assert_allclose(v.saved_min, runs.min(0))
    np.testing.assert_allclose(v.saved_max, runs.max(0))


def test_a_size_not_trained_has_no_accuracy_but_still_a_state():
    v = explore.state_view(fake_recall(), "gated", 16, 16, 4)
    assert v.accuracy is None and v.saved_mean is None and v.state.shape == (16, 16)


def test_linear_state_is_a_sum_of_outer_products_and_delta_stores_orthonormal_keys_exactly():
    """One pair: every method stores it exactly (a unit key); more pairs than E: linear misses more."""
    recall = fake_recall()
    for method in explore.STATE_METHODS:
        assert explore.state_view(recall, method, 8, 1).recall_error == pytest.approx(0, abs=1e-12)
    linear = explore.state_view(recall, "linear", 4, 16)
    delta = explore.state_view(recall, "delta", 4, 16)
    assert delta.recall_error < linear.recall_error
    assert np.abs(linear.state).max() > np.abs(delta.state).max()


def test_kept_keys_are_those_of_topk_attention_and_causal():
    v = explore.state_view(fake_recall(), top_k=3)
    L = v.scores.shape[0]
    assert v.kept.sum(-1).tolist() == [min(3, i + 1) for i in range(L)]
    assert not np.triu(v.kept, 1).any() and np.isnan(v.scores[np.triu_indices(L, 1)]).all()
    allowed = np.where(np.isnan(v.scores), -np.inf, v.scores)
    for i in range(L):
        kept_scores = allowed[i][v.kept[i]]
        dropped = allowed[i][~v.kept[i] & np.isfinite(allowed[i])]
        assert dropped.size == 0 or kept_scores.min() >= dropped.max()
    q = np.eye(L, 4)  # the view calls the package's topk_attention: a change there shows here
    _, w = ac.topk_attention(q, q, np.zeros((L, 1)), 3, is_causal=True)
    assert (np.asarray(w) > 0).sum(-1).tolist() == [min(3, i + 1) for i in range(L)]


@pytest.mark.parametrize(
    "kwargs, pattern",
    [
        (dict(method="softmax"), r"state_view: method must be one of"),
        (dict(state_size=0), r"state_size must be a positive integer"),
        (dict(pairs=1.5), r"pairs must be a positive integer"),
        (dict(top_k=-1), r"top_k must be a positive integer"),
    ],
)
def test_view_errors(kwargs, pattern):
    with pytest.raises(ValueError, match=pattern):
        explore.state_view(fake_recall(), **kwargs)


@pytest.mark.slow  # a reduced training run / every frame: the full tier runs it
def test_frames_switch_with_every_control():
    widgets = pytest.importorskip("attncourse.widgets")
    ipywidgets = pytest.importorskip("ipywidgets")
    if not hasattr(ipywidgets, "Stack"):
        pytest.skip("frames mode needs ipywidgets 8")
    recall = fake_recall(sizes=(4, 8, 16))
    ex = widgets.state_explorer(recall, mode="frames")
    assert len(ex.frames) == 3 * 3 * 3 * 3  # methods x sizes x pairs x top-k
    default = ex.frames[("delta", 8, 4, 4)]
    assert default == widgets.render_state(recall, "delta", 8, 4, 4)
    for key in (("linear", 8, 4, 4), ("delta", 4, 4, 4), ("delta", 8, 16, 4), ("delta", 8, 4, 2)):
        other = ex.frames[key]
        assert other.png != default.png and other.caption != default.caption
    assert "no saved runs" in ex.frames[("gated", 4, 4, 4)].caption
    assert ex.frame_bytes() < 800_000


@pytest.mark.slow  # a reduced training run / every frame: the full tier runs it
def test_live_mode_redraws_each_control_as_the_frames_do():
    widgets = pytest.importorskip("attncourse.widgets")
    recall = fake_recall(sizes=(4, 8, 16))
    ex = widgets.state_explorer(recall, mode="live")
    values = {"method": "delta", "state_size": 8, "pairs": 4, "top_k": 4}
    assert ex.values() == values and ex.shown() == widgets.render_state(recall, **values)
    for name, value in (("method", "gated"), ("state_size", 16), ("pairs", 1), ("top_k", 8)):
        before = ex.shown()
        ex.controls[name].value = value
        values[name] = value
        assert ex.shown().png != before.png, name
        assert ex.shown() == widgets.render_state(recall, **values)


def test_the_not_trained_note_sits_inside_the_recall_plot():
    """Gated DeltaNet has saved runs at E = 8 only: at E = 4 the empty plot says so inside its axes."""
    pytest.importorskip("matplotlib")
    from attncourse.results import saved_results
    from attncourse.widgets.state import _renderer

    renderer = _renderer(saved_results("recall_state_size.json"))
    frame = renderer(method="gated", state_size=4, pairs=4, top_k=4)
    painter = renderer.painter
    painter.fig.canvas.draw()
    note = painter.missing.get_window_extent(painter.fig.canvas.get_renderer())
    plot = painter.ax_curve.get_window_extent(painter.fig.canvas.get_renderer())
    assert painter.missing.get_text() == "not trained at E = 4"
    assert plot.x0 <= note.x0 and note.x1 <= plot.x1 and plot.y0 <= note.y0 and note.y1 <= plot.y1
    assert "no saved runs of Gated DeltaNet at E = 4" in frame.caption and "nan" not in frame.caption
    assert "circled" not in frame.alt
