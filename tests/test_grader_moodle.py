"""A Moodle course graded as Moodle writes its files today: its 4.1+ download (participant folders
``Full Name_ID_assignsubmission_file``) and the older one (with a trailing ``_``), its grading
worksheet as the class list and the record of submission times, lateness from the worksheet and not
from the zip's file times, one notebook per chapter, a chapter-6 bundle meeting a chapter-11
notebook, ``--update`` with one student's folder, a case slow only for large inputs, and the files
a course imports (``lms/moodle.csv``, ``lms/moodle_feedback.zip``, Gradescope's results).

The fixtures are laid out as Moodle writes them: every file of the download carries one time (the
download's), and the worksheet has Moodle's header and ``userdate()`` dates, which name no zone.
"""

from __future__ import annotations

import csv
import json
import os
import zipfile
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from grader_support import chapter_notebook, code, needs_bwrap

from attncourse.cli import main
from attncourse.exercises import all_exercises, get

ROOT = Path(__file__).resolve().parents[1]
FAST = ["--timeout", "120", "--cell-timeout", "20", "--case-timeout", "3", "--jobs", "2"]
CH06 = [ex.id for ex in all_exercises("ch06")]
POINTS = sum(ex.points for ex in all_exercises("ch06"))
DUE = datetime(2026, 11, 20, 23, 59, tzinfo=timezone.utc)
DOWNLOAD = (DUE + timedelta(days=7, hours=10)).timestamp()  # when the instructor downloaded the zip
HEADER = [
    "Identifier",
    "Full name",
    "Email address",
    "Status",
    "Grade",
    "Maximum Grade",
    "Grade can be changed",
    "Last modified (submission)",
    "Last modified (grade)",
    "Feedback comments",
]

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def handout(tmp_path_factory):
    """Chapters 6 and 11 of the book, handed out with ``assign --chapter ch06``: the bundle holds ch06."""
    needs_bwrap()
    base = tmp_path_factory.mktemp("moodle")
    book = base / "book"
    book.mkdir()
    names = {"ch06": "06_masked_attention.ipynb", "ch11": "11_linear_attention.ipynb"}
    for chapter, name in names.items():
        (book / name).write_text(json.dumps(chapter_notebook(chapter, chapter)), encoding="utf-8")
    args = ["assign", str(book), str(base / "handout"), "--tests", str(ROOT / "hidden_cases")]
    assert main(args + ["--chapter", "ch06"]) == 0
    student = json.loads((base / "handout" / "student" / names["ch06"]).read_text(encoding="utf-8"))
    return {
        "bundle": base / "handout" / "grading",
        "student": student,
        "ch11": chapter_notebook("ch11", "ch11"),
    }


def answered(student: dict, answers: dict) -> dict:
    nb = json.loads(json.dumps(student))
    for cell in nb["cells"]:
        ex_id = cell["metadata"].get("attncourse", {}).get("exercise")
        if ex_id in answers:
            cell["source"] = get(ex_id).header + "\n" + answers[ex_id]
    return nb


def solved(student: dict, ids=CH06) -> dict:
    return answered(student, {ex_id: get(ex_id).solution_code() for ex_id in ids})


def moodle_date(when: datetime) -> str:
    """``userdate()``'s default form (strftimedaydatetime, day and hour without a leading 0)."""
    hour = when.hour % 12 or 12
    return f"{when:%A}, {when.day} {when:%B %Y}, {hour}:{when:%M} {when:%p}"


def download(folder: Path, students: list, *, trailing: str) -> None:
    """Moodle's download: one folder per participant; every file stamped with the download's time."""
    for name, pid, notebooks, _ in students:
        if not notebooks:
            continue
        sub = folder / f"{name}_{pid}_assignsubmission_file{trailing}"
        sub.mkdir(parents=True)
        for file, nb in notebooks.items():
            path = sub / file
            path.write_text(json.dumps(nb), encoding="utf-8")
            os.utime(path, (DOWNLOAD, DOWNLOAD))


