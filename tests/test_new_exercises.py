"""The exercises of every kind: each solution earns full marks on its public and hidden cases, the
student version (a stub, or the buggy code of a ``diagnose`` exercise) earns nothing, and every
classic wrong answer the exercise anticipates gets its own diagnosis."""

from __future__ import annotations

import warnings
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from exercise_support import load_hidden_cases, stub_function

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


def test_a_head_switched_off_through_its_values_differs_as_the_reference_says():
    # 8.1: on every case, the package's attention with made-up query and key weights, switched off
    # both ways (out_proj's columns; v_proj.weight's rows), differs by what the reference returns
    torch = pytest.importorskip("torch")
    import copy

    from attncourse import MultiHeadAttention

    ex = get("ch08.value_ablation_difference")
    torch.manual_seed(0)
    for case in _all_cases(ex):
        a = case.inputs
        d, H, head = a["out_weight"].shape[0], a["n_heads"], a["head"]
        attn = MultiHeadAttention(d, H).double().eval()  # random q_proj and k_proj
        with torch.no_grad():
            for lin, w, b in ((attn.v_proj, "v_weight", "v_bias"), (attn.out_proj, "out_weight", "out_bias")):
                lin.weight.copy_(torch.from_numpy(a[w].astype(np.float64)))
                lin.bias.copy_(torch.from_numpy(a[b].astype(np.float64)))
        first, second = copy.deepcopy(attn), copy.deepcopy(attn)
        cols = slice(head * (d // H), (head + 1) * (d // H))
        x = torch.from_numpy(a["x"].astype(np.float64))
        with torch.no_grad():
            first.out_proj.weight[:, cols] = 0
            second.v_proj.weight[cols, :] = 0
            diff = (second(x, is_causal=True)[0] - first(x, is_causal=True)[0]).numpy()
        np.testing.assert_allclose(_answer(ex.id, *case.args()), diff, atol=1e-12)
        assert np.abs(diff).max() > 1e-2, case.name  # the two ablations differ


def test_the_numeric_predictions_hold():
    rng = np.random.default_rng(0)
    q, k = rng.normal(size=(2, 40000, 128))  # unit-length q and k times tau spread as q . k / sqrt(d_k)
    unit = (q * k).sum(-1) / (np.linalg.norm(q, axis=-1) * np.linalg.norm(k, axis=-1))
    scaled = (q * k).sum(-1) / np.sqrt(128)
    assert abs((float(_answer("ch03.predict_cosine_factor")) * unit).std() / scaled.std() - 1) < 0.05
    keys = np.array([[3, 0], [1.2, 1], [0, 2], [-1, 0], [1, 0.1], [0, -0.5]])  # 2.4's six keys
    turns = np.linspace(0, 2 * np.pi, 200000, endpoint=False)
    queries = np.stack([np.cos(turns), np.sin(turns)], axis=1)  # every direction; length does not rank
    c = float(_answer("ch02.predict_key_stretch"))
    for stretch, wins in (
        (1.0, False),
        (0.995 * c, False),
        (1.005 * c, True),
    ):  # k4 as given, just below, above
        stretched = keys.copy()
        stretched[4] *= stretch
        assert ((queries @ stretched.T).argmax(axis=1) == 4).any() == wins, stretch
    from attncourse import alibi_bias

    # 7.7: an encoder's ALiBi, the causal bias of the package's last query mirrored to both sides
    last = alibi_bias(8, 4096)[1, -1, :]  # (4096,): -m (4095 - j), head 1 of 8
    # keys 0, 1, 2 as the causal row's last three; keys 3 .. 4095 as its keys 1 .. 4093 back
    encoder = np.concatenate([last[-3:], last[::-1][1:4094]])
    assert encoder.shape == (4096,) and np.isclose(encoder[0], 2 * last[-2])
    assert np.isclose(_answer("ch07.predict_encoder_alibi_weight"), softmax(encoder)[2], rtol=1e-9)

    # 4.5: a layer with a random shared W_Q = W_K and embeddings, run on the sentence; its distinct weights counted
    rng = np.random.default_rng(7)
    words = "the cat saw the dog and the dog saw the cat".split()
    table = {w: rng.normal(size=4) for w in sorted(set(words))}
    x = np.array([table[w] for w in words])  # (11, 4)
    W_q, W_k, W_v = rng.normal(size=(3, 4, 3))
    shared = softmax((x @ W_q) @ (x @ W_q).T / np.sqrt(3) / 4)  # W_Q = W_K = W_q / 2, no weight near 0
    assert len(np.unique(shared.round(12))) == _answer("ch04.predict_distinct_weights")
    weights = softmax((x @ W_q) @ (x @ W_k).T / np.sqrt(3))
    # 4.3: the answer equals the layer rerun on the sentence without token j (the layer written out here)
    for j in (0, 4, 10):
        y = np.delete(x, j, axis=0)
        rerun = softmax((y @ W_q) @ (y @ W_k).T / np.sqrt(3)) @ (y @ W_v)
        assert np.allclose(
            _answer("ch04.output_without_token", weights @ (x @ W_v), weights, x @ W_v, j), rerun
        )
    # 4.4: the answer equals the layer rerun with biases on its keys and values
    b_k, b_v = rng.normal(size=(2, 3))
    q, k, v = x @ W_q, x @ W_k + b_k, x @ W_v + b_v
    biased = softmax(q @ k.T / np.sqrt(3))
    got_out, got_weights = _answer("ch04.add_projection_biases", q, weights @ (x @ W_v), weights, b_k, b_v)
    assert np.allclose(got_weights, biased) and np.allclose(got_out, biased @ v)
    # 4.6: the fixed block loop equals the layer for every block size
    full = weights @ (x @ W_v)
    for block in (1, 2, 4, 11, 20):
        assert np.allclose(_answer("ch04.self_attention_in_blocks", x, W_q, W_k, W_v, block), full)


def test_the_derived_closed_forms_hold():
    rng = np.random.default_rng(1)
    # a layer's scale read back from the weights torch's softmax gives it, saturated rows included
    torch = pytest.importorskip("torch")
    for E, c, length in ((16, 0.25, 1.0), (64, 0.125, 1.0), (32, 3.0, 20.0), (8, 1.0, 100.0)):
        q, k = length * rng.normal(size=(2, 5, E)), rng.normal(size=(2, 9, E))
        weights = torch.softmax(c * torch.from_numpy(q) @ torch.from_numpy(k).transpose(-1, -2), dim=-1)
        candidates = np.array([c / 2, c, 2 * c, 1 / np.sqrt(E), 1.0])
        assert abs(_answer("ch03.recover_scale", q, k, weights.numpy(), candidates) / c - 1) < 1e-9
    # two-part scores: torch's own attention over the concatenated parts (its default scale reads the
    # concatenated width), and scores of variance 1 when every entry is N(0, 1)
    Dc, Dr, H, L, S = 24, 8, 3, 2, 5
    q_c, k_c, q_r = rng.normal(size=(H, L, Dc)), rng.normal(size=(H, S, Dc)), rng.normal(size=(H, L, Dr))
    k_r, v = rng.normal(size=(S, Dr)), rng.normal(size=(H, S, 4))
    q_t = torch.from_numpy(np.concatenate([q_c, q_r], -1))
    k_t = torch.from_numpy(np.concatenate([k_c, np.broadcast_to(k_r, (H, S, Dr))], -1))
    out_t = torch.nn.functional.scaled_dot_product_attention(q_t, k_t, torch.from_numpy(v))
    assert np.allclose(_answer("ch03.two_part_attention", q_c, k_c, q_r, k_r, v)[0], out_t.numpy())
    n = 20000
    a = rng.normal(size=(4, n, 1, Dc + Dr))
    scores = (a[0, ..., :Dc] * a[1, ..., :Dc]).sum(-1) + (a[2, ..., :Dr] * a[3, ..., :Dr]).sum(-1)
    assert abs(np.var(scores / np.sqrt(Dc + Dr)) - 1) < 0.05
    # chapter 1's references against torch's own functions and autograd
    torch = pytest.importorskip("torch")
    t, s = rng.normal(size=(3, 5)) * 3, rng.normal(size=(3, 5))
    kl = torch.nn.functional.kl_div(
        torch.log_softmax(torch.from_numpy(s), -1),
        torch.log_softmax(torch.from_numpy(t), -1),
        log_target=True,
        reduction="none",
    ).sum(-1)
    assert np.allclose(_answer("ch01.attention_kl", t, s), kl.numpy())
    z = np.array([-1000.0, -30.0, -1.0, 0.0, 2.0, 30.0, 1000.0])
    assert np.allclose(
        _answer("ch01.log_sigmoid", z), torch.nn.functional.logsigmoid(torch.from_numpy(z)).numpy()
    )
    x = rng.normal(size=(2, 6)) * 4
    T = torch.tensor(0.3, dtype=torch.float64, requires_grad=True)
    (T * torch.logsumexp(torch.from_numpy(x) / T, dim=-1)).sum().backward()
    assert np.isclose(_answer("ch01.smooth_max_slope", x, 0.3).sum(), T.grad.item())
    # 0.2: class c's probability is the chapter's nadaraya_watson with value 1 on class c's keys, 0 elsewhere
    x_key, label = rng.uniform(0, 4, 9), np.array([0, 3, 3, 1, 0, 3, 1, 0, 3])
    x_query = np.array([-3.0, 0.5, 2.0, 3.9, 7.0])
    per_class = [nadaraya_watson(x_query, x_key, (label == c).astype(float), 0.6)[0] for c in range(5)]
    assert np.allclose(
        _answer("ch00.kernel_classifier", x_query, x_key, label, 5, 0.6), np.stack(per_class, -1)
    )
    # 0.5: the chapter's nadaraya_watson on the raw readings, whose means per place are y_mean
    x_place, count = np.array([0.0, 0.7, 2.0, 3.5]), np.array([3, 1, 6, 2])
    keys = np.repeat(x_place, count)
    raw = rng.normal(size=len(keys))
    y_mean = np.array([raw[keys == p].mean() for p in x_place])
    x_query = np.array([-2.0, 0.3, 1.4, 2.9, 6.0])
    on_raw, _ = nadaraya_watson(x_query, keys, raw, 0.8)
    assert np.allclose(_answer("ch00.regression_from_counts", x_query, x_place, count, y_mean, 0.8), on_raw)
    # 6.10: each mask run through a cache one token at a time and over the whole sequence at once
    from attncourse import scaled_dot_product_attention
    from attncourse.exercises.chapters.ch06.kv_cache_masks import _cache_stack

    L6 = 6
    specs = [("causal",), ("window", 2), ("prefix", 3), ("leak", 2, 4), ("two-sided window", 2)]
    specs += [("global last",), ("packed", 3), ("left padded", 2), ("padded both ways", 4)]
    masks = _cache_stack(L6, *specs)
    q6, k6, v6 = (rng.normal(size=(L6, 3)) for _ in range(3))
    first = []
    for m in masks:
        full, _ = scaled_dot_product_attention(q6, k6, v6, m)
        cached = np.concatenate(
            [
                scaled_dot_product_attention(q6[t : t + 1], k6[: t + 1], v6[: t + 1], m[t : t + 1, : t + 1])[
                    0
                ]
                for t in range(L6)
            ]
        )
        wrong = ~np.isclose(full, cached, rtol=0, atol=1e-12).all(axis=-1)
        first.append(int(wrong.argmax()) if wrong.any() else L6)
    assert first == [6, 6, 0, 2, 0, 0, 6, 6, 0]  # the cases differ: safe masks and leaks at several rows
    np.testing.assert_array_equal(_answer("ch06.first_wrong_cached_output", masks), first)
    # RoPE undone: the positions a vector was turned at come back, for every position below 2000
    x7 = rng.normal(size=(2000, 10))
    p7 = rng.permutation(2000)
    assert np.array_equal(_answer("ch07.rope_position", x7, apply_rope(x7, p7)), p7)

    # keys cached after RoPE, renumbered: what a rotation at the new positions gives the raw keys,
    # the rotation written here with complex numbers (pair i is features i and i + E/2)
    def turn(x, pos):
        h = x.shape[-1] // 2
        z = (x[..., :h] + 1j * x[..., h:]) * np.exp(1j * np.outer(pos, 10000.0 ** (-np.arange(h) / h)))
        return np.concatenate([z.real, z.imag], axis=-1)

    k7, old7, new7 = (
        rng.normal(size=(2, 6, 12)),
        np.array([0, 1, 70, 71, 72, 9]),
        np.array([0, 1, 2, 3, 4, 90]),
    )
    np.testing.assert_allclose(
        _answer("ch07.move_rotated_keys", turn(k7, old7), old7, new7), turn(k7, new7), atol=1e-12
    )
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
    # 8.3: the head count comes back from the package's causal attention (no biases, gamma = 1),
    # its query and key weights unseen: h = x + attn(LN(x))
    d = 12
    for heads in (1, 3, 4, 12):
        x = n(size=(2, 5, d))
        block = TransformerBlock(d, heads, 2 * d, bias=False).double()
        with torch.no_grad():
            for lin in (block.attn.q_proj, block.attn.k_proj):
                lin.weight.mul_(6.0)  # peaked maps: heads that attend unlike each other
            xt = torch.from_numpy(x)
            h = (xt + block.attn(block.norm1(xt), is_causal=True)[0]).numpy()
        W_v, W_o = (lin.weight.detach().numpy().T for lin in (block.attn.v_proj, block.attn.out_proj))
        assert _answer("ch08.attention_head_count", x, h, W_v, W_o) == heads
    # 8.4: nn.LayerNorm with a trained-looking gamma and beta gives them back
    ln = torch.nn.LayerNorm(6).double()
    with torch.no_grad():
        ln.weight.normal_()
        ln.bias.normal_()
        x4 = torch.from_numpy(n(size=(3, 7, 6)) * 2 + 1)
        gamma, beta = _answer("ch08.layer_norm_parameters", x4.numpy(), ln(x4).numpy())
    np.testing.assert_allclose(gamma, ln.weight.detach().numpy(), rtol=1e-9)
    np.testing.assert_allclose(beta, ln.bias.detach().numpy(), atol=1e-9)
    # 8.5: the package's sampler's distributions give back its temperature and top-k
    from attncourse.transformer import next_token_probs

    logits = torch.from_numpy(n(size=(3, 16)) * 2)
    settings = ((0.4, 3), (1.0, None), (2.5, 9))
    probs = torch.stack(
        [next_token_probs(logits[i], temperature=T, top_k=k) for i, (T, k) in enumerate(settings)]
    )
    T, k = _answer("ch08.sampling_settings", logits.numpy(), probs.numpy())
    np.testing.assert_allclose(T, [0.4, 1.0, 2.5], rtol=1e-9)
    assert k.tolist() == [3, 16, 9]
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
    # 5.7 fixed is ac.MultiHeadAttention with the same weights (x @ W, no biases)
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
    # a causal head of width 1: increasing keys and positive queries put each query's top on its own key
    k_1, q_1 = np.arange(12.0), np.ones(12)
    scores = np.where(np.tril(np.ones((12, 12), bool)), q_1[:, None] * k_1[None, :], -np.inf)
    assert _answer("ch05.predict_causal_top_keys") == len(set(scores.argmax(-1).tolist())) == 12
    # a sink added afterwards equals the softmax over the scores and the sink with a value of zeros
    s, v, z = n(size=(2, 3, 4, 6)), n(size=(2, 3, 6, 2)), n(size=3)
    lse = np.log(np.exp(s).sum(-1))
    out, new_lse, to_sink = _answer("ch09.add_sink", softmax(s) @ v, lse, z)
    zs = np.broadcast_to(z[None, :, None, None], s.shape[:-1] + (1,))
    w = softmax(np.concatenate([s, zs], axis=-1))  # (2, 3, 4, 7): the sink is the last column
    np.testing.assert_allclose(out, w[..., :-1] @ v, rtol=1e-10)
    np.testing.assert_allclose(to_sink, w[..., -1], rtol=1e-10)
    np.testing.assert_allclose(new_lse, np.log(np.exp(s).sum(-1) + np.exp(zs[..., 0])), rtol=1e-12)


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


def test_9_4_keys_taken_out_give_the_pass_over_the_other_keys():
    from attncourse import scaled_dot_product_attention
    from attncourse.exercises.chapters.ch09 import _forward_state

    rng = np.random.default_rng(94)
    q, k, v = rng.normal(size=(2, 3, 4)), rng.normal(size=(2, 7, 4)), rng.normal(size=(2, 7, 3))
    out, lse = _forward_state(q, k, v)
    gone, kept = [1, 4], [0, 2, 3, 5, 6]
    new_out, new_lse = _answer("ch09.remove_keys", q, k[:, gone], v[:, gone], out, lse)
    expected, _ = scaled_dot_product_attention(q, k[:, kept], v[:, kept])  # the pass over the rest
    s = q @ np.swapaxes(k[:, kept], -1, -2) / 2.0
    np.testing.assert_allclose(new_out, expected, rtol=1e-10)
    np.testing.assert_allclose(new_lse, np.log(np.exp(s).sum(-1)), rtol=1e-12)


def _remove_directly(q, k_rm, v_rm, out, lse):  # exp of scores in the hundreds: overflow
    e = np.exp(q @ np.swapaxes(k_rm, -1, -2) / np.sqrt(q.shape[-1]))
    total = np.exp(lse)
    rest = total - e.sum(-1)
    return (out * total[..., None] - e @ v_rm) / rest[..., None], np.log(rest)


def test_9_4_exponentials_taken_directly_fail_the_large_scores_and_are_told_what_their_output_shows():
    ex = get("ch09.remove_keys")
    with np.errstate(all="ignore"):
        in_check, in_grader = _points_everywhere(ex.id, _remove_directly)
        assert in_check < ex.points and in_grader < ex.points
        failed = [r for r in run_cases(ex, _remove_directly, ex.public_cases()) if not r.passed]
    assert failed and all(r.group == "large scores" for r in failed), [(r.name, r.group) for r in failed]
    # no named mistake is claimed for it: none of the registered diagnoses is its output
    assert all(r.diagnosis == "" for r in failed), [r.diagnosis for r in failed]


def test_9_5_the_fixed_split_decode_is_attention_over_the_whole_cache_and_the_stub_is_not():
    torch = pytest.importorskip("torch")
    import textwrap

    from attncourse.exercises.chapters.ch09 import _SPLIT_SOLUTION, _SPLIT_STUB

    rng = np.random.default_rng(95)
    q, k, v = rng.normal(size=(2, 1, 4)) * 3, rng.normal(size=(2, 11, 4)), rng.normal(size=(2, 11, 3))
    # an independent reference: torch's SDPA from the query to every cached key at once
    expected = torch.nn.functional.scaled_dot_product_attention(*(torch.tensor(a) for a in (q, k, v))).numpy()
    namespace = {"np": np}
    exec(textwrap.dedent(_SPLIT_SOLUTION), namespace)
    for n_splits in (2, 3, 11):
        np.testing.assert_allclose(namespace["split_decode"](q, k, v, n_splits), expected, rtol=1e-10)
        np.testing.assert_allclose(_answer("ch09.split_decode", q, k, v, n_splits), expected, rtol=1e-10)
    # the handed-out code: the solution region replaced by the stub, as the student edition has it
    sol = textwrap.dedent(_SPLIT_SOLUTION)
    head, tail = sol.split("        ### BEGIN SOLUTION\n")[0], sol.split("### END SOLUTION\n")[1]
    buggy = {"np": np}
    exec(head + textwrap.indent(_SPLIT_STUB, "        ") + "\n" + tail, buggy)
    np.testing.assert_allclose(buggy["split_decode"](q, k, v, 1), expected, rtol=1e-10)  # right on one worker
    for n_splits in (2, 3, 11):
        assert np.abs(buggy["split_decode"](q, k, v, n_splits) - expected).max() > 1e-3
    ex = get("ch09.split_decode")
    assert _points_everywhere(ex.id, buggy["split_decode"]) == (0, 0)


def test_9_2_each_new_beam_attends_over_its_own_history():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(92)
    B, t, n, E, Ev = 3, 4, 3, 4, 2
    k_cache, v_cache = rng.normal(size=(B, t, E)), rng.normal(size=(B, t, Ev))
    q, k_new, v_new = rng.normal(size=(B, n, E)), rng.normal(size=(B, n, E)), rng.normal(size=(B, n, Ev))
    parents = np.array([2, 0, 2])
    out, k_all, v_all = _answer("ch09.beam_cache_step", q, k_new, v_new, k_cache, v_cache, parents)
    for b in range(B):  # new beam b is old beam parents[b]'s tokens, then its own n: one causal sequence
        keys = np.concatenate([k_cache[parents[b]], k_new[b]])
        values = np.concatenate([v_cache[parents[b]], v_new[b]])
        queries = np.concatenate([rng.normal(size=(t, E)), q[b]])  # the old queries do not matter
        full = torch.nn.functional.scaled_dot_product_attention(
            *(torch.tensor(a) for a in (queries, keys, values)), is_causal=True
        )
        np.testing.assert_allclose(out[b], full[t:].numpy(), rtol=1e-10)
        np.testing.assert_array_equal(k_all[b], keys)
        np.testing.assert_array_equal(v_all[b], values)


@pytest.mark.parametrize(
    "ex_id, answer, banned",
    [
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


def test_chapters_9_to_11_diagnose_ids_titles_and_stubs_do_not_name_the_cause():
    causes = {
        "ch09.split_decode": ["log(l)", "own maximum", "m +", "maximum", "relative"],
        "ch10.padded_patch_mask": ["ceil", "edge", "partial", "floor"],
        "ch11.window_prefill": ["trim", "too soon", "too early", "evict", "after the chunk", "afterwards"],
    }
    for ex_id, words in causes.items():
        ex = get(ex_id)
        stub_comments = " ".join(
            line.split("#", 1)[1] for line in (ex.stub or "").splitlines() if "#" in line
        )
        for text in (ex.id, ex.title, stub_comments, ex.description):
            assert not any(w in text.lower() for w in words), (ex_id, text)


def _top_left_tiles(q, k, v, block_size):  # the L = S loop: the new queries taken for the first L tokens
    L, S, E = q.shape[-2], k.shape[-2], q.shape[-1]
    out, n_tiles = np.zeros(q.shape[:-1] + (v.shape[-1],)), 0
    for i0 in range(0, L, block_size):
        i1 = min(i0 + block_size, L)
        m, l, acc = np.full(q.shape[:-2] + (i1 - i0,), -np.inf), 0.0, 0.0
        for j0 in range(0, i1, block_size):
            j1 = min(j0 + block_size, S)
            n_tiles += 1
            s = q[..., i0:i1, :] @ np.swapaxes(k[..., j0:j1, :], -1, -2) / np.sqrt(E)
            s = np.where(np.arange(j0, j1)[None, :] <= np.arange(i0, i1)[:, None], s, -np.inf)
            m_new = np.maximum(m, s.max(-1))
            r, p = np.exp(m - m_new), np.exp(s - m_new[..., None])
            l, acc, m = l * r + p.sum(-1), acc * r[..., None] + p @ v[..., j0:j1, :], m_new
        out[..., i0:i1, :] = acc / l[..., None]
    return out, n_tiles


@pytest.mark.parametrize(
    "ex_id, fn, said, unsaid",
    [
        (
            "ch09.remove_keys",
            lambda q, k_rm, v_rm, out, lse: (
                out - np.exp(q @ np.swapaxes(k_rm, -1, -2) / np.sqrt(q.shape[-1]) - lse[..., None]) @ v_rm,
                lse
                + np.log1p(
                    -np.exp(q @ np.swapaxes(k_rm, -1, -2) / np.sqrt(q.shape[-1]) - lse[..., None]).sum(-1)
                ),
            ),
            "sum to less than 1",
            ["divide", "1 - (the removed"],
        ),
        (
            "ch09.causal_tiled_attention",
            _top_left_tiles,
            "as if they were the first L tokens",
            ["S - L + i", "bottom-right"],
        ),
    ],
    ids=["9.4 not renormalised", "9.6 top-left"],
)
def test_chapter_9_feedback_names_the_mistake_and_keeps_the_fix(ex_id, fn, said, unsaid):
    reset()
    result = check(ex_id, fn, show=False)
    text = result.text()
    assert result.earned < get(ex_id).points and said in text, text
    assert not any(u in text for u in unsaid), text
    reset()


def test_chapter_3_find_the_bug_symptoms_are_what_the_prompts_say():
    """3.3 and 3.6: the handed-out code shows the symptom its prompt describes, against torch."""
    torch = pytest.importorskip("torch")
    sdpa_t = torch.nn.functional.scaled_dot_product_attention
    rng = np.random.default_rng(3)
    # 3.3: heads of width 16, 32 and 64 agree with torch run on each head; 12 wide, they do not
    packed = stub_function(get("ch03.packed_head_attention"))
    for D in (16, 32, 64, 12):
        H = 3
        q, k, v = (
            rng.normal(size=(2, 6, H * D)),
            rng.normal(size=(2, 9, H * D)),
            rng.normal(size=(2, 9, H * 5)),
        )
        out, w = packed(q, k, v, H)
        split = [torch.from_numpy(x.reshape(2, -1, H, x.shape[-1] // H).swapaxes(1, 2)) for x in (q, k, v)]
        out_t = sdpa_t(*split)  # (2, H, L, 5)
        w_t = torch.softmax(split[0] @ split[1].transpose(-1, -2) / D**0.5, -1).numpy()
        out_t = out_t.transpose(1, 2).reshape(2, 6, H * 5).numpy()
        agrees = np.allclose(w, w_t) and np.allclose(out, out_t)
        assert agrees == (D % 8 == 0), D
    # 3.6: the rows of weights do not sum to 1: most well below, a few above
    log_space = stub_function(get("ch03.weights_not_normalised"))
    for E in (16, 64):
        q, k, v = rng.normal(size=(300, E)), rng.normal(size=(7, E)), rng.normal(size=(7, 2))
        sums = log_space(q, k, v)[1].sum(-1)
        assert np.median(sums) < 0.5 and sums.max() > 1, (E, np.median(sums), sums.max())


def test_the_appendix_references_of_chapters_10_and_13_agree_with_torch():
    """A.2-A.4's references against code written here in torch: the 2-D positions, rollout's row 0
    multiplied out layer by layer, and the Gated DeltaNet recurrence with torch's softplus."""
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    # A.2: row code then column code, each chapter 7's encoding in d/2 features, patches row by row
    gh, gw, d = 3, 4, 8
    idx = torch.arange(gh * gw, dtype=torch.float64)
    r, c = idx.div(gw, rounding_mode="floor"), idx.remainder(gw)
    freq = 10000.0 ** (-torch.arange(0, d // 2, 2, dtype=torch.float64) / (d // 2))

    def code(p):
        return torch.stack([(p[:, None] * freq).sin(), (p[:, None] * freq).cos()], -1).flatten(1)

    expected = torch.cat([code(r), code(c)], -1).numpy()
    np.testing.assert_allclose(_answer("bugs.grid_positions", gh, gw, d), expected, atol=1e-12)
    # A.3: the [CLS] row pushed down from the last layer to the first
    rng = np.random.default_rng(3)
    w = torch.softmax(torch.tensor(rng.normal(size=(3, 2, 4, 5, 5))), -1)
    row = F.one_hot(torch.zeros(2, dtype=torch.long), 5).double()
    for layer in reversed(range(3)):
        row = torch.einsum("bj,bjk->bk", row, (w[layer].mean(1) + torch.eye(5)) / 2)
    np.testing.assert_allclose(_answer("bugs.cls_rollout", w.numpy()), row.numpy(), rtol=1e-12)
    # A.4: S <- alpha S; S <- S + k^T beta (v - k S); o = q S / sqrt(E), with unit q and k
    H, L, E, Ev = 2, 5, 4, 3
    q, k, v = (torch.tensor(rng.normal(size=s)) for s in ((H, L, E), (H, L, E), (H, L, Ev)))
    a, b = torch.tensor(rng.normal(size=(H, L))), torch.tensor(rng.normal(size=(H, L)))
    A_log, dt = torch.tensor([-1.0, 0.5], dtype=torch.float64), torch.tensor([0.3, -0.2], dtype=torch.float64)
    alpha, beta = torch.exp(-A_log.exp()[:, None] * F.softplus(a + dt[:, None])), torch.sigmoid(b)
    qn, kn = F.normalize(q, dim=-1), F.normalize(k, dim=-1)
    S, outs = torch.zeros(H, E, Ev, dtype=torch.float64), []
    for t in range(L):
        S = alpha[:, t, None, None] * S
        u = beta[:, t, None] * (v[:, t] - torch.einsum("he,hef->hf", kn[:, t], S))
        S = S + kn[:, t, :, None] * u[:, None, :]
        outs.append(torch.einsum("he,hef->hf", qn[:, t], S) / E**0.5)
    args = [x.numpy() for x in (q, k, v, a, b, A_log, dt)]
    np.testing.assert_allclose(
        _answer("bugs.gated_delta_layer", *args), torch.stack(outs, 1).numpy(), rtol=1e-10
    )
