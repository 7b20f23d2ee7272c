"""The fidelity suite's machinery: one answer, two judges (``check`` in the notebook, the grader).

Answers live in ``tests/fidelity/answers_<chapter>.py`` (format in the module docstring of
``tests/test_fidelity.py``): ``CORRECT`` and ``WRONG``, exercise id -> {label: cells}, where
cells is one source string (it replaces the exercise cell) or a list of sources (the earlier ones
are cells the student added just before the exercise cell, the last replaces it).

Answers are laid out in **slots**: slot *i* of a chapter holds, for every exercise of the chapter,
its *i*-th answer (correct ones first, then wrong ones); an exercise with fewer answers keeps its
stub.  A slot is one notebook, built from the chapter's student notebook, and it is judged twice:

* **check** (``check_marks``): as a student who ran the notebook: the import statements of the
  chapter's code cells (the chapter's imports, its setup cell), then every answer cell of the slot
  in notebook order, all in one namespace; then ``score(chapter)`` re-checks every function as it
  is defined at the end (a helper redefined by a later cell is what ``score`` and the grader see,
  so helpers of different exercises should have different names);
* **grader** (``grade_notebooks``): the slot notebooks of each chapter in one submissions folder,
  one ``attncourse grade --sandbox none --jobs 2 --chapter CHAPTER`` a chapter against a bundle made
  by ``attncourse assign``, marks read from ``results.json``.

``sample_slots`` lays out three slots a chapter (each exercise's first and last correct answer and
its first wrong one): the grader's run over them is the one CI makes; ``slots`` (every answer) is
the full sweep, a tier of its own (``-m sweep``).

The registry's own wrong variants (``Diagnosis.variant``) live in the package, which the guard
forbids to answers, so they cannot be handed in as notebook code: ``variant_marks`` judges their
outputs in this process, on the public cases (what ``check`` would give) and on the public and
hidden cases with the grader's scoring function (``points_earned``, as ``marking`` uses it).  The
hand-written wrong answers of ``tests/test_exercise_mutations.py`` are handed in as notebook code
(``mutation_answers``).
"""

from __future__ import annotations

import ast
import copy
import importlib.util
import inspect
import json
import textwrap
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

from attncourse.exercises import CHAPTERS, all_exercises, get
from attncourse.exercises.engine.check import reset, score
from attncourse.exercises.engine.compare import Outcome, expected_outputs, judge, points_earned
from attncourse.exercises.engine.outputs import to_arrays

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]

Cells = Union[str, Sequence[str]]


@dataclass(frozen=True)
class Answer:
    """One answer to one exercise: ``cells`` (added cells first, the exercise cell last)."""

    exercise_id: str
    label: str
    cells: Tuple[str, ...]
    correct: bool

    @property
    def chapter(self) -> str:
        return self.exercise_id.split(".", 1)[0]


@dataclass
class Mark:
    """What one judge gave one answer (``note``: why, when it is not full marks)."""

    earned: float
    note: str = ""


def _cells(value: Cells) -> Tuple[str, ...]:
    if isinstance(value, str):
        return (textwrap.dedent(value).strip("\n") + "\n",)
    cells = tuple(textwrap.dedent(v).strip("\n") + "\n" for v in value)
    if not cells or not all(isinstance(v, str) for v in value):
        raise TypeError("an answer is a source string or a non-empty list of source strings")
    return cells


def answer_modules() -> Dict[str, Path]:
    """chapter key -> its answers module, for the modules that exist."""
    return {key: HERE / f"answers_{key}.py" for key in CHAPTERS if (HERE / f"answers_{key}.py").exists()}


