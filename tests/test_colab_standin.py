"""Every chapter runs the way Colab would run it.

A fresh virtual environment gets the versions Colab ships (tests/colab-requirements.txt,
ipywidgets 7.7.1 included), a stand-in ``google.colab`` module is imported when the kernel
starts (as Colab does), and each notebook's install cell is pointed at a wheel built once from
this checkout instead of the network.  Then every notebook (the student edition a Colab badge
opens) must execute without error, attncourse must have been installed by the install cell
itself, without upgrading anything Colab had, and with no exercise done every check must say
0 points ("not attempted yet" where the stub is empty) and the chapter's score 0.

Each chapter's student edition runs once per test run, in one of the three languages (see
``NOTEBOOKS``); the chapters themselves are executed by the book build.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import colab_venv
import pytest

from attncourse import i18n
from attncourse.exercises import CHAPTERS, all_exercises, get
from attncourse.exercises.engine.compare import NOT_ATTEMPTED
from attncourse.exercises.engine.registry import STUB_LINE

ROOT = Path(__file__).resolve().parents[1]
REQUIREMENTS = colab_venv.REQUIREMENTS
# What a Colab user opens: a chapter's student edition where it has one (its badge points there).
NOTEBOOKS = sorted(
    ROOT / "student" / p.name if (ROOT / "student" / p.name).exists() else p
    for p in (ROOT / "book").glob("*.ipynb")
)
# The Chinese student editions run the English ones' code, with the language set in the setup
# cell (tests/test_student_versions.py checks it cell by cell), so each chapter runs once, in
# English, simplified and traditional Chinese in turn: every chapter's code runs in a Colab-like
# kernel, and each language's check and score cells are seen on five chapters.
LANGUAGES = ("en", "zh_CN", "zh_TW")
NOTEBOOKS = [
    p if LANGUAGES[i % 3] == "en" or p.parent.name != "student" else p.parent / LANGUAGES[i % 3] / p.name
    for i, p in enumerate(NOTEBOOKS)
]

pytestmark = [pytest.mark.colab, pytest.mark.slow]

EXECUTE = r"""
import os, shutil, sys, tempfile, nbformat
from jupyter_client.manager import AsyncKernelManager
from nbclient import NotebookClient
path, out = sys.argv[1], sys.argv[2]
nb = nbformat.read(path, as_version=4)
# Unix sockets, not TCP ports: the book build's kernels start beside these, and a TCP port picked
# free by one kernel manager can be taken by another before its kernel binds it.
sockets = tempfile.mkdtemp(prefix="kernel-")
km = AsyncKernelManager(kernel_name="python3", transport="ipc", ip=os.path.join(sockets, "k"))
try:
    NotebookClient(nb, km=km, timeout=300, resources={"metadata": {"path": sys.argv[3]}}).execute()
finally:
    shutil.rmtree(sockets, ignore_errors=True)
nbformat.write(nb, out)
"""


COLAB_OWNS = ("torch", "numpy", "matplotlib", "ipywidgets")
VERSIONS = r"""
import json, sys
from importlib import metadata
names = sys.argv[1:]
def version(name):
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None
print(json.dumps({name: version(name) for name in names}))
"""


def _versions(python: Path, *names: str) -> dict:
    """The installed version of each distribution in the venv of ``python`` (None: not installed)."""
    out = subprocess.run(
        [str(python), "-I", "-c", VERSIONS, *names], capture_output=True, text=True, check=True
    ).stdout
    return json.loads(out)


@pytest.fixture(scope="session")
def colab_env(tmp_path_factory):
    """A venv with Colab's versions, and an IPython profile that imports google.colab."""
    # Outside the checkout, so the book build never sees it; kept between runs.
    python = colab_venv.ensure()
    # attncourse must come from the notebooks' install cell, so start without it.
    subprocess.run([str(python), "-I", "-m", "pip", "uninstall", "-q", "-y", "attncourse"], check=False)
    # The wheel the install cell installs, built once from a clean copy of the package's sources
    # (as pip builds the git URL's fresh clone in Colab): no build/ or egg-info of this checkout.
    source = tmp_path_factory.mktemp("source")
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, source / name)
    shutil.copytree(ROOT / "attncourse", source / "attncourse", ignore=shutil.ignore_patterns("__pycache__"))
    wheels = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [str(python), "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(wheels), str(source)], check=True
    )
    (wheel,) = wheels.glob("attncourse-*.whl")
    # Stand-in google.colab (a namespace package: no google/__init__.py) ...
    site = tmp_path_factory.mktemp("colab_site")
    (site / "google" / "colab").mkdir(parents=True)
    (site / "google" / "colab" / "__init__.py").write_text('"""Stand-in for Colab\'s module."""\n')
    # ... imported at kernel start, as in Colab.
    ipython_dir = tmp_path_factory.mktemp("ipython")
    startup = ipython_dir / "profile_default" / "startup"
    startup.mkdir(parents=True)
    (startup / "00-colab.py").write_text("import google.colab\n")
    env = {**os.environ, "PYTHONPATH": str(site), "IPYTHONDIR": str(ipython_dir), "MPLBACKEND": "Agg"}
    env.pop("VIRTUAL_ENV", None)
    env["PATH"] = f"{python.parent}{os.pathsep}{env['PATH']}"
    return python, env, wheel


