"""One judge for ``check`` and the grader: case groups defined by the public cases, tolerance by
the answer's precision, predict answers that stay unknown, diagnoses that are true, a hint for
every exercise."""

from __future__ import annotations

import re

import numpy as np
import pytest
from exercise_support import ROOT, load_hidden_cases, skip_without_torch

from attncourse.exercises import Case, Exercise, all_exercises, check, get, reset
from attncourse.exercises.engine.check import call, run_cases
from attncourse.exercises.engine.compare import expected_outputs, judge, judge_all
from attncourse.exercises.engine.registry import _REGISTRY
from attncourse.exercises.engine.tolerance import TOLERANCES, how_far, tolerance_for
from attncourse.grading.gradebook import feedback_text
from attncourse.grading.marking import ExerciseGrade, StudentGrade

HIDDEN = load_hidden_cases(ROOT / "hidden_cases")


@pytest.fixture(autouse=True)
def _fresh_scores():
    reset()
    yield
    reset()


def _graded(ex, fn, hidden_cases=None):
    """What the grader gives ``fn``: public and hidden cases, judged and marked as the grader does."""
    public = ex.public_cases()
    secret = list(HIDDEN[ex.id]()) if hidden_cases is None and ex.id in HIDDEN else list(hidden_cases or [])
    cases = public + secret
    flags = [False] * len(public) + [True] * len(secret)
    results = judge_all(
        ex, cases, [expected_outputs(ex, c) for c in cases], [call(ex, fn, c.args()) for c in cases], flags
    )
    return ExerciseGrade(ex, results, "student.ipynb")


def _feedback(grade) -> str:
    sg = StudentGrade("student", ["student.ipynb"], "ok", [], [], [grade])
    return feedback_text(sg, grade.exercise.points)


# ----------------------------------------------------------------------------- groups
def _doubling(**fields):
    base = dict(
        id="ch01.doubling_demo",
        number="1.99",
        title="double it",
        points=4,
        function="doubling_demo",
        solution="def doubling_demo(x):\n    ### BEGIN SOLUTION\n    return 2 * x\n    ### END SOLUTION\n",
        reference=lambda x: 2 * x,
        public_cases=lambda: [
            Case("positive", group="values", x=np.array([1.0, 2.0, 3.0])),
            Case("mixed signs", group="values", x=np.array([-1.0, 2.0, -3.0])),
            Case("a matrix", group="shape", x=np.array([[1.0, 2.0], [3.0, 4.0]])),
        ],
        hint="multiply by two",
    )
    base.update(fields)
    return Exercise(**base)


def test_a_case_takes_its_group_as_a_keyword_that_is_not_an_input():
    case = Case("positive", group="values", x=np.zeros(2))
    assert case.group == "values" and list(case.inputs) == ["x"]
    assert Case("alone", x=1).group == "alone"
    with pytest.raises(ValueError, match="group"):
        Case("blank", group=" ", x=1)


def test_a_coincidental_pass_earns_nothing_for_its_group_in_check_and_in_the_grader(monkeypatch):
    ex = _doubling()
    monkeypatch.setitem(_REGISTRY, ex.id, ex)

    def clipped_at_zero(x):  # right on positive entries only: passes "positive" by coincidence
        return 2 * np.maximum(x, 0)

    result = check(ex.id, clipped_at_zero, show=False)
    assert [c.passed for c in result.cases] == [True, False, True]
    assert result.earned == ex.points / 2  # "shape" only: "values" needs both of its cases
    hidden = [Case("hidden: large", group="values", x=np.array([100.0, 7.0]))]
    assert _graded(ex, clipped_at_zero, hidden).earned == result.earned


