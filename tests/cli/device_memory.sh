#!/usr/bin/env bash
# `redfox run --device-memory SIZE` (runtime/runtime.c, spilling): sizes
# that are not a positive number of bytes (K/M/G/T multiples) are refused
# with a usage message and exit 64; a run with a limit of one byte spills
# every variable after every kernel (its --stats line counts them) and
# gives the hash of a run without a limit. (The golden and differential
# suites run every program so: golden_spill, differential_spill.)
# Usage: device_memory.sh REDFOX
set -u
redfox=$1
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
work=$(mktemp -d /tmp/rf_device_memory.XXXXXX)
trap 'rm -rf "$work"' EXIT
fail=0
graph="$root/programs/data/tc_sample.tsv"
for bad in 0 -5 1X 12QB "" 99999999999999999999T; do
    timeout 60 "$redfox" run "$root/programs/tc.lql" --input "edge=$graph" --device-memory "$bad" \
        >"$work/out" 2>"$work/err"
    rc=$?
    if [ "$rc" = 64 ] && grep -qF -- "--device-memory expects a size in bytes" "$work/err" && [ ! -s "$work/out" ]; then
        echo "ok   --device-memory '$bad' refused"
    else
        echo "FAIL --device-memory '$bad': exit $rc, stderr: $(head -2 "$work/err")"
        fail=1
    fi
done
python3 -c 'for i in range(300): print(f"{i}\t{i+1}\n{i}\t{(i*7)%300}")' > "$work/g.tsv"
for prog in tc same_generation; do
    want=$(timeout 120 "$redfox" run "$root/programs/$prog.lql" --input "edge=$work/g.tsv" --count --backend=cpu)
    got=$(timeout 120 "$redfox" run "$root/programs/$prog.lql" --input "edge=$work/g.tsv" --count --backend=cpu \
          --device-memory 1 --stats 2>"$work/stats")
    spills=$(sed -n 's/.*device memory limit 1 bytes: \([0-9]*\) variables spilled.*/\1/p' "$work/stats")
    if [ -n "$want" ] && [ "$got" = "$want" ] && [ "${spills:-0}" -gt 0 ]; then
        echo "ok   $prog: $got, $spills variables spilled"
    else
        echo "FAIL $prog: '$got' with the limit, '$want' without; spills '${spills}'"
        fail=1
    fi
done
# A device full of other variables (RF_TEST_OOM_BYTES, a CPU backend test
# hook): out of memory (exit 3) without a limit; with one, the kernels run
# again after spilling the others, and the answer is the same.
want=$(timeout 120 "$redfox" run "$root/programs/same_generation.lql" --input "edge=$work/g.tsv" --count --backend=cpu)
RF_TEST_OOM_BYTES=1 timeout 120 "$redfox" run "$root/programs/same_generation.lql" --input "edge=$work/g.tsv" \
    --count --backend=cpu >"$work/out" 2>"$work/err"
rc=$?
if [ "$rc" = 3 ] && grep -q "out of memory" "$work/err"; then
    echo "ok   a full device without --device-memory: exit 3"
else
    echo "FAIL a full device without --device-memory: exit $rc, $(head -1 "$work/err")"
    fail=1
fi
got=$(RF_TEST_OOM_BYTES=1 timeout 120 "$redfox" run "$root/programs/same_generation.lql" --input "edge=$work/g.tsv" \
      --count --backend=cpu --device-memory 1G --stats 2>"$work/stats")
reruns=$(sed -n 's/.*; \([0-9]*\) kernels run again after running out of memory.*/\1/p' "$work/stats")
if [ "$got" = "$want" ] && [ "${reruns:-0}" -gt 0 ]; then
    echo "ok   a full device with --device-memory: $reruns kernels run again, $got"
else
    echo "FAIL a full device with --device-memory: '$got' (want '$want'), reruns '$reruns'"
    fail=1
fi
for size in 4K 2M 1G; do
    got=$(timeout 120 "$redfox" run "$root/programs/tc.lql" --input "edge=$work/g.tsv" --count --backend=cpu \
          --device-memory $size)
    want=$(timeout 120 "$redfox" run "$root/programs/tc.lql" --input "edge=$work/g.tsv" --count --backend=cpu)
    [ "$got" = "$want" ] && echo "ok   tc --device-memory $size" || { echo "FAIL tc --device-memory $size"; fail=1; }
done
exit $fail
