"""A course's grading run, as an instructor publishes it: the assignment is the chapter most
submissions hold, every output file agrees after ``--update``, odd file names lose nothing, the
latest submission counts, late work is penalised by the stated policy, and hidden inputs reach no
output.  Isolation is not what these tests are about: they grade with ``--sandbox none``."""

from __future__ import annotations

import csv
import json
import os
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest
from grader_support import chapter_notebook

from attncourse.cli import main
from attncourse.exercises import all_exercises, get
from attncourse.grading.handout import load_hidden_cases
from attncourse.grading.lms import CANVAS_COLUMNS

ROOT = Path(__file__).resolve().parents[1]
FAST = ["--timeout", "60", "--cell-timeout", "20", "--case-timeout", "5", "--jobs", "2", "--sandbox", "none"]
CH01 = [ex.id for ex in all_exercises("ch01")]
POINTS01 = sum(ex.points for ex in all_exercises("ch01"))
POINTS06 = sum(ex.points for ex in all_exercises("ch06"))

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def handout(tmp_path_factory):
    """The book's chapters 1 and 6 handed out as one bundle."""
    base = tmp_path_factory.mktemp("course")
    book = base / "book"
    book.mkdir()
    names = {"ch01": "01_softmax.ipynb", "ch06": "06_masked_attention.ipynb"}
    for chapter, name in names.items():
        (book / name).write_text(json.dumps(chapter_notebook(chapter, chapter)), encoding="utf-8")
    assert main(["assign", str(book), str(base / "handout"), "--tests", str(ROOT / "hidden_cases")]) == 0
    student = {
        ch: json.loads((base / "handout" / "student" / name).read_text(encoding="utf-8"))
        for ch, name in names.items()
    }
    return {"bundle": base / "handout" / "grading", "student": student}


def answered(student: dict, answers: dict) -> dict:
    """A copy of ``student`` with the exercise cells of ``answers`` (id -> body) filled in."""
    nb = json.loads(json.dumps(student))
    for cell in nb["cells"]:
        ex_id = cell["metadata"].get("attncourse", {}).get("exercise")
        if ex_id in answers:
            cell["source"] = get(ex_id).header + "\n" + answers[ex_id]
    return nb


def solved(student: dict, ids) -> dict:
    return answered(student, {ex_id: get(ex_id).solution_code() for ex_id in ids})


def put(folder: Path, name, nb: dict) -> Path:
    folder.mkdir(exist_ok=True)
    path = os.path.join(os.fsencode(folder), name if isinstance(name, bytes) else os.fsencode(name))
    with open(path, "wb") as f:
        f.write(json.dumps(nb).encode("utf-8"))
    return Path(os.fsdecode(path))


def read_csv(path: Path) -> list:
    with open(path, newline="", encoding="utf-8-sig") as f:
        return list(csv.DictReader(f))