def test_a_hidden_case_joins_a_public_group_and_never_adds_one(monkeypatch):
    ex = _doubling()
    monkeypatch.setitem(_REGISTRY, ex.id, ex)

    def capped(x):  # right below 50: every public case passes, the hidden one does not
        return 2 * np.minimum(x, 50)

    assert check(ex.id, capped, show=False).earned == ex.points
    hidden = [Case("large", group="values", x=np.array([100.0, 7.0]))]
    grade = _graded(ex, capped, hidden)
    assert grade.earned == ex.points / 2  # 1 of the 2 public groups, not 2 of 3
    correct = _graded(ex, ex.solution_function(), hidden)
    assert correct.earned == ex.points
    # a hidden case whose group is none of the public ones counts against every group
    stray = [Case("large", group="edge rows", x=np.array([100.0, 7.0]))]
    assert _graded(ex, capped, stray).earned == 0
    assert _graded(ex, ex.solution_function(), stray).earned == ex.points


def _hidden_ids():
    return sorted(ex_id for ex_id in HIDDEN if ex_id in _REGISTRY)


@pytest.mark.parametrize("ex_id", _hidden_ids())
def test_every_hidden_case_belongs_to_a_public_group_of_its_exercise(ex_id):
    ex = get(ex_id)
    public = list(dict.fromkeys(c.group for c in ex.public_cases()))
    stray = [(c.name, c.group) for c in HIDDEN[ex_id]() if c.group not in public]
    assert not stray, "; ".join(
        f"{ex_id}: hidden case {name!r} has group {group!r}, which is none of its public groups {public}"
        for name, group in stray
    )


def test_every_hidden_exercise_id_is_registered():
    assert not [ex_id for ex_id in HIDDEN if ex_id not in _REGISTRY]


# ----------------------------------------------------------------------------- tolerance by precision
def test_one_tolerance_table_follows_the_package_tests():
    assert TOLERANCES["float32"] == (1e-5, 1e-5) and TOLERANCES["float16"] == (1e-2, 1e-2)
    assert TOLERANCES["bfloat16"] == (5e-2, 5e-2)
    assert tolerance_for([np.zeros(2)], [np.zeros(2, np.float32)]).precision == "float32"
    assert tolerance_for([np.zeros(2, np.float16)], [np.zeros(2)]).precision == "float16"
    assert tolerance_for([np.zeros(2)], [np.zeros(2)]).precision == "float64"


def test_a_bfloat16_tensor_is_judged_as_bfloat16():
    torch = pytest.importorskip("torch")
    from attncourse.exercises.engine.outputs import to_arrays

    out = to_arrays(torch.linspace(-1, 1, 7, dtype=torch.bfloat16), ("result",))
    assert tolerance_for([np.zeros(2)], out).precision == "bfloat16"


def _float32(fn):
    """``fn`` run on float32 copies of its float64 inputs, its float results in float32."""

    def down(v):
        if isinstance(v, np.ndarray) and v.dtype == np.float64:
            return v.astype(np.float32)
        if hasattr(v, "is_floating_point") and v.is_floating_point():
            return v.float()
        return v

    def answer(*args):
        out = fn(*[down(a) for a in args])
        return (
            tuple(down(np.asarray(o) if isinstance(o, float) else o) for o in out)
            if isinstance(out, tuple)
            else down(out)
        )

    return answer


FLOAT32 = [ex.id for ex in all_exercises() if ex.kind != "predict"]


@pytest.mark.parametrize("ex_id", FLOAT32)
def test_a_correct_answer_in_float32_gets_full_marks_in_check_and_in_the_grader(ex_id):
    ex = get(ex_id)
    skip_without_torch(ex)
    fn = _float32(ex.solution_function())
    result = check(ex_id, fn, show=False)
    assert result.earned == ex.points, result.text()
    assert _graded(ex, fn).earned == ex.points


def test_4_2_with_torch_float_gets_full_marks():
    torch = pytest.importorskip("torch")

    def attention_with_counts(q, k, v, counts):
        q, k, v = (torch.from_numpy(a).float() for a in (q, k, v))
        scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5 + torch.log(torch.as_tensor(counts).float())
        weights = torch.softmax(scores, dim=-1)
        return weights @ v, weights

    ex = get("ch04.attention_with_counts")
    assert check(ex.id, attention_with_counts, show=False).earned == ex.points
    assert _graded(ex, attention_with_counts).earned == ex.points


