"""The mutation table: likely wrong answers, each of which must get its own named diagnosis.

Two parts.  ``WRONG_ANSWERS`` is written here as a student would write it (numpy code, one classic
mistake each).  ``test_every_registered_mistake_is_recognised`` runs every exercise's registered
wrong variants as answers and asserts that each gets its own diagnosis, not an earlier one's
and not the generic line.  ``table_size`` counts both; the exercise notes quote it.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from exercise_support import ROOT, load_hidden_cases

from attncourse.exercises import all_exercises, check, get
from attncourse.exercises.engine.check import run_cases
from attncourse.exercises.engine.compare import Outcome, expected_outputs, judge
from attncourse.exercises.engine.outputs import to_arrays

HIDDEN = load_hidden_cases(ROOT / "hidden_cases")


def _sm(s, axis=-1):
    e = np.exp(s - s.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _t(x):
    return np.swapaxes(x, -1, -2)


# ----------------------------------------------------------------------------- hand-written wrong answers
def naive_softmax(x):
    e = np.exp(x)
    return e / e.sum(axis=-1, keepdims=True)


def global_max_softmax(x):
    e = np.exp(x - x.max())
    return e / e.sum(axis=-1, keepdims=True)


def column_softmax(x):
    return _sm(x, axis=0) if x.ndim > 1 else _sm(x)


def temperature_times(logits, temperature):
    return _sm(logits * np.asarray(temperature)[..., None])


def temperature_by_column(logits, temperature):
    return _sm(logits / temperature)


def effective_keys_without_reciprocal(x_query, x_key, width):
    a = _sm(-((x_query[:, None] - x_key[None, :]) ** 2) / (2 * width**2))
    return (a**2).sum(axis=-1)


def temperature_derivative_flipped(logits, temperature):
    p = _sm(logits / temperature)
    return p * (logits - (p * logits).sum(axis=-1, keepdims=True)) / temperature**2


def entropy_gradient_wrt_p(x):
    p = _sm(x)
    return -(np.log(np.where(p > 0, p, 1.0)) + 1)


def output_jacobian_diagonal_only(q, k, v):
    w = _sm(q @ k.T)
    return np.einsum("ls,sv,se->lve", w, v, k)


def query_for_weights_uncentred(k, p):
    return np.linalg.solve(k, np.log(p).T).T


def key_lengths_without_row_constant(q, directions, weights):
    L, S = weights.shape
    c = q @ directions.T  # (L, S)
    rows = (c[:, :, None] * np.eye(S)).reshape(L * S, S)  # length_j * c_ij = log w_ij: no z_i
    return np.linalg.lstsq(rows, np.log(weights).ravel(), rcond=None)[0]


def attention_swapped(q, k, v):
    w = _sm(k @ _t(q))
    return w @ v if w.shape[-1] == v.shape[-2] else w, w


def scores_unscaled(q, k):
    return q @ _t(k)


def scores_over_e(q, k):
    return q @ _t(k) / q.shape[-1]


def packed_heads_scaled_by_all(q, k, v, n_heads):  # the scale of the whole last axis, not one head's
    qh, kh, vh = (np.swapaxes(x.reshape(*x.shape[:-1], n_heads, -1), -2, -3) for x in (q, k, v))
    w = _sm(qh @ _t(kh) / np.sqrt(q.shape[-1]))
    o = np.swapaxes(w @ vh, -2, -3)
    return o.reshape(*o.shape[:-2], -1), w


def two_part_each_scaled(q_c, k_c, q_r, k_r, v):  # each dot product scaled by its own width
    s = q_c @ _t(k_c) / np.sqrt(q_c.shape[-1]) + q_r @ _t(k_r)[..., None, :, :] / np.sqrt(q_r.shape[-1])
    w = _sm(s)
    return w @ v, w


def _heads(x, n):
    B, L, D = x.shape
    return x.reshape(B, L, n, D // n).swapaxes(1, 2)


def _merge(x):
    B, H, L, d = x.shape
    return x.swapaxes(1, 2).reshape(B, L, H * d)


def mha_scaled_by_d_model(x, W_q, W_k, W_v, W_o, n_heads):
    q, k, v = (_heads(x @ W, n_heads) for W in (W_q, W_k, W_v))
    w = _sm(q @ _t(k) / np.sqrt(x.shape[-1]))
    return _merge(w @ v) @ W_o, w


def mha_without_w_o(x, W_q, W_k, W_v, W_o, n_heads):
    q, k, v = (_heads(x @ W, n_heads) for W in (W_q, W_k, W_v))
    w = _sm(q @ _t(k) / np.sqrt(q.shape[-1]))
    return _merge(w @ v), w


def _masked_sm(s, allowed):
    s = np.where(allowed, s, -np.inf)
    top = s.max(axis=-1, keepdims=True)
    e = np.exp(s - np.where(np.isfinite(top), top, 0.0))
    total = e.sum(axis=-1, keepdims=True)
    return np.where(total > 0, e / np.where(total > 0, total, 1.0), 0.0)


def logsumexp_inverted(scores, mask):
    s = np.where(mask, -np.inf, scores)
    top = s.max(axis=-1, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(divide="ignore"):
        return top[..., 0] + np.log(np.exp(s - top).sum(axis=-1))


def logsumexp_large_negative(scores, mask):
    s = np.where(mask, scores, -1e9)
    top = s.max(axis=-1, keepdims=True)
    return top[..., 0] + np.log(np.exp(s - top).sum(axis=-1))


def logsumexp_shift_over_all(scores, mask):
    top = np.max(scores, axis=-1, keepdims=True)
    with np.errstate(divide="ignore"):
        return top[..., 0] + np.log((np.exp(scores - top) * mask).sum(axis=-1))


def causal_mask_without_diagonal(L, S):
    return np.tril(np.ones((L, S), dtype=bool), k=-1)


def causal_mask_bottom_right(L, S):
    return np.tril(np.ones((L, S), dtype=bool), k=S - L)


def remove_keys_not_renormalised(q, k_rm, v_rm, out, lse):
    """Subtracts the removed keys' weighted values and stops: the rest still sums to less than 1."""
    w = np.exp(q @ _t(k_rm) / np.sqrt(q.shape[-1]) - lse[..., None])
    return out - w @ v_rm, lse + np.log1p(-w.sum(-1))


