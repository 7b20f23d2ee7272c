"""Hidden cases, chapter 4 (self-attention)."""

import numpy as np

from attncourse.exercises import Case, grouped


def project_qkv():
    rng = np.random.default_rng(1401)
    n = rng.normal
    return grouped(
        "batch dimensions",
        Case(
            "a batch (2, 5, 8), d_k=4, d_v=6",
            x=n(size=(2, 5, 8)),
            W_q=n(size=(8, 4)),
            W_k=n(size=(8, 4)),
            W_v=n(size=(8, 6)),
        ),
    ) + grouped(
        "shapes",
        Case("one token", x=n(size=(1, 3)), W_q=n(size=(3, 3)), W_k=n(size=(3, 3)), W_v=n(size=(3, 3))),
        Case(
            "float32",
            x=n(size=(4, 6)).astype(np.float32),
            W_q=n(size=(6, 2)).astype(np.float32),
            W_k=n(size=(6, 2)).astype(np.float32),
            W_v=n(size=(6, 2)).astype(np.float32),
        ),
    )


def self_attention():
    rng = np.random.default_rng(1402)
    n = rng.normal
    return grouped(
        "batch dimensions",
        Case(
            "a batch (3, 4, 6), d_k=2, d_v=5",
            x=n(size=(3, 4, 6)),
            W_q=n(size=(6, 2)),
            W_k=n(size=(6, 2)),
            W_v=n(size=(6, 5)),
        ),
    ) + grouped(
        "shapes",
        Case("one token", x=n(size=(1, 4)), W_q=n(size=(4, 4)), W_k=n(size=(4, 4)), W_v=n(size=(4, 2))),
        Case(
            "float32, d_model=16, d_k=4",
            x=n(size=(5, 16)).astype(np.float32),
            W_q=(n(size=(16, 4)) / 4).astype(np.float32),
            W_k=(n(size=(16, 4)) / 4).astype(np.float32),
            W_v=n(size=(16, 4)).astype(np.float32),
        ),
        Case(
            "large projections",
            x=n(size=(3, 4)) * 10,
            W_q=n(size=(4, 3)),
            W_k=n(size=(4, 3)),
            W_v=n(size=(4, 3)),
        ),
    )


def unpermute():
    rng = np.random.default_rng(1403)
    return grouped(
        "batch dimensions",
        Case("a batch (2, 4, 3)", out_permuted=rng.normal(size=(2, 4, 3)), perm=np.array([2, 3, 1, 0])),
    ) + grouped(
        "tokens",
        Case("L=6", out_permuted=rng.normal(size=(6, 2)), perm=np.array([5, 0, 1, 2, 3, 4])),
        Case("identity", out_permuted=rng.normal(size=(3, 3)), perm=np.array([0, 1, 2])),
    )


def score_matrix_bytes():
    return grouped(
        "sizes",
        Case("B=8, H=16, L=4096, bfloat16", batch=8, n_heads=16, seq_len=4096, bytes_per_element=2),
        Case("B=1, H=32, L=32768, float32", batch=1, n_heads=32, seq_len=32768, bytes_per_element=4),
        Case("B=3, H=1, L=7, float64", batch=3, n_heads=1, seq_len=7, bytes_per_element=8),
    )


HIDDEN = {
    "ch04.project_qkv": project_qkv,
    "ch04.self_attention_forward": self_attention,
    "ch04.unpermute": unpermute,
    "ch04.score_matrix_bytes": score_matrix_bytes,
}


def predict_projection_parameters():
    return grouped("the count", Case("d_model=512, d_k=d_v=64"))


def fix_symmetric_scores():
    rng = np.random.default_rng(1406)
    n = rng.normal
    return (
        grouped(
            "shapes",
            Case("square weights, L=5", x=n(size=(5, 4)), W_q=n(size=(4, 4)), W_k=n(size=(4, 4))),
        )
        + grouped(
            "batch dimensions",
            Case("batch and heads", x=n(size=(2, 2, 3, 6)), W_q=n(size=(6, 2)), W_k=n(size=(6, 2))),
        )
        + grouped(
            "shapes",
            Case(
                "float32, L=4",
                x=n(size=(4, 5)).astype(np.float32),
                W_q=n(size=(5, 3)).astype(np.float32),
                W_k=n(size=(5, 3)).astype(np.float32),
            ),
        )
    )


HIDDEN.update(
    {
        "ch04.predict_projection_parameters": predict_projection_parameters,
        "ch04.fix_symmetric_scores": fix_symmetric_scores,
    }
)
