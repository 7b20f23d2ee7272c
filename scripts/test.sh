#!/usr/bin/env bash
# The full test tier: what CI runs (.ci/run is this script on a fresh clone).
#
#   bash scripts/test.sh               everything below
#   bash scripts/test.sh -k flash      extra arguments go to every pytest run but the numpy tier's
#   FULL_SWEEP=1 bash scripts/test.sh  the full sweeps too (marked `sweep`)
#   python -m pytest -m "not slow"     the quick tier alone (under a minute, no book build)
#
# Steps, and how often each chapter notebook is executed (the step times are printed at the end):
#   1. set-up: .venv with the CPU build of torch unless it has one (scripts/setup_env.sh); beside
#      it, Chromium (browser tests) and bubblewrap (the grader's sandbox) where we may install
#      them, npm ci, the Colab stand-in's venv and the numpy-only tier's (see step 3).
#   2. ruff check and ruff format --check.
#   3. the book build (scripts/build_book.sh): executes every chapter (execution 1) into
#      _build/html, keeps the executed copies in _build/jupyter_execute/, and builds the Chinese
#      editions (_build/html/zh/, zh-tw/) from the same executed notebooks.
#      Beside it, in the background and at a lower priority:
#      - tests/test_colab_standin.py runs each chapter's student edition once (execution 2; in
#        English, simplified or traditional Chinese in turn) in a Colab-like venv and checks that
#        it scores 0;
#      - every test that reads no built book (not marked `book`), slow tests included, on two
#        workers (pytest-xdist, one file per worker at a time), once npm ci (axe-core,
#        Lighthouse) and the apt-get of step 1 are done.  The exercise and grader tests execute only exercise cells and small demo
#        notebooks; the fidelity suite grades a sample of its answers (FULL_SWEEP=1: all);
#      - the numpy-only tier: a second venv, _build/venv-numpy (numpy, pytest, hypothesis and the
#        package, no torch) runs `python -m pytest tests -m "not slow and not book"`; torch tests
#        skip one by one.
#      Their reports are printed after step 4, and any failure fails the run.
#   4. pytest on the built book (tests marked `book`), on two workers.
#      tests/test_notebook_outputs.py compares the executed copies of step 3 with the outputs
#      saved in book/*.ipynb under nbval's rules (tests/nbval_sanitize.cfg), so the check of the
#      saved outputs costs no execution of its own; tests/test_built_pages_*.py load every English
#      page once per width in Chromium, and every Chinese page once at phone width (axe-core
#      audits every English page at phone width, and three pages of each other sweep).
#   5. the Lighthouse budget (scripts/lighthouse_budget.py) over every English page of the built
#      book and three pages of each Chinese edition, run
#      last, alone, because Lighthouse's simulated timings scale with how busy the machine is:
#      mobile preset, served with gzip, one Chromium and one Node process for all pages, only
#      the performance category (no screenshots, no unweighted diagnostics): about 4 s a page.
#      Each page must score >= 90 for performance, paint its first
#      text within 2 s, shift less than 0.1 and transfer at most 400 KiB; a page over
#      budget is run four more times and judged on the median of five (Lighthouse's advice).  Lighthouse's accessibility category
#      (it must score 100) runs on three pages that stand for the rest (a chapter with formulas
#      and explorers, a text-only page, the landing page), and axe-core already audits every
#      page in step 4.  Every page and category:
#      `python scripts/lighthouse_budget.py`.  It needs Node (npm ci brings
#      Lighthouse) and Chromium, and skips, saying so, without them (fails under
#      REQUIRE_BROWSER=1).
set -euo pipefail
bg=$(mktemp -d)
# Step times, printed at the end of every run (a failed one too): "name<TAB>seconds<TAB>busy"
# lines, busy being the CPU time the whole machine spent in the step (from /proc/stat, so the
# work beside the step counts too: how close the step came to keeping every core busy).
cores=$(nproc 2>/dev/null || echo 1)
tick=$(getconf CLK_TCK 2>/dev/null || echo 100)
busy_ticks() { awk '/^cpu /{print $2 + $3 + $4 + $7 + $8 + $9; exit}' /proc/stat 2>/dev/null || echo 0; }
step_name="" step_start=$SECONDS step_busy=$(busy_ticks) run_busy=$step_busy
step() {  # step NAME: close the step before, open NAME
  local now
  now=$(busy_ticks)
  if [ -n "$step_name" ]; then
    printf '%s\t%s\t%s\n' "$step_name" "$((SECONDS - step_start))" "$(((now - step_busy) / tick))" >>"$bg/steps"
  fi
  step_name=$1 step_start=$SECONDS step_busy=$now
  if [ -n "$1" ]; then echo "== $1"; fi
}
step_row() {  # step_row NAME SECONDS BUSY
  printf '  %-44s %5s %6s s  (%s%% of %s cores)\n' "$1" "$2" "$3" "$(($2 > 0 ? 100 * $3 / ($2 * cores) : 0))" "$cores"
}
step_times() {
  step ""
  echo "== step times (seconds; the Colab stand-in, the numpy-only tier and the tests that read no built book ran beside them)"
  printf '  %-44s %5s %9s\n' "" "wall" "CPU busy"
  while IFS=$'\t' read -r name secs busy; do step_row "$name" "$secs" "$busy"; done <"$bg/steps"
  step_row "total" "$SECONDS" "$((($(busy_ticks) - run_busy) / tick))"
}
trap 'step_times; kill ${colab_pid:-} ${beside_pid:-} ${numpy_pid:-} ${apt_pid:-} ${npm_pid:-} 2>/dev/null || true; rm -rf "$bg"' EXIT
step "set-up (venv, Chromium, bubblewrap; npm ci, the Colab and numpy-only venvs beside it)"

