"""The translated editions: catalogs in step with the English source, translations that keep the
math, code, links and numbers, markdown translated block by block, and the language switch."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

# The translation tools come with requirements.txt; the numpy-only tier has none of them.
pytest.importorskip("babel", reason="the translation tools (requirements.txt) are not installed")
pytest.importorskip("markdown_it", reason="the translation tools (requirements.txt) are not installed")

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT / "book" / "_ext"))

import i18n  # noqa: E402
import language_switch  # noqa: E402

CHAPTERS = sorted((ROOT / "book").glob("*.ipynb"))


def _catalog_ids(language: str, stem: str) -> set:
    from babel.messages.pofile import read_po

    with (i18n.LOCALES / language / "LC_MESSAGES" / "book" / f"{stem}.po").open("rb") as f:
        return {m.id for m in read_po(f) if m.id}


@pytest.mark.parametrize("language", ["zh_CN", "zh_TW"])
@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_every_block_of_the_chapter_is_in_its_catalog(chapter, language):
    # A changed English sentence is a message the catalog does not have yet: run
    # `python scripts/i18n.py update` and translate it in the same commit.
    ids = _catalog_ids(language, chapter.stem)
    identity = {i: i for i in ids}
    missing = []
    for cell in json.loads(chapter.read_text(encoding="utf-8"))["cells"]:
        if cell["cell_type"] == "markdown":
            missing += i18n.translate_markdown("".join(cell["source"]), identity)[1]
    assert not missing, (
        f"not in locales/{language}/.../{chapter.stem}.po (run scripts/i18n.py update): {missing[:3]}"
    )


@pytest.mark.parametrize("language", ["zh_CN", "zh_TW"])
def test_every_catalog_is_translated_and_none_is_fuzzy(language):
    # A changed English sentence turns its entry fuzzy at the next `scripts/i18n.py update`: it is
    # translated again in the same commit, so no page of a translated edition shows English.
    catalogs = {p: c for p, c in i18n.counts().items() if p.is_relative_to(i18n.LOCALES / language)}
    assert len(catalogs) == len(CHAPTERS) + len(list((ROOT / "book").glob("*.md"))), sorted(catalogs)
    open_ = [f"{p.name}: {u} untranslated, {f} fuzzy" for p, (_, u, f) in catalogs.items() if u or f]
    assert not open_, "\n".join(open_)


def test_glossary_terms_are_rendered_with_the_glossarys_words():
    problems = [
        p
        for language in ("zh_CN", "zh_TW")
        for path in sorted((i18n.LOCALES / language).rglob("*.po"))
        for p in i18n.term_problems(path, language)
    ]
    assert not problems, "\n".join(problems[:10])


def test_translations_keep_the_math_code_links_and_numbers():
    problems = [p for path in sorted(i18n.LOCALES.rglob("*.po")) for p in i18n.lint(path)]
    assert not problems, "\n".join(problems[:10])


def test_lint_finds_a_lost_number_and_a_changed_formula(tmp_path):
    from babel.messages.catalog import Catalog
    from babel.messages.pofile import write_po

    catalog = Catalog(locale="zh_CN")
    catalog.add("The weights at $T = 2$ sum to 1.", "$T = 2$ 时权重之和为 1。")  # kept
    catalog.add("It grows 16 times from $L$ to $4L$.", "从 $L$ 到 $4L$ 增长了十几倍。")  # lost 16
    catalog.add("Call `ac.softmax` on $x$.", "对 $y$ 调用 `ac.softmax`。")  # changed $x$
    path = tmp_path / "page.po"
    with path.open("wb") as f:
        write_po(f, catalog)
    problems = i18n.lint(path)
    assert len(problems) == 2 and "'16'" in problems[0] and "'$x$'" in problems[1], problems


def test_markdown_is_translated_block_by_block_and_math_stays():
    text = (
        "# Softmax\n\nAttention turns scores into weights. This chapter\nbuilds it.\n\n"
        "* First, about $x_i$\n  continued.\n* Second.\n\n$$\np = 1\n$$\n\n| a | ab |\n|---|---|\n| ab | a |\n\n"
        ":::{note}\nInside a note,\ntwo lines.\n:::\n"
    )
    lookup = {
        "Softmax": "Softmax（归一化指数函数）",
        "Attention turns scores into weights. This chapter builds it.": "注意力把分数变成权重。本章构造它。",
        "First, about $x_i$ continued.": "第一项，关于 $x_i$，接着写。",
        "a": "甲",
        "ab": "乙",
        "Inside a note, two lines.": "注释里，两行。",
    }
    out, missing = i18n.translate_markdown(text, lookup)
    assert out == (
        "# Softmax（归一化指数函数）\n\n注意力把分数变成权重。本章构造它。\n\n"
        "* 第一项，关于 $x_i$，接着写。\n* Second.\n\n$$\np = 1\n$$\n\n| 甲 | 乙 |\n|---|---|\n| 乙 | 甲 |\n\n"
        ":::{note}\n注释里，两行。\n:::\n"
    )
    assert missing == ["Second."]


@pytest.mark.parametrize(
    ("pagename", "language", "expected"),
    [
        ("book/03_scaling", None, ["../zh/book/03_scaling.html", "../zh-tw/book/03_scaling.html"]),
        ("book/03_scaling", "zh_CN", ["../../book/03_scaling.html", "../../zh-tw/book/03_scaling.html"]),
        ("book/03_scaling", "zh_TW", ["../../book/03_scaling.html", "../../zh/book/03_scaling.html"]),
        ("index", "zh_CN", ["../index.html", "../zh-tw/index.html"]),
    ],
)
def test_the_switch_links_the_same_page_in_the_other_editions(pagename, language, expected):
    switch, alternates = language_switch.switch_html(pagename, language)
    import re

    assert re.findall(r'<a href="([^"]+)"', switch) == expected
    assert alternates.count('rel="alternate"') == 3  # every edition, this one included
    here = language_switch.edition_of(language)
    assert f'hreflang="{here.tag}"' not in switch  # no link to the page itself


def test_an_unknown_language_is_an_error():
    with pytest.raises(ValueError, match="no edition for language 'fr'"):
        language_switch.edition_of("fr")


def test_traditional_conversion_keeps_linear_after_zai():
    """OpenCC alone turns 在线性注意力 ("in linear attention") into 線上性 ("online" + 性)."""
    pytest.importorskip("opencc")
    assert i18n.to_traditional("在线性注意力及其同类方法中") == "在線性注意力及其同類方法中"
    assert i18n.to_traditional("在线 softmax") == "線上 softmax"  # online softmax stays online


def test_a_quoted_title_is_a_name_and_not_a_term(tmp_path):
    from babel.messages.catalog import Catalog
    from babel.messages.pofile import write_po

    catalog = Catalog(locale="zh_CN")
    catalog.add('The paper "Attention Is All You Need" (2017).', "论文 “Attention Is All You Need”（2017）。")
    catalog.add("Attention pools the values.", "它对值做加权平均。")  # the term itself, not rendered
    path = tmp_path / "page.po"
    with path.open("wb") as f:
        write_po(f, catalog)
    problems = i18n.term_problems(path, "zh_CN")
    assert len(problems) == 1 and "Attention pools" in problems[0], problems


def test_inline_code_naming_a_directive_is_code_and_not_a_role():
    parts = i18n.kept_parts("a `{admonition}` with `:class: dropdown`, and {doc}`the intro <intro>`")
    assert sorted(parts) == sorted(["`{admonition}`", "`:class: dropdown`", "{doc}intro"]), parts
