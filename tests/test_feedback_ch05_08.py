"""Chapters 5-8: feedback is true of the answer in front of it, and names no fix or quantity.

Each test hands a wrong answer to ``check`` (public cases) and to the judging of every case,
hidden ones included, and holds the message to what that answer did.
"""

from __future__ import annotations

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


# ----------------------------------------------------------------------------- predict feedback: no quantity
def test_the_block_size_mistakes_are_named_without_the_numbers():
    ex = get("ch08.predict_block_parameters")
    for d in ex.diagnoses:
        messages, _ = _messages(ex.id, d.variant)
        assert messages
        for m in messages:
            assert not any(n in m for n in ("64", "256", "4 *", "+")), m


def test_8_2_look_alike_probes_are_named_without_the_test_that_tells_them_apart():
    ex = get("ch08.post_norm_blocks")
    for d in ex.diagnoses:
        messages, _ = _messages(ex.id, d.variant)
        assert messages, d.name
        for m in messages:
            assert "1e-3" not in m and "both" not in m, m


def test_the_alibi_prediction_mistakes_are_named_without_the_count_or_the_rule():
    ex = get("ch07.predict_alibi_recent_heads")
    for d in ex.diagnoses:
        messages, _ = _messages(ex.id, d.variant)
        assert messages
        for m in messages:
            assert not any(n in m for n in ("14", "2^", "e^", "exp", "geometric")), m


# ----------------------------------------------------------------------------- 8.3
def _parallel(gelu_approximate):
    import torch.nn.functional as F

    from attncourse import merge_heads, scaled_dot_product_attention, split_heads

    def parallel_block(x, W_q, W_k, W_v, W_o, W_1, W_2, n_heads):
        h = F.layer_norm(x, (x.shape[-1],))
        q, k, v = (split_heads(h @ W, n_heads) for W in (W_q, W_k, W_v))
        out, _ = scaled_dot_product_attention(q, k, v, is_causal=True)
        return x + merge_heads(out) @ W_o + F.gelu(h @ W_1, approximate=gelu_approximate) @ W_2

    return parallel_block


def test_a_tanh_gelu_is_told_its_gelu_differs_and_nothing_about_the_structure():
    pytest.importorskip("torch")
    result = check("ch08.parallel_block", _parallel("tanh"), show=False, hint=True)
    failed = [c for c in result.cases if not c.passed]
    assert failed and all("tanh" in c.message for c in failed)
    assert all("normalis" not in h and "sublayer" not in h for h in result.hints)
    assert check("ch08.parallel_block", _parallel("none"), show=False).passed


def test_a_wrong_block_that_matches_no_mistake_gets_no_claim_about_its_structure():
    pytest.importorskip("torch")

    def mlp_doubled(x, W_q, W_k, W_v, W_o, W_1, W_2, n_heads):
        return _parallel("none")(x, W_q, W_k, W_v, W_o, 2 * W_1, W_2, n_heads)

    result = check("ch08.parallel_block", mlp_doubled, show=False, hint=True)
    failed = [c for c in result.cases if not c.passed]
    assert failed and not any(c.diagnosis for c in failed)
    assert not any("how many times is x normalised" in h for h in result.hints)


# ----------------------------------------------------------------------------- 5.7 and 6.8: named for the function
def test_the_find_the_bug_ids_titles_and_stubs_do_not_name_the_cause():
    for ex_id, old, cause_words in (
        ("ch05.mha_forward", "ch05.fix_head_split", ("column", "row", "transpos", "(out, in)", "layout")),
        ("ch06.decoder_attention", "ch06.fix_causal_leak", ("leak", "diagonal", "k=1", "off by one")),
    ):
        ex = get(ex_id)
        assert get(old) is ex  # saved notebooks and gradebooks keep working
        comments = " ".join(line.split("#", 1)[1] for line in ex.stub.splitlines() if "#" in line)
        for text in (ex.id, ex.title, comments):
            assert not any(w in text.lower() for w in cause_words), (ex_id, text)


def test_chapter_5s_predict_mistakes_are_named_without_the_rule_or_the_numbers():
    for ex_id, banned in (
        ("ch05.predict_summed_scores_rank", ("8", "Q K^T", "d_model", "smaller", "larger")),
        ("ch05.predict_causal_top_keys", ("12", "every key", "query i picks", "largest k_j")),
    ):
        ex = get(ex_id)
        for d in ex.diagnoses:
            messages, _ = _messages(ex_id, d.variant)
            assert messages
            for m in messages:
                assert not any(b in m for b in banned), (ex_id, m)
