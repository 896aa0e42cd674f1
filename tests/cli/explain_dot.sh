#!/usr/bin/env bash
# `redfox explain --dot --plan|--ir [-o FILE]`: Graphviz of the plan CFG and
# of the Harmony kernel CFG. Every picture must pass `dot -Tsvg` (Graphviz,
# installed by tools/bootstrap.sh), and show what it is for: tc's fixpoint
# loop as a cluster with its back edge styled, q01's fused group with its
# members, same_generation's loop; labels escaped (a string with < & " and
# bytes that are not UTF-8 still makes valid DOT); -o writes whole or not
# at all.
set -u
redfox="$1"; root="$(cd "$(dirname "$0")/../.." && pwd)"
command -v dot >/dev/null 2>&1 || { echo "FAIL: Graphviz 'dot' not found (tools/bootstrap.sh installs it)"; exit 1; }
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
fail=0

# draw PROG MODE: the DOT on stdout, checked by dot -Tsvg; saved as $tmp/last.dot
draw() {
  if ! "$redfox" explain --dot "$2" "$1" >"$tmp/last.dot" 2>"$tmp/err"; then
    echo "FAIL: explain --dot $2 $1: $(cat "$tmp/err")"; fail=1; return 1
  fi
  if ! dot -Tsvg "$tmp/last.dot" -o "$tmp/last.svg" 2>"$tmp/err" || ! grep -q "<svg" "$tmp/last.svg" ||
     [ -s "$tmp/err" ]; then
    echo "FAIL: dot -Tsvg rejects explain --dot $2 $1: $(cat "$tmp/err")"; fail=1; return 1
  fi
}
need() {  # need WHAT FIXED-STRING: the last picture holds it
  grep -qF -- "$2" "$tmp/last.dot" || { echo "FAIL: $1: lacks: $2"; fail=1; }
}

for prog in tc.lql same_generation.lql tpch/q01.lql tpch/q05.lql points_to.lql even_odd.lql; do
  for mode in --plan --ir; do draw "$root/programs/$prog" "$mode"; done
done

draw "$root/programs/tc.lql" --ir
need "tc --ir" 'subgraph cluster_loop_b2 {'
need "tc --ir" 'fixpoint loop stratum1.loop'
need "tc --ir" 'b2 -> b2 [label=<next iteration>, color="#c0392b", fontcolor="#c0392b", style="bold,dashed"'
need "tc --ir" 'b2 -> b3 [label=<empty(path.delta)>'
need "tc --ir" '<B>FUSED</B>[2] path.new := path.delta.by1, edge'
need "tc --ir" '1. t2 := <B>JOIN</B>[keys=1] path.delta.by1, edge'
need "tc --ir" '2. path.new := <B>SORT</B> t2'
need "tc --ir" 'gather=set'
need "tc --ir" 'edge := <B>LOAD</B>'
# the sample graph has 7 edges and a last line: counted, at most 8 rows;
# inside the loop sizes change every iteration: unknown
need "tc --ir" 'rows &lt;= 8'
need "tc --ir" 'rows ?'
[ "$(grep -c '^ *b[0-9]* \[label=<<TABLE' "$tmp/last.dot")" = 4 ] || { echo "FAIL: tc --ir: not 4 block nodes"; fail=1; }

draw "$root/programs/tc.lql" --plan
need "tc --plan" 'subgraph cluster_loop_b2 {'
need "tc --plan" 'path.new := MapJoin path.delta, edge on ($1 = $2) project ($0, $3)'
need "tc --plan" 'b2 -> b2 [label=<next iteration>, color="#c0392b"'

