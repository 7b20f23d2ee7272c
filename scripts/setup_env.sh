# Sourced by scripts/build_book.sh and scripts/test.sh: make (once) and activate .venv with
# everything the book and the tests need, and the package installed in editable mode.
#
# PyTorch: on Linux, PyPI's default torch wheel is the CUDA build (about 6 GB installed).  The
# book and the tests need only the CPU, so unless .venv already has a torch (any build: keep
# the one you installed), this installs the CPU build of TORCH_VERSION from PyTorch's CPU index
# (about 0.7 GB).  Choose another build by installing it into .venv first, e.g.
#   python3 -m venv .venv && .venv/bin/pip install torch      # the CUDA build, for a GPU
# or set TORCH_INDEX_URL (e.g. https://download.pytorch.org/whl/cu126).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# Already done by the script that called this one (scripts/test.sh, then build_book.sh): activate.
if [ "${ATTNCOURSE_ENV_READY:-}" = "$PWD" ] && [ -x .venv/bin/python ]; then
  # shellcheck disable=SC1091
  . .venv/bin/activate
  return 0 2>/dev/null || exit 0
fi
PYTHON=${PYTHON:-python3}
TORCH_VERSION=${TORCH_VERSION:-2.13.0}
TORCH_INDEX_URL=${TORCH_INDEX_URL:-https://download.pytorch.org/whl/cpu}
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
# shellcheck disable=SC1091
. .venv/bin/activate
python -m pip install -q --upgrade pip
if ! python -c "import torch" >/dev/null 2>&1; then
  # With the extra index, "torch==X" resolves to X+cpu (a local version sorts above X).
  python -m pip install -q "torch==$TORCH_VERSION" --extra-index-url "$TORCH_INDEX_URL"
fi
python -m pip install -q -r requirements.txt
python -m pip install -q --no-deps -e .
export ATTNCOURSE_ENV_READY="$PWD"
