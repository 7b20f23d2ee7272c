"""How close an answer must be, by its precision, and how a difference is put into words.

One tolerance table by dtype, the one the package's own tests use (``tests/support.py``):

=========  ======  =====================================
precision  rtol    atol (x the largest expected magnitude, at least 1)
=========  ======  =====================================
float64    1e-7    1e-9
float32    1e-5    1e-5
bfloat16   5e-2    5e-2
float16    1e-2    1e-2
=========  ======  =====================================

An answer is judged at the lowest of three precisions: the case's (its lowest-precision float
input), the answer's own (its lowest-precision float output) and float32, unless the exercise is
about precision (``Exercise.precision``).  So a correct answer computed in float32
(``.float()``, ``astype(np.float32)``, torch's default) passes a float64 case, also when it is
returned as float64 (``.double().numpy()``: its dtype does not show how it was computed), and a
float64 answer on a float16 case is judged as float16.  An exercise about precision judges at the
case's and the answer's precision only, so float64's tolerance tells a float64 answer apart there.  ``atol`` is scaled by the largest finite
magnitude among the expected values (at least 1: the intermediate values of a computation, such
as probabilities near 1 whose differences are the result, are rarely smaller), so entries near
zero, where float32 round-off is larger than any relative tolerance, pass; every wrong answer
the cases catch is off by far more.

A bfloat16 tensor reaches the judge as float32 (numpy has no bfloat16): a float32 array whose
every entry has the 16 low bits clear, and some entry more than the few leading bits of a round
number, is taken for one.

An exercise may state its own ``tolerance`` instead (a ``predict`` exercise: "within 10%"): it
is absolute, used as stated and quoted in the feedback.

For ``derive`` exercises with array outputs the expected values are never shown: ``how_far``
says in words how far off an entry is (the order of magnitude, a factor, too high or too low).
A ``predict`` answer, or a ``derive`` answer that is one number, is only told that it is wrong
(``engine.compare``): a direction or a size would let it be found by bisection.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Optional, Sequence, Tuple

import numpy as np

from ...i18n import tr

__all__ = [
    "TOLERANCES",
    "FLOOR",
    "Tolerance",
    "precision_of",
    "tolerance_for",
    "fmt",
    "fmt_pair",
    "how_far",
]

# the finest precision an answer is judged at, unless the exercise is about precision
FLOOR = "float32"
# precision -> (rtol, atol relative to the largest expected magnitude); loosest last
TOLERANCES = {
    "float64": (1e-7, 1e-9),
    "float32": (1e-5, 1e-5),
    "float16": (1e-2, 1e-2),
    "bfloat16": (5e-2, 5e-2),
}
_ORDER = list(TOLERANCES)  # finest first


def _looks_bfloat16(arr: np.ndarray) -> bool:
    if arr.dtype != np.float32 or arr.size < 2:
        return False
    bits = np.ascontiguousarray(arr).view(np.uint32)
    finite = np.isfinite(arr)
    if not finite.any() or (bits[finite] & 0xFFFF).any():
        return False
    # some entry uses the low bits of bfloat16's 7-bit mantissa: not only round numbers (0.5, 3)
    return bool(((bits[finite] >> 16) & 0xF).any())


def precision_of(arrays: Sequence[Any]) -> Optional[str]:
    """The lowest precision among the float arrays in ``arrays`` (``None`` when there is none)."""
    found = []
    for a in arrays:
        if not isinstance(a, np.ndarray) or a.dtype.kind != "f":
            continue
        if _looks_bfloat16(a):
            found.append("bfloat16")
        else:
            found.append({2: "float16", 4: "float32"}.get(a.dtype.itemsize, "float64"))
    return max(found, key=_ORDER.index) if found else None


@dataclass(frozen=True)
class Tolerance:
    """How close one case's answer must be: ``|got - expected| <= atol_for(expected) + rtol |expected|``."""

    rtol: float
    atol: float
    precision: str = "float64"  # the precision the answer is judged at
    case_precision: str = "float64"  # the precision of the case's inputs
    stated: bool = False  # the exercise's own tolerance (absolute ``atol``, quoted in the feedback)
    answer_precision: str = ""  # the precision of the answer's outputs ("" when they hold no floats)

    @property
    def lowered(self) -> bool:
        """True when the answer's outputs have a lower precision than the case's inputs."""
        answer = self.answer_precision or self.case_precision
        return not self.stated and _ORDER.index(answer) > _ORDER.index(self.case_precision)

    def atol_for(self, expected: np.ndarray) -> float:
        if self.stated:
            return self.atol
        e = np.asarray(expected, dtype=np.float64)
        finite = np.abs(e[np.isfinite(e)])
        scale = max(1.0, float(finite.max())) if finite.size else 1.0
        return self.atol * scale

    def allowed(self, expected_entry: float, expected: np.ndarray) -> float:
        """The largest difference accepted at one entry."""
        return self.atol_for(expected) + self.rtol * abs(float(expected_entry))

    def describe(self) -> str:
        """'float32 precision (rtol 1e-05, atol 1e-05 x the largest expected magnitude)'."""
        if self.stated:
            return _stated_phrase(self.rtol, self.atol)
        return tr(
            "{precision} precision (rtol {rtol}, atol {atol} x the largest expected magnitude, at least 1)",
            precision=self.precision,
            rtol=f"{self.rtol:g}",
            atol=f"{self.atol:g}",
        )

    def lowered_note(self, what: str = "") -> str:
        return tr(
            "{what} is {answer} while the case's inputs are {case}, so it is compared at {precision} precision",
            what=what or tr("your result"),
            answer=self.answer_precision,
            case=self.case_precision,
            precision=self.precision,
        )


