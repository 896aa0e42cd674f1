#!/usr/bin/env bash
# Distributed runs (issue 10, docs/distributed.md): `mpirun -np 3 redfox run`
# over the CPU backend must answer exactly as one process does:
#   - golden programs (tests/golden: recursion, aggregates, negation,
#     strings, dates/decimals, @order/@limit, functional dependencies,
#     cliques through multiway joins ...) against their expected stdout,
#     and run-time errors (exit 2, the message once);
#   - random programs of both generators, byte-identical output files
#     (dist_diff.py), and random cyclic programs with multiway joins (wcoj_dist.py);
#   - the command line: --stats names the ranks, rank 0 alone writes,
#     --distribute as one rank, refused options.
# Exits 77 (ctest: skipped) with a message where mpirun or the MPI module
# is missing. RF_DIST_QUICK=1: a smaller selection (the sanitizer build).
# Usage: run_dist.sh REDFOX
set -uo pipefail
redfox="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
tests="$(dirname "$here")"
source "$here/mpi_ready.sh"
fail=0
note() { echo "FAIL: $*"; fail=1; }

golden=(aggregation bag_identities count_strings dates decimals equality_joins functional_ok
        if_and_logic input_override multi_aggregates negation_strings order_limit_top recursion
        string_conversions string_functions host_string_functions strings substr_compare total_exact
        count_facts_and_file weaver_shared_input
        tc same_generation four_cliques points_to even_odd
        division_by_zero fd_rule_violation fd_recursive_violation int_overflow_add missing_input
        syntax_error_once not_text bad_row tbl_bad_field)
classic=12 biz=8
if [ "${RF_DIST_QUICK:-0}" = 1 ]; then   # the sanitizer build: fewer, slower runs
  golden=(aggregation strings functional_ok tc four_cliques division_by_zero fd_rule_violation)
  classic=4 biz=3
fi
python3 "$tests/golden/run_golden.py" --redfox "$mpi $redfox" "${golden[@]}" | tail -n 40 || fail=1

python3 "$here/dist_diff.py" --redfox "$redfox" --mpirun "$mpi" --count $classic --seed 21 || fail=1
python3 "$here/dist_diff.py" --redfox "$redfox" --mpirun "$mpi" --lang biz --count $biz --seed 21 || fail=1
# The same generators written per rank (--output-per-rank): each output's
# three parts together are one process's file.
python3 "$here/dist_diff.py" --redfox "$redfox" --mpirun "$mpi" --count $((classic / 2)) --seed 27 --per-rank 3 ||
  fail=1
python3 "$here/dist_diff.py" --redfox "$redfox" --mpirun "$mpi" --lang biz --count $((biz / 2)) --seed 27 \
  --per-rank 3 || fail=1
# Random cyclic programs with multiway joins, listing and counting.
python3 "$here/wcoj_dist.py" --redfox "$redfox" --mpirun "$mpi" --count $((classic / 2)) --seed 31 || fail=1
# Joins hash both sides alike instead of replicating the smaller one (the
# default for relations of up to 4M rows, so every join above replicates).
RF_DIST_REPLICATE_ROWS=0 python3 "$here/dist_diff.py" --redfox "$redfox" --mpirun "$mpi" --count 4 --seed 23 || fail=1
RF_DIST_REPLICATE_ROWS=0 python3 "$here/dist_diff.py" --redfox "$redfox" --mpirun "$mpi" --lang biz --count 3 --seed 23 ||
  fail=1

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$tests/../programs"
# --stats: the backend line names the ranks; rank 0 alone prints.
$mpi "$redfox" run tc.lql --count --stats >"$work/out" 2>"$work/err" || note "tc --stats exited $?"
grep -q "distributed: 3 ranks over mpi" "$work/err" || note "--stats does not name the ranks: $(head -3 "$work/err")"
[ "$(grep -c '^# ' "$work/out")" = "$("$redfox" run tc.lql --count | grep -c '^# ')" ] ||
  note "--count lines printed more than once: $(cat "$work/out")"
