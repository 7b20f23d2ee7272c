"""The exercises of every kind: each solution earns full marks on its public and hidden cases, the
student version (a stub, or the buggy code of a ``diagnose`` exercise) earns nothing, and every
classic wrong answer the exercise anticipates gets its own diagnosis."""

from __future__ import annotations

import warnings
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from exercise_support import load_hidden_cases

from attncourse import apply_rope, softmax
from attncourse.exercises import CHAPTERS, all_exercises, check, get, reset
from attncourse.exercises.engine.check import run_cases
from attncourse.exercises.engine.compare import Outcome, expected_outputs, judge
from attncourse.exercises.engine.notebook import replace_solutions
from attncourse.exercises.engine.outputs import to_arrays
from attncourse.exercises.engine.registry import KINDS, STUB_LINE
from attncourse.pooling import nadaraya_watson

ROOT = Path(__file__).resolve().parents[1]
HIDDEN = load_hidden_cases(ROOT / "hidden_cases")
EXERCISES = all_exercises()
# The exercises of the kinds beyond "implement", and those of chapters 0, 8 and 9.
NEW = [ex for ex in EXERCISES if ex.kind != "implement" or ex.chapter in ("ch00", "ch08", "ch09")]
NEW_IDS = [ex.id for ex in NEW]


def _needs_torch(ex):
    if ex.array_kind == "torch" or any("torch" in line for line in ex.needs):
        pytest.importorskip("torch")


def _compile(ex, source):
    namespace: dict = {}
    exec("\n".join(ex.needs), namespace)  # noqa: S102 - the course's own solution and stub
    exec(source, namespace)  # noqa: S102
    return namespace[ex.function]


def _quiet(fn, *args):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")  # a wrong answer may well overflow or divide 0 by 0
        return fn(*args)


def _all_cases(ex):
    return ex.public_cases() + HIDDEN[ex.id]()


@pytest.fixture(autouse=True)
def _fresh_scores():
    reset()
    yield
    reset()


# ----------------------------------------------------------------------------- the targets


def test_every_chapter_has_four_exercises_of_two_kinds():
    for key in CHAPTERS:
        if key == "bugs":
            continue
        exercises = all_exercises(key)
        assert len(exercises) >= 4, (key, len(exercises))
        assert len({ex.kind for ex in exercises}) >= 2, (key, [ex.kind for ex in exercises])


def test_a_third_of_the_points_are_not_implement():
    points = Counter()
    for ex in EXERCISES:
        points[ex.kind] += ex.points
    assert set(points) <= set(KINDS)
    assert set(points) == set(KINDS), points  # every kind is used
    share = 1 - points["implement"] / sum(points.values())
    assert share >= 1 / 3, (share, points)


def test_the_appendix_exercises_are_diagnose_or_predict_a_bugs_symptom():
    bugs = all_exercises("bugs")
    assert bugs and all(ex.kind in ("diagnose", "predict") for ex in bugs)
    # a find-the-bug exercise shows the buggy line, not a blank
    assert all(ex.stub for ex in bugs if ex.kind == "diagnose")
    assert sum(ex.kind == "diagnose" for ex in bugs) > len(bugs) / 2


@pytest.mark.parametrize("ex_id", NEW_IDS)
def test_shape_of_an_exercise(ex_id):
    ex = get(ex_id)
    assert ex.description and ex.points >= 1
    assert ex_id in HIDDEN and HIDDEN[ex_id]()
    for case in _all_cases(ex):
        assert tuple(case.inputs) == ex.params, (ex_id, case.name)
    if ex.kind == "predict":
        assert ex.params == (), "a prediction is a zero-argument function"
    if ex.kind == "diagnose":
        assert ex.stub, "a diagnose exercise shows the buggy code in the student version"
    if ex.kind != "predict":  # arrays: some hidden case has batch dims, float32, L != S or a mask
        assert len(HIDDEN[ex_id]()) >= 2, ex_id


