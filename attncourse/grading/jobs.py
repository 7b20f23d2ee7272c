"""Running one notebook in the sandbox: its job folder, the request, the cases delivered after its
cells, the wait, the reply read back, and a fresh run when a call ended the process.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Callable, Dict, List, Optional, Tuple

from . import protocol
from .assignment import Scan
from .limits import Limits
from .marking import NotebookRun, Prepared
from .runner import MEMORY_EXIT
from .sandbox import Sandbox, resource_limits, runner_env

__all__ = ["Grader", "remove_tree"]

STUCK = "a call ran past its limit"


def _tail(path: str, n: int = 2000) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - n))
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""


def remove_tree(path: str) -> None:
    def retry(func: Callable, target: str, _exc: object) -> None:
        try:
            os.chmod(os.path.dirname(target), 0o700)
            os.chmod(target, 0o700)
            func(target)
        except OSError:
            pass

    shutil.rmtree(path, onerror=retry)


class Grader:
    """Runs notebooks in the sandbox, one job folder each, and reads back their replies."""

    def __init__(self, prepared: List[Prepared], work: str, box: Sandbox, limits: Limits) -> None:
        self.prepared, self.work, self.box, self.limits = prepared, work, box, limits
        self.caps = [p.caps() for p in prepared]
        self.request = {
            "exercises": [
                {
                    "id": p.exercise.id,
                    "function": p.exercise.function,
                    "former_functions": list(p.exercise.former_functions),
                    "cases": p.args,
                }
                for p in prepared
            ],
            "caps": self.caps,
            "limits": {
                "cell_s": limits.cell_s,
                "case_s": limits.case_s,
                "output_chars": limits.output_chars,
                "wait_s": limits.time_s,
                "rlimits": resource_limits(limits),
            },
        }
        # the cases' inputs, held here and written into a job folder only after its cells have run;
        # by function name: a notebook gets the inputs of the functions it defined, which alone the
        # runner calls (a course that hands out every chapter at once would otherwise write every
        # chapter's inputs into every job folder)
        self.case_files: Dict[str, Dict[str, bytes]] = {}
        for p in prepared:
            files = self.case_files.setdefault(p.exercise.function, {})
            for specs in p.args:
                for spec in specs:
                    if "array" in spec:
                        files[spec["array"]] = Path(work, spec["array"]).read_bytes()
        self._counter = 0
        self._lock = threading.Lock()

    def _prelude(self, run: NotebookRun) -> str:
        """The imports of the exercises whose cells the notebook holds (of all of them if none)."""
        held = [p for p in self.prepared if p.exercise.id in run.exercise_cells] or self.prepared
        needs: List[str] = []
        for p in held:
            needs += [n for n in p.exercise.needs if n not in needs]
        return "\n".join(needs) + "\n"

    def run(self, name: str, scan: Scan) -> NotebookRun:
        """Run one notebook; a call that ends the process costs its exercise alone (a fresh run goes on)."""
        run = NotebookRun(name, language=scan.language)
        graded = {p.exercise.id for p in self.prepared}
        run.exercise_cells = [ex_id for ex_id in scan.exercise_ids if ex_id in graded]
        run.unknown_ids = [(i, protocol.clean_text(x, 100)) for i, x in scan.unknown_ids]
        run.cell_names = scan.cell_names()
        cells = [
            c if c["exercise"] in graded or c["kind"] != "exercise" else {**c, "kind": "chapter"}
            for c in scan.cells
        ]  # an exercise of a chapter not graded: only what the graded answers reach of it runs
        first, kept = 0, {}
        deadline = time.perf_counter() + self.limits.time_s
        while True:
            job = self._job_folder()
            try:
                self._execute(run, cells, job, first, deadline)
            finally:
                remove_tree(job)
                try:
                    os.remove(job + ".log")
                except OSError:
                    pass
                if self.box.user is not None:
                    remove_tree(os.path.dirname(job))
            killer = self._killer(run, first)
            if run.reply is not None:
                run.reply.results.update(kept)
            if killer is None:
                if run.status == "stuck":
                    run.status = "timeout"
                return run
            e, c = killer
            reason = self._kill_reason(run)
            run.killed[e] = (c, reason)
            kept = {k: v for k, v in run.reply.results.items() if k[0] <= e} if run.reply else dict(kept)
            run.notes_extra.append(
                f"case {c + 1} of {self.prepared[e].exercise.id} {reason}: that exercise lost the "
                "cases from there on; the notebook was run again for the exercises after it"
            )
            first = e + 1
            if first >= len(self.prepared) or time.perf_counter() > deadline:
                run.status = "ok" if first >= len(self.prepared) else "timeout"
                return run

    def _job_folder(self) -> str:
        """A new, empty job folder (with ``tmp/`` inside).

        It sits in the work folder, which holds the cases' inputs and is the grader's alone: a
        sandboxed run sees only its job folder.  A run as another user (``box.user``, a root grader
        without bubblewrap) must reach its folder, so that folder sits in a parent of its own that
        others may pass through but not list, away from the cases.
        """
        with self._lock:
            self._counter += 1
            n = self._counter
        if self.box.user is None:
            job = os.path.join(self.work, f"job{n}")
        else:
            parent = tempfile.mkdtemp(prefix="attncourse-job-")
            os.chmod(parent, 0o711)
            job = os.path.join(parent, f"job{n}")
        os.makedirs(os.path.join(job, "tmp"))
        return job

    def _killer(self, run: NotebookRun, first: int) -> Optional[Tuple[int, int]]:
        """The (exercise, case) whose call ended the run, when a call did."""
        if run.status not in ("crashed", "memory", "stuck") or not run.stopped_at.startswith("case "):
            return None
        e, c = (int(x) for x in run.stopped_at.split()[1:])
        return (e, c) if first <= e < len(self.prepared) else None

    def _kill_reason(self, run: NotebookRun) -> str:
        if run.status == "memory":
            return f"ran out of memory (limit {self.limits.memory_mb} MiB)"
        if run.status == "stuck":
            return (
                f"ran far past the {self.limits.case_s:g} s limit of one call, ignoring it, and was stopped"
            )
        code = run.exit_code
        how = f"killed by signal {-code}" if code is not None and code < 0 else f"exit code {code}"
        return f"ended the grading process ({how})"

    def _execute(self, run: NotebookRun, cells: List[dict], job: str, first: int, deadline: float) -> None:
        run.status, run.problem, run.reply, run.stderr_tail = "ok", "", None, ""
        request = {
            **self.request,
            "cells": cells,
            "prelude": self._prelude(run),
            "first_exercise": first,
            "language": run.language,
        }
        protocol.write_request(job, request)
        pass_fds: Tuple[int, ...] = ()
        seccomp_fd = None
        if self.box.mode == "bwrap" and self.box.seccomp:
            seccomp_fd, w = os.pipe()
            os.write(w, self.box.seccomp)
            os.close(w)
            pass_fds = (seccomp_fd,)
        argv = self.box.argv(job, seccomp_fd)
        env = (
            runner_env(job) if self.box.mode == "none" else {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
        )
        as_user = {}
        if self.box.user is not None:  # a root grader without bubblewrap: the notebook runs as nobody
            for path in (job, os.path.join(job, "tmp")):
                os.chown(path, self.box.user, self.box.user)
            as_user = {"user": self.box.user, "group": self.box.user, "extra_groups": []}
        job_fd = os.open(job, os.O_RDONLY | os.O_DIRECTORY)
        timed_out = False
        start = time.perf_counter()
        try:
            try:
                with open(job + ".log", "wb") as log:
                    proc = subprocess.Popen(
                        argv,
                        cwd=job,
                        env=env,
                        stdin=subprocess.DEVNULL,
                        stdout=log,
                        stderr=subprocess.STDOUT,
                        pass_fds=pass_fds,
                        start_new_session=True,
                        **as_user,
                    )
            finally:
                if seccomp_fd is not None:
                    os.close(seccomp_fd)
            status, usage, timed_out, problem = self._wait(proc, deadline, job_fd)
            run.seconds += time.perf_counter() - start
            own = usage.ru_utime + usage.ru_stime if usage is not None else 0.0  # bwrap's, or the runner's
            run.exit_code = os.waitstatus_to_exitcode(status) if status is not None else None
            try:
                run.reply = protocol.read_reply(job_fd, self.caps)
            except protocol.ProtocolError as e:
                run.problem = f"its reply could not be read ({e})"
            if problem and not run.problem:
                run.problem = problem
            progress = protocol.read_progress(job_fd)
            # inside bwrap the runner is not bwrap's waited-for child: it reports its own CPU time
            run.cpu_seconds += own + (
                run.reply.cpu_seconds if run.reply and self.box.mode == "bwrap" else 0.0
            )
        finally:
            os.close(job_fd)
        run.stopped_at = progress
        run.stopped_in = self._describe(progress, run.cell_names)
        if timed_out:
            run.status = "timeout"
        elif run.problem == STUCK:
            run.status, run.problem = "stuck", ""
        elif run.exit_code == MEMORY_EXIT:
            run.status = "memory"
        elif run.reply is None or run.reply.stage != "done" or run.problem:
            run.status = "crashed"
            run.stderr_tail = _tail(job + ".log")

    def _inputs_for(self, job_fd: int) -> Dict[str, bytes]:
        """The case files of the functions the runner says it defined (every one when its reply
        cannot be read; a reply is the notebook's word, and every one is what it had before)."""
        try:
            reply = protocol.read_reply(job_fd, self.caps)
        except protocol.ProtocolError:
            reply = None
        wanted = self.case_files.keys() if reply is None else set(reply.defined) & self.case_files.keys()
        return {name: data for function in wanted for name, data in self.case_files[function].items()}

    def _describe(self, progress: str, names: Optional[Dict[int, str]] = None) -> str:
        if progress.startswith("cell "):
            index = progress.split()[1]
            return (names or {}).get(int(index), progress) if index.isdigit() else progress
        if progress.startswith("case "):
            e, c = (int(x) for x in progress.split()[1:])
            if e < len(self.prepared):
                return f"case {c + 1} of {self.prepared[e].exercise.id}"
        if progress == "cases":
            return "the exercise functions"
        return "start-up"

    def _wait(self, proc: subprocess.Popen, deadline: float, job_fd: int):
        """Wait for ``proc`` until ``deadline``, delivering the cases once its cells have run, then kill
        its process group; (status, rusage, timed out, why the cases could not be delivered)."""
        delay, timed_out, delivered, problem = 0.002, False, False, ""
        # a call still running well past its own limit ignored the runner's alarm: stop it here
        stuck_after = self.limits.case_s + max(5.0, self.limits.case_s)
        last, since, checked = "", time.perf_counter(), 0.0
        while os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None:
            now = time.perf_counter()
            if now > deadline:
                timed_out = True
                break
            if delivered and now - checked > 0.25:
                checked, progress = now, protocol.read_progress(job_fd)
                if progress != last:
                    last, since = progress, now
                elif progress.startswith("case ") and now - since > stuck_after:
                    problem = STUCK
                    break
            if not delivered and protocol.read_progress(job_fd) == "cases":
                delivered = True
                problem = protocol.deliver_cases(job_fd, self._inputs_for(job_fd))
                if problem:
                    break
                delay = 0.002
                continue
            time.sleep(delay)
            delay = min(delay * 1.5, 0.02)
        try:  # still unreaped, so the group is ours: bwrap (and with it the sandbox's PID namespace),
            os.killpg(proc.pid, signal.SIGKILL)  # or whatever a --sandbox none run left behind
        except (ProcessLookupError, PermissionError):
            pass
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        return status, usage, timed_out, problem
