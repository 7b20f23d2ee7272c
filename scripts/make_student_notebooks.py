"""Write the student edition of every chapter that has exercises: ``student/<stem>.ipynb``.

The student notebook is the chapter with each solution replaced by a stub that raises
``NotImplementedError`` (the buggy code, for the spot-the-bug exercises), the worked-solution
dropdowns removed, the ``check`` cells kept and every output cleared.  It is committed, so that the
chapter's Colab badge and the book's Colab launch button can open it from the repository; the web
book keeps the worked solutions for self-study.

    python scripts/make_student_notebooks.py          # rewrite what is out of date
    python scripts/make_student_notebooks.py --check  # exit 1 and list what is out of date

Edit the chapter in ``book/``, never the file in ``student/``: this script overwrites it.  After
new exercises are registered, run the three scripts in this order:

    python scripts/sync_exercise_cells.py     # the exercise cells of the chapters
    python scripts/stamp_notebooks.py         # the Colab badges (they point here)
    python scripts/make_student_notebooks.py  # the student editions, badges included
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STUDENT = ROOT / "student"
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

import i18n  # noqa: E402
import stamp_notebooks  # noqa: E402

from attncourse.exercises import CHAPTERS, all_exercises  # noqa: E402
from attncourse.exercises.engine.notebook import to_student  # noqa: E402

BADGE_IMAGE = "https://colab.research.google.com/assets/colab-badge.svg"
MD_LINK = re.compile(r"(!?)\[([^\[\]]*)\]\(([^)\s]+)\)")
HTML_SRC = re.compile(r'(\bsrc=")([^"]+)(")')


def student_stems() -> list[str]:
    """Stems of the chapters with at least one registered exercise, in book order."""
    return [stem for key, (_, stem) in CHAPTERS.items() if all_exercises(key)]


def _relative(target: str) -> bool:
    return not (re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith(("#", "/")))


def _relink(source: str, stems: set[str], repository: tuple[str, str]) -> str:
    """Rewrite links relative to book/ so they work from student/ and in Colab; ``repository`` is
    ``stamp_notebooks.repository()``, read once per notebook (it parses _config.yml)."""
    url, branch = repository
    github = url.split("github.com/", 1)[1]
    raw = f"https://raw.githubusercontent.com/{github}/{branch}/book/"
    blob = f"{url}/blob/{branch}/book/"

    def link(m: re.Match) -> str:
        bang, text, target = m.groups()
        if not _relative(target):
            return m.group(0)
        if bang:
            new = BADGE_IMAGE if target.endswith("colab-badge.svg") else raw + target
        else:
            path, _, anchor = target.partition("#")
            same_folder = path.endswith(".ipynb") and path[: -len(".ipynb")] in stems
            new = target if same_folder else blob + target
        return f"{bang}[{text}]({new})"

    source = MD_LINK.sub(link, source)
    return HTML_SRC.sub(
        lambda m: m.group(0) if not _relative(m.group(2)) else f"{m.group(1)}{raw}{m.group(2)}{m.group(3)}",
        source,
    )


def _lines(text: str) -> list[str]:
    return text.splitlines(True)


# The translated editions: student/<language>/<stem>.ipynb, written for a chapter whose page is
# translated in full (scripts/i18n.py); until then a chapter has its English edition only.
LANGUAGES = ("zh_CN", "zh_TW")
STUDENT_NOTE = {
    "en": (
        "*Student edition.* The exercises at the end are yours to write: fill in each function, run "
        "its cell, then run the `check` below it. The worked solutions are in the book.\n"
        "(Made from `book/{stem}.ipynb` by `scripts/make_student_notebooks.py`: edit the chapter, "
        "not this copy.)"
    ),
    "zh_CN": (
        "*学生版。* 章末的练习由你来完成：补全每个函数，运行它所在的单元格，再运行它下面的 `check`。"
        "参考解答在书中。\n"
        "（由 `scripts/make_student_notebooks.py` 从 `book/{stem}.ipynb` 生成：请修改章节本身，不要修改这份副本。）"
    ),
    "zh_TW": (
        "*學生版。* 章末的練習由你來完成：補全每個函式，執行它所在的儲存格，再執行它下面的 `check`。"
        "參考解答在書中。\n"
        "（由 `scripts/make_student_notebooks.py` 從 `book/{stem}.ipynb` 產生：請修改章節本身，不要修改這份副本。）"
    ),
}


class Untranslated(Exception):
    """A markdown block of the chapter has no translation in the language's catalog."""


