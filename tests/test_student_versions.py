"""The student editions in student/: up to date with their chapters, no line of a solution, opened by
the chapters' Colab badges and launch buttons.  That each runs top to bottom with every exercise
"not attempted yet" and a score of 0 is checked where it is executed, in the Colab stand-in
(tests/test_colab_standin.py)."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from built_book import book_pending

from attncourse.exercises import CHAPTERS, all_exercises
from attncourse.exercises.engine.notebook import replace_solutions, solution_lines

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT / "book" / "_ext"))

import make_student_notebooks  # noqa: E402
import stamp_notebooks  # noqa: E402
import student_launch  # noqa: E402

WITH_EXERCISES = {key: stem for key, (_, stem) in CHAPTERS.items() if all_exercises(key)}
# Every student edition: the English ones in student/, the Chinese ones in student/zh_CN and zh_TW.
STUDENT = sorted((ROOT / "student").rglob("*.ipynb"))
OURS = ("prompt", "exercise", "check", "solution")


def _source(cell: dict) -> str:
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


def _read(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def _code(line: str) -> str:
    """A line without its trailing comment, stripped ("" for a comment line)."""
    return re.sub(r"(^|\s)#.*$", "", line).strip()


def leaked_lines(student: dict, key: str, chapter: dict) -> list:
    """Solution lines of ``key``'s exercises that the student edition shows.

    A line counts when it is in an exercise cell of the student edition, or anywhere in it while
    the chapter's own teaching cells (outside the exercises) do not have it: a line the chapter
    teaches, like ``return out, weights``, is no secret, and neither is a line of a stub.
    """
    taught = {
        _code(line)
        for c in chapter["cells"]
        if not any(r in c.get("metadata", {}).get("attncourse", {}) for r in OURS)
        for line in _source(c).splitlines()
    }
    # what the exercise cells hand out on purpose: everything but the solution region (a diagnose
    # exercise's buggy code around the bug shares most of its lines with the fix)
    handed_out = {
        _code(line)
        for ex in all_exercises(key)
        for line in replace_solutions(ex.solution, ex.student_stub()).splitlines()
    }
    leaks = []
    for cell in student["cells"]:
        is_exercise = "exercise" in cell.get("metadata", {}).get("attncourse", {})
        shown = {_code(line) for line in _source(cell).splitlines()}
        for ex in all_exercises(key):
            for line in filter(None, map(_code, solution_lines(ex.id))):
                if line in shown and line not in handed_out and (is_exercise or line not in taught):
                    leaks.append((ex.id, line))
    return leaks


@pytest.mark.slow
def test_every_chapter_with_exercises_has_an_up_to_date_student_edition():
    wanted = make_student_notebooks.expected_files()
    chapters = {
        f"{stem}.ipynb" for stem in WITH_EXERCISES.values() if (ROOT / "book" / f"{stem}.ipynb").exists()
    }
    assert {p.name for p in wanted} == chapters
    assert sorted(wanted) == STUDENT, "student/ holds a notebook without a chapter, or lacks one"
    stale = [p.name for p, text in wanted.items() if p.read_text(encoding="utf-8") != text]
    assert not stale, f"out of date (run python scripts/make_student_notebooks.py): {stale}"


@pytest.mark.parametrize(
    "path",
    STUDENT,
    ids=[p.stem if p.parent.name == "student" else f"{p.parent.name}-{p.stem}" for p in STUDENT],
)
def test_a_student_edition_holds_no_solution(path):
    key = next(k for k, stem in WITH_EXERCISES.items() if stem == path.stem)
    student = _read(path)
    text = path.read_text(encoding="utf-8")
    assert "### BEGIN SOLUTION" not in text and "### END SOLUTION" not in text
    assert (
        "solution-reveal" not in text
        and "Show a worked solution" not in text
        and "查看参考解答" not in text
        and "檢視參考解答" not in text
    )
    assert all(not c.get("outputs") for c in student["cells"] if c["cell_type"] == "code")
    assert "widgets" not in student["metadata"]
    assert leaked_lines(student, key, _read(ROOT / "book" / path.name)) == []
    exercises = [c for c in student["cells"] if "exercise" in c["metadata"].get("attncourse", {})]
    assert [c["metadata"]["attncourse"]["exercise"] for c in exercises] == [e.id for e in all_exercises(key)]


def test_the_leak_check_finds_a_solution_line():
    path = ROOT / "student" / "04_self_attention.ipynb"
    student = _read(path)
    cell = next(
        c
        for c in student["cells"]
        if c["metadata"].get("attncourse", {}).get("exercise") == "ch04.output_without_token"
    )
    cell["source"] = re.sub(
        r"raise NotImplementedError\(.*\)", "return np.delete(out_new, j, axis=-2)  # leaked", _source(cell)
    )
    assert leaked_lines(student, "ch04", _read(ROOT / "book" / path.name)) == [
        ("ch04.output_without_token", "return np.delete(out_new, j, axis=-2)")
    ]


def test_badges_open_the_student_edition_and_the_install_cell_is_hidden_in_the_book():
    url, branch = stamp_notebooks.repository()
    for path in sorted((ROOT / "book").glob("*.ipynb")):
        nb = _read(path)
        first = _source(nb["cells"][0])
        target = f"student/{path.name}" if path.stem in WITH_EXERCISES.values() else f"book/{path.name}"
        assert f"{url.split('github.com/')[1]}/blob/{branch}/{target})" in first, path.name
        install = next(c for c in nb["cells"] if c["cell_type"] == "code")
        assert {"colab-install", "remove-cell", "nbval-ignore-output"} <= set(install["metadata"]["tags"])


def test_the_launch_button_is_pointed_at_the_student_edition(tmp_path):
    (tmp_path / "student").mkdir()
    (tmp_path / "student" / "04_self_attention.ipynb").write_text("{}")
    colab = "https://colab.research.google.com/github/attncourse/attention-course/blob/main/book/{}.ipynb"

    def context(stem):
        return {
            "header_buttons": [
                {"label": "download-buttons", "buttons": [{"url": "_sources/x.ipynb"}]},
                {
                    "label": "launch-buttons",
                    "buttons": [{"text": "Colab", "url": colab.format(stem)}],
                },
            ]
        }

    app = SimpleNamespace(confdir=str(tmp_path), config=SimpleNamespace(language=None))
    with_student, without = context("04_self_attention"), context("intro")
    student_launch.point_colab_at_student(app, "book/04_self_attention", "page.html", with_student, None)
    student_launch.point_colab_at_student(app, "book/intro", "page.html", without, None)
    assert with_student["header_buttons"][1]["buttons"][0]["url"] == (
        "https://colab.research.google.com/github/attncourse/attention-course/blob/main/student/04_self_attention.ipynb"
    )
    assert with_student["header_buttons"][0]["buttons"][0]["url"] == "_sources/x.ipynb"
    assert without["header_buttons"][1]["buttons"][0]["url"] == colab.format("intro")
    # a Chinese page opens the Chinese student edition, and the English one where there is none yet
    (tmp_path / "student" / "zh_CN").mkdir()
    (tmp_path / "student" / "zh_CN" / "04_self_attention.ipynb").write_text("{}")
    (tmp_path / "student" / "05_multi_head_attention.ipynb").write_text("{}")
    zh = SimpleNamespace(confdir=str(tmp_path), config=SimpleNamespace(language="zh_CN"))
    translated, fallback = context("04_self_attention"), context("05_multi_head_attention")
    student_launch.point_colab_at_student(zh, "book/04_self_attention", "page.html", translated, None)
    student_launch.point_colab_at_student(zh, "book/05_multi_head_attention", "page.html", fallback, None)
    blob = "https://colab.research.google.com/github/attncourse/attention-course/blob/main/student/"
    assert translated["header_buttons"][1]["buttons"][0]["url"] == blob + "zh_CN/04_self_attention.ipynb"
    assert fallback["header_buttons"][1]["buttons"][0]["url"] == blob + "05_multi_head_attention.ipynb"


def test_the_book_config_loads_the_launch_extension():
    yaml = pytest.importorskip("yaml")
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    assert config["sphinx"]["local_extensions"]["student_launch"] == "book/_ext"
    assert "student_launch" in config["sphinx"]["config"]["extensions"]
    assert "student" in config["exclude_patterns"]


@pytest.mark.book
def test_the_built_book_links_colab_to_the_student_editions():
    """On the built HTML (skipped when the book is not built): badge and launch button agree."""
    html_dir = ROOT / "_build" / "html" / "book"
    book_pending(html_dir)
    if not html_dir.exists():
        pytest.skip("the book is not built (jupyter-book build . -W)")
    for stem in WITH_EXERCISES.values():
        page = html_dir / f"{stem}.html"
        if not page.exists():
            continue
        links = set(
            re.findall(r'https://colab\.research\.google\.com/github/[^"\']+?\.ipynb', page.read_text())
        )
        assert links and all(link.endswith(f"/student/{stem}.ipynb") for link in links), (stem, links)
        assert "In Colab, install attncourse" not in page.read_text(), f"{stem}: the install cell shows"


@pytest.mark.parametrize("language", ["zh_CN", "zh_TW"])
def test_a_chinese_edition_runs_the_english_editions_code_and_sets_its_language(language):
    """What the Colab stand-in runs of one edition stands for the others: a translated edition's
    code cells are the English edition's, in the same order, with one line more (its setup cell's
    ``set_language``)."""
    speak = make_student_notebooks.SPEAK[language]
    english = sorted((ROOT / "student").glob("*.ipynb"))
    assert len(english) == len(WITH_EXERCISES)
    for path in english:
        translated = ROOT / "student" / language / path.name
        assert translated.exists(), translated
        ours = [_source(c) for c in _read(path)["cells"] if c["cell_type"] == "code"]
        theirs = [_source(c) for c in _read(translated)["cells"] if c["cell_type"] == "code"]
        assert len(theirs) == len(ours), path.name
        changed = [(a, b) for a, b in zip(ours, theirs) if a != b]
        assert len(changed) == 1, f"{translated}: {len(changed)} code cells differ from the English edition's"
        a, b = changed[0]
        assert b == a.replace("\nimport attncourse as ac\n", f"\nimport attncourse as ac\n\n{speak}\n", 1), (
            translated
        )
