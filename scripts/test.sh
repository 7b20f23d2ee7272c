#!/usr/bin/env bash
# The full test tier: what CI runs (.ci/run is this script on a fresh clone).
#
#   bash scripts/test.sh               everything below
#   bash scripts/test.sh -k flash      extra arguments go to the main pytest run (step 4)
#   python -m pytest -m "not slow"     the quick tier alone (under a minute, no book build)
#
# Steps, and how often each chapter notebook is executed:
#   1. set-up: .venv with the CPU build of torch unless it has one (scripts/setup_env.sh);
#      Chromium (browser tests) and bubblewrap (the grader's sandbox) where we may install them.
#   2. ruff check and ruff format --check.
#   3. the book build (scripts/build_book.sh): executes every chapter (execution 1) into
#      _build/html, and keeps the executed copies in _build/jupyter_execute/.
#   4. pytest on everything, slow tests included, on two workers (pytest-xdist, one file per
#      worker at a time, each worker and its kernels on its share of the cores).
#      tests/test_notebook_outputs.py compares the executed copies of step 3 with the outputs
#      saved in book/*.ipynb under nbval's rules (tests/nbval_sanitize.cfg), so the check of the
#      saved outputs costs no execution of its own; tests/test_built_pages.py loads every built
#      page once per width in Chromium; tests/test_colab_standin.py runs every chapter's student
#      edition in a Colab-like venv (execution 2) and checks that it scores 0.  The exercise and
#      grader tests execute only exercise cells and small demo notebooks.
#   5. the numpy-only tier: a second venv, _build/venv-numpy (numpy, pytest, hypothesis and the
#      package, no torch), runs `python -m pytest tests -m "not slow"`; torch tests skip one by one.
set -euo pipefail
. "$(dirname "$0")/setup_env.sh"

missing=()
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v bwrap >/dev/null 2>&1 || missing+=(bubblewrap)
if [ ${#missing[@]} -gt 0 ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

echo "== ruff"
ruff check .
ruff format --check .

# axe-core for the accessibility audit of the built pages (package.json's devDependencies),
# from the lock file; without Node the audit skips (and fails under REQUIRE_BROWSER=1).
if command -v npm >/dev/null 2>&1; then
  npm ci --no-audit --no-fund --loglevel=error || echo "npm ci failed: the accessibility audit will skip" >&2
fi

echo "== the book (executes every chapter once)"
NO_OPEN=1 bash scripts/build_book.sh

echo "== pytest, every tier"
REQUIRE_BUILT_BOOK=1 python -m pytest -n 2 --dist loadfile "$@"

echo "== pytest -m 'not slow' with numpy only (no torch)"
numpy_venv=_build/venv-numpy   # under _build/: outside the book's sources, git and ruff
if [ ! -x "$numpy_venv/bin/python" ]; then
  "${PYTHON:-python3}" -m venv "$numpy_venv"
fi
"$numpy_venv/bin/python" -m pip install -q "numpy>=1.23" "pytest>=8" "hypothesis>=6.100"
"$numpy_venv/bin/python" -m pip install -q --no-deps -e .
# the browser checks ran above; here, without playwright, they skip rather than fail
env -u REQUIRE_BROWSER "$numpy_venv/bin/python" -m pytest tests -m "not slow" -q -p no:cacheprovider
