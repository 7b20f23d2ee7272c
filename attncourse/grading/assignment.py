"""What a run grades: the assignment's chapters, and what each submitted notebook is.

A bundle made from the whole book holds every chapter; a class hands in one.  ``read_submitted``
reads a notebook's code cells and sorts them:

* ``exercise``: an exercise cell (its metadata names the exercise, or its first line is the
  exercise's header line, for a cell copied or saved by an editor that drops metadata);
* ``chapter``: a cell of the handed-out notebook, recognised by its source (or its cell id)
  among those the bundle's manifest lists: while grading, only the statements that the answers
  reach run (``namespace.plan``);
* ``added``: any other code cell, one the student wrote: it runs in full, as it did when the
  student ran ``check``.

``choose_chapters`` picks the chapters to grade: those named with ``--chapter``, else those held
by a strict majority of the submissions (else every chapter of the bundle, when no notebook holds
an exercise cell).  A notebook whose exercise cells all belong to other chapters is
``other_chapter``: it is not run, and says so; it never changes what the others are graded on.
"""

from __future__ import annotations

import functools
import hashlib
from collections import Counter
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Optional, Sequence, Set, Tuple

from ..exercises.engine.notebook import exercise_id_of, read_notebook
from ..exercises.engine.registry import Exercise, chapter_key, get
from ..i18n import language_of_notebook, tr

__all__ = ["cell_key", "notebook_cells", "Scan", "scan_notebook", "choose_chapters"]


def cell_key(source: str) -> str:
    """A short digest of a code cell's source, blind to trailing spaces and blank lines.

    >>> cell_key("x = 1  \\n\\n") == cell_key("x = 1")
    True
    """
    text = "\n".join(line.rstrip() for line in source.strip().splitlines())
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _source(cell: dict) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else str(src)


def notebook_cells(nb: dict) -> Dict[str, List[str]]:
    """The keys and ids of a handed-out notebook's code cells, for the manifest."""
    keys, ids = [], []
    for cell in nb.get("cells", []):
        if cell.get("cell_type") == "code" and exercise_id_of(cell) is None:
            keys.append(cell_key(_source(cell)))
            if isinstance(cell.get("id"), str):
                ids.append(cell["id"])
    return {"keys": sorted(set(keys)), "ids": sorted(set(ids))}


@dataclass
class Scan:
    """One submitted notebook, read and sorted (``problem`` when it cannot be read)."""

    cells: List[dict] = field(default_factory=list)  # {"index", "source", "exercise", "kind"}
    exercise_ids: List[str] = field(default_factory=list)
    unknown_ids: List[Tuple[int, str]] = field(default_factory=list)
    # chapters of the course whose exercise cells the notebook holds but the bundle does not grade
    foreign: Set[str] = field(default_factory=set)
    language: str = "en"  # the notebook's language (its ``set_language`` call): its feedback's

    def chapters(self) -> Set[str]:
        """The chapters of the bundle whose exercise cells the notebook holds."""
        return {get(ex_id).chapter for ex_id in self.exercise_ids}

    def cell_names(self) -> Dict[int, str]:
        """Each code cell's index -> how a student finds it (Jupyter and Colab number no cells):
        ``exercise 6.3's cell``, ``code cell 2 after exercise 6.3's cell``, ``code cell 4 from the top``."""
        names: Dict[int, str] = {}
        last, count = "", 0
        for cell in self.cells:
            if cell.get("exercise"):
                last, count = get(cell["exercise"]).number, 0
                names[cell["index"]] = tr("exercise {number}'s cell", number=last)
                continue
            count += 1
            names[cell["index"]] = (
                tr("code cell {n} after exercise {number}'s cell", n=count, number=last)
                if last
                else tr("code cell {n} from the top", n=count)
            )
        return names

    def all_chapters(self) -> Set[str]:
        """Every chapter of the course whose exercise cells it holds, in the bundle or not."""
        return self.chapters() | self.foreign


