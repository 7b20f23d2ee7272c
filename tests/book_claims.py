"""Helpers for the chapters' sentences against the numbers printed beside them.

The tests (``test_claims_*.py``, one file per chapter) read a chapter's saved outputs (the
committed, executed ``book/*.ipynb``) and the prose cell that describes them, and check that the
prose says what the numbers say: a sentence that claims something grows, stays flat or is a given
fraction of something else fails there when a re-executed chapter prints numbers that no longer
support it.  Where the numbers are
deterministic (the memory peaks of chapter 9), the test also measures them again.
"""

from __future__ import annotations

import json
from pathlib import Path

BOOK = Path(__file__).resolve().parents[1] / "book"


# The chapters the claim tests read, by number.
CH00 = "00_why_attention.ipynb"
CH01 = "01_softmax.ipynb"
CH02 = "02_dot_product_attention.ipynb"
CH03 = "03_scaling.ipynb"
CH07 = "07_positional_encoding.ipynb"
CH09 = "09_efficient_attention.ipynb"
CH10 = "10_vision_transformer.ipynb"
CH11 = "11_modern_attention.ipynb"
CH12 = "12_cross_attention.ipynb"
CH13 = "13_beyond_softmax.ipynb"


def _cells(notebook: str) -> list:
    return json.loads((BOOK / notebook).read_text(encoding="utf-8"))["cells"]


def _printed(notebook: str, marker: str) -> str:
    """What the code cell of ``book/<notebook>`` whose source contains ``marker`` printed."""
    cells = [c for c in _cells(notebook) if c["cell_type"] == "code" and marker in "".join(c["source"])]
    assert len(cells) == 1, f"{notebook}: {len(cells)} code cells contain {marker!r}"
    text = "".join(
        "".join(o.get("text", "")) for o in cells[0].get("outputs", []) if o["output_type"] == "stream"
    )
    assert text, f"{notebook}: the cell with {marker!r} has no saved output; execute the notebook"
    return text


def _prose(notebook: str, cell_id: str) -> str:
    """The text of the markdown cell ``cell_id``, on one line (the prose wraps anywhere)."""
    cells = [c for c in _cells(notebook) if c.get("id") == cell_id]
    assert len(cells) == 1 and cells[0]["cell_type"] == "markdown", cell_id
    return " ".join("".join(cells[0]["source"]).split())
