"""Chapter 4's sentences against the numbers printed beside them (helpers: book_claims.py)."""

from __future__ import annotations

import re

import pytest
from book_claims import (
    _cells,
    _printed,
    _prose,
)

# -- chapter 4: the swapped word's own output, with positions -------------------------------------


def test_chapter_4_prints_the_output_of_cat_that_the_prose_says_changes():
    text = _printed("04_self_attention.ipynb", "cat_change = ")
    first = re.search(r"output of cat, first: +\[([^\]]*)\]", text).group(1).split()
    second = re.search(r"output of cat, second: *\[([^\]]*)\]", text).group(1).split()
    assert first != second
    change = float(re.search(r"cat's output changes by up to ([0-9.]+)", text).group(1))
    assert change == pytest.approx(max(abs(float(a) - float(b)) for a, b in zip(first, second)), abs=2e-4)
    assert change > 0.01 and "its output changes" in _prose("04_self_attention.ipynb", "c024")


def test_chapter_4_quotes_the_growth_of_the_measured_peak_from_its_printout():
    # the growth is printed from the measured bytes (not worked out from MiB rounded to 0.01)
    text = _printed("04_self_attention.ipynb", "growth = [b / a for a, b in zip(peak_bytes")
    growth = re.search(r"grows per doubling of L by ([0-9., ]+)", text).group(1).strip()
    values = [float(g) for g in growth.split(", ")]
    assert len(values) == 4 and values == sorted(values) and 3.2 < values[0] and values[-1] < 4.0, values
    # the factors move between runs, so the prose quotes the bounds the cell asserts, not one run's values
    source = "".join(next(c for c in _cells("04_self_attention.ipynb") if c.get("id") == "c031")["source"])
    assert "assert growth == sorted(growth) and 3.2 < growth[0] and growth[-1] < 4" in source
    prose = _prose("04_self_attention.ipynb", "c032")
    assert "(each factor between 3.2 and 4 and larger than the one before" in prose
    summary = _prose("04_self_attention.ipynb", "c034")
    assert "grew by between 3.2 and 4 per doubling" in summary
    # the flop count leaves the softmax out, and the prose says so
    assert "the counter leaves it out" in _prose("04_self_attention.ipynb", "c026")


def test_chapter_4_figure_sentence_reads_the_counted_projections_and_attention():
    text = _printed("04_self_attention.ipynb", "proj_macs.append(")
    rows = re.findall(r"L = +(\d+): projections +([0-9,]+), attention +([0-9,]+) multiply-adds", text)
    counts = {int(n): (int(p.replace(",", "")), int(a.replace(",", ""))) for n, p, a in rows}
    assert sorted(counts) == [64, 128, 256, 512, 1024]
    assert counts[64][0] > counts[64][1] and counts[128][0] < counts[128][1]  # overtaken between
    equal_at = float(re.search(r"equal at L = .* = ([0-9.]+)", text).group(1))
    assert 64 < equal_at < 128
    ratio = counts[1024][1] / counts[1024][0]
    prose = _prose("04_self_attention.ipynb", "c032")
    assert "the projections cost more at $L = 64$" in prose
    assert f"the two are equal at $L = {equal_at:g}$" in prose
    assert f"$L = 1024$ the attention costs {ratio:.2f} times the projections" in prose
