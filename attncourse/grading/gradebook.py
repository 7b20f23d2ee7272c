"""Writing the results: ``gradebook.csv``, ``results.json`` and ``feedback/<file>.txt``.

Student names come from file and folder names, so they can hold anything a file system allows:
bytes that are not UTF-8 (Python keeps them as lone surrogates), spaces, a leading ``=`` or ``.``.

* ``results.json`` keeps every name exactly (JSON ``\\udcxx`` escapes), with the feedback file
  that belongs to it;
* ``gradebook.csv`` shows names readably (an undecodable byte as ``\\xff``) and puts a ``'``
  before any cell a spreadsheet would run as a formula (``=``, ``+``, ``-``, ``@``, tab, CR);
* feedback file names are ASCII letters, digits, ``.``, ``_`` and ``-``; a name that had to be
  changed for that, or that would clash with another one on a case-insensitive file system, gets
  a short hash of the original name, so every student has a file of their own.
"""

from __future__ import annotations

import csv
import hashlib
import json
import re
from pathlib import Path
from typing import Dict, List, Sequence

from ..exercises.engine.check import _fmt_points, _width
from ..exercises.engine.compare import CaseResult
from ..exercises.engine.registry import Exercise, get
from ..i18n import retranslate, tr, using
from .marking import ExerciseGrade, StudentGrade

__all__ = [
    "display_name",
    "csv_cell",
    "feedback_names",
    "feedback_text",
    "write_gradebook",
    "write_results",
    "write_feedback",
    "read_students",
    "heading",
]

_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")
_WINDOWS_RESERVED = {"CON", "PRN", "AUX", "NUL"} | {f"{p}{i}" for p in ("COM", "LPT") for i in range(1, 10)}


def display_name(name: str) -> str:
    """``name`` as printable UTF-8: undecodable bytes (lone surrogates) become ``\\xNN``.

    >>> display_name("b\\udcf6b")
    'b\\\\xf6b'
    """
    return name.encode("utf-8", "surrogateescape" if _only_escapes(name) else "backslashreplace").decode(
        "utf-8", "backslashreplace"
    )


def _only_escapes(name: str) -> bool:
    # surrogateescape can encode U+DC80..U+DCFF only; other lone surrogates are shown as \udxxx
    return all(not 0xD800 <= ord(ch) <= 0xDFFF or 0xDC80 <= ord(ch) <= 0xDCFF for ch in name)


def csv_cell(text: str) -> str:
    """A cell a spreadsheet shows as text, never runs as a formula.

    >>> csv_cell('=HYPERLINK("http://x", "y")'), csv_cell("alice")
    ('\\'=HYPERLINK("http://x", "y")', 'alice')
    """
    return "'" + text if text.startswith(_FORMULA_START) else text


def feedback_names(students: Sequence[str]) -> Dict[str, str]:
    """A distinct, portable file name (without ``.txt``) for every student name.

    >>> names = feedback_names(["a b", "a_b", "../x", "Alice", "alice"])
    >>> names["a_b"], names["a b"].startswith("a_b-"), names["../x"].startswith("_x-")
    ('a_b', True, True)
    >>> len(set(n.lower() for n in names.values()))
    5
    """
    safe = {}
    for name in students:
        s = _UNSAFE.sub("_", name).lstrip(".")[:80] or "student"
        safe[name] = s
    folded: Dict[str, int] = {}  # names kept as they are, case-folded: Alice and alice would clash
    for name, s in safe.items():
        if s == name:
            folded[s.lower()] = folded.get(s.lower(), 0) + 1
    out: Dict[str, str] = {}
    for name, s in safe.items():
        if s != name or folded[s.lower()] > 1 or s.split(".")[0].upper() in _WINDOWS_RESERVED:
            digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:8]
            s = f"{s}-{digest}"
        out[name] = s
    taken = set()
    for name in students:  # a clash left after hashing would need two equal hashes: count on
        s, k = out[name], 2
        while s.lower() in taken:
            s, k = f"{out[name]}-{k}", k + 1
        out[name] = s
        taken.add(s.lower())
    return out


NOTHING_RUN = ("missing", "ambiguous", "error", "malformed", "not_a_notebook", "other_chapter")


def heading(sg: StudentGrade) -> str:
    """Who the feedback is for: the roster's (or the LMS's) name when known, else the file's."""
    name = str(sg.identity.get("name") or "")
    key = display_name(sg.student)
    if name and sg.identity.get("id"):
        return f"{display_name(name)} ({display_name(str(sg.identity['id']))})"
    return display_name(name) if name and name != sg.student else key


