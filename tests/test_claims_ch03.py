"""Chapter 3's sentences against the numbers printed beside them (helpers: book_claims.py)."""

from __future__ import annotations

import re

from book_claims import (
    CH03,
    _cells,
    _printed,
    _prose,
)


def test_chapter_3_scaled_rows_are_below_log_s_and_their_drift_is_the_shared_q():
    text = _printed(CH03, "same_length = []")
    rows = re.findall(r"^ *(\d+) +([0-9.]+) +([0-9.]+) +([0-9.]+) +([0-9.]+) +([0-9.]+)$", text, re.MULTILINE)
    assert len(rows) == 11, text
    d_k = [int(r[0]) for r in rows]
    scaled_max = [float(r[2]) for r in rows]
    same_length = [float(r[5]) for r in rows]
    below = re.search(r"scaled entropy: (\d+)% to (\d+)% below log S", text)
    prose = _prose(CH03, "scaling-11")
    # "the entropy sits 12 % to 16 % below log S"
    assert f"sits {below.group(1)} % to {below.group(2)} %" in prose
    # "the largest weight rises only from 0.205 at d_k = 1 to about 0.25 from d_k = 16 on"
    assert f"from {scaled_max[0]:.3f} at $d_k = 1$" in prose
    assert all(abs(w - 0.25) < 0.01 for k, w in zip(d_k, scaled_max) if k >= 16)
    assert scaled_max[0] < 0.21
    # "(the last column: 0.24 to 0.25 at every width)": one |q| per row removes the drift
    assert "0.24 to 0.25 at every width" in prose
    assert all(0.235 <= w < 0.255 for w in same_length), same_length
    source = "".join(next(c for c in _cells(CH03) if c.get("id") == "scaling-09")["source"])
    assert "within 5 % of log S everywhere" not in source


def _chapter_3_gradient_table() -> dict:
    """d_k -> (median unscaled, median scaled, mean unscaled, mean scaled, starved %, largest
    unscaled, largest scaled), from the end-to-end gradient table."""
    text = _printed(CH03, "largest_ratio = ")
    number = r"([0-9.e+-]+)"
    rows = re.findall(
        r"^ *(\d+) +" + r" +".join([number] * 4) + r" +([0-9.]+)% +([0-9.]+) +([0-9.]+)$", text, re.MULTILINE
    )
    assert len(rows) == 7, text
    return {int(r[0]): tuple(float(x) for x in r[1:]) for r in rows}


def test_chapter_3_escaping_rows_are_quoted_from_the_gradient_printout():
    text = _printed(CH03, "largest_ratio = ")
    table = _chapter_3_gradient_table()
    rows = re.findall(r"^ *(\d+) +([0-9.]+) +([0-9.]+)$", text, re.MULTILINE)
    ratios = {int(d): float(r) for d, r, _ in rows}
    per_root = {int(d): float(x) for d, _, x in rows}
    assert sorted(ratios) == sorted(table), text
    story = _prose(CH03, "scaling-grad-story")
    # "the largest unscaled gradient is 10.2, 17.4, 20.2 and 28.5 times the largest scaled one at
    # d_k = 64, 128, 256 and 1024, that is 1.27, 1.54, 1.26 and 0.89 times sqrt(d_k)" (the table
    # prints ratio / sqrt(d_k), not sqrt(d_k) itself: sqrt(128) is exercise 3.4's answer)
    quoted = ", ".join(f"{ratios[d]:.1f}" for d in (64, 128, 256)) + f" and {ratios[1024]:.1f} times"
    assert quoted in story, quoted
    times = ", ".join(f"{per_root[d]:.2f}" for d in (64, 128, 256)) + f" and {per_root[1024]:.2f} times"
    assert times in story, times
    assert all(abs(per_root[d] - ratios[d] / d**0.5) < 0.01 + 0.05 / d**0.5 for d in ratios), per_root
    assert "inflated by the factor" not in story
    # "a factor close to the sqrt(d_k)": every ratio from d_k = 4 on within a factor 1.6 of sqrt(d_k)
    assert all(1 / 1.6 < ratios[d] / d**0.5 < 1.6 for d in ratios if d >= 4), ratios
    # the queries above every scaled gradient, and the gap between their two top scores
    above = re.search(
        r"d_k = 1024, unscaled: (\d+) of (\d+) queries above the largest scaled gradient; the gap between"
        r" their two top scores: median ([0-9.]+), at most ([0-9.]+); over all \d+ queries: median ([0-9.]+)",
        text,
    )
    n_above, n_queries, gap_above, _, gap_all = above.groups()
    grad_text = _prose(CH03, "scaling-grad-text")
    assert (
        f"{n_above} of the {n_queries} queries receive a gradient larger than the largest scaled" in grad_text
    )
    assert f"(a gap of {gap_above} at the median, against {gap_all} over all queries)" in grad_text
    assert float(gap_above) < 0.5 * float(gap_all)
    assert f"{n_above} of the {n_queries} get gradients larger than any scaled one" in story
    summary = _prose(CH03, "scaling-20")
    assert f"{n_above} of {n_queries} get gradients larger than any scaled one" in summary
    median_ratio, mean_ratio = re.search(
        r"the unscaled median is ([0-9,]+) times smaller, the unscaled mean ([0-9.]+) times larger", text
    ).groups()
    assert f"a gradient {median_ratio} times smaller than with scaling" in grad_text
    assert f"gradient is {mean_ratio} times larger" in grad_text
    # scaled, from d_k = 4 on: the median and the largest gradient, and the largest unscaled one
    wide = [row for d, row in table.items() if d >= 4]
    medians, largest = [row[1] for row in wide], [row[6] for row in wide]
    ranges = f"the median stays between {min(medians):.2f} and {max(medians):.2f} and the largest gradient between {min(largest):.1f} and {max(largest):.1f}"
    assert ranges in story and ranges in summary, ranges
    assert f"grows from {table[4][5]:.1f} to {table[1024][5]:.1f}" in summary
    assert f"they are {table[1][1]:.2f} and {table[1][6]:.1f})" in story
    assert "barely move" not in summary