def test_a_float32_near_miss_shows_the_difference_the_tolerance_and_the_lower_precision():
    ex = get("ch04.attention_with_counts")
    solution = ex.solution_function()

    def slightly_off(q, k, v, counts):
        out, weights = solution(*(a.astype(np.float32) for a in (q, k, v)), counts)
        return (out * 1.001).astype(np.float32), weights.astype(np.float32)

    first = next(c for c in check(ex.id, slightly_off, show=False).cases if not c.passed)
    expected, got = re.search(r"expected (\S+), got (\S+)", first.message).groups()
    assert expected != got  # enough digits to see the difference
    assert "off by" in first.message and "float32 precision allows" in first.message
    assert "float32 while the case's inputs are float64" in first.message
    assert any("rtol 1e-05" in d for d in first.details)


def test_a_float64_near_miss_prints_two_different_numbers():
    ex = get("ch04.attention_with_counts")
    solution = ex.solution_function()

    def off_by_a_little(*args):
        out, weights = solution(*args)
        return out * (1 + 3e-5), weights

    first = next(c for c in check(ex.id, off_by_a_little, show=False).cases if not c.passed)
    expected, got = re.search(r"expected (\S+), got (\S+)", first.message).groups()
    # not an exercise about precision: judged at float32's tolerance, though the answer is float64
    assert expected != got and "float32 precision allows" in first.message
    assert "while the case's inputs" not in first.message  # the answer's own dtype is not lower


