#!/usr/bin/env bash
# `redfox run --count` prints each answer's size and a 64-bit fingerprint
# of its rows in output order (runtime/runtime.c, answer_hash). This checks
# the fingerprint against an independent implementation of its definition
# (below, in Python, over the rows --output writes): one chain over the
# rows' words up to 65,536 rows, and over larger answers a chain over the
# row count and the hashes of 65,536-row blocks, which the runtime computes
# on several threads; and that the thread count does not change it.
# Usage: count_hash.sh REDFOX
set -u
redfox=$1
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
work=$(mktemp -d /tmp/rf_count_hash.XXXXXX)
trap 'rm -rf "$work"' EXIT
fail=0
# A chain of 500 nodes: 124,750 paths (two blocks), and a chain of 100
# nodes: 4,950 paths (one chain).
python3 -c 'for i in range(499): print(f"{i}\t{i+1}")' > "$work/chain500.tsv"
python3 -c 'for i in range(99): print(f"{i}\t{i+1}")' > "$work/chain100.tsv"
for g in chain500 chain100; do
    for t in 1 3; do
        timeout 120 "$redfox" run "$root/programs/tc.lql" --input "edge=$work/$g.tsv" --count --backend=cpu \
            --threads $t > "$work/$g.count$t" 2>"$work/err" || { echo "FAIL $g --threads $t: $(head -2 "$work/err")"; fail=1; }
    done
    # On a machine with a GPU the device computes the block hashes itself
    # (backend.h, block_hashes: the rows are not downloaded).
    runs="1 3"
    if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
        runs="1 3 gpu"
        timeout 120 "$redfox" run "$root/programs/tc.lql" --input "edge=$work/$g.tsv" --count --backend=gpu \
            > "$work/$g.countgpu" 2>"$work/err" || { echo "FAIL $g --backend=gpu: $(head -2 "$work/err")"; fail=1; }
    fi
    timeout 120 "$redfox" run "$root/programs/tc.lql" --input "edge=$work/$g.tsv" --output "$work/out_$g" \
        --backend=cpu > /dev/null 2>"$work/err" || { echo "FAIL $g --output: $(head -2 "$work/err")"; fail=1; }
    want=$(python3 - "$work/out_$g/path.tsv" <<'PY'
import sys
M = (1 << 64) - 1
def mix64(h, v):
    h ^= (v + 0x9e3779b97f4a7c15 + ((h << 6) & M) + (h >> 2)) & M
    h = (h * 0xbf58476d1ce4e5b9) & M
    return h ^ (h >> 31)
rows = [tuple(int(x) & M for x in line.split("\t")) for line in open(sys.argv[1]).read().splitlines()]
seed = 0x243f6a8885a308d3 ^ 2
def chain(rs):
    h = seed
    for r in rs:
        for w in r:
            h = mix64(h, w)
    return h
B = 1 << 16
if len(rows) <= B:
    h = chain(rows)
else:
    h = mix64(seed, len(rows))
    for b in range(0, len(rows), B):
        h = mix64(h, chain(rows[b:b + B]))
print("# path (%d tuples, hash %016x)" % (len(rows), h))
PY
)
    for t in $runs; do
        got=$(cat "$work/$g.count$t")
        if [ "$got" = "$want" ]; then
            echo "ok   $g ($t): $got"
        else
            echo "FAIL $g ($t): printed '$got', the definition gives '$want'"
            fail=1
        fi
    done
done
exit $fail
