"""TransformerEncoderDecoder against torch.nn.Transformer, cached decoding against forward, errors.

Parity: both norm orders, relu and gelu, float32 and float64, source padding, L != S, B = 1, no
biases, a non-causal target, and gradients.  Decoding: one token (or a few) at a time through
``decode_step`` equals ``forward``, with each decoder layer's cross-attention keys and values
projected once per source (counted with forward hooks on the projections).
"""

import warnings

import pytest

import attncourse as ac
from attncourse.models.decoder_block import DecoderBlock
from attncourse.models.encoder_decoder import DecodingCache, TransformerEncoderDecoder
from support import DEVICES, assert_close, torch


def _pair(
    norm_first=False,
    activation="relu",
    dtype=torch.float64,
    bias=True,
    device="cpu",
    d_model=16,
    layers=(2, 3),
):
    torch.manual_seed(0)
    with warnings.catch_warnings():  # nested-tensor notes about norm_first
        warnings.simplefilter("ignore")
        ref = torch.nn.Transformer(
            d_model,
            2,
            *layers,
            dim_feedforward=24,
            dropout=0.0,
            activation=activation,
            batch_first=True,
            norm_first=norm_first,
            bias=bias,
            device=device,
            dtype=dtype,
        ).eval()
    with torch.no_grad():  # layer norms start at weight 1, bias 0: perturb them so a swap would show
        for name, p in ref.named_parameters():
            if "norm" in name:
                p.add_(0.1 * torch.randn_like(p))
    return ref, TransformerEncoderDecoder.from_torch(ref)


def _inputs(B=3, S=7, L=5, d_model=16, dtype=torch.float64, device="cpu", lengths=(7, 4, 2)):
    g = torch.Generator().manual_seed(1)
    src = torch.randn(B, S, d_model, generator=g, dtype=dtype).to(device)
    tgt = torch.randn(B, L, d_model, generator=g, dtype=dtype).to(device)
    padding = None if lengths is None else (torch.arange(S) < torch.tensor(lengths)[:, None]).to(device)
    return src, tgt, padding


def _torch_forward(ref, src, tgt, padding, causal=True):
    L = tgt.shape[1]
    mask = (
        torch.nn.Transformer.generate_square_subsequent_mask(L, device=tgt.device, dtype=tgt.dtype)
        if causal
        else None
    )
    blocked = None if padding is None else ~padding
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ref(
            src,
            tgt,
            tgt_mask=mask,
            src_key_padding_mask=blocked,
            memory_key_padding_mask=blocked,
            tgt_is_causal=causal,
        )


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
@pytest.mark.parametrize("norm_first", [False, True])
def test_equals_torch_transformer(norm_first, activation, dtype):
    ref, ours = _pair(norm_first, activation, dtype)
    src, tgt, padding = _inputs(dtype=dtype)  # L = 5 targets, S = 7 sources, lengths 7, 4, 2
    with torch.no_grad():
        assert_close(ours(src, tgt, src_padding=padding), _torch_forward(ref, src, tgt, padding))


@pytest.mark.parametrize(
    "case",
    ["B=1, no padding", "L > S", "no biases", "target not causal", "one layer each"],
)
def test_equals_torch_transformer_variants(case):
    pair_kw, input_kw, causal = {}, {}, True
    if case == "B=1, no padding":
        input_kw = dict(B=1, lengths=None)
    elif case == "L > S":
        input_kw = dict(S=3, L=8, lengths=(3, 1, 2))
    elif case == "no biases":
        pair_kw = dict(bias=False, norm_first=True)
    elif case == "target not causal":
        causal = False
    else:
        pair_kw = dict(layers=(1, 1), activation="gelu")
    ref, ours = _pair(**pair_kw)
    src, tgt, padding = _inputs(**input_kw)
    with torch.no_grad():
        out = ours(src, tgt, src_padding=padding, tgt_is_causal=causal)
        assert_close(out, _torch_forward(ref, src, tgt, padding, causal))


