#!/usr/bin/env bash
# The full test tier: what CI runs (.ci/run is this script on a fresh clone).
#
#   bash scripts/test.sh               everything below
#   bash scripts/test.sh -k flash      extra arguments go to both pytest runs (steps 3 and 4)
#   python -m pytest -m "not slow"     the quick tier alone (under a minute, no book build)
#
# Steps, and how often each chapter notebook is executed:
#   1. set-up: .venv with the CPU build of torch unless it has one (scripts/setup_env.sh);
#      Chromium (browser tests) and bubblewrap (the grader's sandbox) where we may install them.
#   2. ruff check and ruff format --check.
#   3. the book build (scripts/build_book.sh): executes every chapter (execution 1) into
#      _build/html, keeps the executed copies in _build/jupyter_execute/, and builds the Chinese
#      editions (_build/html/zh/, zh-tw/) from the same executed notebooks.  Beside steps 2-4,
#      in the background, tests/test_colab_standin.py runs every chapter's student edition in a
#      Colab-like venv (execution 2) and checks that it scores 0; its report is printed after
#      step 4 and its failure fails the run.
#   4. pytest on everything else, slow tests included, on two workers (pytest-xdist, one file
#      per worker at a time, each worker and its kernels on its share of the cores).
#      tests/test_notebook_outputs.py compares the executed copies of step 3 with the outputs
#      saved in book/*.ipynb under nbval's rules (tests/nbval_sanitize.cfg), so the check of the
#      saved outputs costs no execution of its own; tests/test_built_pages_*.py load every English
#      page once per width in Chromium, and every Chinese page once at phone width.  The exercise and grader tests execute only exercise
#      cells and small demo notebooks.
#   5. the numpy-only tier: a second venv, _build/venv-numpy (numpy, pytest, hypothesis and the
#      package, no torch; set up in the background during steps 2-4), runs
#      `python -m pytest tests -m "not slow"`; torch tests skip one by one.
#   6. the Lighthouse budget (scripts/lighthouse_budget.py) over every English page of the built
#      book and three pages of each Chinese edition, run
#      last, alone, because Lighthouse's simulated timings scale with how busy the machine is:
#      mobile preset, served with gzip, one Chromium and one Node process for all pages, only
#      the performance category (no screenshots, no unweighted diagnostics): about 5 s a page,
#      ~100 s for the book's 20.  Each page must score >= 90 for performance, paint its first
#      text within 2 s, shift less than 0.1 and transfer at most 400 KiB; a page over
#      budget is run four more times and judged on the median of five (Lighthouse's advice).  Lighthouse's accessibility category
#      (it must score 100) runs on three pages that stand for the rest (a chapter with formulas
#      and explorers, a text-only page, the landing page): it costs another ~3 s a page, and
#      axe-core already audits every page at both widths in step 4.  Every page and category:
#      `python scripts/lighthouse_budget.py` (~140 s).  It needs Node (npm ci brings
#      Lighthouse) and Chromium, and skips, saying so, without them (fails under
#      REQUIRE_BROWSER=1).
set -euo pipefail
# Chromium and bubblewrap are installed (where we may) while pip fills .venv: the two downloads
# overlap, and nothing before the pytest step needs either program.
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
. "$(dirname "$0")/setup_env.sh"

# Beside the steps below, in the background: the Colab stand-in (it reads nothing the book build
# writes; one BLAS thread per kernel, its own temp folder, its report in a log shown at the end),
# and the set-up of the numpy-only venv.  The book build keeps about one core busy (Sphinx and
# one kernel at a time), so the two cores stay busy and the run takes minutes less.
bg=$(mktemp -d)
# Step times, printed at the end of every run (a failed one too): "name<TAB>seconds" lines.
step_name="" step_start=$SECONDS
step() {  # step NAME: close the step before, open NAME
  if [ -n "$step_name" ]; then printf '%s\t%s\n' "$step_name" "$((SECONDS - step_start))" >>"$bg/steps"; fi
  step_name=$1 step_start=$SECONDS
  if [ -n "$1" ]; then echo "== $1"; fi
}
step_times() {
  step ""
  echo "== step times (seconds; the Colab stand-in and the numpy venv set-up ran beside them)"
  while IFS=$'\t' read -r name secs; do printf '  %-44s %5s\n' "$name" "$secs"; done <"$bg/steps"
  printf '  %-44s %5s\n' "total" "$SECONDS"
}
trap 'step_times; kill ${colab_pid:-} ${beside_pid:-} ${numpy_pid:-} ${apt_pid:-} 2>/dev/null || true; rm -rf "$bg"' EXIT
echo "== the Colab stand-in (runs every chapter's student edition), in the background"
printf '%s\t%s\n' "set-up (venv, Chromium, bubblewrap)" "$SECONDS" >"$bg/steps"
OMP_NUM_THREADS=1 nice -n 5 python -m pytest tests/test_colab_standin.py -p no:cacheprovider \
  --basetemp "$bg/tmp" "$@" >"$bg/colab.log" 2>&1 &
colab_pid=$!
numpy_venv=_build/venv-numpy   # under _build/: outside the book's sources, git and ruff
(
  set -e
  [ -x "$numpy_venv/bin/python" ] || "${PYTHON:-python3}" -m venv "$numpy_venv"
  "$numpy_venv/bin/python" -m pip install -q "numpy>=1.23" "pytest>=8" "hypothesis>=6.100"
  "$numpy_venv/bin/python" -m pip install -q --no-deps -e .
) >"$bg/numpy-setup.log" 2>&1 &
numpy_pid=$!

step "ruff"
ruff check .
ruff format --check .

# The full sweeps (marked `sweep`: every answer of the fidelity suite through the grader, where
# the slow tier grades a sample) run only with FULL_SWEEP=1.
skipped=sweep
if [ "${FULL_SWEEP:-}" = 1 ]; then skipped=colab; fi   # (colab: the stand-in, run on its own above)

# Beside the book build, in the background: every test that does not read the built book (not
# marked `book`), on two workers, at a lower priority than the build.  It needs Chromium and
# bubblewrap (apt-get above) and axe-core (npm ci, from package.json's lock file; without Node
# the audits skip, and fail under REQUIRE_BROWSER=1), so it waits for both.
(
  if [ -n "$apt_pid" ]; then while kill -0 "$apt_pid" 2>/dev/null; do sleep 1; done; fi
  if command -v npm >/dev/null 2>&1; then
    npm ci --no-audit --no-fund --loglevel=error || echo "npm ci failed: the accessibility audits will skip"
  fi
  OMP_NUM_THREADS=1 ATTNCOURSE_BOOK_PENDING=1 REQUIRE_BUILT_BOOK=1 exec nice -n 10 python -m pytest \
    -n 2 --dist loadfile --durations=10 -p no:cacheprovider -m "not book and not ($skipped)" \
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
  -m "book and not ($skipped)" "$@" || status=$?

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

step "pytest -m 'not slow' with numpy only"
wait "$numpy_pid" || { cat "$bg/numpy-setup.log"; exit 1; }
# the browser checks ran above; here, without playwright, they skip rather than fail
env -u REQUIRE_BROWSER "$numpy_venv/bin/python" -m pytest tests -m "not slow" -q -p no:cacheprovider

step "the Lighthouse budget (every page), alone"
lighthouse_args=(--skip-missing)
if [ "${REQUIRE_BROWSER:-}" = 1 ]; then lighthouse_args=(); fi
python scripts/lighthouse_budget.py "${lighthouse_args[@]}" \
  --accessibility-on book/03_scaling.html,book/appendix_glossary.html,index.html,zh/book/appendix_glossary.html
