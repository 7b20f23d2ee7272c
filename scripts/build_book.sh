#!/usr/bin/env bash
# Build the HTML book (executing every chapter) into _build/html and open it.
set -euo pipefail
. "$(dirname "$0")/setup_env.sh"
# Every chapter is executed once per build: the cache of executed notebooks starts empty, and the
# translated editions read theirs from it instead of executing again.
rm -rf _build/.jupyter_cache
jupyter-book build . --all --warningiserror --keep-going
python scripts/build_translations.py
echo "The book is at $(pwd)/_build/html/index.html (简体中文: zh/, 繁體中文: zh-tw/)"
if [ -z "${CI:-}" ] && [ -z "${NO_OPEN:-}" ]; then
  (command -v xdg-open >/dev/null && xdg-open _build/html/index.html) ||
    (command -v open >/dev/null && open _build/html/index.html) || true
fi
