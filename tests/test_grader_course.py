"""Grading as a course does it: one chapter handed in against a bundle of several, notebooks that
try to read the cases ahead, answers that rely on cells the student added, and answers that are
too big to send back or end the grading process.  Under bubblewrap, like the instructors' page."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest
from grader_support import chapter_notebook, code, exercise_cell, needs_bwrap

from attncourse.cli import main
from attncourse.exercises import all_exercises, get
from attncourse.exercises.engine.check import check

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
FAST = ["--timeout", "60", "--cell-timeout", "20", "--case-timeout", "5", "--jobs", "2"]


def notebook_of(chapter: str) -> dict:
    return chapter_notebook(chapter, chapter)


def answer(nb: dict, exercise_id: str, body: str) -> None:
    exercise_cell(nb, exercise_id)["source"] = get(exercise_id).header + "\n" + body


def solved(student: dict, chapter: str) -> dict:
    nb = json.loads(json.dumps(student))
    for ex in all_exercises(chapter):
        answer(nb, ex.id, get(ex.id).solution_code())
    return nb


def gradebook(path: Path) -> dict:
    with open(path, newline="", encoding="utf-8-sig") as f:
        rows = list(csv.DictReader(f))
    return {row["student"]: row for row in rows}


@pytest.fixture(scope="module")
def handout(tmp_path_factory):
    """A two-chapter book handed out as one bundle, as the README's `assign` does with book/."""
    needs_bwrap()
    base = tmp_path_factory.mktemp("handout")
    book = base / "book"
    book.mkdir()
    for chapter, name in (("ch01", "01_softmax.ipynb"), ("ch06", "06_masked_attention.ipynb")):
        (book / name).write_text(json.dumps(notebook_of(chapter)), encoding="utf-8")
    assert main(["assign", str(book), str(base / "handout"), "--tests", str(ROOT / "hidden_cases")]) == 0
    student = {
        ch: json.loads((base / "handout" / "student" / name).read_text(encoding="utf-8"))
        for ch, name in (("ch01", "01_softmax.ipynb"), ("ch06", "06_masked_attention.ipynb"))
    }
    return {"base": base, "bundle": base / "handout" / "grading", "student": student}


def test_the_readme_commands_grade_the_chapter_handed_in(handout, tmp_path, capsys):
    """Chapter-6 notebooks against the two-chapter bundle: totals out of chapter 6's points, no
    "not found" for chapter 1's functions; a chapter-1 notebook among them is said to be one."""
    subs = tmp_path / "submissions"
    subs.mkdir()
    ch06 = handout["student"]["ch06"]
    (subs / "ann.ipynb").write_text(json.dumps(solved(ch06, "ch06")), encoding="utf-8")
    half = json.loads(json.dumps(ch06))
    answer(half, "ch06.make_causal_mask", get("ch06.make_causal_mask").solution_code())
    (subs / "ben.ipynb").write_text(json.dumps(half), encoding="utf-8")
    (subs / "cy.ipynb").write_text(json.dumps(ch06), encoding="utf-8")
    points = sum(ex.points for ex in all_exercises("ch06"))

    assert main(["grade", str(handout["bundle"]), str(subs), str(tmp_path / "results"), *FAST]) == 0
    out = capsys.readouterr().out
    assert "grading ch06 (held by 3 of 3 submissions)" in out
    rows = gradebook(tmp_path / "results" / "gradebook.csv")
    assert {
        name: (row["total"], row["out_of"]) for name, row in rows.items() if name in ("ann", "ben", "cy")
    } == {
        "ann": (str(points), str(points)),
        "ben": ("1", str(points)),
        "cy": ("0", str(points)),
    }
    assert not any(k.startswith("ch01.") for k in rows["ann"])
    assert all("not found" not in row["notes"] for row in rows.values())
    feedback = (tmp_path / "results" / "feedback" / "cy.txt").read_text(encoding="utf-8")
    assert "is not defined" not in feedback and "ch01" not in feedback

    # --chapter overrides, and says so when the notebooks are of another chapter
    (tmp_path / "results2").mkdir()
    args = [
        "grade",
        str(handout["bundle"]),
        str(subs),
        str(tmp_path / "results2"),
        "--chapter",
        "ch01",
        *FAST,
    ]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "WARNING: --chapter ch01, but 3 submission(s) hold no exercise of ch01" in out
    assert "ann (ch06); ben (ch06); cy (ch06)" in out
    rows = gradebook(tmp_path / "results2" / "gradebook.csv")
    assert {row["status"] for name, row in rows.items() if name in ("ann", "ben", "cy")} == {"other_chapter"}
    assert "holds the exercises of ch06, not of this assignment (ch01)" in rows["ann"]["notes"]
    feedback = (tmp_path / "results2" / "feedback" / "ann.txt").read_text(encoding="utf-8").splitlines()
    assert feedback[3].startswith("Status: other_chapter: this notebook holds the exercises of ch06")

    # a single notebook is a submission of its own
    assert main(["grade", str(handout["bundle"]), str(subs / "ben.ipynb"), str(tmp_path / "one"), *FAST]) == 0
    rows = gradebook(tmp_path / "one" / "gradebook.csv")
    assert sorted(rows) == ["Points Possible", "ben"] and rows["ben"]["total"] == "1"


