"""Judge one answer on one case: pass, or fail with one message a learner can act on.

Used by ``check`` (in the learner's kernel, on the public cases) and by the grader (in the
instructor's process, on what a sandboxed run sent back).  In both, the expected output comes
from the exercise's trusted ``reference``, computed in float64 on a private copy of the inputs.

The tolerance depends on the precision of the case and of the answer: one table by dtype, in
``engine.tolerance`` (a correct answer in float32 or on torch tensors passes; a failure shows enough
digits to see the difference, the tolerance, and says when the answer has a lower precision than
the case; float32's at the finest unless the exercise is about precision).  An exercise may state
its own ``tolerance`` instead (a ``predict`` exercise does: "within 10%"); the feedback then quotes
it.  The expected value of a ``predict`` or ``derive`` exercise is never shown.  A ``predict``
answer, or a ``derive`` answer that is one number, is told only that it is wrong (a direction or a
size would let it be bisected); a ``derive`` answer's array entries say in words how far off they are.

Every case ends in one status (``STATUSES``): ``passed``; ``not attempted`` (the stub's
``NotImplementedError``); ``raised`` (any other exception); ``wrong shape``; ``wrong values``;
``bad output`` (``None``, a string, the wrong number of results, a float where a mask was due);
``shortcut`` (the answer called what the exercise asks for, see ``engine.guard``); ``timeout``,
``missing`` (the function is not defined) and ``not run`` come from the grader.  A failure carries
one headline (the diagnosis of a classic mistake when one matches, except in a ``diagnose``
exercise, whose cause is what the learner finds: there the headline is what any wrong answer gets
and ``CaseResult.diagnosis`` keeps the name for the hint) and details: the inputs' shapes and
dtypes and the first entries that differ.
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass, field
from typing import Any, List, Optional, Sequence, Tuple

import numpy as np

from ...i18n import tr
from .outputs import OutputProblem, to_arrays
from .registry import Case, Exercise
from .scoring import groups_passed, points_earned
from .tolerance import TOLERANCES, Tolerance, fmt, fmt_pair, how_far, tolerance_for

__all__ = [
    "TOLERANCES",
    "STATUSES",
    "NOT_ATTEMPTED",
    "tolerance_for",
    "describe_inputs",
    "shortcut_message",
    "Outcome",
    "CaseResult",
    "expected_outputs",
    "judge",
    "judge_all",
    "settle_diagnoses",
    "points_earned",
    "groups_passed",
    "METHOD_ERROR",
    "HIDDEN_VALUES",
]

NOT_ATTEMPTED = "not attempted yet"
STATUSES = (
    "passed",
    "not attempted",
    "raised",
    "wrong shape",
    "wrong values",
    "bad output",
    "shortcut",
    "method",
    "timeout",
    "missing",
    "not run",
)
MAX_SHOWN = 3  # differing entries listed in the details
# The error type under which a broken method rule travels (``engine.check.call`` -> the grader's reply).
METHOD_ERROR = "MethodRuleBroken"
# Kinds of exercise whose expected values the feedback never shows: the number is the answer.
HIDDEN_VALUES = ("predict", "derive")
# How much a failure says of the expected values: all of it, how far off in words, or only "wrong".
SHOW, HOW_FAR, ONLY_WRONG = "show", "how far", "only wrong"


def _tolerance(exercise: Exercise, case: Case, got: Sequence[np.ndarray] = ()) -> Tolerance:
    return tolerance_for(
        case.args(), got, getattr(exercise, "tolerance", None), bool(getattr(exercise, "precision", False))
    )


def _hiding(exercise: Exercise) -> str:
    """``SHOW`` the expected values; ``HOW_FAR`` (a ``derive`` exercise: a wrong entry is described
    in words, a wrong single number only called wrong); ``ONLY_WRONG`` (a ``predict`` exercise)."""
    kind = getattr(exercise, "kind", "")
    if kind not in HIDDEN_VALUES:
        return SHOW
    return ONLY_WRONG if kind == "predict" else HOW_FAR


def _describe_one(name: str, value: Any) -> str:
    if isinstance(value, np.ndarray):
        return f"{name} {tuple(value.shape)} {value.dtype}"
    mod = type(value).__module__ or ""
    if mod.startswith("torch") and hasattr(value, "shape") and hasattr(value, "dtype"):
        return f"{name} {tuple(value.shape)} {str(value.dtype).replace('torch.', 'torch ')}"
    text = repr(value)
    return f"{name} = {text if len(text) <= 40 else text[:39] + '…'}"


def describe_inputs(case: Case) -> str:
    """The case's inputs as the learner needs them: shapes and dtypes of arrays, values of the rest.

    >>> describe_inputs(Case("t", q=np.zeros((2, 4)), n_heads=2))
    'q (2, 4) float64, n_heads = 2'
    """
    return ", ".join(_describe_one(name, value) for name, value in case.inputs.items())


def shortcut_message(name: str, allowed: Sequence[str] = ()) -> str:
    """What a learner reads when the answer used the reference (or torch's built-in) it must replace.

    ``allowed`` (``Exercise.allowed()``) is named, so the learner knows what is left to use.
    """
    may = tr(" This exercise lets you call: {names}.", names=", ".join(allowed)) if allowed else ""
    return tr(
        "the reference may not be used here: your answer calls {name}, which does what this exercise "
        "asks you to write; it scores 0 until it works without it.{may}",
        name=name,
        may=may,
    )


@dataclass
class Outcome:
    """What happened when the learner's function ran on one case."""

    kind: str  # "returned", "raised", "timeout", "missing", "bad_output", "not_run"
    arrays: List[np.ndarray] = field(default_factory=list)
    error_type: str = ""
    message: str = ""
    where: str = ""
    seconds: float = 0.0
    # Set when the function used something the exercise forbids (the package's own reference,
    # torch's built-in attention ...): the text names it; that exercise then scores 0.
    shortcut: Optional[str] = None


@dataclass
class CaseResult:
    name: str
    passed: bool
    message: str = ""
    status: str = "passed"  # one of STATUSES
    hidden: bool = False
    inputs: str = ""  # the inputs' shapes and dtypes ("q (2, 4) float64, ...")
    details: List[str] = field(default_factory=list)  # the first entries that differ, the tolerance
    group: str = ""  # what the case tests (``Case.group``); scored all or nothing
    diagnosis: str = ""  # the name of the classic mistake recognised (``Diagnosis.name``), if any


def _upcast(value: Any) -> Any:
    if isinstance(value, np.ndarray) and value.dtype.kind == "f":
        return value.astype(np.float64)
    return value


def _quiet(fn: Any, *args: Any) -> Any:
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return fn(*args)


def expected_outputs(exercise: Exercise, case: Case) -> List[np.ndarray]:
    """The reference's outputs for ``case`` (float inputs upcast to float64)."""
    value = _quiet(exercise.reference, *[_upcast(a) for a in case.args()])
    return to_arrays(value, exercise.outputs)


def _index(idx: Tuple[int, ...]) -> str:
    return str(int(idx[0])) if len(idx) == 1 else str(tuple(int(i) for i in idx))


def _same_shape(expected: np.ndarray, got: np.ndarray) -> bool:
    return expected.shape == got.shape or expected.size == got.size == 1


def _off(expected: np.ndarray, got: np.ndarray, tol: Tolerance) -> np.ndarray:
    """Where ``got`` is further from ``expected`` than the tolerance allows (same shapes)."""
    e, g = expected.astype(np.float64), got.astype(np.float64)
    with np.errstate(all="ignore"):
        return ~np.isclose(g, e, rtol=tol.rtol, atol=tol.atol_for(e))


def _close(
    expected: np.ndarray,
    got: np.ndarray,
    tol: Tolerance,
    equal_nan: bool = False,
    exact_ints: bool = True,
) -> bool:
    if expected.shape != got.shape:
        if expected.size == got.size == 1:
            expected, got = expected.reshape(()), got.reshape(())
        else:
            return False
    if expected.dtype == np.bool_ or got.dtype == np.bool_:
        return expected.dtype == got.dtype and bool(np.array_equal(expected, got))
    if got.dtype.kind not in "iuf":
        return False
    if (
        expected.dtype.kind in "iu" and exact_ints
    ):  # counts and sizes: exact, whatever numeric dtype came back
        return bool(np.array_equal(expected.astype(np.float64), got.astype(np.float64)))
    e = expected.astype(np.float64)
    with np.errstate(all="ignore"):
        return bool(
            np.allclose(got.astype(np.float64), e, rtol=tol.rtol, atol=tol.atol_for(e), equal_nan=equal_nan)
        )


def _matches(
    expected: Sequence[np.ndarray],
    got: Sequence[np.ndarray],
    tol: Tolerance,
    equal_nan: bool = False,
    exact_ints: bool = True,
) -> bool:
    return len(expected) == len(got) and all(
        _close(e, g, tol, equal_nan, exact_ints) for e, g in zip(expected, got)
    )


def _label(name: str) -> str:
    return tr("your result") if name == "result" else f"`{name}`"


def _entry(e: Any, g: Any, hide: str) -> str:
    """'expected 0.3, got 0.6' (as many digits as it takes to differ), or for a hidden value
    'got 0.6 (about 2 times too large)' or 'got 0.6, which is wrong'."""
    if hide != SHOW:
        if hide == ONLY_WRONG or isinstance(e, (bool, np.bool_)) or isinstance(g, (bool, np.bool_)):
            return tr("got {got}, which is wrong", got=fmt(g))
        return tr("got {got} ({how_far})", got=fmt(g), how_far=how_far(e, g))
    es, gs = fmt_pair(e, g)
    return tr("expected {expected}, got {got}", expected=es, got=gs)


def _first_differences(
    label: str, expected: np.ndarray, got: np.ndarray, tol: Tolerance, hide: str = SHOW
) -> str:
    """'`weights`: 2 of 12 entries differ; first at (0, 1): expected 0.3, got 0.6; (1, 0): ...'."""
    if expected.size == got.size == 1:
        expected, got = expected.reshape(()), got.reshape(())
    if expected.ndim == 0:
        return f"{label}: {_entry(expected[()], got[()], hide)}"
    if expected.dtype == np.bool_ or got.dtype == np.bool_:
        wrong = expected != got
    else:
        wrong = _off(expected, got, tol)
    where = np.argwhere(wrong)
    shown = "; ".join(
        f"{_index(tuple(i))}: {_entry(expected[tuple(i)], got[tuple(i)], hide)}" for i in where[:MAX_SHOWN]
    )
    return tr(
        "{label}: {n} of {size} entries differ; first at {shown}",
        label=label,
        n=len(where),
        size=expected.size,
        shown=shown,
    )


def _near_miss(expected: np.ndarray, got: np.ndarray, first: Tuple[int, ...], tol: Tolerance) -> str:
    """' (off by 1.1e-08; float64 precision allows 5.2e-09 there)' for a float entry."""
    e, g = float(expected[first]), float(got[first])
    allowed = tol.allowed(e, expected.astype(np.float64))
    if tol.stated:
        return ""
    return tr(
        " (off by {off}; {precision} precision allows {allowed} there)",
        off=f"{abs(g - e):.2g}",
        precision=tol.precision,
        allowed=f"{allowed:.2g}",
    )


def _mismatch(
    name: str,
    expected: np.ndarray,
    got: np.ndarray,
    tol: Tolerance,
    distribution: bool,
    hide: str = SHOW,
) -> Tuple[str, str]:
    """(status, one sentence on how ``got`` differs from ``expected``)."""
    label = _label(name)
    if not _same_shape(expected, got):
        hint = ""
        es, gs = expected.shape, got.shape
        if len(es) >= 2 and gs == es[:-2] + (es[-1], es[-2]):
            hint = tr(" (the last two axes are swapped)")
        elif expected.size == got.size:
            hint = tr(" (the right number of entries in the wrong arrangement)")
        return "wrong shape", tr(
            "{label} has the wrong shape: expected {expected}, got {got}{hint}",
            label=label,
            expected=es,
            got=gs,
            hint=hint,
        )
    if expected.size == got.size == 1:
        expected, got = expected.reshape(()), got.reshape(())
    if expected.dtype == np.bool_ and got.dtype != np.bool_:
        return (
            "bad output",
            tr(
                "{label} should be a boolean mask (dtype bool, True = may attend); got dtype {dtype}",
                label=label,
                dtype=got.dtype,
            ),
        )
    if expected.dtype == np.bool_:
        wrong = np.argwhere(expected != got)
        first = tuple(wrong[0]) if len(wrong) else ()
        entry = _entry(expected[first], got[first], hide)
        if first:
            return "wrong values", tr(
                "{label}: {n} of {size} entries differ; first at {where}: {entry}",
                label=label,
                n=len(wrong),
                size=expected.size,
                where=_index(first),
                entry=entry,
            )
        return "wrong values", tr(
            "{label}: {n} of {size} entries differ; first: {entry}",
            label=label,
            n=len(wrong),
            size=expected.size,
            entry=entry,
        )
    if got.dtype.kind not in "iuf":
        return "bad output", tr("{label} has dtype {dtype}; expected numbers", label=label, dtype=got.dtype)
    if hide == ONLY_WRONG:  # no direction, no size, no place: nothing to bisect on
        return "wrong values", tr("{label} is wrong", label=label)
    if expected.ndim == 0:
        if hide != SHOW:  # one number: "too high" or "2 times too small" would let it be bisected
            return "wrong values", tr("{label} is wrong", label=label)
        near = _near_miss(expected, got, (), tol) if expected.dtype.kind == "f" else ""
        return "wrong values", f"{label}: {_entry(expected[()], got[()], False)}{near}"
    g = got.astype(np.float64)
    e = expected.astype(np.float64)
    bad = ~np.isfinite(g) & np.isfinite(e)
    if bad.any():
        first = tuple(np.argwhere(bad)[0])
        what = "NaN" if np.isnan(g[first]) else "inf"
        return "wrong values", tr(
            "{label} has {what} at {where} where a finite number was expected",
            label=label,
            what=what,
            where=_index(first),
        )
    if distribution:
        e_sum, g_sum = e.sum(axis=-1), g.sum(axis=-1)
        off = np.abs(g_sum - e_sum) > tol.atol + tol.rtol
        if off.any():
            first = tuple(np.argwhere(off)[0]) if g_sum.ndim else ()
            sums = fmt(g_sum[first])
            if e_sum[first] > 0.5 and first:
                return "wrong values", tr(
                    "row {row} of {label} does not sum to 1 (sums to {sums})",
                    row=_index(first),
                    label=label,
                    sums=sums,
                )
            if e_sum[first] > 0.5:
                return "wrong values", tr(
                    "the weights of {label} do not sum to 1 (sums to {sums})", label=label, sums=sums
                )
            if first:
                return "wrong values", tr(
                    "row {row} of {label} has nothing to attend to, so it should be all zeros (sums to {sums})",
                    row=_index(first),
                    label=label,
                    sums=sums,
                )
            return "wrong values", tr(
                "the weights of {label} have nothing to attend to, so they should be all zeros (sums to {sums})",
                label=label,
                sums=sums,
            )
    wrong = _off(expected, got, tol)
    first = tuple(np.argwhere(wrong)[0]) if wrong.any() else tuple(0 for _ in e.shape)
    near = "" if hide != SHOW else _near_miss(expected, got, first, tol)
    return "wrong values", tr(
        "{label} differs from the expected values; the first difference is at {where}: {entry}{near}",
        label=label,
        where=_index(first),
        entry=_entry(e[first], g[first], hide),
        near=near,
    )


def _variant_outputs(exercise: Exercise, diagnosis: Any, case: Case) -> Optional[List[np.ndarray]]:
    """The outputs of a diagnosis's wrong variant on ``case`` (``None`` when it has none there)."""
    if diagnosis.variant is None:
        return None
    try:
        wrong = _quiet(diagnosis.variant, *case.args())
        return None if wrong is None else to_arrays(wrong, exercise.outputs)
    except (Exception, OutputProblem):
        return None


def _shows(
    exercise: Exercise, diagnosis: Any, case: Case, expected: Sequence[np.ndarray], got, tol
) -> Optional[bool]:
    """Whether ``got`` shows the diagnosis's mistake on ``case``: ``None`` where the mistake
    cannot be told apart from the correct result there (or the diagnosis has no test)."""
    symptom = getattr(diagnosis, "symptom", None)
    if symptom is not None:
        try:
            if _quiet(symptom, list(expected), *case.args()):
                return None
            return bool(_quiet(symptom, list(got), *case.args()))
        except Exception:
            return None
    wrong = _variant_outputs(exercise, diagnosis, case)
    if wrong is None or _matches(wrong, expected, tol):
        return None
    return _matches(wrong, got, tol, equal_nan=True)


def judge(
    exercise: Exercise,
    case: Case,
    expected: Sequence[np.ndarray],
    outcome: Outcome,
    *,
    hidden: bool = False,
    diagnose: bool = True,
) -> CaseResult:
    """Pass or fail ``outcome`` on ``case``, with one helpful message for a failure.

    A failure's ``details`` show the inputs' shapes and dtypes, the first entries that differ and
    the tolerance.  ``message`` is what differs; when the answer matches a classic mistake (unless
    ``diagnose`` is false), ``diagnosis`` names it and, except in a ``diagnose`` exercise (where the
    cause is what the learner finds: ``_shown``), the mistake's message replaces what differs.
    """
    name = tr("hidden: {name}", name=tr(case.name)) if hidden else tr(case.name)
    inputs = describe_inputs(case)
    hide = _hiding(exercise)

    group = getattr(case, "group", "") or case.name

    def fail(message: str, status: str, details: Sequence[str] = (), diagnosis: Any = None) -> CaseResult:
        if diagnosis is None:
            return CaseResult(name, False, message, status, hidden, inputs, list(details), group)
        shown = _shown(exercise, diagnosis, message)
        return CaseResult(
            name, False, shown, status, hidden, inputs, list(details), group, _name_of(exercise, diagnosis)
        )

    if outcome.shortcut:
        allowed = exercise.allowed() if hasattr(exercise, "allowed") else ()
        return fail(shortcut_message(outcome.shortcut, allowed), "shortcut")
    if outcome.kind == "missing":
        return fail(tr("`{function}` is not defined", function=exercise.function), "missing")
    if outcome.kind == "not_run":
        return fail(tr(outcome.message or "was not run"), "not run")
    if outcome.kind == "timeout":
        return fail(
            tr("did not finish within {seconds} s (an endless loop?)", seconds=f"{outcome.seconds:g}"),
            "timeout",
        )
    if outcome.kind == "raised" and outcome.error_type == METHOD_ERROR:
        return fail(outcome.message, "method")
    if outcome.kind == "raised":
        text = f"{outcome.error_type}: {outcome.message}"
        if outcome.error_type == "NotImplementedError" and not any(
            diagnose and _raised_by(d, text, outcome.where) for d in exercise.diagnoses
        ):
            return fail(tr(NOT_ATTEMPTED), "not attempted")
        where = f" ({outcome.where})" if outcome.where else ""
        plain = tr("raised {error}{where}", error=text, where=where)
        for d in exercise.diagnoses if diagnose else ():
            if _raised_by(d, text, outcome.where):
                return fail(plain, "raised", diagnosis=d)
        return fail(plain, "raised")
    if outcome.kind == "bad_output":
        return fail(outcome.message, "bad output")

    got = outcome.arrays
    tol = _tolerance(exercise, case, got)
    exact_ints = not tol.stated
    if _matches(expected, got, tol, exact_ints=exact_ints):
        return CaseResult(name, True, "", "passed", hidden, inputs, [], group)

    # What differs, output by output: the status, the headline and the details.
    status, headline, details = "wrong values", tr("does not match the expected result"), []
    first, floats = True, False
    for out_name, e, g in zip(exercise.outputs, expected, got):
        if _close(e, g, tol, exact_ints=exact_ints):
            continue
        out_status, sentence = _mismatch(out_name, e, g, tol, out_name in exercise.distributions, hide)
        if first:
            status, headline, first = out_status, sentence, False
        # a mask or a count is compared exactly: no float tolerance is quoted for it
        floats = floats or (e.dtype.kind == "f" and g.dtype.kind != "b")
        if out_status == "wrong values" and _same_shape(e, g) and e.size > 1 and hide != ONLY_WRONG:
            details.append(_first_differences(_label(out_name), e, g, tol, hide))
    if tol.stated:
        phrase = tol.describe()
        details.append(
            tr("accepted: exactly the expected value")
            if not (tol.rtol or tol.atol)
            else tr("accepted: within {phrase} of the expected value", phrase=phrase)
        )
    elif status == "wrong values" and floats:
        details.append(tr("compared at {tolerance}", tolerance=tol.describe()))
        if tol.lowered:
            headline += f"; {tol.lowered_note()}"
    for d in exercise.diagnoses if diagnose else ():
        if _shows(exercise, d, case, expected, got, tol):
            return fail(headline, status, details, d)
    return fail(headline, status, details)


def _raised_by(diagnosis: Any, text: str, where: str) -> bool:
    """Whether an exception (``"ErrorType: message"``, raised at ``where``: ``"line 4: code"``) is the
    diagnosis's: its ``error`` pattern is in the text and, where it names the line (``at``), the
    exception was raised on such a line (the same error raised elsewhere is the learner's own)."""
    if diagnosis.error is None or not re.search(diagnosis.error, text):
        return False
    at = getattr(diagnosis, "at", None)
    if at is None:
        return True
    code = where.split(": ", 1)[1] if ": " in where else ""
    return bool(code) and re.search(at, code) is not None


def _shown(exercise: Exercise, diagnosis: Any, plain: str) -> str:
    """What the feedback shows for an answer that matches ``diagnosis``: its message (the symptom and
    the question that leads to the mistake), or in a ``diagnose`` exercise, where the cause is what
    the learner finds, ``plain``: what any wrong answer gets.  The message then comes with the hint."""
    return plain if getattr(exercise, "kind", "") == "diagnose" else tr(diagnosis.message)


def settle_diagnoses(
    exercise: Exercise,
    cases: Sequence[Case],
    expected: Sequence[Sequence[np.ndarray]],
    outcomes: Sequence[Outcome],
    results: List[CaseResult],
    hidden: Sequence[bool],
) -> List[CaseResult]:
    """Keep a diagnosis only where it is true of the answer: on every case where its mistake can be
    told apart from the correct result and the answer returned outputs, the answer shows it.

    A wrong answer that matches a variant on one case by coincidence (``L / N`` equal to the
    factor, a one-head case) but not on another gets the plain message instead.
    """
    named = {r.diagnosis for r in results if r.diagnosis}
    if not named:
        return results
    refuted = set()
    for d in exercise.diagnoses:
        name = _name_of(exercise, d)
        if name not in named or (d.variant is None and getattr(d, "symptom", None) is None):
            continue
        for case, exp, outcome in zip(cases, expected, outcomes):
            if outcome.kind != "returned" or outcome.shortcut:
                continue
            got = outcome.arrays
            if _shows(exercise, d, case, exp, got, _tolerance(exercise, case, got)) is False:
                refuted.add(name)
                break
    return [
        judge(exercise, c, e, o, hidden=h, diagnose=False) if r.diagnosis in refuted else r
        for c, e, o, r, h in zip(cases, expected, outcomes, results, hidden)
    ]


def judge_all(
    exercise: Exercise,
    cases: Sequence[Case],
    expected: Sequence[Sequence[np.ndarray]],
    outcomes: Sequence[Outcome],
    hidden: Sequence[bool] = (),
) -> List[CaseResult]:
    """Judge an answer on all its cases at once: ``judge`` each, then ``settle_diagnoses``.

    The one path by which ``check`` and the grader judge an exercise.
    """
    flags = list(hidden) or [False] * len(cases)
    results = [judge(exercise, c, e, o, hidden=h) for c, e, o, h in zip(cases, expected, outcomes, flags)]
    return settle_diagnoses(exercise, cases, expected, outcomes, results, flags)


def _name_of(exercise: Exercise, diagnosis: Any) -> str:
    """The diagnosis's name; an unnamed one is known by its place in the exercise's list."""
    if getattr(diagnosis, "name", ""):
        return diagnosis.name
    return f"diagnosis {list(exercise.diagnoses).index(diagnosis) + 1}"