def _load(path: Path):
    spec = importlib.util.spec_from_file_location(f"fidelity_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load_answers(chapters: Optional[Sequence[str]] = None) -> List[Answer]:
    """Every answer of the answers modules (of ``chapters``), and the mutation table's."""
    out: List[Answer] = []
    for key, path in answer_modules().items():
        if chapters is not None and key not in chapters:
            continue
        module = _load(path)
        for correct, table in ((True, getattr(module, "CORRECT", {})), (False, getattr(module, "WRONG", {}))):
            for ex_id, answers in table.items():
                get(ex_id)  # a KeyError names a mistyped id
                if ex_id.split(".")[0] != key:
                    raise ValueError(f"{path.name}: {ex_id} belongs to another chapter's module")
                for label, cells in answers.items():
                    out.append(Answer(ex_id, label, _cells(cells), correct))
    keys = {a.chapter for a in out}
    out += [a for a in mutation_answers() if a.chapter in keys]
    return out


def mutation_answers() -> List[Answer]:
    """The hand-written wrong answers of tests/test_exercise_mutations.py, as notebook cells.

    The module's small helpers (``_sm``, ``_t`` ...) go in a cell of their own before the
    exercise cell, as a student's helpers would; the answer is the function's source, bound to the
    exercise's function name.
    """
    path = ROOT / "tests" / "test_exercise_mutations.py"
    module = _load(path)
    helpers = [
        inspect.getsource(obj)
        for name, obj in vars(module).items()
        if name.startswith("_")
        and not name.startswith("__")
        and inspect.isfunction(obj)
        and obj.__module__ == module.__name__
        and name not in ("_named", "_all_cases")
    ]
    helper_cell = "import numpy as np\n\n\n" + "\n\n".join(helpers)
    out = []
    for ex_id, fn, _name in module.WRONG_ANSWERS:
        ex = get(ex_id)
        body = inspect.getsource(fn) + f"\n\n{ex.function} = {fn.__name__}\n"
        out.append(Answer(ex_id, f"mutation table: {fn.__name__}", (helper_cell, body), False))
    return out


# ----------------------------------------------------------------------------- notebooks
def student_notebook(chapter: str, folder: Path = ROOT / "student") -> dict:
    return json.loads((folder / f"{CHAPTERS[chapter][1]}.ipynb").read_text(encoding="utf-8"))


def _source(cell: dict) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def _code(source: str, metadata: Optional[dict] = None) -> dict:
    return {
        "cell_type": "code",
        "execution_count": None,
        "metadata": metadata or {},
        "outputs": [],
        "source": source.splitlines(True),
    }


def slots(answers: Sequence[Answer]) -> Dict[str, List[Dict[str, Answer]]]:
    """chapter -> slots; slot i holds the i-th answer (correct first) of every exercise."""
    by_ex: Dict[str, List[Answer]] = {}
    for a in sorted(answers, key=lambda a: not a.correct):  # stable: correct ones first
        by_ex.setdefault(a.exercise_id, []).append(a)
    out: Dict[str, List[Dict[str, Answer]]] = {}
    for ex_id, listed in by_ex.items():
        chapter_slots = out.setdefault(ex_id.split(".")[0], [])
        while len(chapter_slots) < len(listed):
            chapter_slots.append({})
        for i, a in enumerate(listed):
            chapter_slots[i][ex_id] = a
    return out


def sample_slots(answers: Sequence[Answer]) -> Dict[str, List[Dict[str, Answer]]]:
    """chapter -> three slots: every exercise's first correct answer, its last correct one (another
    style: the answers modules list einsum, loops, torch... in turn) and its first wrong one."""
    full = slots(answers)
    out: Dict[str, List[Dict[str, Answer]]] = {}
    for chapter, chapter_slots in full.items():
        first, last, wrong = {}, {}, {}
        for slot in chapter_slots:
            for ex_id, a in slot.items():
                if a.correct:
                    first.setdefault(ex_id, a)
                    last[ex_id] = a
                else:
                    wrong.setdefault(ex_id, a)
        out[chapter] = [s for s in (first, last, wrong) if s]
    return out


def build_notebook(student: dict, slot: Dict[str, Answer]) -> dict:
    """The student notebook with each exercise cell of ``slot`` replaced by the answer's cells."""
    nb = copy.deepcopy(student)
    cells = []
    for cell in nb["cells"]:
        ex_id = cell.get("metadata", {}).get("attncourse", {}).get("exercise")
        if cell["cell_type"] != "code" or ex_id not in slot:
            cells.append(cell)
            continue
        *added, last = slot[ex_id].cells
        cells += [_code(src) for src in added]
        cell["source"] = (get(ex_id).header + "\n" + last).splitlines(True)
        cell["outputs"], cell["execution_count"] = [], None
        cells.append(cell)
    nb["cells"] = cells
    return nb


def notebook_name(chapter: str, i: int) -> str:
    return f"{chapter}-slot{i:02d}"


# ----------------------------------------------------------------------------- judge 1: check
def _imports_of(source: str) -> Optional[str]:
    """The top-level import statements of a cell ('' when it has none or does not parse)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return ""
    keep = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    return ast.unparse(ast.Module(body=keep, type_ignores=[])) if keep else ""


def check_marks(student: dict, slot: Dict[str, Answer]) -> Dict[str, Mark]:
    """``score`` of each exercise of ``slot``, after running the slot's notebook as a student."""
    nb = build_notebook(student, slot)
    ns: dict = {"__name__": "__main__"}
    errors: Dict[str, str] = {}
    current = None
    for cell in nb["cells"]:
        if cell["cell_type"] != "code" or "colab-install" in cell.get("metadata", {}).get("tags", []):
            continue
        meta = cell.get("metadata", {}).get("attncourse", {})
        source = _source(cell)
        if "exercise" in meta:
            current = meta["exercise"]
            run = source if current in slot else ""
        elif "check" in meta or "score" in meta:
            continue
        elif meta.get("setup"):
            run = source
        else:
            imports = _imports_of(source)
            # an added answer cell (it precedes its exercise cell and carries no metadata) runs in full
            added = any(source in a.cells[:-1] for a in slot.values())
            run = source if added else imports
        if not run:
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                exec(compile(run, f"<cell after {current or 'start'}>", "exec"), ns)
        except BaseException as e:  # noqa: BLE001 - a student's cell may raise anything
            errors.setdefault(current or "start", f"{type(e).__name__}: {e}")
    reset()
    chapter = next(iter(slot)).split(".")[0]
    report = score(chapter, show=False, namespace=ns)
    out = {}
    for ex, result in report.rows:
        if ex.id not in slot:
            continue
        if result is None:
            out[ex.id] = Mark(0.0, f"not defined ({errors.get(ex.id, 'no error')})")
        else:
            out[ex.id] = Mark(round(result.earned, 2), result.message[:90])
    return out


# ----------------------------------------------------------------------------- judge 2: the grader
FAST = ["--timeout", "120", "--cell-timeout", "30", "--case-timeout", "10", "--jobs", "2"]


def assign(out_dir: Path) -> Path:
    """``attncourse assign book/ OUT`` with the repository's hidden cases; returns the bundle."""
    from attncourse.cli import main

    code = main(["assign", str(ROOT / "book"), str(out_dir), "--tests", str(ROOT / "hidden_cases")])
    assert code == 0, f"attncourse assign exited with {code}"
    return out_dir / "grading"


def grade_notebooks(bundle: Path, notebooks: Dict[str, dict], work: Path) -> Dict[str, Dict[str, Mark]]:
    """One ``attncourse grade --sandbox none`` per chapter over ``notebooks`` (name -> notebook,
    each named ``notebook_name(chapter, i)``), each run assigning its chapter alone, as a course
    hands out one chapter at a time.

    Returns name -> exercise id -> mark, from each run's ``results.json``.
    """
    from attncourse.cli import main

    marks: Dict[str, Dict[str, Mark]] = {}
    for chapter in sorted({name.split("-")[0] for name in notebooks}):
        subs, out = work / chapter / "submissions", work / chapter / "results"
        subs.mkdir(parents=True)
        for name, nb in notebooks.items():
            if name.split("-")[0] == chapter:
                (subs / f"{name}.ipynb").write_text(json.dumps(nb), encoding="utf-8")
        code = main(
            ["grade", str(bundle), str(subs), str(out), "--sandbox", "none", "--chapter", chapter, *FAST]
        )
        assert code == 0, f"attncourse grade exited with {code} on {chapter}"
        results = json.loads((out / "results.json").read_text(encoding="utf-8"))
        for student in results["students"]:
            notes = "; ".join(student.get("notes", []))[:90]
            marks[student["student"]] = {
                ex_id: Mark(round(float(g["earned"]), 2), notes) for ex_id, g in student["exercises"].items()
            }
    return marks


# ----------------------------------------------------------------------------- registered variants
def variant_marks(hidden: dict) -> List[Tuple[str, str, Mark, Mark]]:
    """(exercise id, variant name, public-case mark, public+hidden mark) of every registered variant.

    A variant that returns ``None`` (the mistake cannot be told apart on those inputs) answers
    with the reference there, as in tests/test_exercise_mutations.py; a variant that does so on
    every case is left out.
    """
    import importlib.util

    from exercise_support import reference_needs_torch

    out = []
    for ex in all_exercises():
        if importlib.util.find_spec("torch") is None and reference_needs_torch(ex):
            continue  # its reference (or its cases) need torch, which this tier has not
        for i, d in enumerate(ex.diagnoses):
            if d.variant is None:
                continue
            public = ex.public_cases()
            secret = list(hidden[ex.id]()) if ex.id in hidden else []
            results, told = [], False
            for case, flag in [(c, False) for c in public] + [(c, True) for c in secret]:
                args = case.args()
                try:
                    with warnings.catch_warnings(), np.errstate(all="ignore"):
                        warnings.simplefilter("ignore")
                        got = d.variant(*args)
                        told = told or got is not None
                        got = ex.reference(*case.args()) if got is None else got
                        outcome = Outcome("returned", to_arrays(got, ex.outputs))
                except Exception as e:  # noqa: BLE001
                    told = True
                    outcome = Outcome("raised", error_type=type(e).__name__, message=str(e))
                results.append(judge(ex, case, expected_outputs(ex, case), outcome, hidden=flag))
            if not told:
                continue
            n = len(public)
            first = next((r.message for r in results[:n] if not r.passed), "")[:90]
            out.append(
                (
                    ex.id,
                    f"variant #{i}: {d.name}",
                    Mark(round(points_earned(ex, results[:n]), 2), first),
                    Mark(round(points_earned(ex, results), 2), ""),
                )
            )
    return out


# ----------------------------------------------------------------------------- the verdict
def problems(answer_label: str, ex_id: str, correct: bool, check: Mark, grade: Optional[Mark]) -> List[str]:
    """What is wrong with one answer's two marks ([] when nothing is)."""
    full = get(ex_id).points
    out = []
    if correct and check.earned < full:
        out.append("correct, not full in check")
    if correct and grade is not None and grade.earned < full:
        out.append("correct, not full in grader")
    if not correct and check.earned >= full:
        out.append("wrong, full in check")
    if not correct and grade is not None and grade.earned >= full:
        out.append("wrong, full in grader")
    if grade is not None and abs(grade.earned - check.earned) > 0.011:
        out.append("marks differ")
    return out


def table(rows: Sequence[Tuple[str, str, str, Mark, Optional[Mark], List[str]]]) -> str:
    """The failures as one readable table: exercise, answer, kind, check, grader, problem, notes."""
    lines = [f"{'exercise':34} {'answer':44} {'kind':7} {'check':>6} {'grade':>6}  problem / notes"]
    for ex_id, label, kind, check, grade, why in rows:
        g = f"{grade.earned:6.2f}" if grade is not None else "     -"
        note = check.note or (grade.note if grade is not None else "")
        lines.append(
            f"{ex_id:34} {label[:44]:44} {kind:7} {check.earned:6.2f} {g}  {', '.join(why)}"
            + (f" | {note}" if note else "")
        )
    return "\n".join(lines)
