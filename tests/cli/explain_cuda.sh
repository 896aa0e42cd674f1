#!/usr/bin/env bash
# `redfox explain --cuda`: each fused kernel's generated CUDA, without a GPU.
# q01 fuses its scan, sort and aggregate into one group; tc's loop has one
# group, its JOIN and the SORT after it (a set gather: library kernels).
# A build without the GPU backend (the sanitizer build) must say so.
set -u
redfox="$1"; root="$(cd "$(dirname "$0")/../.." && pwd)"
out="$("$redfox" explain --cuda "$root/programs/tpch/q01.lql" 2>&1)"; rc=$?
if grep -q "built without the GPU backend" <<<"$out"; then
  [ "$rc" = 2 ] || { echo "FAIL: exit $rc without the GPU backend"; exit 1; }
  echo "ok (built without the GPU backend)"; exit 0
fi
fail=0
[ "$rc" = 0 ] || { echo "FAIL: exit $rc"; fail=1; }
for want in "// FUSED[3] -> q01: MAP -> SORT -> AGG" "reducing gather" "stage_filter" "stage_proj6" \
            "rf_reduce(RfCols l" "red_flush"; do
  grep -qF "$want" <<<"$out" || { echo "FAIL: q01 lacks: $want"; fail=1; }
done
grep -q "rf_scalar_binary\|#define RF_EX_CONST" <<<"$out" && { echo "FAIL: the prelude is printed"; fail=1; }
tc="$("$redfox" explain --cuda "$root/programs/tc.lql" 2>&1)"
[ "$(grep -c '^// FUSED' <<<"$tc")" = 1 ] && grep -qF "// ==== block 2 (stratum1.loop), kernel 2 ====" <<<"$tc" &&
  grep -qF "// FUSED[2] -> path.new: JOIN -> SORT" <<<"$tc" && grep -qF "rf_cuda_join_to_set" <<<"$tc" &&
  grep -qF "No generated code" <<<"$tc" || { echo "FAIL: tc: $tc"; fail=1; }
# explain --ir shows the group inside the loop's block, its members and gather
ir="$("$redfox" explain --ir "$root/programs/tc.lql" 2>&1)"
loop="$(sed -n '/^block 2 (stratum1.loop):/,/^block 3/p' <<<"$ir")"
grep -qF "  path.new := FUSED[2] path.delta.by1, edge  partition=key-range gather=set" <<<"$loop" &&
  grep -qF "  |  t2 := JOIN[keys=1] path.delta.by1, edge" <<<"$loop" &&
  grep -qF "  |  path.new := SORT t2" <<<"$loop" &&
  grep -qF "  | gather=set: t2's rows go into a dense set (path.new: sorted, distinct)" <<<"$loop" &&
  grep -qF "  | internal: t2 (0->1 kernel)" <<<"$loop" || { echo "FAIL: explain --ir tc: $loop"; fail=1; }
tcu="$("$redfox" explain --cuda --no-fuse "$root/programs/tc.lql" 2>&1)"
[ "$tcu" = "// no fused kernels (every kernel runs on its own)" ] || { echo "FAIL: tc --no-fuse: $tcu"; fail=1; }
nf="$("$redfox" explain --cuda --no-fuse "$root/programs/tpch/q01.lql" 2>&1)"
[ "$nf" = "// no fused kernels (every kernel runs on its own)" ] || { echo "FAIL: --no-fuse: $nf"; fail=1; }
# Kernel Weaver patterns (a) and (d): a chain across strata is one composed
# MAP (rf_select); a group of two outputs reads its input once
# (rf_select_many).
cases="$root/tests/golden/cases"
a="$("$redfox" explain --cuda "$cases/weaver_selects.lql" 2>&1)"
grep -qF "// FUSED[3] -> sel3: MAP -> MAP -> MAP" <<<"$a" && grep -qF "members 0..2: one MAP, their code" <<<"$a" &&
  grep -qF "rf_select(RfCols l" <<<"$a" ||
  { echo "FAIL: pattern a: $a"; fail=1; }
# Select planning (docs/weaver.md s. 5): without data the plan shown is the
# unchanged filter's order; RF_WEAVE_SELPLAN forces one, emitted as it says
# (2 & 0 one branch-free group, then 1 under a branch; | a second kernel
# over row ids); a plan the guard forbids is reported (the run would stop).
grep -qF "// select plan 0&&1&&2 of the filter's 3 conjuncts: the unchanged filter's order" <<<"$a" &&
  grep -qF "bool stage_c2(" <<<"$a" || { echo "FAIL: pattern a: no identity plan: $a"; fail=1; }
