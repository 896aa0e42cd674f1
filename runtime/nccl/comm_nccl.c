/* The NCCL communicator (dist_comm.h), built as the shared module
 * librf_comm_nccl.so that a run launched with `redfox run --gpus N` loads
 * with dlopen in each of its N processes, one per GPU (cli/main.c starts
 * them and hands rank 0's NCCL id to the others through pipes). The
 * distribution layer exchanges host word buffers; here they cross through
 * device buffers: each call copies its words to the device of this rank,
 * runs the NCCL collective (grouped send/receive for the all-to-all,
 * all-reduce, broadcast) and copies the result back. That is two PCIe
 * crossings more than an exchange of the GPU backend's own device buffers
 * would need, but it serves the layer as it stands, whose moves go through
 * host tables for either backend (docs/distributed.md). */
#include "../dist_comm.h"

#include <cuda_runtime_api.h>
#include <nccl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct nccl_impl {
    ncclComm_t comm;
    cudaStream_t stream;
    int device;
    void *buf;               /* device scratch: send then receive words */
    size_t buf_bytes;
    /* ncclCommInitRank and the first connection to each peer take about
     * 0.8 s (NCCL loads its kernels, then sets up its channels at the
     * first send): they run on a thread of their own while the rank
     * compiles the program and loads its inputs; every call waits for it
     * first (ready). */
    pthread_t init_thread;
    bool init_pending;
    bool init_tried;
    bool init_ok;
    char init_err[256];
    ncclUniqueId id;
    int rank, size;
} nccl_impl;

static bool fail(char *err, size_t cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, cap, fmt, ap);
    va_end(ap);
    return false;
}

static bool cuda_failed(cudaError_t e, const char *what, char *err, size_t cap)
{
    if (e == cudaSuccess)
        return false;
    fail(err, cap, "CUDA (NCCL communicator): %s: %s", what, cudaGetErrorString(e));
    return true;
}

static bool nccl_failed(ncclResult_t r, const char *what, char *err, size_t cap)
{
    if (r == ncclSuccess)
        return false;
    fail(err, cap, "NCCL: %s: %s", what, ncclGetErrorString(r));
    return true;
}

/* The device scratch, at least bytes (grown, never shrunk: exchanges of a
 * loop are alike in size). */
static void *scratch(nccl_impl *im, size_t bytes, char *err, size_t cap)
{
    if (bytes <= im->buf_bytes)
        return im->buf;
    if (im->buf)
        cudaFree(im->buf);
    im->buf = NULL;
    im->buf_bytes = 0;
    size_t want = bytes + bytes / 4 + 64;
    if (cuda_failed(cudaMalloc(&im->buf, want), "scratch buffer", err, cap))
        return NULL;
    im->buf_bytes = want;
    return im->buf;
}

static bool sync_stream(nccl_impl *im, const char *what, char *err, size_t cap)
{
    return !cuda_failed(cudaStreamSynchronize(im->stream), what, err, cap);
}

/* The communicator made and every peer connected (one word each way, so
 * that NCCL sets up its channels now rather than in the first real
 * exchange). Runs on the init thread. */
static void *init_main(void *arg)
{
    nccl_impl *im = arg;
    im->init_tried = true;
    char *err = im->init_err;
    size_t cap = sizeof im->init_err;
    im->init_ok = !cuda_failed(cudaSetDevice(im->device), "cudaSetDevice", err, cap) &&
                  !nccl_failed(ncclCommInitRank(&im->comm, im->size, im->id, im->rank), "communicator", err, cap);
    if (!im->init_ok || im->size < 2)
        return NULL;
    uint64_t *dev = scratch(im, (size_t)im->size * 16, err, cap);
    bool ok = dev && !cuda_failed(cudaMemsetAsync(dev, 0, (size_t)im->size * 16, im->stream), "warm-up", err, cap) &&
              !nccl_failed(ncclGroupStart(), "group start", err, cap);
    for (int p = 0; ok && p < im->size; p++)
        if (p != im->rank)
            ok = !nccl_failed(ncclSend(dev + p, 1, ncclUint64, p, im->comm, im->stream), "send", err, cap) &&
                 !nccl_failed(ncclRecv(dev + im->size + p, 1, ncclUint64, p, im->comm, im->stream), "receive", err,
                              cap);
    if (dev)
        ok = !nccl_failed(ncclGroupEnd(), "group end", err, cap) && ok;
    im->init_ok = ok && sync_stream(im, "warm-up", err, cap);
    return NULL;
}