def outputs(out: Path) -> dict:
    """Every output file read back, and checked to agree: one row per student everywhere, the same
    total in the gradebook, results.json, the feedback, Gradescope's file and the LMS imports."""
    book = read_csv(out / "gradebook.csv")[1:]
    summary = json.loads((out / "results.json").read_text(encoding="ascii"))
    students = summary["students"]
    assert len({r["student"] for r in book}) == len(book) == len(students)
    feedback = {p.name: p.read_text(encoding="utf-8") for p in (out / "feedback").iterdir()}
    gradescope = {p.name: json.loads(p.read_text(encoding="ascii")) for p in (out / "gradescope").iterdir()}
    assert sorted(feedback) == sorted(s["feedback"].split("/")[1] for s in students)
    assert sorted(gradescope) == sorted(n[: -len(".txt")] + ".json" for n in feedback)
    canvas = read_csv(out / "lms" / "canvas.csv")
    moodle = read_csv(out / "lms" / "moodle.csv")
    by_file = {}
    for row, s in zip(book, students):
        total = s["total"]
        assert float(row["total"]) == pytest.approx(total) and row["feedback"] == s["feedback"]
        name = s["feedback"].split("/")[1]
        assert f"Total: {row['total']} / {row['out_of']} points" in feedback[name]
        assert gradescope[name[: -len(".txt")] + ".json"]["score"] == pytest.approx(total)
        by_file[name] = (row, s)
    canvas_totals = {(r["ID"], r["SIS User ID"]): float(r[list(r)[-1]]) for r in canvas[1:]}
    assert len(canvas_totals) == len(canvas) - 1
    for row, s in by_file.values():
        cid = s.get("canvas_id") or (s.get("lms_id") if s.get("lms") == "canvas" else "")
        if cid or s.get("id"):
            assert canvas_totals[(cid or "", s.get("id", ""))] == pytest.approx(s["total"])
    moodle_totals = {r["Identifier"]: float(r["Grade"]) for r in moodle}
    assert len(moodle_totals) == len(moodle)
    for row, s in by_file.values():
        mid = s.get("moodle_id") or (s.get("lms_id") if s.get("lms") == "moodle" else "")
        assert (f"Participant {mid}" in moodle_totals) == bool(mid)
        if mid:
            assert moodle_totals[f"Participant {mid}"] == pytest.approx(s["total"])
    return {
        "book": {r["student"]: r for r in book},
        "summary": summary,
        "students": {s["student"]: s for s in students},
        "feedback": {s["student"]: feedback[s["feedback"].split("/")[1]] for s in students},
        "canvas": canvas,
        "moodle": moodle,
        "gradescope": gradescope,
    }


def grade(bundle: Path, *args: str) -> int:
    return main(["grade", str(bundle), *map(str, args), *FAST])


def test_a_stray_chapter_changes_nobodys_grade(handout, tmp_path, capsys):
    """Chapter-6 notebooks and one of chapter 1, no --chapter: the assignment is chapter 6; the
    stray one is other_chapter, out of chapter 6's points, and said so everywhere."""
    subs = tmp_path / "subs"
    for name in ("ann", "ben", "cy"):
        put(subs, f"{name}.ipynb", solved(handout["student"]["ch06"], [e.id for e in all_exercises("ch06")]))
    put(subs, "dan.ipynb", solved(handout["student"]["ch01"], CH01))
    out = tmp_path / "out"
    assert grade(handout["bundle"], subs, out) == 0
    printed = capsys.readouterr().out
    got = outputs(out)
    assert {k: (r["total"], r["out_of"], r["status"]) for k, r in got["book"].items()} == {
        "ann": (str(POINTS06), str(POINTS06), "ok"),
        "ben": (str(POINTS06), str(POINTS06), "ok"),
        "cy": (str(POINTS06), str(POINTS06), "ok"),
        "dan": ("0", str(POINTS06), "other_chapter"),
    }
    assert "ch01" in got["book"]["dan"]["notes"] and "other_chapter" in got["feedback"]["dan"]
    assert "Exercise 1." not in got["feedback"]["ann"]
    assert "dan: other_chapter" in printed.splitlines()[-2] and "held by 3 of 4 submissions" in printed
    assert "WARNING" not in printed
    assert list(got["canvas"][0])[-1] == "attncourse ch06" and got["summary"]["chapters"] == ["ch06"]

    # one of each: no chapter is the assignment's; the grader asks rather than guess
    tie = tmp_path / "tie"
    put(tie, "ann.ipynb", handout["student"]["ch06"])
    put(tie, "dan.ipynb", handout["student"]["ch01"])
    assert grade(handout["bundle"], tie, tmp_path / "out2") == 1
    err = capsys.readouterr().err
    assert "--chapter" in err and "more than half" in err and not (tmp_path / "out2").exists()


