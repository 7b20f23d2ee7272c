"""Chapter 9 exercises: online-softmax merges, a key block's gradients from the saved statistics, a
batched KV cache, on-chip tiles, online attention over precomputed scores, causal tiles."""

from __future__ import annotations

import numpy as np

from ... import scaled_dot_product_attention as sdpa
from ... import softmax as softmax_ref
from ..engine.method import ScoreTiles
from ..engine.registry import STUB_LINE, Case, Diagnosis, Exercise, grouped, register
from ._shared import swap

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
        stub=STUB_LINE,
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


# ----------------------------------------------------------------------------- 9.2 a key block's gradients (extend)
def _forward_state(q, k, v):
    """(out, lse) of full attention: what a FlashAttention forward pass saves per query."""
    s = q @ swap(k) / np.sqrt(q.shape[-1])  # (..., L, S)
    m = s.max(axis=-1, keepdims=True)
    lse = (m + np.log(np.exp(s - m).sum(axis=-1, keepdims=True)))[..., 0]  # (..., L)
    return np.exp(s - lse[..., None]) @ v, lse


def _block_grads(q, k_blk, v_blk, dout, out, lse, mode="right"):
    E = q.shape[-1]
    q, k_blk, v_blk, dout, out, lse = (
        np.asarray(a, dtype=np.float64) for a in (q, k_blk, v_blk, dout, out, lse)
    )
    scale = 1.0 if mode == "unscaled" else 1 / np.sqrt(E)
    s = q @ swap(k_blk) * scale  # (..., L, b)
    if mode == "block_softmax":  # the block's scores normalised among themselves
        P = softmax_ref(s)
    else:
        P = np.exp(s - lse[..., None])
    dP = dout @ swap(v_blk)  # (..., L, b)
    D = 0.0 if mode == "no_row_term" else (dout * out).sum(axis=-1, keepdims=True)  # (..., L, 1)
    dS = P * (dP - D)
    dk = swap(dS) @ q * (1.0 if mode == "dk_unscaled" else 1 / np.sqrt(E))
    return dk, swap(P) @ dout


def grads_case(name, rng, lead, L, S, E, Ev, start, stop, dtype=np.float64):
    """A case of 9.2: full attention's saved (out, lse) and the key block start:stop."""
    n = rng.normal
    q, k, v, dout = (
        n(size=lead + (L, E)),
        n(size=lead + (S, E)),
        n(size=lead + (S, Ev)),
        n(size=lead + (L, Ev)),
    )
    out, lse = _forward_state(q, k, v)
    c = lambda a: a.astype(dtype)  # noqa: E731
    return Case(
        name,
        q=c(q),
        k_blk=c(k[..., start:stop, :]),
        v_blk=c(v[..., start:stop, :]),
        dout=c(dout),
        out=c(out),
        lse=c(lse),
    )


def _grads_cases():
    rng = np.random.default_rng(9021)
    return (
        grouped(
            "key blocks",
            grads_case("L=3, S=8, keys 4..7 of E=4, Ev=2", rng, (), 3, 8, 4, 2, 4, 8),
            grads_case("L=4, S=6, keys 0..1 of E=3, Ev=3", rng, (), 4, 6, 3, 3, 0, 2),
        )
        + grouped("batch dims", grads_case("2 heads, L=2, S=5, keys 1..3", rng, (2,), 2, 5, 2, 2, 1, 4))
        + grouped("dtype", grads_case("float32, L=3, S=6, keys 2..5", rng, (), 3, 6, 4, 2, 2, 6, np.float32))
    )


def _grads_variant(mode):
    return lambda q, k_blk, v_blk, dout, out, lse: _block_grads(q, k_blk, v_blk, dout, out, lse, mode)


