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

from . import bugs, ch00, ch01, ch02, ch03, ch04, ch05, ch06, ch07, ch08, ch09, ch10, ch11, ch12, ch13  # noqa: F401,E501  (they register the exercises)
from ._check import CheckResult, ScoreReport, check, reset, score
from ._registry import CHAPTERS, Case, Diagnosis, Exercise, all_exercises, get, grouped
from .notebook import chapter_cells, exercise_cells, setup_cell, summary_cell

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
