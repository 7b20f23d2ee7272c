"""Chapter 12 exercises 12.7 and 12.8: one decoder block run over a row of packed examples, checked
against ``torch.nn.TransformerDecoderLayer`` run on each example alone, and one step of beam search
with both caches (the cross-attention's kept once per source, the self-attention's reordered)."""

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
    self_mask=None,
    cross_mask=None,
):
    """The decoder block in numpy, post-norm as torch's default; flags make the classic mistakes;
    ``self_mask`` / ``cross_mask`` (B or 1, L, L) / (B or 1, L, S) replace the causal and padding masks."""
    H = 1 if one_head else n_heads
    L, S = x.shape[1], memory.shape[1]
    if self_mask is None:
        self_mask = np.tril(np.ones((L, L), dtype=bool))[None] if causal else np.ones((1, L, L), dtype=bool)
    if cross_mask is None:
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


# ----------------------------------------------------------------------------- 12.7 a block over packed examples
def _example_ids(lengths):
    return np.repeat(np.arange(len(lengths)), np.asarray(lengths))


def _packed_block(
    x,
    memory,
    tgt_lengths,
    src_lengths,
    n_heads,
    attn_w,
    attn_b,
    W1,
    b1,
    W2,
    b2,
    norms,
    *,
    self_rule="own",
    cross_rule="own",
    pre_norm=False,
    one_head=False,
):
    """One decoder block over a packed row, in numpy; the rules make the classic mistakes:
    self_rule "own" (each example's target, causally), "causal" (the whole row causally),
    "example" (the example's whole target, not causal); cross_rule "own" or "all"."""
    tgt, src = _example_ids(tgt_lengths), _example_ids(src_lengths)
    T, M = len(tgt), len(src)
    causal = np.tril(np.ones((T, T), dtype=bool))
    same = tgt[:, None] == tgt[None, :]
    self_mask = {"own": same & causal, "causal": causal, "example": same}[self_rule]
    cross_mask = tgt[:, None] == src[None, :] if cross_rule == "own" else np.ones((T, M), dtype=bool)
    out = _block(
        x[None],
        memory[None],
        np.ones((1, M), dtype=bool),
        n_heads,
        attn_w,
        attn_b,
        W1,
        b1,
        W2,
        b2,
        norms,
        pre_norm=pre_norm,
        one_head=one_head,
        self_mask=self_mask[None],
        cross_mask=cross_mask[None],
    )
    return out[0]


def torch_packed_block(x, memory, tgt_lengths, src_lengths, n_heads, attn_w, attn_b, W1, b1, W2, b2, norms):
    """The reference: torch's decoder layer run on each example on its own, the outputs one after another."""
    t_end, s_end = np.cumsum(tgt_lengths), np.cumsum(src_lengths)
    outs = []
    for e in range(len(t_end)):
        t0, s0 = t_end[e] - tgt_lengths[e], s_end[e] - src_lengths[e]
        src = np.asarray(memory)[None, s0 : s_end[e]]
        outs.append(
            torch_block(
                np.asarray(x)[None, t0 : t_end[e]],
                src,
                np.ones(src.shape[:2], dtype=bool),
                n_heads,
                attn_w,
                attn_b,
                W1,
                b1,
                W2,
                b2,
                norms,
            )[0]
        )
    return np.concatenate(outs, axis=0)


def packed_inputs(rng, tgt_lengths, src_lengths, d, H, d_ff, dtype=np.float64):
    """A packed row: the examples' targets one after another, their sources one after another."""
    T, M = int(np.sum(tgt_lengths)), int(np.sum(src_lengths))
    one = block_inputs(rng, 1, T, M, d, H, d_ff, [M], dtype)
    case = dict(
        x=one["x"][0],
        memory=one["memory"][0],
        tgt_lengths=np.array(tgt_lengths),
        src_lengths=np.array(src_lengths),
        n_heads=H,
    )
    case.update({k: one[k] for k in WEIGHTS})
    return case