def feedback_text(sg: StudentGrade, out_of: int) -> str:
    """The feedback a student reads: the status and its reason first, then points per exercise."""
    with using(sg.language):
        return _feedback_text(sg, out_of)


def _feedback_text(sg: StudentGrade, out_of: int) -> str:
    name = heading(sg)
    title = tr("Feedback for {name}", name=name)
    lines = [title, "=" * _width(title), ""]
    reason = display_name(shown_note(sg.notes[0])) if sg.status != "ok" and sg.notes else ""
    status = tr("Status: {status}", status=sg.status)  # the status is a keyword, as in the gradebook
    lines.append(status + (f": {reason}" if reason else ""))
    total = tr("Total: {total} / {out_of} points", total=_fmt_points(sg.total), out_of=out_of)
    if sg.penalty.get("percent"):
        total += tr(" ({earned} before the late penalty)", earned=_fmt_points(sg.earned))
    lines.append(total)
    if sg.penalty.get("percent"):
        lines.append(
            tr(
                "Late penalty: {percent}% of the points earned: {why}",
                percent=f"{sg.penalty['percent']:g}",
                why=sg.penalty["why"],
            )
        )
    elif sg.penalty:
        lines.append(tr("Late: {why}", why=sg.penalty["why"]))
    notebooks = ", ".join(display_name(n) for n in sg.notebooks) or tr("(none)")
    graded = tr("Notebooks graded: {names}") if len(sg.notebooks) > 1 else tr("Notebook graded: {names}")
    lines.append(graded.format(names=notebooks))
    lines.append("")
    notes = sg.notes[1:] if reason else sg.notes
    if sg.status in NOTHING_RUN:
        lines.append(
            tr("No exercise was graded ({n} exercises, {out_of} points).", n=len(sg.grades), out_of=out_of)
        )
        lines.append("")
    else:
        for g in sg.grades:
            lines += _exercise_lines(g, sg.notebooks)
    if notes or sg.details:
        lines.append(tr("Notes"))
        lines += [f"  - {display_name(shown_note(n))}" for n in notes + sg.details]
        lines.append("")
    return "\n".join(lines)


_TAGGED = re.compile(r"^([^:\n]+\.ipynb): (.*)$", re.DOTALL)


def shown_note(note: str) -> str:
    """A grader's note (worded in English, for the instructor) in the feedback's language."""
    m = _TAGGED.match(note)
    if m:  # "name.ipynb: note" when a student handed in several notebooks
        return f"{m.group(1)}: {retranslate(m.group(2))}"
    return retranslate(note)


def _exercise_lines(g: ExerciseGrade, notebooks: Sequence[str] = ()) -> List[str]:
    ex = g.exercise
    passed = sum(c.passed for c in g.cases)
    title = tr("Exercise {number} · {title}", number=ex.number, title=tr(ex.title))
    lines = [f"{title} ({ex.id}): {_fmt_points(g.earned)} / {ex.points}"]
    if g.notebook and len(notebooks) > 1:
        lines.append("  " + tr("from {name}", name=display_name(g.notebook)))
    if g.cases and passed == len(g.cases) and not g.shortcut:
        lines.append("  " + tr("all {n} cases passed", n=len(g.cases)))
    elif g.cases and all(c.status == "not attempted" for c in g.cases):
        lines.append("  " + tr("not attempted"))
    else:
        lines.append("  " + tr("{n} of {total} cases passed", n=passed, total=len(g.cases)))
        last = None
        prefix = tr("hidden: {name}", name="")
        for c in g.cases:
            if not c.passed:
                label = (
                    c.name if c.name.startswith(prefix) or not c.hidden else tr("hidden: {name}", name=c.name)
                )
                msg = tr("same problem as above") if c.message == last else c.message
                lines.append("  ✗ " + tr("{case}: {message}", case=label, message=msg))
                last = c.message
    lines.append("")
    return lines


IDENTITY = ("id", "name", "email", "late")
LATE_COLUMNS = ("earned", "days_late", "late_penalty")


