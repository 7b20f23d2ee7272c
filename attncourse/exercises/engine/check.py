"""``check`` and ``score``: instant feedback in Jupyter, Colab or a terminal.

``check(exercise_id, fn)`` runs the exercise's public cases on ``fn`` and shows the points,
which groups of cases passed and, for a failure, one message that says what is wrong (the symptom,
and for a classic mistake the question that leads to it; in a find-the-bug exercise only the
symptom, as for any wrong answer: the cause is what the learner finds).  ``check(..., hint=True)``
adds the hint that names the fix (and, in a find-the-bug exercise, the recognised cause); after
``HINT_AFTER`` different failing answers ``check`` says how to ask for it, and never shows it
unasked.  ``score(chapter)`` re-checks the functions as they are defined now (in the namespace it
is called from) and adds up the chapter; an exercise whose function is not defined there keeps its
latest check, and a find-the-bug exercise whose code is still the handed-out code is "not attempted".
Points follow ``engine.scoring.points_earned``: case groups, all or nothing, as the grader.

Top to bottom: the result types (``CheckResult``, ``ScoreReport``); ``call`` (run one case: the
outputs); ``run_cases`` (compare and score, through ``engine.compare.judge_all``); the feedback
policy (``_hints``, ``_offer``, ``_untouched``); ``check`` and ``score``.

The first failing case shows the inputs' shapes and dtypes and the first entries that differ;
an answer that calls what the exercise asks for (the package's reference, torch's built-in
attention: see ``engine.guard``) scores 0 for that exercise.

In a notebook the result is shown as HTML (with a plain-text version alongside, which is what
a terminal or a test sees); nothing beyond IPython's own ``display`` is used, so it looks the
same in Colab.
"""

from __future__ import annotations

import html
import sys
import unicodedata
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional

from ...i18n import tr
from .compare import (
    METHOD_ERROR,
    NOT_ATTEMPTED,
    CaseResult,
    Outcome,
    expected_outputs,
    groups_passed,
    judge_all,
    points_earned,
)
from .guard import Guard
from .method import probe_for
from .notebook import replace_solutions
from .outputs import OutputProblem, error_where, short_message, to_arrays
from .registry import CHAPTERS, Exercise, all_exercises, chapter_key, get
from .scoring import group_verdicts

__all__ = ["CheckResult", "ScoreReport", "check", "score", "reset", "run_cases", "call"]

_RESULTS: Dict[str, CheckResult] = {}

HIDDEN_NOTE = (
    "Points re-checked on the functions as defined now. Grading adds hidden cases of the same kinds "
    "as these; a group of cases earns its share only when all its cases pass."
)

GREEN, AMBER, RED, GREY = "#1b7f3b", "#a15c00", "#b3261e", "#666666"


START_HERE = "not attempted yet: write your answer in the exercise cell, run it, then run this check again"


def _colon() -> str:
    """': ' between a label and what follows it ('：' in Chinese)."""
    return tr("{case}: {message}", case="", message="")


def _width(text: str) -> int:
    """Columns ``text`` takes in a monospaced terminal (a CJK character takes two)."""
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def _fmt_points(x: float) -> str:
    return f"{x:.2f}".rstrip("0").rstrip(".")


def _ipython() -> Any:
    if "IPython" not in sys.modules:
        return None
    try:
        from IPython import get_ipython

        return get_ipython()
    except Exception:
        return None


class _Shown:
    """Shown once by the function that made it, not again as the cell's value."""

    _shown_at: Any = None

    def text(self) -> str:  # pragma: no cover - overridden
        raise NotImplementedError

    def html(self) -> str:  # pragma: no cover - overridden
        raise NotImplementedError

    def show(self) -> None:
        ip = _ipython()
        if ip is None:
            print(self.text())
            return
        from IPython.display import display

        display({"text/plain": self.text(), "text/html": self.html()}, raw=True)
        self._shown_at = getattr(ip, "execution_count", None)

    def _ipython_display_(self) -> None:
        ip = _ipython()
        if (
            self._shown_at is not None
            and ip is not None
            and getattr(ip, "execution_count", None) == self._shown_at
        ):
            return  # check() already showed it in this cell
        from IPython.display import display

        display({"text/plain": self.text(), "text/html": self.html()}, raw=True)

    def __repr__(self) -> str:
        return self.text()


