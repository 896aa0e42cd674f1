#!/usr/bin/env bash
# Creates or updates the git-ignored virtual environment the TPC-H tools run
# in ($ROOT/.venv-tpch, or $RF_TPCH_VENV), with pinned PyPI packages:
#   tpchgen-cli            the TPC-H data generator (.tbl output = dbgen's)
#   duckdb                 the reference SQL engine
#   duckdb-extension-tpch  DuckDB's tpch extension as a wheel (the 22 query
#                          texts, tpch_queries()); loaded from the wheel's
#                          file with LOAD, no network at run time
# Idempotent: a stamp file holding the pins makes a second run a no-op.
# Prints one line (to stderr) saying what it does. The tools find the venv's
# python at $RF_TPCH_VENV/bin/python3 (default .venv-tpch/bin/python3).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${RF_TPCH_VENV:-$root/.venv-tpch}"
pins=(tpchgen-cli==4.0.0 duckdb==1.5.5 duckdb-extension-tpch==1.5.5)
stamp="$venv/.redfox-tpch-stamp"
want="${pins[*]}"
py="$venv/bin/python3"

if [ -x "$py" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  echo "tpch_env: $venv up to date ($want)" >&2
  exit 0
fi

echo "tpch_env: installing $want into $venv" >&2
base=""
for c in python3.11 python3.12 python3.13 python3.10 python3.9 python3; do
  if command -v "$c" >/dev/null 2>&1; then base="$c"; break; fi
done
[ -n "$base" ] || { echo "tpch_env: error: no python3 found" >&2; exit 1; }

log="$(mktemp)"
trap 'rm -f "$log"' EXIT
if [ ! -x "$py" ]; then
  if ! "$base" -m venv "$venv" >"$log" 2>&1; then
    # Debian's python3 keeps venv (ensurepip) in a separate package.
    rm -rf "$venv"
    sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo -n"
    export DEBIAN_FRONTEND=noninteractive
    { $sudo apt-get install -y -q python3-venv || { $sudo apt-get update -q && $sudo apt-get install -y -q python3-venv; }; } >>"$log" 2>&1 || true
    if ! "$base" -m venv "$venv" >>"$log" 2>&1; then
      cat "$log" >&2
      echo "tpch_env: error: could not create the venv $venv" >&2
      exit 1
    fi
  fi
fi
# RF_TPCH_WHEELS=DIR: install from the wheel files in DIR only, no index (a
# machine that cannot reach PyPI, such as the GPU machine; fetch them where
# it can: pip download --no-deps --only-binary=:all: --python-version 3.12
# --platform manylinux_2_28_x86_64 ... tpchgen-cli==4.0.0 duckdb==1.5.5
# duckdb-extension-tpch==1.5.5).
source=()
[ -n "${RF_TPCH_WHEELS:-}" ] && source=(--no-index --find-links "$RF_TPCH_WHEELS")
if ! "$py" -m pip install -q --disable-pip-version-check "${source[@]}" "${pins[@]}" >>"$log" 2>&1; then
  cat "$log" >&2
  echo "tpch_env: error: pip install ${pins[*]} failed" >&2
  exit 1
fi
echo "$want" >"$stamp"