def worksheet(path: Path, students: list) -> None:
    """Moodle's grading worksheet (Download grading worksheet), as an English-language Moodle writes it."""
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(HEADER)
        for name, pid, notebooks, when in students:
            email = name.split()[0].lower() + "@uni.example"
            status = "Submitted for grading" if notebooks else "No submission"
            w.writerow(
                [f"Participant {pid}", name, email, status, "", f"{POINTS:.2f}", "Yes",
                 moodle_date(when) if when else "-", "-", ""]
            )  # fmt: skip


def read_csv(path: Path) -> list:
    with open(path, newline="", encoding="utf-8-sig") as f:
        return list(csv.DictReader(f))


def grade(bundle: Path, *args) -> int:
    return main(["grade", str(bundle), *map(str, args), *FAST])


def a_class(student: dict) -> list:
    """(full name, participant id, notebooks, submitted at) for a small Moodle class."""
    partial = solved(student, CH06[:3])
    return [
        ("Ana María López", 510001, {"06_masked_attention.ipynb": solved(student)}, DUE - timedelta(hours=1)),
        ("Bo Li", 510002, {"06_masked_attention.ipynb": partial}, DUE - timedelta(days=1)),
        (
            "Carl Ng",
            510003,
            {"06_masked_attention.ipynb": solved(student)},
            DUE + timedelta(hours=8, minutes=1),
        ),
        ("Dana Cruz", 510004, {"06_masked_attention.ipynb": solved(student)}, DUE + timedelta(days=9)),
        ("Eve Stone", 510005, {}, None),
    ]


@pytest.mark.parametrize("trailing", ["", "_"], ids=["moodle-4.1+", "moodle-before-4.1"])
def test_a_moodle_download_with_its_worksheet_is_graded_by_the_worksheets_times(
    handout, tmp_path, capsys, trailing
):
    students = a_class(handout["student"])
    subs = tmp_path / "download"
    download(subs, students, trailing=trailing)
    worksheet(tmp_path / "worksheet.csv", students)
    out = tmp_path / "out"
    args = [subs, out, "--roster", tmp_path / "worksheet.csv", "--lms-timezone", "UTC"]
    args += ["--due", DUE.isoformat(), "--late-penalty", "10%/day max 50%"]
    assert grade(handout["bundle"], *args) == 0
    printed = capsys.readouterr().out
    assert "read in UTC" in printed and "match no student" not in printed

    book = {r["student"]: r for r in read_csv(out / "gradebook.csv")[1:]}
    assert len(book) == 5, sorted(book)
    partial = sum(get(ex).points for ex in CH06[:3])
    expected = {  # total, penalty: late by the worksheet's time, never by the zip's (7 days late)
        "Ana María López": (POINTS, ""),
        "Bo Li": (partial, ""),
        "Carl Ng": (POINTS * 0.9, "10%"),  # 8 h 01 min late: one started day
        "Dana Cruz": (POINTS * 0.5, "50%"),  # 9 days late: the cap
        "Eve Stone": (0, ""),
    }
    by_name = {r["name"]: r for r in book.values()}
    for name, (total, penalty) in expected.items():
        assert float(by_name[name]["total"]) == pytest.approx(total), name
        assert by_name[name]["late_penalty"] == penalty, name
    assert by_name["Eve Stone"]["status"] == "missing"
    feedback = {r["name"]: (out / r["feedback"]).read_text(encoding="utf-8") for r in book.values()}
    carl = feedback["Carl Ng"]
    assert "8 h 01 min after the due date" in carl and "Moodle's grading worksheet" in carl

    # lms/moodle.csv: every participant, by Moodle's own id, with the penalised grade
    moodle = read_csv(out / "lms" / "moodle.csv")
    assert (out / "lms" / "moodle.csv").read_bytes().startswith(b"\xef\xbb\xbf")  # Excel reads UTF-8
    grades = {r["Identifier"]: float(r["Grade"]) for r in moodle}
    assert grades == {f"Participant {pid}": pytest.approx(expected[name][0]) for name, pid, _, _ in students}
    # the comment names no file of ours the student never sees, only the one the zip below gives them
    own = {Path(r["feedback"]).name for r in book.values()}
    assert not any(name in r["Feedback comments"] for r in moodle for name in own)
    assert all("feedback.txt" in r["Feedback comments"] for r in moodle if r["Status"] != "No submission")
    # the feedback files, as Moodle's importer reads them: Full Name_ID_assignfeedback_file/
    with zipfile.ZipFile(out / "lms" / "moodle_feedback.zip") as z:
        names = sorted(z.namelist())
    assert names == sorted(
        f"{name}_{pid}_assignfeedback_file/feedback.txt" for name, pid, nbs, _ in students if nbs
    )

    # Gradescope's file for the late student says why its score is below its tests' sum
    gs = json.loads(
        (out / "gradescope" / (Path(book["Carl Ng_510003"]["feedback"]).stem + ".json")).read_text()
    )
    assert sum(t["score"] for t in gs["tests"]) == pytest.approx(gs["score"])
    assert any(t["name"] == "Late penalty" for t in gs["tests"]) and "Late penalty" in gs["output"]

    # summary.html: the per-student table and what needs a look
    page = (out / "summary.html").read_text(encoding="utf-8")
    assert "Dana Cruz" in page and "9 days 0 h 00 min" in page and "feedback/" in page
    assert "Needs a look" in page and "median" in page.lower()


