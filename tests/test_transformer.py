"""TransformerBlock against torch.nn.TransformerEncoderLayer; TinyTransformer's causality and checks."""

import pytest
import torch

import attncourse as ac
from attncourse.transformer import TinyTransformer, TransformerBlock, next_token_probs
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
        d_model,
        n_heads,
        d_ff,
        dropout=0.0,
        activation="gelu",
        batch_first=True,
        norm_first=norm_first,
        bias=bias,
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

        def attn(h, block=block):
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
    silu = torch.nn.TransformerEncoderLayer(8, 2, 16, activation=torch.nn.functional.silu, batch_first=True)
    with pytest.raises(ValueError, match="TransformerBlock.from_torch: only activation='relu' or 'gelu'"):
        TransformerBlock.from_torch(silu)
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
        kwargs = {"vocab_size": 5, "d_model": 8, "n_heads": 2, "n_layers": 1, "max_len": 4}
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


# --- attention dropout, the unmasked model, decoding with a KV cache, generation ----------------


def test_attn_dropout_is_its_own_knob():
    assert TransformerBlock(8, 2, dropout=0.3).attn.dropout.p == 0.3  # None: the same as dropout
    block = TransformerBlock(8, 2, dropout=0.0, attn_dropout=0.5)
    assert block.attn.dropout.p == 0.5
    assert block.drop1.p == block.drop2.p == block.mlp.drop.p == 0.0
    torch.manual_seed(0)
    x = torch.randn(2, 6, 8)
    block.train()
    _, w1 = block(x, is_causal=True)
    _, w2 = block(x, is_causal=True)
    assert not torch.equal(w1, w2)  # the weights themselves are dropped, differently each call
    assert ((w1 == 0) | (w1 > 0)).all() and w1.triu(1).eq(0).all()
    block.eval()
    assert_close(block(x)[0], block(x)[0])
    model = TinyTransformer(5, 8, 2, 2, 4, dropout=0.1, attn_dropout=0.0)
    assert all(b.attn.dropout.p == 0.0 and b.drop1.p == 0.1 for b in model.blocks)
    with pytest.raises(ValueError, match=r"attn_dropout must be in \[0, 1\)"):
        TransformerBlock(8, 2, attn_dropout=1.0)


def test_unmasked_model_sees_the_future():
    torch.manual_seed(0)
    model = TinyTransformer(11, d_model=16, n_heads=4, n_layers=2, max_len=9, causal=False).eval()
    tokens = torch.randint(0, 11, (2, 9))
    logits, weights = model(tokens)
    assert all(w.triu(1).sum() > 0 for w in weights)  # weight above the diagonal
    changed = tokens.clone()
    changed[:, 8] = (changed[:, 8] + 1) % 11
    assert not torch.allclose(model(changed)[0][:, 0], logits[:, 0])  # the last token reaches position 0


@pytest.mark.parametrize("norm_first", [True, False], ids=["pre-norm", "post-norm"])
@pytest.mark.parametrize("chunks", [(1,) * 7, (3, 1, 1, 2), (7,)], ids=["one by one", "mixed", "all at once"])
def test_block_step_with_cache_equals_causal_forward(norm_first, chunks):
    torch.manual_seed(0)
    block = TransformerBlock(12, 3, 20, norm_first=norm_first).double().eval()
    x = torch.randn(2, 7, 12, dtype=torch.float64)
    full, _ = block(x, is_causal=True)
    cache, outs, t = ac.KVCache(), [], 0
    for n in chunks:
        outs.append(block.step(x[:, t : t + n], cache))
        t += n
        assert len(cache) == t and cache.k.shape == (2, 3, t, 4)  # (B, H, S, d_head)
    assert_close(torch.cat(outs, dim=1), full)


def test_block_step_refuses_what_it_cannot_do():
    block = TransformerBlock(8, 2, attn_dropout=0.1)
    with pytest.raises(ValueError, match=r"training mode .*\(p=0.1\).*\.eval\(\)"):
        block.step(torch.randn(1, 1, 8), ac.KVCache())
    block.eval()
    with pytest.raises(ValueError, match="cache must be a KVCache; got list"):
        block.step(torch.randn(1, 1, 8), [])
    with pytest.raises(ValueError, match=r"x must be \(B, L, d_model=8\); got shape \(1, 8\)"):
        block.step(torch.randn(1, 8), ac.KVCache())


