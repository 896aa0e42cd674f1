#!/usr/bin/env bash
# End-to-end TPC-H test: runs the 22 queries of programs/tpch/ with Red Fox
# and compares the answers with DuckDB's on the same data.
#
#   tests/tpch/run_tpch.sh REDFOX SF [--backend cpu|gpu] [--queries 1,3,..] [--no-fuse]
#                          [--run-arg=ARG ...] [--launcher='mpirun -np 3 ...']
#
# --launcher's words come before every `REDFOX run` (a distributed run:
# the answers, gathered on rank 0, must be the same).
# 1. the venv of the TPC-H tools (tools/tpch_env.sh; PyPI on first use),
# 2. the data at scale factor SF (tools/tpch_data.sh SF -> .data/tpch/sfSF/),
# 3. DuckDB's reference answers (tools/tpch_reference.py -> .data/tpch/ref-sfSF/,
#    computed once: skipped when that folder already holds all of them),
# 4. each query, `REDFOX run programs/tpch/qNN.lql --input TABLE=...tbl ...
#    --output DIR`, with an --input for each table the program declares,
# 5. tests/tpch/compare.py, whose last line `N passed, M failed` ends the
#    output. Exit status 1 when a query fails to run or to match.
# Where no venv exists and PyPI cannot be reached, the test cannot get its
# tools: it says so and exits 0 (skipped). Everything generated is under
# .data/ and .venv-tpch/ (git-ignored) or a temporary folder.
# RF_TPCH_TIMEOUT: seconds per query (default 300).
set -euo pipefail
export LC_ALL=C

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
usage() {
  echo "usage: tests/tpch/run_tpch.sh REDFOX SF [--backend cpu|gpu] [--queries 1,3,..] [--no-fuse] [--run-arg=ARG ...]" >&2
  echo "       [--launcher='mpirun -np 3']" >&2
  exit 64
}
[ $# -ge 2 ] || usage
redfox="$1"
sf_arg="$2"
shift 2
backend=()
queries=""
launcher=()
while [ $# -gt 0 ]; do
  case "$1" in
    --backend) [ $# -ge 2 ] || usage; backend=("--backend=$2"); shift 2 ;;
    --backend=*) backend=("$1"); shift ;;
    --queries) [ $# -ge 2 ] || usage; queries="$2"; shift 2 ;;
    --queries=*) queries="${1#--queries=}"; shift ;;
    --no-fuse) backend+=("--no-fuse"); shift ;;
    --run-arg=*) backend+=("${1#--run-arg=}"); shift ;;   # passed to every `redfox run`
    --launcher=*) read -r -a launcher <<< "${1#--launcher=}"; shift ;;   # words before every `redfox run`
    *) usage ;;
  esac
