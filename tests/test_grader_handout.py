"""A handout that works: every image of the student notebooks is inside them, and a Colab badge
opens the notebook where the instructor hosts it, or is not there at all."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from attncourse.cli import main
from attncourse.grading import GradingError
from attncourse.grading.assets import image_refs, inline_images, set_badges

ROOT = Path(__file__).resolve().parents[1]


def md(text: str) -> dict:
    return {"cell_type": "markdown", "metadata": {}, "source": text}


def resolves(nb: dict) -> list:
    """The images of ``nb`` that would not show: anything but an attachment the cell holds, data:
    or a web address."""
    broken = []
    for index, target in image_refs(nb):
        cell = nb["cells"][index - 1]
        if target.startswith("attachment:"):
            if target[len("attachment:") :] not in (cell.get("attachments") or {}):
                broken.append((index, target))
        elif not target.startswith(("data:", "https://")):
            broken.append((index, target))
    return broken


def test_images_go_inside_the_cells_and_a_missing_one_is_an_error(tmp_path):
    (tmp_path / "figures").mkdir()
    svg = b'<svg xmlns="http://www.w3.org/2000/svg"/>'
    (tmp_path / "figures" / "a.svg").write_bytes(svg)
    nb = {"cells": [md('![a](figures/a.svg) and <img src="figures/a.svg" width="40">')]}
    assert resolves(nb) == [(1, "figures/a.svg"), (1, "figures/a.svg")]
    assert inline_images(nb, tmp_path, "x.ipynb") == 2
    assert resolves(nb) == []
    cell = nb["cells"][0]
    assert base64.b64decode(cell["attachments"]["figures_a.svg"]["image/svg+xml"]) == svg
    assert 'width="40"' in "".join(cell["source"])
    with pytest.raises(GradingError, match="the image figures/b.svg is not in"):
        inline_images({"cells": [md("![b](figures/b.svg)")]}, tmp_path, "x.ipynb")


def test_a_badge_points_at_the_host_or_goes():
    cell = "[![Open in Colab](_static/colab-badge.svg)](https://colab.research.google.com/github/a/b/blob/main/student/x.ipynb)\n# T"
    nb = {"cells": [md(cell)]}
    assert set_badges(nb, "x.ipynb", "https://colab.research.google.com/github/u/c/blob/main/hw") == 1
    assert "(https://colab.research.google.com/github/u/c/blob/main/hw/x.ipynb)" in "".join(
        nb["cells"][0]["source"]
    )
    nb = {"cells": [md(cell)]}
    assert set_badges(nb, "x.ipynb", None) == 1 and "".join(nb["cells"][0]["source"]) == "# T"


@pytest.mark.slow
def test_the_books_handout_has_no_broken_image_and_no_wrong_badge(tmp_path):
    host = "github:uni/attention-2026/week1@main"
    assert main(["assign", str(ROOT / "book"), str(tmp_path / "h1"), "--host", host]) == 0
    assert main(["assign", str(ROOT / "book"), str(tmp_path / "h2")]) == 0
    n_images = 0
    for path in sorted((tmp_path / "h1" / "student").glob("*.ipynb")):
        with_host = json.loads(path.read_text(encoding="utf-8"))
        without = json.loads((tmp_path / "h2" / "student" / path.name).read_text(encoding="utf-8"))
        assert resolves(with_host) == [] and resolves(without) == [], path.name
        n_images += len(image_refs(with_host))
        text, bare = json.dumps(with_host), json.dumps(without)
        assert "colab.research.google.com/github/attncourse" not in text + bare  # no public-repo badge
        assert f"colab.research.google.com/github/uni/attention-2026/blob/main/week1/{path.name}" in text
        assert "Open in Colab" not in bare
    assert n_images > 10  # the book's figures and badges were there to inline


def test_assign_chapter_hands_out_those_chapters_alone_with_their_figures(tmp_path, capsys):
    from attncourse.exercises import all_exercises
    from attncourse.grading.handout import assigned_chapters, read_manifest

    out = tmp_path / "hw"
    host = "https://github.com/uni/attention-2026/tree/main/hw"
    args = ["assign", str(ROOT / "book"), str(out), "--chapter", "ch06", "--chapter", "11", "--host", host]
    assert main(args) == 0
    names = sorted(p.name for p in (out / "student").iterdir())
    assert names == ["06_masked_attention.ipynb", "11_modern_attention.ipynb"]
    n_images = 0
    for name in names:
        nb = json.loads((out / "student" / name).read_text(encoding="utf-8"))
        assert resolves(nb) == [], name  # every figure inside the notebook
        n_images += len(image_refs(nb))
        assert f"colab.research.google.com/github/uni/attention-2026/blob/main/hw/{name})" in json.dumps(nb)
    assert n_images > 2
    manifest = read_manifest(out / "grading")
    wanted = [ex.id for ex in all_exercises("ch06") + all_exercises("ch11")]
    assert [e["id"] for e in manifest["exercises"]] == wanted
    assert manifest["total_points"] == sum(ex.points for ex in all_exercises("ch06") + all_exercises("ch11"))
    assert sorted(manifest["notebooks"]) == names
    assert assigned_chapters(out / "grading") == ["ch06", "ch11"]
    assert sorted(p.name for p in (out / "grading").glob("hidden_*.py")) == [
        "hidden_ch06.py",
        "hidden_ch11.py",
    ]
    assert "2 student notebooks of ch06, ch11" in capsys.readouterr().out

    assert main(["assign", str(ROOT / "book"), str(tmp_path / "bad"), "--chapter", "ch42"]) == 1
    assert "--chapter ch42: unknown chapter" in capsys.readouterr().err
    assert not (tmp_path / "bad").exists()


def test_a_whole_book_bundle_names_no_assigned_chapters(tmp_path):
    from attncourse.exercises import chapter_cells
    from attncourse.grading.handout import assigned_chapters

    book = tmp_path / "book"
    book.mkdir()
    for ch, stem in (("ch01", "01_softmax"), ("ch02", "02_dot_product_attention")):
        nb = {"cells": chapter_cells(ch), "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
        (book / f"{stem}.ipynb").write_text(json.dumps(nb), encoding="utf-8")
    assert main(["assign", str(book), str(tmp_path / "hw"), "--tests", str(ROOT / "hidden_cases")]) == 0
    assert assigned_chapters(tmp_path / "hw" / "grading") is None
    assert len(list((tmp_path / "hw" / "grading").glob("hidden_*.py"))) > 2  # every hidden file, as before


@pytest.mark.parametrize(
    "host, colab",
    [
        ("github:uni/c", "uni/c/blob/main"),
        ("github:uni/c/week3@fall", "uni/c/blob/fall/week3"),
        ("https://github.com/uni/c", "uni/c/blob/main"),
        ("https://github.com/uni/c/tree/spring/hw/student/", "uni/c/blob/spring/hw/student"),
        ("github.com/uni/c.git", "uni/c/blob/main"),
    ],
)
def test_the_documented_host_forms_are_accepted(host, colab):
    from attncourse.grading.assets import colab_base

    assert colab_base(host) == f"https://colab.research.google.com/github/{colab}"


@pytest.mark.parametrize(
    "host, right",
    [
        (
            "https://github.com/uni/c/blob/main/student/06_masked_attention.ipynb",
            "https://github.com/uni/c/tree/main/student",
        ),
        ("github:uni/c/student/06_masked_attention.ipynb@main", "github:uni/c/student@main"),
    ],
)
def test_a_notebooks_address_as_host_is_refused_with_the_folders(tmp_path, capsys, host, right):
    out = tmp_path / "hw"
    assert main(["assign", str(ROOT / "book"), str(out), "--chapter", "ch06", "--host", host]) == 1
    err = capsys.readouterr().err
    assert "names a notebook, not the folder" in err and f"give the folder, {right} " in err
    assert not out.exists()  # refused before anything is written
