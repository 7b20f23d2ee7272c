#!/usr/bin/env bash
# Everything the tests need, then every test: the package, its doctests, the book build,
# every notebook under nbval, and the browser checks of the built HTML.
set -euo pipefail
. "$(dirname "$0")/setup_env.sh"

# Debian's Chromium for the browser tests (installed when we may; otherwise they skip).
if ! command -v chromium >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi

NO_OPEN=1 bash scripts/build_book.sh
python -m pytest "$@"
