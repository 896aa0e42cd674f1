#!/usr/bin/env bash
# Runs on the GPU machine (the device tool), after tools/device_prepare.sh
# here: builds build-dev/ (tools/device_build.sh) and runs the steps named,
# in order, each step's log under $OUT/logs (one tarball, $OUT/logs.tgz:
# the tool brings back few files) and a summary line per step in
# $OUT/summary.txt, which it also prints.
#
#   tools/device_check.sh STEP...
#     tests        goldens on the GPU, TPC-H SF 0.01 fused and --no-fuse
#                  (against DuckDB's answers carried in .data/tpch), test_gpu_prims
#     suite:RE[:N] the GPU suite's steps whose names match RE (tests/gpu/run_gpu_suite.sh
#                  --only RE, N random programs a step, default 200), at most 540 s, every
#                  step's log kept (its ctest_gpu alone took 523 s on one H200: name it apart)
#     rmat17       TC on R-MAT 17 (made here) on one GPU, --count --stats, twice: 1,434,190,824
#                  paths (an independent BFS's count), through one-key sorts past 2^32 rows
#     patterns     Kernel Weaver patterns a, d, e at 10^8 rows, 3 runs
#                  (bench/weaver_patterns.py; data made on the machine)
#     select-knobs[:R]  patterns a and d at 10^8 rows with the selections' knobs (docs/weaver.md):
#                  as built, RF_CUDA_LOOKBACK_SLEEP=100, 400 and 1000, RF_CUDA_SELECT_BATCH=off,
#                  taking turns, R rounds (default 2, ~3 min a round); fused ms and % of the
#                  floor per line
#     trace:P-sS   one RF_CUDA_TRACE=1 run of pattern P at selectivity S (e.g.
#                  trace:a-s0p5), after `patterns` or `select-knobs`
#     trace-host:P-sS  the same with RF_CUDA_TRACE=host: the marks without waiting for the
#                  stream, so each phase is the host's time alone
#     tpch10:QS    TPC-H SF 10 (made with the carried tpchgen-cli wheel), the
#                  queries QS (e.g. 1,2,3 or all) fused and --no-fuse taking turns,
#                  3 runs each (bench/tpch_alternate.py)
#     selplan:P    the select-plan sweep at 10^8 rows for P predicates (2, 3 or 4: all 25
#                  points, the seeded 8, the seeded 4; bench/selplan_sweep.py, data made on
#                  the machine once, ~60 s), every point's log kept under $OUT/logs/selplan-P
#                  (tools/selplan_fit reads them): ~150 s for 2, ~100 s for 3, ~140 s for 4
#     recursion    TC and SG on the carried graphs, fused and --no-fuse
#                  (bench/gpu_bench.py --count-only), twice
#     recursion-alt  the same with the variants taking turns (bench/graph_alternate.py:
#                  7 runs on the ~20 ms graphs, 3 on the others; best and median)
#     runs-apart   answers held as runs merged a key range at a time (the suite's
#                  graph_count_runs_apart), then SG --count on usroads, usroads-48
#                  and p2p-Gnutella31 (the graphs that once ran out of memory)
#     union        the GPU union's windows against whole searches (RF_TEST_UNION_WINDOWS=off),
#                  taking turns: SG usroads, SG SF.cedge, TC usroads, TC cal.cedge (--stats)
#     wcoj-small[:Q] triangles and 4-cliques (or Q alone: triangles or four_cliques) on seven
#                  small shared graphs, --join=auto, wcoj and binary with the kernels loaded
#                  ahead and not (RF_CUDA_LOAD_AHEAD=off), taking turns, 7 runs each (both: more
#                  than one call's 600 s; one query a call fits; issue 9's "auto within 10% of
#                  the better plan" rows)
#     wcoj-count   R-MAT 20 and 21 triangle counts, the bindings counted and made
#                  (RF_WCOJ_COUNT=0), and counted by the general level kernels
#                  (RF_GPU_LFTJ_GENERAL=1), taking turns, 3 runs each (~1 min)
#     wcoj-order   multiway joins in the planned variable order, the second (reversed)
#                  and as chosen at run time (RF_WCOJ_ORDER), taking turns, 3 runs each:
#                  R-MAT 20 and 21 triangle counts, 4-cliques on three social graphs (~2 min)
#     wcoj-tests   the six gpu_wcoj ctests' random cyclic programs (wcoj_diff.py), split
#                  over the GPUs present (three a card on two: ~8.5 min; one card: ~16)
#     ooc          issue 10's out-of-core runs against the PCIe floor (bench/ooc_bench.py), three
#                  variants taking turns, twice: as built, the parts' copies in turn with their
#                  kernels (RF_CUDA_MOVES_AHEAD=off), and also staged from the heap instead of
#                  the pinned arena (RF_CUDA_PINNED_MAX=0); then the GPU suite's out-of-core
#                  steps (~7 min)
#     scaling      (a machine of two or four GPUs) issue 10's table: TC on R-MAT 16 and 17
#                  (made here; 17's closure holds over 10^9 tuples), TC, SG on the largest
#                  carried graphs, triangles on R-MAT 20, one GPU against two (--gpus 2)
#                  and four (--gpus 4, where there are four), taking turns, 3 runs each
#                  (bench/graph_alternate.py; ~5 min on two)
#     tpch10-gpus:QS  (two or four GPUs) TPC-H SF 10 queries QS on one GPU, two and four,
#                  taking turns, 2 runs each (bench/tpch_alternate.py)
#     sg-gpus      same generation on usroads, usroads-48 and p2p-Gnutella31 on one GPU and on
#                  all GPUs here (--gpus N), the hashes and whether the answer was kept as runs
#     tpch10-trace:QS  TPC-H SF 10 queries QS on one GPU and two with RF_DIST_TRACE=1 --stats
#                  (each relation moved and which way; the logs in logs.tgz)
#     gpus2        (a machine of two GPUs) tests/dist/run_gpus.sh, then SG on usroads,
#                  fe_body and p2p-Gnutella31 (where the cards hold it) and TC on usroads and
#                  p2p-Gnutella31, two rounds: on two GPUs agreeing on failures late (the
#                  default) and after every kernel (RF_DIST_AGREE=kernel), and on one
# Keep each call under the tool's 600 s: tests ~130 s, patterns ~100 s,
# tpch10 ~20 s a query (plus ~45 s for the data once), recursion ~50 s.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
out="${OUT:-/tmp/device-check}"
logs="$out/logs"
mkdir -p "$logs"
export NCCL_NVLS_ENABLE=0
t0=$SECONDS
note() { echo "$* ($((SECONDS - t0)) s)" | tee -a "$out/summary.txt"; }
rf=build-dev/redfox
if [ ! -x "$rf" ] || [ -n "${REBUILD:-}" ]; then
  tools/device_build.sh >"$logs/build.txt" 2>&1 || { note "build FAILED"; tail -20 "$logs/build.txt"; exit 1; }
