"""Fixtures; the CUDA tests are skipped (not failed) where no GPU is present."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")


def pytest_collection_modifyitems(config, items):
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="no CUDA GPU on this machine")
    for item in items:
        if "cuda" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def rng():
    return np.random.default_rng(1234)
