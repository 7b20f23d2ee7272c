"""The Colab stand-in's venv: the versions Colab ships (tests/colab-requirements.txt), made once
and kept between runs outside the checkout (``COLAB_STANDIN_DIR``, default a folder in the
system's temp folder).  tests/test_colab_standin.py uses it; scripts/test.sh makes it while the
main venv is being filled:

    python3 tests/colab_venv.py

Standard library only: it runs before any venv of the project exists.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import venv
from pathlib import Path

REQUIREMENTS = Path(__file__).resolve().parent / "colab-requirements.txt"


def folder() -> Path:
    return Path(os.environ.get("COLAB_STANDIN_DIR", Path(tempfile.gettempdir()) / "attncourse-colab-standin"))


def ensure() -> Path:
    """The venv's Python, the venv made first (again when the requirements changed)."""
    cache = folder()
    python = cache / "venv" / "bin" / "python"
    stamp = cache / "requirements.txt"
    if not python.exists() or not stamp.exists() or stamp.read_text() != REQUIREMENTS.read_text():
        venv.EnvBuilder(with_pip=True, clear=True).create(cache / "venv")
        subprocess.run([str(python), "-m", "pip", "install", "-q", "-r", str(REQUIREMENTS)], check=True)
        stamp.write_text(REQUIREMENTS.read_text())
    return python


if __name__ == "__main__":
    print(ensure())