# ----------------------------------------------------------------------------- grading


@pytest.mark.parametrize("ex_id", NEW_IDS)
def test_the_solution_scores_full_marks_on_public_and_hidden_cases(ex_id):
    ex = get(ex_id)
    _needs_torch(ex)
    fn = ex.solution_function()
    result = check(ex_id, fn, show=False)
    assert result.passed and result.earned == ex.points, result.text()
    hidden = run_cases(ex, fn, HIDDEN[ex_id](), hidden=True)
    assert all(r.passed for r in hidden), [r.message for r in hidden if not r.passed]


@pytest.mark.parametrize("ex_id", NEW_IDS)
def test_the_student_version_scores_zero(ex_id):
    ex = get(ex_id)
    _needs_torch(ex)
    fn = _compile(ex, replace_solutions(ex.solution, ex.stub))
    result = check(ex_id, fn, show=False)
    assert result.earned == 0, result.text()
    hidden = run_cases(ex, fn, HIDDEN[ex_id](), hidden=True)
    assert not any(r.passed for r in hidden), ex_id
    if ex.stub in (None, STUB_LINE):  # a blank to fill, not buggy code
        assert result.not_attempted, result.text()
    else:  # the buggy code is recognised (by name: a find-the-bug exercise shows it with the hint)
        names = {d.name for d in ex.diagnoses}
        assert any(r.diagnosis in names for r in result.cases + hidden), result.text()


@pytest.mark.parametrize("ex_id", NEW_IDS)
def test_zeros_score_nothing(ex_id):
    ex = get(ex_id)
    _needs_torch(ex)
    for case in _all_cases(ex):
        expected = expected_outputs(ex, case)
        zeros = Outcome("returned", [np.zeros_like(e) for e in expected])
        assert not judge(ex, case, expected, zeros).passed, (ex_id, case.name)


@pytest.mark.parametrize(
    "ex_id, which",
    [(ex.id, i) for ex in NEW for i, d in enumerate(ex.diagnoses) if d.variant is not None],
)
def test_each_classic_mistake_gets_its_diagnosis(ex_id, which):
    ex = get(ex_id)
    _needs_torch(ex)
    diagnosis = ex.diagnoses[which]
    hits, failed = 0, 0
    for case in _all_cases(ex):
        wrong = _quiet(diagnosis.variant, *case.args())
        if wrong is None:
            continue
        expected = expected_outputs(ex, case)
        result = judge(ex, case, expected, Outcome("returned", to_arrays(wrong, ex.outputs)))
        failed += not result.passed  # (a mistake may be harmless on a case, e.g. equal distances)
        hits += result.diagnosis == diagnosis.name  # shown as its message, or with the hint (diagnose)
    assert failed >= 1, "the wrong answer passes every case"
    assert hits >= 1, f"no case shows the diagnosis {diagnosis.message!r}"


# ----------------------------------------------------------------------------- predict


def test_a_prediction_is_graded_with_its_stated_tolerance():
    ex = get("ch03.predict_cosine_factor")
    assert ex.tolerance is not None
    rtol = ex.tolerance[0]
    exact = [float(np.asarray(o).reshape(-1)[0]) for o in expected_outputs(ex, ex.public_cases()[0])]
    assert check(ex.id, lambda: tuple(x * (1 + rtol / 2) for x in exact), show=False).passed  # close enough
    assert not check(
        ex.id, lambda: tuple(x * 10 for x in exact), show=False
    ).passed  # a wrong order of magnitude
    assert not check(ex.id, lambda: tuple(x * (1 + 3 * rtol) for x in exact), show=False).passed


# ----------------------------------------------------------------------------- the answers are true
# A prediction's reference, and a derived closed form, are checked against what the code measures.


def _answer(ex_id, *args):
    ex = get(ex_id)
    return np.asarray(ex.reference(*args)) if len(ex.outputs) == 1 else ex.reference(*args)


