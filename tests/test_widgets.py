"""The slider explorers, without a browser: build each, move each control, check the picture.

In frames mode the Stacks follow their controls through ``jslink``, which runs in the browser;
here ``follow_links`` does what the browser would (copy each link's source trait to its
target).  tests/test_widgets_browser.py checks the same in headless Chromium.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("ipywidgets")
pytest.importorskip("matplotlib")

import ipywidgets  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402

from attncourse import explore  # noqa: E402
from attncourse import widgets as aw  # noqa: E402

MAX_FRAME_BYTES = 1_250_000  # PNG bytes per explorer; the page holds them base64-encoded


def _maps(n_layers=2, H=2, L=6, seed=0):
    """Causal attention maps, one (1, H, L, L) per layer, as a model returns them."""
    rng = np.random.default_rng(seed)
    scores = np.where(np.tril(np.ones((L, L), dtype=bool)), rng.normal(size=(n_layers, 1, H, L, L)), -np.inf)
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    return list(weights / weights.sum(-1, keepdims=True))


MAPS, MAP_TOKENS = _maps(), [7, 3, 9, 7, 3, 9]

# name: (explorer factory, fresh renderer taking the controls as keywords, {control: a non-default value})
EXPLORERS = {
    "softmax": (
        aw.softmax_explorer,
        lambda temperature, word, score: aw.render_softmax(temperature, word=word, score=score),
        {"temperature": 0.25, "word": "roof", "score": 5.0},  # roof's score: its own (-0.5), then 5
    ),
    "scaling": (
        aw.scaling_explorer,
        lambda variant, d_k: aw.render_scaling(d_k, variant=variant),
        {"variant": "unscaled", "d_k": 1024},
    ),
    "heads": (
        aw.heads_explorer,
        lambda n_heads, head, scale_by: aw.render_heads(n_heads, head=head, scale_by=scale_by),
        {"n_heads": 8, "head": 5, "scale_by": "d_model"},
    ),
    "mask": (
        aw.mask_explorer,
        lambda mask, pad_side, fill: aw.render_mask(
            explore.DEFAULT_PAD_LENGTH, mask, pad_side=pad_side, fill=fill
        ),
        {"mask": "causal, L = S/2, bottom-right", "pad_side": "left", "fill": "-1e9 fp16"},
    ),
    "positional": (
        aw.positional_explorer,
        lambda encoding, d_model, position: aw.render_positional(d_model, position, encoding=encoding),
        {"encoding": "RoPE", "d_model": 64, "position": 16},
    ),
    "kernel": (
        aw.kernel_explorer,
        lambda width, query, leave_one_out: aw.render_kernel(width, query, leave_one_out=leave_one_out),
        {"width": 2.0, "query": 4.5, "leave_one_out": True},
    ),
    "dot_product": (
        aw.dot_product_explorer,
        lambda angle, length: aw.render_dot_product(angle, length),
        {"angle": 180, "length": 4.0},
    ),
    "self_attention": (
        aw.self_attention_explorer,
        lambda order, token: aw.render_self_attention(token, order),
        {"order": "shuffled", "token": 4},
    ),
    "transformer": (
        lambda mode: aw.transformer_explorer(MAPS, MAP_TOKENS, mode=mode),
        lambda layer, head: aw.render_transformer(MAPS, MAP_TOKENS, layer, head),
        {"layer": 1, "head": 1},
    ),
    "efficient": (
        aw.efficient_explorer,
        lambda block_size, step: aw.render_efficient(block_size, step),
        {"block_size": 1, "step": 4},
    ),
}
DEFAULTS = {
    "softmax": {"temperature": explore.DEFAULT_TEMPERATURE, "word": "mat", "score": explore.LOGITS[0]},
    "scaling": {"variant": "scaled", "d_k": explore.DEFAULT_D_K},
    "heads": {"n_heads": explore.DEFAULT_N_HEADS, "head": "all", "scale_by": "d_head"},
    "mask": {"mask": "padding", "pad_side": "right", "fill": "-inf"},
    "positional": {
        "encoding": "sinusoidal",
        "d_model": explore.DEFAULT_D_MODEL,
        "position": explore.DEFAULT_POSITION,
    },
    "kernel": {"width": 0.3, "query": 2.5, "leave_one_out": False},
    "dot_product": {"angle": 45, "length": 1.0},
    "self_attention": {"order": "original", "token": 1},
    "transformer": {"layer": 0, "head": 0},
    "efficient": {"block_size": 2, "step": 1},
}
# 5 temperatures x 6 words x 4 scores (its own, -2, 2, 5); 2 x 11; 1 + 3 + 5 + 9 (all heads, or each); 4 x 2 x 4;
# (2 x 3 x 4) + (1 x 3 x 4) past the training length; 8 x 5; 8 x 4; 2 x 6; 2 x 2; 5 + 3 + 1 steps.
FRAME_COUNTS = {
    "softmax": 120,
    "scaling": 22,
    "heads": 36,  # x 2 scales, sqrt(d_head) and sqrt(d_model); d_model = 8, chapter 5's
    "mask": 32,
    "positional": 36,
    "kernel": 80,  # x 2: leave-one-out off and on
    "dot_product": 32,
    "self_attention": 12,
    "transformer": 4,
    "efficient": 9,  # the chapter's row of 5 in blocks of 1, 2 and 5
}


# Live mode differs where the book's frames cannot hold every value: the softmax explorer's scores
# are one text box there (every score typed at once) instead of a word and its score, and the mask
# explorer has a padding-length slider.
LIVE = {
    "mask": (  # and the mask explorer has a padding-length slider (one length only in the book)
        lambda mask, pad_side, pad_length, fill: aw.render_mask(
            pad_length, mask, pad_side=pad_side, fill=fill
        ),
        {"mask": "causal, L = S/2, bottom-right", "pad_side": "left", "pad_length": 4, "fill": "-1e9 fp16"},
        {"mask": "padding", "pad_side": "right", "pad_length": explore.DEFAULT_PAD_LENGTH, "fill": "-inf"},
    ),
    "softmax": (
        lambda temperature, logits: aw.render_softmax(temperature, logits),
        {"temperature": 0.25, "logits": (5.0, 2.0, 1.0, 0.5, -1.0, 0.0)},
        {"temperature": explore.DEFAULT_TEMPERATURE, "logits": explore.LOGITS},
    ),
}

# The quick tier (-m "not slow") runs the mechanics on one small explorer; the full tier on all ten.
QUICK = "self_attention"
PARAMS = [pytest.param(name, marks=() if name == QUICK else pytest.mark.slow) for name in EXPLORERS]


def follow_links(explorer: aw.Explorer) -> None:
    """Do what the browser does with each jslink: copy the control's trait to the Stack."""
    for link in explorer.links:
        (source, source_trait), (target, target_trait) = link.source, link.target
        setattr(target, target_trait, getattr(source, source_trait))


