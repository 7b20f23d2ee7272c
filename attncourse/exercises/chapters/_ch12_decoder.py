"""Chapter 12 exercises 12.7 and 12.8: a decoder block's forward pass from its weights, checked
against ``torch.nn.TransformerDecoderLayer``, and one decoding step with both caches."""

from __future__ import annotations

import numpy as np

from ... import softmax
from ..engine.registry import Case, Diagnosis, Exercise, grouped, register

__all__: list = []

# The block's weights as plain arrays, in torch's (out, in) layout: y = x @ W.T + b.
WEIGHTS = ("attn_w", "attn_b", "W1", "b1", "W2", "b2", "norms")
WEIGHTS_TEXT = (
    "`attn_w (2, 4, d, d)` and `attn_b (2, 4, d)`: for the self-attention (`[0]`) and the "
    "cross-attention (`[1]`), the query, key, value and output projections in that order, each as "
    "torch stores a Linear (`y = x @ W.T + b`; the heads are consecutive slices of width "
    "`d / n_heads`); the MLP `W1 (d_ff, d)`, `b1 (d_ff,)`, `W2 (d, d_ff)`, `b2 (d,)` with a ReLU "
    "between; `norms (3, 2, d)`: the weight and bias of the three LayerNorms (eps $10^{-5}$), in the "
    "order they are applied"
)


def _linear(x, W, b):
    return x @ np.swapaxes(W, -1, -2) + b


def _norm(x, wb, eps=1e-5):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * wb[0] + wb[1]


