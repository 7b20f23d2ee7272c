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
