"""Chapter 9 exercises: online-softmax merges, tiled attention, the KV cache and what memory costs."""

from __future__ import annotations

import numpy as np

from .. import scaled_dot_product_attention as sdpa
from ._common import swap
from ._method import ScoreTiles
from ._registry import Case, Diagnosis, Exercise, grouped, register

__all__: list = []

NO_FUSED = ("torch.nn.functional.scaled_dot_product_attention",)


# ----------------------------------------------------------------------------- 9.1 merge (extend)
def _partial(scores, values):
    """(m, l, acc) of one block of keys: row max, sum of exp(s - m), unnormalised exp(s - m) @ v."""
    m = scores.max(axis=-1)  # (..., L)
    shift = np.where(np.isfinite(m), m, 0.0)
    p = np.exp(scores - shift[..., None])  # (..., L, b); exp(-inf) = 0 for masked keys
    return m, p.sum(axis=-1), p @ values  # (..., L), (..., L), (..., L, b) @ (..., b, Ev) -> (..., L, Ev)


def _merge_case(name, scores, values, split, dtype=np.float64):
    """The two halves' states of ``scores (..., L, S)`` and ``values (..., S, Ev)``, split at ``split``."""
    first = _partial(scores[..., :split], values[..., :split, :])
    second = _partial(scores[..., split:], values[..., split:, :])
    (m1, l1, acc1), (m2, l2, acc2) = [[a.astype(dtype) for a in half] for half in (first, second)]
    return Case(name, m1=m1, l1=l1, acc1=acc1, m2=m2, l2=l2, acc2=acc2)


def _merge_cases():
    rng = np.random.default_rng(901)
    n = rng.normal
    empty = n(size=(3, 5))
    empty[0, 2:] = -np.inf  # row 0: no visible key in half 2
    empty[1, :] = -np.inf  # row 1: no visible key in either half
    return (
        grouped(
            "merge",
            _merge_case("L=2 queries, blocks of 3 and 2 keys", n(size=(2, 5)), n(size=(5, 3)), 3),
            _merge_case("L=3, blocks of 2 and 4 keys, large scores", 30 * n(size=(3, 6)), n(size=(6, 2)), 2),
        )
        + grouped(
            "batch dims",
            _merge_case("a batch of 2, L=3, blocks of 2 and 2", n(size=(2, 3, 4)), n(size=(2, 4, 2)), 2),
            _merge_case(
                "batch (2, 2), L=2, blocks of 1 and 3", 5 * n(size=(2, 2, 2, 4)), n(size=(2, 2, 4, 3)), 1
            ),
        )
        + grouped(
            "empty halves",
            _merge_case("L=3: a row empty in half 2, a row empty in both", empty, n(size=(5, 2)), 2),
        )
        + grouped(
            "dtype",
            _merge_case("float32, L=2, blocks of 2 and 3", n(size=(2, 5)), n(size=(5, 2)), 2, np.float32),
        )
    )


def _merge(m1, l1, acc1, m2, l2, acc2, rescale=True, flipped=False):
    m = np.maximum(m1, m2)
    shift = np.where(np.isfinite(m), m, 0.0)  # both blocks empty: nothing to rescale
    a1, a2 = np.exp(m1 - shift), np.exp(m2 - shift)
    if flipped:
        a1, a2 = np.exp(shift - m1), np.exp(shift - m2)
    if not rescale:
        a1, a2 = np.ones_like(m1), np.ones_like(m2)
    return m, a1 * l1 + a2 * l2, a1[..., None] * acc1 + a2[..., None] * acc2


def _merge_nan(m1, l1, acc1, m2, l2, acc2):
    m = np.maximum(m1, m2)
    a1, a2 = np.exp(m1 - m), np.exp(m2 - m)  # -inf - -inf = NaN for a row with no keys yet
    return m, a1 * l1 + a2 * l2, a1[..., None] * acc1 + a2[..., None] * acc2