SPEAK = {
    "zh_CN": 'ac.set_language("zh_CN")  # check、score、提示和评分反馈都用简体中文',
    "zh_TW": 'ac.set_language("zh_TW")  # check、score、提示和評分回饋都用繁體中文',
}


def _speak(nb: dict, language: str) -> None:
    """The setup cell of a translated edition sets the package's language (after its import)."""
    for cell in nb["cells"]:
        if cell.get("cell_type") == "code" and "colab-install" in cell.get("metadata", {}).get("tags", []):
            text = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
            if "\nimport attncourse as ac\n" not in text:
                raise ValueError(
                    "the setup cell does not import attncourse as ac: nowhere to set the language"
                )
            cell["source"] = _lines(
                text.replace(
                    "\nimport attncourse as ac\n", f"\nimport attncourse as ac\n\n{SPEAK[language]}\n", 1
                )
            )
            return
    raise ValueError("no setup cell (tag colab-install): nowhere to set the language")


def student_notebook(chapter_nb: dict, stem: str, stems: set[str], language: str = "en") -> dict:
    """The student edition of one chapter notebook in ``language``, as a new dict; raises
    ``Untranslated`` when the chapter's catalog for ``language`` lacks a block."""
    nb = to_student(chapter_nb)
    if language != "en":
        lookup = i18n.translations(language, f"book/{stem}")
        for cell in nb["cells"]:
            if cell.get("cell_type") == "markdown":
                text = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
                new, missing = i18n.translate_markdown(text, lookup)
                if missing:
                    raise Untranslated(
                        f"{stem} ({language}): {len(missing)} blocks, first {missing[0][:60]!r}"
                    )
                cell["source"] = _lines(new)
        _speak(nb, language)
    # Only what does not change when the chapter is executed again: no saved slider state, no
    # language_info (the executing Python's version), no per-cell execution timings.
    nb["metadata"] = {k: v for k, v in nb.get("metadata", {}).items() if k in ("kernelspec", "attncourse")}
    for cell in nb["cells"]:
        cell.get("metadata", {}).pop("execution", None)
    repository = stamp_notebooks.repository()
    for cell in nb["cells"]:
        if cell.get("cell_type") == "markdown":
            text = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
            new = _relink(text, stems, repository)
            if new != text:
                cell["source"] = _lines(new)
    note = {
        "cell_type": "markdown",
        "id": f"{stem.replace('_', '-')}-student-edition"[:64],
        "metadata": {"attncourse": {"student_note": stem}},
        "source": _lines(STUDENT_NOTE[language].format(stem=stem)),
    }
    nb["cells"].insert(1, note)
    return nb


def render(nb: dict) -> str:
    return json.dumps(nb, indent=1, ensure_ascii=False) + "\n"


def expected_files() -> dict[Path, str]:
    """student/<stem>.ipynb -> its content, for every chapter with exercises that has a notebook."""
    stems = student_stems()
    out = {}
    for stem in stems:
        source = ROOT / "book" / f"{stem}.ipynb"
        if source.exists():
            chapter = json.loads(source.read_text(encoding="utf-8"))
            out[STUDENT / f"{stem}.ipynb"] = render(student_notebook(chapter, stem, set(stems)))
            for language in LANGUAGES:
                try:
                    edition = student_notebook(chapter, stem, set(stems), language)
                except Untranslated:
                    continue
                out[STUDENT / language / f"{stem}.ipynb"] = render(edition)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--check", action="store_true", help="only report student notebooks that are out of date"
    )
    args = parser.parse_args(argv)
    wanted = expected_files()
    stale = [p for p, text in wanted.items() if not p.exists() or p.read_text(encoding="utf-8") != text]
    extra = sorted(p for p in STUDENT.glob("**/*.ipynb") if p not in wanted) if STUDENT.exists() else []
    missing_chapters = [s for s in student_stems() if not (ROOT / "book" / f"{s}.ipynb").exists()]
    for stem in missing_chapters:
        print(f"book/{stem}.ipynb does not exist: no student notebook for it")
    if args.check:
        for p in stale:
            print(f"out of date: {p.relative_to(ROOT)}")
        for p in extra:
            print(f"no chapter with exercises behind it: {p.relative_to(ROOT)}")
        if stale or extra:
            print("(run python scripts/make_student_notebooks.py)")
            return 1
        print("every student notebook is up to date")
        return 0
    STUDENT.mkdir(exist_ok=True)
    for p in stale:
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(wanted[p], encoding="utf-8")
    for p in extra:
        p.unlink()
    changed = [p.relative_to(ROOT).as_posix() for p in stale + extra]
    print(("updated: " + ", ".join(changed)) if changed else "every student notebook is up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
