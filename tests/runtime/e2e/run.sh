#!/bin/sh
# Outputs read back: write.lql writes values of every type that need
# escaping or careful rounding (a leading '#', the empty string, tabs,
# newlines, CRs, backslashes, -0.0, subnormals, int extremes, a zero-arity
# tuple) with --output; read.lql reads the files back with @input (--input)
# and compares them with the same facts stated inline (read.out: exact
# counts, empty diffs). Also checks that printing to stdout writes the rows
# exactly as the files hold them.
# Usage: run.sh REDFOX
redfox=$1
dir=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/rf_values_e2e.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$redfox" run "$dir/write.lql" --output "$tmp/out" || fail "write.lql --output exited with $?"
# Rows per file, one a line (z holds the empty tuple: one empty line).
for pn in s:20 f:16 i:5 b:2 m:4 z:1; do
    p=${pn%%:*} n=${pn#*:}
    got=$(wc -l <"$tmp/out/$p.tsv")
    [ "$got" -eq "$n" ] || fail "$p.tsv has $got lines, expected $n"
done
# stdout prints the same rows under '# PRED (N tuples)' lines.
"$redfox" run "$dir/write.lql" >"$tmp/stdout" || fail "write.lql exited with $?"
for p in s f i b m z; do
    printf '# %s (%d tuples)\n' "$p" "$(wc -l <"$tmp/out/$p.tsv")"
    cat "$tmp/out/$p.tsv"
done >"$tmp/files"
cmp -s "$tmp/stdout" "$tmp/files" || { diff "$tmp/files" "$tmp/stdout"; fail "stdout differs from the files"; }

inputs=""
for p in s f i b m z; do
    inputs="$inputs --input $p=$tmp/out/$p.tsv"
done
# shellcheck disable=SC2086
"$redfox" run "$dir/read.lql" $inputs >"$tmp/read" || fail "read.lql exited with $?"
cmp -s "$tmp/read" "$dir/read.out" || { diff "$dir/read.out" "$tmp/read"; fail "read.lql output differs from read.out"; }
echo "ok   values round trip through --output and @input"
