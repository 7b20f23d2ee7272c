"""Grades in the files an LMS imports: ``lms/canvas.csv`` and ``lms/moodle.csv``.

* Canvas (Grades > Import): the columns ``Student``, ``ID``, ``SIS User ID``, ``SIS Login ID``,
  ``Section`` and one column per assignment, named ``ASSIGNMENT`` (Canvas matches a new name to
  a new assignment, ``Name (12345)`` to an existing one); the second row is ``Points Possible``.
  Canvas finds the student by ``ID`` (its user id: the ``USERID`` of its download names, or the
  roster's id), so rows without one are left out and listed.
* Moodle (assignment > Grading action > Upload grading worksheet): the columns of the worksheet
  Moodle itself offers, ``Identifier`` (``Participant ID``: the ``ID`` of Moodle's download
  names, or the roster's id), ``Full name``, ``Email address``, ``Status``, ``Grade``,
  ``Maximum Grade``, ``Grade can be changed``, ``Last modified (submission)``,
  ``Last modified (grade)`` and ``Feedback comments``.  Moodle reads ``Identifier``, ``Grade``
  and ``Feedback comments``.

A missing student scores 0 in both (the row says ``missing``); numbers are written plainly.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Dict, List

from ..exercises._check import _fmt_points
from ..exercises._registry import Exercise
from .marking import StudentGrade

__all__ = ["CANVAS_COLUMNS", "MOODLE_COLUMNS", "write_lms_exports"]

CANVAS_COLUMNS = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")
MOODLE_COLUMNS = (
    "Identifier",
    "Full name",
    "Email address",
    "Status",
    "Grade",
    "Maximum Grade",
    "Grade can be changed",
    "Last modified (submission)",
    "Last modified (grade)",
    "Feedback comments",
)


def _lms_id(sg: StudentGrade, lms: str) -> str:
    who = sg.identity
    if who.get("lms") == lms and who.get("lms_id"):
        return str(who["lms_id"])
    return str(who.get("id") or "")


def _comment(sg: StudentGrade, out_of: int, feedback: str) -> str:
    parts = [f"{_fmt_points(sg.total)} / {out_of} points ({sg.status})"]
    parts += [f"{g.exercise.id}: {_fmt_points(g.earned)}/{g.exercise.points}" for g in sg.grades]
    if sg.status != "ok" and sg.notes:
        parts.append(sg.notes[0])
    parts.append(f"details: {feedback}")
    return "; ".join(parts)


def write_lms_exports(
    folder: Path,
    results: List[StudentGrade],
    exercises: List[Exercise],
    files: Dict[str, str],
    assignment: str,
) -> List[str]:
    """Write ``canvas.csv`` and ``moodle.csv`` in ``folder``; returns what to tell the instructor."""
    out_of = sum(ex.points for ex in exercises)
    folder.mkdir(parents=True, exist_ok=True)
    messages = []
    for lms in ("canvas", "moodle"):
        rows, left_out = [], []
        for sg in results:
            sid = _lms_id(sg, lms)
            if not sid:
                left_out.append(sg.student)
                continue
            name = str(sg.identity.get("name") or sg.student)
            if lms == "canvas":
                rows.append([name, sid, "", "", "", _fmt_points(sg.total)])
            else:
                rows.append(
                    [
                        f"Participant {sid}",
                        name,
                        str(sg.identity.get("email") or ""),
                        "No submission" if sg.status == "missing" else "Submitted for grading",
                        _fmt_points(sg.total),
                        f"{out_of:.2f}",
                        "Yes",
                        "",
                        "",
                        _comment(sg, out_of, files.get(sg.student, "")),
                    ]
                )
        path = folder / f"{lms}.csv"
        with open(path, "w", newline="", encoding="utf-8") as f:
            writer = csv.writer(f)
            if lms == "canvas":
                writer.writerow([*CANVAS_COLUMNS, assignment])
                writer.writerow(["Points Possible", "", "", "", "", out_of])
            else:
                writer.writerow(MOODLE_COLUMNS)
            writer.writerows(rows)
        if left_out and rows:
            messages.append(
                f"{path}: {len(left_out)} row(s) left out, with no {lms.capitalize()} id (use --roster): "
                + ", ".join(left_out[:10])
                + (" ..." if len(left_out) > 10 else "")
            )
    return messages
