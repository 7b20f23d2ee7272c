"""Handing out: ``assign`` writes the student notebooks and the private grading bundle.

``assign(SOURCE_DIR, OUT_DIR)`` writes ``OUT_DIR/student/*.ipynb`` (solutions replaced by stubs,
worked solutions removed, outputs cleared) and ``OUT_DIR/grading/``: the hidden cases
(``hidden_*.py``) and ``manifest.json`` (which exercises, worth how many points, in which
notebook, made by which ``attncourse``).  ``chapters`` (``--chapter``) hands out those chapters'
notebooks alone, their figures inside them, and the bundle holds those chapters alone and records
them as the assignment's (``assigned_chapters``).
"""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Union

from ..exercises.engine.notebook import (
    NotebookProblem,
    exercise_id_of,
    exercises_in,
    read_notebook,
    to_student,
    validate_notebook,
)
from ..exercises.engine.registry import CHAPTERS, Case, chapter_key, get
from ..i18n import known_language
from .assets import colab_base, inline_images, set_badges
from .assignment import notebook_cells
from .limits import GradingError

__all__ = [
    "MANIFEST_FORMAT",
    "assign",
    "assigned_chapters",
    "notebook_chapter",
    "validate",
    "load_hidden_cases",
    "read_manifest",
]

MANIFEST_FORMAT = 1


def _find_tests_dir(source_dir: Path) -> Path:
    for parent in [source_dir, *source_dir.resolve().parents][:3]:
        candidate = parent / "hidden_cases"
        if candidate.is_dir() and any(candidate.glob("hidden_*.py")):
            return candidate
    raise GradingError(
        f"no hidden tests (hidden_cases/hidden_*.py) found next to {source_dir}; pass --tests DIR"
    )


def load_hidden_cases(tests_dir: Path) -> Dict[str, Callable[[], List[Case]]]:
    """``HIDDEN`` of every ``hidden_*.py`` in ``tests_dir``, merged (exercise id -> case maker).

    These are the instructor's own files: they run in the grader's process.
    """
    merged: Dict[str, Callable[[], List[Case]]] = {}
    for path in sorted(Path(tests_dir).glob("hidden_*.py")):
        for ex_id, maker in load_hidden_cases_file(path).items():
            if ex_id in merged:
                raise GradingError(f"{path}: hidden cases for {ex_id} are defined twice")
            merged[ex_id] = maker
    return merged


