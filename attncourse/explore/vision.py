"""The Vision Transformer explorer's view: where [CLS] looks in an image, per head or by rollout."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Tuple

import numpy as np

from .._backend import AttentionInputError
from .._validation import int_at_least, public

__all__ = ["VISION_VIEWS", "VisionView", "vision_view"]

# What the map shows: one layer's heads (what [CLS] reads there), or the rollout through all layers.
VISION_VIEWS = ("layer 0", "layer 1", "rollout")


@dataclass(frozen=True, eq=False)
class VisionView:
    """What the Vision Transformer explorer shows (see :func:`vision_view`)."""

    image: np.ndarray  # (H, W) pixels in [0, 1]
    label: int
    patch_size: int
    grid: Tuple[int, int]  # (H/P, W/P)
    view: str  # one of VISION_VIEWS
    maps: np.ndarray  # (k, H/P, W/P): one map per head, or the one rollout map
    titles: Tuple[str, ...]  # one per map
    top_patches: Tuple[Tuple[int, int], ...]  # (row, column) of each map's largest cell


@public("vision_view")
def vision_view(
    maps: Mapping[str, Any], image: int = 0, patch_size: int = 2, view: str = "layer 1"
) -> VisionView:
    """[CLS]'s attention over one test image's patches, for one patch size and one layer (or rollout).

    Parameters
    ----------
    maps : mapping
        What ``scripts/experiments/vit_digits_sweep.py`` saves in ``book/data/vit_digits_maps.json``:
        ``images`` (n, H, W), ``labels`` (n,), ``patch_sizes``, and for each patch size ``P`` (a
        string key) ``cls_attention`` ``(n, n_layers, n_heads, N)`` (row 0 of each head's weights,
        without [CLS]'s weight on itself) and ``rollout`` ``(n, N)``.
    image : int
        Which of the ``n`` images (0-based).
    patch_size : int
        One of ``maps["patch_sizes"]``.
    view : str
        ``"layer 0"``, ``"layer 1"`` (every head of that layer, counted from 0) or ``"rollout"``.

    Examples
    --------
    >>> maps = {"images": np.zeros((1, 4, 4)).tolist(), "labels": [3], "patch_sizes": [2],
    ...         "2": {"cls_attention": np.full((1, 2, 2, 4), 0.2).tolist(), "rollout": [[0.1, 0.2, 0.3, 0.1]]}}
    >>> v = vision_view(maps, 0, 2, "rollout")
    >>> v.grid, v.maps.shape, v.top_patches
    ((2, 2), (1, 2, 2), ((1, 0),))
    """
    images = np.asarray(maps["images"], dtype=np.float64)
    image = int_at_least("image", image, 0)
    if image >= len(images):
        raise AttentionInputError(f"image must be below {len(images)}; got {image}.")
    sizes = [int(p) for p in maps["patch_sizes"]]
    if patch_size not in sizes:
        raise AttentionInputError(f"patch_size must be one of {sizes}; got {patch_size!r}.")
    if view not in VISION_VIEWS:
        raise AttentionInputError(f"view must be one of {VISION_VIEWS}; got {view!r}.")
    H, W = images.shape[1:]
    grid = (H // patch_size, W // patch_size)
    entry = maps[str(patch_size)]
    if view == "rollout":
        rows = np.asarray(entry["rollout"], dtype=np.float64)[image][None]  # (1, N)
        titles: Tuple[str, ...] = ("rollout, both layers",)
    else:
        layer = VISION_VIEWS.index(view)
        rows = np.asarray(entry["cls_attention"], dtype=np.float64)[image, layer]  # (n_heads, N)
        titles = tuple(f"{view}, head {h}" for h in range(len(rows)))
    grids = rows.reshape(len(rows), *grid)  # (k, N) -> (k, H/P, W/P), row-major like patchify
    top = tuple(tuple(int(i) for i in np.unravel_index(int(g.argmax()), grid)) for g in grids)
    return VisionView(
        image=images[image],
        label=int(maps["labels"][image]),
        patch_size=int(patch_size),
        grid=grid,
        view=view,
        maps=grids,
        titles=titles,
        top_patches=top,
    )