def set_control(explorer: aw.Explorer, name: str, value) -> None:
    follow_links(explorer)
    explorer.control_widget(name).value = value
    follow_links(explorer)


def set_live(explorer: aw.Explorer, name: str, value) -> None:
    spec = next(s for s in explorer.specs if s.name == name)
    explorer.controls[name].value = ", ".join(f"{x:g}" for x in value) if spec.kind == "text" else value


@pytest.fixture(scope="module", params=PARAMS)
def frames_explorer(request):
    if not hasattr(ipywidgets, "Stack"):
        pytest.skip(f"frames mode needs ipywidgets 8 (this is {ipywidgets.__version__})")
    factory = EXPLORERS[request.param][0]
    return request.param, factory(mode="frames")


@pytest.fixture(params=PARAMS)
def live_explorer(request):
    factory = EXPLORERS[request.param][0]
    return request.param, factory(mode="live")


# -- frames mode (the HTML book) -------------------------------------------------------------


def test_frames_initial_view_is_the_default(frames_explorer):
    name, explorer = frames_explorer
    render = EXPLORERS[name][1]
    assert explorer.mode == "frames"
    assert explorer.values() == DEFAULTS[name] == explorer.default_values()
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
            names = [c.name for c in explorer.control_specs]
            for later in names[names.index(control) + 1 :]:  # a dependent control offers its own default
                if isinstance(explorer._control(later), aw.DependentControl):
                    values[later] = explorer.values()[later]
            after = explorer.shown()
            assert explorer.values() == values
            assert after.png != before.png, f"moving {control} did not change the picture"
            assert after.caption != before.caption and after.alt != before.alt
            assert after == explorer.frames[tuple(values.values())]
            assert after == render(**values)
    finally:
        for control, value in DEFAULTS[name].items():
            set_control(explorer, control, value)


