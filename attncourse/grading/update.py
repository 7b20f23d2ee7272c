"""``grade --update RESULTS``: regrade some submissions into an existing results folder.

The given submissions (single notebooks, or folders laid out as for ``grade``) are graded on the
chapters the results folder was graded on, written to a scratch folder, then merged: their rows
of ``gradebook.csv`` (matched by student, or by roster id) and their entries in ``results.json``
are replaced or added, their feedback files are written; every other row stays as it was.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Callable, List, Optional, Sequence

from .batch import grade_submissions, write_outputs
from .limits import GradingError, Limits
from .marking import StudentGrade
from .roster import Student
from .submissions import Submission, discover, submission_of_file

__all__ = ["update"]


def _read_csv(path: Path) -> List[List[str]]:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.reader(f))


def update(
    bundle_dir: Path,
    paths: Sequence[Path],
    results_dir: Path,
    *,
    limits: Optional[Limits] = None,
    jobs: Optional[int] = None,
    chapters: Optional[Sequence[str]] = None,
    sandbox: str = "auto",
    python: Optional[str] = None,
    roster: Optional[List[Student]] = None,
    log: Callable[[str], None] = print,
) -> List[StudentGrade]:
    """Regrade the submissions at ``paths`` into ``results_dir`` (made by ``grade``)."""
    results_dir = Path(results_dir)
    book, summary_path = results_dir / "gradebook.csv", results_dir / "results.json"
    if not book.is_file() or not summary_path.is_file():
        raise GradingError(f"{results_dir} holds no gradebook.csv and results.json: grade into it first")
    summary = json.loads(summary_path.read_text(encoding="ascii"))
    submissions: List[Submission] = []
    singles = Path(tempfile.mkdtemp(prefix="attncourse-single-"))
    try:
        for path in map(Path, paths):
            if path.is_dir():
                submissions += discover(str(path))[0]
            elif path.is_file() and path.name.endswith(".ipynb"):
                submissions.append(submission_of_file(path, singles))
            else:
                raise GradingError(f"{path} is neither a notebook (.ipynb) nor a folder of submissions")
        if not submissions:
            raise GradingError("no submission to regrade in " + ", ".join(map(str, paths)))
        return _regrade(
            bundle_dir,
            submissions,
            [singles, *(p for p in map(Path, paths) if p.is_dir())],
            results_dir,
            summary,
            limits=limits,
            jobs=jobs,
            chapters=chapters,
            sandbox=sandbox,
            python=python,
            roster=roster,
            log=log,
        )
    finally:
        shutil.rmtree(singles, ignore_errors=True)


def _regrade(
    bundle_dir: Path,
    submissions: List[Submission],
    sources: List[Path],
    results_dir: Path,
    summary: dict,
    *,
    limits: Optional[Limits],
    jobs: Optional[int],
    chapters: Optional[Sequence[str]],
    sandbox: str,
    python: Optional[str],
    roster: Optional[List[Student]],
    log: Callable[[str], None],
) -> List[StudentGrade]:
    book, summary_path = results_dir / "gradebook.csv", results_dir / "results.json"
    chapters = chapters or summary.get("chapters")
    run = grade_submissions(
        bundle_dir,
        submissions,
        sources,
        results_dir,
        limits=limits,
        jobs=jobs,
        chapters=chapters,
        sandbox=sandbox,
        python=python,
        roster=None,
        log=log,
    )
    if roster is not None:  # only the given submissions: nobody else is "missing" here
        from .batch import _identify

        _identify(run.results, run.submissions, roster, [], lambda s: None)
        run.results[:] = [r for r in run.results if r.status != "missing"]
    scratch = Path(tempfile.mkdtemp(prefix="attncourse-update-"))
    try:
        write_outputs(scratch, run, lambda s: None)
        old, new = _read_csv(book), _read_csv(scratch / "gradebook.csv")
        if old[0] != new[0]:
            raise GradingError(
                f"{results_dir} was graded on other exercises ({len(old[0])} columns, now {len(new[0])}): "
                "regrade everyone instead"
            )
        head, student, ident = old[0], old[0].index("student"), old[0].index("id")
        fresh = {row[student] for row in new[2:]}
        fresh_ids = {row[ident] for row in new[2:] if row[ident]}
        kept = [
            row
            for row in old[2:]
            if row[student] not in fresh and not (row[ident] and row[ident] in fresh_ids)
        ]
        rows = sorted(kept + new[2:], key=lambda row: row[student])
        with open(book, "w", newline="", encoding="utf-8") as f:
            csv.writer(f).writerows([head, new[1], *rows])
        (results_dir / "feedback").mkdir(exist_ok=True)
        for name in os.listdir(scratch / "feedback"):
            shutil.copyfile(scratch / "feedback" / name, results_dir / "feedback" / name)
        added = json.loads((scratch / "results.json").read_text(encoding="ascii"))
        names = {s["student"] for s in added["students"]}
        ids = {s["id"] for s in added["students"] if s.get("id")}
        students = [s for s in summary["students"] if s["student"] not in names and s.get("id") not in ids]
        summary["students"] = sorted(students + added["students"], key=lambda s: s["student"])
        summary.setdefault("updates", []).append(
            {
                "at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                "students": sorted(names),
                "seconds": added["seconds"],
            }
        )
        summary_path.write_text(json.dumps(summary, indent=1, ensure_ascii=True) + "\n", encoding="ascii")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    log(f"regraded {len(run.results)} student(s) into {book}")
    return run.results
