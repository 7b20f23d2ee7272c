"""The audit hook of the grading child, on its own: each way out that it must refuse.

The hook is the layer that is always there (bubblewrap and dropping root come on top where the
machine allows), so it is tested without them, in a throw-away Python process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

ATTEMPTS = {
    "write outside": "open(OUTSIDE, 'w').write('x')",
    "append outside": "open(OUTSIDE, 'a').write('x')",
    "os.open for writing": "os.open(OUTSIDE, os.O_WRONLY)",
    "delete outside": "os.remove(OUTSIDE)",
    "rename outside": "os.rename(OUTSIDE, os.path.join(SCRATCH, 'stolen'))",
    "hard link to an outside file": "os.link(OUTSIDE, os.path.join(SCRATCH, 'alias'))",
    "symlink then write": "os.symlink(OUTSIDE, os.path.join(SCRATCH, 'sym')); open(os.path.join(SCRATCH, 'sym'), 'w')",
    "chmod outside": "os.chmod(OUTSIDE, 0o777)",
    "truncate outside": "os.truncate(OUTSIDE, 0)",
    "rmtree": "import shutil; shutil.rmtree(PROTECTED)",
    "read a protected folder": "open(os.path.join(PROTECTED, 'other.ipynb')).read()",
    "list a protected folder": "os.listdir(PROTECTED)",
    "subprocess": "import subprocess; subprocess.run(['true'])",
    "os.system": "os.system('true')",
    "fork": "os.fork()",
    "posix_spawn": "os.posix_spawn('/bin/true', ['true'], {})",
    "_posixsubprocess": "import _posixsubprocess; _posixsubprocess.fork_exec()",
    "kill the parent": "import signal; os.kill(os.getppid(), signal.SIGTERM)",
    "socket": "import socket; socket.socket()",
    "ctypes libc": "import ctypes; ctypes.CDLL('libc.so.6')",
    "ctypes unlink": "import ctypes; ctypes.CDLL(None).unlink",
    "ctypes C API": "import ctypes; ctypes.pythonapi.PyRun_SimpleString",
    "raise a limit": "import resource; resource.setrlimit(resource.RLIMIT_AS, (-1, -1))",
    "sqlite outside": "import sqlite3; sqlite3.connect(OUTSIDE + '.db')",
    "gc walk": "import gc; gc.get_objects()",
}

ALLOWED = {
    "write in scratch": "open(os.path.join(SCRATCH, 'ok.txt'), 'w').write('fine')",
    "read outside": "open(OUTSIDE).read()",
    "import a module": "import json, email.mime.text",
    "numpy": "import numpy as np; np.save(os.path.join(SCRATCH, 'a.npy'), np.ones(3))",
    "numpy.testing": "import numpy.testing; numpy.testing.assert_allclose(1.0, 1.0)",
}

SCRIPT = """
import json, os, sys
sys.path.insert(0, {root!r})
from attncourse.exercises._child import _install_audit_hook
SCRATCH, OUTSIDE, PROTECTED = {scratch!r}, {outside!r}, {protected!r}
_install_audit_hook(SCRATCH, [PROTECTED], [sys.prefix, sys.base_prefix])
verdicts = {{}}
for name, code in {attempts!r}.items():
    try:
        exec(code)
        verdicts[name] = "allowed"
    except PermissionError as e:
        verdicts[name] = "denied" if "grading sandbox" in str(e) else "os: " + str(e)
    except Exception as e:
        verdicts[name] = type(e).__name__ + ": " + str(e)
print(json.dumps(verdicts))
"""


def run_attempts(tmp_path: Path, attempts: dict) -> dict:
    scratch, protected = tmp_path / "scratch", tmp_path / "submissions"
    scratch.mkdir()
    protected.mkdir()
    (protected / "other.ipynb").write_text("{}")
    outside = tmp_path / "canary.txt"
    outside.write_text("keep")
    code = SCRIPT.format(
        root=str(ROOT),
        scratch=str(scratch),
        outside=str(outside),
        protected=str(protected),
        attempts=attempts,
    )
    run = subprocess.run(
        [sys.executable, "-I", "-B", "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        cwd=scratch,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    assert outside.read_text() == "keep"
    assert (protected / "other.ipynb").exists()
    return json.loads(run.stdout.strip().splitlines()[-1])


def test_the_hook_refuses_every_way_out(tmp_path):
    verdicts = run_attempts(tmp_path, ATTEMPTS)
    assert {name: v for name, v in verdicts.items() if v != "denied"} == {}


def test_the_hook_lets_ordinary_code_run(tmp_path):
    verdicts = run_attempts(tmp_path, ALLOWED)
    assert verdicts == {name: "allowed" for name in ALLOWED}


def test_dropping_root_really_drops_it(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("only root can drop to nobody")
    code = (
        f"import os, sys; sys.path.insert(0, {str(ROOT)!r})\n"
        "from attncourse.exercises._child import _drop_root\n"
        "_drop_root(65534, 65534)\n"
        "print(os.getuid(), os.getgid(), os.getgroups())\n"
        "try:\n"
        "    os.setuid(0)\n"
        "except PermissionError:\n"
        "    print('cannot regain root')\n"
    )
    run = subprocess.run(
        [sys.executable, "-I", "-B", "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=60
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.split("\n")[:2] == ["65534 65534 []", "cannot regain root"]
