"""Chapter 10 exercises: patches by hand, what the patch-size sweep favours, a ViT's size, the patch
embedding as a convolution, rollout."""

from __future__ import annotations

import numpy as np

from ..engine.registry import STUB_LINE, Case, Diagnosis, Exercise, grouped, register

__all__: list = []


# ----------------------------------------------------------------------------- helpers (plain numpy)
def _patchify(images, P, mode="right"):
    *lead, C, H, W = images.shape
    gh, gw = H // P, W // P
    if mode == "no_permute":  # the reshape that cuts pixels in memory order
        return images.reshape(*lead, gh * gw, C * P * P)
    x = images.reshape(*lead, C, gh, P, gw, P)
    if mode == "channels_last":  # features in (P, P, C) order
        x = np.moveaxis(x, (-4, -2, -3, -1, -5), (-5, -4, -3, -2, -1))
    elif mode == "column_major":  # patches listed column by column
        x = np.moveaxis(x, (-2, -4, -5, -3, -1), (-5, -4, -3, -2, -1))
    else:
        x = np.moveaxis(x, (-4, -2, -5, -3, -1), (-5, -4, -3, -2, -1))
    return x.reshape(*lead, gh * gw, C * P * P)


def _unpatchify(patches, P, H, W, mode="right"):
    *lead, N, F = patches.shape
    C, gh, gw = F // (P * P), H // P, W // P
    if mode == "no_permute":
        return patches.reshape(*lead, C, H, W)
    if mode == "swapped_grid":  # the grid read as (gw, gh)
        x = patches.reshape(*lead, gw, gh, C, P, P)
        x = np.moveaxis(x, (-5, -4, -3, -2, -1), (-2, -4, -5, -3, -1))
        return x.reshape(*lead, C, H, W)
    x = patches.reshape(*lead, gh, gw, C, P, P)
    if mode == "pixels_transposed":  # rows and columns of each patch swapped
        x = np.swapaxes(x, -1, -2)
    x = np.moveaxis(x, (-5, -4, -3, -2, -1), (-4, -2, -5, -3, -1))
    return x.reshape(*lead, C, H, W)


# ----------------------------------------------------------------------------- 10.1 patchify (implement)
def _patchify_cases():
    rng = np.random.default_rng(1001)
    return grouped(
        "layout",
        Case("one 1 x 4 x 4 image, P=2", images=np.arange(16.0).reshape(1, 1, 4, 4), patch_size=2),
        Case("B=2, C=3, 6 x 4, P=2", images=rng.normal(size=(2, 3, 6, 4)), patch_size=2),
        Case("B=1, C=2, 6 x 9, P=3", images=rng.normal(size=(1, 2, 6, 9)), patch_size=3),
    ) + grouped(
        "dtype",
        Case(
            "float32, B=1, C=2, 4 x 6, P=2",
            images=rng.normal(size=(1, 2, 4, 6)).astype(np.float32),
            patch_size=2,
        ),
    )


