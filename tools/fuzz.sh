#!/usr/bin/env bash
# Fuzzes the two places where untrusted bytes enter Red Fox, with clang's
# libFuzzer under ASan+UBSan, for N seconds each (default 30):
#   fuzz_parser    : program text -> front end (tests/fuzz/)
#   fuzz_parser_souffle : Soufflé (.dl) program text -> its front end
#   fuzz_hir_load  : .rfx bytes   -> Harmony IR loader + verifier (tests/fuzz_hir/)
#   fuzz_facts     : fact files (TSV, CSV, .tbl) -> runtime/io.c's parser, its
#                    variants (pieces, fast path, columns read) against each
#                    other and the writer's output read back (tests/fuzz/)
# Every library a target links is built with coverage instrumentation so the
# fuzzer sees inside the front end and the loader, not only the harness.
# Crashes are left in the build folder as crash-* files; exit status non-zero.
#   tools/fuzz.sh [SECONDS]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
seconds="${1:-30}"
build="${RF_FUZZ_BUILD_DIR:-$root/build-fuzz}"
jobs="$(nproc 2>/dev/null || echo 2)"
command -v clang >/dev/null 2>&1 || { echo "fuzz: error: clang not found" >&2; exit 1; }

mkdir -p "$build"
if ! cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Debug -DRF_FUZZ=ON -DRF_WITH_CUDA=OFF \
      -DCMAKE_C_COMPILER=clang \
      -DCMAKE_C_FLAGS="-fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer" \
      >"$build/configure.log" 2>&1; then
  cat "$build/configure.log" >&2; exit 1
fi
if ! cmake --build "$build" -j "$jobs" --target fuzz_parser fuzz_parser_souffle fuzz_hir_load fuzz_hir_seed fuzz_facts \
      >"$build/build.log" 2>&1; then
  cat "$build/build.log" >&2; exit 1
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/parser" "$work/souffle" "$work/hir" "$work/facts"
cp "$root"/tests/fuzz/corpus_facts/* "$work/facts/"
cp "$root"/tests/fuzz/corpus/* "$work/parser/"
cp "$root"/tests/golden/souffle/*.dl "$work/souffle/"
for f in "$root"/tests/golden/souffle/native/*.dl; do cp "$f" "$work/souffle/native-${f##*/}"; done
"$build/tests/fuzz_hir/fuzz_hir_seed" "$work/hir/seed-tc.rfx" "$work/hir/seed-fused.rfx" "$work/hir/seed-multijoin.rfx"

cd "$build"
echo "fuzz: parser for ${seconds}s"
./tests/fuzz/fuzz_parser -max_total_time="$seconds" -max_len=4096 "$work/parser" 2>"$build/fuzz_parser.log" ||
  { tail -40 "$build/fuzz_parser.log" >&2; exit 1; }
tail -1 "$build/fuzz_parser.log"
echo "fuzz: Soufflé parser for ${seconds}s"
./tests/fuzz/fuzz_parser_souffle -max_total_time="$seconds" -max_len=4096 "$work/souffle" \
  2>"$build/fuzz_parser_souffle.log" || { tail -40 "$build/fuzz_parser_souffle.log" >&2; exit 1; }
tail -1 "$build/fuzz_parser_souffle.log"
echo "fuzz: .rfx loader for ${seconds}s"
./tests/fuzz_hir/fuzz_hir_load -max_total_time="$seconds" -max_len=65536 "$work/hir" 2>"$build/fuzz_hir.log" ||
  { tail -40 "$build/fuzz_hir.log" >&2; exit 1; }
tail -1 "$build/fuzz_hir.log"
echo "fuzz: fact files for ${seconds}s"
./tests/fuzz/fuzz_facts -max_total_time="$seconds" -max_len=4096 "$work/facts" 2>"$build/fuzz_facts.log" ||
  { tail -40 "$build/fuzz_facts.log" >&2; exit 1; }
tail -1 "$build/fuzz_facts.log"
