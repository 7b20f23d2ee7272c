"""The grader <-> runner protocol, version 2: plain files in the job folder, plain data only.

The grader writes, before the run::

    JOB/request.json     {"protocol": 2,
                          "cells": [{"index": 7, "source": "...", "exercise": "ch01.x" or null,
                                     "kind": "exercise" | "added" | "chapter"}, ...],
                          "prelude": "import numpy as np\\n...",     # the graded exercises' imports
                          "exercises": [{"id": "ch01.x", "function": "x",
                                         "former_functions": ["old_x"],  # names it had before
                                         "cases": [[{"array": "cases/0_0_0.npy"} or {"value": 2.0},
                                                    ...], ...]}, ...],
                          "caps": [[[bytes per output] per case] per exercise],
                          "first_exercise": 0,      # exercises before it are not called (a rerun)
                          "limits": {"cell_s": .., "case_s": .., "output_chars": .., "wait_s": ..,
                                     "rlimits": {"DATA": .., ...}}}

and, only once the runner reports ``cases`` in ``progress.txt`` (every cell has run), delivers
the inputs (``deliver_cases``)::

    JOB/cases/E_C_A.npy  argument A of case C of exercise E
    JOB/cases/ready      written last: the runner waits for it before the first call

The runner writes, while it runs (the grader reads them after it has ended, whatever happened)::

    JOB/progress.txt     "cell 7", "cases" or "case 2 5": what it is running now
    JOB/reply.json       {"protocol": 2, "stage": "cells" | "cases" | "done",
                          "cells": [{"index": 7, "status": "error" | "syntax" | "exit" | "timeout"
                                     | "shortcut", "type": "ValueError", "message": "...",
                                     "where": "line 3: ...", "exercise": "ch01.x" or ""}],
                          "defined": ["stable_softmax", ...], "output_truncated": false,
                          "cpu_seconds": 0.31,
                          "results": [[record or null per case] per exercise]}
    JOB/out/E_C_K.npy    output K of case C of exercise E, for a record {"kind": "returned", "n": K}

A record is the ``Outcome`` of ``attncourse.exercises.engine.check.call`` as data: ``kind``
(``returned``, ``raised``, ``bad_output``, ``timeout``), ``error_type``, ``message``, ``where``,
``seconds``, ``shortcut`` (the forbidden callable the function used, or null) and ``n``.

Everything the runner wrote was within reach of the notebook, so ``read_reply`` trusts none of
it: sizes are capped, files are opened without following links, arrays are loaded with
``allow_pickle=False`` and must hold numbers, strings are cut and made printable, and anything
else is a ``ProtocolError``.  The grader alone holds the expected outputs.
"""

from __future__ import annotations

import io
import json
import os
import re
import stat
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ..exercises.engine.compare import Outcome

__all__ = [
    "VERSION",
    "ProtocolError",
    "CellNote",
    "Reply",
    "case_file",
    "output_file",
    "write_request",
    "deliver_cases",
    "read_request",
    "ReplyWriter",
    "read_reply",
    "read_progress",
    "clean_text",
]

VERSION = 2
REQUEST, REPLY, PROGRESS = "request.json", "reply.json", "progress.txt"
CASES_DIR = "cases"
CASES_READY = "cases/ready"
MAX_REPLY_BYTES = 8 * 2**20
MAX_ARRAY_BYTES = 64 * 2**20
MAX_TEXT = 400
STAGES = ("cells", "cases", "done")
CELL_STATUSES = ("error", "syntax", "exit", "timeout", "shortcut")
KINDS = ("returned", "raised", "bad_output", "timeout")


class ProtocolError(ValueError):
    """The runner's reply does not follow the protocol (tampered with, or cut short)."""


def case_file(e: int, c: int, a: int) -> str:
    return f"cases/{e}_{c}_{a}.npy"


def output_file(e: int, c: int, k: int) -> str:
    return f"out/{e}_{c}_{k}.npy"


def clean_text(value: Any, limit: int = MAX_TEXT) -> str:
    """A string from the runner, cut to ``limit`` and safe to write as UTF-8 (non-strings: "").

    >>> clean_text("bad \\ud800 byte")
    'bad \\\\ud800 byte'
    """
    if not isinstance(value, str):
        return ""
    text = value[:limit]
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


# ----------------------------------------------------------------------------- the grader's side


def write_request(job_dir: str, request: Dict[str, Any]) -> None:
    with open(os.path.join(job_dir, REQUEST), "w", encoding="utf-8") as f:
        json.dump({"protocol": VERSION, **request}, f, ensure_ascii=True)