def _multi_head_in_float32_returned_as_float64(x, W_q, W_k, W_v, W_o, n_heads):
    torch = pytest.importorskip("torch")
    x, W_q, W_k, W_v, W_o = (torch.from_numpy(np.asarray(a)).float() for a in (x, W_q, W_k, W_v, W_o))
    B, L, D = x.shape
    q, k, v = ((x @ W).reshape(B, L, n_heads, D // n_heads).transpose(1, 2) for W in (W_q, W_k, W_v))
    w = torch.softmax(q @ k.transpose(-2, -1) / (D // n_heads) ** 0.5, dim=-1)
    out = (w @ v).transpose(1, 2).reshape(B, L, D) @ W_o
    return out.double().numpy(), w.double().numpy()


def test_an_answer_computed_in_float32_and_returned_as_float64_gets_full_marks():
    """The issue's multi-head attention: 0/2 ("off by 5.7e-08; float64 precision allows 4e-08")."""
    ex = get("ch05.multi_head_attention")
    fn = _multi_head_in_float32_returned_as_float64
    assert ex.outputs == ("out", "weights") and ex.params == ("x", "W_q", "W_k", "W_v", "W_o", "n_heads")
    result = check(ex.id, fn, show=False)
    assert result.earned == ex.points, result.text()
    assert _graded(ex, fn).earned == ex.points  # check and the grader share the tolerance


def test_an_exercise_about_precision_judges_a_float64_answer_at_float64():
    import dataclasses

    ex = dataclasses.replace(get("ch04.attention_with_counts"), precision=True)
    solution = ex.solution_function()

    def off_by_3e_7(*args):
        out, weights = solution(*args)
        return out * (1 + 3e-7), weights

    cases = ex.public_cases()
    assert not all(r.passed for r in run_cases(ex, off_by_3e_7, cases))
    first = next(r for r in run_cases(ex, off_by_3e_7, cases) if not r.passed)
    assert "float64 precision allows" in first.message
    not_about_precision = dataclasses.replace(ex, precision=False)
    assert all(r.passed for r in run_cases(not_about_precision, off_by_3e_7, cases))
    assert tolerance_for([np.zeros(2)], [np.zeros(2)], precision=False).precision == "float32"
    assert tolerance_for([np.zeros(2, np.float16)], [np.zeros(2)], precision=False).precision == "float16"


# ----------------------------------------------------------------------------- predict stays unknown
def _forms(x: float) -> set:
    """How a number could be written: 655360, 655,360, 6.554e+05, 0.6931 ..."""
    out = {repr(x)} | {f"{x:.{d}g}" for d in range(3, 8)}
    if float(x).is_integer():
        out |= {str(int(x)), f"{int(x):,}"}
    return {f for f in out if len(re.sub(r"[^0-9]", "", f)) >= 3}


def _numbers(arrays) -> set:
    out = set()
    for a in arrays:
        for v in np.asarray(a, dtype=np.float64).ravel()[:50]:
            if np.isfinite(v) and v != 0:
                out |= _forms(float(v))
    return out


WRONG_GUESSES = {
    "twice": lambda v: v * 2,
    "ten times": lambda v: v * 10,
    "half": lambda v: v / 2,
    "one more": lambda v: v + 1,
    "one less": lambda v: v - 1,
    "a third more": lambda v: v * 1.3,
}


@pytest.mark.parametrize("guess", sorted(WRONG_GUESSES))
@pytest.mark.parametrize("ex_id", [ex.id for ex in all_exercises() if ex.kind in ("predict", "derive")])
def test_a_wrong_guess_never_sees_the_expected_value(ex_id, guess):
    ex = get(ex_id)
    skip_without_torch(ex)
    solution, change = ex.solution_function(), WRONG_GUESSES[guess]

    def answer(*args):
        out = solution(*args)
        if isinstance(out, tuple):
            return tuple(change(np.asarray(o, dtype=np.float64)) for o in out)
        return change(np.asarray(out, dtype=np.float64))

    cases = ex.public_cases() + (list(HIDDEN[ex_id]()) if ex_id in HIDDEN else [])
    secret = _numbers(a for c in cases for a in expected_outputs(ex, c))
    # numbers the student has anyway: their own answer, the case names and inputs
    seen = _numbers(a for c in cases for a in np.atleast_1d(answer(*c.args())))
    seen |= {m for c in cases for m in re.findall(r"\d[\d.,]*\d|\d", c.name)}
    texts = [
        check(ex_id, answer, show=False).text(),
        check(ex_id, answer, show=False, hint=True).text(),
        _feedback(_graded(ex, answer)),
    ]
    for text in texts:
        assert not re.search(r"expected -?\d", text), text
        for form in secret - seen:
            if form in text:  # the cheap test first: most forms are nowhere in the text
                assert not re.search(rf"(?<![\d.]){re.escape(form)}(?![\d])", text), (form, text)


def test_how_far_says_it_in_words():
    assert how_far(655360, 655360 * 10) == "about 10 times too large (off by an order of magnitude)"
    assert how_far(98304, 49152) == "about 2 times too small"
    assert how_far(197, 196) == "close, but too low (within 1%)"
    assert how_far(5472, -5472) == "the wrong sign"
    assert "orders of magnitude" in how_far(1.0, 2e5)


# ----------------------------------------------------------------------------- true diagnoses
def test_11_4_an_off_by_one_range_is_not_given_a_registered_mistake():
    def offsets_up_to_n(theta, scaled, N, L):  # neither the whole circle nor the scaled training range
        return (N * theta >= 2 * np.pi) | (L * scaled <= N * theta)

    ex = get("ch11.pairs_in_range")
    for cases in (check(ex.id, offsets_up_to_n, show=False).cases, _graded(ex, offsets_up_to_n).cases):
        assert not all(c.passed for c in cases)
        assert not any(c.diagnosis for c in cases)
        assert not any("whole circle" in c.message or "scaled frequencies" in c.message for c in cases)


def test_10_5_names_the_transposed_grid_and_not_the_edge_patches_to_an_answer_that_keeps_them():
    def grid_by_columns(sizes, H, W, P):  # the right patches, listed column by column
        B = sizes.shape[0]
        real = (np.arange(W // P)[None, :, None] * P < sizes[:, 1, None, None]) & (
            np.arange(H // P)[None, None, :] * P < sizes[:, 0, None, None]
        )
        return np.concatenate([np.ones((B, 1), dtype=bool), real.reshape(B, -1)], axis=1)

    result = check("ch10.padded_patch_mask", grid_by_columns, show=False)
    first = result.cases[0]  # 8 x 8 canvas, P = 4
    assert "8 x 8" in first.name and first.diagnosis == "grid listed column by column"
    assert "lose" not in first.message


@pytest.mark.parametrize("how", ["softmax over the queries", "unscaled scores"])
def test_4_6_a_fix_that_meets_every_key_but_is_still_wrong_is_told_so(how):
    from attncourse import softmax

    def still_wrong(x, W_q, W_k, W_v, block):
        q, k, v = x @ W_q, x @ W_k, x @ W_v
        out = np.zeros(q.shape[:-1] + v.shape[-1:])
        for start in range(0, q.shape[-2], block):
            rows = slice(start, start + block)
            scores = q[..., rows, :] @ np.swapaxes(k, -1, -2)
            if how == "softmax over the queries":
                out[..., rows, :] = softmax(scores / np.sqrt(q.shape[-1]), axis=-2) @ v
            else:
                out[..., rows, :] = softmax(scores) @ v
        return out

    ex = get("ch04.self_attention_in_blocks")
    message = next(d.message for d in ex.diagnoses if d.name == how)
    for cases in (check(ex.id, still_wrong, show=False).cases, _graded(ex, still_wrong).cases):
        assert all(c.diagnosis == how for c in cases)
        assert not any(message in c.message for c in cases)  # found, not read
    assert message in " ".join(check(ex.id, still_wrong, show=False, hint=True).hints)


def test_a_diagnosis_that_one_case_refutes_is_not_shown():
    """A wrong answer that matches a variant on one case by coincidence gets the plain message."""
    ex = get("ch06.streaming_settings")
    cases = ex.public_cases()
    first = cases[0].inputs["weights"].shape

    def one_short_on_the_first_case_only(weights):
        seen = np.asarray(weights)[:, -1] != 0
        n_sink = np.argmin(seen, axis=-1)
        if np.shape(weights) == first:  # the "window without the query itself" mistake
            return np.argmin(seen[:, ::-1], axis=-1) - 1, n_sink
        return np.zeros_like(n_sink), n_sink  # another mistake: no window at all

    outcomes = [call(ex, one_short_on_the_first_case_only, c.args()) for c in cases]
    alone = judge(ex, cases[0], expected_outputs(ex, cases[0]), outcomes[0])
    assert (
        alone.diagnosis == "window without the query itself"
    )  # what the first case, judged alone, would say
    results = run_cases(ex, one_short_on_the_first_case_only, cases)
    assert not any(r.passed for r in results)
    assert not any(r.diagnosis == "window without the query itself" for r in results)
    assert (
        results[0].message
        == judge(ex, cases[0], expected_outputs(ex, cases[0]), outcomes[0], diagnose=False).message
    )


# ----------------------------------------------------------------------------- hints
@pytest.mark.parametrize("ex_id", [ex.id for ex in all_exercises()])
def test_every_exercise_has_a_hint(ex_id):
    assert get(ex_id).hint.strip()


def test_after_three_attempts_the_hint_is_offered_and_the_offered_hint_is_never_empty():
    reset()
    ex = get("ch00.kernel_regression")
    answers = (  # three different wrong answers, none of them a recognised mistake
        lambda x_query, x_key, y_value, width: x_query * 2,
        lambda x_query, x_key, y_value, width: x_query * 3,
        lambda x_query, x_key, y_value, width: x_query * 4,
    )
    results = [check(ex.id, fn, show=False) for fn in answers]
    assert [bool(r.offer) for r in results] == [False, False, True]
    assert all(r.hints == [] for r in results) and ex.hint not in results[-1].text()
    offer = [line for line in results[-1].text().splitlines() if "hint=True" in line]
    assert len(offer) == 1 and f"check({ex.id!r}, {ex.function}, hint=True)" in offer[0]
    asked = check(ex.id, answers[-1], show=False, hint=True)
    assert asked.hints and asked.hints[0].startswith(ex.hint)
    assert "no hint" not in asked.text()
    reset()
