"""Graded exercises with instant feedback.

In a chapter notebook::

    from attncourse.exercises import check, score

    # Exercise 1.2: stable softmax (2 points)
    def stable_softmax(x):
        ...

    check("ch01.stable_softmax", stable_softmax)   # points, cases passed, what to fix
    score("ch01")                                  # the chapter's total so far

``check`` runs the exercise's public cases; instructors grade with hidden cases kept outside the
package (``attncourse assign`` / ``attncourse grade``, see the book's instructor page).
"""

from __future__ import annotations

from . import chapters  # noqa: F401  (importing them registers every chapter's exercises)
from .engine.check import CheckResult, ScoreReport, check, reset, score
from .engine.notebook import chapter_cells, exercise_cells, setup_cell, summary_cell
from .engine.registry import CHAPTERS, Case, Diagnosis, Exercise, all_exercises, get, grouped

__all__ = [
    "check",
    "score",
    "reset",
    "CheckResult",
    "ScoreReport",
    "Case",
    "grouped",
    "Diagnosis",
    "Exercise",
    "CHAPTERS",
    "get",
    "all_exercises",
    "exercise_cells",
    "chapter_cells",
    "setup_cell",
    "summary_cell",
]