def split_decode_own_maximum(q, k, v, n_splits):
    """The handed-out combine: each part reports the log of its sum relative to its own maximum."""
    outs, lses = [], []
    for kp, vp in zip(np.array_split(k, n_splits, axis=-2), np.array_split(v, n_splits, axis=-2)):
        s = q @ _t(kp) / np.sqrt(q.shape[-1])
        e = np.exp(s - s.max(-1, keepdims=True))
        outs.append(e @ vp / e.sum(-1, keepdims=True))
        lses.append(np.log(e.sum(-1, keepdims=True)))
    w = np.exp(np.stack(lses) - np.max(lses, axis=0))
    return (w * np.stack(outs)).sum(0) / w.sum(0)


def beam_caches_not_gathered(q, k_new, v_new, k_cache, v_cache, parents):  # each new beam reads its own row
    t, n = k_cache.shape[1], q.shape[1]
    k_all, v_all = np.concatenate([k_cache, k_new], 1), np.concatenate([v_cache, v_new], 1)
    visible = np.arange(t + n)[None, :] <= t + np.arange(n)[:, None]
    return _masked_sm(q @ _t(k_all) / np.sqrt(q.shape[-1]), visible) @ v_all, k_all, v_all


def sink_output_not_rescaled(out, lse, sink):  # lse and the sink's weight right, out the pass without it
    new_lse = np.logaddexp(lse, sink[:, None])
    return out, new_lse, np.exp(sink[:, None] - new_lse)


def project_transposed(x, W_q, W_k, W_v):
    return x @ W_q.T, x @ W_k.T, x @ W_v.T


def key_major_still_lower(q, k, v):
    L = q.shape[-2]
    # the stub's mask, softmax written by hand over the key axis (-2) of the key-major scores
    w_t = np.swapaxes(
        _masked_sm(q @ _t(k) / np.sqrt(q.shape[-1]), np.triu(np.ones((L, L), dtype=bool))), -1, -2
    )
    return np.swapaxes(w_t, -1, -2) @ v, w_t


def late_scaling(q, k, v):
    w = _sm(q @ _t(k)) / np.sqrt(q.shape[-1])
    return w @ v, w


