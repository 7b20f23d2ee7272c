"""Gradescope's autograder ``results.json`` for one student (``gradescope_results``).

``score``, ``output`` (the status and its reason first) and ``tests``: one per exercise with
``name``, ``score``, ``max_score``, ``output`` (the public cases) and ``visibility: visible``; one per
exercise with hidden cases (``visibility: after_published``, no points of their own: the exercise's
test has them); and, for late work, a test ``Late penalty`` whose negative score is the penalty, so
that the tests add up to ``score`` and the student reads why.

Kept apart from ``gradescope.py`` (the autograder, which runs ``batch``) so that ``batch`` writes
these files without importing the autograder: the imports go one way.
"""

from __future__ import annotations

from typing import List

from ..exercises.engine.check import _fmt_points
from .marking import ExerciseGrade, StudentGrade

__all__ = ["gradescope_results"]


def _case_lines(g: ExerciseGrade, hidden: bool) -> List[str]:
    lines = []
    for c in g.cases:
        if c.hidden != hidden:
            continue
        lines.append(f"{'✓' if c.passed else '✗'} {c.name}" + ("" if c.passed else f": {c.message}"))
    return lines


def gradescope_results(sg: StudentGrade, out_of: int, extra: str = "") -> dict:
    """One student's marks as Gradescope's autograder ``results.json``."""
    reason = f": {sg.notes[0]}" if sg.status != "ok" and sg.notes else ""
    output = [f"Status: {sg.status}{reason}", f"Total: {_fmt_points(sg.total)} / {out_of} points"]
    if extra:
        output.append(extra)
    output += [f"- {n}" for n in (sg.notes[1:] if reason else sg.notes) + sg.details]
    tests = []
    for g in sg.grades:
        ex = g.exercise
        name = f"Exercise {ex.number} · {ex.title} ({ex.id})"
        public = _case_lines(g, False)
        tests.append(
            {
                "name": name,
                "score": g.earned,
                "max_score": ex.points,
                "output": "\n".join(public) or "no public cases",
                "visibility": "visible",
            }
        )
        hidden = _case_lines(g, True)
        if hidden:
            tests.append(
                {
                    "name": f"{name}: hidden cases",
                    "score": 0,
                    "max_score": 0,
                    "output": "\n".join(hidden) + "\n(counted in the exercise's score above)",
                    "visibility": "after_published",
                }
            )
    if sg.penalty.get("percent"):
        lost = round(sg.earned - sg.total, 2)
        tests.append(
            {
                "name": "Late penalty",
                "score": -lost,
                "max_score": 0,
                "output": f"-{_fmt_points(lost)} points ({sg.penalty['percent']:g}% of "
                f"{_fmt_points(sg.earned)}): {sg.penalty.get('why', 'late')}",
                "visibility": "visible",
            }
        )
        output.insert(2, f"Late penalty: -{_fmt_points(lost)} points ({sg.penalty.get('why', 'late')})")
    return {
        "score": sg.total,
        "output": "\n".join(output),
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "tests": tests,
    }
