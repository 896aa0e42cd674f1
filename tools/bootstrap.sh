#!/usr/bin/env bash
# Makes sure the build tools exist (installing missing Debian packages
# non-interactively) and that build/ is configured and up to date.
# Used by ./redfox and tests/run.sh. Quiet unless something goes wrong.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${RF_BUILD_DIR:-$root/build}"

need=()
command -v cmake  >/dev/null 2>&1 || need+=(cmake)
command -v cc     >/dev/null 2>&1 || need+=(gcc)
command -v make   >/dev/null 2>&1 || need+=(make)
command -v re2c   >/dev/null 2>&1 || need+=(re2c)
command -v lemon  >/dev/null 2>&1 || need+=(lemon)
[ -f /usr/include/CUnit/Basic.h ] || need+=(libcunit1-dev)
[ -f /usr/include/sqlite3.h ]     || need+=(libsqlite3-dev)
command -v sqlite3 >/dev/null 2>&1 || need+=(sqlite3)
# `dot` checks the Graphviz that `redfox explain --dot` writes (tests/cli).
command -v dot     >/dev/null 2>&1 || need+=(graphviz)
# MPI: distributed runs (mpirun -np N redfox run; tests/dist). redfox loads
# it only when distributed; the build works without it (CMake says so).
command -v mpirun  >/dev/null 2>&1 || need+=(openmpi-bin)
command -v mpicc   >/dev/null 2>&1 || need+=(libopenmpi-dev)

if [ ${#need[@]} -gt 0 ]; then
  echo "redfox: installing build dependencies: ${need[*]}" >&2
  sudo=""
  if [ "$(id -u)" != 0 ]; then
    if command -v sudo >/dev/null 2>&1; then sudo="sudo -n"; else
      echo "redfox: error: missing ${need[*]} and not root; install them with apt-get" >&2
      exit 1
    fi
  fi
  export DEBIAN_FRONTEND=noninteractive
  if ! $sudo apt-get install -y -q "${need[@]}" >/tmp/redfox-apt.log 2>&1; then
    $sudo apt-get update -q >>/tmp/redfox-apt.log 2>&1 || true
    if ! $sudo apt-get install -y -q "${need[@]}" >>/tmp/redfox-apt.log 2>&1; then
      echo "redfox: error: could not install ${need[*]}; see /tmp/redfox-apt.log" >&2
      exit 1
    fi
  fi
fi

jobs="$(nproc 2>/dev/null || echo 2)"
mkdir -p "$build"
# Stamped before building, so that a source saved during the build still
# counts as newer than the build.
touch "$build/.up-to-date.new"
log="$build/build.log"
if [ ! -f "$build/CMakeCache.txt" ]; then
  echo "redfox: building Red Fox in $build (first use, about a minute; log: $log)" >&2
  if ! cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release ${RF_CMAKE_ARGS:-} >"$log" 2>&1; then
    cat "$log" >&2
    echo "redfox: error: configuring the build failed (log: $log)" >&2
    exit 1
  fi
fi
if ! cmake --build "$build" -j "$jobs" ${RF_BUILD_TARGET:+--target $RF_BUILD_TARGET} >>"$log" 2>&1; then
  cat "$log" >&2
  echo "redfox: error: the build failed (log: $log)" >&2
  exit 1
fi
# ./redfox skips this script while no source is newer than this stamp.
mv -f "$build/.up-to-date.new" "$build/.up-to-date"
