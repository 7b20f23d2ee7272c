"""Chapters 12 and 13: the exercises' references agree with torch and the package, and the feedback
named in issue 36 is true for the answer in front of it."""

from __future__ import annotations

import numpy as np
import pytest

from attncourse import delta_rule, softmax
from attncourse.exercises import check, get

torch = pytest.importorskip("torch")


def test_the_beam_step_is_the_full_torch_forward_of_each_rows_hypothesis():
    """12.8's reference: row r's output is torch's decoder layer over its parent's history and the new
    token, reading its own source; the caches come back with the parent's rows and the new key."""
    from attncourse.exercises.chapters import _ch12_decoder as D

    rng = np.random.default_rng(7)
    for B, K, t, lengths in ((2, 3, 0, [2, 3]), (2, 3, 4, [3, 1]), (3, 2, 2, [1, 3, 2])):
        case, extra = D.beam_inputs(rng, B, K, t, 3, 8, 2, 16, lengths)
        out, k, v = get("ch12.beam_decoder_step").reference(*case.values())
        weights = [case[n] for n in ("n_heads",) + D.WEIGHTS]
        for r, parent in enumerate(case["parents"]):
            assert parent // K == r // K
            target = np.concatenate([extra["history"][parent], case["x_new"][r]])[None]
            b = r // K
            whole = D.torch_block(
                target, extra["memory"][b : b + 1], case["src_padding"][b : b + 1], *weights
            )
            np.testing.assert_allclose(out[r], whole[0, -1:], atol=1e-12)
            np.testing.assert_allclose(k[r, :t], case["self_k"][parent], atol=0)
        assert k.shape == v.shape == (B * K, t + 1, 8)


def test_the_packed_block_in_numpy_is_torchs_layer_on_each_example():
    from attncourse.exercises.chapters import _ch12_decoder as D

    rng = np.random.default_rng(9)
    inputs = D.packed_inputs(rng, [3, 1, 2], [2, 4, 1], 8, 2, 12)
    np.testing.assert_allclose(
        D._packed_block(*inputs.values()), D.torch_packed_block(*inputs.values()), atol=1e-12
    )


def test_the_decoder_block_in_numpy_is_torchs_layer():
    from attncourse.exercises.chapters import _ch12_decoder as D

    rng = np.random.default_rng(8)
    inputs = D.block_inputs(rng, 2, 4, 5, 8, 4, 12, [5, 2])
    np.testing.assert_allclose(D._block(*inputs.values()), D.torch_block(*inputs.values()), atol=1e-12)


def test_the_chunked_delta_rule_is_the_packages_for_every_chunk_size():
    from attncourse.exercises.chapters._ch13_chunked import chunked_delta

    rng = np.random.default_rng(9)
    q, k, v, beta = (
        rng.normal(size=(2, 9, 3)),
        rng.normal(size=(2, 9, 3)),
        rng.normal(size=(2, 9, 2)),
        rng.random((2, 9)),
    )
    k = k / np.linalg.norm(k, axis=-1, keepdims=True)
    want = delta_rule(q, k, v, beta)[0]
    for C in (1, 2, 4, 9, 20):
        np.testing.assert_allclose(chunked_delta(q, k, v, beta, C), want, atol=1e-12)


def test_13_1_in_megabytes_is_told_apart_and_named():
    result = check(
        "ch13.predict_hybrid_mib",
        lambda: (8 * 2 * 4 * 128 * 2 * 4096 + 24 * 16 * 128 * 128 * 2) / 1e6,
        show=False,
    )
    assert result.earned == 0
    assert "megabytes" in result.text()


def test_13_1_feedback_states_no_quantity():
    for d in get("ch13.predict_hybrid_mib").diagnoses:
        for said in ("four times", "half", "far too much", "times the"):
            assert said not in d.message, d.message


def test_12_2_text_before_any_image_gives_zeros_and_nan_scores_less():
    ex = get("ch12.interleaved_image_attention")
    assert check(ex.id, ex.solution_function(), show=False).earned == ex.points

    def nan_rows(q, k, v, is_image, latent_image, gate):
        cur = np.cumsum(is_image, axis=-1) - 1
        ok = (latent_image[:, None, :] == cur[:, :, None]) & (cur[:, :, None] >= 0)
        s = np.where(ok, q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1]), -np.inf)
        e = np.exp(s - s.max(-1, keepdims=True))
        w = e / e.sum(-1, keepdims=True)
        return np.tanh(gate) * (w @ v), w

    with np.errstate(invalid="ignore"):
        result = check(ex.id, nan_rows, show=False)
    assert result.earned < ex.points
    assert "the image at position 1" in result.text()


