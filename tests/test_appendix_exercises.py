"""The appendix of common bugs (``bugs.*``): replaced ids are gone, nothing the student reads
before a hint names a cause, each handed-out stub carries exactly its registered bug, and A.9's
prediction is what A.8's handed-out code really does."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from exercise_support import ROOT, load_hidden_cases, skip_without_torch, stub_function

from attncourse.exercises import all_exercises, get
from attncourse.exercises.engine.check import call
from attncourse.exercises.engine.compare import expected_outputs, judge
from attncourse.exercises.engine.outputs import to_arrays

HIDDEN = load_hidden_cases(ROOT / "hidden_cases")
# exercises replaced by others that ask a different function: their ids (and former ids) are gone
DROPPED = [
    "bugs.padded_head_weights",
    "bugs.head_major_mask",
    "bugs.sentence_embeddings",
    "bugs.mean_over_padding",
    "bugs.add_positions",
    "bugs.left_pad_positions",
]
# words that named a cause in the old ids, titles and prompts (issue 36)
CAUSE_WORDS = [
    "discarded",
    "never applied",
    "head major",
    "head-major",
    "mean over padding",
    "count the padding",
    "after the softmax",
    "fills the scores",
    "applied twice",
    "text position",
    "values rotated",
    "filled from",
    "meshgrid",
    "indexing",
    "column by column",
    "first to last",
    "before the decay",
    "decays after",
]
DIAGNOSE = [ex.id for ex in all_exercises("bugs") if ex.kind == "diagnose"]


@pytest.mark.parametrize("old", DROPPED)
def test_a_replaced_exercise_id_is_no_longer_graded(old):
    with pytest.raises(KeyError):
        get(old)


@pytest.mark.parametrize("ex_id", DIAGNOSE)
def test_id_title_prompt_and_stub_name_no_cause(ex_id):
    ex = get(ex_id)
    comments = [line.split("#", 1)[1] for line in ex.stub.splitlines() if "#" in line]
    for where, text in [
        ("id", ex.id.replace("_", " ")),
        ("title", ex.title),
        ("prompt", ex.description),
        ("stub comments", " ".join(comments)),
    ]:
        found = [w for w in CAUSE_WORDS if w in text.lower()]
        assert not found, f"{ex_id}: its {where} names a cause: {found}"


def _outputs(ex, fn, case):
    """What ``check`` gets from ``fn`` on ``case`` (torch tensors for a torch exercise)."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return call(ex, fn, case.args())


@pytest.mark.parametrize("ex_id", DIAGNOSE)
def test_the_stub_carries_exactly_its_registered_bug(ex_id):
    """On every case, public and hidden, the handed-out code gives what the exercise's first
    diagnosis (the bug) computes, and that differs from the reference on some case."""
    ex = get(ex_id)
    skip_without_torch(ex)
    stub, bug = stub_function(ex), ex.diagnoses[0]
    told_apart = 0
    for case in ex.public_cases() + HIDDEN[ex_id]():
        wrong = bug.variant(*case.args())
        if wrong is None:
            continue
        as_bug = judge(
            ex, case, [np.asarray(w) for w in to_arrays(wrong, ex.outputs)], _outputs(ex, stub, case)
        )
        assert as_bug.passed, f"{ex_id}, case {case.name!r}: the stub is not the registered bug"
        told_apart += not judge(ex, case, expected_outputs(ex, case), _outputs(ex, stub, case)).passed
    assert told_apart, f"{ex_id}: no case tells the bug from the reference"


@pytest.mark.slow
def test_the_prediction_is_the_first_step_the_sink_cache_code_gets_wrong():
    sink, predict = get("bugs.sink_cache_weights"), get("bugs.predict_first_drift")
    rng = np.random.default_rng(0)
    L = 1030
    q, k = rng.normal(size=(L, 4)), rng.normal(size=(L, 4))
    handed_out, fixed = stub_function(sink)(q, k, 4, 1020), sink.solution_function()(q, k, 4, 1020)
    differs = np.flatnonzero(np.abs(handed_out - fixed).max(axis=-1) > 1e-9)
    assert differs.size and differs[0] == int(predict.reference())
    assert differs[0] == int(predict.solution_function()())


