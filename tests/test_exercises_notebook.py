"""Exercise cells in notebooks: their format, the student version, validation, and running them."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from attncourse.exercises import all_exercises, chapter_cells, exercise_cells, get
from attncourse.exercises.engine.notebook import (
    NotebookProblem,
    read_notebook,
    replace_solutions,
    to_student,
    validate_notebook,
)

ROOT = Path(__file__).resolve().parents[1]


def demo_notebook(*chapters: str) -> dict:
    cells = [{"cell_type": "markdown", "id": "title", "metadata": {}, "source": ["# Exercise demo"]}]
    for chapter in chapters:
        cells += chapter_cells(chapter)
    return {
        "cells": cells,
        "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }


def source(cell: dict) -> str:
    return "".join(cell["source"])


def index_of(nb: dict, exercise_id: str) -> int:
    """0-based index of the exercise cell of ``exercise_id``."""
    return next(
        i
        for i, c in enumerate(nb["cells"])
        if c["metadata"].get("attncourse", {}).get("exercise") == exercise_id
    )


# ----------------------------------------------------------------------------- format


def test_the_four_cells_of_an_exercise():
    prompt, exercise, check_cell, reveal = exercise_cells("ch01.stable_softmax")
    assert source(prompt).startswith("**Exercise 1.2: stable softmax** (2 points).")
    assert exercise["metadata"] == {
        "attncourse": {"exercise": "ch01.stable_softmax"},
        "tags": ["remove-input"],
    }
    lines = source(exercise).splitlines()
    assert lines[0] == "# Exercise 1.2: stable softmax (2 points)"
    assert lines[1] == "def stable_softmax(x):"
    assert "    ### BEGIN SOLUTION" in lines and "    ### END SOLUTION" in lines
    assert source(check_cell) == 'check("ch01.stable_softmax", stable_softmax)'
    assert reveal["metadata"]["tags"] == ["solution-reveal"]
    assert source(reveal).startswith("````{admonition} Show a worked solution\n:class: dropdown\n")
    assert "### BEGIN SOLUTION" not in source(reveal) and "def stable_softmax(x):" in source(reveal)


def test_a_demo_notebook_is_valid_and_nbformat_agrees():
    nbformat = pytest.importorskip("nbformat")
    nb = demo_notebook("ch01", "ch06", "bugs")
    nbformat.validate(nbformat.reads(json.dumps(nb), as_version=4))
    assert validate_notebook(nb, "demo.ipynb") == []
    first_ch06 = index_of(nb, "ch06.make_causal_mask") + 1  # 1-based, as the message counts
    assert (
        validate_notebook(nb, "01_softmax.ipynb")[0]
        == f"01_softmax.ipynb, cell {first_ch06}: ch06.make_causal_mask belongs to 06_masked_attention.ipynb"
    )


def test_validation_names_each_problem():
    nb = demo_notebook("ch01")
    cells = nb["cells"]
    entropy = index_of(nb, "ch01.temperature_derivative")  # cell 13 (1-based)
    cells[entropy]["source"] = ["# Exercise 1.3: derivative (2 points)\n"] + cells[entropy]["source"][1:]
    del cells[entropy + 1]  # its check cell
    cells[index_of(nb, "ch01.temperature_softmax")]["metadata"]["attncourse"]["exercise"] = (
        "ch01.stable_softmaxx"  # cell 5
    )
    problems = validate_notebook(nb, "01_softmax.ipynb")
    assert problems == [
        "01_softmax.ipynb, cell 5: unknown exercise id 'ch01.stable_softmaxx'. Did you mean 'ch01.stable_softmax'?",
        "01_softmax.ipynb, cell 13: the first line should be '# Exercise 1.3: how fast the weights move with the "
        "temperature (2 points)', not '# Exercise 1.3: derivative (2 points)'",
        "01_softmax.ipynb, cell 13: no check('ch01.temperature_derivative', temperature_derivative) cell after it",
        "01_softmax.ipynb: missing the exercise cells of ch01.temperature_softmax",
    ]


# ----------------------------------------------------------------------------- the student version


def test_student_version_keeps_signature_and_header_and_drops_the_solution():
    nb = demo_notebook("ch01", "bugs")
    first = index_of(nb, "ch01.temperature_softmax")
    nb["cells"][first]["outputs"] = [{"output_type": "stream", "name": "stdout", "text": ["secret\n"]}]
    nb["cells"][first]["execution_count"] = 7
    student = to_student(nb)
    text = json.dumps(student)
    assert "BEGIN SOLUTION" not in text and "solution-reveal" not in text and "secret" not in text
    n_exercises = len(all_exercises("ch01")) + len(all_exercises("bugs"))
    assert len(student["cells"]) == len(nb["cells"]) - n_exercises  # one worked solution per exercise
    ex_cell = next(
        c
        for c in student["cells"]
        if c["metadata"].get("attncourse", {}).get("exercise") == "ch01.stable_softmax"
    )
    assert source(ex_cell) == (
        "# Exercise 1.2: stable softmax (2 points)\n"
        "def stable_softmax(x):\n"
        '    """Softmax over the last axis of x (any shape) that never overflows."""\n'
        '    raise NotImplementedError("write your answer here")'
    )
    assert (
        "tags" not in ex_cell["metadata"] and ex_cell["outputs"] == [] and ex_cell["execution_count"] is None
    )
    bug = next(
        c
        for c in student["cells"]
        if c["metadata"].get("attncourse", {}).get("exercise") == "bugs.chunk_window_weights"
    )
    assert "    masked = torch.tril(masked, diagonal=S - L + window)\n" in source(bug)
    assert nb["cells"][first]["outputs"]  # the input notebook is untouched


def test_replace_solutions_handles_hidden_tests_and_broken_markers():
    text = "x = 1\n### BEGIN HIDDEN TESTS\nassert x == 1\n### END HIDDEN TESTS\ny = 2"
    assert replace_solutions(text) == "x = 1\ny = 2"
    with pytest.raises(NotebookProblem, match="without a matching ### END SOLUTION"):
        replace_solutions("def f():\n    ### BEGIN SOLUTION\n    return 1")
    with pytest.raises(NotebookProblem, match="### END SOLUTION without a matching BEGIN"):
        replace_solutions("def f():\n    return 1\n    ### END SOLUTION")
    md = replace_solutions("Answer:\n### BEGIN SOLUTION\nBecause.\n### END SOLUTION", markdown=True)
    assert md == "Answer:\n_Write your answer here._"


def test_read_notebook_reports_what_is_wrong():
    with pytest.raises(NotebookProblem, match=r"invalid JSON \(Expecting"):
        read_notebook(b'{"cells": [')
    with pytest.raises(NotebookProblem, match="JSON without a list of cells"):
        read_notebook(b'{"cells": 5}')
    with pytest.raises(NotebookProblem, match="cell 1 is not a notebook cell"):
        read_notebook(b'{"cells": [{"cell_type": "python"}]}')
    with pytest.raises(NotebookProblem, match="nbformat 3"):
        read_notebook(b'{"cells": [], "nbformat": 3}')
    assert read_notebook(json.dumps(demo_notebook("ch02")).encode())["nbformat"] == 4


def test_the_book_notebooks_have_valid_exercise_cells():
    """Every exercise cell already in book/ is well formed (this grows as chapters get exercises)."""
    problems = []
    for path in sorted((ROOT / "book").glob("*.ipynb")):
        problems += validate_notebook(json.loads(path.read_text(encoding="utf-8")), path.name)
    assert problems == []


# ----------------------------------------------------------------------------- running them


def _kernel_env(monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    monkeypatch.setenv("MPLBACKEND", "Agg")


@pytest.mark.slow
def test_solution_version_runs_and_shows_each_check_once(tmp_path, monkeypatch):
    nbclient = pytest.importorskip("nbclient")
    nbformat = pytest.importorskip("nbformat")
    _kernel_env(monkeypatch)
    nb = nbformat.reads(json.dumps(demo_notebook("ch01")), as_version=4)
    nbclient.NotebookClient(nb, timeout=120, resources={"metadata": {"path": str(tmp_path)}}).execute()
    checks = [c for c in nb.cells if "check" in c.metadata.get("attncourse", {})]
    assert len(checks) == len(all_exercises("ch01"))
    for cell in checks:
        assert len(cell.outputs) == 1, cell.source  # shown by check(), not again as the cell's value
        assert cell.outputs[0].output_type == "display_data"
        assert "✓ all cases passed" in cell.outputs[0].data["text/plain"]
        assert "all cases passed" in cell.outputs[0].data["text/html"]
    summary = nb.cells[-1]
    total = sum(ex.points for ex in all_exercises("ch01"))
    assert summary.outputs[0].data["text/plain"].startswith(f"Chapter 1: Softmax: {total}/{total} points")


@pytest.mark.slow
def test_student_version_runs_under_nbval(tmp_path, monkeypatch):
    pytest.importorskip("nbval")
    _kernel_env(monkeypatch)
    student = to_student(demo_notebook("ch01", "ch06"))
    path = tmp_path / "student.ipynb"
    path.write_text(json.dumps(student), encoding="utf-8")
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "--nbval-lax", "-p", "no:cacheprovider", "-q", str(path)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stdout[-3000:]
    assert "passed" in run.stdout


@pytest.mark.slow
def test_student_version_check_says_not_attempted(tmp_path, monkeypatch):
    nbclient = pytest.importorskip("nbclient")
    nbformat = pytest.importorskip("nbformat")
    _kernel_env(monkeypatch)
    nb = nbformat.reads(json.dumps(to_student(demo_notebook("ch01"))), as_version=4)
    nbclient.NotebookClient(nb, timeout=120, resources={"metadata": {"path": str(tmp_path)}}).execute()
    texts = [c.outputs[0].data["text/plain"] for c in nb.cells if "check" in c.metadata.get("attncourse", {})]
    assert texts[1] == (
        "Exercise 1.2 · stable softmax: 0/2 points · not attempted yet: write your answer in the exercise cell, "
        "run it, then run this check again"
    )
    total = sum(ex.points for ex in all_exercises("ch01"))
    assert nb.cells[-1].outputs[0].data["text/plain"].startswith(f"Chapter 1: Softmax: 0/{total} points")


def test_solution_cells_survive_a_round_trip_through_copy():
    cells = exercise_cells("ch05.multi_head_attention")
    again = copy.deepcopy(cells)
    assert cells == again and get("ch05.multi_head_attention").points == 2
