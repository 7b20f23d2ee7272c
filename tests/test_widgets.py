"""The slider explorers, without a browser: build each, move each control, check the picture.

In frames mode the Stacks follow their controls through ``jslink``, which runs in the browser;
here ``follow_links`` does what the browser would (copy each link's source trait to its
target).  tests/test_widgets_browser.py checks the same in headless Chromium.
"""

from __future__ import annotations

import pytest

pytest.importorskip("ipywidgets")
pytest.importorskip("matplotlib")

import ipywidgets  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402

from attncourse import explore  # noqa: E402
from attncourse import widgets as aw  # noqa: E402

MAX_FRAME_BYTES = 1_500_000

# name: (explorer factory, fresh renderer taking the controls as keywords, {control: a non-default value})
EXPLORERS = {
    "softmax": (
        aw.softmax_explorer,
        lambda temperature: aw.render_softmax(temperature),
        {"temperature": 0.25},
    ),
    "scaling": (aw.scaling_explorer, lambda d_k: aw.render_scaling(d_k), {"d_k": 1024}),
    "heads": (aw.heads_explorer, lambda n_heads: aw.render_heads(n_heads), {"n_heads": 12}),
    "mask": (
        aw.mask_explorer,
        lambda causal, pad_length: aw.render_mask(pad_length, causal),
        {"causal": True, "pad_length": 6},
    ),
    "positional": (
        aw.positional_explorer,
        lambda d_model, position: aw.render_positional(d_model, position),
        {"d_model": 64, "position": 20},
    ),
}
DEFAULTS = {
    "softmax": {"temperature": explore.DEFAULT_TEMPERATURE},
    "scaling": {"d_k": explore.DEFAULT_D_K},
    "heads": {"n_heads": explore.DEFAULT_N_HEADS},
    "mask": {"causal": explore.DEFAULT_CAUSAL, "pad_length": explore.DEFAULT_PAD_LENGTH},
    "positional": {"d_model": explore.DEFAULT_D_MODEL, "position": explore.DEFAULT_POSITION},
}
FRAME_COUNTS = {"softmax": 9, "scaling": 11, "heads": 6, "mask": 14, "positional": 24}


def follow_links(explorer: aw.Explorer) -> None:
    """Do what the browser does with each jslink: copy the control's trait to the Stack."""
    for link in explorer.links:
        (source, source_trait), (target, target_trait) = link.source, link.target
        setattr(target, target_trait, getattr(source, source_trait))


def set_control(explorer: aw.Explorer, name: str, value) -> None:
    explorer.controls[name].value = value
    follow_links(explorer)


# The quick tier draws the first explorer only; -m slow (and scripts/test.sh) draws them all.
EXPLORER_PARAMS = [pytest.param(name, marks=[pytest.mark.slow] if i else []) for i, name in enumerate(EXPLORERS)]


@pytest.fixture(scope="module", params=EXPLORER_PARAMS)
def frames_explorer(request):
    if not hasattr(ipywidgets, "Stack"):
        pytest.skip(f"frames mode needs ipywidgets 8 (this is {ipywidgets.__version__})")
    factory = EXPLORERS[request.param][0]
    return request.param, factory(mode="frames")


@pytest.fixture(params=EXPLORER_PARAMS)
def live_explorer(request):
    factory = EXPLORERS[request.param][0]
    return request.param, factory(mode="live")


# -- frames mode (the HTML book) -------------------------------------------------------------


def test_frames_initial_view_is_the_default(frames_explorer):
    name, explorer = frames_explorer
    render = EXPLORERS[name][1]
    assert explorer.mode == "frames"
    assert explorer.values() == DEFAULTS[name]
    follow_links(explorer)  # a no-op: the Stacks already show the default frame
    shown = explorer.shown()
    assert shown == explorer.frames[tuple(DEFAULTS[name].values())]
    assert shown == render(**DEFAULTS[name])  # the same bytes as a fresh drawing of the pure function


def test_frames_follow_each_control(frames_explorer):
    name, explorer = frames_explorer
    render, changes = EXPLORERS[name][1], EXPLORERS[name][2]
    values = dict(DEFAULTS[name])
    try:
        for control, value in changes.items():
            before = explorer.shown()
            set_control(explorer, control, value)
            values[control] = value
            after = explorer.shown()
            assert after.png != before.png, f"moving {control} did not change the picture"
            assert after.caption != before.caption
            assert after == explorer.frames[tuple(values.values())]
            assert after == render(**values)
    finally:
        for control, value in DEFAULTS[name].items():
            set_control(explorer, control, value)


