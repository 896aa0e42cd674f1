#!/usr/bin/env bash
# TPC-H under MPI: run_tpch.sh with every query launched by `mpirun -np 3`
# (three ranks of the CPU backend; the answers gathered on rank 0 compared
# with DuckDB's as in one process).
#
#   tests/tpch/run_tpch_mpi.sh REDFOX SF [run_tpch.sh options ...]
#
# Exit 77 (skipped) where mpirun or redfox's MPI module is missing, or
# mpirun cannot start three processes here (tests/dist/run_dist.sh alike).
set -uo pipefail
[ $# -ge 2 ] || { echo "usage: tests/tpch/run_tpch_mpi.sh REDFOX SF [options]" >&2; exit 64; }
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
redfox="$1"
if ! command -v mpirun >/dev/null 2>&1; then
  echo "skipped: mpirun not found (apt-get install openmpi-bin libopenmpi-dev)"
  exit 77
fi
if [ ! -f "$(dirname "$redfox")/librf_comm_mpi.so" ]; then
  echo "skipped: redfox was built without MPI (no librf_comm_mpi.so beside it)"
  exit 77
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
mpi="mpirun -q -np 3 --oversubscribe --bind-to none"
if ! probe="$(timeout 60 $mpi true 2>&1)"; then
  echo "skipped: mpirun cannot start 3 processes here:"
  echo "$probe" | head -n 20
  exit 77
fi
exec bash "$here/run_tpch.sh" "$@" --backend cpu --launcher="$mpi"
