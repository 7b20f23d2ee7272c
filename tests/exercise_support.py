"""Helpers shared by the exercise tests: the hidden cases in grading/, and the student's stub."""

from __future__ import annotations

from pathlib import Path

from attncourse.exercises.notebook import replace_solutions
from attncourse.grading import load_hidden_cases  # noqa: F401  (the grader's own loader, for the tests)

ROOT = Path(__file__).resolve().parents[1]


def stub_function(ex):
    """The student version's function: the stub (or the bug) in place of the solution."""
    namespace: dict = {}
    exec("\n".join(ex.needs), namespace)
    exec(replace_solutions(ex.solution, ex.student_stub()), namespace)
    return namespace[ex.function]
