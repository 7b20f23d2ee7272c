"""Chapter 2's sentences against the numbers printed beside them (helpers: book_claims.py)."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from book_claims import (
    CH02,
    _cells,
    _printed,
    _prose,
)


def test_chapter_2_on_prefers_mat_by_length_times_cosine_as_the_prose_says():
    text = _printed(CH02, 'i_on = source.index("on")')
    # "5 mat    2.00  0.95      3.00   0.486    0.304": key, token, |k|, cos, |q||k|cos, weight, unit
    rows = {
        m.group(2): (int(m.group(1)), *(float(x) for x in m.group(3, 4, 5, 6, 7)))
        for m in re.finditer(
            r"^(\d) (\w+) +([0-9.]+) +(-?[0-9.]+) +(-?[0-9.]+) +([0-9.]+) +([0-9.]+)$", text, re.MULTILINE
        )
    }
    assert len(rows) == 5, text  # "the" twice, at keys 0 and 4
    key_on, len_on, cos_on, score_on, w_on, unit_on = rows["on"]
    key_mat, len_mat, cos_mat, score_mat, w_mat, unit_mat = rows["mat"]
    # the sentence's point: "mat" is less aligned with "on" than "on" itself, longer, and wins
    assert cos_mat < cos_on == 1.0 and len_mat > len_on and w_mat > w_on
    assert w_mat == max(r[4] for r in rows.values())
    # scaled to length 1, "on" wins and "mat" is second
    assert unit_on == max(r[5] for r in rows.values())
    assert unit_mat == max(r[5] for t, r in rows.items() if t != "on")
    assert score_mat == pytest.approx(len_on * len_mat * cos_mat, abs=0.02)
    assert score_on == pytest.approx(len_on * len_on, abs=0.02)
    assert f"largest weight, raw keys: mat (key {key_mat}); keys of length 1: on (key {key_on})" in text
    doubled = re.search(r"twice its length: largest weight ([0-9.]+), on mat", text)
    assert doubled and float(doubled.group(1)) > w_mat  # same winner, sharper
    intro = _prose(CH02, "dotattn-prefers")
    assert (
        f"row {key_on}, *on*, gives more weight to *mat* (key {key_mat}) than to itself (key {key_on})"
        in intro
    )
    prose = _prose(CH02, "dotattn-prefers-2")
    assert f"(cosine {cos_mat:.2f}) and is longer ({len_mat:.2f} against {len_on:.2f})" in prose
    assert f"${len_on:.2f} \\times {len_mat:.2f} \\times {cos_mat:.2f} = {score_mat:.2f}$" in prose
    assert f"${len_on:.2f} \\times {len_on:.2f} \\times 1 = {score_on:.2f}$" in prose
    assert f"gives *mat* {w_mat:.3f} and *on* {w_on:.3f}" in prose
    assert f"*on* first with {unit_on:.3f}, *mat* second with {unit_mat:.3f}" in prose
    assert f"now {float(doubled.group(1)):.3f}" in prose


def test_chapter_2_plane_output_can_be_checked_by_hand_from_the_printed_values():
    from attncourse import toy_data

    text = _printed(CH02, "q_plane = np.array(")
    values = json.loads(re.search(r"values v0\.\.v4: *(\[.*\])$", text, re.MULTILINE).group(1))
    np.testing.assert_array_equal(values, toy_data.VALUES_2D)  # the explorer's values
    weights = np.array(re.search(r"weights: *\[([^\]]*)\]", text).group(1).split(), dtype=float)
    output = np.array(re.search(r"output: *\[([^\]]*)\]", text).group(1).split(), dtype=float)
    # the printed (rounded) weights times the printed values give the printed output
    np.testing.assert_allclose(weights @ np.array(values), output, atol=0.01)
    assert "checked by hand" in _prose(CH02, "plane-example-md")


def test_chapter_2_counts_keys_queries_and_coordinates_from_0():
    text = "\n".join("".join(c["source"]) for c in _cells(CH02) if c["cell_type"] == "markdown")
    assert not re.search(r"_\{[ij] ?= ?1\}", text)  # sums from 0, as the code indexes
    assert "$q_0$ is the query of the worked" in text and "row 0 must repeat" in text
    code = "\n".join("".join(c["source"]) for c in _cells(CH02) if c["cell_type"] == "code")
    # a variable "q1" would read as query 1 of the heatmap's labels "q0", "q1", "q2"
    assert not re.search(r"(?<![\"'])\bq1\b(?![\"'])", code)


def test_chapter_2_matrix_formula_is_tagged_unscaled_and_the_maps_number_their_keys():
    prose = _prose(CH02, "dotattn-22")
    assert "\\text{(unscaled)}" in prose and "chapter 3 divides them by $\\sqrt{E}$" in prose
    source = "".join(next(c for c in _cells(CH02) if c.get("id") == "dotattn-33")["source"])
    tokens = eval(re.search(r"^source = (\[.*\])$", source, re.MULTILINE).group(1))  # noqa: S307
    # the prose's key numbers are the tick labels' numbers: "the" is key 0 and key 4
    assert [i for i, t in enumerate(tokens) if t == "the"] == [0, 4]
    assert "(keys 0 and 4)" in _prose(CH02, "dotattn-35") and "(rows 0 and 4)" in _prose(CH02, "dotattn-35")
    figure = "".join(next(c for c in _cells(CH02) if c.get("id") == "dotattn-34")["source"])
    assert 'source_ticks = [f"{i} {t}" for i, t in enumerate(source)]' in figure
    assert "attention_heatmap(weights_cross, target_ticks, source_ticks" in figure
    assert "attention_heatmap(weights_self, source_ticks, source_ticks" in figure