def deliver_cases(dir_fd: int, files: Dict[str, bytes]) -> str:
    """Write the cases' inputs (``cases/E_C_A.npy`` -> bytes) into the job folder ``dir_fd``.

    The job folder is the notebook's: nothing there is trusted.  ``cases/`` must not exist yet,
    is made here, and every file is created new in it (``O_EXCL``, no link followed) through
    the folder's own descriptor.  Returns "" or why the cases could not be delivered.
    """
    try:
        os.mkdir(CASES_DIR, 0o755, dir_fd=dir_fd)
    except FileExistsError:
        return "the notebook made a `cases` entry in its folder, where the grader puts the inputs"
    except OSError as e:
        return f"the inputs could not be delivered ({e.strerror})"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
    try:
        folder = os.open(CASES_DIR, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=dir_fd)
    except OSError as e:
        return f"the inputs could not be delivered ({e.strerror})"
    try:
        for name, data in [*files.items(), (CASES_READY, b"ready")]:
            fd = os.open(name.split("/", 1)[1], flags, 0o644, dir_fd=folder)
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
            finally:
                os.close(fd)
    except OSError as e:
        return f"the inputs could not be delivered ({e.strerror})"
    finally:
        os.close(folder)
    return ""


@dataclass
class CellNote:
    """A cell that did not run cleanly (or, ``shortcut``, used what its exercise forbids)."""

    index: int
    status: str  # one of CELL_STATUSES
    error_type: str = ""
    message: str = ""
    where: str = ""
    exercise: str = ""  # for a shortcut: the exercise whose cell it was ("" for an added cell)


@dataclass
class Reply:
    """What the runner reported, checked and reduced to plain values."""

    stage: str
    cells: List[CellNote] = field(default_factory=list)
    defined: List[str] = field(default_factory=list)
    output_truncated: bool = False
    cpu_seconds: float = 0.0  # the runner's own CPU time, as it reported it (a statistic, not a mark)
    results: Dict[Tuple[int, int], Outcome] = field(default_factory=dict)


