#!/usr/bin/env bash
# Everything the tests need, then every test: the package, its doctests, the book build,
# every notebook under nbval, and the browser checks of the built HTML.
set -euo pipefail
. "$(dirname "$0")/setup_env.sh"

# Debian's Chromium for the browser tests and bubblewrap for the grader's sandbox, installed
# when we may (root with apt-get); otherwise the browser tests skip and the grader falls back
# to its weaker sandbox.
missing=()
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v bwrap >/dev/null 2>&1 || missing+=(bubblewrap)
if [ ${#missing[@]} -gt 0 ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# axe-core for the accessibility audit of the built pages (package.json's devDependencies),
# from the lock file; without Node the audit skips (and fails under REQUIRE_BROWSER=1).
if command -v npm >/dev/null 2>&1; then
  npm ci --no-audit --no-fund --loglevel=error || echo "npm ci failed: the accessibility audit will skip" >&2
fi

NO_OPEN=1 bash scripts/build_book.sh
python -m pytest "$@"
