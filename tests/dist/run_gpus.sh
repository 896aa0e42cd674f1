#!/usr/bin/env bash
# Several GPUs (issue 10, docs/distributed.md): `redfox run --gpus 2` (one
# process per GPU, the distribution layer over the GPU backend, rows moved
# device to device through NCCL) must answer exactly as one process does:
# the golden programs of run_dist.sh against their expected stdout, and
# random programs of both generators byte-identical to one process
# (dist_diff.py). Exits 77 (ctest: skipped) with a message on a machine
# with fewer than 2 GPUs or without the NCCL module.
# Usage: run_gpus.sh REDFOX
set -uo pipefail
redfox="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
tests="$(dirname "$here")"
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
if [ "${gpus:-0}" -lt 2 ]; then
  echo "skipped: $gpus CUDA devices here; --gpus 2 needs two"
  exit 77
fi
if [ ! -f "$(dirname "$redfox")/librf_comm_nccl.so" ]; then
  echo "skipped: redfox was built without NCCL (no librf_comm_nccl.so beside it)"
  exit 77
fi
export NCCL_NVLS_ENABLE=0
fail=0
golden=(aggregation bag_identities count_strings dates decimals equality_joins functional_ok
        if_and_logic input_override multi_aggregates negation_strings order_limit_top recursion
        string_conversions string_functions strings substr_compare total_exact weaver_shared_input
        tc same_generation four_cliques points_to even_odd
        division_by_zero fd_rule_violation fd_recursive_violation int_overflow_add missing_input
        bad_row tbl_bad_field)
python3 "$tests/golden/run_golden.py" --redfox "$redfox" --extra-arg=--gpus --extra-arg=2 "${golden[@]}" |
  tail -n 40 || fail=1
python3 "$here/dist_diff.py" --redfox "$redfox" --mpirun '' --dist-arg=--gpus --dist-arg=2 --count 12 --seed 31 ||
  fail=1
python3 "$here/dist_diff.py" --redfox "$redfox" --mpirun '' --dist-arg=--gpus --dist-arg=2 --lang biz --count 8 \
  --seed 31 || fail=1
# A fault on one rank in the middle of a loop, agreed on late and after
# every kernel: one process's message, byte for byte, and its exit.
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
"$redfox" run "$here/loop_fault.lql" --backend=gpu >/dev/null 2>"$work/one.err"
want_rc=$?
for agree in "" kernel; do
  RF_DIST_AGREE=$agree timeout 120 "$redfox" run "$here/loop_fault.lql" --gpus 2 >"$work/out" 2>"$work/err"
  rc=$?
  if ! { [ $rc = $want_rc ] && [ $rc = 2 ] && cmp -s "$work/one.err" "$work/err" && [ ! -s "$work/out" ]; }; then
    echo "FAIL: loop fault on 2 GPUs (RF_DIST_AGREE=$agree): exit $rc (one GPU $want_rc), $(cat "$work/err")"
    fail=1
  fi
done
# An answer held as a dense set on both ranks goes to rank 0 as bitmaps
# (backend_gpu.c move_set_as_bitmap): forced with every set a dense set,
# checked against one GPU's hash, and that the path ran.
python3 -c 'import random
r = random.Random(7)
for _ in range(3000): print(r.randrange(600), r.randrange(600), sep="\t")' >"$work/g.tsv"
RF_CUDA_DENSE=always python3 "$tests/golden/run_golden.py" --redfox "$redfox" --extra-arg=--gpus --extra-arg=2 \
  tc same_generation recursion even_odd points_to | tail -n 8 || fail=1
for prog in tc same_generation; do
  want=$("$redfox" run "$tests/../programs/$prog.lql" --input edge="$work/g.tsv" --count --backend=gpu 2>/dev/null |
         grep -o 'hash [0-9a-f]*')
  got=$(RF_CUDA_DENSE=always "$redfox" run "$tests/../programs/$prog.lql" --input edge="$work/g.tsv" --count \
        --stats --gpus 2 2>"$work/err" | grep -o 'hash [0-9a-f]*')
  if [ -z "$want" ] || [ "$want" != "$got" ] || ! grep -q '[1-9][0-9]* gathered to rank 0 as bitmaps' "$work/err"; then
    echo "FAIL: $prog gathered as bitmaps on 2 GPUs: '$got' against one GPU's '$want'"
    grep 'dense sets' "$work/err"
    fail=1
  fi
done