def test_frames_cover_every_value_and_all_differ(frames_explorer):
    name, explorer = frames_explorer
    assert len(explorer.frames) == FRAME_COUNTS[name] == len(list(explorer.settings()))
    pngs = [frame.png for frame in explorer.frames.values()]
    assert len(set(pngs)) == len(pngs), "two settings show the same picture"
    assert all(png.startswith(b"\x89PNG") for png in pngs)
    assert explorer.frame_bytes() < MAX_FRAME_BYTES


def test_frames_are_linked_in_the_browser(frames_explorer):
    name, explorer = frames_explorer
    # One Stack per setting of the controls before it: 1, then one per value of the first, ...
    prefixes = {tuple(s.items())[:i] for s in explorer.settings() for i in range(len(explorer.control_specs))}
    assert len(explorer.links) == len(prefixes)
    for link in explorer.links:
        assert isinstance(link, ipywidgets.widgets.widget_link.Link)  # a jslink, not a Python link
        (source, trait), (target, target_trait) = link.source, link.target
        assert isinstance(target, ipywidgets.Stack) and target_trait == "selected_index"
        control = next(n for n, ws in explorer.control_widgets.items() if any(w is source for w in ws))
        spec = next(s for s in explorer.specs if s.name == control)
        assert trait == spec.linked_trait
        assert getattr(source, trait) == target.selected_index  # the saved state starts in step


def test_frames_state_embeds_stacks_links_and_pictures(frames_explorer):
    from ipywidgets.embed import dependency_state, embed_data

    name, explorer = frames_explorer
    data = embed_data(views=[explorer], state=dependency_state([explorer]))
    models = [m["model_name"] for m in data["manager_state"]["state"].values()]
    assert models.count("LinkModel") == len(explorer.links)
    assert models.count("StackModel") == len(explorer.links)
    pictures = [
        m["state"]["value"]
        for m in data["manager_state"]["state"].values()
        if m["model_name"] == "HTMLModel" and 'src="data:image/png;base64,' in m["state"].get("value", "")
    ]
    assert len(pictures) == len(explorer.frames), "a frame's picture is missing from the saved state"
    # Every picture carries alt text that says what it shows (ipywidgets' Image has no alt).
    alts = [p.split(' alt="', 1)[1].split('"', 1)[0] for p in pictures]
    assert all(len(alt) > 40 for alt in alts)
    assert len(set(alts)) == len(alts), "two frames share one alt text"


# -- accessibility -----------------------------------------------------------------------------


def test_every_control_has_a_name_and_every_picture_says_what_it_shows(frames_explorer):
    name, explorer = frames_explorer
    for widgets_of_control in explorer.control_widgets.values():
        for widget in widgets_of_control:
            assert widget.description.strip(), "a control without a label has no accessible name"
    for key, frame in explorer.frames.items():
        html = frame.img_html()
        assert html.startswith("<img") and ' alt="' in html
        assert len(frame.alt) > 60 and "\n" not in frame.alt
        assert explorer._frame_of(html, frame.caption) == frame  # the alt text survives the HTML


# -- live mode (ipywidgets 7, e.g. Colab) ----------------------------------------------------


@pytest.mark.slow
def test_live_redraws_each_control(live_explorer):
    name, explorer = live_explorer
    render, changes, defaults = LIVE.get(name, (*EXPLORERS[name][1:], DEFAULTS[name]))
    assert explorer.mode == "live" and explorer.stack is None and not explorer.links
    assert explorer.values() == defaults
    assert explorer.shown() == render(**defaults)
    values = dict(defaults)
    for control, value in changes.items():
        before = explorer.shown()
        n_redraws = len(explorer.redraw_ms)
        set_live(explorer, control, value)
        values[control] = value
        after = explorer.shown()
        assert after.png != before.png, f"moving {control} did not change the picture"
        assert explorer.values() == values
        assert after == render(**values)
        assert len(explorer.redraw_ms) == n_redraws + 1 and explorer.redraw_ms[-1] > 0


