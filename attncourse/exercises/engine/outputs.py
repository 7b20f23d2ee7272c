"""What a learner's function gave back, as plain arrays, and where in their code it went wrong.

Shared by ``check`` (in the learner's kernel) and the grading runner (inside the sandbox): both
turn a return value into numpy arrays with ``to_arrays`` and describe an exception with
``short_message`` and ``error_where``.  Only the standard library and numpy are used here.
"""

from __future__ import annotations

import linecache
import os
import re
import sys
import traceback
from typing import Any, List, Sequence

import numpy as np

from ...i18n import tr

__all__ = ["OutputProblem", "to_arrays", "error_where", "short_message", "MAX_MESSAGE"]

MAX_MESSAGE = 300


class OutputProblem(Exception):
    """What a function returned cannot be compared (None, a string, the wrong number of results)."""


def _describe(value: Any) -> str:
    name = type(value).__name__
    if isinstance(value, (tuple, list)):
        return tr("a {type} of {n} items", type=name, n=len(value))
    return tr("a {type}", type=name) if name[0] not in "aeiouAEIOU" else tr("an {type}", type=name)


def _one_array(value: Any, label: str) -> np.ndarray:
    if value is None:
        raise OutputProblem(tr("{label} is None: did you forget `return`?", label=label))
    mod = type(value).__module__ or ""
    if mod.startswith("torch") and hasattr(value, "detach"):
        t = value.detach()
        if getattr(t, "is_conj", lambda: False)():
            t = t.resolve_conj()
        t = t.cpu()
        if str(t.dtype) == "torch.bfloat16":
            t = t.float()
        value = t.numpy()
    if isinstance(value, str):
        raise OutputProblem(tr("{label} is a string, not an array", label=label))
    try:
        arr = np.asarray(value)
    except Exception:
        raise OutputProblem(
            tr("{label} is {what}, not an array", label=label, what=_describe(value))
        ) from None
    if arr.dtype.kind not in "biuf":
        raise OutputProblem(
            tr(
                "{label} is {what} that is not an array of numbers (dtype {dtype})",
                label=label,
                what=_describe(value),
                dtype=arr.dtype,
            )
        )
    return np.ascontiguousarray(arr)


def to_arrays(value: Any, outputs: Sequence[str]) -> List[np.ndarray]:
    """The function's return value as one numpy array per expected output.

    Torch tensors are detached and moved to the CPU; numbers and nested lists become arrays.

    >>> [a.shape for a in to_arrays((np.zeros(2), [[1, 2]]), ("out", "weights"))]
    [(2,), (1, 2)]
    >>> to_arrays(None, ("result",))
    Traceback (most recent call last):
    ...
    attncourse.exercises.engine.outputs.OutputProblem: your function returned None: did you forget `return`?
    """
    if len(outputs) == 1:
        if value is None:
            raise OutputProblem(tr("your function returned None: did you forget `return`?"))
        if isinstance(value, (tuple, list)) and value and not _is_number_list(value):
            raise OutputProblem(
                tr("expected one array, but your function returned {what}", what=_describe(value))
            )
        return [_one_array(value, tr("your result"))]
    names = ", ".join(outputs)
    if not isinstance(value, (tuple, list)):
        if value is None:
            raise OutputProblem(
                tr("your function returned None: did you forget `return {names}`?", names=names)
            )
        raise OutputProblem(
            tr(
                "expected {n} results ({names}) as a tuple; got {what}",
                n=len(outputs),
                names=names,
                what=_describe(value),
            )
        )
    if len(value) != len(outputs):
        raise OutputProblem(
            tr(
                "expected {n} results ({names}); got {what}",
                n=len(outputs),
                names=names,
                what=_describe(value),
            )
        )
    return [_one_array(v, f"`{name}`") for v, name in zip(value, outputs)]


def _is_number_list(value: Any) -> bool:
    # [0.1, 0.2] or [[1, 2], [3, 4]] is an array written as a list; (out, weights) is not.
    try:
        return np.asarray(value).dtype.kind in "biuf"
    except Exception:
        return False


def short_message(exc: BaseException) -> str:
    """The first line of ``str(exc)``, at most ``MAX_MESSAGE`` characters (never raises)."""
    try:
        text = str(exc)
    except Exception:
        text = tr("(the exception's message could not be shown)")
    first = text.strip().splitlines()[0] if text.strip() else ""
    return first if len(first) <= MAX_MESSAGE else first[: MAX_MESSAGE - 1] + "…"


def _is_library(filename: str) -> bool:
    if filename.startswith("<frozen") or filename.startswith("<__array_function__"):
        return True
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # attncourse/
    roots = {sys.prefix, sys.base_prefix, sys.exec_prefix, here}
    return any(filename.startswith(r + os.sep) for r in roots if r)


def error_where(tb: Any) -> str:
    """Where in the learner's own code an exception happened: ``"line 4: e = np.exp(x)"``.

    The innermost frame outside the standard library, site-packages and ``attncourse``.
    """
    frames = [f for f in traceback.extract_tb(tb) if not _is_library(f.filename)]
    if not frames:
        return ""
    f = frames[-1]
    code = (f.line or linecache.getline(f.filename, f.lineno)).strip()
    if len(code) > 80:
        code = code[:79] + "…"
    cell = re.match(r"<cell (\d+)>", f.filename)
    prefix = (
        tr("cell {cell}, line {line}", cell=cell.group(1), line=f.lineno)
        if cell
        else tr("line {line}", line=f.lineno)
    )
    return f"{prefix}: {code}" if code else prefix
