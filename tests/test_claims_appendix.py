"""the appendix's sentences against the numbers printed beside them (helpers: book_claims.py)."""

from __future__ import annotations

from book_claims import (
    _printed,
    _prose,
)


def test_appendix_prints_the_three_claims_it_makes_about_masks_and_rope():
    notebook = "appendix_common_bugs.ipynb"
    masks = _printed(notebook, "an additive -1e9 cast to float16")
    assert "an additive -1e9 cast to float16: -inf" in masks
    assert "all keys masked with -65504.0: weights [0.25, 0.25, 0.25, 0.25]" in masks
    assert "all keys masked with -inf: weights [nan, nan, nan, nan]" in masks
    prose = _prose(notebook, "f7513588")
    assert (
        "silently becomes $-\\infty$" in prose and "equal weights on the masked keys instead of NaN" in prose
    )
    rope = _printed(notebook, "apply_rope on one row without positions=")
    assert "without positions= is position 0: True | not position 3: False" in rope
    assert "without `positions=` rotates the one-row input to position 0" in _prose(
        notebook, "bugs-rope-cache-md"
    )