# Same generation's step t1.by1 is read only by the next set gather: it
# stays on the ranks that made it (repeated rows and all) instead of moving
# to be deduplicated, and the answer is one process's; RF_DIST_SETS_STAY=0
# moves it as before.
one="$("$redfox" run same_generation.lql --count)"
$mpi "$redfox" run same_generation.lql --count --stats >"$work/out" 2>"$work/err" || note "sg --stats exited $?"
grep -q "sets left where they were made" "$work/err" || note "sg: no set left in place: $(grep distributed "$work/err")"
[ "$(cat "$work/out")" = "$one" ] || note "sg with sets left in place: $(cat "$work/out"), one process: $one"
RF_DIST_SETS_STAY=0 $mpi "$redfox" run same_generation.lql --count --stats >"$work/out" 2>"$work/err" ||
  note "sg RF_DIST_SETS_STAY=0 exited $?"
! grep -q "sets left where" "$work/err" || note "RF_DIST_SETS_STAY=0 left sets in place"
[ "$(cat "$work/out")" = "$one" ] || note "sg with sets moved: $(cat "$work/out"), one process: $one"
# --join=auto's statistic counted on each rank and summed (dist_join_size),
# with both sides replicated and one side replicated (tests/dist/join_size.lql;
# wcoj_dist.py above checks the other placements): one process's counts.
python3 -c 'import random
r = random.Random(5)
for _ in range(4000): print(r.randrange(300), r.randrange(300), sep="\t")' >"$work/js.tsv"
"$redfox" run "$here/join_size.lql" --input edge="$work/js.tsv" --count --stats >"$work/one" 2>"$work/one.err"
$mpi "$redfox" run "$here/join_size.lql" --input edge="$work/js.tsv" --count --stats >"$work/out" 2>"$work/err" ||
  note "join_size.lql exited $?"
want=$(grep -o "binary plan's first join [0-9]* rows" "$work/one.err")
got=$(grep -o "binary plan's first join [0-9]* rows" "$work/err")
{ [ "$(echo "$want" | grep -c rows)" = 2 ] && [ "$want" = "$got" ] && cmp -s "$work/one" "$work/out" &&
  grep -q '2 join sizes for --join=auto counted on each rank' "$work/err"; } ||
  note "join sizes under the launcher: '$got' against one process's '$want'; $(grep 'join sizes' "$work/err")"
# Strings hash and move as dictionary ids where no kernel makes strings
# (strings.lql), as text where one does (string_functions.lql); the string
# goldens again with text always (RF_DIST_STRING_IDS=0); and ranks whose
# dictionaries differ stop with an internal error (RF_TEST_DIST_STRING_SKEW).
cases="$tests/golden/cases"
for p in strings:1 string_functions:0; do
  n=$($mpi "$redfox" run "$cases/${p%%:*}.lql" --stats 2>&1 >/dev/null | grep -c 'strings hashed and moved as dictionary ids')
  [ "$n" = "${p#*:}" ] || note "${p%%:*}.lql: strings moved as ids $n times, want ${p#*:}"
done
RF_DIST_STRING_IDS=0 python3 "$tests/golden/run_golden.py" --redfox "$mpi $redfox" strings count_strings \
  negation_strings string_conversions | tail -n 3 || fail=1
RF_TEST_DIST_STRING_SKEW=1 timeout 60 $mpi "$redfox" run "$cases/strings.lql" >"$work/out" 2>"$work/err"
rc=$?
[ $rc = 2 ] && grep -q "string dictionaries differ" "$work/err" ||
  note "dictionaries that differ: exit $rc, $(head -2 "$work/err")"
