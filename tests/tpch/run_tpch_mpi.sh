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
redfox="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
source "$here/../dist/mpi_ready.sh"
exec bash "$here/run_tpch.sh" "$@" --backend cpu --launcher="$mpi"
