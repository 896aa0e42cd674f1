#!/usr/bin/env bash
# Out of memory is an error message and exit status 3, never a crash, a hang
# or a partial output file. A 125-billion-row cross product under a 1 GB
# address-space limit must fail that way, and quickly.
#   oom.sh REDFOX
set -u
redfox="$1"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
seq 0 4999 >"$work/n.tsv"
cat >"$work/oom.lql" <<'LQL'
n(x) -> int32(x).
@input(n, "n.tsv").
p(x, y, z) -> int32(x), int32(y), int32(z).
p(x, y, z) <- n(x), n(y), n(z).
@output(p).
LQL
status=0
(ulimit -v 1000000; timeout 60 "$redfox" run "$work/oom.lql" --output "$work/out") \
  >"$work/stdout" 2>"$work/stderr" || status=$?
fail=0
[ "$status" = 3 ] || { echo "FAIL: exit status $status, expected 3"; fail=1; }
grep -q "error: out of memory" "$work/stderr" || { echo "FAIL: no 'error: out of memory' message"; fail=1; }
if [ -e "$work/out" ] && [ -n "$(ls -A "$work/out")" ]; then
  echo "FAIL: output files left behind: $(ls "$work/out")"; fail=1
fi
[ -s "$work/stdout" ] && { echo "FAIL: something printed on stdout"; fail=1; }
cat "$work/stderr"
[ $fail = 0 ] && echo "1 passed, 0 failed" || echo "0 passed, 1 failed"
exit $fail
