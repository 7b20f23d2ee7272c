"""The exercises of every kind: each solution earns full marks on its public and hidden cases, the
student version (a stub, or the buggy code of a ``diagnose`` exercise) earns nothing, and every
classic wrong answer the exercise anticipates gets its own diagnosis."""

from __future__ import annotations

import warnings
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from attncourse.exercises import CHAPTERS, all_exercises, check, get, reset
from attncourse.exercises._check import run_cases
from attncourse.exercises._child import to_arrays
from attncourse.exercises._compare import Outcome, expected_outputs, judge
from attncourse.exercises._registry import KINDS
from attncourse.exercises.grader import load_hidden_cases
from attncourse.exercises.notebook import replace_solutions

ROOT = Path(__file__).resolve().parents[1]
HIDDEN = load_hidden_cases(ROOT / "grading")
EXERCISES = all_exercises()
# The exercises of the kinds beyond "implement", and those of chapters 0, 8 and 9.
NEW = [ex for ex in EXERCISES if ex.kind != "implement" or ex.chapter in ("ch00", "ch08", "ch09")]
NEW_IDS = [ex.id for ex in NEW]


def _needs_torch(ex):
    if ex.array_kind == "torch" or any("torch" in line for line in ex.needs):
        pytest.importorskip("torch")


def _compile(ex, source):
    namespace: dict = {}
    exec("\n".join(ex.needs), namespace)
    exec(source, namespace)
    return namespace[ex.function]


def _quiet(fn, *args):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")  # a wrong answer may well overflow or divide 0 by 0
        return fn(*args)


def _all_cases(ex):
    return ex.public_cases() + HIDDEN[ex.id]()


@pytest.fixture(autouse=True)
def _fresh_scores():
    reset()
    yield
    reset()


# ----------------------------------------------------------------------------- the targets


def test_every_chapter_has_four_exercises_of_two_kinds():
    for key in CHAPTERS:
        if key == "bugs":
            continue
        exercises = all_exercises(key)
        assert len(exercises) >= 4, (key, len(exercises))
        assert len({ex.kind for ex in exercises}) >= 2, (key, [ex.kind for ex in exercises])


def test_a_third_of_the_points_are_not_implement():
    points = Counter()
    for ex in EXERCISES:
        points[ex.kind] += ex.points
    assert set(points) <= set(KINDS)
    assert set(points) == set(KINDS), points  # every kind is used
    share = 1 - points["implement"] / sum(points.values())
    assert share >= 1 / 3, (share, points)


def test_the_appendix_exercises_are_diagnose():
    bugs = all_exercises("bugs")
    assert bugs and all(ex.kind == "diagnose" for ex in bugs)
    assert all(ex.stub for ex in bugs)  # the student sees the buggy line, not a blank


@pytest.mark.parametrize("ex_id", NEW_IDS)
def test_shape_of_an_exercise(ex_id):
    ex = get(ex_id)
    assert ex.description and ex.points >= 1
    assert ex_id in HIDDEN and HIDDEN[ex_id]()
    for case in _all_cases(ex):
        assert tuple(case.inputs) == ex.params, (ex_id, case.name)
    if ex.kind == "predict":
        assert ex.params == (), "a prediction is a zero-argument function"
    if ex.kind == "diagnose":
        assert ex.stub, "a diagnose exercise shows the buggy code in the student version"
    if ex.kind != "predict":  # arrays: some hidden case has batch dims, float32, L != S or a mask
        assert len(HIDDEN[ex_id]()) >= 2, ex_id


# ----------------------------------------------------------------------------- grading


@pytest.mark.parametrize("ex_id", NEW_IDS)
def test_the_solution_scores_full_marks_on_public_and_hidden_cases(ex_id):
    ex = get(ex_id)
    _needs_torch(ex)
    fn = ex.solution_function()
    result = check(ex_id, fn, show=False)
    assert result.passed and result.earned == ex.points, result.text()
    hidden = run_cases(ex, fn, HIDDEN[ex_id](), hidden=True)
    assert all(r.passed for r in hidden), [r.message for r in hidden if not r.passed]


@pytest.mark.parametrize("ex_id", NEW_IDS)
def test_the_student_version_scores_zero(ex_id):
    ex = get(ex_id)
    _needs_torch(ex)
    fn = _compile(ex, replace_solutions(ex.solution, ex.stub))
    result = check(ex_id, fn, show=False)
    assert result.earned == 0, result.text()
    hidden = run_cases(ex, fn, HIDDEN[ex_id](), hidden=True)
    assert not any(r.passed for r in hidden), ex_id
    if ex.stub is None:
        assert result.not_attempted, result.text()
    else:  # the buggy code is recognised: its own diagnosis, not a generic mismatch
        messages = {d.message for d in ex.diagnoses}
        assert any(r.message in messages for r in result.cases + hidden), result.text()


@pytest.mark.parametrize("ex_id", NEW_IDS)
def test_zeros_score_nothing(ex_id):
    ex = get(ex_id)
    _needs_torch(ex)
    for case in _all_cases(ex):
        expected = expected_outputs(ex, case)
        zeros = Outcome("returned", [np.zeros_like(e) for e in expected])
        assert not judge(ex, case, expected, zeros).passed, (ex_id, case.name)


@pytest.mark.parametrize(
    "ex_id, which",
    [(ex.id, i) for ex in NEW for i, d in enumerate(ex.diagnoses) if d.variant is not None],
)
def test_each_classic_mistake_gets_its_diagnosis(ex_id, which):
    ex = get(ex_id)
    _needs_torch(ex)
    diagnosis = ex.diagnoses[which]
    hits, failed = 0, 0
    for case in _all_cases(ex):
        wrong = _quiet(diagnosis.variant, *case.args())
        if wrong is None:
            continue
        expected = expected_outputs(ex, case)
        result = judge(ex, case, expected, Outcome("returned", to_arrays(wrong, ex.outputs)))
        failed += not result.passed  # (a mistake may be harmless on a case, e.g. equal distances)
        hits += result.message == diagnosis.message
    assert failed >= 1, "the wrong answer passes every case"
    assert hits >= 1, f"no case shows the diagnosis {diagnosis.message!r}"


# ----------------------------------------------------------------------------- predict


def test_a_prediction_is_graded_with_its_stated_tolerance():
    ex = get("ch03.predict_score_variance")
    assert ex.tolerance is not None
    rtol = ex.tolerance[0]
    exact = float(np.asarray(expected_outputs(ex, ex.public_cases()[0])[0]).reshape(-1)[0])
    assert check(ex.id, lambda: exact * (1 + rtol / 2), show=False).passed  # close enough
    assert not check(ex.id, lambda: exact * 10, show=False).passed  # a wrong order of magnitude
    assert not check(ex.id, lambda: exact * (1 + 3 * rtol), show=False).passed