@pytest.mark.slow
def test_live_frames_do_not_depend_on_the_path():
    explorer = aw.positional_explorer(mode="live")
    for encoding in ("RoPE", "sinusoidal"):
        for d_model in explore.D_MODEL_VALUES:
            for position in (0, 16, 24):
                explorer.controls["encoding"].value = encoding
                explorer.controls["d_model"].value = d_model
                explorer.controls["position"].value = position
    explorer.controls["d_model"].value = 16
    explorer.controls["position"].value = 8
    assert explorer.shown() == aw.render_positional(16, 8)


@pytest.mark.slow
def test_live_dependent_control_follows_its_parent():
    explorer = aw.heads_explorer(mode="live")
    explorer.controls["n_heads"].value = 8
    explorer.controls["head"].value = 7  # the last of heads 0..7
    assert explorer.shown() == aw.render_heads(8, head=7)
    explorer.controls["n_heads"].value = 4  # head 7 of 4 does not exist: back to "all"
    assert explorer.values() == {"n_heads": 4, "head": "all", "scale_by": "d_head"}
    assert [tuple(option) for option in explorer.controls["head"].options] == [
        ("all", "all"),
        ("0", 0),
        ("1", 1),
        ("2", 2),
        ("3", 3),
    ]
    assert explorer.shown() == aw.render_heads(4)
    explorer.controls["head"].value = 2  # a head that still exists is kept
    explorer.controls["n_heads"].value = 8
    assert explorer.values() == {"n_heads": 8, "head": 2, "scale_by": "d_head"}
    efficient = aw.efficient_explorer(mode="live")
    efficient.controls["block_size"].value = 1
    assert efficient.specs[1].values == tuple(range(1, 6))


@pytest.mark.slow
def test_frames_dependent_control_has_one_widget_per_parent_value():
    if not hasattr(ipywidgets, "Stack"):
        pytest.skip("frames mode needs ipywidgets 8")
    explorer = aw.efficient_explorer(mode="frames")
    steps = explorer.control_widgets["step"]
    assert [w.options[-1][1] for w in steps] == [5, 3, 1]  # one slider per block size, a step per block
    assert explorer.controls["step"] is steps[1]  # block size 2, the default


@pytest.mark.slow
def test_live_scores_are_editable_and_bad_text_is_reported():
    explorer = aw.softmax_explorer(mode="live")
    explorer.controls["logits"].value = "0, 0, 0, 0, 0, 9"
    assert explorer.values()["logits"] == (0.0, 0.0, 0.0, 0.0, 0.0, 9.0)
    assert explorer.shown() == aw.render_softmax(1.0, (0.0, 0.0, 0.0, 0.0, 0.0, 9.0))
    good, n_redraws = explorer.shown(), len(explorer.redraw_ms)
    explorer.controls["logits"].value = "1, two"
    assert "Not drawn" in explorer.caption.value and "6 numbers" in explorer.caption.value
    assert explorer.shown().png == good.png and len(explorer.redraw_ms) == n_redraws  # the picture stays


def test_text_controls_are_live_only():
    with pytest.raises(ValueError, match="live mode only"):
        aw.Explorer(
            "x", [aw.Control("s", "s", ("1",), "1", kind="text", parse=str)], lambda s: None, mode="frames"
        )
    with pytest.raises(ValueError, match="needs parse"):
        aw.Control("s", "s", ("1",), "1", kind="text")


def test_transformer_explorer_runs_a_model():
    torch = pytest.importorskip("torch")
    from attncourse import TinyTransformer

    torch.manual_seed(0)
    model = TinyTransformer(16, d_model=16, n_heads=2, n_layers=3, max_len=8, d_ff=32)
    tokens = torch.tensor([[1, 2, 3, 4, 1, 2, 3, 4]])
    with torch.no_grad():
        _, weights = model(tokens)
    explorer = aw.transformer_explorer(model, tokens, mode="live")
    assert [s.values for s in explorer.specs] == [(0, 1, 2), (0, 1)]
    explorer.controls["layer"].value = 2
    assert explorer.shown() == aw.render_transformer(weights, tokens[0].tolist(), 2, 0)