def scale_as_temperature(
    q, k, weights, candidates
):  # the temperature T = 1 / c, from row 0's two largest weights
    s = np.broadcast_to(q @ _t(k), weights.shape).reshape(-1, weights.shape[-1])
    w = weights.reshape(-1, weights.shape[-1])
    i, j = np.argsort(w[0])[-2:]
    return float((s[0, i] - s[0, j]) / np.log(w[0, i] / w[0, j]))


def mha_batch_unfolded_heads_first(x, W_q, W_k, W_v, W_o, n_heads):
    """5.7 with the heads folded into the batch sequence-major and unfolded head-major."""
    B, L, D = x.shape
    d = D // n_heads
    q, k, v = (
        (x @ W).reshape(B, L, n_heads, d).transpose(0, 2, 1, 3).reshape(B * n_heads, L, d)
        for W in (W_q, W_k, W_v)
    )
    w = _sm(q @ _t(k) / np.sqrt(d))
    heads = (w @ v).reshape(n_heads, B, L, d).transpose(1, 2, 0, 3).reshape(B, L, D)
    return heads @ W_o, w.reshape(n_heads, B, L, L).transpose(1, 0, 2, 3)


def copies_merged_o_dropped(W_q, W_k, W_v, W_o, n_heads):
    """5.2 with the later copy cut out of all four matrices, its rows of W_o thrown away."""
    dh = W_q.shape[0] // n_heads
    same = [
        (a, b)
        for b in range(n_heads)
        for a in range(b)
        if all(
            np.array_equal(W[:, a * dh : (a + 1) * dh], W[:, b * dh : (b + 1) * dh]) for W in (W_q, W_k, W_v)
        )
    ]
    gone = np.arange(same[0][1] * dh, (same[0][1] + 1) * dh)
    return tuple(np.delete(W, gone, axis=1) for W in (W_q, W_k, W_v)) + (np.delete(W_o, gone, axis=0),)


def uneven_heads_by_mean_width(x, W_q, W_k, W_v, W_o, widths):
    """5.5 with every head's scores divided by sqrt(d_model / H), the mean width."""
    q, k, v = x @ W_q, x @ W_k, x @ W_v
    c = np.sqrt(x.shape[-1] / len(widths))
    edges = np.concatenate([[0], np.cumsum(widths)])
    maps = [_sm(q[..., a:b] @ _t(k[..., a:b]) / c) for a, b in zip(edges[:-1], edges[1:])]
    heads = [w @ v[..., a:b] for w, a, b in zip(maps, edges[:-1], edges[1:])]
    return np.concatenate(heads, axis=-1) @ W_o, np.stack(maps, axis=1)


def static_step_whole_buffer(q_new, k_new, v_new, k_cache, v_cache, lengths):
    """Writes each new token into its slot, then reads every slot of the buffer, stale ones too."""
    k_all, v_all = k_cache.copy(), v_cache.copy()
    rows = np.arange(len(lengths))
    k_all[rows, lengths], v_all[rows, lengths] = k_new[:, 0], v_new[:, 0]
    w = _sm(q_new @ _t(k_all) / np.sqrt(q_new.shape[-1]))
    return w @ v_all, k_all, v_all


def causal_tiles_all_computed(q, k, v, block_size):
    """Tiles every (query block, key block) pair, masking inside (bottom-right), and counts them all."""
    L, S, E = q.shape[-2], k.shape[-2], q.shape[-1]
    out = np.zeros(q.shape[:-1] + (v.shape[-1],))
    n_tiles = 0
    for i0 in range(0, L, block_size):
        i1 = min(i0 + block_size, L)
        rows = S - L + np.arange(i0, i1)
        m = np.full(q.shape[:-2] + (i1 - i0,), -np.inf)
        l = np.zeros_like(m)
        acc = np.zeros(m.shape + (v.shape[-1],))
        for j0 in range(0, S, block_size):
            j1 = min(j0 + block_size, S)
            n_tiles += 1
            s = q[..., i0:i1, :] @ _t(k[..., j0:j1, :]) / np.sqrt(E)
            s = np.where(np.arange(j0, j1)[None, :] <= rows[:, None], s, -np.inf)
            m_new = np.maximum(m, s.max(axis=-1))
            p = np.exp(s - np.where(np.isfinite(m_new), m_new, 0.0)[..., None])
            r = np.exp(np.where(np.isfinite(m), m - m_new, -np.inf))
            l, acc, m = l * r + p.sum(axis=-1), acc * r[..., None] + p @ v[..., j0:j1, :], m_new
        out[..., i0:i1, :] = acc / l[..., None]
    return out, n_tiles


