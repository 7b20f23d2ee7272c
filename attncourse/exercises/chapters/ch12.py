"""Chapter 12 exercises: the cost of cross-attention without its cache, cross-attention itself, a
prefix decoder that sees the future, a source token removed after the softmax, an encoder-decoder's
parameter count and the cross-attention mask of packed sequences."""

from __future__ import annotations

import numpy as np

from ... import softmax
from ..engine.registry import Case, Diagnosis, Exercise, grouped, register

__all__: list = []

NO_FUSED = ("torch.nn.functional.scaled_dot_product_attention", "attncourse.scaled_dot_product_attention")


# ----------------------------------------------------------------------------- 12.1 cost per token (predict)
def _kv_cost(layers=6, S=1000, d=512, kv=2):
    return np.array(float(layers * kv * S * d * d))


register(
    Exercise(
        id="ch12.predict_cross_kv_cost",
        number="12.1",
        title="predict what the cross-attention cache saves",
        points=1,
        function="predict_cross_kv_cost",
        hint="each decoder layer projects every source position to a key and a value: how many multiply-adds is one (d_model x d_model) projection of one position?",
        kind="predict",
        description="A decoder of 6 layers with $d_\\text{model} = 512$ reads a source of 1000 tokens. "
        "Without the cross-attention cache, every generated token re-projects the memory to the "
        "cross-attention's keys and values in every layer. Before running anything: how many "
        "multiply-adds do those projections cost for one generated token (biases ignored)? Within 5% passes.",
        solution='''
            def predict_cross_kv_cost():
                """Multiply-adds of the cross-attention K and V projections for one token, without the cache."""
                ### BEGIN SOLUTION
                return 6 * 2 * 1000 * 512 * 512  # layers x (K, V) x source tokens x d_model^2: 3.1e9
                ### END SOLUTION
        ''',
        reference=_kv_cost,
        public_cases=lambda: grouped("prediction", Case("6 layers, d_model 512, 1000 source tokens")),
        tolerance=(0.05, 0.0),
        diagnoses=(
            Diagnosis(
                "that is half the cost: which two projections of the memory does cross-attention need?",
                name="keys only",
                hint="the memory is projected to keys and to values: a factor 2",
                variant=lambda: _kv_cost(kv=1),
            ),
            Diagnosis(
                "that is 1.5 times the cost: where do cross-attention's queries come from?",
                name="queries counted",
                hint="the queries come from the decoder's one new token, not from the memory",
                variant=lambda: _kv_cost(kv=3),
            ),
            Diagnosis(
                "that is one layer's cost: how many decoder layers read the memory?",
                name="one layer",
                hint="every one of the 6 decoder layers has its own cross-attention",
                variant=lambda: _kv_cost(layers=1),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 12.2 cross-attention (implement)
def _cross(x, memory, W_q, W_k, W_v, src_padding=None, *, self_keys=False, causal=False, scale=True):
    q = x @ W_q  # (B, L, d) @ (d, E) -> (B, L, E)
    source = x if self_keys else memory
    k, v = source @ W_k, source @ W_v  # (B, S, E), (B, S, Ev)
    scores = q @ np.swapaxes(k, -1, -2)  # (B, L, S)
    if scale:
        scores = scores / np.sqrt(q.shape[-1])
    L, S = scores.shape[-2:]
    mask = np.ones(scores.shape, dtype=bool)
    if src_padding is not None:
        mask = mask & src_padding[:, None, :]  # (B, S) -> (B, 1, S): hides padded keys
    if causal:
        mask = mask & np.tril(np.ones((L, S), dtype=bool))
    weights = softmax(np.where(mask, scores, -np.inf))
    return weights @ v, weights


def _cross_cases():
    rng = np.random.default_rng(1202)
    n = rng.normal

    def case(name, B, L, S, d, E, Ev, lengths=None, dtype=np.float64):
        padding = None if lengths is None else np.arange(S) < np.array(lengths)[:, None]
        return Case(
            name,
            x=n(size=(B, L, d)).astype(dtype),
            memory=n(size=(B, S, d)).astype(dtype),
            W_q=n(size=(d, E)).astype(dtype),
            W_k=n(size=(d, E)).astype(dtype),
            W_v=n(size=(d, Ev)).astype(dtype),
            src_padding=padding,
        )

    return (
        grouped(
            "shape",
            case("B=2, L=3, S=5, d=4, E=3, Ev=2", 2, 3, 5, 4, 3, 2),
            case("B=1, L=4, S=2", 1, 4, 2, 3, 2, 3),
        )
        + grouped(
            "source padding",
            case("lengths 5 and 2, L=3, S=5", 2, 3, 5, 4, 3, 2, lengths=[5, 2]),
            case("lengths 1, 4 and 3, L=4, S=4", 3, 4, 4, 3, 2, 2, lengths=[1, 4, 3]),
        )
        + grouped(
            "all-padding source",
            case("lengths 0 and 3, L=2, S=3", 2, 2, 3, 4, 3, 2, lengths=[0, 3]),
        )
        + grouped(
            "dtype",
            case("float32, lengths 3 and 6, L=2, S=6", 2, 2, 6, 4, 4, 3, lengths=[3, 6], dtype=np.float32),
        )
    )


register(
    Exercise(
        id="ch12.masked_cross_attention",
        number="12.2",
        title="cross-attention with the source's padding",
        points=2,
        function="masked_cross_attention",
        hint="queries from x, keys and values from the memory; the padding hides keys (columns), and nothing here is causal",
        kind="implement",
        forbids=NO_FUSED,
        description="Implement one head of cross-attention in numpy: decoder states `x (B, L, d)`, the "
        "encoder's memory `(B, S, d)`, projections `W_q, W_k (d, E)` and `W_v (d, Ev)`, and `src_padding` "
        "`(B, S)` boolean (True = a real source token) or None. Scale by $1/\\sqrt{E}$. Return "
        "`(out (B, L, Ev), weights (B, L, S))`. A source that is all padding gives its target positions "
        "all-zero weights and all-zero outputs (the course's convention for a row with nothing to attend "
        "to), never NaN.",
        solution='''
            def masked_cross_attention(x, memory, W_q, W_k, W_v, src_padding=None):
                """One head of cross-attention: (out (B, L, Ev), weights (B, L, S))."""
                ### BEGIN SOLUTION
                q = x @ W_q  # (B, L, d) @ (d, E) -> (B, L, E): queries from the decoder
                k, v = memory @ W_k, memory @ W_v  # (B, S, E), (B, S, Ev): keys, values from the source
                scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])  # (B, L, S)
                if src_padding is not None:
                    scores = np.where(src_padding[:, None, :], scores, -np.inf)  # hide padded keys
                weights = softmax(scores)
                return weights @ v, weights  # (B, L, S) @ (B, S, Ev) -> (B, L, Ev)
                ### END SOLUTION
        ''',
        reference=_cross,
        public_cases=_cross_cases,
        outputs=("out", "weights"),
        distributions=("weights",),
        needs=("import numpy as np", "from attncourse import softmax"),
        diagnoses=(
            Diagnosis(
                "each target position reads the target instead of the source: where do the keys and values come from?",
                name="keys from the decoder",
                hint="keys and values are projections of the memory",
                variant=lambda x, memory, W_q, W_k, W_v, src_padding=None: _cross(
                    x, memory, W_q, W_k, W_v, src_padding, self_keys=True
                ),
            ),
            Diagnosis(
                "target position 0 reads only source position 0: is the whole source known before writing starts?",
                name="causal cross-attention",
                hint="cross-attention needs no causal mask: every target position may read every real source token",
                variant=lambda x, memory, W_q, W_k, W_v, src_padding=None: _cross(
                    x, memory, W_q, W_k, W_v, src_padding, causal=True
                ),
            ),
            Diagnosis(
                "padded source tokens get weight: which axis of the weights are the source positions?",
                name="padding ignored",
                hint="the padding mask hides keys: it broadcasts over the query axis",
                variant=lambda x, memory, W_q, W_k, W_v, src_padding=None: _cross(
                    x, memory, W_q, W_k, W_v, None
                ),
            ),
            Diagnosis(
                "the weights are too peaked: what are the scores divided by?",
                name="no scaling",
                hint="divide the scores by sqrt(E)",
                variant=lambda x, memory, W_q, W_k, W_v, src_padding=None: _cross(
                    x, memory, W_q, W_k, W_v, src_padding, scale=False
                ),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 12.3 prefix decoder (diagnose)
def _prefix(S, L, *, source_sees_target=False, target_not_causal=False, source_causal=False):
    n = S + L
    i, j = np.arange(n)[:, None], np.arange(n)[None, :]
    mask = j <= i  # causal everywhere
    mask = mask | ((i < S) & (j < S))  # the source reads itself both ways
    if source_sees_target:
        mask = mask | (i < S)
    if target_not_causal:
        mask = mask | ((i >= S) & (j >= S))
    if source_causal:
        mask = j <= i  # a plain causal decoder: the source reads only its own past
    return mask


def _prefix_cases():
    return grouped(
        "prefix mask",
        Case("S=3 source, L=2 target", S=3, L=2),
        Case("S=2 source, L=4 target", S=2, L=4),
    ) + grouped(
        "one side empty or short", Case("S=1 source, L=3 target", S=1, L=3), Case("S=4, L=1", S=4, L=1)
    )


register(
    Exercise(
        id="ch12.prefix_decoder_mask",
        former_ids=("ch12.fix_prefix_mask",),
        number="12.3",
        title="the mask of a prefix decoder",
        points=2,
        function="prefix_mask",
        hint="which rows of the mask are the source's, and which columns hold the target?",
        kind="diagnose",
        description="A decoder-only model can do the encoder–decoder's job by reading the source and "
        "the target as one sequence of `S + L` tokens: the source reads itself in both directions (as "
        "the encoder did), each target token reads the whole source and the target up to itself. "
        "`prefix_mask(S, L)` should return that boolean `(S + L, S + L)` mask (True = may attend). "
        "Symptom: trained with it, the loss falls almost to zero, yet generating one token at a time "
        "gives nonsense. Find the bug and fix it.",
        solution='''
            def prefix_mask(S, L):
                """(S + L, S + L) mask: the source bidirectional, the target causal and reading the source."""
                i = np.arange(S + L)[:, None]  # query position
                ### BEGIN SOLUTION
                j = np.arange(S + L)[None, :]  # key position
                source_block = (i < S) & (j < S)  # the source reads all of the source, and nothing else
                ### END SOLUTION
                return causal_mask(S + L) | source_block  # the target: everything up to itself
        ''',
        stub="""
            source_block = i < S  # the source's part of the mask
        """,
        reference=_prefix,
        public_cases=_prefix_cases,
        outputs=("mask",),
        needs=("import numpy as np", "from attncourse import causal_mask"),
        diagnoses=(
            Diagnosis(
                "a source position's output changes when a target token changes: which tokens may the source read?",
                name="source rows see the target",
                hint="the source's rows may read only the source's columns",
                variant=lambda S, L: _prefix(S, L, source_sees_target=True),
            ),
            Diagnosis(
                "a target token reads later target tokens: is the target written one token at a time?",
                name="target not causal",
                hint="within the target the mask is causal",
                variant=lambda S, L: _prefix(S, L, target_not_causal=True),
            ),
            Diagnosis(
                "a source token cannot read later source tokens: the whole source is known before writing",
                name="causal source",
                hint="the source block is all True, as in the encoder",
                variant=lambda S, L: _prefix(S, L, source_causal=True),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 12.4 remove a source token after the softmax (extend)
def _remove(weights, v, keep, *, renormalise=True, inverted=False):
    kept = ~keep if inverted else keep
    w = weights * kept[..., None, :]  # (B, L, S) * (B, 1, S): zero the removed columns
    if renormalise:
        total = w.sum(-1, keepdims=True)
        w = np.divide(w, total, out=np.zeros_like(w), where=total > 0)
    return w @ v, w


def _remove_cases():
    rng = np.random.default_rng(1204)

    def case(name, B, L, S, Ev, keep, dtype=np.float64):
        scores = rng.normal(size=(B, L, S))
        return Case(
            name,
            weights=softmax(scores).astype(dtype),
            v=rng.normal(size=(B, S, Ev)).astype(dtype),
            keep=np.array(keep, dtype=bool),
        )

    return (
        grouped(
            "removed tokens",
            case("B=1, L=3, S=4, source token 1 removed", 1, 3, 4, 2, [[True, False, True, True]]),
            case(
                "B=2, L=2, S=5, two removed in one",
                2,
                2,
                5,
                3,
                [[True] * 5, [False, True, True, False, True]],
            ),
        )
        + grouped(
            "every token removed",
            case("B=2, L=2, S=3, all of sequence 1 removed", 2, 2, 3, 2, [[True, True, False], [False] * 3]),
        )
        + grouped(
            "dtype", case("float32, B=1, L=2, S=4", 1, 2, 4, 3, [[False, True, True, True]], dtype=np.float32)
        )
    )


register(
    Exercise(
        id="ch12.remove_source_tokens",
        number="12.4",
        title="remove source tokens without recomputing the scores",
        points=2,
        function="remove_source_tokens",
        hint="masking a key before the softmax gives the other keys the same scores: their weights keep their ratios and must again sum to 1",
        kind="extend",
        description="An ablation removes source tokens from cross-attention. Given the weights already "
        "computed, `weights (B, L, S)` (rows sum to 1), the values `v (B, S, Ev)` and `keep (B, S)` "
        "boolean (True = the token stays), return `(out (B, L, Ev), new_weights (B, L, S))` equal to "
        "what masked attention would give with the removed tokens' keys masked out before the softmax, "
        "without the scores. A row whose kept tokens carry no weight at all (none kept, or their weights "
        "are exactly 0) gets all-zero weights and output, the course's convention.",
        solution='''
            def remove_source_tokens(weights, v, keep):
                """Cross-attention with the tokens keep=False masked out: (out, new_weights)."""
                ### BEGIN SOLUTION
                w = weights * keep[:, None, :]  # (B, L, S) * (B, 1, S): removed columns to 0
                total = w.sum(-1, keepdims=True)  # (B, L, 1): what the kept tokens had
                w = np.divide(w, total, out=np.zeros_like(w), where=total > 0)  # renormalise; empty rows stay 0
                return w @ v, w  # (B, L, S) @ (B, S, Ev) -> (B, L, Ev)
                ### END SOLUTION
        ''',
        reference=_remove,
        public_cases=_remove_cases,
        outputs=("out", "new_weights"),
        needs=("import numpy as np", "from attncourse import softmax"),
        distributions=("new_weights",),
        diagnoses=(
            Diagnosis(
                "the kept weights sum to less than 1: does a softmax over fewer keys give them the same weights?",
                name="not renormalised",
                hint="a softmax over the kept keys keeps their ratios and sums to 1 over them",
                variant=lambda weights, v, keep: _remove(weights, v, keep, renormalise=False),
            ),
            Diagnosis(
                "the removed tokens are the only ones with weight: which tokens does keep=True mark?",
                name="inverted keep",
                hint="True in keep means the token stays",
                variant=lambda weights, v, keep: _remove(weights, v, keep, inverted=True),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 12.5 parameter count (derive)
def _count(d_model, d_ff, n_encoder, n_decoder, *, cross=True, final_norms=True, biases=True):
    b = 1 if biases else 0
    attention = 4 * d_model * d_model + 4 * d_model * b  # W_Q, W_K, W_V, W_O and their biases
    mlp = 2 * d_model * d_ff + (d_ff + d_model) * b
    norm = 2 * d_model  # weight and bias
    encoder = attention + mlp + 2 * norm
    decoder = (2 if cross else 1) * attention + mlp + (3 if cross else 2) * norm
    return np.array(n_encoder * encoder + n_decoder * decoder + (2 * norm if final_norms else 0))


def _count_cases():
    return grouped(
        "count",
        Case(
            "d_model 512, d_ff 2048, 6 + 6 layers (the 2017 base model)",
            d_model=512,
            d_ff=2048,
            n_encoder=6,
            n_decoder=6,
        ),
        Case("d_model 16, d_ff 24, 2 + 3 layers", d_model=16, d_ff=24, n_encoder=2, n_decoder=3),
    )


register(
    Exercise(
        id="ch12.encoder_decoder_parameters",
        number="12.5",
        title="count an encoder–decoder's parameters",
        points=2,
        function="encoder_decoder_parameters",
        hint="an encoder block: attention, MLP, 2 norms; a decoder block: two attentions, MLP, 3 norms; then the two final norms",
        kind="derive",
        forbids=("torch.nn.Transformer", "attncourse.TransformerEncoderDecoder"),
        description="Write the parameter count of `torch.nn.Transformer(d_model, nhead, n_encoder, "
        "n_decoder, d_ff)` (biases on, the final LayerNorms included, no embeddings or head) as a "
        "function of `d_model`, `d_ff`, `n_encoder` and `n_decoder`. The number of heads does not "
        "appear (chapter 5).",
        solution='''
            def encoder_decoder_parameters(d_model, d_ff, n_encoder, n_decoder):
                """Parameters of torch.nn.Transformer(d_model, nhead, n_encoder, n_decoder, d_ff)."""
                ### BEGIN SOLUTION
                attention = 4 * d_model**2 + 4 * d_model  # W_Q, W_K, W_V, W_O with biases
                mlp = 2 * d_model * d_ff + d_ff + d_model
                norm = 2 * d_model
                encoder_block = attention + mlp + 2 * norm
                decoder_block = 2 * attention + mlp + 3 * norm  # self- and cross-attention
                return n_encoder * encoder_block + n_decoder * decoder_block + 2 * norm  # + final norms
                ### END SOLUTION
        ''',
        reference=_count,
        public_cases=_count_cases,
        diagnoses=(
            Diagnosis(
                "too few by one attention and one norm per decoder block: what does a decoder block have that an encoder block has not?",
                name="no cross-attention",
                hint="each decoder block has self-attention and cross-attention, and a norm around each",
                variant=lambda d_model, d_ff, n_encoder, n_decoder: _count(
                    d_model, d_ff, n_encoder, n_decoder, cross=False
                ),
            ),
            Diagnosis(
                "4 d_model too few: what ends the encoder and the decoder?",
                name="final norms left out",
                hint="torch.nn.Transformer ends its encoder and its decoder with a LayerNorm",
                variant=lambda d_model, d_ff, n_encoder, n_decoder: _count(
                    d_model, d_ff, n_encoder, n_decoder, final_norms=False
                ),
            ),
            Diagnosis(
                "too few by the linear layers' biases: do the projections have biases?",
                name="biases left out",
                hint="every Linear has a bias: 4 d_model per attention, d_ff + d_model per MLP",
                variant=lambda d_model, d_ff, n_encoder, n_decoder: _count(
                    d_model, d_ff, n_encoder, n_decoder, biases=False
                ),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 12.6 packed cross mask (extend)
def _packed(src_lengths, tgt_lengths, *, all_pairs=False, transposed=False, causal=False):
    src_id = np.repeat(np.arange(len(src_lengths)), src_lengths)  # which example each source token is
    tgt_id = np.repeat(np.arange(len(tgt_lengths)), tgt_lengths)
    if transposed:
        mask = src_id[:, None] == tgt_id[None, :]
    elif all_pairs:
        mask = np.ones((len(tgt_id), len(src_id)), dtype=bool)
    else:
        mask = tgt_id[:, None] == src_id[None, :]  # (sum L, sum S)
    if causal:
        mask = mask & np.tril(np.ones(mask.shape, dtype=bool))
    return mask


def _packed_cases():
    return grouped(
        "packed examples",
        Case("sources 3, 2; targets 2, 4", src_lengths=np.array([3, 2]), tgt_lengths=np.array([2, 4])),
        Case(
            "sources 1, 4, 2; targets 3, 1, 2",
            src_lengths=np.array([1, 4, 2]),
            tgt_lengths=np.array([3, 1, 2]),
        ),
    ) + grouped(
        "one example", Case("source 4, target 2", src_lengths=np.array([4]), tgt_lengths=np.array([2]))
    )


register(
    Exercise(
        id="ch12.packed_cross_mask",
        number="12.6",
        title="the cross-attention mask of packed examples",
        points=2,
        function="packed_cross_mask",
        hint="label every source token and every target token with the example it belongs to; a target token may read a source token with the same label",
        kind="extend",
        description="To avoid padding, a batch packs several examples into one row: their sources one "
        "after another (`src_lengths`), their targets one after another (`tgt_lengths`, in the same "
        "order). Return the boolean cross-attention mask `(sum(tgt_lengths), sum(src_lengths))`: a "
        "target token may read every source token of its own example and none of the others'.",
        solution='''
            def packed_cross_mask(src_lengths, tgt_lengths):
                """(sum L, sum S) mask: each target token reads its own example's source."""
                ### BEGIN SOLUTION
                src_example = np.repeat(np.arange(len(src_lengths)), src_lengths)  # (sum S,)
                tgt_example = np.repeat(np.arange(len(tgt_lengths)), tgt_lengths)  # (sum L,)
                return tgt_example[:, None] == src_example[None, :]  # (sum L, 1) vs (1, sum S)
                ### END SOLUTION
        ''',
        reference=_packed,
        public_cases=_packed_cases,
        outputs=("mask",),
        diagnoses=(
            Diagnosis(
                "a target token reads the other examples' sources: what separates the examples?",
                name="examples read each other",
                hint="a target token may read only its own example's source tokens",
                variant=lambda src_lengths, tgt_lengths: _packed(src_lengths, tgt_lengths, all_pairs=True),
            ),
            Diagnosis(
                "the mask has a source token per row: which side are the queries?",
                name="transposed",
                hint="rows are target tokens (queries), columns source tokens (keys)",
                variant=lambda src_lengths, tgt_lengths: _packed(src_lengths, tgt_lengths, transposed=True),
            ),
            Diagnosis(
                "a target token cannot read its example's later source tokens: is cross-attention causal?",
                name="causal cross mask",
                hint="cross-attention is not causal: every source token of the example is known",
                variant=lambda src_lengths, tgt_lengths: _packed(src_lengths, tgt_lengths, causal=True),
            ),
        ),
    )
)


from . import _ch12_decoder  # noqa: E402,F401  (12.7 and 12.8)
