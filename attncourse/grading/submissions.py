"""The submissions: finding them in a folder, one per student, and reading their notebooks once.

A submission folder holds one entry per student: ``STUDENT.ipynb``, or a folder ``STUDENT/`` with
one or more ``*.ipynb`` directly inside it; Canvas's and Moodle's download names are read
(``roster.parse_lms_name``), so the files of one student are one submission.  Whatever an entry
holds, its student gets exactly one row.
"""

from __future__ import annotations

import os
import shutil
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from ..exercises.engine.notebook import NotebookProblem
from ..exercises.engine.registry import Exercise
from .assignment import Scan, scan_notebook
from .gradebook import display_name
from .roster import LmsName, parse_lms_name

__all__ = [
    "MAX_NOTEBOOK_BYTES",
    "Submission",
    "discover",
    "submission_of_file",
    "submission_of_folder",
    "read_submitted",
    "Scanned",
    "scan_all",
    "choose_notebooks",
]

MAX_NOTEBOOK_BYTES = 256 * 2**20
IGNORED_FOLDERS = (".ipynb_checkpoints", "__MACOSX")


@dataclass
class Submission:
    """One student: their notebooks, or why they cannot be graded (``problem``)."""

    student: str
    paths: List[str] = field(default_factory=list)
    problem: str = ""
    status: str = ""
    lms: Optional[LmsName] = None  # what the LMS's download name said (Canvas, Moodle), if anything
    # what each notebook's name said (Canvas's submission id and late flag, per file)
    names: Dict[str, LmsName] = field(default_factory=dict)
    earlier: List[str] = field(default_factory=list)  # notebooks of earlier submissions, not graded
    not_notebooks: List[str] = field(default_factory=list)  # other files under the student's name
    choice_notes: List[str] = field(default_factory=list)  # which notebook was graded, and why
    flags: List[str] = field(default_factory=list)  # for the instructor's "needs a look" list

    def order(self, path: str) -> Tuple[int, float, str]:
        """When ``path`` was handed in, as the LMS says: Canvas's submission id, else the file's time."""
        ident = self.names.get(path)
        sid = int(ident.submission) if ident is not None and ident.submission.isdigit() else -1
        try:
            mtime = os.lstat(path).st_mtime
        except OSError:
            mtime = 0.0
        return sid, mtime, path

    def keep_latest(self) -> None:
        """Grade the latest submission alone: of Canvas's files, those of the largest submission id
        (the others go to ``earlier``).  The notebooks are put in hand-in order, latest last."""
        self.paths.sort(key=self.order)
        sids = {self.order(p)[0] for p in self.paths}
        if len(sids) > 1:
            latest = max(sids)
            self.earlier = [p for p in self.paths if self.order(p)[0] != latest]
            self.paths = [p for p in self.paths if self.order(p)[0] == latest]

    @property
    def late(self) -> bool:
        """Canvas marked a graded file late."""
        return any(self.names[p].late for p in self.paths if p in self.names)


def _is_notebook_name(name: str) -> bool:
    return name.endswith(".ipynb")