def test_update_keeps_one_row_per_student_and_every_file_agrees(handout, tmp_path, capsys):
    ch01 = handout["student"]["ch01"]
    subs = tmp_path / "subs"
    put(subs, "smithjohn_4411_100_01_softmax.ipynb", solved(ch01, CH01))
    put(subs, "doejane_4412_101_01_softmax.ipynb", ch01)
    put(subs, "Bo Li_208_assignsubmission_file_01_softmax.ipynb", ch01)  # a Moodle file among them
    roster = tmp_path / "roster.csv"
    roster.write_text(
        "id,name,email,aliases,canvas_id\n"
        "u1001,John Smith,js@uni.edu,,4411\nu1002,Jane Doe,jd@uni.edu,,4412\nu1003,Ann Absent,aa@uni.edu,ann,\n"
        "u1004,Bo Li,bl@uni.edu,,\n",
        encoding="utf-8",
    )
    out = tmp_path / "out"
    assert grade(handout["bundle"], subs, out, "--roster", roster) == 0
    before = outputs(out)
    assert sorted(before["book"]) == ["Ann Absent", "Bo Li_208", "doejane_4412", "smithjohn_4411"]
    assert [r["Grade"] for r in before["moodle"]] == ["0"]
    assert before["book"]["doejane_4412"]["total"] == "0"

    # a regrade without --roster (the folder's own roster is used): Jane's row, and only hers, changes
    late = tmp_path / "late"
    put(late, "doejane_4412_205_01_softmax.ipynb", solved(ch01, CH01))
    assert main(["grade", str(handout["bundle"]), str(late), "--update", str(out), *FAST]) == 0
    after = outputs(out)
    assert sorted(after["book"]) == sorted(before["book"])
    assert after["book"]["doejane_4412"]["total"] == str(POINTS01)
    assert all(after["book"][k] == before["book"][k] for k in before["book"] if k != "doejane_4412")
    assert f"Total: {POINTS01} / {POINTS01}" in after["feedback"]["doejane_4412"]
    canvas = {r["SIS User ID"]: (r["ID"], float(r[list(r)[-1]])) for r in after["canvas"][1:]}
    assert canvas == {
        "u1001": ("4411", POINTS01),
        "u1002": ("4412", POINTS01),
        "u1003": ("", 0.0),
        "u1004": ("", 0.0),
    }

    # Bo hands in again through Moodle: moodle.csv follows
    put(tmp_path / "bo", "Bo Li_208_assignsubmission_file_01_softmax.ipynb", solved(ch01, CH01))
    assert main(["grade", str(handout["bundle"]), str(tmp_path / "bo"), "--update", str(out), *FAST]) == 0
    assert [float(r["Grade"]) for r in outputs(out)["moodle"]] == [POINTS01]

    # the missing student hands in a plain ann.ipynb: matched through the roster's alias, no new row
    put(tmp_path / "ann", "ann.ipynb", solved(ch01, CH01[:1]))
    args = ["grade", str(handout["bundle"]), str(tmp_path / "ann" / "ann.ipynb"), "--update", str(out)]
    assert main(args + ["--roster", str(roster), *FAST]) == 0
    final = outputs(out)
    assert sorted(final["book"]) == sorted(before["book"])
    ann = final["book"]["Ann Absent"]
    assert ann["status"] == "ok" and float(ann["total"]) == get(CH01[0]).points and ann["id"] == "u1003"
    assert "no submission" not in final["feedback"]["Ann Absent"]
    assert final["feedback"]["Ann Absent"].startswith("Feedback for Ann Absent (u1003)")
    assert len(final["summary"]["updates"]) == 3

    # no roster at all: a regrade of alice replaces alice
    plain = tmp_path / "plain"
    put(plain, "alice.ipynb", ch01)
    put(plain, "bob.ipynb", ch01)
    assert grade(handout["bundle"], plain, tmp_path / "out3") == 0
    put(tmp_path / "again", "alice.ipynb", solved(ch01, CH01))
    args = ["grade", str(handout["bundle"]), str(tmp_path / "again" / "alice.ipynb"), "--update"]
    assert main(args + [str(tmp_path / "out3"), *FAST]) == 0
    third = outputs(tmp_path / "out3")
    assert sorted(third["book"]) == ["alice", "bob"] and third["book"]["alice"]["total"] == str(POINTS01)


