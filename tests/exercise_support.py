"""Helpers shared by the exercise tests: the hidden cases in grading/, and the student's stub."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Callable, Dict, List

from attncourse.exercises import Case
from attncourse.exercises.notebook import replace_solutions

ROOT = Path(__file__).resolve().parents[1]


def load_hidden_cases(folder: Path = ROOT / "grading") -> Dict[str, Callable[[], List[Case]]]:
    """``HIDDEN`` of every ``grading/hidden_*.py``, merged (exercise id -> case maker)."""
    merged: Dict[str, Callable[[], List[Case]]] = {}
    for path in sorted(Path(folder).glob("hidden_*.py")):
        spec = importlib.util.spec_from_file_location(f"exercise_tests_{path.stem}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        for ex_id, maker in module.HIDDEN.items():
            assert ex_id not in merged, f"{path.name}: hidden cases for {ex_id} are defined twice"
            merged[ex_id] = maker
    return merged


def stub_function(ex):
    """The student version's function: the stub (or the bug) in place of the solution."""
    namespace: dict = {}
    exec("\n".join(ex.needs), namespace)
    exec(replace_solutions(ex.solution, ex.student_stub()), namespace)
    return namespace[ex.function]
