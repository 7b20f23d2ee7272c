"""Chapter 5's exercises: each reference is the layer it claims, checked against a layer written
independently here (loops over heads, feature lists), and the untouched stubs earn nothing."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest
from exercise_support import stub_function

from attncourse.exercises import check, get


def _dealt_layer(x, W_q, W_k, W_v, W_o, n_heads):
    """The other library's layer, head by head: head h reads features h, h + H, ... of q, k, v,
    and its output goes back to those positions before W_o."""
    d = x.shape[-1]
    q, k, v = x @ W_q, x @ W_k, x @ W_v
    concat = np.zeros_like(q)
    maps = []
    for h in range(n_heads):
        mine = list(range(h, d, n_heads))
        s = q[..., mine] @ np.swapaxes(k[..., mine], -1, -2) / np.sqrt(len(mine))
        w = np.exp(s - s.max(-1, keepdims=True))
        w /= w.sum(-1, keepdims=True)
        concat[..., mine] = w @ v[..., mine]
        maps.append(w)
    return concat @ W_o, np.stack(maps, axis=-3)


def _course_layer(x, W_q, W_k, W_v, W_o, n_heads):
    """This course's layer, head by head: head h owns features h*d_head:(h+1)*d_head."""
    d = x.shape[-1]
    d_head = d // n_heads
    outs, maps = [], []
    for h in range(n_heads):
        block = slice(h * d_head, (h + 1) * d_head)
        q, k, v = x @ W_q[:, block], x @ W_k[:, block], x @ W_v[:, block]
        s = q @ np.swapaxes(k, -1, -2) / np.sqrt(d_head)
        w = np.exp(s - s.max(-1, keepdims=True))
        w /= w.sum(-1, keepdims=True)
        outs.append(w @ v)
        maps.append(w)
    return np.concatenate(outs, axis=-1) @ W_o, np.stack(maps, axis=-3)


@pytest.mark.parametrize("d_model, n_heads", [(8, 4), (12, 3), (6, 2), (9, 3), (5, 5), (4, 1)])
def test_5_1_s_reference_makes_the_course_layer_compute_the_dealt_layer(d_model, n_heads):
    rng = np.random.default_rng(d_model * 10 + n_heads)
    x = rng.normal(size=(2, 5, d_model))
    Ws = [rng.normal(size=(d_model, d_model)) / np.sqrt(d_model) for _ in range(4)]
    moved = get("ch05.weights_from_dealt_heads").reference(*Ws, n_heads)
    out, weights = _course_layer(x, *moved, n_heads)
    lib_out, lib_weights = _dealt_layer(x, *Ws, n_heads)
    np.testing.assert_allclose(out, lib_out, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(weights, lib_weights, rtol=1e-12, atol=1e-12)
    # numbers moved, none recomputed: every column of W_q is one of the library's
    assert sorted(map(tuple, moved[0].T)) == sorted(map(tuple, Ws[0].T))


def test_the_dealt_layer_differs_from_the_course_layer_with_the_same_weights():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(1, 4, 8))
    Ws = [rng.normal(size=(8, 8)) for _ in range(4)]
    assert not np.allclose(_dealt_layer(x, *Ws, 4)[0], _course_layer(x, *Ws, 4)[0])


@pytest.mark.parametrize("d_model, n_heads", [(6, 3), (8, 2), (12, 4), (4, 1), (5, 5)])
def test_5_5_s_reference_is_one_layer_that_adds_the_single_head_modules(d_model, n_heads):
    rng = np.random.default_rng(d_model + 100 * n_heads)
    d_head = d_model // n_heads
    W_q, W_k, W_v = (rng.normal(size=(n_heads, d_model, d_head)) for _ in range(3))
    W_o = rng.normal(size=(n_heads, d_head, d_model))
    x = rng.normal(size=(2, 4, d_model))
    added = 0
    for h in range(n_heads):  # the old model: single-head modules scaled by the model's width, added
        s = (x @ W_q[h]) @ np.swapaxes(x @ W_k[h], -1, -2) / np.sqrt(d_model)
        w = np.exp(s - s.max(-1, keepdims=True))
        added = added + (w / w.sum(-1, keepdims=True)) @ (x @ W_v[h]) @ W_o[h]
    merged = get("ch05.merge_single_heads").reference(W_q, W_k, W_v, W_o)
    out, _ = _course_layer(x, *merged, n_heads)
    np.testing.assert_allclose(out, added, rtol=1e-10, atol=1e-10)