def pairs_without_the_circle(theta, scaled, N, L):  # only the largest angles compared
    return (L - 1) * scaled <= (N - 1) * theta


def pairs_trained_with_scaled(theta, scaled, N, L):  # the training arc measured with the scaled frequencies
    trained = (N - 1) * scaled
    return (trained >= 2 * np.pi) | ((L - 1) * scaled <= trained)


def kv_heads_by_the_chapters_rule(q, k, v, out):  # h // G whatever the outputs say
    return np.arange(q.shape[0]) // (q.shape[0] // k.shape[0])


def block_table_in_pool_order(k_pool, k):  # the right blocks, found with nonzero: the pool's order
    b = k_pool.shape[1]
    hits = []
    for s in range(0, len(k), b):
        tokens = k[s : s + b]
        hits += np.nonzero(np.all(k_pool[:, : len(tokens)] == tokens, axis=(1, 2, 3)))[0].tolist()
    return np.array(sorted(hits))


def cache_of_full_layers_only():  # the 40 windowed layers left out
    return 8 * 2 * 8 * 256 * 2 * 131072 / 2**30


def _named(ex_id, index):
    """The registry's name of a diagnosis, for the entries whose name is their (long) message."""
    return get(ex_id).diagnoses[index].name


# (exercise id, wrong answer, the name of the diagnosis it must get)
WRONG_ANSWERS = [
    ("ch01.stable_softmax", naive_softmax, "missing max subtraction"),
    ("ch01.stable_softmax", global_max_softmax, "subtracted the maximum of the whole array"),
    ("ch01.stable_softmax", column_softmax, "normalised along the wrong axis"),
    ("ch01.temperature_softmax", temperature_times, "multiplied by the temperature"),
    ("ch01.temperature_softmax", temperature_by_column, "temperatures along the last axis"),
    ("ch00.effective_keys", effective_keys_without_reciprocal, _named("ch00.effective_keys", 0)),
    ("ch01.temperature_derivative", temperature_derivative_flipped, _named("ch01.temperature_derivative", 0)),
    ("ch01.entropy_gradient", entropy_gradient_wrt_p, _named("ch01.entropy_gradient", 1)),
    ("ch02.output_jacobian", output_jacobian_diagonal_only, _named("ch02.output_jacobian", 0)),
    ("ch02.query_for_weights", query_for_weights_uncentred, "a query that works, not the shortest"),
    ("ch02.recover_key_lengths", key_lengths_without_row_constant, "no number per query"),
    ("ch02.batched_attention", attention_swapped, "q and k are swapped"),
    ("ch03.scaled_scores", scores_unscaled, "unscaled scores"),
    ("ch03.scaled_scores", scores_over_e, "divided by E"),
    ("ch03.two_part_attention", two_part_each_scaled, "each part scaled by its own width"),
    ("ch03.packed_head_attention", packed_heads_scaled_by_all, "scaled by the width of all the heads"),
    ("ch03.weights_not_normalised", late_scaling, "scaled after the softmax"),
    ("ch03.recover_scale", scale_as_temperature, "the temperature"),
    ("ch04.project_qkv", project_transposed, "multiplied by W transposed"),
    ("ch05.multi_head_attention", mha_scaled_by_d_model, "scale by d_model"),
    ("ch05.multi_head_attention", mha_without_w_o, "out skips the output projection"),
    ("ch06.masked_logsumexp", logsumexp_inverted, "inverted mask"),
    ("ch06.masked_logsumexp", logsumexp_large_negative, "large negative instead of -inf"),
    ("ch06.masked_logsumexp", logsumexp_shift_over_all, "maximum over the masked scores too"),
    ("ch06.make_causal_mask", causal_mask_without_diagonal, "the diagonal must be True"),
    ("ch06.make_causal_mask", causal_mask_bottom_right, "you aligned the diagonal bottom-right"),
    ("ch06.key_major_decoder", key_major_still_lower, "the query-major mask on key-major scores"),
    ("ch09.remove_keys", remove_keys_not_renormalised, "remaining weights not renormalised"),
    ("ch09.split_decode", split_decode_own_maximum, "each part's sum relative to its own maximum"),
    ("ch09.beam_cache_step", beam_caches_not_gathered, "caches not reordered"),
    ("ch09.add_sink", sink_output_not_rescaled, "output not rescaled"),
    ("ch09.static_cache_step", static_step_whole_buffer, "stale slots attended"),
    ("ch05.mha_forward", mha_batch_unfolded_heads_first, "sequences and heads swapped when unfolding"),
    ("ch05.merge_copied_heads", copies_merged_o_dropped, "the removed copy's rows of W_o dropped"),
    ("ch05.mha_uneven_heads", uneven_heads_by_mean_width, "every head scaled by the mean width"),
    ("ch09.causal_tiled_attention", causal_tiles_all_computed, "every tile computed"),
    ("ch11.pairs_in_range", pairs_without_the_circle, "whole circle ignored"),
    ("ch11.pairs_in_range", pairs_trained_with_scaled, "training range scaled"),
    ("ch11.kv_head_map", kv_heads_by_the_chapters_rule, "the chapter's pairing assumed"),
    ("ch11.recover_block_table", block_table_in_pool_order, "blocks in pool order"),
    ("ch11.predict_cache_gib", cache_of_full_layers_only, "windowed layers forgotten"),
]


