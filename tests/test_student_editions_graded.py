"""The Chinese student editions, handed out with ``assign --language`` and graded by ``attncourse
grade`` under bubblewrap: as handed out each scores 0, with the registry's solutions written into
its exercise cells it scores full marks, and the feedback file is in the edition's language."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest
from grader_support import exercise_cell, needs_bwrap

from attncourse import i18n
from attncourse.cli import main
from attncourse.exercises import CHAPTERS, all_exercises, get

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
FAST = ["--timeout", "300", "--cell-timeout", "60", "--case-timeout", "20", "--jobs", "2"]


def _solved(nb: dict, chapter: str) -> dict:
    nb = json.loads(json.dumps(nb))
    for ex in all_exercises(chapter):
        exercise_cell(nb, ex.id)["source"] = get(ex.id).header + "\n" + get(ex.id).solution_code()
    return nb


@pytest.mark.parametrize("language", ["zh_CN", "zh_TW"])
def test_each_chinese_edition_scores_zero_as_handed_out_and_full_marks_solved(tmp_path, language):
    needs_bwrap()
    chapters = list(CHAPTERS) if language == "zh_CN" else ["ch01", "ch06"]
    hand = tmp_path / "handout"
    args = ["assign", str(ROOT / "book"), str(hand), "--language", language]
    assert main(args + [a for ch in chapters for a in ("--chapter", ch)]) == 0
    wrong = []
    for chapter in chapters:
        name = f"{CHAPTERS[chapter][1]}.ipynb"
        nb = json.loads((hand / "student" / name).read_text(encoding="utf-8"))
        assert i18n.language_of_notebook(nb) == language, name
        subs, out = tmp_path / f"subs_{chapter}", tmp_path / f"graded_{chapter}"
        subs.mkdir()
        (subs / "handed_out.ipynb").write_text(json.dumps(nb, ensure_ascii=False), encoding="utf-8")
        (subs / "solved.ipynb").write_text(
            json.dumps(_solved(nb, chapter), ensure_ascii=False), encoding="utf-8"
        )
        assert main(["grade", str(hand / "grading"), str(subs), str(out), "--chapter", chapter, *FAST]) == 0
        with open(out / "gradebook.csv", newline="", encoding="utf-8-sig") as f:
            rows = {row["student"]: row for row in csv.DictReader(f) if row["student"] != "Points Possible"}
        possible = sum(ex.points for ex in all_exercises(chapter))
        totals = {s: float(rows[s]["total"]) for s in ("handed_out", "solved")}
        if totals != {"handed_out": 0.0, "solved": float(possible)}:
            wrong.append(f"{chapter}: {totals}, out of {possible}")
        feedback = (out / "feedback" / "solved.txt").read_text(encoding="utf-8")
        with i18n.using(language):
            heading = i18n.tr("Feedback for {name}", name="solved")
        if not feedback.startswith(heading) or not re.search(r"[\u4e00-\u9fff]", feedback):
            wrong.append(f"{chapter}: the feedback is not in {language}: {feedback[:80]!r}")
    assert not wrong, "\n".join(wrong)
