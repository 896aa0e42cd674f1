#!/usr/bin/env bash
# Reachability over a chain of 100,000 edges (issue 14, the high-diameter
# case: 100,001 semi-naive iterations of one-row deltas) must find every
# node: 100,001 reachable from node 0, on the CPU backend, fused and
# unfused, the chain's edges in order and shuffled (the input is sorted
# on load either way); and --backend=auto must say which backend it chose
# and why. The chain is generated here (bench/chain_graph.py), never
# committed. Usage: chain_reach.sh REDFOX
set -u
redfox=$1
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
work=$(mktemp -d /tmp/rf_chain_reach.XXXXXX)
trap 'rm -rf "$work"' EXIT
fail=0
python3 "$root/bench/chain_graph.py" 100000 -o "$work/chain.tsv" || exit 1
python3 "$root/bench/chain_graph.py" 100000 --shuffle -o "$work/shuffled.tsv" || exit 1
for input in chain shuffled; do
    for extra in "" --no-fuse; do
        out=$("$redfox" run "$root/programs/reach.lql" --input "e=$work/$input.tsv" --count --backend=cpu $extra 2>&1)
        if printf '%s\n' "$out" | grep -q '^# reach (100001 tuples,'; then
            echo "ok   reach over $input ${extra:-fused}"
        else
            echo "FAIL reach over $input ${extra:-fused}: $out"
            fail=1
        fi
    done
done
# auto: 100,000 input rows; with the threshold above them the CPU is chosen
# without trying a GPU, and --stats says so.
RF_AUTO_CPU_ROWS=200000 "$redfox" run "$root/programs/reach.lql" --input "e=$work/chain.tsv" --count --stats \
    >"$work/out" 2>"$work/err"
if grep -q '^redfox: backend: cpu (auto: inputs 100001 rows < 200000' "$work/err"; then
    echo "ok   auto chooses the CPU below the threshold"
else
    echo "FAIL auto below the threshold: $(head -c 600 "$work/err")"
    fail=1
fi
RF_AUTO_CPU_ROWS=1000 "$redfox" run "$root/programs/reach.lql" --input "e=$work/chain.tsv" --count --stats \
    >"$work/out" 2>"$work/err"
if grep -q '^redfox: backend: .* (auto: inputs >= 1000 rows' "$work/err"; then
    echo "ok   auto names the threshold reached"
else
    echo "FAIL auto above the threshold: $(head -c 600 "$work/err")"
    fail=1
fi
exit $fail
