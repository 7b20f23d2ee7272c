"""TransformerBlock against torch.nn.TransformerEncoderLayer; TinyTransformer's causality and checks."""

import pytest
import torch

import attncourse as ac
from attncourse.transformer import TinyTransformer, TransformerBlock
from support import DEVICES, assert_close

# Our parameter name -> nn.TransformerEncoderLayer's (in_proj_* stacks W_Q, W_K, W_V).
SAME_NAMES = {
    "attn.out_proj.weight": "self_attn.out_proj.weight",
    "attn.out_proj.bias": "self_attn.out_proj.bias",
    "mlp.up.weight": "linear1.weight",
    "mlp.up.bias": "linear1.bias",
    "mlp.down.weight": "linear2.weight",
    "mlp.down.bias": "linear2.bias",
    "norm1.weight": "norm1.weight",
    "norm1.bias": "norm1.bias",
    "norm2.weight": "norm2.weight",
    "norm2.bias": "norm2.bias",
}


def _pair(norm_first, bias=True, d_model=12, n_heads=3, d_ff=20, device="cpu"):
    torch.manual_seed(0)
    ref = torch.nn.TransformerEncoderLayer(
        d_model, n_heads, d_ff, dropout=0.0, activation="gelu", batch_first=True,
        norm_first=norm_first, bias=bias,
    )
    ref = ref.to(device=device, dtype=torch.float64).eval()
    with torch.no_grad():  # layer norms start at weight 1, bias 0: perturb them so a swap would show
        for p in (*ref.norm1.parameters(), *ref.norm2.parameters()):
            p.add_(0.1 * torch.randn_like(p))
    return ref, TransformerBlock.from_torch(ref)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("norm_first", [True, False], ids=["pre-norm", "post-norm"])
@pytest.mark.parametrize("masking", ["none", "is_causal", "causal mask", "key padding"])
def test_matches_nn_transformer_encoder_layer(device, bias, norm_first, masking):
    ref, ours = _pair(norm_first, bias, device=device)
    B, L = 2, 5
    x = torch.randn(B, L, 12, dtype=torch.float64, device=device, requires_grad=True)
    kw_ref, kw_ours = {}, {}
    if masking in ("is_causal", "causal mask"):
        blocked = torch.ones(L, L, dtype=torch.bool, device=device).triu(1)  # True = blocked
        kw_ref = {"src_mask": blocked, "is_causal": True}
        if masking == "is_causal":
            kw_ours = {"is_causal": True}
        else:
            kw_ours = {"mask": ac.causal_mask(L, like=x)}
    elif masking == "key padding":
        blocked = torch.zeros(B, L, dtype=torch.bool, device=device)
        blocked[1, 3:] = True
        kw_ref = {"src_key_padding_mask": blocked}
        kw_ours = {"key_padding_mask": ~blocked}
    out_ref = ref(x, **kw_ref)
    out, weights = ours(x, **kw_ours)
    assert out.shape == (B, L, 12) and weights.shape == (B, 3, L, L)
    assert_close(out, out_ref)
    if masking in ("is_causal", "causal mask"):
        assert not weights.triu(1).any()  # no weight on a later key
    if masking == "key padding":
        assert not weights[1, :, :, 3:].any()  # no weight on a padded key

    cot = torch.randn_like(out_ref)
    g_ref = torch.autograd.grad(out_ref, [x, *ref.parameters()], cot)
    g_ours = torch.autograd.grad(out, [x, *ours.parameters()], cot)
    assert_close(g_ours[0], g_ref[0])  # gradient with respect to the input
    named_ref = dict(zip([n for n, _ in ref.named_parameters()], g_ref[1:]))
    named_ours = dict(zip([n for n, _ in ours.named_parameters()], g_ours[1:]))
    assert len(named_ours) == len(named_ref) + (4 if bias else 2)  # in_proj split into q, k, v
    for ours_name, ref_name in SAME_NAMES.items():
        if ours_name.endswith("bias") and not bias:
            assert ours_name not in named_ours
            continue
        assert_close(named_ours[ours_name], named_ref[ref_name])
    for kind in ("weight", "bias") if bias else ("weight",):
        stacked = torch.cat([named_ours[f"attn.{p}_proj.{kind}"] for p in "qkv"])
        assert_close(stacked, named_ref[f"self_attn.in_proj_{kind}"])