register(
    Exercise(
        id="ch09.merge_partials",
        number="9.1",
        title="merge two partial softmax results",
        points=3,
        function="merge_partials",
        hint="bring both halves to the common maximum: multiply each half's l and acc by exp(its m - the common m)",
        kind="extend",
        description="Two workers each scanned half of the keys (split-K, as FlashDecoding does) and "
        "return, per query row, the online-softmax state of their half: the running maximum `m (..., L)`, "
        "the sum `l (..., L)` of $e^{s_j - m}$, and the unnormalised output `acc (..., L, Ev)` "
        "$= \\sum_j e^{s_j - m} v_j$. Merge the two states into the state of all keys, `(m, l, acc)`, so "
        "that `acc / l[..., None]` is the attention output. A half in which a row had no visible key "
        "arrives as `m = -inf`, `l = 0`, `acc = 0`: no NaN may come out.",
        solution='''
            def merge_partials(m1, l1, acc1, m2, l2, acc2):
                """The online-softmax state (m, l, acc) of two blocks of keys together."""
                ### BEGIN SOLUTION
                m = np.maximum(m1, m2)  # (..., L): the maximum over both halves
                shift = np.where(np.isfinite(m), m, 0.0)  # no keys in either half: avoid -inf - -inf
                a1 = np.exp(m1 - shift)  # rescales half 1 from its own maximum to the common one
                a2 = np.exp(m2 - shift)
                l = a1 * l1 + a2 * l2
                acc = a1[..., None] * acc1 + a2[..., None] * acc2  # (..., L, 1) * (..., L, Ev)
                return m, l, acc
                ### END SOLUTION
        ''',
        reference=_merge,
        public_cases=_merge_cases,
        outputs=("m", "l", "acc"),
        diagnoses=(
            Diagnosis(
                "the two halves were added as they are, but each sum is relative to its own maximum: "
                "multiply each by exp(m_half - m) before adding",
                name="missing rescale of the partial sums",
                variant=lambda *a: _merge(*a, rescale=False),
            ),
            Diagnosis(
                "the rescaling factor is upside down: a half whose maximum is below the common one must "
                "shrink, exp(m_half - m) <= 1",
                variant=lambda *a: _merge(*a, flipped=True),
            ),
            Diagnosis(
                "a row with no visible key in either half came out NaN (-inf - -inf): shift by 0 where "
                "the common maximum is -inf",
                variant=_merge_nan,
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 9.2 tiled pass (implement)
def _tiled_cases():
    rng = np.random.default_rng(902)
    n = rng.normal
    return (
        grouped(
            "blocks",
            Case("L=3, S=8, block 4", q=n(size=(3, 4)), k=n(size=(8, 4)), v=n(size=(8, 2)), block_size=4),
            Case(
                "L=2, S=7, block 3 (a ragged last block)",
                q=n(size=(2, 3)),
                k=n(size=(7, 3)),
                v=n(size=(7, 5)),
                block_size=3,
            ),
            Case(
                "L=32, S=2048, block 64 (the method: blocks, not the whole score matrix)",
                q=n(size=(32, 8)),
                k=n(size=(2048, 8)),
                v=n(size=(2048, 4)),
                block_size=64,
            ),
        )
        + grouped(
            "batch dims",
            Case(
                "a batch of 2, L=2, S=5, block 2",
                q=n(size=(2, 2, 3)),
                k=n(size=(2, 5, 3)),
                v=n(size=(2, 5, 2)),
                block_size=2,
            ),
            Case(
                "batch (2, 2), L=3, S=6, block 4",
                q=2 * n(size=(2, 2, 3, 2)),
                k=2 * n(size=(2, 2, 6, 2)),
                v=n(size=(2, 2, 6, 3)),
                block_size=4,
            ),
        )
        + grouped(
            "dtype",
            Case(
                "float32, L=2, S=5, block 2",
                q=n(size=(2, 4)).astype(np.float32),
                k=n(size=(5, 4)).astype(np.float32),
                v=n(size=(5, 2)).astype(np.float32),
                block_size=2,
            ),
        )
    )


def _tiled_dropped(q, k, v, block_size):
    S = k.shape[-2]
    kept = (S // block_size) * block_size
    if kept in (0, S):
        return None
    return sdpa(q, k[..., :kept, :], v[..., :kept, :])[0]


def _tiled_no_rescale(q, k, v, block_size):
    S = k.shape[-2]
    m = np.full(q.shape[:-1], -np.inf)
    acc = np.zeros(q.shape[:-1] + (v.shape[-1],))
    l = np.zeros(q.shape[:-1])
    for j in range(0, S, block_size):
        s = q @ swap(k[..., j : j + block_size, :]) / np.sqrt(q.shape[-1])
        m = np.maximum(m, s.max(-1))
        p = np.exp(s - m[..., None])
        l, acc = l + p.sum(-1), acc + p @ v[..., j : j + block_size, :]  # old terms never rescaled
    return acc / l[..., None]


register(
    Exercise(
        id="ch09.tiled_attention",
        number="9.2",
        title="a tiled pass over the keys",
        points=3,
        function="tiled_attention",
        hint="keep a running maximum, sum and output per query; when a block raises the maximum, rescale what you have by exp(old max - new max)",
        kind="implement",
        description="Scaled attention `softmax(q k^T / sqrt(E)) v` for `q (..., L, E)`, `k (..., S, E)`, "
        "`v (..., S, Ev)`, computed one block of `block_size` keys at a time, never holding more than "
        "an `(..., L, block_size)` block of scores: keep a running maximum, sum and output per query, "
        "and rescale them whenever the maximum grows. The last block may be shorter. Return `out`.",
        solution='''
            def tiled_attention(q, k, v, block_size):
                """softmax(q k^T / sqrt(E)) v, one block of keys at a time: out (..., L, Ev)."""
                ### BEGIN SOLUTION
                S, E = k.shape[-2], q.shape[-1]
                m = np.full(q.shape[:-1], -np.inf)  # (..., L) running maximum
                l = np.zeros(q.shape[:-1])  # (..., L) running sum of exp(s - m)
                acc = np.zeros(q.shape[:-1] + (v.shape[-1],))  # (..., L, Ev) running unnormalised output
                for j in range(0, S, block_size):  # the last block may be shorter
                    k_blk, v_blk = k[..., j : j + block_size, :], v[..., j : j + block_size, :]
                    s = q @ np.swapaxes(k_blk, -1, -2) / np.sqrt(E)  # (..., L, E) @ (..., E, b) -> (..., L, b)
                    m_new = np.maximum(m, s.max(axis=-1))
                    rescale = np.exp(m - m_new)  # shrinks what was summed under the old maximum
                    p = np.exp(s - m_new[..., None])  # (..., L, b)
                    l = l * rescale + p.sum(axis=-1)
                    acc = acc * rescale[..., None] + p @ v_blk  # (..., L, b) @ (..., b, Ev) -> (..., L, Ev)
                    m = m_new
                return acc / l[..., None]
                ### END SOLUTION
        ''',
        reference=lambda q, k, v, block_size: sdpa(q, k, v)[0],
        public_cases=_tiled_cases,
        forbids=NO_FUSED,
        method=ScoreTiles,
        diagnoses=(
            Diagnosis(
                "the last, shorter block is missing: range(0, S, block_size) visits it, slicing past the "
                "end is fine",
                variant=_tiled_dropped,
            ),
            Diagnosis(
                "right while the first block holds each row's maximum, wrong once a later block raises it: "
                "what happens to the terms already summed under the old maximum?",
                name="missing rescale in online softmax",
                hint="when the maximum grows, rescale what was already summed by exp(m_old - m_new), "
                "both l and the output",
                variant=_tiled_no_rescale,
            ),
            Diagnosis(
                "the scores are unscaled: divide by sqrt(E)",
                variant=lambda q, k, v, b: sdpa(q, k, v, scale=1.0)[0],
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 9.3 decoding step (implement)
def _step_cases():
    rng = np.random.default_rng(903)
    n = rng.normal
    return (
        grouped(
            "cache",
            Case(
                "4 cached tokens, E=3, Ev=2",
                q_new=n(size=(1, 3)),
                k_new=n(size=(1, 3)),
                v_new=n(size=(1, 2)),
                k_cache=n(size=(4, 3)),
                v_cache=n(size=(4, 2)),
            ),
            Case(
                "an empty cache (the first token), E=2, Ev=3",
                q_new=n(size=(1, 2)),
                k_new=n(size=(1, 2)),
                v_new=n(size=(1, 3)),
                k_cache=np.zeros((0, 2)),
                v_cache=np.zeros((0, 3)),
            ),
        )
        + grouped(
            "batch dims",
            Case(
                "a batch of 2, 2 cached tokens",
                q_new=n(size=(2, 1, 4)),
                k_new=n(size=(2, 1, 4)),
                v_new=n(size=(2, 1, 4)),
                k_cache=n(size=(2, 2, 4)),
                v_cache=n(size=(2, 2, 4)),
            ),
            Case(
                "batch (2, 2), 3 cached tokens",
                q_new=n(size=(2, 2, 1, 2)),
                k_new=n(size=(2, 2, 1, 2)),
                v_new=n(size=(2, 2, 1, 3)),
                k_cache=n(size=(2, 2, 3, 2)),
                v_cache=n(size=(2, 2, 3, 3)),
            ),
        )
        + grouped(
            "dtype",
            Case(
                "float32, 2 cached tokens",
                q_new=n(size=(1, 4)).astype(np.float32),
                k_new=n(size=(1, 4)).astype(np.float32),
                v_new=n(size=(1, 2)).astype(np.float32),
                k_cache=n(size=(2, 4)).astype(np.float32),
                v_cache=n(size=(2, 2)).astype(np.float32),
            ),
        )
    )


def _step(q_new, k_new, v_new, k_cache, v_cache, include_new=True, prepend=False):
    if prepend:
        k_all, v_all = np.concatenate([k_new, k_cache], -2), np.concatenate([v_new, v_cache], -2)
    else:
        k_all, v_all = np.concatenate([k_cache, k_new], -2), np.concatenate([v_cache, v_new], -2)
    if include_new:
        out = sdpa(q_new, k_all, v_all)[0]
    else:
        if k_cache.shape[-2] == 0:
            return None
        out = sdpa(q_new, k_cache, v_cache)[0]
    return out, k_all, v_all


register(
    Exercise(
        id="ch09.decode_step",
        number="9.3",
        title="one decoding step with a KV cache",
        points=2,
        function="decode_step",
        hint="append the new key and value at the end of the cache, then attend from the new query to every cached key and itself",
        kind="implement",
        description="One step of generation: the new token's `q_new`, `k_new (..., 1, E)` and "
        "`v_new (..., 1, Ev)` arrive, the cache holds the `t` earlier tokens' `k_cache (..., t, E)` and "
        "`v_cache (..., t, Ev)` (`t` may be 0). Append the new key and value at the end of the cache and "
        "attend (scaled) from the new query to every key. Return `(out (..., 1, Ev), k_all, v_all)`.",
        reflect=(
            "the new token attends to every cached key with no mask. Why is that still causal?",
            "The cache holds only tokens that came before the new one, and the new token itself: "
            "there is no later token in it to hide. A mask is needed when several queries are "
            "processed at once (a prompt, or a chunk of new tokens as in Exercise 9.6), because then "
            "some keys are in the future of some queries.",
        ),
        solution='''
            def decode_step(q_new, k_new, v_new, k_cache, v_cache):
                """One KV-cache decoding step: (out (..., 1, Ev), k_all (..., t+1, E), v_all (..., t+1, Ev))."""
                ### BEGIN SOLUTION
                k_all = np.concatenate([k_cache, k_new], axis=-2)  # (..., t, E) + (..., 1, E) -> (..., t+1, E)
                v_all = np.concatenate([v_cache, v_new], axis=-2)
                scores = q_new @ np.swapaxes(k_all, -1, -2) / np.sqrt(q_new.shape[-1])  # (..., 1, t+1)
                weights = softmax(scores)  # the newest token may see every earlier one and itself: no mask
                return weights @ v_all, k_all, v_all  # (..., 1, t+1) @ (..., t+1, Ev) -> (..., 1, Ev)
                ### END SOLUTION
        ''',
        reference=_step,
        public_cases=_step_cases,
        outputs=("out", "k_all", "v_all"),
        needs=("import numpy as np", "from attncourse import softmax"),
        forbids=NO_FUSED,
        diagnoses=(
            Diagnosis(
                "the new token attends only to the cache: append its own key and value first, it may "
                "attend to itself",
                variant=lambda *a: _step(*a, include_new=False),
            ),
            Diagnosis(
                "the new key and value go at the end of the cache (position t), not the front: the cache "
                "stays in token order",
                variant=lambda *a: _step(*a, prepend=True),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 9.4 bytes (predict)
register(
    Exercise(
        id="ch09.predict_kv_cache_bytes",
        number="9.4",
        title="predict the size of a KV cache",
        points=1,
        function="predict_kv_cache_bytes",
        kind="predict",
        description="A decoder has 24 layers, 8 key/value heads of $d_{head} = 128$ per layer, and keeps "
        "its KV cache in bfloat16 (2 bytes a number). How many bytes does the cache hold for one sequence "
        "of 8192 tokens? Return the number of bytes; anything within 5% passes.",
        solution='''
            def predict_kv_cache_bytes():
                """Bytes of the KV cache: 24 layers, 8 KV heads of 128, 8192 tokens, bfloat16."""
                ### BEGIN SOLUTION
                # keys and values (2) x layers x heads x d_head x tokens x 2 bytes
                return 2 * 24 * 8 * 128 * 8192 * 2
                ### END SOLUTION
        ''',
        reference=lambda: np.array(2.0 * 24 * 8 * 128 * 8192 * 2),
        public_cases=lambda: grouped(
            "prediction", Case("24 layers, 8 KV heads of 128, 8192 tokens, bfloat16")
        ),
        tolerance=(0.05, 0.0),
        hint="every layer keeps a key and a value vector per head per token",
        diagnoses=(
            Diagnosis(
                "twice the cache: how many bytes does a bfloat16 number take?",
                name="float32 bytes",
                hint="bfloat16 is 2 bytes a number, not 4",
                variant=lambda: np.array(2.0 * 24 * 8 * 128 * 8192 * 4),
            ),
            Diagnosis(
                "that is the number of entries, not bytes",
                name="entries, not bytes",
                hint="2 bytes per bfloat16 number",
                variant=lambda: np.array(2.0 * 24 * 8 * 128 * 8192),
            ),
            Diagnosis(
                "that is one layer's cache; every layer keeps its own",
                name="one layer",
                hint="multiply by the 24 layers",
                variant=lambda: np.array(2.0 * 8 * 128 * 8192 * 2),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 9.5 causal tiles (predict)
register(
    Exercise(
        id="ch09.predict_causal_tiles",
        number="9.5",
        title="predict the tiles a causal pass needs",
        points=1,
        function="predict_causal_tiles",
        hint="which tiles have at least one key at or before one of their queries? count them row of blocks by row of blocks",
        kind="predict",
        description="A tiled causal pass splits $L = S = 4096$ into blocks of 256 queries and 256 keys, "
        "a grid of 16 x 16 tiles, and skips every tile that lies entirely above the diagonal (all its "
        "keys come after all its queries). How many tiles does it compute? Return the count (exact).",
        solution='''
            def predict_causal_tiles():
                """Tiles on or below the diagonal of a 16 x 16 grid (L = S = 4096, blocks of 256)."""
                ### BEGIN SOLUTION
                n = 4096 // 256  # 16 blocks of queries, 16 of keys
                return n * (n + 1) // 2  # query block i needs key blocks 0..i: 1 + 2 + ... + n
                ### END SOLUTION
        ''',
        reference=lambda: np.array(16 * 17 // 2),
        public_cases=lambda: grouped("prediction", Case("L = S = 4096, blocks of 256")),
        diagnoses=(
            Diagnosis(
                "the diagonal tiles are needed too (a query sees the keys up to itself inside them): "
                "n (n + 1) / 2, not n (n - 1) / 2",
                variant=lambda: np.array(16 * 15 // 2),
            ),
            Diagnosis(
                "n^2 / 2 = 128 counts only half of each diagonal tile, but a diagonal tile is computed "
                "whole (masked inside): n (n + 1) / 2",
                variant=lambda: np.array(16 * 16 // 2),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 9.6 cache alignment (diagnose)
def _align_cases():
    rng = np.random.default_rng(906)
    n = rng.normal
    return (
        grouped(
            "chunk",
            Case(
                "2 new queries, 5 keys in all", q=n(size=(2, 3)), k_all=n(size=(5, 3)), v_all=n(size=(5, 2))
            ),
        )
        + grouped(
            "batch dims",
            Case(
                "a batch of 2, 3 new queries, 4 keys",
                q=n(size=(2, 3, 2)),
                k_all=n(size=(2, 4, 2)),
                v_all=n(size=(2, 4, 3)),
            ),
            Case(
                "batch (2, 2), 2 new queries, 6 keys",
                q=n(size=(2, 2, 2, 3)),
                k_all=n(size=(2, 2, 6, 3)),
                v_all=n(size=(2, 2, 6, 2)),
            ),
        )
        + grouped(
            "dtype",
            Case(
                "float32, 2 new queries, 4 keys",
                q=n(size=(2, 4)).astype(np.float32),
                k_all=n(size=(4, 4)).astype(np.float32),
                v_all=n(size=(4, 2)).astype(np.float32),
            ),
        )
    )


def _chunk(q, k_all, v_all, top_left=False):
    L, S = q.shape[-2], k_all.shape[-2]
    mask = np.tril(np.ones((L, S), dtype=bool), k=0 if top_left else S - L)
    return sdpa(q, k_all, v_all, mask)


register(
    Exercise(
        id="ch09.fix_cache_alignment",
        number="9.6",
        title="new tokens that forget the cache",
        points=2,
        function="attend_new_tokens",
        hint="new query i is token S - L + i: shift the diagonal of the causal mask by S - L",
        kind="diagnose",
        forbids=("torch.nn.functional.scaled_dot_product_attention",),
        description="With a KV cache, `L` new tokens (the last `L` of `S`) attend causally to all `S` "
        "cached-plus-new keys. Symptom: generating a prompt in one chunk gives different outputs from "
        "recomputing the whole sequence, and the first new token puts all its weight on key 0. "
        "The function returns `(out, weights)`. Find the bug and fix it.",
        solution='''
            def attend_new_tokens(q, k_all, v_all):
                """Causal attention of the last L of S tokens to all S keys: (out, weights)."""
                L, S = q.shape[-2], k_all.shape[-2]
                ### BEGIN SOLUTION
                allowed = np.tril(np.ones((L, S), dtype=bool), k=S - L)  # new query i is token S - L + i
                ### END SOLUTION
                scores = q @ np.swapaxes(k_all, -1, -2) / np.sqrt(q.shape[-1])  # (..., L, E) @ (..., E, S) -> (..., L, S)
                weights = softmax(np.where(allowed, scores, -np.inf))
                return weights @ v_all, weights  # (..., L, S) @ (..., S, Ev) -> (..., L, Ev)
        ''',
        stub="allowed = np.tril(np.ones((L, S), dtype=bool))  # new query i is token S - L + i",
        reference=_chunk,
        public_cases=_align_cases,
        outputs=("out", "weights"),
        distributions=("weights",),
        needs=("import numpy as np", "from attncourse import softmax"),
        diagnoses=(
            Diagnosis(
                "new query 0 sees only key 0, and new query i only keys 0..i, as if the new tokens were "
                "the first L of the sequence: which token of the whole sequence is new query i?",
                name="top-left instead of bottom-right",
                hint="new query i is token S - L + i: shift the mask's diagonal by S - L (bottom-right)",
                variant=lambda q, k, v: _chunk(q, k, v, top_left=True),
            ),
            Diagnosis(
                "a new token puts weight on a later new token: may it see the future?",
                name="no causal mask",
                hint="query i sees keys up to S - L + i only",
                variant=lambda q, k, v: sdpa(q, k, v),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 9.7 causal tiles (extend)
def _causal_tiled_cases():
    rng = np.random.default_rng(907)
    n = rng.normal
    return (
        grouped(
            "tiles",
            Case("L=S=8, blocks of 4", q=n(size=(8, 3)), k=n(size=(8, 3)), v=n(size=(8, 2)), block_size=4),
            Case(
                "L=S=7, blocks of 3 (ragged)",
                q=n(size=(7, 2)),
                k=n(size=(7, 2)),
                v=n(size=(7, 3)),
                block_size=3,
            ),
            Case(
                "L=S=512, blocks of 32 (the method: tiles, not the whole score matrix)",
                q=n(size=(512, 4)),
                k=n(size=(512, 4)),
                v=n(size=(512, 2)),
                block_size=32,
            ),
        )
        + grouped(
            "batch dims",
            Case(
                "a batch of 2, L=S=5, blocks of 2",
                q=n(size=(2, 5, 3)),
                k=n(size=(2, 5, 3)),
                v=n(size=(2, 5, 2)),
                block_size=2,
            ),
            Case(
                "batch (2, 2), L=S=4, blocks of 3",
                q=n(size=(2, 2, 4, 2)),
                k=n(size=(2, 2, 4, 2)),
                v=n(size=(2, 2, 4, 2)),
                block_size=3,
            ),
        )
        + grouped(
            "dtype",
            Case(
                "float32, L=S=6, blocks of 4",
                q=n(size=(6, 4)).astype(np.float32),
                k=n(size=(6, 4)).astype(np.float32),
                v=n(size=(6, 2)).astype(np.float32),
                block_size=4,
            ),
        )
    )


def _n_blocks(L, block_size):
    return -(-L // block_size)  # ceil(L / block_size)


def _causal_tiled(q, k, v, block_size, causal=True, skip=True):
    nb = _n_blocks(q.shape[-2], block_size)
    tiles = nb * (nb + 1) // 2 if skip else nb * nb
    return sdpa(q, k, v, is_causal=causal)[0], np.array(tiles)


register(
    Exercise(
        id="ch09.causal_tiled_attention",
        number="9.7",
        title="a causal tiled pass that skips tiles",
        points=4,
        function="causal_tiled_attention",
        hint="for each query block, visit only the key blocks that start at or before its last query, and mask inside the tiles on the diagonal",
        kind="extend",
        description="Causal self-attention (`q, k (..., L, E)`, `v (..., L, Ev)`, query `i` sees keys "
        "`0..i`), tiled both ways: blocks of `block_size` queries against blocks of `block_size` keys "
        "(the last block of each may be shorter). A tile whose keys all come after all its queries "
        "contributes nothing: skip it without computing its scores; tiles on the diagonal need the "
        "causal mask inside them. Return `(out (..., L, Ev), n_tiles)`, where `n_tiles` counts the "
        "(query block, key block) tiles whose scores you computed.",
        solution='''
            def causal_tiled_attention(q, k, v, block_size):
                """Causal tiled attention that skips the tiles above the diagonal: (out, tiles computed)."""
                ### BEGIN SOLUTION
                L, E = q.shape[-2], q.shape[-1]
                out = np.zeros(q.shape[:-1] + (v.shape[-1],))
                n_tiles = 0
                for i0 in range(0, L, block_size):  # one block of queries at a time
                    i1 = min(i0 + block_size, L)
                    q_blk = q[..., i0:i1, :]
                    m = np.full(q_blk.shape[:-1], -np.inf)  # (..., b) running max, sum and output
                    l = np.zeros(q_blk.shape[:-1])
                    acc = np.zeros(q_blk.shape[:-1] + (v.shape[-1],))
                    for j0 in range(0, i1, block_size):  # key blocks starting after the last query: skipped
                        j1 = min(j0 + block_size, L)
                        n_tiles += 1
                        s = q_blk @ np.swapaxes(k[..., j0:j1, :], -1, -2) / np.sqrt(E)  # (..., b, E) @ (..., E, b') -> (..., b, b')
                        allowed = np.arange(j0, j1)[None, :] <= np.arange(i0, i1)[:, None]  # (b, b') causal
                        s = np.where(allowed, s, -np.inf)
                        m_new = np.maximum(m, s.max(axis=-1))  # finite: key j0 <= every query of the block
                        p = np.exp(s - m_new[..., None])
                        rescale = np.exp(m - m_new)
                        l = l * rescale + p.sum(axis=-1)
                        acc = acc * rescale[..., None] + p @ v[..., j0:j1, :]  # (..., b, b') @ (..., b', Ev)
                        m = m_new
                    out[..., i0:i1, :] = acc / l[..., None]
                return out, n_tiles
                ### END SOLUTION
        ''',
        reference=_causal_tiled,
        public_cases=_causal_tiled_cases,
        outputs=("out", "n_tiles"),
        forbids=NO_FUSED,
        method=lambda: ScoreTiles(square=True, count_output=1),
        diagnoses=(
            Diagnosis(
                "you computed every tile: a key block that starts after the query block's last query "
                "contributes nothing and is skipped (for n blocks, n (n + 1) / 2 tiles remain)",
                variant=lambda q, k, v, b: _causal_tiled(q, k, v, b, skip=False),
            ),
            Diagnosis(
                "the tiles on the diagonal need the causal mask inside them: there a query still must not "
                "see the keys after it",
                variant=lambda q, k, v, b: _causal_tiled(q, k, v, b, causal=False),
            ),
        ),
    )
)
