"""Grouped-query and multi-query attention: ``enable_gqa`` against torch's SDPA and a written-out loop.

torch's meaning: ``k``/``v`` carry ``H_kv`` heads in dimension -3, ``H % H_kv == 0``, and query
head ``h`` reads key/value head ``h // (H / H_kv)``.  The reference below writes that rule out
head by head (no reshapes, no repeat), so it checks the grouping, not just the shapes.
"""

import re

import numpy as np
import pytest
from triton_support import INTERPRETING, TRITON_DEVICES, needs_triton, run_interpreter_cases

import attncourse as ac
from attncourse.flash import KVCache, cached_attention, flash_attention
from attncourse.triton_flash import triton_flash_attention
from support import DEVICES, F, assert_close, torch

# (B, H, H_kv, L, S, E, Ev)
SHAPES = {
    "GQA 8/2": (2, 8, 2, 5, 7, 4, 3),
    "MQA 4/1": (1, 4, 1, 6, 6, 8, 8),
    "H = H_kv": (2, 3, 3, 4, 5, 4, 4),
    "L > S": (1, 6, 3, 9, 4, 4, 5),
    "L = S = 1": (3, 4, 2, 1, 1, 2, 2),
}
VARIANTS = ["plain", "is_causal", "per-head mask", "shared mask", "mask+is_causal", "scale"]


def _qkv(rng, B, H, H_kv, L, S, E, Ev):
    return rng.normal(size=(B, H, L, E)), rng.normal(size=(B, H_kv, S, E)), rng.normal(size=(B, H_kv, S, Ev))


def _kwargs(rng, variant, B, H, L, S):
    kw = {}
    if "is_causal" in variant:
        kw["is_causal"] = True
    if "mask" in variant:
        shape = (B, 1, L, S) if variant == "shared mask" else (B, H, L, S)
        mask = rng.random(shape) > 0.4
        mask[..., 0] = True  # every row keeps key 0: no all-masked row in torch either
        kw["mask"] = mask
    if variant == "scale":
        kw["scale"] = 0.29
    return kw


def _reference(q, k, v, mask=None, is_causal=False, scale=None):
    """Head by head: query head h attends with key/value head h // (H / H_kv); plain numpy."""
    B, H, L, E = q.shape
    H_kv, S = k.shape[1], k.shape[2]
    scale = 1 / np.sqrt(E) if scale is None else scale
    out = np.zeros((B, H, L, v.shape[-1]))
    for b in range(B):
        for h in range(H):
            g = h // (H // H_kv)
            scores = q[b, h] @ k[b, g].T * scale
            allowed = np.ones((L, S), bool)
            if mask is not None:
                allowed &= np.broadcast_to(mask, (B, H, L, S))[b, h]
            if is_causal:
                allowed &= np.tril(np.ones((L, S), bool))
            scores = np.where(allowed, scores, -np.inf)
            w = np.exp(scores - scores.max(-1, keepdims=True))
            out[b, h] = (w / w.sum(-1, keepdims=True)) @ v[b, g]
    return out


def _torch_sdpa(q, k, v, mask=None, is_causal=False, scale=None):
    t = lambda a: torch.as_tensor(a)  # noqa: E731
    m = None if mask is None else t(mask)
    if m is not None and is_causal:  # torch refuses attn_mask with is_causal: fold the causal mask in
        m = m & torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool, device=m.device).tril()
        is_causal = False
    return F.scaled_dot_product_attention(
        t(q), t(k), t(v), attn_mask=m, is_causal=is_causal, scale=scale, enable_gqa=True
    )


@pytest.mark.parametrize("shape", list(SHAPES))
@pytest.mark.parametrize("variant", VARIANTS)
def test_numpy_matches_the_written_out_head_rule(rng, shape, variant):
    B, H, H_kv, L, S, E, Ev = SHAPES[shape]
    q, k, v = _qkv(rng, *SHAPES[shape])
    kw = _kwargs(rng, variant, B, H, L, S)
    expected = _reference(q, k, v, **kw)
    out, weights = ac.scaled_dot_product_attention(q, k, v, enable_gqa=True, **kw)
    np.testing.assert_allclose(out, expected, rtol=1e-12, atol=1e-12)
    assert weights.shape == (B, H, L, S)
    np.testing.assert_allclose(weights.sum(-1), 1.0)
    for block in (1, 3, 64):
        np.testing.assert_allclose(
            flash_attention(q, k, v, enable_gqa=True, block_size=block, **kw),
            expected,
            rtol=1e-12,
            atol=1e-12,
        )


