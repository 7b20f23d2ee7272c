"""Chapter 11's package parts: cache sizes, window-with-sinks masks, the rolling and paged caches, and
grouped-query attention inside MultiHeadAttention / TinyTransformer."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import attncourse as ac
from attncourse import kv_cache
from attncourse.transformer import TinyTransformer, TransformerBlock


def test_cache_bytes_counts_keys_and_values_per_layer_and_head():
    # Llama-3-8B: 32 layers, 8 KV heads of 128, bfloat16 -> 128 KiB a token.
    assert kv_cache.kv_cache_bytes(32, 8, 128) == 128 * 2**10
    for layers, kv, d, T, batch, b in [(2, 3, 5, 7, 2, 4), (1, 1, 1, 0, 1, 1), (80, 8, 128, 4096, 3, 2)]:
        total = sum(2 * kv * d * b for _layer in range(layers) for _tok in range(T) for _seq in range(batch))
        assert kv_cache.kv_cache_bytes(layers, kv, d, T, batch=batch, bytes_per_number=b) == total


def test_cache_bytes_window_and_latent():
    assert kv_cache.kv_cache_bytes(4, 2, 8, 100, window=10) == kv_cache.kv_cache_bytes(4, 2, 8, 10)
    assert kv_cache.kv_cache_bytes(4, 2, 8, 5, window=10) == kv_cache.kv_cache_bytes(4, 2, 8, 5)
    # MLA: the latent and the shared RoPE key, independent of the head count
    for heads in (1, 16, 128):
        assert (
            kv_cache.kv_cache_bytes(61, heads, 128, 3, kv_lora_rank=512, rope_head_dim=64) == 61 * 576 * 3 * 2
        )
    with pytest.raises(ValueError, match="window"):
        kv_cache.kv_cache_bytes(1, 1, 1, 5, window=0)
    with pytest.raises(ValueError, match="n_kv_heads"):
        kv_cache.kv_cache_bytes(1, 0, 1)


def _window_sink_loop(L, S, window, sinks):
    out = np.zeros((L, S), dtype=bool)
    for i in range(L):
        for j in range(S):
            out[i, j] = j <= i and (i - j < window or j < sinks)
    return out


@pytest.mark.parametrize(
    "L,S,window,sinks", [(6, 6, 1, 0), (9, 9, 3, 2), (5, 8, 2, 1), (7, 4, 10, 0), (8, 8, 4, 8)]
)
def test_window_sink_mask_against_loop(L, S, window, sinks):
    got = kv_cache.window_sink_mask(L, window, sinks, S=S)
    assert got.dtype == bool and got.shape == (L, S)
    np.testing.assert_array_equal(got, _window_sink_loop(L, S, window, sinks))
    if sinks == 0:
        np.testing.assert_array_equal(got, ac.sliding_window_mask(L, window, S))


def test_window_sink_mask_errors():
    with pytest.raises(ValueError, match="window"):
        kv_cache.window_sink_mask(4, 0)
    with pytest.raises(ValueError, match="n_sinks"):
        kv_cache.window_sink_mask(4, 2, -1)


@pytest.mark.parametrize("window,sinks", [(1, 0), (3, 0), (3, 2), (20, 1)])
def test_rolling_cache_decodes_windowed_attention(window, sinks):
    rng = np.random.default_rng(3)
    T = 11
    q, k, v = rng.normal(size=(2, T, 4)), rng.normal(size=(2, T, 4)), rng.normal(size=(2, T, 3))
    cache = kv_cache.RollingKVCache(window, sinks)
    rows = []
    for t in range(T):
        k_all, v_all = cache.append(k[:, t : t + 1], v[:, t : t + 1])
        assert len(cache) == min(t + 1, window + sinks) == k_all.shape[-2]
        rows.append(ac.scaled_dot_product_attention(q[:, t : t + 1], k_all, v_all)[0])
    ref, _ = ac.scaled_dot_product_attention(q, k, v, kv_cache.window_sink_mask(T, window, sinks))
    np.testing.assert_allclose(np.concatenate(rows, axis=-2), ref, atol=1e-12)
    kept = [j for j in range(T) if j < sinks or T - 1 - j < window]
    assert cache.positions == kept


def test_rolling_cache_torch_and_errors():
    cache = kv_cache.RollingKVCache(2)
    for t in range(4):
        k_all, _ = cache.append(torch.full((1, 1, 2), float(t)), torch.zeros(1, 1, 2))
    assert isinstance(k_all, torch.Tensor) and k_all[0, :, 0].tolist() == [2.0, 3.0]
    with pytest.raises(ValueError, match="one token"):
        cache.append(torch.zeros(1, 2, 2), torch.zeros(1, 2, 2))


def test_paged_cache_block_table_and_waste():
    rng = np.random.default_rng(0)
    lengths = rng.integers(1, 60, size=12).tolist()
    block = 8
    cache = kv_cache.PagedKVCache(n_blocks=200, block_size=block)
    for step in range(max(lengths)):  # tokens arrive interleaved, one per sequence per step
        for s, n in enumerate(lengths):
            if step < n:
                cache.append(s, 1)
    blocks = sum(-(-n // block) for n in lengths)
    assert cache.used_slots == blocks * block
    assert cache.wasted_slots == blocks * block - sum(lengths)
    seen = set()
    for s, n in enumerate(lengths):  # every token has its own slot
        for t in range(n):
            b, off = cache.slot(s, t)
            assert (b, off) not in seen and off == t % block
            seen.add((b, off))
    assert kv_cache.contiguous_slots(lengths, 64) == 12 * 64
    cache.free(0)
    assert len(cache.free_blocks) == 200 - blocks + -(-lengths[0] // block)
    with pytest.raises(ValueError, match="out of blocks"):
        kv_cache.PagedKVCache(2, 4).append("a", 9)
    with pytest.raises(ValueError, match="no token"):
        cache.slot(1, lengths[1])


@pytest.mark.parametrize("n_kv", [4, 2, 1])
def test_multihead_gqa_matches_torch_sdpa(n_kv):
    torch.manual_seed(0)
    mha = ac.MultiHeadAttention(32, 4, n_kv_heads=n_kv).double()
    assert mha.k_proj.weight.shape == (n_kv * 8, 32)
    x, y = torch.randn(2, 5, 32, dtype=torch.float64), torch.randn(2, 7, 32, dtype=torch.float64)
    out, weights = mha(x, y, y, mask=ac.padding_mask(torch.tensor([7, 3]), 7)[:, None, None, :])

    def heads(t, n):
        return t.view(2, -1, n, 8).transpose(1, 2)

    ref = F.scaled_dot_product_attention(
        heads(mha.q_proj(x), 4),
        heads(mha.k_proj(y), n_kv),
        heads(mha.v_proj(y), n_kv),
        attn_mask=ac.padding_mask(torch.tensor([7, 3]), 7)[:, None, None, :],
        enable_gqa=True,
    )
    torch.testing.assert_close(out, mha.out_proj(ref.transpose(1, 2).reshape(2, 5, 32)))
    assert weights.shape == (2, 4, 5, 7)


def test_gqa_module_errors_and_defaults():
    with pytest.raises(ValueError, match="n_kv_heads=3"):
        ac.MultiHeadAttention(32, 4, n_kv_heads=3)
    block = TransformerBlock(16, 4)
    assert block.attn.n_kv_heads == 4 and block.attn.k_proj.weight.shape == (16, 16)


@pytest.mark.parametrize("n_kv", [2, 1])
def test_gqa_transformer_decode_equals_forward(n_kv):
    torch.manual_seed(1)
    lm = TinyTransformer(16, 32, 4, 2, max_len=20, d_ff=64, n_kv_heads=n_kv).double().eval()
    tokens = torch.randint(0, 16, (2, 15))
    caches = [ac.KVCache() for _ in lm.blocks]
    out = [lm.decode(tokens[:, :6], caches)] + [lm.decode(tokens[:, t : t + 1], caches) for t in range(6, 15)]
    torch.testing.assert_close(torch.cat(out, 1), lm(tokens)[0])
    assert caches[0].k.shape == (2, n_kv, 15, 8)
    assert torch.equal(lm.generate(tokens[:, :4], 6, use_cache=True), lm.generate(tokens[:, :4], 6))
