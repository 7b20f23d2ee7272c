"""Execute one submitted notebook for grading: ``python -m attncourse.grading.runner JOB_DIR``.

The grader starts this inside the sandbox with a job folder it prepared (``protocol`` describes
the files).  The runner

1. lowers its resource limits (``sandbox.apply_resource_limits``);
2. runs what grading needs, in one namespace, in notebook order: the graded exercises' imports
   (their ``needs``), every exercise cell and every cell the student added in full (imports,
   constants, helpers: what ``check`` saw in the notebook), and from the chapter's own other
   cells the top-level statements that the answers reach (``namespace.plan``: the imports,
   constants and helpers they read, transitively; plots, sliders and training loops nothing
   reads are not run).  ``check`` and ``score`` do nothing while grading.  An exercise cell runs
   under its exercise's ``Guard`` from its first statement to its last, so a reference called at
   top level (to precompute answers) is a shortcut exactly as inside the function.  IPython
   magics and ``!`` lines are skipped; each cell has a time limit; an exception, ``sys.exit()``
   or a cell past its limit is recorded and the next cell runs;
3. says it is done with the cells (stage ``cases``) and waits for the grader to deliver the
   cases' inputs into ``JOB/cases/``: no input exists in the sandbox while notebook code runs at
   top level;
4. calls each exercise function on each case through ``attncourse.exercises.engine.check.call``, the
   path ``check`` uses, and writes the outcome to the reply (arrays as ``.npy``); an output over
   its size cap, or one that cannot be written, fails that case alone.

It never judges: the expected outputs are not in the sandbox.
"""

from __future__ import annotations

import linecache
import os
import re
import signal
import sys
import time
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ..i18n import set_language
from .limits import MAX_TIMEOUTS
from .namespace import plan

__all__ = ["main", "strip_magics"]

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


class _Rules:
    """What ``needs`` and ``forbids`` a guard over a cell the student added reads (no exercise)."""

    def __init__(self, needs: Sequence[str]) -> None:
        self.needs, self.forbids = tuple(needs), ()


def _graded_functions(request: Dict[str, Any]) -> Tuple[List[str], List[str]]:
    """The names the grader calls after the cells: those of the graded exercises whose cells the
    notebook holds, and those of every graded exercise (found by name wherever they are defined)."""
    first = int(request.get("first_exercise", 0))
    held = {cell.get("exercise") for cell in request["cells"] if cell.get("kind", "exercise") == "exercise"}
    graded = request["exercises"][first:]
    return (
        [n for e in graded if e["id"] in held for n in _names(e)],
        [n for e in graded for n in _names(e)],
    )


def _names(exercise: Dict[str, Any]) -> List[str]:
    """An exercise's function name now, then the names it had before."""
    return [exercise["function"], *exercise.get("former_functions", ())]


def _alias_former_functions(request: Dict[str, Any], namespace: dict) -> None:
    """A saved notebook that defines a graded function under a former name only: bind the current
    name to it, so that the cases call it and the marking sees it defined."""
    for entry in request["exercises"]:
        if callable(namespace.get(entry["function"])):
            continue
        former = [namespace.get(n) for n in entry.get("former_functions", ())]
        found = next((f for f in former if callable(f)), None)
        if found is not None:
            namespace[entry["function"]] = found


