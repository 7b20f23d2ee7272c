"""Chapter 10 exercises: learned positions resized to a new grid, window attention on the patch grid,
the scores it computes, the patch embedding as a convolution, the key mask of a padded image batch, and
mean-pooling its real patches with register tokens."""

from __future__ import annotations

import numpy as np

from ..engine.registry import STUB_LINE, Case, Diagnosis, Exercise, grouped, register

__all__: list = []


# ----------------------------------------------------------------------------- 10.1 resize positions (extend)
def _axis_coords(old, new, half_pixel=False):
    """Where each of `new` grid points sits on an axis of `old` grid points (old indices, float)."""
    r = np.arange(new, dtype=np.float64)
    if half_pixel:  # pixel centres: the corners of the two grids' areas meet
        return np.clip((r + 0.5) * old / new - 0.5, 0, old - 1)
    return r * (old - 1) / (new - 1) if new > 1 else np.zeros(1)


def _blend(grid, coords, axis):
    lo = np.floor(coords).astype(int)
    hi = np.minimum(lo + 1, grid.shape[axis] - 1)
    frac = (coords - lo).reshape([-1 if a == axis else 1 for a in range(grid.ndim)])
    return (1 - frac) * np.take(grid, lo, axis=axis) + frac * np.take(grid, hi, axis=axis)


def _resize(pos, gh, gw, nh, nw, mode="right"):
    d = pos.shape[-1]
    grid = np.asarray(pos[1:], dtype=np.float64).reshape(gh, gw, d)
    if mode == "nearest":
        rows, cols = np.rint(_axis_coords(gh, nh)).astype(int), np.rint(_axis_coords(gw, nw)).astype(int)
        new = grid[rows][:, cols]
    else:
        half = mode == "half_pixel"
        new = _blend(_blend(grid, _axis_coords(gh, nh, half), 0), _axis_coords(gw, nw, half), 1)
    if mode == "column_major":  # the new grid listed column by column
        new = new.swapaxes(0, 1)
    return np.concatenate([np.asarray(pos[:1], dtype=np.float64), new.reshape(nh * nw, d)], axis=0)


def resize_case(name, rng, gh, gw, nh, nw, d, dtype=np.float64):
    """A case of 10.1: a learned table of 1 + gh * gw rows (CLS first) to resize to nh x nw."""
    return Case(name, pos=rng.normal(size=(1 + gh * gw, d)).astype(dtype), gh=gh, gw=gw, nh=nh, nw=nw)


def _resize_cases():
    rng = np.random.default_rng(1011)
    return grouped(
        "new grid",
        resize_case("2 x 2 grid to 3 x 3, d=2", rng, 2, 2, 3, 3, 2),
        resize_case("2 x 3 grid to 4 x 5, d=3", rng, 2, 3, 4, 5, 3),
        resize_case("4 x 4 grid to 3 x 2, d=2", rng, 4, 4, 3, 2, 2),
    ) + grouped(
        "dtype",
        resize_case("float32, 3 x 2 grid to 5 x 3, d=4", rng, 3, 2, 5, 3, 4, np.float32),
    )


