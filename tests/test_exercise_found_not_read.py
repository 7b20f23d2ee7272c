"""Feedback that is found, not read, and true for the answer in front of it.

* A find-the-bug (``diagnose``) exercise: its untouched code gets what any wrong answer gets; the
  cause comes with ``check(..., hint=True)`` only, never in the grader's feedback.
* A predicted number (or a derived one) cannot be bisected from the feedback.
* A diagnosis is shown only where it is true (1.1's broadcast error in the division by the
  temperature is the learner's own exception, at its line); a mask's feedback quotes no float
  tolerance; check names the groups that passed; ``score`` shows untouched handed-out code as not
  attempted.
* A former id still reaches the exercise in ``check``, ``score``, the notebook readers and the grader.
* No diagnose exercise's id, title or stub comments name its cause (KNOWN_TO_NAME_THE_CAUSE lists
  those that still do, as expected failures, until the chapters rename them).
"""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from exercise_support import ROOT, load_hidden_cases, skip_without_torch, stub_function

from attncourse.exercises import Case, Diagnosis, Exercise, all_exercises, check, get, reset, score
from attncourse.exercises.engine.check import call
from attncourse.exercises.engine.compare import NOT_ATTEMPTED, expected_outputs, judge
from attncourse.exercises.engine.notebook import exercise_cells, exercise_id_of, validate_notebook
from attncourse.exercises.engine.registry import _FORMER, _REGISTRY, register
from attncourse.grading.assignment import scan_notebook
from attncourse.grading.gradebook import feedback_text
from attncourse.grading.marking import ExerciseGrade, StudentGrade

HIDDEN = load_hidden_cases(ROOT / "hidden_cases")
DIAGNOSE = [ex.id for ex in all_exercises() if ex.kind == "diagnose"]


@pytest.fixture(autouse=True)
def _fresh():
    reset()
    yield
    reset()


def _grader_feedback(ex, fn) -> str:
    """The grader's feedback file for ``fn``: public and hidden cases, the grader's judge and writer."""
    cases = ex.public_cases() + (list(HIDDEN[ex.id]()) if ex.id in HIDDEN else [])
    n = len(ex.public_cases())
    results = [
        judge(ex, c, expected_outputs(ex, c), call(ex, fn, c.args()), hidden=i >= n)
        for i, c in enumerate(cases)
    ]
    grade = ExerciseGrade(ex, results, "student.ipynb")
    return feedback_text(StudentGrade("student", ["student.ipynb"], "ok", [], [], [grade]), ex.points)


# ----------------------------------------------------------------------------- a bug is found
def _key(args) -> tuple:
    out = []
    for a in args:
        if hasattr(a, "detach"):
            a = a.detach().numpy()
        out.append(a.tobytes() + str(a.shape).encode() if isinstance(a, np.ndarray) else repr(a))
    return tuple(out)


def _perturbed(ex, how: str, which: int, keep=frozenset()):
    """A wrong answer unrelated to any bug: the reference's outputs (looked up, never called) with
    output ``which`` (-1: every output) offset, rolled along its last axis, or holding a NaN; on the
    cases named in ``keep`` (those the buggy code gets right) it is right too, so both fail the
    same cases and only what they are told about them is compared."""
    table = {_key(c.args()): expected_outputs(ex, c) for c in ex.public_cases()}

    def change(a: np.ndarray) -> np.ndarray:
        a = np.array(a, copy=True)
        if how == "roll" and a.ndim:
            return np.roll(a, 1, axis=-1)
        if a.dtype == np.bool_:
            a.flat[0] = not a.flat[0]
        elif how == "nan" and a.dtype.kind == "f":
            a.flat[0] = np.nan
        else:
            a = a + (1 if a.dtype.kind in "iu" else 0.5)
        return a

    right = {_key(c.args()) for c in ex.public_cases() if c.name in keep}

    def answer(*args):
        key = _key(args)
        outs = [change(o) if which in (-1, i) and key not in right else o for i, o in enumerate(table[key])]
        return tuple(outs) if len(outs) > 1 else outs[0]

    return answer