def test_pre_norm_and_post_norm_are_the_formulas():
    torch.manual_seed(0)
    x = torch.randn(2, 4, 8, dtype=torch.float64)
    for norm_first in (True, False):
        block = TransformerBlock(8, 2, 16, norm_first=norm_first).double()
        out, _ = block(x)

        def attn(h):
            return block.attn(h)[0]

        if norm_first:
            h = x + attn(block.norm1(x))
            expected = h + block.mlp(block.norm2(h))
        else:
            h = block.norm1(x + attn(x))
            expected = block.norm2(h + block.mlp(h))
        assert_close(out, expected)
    # Post-norm ends in a layer norm (weight 1, bias 0 at init): every row has mean 0, variance 1.
    assert_close(out.mean(-1), torch.zeros(2, 4, dtype=torch.float64), dtype=torch.float32)
    assert_close(out.var(-1, unbiased=False), torch.ones(2, 4, dtype=torch.float64), dtype=torch.float32)


def test_defaults_and_mlp_shape():
    block = TransformerBlock(16, 4)
    assert block.norm_first and block.d_ff == 64
    assert block.mlp.up.weight.shape == (64, 16) and block.mlp.down.weight.shape == (16, 64)
    assert isinstance(block.mlp.act, torch.nn.GELU) and block.mlp.act.approximate == "none"
    assert sum(p.numel() for p in block.parameters()) == 4 * 16 * 16 + 4 * 16 + 2 * 16 * 64 + 64 + 16 + 4 * 16
    assert TransformerBlock(16, 4, bias=False).norm1.bias is None


def test_dropout_only_in_training():
    torch.manual_seed(0)
    block = TransformerBlock(8, 2, dropout=0.5)
    x = torch.randn(2, 5, 8)
    block.eval()
    assert_close(block(x)[0], block(x)[0])
    block.train()
    assert not torch.allclose(block(x)[0], block(x)[0])


def test_from_torch_rejects_what_it_cannot_copy():
    relu = torch.nn.TransformerEncoderLayer(8, 2, 16, activation="relu", batch_first=True)
    with pytest.raises(ValueError, match="activation='gelu'"):
        TransformerBlock.from_torch(relu)
    with pytest.raises(ValueError, match="expected torch.nn.TransformerEncoderLayer"):
        TransformerBlock.from_torch(torch.nn.Linear(8, 8))


def test_block_bad_input():
    block = TransformerBlock(8, 2)
    with pytest.raises(ValueError, match=r"x must be \(B, L, d_model=8\); got shape \(5, 8\)"):
        block(torch.randn(5, 8))
    with pytest.raises(ValueError, match=r"x must be \(B, L, d_model=8\); got shape \(2, 5, 6\)"):
        block(torch.randn(2, 5, 6))
    with pytest.raises(ValueError, match="x must be a torch tensor"):
        block([[0.0] * 8])
    with pytest.raises(ValueError, match="not divisible by n_heads=3"):
        TransformerBlock(8, 3)
    with pytest.raises(ValueError, match="d_ff must be a positive integer"):
        TransformerBlock(8, 2, 0)
    with pytest.raises(ValueError, match=r"dropout must be in \[0, 1\)"):
        TransformerBlock(8, 2, dropout=1.0)


def _tiny(norm_first=True):
    torch.manual_seed(0)
    model = TinyTransformer(11, d_model=16, n_heads=4, n_layers=2, max_len=9, norm_first=norm_first)
    return model.eval()  # vocabulary: token ids 0..10


