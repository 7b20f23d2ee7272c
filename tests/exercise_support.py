"""Helpers shared by the exercise tests: the hidden cases in hidden_cases/, the student's stub, and
the skip for exercises on torch tensors in the numpy-only tier."""

from __future__ import annotations

from pathlib import Path

import pytest

from attncourse.exercises.engine.notebook import replace_solutions
from attncourse.grading import load_hidden_cases  # noqa: F401  (the grader's own loader, for the tests)

ROOT = Path(__file__).resolve().parents[1]


def skip_without_torch(ex):
    """An exercise on torch tensors is skipped, on its own, where torch is not installed."""
    if any("torch" in line for line in ex.needs):
        pytest.importorskip("torch")


def stub_function(ex):
    """The student version's function: the stub (or the bug) in place of the solution."""
    namespace: dict = {}
    exec("\n".join(ex.needs), namespace)
    exec(replace_solutions(ex.solution, ex.student_stub()), namespace)
    return namespace[ex.function]