@pytest.mark.slow
def test_transformer_explorer_scores_the_held_out_batch_it_is_given():
    import html

    torch = pytest.importorskip("torch")
    from attncourse import TinyTransformer
    from attncourse.explore.transformer import head_scores

    torch.manual_seed(0)
    model = TinyTransformer(16, d_model=16, n_heads=2, n_layers=2, max_len=8, d_ff=32)
    shown = torch.tensor([1, 2, 3, 4, 1, 2, 3, 4])
    batch = torch.randint(0, 16, (5, 8))
    rows = torch.rand(5, 8) < 0.5
    with torch.no_grad():
        _, batch_weights = model(batch)
    expected = head_scores(batch_weights, batch, induction_rows=rows)  # measured here, not by the explorer
    explorer = aw.transformer_explorer(model, shown, held_out=(batch, rows), mode="live")
    explorer.controls["head"].value = 1
    text = html.unescape(explorer.shown().caption)
    prev, ind = expected.previous[0, 1], expected.induction[0, 1]
    assert f"previous-token score {prev:.2f}, induction score {ind:.2f}, averaged over 5 held-out" in text
    given = aw.render_transformer(model, shown, 0, 1, held_out=expected)  # the scores handed over
    assert explorer.shown() == given
    assert explorer.shown() != aw.render_transformer(model, shown, 0, 1)  # not the sequence's own
    with pytest.raises(ValueError, match="held_out must be a HeadScores"):
        aw.transformer_explorer(MAPS, MAP_TOKENS, held_out=(batch, rows), mode="live")


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


@pytest.mark.slow
def test_no_pyplot_figures_and_a_short_repr():
    plt.close("all")
    explorer = aw.mask_explorer(mode="live")
    explorer.controls["mask"].value = "causal"
    assert plt.get_fignums() == []  # nothing for the inline backend to show a second time
    assert repr(explorer) == "<mask explorer: mask, pad_side, pad_length, fill>"
    assert "attncourse-explorer" in explorer._dom_classes
    assert "attncourse-control-pad_length" in explorer.controls["pad_length"]._dom_classes


@pytest.mark.slow
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


@pytest.mark.slow
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


def test_insert_explorers_passes_the_chapters_variables(insert_script, tmp_path):
    import nbformat

    path = tmp_path / "08_transformer_block.ipynb"
    nbformat.write(_chapter(), path)
    assert insert_script.process(tmp_path) == [str(path)]
    cell = nbformat.read(path, as_version=4).cells[3]
    assert cell.source.endswith(
        "transformer_explorer(model, demo, held_out=(test_tokens[:, :-1], determined(test_from, L_MAX - 1)))"
    )
    assert cell.outputs == [] and cell.execution_count is None
    # Every chapter with a slot in the book gets a registered explorer that exists.
    for name, (function, alt, *args) in insert_script.EXPLORERS.items():
        assert hasattr(aw, function) and alt.startswith("Interactive: "), name


# -- the chapters' numbers on screen ---------------------------------------------------------


@pytest.mark.slow
def test_default_pictures_show_the_chapters_numbers():
    """The default frames carry the numbers the chapters print (tests/test_explorer_ties.py reads them from the
    notebooks): chapter 4's cat -> mat 0.4241, chapter 1's weights at T = 1."""
    assert "mat 0.424" in aw.render_self_attention().caption  # cat's row, as chapter 4 computes it by hand
    view = explore.softmax_view(1.0)
    caption = aw.render_softmax(1.0).caption
    assert f"top weight {view.max_weight:.3f}" in caption and f"entropy {view.entropy:.3f}" in caption
    heads = explore.heads_view()  # chapter 5's four heads (tied in test_explorer_ties.py)
    caption = aw.render_heads(heads.n_heads).caption
    query = heads.tokens.index("sat")
    for h in range(heads.n_heads):
        assert f"head {h} '{heads.tokens[int(heads.weights[h, query].argmax())]}' " in caption  # from 0
        assert f"{heads.weights[h, query].max():.2f}" in caption
    assert f"mean row entropy {heads.mean_entropy:.3f}" in caption


