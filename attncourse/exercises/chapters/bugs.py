"""Appendix A exercises: spot the bug.

The appendix page teaches the symptoms and how to look for them; each exercise here (A.1-A.5) is a
bug the page does not show, taken from a fix in public code (the prompt names where); A.6-A.10, the
bugs of chapters 7, 11 and 12's code and one prediction of a symptom, are in ``bugs_modern``.  The
student version of each cell shows working-looking code with the bug in it (the ``stub``); the
student returns the function fixed.  Ids, titles and stub comments name the function or the
symptom, never the cause; the diagnoses recognise the bug itself, and name its cause as a hint.
"""

from __future__ import annotations

import numpy as np

from ... import softmax
from ..engine.registry import Case, Diagnosis, Exercise, grouped, register
from ._shared import swap

__all__: list = []

TORCH_NEEDS = ("import torch", "from torch import nn")
NUMPY_NEEDS = ("import numpy as np", "from attncourse import softmax")


def _masked_softmax(scores, allowed):
    return softmax(np.where(allowed, scores, -np.inf))


# ----------------------------------------------------------------------------- A.1 chunk_window_weights
def _window_allowed(L, S, window, how="right"):
    """(L, S) boolean: query i of the chunk is token S - L + i; it sees the `window` latest tokens up to itself."""
    i = np.arange(L)[:, None] + (S - L)  # each query's place in the text
    if how == "top left":  # the chunk's queries numbered from 0, as if there were no cache
        i = np.arange(L)[:, None]
    j = np.arange(S)[None, :]
    if how == "stub":  # the handed-out code: far-future keys let through, the past never cut
        return (j <= i) | (j - i > window)
    if how == "causal only":
        return j <= i
    lo = {"right": window, "one more": window + 1, "one fewer": window - 1, "top left": window}[how]
    return (j <= i) & (j > i - lo)


def _chunk_window_weights(q, k, window, how="right"):
    L, S = q.shape[-2], k.shape[-2]
    allowed = _window_allowed(L, S, window, how)
    if not allowed.any(axis=-1).all():
        return None  # a row with nothing to read: that idea has no weights here
    return _masked_softmax(q @ swap(k) / np.sqrt(q.shape[-1]), allowed)


def _chunk_case(name, rng, lead, L, S, E, window, dtype=np.float64):
    return Case(
        name,
        q=rng.normal(size=(*lead, L, E)).astype(dtype),
        k=rng.normal(size=(*lead, S, E)).astype(dtype),
        window=window,
    )


def _chunk_cases():
    rng = np.random.default_rng(9101)
    return (
        grouped(
            "chunk after a cache",
            _chunk_case("a chunk of 3 after 4 cached tokens, window 3", rng, (), 3, 7, 4, 3),
            _chunk_case("a batch of 2, one new token after 5 cached, window 4", rng, (2,), 1, 6, 3, 4),
            _chunk_case("4 heads, a chunk of 5 after 3 cached, window 2", rng, (4,), 5, 8, 2, 2),
        )
        + grouped(
            "prompt, no cache",
            _chunk_case("the whole prompt of 6, window 4", rng, (), 6, 6, 3, 4),
            _chunk_case("a prompt of 4, window 1: each token sees itself", rng, (2,), 4, 4, 2, 1),
        )
        + grouped(
            "dtype",
            _chunk_case("float32, a chunk of 4 after 2 cached, window 3", rng, (), 4, 6, 4, 3, np.float32),
        )
    )


