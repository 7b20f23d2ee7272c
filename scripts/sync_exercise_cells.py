"""Write every registered exercise's cells into its chapter notebook, from the registry.

Each exercise's solution lives in one place, ``attncourse/exercises/chapters/chNN.py`` (its ``solution``);
the chapter's prompt, exercise, check and worked-solution cells, the chapter's setup and score
cells and the exercise table of ``book/instructors.md`` are produced from it.

    python scripts/sync_exercise_cells.py          # rewrite drifted cells, insert missing ones
    python scripts/sync_exercise_cells.py --check  # exit 1 and list what is out of step

Cells that differ from the registry are rewritten (same id, outputs cleared); the cells of a newly
registered exercise go at the end of its chapter's Exercises section; every other cell, and the
outputs of unchanged cells, are left alone.  Running it twice changes nothing the second time.
Notebooks are written as json.dump(nb, indent=1, ensure_ascii=False) plus a newline.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import List

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from attncourse.exercises import CHAPTERS, all_exercises  # noqa: E402
from attncourse.exercises.engine.notebook import NotebookProblem  # noqa: E402
from attncourse.exercises.engine.registry import KINDS  # noqa: E402
from attncourse.exercises.engine.sync import sync_notebook  # noqa: E402

TABLE_START = "<!-- exercise-table: made by scripts/sync_exercise_cells.py -->"
TABLE_END = "<!-- end of exercise-table -->"
INSTRUCTORS = ROOT / "book" / "instructors.md"


def write_notebook(nb: dict, path: Path) -> None:
    path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def exercise_table() -> str:
    """The instructors' table: every chapter's exercises with kind and points, then the totals."""
    lines = [
        "| chapter | exercises (kind, points) | total |",
        "|---|---|---|",
    ]
    by_kind = {kind: [0, 0] for kind in KINDS}
    for key, (title, _) in CHAPTERS.items():
        exercises = all_exercises(key)
        cells = ", ".join(f"`{ex.id}` ({ex.kind}, {ex.points})" for ex in exercises)
        lines.append(f"| {title} | {cells or '(none yet)'} | {sum(ex.points for ex in exercises)} |")
        for ex in exercises:
            by_kind[ex.kind][0] += 1
            by_kind[ex.kind][1] += ex.points
    total = sum(points for _, points in by_kind.values())
    other = total - by_kind["implement"][1]
    share = f"{other / total:.0%}" if total else "0%"
    lines += [
        "",
        "| kind | exercises | points |",
        "|---|---|---|",
        *(f"| {kind} | {n} | {points} |" for kind, (n, points) in by_kind.items()),
        f"| all | {sum(n for n, _ in by_kind.values())} | {total} |",
        "",
        f"{other} of the {total} points ({share}) come from kinds other than `implement`.",
    ]
    return "\n".join(lines)


def sync_table(text: str) -> str:
    block = f"{TABLE_START}\n{exercise_table()}\n{TABLE_END}"
    pattern = re.compile(re.escape(TABLE_START) + r".*?" + re.escape(TABLE_END), re.DOTALL)
    if not pattern.search(text):
        raise SystemExit(f"{INSTRUCTORS.name}: no {TABLE_START!r} ... {TABLE_END!r} block to fill")
    return pattern.sub(lambda _: block, text, count=1)


def main(argv: List[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--check", action="store_true", help="change nothing; exit 1 if anything is out of step"
    )
    args = parser.parse_args(argv)
    stale: List[str] = []
    missing: List[str] = []
    for key, (_, stem) in CHAPTERS.items():
        if not all_exercises(key):
            continue
        path = ROOT / "book" / f"{stem}.ipynb"
        if not path.exists():
            print(
                f"{key}: {path.relative_to(ROOT)} does not exist yet; its exercises are not written anywhere"
            )
            missing.append(str(path.relative_to(ROOT)))
            continue
        nb = json.loads(path.read_text(encoding="utf-8"))
        try:
            changes = sync_notebook(nb, key)
        except NotebookProblem as e:
            print(f"{path.relative_to(ROOT)}: {e}")
            return 1
        if changes:
            stale.append(str(path.relative_to(ROOT)))
            print(f"{path.relative_to(ROOT)}:\n  " + "\n  ".join(changes))
            if not args.check:
                write_notebook(nb, path)
    page = INSTRUCTORS.read_text(encoding="utf-8")
    new_page = sync_table(page)
    if new_page != page:
        stale.append(str(INSTRUCTORS.relative_to(ROOT)))
        print(f"{INSTRUCTORS.relative_to(ROOT)}: the exercise table")
        if not args.check:
            INSTRUCTORS.write_text(new_page, encoding="utf-8")
    if args.check:
        if stale or missing:
            print("out of step with the registry (run python scripts/sync_exercise_cells.py)")
            return 1
        print("every exercise cell is in step with the registry")
        return 0
    print("nothing to change" if not stale else f"updated {len(stale)} file(s)")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
