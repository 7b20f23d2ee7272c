"""flash_attention (tiled, online softmax) against scaled_dot_product_attention and torch's SDPA.

Also: the online softmax, the KV cache, error messages, and the memory the tiles save.
"""

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from triton_support import INTERPRETING, TRITON_DEVICES, needs_triton, run_interpreter_cases

import attncourse as ac
from attncourse.flash import KVCache, cached_attention, flash_attention, online_softmax
from attncourse.triton_flash import triton_flash_attention
from support import DEVICES, F, assert_close, torch

BLOCKS = [1, 3, 7, "S", "S+5"]


def _block(block, S):
    return {"S": S, "S+5": S + 5}.get(block, block)


def _qkv(rng, lead=(2, 3), L=5, S=7, E=8, Ev=6):
    return (rng.normal(size=(*lead, L, E)), rng.normal(size=(*lead, S, E)), rng.normal(size=(*lead, S, Ev)))


CASES = {
    "self L=S": dict(L=6, S=6, E=8, Ev=8),
    "cross L<S": dict(L=4, S=9, E=8, Ev=8),
    "E!=Ev": dict(L=5, S=7, E=4, Ev=11),
    "L>S": dict(L=9, S=3, E=8, Ev=5),
    "L=1 S=1": dict(L=1, S=1, E=3, Ev=2),
}
VARIANTS = ["plain", "is_causal", "bool mask", "mask+is_causal", "custom scale", "B=1 H=1"]


def _kwargs(rng, variant, lead, L, S, to=np.asarray):
    kw = {}
    if variant in ("is_causal", "mask+is_causal"):
        kw["is_causal"] = True
    if variant in ("bool mask", "mask+is_causal"):
        mask = rng.random((lead[0], 1, L, S)) > 0.3
        mask[..., 0] = True  # every row keeps key 0, so torch has no all-masked row either
        kw["mask"] = to(mask)
    if variant == "custom scale":
        kw["scale"] = 0.37
    return kw


# ----------------------------------------------------------------------------------------------
# Forward: equal to scaled_dot_product_attention for every block size
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("block", BLOCKS)
@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("variant", VARIANTS)
def test_numpy_matches_scaled_dot_product_attention(rng, block, case, variant):
    shape = CASES[case]
    lead = (1, 1) if variant == "B=1 H=1" else (2, 3)
    q, k, v = _qkv(rng, lead, **shape)
    kw = _kwargs(rng, variant, lead, shape["L"], shape["S"])
    mask = kw.pop("mask", None)
    expected, _ = ac.scaled_dot_product_attention(q, k, v, mask, **kw)
    out = flash_attention(q, k, v, mask, block_size=_block(block, shape["S"]), **kw)
    assert isinstance(out, np.ndarray) and out.dtype == np.float64 and out.shape == expected.shape
    np.testing.assert_allclose(out, expected, rtol=1e-10, atol=1e-12)


