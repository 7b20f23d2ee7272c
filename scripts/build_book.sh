#!/usr/bin/env bash
# Build the HTML book (executing every chapter) into _build/html and open it.
set -euo pipefail
. "$(dirname "$0")/setup_env.sh"
jupyter-book build . --warningiserror --keep-going
echo "The book is at $(pwd)/_build/html/index.html"
if [ -z "${CI:-}" ] && [ -z "${NO_OPEN:-}" ]; then
  (command -v xdg-open >/dev/null && xdg-open _build/html/index.html) ||
    (command -v open >/dev/null && open _build/html/index.html) || true
fi
