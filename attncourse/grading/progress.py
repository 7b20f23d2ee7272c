"""A progress line while grading: notebooks done / total, the time elapsed, the slowest so far.

``ProgressLine`` is the callback ``grade_submissions(progress=...)`` calls once per student graded,
from the grading threads.  On a terminal it rewrites one line in place; otherwise (a log file, CI)
it prints a plain line every tenth of the notebooks or every 10 s, and at the end.
"""

from __future__ import annotations

import re
import sys
import threading
import time
from typing import Callable, Optional, TextIO

from .gradebook import display_name

__all__ = ["ProgressLine"]


def _clean(name: str, n: int = 40) -> str:
    """A name safe to print on a terminal: no control characters (no escape sequences), short."""
    text = re.sub(r"[\x00-\x1f\x7f-\x9f]", "?", display_name(name))
    return text if len(text) <= n else text[: n - 1] + "…"


class ProgressLine:
    """Writes ``graded 7/20 notebooks · 0:42 elapsed · slowest so far: bob.ipynb 8.1 s`` to ``stream``."""

    def __init__(
        self,
        stream: TextIO = sys.stderr,
        *,
        tty: Optional[bool] = None,
        every_s: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.stream, self.every_s, self.clock = stream, every_s, clock
        self.tty = stream.isatty() if tty is None else tty
        self.start = clock()
        self.done = 0
        self.slowest = ("", 0.0)
        self._last_time, self._last_step, self._width = self.start, 0, 0
        self._lock = threading.Lock()

    def line(self, total: int) -> str:
        seconds = int(self.clock() - self.start)
        text = f"graded {self.done}/{total} notebooks · {seconds // 60}:{seconds % 60:02d} elapsed"
        if self.slowest[0]:
            text += f" · slowest so far: {_clean(self.slowest[0])} {self.slowest[1]:.1f} s"
        return text

    def __call__(self, row: object, notebooks: int, total: int) -> None:
        """One student's row is graded: ``notebooks`` of the run's ``total`` notebooks were its own."""
        with self._lock:
            self.done += notebooks
            for name, sec in (getattr(row, "seconds", None) or {}).items():
                if sec > self.slowest[1]:
                    who = str(getattr(row, "student", "") or "")
                    label = name if not who or name in (who, f"{who}.ipynb") else f"{who}/{name}"
                    self.slowest = (label, float(sec))
            end = self.done >= total
            if self.tty:
                text = self.line(total)
                pad = " " * max(0, self._width - len(text))
                self._width = len(text)
                self.stream.write("\r" + text + pad + ("\n" if end else ""))
                self.stream.flush()
                return
            step = (10 * self.done) // max(total, 1)
            now = self.clock()
            if end or step > self._last_step or now - self._last_time >= self.every_s:
                self._last_step, self._last_time = step, now
                self.stream.write(self.line(total) + "\n")
                self.stream.flush()
