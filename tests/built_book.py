"""The rule for tests that read the built book (``scripts/build_book.sh``'s ``_build/``)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

__all__ = ["built_file"]


def built_file(path: Path) -> Path:
    """``path`` if the book build wrote it; otherwise skip the test, or fail it under
    ``REQUIRE_BUILT_BOOK=1`` (set by ``scripts/test.sh``, where the book is built first)."""
    if not path.exists():
        reason = f"the book is not built ({path} missing): run `bash scripts/build_book.sh`"
        if os.environ.get("REQUIRE_BUILT_BOOK") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    return path
