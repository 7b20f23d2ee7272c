"""Chapter 13 exercise 13.5: sparse attention whose keys are picked by a lightning-style indexer (a
weighted sum over indexer heads of ReLU'd dot products, one selection per token shared by every
attention head), causal; the handed-out code picks the keys before the causal mask."""

from __future__ import annotations

import numpy as np

from ... import scaled_dot_product_attention as sdpa
from ..engine.registry import Case, Diagnosis, Exercise, grouped, register

__all__ = ["boundary_ties", "index_scores", "indexed_sparse_variant", "sparse_cases"]


def indexed_sparse_variant(
    q, k, v, iq, ik, iw, top_k, *, mask_first=True, relu_each=True, relu=True, by_scores=False, smallest=False
):
    """The reference (default flags) and the classic mistakes."""
    L = q.shape[-2]
    dots = np.einsum("...thd,...sd->...ths", iq, ik)  # (..., L, Hi, L): each indexer head's dot products
    if relu and relu_each:
        dots = np.maximum(dots, 0.0)
    index = np.einsum("...th,...ths->...ts", iw, dots)  # (..., L, L)
    if relu and not relu_each:
        index = np.maximum(index, 0.0)
    if by_scores:  # ranked by the heads' own scores, averaged: not the indexer's
        index = (q @ np.swapaxes(k, -1, -2)).mean(-3)
    if smallest:
        index = -index
    causal = np.tril(np.ones((L, L), dtype=bool))
    ranked = np.where(causal, index, -np.inf) if mask_first else index
    order = np.argsort(-ranked, axis=-1, kind="stable")[..., :top_k]
    kept = np.zeros(index.shape, dtype=bool)
    np.put_along_axis(kept, order, True, axis=-1)
    return sdpa(q, k, v, (kept & causal)[..., None, :, :])[0]


def index_scores(iq, ik, iw):
    """The indexer's scores (..., L, L), in float64."""
    iq, ik, iw = (np.asarray(x, dtype=np.float64) for x in (iq, ik, iw))
    return np.einsum("...th,...ths->...ts", iw, np.maximum(np.einsum("...thd,...sd->...ths", iq, ik), 0.0))


def boundary_ties(iq, ik, iw, top_k, gap=1e-3):
    """Whether some query's top_k-th and (top_k + 1)-th scores among the keys it may see are within
    ``gap`` (a tie that the ranking's tie rule, not the scores, would settle)."""
    index = index_scores(iq, ik, iw)
    for t in range(top_k, index.shape[-1]):  # queries with more than top_k keys to choose from
        row = -np.sort(-index[..., t, : t + 1], axis=-1)
        if np.any(row[..., top_k - 1] - row[..., top_k] < gap):
            return True
    return False


MISTAKES = (
    dict(mask_first=False),
    dict(smallest=True),
    dict(relu_each=False),
    dict(relu=False),
    dict(by_scores=True),
)


def _tells_apart(arrays, top_k):
    """Every classic mistake changes some output of the case (so every group tells them apart)."""
    args = [np.asarray(arrays[a], dtype=np.float64) for a in ("q", "k", "v", "iq", "ik", "iw")] + [top_k]
    want = indexed_sparse_variant(*args)
    return all(np.abs(indexed_sparse_variant(*args, **flags) - want).max() > 1e-3 for flags in MISTAKES)


def sparse_cases(seed=1305, hidden=False):
    rng = np.random.default_rng(seed)
    n = rng.normal

    def case(name, lead, H, L, E, Ev, Hi, Ei, top_k, dtype=np.float64):
        lead = tuple(lead)
        while True:  # drawn again until no query has a tie at its top_k-th place
            arrays = dict(
                q=n(size=(*lead, H, L, E)),
                k=n(size=(*lead, H, L, E)),
                v=n(size=(*lead, H, L, Ev)),
                iq=n(size=(*lead, L, Hi, Ei)),
                ik=n(size=(*lead, L, Ei)),
                iw=n(size=(*lead, L, Hi)),
            )
            arrays = {a: x.astype(dtype) for a, x in arrays.items()}
            if not boundary_ties(arrays["iq"], arrays["ik"], arrays["iw"], top_k) and _tells_apart(
                arrays, top_k
            ):
                return Case(name, **arrays, top_k=top_k)

    if hidden:
        return (
            grouped(
                "sparse attention",
                case("2 heads, L=9, 4 indexer heads, top_k=2", (), 2, 9, 3, 2, 4, 2, 2),
                case("1 head, L=7, top_k=1", (), 1, 7, 2, 3, 2, 3, 1),
            )
            + grouped("batch dims", case("batch 2, 2 heads, L=6, top_k=3", (2,), 2, 6, 3, 2, 3, 2, 3))
            + grouped(
                "dtype", case("float32, 2 heads, L=7, top_k=3", (), 2, 7, 4, 2, 3, 3, 3, dtype=np.float32)
            )
        )
    return (
        grouped(
            "sparse attention",
            case("2 heads, L=8, E=4, Ev=2, 3 indexer heads of width 3, top_k=3", (), 2, 8, 4, 2, 3, 3, 3),
            case("3 heads, L=6, E=2, Ev=3, 2 indexer heads of width 2, top_k=2", (), 3, 6, 2, 3, 2, 2, 2),
        )
        + grouped("batch dims", case("batch 2, 2 heads, L=5, top_k=2", (2,), 2, 5, 3, 2, 2, 3, 2))
        + grouped("dtype", case("float32, 2 heads, L=7, top_k=3", (), 2, 7, 4, 2, 3, 2, 3, dtype=np.float32))
    )


