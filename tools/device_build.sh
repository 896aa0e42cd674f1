#!/usr/bin/env bash
# Builds Red Fox on a machine that has CUDA but no package registry (the GPU
# device machine): build tools that are missing (re2c, lemon, CUnit, SQLite)
# are unpacked from the .deb files in DEBS (fetch them where a registry is
# reachable: `apt-get download re2c lemon libcunit1 libcunit1-dev
# libsqlite3-dev sqlite3`), then BUILD is configured (Release, sm_90) and
# built with every core.
#
#   tools/device_build.sh [DEBS (default .data/debs)] [BUILD (default build-dev)]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
debs="${1:-$root/.data/debs}"
build="${2:-$root/build-dev}"
missing=0
for tool in re2c lemon sqlite3; do command -v "$tool" >/dev/null 2>&1 || missing=1; done
[ -f /usr/include/CUnit/Basic.h ] && [ -f /usr/include/sqlite3.h ] || missing=1
if [ "$missing" = 1 ]; then
  if ! ls "$debs"/*.deb >/dev/null 2>&1; then
    echo "device_build: build tools missing and no .deb files in $debs" >&2
    exit 1
  fi
  for f in "$debs"/*.deb; do dpkg -x "$f" /; done
  ldconfig
fi
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 >/dev/null
cmake --build "$build" -j "$(nproc)" 2>&1 | grep -E "error|warning|Error" || true
test -x "$build/redfox"
