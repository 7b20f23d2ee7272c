"""Marks: the runner's reply against expected outputs that only the grader holds.

``prepare_cases`` generates each exercise's inputs (public and hidden cases), writes them for the
runner and computes the expected outputs with the trusted reference, in this process.  A
``NotebookRun`` is what came back from one notebook; ``student_grade`` picks, for each exercise,
the notebook it counts from (the latest handed in that holds its cell with an answer, not the
stub, or with ``--resubmissions best`` the one where it scores best) and collects the notes for the instructor.

Hidden cases stay hidden: a failed hidden case reports its label (the case's name, and its group
when that differs), what kind of failure it was and, for an exception, the exception's type,
never its message, its printed output or anything computed from the inputs (``hide``).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, List, Optional, Tuple

import numpy as np

from ..exercises.engine.compare import (
    CaseResult,
    Outcome,
    expected_outputs,
    judge_all,
    points_earned,
    shortcut_message,
)
from ..exercises.engine.registry import Case, Exercise
from ..i18n import tr, using
from .limits import MAX_TIMEOUTS, GradingError, Limits
from .protocol import CellNote, Reply, case_file

__all__ = [
    "STATUSES",
    "Prepared",
    "prepare_cases",
    "NotebookRun",
    "ExerciseGrade",
    "StudentGrade",
    "student_grade",
    "error_grade",
    "SHORTCUT_MESSAGE",
]

# A student's status, most serious first; ``ok`` when none applies.
STATUSES = (
    "missing",
    "ambiguous",
    "error",
    "malformed",
    "not_a_notebook",
    "other_chapter",
    "timeout",
    "crashed",
    "memory",
    "ok",
)
SHORTCUT_MESSAGE = "the package's reference may not be used here: {name}"


@dataclass
class Prepared:
    """An exercise with its cases, their argument files and their expected outputs."""

    exercise: Exercise
    cases: List[Case]
    hidden: List[bool]
    expected: List[List[np.ndarray]]
    args: List[List[dict]]  # per case, the protocol's argument specs

    def caps(self) -> List[List[int]]:
        """The most bytes each output may take: far more than expected is refused unread."""
        return [[min(64 * 2**20, 2**20 + 16 * e.nbytes) for e in case] for case in self.expected]


def prepare_cases(
    exercises: List[Exercise], hidden: Dict[str, Callable[[], List[Case]]], folder: Path
) -> List[Prepared]:
    """Write every case's arguments under ``folder/cases`` and compute the expected outputs."""
    (folder / "cases").mkdir(exist_ok=True)
    prepared = []
    for e, ex in enumerate(exercises):
        public = ex.public_cases()
        secret = list(hidden[ex.id]()) if ex.id in hidden else []
        cases, flags = public + secret, [False] * len(public) + [True] * len(secret)
        expected, args = [], []
        for c, case in enumerate(cases):
            if list(case.inputs) != list(ex.params):
                raise GradingError(
                    f"{ex.id}, case {case.name!r}: inputs {list(case.inputs)} do not match "
                    f"{ex.function}{ex.params}"
                )
            specs = []
            for a, value in enumerate(case.inputs.values()):
                if isinstance(value, np.ndarray):
                    np.save(folder / case_file(e, c, a), value, allow_pickle=False)
                    specs.append({"array": case_file(e, c, a)})
                elif isinstance(value, (bool, int, float, str, type(None))):
                    specs.append({"value": value})
                else:
                    raise GradingError(f"{ex.id}, case {case.name!r}: inputs must be arrays or numbers")
            args.append(specs)
            expected.append(expected_outputs(ex, case))
        prepared.append(Prepared(ex, cases, flags, expected, args))
    os.chmod(folder / "cases", 0o755)
    return prepared


