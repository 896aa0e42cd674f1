#!/usr/bin/env bash
# Runs every test Red Fox has, the way CI does:
#   1. build/       (Release): unit tests, golden end-to-end tests, the random
#                   program differential suite, known graph results;
#   2. build-fuzz/  (clang + libFuzzer): a short fuzz of the parsers, the
#                   .rfx loader and the fact-file reader (tools/fuzz.sh;
#                   longer runs by hand);
#   3. build-asan/  (Debug, AddressSanitizer + UndefinedBehaviorSanitizer):
#                   the same suites again, minus the long graph runs.
# GPU tests skip with a message where no CUDA device is present.
# Tests labelled LONG (the 47M-tuple closure of p2p-Gnutella04, ~40 s) run in
# the Release stage only; RF_TEST_LONG=0 skips them there too.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
jobs="$(nproc 2>/dev/null || echo 2)"
exclude=()
[ "${RF_TEST_LONG:-1}" = 0 ] && exclude=(-LE LONG)

echo "== Release build and tests =="
RF_BUILD_DIR="$root/build" tools/bootstrap.sh
ctest --test-dir build --output-on-failure -j "$jobs" "${exclude[@]}"

echo "== Fuzz smoke: parsers, .rfx loader and fact files (libFuzzer, ${RF_FUZZ_SECONDS:-15}s each) =="
if command -v clang >/dev/null 2>&1; then
  tools/fuzz.sh "${RF_FUZZ_SECONDS:-15}"
else
  echo "skipped: clang not found (tools/fuzz.sh needs it)"
fi

echo "== Sanitizer (ASan+UBSan) build and tests =="
RF_BUILD_DIR="$root/build-asan" RF_CMAKE_ARGS="-DRF_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug" tools/bootstrap.sh
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  RF_SANITIZED=1 ctest --test-dir build-asan --output-on-failure -j "$jobs" -LE "LONG|NOSAN"
