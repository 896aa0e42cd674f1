#!/usr/bin/env bash
# End-to-end checks of what the command line promises about data (issue
# "nothing lost, nothing clobbered"): output files written whole or not at
# all and never replacing a device, FIFO or symlink; .rfx files recognised
# by content and loadable from any folder; run-time errors that name their
# place; usage errors. Usage: integrity.sh REDFOX
set -u
redfox=$1
work=$(mktemp -d /tmp/rf_cli_integrity.XXXXXX)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
pass=0
fail=0

ok() { pass=$((pass + 1)); echo "ok   $1"; }
bad() { fail=$((fail + 1)); echo "FAIL $1"; [ -n "${2:-}" ] && printf '     %s\n' "$2"; }
# expect NAME STATUS CMD...: runs CMD, checks its exit status; stderr in $work/err.
expect() {
    local name=$1 want=$2
    shift 2
    "$@" >"$work/out" 2>"$work/err"
    local got=$?
    if [ "$got" = "$want" ]; then ok "$name (exit $got)"; else bad "$name: exit $got, expected $want" "$(head -c 600 "$work/err")"; fi
}
# has NAME FILE TEXT: FILE contains TEXT (fixed string).
has() { if grep -qF -- "$3" "$2"; then ok "$1"; else bad "$1: '$3' not in $2" "$(head -c 600 "$2")"; fi; }
lines() { wc -l <"$1" | tr -d ' '; }

cat >p.lql <<'EOF'
a(x) -> int32(x).
b(x) -> int32(x).
a(1). a(2).
b(x) <- a(x).
@output(a).
@output(b).
EOF

# 1. compile -o and --output never replace what is not a regular file.
ln -s /dev/full full.rfx
expect "compile -o a symlink to /dev/full fails" 2 "$redfox" compile p.lql -o full.rfx
has "the /dev/full error names the path and the reason" err "cannot write 'full.rfx': No space left on device"
if [ -L full.rfx ]; then ok "the symlink to /dev/full is still a symlink"; else bad "full.rfx was replaced"; fi
mkfifo fifo.rfx
(cat fifo.rfx >from_fifo) &
reader=$!
expect "compile -o a FIFO writes into it" 0 "$redfox" compile p.lql -o fifo.rfx
wait $reader
if [ -p fifo.rfx ]; then ok "the FIFO is still a FIFO"; else bad "fifo.rfx was replaced"; fi
if head -c 7 from_fifo | grep -q RFOXHIR; then ok "the FIFO's reader got the compiled program"; else bad "nothing came through the FIFO"; fi
n=$("$redfox" compile p.lql -o /proc/self/fd/1 | wc -c)
if [ "$n" -gt 8 ]; then ok "compile -o /proc/self/fd/1 writes to stdout ($n bytes)"; else bad "compile -o /proc/self/fd/1 printed $n bytes"; fi
echo old >target.rfx
ln -s target.rfx link.rfx
expect "compile -o a symlink to a regular file" 0 "$redfox" compile p.lql -o link.rfx
if [ -L link.rfx ] && head -c 7 target.rfx | grep -q RFOXHIR; then ok "the link stays, its target is replaced"; else bad "link.rfx or target.rfx wrong"; fi
mkdir out1
ln -s "$work/elsewhere.tsv" out1/a.tsv
echo old >elsewhere.tsv
expect "--output into a folder whose a.tsv is a symlink" 0 "$redfox" run p.lql --output out1
if [ -L out1/a.tsv ] && [ "$(cat elsewhere.tsv)" = "$(printf '1\n2')" ]; then ok "--output follows the symlink and keeps it"; else bad "out1/a.tsv link or target wrong"; fi
mkdir out2
ln -s /dev/null out2/a.tsv
expect "--output with a.tsv a symlink to /dev/null" 0 "$redfox" run p.lql --output out2
if [ -L out2/a.tsv ] && [ -c /dev/null ] && [ -f out2/b.tsv ]; then ok "/dev/null stays a device, b.tsv written"; else bad "out2 wrong"; fi

# 2. --output is whole or nothing.
mkdir -p out3/b.tsv
expect "--output with DIR/b.tsv a directory fails" 2 "$redfox" run p.lql --output out3
has "the error names the blocked file" err "cannot write 'out3/b.tsv': is a directory"
if [ "$(ls -A out3)" = "b.tsv" ]; then ok "nothing else was written to DIR"; else bad "DIR changed: $(ls -A out3 | tr '\n' ' ')"; fi