def _stated_phrase(rtol: float, atol: float) -> str:
    parts = []
    if rtol:
        parts.append(tr("{percent} relative", percent=f"{rtol:.0%}") if rtol >= 0.01 else f"rtol {rtol:g}")
    if atol:
        parts.append(f"atol {atol:g}")
    return tr(" or ").join(parts) if parts else tr("exactly")


def tolerance_for(
    inputs: Sequence[Any],
    outputs: Sequence[Any] = (),
    stated: Optional[Tuple[float, float]] = None,
    precision: bool = True,
) -> Tolerance:
    """The tolerance for a case with these inputs and an answer with these outputs.

    ``precision`` is ``Exercise.precision``: false (an exercise not about precision) judges at
    float32's tolerance at the finest.

    >>> t = tolerance_for([np.zeros(3)], [np.zeros(3, dtype=np.float32)])
    >>> t.precision, t.case_precision, t.lowered
    ('float32', 'float64', True)
    >>> tolerance_for([np.zeros(3)], [np.zeros(3)], precision=False).precision
    'float32'
    """
    case = precision_of(list(inputs)) or "float64"
    if stated is not None:
        return Tolerance(float(stated[0]), float(stated[1]), case, case, stated=True)
    answer = precision_of(list(outputs)) or ""
    judged = max(case, answer or case, *(() if precision else (FLOOR,)), key=_ORDER.index)
    rtol, atol = TOLERANCES[judged]
    return Tolerance(rtol, atol, judged, case, answer_precision=answer)


def fmt(x: Any, digits: int = 4) -> str:
    """A number as the feedback shows it (``digits`` significant digits)."""
    if isinstance(x, (bool, np.bool_)):
        return str(bool(x))
    if isinstance(x, (int, np.integer)):
        return str(int(x))
    x = float(x)
    if x.is_integer() and abs(x) < 1e15:
        return str(int(x))
    return f"{x:.{digits}g}"


def fmt_pair(expected: Any, got: Any) -> Tuple[str, str]:
    """Both numbers with enough digits that they differ on the page (4 at least, 17 at most)."""
    if isinstance(expected, (bool, np.bool_)) or isinstance(got, (bool, np.bool_)):
        return fmt(expected), fmt(got)
    for digits in range(4, 18):
        e, g = fmt(expected, digits), fmt(got, digits)
        if e != g:
            return e, g
    return fmt(expected, 17), fmt(got, 17)


def how_far(expected: float, got: float) -> str:
    """How far ``got`` is from ``expected``, in words that do not give ``expected`` away.

    >>> how_far(655360.0, 6553600.0)
    'about 10 times too large (off by an order of magnitude)'
    >>> how_far(197.0, 198.0)
    'close, but too high (within 1%)'
    """
    e, g = float(expected), float(got)
    if not math.isfinite(g):
        return tr("not a finite number")
    if e == 0:
        return tr("too high") if g > 0 else tr("too low")
    if g == 0:
        return tr("zero, and it should not be: what contributes to it?")
    if (e > 0) != (g > 0):
        return tr("the wrong sign")
    ratio = g / e
    large, r = ratio > 1, ratio if ratio > 1 else 1 / ratio
    if r >= 10**1.5:
        power = round(math.log10(r))
        if large:
            return tr("about 10^{power} times too large (off by orders of magnitude)", power=power)
        return tr("about 10^{power} times too small (off by orders of magnitude)", power=power)
    for k in (2, 3, 4, 5, 6, 8):
        if abs(r / k - 1) < 0.03:
            return tr("about {k} times too large", k=k) if large else tr("about {k} times too small", k=k)
    if r >= 10**0.5:
        if large:
            return tr("about 10 times too large (off by an order of magnitude)")
        return tr("about 10 times too small (off by an order of magnitude)")
    high = g > e
    if r < 1.01:
        return tr("close, but too high (within 1%)") if high else tr("close, but too low (within 1%)")
    if r < 1.1:
        return tr("close, but too high (within 10%)") if high else tr("close, but too low (within 10%)")
    if r < 1.5:
        return tr("too high, by less than half") if high else tr("too low, by less than half")
    return (
        tr("too high, by a factor between 1.5 and 3")
        if high
        else tr("too low, by a factor between 1.5 and 3")
    )
