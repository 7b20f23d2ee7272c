"""Hidden cases, chapter 6 (masks): fully masked rows, broadcasting, float16, L != S."""

import numpy as np

from attncourse.exercises import Case, grouped


def _kinds(cases, *groups):
    """The cases, each put in the public group of its kind (same order)."""
    cases = list(cases)
    if len(cases) != len(groups):
        raise ValueError(f"{len(cases)} cases, {len(groups)} groups")
    for case, group in zip(cases, groups):
        case.group = group
    return cases


def _weights(rng, d, dtype=np.float64):
    names = ("W_q", "W_k", "W_v", "W_o")
    return {name: (rng.normal(size=(d, d)) / np.sqrt(d)).astype(dtype) for name in names}


def make_causal_mask():
    return _kinds(
        [
            Case("more queries than keys: L=5, S=3", L=5, S=3),
            Case("one query, S=3", L=1, S=3),
            Case("L=S=6", L=6, S=6),
            Case("L=2, S=7", L=2, S=7),
        ],
        "masks",
        "masks",
        "masks",
        "masks",
    )


def make_padding_mask():
    return _kinds(
        [
            Case("full length", lengths=np.array([5]), S=5),
            Case("lengths [0, 0, 1]", lengths=np.array([0, 0, 1]), S=3),
            Case("lengths [3, 1, 2, 5], S=6", lengths=np.array([3, 1, 2, 5]), S=6),
        ],
        "masks",
        "masks",
        "masks",
    )


def masked_softmax():
    rng = np.random.default_rng(1603)
    causal = np.tril(np.ones((3, 4), dtype=bool))
    return _kinds(
        [
            Case(
                "every row fully masked but one",
                scores=rng.normal(size=(3, 3)),
                mask=np.array([[0, 0, 0], [1, 0, 1], [0, 0, 0]], dtype=bool),
            ),
            Case(
                "a (3, 4) mask broadcast over a batch (2, 3, 4)",
                scores=rng.normal(size=(2, 3, 4)),
                mask=causal,
            ),
            Case(
                "large scores",
                scores=rng.normal(size=(2, 4)) * 1000,
                mask=np.array([[1, 1, 0, 1], [0, 1, 1, 1]], dtype=bool),
            ),
            Case(
                "float16 with a fully masked row",
                scores=rng.normal(size=(3, 4)).astype(np.float16),
                mask=np.array([[1, 1, 1, 1], [0, 0, 0, 0], [0, 0, 1, 1]], dtype=bool),
            ),
            Case("nothing masked", scores=rng.normal(size=(2, 5)), mask=np.ones((2, 5), dtype=bool)),
        ],
        "fully masked rows",
        "batch dimensions",
        "values",
        "fully masked rows",
        "values",
    )


def masked_attention():
    rng = np.random.default_rng(1604)
    n = rng.normal
    pad = np.array([[1, 1, 0, 0, 0], [0, 0, 0, 0, 0]], dtype=bool)[:, None, :]  # (B, 1, S)
    return _kinds(
        [
            Case(
                "a padding mask (B, 1, S), one sequence fully padded",
                q=n(size=(2, 3, 4)),
                k=n(size=(2, 5, 4)),
                v=n(size=(2, 5, 2)),
                mask=pad,
            ),
            Case(
                "causal, more queries than keys",
                q=n(size=(5, 3)),
                k=n(size=(3, 3)),
                v=n(size=(3, 3)),
                mask=np.tril(np.ones((5, 3), dtype=bool)),
            ),
            Case(
                "float16, one query sees nothing",
                q=n(size=(3, 8)).astype(np.float16),
                k=n(size=(4, 8)).astype(np.float16),
                v=n(size=(4, 2)).astype(np.float16),
                mask=np.array([[1, 0, 1, 0], [0, 0, 0, 0], [1, 1, 1, 1]], dtype=bool),
            ),
            Case(
                "batch and heads with a (L, S) mask",
                q=n(size=(2, 2, 3, 4)),
                k=n(size=(2, 2, 3, 4)),
                v=n(size=(2, 2, 3, 5)),
                mask=np.tril(np.ones((3, 3), dtype=bool)),
            ),
            Case(
                "large scores",
                q=n(size=(3, 4)) * 30,
                k=n(size=(3, 4)) * 30,
                v=n(size=(3, 2)),
                mask=np.tril(np.ones((3, 3), dtype=bool)),
            ),
        ],
        "batch dimensions",
        "values",
        "fully masked rows",
        "batch dimensions",
        "values",
    )


def mask_from_hf():
    return _kinds(
        [
            Case("one sequence, no padding", attention_mask=np.array([[1, 1, 1, 1]])),
            Case("left padding", attention_mask=np.array([[0, 0, 1, 1], [0, 1, 1, 1]])),
            Case(
                "int32 input",
                attention_mask=np.array([[1, 1, 0, 0, 0], [1, 1, 1, 1, 0], [1, 0, 0, 0, 0]], dtype=np.int32),
            ),
        ],
        "masks",
        "masks",
        "masks",
    )


