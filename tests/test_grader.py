"""`attncourse assign` and `attncourse grade` under the default sandbox, on submissions that try to
break the grader, escape the sandbox or are simply broken.  The gradebook is written out in full.

The demo course is chapter 1's first four exercises (8 points); the chapter's later exercises are
set aside while it is graded, so the expected gradebook below stays readable.  Each crafted notebook is the student
version with some exercise cells changed (what grading runs) or the file itself broken.
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import json
import os
import shutil
import socket
import sys
import tempfile
from pathlib import Path

import pytest
from grader_support import chapter_notebook, code, exercise_cell, needs_bwrap

from attncourse.cli import main
from attncourse.exercises import get
from attncourse.exercises.engine import registry as _registry
from attncourse.exercises.engine.notebook import exercises_in, read_notebook
from attncourse.grading import Limits, grade, sandbox

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
LIMITS = Limits(time_s=8, cell_s=1.5, case_s=1, memory_mb=2048)
ALL = (
    "ch01.temperature_softmax",
    "ch01.stable_softmax",
    "ch01.temperature_derivative",
    "ch01.entropy_gradient",
)
NAIVE = "def stable_softmax(x):\n    e = np.exp(x)\n    return e / e.sum(axis=-1, keepdims=True)\n"
NON_UTF8 = b"b\xf6b"


def demo_notebook() -> dict:
    return chapter_notebook("ch01", "Softmax exercises")


def answer(nb: dict, exercise_id: str, body: str, *, extra: str = "", rename: str = "") -> None:
    """Put ``body`` (and then ``extra``, top-level code) into the exercise cell of ``exercise_id``."""
    cell = exercise_cell(nb, exercise_id)
    cell["source"] = get(exercise_id).header + "\n" + body + ("\n" + extra if extra else "")
    if rename:
        cell["metadata"]["attncourse"]["exercise"] = rename


def solution(exercise_id: str) -> str:
    return get(exercise_id).solution_code()


def index_of(nb: dict, exercise_id: str) -> int:
    return nb["cells"].index(exercise_cell(nb, exercise_id)) + 1


def runner_processes(own: Path) -> list:
    """Processes still running the grading runner (read from /proc) on a job folder inside ``own``,
    the temp folder this test gave the grader: the runner and bubblewrap both name the job folder on
    their command line, so a grading that runs beside the test on this machine is never counted."""
    marker = os.fsencode(str(own)) + b"/"
    found = []
    for pid in map(int, filter(str.isdigit, os.listdir("/proc"))):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if b"attncourse.grading.runner" in cmdline and marker in cmdline:
            found.append(pid)
    return found


def own_temp_folder(tmp_path: Path, monkeypatch) -> Path:
    """A temp folder for the grader's job folders that belongs to this test alone."""
    own = tmp_path / "tmp"
    own.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(own))
    return own


@contextlib.contextmanager
def demo_registry():
    """The registry as the demo course sees it: chapter 1's exercises other than ``ALL`` set aside."""
    saved = dict(_registry._REGISTRY)
    for ex_id in [k for k in saved if k.startswith("ch01.") and k not in ALL]:
        del _registry._REGISTRY[ex_id]
    try:
        yield
    finally:
        _registry._REGISTRY.clear()
        _registry._REGISTRY.update(saved)


@pytest.fixture(autouse=True)
def _demo_course_registry(request):
    if "course" in request.fixturenames:
        with demo_registry():
            yield
    else:
        yield