def test_a_name_that_is_not_utf8_loses_no_output(handout, tmp_path, capsys):
    """A Canvas download with a byte that is not UTF-8 in a name, and a roster of university
    numbers: every output is written whole; Canvas's ID column holds Canvas ids only."""
    ch01 = handout["student"]["ch01"]
    subs = tmp_path / "subs"
    put(subs, b"sm\xffith_4411_100_01_softmax.ipynb", solved(ch01, CH01))
    put(subs, "doejane_4412_101_01_softmax.ipynb", solved(ch01, CH01[:1]))
    roster = tmp_path / "roster.csv"
    roster.write_text(
        "id,name,email\n20230001,Jane Doe,jd@uni.edu\n20230002,Carl Ng,cn@uni.edu\n", encoding="utf-8"
    )
    out = tmp_path / "out"
    # smith matches no one of this roster: the run stops unless told to go on
    assert grade(handout["bundle"], subs, out, "--roster", roster) == 1
    assert not (out / "lms").exists()
    assert grade(handout["bundle"], subs, out, "--roster", roster, "--allow-unmatched", "--force") == 0
    printed = capsys.readouterr().out
    assert "sm\\xffith_4411" in printed and "not valid UTF-8" in printed
    got = outputs(out)
    assert "sm\\xffith_4411" in got["book"] and got["book"]["sm\\xffith_4411"]["total"] == str(POINTS01)
    assert "sm\udcffith_4411" in got["students"]  # exact in results.json
    canvas = got["canvas"]
    assert list(canvas[0]) == [*CANVAS_COLUMNS, "attncourse ch01"] and len(canvas) == 1 + 3
    ids = {r["ID"] for r in canvas[1:]} - {""}
    sis = {r["SIS User ID"] for r in canvas[1:]} - {""}
    assert ids == {"4411", "4412"} and sis == {"20230001", "20230002"}
    row = next(r for r in canvas if r["ID"] == "4411")
    assert row["SIS User ID"] == "" and float(row["attncourse ch01"]) == POINTS01
    assert (out / "lms" / "moodle.csv").is_file() and len(got["gradescope"]) == 3


def test_the_latest_submission_counts(handout, tmp_path):
    ch01 = handout["student"]["ch01"]
    subs = tmp_path / "subs"
    put(subs, "smithjohn_4411_100_01_softmax.ipynb", solved(ch01, CH01))
    put(subs, "smithjohn_4411_200_01_softmax.ipynb", solved(ch01, CH01[:2]))
    worse = sum(get(e).points for e in CH01[:2])
    assert grade(handout["bundle"], subs, tmp_path / "latest") == 0
    got = outputs(tmp_path / "latest")
    row = got["book"]["smithjohn_4411"]
    assert float(row["total"]) == worse
    assert "smithjohn_4411_100_01_softmax.ipynb" in row["notes"] and "earlier" in row["notes"]
    assert "Notebook graded: smithjohn_4411_200_01_softmax.ipynb" in got["feedback"]["smithjohn_4411"]

    assert grade(handout["bundle"], subs, tmp_path / "best", "--resubmissions", "best") == 0
    assert outputs(tmp_path / "best")["book"]["smithjohn_4411"]["total"] == str(POINTS01)


def test_a_py_file_under_a_canvas_name_is_said_to_be_one(handout, tmp_path):
    subs = tmp_path / "subs"
    put(subs, "doejane_4412_101_01_softmax.ipynb", solved(handout["student"]["ch01"], CH01))
    (subs / "smithjohn_4411_100_softmax.py").write_text("def stable_softmax(x): ...\n", encoding="utf-8")
    roster = tmp_path / "roster.csv"
    roster.write_text(
        "id,name,email\n4411,John Smith,js@uni.edu\n4412,Jane Doe,jd@uni.edu\n", encoding="utf-8"
    )
    assert grade(handout["bundle"], subs, tmp_path / "out", "--roster", roster) == 0
    got = outputs(tmp_path / "out")
    john = got["book"]["smithjohn_4411"]
    assert john["status"] == "not_a_notebook" and "smithjohn_4411_100_softmax.py" in john["notes"]
    assert got["students"]["smithjohn_4411"]["status"] == "not_a_notebook"
    assert got["summary"]["ignored"] == []
    assert "missing" not in {r["status"] for r in got["book"].values()}


