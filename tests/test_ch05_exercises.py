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
    """This course's layer, head by head: head h owns features h*d_head:(h+1)*d_head of the
    projections (d_model of them, or fewer in a layer with a head removed)."""
    d = np.shape(W_q)[-1]
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


@pytest.mark.parametrize(
    "d_model, n_heads, first, second", [(8, 4, 0, 3), (6, 2, 0, 1), (12, 4, 1, 2), (6, 6, 2, 5)]
)
def test_5_2_s_reference_computes_the_layer_with_the_copy_removed(d_model, n_heads, first, second):
    rng = np.random.default_rng(d_model + 100 * n_heads)
    d_head = d_model // n_heads
    Ws = [rng.normal(size=(d_model, d_model)) for _ in range(4)]
    for W in Ws[:3]:  # head `second` is a copy of head `first` in W_q, W_k, W_v
        W[:, second * d_head : (second + 1) * d_head] = W[:, first * d_head : (first + 1) * d_head]
    merged = get("ch05.merge_copied_heads").reference(*Ws, n_heads)
    assert merged[0].shape == (d_model, d_model - d_head) and merged[3].shape == (d_model - d_head, d_model)
    x = rng.normal(size=(2, 5, d_model))
    out, weights = _course_layer(x, *Ws, n_heads)
    small_out, small_weights = _course_layer(x, *merged, n_heads - 1)  # heads of width d_head
    np.testing.assert_allclose(small_out, out, rtol=1e-10, atol=1e-10)
    others = [h for h in range(n_heads) if h != second]  # the kept heads, in their order
    np.testing.assert_allclose(small_weights, weights[:, others], rtol=1e-12, atol=1e-12)
    # removing the copy without its share of W_o changes the output
    dropped = get("ch05.merge_copied_heads").diagnoses[0].variant(*Ws, n_heads)
    assert not np.allclose(_course_layer(x, *dropped, n_heads - 1)[0], out)


def test_5_5_s_reference_is_the_course_layer_for_equal_widths_and_a_head_by_head_layer_otherwise():
    rng = np.random.default_rng(55)
    ref = get("ch05.mha_uneven_heads").reference
    x, Ws = rng.normal(size=(2, 4, 8)), [rng.normal(size=(8, 8)) / 3 for _ in range(4)]
    for n_heads in (1, 2, 4, 8):
        out, weights = ref(x, *Ws, [8 // n_heads] * n_heads)
        c_out, c_weights = _course_layer(x, *Ws, n_heads)
        np.testing.assert_allclose(out, c_out, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(weights, c_weights, rtol=1e-12, atol=1e-12)
    widths = [1, 3, 4]
    out, weights = ref(x, *Ws, widths)
    expected, start = 0, 0
    for h, w in enumerate(widths):  # head h: its own features, scaled by its own width
        c = slice(start, start + w)
        s = (x @ Ws[0][:, c]) @ np.swapaxes(x @ Ws[1][:, c], -1, -2) / np.sqrt(w)
        p = np.exp(s - s.max(-1, keepdims=True))
        p /= p.sum(-1, keepdims=True)
        np.testing.assert_allclose(weights[:, h], p, rtol=1e-12, atol=1e-12)
        expected = expected + p @ (x @ Ws[2][:, c]) @ Ws[3][c]
        start += w
    np.testing.assert_allclose(out, expected, rtol=1e-12, atol=1e-12)


def test_5_7_s_fix_is_the_course_layer_and_its_stub_is_right_only_for_one_sequence_or_one_head():
    ex = get("ch05.mha_forward")
    fixed = {}
    exec("\n".join(ex.needs), fixed)
    solution = textwrap.dedent(ex.solution).replace("### BEGIN SOLUTION", "").replace("### END SOLUTION", "")
    exec(solution, fixed)
    stub = stub_function(ex)
    rng = np.random.default_rng(5)
    for B, d_model, n_heads in [(1, 4, 2), (3, 4, 1), (2, 6, 2), (3, 8, 4), (2, 6, 6)]:
        x = rng.normal(size=(B, 3, d_model))
        Ws = [rng.normal(size=(d_model, d_model)) for _ in range(4)]
        out, weights = fixed["mha_forward"](x, *Ws, n_heads)
        ref_out, ref_weights = _course_layer(x, *Ws, n_heads)
        np.testing.assert_allclose(out, ref_out, rtol=1e-10, atol=1e-10)
        np.testing.assert_allclose(weights, ref_weights, rtol=1e-10, atol=1e-12)
        bug_out, bug_weights = stub(x, *Ws, n_heads)
        right = np.allclose(bug_out, ref_out) and np.allclose(bug_weights, ref_weights)
        assert right == (B == 1 or n_heads == 1), (B, n_heads)  # the symptom the prompt states


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
        "ch05.merge_copied_heads",
        "ch05.mha_uneven_heads",
        "ch05.mha_forward",
    ],
)
def test_the_untouched_student_code_scores_nothing(ex_id):
    result = check(ex_id, stub_function(get(ex_id)), show=False)
    assert result.earned == 0 and not result.passed
