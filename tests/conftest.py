"""Fixtures shared by the tests; CUDA tests are skipped (not failed) where no GPU is present.

A test module that cannot be imported without an optional library is skipped by the rule in the
top-level ``conftest.py``; a torch test inside a module that does not need torch skips on its
own (see ``support.torch``).
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest


def _has_cuda() -> bool:
    if importlib.util.find_spec("torch") is None:
        return False
    import torch

    return torch.cuda.is_available()


# Fixtures that hand a test the built book: a test using one reads ``_build/`` (tests/built_book.py).
BUILT_BOOK_FIXTURES = {"book_server", "book_browser", "built_book", "built_pages", "visits"}


def pytest_collection_modifyitems(config, items):
    for item in items:
        if BUILT_BOOK_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.book)
    if _has_cuda():
        return
    skip = pytest.mark.skip(reason="no CUDA GPU on this machine")
    for item in items:
        if "cuda" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def rng():
    return np.random.default_rng(1234)
