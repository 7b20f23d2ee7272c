"""Chapter 9 exercises: online-softmax merges, a key block's gradients from the saved statistics, a
batched KV cache, keys taken back out of a finished pass, a RoPE head decoded with a cache, causal tiles
for a chunk of new tokens."""

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


# ----------------------------------------------------------------------------- 9.4 keys taken back out (extend)
def _remove_keys(q, k_rm, v_rm, out, lse, mode="right"):
    """(out, lse) over the keys that remain once the block k_rm, v_rm is taken out."""
    q, k_rm, v_rm, out, lse = (np.asarray(a, dtype=np.float64) for a in (q, k_rm, v_rm, out, lse))
    scale = 1.0 if mode == "unscaled" else 1 / np.sqrt(q.shape[-1])
    w = np.exp(q @ swap(k_rm) * scale - lse[..., None])  # (..., L, r): the removed keys' weights
    gone = w.sum(axis=-1)  # (..., L): their share of each row
    rest = out - w @ v_rm  # (..., L, Ev): the other keys' weighted values, still over the old sum
    if mode == "not_renormalised":
        return rest, np.log1p(-gone) + lse
    if mode == "lse_kept":
        return rest / (1 - gone)[..., None], lse
    return rest / (1 - gone)[..., None], lse + np.log1p(-gone)


def remove_case(name, rng, lead, L, S, E, Ev, removed, offset=0.0, dtype=np.float64):
    """A case of 9.4: full attention's saved (out, lse) over S keys and the keys `removed` taken out.
    With an `offset`, every key's last feature is 1 and every query's last feature lifts all its
    scores by about `offset` (scores in the hundreds: e^score overflows past 709). The draw is
    repeated until the removed keys carry at most 0.9 of any row's weight, as the prompt promises."""
    n = rng.normal
    for _ in range(100):
        q, k, v = n(size=lead + (L, E)), n(size=lead + (S, E)), n(size=lead + (S, Ev))
        if offset:
            k[..., -1] = 1.0
            q[..., -1] = (offset + 10 * np.arange(L)) * np.sqrt(E)  # rows at offset, offset + 10, ...
        w = softmax_ref(q @ swap(k) / np.sqrt(E))[..., removed].sum(axis=-1)
        if w.max() <= 0.9:
            break
    else:  # pragma: no cover - a case the generator could not draw
        raise RuntimeError(name)
    out, lse = _forward_state(q, k, v)
    c = lambda a: a.astype(dtype)  # noqa: E731
    return Case(name, q=c(q), k_rm=c(k[..., removed, :]), v_rm=c(v[..., removed, :]), out=c(out), lse=c(lse))


def _remove_cases():
    rng = np.random.default_rng(9041)
    return (
        grouped(
            "keys taken out",
            remove_case("L=3, S=6, key 2 taken out, E=4, Ev=2", rng, (), 3, 6, 4, 2, [2]),
            remove_case("L=4, S=8, keys 0, 5 and 7 taken out, E=3, Ev=3", rng, (), 4, 8, 3, 3, [0, 5, 7]),
        )
        + grouped(
            "large scores",
            remove_case("L=3, S=5, key 4 taken out, scores near 750", rng, (), 3, 5, 8, 2, [4], 750.0),
        )
        + grouped("batch dims", remove_case("2 heads, L=2, S=5, keys 1 and 3", rng, (2,), 2, 5, 2, 2, [1, 3]))
        + grouped(
            "dtype",
            remove_case("float32, L=3, S=7, keys 0 and 6", rng, (), 3, 7, 4, 2, [0, 6], 1.0, np.float32),
        )
    )


def _remove_variant(mode):
    return lambda q, k_rm, v_rm, out, lse: _remove_keys(q, k_rm, v_rm, out, lse, mode)


