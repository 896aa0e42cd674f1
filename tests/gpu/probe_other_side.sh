#!/usr/bin/env bash
# A set gather whose JOIN probes with a SORT's input left unsorted (the
# weaver's probe edge, rf_fused_probe_sort) while the JOIN's other side is a
# SORT left pending with many more rows (TPC-H q16's shape: 297K part rows
# against 8M partsupp rows at SF 10): the GPU sorts the few rows and probes
# with the many instead (backend_gpu.c probe_with_other_side). The answer
# must be the CPU backend's, with the choice off and unfused too, and the
# stats must show the choice taken (else the test proves nothing).
# The second program (wcoj_diff.py seed 41's program 5, the golden case
# cyclic_head_permuted, in the binary plan) has distinct few rows whose SORT
# the GPU leaves pending: they must still be sorted before they are searched
# (the GPU once answered 1 of its 3 rows), and its filter reads both sides.
#   tests/gpu/probe_other_side.sh REDFOX
set -euo pipefail
rf="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
cases="$(cd "$(dirname "$0")/../golden/cases" && pwd)"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
python3 - "$dir" <<'PY'
import random, sys
d = sys.argv[1]
rng = random.Random(11)
rows = set()
while len(rows) < 60000:
    rows.add((rng.randrange(200000), rng.randrange(5000)))
with open(f"{d}/big.tsv", "w") as f:
    for a, b in sorted(rows):
        f.write(f"{a}\t{b}\n")
with open(f"{d}/small.tsv", "w") as f:
    for b in range(5000):
        f.write(f"{rng.randrange(1000)}\t{b}\n")
with open(f"{d}/p.lql", "w") as f:
    f.write("""big(a, b) -> int32(a), int32(b).
small(c, b) -> int32(c), int32(b).
r(a, c) -> int32(a), int32(c).
@input(big, "big.tsv").
@input(small, "small.tsv").
@output(r).
r(a, c) <- big(a, b), small(c, b), c < 100.
""")
PY
cd "$dir"
cp "$cases/cyclic_head_permuted.lql" cyclic.lql
"$rf" run p.lql --backend=cpu --output cpu >/dev/null
"$rf" run cyclic.lql --backend=cpu --join=binary --output cpu_cyclic >/dev/null
fail=0
check() { # name, expected count of groups probing with the other side, env/args...
  local name="$1" want="$2"
  shift 2
  env "$@" --output "$name" --stats >/dev/null 2>"$name.stats" || { cat "$name.stats"; fail=1; return; }
  local ref=cpu/r.tsv out="$name/r.tsv"
  case "$name" in cyclic*) ref=cpu_cyclic/q.tsv out="$name/q.tsv" ;; esac
  if ! cmp -s "$ref" "$out"; then
    echo "probe_other_side: $name differs from the CPU backend's answer"
    fail=1
  fi
  local got
  got=$(grep -oE '[0-9]+ with the other input.s rows' "$name.stats" | grep -oE '^[0-9]+' || echo none)
  echo "$name: $(wc -l <"$out") rows, $got set gathers probing with the other input's rows"
  [ "$got" = "$want" ] || { echo "probe_other_side: $name: expected $want"; fail=1; }
}
check gpu 1 "$rf" run p.lql --backend=gpu
check gpu_off 0 RF_GPU_PROBE_OTHER_SIDE=off "$rf" run p.lql --backend=gpu
check gpu_unfused 0 "$rf" run p.lql --backend=gpu --no-fuse
check cyclic 1 "$rf" run cyclic.lql --backend=gpu --join=binary
check cyclic_off 0 RF_GPU_PROBE_OTHER_SIDE=off "$rf" run cyclic.lql --backend=gpu --join=binary
[ "$fail" = 0 ] && echo "probe_other_side ok"
exit "$fail"
