"""Keep the translation catalogs in step with their English source: the book's pages, and what
the package says to a learner (``attncourse/locales``: ``check``, hints, the grader's feedback).

usage:
  python scripts/i18n.py update   extract the English messages and update every catalog
  python scripts/i18n.py check    count untranslated and fuzzy entries; exit 1 if there are any
  python scripts/i18n.py lint     list translations that lost math, code, links or numbers, or
                                  render a glossary term without the glossary's word for it

The English notebooks and pages are the only source.  ``update``

1. extracts their messages with Sphinx's gettext builder (one ``.pot`` per page, nothing
   executed) into ``_build/gettext``;
2. merges them into ``locales/zh_CN/LC_MESSAGES/book/<page>.po`` with sphinx-intl: a new
   sentence arrives untranslated, a changed one keeps its old translation marked fuzzy;
3. writes the traditional edition, ``locales/zh_TW``, from the simplified one: OpenCC's
   Taiwan conversion (``s2twp``, Taiwan phrases), then the glossary's 繁體 column
   (``book/appendix_glossary.md``) where Taiwan usage differs from the conversion.  An entry of
   a ``zh_TW`` catalog whose translator comment says ``human`` is written by a person and is
   kept as it is;
4. does the same for the package's catalog (``scripts/package_messages.py``: its messages are
   collected from the source and the exercise registry, not from Sphinx).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
LOCALES = ROOT / "locales"
POT_DIR = ROOT / "_build" / "gettext"
SOURCE_LANGUAGE, DERIVED_LANGUAGE = "zh_CN", "zh_TW"
HUMAN = "human"  # the translator comment that marks a hand-written zh_TW entry
# OpenCC's phrase table reads 在线 as "online" (線上) wherever it occurs, also in 在 + 线性 ("in
# linear ..."): the conversions it gets wrong in these catalogs, put right after converting.
CONVERSION_FIXES = {"線上性": "在線性"}


def extract() -> None:
    """English messages of every page into ``_build/gettext/**/*.pot`` (nothing is executed)."""
    import build_translations

    settings = {"nb_execution_mode": "off", "gettext_compact": False}
    build_translations.sphinx("gettext", POT_DIR, ROOT / "_build" / ".doctrees-gettext", settings)


def glossary_overrides() -> dict[str, str]:
    """{what OpenCC makes of a 简体 term: the glossary's 繁體 term}, where the two differ."""
    import opencc

    convert = opencc.OpenCC("s2twp").convert
    out = {}
    for line in (ROOT / "book" / "appendix_glossary.md").read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 4 or cells[0] in ("English", "") or set(cells[0]) <= set("-"):
            continue
        simplified, traditional = cells[1], cells[2]
        if traditional in ("—", "") or not re.search(r"[\u4e00-\u9fff]", simplified):
            continue
        converted = convert(simplified)
        if converted != traditional:
            out[converted] = traditional
    return out


# A chapter's Colab badge opens its student edition; a translated page's opens the edition in its
# language (student/<language>/<stem>.ipynb, written once the chapter is translated in full).
BADGE = re.compile(
    r"^\[!\[Open in Colab\]\(([^)]+)\)\]\((https://colab\.research\.google\.com/\S+?/student/)(\w+\.ipynb)\)$"
)
BADGE_TEXT = {"zh_CN": "在 Colab 中打开", "zh_TW": "在 Colab 中開啟"}


def localise_badges(language: str) -> None:
    """Point the Colab badges of ``language``'s catalogs at the student editions in that language."""
    from babel.messages.pofile import read_po, write_po

    for path in sorted((LOCALES / language).rglob("*.po")):
        with path.open("rb") as f:
            catalog = read_po(f, locale=language)
        changed = False
        for message in catalog:
            match = BADGE.match(message.id) if message.id else None
            if match:
                image, colab, notebook = match.groups()
                new = f"[![{BADGE_TEXT[language]}]({image})]({colab}{language}/{notebook})"
                changed |= message.string != new or message.fuzzy
                message.string, message.flags = new, set(message.flags) - {"fuzzy"}
        if changed:
            with path.open("wb") as f:
                write_po(f, catalog, width=0)


def to_traditional(text: str, convert=None, overrides=None) -> str:
    """``text`` in Taiwan's traditional Chinese: OpenCC's s2twp, the glossary's 繁體 words where
    they differ from the conversion, then ``CONVERSION_FIXES``."""
    if convert is None:
        import opencc

        convert = opencc.OpenCC("s2twp").convert
    if overrides is None:
        overrides = sorted(glossary_overrides().items(), key=lambda kv: -len(kv[0]))  # longest first
    text = convert(text)
    for converted, traditional in overrides:
        text = text.replace(converted, traditional)
    for wrong, right in CONVERSION_FIXES.items():
        text = text.replace(wrong, right)
    return text


def catalog_pairs() -> list[tuple[Path, Path]]:
    """(simplified catalog, the traditional one derived from it): the book's pages and the package's
    messages (``attncourse/locales``, kept by ``scripts/package_messages.py``)."""
    pairs = [
        (source, LOCALES / DERIVED_LANGUAGE / source.relative_to(LOCALES / SOURCE_LANGUAGE))
        for source in sorted((LOCALES / SOURCE_LANGUAGE).rglob("*.po"))
    ]
    package = ROOT / "attncourse" / "locales"
    return pairs + [(package / f"{SOURCE_LANGUAGE}.po", package / f"{DERIVED_LANGUAGE}.po")]


def all_catalogs() -> list[Path]:
    return [path for pair in catalog_pairs() for path in pair]


def derive_traditional() -> int:
    """Write every traditional catalog from its simplified one (``catalog_pairs``); returns the
    number of entries written."""
    import opencc
    from babel.messages.pofile import read_po, write_po

    convert = opencc.OpenCC("s2twp").convert
    overrides = sorted(glossary_overrides().items(), key=lambda kv: -len(kv[0]))  # longest first
    written = 0
    for source, target in catalog_pairs():
        with source.open("rb") as f:
            catalog = read_po(f, locale=SOURCE_LANGUAGE)
        human = {}
        if target.exists():
            with target.open("rb") as f:
                human = {
                    m.id: m for m in read_po(f, locale=DERIVED_LANGUAGE) if m.id and HUMAN in m.user_comments
                }
        catalog.locale = DERIVED_LANGUAGE  # type: ignore[assignment]
        for message in catalog:
            if not message.id:
                continue
            if message.id in human:
                message.string = human[message.id].string
                message.user_comments = human[message.id].user_comments
                message.flags = set(human[message.id].flags)
            elif message.string and message.string != message.id:  # a copy (a formula, the glossary's
                message.string = to_traditional(message.string, convert, overrides)  # 简体 column)
                # stays as it is
            written += 1
        target.parent.mkdir(parents=True, exist_ok=True)
        with target.open("wb") as f:
            write_po(f, catalog, width=0)
    return written


def counts() -> dict[Path, tuple[int, int, int]]:
    """{catalog: (entries, untranslated, fuzzy)} for every catalog under ``locales``."""
    from babel.messages.pofile import read_po

    out = {}
    for path in all_catalogs():
        with path.open("rb") as f:
            messages = [m for m in read_po(f) if m.id]
        out[path] = (len(messages), sum(not m.string for m in messages), sum(m.fuzzy for m in messages))
    return out


# What a translation must carry over from its English message unchanged: math, inline code, link
# targets, MyST roles, and every number.
MATH = re.compile(r"\$\$.+?\$\$|\$[^$]+\$", re.DOTALL)
CODE = re.compile(r"``?[^`]+``?")
TARGET = re.compile(r"\]\(([^)\s]+)\)|<(https?://[^>]+)>")
# {doc}`title <target>` or {doc}`target`; not `{admonition}`, inline code that names a directive
ROLE = re.compile(r"(?<!`)\{([a-z:]+)\}`(?:[^`<]*<([^`>]+)>|([^`]*))`")
NUMBER = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)*(?![\w])")


