/* The MPI communicator (dist_comm.h), built as the shared module
 * librf_comm_mpi.so that a distributed run loads with dlopen: the one
 * place Red Fox calls MPI. Words travel as MPI_UINT64_T, so the int counts
 * of MPI-3 allow 2^31 - 1 words (16 GiB) per peer and per rank; beyond
 * that a call fails with a message rather than truncate. */
#include "../dist_comm.h"

#include <mpi.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct mpi_impl {
    MPI_Comm comm;
} mpi_impl;

static bool fail(char *err, size_t cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, cap, fmt, ap);
    va_end(ap);
    return false;
}

static bool mpi_failed(int rc, const char *what, char *err, size_t cap)
{
    if (rc == MPI_SUCCESS)
        return false;
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS)
        snprintf(text, sizeof text, "error %d", rc);
    fail(err, cap, "MPI: %s: %s", what, text);
    return true;
}

static bool comm_alltoallv(rf_comm *c, const uint64_t *send, const size_t *sendcounts, uint64_t **recv,
                           size_t *recvcap, size_t *recvcounts, char *err, size_t cap)
{
    mpi_impl *im = c->impl;
    int n = c->size;
    uint64_t *counts = calloc((size_t)2 * (size_t)n, sizeof *counts);
    int *sc = calloc((size_t)4 * (size_t)n, sizeof *sc);
    if (!counts || !sc) {
        free(counts);
        free(sc);
        return fail(err, cap, "out of memory");
    }
    int *sd = sc + n, *rc = sc + 2 * n, *rd = sc + 3 * n;
    for (int d = 0; d < n; d++)
        counts[d] = sendcounts[d];
    bool ok = !mpi_failed(MPI_Alltoall(counts, 1, MPI_UINT64_T, counts + n, 1, MPI_UINT64_T, im->comm),
                          "all-to-all of counts", err, cap);
    uint64_t sent = 0, got = 0;
    for (int d = 0; ok && d < n; d++) {
        if (sent > INT32_MAX || got > INT32_MAX || counts[d] > INT32_MAX || counts[n + d] > INT32_MAX)
            ok = fail(err, cap, "an exchange of more than 2^31 words (16 GiB) per rank is not supported");
        sd[d] = (int)sent;
        rd[d] = (int)got;
        sc[d] = (int)counts[d];
        rc[d] = (int)counts[n + d];
        sent += counts[d];
        got += counts[n + d];
    }
    if (ok && (sent > INT32_MAX || got > INT32_MAX))
        ok = fail(err, cap, "an exchange of more than 2^31 words (16 GiB) per rank is not supported");
    uint64_t *in = *recv;
    if (ok && (!in || *recvcap < got + 1)) {   /* a larger buffer (a quarter to spare) */
        size_t want = (size_t)(got + 1 + got / 4);
        free(in);
        *recv = NULL;
        *recvcap = 0;
        in = malloc(want * sizeof *in);
        if (!in)
            ok = fail(err, cap, "out of memory receiving %llu words", (unsigned long long)got);
        else
            *recvcap = want;
    }
    if (ok)
        ok = !mpi_failed(MPI_Alltoallv(send, sc, sd, MPI_UINT64_T, in, rc, rd, MPI_UINT64_T, im->comm),
                         "all-to-all", err, cap);
    if (ok) {
        for (int s = 0; s < n; s++)
            recvcounts[s] = counts[n + s];
    }
    *recv = in;
    free(counts);
    free(sc);
    return ok;
}

static bool comm_allreduce(rf_comm *c, uint64_t *vals, int n, rf_comm_op op, char *err, size_t cap)
{
    mpi_impl *im = c->impl;
    MPI_Op mop = op == RF_COMM_SUM ? MPI_SUM : op == RF_COMM_MAX ? MPI_MAX : MPI_MIN;
    return !mpi_failed(MPI_Allreduce(MPI_IN_PLACE, vals, n, MPI_UINT64_T, mop, im->comm), "all-reduce", err, cap);
}

static bool comm_bcast(rf_comm *c, void *buf, size_t len, int root, char *err, size_t cap)
{
    mpi_impl *im = c->impl;
    if (len > INT32_MAX)
        return fail(err, cap, "a broadcast of more than 2 GiB is not supported");
    return !mpi_failed(MPI_Bcast(buf, (int)len, MPI_BYTE, root, im->comm), "broadcast", err, cap);
}

static void comm_abort(rf_comm *c, int code)
{
    mpi_impl *im = c->impl;
    fflush(stdout);
    fflush(stderr);
    MPI_Abort(im->comm, code);
    exit(code);   /* MPI_Abort does not return; this is for the compiler */
}

static void comm_close(rf_comm *c)
{
    mpi_impl *im = c->impl;
    MPI_Comm_free(&im->comm);
    MPI_Finalize();
    free(im);
    free(c);
}

rf_comm *rf_comm_mpi_module_open(char *err, size_t cap);

rf_comm *rf_comm_mpi_module_open(char *err, size_t cap)
{
    int inited = 0;
    MPI_Initialized(&inited);
    if (!inited && MPI_Init(NULL, NULL) != MPI_SUCCESS) {
        fail(err, cap, "MPI_Init failed");
        return NULL;
    }
    rf_comm *c = calloc(1, sizeof *c);
    mpi_impl *im = calloc(1, sizeof *im);
    if (!c || !im) {
        free(c);
        free(im);
        fail(err, cap, "out of memory");
        return NULL;
    }
    /* A communicator of our own, so that errors return codes (the default
     * handler aborts the job without saying which call failed). */
    MPI_Comm_dup(MPI_COMM_WORLD, &im->comm);
    MPI_Comm_set_errhandler(im->comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(im->comm, &c->rank);
    MPI_Comm_size(im->comm, &c->size);
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Get_library_version(version, &len);
    version[strcspn(version, ",\n")] = '\0';
    version[sizeof c->name - 8] = '\0';   /* "mpi (" + ")" fit */
    snprintf(c->name, sizeof c->name, "mpi (%.56s)", version);
    c->alltoallv = comm_alltoallv;
    c->allreduce_u64 = comm_allreduce;
    c->bcast = comm_bcast;
    c->abort = comm_abort;
    c->close = comm_close;
    c->impl = im;
    return c;
}
