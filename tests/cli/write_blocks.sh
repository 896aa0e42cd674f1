#!/usr/bin/env bash
# Outputs of more than 65,536 rows are formatted in blocks on several
# threads and written in order (runtime/output.c, write_rows): the bytes
# must be those one thread writes (strings, int64, float64; TSV to stdout,
# to --output files, and a Soufflé program's delimited output).
# Usage: write_blocks.sh REDFOX
set -u
redfox="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
work=$(mktemp -d /tmp/rf_write_blocks.XXXXXX)
trap 'rm -rf "$work"' EXIT
fail=0
python3 - "$work/s.tsv" <<'PY'
import random, sys
random.seed(3)
with open(sys.argv[1], "w") as f:
    for i in range(200000):
        f.write("k%d_%s\t%d\t%.3f\n" % (i, "x" * random.randint(0, 30), random.randint(-10**12, 10**12),
                                        random.random() * 1000))
PY
cat > "$work/s.lql" <<'LQL'
s(x, n, f) -> string(x), int64(n), float64(f).
@input(s, "s.tsv").
o(x, n, f) -> string(x), int64(n), float64(f).
o(x, n, f) <- s(x, n, f), n > -500000000000.
@output(o).
LQL
cat > "$work/s.dl" <<'DL'
.decl s(x: symbol, n: number, f: float)
.input s(filename="s.tsv")
.decl o(x: symbol, n: number)
o(x, n) :- s(x, n, _), n > -500000000000.
.output o
DL
for t in 1 3; do
    (cd "$work" && timeout 120 "$redfox" run s.lql --backend=cpu --threads $t > "stdout$t" &&
     timeout 120 "$redfox" run s.lql --backend=cpu --threads $t --output "out$t" &&
     timeout 120 "$redfox" run s.dl -F . -D "souffle$t" -j $t) 2>"$work/err" ||
        { echo "FAIL --threads $t: $(head -2 "$work/err")"; fail=1; }
done
for f in stdout out1/o.tsv souffle1/o.csv; do
    g=${f//1/3}
    [ "$f" = stdout ] && f=stdout1 && g=stdout3
    if [ -s "$work/$f" ] && cmp -s "$work/$f" "$work/$g"; then
        echo "ok   $f: $(wc -l < "$work/$f") lines, the same bytes on 1 and 3 threads"
    else
        echo "FAIL $f and $g differ (or are empty)"
        fail=1
    fi
done
exit $fail
