"""Who handed in what: LMS download names and the class roster.

A submission's name (a file ``NAME.ipynb`` or a folder ``NAME/``) is read as

* Canvas's bulk download, ``lastfirst[_late]_USERID_SUBMISSIONID_original.ipynb``: the student
  is ``lastfirst_USERID``, the Canvas user id is kept, and ``late`` is recorded;
* Moodle's, ``Full Name_ID_assignsubmission_file_original.ipynb`` or a folder
  ``Full Name_ID_assignsubmission_file/`` (Moodle 4.1 and later) or
  ``Full Name_ID_assignsubmission_file_/`` (earlier): the student is ``Full Name_ID``, ``ID`` being
  the participant id of Moodle's grading worksheet (``Participant ID``);
* anything else: the name itself (``alice.ipynb`` is ``alice``).

A roster (``--roster FILE``: a CSV with columns ``id``, ``name``, ``email`` and optionally
``aliases``, separated by ``;``, ``canvas_id`` and ``moodle_id``, the LMS's own ids, and
``extension_days``, a per-student extension of the due date) maps submissions to students: by the LMS id, else by the name,
the e-mail (or the part before ``@``) or an alias, compared without case, spaces or punctuation
(``Smith, John``, ``john smith`` and ``smithjohn`` are one name).  A student with no
submission gets a ``missing`` row; a submission that matches no one is listed, not dropped.
"""

from __future__ import annotations

import csv
import re
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from .limits import GradingError

__all__ = ["LmsName", "parse_lms_name", "Student", "read_roster", "match_roster", "RosterMatch"]

_CANVAS = re.compile(
    r"^(?P<name>[^_/]+?)(?P<late>_late)?_(?P<uid>\d+)_(?P<sid>\d+)_(?P<file>.+)$", re.IGNORECASE
)
# Moodle 4.1+ writes a participant's folder as ``Full Name_ID_assignsubmission_file``, earlier versions
# with a trailing ``_``; a file of a download without folders is ``Full Name_ID_assignsubmission_file_NAME``
_MOODLE = re.compile(r"^(?P<name>.+?)_(?P<uid>\d+)_assignsubmission_(?:file|onlinetext)(?:_(?P<file>.*))?$")


@dataclass(frozen=True)
class LmsName:
    """What a submitted name says: the student's key, and what an LMS put in it."""

    key: str
    lms: str = ""  # "canvas", "moodle" or ""
    lms_id: str = ""
    name: str = ""
    late: bool = False
    original: str = ""  # the file name the student uploaded
    submission: str = ""  # Canvas's submission id: a later submission has a larger one


def parse_lms_name(name: str, *, folder: bool = False) -> LmsName:
    """Read a file or folder name as Canvas or Moodle wrote it.

    >>> parse_lms_name("smithjohn_late_1234_99812_06_masked_attention.ipynb")
    LmsName(key='smithjohn_1234', lms='canvas', lms_id='1234', name='smithjohn', late=True, original='06_masked_attention.ipynb', submission='99812')
    >>> parse_lms_name("John Smith_56_assignsubmission_file_", folder=True).key
    'John Smith_56'
    >>> parse_lms_name("John Smith_56_assignsubmission_file", folder=True).lms_id
    '56'
    >>> parse_lms_name("alice.ipynb").key
    'alice'
    """
    stem = name[: -len(".ipynb")] if name.endswith(".ipynb") else name
    m = _MOODLE.match(name)
    if m and (folder or m.group("file")):  # a file needs its own name after the prefix
        return LmsName(
            f"{m.group('name')}_{m.group('uid')}",
            "moodle",
            m.group("uid"),
            m.group("name"),
            False,
            m.group("file") or "",
        )
    if not folder:
        m = _CANVAS.match(name)
        if m:
            return LmsName(
                f"{m.group('name')}_{m.group('uid')}",
                "canvas",
                m.group("uid"),
                m.group("name"),
                bool(m.group("late")),
                m.group("file"),
                m.group("sid"),
            )
    return LmsName(stem or name, original=name)


def _norm(text: str) -> str:
    """Letters and digits only, lower case, accents dropped: how names are compared."""
    text = unicodedata.normalize("NFKD", text)
    return "".join(ch for ch in text.lower() if ch.isalnum() and not unicodedata.combining(ch))


