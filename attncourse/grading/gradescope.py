"""Gradescope: the bundle packaged as an autograder, and the autograder's run.

``gradescope_format.gradescope_results`` writes one student's marks in Gradescope's format.

``attncourse gradescope BUNDLE OUT`` writes ``OUT/autograder.zip`` (upload it as the assignment's
autograder): ``setup.sh`` installs Python, numpy, torch (CPU) and bubblewrap; ``run_autograder``
grades ``/autograder/submission/*.ipynb`` with the bundle in ``source/`` and writes
``/autograder/results/results.json``.  ``AUTOGRADER_ROOT`` replaces ``/autograder`` (a test lays
out a folder as Gradescope does).

Inside Gradescope's container bubblewrap may be refused (no user namespaces).  Then the notebook
runs without bubblewrap, as user ``nobody`` when the autograder runs as root and ``nobody`` can
run its Python (the venv setup.sh makes from ``/usr/bin/python3``), with the bundle and the
results folder readable by root alone and its job folder outside the folder of the cases' inputs;
else as root.  ``isolation_note`` says in the output and ``results.json`` what isolation is left
(a separate user, resource limits) and what is lost (bubblewrap's namespaces: network, processes).
The container is the student's own and is thrown away after the run, so what is at stake is the
hidden cases inside that container, not other students' work.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import sys
import zipfile
from pathlib import Path
from typing import Optional, Sequence

from .gradescope_format import gradescope_results
from .limits import GradingError

__all__ = ["gradescope_results", "isolation_note", "package", "run_autograder", "SETUP_SH", "RUN_AUTOGRADER"]

SETUP_SH = """#!/usr/bin/env bash
# Gradescope runs this once, as root, when the autograder image is built.
set -euo pipefail
apt-get update
apt-get install -y python3 python3-pip python3-venv bubblewrap
python3 -m venv /autograder/venv
/autograder/venv/bin/pip install --upgrade pip
/autograder/venv/bin/pip install "numpy>=1.23"
/autograder/venv/bin/pip install --index-url https://download.pytorch.org/whl/cpu "torch>=2.2"
"""

RUN_AUTOGRADER = """#!/usr/bin/env bash
# Gradescope runs this for every submission, in a fresh container.
ROOT="${AUTOGRADER_ROOT:-/autograder}"
PYTHON="${AUTOGRADER_PYTHON:-$ROOT/venv/bin/python}"
# without bubblewrap the notebook runs as user nobody, who must reach the venv and the package
# (the bundle and the results are made root's alone before anything runs)
chmod o+x "$ROOT" "$ROOT/source" 2>/dev/null || true
cd "$ROOT/source"
exec env PYTHONPATH="$ROOT/source" "$PYTHON" -m attncourse.grading.gradescope "$ROOT" CHAPTERS
"""


def _copy_package(dest: Path) -> None:
    here = Path(__file__).resolve().parents[1]  # attncourse/
    shutil.copytree(here, dest / "attncourse", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))


def package(
    bundle_dir: Path, out_dir: Path, *, chapters: Optional[Sequence[str]] = None, force: bool = False
) -> Path:
    """Write the Gradescope autograder for ``bundle_dir`` into ``out_dir``; returns the zip's path."""
    from .handout import read_manifest

    bundle_dir, out_dir = Path(bundle_dir), Path(out_dir)
    read_manifest(bundle_dir)
    if out_dir.exists() and any(out_dir.iterdir()):
        if not force:
            raise GradingError(f"{out_dir} already exists and is not empty; pass --force to replace it")
        shutil.rmtree(out_dir)
    files = out_dir / "autograder"
    files.mkdir(parents=True)
    _copy_package(files)
    shutil.copytree(bundle_dir, files / "bundle")
    (files / "setup.sh").write_text(SETUP_SH, encoding="utf-8")
    chosen = " ".join(f"--chapter {c}" for c in chapters or ())
    (files / "run_autograder").write_text(RUN_AUTOGRADER.replace("CHAPTERS", chosen), encoding="utf-8")
    for name in ("setup.sh", "run_autograder"):
        os.chmod(files / name, 0o755)
    archive = out_dir / "autograder.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as z:
        for path in sorted(files.rglob("*")):
            if path.is_file():
                info = zipfile.ZipInfo.from_file(path, path.relative_to(files).as_posix())
                info.external_attr = (stat.S_IFREG | (0o755 if os.access(path, os.X_OK) else 0o644)) << 16
                z.writestr(info, path.read_bytes(), zipfile.ZIP_DEFLATED)
    print(f"wrote {archive}: upload it as the autograder (Gradescope unpacks it into /autograder/source)")
    return archive