READ_AHEAD = """
import glob, os
import numpy as np
from attncourse.exercises import get
_ex = get("ch01.temperature_softmax")
_seen = [np.load(p) for p in glob.glob("**/*.npy", recursive=True) + glob.glob("/tmp/**/*.npy", recursive=True)]
_table = {}
for _case in _ex.public_cases():
    _args = list(_case.inputs.values())
    _table[np.asarray(_args[0]).tobytes()] = _ex.reference(*_args)

def temperature_softmax(logits, temperature):
    return _table[np.asarray(logits).tobytes()]
"""

NOTHING_TO_READ = """
import glob
_found = glob.glob("**/*.npy", recursive=True) + glob.glob("cases/*") + glob.glob("/tmp/**/*.npy", recursive=True)
assert not _found, f"inputs readable while the cells run: {_found}"
"""

HELPERS = """
import math
SCALE = 2.0

def shift(x):
    return x - x.max(axis=-1, keepdims=True)
"""

USES_HELPERS = """
def temperature_softmax(logits, temperature):
    t = np.asarray(temperature, dtype=float)[..., None]
    s = shift(logits) * (SCALE / 2.0)  # the largest logit of each row is 0
    greedy = t == 0
    z = np.exp(np.where(greedy, 0.0, s / np.where(greedy, 1.0, t)))
    top = (s == 0).astype(float)  # a greedy row shares its weight among its largest logits
    assert math.isfinite(SCALE)
    return np.where(greedy, top / top.sum(axis=-1, keepdims=True), z / z.sum(axis=-1, keepdims=True))
"""


def test_read_ahead_scores_zero_and_helpers_score_what_check_gives(handout, tmp_path):
    needs_bwrap()
    ch01 = handout["student"]["ch01"]
    subs = tmp_path / "subs"
    subs.mkdir()
    # the read-ahead notebook: top-level loads and reference answers, a lookup in the function
    sly = solved(ch01, "ch01")
    answer(sly, "ch01.temperature_softmax", READ_AHEAD)
    sly["cells"].insert(1, code(NOTHING_TO_READ))
    (subs / "sly.ipynb").write_text(json.dumps(sly), encoding="utf-8")
    # the answer relies on an import, a constant and a helper of a cell the student added
    own = json.loads(json.dumps(ch01))
    own["cells"].insert(1, code(HELPERS))
    answer(own, "ch01.temperature_softmax", USES_HELPERS)
    (subs / "own.ipynb").write_text(json.dumps(own), encoding="utf-8")

    assert main(["grade", str(handout["bundle"]), str(subs), str(tmp_path / "out"), *FAST]) == 0
    rows = gradebook(tmp_path / "out" / "gradebook.csv")
    assert rows["sly"]["ch01.temperature_softmax"] == "0"
    assert rows["sly"]["ch01.stable_softmax"] == "2"  # the other exercises keep their marks
    assert "ch01.temperature_softmax: 0 points" in rows["sly"]["notes"]
    assert "errors in cells" not in rows["sly"]["notes"], rows["sly"]["notes"]  # no .npy was there to read

    # in the notebook: the same cells, check and its points
    namespace: dict = {}
    exec("import numpy as np\n" + HELPERS + USES_HELPERS, namespace)
    result = check("ch01.temperature_softmax", namespace["temperature_softmax"])
    assert result.earned == 1
    assert rows["own"]["ch01.temperature_softmax"] == "1"
    assert rows["own"]["total"] == "1"


