#!/usr/bin/env bash
# `redfox run --profile FILE`: a Chrome/Perfetto trace. The file must be
# valid JSON (python3's strict parser) holding, for tc on the 7-edge sample
# (16 paths; the loop runs as many iterations as --stats reports): one
# iteration slice per iteration, numbered 1..N, one slice of each loop
# kernel per iteration with rows and bytes as args, the LOAD and the
# download with their rows, named tracks; with --threads 2 on a larger
# graph, slices on a pool worker's track; on a GPU, slices on the GPU
# stream. A name that needs escaping (the program's path) stays valid
# JSON; a path that cannot be written fails before the run and leaves
# nothing; a failed run still writes its trace.
set -u
redfox="$1"; root="$(cd "$(dirname "$0")/../.." && pwd)"
command -v python3 >/dev/null 2>&1 || { echo "FAIL: python3 not found"; exit 1; }
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
fail=0

# check TRACE ITERATIONS LOOP-KERNEL [extra python]: the common assertions
check() {
  python3 - "$@" <<'PY' || fail=1
import json, sys, collections
path, iterations, loop_kernel = sys.argv[1], int(sys.argv[2]), sys.argv[3]
extra = sys.argv[4] if len(sys.argv) > 4 else ""
def bad(msg):
    print("FAIL: %s: %s" % (path, msg)); sys.exit(1)
try:
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
except Exception as e:
    bad("not valid JSON: %s" % e)
ev = doc["traceEvents"]
for e in ev:
    if e["ph"] == "X" and not (e["dur"] >= 0 and e["ts"] >= 0 and isinstance(e["args"], dict)):
        bad("bad complete event %r" % e)
slices = [e for e in ev if e["ph"] == "X"]
its = [e for e in slices if e["cat"] == "iteration"]
if [e["args"]["iteration"] for e in its] != list(range(1, iterations + 1)):
    bad("iteration slices %r, not 1..%d" % ([e["args"]["iteration"] for e in its], iterations))
if its and its[-1]["args"]["delta_rows"] != 0:
    bad("the last iteration's delta is not empty")
loops = [e for e in slices if e["cat"] == "loop"]
if len(loops) != 1 or loops[0]["args"]["iterations"] != iterations:
    bad("loop slices %r" % loops)
ks = [e for e in slices if e["cat"] == "kernel" and e["name"] == loop_kernel and e["tid"] == 1]
if [e["args"].get("iteration") for e in ks] != list(range(1, iterations + 1)):
    bad("%s slices by iteration: %r" % (loop_kernel, [e["args"].get("iteration") for e in ks]))
for e in ks:
    for a in ("rows_in0", "rows_in1", "rows_out", "bytes", "block", "kernel"):
        if not isinstance(e["args"].get(a), int):
            bad("%s lacks %s: %r" % (loop_kernel, a, e["args"]))
    it = next(i for i in its if i["args"]["iteration"] == e["args"]["iteration"])
    if not (it["ts"] <= e["ts"] and e["ts"] + e["dur"] <= it["ts"] + it["dur"] + 0.002):
        bad("a kernel slice lies outside its iteration's")
if sum(e["args"]["rows_out"] for e in ks) == 0:
    bad("%s made no rows" % loop_kernel)
names = {e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "thread_name"}
if "CPU: main thread (interpreter)" not in names:
    bad("no named interpreter track: %r" % names)
procs = [e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "process_name"]
if len(procs) != 1 or not procs[0].startswith("redfox run "):
    bad("process name %r" % procs)
exec(extra)
PY
}

# tc on the sample graph: the iterations --stats reports
"$redfox" run "$root/programs/tc.lql" --backend=cpu --stats --count --profile "$tmp/tc.json" >"$tmp/out" 2>"$tmp/err" ||
  { echo "FAIL: run --profile: $(cat "$tmp/err")"; fail=1; }
grep -q "^# path (16 tuples" "$tmp/out" || { echo "FAIL: tc's answer: $(cat "$tmp/out")"; fail=1; }
n="$(sed -n 's/^  loop stratum1.loop (block 2): \([0-9]*\) iterations$/\1/p' "$tmp/err")"
[ -n "$n" ] && [ "$n" -ge 2 ] || { echo "FAIL: no loop iterations in --stats: $(cat "$tmp/err")"; fail=1; n=0; }
check "$tmp/tc.json" "$n" "FUSED path.new" '
load = [e for e in slices if e["cat"] == "load"]
if [(e["name"], e["args"]["rows_out"]) for e in load] != [("LOAD edge", 7)]:
    bad("load slices %r" % load)
if load[0]["args"]["bytes"] != 7 * 2 * 8:
    bad("LOAD bytes %r" % load[0]["args"])
down = [e for e in slices if e["cat"] == "download"]
if [(e["name"], e["args"]["rows"]) for e in down] != [("download path", 16)]:
    bad("download slices %r" % down)
