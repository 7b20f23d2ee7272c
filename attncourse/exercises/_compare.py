"""Judge one answer on one case: pass, or fail with one message a learner can act on.

Used by ``check`` (in the learner's kernel, on the public cases) and by the grader (in the
instructor's process, on what a sandboxed run sent back).  In both, the expected output comes
from the exercise's trusted ``reference``, computed in float64 on a private copy of the inputs.

The tolerance depends on the lowest-precision float among the inputs, stated once here:

=========  ======  =======
inputs     rtol    atol
=========  ======  =======
float64    1e-6    1e-9
float32    1e-4    1e-6
float16    1e-2    1e-3
=========  ======  =======

float32 is looser than elementwise round-off because ``x - max`` of logits in the hundreds
already loses about 1e-5 relative; every wrong answer the cases are built to catch is off by
far more (a meta-test checks that zeros and the stub never pass).  An exercise may state its own
``tolerance`` instead (a ``predict`` exercise does: "within 10%"); the feedback then quotes it.

Every case ends in one status (``STATUSES``): ``passed``; ``not attempted`` (the stub's
``NotImplementedError``); ``raised`` (any other exception); ``wrong shape``; ``wrong values``;
``bad output`` (``None``, a string, the wrong number of results, a float where a mask was due);
``shortcut`` (the answer called what the exercise asks for, see ``_guard``); ``timeout``,
``missing`` (the function is not defined) and ``not run`` come from the grader.  A failure carries
one headline (the diagnosis of a classic mistake when one matches) and details: the inputs' shapes
and dtypes and the first entries that differ.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any, List, Optional, Sequence, Tuple

import numpy as np

from ._outputs import OutputProblem, to_arrays
from ._registry import Case, Exercise

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
    "points_earned",
    "groups_passed",
    "METHOD_ERROR",
]

TOLERANCES = {
    np.dtype(np.float64): (1e-6, 1e-9),
    np.dtype(np.float32): (1e-4, 1e-6),
    np.dtype(np.float16): (1e-2, 1e-3),
}

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
# The error type under which a broken method rule travels (``_check.call`` -> the grader's reply).
METHOD_ERROR = "MethodRuleBroken"


def tolerance_for(inputs: Sequence[Any]) -> Tuple[float, float]:
    """(rtol, atol) for the lowest-precision float array among ``inputs``."""
    floats = [np.asarray(a).dtype for a in inputs if isinstance(a, np.ndarray) and a.dtype.kind == "f"]
    lowest = min(floats, key=lambda d: d.itemsize) if floats else np.dtype(np.float64)
    return TOLERANCES.get(lowest, TOLERANCES[np.dtype(np.float16)])


def _tolerance(exercise: Exercise, case: Case) -> Tuple[float, float]:
    stated = getattr(exercise, "tolerance", None)
    return tuple(stated) if stated is not None else tolerance_for(case.args())


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
    may = f" This exercise lets you call: {', '.join(allowed)}." if allowed else ""
    return (
        f"the reference may not be used here: your answer calls {name}, which does what this exercise "
        f"asks you to write; it scores 0 until it works without it.{may}"
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


def groups_passed(cases: Sequence[CaseResult]) -> Tuple[int, int]:
    """(groups whose every case passed, groups): cases group by ``group`` (else by name)."""
    groups: dict = {}
    for c in cases:
        key = c.group or c.name
        if key.startswith("hidden: "):
            key = key[len("hidden: ") :]
        groups[key] = groups.get(key, True) and c.passed
    return sum(groups.values()), len(groups)


def points_earned(exercise: Exercise, cases: Sequence[CaseResult]) -> float:
    """The scoring policy, one for ``check`` and the grader.

    An answer that used what the exercise forbids (status ``shortcut``) or broke its method rule
    (status ``method``) scores 0.  Otherwise the points are shared equally among the case groups
    (``Case.group``: shape, masking, edge rows ...; hidden cases join the public groups of the same
    kind) and a group is earned only when every one of its cases passes.
    """
    if not cases or any(c.status in ("shortcut", "method") for c in cases):
        return 0.0
    won, total = groups_passed(cases)
    return round(exercise.points * won / total, 2)


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


def _fmt(x: Any) -> str:
    if isinstance(x, (bool, np.bool_)):
        return str(bool(x))
    if isinstance(x, (int, np.integer)):
        return str(int(x))
    x = float(x)
    if x.is_integer() and abs(x) < 1e15:
        return str(int(x))
    return f"{x:.4g}"


def _fmt_tol(tol: Tuple[float, float]) -> str:
    rtol, atol = tol
    parts = []
    if rtol:
        parts.append(f"{rtol:.0%} relative" if rtol >= 0.01 else f"rtol {rtol:g}")
    if atol:
        parts.append(f"atol {atol:g}")
    return " or ".join(parts) if parts else "exactly"


def _same_shape(expected: np.ndarray, got: np.ndarray) -> bool:
    return expected.shape == got.shape or expected.size == got.size == 1


def _close(
    expected: np.ndarray,
    got: np.ndarray,
    tol: Tuple[float, float],
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
    rtol, atol = tol
    with np.errstate(all="ignore"):
        return bool(
            np.allclose(
                got.astype(np.float64), expected.astype(np.float64), rtol=rtol, atol=atol, equal_nan=equal_nan
            )
        )


def _matches(
    expected: Sequence[np.ndarray],
    got: Sequence[np.ndarray],
    tol: Tuple[float, float],
    equal_nan: bool = False,
    exact_ints: bool = True,
) -> bool:
    return len(expected) == len(got) and all(
        _close(e, g, tol, equal_nan, exact_ints) for e, g in zip(expected, got)
    )


def _label(name: str) -> str:
    return "your result" if name == "result" else f"`{name}`"


def _first_differences(label: str, expected: np.ndarray, got: np.ndarray, tol: Tuple[float, float]) -> str:
    """'`weights`: 2 of 12 entries differ; first at (0, 1): expected 0.3, got 0.6; (1, 0): ...'."""
    if expected.size == got.size == 1:
        expected, got = expected.reshape(()), got.reshape(())
    if expected.ndim == 0:
        return f"{label}: expected {_fmt(expected)}, got {_fmt(got)}"
    if expected.dtype == np.bool_ or got.dtype == np.bool_:
        wrong = expected != got
    else:
        e, g = expected.astype(np.float64), got.astype(np.float64)
        rtol, atol = tol
        with np.errstate(all="ignore"):
            wrong = ~np.isclose(g, e, rtol=rtol, atol=atol)
    where = np.argwhere(wrong)
    shown = "; ".join(
        f"{_index(tuple(i))}: expected {_fmt(expected[tuple(i)])}, got {_fmt(got[tuple(i)])}"
        for i in where[:MAX_SHOWN]
    )
    return f"{label}: {len(where)} of {expected.size} entries differ; first at {shown}"


def _mismatch(
    name: str, expected: np.ndarray, got: np.ndarray, tol: Tuple[float, float], distribution: bool
) -> Tuple[str, str]:
    """(status, one sentence on how ``got`` differs from ``expected``)."""
    label = _label(name)
    if not _same_shape(expected, got):
        hint = ""
        es, gs = expected.shape, got.shape
        if len(es) >= 2 and gs == es[:-2] + (es[-1], es[-2]):
            hint = " (the last two axes are swapped)"
        elif expected.size == got.size:
            hint = " (the right number of entries in the wrong arrangement)"
        return "wrong shape", f"{label} has the wrong shape: expected {es}, got {gs}{hint}"
    if expected.size == got.size == 1:
        expected, got = expected.reshape(()), got.reshape(())
    if expected.dtype == np.bool_ and got.dtype != np.bool_:
        return (
            "bad output",
            f"{label} should be a boolean mask (dtype bool, True = may attend); got dtype {got.dtype}",
        )
    if expected.dtype == np.bool_:
        wrong = np.argwhere(expected != got)
        first = tuple(wrong[0]) if len(wrong) else ()
        where = f" at {_index(first)}" if first else ""
        return "wrong values", (
            f"{label}: {len(wrong)} of {expected.size} entries differ; first{where}: "
            f"expected {_fmt(expected[first])}, got {_fmt(got[first])}"
        )
    if got.dtype.kind not in "iuf":
        return "bad output", f"{label} has dtype {got.dtype}; expected numbers"
    if expected.ndim == 0:
        return "wrong values", f"{label}: expected {_fmt(expected)}, got {_fmt(got)}"
    g = got.astype(np.float64)
    e = expected.astype(np.float64)
    bad = ~np.isfinite(g) & np.isfinite(e)
    if bad.any():
        first = tuple(np.argwhere(bad)[0])
        what = "NaN" if np.isnan(g[first]) else "inf"
        return "wrong values", f"{label} has {what} at {_index(first)} where a finite number was expected"
    rtol, atol = tol
    if distribution:
        e_sum, g_sum = e.sum(axis=-1), g.sum(axis=-1)
        off = np.abs(g_sum - e_sum) > atol + rtol
        if off.any():
            first = tuple(np.argwhere(off)[0]) if g_sum.ndim else ()
            row = f"row {_index(first)}" if first else "the weights"
            verb = "does" if first else "do"
            if e_sum[first] > 0.5:
                return "wrong values", f"{row} of {label} {verb} not sum to 1 (sums to {_fmt(g_sum[first])})"
            return "wrong values", (
                f"{row} of {label} has nothing to attend to, so it should be all zeros "
                f"(sums to {_fmt(g_sum[first])})"
            )
    with np.errstate(all="ignore"):
        wrong = ~np.isclose(g, e, rtol=rtol, atol=atol)
    first = tuple(np.argwhere(wrong)[0]) if wrong.any() else tuple(0 for _ in e.shape)
    return "wrong values", (
        f"{label} differs from the expected values; the first difference is at {_index(first)}: "
        f"expected {_fmt(e[first])}, got {_fmt(g[first])}"
    )


def judge(
    exercise: Exercise,
    case: Case,
    expected: Sequence[np.ndarray],
    outcome: Outcome,
    *,
    hidden: bool = False,
) -> CaseResult:
    """Pass or fail ``outcome`` on ``case``, with one helpful message for a failure.

    A failure's ``details`` show the inputs' shapes and dtypes and the first entries that differ;
    ``message`` is the diagnosis of a classic mistake when one matches, else what differs.
    """
    name = f"hidden: {case.name}" if hidden else case.name
    inputs = describe_inputs(case)
    tol = _tolerance(exercise, case)
    stated = getattr(exercise, "tolerance", None) is not None

    group = getattr(case, "group", "") or case.name

    def fail(message: str, status: str, details: Sequence[str] = (), diagnosis: str = "") -> CaseResult:
        return CaseResult(name, False, message, status, hidden, inputs, list(details), group, diagnosis)

    if outcome.shortcut:
        allowed = exercise.allowed() if hasattr(exercise, "allowed") else ()
        return fail(shortcut_message(outcome.shortcut, allowed), "shortcut")
    if outcome.kind == "missing":
        return fail(f"`{exercise.function}` is not defined", "missing")
    if outcome.kind == "not_run":
        return fail(outcome.message or "was not run", "not run")
    if outcome.kind == "timeout":
        return fail(f"did not finish within {outcome.seconds:g} s (an endless loop?)", "timeout")
    if outcome.kind == "raised" and outcome.error_type == METHOD_ERROR:
        return fail(outcome.message, "method")
    if outcome.kind == "raised":
        text = f"{outcome.error_type}: {outcome.message}"
        for d in exercise.diagnoses:
            if d.error is not None:
                import re

                if re.search(d.error, text):
                    return fail(d.message, "raised", diagnosis=_name_of(exercise, d))
        if outcome.error_type == "NotImplementedError":
            return fail(NOT_ATTEMPTED, "not attempted")
        where = f" ({outcome.where})" if outcome.where else ""
        return fail(f"raised {text}{where}", "raised")
    if outcome.kind == "bad_output":
        return fail(outcome.message, "bad output")

    got = outcome.arrays
    exact_ints = not stated
    if _matches(expected, got, tol, exact_ints=exact_ints):
        return CaseResult(name, True, "", "passed", hidden, inputs, [], group)

    # What differs, output by output: the status, the headline and the details.
    status, headline, details = "wrong values", "does not match the expected result", []
    first = True
    for out_name, e, g in zip(exercise.outputs, expected, got):
        if _close(e, g, tol, exact_ints=exact_ints):
            continue
        out_status, sentence = _mismatch(out_name, e, g, tol, out_name in exercise.distributions)
        if first:
            status, headline, first = out_status, sentence, False
        if out_status == "wrong values" and _same_shape(e, g) and e.size > 1:
            details.append(_first_differences(_label(out_name), e, g, tol))
    if stated:
        phrase = _fmt_tol(tol)
        details.append(
            "accepted: exactly the expected value"
            if phrase == "exactly"
            else f"accepted: within {phrase} of the expected value"
        )
    for d in exercise.diagnoses:
        if d.variant is None:
            continue
        try:
            wrong = _quiet(d.variant, *case.args())
            if wrong is None:
                continue
            wrong = to_arrays(wrong, exercise.outputs)
        except (Exception, OutputProblem):
            continue
        if _matches(wrong, got, tol, equal_nan=True) and not _matches(wrong, expected, tol):
            return fail(d.message, status, details, _name_of(exercise, d))
    return fail(headline, status, details)


def _name_of(exercise: Exercise, diagnosis: Any) -> str:
    """The diagnosis's name; an unnamed one is known by its place in the exercise's list."""
    if getattr(diagnosis, "name", ""):
        return diagnosis.name
    return f"diagnosis {list(exercise.diagnoses).index(diagnosis) + 1}"
