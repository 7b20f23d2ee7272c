"""Chapters 5-8: feedback is true of the answer in front of it, and names no fix or quantity.

Each test hands a wrong answer to ``check`` (public cases) and to the judging of every case,
hidden ones included, and holds the message to what that answer did.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
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
    for fn in (lambda b: b > np.finfo(b.dtype).min, lambda b: np.isfinite(b) & (b != np.finfo(b.dtype).min)):
        assert check(ex.id, fn, show=False).passed
        assert all(r.passed for r in run_cases(ex, fn, cases))


def test_half_the_dtypes_minimum_blocks_far_keys_and_is_told_so():
    # the prompt allows position terms down to -60000, below half of float16's minimum
    messages, results = _messages("ch06.mask_from_additive", lambda b: b > np.finfo(b.dtype).min / 2)
    assert messages and not all(r.passed for r in results)
    assert all("far from their query" in m for m in messages if "float16" in m)


def test_a_bias_of_zero_alone_is_not_the_mask():
    messages, _ = _messages("ch06.mask_from_additive", lambda b: np.asarray(b) == 0)
    assert messages and all("position penalty" in m for m in messages[:5])


# ----------------------------------------------------------------------------- 6.6
def test_a_window_one_too_wide_is_not_handed_the_fix():
    ex = get("ch06.local_global_attention")
    d = next(d for d in ex.diagnoses if d.name == "window one too wide")
    assert ">=" not in d.message and "j >" not in d.message and "i - window" not in d.message
    messages, _ = _messages(ex.id, d.variant)
    assert messages and not any("not >=" in m for m in messages)


# ----------------------------------------------------------------------------- prompts that ask
@pytest.mark.parametrize(
    ("ex_id", "given_away"),
    [
        ("ch06.mask_from_additive", "two kinds of entries"),
        ("ch06.local_global_attention", "Exercise 5."),
        ("ch06.key_major_decoder", "transpose"),
        ("ch06.key_major_decoder", "triu"),
        ("ch07.rotation_angles", "10000"),
        ("ch07.predict_encoder_alibi_weight", "|i - j|"),
    ],
)
def test_no_prompt_or_stub_holds_the_answer_or_points_at_it(ex_id, given_away):
    ex = get(ex_id)
    assert given_away not in ex.description and given_away not in ex.student_stub()


# ----------------------------------------------------------------------------- predict feedback: no quantity
def _head_part(W, b, H, head, rows=False, strided=False):
    dh = len(b) // H
    h = slice(head, None, H) if strided else slice(head * dh, (head + 1) * dh)
    return (W[h, :].T if rows else W[:, h]) @ b[h]


def test_8_1_mistakes_are_named_without_the_vector_that_remains():
    # each classic wrong answer gets its own message, and no message names the value bias that
    # stays in the head, or the slice that holds it
    wrong = {
        "the same ablation": lambda x, vw, vb, W, ob, H, head: np.zeros(np.shape(x)),
        "every head's bias": lambda x, vw, vb, W, ob, H, head: np.zeros(np.shape(x)) + W @ vb,
        "out_proj's bias counted": lambda x, vw, vb, W, ob, H, head: (
            np.zeros(np.shape(x)) + _head_part(W, vb, H, head) + ob
        ),
        "values summed over the keys": lambda x, vw, vb, W, ob, H, head: (
            np.zeros(np.shape(x)) + np.arange(1, np.shape(x)[1] + 1)[:, None] * _head_part(W, vb, H, head)
        ),
        "out_proj's rows": lambda x, vw, vb, W, ob, H, head: (
            np.zeros(np.shape(x)) + _head_part(W, vb, H, head, rows=True)
        ),
        "strided head features": lambda x, vw, vb, W, ob, H, head: (
            np.zeros(np.shape(x)) + _head_part(W, vb, H, head, strided=True)
        ),
        "another head": lambda x, vw, vb, W, ob, H, head: (
            np.zeros(np.shape(x)) + _head_part(W, vb, H, (head + 1) % H)
        ),
    }
    ex = get("ch08.value_ablation_difference")
    assert set(wrong) == {d.name for d in ex.diagnoses}
    for d in ex.diagnoses:
        messages, _ = _messages(ex.id, wrong[d.name])
        assert messages and any(d.message in m for m in messages), d.name
        for m in messages:
            assert not any(w in m for w in ("v_bias", "value bias", "head * ", "add up to 1")), m


def test_8_2_look_alike_probes_are_named_without_the_test_that_tells_them_apart():
    ex = get("ch08.post_norm_blocks")
    for d in ex.diagnoses:
        messages, _ = _messages(ex.id, d.variant)
        assert messages, d.name
        for m in messages:
            assert "1e-3" not in m and "both" not in m, m


def test_the_alibi_prediction_mistakes_are_named_without_the_number_or_the_rule():
    ex = get("ch07.predict_encoder_alibi_weight")
    for d in ex.diagnoses:
        value = float(d.variant())  # handed in as a written-down number, as a student would
        messages, _ = _messages(ex.id, lambda: value)
        assert messages and all(m.startswith("that is") for m in messages), (d.name, messages)
        for m in messages:
            assert not any(
                n in m for n in ("0.1", "0.2", "0.4", "1/4", "2^", "e^", "exp", "tanh", "geometric")
            ), m


def test_7_3_diagnoses_name_the_mistake_without_the_turn_that_fixes_it():
    from attncourse.exercises.engine.compare import Outcome, expected_outputs, judge
    from attncourse.exercises.engine.outputs import to_arrays

    ex = get("ch07.move_rotated_keys")  # the variants call the package, which answers may not: judged here
    cases = ex.public_cases() + list(HIDDEN[ex.id]())
    for d in ex.diagnoses:
        messages = []
        for case in cases:
            got = Outcome("returned", to_arrays(d.variant(*case.args()), ex.outputs))
            result = judge(ex, case, expected_outputs(ex, case), got)
            messages += [] if result.passed else [result.message]
        assert messages and any(d.message in m for m in messages), d.name
        for m in messages:
            assert not any(
                n in m for n in ("new - old", "new-old", "old - new", "difference", "10000", "i +")
            ), m


def test_7_4_answers_that_drop_the_content_scores_or_turn_the_sign_are_told_so():
    def weights_alone(scores, weights):
        L = weights.shape[-1]
        return np.log(weights[:, L - 1, L - 1] / weights[:, L - 1, L - 2])

    messages, _ = _messages("ch07.recover_alibi_slopes", weights_alone)
    assert messages and all("content scores" in m for m in messages)

    def from_row_1_with_the_sign_turned(scores, weights):  # another row than the reference reads
        return (np.log(weights[:, 1, 0]) - scores[:, 1, 0]) - (np.log(weights[:, 1, 1]) - scores[:, 1, 1])

    messages, _ = _messages("ch07.recover_alibi_slopes", from_row_1_with_the_sign_turned)
    assert messages and all("sign" in m for m in messages)


def test_7_5_a_chunk_placed_at_the_start_is_told_so_and_a_bias_off_by_a_row_constant_is_right():
    from attncourse import softmax as sm

    def at_the_start(q, k, v):
        H, C, S = q.shape[1], q.shape[2], k.shape[2]
        slopes = 2.0 ** (-8.0 * np.arange(1, H + 1) / H)
        i, j = np.arange(C)[:, None], np.arange(S)[None, :]
        scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1]) - slopes[:, None, None] * (i - j)
        w = sm(np.where(j <= i, scores, -np.inf))
        return w @ v, w

    messages, _ = _messages("ch07.alibi_chunk_attention", at_the_start)
    assert messages and all("start of the sequence" in m for m in messages if "C = S" not in m)

    def chunk_local_distance(q, k, v):  # -m (c - j) with the right mask: a constant per row away
        H, C, S = q.shape[1], q.shape[2], k.shape[2]
        slopes = 2.0 ** (-8.0 * np.arange(1, H + 1) / H)
        c, j = np.arange(C)[:, None], np.arange(S)[None, :]
        scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1]) - slopes[:, None, None] * (c - j)
        w = sm(np.where(j <= c + S - C, scores, -np.inf))
        return w @ v, w

    messages, results = _messages("ch07.alibi_chunk_attention", chunk_local_distance)
    assert not messages and all(r.passed for r in results)


# ----------------------------------------------------------------------------- 8.3
def _head_count(finest=False, summed_to_one=True):
    """A student's 8.3 in plain numpy: position 1 reads keys 0 and 1, so each head's columns
    share one weight p there (or, with ``summed_to_one=False``, two free weights a, b)."""

    def attention_head_count(x, h, W_v, W_o):
        x, h, W_v, W_o = (np.asarray(a, dtype=np.float64) for a in (x, h, W_v, W_o))
        d = x.shape[-1]
        u = (h - x) @ np.linalg.inv(W_o)
        v = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5) @ W_v
        fits = []
        for H in (k for k in range(1, d + 1) if d % k == 0):
            ok = True
            for b in range(len(x)):
                for j in range(H):
                    c = slice(j * (d // H), (j + 1) * (d // H))
                    if summed_to_one:
                        A, y = (v[b, 0, c] - v[b, 1, c])[:, None], u[b, 1, c] - v[b, 1, c]
                    else:
                        A, y = v[b, :2, c].T, u[b, 1, c]
                    w = np.linalg.lstsq(A, y, rcond=None)[0]
                    ok &= np.abs(A @ w - y).max() < 1e-4 * (1 + np.abs(u).max())
            if ok:
                fits.append(H)
        return max(fits) if finest else min(fits)

    return attention_head_count


def test_a_count_of_finer_heads_is_told_so_and_the_fewest_that_fit_passes():
    assert check("ch08.attention_head_count", _head_count(), show=False).passed
    messages, results = _messages("ch08.attention_head_count", _head_count(finest=True))
    assert messages and all("more heads than the attention had" in m for m in messages)
    # every case whose attention has fewer heads than features fails, and only those
    for r in results:  # every case is named "... d_model=<d>, <H> head(s) ..."
        d, H = map(int, re.search(r"d_model=(\d+), (\d+) head", r.name).groups())
        assert r.passed == (H == d), r.name


def test_free_weights_are_told_a_straddling_split_passed_and_nothing_of_the_sum():
    messages, results = _messages("ch08.attention_head_count", _head_count(summed_to_one=False))
    assert messages and all("straddle" in m for m in messages)
    assert not any("add up" in m or "sum" in m for m in messages)  # the fix is the hint's, asked for
    assert any(r.passed for r in results) and not all(r.passed for r in results)


# ----------------------------------------------------------------------------- 8.4 and 8.5
def _ln_fit(x, y, signed=True):
    d = np.shape(x)[-1]
    X, Y = np.asarray(x, np.float64).reshape(-1, d), np.asarray(y, np.float64).reshape(-1, d)
    n = (X - X.mean(1, keepdims=True)) / np.sqrt(X.var(1, keepdims=True) + 1e-5)
    dn, dy = n - n.mean(0), Y - Y.mean(0)
    gamma = (dn * dy).sum(0) / (dn * dn).sum(0) if signed else dy.std(0) / dn.std(0)
    return gamma, Y.mean(0) - gamma * n.mean(0)


def test_a_layer_norm_fit_that_loses_gammas_sign_is_told_so_and_a_signed_one_passes():
    messages, _ = _messages("ch08.layer_norm_parameters", lambda x, y: _ln_fit(x, y, signed=False))
    assert messages and all("sign" in m for m in messages)
    assert not any("epsilon" in m or "rows;" in m for m in messages)
    assert check("ch08.layer_norm_parameters", _ln_fit, show=False).passed


def test_a_sampler_read_with_k_equal_to_v_is_told_about_top_k_not_about_the_temperature():
    def settings(logits, probs):
        z, p = np.asarray(logits, np.float64), np.asarray(probs, np.float64)
        kept = p > 0
        T = np.array([np.polyfit(z[i][kept[i]], np.log(p[i][kept[i]]), 1)[0] ** -1 for i in range(len(z))])
        return T, np.full(len(z), z.shape[-1])

    messages, results = _messages("ch08.sampling_settings", settings)
    assert messages and all("top_k" in m for m in messages)
    assert not any("temperature" in m for m in messages)
    assert all(r.passed for r in results if r.group == "temperature")


# ----------------------------------------------------------------------------- 5.7 and 6.8: named for the function, not the cause
def test_the_find_the_bug_ids_titles_and_stubs_do_not_name_the_cause():
    for ex_id, old, cause_words in (
        ("ch05.mha_forward", "ch05.fix_head_split", ("order", "swap", "transpos", "major", "unfold")),
        (
            "ch06.key_major_decoder",
            None,
            ("leak", "diagonal", "tril", "triu", "triangle", "transpos", "peek"),
        ),
    ):
        ex = get(ex_id)
        assert old is None or get(old) is ex  # saved notebooks and gradebooks keep working
        comments = " ".join(line.split("#", 1)[1] for line in ex.stub.splitlines() if "#" in line)
        for text in (ex.id, ex.title, comments):
            assert not any(w in text.lower() for w in cause_words), (ex_id, text)


def test_chapter_5s_predict_mistakes_are_named_without_the_rule_or_the_numbers():
    for ex_id, banned in (
        ("ch05.predict_causal_top_keys", ("12", "every key", "query i picks", "largest k_j")),
    ):
        ex = get(ex_id)
        for d in ex.diagnoses:
            messages, _ = _messages(ex_id, d.variant)
            assert messages
            for m in messages:
                assert not any(b in m for b in banned), (ex_id, m)


def test_chapter_8_prompts_state_the_question_and_agree_with_their_rules():
    # 8.2 leaves the tolerance to the student; 8.5 does not say which tokens were kept
    assert not any(w in get("ch08.post_norm_blocks").description for w in ("hundredths", "allow for"))
    assert "probability is 0" not in get("ch08.sampling_settings").description
    # "numpy or torch" in a prompt, torch in its "You may call" line
    for ex_id in ("ch08.attention_head_count", "ch08.layer_norm_parameters", "ch08.sampling_settings"):
        ex = get(ex_id)
        assert "numpy or torch" in ex.description and {"numpy", "torch"} <= set(ex.allowed()), ex_id
    # 8.1 states the situation, not what stays of the head
    assert not any(
        w in get("ch08.value_ablation_difference").description for w in ("bias slice", "add up to")
    )


def test_a_prompt_that_allows_torch_says_so_in_its_rules_line():
    # the prompt and the "You may call" line under it never disagree
    from attncourse.exercises import all_exercises

    for ex in all_exercises():
        if "numpy or torch" in ex.description:
            assert "torch" in ex.allowed(), ex.id