@pytest.mark.parametrize("norm_first", [True, False], ids=["pre-norm", "post-norm"])
def test_tiny_transformer_shapes_and_weights(norm_first):
    model = _tiny(norm_first)
    tokens = torch.randint(0, 11, (3, 7))
    logits, weights = model(tokens)
    assert logits.shape == (3, 7, 11)
    assert len(weights) == 2 and all(w.shape == (3, 4, 7, 7) for w in weights)
    for w in weights:
        torch.testing.assert_close(w.sum(-1), torch.ones(3, 4, 7))
        assert not w.triu(1).any()  # nothing above the diagonal: causal
    assert len(model.blocks) == 2 and all(b.norm_first == norm_first for b in model.blocks)


@pytest.mark.parametrize("norm_first", [True, False], ids=["pre-norm", "post-norm"])
def test_tiny_transformer_is_causal(norm_first):
    model = _tiny(norm_first)
    tokens = torch.randint(0, 11, (2, 9))
    logits, _ = model(tokens)
    for t in (0, 4, 8):
        changed = tokens.clone()
        changed[:, t] = (changed[:, t] + 1) % 11
        new_logits, _ = model(changed)
        # Positions before t cannot see token t: their logits are identical.
        torch.testing.assert_close(new_logits[:, :t], logits[:, :t], rtol=0, atol=0)
        assert not torch.allclose(new_logits[:, t], logits[:, t])  # position t itself does change
    # A prefix gives the same logits as the prefix positions of the full sequence.
    torch.testing.assert_close(model(tokens[:, :5])[0], logits[:, :5])


def test_tiny_transformer_bad_input():
    model = _tiny()
    with pytest.raises(ValueError, match=r"must be in \[0, vocab_size=11\); got values from 0 to 11"):
        model(torch.tensor([[0, 3, 11]]))
    with pytest.raises(ValueError, match=r"got values from -1 to 3"):
        model(torch.tensor([[-1, 3]]))
    with pytest.raises(ValueError, match="L=10 tokens but max_len=9"):
        model(torch.zeros(1, 10, dtype=torch.long))
    with pytest.raises(ValueError, match=r"must be \(B, L\) with L >= 1; got shape \(4,\)"):
        model(torch.zeros(4, dtype=torch.long))
    with pytest.raises(ValueError, match=r"L >= 1; got shape \(2, 0\)"):
        model(torch.zeros(2, 0, dtype=torch.long))
    with pytest.raises(ValueError, match="integer token ids; got dtype torch.float32"):
        model(torch.zeros(1, 3))
    with pytest.raises(ValueError, match="must be a torch tensor of token ids; got list"):
        model([[1, 2]])
    for name in ("vocab_size", "n_layers", "max_len"):
        kwargs = dict(vocab_size=5, d_model=8, n_heads=2, n_layers=1, max_len=4)
        kwargs[name] = 0
        with pytest.raises(ValueError, match=f"{name} must be a positive integer"):
            TinyTransformer(**kwargs)


@pytest.mark.slow
def test_tiny_transformer_learns_to_repeat_the_previous_token():
    # The target at position t is token t - 1: the model has to attend one step back.
    torch.manual_seed(0)
    model = TinyTransformer(vocab_size=8, d_model=16, n_heads=2, n_layers=1, max_len=6)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    g = torch.Generator().manual_seed(0)
    for _ in range(100):
        tokens = torch.randint(0, 8, (16, 6), generator=g)
        logits, _ = model(tokens)
        loss = torch.nn.functional.cross_entropy(logits[:, 1:].reshape(-1, 8), tokens[:, :-1].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert loss.item() < 0.05


@pytest.mark.parametrize("device", [pytest.param("cuda", marks=pytest.mark.cuda)])
def test_on_the_gpu_matches_the_cpu(device):
    model = _tiny()
    tokens = torch.randint(0, 11, (2, 9))
    logits, weights = model(tokens)
    logits_gpu, weights_gpu = model.to(device)(tokens.to(device))
    assert logits_gpu.device.type == device
    torch.testing.assert_close(logits_gpu.cpu(), logits, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(weights_gpu[1].cpu(), weights[1], rtol=1e-4, atol=1e-4)
