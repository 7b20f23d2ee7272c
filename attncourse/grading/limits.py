"""The limits one notebook runs under, and the error the instructor must act on."""

from __future__ import annotations

from dataclasses import asdict, dataclass

__all__ = ["GradingError", "Limits"]


class GradingError(Exception):
    """A problem the instructor must fix (a missing folder, no sandbox, a bundle from another version...)."""


# calls of one exercise past the case limit after which its remaining cases are not run
MAX_TIMEOUTS = 3


@dataclass(frozen=True)
class Limits:
    """Per-notebook limits.

    ``time_s`` is the wall time of the whole run, ``cell_s`` of one cell, ``case_s`` of one call of an
    exercise function; ``memory_mb`` caps the data segment of the process (``RLIMIT_DATA``: the heap
    and anonymous memory, not the address space, so a CUDA build of torch still loads); ``file_mb``
    caps each file it writes; ``output_chars`` what it may print.

    >>> Limits(time_s=30).cell_s
    60.0
    """

    time_s: float = 300.0
    cell_s: float = 60.0
    case_s: float = 10.0
    memory_mb: int = 2048
    file_mb: int = 64
    output_chars: int = 1_000_000

    def as_dict(self) -> dict:
        return asdict(self)
