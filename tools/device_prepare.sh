#!/usr/bin/env bash
# Prepares, on this machine, what a call of the device tool (the GPU
# machine: no package registry, no ../shared) carries in its `carry` list,
# all under the git-ignored .data/:
#   .data/debs     re2c, lemon, CUnit, SQLite .debs (tools/device_build.sh unpacks them)
#   .data/whl      the tpchgen-cli wheel (tools/device_check.sh makes SF 10 with it)
#   .data/graphs   the shared graphs the recursion benchmark reads (a subset)
#   .data/tpch     TPC-H SF 0.01 and DuckDB's answers (tests/tpch/run_tpch.sh)
# Idempotent: what is there is kept. Prints the carry list at the end.
#
#   tools/device_prepare.sh [GRAPH ...]   (default: the recursion benchmark's eight,
#                                          device_check.sh runs-apart's three and
#                                          wcoj-small's other four)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
graphs=("$@")
[ ${#graphs[@]} -gt 0 ] || graphs=(OL.cedge cal.cedge TG.cedge SF.cedge p2p-Gnutella09 p2p-Gnutella04 CA-HepTh fe_body
                                   usroads usroads-48 p2p-Gnutella31 ego-Facebook loc-Brightkite wiki-Vote
                                   delaunay_n16)
mkdir -p .data/debs .data/whl .data/graphs
if ! ls .data/debs/*.deb >/dev/null 2>&1; then
  (cd .data/debs && apt-get download re2c lemon libcunit1 libcunit1-dev libsqlite3-dev sqlite3) >/dev/null
fi
if ! ls .data/whl/tpchgen_cli-*.whl >/dev/null 2>&1; then
  python3 -m pip download -q --no-deps --only-binary=:all: tpchgen-cli==4.0.0 -d .data/whl
fi
for g in "${graphs[@]}"; do
  src="$root/../shared/data/graphs/$g.tsv"
  [ -f ".data/graphs/$g.tsv" ] || { [ -f "$src" ] && cp "$src" .data/graphs/; } ||
    echo "device_prepare: no $src" >&2
done
[ -f "$root/../shared/data/graphs/README.md" ] && cp "$root/../shared/data/graphs/README.md" .data/graphs/
tools/tpch_data.sh 0.01
ref=.data/tpch/ref-sf0.01
if [ ! -f "$ref/q22.tsv" ]; then
  "${RF_TPCH_VENV:-$root/.venv-tpch}/bin/python3" tools/tpch_reference.py --data .data/tpch/sf0.01 --out "$ref"
fi
du -sh .data/debs .data/whl .data/graphs .data/tpch >&2
echo 'carry: [".data/debs", ".data/whl", ".data/graphs", ".data/tpch"]'
