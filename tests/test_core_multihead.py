"""MultiHeadAttention against torch.nn.MultiheadAttention with copied weights."""

import math

import pytest

import attncourse as ac
from support import DEVICES, assert_close

torch = pytest.importorskip("torch")  # the whole module is about a torch.nn.Module


def _pair(d_model=12, n_heads=3, bias=True, device="cpu"):
    torch.manual_seed(0)
    ref = torch.nn.MultiheadAttention(d_model, n_heads, bias=bias, batch_first=True)
    ref = ref.to(device=device, dtype=torch.float64).eval()
    return ref, ac.MultiHeadAttention.from_torch(ref)


def _check_grads(ref, ours, out_ref, out_ours, inputs):
    cot = torch.randn_like(out_ref)
    g_ref = torch.autograd.grad(out_ref, [*inputs, *ref.parameters()], cot)
    g_ours = torch.autograd.grad(out_ours, [*inputs, *ours.parameters()], cot)
    for a, b in zip(g_ours[: len(inputs)], g_ref[: len(inputs)]):
        assert_close(a, b)
    # Parameter gradients: in_proj_weight/bias are W_Q, W_K, W_V stacked.
    named_ref = dict(zip([n for n, _ in ref.named_parameters()], g_ref[len(inputs) :]))
    named_ours = dict(zip([n for n, _ in ours.named_parameters()], g_ours[len(inputs) :]))
    stacked = torch.cat([named_ours[f"{p}_proj.weight"] for p in "qkv"])
    assert_close(stacked, named_ref["in_proj_weight"])
    assert_close(named_ours["out_proj.weight"], named_ref["out_proj.weight"])
    if "in_proj_bias" in named_ref:
        assert_close(torch.cat([named_ours[f"{p}_proj.bias"] for p in "qkv"]), named_ref["in_proj_bias"])


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("variant", ["self", "cross", "key padding", "causal", "one head", "B=1"])
def test_matches_nn_multihead_attention(device, bias, variant):
    n_heads = 1 if variant == "one head" else 3
    ref, ours = _pair(12, n_heads, bias, device)
    B = 1 if variant == "B=1" else 2
    opts = dict(dtype=torch.float64, device=device, requires_grad=True)
    x = torch.randn(B, 5, 12, **opts)
    mem = torch.randn(B, 7, 12, **opts) if variant == "cross" else x
    kw_ref, kw_ours = {}, {}
    if variant == "key padding":
        blocked = torch.zeros(B, 5, dtype=torch.bool, device=device)
        blocked[0, 3:] = True
        kw_ref["key_padding_mask"] = blocked
        kw_ours["key_padding_mask"] = ~blocked
    if variant == "causal":
        kw_ref["attn_mask"] = torch.ones(5, 5, dtype=torch.bool, device=device).triu(1)  # True = blocked
        kw_ours["is_causal"] = True
    out_ref, w_ref = ref(x, mem, mem, average_attn_weights=False, **kw_ref)
    out_ours, w_ours = ours(x, mem, mem, **kw_ours)
    assert out_ours.shape == (B, 5, 12) and w_ours.shape == (B, n_heads, 5, mem.shape[1])
    assert_close(out_ours, out_ref)
    assert_close(w_ours, w_ref)
    inputs = [x] if mem is x else [x, mem]
    _check_grads(ref, ours, out_ref, out_ours, inputs)


def test_scales_by_sqrt_d_head_not_sqrt_d_model():
    torch.manual_seed(0)
    m = ac.MultiHeadAttention(16, 4).double()
    x = torch.randn(1, 6, 16, dtype=torch.float64)
    _, w = m(x)
    q = ac.split_heads(m.q_proj(x), 4)
    k = ac.split_heads(m.k_proj(x), 4)
    scores = q @ k.transpose(-1, -2)
    torch.testing.assert_close(w, torch.softmax(scores / math.sqrt(4), -1))  # d_head = 4
    assert not torch.allclose(w, torch.softmax(scores / math.sqrt(16), -1), atol=1e-3)


def test_parameter_count_does_not_depend_on_heads():
    counts = {
        h: sum(p.numel() for p in ac.MultiHeadAttention(24, h).parameters()) for h in (1, 2, 3, 4, 6, 8)
    }
    assert set(counts.values()) == {4 * 24 * 24 + 4 * 24}


def test_self_attention_default_and_dropout_only_in_training():
    torch.manual_seed(0)
    m = ac.MultiHeadAttention(8, 2, dropout=0.5)
    x = torch.randn(2, 4, 8)
    m.eval()
    a, _ = m(x)
    b, _ = m(x, x, x)
    torch.testing.assert_close(a, b)
    m.train()
    torch.manual_seed(1)
    c, w_train = m(x)
    assert not torch.allclose(a, c)
    # The returned weights are the dropped ones, as in nn.MultiheadAttention: zeros appear.
    assert (w_train == 0).any() and torch.allclose(
        c, m.out_proj(ac.merge_heads(w_train @ ac.split_heads(m.v_proj(x), 2)))
    )


def test_from_torch_keeps_dtype_device_and_rejects_unsupported():
    ref = torch.nn.MultiheadAttention(8, 2, batch_first=True, dtype=torch.float64)
    assert ac.MultiHeadAttention.from_torch(ref).q_proj.weight.dtype == torch.float64
    with pytest.raises(ValueError, match="kdim/vdim different from embed_dim are not supported"):
        ac.MultiHeadAttention.from_torch(torch.nn.MultiheadAttention(8, 2, kdim=4, vdim=4, batch_first=True))
    with pytest.raises(ValueError, match="add_bias_kv and add_zero_attn are not supported"):
        ac.MultiHeadAttention.from_torch(
            torch.nn.MultiheadAttention(8, 2, add_bias_kv=True, batch_first=True)
        )
    with pytest.raises(ValueError, match="expected torch.nn.MultiheadAttention; got Linear"):
        ac.MultiHeadAttention.from_torch(torch.nn.Linear(2, 2))


def test_bad_construction_and_inputs():
    with pytest.raises(ValueError, match=r"d_model=10 is not divisible by n_heads=3.*one of \[1, 2, 5, 10\]"):
        ac.MultiHeadAttention(10, 3)
    m = ac.MultiHeadAttention(8, 2)
    with pytest.raises(ValueError, match=r"query must be \(B, L, d_model=8\); got shape \(2, 4, 6\)"):
        m(torch.randn(2, 4, 6))
    with pytest.raises(ValueError, match=r"key_padding_mask must be \(B, S\) = \(2, 4\); got \(2, 5\)"):
        m(torch.randn(2, 4, 8), key_padding_mask=torch.ones(2, 5, dtype=torch.bool))
    with pytest.raises(ValueError, match="key_padding_mask must be boolean"):
        m(torch.randn(2, 4, 8), key_padding_mask=torch.ones(2, 4))


@pytest.mark.cuda
def test_runs_on_cuda():
    ref, ours = _pair(device="cuda")
    x = torch.randn(2, 5, 12, dtype=torch.float64, device="cuda")
    out, w = ours(x, is_causal=True)
    assert out.is_cuda and w.is_cuda
