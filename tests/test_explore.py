"""The pure functions behind the slider explorers: the numbers each picture shows."""

from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path

import numpy as np
import pytest
import torch

import attncourse as ac
from attncourse import explore, toy_data
from attncourse.pooling import nadaraya_watson

# -- helpers ---------------------------------------------------------------------------------


def test_entropy_uniform_and_one_hot():
    assert explore.entropy(np.full(8, 1 / 8)) == pytest.approx(math.log(8))
    assert explore.entropy(np.array([0.0, 1.0, 0.0])) == 0.0
    np.testing.assert_allclose(explore.entropy(np.array([[0.5, 0.5], [1.0, 0.0]])), [math.log(2), 0.0])


def test_softmax_jacobian_matches_autograd(rng):
    scores = torch.tensor(rng.normal(size=5), requires_grad=True)
    expected = torch.autograd.functional.jacobian(lambda s: torch.softmax(s, -1), scores)
    p = ac.softmax(scores.detach().numpy())
    np.testing.assert_allclose(explore.softmax_jacobian(p), expected.numpy(), atol=1e-12)


def test_divisors():
    assert explore.divisors(12) == (1, 2, 3, 4, 6, 12)
    assert explore.divisors(1) == (1,)
    with pytest.raises(ValueError, match="n must be an integer >= 1"):
        explore.divisors(0)


# -- softmax ---------------------------------------------------------------------------------


def test_softmax_view_values():
    view = explore.softmax_view(2.0, [1.0, 2.0, 3.0])
    np.testing.assert_allclose(view.weights, ac.softmax(np.array([0.5, 1.0, 1.5])))
    assert view.weights.sum() == pytest.approx(1.0)
    assert view.max_entropy == pytest.approx(math.log(3))
    assert view.max_weight == pytest.approx(view.weights.max())


def test_softmax_temperature_orders_entropy():
    entropies = [explore.softmax_view(t).entropy for t in explore.TEMPERATURES]
    assert all(a < b for a, b in zip(entropies, entropies[1:])), entropies
    cold, hot = explore.softmax_view(explore.TEMPERATURES[0]), explore.softmax_view(explore.TEMPERATURES[-1])
    assert cold.max_weight > 0.99  # nearly one-hot on the largest logit
    assert np.argmax(cold.weights) == np.argmax(explore.LOGITS)
    assert hot.entropy > 0.95 * hot.max_entropy  # nearly uniform


@pytest.mark.parametrize("bad", [0.0, -1.0, True, "1"])
def test_softmax_view_refuses_bad_temperature(bad):
    with pytest.raises(ValueError, match="temperature must be a positive number"):
        explore.softmax_view(bad)


# -- scaling ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def scaling_views():
    return [explore.scaling_view(d) for d in explore.D_K_VALUES]


def test_unscaled_entropy_falls_as_d_k_grows(scaling_views):
    entropies = [v.stats["unscaled"].entropy for v in scaling_views]
    assert all(a > b for a, b in zip(entropies, entropies[1:])), entropies
    assert entropies[-1] < 0.1 * scaling_views[-1].max_entropy  # saturated: almost one-hot
    grads = [v.stats["unscaled"].grad_norm for v in scaling_views]
    assert grads[-1] < 0.2 * grads[0]  # and the gradient through softmax vanishes


def test_scaled_entropy_does_not_fall(scaling_views):
    entropies = np.array([v.stats["scaled"].entropy for v in scaling_views])
    assert entropies.max() - entropies.min() < 0.1 * scaling_views[0].max_entropy, entropies
    grads = np.array([v.stats["scaled"].grad_norm for v in scaling_views])
    assert grads.min() > 0.8 * grads.max()


def test_score_spread_is_sqrt_d_k(scaling_views):
    for view in scaling_views[4:]:  # d_k >= 16: enough terms for the variance to show
        d_k = view.d_k
        assert view.stats["unscaled"].score_std == pytest.approx(math.sqrt(d_k), rel=0.25)
        assert view.stats["scaled"].score_std == pytest.approx(1.0, rel=0.25)


def test_scaling_view_matches_attention():
    view = explore.scaling_view(32, seed=3)
    q, k = view.q[:, None, :], view.k  # each shown row: one query (1, E) against its own keys (S, E)
    scores = (q @ k.transpose(0, 2, 1))[:, 0]  # (L, 1, E) @ (L, E, S) -> (L, S)
    np.testing.assert_allclose(view.scores["unscaled"], scores, rtol=1e-5)  # float32 products
    np.testing.assert_allclose(view.scores["scaled"], scores / math.sqrt(32), rtol=1e-5)
    _, weights = ac.scaled_dot_product_attention(q, k, k)  # (L, 1, S)
    np.testing.assert_allclose(view.weights["scaled"], weights[:, 0], rtol=1e-4)
    np.testing.assert_allclose(view.weights["unscaled"], ac.softmax(scores), rtol=1e-3, atol=1e-12)
    q_draw, k_draw = toy_data.scaling_draw(32, seed=3)  # the view's rows are the draw's first rows
    np.testing.assert_array_equal(view.q, q_draw[: len(view.q)])
    assert view.n_queries_averaged == len(q_draw) and view.k.shape[1:] == k_draw.shape[1:]
    assert not np.array_equal(explore.scaling_view(32).q, view.q)  # the seed matters


# -- heads -----------------------------------------------------------------------------------


def test_heads_view_parameter_count_is_constant():
    counts = {h: explore.heads_view(h, 12).n_params for h in explore.divisors(12)}
    assert set(counts.values()) == {4 * 12 * 12 + 4 * 12}
    module = ac.MultiHeadAttention(12, 4)
    assert sum(p.numel() for p in module.parameters()) == counts[4]


def test_heads_view_shapes_and_d_head():
    for d_model in (explore.DEFAULT_D_MODEL_HEADS, 12):
        for n_heads in explore.divisors(d_model):
            view = explore.heads_view(n_heads, d_model)
            assert view.d_head * n_heads == d_model
            assert view.weights.shape == (n_heads, 6, 6)
            np.testing.assert_allclose(view.weights.sum(-1), 1.0)
            assert view.n_params_per_head * n_heads == 3 * d_model * d_model


def test_heads_view_repeated_token_gets_the_same_row():
    view = explore.heads_view()
    first, second = [i for i, t in enumerate(view.tokens) if t == "the"]
    np.testing.assert_allclose(view.weights[:, first], view.weights[:, second])