def snapshot(folder: Path) -> dict:
    return {
        str(p.relative_to(folder)): (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime_ns)
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    """The solution notebook, the assigned bundle, and the crafted submissions."""
    needs_bwrap()
    made = _make_course(tmp_path_factory)
    with demo_registry():  # only while the course is made: each test that grades it sets it aside again
        value = next(made)
    yield value
    with contextlib.suppress(StopIteration):
        next(made)


def _make_course(tmp_path_factory):
    base = tmp_path_factory.mktemp("course")
    (base / "book").mkdir()
    (base / "book" / "01_softmax.ipynb").write_text(json.dumps(demo_notebook()), encoding="utf-8")
    assert main(["assign", str(base / "book"), str(base / "out"), "--tests", str(ROOT / "hidden_cases")]) == 0
    student = json.loads((base / "out" / "student" / "01_softmax.ipynb").read_text(encoding="utf-8"))
    subs = base / "submissions"
    subs.mkdir()
    bundle = base / "out" / "grading"
    canary = base / "canary.txt"
    canary.write_text("do not touch\n")
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(5)
    listener.settimeout(0.1)
    port = listener.getsockname()[1]
    cells = {ex: index_of(student, ex) for ex in ALL}

    def fresh(*solved: str) -> dict:
        nb = json.loads(json.dumps(student))
        for ex in solved:
            answer(nb, ex, solution(ex))
        return nb

    def submit(name: str, nb) -> None:
        data = nb if isinstance(nb, (str, bytes)) else json.dumps(nb)
        (subs / f"{name}.ipynb").write_bytes(data if isinstance(data, bytes) else data.encode("utf-8"))

    def hostile(name: str, *lines: str, solved=ALL) -> None:
        """Every exercise solved; exercise cell i also runs ``lines[i]`` at top level."""
        nb = fresh(*solved)
        for ex, line in zip(ALL, lines):
            answer(nb, ex, solution(ex), extra=line)
        submit(name, nb)

    submit("alice", fresh(*ALL))
    bob = fresh("ch01.temperature_softmax", "ch01.entropy_gradient")
    answer(bob, "ch01.stable_softmax", NAIVE)  # passes small logits, overflows on large ones
    submit("bob", bob)
    carol = fresh(*ALL[1:])
    answer(carol, ALL[0], "def temperature_softmax(logits, temperature):\n    while True:\n        pass\n")
    submit("carol", carol)
    hostile("dave", "while True:\n    pass")  # a cell that never ends: stopped at the cell limit
    hostile(  # swallows the cell limit too: killed at the wall-time limit
        "erin",
        "import time\nwhile True:\n    try:\n        time.sleep(5)\n    except BaseException:\n        pass",
    )
    hostile("frank", "import sys\nsys.exit(1)")
    hostile("grace", "", "import os\nos._exit(3)")
    hostile("heidi", "print('x' * 30_000_000)\nfor i in range(10_000):\n    print(i)")
    hostile(
        "ivan",
        f"import os\nos.remove({str(canary)!r})",
        f"open({str(canary)!r}, 'w').write('pwned')",
        f"import shutil\nshutil.rmtree({str(subs)!r})",
        f"import subprocess\nsubprocess.run(['rm', '-f', {str(canary)!r}])",
    )
    judy = fresh(*ALL[1:])
    answer(
        judy,
        ALL[0],
        "def temperature_softmax(logits, temperature):\n"
        "    return attncourse.softmax(logits / temperature)\n",
        extra="import attncourse, numpy\n"
        "attncourse.softmax = lambda x, axis=-1: numpy.ones_like(x) / x.shape[-1]\n"
        "numpy.allclose = lambda *a, **k: True\n"
        "import attncourse.exercises as ex\n"
        "ex.check = lambda *a, **k: print('full marks!')\n",
    )
    submit("judy", judy)
    mallory = fresh()
    answer(
        mallory,
        ALL[1],
        "import json\n",
        extra=f"nb = json.load(open({str(subs / 'alice.ipynb')!r}))\n"
        "for cell in nb['cells']:\n"
        "    if cell['cell_type'] == 'code':\n"
        "        exec(''.join(cell['source']))\n",
    )
    submit("mallory", mallory)
    submit("niaj", '{"cells": [ {"cell_type": "code", "source": "x = 1"')
    olivia = fresh(*ALL)
    answer(olivia, ALL[1], NAIVE.replace("def stable_softmax", "def my_softmax"), rename="ch01.my_softmax")
    submit("olivia", olivia)
    hostile("peggy", "import numpy as np\nbig = np.ones(2**34)")
    quentin = fresh(*ALL[1:])  # forges a reply for the temperature exercise, then leaves it a stub
    answer(
        quentin,
        ALL[1],
        solution(ALL[1]),
        extra="import json, os, numpy as np\n"
        "os.makedirs('out', exist_ok=True)\n"
        "for c in range(20):\n"
        "    np.save(f'out/0_{c}_0.npy', np.ones(3))\n"
        "json.dump({'protocol': 1, 'stage': 'done', 'results': [[{'kind': 'returned', 'n': 1}] * 20]},"
        " open('reply.json', 'w'))\n",
    )
    submit("quentin", quentin)
    hostile(  # the bundle and the output folder are not there to read or change
        "rita",
        f"open({str(bundle / 'hidden_ch01.py')!r}, 'a').write('HIDDEN = {{}}')",
        f"print(open({str(bundle / 'manifest.json')!r}).read())",
        "import os\nassert os.listdir('..') == [os.path.basename(os.getcwd())], 'sees other jobs'",
        f"import glob\nassert glob.glob({str(base) + '/*'!r}) == [], 'sees the course folder'",
    )
    hostile(  # no network, not even to the grading machine itself
        "nina",
        f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=1)",
        "import socket\nsocket.create_connection(('1.1.1.1', 53), timeout=1)",
    )
    hostile(  # no new processes: a fork bomb, and a process meant to outlive the notebook
        "fiona",
        "import os\nwhile True:\n    os.fork()",
        "import subprocess\nsubprocess.Popen(['sleep', '600'], start_new_session=True)",
        "import os\nos.posix_spawn('/bin/sleep', ['sleep', '600'], {})",
    )
    hostile(  # the sandbox's /tmp is memory: it has a size
        "tina",
        "for i in range(6):\n    with open(f'/tmp/fill{i}', 'wb') as f:\n        f.write(b'x' * 60 * 2**20)",
    )
    sam = fresh(*ALL[1:])  # a function that calls sys.exit fails its cases; nothing else
    answer(sam, ALL[0], "import sys\ndef temperature_softmax(logits, temperature):\n    sys.exit(0)\n")
    submit("sam", sam)
    sue = fresh(*ALL[1:])  # lone surrogates in an exception message
    answer(
        sue,
        ALL[0],
        "def temperature_softmax(logits, temperature):\n    raise ValueError('bad \\ud800 news')\n",
    )
    submit("sue", sue)
    dora = fresh()  # deleted every exercise cell, wrote stable_softmax in a cell of her own
    dora["cells"] = [c for c in dora["cells"] if "exercise" not in c["metadata"].get("attncourse", {})]
    dora["cells"].append(code("import numpy as np\nprint('my cell')\n" + solution(ALL[1])))
    submit("dora", dora)
    hugo = fresh(*ALL)  # 100 MB of saved outputs
    hugo["cells"][-1]["outputs"] = [{"output_type": "stream", "name": "stdout", "text": "y" * 100 * 2**20}]
    submit("hugo", hugo)
    submit("zero", b"")
    submit("list", "[1, 2, 3]")
    submit("deep", "[" * 100_000 + "]" * 100_000)
    submit("latin1", json.dumps(fresh(*ALL)).encode("ascii").replace(b"Softmax", b"Softmax \xff", 1))
    for name in ("a b", "a_b", ".dot", '=HYPERLINK("x")', "x%2Fy", ".."):
        submit(name, fresh(*ALL))
    os.close(os.open(os.fsencode(subs) + b"/" + NON_UTF8 + b".ipynb", os.O_CREAT | os.O_WRONLY, 0o644))
    with open(os.fsencode(subs) + b"/" + NON_UTF8 + b".ipynb", "w", encoding="utf-8") as f:
        f.write(json.dumps(fresh(*ALL)))
    submit("zed", fresh(*ALL))  # and a folder zed/: ambiguous
    (subs / "zed").mkdir()
    (subs / "zed" / "01_softmax.ipynb").write_text(json.dumps(fresh()), encoding="utf-8")
    (subs / "trent").mkdir()  # one folder, two notebooks: the best answer to each exercise counts
    (subs / "trent" / "part1.ipynb").write_text(json.dumps(fresh(*ALL[:2])), encoding="utf-8")
    (subs / "trent" / "part2.ipynb").write_text(json.dumps(fresh(*ALL[2:])), encoding="utf-8")
    (subs / "uma").mkdir()  # her stubs, plus another notebook with someone's stable_softmax: no credit
    (subs / "uma" / "01_softmax.ipynb").write_text(json.dumps(fresh()), encoding="utf-8")
    scratch = {"cells": [code("import numpy as np\n" + solution(ALL[1]))], "metadata": {}, "nbformat": 4}
    (subs / "uma" / "scratch.ipynb").write_text(json.dumps(scratch), encoding="utf-8")
    (subs / "empty").mkdir()
    (subs / "notes.txt").write_text("not a notebook: ignored\n")
    yield {
        "base": base,
        "bundle": bundle,
        "subs": subs,
        "canary": canary,
        "cells": cells,
        "n": len(student["cells"]),
        "listener": listener,
    }
    listener.close()


