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
  and ``Feedback comments``, finding the columns by their English names: the worksheet upload
  works for a Moodle user whose language is English.  In any language, the gradebook's own import
  (Grades > Import > CSV file) takes the same file, mapping ``Email address`` to the user's e-mail
  and ``Grade`` to the assignment.
* Moodle's feedback files (Submissions > Grading action > Upload multiple feedback files in a zip):
  ``moodle_feedback.zip`` holds one folder per participant, ``Full Name_ID_assignfeedback_file/``
  with ``feedback.txt`` inside, the form Moodle's importer reads (``mod/assign/feedback/file/
  importziplib.php``: the second ``_``-separated part of a folder name is the participant id, so
  ``_`` in a name is written as a space).

A missing student scores 0 in both (the row says ``missing``); the grade is the total after any
late penalty; numbers are written plainly; names that are not UTF-8 are written with ``\\xNN``;
the CSVs start with a UTF-8 byte-order mark, so that Excel opens them right (Canvas and Moodle
skip it).
"""

from __future__ import annotations

import csv
import zipfile
from pathlib import Path
from typing import Dict, List

from ..exercises.engine.check import _fmt_points
from ..exercises.engine.registry import Exercise
from .gradebook import csv_cell, display_name
from .marking import StudentGrade

__all__ = ["CANVAS_COLUMNS", "MOODLE_COLUMNS", "write_lms_exports", "write_feedback_zip", "FEEDBACK_FILE"]

FEEDBACK_FILE = "feedback.txt"

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


def _comment(sg: StudentGrade, out_of: int) -> str:
    parts = [f"{_fmt_points(sg.total)} / {out_of} points ({sg.status})"]
    if sg.penalty.get("percent"):
        parts.append(f"late penalty {sg.penalty['percent']:g}% of {_fmt_points(sg.earned)}")
    parts += [f"{g.exercise.id}: {_fmt_points(g.earned)}/{g.exercise.points}" for g in sg.grades]
    if sg.status != "ok" and sg.notes:
        parts.append(sg.notes[0])
    if sg.status != "missing":
        parts.append(f"details in the feedback file {FEEDBACK_FILE}")
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
                        csv_cell(_comment(sg, out_of)),
                    ]
                )
        path = folder / f"{lms}.csv"
        with open(path, "w", newline="", encoding="utf-8-sig", errors="backslashreplace") as f:
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


def write_feedback_zip(
    path: Path, results: List[StudentGrade], feedback_dir: Path, files: Dict[str, str]
) -> int:
    """``moodle_feedback.zip``: each student's feedback file in ``Full Name_ID_assignfeedback_file/``
    (Moodle 4.1's form; its importer reads the participant id from the folder name).  Students
    with no Moodle participant id, or no submission, get none; returns how many were written."""
    n = 0
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for sg in results:
            pid = lms_id(sg, "moodle")
            if not pid.isdigit() or sg.status == "missing" or sg.student not in files:
                continue
            name = (
                display_name(str(sg.identity.get("name") or sg.student)).replace("_", " ").replace("/", " ")
            )
            text = (feedback_dir / files[sg.student]).read_bytes()
            z.writestr(f"{name.strip() or 'Participant'}_{pid}_assignfeedback_file/{FEEDBACK_FILE}", text)
            n += 1
    return n
