"""The rules of a grading run, each alone and without running a notebook: which chapters are the
assignment, which file of a resubmission counts, the late policy, what a hidden case may say, and
results.json read back whole for ``--update``."""

from __future__ import annotations

import json
import os

import pytest

from attncourse.exercises import get
from attncourse.exercises.engine.compare import CaseResult, Outcome
from attncourse.grading.assignment import choose_chapters
from attncourse.grading.gradebook import feedback_text, read_students, write_results
from attncourse.grading.late import parse_due, parse_penalty
from attncourse.grading.limits import GradingError
from attncourse.grading.marking import ExerciseGrade, StudentGrade, hide
from attncourse.grading.roster import match_roster, parse_lms_name, read_roster
from attncourse.grading.submissions import discover

BUNDLE = ["ch01", "ch05", "ch06", "ch11"]


def test_the_assignment_is_the_chapters_most_submissions_hold():
    five = [(f"s{i}", {"ch06"}) for i in range(5)]
    chosen, said = choose_chapters(BUNDLE, five + [("stray", {"ch11"})], None)
    assert chosen == ["ch06"] and "stray (ch11)" in said[-1] and "other_chapter" in said[-1]
    # students who each hand in the same two chapters: both are the assignment, and no warning
    pairs = [(f"s{i}", {"ch05", "ch06"}) for i in range(3)]
    chosen, said = choose_chapters(BUNDLE, pairs, None)
    assert chosen == ["ch05", "ch06"] and not any("WARNING" in m for m in said)
    # half and half: no chapter is held by more than half; the grader asks
    with pytest.raises(KeyError, match="--chapter"):
        choose_chapters(BUNDLE, [("a", {"ch06"}), ("b", {"ch11"})], None)
    # --chapter decides, and says who is left out
    chosen, said = choose_chapters(BUNDLE, five + [("stray", {"ch11"})], ["ch11"])
    assert chosen == ["ch11"] and said[0].startswith("WARNING: --chapter ch11, but 5 submission(s)")


def test_a_hidden_case_says_its_label_and_error_type_only():
    leak = Outcome("raised", error_type="ValueError", message="LEAK lengths=[1000, 4096] S=4096")
    case = CaseResult(
        "hidden: long sequences", False, "raised ValueError: LEAK lengths=[1000, 4096] S=4096", "raised",
        True, "q (4096, 8) float64", ["first difference at 17"], "long sequences",
    )  # fmt: skip
    shown = hide(case, leak)
    assert shown.message.startswith("raised ValueError") and "LEAK" not in shown.message
    assert "4096" not in shown.message + shown.inputs + " ".join(shown.details)
    wrong = CaseResult("hidden: edge rows", False, "differs at (3, 5): expected 0.25, got 0.5", "wrong values",
                       True, "x (4, 6)", ["(3, 5)"], "masking")  # fmt: skip
    shown = hide(wrong)
    assert "0.25" not in shown.message and "(group masking)" in shown.message and not shown.details
    public = CaseResult("three logits", False, "expected 0.25, got 0.5", "wrong values")
    assert hide(public) is public


def test_the_late_policy_reads_and_refuses_clearly():
    p = parse_penalty("10%/day max 50%", due="2026-11-20T23:59+00:00")
    due = p.due.timestamp()
    assert p.assess(due + 3600, False)["percent"] == 10  # a started day counts
    assert p.assess(due + 9 * 86400, False)["percent"] == 50  # the cap
    assert p.assess(due - 1, True) == {}  # on time by the due date, whatever the flag
    flat = parse_penalty("25%")
    assert flat.assess(None, True)["percent"] == 25 and flat.assess(None, False) == {}
    assert flat.assess(None, True, extension_days=1) == {}
    for bad in ("10", "10%/week", "0%/day", "150%", "10%/day max 0%"):
        with pytest.raises(ValueError, match="--late-penalty"):
            parse_penalty(bad)
    with pytest.raises(ValueError, match="--due 'Friday'"):
        parse_due("Friday")


def test_the_latest_canvas_submission_counts_and_a_py_is_no_notebook(tmp_path):
    for name in ("smithjohn_4411_900_a.ipynb", "smithjohn_4411_1000_a.ipynb", "doejane_4412_5_nb.py"):
        (tmp_path / name).write_text("{}")
    os.utime(tmp_path / "smithjohn_4411_1000_a.ipynb", (1, 1))  # file times do not outrank Canvas's ids
    subs, ignored = discover(str(tmp_path))
    by = {s.student: s for s in subs}
    assert (
        by["doejane_4412"].status == "not_a_notebook" and "doejane_4412_5_nb.py" in by["doejane_4412"].problem
    )
    assert ignored == []  # the student's, not ignored
    john = by["smithjohn_4411"]
    john.keep_latest()
    assert [os.path.basename(p) for p in john.paths] == ["smithjohn_4411_1000_a.ipynb"]
    assert [os.path.basename(p) for p in john.earlier] == ["smithjohn_4411_900_a.ipynb"]


def test_results_json_reads_back_whole(tmp_path):
    ex = get("ch01.stable_softmax")
    cases = [
        CaseResult("three logits", True, group="three logits"),
        CaseResult(
            "hidden: float16", False, "wrong values; not shown", "wrong values", True, group="float16"
        ),
    ]
    sg = StudentGrade(
        "smithjohn_4411", ["a.ipynb"], "ok", ["a note"], ["a detail"], [ExerciseGrade(ex, cases, "a.ipynb")]
    )
    sg.identity.update(id="u1", name="John Smith", lms="canvas", lms_id="4411", late=True)
    sg.penalty = {"percent": 10.0, "days_late": 0.5, "why": "handed in late: 10%/day"}
    write_results(tmp_path / "r.json", {"chapters": ["ch01"]}, [sg], {"smithjohn_4411": "smithjohn_4411.txt"})
    (back,) = read_students(json.loads((tmp_path / "r.json").read_text(encoding="ascii")))
    assert (back.student, back.total, back.earned, back.notes, back.details) == (
        sg.student, sg.total, sg.earned, sg.notes, sg.details,
    )  # fmt: skip
    assert back.identity == sg.identity and back.penalty == sg.penalty
    assert feedback_text(back, 2) == feedback_text(sg, 2)
    assert feedback_text(sg, 2).startswith("Feedback for John Smith (u1)")
    assert "Late penalty: 10% of the points earned: handed in late" in feedback_text(sg, 2)


def test_the_roster_carries_lms_ids_and_extensions(tmp_path):
    path = tmp_path / "roster.csv"
    path.write_text(
        "id,name,email,canvas_id,moodle_id,extension_days\n20230001,John Smith,js@uni.edu,4411,,1.5\n"
        "20230002,Jane Doe,jd@uni.edu,,208,\n",
        encoding="utf-8",
    )
    john, jane = read_roster(path)
    assert (john.lms_ids, john.extension_days, jane.lms_ids, jane.extension_days) == (
        {"canvas": "4411"}, 1.5, {"moodle": "208"}, 0.0,
    )  # fmt: skip
    # Canvas's user id finds John although his roster id is a university number
    found = match_roster([("x_4411", parse_lms_name("x_4411_9_a.ipynb"))], [john, jane])
    assert found.by_key["x_4411"] is john
    path.write_text("id,name,extension_days\n1,A,soon\n", encoding="utf-8")
    with pytest.raises(GradingError, match="extension_days 'soon'"):
        read_roster(path)