def test_parameter_counts_are_what_torch_counts():
    pytest.importorskip("torch")
    from attncourse import TransformerBlock

    def count(module):
        return sum(p.numel() for p in module.parameters())

    assert _answer("ch08.predict_block_parameters") == count(TransformerBlock(d_model=64, n_heads=4))


def test_the_numeric_predictions_hold():
    limit = float(_answer("ch01.predict_overflow_logit"))
    with np.errstate(over="ignore"):
        for x, finite in ((limit * 0.995, True), (limit * 1.005, False)):
            row = np.exp(np.full(1000, x, dtype=np.float32))
            assert np.isfinite(row).all() and np.isfinite(row.sum(dtype=np.float32)) == finite
    rng = np.random.default_rng(0)
    q, k = rng.normal(size=(2, 40000, 128))  # unit-length q and k times tau spread as q . k / sqrt(d_k)
    unit = (q * k).sum(-1) / (np.linalg.norm(q, axis=-1) * np.linalg.norm(k, axis=-1))
    scaled = (q * k).sum(-1) / np.sqrt(128)
    assert abs((float(_answer("ch03.predict_cosine_factor")) * unit).std() / scaled.std() - 1) < 0.05
    keys = np.array([[3, 0], [1.2, 1], [0, 2], [-1, 0], [1, 0.1], [0, -0.5]])  # 2.4's six keys
    turns = np.linspace(0, 2 * np.pi, 200000, endpoint=False)
    queries = np.stack([np.cos(turns), np.sin(turns)], axis=1)  # every direction; length does not rank
    c = float(_answer("ch02.predict_key_stretch"))
    for stretch, wins in ((1.0, False), (0.995 * c, False), (1.005 * c, True)):  # k4 as given, just below, above
        stretched = keys.copy()
        stretched[4] *= stretch
        assert ((queries @ stretched.T).argmax(axis=1) == 4).any() == wins, stretch
    from attncourse import alibi_bias

    weights = softmax(alibi_bias(16, 4096)[:, -1, :])  # (16, 4096): the last query, equal content scores
    assert np.allclose(weights[2, -2:], [0.2091, 0.2978], atol=5e-5)  # what 7.7's prompt gives for head 2
    for H in (4, 8, 32):  # no other power of two gives those weights
        assert abs(softmax(alibi_bias(H, 4096)[:, -1, :])[2, -1] - 0.2978) > 0.01
    assert np.isclose(_answer("ch07.predict_alibi_head_weight"), weights[4, -1], rtol=1e-9)

    def tile_bytes(b):  # three float16 blocks of b x 128 and the float32 b x b scores, as arrays
        return 3 * np.zeros((b, 128), dtype=np.float16).nbytes + np.zeros((b, b), dtype=np.float32).nbytes

    b = int(_answer("ch09.predict_tile_size"))
    assert b % 16 == 0 and tile_bytes(b) <= 228 * 1024 < tile_bytes(b + 16)
    blocks = np.arange(16)  # tile (i, j) is needed when its first key is not after its last query
    needed = (blocks[None, :] * 256 <= blocks[:, None] * 256 + 255).sum()
    assert _answer("ch09.predict_causal_tiles") == needed
    torch = pytest.importorskip("torch")
    cross = [torch.nn.Linear(i, o) for i, o in ((512, 64), (768, 64), (768, 80), (80, 512))]  # biases on
    assert _answer("ch04.predict_cross_projection_parameters") == sum(
        p.numel() for m in cross for p in m.parameters()
    )
    # the recovered value projection is the one a layer was built with (the layer written out here)
    rng = np.random.default_rng(7)
    x, (W_q, W_k), W_v = rng.normal(size=(9, 4)), rng.normal(size=(2, 4, 3)), rng.normal(size=(4, 2))
    out = softmax((x @ W_q) @ (x @ W_k).T / np.sqrt(3)) @ (x @ W_v)
    assert np.allclose(_answer("ch04.recover_value_projection", x, W_q, W_k, out), W_v)