register(
    Exercise(
        id="bugs.chunk_window_weights",
        number="A.1",
        title="sliding-window weights of new tokens against a cache",
        points=2,
        function="chunk_window_weights",
        hint="torch.tril(x, diagonal=d) keeps the entries with column - row <= d and zeroes the others: "
        "the window needs its own -inf entries, those with key <= query's position - window, added to "
        "the causal ones",
        kind="diagnose",
        description="A server reads a prompt in chunks through a model with a sliding window: a chunk of "
        "`L` new tokens is scored against a cache that holds all `S` tokens so far, the chunk included "
        "(the chunk is the last `L` of them, `L <= S`). Query `i` of the chunk, token `S - L + i` of the "
        "text, may attend to the `window` latest tokens up to and including itself (`window >= 1`). "
        "`q (..., L, E)` and `k (..., S, E)` are torch tensors, `window` an int; returns the scaled "
        "softmax weights `(..., L, S)`. The code builds its mask as an additive float mask, as the server "
        "it comes from does. Symptom: when the window holds the whole cache the weights are right; with a "
        "shorter window they are not. Find the bug and fix it; you may call `torch`.",
        solution='''
            def chunk_window_weights(q, k, window):
                """Sliding-window weights (..., L, S) of a chunk of L new queries against S cached keys."""
                L, S = q.shape[-2], k.shape[-2]
                scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5  # (..., L, E) @ (..., E, S) -> (..., L, S)
                minus_inf = torch.full((L, S), float("-inf"), dtype=scores.dtype)
                masked = torch.triu(minus_inf, diagonal=S - L + 1)  # (L, S): -inf after each query's token
                ### BEGIN SOLUTION
                # Fixed in huggingface/transformers, pull request 41228 (reported in issue 41184).
                masked = masked + torch.tril(minus_inf, diagonal=S - L - window)
                ### END SOLUTION
                return torch.softmax(scores + masked, dim=-1)
        ''',
        stub="masked = torch.tril(masked, diagonal=S - L + window)",
        reference=_chunk_window_weights,
        public_cases=_chunk_cases,
        outputs=("weights",),
        distributions=("weights",),
        needs=TORCH_NEEDS,
        array_kind="torch",
        diagnoses=(
            Diagnosis(
                "your weights reach tokens older than the window, and with a window shorter than the "
                "chunk they reach tokens after the query's own: what does that line do to the entries it "
                "does not keep?",
                name="window cut by tril",
                hint="tril zeroes the entries above its diagonal, and a zero in an additive mask lets the "
                "key through: add a second -inf matrix, tril(minus_inf, diagonal=S - L - window)",
                variant=lambda q, k, w: _chunk_window_weights(q, k, w, "stub"),
            ),
            Diagnosis(
                "your weights are causal but reach every older token: where does the window end?",
                name="no window",
                hint="block the keys at least `window` tokens before the query's own",
                variant=lambda q, k, w: _chunk_window_weights(q, k, w, "causal only"),
            ),
            Diagnosis(
                "each query reads one token more than the window holds",
                name="window one too wide",
                hint="the window counts the query's own token: keys from position - window + 1 on",
                variant=lambda q, k, w: _chunk_window_weights(q, k, w, "one more"),
            ),
            Diagnosis(
                "each query reads one token fewer than the window holds",
                name="window one too narrow",
                hint="the window counts the query's own token, and `window` tokens in all",
                variant=lambda q, k, w: _chunk_window_weights(q, k, w, "one fewer"),
            ),
            Diagnosis(
                "your weights are right without a cache but not for a chunk after one: which token of the "
                "text is query i of the chunk?",
                name="queries numbered from the cache's start",
                hint="query i is token S - L + i: the diagonals shift by S - L",
                variant=lambda q, k, w: _chunk_window_weights(q, k, w, "top left"),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- A.2 padded_head_weights
def _head_weights(q, k, keep, n_heads, layout="batch major"):
    if layout == "batch major":
        rows = np.repeat(keep, n_heads, axis=0)
    else:  # head major: [M0, M1, M0, M1]
        rows = np.tile(keep, (n_heads, 1))
    if layout != "batch major" and keep.shape[0] == 1:
        return None
    return _masked_softmax(q @ swap(k) / np.sqrt(q.shape[-1]), rows[:, None, :])


def _head_case(name, rng, lengths, n_heads, L, S, E, dtype=np.float64):
    B = len(lengths)
    keep = np.arange(S)[None, :] < np.array(lengths)[:, None]
    return Case(
        name,
        q=rng.normal(size=(B * n_heads, L, E)).astype(dtype),
        k=rng.normal(size=(B * n_heads, S, E)).astype(dtype),
        keep=keep,
        n_heads=n_heads,
    )


def _head_cases():
    rng = np.random.default_rng(9102)
    return grouped(
        "padding",
        _head_case("2 sentences of 4 and 2 keys, 2 heads, L=3", rng, [4, 2], 2, 3, 4, 2),
        _head_case("3 sentences of 5, 1 and 3 keys, 2 heads, L=2", rng, [5, 1, 3], 2, 2, 5, 3),
        _head_case("2 sentences of 3 and 1 keys, 4 heads, L=2", rng, [3, 1], 4, 2, 3, 2),
    ) + grouped(
        "dtype",
        _head_case("float32, 2 sentences of 1 and 3 keys, 3 heads, L=2", rng, [1, 3], 3, 2, 3, 4, np.float32),
    )


register(
    Exercise(
        id="bugs.padded_head_weights",
        former_ids=("bugs.head_major_mask",),
        number="A.2",
        title="heads that attend to padding in a batch",
        points=2,
        function="padded_head_weights",
        hint="row b * H + h is sentence b, head h: each sentence's mask must be repeated H times in a row "
        "(np.repeat along axis 0), not the whole batch tiled H times",
        kind="diagnose",
        description="Heads stacked into one axis, as `nn.MultiheadAttention` stacks a 3-D mask: `q (B*H, L, "
        "E)` and `k (B*H, S, E)`, where row `b * H + h` holds sentence `b`, head `h`; `keep (B, "
        "S)` is True for each sentence's real keys; `n_heads` is H. Returns the scaled attention "
        "weights `(B*H, L, S)`, zero on padded keys. Symptom: with one sentence in the batch the "
        "weights are right; with several, some heads put weight on padded keys and others ignore "
        "real ones. Find the bug and fix it; numpy and `softmax` only.",
        solution='''
            def padded_head_weights(q, k, keep, n_heads):
                """Weights (B*H, L, S); row b*H + h is sentence b, head h; keep (B, S) marks real keys."""
                scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])  # (B*H, L, E) @ (B*H, E, S)
                ### BEGIN SOLUTION
                # Fixed in line/lighthouse, pull request 77; reported in reczoo/FuxiCTR, issue 130.
                keep_rows = np.repeat(keep, n_heads, axis=0)  # (B, S) -> (B*H, S)
                ### END SOLUTION
                return softmax(np.where(keep_rows[:, None, :], scores, -np.inf))  # (B*H, L, S)
        ''',
        stub="keep_rows = np.tile(keep, (n_heads, 1))  # (B, S) -> (B*H, S)",
        reference=_head_weights,
        public_cases=_head_cases,
        outputs=("weights",),
        distributions=("weights",),
        needs=NUMPY_NEEDS,
        diagnoses=(
            Diagnosis(
                "the weights of row r follow the padding of sentence r % B, not of sentence r // H: "
                "in which order does the stacked axis list sentences and heads?",
                name="masks tiled head-major",
                hint="row b * H + h belongs to sentence b: np.repeat(keep, n_heads, axis=0)",
                variant=lambda q, k, keep, H: _head_weights(q, k, keep, H, layout="head major"),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- A.3 sentence_embeddings
def _pooled(hidden, keep, divide_by="real"):
    w = keep[..., None].astype(float)
    total = (hidden * w).sum(axis=1)
    if divide_by == "length":
        return total / hidden.shape[1]
    if divide_by == "plain mean":
        return hidden.mean(axis=1)
    return total / w.sum(axis=1)


def _pool_case(name, rng, lengths, L, D, dtype=np.float64):
    keep = np.arange(L)[None, :] < np.array(lengths)[:, None]
    hidden = rng.normal(size=(len(lengths), L, D)) + 1.0  # a model's outputs at padded positions are not 0
    return Case(name, hidden=hidden.astype(dtype), keep=keep)


def _pool_cases():
    rng = np.random.default_rng(9103)
    return grouped(
        "padding",
        _pool_case("2 sentences of 3 and 5 tokens, L=5, D=2", rng, [3, 5], 5, 2),
        _pool_case("3 sentences of 1, 4 and 2 tokens, L=4, D=3", rng, [1, 4, 2], 4, 3),
    ) + grouped(
        "dtype", _pool_case("float32, 2 sentences of 2 and 6 tokens, D=4", rng, [2, 6], 6, 4, np.float32)
    )


register(
    Exercise(
        id="bugs.sentence_embeddings",
        former_ids=("bugs.mean_over_padding",),
        number="A.3",
        title="a sentence that shrinks in a longer batch",
        points=2,
        function="sentence_embeddings",
        hint="divide each sentence's sum by its own number of real tokens, keep.sum(axis=1), not by L",
        kind="diagnose",
        description="Mean pooling for sentence embeddings: `hidden (B, L, D)` are a model's output vectors "
        "for a batch padded to `L` tokens, `keep (B, L)` is True for real tokens. Returns `(B, "
        "D)`, the mean of each sentence's real-token vectors. Symptom: a sentence embedded alone "
        "is right, but the same sentence in a batch with a longer one comes out shorter, pulled "
        "towards zero. Find the bug and fix it; numpy only.",
        solution='''
            def sentence_embeddings(hidden, keep):
                """Mean of each sentence's real-token vectors: hidden (B, L, D), keep (B, L) -> (B, D)."""
                weights = keep[..., None].astype(hidden.dtype)  # (B, L, 1): 1 for real tokens, 0 for padding
                total = (hidden * weights).sum(axis=1)  # (B, D)
                ### BEGIN SOLUTION
                # Fixed in HKUDS/LightRAG, pull request 3675; see huggingface/transformers, issue 17463.
                count = weights.sum(axis=1)  # (B, 1)
                ### END SOLUTION
                return total / count
        ''',
        stub="count = hidden.shape[1]",
        reference=_pooled,
        public_cases=_pool_cases,
        needs=("import numpy as np",),
        diagnoses=(
            Diagnosis(
                "the padded positions count in the denominator: a sentence of n real tokens is scaled by "
                "n / L. How many vectors were summed?",
                name="divided by the padded length",
                hint="divide by the number of real tokens of each sentence, keep.sum(axis=1)",
                variant=lambda hidden, keep: _pooled(hidden, keep, "length"),
            ),
            Diagnosis(
                "the padded positions' vectors are averaged in: is the model's output at a padded "
                "position zero?",
                name="plain mean over padding",
                hint="sum only the real tokens (multiply by keep) and divide by their number",
                variant=lambda hidden, keep: _pooled(hidden, keep, "plain mean"),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- A.4 add_positions
def _with_positions(x, keep, table, mode="real"):
    B, L = keep.shape
    if mode == "arange":
        positions = np.broadcast_to(np.arange(L), (B, L))
        if keep.all():
            return None
    elif mode == "from 1":
        positions = np.minimum(np.cumsum(keep, axis=-1), table.shape[0] - 1)
    else:
        positions = np.maximum(np.cumsum(keep, axis=-1) - 1, 0)
    return x + table[positions]


def _pos_case(name, rng, pads, L, D, dtype=np.float64):
    keep = np.arange(L)[None, :] >= np.array(pads)[:, None]  # padding on the left
    return Case(
        name,
        x=rng.normal(size=(len(pads), L, D)).astype(dtype),
        keep=keep,
        table=rng.normal(size=(L + 2, D)).astype(dtype),
    )


def _pos_cases():
    rng = np.random.default_rng(9104)
    return grouped(
        "left padding",
        _pos_case("2 prompts, 0 and 2 pads, L=4, D=3", rng, [0, 2], 4, 3),
        _pos_case("3 prompts, 3, 0 and 1 pads, L=5, D=2", rng, [3, 0, 1], 5, 2),
    ) + grouped(
        "dtype", _pos_case("float32, 2 prompts, 2 and 0 pads, L=3, D=4", rng, [2, 0], 3, 4, np.float32)
    )


register(
    Exercise(
        id="bugs.add_positions",
        former_ids=("bugs.left_pad_positions",),
        number="A.4",
        title="a prompt whose vectors change in a batch",
        points=2,
        function="add_positions",
        hint="a token's position is the number of real tokens before it: np.cumsum(keep, axis=-1) - 1, "
        "and 0 for the pads",
        kind="diagnose",
        description="Batched generation pads prompts on the left. `x (B, L, D)` are token vectors, `keep (B, "
        "L)` is True for real tokens (the pads come first), `table (P, D)` holds learned position "
        "vectors (`P > L`). Returns `(B, L, D)`: each real token's vector plus the position "
        "vector of its place in its own prompt, the first real token at position 0; a pad gets "
        "position 0's vector. Symptom: a prompt alone gets the right vectors, but the same prompt "
        "in a batch with a longer one, padded on the left, gets others. Find the bug and fix it; "
        "numpy only.",
        solution='''
            def add_positions(x, keep, table):
                """x (B, L, D) plus each token's position vector, counted from its prompt's first real token."""
                B, L = keep.shape
                ### BEGIN SOLUTION
                # The bug of batched GPT-2 generation in huggingface/transformers, issue 3021, fixed in pull request 7552; again in unslothai/unsloth, pull request 3795.
                positions = np.maximum(np.cumsum(keep, axis=-1) - 1, 0)  # (B, L)
                ### END SOLUTION
                return x + table[positions]  # (B, L, D)
        ''',
        stub="positions = np.broadcast_to(np.arange(L), (B, L))",
        reference=_with_positions,
        public_cases=_pos_cases,
        needs=("import numpy as np",),
        diagnoses=(
            Diagnosis(
                "the positions count the pads: a prompt with p pads starts at position p. Where does each "
                "prompt's first real token sit?",
                name="positions count the padding",
                hint="count real tokens only: np.cumsum(keep, axis=-1) - 1",
                variant=lambda x, keep, table: _with_positions(x, keep, table, "arange"),
            ),
            Diagnosis(
                "each prompt's positions start at 1: what does the cumulative count of real tokens give "
                "the first one?",
                name="positions start at 1",
                hint="subtract 1 from the cumulative count",
                variant=lambda x, keep, table: _with_positions(x, keep, table, "from 1"),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- A.5 fused_qkv_attention
def _fused(x, W, n_heads, layout="per head", scale="head"):
    """Multi-head self-attention, no mask, heads concatenated, from x @ W laid out per head."""
    x, W = np.asarray(x, dtype=np.float64), np.asarray(W, dtype=np.float64)
    qkv = x @ W  # (..., L, 3d)
    d = qkv.shape[-1] // 3
    dh = d // n_heads
    if layout == "thirds":  # read as [Q | K | V], each then cut into heads
        parts = [t.reshape(*t.shape[:-1], n_heads, dh) for t in np.split(qkv, 3, axis=-1)]
    elif layout == "features first":  # each head's block read as (d_head, 3)
        per_head = qkv.reshape(*qkv.shape[:-1], n_heads, dh, 3)
        parts = [per_head[..., i] for i in range(3)]
    else:
        per_head = qkv.reshape(*qkv.shape[:-1], n_heads, 3, dh)
        parts = [per_head[..., i, :] for i in range(3)]
    q, k, v = (np.moveaxis(t, -2, -3) for t in parts)  # (..., H, L, dh)
    width = d if scale == "model" else dh
    out = softmax(q @ swap(k) / np.sqrt(width)) @ v  # (..., H, L, dh)
    return np.moveaxis(out, -3, -2).reshape(*out.shape[:-3], out.shape[-2], d)


def _fused_case(name, rng, lead, L, d, n_heads, dtype=np.float64):
    return Case(
        name,
        x=rng.normal(size=(*lead, L, d)).astype(dtype),
        W=(rng.normal(size=(d, 3 * d)) / np.sqrt(d)).astype(dtype),
        n_heads=n_heads,
    )


def _fused_cases():
    rng = np.random.default_rng(9105)
    return grouped(
        "heads",
        _fused_case("L=4, d=6, 2 heads", rng, (), 4, 6, 2),
        _fused_case("a batch of 2, L=3, d=8, 4 heads", rng, (2,), 3, 8, 4),
        _fused_case("L=5, d=9, 3 heads", rng, (), 5, 9, 3),
    ) + grouped(
        "dtype",
        _fused_case("float32, L=3, d=6, 3 heads", rng, (), 3, 6, 3, np.float32),
    )


register(
    Exercise(
        id="bugs.fused_qkv_attention",
        number="A.5",
        title="multi-head attention from one fused projection",
        points=1,
        function="fused_qkv_attention",
        hint="this checkpoint's columns go head by head, each head's query, key and value side by side: "
        "reshape x @ W to (..., L, n_heads, 3, d_head) and take q, k, v from the axis of 3",
        kind="diagnose",
        description="A model converted from Megatron-LM computes its queries, keys and values with one "
        "fused matrix `W (d, 3d)`. Megatron lays its columns out head by head: the first `3 * d_head` "
        "columns are head 0's query, key and value (`d_head` columns each, in that order), the next "
        "`3 * d_head` head 1's, and so on (`d_head = d / n_heads`). `fused_qkv_attention` takes `x (..., L, "
        "d)`, `W` and `n_heads` and returns multi-head self-attention (no mask, each head scaled by "
        "`1/sqrt(d_head)`) with the heads' outputs concatenated in head order, `(..., L, d)`, before any "
        "output projection. Symptom: with one head the outputs are right; with several they are not. "
        "Find the bug and fix it; numpy and `softmax` only.",
        solution='''
            def fused_qkv_attention(x, W, n_heads):
                """Self-attention (..., L, d) from x (..., L, d) and a fused W (d, 3d) laid out head by head."""
                qkv = x @ W  # (..., L, 3d)
                d = W.shape[0]
                d_head = d // n_heads
                ### BEGIN SOLUTION
                # The layouts transformers converts between in fix_query_key_value_ordering
                # (models/megatron_gpt2/convert_megatron_gpt2_checkpoint.py).
                per_head = qkv.reshape(*qkv.shape[:-1], n_heads, 3, d_head)  # (..., L, H, 3, d_head)
                q, k, v = (np.moveaxis(per_head[..., i, :], -2, -3) for i in range(3))  # (..., H, L, d_head)
                ### END SOLUTION
                out = softmax(q @ np.swapaxes(k, -1, -2) / np.sqrt(d_head)) @ v  # (..., H, L, d_head)
                return np.moveaxis(out, -3, -2).reshape(*x.shape[:-1], d)  # (..., L, H, d_head) -> (..., L, d)
        ''',
        stub="q, k, v = (\n"
        "    np.moveaxis(t.reshape(*t.shape[:-1], n_heads, d_head), -2, -3)  # (..., H, L, d_head)\n"
        "    for t in np.split(qkv, 3, axis=-1)\n"
        ")",
        reference=_fused,
        public_cases=_fused_cases,
        outputs=("out",),
        needs=NUMPY_NEEDS,
        diagnoses=(
            Diagnosis(
                "with one head your outputs are right, with several they are not: which columns of W "
                "does each head's query, key and value come from?",
                name="read as [Q | K | V]",
                hint="the columns go head by head, [q_0 k_0 v_0 q_1 k_1 v_1 ...], not [Q | K | V]: reshape "
                "to (..., n_heads, 3, d_head)",
                variant=lambda x, W, H: _fused(x, W, H, layout="thirds"),
            ),
            Diagnosis(
                "your heads take their features from the right columns, but mixed up among q, k and v",
                name="each head read as (d_head, 3)",
                hint="within a head the query's d_head columns come first, then the key's, then the value's",
                variant=lambda x, W, H: _fused(x, W, H, layout="features first"),
            ),
            Diagnosis(
                "the weights are flatter than they should be: which width scales one head's scores?",
                name="scaled by the model width",
                hint="divide each head's scores by sqrt(d_head)",
                variant=lambda x, W, H: None if H == 1 else _fused(x, W, H, scale="model"),
            ),
        ),
    )
)


# A.6 - A.10, the bugs of chapters 7, 11 and 12's code, live in their own module (registered on import)
from . import bugs_modern  # noqa: E402,F401
