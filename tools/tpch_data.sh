#!/usr/bin/env bash
# Generates the 8 TPC-H tables at scale factor SF as dbgen-format .tbl files
# (fields separated by '|', a '|' after the last field, no header, one file
# per table) with tpchgen-cli from the venv of tools/tpch_env.sh:
#   tools/tpch_data.sh SF [DIR]        DIR defaults to .data/tpch/sf$SF/
# Skips the work when DIR already holds a complete set for this SF (a stamp
# file written only after the files were checked). Checks every line of every
# file: the table's number of fields, the trailing '|', no '\r'; and the row
# counts of the tables whose size the spec fixes (all but lineitem).
# Sizes: SF 1 is about 1.1 GB, SF 10 about 11 GB.
set -euo pipefail
export LC_ALL=C

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [ $# -lt 1 ] || [ $# -gt 2 ]; then
  echo "usage: tools/tpch_data.sh SF [DIR]" >&2
  exit 64
fi
if ! [[ "$1" =~ ^([0-9]+\.?[0-9]*|\.[0-9]+)$ ]] || ! awk -v s="$1" 'BEGIN { exit !(s + 0 > 0) }'; then
  echo "tpch_data: error: scale factor must be a positive number, got '$1'" >&2
  exit 64
fi
sf="$(printf '%g' "$1")"
dir="${2:-$root/.data/tpch/sf$sf}"
tables=(region nation supplier customer part partsupp orders lineitem)
gen_version="tpchgen-cli 4.0.0"
stamp="$dir/.tpch-complete"

if [ -f "$stamp" ] && [ "$(head -n 1 "$stamp")" = "$gen_version sf=$sf" ]; then
  ok=1
  for t in "${tables[@]}"; do [ -f "$dir/$t.tbl" ] || ok=0; done
  if [ "$ok" = 1 ]; then
    echo "tpch_data: $dir already holds SF $sf" >&2
    exit 0
  fi
fi

"$root/tools/tpch_env.sh"
venv="${RF_TPCH_VENV:-$root/.venv-tpch}"
gen="$venv/bin/tpchgen-cli"

echo "tpch_data: generating SF $sf into $dir" >&2
mkdir -p "$dir"
rm -f "$stamp"
part="$dir/.partial"
rm -rf "$part"
mkdir -p "$part"
t0="$(date +%s.%N)"
"$gen" tbl --scale-factor "$sf" --output-dir "$part" --quiet --no-progress
t1="$(date +%s.%N)"

# Fields per table (the trailing '|' makes awk see one more, empty, field).
declare -A nfields=([region]=3 [nation]=4 [supplier]=7 [customer]=8 [part]=9
                    [partsupp]=5 [orders]=9 [lineitem]=16)
# Rows per table the spec fixes: base x SF (region and nation fixed).
declare -A base=([region]=0 [nation]=0 [supplier]=10000 [customer]=150000
                 [part]=200000 [partsupp]=800000 [orders]=1500000)
pids=()
for t in "${tables[@]}"; do
  f="$part/$t.tbl"
  [ -f "$f" ] || { echo "tpch_data: error: tpchgen-cli wrote no $t.tbl" >&2; exit 1; }
  awk -F'|' -v n="${nfields[$t]}" -v f="$t.tbl" '
    NF != n + 1 || $NF != "" || /\r/ {
      printf "tpch_data: error: %s line %d is not dbgen format: %s\n", f, NR, $0 > "/dev/stderr"
      bad = 1; exit 1 }
    END { if (!bad) print NR > (FILENAME ".rows") }' "$f" &
  pids+=($!)
done
fail=0
for p in "${pids[@]}"; do wait "$p" || fail=1; done
[ "$fail" = 0 ] || exit 1
summary=""
for t in "${tables[@]}"; do
  rows="$(cat "$part/$t.tbl.rows")"
  rm -f "$part/$t.tbl.rows"
  want=""
  case "$t" in
    region) want=5 ;;
    nation) want=25 ;;
    lineitem) ;;
    *) want="$(awk -v b="${base[$t]}" -v s="$sf" 'BEGIN { printf "%d", b * s + 0.5 }')" ;;
  esac
  if [ -n "$want" ] && [ "$rows" != "$want" ]; then
    echo "tpch_data: error: $t.tbl has $rows rows, SF $sf wants $want" >&2
    exit 1
  fi
  [ "$rows" -gt 0 ] || { echo "tpch_data: error: $t.tbl is empty" >&2; exit 1; }
  summary+="$t $rows"$'\n'
done
for t in "${tables[@]}"; do mv -f "$part/$t.tbl" "$dir/$t.tbl"; done
rmdir "$part"
t2="$(date +%s.%N)"
{ echo "$gen_version sf=$sf"; printf '%s' "$summary"; } >"$stamp"
awk -v a="$t0" -v b="$t1" -v c="$t2" -v d="$dir" 'BEGIN {
  printf "tpch_data: done: %s (generate %.1f s, check %.1f s)\n", d, b - a, c - b > "/dev/stderr" }'