def _heads(x, n_heads):  # (B, T, d) -> (B, H, T, d / H)
    B, T, d = x.shape
    return x.reshape(B, T, n_heads, d // n_heads).transpose(0, 2, 1, 3)


def _attend(q, k, v, W_o, b_o, n_heads, mask):
    """Multi-head attention of projected q (B, L, d) to k, v (B, S, d); mask (B or 1, L, S)."""
    qh, kh, vh = _heads(q, n_heads), _heads(k, n_heads), _heads(v, n_heads)
    scores = qh @ np.swapaxes(kh, -1, -2) / np.sqrt(qh.shape[-1])  # (B, H, L, S)
    weights = softmax(np.where(mask[:, None], scores, -np.inf))
    out = (weights @ vh).transpose(0, 2, 1, 3).reshape(q.shape[0], q.shape[1], -1)  # (B, L, d)
    return _linear(out, W_o, b_o)


def _block(
    x,
    memory,
    src_padding,
    n_heads,
    attn_w,
    attn_b,
    W1,
    b1,
    W2,
    b2,
    norms,
    *,
    pre_norm=False,
    causal=True,
    padding=True,
    one_head=False,
):
    """The decoder block in numpy, post-norm as torch's default; flags make the classic mistakes."""
    H = 1 if one_head else n_heads
    L, S = x.shape[1], memory.shape[1]
    self_mask = np.tril(np.ones((L, L), dtype=bool))[None] if causal else np.ones((1, L, L), dtype=bool)
    cross_mask = src_padding[:, None, :] if padding else np.ones((1, L, S), dtype=bool)

    def self_attn(h):
        q, k, v = (_linear(h, attn_w[0, i], attn_b[0, i]) for i in range(3))
        return _attend(q, k, v, attn_w[0, 3], attn_b[0, 3], H, self_mask)

    def cross_attn(h):
        q = _linear(h, attn_w[1, 0], attn_b[1, 0])
        k, v = (_linear(memory, attn_w[1, i], attn_b[1, i]) for i in (1, 2))
        return _attend(q, k, v, attn_w[1, 3], attn_b[1, 3], H, cross_mask)

    def mlp(h):
        return _linear(np.maximum(_linear(h, W1, b1), 0.0), W2, b2)

    if pre_norm:
        x = x + self_attn(_norm(x, norms[0]))
        x = x + cross_attn(_norm(x, norms[1]))
        return x + mlp(_norm(x, norms[2]))
    x = _norm(x + self_attn(x), norms[0])
    x = _norm(x + cross_attn(x), norms[1])
    return _norm(x + mlp(x), norms[2])


def torch_layer(n_heads, attn_w, attn_b, W1, b1, W2, b2, norms):
    """``torch.nn.TransformerDecoderLayer`` (post-norm, ReLU, float64) holding these weights."""
    import torch

    d, d_ff = attn_w.shape[-1], W1.shape[0]
    layer = torch.nn.TransformerDecoderLayer(
        d, n_heads, d_ff, dropout=0.0, batch_first=True, dtype=torch.float64
    ).eval()
    t = lambda a: torch.as_tensor(np.asarray(a, dtype=np.float64))  # noqa: E731
    with torch.no_grad():
        for attn, i in ((layer.self_attn, 0), (layer.multihead_attn, 1)):
            attn.in_proj_weight.copy_(t(attn_w[i, :3].reshape(3 * d, d)))
            attn.in_proj_bias.copy_(t(attn_b[i, :3].reshape(3 * d)))
            attn.out_proj.weight.copy_(t(attn_w[i, 3]))
            attn.out_proj.bias.copy_(t(attn_b[i, 3]))
        for lin, W, b in ((layer.linear1, W1, b1), (layer.linear2, W2, b2)):
            lin.weight.copy_(t(W))
            lin.bias.copy_(t(b))
        for norm, wb in zip((layer.norm1, layer.norm2, layer.norm3), norms):
            norm.weight.copy_(t(wb[0]))
            norm.bias.copy_(t(wb[1]))
    return layer


def torch_block(x, memory, src_padding, n_heads, attn_w, attn_b, W1, b1, W2, b2, norms):
    """The reference: torch's decoder layer with the weights copied in, the causal mask, the padding."""
    import torch

    layer = torch_layer(n_heads, attn_w, attn_b, W1, b1, W2, b2, norms)
    L = x.shape[1]
    causal = torch.nn.Transformer.generate_square_subsequent_mask(L, dtype=torch.float64)
    with torch.no_grad():
        out = layer(
            torch.as_tensor(np.asarray(x, dtype=np.float64)),
            torch.as_tensor(np.asarray(memory, dtype=np.float64)),
            tgt_mask=causal,
            tgt_is_causal=True,
            memory_key_padding_mask=torch.as_tensor(~np.asarray(src_padding, dtype=bool)),
        )
    return out.numpy().astype(np.asarray(x).dtype)


def block_inputs(rng, B, L, S, d, H, d_ff, lengths, dtype=np.float64):
    """Inputs of one case: states, memory, padding (True = real token) and the weights."""
    n = rng.normal
    return dict(
        x=n(size=(B, L, d)).astype(dtype),
        memory=n(size=(B, S, d)).astype(dtype),
        src_padding=np.arange(S) < np.array(lengths)[:, None],
        n_heads=H,
        attn_w=(n(size=(2, 4, d, d)) / np.sqrt(d)).astype(dtype),
        attn_b=(0.1 * n(size=(2, 4, d))).astype(dtype),
        W1=(n(size=(d_ff, d)) / np.sqrt(d)).astype(dtype),
        b1=(0.1 * n(size=(d_ff,))).astype(dtype),
        W2=(n(size=(d, d_ff)) / np.sqrt(d_ff)).astype(dtype),
        b2=(0.1 * n(size=(d,))).astype(dtype),
        norms=(np.stack([1 + 0.2 * n(size=(3, d)), 0.2 * n(size=(3, d))], axis=1)).astype(dtype),
    )


def _block_cases():
    rng = np.random.default_rng(1207)

    def case(name, *shape, lengths, dtype=np.float64):
        return Case(name, **block_inputs(rng, *shape, lengths, dtype))

    return (
        grouped(
            "decoder block",
            case("B=2, L=3, S=4, d=8, 2 heads, d_ff=16", 2, 3, 4, 8, 2, 16, lengths=[4, 4]),
            case("B=1, L=5, S=2, d=6, 3 heads, d_ff=8", 1, 5, 2, 6, 3, 8, lengths=[2]),
        )
        + grouped(
            "source padding",
            case("lengths 5 and 2, L=4, d=8, 4 heads", 2, 4, 5, 8, 4, 12, lengths=[5, 2]),
            case("lengths 1, 3 and 2, L=2, d=4, 1 head", 3, 2, 3, 4, 1, 8, lengths=[1, 3, 2]),
        )
        + grouped(
            "dtype",
            case("float32, B=2, L=3, S=3, d=8, 2 heads", 2, 3, 3, 8, 2, 16, lengths=[3, 1], dtype=np.float32),
        )
    )


def _variant(**flags):
    return lambda *args: _block(*args, **flags)


BLOCK_DIAGNOSES = (
    Diagnosis(
        "every output differs, by more than the norms' rounding: where are the LayerNorms applied?",
        name="pre-norm",
        hint="torch's default is post-norm: x = norm(x + sublayer(x)), three times",
        variant=_variant(pre_norm=True),
    ),
    Diagnosis(
        "the outputs of early target positions depend on later ones: which target positions may a position read?",
        name="self-attention not causal",
        hint="the self-attention's mask is causal",
        variant=_variant(causal=False),
    ),
    Diagnosis(
        "padded source tokens change the outputs: which keys does the source's padding hide?",
        name="padding ignored",
        hint="the cross-attention may read only the real source tokens (src_padding True)",
        variant=_variant(padding=False),
    ),
    Diagnosis(
        "the outputs are those of one head over the whole width: how many heads share d?",
        name="one head",
        hint="split the projections into n_heads slices of width d / n_heads, scale by 1/sqrt(d / n_heads)",
        variant=_variant(one_head=True),
    ),
)

register(
    Exercise(
        id="ch12.decoder_block",
        number="12.7",
        title="a decoder block from its weights",
        points=3,
        function="decoder_block",
        hint="three sublayers, each x = norm(x + sublayer(x)): causal self-attention, cross-attention over the memory with its padding, the MLP",
        kind="extend",
        description="The chapter ran the package's decoder and torch's. Write one decoder block's forward "
        "pass yourself, in numpy, from its weights: `x (B, L, d)` the target's states, `memory (B, S, d)` "
        "the encoder's output, `src_padding (B, S)` boolean (True = a real source token; every source "
        "has at least one), `n_heads` (it divides `d`), and "
        + WEIGHTS_TEXT
        + ". The block is `torch.nn.TransformerDecoderLayer(d, n_heads, d_ff, dropout=0.0, "
        "batch_first=True)` with these weights, called with the causal mask on the target and the "
        "source's padding on the memory: return its output `(B, L, d)`. The checks build that torch "
        "layer and compare.",
        solution='''
            def decoder_block(x, memory, src_padding, n_heads, attn_w, attn_b, W1, b1, W2, b2, norms):
                """One post-norm decoder block (torch's TransformerDecoderLayer): (B, L, d)."""
                ### BEGIN SOLUTION
                def linear(h, W, b):
                    return h @ W.T + b  # torch's Linear: (..., in) @ (in, out)

                def norm(h, wb):
                    mean, var = h.mean(-1, keepdims=True), h.var(-1, keepdims=True)
                    return (h - mean) / np.sqrt(var + 1e-5) * wb[0] + wb[1]

                def attention(h, source, i, mask):
                    B, L, d = h.shape
                    S = source.shape[1]
                    q = linear(h, attn_w[i, 0], attn_b[i, 0]).reshape(B, L, n_heads, -1).transpose(0, 2, 1, 3)
                    k = linear(source, attn_w[i, 1], attn_b[i, 1]).reshape(B, S, n_heads, -1).transpose(0, 2, 1, 3)
                    v = linear(source, attn_w[i, 2], attn_b[i, 2]).reshape(B, S, n_heads, -1).transpose(0, 2, 1, 3)
                    scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(q.shape[-1])  # (B, H, L, S)
                    weights = softmax(np.where(mask[:, None], scores, -np.inf))
                    out = (weights @ v).transpose(0, 2, 1, 3).reshape(B, L, d)  # heads side by side
                    return linear(out, attn_w[i, 3], attn_b[i, 3])

                L = x.shape[1]
                causal = np.tril(np.ones((L, L), dtype=bool))[None]  # (1, L, L)
                x = norm(x + attention(x, x, 0, causal), norms[0])
                x = norm(x + attention(x, memory, 1, src_padding[:, None, :]), norms[1])  # (B, 1, S)
                return norm(x + linear(np.maximum(linear(x, W1, b1), 0.0), W2, b2), norms[2])
                ### END SOLUTION
        ''',
        reference=torch_block,
        public_cases=_block_cases,
        outputs=("out",),
        needs=("import numpy as np", "import torch", "from attncourse import softmax"),
        diagnoses=BLOCK_DIAGNOSES,
    )
)


# ----------------------------------------------------------------------------- 12.8 one decoding step
def step_reference(
    x_new,
    self_k,
    self_v,
    cross_k,
    cross_v,
    src_padding,
    n_heads,
    attn_w,
    attn_b,
    W1,
    b1,
    W2,
    b2,
    norms,
    *,
    own_key=True,
    padding=True,
    pre_norm=False,
    one_head=False,
):
    """One post-norm decoder step from the caches: (out (B, 1, d), self_k, self_v with one more row)."""
    H = 1 if one_head else n_heads
    k_new, v_new = (_linear(x_new, attn_w[0, i], attn_b[0, i]) for i in (1, 2))
    keys, values = np.concatenate([self_k, k_new], 1), np.concatenate([self_v, v_new], 1)
    read_k, read_v = (keys, values) if own_key else (self_k, self_v)
    self_mask = np.ones((1, 1, read_k.shape[1]), dtype=bool)
    cross_mask = src_padding[:, None, :] if padding else np.ones((1, 1, cross_k.shape[1]), dtype=bool)

    def self_attn(h):
        return _attend(
            _linear(h, attn_w[0, 0], attn_b[0, 0]), read_k, read_v, attn_w[0, 3], attn_b[0, 3], H, self_mask
        )

    def cross_attn(h):
        return _attend(
            _linear(h, attn_w[1, 0], attn_b[1, 0]),
            cross_k,
            cross_v,
            attn_w[1, 3],
            attn_b[1, 3],
            H,
            cross_mask,
        )

    def mlp(h):
        return _linear(np.maximum(_linear(h, W1, b1), 0.0), W2, b2)

    x = x_new
    if pre_norm:
        x = x + self_attn(_norm(x, norms[0]))
        x = x + cross_attn(_norm(x, norms[1]))
        x = x + mlp(_norm(x, norms[2]))
    else:
        x = _norm(x + self_attn(x), norms[0])
        x = _norm(x + cross_attn(x), norms[1])
        x = _norm(x + mlp(x), norms[2])
    return x, keys, values


def step_inputs(rng, B, t, S, d, H, d_ff, lengths, dtype=np.float64):
    """A step's inputs, with the caches made from t earlier target states and the memory (and
    those states, for the tests that compare with the full forward pass)."""
    full = block_inputs(rng, B, t + 1, S, d, H, d_ff, lengths, dtype)
    x, memory, w, b = full["x"], full["memory"], full["attn_w"], full["attn_b"]
    case = dict(
        x_new=x[:, t:],
        self_k=_linear(x[:, :t], w[0, 1], b[0, 1]),
        self_v=_linear(x[:, :t], w[0, 2], b[0, 2]),
        cross_k=_linear(memory, w[1, 1], b[1, 1]),
        cross_v=_linear(memory, w[1, 2], b[1, 2]),
    )
    case.update({k: full[k] for k in ("src_padding", "n_heads") + WEIGHTS})
    return case, full


def _step_cases():
    rng = np.random.default_rng(1208)

    def case(name, *shape, lengths, dtype=np.float64):
        return Case(name, **step_inputs(rng, *shape, lengths, dtype)[0])

    return (
        grouped(
            "decoding step",
            case("B=2, 3 cached tokens, S=4, d=8, 2 heads", 2, 3, 4, 8, 2, 16, lengths=[4, 4]),
            case("B=1, 5 cached tokens, S=2, d=6, 3 heads", 1, 5, 2, 6, 3, 8, lengths=[2]),
        )
        + grouped(
            "source padding",
            case("lengths 5 and 2, 2 cached, d=8, 4 heads", 2, 2, 5, 8, 4, 12, lengths=[5, 2]),
        )
        + grouped(
            "first step",
            case("an empty cache, B=2, S=3, d=4, 2 heads", 2, 0, 3, 4, 2, 8, lengths=[3, 1]),
        )
        + grouped(
            "dtype",
            case(
                "float32, B=2, 4 cached, S=3, d=8, 2 heads",
                2,
                4,
                3,
                8,
                2,
                16,
                lengths=[3, 2],
                dtype=np.float32,
            ),
        )
    )


def _step_variant(**flags):
    return lambda *args: step_reference(*args, **flags)


register(
    Exercise(
        id="ch12.decoder_step",
        number="12.8",
        title="one decoding step with both caches",
        points=3,
        function="decoder_step",
        hint="project only the new token: its key and value join the self-attention cache before it attends; the cross-attention reads cross_k, cross_v as they are",
        kind="extend",
        description="Generation runs 12.7's block one new target token at a time. Write that step in numpy. "
        "`x_new (B, 1, d)` is the new token's state; `self_k, self_v (B, t, d)` are the self-attention's "
        "keys and values of the `t` earlier target tokens (projected, biases included, heads side by "
        "side; `t` may be 0); `cross_k, cross_v (B, S, d)` are the cross-attention's keys and values of "
        "the memory, projected once when decoding started (the memory itself is not passed); then "
        "`src_padding`, `n_heads` and the weights exactly as in 12.7. Return `(out (B, 1, d), self_k, "
        "self_v)`: `out` must equal 12.7's output at position `t` for the whole target so far, and "
        "the caches must come back with the new token's key and value as row `t`.",
        solution='''
            def decoder_step(x_new, self_k, self_v, cross_k, cross_v, src_padding, n_heads,
                             attn_w, attn_b, W1, b1, W2, b2, norms):
                """One post-norm decoder step: (out (B, 1, d), self_k, self_v (B, t + 1, d))."""
                ### BEGIN SOLUTION
                def linear(h, W, b):
                    return h @ W.T + b

                def norm(h, wb):
                    mean, var = h.mean(-1, keepdims=True), h.var(-1, keepdims=True)
                    return (h - mean) / np.sqrt(var + 1e-5) * wb[0] + wb[1]

                def split(h):  # (B, T, d) -> (B, H, T, d / H)
                    return h.reshape(h.shape[0], h.shape[1], n_heads, -1).transpose(0, 2, 1, 3)

                def attend(q, k, v, W_o, b_o, keep):
                    scores = split(q) @ split(k).transpose(0, 1, 3, 2) / np.sqrt(q.shape[-1] / n_heads)
                    weights = softmax(np.where(keep[:, None, None, :], scores, -np.inf))  # (B, H, 1, T)
                    out = (weights @ split(v)).transpose(0, 2, 1, 3).reshape(q.shape)  # (B, 1, d)
                    return linear(out, W_o, b_o)

                self_k = np.concatenate([self_k, linear(x_new, attn_w[0, 1], attn_b[0, 1])], axis=1)
                self_v = np.concatenate([self_v, linear(x_new, attn_w[0, 2], attn_b[0, 2])], axis=1)
                every = np.ones(self_k.shape[:2], dtype=bool)  # (B, t + 1): the past and the new token
                x = x_new
                h = attend(linear(x, attn_w[0, 0], attn_b[0, 0]), self_k, self_v, attn_w[0, 3], attn_b[0, 3], every)
                x = norm(x + h, norms[0])
                h = attend(linear(x, attn_w[1, 0], attn_b[1, 0]), cross_k, cross_v, attn_w[1, 3], attn_b[1, 3], src_padding)
                x = norm(x + h, norms[1])
                x = norm(x + linear(np.maximum(linear(x, W1, b1), 0.0), W2, b2), norms[2])
                return x, self_k, self_v
                ### END SOLUTION
        ''',
        reference=step_reference,
        public_cases=_step_cases,
        outputs=("out", "self_k", "self_v"),
        needs=("import numpy as np", "import torch", "from attncourse import softmax"),
        diagnoses=(
            Diagnosis(
                "the output differs, and most where the cache is short: which keys does the new token's query read?",
                name="own key left out",
                hint="append the new token's key and value to the cache before it attends",
                variant=_step_variant(own_key=False),
            ),
            Diagnosis(
                "padded source tokens change the output: which keys does the source's padding hide?",
                name="padding ignored",
                hint="the cross-attention may read only the real source tokens (src_padding True)",
                variant=_step_variant(padding=False),
            ),
            Diagnosis(
                "every output differs, by more than the norms' rounding: where are the LayerNorms applied?",
                name="pre-norm",
                hint="torch's default is post-norm: x = norm(x + sublayer(x)), three times",
                variant=_step_variant(pre_norm=True),
            ),
            Diagnosis(
                "the output is that of one head over the whole width: how many heads share d?",
                name="one head",
                hint="split into n_heads slices of width d / n_heads, scale by 1/sqrt(d / n_heads)",
                variant=_step_variant(one_head=True),
            ),
        ),
    )
)
