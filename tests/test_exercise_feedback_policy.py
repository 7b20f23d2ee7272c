"""Feedback teaches without giving the answer away; methods are graded where they are the point;
scores follow one policy (case groups, all or nothing) in ``check``, ``score`` and the grader."""

from __future__ import annotations

import numpy as np
import pytest
from exercise_support import ROOT, load_hidden_cases, skip_without_torch, stub_function

from attncourse.exercises import Case, all_exercises, check, get, reset, score
from attncourse.exercises.engine.check import call
from attncourse.exercises.engine.compare import CaseResult, expected_outputs, judge, points_earned
from attncourse.exercises.engine.notebook import exercise_cells
from attncourse.grading.gradebook import feedback_text
from attncourse.grading.marking import ExerciseGrade, StudentGrade

HIDDEN = load_hidden_cases(ROOT / "hidden_cases")

# What fixes each diagnose exercise's bug: none of it may appear in the feedback on the untouched
# code, in the notebook (check) or in the grader's feedback file.
FIX_TOKENS = {
    "ch03.fix_late_scaling": ["scale the scores, then", "scaled scores", "log_total of"],
    "ch03.packed_head_attention": ["np.sqrt(D)", "1/sqrt(D)", "before padding"],
    "ch04.self_attention_in_blocks": ["k[..., :L", "v[..., :L", "-inf", "minus infinity"],
    "ch05.mha_forward": ["reshape(B, n_heads", "b * n_heads + h", "sequence-major"],
    "ch06.key_major_decoder": ["triu", "upper triangle", "j <= t"],
    "bugs.chunk_window_weights": ["masked + torch.tril", "S - L - window", "tril(minus_inf"],
    "bugs.grid_positions": ["indexing=", "'ij'", "column by column"],
    "bugs.cls_rollout": ["R = A @ R", "leftmost", "first to last"],
    "bugs.gated_delta_layer": ["S = alpha * S", "decay the state first", "before the decay"],
    "bugs.fused_qkv_attention": ["n_heads, 3, d_head", "head by head", "axis of 3"],
    "bugs.yarn_scores": ["return scores\n", "already", "do not multiply"],
    "bugs.partial_rope_attention": ["apply_rope(x[..., :R])", "x[..., :rotary_dim]", "on its own"],
    "bugs.sink_cache_weights": ["np.arange(len(kept))", "0, 1, 2"],
    "bugs.cross_decode": ["memory @ W_k", "memory @ w_k"],
    "ch09.split_decode": ["m + np.log", "m + log(l)", "np.log(l) + m"],
    "ch10.padded_patch_mask": ["-(-", "ceil", "sizes[:, 0], sizes[:, 1]"],
    "ch11.window_prefill": ["afterwards", "cut to the last", "window - 1 tokens before"],
    "ch12.prefix_decoder_mask": ["(j < S)", "only the source's columns", "& (j < S)"],
    "ch13.indexed_sparse_attention": ["np.where(causal, index", "before choosing", "-inf on the later"],
    "ch13.chunked_linear_attention": ["+ sims.sum(-1)", "before the chunk", "row sum"],
}
# keyed by the ids the exercises have now (a renamed exercise keeps its old id in former_ids)
FIX_TOKENS = {get(old).id: tokens for old, tokens in FIX_TOKENS.items()}
MINE = {f"ch0{n}" for n in range(10)} | {"bugs"}
# chapters 10 and 11 add their diagnose exercises' tokens here as they write them
DIAGNOSE = [
    ex.id for ex in all_exercises() if ex.kind == "diagnose" and (ex.chapter in MINE or ex.id in FIX_TOKENS)
]


def test_every_diagnose_exercise_has_its_fix_tokens_listed():
    assert sorted(DIAGNOSE) == sorted(FIX_TOKENS)