def kept_parts(text: str) -> list[str]:
    """The parts of ``text`` a translation must keep as they are (math, code, targets, numbers)."""
    # a role keeps its name and target; an explicit title ({doc}`title <target>`) is translated
    parts = [f"{{{m.group(1)}}}{m.group(2) or m.group(3)}" for m in ROLE.finditer(text)]
    text = ROLE.sub(" ", text)
    for pattern in (MATH, TARGET, CODE):
        parts += [m.group(0) for m in pattern.finditer(text)]
        text = pattern.sub(" ", text)
    return parts + NUMBER.findall(text)


def lint(path: Path) -> list[str]:
    """What each translated entry of ``path`` lost or changed of its English message."""
    from collections import Counter

    from babel.messages.pofile import read_po

    problems = []
    with path.open("rb") as f:
        for message in read_po(f):
            if not message.id or not message.string or message.fuzzy:
                continue  # a fuzzy entry is untranslated until a person confirms it (`check` counts it)
            string = re.sub(r"/student/zh_(CN|TW)/", "/student/", message.string)  # a localised badge
            missing = Counter(kept_parts(message.id)) - Counter(kept_parts(string))
            if missing:
                problems.append(f"{path.name}: {message.id[:60]!r} lost {sorted(missing)}")
    return problems