def test_a1_handed_out_code_is_right_exactly_when_the_window_holds_the_whole_cache():
    """A.1's symptom, as its prompt states it, on an independent boolean reference."""
    torch = pytest.importorskip("torch")
    ex = get("bugs.chunk_window_weights")
    stub = stub_function(ex)
    rng = np.random.default_rng(1)
    for L, S in [(1, 6), (3, 6), (6, 6)]:
        q, k = torch.tensor(rng.normal(size=(L, 4))), torch.tensor(rng.normal(size=(S, 4)))
        for window in range(1, S + 3):
            t = np.arange(L)[:, None] + S - L
            j = np.arange(S)[None, :]
            seen = torch.tensor((j <= t) & (j > t - window))
            expected = torch.softmax((q @ k.T / 2).masked_fill(~seen, float("-inf")), -1)
            right = torch.allclose(stub(q, k, window), expected)
            assert right == (window >= S), (L, S, window)
            assert torch.allclose(ex.solution_function()(q, k, window), expected)


def test_a7_handed_out_code_gets_row_0_right_and_every_later_row_wrong():
    from attncourse import apply_rope

    ex = get("bugs.partial_rope_attention")
    stub = stub_function(ex)
    rng = np.random.default_rng(7)
    L, E, R = 6, 8, 4
    q, k, v = rng.normal(size=(L, E)), rng.normal(size=(L, E)), rng.normal(size=(L, 3))
    # independent reference: the rotated part built by hand, pairs (i, i + R/2), frequencies of width R
    ang = np.arange(L)[:, None] * 10000.0 ** (-np.arange(0, R, 2) / R)

    def rot(x):
        a, b = x[:, : R // 2], x[:, R // 2 : R]
        return np.concatenate(
            [a * np.cos(ang) - b * np.sin(ang), a * np.sin(ang) + b * np.cos(ang), x[:, R:]], 1
        )

    s = rot(q) @ rot(k).T / np.sqrt(E) + np.triu(np.full((L, L), -np.inf), 1)
    w = np.exp(s - s.max(1, keepdims=True))
    expected = (w / w.sum(1, keepdims=True)) @ v
    np.testing.assert_allclose(ex.solution_function()(q, k, v, R), expected, rtol=1e-10)
    np.testing.assert_allclose(rot(q), np.concatenate([apply_rope(q[:, :R]), q[:, R:]], 1), rtol=1e-10)
    gap = np.abs(stub(q, k, v, R) - expected).max(axis=1)
    assert gap[0] < 1e-12 and (gap[1:] > 1e-6).all(), gap


def test_a5_handed_out_code_is_right_with_one_head_only():
    ex = get("bugs.fused_qkv_attention")
    stub, fixed = stub_function(ex), ex.solution_function()
    rng = np.random.default_rng(5)
    x, W = rng.normal(size=(2, 4, 6)), rng.normal(size=(6, 18))
    for n_heads in (1, 2, 3, 6):
        right = np.allclose(stub(x, W, n_heads), fixed(x, W, n_heads))
        assert right == (n_heads == 1), n_heads
    # the fixed code against head-by-head column slices, written out here
    dh = 2
    for h in range(3):
        cols = W[:, 3 * dh * h : 3 * dh * (h + 1)]
        q, k, v = x @ cols[:, :dh], x @ cols[:, dh : 2 * dh], x @ cols[:, 2 * dh :]
        s = q @ np.swapaxes(k, -1, -2) / np.sqrt(dh)
        w = np.exp(s - s.max(-1, keepdims=True))
        np.testing.assert_allclose(
            fixed(x, W, 3)[..., h * dh : (h + 1) * dh], (w / w.sum(-1, keepdims=True)) @ v
        )


def test_a2_handed_out_code_is_right_on_one_row_and_lists_the_grids_own_vectors_elsewhere():
    """A.2's symptom: right on a grid of one row; elsewhere every returned vector is some patch's."""
    pytest.importorskip("torch")  # the reference is the package's torch function
    from attncourse.vit import sinusoidal_positions_2d

    ex = get("bugs.grid_positions")
    stub, fixed = stub_function(ex), ex.solution_function()
    for gh, gw, d in [(1, 5, 8), (3, 3, 8), (2, 4, 12), (4, 2, 4)]:
        expected = sinusoidal_positions_2d(gh, gw, d).double().numpy()  # the package's, in float32
        np.testing.assert_allclose(fixed(gh, gw, d), expected, atol=1e-6)
        got = stub(gh, gw, d)
        assert np.allclose(got, expected, atol=1e-6) == (gh == 1), (gh, gw)
        # each returned vector is the vector of some patch of the grid
        assert all(np.abs(expected - row).max(axis=1).min() < 1e-6 for row in got)


def test_a3_handed_out_code_is_right_for_one_layer_only_and_its_maps_sum_to_1():
    from attncourse import attention_rollout, softmax

    ex = get("bugs.cls_rollout")
    stub, fixed = stub_function(ex), ex.solution_function()
    rng = np.random.default_rng(3)
    for n_layers in (1, 2, 3):
        w = softmax(3 * rng.normal(size=(n_layers, 2, 3, 5, 5)))
        expected = attention_rollout(list(w))[:, 0]  # the package's rollout, row 0
        np.testing.assert_allclose(fixed(w), expected, rtol=1e-12)
        got = stub(w)
        np.testing.assert_allclose(got.sum(-1), 1, rtol=1e-12)
        assert np.allclose(got, expected) == (n_layers == 1), n_layers


def test_a4_handed_out_code_drifts_with_the_decay_and_misreads_a_full_strength_write():
    from attncourse import delta_rule

    ex = get("bugs.gated_delta_layer")
    stub, fixed = stub_function(ex), ex.solution_function()
    rng = np.random.default_rng(4)
    H, L, E, Ev = 2, 6, 4, 3
    q, k, v = rng.normal(size=(H, L, E)), rng.normal(size=(H, L, E)), rng.normal(size=(H, L, Ev))
    a, b = rng.normal(size=(H, L)), rng.normal(size=(H, L))
    gaps = []
    for A_log in (-12.0, -2.0, 0.0, 1.0):  # exp(A_log) sets how fast the heads forget
        A, dt = np.full(H, A_log), np.zeros(H)
        alpha = np.exp(-np.exp(A)[:, None] * np.log1p(np.exp(a)))
        unit = [x / np.linalg.norm(x, axis=-1, keepdims=True) for x in (q, k)]
        expected = delta_rule(*unit, v, 1 / (1 + np.exp(-b)), decay=alpha)[0]
        np.testing.assert_allclose(fixed(q, k, v, a, b, A, dt), expected, rtol=1e-10, atol=1e-12)
        gaps.append(np.abs(stub(q, k, v, a, b, A, dt) - expected).max())
    assert gaps[0] < 1e-5 and gaps[0] < gaps[1] < gaps[2] < gaps[3], gaps
    # a full-strength write (b large): the fixed layer reads its key back as its value, the stub does not
    b_full = np.full((H, L), 40.0)
    A, dt = np.zeros(H), np.zeros(H)
    kn = k / np.linalg.norm(k, axis=-1, keepdims=True)
    for fn, exact in ((fixed, True), (stub, False)):
        out = fn(kn, k, v, a, b_full, A, dt)  # the queries are the keys: out_t = k_t S_t / sqrt(E)
        assert np.allclose(out * np.sqrt(E), v, atol=1e-8) == exact
