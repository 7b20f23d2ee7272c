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
import signal
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from ..exercises._registry import Exercise, get
from . import protocol
from .assignment import Scan, choose_chapters
from .gradebook import display_name, write_feedback, write_gradebook, write_results
from .gradescope import gradescope_results
from .handout import load_hidden_cases, read_manifest
from .limits import GradingError, Limits
from .lms import write_lms_exports
from .marking import NotebookRun, Prepared, StudentGrade, error_grade, prepare_cases, student_grade
from .roster import Student, match_roster, parse_lms_name
from .runner import MEMORY_EXIT
from .sandbox import Sandbox, find_sandbox, resource_limits, runner_env
from .submissions import MAX_NOTEBOOK_BYTES, Submission, discover, scan_all, submission_of_file

__all__ = [
    "MAX_NOTEBOOK_BYTES",
    "Submission",
    "discover",
    "submission_of_file",
    "grade",
    "grade_submissions",
    "write_outputs",
]


def _tail(path: str, n: int = 2000) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - n))
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""


def _remove(path: str) -> None:
    def retry(func: Callable, target: str, _exc: object) -> None:
        try:
            os.chmod(os.path.dirname(target), 0o700)
            os.chmod(target, 0o700)
            func(target)
        except OSError:
            pass

    shutil.rmtree(path, onerror=retry)


