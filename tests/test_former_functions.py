"""A renamed exercise function: saved notebooks that define it under a former name still grade.

``Exercise.former_functions`` lists the names the function had; ``score`` and the grader's runner
look for them when the current name is not defined (``check`` is handed the function itself).
"""

from __future__ import annotations

import signal
from pathlib import Path

import numpy as np
import pytest
from grader_support import Reply

from attncourse import softmax
from attncourse.exercises import get, reset, score

EX = "ch03.weights_not_normalised"
OLD = "attention_scaled_late"


def _correct(q, k, v):
    w = softmax(q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1]))
    return w @ v, w


def _wrong(q, k, v):
    w = softmax(q @ np.swapaxes(k, -1, -2)) / np.sqrt(q.shape[-1])
    return w @ v, w


def test_the_exercise_keeps_its_former_function_name():
    ex = get(EX)
    assert ex.function != OLD and ex.function_names == (ex.function, OLD)


def test_score_finds_a_function_saved_under_its_former_name():
    reset()
    rows = {e.id: r for e, r in score("ch03", show=False, namespace={OLD: _correct}).rows}
    assert rows[EX] is not None and rows[EX].earned == get(EX).points
    reset()
    rows = {e.id: r for e, r in score("ch03", show=False, namespace={OLD: _wrong}).rows}
    assert rows[EX] is not None and rows[EX].earned < get(EX).points
    reset()
    rows = {e.id: r for e, r in score("ch03", show=False, namespace={"unrelated": _correct}).rows}
    assert rows[EX] is None


def _run(entry: dict) -> dict:
    from attncourse.grading.runner import _alias_former_functions, _run_cells

    source = f"import numpy as np\n\ndef {OLD}(q, k, v):\n    return q, k\n"
    request = {
        "cells": [{"index": 1, "kind": "chapter", "source": source}],
        "prelude": "",
        "exercises": [entry],
        "limits": {"cell_s": 10},
    }
    namespace: dict = {}
    handler = signal.getsignal(signal.SIGALRM)  # the runner's cell timer replaces it
    try:
        _run_cells(request, namespace, Reply())
        _alias_former_functions(request, namespace)
    finally:
        signal.signal(signal.SIGALRM, handler)
    return namespace


def test_the_runner_binds_the_current_name_to_a_former_one():
    ex = get(EX)
    entry = {"id": ex.id, "function": ex.function, "former_functions": list(ex.former_functions), "cases": []}
    namespace = _run(entry)
    assert callable(namespace[ex.function]) and namespace[ex.function] is namespace[OLD]
    # without the former name the old definition is neither reached nor bound
    namespace = _run({**entry, "former_functions": []})
    assert ex.function not in namespace and OLD not in namespace


@pytest.mark.slow
def test_a_saved_notebook_with_the_former_name_grades_in_full(tmp_path):
    """The whole way: assign chapter 3, grade a notebook whose exercise cell still defines the old
    name (a correct answer) and one that defines it wrongly; the gradebook gives full marks and 0."""
    import csv
    import json

    from grader_support import chapter_notebook, exercise_cell, needs_bwrap

    from attncourse.cli import main
    from attncourse.grading import Limits, grade

    needs_bwrap()
    ex = get(EX)
    book = tmp_path / "book"
    book.mkdir()
    (book / "03_scaling.ipynb").write_text(json.dumps(chapter_notebook("ch03", "Scaling")), encoding="utf-8")
    root = Path(__file__).resolve().parents[1]
    assert main(["assign", str(book), str(tmp_path / "out"), "--tests", str(root / "hidden_cases")]) == 0
    student = json.loads((tmp_path / "out" / "student" / "03_scaling.ipynb").read_text(encoding="utf-8"))
    subs = tmp_path / "subs"
    for who, body in (("old_right", _CORRECT_SOURCE), ("old_wrong", _WRONG_SOURCE)):
        nb = json.loads(json.dumps(student))
        cell = exercise_cell(nb, EX)
        cell["source"] = "import numpy as np\nfrom attncourse import softmax\n\n" + body.replace("NAME", OLD)
        (subs / who).mkdir(parents=True)
        (subs / who / "03_scaling.ipynb").write_text(json.dumps(nb), encoding="utf-8")
    out = tmp_path / "graded"
    limits = Limits(time_s=20, cell_s=5, case_s=2, memory_mb=2048)
    grade(tmp_path / "out" / "grading", subs, out, limits=limits, jobs=1, log=lambda s: None)
    with open(out / "gradebook.csv", newline="", encoding="utf-8-sig") as f:
        rows = {row["student"]: row for row in csv.DictReader(f)}
    assert float(rows["old_right"][EX]) == ex.points, rows["old_right"]
    assert float(rows["old_wrong"][EX]) == 0, rows["old_wrong"]


_CORRECT_SOURCE = """
def NAME(q, k, v):
    w = softmax(q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1]))
    return w @ v, w
"""
_WRONG_SOURCE = """
def NAME(q, k, v):
    w = softmax(q @ np.swapaxes(k, -1, -2)) / np.sqrt(q.shape[-1])
    return w @ v, w
"""