def test_query_head_h_reads_kv_head_h_over_group_size():
    """A head rule that is not h // G (e.g. h % H_kv, the tiled order) gives other numbers: the
    value heads are constants, so each output row names the head it read."""
    B, H, H_kv, L, S = 1, 6, 3, 2, 4
    q, k = np.zeros((B, H, L, 2)), np.zeros((B, H_kv, S, 2))
    v = np.broadcast_to(np.arange(H_kv, dtype=float)[None, :, None, None], (B, H_kv, S, 1)).copy()
    for fn in (
        lambda *a: ac.scaled_dot_product_attention(*a, enable_gqa=True)[0],
        lambda *a: flash_attention(*a, enable_gqa=True),
    ):
        read = fn(q, k, v)[0, :, 0, 0]
        assert read.tolist() == [0.0, 0.0, 1.0, 1.0, 2.0, 2.0]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("shape", list(SHAPES))
@pytest.mark.parametrize("variant", VARIANTS)
def test_torch_matches_torch_sdpa_enable_gqa(rng, device, dtype, shape, variant):
    B, H, H_kv, L, S, E, Ev = SHAPES[shape]
    q, k, v = _qkv(rng, *SHAPES[shape])
    kw = _kwargs(rng, variant, B, H, L, S)
    expected = _torch_sdpa(q, k, v, **kw).to(dtype)
    t = lambda a: torch.as_tensor(a, device=device, dtype=dtype if a.dtype != bool else None)  # noqa: E731
    tq, tk, tv = t(q), t(k), t(v)
    tkw = {n: (t(a) if n == "mask" else a) for n, a in kw.items()}
    out, _ = ac.scaled_dot_product_attention(tq, tk, tv, enable_gqa=True, **tkw)
    flash = flash_attention(tq, tk, tv, enable_gqa=True, block_size=3, **tkw)
    for got in (out, flash):
        assert got.dtype == dtype and got.device.type == torch.device(device).type
        assert_close(got.cpu(), expected)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("variant", ["plain", "mask+is_causal"])
def test_gradients_match_torch_sdpa(rng, device, variant):
    B, H, H_kv, L, S, E, Ev = SHAPES["GQA 8/2"]
    q, k, v = _qkv(rng, B, H, H_kv, L, S, E, Ev)
    kw = _kwargs(rng, variant, B, H, L, S)
    grad_out = torch.as_tensor(rng.normal(size=(B, H, L, Ev)), device=device)

    def grads(fn):
        leaves = [torch.tensor(a, device=device, requires_grad=True) for a in (q, k, v)]
        tkw = {n: (torch.as_tensor(a, device=device) if n == "mask" else a) for n, a in kw.items()}
        (fn(*leaves, **tkw) * grad_out).sum().backward()
        return [leaf.grad for leaf in leaves]

    def theirs(tq, tk, tv, mask=None, is_causal=False, scale=None):
        return _torch_sdpa(tq, tk, tv, mask, is_causal, scale)

    expected = grads(theirs)
    for ours in (
        lambda *a, **kw: ac.scaled_dot_product_attention(*a, enable_gqa=True, **kw)[0],
        lambda *a, **kw: flash_attention(*a, enable_gqa=True, block_size=2, **kw),
    ):
        for got, want in zip(grads(ours), expected):
            assert got.shape == want.shape  # k and v keep their H_kv heads: the gradient sums over the group
            assert_close(got.cpu(), want.cpu())


def test_numpy_and_torch_agree(rng):
    q, k, v = _qkv(rng, *SHAPES["GQA 8/2"])
    mask = rng.random((2, 8, 5, 7)) > 0.3
    a = ac.scaled_dot_product_attention(q, k, v, mask, enable_gqa=True, is_causal=True)[0]
    b = ac.scaled_dot_product_attention(
        *(torch.as_tensor(x) for x in (q, k, v, mask)), enable_gqa=True, is_causal=True
    )[0]
    np.testing.assert_allclose(a, b.numpy(), rtol=1e-12, atol=1e-12)


def test_broadcast_batch_and_three_dimensional_inputs(rng):
    """Leading dimensions still broadcast; (H, L, E) inputs have no batch axis."""
    q, k, v = rng.normal(size=(3, 4, 5, 2)), rng.normal(size=(1, 2, 6, 2)), rng.normal(size=(1, 2, 6, 3))
    out, w = ac.scaled_dot_product_attention(q, k, v, enable_gqa=True)
    np.testing.assert_allclose(out, _reference(q, np.repeat(k, 3, 0), np.repeat(v, 3, 0)), atol=1e-12)
    assert w.shape == (3, 4, 5, 6)
    out3, _ = ac.scaled_dot_product_attention(q[0], k[0], v[0], enable_gqa=True)
    np.testing.assert_allclose(out3, out[0], atol=1e-12)


def test_mqa_with_enable_gqa_equals_broadcasting_one_head(rng):
    """H_kv = 1 broadcasts even without enable_gqa (as before); both give the same numbers."""
    q, k, v = _qkv(rng, 2, 4, 1, 5, 5, 4, 4)
    a = ac.scaled_dot_product_attention(q, k, v, enable_gqa=True)[0]
    b = ac.scaled_dot_product_attention(q, k, v)[0]
    np.testing.assert_allclose(a, b, atol=1e-12)