def _sv(**flags):
    return lambda q, k, v, iq, ik, iw, top_k: indexed_sparse_variant(q, k, v, iq, ik, iw, top_k, **flags)


register(
    Exercise(
        id="ch13.indexed_sparse_attention",
        number="13.5",
        title="sparse attention picked by an indexer",
        points=2,
        function="indexed_sparse_attention",
        hint="for a query, list the keys it reads: are they its top_k among the keys it may see?",
        kind="diagnose",
        forbids=(
            "torch.nn.functional.scaled_dot_product_attention",
            "attncourse.topk_attention",
            "attncourse.scaled_dot_product_attention",
        ),
        description="A decoder layer in the style of DeepSeek Sparse Attention: its indexer scores key $s$ "
        "for query $t$ as the chapter's $I_{t,s} = \\sum_j w_{t,j}\\, \\text{ReLU}(q^I_{t,j} \\cdot "
        "k^I_s)$, with indexer queries `iq (..., L, Hi, Ei)` (one per indexer head), indexer keys "
        "`ik (..., L, Ei)` and weights `iw (..., L, Hi)`; each query keeps the `top_k` keys its indexer "
        "ranks highest among the keys it may see (keys up to itself; a query with fewer keeps them all), "
        "and every attention head of `q, k (..., H, L, E)`, `v (..., H, L, Ev)` attends (softmax, scaled "
        "by $1/\\sqrt{E}$) to those keys only. `indexed_sparse_attention(q, k, v, iq, ik, iw, top_k)` "
        "should return that layer's output `(..., H, L, Ev)`: for each head, what "
        "`ac.topk_attention(q, k, v, top_k, index_scores=I, is_causal=True)` returns with the indexer's "
        "scores `I` (no case has a tie at a query's `top_k`-th place). Its outputs are wrong for some "
        "queries and right for others. Find which, then the "
        "bug, and fix it.",
        solution='''
            def indexed_sparse_attention(q, k, v, iq, ik, iw, top_k):
                """Attention of every head to the top_k keys its indexer picks per query: (..., H, L, Ev)."""
                L = q.shape[-2]
                dots = np.einsum("...thd,...sd->...ths", iq, ik)  # (..., L, Hi, L): indexer heads x keys
                index = np.einsum("...th,...ths->...ts", iw, np.maximum(dots, 0.0))  # (..., L, L)
                causal = np.tril(np.ones((L, L), dtype=bool))  # (L, L): the keys each query may see
                ### BEGIN SOLUTION
                order = np.argsort(-np.where(causal, index, -np.inf), axis=-1, kind="stable")[..., :top_k]
                kept = np.zeros(index.shape, dtype=bool)  # (..., L, L)
                np.put_along_axis(kept, order, True, axis=-1)
                ### END SOLUTION
                scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])  # (..., H, L, L)
                scores = np.where((kept & causal)[..., None, :, :], scores, -np.inf)  # one pick for all heads
                return softmax(scores) @ v  # (..., H, L, Ev)
        ''',
        stub="""
            order = np.argsort(-index, axis=-1, kind="stable")[..., :top_k]  # (..., L, top_k)
            kept = np.zeros(index.shape, dtype=bool)  # (..., L, L)
            np.put_along_axis(kept, order, True, axis=-1)
        """,
        reference=indexed_sparse_variant,
        public_cases=sparse_cases,
        outputs=("out",),
        needs=("import numpy as np", "import torch", "from attncourse import softmax"),
        diagnoses=(
            Diagnosis(
                "right for the last query, wrong for some earlier ones: which keys compete for a query's top k?",
                name="top-k before the mask",
                hint="rank only the keys a query may see: put -inf on the later keys before choosing the top k",
                variant=_sv(mask_first=False),
            ),
            Diagnosis(
                "each query reads the keys its indexer ranks lowest: which end of the ranking is kept?",
                name="lowest scores kept",
                hint="keep the largest index scores",
                variant=_sv(smallest=True),
            ),
            Diagnosis(
                "the keys picked differ where an indexer head's dot product is negative: where does the ReLU act?",
                name="ReLU after the weighted sum",
                hint="ReLU each indexer head's dot product, then weight and sum",
                variant=_sv(relu_each=False),
            ),
            Diagnosis(
                "the keys picked differ where an indexer head's dot product is negative: what does the indexer "
                "do to each head's dot product?",
                name="no ReLU",
                hint="I = sum_j w_j ReLU(q_j . k)",
                variant=_sv(relu=False),
            ),
            Diagnosis(
                "the keys picked are not the indexer's: what ranks them?",
                name="keys ranked by the attention scores",
                hint="rank with the indexer's scores, not q k^T",
                variant=_sv(by_scores=True),
            ),
        ),
    )
)
