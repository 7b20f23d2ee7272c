"""Chapter 10 exercises: patches by hand, a ViT's size, the patch embedding as a convolution, rollout."""

from __future__ import annotations

import numpy as np

from ._registry import Case, Diagnosis, Exercise, grouped, register

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


# ----------------------------------------------------------------------------- 10.2 tokens (predict)
register(
    Exercise(
        id="ch10.predict_tokens",
        number="10.2",
        title="how long is the sequence",
        points=1,
        function="predict_tokens",
        hint="how many patches fit along each side of the image, and which token is not a patch?",
        kind="predict",
        description="The original ViT-B/16 reads RGB images of 224 x 224 pixels with 16 x 16 patches and "
        "a [CLS] token. How many tokens does its encoder attend over? Write the number down.",
        solution='''
            def predict_tokens():
                """Tokens of ViT-B/16 on a 224 x 224 image, [CLS] included."""
                ### BEGIN SOLUTION
                return (224 // 16) * (224 // 16) + 1  # a 14 x 14 grid of patches and the [CLS] token
                ### END SOLUTION
        ''',
        reference=lambda: np.array(197),
        public_cases=lambda: grouped("prediction", Case("224 x 224, P=16, [CLS]")),
        tolerance=(0.0, 0.0),
        diagnoses=(
            Diagnosis(
                "that counts the patches; what else does the encoder's sequence hold?",
                name="forgot [CLS]",
                hint="add the [CLS] token",
                variant=lambda: np.array(196),
            ),
            Diagnosis(
                "that is the patches along one side of the image; the grid has two sides",
                name="one side only",
                hint="N = (H/P)(W/P)",
                variant=lambda: np.array(15),
            ),
            Diagnosis(
                "the colour channels go into each patch's features, not into the number of tokens",
                name="counted channels as tokens",
                hint="a patch is one token whatever C is",
                variant=lambda: np.array(3 * 196 + 1),
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


# ----------------------------------------------------------------------------- 10.4 conv as matmul (derive)
def _conv(images, weight, bias, mode="right"):
    D, C, P, _ = weight.shape
    B, _, H, W = images.shape
    patches = _patchify(images, P)  # (B, N, C*P*P)
    flat = weight.reshape(D, -1) if mode != "wrong_flatten" else weight.reshape(-1, D).T
    out = patches @ flat.T  # (B, N, D)
    if mode != "no_bias":
        out = out + bias
    if mode == "no_transpose":
        return out.reshape(B, D, H // P, W // P)  # the (N, D) block read as (D, N)
    return np.swapaxes(out, -1, -2).reshape(B, D, H // P, W // P)


def _conv_cases():
    rng = np.random.default_rng(10040)
    return grouped(
        "convolution",
        Case(
            "B=2, C=1, 4 x 4, P=2, D=3",
            images=rng.normal(size=(2, 1, 4, 4)),
            weight=rng.normal(size=(3, 1, 2, 2)),
            bias=rng.normal(size=3),
        ),
        Case(
            "B=1, C=3, 6 x 4, P=2, D=5",
            images=rng.normal(size=(1, 3, 6, 4)),
            weight=rng.normal(size=(5, 3, 2, 2)),
            bias=rng.normal(size=5),
        ),
    ) + grouped(
        "dtype",
        Case(
            "float32, B=1, C=2, 4 x 6, P=2, D=3",
            images=rng.normal(size=(1, 2, 4, 6)).astype(np.float32),
            weight=rng.normal(size=(3, 2, 2, 2)).astype(np.float32),
            bias=rng.normal(size=3).astype(np.float32),
        ),
    )


register(
    Exercise(
        id="ch10.conv_as_matmul",
        number="10.4",
        title="a strided convolution from patches",
        points=3,
        function="conv_as_matmul",
        kind="derive",
        description="The chapter showed that a linear patch embedding equals `Conv2d(C, D, P, stride=P)`. "
        "Go the other way: compute that convolution's output `(B, D, H/P, W/P)` from `images (B, C, H, W)`, "
        "its `weight (D, C, P, P)` and `bias (D,)` with `patchify` and one matrix product, no convolution "
        "routine. Work out which weight matrix the product needs and how the result's `(B, N, D)` "
        "becomes the convolution's layout.",
        solution='''
            def conv_as_matmul(images, weight, bias):
                """Conv2d(C, D, P, stride=P) on (B, C, H, W) -> (B, D, H/P, W/P), via patchify."""
                ### BEGIN SOLUTION
                D, C, P, _ = weight.shape
                B, _, H, W = images.shape
                out = patchify(images, P) @ weight.reshape(D, C * P * P).T + bias  # (B, N, C*P*P) @ (C*P*P, D)
                return out.transpose(0, 2, 1).reshape(B, D, H // P, W // P)  # (B, N, D) -> (B, D, N) -> grid
                ### END SOLUTION
        ''',
        reference=_conv,
        public_cases=_conv_cases,
        needs=("import numpy as np", "from attncourse import patchify"),
        hint="patches @ W.T + b with W = weight flattened per output channel; then put D before N",
        diagnoses=(
            Diagnosis(
                "the numbers are a convolution's, laid out wrongly: the product gives (B, N, D); "
                "what does reshaping it straight to (B, D, H/P, W/P) mix up?",
                name="reshaped without transposing",
                hint="swap the last two axes before the final reshape",
                variant=lambda images, weight, bias: _conv(images, weight, bias, "no_transpose"),
            ),
            Diagnosis(
                "every output is off by a constant per output channel",
                name="bias missing",
                hint="add the bias",
                variant=lambda images, weight, bias: _conv(images, weight, bias, "no_bias"),
            ),
            Diagnosis(
                "the weight matrix has the right shape and the wrong entries: which axis of "
                "weight (D, C, P, P) must stay whole when it is flattened?",
                name="weight flattened in the wrong order",
                hint="flatten each output channel's (C, P, P) kernel: weight.reshape(D, -1)",
                variant=lambda images, weight, bias: _conv(images, weight, bias, "wrong_flatten"),
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
        title="a digit in stripes",
        points=2,
        function="images_from_patches",
        hint="reshape to (B, H/P, W/P, C, P, P), move the axes to (B, C, H/P, P, W/P, P), then reshape",
        kind="diagnose",
        description="`images_from_patches(patches, patch_size, H, W)` should undo this chapter's "
        "`patchify`: `(B, N, C*P*P)` back to `(B, C, H, W)`. Symptom: a digit comes back in horizontal "
        "stripes, each 2 x 2 patch spread along one row of pixels, and only the images with "
        "`P = 1` survive the round trip. Find the bug and fix it.",
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
        stub="return patches.reshape(B, C, H, W)",
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
