"""Moodle's grading worksheet read as the class list: ids, names, e-mails and submission times.

Moodle offers it under the assignment's *Submissions > Download grading worksheet*
(``mod/assign/feedback/offline``).  Its header, as an English-language Moodle writes it, is
``Identifier``, ``Full name``, the identity fields the site shows (``Email address`` by default),
``Status``, ``Grade``, ``Maximum Grade``, ``Grade can be changed``, ``Last modified (submission)``,
``Last modified (grade)``, ``Feedback comments``.  ``Identifier`` is ``Participant N``, ``N`` being the
participant id of Moodle's download names; ``Last modified (submission)`` is written by Moodle's
``userdate()`` in its default form, ``Friday, 20 November 2026, 11:59 PM`` (``-`` when nothing was
submitted), in the time zone of the user who downloaded it, and names no zone.  So the dates are
read in this machine's time zone unless ``zone`` (``--lms-timezone Europe/Berlin``) names another,
and every run says which.

``read_class(path, zone)`` reads either this worksheet or a plain roster (``roster.read_roster``).
"""

from __future__ import annotations

import csv
import re
from datetime import datetime, tzinfo
from pathlib import Path
from typing import List, Optional, Tuple

from .limits import GradingError
from .roster import Student, read_roster

__all__ = [
    "WORKSHEET_COLUMNS",
    "is_worksheet",
    "read_worksheet",
    "read_class",
    "parse_moodle_date",
    "zone_of",
]

WORKSHEET_COLUMNS = ("Identifier", "Full name", "Last modified (submission)")
SOURCE = "Moodle's grading worksheet"

# userdate()'s default, strftimedaydatetime: "%A, %d %B %Y, %I:%M %p", days and hours without a 0
_DATE = re.compile(
    r"^\s*(?:[A-Za-z]+,\s*)?(?P<day>\d{1,2})\s+(?P<month>[A-Za-z]+)\s+(?P<year>\d{4}),?\s+"
    r"(?P<hour>\d{1,2}):(?P<minute>\d{2})(?::(?P<second>\d{2}))?\s*(?P<ampm>[AaPp][Mm])?\s*$"
)
_MONTHS = {
    m.lower(): n
    for n, m in enumerate(
        "January February March April May June July August September October November December".split(), 1
    )
}


def zone_of(name: Optional[str]) -> Tuple[tzinfo, str]:
    """The zone the worksheet's dates are read in, and its name for the log and the feedback."""
    if name:
        try:
            from zoneinfo import ZoneInfo

            return ZoneInfo(name), name
        except Exception:
            raise GradingError(
                f"--lms-timezone {name!r}: not a time zone name (write it as Europe/Berlin, America/New_York, UTC)"
            ) from None
    local = datetime.now().astimezone().tzinfo
    assert local is not None
    return local, f"this machine's time zone ({datetime.now().astimezone():%Z, UTC%z})"


def parse_moodle_date(text: str, zone: tzinfo) -> Optional[float]:
    """A worksheet date as seconds since the epoch (``None`` for ``-`` or an empty cell).

    >>> from datetime import timezone
    >>> utc = lambda *a: datetime(*a, tzinfo=timezone.utc).timestamp()
    >>> parse_moodle_date("Friday, 20 November 2026, 11:59 PM", timezone.utc) == utc(2026, 11, 20, 23, 59)
    True
    >>> parse_moodle_date("Thursday, 5 November 2026, 12:05 AM", timezone.utc) == utc(2026, 11, 5, 0, 5)
    True
    >>> parse_moodle_date("-", timezone.utc) is None
    True
    """
    text = (text or "").strip()
    if text in ("", "-"):
        return None
    try:  # an ISO date, as a worksheet re-saved by a spreadsheet may hold
        when = datetime.fromisoformat(text)
        return (when if when.tzinfo else when.replace(tzinfo=zone)).timestamp()
    except ValueError:
        pass
    m = _DATE.match(text)
    month = _MONTHS.get(m.group("month").lower()) if m else None
    if m is None or month is None:
        raise ValueError(text)
    hour = int(m.group("hour"))
    if m.group("ampm"):
        if not 1 <= hour <= 12:
            raise ValueError(text)
        hour = hour % 12 + (12 if m.group("ampm").lower() == "pm" else 0)
    when = datetime(
        int(m.group("year")),
        month,
        int(m.group("day")),
        hour,
        int(m.group("minute")),
        int(m.group("second") or 0),
    )
    return when.replace(tzinfo=zone).timestamp()


def _rows(path: Path) -> List[dict]:
    try:
        with open(path, newline="", encoding="utf-8-sig") as f:
            return list(csv.DictReader(f))
    except (OSError, UnicodeDecodeError, csv.Error) as e:
        raise GradingError(f"--roster {path}: cannot be read ({e})") from None


def is_worksheet(path: Path) -> bool:
    """True when ``path`` has the header of Moodle's grading worksheet."""
    try:
        with open(path, newline="", encoding="utf-8-sig") as f:
            header = next(csv.reader(f), [])
    except (OSError, UnicodeDecodeError, csv.Error):
        return False
    return all(c in [h.strip() for h in header] for c in WORKSHEET_COLUMNS)


def read_worksheet(path: Path, zone: Optional[str] = None) -> List[Student]:
    """The students of a Moodle grading worksheet, with their submission times (module docstring)."""
    tz, _ = zone_of(zone)
    rows = _rows(path)
    if not rows:
        raise GradingError(f"--roster {path}: the worksheet lists no participant")
    header = {k.strip(): k for k in rows[0] if k}
    students, seen = [], set()
    for n, row in enumerate(rows, 2):
        get = lambda c: (row.get(header[c]) or "").strip() if c in header else ""  # noqa: E731
        ident = get("Identifier")
        m = re.fullmatch(r"\D*?(\d+)", ident)
        if not m:
            raise GradingError(
                f"--roster {path}, line {n}: Identifier {ident!r} is not Moodle's 'Participant N'"
            )
        pid = m.group(1)
        if pid in seen:
            raise GradingError(f"--roster {path}, line {n}: participant {pid} is there twice")
        seen.add(pid)
        text = get("Last modified (submission)")
        try:
            submitted = parse_moodle_date(text, tz)
        except ValueError:
            raise GradingError(
                f"--roster {path}, line {n}: 'Last modified (submission)' {text!r} is not a date as Moodle "
                "writes it (e.g. 'Friday, 20 November 2026, 11:59 PM'); an English-language worksheet is needed"
            ) from None
        students.append(
            Student(
                pid,
                get("Full name"),
                get("Email address"),
                lms_ids={"moodle": pid},
                submitted=submitted,
                submitted_source=SOURCE if submitted is not None else "",
            )
        )
    return students


def read_class(path: Path, zone: Optional[str] = None) -> List[Student]:
    """``--roster FILE``: Moodle's grading worksheet, else a roster CSV (``roster.read_roster``)."""
    return read_worksheet(path, zone) if is_worksheet(path) else read_roster(path)
