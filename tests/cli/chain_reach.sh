#!/usr/bin/env bash
# Reachability over a chain of 100,000 edges (issue 14, the high-diameter
# case: 100,001 semi-naive iterations of one-row deltas) must find every
# node: 100,001 reachable from node 0, on the CPU backend, fused over the
# chain in order and unfused over it shuffled (the input is sorted on load
# either way); and --backend=auto must say which backend it chose and why. The chain is generated here (bench/chain_graph.py), never
# committed. Usage: chain_reach.sh REDFOX
set -u
redfox=$1
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
work=$(mktemp -d /tmp/rf_chain_reach.XXXXXX)
trap 'rm -rf "$work"' EXIT
fail=0
python3 "$root/bench/chain_graph.py" 100000 -o "$work/chain.tsv" || exit 1
python3 "$root/bench/chain_graph.py" 100000 --shuffle -o "$work/shuffled.tsv" || exit 1
python3 "$root/bench/chain_graph.py" 1000 -o "$work/short.tsv" || exit 1
for run in "chain" "shuffled --no-fuse"; do
    set -- $run
    out=$("$redfox" run "$root/programs/reach.lql" --input "e=$work/$1.tsv" --count --backend=cpu ${2:-} 2>&1)
    if printf '%s\n' "$out" | grep -q '^# reach (100001 tuples,'; then
        echo "ok   reach over $run"
    else
        echo "FAIL reach over $run: $out"
        fail=1
    fi
done
# auto over a 1,000-edge chain (1,001 input rows with the fact): under the
# threshold the CPU is chosen without trying a GPU, and --stats says so.
RF_AUTO_CPU_ROWS=2000 "$redfox" run "$root/programs/reach.lql" --input "e=$work/short.tsv" --count --stats \
    >"$work/out" 2>"$work/err"
if grep -q '^redfox: backend: cpu (auto: inputs 1001 rows < 2000' "$work/err" &&
   grep -q '^# reach (1001 tuples,' "$work/out"; then
    echo "ok   auto chooses the CPU below the threshold"
else
    echo "FAIL auto below the threshold: $(head -c 600 "$work/err")"
    fail=1
fi
RF_AUTO_CPU_ROWS=100 "$redfox" run "$root/programs/reach.lql" --input "e=$work/short.tsv" --count --stats \
    >"$work/out" 2>"$work/err"
if grep -q '^redfox: backend: .* (auto: inputs >= 100 rows' "$work/err"; then
    echo "ok   auto names the threshold reached"
else
    echo "FAIL auto above the threshold: $(head -c 600 "$work/err")"
    fail=1
fi
exit $fail
