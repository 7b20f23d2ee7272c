"""Chapter 1's sentences against the numbers printed beside them (helpers: book_claims.py)."""

from __future__ import annotations

import re

import numpy as np
import pytest
from book_claims import (
    CH01,
    _cells,
    _printed,
    _prose,
)


def _vector(line: str) -> np.ndarray:
    """The numbers of the last ``[...]`` on a printed line (``inf``, ``-inf`` and ``nan`` included)."""
    inside = re.findall(r"\[([^\]]*)\]", line)[-1]
    return np.array([float(v) for v in inside.split()])


def test_chapter_1_log_of_softmax_is_minus_infinity_where_x_minus_logsumexp_is_the_score():
    text = _printed(CH01, "def logsumexp(x, axis=-1):")
    prose = _prose(CH01, "softmax-logsoftmax") + " " + _prose(CH01, "softmax-38")
    blocks = re.findall(
        r"(float\d+): x = (\[[^\]]*\]).*\n.*log\(softmax\(x\)\)\s*= (\[.*\])\n.*logsumexp\(x\) = (\[.*\])",
        text,
    )
    assert [b[0] for b in blocks] == ["float32", "float64"], text
    for dtype, x, via_p, safe in blocks:
        x, via_p, safe = _vector(x), _vector(via_p), _vector(safe)
        low = x.min()
        assert via_p[x.argmin()] == -np.inf, (dtype, via_p)  # log(softmax) loses the low score
        assert np.isfinite(safe).all() and np.array_equal(safe, x), (dtype, safe)  # exact: x - 0
        # the summary names the score below the maximum at which each dtype's weight was lost
        assert f"{-low:g} below the row's maximum in {dtype}" in prose or f"{-low:g} in {dtype}" in prose, (
            dtype,
            low,
        )


def test_chapter_1_cross_entropy_gradient_is_p_minus_onehot_as_printed():
    text = _printed(CH01, "def ce_loss(x):")
    rows = {
        name: _vector(line)
        for name in ("p - onehot(y)", "autograd", "finite difference")
        for line in text.splitlines()
        if line.startswith(name)
    }
    assert len(rows) == 3, text
    onehot = np.zeros(3)
    onehot[np.argmin(rows["p - onehot(y)"])] = 1.0  # the right answer's entry is the negative one
    p = rows["p - onehot(y)"] + onehot
    assert p.sum() == pytest.approx(1.0, abs=1e-3) and (p > 0).all()  # what is left is a distribution
    assert np.array_equal(rows["autograd"], rows["p - onehot(y)"])
    assert np.array_equal(rows["finite difference"], rows["p - onehot(y)"])
    gap = float(re.search(r"finite difference: ([0-9.e+-]+)", text).group(1))
    assert gap < 1e-8
    prose = _prose(CH01, "softmax-ce-gradient")
    assert "y = 2" in prose and onehot[2] == 1.0


def test_chapter_1_float32_cross_entropy_through_log_softmax_is_infinite_and_through_lse_is_120():
    text = _printed(CH01, "x32 = np.array([[0.0, -120.0]]")
    naive = re.search(r"-log\(softmax\(x\)\)\[1\]: loss (\S+), gradient (\[.*\])", text)
    safe = re.search(r"cross_entropy\(x, 1\): loss (\S+), gradient (\[.*\])", text)
    formula = re.search(r"p - onehot\(1\):\s+(\[.*\])", text)
    assert naive and safe and formula, text
    assert float(naive.group(1)) == np.inf and np.isnan(_vector(naive.group(2))).all()
    assert float(safe.group(1)) == 120.0
    assert np.array_equal(_vector(safe.group(2)), [1.0, -1.0])
    assert np.array_equal(_vector(formula.group(1)), [1.0, -1.0])
    prose = _prose(CH01, "softmax-ce-underflow")
    assert "the loss is 120" in prose and "(1, -1)" in prose and "infinite" in prose and "`nan`" in prose


def test_chapter_1_quotes_the_overflow_limits_and_explains_float16s_zero():
    limits = dict(
        re.findall(
            r"(float\d+) +largest \S+: exp\(x\) = inf for x > ([0-9.]+)",
            _printed(CH01, "np.finfo(dtype).max"),
        )
    )
    assert set(limits) == {"float16", "float32", "float64"}, limits
    prose = _prose(CH01, "softmax-18")
    assert f"above {limits['float64']} breaks" in prose and f"one above {limits['float32']}," in prose
    text = _printed(CH01, "half = np.array([10.0, 12.0], dtype=np.float16)")
    exp_half = next(line for line in text.splitlines() if line.startswith("exp(half)"))
    first = float(re.search(r"\[\s*([0-9.e+]+)\s+inf\]\s+sum inf", exp_half).group(1))
    naive = next(line for line in text.splitlines() if line.startswith("softmax_naive(half)"))
    assert _vector(naive)[0] == 0.0 and np.isnan(_vector(naive)[1])
    # "e^10 ~ 22026 still fits below 65504, but the sum is inf": a finite number over inf is 0
    assert first == pytest.approx(22026, rel=1e-3) and first < float(np.finfo(np.float16).max) < np.exp(12)
    assert "$e^{10} \\approx 22026$ still fits below 65504" in prose and "over `inf`, 0" in prose


def test_chapter_1_saturated_softmax_jacobian_is_taken_with_respect_to_the_scores():
    source = "".join(next(c for c in _cells(CH01) if c.get("id") == "softmax-35")["source"])
    assert "/ T  # dp/dx" in source
    rows = re.findall(
        r"T = *([0-9.]+): largest weight ([0-9.]+), norm of dp/dx ([0-9.e+-]+)", _printed(CH01, "J_T = ")
    )
    assert [float(t) for t, _, _ in rows] == [1.0, 0.1, 0.01], rows
    norms = [float(n) for _, _, n in rows]
    # "a very peaked softmax passes almost no gradient back to its scores", even after the 1/T
    assert norms[0] > 0.1 and norms[1] < 1e-2 * norms[0] and norms[2] < 1e-30
    assert "the Jacobian with respect to $x$ is $J / T$" in _prose(CH01, "softmax-34")


def test_chapter_1_naive_softmax_fails_below_zero_too_and_the_jacobian_keeps_its_diagonal():
    text = _printed(CH01, "low = np.array([-1000.0, -1001.0])")
    assert "exp(low)              [0. 0.]" in text and "softmax_naive(low)    [nan nan]" in text
    assert "underflows to 0 even in float64, and $0 / 0$ is `nan`" in _prose(CH01, "softmax-18")
    # the printed norm at T = 0.01 is the exact one. With p = (1, p1, p2) and p2 negligible, J / T
    # holds p1 / T in four places, so its norm is 2 p1 / T; losing the diagonal's largest entry
    # (1 - p0 rounded to 0) would print sqrt(3) p1 / T instead
    p1 = np.exp(-100.0)  # e^((1 - 2) / 0.01), over a sum that is 1 to float precision
    line = re.search(r"T = 0.01: largest weight 1.0000, norm of dp/dx ([0-9.e+-]+)", _printed(CH01, "J_T = "))
    assert float(line.group(1)) == pytest.approx(2 * p1 / 0.01, rel=2e-3, abs=0)
