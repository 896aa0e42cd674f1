#!/usr/bin/env bash
# The Python package's tests (python/tests, pytest) in the git-ignored venv
# tools/python_env.sh makes (.venv-python: numpy, pandas, pytest from PyPI
# once, then `pip install ./python`), against the build's libredfox.
# Exit 77 (ctest: skipped) when the venv cannot be made: no PyPI.
# Usage: run_python_tests.sh LIBREDFOX_SO
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
lib="$1"
rc=0
"$root/tools/python_env.sh" || rc=$?
if [ "$rc" = 77 ]; then
  echo "python: SKIPPED: no venv and no package index to make one (tools/python_env.sh needs PyPI once)"
  exit 77
fi
[ "$rc" = 0 ] || exit "$rc"
venv="${RF_PYTHON_VENV:-$root/.venv-python}"
# From a folder outside the source tree, so that `import redfox` is the
# installed package, not python/redfox.
cd "$(mktemp -d)"
trap 'rm -rf "$PWD"' EXIT
REDFOX_LIBRARY="$lib" "$venv/bin/python3" -m pytest -q -p no:cacheprovider "$root/python/tests"