def _point_install_cell_at(nb: dict, wheel: Path) -> int:
    """Rewrite the git URL in the install cell to ``wheel``; return how many cells changed."""
    changed = 0
    for cell in nb["cells"]:
        if "colab-install" in cell.get("metadata", {}).get("tags", []):
            src = "".join(cell["source"])
            new = re.sub(r'"attncourse @ git\+[^"]+"', f'"{wheel}"', src)
            assert new != src, "the install cell lost its pip line"
            cell["source"] = new
            changed += 1
    return changed


def test_colab_requirements_pin_what_colab_ships():
    pins = dict(line.split("==") for line in REQUIREMENTS.read_text().splitlines() if "==" in line)
    assert pins["ipywidgets"] == "7.7.1"
    assert {"torch", "numpy", "matplotlib", "ipywidgets"} <= set(pins)


def _assert_nothing_scored(executed: dict, stem: str) -> None:
    """Every check cell says 0 points, "not attempted yet" for an empty stub, in the edition's
    language (its first cell's ``set_language``); the score is 0."""

    def text(cell):
        return "".join(cell["outputs"][0]["data"]["text/plain"])

    key = next(k for k, (_, chapter) in CHAPTERS.items() if chapter == stem)
    checks = [c for c in executed["cells"] if "check" in c["metadata"].get("attncourse", {})]
    assert len(checks) == len(all_exercises(key))
    with i18n.using(i18n.language_of_notebook(executed)):
        for cell in checks:
            ex = get(cell["metadata"]["attncourse"]["check"])
            title = i18n.tr("Exercise {number} · {title}", number=ex.number, title=i18n.tr(ex.title))
            points = i18n.tr("{earned}/{points} points", earned="0", points=ex.points)
            assert text(cell).startswith(i18n.tr("{case}: {message}", case=title, message=points)), text(cell)
            if ex.stub in (None, STUB_LINE):  # a diagnose stub is the buggy code
                assert i18n.tr(NOT_ATTEMPTED) in text(cell), text(cell)
        score = next(c for c in executed["cells"] if "score" in c["metadata"].get("attncourse", {}))
        total = sum(ex.points for ex in all_exercises(key))
        assert i18n.tr("{earned}/{points} points", earned="0", points=total) in text(score), text(score)


def _id(notebook: Path) -> str:
    language = notebook.parent.name
    return notebook.stem if language in ("student", "book") else f"{language}-{notebook.stem}"


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[_id(p) for p in NOTEBOOKS])
def test_notebook_runs_in_colab_standin(colab_env, notebook, tmp_path):
    python, env, wheel = colab_env
    nb = json.loads(notebook.read_text())
    assert _point_install_cell_at(nb, wheel) == 1, f"{notebook.name} has no colab-install cell"
    src = tmp_path / notebook.name
    src.write_text(json.dumps(nb))
    before = _versions(python, *COLAB_OWNS, "attncourse")
    assert before["attncourse"] is None
    try:
        _run_and_check(python, env, notebook, src, tmp_path, before)
    finally:  # the next notebook starts from a Colab without attncourse, whatever happened here
        subprocess.run([str(python), "-I", "-m", "pip", "uninstall", "-q", "-y", "attncourse"], check=False)


def _run_and_check(python, env, notebook, src, tmp_path, before):
    result = subprocess.run(
        [str(python), "-c", EXECUTE, str(src), str(tmp_path / "out.ipynb"), str(notebook.parent)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    after = _versions(python, *COLAB_OWNS, "attncourse")
    assert after.pop("attncourse") is not None, "the install cell did not install attncourse"
    for package in COLAB_OWNS:
        assert after[package] == before[package], f"the install cell changed {package}"
    executed = json.loads((tmp_path / "out.ipynb").read_text())
    errors = [o for c in executed["cells"] for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors, errors[0]
    if "student" in (notebook.parent.name, notebook.parent.parent.name):
        _assert_nothing_scored(executed, notebook.stem)