def naive_mark() -> float:
    """What NAIVE earns for 1.2 in this process, public and hidden cases judged as ``check`` judges:
    the sandboxed grader must give the same mark (it passes small logits and overflows on large ones)."""
    from exercise_support import ROOT, load_hidden_cases

    from attncourse.exercises.engine.check import call
    from attncourse.exercises.engine.compare import expected_outputs, judge_all, points_earned

    ex, ns = get("ch01.stable_softmax"), {}
    exec("import numpy as np\n" + NAIVE, ns)
    public, hidden = ex.public_cases(), list(load_hidden_cases(ROOT / "hidden_cases")[ex.id]())
    cases = public + hidden
    results = judge_all(
        ex,
        cases,
        [expected_outputs(ex, c) for c in cases],
        [call(ex, ns["stable_softmax"], c.args()) for c in cases],
        [False] * len(public) + [True] * len(hidden),
    )
    assert not all(r.passed for r in results)
    return points_earned(ex, results)


NOTED = ", which no exercise needs (noted, not marked)"  # the note on code reaching for more


def expected_rows(cells: dict) -> dict:
    from attncourse.exercises.engine.check import _fmt_points

    # Jupyter and Colab number no cells: notes name a cell by its exercise
    t, s, e, j = (f"exercise {get(ex).number}'s cell" for ex in ALL)
    full = ["1", "2", "2", "3", "8", "8", "ok", ""]
    naive = naive_mark()
    rows = {
        "alice": full,
        "bob": ["1", _fmt_points(naive), "0", "3", _fmt_points(4 + naive), "8", "ok", ""],
        "carol": ["0", "2", "2", "3", "7", "8", "ok", ""],
        "dave": full[:7] + [f"over the 1.5 s cell limit (stopped): {t}"],
        "erin": [
            "0",
            "0",
            "0",
            "0",
            "0",
            "8",
            "timeout",
            f"stopped at the 8 s time limit while running {t}",
        ],
        "frank": full[:7] + [f"sys.exit() in {t} (ignored)"],
        "grace": [
            "0",
            "0",
            "0",
            "0",
            "0",
            "8",
            "crashed",
            f"the notebook ended the grading process early (exit code 3) while running {s}; "
            f"reaches for os._exit ({s}){NOTED}",
        ],  # fmt: skip
        "heidi": full[:7] + ["printed more than 1000000 characters (cut)"],
        "ivan": full[:7]
        + [
            f"errors in {t}; {s}; {e}; {j}; reaches for files outside its folder ({s}), deleting "
            f"folders (shutil.rmtree) ({e}), new processes ({j}){NOTED}"
        ],
        "judy": ["0", "2", "2", "3", "7", "8", "ok", ""],
        "mallory": [
            "0",
            "0",
            "0",
            "0",
            "0",
            "8",
            "ok",
            f"errors in {s}; reaches for files outside its folder ({s}){NOTED}; not found: stable_softmax",
        ],  # fmt: skip
        "niaj": [
            "0",
            "0",
            "0",
            "0",
            "0",
            "8",
            "malformed",
            "not a readable notebook: invalid JSON (Expecting ',' delimiter at line 1, column 52)",
        ],  # fmt: skip
        "olivia": [
            "1",
            "0",
            "2",
            "3",
            "6",
            "8",
            "ok",
            f"unknown exercise id 'ch01.my_softmax' in {s}; not found: stable_softmax",
        ],  # fmt: skip
        "peggy": full[:6] + ["memory", f"out of memory (limit 2048 MiB) in {t}"],
        "quentin": ["0", "2", "2", "3", "7", "8", "ok", ""],
        "rita": full[:7] + [f"errors in {t}; {s}; reaches for files outside its folder ({t}; {s}){NOTED}"],
        "nina": full[:7] + [f"errors in {t}; {s}; reaches for the network ({t}; {s}){NOTED}"],
        "fiona": full[:7] + [f"errors in {t}; {s}; {e}; reaches for new processes ({t}; {s}; {e}){NOTED}"],
        "tina": full[:7] + ([f"errors in {t}"] if sandbox._tmp_size() else [""]),
        "sam": ["0", "2", "2", "3", "7", "8", "ok", ""],
        "sue": ["0", "2", "2", "3", "7", "8", "ok", ""],
        "dora": [
            "0",
            "2",
            "0",
            "0",
            "2",
            "8",
            "ok",
            "not found: temperature_softmax, temperature_derivative, entropy_gradient",
        ],  # fmt: skip
        "hugo": full,
        "zero": ["0"] * 5 + ["8", "malformed", "not a readable notebook: an empty file (0 bytes)"],
        "list": ["0"] * 5 + ["8", "malformed", "not a readable notebook: JSON without a list of cells"],
        "deep": ["0"] * 5 + ["8", "malformed", "not a readable notebook: invalid JSON (nested too deeply)"],
        "latin1": ["0"] * 5 + ["8", "malformed", "not a readable notebook: not UTF-8 text"],
        "a b": full,
        "a_b": full,
        ".dot": full,
        '=HYPERLINK("x")': full,
        "x%2Fy": full,
        "..": full,
        os.fsdecode(NON_UTF8): full,
        "zed": ["0"] * 5
        + ["8", "ambiguous", "both zed.ipynb and a folder zed/ (or a link): keep one and grade again"],
        "trent": full,
        "uma": ["0", "0", "0", "0", "0", "8", "ok", ""],
        "empty": ["0"] * 5 + ["8", "malformed", "the folder holds no .ipynb notebook"],
    }
    return rows


