"""The exercise registry: every solution earns full marks, stubs and wrong answers earn nothing,
and the messages for the classic mistakes are the ones the book promises."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from exercise_support import load_hidden_cases, skip_without_torch, stub_function

from attncourse.exercises import CHAPTERS, Case, all_exercises, check, get, reset, score
from attncourse.exercises.engine.check import run_cases
from attncourse.exercises.engine.compare import Outcome, expected_outputs, judge
from attncourse.exercises.engine.registry import STUB_LINE

ROOT = Path(__file__).resolve().parents[1]
HIDDEN = load_hidden_cases(ROOT / "hidden_cases")
EXERCISES = all_exercises()
IDS = [ex.id for ex in EXERCISES]


def all_cases(ex):
    return ex.public_cases() + HIDDEN[ex.id]()


@pytest.fixture(autouse=True)
def _fresh_scores():
    reset()
    yield
    reset()


# ----------------------------------------------------------------------------- the registry


def test_every_chapter_has_its_exercises():
    counts = {key: len(all_exercises(key)) for key in CHAPTERS}
    assert all(counts[f"ch0{n}"] >= 3 for n in range(1, 8)), counts
    assert counts["ch05"] >= 4 and counts["ch06"] >= 4, counts
    assert counts["bugs"] >= 3, counts
    assert len(set(IDS)) == len(IDS)
    assert len({ex.function for ex in EXERCISES}) == len(EXERCISES)


def test_every_exercise_has_hidden_cases_that_fit_its_signature():
    assert set(HIDDEN) == set(IDS)
    for ex in EXERCISES:
        # a predict exercise has one case: the function takes no arguments
        least = 1 if ex.kind == "predict" else 2
        assert len(ex.public_cases()) >= least, ex.id
        assert len(HIDDEN[ex.id]()) >= least, ex.id
        for case in all_cases(ex):
            assert tuple(case.inputs) == ex.params, (ex.id, case.name)


def test_the_hidden_cases_cover_the_edge_cases():
    def dtypes(ex_id):
        return {a.dtype for c in HIDDEN[ex_id]() for a in c.inputs.values() if isinstance(a, np.ndarray)}

    assert np.dtype(np.float16) in dtypes("ch01.stable_softmax")
    assert np.dtype(np.float32) in dtypes("ch06.ring_cache_attention")
    for ex_id in ("ch06.masked_logsumexp",):
        assert any((~c.inputs["mask"].any(-1)).any() for c in HIDDEN[ex_id]()), (
            ex_id
        )  # a row with nothing to attend to
    assert any(c.inputs["q"].shape[-2] != c.inputs["k"].shape[-2] for c in HIDDEN["ch02.batched_attention"]())
    assert any(np.abs(c.inputs["x"]).max() >= 1000 for c in HIDDEN["ch01.stable_softmax"]())


def test_exercise_headers_and_solution_markers():
    ex = get("ch01.stable_softmax")
    assert ex.header == "# Exercise 1.2: stable softmax (2 points)"
    assert get("ch01.temperature_softmax").header.endswith("(1 point)")
    for ex in EXERCISES:
        assert ex.cell_source().splitlines()[0] == ex.header
        assert "### BEGIN SOLUTION" not in ex.solution_code()
        assert f"def {ex.function}(" in ex.solution_code()


# ----------------------------------------------------------------------------- full marks, zero marks


@pytest.mark.parametrize("ex_id", IDS)
def test_the_solution_earns_full_marks_on_every_case(ex_id):
    ex = get(ex_id)
    skip_without_torch(ex)
    results = run_cases(ex, ex.solution_function(), all_cases(ex))
    failed = [(r.name, r.message) for r in results if not r.passed]
    assert not failed


@pytest.mark.parametrize("ex_id", IDS)
def test_the_stub_earns_zero(ex_id):
    ex = get(ex_id)
    skip_without_torch(ex)
    results = run_cases(ex, stub_function(ex), all_cases(ex))
    assert not any(r.passed for r in results)
    if ex.stub in (None, STUB_LINE):
        # the plain stub fails only because it is not written yet
        assert {r.status for r in results} == {"not attempted"}
        assert {r.message for r in results} == {"not attempted yet"}
    else:
        # a spot-the-bug stub is the buggy code: a wrong answer whose mistake is recognised (its
        # name travels with the cases for the hint), shown as any wrong answer is
        assert "not attempted" not in {r.status for r in results}
        assert all(r.diagnosis for r in results if not r.hidden), [r.message for r in results]


@pytest.mark.parametrize("ex_id", IDS)
def test_no_case_passes_an_obviously_wrong_answer(ex_id):
    """Zeros or NaN of the right shape never pass; all-ones never passes every case."""
    ex = get(ex_id)
    skip_without_torch(ex)
    ones_passes_all = True
    for case in all_cases(ex):
        expected = expected_outputs(ex, case)
        for wrong in (
            [np.zeros_like(e) for e in expected],
            [np.full(e.shape, np.nan) if e.dtype.kind == "f" else np.zeros_like(e) for e in expected],
        ):
            assert not judge(ex, case, expected, Outcome("returned", wrong)).passed, case.name
        ones = judge(ex, case, expected, Outcome("returned", [np.ones_like(e) for e in expected]))
        ones_passes_all &= ones.passed
        assert not judge(ex, case, expected, Outcome("raised", error_type="NotImplementedError")).passed
    assert not ones_passes_all


# ----------------------------------------------------------------------------- the messages


def naive_softmax(x):
    e = np.exp(x)
    return e / e.sum(axis=-1, keepdims=True)


def test_message_forgot_to_subtract_the_max():
    result = check("ch01.stable_softmax", naive_softmax, show=False)
    # values, batch dimensions, then the extreme-logits group: only that group fails
    assert [c.passed for c in result.cases] == [True, True, True, False, False]
    assert result.cases[3].diagnosis == "missing max subtraction"
    assert result.cases[3].message.startswith("NaN where the expected row is finite")
    assert result.earned == pytest.approx(1.33)


def test_message_inverted_mask():
    def inverted(scores, mask):
        # the learner's own masked log-sum-exp, with the two branches of np.where swapped
        s = np.where(mask, -np.inf, scores)
        top = s.max(axis=-1, keepdims=True)
        top = np.where(np.isfinite(top), top, 0.0)
        with np.errstate(divide="ignore"):
            return top[..., 0] + np.log(np.exp(s - top).sum(axis=-1))

    result = check("ch06.masked_logsumexp", inverted, show=False)
    assert result.earned == 0
    assert all(c.diagnosis == "inverted mask" for c in result.cases)


def test_message_d_model_scaling():
    from attncourse import merge_heads, softmax, split_heads

    def scaled_by_d_model(x, W_q, W_k, W_v, W_o, n_heads):
        q, k, v = (split_heads(x @ W, n_heads) for W in (W_q, W_k, W_v))
        weights = softmax(q @ np.swapaxes(k, -1, -2) / np.sqrt(x.shape[-1]))
        return merge_heads(weights @ v) @ W_o, weights

    result = check("ch05.multi_head_attention", scaled_by_d_model, show=False)
    assert result.earned == 0
    assert result.cases[0].diagnosis == "scale by d_model"
    assert "d_head" not in result.message  # the symptom and a question, not the fix


def test_message_shapes_rows_and_return():
    ex = get("ch02.batched_attention")
    case = ex.public_cases()[0]  # L=2, S=3, E=4, Ev=5
    expected = expected_outputs(ex, case)
    out, weights = expected

    def verdict(*arrays):
        return judge(ex, case, expected, Outcome("returned", list(arrays))).message

    assert (
        verdict(out, weights.T)
        == "`weights` has the wrong shape: expected (2, 3), got (3, 2) (the last two axes are swapped)"
    )
    doubled = weights.copy()
    doubled[1] *= 2
    assert verdict(out, doubled).startswith("row 1 of `weights` does not sum to 1 (sums to 2)")
    assert check("ch02.batched_attention", lambda q, k, v: None, show=False).message == (
        "your function returned None: did you forget `return out, weights`?"
    )
    assert check("ch02.batched_attention", lambda q, k, v: out, show=False).message.startswith(
        "expected 2 results (out, weights) as a tuple"
    )


def test_message_for_an_error_points_at_the_line():
    def broken(logits, temperature):
        scaled = logits / temperature
        return scaled @ np.ones((7, 7))

    import inspect

    line = inspect.getsourcelines(broken)[1] + 2  # in a notebook, the line within the cell
    result = check("ch01.temperature_softmax", broken, show=False)
    assert result.message.startswith("raised ValueError: matmul")
    assert result.message.endswith(f"(line {line}: return scaled @ np.ones((7, 7)))")


def test_message_bool_mask_expected():
    result = check("ch06.make_causal_mask", lambda L, S: np.tril(np.ones((L, S))), show=False)
    assert (
        result.message
        == "your result should be a boolean mask (dtype bool, True = may attend); got dtype float64"
    )


def test_message_for_a_window_cut_by_tril_in_torch():
    pytest.importorskip("torch")
    ex = get("bugs.chunk_window_weights")
    result = check(ex.id, stub_function(ex), show=False)
    assert result.cases[0].diagnosis == "window cut by tril"
    assert "older than the window" not in result.text()  # the cause is found, not read
    hinted = check(ex.id, stub_function(ex), show=False, hint=True)
    assert hinted.hints[0].startswith("your weights reach tokens older than the window")


# ----------------------------------------------------------------------------- check and score


def test_check_shows_a_plain_text_result(capsys):
    result = check("ch01.stable_softmax", get("ch01.stable_softmax").solution_function())
    shown = capsys.readouterr().out
    assert shown.startswith("Exercise 1.2 · stable softmax: 2/2 points ✓ all cases passed")
    assert "✓ large logits" in shown
    assert result.passed and result.earned == 2
    html = result.html()
    assert "2/2 points" in html and "<script" not in html


def test_check_escapes_student_text_in_html():
    def evil(x):
        raise ValueError("<img src=x onerror=alert(1)>")

    html = check("ch01.stable_softmax", evil, show=False).html()
    assert "<img" not in html and "&lt;img" in html


def test_check_with_a_wrong_id_or_no_function(capsys):
    result = check("ch01.stabel_softmax", naive_softmax)
    assert "Did you mean 'ch01.stable_softmax'?" in capsys.readouterr().out
    assert result.earned == 0 and not result.cases
    result = check("ch01.stable_softmax", "stable_softmax", show=False)
    assert result.problem.startswith(
        "pass your function itself, e.g. check('ch01.stable_softmax', stable_softmax)"
    )


def test_score_adds_up_the_latest_checks(capsys):
    def stub(x):
        raise NotImplementedError

    check("ch01.stable_softmax", stub, show=False)
    check("ch01.temperature_softmax", get("ch01.temperature_softmax").solution_function(), show=False)
    total = sum(ex.points for ex in all_exercises("ch01"))
    report = score("ch01", show=False)
    assert (report.earned, report.points) == (get("ch01.temperature_softmax").points, total)
    check("ch01.stable_softmax", get("ch01.stable_softmax").solution_function(), show=False)
    report = score(1)
    earned = get("ch01.temperature_softmax").points + get("ch01.stable_softmax").points
    assert (report.earned, report.points) == (earned, total)
    text = capsys.readouterr().out
    assert text.startswith(f"Chapter 1: Softmax: {earned}/{total} points")
    assert "not checked yet" in text
    assert score(show=False).chapter == "ch01"  # the chapter of the latest check


def test_a_function_that_writes_into_its_inputs_cannot_change_the_expected_values():
    def vandal(x):
        x[...] = 0.0
        return np.full_like(x, 1.0 / x.shape[-1])

    assert check("ch01.stable_softmax", vandal, show=False).earned == 0
    case = Case("t", x=np.array([1.0, 2.0]))
    args = case.args()
    args[0][0] = 99
    assert case.inputs["x"][0] == 1.0
