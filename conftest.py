"""One collection rule for every test path (tests/, the package's doctests).

The package needs only numpy; torch, matplotlib, ipywidgets and the book tooling are optional.
A test module or doctest module that cannot be imported because one of those libraries is not
installed is reported as skipped, naming the library, instead of as a collection error.  Any
other import failure (or a missing library that *is* installed) still fails.

The explorers' doctests (``attncourse/widgets``) are marked slow: they draw whole explorers.

The quick tier (``-m "not slow"``) runs on every core when pytest-xdist is installed and no ``-n``
is given (``-n 0`` for one process).

Under pytest-xdist each worker, and every kernel or subprocess it starts, gets its share of the
cores for BLAS/OpenMP threads (unless OMP_NUM_THREADS is set): two workers that each train a
model on all the cores slow each other down several times over.
"""

from __future__ import annotations

import importlib.util
import os
import re

import pytest

# At import, before numpy or torch are loaded in this worker (xdist sets the count first).
_WORKERS = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
if _WORKERS > 1 and "OMP_NUM_THREADS" not in os.environ:
    _SHARE = str(max(1, (os.cpu_count() or 1) // _WORKERS))
    for _name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[_name] = _SHARE


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config):
    """``-m "not slow"`` without ``-n``: one worker per core (before xdist reads the option)."""
    if not hasattr(config.option, "numprocesses") or os.environ.get("PYTEST_XDIST_WORKER"):
        return None  # no xdist here (the numpy-only tier), or this is a worker already
    if config.option.numprocesses is None and config.option.markexpr.strip() == "not slow":
        config.option.numprocesses = max(1, os.cpu_count() or 1)
    return None


_EXPLORER_DOCTESTS = os.path.join("attncourse", "widgets") + os.sep
_TESTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tests") + os.sep


@pytest.hookimpl(wrapper=True)
def pytest_collect_file(file_path, parent):
    """Doctests are the package's: the test files hold none, and reading them for doctests would
    import every test module a second time (``--doctest-modules`` applies to every collected file)."""
    collectors = yield
    if str(file_path).startswith(_TESTS):
        from _pytest.doctest import DoctestModule

        collectors = [c for c in collectors if not isinstance(c, DoctestModule)]
    return collectors


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """The explorers' doctests draw every explorer (1-2 s each): the full tier, not the quick one."""
    for item in items:
        if isinstance(item, pytest.DoctestItem) and _EXPLORER_DOCTESTS in str(item.path):
            item.add_marker(pytest.mark.slow)


OPTIONAL = (
    "torch",
    "matplotlib",
    "ipywidgets",
    "einops",
    "nbformat",
    "nbclient",
    "nbval",
    "yaml",
    "playwright",
)
_MISSING_MODULE = re.compile(r"No module named '([A-Za-z0-9_]+)")


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector):
    report = yield
    if report.failed and isinstance(collector, pytest.Module):
        found = _MISSING_MODULE.search(str(report.longrepr))
        library = found and found.group(1)
        if library in OPTIONAL and importlib.util.find_spec(library) is None:
            report.outcome = "skipped"
            report.longrepr = (str(collector.path), 0, f"Skipped: needs {library}, which is not installed")
    return report
