"""The exercise cells of a notebook: how they look, how the student version is made, how to validate.

An exercise occupies four cells (``exercise_cells`` makes them):

1. a markdown **prompt** (metadata ``{"attncourse": {"prompt": id}}``), free prose;
2. the **exercise cell** (metadata ``{"attncourse": {"exercise": id}}``, tag ``remove-input`` so the
   published book does not show the answer): first line ``# Exercise 1.2: stable softmax (2 points)``,
   then the function with its body between ``### BEGIN SOLUTION`` and ``### END SOLUTION``;
3. the **check cell** ``check("ch01.stable_softmax", stable_softmax)``;
4. a markdown **worked solution**, a collapsed ``{admonition}`` with ``:class: dropdown``
   (tag ``solution-reveal``), which the student version drops.

Together with the chapter's **setup** cell (the imports the exercises need) and its **score** cell,
all of these are produced from the registry: ``sync_notebook`` writes them into a chapter notebook
(``scripts/sync_exercise_cells.py``) and reports what it changed, so the registry's ``solution``
is the one source of every answer.

Notebooks are handled as plain JSON (the package does not need nbformat).
"""

from __future__ import annotations

import json
import re
from typing import Any, Dict, List, Optional, Tuple

from .registry import (
    BEGIN_SOLUTION,
    CHAPTERS,
    END_SOLUTION,
    STUB_LINE,
    all_exercises,
    chapter_key,
    current_id,
    get,
)

__all__ = [
    "REVEAL_TAG",
    "BEGIN_HIDDEN",
    "END_HIDDEN",
    "exercise_cells",
    "setup_cell",
    "summary_cell",
    "chapter_cells",
    "exercise_id_of",
    "check_id_of",
    "CHECK_INSTRUCTIONS",
    "replace_solutions",
    "to_student",
    "validate_notebook",
    "read_notebook",
    "NotebookProblem",
    "solution_lines",
]

REVEAL_TAG = "solution-reveal"
HIDE_TAG = "remove-input"
BEGIN_HIDDEN = "### BEGIN HIDDEN TESTS"
END_HIDDEN = "### END HIDDEN TESTS"
MARKDOWN_STUB = "_Write your answer here._"


class NotebookProblem(ValueError):
    """A notebook that cannot be turned into a student version (or read at all)."""


def _lines(source: str) -> List[str]:
    """nbformat's multi-line string layout: every line but the last keeps its newline."""
    return source.splitlines(True)


def _cell_id(exercise_id: str, part: str) -> str:
    return f"{exercise_id.replace('.', '-').replace('_', '-')}-{part}"[:64]


def _code(source: str, metadata: dict, cell_id: Optional[str]) -> dict:
    cell = {
        "cell_type": "code",
        "execution_count": None,
        "metadata": metadata,
        "outputs": [],
        "source": _lines(source),
    }
    if cell_id:
        cell["id"] = cell_id
    return cell


def _markdown(source: str, metadata: dict, cell_id: Optional[str]) -> dict:
    cell = {"cell_type": "markdown", "metadata": metadata, "source": _lines(source)}
    if cell_id:
        cell["id"] = cell_id
    return cell


def exercise_cells(exercise_id: str, *, with_ids: bool = True) -> List[dict]:
    """The four cells of one exercise, as nbformat-4 dicts: prompt, exercise, check, worked solution.

    ``nbformat.from_dict`` turns them into ``NotebookNode`` objects if you need those.

    >>> [c["cell_type"] for c in exercise_cells("ch01.stable_softmax")]
    ['markdown', 'code', 'code', 'markdown']
    >>> exercise_cells("ch01.stable_softmax")[1]["source"][0]
    '# Exercise 1.2: stable softmax (2 points)\\n'
    """
    ex = get(exercise_id)

    def cid(part: str) -> Optional[str]:
        return _cell_id(ex.id, part) if with_ids else None

    unit = "point" if ex.points == 1 else "points"
    prompt = f"**Exercise {ex.number}: {ex.title}** ({ex.points} {unit}). {ex.description}".rstrip()
    prompt += "\n\n" + rules_line(ex)
    reflect = getattr(ex, "reflect", None)
    if reflect:
        question, answer = reflect
        prompt += (
            f"\n\n*Reflect (not graded):* {question}\n\n"
            "````{admonition} A worked answer\n:class: dropdown\n\n"
            f"{answer}\n"
            "````"
        )
    reveal = (
        "````{admonition} Show a worked solution\n"
        ":class: dropdown\n\n"
        f"```python\n{ex.solution_code()}\n```\n"
        "````"
    )
    return [
        _markdown(prompt, {"attncourse": {"prompt": ex.id}}, cid("prompt")),
        _code(ex.cell_source(), {"attncourse": {"exercise": ex.id}, "tags": [HIDE_TAG]}, cid("exercise")),
        _code(f'check("{ex.id}", {ex.function})', {"attncourse": {"check": ex.id}}, cid("check")),
        _markdown(reveal, {"attncourse": {"solution": ex.id}, "tags": [REVEAL_TAG]}, cid("solution")),
    ]


