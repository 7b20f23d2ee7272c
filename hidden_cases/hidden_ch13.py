"""Hidden cases, chapter 13 (beyond softmax): a longer sequence, one head of width 1, decays near 0,
top_k of 1 and top_k of most of the keys, chunks longer than the sequence."""

import numpy as np

from attncourse.exercises import Case, grouped


def predict_hybrid_mib():
    return grouped("prediction", Case("the same hybrid and sequence"))


def predict_topk_share():
    return grouped("prediction", Case("the same sequence and indexer"))


def causal_linear_attention():
    rng = np.random.default_rng(1902)
    n = rng.normal
    return grouped(
        "shape", Case("L=9, E=1, Ev=4", q=n(size=(9, 1)), k=n(size=(9, 1)), v=n(size=(9, 4)))
    ) + grouped(
        "batch dims",
        Case("batch 3, L=2, E=5, Ev=1", q=n(size=(3, 2, 5)), k=n(size=(3, 2, 5)), v=n(size=(3, 2, 1))),
    )


def gated_delta_rule():
    rng = np.random.default_rng(1903)
    n, u = rng.normal, rng.uniform

    def unit(x):
        return x / np.linalg.norm(x, axis=-1, keepdims=True)

    return (
        grouped(
            "recurrence",
            Case(
                "L=7, decays near 0",
                q=n(size=(7, 3)),
                k=unit(n(size=(7, 3))),
                v=n(size=(7, 2)),
                beta=u(0.2, 1, 7),
                decay=u(0.0, 0.2, 7),
            ),
        )
        + grouped(
            "batch dims",
            Case(
                "batch (2, 2), L=3",
                q=n(size=(2, 2, 3, 2)),
                k=unit(n(size=(2, 2, 3, 2))),
                v=n(size=(2, 2, 3, 3)),
                beta=u(0.2, 1, (2, 2, 3)),
                decay=u(0.5, 1, (2, 2, 3)),
            ),
        )
        + grouped(
            "dtype",
            Case(
                "float32, L=6, decays near 1",
                q=n(size=(6, 2)).astype(np.float32),
                k=unit(n(size=(6, 2))).astype(np.float32),
                v=n(size=(6, 3)).astype(np.float32),
                beta=u(0.2, 1, 6).astype(np.float32),
                decay=u(0.9, 1, 6).astype(np.float32),
            ),
        )
    )


def fix_topk_causal():
    rng = np.random.default_rng(1904)
    n = rng.normal
    float32 = Case(
        "float32, L=7, top_k=3",
        q=n(size=(7, 3)).astype(np.float32),
        k=n(size=(7, 3)).astype(np.float32),
        v=n(size=(7, 2)).astype(np.float32),
        top_k=3,
    )
    return grouped("dtype", float32) + grouped(
        "causal top-k",
        Case("top_k=1, L=7", q=n(size=(7, 3)), k=n(size=(7, 3)), v=n(size=(7, 2)), top_k=1),
        Case("top_k=6 of L=9", q=n(size=(9, 2)), k=n(size=(9, 2)), v=n(size=(9, 2)), top_k=6),
    )


def fix_chunked_linear():
    rng = np.random.default_rng(1906)
    n = rng.normal
    return (
        grouped(
            "chunks",
            Case("L=5, one chunk of 8", q=n(size=(5, 3)), k=n(size=(5, 3)), v=n(size=(5, 2)), chunk_size=8),
            Case("L=9, chunks of 2", q=n(size=(9, 1)), k=n(size=(9, 1)), v=n(size=(9, 4)), chunk_size=2),
        )
        + grouped(
            "batch dims",
            Case(
                "batch (2, 2), L=5, chunks of 3",
                q=n(size=(2, 2, 5, 2)),
                k=n(size=(2, 2, 5, 2)),
                v=n(size=(2, 2, 5, 3)),
                chunk_size=3,
            ),
        )
        + grouped(
            "dtype",
            Case(
                "float32, L=10, chunks of 4",
                q=n(size=(10, 3)).astype(np.float32),
                k=n(size=(10, 3)).astype(np.float32),
                v=n(size=(10, 2)).astype(np.float32),
                chunk_size=4,
            ),
        )
    )


HIDDEN = {
    "ch13.predict_hybrid_mib": predict_hybrid_mib,
    "ch13.causal_linear_attention": causal_linear_attention,
    "ch13.gated_delta_rule": gated_delta_rule,
    "ch13.fix_topk_causal": fix_topk_causal,
    "ch13.predict_topk_share": predict_topk_share,
    "ch13.fix_chunked_linear": fix_chunked_linear,
}
