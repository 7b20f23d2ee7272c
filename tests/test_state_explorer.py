"""Chapter 13's fixed-state explorer: its view (pure numpy), its frames, and what it reads."""

import numpy as np
import pytest

from attncourse import explore


def fake_recall(methods=("linear", "delta"), sizes=(4, 8), seed=0):
    """Saved results shaped like the script's: per method and E, accuracy (seeds, pairs)."""
    rng = np.random.default_rng(seed)
    pairs = [1, 2, 4, 8, 16]
    return {
        "pairs": pairs,
        "recall": {m: {str(E): rng.random((3, len(pairs))).tolist() for E in sizes} for m in methods},
    }


def fake_topk(seed=1):
    """Saved top-k runs shaped like recall_hybrid.py's: accuracy (seeds, ks) per ranking."""
    rng = np.random.default_rng(seed)
    ks = [1, 2, 4, 8, 16]
    return {
        "n_pairs": 16,
        "L": 48,
        "ks": ks,
        "ranks": [1, 2, 4],
        "dense": [1.0, 1.0, 1.0],
        "exact": rng.random((3, len(ks))).tolist(),
        "indexer": {str(r): rng.random((3, len(ks))).tolist() for r in (1, 2, 4)},
    }


def test_accuracy_is_the_saved_mean_over_seeds_at_the_chosen_pairs_with_its_band():
    recall = fake_recall()
    runs = np.asarray(recall["recall"]["linear"]["8"])
    v = explore.state_view(recall, fake_topk(), "linear", 8, 4, 1)
    assert v.accuracy == pytest.approx(runs[:, 2].mean())  # pairs [1, 2, 4, ...]: 4 is the third
    np.testing.assert_allclose(v.saved_min, runs.min(0))
    np.testing.assert_allclose(v.saved_max, runs.max(0))


def test_a_size_not_trained_has_no_accuracy_but_still_a_state():
    v = explore.state_view(fake_recall(), fake_topk(), "delta", 16, 16, 4)
    assert v.accuracy is None and v.saved_mean is None and v.state.shape == (16, 16)


def test_linear_state_uses_the_chapters_feature_map_and_delta_stores_one_pair_exactly():
    """One pair: every method stores it exactly (a unit key; linear attention's read is normalised);
    16 pairs at E = 16 (the setting the chapter suggests): linear attention misses more."""

    recall, topk = fake_recall(), fake_topk()
    for method in explore.STATE_METHODS:
        assert explore.state_view(recall, topk, method, 8, 1).recall_error == pytest.approx(0, abs=1e-12)
    linear = explore.state_view(recall, topk, "linear", 16, 16)
    delta = explore.state_view(recall, topk, "delta", 16, 16)
    assert delta.recall_error < linear.recall_error
    assert np.abs(linear.state).max() > np.abs(delta.state).max()


def test_linear_state_is_phi_k_transposed_times_v_with_phi_elu_plus_one_as_in_the_chapter():
    """The explorer's linear attention is the chapter's: S = phi(K)^T V, phi = elu + 1, and each key
    reads phi(k) S / (phi(k) . z), which is ac.linear_attention with the elu feature map."""
    import attncourse as ac
    from attncourse.explore.state import _stored_state

    for E, n in ((4, 4), (8, 16), (16, 1)):
        rng = np.random.default_rng(1300 + 31 * E + n)  # the view's keys and values
        keys = rng.normal(size=(n, E))
        keys /= np.linalg.norm(keys, axis=-1, keepdims=True)
        values = rng.normal(size=(n, E))
        state, error, overlap = _stored_state("linear", E, n)
        np.testing.assert_allclose(state, ac.elu_feature_map(keys).T @ values, atol=1e-12)
        assert not np.allclose(state, keys.T @ values)  # not phi = identity
        read = ac.linear_attention(keys, keys, values, feature_map=ac.elu_feature_map, causal=False)
        expected = np.mean(np.linalg.norm(read - values, axis=-1) / np.linalg.norm(values, axis=-1))
        assert error == pytest.approx(expected, abs=1e-12)