@dataclass(repr=False)
class CheckResult(_Shown):
    """The outcome of ``check``: points earned and one line per case."""

    exercise_id: str
    number: str
    title: str
    points: int
    cases: List[CaseResult] = field(default_factory=list)
    problem: str = ""  # set when the check itself could not run (unknown id, not a function)
    hints: List[str] = field(default_factory=list)  # shown with check(..., hint=True) only
    offer: str = ""  # after HINT_AFTER failing answers: how to ask for the hint (never the hint)
    untouched: bool = False  # the function's code is the handed-out code (a find-the-bug stub)

    @property
    def passed(self) -> bool:
        return bool(self.cases) and all(c.passed for c in self.cases)

    @property
    def n_passed(self) -> int:
        return sum(c.passed for c in self.cases)

    @property
    def shortcut(self) -> bool:
        """True when the answer used something the exercise forbids: the exercise scores 0."""
        return any(c.status == "shortcut" for c in self.cases)

    @property
    def method_broken(self) -> bool:
        """True when the answer broke the exercise's method rule: the exercise scores 0."""
        return any(c.status == "method" for c in self.cases)

    @property
    def earned(self) -> float:
        if not self.cases:
            return 0.0
        try:
            return points_earned(get(self.exercise_id), self.cases)
        except KeyError:
            return 0.0

    @property
    def groups(self) -> tuple:
        """(groups fully passed, groups)."""
        return groups_passed(self.cases)

    @property
    def not_attempted(self) -> bool:
        """Nothing written yet: the stub's ``NotImplementedError`` on every case."""
        return bool(self.cases) and all(c.status == "not attempted" for c in self.cases)

    @property
    def message(self) -> str:
        """The first failure's message ("" when every case passed)."""
        if self.problem:
            return self.problem
        return next((c.message for c in self.cases if not c.passed), "")

    def _title(self) -> str:
        if not self.number:
            return "check"
        return tr("Exercise {number} · {title}", number=self.number, title=tr(self.title))

    def _score(self) -> str:
        return tr("{earned}/{points} points", earned=_fmt_points(self.earned), points=self.points)

    def _lines(self) -> List[tuple]:
        """(mark, case name, status, message or "", detail lines) for every case.

        A message is not repeated; the details (inputs, first differences) go with the first
        failing case only.
        """
        rows, last, detailed = [], None, False
        for c in self.cases:
            if c.passed:
                rows.append(("✓", c.name, "", "", []))
                continue
            message = tr("same problem as above") if c.message == last else c.message
            details: List[str] = []
            if not detailed and c.status != "not attempted":
                details = ([tr("inputs: {inputs}", inputs=c.inputs)] if c.inputs else []) + list(c.details)
                detailed = True
            rows.append(("✗", c.name, tr(c.status), message, details))
            last = c.message
        return rows

    def text(self) -> str:
        if self.problem:
            return tr("{case}: {message}", case=self._title(), message=self.problem)
        head = tr("{case}: {message}", case=self._title(), message=self._score())
        if self.not_attempted:
            return f"{head} · {tr(START_HERE)}"
        head += self._verdict()
        lines = [head]
        for mark, name, status, msg, details in self._lines():
            label = f"{name} [{status}]" if status else name
            lines.append(f"  {mark} " + (tr("{case}: {message}", case=label, message=msg) if msg else label))
            lines += [f"      {d}" for d in details]
        lines += ["  " + tr("hint: {hint}", hint=tr(h)) for h in self.hints]
        lines += [f"  {self.offer}"] if self.offer else []
        return "\n".join(lines)

    def _verdict(self) -> str:
        if self.shortcut:
            return " · " + tr("the reference may not be used here, so this exercise scores 0")
        if self.method_broken:
            return " · " + tr("the method rule is broken, so this exercise scores 0")
        if self.passed:
            return " ✓ " + tr("all cases passed (grading adds hidden cases of the same kinds)")
        verdicts = group_verdicts(self.cases)
        won, total = sum(verdicts.values()), len(verdicts)
        if total > 1 and len(self.cases) > total:
            comma = tr(", ")
            passed = comma.join(tr(g) for g, ok in verdicts.items() if ok) or tr("none")
            failed = comma.join(tr(g) for g, ok in verdicts.items() if not ok)
            return " · " + tr(
                "{won} of {total} groups of cases passed (a group counts only when all its cases pass); "
                "passed: {passed}; not passed: {failed}",
                won=won,
                total=total,
                passed=passed,
                failed=failed,
            )
        return ""

    def html(self) -> str:
        esc = html.escape
        color = RED if self.problem or self.earned == 0 else GREEN if self.passed else AMBER
        style = (
            f"border-left:4px solid {color};padding:0.3em 0.8em;margin:0.3em 0;"
            "font-family:system-ui,-apple-system,'Segoe UI',sans-serif;font-size:0.95em;line-height:1.45"
        )
        if self.problem:
            return f'<div style="{style}"><b>{esc(self._title())}</b>{_colon()}{esc(self.problem)}</div>'
        head = f'<b>{esc(self._title())}</b>{_colon()}<b style="color:{color}">{esc(self._score())}</b>'
        if self.not_attempted:
            return f'<div style="{style}">{head} · {esc(tr(START_HERE))}</div>'
        head += esc(self._verdict())
        items = []
        for mark, name, status, msg, details in self._lines():
            c = GREEN if mark == "✓" else RED
            tag = f' <span style="color:{GREY}">[{esc(status)}]</span>' if status else ""
            detail = esc(tr("{case}: {message}", case="", message=msg)) if msg else ""
            more = "".join(
                f'<div style="color:{GREY};margin-left:1.4em;font-family:monospace;font-size:0.9em">{esc(d)}</div>'
                for d in details
            )
            items.append(
                f'<li style="list-style:none"><span style="color:{c}">{mark}</span> {esc(name)}{tag}{detail}{more}</li>'
            )
        items += [
            f'<li style="list-style:none">💡 {esc(tr("hint: {hint}", hint=tr(h)))}</li>' for h in self.hints
        ]
        items += [f'<li style="list-style:none;color:{GREY}">{esc(self.offer)}</li>'] if self.offer else []
        return f'<div style="{style}">{head}<ul style="margin:0.2em 0 0 0;padding-left:0.4em">{"".join(items)}</ul></div>'


