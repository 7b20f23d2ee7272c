"""Bring a chapter notebook's exercise cells in line with the registry (``sync_notebook``).

Apart from ``notebook`` (which it reads; nothing there imports it): ``scripts/sync_exercise_cells.py``
writes every chapter through it, so the registry's ``solution`` is the one source of each answer.
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional, Tuple

from .notebook import NotebookProblem, _source, _tags, chapter_cells
from .registry import all_exercises, chapter_key, current_id

__all__ = ["sync_notebook"]


_ROLES = ("heading", "setup", "prompt", "exercise", "check", "solution", "score")
_PARTS = ("prompt", "exercise", "check", "solution")  # the four cells of one exercise, in order


def _role(cell: dict) -> Optional[Tuple[str, str]]:
    """("exercise", "ch01.stable_softmax"), ("setup", "ch01") ... from a cell's metadata."""
    meta = cell.get("metadata") or {}
    ours = meta.get("attncourse") if isinstance(meta, dict) else None
    if not isinstance(ours, dict):
        return None
    for role in _ROLES:
        value = ours.get(role)
        if isinstance(value, str):  # a former id is the renamed exercise's: its cells are rewritten
            return role, current_id(value) if role in _PARTS else value
    return None


def _wanted_cells(key: str) -> Dict[Tuple[str, str], dict]:
    wanted: Dict[Tuple[str, str], dict] = {}
    for cell in chapter_cells(key):
        role = _role(cell)
        assert role is not None
        wanted[role] = cell
    return wanted


def _same(cell: dict, want: dict) -> bool:
    meta = cell.get("metadata") or {}
    return (
        cell.get("cell_type") == want["cell_type"]
        and _source(cell) == _source(want)
        and meta.get("attncourse") == want["metadata"].get("attncourse")
        and _tags(cell) == want["metadata"].get("tags", [])
    )


def _rewrite(cell: dict, want: dict) -> None:
    """Make ``cell`` say what ``want`` says; keep its id and any metadata that is not ours."""
    meta = cell.get("metadata") if isinstance(cell.get("metadata"), dict) else {}
    meta = {k: v for k, v in meta.items() if k not in ("attncourse", "tags")}
    meta.update(json.loads(json.dumps(want["metadata"])))
    cell["cell_type"] = want["cell_type"]
    cell["metadata"] = meta
    cell["source"] = list(want["source"])
    if want["cell_type"] == "code":
        cell["outputs"], cell["execution_count"] = [], None
    else:
        cell.pop("outputs", None)
        cell.pop("execution_count", None)


def _fresh(want: dict, taken: set) -> dict:
    cell = json.loads(json.dumps(want))
    base = cell.get("id", "exercise-cell")
    new, n = base, 2
    while new in taken:
        new, n = f"{base[:60]}-{n}", n + 1
    cell["id"] = new
    taken.add(new)
    return cell


def _is_exercises_heading(cell: dict) -> bool:
    return cell.get("cell_type") == "markdown" and _source(cell).lstrip().startswith("## Exercises")


def sync_notebook(nb: dict, chapter: Any) -> List[str]:
    """Bring a chapter notebook's exercise cells in line with the registry, in place.

    Cells whose metadata names an exercise (or the chapter's setup, heading or score cell) are
    rewritten when they differ from what the registry produces (their outputs cleared, their ids
    kept); the cells of a registered exercise that the notebook lacks are inserted at the end of
    the Exercises section (before the ``score`` cell, or after the ``## Exercises`` heading in a
    chapter that has none yet).  Every other cell is left alone.  Returns one line per change;
    an empty list means the notebook was already in step.  Cells of exercise ids that are not
    registered for this chapter raise ``NotebookProblem``.
    """
    key = chapter_key(chapter)
    wanted = _wanted_cells(key)
    cells: List[dict] = nb["cells"]
    changes: List[str] = []
    registered = {ex.id for ex in all_exercises(key)}
    unknown = sorted({r[1] for c in cells if (r := _role(c)) and r[0] in _PARTS and r[1] not in registered})
    if unknown:
        raise NotebookProblem(f"cells of exercises not registered in {key}: {', '.join(unknown)}")
    if not registered:
        return changes

    # 1. rewrite what drifted
    for i, cell in enumerate(cells):
        role = _role(cell)
        if role in wanted and not _same(cell, wanted[role]):
            _rewrite(cell, wanted[role])
            changes.append(f"cell {i + 1} ({role[0]} {role[1]}) rewritten")

    # 2. insert what is missing, in registry order
    taken = {c.get("id") for c in cells if c.get("id")}

    def position(role: Tuple[str, str]) -> Optional[int]:
        return next((i for i, c in enumerate(cells) if _role(c) == role), None)

    def insert(at: int, new: List[dict], what: str) -> None:
        cells[at:at] = [_fresh(c, taken) for c in new]
        changes.append(f"{what} inserted at cell {at + 1}")

    if position(("setup", key)) is None:
        heading = position(("heading", key))
        if heading is None:
            heading = next((i for i, c in enumerate(cells) if _is_exercises_heading(c)), None)
        if heading is None:
            insert(len(cells), [wanted[("heading", key)]], f"the {key} Exercises heading")
            heading = len(cells) - 1
        after = heading + 1
        while (  # past the prose that introduces the section, if any, up to the next heading
            after < len(cells)
            and cells[after].get("cell_type") == "markdown"
            and _role(cells[after]) is None
            and not _source(cells[after]).lstrip().startswith("#")
        ):
            after += 1
        insert(after, [wanted[("setup", key)]], f"the {key} setup cell")

    for ex in all_exercises(key):
        for n, part in enumerate(_PARTS):
            if position((part, ex.id)) is not None:
                continue
            before = [position((p, ex.id)) for p in _PARTS[:n]]
            before = [b for b in before if b is not None]
            if before:
                at = max(before) + 1
            else:
                score = position(("score", key))
                ours = [i for i, c in enumerate(cells) if (r := _role(c)) and r[0] in _PARTS]
                anchor = [position(("setup", key))] + ours
                at = score if score is not None else max(a for a in anchor if a is not None) + 1
            insert(at, [wanted[(part, ex.id)]], f"{part} cell of {ex.id}")

    if position(("score", key)) is None:
        ours = [i for i, c in enumerate(cells) if (r := _role(c)) and r[0] in _PARTS + ("setup",)]
        insert(max(ours) + 1, [wanted[("score", key)]], f"the {key} score cell")
    return changes
