"""Chapter 13's sentences against the numbers printed beside them (helpers: book_claims.py)."""

from __future__ import annotations

import re

import pytest
from book_claims import (
    BOOK,
    CH13,
    _cells,
    _printed,
    _prose,
)


def test_chapter_13_gradient_step_sentences_read_the_table():
    text = _printed(CH13, "loss(S).backward()")
    # " 0.5   5.6e-17   1.1805   3.0e-01   0.2500   0.1186 -> 0.1129": beta, gap, before, after, ratio, others
    rows = re.findall(
        r"^ *([0-9.]+) +([0-9.e+-]+) +([0-9.]+) +([0-9.e+-]+) +([0-9.]+) +([0-9.]+) -> ([0-9.]+)$",
        text,
        re.MULTILINE,
    )
    assert [float(r[0]) for r in rows] == [0.5, 1.0], text
    prose = _prose(CH13, "ch13-delta-gradient-after")
    for beta, gap, before, after, ratio, others_before, others_after in rows:
        beta = float(beta)
        assert float(gap) < 1e-12  # "agree to rounding"
        assert f"agree to rounding ({gap})" in prose
        assert float(ratio) == pytest.approx((1 - beta) ** 2, abs=1e-4)  # "which is (1 - beta)^2"
        assert f"Pair 5's loss, {before} before" in prose
        assert f"from {others_before} to" in prose and f"{others_after} with $\\beta = {beta:g}" in prose
    half, one = rows
    assert f"multiplied by {half[4]} with $\\beta = 0.5$" in prose
    assert float(one[3]) < 1e-30 and "the loss is 0 to rounding (under 1e-30)" in prose


def test_chapter_13_chunk_sentence_reads_the_corrections():
    text = _printed(CH13, "u_start = beta *")
    misses = [float(x) for x in re.search(r"max \|difference\|: +(.*)$", text, re.MULTILINE).group(1).split()]
    sizes = [float(x) for x in re.search(r"max \|u\|: +(.*)$", text, re.MULTILINE).group(1).split()]
    prose = _prose(CH13, "ch13-delta-chunk-after")
    # "Only the chunk's first correction is right (0.000); the other three miss by A to B, against C to D"
    assert misses[0] == 0 and min(misses[1:]) > 0 and len(misses) == 4
    assert f"first correction is right ({misses[0]:.3f})" in prose
    assert f"other three miss by {min(misses[1:]):.3f} to {max(misses[1:]):.3f}" in prose
    assert f"against corrections of {min(sizes[1:]):.3f} to {max(sizes[1:]):.3f}" in prose


def test_chapter_13_decode_step_times_are_the_fastest_of_repeats_and_the_cache_grows_every_row():
    source = "".join(next(c for c in _cells(CH13) if c.get("id") == "ch13-decode-time")["source"])
    assert "def fastest_step(make_step, repeats):" in source and "min(best," in source
    text = _printed(CH13, "def fastest_step(make_step")
    assert "fastest of 200" in text
    rows = [tuple(int(x) for x in r) for r in re.findall(r"^ *(\d+) +(\d+) +(\d+)$", text, re.MULTILINE)]
    assert [T for T, _, _ in rows] == [256, 1024, 4096, 16384], text
    cached = [c for _, c, _ in rows]
    recurrent = [r for _, _, r in rows]
    prose = _prose(CH13, "ch13-decode-after")
    # "The cache's step grows from each row to the next"
    assert "grows from each row to the next" in prose
    assert all(a < b for a, b in zip(cached, cached[1:])), cached
    # "the recurrent step takes about the same time at every T"
    assert "about the same time at every $T$" in prose
    assert max(recurrent) / min(recurrent) < 1.5, recurrent
    assert "fastest of 200 single steps" in _prose(CH13, "ch13-decode-time-md")
    # "The recurrent column times one and the same step at every T: its code never receives T ... the
    # differences between its rows are noise": recurrent() takes no argument and is timed at every T
    assert "times one and the same step at every $T$" in prose and "its code never receives $T$" in prose
    assert "def recurrent():" in source and "fastest_step(recurrent, repeats=20)" in source
    # no unmeasured reading of the cache's time: no overhead share, no fused kernel
    assert "overhead" not in prose and "fused" not in prose


def test_chapter_13_state_update_figure_draws_the_state_after_as_large_as_the_state_before():
    svg = (BOOK / "figures" / "state_update.svg").read_text(encoding="utf-8")
    rects = re.findall(
        r'<rect x="[0-9.]+" y="[0-9.]+" width="([0-9.]+)" height="([0-9.]+)" fill="#3b528b"', svg
    )
    assert len(rects) == 3 and len(set(rects)) == 1, rects  # S, S' (linear attention) and S (delta rule)
    assert "S′ (E × Ev)" in svg and "same size" in svg
    prose = _prose(CH13, "ch13-decode-after")  # the figure's beta and u come before their section
    assert "defined in the section on the delta rule below" in prose


def test_chapter_13_hedges_what_its_runs_do_not_measure():
    recall_after = _prose(CH13, "ch13-recall-after")  # elu + 1's crosstalk: present, its size unmeasured
    assert "never orthogonal" not in recall_after and "ever orthogonal" not in recall_after
    assert "no two keys' features are exactly orthogonal" in recall_after
    assert "how much of the fall it causes in the trained model is not measured here" in recall_after
    assert "which do not decide it" in _prose(CH13, "ch13-back-to-back-md")
    # at n = 1 all eight questions ask the one stored key (asked keys drawn with replacement)
    assert "all eight questions ask the one stored key" in _prose(CH13, "ch13-back-to-back-after")
    from attncourse.results import saved_results

    assert saved_results("recall_state_size.json")["pairs"][0] == 1
    # the explorer's linear attention is the chapter's (elu + 1, normalised), and the page says so
    assert "the chapter's feature map, elu + 1, and each read divided by the normaliser" in _prose(
        CH13, "ch13-explore"
    )


def test_chapter_13_recall_panels_are_titled_by_head_width_not_state():
    source = "".join(next(c for c in _cells(CH13) if c.get("id") == "ch13-recall-plot")["source"])
    assert 'title=f"head width E = {E_}"' in source and "state {E_} x" not in source
    md = _prose(CH13, "ch13-recall-md")  # softmax has no fixed state: the E x E is said of the other two
    assert "linear attention's and DeltaNet's states are $E \\times E$" in md
    assert "softmax attention's cache grows with the sequence" in md
