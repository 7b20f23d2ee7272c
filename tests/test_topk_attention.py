"""topk_attention against a written-out reference: the kept keys picked row by row, then attention.

Three levels: the loop (a sort of each row's allowed keys, ties to the lower index, then
``reference.loop_attention`` under that mask), ``scaled_dot_product_attention`` and torch's SDPA
with the same boolean mask, and topk_attention itself.  Also: dense when ``top_k`` covers every
allowed key, causal rows with fewer keys than ``top_k``, leading dims, gradients, errors.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attncourse import scaled_dot_product_attention, topk_attention
from reference import loop_attention
from support import DEVICES, F, assert_close, torch


def loop_kept(index_scores, top_k, causal):
    """2-d ``index_scores (L, S)``: the boolean mask of each row's ``top_k`` best allowed keys."""
    L, S = index_scores.shape
    kept = np.zeros((L, S), dtype=bool)
    for i in range(L):
        allowed = [j for j in range(S) if not causal or j <= i]
        best = sorted(allowed, key=lambda j: (-index_scores[i, j], j))[:top_k]  # ties: lower j first
        kept[i, best] = True
    return kept


def _qkv(rng, lead=(), L=5, S=7, E=4, Ev=3):
    return rng.normal(size=(*lead, L, E)), rng.normal(size=(*lead, S, E)), rng.normal(size=(*lead, S, Ev))


CASES = [  # L, S, top_k, causal
    (5, 7, 3, False),
    (5, 7, 3, True),
    (6, 6, 1, True),
    (4, 9, 9, False),  # top_k = S: dense
    (7, 4, 2, True),  # L > S
    (1, 1, 5, False),
]