def test_crafted_submissions_give_the_expected_gradebook(course, tmp_path, monkeypatch):
    before, canary_before = snapshot(course["subs"]), snapshot(course["canary"].parent / "out")
    # the grader's job folders go to a temp folder of this test's own, so a grading that runs
    # beside it (another test worker) cannot upset the "nothing left behind" check
    own = own_temp_folder(tmp_path, monkeypatch)
    # tina fills the sandbox's /tmp: a 64 MiB cap stops her second 60 MiB file, where the 256 MiB
    # one took five (300 MiB of writes, over LIMITS' 1.5 s cell limit on a busy machine)
    monkeypatch.setattr(sandbox, "TMP_BYTES", 64 * 2**20)
    temp_before = set(Path(tempfile.gettempdir()).glob("attncourse-grade-*"))
    out = tmp_path / "graded"
    results = grade(course["bundle"], course["subs"], out, limits=LIMITS, jobs=2, log=lambda s: None)

    with open(out / "gradebook.csv", newline="", encoding="utf-8-sig") as f:
        rows = list(csv.reader(f))
    assert rows[0] == [
        "student",
        "id",
        "name",
        "email",
        "late",
        *ALL,
        "earned",
        "days_late",
        "late_penalty",
        "total",
        "out_of",
        "status",
        "feedback",
        "notes",
    ]
    points = ["1", "2", "2", "3"]
    assert rows[1] == ["Points Possible", "", "", "", "", *points, "8", "", "", "8", "8", "", "", ""]
    assert all(r[9] == r[12] and r[10:12] == ["", ""] for r in rows[2:])  # no late policy: earned = total
    feedback_files = [r[-2] for r in rows[2:]]
    # the columns this test is about
    rows = [rows[0]] + [r[:1] + r[5:9] + r[12:-2] + r[-1:] for r in rows[2:]]
    expected = expected_rows(course["cells"])
    shown = {
        name: (
            "'" + name
            if name.startswith("=")
            else name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
        )
        for name in expected
    }
    assert [r[0] for r in rows[1:]] == [shown[name] for name in sorted(expected)]
    for row in rows[1:]:
        name = next(n for n in expected if shown[n] == row[0])
        assert row[1:] == expected[name], name

    # nothing outside the job folders changed, nothing was left behind, no connection came in
    assert snapshot(course["subs"]) == before
    assert snapshot(course["canary"].parent / "out") == canary_before
    assert course["canary"].read_text() == "do not touch\n"
    assert set(Path(tempfile.gettempdir()).glob("attncourse-grade-*")) == temp_before
    assert runner_processes(own) == []
    with pytest.raises(socket.timeout):
        course["listener"].accept()

    # names round-trip exactly; every student has a feedback file of their own
    summary = json.loads((out / "results.json").read_text(encoding="ascii"))
    assert summary["sandbox"] == "bwrap" and "sandbox_warning" not in summary
    assert [s["student"] for s in summary["students"]] == sorted(expected)
    assert summary["ignored"] == ["notes.txt"]
    files = [s["feedback"] for s in summary["students"]]
    assert feedback_files == files
    assert len(set(f.lower() for f in files)) == len(files)
    assert sorted(p.name for p in (out / "feedback").iterdir()) == sorted(f.split("/")[1] for f in files)
    assert all(not f.split("/")[1].startswith(".") and f.isascii() for f in files)
    feedback = {s["student"]: (out / s["feedback"]).read_text(encoding="utf-8") for s in summary["students"]}
    assert "Total: 8 / 8 points" in feedback["alice"]
    assert "Total: 8 / 8 points" in feedback[os.fsdecode(NON_UTF8)]
    assert "NaN where the expected row is finite" in feedback["bob"]
    assert "✗ hidden: float16 logits up to 20" in feedback["bob"]
    assert "did not finish within 1 s (an endless loop?)" in feedback["carol"]
    assert (
        "exercise {}'s cell called sys.exit(1); the grader carried on".format(get(ALL[0]).number)
        in feedback["frank"]
    )
    assert "raised MemoryError" in feedback["peggy"]
    assert "not attempted" in feedback["quentin"]
    assert "FileNotFoundError" in feedback["mallory"] and "FileNotFoundError" in feedback["rita"]
    assert "Resource temporarily unavailable" in feedback["fiona"]
    assert "raised SystemExit" in feedback["sam"]
    assert "bad \\ud800 news" in feedback["sue"]
    assert {r.student: r.total for r in results}["bob"] == round(4 + naive_mark(), 2)


