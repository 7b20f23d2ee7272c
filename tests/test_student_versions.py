"""The student hand-out of the real book executes under nbval (stubs only raise when called)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from attncourse.cli import main
from attncourse.exercises import CHAPTERS

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_student_notebooks_execute_under_nbval(tmp_path):
    assert main(["assign", str(ROOT / "book"), str(tmp_path / "handout")]) == 0
    student = sorted((tmp_path / "handout" / "student").glob("*.ipynb"))
    assert {p.name for p in student} >= {f"{p.stem}.ipynb" for p in (ROOT / "book").glob("0[1-7]_*.ipynb")}
    # Chapter exercises become NotImplementedError stubs; spot-the-bug exercises keep their bug.
    with_exercises = {f"{stem}.ipynb" for chapter, (_, stem) in CHAPTERS.items() if chapter != "bugs"}
    for path in student:
        text = path.read_text()
        assert "### BEGIN SOLUTION" not in text and "solution-reveal" not in text, path.name
        assert ("raise NotImplementedError" in text) == (path.name in with_exercises), path.name
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "--nbval-lax", "-p", "no:cacheprovider", "-q",
         "--rootdir", str(tmp_path), *map(str, student)],
        capture_output=True, text=True, cwd=tmp_path, timeout=1200,
    )
    assert result.returncode == 0, result.stdout[-5000:]
    summary = result.stdout.strip().splitlines()[-1]
    assert " passed" in summary and "failed" not in summary and "error" not in summary, summary


def test_every_registered_exercise_is_in_its_chapter_notebook():
    from attncourse.exercises import all_exercises

    for chapter, (_, stem) in CHAPTERS.items():
        nb = json.loads((ROOT / "book" / f"{stem}.ipynb").read_text())
        present = [c["metadata"].get("attncourse", {}).get("exercise") for c in nb["cells"]]
        wanted = [e.id for e in all_exercises() if e.chapter == chapter]
        assert wanted and [p for p in present if p] == wanted, (stem, present, wanted)
