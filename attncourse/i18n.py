"""The language of what the package says to a learner: ``check``, ``score``, hints, diagnoses and
the grader's feedback files.

English is the default and the source: every message is written in English where it is used, and
goes through ``tr``, which looks it up in the package's catalog for the current language
(``attncourse/locales/<language>.po``, a gettext catalog kept by ``scripts/i18n.py package``).
A message with ``{name}`` fields is looked up first and formatted after, so a translation may put
the fields in its own order.  A message with no translation is shown in English.

``set_language("zh_CN")`` (the Chinese student editions call it in their first cell) sets the
language of this process; ``using(language)`` sets it for a block, in this thread only (the
grader grades several notebooks at once, each in its notebook's language).

>>> tr("wrong values")
'wrong values'
>>> with using("zh_CN"):
...     tr("wrong values")
'数值不对'
>>> language()
'en'
"""

from __future__ import annotations

import ast
import contextlib
import contextvars
import os
import re
from functools import lru_cache
from pathlib import Path
from typing import Any, Dict, Iterator, Optional

__all__ = [
    "LANGUAGES",
    "set_language",
    "language",
    "using",
    "tr",
    "retranslate",
    "catalog",
    "language_of_notebook",
    "known_language",
]

LANGUAGES = ("en", "zh_CN", "zh_TW")
CATALOGS = Path(__file__).resolve().parent / "locales"

ENVIRONMENT = "ATTNCOURSE_LANGUAGE"  # the grader starts a notebook's runner in the notebook's language
_LOCAL: contextvars.ContextVar[Optional[str]] = contextvars.ContextVar("attncourse_language", default=None)


def known_language(name: str) -> str:
    normal = {"zh": "zh_CN", "zh-cn": "zh_CN", "zh-hans": "zh_CN", "zh-tw": "zh_TW", "zh-hant": "zh_TW"}
    key = str(name).strip()
    key = normal.get(key.lower().replace("_", "-"), key)
    if key not in LANGUAGES:
        raise ValueError(f"unknown language {name!r}: use one of {', '.join(LANGUAGES)}")
    return key


def _from_environment() -> str:
    try:
        return known_language(os.environ.get(ENVIRONMENT, "") or "en")
    except ValueError:
        return "en"


_DEFAULT = [_from_environment()]  # the process's language (set_language)


def set_language(name: str) -> None:
    """Speak ``name`` ("en", "zh_CN" or "zh_TW") from now on in this process."""
    _DEFAULT[0] = known_language(name)
    _load(_DEFAULT[0])


def language() -> str:
    """The language messages are given in now."""
    return _LOCAL.get() or _DEFAULT[0]


@contextlib.contextmanager
def using(name: Optional[str]) -> Iterator[str]:
    """Speak ``name`` inside the block (this thread only); ``None`` keeps the current language."""
    token = _LOCAL.set(known_language(name) if name else language())
    _load(language())
    try:
        yield language()
    finally:
        _LOCAL.reset(token)


def _unquote(line: str) -> str:
    return ast.literal_eval(line)


def read_po(text: str) -> Dict[str, str]:
    """{msgid: msgstr} of a gettext catalog: translated, non-fuzzy entries only (no plural forms).

    >>> read_po('msgid "a"\\nmsgstr "b"\\n\\n#, fuzzy\\nmsgid "c"\\nmsgstr "d"\\n\\nmsgid "e"\\nmsgstr ""\\n')
    {'a': 'b'}
    """
    out: Dict[str, str] = {}
    for block in re.split(r"\n\s*\n", text):
        fuzzy, field, parts = False, None, {"msgid": [], "msgstr": []}
        for line in block.splitlines():
            line = line.strip()
            if line.startswith("#,") and "fuzzy" in line:
                fuzzy = True
            elif line.startswith("#") or not line:
                continue
            elif line.startswith(("msgid ", "msgstr ")):
                field, _, rest = line.partition(" ")
                parts[field].append(_unquote(rest))
            elif line.startswith('"') and field:
                parts[field].append(_unquote(line))
        msgid, msgstr = "".join(parts["msgid"]), "".join(parts["msgstr"])
        if msgid and msgstr and not fuzzy:
            out[msgid] = msgstr
    return out


@lru_cache(maxsize=None)
def catalog(name: str) -> Dict[str, str]:
    """The translations of language ``name`` ({} for English, or where the catalog is missing)."""
    path = CATALOGS / f"{name}.po"
    if name == "en" or not path.exists():
        return {}
    return read_po(path.read_text(encoding="utf-8"))


def _load(name: str) -> None:
    """Read the catalog now, when the language is chosen: never first while an answer runs, where a
    method rule measures the memory the answer allocates (a ``predict`` answer may allocate none)."""
    catalog(name)
    _templates(name)


def tr(message: str, /, **fields: Any) -> str:
    """``message`` in the current language, its ``{fields}`` filled in.

    >>> tr("{n} of {total} cases passed", n=2, total=3)
    '2 of 3 cases passed'
    """
    if not message:
        return message
    text = catalog(language()).get(message, message)
    return text.format(**fields) if fields else text


_FIELD = re.compile(r"\{(\w+)\}")


@lru_cache(maxsize=None)
def _templates(name: str) -> tuple:
    """(pattern that matches the English message with its fields filled in, translation), the
    messages with the most fixed text first."""
    out = []
    for english, translated in catalog(name).items():
        parts = _FIELD.split(english)
        fields = parts[1::2]
        if not fields or len(set(fields)) != len(fields):
            continue
        regex = "".join(re.escape(p) if i % 2 == 0 else f"(?P<{p}>.+?)" for i, p in enumerate(parts))
        out.append((sum(map(len, parts[0::2])), re.compile(regex + r"\Z", re.DOTALL), translated))
    return tuple((pattern, translated) for _, pattern, translated in sorted(out, key=lambda t: -t[0]))


def retranslate(text: str, *, nested: bool = True) -> str:
    """A message that was worded in English (its fields filled in), in the current language.

    The grader words its notes in English for the instructor's summary; a student's feedback file
    shows them through this, in the notebook's language.  What matches no message stays as it is.
    With ``nested`` a field's value is a message too (a note inside a note); without it a field
    is data and kept as it is (an explorer's caption: "on" in "the cat sat on the mat" is a word
    of the sentence, not the option label "on").
    """
    table = catalog(language())
    if not table or not text:
        return text
    if text in table:
        return table[text]
    for pattern, translated in _templates(language()):
        m = pattern.match(text)
        if m:
            fields = m.groupdict()
            if nested:
                fields = {k: retranslate(v) for k, v in fields.items()}
            return translated.format(**fields)
    return text


_SET = re.compile(r"""set_language\(\s*["']([A-Za-z_-]+)["']\s*\)""")


def language_of_notebook(nb: dict) -> str:
    """The language a notebook asks for: its first ``set_language("...")`` call, else English.

    >>> language_of_notebook({"cells": [{"cell_type": "code", "source": 'ac.set_language("zh_TW")'}]})
    'zh_TW'
    """
    for cell in nb.get("cells", []):
        if cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        m = _SET.search(source if isinstance(source, str) else "".join(source))
        if m:
            try:
                return known_language(m.group(1))
            except ValueError:
                return "en"
    return "en"


if _DEFAULT[0] != "en":  # set from the environment: read its catalog now (see ``_load``)
    _load(_DEFAULT[0])