@pytest.mark.parametrize("device", DEVICES)
def test_gradients_match_torch(device):
    ref, ours = _pair(norm_first=True, device=device)
    src, tgt, padding = _inputs(device=device)
    for model in (ref, ours):
        model.train()  # dropout is 0: training mode only keeps torch off its inference fast path
    inputs = [x.clone().requires_grad_() for x in (src, tgt)]
    their_inputs = [x.clone().requires_grad_() for x in (src, tgt)]
    out = ours(*inputs, src_padding=padding)
    theirs = _torch_forward(ref, *their_inputs, padding)
    assert_close(out, theirs)
    weight = torch.randn_like(out)
    (out * weight).sum().backward()
    (theirs * weight).sum().backward()
    for mine, other in zip(inputs, their_inputs):
        assert_close(mine.grad, other.grad)
    # one parameter of each kind: the decoder's cross-attention value projection, the encoder's MLP
    v_rows = slice(2 * 16, 3 * 16)  # W_V inside torch's stacked in_proj_weight
    assert_close(
        ours.decoder[1].cross_attn.v_proj.weight.grad,
        ref.decoder.layers[1].multihead_attn.in_proj_weight.grad[v_rows],
    )
    assert_close(ours.encoder[0].mlp.up.weight.grad, ref.encoder.layers[0].linear1.weight.grad)


def test_encode_equals_torch_encoder_on_real_tokens():
    ref, ours = _pair(norm_first=False)
    src, _, padding = _inputs()
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = ref.encoder(src, src_key_padding_mask=~padding)
        memory = ours.encode(src, padding)
    # torch's inference fast path may leave padded positions at 0; only real tokens are read.
    assert_close(memory[padding], theirs[padding])


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("chunks", [[1] * 6, [3, 1, 2]])
def test_cached_decoding_equals_forward(norm_first, chunks):
    _, model = _pair(norm_first=norm_first, activation="gelu")
    src, tgt, padding = _inputs(L=6)
    with torch.no_grad():
        full = model(src, tgt, src_padding=padding)
        cache = model.start_decoding(model.encode(src, padding), padding)
        outs, t = [], 0
        for n in chunks:  # a prompt of several positions, then one at a time
            outs.append(model.decode_step(tgt[:, t : t + n], cache))
            t += n
    assert len(cache) == 6
    assert_close(torch.cat(outs, dim=1), full)


def test_cross_attention_keys_and_values_are_projected_once_per_layer():
    _, model = _pair(layers=(2, 3))
    src, tgt, padding = _inputs(L=6)
    counts = {"k": 0, "v": 0}
    hooks = []
    for block in model.decoder:
        for name in ("k", "v"):
            proj = getattr(block.cross_attn, f"{name}_proj")
            hooks.append(
                proj.register_forward_hook(lambda *_, name=name: counts.__setitem__(name, counts[name] + 1))
            )
    try:
        with torch.no_grad():
            memory = model.encode(src, padding)
            cache = model.start_decoding(memory, padding)
            for t in range(6):
                model.decode_step(tgt[:, t : t + 1], cache)
            assert counts == {"k": 3, "v": 3}  # one per decoder layer, for all 6 tokens
            for t in range(6):  # without the cache: the whole target again at every token
                model.decode(tgt[:, : t + 1], memory, src_padding=padding)
            assert counts == {"k": 3 + 3 * 6, "v": 3 + 3 * 6}
    finally:
        for hook in hooks:
            hook.remove()