/* Waits for the init thread (once); false with its message when it failed. */
static bool ready(nccl_impl *im, char *err, size_t cap)
{
    if (im->init_pending) {
        pthread_join(im->init_thread, NULL);
        im->init_pending = false;
    } else if (!im->init_tried) {   /* one rank: made on first use (a run of one rank never uses it) */
        init_main(im);
    }
    if (!im->init_ok)
        return fail(err, cap, "%s", im->init_err);
    return true;
}

static bool comm_alltoallv(rf_comm *c, const uint64_t *send, const size_t *sendcounts, uint64_t **recv,
                           size_t *recvcap, size_t *recvcounts, char *err, size_t cap)
{
    nccl_impl *im = c->impl;
    if (!ready(im, err, cap))
        return false;
    int n = c->size;
    /* The counts first: every rank's row of the count matrix, gathered. */
    uint64_t *counts = calloc((size_t)n * (size_t)n + (size_t)n, sizeof *counts);
    if (!counts)
        return fail(err, cap, "out of memory");
    uint64_t *mine = counts + (size_t)n * (size_t)n;
    for (int d = 0; d < n; d++)
        mine[d] = sendcounts[d];
    uint64_t *dev = scratch(im, (size_t)n * (size_t)(n + 1) * 8, err, cap);
    bool ok = dev && !cuda_failed(cudaMemcpyAsync(dev, mine, (size_t)n * 8, cudaMemcpyHostToDevice, im->stream),
                                  "counts up", err, cap) &&
              !nccl_failed(ncclAllGather(dev, dev + n, (size_t)n, ncclUint64, im->comm, im->stream),
                           "all-gather of counts", err, cap) &&
              !cuda_failed(cudaMemcpyAsync(counts, dev + n, (size_t)n * (size_t)n * 8, cudaMemcpyDeviceToHost,
                                           im->stream), "counts down", err, cap) &&
              sync_stream(im, "counts", err, cap);
    if (!ok) {
        free(counts);
        return false;
    }
    size_t sent = 0, got = 0;
    for (int d = 0; d < n; d++) {
        sent += counts[(size_t)c->rank * (size_t)n + (size_t)d];
        got += counts[(size_t)d * (size_t)n + (size_t)c->rank];
    }
    uint64_t *in = *recv;   /* the caller's buffer from an earlier call, grown when too small */
    if (!in || *recvcap < got + 1) {
        size_t want = got + 1 + got / 4;
        free(in);
        *recv = NULL;
        *recvcap = 0;
        in = malloc(want * sizeof *in);
        if (!in) {
            free(counts);
            return fail(err, cap, "out of memory receiving %zu words", got);
        }
        *recv = in;
        *recvcap = want;
    }
    dev = scratch(im, (sent + got + 1) * 8, err, cap);
    if (!dev) {
        free(counts);
        return false;
    }
    uint64_t *dsend = dev, *drecv = dev + sent;
    ok = sent == 0 ||
         !cuda_failed(cudaMemcpyAsync(dsend, send, sent * 8, cudaMemcpyHostToDevice, im->stream), "send words up",
                      err, cap);
    /* One group of sends and receives: NCCL runs them together. */
    ok = ok && !nccl_failed(ncclGroupStart(), "group start", err, cap);
    size_t so = 0, ro = 0;
    for (int p = 0; ok && p < n; p++) {
        size_t sc = counts[(size_t)c->rank * (size_t)n + (size_t)p], rc = counts[(size_t)p * (size_t)n + (size_t)c->rank];
        if (sc)
            ok = !nccl_failed(ncclSend(dsend + so, sc, ncclUint64, p, im->comm, im->stream), "send", err, cap);
        if (ok && rc)
            ok = !nccl_failed(ncclRecv(drecv + ro, rc, ncclUint64, p, im->comm, im->stream), "receive", err, cap);
        recvcounts[p] = rc;
        so += sc;
        ro += rc;
    }
    if (!nccl_failed(ncclGroupEnd(), "group end", err, cap) && ok && got)
        ok = !cuda_failed(cudaMemcpyAsync(in, drecv, got * 8, cudaMemcpyDeviceToHost, im->stream), "receive words down",
                          err, cap);
    ok = ok && sync_stream(im, "all-to-all", err, cap);
    free(counts);
    return ok;   /* (*recv stays the caller's to free either way) */
}