a="$(RF_WEAVE_SELPLAN="2&0&&1" "$redfox" explain --cuda "$cases/weaver_selects.lql" 2>&1)"
grep -qF "// select plan 2&0&&1 of the filter's 3 conjuncts: forced by RF_WEAVE_SELPLAN" <<<"$a" &&
  grep -qF "g = 1; // 2 & 0" <<<"$a" && grep -qF "rf_select(RfCols l" <<<"$a" ||
  { echo "FAIL: forced 2&0&&1: $a"; fail=1; }
a="$(RF_WEAVE_SELPLAN="1|0&2" "$redfox" explain --cuda "$cases/weaver_selects.lql" 2>&1)"
grep -qF "rf_select_p0(RfCols l" <<<"$a" && grep -qF "rf_select_p1(RfCols l" <<<"$a" &&
  grep -qF "bool stage_filter_p1(" <<<"$a" || { echo "FAIL: forced split 1|0&2: $a"; fail=1; }
a="$(RF_WEAVE_SELPLAN="1&&0&&2" "$redfox" explain --cuda "$cases/weaver_selplan.lql" 2>&1)"
grep -qF "RF_WEAVE_SELPLAN: select plan '1&&0&&2': conjunct 1 can fault" <<<"$a" ||
  { echo "FAIL: a forbidden plan is not reported: $a"; fail=1; }
# every legal plan, for RF_WEAVE_SELPLAN (bench/selplan_sweep.py)
sp="$("$redfox" explain --select-plans "$cases/weaver_selplan.lql" 2>&1)"
[ "$(grep -c $'^t3\t4\t' <<<"$sp")" = 36 ] && grep -qF "(can fault: stays after the ones before it)" <<<"$sp" &&
  grep -q $'^bigb\t2\t1&&0$' <<<"$sp" && ! grep -q $'^bigb\t2\t.*|' <<<"$sp" ||
  { echo "FAIL: --select-plans: $sp"; fail=1; }
d="$("$redfox" explain --cuda "$cases/weaver_shared_input.lql" 2>&1)"; rc=$?
[ "$rc" = 0 ] && grep -qF "// FUSED[2] -> o1: MAP -> MAP" <<<"$d" && grep -qF "rf_select_many(RfCols l" <<<"$d" ||
  { echo "FAIL: pattern d (exit $rc): $d"; fail=1; }
# The selections' measurement knobs (docs/weaver.md): by default the
# look-back never sleeps and (a)'s projections are batched; the knobs make
# the sleep and drop the batch, out-of-range values the default.
a="$("$redfox" explain --cuda "$cases/weaver_selects.lql" 2>&1)"
grep -qF "#define LB_SLEEP 0" <<<"$a" && grep -qF "__nanosleep(LB_SLEEP)" <<<"$a" && grep -qF "uint64_t pv[ITEMS]" <<<"$a" ||
  { echo "FAIL: the selections' defaults: $a"; fail=1; }
a="$(RF_CUDA_LOOKBACK_SLEEP=300 RF_CUDA_SELECT_BATCH=off "$redfox" explain --cuda "$cases/weaver_selects.lql" 2>&1)"
grep -qF "#define LB_SLEEP 300" <<<"$a" && ! grep -qF "uint64_t pv[ITEMS]" <<<"$a" ||
  { echo "FAIL: RF_CUDA_LOOKBACK_SLEEP=300 RF_CUDA_SELECT_BATCH=off: $a"; fail=1; }
d="$(RF_CUDA_LOOKBACK_SLEEP=99999 "$redfox" explain --cuda "$cases/weaver_shared_input.lql" 2>&1)"
grep -qF "#define LB_SLEEP 0" <<<"$d" || { echo "FAIL: RF_CUDA_LOOKBACK_SLEEP=99999 not the default: $d"; fail=1; }
# misuse: no program, two programs, an unknown spelling of --no-fuse
"$redfox" explain --cuda >/dev/null 2>&1; [ $? = 64 ] || { echo "FAIL: explain --cuda without a program"; fail=1; }
"$redfox" explain --cuda a.lql b.lql >/dev/null 2>&1; [ $? = 64 ] || { echo "FAIL: two programs"; fail=1; }
err="$("$redfox" run --no-fuse=1 "$root/programs/tc.lql" 2>&1 >/dev/null)"; rc=$?
[ "$rc" = 64 ] && grep -q "unknown option '--no-fuse=1'" <<<"$err" || { echo "FAIL: --no-fuse=1: $rc $err"; fail=1; }
[ "$fail" = 0 ] && echo ok
exit $fail
