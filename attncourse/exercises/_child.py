"""Run one submitted notebook inside the grading sandbox: ``python -I -B _child.py JOB_DIR``.

The grader (the parent process) prepares ``JOB_DIR``: ``job.json`` (the notebook's code cells,
the exercises to call, the limits), ``cases/*.npz`` (the inputs it generated).  This script

1. lowers its own resource limits, installs an audit hook that refuses writes outside
   ``JOB_DIR``, new processes, sockets and reads of the protected folders, and drops root;
2. executes the code cells in order, each under its own time limit, in one namespace, skipping
   IPython magics and shell escapes (a cell that fails or calls ``sys.exit`` is recorded and
   the next cell runs);
3. calls every exercise function on every case and writes what came back to ``results/`` as
   plain ``.npy`` arrays (or the exception's type and message as text).

It never judges anything: the parent loads the arrays (``allow_pickle=False``) and compares them
with references it computed itself, so nothing a notebook does in this process can raise its
score.  Only the standard library and numpy are imported here, and this module is also imported
by ``attncourse.exercises`` for ``to_arrays`` (so it must not do anything at import time).
"""

from __future__ import annotations

import json
import linecache
import os
import re
import sys
import time
import traceback
from typing import Any, List, Optional, Sequence

import numpy as np

__all__ = ["OutputProblem", "to_arrays", "strip_magics", "error_where", "short_message", "main"]

MAX_MESSAGE = 300


class OutputProblem(Exception):
    """What a function returned cannot be compared (None, a string, the wrong number of results)."""


def _describe(value: Any) -> str:
    name = type(value).__name__
    if isinstance(value, (tuple, list)):
        return f"a {name} of {len(value)} items"
    return f"a {name}" if name[0] not in "aeiouAEIOU" else f"an {name}"


def _one_array(value: Any, label: str) -> np.ndarray:
    if value is None:
        raise OutputProblem(f"{label} is None: did you forget `return`?")
    mod = type(value).__module__ or ""
    if mod.startswith("torch") and hasattr(value, "detach"):
        t = value.detach()
        if getattr(t, "is_conj", lambda: False)():
            t = t.resolve_conj()
        t = t.cpu()
        if str(t.dtype) == "torch.bfloat16":
            t = t.float()
        value = t.numpy()
    if isinstance(value, str):
        raise OutputProblem(f"{label} is a string, not an array")
    try:
        arr = np.asarray(value)
    except Exception:
        raise OutputProblem(f"{label} is {_describe(value)}, not an array") from None
    if arr.dtype.kind not in "biuf":
        raise OutputProblem(
            f"{label} is {_describe(value)} that is not an array of numbers (dtype {arr.dtype})"
        )
    return np.ascontiguousarray(arr)


def to_arrays(value: Any, outputs: Sequence[str]) -> List[np.ndarray]:
    """The function's return value as one numpy array per expected output.

    Torch tensors are detached and moved to the CPU; numbers and nested lists become arrays.

    >>> [a.shape for a in to_arrays((np.zeros(2), [[1, 2]]), ("out", "weights"))]
    [(2,), (1, 2)]
    >>> to_arrays(None, ("result",))
    Traceback (most recent call last):
    ...
    attncourse.exercises._child.OutputProblem: your function returned None: did you forget `return`?
    """
    if len(outputs) == 1:
        if value is None:
            raise OutputProblem("your function returned None: did you forget `return`?")
        if isinstance(value, (tuple, list)) and value and not _is_number_list(value):
            raise OutputProblem(f"expected one array, but your function returned {_describe(value)}")
        return [_one_array(value, "your result")]
    names = ", ".join(outputs)
    if not isinstance(value, (tuple, list)):
        if value is None:
            raise OutputProblem(f"your function returned None: did you forget `return {names}`?")
        raise OutputProblem(f"expected {len(outputs)} results ({names}) as a tuple; got {_describe(value)}")
    if len(value) != len(outputs):
        raise OutputProblem(f"expected {len(outputs)} results ({names}); got {_describe(value)}")
    return [_one_array(v, f"`{name}`") for v, name in zip(value, outputs)]


