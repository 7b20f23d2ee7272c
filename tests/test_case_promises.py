"""Every case, public and hidden, obeys what its exercise's prompt promises (``tests/case_promises``).

A hidden case that breaks its prompt costs a student who followed the prompt exactly, and the
feedback cannot say why; so every exercise needs a promise, and every case is held to it.
"""

from __future__ import annotations

import importlib
import pkgutil

import case_promises
import pytest
from exercise_support import ROOT, load_hidden_cases

from attncourse.exercises import all_exercises

HIDDEN = load_hidden_cases(ROOT / "hidden_cases")


def _promises() -> dict:
    out: dict = {}
    for info in pkgutil.iter_modules(case_promises.__path__):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"case_promises.{info.name}")
        for ex_id, rule in module.PROMISES.items():
            assert ex_id not in out, f"{ex_id} has two promises"
            out[ex_id] = rule
    return out


PROMISES = _promises()
IDS = [ex.id for ex in all_exercises()]


def test_every_exercise_has_a_promise():
    missing = [ex_id for ex_id in IDS if ex_id not in PROMISES]
    assert not missing, f"no promise in tests/case_promises for {missing}"
    unknown = [ex_id for ex_id in PROMISES if ex_id not in IDS]
    assert not unknown, f"promises for exercises that do not exist: {unknown}"


@pytest.mark.parametrize("ex_id", [i for i in IDS if i in PROMISES])
def test_every_case_obeys_its_prompt(ex_id):
    from attncourse.exercises import get

    ex = get(ex_id)
    cases = [("public", c) for c in ex.public_cases()]
    cases += [("hidden", c) for c in (HIDDEN[ex_id]() if ex_id in HIDDEN else [])]
    broken = []
    for where, case in cases:
        problems = PROMISES[ex_id](dict(case.inputs))
        broken += [f"{where} case {case.name!r}: {p}" for p in problems]
    assert not broken, f"{ex_id}:\n" + "\n".join(broken)


def test_a_promise_can_fail():
    """The rules catch what they promise to catch (the 6.5-style slip: float32's minimum in float64)."""
    import numpy as np
    from case_promises import _rules

    bias = np.array([0.0, np.finfo(np.float32).min, -np.inf])
    assert _rules.dtype_in("bias", bias.astype(np.float32), ["float64"])
    assert _rules.finite("x", bias)
    assert not _rules.finite("x", bias[:2])
    assert _rules.shape_is("x", bias, (2,))
    assert _rules.integer("n", 2.0)
    assert not _rules.integer("n", 3)
