"""The LMS formats, piece by piece and fast: Moodle's 4.1+ folder names, its grading worksheet,
lateness as it is said, the files a course imports (Moodle's feedback zip, Gradescope's penalty),
hidden case names, and the one-way imports of the grader."""

from __future__ import annotations

import ast
import csv
import zipfile
from datetime import datetime, timezone
from pathlib import Path

import pytest

from attncourse.exercises import all_exercises
from attncourse.exercises.engine.compare import CaseResult
from attncourse.grading.gradescope_format import gradescope_results
from attncourse.grading.late import parse_penalty
from attncourse.grading.limits import GradingError
from attncourse.grading.lms import write_feedback_zip
from attncourse.grading.marking import ExerciseGrade, StudentGrade, _number_hidden
from attncourse.grading.roster import parse_lms_name
from attncourse.grading.submissions import discover
from attncourse.grading.worksheet import read_class

GRADING = Path(__file__).resolve().parents[1] / "attncourse" / "grading"


def test_moodle_41_folders_and_the_older_ones_are_one_participant_each(tmp_path):
    for name in ("Ana María López_510001_assignsubmission_file", "Bo Li_510002_assignsubmission_file_"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "06_masked_attention.ipynb").write_text("{}")
    subs = {s.student: s for s in discover(str(tmp_path))[0]}
    assert sorted(subs) == ["Ana María López_510001", "Bo Li_510002"]
    assert [(s.lms.lms, s.lms.lms_id) for s in subs.values()] == [("moodle", "510001"), ("moodle", "510002")]
    assert parse_lms_name("Bo Li_510002_assignsubmission_file_06_x.ipynb").original == "06_x.ipynb"


def _worksheet(path: Path, rows: list) -> Path:
    with open(path, "w", newline="", encoding="utf-8-sig") as f:
        w = csv.writer(f)
        w.writerow(["Identifier", "Full name", "Email address", "Status", "Grade", "Maximum Grade",
                    "Grade can be changed", "Last modified (submission)", "Last modified (grade)",
                    "Feedback comments"])  # fmt: skip
        w.writerows(rows)
    return path


def test_the_grading_worksheet_is_a_roster_with_submission_times(tmp_path):
    path = _worksheet(
        tmp_path / "w.csv",
        [
            ["Participant 510001", "Ana María López", "ana@uni.example", "Submitted for grading", "", "23.00",
             "Yes", "Saturday, 21 November 2026, 8:00 AM", "-", ""],
            ["Participant 510002", "Bo Li", "bo@uni.example", "No submission", "", "23.00", "Yes", "-", "-", ""],
        ],
    )  # fmt: skip
    ana, bo = read_class(path, "UTC")
    assert (ana.id, ana.name, ana.email, ana.lms_ids) == (
        "510001",
        "Ana María López",
        "ana@uni.example",
        {"moodle": "510001"},
    )
    assert ana.submitted == datetime(2026, 11, 21, 8, 0, tzinfo=timezone.utc).timestamp()
    assert ana.submitted_source == "Moodle's grading worksheet" and bo.submitted is None
    berlin = read_class(path, "Europe/Berlin")[0].submitted
    assert ana.submitted - berlin == 3600  # the zone is the instructor's to name
    with pytest.raises(GradingError, match="--lms-timezone"):
        read_class(path, "Mars/Olympus")
    _worksheet(
        tmp_path / "bad.csv", [["Participant 1", "X", "", "", "", "", "", "samedi 21 novembre", "", ""]]
    )
    with pytest.raises(GradingError, match="English-language worksheet"):
        read_class(tmp_path / "bad.csv", "UTC")


def test_lateness_is_never_rounded_up_and_names_its_source():
    policy = parse_penalty("10%/day max 50%", due="2026-11-20T23:59+00:00")
    late = policy.assess(policy.due.timestamp() + 8 * 3600 + 60, False, source="Moodle's grading worksheet")
    assert late["percent"] == 10 and late["late_by"] == "8 h 01 min"
    assert "8 h 01 min after the due date" in late["why"] and "Moodle's grading worksheet" in late["why"]
    assert "9 h" not in late["why"]