def test_frames_cover_every_value_and_all_differ(frames_explorer):
    name, explorer = frames_explorer
    assert len(explorer.frames) == FRAME_COUNTS[name]
    pngs = [frame.png for frame in explorer.frames.values()]
    assert len(set(pngs)) == len(pngs), "two settings show the same picture"
    assert all(png.startswith(b"\x89PNG") for png in pngs)
    assert explorer.frame_bytes() < MAX_FRAME_BYTES


def test_frames_are_linked_in_the_browser(frames_explorer):
    name, explorer = frames_explorer
    specs = explorer.specs
    # One Stack per value of the outer controls: 1 for one control, 1 + n_outer for two.
    expected = 1 if len(specs) == 1 else 1 + len(specs[0].values)
    assert len(explorer.links) == expected
    for link in explorer.links:
        assert isinstance(link, ipywidgets.widgets.widget_link.Link)  # a jslink, not a Python link
        (source, trait), (target, target_trait) = link.source, link.target
        assert isinstance(target, ipywidgets.Stack) and target_trait == "selected_index"
        spec = next(s for s in specs if explorer.controls[s.name] is source)
        assert trait == spec.linked_trait
        assert getattr(source, trait) == target.selected_index  # the saved state starts in step


def test_frames_state_embeds_stacks_links_and_images(frames_explorer):
    from ipywidgets.embed import dependency_state, embed_data

    name, explorer = frames_explorer
    data = embed_data(views=[explorer], state=dependency_state([explorer]))
    models = [m["model_name"] for m in data["manager_state"]["state"].values()]
    assert models.count("LinkModel") == len(explorer.links)
    assert models.count("StackModel") == len(explorer.links)
    assert models.count("ImageModel") == len(explorer.frames)
    images = [m for m in data["manager_state"]["state"].values() if m["model_name"] == "ImageModel"]
    assert all(m.get("buffers") for m in images), "an image's PNG is missing from the saved state"
    # ipywidgets 8's ImageView cannot render an Image with a tooltip (it has no description).
    assert not any(m["state"].get("tooltip") for m in images)


# -- live mode (ipywidgets 7, e.g. Colab) ----------------------------------------------------


def test_live_redraws_each_control(live_explorer):
    name, explorer = live_explorer
    render, changes = EXPLORERS[name][1], EXPLORERS[name][2]
    assert explorer.mode == "live" and explorer.stack is None and not explorer.links
    assert explorer.shown() == render(**DEFAULTS[name])
    values = dict(DEFAULTS[name])
    for control, value in changes.items():
        before = explorer.shown()
        n_redraws = len(explorer.redraw_ms)
        explorer.controls[control].value = value
        values[control] = value
        after = explorer.shown()
        assert after.png != before.png, f"moving {control} did not change the picture"
        assert after == render(**values)
        assert len(explorer.redraw_ms) == n_redraws + 1 and explorer.redraw_ms[-1] > 0


def test_live_frames_do_not_depend_on_the_path():
    explorer = aw.positional_explorer(mode="live")
    for d_model in explore.D_MODEL_VALUES:
        for position in explore.POSITIONS[::3]:
            explorer.controls["d_model"].value = d_model
            explorer.controls["position"].value = position
    explorer.controls["d_model"].value = 16
    explorer.controls["position"].value = 12
    assert explorer.shown() == aw.render_positional(16, 12)


# -- modes, and what the explorers leave behind ----------------------------------------------


def test_auto_mode_follows_the_ipywidgets_version(monkeypatch):
    assert aw.resolve_mode("auto") == ("frames" if aw.ipywidgets_major() >= 8 else "live")
    monkeypatch.setattr(aw.widgets, "__version__", "7.7.1")
    assert aw.resolve_mode("auto") == "live"
    assert aw.resolve_mode("live") == "live"
    monkeypatch.setattr(aw.widgets, "__version__", "8.1.5")
    assert aw.resolve_mode("auto") == "frames"


def test_frames_mode_needs_stack(monkeypatch):
    monkeypatch.delattr(aw.widgets, "Stack", raising=False)
    with pytest.raises(ValueError, match="needs ipywidgets 8"):
        aw.resolve_mode("frames")


def test_unknown_mode():
    with pytest.raises(ValueError, match="mode must be one of"):
        aw.softmax_explorer(mode="static")


