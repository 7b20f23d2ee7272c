"""Attention for images: an image as a sequence of patches, and attention rollout.

A Vision Transformer (ViT) cuts an image ``(C, H, W)`` into non-overlapping ``P x P`` patches,
flattens each one into a vector of ``C * P * P`` numbers and treats the ``N = (H/P)(W/P)``
vectors as a sequence of tokens.  ``patchify`` does the cutting, ``unpatchify`` undoes it, and
``attention_rollout`` follows attention back through the layers to the input patches
(Abnar & Zuidema, 2020).

Like every core function these take numpy arrays or torch tensors and return the same kind, on
the same device, in the same dtype; torch is never imported here.  The model itself is
``attncourse.vit.VisionTransformer`` (a torch module).
"""

from __future__ import annotations

from typing import Any, Sequence, Tuple

import numpy as np

from ._backend import AttentionInputError, common_kind, fmt_shape, ops_for
from ._validation import positive_int, public

__all__ = ["patchify", "unpatchify", "attention_rollout"]

Array = Any


def _grid(H: int, W: int, P: int, what: str) -> Tuple[int, int]:
    """The patch grid ``(H/P, W/P)``; an error naming H, W and P when P does not divide both."""
    if H % P or W % P:
        raise AttentionInputError(
            f"{what} H={H} and W={W} must both be divisible by patch_size P={P} "
            f"(H % P = {H % P}, W % P = {W % P}); crop or pad the image, or pick a P that divides both."
        )
    return H // P, W // P


@public("patchify")
def patchify(images: Array, patch_size: int) -> Array:
    """Cut images ``(..., C, H, W)`` into ``N = (H/P)(W/P)`` flattened patches ``(..., N, C*P*P)``.

    Patches are listed row-major over the grid (left to right, then top to bottom); each patch's
    features are in ``(C, P, P)`` order, the order of a ``Conv2d`` weight, so that
    ``patchify(x, P) @ W.T + b`` equals ``torch.nn.Conv2d(C, D, P, stride=P)(x)`` flattened to
    ``(..., N, D)``, with ``W = conv.weight.flatten(1)`` and ``b = conv.bias``.

    Examples
    --------
    >>> import numpy as np
    >>> image = np.arange(16).reshape(1, 4, 4)  # one channel, 4 x 4 pixels
    >>> patchify(image, 2)  # four 2 x 2 patches: top-left, top-right, bottom-left, bottom-right
    array([[ 0,  1,  4,  5],
           [ 2,  3,  6,  7],
           [ 8,  9, 12, 13],
           [10, 11, 14, 15]])
    """
    ops = ops_for(common_kind(images=images))
    x = ops.asarray(images)
    P = positive_int("patch_size", patch_size)
    if x.ndim < 3:
        raise AttentionInputError(f"images must be (..., C, H, W); got shape {fmt_shape(x)}.")
    *lead, C, H, W = (int(n) for n in x.shape)
    gh, gw = _grid(H, W, P, "images")
    x = x.reshape((*lead, C, gh, P, gw, P))  # (..., C, H, W) -> (..., C, H/P, P, W/P, P)
    # The grid axes first, then (C, P, P): (..., C, gh, P, gw, P) -> (..., gh, gw, C, P, P)
    x = ops.moveaxis(x, (-4, -2, -5, -3, -1), (-5, -4, -3, -2, -1))
    return x.reshape((*lead, gh * gw, C * P * P))  # -> (..., N, C*P*P)


