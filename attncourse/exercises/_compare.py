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
far more (a meta-test checks that zeros and the stub never pass).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Optional, Any, List, Sequence, Tuple

import numpy as np

from ._child import OutputProblem, to_arrays
from ._registry import Case, Exercise

__all__ = ["TOLERANCES", "tolerance_for", "Outcome", "CaseResult", "expected_outputs", "judge"]

TOLERANCES = {
    np.dtype(np.float64): (1e-6, 1e-9),
    np.dtype(np.float32): (1e-4, 1e-6),
    np.dtype(np.float16): (1e-2, 1e-3),
}

NOT_ATTEMPTED = "not attempted yet"


def tolerance_for(inputs: Sequence[Any]) -> Tuple[float, float]:
    """(rtol, atol) for the lowest-precision float array among ``inputs``."""
    floats = [np.asarray(a).dtype for a in inputs if isinstance(a, np.ndarray) and a.dtype.kind == "f"]
    lowest = min(floats, key=lambda d: d.itemsize) if floats else np.dtype(np.float64)
    return TOLERANCES.get(lowest, TOLERANCES[np.dtype(np.float16)])


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
    status: str = "passed"  # "passed", "failed", "not attempted", "error", "timeout", "missing"
    hidden: bool = False


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
    return str(idx[0]) if len(idx) == 1 else str(tuple(int(i) for i in idx))


def _fmt(x: Any) -> str:
    if isinstance(x, (bool, np.bool_)):
        return str(bool(x))
    if isinstance(x, (int, np.integer)):
        return str(int(x))
    return f"{float(x):.4g}"


def _close(expected: np.ndarray, got: np.ndarray, tol: Tuple[float, float], equal_nan: bool = False) -> bool:
    if expected.shape != got.shape:
        if expected.size == got.size == 1:
            expected, got = expected.reshape(()), got.reshape(())
        else:
            return False
    if expected.dtype == np.bool_ or got.dtype == np.bool_:
        return expected.dtype == got.dtype and bool(np.array_equal(expected, got))
    if expected.dtype.kind in "iu":  # counts and sizes: exact, whatever numeric dtype came back
        return got.dtype.kind in "iuf" and bool(
            np.array_equal(expected.astype(np.float64), got.astype(np.float64))
        )
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
) -> bool:
    return len(expected) == len(got) and all(_close(e, g, tol, equal_nan) for e, g in zip(expected, got))


def _mismatch(
    name: str, expected: np.ndarray, got: np.ndarray, tol: Tuple[float, float], distribution: bool
) -> str:
    """One sentence on how ``got`` differs from ``expected``."""
    label = "your result" if name == "result" else f"`{name}`"
    if expected.shape != got.shape and not (expected.size == got.size == 1):
        hint = ""
        es, gs = expected.shape, got.shape
        if len(es) >= 2 and gs == es[:-2] + (es[-1], es[-2]):
            hint = " (the last two axes are swapped)"
        elif expected.size == got.size:
            hint = " (the right number of entries in the wrong arrangement)"
        return f"{label} has the wrong shape: expected {es}, got {gs}{hint}"
    if expected.size == got.size == 1:
        expected, got = expected.reshape(()), got.reshape(())
    if expected.dtype == np.bool_ and got.dtype != np.bool_:
        return f"{label} should be a boolean mask (dtype bool, True = may attend); got dtype {got.dtype}"
    if expected.dtype == np.bool_:
        wrong = np.argwhere(expected != got)
        first = tuple(wrong[0]) if len(wrong) else ()
        where = f" at {_index(first)}" if first else ""
        return (
            f"{label}: {len(wrong)} of {expected.size} entries differ; first{where}: "
            f"expected {_fmt(expected[first])}, got {_fmt(got[first])}"
        )
    if expected.ndim == 0:
        return f"{label}: expected {_fmt(expected)}, got {_fmt(got)}"
    g = got.astype(np.float64)
    e = expected.astype(np.float64)
    bad = ~np.isfinite(g) & np.isfinite(e)
    if bad.any():
        first = tuple(np.argwhere(bad)[0])
        what = "NaN" if np.isnan(g[first]) else "inf"
        return f"{label} has {what} at {_index(first)} where a finite number was expected"
    rtol, atol = tol
    if distribution:
        e_sum, g_sum = e.sum(axis=-1), g.sum(axis=-1)
        off = np.abs(g_sum - e_sum) > atol + rtol
        if off.any():
            first = tuple(np.argwhere(off)[0]) if g_sum.ndim else ()
            row = f"row {_index(first)}" if first else "the weights"
            verb = "does" if first else "do"
            if e_sum[first] > 0.5:
                return f"{row} of {label} {verb} not sum to 1 (sums to {_fmt(g_sum[first])})"
            return f"{row} of {label} has nothing to attend to, so it should be all zeros (sums to {_fmt(g_sum[first])})"
    with np.errstate(invalid="ignore"):  # inf - inf where the expected value is infinite
        err = np.abs(g - e) - rtol * np.abs(e)
    first = tuple(np.unravel_index(int(np.argmax(err)), err.shape))
    return (
        f"{label} differs from the expected values; the largest difference is at {_index(first)}: "
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
    """Pass or fail ``outcome`` on ``case``, with one helpful message for a failure."""
    name = f"hidden: {case.name}" if hidden else case.name

    def fail(message: str, status: str = "failed") -> CaseResult:
        return CaseResult(name, False, message, status, hidden)

    if outcome.kind == "missing":
        return fail(f"`{exercise.function}` is not defined", "missing")
    if outcome.kind == "not_run":
        return fail(outcome.message or "was not run", "error")
    if outcome.kind == "timeout":
        return fail(f"did not finish within {outcome.seconds:g} s (an endless loop?)", "timeout")
    if outcome.kind == "raised":
        text = f"{outcome.error_type}: {outcome.message}"
        for d in exercise.diagnoses:
            if d.error is not None:
                import re

                if re.search(d.error, text):
                    return fail(d.message, "error")
        if outcome.error_type == "NotImplementedError":
            return fail(NOT_ATTEMPTED, "not attempted")
        where = f" ({outcome.where})" if outcome.where else ""
        return fail(f"raised {text}{where}", "error")
    if outcome.kind == "bad_output":
        return fail(outcome.message)

    got = outcome.arrays
    tol = exercise.tolerance or tolerance_for(case.args())
    if _matches(expected, got, tol):
        return CaseResult(name, True, "", "passed", hidden)
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
            return fail(d.message)
    for out_name, e, g in zip(exercise.outputs, expected, got):
        if not _close(e, g, tol):
            return fail(_mismatch(out_name, e, g, tol, out_name in exercise.distributions))
    return fail("does not match the expected result")  # pragma: no cover - every branch above returns
