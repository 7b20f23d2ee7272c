"""Chapter 10's sentences against the numbers printed beside them (helpers: book_claims.py)."""

from __future__ import annotations

import re

import numpy as np
import pytest
from book_claims import (
    CH10,
    _cells,
    _printed,
    _prose,
)


@pytest.mark.slow
def test_chapter_10_digits_have_17_grey_levels():
    load_digits = pytest.importorskip("sklearn.datasets").load_digits  # not in the numpy-only tier

    levels = np.unique(load_digits().images)
    assert len(levels) == 17 and levels.min() == 0 and levels.max() == 16
    assert "17 grey levels (integers 0 to 16)" in _prose(CH10, "ch10-md-7")


def test_chapter_10_heads_share_one_colour_scale_and_the_prose_quotes_their_peaks():
    source = "".join(next(c for c in _cells(CH10) if c.get("id") == "ch10-heads")["source"])
    assert "vmin=0, vmax=top" in source and "fig.colorbar(" in source
    text = _printed(CH10, "on_self = torch.stack(")
    prose = _prose(CH10, "ch10-ablation-prose")
    largest = []
    for line in re.findall(r"the 0, layer \d: (.*)", text):
        heads = re.findall(r"head \d ([0-9.]+) at (\(\d, \d\))", line)
        assert len(heads) == 4
        assert len({where for _, where in heads}) == 4  # "within a layer no two heads peak on the same patch"
        largest += [w for w, _ in heads]
    low, high = min(largest, key=float), max(largest, key=float)
    assert f"runs from {low} to {high}" in prose


# -- chapter 10: the largest patch is one patch token and the class token -------------------------


def test_chapter_10_largest_patch_gives_the_printed_two_tokens():
    text = _printed(CH10, "cost[P] = {")
    tokens = {int(p): int(t) for p, t in re.findall(r"^ *(\d) +(\d+) +\d+ ", text, re.MULTILINE)}
    assert tokens[8] == 2, text
    prose = _prose(CH10, "ch10-cost-prose")
    assert "one patch token (the 2 tokens printed are that patch and the class token)" in prose
    assert "the whole image is one token," not in prose


def test_chapter_10_rollout_sentence_says_what_cls_keeps_and_what_the_patches_sum_to():
    text = _printed(CH10, "cls_rollout = rollout[:, 0, 1:]")
    own = [float(v) for v in re.search(r"on \[CLS\] itself: \[([0-9. ]+)\]", text).group(1).split()]
    patches = [float(v) for v in re.search(r"on the 16 patches: \[([0-9. ]+)\]", text).group(1).split()]
    assert len(own) == len(patches) == 3 and min(own) >= 0.25  # the identity halves' (1/2)^2
    prose = _prose(CH10, "ch10-md-29")
    assert f"the cell prints {min(own):.2f} to {max(own):.2f} for the three digits" in prose
    assert f"sum to {min(patches):.2f} to {max(patches):.2f}, not 1" in prose
    source = "".join(next(c for c in _cells(CH10) if c.get("id") == "ch10-rollout")["source"])
    assert "not drawn" in source and ".contour(" in source  # the bar names the left-out share; the outline


def test_chapter_10_rollout_is_more_than_a_map_of_the_ink():
    text = _printed("10_vision_transformer.ipynb", "by_ink = ink.argsort(")
    acc = {
        name.strip(): float(a)
        for name, a in re.findall(r"^ *(.+?): held-out accuracy ([0-9.]+)$", text, re.MULTILINE)
    }
    assert (
        acc["top 4 by ink"] > acc["top 4 by rollout"] + 0.2
    )  # "costs much less than removing rollout's top 4"
    shared = float(re.search(r"ink's top 4: ([0-9.]+) of 4", text).group(1))
    assert 0.5 <= shared <= 1.5  # "share only about one of their 4 patches"
    assert "share only about one of their 4 patches" in _prose(
        "10_vision_transformer.ipynb", "ch10-ablation-prose"
    )