register(
    Exercise(
        id="ch10.resize_positions",
        number="10.1",
        title="learned positions for a new grid",
        points=3,
        function="resize_positions",
        stub=STUB_LINE,
        kind="extend",
        hint="keep row 0; view the other rows as a (gh, gw, d) grid; place each new row and column on the old "
        "axis by the corner rule and blend its two neighbours, along one axis and then the other",
        description="A ViT with learned positions was trained on a grid of `gh x gw` patches: its table "
        "`pos (1 + gh * gw, d)` holds the [CLS] position in row 0, then the grid's positions listed row by "
        "row. To run it on images of another size, the grid part is resized to `nh x nw` by bilinear "
        "interpolation with the corners aligned. What must hold: the new grid spans the old one from "
        "corner to corner, so its four corner positions are the old four corners, and its rows lie "
        "evenly spaced from the old first row to the old last row, its columns likewise (a new grid of "
        "one row lies on the old first row, of one column on the old first column); where a new grid "
        "point falls on an old one, it takes that old position; in between, each of the `d` coordinates "
        "is bilinear in the point's place among the four old grid points around it. The [CLS] row is "
        "kept as it is. Return the new table `(1 + nh * nw, d)`, [CLS] first, the new grid row by row.",
        solution='''
            def resize_positions(pos, gh, gw, nh, nw):
                """(1 + gh*gw, d) -> (1 + nh*nw, d): the grid part resized bilinearly, corners aligned."""
                ### BEGIN SOLUTION
                grid = pos[1:].reshape(gh, gw, -1)  # (gh, gw, d), row by row

                def resize_axis(g, old, new, axis):  # linear interpolation along one axis, corners aligned
                    x = np.arange(new) * (old - 1) / (new - 1) if new > 1 else np.zeros(1)
                    lo = np.floor(x).astype(int)
                    hi = np.minimum(lo + 1, old - 1)
                    t = (x - lo).reshape([-1 if a == axis else 1 for a in range(3)])
                    return (1 - t) * np.take(g, lo, axis=axis) + t * np.take(g, hi, axis=axis)

                grid = resize_axis(resize_axis(grid, gh, nh, 0), gw, nw, 1)  # (nh, nw, d)
                return np.concatenate([pos[:1], grid.reshape(nh * nw, -1)], axis=0)
                ### END SOLUTION
        ''',
        reference=_resize,
        public_cases=_resize_cases,
        outputs=("pos",),
        diagnoses=(
            Diagnosis(
                "the new table runs from the old corners' neighbours, not from the corners: where does "
                "new row 0 sit, and the last new row?",
                name="corners not aligned",
                hint="new row r sits at r * (gh - 1) / (nh - 1): row 0 on old row 0, the last on the last",
                variant=lambda pos, gh, gw, nh, nw: _resize(pos, gh, gw, nh, nw, "half_pixel"),
            ),
            Diagnosis(
                "each new position copies one old position: how are the neighbours of a point between "
                "grid points combined?",
                name="nearest neighbour",
                hint="blend the two neighbours linearly by the distance to each",
                variant=lambda pos, gh, gw, nh, nw: _resize(pos, gh, gw, nh, nw, "nearest"),
            ),
            Diagnosis(
                "the right values in the wrong rows of the table: in which order is the new grid listed?",
                name="new grid column by column",
                hint="list the new grid row by row, as the old one was",
                variant=lambda pos, gh, gw, nh, nw: _resize(pos, gh, gw, nh, nw, "column_major"),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 10.2 windows on the grid (extend)
def _window_mask(gh, gw, M, how="right"):
    """(1 + gh*gw, 1 + gh*gw) boolean: patches attend within their M x M window of the grid, [CLS] everywhere."""
    idx = np.arange(gh * gw)
    r, c = idx // gw, idx % gw  # the grid listed row by row
    if how == "column major":  # the grid read column by column
        r, c = idx % gh, idx // gh
    window = (r // M) * (-(-gw // M)) + c // M  # one id per window, windows cut short included
    if how == "ids collide":  # windows per row counted with a floor: a cut-short window shares an id
        window = (r // M) * (gw // M) + c // M
    if how == "reading order":  # M*M consecutive tokens taken for a square window
        window = idx // (M * M)
    same = window[:, None] == window[None, :]
    if how == "sliding":  # a neighbourhood around each patch instead of fixed windows
        same = (np.abs(r[:, None] - r[None, :]) < M) & (np.abs(c[:, None] - c[None, :]) < M)
    mask = np.ones((1 + gh * gw, 1 + gh * gw), dtype=bool)
    mask[1:, 1:] = same
    if how == "no cls":  # [CLS] treated as a window of its own
        mask[0, 1:] = mask[1:, 0] = False
    return mask


def _window_cases():
    return (
        grouped(
            "windows",
            Case("a 4 x 4 grid, windows of 2 x 2", gh=4, gw=4, M=2),
            Case("a 2 x 6 grid, windows of 2 x 2", gh=2, gw=6, M=2),
        )
        + grouped(
            "cut short",
            Case(
                "a 3 x 5 grid, windows of 2 x 2: the last row and column of windows cut short",
                gh=3,
                gw=5,
                M=2,
            ),
            Case("a 4 x 7 grid, windows of 3 x 3", gh=4, gw=7, M=3),
        )
        + grouped(
            "edge",
            Case("a 2 x 3 grid inside one window of 4 x 4", gh=2, gw=3, M=4),
            Case("one row of 4 patches, windows of 3 x 3", gh=1, gw=4, M=3),
            Case("a 3 x 2 grid, windows of 1 x 1", gh=3, gw=2, M=1),
        )
    )


register(
    Exercise(
        id="ch10.window_attention_mask",
        number="10.2",
        title="attention inside windows of the grid",
        points=2,
        function="window_attention_mask",
        stub=STUB_LINE,
        hint="give each patch its grid row and column, and each window an id from the window row and column "
        "it falls in; [CLS] is in every window",
        kind="extend",
        description="Some vision transformers (Swin, Liu et al., 2021) let a patch attend only to the "
        "patches of its own window: the `gh x gw` grid of patches is tiled into windows of `M x M` patches "
        "starting from the top-left corner, and when `M` does not divide `gh` or `gw`, the windows of the "
        "last rows or columns are cut short. This model also keeps a [CLS] token, which may attend to every "
        "token and which every token may attend to. The tokens are ordered as in this chapter: [CLS], then "
        "the patches row by row. Return the boolean mask `(1 + gh*gw, 1 + gh*gw)`, True where query token "
        "`i` may attend to key token `j`. numpy only.",
        solution='''
            def window_attention_mask(gh, gw, M):
                """(1 + gh*gw, 1 + gh*gw) boolean: each patch sees its M x M window of the grid; [CLS] sees all."""
                ### BEGIN SOLUTION
                row, col = np.divmod(np.arange(gh * gw), gw)  # each patch's place on the grid
                same_rows = row[:, None] // M == row[None, :] // M  # (N, N)
                same_cols = col[:, None] // M == col[None, :] // M
                mask = np.ones((1 + gh * gw, 1 + gh * gw), dtype=bool)  # [CLS] row and column stay True
                mask[1:, 1:] = same_rows & same_cols
                return mask
                ### END SOLUTION
        ''',
        reference=_window_mask,
        public_cases=_window_cases,
        outputs=("mask",),
        diagnoses=(
            Diagnosis(
                "your windows are runs of tokens in reading order, not squares of the grid: which tokens "
                "lie in one M x M square?",
                name="windows in reading order",
                hint="a patch's grid row is its index // gw and its column its index % gw; a window is a "
                "range of rows and a range of columns",
                variant=lambda gh, gw, M: _window_mask(gh, gw, M, "reading order"),
            ),
            Diagnosis(
                "your windows are right when M divides the grid, but patches of different cut-short "
                "windows attend to each other: do two windows ever share an id?",
                name="window ids collide",
                hint="number the windows with the count of windows per row rounded up, or compare window "
                "rows and window columns separately",
                variant=lambda gh, gw, M: _window_mask(gh, gw, M, "ids collide"),
            ),
            Diagnosis(
                "each patch sees a neighbourhood centred on itself: the prompt's windows are fixed tiles "
                "of the grid",
                name="sliding neighbourhood",
                hint="two patches attend to each other only when they lie in the same tile",
                variant=lambda gh, gw, M: _window_mask(gh, gw, M, "sliding"),
            ),
            Diagnosis(
                "your mask is right on square grids only: in which order are the patches listed?",
                name="grid read column by column",
                hint="row by row: the grid row of patch n is n // gw",
                variant=lambda gh, gw, M: _window_mask(gh, gw, M, "column major"),
            ),
            Diagnosis(
                "[CLS] reads only itself and no patch reads it: what does the prompt say of [CLS]?",
                name="[CLS] cut off",
                hint="row 0 and column 0 are all True",
                variant=lambda gh, gw, M: _window_mask(gh, gw, M, "no cls"),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 10.3 window scores (predict)
def _window_scores(side=240, P=16, M=7, shift=3, windows="cut short", cls="both"):
    """Query-key scores of one head of window attention on one image, the tiling of M x M windows
    moved `shift` patches up and left of the grid's corner (0: exercise 10.2's windows)."""
    g = side // P  # patches per side of the grid
    starts = range(-shift, g, M)  # first patch row (or column) of each window along a side
    sides = [min(start + M, g) - max(start, 0) for start in starts]
    if windows == "all full":  # every window counted with M x M patches
        sides = [M] * len(sides)
    inside = sum((a * b) ** 2 for a in sides for b in sides)
    n = g * g  # patches
    extra = {"both": 2 * n + 1, "none": 0, "one way": n + 1, "corner twice": 2 * n + 2}[cls]
    return np.array(inside + extra)


register(
    Exercise(
        id="ch10.predict_window_scores",
        number="10.3",
        title="the scores of a windowed ViT",
        points=2,
        function="predict_window_scores",
        stub=STUB_LINE,
        hint="list the windows along one side of the grid with their sizes; a window of n patches "
        "computes n * n scores; then add [CLS]'s row and column once each",
        kind="predict",
        description="A ViT reads 240 x 240 images in 16 x 16 patches with window attention, in two kinds "
        "of layers that alternate, as in Swin. The first kind is exercise 10.2's: windows of 7 x 7 "
        "patches tiled from the top-left corner of the grid, cut short where they do not fit. The second "
        "kind moves the whole tiling 3 patches up and 3 patches to the left, so that the grid's top-left "
        "patch sits in row 3, column 3 (counting from 0) of its window; a patch attends only to the "
        "patches of its window, and the windows are cut short where they leave the grid. Both kinds keep "
        "a [CLS] token that attends to every token and that every token attends to. How many query-key "
        "scores does one head of one layer of the second kind compute for one image, counting one score "
        "per pair (query, key) its mask lets through? Write the number down, exactly.",
        solution='''
            def predict_window_scores():
                """Scores of one head of a shifted window layer, 240 x 240 image, P=16, 7 x 7 windows, [CLS]."""
                ### BEGIN SOLUTION
                sides = [4, 7, 4]  # a 15 x 15 grid; windows start at patch -3, 4 and 11 along each side
                inside = sum((a * b) ** 2 for a in sides for b in sides)  # each window: its patches squared
                cls = 2 * 15 * 15 + 1  # [CLS] reads every token, and every patch reads [CLS]
                return inside + cls
                ### END SOLUTION
        ''',
        reference=_window_scores,
        public_cases=lambda: grouped(
            "prediction", Case("240 x 240, P=16, windows of 7 x 7 moved by 3 patches, [CLS]")
        ),
        tolerance=(0.0, 0.0),
        diagnoses=(
            Diagnosis(
                "your count is the first kind of layer's: where do the second kind's windows lie?",
                name="shift ignored",
                hint="the tiling starts 3 patches before the grid's first row and first column",
                variant=lambda: _window_scores(shift=0),
            ),
            Diagnosis(
                "your windows are moved the other way: which patch of its window is the grid's top-left patch?",
                name="tiling moved down and right",
                hint="the grid's patch (0, 0) is in row 3, column 3 of its window, so that window starts 3 "
                "patches before the grid",
                variant=lambda: _window_scores(shift=4),
            ),
            Diagnosis(
                "your count treats every window as whole: which windows does the grid cut short?",
                name="windows counted whole",
                hint="the grid has 15 patches a side; the moved tiling cuts the first and the last window "
                "along each side",
                variant=lambda: _window_scores(windows="all full"),
            ),
            Diagnosis(
                "your count leaves out the [CLS] token's scores",
                name="[CLS] left out",
                hint="[CLS] reads every token and every patch reads [CLS]",
                variant=lambda: _window_scores(cls="none"),
            ),
            Diagnosis(
                "your count has [CLS] in one direction only: it reads every token, and every token reads it",
                name="[CLS] one way",
                hint="add [CLS]'s row and its column",
                variant=lambda: _window_scores(cls="one way"),
            ),
            Diagnosis(
                "one score too many: is the score of [CLS] with itself in its row or its column?",
                name="[CLS] with itself counted twice",
                hint="the row and the column of [CLS] share one entry",
                variant=lambda: _window_scores(cls="corner twice"),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 10.4 strided conv (derive)
def _windows(images, P, stride):
    """(B, C, Ho, P, Wo, P): every P x P window whose corner is on the stride grid."""
    H, W = images.shape[-2:]
    rows = np.arange((H - P) // stride + 1)[:, None] * stride + np.arange(P)  # (Ho, P)
    cols = np.arange((W - P) // stride + 1)[:, None] * stride + np.arange(P)  # (Wo, P)
    return images[:, :, rows[:, :, None, None], cols[None, None, :, :]]


def _conv(images, weight, bias, stride, mode="right"):
    P = weight.shape[-1]
    if mode == "flipped":  # a textbook convolution: the kernel turned by 180 degrees
        weight = weight[..., ::-1, ::-1]
    if mode == "kernel_transposed":
        weight = np.swapaxes(weight, -1, -2)
    out = np.einsum("bchpwq,dcpq->bdhw", _windows(images, P, stride), weight)
    return out if mode == "no_bias" else out + bias[None, :, None, None]


def _conv_case(name, rng, B, C, H, W, D, P, stride, dtype=np.float64):
    return Case(
        name,
        images=rng.normal(size=(B, C, H, W)).astype(dtype),
        weight=rng.normal(size=(D, C, P, P)).astype(dtype),
        bias=rng.normal(size=D).astype(dtype),
        stride=stride,
    )


def _conv_cases():
    rng = np.random.default_rng(10045)
    return (
        grouped(
            "overlap",
            _conv_case("B=2, C=1, 5 x 5, P=3, stride 1 (windows overlap)", rng, 2, 1, 5, 5, 2, 3, 1),
            _conv_case("B=1, C=2, 6 x 7, P=3, stride 2 (overlap by one pixel)", rng, 1, 2, 6, 7, 3, 3, 2),
        )
        + grouped(
            "gaps",
            _conv_case("B=1, C=3, 7 x 8, P=2, stride 3 (pixels skipped)", rng, 1, 3, 7, 8, 4, 2, 3),
            _conv_case("B=2, C=2, 4 x 6, P=2, stride 2 (the patch embedding)", rng, 2, 2, 4, 6, 3, 2, 2),
        )
        + grouped(
            "dtype",
            _conv_case("float32, B=1, C=2, 5 x 6, P=2, stride 1", rng, 1, 2, 5, 6, 3, 2, 1, np.float32),
        )
    )


register(
    Exercise(
        id="ch10.conv_as_matmul",
        number="10.4",
        title="a convolution whose windows overlap",
        points=3,
        function="conv_as_matmul",
        stub=STUB_LINE,
        kind="derive",
        description="The chapter's patch embedding is `Conv2d(C, D, P, stride=P)`: its windows tile the "
        "image. Some ViTs embed overlapping patches instead (stride below `P`), and a stride above `P` "
        "skips pixels. Compute `Conv2d(C, D, kernel_size=P, stride=stride)` without padding, as PyTorch "
        "defines it (each output is a window's dot product with the kernel, the kernel not flipped): "
        "from `images (B, C, H, W)`, `weight (D, C, P, P)`, `bias (D,)` and the int `stride`, return "
        "`(B, D, Ho, Wo)`: one output for every place of the window, `stride` pixels apart down and "
        "across from the top-left corner, where the window lies wholly inside the image. Numpy only: no "
        "convolution routine, no `patchify`.",
        solution='''
            def conv_as_matmul(images, weight, bias, stride):
                """Conv2d(C, D, P, stride) without padding: (B, C, H, W) -> (B, D, Ho, Wo)."""
                ### BEGIN SOLUTION
                P = weight.shape[-1]
                H, W = images.shape[-2:]
                rows = np.arange((H - P) // stride + 1)[:, None] * stride + np.arange(P)  # (Ho, P) pixel rows
                cols = np.arange((W - P) // stride + 1)[:, None] * stride + np.arange(P)  # (Wo, P) pixel cols
                x = images[:, :, rows[:, :, None, None], cols[None, None, :, :]]  # (B, C, Ho, P, Wo, P)
                out = np.einsum("bchpwq,dcpq->bdhw", x, weight)  # each kernel against each window
                return out + bias[None, :, None, None]
                ### END SOLUTION
        ''',
        reference=_conv,
        public_cases=_conv_cases,
        hint="window (i, j) holds pixel rows i*stride .. i*stride+P-1 and the same columns: gather those "
        "windows, then one dot product per window and kernel",
        diagnoses=(
            Diagnosis(
                "every output is off by a constant per output channel",
                name="bias missing",
                hint="add the bias",
                variant=lambda images, weight, bias, stride: _conv(images, weight, bias, stride, "no_bias"),
            ),
            Diagnosis(
                "right where the kernel is symmetric, wrong elsewhere: you turned the kernel round. Does "
                "Conv2d flip its kernel?",
                name="kernel flipped",
                hint="PyTorch's Conv2d is a cross-correlation: pixel (p, q) of a window meets weight[..., p, q]",
                variant=lambda images, weight, bias, stride: _conv(images, weight, bias, stride, "flipped"),
            ),
            Diagnosis(
                "the kernel's rows meet the window's columns: which axis of weight (D, C, P, P) is the "
                "pixel row?",
                name="kernel transposed",
                hint="weight[d, c, p, q] multiplies the pixel in row p, column q of the window",
                variant=lambda images, weight, bias, stride: _conv(
                    images, weight, bias, stride, "kernel_transposed"
                ),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 10.5 padded batch mask (diagnose)
def _real_patches(sizes, H, W, P, floor=False, transposed=False):
    """(B, H/P, W/P) boolean: patch (r, c) of the padded canvas holds a pixel of image b."""
    sizes = np.asarray(sizes)
    h, w = sizes[:, 0], sizes[:, 1]
    if floor:  # only the patches that lie wholly inside the image
        h, w = (h // P) * P, (w // P) * P
    rows = np.arange(H // P) * P  # first pixel row of each grid row
    cols = np.arange(W // P) * P
    real = (rows[None, :, None] < h[:, None, None]) & (cols[None, None, :] < w[:, None, None])
    if transposed:  # the grid listed column by column
        real = real.swapaxes(1, 2)
    return real


def _key_mask(sizes, H, W, P, floor=False, transposed=False, cls=True):
    real = _real_patches(sizes, H, W, P, floor, transposed)
    B = real.shape[0]
    return np.concatenate([np.full((B, 1), cls), real.reshape(B, -1)], axis=1)


def _sizes(*pairs):
    return np.array(pairs, dtype=np.int64)


def _mask_cases():
    return grouped(
        "padded batch",
        Case("3 images in an 8 x 8 canvas, P=4", sizes=_sizes((8, 8), (4, 7), (5, 4)), H=8, W=8, P=4),
        Case("2 images in a 6 x 9 canvas, P=3", sizes=_sizes((5, 9), (6, 4)), H=6, W=9, P=3),
        Case("2 images in a 4 x 6 canvas, P=2", sizes=_sizes((3, 5), (4, 2)), H=4, W=6, P=2),
    )


register(
    Exercise(
        id="ch10.padded_patch_mask",
        number="10.5",
        title="the key mask of a padded image batch",
        points=2,
        function="patch_key_mask",
        hint="compare what each patch covers with the image's height and width",
        kind="diagnose",
        description="A batch of images of different sizes is served to one ViT by pasting each image "
        "`b` (`sizes[b] = (h, w)`, an integer array `(B, 2)`) into the top-left corner of an `H x W` "
        "canvas of zeros, `H` and `W` multiples of the patch size `P`; the canvas is cut into patches as "
        "in this chapter ([CLS] first, then the `(H/P)(W/P)` patches row by row). `patch_key_mask` "
        "should return the boolean key mask `(B, 1 + (H/P)(W/P))` that lets attention read [CLS] and "
        "every patch that holds at least one pixel of the image, and no patch of padding alone. Its "
        "masks are wrong on some batches. Find the bug and fix it.",
        solution='''
            def patch_key_mask(sizes, H, W, P):
                """(B, 1 + (H/P)(W/P)) boolean: [CLS] and the patches that hold a pixel of the image."""
                B = sizes.shape[0]
                rows = np.arange(H // P) * P  # the first pixel row of each grid row
                cols = np.arange(W // P) * P  # the first pixel column of each grid column
                ### BEGIN SOLUTION
                h, w = sizes[:, 0], sizes[:, 1]
                ### END SOLUTION
                real = (rows[None, :, None] < h[:, None, None]) & (cols[None, None, :] < w[:, None, None])
                return np.concatenate([np.ones((B, 1), dtype=bool), real.reshape(B, -1)], axis=1)
        ''',
        stub="h, w = sizes[:, 0] // P * P, sizes[:, 1] // P * P",
        reference=_key_mask,
        public_cases=_mask_cases,
        outputs=("mask",),
        diagnoses=(
            Diagnosis(
                "some images lose patches that hold their pixels: which patches does each image reach?",
                name="edge patches dropped",
                hint="a patch is real when its first pixel row is below h and its first pixel column below w",
                variant=lambda sizes, H, W, P: _key_mask(sizes, H, W, P, floor=True),
            ),
            Diagnosis(
                "the right number of patches per image, in the wrong places: in which order are the "
                "patches listed?",
                name="grid listed column by column",
                hint="row by row: the grid's row index varies slowest",
                variant=lambda sizes, H, W, P: _key_mask(sizes, H, W, P, transposed=True),
            ),
            Diagnosis(
                "no query may read [CLS]: what does column 0 of the mask stand for?",
                name="[CLS] masked out",
                hint="column 0 is [CLS], always visible",
                variant=lambda sizes, H, W, P: _key_mask(sizes, H, W, P, cls=False),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 10.6 pooled real patches (extend)
def _pool(tokens, key_mask, n_registers, how="right"):
    """(B, d): the mean of each image's real patch tokens; `how` makes the classic mistakes."""
    tokens, key_mask = np.asarray(tokens, dtype=np.float64), np.asarray(key_mask, dtype=bool)
    T = tokens.shape[1]
    N = T - 1 - n_registers
    keep = key_mask.copy()
    if how == "registers_in":  # the mask used as it is, [CLS] left out
        keep[:, 0] = False
    elif how == "cls_in":  # [CLS] averaged with the patches
        keep[:, 1 + N :] = False
    elif how == "padding_in":  # every patch averaged, real or not
        keep[:] = False
        keep[:, 1 : 1 + N] = True
    elif how == "last_tokens":  # the patches taken as the last N tokens, under the patches' mask
        keep = np.zeros_like(key_mask)
        keep[:, T - N :] = key_mask[:, 1 : 1 + N]
    else:
        keep[:, 0] = False
        keep[:, 1 + N :] = False
    return (tokens * keep[..., None]).sum(1) / keep.sum(1, keepdims=True)


def pool_case(name, rng, sizes, H, W, P, R, d, dtype=np.float64):
    """A case of 10.6: the final tokens of a padded batch ([CLS], patches, then R registers) and the
    key mask the model attended with (True for [CLS], the patches that hold a pixel, the registers)."""
    sizes = np.array(sizes, dtype=np.int64)
    B, N = len(sizes), (H // P) * (W // P)
    tokens = rng.normal(size=(B, 1 + N + R, d)).astype(dtype)
    real = _real_patches(sizes, H, W, P).reshape(B, N)
    key_mask = np.concatenate([np.ones((B, 1), bool), real, np.ones((B, R), bool)], axis=1)
    return Case(name, tokens=tokens, key_mask=key_mask, n_registers=R)


def _pool_cases():
    rng = np.random.default_rng(1016)
    return grouped(
        "padded batch",
        pool_case("2 images in a 4 x 4 canvas, P=2, 2 registers, d=3", rng, [(4, 4), (2, 3)], 4, 4, 2, 2, 3),
        pool_case(
            "3 images in a 6 x 9 canvas, P=3, 4 registers, d=2", rng, [(5, 9), (6, 2), (3, 3)], 6, 9, 3, 4, 2
        ),
        pool_case("2 images in a 4 x 6 canvas, P=2, 1 register, d=4", rng, [(3, 5), (4, 2)], 4, 6, 2, 1, 4),
    ) + grouped(
        "dtype",
        pool_case(
            "float32, 2 images in a 4 x 4 canvas, P=2, 3 registers",
            rng,
            [(4, 3), (1, 4)],
            4,
            4,
            2,
            3,
            3,
            np.float32,
        ),
    )


register(
    Exercise(
        id="ch10.pool_real_patches",
        number="10.6",
        title="mean-pool a padded batch with registers",
        points=3,
        function="pool_real_patches",
        stub=STUB_LINE,
        kind="extend",
        hint="find the patch tokens in the sequence, mark each image's real patches, and average only those",
        description="The chapter compares reading out [CLS] with averaging the patch tokens. Here the "
        "model also carries `n_registers` *register* tokens (extra learned tokens, appended after the "
        "patches, that hold no part of the image), and the batch is padded as in exercise 10.5: each "
        "image sits in the top-left corner of one canvas, cut into patches. The last layer's output "
        "`tokens (B, 1 + N + n_registers, d)` holds [CLS], the `N` patches row by row, then the "
        "registers; `key_mask (B, 1 + N + n_registers)` is the boolean key mask the model attended "
        "with, one column per token (True = any query may read that token: [CLS], the registers, and "
        "the patches that hold at least one pixel of the image). Return `(B, d)`: for each image, the "
        "mean of the tokens of the patches that hold at least one of its pixels.",
        solution='''
            def pool_real_patches(tokens, key_mask, n_registers):
                """(B, d): the mean of each image's patch tokens that hold one of its pixels."""
                ### BEGIN SOLUTION
                N = tokens.shape[1] - 1 - n_registers  # the patches lie between [CLS] and the registers
                real = key_mask[:, 1 : 1 + N, None]  # (B, N, 1): the patches the mask lets through
                return (tokens[:, 1 : 1 + N] * real).sum(axis=1) / real.sum(axis=1)
                ### END SOLUTION
        ''',
        reference=_pool,
        public_cases=_pool_cases,
        outputs=("pooled",),
        diagnoses=(
            Diagnosis(
                "the registers are averaged with the patches: which tokens hold a part of the image?",
                name="registers pooled",
                hint="the patch tokens are 1 .. N; the registers come after them, and the mask lets them through",
                variant=lambda tokens, key_mask, n_registers: _pool(
                    tokens, key_mask, n_registers, "registers_in"
                ),
            ),
            Diagnosis(
                "[CLS] is averaged with the patches: which tokens hold a part of the image?",
                name="[CLS] pooled",
                hint="column 0 of the mask is [CLS], which the mask lets through",
                variant=lambda tokens, key_mask, n_registers: _pool(tokens, key_mask, n_registers, "cls_in"),
            ),
            Diagnosis(
                "padding patches are averaged in: which patches hold a pixel of the image?",
                name="padding pooled",
                hint="average only the patches the mask lets through",
                variant=lambda tokens, key_mask, n_registers: _pool(
                    tokens, key_mask, n_registers, "padding_in"
                ),
            ),
            Diagnosis(
                "the averaged tokens are shifted: where in the sequence do the patch tokens start and end?",
                name="patches taken from the end",
                hint="[CLS] is token 0, the patches follow it, the registers close the sequence",
                variant=lambda tokens, key_mask, n_registers: _pool(
                    tokens, key_mask, n_registers, "last_tokens"
                ),
            ),
        ),
    )
)
