"""Grades in the files an LMS imports: ``lms/canvas.csv`` and ``lms/moodle.csv``.

* Canvas (Grades > Import): the columns ``Student``, ``ID``, ``SIS User ID``, ``SIS Login ID``,
  ``Section`` and one column per assignment, named ``ASSIGNMENT`` (Canvas matches a new name to
  a new assignment, ``Name (12345)`` to an existing one); the second row is ``Points Possible``.
  Canvas's import finds a student by ``ID`` (Canvas's user id), else by ``SIS User ID``, else by
  name.  Each column holds one kind of id: ``ID`` only Canvas user ids (the ``USERID`` of its
  download names, or the roster's ``canvas_id``), ``SIS User ID`` only the roster's ``id`` (the
  institution's student number); a row with neither is left out and listed.
* Moodle (assignment > Grading action > Upload grading worksheet): the columns of the worksheet
  Moodle itself offers, ``Identifier`` (``Participant ID``: the ``ID`` of Moodle's download
  names, or the roster's ``moodle_id``), ``Full name``, ``Email address``, ``Status``, ``Grade``,
  ``Maximum Grade``, ``Grade can be changed``, ``Last modified (submission)``,
  ``Last modified (grade)`` and ``Feedback comments``.  Moodle reads ``Identifier``, ``Grade``
  and ``Feedback comments``.

A missing student scores 0 in both (the row says ``missing``); the grade is the total after any
late penalty; numbers are written plainly; names that are not UTF-8 are written with ``\\xNN``.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Dict, List

from ..exercises.engine.check import _fmt_points
from ..exercises.engine.registry import Exercise
from .gradebook import csv_cell, display_name
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


def lms_id(sg: StudentGrade, lms: str) -> str:
    """The LMS's own id of the student (from its download names, or the roster's ``LMS_id``)."""
    who = sg.identity
    if who.get("lms") == lms and who.get("lms_id"):
        return str(who["lms_id"])
    return str(who.get(f"{lms}_id") or "")


def _text(value: object) -> str:
    return csv_cell(display_name(str(value or "")))


def _comment(sg: StudentGrade, out_of: int, feedback: str) -> str:
    parts = [f"{_fmt_points(sg.total)} / {out_of} points ({sg.status})"]
    if sg.penalty.get("percent"):
        parts.append(f"late penalty {sg.penalty['percent']:g}% of {_fmt_points(sg.earned)}")
    parts += [f"{g.exercise.id}: {_fmt_points(g.earned)}/{g.exercise.points}" for g in sg.grades]
    if sg.status != "ok" and sg.notes:
        parts.append(sg.notes[0])
    parts.append(f"details: {feedback}")
    return display_name("; ".join(parts))


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
            sid = lms_id(sg, lms)
            sis = str(sg.identity.get("id") or "") if lms == "canvas" else ""
            if not sid and not sis:
                left_out.append(display_name(sg.student))
                continue
            name = _text(sg.identity.get("name") or sg.student)
            if lms == "canvas":
                rows.append([name, _text(sid), _text(sis), "", "", _fmt_points(sg.total)])
            else:
                rows.append(
                    [
                        f"Participant {_text(sid)}",
                        name,
                        _text(sg.identity.get("email")),
                        "No submission" if sg.status == "missing" else "Submitted for grading",
                        _fmt_points(sg.total),
                        f"{out_of:.2f}",
                        "Yes",
                        "",
                        "",
                        csv_cell(_comment(sg, out_of, files.get(sg.student, ""))),
                    ]
                )
        path = folder / f"{lms}.csv"
        with open(path, "w", newline="", encoding="utf-8", errors="backslashreplace") as f:
            writer = csv.writer(f)
            if lms == "canvas":
                writer.writerow([*CANVAS_COLUMNS, assignment])
                writer.writerow(["Points Possible", "", "", "", "", out_of])
            else:
                writer.writerow(MOODLE_COLUMNS)
            writer.writerows(rows)
        if left_out and rows:
            what = "Canvas user id or roster id" if lms == "canvas" else "Moodle participant id"
            messages.append(
                f"{path}: {len(left_out)} row(s) left out, with no {what} (use --roster): "
                + ", ".join(left_out[:10])
                + (" ..." if len(left_out) > 10 else "")
            )
    return messages
