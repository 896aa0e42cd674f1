#!/usr/bin/env bash
# The GPU differential suite, one command (issue 3): every test program and
# every generated random program on --backend=gpu, compared with the oracle,
# the golden expectations and the CPU backend.
#
#   tests/gpu/run_gpu_suite.sh [--quick] [--sanitize|--sanitize-only] [--count N] [--build DIR]
#                              [--graphs DIR] [--log DIR] [--only RE]
#
# Builds DIR (default build-dev) when redfox is missing there. Without a CUDA
# device (nvidia-smi fails or lists none) it prints a message and exits 0.
#   --quick     100 random programs instead of 1000, no graph tests
#   --sanitize  also run the primitive tests and a sample of programs under
#               compute-sanitizer (memcheck; racecheck on the primitive tests)
#   --sanitize-only  only those sanitizer steps
#   --count N   N random programs (default 1000)
#   --graphs    folder with the graph files (default .data/graphs, else
#               ../shared/data/graphs); graph tests skip when missing
#   --only RE   only the steps whose names match the extended regex RE
#               (e.g. --only 'ooc' on the device for one capability)
# Exit status: 0 when everything passed (or skipped), 1 otherwise.
set -u
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
BUILD="$ROOT/build-dev"; COUNT=1000; QUICK=0; SANITIZE=0; SANONLY=0; LOG=""; GRAPHS=""; ONLY=""
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) QUICK=1; COUNT=100 ;;
    --sanitize) SANITIZE=1 ;;
    --sanitize-only) SANITIZE=1; SANONLY=1 ;;
    --build) BUILD="$2"; shift ;;
    --graphs) GRAPHS="$2"; shift ;;
    --log) LOG="$2"; shift ;;
    --count) COUNT="$2"; shift ;;
    --only) ONLY="$2"; shift ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L 2>/dev/null | grep -q GPU; then
  echo "run_gpu_suite: skipped: no CUDA device on this machine (run it on the device machine)"
  exit 0
fi
[ -n "$LOG" ] || LOG="$(mktemp -d /tmp/rfgpu_suite.XXXXXX)"
mkdir -p "$LOG"
if [ -z "$GRAPHS" ]; then
  if [ -d "$ROOT/.data/graphs" ]; then GRAPHS="$ROOT/.data/graphs"; else GRAPHS="$ROOT/../shared/data/graphs"; fi
fi
if [ ! -x "$BUILD/redfox" ] || [ ! -x "$BUILD/tests/gpu/test_gpu_prims" ]; then
  mkdir -p "$BUILD"
  echo "== building $BUILD"
  { cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release && cmake --build "$BUILD" -j"$(nproc)"; } \
    >"$LOG/build.log" 2>&1 || { echo "build failed; see $LOG/build.log"; tail -30 "$LOG/build.log"; exit 1; }
fi
BUILD="$(cd "$BUILD" && pwd)"
RF="$BUILD/redfox"
nvidia-smi -L
FAILED=()
step() { # name, command...
  local name="$1"; shift
  [ -z "$ONLY" ] || [[ "$name" =~ $ONLY ]] || return 0
  local t0=$SECONDS
  if "$@" >"$LOG/$name.log" 2>&1; then
    echo "ok   $name ($((SECONDS - t0)) s)  $(tail -1 "$LOG/$name.log")"
  else
    echo "FAIL $name ($((SECONDS - t0)) s); last lines of $LOG/$name.log:"
    tail -25 "$LOG/$name.log" | sed 's/^/     /'
    FAILED+=("$name")
  fi
}

if [ "$SANONLY" = 0 ]; then
# 1. ctest's GPU tests (the primitive tests against the CPU library).
step ctest_gpu ctest --test-dir "$BUILD" -R '^gpu_' --output-on-failure

# 2. Golden cases and example programs on the GPU (same expected output).
step golden_gpu python3 "$ROOT/tests/golden/run_golden.py" --redfox "$RF" --backend gpu

# 2b. The same with every multi-atom body as one worst-case-optimal join
#     (the device's breadth-first leapfrog; issue 9), and in rounds of
#     single bindings (a memory budget of one byte).
step golden_gpu_wcoj python3 "$ROOT/tests/golden/run_golden.py" --redfox "$RF" --backend gpu --extra-arg=--join=wcoj
# ... and with none: the cyclic cases' binary plans, which --join=auto leaves
# to the multiway join (a set gather probing with its other side answered 1
# row of 3 on wcoj_diff seed 41's program there, unseen by the goldens).
step golden_gpu_binary python3 "$ROOT/tests/golden/run_golden.py" --redfox "$RF" --backend gpu --extra-arg=--join=binary
step golden_gpu_wcoj_rounds env RF_GPU_LFTJ_BUDGET=1 python3 "$ROOT/tests/golden/run_golden.py" --redfox "$RF" \
  --backend gpu --extra-arg=--join=wcoj