class Grader:
    """Runs notebooks in the sandbox, one job folder each, and reads back their replies."""

    def __init__(self, prepared: List[Prepared], work: str, box: Sandbox, limits: Limits) -> None:
        self.prepared, self.work, self.box, self.limits = prepared, work, box, limits
        self.caps = [p.caps() for p in prepared]
        self.request = {
            "exercises": [
                {"id": p.exercise.id, "function": p.exercise.function, "cases": p.args} for p in prepared
            ],
            "caps": self.caps,
            "limits": {
                "cell_s": limits.cell_s,
                "case_s": limits.case_s,
                "output_chars": limits.output_chars,
                "wait_s": limits.time_s,
                "rlimits": resource_limits(limits),
            },
        }
        # the cases' inputs, held here and written into a job folder only after its cells have run
        self.case_files: Dict[str, bytes] = {}
        for p in prepared:
            for specs in p.args:
                for spec in specs:
                    if "array" in spec:
                        self.case_files[spec["array"]] = Path(work, spec["array"]).read_bytes()
        self._counter = 0
        self._lock = threading.Lock()

    def _prelude(self, run: NotebookRun) -> str:
        """The imports of the exercises whose cells the notebook holds (of all of them if none)."""
        held = [p for p in self.prepared if p.exercise.id in run.exercise_cells] or self.prepared
        needs: List[str] = []
        for p in held:
            needs += [n for n in p.exercise.needs if n not in needs]
        return "\n".join(needs) + "\n"

    def run(self, name: str, scan: Scan) -> NotebookRun:
        """Run one notebook; a call that ends the process costs its exercise alone (a fresh run goes on)."""
        run = NotebookRun(name)
        graded = {p.exercise.id for p in self.prepared}
        run.exercise_cells = [ex_id for ex_id in scan.exercise_ids if ex_id in graded]
        run.unknown_ids = [(i, protocol.clean_text(x, 100)) for i, x in scan.unknown_ids]
        cells = [
            c if c["exercise"] in graded or c["kind"] != "exercise" else {**c, "kind": "chapter"}
            for c in scan.cells
        ]  # an exercise of a chapter not graded: its definitions only
        first, kept = 0, {}
        deadline = time.perf_counter() + self.limits.time_s
        while True:
            with self._lock:
                self._counter += 1
                job = os.path.join(self.work, f"job{self._counter}")
            os.makedirs(os.path.join(job, "tmp"))
            try:
                self._execute(run, cells, job, first, deadline)
            finally:
                _remove(job)
                try:
                    os.remove(job + ".log")
                except OSError:
                    pass
            killer = self._killer(run, first)
            if run.reply is not None:
                run.reply.results.update(kept)
            if killer is None:
                return run
            e, c = killer
            reason = self._kill_reason(run)
            run.killed[e] = (c, reason)
            kept = {k: v for k, v in run.reply.results.items() if k[0] <= e} if run.reply else dict(kept)
            run.notes_extra.append(
                f"case {c + 1} of {self.prepared[e].exercise.id} {reason}: that exercise lost the "
                "cases from there on; the notebook was run again for the exercises after it"
            )
            first = e + 1
            if first >= len(self.prepared) or time.perf_counter() > deadline:
                run.status = "ok" if first >= len(self.prepared) else "timeout"
                return run

    def _killer(self, run: NotebookRun, first: int) -> Optional[Tuple[int, int]]:
        """The (exercise, case) whose call ended the run, when a call did."""
        if run.status not in ("crashed", "memory") or not run.stopped_at.startswith("case "):
            return None
        e, c = (int(x) for x in run.stopped_at.split()[1:])
        return (e, c) if first <= e < len(self.prepared) else None

    def _kill_reason(self, run: NotebookRun) -> str:
        if run.status == "memory":
            return f"ran out of memory (limit {self.limits.memory_mb} MiB)"
        code = run.exit_code
        how = f"killed by signal {-code}" if code is not None and code < 0 else f"exit code {code}"
        return f"ended the grading process ({how})"

    def _execute(self, run: NotebookRun, cells: List[dict], job: str, first: int, deadline: float) -> None:
        run.status, run.problem, run.reply, run.stderr_tail = "ok", "", None, ""
        request = {**self.request, "cells": cells, "prelude": self._prelude(run), "first_exercise": first}
        protocol.write_request(job, request)
        pass_fds: Tuple[int, ...] = ()
        seccomp_fd = None
        if self.box.mode == "bwrap" and self.box.seccomp:
            seccomp_fd, w = os.pipe()
            os.write(w, self.box.seccomp)
            os.close(w)
            pass_fds = (seccomp_fd,)
        argv = self.box.argv(job, seccomp_fd)
        env = (
            runner_env(job) if self.box.mode == "none" else {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
        )
        as_user = {}
        if self.box.user is not None:  # a root grader without bubblewrap: the notebook runs as nobody
            for path in (job, os.path.join(job, "tmp")):
                os.chown(path, self.box.user, self.box.user)
            as_user = {"user": self.box.user, "group": self.box.user, "extra_groups": []}
        job_fd = os.open(job, os.O_RDONLY | os.O_DIRECTORY)
        timed_out = False
        start = time.perf_counter()
        try:
            try:
                with open(job + ".log", "wb") as log:
                    proc = subprocess.Popen(
                        argv,
                        cwd=job,
                        env=env,
                        stdin=subprocess.DEVNULL,
                        stdout=log,
                        stderr=subprocess.STDOUT,
                        pass_fds=pass_fds,
                        start_new_session=True,
                        **as_user,
                    )
            finally:
                if seccomp_fd is not None:
                    os.close(seccomp_fd)
            status, usage, timed_out, problem = self._wait(proc, deadline, job_fd)
            run.seconds += time.perf_counter() - start
            own = usage.ru_utime + usage.ru_stime if usage is not None else 0.0  # bwrap's, or the runner's
            run.exit_code = os.waitstatus_to_exitcode(status) if status is not None else None
            try:
                run.reply = protocol.read_reply(job_fd, self.caps)
            except protocol.ProtocolError as e:
                run.problem = f"its reply could not be read ({e})"
            if problem and not run.problem:
                run.problem = problem
            progress = protocol.read_progress(job_fd)
            # inside bwrap the runner is not bwrap's waited-for child: it reports its own CPU time
            run.cpu_seconds += own + (
                run.reply.cpu_seconds if run.reply and self.box.mode == "bwrap" else 0.0
            )
        finally:
            os.close(job_fd)
        run.stopped_at = progress
        run.stopped_in = self._describe(progress)
        if timed_out:
            run.status = "timeout"
        elif run.exit_code == MEMORY_EXIT:
            run.status = "memory"
        elif run.reply is None or run.reply.stage != "done" or run.problem:
            run.status = "crashed"
            run.stderr_tail = _tail(job + ".log")

    def _describe(self, progress: str) -> str:
        if progress.startswith("cell "):
            return progress
        if progress.startswith("case "):
            e, c = (int(x) for x in progress.split()[1:])
            if e < len(self.prepared):
                return f"case {c + 1} of {self.prepared[e].exercise.id}"
        if progress == "cases":
            return "the exercise functions"
        return "start-up"

    def _wait(self, proc: subprocess.Popen, deadline: float, job_fd: int):
        """Wait for ``proc`` until ``deadline``, delivering the cases once its cells have run, then kill
        its process group; (status, rusage, timed out, why the cases could not be delivered)."""
        delay, timed_out, delivered, problem = 0.002, False, False, ""
        while os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None:
            if time.perf_counter() > deadline:
                timed_out = True
                break
            if not delivered and protocol.read_progress(job_fd) == "cases":
                delivered = True
                problem = protocol.deliver_cases(job_fd, self.case_files)
                if problem:
                    break
                delay = 0.002
                continue
            time.sleep(delay)
            delay = min(delay * 1.5, 0.02)
        try:  # still unreaped, so the group is ours: bwrap (and with it the sandbox's PID namespace),
            os.killpg(proc.pid, signal.SIGKILL)  # or whatever a --sandbox none run left behind
        except (ProcessLookupError, PermissionError):
            pass
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        return status, usage, timed_out, problem


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
    log: Callable[[str], None] = print,
) -> List[StudentGrade]:
    """Grade every submission in ``submissions_dir``; write the gradebook and feedback to ``out_dir``.

    The chapters graded are those of ``chapters`` (``--chapter``), else those whose exercise cells
    the submitted notebooks hold.  ``python`` is the interpreter that runs the notebooks (default:
    this one); ``jobs`` the number of notebooks run at once (default: the number of cores).  Raises
    ``GradingError`` before writing anything when the bundle, the folders or the sandbox are not
    in order.
    """
    bundle_dir, submissions_dir, out_dir = Path(bundle_dir), Path(submissions_dir), Path(out_dir)
    if not submissions_dir.is_dir():
        raise GradingError(f"{submissions_dir} is not a folder")
    if _inside(os.path.realpath(out_dir), os.path.realpath(submissions_dir)):
        raise GradingError("OUT_DIR must not be inside SUBMISSIONS_DIR")
    if (out_dir / "gradebook.csv").exists() and not force:
        raise GradingError(f"{out_dir} already holds a gradebook; pass --force to replace it")
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
        log=log,
    )
    run.summary["ignored"] = ignored
    write_outputs(out_dir, run, log, assignment=assignment)
    return run.results


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
    log: Callable[[str], None] = print,
) -> Graded:
    """Grade ``submissions`` (found in ``sources``) against the bundle; nothing is written."""
    bundle_dir = Path(bundle_dir)
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
    named = [(display_name(os.path.basename(p)), s) for p, s in scanned.scans.items()]
    try:
        chosen, messages = choose_chapters(order, named, chapters)
    except KeyError as e:
        raise GradingError(e.args[0]) from None
    for message in messages:
        log(message)
    exercises = [ex for ex in bundle if ex.chapter in chosen]
    hidden = load_hidden_cases(bundle_dir)

    work = tempfile.mkdtemp(prefix="attncourse-grade-")
    try:
        protected = [os.path.realpath(p) for p in (*sources, bundle_dir, out_dir, work)]
        box = find_sandbox(sandbox, python, protected)
        log(f"sandbox: {box.describe()}")
        if box.mode == "none":
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
            held = scan.chapters()
            if held and not held & graded:
                return NotebookRun(
                    name,
                    status="other_chapter",
                    problem=f"this notebook holds the exercises of {', '.join(sorted(held))}, not of this "
                    f"assignment ({', '.join(chosen)}): not graded",
                )
            return grader.run(name, scan)

        def grade_one(sub: Submission) -> StudentGrade:
            if sub.problem:
                return error_grade(sub.student, [], sub.status, sub.problem, prepared)
            try:
                return student_grade(sub.student, [run_one(p) for p in sub.paths], prepared, limits)
            except Exception as e:  # a bug of ours, or something unforeseen: this student alone
                note = f"the grader failed on this submission ({type(e).__name__}: {e}); please report it"
                names = [display_name(os.path.basename(p)) for p in sub.paths]
                return error_grade(sub.student, names, "error", protocol.clean_text(note), prepared)

        with ThreadPoolExecutor(max_workers=jobs) as pool:
            results = list(pool.map(grade_one, submissions))
        elapsed = time.perf_counter() - start
        grader_cpu = time.process_time() - cpu_start
    finally:
        _remove(work)

    unmatched = _identify(results, submissions, roster, prepared, log)
    n_notebooks = sum(len(sg.seconds) for sg in results)
    run_cpu = sum(sum(sg.cpu_seconds.values()) for sg in results)
    summary = {
        "protocol": protocol.VERSION,
        "sandbox": box.mode,
        **(
            {"sandbox_warning": "notebooks ran without a sandbox (--sandbox none)"}
            if box.mode == "none"
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
        **({"roster": {"students": len(roster), "unmatched": unmatched}} if roster is not None else {}),
    }
    return Graded(results, exercises, submissions, summary)


def _identify(
    results: List[StudentGrade],
    submissions: List[Submission],
    roster: Optional[List[Student]],
    prepared: List[Prepared],
    log: Callable[[str], None],
) -> List[str]:
    """Fill in who each row is (LMS names, roster); add ``missing`` rows; the unmatched submissions."""
    for sg, sub in zip(results, submissions):
        if sub.lms is not None:
            sg.identity.update(lms=sub.lms.lms, lms_id=sub.lms.lms_id, name=sub.lms.name, late=sub.lms.late)
    if roster is None:
        return []
    found = match_roster(
        [(sub.student, sub.lms or parse_lms_name(sub.student)) for sub in submissions], roster
    )
    for sg in results:
        student = found.by_key.get(sg.student)
        if student is not None:
            sg.identity.update(id=student.id, name=student.name, email=student.email)
        elif sg.student in found.ambiguous:
            sg.notes.append(
                f"matches more than one student of the roster ({', '.join(found.ambiguous[sg.student])})"
            )
        else:
            sg.notes.append("matches no student of the roster")
    taken = {sg.student for sg in results}
    for student in found.missing:
        key = student.name if student.name and student.name not in taken else f"{student.name}_{student.id}"
        row = error_grade(key, [], "missing", "no submission", prepared)
        row.identity.update(id=student.id, name=student.name, email=student.email)
        results.append(row)
    results.sort(key=lambda sg: sg.student)
    if found.unmatched:
        log(
            f"WARNING: {len(found.unmatched)} submission(s) match no student of the roster (graded, listed "
            f"in results.json): {', '.join(display_name(k) for k in found.unmatched)}"
        )
    if found.missing:
        log(f"{len(found.missing)} student(s) of the roster handed in nothing: rows with status missing")
    return found.unmatched


def write_outputs(
    out_dir: Path, run: Graded, log: Callable[[str], None] = print, assignment: str = ""
) -> None:
    """Write the gradebook, the feedback files, ``results.json``, the LMS imports and Gradescope's
    per-student ``results.json`` of a grading run."""
    out_dir.mkdir(parents=True, exist_ok=True)
    feedback_dir = out_dir / "feedback"
    if feedback_dir.exists():
        shutil.rmtree(feedback_dir)
    feedback_dir.mkdir()
    files = write_feedback(feedback_dir, run.results, run.exercises)
    write_gradebook(out_dir / "gradebook.csv", run.results, run.exercises, files)
    write_results(out_dir / "results.json", run.summary, run.results, files)
    name = assignment or f"attncourse {' '.join(run.summary['chapters'])}"
    for line in write_lms_exports(out_dir / "lms", run.results, run.exercises, files, name):
        log(line)
    out_of = run.summary["points_possible"]
    (out_dir / "gradescope").mkdir(exist_ok=True)
    for sg in run.results:  # Gradescope's autograder format, one file per student
        data = gradescope_results(sg, out_of)
        path = out_dir / "gradescope" / (files[sg.student][: -len(".txt")] + ".json")
        path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    elapsed, n = run.summary["seconds"], run.summary["notebooks"]
    per = f" ({n / elapsed:.2f} notebooks/s)" if elapsed > 0 and n else ""
    log(
        f"graded {len(run.results)} students ({n} notebooks) in {elapsed:.1f} s{per}, out of "
        f"{run.summary['points_possible']} points ({', '.join(run.summary['chapters'])}); "
        f"wrote {out_dir / 'gradebook.csv'}"
    )