register(
    Exercise(
        id="ch09.key_block_grads",
        number="9.2",
        title="one key block's gradients from the saved statistics",
        points=3,
        function="key_block_grads",
        stub=STUB_LINE,
        hint="rebuild the block's weights from lse; the softmax's backward needs, per query, the sum over all "
        "keys of weight times its gradient, and out and dout hold that sum",
        kind="extend",
        forbids=NO_FUSED,
        description="The forward pass of this chapter never keeps the `(L, S)` weights, and neither does "
        "FlashAttention's: for `out = softmax(q k^T / sqrt(E)) v` it saves, per query, only `out` "
        "`(..., L, Ev)` and `lse (..., L)`, the log of the sum of `exp(q k_j / sqrt(E))` over all `S` "
        "keys. Its backward pass then visits the keys one block at a time. Given one block of keys and "
        "values `k_blk (..., b, E)`, `v_blk (..., b, Ev)`, the queries `q (..., L, E)`, the saved `out` "
        "and `lse`, and the gradient `dout (..., L, Ev)` of a loss with respect to `out`, return "
        "`(dk_blk, dv_blk)`: the gradients of the loss with respect to that block's keys `(..., b, E)` "
        "and values `(..., b, Ev)`. The other keys are not given.",
        solution='''
            def key_block_grads(q, k_blk, v_blk, dout, out, lse):
                """(dk_blk (..., b, E), dv_blk (..., b, Ev)) of one key block, from the saved out and lse."""
                ### BEGIN SOLUTION
                scale = 1 / np.sqrt(q.shape[-1])
                P = np.exp(q @ np.swapaxes(k_blk, -1, -2) * scale - lse[..., None])  # (..., L, b): the true weights
                dv = np.swapaxes(P, -1, -2) @ dout  # (..., b, L) @ (..., L, Ev)
                dP = dout @ np.swapaxes(v_blk, -1, -2)  # (..., L, b)
                D = (dout * out).sum(axis=-1, keepdims=True)  # (..., L, 1): sum over all keys of P * dP
                dS = P * (dP - D)  # the softmax's backward
                dk = np.swapaxes(dS, -1, -2) @ q * scale  # (..., b, L) @ (..., L, E)
                return dk, dv
                ### END SOLUTION
        ''',
        reference=_block_grads,
        public_cases=_grads_cases,
        outputs=("dk", "dv"),
        diagnoses=(
            Diagnosis(
                "the weights are normalised within the block: what do this block's keys weigh among all S keys?",
                name="weights normalised within the block",
                hint="P = exp(s - lse): lse already holds the sum over every key",
                variant=_grads_variant("block_softmax"),
            ),
            Diagnosis(
                "dv is right, dk is not: what does the softmax's backward subtract from each gradient of a weight?",
                name="softmax backward without the row term",
                hint="dS = P (dP - D) with D_i = sum_j P_ij dP_ij, which equals dout_i . out_i",
                variant=_grads_variant("no_row_term"),
            ),
            Diagnosis(
                "both gradients are off: are the scores rebuilt as the forward pass made them?",
                name="scores rebuilt unscaled",
                hint="the scores are q k^T / sqrt(E), with the same scale as when lse was saved",
                variant=_grads_variant("unscaled"),
            ),
            Diagnosis(
                "dv is right, dk is too large: how does a key enter the scores?",
                name="dk without the scale",
                hint="s = q k^T / sqrt(E): dk carries the 1 / sqrt(E) too",
                variant=_grads_variant("dk_unscaled"),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 9.3 static cache (extend)
def _static_case(name, rng, lengths, T, E, Ev, dtype=np.float64):
    n = rng.normal
    B = len(lengths)
    k_cache, v_cache = n(size=(B, T, E)), n(size=(B, T, Ev))  # slots past a length hold stale numbers
    return Case(
        name,
        q_new=n(size=(B, 1, E)).astype(dtype),
        k_new=n(size=(B, 1, E)).astype(dtype),
        v_new=n(size=(B, 1, Ev)).astype(dtype),
        k_cache=k_cache.astype(dtype),
        v_cache=v_cache.astype(dtype),
        lengths=np.array(lengths),
    )


def _static_cases():
    rng = np.random.default_rng(9031)
    return (
        grouped(
            "lengths",
            _static_case("3 sequences of 2, 5 and 0 tokens, 6 slots", rng, [2, 5, 0], 6, 3, 2),
            _static_case("2 sequences of 4 and 1 tokens, 8 slots, E=4, Ev=3", rng, [4, 1], 8, 4, 3),
        )
        + grouped("one sequence", _static_case("1 sequence of 3 tokens, 5 slots", rng, [3], 5, 2, 2))
        + grouped(
            "dtype",
            _static_case("float32, 2 sequences of 1 and 3, 4 slots", rng, [1, 3], 4, 4, 2, np.float32),
        )
    )


def _static(q_new, k_new, v_new, k_cache, v_cache, lengths, write="at length", see="through length"):
    B, T = k_cache.shape[:2]
    rows = np.arange(B)
    k_all, v_all = k_cache.astype(float), v_cache.astype(float)
    slot = {
        "at length": lengths,
        "last slot": np.full(B, T - 1),
        "before length": np.maximum(lengths - 1, 0),
    }[write]
    k_all[rows, slot], v_all[rows, slot] = k_new[:, 0], v_new[:, 0]
    if see == "through length":
        visible = np.arange(T)[None, None, :] <= lengths[:, None, None]
    elif see == "before length":
        if (lengths == 0).any():
            return None
        visible = np.arange(T)[None, None, :] < lengths[:, None, None]
    else:
        visible = None
    out = sdpa(q_new.astype(float), k_all, v_all, visible)[0]
    return out, k_all, v_all


register(
    Exercise(
        id="ch09.static_cache_step",
        number="9.3",
        title="a batch decoding step into a preallocated cache",
        points=2,
        function="static_cache_step",
        stub=STUB_LINE,
        hint="write row b's new key and value into slot lengths[b], then let row b's query see slots "
        "0..lengths[b] only",
        kind="extend",
        description="Servers batch sequences of different lengths and keep one preallocated cache of `T` "
        "slots per sequence instead of concatenating: `k_cache (B, T, E)`, `v_cache (B, T, Ev)`, where "
        "sequence `b` holds its `lengths[b]` earlier tokens in slots `0 .. lengths[b] - 1` and the slots "
        "after them hold stale numbers from earlier requests (`lengths (B,)` ints, each below `T`). Each "
        "sequence's new token arrives as `q_new`, `k_new (B, 1, E)` and `v_new (B, 1, Ev)`. Write each new "
        "key and value into its sequence's next free slot, then attend (scaled) from each new query to "
        "its own sequence's tokens, the new one included, and to nothing else. Return "
        "`(out (B, 1, Ev), k_cache, v_cache)`, the caches updated (a copy or in place). You may call "
        "numpy and `softmax`; no built-in attention.",
        solution='''
            def static_cache_step(q_new, k_new, v_new, k_cache, v_cache, lengths):
                """One decoding step into a preallocated cache: (out (B, 1, Ev), k_cache, v_cache)."""
                ### BEGIN SOLUTION
                B, T = k_cache.shape[0], k_cache.shape[1]
                rows = np.arange(B)
                k_cache, v_cache = k_cache.copy(), v_cache.copy()
                k_cache[rows, lengths] = k_new[:, 0]  # row b's new key goes into slot lengths[b]
                v_cache[rows, lengths] = v_new[:, 0]
                scores = q_new @ np.swapaxes(k_cache, -1, -2) / np.sqrt(q_new.shape[-1])  # (B, 1, T)
                visible = np.arange(T)[None, None, :] <= lengths[:, None, None]  # (B, 1, T)
                weights = softmax(np.where(visible, scores, -np.inf))
                return weights @ v_cache, k_cache, v_cache  # (B, 1, T) @ (B, T, Ev) -> (B, 1, Ev)
                ### END SOLUTION
        ''',
        reference=_static,
        public_cases=_static_cases,
        outputs=("out", "k_cache", "v_cache"),
        needs=("import numpy as np", "from attncourse import softmax"),
        forbids=NO_FUSED,
        diagnoses=(
            Diagnosis(
                "the new tokens also read the stale slots after each sequence's tokens: which slots hold "
                "this sequence's keys?",
                name="stale slots attended",
                hint="mask slot j of row b unless j <= lengths[b]",
                variant=lambda *a: _static(*a, see="all"),
            ),
            Diagnosis(
                "each new token reads its sequence's earlier tokens but not itself",
                name="the new token left out",
                hint="slot lengths[b] holds the new token: it is visible too (<=, not <)",
                variant=lambda *a: _static(*a, see="before length"),
            ),
            Diagnosis(
                "the new key landed in the cache's last slot, not in the sequence's next free one",
                name="written at the end of the buffer",
                hint="the next free slot of row b is lengths[b]",
                variant=lambda *a: _static(*a, write="last slot"),
            ),
            Diagnosis(
                "the new key overwrote the sequence's latest cached token",
                name="overwrote the last token",
                hint="slots 0..lengths[b]-1 are taken: write into slot lengths[b]",
                variant=lambda *a: _static(*a, write="before length"),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 9.4 tile in on-chip memory (predict)
def _largest_tile(budget=228 * 1024, d=128, blocks=3, score_bytes=4, step=16):
    b = step
    while blocks * b * d * 2 + b * b * score_bytes <= budget:
        b += step
    return np.array(b - step)


register(
    Exercise(
        id="ch09.predict_tile_size",
        number="9.4",
        title="the largest tile that fits on chip",
        points=1,
        function="predict_tile_size",
        stub=STUB_LINE,
        kind="predict",
        description="A FlashAttention kernel keeps a whole tile in one GPU core's on-chip memory, 228 KiB "
        "(233,472 bytes) on an H100: a block of `b` queries, a block of `b` keys and a block of `b` values, "
        "each `b x 128` numbers in float16 (2 bytes), and the `b x b` tile of scores in float32 (4 bytes). "
        "The block size must be a multiple of 16. What is the largest `b` that fits? Return it (exact).",
        solution='''
            def predict_tile_size():
                """Largest multiple of 16 with 3 blocks of b x 128 float16 and b x b float32 in 233,472 bytes."""
                ### BEGIN SOLUTION
                # 3 * b * 128 * 2 + 4 * b^2 <= 233472  ->  b^2 + 192 b - 58368 <= 0  ->  b <= 163.9
                return 160
                ### END SOLUTION
        ''',
        reference=lambda: _largest_tile(),
        public_cases=lambda: grouped(
            "prediction", Case("228 KiB, d_head = 128, float16 blocks, float32 scores")
        ),
        tolerance=(0.0, 0.0),
        hint="count the bytes of the three blocks (linear in b) and of the score tile (quadratic in b), "
        "then solve the quadratic and round down to a multiple of 16",
        diagnoses=(
            Diagnosis(
                "a tile of that size does not fit in 228 KiB: add up its bytes at that block size",
                name="a tile that does not fit",
                hint="queries, keys and values (3 * b * 128 * 2 bytes) and the scores (4 * b * b bytes) must "
                "fit together; round the largest b that fits down to a multiple of 16",
                variant=lambda: _largest_tile(blocks=2),
            ),
            Diagnosis(
                "that tile of scores is counted in float16; the prompt keeps the scores in float32",
                name="scores counted in float16",
                hint="the b x b scores take 4 bytes each",
                variant=lambda: _largest_tile(score_bytes=2),
            ),
            Diagnosis(
                "a power of two that fits, but the block size only has to be a multiple of 16",
                name="a power of two",
                hint="try multiples of 16 above 128",
                variant=lambda: np.array(128),
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
        stub=STUB_LINE,
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
                "the tiles on the diagonal are left out: do all their keys come after all their queries?",
                name="diagonal tiles skipped",
                hint="a diagonal tile holds each query's own key: it is computed (masked inside)",
                variant=lambda: np.array(16 * 15 // 2),
            ),
            Diagnosis(
                "that counts part of each diagonal tile: is a tile ever computed in part?",
                name="half of each diagonal tile",
                hint="a tile is computed whole or skipped whole",
                variant=lambda: np.array(16 * 16 // 2),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 9.6 running max (diagnose)
def _far_case(name, rng, shape, Ev, offsets, block_size, dtype=np.float64):
    """Scores (..., L, S) whose rows sit at the given offsets (a bias such as ALiBi's on far keys).
    The noise is on a grid of 1/128, so that scores up to 32768 away from zero are exact in float32
    and an answer computed in float32 loses nothing in s - m."""
    noise = np.round(rng.normal(size=shape) * 128) / 128
    scores = noise + np.asarray(offsets, dtype=float)[..., :, None]
    values = rng.normal(size=shape[:-2] + (shape[-1], Ev))
    return Case(name, scores=scores.astype(dtype), values=values.astype(dtype), block_size=block_size)


def wide_case(name, rng, L, S, Ev, block_size, jump, dtype=np.float64):
    """Scores (L, S): row 0 near 0 but for its last key, `jump` above the rest; the other rows near
    -1000 (far below zero)."""
    scores = rng.normal(size=(L, S))
    scores[0, -1] += jump
    scores[1:] -= 1000.0
    values = rng.normal(size=(S, Ev))
    return Case(name, scores=scores.astype(dtype), values=values.astype(dtype), block_size=block_size)


def _far_cases():
    rng = np.random.default_rng(9061)
    return (
        grouped(
            "far rows",
            _far_case("L=3, S=7, blocks of 3: rows at 0, -800 and +5", rng, (3, 7), 2, [0.0, -800.0, 5.0], 3),
            _far_case("L=2, S=5, blocks of 2: rows at -1200 and -3", rng, (2, 5), 3, [-1200.0, -3.0], 2),
            _far_case("L=2, S=6, blocks of 4: rows at -20000 and 0", rng, (2, 6), 2, [-20000.0, 0.0], 4),
            wide_case(
                "L=2, S=8, blocks of 3: row 0 has one key 1500 above the others, row 1 at -1000",
                rng,
                2,
                8,
                2,
                3,
                1500.0,
            ),
        )
        + grouped(
            "batch dims",
            _far_case(
                "a batch of 2, L=2, S=4, blocks of 3", rng, (2, 2, 4), 2, [[-900.0, 1.0], [0.0, -760.0]], 3
            ),
        )
        + grouped(
            "dtype",
            _far_case(
                "float32, L=4, S=6, blocks of 4: rows at -120, 0, -900, -2",
                rng,
                (4, 6),
                2,
                [-120.0, 0.0, -900.0, -2.0],
                4,
                np.float32,
            ),
        )
    )


def _rows_lost(outputs, scores, values, block_size, which):
    """True when some rows come out NaN or inf, and only rows of the kind `which` names: "far" (every
    score far below zero) or "wide" (scores spread over more than exp can span)."""
    out = np.asarray(outputs[0], dtype=float)
    if out.shape[:-1] != scores.shape[:-1]:
        return False
    lost = ~np.isfinite(out).all(axis=-1)
    s = np.asarray(scores, dtype=float)
    kind = (
        s.max(axis=-1) < -50
        if which == "far"
        else (s.max(axis=-1) - s.min(axis=-1) > 600) & (s.max(axis=-1) > -50)
    )
    return bool(lost.any() and not (lost & ~kind).any())


def _far_rows_lost(outputs, scores, values, block_size):
    return _rows_lost(outputs, scores, values, block_size, "far")


def _wide_rows_lost(outputs, scores, values, block_size):
    return _rows_lost(outputs, scores, values, block_size, "wide")


register(
    Exercise(
        id="ch09.online_attention",
        former_ids=("ch09.fix_running_max",),
        number="9.6",
        title="online attention over precomputed scores",
        points=2,
        function="online_attention",
        hint="follow one row through the loop from its first block: what is each exponent measured from?",
        kind="diagnose",
        forbids=NO_FUSED,
        description="`online_attention(scores, values, block_size)` applies the online softmax of this "
        "chapter to precomputed `scores (..., L, S)` and returns `softmax(scores) @ values`, "
        "`(..., L, Ev)`, one block of `block_size` keys at a time. Scores may be any finite numbers. "
        "On most inputs it matches the full softmax "
        "to the last digit, but not on all. Find the bug and fix it; numpy only.",
        solution='''
            def online_attention(scores, values, block_size):
                """softmax(scores) @ values, one block of keys at a time: (..., L, Ev)."""
                dtype = np.result_type(scores, values)
                ### BEGIN SOLUTION
                m = np.full(scores.shape[:-1], -np.inf, dtype=dtype)
                ### END SOLUTION
                l = np.zeros(scores.shape[:-1], dtype=dtype)
                acc = np.zeros(scores.shape[:-1] + (values.shape[-1],), dtype=dtype)
                for j in range(0, scores.shape[-1], block_size):
                    s = scores[..., j : j + block_size]  # (..., L, b)
                    m_new = np.maximum(m, s.max(axis=-1))
                    p = np.exp(s - m_new[..., None])
                    rescale = np.exp(m - m_new)
                    l = l * rescale + p.sum(axis=-1)
                    acc = acc * rescale[..., None] + p @ values[..., j : j + block_size, :]  # (..., L, Ev)
                    m = m_new
                return acc / l[..., None]
        ''',
        stub="m = np.zeros(scores.shape[:-1], dtype=dtype)",
        reference=lambda scores, values, block_size: softmax_ref(scores) @ values,
        public_cases=_far_cases,
        diagnoses=(
            Diagnosis(
                "the rows whose scores all lie far below zero come out NaN: what is the running maximum before "
                "any key has been seen?",
                name="running maximum starts above the scores",
                hint="start m at -inf (no score seen yet), as the chapter's loop does",
                symptom=_far_rows_lost,
            ),
            Diagnosis(
                "a row with one score far above the others comes out NaN or inf: is every exponent "
                "measured from a number at least as large as the scores seen so far?",
                name="exponents not measured from the maximum",
                hint="keep the running maximum: m = max(m, block max), and rescale by exp(m_old - m_new)",
                symptom=_wide_rows_lost,
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
        stub=STUB_LINE,
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
