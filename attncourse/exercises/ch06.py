"""Chapter 6 exercises: masks (True = may attend), fully masked rows, masked multi-head attention."""

from __future__ import annotations

import numpy as np

from .. import causal_mask, from_hf_attention_mask, padding_mask, softmax
from .. import scaled_dot_product_attention as sdpa
from ._common import (
    D_MODEL_SCALE,
    INVERTED_MASK,
    LARGE_NEGATIVE,
    NAN_FULLY_MASKED,
    inverted_mask,
    masked_softmax_reference,
    nan_masked_softmax,
    swap,
)
from ._registry import Case, Diagnosis, Exercise, grouped, register
from .ch05 import mha_reference

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


# ----------------------------------------------------------------------------- 6.2 padding mask
def _padding_cases():
    return grouped(
        "masks",
        Case("lengths [2, 3], S=4", lengths=np.array([2, 3]), S=4),
        Case("lengths [1, 4, 0], S=4", lengths=np.array([1, 4, 0]), S=4),
    )


register(
    Exercise(
        id="ch06.make_padding_mask",
        number="6.2",
        title="a padding mask from lengths",
        points=2,
        hint="compare the positions 0..S-1 with each length, broadcasting",
        function="make_padding_mask",
        description="Sequence `b` has `lengths[b]` real tokens followed by padding. Return the boolean "
        "`(B, S)` mask, True for the real tokens (the keys that may be attended to).",
        solution='''
            def make_padding_mask(lengths, S):
                """Boolean (B, S), True for the first lengths[b] positions of sequence b."""
                ### BEGIN SOLUTION
                positions = np.arange(S)  # (S,)
                return positions[None, :] < np.asarray(lengths)[:, None]  # (1, S) < (B, 1) -> (B, S)
                ### END SOLUTION
        ''',
        reference=lambda lengths, S: padding_mask(lengths, S),
        public_cases=_padding_cases,
        diagnoses=(
            Diagnosis(INVERTED_MASK, variant=lambda lengths, S: ~padding_mask(lengths, S)),
            Diagnosis(
                "off by one: a sequence of length n has its real tokens at positions 0..n-1 (use <, not <=)",
                variant=lambda lengths, S: np.arange(S)[None, :] <= np.asarray(lengths)[:, None],
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 6.3 masked softmax
def _masked_softmax_cases():
    rng = np.random.default_rng(603)
    return (
        grouped(
            "values",
            Case("causal (3, 3)", scores=rng.normal(size=(3, 3)), mask=np.tril(np.ones((3, 3), dtype=bool))),
            Case(
                "large scores, a (2, 4) mask",
                scores=rng.normal(size=(2, 4)) * 1000,
                mask=np.array([[1, 0, 1, 1], [0, 1, 1, 0]], dtype=bool),
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


def _times_mask(scores, mask):
    return softmax(scores) * mask


register(
    Exercise(
        id="ch06.masked_softmax",
        number="6.3",
        title="masked softmax",
        points=3,
        hint="-inf where the mask is False; a row with nothing left must give zeros, not NaN",
        function="masked_softmax",
        description="Softmax over the last axis of `scores` where only the keys with `mask == True` "
        "count (`mask` broadcasts against `scores`). A row with nothing to attend to must come out as "
        "all zeros: no NaN. Don't use `attncourse.softmax` here: handle that row yourself.",
        solution='''
            def masked_softmax(scores, mask):
                """Softmax over the keys where mask is True; a fully masked row is all zeros."""
                ### BEGIN SOLUTION
                scores = np.where(mask, scores, -np.inf)  # blocked keys: exp(-inf) = 0
                row_max = scores.max(axis=-1, keepdims=True)
                row_max = np.where(np.isfinite(row_max), row_max, 0.0)  # all -inf row: no -inf - (-inf) = NaN
                e = np.exp(scores - row_max)
                total = e.sum(axis=-1, keepdims=True)
                return e / np.where(total > 0, total, 1.0)  # a row with nothing to attend to stays all zeros
                ### END SOLUTION
        ''',
        reference=masked_softmax_reference,
        public_cases=_masked_softmax_cases,
        distributions=("result",),
        diagnoses=(
            inverted_mask(masked_softmax_reference, 1),
            Diagnosis(NAN_FULLY_MASKED, variant=nan_masked_softmax),
            Diagnosis(LARGE_NEGATIVE, variant=lambda scores, mask: softmax(np.where(mask, scores, -1e9))),
            Diagnosis(
                "you zeroed the masked weights after the softmax, so the rows no longer sum to 1: "
                "mask the scores (with -inf) before the softmax",
                variant=_times_mask,
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 6.4 masked attention
def _masked_attention(q, k, v, mask, scale=None):
    return sdpa(q, k, v, np.asarray(mask, dtype=bool), scale=scale)


def _nan_attention(q, k, v, mask):
    weights = nan_masked_softmax(q @ swap(k) / np.sqrt(q.shape[-1]), mask)
    return weights @ v, weights


def _masked_attention_cases():
    rng = np.random.default_rng(604)
    n = rng.normal
    return (
        grouped(
            "values",
            Case(
                "causal, L=5 queries, S=3 keys",
                q=n(size=(5, 2)),
                k=n(size=(3, 2)),
                v=n(size=(3, 3)),
                mask=np.tril(np.ones((5, 3), dtype=bool)),
            ),
            Case(
                "causal, L=S=4",
                q=rng.normal(size=(4, 3)),
                k=rng.normal(size=(4, 3)),
                v=rng.normal(size=(4, 2)),
                mask=np.tril(np.ones((4, 4), dtype=bool)),
            ),
        )
        + grouped(
            "fully masked rows",
            Case(
                "padding, the second query sees nothing",
                q=rng.normal(size=(3, 4)),
                k=rng.normal(size=(5, 4)),
                v=rng.normal(size=(5, 3)),
                mask=np.array([[1, 1, 1, 0, 0], [0, 0, 0, 0, 0], [1, 1, 1, 1, 1]], dtype=bool),
            ),
        )
        + grouped(
            "batch dimensions",
            Case(
                "batch and heads (2, 2) with a (L, S) mask, L=2, S=3",
                q=n(size=(2, 2, 2, 4)),
                k=n(size=(2, 2, 3, 4)),
                v=n(size=(2, 2, 3, 2)),
                mask=np.array([[1, 0, 1], [1, 1, 0]], dtype=bool),
            ),
            Case(
                "a padding mask (B, 1, S), B=2, L=2, S=3, the second sequence fully padded",
                q=n(size=(2, 2, 3)),
                k=n(size=(2, 3, 3)),
                v=n(size=(2, 3, 2)),
                mask=np.array([[1, 1, 0], [0, 0, 0]], dtype=bool)[:, None, :],
            ),
        )
    )


register(
    Exercise(
        id="ch06.masked_attention",
        number="6.4",
        title="masked attention",
        points=3,
        hint="mask the scaled scores with -inf before the softmax",
        function="masked_attention",
        description="Scaled attention in which query `i` may attend to key `j` only where `mask[..., i, j]` "
        "is True (`mask` broadcasts to `(..., L, S)`). Return `(out, weights)`; a query with nothing to "
        "attend to gets all-zero weights and an all-zero output row.",
        solution='''
            def masked_attention(q, k, v, mask):
                """Scaled attention with a boolean mask (True = may attend): returns (out, weights)."""
                ### BEGIN SOLUTION
                scores = q @ np.swapaxes(k, -1, -2)  # (..., L, E) @ (..., E, S) -> (..., L, S)
                scores = scores / np.sqrt(q.shape[-1])
                scores = np.where(mask, scores, -np.inf)  # blocked keys get weight exp(-inf) = 0
                weights = softmax(scores)  # attncourse's softmax: a fully masked row is all zeros, not NaN
                return weights @ v, weights  # (..., L, S) @ (..., S, Ev) -> (..., L, Ev)
                ### END SOLUTION
        ''',
        reference=_masked_attention,
        public_cases=_masked_attention_cases,
        outputs=("out", "weights"),
        distributions=("weights",),
        needs=NEEDS,
        diagnoses=(
            inverted_mask(_masked_attention, 3),
            Diagnosis(NAN_FULLY_MASKED, variant=_nan_attention),
            Diagnosis(
                "the scores are unscaled: divide by sqrt(E) before masking",
                variant=lambda q, k, v, mask: _masked_attention(q, k, v, mask, scale=1.0),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 6.5 HF mask
def _hf_cases():
    return grouped(
        "masks",
        Case("two sequences, S=3", attention_mask=np.array([[1, 1, 0], [1, 1, 1]])),
        Case("three sequences, S=4", attention_mask=np.array([[1, 0, 0, 0], [1, 1, 1, 0], [1, 1, 1, 1]])),
    )


register(
    Exercise(
        id="ch06.mask_from_hf",
        number="6.5",
        title="convert a Hugging Face attention_mask",
        points=1,
        hint="1 means keep; shape it to broadcast over heads and queries",
        function="mask_from_hf",
        description="Hugging Face's `attention_mask (B, S)` holds 1 for real tokens and 0 for padding. "
        "Return this course's boolean mask (True = may attend), shaped `(B, 1, 1, S)` so it broadcasts "
        "against `(B, H, L, S)` scores.",
        solution='''
            def mask_from_hf(attention_mask):
                """Hugging Face's (B, S) 1 = keep / 0 = padding -> boolean (B, 1, 1, S), True = may attend."""
                ### BEGIN SOLUTION
                keep = np.asarray(attention_mask) == 1  # (B, S) bool
                return keep[:, None, None, :]  # (B, S) -> (B, 1, 1, S): broadcasts over heads and queries
                ### END SOLUTION
        ''',
        reference=from_hf_attention_mask,
        public_cases=_hf_cases,
        diagnoses=(
            Diagnosis(INVERTED_MASK, variant=lambda m: ~from_hf_attention_mask(m)),
            Diagnosis(
                "expected (B, 1, 1, S), so the mask broadcasts against (B, H, L, S) scores: add the axes "
                "with [:, None, None, :]",
                variant=lambda m: np.asarray(m) == 1,
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 6.6 masked multi-head
def _mmha_cases():
    rng = np.random.default_rng(606)

    def weights(d):
        return dict(
            zip(("W_q", "W_k", "W_v", "W_o"), [rng.normal(size=(d, d)) / np.sqrt(d) for _ in range(4)])
        )

    return (
        grouped(
            "causal masks",
            Case(
                "causal (3, 3), B=1, d_model=4, 2 heads",
                x=rng.normal(size=(1, 3, 4)),
                **weights(4),
                n_heads=2,
                mask=np.tril(np.ones((3, 3), dtype=bool)),
            ),
        )
        + grouped(
            "padding masks",
            Case(
                "padding (B, 1, 1, L), B=2, d_model=6, 3 heads",
                x=rng.normal(size=(2, 4, 6)),
                **weights(6),
                n_heads=3,
                mask=np.array([[1, 1, 1, 0], [1, 1, 0, 0]], dtype=bool)[:, None, None, :],
            ),
        )
        + grouped(
            "fully masked rows",
            Case(
                "padding, the second sequence fully padded, B=2, d_model=4, 2 heads",
                x=rng.normal(size=(2, 3, 4)),
                **weights(4),
                n_heads=2,
                mask=np.array([[1, 1, 0], [0, 0, 0]], dtype=bool)[:, None, None, :],
            ),
        )
        + grouped(
            "per-head masks",
            Case(
                "per-head mask (1, 2, 3, 3): head 0 causal, head 1 sees all",
                x=rng.normal(size=(1, 3, 4)),
                **weights(4),
                n_heads=2,
                mask=np.stack([np.tril(np.ones((3, 3), dtype=bool)), np.ones((3, 3), dtype=bool)])[None],
            ),
        )
    )


def _mmha_nan(x, W_q, W_k, W_v, W_o, n_heads, mask):
    from .. import merge_heads, split_heads

    q, k, v = (split_heads(x @ W, n_heads) for W in (W_q, W_k, W_v))
    weights = nan_masked_softmax(q @ swap(k) / np.sqrt(q.shape[-1]), mask)
    return merge_heads(weights @ v) @ W_o, weights


register(
    Exercise(
        id="ch06.masked_multi_head_attention",
        number="6.6",
        title="masked multi-head attention",
        points=5,
        hint="the multi-head pass of 5.3 with the mask applied to every head's scores",
        function="masked_multi_head_attention",
        description="Everything together: multi-head self-attention of `x (B, L, d_model)` with "
        "`W_q, W_k, W_v, W_o (d_model, d_model)` (used as `x @ W`), `n_heads` heads scaled by "
        "$1/\\sqrt{d_{head}}$, and a boolean `mask` (True = may attend) that broadcasts to "
        "`(B, n_heads, L, L)`. Head `h` owns columns `h * d_head:(h + 1) * d_head` of `x @ W_q`, `x @ W_k` "
        "and `x @ W_v` (as in Exercise 5.1), and the merged heads go back in the same order before `@ W_o`. "
        "Return `(out (B, L, d_model), weights (B, n_heads, L, L))`; a query "
        "with nothing to attend to gets zeros, not NaN.",
        solution='''
            def masked_multi_head_attention(x, W_q, W_k, W_v, W_o, n_heads, mask):
                """Masked multi-head self-attention: returns (out (B, L, d_model), weights (B, H, L, L))."""
                ### BEGIN SOLUTION
                d_head = x.shape[-1] // n_heads
                q = split_heads(x @ W_q, n_heads)  # (B, L, d_model) -> (B, H, L, d_head)
                k = split_heads(x @ W_k, n_heads)
                v = split_heads(x @ W_v, n_heads)
                scores = q @ np.swapaxes(k, -1, -2)  # (B, H, L, d_head) @ (B, H, d_head, L) -> (B, H, L, L)
                scores = scores / np.sqrt(d_head)  # each head scales by its own width
                scores = np.where(mask, scores, -np.inf)  # mask broadcasts to (B, H, L, L); True = may attend
                weights = softmax(scores)  # a fully masked row is all zeros
                out = merge_heads(weights @ v) @ W_o  # (B, H, L, d_head) -> (B, L, d_model) -> (B, L, d_model)
                return out, weights
                ### END SOLUTION
        ''',
        reference=mha_reference,
        public_cases=_mmha_cases,
        outputs=("out", "weights"),
        distributions=("weights",),
        needs=("import numpy as np", "from attncourse import softmax, split_heads, merge_heads"),
        diagnoses=(
            Diagnosis(
                D_MODEL_SCALE,
                variant=lambda x, W_q, W_k, W_v, W_o, h, m: mha_reference(
                    x, W_q, W_k, W_v, W_o, h, m, scale=1 / np.sqrt(x.shape[-1])
                ),
            ),
            inverted_mask(mha_reference, 6),
            Diagnosis(NAN_FULLY_MASKED, variant=_mmha_nan),
        ),
    )
)


# ----------------------------------------------------------------------------- 6.7 sliding window (extend)
def _window_cases():
    return grouped(
        "windows", Case("L=5, window 2", L=5, window=2), Case("L=6, window 3", L=6, window=3)
    ) + grouped(
        "edge windows",
        Case("window 1, L=3: only itself", L=3, window=1),
        Case("window 4 longer than L=2", L=2, window=4),
    )


def _window(L, window, lo=None):
    i, j = np.arange(L)[:, None], np.arange(L)[None, :]  # (L, 1) and (1, L)
    lo = window if lo is None else lo
    return (j <= i) & (j > i - lo)


register(
    Exercise(
        id="ch06.sliding_window_mask",
        number="6.7",
        title="a sliding-window causal mask",
        points=2,
        function="sliding_window_mask",
        hint="compare key positions j with query positions i: causal (j <= i) and fewer than `window` steps back",
        kind="extend",
        description="Causal local attention (Mistral's sliding window) lets each token see only itself "
        "and the `window - 1` tokens before it (Longformer's window, for an encoder, is two-sided, with a few "
        "global tokens that attend to and are attended by every position); a kernel that skips the blocked blocks does work that grows like "
        "$L \\cdot w$ instead of $L^2$ (a dense `(L, L)` mask like this one still costs $L^2$: the chapter's "
        "sliding-window section measures both). Return the "
        "boolean `(L, L)` mask, True = may attend: query `i` sees keys `j` with "
        "$i - \\text{window} < j \\le i$.",
        solution='''
            def sliding_window_mask(L, window):
                """Boolean (L, L), True = may attend: query i sees keys i - window + 1 .. i."""
                ### BEGIN SOLUTION
                i = np.arange(L)[:, None]  # (L, 1): query positions
                j = np.arange(L)[None, :]  # (1, L): key positions
                return (j <= i) & (j > i - window)  # causal, and at most `window` keys back (itself included)
                ### END SOLUTION
        ''',
        reference=_window,
        public_cases=_window_cases,
        diagnoses=(
            Diagnosis(
                "off by one: each query should see `window` keys, itself included (j > i - window, not >=)",
                variant=lambda L, w: _window(L, w, lo=w + 1),
            ),
            Diagnosis(
                "your window looks both ways: a decoder's window must also be causal (no key after the query)",
                variant=lambda L, w: np.abs(np.arange(L)[:, None] - np.arange(L)[None, :]) < w,
            ),
            Diagnosis(INVERTED_MASK, variant=lambda L, w: ~_window(L, w)),
        ),
    )
)


# 6.8 to 6.10 live in ch06_more (one module of about 200 lines each is easier to read)
from . import ch06_more  # noqa: E402,F401  (it registers them)