def _grader_feedback(ex, fn) -> str:
    """The grader's feedback file for a student whose notebook holds ``fn``: judged on the public
    and hidden cases by the grader's own judge, written by the gradebook's own writer."""
    cases = ex.public_cases() + (list(HIDDEN[ex.id]()) if ex.id in HIDDEN else [])
    results = [
        judge(
            ex,
            case,
            expected_outputs(ex, case),
            call(ex, fn, case.args()),
            hidden=i >= len(ex.public_cases()),
        )
        for i, case in enumerate(cases)
    ]
    grade = ExerciseGrade(ex, results, "student.ipynb")
    return feedback_text(StudentGrade("student", ["student.ipynb"], "ok", [], [], [grade]), ex.points)


@pytest.mark.parametrize("ex_id", DIAGNOSE)
def test_untouched_buggy_code_gets_the_symptom_not_the_fix(ex_id):
    ex = get(ex_id)
    skip_without_torch(ex)
    fn = stub_function(ex)
    result = check(ex_id, fn, show=False)
    assert result.earned == 0 and not result.not_attempted
    shown = result.text().lower()
    grader = _grader_feedback(ex, fn).lower()
    for token in FIX_TOKENS[ex_id]:
        assert token.lower() not in shown, f"check's feedback gives away {token!r}"
        assert token.lower() not in grader, f"the grader's feedback gives away {token!r}"
    # the cause (the diagnosis's message) comes on request only, and never in the grader's feedback
    named = {c.diagnosis for c in result.cases if c.diagnosis}
    assert named, "the bug is recognised (its name travels with the cases, for the hint)"
    causes = [d.message for d in ex.diagnoses if d.name in named]
    for cause in causes:
        assert cause.lower() not in shown and cause.lower() not in grader
    hinted = check(ex_id, fn, show=False, hint=True)
    assert hinted.hints and "hint:" in hinted.text()
    assert any(cause in hinted.hints for cause in causes)
    assert not any("hint" in line for line in grader.splitlines())


def test_a_hint_names_the_fix_and_is_never_in_judge_messages():
    ex = get("ch09.split_decode")
    result = check(ex.id, stub_function(ex), show=False, hint=True)
    assert any("m + log(l)" in h for h in result.hints)
    assert all("m + log(l)" not in c.message for c in result.cases)


# ----------------------------------------------------------------------------- method rules
def _softmax(s):
    e = np.exp(s - s.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def full_tiled(q, k, v, block_size):
    return _softmax(q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])) @ v