# 4. A .rfx runs from any working directory; inputs beside it travel with it.
mkdir -p proj/data
printf '1\t2\n2\t3\n' >proj/data/edge.tsv
cat >proj/tc.lql <<'EOF'
edge(x, y) -> int32(x), int32(y).
path(x, y) -> int32(x), int32(y).
@input(edge, "data/edge.tsv").
path(x, y) <- edge(x, y).
path(x, z) <- path(x, y), edge(y, z).
EOF
(cd proj/data && "$redfox" compile ../tc.lql -o ../tc.rfx) >/dev/null 2>&1
expect "a .rfx compiled in another folder runs from /" 0 sh -c "cd / && '$redfox' run '$work/proj/tc.rfx'"
has "its input was found" out "# path (3 tuples)"
mv proj moved
expect "a moved folder with its .rfx and data still runs" 0 "$redfox" run moved/tc.rfx
has "its input moved with it" out "# path (3 tuples)"

# 5. Compiled programs are recognised by content, and damage is one message.
: >empty.rfx
expect "an empty .rfx is an error" 2 "$redfox" run empty.rfx
has "one clear message for an empty .rfx" err "empty.rfx: empty file, not a compiled Red Fox program"
[ "$(lines err)" = 1 ] && ok "an empty .rfx: one line" || bad "empty .rfx: $(lines err) lines"
printf RFOX >four.lql
expect "a 4-byte RFOX file is a truncated .rfx, not Datalog" 2 "$redfox" run four.lql
has "the 4-byte file is called truncated" err "truncated .rfx file"
"$redfox" compile p.lql -o good.rfx >/dev/null 2>&1
cp good.rfx magic.rfx
printf 'X' | dd of=magic.rfx bs=1 seek=2 conv=notrunc 2>/dev/null
expect "a .rfx with a damaged magic byte" 2 "$redfox" run magic.rfx
has "one message for a damaged magic" err "not a compiled Red Fox program"
[ "$(lines err)" = 1 ] && ok "damaged magic: one line" || bad "damaged magic: $(lines err) lines"
cp good.rfx noext
expect "a compiled program without the .rfx name runs" 0 "$redfox" run noext
has "and gives the answers" out "# b (2 tuples)"
expect "explain --ir on a .rfx" 0 "$redfox" explain --ir good.rfx
has "explain --ir prints the kernels" out "b := "
expect "check on a .rfx validates it" 0 "$redfox" check good.rfx
expect "check on a damaged .rfx" 2 "$redfox" check magic.rfx
expect "explain --plan on a .rfx needs source" 64 "$redfox" explain --plan good.rfx
has "explain --plan says it needs source" err "explain --plan needs the program's source: 'good.rfx' is compiled"
expect "compile on a .rfx needs source" 64 "$redfox" compile good.rfx -o again.rfx
has "compile says the program is compiled" err "compile needs a source program: 'good.rfx' is already compiled"

# 8. Run-time errors name where they come from.
cat >dz.lql <<'EOF'
p(x, y) -> int32(x), int32(y).
q(x) -> int32(x).
p(1, 0). p(2, 1).
q(z) <- p(x, y), z = x / y.
EOF
expect "division by zero" 2 "$redfox" run dz.lql
has "division by zero names the rule's line" err "dz.lql:4:1: error: division by zero"
has "and shows the rule" err "dz.lql:4:1: note: rule q(z) <- p(x, y), z = (x / y)"
cat >fd.lql <<'EOF'
p(x, y) -> int32(x), int32(y).
f[x] = y -> int32(x), int32(y).
p(1, 3). p(1, 4).
f[x] = y <- p(x, y).
EOF
expect "functional dependency violated" 2 "$redfox" run fd.lql
has "the violation names the declaration and the values" err "fd.lql:2:1: error: functional dependency violated: f[1] has values 3 and 4"
has "and where the tuples come from" err "its tuples come from the rule at line 4"
cat >in.lql <<'EOF'
e(x) -> int32(x).
@input(e, "missing.tsv").
@output(e).
EOF
expect "a missing @input file" 2 "$redfox" run in.lql
has "names the @input line" err "in.lql:2:1: error: cannot open"
has "and says whose input it is" err "the @input file of 'e'"
expect "a missing --input file" 2 "$redfox" run in.lql --input e=nope.tsv
has "names the --input option" err "(from --input e=nope.tsv)"