def _all_cases(ex):
    return ex.public_cases() + (list(HIDDEN[ex.id]()) if ex.id in HIDDEN else [])


@pytest.mark.parametrize(
    "ex_id, answer, name", WRONG_ANSWERS, ids=[f"{e}-{a.__name__}" for e, a, _ in WRONG_ANSWERS]
)
def test_a_likely_wrong_answer_gets_its_named_diagnosis(ex_id, answer, name):
    ex = get(ex_id)
    assert name in [d.name for d in ex.diagnoses], f"{ex_id} has no diagnosis named {name!r}"
    results = run_cases(ex, answer, _all_cases(ex))
    assert not all(r.passed for r in results)
    got = {r.diagnosis for r in results if not r.passed}
    assert name in got, f"{answer.__name__} got {got or 'no diagnosis'}, not {name!r}"
    assert check(ex_id, answer, show=False).earned < ex.points


# ----------------------------------------------------------------------------- the registry's own wrong variants
REGISTERED = [
    (ex.id, i)
    for ex in all_exercises()
    for i, d in enumerate(ex.diagnoses)
    if d.variant is not None and ex.chapter in {f"ch0{n}" for n in range(10)} | {"bugs", "ch11"}
]


@pytest.mark.parametrize("ex_id, index", REGISTERED, ids=[f"{e}#{i}" for e, i in REGISTERED])
def test_every_registered_mistake_is_recognised(ex_id, index):
    ex = get(ex_id)
    d = ex.diagnoses[index]

    def wrong(*args):
        out = d.variant(*args)
        if out is None:  # the mistake cannot be told apart on these inputs: answer correctly
            return ex.reference(*args)
        return out

    # the variants live in the package, which the guard forbids to answers: judge their outputs directly
    results = []
    for case in _all_cases(ex):
        try:
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                outcome = Outcome("returned", to_arrays(wrong(*case.args()), ex.outputs))
        except Exception as e:
            outcome = Outcome("raised", error_type=type(e).__name__, message=str(e))
        results.append(judge(ex, case, expected_outputs(ex, case), outcome))
    got = [r.diagnosis for r in results if not r.passed]
    assert got, f"{d.name!r}: the wrong answer passed every case"
    assert d.name in got, f"{d.name!r} was diagnosed as {set(got)}"


def table_size() -> int:
    return len(WRONG_ANSWERS) + len(REGISTERED)


def test_the_table_covers_every_exercise_of_chapters_0_to_9_and_the_appendix():
    covered = {e for e, _ in REGISTERED} | {e for e, _, _ in WRONG_ANSWERS}
    every = {ex.id for ex in all_exercises() if ex.chapter in {f"ch0{n}" for n in range(10)} | {"bugs"}}
    missing = every - covered
    assert not missing, f"no wrong answer on record for {sorted(missing)}"
    assert table_size() >= 140