@dataclass
class NotebookRun:
    """One notebook of one student, after its run (or after it was refused)."""

    notebook: str
    status: str = "ok"  # ok, malformed, other_chapter, timeout, crashed, memory
    problem: str = ""
    reply: Optional[Reply] = None
    exercise_cells: List[str] = field(default_factory=list)
    unknown_ids: List[Tuple[int, str]] = field(default_factory=list)
    stopped_in: str = ""
    stopped_at: str = ""  # the runner's last progress line
    # exercise index -> (the case whose call ended the run, why): the rest of the run went on afresh
    killed: Dict[int, Tuple[int, str]] = field(default_factory=dict)
    notes_extra: List[str] = field(default_factory=list)
    cell_names: Dict[int, str] = field(default_factory=dict)  # index -> "exercise 6.3's cell", ...
    exit_code: Optional[int] = None
    seconds: float = 0.0
    cpu_seconds: float = 0.0
    stderr_tail: str = ""
    language: str = "en"  # the notebook's (``i18n.language_of_notebook``): its runner speaks it

    def cell_shortcut(self, ex_id: str) -> Optional[str]:
        """What the exercise's own cell used at top level that the exercise forbids (or ``None``)."""
        if self.reply is None:
            return None
        cells = self.reply.cells
        return next((n.message for n in cells if n.status == "shortcut" and n.exercise == ex_id), None)

    def outcomes(self, e: int, p: Prepared, limits: Limits) -> Optional[List[Outcome]]:
        """The outcome of every case of exercise ``e`` (``None`` if the notebook was never run)."""
        if self.status in ("malformed", "other_chapter"):
            return None
        reply = self.reply
        ran_cells = reply is not None and reply.stage != "cells"
        if ran_cells and p.exercise.function not in reply.defined:
            return [Outcome("missing") for _ in p.cases]
        if self.status == "timeout":
            why = f"not run: the notebook hit the {limits.time_s:g} s time limit first"
        elif self.status == "memory":
            why = "not run: the notebook ran out of memory first"
        else:
            why = "not run: the grading process ended early"
        out, timeouts = [], 0
        killed = self.killed.get(e)
        for c in range(len(p.cases)):
            got = reply.results.get((e, c)) if reply is not None else None
            if killed is not None and c >= killed[0]:
                what = "this call" if c == killed[0] else f"the call of case {killed[0] + 1}"
                got = Outcome("bad_output", message=f"not graded: {what} {killed[1]}")
            if got is None:
                got = (
                    Outcome(
                        "not_run",
                        message=f"not run: {timeouts} calls of this exercise before it ran past the "
                        f"{limits.case_s:g} s limit",
                    )
                    if timeouts >= MAX_TIMEOUTS
                    else Outcome("not_run", message=why)
                )
            timeouts += got.kind == "timeout"
            out.append(got)
        return out


@dataclass
class ExerciseGrade:
    exercise: Exercise
    cases: List[CaseResult]
    notebook: str = ""
    shortcut: Optional[str] = None

    @property
    def earned(self) -> float:
        if not self.cases or self.shortcut:
            return 0.0
        return points_earned(self.exercise, self.cases)  # the one scoring policy, check's own


def case_label(case: Case, hidden: bool) -> str:
    """A case's name as every report shows it: hidden cases say so."""
    return tr("hidden: {name}", name=tr(case.name)) if hidden else tr(case.name)


def _failed(p: Prepared, message: str, status: str) -> List[CaseResult]:
    return _number_hidden(
        [
            CaseResult(case_label(c, h), False, message, status, h, group=getattr(c, "group", "") or c.name)
            for c, h in zip(p.cases, p.hidden)
        ]
    )


def hide(case: CaseResult, outcome: Optional[Outcome] = None) -> CaseResult:
    """A failed hidden case as a student may see it: its label, the kind of failure and the
    exception's type; the message, the inputs' shapes and the differing entries are dropped."""
    if not case.hidden or case.passed:
        return case
    if outcome is not None and outcome.kind == "raised" and case.status in ("raised", "method"):
        what = tr("raised {error}", error=_type_name(outcome.error_type))
    elif case.status in ("not run", "timeout", "not attempted", "missing", "shortcut"):
        return CaseResult(
            case.name, False, case.message, case.status, True, "", [], case.group, case.diagnosis
        )
    else:
        what = tr(case.status)  # "wrong values", "wrong shape", "bad output" ...
    named = not case.group or tr("hidden: {name}", name=tr(case.group)) == case.name
    message = tr(
        "{what}{group}; the hidden case's details are not shown", what=what, group=_group_note(case, named)
    )
    return CaseResult(case.name, False, message, case.status, True, "", [], case.group, case.diagnosis)