draw "$root/programs/tpch/q01.lql" --ir
need "q01 --ir" '<B>FUSED</B>[3] q01 := lineitem'
need "q01 --ir" 'gather=reduce'
need "q01 --ir" '1. t1 := <B>MAP</B> lineitem'
need "q01 --ir" '2. t0 := <B>SORT</B> t1'
need "q01 --ir" '3. q01 := <B>AGG</B>[keys=2] t0'
need "q01 --ir" 'internal: t1 (1&#8594;2), t0 (2&#8594;3)'
grep -q "cluster_loop" "$tmp/last.dot" && { echo "FAIL: q01 has no loop, but one is drawn"; fail=1; }
"$redfox" explain --dot --ir --no-fuse "$root/programs/tpch/q01.lql" | grep -qF "FUSED" &&
  { echo "FAIL: --no-fuse still draws a fused group"; fail=1; }

draw "$root/programs/same_generation.lql" --ir
need "same_generation --ir" 'fixpoint loop stratum1.loop'
need "same_generation --ir" 'style="bold,dashed"'

# Escaping: a string constant with markup characters and a byte that is
# not UTF-8, in a filter and in the rule text of the comments.
printf 'p(x) -> string(x).\nq(x) -> string(x).\np("a").\nq(x) <- p(x), x != "<b>&\\"x\\" \xff".\n' >"$tmp/esc.lql"
for mode in --plan --ir; do
  draw "$tmp/esc.lql" "$mode" && need "escaping $mode" '&lt;b&gt;&amp;'
done

# -o FILE: the same text; a compile error or a bad path leaves the file as it was
"$redfox" explain --dot --ir "$root/programs/tc.lql" -o "$tmp/tc.dot" &&
  "$redfox" explain --dot --ir "$root/programs/tc.lql" | cmp -s - "$tmp/tc.dot" ||
  { echo "FAIL: -o FILE differs from stdout"; fail=1; }
"$redfox" explain --ir "$root/programs/tc.lql" -o "$tmp/tc.txt" && grep -q "^block 2 (stratum1.loop):" "$tmp/tc.txt" ||
  { echo "FAIL: explain --ir -o FILE"; fail=1; }
echo 'p(x) <- q(x' >"$tmp/bad.lql"
cp "$tmp/tc.dot" "$tmp/keep.dot"
"$redfox" explain --dot --plan "$tmp/bad.lql" -o "$tmp/tc.dot" 2>/dev/null && { echo "FAIL: a syntax error exits 0"; fail=1; }
cmp -s "$tmp/tc.dot" "$tmp/keep.dot" || { echo "FAIL: a failed explain changed the -o file"; fail=1; }
mkdir "$tmp/dir"
"$redfox" explain --dot --ir "$root/programs/tc.lql" -o "$tmp/dir" 2>"$tmp/err"; rc=$?
[ "$rc" = 2 ] && grep -q "is a directory" "$tmp/err" || { echo "FAIL: -o DIR: exit $rc: $(cat "$tmp/err")"; fail=1; }
[ -z "$(ls -A "$tmp/dir")" ] || { echo "FAIL: -o DIR left files"; fail=1; }
ls "$tmp" | grep -q "^\.\?tc.dot..*" && { echo "FAIL: temporary files left: $(ls -a "$tmp")"; fail=1; }
"$redfox" explain --dot --cuda "$root/programs/tc.lql" >/dev/null 2>&1; rc=$?
[ "$rc" = 64 ] || { echo "FAIL: --dot --cuda: exit $rc, not 64"; fail=1; }
"$redfox" explain --select-plans "$root/programs/tc.lql" -o "$tmp/x" >/dev/null 2>&1; rc=$?
[ "$rc" = 64 ] || { echo "FAIL: --select-plans -o: exit $rc, not 64"; fail=1; }
# a compiled program draws like its source
"$redfox" compile "$root/programs/tc.lql" -o "$tmp/tc.rfx" && draw "$tmp/tc.rfx" --ir &&
  need "tc.rfx --ir" '<B>FUSED</B>[2] path.new := path.delta.by1, edge'

[ "$fail" = 0 ] && echo ok
exit "$fail"