def translations(language: str, page: str) -> dict[str, str]:
    """{English message: translation} of ``page`` (e.g. ``book/01_softmax``), fuzzy entries left out."""
    from babel.messages.pofile import read_po

    path = LOCALES / language / "LC_MESSAGES" / f"{page}.po"
    if not path.exists():
        return {}
    with path.open("rb") as f:
        return {m.id: m.string for m in read_po(f) if m.id and m.string and not m.fuzzy}


def _markdown():
    from markdown_it import MarkdownIt
    from mdit_py_plugins.amsmath import amsmath_plugin
    from mdit_py_plugins.colon_fence import colon_fence_plugin
    from mdit_py_plugins.dollarmath import dollarmath_plugin

    # the syntax the book's cells use (_config.yml's myst_enable_extensions)
    return (
        MarkdownIt("commonmark")
        .enable("table")
        .use(dollarmath_plugin)
        .use(colon_fence_plugin)
        .use(amsmath_plugin)
    )


def translate_markdown(text: str, lookup: dict[str, str]) -> tuple[str, list[str]]:
    """``text`` (one markdown cell) with each heading, paragraph and table cell replaced by its
    translation in ``lookup``; returns the new text and the messages that had none (kept in English).

    A message is what Sphinx's gettext builder extracts: the block's inline source with its line
    breaks turned into spaces.  Math blocks and code are not messages and stay as they are."""
    lines = text.splitlines(True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
        trailing_newline = False
    else:
        trailing_newline = True
    tokens = _markdown().parse(text)
    new_lines: dict[int, list[str]] = {}  # first line -> its replacement; the rest of the block -> []
    missing = []
    for i, token in enumerate(tokens):
        if token.type == "colon_fence" and token.map and token.content.strip():
            start, end = token.map
            body, lost = translate_markdown(token.content, lookup)
            missing += lost
            new_lines[start + 1] = [body if body.endswith("\n") else body + "\n"]
            for n in range(start + 2, end - 1):
                new_lines[n] = []
            continue
        if token.type != "inline" or not token.map or not token.content.strip():
            continue
        key = " ".join(token.content.split("\n")).strip()
        if key not in lookup:
            missing.append(key)
            continue
        start, end = token.map
        if tokens[i - 1].type in ("th_open", "td_open"):  # a table cell: only its text changes
            row = new_lines.get(start, [lines[start]])[0]
            cell = re.compile(r"(^\s*\||(?<=\|))(\s*)" + re.escape(token.content.strip()) + r"(\s*)(?=\||$)")
            translation = lookup[key]
            new_lines[start] = [
                cell.sub(lambda m: m.group(1) + m.group(2) + translation + m.group(3), row, count=1)
            ]
            continue
        first = lines[start]
        prefix = first[: first.find(token.content.split("\n")[0])]
        new_lines[start] = [prefix + lookup[key] + "\n"]
        for n in range(start + 1, end):
            new_lines[n] = []
    out = "".join("".join(new_lines.get(n, [line])) for n, line in enumerate(lines))
    return (out if trailing_newline else out[:-1]), missing


# Single English words checked against the glossary; the others ("key", "value", "mask", ...) are
# ordinary English words too often ("the key point") for a check by word.
CHECKED_WORDS = {
    "attention",
    "query",
    "encoder",
    "decoder",
    "embedding",
    "temperature",
    "saturation",
    "bottleneck",
}


def glossary_terms(language: str) -> dict[str, str]:
    """{English term: its term in ``language``} from the glossary, for the terms the check reads:
    every term of two words or more, and ``CHECKED_WORDS``."""
    column = {"zh_CN": 1, "zh_TW": 2}[language]
    out = {}
    for line in (ROOT / "book" / "appendix_glossary.md").read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 4 or cells[0] in ("English", "") or set(cells[0]) <= set("-"):
            continue
        english = re.sub(r"\s*\(.*?\)", "", cells[0]).strip()  # "recurrent neural network (RNN)"
        term = cells[column] if cells[column] not in ("—", "") else cells[1]
        term = re.split(r"[（(]", term)[0].strip()  # "头（注意力头）" -> "头"
        if (" " in english or "-" in english or english in CHECKED_WORDS) and re.search(
            r"[\u4e00-\u9fff]", term
        ):
            out[english] = term
    return out


# A quoted title ("Attention Is All You Need") is a name, kept in English: its words are not terms.
QUOTED = re.compile(r'"[^"]*"|“[^”]*”')


def term_problems(path: Path, language: str) -> list[str]:
    """Translations in ``path`` that render a glossary term without the glossary's word for it."""
    from babel.messages.pofile import read_po

    terms = glossary_terms(language)
    patterns = {
        e: re.compile(r"\b" + re.escape(e).replace("\\ ", "[ -]") + r"(s|es)?\b", re.IGNORECASE)
        for e in terms
    }
    problems = []
    with path.open("rb") as f:
        for message in read_po(f):
            if not message.id or not message.string or message.string == message.id or message.fuzzy:
                continue  # nothing to translate (a formula, a badge) and copied as it is
            prose = ROLE.sub(" ", message.id)
            for pattern in (MATH, TARGET, CODE, QUOTED):
                prose = pattern.sub(" ", prose)
            for english, term in terms.items():
                if patterns[english].search(prose) and term not in message.string:
                    problems.append(f"{path.name}: {message.id[:50]!r} has {english!r} but not {term!r}")
    return problems


def main(argv: list[str]) -> int:
    command = argv[0] if argv else "check"
    if command == "update":
        extract()
        import package_messages

        print(f"attncourse: {package_messages.update()} messages untranslated")
        subprocess.run(
            [sys.executable, "-m", "sphinx_intl", "update", "-p", str(POT_DIR), "-l", SOURCE_LANGUAGE,
             "-d", str(LOCALES), "-w", "0"],
            check=True, cwd=ROOT,
        )  # fmt: skip
        localise_badges(SOURCE_LANGUAGE)
        print(f"{DERIVED_LANGUAGE}: {derive_traditional()} entries derived from {SOURCE_LANGUAGE}")
        localise_badges(DERIVED_LANGUAGE)
        command = "check"
    if command == "check":
        bad = 0
        for path, (n, untranslated, fuzzy) in counts().items():
            if untranslated or fuzzy:
                bad += 1
                print(f"{path.relative_to(ROOT)}: {untranslated} untranslated, {fuzzy} fuzzy of {n}")
        print("every entry is translated" if not bad else f"{bad} catalogs need work")
        return 1 if bad else 0
    if command == "lint":
        problems = [p for path in all_catalogs() for p in lint(path)]
        problems += [
            p
            for language in (SOURCE_LANGUAGE, DERIVED_LANGUAGE)
            for path in sorted((LOCALES / language).rglob("*.po"))
            for p in term_problems(path, language)
        ]
        print("\n".join(problems) or "every translation keeps the math, code, links and numbers")
        return 1 if problems else 0
    raise SystemExit(__doc__)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