def test_heads_view_matches_per_head_attention():
    view = explore.heads_view(4, 12, seed=2)
    table = toy_data.heads_embedding(12)
    np.testing.assert_array_equal(view.x, table[[toy_data.HEADS_VOCAB.index(t) for t in view.tokens]])
    w_q, w_k, w_v, w_o = toy_data.heads_projections(12, seed=2)
    assert not np.allclose(w_q, toy_data.heads_projections(12)[0])  # the seed picks the projections
    for h in range(4):
        cols = slice(3 * h, 3 * h + 3)
        scores = (
            (view.x @ w_q[:, cols]) @ (view.x @ w_k[:, cols]).T / math.sqrt(3)
        )  # (L, 3) @ (3, L) -> (L, L)
        np.testing.assert_allclose(view.weights[h], ac.softmax(scores), atol=1e-12)


def test_heads_view_refuses_a_non_divisor_and_an_unknown_word():
    with pytest.raises(ValueError, match=r"n_heads=5 does not divide d_model=12.*\[1, 2, 3, 4, 6, 12\]"):
        explore.heads_view(5, 12)
    with pytest.raises(ValueError, match=r"tokens: no embedding for \['dog'\]"):
        explore.heads_view(tokens=("the", "dog"))


# -- masks -----------------------------------------------------------------------------------


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("pad_length", range(explore.MASK_LENGTH + 1))
def test_masked_weights_are_zero(pad_length, causal):
    view = explore.mask_view(pad_length, causal)
    mask, weights = view.mask, view.weights
    assert mask.shape == (6, 6) and mask.dtype == bool
    assert (weights[~mask] == 0).all()
    assert np.isneginf(view.masked_scores[~mask]).all()
    np.testing.assert_array_equal(view.masked_scores[mask], view.scores[mask])
    assert not mask[:, 6 - pad_length :].any()  # padded keys are hidden from every query
    if causal:
        assert not np.triu(mask, 1).any()
    has_key = mask.any(axis=-1)
    np.testing.assert_allclose(view.row_sums[has_key], 1.0)
    np.testing.assert_array_equal(view.row_sums[~has_key], 0.0)  # nothing to attend to: zeros
    assert view.empty_rows == tuple(np.flatnonzero(~has_key))
    assert view.tokens[6 - pad_length :] == ("<pad>",) * pad_length


def test_mask_view_matches_sdpa_with_is_causal():
    view = explore.mask_view(1, True)
    rng = np.random.default_rng(0)
    q, k, v = rng.standard_normal((3, 6, 4))
    _, expected = ac.scaled_dot_product_attention(q, k, v, ac.padding_mask([5], 6), is_causal=True)
    np.testing.assert_allclose(view.weights, expected)


def test_mask_view_refuses_too_much_padding():
    with pytest.raises(ValueError, match="pad_length must be at most L=6"):
        explore.mask_view(7)


# -- positional ------------------------------------------------------------------------------


@pytest.mark.parametrize("d_model", explore.D_MODEL_VALUES)
def test_dot_vs_offset_is_symmetric_and_peaks_at_zero(d_model):
    view = explore.positional_view(d_model, 16)
    by_offset = dict(zip(view.offsets.tolist(), view.pe_dots))
    for offset in range(1, 16):
        assert by_offset[offset] == pytest.approx(by_offset[-offset], abs=1e-9)
        assert by_offset[offset] < by_offset[0]
    assert by_offset[0] == pytest.approx(d_model / 2)


def test_dot_vs_offset_does_not_depend_on_position():
    curves = [
        dict(zip(v.offsets.tolist(), v.pe_dots))
        for v in (explore.positional_view(32, p) for p in explore.POSITIONS)
    ]
    for offset in range(-3, 4):
        values = [c[offset] for c in curves if offset in c]
        np.testing.assert_allclose(values, values[0], atol=1e-9)


def test_rope_scores_depend_on_offset_only():
    view = explore.positional_view(16, 4)
    scores = view.rope_scores
    for diagonal in range(-5, 6):
        values = np.diagonal(scores, diagonal)
        np.testing.assert_allclose(values, values[0], atol=1e-9)
    np.testing.assert_allclose(view.rope_row, scores[4])


def test_positional_view_table_and_row():
    view = explore.positional_view(16, 5)
    np.testing.assert_allclose(view.pe, ac.sinusoidal_positional_encoding(32, 16))
    np.testing.assert_allclose(view.row, view.pe[5])
    np.testing.assert_array_equal(view.offsets, np.arange(32) - 5)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"d_model": 15}, "d_model must be even"),
        ({"position": 32}, "position must be below n_positions=32"),
        ({"position": -1}, "position must be an integer >= 0"),
    ],
)
def test_positional_view_refuses_bad_input(kwargs, message):
    with pytest.raises(ValueError, match=message):
        explore.positional_view(**kwargs)