def test_decoder_block_equals_torch_decoder_layer():
    torch.manual_seed(0)
    layer = torch.nn.TransformerDecoderLayer(
        16, 4, 24, dropout=0.0, batch_first=True, dtype=torch.float64
    ).eval()
    block = DecoderBlock.from_torch(layer)
    x, memory, padding = _inputs(L=5)[1], _inputs()[0], _inputs()[2]
    mask = torch.nn.Transformer.generate_square_subsequent_mask(5, dtype=torch.float64)
    out, self_weights, cross_weights = block(x, memory, memory_padding=padding)
    assert_close(out, layer(x, memory, tgt_mask=mask, memory_key_padding_mask=~padding, tgt_is_causal=True))
    assert self_weights.shape == (3, 4, 5, 5) and cross_weights.shape == (3, 4, 5, 7)
    assert not cross_weights[2, :, :, 2:].any()  # the third source has 2 real tokens


def test_top_level_export_is_lazy_and_the_same_class():
    assert ac.TransformerEncoderDecoder is TransformerEncoderDecoder
    assert "TransformerEncoderDecoder" in ac.__all__


def test_training_mode_with_dropout_refuses_to_decode_with_cache():
    model = TransformerEncoderDecoder(16, 2, 1, dropout=0.1)
    src, tgt, _ = _inputs(dtype=torch.float32)
    cache = model.start_decoding(model.encode(src))
    with pytest.raises(ValueError, match="call .eval"):
        model.decode_step(tgt[:, :1], cache)


def _bad(name):
    src, tgt, padding = _inputs(dtype=torch.float32)
    return {
        "src d_model": (dict(src=src[..., :8]), r"src must be \(B, S, d_model=16\); got shape \(3, 7, 8\)"),
        "src 2-d": (dict(src=src[0]), r"src must be \(B, S, d_model=16\)"),
        "tgt d_model": (dict(tgt=tgt[..., :8]), r"tgt must be \(B, L, d_model=16\)"),
        "batch": (dict(tgt=tgt[:2]), "src and tgt must share the batch size B"),
        "padding shape": (dict(src_padding=padding[:, :5]), r"src_padding must be \(B, S\) = \(3, 7\)"),
        "padding dtype": (dict(src_padding=padding.float()), "src_padding must be a boolean tensor"),
        "numpy src": (dict(src=src.numpy()), "src must be a torch tensor"),
    }[name]


@pytest.mark.parametrize(
    "name", ["src d_model", "src 2-d", "tgt d_model", "batch", "padding shape", "padding dtype", "numpy src"]
)
def test_bad_input_names_the_argument(name):
    model = TransformerEncoderDecoder(16, 2, 1)
    src, tgt, padding = _inputs(dtype=torch.float32)
    given, match = _bad(name)
    kwargs = {"src": src, "tgt": tgt, "src_padding": padding, **given}
    with pytest.raises(ValueError, match=f"TransformerEncoderDecoder: {match}"):
        model(kwargs.pop("src"), kwargs.pop("tgt"), **kwargs)


def test_from_torch_and_decode_step_errors():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        seq_first = torch.nn.Transformer(16, 2, 1, 1, 24)
        silu = torch.nn.Transformer(16, 2, 1, 1, 24, activation=torch.nn.functional.silu, batch_first=True)
    with pytest.raises(ValueError, match="batch_first=True"):
        TransformerEncoderDecoder.from_torch(seq_first)
    with pytest.raises(ValueError, match="only activation='relu' or 'gelu'"):
        TransformerEncoderDecoder.from_torch(silu)
    with pytest.raises(ValueError, match="expected torch.nn.Transformer"):
        TransformerEncoderDecoder.from_torch(torch.nn.Linear(16, 16))
    model = TransformerEncoderDecoder(16, 2, 1)
    src, tgt, _ = _inputs(dtype=torch.float32)
    with pytest.raises(ValueError, match="cache must be the DecodingCache"):
        model.decode_step(tgt[:, :1], [])
    cache = model.start_decoding(model.encode(src))
    assert isinstance(cache, DecodingCache) and len(cache) == 0
    with pytest.raises(ValueError, match="batch size B=3"):
        model.decode_step(tgt[:2, :1], cache)
    with pytest.raises(ValueError, match="n_encoder_layers must be a positive integer"):
        TransformerEncoderDecoder(16, 2, 0)