def _masked(text: str) -> set:
    """The lines of a feedback text with numbers, positions and values masked out."""
    text = re.sub(r"\b(nan|inf|True|False)\b", "#", text)
    text = re.sub(r"-?\d+(\.\d+)?(e[-+]?\d+)?", "#", text)
    text = re.sub(r"\((#, )*#,?\)", "#", text)
    text = re.sub(r"(; #: expected #, got #)+", "; …", text)
    text = re.sub(r"(first at #: expected #, got #)(; …)?", r"\1; …", text)
    # a case's line without the case's name (the same cases either way); repeats are left out
    lines = {re.sub(r"^✗ .*? (\[[a-z ]+\]: )", r"✗ \1", line.strip()) for line in text.splitlines()}
    return {line for line in lines if not line.endswith("same problem as above")}


@pytest.mark.parametrize("ex_id", DIAGNOSE)
def test_the_untouched_buggy_code_gets_only_what_a_wrong_answer_gets(ex_id):
    """Checking the handed-out code prints nothing that one of a few wrong answers unrelated to the
    bug (the reference's outputs offset, rolled or with a NaN) does not get, numbers masked."""
    ex = get(ex_id)
    skip_without_torch(ex)
    stub = stub_function(ex)
    shown = check(ex_id, stub, show=False)
    assert shown.earned < ex.points and not shown.hints and not shown.offer
    passed = frozenset(c.name for c in shown.cases if c.passed)
    others: set = set()
    for how in ("offset", "roll", "nan"):
        for which in [-1] + list(range(len(ex.outputs))):
            reset()
            others |= _masked(check(ex_id, _perturbed(ex, how, which, passed), show=False).text())
    extra = _masked(shown.text()) - others
    assert not extra, f"only the untouched buggy code is told: {sorted(extra)}"
    # and the recognised cause is neither in check's text nor in the grader's feedback
    grader = _grader_feedback(ex, stub)
    for d in ex.diagnoses:
        assert d.message not in shown.text() and d.message not in grader
        assert not d.hint or (d.hint not in shown.text() and d.hint not in grader)


@pytest.mark.parametrize("ex_id", DIAGNOSE)
def test_the_cause_of_a_recognised_bug_comes_with_the_hint(ex_id):
    ex = get(ex_id)
    skip_without_torch(ex)
    result = check(ex_id, stub_function(ex), show=False, hint=True)
    named = {c.diagnosis for c in result.cases if c.diagnosis}
    causes = [d.message for d in ex.diagnoses if d.name in named]
    assert causes, "the handed-out bug is one of the exercise's registered mistakes"
    assert any(c in result.hints for c in causes)


def test_other_exercises_keep_their_diagnosis_messages():
    """Outside find-the-bug exercises a recognised mistake is named by its question, unasked."""

    ex = get("ch01.stable_softmax")

    def no_max(x):
        e = np.exp(x)
        return e / e.sum(axis=-1, keepdims=True)

    result = check(ex.id, no_max, show=False)
    named = {c.diagnosis for c in result.cases if c.diagnosis}
    assert named and any(d.message in result.text() for d in ex.diagnoses if d.name in named)


# ----------------------------------------------------------------------------- no bisection
def _one_number(ex) -> bool:
    if ex.kind not in ("predict", "derive"):
        return False
    return all(all(np.size(o) == 1 for o in expected_outputs(ex, c)) for c in ex.public_cases())


ONE_NUMBER = [ex.id for ex in all_exercises() if _one_number(ex)]


def _answer_times(ex, factor: float):
    table = {_key(c.args()): expected_outputs(ex, c) for c in ex.public_cases()}

    def answer(*args):
        outs = [float(np.asarray(o, dtype=np.float64).reshape(())) * factor for o in table[_key(args)]]
        return tuple(outs) if len(outs) > 1 else outs[0]

    return answer


