"""Grading for an LMS: Canvas's and Moodle's download names, a roster, the grade imports read back
as Canvas and Moodle read them, ``grade --update``, and the Gradescope autograder run in a
folder laid out as Gradescope lays it out."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from grader_support import needs_bwrap

from attncourse.cli import main
from attncourse.exercises import all_exercises, chapter_cells, get
from attncourse.grading.lms import CANVAS_COLUMNS, MOODLE_COLUMNS
from attncourse.grading.roster import Student, match_roster, parse_lms_name
from attncourse.grading.submissions import discover

ROOT = Path(__file__).resolve().parents[1]
FAST = ["--timeout", "60", "--cell-timeout", "20", "--case-timeout", "5", "--jobs", "2"]
POINTS = sum(ex.points for ex in all_exercises("ch01"))


def test_canvas_and_moodle_names_are_read():
    c = parse_lms_name("smithjohn_LATE_4411_98001_01_softmax.ipynb")
    assert (c.key, c.lms, c.lms_id, c.name, c.late, c.original) == (
        "smithjohn_4411",
        "canvas",
        "4411",
        "smithjohn",
        True,
        "01_softmax.ipynb",
    )
    c = parse_lms_name("doejane_4412_98002_01_softmax-1.ipynb")
    assert (c.key, c.late, c.original) == ("doejane_4412", False, "01_softmax-1.ipynb")
    m = parse_lms_name("Ana María López_208_assignsubmission_file_01_softmax.ipynb")
    assert (m.key, m.lms, m.lms_id, m.name) == ("Ana María López_208", "moodle", "208", "Ana María López")
    assert parse_lms_name("Bo Li_209_assignsubmission_file_", folder=True).lms_id == "209"
    assert parse_lms_name("alice.ipynb").lms == "" and parse_lms_name("alice.ipynb").key == "alice"


def test_the_files_of_one_canvas_student_are_one_submission(tmp_path):
    for name in (
        "smithjohn_late_4411_98001_part1.ipynb",
        "smithjohn_late_4411_98001_part2.ipynb",
        "bob.ipynb",
    ):
        (tmp_path / name).write_text("{}")
    (tmp_path / "Bo Li_209_assignsubmission_file_").mkdir()
    (tmp_path / "Bo Li_209_assignsubmission_file_" / "01_softmax.ipynb").write_text("{}")
    subs = {s.student: s for s in discover(str(tmp_path))[0]}
    assert sorted(subs) == ["Bo Li_209", "bob", "smithjohn_4411"]
    assert len(subs["smithjohn_4411"].paths) == 2 and subs["smithjohn_4411"].lms.late
    assert subs["Bo Li_209"].lms.lms == "moodle" and subs["bob"].lms is None


def test_the_roster_matches_ids_names_emails_and_aliases():
    roster = [
        Student("4411", "John Smith", "js@uni.edu"),
        Student("s2", "Doe, Jane", "jdoe@uni.edu"),
        Student("s3", "Carl Ng", "carl@uni.edu", ["cng", "carlito"]),
        Student("s4", "Nobody Here", "nh@uni.edu"),
    ]
    subs = [
        ("smithjohn_4411", parse_lms_name("smithjohn_4411_1_a.ipynb")),  # Canvas user id
        ("janedoe", parse_lms_name("janedoe.ipynb")),  # name, either order
        ("carlito", parse_lms_name("carlito.ipynb")),  # alias
        ("stranger", parse_lms_name("stranger.ipynb")),
    ]
    found = match_roster(subs, roster)
    assert {k: s.id for k, s in found.by_key.items()} == {
        "smithjohn_4411": "4411",
        "janedoe": "s2",
        "carlito": "s3",
    }
    assert [s.id for s in found.missing] == ["s4"] and found.unmatched == ["stranger"]


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    needs_bwrap()
    base = tmp_path_factory.mktemp("lms")
    (base / "book").mkdir()
    nb = {"cells": chapter_cells("ch01"), "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (base / "book" / "01_softmax.ipynb").write_text(json.dumps(nb), encoding="utf-8")
    assert (
        main(["assign", str(base / "book"), str(base / "handout"), "--tests", str(ROOT / "hidden_cases")])
        == 0
    )
    student = json.loads((base / "handout" / "student" / "01_softmax.ipynb").read_text(encoding="utf-8"))
    return {"base": base, "bundle": base / "handout" / "grading", "student": student}


def solved(student: dict, *ids: str) -> dict:
    nb = json.loads(json.dumps(student))
    for cell in nb["cells"]:
        ex_id = cell["metadata"].get("attncourse", {}).get("exercise")
        if ex_id in ids:
            cell["source"] = get(ex_id).header + "\n" + get(ex_id).solution_code()
    return nb


ALL = [ex.id for ex in all_exercises("ch01")]


def read_csv(path: Path) -> list:
    with open(path, newline="", encoding="utf-8-sig") as f:
        return list(csv.reader(f))


@pytest.mark.slow
def test_roster_gradebook_lms_exports_and_update(course, tmp_path, capsys):
    subs = tmp_path / "subs"
    subs.mkdir()
    write = lambda name, nb: (subs / name).write_text(json.dumps(nb), encoding="utf-8")  # noqa: E731
    write("smithjohn_late_4411_98001_01_softmax.ipynb", solved(course["student"], *ALL))
    write("Jane Doe_208_assignsubmission_file_01_softmax.ipynb", solved(course["student"], ALL[0]))
    write("stranger.ipynb", solved(course["student"]))
    roster = tmp_path / "roster.csv"
    roster.write_text(
        "id,name,email,aliases,moodle_id\n4411,John Smith,js@uni.edu,,\n208,Jane Doe,jd@uni.edu,,\n"
        "77,Ann Absent,aa@uni.edu,ann,77\n",
        encoding="utf-8",
    )
    out = tmp_path / "results"
    args = ["grade", str(course["bundle"]), str(subs), str(out), "--roster", str(roster), *FAST]
    assert main(args + ["--assignment-name", "Softmax (123)"]) == 1  # stranger matches no one: stop
    assert not (out / "lms").exists() and "match no student" in capsys.readouterr().err
    assert main(args + ["--assignment-name", "Softmax (123)", "--allow-unmatched", "--force"]) == 0
    captured = capsys.readouterr()
    printed = captured.out
    assert "1 submission(s) match no student of the roster" in printed and "stranger" in printed
    assert "graded 3/3 notebooks · 0:" in captured.err  # the progress line, ended at the last notebook
    summary_page = (out / "summary.html").read_text(encoding="utf-8")
    assert "1 missing (no submission), 1 late" in summary_page
    # the per-student table lists everyone, the missing too; the stranger is on the banner
    assert "<bdi>Ann Absent</bdi>" in summary_page and "match no student of the roster" in summary_page

    with open(out / "gradebook.csv", newline="", encoding="utf-8-sig") as f:
        rows = list(csv.DictReader(f))
    assert rows[0]["student"] == "Points Possible" and rows[0]["total"] == str(POINTS)
    assert [rows[0][ex] for ex in ALL] == [str(get(ex).points) for ex in ALL]
    by = {r["student"]: r for r in rows[1:]}
    assert sorted(by) == ["Ann Absent", "Jane Doe_208", "smithjohn_4411", "stranger"]
    assert (by["smithjohn_4411"]["id"], by["smithjohn_4411"]["email"], by["smithjohn_4411"]["late"]) == (
        "4411",
        "js@uni.edu",
        "late",
    )
    assert by["smithjohn_4411"]["total"] == str(POINTS)
    assert by["Ann Absent"]["status"] == "missing" and by["Ann Absent"]["total"] == "0"
    assert "matches no student of the roster" in by["stranger"]["notes"]
    for row in by.values():
        assert (out / row["feedback"]).is_file()

    # Canvas: columns by name, the Points Possible row, students by ID (Canvas's user id) or by
    # SIS User ID (the roster's id), one kind of id per column
    canvas = list(csv.DictReader(open(out / "lms" / "canvas.csv", newline="", encoding="utf-8-sig")))
    assert list(canvas[0]) == [*CANVAS_COLUMNS, "Softmax (123)"]
    assert canvas[0]["Student"] == "Points Possible" and float(canvas[0]["Softmax (123)"]) == POINTS
    scores = {(r["ID"], r["SIS User ID"]): float(r["Softmax (123)"]) for r in canvas[1:]}
    assert scores == {("4411", "4411"): POINTS, ("", "208"): float(get(ALL[0]).points), ("", "77"): 0.0}
    # Moodle: the grading worksheet's columns; Identifier "Participant N" and Grade read back
    moodle = list(csv.DictReader(open(out / "lms" / "moodle.csv", newline="", encoding="utf-8-sig")))
    assert list(moodle[0]) == list(MOODLE_COLUMNS)
    grades = {r["Identifier"]: float(r["Grade"]) for r in moodle}
    assert grades == {"Participant 208": float(get(ALL[0]).points), "Participant 77": 0}  # Moodle's ids
    assert all(float(r["Maximum Grade"]) == POINTS for r in moodle)

    # Gradescope's format for each student
    gs = json.loads((out / "gradescope" / "smithjohn_4411.json").read_text(encoding="utf-8"))
    assert gs["score"] == POINTS and sum(t["max_score"] for t in gs["tests"]) == POINTS
    assert {t["visibility"] for t in gs["tests"]} == {"visible", "after_published"}
    assert all("hidden:" in t["output"] for t in gs["tests"] if t["visibility"] == "after_published")
    assert all("hidden:" not in t["output"] for t in gs["tests"] if t["visibility"] == "visible")

    # --update: Jane hands in again (one file); her row changes, nobody else's
    again = tmp_path / "late" / "Jane Doe_208_assignsubmission_file_01_softmax.ipynb"
    again.parent.mkdir()
    again.write_text(json.dumps(solved(course["student"], *ALL)), encoding="utf-8")
    before = {
        r["student"]: r for r in csv.DictReader(open(out / "gradebook.csv", newline="", encoding="utf-8-sig"))
    }
    assert (
        main(
            ["grade", str(course["bundle"]), str(again), "--update", str(out), "--roster", str(roster), *FAST]
        )
        == 0
    )
    after = {
        r["student"]: r for r in csv.DictReader(open(out / "gradebook.csv", newline="", encoding="utf-8-sig"))
    }
    assert sorted(after) == sorted(before)
    assert after["Jane Doe_208"]["total"] == str(POINTS) and before["Jane Doe_208"]["total"] != str(POINTS)
    assert all(after[k] == before[k] for k in before if k != "Jane Doe_208")
    summary = json.loads((out / "results.json").read_text(encoding="ascii"))
    assert summary["updates"][-1]["students"] == ["Jane Doe_208"]
    assert next(s for s in summary["students"] if s["student"] == "Jane Doe_208")["total"] == POINTS


@pytest.mark.slow
@pytest.mark.parametrize("no_bwrap", [False, True])
def test_the_gradescope_autograder_runs_in_gradescopes_layout(course, tmp_path, no_bwrap):
    assert main(["gradescope", str(course["bundle"]), str(tmp_path / "package")]) == 0
    root = tmp_path / "autograder"
    with zipfile.ZipFile(tmp_path / "package" / "autograder.zip") as z:
        z.extractall(root / "source")
        names = z.namelist()
    assert "setup.sh" in names and "run_autograder" in names and "bundle/manifest.json" in names
    (root / "submission").mkdir()
    (root / "results").mkdir()
    nb = solved(course["student"], *ALL[:2])
    (root / "submission" / "01_softmax.ipynb").write_text(json.dumps(nb), encoding="utf-8")
    run = root / "source" / "run_autograder"
    os.chmod(run, 0o755)
    env = {
        **os.environ,
        "AUTOGRADER_ROOT": str(root),
        "AUTOGRADER_PYTHON": sys.executable,
        "OMP_NUM_THREADS": "1",
    }
    if no_bwrap:
        env["ATTNCOURSE_NO_BWRAP"] = "1"
    done = subprocess.run([str(run)], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    data = json.loads((root / "results" / "results.json").read_text(encoding="utf-8"))
    assert data["score"] == get(ALL[0]).points + get(ALL[1]).points
    assert [t["name"] for t in data["tests"] if t["visibility"] == "visible"][0].startswith("Exercise 1.1")
    assert all(set(t) >= {"name", "score", "max_score", "output", "visibility"} for t in data["tests"])
    said = "bubblewrap cannot run in this container" in done.stdout
    assert said == no_bwrap, done.stdout[-3000:]
    assert ("bubblewrap cannot run in this container" in data["output"]) == no_bwrap, (
        data["output"] and ("bubblewrap cannot run in this container" in data["output"]) == no_bwrap
    )


def _nobody_python(root: Path) -> Path:
    """``root/venv``, a venv of ``/usr/bin/python3`` as setup.sh makes one, seeing this interpreter's
    packages (numpy, torch), which user ``nobody`` can run; skips saying why when it cannot be made."""
    import shutil
    import sysconfig

    if os.geteuid() != 0:
        pytest.skip("the autograder runs notebooks as user nobody only when it runs as root")
    system = Path("/usr/bin/python3")
    if not system.exists() or shutil.which("bwrap") is None:
        pytest.skip("no /usr/bin/python3 to make a venv of, as setup.sh does")
    ours = f"{sys.version_info.major}.{sys.version_info.minor}"
    theirs = subprocess.run(
        [str(system), "-c", "import sys; print(f'{sys.version_info.major}.{sys.version_info.minor}')"],
        capture_output=True,
        text=True,
    ).stdout.strip()
    if theirs != ours:
        pytest.skip(f"/usr/bin/python3 is {theirs}, this Python {ours}: its packages would not load")
    venv = root / "venv"
    subprocess.run([str(system), "-m", "venv", "--without-pip", str(venv)], check=True, capture_output=True)
    site = venv / "lib" / f"python{ours}" / "site-packages"
    paths = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    (site / "packages.pth").write_text("\n".join(sorted(paths)) + "\n", encoding="utf-8")
    python = venv / "bin" / "python"
    check = subprocess.run([str(python), "-c", "import numpy"], user=65534, group=65534, capture_output=True)
    if check.returncode != 0:
        pytest.skip(f"user nobody cannot import numpy from {python}: {check.stderr.decode()[-300:]}")
    return python


@pytest.mark.slow
def test_the_gradescope_autograder_grades_as_nobody_without_bubblewrap(course, tmp_path):
    import shutil
    import tempfile

    assert main(["gradescope", str(course["bundle"]), str(tmp_path / "package")]) == 0
    # /autograder as in Gradescope's container, outside tmp_path (root's alone)
    root = Path(tempfile.mkdtemp(prefix="autograder-"))
    try:
        os.chmod(root, 0o755)
        python = _nobody_python(root)
        os.chmod(root, 0o700)  # closed, as mkdtemp makes it: run_autograder opens the way for nobody
        assert python == root / "venv" / "bin" / "python"  # run_autograder's Python, as setup.sh puts it
        with zipfile.ZipFile(tmp_path / "package" / "autograder.zip") as z:
            z.extractall(root / "source")
        (root / "submission").mkdir()
        nb = solved(course["student"], *ALL)
        (root / "submission" / "01_softmax.ipynb").write_text(json.dumps(nb), encoding="utf-8")
        run = root / "source" / "run_autograder"
        os.chmod(run, 0o755)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
        env.update(AUTOGRADER_ROOT=str(root), ATTNCOURSE_NO_BWRAP="1", OMP_NUM_THREADS="1")
        done = subprocess.run([str(run)], env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
        data = json.loads((root / "results" / "results.json").read_text(encoding="utf-8"))
        assert data["output"].startswith("Status: ok"), data["output"]
        assert data["score"] == POINTS, data["output"]
        assert "as user nobody" in data["output"] and "as user nobody" in done.stdout
        # and nothing says the opposite (the run's sandbox line, the --sandbox none warning)
        assert "sandbox: none" not in done.stdout and "with your permissions" not in done.stdout, done.stdout
        # the isolation that is left, and what is not, is said
        for words in ("a separate user", "resource limits", "no bubblewrap", "network"):
            assert words in data["output"], data["output"]
        # nothing of the grader's is left open to nobody: bundle and results are root's alone
        for folder in (root / "source" / "bundle", root / "results"):
            assert os.stat(folder).st_mode & 0o077 == 0
    finally:
        shutil.rmtree(root, ignore_errors=True)