def test_submissions_that_match_no_one_stop_the_run_loudly(handout, tmp_path, capsys):
    students = a_class(handout["student"])[:1]
    subs = tmp_path / "download"
    download(subs, students, trailing="")
    worksheet(tmp_path / "worksheet.csv", [("Zed Other", 999, {"x": 1}, DUE)])
    out = tmp_path / "out"
    assert grade(handout["bundle"], subs, out, "--roster", tmp_path / "worksheet.csv") == 1
    captured = capsys.readouterr()
    assert "match no student" in captured.out + captured.err
    assert not (out / "lms").exists()  # nothing that would import wrong or empty grades
    assert "match no student" in (out / "summary.html").read_text(encoding="utf-8")
    args = [subs, tmp_path / "allowed", "--roster", tmp_path / "worksheet.csv", "--allow-unmatched"]
    assert grade(handout["bundle"], *args) == 0
    assert (tmp_path / "allowed" / "lms" / "moodle.csv").is_file()


def test_of_two_notebooks_with_one_time_the_handed_out_name_counts_and_is_named(handout, tmp_path):
    subs = tmp_path / "download"
    # the older file: a wrong causal mask (the diagonal left out), the rest as handed out
    wrong = answered(
        handout["student"],
        {
            "ch06.make_causal_mask": "def make_causal_mask(L, S):\n    return np.tril(np.ones((L, S), dtype=bool), -1)\n"
        },
    )
    students = [
        ("Ana Lee", 7, {"06_masked_attention.ipynb": solved(handout["student"]), "06_masked_attention_old.ipynb": wrong}, DUE)
    ]  # fmt: skip
    download(subs, students, trailing="")
    assert grade(handout["bundle"], subs, tmp_path / "out") == 0
    row = read_csv(tmp_path / "out" / "gradebook.csv")[1]
    assert float(row["total"]) == POINTS
    assert (
        "06_masked_attention.ipynb counts" in row["notes"]
        and "not 06_masked_attention_old.ipynb" in row["notes"]
    )
    summary = json.loads((tmp_path / "out" / "results.json").read_text(encoding="ascii"))
    assert summary["students"][0]["flags"]  # on the needs-a-look list


def test_a_chapter_11_notebook_is_other_chapter_with_a_chapter_6_bundle(handout, tmp_path, capsys):
    subs = tmp_path / "subs"
    subs.mkdir()
    for name in ("ann", "bob"):
        (subs / f"{name}.ipynb").write_text(json.dumps(solved(handout["student"])), encoding="utf-8")
    (subs / "cat.ipynb").write_text(json.dumps(handout["ch11"]), encoding="utf-8")
    assert grade(handout["bundle"], subs, tmp_path / "out") == 0
    printed = capsys.readouterr().out
    assert "of 3 submissions" in printed, printed
    summary = json.loads((tmp_path / "out" / "results.json").read_text(encoding="ascii"))
    cat = next(s for s in summary["students"] if s["student"] == "cat")
    assert cat["status"] == "other_chapter" and not any(cat["seconds"].values())  # not run


