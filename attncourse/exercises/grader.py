"""Hand out student versions and grade a folder of submitted notebooks.

``assign(SOURCE_DIR, OUT_DIR)`` writes ``OUT_DIR/student/*.ipynb`` (solutions replaced by stubs,
worked solutions removed, outputs cleared) and ``OUT_DIR/grading/`` (the hidden tests and
``manifest.json``: which exercises, worth how many points).

``grade(BUNDLE_DIR, SUBMISSIONS_DIR, OUT_DIR)`` runs every submission in its own sandboxed process
(see ``_child``) and writes ``OUT_DIR/gradebook.csv``, ``OUT_DIR/feedback/<student>.txt`` and
``OUT_DIR/results.json``.  The grader never trusts what comes back: it generates the inputs,
computes the expected outputs itself, and loads the submission's outputs as plain arrays.
"""

from __future__ import annotations

import csv
import importlib.util
import io
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ._check import _fmt_points
from ._compare import CaseResult, Outcome, expected_outputs, judge
from ._registry import Case, Exercise, chapter_key, get
from .notebook import (
    NotebookProblem,
    exercise_id_of,
    exercises_in,
    read_notebook,
    to_student,
    validate_notebook,
)

__all__ = ["GradingError", "Limits", "assign", "grade", "load_hidden_cases", "find_sandbox", "validate"]

MANIFEST_FORMAT = 1
MAX_NOTEBOOK_BYTES = 20 * 2**20
MAX_RESULT_BYTES = 64 * 2**20
NOBODY = 65534
CHILD = Path(__file__).with_name("_child.py")


class GradingError(Exception):
    """A problem the instructor must fix (a missing folder, a bundle from another version...)."""


# ============================================================================= assign


def _find_tests_dir(source_dir: Path) -> Path:
    for parent in [source_dir, *source_dir.resolve().parents][:3]:
        candidate = parent / "grading"
        if candidate.is_dir() and any(candidate.glob("hidden_*.py")):
            return candidate
    raise GradingError(f"no hidden tests (grading/hidden_*.py) found next to {source_dir}; pass --tests DIR")


def load_hidden_cases(tests_dir: Path) -> Dict[str, Callable[[], List[Case]]]:
    """``HIDDEN`` of every ``hidden_*.py`` in ``tests_dir``, merged (exercise id -> case maker)."""
    merged: Dict[str, Callable[[], List[Case]]] = {}
    for path in sorted(Path(tests_dir).glob("hidden_*.py")):
        spec = importlib.util.spec_from_file_location(
            f"attncourse_hidden_{path.stem}_{abs(hash(str(path)))}", path
        )
        module = importlib.util.module_from_spec(spec)
        try:
            spec.loader.exec_module(module)
        except Exception as e:
            raise GradingError(f"{path}: could not be loaded ({type(e).__name__}: {e})") from None
        hidden = getattr(module, "HIDDEN", None)
        if not isinstance(hidden, dict):
            raise GradingError(f"{path}: defines no HIDDEN dict")
        for ex_id, maker in hidden.items():
            if ex_id in merged:
                raise GradingError(f"{path}: hidden cases for {ex_id} are defined twice")
            merged[ex_id] = maker
    return merged


def _notebooks(folder: Path) -> List[Path]:
    return sorted(p for p in folder.glob("*.ipynb") if p.is_file())


def _prepare_out(path: Path, force: bool) -> None:
    if path.exists() and any(path.iterdir()):
        if not force:
            raise GradingError(f"{path} already exists and is not empty; pass --force to replace it")
        shutil.rmtree(path)
    path.mkdir(parents=True, exist_ok=True)