def test_block_size_one_and_whole_sequence_agree(rng):
    q, k, v = _qkv(rng, lead=(2,), L=6, S=11)
    mask = rng.random((2, 6, 11)) > 0.4
    outs = [flash_attention(q, k, v, mask, is_causal=True, block_size=b) for b in (1, 2, 4, 5, 11, 12, 1000)]
    for out in outs[1:]:
        np.testing.assert_allclose(out, outs[0], rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize(
    "mask_shape",
    [(7,), (5, 7), (5, 1), (1, 7), (2, 1, 1, 7), (2, 3, 5, 7), (1, 3, 1, 7), ()],
    ids=str,
)
@pytest.mark.parametrize("block", [1, 3, 7])
def test_masks_of_every_broadcastable_shape(rng, mask_shape, block):
    q, k, v = _qkv(rng)  # scores (2, 3, 5, 7)
    mask = np.asarray(rng.random(mask_shape) > 0.35)
    expected, _ = ac.scaled_dot_product_attention(q, k, v, mask)
    out = flash_attention(q, k, v, mask, block_size=block)
    np.testing.assert_allclose(out, expected, rtol=1e-10, atol=1e-12)


def test_leading_dims_broadcast_between_q_k_and_v(rng):
    q = rng.normal(size=(2, 3, 4, 8))  # (B, H, L, E)
    k = rng.normal(size=(2, 1, 6, 8))  # one k shared by the heads
    v = rng.normal(size=(6, 5))  # one v shared by everything
    out = flash_attention(q, k, v, block_size=4)
    expected, _ = ac.scaled_dot_product_attention(q, k, v)
    assert out.shape == (2, 3, 4, 5)
    np.testing.assert_allclose(out, expected, rtol=1e-12)


def test_worked_example_one_query_five_keys(rng):
    # One query of width 8 against 5 keys with values of width 10, blocks of 2 keys.
    q, k, v = rng.normal(size=(1, 8)), rng.normal(size=(5, 8)), rng.normal(size=(5, 10))
    expected, _ = ac.scaled_dot_product_attention(q, k, v)
    np.testing.assert_allclose(flash_attention(q, k, v, block_size=2), expected, rtol=1e-12)


def test_causal_skips_keys_no_query_can_see(rng):
    # L=3 queries, S=20 keys: top-left causal lets query i see keys 0..i only.
    q, k, v = _qkv(rng, lead=(), L=3, S=20)
    out = flash_attention(q, k, v, is_causal=True, block_size=2)
    expected, _ = ac.scaled_dot_product_attention(q[:, :], k[:3], v[:3], is_causal=True)
    np.testing.assert_allclose(out, expected, rtol=1e-12)


@settings(max_examples=60, deadline=None)
@given(
    st.integers(1, 9),
    st.integers(1, 13),
    st.integers(1, 5),
    st.integers(1, 5),
    st.integers(1, 15),
    st.booleans(),
    st.integers(0, 2**32 - 1),
)
def test_any_block_size_any_shape(L, S, E, Ev, block, causal, seed):
    rng = np.random.default_rng(seed)
    q, k, v = rng.normal(size=(L, E)) * 3, rng.normal(size=(S, E)) * 3, rng.normal(size=(S, Ev))
    mask = rng.random((L, S)) > 0.5
    expected, _ = ac.scaled_dot_product_attention(q, k, v, mask, is_causal=causal)
    out = flash_attention(q, k, v, mask, is_causal=causal, block_size=block)
    np.testing.assert_allclose(out, expected, rtol=1e-10, atol=1e-12)


# ----------------------------------------------------------------------------------------------
# torch: forward and backward equal to torch's own SDPA
# ----------------------------------------------------------------------------------------------


def _torch_sdpa(q, k, v, mask=None, is_causal=False, scale=None):
    if mask is not None and is_causal:
        # torch refuses attn_mask together with is_causal: AND them by hand (top-left tril).
        L, S = q.shape[-2], k.shape[-2]
        mask = mask & torch.ones(L, S, dtype=torch.bool, device=q.device).tril()
        is_causal = False
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=is_causal, scale=scale)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("block", BLOCKS)
@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("variant", VARIANTS)
def test_forward_and_backward_match_torch_sdpa(rng, device, block, case, variant):
    shape = CASES[case]
    lead = (1, 1) if variant == "B=1 H=1" else (2, 3)
    q, k, v = (
        torch.tensor(a, dtype=torch.float64, device=device, requires_grad=True)
        for a in _qkv(rng, lead, **shape)
    )
    kw = _kwargs(rng, variant, lead, shape["L"], shape["S"], to=lambda m: torch.tensor(m, device=device))
    ours = flash_attention(q, k, v, block_size=_block(block, shape["S"]), **kw)
    theirs = _torch_sdpa(q, k, v, **kw)
    assert ours.dtype == torch.float64 and ours.device == q.device
    assert_close(ours, theirs)
    cot = torch.randn_like(ours)
    g_ours = torch.autograd.grad(ours, (q, k, v), cot)
    g_theirs = torch.autograd.grad(theirs, (q, k, v), cot)
    for a, b in zip(g_ours, g_theirs):
        assert_close(a, b)


@pytest.mark.parametrize("device", DEVICES)
def test_no_grad_path_equals_grad_path(rng, device):
    # Without autograd the loop works in place; the numbers must not change.
    q, k, v = (torch.tensor(a, device=device) for a in _qkv(rng, L=9, S=13))
    mask = torch.tensor(rng.random((9, 13)) > 0.3, device=device)
    with torch.no_grad():
        fast = flash_attention(q, k, v, mask, is_causal=True, block_size=4)
    slow = flash_attention(q.requires_grad_(), k, v, mask, is_causal=True, block_size=4)
    assert slow.requires_grad and not fast.requires_grad
    torch.testing.assert_close(fast, slow.detach(), rtol=0, atol=0)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("block", [1, 2, 4])
