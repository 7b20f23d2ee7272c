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


def _worker_group(item) -> str:
    """Under ``pytest -n 2 --dist loadgroup`` (scripts/test.sh) a test module runs on one worker,
    so its module and session fixtures (a Colab venv, a browser) are built once.  The grader's
    modules share one group: they check that grading leaves nothing behind in the temp folder,
    which another grading running beside them would upset."""
    name = item.path.stem
    return "grader" if "grader" in name else name


def pytest_collection_modifyitems(config, items):
    if config.pluginmanager.hasplugin("xdist"):
        for item in items:
            item.add_marker(pytest.mark.xdist_group(_worker_group(item)))
    if _has_cuda():
        return
    skip = pytest.mark.skip(reason="no CUDA GPU on this machine")
    for item in items:
        if "cuda" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def rng():
    return np.random.default_rng(1234)
