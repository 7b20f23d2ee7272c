"""Hidden cases, chapter 10 (attention for images): other sizes, several channels, float32, P = 1."""

import numpy as np

from attncourse.exercises import Case, grouped
from attncourse.exercises.chapters.ch10 import _conv_case


def _patchify(images, P):  # only to build valid patches for the unpatchify cases
    B, C, H, W = images.shape
    x = images.reshape(B, C, H // P, P, W // P, P).transpose(0, 2, 4, 1, 3, 5)
    return x.reshape(B, (H // P) * (W // P), C * P * P)


def patchify_images():
    rng = np.random.default_rng(11001)
    cases = [
        Case("P=1: every pixel a patch", images=rng.normal(size=(2, 3, 3, 5)), patch_size=1),
        Case("P=H=W: one patch", images=rng.normal(size=(1, 2, 4, 4)), patch_size=4),
        Case(
            "float32, B=3, C=3, 8 x 12, P=4",
            images=rng.normal(size=(3, 3, 8, 12)).astype(np.float32),
            patch_size=4,
        ),
    ]
    return grouped("layout", *cases[0:2]) + grouped("dtype", *cases[2:3])


def favoured_patch_size():
    def case(name, rows, margin):
        P, acc, ms = (np.array(col) for col in zip(*rows))
        dtype = np.float32 if name.startswith("float32") else np.float64
        return Case(
            name, patch_size=P, accuracy=acc.astype(dtype), forward_ms=ms.astype(dtype), margin=margin
        )

    return (
        grouped(
            "seeds",
            case(
                "two seeds; P=8 has the best single run, P=4 the best mean",
                [
                    (4, 0.93, 10.0),
                    (4, 0.93, 10.5),
                    (8, 0.97, 3.0),
                    (8, 0.85, 3.1),
                    (16, 0.5, 1.0),
                    (16, 0.52, 1.1),
                ],
                0.01,
            ),
        )
        + grouped(
            "timing",
            case(
                "float32: P=2's fastest run beats P=4's slow mean",
                [(2, 0.9, 15.0), (2, 0.91, 400.0), (4, 0.9, 20.0), (4, 0.9, 21.0), (7, 0.6, 2.0)],
                0.05,
            ),
        )
        + grouped(
            "margin",
            case(
                "four sizes, the middle ones within the margin",
                [(1, 0.99, 700.0), (2, 0.985, 60.0), (2, 0.98, 61.0), (4, 0.982, 15.0), (8, 0.9, 4.0)],
                0.01,
            ),
        )
    )


def predict_embedding_parameters():
    return grouped("prediction", Case("32 x 32 RGB, P=4, d_model=48"))


def conv_as_matmul():
    rng = np.random.default_rng(11004)
    return (
        grouped(
            "overlap",
            _conv_case("B=3, C=2, 6 x 6, P=4, stride 1", rng, 3, 2, 6, 6, 2, 4, 1),
        )
        + grouped(
            "gaps",
            _conv_case("B=1, C=1, 9 x 5, P=1, stride 4", rng, 1, 1, 9, 5, 3, 1, 4),
        )
        + grouped(
            "dtype",
            _conv_case("float32, B=2, C=3, 7 x 5, P=3, stride 2", rng, 2, 3, 7, 5, 2, 3, 2, np.float32),
        )
    )


def images_from_patches():
    rng = np.random.default_rng(11005)
    cases = [
        Case("C=3, 4 x 6, P=2", patches=_patchify(rng.normal(size=(2, 3, 4, 6)), 2), patch_size=2, H=4, W=6),
        Case("P=3, 6 x 9", patches=rng.normal(size=(1, 6, 9)), patch_size=3, H=6, W=9),
        Case(
            "float32, 8 x 12, P=4",
            patches=rng.normal(size=(1, 6, 16)).astype(np.float32),
            patch_size=4,
            H=8,
            W=12,
        ),
    ]
    return grouped("grid", *cases[0:2]) + grouped("dtype", *cases[2:3])


def rollout_alpha():
    rng = np.random.default_rng(11006)
    cases = [
        Case(
            "alpha=0: attention only",
            weights=np.stack([rng.dirichlet(np.ones(3), size=(1, 2, 3)) for _ in range(2)]),
            alpha=0.0,
        ),
        Case(
            "alpha=1: residual only",
            weights=np.stack([rng.dirichlet(np.ones(4), size=(2, 1, 4)) for _ in range(3)]),
            alpha=1.0,
        ),
        Case(
            "float32, one layer, 4 heads, alpha=0.5",
            weights=rng.dirichlet(np.ones(6), size=(1, 1, 4, 6)).astype(np.float32),
            alpha=0.5,
        ),
    ]
    return grouped("rollout", *cases[0:2]) + grouped("dtype", *cases[2:3])


HIDDEN = {
    "ch10.patchify": patchify_images,
    "ch10.favoured_patch_size": favoured_patch_size,
    "ch10.predict_embedding_parameters": predict_embedding_parameters,
    "ch10.conv_as_matmul": conv_as_matmul,
    "ch10.fix_unpatchify": images_from_patches,
    "ch10.rollout_alpha": rollout_alpha,
}