# An answer that is right only if the grader delivered the inputs of its own chapter's functions
# and of no other chapter's (request.json lists the exercises; case files are named E_C_A.npy).
ONLY_ITS_OWN_INPUTS = """
import json
import os

def temperature_softmax(logits, temperature):
    with open("request.json", encoding="utf-8") as f:
        exercises = json.load(f)["exercises"]
    seen = {exercises[int(name.split("_")[0])]["id"].split(".")[0] for name in os.listdir("cases")
            if name.endswith(".npy")}
    if seen != {"ch01"}:
        raise ValueError(sorted(seen))
    t = np.asarray(temperature, dtype=float)[..., None]
    s = logits - logits.max(axis=-1, keepdims=True)
    greedy = t == 0
    z = np.exp(np.where(greedy, 0.0, s / np.where(greedy, 1.0, t)))
    top = (s == 0).astype(float)
    return np.where(greedy, top / top.sum(axis=-1, keepdims=True), z / z.sum(axis=-1, keepdims=True))
"""


def test_a_notebook_gets_the_inputs_of_the_functions_it_defines_alone(handout, tmp_path):
    """A bundle of two chapters graded as one assignment: a chapter 1 notebook is given chapter 1's
    inputs, not chapter 6's (its cases run as before; a course's many chapters cost no more)."""
    needs_bwrap()
    subs = tmp_path / "subs"
    subs.mkdir()
    nb = json.loads(json.dumps(handout["student"]["ch01"]))
    answer(nb, "ch01.temperature_softmax", ONLY_ITS_OWN_INPUTS)
    (subs / "ada.ipynb").write_text(json.dumps(nb), encoding="utf-8")
    out = tmp_path / "out"
    chapters = ["--chapter", "ch01", "--chapter", "ch06"]
    assert main(["grade", str(handout["bundle"]), str(subs), str(out), *chapters, *FAST]) == 0
    row = gradebook(out / "gradebook.csv")["ada"]
    assert row["ch01.temperature_softmax"] == str(get("ch01.temperature_softmax").points), row


BIG = """
def entropy_gradient(x):
    return np.zeros(9_000_000)
"""

ENDS_PROCESS = """
import os

def temperature_softmax(logits, temperature):
    os._exit(7)
"""

IGNORES_ITS_LIMIT = """
import signal

def stable_softmax(x):
    signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGALRM])  # the runner's alarm never arrives
    while True:
        pass
"""

NOT_AN_ARRAY = """
def log_sigmoid(*args):
    return object()
"""


def test_one_exercises_failure_costs_that_exercise_alone(handout, tmp_path):
    needs_bwrap()
    nb = solved(handout["student"]["ch01"], "ch01")
    answer(nb, "ch01.entropy_gradient", BIG)  # 72 MB per case
    answer(nb, "ch01.temperature_softmax", ENDS_PROCESS)
    answer(nb, "ch01.log_sigmoid", NOT_AN_ARRAY)
    answer(nb, "ch01.stable_softmax", IGNORES_ITS_LIMIT)
    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / "max.ipynb").write_text(json.dumps(nb), encoding="utf-8")
    assert main(["grade", str(handout["bundle"]), str(subs), str(tmp_path / "out"), *FAST]) == 0
    row = gradebook(tmp_path / "out" / "gradebook.csv")["max"]
    assert row["status"] == "ok", row
    lost = {"ch01.entropy_gradient", "ch01.temperature_softmax", "ch01.log_sigmoid", "ch01.stable_softmax"}
    for ex in all_exercises("ch01"):
        assert row[ex.id] == ("0" if ex.id in lost else str(ex.points)), ex.id
    feedback = (tmp_path / "out" / "feedback" / "max.txt").read_text(encoding="utf-8")
    assert "takes 68.7 MB, more than the" in feedback
    assert "ended the grading process (exit code 7)" in feedback
    assert "case 1 of ch01.temperature_softmax ended the grading process (exit code 7)" in row["notes"]
    assert "case 1 of ch01.stable_softmax ran far past the 5 s limit of one call" in row["notes"]
    assert np.zeros(9_000_000).nbytes == 72_000_000