done
case "$redfox" in /*) ;; *) redfox="$PWD/$redfox" ;; esac
[ -x "$redfox" ] || { echo "tpch: error: $redfox is not an executable" >&2; exit 64; }
if ! [[ "$sf_arg" =~ ^([0-9]+\.?[0-9]*|\.[0-9]+)$ ]]; then
  echo "tpch: error: scale factor must be a positive number, got '$sf_arg'" >&2
  exit 64
fi
sf="$(printf '%g' "$sf_arg")"
venv="${RF_TPCH_VENV:-$root/.venv-tpch}"
data="$root/.data/tpch/sf$sf"
ref="$root/.data/tpch/ref-sf$sf"
timeout_s="${RF_TPCH_TIMEOUT:-300}"

if [ -n "$queries" ]; then
  nums=()
  IFS=',' read -r -a parts <<< "$queries"
  for q in "${parts[@]}"; do
    q="${q#q}"
    [[ "$q" =~ ^[0-9]+$ ]] && [ "$((10#$q))" -ge 1 ] && [ "$((10#$q))" -le 22 ] || usage
    nums+=("$(printf '%02d' "$((10#$q))")")
  done
else
  nums=(01 02 03 04 05 06 07 08 09 10 11 12 13 14 15 16 17 18 19 20 21 22)
fi

t_start="$(date +%s.%N)"
elapsed() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }

# Data and reference answers already complete (stamped data, all answer
# files): nothing to install or generate, so no venv is needed (a machine
# without PyPI, such as the GPU machine, runs on carried .data/tpch).
have_ref=1
for q in 01 02 03 04 05 06 07 08 09 10 11 12 13 14 15 16 17 18 19 20 21 22; do
  [ -f "$ref/q$q.tsv" ] || have_ref=0
done
[ -f "$ref/columns.tsv" ] || have_ref=0
ready=0
[ "$have_ref" = 1 ] && [ -f "$data/.tpch-complete" ] && ready=1

# 1. The tools' venv. Without one, PyPI must be reachable (pip's index, or
# $PIP_INDEX_URL); otherwise the test cannot run here and is skipped.
if [ "$ready" = 0 ] && [ ! -x "$venv/bin/python3" ]; then
  index="${PIP_INDEX_URL:-https://pypi.org/simple}"
  if ! python3 - "$index" <<'EOF' >/dev/null 2>&1
import sys, urllib.request
urllib.request.urlopen(sys.argv[1].rstrip("/") + "/duckdb/", timeout=15).read(1)
EOF
  then
    echo "tpch: SKIPPED: no venv at $venv and the package index $index cannot be reached" \
         "(tools/tpch_env.sh needs it once to install tpchgen-cli and duckdb)"
    exit 0
  fi
fi
if [ "$ready" = 0 ]; then
  "$root/tools/tpch_env.sh"
  # 2. Data.
  "$root/tools/tpch_data.sh" "$sf"
fi
py="$venv/bin/python3"

# 3. Reference answers, once (written aside and moved into place whole).
if [ "$have_ref" = 1 ]; then
  echo "tpch: reference answers in $ref" >&2
else
  echo "tpch: computing DuckDB's reference answers into $ref" >&2
  rm -rf "$ref.partial"
  "$py" "$root/tools/tpch_reference.py" --data "$data" --out "$ref.partial" >&2
  rm -rf "$ref"
  mv "$ref.partial" "$ref"
fi
t_setup="$(elapsed "$t_start")"

# 4. The queries.
tmp="$(mktemp -d "${TMPDIR:-/tmp}/redfox-tpch.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/out"
tables="region|nation|part|supplier|partsupp|customer|orders|lineitem"
run_failed=0
t_queries="$(date +%s.%N)"
for q in "${nums[@]}"; do
  prog="$root/programs/tpch/q$q.lql"
  if [ ! -f "$prog" ]; then
    echo "q$q: error: $prog not found"
    run_failed=$((run_failed + 1))
    continue
  fi
  # A table's declaration starts a line: `lineitem(l_orderkey, ...`.
  inputs=()
  while IFS= read -r t; do
    inputs+=(--input "$t=$data/$t.tbl")
  done < <(grep -oE "^($tables)\(" "$prog" | tr -d '(' | sort -u)
  t0="$(date +%s.%N)"
  status=0
  timeout "$timeout_s" ${launcher[@]+"${launcher[@]}"} "$redfox" run "$prog" "${inputs[@]}" "${backend[@]}" \
    --output "$tmp/q$q" >"$tmp/q$q.stdout" 2>"$tmp/q$q.stderr" || status=$?
  dt="$(elapsed "$t0")"
  if [ "$status" = 0 ] && [ -f "$tmp/q$q/q$q.tsv" ]; then
    mv "$tmp/q$q/q$q.tsv" "$tmp/out/q$q.tsv"
    printf 'q%s: ran in %s s (%s rows)\n' "$q" "$dt" "$(wc -l < "$tmp/out/q$q.tsv" | tr -d ' ')"
  else
    run_failed=$((run_failed + 1))
    if [ "$status" = 124 ]; then
      printf 'q%s: error: no answer after %s s (RF_TPCH_TIMEOUT)\n' "$q" "$timeout_s"
    elif [ "$status" = 0 ]; then
      printf 'q%s: error: exit 0 but no q%s.tsv was written\n' "$q" "$q"
    else
      printf 'q%s: error: exit %s after %s s:\n' "$q" "$status" "$dt"
    fi
    head -n 20 "$tmp/q$q.stderr" | sed 's/^/    /'
  fi
done
echo "tpch: SF $sf${launcher:+ under ${launcher[*]}}${backend:+ ${backend[*]}}: setup $t_setup s, queries $(elapsed "$t_queries") s," \
     "total $(elapsed "$t_start") s; $run_failed of ${#nums[@]} queries did not run"

# 5. Compare (its last line: N passed, M failed).
qlist="$(IFS=,; echo "${nums[*]}")"
status=0
python3 "$root/tests/tpch/compare.py" "$ref" "$tmp/out" --queries "$qlist" || status=$?
if [ "$status" != 0 ] || [ "$run_failed" != 0 ]; then
  exit 1
fi
