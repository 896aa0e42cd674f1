#!/usr/bin/env bash
# Rows of more than 64 key bits past the GPU sort's row limit: the sort
# reports the kernel out of memory and the runtime runs it in key-range
# parts (docs/distributed.md). RF_CUDA_WIDE_SORT_MAX lowers the limit (2^32)
# to a few thousand rows, so that a transitive closure over 40-bit vertex ids
# (two int64 columns: 80 key bits, sorted with a permutation) runs its
# kernels in parts; its answer must be the CPU backend's, and the run must
# have gone in parts (else the test proves nothing).
#   tests/gpu/wide_sort.sh REDFOX
set -euo pipefail
rf="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
python3 - "$dir" <<'PY'
import random, sys
d = sys.argv[1]
rng = random.Random(7)
ids = [rng.randrange(1 << 39, 1 << 40) for _ in range(300)]
with open(f"{d}/edge.tsv", "w") as f:
    for _ in range(700):
        f.write(f"{rng.choice(ids)}\t{rng.choice(ids)}\n")
with open(f"{d}/tc.lql", "w") as f:
    f.write("""edge(x, y) -> int64(x), int64(y).
path(x, y) -> int64(x), int64(y).
@input(edge, "edge.tsv").
@output(path).
path(x, y) <- edge(x, y).
path(x, z) <- path(x, y), edge(y, z).
""")
PY
cd "$dir"
cpu=$("$rf" run tc.lql --backend=cpu --count | grep '^# path')
RF_CUDA_WIDE_SORT_MAX=4000 "$rf" run tc.lql --backend=gpu --count --stats >gpu.txt 2>stats.txt ||
  { cat gpu.txt stats.txt; exit 1; }
gpu=$(grep '^# path' gpu.txt)
echo "cpu: $cpu"
echo "gpu: $gpu"
[ "$cpu" = "$gpu" ] || { echo "wide_sort: answers differ"; cat stats.txt; exit 1; }
grep "out of core:" stats.txt || true
grep -qE "out of core: [1-9][0-9]* kernel runs? in key-range parts" stats.txt ||
  { echo "wide_sort: nothing ran in parts"; cat stats.txt; exit 1; }
echo "wide_sort ok"