def validate(source_dir: Path) -> List[str]:
    """Problems with the exercise cells of every notebook in ``source_dir`` (empty: all good)."""
    problems = []
    for path in _notebooks(Path(source_dir)):
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
    log: Callable[[str], None] = print,
) -> dict:
    """Write the student versions and the private grading bundle; return the manifest."""
    source_dir, out_dir = Path(source_dir), Path(out_dir)
    if not source_dir.is_dir():
        raise GradingError(f"{source_dir} is not a folder")
    tests_dir = Path(tests_dir) if tests_dir else _find_tests_dir(source_dir)
    hidden = load_hidden_cases(tests_dir)
    problems = validate(source_dir)
    if problems:
        raise GradingError("fix the exercise cells first:\n  " + "\n  ".join(problems))

    student_dir, bundle_dir = out_dir / "student", out_dir / "grading"
    exercises: List[dict] = []
    notebooks: Dict[str, List[str]] = {}
    students: Dict[str, dict] = {}
    for path in _notebooks(source_dir):
        nb = read_notebook(path.read_bytes())
        students[path.name] = to_student(nb)
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

    _prepare_out(student_dir, force)
    _prepare_out(bundle_dir, force)
    for name, nb in students.items():
        (student_dir / name).write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    for path in sorted(tests_dir.glob("hidden_*.py")):
        shutil.copy2(path, bundle_dir / path.name)
    from .. import __version__

    manifest = {
        "format": MANIFEST_FORMAT,
        "attncourse_version": __version__,
        "notebooks": notebooks,
        "exercises": exercises,
        "total_points": sum(e["points"] for e in exercises),
    }
    (bundle_dir / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    log(
        f"{len(students)} student notebooks in {student_dir}, {len(exercises)} exercises "
        f"({manifest['total_points']} points); grading bundle in {bundle_dir} (keep it private)"
    )
    if without:
        log(f"warning: no hidden cases for {', '.join(without)} (graded on the public cases only)")
    return manifest


# ============================================================================= sandbox


@dataclass
class Limits:
    """Per-notebook limits: wall time of the whole run, of one cell, of one call; memory; output."""

    time_s: float = 300.0
    cell_s: float = 60.0
    case_s: float = 10.0
    memory_mb: int = 2048
    file_mb: int = 64
    output_chars: int = 1_000_000


@dataclass
class Sandbox:
    mode: str  # "bwrap", "nobody" or "hook"
    ro_binds: Tuple[str, ...] = ()
    symlinks: Tuple[Tuple[str, str], ...] = ()

    def describe(self) -> str:
        return {
            "bwrap": "bubblewrap (private filesystem view, no network, audit hook inside)",
            "nobody": "audit hook, running as user nobody",
            "hook": f"audit hook only, running as {'root' if os.geteuid() == 0 else 'the current user'}",
        }[self.mode]


def _python_paths(python: str) -> List[str]:
    """The child's own sys.path (isolated mode), and its prefixes."""
    out = subprocess.run(
        [
            python,
            "-I",
            "-c",
            "import json, sys; print(json.dumps([sys.prefix, sys.base_prefix, sys.exec_prefix] + sys.path))",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    if out.returncode != 0:
        raise GradingError(f"{python} does not run: {out.stderr.strip()[-300:]}")
    return [p for p in json.loads(out.stdout) if p]


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _bwrap_layout(python: str, protected: Sequence[str]) -> Sandbox:
    package_dir = os.path.realpath(Path(__file__).parents[1])  # attncourse/
    wanted: List[str] = []
    for p in _python_paths(python) + [os.path.dirname(os.path.realpath(python)), os.path.dirname(python)]:
        p = os.path.realpath(p)
        if not os.path.exists(p):
            continue
        if any(_inside(q, p) for q in protected):
            continue  # never expose a folder that holds submissions, the bundle or the results
        wanted.append(p)
    wanted.append(package_dir)
    binds: List[str] = []
    for p in sorted(set(wanted), key=len):
        if not any(_inside(p, b) for b in binds):
            binds.append(p)
    symlinks, system = [], []
    for d in ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(d):
            symlinks.append((os.readlink(d), d))
        elif os.path.isdir(d):
            system.append(d)
    etc = [
        "/etc/ld.so.cache",
        "/etc/ld.so.conf",
        "/etc/ld.so.conf.d",
        "/etc/alternatives",
        "/etc/localtime",
        "/etc/passwd",
        "/etc/group",
        "/etc/nsswitch.conf",
        "/etc/fonts",
    ]
    ro = (
        system
        + [e for e in etc if os.path.exists(e)]
        + [b for b in binds if not any(_inside(b, s) for s in system)]
    )
    return Sandbox("bwrap", tuple(ro), tuple(symlinks))


def _probe(cmd: List[str], cwd: str) -> bool:
    try:
        r = subprocess.run(cmd, cwd=cwd, capture_output=True, timeout=120, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return False
    return r.returncode == 0 and b"probe-ok" in r.stdout


_PROBE_CODE = (
    "import os, sys\n"
    "uid = {uid}\n"
    "if uid is not None and os.getuid() == 0:\n"
    "    os.setgroups([]); os.setgid(uid); os.setuid(uid)\n"
    "import numpy, json, email.mime.text\n"
    "os.listdir(sys.prefix)\n"
    "open('probe.txt', 'w').write('x')\n"
    "print('probe-ok')\n"
)


def find_sandbox(
    requested: str = "auto", python: str = sys.executable, protected: Sequence[str] = ()
) -> Sandbox:
    """The strongest sandbox that works here: ``bwrap`` > ``nobody`` > ``hook``.

    ``requested`` names one to insist on (a ``GradingError`` if it does not work).
    """
    if requested not in ("auto", "bwrap", "nobody", "hook"):
        raise GradingError(f"unknown sandbox {requested!r}: use auto, bwrap, nobody or hook")
    with tempfile.TemporaryDirectory(prefix="attncourse-probe-") as scratch:
        os.chmod(scratch, 0o777)
        if requested in ("auto", "bwrap") and shutil.which("bwrap"):
            box = _bwrap_layout(python, protected)
            cmd = _bwrap_command(box, scratch, {"HOME": scratch}) + [
                python,
                "-I",
                "-B",
                "-c",
                _PROBE_CODE.format(uid=None),
            ]
            if _probe(cmd, scratch):
                return box
        if requested == "bwrap":
            raise GradingError("bubblewrap (bwrap) is not installed or cannot create a sandbox here")
        if requested in ("auto", "nobody") and os.geteuid() == 0:
            if _probe([python, "-I", "-B", "-c", _PROBE_CODE.format(uid=NOBODY)], scratch):
                return Sandbox("nobody")
        if requested == "nobody":
            raise GradingError(
                "cannot run as nobody here (not root, or nobody cannot read the Python installation)"
            )
    return Sandbox("hook")


def _bwrap_command(box: Sandbox, scratch: str, env: Dict[str, str]) -> List[str]:
    cmd = ["bwrap"]
    for path in box.ro_binds:
        cmd += ["--ro-bind", path, path]
    for target, link in box.symlinks:
        cmd += ["--symlink", target, link]
    cmd += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--bind", scratch, scratch]
    cmd += ["--unshare-all", "--unshare-user", "--uid", str(NOBODY), "--gid", str(NOBODY)]
    cmd += ["--cap-drop", "ALL", "--die-with-parent", "--new-session", "--clearenv", "--chdir", scratch]
    for key, value in env.items():
        cmd += ["--setenv", key, value]
    return cmd


# ============================================================================= one run


@dataclass
class Run:
    """One notebook of one student, after its sandboxed run."""

    notebook: str
    status: str = "ok"  # ok, malformed, timeout, crashed
    problem: str = ""
    outcomes: Dict[str, List[Outcome]] = field(default_factory=dict)
    cell_notes: dict = field(default_factory=dict)
    unknown_ids: List[Tuple[int, str]] = field(default_factory=list)
    exercise_cells: List[str] = field(default_factory=list)  # ids of the exercise cells it contains
    defined: List[str] = field(default_factory=list)
    stopped_in: str = ""
    exit_code: Optional[int] = None
    seconds: float = 0.0
    stderr_tail: str = ""


@dataclass
class Prepared:
    """An exercise with its cases, their inputs on disk and their expected outputs."""

    exercise: Exercise
    cases: List[Case]
    hidden: List[bool]
    expected: List[List[np.ndarray]]
    files: List[dict]


def _prepare_cases(
    exercises: List[Exercise], hidden: Dict[str, Callable[[], List[Case]]], folder: Path
) -> List[Prepared]:
    prepared = []
    for e_index, ex in enumerate(exercises):
        public = ex.public_cases()
        secret = list(hidden[ex.id]()) if ex.id in hidden else []
        cases, flags, expected, files = public + secret, [False] * len(public) + [True] * len(secret), [], []
        for c_index, case in enumerate(cases):
            if list(case.inputs) != list(ex.params):
                raise GradingError(
                    f"{ex.id}, case {case.name!r}: inputs {list(case.inputs)} do not match {ex.function}{ex.params}"
                )
            arrays = {k: v for k, v in case.inputs.items() if isinstance(v, np.ndarray)}
            scalars = {k: v for k, v in case.inputs.items() if not isinstance(v, np.ndarray)}
            for k, v in scalars.items():
                if not isinstance(v, (bool, int, float, str, type(None))):
                    raise GradingError(f"{ex.id}, case {case.name!r}: input {k} must be an array or a number")
            np.savez(folder / f"{e_index}_{c_index}.npz", **arrays)
            files.append(
                {"file": f"cases/{e_index}_{c_index}.npz", "order": list(case.inputs), "scalars": scalars}
            )
            expected.append(expected_outputs(ex, case))
        prepared.append(Prepared(ex, cases, flags, expected, files))
    return prepared


def _read_capped(path: Path, limit: int) -> bytes:
    """Read a file the child may have tampered with: no symlinks, regular files, at most ``limit``."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode) or st.st_size > limit:
            raise ValueError("not a regular file of a sensible size")
        return f.read(limit)


def _load_json(path: Path) -> Optional[dict]:
    try:
        data = json.loads(_read_capped(path, 2**20).decode("utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _load_array(path: Path, limit: int = MAX_RESULT_BYTES) -> np.ndarray:
    arr = np.load(io.BytesIO(_read_capped(path, limit)), allow_pickle=False)
    if not isinstance(arr, np.ndarray) or arr.dtype.kind not in "biuf":
        raise ValueError("not an array of numbers")
    return arr


def _tail(path: Path, n: int = 2000) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - n))
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""


def _str(value: Any, limit: int = 400) -> str:
    text = value if isinstance(value, str) else ""
    return text[:limit]


def _notes(notes: dict, key: str) -> List[dict]:
    """Entries of ``notes[key]`` (written by the child, so checked): dicts with an int ``cell``."""
    items = notes.get(key, [])
    if not isinstance(items, list):
        return []
    return [n for n in items if isinstance(n, dict) and isinstance(n.get("cell"), int)]


class Grader:
    """Runs notebooks in the sandbox and collects what they returned."""

    def __init__(
        self,
        prepared: List[Prepared],
        cases_dir: Path,
        work: Path,
        sandbox: Sandbox,
        limits: Limits,
        protected: List[str],
    ):
        self.prepared, self.cases_dir, self.work, self.sandbox = prepared, cases_dir, work, sandbox
        self.limits, self.protected = limits, protected
        self.python = sys.executable
        self.lib_roots = sorted({os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)})
        self._counter = 0
        self._lock = threading.Lock()

    def _job(self, cells: List[dict], scratch: str) -> dict:
        lim = self.limits
        return {
            "cells": cells,
            "exercises": [
                {
                    "id": p.exercise.id,
                    "function": p.exercise.function,
                    "kind": p.exercise.array_kind,
                    "outputs": list(p.exercise.outputs),
                    "cases": p.files,
                }
                for p in self.prepared
            ],
            "limits": {
                "memory_bytes": lim.memory_mb * 2**20,
                "file_bytes": lim.file_mb * 2**20,
                "cpu_seconds": int(lim.time_s) + 5,
                "cell_seconds": lim.cell_s,
                "case_seconds": lim.case_s,
                "output_chars": lim.output_chars,
            },
            "attncourse_parent": os.path.realpath(Path(__file__).parents[2]),
            "protected": self.protected + [str(self.work)],
            "lib_roots": self.lib_roots,
            "uid": NOBODY if self.sandbox.mode == "nobody" else None,
            "gid": NOBODY if self.sandbox.mode == "nobody" else None,
        }

    def run(self, path: Path) -> Run:
        run = Run(path.name)
        try:
            if path.stat().st_size > MAX_NOTEBOOK_BYTES:
                raise ValueError
            raw = path.read_bytes()
        except (OSError, ValueError):
            run.status, run.problem = (
                "malformed",
                f"not a readable notebook: larger than {MAX_NOTEBOOK_BYTES // 2**20} MB or unreadable",
            )
            return run
        try:
            nb = read_notebook(raw)
        except NotebookProblem as e:
            run.status, run.problem = "malformed", f"not a readable notebook: {e}"
            return run
        headers = {p.exercise.header: p.exercise.id for p in self.prepared}
        for index, cell in enumerate(nb["cells"], 1):
            ex_id = exercise_id_of(cell)
            if ex_id is not None:
                try:
                    get(ex_id)
                    run.exercise_cells.append(ex_id)
                except KeyError:
                    run.unknown_ids.append((index, ex_id))
            elif cell.get("cell_type") == "code":
                # metadata lost (copied cell, another editor): the first-line comment still names it
                src = cell.get("source", "")
                first = ("".join(src) if isinstance(src, list) else str(src)).strip().split("\n", 1)[0]
                if first.strip() in headers:
                    run.exercise_cells.append(headers[first.strip()])
        cells = [
            {
                "index": i,
                "source": "".join(c["source"]) if isinstance(c.get("source"), list) else c.get("source", ""),
            }
            for i, c in enumerate(nb["cells"], 1)
            if c.get("cell_type") == "code"
        ]
        with self._lock:
            self._counter += 1
            number = self._counter
        scratch = Path(tempfile.mkdtemp(prefix=f"s{number}-", dir=self.work))
        try:
            self._execute(run, raw, cells, scratch)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
            for suffix in (".out", ".err"):
                try:
                    os.remove(str(scratch) + suffix)
                except OSError:
                    pass
        return run

    def _execute(self, run: Run, raw: bytes, cells: List[dict], scratch: Path) -> None:
        (scratch / "submission.ipynb").write_bytes(raw)
        shutil.copytree(self.cases_dir, scratch / "cases")
        (scratch / "results").mkdir()
        (scratch / "tmp").mkdir()
        (scratch / "job.json").write_text(json.dumps(self._job(cells, str(scratch))), encoding="utf-8")
        if self.sandbox.mode == "nobody":
            for root, dirs, files in os.walk(scratch):
                for name in (
                    [root] + [os.path.join(root, d) for d in dirs] + [os.path.join(root, f) for f in files]
                ):
                    os.chown(name, NOBODY, NOBODY)
        env = {
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "HOME": str(scratch),
            "TMPDIR": str(scratch / "tmp"),
            "MPLBACKEND": "Agg",
            "MPLCONFIGDIR": str(scratch / "tmp"),
            "OMP_NUM_THREADS": "1",
            "OPENBLAS_NUM_THREADS": "1",
            "MKL_NUM_THREADS": "1",
            "LANG": "C.UTF-8",
        }
        child = [self.python, "-I", "-B", str(CHILD), str(scratch)]
        if self.sandbox.mode == "bwrap":
            cmd, popen_env = (
                _bwrap_command(self.sandbox, str(scratch), env) + child,
                {"PATH": os.environ.get("PATH", env["PATH"])},
            )
        else:
            cmd, popen_env = child, env
        out_path, err_path = Path(str(scratch) + ".out"), Path(str(scratch) + ".err")
        start = time.perf_counter()
        with open(out_path, "wb") as out, open(err_path, "wb") as err:
            proc = subprocess.Popen(
                cmd,
                cwd=scratch,
                env=popen_env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                start_new_session=True,
            )
            try:
                proc.wait(timeout=self.limits.time_s)
            except subprocess.TimeoutExpired:
                run.status = "timeout"
            finally:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)  # the child and anything it started
                except (ProcessLookupError, PermissionError):
                    pass
                proc.wait()
        run.seconds = time.perf_counter() - start
        run.exit_code = proc.returncode
        run.stderr_tail = _tail(err_path)
        self._collect(run, scratch)

    def _collect(self, run: Run, scratch: Path) -> None:
        results = scratch / "results"
        done = _load_json(results / "done.json") is not None
        notes = _load_json(results / "cells.json")
        try:
            progress = _read_capped(results / "progress.txt", 64).decode("ascii", "replace").strip()
        except (OSError, ValueError):
            progress = ""
        if run.status == "ok" and not done:
            run.status = "crashed"
        if not done:
            run.stopped_in = (
                f"cell {progress}"
                if notes is None and progress.isdigit()
                else "the exercise functions"
                if notes is not None
                else "start-up"
            )
        if notes is not None:
            run.cell_notes = notes
            defined = notes.get("defined", [])
            run.defined = [d for d in defined if isinstance(d, str)] if isinstance(defined, list) else []
        scratch_text = str(scratch)
        for e_index, p in enumerate(self.prepared):
            outcomes: List[Outcome] = []
            defined = notes is not None and p.exercise.function in run.defined
            timed_out = False
            for c_index in range(len(p.cases)):
                if notes is None:
                    outcomes.append(Outcome("not_run", message=self._not_run_message(run)))
                    continue
                if not defined:
                    outcomes.append(Outcome("missing"))
                    continue
                record = _load_json(results / f"{e_index}_{c_index}.json")
                if record is None:
                    if timed_out:
                        outcomes.append(Outcome("timeout", seconds=self.limits.case_s))
                    else:
                        outcomes.append(Outcome("not_run", message=self._not_run_message(run)))
                    continue
                status = record.get("status")
                if status == "returned":
                    n = record.get("n")
                    try:
                        if not isinstance(n, int) or n != len(p.exercise.outputs):
                            raise ValueError
                        # a result far larger than the expected one is refused before it is read
                        caps = [min(MAX_RESULT_BYTES, 2**20 + 16 * e.nbytes) for e in p.expected[c_index]]
                        arrays = [
                            _load_array(results / f"{e_index}_{c_index}_{k}.npy", caps[k]) for k in range(n)
                        ]
                        outcomes.append(Outcome("returned", arrays))
                    except (OSError, ValueError):
                        outcomes.append(
                            Outcome(
                                "bad_output", message="its result could not be read back (far too large?)"
                            )
                        )
                elif status == "timeout":
                    timed_out = True
                    outcomes.append(Outcome("timeout", seconds=self.limits.case_s))
                elif status == "bad_output":
                    outcomes.append(Outcome("bad_output", message=_str(record.get("message"))))
                else:
                    outcomes.append(
                        Outcome(
                            "raised",
                            error_type=_str(record.get("type"), 80) or "Exception",
                            message=_str(record.get("message")).replace(scratch_text, "<grading folder>"),
                            where=_str(record.get("where"), 200),
                        )
                    )
            run.outcomes[p.exercise.id] = outcomes

    def _not_run_message(self, run: Run) -> str:
        if run.status == "timeout":
            return f"not run: the notebook hit the {self.limits.time_s:g} s time limit first"
        return "not run: the grading process ended early"


# ============================================================================= grading


@dataclass
class ExerciseGrade:
    exercise: Exercise
    cases: List[CaseResult]
    notebook: str = ""

    @property
    def earned(self) -> float:
        if not self.cases:
            return 0.0
        return round(self.exercise.points * sum(c.passed for c in self.cases) / len(self.cases), 2)


@dataclass
class StudentGrade:
    student: str
    notebooks: List[str]
    status: str
    notes: List[str]
    details: List[str]
    grades: List[ExerciseGrade]
    seconds: Dict[str, float]  # wall time of each notebook's run

    @property
    def total(self) -> float:
        return round(sum(g.earned for g in self.grades), 2)


def _discover(submissions_dir: Path, out_dir: Path) -> List[Tuple[str, List[Path]]]:
    found: Dict[str, List[Path]] = {}
    for entry in sorted(submissions_dir.iterdir()):
        if entry.name.startswith("."):
            continue
        if entry.is_file() and entry.suffix == ".ipynb":
            found.setdefault(entry.stem, []).append(entry)
        elif entry.is_dir() and not _inside(str(entry.resolve()), str(out_dir.resolve())):
            notebooks = _notebooks(entry)
            if notebooks:
                if entry.name in found:
                    raise GradingError(
                        f"{entry.name}: both {entry.name}.ipynb and a folder {entry.name}/ in {submissions_dir}"
                    )
                found[entry.name] = notebooks
    return sorted(found.items())


def _safe_name(student: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in student) or "_"


def _student_grade(student: str, runs: List[Run], prepared: List[Prepared], limits: Limits) -> StudentGrade:
    grades, notes, details = [], [], []
    multi = len(runs) > 1

    def tag(run: Run, text: str) -> str:
        return f"{run.notebook}: {text}" if multi else text

    for p in prepared:
        # the notebook(s) holding the exercise's cell; failing that, those defining its function
        holders = [r for r in runs if p.exercise.id in r.exercise_cells]
        definers = [r for r in runs if p.exercise.function in r.defined]
        pool = holders or definers or runs
        candidates = []
        for order, run in enumerate(runs):
            if run not in pool or p.exercise.id not in run.outcomes:
                continue
            cases = [
                judge(p.exercise, case, expected, outcome, hidden=flag)
                for case, expected, outcome, flag in zip(
                    p.cases, p.expected, run.outcomes[p.exercise.id], p.hidden
                )
            ]
            candidate = ExerciseGrade(p.exercise, cases, run.notebook)
            # the best-scoring notebook; on a tie, one that defines the function, then the first
            candidates.append((candidate.earned, p.exercise.function in run.defined, -order, candidate))
        if candidates:
            grades.append(max(candidates, key=lambda t: t[:3])[3])
        else:
            grades.append(
                ExerciseGrade(
                    p.exercise,
                    [CaseResult(c.name, False, "not graded", "error", h) for c, h in zip(p.cases, p.hidden)],
                )
            )

    statuses = [r.status for r in runs]
    status = (
        "malformed"
        if all(s == "malformed" for s in statuses)
        else next((s for s in ("timeout", "crashed", "malformed") if s in statuses), "ok")
    )
    for run in runs:
        if run.status == "malformed":
            notes.append(tag(run, run.problem))
            continue
        if run.status == "timeout":
            notes.append(
                tag(run, f"stopped at the {limits.time_s:g} s time limit while running {run.stopped_in}")
            )
        elif run.status == "crashed":
            code = run.exit_code
            how = f"killed by signal {-code}" if code is not None and code < 0 else f"exit code {code}"
            notes.append(
                tag(
                    run,
                    f"the notebook ended the grading process early ({how}) while running {run.stopped_in}",
                )
            )
            if run.stderr_tail.strip():
                details.append(tag(run, "last output: " + run.stderr_tail.strip().splitlines()[-1][:300]))
        cn = run.cell_notes
        syntax, errors = _notes(cn, "syntax"), _notes(cn, "errors")
        exits, timeouts = _notes(cn, "exits"), _notes(cn, "timeouts")
        if syntax:
            notes.append(tag(run, "syntax errors in cells " + ", ".join(str(n.get("cell")) for n in syntax)))
        if errors:
            notes.append(tag(run, "errors in cells " + ", ".join(str(n.get("cell")) for n in errors)))
        if exits:
            notes.append(
                tag(run, "sys.exit() in cells " + ", ".join(str(n.get("cell")) for n in exits) + " (ignored)")
            )
        if timeouts:
            notes.append(
                tag(
                    run,
                    f"cells over the {limits.cell_s:g} s cell limit (stopped): "
                    + ", ".join(str(n.get("cell")) for n in timeouts),
                )
            )
        if cn.get("output_truncated") is True:
            notes.append(tag(run, f"printed more than {limits.output_chars} characters (cut)"))
        for index, ex_id in run.unknown_ids:
            notes.append(tag(run, f"unknown exercise id {ex_id!r} in cell {index}"))
        for n in syntax:
            details.append(tag(run, f"cell {n.get('cell')}: {_str(n.get('message'))}"))
        for n in errors:
            where = f" ({_str(n.get('where'), 200)})" if n.get("where") else ""
            details.append(
                tag(
                    run,
                    f"cell {n.get('cell')} raised {_str(n.get('type'), 80)}: {_str(n.get('message'))}{where}",
                )
            )
        for n in exits:
            details.append(
                tag(
                    run,
                    f"cell {n.get('cell')} called sys.exit({_str(n.get('code'), 80)}); the grader carried on",
                )
            )
        for n in timeouts:
            details.append(
                tag(run, f"cell {n.get('cell')} ran longer than {limits.cell_s:g} s and was stopped")
            )
    ran = [r for r in runs if r.status != "malformed" and r.cell_notes]
    if ran:
        missing = [
            g.exercise.function for g in grades if not any(g.exercise.function in r.defined for r in ran)
        ]
        if missing:
            notes.append("not found: " + ", ".join(missing))
    return StudentGrade(
        student,
        [r.notebook for r in runs],
        status,
        notes,
        details,
        grades,
        {r.notebook: round(r.seconds, 3) for r in runs},
    )


def _feedback(sg: StudentGrade, out_of: int) -> str:
    lines = [f"Feedback for {sg.student}", "=" * (13 + len(sg.student)), ""]
    lines.append(f"Notebook{'s' if len(sg.notebooks) > 1 else ''}: {', '.join(sg.notebooks)}")
    lines.append(f"Total: {_fmt_points(sg.total)} / {out_of} points")
    lines.append("")
    for g in sg.grades:
        ex = g.exercise
        passed = sum(c.passed for c in g.cases)
        lines.append(f"Exercise {ex.number} · {ex.title} ({ex.id}): {_fmt_points(g.earned)} / {ex.points}")
        if passed == len(g.cases):
            lines.append(f"  all {len(g.cases)} cases passed")
        elif all(c.status == "not attempted" for c in g.cases):
            lines.append("  not attempted")
        else:
            lines.append(f"  {passed} of {len(g.cases)} cases passed")
            last = None
            for c in g.cases:
                if not c.passed:
                    msg = "same problem as above" if c.message == last else c.message
                    lines.append(f"  ✗ {c.name}: {msg}")
                    last = c.message
        lines.append("")
    if sg.notes or sg.details:
        lines.append("Notes")
        lines += [f"  - {n}" for n in sg.notes + sg.details]
        lines.append("")
    return "\n".join(lines)


def grade(
    bundle_dir: Path,
    submissions_dir: Path,
    out_dir: Path,
    *,
    limits: Optional[Limits] = None,
    jobs: int = 1,
    chapters: Optional[Sequence[str]] = None,
    sandbox: str = "auto",
    force: bool = False,
    log: Callable[[str], None] = print,
) -> List[StudentGrade]:
    """Grade every notebook in ``submissions_dir``; write the gradebook and feedback to ``out_dir``."""
    bundle_dir, submissions_dir, out_dir = Path(bundle_dir), Path(submissions_dir), Path(out_dir)
    limits = limits or Limits()
    manifest_path = bundle_dir / "manifest.json"
    if not manifest_path.is_file():
        raise GradingError(
            f"{bundle_dir} is not a grading bundle (no manifest.json); make one with `attncourse assign`"
        )
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    except ValueError as e:
        raise GradingError(f"{manifest_path}: not valid JSON ({e})") from None
    if manifest.get("format") != MANIFEST_FORMAT:
        raise GradingError(f"{manifest_path}: unsupported format {manifest.get('format')!r}")
    if not submissions_dir.is_dir():
        raise GradingError(f"{submissions_dir} is not a folder")
    if _inside(str(out_dir.resolve()), str(submissions_dir.resolve())):
        raise GradingError("OUT_DIR must not be inside SUBMISSIONS_DIR")
    if (out_dir / "gradebook.csv").exists() and not force:
        raise GradingError(f"{out_dir} already holds a gradebook; pass --force to replace it")

    exercises = []
    keys = [chapter_key(c) for c in chapters] if chapters else None
    for entry in manifest.get("exercises", []):
        try:
            ex = get(entry["id"])
        except KeyError:
            raise GradingError(
                f"the bundle lists {entry['id']!r}, which this attncourse ({manifest.get('attncourse_version')}) does not know"
            ) from None
        if keys is None or ex.chapter in keys:
            exercises.append(ex)
    if not exercises:
        raise GradingError("no exercises to grade (check --chapter)")
    hidden = load_hidden_cases(bundle_dir)
    submissions = _discover(submissions_dir, out_dir)

    needed = [os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, Path(__file__).parents[1])]
    protected = sorted(
        {os.path.realpath(p) for p in (submissions_dir, bundle_dir, out_dir)}
        - {
            q
            for q in map(os.path.realpath, (submissions_dir, bundle_dir, out_dir))
            if any(_inside(n, q) for n in needed)
        }
    )
    box = find_sandbox(sandbox, sys.executable, protected)
    log(f"sandbox: {box.describe()}")
    if box.mode == "hook" and jobs > 1:
        log("warning: without bubblewrap, parallel runs are kept apart only by the audit hook")

    work = Path(tempfile.mkdtemp(prefix="attncourse-grade-"))
    os.chmod(work, 0o711)  # others may pass through (to their own scratch folder), not list it
    try:
        cases_dir = work / "cases"
        cases_dir.mkdir()
        prepared = _prepare_cases(exercises, hidden, cases_dir)
        os.chmod(cases_dir, 0o755)
        grader = Grader(prepared, cases_dir, work, box, limits, protected)
        start = time.perf_counter()

        def grade_one(item: Tuple[str, List[Path]]) -> StudentGrade:
            student, paths = item
            return _student_grade(student, [grader.run(p) for p in paths], prepared, limits)

        with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            results = list(pool.map(grade_one, submissions))
        elapsed = time.perf_counter() - start
    finally:
        shutil.rmtree(work, ignore_errors=True)

    out_of = sum(ex.points for ex in exercises)
    out_dir.mkdir(parents=True, exist_ok=True)
    feedback_dir = out_dir / "feedback"
    if feedback_dir.exists():
        shutil.rmtree(feedback_dir)
    feedback_dir.mkdir()
    with open(out_dir / "gradebook.csv", "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["student"] + [ex.id for ex in exercises] + ["total", "out_of", "status", "notes"])
        for sg in results:
            writer.writerow(
                [sg.student]
                + [_fmt_points(g.earned) for g in sg.grades]
                + [_fmt_points(sg.total), out_of, sg.status, "; ".join(sg.notes)]
            )
    for sg in results:
        (feedback_dir / f"{_safe_name(sg.student)}.txt").write_text(_feedback(sg, out_of), encoding="utf-8")
    summary = {
        "sandbox": box.mode,
        "limits": limits.__dict__,
        "seconds": round(elapsed, 2),
        "students": [
            {
                "student": sg.student,
                "notebooks": sg.notebooks,
                "status": sg.status,
                "total": sg.total,
                "seconds": sg.seconds,
                "exercises": {
                    g.exercise.id: {
                        "earned": g.earned,
                        "passed": sum(c.passed for c in g.cases),
                        "cases": len(g.cases),
                    }
                    for g in sg.grades
                },
                "notes": sg.notes,
            }
            for sg in results
        ],
    }
    (out_dir / "results.json").write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    n_notebooks = sum(len(sg.notebooks) for sg in results)
    per = elapsed / n_notebooks if n_notebooks else 0.0
    log(
        f"graded {len(results)} students ({n_notebooks} notebooks) in {elapsed:.1f} s ({per:.2f} s per notebook); wrote {out_dir / 'gradebook.csv'}"
    )
    return results