# Fused groups run whole on each rank where no internal variable would
# move (equality_joins.lql: five of six), as their members with
# RF_DIST_FUSED_WHOLE=0; one process's output both ways.
"$redfox" run "$cases/equality_joins.lql" >"$work/one" 2>/dev/null
for whole in "" 0; do
  RF_DIST_FUSED_WHOLE=$whole $mpi "$redfox" run "$cases/equality_joins.lql" --stats >"$work/out" 2>"$work/err" ||
    note "equality_joins.lql (RF_DIST_FUSED_WHOLE=$whole) exited $?"
  n=$(grep -oE '[0-9]+ fused groups run whole' "$work/err" | cut -d' ' -f1)
  want=1
  [ "$whole" = 0 ] && want=0
  { cmp -s "$work/one" "$work/out" && [ "$(( ${n:-0} > 0 ))" = $want ]; } ||
    note "equality_joins.lql (RF_DIST_FUSED_WHOLE=$whole): ${n:-0} groups run whole; $(diff "$work/one" "$work/out" | head -3)"
done
# ... and the row positions such a group projects shifted apart per rank
# (bag_positions.lql: without the shift its rows collapse when they move).
python3 -c 'for c in range(1000): print(c, 1, sep="\t")' >"$work/c.tsv"
python3 -c 'for c in range(1000): print(0, c, 0, sep="\t")' >"$work/o.tsv"
printf '0\t5\n' >"$work/l.tsv"
bp=(--input c="$work/c.tsv" --input o="$work/o.tsv" --input l="$work/l.tsv")
RF_DIST_REPLICATE_ROWS=0 $mpi "$redfox" run "$here/bag_positions.lql" "${bp[@]}" --stats >"$work/out" 2>"$work/err"
n=$(grep -oE '[0-9]+ fused groups run whole' "$work/err" | cut -d' ' -f1)
{ [ "$(grep -v '^#' "$work/out")" = "$(printf '0\t1000')" ] && [ "${n:-0}" -ge 1 ]; } ||
  note "bag_positions.lql: $(grep -v '^#' "$work/out") (want 0 1000), ${n:-0} groups run whole"
# Groups whose AGG keys on columns their input is not hashed on
# (fused_keys.lql): the input moves hashed on those columns (a listed
# hash), and every group runs whole; one process's answer, also as members.
python3 "$here/fused_keys_data.py" "$work"
fk=(--input r="$work/r.tsv" --input big="$work/big.tsv" --input small="$work/small.tsv")
"$redfox" run "$here/fused_keys.lql" "${fk[@]}" >"$work/one" 2>/dev/null
for whole in "" 0; do
  RF_DIST_INPUT_SHARES=1 RF_DIST_FUSED_WHOLE=$whole RF_DIST_TRACE=1 $mpi "$redfox" run "$here/fused_keys.lql" "${fk[@]}" \
    --stats >"$work/out" 2>"$work/err" || note "fused_keys.lql (RF_DIST_FUSED_WHOLE=$whole) exited $?"
  n=$(grep -oE '[0-9]+ fused groups run whole' "$work/err" | cut -d' ' -f1)
  want=3
  [ "$whole" = 0 ] && want=0
  listed=$(grep -cE 'rank 0 moved .* hashed on column [12] ' "$work/err")
  { cmp -s "$work/one" "$work/out" && [ "${n:-0}" = $want ] && { [ "$whole" = 0 ] || [ "$listed" = 2 ]; }; } ||
    note "fused_keys.lql (RF_DIST_FUSED_WHOLE=$whole): ${n:-0} groups run whole (want $want), $listed listed moves; $(diff "$work/one" "$work/out" | head -3)"
