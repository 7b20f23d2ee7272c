"""Build the book's translated editions next to the English one, without executing anything.

usage: python scripts/build_translations.py [LANGUAGE ...]     (default: every edition)

Run after ``jupyter-book build .`` (``scripts/build_book.sh`` runs both).  The English build
executes every chapter once and keeps the executed notebooks in ``_build/.jupyter_cache``; each
translated edition is a Sphinx build of the same sources with ``language`` set, the catalogs of
``locales/<language>/LC_MESSAGES`` applied, and its notebooks read from that cache, so a
translated page prints exactly the numbers of its English page.  A chapter missing from the
cache stops the build instead of being executed a second time.

Each edition goes to ``_build/html/<folder>`` (``book/_ext/language_switch.py``'s ``EDITIONS``).
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "book" / "_ext"))

from language_switch import EDITIONS  # noqa: E402

BUILD = ROOT / "_build"
CACHE = BUILD / ".jupyter_cache"


# What `jupyter-book build` passes to Sphinx besides the configuration file.
JUPYTER_BOOK_ARGUMENTS = {"external_toc_path": str(ROOT / "_toc.yml"), "latex_individualpages": False}


def sphinx(builder: str, outdir: Path, doctrees: Path, settings: dict) -> None:
    """Run Sphinx on the book as `jupyter-book build` does (``_config.yml``, no ``conf.py``) with
    ``settings`` on top of it; stops the program if the build fails."""
    from jupyter_book.sphinx import build_sphinx

    result = build_sphinx(
        str(ROOT),
        str(outdir),
        noconfig=True,
        path_config=str(ROOT / "_config.yml"),
        confoverrides={**JUPYTER_BOOK_ARGUMENTS, **settings},
        doctreedir=str(doctrees),
        builder=builder,
        # every page written again: a page's explorers take their words from the package's catalog,
        # which Sphinx does not track (book/_ext/explorer_language.py)
        force_all=True,
        warningiserror=True,
        keep_going=True,
        quiet=True,
    )
    if result:
        raise SystemExit(f"the {builder} build into {outdir} failed ({result})")


def overrides(language: str) -> dict:
    """The Sphinx settings that turn the English configuration into ``language``'s edition."""
    return {
        "language": language,
        "locale_dirs": [str(ROOT / "locales")],
        "gettext_compact": False,  # one catalog per page: locales/<language>/LC_MESSAGES/book/<page>.po
        "nb_execution_mode": "cache",
        "nb_execution_cache_path": str(CACHE),
        # jieba splits Chinese words for the search index when it is installed
        "html_search_language": "zh",
    }


def _cached_notebooks() -> set:
    """The (uri, hash) of every executed notebook in the cache."""
    from jupyter_cache import get_cache

    return {(r.uri, r.hashkey) for r in get_cache(str(CACHE)).list_cache_records()}


def build(language: str) -> float:
    """Build ``language``'s edition; returns the seconds it took."""
    edition = next(e for e in EDITIONS if e.language == language)
    if not CACHE.is_dir():
        raise SystemExit(f"{CACHE} is missing: build the English book first (scripts/build_book.sh)")
    records = _cached_notebooks()
    start = time.perf_counter()
    sphinx("html", BUILD / "html" / edition.folder, BUILD / f".doctrees-{language}", overrides(language))
    if _cached_notebooks() != records:
        raise SystemExit(f"the {language} edition executed a notebook the English build had not cached")
    return time.perf_counter() - start


def main(argv: list[str]) -> None:
    if not argv:
        # One process per edition: Sphinx keeps the catalogs it has loaded in process-wide state,
        # so a second build in the same process would fall back on the first one's translations.
        for edition in EDITIONS:
            if edition.folder:
                subprocess.run([sys.executable, __file__, edition.language], check=True)
        return
    for language in argv:
        seconds = build(language)
        folder = next(e.folder for e in EDITIONS if e.language == language)
        print(f"{language}: built in {seconds:.0f} s into {BUILD / 'html' / folder}")


if __name__ == "__main__":
    main(sys.argv[1:])