def test_fully_masked_rows_give_zeros_and_finite_gradients(rng, device, block):
    q, k, v = (torch.tensor(a, device=device, requires_grad=True) for a in _qkv(rng, lead=(2,), L=3, S=4))
    mask = torch.ones(2, 3, 4, dtype=torch.bool, device=device)
    mask[0, 1] = False  # query 1 of batch 0 may attend to nothing
    mask[1, :, :2] = False  # the first block(s) are fully masked for every row of batch 1
    out = flash_attention(q, k, v, mask, block_size=block)
    expected, _ = ac.scaled_dot_product_attention(q, k, v, mask)
    assert (out[0, 1] == 0).all() and torch.isfinite(out).all()
    assert_close(out, expected)
    out.square().sum().backward()
    for t in (q, k, v):
        assert torch.isfinite(t.grad).all()
    assert (q.grad[0, 1] == 0).all()
    g_expected = torch.autograd.grad(expected.square().sum(), (q, k, v))
    for t, g in zip((q, k, v), g_expected):
        assert_close(t.grad, g)


def test_fully_masked_rows_numpy_no_warning(rng):
    q, k, v = _qkv(rng, lead=(), L=2, S=3)
    mask = np.array([[False] * 3, [True, False, True]])
    with np.errstate(all="raise"):
        out = flash_attention(q, k, v, mask, block_size=1)
    assert (out[0] == 0).all()
    np.testing.assert_allclose(out, ac.scaled_dot_product_attention(q, k, v, mask)[0], rtol=1e-12)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_low_precision_matches_float64_within_tolerance(rng, device, dtype):
    q, k, v = (torch.tensor(a, device=device) for a in _qkv(rng, L=6, S=10))
    ref, _ = ac.scaled_dot_product_attention(q, k, v, is_causal=True)
    out = flash_attention(q.to(dtype), k.to(dtype), v.to(dtype), is_causal=True, block_size=3)
    assert out.dtype == dtype and out.device == q.device
    assert_close(out, ref, dtype=dtype)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_huge_half_precision_scores_do_not_overflow(dtype):
    q = torch.full((1, 4, 64), 200.0, dtype=dtype)  # q.k = 2.56e6 > fp16 max
    out = flash_attention(q, q, q, is_causal=True, block_size=2)
    assert torch.isfinite(out).all()
    assert_close(out, torch.full((1, 4, 64), 200.0), dtype=dtype)


def test_half_precision_numpy():
    q = np.full((4, 64), 200.0, dtype=np.float16)
    out = flash_attention(q, q, q, block_size=3)
    assert out.dtype == np.float16 and np.isfinite(out).all()


def test_numpy_equals_torch_in_float64(rng):
    q, k, v = _qkv(rng, L=6, S=11)
    mask = rng.random((6, 11)) > 0.5
    out_np = flash_attention(q, k, v, mask, is_causal=True, scale=0.5, block_size=4)
    out_t = flash_attention(
        *(torch.tensor(a) for a in (q, k, v)), torch.tensor(mask), is_causal=True, scale=0.5, block_size=4
    )
    assert isinstance(out_np, np.ndarray) and isinstance(out_t, torch.Tensor)
    np.testing.assert_allclose(out_np, out_t.numpy(), rtol=1e-12, atol=1e-14)


def test_float32_numpy_stays_float32(rng):
    q, k, v = (a.astype(np.float32) for a in _qkv(rng))
    out = flash_attention(q, k, v, block_size=3)
    assert out.dtype == np.float32
    ref, _ = ac.scaled_dot_product_attention(*(a.astype(np.float64) for a in (q, k, v)))
    assert_close(out, ref)


@pytest.mark.cuda
def test_cuda_stays_on_device_and_matches_cpu(rng):
    q, k, v = (torch.tensor(a, dtype=torch.float32) for a in _qkv(rng, L=40, S=70))
    mask = torch.tensor(rng.random((40, 70)) > 0.5)
    cpu = flash_attention(q, k, v, mask, is_causal=True, block_size=16)
    gpu = flash_attention(q.cuda(), k.cuda(), v.cuda(), mask.cuda(), is_causal=True, block_size=16)
    assert gpu.device.type == "cuda"
    assert_close(gpu.cpu(), cpu)