def test_the_sandbox_none_grades_and_says_so(course, tmp_path, capsys):
    only_alice = tmp_path / "subs"
    only_alice.mkdir()
    shutil.copy(course["subs"] / "alice.ipynb", only_alice)
    out = tmp_path / "graded"
    args = ["grade", str(course["bundle"]), str(only_alice), str(out), "--sandbox", "none", "--jobs", "1"]
    assert main(args) == 0
    assert "warning: --sandbox none" in capsys.readouterr().out
    assert "alice,,,,,1,2,2,3,8,,,8,8,ok,feedback/alice.txt," in (out / "gradebook.csv").read_text()
    summary = json.loads((out / "results.json").read_text())
    assert summary["sandbox"] == "none" and "sandbox_warning" in summary


def test_grade_refuses_to_overwrite_and_reports_bad_bundles(course, tmp_path, capsys):
    out = tmp_path / "graded"
    only_alice = tmp_path / "subs"
    only_alice.mkdir()
    shutil.copy(course["subs"] / "alice.ipynb", only_alice)
    args = ["grade", str(course["bundle"]), str(only_alice), str(out), "--timeout", "30"]
    assert main(args) == 0
    assert "alice,,,,,1,2,2,3,8,,,8,8,ok,feedback/alice.txt," in (out / "gradebook.csv").read_text()
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
    assert [e["kind"] for e in manifest["exercises"]] == [get(ex).kind for ex in ALL]
    assert manifest["total_points"] == 8 and manifest["notebooks"] == {"01_softmax.ipynb": list(ALL)}
    assert all(e["hidden_cases"] >= 3 for e in manifest["exercises"])
    assert sorted(p.name for p in (out / "grading").iterdir()) == sorted(
        ["manifest.json"] + [p.name for p in (ROOT / "hidden_cases").glob("hidden_*.py")]
    )
    student_text = (out / "student" / "01_softmax.ipynb").read_text()
    assert "BEGIN SOLUTION" not in student_text and "HIDDEN" not in student_text
    assert (
        main(["assign", str(course["base"] / "book"), str(out), "--tests", str(ROOT / "hidden_cases")]) == 1
    )
    assert "pass --force" in capsys.readouterr().err
    assert main(["assign", str(course["base"] / "book"), str(course["base"] / "out2")]) == 1
    assert "no hidden tests (hidden_cases/hidden_*.py) found" in capsys.readouterr().err