def _is_number_list(value: Any) -> bool:
    # [0.1, 0.2] or [[1, 2], [3, 4]] is an array written as a list; (out, weights) is not.
    try:
        return np.asarray(value).dtype.kind in "biuf"
    except Exception:
        return False


_MAGIC = re.compile(r"^(\s*)(%|!)")


def strip_magics(source: str) -> str:
    """Replace IPython magics and shell escapes by ``pass`` (same indentation, same line count).

    A cell magic (``%%time``, ``%%capture``...) on the first line skips the whole cell.

    >>> strip_magics("if True:\\n    %pip install x\\n!ls\\ny = 1")
    'if True:\\n    pass\\npass\\ny = 1'
    """
    if source.lstrip().startswith("%%"):
        return ""
    lines = []
    for line in source.splitlines():
        m = _MAGIC.match(line)
        lines.append(f"{m.group(1)}pass" if m else line)
    return "\n".join(lines)


def short_message(exc: BaseException) -> str:
    """The first line of ``str(exc)``, at most ``MAX_MESSAGE`` characters (never raises)."""
    try:
        text = str(exc)
    except Exception:
        text = "(the exception's message could not be shown)"
    first = text.strip().splitlines()[0] if text.strip() else ""
    return first if len(first) <= MAX_MESSAGE else first[: MAX_MESSAGE - 1] + "…"


def _is_library(filename: str) -> bool:
    if filename.startswith("<frozen") or filename.startswith("<__array_function__"):
        return True
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # attncourse/
    roots = {sys.prefix, sys.base_prefix, sys.exec_prefix, here}
    return any(filename.startswith(r + os.sep) for r in roots if r)


def error_where(tb: Any) -> str:
    """Where in the learner's own code an exception happened: ``"line 4: e = np.exp(x)"``.

    The innermost frame outside the standard library, site-packages and ``attncourse``.
    """
    frames = [f for f in traceback.extract_tb(tb) if not _is_library(f.filename)]
    if not frames:
        return ""
    f = frames[-1]
    code = (f.line or linecache.getline(f.filename, f.lineno)).strip()
    if len(code) > 80:
        code = code[:79] + "…"
    cell = re.match(r"<cell (\d+)>", f.filename)
    prefix = f"cell {cell.group(1)}, line {f.lineno}" if cell else f"line {f.lineno}"
    return f"{prefix}: {code}" if code else prefix


# ----------------------------------------------------------------------------- sandbox


class _Timeout(BaseException):
    """Raised by SIGALRM when a cell or a call runs past its limit."""


class _CappedText:
    """A text stream that keeps at most ``limit`` characters and silently drops the rest."""

    def __init__(self, stream: Any, limit: int) -> None:
        self._stream, self._left, self.truncated = stream, limit, False
        self.encoding = "utf-8"

    def write(self, text: str) -> int:
        text = str(text)
        if len(text) > self._left:
            self.truncated = True
        part = text[: max(self._left, 0)]
        if part:
            self._left -= len(part)
            try:
                self._stream.write(part)
            except Exception:
                pass
        return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except Exception:
            pass

    def isatty(self) -> bool:
        return False


def _set_limits(limits: dict) -> None:
    import resource
    import signal

    def lower(which: int, value: Optional[float]) -> None:
        if value is None:
            return
        value = int(value)
        _, hard = resource.getrlimit(which)
        if hard != resource.RLIM_INFINITY:
            value = min(value, hard)
        resource.setrlimit(which, (value, value))

    lower(resource.RLIMIT_AS, limits.get("memory_bytes"))
    lower(resource.RLIMIT_FSIZE, limits.get("file_bytes"))
    lower(resource.RLIMIT_CPU, limits.get("cpu_seconds"))
    lower(resource.RLIMIT_CORE, 0)
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # an over-long file write fails instead of killing


