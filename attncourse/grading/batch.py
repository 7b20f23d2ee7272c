"""``grade``: find the submissions, run every notebook in the sandbox, write the marks.

A submission folder holds one entry per student: ``STUDENT.ipynb``, or a folder ``STUDENT/`` with
one or more ``*.ipynb`` directly inside it.  Whatever an entry holds, its student gets exactly one
row; a failure while grading one student becomes that student's ``error`` row, and the batch goes
on.  Notebooks are graded ``jobs`` at a time (default: one per core).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, List, Optional, Sequence, Tuple

from ..exercises.engine.registry import Exercise, get
from ..i18n import tr
from . import protocol
from .assignment import choose_chapters
from .conduct import suspicious_uses
from .gradebook import NOTHING_RUN, display_name, write_feedback, write_gradebook, write_results
from .gradescope_format import gradescope_results
from .handout import load_hidden_cases, read_manifest
from .jobs import Grader, remove_tree
from .late import LatePolicy
from .limits import GradingError, Limits
from .lms import write_feedback_zip, write_lms_exports
from .marking import NotebookRun, Prepared, StudentGrade, error_grade, prepare_cases, student_grade
from .roster import Student, match_roster, parse_lms_name
from .sandbox import find_sandbox
from .submissions import (
    MAX_NOTEBOOK_BYTES,
    Submission,
    choose_notebooks,
    discover,
    scan_all,
    submission_of_file,
)
from .summary import write_summary

__all__ = [
    "MAX_NOTEBOOK_BYTES",
    "Submission",
    "discover",
    "submission_of_file",
    "grade",
    "grade_submissions",
    "write_outputs",
]


def _bundle_exercises(manifest: dict) -> List[Exercise]:
    exercises = []
    for entry in manifest["exercises"]:
        ex_id = entry.get("id") if isinstance(entry, dict) else None
        try:
            exercises.append(get(ex_id))
        except KeyError:
            raise GradingError(
                f"the bundle lists {ex_id!r}, which this attncourse does not know "
                f"(the bundle was made by attncourse {manifest.get('attncourse_version')})"
            ) from None
    return exercises


def _chapter_cells(manifest: dict) -> Optional[Tuple[set, set]]:
    cells = manifest.get("cells")
    if not isinstance(cells, dict):
        return None  # a bundle made before it listed them: other cells run definitions only
    keys, ids = set(), set()
    for entry in cells.values():
        if isinstance(entry, dict):
            keys |= {k for k in entry.get("keys", []) if isinstance(k, str)}
            ids |= {k for k in entry.get("ids", []) if isinstance(k, str)}
    return keys, ids


def _handout_names(manifest: dict) -> dict:
    """Chapter -> the name of the notebook handed out for it."""
    out = {}
    for name, ids in (manifest.get("notebooks") or {}).items():
        for ex_id in ids if isinstance(ids, list) else []:
            try:
                out.setdefault(get(ex_id).chapter, name)
            except KeyError:
                pass
    return out


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def grade(
    bundle_dir: Path,
    submissions_dir: Path,
    out_dir: Path,
    *,
    limits: Optional[Limits] = None,
    jobs: Optional[int] = None,
    chapters: Optional[Sequence[str]] = None,
    sandbox: str = "auto",
    python: Optional[str] = None,
    force: bool = False,
    roster: Optional[List[Student]] = None,
    assignment: str = "",
    resubmissions: str = "latest",
    late: Optional[LatePolicy] = None,
    allow_unmatched: bool = False,
    log: Callable[[str], None] = print,
    progress: Optional[Callable[[StudentGrade, int, int], None]] = None,
) -> List[StudentGrade]:
    """Grade every submission in ``submissions_dir``; write the gradebook and feedback to ``out_dir``.

    When submissions and the roster do not match (a submission matches no student, or more than
    one), the run says so, writes no LMS import (``lms/``) and raises ``GradingError`` once the
    gradebook and ``summary.html`` are written, unless ``allow_unmatched``.

    The chapters graded are those of ``chapters`` (``--chapter``), else those held by most
    submissions (``assignment.choose_chapters``).  Of a student's resubmissions the latest counts
    (``resubmissions="best"``: each exercise from the notebook where it scores best); ``late``
    is the late-penalty policy.  ``python`` is the interpreter that runs the notebooks (default:
    this one); ``jobs`` the number of notebooks run at once (default: the number of cores).  Raises
    ``GradingError`` before writing anything when the bundle, the folders or the sandbox are not
    in order.
    """
    bundle_dir, submissions_dir, out_dir = Path(bundle_dir), Path(submissions_dir), Path(out_dir)
    single = submissions_dir.is_file() and submissions_dir.name.endswith(".ipynb")
    if not submissions_dir.is_dir() and not single:
        raise GradingError(f"{submissions_dir} is neither a folder of submissions nor a notebook")
    if _inside(os.path.realpath(out_dir), os.path.realpath(submissions_dir)):
        raise GradingError("OUT_DIR must not be inside SUBMISSIONS_DIR")
    if (out_dir / "gradebook.csv").exists() and not force:
        raise GradingError(f"{out_dir} already holds a gradebook; pass --force to replace it")
    scratch = Path(tempfile.mkdtemp(prefix="attncourse-single-"))
    try:
        if single:  # one notebook: one student
            submissions, ignored = [submission_of_file(submissions_dir, scratch)], []
            submissions_dir = scratch
        else:
            submissions, ignored = discover(str(submissions_dir))
        run = grade_submissions(
            bundle_dir,
            submissions,
            [submissions_dir],
            out_dir,
            limits=limits,
            jobs=jobs,
            chapters=chapters,
            sandbox=sandbox,
            python=python,
            roster=roster,
            resubmissions=resubmissions,
            late=late,
            log=log,
            progress=progress,
        )
    finally:
        remove_tree(str(scratch))
    run.summary["ignored"] = ignored
    run.summary["assignment"] = assignment
    problem = mismatch(run.summary)
    write_outputs(out_dir, run, log, assignment=assignment, lms=not problem or allow_unmatched)
    if problem and not allow_unmatched:
        raise GradingError(
            f"{problem}: no LMS import was written (lms/), so that no grade is imported for the wrong "
            "student or left empty; fix the roster (or the folder names) and grade again, or pass "
            "--allow-unmatched to write lms/ without those submissions"
        )
    return run.results


def mismatch(summary: dict) -> str:
    """What does not add up between the submissions and the roster (empty when all is well)."""
    roster = summary.get("roster") or {}
    unmatched = roster.get("unmatched") or []
    if not unmatched:
        return ""
    return (
        f"{len(unmatched)} of {summary.get('submissions', len(unmatched))} submission(s) match no student "
        f"of the roster ({', '.join(display_name(k) for k in unmatched[:10])}"
        + (" ..." if len(unmatched) > 10 else "")
        + ")"
    )


@dataclass
class Graded:
    """What one grading run produced, before it is written."""

    results: List[StudentGrade]
    exercises: List[Exercise]
    submissions: List[Submission]
    summary: dict


def grade_submissions(
    bundle_dir: Path,
    submissions: List[Submission],
    sources: Sequence[Path],
    out_dir: Path,
    *,
    limits: Optional[Limits] = None,
    jobs: Optional[int] = None,
    chapters: Optional[Sequence[str]] = None,
    sandbox: str = "auto",
    python: Optional[str] = None,
    roster: Optional[List[Student]] = None,
    resubmissions: str = "latest",
    late: Optional[LatePolicy] = None,
    roster_missing: bool = True,
    log: Callable[[str], None] = print,
    progress: Optional[Callable[[StudentGrade, int, int], None]] = None,
) -> Graded:
    """Grade ``submissions`` (found in ``sources``) against the bundle; nothing is written.

    ``progress(row, notebooks, total)`` is called as each student's row is done (``progress.py``).
    """
    if resubmissions not in ("latest", "best"):
        raise GradingError(f"--resubmissions {resubmissions}: choose latest or best")
    bundle_dir = Path(bundle_dir)
    for sub in submissions:  # hand-in order, latest last; of Canvas's resubmissions the latest alone
        if resubmissions == "latest":
            sub.keep_latest()
        else:
            sub.paths.sort(key=sub.order)
    limits = limits or Limits()
    if not jobs:
        jobs = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    jobs = max(1, jobs)
    python = python or sys.executable
    manifest = read_manifest(bundle_dir)
    bundle = _bundle_exercises(manifest)
    known = {ex.id: ex for ex in bundle}
    scanned = scan_all(submissions, known, _chapter_cells(manifest))
    order = [
        ch for i, ch in enumerate(ex.chapter for ex in bundle) if ch not in [e.chapter for e in bundle[:i]]
    ]
    held = [
        (
            display_name(sub.student),
            set().union(*(scanned.scans[p].all_chapters() for p in sub.paths if p in scanned.scans)),
        )
        for sub in submissions
    ]
    try:
        chosen, messages = choose_chapters(order, held, chapters)
    except KeyError as e:
        raise GradingError(e.args[0]) from None
    for message in messages:
        log(message)
    exercises = [ex for ex in bundle if ex.chapter in chosen]
    hidden = load_hidden_cases(bundle_dir)
    if resubmissions == "latest":
        for sub in submissions:
            choose_notebooks(sub, scanned, chosen, _handout_names(manifest))

    work = tempfile.mkdtemp(prefix="attncourse-grade-")
    try:
        protected = [os.path.realpath(p) for p in (*sources, bundle_dir, out_dir, work)]
        box = find_sandbox(sandbox, python, protected)
        log(f"sandbox: {box.describe()}")
        if box.mode == "none" and box.user is None:
            log(
                "warning: --sandbox none: notebook code runs unconfined with your permissions; "
                "trusted notebooks only"
            )
        prepared = prepare_cases(exercises, hidden, Path(work))
        grader = Grader(prepared, work, box, limits)
        start, cpu_start = time.perf_counter(), time.process_time()
        graded = set(chosen)

        def run_one(path: str) -> NotebookRun:
            name = os.path.basename(path)
            if path in scanned.problems:
                return NotebookRun(name, status="malformed", problem=scanned.problems[path])
            scan = scanned.scans[path]
            held = scan.all_chapters()
            if held and not held & graded:
                return NotebookRun(
                    name,
                    status="other_chapter",
                    problem=f"this notebook holds the exercises of {', '.join(sorted(held))}, not of this "
                    f"assignment ({', '.join(chosen)}): not graded",
                )
            run = grader.run(name, scan)
            run.notes_extra += suspicious_uses(scan.cells, run.cell_names)
            return run

        def grade_one(sub: Submission) -> StudentGrade:
            # the cases are judged in the notebook's language (``student_grade``); the notes stay in
            # English for the instructor's summary, and the feedback file shows them translated
            scans = [scanned.scans[p] for p in sub.paths if p in scanned.scans]
            sg = _grade_one(sub)
            sg.language = scans[-1].language if scans else "en"
            return sg

        def _grade_one(sub: Submission) -> StudentGrade:
            if sub.problem:
                return error_grade(sub.student, [], sub.status, sub.problem, prepared)
            try:
                sg = student_grade(
                    sub.student, [run_one(p) for p in sub.paths], prepared, limits, resubmissions
                )
                if sub.earlier:
                    names = ", ".join(os.path.basename(p) for p in sub.earlier)
                    sg.notes.append(
                        tr("earlier submission(s), not graded (the latest counts): {names}", names=names)
                    )
                sg.notes += sub.choice_notes
                sg.flags += sub.flags
                if sub.not_notebooks:
                    sg.notes.append(
                        tr(
                            "also handed in, not a notebook, not graded: {names}",
                            names=", ".join(sub.not_notebooks),
                        )
                    )
                return sg
            except Exception as e:  # a bug of ours, or something unforeseen: this student alone
                note = f"the grader failed on this submission ({type(e).__name__}: {e}); please report it"
                names = [display_name(os.path.basename(p)) for p in sub.paths]
                return error_grade(sub.student, names, "error", protocol.clean_text(note), prepared)

        total = sum(len(sub.paths) for sub in submissions)

        def reported(sub: Submission) -> StudentGrade:
            row = grade_one(sub)
            if progress is not None:
                progress(row, len(sub.paths), total)
            return row

        with ThreadPoolExecutor(max_workers=jobs) as pool:
            results = list(pool.map(reported, submissions))
        elapsed = time.perf_counter() - start
        grader_cpu = time.process_time() - cpu_start
    finally:
        remove_tree(work)

    unmatched = _identify(results, submissions, roster, prepared, log, roster_missing)
    if late is not None:
        _assess_late(results, submissions, late)
    n_notebooks = sum(len(sg.seconds) for sg in results)
    run_cpu = sum(sum(sg.cpu_seconds.values()) for sg in results)
    summary = {
        "protocol": protocol.VERSION,
        "sandbox": "nobody" if box.user is not None else box.mode,
        **(
            {"sandbox_warning": "notebooks ran without a sandbox (--sandbox none)"}
            if box.mode == "none" and box.user is None
            else {}
        ),
        "python": python,
        "chapters": chosen,
        "points_possible": sum(ex.points for ex in exercises),
        "limits": limits.as_dict(),
        "jobs": jobs,
        "seconds": round(elapsed, 2),
        "notebooks": n_notebooks,
        "notebooks_per_second": round(n_notebooks / elapsed, 2) if elapsed > 0 else None,
        "cpu_seconds_per_notebook": round((run_cpu + grader_cpu) / n_notebooks, 3) if n_notebooks else None,
        "ignored": [],
        "submissions": len(submissions),
        "exercises": [ex.id for ex in exercises],
        "resubmissions": resubmissions,
        **({"late_policy": late.as_dict()} if late is not None else {}),
        **(
            {
                "roster": {
                    "students": len(roster),
                    "unmatched": unmatched,
                    "list": [s.as_dict() for s in roster],
                }
            }
            if roster is not None
            else {}
        ),
    }
    return Graded(results, exercises, submissions, summary)


def _identify(
    results: List[StudentGrade],
    submissions: List[Submission],
    roster: Optional[List[Student]],
    prepared: List[Prepared],
    log: Callable[[str], None],
    add_missing: bool = True,
) -> List[str]:
    """Fill in who each row is (LMS names, roster); add ``missing`` rows (unless ``add_missing`` is
    false: a regrade of some students); return the unmatched submissions."""
    for sg, sub in zip(results, submissions):
        if sub.lms is not None:
            sg.identity.update(lms=sub.lms.lms, lms_id=sub.lms.lms_id, name=sub.lms.name, late=sub.late)
    if roster is None:
        return []
    found = match_roster(
        [(sub.student, sub.lms or parse_lms_name(sub.student)) for sub in submissions], roster
    )
    for sg in results:
        student = found.by_key.get(sg.student)
        if student is not None:
            sg.identity.update(_roster_identity(student))
        elif sg.student in found.ambiguous:
            sg.notes.append(
                f"matches more than one student of the roster ({', '.join(found.ambiguous[sg.student])})"
            )
        else:
            sg.notes.append("matches no student of the roster")
    taken = {sg.student for sg in results}
    for student in found.missing if add_missing else []:
        key = student.name if student.name and student.name not in taken else f"{student.name}_{student.id}"
        row = error_grade(key, [], "missing", "no submission", prepared)
        row.identity.update(_roster_identity(student))
        results.append(row)
    results.sort(key=lambda sg: sg.student)
    if found.unmatched:
        log(
            f"WARNING: {len(found.unmatched)} submission(s) match no student of the roster (graded, listed "
            f"in results.json): {', '.join(display_name(k) for k in found.unmatched)}"
        )
    if found.missing and add_missing:
        log(f"{len(found.missing)} student(s) of the roster handed in nothing: rows with status missing")
    return found.unmatched


def _roster_identity(student: Student) -> dict:
    """What the roster says about a student: its ids (the LMS's own too), name, e-mail, extension."""
    who: dict = {"id": student.id, "name": student.name, "email": student.email}
    who.update({f"{lms}_id": v for lms, v in student.lms_ids.items()})
    if student.extension_days:
        who["extension_days"] = student.extension_days
    if student.submitted is not None:
        who["submitted"] = student.submitted
        who["submitted_source"] = student.submitted_source
    return who


FILE_TIME = "the file's time: the LMS's record of it was not given"


def _assess_late(results: List[StudentGrade], submissions: List[Submission], late: LatePolicy) -> None:
    """Each graded submission's late penalty: with a due date, from the time the LMS recorded
    (Moodle's grading worksheet as the roster), else the latest notebook's file time; without one,
    from Canvas's LATE flag (``LatePolicy.assess``)."""
    by_key = {sub.student: sub for sub in submissions}
    for sg in results:
        sub = by_key.get(sg.student)
        if sub is None or not sub.paths or sg.status in NOTHING_RUN:
            continue
        recorded = sg.identity.get("submitted")
        if isinstance(recorded, (int, float)):
            submitted, source = float(recorded), str(sg.identity.get("submitted_source") or "the LMS")
        else:
            submitted, source = max(sub.order(p)[1] for p in sub.paths) or None, FILE_TIME
            if late.due is not None and sub.lms is not None and sub.lms.lms == "moodle":
                # a Moodle zip stamps every file with the download's time: the worksheet has the real one
                sg.flags.append("lateness from the file's time: give Moodle's grading worksheet as --roster")
        extension = float(sg.identity.get("extension_days", 0) or 0)
        sg.penalty = late.assess(submitted, sub.late, extension, source)
        sg.identity["late"] = bool(sg.penalty)  # the policy's verdict: an extension may cover a flag


def write_outputs(
    out_dir: Path, run: Graded, log: Callable[[str], None] = print, assignment: str = "", lms: bool = True
) -> None:
    """Write the gradebook, the feedback files, ``results.json``, the LMS imports and Gradescope's
    per-student ``results.json`` of a grading run: one consistent set, every earlier one replaced.

    Names that are not UTF-8 are written readably (``\\xNN``) and listed; no name stops a file."""
    out_dir.mkdir(parents=True, exist_ok=True)
    for folder in ("feedback", "gradescope"):
        if (out_dir / folder).exists():
            shutil.rmtree(out_dir / folder)
        (out_dir / folder).mkdir()
    files = write_feedback(out_dir / "feedback", run.results, run.exercises)
    write_gradebook(out_dir / "gradebook.csv", run.results, run.exercises, files)
    write_results(out_dir / "results.json", run.summary, run.results, files)
    name = assignment or run.summary.get("assignment") or f"attncourse {' '.join(run.summary['chapters'])}"
    if lms:
        for line in write_lms_exports(out_dir / "lms", run.results, run.exercises, files, name):
            log(line)
        write_feedback_zip(out_dir / "lms" / "moodle_feedback.zip", run.results, out_dir / "feedback", files)
    elif (out_dir / "lms").exists():
        shutil.rmtree(out_dir / "lms")  # an earlier run's imports would not match this gradebook
    out_of = run.summary["points_possible"]
    for sg in run.results:  # Gradescope's autograder format, one file per student
        data = gradescope_results(sg, out_of)
        path = out_dir / "gradescope" / (files[sg.student][: -len(".txt")] + ".json")
        path.write_text(json.dumps(data, indent=1, ensure_ascii=True) + "\n", encoding="ascii")
    odd = [sg.student for sg in run.results if display_name(sg.student) != sg.student]
    if odd:
        log(
            f"{len(odd)} name(s) are not valid UTF-8, written with \\xNN in the gradebook and the LMS files "
            f"(exactly in results.json): {', '.join(display_name(n) for n in odd)}"
        )
    log(_statuses_line(run.results))
    write_summary(out_dir, run.results, run.exercises)
    elapsed, n = run.summary["seconds"], run.summary["notebooks"]
    per = f" ({n / elapsed:.2f} notebooks/s)" if elapsed > 0 and n else ""
    log(
        f"graded {len(run.results)} students ({n} notebooks) in {elapsed:.1f} s{per}, out of "
        f"{run.summary['points_possible']} points ({', '.join(run.summary['chapters'])}); "
        f"wrote {out_dir / 'gradebook.csv'} and {out_dir / 'summary.html'}"
    )


def _statuses_line(results: List[StudentGrade]) -> str:
    """The run in one line: how many of each status, who was not graded and why, who was late."""
    counts: dict = {}
    for sg in results:
        counts[sg.status] = counts.get(sg.status, 0) + 1
    parts = [", ".join(f"{n} {status}" for status, n in sorted(counts.items()))]
    for sg in results:
        if sg.status in NOTHING_RUN and sg.status != "missing" and sg.notes:
            parts.append(f"{display_name(sg.student)}: {sg.status}: {display_name(sg.notes[0])}")
    late = [
        f"{display_name(sg.student)} -{sg.penalty['percent']:g}%"
        for sg in results
        if sg.penalty.get("percent")
    ]
    if late:
        parts.append(f"late penalties: {', '.join(late)}")
    return "statuses: " + "; ".join(parts)