def test_a_shortcut_scores_zero_with_the_reason(course, tmp_path, monkeypatch):
    """The runner carries ``Outcome.shortcut`` back; the grader gives that exercise 0 and says why.

    ``call`` itself decides what a shortcut is; here a stand-in marks the temperature exercise,
    and the run happens without a sandbox so the stand-in reaches the runner's process.
    """
    shim = tmp_path / "shim"
    shim.mkdir()
    (shim / "sitecustomize.py").write_text(
        "import attncourse.exercises.engine.check as c\n"
        "_call = c.call\n"
        "def call(exercise, fn, args):\n"
        "    out = _call(exercise, fn, args)\n"
        "    if exercise.id == 'ch01.temperature_softmax':\n"
        "        out.shortcut = 'attncourse.softmax'\n"
        "    return out\n"
        "c.call = call\n"
    )
    env = sandbox.runner_env
    monkeypatch.setattr(
        sandbox,
        "runner_env",
        lambda job: {**env(job), "PYTHONPATH": f"{shim}{os.pathsep}{sandbox.PACKAGE_ROOT}"},
    )
    import attncourse.grading.jobs as jobs

    monkeypatch.setattr(jobs, "runner_env", sandbox.runner_env)
    subs = tmp_path / "subs"
    subs.mkdir()
    shutil.copy(course["subs"] / "alice.ipynb", subs)
    results = grade(
        course["bundle"], subs, tmp_path / "graded", limits=LIMITS, sandbox="none", log=lambda s: None
    )
    alice = results[0]
    assert [g.earned for g in alice.grades] == [0, 2, 2, 3]
    text = (tmp_path / "graded" / "feedback" / "alice.txt").read_text(encoding="utf-8")
    assert "the package's reference may not be used here: attncourse.softmax" in text


