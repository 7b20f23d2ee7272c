"""Chapters 5-8: feedback is true of the answer in front of it, and names no fix or quantity.

Each test hands a wrong answer to ``check`` (public cases) and to the judging of every case,
hidden ones included, and holds the message to what that answer did.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from exercise_support import ROOT, load_hidden_cases

from attncourse.exercises import get
from attncourse.exercises.engine.check import check, run_cases

HIDDEN = load_hidden_cases(ROOT / "hidden_cases")


def _messages(ex_id, fn):
    """Every failing case's message, from check (public) and from all cases (hidden too)."""
    ex = get(ex_id)
    public = check(ex_id, fn, show=False).cases
    everything = run_cases(ex, fn, ex.public_cases() + list(HIDDEN.get(ex_id, lambda: [])()))
    return [c.message for c in list(public) + list(everything) if not c.passed], everything


# ----------------------------------------------------------------------------- 6.5
def test_isfinite_is_told_about_finite_blocking_values_not_a_threshold():
    messages, _ = _messages("ch06.mask_from_additive", lambda bias: np.isfinite(bias))
    assert messages
    assert not any("threshold" in m for m in messages)
    assert any("finfo" in m for m in messages)


def test_a_threshold_below_float16s_minimum_is_told_what_differs():
    messages, results = _messages("ch06.mask_from_additive", lambda bias: np.asarray(bias, np.float64) > -1e9)
    assert messages and all("float16" in m for m in messages)
    assert all(r.passed for r in results if "float16" not in r.name)  # right wherever no float16 case is


def test_the_dtypes_own_minimum_answers_get_full_marks():
    ex = get("ch06.mask_from_additive")
    cases = ex.public_cases() + list(HIDDEN[ex.id]())
    for fn in (lambda b: b > np.finfo(b.dtype).min / 2, lambda b: b > np.finfo(b.dtype).min):
        assert check(ex.id, fn, show=False).passed
        assert all(r.passed for r in run_cases(ex, fn, cases))


# ----------------------------------------------------------------------------- 6.6
def test_a_window_one_too_wide_is_not_handed_the_fix():
    ex = get("ch06.local_global_attention")
    d = next(d for d in ex.diagnoses if d.name == "window one too wide")
    assert ">=" not in d.message and "j >" not in d.message and "i - window" not in d.message
    messages, _ = _messages(ex.id, d.variant)
    assert messages and not any("not >=" in m for m in messages)