# ... and with every range of every input's second column a bitmap (hub
#     bitmaps, which only skewed inputs of 2^18 rows and more get by themselves).
step golden_gpu_wcoj_hubs env RF_GPU_LFTJ_HUBS=always python3 "$ROOT/tests/golden/run_golden.py" --redfox "$RF" \
  --backend gpu --extra-arg=--join=wcoj

# 3. Random programs (the core language, then the business queries of
#    gen_biz.py): GPU against the oracle and byte for byte against the CPU backend.
step differential_gpu python3 "$ROOT/tests/differential/run.py" --redfox "$RF" --count "$COUNT" --seed 1 \
  --backend gpu --compare-backend cpu --jobs 16

step differential_gpu_biz python3 "$ROOT/tests/differential/run.py" --redfox "$RF" --lang biz --count "$COUNT" \
  --seed 1 --backend gpu --compare-backend cpu --jobs 16

# 3b. The same with every DIFF/UNION against a full relation on dense sets
#     (RF_CUDA_DENSE=always: test-sized relations never reach the size at
#     which the backend picks them by itself).
step golden_gpu_dense env RF_CUDA_DENSE=always python3 "$ROOT/tests/golden/run_golden.py" --redfox "$RF" --backend gpu
step differential_gpu_dense env RF_CUDA_DENSE=always python3 "$ROOT/tests/differential/run.py" --redfox "$RF" \
  --count "$COUNT" --seed 2 --backend gpu --compare-backend cpu --jobs 16

# 3b'. The same with every semi-naive UNION's full side held as runs (an
#     LSM: RF_CUDA_RUNS=always; test-sized relations never reach the size at
#     which the backend picks them by itself).
step golden_gpu_runs env RF_CUDA_RUNS=always python3 "$ROOT/tests/golden/run_golden.py" --redfox "$RF" --backend gpu
# unions of one or two columns by their searches (the default merges them
# by merge path), with runs so that the recursive merges take them too
step golden_gpu_union_search env RF_CUDA_UNION_MERGE=off RF_CUDA_RUNS=always python3 "$ROOT/tests/golden/run_golden.py" \
  --redfox "$RF" --backend gpu
step differential_gpu_runs env RF_CUDA_RUNS=always python3 "$ROOT/tests/differential/run.py" --redfox "$RF" \
  --count "$COUNT" --seed 4 --backend gpu --compare-backend cpu --jobs 16

# 3b''. Out of core on the device (issue 10): every kernel that splits runs
#     in key-range parts under --device-memory (RF_TEST_OOC_PARTS), its parts
#     uploaded and outputs downloaded; the business programs with a one-byte
#     limit, every variable spilled between kernels as well. The first two
#     with every column that crosses in the pinned arena (RF_CUDA_PINNED_MIN=1),
#     so each part's inputs are uploaded while the part before runs and its
#     output downloaded while the next runs (copies beside the kernels).
step golden_gpu_ooc env RF_TEST_OOC_PARTS=3 RF_CUDA_PINNED_MIN=1 python3 "$ROOT/tests/golden/run_golden.py" \
  --redfox "$RF" --backend gpu --extra-arg=--device-memory=1G
step differential_gpu_ooc env RF_TEST_OOC_PARTS=3 RF_CUDA_PINNED_MIN=1 python3 "$ROOT/tests/differential/run.py" --redfox "$RF" \
  --count "$COUNT" --seed 31 --backend gpu --compare-backend cpu --jobs 16 --extra-arg=--device-memory=1G
step wide_sort_parts bash "$ROOT/tests/gpu/wide_sort.sh" "$RF"
step probe_other_side bash "$ROOT/tests/gpu/probe_other_side.sh" "$RF"
step differential_gpu_ooc_biz env RF_TEST_OOC_PARTS=4 python3 "$ROOT/tests/differential/run.py" --redfox "$RF" \
  --lang biz --count "$COUNT" --seed 32 --backend gpu --compare-backend cpu --jobs 16 --extra-arg=--device-memory=1

# 3c. Kernel Weaver: the same expectations unfused (--no-fuse), and fused
#     with the hash aggregation's table forced to overflow (its fallback);
#     random business programs unfused, GPU against the oracle and the CPU.
step golden_gpu_unfused python3 "$ROOT/tests/golden/run_golden.py" --redfox "$RF" --backend gpu --extra-arg=--no-fuse
step golden_gpu_hash_overflow env RF_CUDA_HASH_SLOTS=8 python3 "$ROOT/tests/golden/run_golden.py" --redfox "$RF" \
  --backend gpu