def _open_in(dir_fd: int, name: str, limit: int) -> bytes:
    """Read ``name`` (``a/b``) under ``dir_fd``: no links followed, a regular file, at most ``limit``."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK
    parts = name.split("/")
    fds = []
    try:
        fd = dir_fd
        for part in parts[:-1]:
            fd = os.open(part, flags | os.O_DIRECTORY, dir_fd=fd)
            fds.append(fd)
        fd = os.open(parts[-1], flags, dir_fd=fd)
        fds.append(fd)
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ProtocolError(f"{name} is not a regular file")
        if st.st_size > limit:
            raise ProtocolError(f"{name} is larger than {limit} bytes")
        data = os.read(fd, limit + 1)
        if len(data) > limit:
            raise ProtocolError(f"{name} is larger than {limit} bytes")
        return data
    except OSError as e:
        raise ProtocolError(f"{name} cannot be read ({e.strerror})") from None
    finally:
        for fd in fds:
            os.close(fd)


def load_array(dir_fd: int, name: str, limit: int) -> np.ndarray:
    """An array of numbers from an ``.npy`` file the runner wrote (``allow_pickle=False``)."""
    data = _open_in(dir_fd, name, limit)
    try:
        arr = np.load(io.BytesIO(data), allow_pickle=False)
    except Exception as e:  # a truncated or forged file: numpy says why in many ways
        raise ProtocolError(f"{name} is not an .npy array ({type(e).__name__})") from None
    if not isinstance(arr, np.ndarray) or arr.dtype.kind not in "biuf" or arr.ndim > 32:
        raise ProtocolError(f"{name} is not an array of numbers")
    return arr


def read_progress(dir_fd: int) -> str:
    """``"cell 7"``, ``"case 2 5"`` or ``""``."""
    try:
        text = _open_in(dir_fd, PROGRESS, 64).decode("ascii")
    except (ProtocolError, UnicodeDecodeError):
        return ""
    return text if re.fullmatch(r"cell \d{1,7}|case \d{1,5} \d{1,5}|cases", text) else ""


def _outcome(record: Any, dir_fd: int, e: int, c: int, caps: Sequence[int]) -> Outcome:
    if not isinstance(record, dict) or record.get("kind") not in KINDS:
        raise ProtocolError(f"result {e}.{c} is not a record")
    kind = record["kind"]
    seconds = record.get("seconds", 0.0)
    seconds = float(seconds) if isinstance(seconds, (int, float)) and not isinstance(seconds, bool) else 0.0
    shortcut = record.get("shortcut")
    out = Outcome(
        kind,
        error_type=clean_text(record.get("error_type"), 80),
        message=clean_text(record.get("message")),
        where=clean_text(record.get("where"), 200),
        seconds=seconds,
        shortcut=clean_text(shortcut, 200) or "a forbidden function" if shortcut is not None else None,
    )
    if kind == "returned":
        n = record.get("n")
        if not isinstance(n, int) or isinstance(n, bool) or n != len(caps):
            raise ProtocolError(f"result {e}.{c} has {n!r} outputs, expected {len(caps)}")
        out.arrays = [load_array(dir_fd, output_file(e, c, k), caps[k]) for k in range(n)]
    return out


def read_reply(dir_fd: int, caps: Sequence[Sequence[Sequence[int]]]) -> Optional[Reply]:
    """The runner's reply in the job folder ``dir_fd`` (``None`` when it wrote none).

    ``caps[e][c][k]`` is the most bytes output ``k`` of case ``c`` of exercise ``e`` may take; a
    result that breaks the protocol becomes a ``bad_output`` outcome, a reply that does a
    ``ProtocolError``.
    """
    try:
        raw = _open_in(dir_fd, REPLY, MAX_REPLY_BYTES)
    except ProtocolError:
        try:
            os.stat(REPLY, dir_fd=dir_fd, follow_symlinks=False)
        except OSError:
            return None  # never written: the run ended before its first stage
        raise
    try:
        data = json.loads(raw.decode("utf-8"))
    except (ValueError, RecursionError):
        raise ProtocolError("reply.json is not JSON") from None
    if not isinstance(data, dict) or data.get("protocol") != VERSION:
        raise ProtocolError(f"reply.json is not a protocol {VERSION} reply")
    if data.get("stage") not in STAGES:
        raise ProtocolError("reply.json has no valid stage")
    reply = Reply(data["stage"], output_truncated=data.get("output_truncated") is True)
    cpu = data.get("cpu_seconds", 0.0)
    if isinstance(cpu, (int, float)) and not isinstance(cpu, bool) and 0 <= cpu < 1e6:
        reply.cpu_seconds = float(cpu)
    cells = data.get("cells", [])
    defined = data.get("defined", [])
    results = data.get("results", [])
    if not isinstance(cells, list) or not isinstance(defined, list) or not isinstance(results, list):
        raise ProtocolError("reply.json has the wrong layout")
    for note in cells[:10_000]:
        if (
            isinstance(note, dict)
            and isinstance(note.get("index"), int)
            and note.get("status") in CELL_STATUSES
        ):
            reply.cells.append(
                CellNote(
                    note["index"],
                    note["status"],
                    clean_text(note.get("type"), 80),
                    clean_text(note.get("message")),
                    clean_text(note.get("where"), 200),
                    clean_text(note.get("exercise"), 100),
                )
            )
    reply.defined = [clean_text(d, 200) for d in defined[:100_000] if isinstance(d, str)]
    for e, per_case in enumerate(results[: len(caps)]):
        if not isinstance(per_case, list):
            raise ProtocolError(f"results of exercise {e} are not a list")
        for c, record in enumerate(per_case[: len(caps[e])]):
            if record is None:
                continue
            try:
                reply.results[(e, c)] = _outcome(record, dir_fd, e, c, caps[e][c])
            except ProtocolError as err:
                reply.results[(e, c)] = Outcome(
                    "bad_output", message=f"its result could not be read back: {err}"
                )
    return reply


# ----------------------------------------------------------------------------- the runner's side


def read_request(job_dir: str) -> Dict[str, Any]:
    with open(os.path.join(job_dir, REQUEST), encoding="utf-8") as f:
        request = json.load(f)
    if request.get("protocol") != VERSION:
        raise SystemExit(f"protocol {request.get('protocol')!r} is not {VERSION}: grader and runner differ")
    return request


class ReplyWriter:
    """Writes ``reply.json`` (atomically, after each stage) and the output arrays."""

    def __init__(self, job_dir: str, n_exercises: int) -> None:
        self.job_dir = job_dir
        os.makedirs(os.path.join(job_dir, "out"), exist_ok=True)
        self.data: Dict[str, Any] = {
            "protocol": VERSION,
            "stage": "cells",
            "cells": [],
            "defined": [],
            "output_truncated": False,
            "results": [[] for _ in range(n_exercises)],
        }

    def progress(self, text: str) -> None:
        with open(os.path.join(self.job_dir, PROGRESS), "w", encoding="ascii") as f:
            f.write(text)

    def cell(
        self,
        index: int,
        status: str,
        error_type: str = "",
        message: str = "",
        where: str = "",
        exercise: str = "",
    ) -> None:
        self.data["cells"].append(
            {
                "index": index,
                "status": status,
                "type": error_type,
                "message": message,
                "where": where,
                "exercise": exercise,
            }
        )

    def drop_outputs(self, e: int, c: int) -> None:
        """Remove what was written of case ``c`` of exercise ``e``'s outputs (a failed write)."""
        for k in range(64):
            try:
                os.remove(os.path.join(self.job_dir, output_file(e, c, k)))
            except OSError:
                pass

    def result(self, e: int, c: int, outcome: Any) -> None:
        """Record ``outcome`` (an ``Outcome``) of case ``c`` of exercise ``e``."""
        record = {
            "kind": outcome.kind,
            "error_type": outcome.error_type,
            "message": outcome.message,
            "where": outcome.where,
            "seconds": round(float(outcome.seconds), 4),
            "shortcut": outcome.shortcut,
        }
        if outcome.kind == "returned":
            for k, arr in enumerate(outcome.arrays):
                np.save(os.path.join(self.job_dir, output_file(e, c, k)), arr, allow_pickle=False)
            record["n"] = len(outcome.arrays)
        row = self.data["results"][e]
        row.extend([None] * (c + 1 - len(row)))
        row[c] = record

    def save(self, stage: str) -> None:
        self.data["stage"] = stage
        path = os.path.join(self.job_dir, REPLY)
        with open(path + ".tmp", "w", encoding="utf-8") as f:
            json.dump(self.data, f, ensure_ascii=True)
        os.replace(path + ".tmp", path)