@pytest.mark.slow
def test_softmax_frames_let_every_score_change():
    if not hasattr(ipywidgets, "Stack"):
        pytest.skip("frames mode needs ipywidgets 8")
    explorer = aw.softmax_explorer(mode="frames")
    by_word = {}
    for setting in explorer.settings():
        by_word.setdefault(setting["word"], set()).add(setting["score"])
    assert set(by_word) == set(explorer_labels := explore.LOGIT_LABELS)
    for word, own in zip(explorer_labels, explore.LOGITS):
        assert own in by_word[word] and len(by_word[word]) >= 3
    set_control(explorer, "word", "moon")
    set_control(explorer, "score", 5.0)
    assert explorer.shown() == aw.render_softmax(1.0, word="moon", score=5.0)
    assert "moon 5" in explorer.shown().caption


@pytest.mark.slow
def test_live_positional_switches_to_past_the_training_length():
    explorer = aw.positional_explorer(mode="live")
    explorer.controls["encoding"].value = "past training length"
    assert explorer.values()["position"] in explore.EXTRAPOLATION_POSITIONS
    assert list(explorer.controls["position"].options) == [
        (str(p), p) for p in explore.EXTRAPOLATION_POSITIONS
    ]
    explorer.controls["position"].value = 64
    shown = explorer.shown()
    assert shown == aw.render_positional(explore.DEFAULT_D_MODEL, 64, encoding="past training length")
    view = explore.extrapolation_view(explore.DEFAULT_D_MODEL, 64)
    assert f"position 64 has {int(view.outside[64])} of 32 dimensions outside" in shown.caption
    assert "training length N = 32" in shown.alt
    explorer.controls["encoding"].value = "sinusoidal"  # back: a position the sinusoid view offers
    assert explorer.values()["position"] in explore.POSITIONS


@pytest.mark.slow
def test_heads_frames_do_not_keep_the_other_scales_maps():
    """With every head on screen, the maps after the first sit in the cached background: switching
    the scale must repaint them (the d_model frames once showed heads 2..n scaled by d_head)."""
    from attncourse.widgets.heads import _heads_renderer

    renderer = _heads_renderer(explore.DEFAULT_D_MODEL_HEADS, explore.TOKENS, 1)  # render_heads' defaults
    for n_heads in (2, 4, 8):
        renderer(n_heads=n_heads, head="all", scale_by="d_head")
        reused = renderer(n_heads=n_heads, head="all", scale_by="d_model")
        assert reused == aw.render_heads(n_heads=n_heads, head="all", scale_by="d_model"), n_heads


def _drawn_outside(fig) -> tuple:
    """How far (inches: left, bottom, right, top) what ``fig`` draws reaches past its edges; all 0
    when nothing is clipped in the PNG (matplotlib's tight box counts only what is drawn)."""
    fig.canvas.draw()
    drawn = fig.get_tightbbox(fig.canvas.get_renderer())
    width, height = fig.get_size_inches()
    return tuple(round(max(0.0, x), 3) for x in (-drawn.x0, -drawn.y0, drawn.x1 - width, drawn.y1 - height))


@pytest.mark.slow
def test_positional_text_stays_inside_the_picture_past_the_training_length():
    from attncourse.widgets.positional import PAST, _positional_renderer

    renderer = _positional_renderer(explore.D_MODEL_VALUES, explore.N_POSITIONS, 0)
    for encoding, positions in (("sinusoidal", (0, 24)), (PAST, explore.EXTRAPOLATION_POSITIONS)):
        for d_model in explore.D_MODEL_VALUES:
            for position in positions:
                renderer(encoding=encoding, d_model=d_model, position=position)
                assert _drawn_outside(renderer.painter.fig) == (0, 0, 0, 0), (encoding, d_model, position)


@pytest.mark.slow
def test_mask_alt_text_names_an_alignment_only_where_it_matters():
    """With L = S both alignments are the same mask: the alt text says "causal on", as the caption does."""
    square = aw.render_mask(1, "causal")
    assert "causal on)" in square.alt and "top-left" not in square.alt
    half = aw.render_mask(1, "causal, L = S/2, bottom-right")
    assert "causal on, bottom-right)" in half.alt
    assert "causal off)" in aw.render_mask(1, "padding").alt
