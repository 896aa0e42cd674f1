#!/usr/bin/env bash
# Out-of-core kernels (runtime/ooc.c, issue 10): with RF_TEST_OOM_ROWS=N the
# CPU backend fails every kernel whose result has more than N rows as out
# of memory, as a device too small for it would. With spilling on
# (--device-memory; on a GPU always), such a kernel runs again in key-range
# parts, cut in two while a part is still too large: the answers (hash and
# output files) are those of a run without the limit, and --stats counts
# the parts. Without spilling, or where even one key value's rows are too
# many, the run fails with the out-of-memory message at the rule (FILE:LINE:COL,
# exit 3).
# (The golden, random and TPC-H suites run every program in parts too:
# golden_ooc, differential_ooc*, tpch_sf0.01_ooc.)
# Usage: out_of_core.sh REDFOX
set -u
redfox=$1
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
work=$(mktemp -d /tmp/rf_out_of_core.XXXXXX)
trap 'rm -rf "$work"' EXIT
fail=0
python3 -c '
import random
r = random.Random(7)
for _ in range(900): print(f"{r.randrange(400)}\t{r.randrange(400)}")' > "$work/g.tsv"
for case in tc:4000 same_generation:2000 triangles:300; do
    prog=${case%%:*} rows=${case##*:}
    want=$(timeout 120 "$redfox" run "$root/programs/$prog.lql" --input "edge=$work/g.tsv" --count --backend=cpu)
    got=$(RF_TEST_OOM_ROWS=$rows timeout 120 "$redfox" run "$root/programs/$prog.lql" --input "edge=$work/g.tsv" \
          --count --backend=cpu --device-memory 1G --stats 2>"$work/stats")
    line=$(grep "out of core:" "$work/stats")
    runs=$(echo "$line" | sed -n 's/.*out of core: \([0-9]*\) kernel runs.*/\1/p')
    cuts=$(echo "$line" | sed -n 's/.*(\([0-9]*\) cut in two.*/\1/p')
    if [ -n "$want" ] && [ "$got" = "$want" ] && [ "${runs:-0}" -gt 0 ]; then
        echo "ok   $prog with results of at most $rows rows: $got; $runs kernel runs in parts, $cuts parts cut again"
    else
        echo "FAIL $prog with results of at most $rows rows: '$got', want '$want'; '$line'"
        fail=1
    fi
    all_cuts=$(( ${all_cuts:-0} + ${cuts:-0} ))
done
if [ "$all_cuts" -gt 0 ]; then
    echo "ok   parts too large were cut in two ($all_cuts)"
else
    echo "FAIL no part was cut in two"
    fail=1
fi
# The semi-naive step's DIFF and UNION run together part by part (the
# union skipped when reached): counted, and the answer and the bytes moved
# compared with running them apart (RF_OOC_UNION_APART=1).
for apart in 0 1; do
    if [ $apart = 1 ]; then export RF_OOC_UNION_APART=1; fi
    got=$(RF_TEST_OOC_PARTS=3 timeout 120 "$redfox" run "$root/programs/tc.lql" --input "edge=$work/g.tsv" \
          --count --backend=cpu --device-memory 1G --stats 2>"$work/stats$apart")
    unset RF_OOC_UNION_APART
    eval "got$apart=\$got"
    eval "together$apart=$(sed -n 's/.*; \([0-9]*\) semi-naive unions run with their difference.*/\1/p' "$work/stats$apart")"
    eval "up$apart=$(sed -n 's/.*host<->device: \([0-9.]*\) MB to the device.*/\1/p' "$work/stats$apart")"
done
want=$(timeout 120 "$redfox" run "$root/programs/tc.lql" --input "edge=$work/g.tsv" --count --backend=cpu)
if [ "$got0" = "$want" ] && [ "$got1" = "$want" ] && [ "${together0:-0}" -gt 0 ] && [ "${together1:-1}" = 0 ] &&
   awk -v a="$up0" -v b="$up1" 'BEGIN { exit !(a + 0 < b + 0) }'; then
    echo "ok   semi-naive unions with their differences: $together0, $up0 MB up against $up1 apart; $got0"
else
    echo "FAIL semi-naive unions with their differences: '$got0' / '$got1', want '$want'; $together0 / $together1 runs," \
         "$up0 / $up1 MB up"
    fail=1
fi
# Output files: the same bytes.
timeout 120 "$redfox" run "$root/programs/same_generation.lql" --input "edge=$work/g.tsv" --backend=cpu \
    --output "$work/whole" >/dev/null
RF_TEST_OOM_ROWS=2000 timeout 120 "$redfox" run "$root/programs/same_generation.lql" --input "edge=$work/g.tsv" \
    --backend=cpu --device-memory 1G --output "$work/parts" >/dev/null
if [ -s "$work/whole/sg.tsv" ] && cmp -s "$work/whole/sg.tsv" "$work/parts/sg.tsv"; then
    echo "ok   output file written from parts: same bytes"
else
    echo "FAIL output file written from parts differs"; ls "$work/whole" "$work/parts"
    fail=1
fi
# Without spilling (no limit on the CPU backend) there are no parts: exit 3.
RF_TEST_OOM_ROWS=2000 timeout 120 "$redfox" run "$root/programs/same_generation.lql" --input "edge=$work/g.tsv" \
    --count --backend=cpu >"$work/out" 2>"$work/err"
rc=$?
if [ "$rc" = 3 ] && grep -q "error: out of memory" "$work/err" && [ ! -s "$work/out" ]; then
    echo "ok   without spilling: exit 3, $(head -1 "$work/err" | cut -c1-80)"
else
    echo "FAIL without spilling: exit $rc, $(head -1 "$work/err")"
    fail=1
fi
# One key value's rows alone too many: exit 3, said so, at the rule.
RF_TEST_OOM_ROWS=3 timeout 120 "$redfox" run "$root/programs/tc.lql" --input "edge=$work/g.tsv" \
    --count --backend=cpu --device-memory 1G >"$work/out" 2>"$work/err"
rc=$?
if [ "$rc" = 3 ] && grep -q "tc.lql:[0-9]*:[0-9]*: error: out of memory" "$work/err" && [ ! -s "$work/out" ] &&
   grep -q "the rows of one key value alone do not fit\|cannot run in parts" "$work/err"; then
    echo "ok   too large in every part: exit 3, $(tr '\n' ' ' < "$work/err" | cut -c1-160)"
else
    echo "FAIL too large in every part: exit $rc, $(cat "$work/err")"
    fail=1
fi
exit $fail