def test_no_pyplot_figures_and_a_short_repr():
    plt.close("all")
    explorer = aw.mask_explorer(mode="live")
    explorer.controls["causal"].value = True
    assert plt.get_fignums() == []  # nothing for the inline backend to show a second time
    assert repr(explorer) == "<mask explorer: causal, pad_length>"
    assert "attncourse-explorer" in explorer._dom_classes
    assert "attncourse-control-pad_length" in explorer.controls["pad_length"]._dom_classes


def test_custom_values_and_bad_defaults():
    explorer = aw.softmax_explorer(
        temperatures=(0.5, 2.0), temperature=2.0, logits=(1.0, 0.0), labels=("a", "b"), mode="live"
    )
    assert explorer.shown() == aw.render_softmax(2.0, (1.0, 0.0), ("a", "b"))
    explorer.controls["temperature"].value = 0.5
    assert explorer.shown() == aw.render_softmax(0.5, (1.0, 0.0), ("a", "b"))
    with pytest.raises(ValueError, match="default 3 is not one of"):
        aw.scaling_explorer(d_k=3)


# -- scripts/insert_explorers.py -------------------------------------------------------------


@pytest.fixture(scope="module")
def insert_script():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "scripts" / "insert_explorers.py"
    spec = importlib.util.spec_from_file_location("insert_explorers", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _chapter():
    import nbformat

    nb = nbformat.v4.new_notebook()
    slot = nbformat.v4.new_markdown_cell("## Explore it\n\nMove the slider.")
    slot.metadata["tags"] = ["explorer-slot"]
    nb.cells = [
        nbformat.v4.new_markdown_cell("# Masks"),
        nbformat.v4.new_code_cell("x = 1"),
        slot,
        nbformat.v4.new_markdown_cell("## Summary"),
    ]
    return nb


def test_insert_explorers_once(insert_script, tmp_path):
    import nbformat

    path = tmp_path / "06_masked_attention.ipynb"
    nbformat.write(_chapter(), path)
    assert insert_script.process(tmp_path) == [str(path)]
    nb = nbformat.read(path, as_version=4)
    cell = nb.cells[3]
    assert cell.cell_type == "code" and cell.source.endswith("mask_explorer()")
    assert cell.metadata["attncourse"] == {"explorer": "mask_explorer"}
    assert cell.metadata["mystnb"]["image"]["alt"]
    assert insert_script.process(tmp_path) == []  # idempotent
    assert insert_script.process(tmp_path, check=True) == []
    nbformat.validate(nbformat.read(path, as_version=4))
    # The inserted code runs and shows the explorer the chapter asked for.
    namespace: dict = {}
    exec(cell.source.replace("mask_explorer()", "explorer = mask_explorer(mode='live')"), namespace)
    assert namespace["explorer"].name == "mask"


def test_insert_explorers_leaves_exercise_cells_alone(insert_script, tmp_path):
    import nbformat

    path = tmp_path / "03_scaling.ipynb"
    nb = _chapter()
    exercise = nbformat.v4.new_code_cell("def f():\n    ...")
    exercise.metadata["attncourse"] = {"exercise": "ch03.scaled_scores"}
    nb.cells.append(exercise)
    nbformat.write(nb, path)
    assert insert_script.process(tmp_path) == [str(path)]
    cells = nbformat.read(path, as_version=4).cells
    assert [c.metadata.get("attncourse") for c in cells if "attncourse" in c.metadata] == [
        {"explorer": "scaling_explorer"},
        {"exercise": "ch03.scaled_scores"},
    ]


def test_insert_explorers_repairs_a_moved_cell_and_strips_state(insert_script, tmp_path):
    import nbformat

    path = tmp_path / "01_softmax.ipynb"
    nb = _chapter()
    insert_script.insert(nb, "softmax_explorer", "alt")
    moved = nb.cells.pop(3)
    moved.source = "softmax_explorer(mode='live')"
    nb.cells.insert(1, moved)
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {}}}
    nbformat.write(nb, path)
    assert insert_script.process(tmp_path, strip=True) == [str(path), str(path)]
    nb = nbformat.read(path, as_version=4)
    explorer_cells = [i for i, c in enumerate(nb.cells) if "attncourse" in c.metadata]
    slot = next(i for i, c in enumerate(nb.cells) if "explorer-slot" in c.metadata.get("tags", []))
    assert explorer_cells == [slot + 1]
    assert (
        nb.cells[slot + 1].source == "from attncourse.widgets import softmax_explorer\n\nsoftmax_explorer()"
    )
    assert "widgets" not in nb.metadata