done
# Input files read in shares (each rank parses a share of the lines; the
# rows go where they are hashed; on the CPU only with
# RF_DIST_INPUT_SHARES=1): tc's answer on a file of 3000 lines, one of
# fewer lines than ranks, one without a final newline, against one
# process, and that shares were read (by default here: not); bad rows in a
# later share, and in two shares: one process's message and exit, byte for
# byte (the first in file order, its line the file's).
python3 -c 'import random; random.seed(5)
for i in range(3000): print(random.randrange(400), random.randrange(400), sep="\t")' >"$work/e.tsv"
printf '1\t2\n2\t3\n' >"$work/short.tsv"
printf '1\t2\n2\t3\n3\t4\n4\t1' >"$work/nonl.tsv"
for f in e short nonl; do
  "$redfox" run tc.lql --input edge="$work/$f.tsv" --count >"$work/one" 2>&1
  for s in 1 ""; do
    RF_DIST_INPUT_SHARES=$s $mpi "$redfox" run tc.lql --input edge="$work/$f.tsv" --count --stats >"$work/out" \
      2>"$work/err" || note "tc on $f.tsv (RF_DIST_INPUT_SHARES=$s) exited $?"
    n=$(grep -oE '[0-9]+ input files read in shares' "$work/err" | cut -d' ' -f1)
    want=0
    [ "$s" = 1 ] && want=1
    { [ "$(grep '^#' "$work/out")" = "$(grep '^#' "$work/one")" ] && [ "${n:-0}" = $want ]; } ||
      note "tc on $f.tsv (RF_DIST_INPUT_SHARES=$s): $(grep '^#' "$work/out") against $(grep '^#' "$work/one"), ${n:-0} shares"
  done
done
awk 'NR==2500 {print "x\t1"; next} {print}' "$work/e.tsv" >"$work/bad1.tsv"
awk 'NR==1700 || NR==2900 {print "7\t1\t3"; next} {print}' "$work/e.tsv" >"$work/bad2.tsv"
for f in bad1 bad2; do
  "$redfox" run tc.lql --input edge="$work/$f.tsv" --count >"$work/one" 2>"$work/one.err"
  want_rc=$?
  RF_DIST_INPUT_SHARES=1 timeout 60 $mpi "$redfox" run tc.lql --input edge="$work/$f.tsv" --count >"$work/out" \
    2>"$work/err"
  rc=$?
  { [ $rc = $want_rc ] && [ $rc != 0 ] && cmp -s "$work/one.err" "$work/err" && [ ! -s "$work/out" ]; } ||
    note "$f.tsv in shares: exit $rc (one process $want_rc), $(head -c 300 "$work/err") against $(head -c 300 "$work/one.err")"
done
# RF_DIST_TRACE=1: a line a relation moved (tc replicates its edges).
RF_DIST_TRACE=1 $mpi "$redfox" run tc.lql --count >"$work/out" 2>"$work/err" || note "tc RF_DIST_TRACE=1 exited $?"
grep -q '^redfox: rank 0 moved edge everywhere (through host memory): sent [0-9]* rows' "$work/err" ||
  note "RF_DIST_TRACE=1 names no move: $(head -3 "$work/err")"
# --output: the files once, equal to one process's.
$mpi "$redfox" run tc.lql --output "$work/d" >/dev/null 2>&1 || note "tc --output exited $?"
"$redfox" run tc.lql --output "$work/s" >/dev/null 2>&1
diff -r "$work/s" "$work/d" >/dev/null || note "--output files differ from one process's"
# Rank 0 failing alone (its output folder cannot be made): exit 2, once.
timeout 60 $mpi "$redfox" run tc.lql --output /proc/no/such/dir >/dev/null 2>"$work/err"
rc=$?
[ $rc = 2 ] && [ "$(grep -c 'error:' "$work/err")" = 1 ] || note "unwritable --output: exit $rc, $(cat "$work/err")"
# A fault on one rank in the middle of a loop: the ranks agree on it late
# (at the loop's count), and the run ends with one process's message, exit
# and no output; RF_DIST_AGREE=kernel agrees after every kernel instead.
"$redfox" run "$here/loop_fault.lql" >"$work/one.out" 2>"$work/one.err"
want_rc=$?
for agree in "" kernel; do
  RF_DIST_AGREE=$agree timeout 60 $mpi "$redfox" run "$here/loop_fault.lql" >"$work/out" 2>"$work/err"
  rc=$?
  [ $rc = $want_rc ] && [ $rc = 2 ] && cmp -s "$work/one.err" "$work/err" && [ ! -s "$work/out" ] ||
    note "loop fault (RF_DIST_AGREE=$agree): exit $rc (one process $want_rc), $(cat "$work/err")"