fi
note "build ok: $(nvidia-smi -L 2>/dev/null | head -1)"
sf10() {
  [ -f .data/sf10/lineitem.tbl ] && return 0
  mkdir -p .data/tg
  (cd .data/tg && python3 -m zipfile -e ../whl/tpchgen_cli-*.whl . &&
    chmod +x tpchgen_cli-*.data/scripts/tpchgen-cli &&
    ./tpchgen_cli-*.data/scripts/tpchgen-cli tbl --scale-factor 10 --output-dir ../sf10 --quiet --no-progress)
}
for step in "$@"; do
  case "$step" in
    tests)
      python3 tests/golden/run_golden.py --redfox "$rf" --backend gpu >"$logs/golden.txt" 2>&1
      note "goldens (gpu): $(tail -1 "$logs/golden.txt")"
      bash tests/tpch/run_tpch.sh "$rf" 0.01 --backend gpu >"$logs/tpch001.txt" 2>&1
      note "tpch sf0.01 fused: $(tail -1 "$logs/tpch001.txt")"
      bash tests/tpch/run_tpch.sh "$rf" 0.01 --backend gpu --no-fuse >"$logs/tpch001-nofuse.txt" 2>&1
      note "tpch sf0.01 --no-fuse: $(tail -1 "$logs/tpch001-nofuse.txt")"
      timeout 300 build-dev/tests/gpu/test_gpu_prims >"$logs/gpu_prims.txt" 2>&1
      note "test_gpu_prims rc=$?: $(tail -1 "$logs/gpu_prims.txt")"
      ;;
    suite:*)
      spec="${step#suite:}"; re="${spec%%:*}"; n=200
      [ "$spec" != "$re" ] && n="${spec#*:}"
      timeout 540 bash tests/gpu/run_gpu_suite.sh --build build-dev --count "$n" --only "$re" \
        --log "$logs/suite" >"$logs/suite.txt" 2>&1
      note "gpu suite '$re' ($n programs a step, rc $?):"
      grep -E '^(ok|FAIL)' "$logs/suite.txt" | tee -a "$out/summary.txt"
      ;;
    rmat17)
      [ -f .data/graphs/rmat17.tsv ] || build-dev/tests/bench/rf_graphgen rmat 17 262144 1 -o .data/graphs/rmat17.tsv
      for i in 1 2; do
        "$rf" run programs/tc.lql --input edge=.data/graphs/rmat17.tsv --backend=gpu --count --stats \
          >"$logs/rmat17-$i.txt" 2>&1
        note "tc R-MAT 17, one GPU (rc $?): $(grep -E '^# path' "$logs/rmat17-$i.txt") $(grep -oE 'query [0-9.]+ s' "$logs/rmat17-$i.txt")"
      done
      ;;
    patterns)
      python3 bench/weaver_patterns.py --redfox "$rf" --rows 1e8 --patterns a,d,e --repeat 3 \
        --log "$logs/patterns" >"$logs/patterns.txt" 2>&1
      note "patterns:"
      grep '^|' "$logs/patterns.txt" | tee -a "$out/summary.txt"
      ;;
    select-knobs|select-knobs:*)
      rounds=2
      [ "$step" != select-knobs ] && rounds="${step#select-knobs:}"
      python3 bench/weaver_patterns.py --rows 1e8 --patterns a,d --generate-only >"$logs/knobs-data.txt" 2>&1
      for round in $(seq 1 "$rounds"); do
        for v in as-built lb100 lb400 lb1000 nobatch; do
          e=()
          case "$v" in lb*) e=(RF_CUDA_LOOKBACK_SLEEP=${v#lb}) ;; nobatch) e=(RF_CUDA_SELECT_BATCH=off) ;; esac
          env "${e[@]}" python3 bench/weaver_patterns.py --redfox "$rf" --rows 1e8 --patterns a,d --repeat 2 \
            --log "$logs/knobs-$v-$round" >"$logs/knobs-$v-$round.txt" 2>&1
          note "select-knobs round $round $v:"
          grep '^| gpu' "$logs/knobs-$v-$round.txt" | awk -F'|' '{print "  " $3, $4, "fused", $7, "ms,", $12, "% floor,", $14}' |
            tee -a "$out/summary.txt"
        done
      done
      ;;
    trace:*|trace-host:*)
      p="${step#*:}"
      mode=1
      [ "${step%%:*}" = trace-host ] && mode=host
      # the instantiated program from whichever step made it
      prog=$(ls "$logs"/patterns/"$p".lql "$logs"/knobs-as-built-1/"$p".lql 2>/dev/null | head -1)
      [ -n "$prog" ] || { note "trace $p: no program (run patterns or select-knobs first)"; continue; }
      RF_CUDA_TRACE=$mode "$rf" run "$prog" --input t=.data/weaver/n100000000/t.tsv --count --stats \
        >"$logs/trace-$mode-$p.txt" 2>&1
      note "trace ($mode) $p:"
      grep -E '^trace|select plan|query' "$logs/trace-$mode-$p.txt" | tee -a "$out/summary.txt"
      ;;
    tpch10:*)
      qs="${step#tpch10:}"
      [ "$qs" = all ] && qs=1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22
      sf10 >"$logs/sf10-gen.txt" 2>&1 || { note "SF 10 data FAILED"; continue; }
      python3 bench/tpch_alternate.py --redfox "$rf" --data .data/sf10 --queries "$qs" --repeat 3 \
        --log "$logs/tpch10" >"$logs/tpch10-$qs.txt" 2>"$logs/tpch10-$qs.err"
      note "tpch sf10 $qs (rc $?):"
      tee -a "$out/summary.txt" <"$logs/tpch10-$qs.txt"
      ;;
    selplan:*)
      np="${step#selplan:}"
      case "$np" in 2) pts=0 ;; 3) pts=8 ;; 4) pts=4 ;; *) note "selplan: 2, 3 or 4 predicates, not '$np'"; continue ;; esac
      python3 bench/selplan_sweep.py --rows 1e8 --generate-only >"$logs/selplan-data.txt" 2>&1
      python3 bench/selplan_sweep.py --redfox "$rf" --rows 1e8 --preds "$np" --points "$pts" \
        --log "$logs/selplan-$np" >"$logs/selplan-$np.txt" 2>&1
      note "selplan $np predicates:"
      grep -E '^\||within' "$logs/selplan-$np.txt" | tee -a "$out/summary.txt"
      ;;
    recursion)
      for i in 1 2; do
        python3 bench/gpu_bench.py --build build-dev --graphs-dir .data/graphs --queries tc,sg --no-cpu \
          --count-only --variants "fused=,unfused=--no-fuse" >"$logs/recursion-$i.txt" 2>&1
      done
      note "recursion (two runs; GPU unfused/fused):"
      for i in 1 2; do
        awk -F'|' '/GPU unfused\/fused/ {on=1; next} on && NF > 8 && $2 !~ /---/ {printf "%s %s %s\n", $2, $3, $7}' \
          "$logs/recursion-$i.txt" | tee -a "$out/summary.txt"
      done
      ;;
    recursion-alt)
      python3 bench/graph_alternate.py --redfox "$rf" --graphs-dir .data/graphs --graphs OL.cedge,TG.cedge,cal.cedge \
        --repeat 7 >"$logs/recursion-alt-small.txt" 2>&1
      python3 bench/graph_alternate.py --redfox "$rf" --graphs-dir .data/graphs \
        --graphs CA-HepTh,p2p-Gnutella09,p2p-Gnutella04,SF.cedge,fe_body --repeat 3 >"$logs/recursion-alt-large.txt" 2>&1
      note "recursion, variants taking turns (unfused/fused best, median):"
      grep -h '^| t\|^| s' "$logs/recursion-alt-small.txt" "$logs/recursion-alt-large.txt" | tee -a "$out/summary.txt"
      ;;
    wcoj-small|wcoj-small:*)
      queries=triangles,four_cliques
      [ "$step" != wcoj-small ] && queries="${step#wcoj-small:}"
      python3 bench/graph_alternate.py --redfox "$rf" --graphs-dir .data/graphs \
        --graphs CA-HepTh,ego-Facebook,loc-Brightkite,wiki-Vote,usroads,delaunay_n16,p2p-Gnutella31 \
        --queries "$queries" --repeat 7 \
        --variants "auto=--join=auto,wcoj=--join=wcoj,binary=--join=binary,auto-lazy=RF_CUDA_LOAD_AHEAD=off --join=auto,wcoj-lazy=RF_CUDA_LOAD_AHEAD=off --join=wcoj" \
        >"$logs/wcoj-small-$queries.txt" 2>&1
      note "wcoj-small $queries (auto first: the others' best and median over auto's):"
      grep '^|' "$logs/wcoj-small-$queries.txt" | tee -a "$out/summary.txt"
      ;;
    wcoj-count)
      g=build-dev/tests/bench/rf_graphgen
      [ -f .data/rmat20.tsv ] || "$g" rmat 20 10000000 1 -o .data/rmat20.tsv
      [ -f .data/rmat21.tsv ] || "$g" rmat 21 20000000 1 -o .data/rmat21.tsv
      grep -v '^@output(triangle)' programs/triangles.lql >.data/tri_count.lql
      # variants: the bindings made (RF_WCOJ_COUNT=0), counted, and counted by the
      # general level kernels (RF_GPU_LFTJ_GENERAL=1: not those compiled for 1-3 inputs)
      for r in 1 2 3; do for gr in rmat20 rmat21; do for c in 0 1 g; do
        f="$logs/wcoj-count-$gr-$c-$r.txt"
        env RF_WCOJ_COUNT=${c/g/1} RF_GPU_LFTJ_GENERAL=$([ $c = g ] && echo 1 || echo 0) RF_GPU_LFTJ_TRACE=1 \
          timeout 120 "$rf" run .data/tri_count.lql --input edge=.data/$gr.tsv --count --stats \
          --join=wcoj --backend=gpu >"$f" 2>&1
        note "$gr variant $c run $r: $(grep -o 'hash [0-9a-f]*' "$f") $(grep -o 'query [0-9.]* s' "$f") level 2 $(grep -o 'level 2:.*' "$f" | grep -o 'count [0-9.]* ms')"
      done; done; done
      ;;
    wcoj-order)
      # a multiway join's variable order (hir.h alt_order): the planned one, the second
      # (reversed) and the run-time choice, taking turns, 3 runs each: R-MAT 20 and 21
      # triangle counts, 4-cliques counted on three social graphs
      g=build-dev/tests/bench/rf_graphgen
      [ -f .data/rmat20.tsv ] || "$g" rmat 20 10000000 1 -o .data/rmat20.tsv
      [ -f .data/rmat21.tsv ] || "$g" rmat 21 20000000 1 -o .data/rmat21.tsv
      grep -v '^@output(triangle)' programs/triangles.lql >.data/tri_count.lql
      for r in 1 2 3; do
        for run in tri_count:rmat20 tri_count:rmat21 four_cliques:graphs/loc-Brightkite \
                   four_cliques:graphs/ego-Facebook four_cliques:graphs/wiki-Vote; do
          q=${run%%:*}; gr=${run#*:}
          prog=programs/$q.lql; [ $q = tri_count ] && prog=.data/tri_count.lql
          for o in planned alt auto; do
            f="$logs/wcoj-order-$q-${gr##*/}-$o-$r.txt"
            env RF_WCOJ_ORDER=$([ $o = auto ] || echo $o) RF_WCOJ_ORDER_TRACE=1 RF_GPU_LFTJ_TRACE=1 \
              timeout 120 "$rf" run "$prog" --input edge=.data/$gr.tsv --count --stats --join=wcoj \
              --backend=gpu >"$f" 2>&1
            note "$q ${gr##*/} $o run $r: $(grep -o 'hash [0-9a-f]*' "$f" | tail -1) $(grep -o 'query [0-9.]* s' "$f")" \
                 "MULTIJOIN $(grep -E '^ +[0-9]+ +MULTIJOIN' "$f" | awk '{print $5}') s; $(grep -o 'the [a-z]* .*runs' "$f")"
          done
        done
      done
      ;;
    wcoj-tests)
      # (each program is ~12 GPU processes; the pool prime is off for processes run at once)
      ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
      [ "${ngpu:-0}" -ge 1 ] || ngpu=1
      wd() { python3 -u tests/differential/wcoj_diff.py --redfox "$rf" --backend gpu --jobs 12 "$@"; }
      tests=("--count 60 --seed 2" "--count 30 --seed 3 --env RF_GPU_LFTJ_BUDGET=1"
             "--count 30 --seed 4 --env RF_GPU_LFTJ_TEAM=32 --env RF_GPU_LFTJ_CHUNK=3 --env RF_GPU_LFTJ_PIVOTS=1"
             "--count 30 --seed 5 --env RF_GPU_LFTJ_DIRECTORY=off --env RF_GPU_LFTJ_TEAM=4 --env RF_GPU_LFTJ_BITS=off --env RF_GPU_LFTJ_PIVOTS=1"
             "--count 40 --seed 6 --env RF_GPU_LFTJ_HUBS=always"
             "--count 30 --seed 7 --env RF_GPU_LFTJ_HUBS=always --env RF_GPU_LFTJ_BITS=off --env RF_GPU_LFTJ_TEAM=32 --env RF_GPU_LFTJ_CHUNK=3 --env RF_GPU_LFTJ_GENERAL=1")
      for ((gi = 0; gi < ngpu && gi < 2; gi++)); do
        (
          for ((ti = gi; ti < ${#tests[@]}; ti += (ngpu < 2 ? 1 : 2))); do
            # shellcheck disable=SC2086
            CUDA_VISIBLE_DEVICES=$gi wd ${tests[$ti]} >"$logs/wcoj-test-$ti.txt" 2>&1
            note "gpu_wcoj test $ti on GPU $gi (rc $?): $(tail -1 "$logs/wcoj-test-$ti.txt")"
          done
        ) &
      done
      wait
      ;;
    ooc)
      runs=tc:p2p-Gnutella09:64M,sg:p2p-Gnutella09:256M,sg:p2p-Gnutella09:1G,tc:p2p-Gnutella31:2G
      for round in 1 2; do
        for v in built inturn staged; do
          case $v in
            built) envs=(X_UNUSED=) ;;
            inturn) envs=(RF_CUDA_MOVES_AHEAD=off) ;;
            staged) envs=(RF_CUDA_MOVES_AHEAD=off RF_CUDA_PINNED_MAX=0) ;;
          esac
          f="$logs/ooc-$v-$round.md"
          env "${envs[@]}" timeout 200 python3 bench/ooc_bench.py --build build-dev --graphs-dir .data/graphs \
            --timeout 45 --runs "$runs" >"$f" 2>&1
          note "ooc $v round $round (rc $?):"
          grep '^|' "$f" | tee -a "$out/summary.txt"
        done
      done
      timeout 300 bash tests/gpu/run_gpu_suite.sh --build build-dev --count 60 \
        --only 'golden_gpu_ooc|differential_gpu_ooc' --log "$logs/ooc-suite" >"$logs/ooc-suite.txt" 2>&1
      note "gpu out-of-core suite (rc $?): $(tail -1 "$logs/ooc-suite.txt")"
      ;;
    runs-apart)
      (RF="$rf" ROOT="$root" GRAPHS=.data/graphs LOG="$logs"
       eval "$(sed -n '/^  runs_apart() {/,/^  }/p' tests/gpu/run_gpu_suite.sh)"
       runs_apart) >"$logs/runs-apart.txt" 2>&1
      note "runs apart (rc $?):"
      tee -a "$out/summary.txt" <"$logs/runs-apart.txt"
      for g in usroads usroads-48 p2p-Gnutella31; do
        [ -f ".data/graphs/$g.tsv" ] || { note "sg $g: no .data/graphs/$g.tsv"; continue; }
        "$rf" run programs/same_generation.lql --input edge=".data/graphs/$g.tsv" --count --stats --backend=gpu \
          >"$logs/sg-$g.txt" 2>&1
        note "sg $g: $(grep '^# ' "$logs/sg-$g.txt"); $(grep -o 'query [0-9.]* s' "$logs/sg-$g.txt")"
      done
      ;;
    union)
      for qg in same_generation:usroads same_generation:SF.cedge tc:usroads tc:cal.cedge; do
        q=${qg%%:*}; g=${qg##*:}
        for v in windows whole windows whole; do
          f="$logs/union-$q-$g-$v.txt"
          if [ $v = whole ]; then w=off; else w=""; fi
          RF_TEST_UNION_WINDOWS=$w "$rf" run programs/$q.lql --input edge=".data/graphs/$g.tsv" --count --stats \
            --backend=gpu >"$f" 2>&1
          note "$q $g $v: $(grep -o 'hash [0-9a-f]*' "$f") $(grep -o 'query [0-9.]* s' "$f");" \
            "UNION $(grep -E '^  2 +UNION' "$f" | awk '{print $4 " calls " $5 " s"}')"
        done
      done
      ;;
    scaling)
      # one GPU against two, and four where the machine has them
      ngpu=$(nvidia-smi -L 2>/dev/null | wc -l)
      variants="one=,two=--gpus 2"
      [ "$ngpu" -ge 4 ] && variants="$variants,four=--gpus 4"
      [ -f .data/graphs/rmat16.tsv ] || build-dev/tests/bench/rf_graphgen rmat 16 131072 1 -o .data/graphs/rmat16.tsv
      [ -f .data/graphs/rmat17.tsv ] || build-dev/tests/bench/rf_graphgen rmat 17 262144 1 -o .data/graphs/rmat17.tsv
      [ -f .data/graphs/rmat20.tsv ] || build-dev/tests/bench/rf_graphgen rmat 20 10000000 1 -o .data/graphs/rmat20.tsv
      : >"$logs/scaling.txt"
      for gq in tc:rmat16,rmat17,usroads,p2p-Gnutella31 sg:usroads,p2p-Gnutella31,fe_body triangles:rmat20; do
        python3 bench/graph_alternate.py --redfox "$rf" --graphs-dir .data/graphs --graphs "${gq#*:}" \
          --queries "${gq%%:*}" --repeat 3 --timeout 120 --variants "$variants" >>"$logs/scaling.txt" 2>&1
      done
      note "scaling, one GPU against more ($variants; more/one best, median: below 1 is faster):"
      grep '^|' "$logs/scaling.txt" | tee -a "$out/summary.txt"
      ;;
    tpch10-gpus:*)
      qs="${step#tpch10-gpus:}"
      [ "$qs" = all ] && qs=1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22
      ngpu=$(nvidia-smi -L 2>/dev/null | wc -l)
      variants="one=,two=--gpus 2"
      [ "$ngpu" -ge 4 ] && variants="$variants,four=--gpus 4"
      sf10 >"$logs/sf10-gen.txt" 2>&1 || { note "SF 10 data FAILED"; continue; }
      python3 bench/tpch_alternate.py --redfox "$rf" --data .data/sf10 --queries "$qs" --repeat 2 \
        --variants "$variants" --log "$logs/tpch10-gpus" >"$logs/tpch10-gpus-$qs.txt" 2>"$logs/tpch10-gpus-$qs.err"
      note "tpch sf10 on one GPU and more, $qs (rc $?):"
      tee -a "$out/summary.txt" <"$logs/tpch10-gpus-$qs.txt"
      ;;
    gpus2)
      timeout 300 bash tests/dist/run_gpus.sh "$rf" >"$logs/run_gpus.txt" 2>&1
      note "run_gpus (rc $?): $(tail -1 "$logs/run_gpus.txt")"
      # two rounds, the variants taking turns: two GPUs agreeing on failures late
      # (the default) and after every kernel (RF_DIST_AGREE=kernel), and one GPU
      for round in 1 2; do
        for q in sg:usroads sg:fe_body sg:p2p-Gnutella31 tc:usroads tc:p2p-Gnutella31; do
          g=${q#*:} prog=programs/same_generation.lql
          [ "${q%%:*}" = tc ] && prog=programs/tc.lql
          for v in late each one; do
            case $v in late) a="--gpus 2" e= ;; each) a="--gpus 2" e=kernel ;; one) a="--backend=gpu" e= ;; esac
            f="$logs/gpus2-${q/:/-}-$v-$round.txt"
            # shellcheck disable=SC2086
            RF_DIST_AGREE=$e "$rf" run $prog --input edge=".data/graphs/$g.tsv" --count --stats $a >"$f" 2>&1
            note "$q $v $round: $(grep -o 'hash [0-9a-f]*' "$f") $(grep -o 'query [0-9.]* s' "$f")" \
              "$(grep -o '[0-9]* collective calls ([0-9.]* s' "$f") $(grep -o 'error:.*' "$f" | head -c 160)"
          done
        done
      done
      ;;
    sg-gpus)
      # same generation on usroads, usroads-48 and p2p-Gnutella31 on every GPU here (--gpus N; on
      # four, rank 0 keeps the gathered answer as four runs), against one GPU's hash
      ngpu=$(nvidia-smi -L 2>/dev/null | wc -l)
      for g in usroads usroads-48 p2p-Gnutella31; do
        for a in "--backend=gpu" "--gpus $ngpu"; do
          f="$logs/sg-gpus-$g-${a##* }.txt"
          # shellcheck disable=SC2086
          timeout 200 "$rf" run programs/same_generation.lql --input edge=".data/graphs/$g.tsv" --count --stats $a \
            >"$f" 2>&1
          note "sg $g $a (rc $?): $(grep '^# ' "$f") $(grep -o 'query [0-9.]* s' "$f")" \
            "$(grep -o '[0-9]* sets gathered to rank 0 kept as runs' "$f") $(grep -o 'error:.*' "$f" | head -c 200)"
        done
      done
      ;;
    tpch10-trace:*)
      # TPC-H SF 10 queries QS on two GPUs with RF_DIST_TRACE=1 and --stats (where the time goes:
      # each relation moved, which way, and each move's phases), and on one
      qs="${step#tpch10-trace:}"
      sf10 >"$logs/sf10-gen.txt" 2>&1 || { note "SF 10 data FAILED"; continue; }
      for q in ${qs//,/ }; do
        q=$(printf 'q%02d' "$q")
        ins=()
        for t in $(grep -oE '^(customer|orders|lineitem|part|partsupp|supplier|nation|region)\(' programs/tpch/$q.lql |
                   tr -d '(' | sort -u); do
          ins+=(--input "$t=.data/sf10/$t.tbl")
        done
        for a in "--backend=gpu" "--gpus 2"; do
          f="$logs/trace-$q-${a##* }.txt"
          # shellcheck disable=SC2086
          RF_DIST_TRACE=1 timeout 120 "$rf" run programs/tpch/$q.lql "${ins[@]}" --stats --output "$logs/out-$q" $a \
            >"$f" 2>&1
          note "$q $a (rc $?): $(grep -o 'query [0-9.]* s' "$f"); $(grep -c 'moved' "$f") moves" \
            "$(grep -o 'moved [0-9]* relations in [0-9.]* s' "$f")"
        done
      done
      ;;
    *) note "unknown step $step" ;;
  esac
done
tar czf "$out/logs.tgz" -C "$logs" . && rm -rf "$logs"
note "done"