@public("unpatchify")
def unpatchify(patches: Array, patch_size: int, image_size: Tuple[int, int]) -> Array:
    """The inverse of :func:`patchify`: ``(..., N, C*P*P)`` -> images ``(..., C, H, W)``.

    ``image_size = (H, W)``; ``N`` must be ``(H/P)(W/P)`` and the feature count a multiple of
    ``P * P`` (the channel count ``C`` is what is left).

    Examples
    --------
    >>> import numpy as np
    >>> images = np.random.default_rng(0).normal(size=(2, 3, 4, 6))
    >>> bool((unpatchify(patchify(images, 2), 2, (4, 6)) == images).all())
    True
    """
    ops = ops_for(common_kind(patches=patches))
    x = ops.asarray(patches)
    P = positive_int("patch_size", patch_size)
    try:
        H, W = (positive_int("image_size", n) for n in image_size)
    except (TypeError, ValueError):
        raise AttentionInputError(
            f"image_size must be (H, W), two positive integers; got {image_size!r}."
        ) from None
    gh, gw = _grid(H, W, P, "image_size")
    if x.ndim < 2:
        raise AttentionInputError(f"patches must be (..., N, C*P*P); got shape {fmt_shape(x)}.")
    *lead, N, F = (int(n) for n in x.shape)
    if N != gh * gw or F % (P * P) or F == 0:
        raise AttentionInputError(
            f"patches {fmt_shape(x)} do not fit image_size=({H}, {W}) with patch_size P={P}: expected "
            f"N = (H/P)(W/P) = {gh * gw} patches of C*P*P features (a multiple of {P * P}); got N={N}, {F} features."
        )
    C = F // (P * P)
    x = x.reshape((*lead, gh, gw, C, P, P))  # (..., N, C*P*P) -> (..., gh, gw, C, P, P)
    x = ops.moveaxis(x, (-5, -4, -3, -2, -1), (-4, -2, -5, -3, -1))  # -> (..., C, gh, P, gw, P)
    return x.reshape((*lead, C, H, W))


@public("attention_rollout")
def attention_rollout(weights: Sequence[Array], *, residual: bool = True) -> Array:
    """Attention rollout (Abnar & Zuidema, 2020): how much each output token draws on each input token.

    ``weights`` holds one ``(..., H, N, N)`` map per layer, first layer first (rows are
    queries and sum to 1).  Each layer's heads are averaged; with ``residual=True`` the
    identity is added for the residual path and the rows renormalised, ``A = (W + I) / 2``;
    then the layers are multiplied, last on the left: ``R = A_L @ ... @ A_2 @ A_1``.  Returns
    ``R (..., N, N)``: row ``i`` says how much of token ``i`` after the last layer comes from each
    input token (rows sum to 1).

    Examples
    --------
    >>> import numpy as np
    >>> uniform = np.full((1, 3, 3), 1 / 3)  # one head, three tokens, uniform attention
    >>> attention_rollout([uniform], residual=False)[0]
    array([0.33333333, 0.33333333, 0.33333333])
    >>> attention_rollout([uniform])[0]  # half stays where it was, on the residual path
    array([0.66666667, 0.16666667, 0.16666667])
    """
    layers = list(weights) if not hasattr(weights, "shape") else None
    if not layers:
        raise AttentionInputError(
            "weights must be a non-empty list of per-layer (..., H, N, N) maps; "
            + ("got a single array: wrap it in a list." if layers is None else "got an empty list.")
        )
    ops = ops_for(common_kind(**{f"weights[{i}]": w for i, w in enumerate(layers)}))
    layers = [ops.asarray(w) for w in layers]
    first = layers[0]
    for i, w in enumerate(layers):
        if w.ndim < 3 or w.shape[-1] != w.shape[-2] or w.shape != first.shape:
            raise AttentionInputError(
                f"weights[{i}] must be (..., H, N, N) with the shape of weights[0] {fmt_shape(first)}; "
                f"got {fmt_shape(w)}."
            )
        if not ops.is_floating(w):
            raise AttentionInputError(f"weights[{i}] must be floating point; got dtype {w.dtype}.")
    N = int(first.shape[-1])
    rollout = None
    for w in layers:
        a = (
            ops.sum(w, axis=-3, keepdims=False) / w.shape[-3]
        )  # (..., H, N, N) -> (..., N, N): mean over heads
        if residual:
            eye = ops.astype(ops.from_numpy(np.eye(N), like=a), a.dtype)
            a = a + eye  # the residual path carries each token on unchanged
            a = a / ops.sum(a, axis=-1)  # rows sum to 1 again
        rollout = a if rollout is None else ops.matmul(a, rollout)  # (..., N, N) @ (..., N, N)
    return rollout