done
# Aggregates folded per rank, keyless and by group, some falling back
# (fold.lql): as by default (by group where a key is a string), every
# grouped one tried (RF_DIST_FOLD_KEYED=all), and that with at most 3
# partial rows folded by group, so that most decline and run as before.
"$redfox" run "$here/fold.lql" >"$work/one.out" 2>&1
for mode in default:: all:all: all3:all:3; do
  keyed=${mode#*:}; keyed_rows=${keyed#*:}; keyed=${keyed%%:*}
  RF_DIST_FOLD_KEYED=$keyed RF_DIST_FOLD_KEYED_ROWS=$keyed_rows timeout 60 $mpi "$redfox" run "$here/fold.lql" \
    --stats >"$work/out" 2>"$work/err"
  rc=$?
  [ $rc = 0 ] && cmp -s "$work/one.out" "$work/out" && grep -q "[1-9][0-9]* keyless aggregates folded" "$work/err" &&
    if [ -z "$keyed_rows" ]; then grep -q "[1-9][0-9]* aggregates with keys folded" "$work/err"
    else grep -q "([1-9][0-9]* not: more than 3 partial rows" "$work/err"; fi ||
    note "aggregates folded (${mode%%:*}): exit $rc, $(diff "$work/one.out" "$work/out" | head -5)" \
      "$(grep distributed "$work/err")"
done
# Multiway joins over one relation (triangles): its first input's parts
# beside a copy sent everywhere (each rank its share; RF_DIST_MULTIJOIN_COPY=0:
# the relation everywhere, every rank the whole answer), listing and
# counting (triangles.lql with the listing no output: MULTIJOIN[..., count],
# the ranks' counts summed), as chosen and forced.
grep -v '^@output(triangle)' triangles.lql >"$work/tri_count.lql"
for prog in triangles.lql "$work/tri_count.lql"; do
  for join in wcoj auto; do
    "$redfox" run "$prog" --input edge=data/clique_sample.tsv --join=$join --count >"$work/one.out" 2>&1
    for copy in "" 0; do
      RF_DIST_MULTIJOIN_COPY=$copy timeout 60 $mpi "$redfox" run "$prog" --input edge=data/clique_sample.tsv \
        --join=$join --count --stats >"$work/out" 2>"$work/err" ||
        note "$(basename "$prog") (--join=$join) exited $?: $(head -2 "$work/err")"
      cmp -s "$work/one.out" "$work/out" && grep -q 'tuples, hash' "$work/out" ||
        note "$(basename "$prog") (--join=$join): $(cat "$work/out"), one process: $(cat "$work/one.out")"
      if [ -z "$copy" ]; then
        grep -q "[1-9][0-9]* multiway joins over their first input's parts" "$work/err" ||
          note "$(basename "$prog") (--join=$join): no multiway join over its first input's parts"
      fi
    done
  done
done
# --output-per-rank: every rank writes its own rows, DIR/PRED.part-K-of-3.tsv,
# nothing gathered; the parts' union is one process's output (split outputs,
# aggregates held on every rank, strings); every part or none (one rank's
# write failing: RF_TEST_PART_FAIL); an output with @limit refused.
for prog in tc.lql same_generation.lql "$here/fold.lql" "$tests/golden/cases/strings.lql"; do
  rm -rf "$work/pr_one" "$work/pr_parts"
  "$redfox" run "$prog" --output "$work/pr_one" >/dev/null 2>&1 || note "$(basename "$prog"): one process exited $?"
  timeout 60 $mpi "$redfox" run "$prog" --output "$work/pr_parts" --output-per-rank --stats 2>"$work/err" ||
    note "$(basename "$prog") --output-per-rank exited $?: $(head -2 "$work/err")"
  grep -q 'outputs written per rank, none gathered' "$work/err" ||
    note "$(basename "$prog") --output-per-rank: --stats does not say so"
  for f in "$work/pr_one"/*.tsv; do
    b=$(basename "$f" .tsv)
    [ "$(ls "$work/pr_parts/$b".part-*-of-3.tsv 2>/dev/null | wc -l)" = 3 ] ||
      note "$(basename "$prog") --output-per-rank: not 3 parts of $b"
    cmp -s <(sort "$f") <(cat "$work/pr_parts/$b".part-*-of-3.tsv | sort) ||
      note "$(basename "$prog") --output-per-rank: the parts of $b are not one process's rows"
  done
done
rm -rf "$work/pr_parts"
RF_TEST_PART_FAIL=2 timeout 60 $mpi "$redfox" run tc.lql --output "$work/pr_parts" --output-per-rank >/dev/null 2>"$work/err"
rc=$?
[ $rc = 2 ] && [ ! -e "$work/pr_parts" ] && grep -q 'another rank could not write its part' "$work/err" ||
  note "one rank's part failing: exit $rc, $(ls "$work/pr_parts" 2>&1 | head -3), $(head -1 "$work/err")"
timeout 60 $mpi "$redfox" run "$tests/golden/cases/order_limit_top.lql" --output "$work/pr_parts" --output-per-rank \
  >/dev/null 2>"$work/err"
rc=$?
[ $rc = 64 ] && [ ! -e "$work/pr_parts" ] && grep -q 'has a @limit' "$work/err" ||
  note "--output-per-rank with a @limit: exit $rc, $(head -1 "$work/err")"
rm -rf "$work/pr_one" "$work/pr_parts"
# --distribute without a launcher: one rank, the same answers.
"$redfox" run tc.lql --distribute --count >"$work/one" 2>&1 || note "--distribute alone exited $?"
"$redfox" run tc.lql --count >"$work/plain" 2>&1
cmp -s "$work/one" "$work/plain" || note "--distribute (one rank) differs: $(cat "$work/one")"
# Refused clearly, by every rank alike (exit 64, no hang).
timeout 60 $mpi "$redfox" run tc.lql --backend=gpu >/dev/null 2>"$work/err"
rc=$?
[ $rc = 64 ] && grep -q "distributed runs over MPI use the CPU backend" "$work/err" ||
  note "--backend=gpu distributed: exit $rc, $(head -2 "$work/err")"
timeout 60 $mpi "$redfox" run tc.lql --profile "$work/t.json" >/dev/null 2>"$work/err"
rc=$?
[ $rc = 64 ] && [ ! -e "$work/t.json" ] || note "--profile distributed: exit $rc"
timeout 60 $mpi "$redfox" run tc.lql --progress >/dev/null 2>&1
rc=$?
[ $rc = 64 ] || note "--progress distributed: exit $rc"
# --output-per-rank without --output, and outside a distributed run.
timeout 60 $mpi "$redfox" run tc.lql --output-per-rank >/dev/null 2>"$work/err"
rc=$?
[ $rc = 64 ] && grep -q "output-per-rank writes each rank's rows .* it needs --output DIR" "$work/err" ||
  note "--output-per-rank without --output: exit $rc, $(head -1 "$work/err")"
"$redfox" run tc.lql --output "$work/pr_alone" --output-per-rank >/dev/null 2>"$work/err"
rc=$?
[ $rc = 64 ] && [ ! -e "$work/pr_alone" ] && grep -q "output-per-rank is for distributed runs" "$work/err" ||
  note "--output-per-rank in one process: exit $rc, $(head -1 "$work/err")"

if [ $fail = 0 ]; then echo "distributed runs: all passed"; fi
exit $fail