def _chunk_tiles(L, S, block_size):
    """Tiles a causal pass for the last L of S tokens needs: key blocks up to each query block's last."""
    return sum(
        min((S - L + min(i0 + block_size, L) - 1) // block_size + 1, -(-S // block_size))
        for i0 in range(0, L, block_size)
    )


def full_causal_tiled(q, k, v, block_size):
    L, S = q.shape[-2], k.shape[-2]
    s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    s = np.where(np.tril(np.ones((S, S), dtype=bool))[S - L :], s, -np.inf)
    return _softmax(s) @ v, _chunk_tiles(L, S, block_size)  # the right count, claimed without skipping


def every_tile_claims_skipped(q, k, v, block_size):
    """Tiles every (query block, key block) pair, masks, and reports the causal count."""
    L, S, E = q.shape[-2], k.shape[-2], q.shape[-1]
    s = np.full(q.shape[:-1] + (S,), -np.inf)
    for i0 in range(0, L, block_size):
        for j0 in range(0, S, block_size):
            s[..., i0 : i0 + block_size, j0 : j0 + block_size] = (
                q[..., i0 : i0 + block_size, :]
                @ np.swapaxes(k[..., j0 : j0 + block_size, :], -1, -2)
                / np.sqrt(E)
            )
    s = np.where(np.tril(np.ones((S, S), dtype=bool))[S - L :], s, -np.inf)
    return _softmax(s) @ v, _chunk_tiles(L, S, block_size)


@pytest.mark.parametrize(
    "ex_id, fn, words",
    [
        ("ch09.causal_tiled_attention", full_causal_tiled, "block of scores at once"),
        ("ch09.causal_tiled_attention", every_tile_claims_skipped, "computed"),
    ],
)
def test_full_attention_scores_zero_for_the_method_and_says_which_rule(ex_id, fn, words):
    result = check(ex_id, fn, show=False)
    assert result.earned == 0 and result.method_broken
    # every case fails on the method, but for a chunk in which every query block needs every key
    # block (one decoding step), where computing every tile is the method
    assert all(c.status == "method" for c in result.cases if "one decoding step" not in c.name)
    assert "method rule broken" in result.message and words in result.message
    grader = _grader_feedback(get(ex_id), fn)
    assert "method rule broken" in grader


@pytest.mark.parametrize("ex_id", ["ch09.causal_tiled_attention"])
def test_the_solution_keeps_the_method(ex_id):
    ex = get(ex_id)
    skip_without_torch(ex)
    assert check(ex_id, ex.solution_function(), show=False).earned == ex.points
    assert "method rule broken" not in _grader_feedback(ex, ex.solution_function())


def test_a_predict_answer_that_builds_the_arrays_scores_zero():
    import numpy as np

    def computed():  # simulates the stream: which text position each of 5000 steps' cache holds
        held = np.tril(np.ones((5000, 5000), dtype=bool))  # step t has seen tokens 0..t
        return int(np.argmax(held.sum(axis=1) > 4 + 1020))

    result = check("bugs.predict_first_drift", computed, show=False)
    assert result.earned == 0 and "written down" in result.message
    assert check("bugs.predict_first_drift", lambda: 4 + 1020, show=False).earned == 1


# ----------------------------------------------------------------------------- scores
def test_points_go_by_groups_all_or_nothing():
    ex = get("ch01.stable_softmax")

    def result(name, group, passed):
        return CaseResult(name, passed, "", "passed" if passed else "wrong values", group=group)

    cases = [result("a", "g1", True), result("b", "g1", False), result("c", "g2", True)]
    assert points_earned(ex, cases) == round(ex.points / 2, 2)
    cases.append(result("hidden: d", "g2", False))
    assert points_earned(ex, cases) == 0
    assert points_earned(ex, [result("a", "g1", True)]) == ex.points
    assert points_earned(ex, [CaseResult("a", False, "", "shortcut", group="g1")]) == 0


def test_score_rechecks_the_function_as_defined_now():
    reset()
    ex = get("ch01.stable_softmax")
    namespace = {"stable_softmax": ex.solution_function()}
    check(ex.id, namespace["stable_softmax"], show=False)
    assert (
        dict((e.id, r.earned) for e, r in score("ch01", show=False, namespace=namespace).rows if r)[ex.id]
        == ex.points
    )
    namespace["stable_softmax"] = lambda x: x  # redefined, wrongly, and not checked again
    report = score("ch01", show=False, namespace=namespace)
    assert dict((e.id, r.earned) for e, r in report.rows if r)[ex.id] == 0
    assert "hidden cases" in report.text()


def test_the_shortcut_message_names_what_may_be_called():
    import attncourse

    result = check(
        "ch09.static_cache_step",
        lambda *a: (attncourse.scaled_dot_product_attention(*a[:1] * 3)[0],) * 3,
        show=False,
    )
    assert result.shortcut
    assert "softmax (from attncourse)" in result.message


@pytest.mark.parametrize("ex_id", [ex.id for ex in all_exercises()])
def test_every_prompt_states_what_the_answer_may_call(ex_id):
    prompt = "".join(exercise_cells(ex_id)[0]["source"])
    ex = get(ex_id)
    if ex.kind == "predict":
        assert "written down" in prompt or "Work it out on paper" in prompt
    else:
        assert "*You may call:*" in prompt
        for name in ex.allowed():
            assert name in prompt


def test_case_groups_default_to_one_case_each():
    assert Case("x", a=1).group == "x"


def test_coincidental_passes_earn_nothing_in_6_6():
    """A wrong head scale passes 6.6's one-head case: grouped with cases it fails, it earns nothing
    there (the issue's 0.71/5)."""
    from attncourse.exercises.engine.check import run_cases

    def by_d_model(x, W_q, W_k, W_v, W_o, n_heads, window):
        B, L, D = x.shape
        i, j = np.arange(L)[:, None], np.arange(L)[None, :]
        local, causal = (j <= i) & (j > i - window), j <= i
        mask = np.stack([local] * (n_heads // 2) + [causal] * (n_heads - n_heads // 2))
        q, k, v = ((x @ W).reshape(B, L, n_heads, D // n_heads).swapaxes(1, 2) for W in (W_q, W_k, W_v))
        s = np.where(mask, q @ np.swapaxes(k, -1, -2) / np.sqrt(D), -np.inf)
        e = np.exp(s - s.max(-1, keepdims=True))
        w = e / e.sum(-1, keepdims=True)
        return (w @ v).swapaxes(1, 2).reshape(B, L, D) @ W_o, w

    for ex_id, fn in (("ch06.local_global_attention", by_d_model),):
        ex = get(ex_id)
        results = run_cases(ex, fn, ex.public_cases() + list(HIDDEN[ex_id]()))
        assert any(r.passed for r in results), "the coincidence this test is about"
        assert points_earned(ex, results) == 0


def test_the_hint_is_offered_only_after_real_attempts_and_never_shown_unasked():
    reset()
    ex = get("ch09.split_decode")
    untouched = stub_function(ex)
    for _ in range(4):  # the same untouched code, checked again and again: no hint, no offer
        result = check(ex.id, untouched, show=False)
        assert result.hints == [] and result.offer == ""
    wrong = []
    for c in (0.5, 2, 3):  # three different wrong answers: each part reports log(l) + c m
        ns: dict = {}
        exec(
            "import numpy as np\n"
            "def f(q, k, v, n_splits):\n"
            "    outs, lses = [], []\n"
            "    for kp, vp in zip(np.array_split(k, n_splits, axis=-2), np.array_split(v, n_splits, axis=-2)):\n"
            "        s = q @ np.swapaxes(kp, -1, -2) / np.sqrt(q.shape[-1])\n"
            "        m = s.max(axis=-1, keepdims=True)\n"
            "        p = np.exp(s - m)\n"
            "        outs.append(p @ vp / p.sum(axis=-1, keepdims=True))\n"
            f"        lses.append(np.log(p.sum(axis=-1, keepdims=True)) + {c} * m)\n"
            "    lses = np.stack(lses)\n"
            "    w = np.exp(lses - lses.max(axis=0))\n"
            "    return (w * np.stack(outs)).sum(axis=0) / w.sum(axis=0)\n",
            ns,
        )
        wrong.append(check(ex.id, ns["f"], show=False))
    # the untouched code is no attempt: the third different wrong answer gets the offer
    assert [bool(r.offer) for r in wrong] == [False, False, True]
    assert all(r.hints == [] for r in wrong)
    shown = wrong[-1].text()
    assert f"check({ex.id!r}, {ex.function}, hint=True)" in shown
    assert not any(h in shown for h in [ex.hint] + [d.hint for d in ex.diagnoses if d.hint])
    reset()


@pytest.mark.parametrize("ex_id", ["ch09.causal_tiled_attention"])
def test_full_attention_on_plain_arrays_is_caught_by_its_memory(ex_id):
    """np.asarray hides the score blocks from the tracked inputs; the large case's memory still tells."""

    def plain_full(q, k, v, block_size):
        q, k, v = np.asarray(q), np.asarray(k), np.asarray(v)
        out = full_causal_tiled(q, k, v, block_size) if "causal" in ex_id else full_tiled(q, k, v, block_size)
        return out

    result = check(ex_id, plain_full, show=False)
    assert result.earned == 0 and result.method_broken
    assert "held" in next(c.message for c in result.cases if c.status == "method")