def test_5_7_s_fix_is_the_course_layer_and_its_stub_is_wrong_at_every_head_count():
    ex = get("ch05.mha_forward")
    fixed = {}
    exec("\n".join(ex.needs), fixed)
    solution = textwrap.dedent(ex.solution).replace("### BEGIN SOLUTION", "").replace("### END SOLUTION", "")
    exec(solution, fixed)
    stub = stub_function(ex)
    rng = np.random.default_rng(5)
    for d_model, n_heads in [(4, 1), (6, 2), (8, 4), (6, 6)]:
        x = rng.normal(size=(2, 3, d_model))
        Ws = [rng.normal(size=(d_model, d_model)) for _ in range(4)]
        out, weights = fixed["mha_forward"](x, *Ws, n_heads)
        ref_out, ref_weights = _course_layer(x, *Ws, n_heads)
        np.testing.assert_allclose(out, ref_out, rtol=1e-10, atol=1e-10)
        np.testing.assert_allclose(weights, ref_weights, rtol=1e-10, atol=1e-12)
        bug_out, bug_weights = stub(x, *Ws, n_heads)
        np.testing.assert_allclose(bug_weights, ref_weights, rtol=1e-10, atol=1e-12)  # the symptom
        assert not np.allclose(bug_out, ref_out)


def test_5_2_s_rank_is_reached_by_random_weights_and_never_passed():
    rng = np.random.default_rng(2)
    ranks = []
    for _ in range(20):
        x = rng.normal(size=(10, 8))
        W_q, W_k = rng.normal(size=(8, 8)), rng.normal(size=(8, 8))
        q, k = x @ W_q, x @ W_k
        summed = sum(q[:, h * 2 : (h + 1) * 2] @ k[:, h * 2 : (h + 1) * 2].T for h in range(4))
        ranks.append(np.linalg.matrix_rank(summed))
    assert max(ranks) == int(get("ch05.predict_summed_scores_rank").reference()) == 8


def test_5_4_s_count_is_reached_and_a_query_sees_one_key_more_than_the_one_before():
    rng = np.random.default_rng(4)
    L = 12
    causal = np.tril(np.ones((L, L), bool))
    best = 0
    for _ in range(200):  # random width-1 heads never beat the answer
        q, k = rng.normal(size=L), rng.normal(size=L)
        scores = np.where(causal, q[:, None] * k[None, :], -np.inf)
        best = max(best, len(set(scores.argmax(-1).tolist())))
    q, k = np.ones(L), np.arange(L, dtype=float)  # increasing keys, positive queries: every key
    reached = len(set(np.where(causal, q[:, None] * k[None, :], -np.inf).argmax(-1).tolist()))
    assert best <= reached == int(get("ch05.predict_causal_top_keys").reference()) == L
    # without the mask the same heads reach only two keys
    assert len(set((q[:, None] * k[None, :]).argmax(-1).tolist())) <= 2


@pytest.mark.parametrize(
    "ex_id",
    [
        "ch05.weights_from_dealt_heads",
        "ch05.predict_causal_top_keys",
        "ch05.merge_single_heads",
        "ch05.mha_forward",
    ],
)
def test_the_untouched_student_code_scores_nothing(ex_id):
    result = check(ex_id, stub_function(get(ex_id)), show=False)
    assert result.earned == 0 and not result.passed