register(
    Exercise(
        id="ch10.patchify",
        number="10.1",
        title="cut images into patches",
        points=3,
        function="patchify_images",
        stub=STUB_LINE,
        kind="implement",
        description="Write `patchify_images(images, patch_size)` for numpy images `(B, C, H, W)` "
        "(with `P = patch_size` dividing `H` and `W`): return `(B, N, C*P*P)` with `N = (H/P)(W/P)`, "
        "the patches listed row by row over the grid and each patch's values in `(C, P, P)` order, "
        "the layout of this chapter's `patchify`. Reshapes and axis moves only, no loops needed.",
        solution='''
            def patchify_images(images, patch_size):
                """(B, C, H, W) -> (B, N, C*P*P), patches row-major, features in (C, P, P) order."""
                ### BEGIN SOLUTION
                B, C, H, W = images.shape
                P = patch_size
                x = images.reshape(B, C, H // P, P, W // P, P)  # split each axis into (grid, pixel)
                x = x.transpose(0, 2, 4, 1, 3, 5)  # -> (B, H/P, W/P, C, P, P)
                return x.reshape(B, (H // P) * (W // P), C * P * P)
                ### END SOLUTION
        ''',
        reference=lambda images, patch_size: _patchify(images, patch_size),
        public_cases=_patchify_cases,
        hint="split H into (H/P, P) and W into (W/P, P), then move the two grid axes in front",
        diagnoses=(
            Diagnosis(
                "the shape is right, but the first patch of the 4 x 4 image holds pixels 0, 1, 2, 3: "
                "one row of pixels, not a square. Which pixels are next to each other in memory?",
                name="reshape without permute",
                hint="reshape to (B, C, H/P, P, W/P, P) and transpose before the final reshape",
                variant=lambda images, patch_size: _patchify(images, patch_size, "no_permute"),
            ),
            Diagnosis(
                "the right pixels are in each patch, in another order: with several channels, "
                "which index should vary slowest inside a patch?",
                name="features in (P, P, C) order",
                hint="the features go in (C, P, P) order, the order of Conv2d's weight",
                variant=lambda images, patch_size: _patchify(images, patch_size, "channels_last"),
            ),
            Diagnosis(
                "the patches are right but listed in another order: the second patch should be the "
                "one to the right of the first, not the one below it",
                name="column-major grid",
                hint="put the grid's row axis (H/P) before its column axis (W/P)",
                variant=lambda images, patch_size: _patchify(images, patch_size, "column_major"),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 10.2 the sweep (extend)
def _sweep_arrays(runs):
    """(patch_size, accuracy, forward_ms) arrays of a list of sweep runs (the saved file's rows)."""
    return (
        np.array([r["patch_size"] for r in runs]),
        np.array([r["accuracy"] for r in runs], dtype=float),
        np.array([r["forward_ms_450_images"] for r in runs], dtype=float),
    )


def _favoured(patch_size, accuracy, forward_ms, margin, time_by="min", accuracy_by="mean", rule="margin"):
    sizes = np.unique(patch_size)
    pick = {"min": np.min, "mean": np.mean, "median": np.median}
    time = np.array([pick[time_by](forward_ms[patch_size == P]) for P in sizes])
    acc = np.array([(np.max if accuracy_by == "max" else np.mean)(accuracy[patch_size == P]) for P in sizes])
    order = sizes[np.argsort(-time, kind="stable")]  # slowest first
    if rule == "best":
        favoured = sizes[np.argmax(acc)]
    else:
        good = acc >= acc.max() - margin
        favoured = sizes[good][np.argmin(time[good])]
    return order, np.array(favoured)


def _sweep_cases():
    from ...results import saved_results

    saved = _sweep_arrays(saved_results("vit_digits_sweep.json")["patch_sizes"])

    def runs(*rows):  # (P, accuracy, ms) per run
        P, acc, ms = zip(*rows)
        return np.array(P), np.array(acc, dtype=float), np.array(ms, dtype=float)

    def case(name, arrays, margin):
        P, acc, ms = arrays
        return Case(name, patch_size=P, accuracy=acc, forward_ms=ms, margin=margin)

    return (
        grouped("saved sweep", case("the chapter's saved sweep, margin 0.01", saved, 0.01))
        + grouped(
            "seeds",
            case(
                "three seeds; one lucky run of P=2",
                runs(
                    (2, 0.99, 40.0),
                    (2, 0.80, 41.0),
                    (2, 0.81, 42.0),
                    (4, 0.90, 12.0),
                    (4, 0.91, 11.0),
                    (4, 0.89, 13.0),
                    (8, 0.70, 3.0),
                    (8, 0.72, 3.5),
                    (8, 0.71, 2.9),
                ),
                0.02,
            ),
        )
        + grouped(
            "timing",
            case(
                "a 32 x 32 sweep whose timings have one slow outlier",
                runs(
                    (4, 0.95, 30.0),
                    (4, 0.96, 200.0),
                    (8, 0.94, 50.0),
                    (8, 0.95, 52.0),
                    (16, 0.60, 4.0),
                    (16, 0.62, 4.2),
                ),
                0.02,
            ),
        )
        + grouped(
            "margin",
            case(
                "the most accurate size is the slowest, a cheaper one is within the margin",
                runs(
                    (1, 0.97, 900.0),
                    (1, 0.98, 950.0),
                    (2, 0.965, 90.0),
                    (2, 0.97, 95.0),
                    (4, 0.90, 20.0),
                    (4, 0.91, 21.0),
                ),
                0.015,
            ),
            case(
                "margin 0: the most accurate size, whatever it costs",
                runs(
                    (1, 0.97, 900.0),
                    (1, 0.98, 950.0),
                    (2, 0.965, 90.0),
                    (2, 0.97, 95.0),
                    (4, 0.90, 20.0),
                    (4, 0.91, 21.0),
                ),
                0.0,
            ),
        )
    )


register(
    Exercise(
        id="ch10.favoured_patch_size",
        number="10.2",
        title="what the sweep favours",
        points=2,
        function="favoured_patch_size",
        stub=STUB_LINE,
        hint="per patch size: the minimum of its timings and the mean of its accuracies; then, among "
        "the sizes within margin of the best mean, the fastest",
        kind="extend",
        description="A patch-size sweep like the chapter's gives one entry per training run (several seeds "
        "per patch size): `patch_size (R,)` (ints), held-out `accuracy (R,)` and the measured time of one "
        "forward pass `forward_ms (R,)`. Time each patch size by the minimum of its runs' timings (other "
        "programs only ever add time) and score it by the mean accuracy of its runs (one seed can be lucky). "
        "Return `(order, favoured)`: `order (K,)`, the K distinct patch sizes from the slowest to the "
        "fastest, and `favoured` (a scalar), the fastest patch size whose mean accuracy is at most `margin` "
        "below the best mean accuracy. The first public case is the chapter's own sweep "
        '(`saved_results("vit_digits_sweep.json")["patch_sizes"]`, its `forward_ms_450_images`); the '
        "others are sweeps the chapter did not run. numpy only.",
        solution='''
            def favoured_patch_size(patch_size, accuracy, forward_ms, margin):
                """Patch sizes slowest first, and the fastest one within margin of the best mean accuracy."""
                ### BEGIN SOLUTION
                sizes = np.unique(patch_size)  # (K,)
                time = np.array([forward_ms[patch_size == P].min() for P in sizes])  # (K,)
                acc = np.array([accuracy[patch_size == P].mean() for P in sizes])  # (K,)
                order = sizes[np.argsort(-time)]  # slowest first
                good = acc >= acc.max() - margin  # within the margin of the best mean
                favoured = sizes[good][np.argmin(time[good])]  # the fastest of those
                return order, favoured
                ### END SOLUTION
        ''',
        reference=_favoured,
        public_cases=_sweep_cases,
        outputs=("order", "favoured"),
        diagnoses=(
            Diagnosis(
                "the order is right backwards: the prompt asks for the slowest patch size first",
                name="fastest first",
                hint="sort by time, largest first",
                variant=lambda P, a, t, m: (_favoured(P, a, t, m)[0][::-1], _favoured(P, a, t, m)[1]),
            ),
            Diagnosis(
                "your order or choice changes with one slow run: which of a patch size's timings says what "
                "the model itself costs?",
                name="timings averaged",
                hint="time each patch size by the minimum of its runs",
                variant=lambda P, a, t, m: _favoured(P, a, t, m, time_by="mean"),
            ),
            Diagnosis(
                "one lucky seed decided: is a patch size as good as its best run?",
                name="best run instead of the mean",
                hint="score each patch size by the mean accuracy of its runs",
                variant=lambda P, a, t, m: _favoured(P, a, t, m, accuracy_by="max"),
            ),
            Diagnosis(
                "you picked the most accurate patch size; a faster one is within the margin",
                name="margin ignored",
                hint="among the sizes whose mean accuracy is within margin of the best, take the fastest",
                variant=lambda P, a, t, m: _favoured(P, a, t, m, rule="best"),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 10.3 parameters (predict)
def _embedding_parameters(C=3, side=32, P=4, d=48, with_c=True, grid="both", cls_position=True):
    per_side = side // P
    N = per_side * per_side if grid == "both" else per_side
    embed = (C if with_c else 1) * P * P * d + d
    return np.array(embed + (N + int(cls_position)) * d)


register(
    Exercise(
        id="ch10.predict_embedding_parameters",
        number="10.3",
        title="the size of the input layers",
        points=2,
        function="predict_embedding_parameters",
        stub=STUB_LINE,
        hint="the patch embedding maps C*P*P numbers to d_model (plus a bias); count one position vector per token",
        kind="predict",
        description="A ViT for RGB images of 32 x 32 pixels uses 4 x 4 patches, `d_model = 48`, a [CLS] "
        "token and learned positions (one per token, [CLS] included). How many parameters do its patch "
        "embedding (a linear layer with a bias) and its position embeddings have together? Leave out "
        "the [CLS] token itself and everything after the embeddings. Write the number down, exactly.",
        solution='''
            def predict_embedding_parameters():
                """Patch embedding (with bias) + learned positions of a 32 x 32 RGB ViT, P=4, d_model=48."""
                ### BEGIN SOLUTION
                C, P, d = 3, 4, 48
                N = (32 // P) * (32 // P)  # 64 patches
                embedding = C * P * P * d + d  # (C*P*P) -> d_model, and a bias
                positions = (N + 1) * d  # one vector per token, [CLS] included
                return embedding + positions
                ### END SOLUTION
        ''',
        reference=_embedding_parameters,
        public_cases=lambda: grouped("prediction", Case("32 x 32 RGB, P=4, d_model=48")),
        tolerance=(0.0, 0.0),
        diagnoses=(
            Diagnosis(
                "the patch embedding is too small: what does one flattened patch of an RGB image hold?",
                name="forgot the channels",
                hint="a patch has C * P * P inputs",
                variant=lambda: _embedding_parameters(with_c=False),
            ),
            Diagnosis(
                "too few position vectors: how many patches does a 32 x 32 image have with P = 4?",
                name="one side of the grid",
                hint="N = (H/P)(W/P)",
                variant=lambda: _embedding_parameters(grid="side"),
            ),
            Diagnosis(
                "one position vector short: which token besides the patches gets one?",
                name="no [CLS] position",
                hint="the [CLS] token has a learned position too",
                variant=lambda: _embedding_parameters(cls_position=False),
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
        "`(B, D, Ho, Wo)` with `Ho = (H - P) // stride + 1` and `Wo = (W - P) // stride + 1`. Numpy "
        "only: no convolution routine, no `patchify`.",
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


# ----------------------------------------------------------------------------- 10.5 scrambled picture (diagnose)
def _unpatchify_cases():
    rng = np.random.default_rng(1005)
    return grouped(
        "grid",
        Case(
            "a 1 x 4 x 4 image, P=2",
            patches=_patchify(np.arange(16.0).reshape(1, 1, 4, 4), 2),
            patch_size=2,
            H=4,
            W=4,
        ),
        Case("B=2, C=2, 6 x 4, P=2", patches=rng.normal(size=(2, 6, 8)), patch_size=2, H=6, W=4),
    ) + grouped(
        "dtype",
        Case(
            "float32, B=1, C=2, 4 x 6, P=2",
            patches=rng.normal(size=(1, 6, 8)).astype(np.float32),
            patch_size=2,
            H=4,
            W=6,
        ),
    )


register(
    Exercise(
        id="ch10.fix_unpatchify",
        number="10.5",
        title="patches in the wrong squares",
        points=2,
        function="images_from_patches",
        hint="patchify lists the patches row by row: the grid axes are (H/P, W/P), grid rows first, and "
        "the grid rows go before the pixel rows",
        kind="diagnose",
        description="`images_from_patches(patches, patch_size, H, W)` should undo this chapter's "
        "`patchify`: `(B, N, C*P*P)` back to `(B, C, H, W)`. Symptom: every P x P patch comes back "
        "intact, but in the wrong square: a square digit comes back mirrored along its diagonal, patch "
        "by patch, and a 4 x 6 image is scrambled; a round trip of an image one patch high or one patch "
        "wide works. Find the bug and fix it; numpy only.",
        solution='''
            def images_from_patches(patches, patch_size, H, W):
                """(B, N, C*P*P) -> (B, C, H, W): the inverse of patchify."""
                B, N, F = patches.shape
                P = patch_size
                C = F // (P * P)
                ### BEGIN SOLUTION
                x = patches.reshape(B, H // P, W // P, C, P, P)  # (B, grid rows, grid cols, C, P, P)
                x = x.transpose(0, 3, 1, 4, 2, 5)  # -> (B, C, H/P, P, W/P, P)
                return x.reshape(B, C, H, W)
                ### END SOLUTION
        ''',
        stub="x = patches.reshape(B, W // P, H // P, C, P, P)\nx = x.transpose(0, 3, 2, 4, 1, 5)\nreturn x.reshape(B, C, H, W)",
        reference=lambda patches, patch_size, H, W: _unpatchify(patches, patch_size, H, W),
        public_cases=_unpatchify_cases,
        diagnoses=(
            Diagnosis(
                "still in stripes: each patch's P*P values land on consecutive pixels of one row. "
                "In what order does a reshape read and write the values?",
                name="reshape without permute",
                hint="reshape to (B, H/P, W/P, C, P, P), transpose to (B, C, H/P, P, W/P, P), then reshape",
                variant=lambda patches, patch_size, H, W: _unpatchify(
                    patches, patch_size, H, W, "no_permute"
                ),
            ),
            Diagnosis(
                "each patch comes back whole but in the wrong place on the grid, as if the grid were "
                "filled column by column: which of the grid's two axes does patchify list first?",
                name="grid axes swapped",
                hint="the grid is (H/P, W/P), rows first",
                variant=lambda patches, patch_size, H, W: _unpatchify(
                    patches, patch_size, H, W, "swapped_grid"
                ),
            ),
            Diagnosis(
                "each patch lands in the right square, mirrored along its diagonal",
                name="pixels transposed inside a patch",
                hint="inside a patch the row index comes before the column index",
                variant=lambda patches, patch_size, H, W: _unpatchify(
                    patches, patch_size, H, W, "pixels_transposed"
                ),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 10.6 rollout with alpha (extend)
def _rollout(weights, alpha, mode="right"):
    result = None
    for w in weights:
        a = w.sum(-3) if mode == "head_sum" else w.mean(-3)  # (B, H, N, N) -> (B, N, N)
        N = a.shape[-1]
        a = (
            alpha * a + (1 - alpha) * np.eye(N)
            if mode == "alpha_swapped"
            else (1 - alpha) * a + alpha * np.eye(N)
        )
        if result is None:
            result = a
        elif mode == "reversed":
            result = result @ a
        else:
            result = a @ result
    return result


def _rollout_cases():
    rng = np.random.default_rng(1006)
    return grouped(
        "rollout",
        Case(
            "2 layers, B=1, 2 heads, N=4, alpha=0.3",
            weights=np.stack([rng.dirichlet(np.ones(4), size=(1, 2, 4)) for _ in range(2)]),
            alpha=0.3,
        ),
        Case(
            "3 layers, B=2, 3 heads, N=5, alpha=0.8",
            weights=np.stack([rng.dirichlet(np.ones(5), size=(2, 3, 5)) for _ in range(3)]),
            alpha=0.8,
        ),
    ) + grouped(
        "dtype",
        Case(
            "float32, 2 layers, B=1, 2 heads, N=3, alpha=0.6",
            weights=np.stack([rng.dirichlet(np.ones(3), size=(1, 2, 3)) for _ in range(2)]).astype(
                np.float32
            ),
            alpha=0.6,
        ),
    )


register(
    Exercise(
        id="ch10.rollout_alpha",
        number="10.6",
        title="rollout with a residual share",
        points=3,
        function="rollout_alpha",
        stub=STUB_LINE,
        hint="mix each layer's head-mean with the identity, (1 - alpha) A + alpha I, and multiply the later layer from the left",
        kind="extend",
        description="The chapter's rollout splits each layer evenly between attention and the residual "
        "path, $(\\bar A + I)/2$. Make the residual share a parameter: with `weights` a numpy array "
        "`(n_layers, B, H, N, N)` (first layer first) and `0 <= alpha <= 1`, use "
        "$\\tilde A_\\ell = (1 - \\alpha)\\,\\bar A_\\ell + \\alpha I$ ($\\bar A_\\ell$ the mean over heads) "
        "and return $R = \\tilde A_L \\cdots \\tilde A_1$, shape `(B, N, N)`. `alpha = 0.5` must give "
        "`attention_rollout`'s result (check that yourself; it is not handed out for the answer).",
        solution='''
            def rollout_alpha(weights, alpha):
                """Rollout with residual share alpha: weights (n_layers, B, H, N, N) -> (B, N, N)."""
                ### BEGIN SOLUTION
                N = weights.shape[-1]
                result = np.eye(N)
                for w in weights:  # first layer first
                    a = (1 - alpha) * w.mean(axis=-3) + alpha * np.eye(N)  # (B, H, N, N) -> (B, N, N)
                    result = a @ result  # the later layer multiplies from the left
                return result
                ### END SOLUTION
        ''',
        reference=_rollout,
        public_cases=_rollout_cases,
        diagnoses=(
            Diagnosis(
                "the layers are combined in the wrong order: row i of the result should follow token i "
                "down from the last layer to the input",
                name="layers multiplied in reverse",
                hint="R = A_L ... A_1: multiply each new layer from the left",
                variant=lambda weights, alpha: _rollout(weights, alpha, "reversed"),
            ),
            Diagnosis(
                "rows no longer sum to 1: how are a layer's heads combined?",
                name="heads summed",
                hint="average the heads",
                variant=lambda weights, alpha: _rollout(weights, alpha, "head_sum"),
            ),
            Diagnosis(
                "alpha weighs the wrong term: alpha = 1 should leave every token where it was",
                name="alpha on attention",
                hint="alpha multiplies the identity, 1 - alpha the attention",
                variant=lambda weights, alpha: _rollout(weights, alpha, "alpha_swapped"),
            ),
        ),
    )
)
