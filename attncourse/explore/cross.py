"""The captioner explorer's view: where each letter the decoder writes reads the image, per head."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Tuple

import numpy as np

from .._backend import AttentionInputError
from .._validation import int_at_least, public

__all__ = ["CROSS_HEADS", "CROSS_STEPS", "CrossView", "cross_view"]

# "averaged": the heads' mean, beside the encoder's rollout; "each head": the heads side by side.
CROSS_HEADS = ("averaged", "each head")
CROSS_STEPS = tuple(range(6))  # the longest name ("three", "seven", "eight") and the end mark


@dataclass(frozen=True, eq=False)
class CrossView:
    """What the captioner explorer shows (see :func:`cross_view`)."""

    image: np.ndarray  # (8, 8) pixels in [0, 1]
    label: int
    written: str  # the name the decoder wrote
    step: int  # the step shown (the last one when the name is shorter than the step asked for)
    letter: str  # the letter written at that step, or "end"
    heads: str  # one of CROSS_HEADS
    maps: np.ndarray  # (k, 4, 4): the heads' mean and the rollout, or one map per head
    titles: Tuple[str, ...]
    top_patches: Tuple[Tuple[int, int], ...]  # (row, column) of each map's largest cell


@public("cross_view")
def cross_view(
    captions: Mapping[str, Any], image: int = 0, step: int = 0, heads: str = "averaged"
) -> CrossView:
    """The decoder's cross-attention row over the 16 patches for one image and one letter.

    Parameters
    ----------
    captions : mapping
        What ``scripts/experiments/digit_captioner.py`` saves in ``attncourse/data/digit_captioner.json``;
        its ``shown`` list holds, per image, ``image`` (8, 8), ``label``, ``written``,
        ``cross_attention_per_head`` ``(H, T, 16)`` (T = letters + the end mark) and
        ``rollout_mean`` ``(16,)``.
    image : int
        Which of the shown images (0-based).
    step : int
        The decoder's step: 0 for the first letter; a step past the end mark shows the end mark.
    heads : str
        ``"averaged"`` (the heads' mean beside the encoder's rollout) or ``"each head"``.

    Examples
    --------
    >>> shown = [{"image": np.zeros((8, 8)).tolist(), "label": 1, "written": "one",
    ...           "cross_attention_per_head": np.full((2, 4, 16), 1 / 16).tolist(),
    ...           "rollout_mean": np.full(16, 1 / 16).tolist()}]
    >>> v = cross_view({"shown": shown}, 0, 5, "each head")
    >>> v.step, v.letter, v.maps.shape
    (3, 'end', (2, 4, 4))
    """
    shown = captions["shown"]
    image = int_at_least("image", image, 0)
    if image >= len(shown):
        raise AttentionInputError(f"image must be below {len(shown)}; got {image}.")
    step = int_at_least("step", step, 0)
    if heads not in CROSS_HEADS:
        raise AttentionInputError(f"heads must be one of {CROSS_HEADS}; got {heads!r}.")
    entry = shown[image]
    per_head = np.asarray(entry["cross_attention_per_head"], dtype=np.float64)  # (H, T, N)
    written = entry["written"]
    step = min(step, per_head.shape[1] - 1)  # a shorter name: its end mark
    letter = written[step] if step < len(written) else "end"
    rows = per_head[:, step]  # (H, N)
    if heads == "averaged":
        rollout = np.asarray(entry["rollout_mean"], dtype=np.float64)
        rows = np.stack([rows.mean(0), rollout])  # (2, N)
        titles: Tuple[str, ...] = (f"'{letter}': heads averaged", "encoder rollout")
    else:
        titles = tuple(f"'{letter}': head {h}" for h in range(len(rows)))
    side = int(round(np.sqrt(rows.shape[-1])))
    grids = rows.reshape(len(rows), side, side)  # (k, N) -> (k, 4, 4), row-major like patchify
    top = tuple(tuple(int(i) for i in np.unravel_index(int(g.argmax()), g.shape)) for g in grids)
    return CrossView(
        image=np.asarray(entry["image"], dtype=np.float64),
        label=int(entry["label"]),
        written=written,
        step=step,
        letter=letter,
        heads=heads,
        maps=grids,
        titles=titles,
        top_patches=top,
    )
