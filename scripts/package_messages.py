"""The package's message catalog: every sentence ``attncourse`` says to a learner, and its Chinese.

``attncourse/locales/zh_CN.po`` holds the simplified translations (by hand) and
``attncourse/locales/zh_TW.po`` the traditional ones (derived, as the book's, by
``scripts/i18n.py``).  The messages are

* every literal first argument of ``tr(...)`` in the package's source (the engine's and the
  grader's sentences, with their ``{fields}``);
* what the exercise registry shows a learner: each exercise's title and hint, each diagnosis's
  message, hint and name, each case's name and group (public cases, and the hidden cases in
  ``hidden_cases/``), the chapters' titles.

``update()`` rewrites both catalogs with exactly these messages: a translation is kept while its
message exists, a new message arrives untranslated, a message no longer used is dropped.
"""

from __future__ import annotations

import ast
import re
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Dict, List

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "attncourse"
CATALOGS = PACKAGE / "locales"
SOURCE_LANGUAGE, DERIVED_LANGUAGE = "zh_CN", "zh_TW"
# A message with no word needs no translation ("L=2, S=3"); a short word alone is one ("on").
WORDS = re.compile(r"[A-Za-z]{3,}|\A[a-z]{2}\Z")


SEPARATORS = (", ", " or ")  # join parts of a sentence: messages without a word ("、", " 或 " in Chinese)


def _add(found: Dict[str, List[str]], message: str, where: str) -> None:
    if isinstance(message, str) and (WORDS.search(message) or message in SEPARATORS):
        found.setdefault(message, [])
        if where not in found[message]:
            found[message].append(where)


def source_messages(found: Dict[str, List[str]]) -> None:
    """The literal first arguments of ``tr(...)`` calls in the package."""
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and getattr(node.func, "id", getattr(node.func, "attr", None)) == "tr"
                and node.args
                and isinstance(node.args[0], ast.Constant)
            ):
                _add(found, node.args[0].value, f"{path.relative_to(ROOT)}:{node.lineno}")


def registry_messages(found: Dict[str, List[str]]) -> None:
    """What the exercise registry shows a learner."""
    sys.path.insert(0, str(ROOT))
    from attncourse.exercises.engine.check import HIDDEN_NOTE, START_HERE
    from attncourse.exercises.engine.compare import NOT_ATTEMPTED, STATUSES
    from attncourse.exercises.engine.registry import CHAPTERS, all_exercises
    from attncourse.grading.handout import load_hidden_cases

    for message in (HIDDEN_NOTE, START_HERE, NOT_ATTEMPTED, *STATUSES):  # shown through tr(a name)
        _add(found, message, "attncourse/exercises/engine")
    for key, (title, _) in CHAPTERS.items():
        _add(found, title, key)
    hidden = load_hidden_cases(ROOT / "hidden_cases")
    for ex in all_exercises():
        _add(found, ex.title, f"{ex.id} title")
        _add(found, ex.hint, f"{ex.id} hint")
        for d in ex.diagnoses:
            _add(found, d.message, f"{ex.id} diagnosis")
            _add(found, d.hint, f"{ex.id} diagnosis hint")
            _add(found, d.name, f"{ex.id} diagnosis name")
        cases = list(ex.public_cases()) + (list(hidden[ex.id]()) if ex.id in hidden else [])
        for case in cases:
            _add(found, case.name, f"{ex.id} case")
            _add(found, case.group, f"{ex.id} case group")


def messages() -> Dict[str, List[str]]:
    """{message: where it is used}, in a stable order."""
    found: Dict[str, List[str]] = {}
    source_messages(found)
    registry_messages(found)
    return found


def update() -> int:
    """Rewrite both catalogs with the current messages; returns how many are untranslated."""
    from babel.messages.catalog import Catalog
    from babel.messages.pofile import read_po, write_po

    CATALOGS.mkdir(exist_ok=True)
    path = CATALOGS / f"{SOURCE_LANGUAGE}.po"
    old = {}
    if path.exists():
        with path.open("rb") as f:
            old = {m.id: m for m in read_po(f, locale=SOURCE_LANGUAGE) if m.id}
    fixed = datetime(
        2026, 1, 1, tzinfo=timezone.utc
    )  # a stable header: the file changes with its messages only
    catalog = Catalog(
        locale=SOURCE_LANGUAGE,
        project="attncourse",
        domain="attncourse",
        creation_date=fixed,
        revision_date=fixed,
        fuzzy=False,
    )
    missing = 0
    for message, where in messages().items():
        kept = old.get(message)
        string = kept.string if kept else ""
        missing += not string
        catalog.add(
            message,
            string,
            auto_comments=where[:3],
            flags=kept.flags if kept else (),
            user_comments=kept.user_comments if kept else (),
        )
    with path.open("wb") as f:
        write_po(f, catalog, width=0, omit_header=False)
    return missing


if __name__ == "__main__":
    print(f"{update()} untranslated")
