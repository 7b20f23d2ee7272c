"""Late work: the penalty policy (``--late-penalty``), the due date (``--due``) and extensions.

A policy is written as

* ``10%/day`` (or ``10% per day``): 10 % of the points earned per started day late;
* ``2%/hour``: per started hour late;
* ``25%``: a flat 25 % once the work is late;
* any of them followed by ``max 50%`` (or ``cap 50%``): never more than 50 %.

A penalty is a share of the points the student earned, so 0 stays 0 and the total never goes below
0.  How late a submission is comes from ``--due``: the time the LMS recorded (Moodle's grading
worksheet given as ``--roster``), else the graded notebook's file time, against the due date moved by
the student's ``extension_days`` from the roster; else from Canvas's ``LATE`` flag
in the file name, which says *that* it is late but not by how much: it counts as one unit of the
policy (one day, one hour, or the flat penalty), and an extension in the roster waives it.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Dict, Optional

__all__ = ["LatePolicy", "parse_penalty", "parse_due"]

_SPEC = re.compile(
    r"^\s*(?P<rate>\d+(?:\.\d+)?)\s*%\s*(?:(?:/|per\s+)(?P<unit>day|hour))?"
    r"(?:\s*,?\s*(?:max|cap)\s+(?P<cap>\d+(?:\.\d+)?)\s*%)?\s*$",
    re.IGNORECASE,
)
_UNIT_SECONDS = {"day": 86400.0, "hour": 3600.0}


@dataclass(frozen=True)
class LatePolicy:
    """``percent`` per ``unit`` late (``unit`` empty: once), at most ``cap`` percent; ``due`` if given."""

    percent: float = 0.0
    unit: str = ""  # "day", "hour" or "" (flat)
    cap: float = 100.0
    due: Optional[datetime] = None
    spec: str = ""  # as written, kept in results.json so that ``--update`` applies the same policy

    def as_dict(self) -> dict:
        return {
            "spec": self.spec,
            "penalty": self.describe() if self.percent else "",
            "due": self.due.isoformat() if self.due is not None else None,
        }

    def describe(self) -> str:
        if not self.percent:
            return "no late penalty"
        per = f"/{self.unit}" if self.unit else " once late"
        cap = f", at most {self.cap:g}%" if self.cap < 100 else ""
        return f"{self.percent:g}%{per}{cap}"

    def assess(
        self,
        submitted: Optional[float],
        lms_late: bool,
        extension_days: float = 0.0,
        source: str = "",
    ) -> Dict[str, object]:
        """The penalty of one submission: ``{}`` when on time, else ``percent``, ``days_late`` (or
        ``None`` when only the LMS's flag is known) and ``why`` (a sentence for the feedback).

        ``submitted`` is when the work was handed in (seconds since the epoch), ``source`` where that
        time comes from (said in the feedback), ``lms_late`` Canvas's flag, ``extension_days`` the
        student's extension.

        >>> p = parse_penalty("10%/day max 25%", due="2026-11-20T23:59+00:00")
        >>> p.assess(p.due.timestamp() + 2.5 * 86400, False)["percent"]
        25.0
        >>> p.assess(p.due.timestamp() + 2.5 * 86400, False, extension_days=2)["percent"]
        10.0
        >>> p.assess(p.due.timestamp() - 60, True)
        {}
        """
        extension = f" (with an extension of {extension_days:g} days)" if extension_days else ""
        if self.due is not None:
            if submitted is None:
                return {}
            due = self.due + timedelta(days=extension_days)
            late_s = submitted - due.timestamp()
            if late_s <= 0:
                return {}
            units = math.ceil(late_s / _UNIT_SECONDS[self.unit]) if self.unit else 1
            when = datetime.fromtimestamp(submitted, tz=due.tzinfo).strftime("%Y-%m-%d %H:%M")
            said = f" ({source})" if source else ""
            why = (
                f"handed in {when}{said}, {_span(late_s)} after the due date {due:%Y-%m-%d %H:%M}{extension}"
            )
            days: Optional[float] = round(late_s / 86400, 2)
        elif lms_late:
            if extension_days > 0:
                return {}  # the flag cannot say whether the extension was kept: the extension wins
            units, days, why = (
                1,
                None,
                "marked late by the LMS (counted as one " + (self.unit or "penalty") + ")",
            )
        else:
            return {}
        percent = min(self.cap, self.percent * units)
        out: Dict[str, object] = {
            "percent": round(percent, 2),
            "days_late": days,
            "why": f"{why}: {self.describe()}",
        }
        if self.due is not None:
            out["late_by"] = _span(late_s)
        return out


def _span(seconds: float) -> str:
    """How late, never rounded up: whole days, hours and minutes that have passed.

    >>> _span(8 * 3600 + 60), _span(59), _span(2 * 86400 + 3 * 3600 + 1800)
    ('8 h 01 min', '0 h 00 min', '2 days 3 h 30 min')
    """
    minutes = int(seconds // 60)
    days, rest = divmod(minutes, 1440)
    hours, mins = divmod(rest, 60)
    head = f"{days} day{'s' if days != 1 else ''} " if days else ""
    return f"{head}{hours} h {mins:02d} min"


def parse_due(text: str) -> datetime:
    """``--due``: an ISO date and time, in this machine's time zone unless it names one.

    >>> parse_due("2026-11-20T23:59+01:00").isoformat()
    '2026-11-20T23:59:00+01:00'
    """
    try:
        due = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(
            f"--due {text!r}: not a date and time (write it as 2026-11-20T23:59, optionally with +01:00)"
        ) from None
    return due if due.tzinfo is not None else due.astimezone()


def parse_penalty(spec: Optional[str], due: Optional[str] = None) -> LatePolicy:
    """The policy of ``--late-penalty SPEC`` (``None``: no penalty) with ``--due`` (optional).

    >>> parse_penalty("10%/day max 50%").describe()
    '10%/day, at most 50%'
    >>> parse_penalty("25%").describe()
    '25% once late'
    >>> parse_penalty("ten percent")
    Traceback (most recent call last):
    ...
    ValueError: --late-penalty 'ten percent': write it as 10%/day, 2%/hour or 25% (flat), optionally followed by 'max 50%'
    """
    when = parse_due(due) if due else None
    if spec is None:
        return LatePolicy(due=when)
    m = _SPEC.match(spec)
    if not m:
        raise ValueError(
            f"--late-penalty {spec!r}: write it as 10%/day, 2%/hour or 25% (flat), optionally followed by 'max 50%'"
        )
    rate, cap = float(m.group("rate")), float(m.group("cap") or 100)
    if not 0 < rate <= 100:
        raise ValueError(f"--late-penalty {spec!r}: the rate must be more than 0% and at most 100%")
    if not 0 < cap <= 100:
        raise ValueError(f"--late-penalty {spec!r}: the cap must be more than 0% and at most 100%")
    return LatePolicy(rate, (m.group("unit") or "").lower(), cap, when, spec)