def load_hidden_cases_file(path: Path) -> Dict[str, Callable[[], List[Case]]]:
    """``HIDDEN`` of one ``hidden_*.py``."""
    spec = importlib.util.spec_from_file_location(f"attncourse_hidden_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as e:
        raise GradingError(f"{path}: could not be loaded ({type(e).__name__}: {e})") from None
    hidden = getattr(module, "HIDDEN", None)
    if not isinstance(hidden, dict):
        raise GradingError(f"{path}: defines no HIDDEN dict")
    return hidden


def _notebooks(folder: Path) -> List[Path]:
    return sorted(p for p in folder.glob("*.ipynb") if p.is_file())


def notebook_chapter(name: str, nb: dict) -> Optional[str]:
    """The chapter a book notebook is: by its file name (``06_masked_attention.ipynb``), else by
    its exercises; ``None`` when neither says.

    >>> notebook_chapter("06_masked_attention.ipynb", {"cells": []})
    'ch06'
    """
    stem = name[: -len(".ipynb")] if name.endswith(".ipynb") else name
    for key, (_, book_stem) in CHAPTERS.items():
        if stem == book_stem:
            return key
    ids = [ex_id for _, ex_id in exercises_in(nb)]
    return get(ids[0]).chapter if ids else None


def _chapter_keys(chapters: Sequence[str]) -> List[str]:
    keys: List[str] = []
    for ch in chapters:
        try:
            key = chapter_key(ch)
        except KeyError as e:
            raise GradingError(f"--chapter {ch}: {e.args[0]}") from None
        if key not in keys:
            keys.append(key)
    return keys


def _prepare_out(path: Path, force: bool) -> None:
    if path.exists() and any(path.iterdir()):
        if not force:
            raise GradingError(f"{path} already exists and is not empty; pass --force to replace it")
        shutil.rmtree(path)
    path.mkdir(parents=True, exist_ok=True)


def validate(source_dir: Path, paths: Optional[Sequence[Path]] = None) -> List[str]:
    """Problems with the exercise cells of every notebook in ``source_dir`` (or of ``paths``)."""
    problems = []
    for path in _notebooks(Path(source_dir)) if paths is None else paths:
        try:
            nb = read_notebook(path.read_bytes())
        except NotebookProblem as e:
            problems.append(f"{path.name}: {e}")
            continue
        problems += validate_notebook(nb, path.name)
    return problems


def assign(
    source_dir: Path,
    out_dir: Path,
    *,
    tests_dir: Optional[Path] = None,
    force: bool = False,
    host: Optional[str] = None,
    chapters: Optional[Sequence[str]] = None,
    language: str = "en",
    log: Callable[[str], None] = print,
) -> dict:
    """Write the student versions and the private grading bundle; return the manifest.

    Images are put inside the student notebooks (``assets.inline_images``); each Colab badge
    opens the notebook in ``host`` (where the handout will be put), or is removed without one.
    ``chapters`` (``--chapter``): hand out these chapters' notebooks alone.
    ``language`` (``--language zh_CN`` or ``zh_TW``): hand out the translated student editions,
    ``student/<language>/`` beside SOURCE_DIR (``scripts/make_student_notebooks.py`` writes them);
    their exercise cells must be the English edition's, so the one bundle grades either.
    """
    source_dir, out_dir = Path(source_dir), Path(out_dir)
    if not source_dir.is_dir():
        raise GradingError(f"{source_dir} is not a folder")
    base = colab_base(host) if host else None  # a wrong --host is refused before anything is read
    try:
        language = known_language(language)
    except ValueError as e:
        raise GradingError(str(e)) from None
    wanted = _chapter_keys(chapters) if chapters else None
    paths = _notebooks(source_dir)
    if wanted is not None:
        of = {p: notebook_chapter(p.name, read_notebook(p.read_bytes())) for p in paths}
        absent = [ch for ch in wanted if ch not in of.values()]
        if absent:
            raise GradingError(
                f"--chapter {' '.join(absent)}: no notebook of {source_dir} is that chapter "
                f"(it holds {', '.join(sorted({c for c in of.values() if c})) or 'none'})"
            )
        paths = [p for p in paths if of[p] in wanted]
    tests_dir = Path(tests_dir) if tests_dir else _find_tests_dir(source_dir)
    hidden = load_hidden_cases(tests_dir)
    problems = validate(source_dir, paths)
    if problems:
        raise GradingError("fix the exercise cells first:\n  " + "\n  ".join(problems))

    student_dir, bundle_dir = out_dir / "student", out_dir / "grading"
    exercises: List[dict] = []
    notebooks: Dict[str, List[str]] = {}
    students: Dict[str, dict] = {}
    cells: Dict[str, Dict[str, List[str]]] = {}
    for path in paths:
        nb = read_notebook(path.read_bytes())
        students[path.name] = to_student(nb)
        mine, theirs = notebook_cells(nb), notebook_cells(students[path.name])
        cells[path.name] = {k: sorted(set(mine[k]) | set(theirs[k])) for k in mine}
        if language != "en":
            students[path.name] = translated_edition(source_dir, path.name, language, students[path.name])
            translated = notebook_cells(students[path.name])
            cells[path.name] = {k: sorted(set(cells[path.name][k]) | set(translated[k])) for k in mine}
        ids = [ex_id for _, ex_id in exercises_in(nb)]
        if ids:
            notebooks[path.name] = ids
        for ex_id in ids:
            ex = get(ex_id)
            exercises.append(
                {
                    "id": ex.id,
                    "number": ex.number,
                    "title": ex.title,
                    "kind": ex.kind,
                    "points": ex.points,
                    "function": ex.function,
                    "notebook": path.name,
                    "public_cases": len(ex.public_cases()),
                    "hidden_cases": len(hidden[ex.id]()) if ex.id in hidden else 0,
                }
            )
    if not exercises:
        raise GradingError(f"no exercise cells in {source_dir}/*.ipynb")
    without = [e["id"] for e in exercises if not e["hidden_cases"]]
    images = badges = 0
    for name, nb in students.items():
        badges += set_badges(nb, name, base)
        images += inline_images(nb, source_dir, name)

    _prepare_out(student_dir, force)
    _prepare_out(bundle_dir, force)
    for name, nb in students.items():
        (student_dir / name).write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    ids = {e["id"] for e in exercises}
    for path in sorted(tests_dir.glob("hidden_*.py")):  # with --chapter: those chapters' files alone
        if wanted is None or set(load_hidden_cases_file(path)) & ids:
            shutil.copy2(path, bundle_dir / path.name)
    from .. import __version__

    manifest = {
        "format": MANIFEST_FORMAT,
        "attncourse_version": __version__,
        "notebooks": notebooks,
        "cells": cells,  # the handed-out code cells: what a student did not add
        "exercises": exercises,
        "total_points": sum(e["points"] for e in exercises),
        # the assignment's chapters, when named with --chapter (else the submissions decide)
        "assigned_chapters": list(wanted or []),
        "host": host or "",
    }
    (bundle_dir / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    named = f" of {', '.join(wanted)}" if wanted else ""
    log(
        f"{len(students)} student notebooks{named} in {student_dir}, {len(exercises)} exercises "
        f"({manifest['total_points']} points); grading bundle in {bundle_dir} (keep it private)"
    )
    if base:
        log(f"{images} images inlined; {badges} Colab badges open {base}/NOTEBOOK")
    else:
        log(
            f"{images} images inlined; {badges} Colab badges removed (pass --host to point them at the handout)"
        )
    if without:
        log(f"warning: no hidden cases for {', '.join(without)} (graded on the public cases only)")
    return manifest


def translated_edition(source_dir: Path, name: str, language: str, english: dict) -> dict:
    """The student edition of notebook ``name`` in ``language``, checked against the English one."""
    path = Path(source_dir).resolve().parent / "student" / language / name
    if not path.exists():
        raise GradingError(
            f"--language {language}: {path} does not exist (scripts/make_student_notebooks.py writes the "
            "translated student editions of a chapter translated in full)"
        )
    nb = read_notebook(path.read_bytes())
    ours, theirs = dict(exercises_in_cells(english)), dict(exercises_in_cells(nb))
    if ours != theirs:
        raise GradingError(
            f"--language {language}: the exercise cells of {path} are not those of {name}: make the student "
            "editions again (python scripts/make_student_notebooks.py)"
        )
    return nb


def exercises_in_cells(nb: dict) -> List[tuple]:
    """(exercise id, the cell's code) of each exercise cell."""
    out = []
    for cell in nb.get("cells", []):
        ex_id = exercise_id_of(cell) if cell.get("cell_type") == "code" else None
        if ex_id:
            source = cell.get("source", "")
            out.append((ex_id, source if isinstance(source, str) else "".join(source)))
    return out


def assigned_chapters(bundle: Union[Path, dict]) -> Optional[List[str]]:
    """The assignment's chapters, as ``assign --chapter`` recorded them in the bundle (a bundle's
    folder or its manifest); ``None`` when the bundle was made without ``--chapter`` or before it
    recorded them.

    >>> assigned_chapters({"assigned_chapters": ["ch06", "ch11"]}), assigned_chapters({})
    (['ch06', 'ch11'], None)
    """
    manifest = bundle if isinstance(bundle, dict) else read_manifest(Path(bundle))
    named = manifest.get("assigned_chapters")
    if isinstance(named, list) and named and all(isinstance(c, str) for c in named):
        return list(named)
    return None


def read_manifest(bundle_dir: Path) -> dict:
    """The bundle's ``manifest.json``, checked; a ``GradingError`` saying what is wrong otherwise."""
    path = Path(bundle_dir) / "manifest.json"
    if not path.is_file():
        raise GradingError(
            f"{bundle_dir} is not a grading bundle (no manifest.json); make one with `attncourse assign`"
        )
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as e:
        raise GradingError(f"{path}: not valid JSON ({e})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != MANIFEST_FORMAT:
        found = manifest.get("format") if isinstance(manifest, dict) else type(manifest).__name__
        raise GradingError(f"{path}: unsupported format {found!r}")
    if not isinstance(manifest.get("exercises"), list):
        raise GradingError(f"{path}: no list of exercises")
    return manifest
