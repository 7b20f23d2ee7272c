"""Chapter 6's sentences against the numbers printed beside them (helpers: book_claims.py)."""

from __future__ import annotations

from book_claims import (
    _printed,
    _prose,
)


def test_chapter_6_every_finite_fill_leaks_at_its_own_level_and_spreads_an_empty_row_uniformly():
    notebook = "06_masked_attention.ipynb"
    text = _printed(notebook, "def naive_softmax(x):")
    table = {
        line.split("|")[0].strip(): [c.strip() for c in line.split("|")[1:]]
        for line in text.splitlines()[1:5]
    }
    assert table["-1e9"][2] == "0.7990" and table["-1e4"][1] == "0.7990" and table["0"][0] == "0.7990"
    assert table["-inf"][:3] == ["0.0000"] * 3 and table["-inf"][3] == "nan"
    assert "all keys blocked, fill -1e4: the weights [0.25, 0.25, 0.25, 0.25]" in text
    prose = _prose(notebook, "ch06-031")
    assert (
        "$-10^4$ from the second, $-10^9$ in the third" in prose and "every column with a real key" in prose
    )
    assert "x 51" not in _prose(notebook, "window-cost-end")
