"""One source per solution: the registry's ``solution`` is what the chapters show, what the student
stub replaces and what agrees with the grader's reference; any drift fails here."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from attncourse.exercises import CHAPTERS, Case, Exercise, all_exercises, get
from attncourse.exercises.engine.notebook import NotebookProblem, exercise_cells
from attncourse.exercises.engine.registry import _REGISTRY, register
from attncourse.exercises.engine.sync import sync_notebook

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

import sync_exercise_cells  # noqa: E402

WITH_NOTEBOOK = [
    key
    for key, (_, stem) in CHAPTERS.items()
    if all_exercises(key) and (ROOT / "book" / f"{stem}.ipynb").exists()
]


def chapter(key: str) -> dict:
    return json.loads((ROOT / "book" / f"{CHAPTERS[key][1]}.ipynb").read_text(encoding="utf-8"))


def role_index(nb: dict, role: str, value: str) -> int:
    return next(
        i for i, c in enumerate(nb["cells"]) if c["metadata"].get("attncourse", {}).get(role) == value
    )


@pytest.mark.parametrize("key", WITH_NOTEBOOK)
def test_every_exercise_cell_of_the_book_is_what_the_registry_makes(key):
    nb = chapter(key)
    assert sync_notebook(nb, key) == []


@pytest.mark.parametrize("key", WITH_NOTEBOOK)
def test_every_exercise_section_opens_with_the_generated_heading(key):
    """The rules of check stand before the exercises in every chapter (the registry's heading cell,
    not a hand-written one that sync leaves alone)."""
    from attncourse.exercises.engine.notebook import CHECK_INSTRUCTIONS

    nb = chapter(key)
    at = role_index(nb, "heading", key)
    assert CHECK_INSTRUCTIONS in "".join(nb["cells"][at]["source"])
    assert nb["cells"][at + 1]["metadata"].get("attncourse", {}).get("setup") == key


def test_the_sync_script_finds_nothing_to_do():
    run = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "sync_exercise_cells.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stdout + run.stderr


def test_a_drifted_cell_is_rewritten_and_only_its_outputs_cleared():
    nb = chapter("ch04")
    i = role_index(nb, "exercise", "ch04.output_without_token")
    cell_id = nb["cells"][i]["id"]
    nb["cells"][i]["source"] = nb["cells"][i]["source"] + ["\n", "# an edit made in the notebook\n"]
    nb["cells"][i]["outputs"] = [{"output_type": "stream", "name": "stdout", "text": ["x\n"]}]
    check_cell = role_index(nb, "check", "ch04.output_without_token")
    untouched = copy.deepcopy(nb["cells"][check_cell])
    assert untouched["outputs"], "the book's check cells carry their outputs"

    changes = sync_notebook(nb, "ch04")
    assert changes == [f"cell {i + 1} (exercise ch04.output_without_token) rewritten"]
    assert "".join(nb["cells"][i]["source"]) == get("ch04.output_without_token").cell_source()
    assert nb["cells"][i]["id"] == cell_id and nb["cells"][i]["outputs"] == []
    assert nb["cells"][check_cell] == untouched
    assert sync_notebook(nb, "ch04") == []


def test_a_missing_exercise_is_inserted_at_the_end_of_the_exercises_section():
    nb = chapter("ch04")
    reference = copy.deepcopy(nb)
    last = all_exercises("ch04")[-1].id  # the last one: its cells go back where they were
    first = role_index(nb, "prompt", last)
    del nb["cells"][first : first + 4]
    changes = sync_notebook(nb, "ch04")
    assert len(changes) == 4 and all(last in c for c in changes)
    strip = [{k: v for k, v in c.items() if k not in ("outputs", "execution_count")} for c in nb["cells"]]
    want = [
        {k: v for k, v in c.items() if k not in ("outputs", "execution_count")} for c in reference["cells"]
    ]
    assert strip == want  # same cells, same ids, same place: just before score("ch04")
    assert sync_notebook(nb, "ch04") == []


@pytest.fixture
def new_ch08_exercise():
    ex = Exercise(
        id="ch08.sync_demo",
        number="8.99",
        title="a new exercise",
        points=1,
        function="sync_demo",
        solution="def sync_demo(x):\n    ### BEGIN SOLUTION\n    return 2 * x\n    ### END SOLUTION\n",
        reference=lambda x: 2 * x,
        public_cases=lambda: [Case("one", x=np.ones(2))],
    )
    register(ex)
    yield ex
    del _REGISTRY[ex.id]


def test_a_chapter_without_exercises_gets_its_section_after_the_heading(new_ch08_exercise):
    cells = [
        {"cell_type": "markdown", "id": "t", "metadata": {}, "source": ["# A Transformer block"]},
        {
            "cell_type": "code",
            "id": "c",
            "metadata": {},
            "execution_count": 1,
            "outputs": [],
            "source": ["x = 1"],
        },
        {
            "cell_type": "markdown",
            "id": "h",
            "metadata": {"tags": ["exercises-slot"]},
            "source": ["## Exercises"],
        },
        {"cell_type": "markdown", "id": "n", "metadata": {}, "source": ["## What next"]},
    ]
    nb = {"cells": copy.deepcopy(cells), "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    changes = sync_notebook(nb, "ch08")
    exercises = all_exercises("ch08")  # the demo, and any chapter-8 exercise already registered
    assert len(changes) == 2 + 4 * len(exercises), changes  # setup, four cells each, score
    roles = [next(iter(c["metadata"].get("attncourse", {}).items()), None) for c in nb["cells"]]
    parts = [(part, ex.id) for ex in exercises for part in ("prompt", "exercise", "check", "solution")]
    assert roles == [None, None, None, ("setup", "ch08"), *parts, ("score", "ch08"), None]
    assert nb["cells"][:3] == cells[:3] and nb["cells"][-1] == cells[-1]
    demo = roles.index(("prompt", "ch08.sync_demo"))
    assert nb["cells"][demo : demo + 4] == exercise_cells("ch08.sync_demo")
    assert len({c["id"] for c in nb["cells"]}) == len(nb["cells"])
    assert sync_notebook(nb, "ch08") == []


def test_cells_of_an_exercise_that_is_not_registered_are_refused():
    nb = chapter("ch04")
    nb["cells"][role_index(nb, "exercise", "ch04.output_without_token")]["metadata"]["attncourse"][
        "exercise"
    ] = "ch04.gone"
    with pytest.raises(NotebookProblem, match="not registered in ch04: ch04.gone"):
        sync_notebook(nb, "ch04")


def test_the_instructors_table_is_made_from_the_registry():
    page = (ROOT / "book" / "instructors.md").read_text(encoding="utf-8")
    table = sync_exercise_cells.exercise_table()
    assert f"{sync_exercise_cells.TABLE_START}\n{table}\n{sync_exercise_cells.TABLE_END}" in page
    for ex in all_exercises():
        assert f"`{ex.id}` ({ex.kind}, {ex.points})" in table
    total = sum(ex.points for ex in all_exercises())
    assert f"| all | {len(all_exercises())} | {total} |" in table