def _student(penalty: dict) -> StudentGrade:
    ex = all_exercises("ch06")[0]
    cases = [CaseResult("a", True, "", "", False), CaseResult("hidden: b", True, "", "", True)]
    return StudentGrade(
        "Ana_Lee_7", ["06.ipynb"], "ok", [], [], [ExerciseGrade(ex, cases)],
        identity={"lms": "moodle", "lms_id": "7", "name": "Ana_Lee"}, penalty=penalty,
    )  # fmt: skip


def test_gradescope_says_why_a_late_score_is_below_its_tests():
    sg = _student({"percent": 10.0, "why": "handed in late: 10%/day"})
    data = gradescope_results(sg, 23)
    assert data["score"] == pytest.approx(sum(t["score"] for t in data["tests"]))
    penalty = next(t for t in data["tests"] if t["name"] == "Late penalty")
    assert penalty["score"] < 0 and "10%" in penalty["output"] and "Late penalty" in data["output"]
    assert not any(t["name"] == "Late penalty" for t in gradescope_results(_student({}), 23)["tests"])


def test_moodles_feedback_zip_has_the_folders_its_importer_reads(tmp_path):
    (tmp_path / "fb").mkdir()
    (tmp_path / "fb" / "Ana_Lee_7.txt").write_text("Total: 1 / 23 points\n", encoding="utf-8")
    n = write_feedback_zip(
        tmp_path / "f.zip", [_student({})], tmp_path / "fb", {"Ana_Lee_7": "Ana_Lee_7.txt"}
    )
    with zipfile.ZipFile(tmp_path / "f.zip") as z:
        assert n == 1 and z.namelist() == ["Ana Lee_7_assignfeedback_file/feedback.txt"]
    # importziplib.php: explode('_', part, 5); [1] is the participant id, [2]_[3] the plugin
    parts = "Ana Lee_7_assignfeedback_file".split("_", 4)
    assert parts[1] == "7" and parts[2:4] == ["assignfeedback", "file"]


def test_hidden_cases_that_spell_out_their_inputs_are_shown_by_number():
    cases = [
        CaseResult("L=5, window 2", False, "wrong values", "wrong values", False),
        CaseResult("hidden: lengths [6, 1, 0]", False, "wrong values (group lengths [6, 1, 0]); not shown", "wrong values", True, group="lengths [6, 1, 0]"),
        CaseResult("hidden: float16 logits", False, "wrong values; not shown", "wrong values", True),
    ]  # fmt: skip
    shown = _number_hidden(cases)
    assert [c.name for c in shown] == ["L=5, window 2", "hidden: case 1", "hidden: float16 logits"]
    assert "6, 1, 0" not in shown[1].message and shown[1].group == "lengths [6, 1, 0]"  # scored as before


def _imports(module: str) -> set:
    tree = ast.parse((GRADING / f"{module}.py").read_text(encoding="utf-8"))
    return {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level == 1}


def test_batch_and_gradescope_import_one_way():
    assert "gradescope" not in _imports("batch") and "batch" in _imports("gradescope")
    assert "batch" not in _imports("gradescope_format") and "gradescope" not in _imports("gradescope_format")


def test_an_error_is_placed_in_the_notebooks_own_cell_not_in_numpy():
    import linecache

    import numpy as np

    from attncourse.grading.runner import _where

    source = "import numpy as np\na = np.zeros((2, 2))\nb = np.linalg.inv(a)\n"
    linecache.cache["<cell 7>"] = (len(source), None, source.splitlines(True), "<cell 7>")
    try:
        exec(compile(source, "<cell 7>", "exec"), {"np": np})
    except np.linalg.LinAlgError as e:
        where = _where(e.__traceback__)
    assert where == "cell 7, line 3: b = np.linalg.inv(a)"
