"""Saved experiment results: one home (attncourse/data/), shipped with the package, found by name."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from attncourse.results import RESULTS_DIR, saved_results

ROOT = Path(__file__).resolve().parents[1]
NAMED = re.compile(r"saved_results\(\s*[\\\"']+([A-Za-z0-9_]+\.json)")


def names_in_chapters():
    names = set()
    for path in sorted((ROOT / "book").glob("*.ipynb")):
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            names.update(NAMED.findall("".join(cell["source"])))
    return sorted(names)


def test_chapters_load_only_results_that_exist():
    names = names_in_chapters()
    assert len(names) >= 8  # chapters 0, 3, 5, 8, 10 and 11 load saved results
    for name in names:
        assert (RESULTS_DIR / name).is_file(), name
        assert isinstance(saved_results(name), dict)


def test_every_saved_result_is_package_data():
    # pyproject.toml ships attncourse/data/*.json, so the student edition in Colab finds them
    text = (ROOT / "pyproject.toml").read_text()
    assert re.search(r'attncourse = \[[^\]]*"data/\*\.json"', text)
    assert sorted(p.suffix for p in RESULTS_DIR.iterdir() if p.is_file()) == [".json"] * len(
        list(RESULTS_DIR.glob("*.json"))
    )


def test_unknown_name_lists_what_there_is():
    with pytest.raises(FileNotFoundError, match=r"no saved result 'nope\.json'.*gqa_seeds\.json"):
        saved_results("nope.json")