@dataclass(repr=False)
class ScoreReport(_Shown):
    """Points per exercise of a chapter, from the latest ``check`` of each in this kernel."""

    chapter: str
    rows: List[tuple] = field(default_factory=list)  # (exercise, CheckResult or None)
    problem: str = ""

    @property
    def earned(self) -> float:
        return round(sum(r.earned for _, r in self.rows if r is not None), 2)

    @property
    def points(self) -> int:
        return sum(ex.points for ex, _ in self.rows)

    def _title(self) -> str:
        return tr(CHAPTERS[self.chapter][0]) if self.chapter in CHAPTERS else "score"

    @staticmethod
    def _status(r: Optional[CheckResult]) -> str:
        if r is None:
            return tr("not checked yet")
        if r.not_attempted or (r.untouched and not r.passed):
            return tr(NOT_ATTEMPTED)
        if r.shortcut:
            return tr("0: the reference may not be used here")
        if r.method_broken:
            return tr("0: the method rule is broken")
        if r.passed:
            return tr("all cases passed")
        return tr("{n} of {total} cases passed", n=r.n_passed, total=len(r.cases))

    def text(self) -> str:
        if self.problem:
            return f"score: {self.problem}"
        total = tr("{earned}/{points} points", earned=_fmt_points(self.earned), points=self.points)
        lines = [f"{self._title()}: {total}"]
        labels = [tr("Exercise {number}", number=ex.number) + " " + tr(ex.title) for ex, _ in self.rows]
        width = max((_width(label) for label in labels), default=0)
        for (ex, r), label in zip(self.rows, labels):
            mark = "·" if r is None else "✓" if r.passed else "✗"
            got = _fmt_points(r.earned) if r is not None else "0"
            label += " " * (width - _width(label))
            lines.append(f"  {mark} {label}  {got}/{ex.points}  {self._status(r)}")
        lines.append(tr(HIDDEN_NOTE))
        return "\n".join(lines)

    def html(self) -> str:
        esc = html.escape
        if self.problem:
            return f"<div><b>score</b>: {esc(self.problem)}</div>"
        full = self.points and self.earned == self.points
        color = GREEN if full else RED if self.earned == 0 else AMBER
        rows = []
        for ex, r in self.rows:
            mark = "·" if r is None else "✓" if r.passed else "✗"
            c = GREY if r is None else GREEN if r.passed else RED
            got = _fmt_points(r.earned) if r is not None else "0"
            rows.append(
                f'<tr><td style="color:{c};padding:0 0.4em">{mark}</td><td style="padding:0 0.6em 0 0">{esc(tr("Exercise {number}", number=ex.number))}</td>'
                f'<td style="padding:0 0.8em 0 0">{esc(tr(ex.title))}</td><td style="text-align:right;padding:0 0.8em 0 0">{got}/{ex.points}</td>'
                f'<td style="color:{GREY}">{esc(self._status(r))}</td></tr>'
            )
        style = (
            f"border-left:4px solid {color};padding:0.3em 0.8em;margin:0.3em 0;"
            "font-family:system-ui,-apple-system,'Segoe UI',sans-serif;font-size:0.95em"
        )
        total = tr("{earned}/{points} points", earned=_fmt_points(self.earned), points=self.points)
        head = f'<b>{esc(self._title())}</b>{_colon()}<b style="color:{color}">{esc(total)}</b>'
        note = f'<div style="color:{GREY};font-size:0.9em">{esc(tr(HIDDEN_NOTE))}</div>'
        return f'<div style="{style}">{head}<table style="border-collapse:collapse;margin-top:0.2em">{"".join(rows)}</table>{note}</div>'


