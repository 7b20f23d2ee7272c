"""Hidden cases, chapter 10 (attention for images): other sizes, several channels, float32, P = 1,
grids of one row or one point, windows cut short, images that fill the canvas or hold one pixel, no registers."""

import numpy as np

from attncourse.exercises import Case, grouped
from attncourse.exercises.chapters.ch10 import _conv_case, pool_case, resize_case


def resize_positions():
    rng = np.random.default_rng(11011)
    cases = [
        resize_case("the same grid: nothing to do", rng, 3, 3, 3, 3, 2),
        resize_case("one row of 3 to one row of 5", rng, 1, 3, 1, 5, 2),
        resize_case("2 x 2 to 1 x 1", rng, 2, 2, 1, 1, 3),
        resize_case("4 x 2 to 7 x 3", rng, 4, 2, 7, 3, 2),
        resize_case("float32, 2 x 4 to 3 x 6", rng, 2, 4, 3, 6, 3, np.float32),
    ]
    return grouped("new grid", *cases[0:4]) + grouped("dtype", *cases[4:5])


def window_attention_mask():
    return (
        grouped(
            "windows",
            Case("a 6 x 4 grid, windows of 2 x 2", gh=6, gw=4, M=2),
            Case("a 3 x 9 grid, windows of 3 x 3", gh=3, gw=9, M=3),
        )
        + grouped(
            "cut short",
            Case("a 5 x 3 grid, windows of 2 x 2", gh=5, gw=3, M=2),
            Case("a 7 x 5 grid, windows of 4 x 4", gh=7, gw=5, M=4),
            Case("a 2 x 7 grid, windows of 3 x 3", gh=2, gw=7, M=3),
        )
        + grouped(
            "edge",
            Case("one row of 5 patches, windows of 2 x 2", gh=1, gw=5, M=2),
            Case("one patch, windows of 3 x 3", gh=1, gw=1, M=3),
            Case("a 2 x 4 grid, windows of 1 x 1", gh=2, gw=4, M=1),
        )
    )


def predict_window_scores():
    return grouped("prediction", Case("240 x 240, P=16, windows of 7 x 7 moved by 3 patches, [CLS]"))


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


def patch_key_mask():
    cases = [
        Case("images one pixel short of the canvas", sizes=np.array([[3, 6], [4, 5]]), H=4, W=6, P=2),
        Case("1-pixel images, P=3", sizes=np.array([[1, 1], [1, 7], [6, 1]]), H=6, W=9, P=3),
        Case("one image a pixel larger than a patch, P=3", sizes=np.array([[4, 4]]), H=6, W=6, P=3),
        Case("one image, 7 x 5 in 8 x 8, P=4", sizes=np.array([[7, 5]]), H=8, W=8, P=4),
    ]
    return grouped("padded batch", *cases)


def pool_real_patches():
    rng = np.random.default_rng(11016)
    cases = [
        pool_case("no registers", rng, [(3, 4), (4, 1)], 4, 4, 2, 0, 3),
        pool_case("one patch per image, 5 registers", rng, [(2, 2), (1, 1)], 2, 2, 2, 5, 2),
        pool_case("P=1, 2 registers", rng, [(2, 3), (3, 1), (1, 1)], 3, 3, 1, 2, 2),
        pool_case(
            "float32, 8 x 12 canvas, P=4, 4 registers", rng, [(8, 9), (3, 12)], 8, 12, 4, 4, 3, np.float32
        ),
    ]
    return grouped("padded batch", *cases[0:3]) + grouped("dtype", *cases[3:4])


HIDDEN = {
    "ch10.resize_positions": resize_positions,
    "ch10.window_attention_mask": window_attention_mask,
    "ch10.predict_window_scores": predict_window_scores,
    "ch10.conv_as_matmul": conv_as_matmul,
    "ch10.padded_patch_mask": patch_key_mask,
    "ch10.pool_real_patches": pool_real_patches,
}
