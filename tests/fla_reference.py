"""flash-linear-attention's reference recurrences, loaded on the CPU when that package is installed.

``fla`` (``pip install fla-core``, einops its only requirement) ships plain-PyTorch loops beside its
Triton kernels, in ``fla/ops/<op>/naive.py``.  Importing them the usual way runs ``fla/ops/__init__.py``,
which imports Triton; so each file is loaded on its own, by path.  A test that calls ``naive(...)``
skips where fla (or einops) is absent.  fla is a test-only reference: the package does not need it.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

__all__ = ["naive"]


def naive(op: str) -> ModuleType:
    """``fla/ops/<op>/naive.py`` as a module (``op`` e.g. ``"delta_rule"``), or skip the test."""
    spec = importlib.util.find_spec("fla")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("flash-linear-attention (fla-core) is not installed")
    if importlib.util.find_spec("einops") is None:
        pytest.skip("fla's reference recurrences need einops")
    path = Path(next(iter(spec.submodule_search_locations))) / "ops" / op / "naive.py"
    if not path.is_file():
        pytest.skip(f"this fla has no {path.relative_to(path.parents[2])}")
    module_spec = importlib.util.spec_from_file_location(f"fla_naive_{op}", path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return module
