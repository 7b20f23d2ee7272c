"""`attncourse assign` and `attncourse grade`, on crafted submissions that try to break the grader.

The demo course is chapter 1's four exercises (8 points).  Each crafted student notebook is the
student version with some cells changed or added; the expected gradebook is written out in full.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from attncourse.cli import main
from attncourse.exercises import chapter_cells, get
from attncourse.exercises.grader import Limits, find_sandbox, grade

ROOT = Path(__file__).resolve().parents[1]
LIMITS = Limits(time_s=8, cell_s=2, case_s=1, memory_mb=2048)
SANDBOXES = ["auto", "hook"]  # auto is bubblewrap where it works; hook is the fallback everywhere


def demo_notebook() -> dict:
    cells = [{"cell_type": "markdown", "id": "title", "metadata": {}, "source": ["# Softmax exercises\n"]}]
    cells += chapter_cells("ch01")
    return {
        "cells": cells,
        "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }


def code(text: str) -> dict:
    return {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": text}


def answer(nb: dict, exercise_id: str, body: str, *, rename: str = "") -> None:
    """Put the student's own function into the exercise cell of ``exercise_id``."""
    for cell in nb["cells"]:
        if cell["metadata"].get("attncourse", {}).get("exercise") == exercise_id:
            cell["source"] = get(exercise_id).header + "\n" + body
            if rename:
                cell["metadata"]["attncourse"]["exercise"] = rename
            return
    raise AssertionError(exercise_id)


def solve(nb: dict, *exercise_ids: str) -> None:
    for ex_id in exercise_ids:
        answer(nb, ex_id, get(ex_id).solution_code())