def test_explore_imports_no_front_end():
    import subprocess
    import sys

    code = (
        "import sys, attncourse.explore; "
        "bad = [m for m in ('matplotlib', 'ipywidgets', 'torch') if m in sys.modules]; "
        "sys.exit(', '.join(bad) or 0)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, f"attncourse.explore imported {result.stderr or result.stdout}"


# -- masks with L != S -----------------------------------------------------------------------


@pytest.mark.parametrize("n_queries", [1, 2, 4, 6])
def test_mask_view_with_fewer_queries_matches_sdpa(n_queries):
    view = explore.mask_view(2, True, n_queries=n_queries)
    rng = np.random.default_rng(0)
    q, k, v = rng.standard_normal((3, 6, 4))
    _, expected = ac.scaled_dot_product_attention(
        q[6 - n_queries :], k, v, ac.padding_mask([4], 6), is_causal=True
    )
    assert view.mask.shape == view.weights.shape == (n_queries, 6)
    np.testing.assert_allclose(view.weights, expected)
    assert view.queries == view.tokens[6 - n_queries :]  # the newest tokens, as with a KV cache
    assert (
        explore.mask_view(2, True, n_queries=6).weights.tolist()
        == explore.mask_view(2, True).weights.tolist()
    )


@pytest.mark.parametrize("pad_side", explore.PAD_SIDES)
def test_bottom_right_gives_the_rows_of_full_causal_attention(pad_side):
    full = explore.mask_view(1, True, pad_side=pad_side)
    for n_queries in (1, 3):
        right = explore.mask_view(1, True, n_queries=n_queries, align="bottom-right", pad_side=pad_side)
        wrong = explore.mask_view(1, True, n_queries=n_queries, align="top-left", pad_side=pad_side)
        np.testing.assert_allclose(right.weights, full.weights[6 - n_queries :])
        assert not np.allclose(wrong.weights, full.weights[6 - n_queries :])
    # one query, top-left: only key 0 (a <pad> on the left, so nothing at all)
    assert explore.mask_view(1, True, n_queries=1, pad_side="right").mask.sum() == 1


def test_left_padding_with_the_causal_mask_leaves_rows_with_nothing_to_see():
    view = explore.mask_view(2, True, pad_side="left")
    assert view.tokens[:2] == ("<pad>", "<pad>") and view.empty_rows == (0, 1)
    assert not view.mask[:, :2].any()
    np.testing.assert_array_equal(view.weights[:2], 0.0)  # -inf and attncourse's softmax: zeros


def test_fills_show_what_goes_wrong():
    """-inf: blocked keys get 0 and empty rows are zeros; 0 leaks; -1e9 spreads an empty row over
    blocked keys; -1e9 written into float16 overflows to -inf, and a plain softmax gives NaN."""
    views = {fill: explore.mask_view(2, True, pad_side="left", fill=fill) for fill in explore.FILLS}
    right = views["-inf"]
    assert right.blocked_weight == 0.0 and right.nan_rows == ()
    assert views["0"].blocked_weight > 0.3
    minus_1e9 = views["-1e9"]
    np.testing.assert_allclose(minus_1e9.weights[0], 1 / 6)  # nothing to see: uniform over blocked keys
    np.testing.assert_allclose(minus_1e9.weights[2:], right.weights[2:])  # elsewhere as -inf
    fp16 = views["-1e9 fp16"]
    assert fp16.masked_scores.dtype == np.float16 and np.isneginf(fp16.masked_scores[~fp16.mask]).all()
    assert fp16.nan_rows == (0, 1) == right.empty_rows
    np.testing.assert_allclose(fp16.weights[2:], right.weights[2:], atol=2e-3)  # float16 scores
    with pytest.raises(ValueError, match="fill must be one of"):
        explore.mask_view(fill="-1e4")


def test_mask_view_refuses_more_queries_than_keys():
    with pytest.raises(ValueError, match="n_queries must be at most S=6"):
        explore.mask_view(0, n_queries=7)


# -- kernel regression (chapter 0) -----------------------------------------------------------


def test_kernel_view_is_nadaraya_watson():
    view = explore.kernel_view(0.5, 1.5)
    expected, weights = nadaraya_watson(np.array([1.5]), view.x_key, view.y_value, 0.5)
    np.testing.assert_allclose(view.weights, weights[0])
    assert view.prediction == pytest.approx(float(expected[0]))
    np.testing.assert_allclose(view.weights, ac.softmax(-((1.5 - view.x_key) ** 2) / (2 * 0.5**2)))


def test_kernel_width_trades_noise_for_bias():
    views = {w: explore.kernel_view(w) for w in explore.kernel.WIDTHS}
    narrow, wide = views[min(views)], views[max(views)]
    nearest = int(np.argmin(np.abs(narrow.x_key - narrow.query)))
    assert int(np.argmax(narrow.weights)) == nearest and narrow.weights.max() > 0.5
    assert wide.weights.max() < 2.0 / len(wide.weights)  # close to uniform
    assert wide.y_grid.std() < 0.3 * narrow.y_grid.std()  # flattened towards the mean
    errors = [views[w].mse for w in sorted(views)]
    best = int(np.argmin(errors))
    assert 0 < best < len(errors) - 1, errors  # neither the narrowest nor the widest fits best


# -- dot-product attention (chapter 2) -------------------------------------------------------


def test_dot_product_view_matches_its_formula():
    view = explore.dot_product_view(135, 2.0)
    np.testing.assert_allclose(view.q, [-math.sqrt(2), math.sqrt(2)], atol=1e-12)
    np.testing.assert_allclose(view.scores, view.k @ view.q)  # unscaled, as in chapter 2
    np.testing.assert_array_equal(view.k, toy_data.KEYS_2D)
    np.testing.assert_allclose(view.weights, ac.softmax(view.scores))
    np.testing.assert_allclose(view.out, view.weights @ view.v)


def test_turning_the_query_towards_a_key_raises_its_weight_and_length_sharpens():
    angles = explore.dot_product.ANGLES
    # The key at angle 0 (k1) gets its largest weight when the query points at angle 0.
    weights_k1 = [explore.dot_product_view(a, 2.0).weights[0] for a in angles]
    assert int(np.argmax(weights_k1)) == angles.index(0)
    entropies = [
        explore.entropy(explore.dot_product_view(90, n).weights) for n in explore.dot_product.LENGTHS
    ]
    assert all(a > b for a, b in zip(entropies, entropies[1:])), entropies


# -- self-attention (chapter 4) --------------------------------------------------------------


def test_self_attention_view_matches_the_projections():
    view = explore.self_attention_view(2)
    w_q, w_k, w_v = toy_data.W_Q, toy_data.W_K, toy_data.W_V
    assert w_q.shape == (4, 4) and set(np.unique(np.concatenate([w_q, w_k, w_v]))) <= {-1.0, 0.0, 1.0}
    np.testing.assert_array_equal(view.x[0], [1, 0, 0, 1])  # "the", as chapter 4 writes it
    q, k, v = view.x @ w_q, view.x @ w_k, view.x @ w_v
    np.testing.assert_allclose(view.weights, ac.softmax(q @ k.T / 2))  # 1/sqrt(E) = 1/2
    np.testing.assert_allclose(view.out, view.weights @ v)
    np.testing.assert_allclose(view.row, view.weights[2])


def test_self_attention_is_blind_to_order():
    original = explore.self_attention_view(0)
    np.testing.assert_allclose(original.weights[0], original.weights[4])  # the two copies of "the"
    perm = list(explore.self_attention.ORDERS["shuffled"])
    shuffled = explore.self_attention_view(0, "shuffled")
    np.testing.assert_allclose(shuffled.weights, original.weights[np.ix_(perm, perm)])
    with pytest.raises(ValueError, match="order must be one of"):
        explore.self_attention_view(0, "reversed")


# -- a trained model's heads (chapter 8) -----------------------------------------------------


def test_transformer_view_scores_previous_token_and_induction_heads():
    tokens = [5, 1, 2, 3, 1, 2, 3, 1]
    L = len(tokens)
    previous = np.eye(L, k=-1)
    previous[0, 0] = 1.0
    induction = np.zeros((L, L))
    for i in range(L):
        after_copy = [j for j in range(1, i + 1) if tokens[j - 1] == tokens[i]]
        induction[i, after_copy or [0]] = 1.0 / max(len(after_copy), 1)
    uniform = np.tril(np.ones((L, L))) / np.arange(1, L + 1)[:, None]
    maps = [np.stack([previous, uniform])[None], torch.tensor(np.stack([uniform, induction]))[None]]
    view = explore.transformer_view(maps, tokens, layer=1, head=1)
    np.testing.assert_allclose(view.weights, induction)
    assert view.previous_scores[0, 0] == pytest.approx(1.0) and view.induction_scores[1, 1] == pytest.approx(
        1.0
    )
    assert view.previous_scores[1, 1] < 0.5 and view.induction_scores[0, 0] < 0.5
    assert (4, 2) in view.induction_cells and all(tokens[j - 1] == tokens[i] for i, j in view.induction_cells)


def test_transformer_view_refuses_bad_maps():
    with pytest.raises(ValueError, match=r"one \(H, L, L\)"):
        explore.transformer_view([np.zeros((2, 3, 4))], [1, 2, 3])
    with pytest.raises(ValueError, match="tokens must have L=3"):
        explore.transformer_view([np.zeros((2, 3, 3))], [1, 2])
    with pytest.raises(ValueError, match="layer must be below 1"):
        explore.transformer_view([np.zeros((2, 3, 3))], [1, 2, 3], layer=1)


def _head_scores_by_loops(maps, tokens, rows):
    """Chapter 8's definitions, one (layer, head, sequence, query) at a time."""
    n_layers, B, H, L, _ = maps.shape
    previous, induction = np.zeros((n_layers, H)), np.zeros((n_layers, H))
    for layer in range(n_layers):
        for h in range(H):
            on_prev = [maps[layer, b, h, t, t - 1] for b in range(B) for t in range(1, L)]
            on_copies = [
                sum(maps[layer, b, h, t, j] for j in range(1, t + 1) if tokens[b, j - 1] == tokens[b, t])
                for b in range(B)
                for t in range(L)
                if rows[b, t]
            ]
            previous[layer, h], induction[layer, h] = np.mean(on_prev), np.mean(on_copies)
    return previous, induction


def test_head_scores_over_a_batch_follow_chapter_8s_definitions(rng):
    from attncourse.explore.transformer import head_scores

    tokens, _, determined = toy_data.repeat_task(5, np.random.default_rng(3), L=22, V=14)
    n_layers, H, L = 2, 3, tokens.shape[1]
    maps = rng.random((n_layers, 5, H, L, L)) * np.tril(np.ones((L, L)))
    maps /= maps.sum(-1, keepdims=True)  # causal rows that sum to 1
    scores = head_scores(list(maps), tokens, induction_rows=determined)
    previous, induction = _head_scores_by_loops(maps, tokens, determined)
    np.testing.assert_allclose(scores.previous, previous)
    np.testing.assert_allclose(scores.induction, induction)
    assert scores.n_sequences == 5
    # By default the induction score counts every row whose token occurred before, filler included.
    has_copy = np.array([[tokens[b, t] in tokens[b, :t] for t in range(L)] for b in range(5)])
    assert (has_copy & ~determined).any()  # the default really counts other rows
    np.testing.assert_allclose(
        head_scores(list(maps), torch.as_tensor(tokens)).induction,
        _head_scores_by_loops(maps, tokens, has_copy)[1],
    )


def test_transformer_view_tables_show_the_scores_given(rng):
    from attncourse.explore.transformer import head_scores

    tokens, _, determined = toy_data.repeat_task(4, np.random.default_rng(0), L=20, V=12)
    maps = rng.random((2, 4, 2, 20, 20)) * np.tril(np.ones((20, 20)))
    maps /= maps.sum(-1, keepdims=True)
    batch = head_scores(list(maps), tokens, induction_rows=determined)
    view = explore.transformer_view([m[:1] for m in maps], tokens[0], 1, 0, scores=batch)
    assert view.held_out and view.n_scored == 4
    np.testing.assert_array_equal(view.previous_scores, batch.previous)
    np.testing.assert_array_equal(view.induction_scores, batch.induction)
    alone = head_scores([m[:1] for m in maps], tokens[:1])  # the sequence shown, on its own
    np.testing.assert_allclose(view.sequence_previous, alone.previous)
    np.testing.assert_allclose(view.sequence_induction, alone.induction)
    plain = explore.transformer_view([m[:1] for m in maps], tokens[0], 1, 0)
    assert not plain.held_out and plain.n_scored == 1
    np.testing.assert_allclose(plain.previous_scores, alone.previous)


def test_head_scores_refuse_mismatched_shapes():
    from attncourse.explore.transformer import HeadScores, head_scores

    maps = [np.zeros((2, 3, 4, 4))]  # B = 2, H = 3, L = 4
    with pytest.raises(ValueError, match=r"tokens must have shape \(B, L\) = \(2, 4\)"):
        head_scores(maps, np.zeros((2, 5), dtype=int))
    with pytest.raises(ValueError, match=r"induction_rows must have shape \(B, L\) = \(2, 4\)"):
        head_scores(maps, np.zeros((2, 4), dtype=int), induction_rows=np.ones((1, 4), dtype=bool))
    wrong = HeadScores(previous=np.zeros((1, 2)), induction=np.zeros((1, 2)), n_sequences=3)
    with pytest.raises(ValueError, match=r"scores must hold \(1, 3\)"):
        explore.transformer_view([np.zeros((3, 4, 4))], [1, 2, 3, 4], scores=wrong)


# -- the online softmax (chapter 9) ----------------------------------------------------------


@pytest.mark.parametrize("block_size", explore.efficient.BLOCK_SIZES)
def test_online_softmax_steps_end_at_the_exact_softmax(block_size):
    n = explore.efficient.n_blocks(block_size)
    views = [explore.efficient_view(block_size, step) for step in range(1, n + 1)]
    last = views[-1]
    np.testing.assert_allclose(last.weights_so_far, ac.softmax(last.scores))
    assert last.out_so_far == pytest.approx(float(ac.softmax(last.scores) @ last.values))
    assert np.all(np.diff(last.running_max) >= 0)  # the running max never falls
    for view in views:  # after each step: the softmax of the scores seen so far
        seen = view.step * block_size
        np.testing.assert_allclose(view.weights_so_far[:seen], ac.softmax(view.scores[:seen]))
        assert view.running_max[-1] == view.scores[:seen].max()
        assert view.floats_held == block_size
    assert np.allclose(ac.online_softmax(last.scores), last.weights)


def test_efficient_view_refuses_a_step_past_the_end():
    with pytest.raises(ValueError, match="step must be at most 3"):
        explore.efficient_view(2, 4)  # 5 keys in blocks of 2: 3 blocks


# -- each explorer shows its chapter's numbers -------------------------------------------------
#
# The chapters print numbers computed from attncourse.toy_data; the explorers read the same data.
# These tests read the numbers from the committed notebooks' saved outputs, so they fail when a
# chapter and its explorer drift apart (or when a chapter is re-executed with other data).

BOOK = Path(__file__).resolve().parents[1] / "book"


def _printed(notebook: str, marker: str, book: Path = BOOK) -> str:
    """What the code cell of ``book/<notebook>`` whose source contains ``marker`` printed."""
    nb = json.loads((book / notebook).read_text(encoding="utf-8"))
    cells = [c for c in nb["cells"] if c["cell_type"] == "code" and marker in "".join(c["source"])]
    assert len(cells) == 1, f"{notebook}: {len(cells)} code cells contain {marker!r}"
    text = "".join(
        "".join(o.get("text", "")) for o in cells[0].get("outputs", []) if o["output_type"] == "stream"
    )
    assert text, f"{notebook}: the cell with {marker!r} has no saved output; execute the notebook"
    return text


def test_chapter_4_explorer_shows_the_chapters_weights():
    printed = _printed("04_self_attention.ipynb", 'print("key   q.k  q.k/2')
    # "mat     2    1.0      2.7183  0.4241   [...]": token, q.k, q.k/2, exp, weight
    rows = [
        line.split()
        for line in printed.splitlines()
        if line.split()[:1] and line.split()[0] in toy_data.SENTENCE
    ]
    weights = [float(row[4]) for row in rows]
    view = explore.self_attention_view()  # the default view: the query "cat"
    assert view.tokens[view.token] == "cat" and len(weights) == 6
    np.testing.assert_allclose(view.row, weights, atol=5e-5)
    cat_mat = re.search(
        r"cat -> mat: ([0-9.]+) at \(1, 5\)", _printed("04_self_attention.ipynb", "perm = [0, 5")
    )
    assert cat_mat and float(cat_mat.group(1)) == round(float(view.row[5]), 4) == 0.4241


def test_chapter_1_explorer_shows_the_chapters_temperatures():
    printed = _printed("01_softmax.ipynb", "temps = np.logspace(")
    found = re.findall(r"T = +([0-9.]+): largest weight ([0-9.]+), entropy ([0-9.]+)", printed)
    assert len(found) >= 3
    checked = 0
    for t, top, h in found:
        if float(t) in explore.FRAME_TEMPERATURES:  # the temperatures the book's explorer offers
            view = explore.softmax_view(float(t))  # the explorer's scores: the chapter's
            assert round(view.max_weight, 4) == float(top) and round(view.entropy, 4) == float(h)
            checked += 1
    assert checked >= 3  # 0.25, 1.0 (the default) and 5.0


def test_chapter_6_explorer_left_padding_and_fills_match_the_chapter():
    printed = _printed("06_masked_attention.ipynb", 'left = ["<pad>", "<pad>", "dogs"')
    matrix = np.array(re.findall(r"\[([01 ]+)\]", printed)[:5], dtype=object)
    mask = np.array([[int(x) for x in row.split()] for row in matrix], dtype=bool)
    view = explore.mask_view(2, True, tokens=("dogs", "bark", "loudly", "-", "-"), pad_side="left")
    assert view.tokens == ("<pad>", "<pad>", "dogs", "bark", "loudly")
    np.testing.assert_array_equal(view.mask, mask)
    assert "rows with nothing to attend to: [0 1]" in printed and view.empty_rows == (0, 1)
    # The chapter's table: the weight on blocked keys of a row with every key blocked, per fill.
    table = _printed("06_masked_attention.ipynb", 'fills = {"0": 0.0')
    blocked_row = {line.split("|")[0].strip(): line.split("|")[3].strip() for line in table.splitlines()[1:]}
    left = {fill: explore.mask_view(2, True, pad_side="left", fill=fill) for fill in explore.FILLS}
    for fill in ("0", "-1e9"):
        assert float(blocked_row[fill]) == 1.0
        np.testing.assert_allclose(left[fill].weights[0].sum(), 1.0)  # all of it on blocked keys
        assert not left[fill].mask[0].any()
    # -inf with a plain softmax: NaN; -1e9 in float16 is -inf, so the explorer's fp16 row is NaN too
    assert blocked_row["-inf"] == "nan" and left["-1e9 fp16"].nan_rows == (0, 1)


def test_chapter_7_explorer_counts_the_chapters_dimensions_outside_training():
    printed = _printed("07_positional_encoding.ipynb", "pe_long = ac.sinusoidal_positional_encoding")
    found = re.findall(r"position +(\d+): +(\d+) of (\d+) dimensions outside", printed)
    assert len(found) >= 5
    default = explore.extrapolation_view()  # d_model and N from toy_data, as the chapter
    for position, outside, d_model in found:
        position, outside = int(position), int(outside)
        assert int(d_model) == default.d_model == toy_data.PE_D_MODEL
        view = default if position < len(default.outside) else explore.extrapolation_view(n_positions=1024)
        assert int(view.outside[position]) == outside, position


def test_chapter_0_explorer_fits_the_chapters_points():
    # "width  0.3: training MSE 0.244, held-out MSE ..." for each width the chapter tries
    text = _printed("00_why_attention.ipynb", "kernel_regression_data(rng)")
    rows = re.findall(r"width\s+([0-9.]+): training MSE ([0-9.]+)", text)
    assert len(rows) == 3, text
    assert explore.kernel.DEFAULT_WIDTH in {float(w) for w, _ in rows}  # the default is one of them
    for width, train_mse in rows:
        view = explore.kernel_view(float(width))
        assert view.train_mse == pytest.approx(float(train_mse), abs=5e-4), width


def test_chapter_2_explorer_shows_the_chapters_plane_example():
    printed = _printed("02_dot_product_attention.ipynb", "q_plane = np.array(")
    numbers = {
        name: np.array(re.search(rf"{name}: *\[([^\]]*)\]", printed).group(1).split(), dtype=float)
        for name in ("scores q.k", "weights", "output")
    }
    view = explore.dot_product_view()  # the default view: length 1 at 45 degrees
    np.testing.assert_array_equal(view.k, toy_data.KEYS_2D)
    np.testing.assert_allclose(view.scores, numbers["scores q.k"], atol=5e-3)  # unscaled, as chapter 2
    np.testing.assert_allclose(view.weights, numbers["weights"], atol=5e-4)
    np.testing.assert_allclose(view.out, numbers["output"], atol=5e-3)


def test_chapter_11_explorer_shows_the_chapters_cache_sizes():
    from attncourse.explore.modern import cache_view  # not re-exported by attncourse.explore

    printed = _printed("11_modern_attention.ipynb", "cache = weights at")
    # "Llama-3-8B           128.0      4.00        15.0  122,529 tokens": KiB/token, GiB at 32k
    rows = {
        m.group(1): (float(m.group(2)), float(m.group(3)))
        for m in re.finditer(r"^(\S+) +([0-9.]+) +([0-9.]+) +[0-9.]+ ", printed, re.MULTILINE)
    }
    at_32k = list(cache_view().contexts).index(32768)
    # The explorer's model is Llama-3-8B (32 layers of 32 query heads of 128): its default, GQA with
    # 8 KV heads, is the chapter's row; with MHA it keeps Llama-2-7B's cache; a 4096 window is
    # Mistral-7B's.
    for model, view in [
        ("Llama-3-8B", cache_view()),
        ("Llama-2-7B", cache_view("MHA")),
        ("Mistral-7B-v0.1", cache_view("GQA-8", 4096)),
    ]:
        kib_per_token, gib_at_32k = rows[model]
        assert view.per_token_kib == pytest.approx(kib_per_token, abs=0.05), model
        assert view.cache_gib[at_32k] == pytest.approx(gib_at_32k, abs=0.005), model
    first = _printed("11_modern_attention.ipynb", "Llama-2-7B: {per_token")
    context = re.search(r"Llama-2-7B: (\d+) KiB per token, ([0-9.]+) GiB for its (\d+)-token context", first)
    assert context, first
    mha = cache_view("MHA")
    assert mha.per_token_kib == float(context.group(1))
    assert mha.cache_gib[list(mha.contexts).index(int(context.group(3)))] == pytest.approx(
        float(context.group(2)), abs=0.05
    )


def test_chapter_11_cache_explorer_default_is_the_tables_llama_3_8b():
    from attncourse.explore.modern import BASE_MODEL, cache_view

    printed = _printed("11_modern_attention.ipynb", "cache = weights at")
    # "Llama-3-8B           128.0      4.00        15.0  122,529 tokens": ..., weights GiB, crossover
    rows = {
        m.group(1): (float(m.group(2)), m.group(3))
        for m in re.finditer(
            r"^(\S+) +[0-9.]+ +[0-9.]+ +([0-9.]+) +(never \(window\)|[0-9,]+ tokens)$", printed, re.MULTILINE
        )
    }
    assert len(rows) == 5, printed
    default = cache_view()
    weights_gib, crossover = rows[BASE_MODEL]
    assert BASE_MODEL == "Llama-3-8B"
    assert default.weights_gib == pytest.approx(weights_gib, abs=0.05)
    assert f"{default.crossover:,} tokens" == crossover  # 122,529 tokens
    assert cache_view("GQA-8", 4096).crossover is None and rows["Mistral-7B-v0.1"][1] == "never (window)"


def test_chapter_11_rope_explorer_shows_the_chapters_frequency_ratios():
    from attncourse.explore import modern

    printed = _printed("11_modern_attention.ipynb", "SCALINGS = toy_data.rope_scalings")
    # "{'rope_type': 'llama3', 'factor': 4.0, ..., 'original_max_position_embeddings': 32}", then
    # "yarn     (factor 1.139)  1.000   0.625   0.250 ...": attention factor, ratio per pair
    factor = float(re.search(r"'factor': ([0-9.]+)", printed).group(1))
    trained = int(re.search(r"'original_max_position_embeddings': (\d+)", printed).group(1))
    rows = {
        m.group(1): (float(m.group(2)), [float(x) for x in m.group(3).split()])
        for m in re.finditer(r"^(\w+) +\(factor ([0-9.]+)\) +([0-9. ]+)$", printed, re.MULTILINE)
    }
    assert set(rows) == set(modern.SCALINGS) and trained == modern.ROPE_TRAIN
    default = modern.rope_scaling_view()
    assert (default.scaling, default.factor) == ("yarn", factor)  # a view the chapter prints
    for scaling, (attention_factor, ratios) in rows.items():
        view = modern.rope_scaling_view(scaling, int(factor))
        assert len(view.ratio) == len(ratios) == modern.ROPE_E // 2, scaling
        np.testing.assert_allclose(view.ratio, ratios, atol=5e-4, err_msg=scaling)
        assert view.attention_factor == pytest.approx(attention_factor, abs=5e-4), scaling


def test_chapter_3_explorer_shows_the_chapters_saturation_tables():
    weights_table = _printed("03_scaling.ipynb", 'print(" d_k   largest weight')
    # "  64   0.850    0.252     0.389   2.346": largest weight and entropy, unscaled then scaled
    saturation = {
        int(m[0]): [float(x) for x in m[1:]]
        for m in re.findall(
            r"^ *(\d+) +([0-9.]+) +([0-9.]+) +([0-9.]+) +([0-9.]+)$", weights_table, re.MULTILINE
        )
    }
    jacobian_table = _printed("03_scaling.ipynb", 'print(" d_k     median ||J||')
    # "  64   9.33e-02   0.305     0.170    0.306": median ||J|| unscaled, scaled; mean unscaled, scaled
    jacobian = {
        int(m[0]): [float(x) for x in m[1:]]
        for m in re.findall(
            r"^ *(\d+) +([0-9.e+-]+) +([0-9.]+) +([0-9.]+) +([0-9.]+)$", jacobian_table, re.MULTILINE
        )
    }
    assert sorted(saturation) == sorted(jacobian) == list(explore.D_K_VALUES)
    assert explore.scaling_view().d_k == 64 and 128 in saturation  # the default, a printed width
    for d_k in explore.D_K_VALUES:  # every position of the slider is a row of the tables
        view = explore.scaling_view(d_k)
        unscaled, scaled = view.stats["unscaled"], view.stats["scaled"]
        shown = [unscaled.max_weight, scaled.max_weight, unscaled.entropy, scaled.entropy]
        np.testing.assert_allclose(shown, saturation[d_k], atol=6e-4, err_msg=f"d_k = {d_k}")
        np.testing.assert_allclose(
            [unscaled.median_grad_norm, scaled.median_grad_norm], jacobian[d_k][:2], rtol=6e-3
        )
        np.testing.assert_allclose([unscaled.grad_norm, scaled.grad_norm], jacobian[d_k][2:], atol=6e-4)


def test_chapter_9_explorer_steps_through_the_chapters_worked_row():
    notebook = "09_efficient_attention.ipynb"
    by_element = _printed(notebook, "x = np.array(toy_data.ONLINE_SCORES)")
    # "j = 2: x_j = 4   m = 4   l = 1.4177": one line per element
    elements = re.findall(r"x_j = (\S+) +m = (\S+) +l = ([0-9.]+)", by_element)
    one_by_one = explore.efficient_view(1, len(elements))
    assert one_by_one.step == one_by_one.n_blocks == len(elements) == 5
    np.testing.assert_allclose(one_by_one.scores, [float(x) for x, _, _ in elements])
    np.testing.assert_allclose(one_by_one.running_max, [float(m) for _, m, _ in elements])
    np.testing.assert_allclose(one_by_one.running_sum, [float(ell) for _, _, ell in elements], atol=5e-5)

    by_block = _printed(notebook, "v = np.array(toy_data.ONLINE_VALUES)")
    # "block [4. 1.]: m = 4   l = 1.4675   out so far = acc / l = 0.9100": one line per block
    blocks = re.findall(
        r"block \[([^\]]*)\]: m = (\S+) +l = ([0-9.]+) +out so far = acc / l = (-?[0-9.]+)", by_block
    )
    default = explore.efficient_view()  # block size 2, after the first block
    assert default.step == 1 and default.n_blocks == len(blocks) == 3
    b = default.block_size
    for step, (block, m, ell, out) in enumerate(blocks, start=1):
        view = explore.efficient_view(b, step)
        np.testing.assert_allclose(view.scores[(step - 1) * b : step * b], [float(x) for x in block.split()])
        assert view.running_max[-1] == float(m), step
        assert view.running_sum[-1] == pytest.approx(float(ell), abs=5e-5), step
        assert view.out_so_far == pytest.approx(float(out), abs=5e-5), step
    np.testing.assert_allclose(view.running_out, [float(out) for *_, out in blocks], atol=5e-5)
    exact = re.search(r"softmax\(x\) @ v = (-?[0-9.]+)", by_block).group(1)
    assert view.out == pytest.approx(float(exact), abs=5e-5)
    online = re.search(r"online softmax: \[([^\]]*)\]", _printed(notebook, "p_online = np.exp(x - m) / l"))
    np.testing.assert_allclose(view.weights_so_far, [float(x) for x in online.group(1).split()], atol=5e-5)


def test_chapter_5_explorer_counts_the_chapters_parameters():
    printed = _printed("05_multi_head_attention.ipynb", '"n_heads  d_head  ac params')
    # "      4       6       2400          2400         49,152": n_heads, d_head, ac params, ...
    rows = re.findall(r"^ +(\d+) +(\d+) +(\d+) +(\d+) +[0-9,]+$", printed, re.MULTILINE)
    d_model = int(re.search(r"4 d_model\^2 \+ 4 d_model = (\d+)", printed).group(1))
    assert len(rows) == 8 and d_model == int(rows[0][2])
    for n_heads, d_head, n_params, _ in rows:
        view = explore.heads_view(int(n_heads), int(n_heads) * int(d_head))  # the table's d_model, 24
        assert view.d_head == int(d_head) and view.n_params == int(n_params) == d_model, n_heads


def test_chapter_5_explorer_opens_on_the_chapters_per_head_maps():
    printed = _printed("05_multi_head_attention.ipynb", "query = tokens.index(toy_data.HEADS_QUERY)")
    # "head 2: 'sat' attends most to 'on' (weight 0.47)": one line per head
    rows = re.findall(r"head (\d+): '(\w+)' attends most to '(\w+)' \(weight ([0-9.]+)\)", printed)
    entropies = re.search(
        r"mean row entropy of the four maps: ([0-9.]+) with 1/sqrt\(d_head\), ([0-9.]+) with 1/sqrt\(d_model\)",
        printed,
    )
    right, bug = explore.heads_view(), explore.heads_view(scale_by="d_model")  # the explorer's default
    assert right.n_heads == len(rows) == 4 and right.d_head == 2
    for h, query, top, weight in rows:
        row = right.weights[int(h), right.tokens.index(query)]
        assert right.tokens[int(row.argmax())] == top, h
        assert row.max() == pytest.approx(float(weight), abs=5e-3), h
    assert right.mean_entropy == pytest.approx(float(entropies.group(1)), abs=5e-4)
    assert bug.mean_entropy == pytest.approx(float(entropies.group(2)), abs=5e-4)


def test_chapter_10_explorer_grids_have_the_chapters_token_counts():
    from attncourse.results import saved_results

    printed = _printed("10_vision_transformer.ipynb", "{'attention KiB':>13}")
    # " 2     17  18218          4.52       14.6  0.954 (0.960, 0.949)": P, tokens, params, ...
    tokens = {int(p): int(t) for p, t in re.findall(r"^ *(\d+) +(\d+) +\d+ +[0-9.]+ ", printed, re.MULTILINE)}
    maps = saved_results("vit_digits_maps.json")  # what the chapter hands to vision_explorer
    shared = [p for p in maps["patch_sizes"] if p in tokens]
    assert shared == [1, 2, 4], (sorted(tokens), maps["patch_sizes"])
    for patch_size in shared:
        for view in ("layer 1", "layer 2", "rollout"):
            shown = explore.vision_view(maps, 0, patch_size, view)  # the default image, 0
            patches = shown.grid[0] * shown.grid[1]
            assert patches + 1 == tokens[patch_size], (patch_size, view)  # the patches and [CLS]
            assert shown.maps.shape[1:] == shown.grid


def test_chapter_10_explorer_default_is_the_chapters_model():
    """The saved P = 2 maps are those of the model chapter 10 trains (same seed, data, epochs)."""
    from attncourse.results import saved_results

    maps = saved_results("vit_digits_maps.json")  # what the chapter hands to vision_explorer
    heads = _printed("10_vision_transformer.ipynb", "on_self = torch.stack(")
    # "the 0, layer 2: head 1 0.553 at (1, 2)   head 2 ...": each head's largest weight on a patch
    layers = dict(re.findall(r"^the 0, layer (\d+): (.*)$", heads, re.MULTILINE))
    assert sorted(layers) == ["1", "2"], heads
    for layer, line in layers.items():
        shown = re.findall(r"head (\d+) ([0-9.]+) at \((\d+), (\d+)\)", line)
        view = explore.vision_view(maps, 0, 2, f"layer {layer}")  # the default image and patch size
        assert view.label == 0 and len(shown) == len(view.maps) == 4
        for (h, weight, row, col), grid, top in zip(shown, view.maps, view.top_patches):
            assert top == (int(row), int(col)), (layer, h)
            assert grid.max() == pytest.approx(float(weight), abs=6e-4), (layer, h)
    assert explore.vision_view(maps).view == "layer 2"  # the explorer opens on one of them

    printed = _printed("10_vision_transformer.ipynb", "top4 = cls_rollout[shown[0]]")
    # "the 0's top 4 patches by rollout, (row, column) and share: (1, 2) 0.098, (2, 0) 0.089, ..."
    top4 = re.findall(r"\((\d+), (\d+)\) ([0-9.]+)", printed.split("share:")[1])
    rollout = explore.vision_view(maps, 0, 2, "rollout").maps[0]  # (4, 4)
    order = np.argsort(-rollout, axis=None)[: len(top4)]
    assert len(top4) == 4
    for k, (row, col, share) in zip(order, top4):
        assert divmod(int(k), 4) == (int(row), int(col))
        assert rollout.flat[k] == pytest.approx(float(share), abs=6e-4)


# Chapter 8's explorer shows the model the chapter trains; its weights are not saved, so its
# frames exist only in the built book (the build executes the chapter and draws every frame).
BUILT = BOOK.parent / "_build"
_TRANSFORMER_CAPTION = re.compile(
    r"Layer (\d+), head (\d+): previous-token score ([0-9.]+), induction score ([0-9.]+), averaged over "
    r"(\d+) held-out sequences.*?On the sequence shown, [0-9 ]+: mean weight on the previous token ([0-9.]+);"
    r" on the keys right after an earlier copy of the query.s token \(circled\) ([0-9.]+)\.",
    re.S,
)


def _built(path: Path) -> Path:
    if not path.is_file():
        reason = f"the book is not built ({path} missing): run `bash scripts/build_book.sh`"
        if os.environ.get("REQUIRE_BUILT_BOOK") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    return path


def _transformer_frames(page: Path) -> dict:
    """(layer, head) -> (held-out previous, induction, demo previous, induction) from the captions
    of every frame of the page's Transformer explorer (the widget state: in ``<page>.widgets.js``
    once book/_ext/fast_pages.py has moved it out of the page, else in the page)."""
    state = page.with_suffix(".widgets.js")
    text = (state if state.is_file() else page).read_text(encoding="utf-8")
    frames: dict = {}
    for m in _TRANSFORMER_CAPTION.finditer(text):
        numbers = (m.group(3), m.group(4), m.group(6), m.group(7))
        assert frames.setdefault((int(m.group(1)), int(m.group(2))), numbers) == numbers, m.group(0)
    return frames


def test_chapter_8_explorer_tables_are_the_chapters_held_out_scores():
    # The page and the executed notebook of one build: the same execution, the same trained model.
    page = _built(BUILT / "html" / "book" / "08_transformer_block.html")
    executed = _built(BUILT / "jupyter_execute" / "book" / "08_transformer_block.ipynb")
    frames = _transformer_frames(page)
    assert sorted(frames) == [(layer, head) for layer in (1, 2) for head in (1, 2, 3, 4)], sorted(frames)

    # "layer 1 previous-token  held-out: 0.34 0.46 0.63 0.56   demo: 0.54 0.66 0.77 0.66": printed
    # by the cell that measures with the package's head_scores, as the explorer does.
    both = _printed(executed.name, "package_head_scores(", book=executed.parent)
    rows = re.findall(
        r"^layer (\d) +(previous-token|induction) +held-out: ([0-9. ]+?) +demo: ([0-9. ]+)$", both, re.M
    )
    assert len(rows) == 4, both
    for layer, score, held_out, demo in rows:
        column = 0 if score == "previous-token" else 1
        for head, (mean, one) in enumerate(zip(held_out.split(), demo.split()), start=1):
            shown = frames[int(layer), head]
            assert (shown[column], shown[2 + column]) == (mean, one), (layer, head, score)

    # The chapter's own measurement (its head_scores, in torch) prints the same table.
    own = _printed(executed.name, "def head_scores(weights, tokens, starts)", book=executed.parent)
    table = re.findall(r"^layer (\d) +previous-token: ([0-9. ]+?) +induction: ([0-9. ]+)$", own, re.M)
    assert len(table) == 2, own
    for layer, previous, induction in table:
        for head, (p, i) in enumerate(zip(previous.split(), induction.split()), start=1):
            shown = frames[int(layer), head]
            # one unit in the last printed digit: float32 sums in the chapter, float64 in the package
            assert float(shown[0]) == pytest.approx(float(p), abs=0.0101), (layer, head)
            assert float(shown[1]) == pytest.approx(float(i), abs=0.0101), (layer, head)