/* Device buffers both ways (rf_comm.alltoallv_device): one group of
 * sends and receives straight between the ranks' device memory, no host
 * copy; returns when every receive has landed. */
static bool comm_alltoallv_device(rf_comm *c, const uint64_t *const *send, const size_t *sendcounts,
                                  uint64_t *const *recv, const size_t *recvcounts, char *err, size_t cap)
{
    nccl_impl *im = c->impl;
    if (!ready(im, err, cap))
        return false;
    bool ok = !nccl_failed(ncclGroupStart(), "group start", err, cap);
    for (int p = 0; ok && p < c->size; p++) {
        if (p == c->rank)
            continue;
        if (sendcounts[p])
            ok = !nccl_failed(ncclSend(send[p], sendcounts[p], ncclUint64, p, im->comm, im->stream), "send", err,
                              cap);
        if (ok && recvcounts[p])
            ok = !nccl_failed(ncclRecv(recv[p], recvcounts[p], ncclUint64, p, im->comm, im->stream), "receive",
                              err, cap);
    }
    ok = !nccl_failed(ncclGroupEnd(), "group end", err, cap) && ok;
    return ok && sync_stream(im, "device all-to-all", err, cap);
}

static bool comm_allreduce(rf_comm *c, uint64_t *vals, int n, rf_comm_op op, char *err, size_t cap)
{
    nccl_impl *im = c->impl;
    if (!ready(im, err, cap))
        return false;
    if (n <= 0)
        return true;
    ncclRedOp_t rop = op == RF_COMM_SUM ? ncclSum : op == RF_COMM_MAX ? ncclMax : ncclMin;
    uint64_t *dev = scratch(im, (size_t)n * 8, err, cap);
    return dev &&
           !cuda_failed(cudaMemcpyAsync(dev, vals, (size_t)n * 8, cudaMemcpyHostToDevice, im->stream), "up", err,
                        cap) &&
           !nccl_failed(ncclAllReduce(dev, dev, (size_t)n, ncclUint64, rop, im->comm, im->stream), "all-reduce", err,
                        cap) &&
           !cuda_failed(cudaMemcpyAsync(vals, dev, (size_t)n * 8, cudaMemcpyDeviceToHost, im->stream), "down", err,
                        cap) &&
           sync_stream(im, "all-reduce", err, cap);
}

static bool comm_bcast(rf_comm *c, void *buf, size_t len, int root, char *err, size_t cap)
{
    nccl_impl *im = c->impl;
    if (!ready(im, err, cap))
        return false;
    if (len == 0)
        return true;
    void *dev = scratch(im, len, err, cap);
    return dev &&
           (c->rank != root ||
            !cuda_failed(cudaMemcpyAsync(dev, buf, len, cudaMemcpyHostToDevice, im->stream), "up", err, cap)) &&
           !nccl_failed(ncclBroadcast(dev, dev, len, ncclUint8, root, im->comm, im->stream), "broadcast", err, cap) &&
           !cuda_failed(cudaMemcpyAsync(buf, dev, len, cudaMemcpyDeviceToHost, im->stream), "down", err, cap) &&
           sync_stream(im, "broadcast", err, cap);
}

/* NCCL cannot end the other processes: this one ends with code, and the
 * launcher (cli/main.c), seeing a rank fail, ends the rest and exits with
 * the same code. */