# While pip fills .venv, in the background: Chromium and bubblewrap (where we may install them),
# npm ci (axe-core and Lighthouse, from package.json's lock file; without Node the audits skip,
# and fail under REQUIRE_BROWSER=1), the Colab stand-in's venv (tests/colab_venv.py) and the
# numpy-only tier (its venv, then its tests, at a low priority).  None of them needs .venv, and
# nothing before the pytest steps needs them.
missing=()
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v bwrap >/dev/null 2>&1 || missing+=(bubblewrap)
apt_log=$(mktemp)
apt_pid=""
if [ ${#missing[@]} -gt 0 ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}") \
    >"$apt_log" 2>&1 &
  apt_pid=$!
fi
npm_pid=""
if command -v npm >/dev/null 2>&1; then
  npm ci --no-audit --no-fund --loglevel=error >"$bg/npm.log" 2>&1 &
  npm_pid=$!
fi
# The Colab stand-in: its venv now, its notebooks (tests/test_colab_standin.py, in .venv's pytest)
# once .venv is ready; it reads nothing the book build writes (one BLAS thread per kernel, its
# own temp folder, its report in a log shown at the end).
(
  set -e
  nice -n 5 "${PYTHON:-python3}" tests/colab_venv.py   # after .venv's pip, which the build waits for
  while [ ! -e "$bg/venv.ok" ]; do sleep 1; done
  OMP_NUM_THREADS=1 exec nice -n 5 .venv/bin/python -m pytest tests/test_colab_standin.py \
    -p no:cacheprovider --basetemp "$bg/tmp" "$@"
) >"$bg/colab.log" 2>&1 &
colab_pid=$!
numpy_venv=_build/venv-numpy   # under _build/: outside the book's sources, git and ruff
(
  set -e
  [ -x "$numpy_venv/bin/python" ] || "${PYTHON:-python3}" -m venv "$numpy_venv"
  nice -n 10 "$numpy_venv/bin/python" -m pip install -q "numpy>=1.23" "pytest>=8" "hypothesis>=6.100"
  while [ ! -e "$bg/venv.ok" ]; do sleep 1; done   # one editable install of the checkout at a time
  "$numpy_venv/bin/python" -m pip install -q --no-deps -e .
  # the browser checks run in the main venv; here, without playwright, they skip rather than fail
  # (the tests of the built book, which is being built, ran in .venv)
  OMP_NUM_THREADS=1 exec env -u REQUIRE_BROWSER nice -n 10 "$numpy_venv/bin/python" -m pytest tests \
    -m "not slow and not book" -q -p no:cacheprovider
) >"$bg/numpy.log" 2>&1 &
numpy_pid=$!
. "$(dirname "$0")/setup_env.sh"
touch "$bg/venv.ok"

# Beside the steps below, in the background, each at a lower priority than the book build: the
# Colab stand-in and the numpy-only tier (started above), and (after ruff) the tests that read no
# built book.  The book build keeps about one core busy (Sphinx and one kernel at a time); these
# keep the other busy, and both once it is done.

step "ruff"
ruff check .
ruff format --check .

# The full sweeps (marked `sweep`: every answer of the fidelity suite through the grader, where
# the slow tier grades a sample) run only with FULL_SWEEP=1.
not_sweep=" and not sweep"
if [ "${FULL_SWEEP:-}" = 1 ]; then not_sweep=""; fi

# Beside the book build, in the background: every test that does not read the built book (not
# marked `book`), on two workers, at a lower priority than the build.  It needs Chromium and
# bubblewrap (apt-get) and axe-core (npm ci), so it waits for both.
(
  for pid in $apt_pid $npm_pid; do while kill -0 "$pid" 2>/dev/null; do sleep 1; done; done
  if [ -n "$npm_pid" ] && [ ! -e node_modules/axe-core/axe.min.js ]; then
    cat "$bg/npm.log"
    echo "npm ci failed: the accessibility audits will skip"
  fi
  OMP_NUM_THREADS=1 ATTNCOURSE_BOOK_PENDING=1 REQUIRE_BUILT_BOOK=1 exec nice -n 10 python -m pytest \
    -n 2 --dist loadfile --durations=10 -p no:cacheprovider -m "not book$not_sweep" \
    --ignore=tests/test_colab_standin.py "$@"
) >"$bg/beside.log" 2>&1 &
beside_pid=$!

step "the book (executes every chapter once)"
# One thread per kernel here too: two multi-threaded torch jobs on two cores slow each other
# down several times over (printed outputs are the same with one thread or more).
OMP_NUM_THREADS=1 NO_OPEN=1 bash scripts/build_book.sh

step "pytest on the built book"
if [ -n "$apt_pid" ] && ! wait "$apt_pid"; then
  cat "$apt_log" >&2
  echo "installing ${missing[*]} failed" >&2
  exit 1
fi
status=0
REQUIRE_BUILT_BOOK=1 python -m pytest -n 2 --dist loadfile --durations=10 -p no:cacheprovider \
  -m "book$not_sweep" "$@" || status=$?

step "waiting for the tests beside the build"
beside_status=0
wait "$beside_pid" || beside_status=$?
cat "$bg/beside.log"
# 5 = nothing selected (extra arguments such as -k that pick none of them)
if [ "$beside_status" -ne 0 ] && [ "$beside_status" -ne 5 ]; then status=$beside_status; fi

step "waiting for the Colab stand-in"
colab_status=0
wait "$colab_pid" || colab_status=$?
cat "$bg/colab.log"
if [ "$colab_status" -ne 0 ] && [ "$colab_status" -ne 5 ]; then status=$colab_status; fi

if [ "$status" -ne 0 ]; then exit "$status"; fi

step "waiting for the numpy-only tier (pytest -m 'not slow' without torch)"
numpy_status=0
wait "$numpy_pid" || numpy_status=$?
tail -n 3 "$bg/numpy.log"
if [ "$numpy_status" -ne 0 ]; then cat "$bg/numpy.log"; exit "$numpy_status"; fi

step "the Lighthouse budget (every page), alone"
lighthouse_args=(--skip-missing)
if [ "${REQUIRE_BROWSER:-}" = 1 ]; then lighthouse_args=(); fi
python scripts/lighthouse_budget.py "${lighthouse_args[@]}" \
  --accessibility-on book/03_scaling.html,book/appendix_glossary.html,index.html,zh/book/appendix_glossary.html