# A set gathered to rank 0 too large to merge there stays as one run a rank
# (backend_gpu.c, kept_as_runs; forced by RF_TEST_GPU_GATHER_RUNS=1), on as
# many GPUs as are here up to four: counted (the runs hashed merged, and a
# key range at a time with RF_TEST_GPU_RUNS_APART) and written, against one
# GPU's answer, and that the path ran.
n=$(( gpus < 4 ? gpus : 4 ))
for prog in tc same_generation; do
  want=$("$redfox" run "$tests/../programs/$prog.lql" --input edge="$work/g.tsv" --count --backend=gpu 2>/dev/null)
  rm -rf "$work/gr_one" "$work/gr_runs"
  "$redfox" run "$tests/../programs/$prog.lql" --input edge="$work/g.tsv" --output "$work/gr_one" --backend=gpu \
    >/dev/null 2>&1
  for apart in no 1000; do
    e=(RF_TEST_GPU_GATHER_RUNS=1 RF_DIST_SET_BITMAPS=0)
    [ $apart = no ] || e+=(RF_TEST_GPU_RUNS_APART=$apart)
    got=$(env "${e[@]}" timeout 120 "$redfox" run \
          "$tests/../programs/$prog.lql" --input edge="$work/g.tsv" --count --stats --gpus $n 2>"$work/err")
    if [ -z "$want" ] || [ "$want" != "$got" ] || ! grep -q '[1-9][0-9]* sets gathered to rank 0 kept as runs' "$work/err"; then
      echo "FAIL: $prog gathered as runs on $n GPUs (RF_TEST_GPU_RUNS_APART=$apart): '$got' against one GPU's '$want'"
      grep -E 'runs \(|error' "$work/err"
      fail=1
    fi
  done
  RF_TEST_GPU_GATHER_RUNS=1 RF_DIST_SET_BITMAPS=0 timeout 120 "$redfox" run "$tests/../programs/$prog.lql" \
    --input edge="$work/g.tsv" --output "$work/gr_runs" --gpus $n >/dev/null 2>"$work/err"
  if ! diff -r "$work/gr_one" "$work/gr_runs" >/dev/null; then
    echo "FAIL: $prog gathered as runs on $n GPUs, written: not one GPU's files; $(head -2 "$work/err")"
    fail=1
  fi
done

