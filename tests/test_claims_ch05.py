"""Chapter 5's sentences against the numbers printed beside them (helpers: book_claims.py)."""

from __future__ import annotations

import re

from book_claims import (
    _printed,
    _prose,
)

# -- chapter 5: one head, seed by seed ------------------------------------------------------------


def test_chapter_5_one_head_recovers_one_lookup_per_seed():
    text = _printed("05_multi_head_attention.ipynb", 'lookups = saved_results("heads_two_lookups.json")')
    seeds = re.findall(r"seed (\d):\s+([0-9.]+)\s+([0-9.]+)\s+([0-9.]+)", text.split("seed by seed")[1])
    assert len(seeds) == 3, text
    prose = _prose("05_multi_head_attention.ipynb", "c040-heads-after")
    assert "0.96 to 0.99" in prose and "0.19 to 0.22" in prose
    for seed, t1, t2, both in seeds:
        good, other = max(float(t1), float(t2)), min(float(t1), float(t2))
        assert 0.955 <= good < 0.995 and 0.185 <= other < 0.225, seed
        assert 0.15 < float(both) < 0.25  # "both are right on about a fifth of the positions"
    # "x_(t-1) for seeds 0 and 1, x_(t-2) for seed 2"
    assert [float(t1) > float(t2) for _, t1, t2, _ in seeds] == [True, True, False]


# -- chapter 5: what the bug costs at two heads ---------------------------------------------------


def test_chapter_5_bug_cost_is_quoted_from_the_table():
    text = _printed("05_multi_head_attention.ipynb", "def attention_with_scale(layer, x, scale)")
    rows = {
        int(h): (float(a), float(b), float(err))
        for h, a, b, _, _, err in re.findall(
            r"^ +(\d+) +([0-9.]+) +([0-9.]+) +([0-9.]+) +([0-9.]+) +([0-9.]+)%$", text, re.MULTILINE
        )
    }
    assert set(rows) == {2, 16}, text
    prose = _prose("05_multi_head_attention.ipynb", "c030-after")
    right, bug, error = rows[2]
    assert f"falls from {right:.3f} to {bug:.3f}" in prose and f"{error} % away" in prose
    assert f"{rows[16][2]} % away" in prose
    assert error > 10  # "already ... away": not a little