# ----------------------------------------------------------------------------------------------
# Errors: the same checks and the same messages as scaled_dot_product_attention
# ----------------------------------------------------------------------------------------------


def z(*shape, dtype=np.float64):
    return np.zeros(shape, dtype=dtype)


BAD_INPUTS = {
    "E mismatch": (
        (z(2, 5, 8), z(2, 7, 6), z(2, 7, 3)),
        {},
        r"q and k must share their last dimension E.*got E=8 for q and E=6 for k",
    ),
    "S mismatch": (
        (z(5, 8), z(7, 8), z(6, 3)),
        {},
        r"k and v must have the same length S.*got S=7 keys and S=6 values",
    ),
    "lead": ((z(2, 5, 8), z(3, 7, 8), z(3, 7, 4)), {}, r"leading .* do not broadcast"),
    "1-d": ((z(8), z(7, 8), z(7, 4)), {}, r"(?s)need at least 2 dimensions.*q: \(8,\)"),
    "mask shape": (
        (z(2, 5, 8), z(2, 7, 8), z(2, 7, 4), np.ones((5, 6), bool)),
        {},
        r"mask of shape \(5, 6\) does not broadcast to the scores' shape \(2, 5, 7\)",
    ),
    "float mask": (
        (z(5, 8), z(7, 8), z(7, 4), np.ones((5, 7))),
        {},
        r"mask must be boolean \(True = may attend\); got dtype float64",
    ),
    "int mask": (
        (z(5, 8), z(7, 8), z(7, 4), np.ones((5, 7), dtype=np.int64)),
        {},
        r"mask must be boolean.*got dtype int64",
    ),
    "mixed kinds": (
        lambda: (z(5, 8), torch.zeros(7, 8), z(7, 4)),  # built in the test: it needs torch
        {},
        r"cannot be mixed \(q is numpy, k is torch, v is numpy\)",
    ),
    "int q": ((z(5, 8, dtype=np.int64), z(7, 8), z(7, 4)), {}, "q must be floating point; got dtype int64"),
    "mixed dtypes": (
        (z(5, 8, dtype=np.float32), z(7, 8), z(7, 4)),
        {},
        "q, k and v must share one dtype; got q: float32, k: float64, v: float64",
    ),
    "bad scale": (
        (z(5, 8), z(7, 8), z(7, 4)),
        {"scale": np.ones(3)},
        "scale must be a Python number or None; got ndarray",
    ),
}


@pytest.mark.parametrize("name", list(BAD_INPUTS))
def test_errors_are_those_of_scaled_dot_product_attention(name):
    args, kw, pattern = BAD_INPUTS[name]
    args = args() if callable(args) else args
    with pytest.raises(ValueError, match=pattern) as theirs:
        ac.scaled_dot_product_attention(*args, **kw)
    with pytest.raises(ValueError, match=pattern) as ours:
        flash_attention(*args, **kw)
    assert type(ours.value) is type(theirs.value)
    assert str(ours.value).startswith("flash_attention: ")
    assert str(ours.value).replace("flash_attention", "scaled_dot_product_attention") == str(theirs.value)


@pytest.mark.parametrize("bad", [0, -3, 2.5, True, None, "64"])
def test_bad_block_size(bad):
    with pytest.raises(
        ValueError, match=rf"flash_attention: block_size must be a positive integer; got {bad!r}"
    ):
        flash_attention(z(5, 8), z(7, 8), z(7, 4), block_size=bad)


# ----------------------------------------------------------------------------------------------
# Memory: the point of the tiles (speed is benchmarked, never asserted)
# ----------------------------------------------------------------------------------------------


# The benchmark's own measurement (tracemalloc around one call).
from attncourse.bench import _numpy_peak as _peak_bytes  # noqa: E402


def test_peak_memory_is_a_small_fraction_of_the_naive_path(rng):
    L = S = 2048
    q, k, v = (rng.normal(size=(1, n, 32)).astype(np.float32) for n in (L, S, S))
    naive = _peak_bytes(lambda: ac.scaled_dot_product_attention(q, k, v)[0])
    tiled = _peak_bytes(lambda: flash_attention(q, k, v, block_size=128))
    scores_bytes = L * S * 4
    assert naive >= scores_bytes  # the naive path holds at least one (L, S) matrix
    assert tiled < naive / 10, (tiled, naive)
    assert tiled < scores_bytes / 4  # and the tiled one never holds a quarter of one