@pytest.mark.parametrize("ex_id", ONE_NUMBER)
def test_a_wrong_number_on_either_side_gets_the_same_feedback(ex_id):
    """Bisection needs a direction or a size: a number too low by 2x and one too high by 2x (neither
    a registered mistake) are told the same thing, in check and in the grader."""
    ex = get(ex_id)
    skip_without_torch(ex)
    texts, grader = [], []
    for low, high in ((0.5, 2.0), (0.31, 3.7), (0.77, 1.3)):
        results = [check(ex_id, _answer_times(ex, f), show=False) for f in (low, high)]
        if any(c.diagnosis for r in results for c in r.cases):
            continue  # one of them is a registered mistake: it is named, which is allowed
        assert all(r.earned == 0 for r in results)
        texts.append([r.text() for r in results])
        grader.append([_grader_feedback(ex, _answer_times(ex, f)) for f in (low, high)])
        break
    assert texts, "no pair of wrong numbers that is not a registered mistake"
    assert texts[0][0] == texts[0][1], texts[0]
    assert grader[0][0] == grader[0][1]
    told = [line for line in texts[0][0].splitlines()[1:] if "accepted:" not in line]  # not the tolerance
    assert told and not re.search(r"too (high|low|large|small)|times|%|factor|order", "\n".join(told))


def test_bisection_on_predict_exercises_finds_nothing():
    """Several predict exercises: every wrong guess that is not a registered mistake, from a tenth to
    nine times the answer, gets one and the same text, so a bisection has nothing to go on."""
    predicts = [ex for ex in all_exercises() if ex.kind == "predict" and ex.id in ONE_NUMBER]
    assert len(predicts) >= 3
    for ex in predicts:
        texts = set()
        for f in (0.1, 0.45, 0.8, 1.25, 2.2, 9.0):
            result = check(ex.id, _answer_times(ex, f), show=False)
            if result.earned == 0 and not any(c.diagnosis for c in result.cases):
                texts.add(result.text())
        assert len(texts) == 1, (ex.id, texts)


# ----------------------------------------------------------------------------- hints only when asked
def test_no_hint_is_shown_unasked_however_many_attempts():
    ex = get("ch00.kernel_regression")
    for k in range(2, 9):
        result = check(ex.id, eval(f"lambda x_query, x_key, y_value, width: x_query * {k}"), show=False)
        assert result.hints == [] and ex.hint not in result.text()
    assert result.offer and "hint=True" in result.offer and len(result.offer.splitlines()) == 1


def test_the_chapters_instructions_describe_what_check_does():
    from attncourse.exercises.engine import check as check_module
    from attncourse.exercises.engine.notebook import CHECK_INSTRUCTIONS, chapter_cells

    heading = "".join(chapter_cells("ch01")[0]["source"])
    assert CHECK_INSTRUCTIONS in heading
    assert "hint=True" in heading and "never shows a hint unasked" in heading
    assert "find-the-bug" in heading and "only told whether it is right" in heading
    assert check_module.HINT_AFTER >= 2  # "after a few different failing answers"


# ----------------------------------------------------------------------------- true feedback
def test_1_1_a_broadcast_error_in_the_division_by_the_temperature_is_the_learners_own():
    from attncourse import softmax

    def divide_by_temperature(logits, temperature):
        return softmax(logits / temperature)

    ex = get("ch01.temperature_softmax")
    result = check(ex.id, divide_by_temperature, show=False)
    raised = [c for c in result.cases if c.status == "raised"]
    assert raised
    for c in raised:  # the learner's own error at its line, or the chapter's named broadcast mistake
        if c.diagnosis:
            assert "broadcast" in c.message and "row sums" not in c.message
        else:
            assert c.message.startswith("raised ValueError") and "logits / temperature" in c.message
    assert "row sums" not in result.text() and "row sums" not in _grader_feedback(ex, divide_by_temperature)
    # which groups passed, by name
    assert (
        "passed: one temperature; not passed: a temperature per row, batch dimensions, extreme temperatures"
        in result.text()
    )


def test_the_row_sums_diagnosis_still_fires_where_the_row_sums_are_divided():
    def no_keepdims(x):
        e = np.exp(x - x.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1)

    result = check("ch01.stable_softmax", no_keepdims, show=False)
    assert any(c.diagnosis == "reduced axis dropped" for c in result.cases)
    assert "row sums" in result.text()