def test_the_topk_panel_is_the_saved_runs_mean_over_seeds_at_the_chosen_top_k():
    """Not a random score matrix: every ranking's curve is the saved accuracy, averaged over seeds."""
    topk = fake_topk()
    v = explore.state_view(fake_recall(), topk, top_k=8)
    assert v.topk_ks == (1, 2, 4, 8, 16) and list(v.topk_curves) == ["exact", "rank-1", "rank-2", "rank-4"]
    np.testing.assert_allclose(v.topk_curves["exact"], np.mean(topk["exact"], axis=0))
    for r in (1, 2, 4):
        runs = np.asarray(topk["indexer"][str(r)])
        np.testing.assert_allclose(v.topk_curves[f"rank-{r}"], runs.mean(0))
        assert v.topk_accuracy[f"rank-{r}"] == pytest.approx(runs[:, 3].mean())  # ks [1, 2, 4, 8, ...]
    assert (v.topk_pairs, v.topk_length) == (16, 48)
    other = explore.state_view(fake_recall(), fake_topk(seed=2), top_k=8)  # other runs, other numbers
    assert other.topk_accuracy["exact"] != v.topk_accuracy["exact"]
    assert set(explore.STATE_TOP_K) <= set(topk["ks"])  # every button is a saved top_k


def test_no_gated_setting_with_a_constant_gate():
    """The chapter shows a constant decay only fades a beta = 1 delta state's newest pairs: no such button."""
    assert explore.STATE_METHODS == ("linear", "delta")
    assert not hasattr(explore.state, "GATE")


@pytest.mark.parametrize(
    "kwargs, pattern",
    [
        (dict(method="softmax"), r"state_view: method must be one of"),
        (dict(method="gated"), r"state_view: method must be one of"),
        (dict(top_k=3), r"state_view: top_k must be one of the saved runs' \[1, 2, 4, 8, 16\]; got 3"),
        (dict(state_size=0), r"state_size must be a positive integer"),
        (dict(pairs=1.5), r"pairs must be a positive integer"),
        (dict(top_k=-1), r"top_k must be a positive integer"),
    ],
)
def test_view_errors(kwargs, pattern):
    with pytest.raises(ValueError, match=pattern):
        explore.state_view(fake_recall(), fake_topk(), **kwargs)


def test_a_malformed_topk_run_names_the_ranking_and_the_shape():
    topk = fake_topk()
    topk["indexer"]["2"] = [[0.5, 0.5]]
    with pytest.raises(ValueError, match=r"topk: the 'rank-2' runs must be \(seeds, 5\).*got shape \(1, 2\)"):
        explore.state_view(fake_recall(), topk)


def test_the_caption_says_the_heat_map_is_random_and_the_topk_panel_is_saved():
    pytest.importorskip("matplotlib")
    widgets = pytest.importorskip("attncourse.widgets")
    topk = fake_topk()
    frame = widgets.render_state(fake_recall(), topk, "linear", 8, 4, 8)
    assert "not a trained model's state" in frame.caption and "4 random unit keys" in frame.caption
    assert (
        "the keys through the chapter's feature map, elu + 1" in frame.caption
        and "normaliser" in frame.caption
    )
    exact = np.mean(topk["exact"], axis=0)[3]
    assert (
        "the saved top-k runs" in frame.caption
        and f"at top_k = 8, ranked by exact {exact:.2f}" in frame.caption
    )
    assert "score matrix" not in frame.caption and "in red" not in frame.alt


@pytest.mark.slow  # a reduced training run / every frame: the full tier runs it
def test_frames_switch_with_every_control():
    widgets = pytest.importorskip("attncourse.widgets")
    ipywidgets = pytest.importorskip("ipywidgets")
    if not hasattr(ipywidgets, "Stack"):
        pytest.skip("frames mode needs ipywidgets 8")
    recall, topk = fake_recall(sizes=(4, 8)), fake_topk()
    ex = widgets.state_explorer(recall, topk, mode="frames")
    assert len(ex.frames) == 2 * 3 * 3 * 4  # methods x sizes x pairs x top-k
    default = ex.frames[("delta", 8, 4, 4)]
    assert default == widgets.render_state(recall, topk, "delta", 8, 4, 4)
    for key in (("linear", 8, 4, 4), ("delta", 4, 4, 4), ("delta", 8, 16, 4), ("delta", 8, 4, 16)):
        other = ex.frames[key]
        assert other.png != default.png and other.caption != default.caption
    assert "no saved runs" in ex.frames[("delta", 16, 4, 4)].caption
    assert ex.frame_bytes() < 800_000