# ----------------------------------------------------------------------------------------------
# Online softmax and the KV cache
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_online_softmax_equals_softmax(rng, axis):
    x = rng.normal(size=(3, 5, 4)) * 30
    x[1, 2] = -np.inf  # a row (along the last axis) with nothing in it
    x[0, :, 1] = -np.inf
    with np.errstate(all="raise"):
        np.testing.assert_allclose(online_softmax(x, axis), ac.softmax(x, axis), rtol=1e-12, atol=1e-15)
    xt = torch.tensor(x, dtype=torch.float32)
    assert_close(online_softmax(xt, axis), ac.softmax(xt, axis))


def test_online_softmax_bad_axis():
    with pytest.raises(ValueError, match=r"online_softmax: axis=2 is out of range for x of shape \(3, 4\)"):
        online_softmax(z(3, 4), axis=2)


@pytest.mark.parametrize("kind", ["numpy", "torch"])
def test_decoding_with_a_cache_equals_recomputing(rng, kind):
    to = np.asarray if kind == "numpy" else torch.tensor
    q, k, v = (to(a) for a in _qkv(rng, lead=(2, 3), L=9, S=9, E=4, Ev=5))
    full, _ = ac.scaled_dot_product_attention(q, k, v, is_causal=True)
    cache = KVCache()
    # A prompt of 4 tokens at once, then one token at a time, then a chunk of 2.
    pieces = [slice(0, 4)] + [slice(t, t + 1) for t in range(4, 7)] + [slice(7, 9)]
    outs = [cached_attention(q[..., p, :], k[..., p, :], v[..., p, :], cache, block_size=2) for p in pieces]
    assert len(cache) == 9
    cat = np.concatenate if kind == "numpy" else torch.cat
    assert_close(cat(outs, -2), full)


def test_a_decode_step_builds_no_mask(rng, monkeypatch):
    """One new query is the last position and sees every key: no (S, S) mask is built for it."""
    import attncourse.flash as flash

    sizes = []
    real = flash.causal_mask
    monkeypatch.setattr(flash, "causal_mask", lambda S, **kw: sizes.append(S) or real(S, **kw))
    q, k, v = _qkv(rng, lead=(2,), L=6, S=6)
    cache = KVCache()
    cached_attention(q[:, :3], k[:, :3], v[:, :3], cache)  # the prompt: 3 queries, masked
    for t in range(3, 6):
        cached_attention(q[:, t : t + 1], k[:, t : t + 1], v[:, t : t + 1], cache)
    assert sizes == [3]


def test_top_left_causal_is_wrong_for_new_queries_after_a_cache(rng):
    q, k, v = _qkv(rng, lead=(), L=8, S=8)
    full, _ = ac.scaled_dot_product_attention(q, k, v, is_causal=True)
    # The last 3 queries against all 8 keys: bottom-right alignment reproduces the full result ...
    bottom_right = flash_attention(q[5:], k, v, ac.causal_mask(8)[-3:])
    np.testing.assert_allclose(bottom_right, full[5:], rtol=1e-12)
    # ... top-left (is_causal with L=3, S=8) lets new query 0 see key 0 only, which is wrong.
    top_left = flash_attention(q[5:], k, v, is_causal=True)
    assert not np.allclose(top_left, full[5:])
    np.testing.assert_allclose(top_left[0], v[0], rtol=1e-12)


def test_cache_refuses_tokens_that_do_not_fit():
    cache = KVCache()
    cache.append(z(2, 3, 4), z(2, 3, 5))
    with pytest.raises(ValueError, match=r"KVCache.append: new k \(2, 1, 6\) and v \(2, 1, 5\) do not fit"):
        cache.append(z(2, 1, 6), z(2, 1, 5))
    with pytest.raises(
        ValueError, match=r"must agree on every axis but the last; got k: \(2, 1, 4\), v: \(2, 2, 5\)"
    ):
        cache.append(z(2, 1, 4), z(2, 2, 5))
    with pytest.raises(TypeError, match=r"cannot be mixed"):
        cache.append(torch.zeros(2, 1, 4), torch.zeros(2, 1, 5))
    assert len(cache) == 3