def test_an_error_diagnosis_with_a_line_pattern_needs_that_line():
    ex = _tiny(diagnoses=(Diagnosis("the shapes of the sums: which axis?", error="broadcast", at=r"sum"),))
    case = ex.public_cases()[1]  # x (2, 3)

    def raising(line: str):
        import linecache

        source, name = f"def f(x):\n    t = np.ones(7)\n    return {line}\n", f"<cell {len(line)}>"
        linecache.cache[name] = (len(source), None, source.splitlines(True), name)  # as IPython does
        ns: dict = {"np": np}
        exec(compile(source, name, "exec"), ns)
        return call(ex, ns["f"], case.args())

    at_sum = judge(ex, case, expected_outputs(ex, case), raising("x / x.sum(axis=1)"))
    elsewhere = judge(ex, case, expected_outputs(ex, case), raising("x / t"))
    assert at_sum.message == "the shapes of the sums: which axis?"
    assert elsewhere.message.startswith("raised ValueError") and "x / t" in elsewhere.message
    assert not elsewhere.diagnosis


def test_a_mask_s_feedback_quotes_no_float_tolerance():
    def upper(L, S=None):
        S = L if S is None else S
        return np.triu(np.ones((L, S), dtype=bool))

    ex = get("ch06.make_causal_mask")
    result = check(ex.id, lambda *a: upper(*a), show=False)
    assert result.earned < ex.points
    text = result.text() + _grader_feedback(ex, lambda *a: upper(*a))
    assert not re.search(r"precision|rtol|atol|allows", text), text


def test_score_shows_untouched_handed_out_code_as_not_attempted():
    ex = get("bugs.chunk_window_weights")
    skip_without_torch(ex)
    stub = stub_function(ex)
    result = check(ex.id, stub, show=False)
    assert result.untouched and not result.not_attempted  # check still shows the symptom
    assert "differ" in result.text()
    row = {e.id: (e, r) for e, r in score("bugs", show=False, namespace={ex.function: stub}).rows}[ex.id]
    assert ScoreStatus(row) == NOT_ATTEMPTED
    # a changed answer, still wrong, is an attempt
    changed = stub_function(ex)
    ns: dict = {}
    exec("def g(*a):\n    return f(*a)\n", {"f": changed}, ns)
    row = {e.id: (e, r) for e, r in score("bugs", show=False, namespace={ex.function: ns["g"]}).rows}[ex.id]
    assert "cases passed" in ScoreStatus(row)


def ScoreStatus(row) -> str:
    from attncourse.exercises.engine.check import ScoreReport

    return ScoreReport._status(row[1])


# ----------------------------------------------------------------------------- former ids
def _tiny(**fields) -> Exercise:
    base = dict(
        id="ch01.tmp_double_rows",
        number="1.99",
        title="twice every entry",
        points=2,
        function="tmp_double_rows",
        solution="""
            def tmp_double_rows(x):
                ### BEGIN SOLUTION
                return 2 * x
                ### END SOLUTION
        """,
        reference=lambda x: 2 * x,
        public_cases=lambda: [Case("a row", x=np.arange(3.0)), Case("a matrix", x=np.ones((2, 3)))],
        hint="multiply by two",
    )
    base.update(fields)
    return Exercise(**base)


@pytest.fixture
def renamed():
    ex = _tiny(former_ids=("ch01.tmp_old_doubling",))
    register(ex)
    yield ex
    _REGISTRY.pop(ex.id, None)
    _FORMER.pop("ch01.tmp_old_doubling", None)