# 3d. Select planning: every legal plan of weaver_selplan's filters forced
#     (generated kernels follow it: & groups, && early outs, | row-id
#     kernels), the same answers; forbidden plans refused; chosen plans in --stats.
step selplan_forced_gpu python3 "$ROOT/tests/weaver/selplan_forced.py" --redfox "$RF" --backend gpu
step differential_gpu_biz_unfused python3 "$ROOT/tests/differential/run.py" --redfox "$RF" --lang biz \
  --count "$COUNT" --seed 3 --backend gpu --compare-backend cpu --extra-arg=--no-fuse --jobs 16

# 4. programs/*.lql on both backends, outputs compared (also with NVRTC codegen).
programs_both() {
  local bad=0
  for p in "$ROOT"/programs/*.lql; do
    local n; n=$(basename "$p" .lql)
    (cd "$ROOT/programs" && "$RF" run "$n.lql" --backend=cpu >"$LOG/prog_$n.cpu" 2>&1)
    (cd "$ROOT/programs" && "$RF" run "$n.lql" --backend=gpu 2>/dev/null >"$LOG/prog_$n.gpu")
    (cd "$ROOT/programs" && RF_CUDA_CODEGEN=1 RF_CUDA_CACHE="$LOG/nvrtc" "$RF" run "$n.lql" --backend=gpu \
       2>/dev/null >"$LOG/prog_$n.gpucg")
    (cd "$ROOT/programs" && RF_CUDA_DENSE=always "$RF" run "$n.lql" --backend=gpu 2>/dev/null >"$LOG/prog_$n.gpuds")
    (cd "$ROOT/programs" && RF_CUDA_RUNS=always "$RF" run "$n.lql" --backend=gpu 2>/dev/null >"$LOG/prog_$n.gpuruns")
    if cmp -s "$LOG/prog_$n.cpu" "$LOG/prog_$n.gpu" && cmp -s "$LOG/prog_$n.cpu" "$LOG/prog_$n.gpucg" &&
       cmp -s "$LOG/prog_$n.cpu" "$LOG/prog_$n.gpuds" && cmp -s "$LOG/prog_$n.cpu" "$LOG/prog_$n.gpuruns"; then
      echo "same $n ($(wc -l <"$LOG/prog_$n.cpu") lines)"
    else
      echo "DIFFERENT $n"; bad=1
    fi
  done
  return $bad
}
step programs_cpu_vs_gpu programs_both

# 5. Graph tests on the GPU (known closure sizes; SQLite for the rest).
if [ "$QUICK" = 0 ]; then
  # --count of an answer held as runs, hashed a key range at a time on the
  # device (what SG on usroads needs: its runs do not fit merged), forced
  # with pieces of 50,000 rows: the same line as the answer merged whole,
  # and the path taken (--stats counts it).
  runs_apart() {
    local bad=0 any=0
    for t in tc:OL.cedge tc:p2p-Gnutella04 sg:OL.cedge sg:TG.cedge sg:cal.cedge; do
      local q=${t%%:*} g=${t#*:} prog=tc.lql
      [ "$q" = sg ] && prog=same_generation.lql
      [ -f "$GRAPHS/$g.tsv" ] || continue
      any=1
      local want got apart
      want=$("$RF" run "$ROOT/programs/$prog" --input edge="$GRAPHS/$g.tsv" --count --backend=gpu 2>/dev/null)
      got=$(RF_CUDA_RUNS=always RF_TEST_GPU_RUNS_APART=50000 "$RF" run "$ROOT/programs/$prog" \
              --input edge="$GRAPHS/$g.tsv" --count --backend=gpu --stats 2>"$LOG/apart_${q}_$g.err")
      apart=$(grep -o '[0-9]* answers hashed and' "$LOG/apart_${q}_$g.err" | cut -d' ' -f1)
      if [ -n "$want" ] && [ "$got" = "$want" ] && [ "${apart:-0}" -ge 1 ]; then
        echo "same $q $g: $want ($apart hashed apart)"
      else
        echo "DIFFERENT $q $g: '$got' against '$want' (${apart:-0} hashed apart)"; bad=1
      fi
      # the rows written (TSV): downloaded a piece at a time, not merged on the host
      [ "$g" = p2p-Gnutella04 ] && continue
      rm -rf "$LOG/apart_whole" "$LOG/apart_pieces"
      "$RF" run "$ROOT/programs/$prog" --input edge="$GRAPHS/$g.tsv" --output "$LOG/apart_whole" --backend=gpu \
        2>/dev/null
      RF_CUDA_RUNS=always RF_TEST_GPU_RUNS_APART=50000 "$RF" run "$ROOT/programs/$prog" --input edge="$GRAPHS/$g.tsv" \
        --output "$LOG/apart_pieces" --backend=gpu --stats 2>"$LOG/apart_tsv_${q}_$g.err"
      apart=$(grep -o '[0-9]* downloaded a key range at a time' "$LOG/apart_tsv_${q}_$g.err" | cut -d' ' -f1)
      if [ -d "$LOG/apart_whole" ] && diff -r "$LOG/apart_whole" "$LOG/apart_pieces" >/dev/null &&
         [ "${apart:-0}" -ge 1 ]; then
        echo "same $q $g files ($apart downloaded apart)"
      else
        echo "DIFFERENT $q $g files (${apart:-0} downloaded apart)"; bad=1
      fi
    done
    [ "$any" = 1 ] || echo "no graphs in $GRAPHS"
    return $bad
  }
  step graph_count_runs_apart runs_apart
  for t in tc:OL.cedge.tsv:146120 tc:cal.cedge.tsv:501755 tc:TG.cedge.tsv:481121 \
           tc:p2p-Gnutella04.tsv:47059527 triangles:OL.cedge.tsv: triangles:CA-HepTh.tsv: \
           triangles:p2p-Gnutella09.tsv: cliques4:CA-HepTh.tsv: sg:OL.cedge.tsv: sg:TG.cedge.tsv:; do
    kind=${t%%:*}; rest=${t#*:}; g=${rest%%:*}; n=${rest#*:}
    if [ ! -f "$GRAPHS/$g" ]; then echo "skip graph_${kind}_$g ($GRAPHS/$g missing)"; continue; fi
    step "graph_${kind}_${g%.tsv}" python3 "$ROOT/tests/graphs/graph_test.py" --redfox "$RF" --graphs "$GRAPHS" \
      --test "$kind:$g" ${n:+--expect $n} --backend gpu
  done
  # the multiway joins with every range a hub bitmap, against SQLite
  for t in triangles:CA-HepTh.tsv triangles:p2p-Gnutella09.tsv cliques4:CA-HepTh.tsv; do
    kind=${t%%:*}; g=${t#*:}
    [ -f "$GRAPHS/$g" ] || continue
    step "graph_${kind}_${g%.tsv}_hubs" env RF_GPU_LFTJ_HUBS=always python3 "$ROOT/tests/graphs/graph_test.py" \
      --redfox "$RF" --graphs "$GRAPHS" --test "$kind:$g" --backend gpu --extra-arg=--join=wcoj
  done
fi

fi # SANONLY

# 6. compute-sanitizer: primitive tests (memcheck, racecheck) and a sample
#    of programs end to end (memcheck).
if [ "$SANITIZE" = 1 ]; then
  CS=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
  if [ -z "$CS" ]; then echo "skip sanitizer (compute-sanitizer not found)"; else
    W="$ROOT/tests/gpu/sanitize_wrap.sh"
    step memcheck_prims timeout 300 "$W" memcheck "$BUILD/tests/gpu/test_gpu_prims"
    step racecheck_prims timeout 300 "$W" racecheck "$BUILD/tests/gpu/test_gpu_prims"
    sanitized_programs() {
      local bad=0
      for p in "$ROOT"/programs/*.lql; do
        (cd "$ROOT/programs" && "$W" memcheck "$RF" run "$(basename "$p")" --backend=gpu >/dev/null) ||
          { echo "memcheck FAIL $p"; bad=1; }
        (cd "$ROOT/programs" && RF_CUDA_DENSE=always "$W" memcheck "$RF" run "$(basename "$p")" --backend=gpu \
           >/dev/null) || { echo "memcheck FAIL $p (dense sets)"; bad=1; }
      done
      echo "programs under memcheck done"
      return $bad
    }
    step memcheck_programs sanitized_programs
    step memcheck_differential python3 "$ROOT/tests/differential/run.py" --count 40 --seed 5 --jobs 8 \
      --redfox "$W memcheck $RF" --backend gpu
    step memcheck_ooc bash -c "cd '$ROOT/programs' && for p in tc same_generation points_to; do
        RF_TEST_OOC_PARTS=3 RF_CUDA_PINNED_MIN=1 '$W' memcheck '$RF' run \$p.lql --backend=gpu --device-memory=1 \
          >/dev/null || exit 1; done; echo memcheck ooc ok"
    step racecheck_programs bash -c "cd '$ROOT/programs' && for p in tc same_generation triangles aggregation; do
        [ -f \$p.lql ] || continue; '$W' racecheck '$RF' run \$p.lql --backend=gpu >/dev/null || exit 1; done; echo racecheck ok"
  fi
fi

echo "logs in $LOG"
if [ ${#FAILED[@]} -gt 0 ]; then echo "run_gpu_suite: FAILED: ${FAILED[*]}"; exit 1; fi
echo "run_gpu_suite: all passed"