# --output-per-rank on two GPUs: each rank downloads and writes its own rows
# (DIR/PRED.part-K-of-2.tsv); their union is one GPU's output.
for prog in "$tests/../programs/tc.lql" "$here/fold.lql"; do
  in=()
  [ "$(basename "$prog")" = tc.lql ] && in=(--input edge="$work/g.tsv")
  rm -rf "$work/pr_one" "$work/pr_parts"
  "$redfox" run "$prog" "${in[@]}" --output "$work/pr_one" --backend=gpu >/dev/null 2>&1
  timeout 120 "$redfox" run "$prog" "${in[@]}" --output "$work/pr_parts" --output-per-rank --gpus 2 \
    >/dev/null 2>"$work/err" || { echo "FAIL: $(basename "$prog") --output-per-rank on 2 GPUs: $(head -2 "$work/err")"; fail=1; }
  for f in "$work/pr_one"/*.tsv; do
    b=$(basename "$f" .tsv)
    if ! cmp -s <(sort "$f") <(cat "$work/pr_parts/$b".part-*-of-2.tsv 2>/dev/null | sort); then
      echo "FAIL: $(basename "$prog") --output-per-rank on 2 GPUs: the parts of $b are not one GPU's rows"
      fail=1
    fi
  done
done
# Aggregates folded per rank, keyless and by group, some falling back
# (tests/dist/fold.lql): by default (by group where a key is a string) and
# every grouped one tried (RF_DIST_FOLD_KEYED=all).
"$redfox" run "$here/fold.lql" --backend=gpu >"$work/one.out" 2>"$work/one.err"
for keyed in "" all; do
  RF_DIST_FOLD_KEYED=$keyed timeout 120 "$redfox" run "$here/fold.lql" --stats --gpus 2 >"$work/out" 2>"$work/err"
  rc=$?
  if ! { [ $rc = 0 ] && cmp -s "$work/one.out" "$work/out" && grep -q "[1-9][0-9]* keyless aggregates folded" "$work/err" &&
         grep -q "[1-9][0-9]* aggregates with keys folded" "$work/err"; }; then
    echo "FAIL: aggregates folded on 2 GPUs (RF_DIST_FOLD_KEYED=$keyed): exit $rc, $(diff "$work/one.out" "$work/out" | head -5)"
    fail=1
  fi
done
# Multiway joins on two GPUs: random cyclic programs and their counting
# variants against one GPU, and triangles over one relation (its first
# input's parts beside a copy sent everywhere; the ranks' counts summed over
# NCCL), listing and counting, as chosen and forced.
python3 "$here/wcoj_dist.py" --redfox "$redfox" --mpirun '' --dist-arg=--gpus --dist-arg=2 --backend gpu \
  --count 4 --seed 33 || fail=1
grep -v '^@output(triangle)' "$tests/../programs/triangles.lql" >"$work/tri_count.lql"
for prog in "$tests/../programs/triangles.lql" "$work/tri_count.lql"; do
  for join in wcoj auto; do
    "$redfox" run "$prog" --input edge="$tests/../programs/data/clique_sample.tsv" --join=$join --count \
      --backend=gpu >"$work/one.out" 2>/dev/null
    timeout 120 "$redfox" run "$prog" --input edge="$tests/../programs/data/clique_sample.tsv" --join=$join --count \
      --stats --gpus 2 >"$work/out" 2>"$work/err"
    rc=$?
    if ! { [ $rc = 0 ] && cmp -s "$work/one.out" "$work/out" && grep -q 'tuples, hash' "$work/out" &&
           grep -q "[1-9][0-9]* multiway joins over their first input's parts" "$work/err"; }; then
      echo "FAIL: $(basename "$prog") (--join=$join) on 2 GPUs: exit $rc, $(cat "$work/out"), one GPU: $(cat "$work/one.out")"
      grep distributed "$work/err"
      fail=1
    fi
  done
done
# Input files read in shares (the default on GPUs: each rank parses a share
# of the lines, the rows moved device to device where they are hashed): tc
# on a graph file, one GPU's hash, and that the share was read.
python3 -c 'for c in range(20000):
    for k in range(9): print(c * 10 + k, c * 10 + k + 1, sep="\t")' >"$work/g.tsv"
"$redfox" run "$tests/../programs/tc.lql" --input edge="$work/g.tsv" --count --backend=gpu >"$work/one" 2>/dev/null
"$redfox" run "$tests/../programs/tc.lql" --input edge="$work/g.tsv" --count --stats --gpus 2 >"$work/out" 2>"$work/err"
n=$(grep -oE '[0-9]+ input files read in shares' "$work/err" | cut -d' ' -f1)
{ [ "$(grep '^#' "$work/out")" = "$(grep '^#' "$work/one")" ] && [ "${n:-0}" = 1 ]; } ||
  { echo "FAIL: tc in shares on 2 GPUs: $(grep '^#' "$work/out") against $(grep '^#' "$work/one"), ${n:-0} shares"
    fail=1; }
# Row positions a fused group run whole projects, shifted apart per rank on
# the device (gpu_add_to_columns; tests/dist/bag_positions.lql: without the
# shift its rows collapse when they move), and the positions a MAP numbers.
python3 -c 'for c in range(1000): print(c, 1, sep="\t")' >"$work/c.tsv"
python3 -c 'for c in range(1000): print(0, c, 0, sep="\t")' >"$work/o.tsv"
printf '0\t5\n' >"$work/l.tsv"
RF_DIST_REPLICATE_ROWS=0 "$redfox" run "$here/bag_positions.lql" --input c="$work/c.tsv" --input o="$work/o.tsv" \
  --input l="$work/l.tsv" --stats --gpus 2 >"$work/out" 2>"$work/err"
n=$(grep -oE '[0-9]+ fused groups run whole' "$work/err" | cut -d' ' -f1)
{ [ "$(grep -v '^#' "$work/out")" = "$(printf '0\t1000')" ] && [ "${n:-0}" -ge 1 ]; } ||
  { echo "FAIL: bag_positions.lql on 2 GPUs: $(grep -v '^#' "$work/out") (want 0 1000), ${n:-0} groups run whole," \
      "$(grep -m1 error "$work/err")"; fail=1; }
# Groups keyed on columns their input is not hashed on (fused_keys.lql):
# the input moved hashed on those columns device to device (the rank
# split's listed columns), every group whole, one GPU's answer.
python3 "$here/fused_keys_data.py" "$work"
fk=(--input r="$work/r.tsv" --input big="$work/big.tsv" --input small="$work/small.tsv")
"$redfox" run "$here/fused_keys.lql" "${fk[@]}" --backend=gpu >"$work/one" 2>/dev/null
RF_DIST_TRACE=1 timeout 120 "$redfox" run "$here/fused_keys.lql" "${fk[@]}" --stats --gpus 2 >"$work/out" 2>"$work/err"
n=$(grep -oE '[0-9]+ fused groups run whole' "$work/err" | cut -d' ' -f1)
listed=$(grep -cE 'rank 0 moved .* hashed on column [12] \(device to device' "$work/err")
{ cmp -s "$work/one" "$work/out" && [ "${n:-0}" = 3 ] && [ "$listed" -ge 1 ]; } ||
  { echo "FAIL: fused_keys.lql on 2 GPUs: ${n:-0} groups run whole (want 3), $listed listed moves on the device;" \
      "$(diff "$work/one" "$work/out" | head -3) $(grep -m1 error "$work/err")"; fail=1; }
# TPC-H SF 0.01 on two GPUs, where its data and DuckDB's answers are here
# (tools/device_prepare.sh carries .data/tpch).
if [ -f "$tests/../.data/tpch/sf0.01/lineitem.tbl" ] && [ -f "$tests/../.data/tpch/ref-sf0.01/q01.tsv" ]; then
  bash "$tests/tpch/run_tpch.sh" "$redfox" 0.01 --backend gpu --run-arg=--gpus --run-arg=2 >"$work/tpch.txt" 2>&1 ||
    { echo "FAIL: TPC-H SF 0.01 on 2 GPUs: $(tail -1 "$work/tpch.txt")"; fail=1; }
  tail -1 "$work/tpch.txt"
fi

if [ $fail = 0 ]; then echo "--gpus 2: all passed"; fi
exit $fail
