#!/usr/bin/env bash
# Creates or updates the git-ignored virtual environment the Python
# package's tests run in ($ROOT/.venv-python, or $RF_PYTHON_VENV), with
# pinned PyPI packages (numpy, pandas, pytest; setuptools and wheel to build
# python/ without network), then installs the package: pip install ./python.
# Idempotent: a stamp file holding the pins makes the PyPI step a no-op;
# the package itself is reinstalled every time (seconds, no network).
# Exit status 77 when the venv does not exist yet and the package index
# cannot be reached (tests/python skips then). Prints what it does on stderr.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${RF_PYTHON_VENV:-$root/.venv-python}"
pins=(numpy==2.1.3 pandas==2.2.3 pytest==8.3.3 setuptools==75.6.0 wheel==0.45.1)
stamp="$venv/.redfox-python-stamp"
want="${pins[*]}"
py="$venv/bin/python3"

if ! { [ -x "$py" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; }; then
  index="${PIP_INDEX_URL:-https://pypi.org/simple}"
  if ! python3 - "$index" <<'PY' >/dev/null 2>&1
import sys, urllib.request
urllib.request.urlopen(sys.argv[1].rstrip("/") + "/numpy/", timeout=15).read(1)
PY
  then
    echo "python_env: the package index $index cannot be reached, and $venv is not ready" >&2
    exit 77
  fi
  echo "python_env: installing $want into $venv" >&2
  log="$(mktemp)"
  trap 'rm -f "$log"' EXIT
  if [ ! -x "$py" ] && ! python3 -m venv "$venv" >"$log" 2>&1; then
    rm -rf "$venv"
    sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo -n"
    export DEBIAN_FRONTEND=noninteractive
    { $sudo apt-get install -y -q python3-venv || { $sudo apt-get update -q && $sudo apt-get install -y -q python3-venv; }; } >>"$log" 2>&1 || true
    python3 -m venv "$venv" >>"$log" 2>&1 || { cat "$log" >&2; echo "python_env: error: cannot create $venv" >&2; exit 1; }
  fi
  if ! "$py" -m pip install -q --disable-pip-version-check "${pins[@]}" >>"$log" 2>&1; then
    cat "$log" >&2
    echo "python_env: error: pip install ${pins[*]} failed" >&2
    exit 1
  fi
  echo "$want" >"$stamp"
fi
# The package, as a user installs it (no build isolation: no network).
"$py" -m pip install -q --disable-pip-version-check --no-deps --no-build-isolation --force-reinstall "$root/python" \
  >/dev/null
echo "python_env: $venv ready (redfox from $root/python)" >&2
