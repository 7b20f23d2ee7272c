"""The ``attncourse`` command: hand out exercises and grade submissions.

attncourse assign SOURCE_DIR OUT_DIR      student notebooks + private grading bundle
attncourse grade BUNDLE_DIR SUBMISSIONS_DIR OUT_DIR
                                          gradebook.csv + feedback/<student>.txt + lms/*.csv
attncourse grade BUNDLE_DIR NOTEBOOK_OR_FOLDER... --update RESULTS_DIR
                                          regrade some submissions into RESULTS_DIR
attncourse gradescope BUNDLE_DIR OUT_DIR  a Gradescope autograder (setup.sh, run_autograder)
attncourse validate SOURCE_DIR            check the exercise cells of the book's notebooks
attncourse list [CHAPTER]                 the exercises, their ids and points
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import List, Optional

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="attncourse",
        description="Hand out the course's exercises and grade submitted notebooks.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    p = sub.add_parser("assign", help="write student notebooks and a private grading bundle")
    p.add_argument("source_dir", type=Path, help="folder of solution notebooks (the book's book/)")
    p.add_argument(
        "out_dir", type=Path, help="writes OUT_DIR/student/ (hand out) and OUT_DIR/grading/ (keep private)"
    )
    p.add_argument(
        "--tests",
        type=Path,
        default=None,
        help="folder of hidden_*.py (default: hidden_cases/ next to SOURCE_DIR)",
    )
    p.add_argument(
        "--force", action="store_true", help="replace OUT_DIR/student and OUT_DIR/grading if they exist"
    )
    p.add_argument(
        "--host",
        default=None,
        help="the folder where the student notebooks will be put, github:OWNER/REPO[/FOLDER][@BRANCH] "
        "or https://github.com/OWNER/REPO/tree/BRANCH/FOLDER (not a notebook's address): Colab badges "
        "open them there (without it, the badges are removed)",
    )
    p.add_argument(
        "--chapter",
        action="append",
        default=None,
        help="hand out this chapter alone (repeatable: ch06, 6, bugs); the bundle records the "
        "chapters as the assignment's (default: every notebook of SOURCE_DIR)",
    )
    p.add_argument(
        "--language",
        default="en",
        help="hand out the student editions in this language: en (default), zh_CN or zh_TW (from "
        "student/<language>/ beside SOURCE_DIR; the bundle grades every language, and each student's "
        "feedback is in their notebook's language)",
    )

    p = sub.add_parser("grade", help="grade a folder of submitted notebooks")
    p.add_argument(
        "bundle_dir", type=Path, help="the grading bundle made by `attncourse assign` (OUT_DIR/grading)"
    )
    p.add_argument(
        "paths",
        type=Path,
        nargs="+",
        metavar="PATH",
        help="SUBMISSIONS_DIR (STUDENT.ipynb files, one folder of notebooks per student, or Canvas's or "
        "Moodle's bulk download) and OUT_DIR (writes gradebook.csv, feedback/STUDENT.txt, results.json, "
        "lms/canvas.csv, lms/moodle.csv); with --update, the notebooks or folders to regrade",
    )
    p.add_argument(
        "--update",
        type=Path,
        default=None,
        metavar="RESULTS_DIR",
        help="regrade the given notebooks (or folders) into RESULTS_DIR, made by an earlier grade",
    )
    p.add_argument(
        "--roster",
        type=Path,
        default=None,
        help="CSV with columns id, name, email (optional: aliases, ;-separated; canvas_id and moodle_id, "
        "the LMS's own ids; extension_days): rows for every student, missing ones included; or Moodle's "
        "grading worksheet as Moodle writes it (ids, names, e-mails and submission times)",
    )
    p.add_argument(
        "--lms-timezone",
        default=None,
        metavar="ZONE",
        help="the time zone of the worksheet's dates, e.g. Europe/Berlin (default: this machine's); "
        "Moodle writes them in the zone of the user who downloaded it, without naming it",
    )
    p.add_argument(
        "--allow-unmatched",
        action="store_true",
        help="write the LMS imports and exit 0 even when some submissions match no student of the roster",
    )
    p.add_argument(
        "--assignment-name",
        default="",
        help="the assignment's column in lms/canvas.csv (Canvas: 'Name (ID)' updates an existing one)",
    )
    p.add_argument("--timeout", type=float, default=300.0, help="seconds for a whole notebook (default 300)")
    p.add_argument("--cell-timeout", type=float, default=60.0, help="seconds for one cell (default 60)")
    p.add_argument(
        "--case-timeout",
        type=float,
        default=10.0,
        help="seconds for one call of an exercise function (default 10)",
    )
    p.add_argument(
        "--memory",
        type=int,
        default=2048,
        help="memory (data segment) limit per notebook in MiB (default 2048)",
    )
    p.add_argument(
        "--jobs",
        type=int,
        default=None,
        help="notebooks graded at the same time (default: the number of cores)",
    )
    p.add_argument(
        "--chapter",
        action="append",
        default=None,
        help="grade these chapters (repeatable); default: the chapters the submitted notebooks hold",
    )
    p.add_argument(
        "--sandbox",
        choices=["auto", "bwrap", "none"],
        default="auto",
        help="auto (default) or bwrap: bubblewrap, or refuse to grade; none: no sandbox (trusted notebooks)",
    )
    p.add_argument(
        "--resubmissions",
        choices=["latest", "best"],
        default=None,
        help="latest (default): a student's latest submission counts; best: each exercise from the "
        "notebook where it scores best",
    )
    p.add_argument(
        "--late-penalty",
        default=None,
        metavar="POLICY",
        help="e.g. '10%%/day', '2%%/hour', '25%%' (flat), optionally followed by 'max 50%%': a share of "
        "the points earned; lateness from --due, else from Canvas's LATE flag",
    )
    p.add_argument(
        "--due",
        default=None,
        metavar="DATETIME",
        help="the due date, e.g. 2026-11-20T23:59 (this machine's time zone unless given); a roster "
        "column extension_days moves it per student",
    )
    p.add_argument("--force", action="store_true", help="replace an existing gradebook in OUT_DIR")

    p = sub.add_parser("gradescope", help="package a grading bundle as a Gradescope autograder")
    p.add_argument("bundle_dir", type=Path, help="the grading bundle made by `attncourse assign`")
    p.add_argument("out_dir", type=Path, help="writes OUT_DIR/autograder.zip and its files")
    p.add_argument(
        "--chapter", action="append", default=None, help="the chapters graded (default: the notebook's)"
    )
    p.add_argument("--force", action="store_true", help="replace OUT_DIR if it exists")

    p = sub.add_parser("validate", help="check the exercise cells of a folder of notebooks")
    p.add_argument("source_dir", type=Path)

    p = sub.add_parser("list", help="list the exercises (of one chapter)")
    p.add_argument("chapter", nargs="?", default=None, help="ch00 ... ch09, or bugs")
    return parser


def main(argv: Optional[List[str]] = None) -> int:
    args = _parser().parse_args(argv)
    from .exercises import all_exercises
    from .grading import GradingError, Limits, assign, grade, validate

    try:
        if args.command == "assign":
            assign(
                args.source_dir,
                args.out_dir,
                tests_dir=args.tests,
                force=args.force,
                host=args.host,
                chapters=args.chapter,
                language=args.language,
            )
        elif args.command == "grade":
            limits = Limits(
                time_s=args.timeout, cell_s=args.cell_timeout, case_s=args.case_timeout, memory_mb=args.memory
            )
            from .grading.late import parse_penalty
            from .grading.worksheet import read_class, zone_of

            roster = read_class(args.roster, args.lms_timezone) if args.roster else None
            if roster is not None and any(s.submitted_source for s in roster):
                print(
                    f"submission times: {args.roster}'s 'Last modified (submission)', read in "
                    f"{zone_of(args.lms_timezone)[1]} (--lms-timezone names another)"
                )
            try:
                late = parse_penalty(args.late_penalty, args.due) if args.late_penalty or args.due else None
            except ValueError as e:
                raise GradingError(str(e)) from None
            common = dict(
                limits=limits,
                jobs=args.jobs,
                chapters=args.chapter,
                sandbox=args.sandbox,
                roster=roster,
                resubmissions=args.resubmissions,
                late=late,
            )
            if args.update is not None:
                from .grading.update import update

                update(args.bundle_dir, args.paths, args.update, **common)
            else:
                if len(args.paths) != 2:
                    raise GradingError(
                        "give SUBMISSIONS_DIR and OUT_DIR (or notebooks to regrade with --update RESULTS_DIR)"
                    )
                submissions_dir, out_dir = args.paths
                common["resubmissions"] = args.resubmissions or "latest"
                from .grading.progress import ProgressLine

                grade(
                    args.bundle_dir,
                    submissions_dir,
                    out_dir,
                    force=args.force,
                    assignment=args.assignment_name,
                    allow_unmatched=args.allow_unmatched,
                    progress=ProgressLine(sys.stderr),
                    **common,
                )
        elif args.command == "gradescope":
            from .grading.gradescope import package

            package(args.bundle_dir, args.out_dir, chapters=args.chapter, force=args.force)
        elif args.command == "validate":
            problems = validate(args.source_dir)
            for problem in problems:
                print(problem)
            if problems:
                return 1
            print(f"the exercise cells in {args.source_dir} are in order")
        elif args.command == "list":
            listed = all_exercises(args.chapter)
            if not listed:
                print(f"no exercises in {args.chapter} yet")
            for ex in listed:
                print(
                    f"{ex.number:5} {ex.id:36} {ex.kind:9} {ex.points} pt  "
                    f"{ex.function}({', '.join(ex.params)})"
                )
    except (GradingError, KeyError) as e:
        message = e.args[0] if isinstance(e, KeyError) and e.args else str(e)
        print(f"attncourse {args.command}: {message}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
