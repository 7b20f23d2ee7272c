"""One judge: every answer of tests/fidelity/answers_*.py gets the same mark from ``check`` and from
the grader; every correct one gets full marks, every wrong one less.

Answers modules (one per chapter key: ``answers_ch00.py`` ... ``answers_ch13.py``,
``answers_bugs.py``; chapter 6's two modules' exercises are both in ``answers_ch06.py``) define::

    CORRECT = {"ch04.project_qkv": {"einsum": "def project_qkv(...): ...", ...}}
    WRONG = {"ch04.project_qkv": {"transposed weights": "def project_qkv(...): ..."}}

A value is one cell's source, or a list of sources: cells the student added before the exercise
cell, then the exercise cell.  An answer may use any name the chapter's cells import.  The
mutation table's hand-written wrong answers are added to the chapters that have a module, and the
registry's wrong variants are judged too (see ``fidelity/harness.py``).

Each test collects every failure and reports them in one table (exercise, answer, check mark,
grade mark), so one run shows all of them.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from exercise_support import ROOT, load_hidden_cases

sys.path.insert(0, str(Path(__file__).resolve().parent / "fidelity"))

import harness  # noqa: E402

from attncourse.exercises import CHAPTERS as ALL_CHAPTERS  # noqa: E402
from attncourse.exercises import all_exercises, get  # noqa: E402

ANSWERS = harness.load_answers()
SLOTS = harness.slots(ANSWERS)
CHAPTERS = sorted(harness.answer_modules())


def test_every_exercise_of_a_chapter_with_answers_has_three_correct_ones_and_a_wrong_one():
    if not CHAPTERS:
        pytest.skip("no answers module yet")
    missing = []
    for chapter in CHAPTERS:
        for ex in all_exercises(chapter):
            correct = [a for a in ANSWERS if a.exercise_id == ex.id and a.correct]
            wrong = [a for a in ANSWERS if a.exercise_id == ex.id and not a.correct]
            if len(correct) < 3 or not wrong:
                missing.append(f"{ex.id}: {len(correct)} correct, {len(wrong)} wrong")
    assert not missing, "answers missing:\n" + "\n".join(missing)


def test_every_answer_defines_its_function_in_its_exercise_cell():
    bad = []
    for a in ANSWERS:
        source = a.cells[-1]
        function = get(a.exercise_id).function
        if f"def {function}(" not in source and f"{function} =" not in source:
            bad.append(f"{a.exercise_id} [{a.label}]")
    assert not bad, "these answers do not define the exercise's function:\n" + "\n".join(bad)


@pytest.mark.parametrize("chapter", list(ALL_CHAPTERS))
def test_every_case_is_in_a_public_group_of_its_kind(chapter):
    """Public cases name their group; a hidden case joins one of them, never a group of its own."""
    hidden = load_hidden_cases(ROOT / "hidden_cases")
    bad = []
    for ex in all_exercises(chapter):
        public = ex.public_cases()
        groups = {c.group for c in public}
        bad += [f"{ex.id}: public case {c.name!r} has no group" for c in public if c.group == c.name]
        for c in hidden[ex.id]() if ex.id in hidden else []:
            if c.group not in groups:
                bad.append(
                    f"{ex.id}: hidden case {c.name!r} is in group {c.group!r}, not one of {sorted(groups)}"
                )
    assert not bad, "\n".join(bad)


@pytest.fixture(scope="module")
def check_results():
    """(answer, check mark) for every answer, each slot run as a student runs the notebook."""
    pytest.importorskip("torch")  # the chapters' import cells need what the book needs (not numpy-only)
    out = []
    for chapter, chapter_slots in SLOTS.items():
        student = harness.student_notebook(chapter)
        for slot in chapter_slots:
            marks = harness.check_marks(student, slot)
            out += [(a, marks[ex_id]) for ex_id, a in slot.items()]
    return out


@pytest.mark.slow
def test_check_gives_full_marks_to_every_correct_answer_and_less_to_every_wrong_one(check_results):
    rows = []
    for a, mark in check_results:
        why = harness.problems(a.label, a.exercise_id, a.correct, mark, None)
        if why:
            rows.append((a.exercise_id, a.label, "correct" if a.correct else "wrong", mark, None, why))
    assert not rows, f"{len(rows)} of {len(check_results)} answers:\n" + harness.table(rows)


@pytest.mark.slow
def test_the_registered_wrong_variants_score_less_than_full_and_the_same_with_hidden_cases():
    """The registry's variants (judged on their outputs: the guard forbids package code to answers)."""
    marks = harness.variant_marks(load_hidden_cases(ROOT / "hidden_cases"))
    chapters = set(CHAPTERS)
    rows = []
    for ex_id, label, public, everything in marks:
        if ex_id.split(".")[0] not in chapters:
            continue
        why = harness.problems(label, ex_id, False, public, everything)
        if why:
            rows.append((ex_id, label, "variant", public, everything, why))
    assert not rows, f"{len(rows)} registered variants:\n" + harness.table(rows)


def _grader_agrees_with_check(layout, check_results, base: Path) -> None:
    """Grade ``layout``'s slot notebooks (chapter -> slots) and compare every answer's mark with
    the one ``check`` gave it."""
    bundle = harness.assign(base / "handout")
    notebooks = {}
    for chapter, chapter_slots in layout.items():
        student = harness.student_notebook(chapter, base / "handout" / "student")
        for i, slot in enumerate(chapter_slots):
            notebooks[harness.notebook_name(chapter, i)] = harness.build_notebook(student, slot)
    graded = harness.grade_notebooks(bundle, notebooks, base / "grade")
    checked = {(a.exercise_id, a.label): mark for a, mark in check_results}
    rows, n = [], 0
    for chapter, chapter_slots in layout.items():
        for i, slot in enumerate(chapter_slots):
            for ex_id, a in slot.items():
                n += 1
                check = checked[(ex_id, a.label)]
                grade = graded[harness.notebook_name(chapter, i)][ex_id]
                why = harness.problems(a.label, ex_id, a.correct, check, grade)
                if why:
                    rows.append((ex_id, a.label, "correct" if a.correct else "wrong", check, grade, why))
    differ = sum("marks differ" in r[-1] for r in rows)
    assert not rows, (
        f"{len(rows)} of {n} answers ({differ} with different marks in check and grader):\n"
        + harness.table(rows)
    )


@pytest.mark.slow
def test_the_grader_gives_a_sample_of_the_answers_the_mark_check_gives(check_results, tmp_path_factory):
    """Every exercise's first and last correct answer and its first wrong one, graded: three slot
    notebooks a chapter (``harness.sample_slots``)."""
    if not SLOTS:
        pytest.skip("no answers module yet")
    sample = harness.sample_slots(ANSWERS)
    assert {a.exercise_id for slots in sample.values() for slot in slots for a in slot.values()} == {
        a.exercise_id for a in ANSWERS
    }
    _grader_agrees_with_check(sample, check_results, tmp_path_factory.mktemp("fidelity-sample"))


@pytest.mark.slow
@pytest.mark.sweep
def test_the_grader_gives_every_answer_the_mark_check_gives(check_results, tmp_path_factory):
    """Every slot notebook of every chapter graded (the full sweep: ``-m sweep``)."""
    if not SLOTS:
        pytest.skip("no answers module yet")
    _grader_agrees_with_check(SLOTS, check_results, tmp_path_factory.mktemp("fidelity"))
