"""The grader's parts on their own, quickly: the protocol's reader, names and the gradebook,
finding submissions, the sandbox policy and its refusal, the command line."""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from attncourse.cli import main
from attncourse.grading import GradingError, protocol, sandbox
from attncourse.grading.batch import discover
from attncourse.grading.gradebook import csv_cell, display_name, feedback_names

ROOT = Path(__file__).resolve().parents[1]
CAPS = [[[1000]], [[1000, 1000]]]  # exercise 0: one case, one output; exercise 1: one case, two outputs


def job(tmp_path: Path, reply) -> int:
    (tmp_path / "out").mkdir(exist_ok=True)
    if reply is not None:
        text = reply if isinstance(reply, (str, bytes)) else json.dumps(reply)
        (tmp_path / "reply.json").write_bytes(text if isinstance(text, bytes) else text.encode())
    return os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)


def reply_of(**kw) -> dict:
    return {
        "protocol": protocol.VERSION,
        "stage": "done",
        "cells": [],
        "defined": [],
        "results": [[], []],
        **kw,
    }


def read(tmp_path, reply):
    fd = job(tmp_path, reply)
    try:
        return protocol.read_reply(fd, CAPS)
    finally:
        os.close(fd)


def test_a_reply_round_trips_through_the_writer_and_the_reader(tmp_path):
    from attncourse.exercises.engine.compare import Outcome

    writer = protocol.ReplyWriter(str(tmp_path), 2)
    writer.cell(3, "error", "ValueError", "bad \ud800", "line 1: x")
    writer.result(0, 0, Outcome("returned", [np.arange(3.0)]))
    writer.result(1, 0, Outcome("raised", error_type="KeyError", message="k", shortcut="attncourse.softmax"))
    writer.data["defined"] = ["f"]
    writer.save("done")
    reply = read(tmp_path, None)
    assert reply.stage == "done" and reply.defined == ["f"]
    assert reply.cells[0].index == 3 and reply.cells[0].message == "bad \\ud800"
    np.testing.assert_array_equal(reply.results[(0, 0)].arrays[0], np.arange(3.0))
    assert reply.results[(1, 0)].kind == "raised" and reply.results[(1, 0)].shortcut == "attncourse.softmax"


@pytest.mark.parametrize(
    "raw, match",
    [
        ("not json", "not JSON"),
        ("[" * 50_000 + "]" * 50_000, "not JSON"),
        (json.dumps({"protocol": 99, "stage": "done"}), f"not a protocol {protocol.VERSION} reply"),
        (json.dumps({"protocol": protocol.VERSION, "stage": "later"}), "no valid stage"),
        (json.dumps({"protocol": protocol.VERSION, "stage": "done", "cells": {}}), "wrong layout"),
        (b"\xff\xfe", "not JSON"),
    ],
)
def test_a_broken_reply_is_a_protocol_error(tmp_path, raw, match):
    with pytest.raises(protocol.ProtocolError, match=match):
        read(tmp_path, raw)


def test_no_reply_at_all_is_none(tmp_path):
    assert read(tmp_path, None) is None