def _packed_cases():
    rng = np.random.default_rng(1217)

    def case(name, tgt, src, d, H, d_ff, dtype=np.float64):
        return Case(name, **packed_inputs(rng, tgt, src, d, H, d_ff, dtype))

    return (
        grouped(
            "one example",
            case("target 4, source 3, d=8, 2 heads", [4], [3], 8, 2, 16),
        )
        + grouped(
            "packed examples",
            case("targets 3, 2; sources 2, 4; d=8, 2 heads", [3, 2], [2, 4], 8, 2, 16),
            case("targets 1, 4, 2; sources 3, 1, 2; d=6, 3 heads", [1, 4, 2], [3, 1, 2], 6, 3, 8),
        )
        + grouped(
            "dtype",
            case(
                "float32, targets 2, 3; sources 3, 2; d=8, 4 heads",
                [2, 3],
                [3, 2],
                8,
                4,
                12,
                dtype=np.float32,
            ),
        )
    )


def _packed_variant(**flags):
    return lambda *args: _packed_block(*args, **flags)


register(
    Exercise(
        id="ch12.packed_decoder_block",
        number="12.7",
        title="one decoder block over packed examples",
        points=3,
        function="packed_decoder_block",
        hint="each example's rows must see exactly what they would see alone: in the self-attention its own earlier target tokens, in the cross-attention its own source; the LayerNorms and the MLP act on each position alone",
        kind="extend",
        description="Exercise 12.6 packed the examples of a batch into one row. Run a whole decoder "
        "block over such a row, in numpy: `x (T, d)` holds the examples' target states one after "
        "another (`tgt_lengths`, `T = sum(tgt_lengths)`), `memory (M, d)` their encoder outputs one "
        "after another in the same order (`src_lengths`, `M = sum(src_lengths)`, no padding anywhere), "
        "`n_heads` divides `d`, and " + WEIGHTS_TEXT + ". Return `(T, d)`: each example's rows must be what "
        "`torch.nn.TransformerDecoderLayer(d, n_heads, d_ff, dropout=0.0, batch_first=True, "
        "norm_first=False)` (post-norm: each LayerNorm acts after its residual sum) with these weights returns for that example on its own (its target with the causal mask, its own encoder "
        "output as the memory). The checks run that torch layer on every example and compare.",
        solution='''
            def packed_decoder_block(x, memory, tgt_lengths, src_lengths, n_heads,
                                     attn_w, attn_b, W1, b1, W2, b2, norms):
                """One decoder block (torch's TransformerDecoderLayer) over a packed row of examples: (T, d)."""
                ### BEGIN SOLUTION
                def linear(h, W, b):
                    return h @ W.T + b  # torch's Linear: (..., in) @ (in, out)

                def norm(h, wb):
                    mean, var = h.mean(-1, keepdims=True), h.var(-1, keepdims=True)
                    return (h - mean) / np.sqrt(var + 1e-5) * wb[0] + wb[1]

                def attention(h, source, i, mask):  # h (T, d), source (N, d), mask (T, N)
                    def split(a):  # (rows, d) -> (H, rows, d / H)
                        return a.reshape(a.shape[0], n_heads, -1).transpose(1, 0, 2)

                    q, k, v = (split(linear(a, attn_w[i, j], attn_b[i, j])) for j, a in enumerate((h, source, source)))
                    scores = q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1])  # (H, T, N)
                    weights = softmax(np.where(mask, scores, -np.inf))
                    out = (weights @ v).transpose(1, 0, 2).reshape(h.shape)  # heads side by side
                    return linear(out, attn_w[i, 3], attn_b[i, 3])

                tgt = np.repeat(np.arange(len(tgt_lengths)), tgt_lengths)  # (T,): each target token's example
                src = np.repeat(np.arange(len(src_lengths)), src_lengths)  # (M,)
                T = len(tgt)
                own_past = (tgt[:, None] == tgt[None, :]) & np.tril(np.ones((T, T), dtype=bool))
                own_source = tgt[:, None] == src[None, :]  # (T, M)
                x = norm(x + attention(x, x, 0, own_past), norms[0])
                x = norm(x + attention(x, memory, 1, own_source), norms[1])
                return norm(x + linear(np.maximum(linear(x, W1, b1), 0.0), W2, b2), norms[2])
                ### END SOLUTION
        ''',
        reference=torch_packed_block,
        public_cases=_packed_cases,
        outputs=("out",),
        needs=("import numpy as np", "import torch", "from attncourse import softmax"),
        diagnoses=(
            Diagnosis(
                "an example's outputs change when an earlier example in the row changes: which target tokens may a position read?",
                name="reads earlier examples' targets",
                hint="the self-attention's mask is causal within each example and blocks every other example",
                variant=_packed_variant(self_rule="causal"),
            ),
            Diagnosis(
                "an example's outputs change when another example's source changes: which memory rows may it read?",
                name="reads other examples' sources",
                hint="the cross-attention of an example's target reads only that example's source rows",
                variant=_packed_variant(cross_rule="all"),
            ),
            Diagnosis(
                "a position's output changes when a later token of its own example changes: is the target written one token at a time?",
                name="not causal within an example",
                hint="within an example the self-attention is causal",
                variant=_packed_variant(self_rule="example"),
            ),
            Diagnosis(
                "every output differs, by more than the norms' rounding: where are the LayerNorms applied?",
                name="pre-norm",
                hint="torch's default is post-norm: x = norm(x + sublayer(x)), three times",
                variant=_packed_variant(pre_norm=True),
            ),
            Diagnosis(
                "the outputs are those of one head over the whole width: how many heads share d?",
                name="one head",
                hint="split the projections into n_heads slices of width d / n_heads, scale by 1/sqrt(d / n_heads)",
                variant=_packed_variant(one_head=True),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 12.8 one step of beam search
def beam_reference(
    x_new,
    parents,
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
    reorder=True,
    sources="repeat",
    append_first=False,
    own_key=True,
):
    """One post-norm decoder step for B * K hypotheses: (out (BK, 1, d), self_k, self_v (BK, t + 1, d));
    the flags make the classic mistakes."""
    BK, B = x_new.shape[0], cross_k.shape[0]
    K = BK // B
    rows = np.arange(BK)
    src = rows // K if sources == "repeat" else rows % B  # the source each hypothesis reads
    weights = (n_heads, attn_w, attn_b, W1, b1, W2, b2, norms)
    if append_first:  # the new keys reordered with the cache
        k_new, v_new = (_linear(x_new, attn_w[0, i], attn_b[0, i]) for i in (1, 2))
        keys = np.concatenate([self_k, k_new], 1)[parents]
        values = np.concatenate([self_v, v_new], 1)[parents]
        out = _beam_misplaced(x_new, (keys, values), cross_k[src], cross_v[src], src_padding[src], *weights)
        return out, keys, values
    sk, sv = (self_k[parents], self_v[parents]) if reorder else (self_k, self_v)
    return step_reference(
        x_new, sk, sv, cross_k[src], cross_v[src], src_padding[src], *weights, own_key=own_key
    )


def _beam_misplaced(x_new, kv, cross_k, cross_v, src_padding, n_heads, attn_w, attn_b, W1, b1, W2, b2, norms):
    """The post-norm step with the self-attention reading the given keys and values as they are."""
    keys, values = kv
    mask = np.ones((1, 1, keys.shape[1]), dtype=bool)
    x = _norm(
        x_new
        + _attend(
            _linear(x_new, attn_w[0, 0], attn_b[0, 0]),
            keys,
            values,
            attn_w[0, 3],
            attn_b[0, 3],
            n_heads,
            mask,
        ),
        norms[0],
    )
    x = _norm(
        x
        + _attend(
            _linear(x, attn_w[1, 0], attn_b[1, 0]),
            cross_k,
            cross_v,
            attn_w[1, 3],
            attn_b[1, 3],
            n_heads,
            src_padding[:, None, :],
        ),
        norms[1],
    )
    return _norm(x + _linear(np.maximum(_linear(x, W1, b1), 0.0), W2, b2), norms[2])


def beam_inputs(rng, B, K, t, S, d, H, d_ff, lengths, dtype=np.float64):
    """A step's inputs: B sources with K hypotheses each (rows b * K ... b * K + K - 1), the t earlier
    target states of every hypothesis of the previous step, and each new token's parent, a hypothesis
    of the same source. Also returns the histories, for the tests that compare with torch."""
    one = block_inputs(rng, B, 1, S, d, H, d_ff, lengths, dtype)
    w, b = one["attn_w"], one["attn_b"]
    history = rng.normal(size=(B * K, t, d)).astype(dtype)
    x_new = rng.normal(size=(B * K, 1, d)).astype(dtype)
    parents = np.repeat(np.arange(B) * K, K) + rng.integers(0, K, size=B * K)
    if K > 1 and B * K > 1 and (parents == np.arange(B * K)).all():
        parents[0] = 1
    case = dict(
        x_new=x_new,
        parents=parents.astype(np.int64),
        self_k=_linear(history, w[0, 1], b[0, 1]),
        self_v=_linear(history, w[0, 2], b[0, 2]),
        cross_k=_linear(one["memory"], w[1, 1], b[1, 1]),
        cross_v=_linear(one["memory"], w[1, 2], b[1, 2]),
        src_padding=one["src_padding"],
        n_heads=H,
    )
    case.update({k: one[k] for k in WEIGHTS})
    return case, dict(history=history, memory=one["memory"])


def _beam_cases():
    rng = np.random.default_rng(1218)

    def case(name, *shape, lengths, dtype=np.float64):
        return Case(name, **beam_inputs(rng, *shape, lengths, dtype)[0])

    return (
        grouped(
            "hypotheses reordered",
            case("2 sources x 3 beams, 3 cached, S=4, d=8, 2 heads", 2, 3, 3, 4, 8, 2, 16, lengths=[4, 4]),
            case("3 sources x 2 beams, 2 cached, S=3, d=6, 3 heads", 3, 2, 2, 3, 6, 3, 8, lengths=[3, 3, 3]),
        )
        + grouped(
            "source padding",
            case("lengths 5 and 2, 2 beams, 4 cached, d=8, 4 heads", 2, 2, 4, 5, 8, 4, 12, lengths=[5, 2]),
        )
        + grouped(
            "first step",
            case("an empty cache, 2 sources x 2 beams, S=3, d=4", 2, 2, 0, 3, 4, 2, 8, lengths=[3, 1]),
        )
        + grouped(
            "dtype",
            case(
                "float32, 2 sources x 3 beams, 2 cached, d=8",
                2,
                3,
                2,
                3,
                8,
                2,
                16,
                lengths=[2, 3],
                dtype=np.float32,
            ),
        )
    )


def _beam_variant(**flags):
    return lambda *args: beam_reference(*args, **flags)


register(
    Exercise(
        id="ch12.beam_decoder_step",
        number="12.8",
        title="one step of beam search with both caches",
        points=3,
        function="beam_step",
        hint="gather each row's self-attention cache from its parent's row before the new key joins it; row r reads the cross-attention cache of source r // K",
        kind="extend",
        description="Beam search keeps `K` hypotheses per source: the decoder's batch has `B * K` rows, "
        "rows `b * K` to `b * K + K - 1` for source `b`. After every step the search keeps the best "
        "continuations, so the token that row `r` now feeds in, `x_new[r] (1, d)`, continues the "
        "hypothesis that was in row `parents[r]` at the previous step (a row of the same source; "
        "several rows may continue one hypothesis, and some hypotheses are dropped). `self_k, self_v "
        "(B * K, t, d)` are the self-attention's cached keys and values as they were at the previous "
        "step, row by row (projected, biases included, heads side by side; `t` may be 0). `cross_k, "
        "cross_v (B, S, d)` are the cross-attention's keys and values, kept once per source, and "
        "`src_padding (B, S)` the sources' padding (True = a real token). `n_heads` and the weights are "
        "as in 12.7 (the same post-norm block, `norm_first=False`), for a decoder of this one layer. Return `(out (B * K, 1, d), self_k, self_v (B * K, "
        "t + 1, d))`: `out[r]` is the layer's output at the last position of row `r`'s hypothesis (as "
        "`torch.nn.TransformerDecoderLayer(..., norm_first=False)` would give it for that whole target "
        "and its source), and "
        "the caches are those of the hypotheses now in the rows.",
        solution='''
            def beam_step(x_new, parents, self_k, self_v, cross_k, cross_v, src_padding, n_heads,
                          attn_w, attn_b, W1, b1, W2, b2, norms):
                """One decoder step over B * K hypotheses: (out, self_k, self_v)."""
                ### BEGIN SOLUTION
                def linear(h, W, b):
                    return h @ W.T + b

                def norm(h, wb):
                    mean, var = h.mean(-1, keepdims=True), h.var(-1, keepdims=True)
                    return (h - mean) / np.sqrt(var + 1e-5) * wb[0] + wb[1]

                def split(h):  # (rows, T, d) -> (rows, H, T, d / H)
                    return h.reshape(h.shape[0], h.shape[1], n_heads, -1).transpose(0, 2, 1, 3)

                def attend(q, k, v, W_o, b_o, keep):
                    scores = split(q) @ split(k).transpose(0, 1, 3, 2) / np.sqrt(q.shape[-1] / n_heads)
                    weights = softmax(np.where(keep[:, None, None, :], scores, -np.inf))  # (rows, H, 1, T)
                    out = (weights @ split(v)).transpose(0, 2, 1, 3).reshape(q.shape)  # (rows, 1, d)
                    return linear(out, W_o, b_o)

                K = x_new.shape[0] // cross_k.shape[0]  # hypotheses per source
                source = np.arange(x_new.shape[0]) // K  # (B * K,): the source of each row
                self_k = np.concatenate([self_k[parents], linear(x_new, attn_w[0, 1], attn_b[0, 1])], axis=1)
                self_v = np.concatenate([self_v[parents], linear(x_new, attn_w[0, 2], attn_b[0, 2])], axis=1)
                every = np.ones(self_k.shape[:2], dtype=bool)  # (B * K, t + 1)
                x = x_new
                h = attend(linear(x, attn_w[0, 0], attn_b[0, 0]), self_k, self_v, attn_w[0, 3], attn_b[0, 3], every)
                x = norm(x + h, norms[0])
                h = attend(linear(x, attn_w[1, 0], attn_b[1, 0]), cross_k[source], cross_v[source],
                           attn_w[1, 3], attn_b[1, 3], src_padding[source])
                x = norm(x + h, norms[1])
                x = norm(x + linear(np.maximum(linear(x, W1, b1), 0.0), W2, b2), norms[2])
                return x, self_k, self_v
                ### END SOLUTION
        ''',
        reference=beam_reference,
        public_cases=_beam_cases,
        outputs=("out", "self_k", "self_v"),
        needs=("import numpy as np", "import torch", "from attncourse import softmax"),
        diagnoses=(
            Diagnosis(
                "rows whose hypothesis came from another row read the wrong past: whose earlier tokens does row r continue?",
                name="cache not reordered",
                hint="row r's cache is the cache of row parents[r] at the previous step",
                variant=_beam_variant(reorder=False),
            ),
            Diagnosis(
                "rows read the source of another example: which source does row r belong to?",
                name="sources tiled",
                hint="rows b * K ... b * K + K - 1 belong to source b: repeat each source K times, one after another",
                variant=_beam_variant(sources="tile"),
            ),
            Diagnosis(
                "the newest row of the caches is not the new token's own key and value in every row",
                name="new keys reordered",
                hint="the new token's key and value belong to its own row; only the earlier rows come from the parent",
                variant=_beam_variant(append_first=True),
            ),
            Diagnosis(
                "the output differs, and most where the cache is short: which keys does the new token's query read?",
                name="own key left out",
                hint="append the new token's key and value to the cache before it attends",
                variant=_beam_variant(own_key=False),
            ),
        ),
    )
)