def _to_kind(value: Any, kind: str) -> Any:
    import numpy as np

    if kind == "torch" and isinstance(value, np.ndarray):
        import torch

        return torch.from_numpy(value)
    return value


def call(exercise: Exercise, fn: Callable[..., Any], args: List[Any]) -> Outcome:
    """Run ``fn(*args)`` in this process and capture what happened as an ``Outcome``.

    The one path by which ``check`` and the grader's runner call an answer.  It runs under a
    ``Guard``: an answer that used what the exercise forbids gets ``Outcome.shortcut`` (the name of
    what it called), whatever it returned.  The return value is turned into arrays inside the
    guard too, so an object that computes lazily (``__array__``) is watched as well.
    """
    args = [_to_kind(a, exercise.array_kind) for a in args]
    guard = Guard(exercise, args)
    probe = probe_for(exercise)
    if probe is not None:
        args = probe.prepare(args)
    broken: List[Optional[str]] = [None]
    outcome: Optional[Outcome] = None

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # overflow warnings: the message explains them better
            arrays = guard.run(lambda: to_arrays(fn(*args), exercise.outputs))
            if probe is not None:  # after the guard: the probe's own checks are not the answer's calls
                broken[0] = probe.verdict(fn, args, arrays)
    except OutputProblem as e:
        outcome = Outcome("bad_output", message=short_message(e))
    except (Exception, SystemExit) as e:
        outcome = Outcome(
            "raised",
            error_type=type(e).__name__,
            message=short_message(e),
            where=error_where(e.__traceback__),
        )
    finally:
        if probe is not None and hasattr(probe, "close"):
            probe.close()
    if outcome is None:
        outcome = Outcome("returned", arrays)
        if broken[0]:
            outcome = Outcome("raised", error_type=METHOD_ERROR, message=broken[0])
    outcome.shortcut = guard.found
    return outcome


def run_cases(
    exercise: Exercise, fn: Callable[..., Any], cases: List[Any], *, hidden: bool = False
) -> List[CaseResult]:
    """Judge ``fn`` on ``cases`` in this process (``check`` uses the public ones), as the grader does."""
    expected = [expected_outputs(exercise, case) for case in cases]
    outcomes = [call(exercise, fn, case.args()) for case in cases]
    return judge_all(exercise, cases, expected, outcomes, [hidden] * len(cases))


HINT_AFTER = 3  # different failing answers to one exercise, after which check offers the hint
_TRIED: Dict[str, set] = {}


def _fingerprint(code: Any) -> Any:
    """What a function's code does, without where it was written: bytecode, names and constants,
    nested functions alike (line numbers and file names left out)."""
    consts = tuple(_fingerprint(c) if hasattr(c, "co_code") else c for c in code.co_consts)
    return (code.co_code, code.co_names, code.co_varnames, consts)


def _key(fn: Callable[..., Any]) -> Any:
    code = getattr(fn, "__code__", None)
    key = _fingerprint(code) if code is not None else id(fn)
    try:
        hash(key)
    except TypeError:
        key = id(fn)
    return key


def _untouched(exercise: Exercise, fn: Callable[..., Any]) -> bool:
    """True when ``fn`` is the handed-out code of an exercise with a stub of its own (the buggy code
    of a find-the-bug exercise): the learner has not changed it yet."""
    if exercise.stub is None or getattr(fn, "__code__", None) is None:
        return False
    if "stub" not in exercise._cache:
        module = compile(replace_solutions(exercise.solution, exercise.student_stub()), "<stub>", "exec")
        codes = [c for c in module.co_consts if getattr(c, "co_name", None) == exercise.function]
        exercise._cache["stub"] = _fingerprint(codes[0]) if codes else None
    return exercise._cache["stub"] is not None and _key(fn) == exercise._cache["stub"]


