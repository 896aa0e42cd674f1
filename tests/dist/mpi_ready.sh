# Sourced by the scripts that run redfox under mpirun (tests/dist/run_dist.sh,
# tests/tpch/run_tpch_mpi.sh) with $redfox set: sets $mpi, the launcher of
# three ranks, or exits 77 (ctest: skipped) with a message where mpirun or
# redfox's MPI module is missing, or mpirun cannot start three processes.
if ! command -v mpirun >/dev/null 2>&1; then
  echo "skipped: mpirun not found (apt-get install openmpi-bin libopenmpi-dev)"
  exit 77
fi
if [ ! -f "$(dirname "$redfox")/librf_comm_mpi.so" ]; then
  echo "skipped: redfox was built without MPI (no librf_comm_mpi.so beside it)"
  exit 77
fi
# Root in containers and CI; 3 ranks on fewer cores.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
mpi="mpirun -q -np 3 --oversubscribe --bind-to none"   # -q: no banner of its own on a failing rank
# A launcher that cannot start processes here (a container without the
# shared memory or the host name it wants) is the machine's, not redfox's.
if ! probe="$(timeout 60 $mpi true 2>&1)"; then
  echo "skipped: mpirun cannot start 3 processes here:"
  echo "$probe" | head -n 20
  exit 77
fi