PREDICT_RULE = (
    "Work it out on paper and return it as a number written down (arithmetic on literals is fine): "
    "an answer that calls the package or builds the arrays in question scores 0."
)


def rules_line(ex: Any) -> str:
    """The sentence under an exercise's prompt that says what the answer may call."""
    if ex.kind == "predict":
        return f"*Rules:* {PREDICT_RULE}"
    allowed = ex.allowed()
    names = ", ".join(f"`{a}`" for a in allowed) if allowed else "plain Python"
    other = "other " if any("attncourse" in a for a in allowed) else ""
    rule = f"*You may call:* {names}; no {other}`attncourse` function, and no built-in attention."
    method = getattr(ex, "method", None)
    if method is not None:
        rule += f" *Method rule:* {getattr(method(), 'rule', '')}".rstrip()
    return rule


def setup_cell(chapter: Any, *, with_ids: bool = True) -> dict:
    """The code cell that imports ``check``, ``score`` and what the chapter's solutions use."""
    key = chapter_key(chapter)
    plain: List[str] = []
    names: Dict[str, List[str]] = {}  # "from M import a, b" lines merged by module, each name once
    for ex in all_exercises(key):
        for line in ex.needs:
            m = re.fullmatch(r"from\s+([\w.]+)\s+import\s+([\w\s,]+)", line.strip())
            if m is None:
                plain += [line] if line not in plain else []
                continue
            have = names.setdefault(m.group(1), [])
            have += [n.strip() for n in m.group(2).split(",") if n.strip() and n.strip() not in have]
    froms = [f"from {module} import {', '.join(imported)}" for module, imported in sorted(names.items())]
    source = "\n".join(sorted(plain) + froms + ["from attncourse.exercises import check, score"])
    return _code(
        source, {"attncourse": {"setup": key}}, _cell_id(key, "exercises-setup") if with_ids else None
    )


def summary_cell(chapter: Any, *, with_ids: bool = True) -> dict:
    """The code cell ``score("ch01")`` that shows the chapter's total."""
    key = chapter_key(chapter)
    return _code(
        f'score("{key}")',
        {"attncourse": {"score": key}},
        _cell_id(key, "exercises-score") if with_ids else None,
    )


# What the chapters' exercise heading says ``check`` does (``engine.check``; the tests hold the two
# together): keep it true of check when check changes.
CHECK_INSTRUCTIONS = (
    "Write each function in its cell, run it, then run the `check` below it. "
    "A failed check says what is wrong: which outputs differ, where and by how much, and for some "
    "classic mistakes a question that leads to it. In a find-the-bug exercise it shows only the "
    "symptom, as for any wrong answer: finding the cause is the exercise. "
    "A predicted number is only told whether it is right. "
    "`check(..., hint=True)` adds a hint that names the fix; check never shows a hint unasked, and "
    "after a few different failing answers it says how to ask for one. "
    "The last cell re-checks your functions as they are now and adds up your points. "
    "Grading adds hidden cases of the same kinds as the ones `check` runs (other sizes, dtypes "
    "and edge rows), and the cases are scored in groups (for example shape, dtypes, edge rows): a group "
    "earns its share of the points only when all its cases pass; check names the groups that passed."
)


def chapter_cells(chapter: Any, *, with_ids: bool = True) -> List[dict]:
    """A chapter's whole exercise section: heading, setup, every exercise, the summary."""
    key = chapter_key(chapter)
    heading = _markdown(
        "## Exercises\n\n" + CHECK_INSTRUCTIONS,
        {"attncourse": {"heading": key}},
        _cell_id(key, "exercises-heading") if with_ids else None,
    )
    cells = [heading, setup_cell(key, with_ids=with_ids)]
    for ex in all_exercises(key):
        cells += exercise_cells(ex.id, with_ids=with_ids)
    return cells + [summary_cell(key, with_ids=with_ids)]


# ----------------------------------------------------------------------------- reading


def _source(cell: dict) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else str(src)


def _id_in(cell: dict, role: str) -> Optional[str]:
    meta = cell.get("metadata") or {}
    ours = meta.get("attncourse") if isinstance(meta, dict) else None
    value = ours.get(role) if isinstance(ours, dict) else None
    return current_id(value) if isinstance(value, str) else None


