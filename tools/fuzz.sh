#!/usr/bin/env bash
# Builds the parser fuzz target with clang + libFuzzer (in build-fuzz/) and
# runs it for N seconds (default 30), starting from tests/fuzz/corpus.
# Usage: tools/fuzz.sh [SECONDS]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
seconds="${1:-30}"
build="${RF_FUZZ_BUILD_DIR:-$root/build-fuzz}"
# Every library the target links is instrumented for coverage, so the
# fuzzer sees inside the front end and not only the harness.
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Debug -DRF_FUZZ=ON -DRF_WITH_CUDA=OFF \
  -DCMAKE_C_COMPILER=clang \
  -DCMAKE_C_FLAGS="-fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer" >/dev/null
cmake --build "$build" --target fuzz_parser -j "$(nproc 2>/dev/null || echo 2)" >/dev/null
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cp "$root"/tests/fuzz/corpus/* "$work"/
cd "$build"
./tests/fuzz/fuzz_parser -max_total_time="$seconds" -max_len=4096 "$work"