@pytest.mark.parametrize("device", DEVICES)
def test_decode_equals_forward(device):
    model = _tiny().double().to(device)
    tokens = torch.randint(0, 11, (3, 9), device=device)
    full, _ = model(tokens)
    caches = [ac.KVCache() for _ in model.blocks]
    parts = [model.decode(tokens[:, :4], caches)] + [
        model.decode(tokens[:, t : t + 1], caches) for t in range(4, 9)
    ]
    assert_close(torch.cat(parts, dim=1), full)
    assert all(len(c) == 9 for c in caches)


def test_decode_bad_input():
    model = _tiny()
    tokens = torch.tensor([[1, 2, 3]])
    with pytest.raises(ValueError, match="caches must be 2 KVCache objects, one per block; got 1"):
        model.decode(tokens, [ac.KVCache()])
    caches = [ac.KVCache() for _ in model.blocks]
    model.blocks[0].step(model.tok_emb(tokens), caches[0])  # only the first cache grows
    with pytest.raises(ValueError, match=r"different lengths \[3, 0\]"):
        model.decode(tokens, caches)
    caches = [ac.KVCache() for _ in model.blocks]
    model.decode(torch.zeros(1, 8, dtype=torch.long), caches)
    with pytest.raises(ValueError, match="8 cached \\+ 2 new tokens exceed max_len=9"):
        model.decode(tokens[:, :2], caches)
    unmasked = TinyTransformer(11, 16, 4, 2, 9, causal=False)
    with pytest.raises(ValueError, match="needs a causal model"):
        unmasked.decode(tokens, [ac.KVCache(), ac.KVCache()])


def _greedy_by_hand(model, prompt, n):
    tokens = prompt
    with torch.no_grad():
        for _ in range(n):
            nxt = model(tokens)[0][:, -1].argmax(-1, keepdim=True)
            tokens = torch.cat([tokens, nxt], dim=1)
    return tokens


def test_generate_greedy_is_argmax_of_the_last_logits():
    model = _tiny()
    prompt = torch.randint(0, 11, (4, 3))
    out = model.generate(prompt, 6)
    assert out.shape == (4, 9) and torch.equal(out[:, :3], prompt)
    assert torch.equal(out, _greedy_by_hand(model, prompt, 6))
    assert torch.equal(model.generate(prompt, 0), prompt)
    g = torch.Generator().manual_seed(0)  # top-1 sampling leaves one token: greedy again
    assert torch.equal(model.generate(prompt, 6, temperature=2.0, top_k=1, generator=g), out)


@pytest.mark.parametrize(
    "sampling",
    [{}, {"temperature": 1.0}, {"temperature": 0.7, "top_k": 3}],
    ids=["greedy", "T=1", "T=0.7, top-3"],
)
def test_generate_with_cache_gives_the_same_tokens(sampling):
    torch.manual_seed(0)
    model = TinyTransformer(13, d_model=24, n_heads=3, n_layers=3, max_len=40, d_ff=48).double()
    prompt = torch.randint(0, 13, (5, 4))
    runs = []
    for use_cache in (False, True):
        g = torch.Generator().manual_seed(1)
        runs.append(model.generate(prompt, 36, use_cache=use_cache, generator=g, **sampling))
    assert torch.equal(runs[0], runs[1])
    assert runs[0][:, 4:].unique().numel() > 1  # not a constant sequence: the comparison has teeth


def test_generate_samples_from_next_token_probs():
    model = _tiny()
    prompt = torch.tensor([[3, 1, 4]]).expand(4000, 3)
    with torch.no_grad():
        logits = model(prompt[:1])[0][0, -1]
    for temperature, top_k in ((1.0, None), (2.0, 4)):
        expected = next_token_probs(logits, temperature=temperature, top_k=top_k)
        g = torch.Generator().manual_seed(0)
        first = model.generate(prompt, 1, temperature=temperature, top_k=top_k, generator=g)[:, -1]
        freq = torch.bincount(first, minlength=11).float() / len(first)
        torch.testing.assert_close(freq, expected, rtol=0, atol=0.03)  # 4000 draws: sd <= 0.008
        if top_k is not None:
            assert (freq[expected == 0] == 0).all()  # never a token outside the top k
        g = torch.Generator().manual_seed(0)
        again = model.generate(prompt, 1, temperature=temperature, top_k=top_k, generator=g)[:, -1]
        assert torch.equal(again, first)  # the same generator state, the same draws


