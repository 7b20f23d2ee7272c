"""Chapter 0's sentences against the numbers printed beside them (helpers: book_claims.py)."""

from __future__ import annotations

import re

import numpy as np
import pytest
from book_claims import (
    BOOK,
    CH00,
    _cells,
    _printed,
    _prose,
)


def test_chapter_0_memorising_is_judged_against_the_true_function():
    text = _printed(CH00, "kernel_regression_data(rng)")
    truth = re.search(r"the true f itself: training MSE ([0-9.]+), held-out MSE ([0-9.]+)", text)
    widths = {
        float(w): (float(t), float(h))
        for w, t, h in re.findall(r"width\s+([0-9.]+): training MSE ([0-9.]+), held-out MSE ([0-9.]+)", text)
    }
    true_train, true_held_out = float(truth.group(1)), float(truth.group(2))
    prose = _prose(CH00, "why-06")
    # "its training error is a third of what the true f scores on the same points"
    assert "a third of what the true $f$ scores" in prose
    assert 0.28 < widths[0.05][0] / true_train < 0.38
    # "its held-out error is about 1.8 times that of w = 0.3"
    assert "about 1.8 times that of $w = 0.3$" in prose
    assert round(widths[0.05][1] / widths[0.3][1], 1) == 1.8
    # w = 0.3's training error is near the true f's: the training error alone condemns nothing
    assert abs(widths[0.3][0] - true_train) < 0.02
    # "a held-out error a little below what the true f scores on the same fifty held-out points"
    best = _printed(CH00, "widths = np.logspace(-2, 1, 61)")
    fitted = [float(x) for x in re.findall(r"held-out MSE ([0-9.]+)", best)]
    assert len(fitted) == 2 and all(true_held_out - 0.03 < x < true_held_out for x in fitted)
    assert "a little below what the true $f$ scores" in _prose(CH00, "why-08")


def test_chapter_0_leave_one_out_error_has_a_minimum_and_rises_below_it():
    text = _printed(CH00, "not_self = leave_one_out.numpy()")
    rows = [
        tuple(float(x) for x in r) for r in re.findall(r"^ *([0-9.]+) +([0-9.]+) +([0-9.]+)$", text, re.M)
    ]
    assert len(rows) == 6, text
    widths, sees_itself, loo = (np.array(c) for c in zip(*rows))
    assert np.all(np.diff(widths) > 0)
    # "the error of points that may see themselves keeps falling" as the kernel narrows
    assert np.all(np.diff(sees_itself) > 0)
    # "the leave-one-out error is lowest near the learned width and rises again below it"
    best = int(np.argmin(loo))
    assert 0 < best < len(loo) - 1 and np.all(np.diff(loo[: best + 1]) < 0)
    learned = float(
        re.search(r"by gradient descent: width ([0-9.]+)", _printed(CH00, "np.logspace(-2, 1, 61)")).group(1)
    )
    assert abs(np.log(widths[best] / learned)) < np.log(1.5)
    assert "rises again below it" in _prose(CH00, "why-08c") and "rises again below it" in _prose(
        CH00, "why-23"
    )


def test_chapter_0_quotes_the_timing_ratio_it_printed():
    text = _printed(CH00, "t_add = fastest(")
    dot, add, ratio = re.search(
        r"dot product ([0-9.]+) ms, additive ([0-9.]+) ms \(additive / dot product: (\d+)\)", text
    ).groups()
    assert abs(float(add) / float(dot) - int(ratio)) / int(ratio) < 0.2  # the ms are rounded to 0.1
    prose = _prose(CH00, "why-22")
    # The saved ratio is one run's; the prose quotes only what the cell asserts on every run.
    assert "checks that it is above 5" in prose and int(ratio) > 5, (ratio, prose)
    timing = [c for c in _cells(CH00) if "t_add = fastest(" in "".join(c["source"])]
    assert len(timing) == 1 and "assert t_add > 5 * t_dot" in "".join(timing[0]["source"])
    assert "with threadpool_limits(1):" in "".join(timing[0]["source"])  # timed on one thread
    # the parts: the broadcast add and the tanh each cost more than the dot product's matrix product
    parts = dict(re.findall(r"(q k\^T|broadcast add|tanh|@ w_v) ([0-9.]+) ms", text))
    assert min(float(parts["broadcast add"]), float(parts["tanh"])) > 2 * float(parts["q k^T"]), parts
    assert "each take longer than the dot product's one matrix product" in prose
    # "on the run saved here they come to about half of it"
    whole = float(re.search(r"additive ([0-9.]+) ms \(additive", text).group(1))
    assert 0.4 < sum(map(float, parts.values())) / whole < 0.6 and "come to about half of it" in prose


