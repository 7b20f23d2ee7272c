"""Feedback that helps: distinct statuses, the inputs and the first differences of the first failure,
the diagnosis, and predict exercises graded with the tolerance they state."""

from __future__ import annotations

import numpy as np
import pytest

from attncourse.exercises import Case, Exercise, check, get, reset
from attncourse.exercises.engine.check import run_cases
from attncourse.exercises.engine.compare import STATUSES, describe_inputs


@pytest.fixture(autouse=True)
def _fresh_scores():
    reset()
    yield
    reset()


def statuses(ex_id, fn):
    return [c.status for c in check(ex_id, fn, show=False).cases]


def test_not_attempted_raised_wrong_shape_wrong_values_are_distinct():
    def stub(q, k, v):
        raise NotImplementedError("write your answer here")

    def raises(q, k, v):
        return q @ k  # (L, E) @ (S, E): a shape error

    def transposed(q, k, v):
        from attncourse.exercises import get as _get

        out, weights = _get("ch02.batched_attention").solution_function()(q, k, v)
        return out, np.swapaxes(weights, -1, -2)

    def off(q, k, v):
        out, weights = get("ch02.batched_attention").solution_function()(q, k, v)
        return out + 0.5, weights

    seen = {
        "stub": set(statuses("ch02.batched_attention", stub)),
        "raises": set(statuses("ch02.batched_attention", raises)),
        "transposed": set(statuses("ch02.batched_attention", transposed)[:1]),  # L=2, S=3
        "off": set(statuses("ch02.batched_attention", off)),
        "none": set(statuses("ch02.batched_attention", lambda q, k, v: None)),
    }
    assert seen == {
        "stub": {"not attempted"},
        "raises": {"raised"},
        "transposed": {"wrong shape"},
        "off": {"wrong values"},
        "none": {"bad output"},
    }
    assert all(s <= set(STATUSES) for s in seen.values())


def test_the_first_failure_shows_inputs_and_the_first_entries_that_differ():
    def off(q, k, v):
        out, weights = get("ch02.batched_attention").solution_function()(q, k, v)
        out = out.copy()
        out[..., 0, 1] += 1.0
        return out, weights

    result = check("ch02.batched_attention", off, show=False)
    first = result.cases[0]
    case = get("ch02.batched_attention").public_cases()[0]
    assert first.inputs == describe_inputs(case)
    assert first.inputs.startswith("q (2, 4) float64, k (3, 4) float64, v (3, 5) float64")
    expected = get("ch02.batched_attention").solution_function()(*case.args())[0]
    assert first.details[0] == (
        f"`out`: 1 of 10 entries differ; first at (0, 1): expected {expected[0, 1]:.4g}, "
        f"got {expected[0, 1] + 1:.4g}"
    )
    text = result.text().splitlines()
    assert text[1].startswith(f"  ✗ {first.name} [wrong values]: `out` differs from the expected values")
    assert text[2] == f"      inputs: {first.inputs}"
    assert text[3] == f"      {first.details[0]}"
    # the details go with the first failure only
    assert sum(line.startswith("      inputs:") for line in text) == 1
    assert "inputs: q (2, 4) float64" in result.html()


def test_a_diagnosis_keeps_the_details():
    def by_d_model(x, W_q, W_k, W_v, W_o, n_heads):
        from attncourse import merge_heads, softmax, split_heads

        q, k, v = (split_heads(x @ W, n_heads) for W in (W_q, W_k, W_v))
        weights = softmax(q @ np.swapaxes(k, -1, -2) / np.sqrt(x.shape[-1]))
        return merge_heads(weights @ v) @ W_o, weights

    result = check("ch05.multi_head_attention", by_d_model, show=False)
    first = result.cases[0]
    assert first.status == "wrong values"
    assert first.diagnosis == "scale by d_model"
    assert first.inputs.startswith("x (1, 3, 4) float64") and "n_heads = 2" in first.inputs
    assert first.details and first.details[0].startswith("`out`: ")


def test_not_attempted_shows_no_details():
    def stub(x):
        raise NotImplementedError

    result = check("ch01.stable_softmax", stub, show=False)
    assert result.not_attempted and "inputs:" not in result.text()


def _predict(**fields):
    base = dict(
        id="ch03.predict_demo",
        number="3.99",
        title="predict the variance",
        points=1,
        function="predict_demo",
        kind="predict",
        solution="def predict_demo():\n    ### BEGIN SOLUTION\n    return 64\n    ### END SOLUTION\n",
        reference=lambda: 64.0,
        public_cases=lambda: [Case("Var(q . k) at d_k = 64")],
        tolerance=(0.1, 0.0),
    )
    base.update(fields)
    return Exercise(**base)


def test_predict_is_graded_with_its_stated_tolerance_and_says_so():
    ex = _predict()
    case = ex.public_cases()
    assert run_cases(ex, lambda: 60, case)[0].passed  # within 10%
    assert run_cases(ex, lambda: 70.0, case)[0].passed
    wrong = run_cases(ex, lambda: 8, case)[0]  # sqrt(64): the classic slip
    assert not wrong.passed and wrong.status == "wrong values"
    # the expected value of a predict exercise is never shown, nor how far off the answer is
    assert wrong.message == "your result is wrong"
    assert "64" not in wrong.message + " ".join(wrong.details)
    assert wrong.details == ["accepted: within 10% relative of the expected value"]
    assert wrong.inputs == ""


def test_predict_of_an_integer_count_uses_the_tolerance_too():
    ex = _predict(reference=lambda: 1_050_624, tolerance=(0.01, 0.0))
    case = ex.public_cases()
    assert run_cases(ex, lambda: 1_050_000, case)[0].passed
    assert run_cases(ex, lambda: 1_048_576, case)[0].passed  # 0.2% off: within 1% as well
    assert not run_cases(ex, lambda: 8 * 1_050_624, case)[0].passed  # one set of weights per head


def test_predict_of_a_shape_is_exact():
    ex = _predict(reference=lambda: (2, 8, 16, 16), tolerance=(0.0, 0.0))
    case = ex.public_cases()
    assert run_cases(ex, lambda: (2, 8, 16, 16), case)[0].passed
    wrong = run_cases(ex, lambda: (2, 16, 16, 8), case)[0]
    assert not wrong.passed and wrong.details[-1] == "accepted: exactly the expected value"


def test_a_bad_tolerance_is_refused():
    with pytest.raises(ValueError, match="tolerance must be"):
        _predict(tolerance=(-0.1, 0.0))


def test_the_student_stub_prints_no_hint_and_is_still_not_attempted():
    ex = get("ch04.output_without_token")
    assert ex.hint and ex.hint not in ex.student_stub()
    assert ex.student_stub() == 'raise NotImplementedError("write your answer here")'
    assert get("bugs.cls_rollout").student_stub() == "R = R @ A"  # the bug itself
    from exercise_support import stub_function

    result = check("ch04.output_without_token", stub_function(ex), show=False)
    assert result.not_attempted and result.earned == 0
    with pytest.raises(ValueError, match="one line"):
        _predict(hint="two\nlines")