def _attempts(exercise_id: str, fn: Callable[..., Any], result: "CheckResult") -> int:
    """How many different answers (by their code) have failed this exercise in this kernel.

    A real attempt changes the code: re-running the untouched stub (or the handed-out buggy code)
    or the same wrong answer does not count.  A passing check starts the count again.
    """
    if result.passed or result.not_attempted:
        _TRIED.pop(exercise_id, None)
        return 0
    tried = _TRIED.setdefault(exercise_id, set())
    if not result.untouched:
        tried.add(_key(fn))
    return len(tried)


def _hints(exercise: Exercise, cases: List[CaseResult]) -> List[str]:
    """What ``hint=True`` adds: the recognised mistakes' hints that name the fix (the exercise's own
    when none is recognised); in a find-the-bug exercise, the recognised cause's message first,
    since its feedback showed only the symptom."""
    out: List[str] = []
    named = {c.diagnosis for c in cases if not c.passed and c.diagnosis}
    for i, d in enumerate(exercise.diagnoses):
        if (d.name or f"diagnosis {i + 1}") not in named:
            continue
        said = ([d.message] if exercise.kind == "diagnose" else []) + ([d.hint] if d.hint else [])
        out += [h for h in said if h not in out]
    if not out and any(not c.passed for c in cases) and exercise.hint:
        out.append(exercise.hint)  # every registered exercise has one (tests/test_scoring_policy.py)
    return out


def _offer(exercise: Exercise) -> str:
    """The one line that says how to ask for the hint (the hint itself is shown only when asked)."""
    call = f"check({exercise.id!r}, {exercise.function}, hint=True)"
    return tr("stuck? a hint is there when you ask for it: {call}", call=call)


def check(
    exercise_id: str, fn: Optional[Callable[..., Any]] = None, *, show: bool = True, hint: bool = False
) -> CheckResult:
    """Check your answer to one exercise on its public cases, show the result and return it.

    The feedback says what is wrong; ``hint=True`` adds a hint that names the fix.  After
    ``HINT_AFTER`` different failing answers the feedback says how to ask for the hint; it never
    shows it unasked.

    >>> result = check("ch01.stable_softmax", lambda x: x, show=False)
    >>> result.earned, result.points
    (0.0, 2)
    """
    try:
        exercise = get(exercise_id)
    except KeyError as e:
        result = CheckResult(str(exercise_id), "", "", 0, problem=str(e.args[0]))
    else:
        result = CheckResult(exercise.id, exercise.number, exercise.title, exercise.points)
        if fn is None or not callable(fn):
            got = tr("nothing") if fn is None else tr("a {type}", type=type(fn).__name__)
            result.problem = tr(
                "pass your function itself, e.g. {call}; got {got}",
                call=f"check({exercise.id!r}, {exercise.function})",
                got=got,
            )
        else:
            result.cases = run_cases(exercise, fn, exercise.public_cases())
            result.untouched = _untouched(exercise, fn)
            tries = _attempts(exercise.id, fn, result)
            if hint:
                result.hints = _hints(exercise, result.cases)
            elif tries >= HINT_AFTER and _hints(exercise, result.cases):
                result.offer = _offer(exercise)
            _RESULTS.pop(exercise.id, None)  # re-inserted last: score() without a chapter uses the latest
            _RESULTS[exercise.id] = result
    if show:
        result.show()
    return result


def score(chapter: Any = None, *, show: bool = True, namespace: Optional[dict] = None) -> ScoreReport:
    """Re-check every exercise of ``chapter`` on its function as defined now, add up and show it.

    ``chapter`` is ``"ch01"`` (or ``1``), ``"bugs"`` for the common-bugs appendix, or ``None``
    for the chapter of the most recent check.  The functions are looked up in ``namespace``
    (default: the globals of the caller, i.e. the notebook); an exercise whose function is not
    defined there keeps its latest ``check``.
    """
    ns = namespace if namespace is not None else sys._getframe(1).f_globals
    try:
        if chapter is None:
            if not _RESULTS:
                raise KeyError(
                    tr(
                        "no exercise has been checked yet in this kernel; pass a chapter, e.g. {call}",
                        call="score('ch01')",
                    )
                )
            chapter = list(_RESULTS)[-1].split(".")[0]
        key = chapter_key(chapter)
    except KeyError as e:
        report = ScoreReport(str(chapter), problem=str(e.args[0]))
    else:
        for ex in all_exercises(key):
            fn = next((f for f in map(ns.get, ex.function_names) if callable(f)), None)
            if fn is not None:
                check(ex.id, fn, show=False)
        report = ScoreReport(key, [(ex, _RESULTS.get(ex.id)) for ex in all_exercises(key)])
    if show:
        report.show()
    return report


def reset() -> None:
    """Forget every check run so far in this kernel."""
    _RESULTS.clear()
    _TRIED.clear()
