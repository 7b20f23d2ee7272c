"""Hidden cases, Appendix A (spot the bug)."""

import numpy as np

from attncourse.exercises import Case, grouped


def transpose_typo():
    rng = np.random.default_rng(1901)
    n = rng.normal
    cases = [
        Case("batch and heads, L != S", q=n(size=(2, 3, 4, 8)), k=n(size=(2, 3, 5, 8))),
        Case("float32", q=n(size=(3, 4)).astype(np.float32), k=n(size=(6, 4)).astype(np.float32)),
        Case("one query", q=n(size=(1, 5)), k=n(size=(2, 5))),
    ]
    return grouped("shape", *cases[0:1]) + grouped("dtype", *cases[1:2]) + grouped("shape", *cases[2:3])


def head_scale():
    rng = np.random.default_rng(1902)
    n = rng.normal
    cases = [
        Case(
            "8 heads, d_model=32", x=n(size=(1, 4, 32)), W_q=n(size=(32, 32)), W_k=n(size=(32, 32)), n_heads=8
        ),
        Case(
            "3 heads, d_model=6, B=3", x=n(size=(3, 2, 6)), W_q=n(size=(6, 6)), W_k=n(size=(6, 6)), n_heads=3
        ),
    ]
    return grouped("heads", *cases[0:2])


def mask_polarity():
    rng = np.random.default_rng(1903)
    n = rng.normal
    cases = [
        Case("L=S=5", q=n(size=(5, 2)), k=n(size=(5, 2)), v=n(size=(5, 4))),
        Case("batch and heads", q=n(size=(2, 2, 3, 4)), k=n(size=(2, 2, 3, 4)), v=n(size=(2, 2, 3, 4))),
        Case(
            "float32",
            q=n(size=(4, 3)).astype(np.float32),
            k=n(size=(4, 3)).astype(np.float32),
            v=n(size=(4, 2)).astype(np.float32),
        ),
    ]
    return grouped("shape", *cases[0:2]) + grouped("dtype", *cases[2:3])


def plain_list():
    cases = [
        Case("d_model=16, 4 heads", d_model=16, n_heads=4),
        Case("d_model=5, 1 head", d_model=5, n_heads=1),
    ]
    return grouped("counts", *cases[0:2])


def swapped_qk():
    rng = np.random.default_rng(1905)
    n = rng.normal
    cases = [
        Case("L=1, S=5", q=n(size=(1, 4)), k=n(size=(5, 4))),
        Case("L=6, S=2", q=n(size=(6, 3)), k=n(size=(2, 3))),
        Case("L=S=4", q=n(size=(4, 4)), k=n(size=(4, 4))),
    ]
    return grouped("shape", *cases[0:3])


HIDDEN = {
    "bugs.transpose_typo": transpose_typo,
    "bugs.head_scale": head_scale,
    "bugs.mask_polarity": mask_polarity,
    "bugs.plain_list": plain_list,
    "bugs.swapped_qk": swapped_qk,
}
