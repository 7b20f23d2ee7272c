"""Saved results of the experiments too long to run inside a chapter.

Each ``scripts/experiments/*.py`` writes its results as JSON into ``attncourse/data/``, which is
installed with the package, so a chapter finds them wherever it runs: in the repository, in the
student edition, in Colab.  A chapter loads them with :func:`saved_results`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

__all__ = ["RESULTS_DIR", "saved_results"]

RESULTS_DIR = Path(__file__).resolve().parent / "data"


def saved_results(name: str) -> Any:
    """The parsed JSON file ``name`` from ``attncourse/data/``.

    >>> saved_results("gqa_seeds.json")["seeds"]
    [0, 1, 2, 3, 4, 5]
    """
    path = RESULTS_DIR / name
    if not path.is_file():
        known = ", ".join(sorted(p.name for p in RESULTS_DIR.glob("*.json"))) or "none"
        raise FileNotFoundError(
            f"no saved result {name!r} in {RESULTS_DIR} (saved results: {known}); "
            "the scripts in scripts/experiments/ make them"
        )
    return json.loads(path.read_text(encoding="utf-8"))