def discover(submissions_dir: str) -> Tuple[List[Submission], List[str]]:
    """The students in ``submissions_dir`` (sorted) and the entries that are not submissions.

    Canvas's and Moodle's download names are read (``roster.parse_lms_name``): the files of one
    student become one submission, whatever they are called.
    """
    files: Dict[str, List[str]] = {}
    folders: Dict[str, List[str]] = {}
    links: Dict[str, str] = {}
    names: Dict[str, LmsName] = {}
    ignored: List[str] = []
    unreadable: Dict[str, str] = {}
    per_file: Dict[str, LmsName] = {}
    others: Dict[str, List[str]] = {}
    with os.scandir(submissions_dir) as it:
        entries = sorted(it, key=lambda e: e.name)
    for entry in entries:
        name = entry.name
        if entry.is_symlink():
            if _is_notebook_name(name):
                ident = parse_lms_name(name)
                links[ident.key] = name
                names.setdefault(ident.key, ident)
            else:
                ignored.append(name)
        elif entry.is_dir(follow_symlinks=False):
            if name in IGNORED_FOLDERS:
                ignored.append(name)
                continue
            ident = parse_lms_name(name, folder=True)
            names.setdefault(ident.key, ident)
            try:
                with os.scandir(entry.path) as inner:
                    folders.setdefault(ident.key, []).extend(
                        sorted(
                            e.path
                            for e in inner
                            if _is_notebook_name(e.name) and not e.is_dir(follow_symlinks=False)
                        )
                    )
            except OSError as e:
                folders.setdefault(ident.key, [])
                unreadable[ident.key] = e.strerror or "cannot be read"
        elif entry.is_file(follow_symlinks=False) and _is_notebook_name(name):
            ident = parse_lms_name(name)
            names.setdefault(ident.key, ident)
            per_file[entry.path] = ident
            files.setdefault(ident.key, []).append(entry.path)
        else:
            ident = parse_lms_name(name)
            if ident.lms and entry.is_file(follow_symlinks=False):  # a student's file, not a notebook
                names.setdefault(ident.key, ident)
                others.setdefault(ident.key, []).append(name)
            else:
                ignored.append(name)
    out = []
    for student in sorted(set(others) - set(files) - set(folders) - set(links)):
        listed = ", ".join(display_name(n) for n in others[student])
        out.append(
            Submission(
                student,
                problem=f"handed in {listed}, which is not a notebook (.ipynb): nothing to grade",
                status="not_a_notebook",
                lms=names.get(student),
                not_notebooks=others[student],
            )
        )
    for student in sorted(set(files) | set(folders) | set(links)):
        lms = names.get(student)
        lms = lms if lms is not None and lms.lms else None
        sources = [s for s in (student in files, student in folders, student in links) if s]
        if len(sources) > 1 and lms is None:
            out.append(
                Submission(
                    student,
                    problem=f"both {display_name(student)}.ipynb and a folder {display_name(student)}/ "
                    "(or a link): keep one and grade again",
                    status="ambiguous",
                )
            )
            continue
        paths = files.get(student, []) + folders.get(student, [])
        if student in links:
            paths.append(os.path.join(submissions_dir, links[student]))
        if student in unreadable:
            out.append(
                Submission(
                    student,
                    problem=f"the folder cannot be read ({unreadable[student]})",
                    status="malformed",
                    lms=lms,
                )
            )
        elif paths:
            out.append(
                Submission(
                    student,
                    sorted(paths),
                    lms=lms,
                    names={p: per_file[p] for p in paths if p in per_file},
                    not_notebooks=others.get(student, []),
                )
            )
        else:
            out.append(
                Submission(
                    student, problem="the folder holds no .ipynb notebook", status="malformed", lms=lms
                )
            )
    return sorted(out, key=lambda sub: sub.student), ignored


def submission_of_file(path: Path, folder: Path) -> Submission:
    """A single notebook given on the command line: one student, its notebook copied into
    ``folder`` (a scratch folder the sandbox hides, so that the folder it came from, which may
    hold the Python the runner needs, stays visible)."""
    path = Path(path)
    ident = parse_lms_name(path.name)
    folder.mkdir(parents=True, exist_ok=True)
    copy = folder / path.name
    n = 2
    while copy.exists():
        copy, n = folder / f"{n}" / path.name, n + 1
        copy.parent.mkdir(exist_ok=True)
    shutil.copyfile(path, copy)  # the instructor's own argument: a link is followed here
    shutil.copystat(path, copy)  # its time: the order of hand-in when nothing else says it
    return Submission(ident.key, [str(copy)], lms=ident if ident.lms else None, names={str(copy): ident})


