"""Chapter 12's captioner explorer: its view (pure numpy), its frames, and its tie to the chapter."""

import ast
import json
import re
from pathlib import Path

import numpy as np
import pytest

from attncourse import explore

ROOT = Path(__file__).resolve().parents[1]


def fake_captions(words=("one", "seven"), n_heads=4, seed=0):
    """Captions shaped like the script's: per image, one row of weights over 16 patches per step."""
    rng = np.random.default_rng(seed)
    shown = []
    for label, word in enumerate(words):
        shown.append(
            {
                "image": rng.random((8, 8)).tolist(),
                "label": label,
                "written": word,
                "cross_attention_per_head": rng.dirichlet(
                    np.ones(16), size=(n_heads, len(word) + 1)
                ).tolist(),
                "rollout_mean": rng.dirichlet(np.ones(16)).tolist(),
            }
        )
    return {"shown": shown}


def test_view_lays_each_heads_row_on_the_grid_row_major():
    captions = fake_captions()
    rows = np.asarray(captions["shown"][1]["cross_attention_per_head"])[:, 2]  # 'seven', step 2: (H, 16)
    v = explore.cross_view(captions, 1, 2, "each head")
    assert v.letter == "v" and v.maps.shape == (4, 4, 4)
    np.testing.assert_array_equal(v.maps[:, 0, 1], rows[:, 1])  # patch 1 is on row 0, column 1
    np.testing.assert_array_equal(v.maps[:, 1, 0], rows[:, 4])
    for k, (r, c) in enumerate(v.top_patches):
        assert v.maps[k, r, c] == v.maps[k].max()


def test_averaged_view_is_the_heads_mean_beside_the_rollout_and_steps_stop_at_the_end_mark():
    captions = fake_captions()
    entry = captions["shown"][0]
    v = explore.cross_view(captions, 0, 5, "averaged")  # 'one' has 3 letters: step 3 is its end mark
    assert (v.step, v.letter) == (3, "end")
    np.testing.assert_allclose(v.maps[0].ravel(), np.mean(entry["cross_attention_per_head"], axis=0)[3])
    np.testing.assert_array_equal(v.maps[1].ravel(), entry["rollout_mean"])


@pytest.mark.parametrize(
    "kwargs, pattern",
    [
        (dict(image=2), r"cross_view: image must be below 2; got 2"),
        (dict(step=-1), r"step"),
        (dict(heads="head 1"), r"heads must be one of"),
    ],
)
def test_view_errors(kwargs, pattern):
    with pytest.raises(ValueError, match=pattern):
        explore.cross_view(fake_captions(), **kwargs)


@pytest.mark.slow
def test_frames_switch_with_every_control():
    widgets = pytest.importorskip("attncourse.widgets")
    ipywidgets = pytest.importorskip("ipywidgets")
    if not hasattr(ipywidgets, "Stack"):
        pytest.skip("frames mode needs ipywidgets 8")
    captions = fake_captions()
    ex = widgets.cross_explorer(captions, mode="frames")
    assert len(ex.frames) == 2 * 6 * 2  # images x steps x head choices
    default = ex.frames[(0, 0, "averaged")]
    assert default == widgets.render_cross(captions, 0, 0, "averaged")
    for key in ((1, 0, "averaged"), (0, 1, "averaged"), (0, 0, "each head")):
        other = ex.frames[key]
        assert other.png != default.png and other.caption != default.caption
    assert ex.frame_bytes() < 1_250_000


def test_the_default_frame_is_the_chapters_first_digit_and_its_printed_top_patches():
    """The chapter prints, for its first shown digit, each letter's top patch (heads averaged)."""
    nb = json.loads((ROOT / "book" / "12_cross_attention.ipynb").read_text())
    printed = next(
        "".join(o.get("text", ""))
        for c in nb["cells"]
        if c["cell_type"] == "code" and "top patch" in "".join(c["source"])
        for o in c["outputs"]
        if o.get("name") == "stdout"
    )
    first = re.search(r"'(\w+)': each letter's largest patch weight .*?top patch (\[.*?\])", printed)
    word, tops = first.group(1), ast.literal_eval(first.group(2))  # (row, column) tuples
    captions = json.loads((ROOT / "attncourse" / "data" / "digit_captioner.json").read_text())
    for step, top in enumerate(tops):
        v = explore.cross_view(captions, 0, step, "averaged")
        assert v.written == word and v.top_patches[0] == tuple(top)
