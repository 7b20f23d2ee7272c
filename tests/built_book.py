"""The rule for tests that read the built book (``scripts/build_book.sh``'s ``_build/``).

Such a test is marked ``book``: ``scripts/test.sh`` runs the other tests beside the book build
(with ``ATTNCOURSE_BOOK_PENDING=1``) and these after it.  ``built_file`` and ``book_pending``
fail a test that reads the build while it is still being written, so a missing mark shows.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

__all__ = ["built_file", "book_pending"]


def book_pending(what: object) -> None:
    """Fail a test that reads ``what`` of the built book while the book is still being built."""
    if os.environ.get("ATTNCOURSE_BOOK_PENDING") == "1":
        pytest.fail(
            f"this test reads the built book ({what}) and runs beside its build: mark it `book`",
            pytrace=False,
        )


def built_file(path: Path) -> Path:
    """``path`` if the book build wrote it; otherwise skip the test, or fail it under
    ``REQUIRE_BUILT_BOOK=1`` (set by ``scripts/test.sh``, where the book is built first)."""
    book_pending(path)
    if not path.exists():
        reason = f"the book is not built ({path} missing): run `bash scripts/build_book.sh`"
        if os.environ.get("REQUIRE_BUILT_BOOK") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    return path