def submission_of_folder(path: Path, key: Optional[str] = None) -> Submission:
    """One student's folder (``Full Name_ID_assignsubmission_file/`` or a folder named as the
    student): the notebooks directly inside it are that student's submission."""
    path = Path(path)
    ident = parse_lms_name(path.name, folder=True)
    notebooks = sorted(
        str(p) for p in path.iterdir() if _is_notebook_name(p.name) and p.is_file() and not p.is_symlink()
    )
    lms = ident if ident.lms else None
    if not notebooks:
        return Submission(
            key or ident.key, problem="the folder holds no .ipynb notebook", status="malformed", lms=lms
        )
    return Submission(key or ident.key, notebooks, lms=lms)


def read_submitted(path: str) -> bytes:
    """The bytes of a submitted notebook, or ``NotebookProblem`` saying why not."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as e:
        if os.path.islink(path):
            raise NotebookProblem("a symbolic link, not a file: submit the notebook itself") from None
        raise NotebookProblem(f"cannot be read ({e.strerror})") from None
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise NotebookProblem("not a regular file")
        if st.st_size == 0:
            raise NotebookProblem("an empty file (0 bytes)")
        if st.st_size > MAX_NOTEBOOK_BYTES:
            raise NotebookProblem(f"larger than {MAX_NOTEBOOK_BYTES // 2**20} MiB")
        return f.read(MAX_NOTEBOOK_BYTES + 1)


@dataclass
class Scanned:
    """The submitted notebooks, read once: a ``Scan`` or why the notebook cannot be read."""

    scans: Dict[str, Scan] = field(default_factory=dict)
    problems: Dict[str, str] = field(default_factory=dict)


def scan_all(
    submissions: List[Submission], known: Dict[str, Exercise], cells: Optional[Tuple[set, set]]
) -> Scanned:
    out = Scanned()
    for sub in submissions:
        for path in sub.paths:
            try:
                out.scans[path] = scan_notebook(read_submitted(path), known, cells)
            except NotebookProblem as e:
                out.problems[path] = f"not a readable notebook: {e}"
    return out


def choose_notebooks(sub: Submission, scanned: Scanned, chapters: List[str], handout: Dict[str, str]) -> None:
    """Put a Moodle student's notebooks in the order that decides which counts.

    Each exercise counts from the latest notebook that holds its cell with an answer
    (``marking.student_grade``): the latest by Canvas's submission id, else by file time.  Moodle's
    zip stamps every file of a submission with one time, so for a Moodle student whose notebooks
    hold one chapter's exercises nothing tells them apart: the one named as the handed-out notebook
    (``handout``: chapter -> its file name) is taken as the latest, the others by name before it;
    a note names the notebook that counts and the others, and the student is flagged for a look.
    """
    if sub.lms is None or sub.lms.lms != "moodle":
        return
    for chapter in chapters:
        holding = [p for p in sub.paths if p in scanned.scans and chapter in scanned.scans[p].chapters()]
        if len(holding) < 2:
            continue
        names = {
            p: (sub.names[p].original if p in sub.names and sub.names[p].original else os.path.basename(p))
            for p in holding
        }
        same = [p for p in holding if names[p] == handout.get(chapter)]
        first = same[0] if same else sorted(holding, key=lambda p: names[p])[-1]
        why = "named as the handed-out notebook" if same else "the last by name"
        others = [p for p in holding if p != first]
        sub.paths = [p for p in sub.paths if p != first] + [first]
        sub.choice_notes.append(
            f"{len(holding)} notebooks hold the exercises of {chapter} and Moodle gives them one time: where "
            f"several answer an exercise, {display_name(names[first])} counts ({why}), not "
            f"{', '.join(display_name(names[p]) for p in others)}; the feedback names the notebook of each "
            "exercise. To grade another, leave it alone in the student's folder and regrade the folder "
            "with --update"
        )
        sub.flags.append(
            f"several notebooks hold {chapter}'s exercises, with one time; {display_name(names[first])} counts first"
        )