@pytest.mark.slow  # a reduced training run / every frame: the full tier runs it
def test_live_mode_redraws_each_control_as_the_frames_do():
    widgets = pytest.importorskip("attncourse.widgets")
    recall, topk = fake_recall(sizes=(4, 8, 16)), fake_topk()
    ex = widgets.state_explorer(recall, topk, mode="live")
    values = {"method": "delta", "state_size": 8, "pairs": 4, "top_k": 4}
    assert ex.values() == values and ex.shown() == widgets.render_state(recall, topk, **values)
    for name, value in (("method", "linear"), ("state_size", 16), ("pairs", 1), ("top_k", 8)):
        before = ex.shown()
        ex.controls[name].value = value
        values[name] = value
        assert ex.shown().png != before.png, name
        assert ex.shown() == widgets.render_state(recall, topk, **values)


def test_the_not_trained_note_sits_inside_the_recall_plot():
    """Runs saved at E = 8 and 16 only: at E = 4 the empty plot says so inside its axes."""
    pytest.importorskip("matplotlib")
    from attncourse.widgets.state import _renderer

    renderer = _renderer(fake_recall(sizes=(8, 16)), fake_topk())
    frame = renderer(method="delta", state_size=4, pairs=4, top_k=4)
    painter = renderer.painter
    painter.fig.canvas.draw()
    note = painter.missing.get_window_extent(painter.fig.canvas.get_renderer())
    plot = painter.ax_curve.get_window_extent(painter.fig.canvas.get_renderer())
    assert painter.missing.get_text() == "not trained at E = 4"
    assert plot.x0 <= note.x0 and note.x1 <= plot.x1 and plot.y0 <= note.y0 and note.y1 <= plot.y1
    assert "no saved runs of DeltaNet at E = 4" in frame.caption and "nan" not in frame.caption
    assert "circled" not in frame.alt


def test_random_keys_elu_features_are_nearly_parallel_and_the_caption_says_so():
    """Why the linear frames miss so much even below E pairs: elu(k) + 1 of a random unit key is
    about 1 + k, so two keys' features point nearly the same way (unit keys themselves do not)."""
    recall, topk = fake_recall(), fake_topk()
    linear = explore.state_view(recall, topk, "linear", 8, 4)
    delta = explore.state_view(recall, topk, "delta", 8, 4)
    assert linear.key_overlap > 0.8 and abs(delta.key_overlap) < 0.5
    assert explore.state_view(recall, topk, "linear", 8, 1).key_overlap is None
    pytest.importorskip("matplotlib")
    widgets = pytest.importorskip("attncourse.widgets")
    frame = widgets.render_state(recall, topk, "linear", 8, 4, 8)
    assert f"two written features have a cosine of {linear.key_overlap:.2f} on average" in frame.caption
    frame = widgets.render_state(recall, topk, "delta", 8, 4, 8)
    assert f"two written keys have a cosine of {delta.key_overlap:.2f} on average" in frame.caption


def test_chapter_13_quotes_the_explorers_linear_frames_over_its_settings():
    """Cell ch13-explore: the features' mean cosine and the linear read's miss, over every setting of
    the explorer with 2 to E pairs, are the ranges the prose quotes."""
    import json
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    recall = json.loads((root / "attncourse" / "data" / "recall_state_size.json").read_text())
    topk = json.loads((root / "attncourse" / "data" / "recall_hybrid.json").read_text())["topk"]
    views = [
        explore.state_view(recall, topk, "linear", E, n)
        for E in explore.state.STATE_SIZES
        for n in explore.state.STATE_PAIRS
        if 2 <= n <= E
    ]
    cosines = [v.key_overlap for v in views]
    misses = [100 * v.recall_error for v in views]
    nb = json.loads((root / "book" / "13_beyond_softmax.ipynb").read_text())
    (cell,) = [c for c in nb["cells"] if c.get("id") == "ch13-explore"]
    prose = " ".join("".join(cell["source"]).split())
    assert f"mean cosine: {min(cosines):.2f} to {max(cosines):.2f} over the explorer's settings" in prose
    assert f"miss by {min(misses):.0f}% to {max(misses):.0f}% at those settings" in prose