LEAKY = {
    "ch01.stable_softmax": (
        "import numpy as np\n"
        "def stable_softmax(x):\n"
        "    tag = 'LEAK' + str(np.asarray(x, dtype=float).ravel()[:4].round(3).tolist())\n"
        "    print(tag)\n"
        "    raise ValueError(tag)\n"
    ),
    "ch01.temperature_softmax": (
        "import os, sys\nimport numpy as np\n"
        "def temperature_softmax(logits, temperature):\n"
        "    tag = 'LEAK' + str(np.asarray(logits, dtype=float).ravel()[:4].round(3).tolist())\n"
        "    if np.any(np.asarray(temperature) != 1.0):\n"
        "        print(tag, file=sys.stderr, flush=True)\n"
        "        os._exit(3)\n"
        "    return np.zeros_like(logits)\n"
    ),
    # a hidden case alone (no public case has these shapes) ends the process with a code from its shape
    "ch01.entropy_gradient": (
        "import os\nimport numpy as np\n"
        "def entropy_gradient(x):\n"
        "    if np.shape(x) not in ((3,), (3, 4), (4,), (2, 3, 3), (2, 3), (2, 4)):\n"
        "        os._exit(37 + np.shape(x)[-1])\n"
        "    return np.zeros(np.shape(x))\n"
    ),
}


def _tag(x) -> str:
    return "LEAK" + str(np.asarray(x, dtype=float).ravel()[:4].round(3).tolist())


def test_hidden_inputs_reach_no_output(handout, tmp_path):
    """A function that raises and prints its inputs: the hidden ones appear in no output file, the
    feedback still names the failed hidden case and the exception's type."""
    subs = tmp_path / "subs"  # a Moodle name: its row in moodle.csv carries a comment too
    put(
        subs, "Lee Ky_301_assignsubmission_file_01_softmax.ipynb", answered(handout["student"]["ch01"], LEAKY)
    )
    out = tmp_path / "out"
    assert grade(handout["bundle"], subs, out) == 0
    hidden = load_hidden_cases(handout["bundle"])
    secrets = {_tag(c.inputs["x"]) for c in hidden["ch01.stable_softmax"]()}
    secrets |= {_tag(c.inputs["logits"]) for c in hidden["ch01.temperature_softmax"]()}
    public = {_tag(c.inputs["x"]) for c in get("ch01.stable_softmax").public_cases()}
    assert secrets and not secrets & public
    texts = []
    for path in sorted(p for p in out.rglob("*") if p.is_file()):
        if path.suffix == ".zip":  # Moodle's feedback zip: its files, read as text
            with zipfile.ZipFile(path) as z:
                texts += [z.read(n).decode("utf-8") for n in z.namelist()]
            continue
        texts.append(path.read_bytes().decode("utf-8"))
    everything = "\n".join(texts)
    first = hidden["ch01.entropy_gradient"]()[0].inputs["x"]
    secrets.add(f"exit code {37 + first.shape[-1]}")
    assert [s for s in secrets if s in everything] == []
    killer = len(get("ch01.entropy_gradient").public_cases()) + 1  # the first hidden case
    assert (
        f"case {killer} of ch01.entropy_gradient ended the grading process: that exercise lost" in everything
    )
    assert any(s in everything for s in public)  # a public case's message is shown, as it should be
    assert "Participant 301" in (out / "lms" / "moodle.csv").read_text(encoding="utf-8")
    feedback = (out / "feedback" / "Lee_Ky_301-d7b6f0f4.txt").read_text(encoding="utf-8")
    line = next(x for x in feedback.splitlines() if "✗ hidden: float32 logits in the hundreds" in x)
    assert "raised ValueError" in line and "the hidden case's details are not shown" in line
    assert "reaches for os._exit" in feedback  # a note for the instructor