def test_generate_restores_the_mode_and_turns_dropout_off():
    torch.manual_seed(0)
    model = TinyTransformer(11, 16, 4, 2, 9, dropout=0.5).train()
    prompt = torch.tensor([[1, 2, 3]])
    a, b = model.generate(prompt, 5), model.generate(prompt, 5)
    assert torch.equal(a, b) and model.training
    assert torch.equal(a, _greedy_by_hand(model.eval(), prompt, 5))


def test_a_trained_model_generates_the_pattern():
    # Each sequence counts up by one, mod 8, from a random start: greedy decoding must continue it.
    torch.manual_seed(0)
    model = TinyTransformer(vocab_size=8, d_model=16, n_heads=2, n_layers=1, max_len=10)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    g = torch.Generator().manual_seed(0)
    for _ in range(60):
        tokens = (torch.randint(0, 8, (32, 1), generator=g) + torch.arange(10)) % 8  # (32, 10)
        logits, _ = model(tokens[:, :-1])
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, 8), tokens[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
    prompt = torch.tensor([[5], [2]])
    expected = (prompt + torch.arange(10)) % 8
    assert torch.equal(model.generate(prompt, 9), expected)
    assert torch.equal(model.generate(prompt, 9, use_cache=True), expected)


def test_generate_bad_input():
    model = _tiny()
    prompt = torch.tensor([[1, 2, 3]])
    with pytest.raises(ValueError, match=r"3 tokens and max_new_tokens=7, 10 in all, but max_len=9"):
        model.generate(prompt, 7)
    with pytest.raises(ValueError, match="max_new_tokens must be an integer >= 0; got -1"):
        model.generate(prompt, -1)
    with pytest.raises(ValueError, match="temperature must be a number >= 0"):
        model.generate(prompt, 2, temperature=-0.5)
    with pytest.raises(ValueError, match="top_k must be None or a positive integer; got 0"):
        model.generate(prompt, 2, temperature=1.0, top_k=0)
    with pytest.raises(ValueError, match=r"must be \(B, L\) with L >= 1; got shape \(3,\)"):
        model.generate(prompt[0], 2)
    unmasked = TinyTransformer(11, 16, 4, 2, 9, causal=False)
    with pytest.raises(ValueError, match="use_cache=True needs a causal model"):
        unmasked.generate(prompt, 2, use_cache=True)
    assert unmasked.generate(prompt, 2).shape == (1, 5)  # without the cache it runs (and cheats)


def test_next_token_probs():
    torch.manual_seed(0)
    logits = torch.randn(3, 10, dtype=torch.float64)
    order = logits.argsort(-1)
    for temperature in (0.3, 1.0, 4.0):
        p = next_token_probs(logits, temperature=temperature)
        assert_close(p.sum(-1), torch.ones(3, dtype=torch.float64))
        assert torch.equal(p.argsort(-1), order)  # the order of the logits is kept
        assert_close(p, torch.softmax(logits / temperature, -1))
    entropy = [
        -(p * p.log()).sum(-1) for p in (next_token_probs(logits, temperature=t) for t in (0.3, 1.0, 4.0))
    ]
    assert (entropy[0] < entropy[1]).all() and (entropy[1] < entropy[2]).all()  # flatter as T grows
    greedy = next_token_probs(logits, temperature=0)
    assert torch.equal(greedy.argmax(-1), logits.argmax(-1)) and torch.equal(
        greedy.sum(-1), torch.ones(3, dtype=torch.float64)
    )
    assert_close(next_token_probs(logits, temperature=1e-3), greedy)  # T -> 0 is the limit
    top3 = next_token_probs(logits, temperature=1.0, top_k=3)
    assert ((top3 > 0).sum(-1) == 3).all()
    kept = logits.topk(3, dim=-1).indices
    assert_close(top3.gather(-1, kept), torch.softmax(logits.gather(-1, kept), -1))
    assert_close(next_token_probs(logits, top_k=99), next_token_probs(logits))  # k >= V keeps all
    ties = torch.tensor([3.0, 1.0, 1.0, 0.0])
    assert next_token_probs(ties, top_k=2).gt(0).tolist() == [True, True, True, False]
    with pytest.raises(ValueError, match="logits must be a floating torch tensor"):
        next_token_probs(torch.tensor([1, 2]))