@dataclass
class Student:
    """One row of the roster."""

    id: str
    name: str
    email: str = ""
    aliases: List[str] = field(default_factory=list)
    lms_ids: Dict[str, str] = field(default_factory=dict)  # "canvas" / "moodle" -> that LMS's id
    extension_days: float = 0.0
    # when the LMS recorded the submission (seconds since the epoch; Moodle's grading worksheet)
    submitted: Optional[float] = None
    submitted_source: str = ""  # where ``submitted`` comes from, said in the feedback

    def as_dict(self) -> dict:
        return {
            "id": self.id,
            "name": self.name,
            "email": self.email,
            "aliases": self.aliases,
            "lms_ids": self.lms_ids,
            "extension_days": self.extension_days,
            "submitted": self.submitted,
            "submitted_source": self.submitted_source,
        }

    @classmethod
    def from_dict(cls, d: dict) -> "Student":
        return cls(
            str(d["id"]),
            str(d.get("name", "")),
            str(d.get("email", "")),
            [str(a) for a in d.get("aliases", [])],
            {str(k): str(v) for k, v in d.get("lms_ids", {}).items()},
            float(d.get("extension_days", 0.0)),
            float(d["submitted"]) if d.get("submitted") is not None else None,
            str(d.get("submitted_source", "")),
        )

    def keys(self) -> List[str]:
        """Every normalised form a submission name may take for this student."""
        forms = [self.id, self.email, self.email.split("@")[0], *self.aliases]
        words = re.split(r"[\s,]+", self.name.strip())
        forms += [self.name, "".join(reversed(words))]  # "John Smith" and Canvas's "smithjohn"
        if "," in self.name:  # "Smith, John"
            last, first = self.name.split(",", 1)
            forms += [first + last, last + first]
        return [k for k in (_norm(f) for f in forms if f) if k]


def read_roster(path: Path) -> List[Student]:
    """The roster CSV: ``id``, ``name``, ``email`` and optional ``aliases`` (``;``-separated).
    (``worksheet.read_class`` reads Moodle's grading worksheet as a roster as well.)"""
    try:
        with open(path, newline="", encoding="utf-8-sig") as f:
            rows = list(csv.DictReader(f))
    except (OSError, UnicodeDecodeError, csv.Error) as e:
        raise GradingError(f"--roster {path}: cannot be read ({e})") from None
    if not rows:
        raise GradingError(f"--roster {path}: no students (expected a header id,name,email[,aliases])")
    header = {k.strip().lower(): k for k in rows[0] if k}
    missing = [c for c in ("id", "name") if c not in header]
    if missing:
        raise GradingError(
            f"--roster {path}: no column {' or '.join(missing)} (the header must name id, name, email)"
        )
    students, seen = [], set()
    for n, row in enumerate(rows, 2):
        get = lambda c: (row.get(header[c]) or "").strip() if c in header else ""  # noqa: E731
        sid = get("id")
        if not sid:
            raise GradingError(f"--roster {path}, line {n}: no id")
        if sid in seen:
            raise GradingError(f"--roster {path}, line {n}: id {sid} is there twice")
        seen.add(sid)
        aliases = [a.strip() for a in re.split(r"[;|]", get("aliases")) if a.strip()]
        lms_ids = {lms: get(f"{lms}_id") for lms in ("canvas", "moodle") if get(f"{lms}_id")}
        try:
            extension = float(get("extension_days") or 0)
        except ValueError:
            extension = -1.0
        if not extension >= 0 or extension == float("inf"):
            raise GradingError(
                f"--roster {path}, line {n}: extension_days {get('extension_days')!r} is not a number of days >= 0"
            )
        students.append(Student(sid, get("name"), get("email"), aliases, lms_ids, extension))
    return students


@dataclass
class RosterMatch:
    """Submission key -> roster student, and what matched no one."""

    by_key: Dict[str, Student]
    missing: List[Student]  # students with no submission
    unmatched: List[str]  # submission keys that match no student
    ambiguous: Dict[str, List[str]]  # submission key -> the ids it could be


def match_roster(submissions: Sequence[Tuple[str, LmsName]], roster: List[Student]) -> RosterMatch:
    """Match each (key, name read from the LMS) to a roster student (see the module's docstring)."""
    by_id = {s.id: s for s in roster}
    index: Dict[str, List[Student]] = {}
    for s in roster:
        for k in set(s.keys()):
            index.setdefault(k, []).append(s)
    by_key: Dict[str, Student] = {}
    unmatched: List[str] = []
    ambiguous: Dict[str, List[str]] = {}
    for key, lms in submissions:
        found: Optional[Student] = None
        if lms.lms_id:  # the LMS's own id, given in the roster; else a roster whose ids are the LMS's
            found = next((s for s in roster if s.lms_ids.get(lms.lms) == lms.lms_id), None)
            found = found or by_id.get(lms.lms_id)
        if found is None:
            candidates: List[Student] = []
            for form in (lms.name, key, lms.lms_id):
                hits = index.get(_norm(form), []) if form else []
                candidates += [h for h in hits if h not in candidates]
                if candidates:
                    break
            if len(candidates) > 1:
                ambiguous[key] = [c.id for c in candidates]
                unmatched.append(key)
                continue
            found = candidates[0] if candidates else None
        if found is None:
            unmatched.append(key)
        else:
            by_key[key] = found
    taken = {s.id for s in by_key.values()}
    missing = [s for s in roster if s.id not in taken]
    return RosterMatch(by_key, missing, unmatched, ambiguous)