def exercise_id_of(cell: dict) -> Optional[str]:
    """The exercise id in an exercise cell's metadata (``None`` for other cells).

    A former id (``Exercise.former_ids``: a notebook saved before the exercise was renamed) comes
    back as the exercise's current id; an id no exercise has is returned as it is.
    """
    return _id_in(cell, "exercise")


def check_id_of(cell: dict) -> Optional[str]:
    """The exercise id of a check cell: its metadata's, else the id its ``check("...")`` call names;
    a former id comes back as the current one (``None`` for other cells)."""
    found = _id_in(cell, "check")
    if found is None and cell.get("cell_type") == "code":
        m = re.search(r"\bcheck\(\s*['\"]([^'\"]+)['\"]", _source(cell))
        found = current_id(m.group(1)) if m else None
    return found


def _tags(cell: dict) -> List[str]:
    meta = cell.get("metadata") or {}
    tags = meta.get("tags", []) if isinstance(meta, dict) else []
    return [t for t in tags if isinstance(t, str)] if isinstance(tags, list) else []


def read_notebook(raw: bytes) -> dict:
    """Parse a notebook file's bytes, or raise ``NotebookProblem`` saying what is wrong with it."""
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise NotebookProblem("not UTF-8 text") from None
    try:
        nb = json.loads(text)
    except json.JSONDecodeError as e:
        raise NotebookProblem(f"invalid JSON ({e.msg} at line {e.lineno}, column {e.colno})") from None
    except RecursionError:
        raise NotebookProblem("invalid JSON (nested too deeply)") from None
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
        raise NotebookProblem("JSON without a list of cells")
    if nb.get("nbformat", 4) != 4:
        raise NotebookProblem(f"nbformat {nb.get('nbformat')!r}; only version 4 notebooks are supported")
    for i, cell in enumerate(nb["cells"], 1):
        if not isinstance(cell, dict) or cell.get("cell_type") not in ("code", "markdown", "raw"):
            raise NotebookProblem(f"cell {i} is not a notebook cell")
        src = cell.get("source", "")
        if not (isinstance(src, str) or (isinstance(src, list) and all(isinstance(s, str) for s in src))):
            raise NotebookProblem(f"cell {i} has a malformed source")
    return nb


# ----------------------------------------------------------------------------- student version


def _marker(line: str, marker: str) -> bool:
    return line.strip().startswith(marker)


