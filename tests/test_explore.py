"""The pure functions behind the slider explorers: the numbers each picture shows."""

from __future__ import annotations

import math

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
    assert set(counts.values()) == {4 * 12 * 12}
    module = ac.MultiHeadAttention(12, 4, bias=False)  # the chapter's layer: no biases
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