@pytest.mark.parametrize("kind", ["numpy", "torch"])
def test_cached_decoding_with_grouped_heads_equals_recomputing(rng, kind):
    q, k, v = _qkv(rng, 1, 4, 2, 6, 6, 4, 3)
    to = (lambda a: torch.as_tensor(a)) if kind == "torch" else np.asarray
    q, k, v = to(q), to(k), to(v)
    cache = KVCache()
    first = cached_attention(q[..., :3, :], k[..., :3, :], v[..., :3, :], cache, enable_gqa=True)
    steps = [
        cached_attention(
            q[..., t : t + 1, :], k[..., t : t + 1, :], v[..., t : t + 1, :], cache, enable_gqa=True
        )
        for t in range(3, 6)
    ]
    got = np.concatenate([np.asarray(first)] + [np.asarray(s) for s in steps], axis=-2)
    full = ac.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)[0]
    np.testing.assert_allclose(got, np.asarray(full), atol=1e-12)
    assert tuple(cache.k.shape) == (1, 2, 6, 4)  # the cache holds H_kv = 2 heads, not 4


def z(*shape):
    return np.zeros(shape)


ERRORS = {
    "mismatch without enable_gqa": (
        (z(2, 8, 5, 4), z(2, 2, 7, 4), z(2, 2, 7, 4)),
        {},
        r"(?s)do not broadcast.*H=8 heads and k, v have H_kv=2.*pass enable_gqa=True",
    ),
    "H not a multiple of H_kv": (
        (z(1, 8, 5, 4), z(1, 3, 7, 4), z(1, 3, 7, 4)),
        {"enable_gqa": True},
        r"must be a multiple.*got H=8 query heads and H_kv=3 key/value heads",
    ),
    "more KV heads than query heads": (
        (z(1, 2, 5, 4), z(1, 4, 7, 4), z(1, 4, 7, 4)),
        {"enable_gqa": True},
        r"got H=2 query heads and H_kv=4",
    ),
    "k and v head counts differ": (
        (z(1, 8, 5, 4), z(1, 2, 7, 4), z(1, 4, 7, 4)),
        {"enable_gqa": True},
        r"same number of key/value heads.*got H_kv=2 for k and H_kv=4 for v",
    ),
    "no head axis": (
        (z(5, 4), z(7, 4), z(7, 4)),
        {"enable_gqa": True},
        r"enable_gqa=True needs a head dimension \(-3\)",
    ),
    "mask per KV head": (
        (z(1, 8, 5, 4), z(1, 2, 7, 4), z(1, 2, 7, 4), np.ones((1, 2, 5, 7), bool)),
        {"enable_gqa": True},
        r"mask of shape \(1, 2, 5, 7\) does not broadcast to the scores' shape \(1, 8, 5, 7\)",
    ),
}


@pytest.mark.parametrize("name", list(ERRORS))
def test_errors_name_the_head_counts(name):
    args, kw, pattern = ERRORS[name]
    for fn, prefix in (
        (ac.scaled_dot_product_attention, "scaled_dot_product_attention: "),
        (flash_attention, "flash_attention: "),
    ):
        with pytest.raises(ValueError, match=pattern) as err:
            fn(*args, **kw)
        assert str(err.value).startswith(prefix)


@pytest.mark.cuda
def test_cuda_grouped_flash_matches_cpu(rng):
    q, k, v = (torch.as_tensor(a, dtype=torch.float32) for a in _qkv(rng, *SHAPES["GQA 8/2"]))
    cpu = flash_attention(q, k, v, is_causal=True, enable_gqa=True)
    gpu = flash_attention(q.cuda(), k.cuda(), v.cuda(), is_causal=True, enable_gqa=True)
    assert gpu.device.type == "cuda"
    assert_close(gpu.cpu(), cpu)


@needs_triton
@pytest.mark.skipif(INTERPRETING, reason="this is the child process")
def test_triton_grouped_heads_in_the_interpreter():
    child = run_interpreter_cases(__file__)
    assert child.returncode == 0, child.stdout[-4000:] + child.stderr[-2000:]
    assert re.search(r"\b3 passed", child.stdout), child.stdout[-2000:]


@needs_triton
@pytest.mark.parametrize("device", TRITON_DEVICES)
@pytest.mark.parametrize("variant", ["plain", "is_causal", "per-head mask"])
def test_triton_kernel_with_grouped_heads(rng, device, variant):
    B, H, H_kv, L, S, E, Ev = SHAPES["GQA 8/2"]
    q, k, v = (torch.as_tensor(a, dtype=torch.float32, device=device) for a in _qkv(rng, *SHAPES["GQA 8/2"]))
    kw = {
        n: (torch.as_tensor(a, device=device) if n == "mask" else a)
        for n, a in _kwargs(rng, variant, B, H, L, S).items()
    }
    got = triton_flash_attention(q, k, v, enable_gqa=True, block_m=16, block_n=16, **kw)
    want = flash_attention(q.double(), k.double(), v.double(), enable_gqa=True, **kw)
    assert got.shape == (B, H, L, Ev) and got.dtype == torch.float32
    assert_close(got, want)