def replace_solutions(source: str, stub: Optional[str] = None, *, markdown: bool = False) -> str:
    """Replace every ``### BEGIN SOLUTION`` ... ``### END SOLUTION`` region by ``stub`` (indented
    like the marker; default ``raise NotImplementedError(...)``) and drop hidden-test regions.

    >>> print(replace_solutions("def f(x):\\n    ### BEGIN SOLUTION\\n    return x\\n    ### END SOLUTION"))
    def f(x):
        raise NotImplementedError("write your answer here")
    """
    lines = source.splitlines()
    out: List[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        for begin, end in ((BEGIN_SOLUTION, END_SOLUTION), (BEGIN_HIDDEN, END_HIDDEN)):
            if _marker(line, begin):
                j = next((j for j in range(i + 1, len(lines)) if _marker(lines[j], end)), None)
                if j is None:
                    raise NotebookProblem(f"{begin} without a matching {end}")
                if begin == BEGIN_SOLUTION:
                    indent = line[: len(line) - len(line.lstrip())]
                    body = (
                        stub if stub is not None else (MARKDOWN_STUB if markdown else STUB_LINE)
                    ).splitlines()
                    out += [indent + b if b.strip() else "" for b in body]
                i = j + 1
                break
        else:
            if _marker(line, END_SOLUTION) or _marker(line, END_HIDDEN):
                raise NotebookProblem(f"{line.strip()} without a matching BEGIN marker")
            out.append(line)
            i += 1
    return "\n".join(out)


def to_student(nb: dict) -> dict:
    """The student version of a (solution) notebook, as a new dict.

    Solution regions become stubs (``Exercise.student_stub``: the buggy code of a spot-the-bug
    exercise, else ``raise NotImplementedError`` with the exercise's hint),
    worked-solution cells are dropped, outputs are cleared.  Raises ``NotebookProblem`` if any
    solution text would survive.
    """
    nb = json.loads(json.dumps(nb))  # a deep copy
    cells = []
    for cell in nb["cells"]:
        meta = cell.get("metadata") or {}
        ours = meta.get("attncourse", {}) if isinstance(meta, dict) else {}
        if REVEAL_TAG in _tags(cell) or (isinstance(ours, dict) and "solution" in ours):
            continue
        source = _source(cell)
        if cell.get("cell_type") == "code":
            ex_id = exercise_id_of(cell)
            stub = get(ex_id).student_stub() if ex_id else None
            source = replace_solutions(source, stub)
            cell["outputs"], cell["execution_count"] = [], None
            if ex_id and isinstance(meta, dict) and HIDE_TAG in _tags(cell):
                meta["tags"] = [t for t in _tags(cell) if t != HIDE_TAG]
                if not meta["tags"]:
                    del meta["tags"]
        elif cell.get("cell_type") == "markdown":
            source = replace_solutions(source, markdown=True)
        cell["source"] = _lines(source)
        cells.append(cell)
    nb["cells"] = cells
    nb.setdefault("metadata", {}).setdefault("attncourse", {})["student_version"] = True
    leftover = json.dumps(nb)
    for marker in (BEGIN_SOLUTION, END_SOLUTION, BEGIN_HIDDEN):
        if marker in leftover:
            raise NotebookProblem(f"{marker!r} is still in the student version (a marker inside a string?)")
    return nb


# ----------------------------------------------------------------------------- validation


def _chapter_of_notebook(name: str) -> Optional[str]:
    stem = name.rsplit("/", 1)[-1].rsplit(".", 1)[0]
    return next((key for key, (_, nb_stem) in CHAPTERS.items() if nb_stem == stem), None)


def validate_notebook(nb: dict, name: str) -> List[str]:
    """Every problem with the exercise cells of one (solution) notebook; empty when all is well."""
    problems: List[str] = []
    seen: Dict[str, int] = {}
    cells = nb.get("cells", [])
    host = _chapter_of_notebook(name)
    sources = [_source(c) for c in cells]

    for i, cell in enumerate(cells, 1):
        src = sources[i - 1]
        where = f"{name}, cell {i}"
        if BEGIN_HIDDEN in src:
            problems.append(f"{where}: hidden tests belong in grading/, not in the book")
        ex_id = exercise_id_of(cell)
        if ex_id is None:
            if BEGIN_SOLUTION in src and cell.get("cell_type") == "code":
                problems.append(f"{where}: solution markers in a cell without exercise metadata")
            continue
        try:
            ex = get(ex_id)
        except KeyError as e:
            problems.append(f"{where}: {e.args[0]}")
            continue
        if ex_id in seen:
            problems.append(f"{where}: {ex_id} already has an exercise cell (cell {seen[ex_id]})")
        seen[ex_id] = i
        if host is not None and ex.chapter != host:
            problems.append(f"{where}: {ex_id} belongs to {CHAPTERS[ex.chapter][1]}.ipynb")
        first = src.splitlines()[0] if src.strip() else ""
        if first.strip() != ex.header:
            problems.append(f"{where}: the first line should be {ex.header!r}, not {first.strip()!r}")
        if not re.search(rf"^\s*def {re.escape(ex.function)}\(", src, re.MULTILINE):
            problems.append(f"{where}: does not define {ex.function}()")
        begins = [ln for ln in src.splitlines() if _marker(ln, BEGIN_SOLUTION)]
        if len(begins) != 1 or src.count(END_SOLUTION) != 1:
            problems.append(f"{where}: needs exactly one {BEGIN_SOLUTION} / {END_SOLUTION} pair")
        elif not begins[0].startswith((" ", "\t")):
            problems.append(f"{where}: the solution region must be inside the function body")
        if not any(check_id_of(c) == ex_id for c in cells[i:]):
            problems.append(f"{where}: no check({ex_id!r}, {ex.function}) cell after it")
        if not any(REVEAL_TAG in _tags(c) and _id_in(c, "solution") == ex_id for c in cells):
            problems.append(f"{where}: no worked-solution cell (tag {REVEAL_TAG!r}) for {ex_id}")

    if host is not None and seen:
        missing = [ex.id for ex in all_exercises(host) if ex.id not in seen]
        if missing:
            problems.append(f"{name}: missing the exercise cells of {', '.join(missing)}")
        if not any(re.search(rf"score\(\s*['\"]{host}['\"]\s*\)", s) for s in sources):
            problems.append(f"{name}: no summary cell score({host!r})")
    return problems


def exercises_in(nb: dict) -> List[Tuple[int, str]]:
    """(1-based cell number, exercise id) of every exercise cell."""
    return [(i, ex_id) for i, cell in enumerate(nb.get("cells", []), 1) if (ex_id := exercise_id_of(cell))]


def solution_lines(exercise_id: str) -> List[str]:
    """The lines between the solution markers, stripped (what a student version must not hold).

    >>> solution_lines("ch03.packed_head_attention")
    ['scale = 1 / np.sqrt(D)']
    """
    ex = get(exercise_id)
    out, inside = [], False
    for line in ex.solution.splitlines():
        if _marker(line, BEGIN_SOLUTION):
            inside = True
        elif _marker(line, END_SOLUTION):
            inside = False
        elif inside and line.strip():
            out.append(line.strip())
    return out