def test_late_work_is_penalised_and_extensions_count(handout, tmp_path, capsys):
    ch01 = handout["student"]["ch01"]
    subs = tmp_path / "subs"
    due = time.time() - 10 * 86400
    late_file = put(subs, "smithjohn_LATE_4411_100_01_softmax.ipynb", solved(ch01, CH01))
    extended = put(subs, "doejane_LATE_4412_101_01_softmax.ipynb", solved(ch01, CH01))
    on_time = put(subs, "ngcarl_4413_102_01_softmax.ipynb", solved(ch01, CH01))
    for path, when in ((late_file, due + 1.5 * 86400), (extended, due + 1.5 * 86400), (on_time, due - 3600)):
        os.utime(path, (when, when))
    roster = tmp_path / "roster.csv"
    roster.write_text(
        "id,name,email,extension_days\n4411,John Smith,js@uni.edu,\n4412,Jane Doe,jd@uni.edu,2\n"
        "4413,Carl Ng,cn@uni.edu,0\n",
        encoding="utf-8",
    )
    when = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(due))
    args = ["--roster", roster, "--late-penalty", "10%/day max 50%", "--due", when]
    assert grade(handout["bundle"], subs, tmp_path / "out", *args) == 0
    got = outputs(tmp_path / "out")
    john, jane, carl = (got["book"][k] for k in ("smithjohn_4411", "doejane_4412", "ngcarl_4413"))
    assert (john["late_penalty"], john["earned"], float(john["total"])) == (
        "20%",
        str(POINTS01),
        POINTS01 * 0.8,
    )
    assert john["days_late"] == "1.5" and john["late"] == "late"
    assert (jane["late_penalty"], jane["late"], jane["total"]) == ("", "", str(POINTS01))  # her extension
    assert carl["late_penalty"] == "" and carl["total"] == str(POINTS01)
    assert got["students"]["smithjohn_4411"]["late_penalty"]["percent"] == 20
    assert "Late penalty: 20% of the points earned" in got["feedback"]["smithjohn_4411"]
    assert "10%/day" in got["feedback"]["smithjohn_4411"]
    summary = (tmp_path / "out" / "summary.html").read_text(encoding="utf-8")
    assert "0 missing (no submission), 1 late, 1 with a late penalty" in summary  # the report agrees
    moodle_or_canvas = {r["ID"]: float(r[list(r)[-1]]) for r in got["canvas"][1:]}
    assert moodle_or_canvas["4411"] == pytest.approx(POINTS01 * 0.8)

    # Canvas's LATE flag alone (no --due): one day; the extension waives it
    args = ["--roster", roster, "--late-penalty", "10%/day"]
    assert grade(handout["bundle"], subs, tmp_path / "flag", *args) == 0
    flag = outputs(tmp_path / "flag")["book"]
    assert flag["smithjohn_4411"]["late_penalty"] == "10%" and flag["doejane_4412"]["late_penalty"] == ""

    # --due alone: how late, no penalty
    assert grade(handout["bundle"], subs, tmp_path / "due", "--roster", roster, "--due", when) == 0
    due_only = outputs(tmp_path / "due")
    john = due_only["book"]["smithjohn_4411"]
    assert (john["days_late"], john["late_penalty"], john["total"]) == ("1.5", "", str(POINTS01))
    assert (
        "Late: handed in" in due_only["feedback"]["smithjohn_4411"]
        and "no late penalty" in due_only["feedback"]["smithjohn_4411"]
    )

    assert grade(handout["bundle"], subs, tmp_path / "bad", "--late-penalty", "ten percent") == 1
    assert "--late-penalty 'ten percent'" in capsys.readouterr().err
