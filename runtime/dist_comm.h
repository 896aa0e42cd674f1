/* The communicator the distribution layer (dist_backend.c) exchanges
 * through: one process per rank, every call collective (every rank calls
 * it, in the same order). Only what the layer needs: all-to-all of word
 * buffers, all-reduce of u64, broadcast, abort. The MPI implementation
 * (runtime/mpi/comm_mpi.c) is a shared module loaded with dlopen only by a
 * distributed run, so that `redfox` neither links nor loads libmpi
 * otherwise. The NCCL implementation (runtime/nccl/comm_nccl.c,
 * librf_comm_nccl.so) serves `redfox run --gpus N`: one process per GPU,
 * the words crossing through device buffers. */
#ifndef RF_DIST_COMM_H
#define RF_DIST_COMM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum rf_comm_op { RF_COMM_SUM, RF_COMM_MAX, RF_COMM_MIN } rf_comm_op;

typedef struct rf_comm rf_comm;
struct rf_comm {
    int rank, size;
    char name[64];           /* "mpi (Open MPI v4.1.4)" */
    /* All-to-all of 64-bit words: send holds the words for rank 0, then
     * rank 1, ... (sendcounts[d] words for rank d). *recv, NULL or a
     * malloc'd buffer of *recvcap words from an earlier call (kept, so
     * that a loop's exchanges do not fault in fresh pages every time),
     * gets the words from rank 0, then rank 1, ..., replaced by a larger
     * buffer when they do not fit (the caller frees it); recvcounts[s]
     * the words from rank s. False with a message in err (then the run
     * cannot go on: the caller aborts). */
    bool (*alltoallv)(rf_comm *c, const uint64_t *send, const size_t *sendcounts, uint64_t **recv,
                      size_t *recvcap, size_t *recvcounts, char *err, size_t errcap);
    /* Optional (NULL: host words only; the NCCL communicator has it): an
     * all-to-all of 64-bit words in the memory of the CUDA device the
     * communicator was opened on. send[d] holds sendcounts[d] words for
     * rank d, recv[s] gets recvcounts[s] words from rank s (the caller
     * knows them: an allreduce_u64 of the count matrix); a rank's own
     * entries are ignored. The device work that wrote send must be
     * complete; returns when every receive has landed. */
    bool (*alltoallv_device)(rf_comm *c, const uint64_t *const *send, const size_t *sendcounts,
                             uint64_t *const *recv, const size_t *recvcounts, char *err, size_t errcap);
    /* vals[0..n) combined elementwise over all ranks, in place. */
    bool (*allreduce_u64)(rf_comm *c, uint64_t *vals, int n, rf_comm_op op, char *err, size_t errcap);
    /* len bytes of buf from rank root to every rank. */
    bool (*bcast)(rf_comm *c, void *buf, size_t len, int root, char *err, size_t errcap);
    /* Ends every rank's process with exit status code (never returns). */
    void (*abort)(rf_comm *c, int code);
    /* Collective: leaves the communicator (MPI_Finalize) and frees c. */
    void (*close)(rf_comm *c);
    void *impl;
};

/* Whether this process was started by an MPI launcher (mpirun/mpiexec of
 * Open MPI, MPICH, or a PMIx launcher): the environment they set. */
bool rf_comm_launched_by_mpi(void);

/* The MPI communicator: loads the module librf_comm_mpi.so ($RF_COMM_MPI_LIB,
 * else beside the running executable, else ../lib/redfox/ from it) and
 * initialises MPI. NULL with a message in err when the module or MPI is
 * missing (built without MPI: CMake says so). */
rf_comm *rf_comm_mpi_open(char *err, size_t errcap);

/* The entry point the module exports (what rf_comm_mpi_open looks up). */
typedef rf_comm *(*rf_comm_mpi_open_fn)(char *err, size_t errcap);
#define RF_COMM_MPI_ENTRY "rf_comm_mpi_module_open"

/* The NCCL communicator (librf_comm_nccl.so: $RF_COMM_NCCL_LIB, else
 * found as the MPI module is). rf_comm_nccl_unique_id fills the len-byte
 * id that every rank's rf_comm_nccl_open needs (made by one rank, handed
 * to the others: cli/main.c's launcher does it through pipes); open joins
 * rank `rank` of `size` on CUDA device `device`. */
#define RF_COMM_NCCL_ID_BYTES 128
bool rf_comm_nccl_unique_id(void *id, size_t len, char *err, size_t errcap);
rf_comm *rf_comm_nccl_open(int rank, int size, const void *id, size_t len, int device, char *err, size_t errcap);
typedef bool (*rf_comm_nccl_id_fn)(void *id, size_t len, char *err, size_t errcap);
typedef rf_comm *(*rf_comm_nccl_open_fn)(int rank, int size, const void *id, size_t len, int device, char *err,
                                         size_t errcap);
#define RF_COMM_NCCL_ID_ENTRY "rf_comm_nccl_module_unique_id"
#define RF_COMM_NCCL_ENTRY "rf_comm_nccl_module_open"

#endif