def test_chapter_0_bottleneck_figure_counts_from_0():
    svg = (BOOK / "figures" / "bottleneck.svg").read_text(encoding="utf-8")
    subscripts = re.findall(r'baseline-shift="sub" font-size="\d+">([^<]+)</tspan>', svg)
    assert "0" in subscripts and "4" not in subscripts, subscripts
    alt = next("".join(c["source"]) for c in _cells(CH00) if "figures/bottleneck.svg" in "".join(c["source"]))
    assert "x0 to x3" in alt and "h0 to h3" in alt and "y0 to y3" in alt and "x4" not in alt
    # the bottom panel's decoder starts from the encoder's last state, as Seq2Seq does (s = final)
    assert '−1</tspan> = h<tspan baseline-shift="sub" font-size="10">3</tspan>' in svg
    assert "the decoder starts from its last state h3 (z-1 = h3)" in alt
    assert ">z<tspan" in svg  # the decoder state is z, as in the text: s counts source positions


def test_chapter_0_prints_how_many_held_out_sequences_score_the_models():
    import inspect

    pytest.importorskip("torch")  # evaluate_reversal lives with the torch models

    from attncourse.models.seq2seq import evaluate_reversal

    sweep = _printed(CH00, 'sweep = saved_results("seq2seq_lengths.json")')
    n_test = int(re.search(r"each run scored on (\d+) held-out sequences", sweep).group(1))
    # the model trained in the chapter is scored by evaluate_reversal's default count, the sweep's
    source = "".join(next(c for c in _cells(CH00) if c.get("id") == "why-13")["source"])
    assert "evaluate_reversal(model, n_source)" in source
    assert inspect.signature(evaluate_reversal).parameters["n_test"].default == n_test
    assert f"decodes {n_test} held-out sequences" in _prose(CH00, "why-12")


# -- chapter 0: what the length-sweep panel compares ---------------------------------------------


def test_chapter_0_sweep_panel_names_the_parameter_counts_it_compares():
    source = "".join(next(c for c in _cells(CH00) if c.get("id") == "why-15d")["source"])
    assert "Same parameters" not in source  # the three decoders differ in size
    printed = _printed(CH00, 'sweep = saved_results("seq2seq_lengths.json")')
    counts = [
        int(c.replace(",", "")) for c in re.findall(r"(?:state|attention) (\d{1,3}(?:,\d{3})*)", printed)
    ]
    assert len(counts) == 3 and len(set(counts)) == 3, printed
    assert 'f"Same training, {min(param_counts):,} to {max(param_counts):,} parameters"' in source
    # the shift's explanation is offered as a hypothesis, since no run here tests it
    assert "hypothesis that no run here tests" in _prose(CH00, "why-15b")


def test_chapter_0_narrow_kernel_shares_its_weight_and_short_sources_were_seen_in_training():
    line = re.search(
        r"width 0.05: weight on its own point median ([0-9.]+) \(lowest ([0-9.]+)\), on its three largest"
        r" weights median ([0-9.]+) \(lowest ([0-9.]+)\)",
        _printed(CH00, "top3 = np.sort(narrow"),
    )
    median, lowest, top3, top3_lowest = map(float, line.groups())
    # "about half its weight on itself and the rest on a neighbour or two"
    assert 0.35 <= median <= 0.65 and lowest < median and top3 >= 0.9 and top3_lowest >= 0.75
    assert "put about half its weight on itself" in _prose(CH00, "why-06")
    seen = re.search(r"n = 4: ([0-9.]+), n = 8: ([0-9.e-]+)", _printed(CH00, "draws = sweep")).groups()
    assert float(seen[0]) == pytest.approx(1 - (1 - 1e-4) ** 25600, abs=0.005) and float(seen[1]) < 1e-3
    assert f"(the last line: {seen[0]})" in _prose(CH00, "why-16")
    assert "beats it at $n = 8$, 12 and 16" in _prose(CH00, "why-24")