def _group_note(case: CaseResult, named: bool = False) -> str:
    """' (group masking)' after a hidden case's failure, unless its name already says it."""
    return "" if named or not case.group else tr(" (group {group})", group=tr(case.group))


# a name that spells out a case's inputs: a list, a tuple of numbers, ``L=5``
_SPELLS_INPUTS = re.compile(r"[\[\]=]|\(\s*-?\d")


def _number_hidden(cases: List[CaseResult]) -> List[CaseResult]:
    """Hidden cases whose names spell out their inputs (``lengths [6, 1, 0]``, ``L=5, S=3``) are shown
    as ``hidden: case K`` (K counts the exercise's hidden cases), and their groups are not named."""
    out, k = [], 0
    for case in cases:
        if case.hidden:
            k += 1
            if _SPELLS_INPUTS.search(case.name) or _SPELLS_INPUTS.search(case.group or ""):
                message = case.message.replace(_group_note(case), "") if not case.passed else case.message
                case = CaseResult(
                    tr("hidden: case {k}", k=k),
                    case.passed,
                    message,
                    case.status,
                    True,
                    "",
                    [],
                    case.group,
                    case.diagnosis,
                )
        out.append(case)
    return out


def _type_name(error_type: str) -> str:
    """An exception's type name as reported, cut to a plain identifier (the name is the student's)."""
    name = "".join(ch for ch in str(error_type)[:60] if ch.isalnum() or ch in "._")
    return name or tr("an exception")


def _shortcut_text(exercise: Exercise, name: str) -> str:
    allowed = exercise.allowed() if hasattr(exercise, "allowed") else ()
    return shortcut_message(name, allowed)


@dataclass
class StudentGrade:
    student: str
    notebooks: List[str]
    status: str
    notes: List[str]
    details: List[str]
    grades: List[ExerciseGrade]
    seconds: Dict[str, float] = field(default_factory=dict)
    cpu_seconds: Dict[str, float] = field(default_factory=dict)
    # who this is: the roster's id, name and email, the LMS that named the files, its id, lateness
    identity: Dict[str, object] = field(default_factory=dict)
    # the late penalty applied (``LatePolicy.assess``): percent, days_late, why; empty when on time
    penalty: Dict[str, object] = field(default_factory=dict)
    # for the instructor's "needs a look" list: short reasons (several notebooks, no LMS time, ...)
    flags: List[str] = field(default_factory=list)
    # the language of the student's feedback: their (latest) notebook's
    language: str = "en"

    @property
    def earned(self) -> float:
        """The points of the exercises, before any late penalty."""
        return round(sum(g.earned for g in self.grades), 2)

    @property
    def total(self) -> float:
        """The grade: the points earned less the late penalty (a percentage of them)."""
        percent = float(self.penalty.get("percent", 0) or 0)
        return round(self.earned * (1 - percent / 100), 2)


def _not_graded(p: Prepared, message: str = "not graded") -> ExerciseGrade:
    return ExerciseGrade(p.exercise, _failed(p, message, "not run"))


def error_grade(
    student: str, notebooks: List[str], status: str, note: str, prepared: List[Prepared]
) -> StudentGrade:
    """A row with no marks: an ambiguous submission, or a grading that failed for this student alone."""
    return StudentGrade(student, notebooks, status, [note], [], [_not_graded(p) for p in prepared])


def _grade_exercise(
    e: int, p: Prepared, runs: List[NotebookRun], limits: Limits, policy: str = "latest"
) -> ExerciseGrade:
    # the notebook(s) holding the exercise's cell; failing that, those defining its function
    holders = [r for r in runs if p.exercise.id in r.exercise_cells]
    definers = [r for r in runs if r.reply is not None and p.exercise.function in r.reply.defined]
    pool = holders or definers or runs
    candidates = []
    for order, run in enumerate(runs):
        outcomes = run.outcomes(e, p, limits) if run in pool else None
        if outcomes is None:
            continue
        shortcut = next((o.shortcut for o in outcomes if o.shortcut), None) or run.cell_shortcut(
            p.exercise.id
        )
        if shortcut:
            cases = _failed(p, _shortcut_text(p.exercise, shortcut), "shortcut")
        else:
            judged = judge_all(p.exercise, p.cases, p.expected, outcomes, p.hidden)  # check's own judge
            cases = [hide(result, outcome) for result, outcome in zip(judged, outcomes)]
            cases = _number_hidden(cases)
        grade = ExerciseGrade(p.exercise, cases, run.notebook, shortcut)
        defines = run.reply is not None and p.exercise.function in run.reply.defined
        attempted = any(c.status not in ("not attempted", "missing", "not run") for c in cases)
        candidates.append((grade.earned, defines, -order, grade, attempted))
    if not candidates:
        return _not_graded(p)
    if policy == "latest":  # runs come in hand-in order: the latest answer counts, not a later stub
        return max(candidates, key=lambda t: (t[4], -t[2]))[3]
    return max(candidates, key=lambda t: t[:3])[3]


