"""What a notebook's code reaches for that a graded exercise never needs: a note for the instructor.

The sandbox refuses processes, the network and the files outside the job folder, and a notebook
that catches the resulting errors would otherwise leave no trace.  ``suspicious_uses`` reads the
cells that run in full (exercise cells and cells the student added) and names what they use:
new processes, sockets, foreign code, the interpreter's internals, files by absolute path.  It
marks nothing; the note says which cell used what.
"""

from __future__ import annotations

import ast
from typing import Dict, Iterable, List, Optional

__all__ = ["suspicious_uses"]

MODULES = {
    "subprocess": "new processes",
    "multiprocessing": "new processes",
    "pty": "new processes",
    "socket": "the network",
    "urllib": "the network",
    "http": "the network",
    "requests": "the network",
    "ctypes": "foreign code (ctypes)",
    "cffi": "foreign code (cffi)",
    "gc": "the interpreter's internals",
    "inspect": "the interpreter's internals",
}
CALLS = {
    "os.system": "new processes",
    "os.popen": "new processes",
    "os.fork": "new processes",
    "os.forkpty": "new processes",
    "os.kill": "signals to other processes",
    "os.killpg": "signals to other processes",
    "os._exit": "os._exit",
    "os.setuid": "another user",
    "sys._getframe": "the interpreter's internals",
    "sys.setrecursionlimit": "the interpreter's limits",
    "signal.signal": "signal handlers",
    "signal.alarm": "signal handlers",
    "shutil.rmtree": "deleting folders (shutil.rmtree)",
    "__import__": "imports by name (__import__)",
    "importlib.import_module": "imports by name",
}


def _dotted(node: ast.AST) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return ""


MAX_SOURCE = 2**20  # a cell longer than this is not read for the note


def _uses(source: str) -> List[str]:
    if len(source) > MAX_SOURCE:
        return []
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    found: List[str] = []
    for node in ast.walk(tree):
        names: Iterable[str] = ()
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module]
        for name in names:
            what = MODULES.get(name.split(".")[0])
            if what and what not in found:
                found.append(what)
        if isinstance(node, ast.Call):
            name = _dotted(node.func)
            what = CALLS.get(name) or (
                "new processes" if name.startswith(("os.exec", "os.spawn", "os.posix_spawn")) else ""
            )
            if name == "open" and node.args and isinstance(node.args[0], ast.Constant):
                path = node.args[0].value
                if isinstance(path, str) and (path.startswith(("/", "~")) or ".." in path):
                    what = "files outside its folder"
            if what and what not in found:
                found.append(what)
    return found


def suspicious_uses(cells: Iterable[dict], names: Optional[Dict[int, str]] = None) -> List[str]:
    """A note naming what the cells that run in full reach for that no exercise needs (or none);
    ``names`` says how a student finds each cell (``Scan.cell_names``), else its index is given.

    >>> suspicious_uses([{"index": 3, "kind": "added", "source": "import socket\\ntry:\\n    open('/etc/shadow')\\nexcept OSError:\\n    pass"},
    ...                  {"index": 5, "kind": "exercise", "source": "import socket"}])
    ['reaches for the network (cells 3, 5), files outside its folder (cell 3), which no exercise needs (noted, not marked)']
    >>> suspicious_uses([{"index": 1, "kind": "exercise", "source": "def f(x):\\n    return x"}])
    []
    """
    where: Dict[str, List[str]] = {}
    for cell in cells:
        if cell.get("kind") in ("exercise", "added"):
            for what in _uses(cell.get("source", "")):
                where.setdefault(what, []).append(
                    names[cell["index"]] if names and cell["index"] in names else str(cell["index"])
                )
    if not where:
        return []
    if names:
        listed = ", ".join(f"{what} ({'; '.join(c)})" for what, c in where.items())
    else:
        listed = ", ".join(
            f"{what} (cell{'s' if len(c) > 1 else ''} {', '.join(c)})" for what, c in where.items()
        )
    return [f"reaches for {listed}, which no exercise needs (noted, not marked)"]