run = [e for e in slices if e["name"] == "run"]
if len(run) != 1 or run[0]["args"]["ok"] is not True or run[0]["args"]["loop_iterations"] != iterations:
    bad("run slice %r" % run)
for e in slices:
    if e is not run[0] and not (run[0]["ts"] <= e["ts"] and e["ts"] + e["dur"] <= run[0]["ts"] + run[0]["dur"] + 0.002):
        bad("%s lies outside the run" % e["name"])
'
# unfused: the loop's JOIN is a slice of its own, as many
"$redfox" run "$root/programs/tc.lql" --backend=cpu --no-fuse --count --profile "$tmp/nf.json" >/dev/null 2>&1 &&
  check "$tmp/nf.json" "$n" "JOIN t2" || { echo "FAIL: --no-fuse trace"; fail=1; }

# The progress line is untouched: --progress with --profile still runs.
"$redfox" run "$root/programs/tc.lql" --backend=cpu --count --progress --profile "$tmp/p.json" >/dev/null 2>&1 ||
  { echo "FAIL: --progress --profile"; fail=1; }

# A program path that needs escaping (quote, backslash, tab) in the title.
weird="$tmp/a\"b\\c	d"
mkdir -p "$weird/data" && cp "$root/programs/tc.lql" "$weird/" && cp "$root/programs/data/tc_sample.tsv" "$weird/data/"
"$redfox" run "$weird/tc.lql" --backend=cpu --count --profile "$tmp/w.json" >/dev/null 2>&1 &&
  check "$tmp/w.json" "$n" "FUSED path.new" 'assert procs[0].startswith("redfox run " + sys.argv[5]), procs' "$weird/tc.lql" ||
  { echo "FAIL: escaped title"; fail=1; }

# --threads 2 on 600,000 edges (one iteration makes every path): the pool's
# worker runs pieces of the big kernels on a track of its own.
python3 -c '
import sys
w = sys.stdout.write
for i in range(300000): w("%d\t%d\n" % (2 * i, 2 * i + 1))
for i in range(300000): w("%d\t%d\n" % (2 * i + 1, 2 * i + 600001))' >"$tmp/pairs.tsv"
"$redfox" run "$root/programs/tc.lql" --input edge="$tmp/pairs.tsv" --backend=cpu --threads 2 --count \
  --profile "$tmp/big.json" >"$tmp/out" 2>&1 || { echo "FAIL: big run: $(cat "$tmp/out")"; fail=1; }
grep -q "^# path (900000 tuples" "$tmp/out" || { echo "FAIL: big answer: $(cat "$tmp/out")"; fail=1; }
check "$tmp/big.json" 2 "FUSED path.new" '
work = [e for e in slices if e["tid"] >= 2 and e["tid"] < 1000]
if not work or not all(e["cat"] == "cpu" and e["args"]["pieces"] >= 1 for e in work):
    bad("no pool worker slices: %r" % work[:3])
if "CPU: worker 1" not in names:
    bad("the worker track is not named: %r" % names)
'

# On a GPU (when present), kernels also show on the GPU stream.
if "$redfox" run "$root/programs/tc.lql" --backend=gpu --count --profile "$tmp/gpu.json" >/dev/null 2>"$tmp/err"; then
  check "$tmp/gpu.json" "$n" "FUSED path.new" '
gpu = [e for e in slices if e["tid"] == 1000]
if not gpu or "GPU stream" not in names:
    bad("no GPU stream slices")
'
else
  echo "note: GPU stream not checked (no GPU backend here: $(head -1 "$tmp/err"))"
fi

# A path that cannot be written: the run fails first, nothing is left.
mkdir "$tmp/dir"
"$redfox" run "$root/programs/tc.lql" --backend=cpu --profile "$tmp/dir" >"$tmp/out" 2>"$tmp/err"; rc=$?
[ "$rc" = 2 ] && grep -q "is a directory" "$tmp/err" && [ ! -s "$tmp/out" ] ||
  { echo "FAIL: --profile DIR: exit $rc: $(cat "$tmp/err")"; fail=1; }
[ -z "$(ls -A "$tmp/dir")" ] || { echo "FAIL: --profile DIR left files"; fail=1; }
# A failed run (too many iterations) still writes its trace, marked.
"$redfox" run "$root/programs/tc.lql" --backend=cpu --max-iterations 1 --profile "$tmp/f.json" >/dev/null 2>&1; rc=$?
[ "$rc" = 2 ] || { echo "FAIL: --max-iterations 1: exit $rc"; fail=1; }
python3 -c '
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
run = [e for e in ev if e["name"] == "run"]
assert len(run) == 1 and run[0]["args"]["ok"] is False, run' "$tmp/f.json" || { echo "FAIL: the trace of a failed run"; fail=1; }
ls -a "$tmp" | grep -q "json\." && { echo "FAIL: temporary files left: $(ls -a "$tmp")"; fail=1; }

[ "$fail" = 0 ] && echo ok
exit "$fail"