def test_results_that_break_the_protocol_are_bad_outputs_not_crashes(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    np.save(out / "0_0_0.npy", np.array(["text"]))  # not numbers
    np.save(out / "1_0_0.npy", np.zeros(10_000))  # far larger than its cap
    os.symlink("/etc/passwd", out / "1_0_1.npy")
    reply = read(
        tmp_path,
        reply_of(results=[[{"kind": "returned", "n": 1}], [{"kind": "returned", "n": 2}]]),
    )
    assert (
        reply.results[(0, 0)].kind == "bad_output"
        and "not an array of numbers" in reply.results[(0, 0)].message
    )
    assert (
        reply.results[(1, 0)].kind == "bad_output"
        and "larger than 1000 bytes" in reply.results[(1, 0)].message
    )

    np.save(out / "1_0_0.npy", np.zeros(3))
    reply = read(tmp_path, reply_of(results=[[], [{"kind": "returned", "n": 2}]]))
    assert "cannot be read" in reply.results[(1, 0)].message  # the link is not followed

    with open(out / "0_0_0.npy", "wb") as f:  # a pickle is refused
        np.save(f, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    reply = read(tmp_path, reply_of(results=[[{"kind": "returned", "n": 1}], [{"kind": "telepathy"}]]))
    assert reply.results[(0, 0)].kind == "bad_output" and reply.results[(1, 0)].kind == "bad_output"


def test_the_out_folder_as_a_link_is_not_followed(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    np.save(elsewhere / "0_0_0.npy", np.ones(3))
    os.symlink(elsewhere, tmp_path / "out")
    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    (tmp_path / "reply.json").write_text(json.dumps(reply_of(results=[[{"kind": "returned", "n": 1}], []])))
    try:
        reply = protocol.read_reply(fd, CAPS)
    finally:
        os.close(fd)
    assert reply.results[(0, 0)].kind == "bad_output"


def test_progress_is_read_only_in_its_own_format(tmp_path):
    fd = job(tmp_path, None)
    try:
        (tmp_path / "progress.txt").write_text("cell 12")
        assert protocol.read_progress(fd) == "cell 12"
        (tmp_path / "progress.txt").write_text("cell 12; rm -rf /")
        assert protocol.read_progress(fd) == ""
    finally:
        os.close(fd)


def test_names_in_the_gradebook_never_run_as_formulas():
    for text in ("=1+1", "+1", "-1", "@SUM(A1)", "\tx", "\rx"):
        assert csv_cell(text) == "'" + text
    assert csv_cell("alice") == "alice" and csv_cell("a=b") == "a=b"


def test_feedback_file_names_are_unique_portable_and_stable():
    names = ["a b", "a_b", ".hidden", "..", "x%2Fy", "x/y", "=cmd", "Alice", "alice", "CON", "b\udcf6b", ""]
    files = feedback_names(names)
    assert len({f.lower() for f in files.values()}) == len(names)
    assert all(f and f.isascii() and not f.startswith(".") and "/" not in f for f in files.values())
    assert files["a_b"] == "a_b" and files["a b"] != "a_b"
    assert feedback_names(list(reversed(names))) == files
    assert display_name("b\udcf6b") == "b\\xf6b"


def test_feedback_shows_undecodable_names_readably():
    from attncourse.grading.gradebook import feedback_text
    from attncourse.grading.marking import StudentGrade

    sg = StudentGrade(
        "b\udcf6b", ["n\udcffb.ipynb", "x.ipynb"], "ok", ["n\udcffb.ipynb: errors in cells 3"], [], []
    )
    text = feedback_text(sg, 8)
    text.encode("utf-8")  # writable as UTF-8
    assert "Feedback for b\\xf6b" in text and "n\\xffb.ipynb: errors in cells 3" in text


def test_submissions_are_found_one_row_per_student(tmp_path):
    for name in ("alice.ipynb", ".dot.ipynb", "zed.ipynb", "notes.txt"):
        (tmp_path / name).write_text("{}")
    (tmp_path / "zed").mkdir()
    (tmp_path / "zed" / "a.ipynb").write_text("{}")
    (tmp_path / "trent").mkdir()
    for name in ("b.ipynb", "a.ipynb", "readme.md"):
        (tmp_path / "trent" / name).write_text("{}")
    (tmp_path / "trent" / ".ipynb_checkpoints").mkdir()
    (tmp_path / "empty").mkdir()
    (tmp_path / ".ipynb_checkpoints").mkdir()
    os.symlink("/etc/passwd", tmp_path / "link.ipynb")
    found, ignored = discover(str(tmp_path))
    by_name = {s.student: s for s in found}
    assert sorted(by_name) == [".dot", "alice", "empty", "link", "trent", "zed"]
    assert by_name["zed"].status == "ambiguous" and not by_name["zed"].paths
    assert [Path(p).name for p in by_name["trent"].paths] == ["a.ipynb", "b.ipynb"]
    assert by_name["empty"].status == "malformed"
    assert sorted(ignored) == [".ipynb_checkpoints", "notes.txt"]


def test_the_seccomp_filter_refuses_process_creation_only():
    prog = sandbox.seccomp_program("x86_64")
    insns = [struct.unpack("=HBBI", prog[i : i + 8]) for i in range(0, len(prog), 8)]
    ret_errno = [k & 0xFFFF for code, _, _, k in insns if code == 0x06 and k & 0xFFFF0000 == 0x00050000]
    assert 11 in ret_errno and 38 in ret_errno  # EAGAIN for processes, ENOSYS for clone3
    assert any(code == 0x45 and k == 0x10000 for code, _, _, k in insns)  # CLONE_THREAD is let through
    assert insns[-1] == (0x06, 0, 0, 0x7FFF0000)


def test_a_bubblewrap_that_cannot_start_is_a_refusal_that_says_why(tmp_path, monkeypatch):
    fake = tmp_path / "bin" / "bwrap"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to create a new namespace' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}{os.pathsep}{os.environ['PATH']}")
    with pytest.raises(GradingError, match="cannot start a sandbox here .bwrap: No permissions") as info:
        sandbox.find_sandbox("auto")
    assert "unprivileged_userns_clone" in str(info.value)


def test_grading_a_chapter_without_exercises_is_a_clear_error(tmp_path, capsys):
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    (bundle / "manifest.json").write_text(
        json.dumps({"format": 1, "exercises": [{"id": "ch01.stable_softmax"}], "notebooks": {}})
    )
    (tmp_path / "subs").mkdir()
    args = ["grade", str(bundle), str(tmp_path / "subs"), str(tmp_path / "out"), "--chapter", "ch08"]
    assert main(args) == 1
    assert "--chapter ch08: the bundle holds no exercises of ch08 (it holds ch01)" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_the_sandbox_never_uses_an_address_space_limit():
    limits = sandbox.resource_limits(sandbox.Limits(memory_mb=100))
    assert "AS" not in limits and limits["DATA"] == 100 * 2**20


def test_without_bubblewrap_grade_refuses_and_writes_nothing(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(sandbox.shutil, "which", lambda name: None)
    with pytest.raises(GradingError, match="apt-get install bubblewrap"):
        sandbox.find_sandbox("auto")
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    (bundle / "manifest.json").write_text(
        json.dumps({"format": 1, "exercises": [{"id": "ch01.stable_softmax"}], "notebooks": {}})
    )
    (tmp_path / "subs").mkdir()
    assert main(["grade", str(bundle), str(tmp_path / "subs"), str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    assert "bubblewrap (bwrap) is not installed" in err and "--sandbox none" in err
    assert not (tmp_path / "out").exists()


def test_the_sandbox_hides_protected_folders_inside_what_it_mounts(tmp_path):
    inside = os.path.join(sandbox.PACKAGE_ROOT, "attncourse", "grading")  # stands in for a protected folder
    box = sandbox._layout(
        sys.executable, [inside, os.path.join(sandbox.PACKAGE_ROOT, "attncourse", "nothing")]
    )
    assert box.masks == (inside,)  # a folder that does not exist has nothing to hide
    argv = box.argv("/tmp/job", "/tmp/cases")
    start = argv.index("--tmpfs")
    assert argv[start + 1] == "/tmp" and start <= 3  # before the mounts it must not hide
    assert "--ro-bind" not in argv[:start]
    assert "--unshare-all" in argv and "--die-with-parent" in argv
    with pytest.raises(GradingError, match="inside"):
        sandbox._layout(sys.executable, [sandbox.PACKAGE_ROOT])


def test_list_shows_each_exercise_kind(capsys):
    run = subprocess.run(
        [sys.executable, "-m", "attncourse.cli", "list", "ch05"], capture_output=True, text=True, cwd=ROOT
    )
    assert run.returncode == 0
    assert run.stdout.splitlines()[2].split()[:5] == [
        "5.3",
        "ch05.multi_head_attention",
        "implement",
        "2",
        "pt",
    ]
    for key in ("ch00", "ch08", "ch09"):  # chapters that may have no exercises yet
        assert main(["list", key]) == 0
        lines = capsys.readouterr().out.splitlines()
        assert lines == [f"no exercises in {key} yet"] or all(f" {key}." in line for line in lines)
