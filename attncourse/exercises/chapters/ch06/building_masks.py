"""Chapter 6 exercises 6.1-6.5: building masks (True = may attend) - causal, packed documents, a masked
log-sum-exp with fully masked rows, a decode step against a rolling cache, an additive mask read back as a boolean one."""

from __future__ import annotations

import numpy as np

from .... import causal_mask
from .... import scaled_dot_product_attention as sdpa
from ...engine.registry import Case, Diagnosis, Exercise, grouped, register
from .._shared import (
    INVERTED_MASK,
    NAN_FULLY_MASKED,
    inverted_mask,
)

__all__: list = []

NEEDS = ("import numpy as np", "from attncourse import softmax")


# ----------------------------------------------------------------------------- 6.1 causal mask
def _causal_cases():
    return grouped(
        "masks",
        Case("L=S=4", L=4, S=4),
        Case("L=3 queries, S=5 keys", L=3, S=5),
        Case("L=4 queries, S=2 keys", L=4, S=2),
    )


register(
    Exercise(
        id="ch06.make_causal_mask",
        number="6.1",
        title="a causal mask",
        points=1,
        hint="query i may see keys 0..i: the lower triangle",
        function="make_causal_mask",
        description="A boolean `(L, S)` mask, True where query `i` may attend to key `j`: on and below "
        "the diagonal, aligned top-left (query `i` sees keys `0..i`, like torch's `is_causal=True`).",
        solution='''
            def make_causal_mask(L, S):
                """Boolean (L, S), True = may attend: query i sees keys 0..i (top-left aligned)."""
                ### BEGIN SOLUTION
                return np.tril(np.ones((L, S), dtype=bool))  # True on and below the diagonal
                ### END SOLUTION
        ''',
        reference=lambda L, S: causal_mask(L, S),
        public_cases=_causal_cases,
        diagnoses=(
            Diagnosis(INVERTED_MASK, variant=lambda L, S: ~causal_mask(L, S)),
            Diagnosis(
                "the diagonal must be True: a token may attend to itself",
                variant=lambda L, S: np.tril(np.ones((L, S), dtype=bool), k=-1),
            ),
            Diagnosis(
                "you aligned the diagonal bottom-right; this course (like torch's is_causal) aligns it "
                "top-left: query i sees keys 0..i",
                variant=lambda L, S: np.tril(np.ones((L, S), dtype=bool), k=S - L) if S != L else None,
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 6.2 packed documents
def _packed(doc_ids, causal=True, documents=True):
    d = np.asarray(doc_ids)
    L = d.shape[-1]
    same = d[..., :, None] == d[..., None, :] if documents else np.ones(d.shape + (L,), dtype=bool)
    return same & np.tril(np.ones((L, L), dtype=bool)) if causal else same


def _packed_cases():
    return grouped(
        "masks",
        Case("one row, documents of 2 and 3 tokens", doc_ids=np.array([[0, 0, 1, 1, 1]])),
        Case(
            "two rows, L=4: documents of 1, 2, 1 tokens; one document",
            doc_ids=np.array([[0, 1, 1, 2], [0, 0, 0, 0]]),
        ),
        Case("ids that are not 0, 1, 2: [7, 7, 3, 3, 3, 9]", doc_ids=np.array([[7, 7, 3, 3, 3, 9]])),
    )


register(
    Exercise(
        id="ch06.packed_causal_mask",
        number="6.2",
        title="a causal mask for packed documents",
        points=2,
        hint="two conditions on every (query, key) pair; which two, and how do they combine?",
        function="packed_causal_mask",
        description="To waste no compute on padding, pretraining *packs* several documents into one row: "
        "row `b` of `doc_ids (B, L)` gives the document each position belongs to (each document is one "
        "run of equal ids; the ids are arbitrary integers, and a row never reuses one: once a document's run ends, its id does not come back later in that row). A token must see the earlier tokens of its "
        "own document and nothing of any other document. Return the boolean `(B, L, L)` mask, "
        "True = may attend.",
        solution='''
            def packed_causal_mask(doc_ids):
                """Boolean (B, L, L), True = may attend: causal, and only within the query's own document."""
                ### BEGIN SOLUTION
                doc_ids = np.asarray(doc_ids)
                L = doc_ids.shape[-1]
                same_doc = doc_ids[:, :, None] == doc_ids[:, None, :]  # (B, L, 1) == (B, 1, L) -> (B, L, L)
                causal = np.tril(np.ones((L, L), dtype=bool))  # (L, L): key j <= query i
                return same_doc & causal  # both must hold
                ### END SOLUTION
        ''',
        reference=_packed,
        public_cases=_packed_cases,
        diagnoses=(
            Diagnosis(INVERTED_MASK, variant=lambda d: ~_packed(d)),
            Diagnosis(
                "a token sees the earlier documents of its row: packed documents must not see each other",
                name="documents leak",
                hint="compare the document of the query with that of the key",
                variant=lambda d: (
                    _packed(d, documents=False) if len(set(np.asarray(d).ravel().tolist())) > 1 else None
                ),
            ),
            Diagnosis(
                "a token sees the later tokens of its own document: within a document the mask is still causal",
                name="not causal within a document",
                hint="keep only keys j <= i",
                variant=lambda d: _packed(d, causal=False),
            ),
            Diagnosis(
                "your mask allows a key when either condition holds; a key must be both earlier and in "
                "the same document",
                name="or instead of and",
                hint="& rather than |",
                variant=lambda d: _packed(d, documents=False) | _packed(d, causal=False),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 6.3 masked log-sum-exp
def _lse(scores, mask, empty="-inf", shift="visible", fill=None):
    scores = np.asarray(scores, dtype=np.float64)
    mask = np.broadcast_to(np.asarray(mask, dtype=bool), scores.shape)
    if fill is not None:  # a finite stand-in for -inf
        s = np.where(mask, scores, fill)
        top = s.max(axis=-1, keepdims=True)
        return (top + np.log(np.exp(s - top).sum(axis=-1, keepdims=True)))[..., 0]
    if shift == "all":  # the shift taken over every score, the masked ones too
        top = scores.max(axis=-1, keepdims=True)
        with np.errstate(divide="ignore"):
            return (top + np.log((np.exp(scores - top) * mask).sum(axis=-1, keepdims=True)))[..., 0]
    if shift == "none":  # no shift at all
        with np.errstate(over="ignore", divide="ignore"):
            return np.log((np.exp(scores) * mask).sum(axis=-1))
    s = np.where(mask, scores, -np.inf)
    top = s.max(axis=-1, keepdims=True)
    safe = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(divide="ignore"):
        out = (safe + np.log(np.exp(s - safe).sum(axis=-1, keepdims=True)))[..., 0]
    if empty == "zero":
        return np.where(mask.any(axis=-1), out, 0.0)
    if empty == "nan":
        return np.where(mask.any(axis=-1), out, np.nan)
    return out


def _lse_cases():
    rng = np.random.default_rng(603)
    return (
        grouped(
            "values",
            Case("causal (3, 3)", scores=rng.normal(size=(3, 3)), mask=np.tril(np.ones((3, 3), dtype=bool))),
            Case(
                "scores in the thousands, a (2, 4) mask",
                scores=rng.normal(size=(2, 4)) * 1000,
                mask=np.array([[1, 0, 1, 1], [0, 1, 1, 0]], dtype=bool),
            ),
            Case(
                "a masked score far above the visible ones",
                scores=np.array([[2000.0, 1.0, -1.0], [0.5, 3000.0, 0.0]]),
                mask=np.array([[0, 1, 1], [1, 0, 1]], dtype=bool),
            ),
        )
        + grouped(
            "fully masked rows",
            Case(
                "padding, with a fully masked row",
                scores=rng.normal(size=(3, 4)),
                mask=np.array(
                    [[True, True, False, False], [False, False, False, False], [True, True, True, True]]
                ),
            ),
        )
        + grouped(
            "batch dimensions",
            Case(
                "a (2, 3) mask broadcast over a batch (2, 2, 2, 3)",
                scores=rng.normal(size=(2, 2, 2, 3)),
                mask=np.tril(np.ones((2, 3), dtype=bool)),
            ),
        )
    )


register(
    Exercise(
        id="ch06.masked_logsumexp",
        number="6.3",
        title="the log-sum-exp of the visible keys",
        points=3,
        hint="what is the sum of no terms, and its log? And which maximum keeps exp from overflowing or vanishing?",
        function="masked_logsumexp",
        description="Attention kernels and losses keep $\\log \\sum_j e^{s_j}$ of each row, its "
        "log-sum-exp, instead of the weights. Return it over the last axis of `scores`, counting only "
        "the keys where `mask` is True (`mask` broadcasts against `scores`): shape `scores.shape[:-1]`. "
        "`scores` may hold any finite floats, and `mask` any pattern of True and False.",
        solution='''
            def masked_logsumexp(scores, mask):
                """log sum_j exp(scores[..., j]) over the keys where mask is True: shape scores.shape[:-1]."""
                ### BEGIN SOLUTION
                s = np.where(mask, scores, -np.inf)  # a masked key adds exp(-inf) = 0 to the sum
                top = s.max(axis=-1, keepdims=True)  # the largest *visible* score
                top = np.where(np.isfinite(top), top, 0.0)  # a row with nothing visible: no -inf - (-inf)
                total = np.exp(s - top).sum(axis=-1)  # every term <= 1, at least one = 1 if any is visible
                with np.errstate(divide="ignore"):
                    return top[..., 0] + np.log(total)  # log 0 = -inf for a row with no visible key
                ### END SOLUTION
        ''',
        reference=_lse,
        public_cases=_lse_cases,
        diagnoses=(
            inverted_mask(_lse, 1),
            Diagnosis(
                "a row with no visible key came out as 0: the sum of no terms is 0, and its log is -inf "
                "(0 is the log of 1, a row with one key of score 0)",
                name="empty row gives 0",
                hint="what is log(0)?",
                variant=lambda s, m: _lse(s, m, empty="zero"),
            ),
            Diagnosis(
                NAN_FULLY_MASKED,
                name="NaN for an empty row",
                hint="subtract a finite maximum in a row with nothing visible",
                variant=lambda s, m: _lse(s, m, empty="nan"),
            ),
            Diagnosis(
                "a masked score larger than every visible one broke your result: the shift must be the "
                "largest *visible* score, or every visible term underflows to 0",
                name="maximum over the masked scores too",
                hint="take the maximum after masking",
                variant=lambda s, m: _lse(s, m, shift="all"),
            ),
            Diagnosis(
                "large scores overflow: exp(1000) is inf in float64. Subtract the row's largest visible "
                "score first and add it back after the log",
                name="no shift",
                hint="log sum exp(s) = m + log sum exp(s - m)",
                variant=lambda s, m: _lse(s, m, shift="none") if np.abs(s).max() > 700 else None,
            ),
            Diagnosis(
                "a row with no visible key came out finite: a large negative stand-in for -inf is not log(0)",
                name="large negative instead of -inf",
                hint="fill with -inf, then guard the maximum",
                variant=lambda s, m: _lse(s, m, fill=-1e9),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 6.4 a decode step against a rolling cache
def _ring_mask(W, pos, mode="written"):
    """(B, W): which slots of a rolling buffer of W slots hold a key of the window of position pos."""
    s, p = np.arange(W)[None, :], np.asarray(pos)[:, None]
    written = s <= p  # slot s is reached by position s first
    if mode == "all":  # leftovers counted
        return np.ones_like(written)
    if mode == "linear":  # the ring read as a causal row: slots after the newest one blocked
        return s <= p % W
    if mode == "oldest dropped":  # the slot written next treated as stale
        return written & ((s != (p + 1) % W) | (p < W - 1))
    if mode == "itself dropped":
        return written & (s != p % W)
    return written


def _ring(q, k_cache, v_cache, pos, mode="written", scale=None, order="slots"):
    mask = _ring_mask(k_cache.shape[-2], pos, mode)[:, None, :]  # (B, 1, W): one query per sequence
    out, w = sdpa(q[:, None, :], k_cache, v_cache, mask, scale=scale)  # (B, 1, Ev), (B, 1, W)
    out, w = out[:, 0], w[:, 0]
    if order == "positions":  # weights unrolled to position order, oldest first
        W = k_cache.shape[-2]
        oldest = (np.asarray(pos) + 1) % W * (np.asarray(pos) >= W - 1)
        w = np.stack([np.roll(row, -int(o)) for row, o in zip(w, oldest)])
    return out, w


def _ring_case(rng, name, pos, W, E, Ev, dtype=np.float64):
    """A rolling cache of W slots per sequence; slots no position reached hold large leftovers."""
    pos = np.asarray(pos)
    B = len(pos)
    k, v = rng.normal(size=(B, W, E)), rng.normal(size=(B, W, Ev))
    stale = np.arange(W)[None, :] > pos[:, None]  # (B, W): never written in this sequence
    k = np.where(stale[..., None], 3.0 * rng.normal(size=k.shape) + 2.0, k)  # leftovers of another batch
    v = np.where(stale[..., None], 5.0 + rng.normal(size=v.shape), v)
    q = rng.normal(size=(B, E))
    return Case(name, q=q.astype(dtype), k_cache=k.astype(dtype), v_cache=v.astype(dtype), pos=pos)


def _ring_cases():
    rng = np.random.default_rng(6040)
    # every case mixes sequences whose buffer is still filling with sequences whose buffer has wrapped
    return grouped(
        "values",
        _ring_case(rng, "B=3, W=4, E=3, positions 1, 5 and 9", [1, 5, 9], 4, 3, 2),
        _ring_case(rng, "B=4, W=5, E=2, positions 0, 3, 4 and 12", [0, 3, 4, 12], 5, 2, 3),
    ) + grouped(
        "dtype",
        _ring_case(rng, "float32, B=3, W=3, E=4, positions 1, 2 and 100", [1, 2, 100], 3, 4, 2, np.float32),
    )


register(
    Exercise(
        id="ch06.ring_cache_attention",
        number="6.4",
        title="a decode step against a rolling cache",
        points=3,
        hint="which slots hold a key that position pos[b] may see, and does their order matter to attention?",
        function="ring_cache_attention",
        description="Mistral's causal sliding window of `W` keys (the query's own key included) lets "
        "its KV cache be a *rolling buffer* of `W` slots per sequence: the key and value of absolute "
        "position `p` (counted from 0) are written to slot `p % W`, over whatever was there. Sequence "
        "`b` of a batch is generating the token at position `pos[b]`; that token's key and value have "
        "just been written, so the cache is `k_cache (B, W, E)`, `v_cache (B, W, Ev)` as it stands now. "
        "A slot that no position of the sequence has reached yet still holds leftovers of an earlier "
        "batch (finite, arbitrary numbers). With the new token's query `q (B, E)`, compute its scaled "
        "self-attention (scores divided by $\\sqrt{E}$) under that window and return "
        "`(out (B, Ev), weights (B, W))`, the weights in slot order. `softmax` from attncourse is "
        "handed out; PyTorch's attention functions are not.",
        solution='''
            def ring_cache_attention(q, k_cache, v_cache, pos):
                """One decode step per sequence against a rolling KV cache: (out (B, Ev), weights (B, W))."""
                ### BEGIN SOLUTION
                W = k_cache.shape[-2]
                # position pos sees pos - W + 1 .. pos: exactly what the buffer holds once it has wrapped;
                # before that, the slots 0 .. pos. Attention does not care in which order the keys lie.
                written = np.arange(W)[None, :] <= np.asarray(pos)[:, None]  # (B, W)
                scores = np.einsum("be,bwe->bw", q, k_cache) / np.sqrt(q.shape[-1])  # (B, W)
                weights = softmax(np.where(written, scores, -np.inf))
                return np.einsum("bw,bwv->bv", weights, v_cache), weights  # (B, W) . (B, W, Ev) -> (B, Ev)
                ### END SOLUTION
        ''',
        reference=_ring,
        public_cases=_ring_cases,
        outputs=("out", "weights"),
        distributions=("weights",),
        needs=NEEDS,
        forbids=("torch.nn.functional.scaled_dot_product_attention",),
        diagnoses=(
            Diagnosis(
                "a sequence that has not filled its buffer yet puts weight on slots none of its tokens wrote",
                name="leftover slots attended",
                hint="slot s is first written by position s: before the buffer is full, only slots 0 .. pos are real",
                variant=lambda q, k, v, p: _ring(q, k, v, p, "all"),
            ),
            Diagnosis(
                "after the buffer has wrapped around, some keys of the window get no weight",
                name="the ring read as a causal row",
                hint="once pos >= W - 1 every slot holds one of the last W positions, whatever its index",
                variant=lambda q, k, v, p: _ring(q, k, v, p, "linear"),
            ),
            Diagnosis(
                "after the buffer has wrapped around, one key of the window gets no weight",
                name="the oldest slot dropped",
                hint="the slot written next holds position pos - W + 1, still inside a window of W keys",
                variant=lambda q, k, v, p: _ring(q, k, v, p, "oldest dropped"),
            ),
            Diagnosis(
                "the new token gives its own key no weight",
                name="itself dropped",
                hint="the window includes the query's own key, in slot pos % W",
                variant=lambda q, k, v, p: _ring(q, k, v, p, "itself dropped"),
            ),
            Diagnosis(
                "out is right, but the weights are not in slot order",
                name="weights in position order",
                hint="return the weights where the keys lie, slot s at index s",
                variant=lambda q, k, v, p: _ring(q, k, v, p, order="positions"),
            ),
            Diagnosis(
                "the scores are not scaled as asked",
                variant=lambda q, k, v, p: _ring(q, k, v, p, scale=1.0),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 6.5 additive bias -> boolean
F32_MIN, F16_MIN = float(np.finfo(np.float32).min), float(np.finfo(np.float16).min)
POSITION_FLOOR = -60000.0  # the most negative position term the prompt allows


def position_bias(keep, q_pos, k_pos, slope, blocked, dtype):
    """A float bias (..., L, S): a kept key gets the finite position term -slope * |q_pos - k_pos|
    (computed in float64, then cast), a blocked one ``blocked`` (-inf, or finfo.min of ``dtype``)."""
    q_pos, k_pos = np.asarray(q_pos, dtype=np.float64), np.asarray(k_pos, dtype=np.float64)
    term = -np.asarray(slope, dtype=np.float64) * np.abs(q_pos[..., :, None] - k_pos[..., None, :])
    if blocked == "min":
        blocked = float(np.finfo(dtype).min)
    return np.where(keep, term, blocked).astype(dtype)


def _additive_cases():
    pad = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], dtype=bool)[:, None, None, :]  # (B, 1, 1, S)
    slopes = np.array([0.5, 0.125])[None, :, None, None]  # (1, H, 1, 1)
    causal = np.tril(np.ones((4, 4), dtype=bool))
    far_keys = np.array([0, 20000, 119990, 119995, 120000, 120003])  # a query at 120000, one key after it
    return grouped(
        "position terms and masks",
        Case(
            "float32, causal, two heads' slopes, finfo.min (2, 4, 4)",
            bias=position_bias(
                causal, np.arange(4), np.arange(4), np.array([0.25, 1.0])[:, None, None], "min", np.float32
            ),
        ),
        Case(
            "float16 padding (2, 2, 3, 5), finfo.min",
            bias=position_bias(pad, np.arange(2, 5), np.arange(5), slopes, "min", np.float16),
        ),
        Case(
            "float64, causal (4, 4), -inf and finfo.min mixed",
            bias=np.where(
                np.eye(4, k=1, dtype=bool),
                -np.inf,
                position_bias(causal, np.arange(4), np.arange(4), 2.0, "min", np.float64),
            ),
        ),
    ) + grouped(
        "far keys",
        Case(
            "float16, a query at position 120000, slope 0.5, a future key blocked with finfo.min (1, 6)",
            bias=position_bias(far_keys <= 120000, [120000], far_keys, 0.5, "min", np.float16),
        ),
        Case(
            "float32, the same positions, -inf (1, 6)",
            bias=position_bias(far_keys <= 120000, [120000], far_keys, 0.5, -np.inf, np.float32),
        ),
    )


def _from_additive(bias, rule="dtype min"):
    b = np.asarray(bias)
    if rule == "zero":
        return b == 0
    if rule == "finite":
        return np.isfinite(b)
    if rule == "half min":
        return b > np.finfo(b.dtype).min / 2
    return b > np.finfo(b.dtype).min  # -inf and finfo.min are the blocking values, nothing else is that low


def _kept(bias):
    """The reference, on any dtype (the engine hands it float64): a kept entry is a position term,
    never below POSITION_FLOOR; every blocking value (-inf, float16's, float32's or float64's
    finfo.min) lies below it."""
    return np.asarray(bias) >= POSITION_FLOOR


def _told(rule):
    """The mistake ``rule``'s mask, or None where it agrees with the right one (cannot show)."""

    def variant(bias):
        got = _from_additive(bias, rule)
        return None if np.array_equal(got, _from_additive(bias)) else got

    return variant


register(
    Exercise(
        id="ch06.mask_from_additive",
        number="6.5",
        title="a boolean mask from an additive bias",
        points=1,
        hint="which values can a blocked entry hold in each dtype, and how low can a kept one go?",
        function="mask_from_additive",
        description="Some models hand their attention one float *bias* added to the scores, with the "
        "positions and the mask folded into it. For a key that may be attended, the bias is a position "
        "term: a finite penalty that grows with the key's distance from the query, anywhere from 0 "
        "down to -60000 (a query can sit 120000 tokens after a key). For a blocked key it is `-inf` or "
        "the most negative finite number of the bias's dtype (`np.finfo(dtype).min`, as Hugging "
        "Face's `get_extended_attention_mask` writes it); the position term is lost in it. `bias` has "
        "any shape, and its dtype may be float16, float32 or float64. Return this course's boolean "
        "mask of the same shape, True = may attend.",
        solution='''
            def mask_from_additive(bias):
                """Boolean mask, True = may attend, from an additive bias (position terms, blocked keys)."""
                ### BEGIN SOLUTION
                # a kept entry is finite and above -60000; a blocked one is -inf or the dtype's most
                # negative number, which in float16 (-65504) is not far below -60000: compare with it
                return bias > np.finfo(bias.dtype).min
                ### END SOLUTION
        ''',
        reference=_kept,
        public_cases=_additive_cases,
        diagnoses=(
            Diagnosis(INVERTED_MASK, variant=lambda bias: ~_from_additive(bias)),
            Diagnosis(
                "your mask blocks keys whose bias is a finite position penalty: such a key may still be "
                "attended",
                name="only a bias of 0 kept",
                hint="a kept key's bias is 0 only at distance 0",
                variant=_told("zero"),
            ),
            Diagnosis(
                "your mask lets queries attend to keys whose float16 bias is np.finfo(np.float16).min "
                "(-65504): that value blocks a key",
                name="float16's minimum kept",
                hint="what is the most negative float16?",
                variant=lambda bias: (
                    np.asarray(bias, dtype=np.float64) > -1e9
                    if np.asarray(bias).dtype == np.float16 and np.any(np.asarray(bias) == F16_MIN)
                    else None
                ),
            ),
            Diagnosis(
                "your mask lets queries attend to keys whose bias is np.finfo(dtype).min: that finite "
                "value blocks a key just as -inf does",
                name="finite blocking values kept",
                hint="the blocking values are -inf and the dtype's own finfo.min",
                variant=_told("finite"),
            ),
            Diagnosis(
                "your mask blocks keys far from their query, whose position penalty is large but finite",
                name="far keys blocked",
                hint="in float16, how far apart are -60000 and the blocking value?",
                variant=_told("half min"),
            ),
        ),
    )
)