def _cells(notes: List[CellNote], status: str) -> List[CellNote]:
    return [n for n in notes if n.status == status]


_HOW = re.compile(r" \((?:exit code -?\d+|killed by signal \d+)\)")


def _hide_exit_codes(run: NotebookRun, prepared: List[Prepared]) -> None:
    """A call on a hidden case that ended the process chose its exit code, maybe from the inputs:
    the notes say that it ended the process, not how."""

    def hidden(e: int, c: int) -> bool:
        return 0 <= e < len(prepared) and 0 <= c < len(prepared[e].hidden) and prepared[e].hidden[c]

    for e, (c, _) in run.killed.items():
        if hidden(e, c):
            head = f"case {c + 1} of {prepared[e].exercise.id} "
            run.notes_extra = [_HOW.sub("", n) if n.startswith(head) else n for n in run.notes_extra]
    parts = run.stopped_at.split()
    if len(parts) == 3 and parts[0] == "case" and parts[1].isdigit() and parts[2].isdigit():
        if hidden(int(parts[1]), int(parts[2])):
            run.exit_code = None


_CELL = re.compile(r"\bcell (\d+)")


def _run_notes(run: NotebookRun, limits: Limits, tag: Callable[[str], str]) -> Tuple[List[str], List[str]]:
    notes: List[str] = []
    details: List[str] = []
    if run.status in ("malformed", "other_chapter"):
        return [tag(run.problem)], []
    if run.status == "timeout":
        notes.append(
            tag(
                tr(
                    "stopped at the {limit} s time limit while running {where}",
                    limit=f"{limits.time_s:g}",
                    where=run.stopped_in,
                )
            )
        )
    elif run.status == "memory":
        notes.append(
            tag(
                tr(
                    "ran out of memory (limit {limit} MiB) while running {where}",
                    limit=limits.memory_mb,
                    where=run.stopped_in,
                )
            )
        )
    elif run.status == "crashed":
        code = run.exit_code
        if code is not None and code < 0:
            how = tr(" (killed by signal {signal})", signal=-code)
        else:
            how = tr(" (exit code {code})", code=code) if code is not None else ""
        notes.append(
            tag(
                tr(
                    "the notebook ended the grading process early{how} while running {where}",
                    how=how,
                    where=run.stopped_in,
                )
            )
        )
        if run.problem:
            details.append(tag(run.problem))
        # what it printed, unless the cases' inputs had reached it: hidden inputs never reach a student
        if run.stderr_tail.strip() and (run.stopped_at.startswith("cell ") or not run.stopped_at):
            details.append(
                tag(tr("last output: {text}", text=run.stderr_tail.strip().splitlines()[-1][:300]))
            )
    cells = run.reply.cells if run.reply is not None else []
    syntax, errors = _cells(cells, "syntax"), _cells(cells, "error")
    exits, timeouts = _cells(cells, "exit"), _cells(cells, "timeout")
    memory = [n for n in errors if n.error_type == "MemoryError"]
    errors = [n for n in errors if n.error_type != "MemoryError"]
    name = lambda i: run.cell_names.get(i) or tr("cell {i}", i=i)  # noqa: E731
    listing = lambda ns: "; ".join(name(n.index) for n in ns)  # noqa: E731
    if syntax:
        notes.append(tag(tr("syntax errors in {cells}", cells=listing(syntax))))
    if errors:
        notes.append(tag(tr("errors in {cells}", cells=listing(errors))))
    if memory:
        notes.append(
            tag(
                tr(
                    "out of memory (limit {limit} MiB) in {cells}",
                    limit=limits.memory_mb,
                    cells=listing(memory),
                )
            )
        )
    if exits:
        notes.append(tag(tr("sys.exit() in {cells} (ignored)", cells=listing(exits))))
    if timeouts:
        notes.append(
            tag(
                tr(
                    "over the {limit} s cell limit (stopped): {cells}",
                    limit=f"{limits.cell_s:g}",
                    cells=listing(timeouts),
                )
            )
        )
    if run.reply is not None and run.reply.output_truncated:
        notes.append(tag(tr("printed more than {n} characters (cut)", n=limits.output_chars)))
    for index, ex_id in run.unknown_ids:
        notes.append(tag(tr("unknown exercise id {id} in {cell}", id=repr(ex_id), cell=name(index))))
    notes += [tag(n) for n in run.notes_extra]
    for n in _cells(cells, "shortcut"):
        if not n.exercise:
            notes.append(
                tag(
                    tr(
                        "{cell}, a cell of the student's own, used {what} (noted, not marked)",
                        cell=name(n.index),
                        what=n.message,
                    )
                )
            )
    for n in syntax:
        details.append(tag(f"{name(n.index)}: {n.message}"))
    for n in errors + memory:
        where = _CELL.sub(lambda m: name(int(m.group(1))), n.where) if n.where else ""
        where = f" ({where})" if where else ""
        error = f"{n.error_type}: {n.message}{where}"
        details.append(tag(tr("{cell} raised {error}", cell=name(n.index), error=error)))
    for n in exits:
        details.append(
            tag(
                tr(
                    "{cell} called sys.exit({code}); the grader carried on",
                    cell=name(n.index),
                    code=n.message,
                )
            )
        )
    for n in timeouts:
        details.append(
            tag(
                tr(
                    "{cell} ran longer than {limit} s and was stopped",
                    cell=name(n.index),
                    limit=f"{limits.cell_s:g}",
                )
            )
        )
    return notes, details