def test_update_takes_one_students_folder_and_refuses_a_bare_notebook(handout, tmp_path, capsys):
    students = a_class(handout["student"])[:2]
    subs = tmp_path / "download"
    download(subs, students, trailing="")
    out = tmp_path / "out"
    assert grade(handout["bundle"], subs, out) == 0
    before = {r["student"]: r for r in read_csv(out / "gradebook.csv")[1:]}
    again = tmp_path / "again" / "Bo Li_510002_assignsubmission_file"
    again.mkdir(parents=True)
    (again / "06_masked_attention.ipynb").write_text(json.dumps(solved(handout["student"])), encoding="utf-8")
    assert main(["grade", str(handout["bundle"]), str(again), "--update", str(out), *FAST]) == 0
    after = {r["student"]: r for r in read_csv(out / "gradebook.csv")[1:]}
    assert sorted(after) == sorted(before) == ["Ana María López_510001", "Bo Li_510002"]
    assert float(after["Bo Li_510002"]["total"]) == POINTS != float(before["Bo Li_510002"]["total"])
    # a notebook that names no student: refused, nothing changed
    capsys.readouterr()
    bare = again / "06_masked_attention.ipynb"
    loose = tmp_path / "loose" / bare.name
    loose.parent.mkdir()
    loose.write_bytes(bare.read_bytes())
    assert main(["grade", str(handout["bundle"]), str(loose), "--update", str(out), *FAST]) == 1
    assert "matches no student" in capsys.readouterr().err
    assert {r["student"] for r in read_csv(out / "gradebook.csv")[1:]} == set(after)


SLOW_FOR_LARGE = """def make_causal_mask(L, S):
    import time
    if L >= 6:
        time.sleep(60)
    i = np.arange(L)[:, None]
    j = np.arange(S)[None, :]
    return j <= i
"""


def test_a_case_that_times_out_costs_itself_not_the_cases_after_it(handout, tmp_path):
    subs = tmp_path / "subs"
    subs.mkdir()
    nb = answered(handout["student"], {"ch06.make_causal_mask": SLOW_FOR_LARGE})
    (subs / "slow.ipynb").write_text(json.dumps(nb), encoding="utf-8")
    assert (
        main(
            [
                "grade",
                str(handout["bundle"]),
                str(subs),
                str(tmp_path / "out"),
                *FAST[:4],
                "--case-timeout",
                "1",
            ]
        )
        == 0
    )
    summary = json.loads((tmp_path / "out" / "results.json").read_text(encoding="ascii"))
    cases = summary["students"][0]["exercises"]["ch06.make_causal_mask"]["results"]
    statuses = [(c["name"], c["passed"]) for c in cases]
    first_slow = next(i for i, c in enumerate(cases) if not c["passed"])
    assert any(c["passed"] for c in cases[first_slow + 1 :]), statuses  # the small cases after it ran
    assert not cases[first_slow]["passed"] and any(c["passed"] for c in cases[:first_slow]), statuses


def test_a_cell_stopped_inside_a_c_call_is_not_called_tampering(handout, tmp_path):
    subs = tmp_path / "subs"
    subs.mkdir()
    nb = solved(handout["student"])
    nb["cells"].append(code("import os\nwhile True:\n    os.stat('.')\n"))
    (subs / "busy.ipynb").write_text(json.dumps(nb), encoding="utf-8")
    args = [
        "grade",
        str(handout["bundle"]),
        str(subs),
        str(tmp_path / "out"),
        "--cell-timeout",
        "2",
        "--jobs",
        "1",
    ]
    assert main(args) == 0
    row = read_csv(tmp_path / "out" / "gradebook.csv")[1]
    assert "setprofile" not in row["notes"] and "shortcut" not in row["notes"], row["notes"]
    assert "cell limit" in row["notes"]
    assert float(row["total"]) == POINTS
