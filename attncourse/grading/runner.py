"""Execute one submitted notebook for grading: ``python -m attncourse.grading.runner JOB_DIR``.

The grader starts this inside the sandbox with a job folder it prepared (``protocol`` describes
the files).  The runner

1. lowers its resource limits (``sandbox.apply_resource_limits``);
2. runs what grading needs, in one namespace, in notebook order: the graded exercises' imports
   (their ``needs``), every exercise cell in full, and from every other code cell only its
   top-level ``def`` and ``class`` statements (so a helper written elsewhere is found, while
   plots, sliders and training loops are not run).  IPython magics and ``!`` lines are skipped;
   each cell has a time limit; an exception, ``sys.exit()`` or a cell past its limit is recorded
   and the next cell runs;
3. calls each exercise function on each case through ``attncourse.exercises._check.call``, the
   path ``check`` uses, and writes the outcome to the reply (arrays as ``.npy``).

It never judges: the expected outputs are not in the sandbox.
"""

from __future__ import annotations

import ast
import linecache
import os
import re
import signal
import sys
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

__all__ = ["main", "strip_magics", "definitions_only"]

MEMORY_EXIT = 86  # the runner itself ran out of memory outside any cell or call


class _Timeout(BaseException):
    """Raised by SIGALRM when a cell or a call runs past its limit."""


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


def definitions_only(source: str) -> Optional[ast.Module]:
    """The top-level ``def`` and ``class`` statements of a cell (``None`` if it has none).

    >>> module = definitions_only("import os\\nx = f()\\ndef g():\\n    return 1\\nplot(x)")
    >>> [type(node).__name__ for node in module.body]
    ['FunctionDef']
    """
    tree = ast.parse(source)
    keep = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
    if not keep:
        return None
    return ast.Module(body=keep, type_ignores=[])


class _CappedText:
    """A text stream that keeps at most ``limit`` characters and drops the rest."""

    def __init__(self, stream: Any, limit: int) -> None:
        self._stream, self._left, self.truncated = stream, limit, False
        self.encoding = "utf-8"

    def write(self, text: Any) -> int:
        text = str(text)
        if len(text) > self._left:
            self.truncated = True
        part = text[: max(self._left, 0)]
        if part:
            self._left -= len(part)
            try:
                self._stream.write(part.encode("utf-8", "backslashreplace").decode("utf-8"))
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


def _on_alarm(signum: int, frame: Any) -> None:
    raise _Timeout()


def _timed(seconds: float, fn: Any, *args: Any) -> Any:
    signal.signal(signal.SIGALRM, _on_alarm)  # again: a notebook may have replaced the handler
    signal.setitimer(signal.ITIMER_REAL, float(seconds))
    try:
        return fn(*args)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


def _run_cells(request: Dict[str, Any], namespace: dict, reply: Any) -> None:
    from ..exercises._outputs import error_where, short_message

    limit = float(request["limits"]["cell_s"])
    prelude = request.get("prelude", "")
    if prelude:
        exec(compile(prelude, "<grading imports>", "exec"), namespace)
    for cell in request["cells"]:
        index, source = cell["index"], strip_magics(cell["source"])
        reply.progress(f"cell {index}")
        filename = f"<cell {index}>"
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
        try:
            if cell.get("exercise"):
                code = compile(source, filename, "exec")
            else:
                module = definitions_only(source)
                if module is None:
                    continue
                code = compile(module, filename, "exec")
        except (SyntaxError, ValueError, RecursionError, MemoryError) as e:
            if cell.get("exercise"):  # another cell that does not parse is not this grader's business
                line = getattr(e, "lineno", None)
                text = getattr(e, "msg", None) or short_message(e)
                where = f" (line {line})" if line else ""
                reply.cell(index, "syntax", type(e).__name__, f"{type(e).__name__}: {text}{where}")
            continue
        try:
            _timed(limit, exec, code, namespace)
        except _Timeout:
            reply.cell(index, "timeout")
        except SystemExit as e:
            reply.cell(index, "exit", "SystemExit", short_message(e))
        except BaseException as e:
            reply.cell(index, "error", type(e).__name__, short_message(e), error_where(e.__traceback__))


def _load_args(specs: Sequence[dict]) -> List[Any]:
    args = []
    for spec in specs:
        if "array" in spec:
            args.append(np.load(spec["array"], allow_pickle=False))
        else:
            args.append(spec["value"])
    return args


def _call_cases(request: Dict[str, Any], namespace: dict, reply: Any) -> None:
    from ..exercises._check import call
    from ..exercises._compare import Outcome
    from ..exercises._registry import get

    limit = float(request["limits"]["case_s"])
    for e, entry in enumerate(request["exercises"]):
        fn = namespace.get(entry["function"])
        if not callable(fn):
            continue
        exercise = get(entry["id"])
        for c, specs in enumerate(entry["cases"]):
            reply.progress(f"case {e} {c}")
            try:
                outcome = _timed(limit, call, exercise, fn, _load_args(specs))
            except _Timeout:
                outcome = Outcome("timeout", seconds=limit)
            except BaseException as err:  # KeyboardInterrupt and the like, raised by the function
                outcome = Outcome("raised", error_type=type(err).__name__, message=str(err)[:300])
            reply.result(e, c, outcome)
            if outcome.kind == "timeout":
                break  # the remaining cases would time out too; they count as failed
        reply.save("cases")


def main(argv: Optional[Sequence[str]] = None) -> int:
    from . import protocol
    from .sandbox import apply_resource_limits

    argv = list(sys.argv[1:] if argv is None else argv)
    job_dir = os.path.realpath(argv[0])
    os.chdir(job_dir)
    request = protocol.read_request(job_dir)
    apply_resource_limits(request["limits"]["rlimits"])
    reply = protocol.ReplyWriter(job_dir, len(request["exercises"]))
    reply.save("cells")
    import attncourse.exercises  # noqa: F401  (loaded before any notebook code can replace it)

    from ..exercises import _check  # noqa: F401

    cap = int(request["limits"]["output_chars"])
    stdout, stderr = _CappedText(sys.stdout, cap), _CappedText(sys.stderr, cap)
    sys.stdout, sys.stderr = stdout, stderr
    signal.signal(signal.SIGALRM, _on_alarm)
    import builtins

    namespace: dict = {"__name__": "__main__", "__builtins__": builtins}
    namespace["display"] = lambda *objs, **kw: print(*objs)
    try:
        _run_cells(request, namespace, reply)
        sys.stdout = stdout  # a notebook may have replaced them
        sys.stderr = stderr
        reply.data["defined"] = sorted(
            k
            for k, v in list(namespace.items())
            if isinstance(k, str) and callable(v) and not k.startswith("__")
        )
        reply.data["output_truncated"] = stdout.truncated or stderr.truncated
        reply.save("cases")
        reply.progress("cases")
        _call_cases(request, namespace, reply)
        reply.data["output_truncated"] = stdout.truncated or stderr.truncated
        import resource

        usage = resource.getrusage(resource.RUSAGE_SELF)
        reply.data["cpu_seconds"] = round(usage.ru_utime + usage.ru_stime, 4)
        reply.save("done")
    except MemoryError:
        os._exit(MEMORY_EXIT)
    try:
        stdout.flush()
        stderr.flush()
    finally:
        os._exit(0)  # skip atexit handlers and finalizers a notebook may have registered


if __name__ == "__main__":
    main()
