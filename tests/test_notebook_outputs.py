"""Each chapter's saved outputs are what its code prints today.

The book build executes every chapter (``execute_notebooks: force``) and writes the executed
copies to ``_build/jupyter_execute/``.  These tests compare them, cell by cell, with the outputs
saved in ``book/*.ipynb`` under nbval's rules, so one execution serves both the HTML book and the
output check:

* text outputs are compared after the substitutions in ``tests/nbval_sanitize.cfg``;
* images, widget model ids, execution counts and metadata are not compared;
* a cell tagged ``nbval-ignore-output`` or ``nbval-skip`` (or marked ``# NBVAL_IGNORE_OUTPUT`` /
  ``# NBVAL_SKIP``) is not compared (it must still run: the build stops on any error).

Without a built book the tests skip; ``REQUIRE_BUILT_BOOK=1`` (set by ``scripts/test.sh``) makes
that a failure.  A build older than a notebook's code fails: rebuild with ``bash scripts/build_book.sh``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from built_book import built_file

ROOT = Path(__file__).resolve().parents[1]
EXECUTED = ROOT / "_build" / "jupyter_execute"
SANITIZE = ROOT / "tests" / "nbval_sanitize.cfg"
NOTEBOOKS = sorted((ROOT / "book").glob("*.ipynb"))

# Output fields nbval leaves out of the comparison (random ids, counters, pixels).
NOT_COMPARED = {
    "metadata",
    "traceback",
    "prompt_number",
    "output_type",
    "name",
    "execution_count",
    "application/vnd.jupyter.widget-view+json",
    "image/png",
    "image/jpeg",
}
IGNORE_TAGS = {"nbval-ignore-output", "nbval-skip"}
IGNORE_MARKERS = re.compile(r"^\s*#\s*NBVAL_(IGNORE_OUTPUT|SKIP)\b", re.MULTILINE)


def sanitize_patterns(text: str) -> list:
    """``(regex, replacement)`` pairs from an nbval sanitize file, parsed as nbval parses it."""
    pairs = re.findall(r"^regex: (.*)$\n^replace: (.*)$", text, flags=re.MULTILINE)
    return [(re.compile(regex), replacement) for regex, replacement in pairs]


PATTERNS = sanitize_patterns(SANITIZE.read_text()) if SANITIZE.exists() else []


def _text(value):
    return "".join(value) if isinstance(value, list) else value


def _sanitize(value):
    value = _text(value)
    if isinstance(value, str):
        for regex, replacement in PATTERNS:
            value = regex.sub(replacement, value)
    return value


def comparable(outputs: list) -> dict:
    """nbval's view of a cell's outputs: consecutive streams joined, then every compared field
    (``stdout``, ``text/plain``, ``ename`` ...) mapped to the list of its sanitized values."""
    merged: list = []
    for out in outputs:
        if out["output_type"] == "stream" and merged and merged[-1].get("stream") == out["name"]:
            merged[-1]["chunks"].append(_text(out["text"]))
        elif out["output_type"] == "stream":
            merged.append({"stream": out["name"], "chunks": [_text(out["text"])]})
        else:
            merged.append(out)
    for out in merged:
        if "stream" in out:
            chunks = out.pop("chunks")
            # myst-nb's nb_merge_streams joins a cell's stream chunks into the first one but
            # leaves the later chunks in the executed copy as well: [A+B+C, B, C] reads as A+B+C
            rest = "".join(chunks[1:])
            out["text"] = chunks[0] if rest and chunks[0].endswith(rest) else "".join(chunks)
    fields: dict = {}
    for out in merged:
        if "stream" in out:
            fields.setdefault(out["stream"], []).append(_sanitize(out["text"]))
            continue
        for key, value in out.items():
            if key == "data":
                for mime, data in value.items():
                    if mime not in NOT_COMPARED:
                        fields.setdefault(mime, []).append(_sanitize(data))
            elif key not in NOT_COMPARED:
                fields.setdefault(key, []).append(_sanitize(value))
    return fields


def compared(cell: dict) -> bool:
    tags = set(cell.get("metadata", {}).get("tags", []))
    return (
        cell["cell_type"] == "code"
        and not tags & IGNORE_TAGS
        and not IGNORE_MARKERS.search(_text(cell["source"]))
    )


def differences(saved: dict, executed: dict) -> list:
    """One line per code cell whose outputs differ (empty when the notebook is up to date)."""
    ran = {c.get("id"): c for c in executed["cells"] if c["cell_type"] == "code"}
    found = []
    for number, cell in enumerate(saved["cells"]):
        if not compared(cell):
            continue
        other = ran.get(cell.get("id"))
        if other is None or _text(other["source"]) != _text(cell["source"]):
            found.append(f"cell {number} ({cell.get('id')}): the build ran other code; rebuild the book")
            continue
        want, got = comparable(cell.get("outputs", [])), comparable(other.get("outputs", []))
        if want != got:
            keys = sorted(set(want) | set(got), key=str)
            first = next(k for k in keys if want.get(k) != got.get(k))
            found.append(
                f"cell {number} ({cell.get('id')}), {first}:\n  saved:    {want.get(first)!r:.400}\n"
                f"  executed: {got.get(first)!r:.400}"
            )
    return found


def _executed_copy(notebook: Path) -> Path:
    return built_file(EXECUTED / notebook.relative_to(ROOT))


@pytest.mark.book
@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_saved_outputs_are_what_the_build_printed(notebook):
    executed = json.loads(_executed_copy(notebook).read_text(encoding="utf-8"))
    saved = json.loads(notebook.read_text(encoding="utf-8"))
    found = differences(saved, executed)
    assert not found, f"{notebook.name}: saved outputs differ from a fresh run:\n" + "\n".join(found)


def test_the_comparison_sees_a_changed_number_and_ignores_what_nbval_ignores():
    def cell(outputs, tags=()):
        return {
            "cell_type": "code",
            "id": "c",
            "source": "x",
            "metadata": {"tags": list(tags)},
            "outputs": outputs,
        }

    printed = [{"output_type": "stream", "name": "stdout", "text": ["a = 1\n", "b = 2\n"]}]
    split = [
        {"output_type": "stream", "name": "stdout", "text": "a = 1\n"},
        {"output_type": "stream", "name": "stdout", "text": "b = 2\n"},
    ]
    changed = [{"output_type": "stream", "name": "stdout", "text": "a = 1\nb = 3\n"}]
    picture = [
        {
            "output_type": "display_data",
            "data": {"image/png": "AAAA", "text/plain": "<Figure>"},
            "metadata": {},
        }
    ]
    other_picture = [
        {
            "output_type": "display_data",
            "data": {"image/png": "BBBB", "text/plain": "<Figure>"},
            "metadata": {},
        }
    ]

    def nb(outputs, tags=()):
        return {"cells": [cell(outputs, tags)]}

    assert differences(nb(printed), nb(split)) == []  # stream chunks are joined, as nbval does
    assert differences(nb(picture), nb(other_picture)) == []  # pixels are not compared
    assert len(differences(nb(printed), nb(changed))) == 1
    assert "stdout" in differences(nb(printed), nb(changed))[0]
    assert differences(nb(printed, ["nbval-ignore-output"]), nb(changed)) == []
    assert len(differences(nb(printed), nb([]))) == 1  # a lost output is a difference