register(
    Exercise(
        id="ch09.remove_keys",
        number="9.4",
        title="take keys back out of a finished attention output",
        points=2,
        function="remove_keys",
        stub=STUB_LINE,
        hint="each removed key's weight in the finished pass can be rebuilt from q, the key and lse; the keys "
        "that remain shared the rest of each row, and their output must be normalised over that rest",
        kind="extend",
        forbids=NO_FUSED,
        description="A forward pass like this chapter's attended from `q (..., L, E)` to `S` keys and saved "
        "only `out (..., L, Ev)` $= \\operatorname{softmax}(q k^\\top / \\sqrt{E})\\, v$ and "
        "`lse (..., L)`, the log of the sum of $e^{q \\cdot k_j / \\sqrt{E}}$ over all `S` keys. Afterwards "
        "`r` of those keys turn out to be ones the queries must not see. Given `q`, `out`, `lse` and the "
        "keys and values to take out, `k_rm (..., r, E)` and `v_rm (..., r, Ev)`, return `(out, lse)` as "
        "the same pass over the other `S - r` keys would have saved them. The other keys are not given. "
        "Scores may be in the hundreds; the keys taken out never hold more than 0.9 of a row's weight.",
        solution='''
            def remove_keys(q, k_rm, v_rm, out, lse):
                """(out, lse) over the keys that remain once k_rm, v_rm are taken out of the pass."""
                ### BEGIN SOLUTION
                scale = 1 / np.sqrt(q.shape[-1])
                s = q @ np.swapaxes(k_rm, -1, -2) * scale  # (..., L, E) @ (..., E, r) -> (..., L, r)
                w = np.exp(s - lse[..., None])  # the removed keys' weights in the finished pass
                gone = w.sum(axis=-1)  # (..., L): the share of each row they held
                rest = out - w @ v_rm  # (..., L, Ev): what the other keys contributed
                return rest / (1 - gone)[..., None], lse + np.log1p(-gone)
                ### END SOLUTION
        ''',
        reference=_remove_keys,
        public_cases=_remove_cases,
        outputs=("out", "lse"),
        # scores near 750 carry float32's rounding (about 5e-5) into e^(s - lse): a stated tolerance
        # that a float32 answer meets there and every registered mistake misses by far
        tolerance=(1e-6, 5e-4),
        diagnoses=(
            Diagnosis(
                "the removed keys' share is subtracted, but the keys that remain still carry weights that "
                "sum to less than 1: what must each row of weights sum to?",
                name="remaining weights not renormalised",
                hint="divide what is left of out by the share of the row that remains, 1 - (the removed weights)",
                variant=_remove_variant("not_renormalised"),
            ),
            Diagnosis(
                "out is right, lse is the old one: which sum does lse hold now?",
                name="lse left as it was",
                hint="the sum over the remaining keys is the old sum times the share that remains",
                variant=_remove_variant("lse_kept"),
            ),
            Diagnosis(
                "both outputs are off: are the removed keys' scores rebuilt as the forward pass made them?",
                name="scores rebuilt unscaled",
                hint="the scores are q k^T / sqrt(E), with the scale lse was saved with",
                variant=_remove_variant("unscaled"),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 9.5 decoding a RoPE head (diagnose)
def _rope_decode(x, W_q, W_k, W_v, mode="right"):
    """Outputs (T, E) of one half-split RoPE head over x (T, d_model), causal, from the full pass."""
    from ... import apply_rope

    x, W_q, W_k, W_v = (np.asarray(a, dtype=np.float64) for a in (x, W_q, W_k, W_v))
    q, k, v = x @ W_q, x @ W_k, x @ W_v  # (T, E) each
    T = x.shape[0]
    positions = np.arange(T)
    if mode == "cache_rotated_again":  # key j rotated by its position once at every step from j on
        outs = []
        k_cache = np.zeros((0, k.shape[1]))
        for t in range(T):
            k_cache = apply_rope(np.concatenate([k_cache, k[t : t + 1]]))
            q_t = apply_rope(q[t : t + 1], np.array([t]))
            outs.append(softmax_ref(q_t @ k_cache.T / np.sqrt(q.shape[1])) @ v[: t + 1])
        return np.concatenate(outs)
    q_pos = np.zeros(T, dtype=int) if mode == "q_at_0" else positions
    k_pos = np.zeros(T, dtype=int) if mode == "k_at_0" else positions
    k_pos = positions + 1 if mode == "k_one_ahead" else k_pos
    qr, kr = apply_rope(q, q_pos), apply_rope(k, k_pos)
    return sdpa(qr, kr, v, is_causal=True)[0]


def rope_case(name, rng, T, d_model, E, Ev, scale=1.0, dtype=np.float64):
    """A case of 9.5: token embeddings x (T, d_model) and the head's projections; `scale` sharpens the
    scores (queries and keys grow with it)."""
    n = rng.normal
    return Case(
        name,
        x=n(size=(T, d_model)).astype(dtype),
        W_q=(scale * n(size=(d_model, E)) / np.sqrt(d_model)).astype(dtype),
        W_k=(scale * n(size=(d_model, E)) / np.sqrt(d_model)).astype(dtype),
        W_v=(n(size=(d_model, Ev)) / np.sqrt(d_model)).astype(dtype),
    )


def _rope_cases():
    rng = np.random.default_rng(9051)
    return grouped(
        "decoding",
        rope_case("T=6 tokens, d_model=8, E=4, Ev=3", rng, 6, 8, 4, 3, 2.0),
        rope_case("T=9 tokens, d_model=6, E=6, Ev=2", rng, 9, 6, 6, 2, 3.0),
        rope_case("T=3 tokens, d_model=4, E=2, Ev=2", rng, 3, 4, 2, 2, 2.0),
    ) + grouped("dtype", rope_case("float32, T=5, d_model=8, E=8, Ev=4", rng, 5, 8, 8, 4, 2.0, np.float32))


_ROPE_SOLUTION = '''
    def rope_decode(x, W_q, W_k, W_v):
        """Outputs (T, Ev) of one RoPE attention head, decoded one token at a time with a KV cache."""
        E = W_q.shape[1]
        k_cache = np.zeros((0, E))  # (t, E): the keys of the tokens decoded so far
        v_cache = np.zeros((0, W_v.shape[1]))  # (t, Ev)
        outs = []
        for t in range(x.shape[0]):
            x_t = x[t : t + 1]  # (1, d_model): only the newest token is projected
            q_t, k_t, v_t = x_t @ W_q, x_t @ W_k, x_t @ W_v  # (1, E), (1, E), (1, Ev)
            ### BEGIN SOLUTION
            k_t = apply_rope(k_t, np.array([t]))  # turned once, at its own position, then cached
            k_cache = np.concatenate([k_cache, k_t])  # (t + 1, E)
            v_cache = np.concatenate([v_cache, v_t])  # (t + 1, Ev)
            ### END SOLUTION
            q_t = apply_rope(q_t, np.array([t]))  # (1, E)
            scores = q_t @ k_cache.T / np.sqrt(E)  # (1, E) @ (E, t + 1) -> (1, t + 1)
            outs.append(softmax(scores) @ v_cache)  # (1, t + 1) @ (t + 1, Ev) -> (1, Ev)
        return np.concatenate(outs)  # T x (1, Ev) -> (T, Ev)
'''

_ROPE_STUB = (
    "k_cache = np.concatenate([k_cache, k_t])  # (t + 1, E)\n"
    "v_cache = np.concatenate([v_cache, v_t])  # (t + 1, Ev)\n"
    "k_cache = apply_rope(k_cache)"
)


register(
    Exercise(
        id="ch09.rope_decode",
        number="9.5",
        title="decoding a RoPE head with a KV cache",
        points=2,
        function="rope_decode",
        hint="follow one cached key through two decoding steps: by which angle is it turned at each?",
        kind="diagnose",
        forbids=NO_FUSED,
        needs=("import numpy as np", "from attncourse import apply_rope, softmax"),
        description="`rope_decode(x, W_q, W_k, W_v)` runs one attention head with rotary positions "
        "(chapter 7's half-split RoPE, `apply_rope`, scaled scores) over the token embeddings "
        "`x (T, d_model)` the way a decoder generates: one token at a time, each step projecting only "
        "the newest token and attending from it to the cached keys and values of every token so far. "
        "It must return `(T, Ev)`: the same outputs as causal attention with that RoPE "
        "over all `T` tokens at once. It does not. Find the bug and fix it, "
        "keeping the cache (each step projects one token).",
        solution=_ROPE_SOLUTION,
        stub=_ROPE_STUB,
        reference=_rope_decode,
        public_cases=_rope_cases,
        diagnoses=(
            Diagnosis(
                "the first two outputs are right and every later one is off: a cached key is turned again at "
                "every step, so by step t key j has been turned by its angle t - j + 1 times",
                name="cached keys rotated again at every step",
                hint="rotate each key once, at its own position, before it goes into the cache; never rotate "
                "the cache",
                variant=lambda *a: _rope_decode(*a, mode="cache_rotated_again"),
            ),
            Diagnosis(
                "the new keys are cached without their rotation: the scores then depend on the query's "
                "position alone",
                name="keys cached unrotated",
                hint="k_t is rotated at position t before it is cached",
                variant=lambda *a: _rope_decode(*a, mode="k_at_0"),
            ),
            Diagnosis(
                "the keys are rotated one position ahead of their tokens",
                name="keys rotated one position ahead",
                hint="token t's key is rotated at position t (counted from 0), like its query",
                variant=lambda *a: _rope_decode(*a, mode="k_one_ahead"),
            ),
            Diagnosis(
                "the queries are not rotated at their positions",
                name="queries rotated at position 0",
                hint="the new query is rotated at position t",
                variant=lambda *a: _rope_decode(*a, mode="q_at_0"),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 9.6 causal tiles after a cache (extend)
def _tiled_case(name, rng, lead, L, S, E, Ev, block_size, dtype=np.float64):
    n = rng.normal
    return Case(
        name,
        q=n(size=lead + (L, E)).astype(dtype),
        k=n(size=lead + (S, E)).astype(dtype),
        v=n(size=lead + (S, Ev)).astype(dtype),
        block_size=block_size,
    )


def _causal_tiled_cases():
    rng = np.random.default_rng(907)
    return (
        grouped(
            "tiles",
            _tiled_case("L=S=8, blocks of 4", rng, (), 8, 8, 3, 2, 4),
            _tiled_case("L=S=7, blocks of 3 (ragged)", rng, (), 7, 7, 2, 3, 3),
            _tiled_case("L=8 new of S=10, blocks of 3", rng, (), 8, 10, 3, 2, 3),
            _tiled_case("L=6 new of S=8, blocks of 2", rng, (), 6, 8, 2, 2, 2),
            _tiled_case("L=1 new of S=9, blocks of 4 (one decoding step)", rng, (), 1, 9, 2, 3, 4),
            _tiled_case(
                "L=256 new of S=512, blocks of 32 (the method: tiles, not the whole score matrix)",
                rng,
                (),
                256,
                512,
                4,
                2,
                32,
            ),
        )
        + grouped(
            "batch dims",
            _tiled_case("a batch of 2, L=S=5, blocks of 2", rng, (2,), 5, 5, 3, 2, 2),
            _tiled_case("batch (2, 2), L=4 new of S=7, blocks of 3", rng, (2, 2), 4, 7, 2, 2, 3),
        )
        + grouped(
            "dtype", _tiled_case("float32, L=5 new of S=9, blocks of 2", rng, (), 5, 9, 4, 2, 2, np.float32)
        )
    )


def _n_blocks(n, block_size):
    return -(-n // block_size)  # ceil(n / block_size)


def _causal_tiled(q, k, v, block_size, align="bottom right", skip=True, mask=True):
    from ... import causal_mask

    L, S = q.shape[-2], k.shape[-2]
    offset = S - L if align == "bottom right" else 0  # query i sits at position offset + i
    visible = causal_mask(S)[S - L :] if align == "bottom right" else causal_mask(L, S)
    out = sdpa(q, k, v, visible if mask else None)[0]
    tiles = 0
    for i0 in range(0, L, block_size):
        last = offset + min(i0 + block_size, L) - 1  # the block's last query's position
        tiles += min(last // block_size + 1, _n_blocks(S, block_size)) if skip else _n_blocks(S, block_size)
    return out, np.array(tiles)


register(
    Exercise(
        id="ch09.causal_tiled_attention",
        number="9.6",
        title="causal tiles for a chunk of new tokens",
        points=4,
        function="causal_tiled_attention",
        stub=STUB_LINE,
        hint="place each block of queries at its positions among the S keys: which key blocks hold a key at "
        "or before its last query, and which of them also hold keys after some of its queries?",
        kind="extend",
        description="Causal attention for a chunk of new tokens after a cache: `k (..., S, E)`, "
        "`v (..., S, Ev)` hold all `S` tokens, the cached ones first, and `q (..., L, E)` ($L \\le S$) the "
        "last `L` of them, so query `i` is token `S - L + i` and sees keys `0 .. S - L + i` (scaled "
        "scores). Compute it tiled both ways: blocks of `block_size` queries counted from query 0 "
        "against blocks of `block_size` keys counted from key 0 (the last block of each may be shorter), "
        "never computing the scores of a tile in which no query may see any key. Return "
        "`(out (..., L, Ev), n_tiles)`, where `n_tiles` counts the (query block, key block) tiles whose "
        "scores you computed.",
        solution='''
            def causal_tiled_attention(q, k, v, block_size):
                """Causal tiled attention for the last L of S tokens: (out (..., L, Ev), tiles computed)."""
                ### BEGIN SOLUTION
                L, S, E = q.shape[-2], k.shape[-2], q.shape[-1]
                offset = S - L  # query i is token offset + i
                out = np.zeros(q.shape[:-1] + (v.shape[-1],))
                n_tiles = 0
                for i0 in range(0, L, block_size):  # one block of queries at a time
                    i1 = min(i0 + block_size, L)
                    rows = offset + np.arange(i0, i1)  # the block's positions among the S tokens
                    q_blk = q[..., i0:i1, :]
                    m = np.full(q_blk.shape[:-1], -np.inf)  # (..., b) running max, sum and output
                    l = np.zeros(q_blk.shape[:-1])
                    acc = np.zeros(q_blk.shape[:-1] + (v.shape[-1],))
                    for j0 in range(0, rows[-1] + 1, block_size):  # key blocks after the last query: skipped
                        j1 = min(j0 + block_size, S)
                        n_tiles += 1
                        s = q_blk @ np.swapaxes(k[..., j0:j1, :], -1, -2) / np.sqrt(E)  # (..., b, E) @ (..., E, b') -> (..., b, b')
                        allowed = np.arange(j0, j1)[None, :] <= rows[:, None]  # (b, b') causal, at the tokens' positions
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
                "you computed every tile: are there tiles in which no query may see any key?",
                name="every tile computed",
                hint="a key block that starts after the block's last query holds nothing any of its queries "
                "may see: skip it",
                variant=lambda q, k, v, b: _causal_tiled(q, k, v, b, skip=False),
            ),
            Diagnosis(
                "the new queries see the keys as if they were the first L tokens: where do they sit among "
                "the S?",
                name="causal mask aligned top-left",
                hint="query i is token S - L + i: it sees keys 0 .. S - L + i (the bottom-right alignment)",
                variant=lambda q, k, v, b: _causal_tiled(q, k, v, b, align="top left"),
            ),
            Diagnosis(
                "a query sees keys after its own token in the tiles it shares with them",
                name="no mask inside the tiles",
                hint="in a tile that holds keys after some of its queries, mask those pairs",
                variant=lambda q, k, v, b: _causal_tiled(q, k, v, b, mask=False),
            ),
        ),
    )
)