def _nobody_runs_python() -> bool:
    """True when this process is not root, or when user nobody can start this Python and import
    the grader's runner from where it lies (a venv of ``/usr/bin/python3``, as setup.sh makes)."""
    if os.geteuid() != 0:
        return True
    import subprocess

    from .sandbox import NOBODY, PACKAGE_ROOT, RUNNER

    try:
        done = subprocess.run(
            [sys.executable, "-s", "-c", f"import numpy, {RUNNER}"],
            user=NOBODY,
            group=NOBODY,
            extra_groups=[],
            env={"PYTHONPATH": PACKAGE_ROOT, "PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/"},
            cwd="/",
            capture_output=True,
            timeout=60,
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


def isolation_note(sandbox: str, why: str) -> str:
    """What a run without bubblewrap still isolates, and what it does not, in the run's output."""
    head = f"Note: bubblewrap cannot run in this container ({why}), so the notebook ran without it"
    limits = "resource limits (memory, CPU time, file size, wall time)"
    if sandbox == "nobody" and os.geteuid() == 0:
        return (
            f"{head}, as user nobody. Isolation left: a separate user, who cannot read the grading bundle "
            f"(hidden cases), the expected outputs or the results; {limits}. Lost with no bubblewrap "
            "namespaces: the notebook could use the network, start processes and read what the "
            "container leaves readable to all."
        )
    if sandbox == "nobody":
        return (
            f"{head}, as this autograder's own user. Isolation left: {limits} only; the notebook "
            "could read the grading bundle and use the network."
        )
    return (
        f"{head}, as root (user nobody cannot run this Python). Isolation left: {limits} only; "
        "the notebook could read the grading bundle and rewrite the results."
    )


def run_autograder(root: Path, chapters: Optional[Sequence[str]] = None) -> dict:
    """Grade ``root/submission`` with ``root/source/bundle``; write ``root/results/results.json``."""
    from .batch import grade_submissions
    from .limits import Limits
    from .submissions import Submission

    root = Path(root)
    bundle, submission, results = root / "source" / "bundle", root / "submission", root / "results"
    results.mkdir(parents=True, exist_ok=True)
    notebooks = sorted(str(p) for p in submission.rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)
    sub = (
        Submission("submission", notebooks)
        if notebooks
        else Submission("submission", problem="no .ipynb notebook was submitted", status="malformed")
    )
    extra = ""
    sandbox = "bwrap"
    from .sandbox import find_sandbox

    try:
        if os.environ.get("ATTNCOURSE_NO_BWRAP"):  # as in a container that refuses user namespaces
            raise GradingError("bubblewrap is switched off (ATTNCOURSE_NO_BWRAP): no sandbox")
        find_sandbox("bwrap", sys.executable, [str(bundle), str(results)])
    except GradingError as e:
        sandbox = "nobody" if _nobody_runs_python() else "none"
        extra = isolation_note(sandbox, str(e).split(":")[0])
        print(extra)
        if os.geteuid() == 0 and sandbox == "nobody":  # what the notebook must not read or write: root's
            for path in (bundle, results):
                os.chmod(path, 0o700)
    run = grade_submissions(
        bundle, [sub], [submission], results, limits=Limits(), jobs=1, chapters=chapters, sandbox=sandbox
    )
    sg = run.results[0]
    data = gradescope_results(sg, sum(ex.points for ex in run.exercises), extra)
    (results / "results.json").write_text(
        json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    print(data["output"])
    return data


if __name__ == "__main__":
    args = sys.argv[1:]
    chapters = [args[i + 1] for i, a in enumerate(args) if a == "--chapter"]
    run_autograder(Path(args[0]), chapters or None)