@pytest.mark.parametrize("L,S,top_k,causal", CASES)
@pytest.mark.parametrize("indexer", ["own scores", "given"])
def test_matches_loop_reference_and_sdpa(rng, L, S, top_k, causal, indexer):
    q, k, v = _qkv(rng, L=L, S=S)
    index_scores = rng.normal(size=(L, S)) if indexer == "given" else (q @ k.T) / 2.0  # scale 1/sqrt(4)
    kwargs = {"index_scores": index_scores} if indexer == "given" else {}
    out, weights = topk_attention(q, k, v, top_k, is_causal=causal, **kwargs)
    kept = loop_kept(index_scores, top_k, causal)
    ref_out, ref_weights = loop_attention(q, k, v, kept)
    np.testing.assert_allclose(out, ref_out, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(weights, ref_weights, rtol=1e-12, atol=1e-12)
    sdpa_out, sdpa_weights = scaled_dot_product_attention(q, k, v, kept)
    np.testing.assert_allclose(out, sdpa_out, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(weights, sdpa_weights, rtol=1e-12, atol=1e-12)
    torch_out = F.scaled_dot_product_attention(
        *(torch.tensor(a) for a in (q, k, v)), attn_mask=torch.tensor(kept)
    )
    assert_close(torch.as_tensor(out), torch_out)


def test_ties_go_to_the_lower_key_index(rng):
    q, k, v = _qkv(rng, L=3, S=6)
    index_scores = np.array([[1.0, 2.0, 2.0, 2.0, 0.0, 2.0], [0.0] * 6, [3.0, 1.0, 3.0, 1.0, 3.0, 1.0]])
    for kind in ("numpy", "torch"):
        args = (q, k, v) if kind == "numpy" else tuple(torch.tensor(a) for a in (q, k, v))
        scores = index_scores if kind == "numpy" else torch.tensor(index_scores)
        _, weights = topk_attention(*args, 2, index_scores=scores)
        kept = np.asarray(weights) > 0
        np.testing.assert_array_equal(kept, [[0, 1, 1, 0, 0, 0], [1, 1, 0, 0, 0, 0], [1, 0, 1, 0, 0, 0]])


@pytest.mark.parametrize("causal", [False, True])
def test_top_k_covering_every_key_is_dense(rng, causal):
    q, k, v = _qkv(rng, lead=(2,), L=6, S=6)
    dense_out, dense_weights = scaled_dot_product_attention(q, k, v, is_causal=causal)
    for top_k in (6, 10):
        out, weights = topk_attention(q, k, v, top_k, is_causal=causal)
        np.testing.assert_allclose(out, dense_out, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(weights, dense_weights, rtol=1e-12, atol=1e-12)


def test_causal_rows_with_fewer_keys_keep_them_all(rng):
    q, k, v = _qkv(rng, L=8, S=8)
    index_scores = np.full((8, 8), -np.inf)  # every allowed key scored -inf: still picked
    _, weights = topk_attention(q, k, v, 3, index_scores=index_scores, is_causal=True)
    np.testing.assert_array_equal((weights > 0).sum(-1), [1, 2, 3, 3, 3, 3, 3, 3])
    assert not np.triu(weights, 1).any()
    np.testing.assert_allclose(weights.sum(-1), 1.0)


@pytest.mark.parametrize("kind", ["numpy", "torch"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("causal", [False, True])
def test_leading_dims_broadcast_per_slice(rng, kind, dtype, causal):
    # q (2, 3, L, E); k, v shared by the batch (1, 3, S, .); one indexer per batch entry, shared by the heads.
    q, (k, v) = _qkv(rng, lead=(2, 3))[0], _qkv(rng, lead=(1, 3))[1:]
    index_scores = rng.normal(size=(2, 1, 5, 7))
    arrays = [a.astype(dtype) for a in (q, k, v, index_scores)]
    if kind == "torch":
        arrays = [torch.as_tensor(a) for a in arrays]
    out, weights = topk_attention(*arrays[:3], 3, index_scores=arrays[3], is_causal=causal)
    assert (
        type(out) is type(arrays[0]) and str(out.dtype).endswith(dtype) and str(weights.dtype).endswith(dtype)
    )
    assert tuple(out.shape) == (2, 3, 5, 3) and tuple(weights.shape) == (2, 3, 5, 7)
    for b in range(2):
        for h in range(3):
            ref_out, ref_weights = loop_attention(
                q[b, h], k[0, h], v[0, h], loop_kept(index_scores[b, 0], 3, causal)
            )
            assert_close(out[b, h], ref_out, dtype=getattr(torch, dtype))
            assert_close(weights[b, h], ref_weights, dtype=getattr(torch, dtype))


@pytest.mark.parametrize("device", DEVICES)
def test_torch_device_and_gradients(rng, device):
    q, k, v = _qkv(rng, lead=(2,), L=4, S=6)
    index_scores = torch.tensor(rng.normal(size=(2, 4, 6)), device=device)
    tq, tk, tv = (torch.tensor(a, device=device, requires_grad=True) for a in (q, k, v))
    out, weights = topk_attention(tq, tk, tv, 2, index_scores=index_scores, is_causal=True)
    assert out.device.type == device and weights.device.type == device
    kept = weights.detach() > 0
    torch_out = F.scaled_dot_product_attention(tq, tk, tv, attn_mask=kept)
    assert_close(out, torch_out)
    g = torch.randn_like(out)
    for ours, theirs in zip(
        torch.autograd.grad(out, (tq, tk, tv), g), torch.autograd.grad(torch_out, (tq, tk, tv), g)
    ):
        assert_close(ours, theirs)
    if device == "cpu":
        assert torch.autograd.gradcheck(
            lambda a, b, c: topk_attention(a, b, c, 2, index_scores=index_scores, is_causal=True),
            (tq, tk, tv),
        )


def test_half_precision_and_a_low_precision_indexer(rng):
    q, k, v = (torch.tensor(a, dtype=torch.bfloat16) for a in _qkv(rng, lead=(2,), L=16, S=32, E=8))
    index_scores = torch.tensor(rng.normal(size=(2, 16, 32)), dtype=torch.float16)  # a cheap indexer
    out, weights = topk_attention(q, k, v, 4, index_scores=index_scores)
    assert out.dtype == weights.dtype == torch.bfloat16
    kept = torch.as_tensor(np.stack([loop_kept(s, 4, False) for s in index_scores.float().numpy()]))
    ref_out, _ = scaled_dot_product_attention(q.double(), k.double(), v.double(), kept)
    assert_close(out, ref_out)


@settings(max_examples=40, deadline=None)
@given(
    L=st.integers(1, 6),
    S=st.integers(1, 6),
    top_k=st.integers(1, 8),
    causal=st.booleans(),
    seed=st.integers(0, 2**16),
    levels=st.integers(1, 4),  # few distinct index scores: many ties
)
def test_property_kept_keys(L, S, top_k, causal, seed, levels):
    rng = np.random.default_rng(seed)
    q, k, v = _qkv(rng, L=L, S=S)
    index_scores = rng.integers(0, levels, size=(L, S)).astype(float)
    _, weights = topk_attention(q, k, v, top_k, index_scores=index_scores, is_causal=causal)
    allowed = np.tril(np.ones((L, S), dtype=bool)) if causal else np.ones((L, S), dtype=bool)
    kept = weights > 0
    np.testing.assert_array_equal(kept, loop_kept(index_scores, top_k, causal))
    np.testing.assert_array_equal(kept.sum(-1), np.minimum(top_k, allowed.sum(-1)))  # min(top_k, allowed)
    np.testing.assert_allclose(weights.sum(-1), 1.0)
    assert not (kept & ~allowed).any()


ERRORS = [
    ("top_k 0", dict(top_k=0), "top_k must be a positive integer"),
    ("top_k float", dict(top_k=2.5), "top_k must be a positive integer"),
    ("index_scores shape", dict(index_scores=np.zeros((5, 6))), r"index_scores of shape \(5, 6\)"),
    (
        "index_scores bool",
        dict(index_scores=np.ones((5, 7), dtype=bool)),
        "index_scores must hold real numbers",
    ),
    ("E mismatch", dict(k=np.zeros((7, 5))), "q and k must share their last dimension E"),
]


@pytest.mark.parametrize("given,match", [e[1:] for e in ERRORS], ids=[e[0] for e in ERRORS])
def test_errors_name_the_argument(rng, given, match):
    q, k, v = _qkv(rng)
    kwargs = {"q": q, "k": k, "v": v, "top_k": 2, **given}
    with pytest.raises(ValueError, match=f"(?s)topk_attention: .*{match}"):
        topk_attention(**kwargs)


def test_mixing_kinds_is_a_type_error(rng):
    q, k, v = _qkv(rng)
    with pytest.raises(TypeError, match="numpy arrays and torch tensors cannot be mixed"):
        topk_attention(q, k, v, 2, index_scores=torch.zeros(5, 7))