def student_grade(
    student: str, runs: List[NotebookRun], prepared: List[Prepared], limits: Limits, policy: str = "latest"
) -> StudentGrade:
    """The marks, status and notes of one student from the runs of their notebooks (in hand-in
    order, latest last); ``policy`` is ``latest`` or ``best`` (``--resubmissions``)."""
    if policy not in ("latest", "best"):
        raise ValueError(f"policy must be 'latest' or 'best', not {policy!r}")
    language = runs[-1].language if runs else "en"
    with using(language):  # what each case says is in the notebook's language; the notes in English
        grades = [_grade_exercise(e, p, runs, limits, policy) for e, p in enumerate(prepared)]
    multi = len(runs) > 1
    notes: List[str] = []
    details: List[str] = []
    for run in runs:
        tag = (lambda text, name=run.notebook: f"{name}: {text}") if multi else (lambda text: text)
        _hide_exit_codes(run, prepared)
        n, d = _run_notes(run, limits, tag)
        notes += n
        details += d
    # a run counts as "memory" also when a cell ran out of memory and the run carried on
    statuses = [
        "memory"
        if r.status == "ok"
        and r.reply is not None
        and any(n.error_type == "MemoryError" for n in r.reply.cells)
        else r.status
        for r in runs
    ]
    unrun = ("malformed", "other_chapter")
    if statuses and all(s in unrun for s in statuses):
        status = next(s for s in STATUSES if s in statuses)
    else:
        status = next((s for s in STATUSES if s in statuses and s not in unrun), "ok")
    ran = [r for r in runs if r.reply is not None and r.reply.stage != "cells"]
    if ran:
        missing = [
            g.exercise.function
            for g in grades
            if not any(g.exercise.function in r.reply.defined for r in ran)
        ]
        if missing:
            notes.append(tr("not found: {names}", names=", ".join(missing)))
    for g in grades:
        if g.shortcut:
            notes.append(tr("{id}: 0 points, " + SHORTCUT_MESSAGE, id=g.exercise.id, name=g.shortcut))
    return StudentGrade(
        student,
        [r.notebook for r in runs],
        status,
        notes,
        details,
        grades,
        {r.notebook: round(r.seconds, 3) for r in runs},
        {r.notebook: round(r.cpu_seconds, 3) for r in runs},
        language=language,
    )
