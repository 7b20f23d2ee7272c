"""``grade --update RESULTS``: regrade some submissions into an existing results folder.

The given submissions are graded on the chapters, the resubmission rule and the late policy the
results folder was graded with.  Each is one of:

* one student's folder: an LMS's participant folder (``Full Name_ID_assignsubmission_file/``), or a
  folder named as a student already graded (``jane/``): its notebooks are that student's;
* one student's notebook: a file with an LMS's download name, a file named as a student already
  graded (``jane.ipynb``), or any notebook inside one student's folder as above (the folder names
  the student: ``Jane Doe_208_assignsubmission_file/06_masked_attention.ipynb``);
* a folder of submissions laid out as for ``grade``.

Each regraded submission replaces the row of the student it belongs to, found by its name, the
roster's id, the LMS's id, or the roster (the one given, else the one the folder was graded with)
matching its name to a row's.  A submission that belongs to no student already graded is added
only when the roster holds that student; otherwise the update refuses, names the form it wants,
and changes nothing.
Every output (``gradebook.csv``, ``results.json``, ``feedback/``, ``lms/``, ``gradescope/``) is
then written again from the whole class, so the files agree and each student has one row.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence

from .batch import Graded, grade_submissions, write_outputs
from .gradebook import display_name, read_students
from .late import LatePolicy, parse_penalty
from .limits import GradingError, Limits
from .marking import StudentGrade
from .roster import Student, match_roster, parse_lms_name
from .submissions import Submission, discover, submission_of_file, submission_of_folder

__all__ = ["update"]


def update(
    bundle_dir: Path,
    paths: Sequence[Path],
    results_dir: Path,
    *,
    limits: Optional[Limits] = None,
    jobs: Optional[int] = None,
    chapters: Optional[Sequence[str]] = None,
    sandbox: str = "auto",
    python: Optional[str] = None,
    roster: Optional[List[Student]] = None,
    resubmissions: Optional[str] = None,
    late: Optional[LatePolicy] = None,
    log: Callable[[str], None] = print,
) -> List[StudentGrade]:
    """Regrade the submissions at ``paths`` into ``results_dir`` (made by ``grade``)."""
    results_dir = Path(results_dir)
    book, summary_path = results_dir / "gradebook.csv", results_dir / "results.json"
    if not book.is_file() or not summary_path.is_file():
        raise GradingError(f"{results_dir} holds no gradebook.csv and results.json: grade into it first")
    summary = json.loads(summary_path.read_text(encoding="ascii"))
    try:
        old = read_students(summary)
    except (ValueError, KeyError) as e:
        raise GradingError(f"{summary_path}: {e.args[0] if e.args else e}") from None
    if roster is None and summary.get("roster", {}).get("list"):
        roster = [Student.from_dict(s) for s in summary["roster"]["list"]]
    if late is None and summary.get("late_policy"):
        kept = summary["late_policy"]
        try:
            late = parse_penalty(kept.get("spec") or None, kept.get("due"))
        except ValueError as e:
            raise GradingError(f"{summary_path}: late_policy: {e}") from None
    submissions: List[Submission] = []
    singles = Path(tempfile.mkdtemp(prefix="attncourse-single-"))
    try:
        graded = {sg.student for sg in old} | {parse_lms_name(sg.student).name for sg in old}
        for path in map(Path, paths):
            if path.is_dir():
                if _names_student(path, graded):
                    submissions.append(submission_of_folder(path))
                else:
                    submissions += discover(str(path))[0]
            elif path.is_file() and path.name.endswith(".ipynb"):
                sub = submission_of_file(path, singles)
                if sub.lms is None and _names_student(path.parent, graded):
                    owner = parse_lms_name(path.parent.name, folder=True)
                    sub.student, sub.lms = owner.key, owner if owner.lms else None
                submissions.append(sub)
            else:
                raise GradingError(f"{path} is neither a notebook (.ipynb) nor a folder of submissions")
        if not submissions:
            raise GradingError("no submission to regrade in " + ", ".join(map(str, paths)))
        run = grade_submissions(
            bundle_dir,
            submissions,
            [singles, *(p for p in map(Path, paths) if p.is_dir())],
            results_dir,
            limits=limits,
            jobs=jobs,
            chapters=chapters or summary.get("chapters"),
            sandbox=sandbox,
            python=python,
            roster=roster,
            resubmissions=resubmissions or summary.get("resubmissions", "latest"),
            late=late,
            roster_missing=False,
            log=log,
        )
    finally:
        shutil.rmtree(singles, ignore_errors=True)
    if [ex.id for ex in run.exercises] != summary.get("exercises"):
        raise GradingError(
            f"{results_dir} was graded on other exercises ({', '.join(summary.get('exercises') or [])}; now "
            f"{', '.join(ex.id for ex in run.exercises)}): regrade everyone instead"
        )
    merged, replaced = _merge(old, run.results, log, roster is not None)
    summary.setdefault("updates", []).append(
        {
            "at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "students": sorted(replaced),
            "seconds": run.summary["seconds"],
        }
    )
    if roster is not None:
        summary["roster"] = {**summary.get("roster", {}), "list": [s.as_dict() for s in roster]}
    if late is not None:
        summary["late_policy"] = late.as_dict()

    def told(line: str) -> None:  # the whole-run timing line would be the first run's: left out
        if not line.startswith("graded "):
            log(line)

    write_outputs(
        results_dir, Graded(merged, run.exercises, [], summary), told, summary.get("assignment", "")
    )
    log(f"regraded {len(run.results)} student(s) into {book}")
    return run.results


def _names_student(folder: Path, graded: set) -> bool:
    """True when ``folder`` is one student's: an LMS participant folder, or named as a graded student."""
    ident = parse_lms_name(folder.name, folder=True)
    return bool(ident.lms) or folder.name in graded


