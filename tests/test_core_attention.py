"""scaled_dot_product_attention against loops, float64 numpy, and torch's own SDPA."""

import math

import numpy as np
import pytest

import attncourse as ac
from reference import loop_attention
from support import DEVICES, F, assert_close, torch


def _qkv(rng, lead=(2, 3), L=5, S=7, E=8, Ev=6):
    return (rng.normal(size=(*lead, L, E)), rng.normal(size=(*lead, S, E)), rng.normal(size=(*lead, S, Ev)))


def test_worked_example_one_query_five_keys(rng):
    q, k, v = rng.normal(size=(1, 8)), rng.normal(size=(5, 8)), rng.normal(size=(5, 10))
    out, weights = ac.scaled_dot_product_attention(q, k, v)
    ref_out, ref_w = loop_attention(q, k, v)
    assert out.shape == (1, 10) and weights.shape == (1, 5)
    np.testing.assert_allclose(out, ref_out, rtol=1e-12)
    np.testing.assert_allclose(weights, ref_w, rtol=1e-12)


@pytest.mark.parametrize("use_mask", [False, True])
def test_matches_loops_with_and_without_mask(rng, use_mask):
    q, k, v = _qkv(rng, lead=(), L=4, S=6, E=3, Ev=5)
    mask = rng.random((4, 6)) > 0.4 if use_mask else None
    if use_mask:
        mask[:, 0] = True
        mask[2] = False  # one row with nothing to attend to
    out, weights = ac.scaled_dot_product_attention(q, k, v, mask)
    ref_out, ref_w = loop_attention(q, k, v, mask)
    np.testing.assert_allclose(out, ref_out, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(weights, ref_w, rtol=1e-12, atol=1e-15)


CASES = {
    "self L=S": dict(L=6, S=6, E=8, Ev=8),
    "cross L!=S": dict(L=4, S=9, E=8, Ev=8),
    "E!=Ev": dict(L=5, S=7, E=4, Ev=11),
    "L>S": dict(L=9, S=3, E=8, Ev=5),
}


def _sdpa_both(q, k, v, **kw):
    """(ours, torch's) outputs for torch tensors q, k, v with gradients."""
    mask = kw.pop("mask", None)
    ours, _ = ac.scaled_dot_product_attention(q, k, v, mask, **kw)
    if mask is not None and kw.get("is_causal"):
        # torch refuses attn_mask together with is_causal: AND them by hand (top-left tril).
        L, S = q.shape[-2], k.shape[-2]
        mask = mask & torch.ones(L, S, dtype=torch.bool, device=q.device).tril()
        kw = {**kw, "is_causal": False}
    theirs = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, **kw)
    return ours, theirs


def _grads(q, k, v, out, cot):
    return torch.autograd.grad(out, (q, k, v), cot)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize(
    "variant", ["plain", "is_causal", "bool mask", "mask+is_causal", "custom scale", "B=1 H=1"]
)
def test_forward_and_backward_match_torch_sdpa(rng, device, case, variant):
    shape = CASES[case]
    lead = (1, 1) if variant == "B=1 H=1" else (2, 3)
    q, k, v = (
        torch.tensor(a, dtype=torch.float64, device=device, requires_grad=True)
        for a in _qkv(rng, lead, **shape)
    )
    kw = {}
    if variant in ("is_causal", "mask+is_causal"):
        kw["is_causal"] = True
    if variant in ("bool mask", "mask+is_causal"):
        mask = torch.tensor(rng.random((lead[0], 1, shape["L"], shape["S"])) > 0.3, device=device)
        mask[..., 0] = True  # every row keeps key 0, so torch has no all-masked row either
        kw["mask"] = mask
    if variant == "custom scale":
        kw["scale"] = 0.37
    ours, theirs = _sdpa_both(q, k, v, **kw)
    assert_close(ours, theirs)
    cot = torch.randn_like(ours)
    for g_ours, g_theirs in zip(_grads(q, k, v, ours, cot), _grads(q, k, v, theirs, cot)):
        assert_close(g_ours, g_theirs)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_low_precision_matches_float64_within_tolerance(rng, device, dtype):
    q, k, v = (torch.tensor(a, device=device) for a in _qkv(rng))
    ref, ref_w = ac.scaled_dot_product_attention(q, k, v, is_causal=True)
    out, w = ac.scaled_dot_product_attention(q.to(dtype), k.to(dtype), v.to(dtype), is_causal=True)
    assert out.dtype == dtype and w.dtype == dtype and out.device == q.device
    assert_close(out, ref, dtype=dtype)
    assert_close(w, ref_w, dtype=dtype)