def masked_multi_head_attention():
    rng = np.random.default_rng(1606)
    n = rng.normal
    causal = np.tril(np.ones((4, 4), dtype=bool))
    pad = np.array([[1, 1, 1, 1], [1, 1, 0, 0], [0, 0, 0, 0]], dtype=bool)[:, None, None, :]  # (B, 1, 1, S)
    cases = [
        Case(
            "causal and padding together (B, 1, L, L), a fully padded sequence",
            x=n(size=(3, 4, 8)),
            **_weights(rng, 8),
            n_heads=2,
            mask=pad & causal,
        ),
        Case(
            "one head, causal",
            x=n(size=(2, 3, 4)),
            **_weights(rng, 4),
            n_heads=1,
            mask=np.tril(np.ones((3, 3), dtype=bool)),
        ),
        Case(
            "float32, 4 heads, padding",
            x=n(size=(2, 5, 8)).astype(np.float32),
            **_weights(rng, 8, np.float32),
            n_heads=4,
            mask=np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], dtype=bool)[:, None, None, :],
        ),
        Case(
            "per-head mask (1, H, L, L)",
            x=n(size=(1, 3, 6)),
            **_weights(rng, 6),
            n_heads=2,
            mask=np.stack([np.tril(np.ones((3, 3), dtype=bool)), np.ones((3, 3), dtype=bool)])[None],
        ),
        Case(
            "4 heads, causal, d_model=16", x=n(size=(2, 4, 16)), **_weights(rng, 16), n_heads=4, mask=causal
        ),
    ]
    # scored in groups, as the public cases: a one-head case passes a wrong head scale by coincidence
    groups = ["fully masked rows", "causal masks", "padding masks", "per-head masks", "causal masks"]
    for case, group in zip(cases, groups):
        case.group = group
    return cases


HIDDEN = {
    "ch06.make_causal_mask": make_causal_mask,
    "ch06.make_padding_mask": make_padding_mask,
    "ch06.masked_softmax": masked_softmax,
    "ch06.masked_attention": masked_attention,
    "ch06.mask_from_hf": mask_from_hf,
    "ch06.masked_multi_head_attention": masked_multi_head_attention,
}


def sliding_window_mask():
    # an off-by-one window passes "longer than the sequence" by coincidence: it is scored with "window 1"
    return grouped(
        "edge windows",
        Case("window 1: only itself", L=4, window=1),
        Case("window longer than the sequence", L=3, window=5),
    ) + grouped("windows", Case("L=8, window 3", L=8, window=3))


def fix_causal_leak():
    rng = np.random.default_rng(1608)
    n = rng.normal
    return _kinds(
        [
            Case("L=6", q=n(size=(6, 4)), k=n(size=(6, 4)), v=n(size=(6, 2))),
            Case("batch and heads", q=n(size=(2, 2, 4, 3)), k=n(size=(2, 2, 4, 3)), v=n(size=(2, 2, 4, 3))),
            Case(
                "float32",
                q=n(size=(5, 8)).astype(np.float32),
                k=n(size=(5, 8)).astype(np.float32),
                v=n(size=(5, 2)).astype(np.float32),
            ),
        ],
        "values",
        "batch dimensions",
        "values",
    )


def padded_cross_attention():
    rng = np.random.default_rng(1609)
    n = rng.normal
    return _kinds(
        [
            Case(
                "B=3, one query, S=6, lengths [6, 1, 0]",
                q=n(size=(3, 1, 4)),
                k=n(size=(3, 6, 4)),
                v=n(size=(3, 6, 2)),
                key_lengths=np.array([6, 1, 0]),
            ),
            Case(
                "more queries than keys: L=5, S=2",
                q=n(size=(2, 5, 3)),
                k=n(size=(2, 2, 3)),
                v=n(size=(2, 2, 4)),
                key_lengths=np.array([1, 2]),
            ),
            Case(
                "float32, L=4, S=5",
                q=n(size=(2, 4, 8)).astype(np.float32),
                k=n(size=(2, 5, 8)).astype(np.float32),
                v=n(size=(2, 5, 3)).astype(np.float32),
                key_lengths=np.array([5, 3]),
            ),
            Case(
                "float16 with a fully padded source",
                q=n(size=(2, 3, 4)).astype(np.float16),
                k=n(size=(2, 4, 4)).astype(np.float16),
                v=n(size=(2, 4, 2)).astype(np.float16),
                key_lengths=np.array([0, 2]),
            ),
        ],
        "fully padded sources",
        "values",
        "values",
        "fully padded sources",
    )


HIDDEN.update(
    {
        "ch06.sliding_window_mask": sliding_window_mask,
        "ch06.fix_causal_leak": fix_causal_leak,
        "ch06.padded_cross_attention": padded_cross_attention,
    }
)


def masked_uniform_entropy():
    return _kinds(
        [
            Case("a fully padded row", lengths=np.array([0, 5, 2]), S=5),
            Case("long sequences", lengths=np.array([1000, 4096, 17]), S=4096),
        ],
        "entropies",
        "entropies",
    )


HIDDEN["ch06.masked_uniform_entropy"] = masked_uniform_entropy