WANTED = (
    "give the student's own notebook or folder: the LMS's participant folder (e.g. "
    "'Jane Doe_208_assignsubmission_file/', or a notebook inside it), a Canvas download name, or a "
    "file or folder named as the student's row (e.g. jane.ipynb for the row jane)"
)


def _merge(
    old: List[StudentGrade], new: List[StudentGrade], log: Callable[[str], None], roster: bool = False
) -> tuple:
    """The class with each regraded student in place of their old row; and the rows replaced.
    ``GradingError`` (nothing changed) for a submission that belongs to no row and no roster student."""
    rows: Dict[str, StudentGrade] = {sg.student: sg for sg in old}
    by_id = {str(sg.identity["id"]): sg.student for sg in old if sg.identity.get("id")}
    by_lms = {
        (sg.identity.get("lms"), str(sg.identity.get("lms_id"))): sg.student
        for sg in old
        if sg.identity.get("lms") and sg.identity.get("lms_id")
    }
    # the old rows as a roster, so that "jane.ipynb" finds the row "Jane Doe_208"
    pseudo = [
        Student(
            sg.student,
            str(sg.identity.get("name") or ""),
            str(sg.identity.get("email") or ""),
            [sg.student, parse_lms_name(sg.student).name or sg.student],
        )
        for sg in old
    ]
    replaced = []
    for sg in new:
        key = sg.student if sg.student in rows else None
        key = key or by_id.get(str(sg.identity.get("id") or "\0"))
        key = key or by_lms.get((sg.identity.get("lms"), str(sg.identity.get("lms_id"))))
        if key is None:
            found = match_roster([(sg.student, parse_lms_name(sg.student))], pseudo)
            key = found.by_key[sg.student].id if sg.student in found.by_key else None
        if key is None:
            if not (roster and sg.identity.get("id")):
                raise GradingError(
                    f"{display_name(sg.student)} ({', '.join(display_name(n) for n in sg.notebooks) or 'no notebook'}) "
                    f"matches no student already graded{' nor of the roster' if roster else ''}: nothing was "
                    f"changed; {WANTED}"
                )
            log(f"{display_name(sg.student)} is on the roster but had no row: added")
            key = sg.student
        else:
            previous = rows[key]
            sg.identity = {
                **previous.identity,
                **{k: v for k, v in sg.identity.items() if v not in ("", None)},
            }
            if key != sg.student:
                sg.notes.append(f"regraded from {display_name(sg.student)}")
                sg.student = key
        rows[key] = sg
        replaced.append(key)
    return sorted(rows.values(), key=lambda r: r.student), replaced