def test_the_derived_closed_forms_hold():
    rng = np.random.default_rng(1)
    # a layer's scale read back from the weights torch's softmax gives it, saturated rows included
    torch = pytest.importorskip("torch")
    for E, c, length in ((16, 0.25, 1.0), (64, 0.125, 1.0), (32, 3.0, 20.0), (8, 1.0, 100.0)):
        q, k = length * rng.normal(size=(2, 5, E)), rng.normal(size=(2, 9, E))
        weights = torch.softmax(c * torch.from_numpy(q) @ torch.from_numpy(k).transpose(-1, -2), dim=-1)
        assert abs(_answer("ch03.recover_scale", q, k, weights.numpy()) / c - 1) < 1e-9
    # the initialisation whose unscaled scores have variance 1: W_q, W_k drawn with that std
    d_model, d_k, token_var = 64, 128, 2.0
    sigma = float(_answer("ch03.init_std_for_unscaled_scores", d_k, d_model, token_var))
    x, x2 = rng.normal(scale=np.sqrt(token_var), size=(2, 20000, d_model))
    scores = [
        (
            x
            @ rng.normal(scale=sigma, size=(d_model, d_k))
            * (x2 @ rng.normal(scale=sigma, size=(d_model, d_k)))
        ).sum(-1)
        for _ in range(20)
    ]
    assert abs(np.var(scores) - 1) < 0.1
    # the logit gap gives the leader weight p
    for p, n in ((0.9, 10), (0.5, 3)):
        logits = np.zeros(n)
        logits[0] = _answer("ch01.logit_gap", p, n)
        assert np.isclose(softmax(logits)[0], p)
    # the ratio of two Nadaraya-Watson weights
    x_key = np.array([0.3, -1.0, 2.0])
    _, weights = nadaraya_watson(np.array([0.0]), x_key, np.zeros(3), width=0.7)
    assert np.isclose(weights[0, 0] / weights[0, 1], _answer("ch00.kernel_weight_ratio", 0.3, -1.0, 0.7))
    # equal scores under a padding mask, key 0 favoured by delta: the entropy of the masked softmax
    lengths, S = np.array([5, 2, 1, 0]), 5
    for delta in (0.0, 1.3, -2.0):
        scores = np.full((4, S), 0.7)
        scores[:, 0] += delta
        weights = softmax(np.where(np.arange(S)[None, :] < lengths[:, None], scores, -np.inf))
        with np.errstate(divide="ignore", invalid="ignore"):
            entropy = -np.where(weights > 0, weights * np.log(weights), 0.0).sum(-1)
        np.testing.assert_allclose(
            entropy, _answer("ch06.boosted_key_entropy", lengths, S, delta), atol=1e-12
        )
    # RoPE undone: the positions a vector was turned at come back, for every position below 2000
    x7 = rng.normal(size=(2000, 10))
    p7 = rng.permutation(2000)
    assert np.array_equal(_answer("ch07.rope_position", x7, apply_rope(x7, p7)), p7)
    # learned ALiBi slopes: weights made by torch's attention with an additive bias, then read back
    torch = pytest.importorskip("torch")
    slopes7 = np.array([0.7, 0.05, 1.9])
    s7 = rng.normal(size=(3, 6, 6))
    dist = torch.arange(6)[:, None] - torch.arange(6)[None, :]
    bias7 = (-torch.tensor(slopes7)[:, None, None] * dist).masked_fill(dist < 0, float("-inf"))
    w7 = torch.softmax(torch.tensor(s7) + bias7, dim=-1).numpy()
    np.testing.assert_allclose(_answer("ch07.recover_alibi_slopes", s7, w7), slopes7, atol=1e-9)
    # a chunk of C queries against a cache of S: the last C rows of full causal ALiBi attention
    from attncourse import alibi_bias

    B, H, C, S = 2, 4, 3, 8
    q8, k8, v8 = rng.normal(size=(B, H, S, 5)), rng.normal(size=(B, H, S, 5)), rng.normal(size=(B, H, S, 2))
    ahead = torch.ones(S, S, dtype=torch.bool).triu(1)  # keys after their query
    bias8 = torch.tensor(alibi_bias(H, S)).masked_fill(ahead, float("-inf"))
    full = torch.nn.functional.scaled_dot_product_attention(
        *(torch.tensor(a) for a in (q8, k8, v8)), attn_mask=bias8
    )
    out8, _ = _answer("ch07.alibi_chunk_attention", q8[:, :, -C:], k8, v8)
    np.testing.assert_allclose(out8, full[:, :, -C:].numpy(), atol=1e-10)