def scan_notebook(
    raw: bytes, known: Dict[str, Exercise], chapter_cells: Optional[Tuple[Set[str], Set[str]]]
) -> Scan:
    """Read and sort the cells of a submitted notebook (``NotebookProblem`` if it is unreadable).

    ``known`` maps the bundle's exercise ids to their exercises; ``chapter_cells`` holds the keys
    and ids of the handed-out cells (``None`` for an older bundle: every cell that is not an
    exercise cell then counts as the chapter's: only what the answers reach runs).
    """
    nb = read_notebook(raw)
    headers = {ex.header: ex.id for ex in known.values()}
    others = _course_headers()
    out = Scan(language=language_of_notebook(nb))
    for index, cell in enumerate(nb["cells"], 1):
        if cell.get("cell_type") != "code":
            continue
        source = _source(cell)
        ex_id = exercise_id_of(cell)
        if ex_id is not None and ex_id not in known:
            try:
                out.foreign.add(get(ex_id).chapter)  # an exercise of a chapter the bundle does not grade
            except KeyError:
                out.unknown_ids.append((index, ex_id[:100]))
            ex_id = None
        if ex_id is None:  # metadata lost (copied cell, another editor): the first line still names it
            first = source.strip().split("\n", 1)[0].strip()
            ex_id = headers.get(first)
            if ex_id is None and first in others:
                out.foreign.add(others[first])
        if ex_id is not None:
            out.exercise_ids.append(ex_id)
            kind = "exercise"
        elif chapter_cells is None:
            kind = "chapter"
        else:
            keys, ids = chapter_cells
            cid = cell.get("id")
            own = cell_key(source) in keys or (isinstance(cid, str) and cid in ids)
            kind = "chapter" if own else "added"
        out.cells.append({"index": index, "source": source, "exercise": ex_id, "kind": kind})
    return out


@functools.lru_cache(maxsize=1)
def _course_headers() -> Dict[str, str]:
    """Every exercise's header line in this course -> its chapter."""
    from ..exercises import all_exercises

    return {ex.header: ex.chapter for ex in all_exercises()}


def choose_chapters(
    bundle: Sequence[str], held: Iterable[Tuple[str, Set[str]]], override: Optional[Sequence[str]]
) -> Tuple[List[str], List[str]]:
    """The chapters to grade (in the bundle's order) and what to tell the instructor about them.

    ``bundle`` lists the bundle's chapters; ``held`` gives, for every submission (a student), its
    name and the chapters whose exercise cells its readable notebooks hold; ``override`` is
    ``--chapter``.  Without it the assignment is the chapters held by a strict majority of the
    submissions that hold any exercise cell; when no chapter is, ``KeyError`` asks for
    ``--chapter``.  No single submission decides what everyone else is graded on.
    """
    counts: Counter = Counter()
    held = [(name, set(chs)) for name, chs in held]
    for _, chs in held:
        counts.update(chs)
    voters = [(name, chs) for name, chs in held if chs]
    messages: List[str] = []
    if override:
        keys = []
        for ch in override:
            key = chapter_key(ch)
            if key not in bundle:
                raise KeyError(
                    f"--chapter {ch}: the bundle holds no exercises of {key} (it holds {', '.join(bundle)})"
                )
            keys.append(key)
        chosen = [ch for ch in bundle if ch in keys]
    else:
        if not voters:
            messages.append(
                "no submitted notebook holds an exercise cell: grading every chapter of the bundle"
            )
            return list(bundle), messages
        chosen = [ch for ch in bundle if counts[ch] * 2 > len(voters)]
        if not chosen:
            found = ", ".join(f"{ch} in {counts[ch]}" for ch in bundle if counts[ch])
            raise KeyError(
                f"no chapter is held by more than half of the {len(voters)} submissions ({found}): name the "
                "assignment's chapters with --chapter (e.g. --chapter " + max(counts, key=counts.get) + ")"
            )
        messages.append(
            "grading "
            + ", ".join(f"{ch} (held by {counts[ch]} of {len(voters)} submissions)" for ch in chosen)
            + ": the chapters most submissions hold; --chapter names them instead"
        )
    off = [(name, chs) for name, chs in voters if not chs & set(chosen)]
    if off:
        listed = "; ".join(f"{name} ({', '.join(sorted(chs))})" for name, chs in off[:10])
        said = f"WARNING: --chapter {' '.join(chosen)}, but " if override else ""
        messages.append(
            f"{said}{len(off)} submission(s) hold no exercise of {', '.join(chosen)} and are marked "
            f"other_chapter, not graded: {listed}" + (" ..." if len(off) > 10 else "")
        )
    return chosen, messages
