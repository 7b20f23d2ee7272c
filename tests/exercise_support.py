"""Helpers shared by the exercise tests: the hidden cases in hidden_cases/, the student's stub, and
the skip for exercises on torch tensors in the numpy-only tier."""

from __future__ import annotations

from pathlib import Path

import pytest

from attncourse.exercises.engine.notebook import replace_solutions
from attncourse.grading import load_hidden_cases  # noqa: F401  (the grader's own loader, for the tests)

ROOT = Path(__file__).resolve().parents[1]


def skip_without_torch(ex):
    """An exercise on torch tensors, or whose reference is torch's own module, is skipped, on its
    own, where torch is not installed."""
    if any("torch" in line for line in ex.needs) or reference_needs_torch(ex):
        pytest.importorskip("torch")


def reference_needs_torch(ex) -> bool:
    """Whether the exercise's torch tensors or its reference need torch."""
    import inspect

    if any("torch" in line for line in ex.needs) or ex.array_kind == "torch":
        return True
    try:
        return "import torch" in inspect.getsource(ex.reference)
    except (OSError, TypeError):
        return False


def stub_function(ex):
    """The student version's function: the stub (or the bug) in place of the solution."""
    namespace: dict = {}
    exec("\n".join(ex.needs), namespace)
    exec(replace_solutions(ex.solution, ex.student_stub()), namespace)
    return namespace[ex.function]