def test_numpy_equals_torch_in_float64(rng):
    q, k, v = _qkv(rng)
    mask = rng.random((5, 7)) > 0.5
    out_np, w_np = ac.scaled_dot_product_attention(q, k, v, mask, is_causal=True, scale=0.5)
    out_t, w_t = ac.scaled_dot_product_attention(
        *(torch.tensor(a) for a in (q, k, v)), torch.tensor(mask), is_causal=True, scale=0.5
    )
    assert isinstance(out_np, np.ndarray) and out_np.dtype == np.float64
    # Same formula, different BLAS kernels: equal to float64 rounding.
    np.testing.assert_allclose(out_np, out_t.numpy(), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(w_np, w_t.numpy(), rtol=1e-12, atol=1e-14)


def test_leading_dims_broadcast(rng):
    q = rng.normal(size=(2, 3, 4, 8))  # (B, H, L, E)
    k = rng.normal(size=(2, 1, 6, 8))  # one k shared by the heads
    v = rng.normal(size=(6, 5))  # one v shared by everything
    out, w = ac.scaled_dot_product_attention(q, k, v)
    assert out.shape == (2, 3, 4, 5) and w.shape == (2, 3, 4, 6)
    ref, _ = loop_attention(q[1, 2], k[1, 0], v)
    np.testing.assert_allclose(out[1, 2], ref, rtol=1e-12)


def test_3d_and_4d_inputs(rng):
    q3, k3, v3 = _qkv(rng, lead=(2,))
    out3, _ = ac.scaled_dot_product_attention(q3, k3, v3)
    out4, _ = ac.scaled_dot_product_attention(q3[:, None], k3[:, None], v3[:, None])
    np.testing.assert_allclose(out4[:, 0], out3)


def test_is_causal_is_top_left_like_torch_when_L_differs_from_S(rng):
    q, k, v = _qkv(rng, lead=(1,), L=3, S=5)
    _, w = ac.scaled_dot_product_attention(q, k, v, is_causal=True)
    expected_visible = np.tril(np.ones((3, 5), bool))
    np.testing.assert_array_equal(w[0] > 0, expected_visible)


def test_mask_and_is_causal_combine_with_and(rng):
    q, k, v = _qkv(rng, lead=(), L=4, S=4)
    mask = np.ones((4, 4), bool)
    mask[:, 1] = False
    _, w = ac.scaled_dot_product_attention(q, k, v, mask, is_causal=True)
    np.testing.assert_array_equal(w > 0, np.tril(np.ones((4, 4), bool)) & mask)


def test_default_scale_is_one_over_sqrt_E(rng):
    q, k, v = _qkv(rng, lead=(), E=16)
    a, _ = ac.scaled_dot_product_attention(q, k, v)
    b, _ = ac.scaled_dot_product_attention(q, k, v, scale=1 / math.sqrt(16))
    c, _ = ac.scaled_dot_product_attention(q, k, v, scale=1 / 16)
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, c)


@pytest.mark.parametrize("device", DEVICES)
def test_fully_masked_rows_give_zeros_and_finite_gradients(rng, device):
    q, k, v = (torch.tensor(a, device=device, requires_grad=True) for a in _qkv(rng, lead=(2,), L=3, S=4))
    mask = torch.ones(2, 3, 4, dtype=torch.bool, device=device)
    mask[0, 1] = False  # query 1 of batch 0 may attend to nothing
    mask[1, :, 2:] = False
    out, w = ac.scaled_dot_product_attention(q, k, v, mask)
    assert (out[0, 1] == 0).all() and (w[0, 1] == 0).all()
    torch.testing.assert_close(w[0, 0].sum(), torch.tensor(1.0, dtype=w.dtype, device=device))
    assert (w[1, :, 2:] == 0).all()
    (out.square().sum() + w.sum()).backward()
    for t in (q, k, v):
        assert torch.isfinite(t.grad).all()
    assert (q.grad[0, 1] == 0).all()


def test_fully_masked_rows_numpy_no_warning(rng):
    q, k, v = _qkv(rng, lead=(), L=2, S=3)
    mask = np.array([[False] * 3, [True, False, True]])
    with np.errstate(all="raise"):
        out, w = ac.scaled_dot_product_attention(q, k, v, mask)
    assert (out[0] == 0).all() and (w[0] == 0).all()
    np.testing.assert_allclose(w[1].sum(), 1.0)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_huge_half_precision_scores_do_not_overflow(dtype):
    q = torch.full((1, 4, 64), 200.0, dtype=dtype)  # q.k = 64 * 200 * 200 = 2.56e6 > fp16 max
    out, w = ac.scaled_dot_product_attention(q, q, q, is_causal=True)
    assert torch.isfinite(out).all() and torch.isfinite(w).all()
    assert_close(w.float().sum(-1), torch.ones(1, 4), dtype=dtype)  # fp16 rounding of 1/3


def test_half_precision_numpy():
    q = np.full((4, 64), 200.0, dtype=np.float16)
    out, w = ac.scaled_dot_product_attention(q, q, q)
    assert out.dtype == np.float16 and np.isfinite(out).all()


@pytest.mark.cuda
def test_cuda_stays_on_device_and_matches_cpu(rng):
    q, k, v = (torch.tensor(a) for a in _qkv(rng))
    mask = torch.tensor(rng.random((5, 7)) > 0.5)
    cpu_out, _ = ac.scaled_dot_product_attention(q, k, v, mask, is_causal=True)
    gpu_out, gpu_w = ac.scaled_dot_product_attention(
        q.cuda(), k.cuda(), v.cuda(), mask.cuda(), is_causal=True
    )
    assert gpu_out.is_cuda and gpu_w.is_cuda
    torch.testing.assert_close(gpu_out.cpu(), cpu_out)