def test_12_2_reading_every_earlier_image_is_named_without_the_fix():
    ex = get("ch12.interleaved_image_attention")

    def earlier(q, k, v, is_image, latent_image, gate):
        cur = np.cumsum(is_image, axis=-1) - 1
        ok = (latent_image[:, None, :] >= 0) & (latent_image[:, None, :] <= cur[:, :, None])
        w = softmax(np.where(ok, q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1]), -np.inf))
        return np.tanh(gate) * (w @ v), w

    result = check(ex.id, earlier, show=False)
    text = result.text()
    assert result.earned < ex.points
    assert "reads the latents of both" in text  # the recognised mistake
    assert "only the latents of the last image" not in text  # the hint, not shown unasked
    assert "only the latents of the last image" in check(ex.id, earlier, show=False, hint=True).text()


def test_13_4_token_by_token_breaks_the_method_rule():
    def per_token(q, k, v, beta, chunk_size):
        S = np.zeros(q.shape[:-2] + (q.shape[-1], v.shape[-1]))
        outs = []
        for t in range(q.shape[-2]):
            k_t, v_t = k[..., t : t + 1, :], v[..., t : t + 1, :]
            S = S + np.swapaxes(k_t, -1, -2) @ (beta[..., t, None, None] * (v_t - k_t @ S))
            outs.append(q[..., t : t + 1, :] @ S)
        return np.concatenate(outs, axis=-2) / np.sqrt(q.shape[-1])

    result = check("ch13.chunked_delta_rule", per_token, show=False)
    assert result.earned == 0
    assert "one position at a time" in result.text() or "single positions" in result.text()
    ex = get("ch13.chunked_delta_rule")
    assert check(ex.id, ex.solution_function(), show=False).earned == ex.points


def test_13_3_hint_holds_for_any_answer():
    hint = get("ch13.chunked_linear_attention").hint
    assert "before writing" not in hint and "state carried" not in hint and "row sum" not in hint


def test_12_4_kept_weights_of_0_follow_the_stated_convention():
    """12.4's prompt: a row whose kept tokens carry no weight at all gets zeros; a hidden case holds
    such a row (weights that underflowed), and an unguarded renormalisation fails it."""
    from exercise_support import ROOT, load_hidden_cases

    ex = get("ch12.remove_source_tokens")
    assert "carry no weight at all" in ex.description
    cases = [
        c
        for c in load_hidden_cases(ROOT / "hidden_cases")[ex.id]()
        if c.name == "kept tokens whose weights are 0"
    ]
    assert len(cases) == 1
    weights, v, keep = cases[0].args()
    assert ((weights * keep[:, None, :]).sum(-1) == 0).any()  # the row the convention is about
    out, new = ex.solution_function()(weights, v, keep)
    assert np.all(out[0, 0] == 0) and np.all(new[0, 0] == 0) and np.isfinite(out).all()

    def unguarded(weights, v, keep):
        w = weights * keep[:, None, :]
        w = w / w.sum(-1, keepdims=True)
        return w @ v, w

    with np.errstate(invalid="ignore"):
        got = unguarded(weights, v, keep)[1]
    assert np.isnan(got[0, 0]).all()


def test_12_5_padding_over_the_latents_too_is_named_without_the_fix():
    ex = get("ch12.latent_resampler")
    assert check(ex.id, ex.solution_function(), show=False).earned == ex.points

    def padding_ignored(latents, features, W_q, W_k, W_v, feature_padding):
        B = features.shape[0]
        kv = np.concatenate([features, np.broadcast_to(latents, (B,) + latents.shape)], axis=1)
        s = (latents @ W_q) @ np.swapaxes(kv @ W_k, 1, 2) / np.sqrt(W_q.shape[1])
        w = softmax(s)
        return w @ (kv @ W_v), w

    result = check(ex.id, padding_ignored, show=False)
    text = result.text()
    assert result.earned < ex.points and "padded features get weight" in text
    assert "the latents are always visible" not in text
    assert "the latents are always visible" in check(ex.id, padding_ignored, show=False, hint=True).text()


def test_12_8_without_the_reordering_is_named_and_12_1_other_numbers_are_only_wrong():
    from attncourse.exercises.chapters import _ch12_decoder as D

    def beam_step(x_new, parents, *rest):  # the cache left in its rows
        return D.beam_reference(x_new, np.arange(len(parents)), *rest)

    result = check("ch12.beam_decoder_step", beam_step, show=False)
    assert result.earned < 3
    assert "whose earlier tokens does row r continue?" in result.text()
    assert "parents[r]" not in result.text()  # the hint, only with hint=True
    other = check("ch12.predict_beam_cache_bytes", lambda: 9.9e7, show=False)
    assert other.earned == 0 and "your result is wrong" in other.text()
    said = other.text().split("[wrong values]:")[-1]
    assert "9.9" not in said and "1.03" not in said and "larger" not in said and "smaller" not in said
