#!/usr/bin/env bash
# Fuzzes the .rfx loader (rf_hir_deserialize) with libFuzzer for N seconds
# (default 30): configures a clang build with -DRF_FUZZ=ON and sanitizers in
# $RF_FUZZ_BUILD_DIR (default build-fuzz/), seeds the corpus with a valid
# program, and runs. Crashes land in the build folder as crash-* files.
#   tools/fuzz_hir.sh [SECONDS] [extra libFuzzer flags...]
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${RF_FUZZ_BUILD_DIR:-$root/build-fuzz}"
secs="${1:-30}"
shift || true

command -v clang >/dev/null 2>&1 || { echo "fuzz_hir: error: clang not found" >&2; exit 1; }
jobs="$(nproc 2>/dev/null || echo 2)"
mkdir -p "$build"
cmake -S "$root" -B "$build" -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=Debug \
      -DRF_FUZZ=ON -DRF_SANITIZE=ON -DRF_WITH_CUDA=OFF >"$build/configure.log" 2>&1 ||
  { cat "$build/configure.log" >&2; exit 1; }
cmake --build "$build" -j "$jobs" --target fuzz_hir_load fuzz_hir_seed

corpus="$build/fuzz_hir_corpus"
mkdir -p "$corpus"
"$build/tests/fuzz_hir/fuzz_hir_seed" "$corpus/seed-tc.rfx"
cd "$build"
exec "$build/tests/fuzz_hir/fuzz_hir_load" -max_total_time="$secs" -max_len=65536 "$@" "$corpus"
