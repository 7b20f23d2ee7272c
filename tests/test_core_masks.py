import numpy as np
import pytest

import attncourse as ac
from support import DEVICES, torch


def test_causal_mask_values():
    np.testing.assert_array_equal(ac.causal_mask(3, 4), np.tril(np.ones((3, 4), bool)))
    assert ac.causal_mask(4).dtype == bool and ac.causal_mask(4).shape == (4, 4)


@pytest.mark.parametrize("device", DEVICES)
def test_causal_mask_like_tensor_is_on_its_device(device):
    x = torch.zeros(1, device=device)
    m = ac.causal_mask(2, 3, like=x)
    assert m.dtype == torch.bool and m.device == x.device
    assert m.tolist() == [[True, False, False], [True, True, False]]


def test_causal_mask_matches_torch_is_causal():
    q = torch.randn(1, 3, 4, dtype=torch.float64)
    k = torch.randn(1, 6, 4, dtype=torch.float64)
    v = torch.randn(1, 6, 2, dtype=torch.float64)
    a = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    b = torch.nn.functional.scaled_dot_product_attention(
        q, k, v, attn_mask=torch.as_tensor(ac.causal_mask(3, 6))
    )
    torch.testing.assert_close(a, b)


def test_padding_mask_values_and_kinds():
    expected = [[True, True, False, False], [True, True, True, True], [False] * 4]
    assert ac.padding_mask([2, 4, 0], 4).tolist() == expected
    assert ac.padding_mask(np.array([2, 4, 0]), 4).tolist() == expected
    t = ac.padding_mask(torch.tensor([2, 4, 0]), 4)
    assert isinstance(t, torch.Tensor) and t.dtype == torch.bool and t.tolist() == expected


def test_padded_keys_get_zero_weight(rng):
    q, k, v = rng.normal(size=(2, 3, 4)), rng.normal(size=(2, 5, 4)), rng.normal(size=(2, 5, 2))
    mask = ac.padding_mask([3, 5], 5)[:, None, :]  # (B, S) -> (B, 1, S) for (B, L, S) scores
    _, w = ac.scaled_dot_product_attention(q, k, v, mask)
    assert (w[0, :, 3:] == 0).all() and (w[1] > 0).all()


def test_blocked_converters_round_trip_and_match_torch_mha():
    blocked = torch.tensor([[False, True, False], [False, False, True]])
    ours = ac.from_blocked_mask(blocked)
    assert ours.tolist() == [[True, False, True], [True, True, False]]
    assert torch.equal(ac.to_blocked_mask(ours), blocked)
    # nn.MultiheadAttention with key_padding_mask (True = blocked) == ours with the converted mask
    m = torch.nn.MultiheadAttention(8, 2, batch_first=True).double().eval()
    mine = ac.MultiHeadAttention.from_torch(m)
    x = torch.randn(2, 3, 8, dtype=torch.float64)
    ref, _ = m(x, x, x, key_padding_mask=blocked)
    out, _ = mine(x, mask=ac.from_blocked_mask(blocked)[:, None, None, :])
    torch.testing.assert_close(out, ref)


def test_hf_attention_mask():
    hf = np.array([[1, 1, 0], [1, 0, 0]])
    m = ac.from_hf_attention_mask(hf)
    assert m.shape == (2, 1, 1, 3) and m.dtype == bool
    assert m[:, 0, 0].tolist() == [[True, True, False], [True, False, False]]
    assert ac.from_hf_attention_mask(torch.tensor(hf)).dtype == torch.bool
    with pytest.raises(ValueError, match=r"only 0 \(padding\) and 1 \(keep\); got values \[0.0, 1.0, 2.0\]"):
        ac.from_hf_attention_mask(np.array([[1, 2, 0]]))
    with pytest.raises(ValueError, match=r"attention_mask must be \(B, S\); got shape \(3,\)"):
        ac.from_hf_attention_mask(np.array([1, 1, 0]))


def test_additive_converters_match_torch_float_mask(rng):
    mask = rng.random((4, 5)) > 0.3
    mask[:, 0] = True
    additive = ac.to_additive_mask(mask)
    assert additive.dtype == np.float64 and set(np.unique(additive)) == {0.0, -np.inf}
    np.testing.assert_array_equal(ac.from_additive_mask(additive), mask)
    np.testing.assert_array_equal(ac.from_additive_mask(np.where(mask, 0.0, -1e9)), mask)
    bert_style = (1.0 - np.array([[1, 1, 0]], dtype=np.float32)) * -10000.0  # [[-0., -0., -1e4]]
    assert ac.from_additive_mask(bert_style).tolist() == [[True, True, False]]
    q, k, v = (torch.tensor(rng.normal(size=s)) for s in [(4, 3), (5, 3), (5, 2)])
    ref = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=torch.tensor(additive))
    out, _ = ac.scaled_dot_product_attention(q, k, v, torch.tensor(mask))
    torch.testing.assert_close(out, ref)
    with pytest.raises(ValueError, match="holds other values, so it is a bias, not a mask"):
        ac.from_additive_mask(np.array([0.0, -0.5]))
    t = ac.to_additive_mask(torch.tensor([True, False]), dtype=torch.float16)
    assert t.dtype == torch.float16 and t.tolist() == [0.0, float("-inf")]


def test_converters_refuse_non_boolean():
    with pytest.raises(TypeError, match=r"expected a boolean mask \(True = blocked\); got dtype int64"):
        ac.from_blocked_mask(np.array([0, 1]))
    with pytest.raises(TypeError, match=r"expected a float mask \(0 / -inf\); got dtype bool"):
        ac.from_additive_mask(np.array([True]))


def test_decoder_outputs_do_not_change_when_a_token_is_appended(rng):
    x = rng.normal(size=(6, 8))
    out5, _ = ac.scaled_dot_product_attention(x[:5], x[:5], x[:5], is_causal=True)
    out6, _ = ac.scaled_dot_product_attention(x, x, x, is_causal=True)
    np.testing.assert_allclose(out6[:5], out5, rtol=1e-12)