def _drop_root(uid: Optional[int], gid: Optional[int]) -> None:
    if uid is None or os.getuid() != 0:
        return
    os.setgroups([])
    os.setgid(gid if gid is not None else uid)
    os.setuid(uid)


_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
# libc and C-API entry points that would sidestep the hook through ctypes
_DENIED_SYMBOLS = re.compile(
    r"^(system|popen|exec\w*|fork|vfork|clone\d?|posix_spawn\w*|unlink\w*|remove|rename\w*|rmdir|"
    r"open\w*|fopen\w*|creat\w*|truncate\w*|ftruncate\w*|chmod|fchmod\w*|chown|fchown\w*|lchown|kill|"
    r"tgkill|syscall|ptrace|mprotect|mmap\w*|dlopen|dlsym|setuid|setgid|setre\w*|link\w*|symlink\w*|"
    r"mkdir\w*|write|pwrite\w*|setrlimit|prlimit\w*|PySys_\w*|Py_\w*|PyRun_\w*|PyEval_\w*|_Py\w*)$"
)


def _install_audit_hook(scratch: str, protected: Sequence[str], lib_roots: Sequence[str]) -> None:
    """Refuse, from here on: writes outside ``scratch``, reads of ``protected`` folders, new
    processes, signals, sockets, ctypes tricks and raising the resource limits.

    An audit hook is a speed bump, not a wall (PEP 578 says so): the grader adds a real
    sandbox (bubblewrap) or drops root where it can.
    """
    scratch = os.path.realpath(scratch)
    protected = tuple(os.path.realpath(p) for p in protected)
    lib_roots = tuple(os.path.realpath(p) for p in lib_roots)
    realpath, fspath, isabs, join, getcwd = (
        os.path.realpath,
        os.fspath,
        os.path.isabs,
        os.path.join,
        os.getcwd,
    )
    sep = os.sep

    def inside(path: str, root: str) -> bool:
        return path == root or path.startswith(root + sep)

    def resolve(path: Any) -> Optional[str]:
        if isinstance(path, int):
            return None
        try:
            p = fspath(path)
            if isinstance(p, bytes):
                p = p.decode("utf-8", "surrogateescape")
            return realpath(p if isabs(p) else join(getcwd(), p))
        except Exception:
            return "/"  # unreadable path: treat as outside

    def deny(what: str) -> None:
        raise PermissionError(f"grading sandbox: {what} is not allowed while grading")

    def check_write(path: Any, what: str) -> None:
        if isinstance(path, int):
            deny(f"{what} through a file descriptor")
        p = resolve(path)
        if p == "/dev/null":
            return
        if not inside(p, scratch):
            deny(f"{what} outside the grading folder")

    def check_read(path: Any) -> None:
        p = resolve(path)
        if p is not None and any(inside(p, r) for r in protected) and not inside(p, scratch):
            deny("reading other submissions or grading files")

    blocked = {
        "subprocess.Popen",
        "os.system",
        "os.exec",
        "os.posix_spawn",
        "os.spawn",
        "os.fork",
        "os.forkpty",
        "os.kill",
        "os.killpg",
        "pty.spawn",
        "os.startfile",
        "socket.__new__",
        "socket.connect",
        "socket.bind",
        "resource.setrlimit",
        "resource.prlimit",
        "sys.setprofile",
        "sys.settrace",
        "gc.get_objects",
        "gc.get_referrers",
        "gc.get_referents",
        "ctypes.cdata",
        "os.chroot",
        "os.setuid",
        "os.setgid",
        "signal.pthread_kill",
        "_posixsubprocess.fork_exec",
    }
    one_path_writes = {
        "os.remove",
        "os.rmdir",
        "os.mkdir",
        "os.chmod",
        "os.chown",
        "os.chflags",
        "os.lchown",
        "os.lchflags",
        "os.truncate",
        "os.utime",
        "os.mkfifo",
        "os.mknod",
        "os.setxattr",
        "os.removexattr",
        "shutil.rmtree",
        "shutil.chown",
    }
    two_path_writes = {
        "os.rename",
        "os.replace",
        "os.link",
        "os.symlink",
        "shutil.copyfile",
        "shutil.copytree",
        "shutil.move",
        "shutil.copymode",
        "shutil.copystat",
    }

    def hook(event: str, args: tuple) -> None:
        if event == "open":
            path, mode, flags = (tuple(args) + (None, None, None))[:3]
            writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
                mode is None and isinstance(flags, int) and flags & _WRITE_FLAGS
            )
            if isinstance(path, int):
                return  # wrapping a descriptor this process already holds
            if writing:
                check_write(path, "writing files")
            else:
                check_read(path)
        elif event in one_path_writes:
            if (
                len(args) > 1
                and event not in ("os.truncate", "os.chmod")
                and isinstance(args[-1], int)
                and args[-1] >= 0
            ):
                deny(f"{event} relative to a directory descriptor")
            check_write(args[0], event)
        elif event in two_path_writes:
            check_read(args[0])
            check_write(args[1], event)
            if event in ("os.rename", "os.replace", "os.link", "shutil.move"):
                check_write(args[0], event)  # a hard link to an outside file would make it writable
        elif event == "sqlite3.connect":
            if args and args[0] not in (":memory:", b":memory:", ""):
                check_write(args[0], "opening a database")

        elif event in ("os.listdir", "os.scandir", "glob.glob", "os.walk"):
            if args:
                check_read(args[0])
        elif event in blocked:
            deny(event)
        elif event == "ctypes.dlopen":
            name = args[0] if args else None
            if name is None:
                return  # importing ctypes opens the running program itself
            p = resolve(name) if isinstance(name, str) and isabs(name) else None
            if p is None or not any(inside(p, r) for r in lib_roots):
                deny("loading a shared library with ctypes")
        elif event in ("ctypes.dlsym", "ctypes.dlsym/handle"):
            name = args[1] if len(args) > 1 else ""
            if isinstance(name, str) and _DENIED_SYMBOLS.match(name):
                deny(f"the C function {name}()")

    # The C helper behind subprocess raises no audit event of its own: replace it by a refusal.
    try:
        import _posixsubprocess

        def fork_exec(*args: Any, **kwargs: Any) -> None:
            deny("starting a process")

        _posixsubprocess.fork_exec = fork_exec
    except ImportError:
        pass
    sys.addaudithook(hook)