def _run_cells(request: Dict[str, Any], namespace: dict, reply: Any) -> None:
    from ..exercises.engine.outputs import error_where, short_message
    from ..exercises.engine.registry import get

    limit = float(request["limits"]["cell_s"])
    prelude = request.get("prelude", "")
    if prelude:
        exec(compile(prelude, "<grading imports>", "exec"), namespace)
    rules = _Rules(prelude.splitlines())
    cells = [(cell, strip_magics(cell["source"])) for cell in request["cells"]]
    kinds = [cell.get("kind") or ("exercise" if cell.get("exercise") else "chapter") for cell, _ in cells]
    reached = plan(list(zip(kinds, (source for _, source in cells))), *_graded_functions(request))
    for (cell, source), kind, module in zip(cells, kinds, reached):
        index = cell["index"]
        if kind == "chapter" and module is None:
            continue  # nothing an answer uses: not run
        reply.progress(f"cell {index}")
        filename = f"<cell {index}>"
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
        try:
            code = compile(module if kind == "chapter" else source, filename, "exec")
        except (SyntaxError, ValueError, RecursionError, MemoryError) as e:
            if kind != "chapter":  # a chapter cell that does not parse is not this grader's business
                line = getattr(e, "lineno", None)
                text = getattr(e, "msg", None) or short_message(e)
                where = f" (line {line})" if line else ""
                reply.cell(index, "syntax", type(e).__name__, f"{type(e).__name__}: {text}{where}")
            continue
        guard = None
        if kind != "chapter":
            from ..exercises.engine.guard import Guard

            guard = Guard(get(cell["exercise"]) if kind == "exercise" else rules)
        seen: List[Optional[str]] = []  # what the guard had found when the cell's own code ended

        def body(code: Any = code, seen: list = seen, guard: Any = guard) -> None:
            try:
                exec(code, namespace)
            finally:
                seen.append(guard.found)

        timed_out = False
        try:
            if guard is None:
                _timed(limit, exec, code, namespace)
            else:
                _timed(limit, guard.run, body)
        except _Timeout:
            timed_out = True
            reply.cell(index, "timeout")
        except SystemExit as e:
            reply.cell(index, "exit", "SystemExit", short_message(e))
        except BaseException as e:
            reply.cell(
                index,
                "error",
                type(e).__name__,
                short_message(e),
                _where(e.__traceback__) or error_where(e.__traceback__),
            )
        if guard is not None and timed_out and seen and guard.found and not seen[0]:
            # the hook was found off only after the time limit's alarm, raised while the hook itself
            # ran (inside a C call such as os.stat): Python then drops the hook; no call was made
            guard.found = None
        if guard is not None and guard.found:
            reply.cell(index, "shortcut", message=guard.found, exercise=cell.get("exercise") or "")


def _where(tb: Any) -> str:
    """The innermost line of the notebook's own cells the exception passed through: ``cell 12, line 3:
    x = f(y)`` (a line of numpy's, deeper down, is no place a student can look at)."""
    import traceback

    frames = [f for f in traceback.extract_tb(tb) if f.filename.startswith("<cell ")]
    if not frames:
        return ""
    f = frames[-1]
    code = (f.line or linecache.getline(f.filename, f.lineno or 0)).strip()
    code = code[:79] + "…" if len(code) > 80 else code
    head = f"{f.filename.strip('<>')}, line {f.lineno}"
    return f"{head}: {code}" if code else head


def _load_args(specs: Sequence[dict]) -> List[Any]:
    args = []
    for spec in specs:
        if "array" in spec:
            args.append(np.load(spec["array"], allow_pickle=False))
        else:
            args.append(spec["value"])
    return args


def _wait_for_cases(deadline_s: float) -> bool:
    """Wait until the grader has delivered the cases (``cases/ready``); False if it never did."""
    from .protocol import CASES_READY

    end = time.monotonic() + deadline_s
    delay = 0.001
    while not os.path.exists(CASES_READY):
        if time.monotonic() > end:
            return False
        time.sleep(delay)
        delay = min(delay * 1.5, 0.02)
    return True


def _fits(outcome: Any, caps: Sequence[int]) -> Any:
    """``outcome``, or a ``bad_output`` one when an output is larger than the grader will read."""
    from ..exercises.engine.compare import Outcome

    if outcome.kind != "returned":
        return outcome
    for k, arr in enumerate(outcome.arrays):
        cap = caps[k] if k < len(caps) else 0
        if k >= len(caps):
            break
        if arr.nbytes > cap:
            what = f"output {k + 1}" if len(caps) > 1 else "the answer"
            return Outcome(
                "bad_output",
                message=f"{what} takes {arr.nbytes / 2**20:.1f} MB, more than the {cap / 2**20:.1f} MB "
                f"this case allows ({arr.shape} {arr.dtype}): check its shape",
                seconds=outcome.seconds,
                shortcut=outcome.shortcut,
            )
    return outcome