def test_chapter_3_summary_calls_sqrt_dk_the_distributions_spread():
    text = _printed(CH03, "spread_scaled = ")
    spread = re.search(r"std of the scores: unscaled ([0-9.]+)", text).group(1)
    summary = _prose(CH03, "scaling-20")
    assert (
        "exactly the spread" not in summary
        and "the standard deviation of the unscaled scores' distribution" in summary
    )
    assert (
        f"({spread} for the $d_k = 512$ row above, against $\\sqrt{{512}} \\approx {512**0.5:.1f}$)"
        in summary
    )
    assert abs(float(spread) - 512**0.5) > 0.05 * 512**0.5  # one row's spread is not sqrt(d_k) itself


def test_chapter_3_training_prose_is_quoted_from_the_table():
    text = _printed(CH03, "def first_step_below")
    accuracy = [float(a) for a in re.findall(r"([0-9.]+) +\(seed \d\)$", text, re.MULTILINE)]
    assert len(accuracy) == 12, text
    assert "10-step mean" in text.splitlines()[2]  # the column header says what the step measures
    below = re.search(
        r"held-out accuracy below 1.000: d_k = (\d+) (scaled|unscaled) seed (\d) \(([0-9.]+)\)$",
        text,
        re.MULTILINE,
    )
    d_k, kind, seed, value = below.groups()
    assert sum(a < 1 for a in accuracy) == 1 and min(accuracy) == float(value)
    prose = _prose(CH03, "scaling-train-text")
    assert f"answers at least {min(accuracy):.1%}".replace("%", " %") in prose
    assert f"(all print 1.000 but the {kind} $d_k = {d_k}$ run of seed {seed}, at {value})" in prose
    assert "brings its 10-step mean loss below 0.5 later than every scaled seed" in prose


def test_chapter_3_figures_draw_the_lines_the_tables_use():
    def source(cell_id):
        return "".join(next(c for c in _cells(CH03) if c.get("id") == cell_id)["source"])

    assert "axhline(0.5" in source("scaling-train-plot") and "the table's threshold" in source(
        "scaling-train-plot"
    )
    grad_plot = source("scaling-grad-plot")
    assert 'starve_line = 0.01 * np.median(grad_norms["scaled"][-1])' in grad_plot
    assert grad_plot.count("axvline(") == 4 and "floor 1e-30" in grad_plot
    assert 'mean_norm["scaled"]' in source("scaling-14")  # the printed scaled mean is drawn too
