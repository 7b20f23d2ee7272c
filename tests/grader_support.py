"""Helpers shared by the grader tests: chapter notebooks to hand in, cells, and the bwrap skip."""

from __future__ import annotations

import shutil

import pytest

from attncourse.exercises import chapter_cells

__all__ = ["needs_bwrap", "chapter_notebook", "code", "exercise_cell"]


def needs_bwrap():
    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap is not installed (apt-get install bubblewrap)")


def chapter_notebook(chapter: str, title: str) -> dict:
    """A notebook holding ``chapter``'s exercise cells under a ``# title`` heading."""
    cells = [{"cell_type": "markdown", "id": "title", "metadata": {}, "source": [f"# {title}\n"]}]
    cells += chapter_cells(chapter)
    return {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


def code(text: str) -> dict:
    return {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": text}


def exercise_cell(nb: dict, exercise_id: str) -> dict:
    for cell in nb["cells"]:
        if cell["metadata"].get("attncourse", {}).get("exercise") == exercise_id:
            return cell
    raise AssertionError(exercise_id)


class Reply:
    """What the runner reports of its cells, kept in lists."""

    def __init__(self) -> None:
        self.ran, self.notes = [], []

    def progress(self, text: str) -> None:
        self.ran.append(text)

    def cell(self, index, status, *args, **kwargs) -> None:
        self.notes.append((index, status, *args))