def book_notebooks_with_exercises() -> list:
    return [p for p in sorted((ROOT / "book").glob("*.ipynb")) if exercises_in(read_notebook(p.read_bytes()))]


def test_the_book_loop_students_zero(tmp_path):
    """validate and assign the real book, then grade its student notebooks, all in one student's
    folder: 0 points, and every empty stub "not attempted".  The book's own notebooks (the worked
    solutions) are graded from the same handout, every chapter in one run, by
    test_grader_namespace.py's
    test_the_books_solutions_score_full_marks_with_no_error_note_and_every_imported_name_there."""
    needs_bwrap()
    pytest.importorskip("torch")  # the common-bugs exercises need it in the grading Python
    notebooks = book_notebooks_with_exercises()
    if not notebooks:
        pytest.skip("no chapter notebook has exercise cells yet")
    python = os.environ.get("ATTNCOURSE_GRADER_PYTHON", sys.executable)  # e.g. a venv with CUDA torch
    assert main(["validate", str(ROOT / "book")]) == 0
    assert main(["assign", str(ROOT / "book"), str(tmp_path / "handout")]) == 0
    subs = tmp_path / "submissions"
    (subs / "students").mkdir(parents=True)
    for path in notebooks:
        shutil.copy(tmp_path / "handout" / "student" / path.name, subs / "students" / path.name)
    limits = Limits(time_s=300, cell_s=120, case_s=30)
    (students,) = grade(
        tmp_path / "handout" / "grading",
        subs,
        tmp_path / "graded",
        limits=limits,
        python=python,
        log=lambda s: None,
    )
    assert students.student == "students" and students.status == "ok"
    assert students.total == 0
    assert {g.exercise.id for g in students.grades} == {
        ex_id for path in notebooks for _, ex_id in exercises_in(read_notebook(path.read_bytes()))
    }
    assert all(
        c.status == "not attempted"
        for g in students.grades
        if g.exercise.stub in (None, _registry.STUB_LINE)
        for c in g.cases
    )