# ----------------------------------------------------------------------------------------------
# The optional Triton kernel: on the CPU through Triton's interpreter, and on a GPU
# ----------------------------------------------------------------------------------------------


@needs_triton
@pytest.mark.skipif(INTERPRETING, reason="this is the child process")
def test_triton_kernel_in_the_interpreter():
    child = run_interpreter_cases(__file__)
    assert child.returncode == 0, child.stdout[-4000:] + child.stderr[-2000:]
    assert re.search(r"\b8 passed", child.stdout), child.stdout[-2000:]


@needs_triton
@pytest.mark.parametrize("device", TRITON_DEVICES)
@pytest.mark.parametrize(
    "case, variant",
    [
        ("self L=S", "plain"),
        ("cross L<S", "is_causal"),
        ("E!=Ev", "bool mask"),
        ("L>S", "mask+is_causal"),
        ("L=1 S=1", "custom scale"),
        ("self L=S", "B=1 H=1"),
    ],
)
def test_triton_kernel_matches_flash_attention(rng, device, case, variant):
    shape = CASES[case]
    lead = (1, 1) if variant == "B=1 H=1" else (2, 3)
    q, k, v = (torch.tensor(a, dtype=torch.float32, device=device) for a in _qkv(rng, lead, **shape))
    kw = _kwargs(rng, variant, lead, shape["L"], shape["S"], to=lambda m: torch.tensor(m, device=device))
    out = triton_flash_attention(q, k, v, block_m=16, block_n=16, **kw)
    expected = flash_attention(q.double(), k.double(), v.double(), **kw)
    assert out.dtype == torch.float32 and out.device == q.device
    assert_close(out, expected)


@needs_triton
@pytest.mark.parametrize("device", TRITON_DEVICES)
def test_triton_kernel_ragged_blocks_fully_masked_rows_and_half_precision(rng, device):
    q, k, v = (torch.tensor(a, device=device) for a in _qkv(rng, lead=(2,), L=37, S=70, E=20, Ev=9))
    mask = torch.tensor(rng.random((2, 37, 70)) > 0.3, device=device)
    mask[0, 5] = False  # nothing to attend to
    expected = flash_attention(q, k, v, mask, is_causal=True)
    for dtype in (torch.float32, torch.float16, torch.bfloat16):
        out = triton_flash_attention(
            q.to(dtype), k.to(dtype), v.to(dtype), mask, is_causal=True, block_m=16, block_n=32
        )
        assert out.dtype == dtype and torch.isfinite(out).all() and (out[0, 5] == 0).all()
        assert_close(out, expected, dtype=dtype)


@needs_triton
def test_triton_kernel_refuses_the_cpu_without_the_interpreter(monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    with pytest.raises(
        ValueError, match=r"q is on the CPU, and Triton kernels run on a GPU.*TRITON_INTERPRET=1"
    ):
        triton_flash_attention(torch.zeros(4, 16), torch.zeros(4, 16), torch.zeros(4, 16))


def test_triton_kernel_errors_without_triton_or_with_bad_input(monkeypatch):
    with pytest.raises(TypeError, match="triton_flash_attention: needs torch tensors; got numpy arrays"):
        triton_flash_attention(z(4, 16), z(4, 16), z(4, 16))
    with pytest.raises(TypeError, match="computes in float32 at most; got torch.float64"):
        triton_flash_attention(
            torch.zeros(4, 16, dtype=torch.float64), *[torch.zeros(4, 16, dtype=torch.float64)] * 2
        )
    with pytest.raises(ValueError, match="block_m must be a power of two >= 16; got 24"):
        triton_flash_attention(*[torch.zeros(4, 16)] * 3, block_m=24)
    with pytest.raises(
        ValueError, match=r"triton_flash_attention: q and k must share their last dimension E"
    ):
        triton_flash_attention(torch.zeros(4, 16), torch.zeros(4, 8), torch.zeros(4, 8))
    monkeypatch.setattr("attncourse.triton_flash.triton_available", lambda: False)
    with pytest.raises(ImportError, match=r"needs Triton, which is not installed: pip install triton"):
        triton_flash_attention(*[torch.zeros(4, 16)] * 3)