def _exercises_stub() -> Any:
    """What ``attncourse.exercises`` is while grading: ``check`` and ``score`` do nothing."""
    import types

    stub = types.ModuleType("attncourse.exercises")
    stub.__doc__ = "Grading in progress: check() and score() do nothing here."

    def check(*args: Any, **kwargs: Any) -> None:
        return None

    def score(*args: Any, **kwargs: Any) -> None:
        return None

    stub.check, stub.score = check, score
    stub.__all__ = ["check", "score"]
    return stub


def _write_json(path: str, data: Any) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(data, f)
    os.replace(tmp, path)


def _to_kind(value: Any, kind: str) -> Any:
    if kind == "torch" and isinstance(value, np.ndarray):
        import torch

        return torch.from_numpy(value)
    return value


def main(argv: Sequence[str]) -> int:
    import builtins
    import signal
    import warnings

    job_dir = os.path.realpath(argv[0])
    with open(os.path.join(job_dir, "job.json"), encoding="utf-8") as f:
        job = json.load(f)
    limits = job["limits"]
    os.chdir(job_dir)
    results = os.path.join(job_dir, "results")
    sys.dont_write_bytecode = True

    _set_limits(limits)
    if job.get("attncourse_parent"):
        sys.path.insert(0, job["attncourse_parent"])
    out_cap = int(limits.get("output_chars", 1_000_000))
    stdout, stderr = _CappedText(sys.stdout, out_cap), _CappedText(sys.stderr, out_cap)
    sys.stdout, sys.stderr = stdout, stderr

    stub = _exercises_stub()
    try:
        import attncourse

        sys.modules["attncourse.exercises"] = stub
        attncourse.exercises = stub
    except Exception:
        sys.modules["attncourse.exercises"] = stub

    _drop_root(job.get("uid"), job.get("gid"))
    _install_audit_hook(job_dir, job.get("protected", []), job.get("lib_roots", []))

    def on_alarm(signum: int, frame: Any) -> None:
        raise _Timeout()

    signal.signal(signal.SIGALRM, on_alarm)

    namespace: dict = {"__name__": "__main__", "__builtins__": builtins}
    namespace["display"] = lambda *objs, **kw: print(*objs)
    notes: dict = {"errors": [], "exits": [], "timeouts": [], "syntax": []}
    progress = os.path.join(results, "progress.txt")

    for cell in job["cells"]:
        index, source = cell["index"], strip_magics(cell["source"])
        with open(progress, "w", encoding="utf-8") as f:
            f.write(str(index))
        filename = f"<cell {index}>"
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
        try:
            code = compile(source, filename, "exec")
        except SyntaxError as e:
            notes["syntax"].append({"cell": index, "message": f"SyntaxError: {e.msg} (line {e.lineno})"})
            continue
        try:
            signal.setitimer(signal.ITIMER_REAL, float(limits["cell_seconds"]))
            try:
                exec(code, namespace)
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
        except _Timeout:
            notes["timeouts"].append({"cell": index})
        except SystemExit as e:
            notes["exits"].append({"cell": index, "code": short_message(e)})
        except BaseException as e:
            notes["errors"].append(
                {
                    "cell": index,
                    "type": type(e).__name__,
                    "message": short_message(e),
                    "where": error_where(e.__traceback__),
                }
            )
    sys.stdout.flush()
    notes["defined"] = sorted(k for k, v in namespace.items() if callable(v) and not k.startswith("__"))
    notes["output_truncated"] = stdout.truncated or stderr.truncated
    _write_json(os.path.join(results, "cells.json"), notes)

    for e_index, exercise in enumerate(job["exercises"]):
        fn = namespace.get(exercise["function"])
        if not callable(fn):
            continue
        for c_index, case in enumerate(exercise["cases"]):
            stem = os.path.join(results, f"{e_index}_{c_index}")
            record: dict = {}
            try:
                with np.load(os.path.join(job_dir, case["file"]), allow_pickle=False) as data:
                    arrays = {name: data[name] for name in data.files}
                args = [
                    _to_kind(arrays[n], exercise["kind"]) if n in arrays else case["scalars"][n]
                    for n in case["order"]
                ]
                start = time.perf_counter()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    signal.setitimer(signal.ITIMER_REAL, float(limits["case_seconds"]))
                    try:
                        value = fn(*args)
                    finally:
                        signal.setitimer(signal.ITIMER_REAL, 0)
                record["seconds"] = round(time.perf_counter() - start, 4)
                outs = to_arrays(value, exercise["outputs"])
                for k, arr in enumerate(outs):
                    np.save(f"{stem}_{k}.npy", arr, allow_pickle=False)
                record.update(status="returned", n=len(outs))
            except _Timeout:
                record = {"status": "timeout", "seconds": float(limits["case_seconds"])}
            except OutputProblem as e:
                record = {"status": "bad_output", "message": short_message(e)}
            except BaseException as e:
                record = {
                    "status": "raised",
                    "type": type(e).__name__,
                    "message": short_message(e),
                    "where": error_where(e.__traceback__),
                }
            try:
                _write_json(stem + ".json", record)
            except BaseException:
                pass
            if record["status"] == "timeout":
                break  # the remaining cases would time out too; they count as failed
    _write_json(os.path.join(results, "done.json"), {"done": True})
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # skip atexit handlers a notebook may have registered


if __name__ == "__main__":
    main(sys.argv[1:])