def write_gradebook(
    path: Path, results: List[StudentGrade], exercises: List[Exercise], files: Dict[str, str]
) -> None:
    """``gradebook.csv``: a points-possible row, then one row per student (roster order kept)."""
    out_of = sum(ex.points for ex in exercises)
    with open(path, "w", newline="", encoding="utf-8-sig", errors="backslashreplace") as f:
        writer = csv.writer(f)
        writer.writerow(
            ["student", *IDENTITY]
            + [ex.id for ex in exercises]
            + [*LATE_COLUMNS, "total", "out_of", "status", "feedback", "notes"]
        )
        writer.writerow(
            ["Points Possible", "", "", "", ""]
            + [ex.points for ex in exercises]
            + [out_of, "", "", out_of, out_of, "", "", ""]
        )
        for sg in results:
            who = sg.identity
            writer.writerow(
                [csv_cell(display_name(sg.student))]
                + [csv_cell(display_name(str(who.get(k, "")))) for k in ("id", "name", "email")]
                + ["late" if who.get("late") else ""]
                + [_fmt_points(g.earned) for g in sg.grades]
                + [
                    _fmt_points(sg.earned),
                    "" if sg.penalty.get("days_late") is None else f"{sg.penalty['days_late']:g}",
                    f"{sg.penalty['percent']:g}%" if sg.penalty.get("percent") else "",
                    _fmt_points(sg.total),
                    out_of,
                    sg.status,
                    f"feedback/{files[sg.student]}",
                    csv_cell(display_name("; ".join(sg.notes))),
                ]
            )


def write_feedback(folder: Path, results: List[StudentGrade], exercises: List[Exercise]) -> Dict[str, str]:
    """One ``.txt`` per student in ``folder``; returns student -> file name."""
    out_of = sum(ex.points for ex in exercises)
    names = feedback_names([sg.student for sg in results])
    files = {}
    for sg in results:
        files[sg.student] = f"{names[sg.student]}.txt"
        text = feedback_text(sg, out_of)
        (folder / files[sg.student]).write_text(text, encoding="utf-8", errors="backslashreplace")
    return files


def write_results(path: Path, summary: dict, results: List[StudentGrade], files: Dict[str, str]) -> None:
    """``results.json``: ``summary`` (sandbox, limits, timing) and every student, names kept exactly."""
    summary = dict(summary)
    summary["students"] = [
        {
            "student": sg.student,
            "feedback": f"feedback/{files[sg.student]}",
            "notebooks": sg.notebooks,
            "status": sg.status,
            **{k: v for k, v in sg.identity.items() if v not in ("", None, False)},
            "total": sg.total,
            "earned": sg.earned,
            **({"late_penalty": sg.penalty} if sg.penalty else {}),
            "seconds": sg.seconds,
            "cpu_seconds": sg.cpu_seconds,
            "exercises": {
                g.exercise.id: {
                    "earned": g.earned,
                    "passed": sum(c.passed for c in g.cases),
                    "cases": len(g.cases),
                    **({"shortcut": g.shortcut} if g.shortcut else {}),
                    "notebook": g.notebook,
                    "results": [
                        {
                            "name": c.name,
                            "passed": c.passed,
                            "status": c.status,
                            "message": c.message,
                            "hidden": c.hidden,
                            "group": c.group,
                            "diagnosis": c.diagnosis,
                        }
                        for c in g.cases
                    ],
                }
                for g in sg.grades
            },
            "notes": sg.notes,
            "details": sg.details,
            "flags": sg.flags,
            "language": sg.language,
        }
        for sg in results
    ]
    # ensure_ascii: a name with undecodable bytes is kept as \\udcxx escapes, and the file stays valid
    path.write_text(json.dumps(summary, indent=1, ensure_ascii=True) + "\n", encoding="ascii")


def read_students(summary: dict) -> List[StudentGrade]:
    """The students of a ``results.json`` (as ``write_results`` wrote them), marks and notes whole:
    ``grade --update`` rewrites every output from them.  ``ValueError`` if the file is older."""
    out = []
    for s in summary.get("students", []):
        grades = []
        for ex_id, e in s["exercises"].items():
            if "results" not in e:
                raise ValueError("results.json was written by an older attncourse: grade everyone again")
            cases = [
                CaseResult(
                    c["name"],
                    bool(c["passed"]),
                    c.get("message", ""),
                    c.get("status", ""),
                    bool(c.get("hidden")),
                    "",
                    [],
                    c.get("group", ""),
                    c.get("diagnosis", ""),
                )
                for c in e["results"]
            ]
            grades.append(ExerciseGrade(get(ex_id), cases, e.get("notebook", ""), e.get("shortcut")))
        known = {"student", "feedback", "notebooks", "status", "total", "earned", "late_penalty", "seconds"}
        known |= {"cpu_seconds", "exercises", "notes", "details", "flags", "language"}
        out.append(
            StudentGrade(
                s["student"],
                list(s.get("notebooks", [])),
                s["status"],
                list(s.get("notes", [])),
                list(s.get("details", [])),
                grades,
                dict(s.get("seconds", {})),
                dict(s.get("cpu_seconds", {})),
                {k: v for k, v in s.items() if k not in known},
                dict(s.get("late_penalty", {})),
                list(s.get("flags", [])),
                str(s.get("language") or "en"),
            )
        )
    return out
