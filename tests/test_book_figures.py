"""The chapters' figures say what they show: colour bars are labelled, compared maps share one bar,
mask colours and bands are in a legend, one method keeps one colour across a chapter.

Read from the notebooks' code (every body cell, before the exercises), so a new figure that leaves
out a label fails here.  Chapter 7 is checked by its own tests.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

BOOK = Path(__file__).resolve().parents[1] / "book"
CHAPTERS = [
    "00_why_attention.ipynb",
    "01_softmax.ipynb",
    "02_dot_product_attention.ipynb",
    "03_scaling.ipynb",
    "04_self_attention.ipynb",
    "05_multi_head_attention.ipynb",
    "06_masked_attention.ipynb",
    "08_transformer_block.ipynb",
    "09_efficient_attention.ipynb",
    "10_vision_transformer.ipynb",
    "11_modern_attention.ipynb",
    "12_cross_attention.ipynb",
    "13_beyond_softmax.ipynb",
]


def _body_cells(notebook: str) -> list:
    cells = json.loads((BOOK / notebook).read_text(encoding="utf-8"))["cells"]
    end = next(
        i
        for i, c in enumerate(cells)
        if c["cell_type"] == "markdown" and "".join(c["source"]).startswith("## Exercises")
    )
    return [c for c in cells[:end] if c["cell_type"] == "code"]


def _calls(notebook: str, name: str) -> list:
    """(cell id, call node) for every call of ``name`` (a function or a method) in the body."""
    found = []
    for cell in _body_cells(notebook):
        source = "".join(cell["source"])
        lines = [line for line in source.splitlines() if not line.lstrip().startswith(("%", "!"))]
        for node in ast.walk(ast.parse("\n".join(lines))):
            if isinstance(node, ast.Call):
                func = node.func
                called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
                if called == name:
                    found.append((cell.get("id"), node))
    return found


def _keyword(call: ast.Call, name: str):
    return next((k.value for k in call.keywords if k.arg == name), None)


def _is_false(value) -> bool:
    return isinstance(value, ast.Constant) and value.value is False


@pytest.mark.parametrize("notebook", CHAPTERS)
def test_every_colour_bar_says_what_it_measures(notebook):
    for cell_id, call in _calls(notebook, "colorbar"):
        assert _keyword(call, "label") is not None, f"{notebook} {cell_id}: a colour bar without a label"
    for cell_id, call in _calls(notebook, "heatmap"):  # attention_heatmap names its bar itself
        if not _is_false(_keyword(call, "colorbar")):
            assert _keyword(call, "colorbar_label") is not None, (
                f"{notebook} {cell_id}: heatmap bar unlabelled"
            )


@pytest.mark.parametrize("notebook", CHAPTERS)
def test_every_mask_picture_has_a_legend_for_its_colours(notebook):
    for cell_id, call in _calls(notebook, "mask_overlay"):
        legend = _keyword(call, "legend")
        assert isinstance(legend, ast.Constant) and legend.value is True, f"{notebook} {cell_id}"


@pytest.mark.parametrize(
    "notebook, cell_id, maps",
    [
        ("02_dot_product_attention.ipynb", "dotattn-34", 2),
        ("04_self_attention.ipynb", "c021", 2),
        ("05_multi_head_attention.ipynb", "c030", 2),
        ("06_masked_attention.ipynb", "ch06-011", 1),  # one call in a loop over the two sentences
        ("06_masked_attention.ipynb", "ch06-022", 2),
        ("08_transformer_block.ipynb", "6ddf710c", 1),  # one call in a loop over the eight heads
        ("08_transformer_block.ipynb", "be44488f", 2),
    ],
)
def test_maps_side_by_side_share_one_colour_bar(notebook, cell_id, maps):
    drawn = [
        call
        for name in ("attention_heatmap", "mask_overlay")
        for cid, call in _calls(notebook, name)
        if cid == cell_id
    ]
    assert len(drawn) == maps and all(_is_false(_keyword(c, "colorbar")) for c in drawn), cell_id
    bars = [call for cid, call in _calls(notebook, "colorbar") if cid == cell_id]
    assert len(bars) == 1, cell_id  # one bar for the figure, on the 0-to-1 scale attention_heatmap fixes


def test_chapter_12_reversal_maps_share_a_labelled_bar_and_the_bands_are_named():
    notebook = "12_cross_attention.ipynb"
    shows = [call for cid, call in _calls(notebook, "imshow") if cid == "ch12-016"]
    assert len(shows) == 2 and all(ast.unparse(_keyword(c, "vmax")) == "1" for c in shows)
    assert len([c for cid, c in _calls(notebook, "colorbar") if cid == "ch12-016"]) == 1
    assert len([c for cid, c in _calls(notebook, "set_xticks") if cid == "ch12-016"]) == 1
    bands = [c for cid, c in _calls(notebook, "fill_between") if cid == "ch12-013"]
    patches = [c for cid, c in _calls(notebook, "Patch") if cid == "ch12-013"]
    assert bands and len(patches) == 1 and "seeds" in ast.unparse(_keyword(patches[0], "label"))


def test_chapter_11_gives_each_method_one_colour_in_every_figure():
    notebook = "11_modern_attention.ipynb"
    plotted = _calls(notebook, "plot") + _calls(notebook, "errorbar")
    by_method = [(cid, c) for cid, c in plotted if cid in ("ch11-extend-freqs", "ch11-extend-table")]
    assert {cid for cid, _ in by_method} == {"ch11-extend-freqs", "ch11-extend-table"}
    for cid, call in by_method:
        assert ast.unparse(_keyword(call, "color")) == "COLOURS[name]", cid
    lines = [c for cid, c in _calls(notebook, "axvline") if cid == "ch11-extend-table"]
    assert lines and all(_keyword(c, "label") is not None for c in lines)  # the training length


def test_chapter_13_recall_plot_names_its_reference_lines():
    notebook = "13_beyond_softmax.ipynb"
    labels = [
        ast.unparse(_keyword(c, "label"))
        for name in ("axvline", "axhline")
        for cid, c in _calls(notebook, name)
        if cid == "ch13-recall-plot"
    ]
    assert any("head width" in label for label in labels) and any("1/64" in label for label in labels)
    legend = [c for cid, c in _calls(notebook, "legend") if cid == "ch13-block-plot"]
    assert len(legend) == 1 and "skipped tile" in ast.unparse(legend[0])


@pytest.mark.parametrize("notebook", CHAPTERS)
def test_every_dashed_or_dotted_reference_line_is_in_a_legend(notebook):
    for name in ("axhline", "axvline"):
        for cell_id, call in _calls(notebook, name):
            if _keyword(call, "ls") is not None or _keyword(call, "linestyle") is not None:
                assert _keyword(call, "label") is not None, f"{notebook} {cell_id}: {ast.unparse(call)}"


def test_chapter_11_length_plot_marks_both_lengths_in_one_legend_for_both_panels():
    notebook = "11_modern_attention.ipynb"
    lines = [
        ast.unparse(_keyword(c, "label"))
        for cid, c in _calls(notebook, "axvline")
        if cid == "ch11-extend-table"
    ]
    assert any("training length" in label for label in lines) and any(
        "fine-tuning length" in label for label in lines
    )
    legends = [c for cid, c in _calls(notebook, "legend") if cid == "ch11-extend-table"]
    assert len(legends) == 1 and ast.unparse(legends[0].func.value) == "fig"  # under both panels
    freqs = "".join(next(c for c in _body_cells(notebook) if c.get("id") == "ch11-extend-freqs")["source"])
    assert '"none": None' in freqs  # the unscaled line at ratio 1 anchors the log axis