def _call_cases(request: Dict[str, Any], namespace: dict, reply: Any) -> None:
    from ..exercises.engine.check import call
    from ..exercises.engine.compare import Outcome
    from ..exercises.engine.registry import get

    limit = float(request["limits"]["case_s"])
    first = int(request.get("first_exercise", 0))
    caps = request.get("caps") or []
    for e, entry in enumerate(request["exercises"]):
        fn = namespace.get(entry["function"])
        if e < first or not callable(fn):
            continue
        exercise = get(entry["id"])
        timeouts = 0  # a call past its limit costs that case; the next cases still run, up to a point
        for c, specs in enumerate(entry["cases"]):
            reply.progress(f"case {e} {c}")
            try:
                outcome = _timed(limit, call, exercise, fn, _load_args(specs))
            except _Timeout:
                outcome = Outcome("timeout", seconds=limit)
            except BaseException as err:  # KeyboardInterrupt and the like, raised by the function
                outcome = Outcome("raised", error_type=type(err).__name__, message=str(err)[:300])
            case_caps = caps[e][c] if e < len(caps) and c < len(caps[e]) else []
            try:
                reply.result(e, c, _fits(outcome, case_caps))
            except Exception as err:  # an output that cannot be written back: this case alone fails
                reply.drop_outputs(e, c)
                reply.result(
                    e,
                    c,
                    Outcome(
                        "bad_output",
                        message=f"the answer could not be sent back to the grader ({type(err).__name__}: "
                        f"{str(err)[:200]})",
                    ),
                )
            if outcome.kind == "timeout":
                timeouts += 1
                if timeouts >= MAX_TIMEOUTS:
                    break  # the rest are not run: marked "not run" (marking.NotebookRun.outcomes)
        reply.save("cases")


def _quiet_checks() -> None:
    """``check`` and ``score`` do nothing while grading: the grader does the checking."""
    import attncourse
    import attncourse.exercises as exercises

    from ..exercises.engine import check as _check

    def skipped(*args: Any, **kwargs: Any) -> None:
        return None

    for module in (attncourse, exercises, _check):
        for name in ("check", "score"):
            if name in vars(module):
                setattr(module, name, skipped)


def main(argv: Optional[Sequence[str]] = None) -> int:
    from . import protocol
    from .sandbox import apply_resource_limits

    argv = list(sys.argv[1:] if argv is None else argv)
    job_dir = os.path.realpath(argv[0])
    os.chdir(job_dir)
    request = protocol.read_request(job_dir)
    try:  # the notebook's language: what the runner words (an answer's output problems) is in it
        set_language(request.get("language") or "en")
    except ValueError:
        pass
    apply_resource_limits(request["limits"]["rlimits"])
    reply = protocol.ReplyWriter(job_dir, len(request["exercises"]))
    reply.save("cells")
    import attncourse.exercises  # noqa: F401  (loaded before any notebook code can replace it)

    from ..exercises.engine import check as _check  # noqa: F401

    cap = int(request["limits"]["output_chars"])
    stdout, stderr = _CappedText(sys.stdout, cap), _CappedText(sys.stderr, cap)
    sys.stdout, sys.stderr = stdout, stderr
    signal.signal(signal.SIGALRM, _on_alarm)
    import builtins

    namespace: dict = {"__name__": "__main__", "__builtins__": builtins}
    namespace["display"] = lambda *objs, **kw: print(*objs)
    _quiet_checks()
    try:
        _run_cells(request, namespace, reply)
        _alias_former_functions(request, namespace)
        sys.stdout = stdout  # a notebook may have replaced them
        sys.stderr = stderr
        reply.data["defined"] = sorted(
            k
            for k, v in list(namespace.items())
            if isinstance(k, str) and callable(v) and not k.startswith("__")
        )
        reply.data["output_truncated"] = stdout.truncated or stderr.truncated
        reply.save("cases")
        reply.progress("cases")  # the grader delivers the cases' inputs now, not before
        if not _wait_for_cases(float(request["limits"].get("wait_s", 600))):
            reply.save("cases")
            os._exit(0)
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