ALL = ("ch01.temperature_softmax", "ch01.stable_softmax", "ch01.attention_entropy", "ch01.softmax_jacobian")
NAIVE = "def stable_softmax(x):\n    e = np.exp(x)\n    return e / e.sum(axis=-1, keepdims=True)\n"


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    """The solution notebook, the assigned bundle, and the crafted submissions."""
    base = tmp_path_factory.mktemp("course")
    (base / "book").mkdir()
    (base / "book" / "01_softmax.ipynb").write_text(json.dumps(demo_notebook()), encoding="utf-8")
    assert main(["assign", str(base / "book"), str(base / "out"), "--tests", str(ROOT / "grading")]) == 0
    student = json.loads((base / "out" / "student" / "01_softmax.ipynb").read_text(encoding="utf-8"))
    n = len(student["cells"])  # the crafted cells below are appended: cells n+1, n+2, ...
    subs = base / "submissions"
    subs.mkdir()
    canary = base / "canary.txt"
    canary.write_text("do not touch\n")

    def submit(name: str, nb) -> None:
        (subs / f"{name}.ipynb").write_text(nb if isinstance(nb, str) else json.dumps(nb), encoding="utf-8")

    def fresh(*solved: str) -> dict:
        nb = json.loads(json.dumps(student))
        solve(nb, *solved)
        return nb

    submit("alice", fresh(*ALL))
    bob = fresh("ch01.temperature_softmax", "ch01.softmax_jacobian")
    answer(bob, "ch01.stable_softmax", NAIVE)  # passes small logits, overflows on large ones
    submit("bob", bob)
    carol = fresh(*ALL[1:])
    answer(
        carol,
        "ch01.temperature_softmax",
        "def temperature_softmax(logits, temperature):\n    while True:\n        pass\n",
    )
    submit("carol", carol)
    dave = fresh(*ALL)
    dave["cells"].append(code("while True:\n    pass"))  # a cell that never ends: stopped at the cell limit
    submit("dave", dave)
    erin = fresh(*ALL)
    erin["cells"].append(
        code(
            "import time\nwhile True:\n    try:\n        time.sleep(5)\n    except BaseException:\n        pass"
        )
    )
    submit("erin", erin)  # swallows the cell limit too: killed at the wall-time limit
    frank = fresh(*ALL)
    frank["cells"].insert(3, code("import sys\nsys.exit(1)"))
    submit("frank", frank)
    grace = fresh(*ALL)
    grace["cells"].append(code("import os\nos._exit(3)"))
    submit("grace", grace)
    heidi = fresh(*ALL)
    heidi["cells"].append(code("print('x' * 30_000_000)\nfor i in range(100_000):\n    print(i)"))
    submit("heidi", heidi)
    ivan = fresh(*ALL)
    ivan["cells"] += [
        code(f"import os\nos.remove({str(canary)!r})"),
        code(f"open({str(canary)!r}, 'w').write('pwned')"),
        code(f"import shutil\nshutil.rmtree({str(subs)!r})"),
        code(f"import subprocess\nsubprocess.run(['rm', '-f', {str(canary)!r}])"),
        code(f"import os\nos.system('rm -f {canary}')"),
    ]
    submit("ivan", ivan)
    judy = fresh("ch01.stable_softmax", "ch01.attention_entropy", "ch01.softmax_jacobian")
    judy["cells"].append(
        code(
            "import attncourse, numpy\n"
            "attncourse.softmax = lambda x, axis=-1: numpy.ones_like(x) / x.shape[-1]\n"
            "numpy.allclose = lambda *a, **k: True\n"
            "numpy.testing.assert_allclose = lambda *a, **k: None\n"
            "import attncourse.exercises as ex\n"
            "ex.check = lambda *a, **k: print('full marks!')\n"
            "def temperature_softmax(logits, temperature):\n"
            "    return attncourse.softmax(logits / temperature)\n"
        )
    )
    submit("judy", judy)
    mallory = fresh()
    mallory["cells"].append(
        code(
            "import json\n"
            f"print(sorted(__import__('os').listdir({str(subs)!r})))\n"
            f"nb = json.load(open({str(subs / 'alice.ipynb')!r}))\n"
            "for cell in nb['cells']:\n"
            "    if cell['cell_type'] == 'code':\n"
            "        exec(''.join(cell['source']))\n"
        )
    )
    submit("mallory", mallory)
    submit("niaj", '{"cells": [ {"cell_type": "code", "source": "x = 1"')
    olivia = fresh(*ALL)
    answer(
        olivia,
        "ch01.stable_softmax",
        NAIVE.replace("def stable_softmax", "def my_softmax"),
        rename="ch01.my_softmax",
    )
    submit("olivia", olivia)
    peggy = fresh(*ALL)
    peggy["cells"].append(code("import numpy as np\nbig = np.ones(2**34)"))
    submit("peggy", peggy)
    quentin = fresh(*ALL[1:])  # forges result files for the temperature exercise, then leaves it a stub
    quentin["cells"].append(
        code(
            "import json, numpy as np\n"
            "for c in range(8):\n"
            "    np.save(f'results/0_{c}_0.npy', np.ones(3))\n"
            "    json.dump({'status': 'returned', 'n': 1}, open(f'results/0_{c}.json', 'w'))\n"
            "json.dump({'done': True}, open('results/done.json', 'w'))\n"
        )
    )
    submit("quentin", quentin)
    (subs / "trent").mkdir()  # one folder, two notebooks: the best answer to each exercise counts
    (subs / "trent" / "part1.ipynb").write_text(json.dumps(fresh(*ALL[:2])), encoding="utf-8")
    (subs / "trent" / "part2.ipynb").write_text(json.dumps(fresh(*ALL[2:])), encoding="utf-8")
    (subs / "uma").mkdir()  # her stubs, plus another notebook with someone's stable_softmax: no credit
    (subs / "uma" / "01_softmax.ipynb").write_text(json.dumps(fresh()), encoding="utf-8")
    scratchpad = {
        "cells": [code(get("ch01.stable_softmax").solution_code())],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    scratchpad["cells"][0]["source"] = "import numpy as np\n" + scratchpad["cells"][0]["source"]
    (subs / "uma" / "scratch.ipynb").write_text(json.dumps(scratchpad), encoding="utf-8")
    (subs / "notes.txt").write_text("not a notebook: ignored\n")
    return {"base": base, "bundle": base / "out" / "grading", "subs": subs, "canary": canary, "n": n}


EXPECTED = [
    # student, temperature (1), stable (2), entropy (2), jacobian (3), total, status, notes
    ["alice", "1", "2", "2", "3", "8", "ok", ""],
    ["bob", "1", "1", "0", "3", "5", "ok", ""],
    ["carol", "0", "2", "2", "3", "7", "ok", ""],
    ["dave", "1", "2", "2", "3", "8", "ok", "cells over the 2 s cell limit (stopped): {n+1}"],
    ["erin", "0", "0", "0", "0", "0", "timeout", "stopped at the 8 s time limit while running cell {n+1}"],
    ["frank", "1", "2", "2", "3", "8", "ok", "sys.exit() in cells 4 (ignored)"],
    [
        "grace",
        "0",
        "0",
        "0",
        "0",
        "0",
        "crashed",
        "the notebook ended the grading process early (exit code 3) while running cell {n+1}",
    ],
    ["heidi", "1", "2", "2", "3", "8", "ok", "printed more than 1000000 characters (cut)"],
    ["ivan", "1", "2", "2", "3", "8", "ok", "errors in cells {n+1}, {n+2}, {n+3}, {n+4}, {n+5}"],
    ["judy", "0", "2", "2", "3", "7", "ok", ""],
    ["mallory", "0", "0", "0", "0", "0", "ok", "errors in cells {n+1}"],
    [
        "niaj",
        "0",
        "0",
        "0",
        "0",
        "0",
        "malformed",
        "not a readable notebook: invalid JSON (Expecting ',' delimiter at line 1, column 52)",
    ],
    [
        "olivia",
        "1",
        "0",
        "2",
        "3",
        "6",
        "ok",
        "errors in cells 9; unknown exercise id 'ch01.my_softmax' in cell 8; not found: stable_softmax",
    ],
    ["peggy", "1", "2", "2", "3", "8", "ok", "errors in cells {n+1}"],
    ["quentin", "0", "2", "2", "3", "7", "ok", ""],
    ["trent", "1", "2", "2", "3", "8", "ok", ""],
    ["uma", "0", "0", "0", "0", "0", "ok", ""],
]


def snapshot(folder: Path) -> dict:
    return {
        str(p.relative_to(folder)): (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime_ns)
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def child_processes() -> list:
    psutil = pytest.importorskip("psutil")
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        cmdline = proc.info.get("cmdline") or []
        if any(part.endswith("_child.py") for part in cmdline):
            found.append(proc.pid)
    return found


@pytest.mark.parametrize("sandbox", SANDBOXES)
def test_crafted_submissions_give_the_expected_gradebook(course, tmp_path, sandbox):
    before, canary_before = snapshot(course["subs"]), snapshot(course["canary"].parent)
    temp_before = set(Path(tempfile.gettempdir()).glob("attncourse-grade-*"))
    out = tmp_path / "graded"
    results = grade(
        course["bundle"], course["subs"], out, limits=LIMITS, jobs=2, sandbox=sandbox, log=lambda s: None
    )

    with open(out / "gradebook.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    assert rows[0] == ["student", *ALL, "total", "out_of", "status", "notes"]
    n = course["n"]
    expected = [
        [
            r[0],
            *r[1:6],
            "8",
            r[6],
            r[7]
            .replace("{n+1}", str(n + 1))
            .replace("{n+2}", str(n + 2))
            .replace("{n+3}", str(n + 3))
            .replace("{n+4}", str(n + 4))
            .replace("{n+5}", str(n + 5)),
        ]
        for r in EXPECTED
    ]
    assert rows[1:] == expected

    # nothing outside the scratch folders changed, and nothing was left behind
    assert snapshot(course["subs"]) == before
    assert snapshot(course["canary"].parent) == canary_before
    assert course["canary"].read_text() == "do not touch\n"
    assert set(Path(tempfile.gettempdir()).glob("attncourse-grade-*")) == temp_before
    assert child_processes() == []

    feedback = {p.stem: p.read_text(encoding="utf-8") for p in (out / "feedback").glob("*.txt")}
    assert sorted(feedback) == sorted(r[0] for r in EXPECTED)
    assert "Total: 8 / 8 points" in feedback["alice"]
    assert "forgot to subtract the max: overflow to nan" in feedback["bob"]
    assert "✗ hidden: float16 logits up to 20" in feedback["bob"]
    assert "did not finish within 1 s (an endless loop?)" in feedback["carol"]
    assert "not attempted" in feedback["mallory"]
    assert "cell 4 called sys.exit(1); the grader carried on" in feedback["frank"]
    assert "raised MemoryError" in feedback["peggy"]
    assert "not attempted" in feedback["quentin"]
    summary = json.loads((out / "results.json").read_text())
    assert summary["sandbox"] == ("hook" if sandbox == "hook" else find_sandbox("auto").mode)
    assert [s["student"] for s in summary["students"]] == [r[0] for r in EXPECTED]
    assert {r.student: r.total for r in results}["bob"] == 5


def test_grade_refuses_to_overwrite_and_reports_bad_bundles(course, tmp_path, capsys):
    out = tmp_path / "graded"
    only_alice = tmp_path / "subs"
    only_alice.mkdir()
    shutil.copy(course["subs"] / "alice.ipynb", only_alice)
    args = ["grade", str(course["bundle"]), str(only_alice), str(out), "--timeout", "30", "--sandbox", "hook"]
    assert main(args) == 0
    assert "alice,1,2,2,3,8,8,ok," in (out / "gradebook.csv").read_text()
    assert main(args) == 1
    assert "already holds a gradebook; pass --force" in capsys.readouterr().err
    assert main(["grade", str(tmp_path), str(only_alice), str(tmp_path / "x")]) == 1
    assert "is not a grading bundle (no manifest.json)" in capsys.readouterr().err
    assert main(["grade", str(course["bundle"]), str(only_alice), str(only_alice / "out")]) == 1
    assert "OUT_DIR must not be inside SUBMISSIONS_DIR" in capsys.readouterr().err


def test_assign_writes_student_notebooks_and_a_manifest(course, capsys):
    out = course["base"] / "out"
    manifest = json.loads((out / "grading" / "manifest.json").read_text())
    assert [e["id"] for e in manifest["exercises"]] == list(ALL)
    assert manifest["total_points"] == 8 and manifest["notebooks"] == {"01_softmax.ipynb": list(ALL)}
    assert all(e["hidden_cases"] >= 3 for e in manifest["exercises"])
    assert sorted(p.name for p in (out / "grading").iterdir()) == sorted(
        ["manifest.json"] + [p.name for p in (ROOT / "grading").glob("hidden_*.py")]
    )
    student_text = (out / "student" / "01_softmax.ipynb").read_text()
    assert "BEGIN SOLUTION" not in student_text and "hidden" not in student_text.lower()
    # a second assign needs --force; a missing tests folder is a clear error
    assert main(["assign", str(course["base"] / "book"), str(out), "--tests", str(ROOT / "grading")]) == 1
    assert "pass --force" in capsys.readouterr().err
    assert main(["assign", str(course["base"] / "book"), str(course["base"] / "out2")]) == 1
    assert "no hidden tests (grading/hidden_*.py) found" in capsys.readouterr().err


def test_the_command_line_entry_point_runs():
    run = subprocess.run(
        [sys.executable, "-m", "attncourse.cli", "list", "ch05"], capture_output=True, text=True, cwd=ROOT
    )
    assert run.returncode == 0
    assert run.stdout.splitlines()[2].split() == [
        "5.3",
        "ch05.multi_head_attention",
        "4",
        "pt",
        "multi_head_attention(x,",
        "W_q,",
        "W_k,",
        "W_v,",
        "W_o,",
        "n_heads)",
    ]


def test_the_sandbox_is_reported_honestly():
    box = find_sandbox("auto")
    assert box.mode in ("bwrap", "nobody", "hook")
    if shutil.which("bwrap") is None:
        assert box.mode != "bwrap"
    assert find_sandbox("hook").mode == "hook"
    if os.geteuid() != 0:
        with pytest.raises(Exception, match="cannot run as nobody"):
            find_sandbox("nobody")


def book_notebooks_with_exercises() -> list:
    from attncourse.exercises.notebook import exercises_in, read_notebook

    return [p for p in sorted((ROOT / "book").glob("*.ipynb")) if exercises_in(read_notebook(p.read_bytes()))]


@pytest.mark.slow
def test_the_book_loop_solutions_full_marks_students_zero(tmp_path):
    """assign the real book, then grade its solution notebooks and its student notebooks."""
    notebooks = book_notebooks_with_exercises()
    if not notebooks:
        pytest.skip("no chapter notebook has exercise cells yet")
    assert main(["validate", str(ROOT / "book")]) == 0
    assert main(["assign", str(ROOT / "book"), str(tmp_path / "handout")]) == 0
    subs = tmp_path / "submissions"
    (subs / "solutions").mkdir(parents=True)
    (subs / "students").mkdir()
    for path in notebooks:
        shutil.copy(path, subs / "solutions" / path.name)
        shutil.copy(tmp_path / "handout" / "student" / path.name, subs / "students" / path.name)
    limits = Limits(time_s=300, cell_s=120, case_s=30, memory_mb=4096)
    results = {
        r.student: r
        for r in grade(
            tmp_path / "handout" / "grading",
            subs,
            tmp_path / "graded",
            limits=limits,
            jobs=2,
            log=lambda s: None,
        )
    }
    solutions, students = results["solutions"], results["students"]
    assert [(g.exercise.id, g.earned) for g in solutions.grades if g.earned != g.exercise.points] == []
    assert solutions.status == "ok" and students.status == "ok"
    assert students.total == 0
    assert all(
        c.status == "not attempted" for g in students.grades if g.exercise.stub is None for c in g.cases
    )