def _old_notebook(ex) -> dict:
    """The exercise's cells as a notebook saved before the rename: the old id in the metadata and
    the check call, and the old header."""
    cells = json.loads(json.dumps(exercise_cells(ex.id)))
    for cell in cells:
        ours = cell["metadata"]["attncourse"]
        for role in list(ours):
            ours[role] = "ch01.tmp_old_doubling"
        src = "".join(cell["source"]).replace(ex.id, "ch01.tmp_old_doubling")
        src = src.replace(ex.header, "# Exercise 1.99: the doubling (2 points)")
        cell["source"] = src.splitlines(keepends=True)
    return {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


def test_a_former_id_reaches_the_exercise_in_check_and_score(renamed):
    result = check("ch01.tmp_old_doubling", lambda x: 2 * x, show=False)
    assert result.exercise_id == renamed.id and result.earned == renamed.points
    rows = {e.id: r for e, r in score("ch01", show=False, namespace={}).rows}
    assert rows[renamed.id] is result


def test_a_former_id_in_a_saved_notebook_reaches_the_exercise(renamed):
    from attncourse.exercises.engine.notebook import check_id_of

    nb = _old_notebook(renamed)
    exercise_cell, check_cell = nb["cells"][1], nb["cells"][2]
    assert exercise_id_of(exercise_cell) == renamed.id
    assert check_id_of(check_cell) == renamed.id
    check_cell["metadata"] = {}  # metadata lost: the check call still names it
    assert check_id_of(check_cell) == renamed.id
    problems = validate_notebook(nb, "saved.ipynb")
    assert not [p for p in problems if "check(" in p or "unknown" in p or "worked-solution" in p], problems
    # the grader's path: a submitted notebook is sorted by the exercise ids its cells name
    scan = scan_notebook(json.dumps(nb).encode(), {renamed.id: renamed}, None)
    assert scan.exercise_ids == [renamed.id] and not scan.unknown_ids


# ----------------------------------------------------------------------------- names that give it away
STOP = set(
    """a an the and or not no of to in on at by for from with as is are be its it this that these those
    each every one two all any only than then when where which what who how why do does did done has have
    had was were will can must may should would could out up over into own same other more most less
    your you their there here get gets give make takes take keep keeps use used using instead""".split()
)


def _stem(word: str) -> str:
    w = word.lower()
    for suffix in ("ing", "ed", "es", "s", "e"):
        if w.endswith(suffix) and len(w) - len(suffix) >= 3:
            return w[: -len(suffix)]
    return w


def _words(text: str) -> set:
    return {_stem(w) for w in re.findall(r"[A-Za-z][A-Za-z]+", text) if w.lower() not in STOP and len(w) > 2}


def _cause_words(ex) -> set:
    """The distinctive words of the diagnoses' names and hints: not stop words, not the function's
    name, not what the prompt says the code is about (its subject, not its cause)."""
    said = " ".join(f"{d.name} {d.hint}" for d in ex.diagnoses)
    return _words(said) - _words(ex.function.replace("_", " ")) - _words(ex.description)


def _stub_comments(ex) -> str:
    return " ".join(line.split("#", 1)[1] for line in (ex.stub or "").splitlines() if "#" in line)


def naming_the_cause(ex) -> dict:
    """Where the exercise's id, title or stub comments use a distinctive word of its diagnoses."""
    cause = _cause_words(ex)
    places = {
        "id": ex.id.split(".", 1)[1].replace("_", " "),
        "title": ex.title,
        "stub comments": _stub_comments(ex),
    }
    found = {place: sorted(_words(text) & cause) for place, text in places.items()}
    return {place: words for place, words in found.items() if words}


# Diagnose exercises whose id, title or stub comments still name their cause (the chapters are
# renaming them: remove an id here when it passes; a strict xfail then fails until it is removed).
KNOWN_TO_NAME_THE_CAUSE: set = set()


def test_the_known_list_names_only_current_diagnose_exercises():
    # A renamed exercise's old id here would mark nothing and hide nothing: list current ids only.
    assert KNOWN_TO_NAME_THE_CAUSE <= set(DIAGNOSE), KNOWN_TO_NAME_THE_CAUSE - set(DIAGNOSE)


@pytest.mark.parametrize(
    "ex_id",
    [
        pytest.param(
            ex_id,
            marks=pytest.mark.xfail(
                strict=True, reason="EXPECTED FAILURE: the id, title or stub names the cause"
            )
            if ex_id in KNOWN_TO_NAME_THE_CAUSE
            else (),
        )
        for ex_id in DIAGNOSE
    ],
)
def test_no_diagnose_exercise_names_its_cause_in_its_id_title_or_stub(ex_id):
    found = naming_the_cause(get(ex_id))
    assert not found, f"{ex_id} names its cause: {found}"


def test_the_cause_words_are_found_where_they_are():
    ex = _tiny(
        kind="diagnose",
        id="ch01.tmp_fix_keepdims",
        title="a keepdims that went missing",
        stub="return 2 * x  # forgot keepdims",
        diagnoses=(
            Diagnosis("which axis?", name="keepdims dropped", hint="keep the reduced axis: keepdims=True"),
        ),
    )
    assert set(naming_the_cause(ex)) == {"id", "title", "stub comments"}
    quiet = _tiny(kind="diagnose", diagnoses=ex.diagnoses)
    assert naming_the_cause(quiet) == {}