def test_a_notebook_that_blocks_the_cell_timer_is_stopped_at_the_wall_limit(course, tmp_path, monkeypatch):
    """A notebook that blocks SIGALRM and sleeps is stopped at the wall-time limit, and nothing is left."""
    own = own_temp_folder(tmp_path, monkeypatch)
    subs = tmp_path / "subs"
    subs.mkdir()
    nb = json.loads((course["subs"] / "alice.ipynb").read_text(encoding="utf-8"))
    answer(
        nb,
        ALL[0],
        solution(ALL[0]),
        extra="import signal, time\n"
        "signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGALRM])\n"
        "time.sleep(600)",
    )
    (subs / "stuck.ipynb").write_text(json.dumps(nb), encoding="utf-8")
    limits = Limits(time_s=3, cell_s=1, case_s=1)
    results = grade(course["bundle"], subs, tmp_path / "graded", limits=limits, log=lambda s: None)
    assert results[0].status == "timeout" and results[0].total == 0
    assert list(own.glob("attncourse-grade-*")) == []
    assert runner_processes(own) == []


def test_a_failure_while_grading_one_student_costs_only_that_row(course, tmp_path, monkeypatch):
    import attncourse.grading.batch as batch

    subs = tmp_path / "subs"
    subs.mkdir()
    for name in ("alice", "bob", "carol"):
        shutil.copy(course["subs"] / f"{name}.ipynb", subs)
    real = batch.student_grade

    def flaky(student, runs, prepared, limits, *policy):
        if student == "bob":
            raise RuntimeError("an unforeseen \ud800 problem")
        return real(student, runs, prepared, limits, *policy)

    monkeypatch.setattr(batch, "student_grade", flaky)
    out = tmp_path / "graded"
    grade(course["bundle"], subs, out, limits=LIMITS, jobs=2, log=lambda s: None)
    rows = list(csv.reader((out / "gradebook.csv").open(newline="", encoding="utf-8-sig")))
    rows = list(csv.DictReader((out / "gradebook.csv").open(newline="", encoding="utf-8-sig")))[1:]
    assert [(r["student"], r["total"], r["status"]) for r in rows] == [
        ("alice", "8", "ok"),
        ("bob", "0", "error"),
        ("carol", "7", "ok"),
    ]
    assert (
        "the grader failed on this submission (RuntimeError: an unforeseen \\ud800 problem)"
        in rows[1]["notes"]
    )
    assert sorted(p.name for p in (out / "feedback").iterdir()) == ["alice.txt", "bob.txt", "carol.txt"]