# 12. Command line.
expect "a repeated --input is a usage error" 64 "$redfox" run in.lql --input e=a.tsv --input e=b.tsv
has "repeated --input message" err "--input: 'e' is given more than once"
has "usage follows" err "usage: redfox run"
expect "--input naming no predicate is a usage error" 64 "$redfox" run p.lql --input nope=x.tsv
has "unknown --input predicate" err "--input: unknown predicate 'nope'"
expect "--join with an unknown mode is a usage error" 64 "$redfox" run p.lql --join=sideways
has "--join says what it expects" err "--join expects binary, wcoj or auto, not 'sideways'"
expect "explain --join with an unknown mode" 64 "$redfox" explain --plan p.lql --join=
has "explain --join says what it expects" err "--join expects binary, wcoj or auto, not ''"
expect "--print naming no predicate is a usage error" 64 "$redfox" run p.lql --print nope
has "usage after --print" err "usage: redfox run"
expect "--print on a .rfx naming no predicate" 64 "$redfox" run good.rfx --print nope
expect "compile -o into a missing folder" 2 "$redfox" compile p.lql -o no/such/dir/x.rfx
has "compile -o quotes the path" err "cannot write 'no/such/dir/x.rfx': No such file or directory"
cat >dup.lql <<'EOF'
e(x) -> int32(x).
@input(e, "a.tsv").
@input(e, "b.tsv").
EOF
expect "duplicate @input" 1 "$redfox" check dup.lql
has "duplicate @input error" err "dup.lql:3:8: error: duplicate @input for 'e'"
has "points at the first" err "dup.lql:2:1: note: the first @input for 'e' is here"

# 13. Bounded loops and progress.
awk 'BEGIN { for (i = 0; i < 3000; i++) printf "%d\t%d\n", i, i + 1 }' >chain.tsv
cat >reach.lql <<'EOF'
e(x, y) -> int32(x), int32(y).
reach(x) -> int32(x).
@input(e, "chain.tsv").
reach(0).
reach(y) <- reach(x), e(x, y).
EOF
expect "--max-iterations stops a long loop" 2 "$redfox" run reach.lql --max-iterations 100
has "the loop bound is named" err "did not reach a fixpoint within 100 iterations (--max-iterations 100)"
expect "--max-iterations large enough" 0 "$redfox" run reach.lql --max-iterations 5000 --count
has "the answer is complete" out "# reach (3001 tuples"
expect "--max-iterations 0 is a usage error" 64 "$redfox" run reach.lql --max-iterations 0
awk 'BEGIN { for (i = 0; i < 40000; i++) printf "%d\t%d\n", i, i + 1 }' >chain.tsv
t0=$(date +%s%N)
expect "--progress with stderr in a file" 0 "$redfox" run reach.lql --progress --count --backend=cpu
ms=$((($(date +%s%N) - t0) / 1000000))
# Progress starts after a loop's first second; a faster run shows none.
if [ "$ms" -ge 1200 ]; then has "progress lines appear in a file (run took ${ms} ms)" err "iteration"
else echo "skip progress lines: the loop took only ${ms} ms"; fi
expect "without --progress, no progress in a file" 0 "$redfox" run reach.lql --count --backend=cpu
if grep -q iteration err; then bad "progress printed to a file without --progress"; else ok "no progress in a file by default"; fi

# 9. A .rfx compiled with fusion keeps predicates inside groups (Kernel
# Weaver across strata): --no-fuse, and --print of such a predicate (which
# then runs the program unfused), give what the source gives.
cat >chain.lql <<'EOF'
t(id, v) -> int64(id), int64(v).
s1(id, v) -> int64(id), int64(v).
s2(id, v) -> int64(id), int64(v).
t(1, 5). t(2, 50). t(3, 500). t(4, 5000).
@output(s2).
s1(id, v) <- t(id, v), v >= 10.
s2(id, v) <- s1(id, v), v < 1000.
EOF
expect "compile a chain across strata" 0 "$redfox" compile chain.lql -o chain.rfx
expect "explain the compiled chain" 0 "$redfox" explain --ir chain.rfx
has "s1 lives inside the group" out "s1(int64, int64) sorted, pred s1, internal"
expect "run the fused .rfx" 0 "$redfox" run chain.rfx --backend=cpu
cp out fused.out
expect "run the .rfx with --no-fuse" 0 "$redfox" run chain.rfx --backend=cpu --no-fuse
if cmp -s out fused.out && grep -q "^3	500$" out; then ok "fused and unfused .rfx agree"; else bad "fused and unfused .rfx differ" "$(cat out fused.out)"; fi
expect "--print a predicate inside a group of the .rfx" 0 "$redfox" run chain.rfx --backend=cpu --print s1
has "it is printed whole" out "# s1 (3 tuples)"
has "and the output too" out "# s2 (2 tuples)"

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