def test_the_references_agree_with_the_package_and_torch():
    torch = pytest.importorskip("torch")
    from attncourse import KVCache, TransformerBlock, cached_attention

    rng = np.random.default_rng(2)
    n = rng.normal
    # the parallel block: the sublayers of TransformerBlock without biases, gamma = 1, the same weights
    d, d_ff, heads = 8, 16, 2
    x, W_q, W_k, W_v, W_o = n(size=(2, 5, d)), *(n(size=(d, d)) / 3 for _ in range(4))
    W_1, W_2 = n(size=(d, d_ff)) / 3, n(size=(d_ff, d)) / 4
    block = TransformerBlock(d, heads, d_ff, bias=False).double()
    with torch.no_grad():
        for lin, W in (
            (block.attn.q_proj, W_q),
            (block.attn.k_proj, W_k),
            (block.attn.v_proj, W_v),
            (block.attn.out_proj, W_o),
            (block.mlp.up, W_1),
            (block.mlp.down, W_2),
        ):
            lin.weight.copy_(torch.from_numpy(W.T))  # nn.Linear computes x @ weight.T
        xt = torch.from_numpy(x)
        h = block.norm1(xt)  # gamma = 1, beta = 0 at initialisation: the plain layer norm
        ours = xt + block.attn(h, is_causal=True)[0] + block.mlp(h)  # both sublayers read one LN(x)
    ref = _answer("ch08.parallel_block", x, W_q, W_k, W_v, W_o, W_1, W_2, heads)
    np.testing.assert_allclose(ref, ours.numpy(), rtol=1e-10, atol=1e-12)
    # the preallocated cache gives each sequence what the package's growing KVCache gives it alone
    lengths = np.array([3, 0, 5])
    q, k_new, v_new = n(size=(3, 1, 4)), n(size=(3, 1, 4)), n(size=(3, 1, 2))
    k_cache, v_cache = n(size=(3, 6, 4)), n(size=(3, 6, 2))
    out, k_after, _ = _answer("ch09.static_cache_step", q, k_new, v_new, k_cache, v_cache, lengths)
    for b, t in enumerate(lengths):
        cache = KVCache()
        cache.append(k_cache[b, :t], v_cache[b, :t])
        expected = cached_attention(q[b], k_new[b], v_new[b], cache)
        np.testing.assert_allclose(out[b], expected, rtol=1e-10)
        np.testing.assert_allclose(k_after[b, : t + 1], cache.k, rtol=0)
    # the fixed online pass agrees with the two-pass softmax on rows far below zero
    scores, values = n(size=(2, 7)) + np.array([[-900.0], [3.0]]), n(size=(7, 3))
    expected = softmax(scores) @ values
    np.testing.assert_allclose(_answer("ch09.fix_running_max", scores, values, 3), expected, rtol=1e-10)
    # the head-split fix is ac.MultiHeadAttention with the same weights (x @ W, no biases)
    from attncourse import MultiHeadAttention

    x, Ws = n(size=(2, 5, 8)), [n(size=(8, 8)) / 3 for _ in range(4)]
    mha = MultiHeadAttention(8, 4, bias=False).double()
    with torch.no_grad():
        for lin, W in zip((mha.q_proj, mha.k_proj, mha.v_proj, mha.out_proj), Ws):
            lin.weight.copy_(torch.from_numpy(W.T))
        out, weights = mha(torch.from_numpy(x))
    ref_out, ref_weights = _answer("ch05.mha_forward", x, *Ws, 4)
    np.testing.assert_allclose(ref_out, out.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(ref_weights, weights.numpy(), rtol=1e-10, atol=1e-12)
    # nn.MultiheadAttention with keys and values of other widths
    layer = torch.nn.MultiheadAttention(64, 4, kdim=32, vdim=48)
    assert _answer("ch05.predict_kdim_vdim_parameters") == sum(p.numel() for p in layer.parameters())
    # merging the two halves' states gives attention over all keys
    s, v = n(size=(3, 9)), n(size=(9, 2))
    from attncourse.exercises.chapters.ch09 import _partial

    _, l, acc = _answer("ch09.merge_partials", *_partial(s[:, :4], v[:4]), *_partial(s[:, 4:], v[4:]))
    np.testing.assert_allclose(acc / l[:, None], softmax(s) @ v, rtol=1e-10)


@pytest.mark.parametrize("ex_id", [i for i in NEW_IDS if not i.startswith("bugs.")])
def test_the_hidden_cases_include_float32_where_inputs_are_floats(ex_id):
    def float_dtypes(cases):
        return {
            a.dtype
            for c in cases
            for a in c.inputs.values()
            if isinstance(a, np.ndarray) and a.dtype.kind == "f"
        }

    ex = get(ex_id)
    if float_dtypes(ex.public_cases()):
        assert np.dtype(np.float32) in float_dtypes(HIDDEN[ex_id]()), ex_id


# ----------------------------------------------------------------------------- chapters 9-11: feedback and ideas
def _points_everywhere(ex_id, fn):
    """(check's points, the grader's points on public and hidden cases) of one answer."""
    from attncourse.exercises.engine.scoring import points_earned

    ex = get(ex_id)
    reset()
    in_check = check(ex_id, fn, show=False).earned
    return in_check, points_earned(ex, run_cases(ex, fn, ex.public_cases() + list(HIDDEN[ex_id]())))


def _online(scores, values, block_size, start):
    m = np.full(scores.shape[:-1], start) if np.ndim(start) == 0 else start
    l, acc = np.zeros(scores.shape[:-1]), np.zeros(scores.shape[:-1] + (values.shape[-1],))
    for j in range(0, scores.shape[-1], block_size):
        s = scores[..., j : j + block_size]
        m_new = np.maximum(m, s.max(axis=-1))
        p, r = np.exp(s - m_new[..., None]), np.exp(m - m_new)
        l, acc, m = l * r + p.sum(-1), acc * r[..., None] + p @ values[..., j : j + block_size, :], m_new
    return acc / l[..., None]


def _online_from_mean(scores, values, block_size):  # every exponent measured from the row's mean
    m = scores.mean(axis=-1)
    l, acc = np.zeros(scores.shape[:-1]), np.zeros(scores.shape[:-1] + (values.shape[-1],))
    for j in range(0, scores.shape[-1], block_size):
        p = np.exp(scores[..., j : j + block_size] - m[..., None])
        l, acc = l + p.sum(-1), acc + p @ values[..., j : j + block_size, :]
    return acc / l[..., None]


@pytest.mark.parametrize(
    "fn, diagnosis",
    [
        (lambda s, v, b: _online(s, v, b, -1e4), "running maximum starts above the scores"),
        (_online_from_mean, "exponents not measured from the maximum"),
    ],
    ids=["started at -1e4", "row mean instead of a running maximum"],
)
def test_9_6_a_finite_start_or_a_row_mean_earns_less_than_full_marks_everywhere(fn, diagnosis):
    ex = get("ch09.online_attention")
    in_check, in_grader = _points_everywhere(ex.id, fn)
    assert in_check < ex.points and in_grader < ex.points
    # where the answer fails, it is told what its own output shows: the named mistake, or the NaN
    failed = [r for r in run_cases(ex, fn, ex.public_cases()) if not r.passed]
    assert failed and all(r.diagnosis in ("", diagnosis) for r in failed)
    assert all(
        r.diagnosis == diagnosis or "nan" in r.message.lower() or "inf" in r.message.lower() for r in failed
    )


def test_9_6_the_fixed_loop_gets_full_marks():
    ex = get("ch09.online_attention")
    assert _points_everywhere(ex.id, lambda s, v, b: _online(s, v, b, -np.inf)) == (ex.points, ex.points)


def test_9_2_the_block_gradients_are_autograd_s():
    torch = pytest.importorskip("torch")
    from attncourse.exercises.chapters.ch09 import _forward_state

    rng = np.random.default_rng(92)
    q, k, v, dout = (
        rng.normal(size=(2, 3, 4)),
        rng.normal(size=(2, 7, 4)),
        rng.normal(size=(2, 7, 2)),
        rng.normal(size=(2, 3, 2)),
    )
    out, lse = _forward_state(q, k, v)
    tq, tk, tv = (torch.tensor(a, requires_grad=True) for a in (q, k, v))
    (torch.softmax(tq @ tk.transpose(-1, -2) / 2.0, -1) @ tv).backward(torch.tensor(dout))
    dk, dv = _answer("ch09.key_block_grads", q, k[:, 2:5], v[:, 2:5], dout, out, lse)
    np.testing.assert_allclose(dk, tk.grad[:, 2:5].numpy(), atol=1e-12)
    np.testing.assert_allclose(dv, tv.grad[:, 2:5].numpy(), atol=1e-12)


@pytest.mark.parametrize(
    "ex_id, answer, banned",
    [
        ("ch09.predict_tile_size", 176, ["leaves out", "three blocks"]),  # the root rounded up
        ("ch09.predict_causal_tiles", 120, ["n (n + 1)", "n (n - 1)", "/ 2"]),
        ("ch09.predict_causal_tiles", 128, ["n^2", "n (n + 1)", "128"]),
        ("ch11.predict_cache_gib", 48.0, ["5 times", "times the cache"]),  # every layer keeps every token
        ("ch11.predict_cache_gib", 37.0, ["4 times", "times the cache"]),  # query heads
        ("ch11.predict_cache_gib", 4.625, ["half the cache"]),  # keys only
    ],
)
def test_predict_feedback_names_the_mistake_without_the_quantity(ex_id, answer, banned):
    reset()
    result = check(ex_id, lambda: answer, show=False)
    assert result.earned == 0
    text = result.text()
    assert not any(b in text for b in banned), text


def test_9_4_the_root_rounded_up_is_not_told_a_block_is_missing():
    reset()
    text = check("ch09.predict_tile_size", lambda: 176, show=False).text()
    assert "does not fit" in text


def test_chapters_9_to_11_diagnose_ids_titles_and_stubs_do_not_name_the_cause():
    causes = {
        "ch09.online_attention": ["running_max", "running max", "-inf", "zero"],
        "ch10.padded_patch_mask": ["ceil", "edge", "partial", "floor"],
        "ch11.ring_buffer_decode": ["empty", "unwritten", "slots written", "forget"],
    }
    for ex_id, words in causes.items():
        ex = get(ex_id)
        stub_comments = " ".join(
            line.split("#", 1)[1] for line in (ex.stub or "").splitlines() if "#" in line
        )
        for text in (ex.id, ex.title, stub_comments, ex.description):
            assert not any(w in text.lower() for w in words), (ex_id, text)