static void comm_abort(rf_comm *c, int code)
{
    nccl_impl *im = c->impl;
    fflush(stdout);
    fflush(stderr);
    if (!im->init_pending && im->init_ok)   /* (an init still running: the exit ends it) */
        ncclCommAbort(im->comm);
    _exit(code);
}

static void comm_close(rf_comm *c)
{
    nccl_impl *im = c->impl;
    char err[256];
    if (!im->init_pending && !im->init_tried)   /* one rank, never used: nothing to make or destroy */
        im->init_ok = false, im->init_tried = true;
    if (!ready(im, err, sizeof err)) {   /* nothing to destroy but the stream */
        cudaStreamDestroy(im->stream);
        if (im->buf)
            cudaFree(im->buf);
        free(im);
        free(c);
        return;
    }
    cudaStreamSynchronize(im->stream);
    ncclCommDestroy(im->comm);
    if (im->buf)
        cudaFree(im->buf);
    cudaStreamDestroy(im->stream);
    free(im);
    free(c);
}

bool rf_comm_nccl_module_unique_id(void *id, size_t len, char *err, size_t cap);
rf_comm *rf_comm_nccl_module_open(int rank, int size, const void *id, size_t len, int device, char *err, size_t cap);

bool rf_comm_nccl_module_unique_id(void *id, size_t len, char *err, size_t cap)
{
    ncclUniqueId u;
    if (len != sizeof u)
        return fail(err, cap, "NCCL id of %zu bytes (this NCCL's is %zu)", len, sizeof u);
    if (nccl_failed(ncclGetUniqueId(&u), "unique id", err, cap))
        return false;
    memcpy(id, &u, sizeof u);
    return true;
}

rf_comm *rf_comm_nccl_module_open(int rank, int size, const void *id, size_t len, int device, char *err, size_t cap)
{
    ncclUniqueId u;
    if (len != sizeof u) {
        fail(err, cap, "NCCL id of %zu bytes (this NCCL's is %zu)", len, sizeof u);
        return NULL;
    }
    memcpy(&u, id, sizeof u);
    rf_comm *c = calloc(1, sizeof *c);
    nccl_impl *im = calloc(1, sizeof *im);
    if (!c || !im) {
        free(c);
        free(im);
        fail(err, cap, "out of memory");
        return NULL;
    }
    im->device = device;
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices <= 0) {
        fail(err, cap, "no CUDA device found (redfox run --gpus N needs N GPUs and their driver)");
        free(c);
        free(im);
        return NULL;
    }
    if (device < 0 || device >= devices) {
        fail(err, cap, "rank %d wants CUDA device %d, and this machine has %d", rank, device, devices);
        free(c);
        free(im);
        return NULL;
    }
    im->id = u;
    im->rank = rank;
    im->size = size;
    if (cuda_failed(cudaSetDevice(device), "cudaSetDevice", err, cap) ||
        cuda_failed(cudaStreamCreateWithFlags(&im->stream, cudaStreamNonBlocking), "stream", err, cap)) {
        free(c);
        free(im);
        return NULL;
    }
    if (size == 1) {
        /* (made by ready() if ever used) */
    } else if (pthread_create(&im->init_thread, NULL, init_main, im) == 0) {
        im->init_pending = true;
    } else {   /* no thread: here and now */
        init_main(im);
        if (!im->init_ok) {
            fail(err, cap, "%s", im->init_err);
            cudaStreamDestroy(im->stream);
            free(c);
            free(im);
            return NULL;
        }
    }
    int version = 0;
    ncclGetVersion(&version);
    c->rank = rank;
    c->size = size;
    snprintf(c->name, sizeof c->name, "nccl %d.%d.%d (GPU %d)", version / 10000, version / 100 % 100,
             version % 100, device);
    c->alltoallv = comm_alltoallv;
    c->alltoallv_device = comm_alltoallv_device;
    c->allreduce_u64 = comm_allreduce;
    c->bcast = comm_bcast;
    c->abort = comm_abort;
    c->close = comm_close;
    c->impl = im;
    return c;
}
