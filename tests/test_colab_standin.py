"""Every chapter runs the way Colab would run it.

A fresh virtual environment gets the versions Colab ships (tests/colab-requirements.txt,
ipywidgets 7.7.1 included), a stand-in ``google.colab`` module is imported when the kernel
starts (as Colab does), and each notebook's install cell is pointed at this checkout instead of
the network.  Then every notebook must execute without error, and attncourse must have been
installed by the install cell itself, without upgrading anything Colab had.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
REQUIREMENTS = ROOT / "tests" / "colab-requirements.txt"
# What a Colab user opens: a chapter's student edition where it has one (its badge points there).
NOTEBOOKS = sorted(
    ROOT / "student" / p.name if (ROOT / "student" / p.name).exists() else p
    for p in (ROOT / "book").glob("*.ipynb")
)

pytestmark = [pytest.mark.colab, pytest.mark.slow]

EXECUTE = r"""
import sys, nbformat
from nbclient import NotebookClient
path, out = sys.argv[1], sys.argv[2]
nb = nbformat.read(path, as_version=4)
NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": sys.argv[3]}}).execute()
nbformat.write(nb, out)
"""


def _pip_freeze(python: Path) -> dict:
    lines = subprocess.run(
        [str(python), "-m", "pip", "freeze"], capture_output=True, text=True, check=True
    ).stdout
    return dict(line.split("==", 1) for line in lines.splitlines() if "==" in line)


@pytest.fixture(scope="session")
def colab_env(tmp_path_factory):
    """A venv with Colab's versions, and an IPython profile that imports google.colab."""
    # Outside the checkout, so the book build never sees it; kept between runs.
    cache = Path(
        os.environ.get("COLAB_STANDIN_DIR", Path(tempfile.gettempdir()) / "attncourse-colab-standin")
    )
    python = cache / "venv" / "bin" / "python"
    stamp = cache / "requirements.txt"
    if not python.exists() or not stamp.exists() or stamp.read_text() != REQUIREMENTS.read_text():
        venv.EnvBuilder(with_pip=True, clear=True).create(cache / "venv")
        subprocess.run([str(python), "-m", "pip", "install", "-q", "-r", str(REQUIREMENTS)], check=True)
        stamp.write_text(REQUIREMENTS.read_text())
    # attncourse must come from the notebooks' install cell, so start without it.
    subprocess.run([str(python), "-m", "pip", "uninstall", "-q", "-y", "attncourse"], check=False)
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
    return python, env


def _point_install_cell_at_checkout(nb: dict) -> int:
    """Rewrite the git URL in the install cell to this checkout; return how many cells changed."""
    changed = 0
    for cell in nb["cells"]:
        if "colab-install" in cell.get("metadata", {}).get("tags", []):
            src = "".join(cell["source"])
            new = re.sub(r'"attncourse @ git\+[^"]+"', f'"{ROOT}"', src)
            assert new != src, "the install cell lost its pip line"
            cell["source"] = new
            changed += 1
    return changed


def test_colab_requirements_pin_what_colab_ships():
    pins = dict(line.split("==") for line in REQUIREMENTS.read_text().splitlines() if "==" in line)
    assert pins["ipywidgets"] == "7.7.1"
    assert {"torch", "numpy", "matplotlib", "ipywidgets"} <= set(pins)


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs_in_colab_standin(colab_env, notebook, tmp_path):
    python, env = colab_env
    nb = json.loads(notebook.read_text())
    assert _point_install_cell_at_checkout(nb) == 1, f"{notebook.name} has no colab-install cell"
    src = tmp_path / notebook.name
    src.write_text(json.dumps(nb))
    before = _pip_freeze(python)
    result = subprocess.run(
        [str(python), "-c", EXECUTE, str(src), str(tmp_path / "out.ipynb"), str(notebook.parent)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    after = _pip_freeze(python)
    shown = subprocess.run([str(python), "-m", "pip", "show", "attncourse"], capture_output=True, text=True)
    assert shown.returncode == 0, "the install cell did not install attncourse"
    for package in ("torch", "numpy", "matplotlib", "ipywidgets"):
        assert after.get(package) == before.get(package), f"the install cell changed {package}"
    executed = json.loads((tmp_path / "out.ipynb").read_text())
    errors = [o for c in executed["cells"] for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors, errors[0]
    subprocess.run([str(python), "-m", "pip", "uninstall", "-q", "-y", "attncourse"], check=False)
