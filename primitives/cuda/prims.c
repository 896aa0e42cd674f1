/* The GPU primitives: C orchestration over the kernels (kernels.cu) and the
 * CUB shim (cub_shim.cu). Each primitive is a short pipeline of data-parallel
 * steps on the context's stream; the host synchronises only to read a count
 * that sizes the next allocation (and the fault slot of compute code). */
#define _DEFAULT_SOURCE /* madvise */
#include "cuda_internal.h"
#include "codegen_plan.h"
#include "joinsize.h"
#include "multijoin.h"
#include "../../common/rf_expr.h"
#include "../rf_prims.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A projection that is one column read (the copy fast path); mirrors
 * rf_code_as_column without linking the IR library. */
static int rf_code_as_column_(const rf_code *c)
{
    return (c->n == 1 && c->ins[0].op == RF_EX_COL) ? c->ins[0].index : -1;
}

/* ---- Context, errors, memory ---- */

static bool stage_init(rf_cuda_ctx *c, rf_status *st); /* pinned staging buffers, below */
static void stage_free(rf_cuda_ctx *c);

bool rf_cuda_pci_bus_id(int device, char *buf, size_t len)
{
    if (len < 2 || len > 64 || cudaDeviceGetPCIBusId(buf, (int)len, device) != cudaSuccess) {
        (void)cudaGetLastError();
        return false;
    }
    for (char *p = buf; *p; p++)
        if (*p >= 'A' && *p <= 'F')
            *p = (char)(*p - 'A' + 'a');
    return true;
}

int rf_cuda_device_count(void)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return n;
}

bool rf_cuda_check(rf_cuda_ctx *c, cudaError_t e, const char *where, rf_status *st)
{
    (void)c;
    if (e == cudaSuccess)
        return true;
    (void)cudaGetLastError(); /* clears non-sticky errors */
    if (e == cudaErrorMemoryAllocation)
        return rf_fail(st, RF_EXIT_OUT_OF_MEMORY, "GPU out of memory in %s", where);
    return rf_fail(st, RF_EXIT_RUNTIME_ERROR, "CUDA error in %s: %s", where, cudaGetErrorString(e));
}

/* A rehearsal at start-up: the kernels that loading facts and a semi-naive
 * step use (upload, both sorts, a merge join, difference, union, download)
 * run once on a few thousand rows. CUDA loads a kernel's code when it is
 * first launched (lazy module loading, the default since CUDA 12.2), about
 * 0.1-0.2 ms each; a small recursive run met ~2.5 ms of that in its load and
 * first iteration (TC on wing, 8-10 ms in all). Loading every kernel of the
 * binary at start instead (CUDA_MODULE_LOADING=EAGER) cost the process more
 * than it saved. The rehearsal's counters are taken back out of the stats;
 * a failure here is ignored (the run meets it again, with its message).
 * RF_CUDA_REHEARSE=off skips it. */
static void rehearse(rf_cuda_ctx *c)
{
    const char *e = getenv("RF_CUDA_REHEARSE");
    if (e && strcmp(e, "off") == 0)
        return;
    rf_cuda_io_stats io = c->io;
    size_t peak = c->peak, hash_joins = c->hash_joins, merge_joins = c->merge_joins;
    enum { BIG = 20000, SMALL = 100 };
    rf_word *rows = rf_malloc(BIG * 2 * sizeof *rows);
    for (size_t i = 0; i < BIG; i++) {   /* a graph of BIG edges on 4096 nodes */
        rows[2 * i] = (rf_word)((i * 2654435761u) % 4096);
        rows[2 * i + 1] = (rf_word)((i * 40503u + 7) % 4096);
    }
    rf_table big, small, back;
    rf_table_from_rows(&big, 2, rows, BIG);
    rf_table_from_rows(&small, 2, rows, SMALL);
    rf_table_init(&back, 2);
    free(rows);
    rf_instr col0 = {RF_EX_COL, RF_TYPE_INT64, RF_TYPE_INT64, 0, 0, 0};
    rf_instr col1 = {RF_EX_COL, RF_TYPE_INT64, RF_TYPE_INT64, 0, 1, 0};
    rf_instr col3 = {RF_EX_COL, RF_TYPE_INT64, RF_TYPE_INT64, 0, 3, 0};
    rf_code swap[2] = {{1, &col1}, {1, &col0}}, joined[2] = {{1, &col1}, {1, &col3}};
    rf_drel r[9];
    for (int i = 0; i < 9; i++)
        rf_drel_init(&r[i], 2);
    rf_status st;
    rf_status_init(&st);
    rf_dset plan;   /* (only planned: the bounds a semi-naive DIFF takes first) */
    rf_dset_init(&plan);
    bool fits;
    const char *what = "the start-up rehearsal";
    (void)(rf_drel_upload(c, &r[0], &big, what, &st) && rf_cuda_sort_unique(c, &r[0], &r[1], what, &st) &&
           rf_drel_upload(c, &r[2], &small, what, &st) && rf_cuda_sort_unique(c, &r[2], &r[3], what, &st) &&
           rf_cuda_map(c, &r[1], NULL, 2, swap, &r[4], what, &st) &&
           rf_cuda_sort_unique(c, &r[4], &r[5], what, &st) &&
           rf_cuda_join(c, &r[5], &r[1], 1, NULL, 2, joined, &r[6], what, &st) &&
           rf_cuda_sort_unique(c, &r[6], &r[7], what, &st) &&
           rf_cuda_difference(c, &r[7], &r[1], &r[8], what, &st) &&
           rf_cuda_union(c, &r[1], &r[8], &r[2], what, &st) && rf_drel_download(c, &r[2], &back, &st) &&
           rf_dset_plan(c, &r[1], &r[8], RF_DSET_MAX_BITS, &plan, &fits, &st) && rf_cuda_sync(c, &st));
    /* The generated kernels' tails: their code loaded, none run. (Pattern
     * (e) at 10^8 rows, a 0.83 ms reducing gather, waited 0.13-0.19 ms
     * for its one-group finish's code.) */
    rf_k_load_tails();
    for (int i = 0; i < 9; i++)
        rf_drel_free(c, &r[i]);
    rf_dset_free(c, &plan);
    rf_table_free(&big);
    rf_table_free(&small);
    rf_table_free(&back);
    c->io = io;
    c->peak = peak;
    c->hash_joins = hash_joins;
    c->merge_joins = merge_joins;
}

/* ---- Priming the pool ----
 * Growing the stream-ordered pool maps fresh device memory inside the
 * allocation call: about 1.4 ms a GB on the H100 (docs/performance.md), so
 * a kernel whose output is allocated at its bound (a generated selection:
 * 3.2 GB for pattern (d) at 10^8 rows) waited longer for its memory than
 * it ran. At start-up a thread of its own allocates a share of the free
 * memory from the pool and frees it at once; the pool keeps it mapped
 * (release threshold: never) and later allocations of any size are cut
 * from it in microseconds. This overlaps the loading of the inputs. The
 * memory stays the pool's, not in use: an allocation that finds the
 * device full trims the pool (rf_cuda_alloc), which gives back every
 * unused part. RF_CUDA_POOL_PRIME: the share of the free memory (default
 * 0.5; 0 or off: none), for processes that share a device; a process with
 * a device memory budget primes at most that (rf_cuda_set_prime_cap):
 * sixteen test processes under --device-memory on one device took half of
 * what the others had left each, until one could not make its context.
 * Nor does it prime where other processes hold a tenth of the device. */
static _Atomic size_t prime_cap = SIZE_MAX;

void rf_cuda_set_prime_cap(size_t bytes) { atomic_store(&prime_cap, bytes); }

static void *prime_pool(void *arg)
{
    rf_cuda_ctx *c = arg;
    const char *env = getenv("RF_CUDA_POOL_PRIME");
    double share = 0.5;
    if (env && *env)
        share = strcmp(env, "off") == 0 ? 0.0 : atof(env);
    if (!(share > 0.0) || cudaSetDevice(c->device) != cudaSuccess)
        return NULL;
    size_t free_b = 0, total_b = 0;
    cudaStream_t s = NULL;
    /* Only on a device this process has (nearly) to itself: where other
     * processes hold a tenth of it or more (a test harness's parallel
     * runs, ranks sharing one card, another user), half of what they left
     * would be taken from them, and the next to start could not make its
     * context (sixteen differential runs on one H200: "GPU out of memory
     * in cudaSetDevice"). */
    if (cudaMemGetInfo(&free_b, &total_b) == cudaSuccess && (double)free_b >= 0.9 * (double)total_b &&
        cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) == cudaSuccess) {
        size_t want = (size_t)((double)free_b * (share < 1.0 ? share : 1.0));
        if (want > atomic_load(&prime_cap))
            want = atomic_load(&prime_cap);
        want &= ~(((size_t)2 << 20) - 1);
        /* In pieces (1 GiB, or want / RF_PRIME_PIECES when larger): a run
         * that ends, or runs short of memory, stops the prime after the
         * piece being mapped (~1.4 ms a GB on the H100) instead of waiting
         * for all of it (~55 ms for 40 GB); and the main thread's own pool
         * calls get between pieces. Pieces freed together serve one larger
         * allocation (a probe on the H100: 1 GiB pieces, a 1.6 GB
         * allocation in 4 us). */
        enum { RF_PRIME_PIECES = 256 };
        size_t piece = (size_t)1 << 30;
        if (want / RF_PRIME_PIECES > piece)
            piece = (want / RF_PRIME_PIECES + ((size_t)2 << 20) - 1) & ~(((size_t)2 << 20) - 1);
        void *held[RF_PRIME_PIECES + 1];
        int nheld = 0;
        for (size_t done = 0; done < want && nheld <= RF_PRIME_PIECES; done += piece) {
            if (__atomic_load_n(&c->prime_stop, __ATOMIC_ACQUIRE))
                break;
            size_t bytes = want - done < piece ? want - done : piece;
            if (cudaMallocFromPoolAsync(&held[nheld], bytes, c->pool, s) != cudaSuccess)
                break;
            nheld++;
        }
        for (int i = 0; i < nheld; i++)
            cudaFreeAsync(held[i], s);
        cudaStreamSynchronize(s);
        cudaStreamDestroy(s);
    }
    (void)cudaGetLastError(); /* this thread's: a failed prime is no error */
    return NULL;
}

/* Waits for the priming thread (before trimming the pool or freeing the
 * context: a trim while the prime is allocated would give nothing back). */
static void prime_wait(rf_cuda_ctx *c)
{
    pthread_mutex_lock(&c->prime_lock);
    if (c->priming) {
        __atomic_store_n(&c->prime_stop, 1, __ATOMIC_RELEASE);
        pthread_join(c->prime_thread, NULL);
        c->priming = false;
    }
    pthread_mutex_unlock(&c->prime_lock);
}

static void *load_kernels(void *arg)
{
    rf_cuda_ctx *c = arg;
    if (cudaSetDevice(c->device) == cudaSuccess) {
        if (c->load_what & RF_CUDA_LOAD_MULTIJOIN)
            rf_k_mj_load();
        if (c->load_what & RF_CUDA_LOAD_JOIN_SIZE)
            rf_k_js_load();
    }
    (void)cudaGetLastError(); /* this thread's: a kernel not loaded now loads at its launch */
    return NULL;
}

void rf_cuda_load_ahead(rf_cuda_ctx *c, unsigned what)
{
    const char *e = getenv("RF_CUDA_LOAD_AHEAD");
    if (!c || c->loading || !what || (e && strcmp(e, "off") == 0))
        return;
    c->load_what = what;
    c->loading = pthread_create(&c->loader_thread, NULL, load_kernels, c) == 0;
}

rf_cuda_ctx *rf_cuda_ctx_new(int device, rf_status *st)
{
    int n = rf_cuda_device_count();
    if (n <= 0) {
        rf_fail(st, RF_EXIT_RUNTIME_ERROR, "no CUDA device found");
        return NULL;
    }
    if (device < 0 || device >= n) {
        rf_fail(st, RF_EXIT_RUNTIME_ERROR, "no CUDA device %d (%d present)", device, n);
        return NULL;
    }
    double t_init = rf_now();
    rf_cuda_ctx *c = rf_calloc(1, sizeof *c);
    c->device = device;
    pthread_mutex_init(&c->prime_lock, NULL);
    rf_cuda_host_arena_start();
    struct cudaDeviceProp prop;
    if (!rf_cuda_check(c, cudaSetDevice(device), "cudaSetDevice", st) ||
        !rf_cuda_check(c, cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties", st))
        goto fail;
    snprintf(c->name, sizeof c->name, "%s", prop.name);
    c->total_mem = prop.totalGlobalMem;
    if (!rf_cuda_check(c, cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking), "stream", st) ||
        !rf_cuda_check(c, cudaEventCreate(&c->ev_start), "event", st) ||
        !rf_cuda_check(c, cudaEventCreate(&c->ev_stop), "event", st) ||
        !rf_cuda_check(c, cudaDeviceGetDefaultMemPool(&c->pool, device), "memory pool", st))
        goto fail;
    /* Keep freed blocks cached in the pool: fixpoint loops free and
     * allocate relations of similar sizes every iteration. */
    uint64_t threshold = UINT64_MAX;
    if (!rf_cuda_check(c, cudaMemPoolSetAttribute(c->pool, cudaMemPoolAttrReleaseThreshold, &threshold),
                       "memory pool", st) ||
        !rf_cuda_check(c, cudaMallocHost((void **)&c->host_small, 64), "pinned buffer", st))
        goto fail;
    c->priming = pthread_create(&c->prime_thread, NULL, prime_pool, c) == 0;
    c->err = rf_cuda_alloc(c, sizeof(rf_derr), "fault slot", st);
    if (!c->err ||
        !rf_cuda_check(c, cudaMemsetAsync(c->err, 0, sizeof(rf_derr), c->stream), "memset", st) ||
        !rf_cuda_check(c, cudaStreamSynchronize(c->stream), "synchronize", st))
        goto fail;
    const char *jm = getenv("RF_CUDA_JOIN");
    c->join_mode = jm && strcmp(jm, "merge") == 0 ? 1 : jm && strcmp(jm, "hash") == 0 ? 2 : 0;
    const char *ss = getenv("RF_CUDA_SMALL_SORT");
    c->small_sort = !(ss && strcmp(ss, "off") == 0);
    const char *um = getenv("RF_CUDA_UNION_MERGE");
    c->union_merge = !(um && strcmp(um, "off") == 0);
    const char *so = getenv("RF_CUDA_SORT_ORDER");
    c->sort_order = !(so && strcmp(so, "off") == 0);
    const char *wm = getenv("RF_CUDA_WIDE_SORT_MAX");
    c->wide_sort_max = wm && *wm ? strtoull(wm, NULL, 10) : UINT32_MAX;
    if (c->wide_sort_max < 2 || c->wide_sort_max > UINT32_MAX)
        c->wide_sort_max = UINT32_MAX;
    const char *tr = getenv("RF_CUDA_TRACE");
    c->trace = tr && *tr && strcmp(tr, "0") != 0;
    c->trace_nosync = c->trace && strcmp(tr, "host") == 0;
    if (!stage_init(c, st))
        goto fail;
    rehearse(c);
    c->io.init_seconds = rf_now() - t_init;
    return c;
fail:
    rf_cuda_ctx_free(c);
    return NULL;
}

void rf_codegen_free(rf_cuda_ctx *c); /* codegen.c */

void rf_cuda_ctx_free(rf_cuda_ctx *c)
{
    if (!c)
        return;
    prime_wait(c);
    if (c->loading)
        pthread_join(c->loader_thread, NULL);
    if (c->stream)
        cudaStreamSynchronize(c->stream);
    rf_codegen_free(c);
    if (c->scratch)
        rf_cuda_free(c, c->scratch, c->scratch_bytes);
    if (c->code)
        rf_cuda_free(c, c->code, c->code_cap * sizeof(rf_dins));
    if (c->err)
        rf_cuda_free(c, c->err, sizeof(rf_derr));
    if (c->rank)
        rf_cuda_free(c, c->rank, c->nrank * sizeof(uint32_t));
    if (c->tab)
        rf_cuda_free(c, c->tab, c->tab_cap * 8);
    if (c->stream)
        cudaStreamSynchronize(c->stream);
    if (c->host_small)
        cudaFreeHost(c->host_small);
    stage_free(c);
    for (int i = 0; i < 2; i++) {
        cudaStream_t cs = i ? c->down_stream : c->up_stream;
        if (cs) {
            cudaStreamSynchronize(cs);
            cudaStreamDestroy(cs);
        }
    }
    if (c->ev_start)
        cudaEventDestroy(c->ev_start);
    if (c->ev_stop)
        cudaEventDestroy(c->ev_stop);
    if (c->stream)
        cudaStreamDestroy(c->stream);
    if (c->pool)
        cudaMemPoolTrimTo(c->pool, 0);
    pthread_mutex_destroy(&c->prime_lock);
    free(c);
}

const char *rf_cuda_device_name(const rf_cuda_ctx *c) { return c->name; }
size_t rf_cuda_bytes_in_use(const rf_cuda_ctx *c) { return c->in_use; }
size_t rf_cuda_bytes_peak(const rf_cuda_ctx *c) { return c->peak; }

void rf_cuda_trace(rf_cuda_ctx *c, const char *phase)
{
    if (!c->trace)
        return;
    if (!c->trace_nosync)
        (void)cudaStreamSynchronize(c->stream);
    double now = rf_now();
    fprintf(stderr, "trace %-24s %9.1f us\n", phase, (now - c->trace_t) * 1e6);
    c->trace_t = now;
}

bool rf_cuda_timer_start(rf_cuda_ctx *c, rf_status *st)
{
    if (c->trace) {
        (void)cudaStreamSynchronize(c->stream);
        c->trace_t = rf_now();
        fprintf(stderr, "trace ----\n");
    }
    bool ok = rf_cuda_check(c, cudaEventRecord(c->ev_start, c->stream), "event", st);
    rf_cuda_trace(c, "start event");
    return ok;
}

bool rf_cuda_timer_stop(rf_cuda_ctx *c, double *seconds, rf_status *st)
{
    float ms = 0;
    rf_cuda_trace(c, "end");
    if (!rf_cuda_check(c, cudaEventRecord(c->ev_stop, c->stream), "event", st) ||
        !rf_cuda_check(c, cudaEventSynchronize(c->ev_stop), "event", st) ||
        !rf_cuda_check(c, cudaEventElapsedTime(&ms, c->ev_start, c->ev_stop), "event", st))
        return false;
    *seconds = ms / 1000.0;
    return true;
}

void rf_cuda_get_io_stats(const rf_cuda_ctx *c, rf_cuda_io_stats *out) { *out = c->io; }

bool rf_cuda_sync(rf_cuda_ctx *c, rf_status *st)
{
    c->io.syncs++;
    return rf_cuda_check(c, cudaStreamSynchronize(c->stream), "synchronize", st);
}

void *rf_cuda_alloc(rf_cuda_ctx *c, size_t bytes, const char *what, rf_status *st)
{
    void *p = NULL;
    if (bytes == 0)
        bytes = 1;
    cudaError_t e = cudaMallocAsync(&p, bytes, c->stream);
    if (e == cudaErrorMemoryAllocation) {
        /* Give cached blocks back to the device and try once more. */
        (void)cudaGetLastError();
        prime_wait(c);
        cudaStreamSynchronize(c->stream);
        cudaMemPoolTrimTo(c->pool, 0);
        e = cudaMallocAsync(&p, bytes, c->stream);
    }
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        size_t free_b = 0, total_b = 0;
        cudaMemGetInfo(&free_b, &total_b);
        if (e == cudaErrorMemoryAllocation)
            rf_fail(st, RF_EXIT_OUT_OF_MEMORY,
                    "GPU out of memory: %zu bytes for %s (%zu bytes in use by Red Fox, %zu free of %zu on %s)",
                    bytes, what ? what : "?", c->in_use, free_b, total_b, c->name);
        else
            rf_fail(st, RF_EXIT_RUNTIME_ERROR, "CUDA error allocating %zu bytes for %s: %s", bytes,
                    what ? what : "?", cudaGetErrorString(e));
        return NULL;
    }
    c->in_use += bytes;
    c->io.allocs++;
    if (c->in_use > c->peak)
        c->peak = c->in_use;
    return p;
}

void rf_cuda_free(rf_cuda_ctx *c, void *p, size_t bytes)
{
    if (!p)
        return;
    if (bytes == 0)
        bytes = 1;
    cudaFreeAsync(p, c->stream);
    c->in_use -= bytes;
}

void *rf_cuda_scratch(rf_cuda_ctx *c, size_t bytes, rf_status *st)
{
    if (bytes <= c->scratch_bytes)
        return c->scratch;
    if (c->scratch)
        rf_cuda_free(c, c->scratch, c->scratch_bytes);
    c->scratch = NULL;
    c->scratch_bytes = 0;
    size_t want = bytes + bytes / 4; /* headroom: temp sizes grow with n */
    c->scratch = rf_cuda_alloc(c, want, "temporary storage", st);
    if (c->scratch)
        c->scratch_bytes = want;
    return c->scratch;
}

/* Reads one device word (synchronising the stream). */
static bool read_word(rf_cuda_ctx *c, const uint64_t *dev, uint64_t *out, rf_status *st)
{
    c->io.syncs++;
    if (!rf_cuda_check(c, cudaMemcpyAsync(c->host_small, dev, 8, cudaMemcpyDeviceToHost, c->stream),
                       "read back", st) ||
        !rf_cuda_check(c, cudaStreamSynchronize(c->stream), "read back", st))
        return false;
    *out = c->host_small[0];
    return true;
}

bool rf_cuda_read_back(rf_cuda_ctx *c, const void *dev, void *host, size_t bytes, rf_status *st)
{
    c->io.syncs++;
    return rf_cuda_check(c, cudaMemcpyAsync(host, dev, bytes, cudaMemcpyDeviceToHost, c->stream), "read back",
                         st) &&
           rf_cuda_check(c, cudaStreamSynchronize(c->stream), "read back", st);
}

/* Turns the fault slot into the message rf_scalar_* would give. */
static bool check_fault(rf_cuda_ctx *c, rf_status *st)
{
    rf_derr e;
    c->io.syncs++;
    if (!rf_cuda_check(c, cudaMemcpyAsync(c->host_small, c->err, sizeof e, cudaMemcpyDeviceToHost,
                                          c->stream), "read back", st) ||
        !rf_cuda_check(c, cudaStreamSynchronize(c->stream), "read back", st))
        return false;
    memcpy(&e, c->host_small, sizeof e);
    if (e.code == RF_SERR_NONE)
        return true;
    cudaMemsetAsync(c->err, 0, sizeof(rf_derr), c->stream);
    return rf_scalar_fail2(st, e.code, e.value, e.value2, e.aux);
}

/* check_fault and read_word with one wait: the fault slot and n <= 4
 * counts copied back together (each wait is a round trip to the device). */
static bool read_fault_and_words(rf_cuda_ctx *c, int n, const uint64_t *const *dev, uint64_t *out, rf_status *st)
{
    rf_derr e;
    c->io.syncs++;
    _Static_assert(sizeof(rf_derr) <= 32, "the fault slot fits before the words in host_small");
    if (n < 0 || n > 4)
        return rf_fail(st, RF_EXIT_RUNTIME_ERROR, "read back of %d words", n);
    if (!rf_cuda_check(c, cudaMemcpyAsync(c->host_small, c->err, sizeof e, cudaMemcpyDeviceToHost, c->stream),
                       "read back", st))
        return false;
    for (int i = 0; i < n; i++)
        if (!rf_cuda_check(c, cudaMemcpyAsync(c->host_small + 4 + i, dev[i], 8, cudaMemcpyDeviceToHost, c->stream),
                           "read back", st))
            return false;
    if (!rf_cuda_check(c, cudaStreamSynchronize(c->stream), "read back", st))
        return false;
    memcpy(&e, c->host_small, sizeof e);
    for (int i = 0; i < n; i++)
        out[i] = c->host_small[4 + i];
    if (e.code == RF_SERR_NONE)
        return true;
    cudaMemsetAsync(c->err, 0, sizeof(rf_derr), c->stream);
    return rf_scalar_fail2(st, e.code, e.value, e.value2, e.aux);
}

/* A generated selection's output is allocated at its bound (the input's
 * rows). Few rows kept of many: the exact size, not the bound, stays
 * allocated when the rest is a large part of the device (a copy of the
 * kept rows costs ~10% of the pass; below that the rows beyond the count
 * are free again when the variable dies). */
static bool keep_exact(const rf_cuda_ctx *c, uint64_t bound, uint64_t kept, int arity)
{
    return kept < bound / 4 && (bound - kept) * (size_t)arity * 8 > c->total_mem / 16;
}

/* ---- Relations ---- */

void rf_drel_init(rf_drel *r, int arity)
{
    r->arity = arity;
    r->nrows = r->cap = 0;
    r->data = NULL;
}

size_t rf_drel_bytes(const rf_drel *r) { return (size_t)r->arity * r->cap * sizeof(rf_word); }

bool rf_drel_alloc(rf_cuda_ctx *c, rf_drel *r, size_t rows, const char *what, rf_status *st)
{
    if (r->arity == 0) {
        r->nrows = rows ? 1 : 0;
        return true;
    }
    if (r->arity > RF_CUDA_MAX_COLS)
        return rf_fail(st, RF_EXIT_RUNTIME_ERROR, "relation %s has %d columns; the GPU backend takes at most %d",
                       what ? what : "?", r->arity, RF_CUDA_MAX_COLS);
    if (rows <= r->cap) {
        r->nrows = rows;
        return true;
    }
    size_t words = rf_mul_size(rows, (size_t)r->arity);
    void *p = rf_cuda_alloc(c, rf_mul_size(words, sizeof(rf_word)), what, st);
    if (!p)
        return false;
    rf_drel_free(c, r);
    r->data = p;
    r->cap = rows;
    r->nrows = rows;
    return true;
}

void rf_drel_free(rf_cuda_ctx *c, rf_drel *r)
{
    if (r->data)
        rf_cuda_free(c, r->data, rf_drel_bytes(r));
    r->data = NULL;
    r->nrows = r->cap = 0;
}

void rf_drel_move(rf_cuda_ctx *c, rf_drel *dst, rf_drel *src)
{
    if (dst == src)
        return;
    rf_drel_free(c, dst);
    *dst = *src;
    src->data = NULL;
    src->nrows = src->cap = 0;
}

bool rf_drel_copy(rf_cuda_ctx *c, rf_drel *dst, const rf_drel *src, const char *what, rf_status *st)
{
    if (dst == src)
        return true;
    rf_drel tmp;
    rf_drel_init(&tmp, src->arity);
    if (!rf_drel_alloc(c, &tmp, src->nrows, what, st))
        return false;
    for (int k = 0; k < src->arity && src->nrows; k++)
        if (!rf_cuda_check(c, cudaMemcpyAsync(tmp.data + (size_t)k * tmp.cap, src->data + (size_t)k * src->cap,
                                              src->nrows * 8, cudaMemcpyDeviceToDevice, c->stream),
                           "copy", st)) {
            rf_drel_free(c, &tmp);
            return false;
        }
    rf_drel_move(c, dst, &tmp);
    return true;
}

/* ---- Downloads ----
 * Measured on the device host (H100, docs/performance.md): pinned
 * device-to-host DMA runs at 55 GB/s, pageable at 1-2 GB/s; copying out
 * of pinned memory into already-faulted host memory at ~32 GB/s on 16
 * threads, into fresh memory at ~16 GB/s (page faults). Pinning is slow
 * and blocks every other CUDA call while it runs: cudaMallocHost takes
 * ~0.55 ms per MB, cudaHostRegister of already-faulted huge pages ~0.04 ms
 * per MB. So the context pins one small region once, at creation
 * (before any facts load), as nstage chunk buffers with a stream each;
 * a download hands chunks to nstage host threads that each DMA a chunk
 * into their buffer and copy it out, so the copy engine and the host
 * copies overlap; a small download is cut into smaller chunks so that
 * every thread takes its share of the destination's page faults. */
#define RF_STAGE_CHUNK ((size_t)4 << 20)

static void stage_free(rf_cuda_ctx *c)
{
    for (int i = 0; i < c->nstage; i++)
        if (c->stage_stream[i])
            cudaStreamDestroy(c->stage_stream[i]);
    if (c->stage_region && c->stage_registered) {
        cudaHostUnregister(c->stage_region);
        munmap(c->stage_region, c->stage_region_bytes);
    } else if (c->stage_region) {
        cudaFreeHost(c->stage_region);
    }
    c->stage_region = NULL;
    c->nstage = 0;
}

static bool stage_init(rf_cuda_ctx *c, rf_status *st)
{
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int n = cores > RF_MAX_STAGE ? RF_MAX_STAGE : cores > 1 ? (int)cores : 1;
    size_t bytes = (size_t)n * RF_STAGE_CHUNK;
    /* Huge pages, faulted in, then registered: the cheap way to pin. */
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p != MAP_FAILED) {
#ifdef MADV_HUGEPAGE
        (void)madvise(p, bytes, MADV_HUGEPAGE);
#endif
        memset(p, 0, bytes);
        if (cudaHostRegister(p, bytes, cudaHostRegisterDefault) == cudaSuccess) {
            c->stage_region = p;
            c->stage_registered = true;
        } else {
            (void)cudaGetLastError();
            munmap(p, bytes);
        }
    }
    if (!c->stage_region &&
        !rf_cuda_check(c, cudaMallocHost((void **)&c->stage_region, bytes), "pinned staging buffer", st))
        return false;
    c->stage_region_bytes = bytes;
    for (int i = 0; i < n; i++) {
        if (!rf_cuda_check(c, cudaStreamCreateWithFlags(&c->stage_stream[i], cudaStreamNonBlocking),
                           "stream", st))
            return false;
        c->nstage = i + 1;
    }
    return true;
}

/* A copy between the columns of a device relation (column k at dev + k *
 * cap) and those of a host table, chunk by chunk: each thread takes chunks
 * in turn through its own staging buffer and stream (up: copies the host
 * chunk in, then DMAs it to the device; down: DMAs, then copies out). */
typedef struct stage_job {
    rf_cuda_ctx *c;
    rf_word *dev;
    size_t cap;
    rf_word *const *host;
    bool up;
    size_t col_bytes, chunk, chunks_per_col, nchunks;
    atomic_size_t next;
    atomic_int failed;       /* a cudaError_t, 0 while none */
} stage_job;

static void stage_worker(void *arg, int w)
{
    stage_job *j = arg;
    rf_cuda_ctx *c = j->c;
    char *buf = c->stage_region + (size_t)w * RF_STAGE_CHUNK;
    cudaStream_t s = c->stage_stream[w];
    cudaError_t e = cudaSetDevice(c->device);
    size_t g;
    while (e == cudaSuccess && !atomic_load(&j->failed) && (g = atomic_fetch_add(&j->next, 1)) < j->nchunks) {
        size_t k = g / j->chunks_per_col, off = (g % j->chunks_per_col) * j->chunk;
        size_t n = j->col_bytes - off < j->chunk ? j->col_bytes - off : j->chunk;
        char *dev = (char *)(j->dev + k * j->cap) + off, *host = (char *)j->host[k] + off;
        if (j->up) {
            memcpy(buf, host, n);
            e = cudaMemcpyAsync(dev, buf, n, cudaMemcpyHostToDevice, s);
        } else {
            e = cudaMemcpyAsync(buf, dev, n, cudaMemcpyDeviceToHost, s);
        }
        if (e == cudaSuccess)
            e = cudaStreamSynchronize(s);   /* (up: before the buffer takes the next chunk) */
        if (e == cudaSuccess && !j->up)
            memcpy(host, buf, n);
    }
    if (e != cudaSuccess) {
        int expected = 0;
        atomic_compare_exchange_strong(&j->failed, &expected, (int)e);
    }
}

/* Copies `arity` columns of col_bytes each, in chunks of a staging buffer,
 * or smaller (at least min_chunk) where that would leave threads idle; the
 * first failure's error, else cudaSuccess. The caller has synchronised
 * c->stream (the relation's storage is ordered on it). */
static cudaError_t stage_copy(rf_cuda_ctx *c, rf_word *dev, size_t cap, rf_word *const *host, int arity,
                              size_t col_bytes, bool up, size_t min_chunk)
{
    stage_job j = {.c = c, .dev = dev, .cap = cap, .host = host, .up = up, .col_bytes = col_bytes,
                   .chunk = RF_STAGE_CHUNK};
    size_t total = col_bytes * (size_t)arity, want = 2 * (size_t)(c->nstage > 0 ? c->nstage : 1);
    if (total / RF_STAGE_CHUNK < want) {
        size_t piece = (total / want + 4095) / 4096 * 4096;
        j.chunk = piece < min_chunk ? min_chunk : piece;
    }
    j.chunks_per_col = (col_bytes + j.chunk - 1) / j.chunk;
    j.nchunks = j.chunks_per_col * (size_t)arity;
    atomic_init(&j.next, 0);
    atomic_init(&j.failed, 0);
    int workers = (size_t)c->nstage < j.nchunks ? c->nstage : (int)j.nchunks;
    if (workers > 1)
        rf_par_for(workers, stage_worker, &j);
    else
        stage_worker(&j, 0);
    return (cudaError_t)atomic_load(&j.failed);
}

/* Whether every host column [host[k], + col_bytes) lies in the pinned
 * arena (host_arena.c): then it crosses in one copy a column, no staging. */
static bool host_cols_pinned(rf_word *const *host, int arity, size_t col_bytes)
{
    for (int k = 0; k < arity; k++)
        if (!rf_cuda_host_pinned(host[k], col_bytes))
            return false;
    return arity > 0 && col_bytes > 0;
}

/* One copy a column between a device relation's columns and pinned host
 * columns, on c->stream, waited for (the caller may free the host side as
 * soon as this returns). */
static bool pinned_copy(rf_cuda_ctx *c, rf_word *dev, size_t cap, rf_word *const *host, int arity, size_t col_bytes,
                        bool up, rf_status *st)
{
    for (int k = 0; k < arity; k++) {
        rf_word *d = dev + (size_t)k * cap;
        cudaError_t e = up ? cudaMemcpyAsync(d, host[k], col_bytes, cudaMemcpyHostToDevice, c->stream)
                           : cudaMemcpyAsync(host[k], d, col_bytes, cudaMemcpyDeviceToHost, c->stream);
        if (!rf_cuda_check(c, e, up ? "upload" : "download", st))
            return false;
    }
    *(up ? &c->io.pinned_up_bytes : &c->io.pinned_down_bytes) += col_bytes * (size_t)arity;
    return rf_cuda_sync(c, st);
}

/* Large fresh columns (64 MB and more: glibc maps each as a mapping of its
 * own): ask for transparent huge pages (512 times fewer faults); a no-op
 * where THP is off or the memory is faulted already. The whole mapping is
 * advised, rounded out to pages, so it stays one VMA and a later realloc
 * can still mremap it (see rf_prefault_pages, common/rf_common.c). */
static void advise_huge(void *p, size_t n)
{
#ifdef MADV_HUGEPAGE
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    if (page == 0 || page == (uintptr_t)-1)
        page = 4096;
    uintptr_t lo = (uintptr_t)p / page * page;
    uintptr_t hi = ((uintptr_t)p + n + page - 1) / page * page;
    (void)madvise((void *)lo, hi - lo, MADV_HUGEPAGE);
#else
    (void)p;
    (void)n;
#endif
}

bool rf_drel_read_row(rf_cuda_ctx *c, const rf_drel *r, size_t i, uint64_t *row, rf_status *st)
{
    if (i >= r->nrows)
        return rf_fail(st, RF_EXIT_RUNTIME_ERROR, "row %zu of a relation of %zu rows", i, r->nrows);
    c->io.syncs++;
    for (int k = 0; k < r->arity; k++)
        if (!rf_cuda_check(c, cudaMemcpyAsync(&row[k], r->data + (size_t)k * r->cap + i, 8, cudaMemcpyDeviceToHost,
                                              c->stream),
                           "read back", st))
            return false;
    return rf_cuda_check(c, cudaStreamSynchronize(c->stream), "read back", st);
}

bool rf_drel_download_at(rf_cuda_ctx *c, const rf_drel *r, rf_table *t, size_t at, rf_status *st)
{
    if (r->arity != t->arity || r->arity > RF_CUDA_MAX_COLS || at > t->cap || r->nrows > t->cap - at)
        return rf_fail(st, RF_EXIT_RUNTIME_ERROR, "download of %zu rows at row %zu of a table of %zu", r->nrows, at,
                       t->cap);
    double t0 = rf_now();
    size_t col_bytes = r->nrows * 8;
    rf_word *host[RF_CUDA_MAX_COLS];
    for (int k = 0; k < r->arity; k++) {
        host[k] = t->cols[k] + at;
        if (at == 0 && t->cap * 8 >= ((size_t)64 << 20)) /* the first piece: the whole column advised */
            advise_huge(t->cols[k], t->cap * 8);
    }
    bool ok;
    if (host_cols_pinned(host, r->arity, col_bytes)) {
        ok = pinned_copy(c, r->data, r->cap, host, r->arity, col_bytes, false, st);
    } else if ((ok = rf_cuda_sync(c, st)) && r->arity > 0 && col_bytes > 0) {
        cudaError_t e = stage_copy(c, r->data, r->cap, host, r->arity, col_bytes, false, (size_t)256 << 10);
        if (e != cudaSuccess)
            ok = rf_cuda_check(c, e, "download", st);
    }
    c->io.download_bytes += col_bytes * (size_t)r->arity;
    c->io.download_seconds += rf_now() - t0;
    return ok;
}

bool rf_drel_download(rf_cuda_ctx *c, const rf_drel *r, rf_table *t, rf_status *st)
{
    double t0 = rf_now();
    rf_table_resize(t, r->nrows);
    size_t col_bytes = r->nrows * 8;
    for (int k = 0; k < r->arity && col_bytes >= ((size_t)64 << 20); k++)
        advise_huge(t->cols[k], col_bytes);
    /* The chunk threads read device memory on their own streams. */
    bool ok;
    if (host_cols_pinned(t->cols, r->arity, col_bytes)) {
        ok = pinned_copy(c, r->data, r->cap, t->cols, r->arity, col_bytes, false, st);
    } else if ((ok = rf_cuda_sync(c, st)) && r->arity > 0 && col_bytes > 0) {
        /* Chunks of a staging buffer, or smaller where that would leave
         * threads idle: into fresh memory the copy out is page faults (~2.7
         * us a 4 KB page in the VM), which go as fast as threads take them
         * (5.3 MB of wing's TC in 2 chunks: 1.6 ms). */
        cudaError_t e = stage_copy(c, r->data, r->cap, t->cols, r->arity, col_bytes, false, (size_t)256 << 10);
        if (e != cudaSuccess)
            ok = rf_cuda_check(c, e, "download", st);
    }
    c->io.download_bytes += col_bytes * (size_t)r->arity;
    c->io.download_seconds += rf_now() - t0;
    return ok;
}

/* Uploads through the same staging buffers: each thread copies a chunk of
 * a column into its pinned buffer and DMAs it on its own stream. A copy
 * from pageable memory is staged by the driver on one thread: 1.9 MB of
 * wing's edges took 0.5 ms (4 GB/s). Small uploads stay plain. */
#define RF_STAGED_UPLOAD_MIN ((size_t)1 << 20)

bool rf_drel_upload(rf_cuda_ctx *c, rf_drel *r, const rf_table *t, const char *what, rf_status *st)
{
    double t0 = rf_now();
    rf_drel tmp;
    rf_drel_init(&tmp, t->arity);
    if (!rf_drel_alloc(c, &tmp, t->nrows, what, st))
        return false;
    size_t col_bytes = t->nrows * 8, total = col_bytes * (size_t)t->arity;
    bool ok = true;
    if (host_cols_pinned(t->cols, t->arity, col_bytes)) {
        ok = pinned_copy(c, tmp.data, tmp.cap, t->cols, t->arity, col_bytes, true, st);
    } else if (total >= RF_STAGED_UPLOAD_MIN && c->nstage > 1) {
        /* The allocation is ordered on c->stream; the staging streams
         * write it only once that is done. */
        ok = rf_cuda_sync(c, st);
        cudaError_t e = ok ? stage_copy(c, tmp.data, tmp.cap, t->cols, t->arity, col_bytes, true, (size_t)128 << 10)
                           : cudaSuccess;
        if (e != cudaSuccess)
            ok = rf_cuda_check(c, e, "upload", st);
    } else {
        for (int k = 0; k < t->arity && t->nrows && ok; k++)
            ok = rf_cuda_check(c, cudaMemcpyAsync(tmp.data + (size_t)k * tmp.cap, t->cols[k], col_bytes,
                                                  cudaMemcpyHostToDevice, c->stream), "upload", st);
        /* Inputs are small next to what loops derive from them; waiting
         * here makes the PCIe time visible in --stats. */
        ok = ok && rf_cuda_sync(c, st);
    }
    if (!ok) {
        rf_drel_free(c, &tmp);
        return false;
    }
    rf_drel_move(c, r, &tmp);
    c->io.upload_bytes += total;
    c->io.upload_seconds += rf_now() - t0;
    return true;
}

/* ---- Copies beside the kernels ---- */

static bool copy_stream(rf_cuda_ctx *c, bool up, cudaStream_t *s, rf_status *st)
{
    cudaStream_t *mine = up ? &c->up_stream : &c->down_stream;
    if (!*mine && !rf_cuda_check(c, cudaStreamCreateWithFlags(mine, cudaStreamNonBlocking), "stream", st))
        return false;
    *s = *mine;
    return true;
}

/* An event recorded on `on` (timing off: the cheap kind), or NULL. */
static cudaEvent_t mark(rf_cuda_ctx *c, cudaStream_t on, rf_status *st)
{
    cudaEvent_t e = NULL;
    if (!rf_cuda_check(c, cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "event", st))
        return NULL;
    if (!rf_cuda_check(c, cudaEventRecord(e, on), "event", st)) {
        cudaEventDestroy(e);
        return NULL;
    }
    return e;
}

/* The columns' copies on copy stream s after what c->stream has queued;
 * *done marks their end. */
static bool copy_ahead(rf_cuda_ctx *c, rf_word *dev, size_t cap, rf_word *const *host, int arity, size_t col_bytes,
                       bool up, rf_cuda_done **done, rf_status *st)
{
    cudaStream_t s;
    if (!copy_stream(c, up, &s, st))
        return false;
    cudaEvent_t after = mark(c, c->stream, st);
    if (!after)
        return false;
    bool ok = rf_cuda_check(c, cudaStreamWaitEvent(s, after, 0), "stream wait", st);
    cudaEventDestroy(after);   /* (a wait already queued keeps its meaning) */
    for (int k = 0; ok && k < arity; k++) {
        rf_word *d = dev + (size_t)k * cap;
        ok = rf_cuda_check(c, up ? cudaMemcpyAsync(d, host[k], col_bytes, cudaMemcpyHostToDevice, s)
                                 : cudaMemcpyAsync(host[k], d, col_bytes, cudaMemcpyDeviceToHost, s),
                           up ? "upload" : "download", st);
    }
    cudaEvent_t end = ok ? mark(c, s, st) : NULL;
    if (!end)
        return false;
    *done = (rf_cuda_done *)end;
    *(up ? &c->io.pinned_up_bytes : &c->io.pinned_down_bytes) += col_bytes * (size_t)arity;
    *(up ? &c->io.upload_bytes : &c->io.download_bytes) += col_bytes * (size_t)arity;
    return true;
}

bool rf_drel_upload_ahead(rf_cuda_ctx *c, rf_drel *r, const rf_table *t, const char *what, rf_cuda_done **done,
                          rf_status *st)
{
    *done = NULL;
    size_t col_bytes = t->nrows * 8;
    if (!host_cols_pinned(t->cols, t->arity, col_bytes))
        return rf_drel_upload(c, r, t, what, st);
    double t0 = rf_now();
    rf_drel tmp;
    rf_drel_init(&tmp, t->arity);
    if (!rf_drel_alloc(c, &tmp, t->nrows, what, st))
        return false;
    if (!copy_ahead(c, tmp.data, tmp.cap, t->cols, t->arity, col_bytes, true, done, st)) {
        rf_cuda_copies_wait(c, st);   /* (nothing may still read tmp) */
        rf_drel_free(c, &tmp);
        return false;
    }
    tmp.nrows = t->nrows;
    rf_drel_move(c, r, &tmp);
    c->io.upload_seconds += rf_now() - t0;   /* (the time to start it) */
    return true;
}

bool rf_drel_download_at_ahead(rf_cuda_ctx *c, const rf_drel *r, rf_table *t, size_t at, rf_cuda_done **done,
                               rf_status *st)
{
    *done = NULL;
    if (r->arity != t->arity || r->arity > RF_CUDA_MAX_COLS || at > t->cap || r->nrows > t->cap - at)
        return rf_fail(st, RF_EXIT_RUNTIME_ERROR, "download of %zu rows at row %zu of a table of %zu", r->nrows, at,
                       t->cap);
    size_t col_bytes = r->nrows * 8;
    rf_word *host[RF_CUDA_MAX_COLS];
    for (int k = 0; k < r->arity; k++)
        host[k] = t->cols[k] + at;
    if (!host_cols_pinned(host, r->arity, col_bytes))
        return rf_drel_download_at(c, r, t, at, st);
    double t0 = rf_now();
    bool ok = copy_ahead(c, r->data, r->cap, host, r->arity, col_bytes, false, done, st);
    c->io.download_seconds += rf_now() - t0;
    return ok;
}

void rf_cuda_wait_done(rf_cuda_ctx *c, rf_cuda_done *done)
{
    if (!done)
        return;
    cudaEvent_t e = (cudaEvent_t)done;
    (void)cudaStreamWaitEvent(c->stream, e, 0);   /* (an error here shows at the next check) */
    cudaEventDestroy(e);
}

bool rf_cuda_done_finished(rf_cuda_done *done, bool block)
{
    cudaEvent_t e = (cudaEvent_t)done;
    if (block)
        return cudaEventSynchronize(e) == cudaSuccess;   /* (a failed copy shows in rf_cuda_copies_wait) */
    if (cudaEventQuery(e) == cudaErrorNotReady) {
        (void)cudaGetLastError();   /* ("not ready" is no error to keep; launches were checked as made) */
        return false;
    }
    return true;   /* (or failed: rf_cuda_copies_wait reports it) */
}

void rf_cuda_done_release(rf_cuda_done *done)
{
    if (done)
        cudaEventDestroy((cudaEvent_t)done);
}

bool rf_cuda_copies_wait(rf_cuda_ctx *c, rf_status *st)
{
    bool ok = true;
    double t0 = rf_now();
    if (c->up_stream)
        ok = rf_cuda_check(c, cudaStreamSynchronize(c->up_stream), "upload", st) && ok;
    if (c->down_stream)
        ok = rf_cuda_check(c, cudaStreamSynchronize(c->down_stream), "download", st) && ok;
    c->io.copies_wait_seconds += rf_now() - t0;
    return ok;
}

bool rf_cuda_set_string_ranks(rf_cuda_ctx *c, const uint32_t *rank, size_t n, rf_status *st)
{
    if (c->rank)
        rf_cuda_free(c, c->rank, c->nrank * sizeof(uint32_t));
    c->rank = NULL;
    c->nrank = 0;
    if (n == 0)
        return true;
    c->rank = rf_cuda_alloc(c, n * sizeof(uint32_t), "string order", st);
    if (!c->rank)
        return false;
    c->nrank = n;
    /* On c->stream, then waited for (the caller may free `rank` on
     * return). Not cudaMemcpy: the legacy stream does not wait for
     * c->stream (non-blocking), and the pool may hand out memory freed on
     * c->stream whose kernels are still queued there, so a plain copy
     * could write it under them (a string column of a queued kernel read
     * as ranks, or the ranks overwritten), which only shows when the
     * device lags behind the host (many processes sharing it). */
    return rf_cuda_check(c, cudaMemcpyAsync(c->rank, rank, n * sizeof(uint32_t), cudaMemcpyHostToDevice, c->stream),
                         "upload", st) &&
           rf_cuda_sync(c, st);
}

size_t rf_cuda_string_ranks(const rf_cuda_ctx *c) { return c->nrank; }

static int cmp_str_ids(const void *x, const void *y)
{
    return rf_value_compare(RF_TYPE_STRING, *(const rf_word *)x, *(const rf_word *)y);
}

bool rf_cuda_update_string_ranks(rf_cuda_ctx *c, rf_status *st)
{
    size_t n = rf_str_count();
    if (n == c->nrank)
        return true;
    if (n > UINT32_MAX)
        return rf_fail(st, RF_EXIT_RUNTIME_ERROR, "too many strings for the GPU string order");
    rf_word *ids = rf_malloc(rf_mul_size(n ? n : 1, sizeof *ids));
    uint32_t *rank = rf_malloc(rf_mul_size(n ? n : 1, sizeof *rank));
    for (size_t i = 0; i < n; i++)
        ids[i] = i;
    qsort(ids, n, sizeof *ids, cmp_str_ids);
    for (size_t i = 0; i < n; i++)
        rank[ids[i]] = (uint32_t)i;
    bool ok = rf_cuda_set_string_ranks(c, rank, n, st);
    free(ids);
    free(rank);
    return ok;
}

/* ---- Compute code ---- */

/* Operands of a device instruction (RF_DOP_LOOKUP is unary). */
static int dop_arity(int op) { return op == RF_DOP_LOOKUP ? 1 : rf_expr_arity((rf_exop)op); }

/* Checks one code against the interpreter's limits and appends it to ins,
 * marking the right operand of every && / || and the branches of every IF
 * for the short circuit (rf_dins). */
static bool append_code(const rf_code *code, int ncols, rf_dins *ins, int *pos, rf_status *st)
{
    int base = *pos;
    int starts[RF_CUDA_MAX_STACK + 1];
    int depth = 0;
    for (int k = 0; k < code->n; k++) {
        const rf_instr *i = &code->ins[k];
        if ((i->op >= RF_EX_COUNT_ && i->op != RF_DOP_LOOKUP) || i->op == RF_EX_VAR ||
            (i->op == RF_EX_COL && (i->index < 0 || i->index >= ncols)) ||
            (i->op == RF_EX_ROWID && (i->index < 0 || i->index > 1)))
            return rf_fail(st, RF_EXIT_RUNTIME_ERROR, "malformed compute code (instruction %d)", k);
        int ar = dop_arity(i->op);
        if (depth < ar)
            return rf_fail(st, RF_EXIT_RUNTIME_ERROR, "malformed compute code (stack underflow)");
        int start = base + k;
        if (ar == 1) {
            start = starts[depth - 1];
        } else if (ar == 2) {
            int right = starts[depth - 1];
            start = starts[depth - 2];
            if (i->op == RF_EX_AND || i->op == RF_EX_OR) {
                ins[right].sc = i->op == RF_EX_AND ? 1 : 2;
                ins[right].skip = base + k;
            }
        } else if (ar == 3) {
            int then_ = starts[depth - 2], else_ = starts[depth - 1];
            start = starts[depth - 3];
            if (i->op == RF_EX_IF) {
                ins[then_].sc = 3;
                ins[then_].skip = else_;
                ins[else_].sc = 4;
                ins[else_].skip = base + k;
            }
        }
        depth -= ar;
        if (depth >= RF_CUDA_MAX_STACK)
            return rf_fail(st, RF_EXIT_RUNTIME_ERROR,
                           "expression too deep for the GPU interpreter (more than %d values)",
                           RF_CUDA_MAX_STACK);
        starts[depth++] = start;
        rf_dins *d = &ins[base + k];
        d->op = i->op;
        d->type = i->type;
        d->arg_type = i->arg_type;
        d->index = i->index;
        d->value = i->value;
        if (d->sc == 0)
            d->skip = -1;
    }
    if (code->n > 0 && depth != 1)
        return rf_fail(st, RF_EXIT_RUNTIME_ERROR, "malformed compute code (leftover values)");
    *pos = base + code->n;
    return true;
}

/* Uploads the filter and projections of one kernel into the context's code
 * buffer and describes them in *p. */
static bool upload_prog(rf_cuda_ctx *c, const rf_code *filter, int nproj, const rf_code *proj,
                        int ncols, rf_dprog *p, rf_status *st)
{
    memset(p, 0, sizeof *p);
    if (nproj > RF_CUDA_MAX_COLS)
        return rf_fail(st, RF_EXIT_RUNTIME_ERROR, "%d projections; the GPU backend takes at most %d",
                       nproj, RF_CUDA_MAX_COLS);
    size_t total = filter ? (size_t)filter->n : 0;
    for (int k = 0; k < nproj; k++)
        total += (size_t)proj[k].n;
    rf_dins *ins = rf_calloc(total ? total : 1, sizeof *ins);
    int pos = 0;
    if (filter && !append_code(filter, ncols, ins, &pos, st))
        goto fail;
    p->filter_n = pos;
    for (int k = 0; k < nproj; k++) {
        p->off[k] = pos;
        if (proj[k].n == 0) {
            rf_fail(st, RF_EXIT_RUNTIME_ERROR, "empty projection %d", k);
            goto fail;
        }
        if (!append_code(&proj[k], ncols, ins, &pos, st))
            goto fail;
    }
    p->off[nproj] = pos;
    p->nproj = nproj;
    if (total > c->code_cap) {
        if (c->code)
            rf_cuda_free(c, c->code, c->code_cap * sizeof(rf_dins));
        c->code_cap = 0;
        c->code = rf_cuda_alloc(c, (total + 64) * sizeof(rf_dins), "compute code", st);
        if (!c->code)
            goto fail;
        c->code_cap = total + 64;
    }
    /* Pageable source: the copy is staged before the call returns, so ins
     * may be freed right after. */
    if (total && !rf_cuda_check(c, cudaMemcpyAsync(c->code, ins, total * sizeof(rf_dins),
                                                   cudaMemcpyHostToDevice, c->stream), "upload code", st))
        goto fail;
    free(ins);
    p->ins = c->code;
    p->rank = c->rank;
    p->nrank = c->nrank;
    p->err = c->err;
    p->tab = c->tab;
    return true;
fail:
    free(ins);
    return false;
}

static bool all_columns(int nproj, const rf_code *proj)
{
    for (int k = 0; k < nproj; k++)
        if (rf_code_as_column_(&proj[k]) < 0)
            return false;
    return true;
}

/* ---- Scratch arrays with automatic release ---- */
typedef struct tmpbuf {
    void *p;
    size_t bytes;
} tmpbuf;

static void *tmp_get(rf_cuda_ctx *c, tmpbuf *t, size_t bytes, const char *what, rf_status *st)
{
    t->p = rf_cuda_alloc(c, bytes, what, st);
    t->bytes = bytes ? bytes : 1;
    return t->p;
}

static void tmp_put(rf_cuda_ctx *c, tmpbuf *t)
{
    if (t->p)
        rf_cuda_free(c, t->p, t->bytes);
    t->p = NULL;
}

#define CK(call, where)                                                                 \
    do {                                                                                \
        if (!rf_cuda_check(c, (call), (where), st))                                     \
            goto fail;                                                                  \
    } while (0)

static bool check_arity(const rf_drel *r, const char *what, rf_status *st)
{
    if (r->arity > RF_CUDA_MAX_COLS)
        return rf_fail(st, RF_EXIT_RUNTIME_ERROR, "relation %s has %d columns; the GPU backend takes at most %d",
                       what ? what : "?", r->arity, RF_CUDA_MAX_COLS);
    return true;
}

/* ---- String tables ----
 * The string functions (substr, strlen, concat, like, starts_with,
 * ends_with, contains: rf_exop_is_string_op) read and intern dictionary
 * strings, which live on the host. A subexpression whose only non-constant
 * input is one string column (like(s, "%x%"), substr(s, 1, 2) = "ab",
 * strlen(s) > 3: the largest such subtree around each string function) is
 * a function of that column's dictionary id: per launch it is evaluated on
 * the host for every id the column holds (the CPU evaluator,
 * rf_code_eval_batch, so the semantics are the CPU's), the results go to a
 * table on the device, and the subtree becomes COL, RF_DOP_LOOKUP. A
 * subtree of constants only becomes a CONST. Anything else (concat of two
 * columns, like with a pattern column, substr with a column as start) and a
 * tabulation that faults (on some id: the rows may never reach it) make
 * the kernel run on the host instead (host_map, host_join), which
 * rf_cuda_host_kernels counts. */

typedef RF_VEC(rf_word) wordvec;

/* n more words at the end of v, their contents undefined; the offset of
 * the first. */
static size_t wordvec_extend(wordvec *v, size_t n)
{
    size_t off = v->len;
    if (n == 0)
        return off;
    if (v->len + n > v->cap) {
        v->cap = v->len + n > 2 * v->cap ? v->len + n : 2 * v->cap;
        v->items = rf_realloc(v->items, rf_mul_size(v->cap, sizeof *v->items));
    }
    v->len += n;
    return off;
}

/* n more zero words. */
static size_t wordvec_grow(wordvec *v, size_t n)
{
    size_t off = wordvec_extend(v, n);
    if (n)
        memset(v->items + off, 0, n * sizeof *v->items);
    return off;
}

/* The tables of one launch: heads[2k], heads[2k+1] = offset and length of
 * table k in data. On the device they are one buffer, the heads first (the
 * offsets then count from the buffer's start): instructions name table k,
 * so the generated source, and NVRTC's cache, do not change with the
 * tables' sizes. */
typedef struct tables {
    wordvec heads, data;
} tables;

/* The device layout of t (caller frees buf->items). */
static void tables_layout(const tables *t, wordvec *buf)
{
    memset(buf, 0, sizeof *buf);
    size_t nh = t->heads.len;
    wordvec_grow(buf, nh + t->data.len);
    for (size_t i = 0; i < nh; i += 2) {
        buf->items[i] = t->heads.items[i] + nh;
        buf->items[i + 1] = t->heads.items[i + 1];
    }
    if (t->data.len)
        memcpy(buf->items + nh, t->data.items, t->data.len * sizeof *buf->items);
}

/* The distinct ids of a column (*done), unless its largest id would make
 * the flags larger than the column (*done false: download it whole). */
static bool download_distinct(rf_cuda_ctx *c, const uint64_t *colp, size_t rows, rf_word **out, size_t *n,
                              bool *done, rf_status *st)
{
    tmpbuf mx = {0}, flags = {0}, pos = {0}, ids = {0};
    uint64_t maxid = 0, nd = 0;
    size_t keep = *n;
    *out = NULL;
    *done = false;
    if (!tmp_get(c, &mx, 8, "string ids", st) || !rf_cub_max(c, colp, rows, mx.p, st) ||
        !read_word(c, mx.p, &maxid, st))
        goto fail;
    if (maxid >= (uint64_t)rows * 8) {
        tmp_put(c, &mx);
        *n = keep;
        return true;
    }
    *n = 0;
    size_t len = (size_t)maxid + 1;
    if (!tmp_get(c, &flags, len, "string ids", st) || !tmp_get(c, &pos, (len + 1) * 8, "string ids", st))
        goto fail;
    CK(cudaMemsetAsync(flags.p, 0, len, c->stream), "string ids");
    CK(rf_k_mark_values(c->stream, colp, rows, flags.p), "string ids");
    if (!rf_cub_flag_scan(c, flags.p, pos.p, len, st) || !read_word(c, (uint64_t *)pos.p + len, &nd, st))
        goto fail;
    if (!tmp_get(c, &ids, nd * 8 + 8, "string ids", st))
        goto fail;
    CK(rf_k_flagged_values(c->stream, flags.p, pos.p, len, ids.p), "string ids");
    *out = rf_malloc((nd ? nd : 1) * sizeof **out);
    if (nd && !rf_cuda_read_back(c, ids.p, *out, nd * sizeof **out, st))
        goto fail;
    c->io.download_bytes += nd * sizeof **out;
    *n = nd;
    *done = true;
    tmp_put(c, &mx), tmp_put(c, &flags), tmp_put(c, &pos), tmp_put(c, &ids);
    return true;
fail:
    free(*out);
    *out = NULL;
    tmp_put(c, &mx), tmp_put(c, &flags), tmp_put(c, &pos), tmp_put(c, &ids);
    return false;
}

typedef struct prepared {
    const rf_code *filter;        /* the codes to run: the caller's, or own */
    const rf_code *proj;
    int nproj;
    rf_code own_filter;
    rf_code *own_proj;
    bool owned;
    bool host;                    /* the kernel must run on the host */
} prepared;

static void prepared_free(prepared *pp)
{
    if (pp->owned) {
        rf_code_free(&pp->own_filter);
        for (int k = 0; k < pp->nproj; k++)
            rf_code_free(&pp->own_proj[k]);
        free(pp->own_proj);
    }
    memset(pp, 0, sizeof *pp);
}

static bool code_compares_strings(const rf_code *c)
{
    for (int k = 0; c && k < c->n; k++)
        if (c->ins[k].op >= RF_EX_LT && c->ins[k].op <= RF_EX_GE && c->ins[k].arg_type == RF_TYPE_STRING)
            return true;
    return false;
}

static bool code_has_string_op(const rf_code *c)
{
    for (int k = 0; c && k < c->n; k++)
        if (c->ins[k].op < RF_EX_COUNT_ && rf_exop_is_string_op((rf_exop)c->ins[k].op))
            return true;
    return false;
}

bool rf_cuda_code_on_device(const rf_code *c)
{
    if (!code_has_string_op(c))
        return true;
    int n = c->n, sp = 0;
    int *stack = rf_malloc((size_t)n * sizeof *stack), *col = rf_malloc((size_t)n * sizeof *col);
    bool *str = rf_malloc((size_t)n), *ok = rf_malloc((size_t)n), on = true;
    /* col[k]: -1 no column below k, -2 several, else the one column (a
     * string column); str[k]: a string function below; ok[k]: every
     * string function below k lies in a tabulable subtree. */
    for (int k = 0; k < n; k++) {
        const rf_instr *i = &c->ins[k];
        int ar = rf_expr_arity((rf_exop)i->op);
        col[k] = i->op == RF_EX_COL ? (i->type == RF_TYPE_STRING ? i->index : -2)
                 : i->op == RF_EX_ROWID ? -2 /* varies by row: never a constant */
                                        : -1;
        str[k] = i->op < RF_EX_COUNT_ && rf_exop_is_string_op((rf_exop)i->op);
        bool kids_ok = true;
        for (int a = 0; a < ar && sp > 0; a++) {
            int ch = stack[--sp];
            if (col[ch] != -1)
                col[k] = col[k] == -1 || col[k] == col[ch] ? col[ch] : -2;
            str[k] = str[k] || str[ch];
            kids_ok = kids_ok && ok[ch];
        }
        ok[k] = (str[k] && col[k] != -2) || (kids_ok && !(i->op < RF_EX_COUNT_ && rf_exop_is_string_op((rf_exop)i->op)));
        stack[sp++] = k;
    }
    on = n > 0 && ok[n - 1];
    free(stack);
    free(col);
    free(str);
    free(ok);
    return on;
}

/* Where tabulation gets a column's words: the device (l ++ r), or host
 * tables (tests). */
typedef struct colsrc {
    rf_cuda_ctx *c;
    const rf_drel *l, *r;
    int al;
    const rf_table *host;
} colsrc;

/* The host words of column `col` of the (l ++ r) rows. */
/* Large columns: their distinct ids found on the device (a flag per id,
 * a scan, the flagged ids), so that only those cross to the host, not a
 * word per row (Q14 at SF 10: part's 2M p_type words for 150 ids). */
#define RF_DISTINCT_ON_DEVICE ((size_t)1 << 16)

static bool download_column(rf_cuda_ctx *c, const rf_drel *l, int al, const rf_drel *r, int col, rf_word **out,
                            size_t *n, bool *distinct, rf_status *st)
{
    const rf_drel *rel = col < al ? l : r;
    int k = col < al ? col : col - al;
    *n = rel && k < rel->arity ? rel->nrows : 0;
    *distinct = false;
    if (*n > RF_DISTINCT_ON_DEVICE) {
        if (!download_distinct(c, rel->data + (size_t)k * rel->cap, *n, out, n, distinct, st))
            return false;
        if (*distinct)
            return true;
    }
    *out = rf_malloc((*n ? *n : 1) * sizeof **out);
    if (*n && !rf_cuda_read_back(c, rel->data + (size_t)k * rel->cap, *out, *n * sizeof **out, st)) {
        free(*out);
        *out = NULL;
        return false;
    }
    c->io.download_bytes += *n * sizeof **out;
    return true;
}

/* The words of column col (*distinct: each once, in increasing order). */
static bool fetch_column(const colsrc *src, int col, rf_word **out, size_t *n, bool *distinct, rf_status *st)
{
    if (!src->host)
        return download_column(src->c, src->l, src->al, src->r, col, out, n, distinct, st);
    *n = col < src->host->arity ? src->host->nrows : 0;
    *out = rf_malloc((*n ? *n : 1) * sizeof **out);
    if (*n)
        memcpy(*out, src->host->cols[col], *n * sizeof **out);
    /* each once in increasing order, as the device's distinct ids come */
    *distinct = true;
    for (size_t i = 1; i < *n && *distinct; i++)
        *distinct = (*out)[i] > (*out)[i - 1];
    return true;
}

/* The number of rows column col has. */
static size_t column_rows(const colsrc *src, int col)
{
    if (src->host)
        return col < src->host->arity ? src->host->nrows : 0;
    const rf_drel *rel = col < src->al ? src->l : src->r;
    int k = col < src->al ? col : col - src->al;
    return rel && k < rel->arity ? rel->nrows : 0;
}

/* RF_CUDA_TRACE's marks inside the tabulation (contexts only). */
static void trace_tables(const colsrc *src, const char *phase)
{
    if (src->c)
        rf_cuda_trace(src->c, phase);
}

/* Table statistics (contexts only; tests tabulate without one). */
static void count_table(const colsrc *src, size_t entries)
{
    if (src->c) {
        src->c->string_tables++;
        src->c->string_table_entries += entries;
    }
}

/* Evaluates a tabulated subexpression over nd distinct ids. On every core
 * when it interns nothing (like, contains, strlen, comparisons: results
 * that are not strings, no string made on the way), since the dictionary
 * is then only read; when it interns (substr, concat: the dictionary is
 * not thread-safe), on every core looking strings up only, then in one
 * thread for what was missing (eval_interning). Q13's like() over 1.5M
 * order comments at SF 1: 0.27 s on one core. */
typedef struct id_eval {
    const rf_code *code;
    rf_word *const *cols;
    size_t n, per;
    rf_word *vals;
    rf_status *st;                /* [pieces] */
    bool *ok;                     /* [pieces] */
} id_eval;

static void id_eval_piece(void *ctx, int piece)
{
    id_eval *e = ctx;
    size_t b = (size_t)piece * e->per, end = b + e->per < e->n ? b + e->per : e->n;
    rf_status_init(&e->st[piece]);
    e->ok[piece] = b >= end || rf_code_eval_batch(e->code, e->cols, b, end, e->vals + b, &e->st[piece]);
}

/* A code that interns (substr, concat) over many ids. One thread first
 * evaluates a sample of them (every stride-th id, interning what it
 * makes), then every core evaluates all of them, in blocks, with the
 * dictionary only read (rf_str_lookup_only); a block that met a string not
 * yet interned (or faulted meanwhile: its missing string may be why) is
 * evaluated again afterwards, in order, on one thread. Strings and their
 * ids are thus those of one thread going through the sample and then the
 * missed blocks in order: the same on every run. Why the sample: results
 * that repeat (q22's substr(c_phone, 1, 2): 25 country codes for 1.5M
 * phones at SF 10) are then all interned before the parallel pass, which
 * otherwise misses them in every block and leaves the whole work to the
 * one thread (59 ms of q22's 100 ms MAP on the H100's host, traced). */
#define RF_LOOKUP_BLOCK 256
#define RF_INTERN_SAMPLE 4096
typedef struct intern_eval {
    const rf_code *code;
    rf_word *const *cols;
    size_t n, per;
    rf_word *vals;
    uint8_t *missed;              /* [blocks] */
} intern_eval;

static void intern_eval_piece(void *ctx, int piece)
{
    intern_eval *e = ctx;
    size_t b = (size_t)piece * e->per, end = b + e->per < e->n ? b + e->per : e->n;
    rf_str_lookup_only(true);
    for (size_t at = b; at < end; at += RF_LOOKUP_BLOCK) {
        size_t stop = end - at < RF_LOOKUP_BLOCK ? end : at + RF_LOOKUP_BLOCK;
        rf_status quiet;
        rf_status_init(&quiet);
        bool ok = rf_code_eval_batch(e->code, e->cols, at, stop, e->vals + at, &quiet);
        e->missed[at / RF_LOOKUP_BLOCK] = rf_str_missed() || !ok;
    }
    rf_str_lookup_only(false);
}

static bool eval_interning(const rf_code *code, rf_word *const *cols, size_t nd, rf_word *vals, rf_status *st)
{
    /* The sample, interned in id order (a fault here is left to the blocks). */
    size_t stride = nd / RF_INTERN_SAMPLE > 0 ? nd / RF_INTERN_SAMPLE : 1, ns = (nd + stride - 1) / stride;
    rf_word *sample = rf_malloc(ns * sizeof *sample), *svals = rf_malloc(ns * sizeof *svals);
    for (size_t k = 0; k < ns; k++)
        sample[k] = cols[0][k * stride];
    rf_word *scols[1] = {sample};
    rf_status quiet;
    rf_status_init(&quiet);
    (void)rf_code_eval_batch(code, scols, 0, ns, svals, &quiet);
    free(sample);
    free(svals);
    int pieces = rf_prims_threads() * 4;
    size_t per = (nd + (size_t)pieces - 1) / (size_t)pieces;
    per = (per + RF_LOOKUP_BLOCK - 1) / RF_LOOKUP_BLOCK * RF_LOOKUP_BLOCK;   /* pieces of whole blocks */
    size_t nblocks = (nd + RF_LOOKUP_BLOCK - 1) / RF_LOOKUP_BLOCK;
    intern_eval e = {code, cols, nd, per, vals, rf_calloc(nblocks, 1)};
    rf_par_for((int)((nd + per - 1) / per), intern_eval_piece, &e);
    bool ok = true;
    for (size_t k = 0; k < nblocks && ok; k++)
        if (e.missed[k]) {
            size_t at = k * RF_LOOKUP_BLOCK, stop = at + RF_LOOKUP_BLOCK < nd ? at + RF_LOOKUP_BLOCK : nd;
            ok = rf_code_eval_batch(code, cols, at, stop, vals + at, st);
        }
    free(e.missed);
    return ok;
}

static bool eval_distinct_ids(const rf_code *code, rf_word *const *cols, size_t nd, rf_word *vals, rf_status *st)
{
    if (rf_code_interns(code) && nd >= 8192 && rf_prims_threads() > 1)
        return eval_interning(code, cols, nd, vals, st);
    int pieces = rf_code_interns(code) || nd < 8192 ? 1 : rf_prims_threads() * 4;
    if (pieces <= 1)
        return rf_code_eval_batch(code, cols, 0, nd, vals, st);
    id_eval e = {code, cols, nd, (nd + (size_t)pieces - 1) / (size_t)pieces, vals,
                 rf_calloc((size_t)pieces, sizeof(rf_status)), rf_calloc((size_t)pieces, sizeof(bool))};
    rf_par_for(pieces, id_eval_piece, &e);
    bool ok = true;
    for (int i = 0; i < pieces && ok; i++)
        if (!e.ok[i]) {
            *st = e.st[i];
            ok = false;
        }
    free(e.st);
    free(e.ok);
    return ok;
}

/* The subtree's value for every id in [0, n), in pieces on every core,
 * written in place: vals[id], or bit id of vals where `bits` (a boolean
 * subtree: values 0 or 1). False when it faults on one. Pieces are whole
 * blocks of RF_RANGE_BLOCK ids, so that no two write the same word. */
typedef struct range_eval {
    const rf_code *code;
    size_t n, per;
    rf_word *vals;
    bool bits;
    const uint8_t *present;       /* [n] or NULL: whether some row holds the id (others left 0) */
    bool *ok;                     /* [pieces] */
} range_eval;

#define RF_RANGE_BLOCK 4096

static void range_eval_piece(void *ctx, int piece)
{
    range_eval *e = ctx;
    size_t b = (size_t)piece * e->per, end = b + e->per < e->n ? b + e->per : e->n;
    rf_word ids[RF_RANGE_BLOCK], *cols[1] = {ids};
    rf_status quiet;
    rf_status_init(&quiet);
    e->ok[piece] = true;
    rf_word vals[RF_RANGE_BLOCK];
    for (size_t at = b; at < end && e->ok[piece]; at += RF_RANGE_BLOCK) {
        size_t cnt = end - at < RF_RANGE_BLOCK ? end - at : RF_RANGE_BLOCK;
        if (!e->present && !e->bits) {
            for (size_t i = 0; i < cnt; i++)
                ids[i] = (rf_word)(at + i);
            e->ok[piece] = rf_code_eval_batch(e->code, cols, 0, cnt, e->vals + at, &quiet);
            continue;
        }
        size_t m = 0;   /* the ids of the block some row holds, evaluated together */
        for (size_t i = 0; i < cnt; i++)
            if (!e->present || e->present[at + i])
                ids[m++] = (rf_word)(at + i);
        e->ok[piece] = m == 0 || rf_code_eval_batch(e->code, cols, 0, m, vals, &quiet);
        if (!e->ok[piece])
            break;
        if (e->bits) {
            rf_word *w = e->vals + at / 64;
            memset(w, 0, (cnt + 63) / 64 * sizeof *w);
            for (size_t i = 0; i < m; i++)
                w[(ids[i] - at) / 64] |= (rf_word)(vals[i] != 0) << (ids[i] % 64);
        } else {
            memset(e->vals + at, 0, cnt * sizeof *e->vals);
            for (size_t i = 0; i < m; i++)
                e->vals[ids[i]] = vals[i];
        }
    }
}

/* (*present)[id] := whether some row of column col holds id, for id < n
 * (malloc'd). False (nothing made) where an id reaches n or on an error:
 * the caller evaluates the whole range or the distinct ids instead. */
static bool present_ids(const colsrc *src, int col, size_t n, uint8_t **present)
{
    *present = NULL;
    size_t nrows = column_rows(src, col);
    if (src->host) {   /* (tests: host tables) */
        const rf_word *w = src->host->cols[col];
        uint8_t *p = rf_calloc(n, 1);
        for (size_t i = 0; i < nrows; i++) {
            if (w[i] >= n) {
                free(p);
                return false;
            }
            p[w[i]] = 1;
        }
        *present = p;
        return true;
    }
    rf_cuda_ctx *c = src->c;
    const rf_drel *rel = col < src->al ? src->l : src->r;
    int k = col < src->al ? col : col - src->al;
    const uint64_t *colp = rel->data + (size_t)k * rel->cap;
    rf_status quiet, *st = &quiet;
    rf_status_init(&quiet);
    tmpbuf mx = {0}, flags = {0};
    uint64_t maxid = 0;
    uint8_t *p = NULL;
    if (!tmp_get(c, &mx, 8, "string ids", st) || !rf_cub_max(c, colp, nrows, mx.p, st) ||
        !read_word(c, mx.p, &maxid, st) || maxid >= n || !tmp_get(c, &flags, n, "string ids", st))
        goto fail;
    CK(cudaMemsetAsync(flags.p, 0, n, c->stream), "string ids");
    CK(rf_k_mark_values(c->stream, colp, nrows, flags.p), "string ids");
    p = rf_malloc(n);
    if (!rf_cuda_read_back(c, flags.p, p, n, st))
        goto fail;
    c->io.download_bytes += n;
    tmp_put(c, &mx), tmp_put(c, &flags);
    *present = p;
    return true;
fail:
    free(p);
    tmp_put(c, &mx), tmp_put(c, &flags);
    return false;
}

/* A table over every interned string id, where column col has many rows
 * and the dictionary holds between half and twice as many strings (Q13 at
 * SF 10: like() over 14M distinct order comments in 15M rows; Q02's 150
 * p_type values in 2M rows, with 400K strings interned, are found on the
 * device: 2 ms less than evaluating all 400K). Nothing crosses
 * from the device, nothing is deduplicated or scattered, and the pieces
 * write the table in place: 0.49 s of Q13's 0.50 s went to finding the
 * distinct ids on the device, downloading them, deduplicating, evaluating
 * and scattering. Only for codes that intern nothing (the dictionary must
 * not grow meanwhile); false, with nothing appended, where that does not
 * apply or the code faults on some id (it may be one no row holds): the
 * caller then tabulates the column's distinct ids.
 *
 * Where the dictionary holds more strings than the column has rows, some
 * ids are surely absent: a flag per id is set on the device from the
 * column's rows (n bytes cross, not a word per row) and only the ids
 * flagged are evaluated. A rank of a distributed run is such a case: its
 * dictionary is every rank's (they read every input, so that ids agree),
 * its rows a part (Q13 at SF 10 on two H200s: 14.1M comment ids for 7.5M
 * rows, the whole range 113 ms on a rank's 16 threads against one GPU's
 * 68 ms on 32). */
static bool present_ids(const colsrc *src, int col, size_t n, uint8_t **present);

static bool tabulate_id_range(const colsrc *src, int col, const rf_code *sub, bool bits, tables *tabs,
                              size_t *entries)
{
    size_t nrows = column_rows(src, col), n = rf_str_count();
    const char *env = getenv("RF_CUDA_ID_RANGE");   /* off: the distinct ids always (for measuring) */
    if (nrows <= RF_DISTINCT_ON_DEVICE || n == 0 || n > 2 * nrows || 2 * n < nrows || rf_code_interns(sub) ||
        (env && strcmp(env, "off") == 0))
        return false;
    uint8_t *present = NULL;
    if (n > nrows && !present_ids(src, col, n, &present))
        return false;
    size_t off = wordvec_extend(&tabs->data, bits ? (n + 63) / 64 : n);
    size_t per = (n + (size_t)rf_prims_threads() * 4 - 1) / ((size_t)rf_prims_threads() * 4);
    per = (per + RF_RANGE_BLOCK - 1) / RF_RANGE_BLOCK * RF_RANGE_BLOCK;
    int pieces = (int)((n + per - 1) / per);
    range_eval e = {sub, n, per, tabs->data.items + off, bits, present, rf_calloc((size_t)pieces, sizeof(bool))};
    rf_par_for(pieces, range_eval_piece, &e);
    trace_tables(src, present ? "tables: eval id range (present ids)" : "tables: eval id range");
    bool ok = true;
    for (int i = 0; i < pieces; i++)
        ok = ok && e.ok[i];
    free(e.ok);
    free(present);
    if (!ok) {
        tabs->data.len = off;
        return false;
    }
    RF_PUSH(tabs->heads, off);
    RF_PUSH(tabs->heads, bits ? n | RF_TAB_BITS : n);
    *entries = n;
    return true;
}

/* A table over the distinct ids column col holds (*made; false when the
 * code faults on one of them: the kernel then runs on the host). */
static bool tabulate_distinct_ids(const colsrc *src, int col, const rf_code *sub, bool bits, tables *tabs,
                                  bool *made, size_t *entries, rf_status *st)
{
    *made = false;
    rf_word *ids = NULL;
    size_t nrows = 0, nd = 0, len = 1;
    bool distinct = false;
    if (!fetch_column(src, col, &ids, &nrows, &distinct, st))
        return false;
    trace_tables(src, "tables: fetch ids");
    if (distinct) {   /* in increasing order */
        nd = nrows;
        len = nd ? (size_t)ids[nd - 1] + 1 : 1;
    } else {
        rf_word maxid = 0;
        for (size_t i = 0; i < nrows; i++)
            if (ids[i] > maxid)
                maxid = ids[i];
        len = nrows ? (size_t)maxid + 1 : 1;
        uint8_t *seen = rf_calloc(len, 1);
        for (size_t i = 0; i < nrows; i++)
            if (!seen[ids[i]]) {
                seen[ids[i]] = 1;
                ids[nd++] = ids[i];
            }
        free(seen);
    }
    trace_tables(src, "tables: distinct ids");
    rf_word *cols[1] = {ids};
    rf_status quiet;
    rf_status_init(&quiet);
    const char *env = getenv("RF_CUDA_IN_PLACE_TABLES");   /* off: written apart and scattered (for measuring) */
    if (distinct && nd > 0 && !bits && ids[nd - 1] - ids[0] == nd - 1 && !(env && strcmp(env, "off") == 0)) {
        /* A run of ids (q22's 1.5M phones at SF 10, interned one after
         * another as customer was read): evaluated in place, on every core,
         * into the table, which is written once instead of zeroed, written
         * elsewhere and scattered (the host's fresh pages cost 7.6 ms of a
         * 12 MB scatter on the H200's host, as much as the evaluation) */
        size_t off = wordvec_extend(&tabs->data, len);
        rf_word *w = tabs->data.items + off;
        rf_hint_huge_pages(w + ids[0], nd * sizeof *w);   /* first touched by the pieces' threads */
        memset(w, 0, (size_t)ids[0] * sizeof *w);
        bool evaluated = eval_distinct_ids(sub, cols, nd, w + ids[0], &quiet);
        trace_tables(src, rf_code_interns(sub) ? "tables: eval in place (interning)" : "tables: eval in place");
        free(ids);
        if (!evaluated) {
            tabs->data.len = off;
            return true;
        }
        RF_PUSH(tabs->heads, off);
        RF_PUSH(tabs->heads, len);
        *made = true;
        *entries = nd;
        return true;
    }
    rf_word *vals = rf_malloc((nd ? nd : 1) * sizeof *vals);
    bool evaluated = !nd || eval_distinct_ids(sub, cols, nd, vals, &quiet);
    trace_tables(src, rf_code_interns(sub) ? "tables: eval (interning)" : "tables: eval");
    if (evaluated) {
        size_t off = wordvec_grow(&tabs->data, bits ? (len + 63) / 64 : len);
        rf_word *w = tabs->data.items + off;
        for (size_t i = 0; i < nd; i++) {
            if (bits)
                w[ids[i] / 64] |= (rf_word)(vals[i] != 0) << (ids[i] % 64);
            else
                w[ids[i]] = vals[i];
        }
        RF_PUSH(tabs->heads, off);
        RF_PUSH(tabs->heads, bits ? len | RF_TAB_BITS : len);
        *made = true;
        *entries = nd;
        trace_tables(src, "tables: scatter");
    }
    free(vals);
    free(ids);
    return true;
}

/* RF_CUDA_BIT_TABLES=off: boolean tables a word per id, as before (for
 * measuring). */
static bool bit_tables_off(void)
{
    const char *env = getenv("RF_CUDA_BIT_TABLES");
    return env && strcmp(env, "off") == 0;
}

/* The interning tables a kernel's projections made, which its filter
 * reads too (tabulate_kernel): q22's `substr(c_phone, 1, 2)` is the
 * projected country code and, seven times, what the filter compares with a
 * constant; the filter then compares the table's ids on the device (equal
 * strings are one id) instead of tabulating its whole OR tree again over
 * every phone on the host. */
typedef struct shared_table {
    const rf_instr *ins;          /* the subtree, in the projection's code */
    int n;
    int col;                      /* the string column it reads */
    size_t k;                     /* its table */
} shared_table;

typedef struct shared_tables {
    shared_table *t;
    int n, cap;
} shared_tables;

static bool instrs_equal(const rf_instr *a, const rf_instr *b, int n)
{
    for (int i = 0; i < n; i++)
        if (a[i].op != b[i].op || a[i].type != b[i].type || a[i].arg_type != b[i].arg_type ||
            a[i].index != b[i].index || a[i].value != b[i].value)
            return false;
    return true;
}

/* COL col, LOOKUP table k: a tabulated subtree's device form. */
static void emit_lookup(rf_code *out, int col, uint8_t type, size_t k)
{
    rf_instr ci, li;
    memset(&ci, 0, sizeof ci);
    memset(&li, 0, sizeof li);
    ci.op = RF_EX_COL;
    ci.type = ci.arg_type = RF_TYPE_STRING;
    ci.index = col;
    li.op = RF_DOP_LOOKUP;
    li.type = type;
    li.arg_type = RF_TYPE_STRING;
    li.index = (int32_t)k;
    out->ins[out->n++] = ci;
    out->ins[out->n++] = li;
}

/* Subtree [from, root] of code onto out with each shared table's subtree
 * read from its table, where that leaves no string function (else nothing
 * is emitted: false). Equal instructions are the same subtree: a run of
 * postfix instructions that is an expression on its own is a subtree of
 * any expression it lies in. Each replaced run has 2 or more
 * instructions, so out (sized as code) has room. */
static bool emit_with_shared(const rf_code *code, int from, int root, const shared_tables *sh, rf_code *out)
{
    int n0 = out->n, used = 0;
    for (int i = from; i <= root;) {
        const shared_table *hit = NULL;
        for (int s = 0; sh && s < sh->n && !hit; s++)
            if (i + sh->t[s].n - 1 <= root && instrs_equal(code->ins + i, sh->t[s].ins, sh->t[s].n))
                hit = &sh->t[s];
        if (hit) {
            emit_lookup(out, hit->col, hit->ins[hit->n - 1].type, hit->k);
            i += hit->n;
            used++;
            continue;
        }
        if (code->ins[i].op < RF_EX_COUNT_ && rf_exop_is_string_op((rf_exop)code->ins[i].op)) {
            out->n = n0;
            return false;
        }
        out->ins[out->n++] = code->ins[i++];
    }
    if (!used)
        out->n = n0;
    return used > 0;
}

/* Rewrites one code: each maximal tabulable subtree becomes COL + LOOKUP
 * (its table appended to *tabs, or a shared one read: use), or a CONST.
 * *host when the code cannot run on the device (or a tabulation faulted).
 * Where share is given, the interning subtrees tabulated are added to it. */
static bool tabulate_code(const colsrc *src, const rf_code *code, rf_code *out, tables *tabs,
                          const shared_tables *use, shared_tables *share, bool *host, rf_status *st)
{
    memset(out, 0, sizeof *out);
    if (!code_has_string_op(code)) {
        out->n = code->n;
        out->ins = code->n ? rf_malloc((size_t)code->n * sizeof *out->ins) : NULL;
        if (code->n)
            memcpy(out->ins, code->ins, (size_t)code->n * sizeof *out->ins);
        return true;
    }
    if (!rf_cuda_code_on_device(code)) {
        *host = true;
        return true;
    }
    int n = code->n, sp = 0;
    int *stack = rf_malloc((size_t)n * sizeof *stack), *col = rf_malloc((size_t)n * sizeof *col);
    int *start = rf_malloc((size_t)n * sizeof *start), *parent = rf_malloc((size_t)n * sizeof *parent);
    int *rootat = rf_malloc((size_t)n * sizeof *rootat);
    bool *str = rf_malloc((size_t)n);
    for (int k = 0; k < n; k++) {
        const rf_instr *i = &code->ins[k];
        int ar = rf_expr_arity((rf_exop)i->op);
        col[k] = i->op == RF_EX_COL ? (i->type == RF_TYPE_STRING ? i->index : -2)
                 : i->op == RF_EX_ROWID ? -2 /* varies by row: never a constant */
                                        : -1;
        str[k] = rf_exop_is_string_op((rf_exop)i->op);
        start[k] = k;
        parent[k] = -1;
        for (int a = 0; a < ar; a++) {
            int ch = stack[--sp];
            if (col[ch] != -1)
                col[k] = col[k] == -1 || col[k] == col[ch] ? col[ch] : -2;
            str[k] = str[k] || str[ch];
            start[k] = start[ch];
            parent[ch] = k;
        }
        stack[sp++] = k;
    }
    /* The roots: tabulable subtrees (a string function, at most one
     * column, a string one) whose parent is not; rootat[first
     * instruction] = root. */
    for (int k = 0; k < n; k++)
        rootat[k] = -1;
    for (int k = 0; k < n; k++)
        if (str[k] && col[k] != -2 && (parent[k] < 0 || col[parent[k]] == -2))
            rootat[start[k]] = k;
    out->ins = rf_calloc((size_t)n, sizeof *out->ins);
    bool ok = true;
    for (int k = 0; k < n && ok && !*host;) {
        int root = rootat[k];
        if (root < 0) {
            out->ins[out->n++] = code->ins[k];
            k++;
            continue;
        }
        if (emit_with_shared(code, k, root, use, out)) {
            k = root + 1;
            continue;
        }
        /* The subtree [k, root] as a code over one column, at index 0. */
        rf_code sub = {root - k + 1, rf_malloc((size_t)(root - k + 1) * sizeof(rf_instr))};
        memcpy(sub.ins, code->ins + k, (size_t)sub.n * sizeof *sub.ins);
        for (int i = 0; i < sub.n; i++)
            if (sub.ins[i].op == RF_EX_COL)
                sub.ins[i].index = 0;
        rf_status quiet;
        rf_status_init(&quiet);
        if (col[root] == -1) { /* constants only */
            rf_word v, dummy = 0, *cols[1] = {&dummy};
            if (!rf_code_eval_batch(&sub, cols, 0, 1, &v, &quiet)) {
                *host = true;
            } else {
                rf_instr ci = code->ins[root];
                memset(&ci, 0, sizeof ci);
                ci.op = RF_EX_CONST;
                ci.type = code->ins[root].type;
                ci.arg_type = ci.type;
                ci.value = v;
                out->ins[out->n++] = ci;
            }
        } else {
            /* A table of the subtree's value for each id the column holds:
             * every interned id where the column holds most of them
             * (tabulate_id_range), else its distinct ids. */
            size_t entries = 0;
            bool bits = code->ins[root].type == RF_TYPE_BOOL && !bit_tables_off();
            bool made = tabulate_id_range(src, col[root], &sub, bits, tabs, &entries);
            if (!made)
                ok = tabulate_distinct_ids(src, col[root], &sub, bits, tabs, &made, &entries, st);
            if (ok && !made) {
                *host = true;
            } else if (ok) {
                size_t t = tabs->heads.len / 2 - 1;
                emit_lookup(out, col[root], code->ins[root].type, t);
                if (share && rf_code_interns(&sub)) {
                    if (share->n == share->cap) {
                        share->cap = share->cap ? 2 * share->cap : 4;
                        share->t = rf_realloc(share->t, (size_t)share->cap * sizeof *share->t);
                    }
                    share->t[share->n++] = (shared_table){code->ins + k, root - k + 1, col[root], t};
                }
                count_table(src, entries);
                if (tabs->heads.len + tabs->data.len > INT32_MAX)
                    ok = rf_fail(st, RF_EXIT_RUNTIME_ERROR, "string tables too large for the GPU");
            }
        }
        free(sub.ins);
        k = root + 1;
    }
    free(stack);
    free(col);
    free(start);
    free(parent);
    free(rootat);
    free(str);
    if (!ok || *host) {
        rf_code_free(out);
        return ok;
    }
    return true;
}

/* A kernel's filter and projections rewritten (tabulate_code) into
 * out_filter and out_proj, their tables in *tabs. The projections go first,
 * so that the filter reads the strings they intern from their tables
 * (shared_table); a filter the device cannot run is found before any table
 * is made. */
static bool tabulate_kernel(const colsrc *src, const rf_code *filter, int nproj, const rf_code *proj,
                            rf_code *out_filter, rf_code *out_proj, tables *tabs, bool *host, rf_status *st)
{
    if (filter && !rf_cuda_code_on_device(filter)) {
        *host = true;
        return true;
    }
    shared_tables shared = {NULL, 0, 0};
    const char *env = getenv("RF_CUDA_SHARED_TABLES");   /* off: the filter tabulates its own (for measuring) */
    bool share = filter && !(env && strcmp(env, "off") == 0);
    bool ok = true;
    for (int k = 0; ok && !*host && k < nproj; k++)
        ok = tabulate_code(src, &proj[k], &out_proj[k], tabs, NULL, share ? &shared : NULL, host, st);
    if (ok && !*host && filter)
        ok = tabulate_code(src, filter, out_filter, tabs, &shared, NULL, host, st);
    free(shared.t);
    return ok;
}

/* The codes a kernel runs on the device (pp), with their string tables
 * uploaded to c->tab; pp->host when the kernel must run on the host.
 * Columns < al are l's, the others r's (r may be NULL). */
static bool prepare(rf_cuda_ctx *c, const rf_code *filter, int nproj, const rf_code *proj, const rf_drel *l,
                    int al, const rf_drel *r, prepared *pp, rf_status *st)
{
    memset(pp, 0, sizeof *pp);
    pp->filter = filter;
    pp->proj = proj;
    pp->nproj = nproj;
    bool any = code_has_string_op(filter);
    for (int k = 0; k < nproj && !any; k++)
        any = code_has_string_op(&proj[k]);
    if (!any)
        return true;
    tables tabs = {{0}, {0}};
    pp->owned = true;
    pp->own_proj = rf_calloc((size_t)(nproj > 0 ? nproj : 1), sizeof *pp->own_proj);
    colsrc src = {c, l, r, al, NULL};
    bool ok = tabulate_kernel(&src, filter, nproj, proj, &pp->own_filter, pp->own_proj, &tabs, &pp->host, st);
    if (ok && !pp->host && tabs.heads.len) {
        /* The device layout (tables_layout) in two copies: the heads,
         * offset past themselves, then the data as made (no host copy of
         * a table of tens of millions of words). */
        size_t nh = tabs.heads.len, total = nh + tabs.data.len;
        for (size_t i = 0; i < nh; i += 2)
            tabs.heads.items[i] += nh;
        if (total > c->tab_cap) {
            if (c->tab)
                rf_cuda_free(c, c->tab, c->tab_cap * 8);
            c->tab_cap = 0;
            c->tab = rf_cuda_alloc(c, total * 8, "string tables", st);
            ok = c->tab != NULL;
            if (ok)
                c->tab_cap = total;
        }
        /* Pageable sources: staged before the calls return. */
        ok = ok &&
             rf_cuda_check(c, cudaMemcpyAsync(c->tab, tabs.heads.items, nh * 8, cudaMemcpyHostToDevice, c->stream),
                           "upload string tables", st) &&
             (!tabs.data.len ||
              rf_cuda_check(c, cudaMemcpyAsync((uint64_t *)c->tab + nh, tabs.data.items, tabs.data.len * 8,
                                               cudaMemcpyHostToDevice, c->stream),
                            "upload string tables", st));
        c->io.upload_bytes += total * 8;
        rf_cuda_trace(c, "tables: upload");
    }
    RF_VEC_FREE(tabs.heads);
    RF_VEC_FREE(tabs.data);
    /* Strings the tables interned may meet a comparison on the device:
     * the string order must cover them. */
    bool cmp = ok && !pp->host && code_compares_strings(&pp->own_filter);
    for (int k = 0; cmp == false && ok && !pp->host && k < nproj; k++)
        cmp = code_compares_strings(&pp->own_proj[k]);
    if (cmp) {
        ok = rf_cuda_update_string_ranks(c, st);
        rf_cuda_trace(c, "tables: string order");
    }
    if (!ok || pp->host) {
        bool host = pp->host;
        prepared_free(pp);
        pp->host = host;
        pp->filter = filter;
        pp->proj = proj;
        pp->nproj = nproj;
        return ok;
    }
    pp->filter = filter ? &pp->own_filter : NULL;
    pp->proj = pp->own_proj;
    return true;
}

size_t rf_cuda_host_kernels(const rf_cuda_ctx *c) { return c->host_kernels; }

bool rf_cuda_test_tabulate(const rf_code *code, const rf_table *in, rf_code *out, rf_word **tab, size_t *ntab,
                           bool *host, rf_status *st)
{
    colsrc src = {NULL, NULL, NULL, 0, in};
    tables tabs = {{0}, {0}};
    *host = false;
    bool ok = tabulate_code(&src, code, out, &tabs, NULL, NULL, host, st);
    wordvec buf;
    tables_layout(&tabs, &buf);
    RF_VEC_FREE(tabs.heads);
    RF_VEC_FREE(tabs.data);
    *tab = buf.items;
    *ntab = buf.len;
    return ok;
}

bool rf_cuda_test_tabulate_kernel(const rf_code *filter, int nproj, const rf_code *proj, const rf_table *in,
                                  rf_code *out_filter, rf_code *out_proj, rf_word **tab, size_t *ntab, bool *host,
                                  rf_status *st)
{
    colsrc src = {NULL, NULL, NULL, 0, in};
    tables tabs = {{0}, {0}};
    *host = false;
    memset(out_filter, 0, sizeof *out_filter);
    memset(out_proj, 0, (size_t)nproj * sizeof *out_proj);
    bool ok = tabulate_kernel(&src, filter, nproj, proj, out_filter, out_proj, &tabs, host, st);
    wordvec buf;
    tables_layout(&tabs, &buf);
    RF_VEC_FREE(tabs.heads);
    RF_VEC_FREE(tabs.data);
    *tab = buf.items;
    *ntab = buf.len;
    return ok;
}

bool rf_cuda_test_assemble(const rf_code *code, int ncols, rf_dins *ins, rf_status *st)
{
    int pos = 0;
    memset(ins, 0, (size_t)(code->n > 0 ? code->n : 1) * sizeof *ins);
    return append_code(code, ncols, ins, &pos, st);
}

void rf_cuda_string_table_stats(const rf_cuda_ctx *c, size_t *tables, size_t *entries)
{
    *tables = c->string_tables;
    *entries = c->string_table_entries;
}

/* A MAP or JOIN the device cannot run: downloaded, run by the CPU library
 * (the same semantics, rf_prims.h), uploaded. r sorted, l in any order. */
static bool host_kernel(rf_cuda_ctx *c, const rf_drel *l, const rf_drel *r, int nkeys, const rf_code *filter,
                        int nproj, const rf_code *proj, rf_drel *out, const char *what, rf_status *st)
{
    rf_table tl, tr, res;
    rf_table_init(&tl, l->arity);
    rf_table_init(&tr, r ? r->arity : 0);
    rf_table_init(&res, nproj);
    bool ok = rf_drel_download(c, l, &tl, st) && (!r || rf_drel_download(c, r, &tr, st));
    rf_table_free(&res); /* the primitives initialise their output */
    if (ok) {
        /* l in any order: a fused group's JOIN probes with its left
         * side unsorted (the SORT member left out), and the merge join
         * would miss the rows of l out of order */
        ok = r ? rf_prim_join_probe(&tl, &tr, nkeys, filter, nproj, proj, &res, st)
               : rf_prim_map(&tl, filter, nproj, proj, &res, st);
        if (ok) {
            rf_drel tmp;
            rf_drel_init(&tmp, nproj);
            ok = rf_drel_upload(c, &tmp, &res, what, st);
            if (ok) {
                rf_drel_move(c, out, &tmp);
                out->arity = nproj;
            }
        }
        rf_table_free(&res);
    }
    rf_table_free(&tl);
    rf_table_free(&tr);
    c->host_kernels++;
    return ok;
}

/* ---- Generated compute stages ---- */

static bool try_codegen(rf_cuda_ctx *c, bool join, int al, const rf_code *filter, int nproj,
                        const rf_code *proj, void **ff, void **fe)
{
    if (!c->codegen)
        return false;
    char *src = rf_codegen_source(join, al, filter, nproj, proj);
    bool ok = rf_codegen_kernels(c, src, ff, fe);
    free(src);
    return ok;
}

/* Launches a generated rf_filter / rf_emit (signatures in cuda_internal.h). */
static bool gen_filter(rf_cuda_ctx *c, void *fn, rf_cols l, rf_cols r, const uint64_t *lo, const uint64_t *off,
                       uint64_t nl, uint64_t total, uint8_t *flags, rf_status *st)
{
    rf_denv env = {c->rank, c->nrank, c->err, c->tab};
    void *params[] = {&l, &r, &lo, &off, &nl, &total, &env, &flags};
    return rf_codegen_launch(c, fn, total, params, st);
}

static bool gen_emit(rf_cuda_ctx *c, void *fn, rf_cols l, rf_cols r, const uint64_t *lo, const uint64_t *off,
                     uint64_t nl, uint64_t total, const uint8_t *flags, const uint64_t *pos, rf_wcols out,
                     rf_status *st)
{
    rf_denv env = {c->rank, c->nrank, c->err, c->tab};
    void *params[] = {&l, &r, &lo, &off, &nl, &total, &flags, &pos, &env, &out};
    return rf_codegen_launch(c, fn, total, params, st);
}

/* ---- MAP ---- */

bool rf_cuda_map(rf_cuda_ctx *c, const rf_drel *in, const rf_code *filter, int nproj,
                 const rf_code *proj, rf_drel *out, const char *what, rf_status *st)
{
    rf_dprog prog;
    tmpbuf flags = {0}, pos = {0};
    rf_drel res;
    rf_drel_init(&res, nproj);
    prepared pp;
    if (!check_arity(in, what, st))
        return false;
    if (c->codegen) { /* one generated pass where it applies */
        bool done = false;
        if (!rf_cuda_select_one_pass(c, in, NULL, 0, filter, nproj, proj, out, &done, what, st))
            return false;
        if (done)
            return true;
    }
    if (!prepare(c, filter, nproj, proj, in, in->arity, NULL, &pp, st))
        return false;
    if (pp.host)
        return host_kernel(c, in, NULL, 0, filter, nproj, proj, out, what, st);
    filter = pp.filter;
    proj = pp.proj;
    if (!upload_prog(c, filter, nproj, proj, in->arity, &prog, st)) {
        prepared_free(&pp);
        return false;
    }
    bool has_filter = filter && filter->n > 0;
    size_t n = in->nrows, kept = n;
    if (n == 0)
        goto done;
    if (!has_filter && all_columns(nproj, proj)) {
        /* Pure projection: column copies, no kernel. */
        if (!rf_drel_alloc(c, &res, n, what, st))
            goto fail;
        for (int k = 0; k < nproj; k++)
            CK(cudaMemcpyAsync(res.data + (size_t)k * res.cap,
                               in->data + (size_t)rf_code_as_column_(&proj[k]) * in->cap, n * 8,
                               cudaMemcpyDeviceToDevice, c->stream), "map");
        goto done;
    }
    void *gf = NULL, *ge = NULL;
    bool gen = try_codegen(c, false, in->arity, filter, nproj, proj, &gf, &ge);
    if (has_filter) {
        if (!tmp_get(c, &flags, n, "filter flags", st) || !tmp_get(c, &pos, (n + 1) * 8, "filter positions", st))
            goto fail;
        if (gen) {
            if (!gen_filter(c, gf, rf_cols_of(in), rf_cols_of(in), NULL, NULL, n, n, flags.p, st))
                goto fail;
        } else
            CK(rf_k_map_filter(c->stream, rf_cols_of(in), n, prog, flags.p), "map filter");
        if (!check_fault(c, st) || !rf_cub_flag_scan(c, flags.p, pos.p, n, st))
            goto fail;
        uint64_t k;
        if (!read_word(c, (uint64_t *)pos.p + n, &k, st))
            goto fail;
        kept = (size_t)k;
    }
    if (!rf_drel_alloc(c, &res, kept, what, st))
        goto fail;
    if (kept && nproj > 0) {
        if (gen) {
            if (!gen_emit(c, ge, rf_cols_of(in), rf_cols_of(in), NULL, NULL, n, n, has_filter ? flags.p : NULL,
                          has_filter ? pos.p : NULL, rf_wcols_of(&res), st))
                goto fail;
        } else
            CK(rf_k_map_emit(c->stream, rf_cols_of(in), n, has_filter ? flags.p : NULL,
                             has_filter ? pos.p : NULL, prog, rf_wcols_of(&res)), "map");
        if (!check_fault(c, st))
            goto fail;
    }
done:
    tmp_put(c, &flags);
    tmp_put(c, &pos);
    prepared_free(&pp);
    rf_drel_move(c, out, &res);
    out->arity = nproj;
    return true;
fail:
    tmp_put(c, &flags);
    tmp_put(c, &pos);
    prepared_free(&pp);
    rf_drel_free(c, &res);
    return false;
}

/* ---- SORT + UNIQUE ---- */

static int bit_width(uint64_t v)
{
    int b = 0;
    while (v) {
        b++;
        v >>= 1;
    }
    return b;
}

bool rf_cuda_sort_unique(rf_cuda_ctx *c, const rf_drel *r, rf_drel *out, const char *what,
                         rf_status *st)
{
    size_t n = r->nrows;
    int a = r->arity;
    if (a == 0 || n <= 1) {
        if (!rf_drel_copy(c, out, r, what, st))
            return false;
        out->nrows = n ? 1 : 0;
        return true;
    }
    if (!check_arity(r, what, st))
        return false;
    tmpbuf maxb = {0}, keys = {0}, keys_alt = {0}, perm = {0}, perm_alt = {0}, flags = {0}, pos = {0};
    rf_drel sorted, res;
    rf_drel_init(&sorted, a);
    rf_drel_init(&res, a);
    rf_cols in = rf_cols_of(r);

    /* A few rows: one block, one launch, one wait (rf_k_small_sort_unique).
     * RF_CUDA_SMALL_SORT=off (tests) takes the general path at any size. */
    size_t npad = 1;
    while (npad < n)
        npad <<= 1;
    if (n <= RF_SMALL_SORT_ROWS && npad * (size_t)a <= RF_SMALL_SORT_WORDS && c->small_sort) {
        uint64_t rows = 0;
        if (!tmp_get(c, &pos, 8, "small sort", st) || !rf_drel_alloc(c, &res, n, what, st))
            goto fail;
        CK(rf_k_small_sort_unique(c->stream, in, a, n, rf_wcols_of(&res), (unsigned long long *)pos.p),
           "small sort");
        if (!read_word(c, (const uint64_t *)pos.p, &rows, st))
            goto fail;
        tmp_put(c, &pos);
        res.nrows = (size_t)rows;
        rf_drel_move(c, out, &res);
        return true;
    }

    /* Two columns: their maxima and the rows' order in one pass
     * (rf_k_pair_stats). Rows strictly ascending are the result already.
     * Rows strictly ascending by (second, first) column (a MAP that swapped
     * a sorted relation's columns: the semi-naive delta re-keyed, a
     * multiway join's input for its second variable order, uedge's reversed
     * half) need only a stable sort by their first column: 32-bit keys and
     * values where both columns fit, over the first column's bits, and no
     * unique pass (strictly ascending rows are distinct). R-MAT 20's
     * reversed half: 20-bit keys, three radix passes against five over the
     * packed 40-bit rows. */
    uint64_t maxv[RF_CUDA_MAX_COLS];
    bool have_max = false;
    if (a == 2 && c->sort_order) {
        uint64_t w[4];
        if (!tmp_get(c, &maxb, sizeof w, "sort", st))
            goto fail;
        CK(cudaMemsetAsync(maxb.p, 0, sizeof w, c->stream), "sort");
        CK(rf_k_pair_stats(c->stream, in, n, maxb.p), "sort order");
        CK(cudaMemcpyAsync(w, maxb.p, sizeof w, cudaMemcpyDeviceToHost, c->stream), "sort");
        CK(cudaStreamSynchronize(c->stream), "sort");
        tmp_put(c, &maxb);
        maxv[0] = w[0];
        maxv[1] = w[1];
        have_max = true;
        if (w[3] == 0) {
            c->sorts_in_order++;
            return out == r || rf_drel_copy(c, out, r, what, st);
        }
        if (w[2] == 0 && w[0] <= UINT32_MAX && w[1] <= UINT32_MAX && n <= UINT32_MAX) {
            uint32_t *ks, *vs;
            if (!tmp_get(c, &keys, n * 4, "sort keys", st) || !tmp_get(c, &keys_alt, n * 4, "sort keys", st) ||
                !tmp_get(c, &perm, n * 4, "sort values", st) || !tmp_get(c, &perm_alt, n * 4, "sort values", st))
                goto fail;
            CK(rf_k_narrow_pairs(c->stream, in, n, keys.p, perm.p), "sort narrow");
            if (!rf_cub_sort_pairs32(c, keys.p, keys_alt.p, perm.p, perm_alt.p, n, bit_width(maxv[0]), &ks, &vs, st) ||
                !rf_drel_alloc(c, &res, n, what, st))
                goto fail;
            CK(rf_k_widen_pairs(c->stream, ks, vs, n, rf_wcols_of(&res)), "sort widen");
            tmp_put(c, &keys);
            tmp_put(c, &keys_alt);
            tmp_put(c, &perm);
            tmp_put(c, &perm_alt);
            c->sorts_by_first++;
            rf_drel_move(c, out, &res);
            return true;
        }
    }

    /* Bit width of every column: radix passes only over bits in use, and
     * several narrow columns pack into one 64-bit key. */
    if (!have_max) {
        if (!tmp_get(c, &maxb, (size_t)a * 8, "sort", st))
            goto fail;
        for (int k = 0; k < a; k++)
            if (!rf_cub_max(c, in.c[k], n, (uint64_t *)maxb.p + k, st))
                goto fail;
        CK(cudaMemcpyAsync(maxv, maxb.p, (size_t)a * 8, cudaMemcpyDeviceToHost, c->stream), "sort");
        CK(cudaStreamSynchronize(c->stream), "sort");
        tmp_put(c, &maxb);
    }
    int bits[RF_CUDA_MAX_COLS];
    for (int k = 0; k < a; k++)
        bits[k] = bit_width(maxv[k]);

    /* Groups of adjacent columns whose widths sum to <= 64, from the last
     * column (least significant) to the first. */
    int gfirst[RF_CUDA_MAX_COLS], gn[RF_CUDA_MAX_COLS], gbits[RF_CUDA_MAX_COLS], ng = 0;
    for (int k = a - 1; k >= 0; k--) {
        if (ng > 0 && gbits[ng - 1] + bits[k] <= 64) {
            gfirst[ng - 1] = k;
            gn[ng - 1]++;
            gbits[ng - 1] += bits[k];
        } else {
            gfirst[ng] = k;
            gn[ng] = 1;
            gbits[ng] = bits[k];
            ng++;
        }
    }

    /* Rows of more than 64 key bits carry a permutation of 32 bits a row:
     * more rows than it numbers are reported as memory running out, so
     * that the runtime runs the kernel in key-range parts, each under the
     * limit (rows of one key have no limit). */
    if (ng > 1 && n > c->wide_sort_max) {
        rf_fail(st, RF_EXIT_OUT_OF_MEMORY,
                "relation %s has %zu rows of more than 64 key bits; the GPU sort takes at most %llu such rows at once",
                what ? what : "?", n, (unsigned long long)c->wide_sort_max);
        goto fail;
    }
    if (!tmp_get(c, &keys, n * 8, "sort keys", st) || !tmp_get(c, &keys_alt, n * 8, "sort keys", st))
        goto fail;
    int shift[RF_CUDA_MAX_COLS];

    if (ng == 1) {
        /* The whole row fits in one key: sort keys alone, then unique and
         * unpack in one pass. */
        int s = 0;
        for (int k = a - 1; k >= 0; k--) {
            shift[k] = s;
            s += bits[k];
        }
        uint64_t *distinct = NULL, total = 0;
        if (!tmp_get(c, &pos, 8, "sort count", st))
            goto fail;
        CK(rf_k_pack(c->stream, in, 0, a, shift, NULL, n, keys.p), "sort pack");
        if (!rf_cub_sort_unique_keys(c, keys.p, keys_alt.p, n, gbits[0], pos.p, &distinct, st) ||
            !read_word(c, (const uint64_t *)pos.p, &total, st))
            goto fail;
        tmp_put(c, distinct == keys.p ? &keys_alt : &keys);
        if (!rf_drel_alloc(c, &res, (size_t)total, what, st))
            goto fail;
        CK(rf_k_unpack(c->stream, distinct, (size_t)total, a, shift, bits, rf_wcols_of(&res)),
           "unpack");
    } else {
        /* LSD over column groups: a stable key-value sort per group carries
         * the permutation; then gather every column once. */
        if (!tmp_get(c, &perm, n * 4, "sort permutation", st) ||
            !tmp_get(c, &perm_alt, n * 4, "sort permutation", st))
            goto fail;
        CK(rf_k_iota(c->stream, perm.p, n), "sort");
        for (int g = 0; g < ng; g++) {
            if (gbits[g] == 0)
                continue;
            int s = 0;
            for (int j = gn[g] - 1; j >= 0; j--) {
                shift[j] = s;
                s += bits[gfirst[g] + j];
            }
            CK(rf_k_pack(c->stream, in, gfirst[g], gn[g], shift, perm.p, n, keys.p), "sort pack");
            if (!rf_cub_sort_pairs(c, keys.p, keys_alt.p, perm.p, perm_alt.p, n, gbits[g], st))
                goto fail;
        }
        tmp_put(c, &keys);
        tmp_put(c, &keys_alt);
        tmp_put(c, &perm_alt);
        if (!rf_drel_alloc(c, &sorted, n, what, st))
            goto fail;
        CK(rf_k_gather(c->stream, in, a, perm.p, n, rf_wcols_of(&sorted)), "sort gather");
        tmp_put(c, &perm);
        if (!tmp_get(c, &flags, n, "sort flags", st) || !tmp_get(c, &pos, (n + 1) * 8, "sort positions", st))
            goto fail;
        CK(rf_k_row_heads(c->stream, rf_cols_of(&sorted), a, n, flags.p), "unique");
        if (!rf_cub_flag_scan(c, flags.p, pos.p, n, st))
            goto fail;
        uint64_t total;
        if (!read_word(c, (uint64_t *)pos.p + n, &total, st))
            goto fail;
        if (total == n) {
            rf_drel_move(c, &res, &sorted);
        } else {
            if (!rf_drel_alloc(c, &res, (size_t)total, what, st))
                goto fail;
            CK(rf_k_compact(c->stream, rf_cols_of(&sorted), a, flags.p, pos.p, n, rf_wcols_of(&res)), "unique");
            rf_drel_free(c, &sorted);
        }
    }
    tmp_put(c, &keys);
    tmp_put(c, &keys_alt);
    tmp_put(c, &flags);
    tmp_put(c, &pos);
    rf_drel_move(c, out, &res);
    return true;
fail:
    tmp_put(c, &maxb);
    tmp_put(c, &keys);
    tmp_put(c, &keys_alt);
    tmp_put(c, &perm);
    tmp_put(c, &perm_alt);
    tmp_put(c, &flags);
    tmp_put(c, &pos);
    rf_drel_free(c, &sorted);
    rf_drel_free(c, &res);
    return false;
}

/* ---- JOIN ---- */

/* The choice between the two ways to find each left row's matching range
 * in r (both inputs sorted; everything after the ranges is shared, so the
 * output is the same rows in the same order):
 *   merge: a binary search of r per left row, O(nl log nr), no extra memory;
 *   hash:  a table on r's distinct keys (build nr, probe nl, ~1 probe each),
 *          16 * 2^ceil(log2(2 nr)) bytes.
 * Hash when the build side is much smaller than the probe side and its table
 * stays small: nkeys > 0, nr * RF_HASH_RATIO <= nl, nr <= RF_HASH_MAX_BUILD.
 * RF_CUDA_JOIN=merge|hash (or rf_cuda_set_join_mode) forces one. */
#define RF_HASH_RATIO 8
#define RF_HASH_MAX_BUILD ((size_t)1 << 21)

void rf_cuda_set_join_mode(rf_cuda_ctx *c, int mode) { c->join_mode = mode; }

void rf_cuda_join_counts(const rf_cuda_ctx *c, size_t *merge, size_t *hash)
{
    *merge = c->merge_joins;
    *hash = c->hash_joins;
}

static bool use_hash_join(rf_cuda_ctx *c, size_t nl, size_t nr, int nkeys)
{
    if (nkeys <= 0)
        return false;
    if (c->join_mode)
        return c->join_mode == 2;
    return nr * RF_HASH_RATIO <= nl && nr <= RF_HASH_MAX_BUILD;
}

/* The candidate pairs of a join: for every row i of l, its matching rows
 * of r are lo[i] .. lo[i] + (off[i+1] - off[i]) - 1; off has nl + 1
 * entries, *total = off[nl] (one read-back). lo and off stay allocated for
 * the caller, also after a failure (tmp_put them). */
static bool join_candidates(rf_cuda_ctx *c, const rf_drel *l, const rf_drel *r, int nkeys, tmpbuf *lo, tmpbuf *off,
                            uint64_t *total, rf_status *st)
{
    size_t nl = l->nrows, nr = r->nrows;
    tmpbuf cnt = {0}, ht = {0};
    if (!tmp_get(c, lo, nl * 8, "join ranges", st) || !tmp_get(c, &cnt, nl * 8, "join ranges", st) ||
        !tmp_get(c, off, (nl + 1) * 8, "join ranges", st))
        goto fail;
    if (use_hash_join(c, nl, nr, nkeys)) {
        /* Build on r, probe with l: the same ranges as the binary search. */
        uint64_t slots = 2;
        while (slots < 2 * (uint64_t)nr)
            slots <<= 1;
        if (!tmp_get(c, &ht, slots * 16, "join hash table", st))
            goto fail;
        CK(rf_k_hash_ranges(c->stream, rf_cols_of(l), nl, rf_cols_of(r), nr, nkeys, ht.p, slots - 1, lo->p, cnt.p),
           "hash join");
        tmp_put(c, &ht);
        c->hash_joins++;
    } else {
        CK(rf_k_join_ranges(c->stream, rf_cols_of(l), nl, rf_cols_of(r), nr, nkeys, lo->p, cnt.p), "join");
        c->merge_joins++;
    }
    if (!rf_cub_count_scan(c, cnt.p, off->p, nl, st))
        goto fail;
    tmp_put(c, &cnt);
    return read_word(c, (uint64_t *)off->p + nl, total, st);
fail:
    tmp_put(c, &cnt);
    tmp_put(c, &ht);
    return false;
}

static bool check_join(const rf_drel *l, const rf_drel *r, int nkeys, const char *what, rf_status *st)
{
    if (!check_arity(l, what, st) || !check_arity(r, what, st))
        return false;
    if (nkeys > l->arity || nkeys > r->arity)
        return rf_fail(st, RF_EXIT_RUNTIME_ERROR, "join on %d keys of relations of arity %d and %d", nkeys,
                       l->arity, r->arity);
    return true;
}

/* flags[o] := filter of candidate pair o (generated or interpreted). */
static bool join_filter_flags(rf_cuda_ctx *c, bool gen, void *gf, const rf_drel *l, const rf_drel *r,
                              const tmpbuf *lo, const tmpbuf *off, uint64_t total, rf_dprog prog, tmpbuf *flags,
                              rf_status *st)
{
    size_t nl = l->nrows;
    if (!tmp_get(c, flags, total, "join filter flags", st))
        return false;
    if (gen) {
        if (!gen_filter(c, gf, rf_cols_of(l), rf_cols_of(r), lo->p, off->p, nl, total, flags->p, st))
            return false;
    } else
        CK(rf_k_join_filter(c->stream, rf_cols_of(l), l->arity, rf_cols_of(r), lo->p, off->p, nl, total, prog,
                            flags->p), "join filter");
    return check_fault(c, st);
fail:
    return false;
}

/* The flags as join_filter_flags, pos := their prefix sum, *kept := the
 * pairs kept. */
static bool join_filter(rf_cuda_ctx *c, bool gen, void *gf, const rf_drel *l, const rf_drel *r, const tmpbuf *lo,
                        const tmpbuf *off, uint64_t total, rf_dprog prog, tmpbuf *flags, tmpbuf *pos, uint64_t *kept,
                        rf_status *st)
{
    return join_filter_flags(c, gen, gf, l, r, lo, off, total, prog, flags, st) &&
           tmp_get(c, pos, (total + 1) * 8, "join filter positions", st) &&
           rf_cub_flag_scan(c, flags->p, pos->p, total, st) && read_word(c, (uint64_t *)pos->p + total, kept, st);
}

bool rf_cuda_join(rf_cuda_ctx *c, const rf_drel *l, const rf_drel *r, int nkeys,
                  const rf_code *filter, int nproj, const rf_code *proj, rf_drel *out,
                  const char *what, rf_status *st)
{
    rf_dprog prog;
    tmpbuf lo = {0}, off = {0}, flags = {0}, pos = {0};
    rf_drel res;
    rf_drel_init(&res, nproj);
    prepared pp;
    if (!check_join(l, r, nkeys, what, st))
        return false;
    if (c->codegen) { /* one generated pass where it applies */
        bool done = false;
        if (!rf_cuda_select_one_pass(c, l, r, nkeys, filter, nproj, proj, out, &done, what, st))
            return false;
        if (done)
            return true;
    }
    if (!prepare(c, filter, nproj, proj, l, l->arity, r, &pp, st))
        return false;
    if (pp.host)
        return host_kernel(c, l, r, nkeys, filter, nproj, proj, out, what, st);
    filter = pp.filter;
    proj = pp.proj;
    if (!upload_prog(c, filter, nproj, proj, l->arity + r->arity, &prog, st)) {
        prepared_free(&pp);
        return false;
    }
    bool has_filter = filter && filter->n > 0;
    size_t nl = l->nrows;
    uint64_t total = 0, kept;
    if (nl == 0 || r->nrows == 0)
        goto done;
    if (!join_candidates(c, l, r, nkeys, &lo, &off, &total, st))
        goto fail;
    kept = total;
    if (total == 0)
        goto done;
    void *gf = NULL, *ge = NULL;
    bool gen = try_codegen(c, true, l->arity, filter, nproj, proj, &gf, &ge);
    if (has_filter && !join_filter(c, gen, gf, l, r, &lo, &off, total, prog, &flags, &pos, &kept, st))
        goto fail;
    if (!rf_drel_alloc(c, &res, (size_t)kept, what, st))
        goto fail;
    if (kept && nproj > 0) {
        if (gen) {
            if (!gen_emit(c, ge, rf_cols_of(l), rf_cols_of(r), lo.p, off.p, nl, total, has_filter ? flags.p : NULL,
                          has_filter ? pos.p : NULL, rf_wcols_of(&res), st))
                goto fail;
        } else
            CK(rf_k_join_emit(c->stream, rf_cols_of(l), l->arity, rf_cols_of(r), lo.p, off.p, nl, total,
                              has_filter ? flags.p : NULL, has_filter ? pos.p : NULL, prog, rf_wcols_of(&res)),
               "join");
        if (!check_fault(c, st))
            goto fail;
    }
done:
    tmp_put(c, &lo);
    tmp_put(c, &off);
    tmp_put(c, &flags);
    tmp_put(c, &pos);
    prepared_free(&pp);
    rf_drel_move(c, out, &res);
    out->arity = nproj;
    return true;
fail:
    tmp_put(c, &lo);
    tmp_put(c, &off);
    tmp_put(c, &flags);
    tmp_put(c, &pos);
    prepared_free(&pp);
    rf_drel_free(c, &res);
    return false;
}

bool rf_cuda_join_to_set(rf_cuda_ctx *c, const rf_drel *l, const rf_drel *r, int nkeys, const rf_code *filter,
                         const int *src, rf_dset *s, const char *what, rf_status *st)
{
    rf_dprog prog;
    tmpbuf lo = {0}, off = {0}, flags = {0}, pos = {0};
    uint64_t *ctr = NULL;
    uint64_t counts[2] = {0, 0};
    if (s->total_bits < 0 || s->words)
        return rf_fail(st, RF_EXIT_RUNTIME_ERROR, "join into a dense set for %s without a fresh frame",
                       what ? what : "?");
    if (code_has_string_op(filter))
        return rf_fail(st, RF_EXIT_RUNTIME_ERROR, "join into a dense set for %s: string functions in its filter",
                       what ? what : "?");
    if (!check_join(l, r, nkeys, what, st) || !upload_prog(c, filter, 0, NULL, l->arity + r->arity, &prog, st))
        return false;
    for (int p = 0; p < s->arity; p++)
        if (src[p] < 0 || src[p] >= l->arity + r->arity)
            return rf_fail(st, RF_EXIT_RUNTIME_ERROR, "join projection reads column %d of %d", src[p],
                           l->arity + r->arity);
    if (!rf_dset_alloc_clear(c, s, what, st))
        return false;
    uint64_t total = 0, kept;
    if (l->nrows == 0 || r->nrows == 0)
        goto done;
    if (!join_candidates(c, l, r, nkeys, &lo, &off, &total, st))
        goto fail;
    kept = total;
    if (total == 0)
        goto done;
    bool has_filter = filter && filter->n > 0;
    void *gf = NULL, *ge = NULL;
    bool gen = has_filter && try_codegen(c, true, l->arity, filter, 0, NULL, &gf, &ge);
    if (has_filter && !join_filter(c, gen, gf, l, r, &lo, &off, total, prog, &flags, &pos, &kept, st))
        goto fail;
    tmp_put(c, &pos);
    if (kept) {
        if (!(ctr = rf_cuda_alloc(c, 16, "dense-set counters", st)))
            goto fail;
        CK(cudaMemsetAsync(ctr, 0, 16, c->stream), "join into a dense set");
        CK(rf_k_join_insert(c->stream, rf_cols_of(l), l->arity, rf_cols_of(r), lo.p, off.p, l->nrows, total,
                            has_filter ? flags.p : NULL, src, rf_dset_frame(s), s->words, ctr),
           "join into a dense set");
        if (!rf_cuda_read_back(c, ctr, counts, 16, st))
            goto fail;
        rf_cuda_free(c, ctr, 16);
        ctr = NULL;
        if (counts[1] != 0) {
            rf_fail(st, RF_EXIT_RUNTIME_ERROR, "join into a dense set for %s: %llu rows outside its frame",
                    what ? what : "?", (unsigned long long)counts[1]);
            goto fail;
        }
    }
done:
    s->nrows = (size_t)counts[0];
    tmp_put(c, &lo);
    tmp_put(c, &off);
    tmp_put(c, &flags);
    return true;
fail:
    if (ctr)
        rf_cuda_free(c, ctr, 16);
    tmp_put(c, &lo);
    tmp_put(c, &off);
    tmp_put(c, &flags);
    tmp_put(c, &pos);
    rf_dset_free(c, s);
    return false;
}

/* ---- SEMI-JOIN: a set gather of a join that keeps one side's rows ---- */

bool rf_cuda_semijoin(rf_cuda_ctx *c, const rf_drel *l, const rf_drel *r, int nkeys, const rf_code *filter,
                      int side, rf_drel *out, const char *what, rf_status *st)
{
    rf_dprog prog;
    tmpbuf lo = {0}, off = {0}, flags = {0}, keep = {0}, kpos = {0};
    const rf_drel *from = side ? r : l;
    rf_drel res;
    rf_drel_init(&res, from->arity);
    if (code_has_string_op(filter))
        return rf_fail(st, RF_EXIT_RUNTIME_ERROR, "semi-join for %s: string functions in its filter",
                       what ? what : "?");
    if (!check_join(l, r, nkeys, what, st) || !upload_prog(c, filter, 0, NULL, l->arity + r->arity, &prog, st))
        return false;
    size_t n = from->nrows;
    uint64_t total = 0, kept = 0;
    if (l->nrows == 0 || r->nrows == 0)
        goto done;
    if (!join_candidates(c, l, r, nkeys, &lo, &off, &total, st))
        goto fail;
    if (total == 0)
        goto done;
    bool has_filter = filter && filter->n > 0;
    void *gf = NULL, *ge = NULL;
    bool gen = has_filter && try_codegen(c, true, l->arity, filter, 0, NULL, &gf, &ge);
    /* the pairs' flags only: which rows keep is decided per row */
    if (has_filter && !join_filter_flags(c, gen, gf, l, r, &lo, &off, total, prog, &flags, st))
        goto fail;
    if (!tmp_get(c, &keep, n, "semi-join flags", st) || !tmp_get(c, &kpos, (n + 1) * 8, "semi-join positions", st))
        goto fail;
    if (side)
        CK(cudaMemsetAsync(keep.p, 0, n, c->stream), "semi-join");
    CK(rf_k_semi_flags(c->stream, lo.p, off.p, l->nrows, has_filter ? flags.p : NULL, side, keep.p), "semi-join");
    if (!rf_cub_flag_scan(c, keep.p, kpos.p, n, st) || !read_word(c, (uint64_t *)kpos.p + n, &kept, st) ||
        !rf_drel_alloc(c, &res, (size_t)kept, what, st))
        goto fail;
    CK(rf_k_compact(c->stream, rf_cols_of(from), from->arity, keep.p, kpos.p, n, rf_wcols_of(&res)), "semi-join");
done:
    tmp_put(c, &lo);
    tmp_put(c, &off);
    tmp_put(c, &flags);
    tmp_put(c, &keep);
    tmp_put(c, &kpos);
    rf_drel_move(c, out, &res);
    out->arity = from->arity;
    return true;
fail:
    tmp_put(c, &lo);
    tmp_put(c, &off);
    tmp_put(c, &flags);
    tmp_put(c, &keep);
    tmp_put(c, &kpos);
    rf_drel_free(c, &res);
    return false;
}

/* ---- ANTIJOIN, DIFFERENCE ---- */

bool rf_cuda_antijoin(rf_cuda_ctx *c, const rf_drel *l, const rf_drel *r, int nkeys,
                      rf_drel *out, const char *what, rf_status *st)
{
    tmpbuf flags = {0}, pos = {0};
    rf_drel res;
    rf_drel_init(&res, l->arity);
    if (!check_arity(l, what, st) || !check_arity(r, what, st))
        return false;
    if (nkeys > l->arity || nkeys > r->arity)
        return rf_fail(st, RF_EXIT_RUNTIME_ERROR, "antijoin on %d keys of relations of arity %d and %d",
                       nkeys, l->arity, r->arity);
    size_t nl = l->nrows, nr = r->nrows;
    if (nr == 0)
        return rf_drel_copy(c, out, l, what, st);
    if (nl == 0 || l->arity == 0) {
        /* Arity 0 left side: {()} survives only if r has no row. */
        rf_drel_move(c, out, &res);
        out->arity = l->arity;
        return true;
    }
    if (!tmp_get(c, &flags, nl, "antijoin flags", st) || !tmp_get(c, &pos, (nl + 1) * 8, "antijoin positions", st))
        goto fail;
    CK(rf_k_absent(c->stream, rf_cols_of(l), nl, rf_cols_of(r), nr, nkeys, flags.p), "antijoin");
    if (!rf_cub_flag_scan(c, flags.p, pos.p, nl, st))
        goto fail;
    uint64_t kept;
    if (!read_word(c, (uint64_t *)pos.p + nl, &kept, st) || !rf_drel_alloc(c, &res, (size_t)kept, what, st))
        goto fail;
    CK(rf_k_compact(c->stream, rf_cols_of(l), l->arity, flags.p, pos.p, nl, rf_wcols_of(&res)), "antijoin");
    tmp_put(c, &flags);
    tmp_put(c, &pos);
    rf_drel_move(c, out, &res);
    out->arity = l->arity;
    return true;
fail:
    tmp_put(c, &flags);
    tmp_put(c, &pos);
    rf_drel_free(c, &res);
    return false;
}

bool rf_cuda_difference(rf_cuda_ctx *c, const rf_drel *a, const rf_drel *b, rf_drel *out,
                        const char *what, rf_status *st)
{
    if (a->arity != b->arity)
        return rf_fail(st, RF_EXIT_RUNTIME_ERROR, "difference of arities %d and %d", a->arity, b->arity);
    return rf_cuda_antijoin(c, a, b, a->arity, out, what, st);
}

/* a minus the union of disjoint sorted runs, in one compaction: each run
 * only narrows the flags of the rows still present (one host wait for
 * all of them, where a difference per run would wait once per run). */
bool rf_cuda_difference_runs(rf_cuda_ctx *c, const rf_drel *a, const rf_drel *const *runs, int nruns,
                             rf_drel *out, const char *what, rf_status *st)
{
    for (int i = 0; i < nruns; i++)
        if (runs[i]->arity != a->arity)
            return rf_fail(st, RF_EXIT_RUNTIME_ERROR, "difference of arities %d and %d", a->arity, runs[i]->arity);
    if (nruns == 1)
        return rf_cuda_difference(c, a, runs[0], out, what, st);
    if (!check_arity(a, what, st))
        return false;
    size_t nl = a->nrows;
    size_t nonempty = 0;
    for (int i = 0; i < nruns; i++)
        nonempty += runs[i]->nrows > 0;
    if (nl == 0 || nonempty == 0 || a->arity == 0) {
        if (a->arity == 0 && nl > 0 && nonempty > 0) { /* {()} minus a nonempty set */
            rf_drel res;
            rf_drel_init(&res, 0);
            rf_drel_move(c, out, &res);
            out->arity = 0;
            return true;
        }
        return rf_drel_copy(c, out, a, what, st);
    }
    tmpbuf flags = {0}, pos = {0};
    rf_drel res;
    rf_drel_init(&res, a->arity);
    if (!tmp_get(c, &flags, nl, "difference flags", st) || !tmp_get(c, &pos, (nl + 1) * 8, "difference positions", st))
        goto fail;
    CK(cudaMemsetAsync(flags.p, 1, nl, c->stream), "difference");
    for (int i = 0; i < nruns; i++)
        if (runs[i]->nrows > 0)
            CK(rf_k_absent_and(c->stream, rf_cols_of(a), nl, rf_cols_of(runs[i]), runs[i]->nrows, a->arity, flags.p),
               "difference");
    if (!rf_cub_flag_scan(c, flags.p, pos.p, nl, st))
        goto fail;
    uint64_t kept;
    if (!read_word(c, (uint64_t *)pos.p + nl, &kept, st) || !rf_drel_alloc(c, &res, (size_t)kept, what, st))
        goto fail;
    CK(rf_k_compact(c->stream, rf_cols_of(a), a->arity, flags.p, pos.p, nl, rf_wcols_of(&res)), "difference");
    tmp_put(c, &flags);
    tmp_put(c, &pos);
    rf_drel_move(c, out, &res);
    out->arity = a->arity;
    return true;
fail:
    tmp_put(c, &flags);
    tmp_put(c, &pos);
    rf_drel_free(c, &res);
    return false;
}

/* ---- UNION ---- */

/* Rows (both sides) from which rf_cuda_union searches in windows: below,
 * the sides (tens of MB) sit in the L2 cache, where whole searches are as
 * quick and the windows' two launches and allocations cost ~15 us a call
 * (TC cal.cedge, 195 unions of ~0.4M rows: 12.1 -> 15.2 ms at 2^16 rows,
 * equal at 2^22; docs/performance.md). The test hook
 * RF_TEST_UNION_WINDOWS=always takes them for every union, =off for none
 * (the whole-side searches, for measuring against). */
#define RF_UNION_WINDOW_MIN_ROWS ((size_t)1 << 22)

/* The union of a and b (one or two columns) by merge path (rf_k_merge_*):
 * the merged order's tiles split, their kept rows counted, scanned, then
 * written. */
static bool union_by_merge(rf_cuda_ctx *c, const rf_drel *a, const rf_drel *b, rf_drel *out, const char *what,
                           rf_status *st)
{
    size_t na = a->nrows, nb = b->nrows;
    uint64_t ntiles = rf_k_merge_tiles_of(na, nb), total = 0;
    tmpbuf split = {0}, counts = {0}, offs = {0};
    rf_drel res;
    rf_drel_init(&res, a->arity);
    if (!tmp_get(c, &split, (ntiles + 1) * 8, "union tiles", st) ||
        !tmp_get(c, &counts, ntiles * 8, "union tiles", st) || !tmp_get(c, &offs, (ntiles + 1) * 8, "union tiles", st))
        goto fail;
    CK(rf_k_merge_split(c->stream, rf_cols_of(a), na, rf_cols_of(b), nb, a->arity, split.p), "union");
    CK(rf_k_merge_count(c->stream, rf_cols_of(a), na, rf_cols_of(b), nb, a->arity, split.p, counts.p), "union");
    if (!rf_cub_count_scan(c, counts.p, offs.p, ntiles, st) || !read_word(c, (uint64_t *)offs.p + ntiles, &total, st) ||
        !rf_drel_alloc(c, &res, (size_t)total, what, st))
        goto fail;
    CK(rf_k_merge_write(c->stream, rf_cols_of(a), na, rf_cols_of(b), nb, a->arity, split.p, offs.p, rf_wcols_of(&res)),
       "union");
    tmp_put(c, &split), tmp_put(c, &counts), tmp_put(c, &offs);
    c->merge_unions++;
    rf_drel_move(c, out, &res);
    return true;
fail:
    tmp_put(c, &split), tmp_put(c, &counts), tmp_put(c, &offs);
    rf_drel_free(c, &res);
    return false;
}

bool rf_cuda_union(rf_cuda_ctx *c, const rf_drel *a, const rf_drel *b, rf_drel *out,
                   const char *what, rf_status *st)
{
    if (a->arity != b->arity)
        return rf_fail(st, RF_EXIT_RUNTIME_ERROR, "union of arities %d and %d", a->arity, b->arity);
    if (!check_arity(a, what, st))
        return false;
    int ar = a->arity;
    size_t na = a->nrows, nb = b->nrows;
    if (ar == 0) {
        rf_drel res;
        rf_drel_init(&res, 0);
        res.nrows = (na || nb) ? 1 : 0;
        rf_drel_move(c, out, &res);
        return true;
    }
    if (nb == 0)
        return rf_drel_copy(c, out, a, what, st);
    if (na == 0)
        return rf_drel_copy(c, out, b, what, st);
    /* Unions of one or two columns merge their sides' tiles
     * (union_by_merge; RF_CUDA_UNION_MERGE=off: the searches below). At
     * 2^22 rows and more it beats the windowed searches by a quarter
     * (R-MAT 20's uedge); below, level or a few percent ahead (TC of
     * p2p-Gnutella04, SG of CA-HepTh; H200). */
    if ((ar == 1 || ar == 2) && c->union_merge)
        return union_by_merge(c, a, b, out, what, st);
    tmpbuf lba = {0}, keep = {0}, kpre = {0}, abounds = {0}, bbounds = {0};
    rf_drel res;
    rf_drel_init(&res, ar);
    /* Windows for the searches (rf_k_union_bounds) where a side's rows
     * are many: two launches more, which small unions (a loop's delta into
     * a small relation) would only wait for. */
    const char *force = getenv("RF_TEST_UNION_WINDOWS");
    bool windows = force && strcmp(force, "always") == 0 ? true
                   : force && strcmp(force, "off") == 0  ? false
                                                          : na + nb >= RF_UNION_WINDOW_MIN_ROWS;
    size_t nba = (na + RF_UNION_CHUNK - 1) / RF_UNION_CHUNK + 1, nbb = (nb + RF_UNION_CHUNK - 1) / RF_UNION_CHUNK + 1;
    if (!tmp_get(c, &lba, nb * 8, "union ranks", st) || !tmp_get(c, &keep, nb, "union flags", st) ||
        !tmp_get(c, &kpre, (nb + 1) * 8, "union positions", st) ||
        (windows && (!tmp_get(c, &abounds, nba * 8, "union windows", st) ||
                     !tmp_get(c, &bbounds, nbb * 8, "union windows", st))))
        goto fail;
    if (windows) {
        CK(rf_k_union_bounds(c->stream, rf_cols_of(a), na, rf_cols_of(b), nb, ar, bbounds.p), "union");
        CK(rf_k_union_bounds(c->stream, rf_cols_of(b), nb, rf_cols_of(a), na, ar, abounds.p), "union");
    }
    CK(rf_k_union_probe(c->stream, rf_cols_of(a), na, rf_cols_of(b), nb, ar, bbounds.p, lba.p, keep.p), "union");
    if (!rf_cub_flag_scan(c, keep.p, kpre.p, nb, st))
        goto fail;
    uint64_t kept;
    if (!read_word(c, (uint64_t *)kpre.p + nb, &kept, st) || !rf_drel_alloc(c, &res, na + (size_t)kept, what, st))
        goto fail;
    CK(rf_k_union_scatter_a(c->stream, rf_cols_of(a), na, rf_cols_of(b), nb, ar, abounds.p, kpre.p,
                            rf_wcols_of(&res)),
       "union");
    CK(rf_k_union_scatter_b(c->stream, rf_cols_of(b), nb, ar, lba.p, keep.p, kpre.p, rf_wcols_of(&res)), "union");
    tmp_put(c, &lba), tmp_put(c, &keep), tmp_put(c, &kpre), tmp_put(c, &abounds), tmp_put(c, &bbounds);
    rf_drel_move(c, out, &res);
    return true;
fail:
    tmp_put(c, &lba), tmp_put(c, &keep), tmp_put(c, &kpre), tmp_put(c, &abounds), tmp_put(c, &bbounds);
    rf_drel_free(c, &res);
    return false;
}

/* ---- AGGREGATE ---- */

/* count_distinct: the distinct (group, value) pairs, sorted on the device,
 * counted per group. */
static bool count_distinct(rf_cuda_ctx *c, const uint64_t *v, size_t n, const uint64_t *starts, size_t g,
                           uint64_t *result, const char *what, rf_status *st)
{
    rf_drel pairs;
    rf_drel_init(&pairs, 2);
    if (!rf_drel_alloc(c, &pairs, n, "count_distinct pairs", st))
        return false;
    CK(rf_k_row_groups(c->stream, starts, g, n, pairs.data), "count_distinct");
    CK(cudaMemcpyAsync(pairs.data + pairs.cap, v, n * 8, cudaMemcpyDeviceToDevice, c->stream),
       "count_distinct");
    if (!rf_cuda_sort_unique(c, &pairs, &pairs, what, st))
        goto fail;
    CK(rf_k_fill(c->stream, result, g, 0), "count_distinct");
    CK(rf_k_count_by_group(c->stream, pairs.data, pairs.nrows, result), "count_distinct");
    rf_drel_free(c, &pairs);
    return true;
fail:
    rf_drel_free(c, &pairs);
    return false;
}

bool rf_cuda_aggregate_multi(rf_cuda_ctx *c, const rf_drel *in, int nkeys, int naggs, const rf_aggfn *fns,
                             const rf_type *result_types, const rf_code *args, rf_drel *out,
                             const char *what, rf_status *st)
{
    tmpbuf flags = {0}, pos = {0}, starts = {0}, vals = {0}, sums = {0};
    rf_drel res, host_vals;
    rf_drel_init(&res, nkeys + naggs);
    rf_drel_init(&host_vals, 1);
    if (!check_arity(in, what, st))
        return false;
    if (naggs < 1 || nkeys + naggs > RF_CUDA_MAX_COLS || nkeys > in->arity)
        return rf_fail(st, RF_EXIT_RUNTIME_ERROR, "aggregate with %d keys and %d aggregates over arity %d",
                       nkeys, naggs, in->arity);
    bool counts_only = true;
    for (int j = 0; j < naggs; j++) {
        if (fns[j] != RF_AGG_COUNT && (!args || args[j].n == 0))
            return rf_fail(st, RF_EXIT_RUNTIME_ERROR, "aggregate without an argument");
        counts_only &= fns[j] == RF_AGG_COUNT || fns[j] == RF_AGG_COUNT_DISTINCT;
    }
    size_t n = in->nrows;
    if (n == 0) {
        /* Keyless over nothing: one row of zeros when every aggregate is a
         * count, else no row. */
        if (nkeys == 0 && counts_only) {
            if (!rf_drel_alloc(c, &res, 1, what, st))
                return false;
            for (int j = 0; j < naggs; j++)
                CK(rf_k_fill(c->stream, res.data + (size_t)j * res.cap, 1, 0), "aggregate");
        }
        goto done;
    }
    if (!tmp_get(c, &flags, n, "group flags", st) || !tmp_get(c, &pos, (n + 1) * 8, "group positions", st))
        goto fail;
    CK(rf_k_row_heads(c->stream, rf_cols_of(in), nkeys, n, flags.p), "aggregate");
    if (!rf_cub_flag_scan(c, flags.p, pos.p, n, st))
        goto fail;
    uint64_t g;
    if (!read_word(c, (uint64_t *)pos.p + n, &g, st))
        goto fail;
    if (!tmp_get(c, &starts, (g + 1) * 8, "group starts", st))
        goto fail;
    CK(rf_k_seg_starts(c->stream, flags.p, pos.p, n, starts.p), "aggregate");
    CK(rf_k_fill(c->stream, (uint64_t *)starts.p + g, 1, n), "aggregate");
    /* flags and pos stay: the exact sums find each row's group from them. */
    if (!rf_drel_alloc(c, &res, (size_t)g, what, st))
        goto fail;
    rf_wcols oc = rf_wcols_of(&res);
    CK(rf_k_gather_rows(c->stream, rf_cols_of(in), nkeys, starts.p, g, oc), "aggregate keys");
    for (int j = 0; j < naggs; j++) {
        rf_aggfn fn = fns[j];
        const rf_code *arg = &args[j];
        uint64_t *result = oc.c[nkeys + j];
        if (fn == RF_AGG_COUNT) {
            CK(rf_k_seg_count(c->stream, starts.p, g, result), "count");
            continue;
        }
        const uint64_t *v;
        int col = rf_code_as_column_(arg);
        rf_type t = (rf_type)arg->ins[arg->n - 1].type;
        if (col >= 0) {
            v = in->data + (size_t)col * in->cap;
        } else {
            /* String functions in the argument: tabulated over the ids the
             * column holds (prepare), or, where they cannot be (substr with
             * a column as its length), evaluated by the host on every row
             * (host_kernel: the CPU's semantics) and uploaded. */
            prepared pp = {0};
            if (!prepare(c, NULL, 1, arg, in, in->arity, NULL, &pp, st))
                goto fail;
            if (pp.host) {
                prepared_free(&pp);
                rf_drel_free(c, &host_vals);   /* (an earlier aggregate's) */
                if (!host_kernel(c, in, NULL, 0, NULL, 1, arg, &host_vals, what, st) ||
                    (t == RF_TYPE_STRING && (fn == RF_AGG_MIN || fn == RF_AGG_MAX) &&
                     !rf_cuda_update_string_ranks(c, st)))
                    goto fail;
                v = host_vals.data;
                goto have_values;
            }
            if (pp.owned && (fn == RF_AGG_MIN || fn == RF_AGG_MAX) && t == RF_TYPE_STRING &&
                !rf_cuda_update_string_ranks(c, st)) {
                prepared_free(&pp);
                goto fail;
            }
            rf_dprog prog;
            bool up = upload_prog(c, NULL, 1, pp.proj, in->arity, &prog, st);
            prepared_free(&pp);
            if (!up)
                goto fail;
            if (!vals.p && !tmp_get(c, &vals, n * 8, "aggregate values", st))
                goto fail;
            CK(rf_k_eval(c->stream, rf_cols_of(in), n, prog, vals.p), "aggregate argument");
            if (!check_fault(c, st))
                goto fail;
            v = vals.p;
        }
    have_values:
        if (fn == RF_AGG_COUNT_DISTINCT) {
            if (!count_distinct(c, v, n, starts.p, g, result, what, st))
                goto fail;
        } else if (fn == RF_AGG_AVG && t == RF_TYPE_FLOAT64) {
            CK(rf_k_seg_favg(c->stream, v, starts.p, g, c->err, result), "avg");
            if (!check_fault(c, st))
                goto fail;
        } else if (fn == RF_AGG_TOTAL && t == RF_TYPE_FLOAT64) {
            CK(rf_k_seg_fsum(c->stream, v, starts.p, g, c->err, result), "total");
            if (!check_fault(c, st))
                goto fail;
        } else if (fn == RF_AGG_AVG || fn == RF_AGG_TOTAL) {
            /* Integers and decimals: exact 128-bit sums (rf_agg_ops.h). */
            if (!sums.p && !tmp_get(c, &sums, (size_t)g * 16, "aggregate sums", st))
                goto fail;
            CK(cudaMemsetAsync(sums.p, 0, (size_t)g * 16, c->stream), "aggregate sums");
            CK(rf_k_seg_sum128(c->stream, v, flags.p, pos.p, n, sums.p), fn == RF_AGG_AVG ? "avg" : "total");
            if (fn == RF_AGG_AVG) {
                CK(rf_k_seg_iavg_finish(c->stream, sums.p, starts.p, g,
                                        rf_type_is_decimal(t) ? rf_decimal_scale(t) : 0, result), "avg");
            } else {
                CK(rf_k_seg_total_finish(c->stream, sums.p, g, (int)result_types[j], c->err, result), "total");
                if (!check_fault(c, st))
                    goto fail;
            }
        } else {
            int kind;
            bool mn = fn == RF_AGG_MIN;
            if (rf_type_is_signed_word(t)) /* ints, dates, decimals */
                kind = mn ? RF_RED_MIN_I64 : RF_RED_MAX_I64;
            else if (t == RF_TYPE_FLOAT64)
                kind = mn ? RF_RED_MIN_F64 : RF_RED_MAX_F64;
            else if (t == RF_TYPE_STRING)
                kind = mn ? RF_RED_MIN_STR : RF_RED_MAX_STR;
            else
                kind = mn ? RF_RED_MIN_U64 : RF_RED_MAX_U64;
            if (!rf_cub_segmented_reduce(c, kind, v, g, starts.p, result, st))
                goto fail;
        }
    }
done:
    tmp_put(c, &flags);
    tmp_put(c, &pos);
    tmp_put(c, &starts);
    tmp_put(c, &vals);
    tmp_put(c, &sums);
    rf_drel_free(c, &host_vals);
    rf_drel_move(c, out, &res);
    out->arity = nkeys + naggs;
    return true;
fail:
    tmp_put(c, &flags);
    tmp_put(c, &pos);
    tmp_put(c, &starts);
    tmp_put(c, &vals);
    tmp_put(c, &sums);
    rf_drel_free(c, &host_vals);
    rf_drel_free(c, &res);
    return false;
}

/* Hash aggregation: see rf_cuda_prims.h. Groups: keys hashed into a table
 * of cap slots (at most half of it used), numbered in slot order; each
 * aggregate then folds its values into per-group accumulators with
 * atomics (exact 128-bit sums, so the order of the rows does not matter);
 * the result is sorted at the end (it has one row per group, far fewer
 * than the input's where this pays). */
#define RF_HASH_AGG_MAX_SLOTS ((size_t)1 << 22)
#define RF_HASH_AGG_SAMPLE ((size_t)1 << 16)

bool rf_cuda_aggregate_hash(rf_cuda_ctx *c, const rf_drel *in, int nkeys, int naggs, const rf_aggfn *fns,
                            const rf_type *result_types, const rf_code *args, rf_drel *out, bool *done,
                            const char *what, rf_status *st)
{
    *done = false;
    size_t n = in->nrows;
    if (!check_arity(in, what, st))
        return false;
    if (n == 0 || naggs < 1 || nkeys + naggs > RF_CUDA_MAX_COLS || nkeys > in->arity)
        return true; /* not this path's case: the caller sorts */
    for (int j = 0; j < naggs; j++) {
        rf_type t = args[j].n > 0 ? (rf_type)args[j].ins[args[j].n - 1].type : RF_TYPE_INT64;
        bool sum = fns[j] == RF_AGG_TOTAL || fns[j] == RF_AGG_AVG;
        bool minmax = fns[j] == RF_AGG_MIN || fns[j] == RF_AGG_MAX;
        if (!(fns[j] == RF_AGG_COUNT || ((sum || minmax) && rf_type_is_signed_word(t) && t != RF_TYPE_FLOAT64)))
            return true;
    }
    /* RF_CUDA_HASH_SLOTS (tests): a smaller table, so that groups overflow
     * it and the caller's sorting path runs. */
    size_t max_slots = RF_HASH_AGG_MAX_SLOTS;
    const char *env = getenv("RF_CUDA_HASH_SLOTS");
    if (env && atol(env) >= 2)
        max_slots = (size_t)atol(env);
    size_t cap = 2;
    while (cap < 2 * n && cap * 2 <= max_slots)
        cap *= 2;
    tmpbuf keys = {0}, state = {0}, gid = {0}, flags = {0}, pos = {0}, group_of = {0}, counts = {0}, acc = {0},
           vals = {0}, misc = {0};
    rf_drel res, sorted;
    rf_drel_init(&res, nkeys + naggs);
    rf_drel_init(&sorted, nkeys + naggs);
    if (!tmp_get(c, &keys, cap * 8 * (size_t)(nkeys > 0 ? nkeys : 1), "hash aggregation", st) ||
        !tmp_get(c, &state, cap * 4, "hash aggregation", st) || !tmp_get(c, &gid, n * 8, "hash aggregation", st) ||
        !tmp_get(c, &misc, 16, "hash aggregation", st))
        goto fail;
    unsigned long long *claimed = misc.p;
    unsigned *overflow = (unsigned *)((char *)misc.p + 8);
    uint64_t word;
    /* Many groups (more than one in 16 of an even sample of up to 64K rows)
     * make hashing no cheaper than sorting, and may not fit the table:
     * give up before the full pass. */
    if (n > RF_HASH_AGG_SAMPLE) {
        size_t stride = n / RF_HASH_AGG_SAMPLE;
        CK(cudaMemsetAsync(state.p, 0, cap * 4, c->stream), "hash aggregation");
        CK(cudaMemsetAsync(misc.p, 0, 16, c->stream), "hash aggregation");
        CK(rf_k_hash_groups(c->stream, rf_cols_of(in), nkeys, RF_HASH_AGG_SAMPLE, stride, keys.p, state.p, cap,
                            claimed, overflow, gid.p), "hash aggregation");
        if (!read_word(c, (uint64_t *)misc.p, &word, st))
            goto fail;
        if (word > RF_HASH_AGG_SAMPLE / 16)
            goto refused;
    }
    CK(cudaMemsetAsync(state.p, 0, cap * 4, c->stream), "hash aggregation");
    CK(cudaMemsetAsync(misc.p, 0, 16, c->stream), "hash aggregation");
    CK(rf_k_hash_groups(c->stream, rf_cols_of(in), nkeys, n, 1, keys.p, state.p, cap, claimed, overflow, gid.p),
       "hash aggregation");
    if (!read_word(c, (uint64_t *)misc.p + 1, &word, st)) /* the overflow flag: its low 32 bits */
        goto fail;
    if ((unsigned)word != 0)
        goto refused;
    if (!tmp_get(c, &flags, cap, "hash aggregation", st) || !tmp_get(c, &pos, (cap + 1) * 8, "hash aggregation", st))
        goto fail;
    CK(rf_k_slot_flags(c->stream, state.p, cap, flags.p), "hash aggregation");
    if (!rf_cub_flag_scan(c, flags.p, pos.p, cap, st))
        goto fail;
    uint64_t g;
    if (!read_word(c, (uint64_t *)pos.p + cap, &g, st))
        goto fail;
    if (!tmp_get(c, &group_of, cap * 8, "hash aggregation", st) || !rf_drel_alloc(c, &res, (size_t)g, what, st) ||
        !tmp_get(c, &counts, g * 8, "hash aggregation", st) || !tmp_get(c, &acc, g * 16, "hash aggregation", st))
        goto fail;
    rf_wcols oc = rf_wcols_of(&res);
    CK(rf_k_slot_groups(c->stream, flags.p, pos.p, keys.p, cap, nkeys, group_of.p, oc), "hash aggregation");
    CK(rf_k_renumber(c->stream, gid.p, group_of.p, n), "hash aggregation");
    CK(cudaMemsetAsync(counts.p, 0, g * 8, c->stream), "hash aggregation");
    CK(rf_k_hash_fold(c->stream, 0, NULL, gid.p, n, g, counts.p), "hash aggregation");
    for (int j = 0; j < naggs; j++) {
        uint64_t *result = oc.c[nkeys + j];
        if (fns[j] == RF_AGG_COUNT) {
            CK(cudaMemcpyAsync(result, counts.p, g * 8, cudaMemcpyDeviceToDevice, c->stream), "count");
            continue;
        }
        const rf_code *arg = &args[j];
        rf_type t = (rf_type)arg->ins[arg->n - 1].type;
        const uint64_t *v;
        int col = rf_code_as_column_(arg);
        if (col >= 0) {
            v = in->data + (size_t)col * in->cap;
        } else {
            prepared pp = {0};
            if (!prepare(c, NULL, 1, arg, in, in->arity, NULL, &pp, st))
                goto fail;
            if (pp.host) { /* string functions this device cannot run: the caller's path */
                prepared_free(&pp);
                goto refused;
            }
            rf_dprog prog;
            bool up = upload_prog(c, NULL, 1, pp.proj, in->arity, &prog, st);
            prepared_free(&pp);
            if (!up)
                goto fail;
            if (!vals.p && !tmp_get(c, &vals, n * 8, "aggregate values", st))
                goto fail;
            CK(rf_k_eval(c->stream, rf_cols_of(in), n, prog, vals.p), "aggregate argument");
            if (!check_fault(c, st))
                goto fail;
            v = vals.p;
        }
        if (fns[j] == RF_AGG_MIN || fns[j] == RF_AGG_MAX) {
            uint64_t init = fns[j] == RF_AGG_MIN ? (uint64_t)INT64_MAX : (uint64_t)INT64_MIN;
            CK(rf_k_fill(c->stream, result, g, init), "min/max");
            CK(rf_k_hash_fold(c->stream, fns[j] == RF_AGG_MIN ? 2 : 3, v, gid.p, n, g,
                              (unsigned long long *)result), "min/max");
            continue;
        }
        CK(cudaMemsetAsync(acc.p, 0, g * 16, c->stream), "total");
        CK(rf_k_hash_fold(c->stream, 1, v, gid.p, n, g, acc.p), "total");
        if (fns[j] == RF_AGG_AVG) {
            CK(rf_k_hash_avg_finish(c->stream, acc.p, counts.p, g, rf_type_is_decimal(t) ? rf_decimal_scale(t) : 0,
                                    result), "avg");
        } else {
            CK(rf_k_seg_total_finish(c->stream, acc.p, g, (int)result_types[j], c->err, result), "total");
            if (!check_fault(c, st))
                goto fail;
        }
    }
    res.nrows = (size_t)g;
    if (!rf_cuda_sort_unique(c, &res, &sorted, what, st))
        goto fail;
    rf_drel_move(c, out, &sorted);
    out->arity = nkeys + naggs;
    *done = true;
refused:
    tmp_put(c, &keys), tmp_put(c, &state), tmp_put(c, &gid), tmp_put(c, &flags), tmp_put(c, &pos);
    tmp_put(c, &group_of), tmp_put(c, &counts), tmp_put(c, &acc), tmp_put(c, &vals), tmp_put(c, &misc);
    rf_drel_free(c, &res);
    rf_drel_free(c, &sorted);
    return true;
fail:
    tmp_put(c, &keys), tmp_put(c, &state), tmp_put(c, &gid), tmp_put(c, &flags), tmp_put(c, &pos);
    tmp_put(c, &group_of), tmp_put(c, &counts), tmp_put(c, &acc), tmp_put(c, &vals), tmp_put(c, &misc);
    rf_drel_free(c, &res);
    rf_drel_free(c, &sorted);
    return false;
}

/* ---- A selection with its compaction as one generated kernel ---- */

static size_t sm_count(rf_cuda_ctx *c)
{
    int n = 0;
    if (cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, c->device) != cudaSuccess || n <= 0) {
        (void)cudaGetLastError();
        n = 16;
    }
    return (size_t)n;
}


/* ---- Select planning of a generated kernel's filter (docs/weaver.md s. 5) ---- */

/* The conjuncts' selectivities on an even sample of up to
 * RF_CG_SAMPLE_ROWS of the n rows (candidate pairs): one generated kernel
 * evaluating each conjunct on its own, one read-back. A conjunct that
 * faults on a sampled row (`x / y` where y = 0, a row the filter keeps out
 * by an earlier conjunct) counts as not holding there; its fault goes to
 * a scratch record, never to the kernel's. *sampled false (and true
 * returned): no sample could be taken (no generated code), the plan is
 * then the unchanged filter. */
static bool sample_selectivities(rf_cuda_ctx *c, bool join, int al, const rf_cg_plan *pl, rf_cols lc, rf_cols rc,
                                 const uint64_t *lo, const uint64_t *off, uint64_t nl, uint64_t n, double *sel,
                                 double *rows, bool *sampled, rf_status *st)
{
    *sampled = false;
    const char *name = "rf_selsample";
    void *fn = NULL;
    rf_cg_key key = {0};
    rf_cg_key_sample(&key, join, al, pl);
    bool loaded = rf_codegen_module_by_key(c, &key, 1, &name, &fn);
    if (!loaded) {
        char *src = rf_codegen_selsample_source(join, al, pl);
        rf_codegen_memo(c, &key, src);
        loaded = src && rf_codegen_module(c, src, 1, &name, &fn);
        free(src);
    }
    rf_cg_key_free(&key);
    if (!loaded)
        return true;
    int nc = pl->split.n;
    uint64_t m = n < RF_CG_SAMPLE_ROWS ? n : RF_CG_SAMPLE_ROWS, stride = n / m;
    tmpbuf buf = {0};
    size_t bytes = (size_t)nc * 8 + sizeof(rf_derr);
    if (!tmp_get(c, &buf, bytes, "selectivity sample", st))
        return false;
    CK(cudaMemsetAsync(buf.p, 0, bytes, c->stream), "selectivity sample");
    {
        unsigned long long *counts = buf.p;
        rf_denv env = {c->rank, c->nrank, (rf_derr *)((char *)buf.p + (size_t)nc * 8), c->tab};
        void *params[] = {&lc, &rc, &lo, &off, &nl, &m, &stride, &env, &counts};
        uint64_t got[RF_SELPLAN_MAX];
        if (!rf_codegen_launch_grid(c, fn, (size_t)m, sm_count(c) * 2, params, st) ||
            !rf_cuda_read_back(c, buf.p, got, (size_t)nc * 8, st))
            goto fail;
        for (int i = 0; i < nc; i++)
            sel[i] = (double)got[i] / (double)m;
    }
    tmp_put(c, &buf);
    *rows = (double)m;
    *sampled = true;
    return true;
fail:
    tmp_put(c, &buf);
    return false;
}

/* A plan's note for --stats, once per output and plan (loops run a kernel
 * many times). */
static void note_plan(rf_cuda_ctx *c, const char *what, const rf_cg_plan *pl)
{
    char *note = rf_cg_plan_note(pl);
    rf_codegen_note_plan(c, what ? what : "?", note);
    free(note);
}

/* A plan the model chose whose module is not loaded (src: its source)
 * runs only once the time it saves pays for making the module
 * (rf_codegen_pays: a load from the disk cache, ~0.4 ms, or a compilation);
 * until then the unchanged filter (the identity plan, whose module the
 * backend makes ahead with the program's) runs (pl->deferred). At 10^8
 * rows pattern (a)'s plan saved 0.1 ms by the model and cost 0.35-0.7 ms
 * to load (docs/performance.md). Forced plans and the sweep (which times
 * every plan) are not deferred; callers never pass the unchanged filter's
 * plan (plan_is_identity), which is made ahead and found by its key. */
/* What one generated pass saves over the library's selection (interpreted
 * flags, a scan, an interpreted emit, a host wait between), by rows: fitted
 * to the H100 at SF 10 (q19's 60M-row scan 16 -> 2 ms, q04's 15M-row MAP
 * 8.5 -> 6.4 ms: ~0.15-0.23 ns a row, and ~30 us of launches and the wait).
 * Below ~2.5M rows it does not pay for a module read from the disk cache. */
#define RF_LONE_GAIN_NS(rows) (3e4 + 0.15 * (double)(rows))

static bool plan_is_identity(const rf_cg_plan *pl)
{
    rf_selplan id;
    rf_selplan_identity(pl->plan.n, &id);
    for (int i = 0; i < pl->plan.n; i++)
        if (pl->plan.order[i] != id.order[i] || (i + 1 < pl->plan.n && pl->plan.conn[i] != id.conn[i]))
            return false;
    return true;
}

static void defer_plan(rf_cuda_ctx *c, rf_cg_plan *pl, const char *src)
{
    if (pl->forced || !src || getenv("RF_WEAVE_SELPLAN_SWEEP"))
        return;
    pl->deferred = !rf_codegen_pays(c, src, pl->identity_ns - pl->model_ns);
}

/* Whether sampling this filter's selectivities could lead anywhere: a plan
 * other than the unchanged filter's runs only once its module pays for
 * itself (defer_plan), at least a load from the disk cache, so a sample
 * (its launch, a host wait, a plan search and the plan's source: 0.2-0.25
 * ms at 10^8 rows, docs/performance.md) is wasted where no plan could save
 * that much, however selective the conjuncts turn out to be
 * (rf_selplan_gain_bound). The bounds are offered under the filter's own
 * key, so a loop's filter that runs often enough is sampled after all.
 * The sweep (RF_WEAVE_SELPLAN_SWEEP) always samples. */
static bool sample_may_pay(rf_cuda_ctx *c, const rf_cg_plan *pl, bool join, int al, uint64_t n, double *bound)
{
    if (getenv("RF_WEAVE_SELPLAN_SWEEP"))
        return true;
    uint64_t key = UINT64_C(1469598103934665603);
#define MIX(v) (key = (key ^ (uint64_t)(v)) * UINT64_C(1099511628211))
    MIX(join);
    MIX(al);
    for (int i = 0; i < pl->split.n; i++) {
        const rf_code *code = &pl->split.conj[i].code;
        MIX(code->n);
        for (int k = 0; k < code->n; k++) {
            const rf_instr *in = &code->ins[k];
            MIX(in->op), MIX(in->type), MIX(in->arg_type), MIX((uint32_t)in->index), MIX(in->value);
        }
    }
#undef MIX
    *bound = rf_selplan_gain_bound(pl->split.conj, pl->split.n, (double)n, rf_codegen_selcalib(c));
    return rf_codegen_offer(c, key, *bound, RF_CG_LOAD_NS);
}

/* The plan of a generated kernel's filter: forced by RF_WEAVE_SELPLAN, else
 * chosen by the model from a sample's selectivities; only for filters of 2
 * or more conjuncts (the caller notes it, note_plan, once its kernel is
 * loaded). -1: an error (an illegal forced plan: st says which
 * conjunct and why); 0: no plan (the filter as it is); 1: *pl planned. */
static int plan_filter(rf_cuda_ctx *c, const rf_code *filter, bool join, int al, rf_cols lc, rf_cols rc,
                       const uint64_t *lo, const uint64_t *off, uint64_t nl, uint64_t n, bool allow_split,
                       rf_cg_plan *pl, rf_status *st)
{
    int nc = rf_cg_plan_split(filter, pl, st);
    if (nc < 0)
        return -1;
    if (nc < 2) {
        rf_cg_plan_free(pl);
        return 0;
    }
    rf_cuda_trace(c, "plan: conjuncts");
    int forced = rf_cg_plan_forced(pl, allow_split, st);
    if (forced < 0) {
        rf_cg_plan_free(pl);
        return -1;
    }
    rf_cuda_trace(c, "plan: forced?");
    double bound = 0;
    if (!forced) /* read here (once a process, then cached) so a trace shows that read apart */
        (void)rf_codegen_selcalib(c);
    rf_cuda_trace(c, "plan: constants");
    if (!forced && !sample_may_pay(c, pl, join, al, n, &bound)) {
        (void)rf_cg_plan_choose(pl, NULL, 0, (double)n, allow_split, rf_codegen_selcalib(c), st);
        pl->bound_ns = bound > 0 ? bound : 1; /* > 0: the note says why */
    } else if (!forced) {
        double sel[RF_SELPLAN_MAX], rows = 0;
        bool sampled = false;
        if (!sample_selectivities(c, join, al, pl, lc, rc, lo, off, nl, n, sel, &rows, &sampled, st) ||
            !rf_cg_plan_choose(pl, sampled ? sel : NULL, rows, (double)n, allow_split, rf_codegen_selcalib(c),
                               st)) {
            rf_cg_plan_free(pl);
            return -1;
        }
    }
    return 1;
}

/* ---- A selection with its compaction as one generated kernel ---- */

/* The select kernels of src (rf_codegen_select_source of plan pl, or of
 * the filter as it is: pl NULL; taken and freed here), compiled and
 * loaded: fns[part]; *nparts of them. False: no generated code (src NULL,
 * or no NVRTC: the caller's library path runs). */
static bool select_kernels(rf_cuda_ctx *c, char *src, const rf_cg_plan *pl, void **fns, int *nparts)
{
    if (!src)
        return false;
    *nparts = pl ? pl->nparts : 1;
    const char *names[RF_CG_MAX_PARTS];
    for (int q = 0; q < *nparts; q++)
        names[q] = rf_codegen_select_name(*nparts, q);
    bool loaded = rf_codegen_module(c, src, *nparts, names, fns);
    free(src);
    return loaded;
}

/* Runs select kernels (select_kernels) over n rows (candidate pairs) into
 * *res (allocated here for the rows entering the last part), *kept of its
 * rows made. Part q > 0 runs over the row ids part q - 1 kept (4 bytes
 * each, in input order); the host reads each part's count (the look-back's
 * last prefix) to size the next, with the fault slot in the same read-back:
 * a fault fails the run (st), the rows discarded. */
static bool select_run(rf_cuda_ctx *c, void *const *fns, int nparts, rf_cols lc, rf_cols rc, const uint64_t *lo,
                       const uint64_t *off, uint64_t nl, uint64_t n, int nproj, rf_drel *res, uint64_t *kept,
                       const char *what, rf_status *st)
{
    tmpbuf status = {0}, rid[2] = {{0, 0}, {0, 0}};
    rf_denv env = {c->rank, c->nrank, c->err, c->tab};
    uint64_t m = n;
    const uint32_t *rid_in = NULL;
    *kept = 0;
    uint64_t ntiles0 = (n + RF_SELECT_TILE_ROWS - 1) / RF_SELECT_TILE_ROWS;
    if (!tmp_get(c, &status, (ntiles0 + 1) * 8, "selection", st))
        return false;
    for (int q = 0; q < nparts && m > 0; q++) {
        bool last = q + 1 == nparts;
        uint64_t ntiles = (m + RF_SELECT_TILE_ROWS - 1) / RF_SELECT_TILE_ROWS;
        uint32_t *rid_out = NULL;
        rf_wcols oc;
        memset(&oc, 0, sizeof oc);
        if (last) {
            if (!rf_drel_alloc(c, res, (size_t)m, what, st))
                goto fail;
            oc = rf_wcols_of(res);
        } else {
            if (!tmp_get(c, &rid[q % 2], (size_t)m * sizeof(uint32_t), "selection row ids", st))
                goto fail;
            rid_out = rid[q % 2].p;
        }
        CK(cudaMemsetAsync(status.p, 0, (ntiles + 1) * 8, c->stream), "selection");
        unsigned long long *st_words = status.p, *next = (unsigned long long *)status.p + ntiles;
        void *params[] = {&lc, &rc, &lo, &off, &nl, &m, &env, &oc, &st_words, &next, &ntiles, &rid_in, &rid_out};
        uint64_t count = 0;
        const uint64_t *last_tile = (const uint64_t *)status.p + ntiles - 1;
        if (!rf_codegen_launch_grid(c, fns[q], (size_t)ntiles * 256, sm_count(c) * 8, params, st) ||
            !read_fault_and_words(c, 1, &last_tile, &count, st))
            goto fail;
        count &= ((uint64_t)1 << 62) - 1;
        if (q > 0)
            tmp_put(c, &rid[(q + 1) % 2]); /* this part's input ids */
        if (last)
            *kept = count;
        rid_in = rid_out;
        m = count;
    }
    tmp_put(c, &status), tmp_put(c, &rid[0]), tmp_put(c, &rid[1]);
    return true;
fail:
    tmp_put(c, &status), tmp_put(c, &rid[0]), tmp_put(c, &rid[1]);
    return false;
}

/* RF_WEAVE_SELPLAN_SWEEP (bench/selplan_sweep.py): every legal plan of this
 * filter run and timed on the device over the same input (device events
 * around the plan's kernels, their count read-backs and the pool
 * allocations between them, as a run has them; no sample, no compile in
 * the time), best of
 * RF_WEAVE_SELPLAN_SWEEP runs each ("3", or "3:nosplit" for the plans
 * without |), one line per plan on stderr:
 *   redfox: selplan sweep: OUT PLAN MS ROWS [chosen]
 * Rows that differ from the chosen plan's are an error. For measuring the
 * planner against every alternative without reloading the input per plan. */
static bool sweep_plans(rf_cuda_ctx *c, bool join, int al, const rf_code *filter, int nproj, const rf_code *proj,
                        const rf_cg_plan *chosen, rf_cols lc, rf_cols rc, const uint64_t *lo, const uint64_t *off,
                        uint64_t nl, uint64_t n, bool allow_split, const char *what, rf_status *st);

bool rf_cuda_select_one_pass(rf_cuda_ctx *c, const rf_drel *l, const rf_drel *r, int join_keys,
                             const rf_code *filter, int nproj, const rf_code *proj, rf_drel *out, bool *done,
                             const char *what, rf_status *st)
{
    *done = false;
    if (nproj < 1 || nproj > RF_CUDA_MAX_COLS || l->nrows == 0 || (r && r->nrows == 0))
        return true; /* nothing to make: the library's path is as quick */
    if (r ? !check_join(l, r, join_keys, what, st) : !check_arity(l, what, st))
        return false;
    if (!r && (!filter || filter->n == 0) && all_columns(nproj, proj))
        return true; /* column copies, no kernel: the library's path */
    if (c->codegen_optional && RF_LONE_GAIN_NS(l->nrows) < RF_CG_LOAD_NS) {
        /* A lone select over a few rows whose code has string functions:
         * their tables are part of the source, so the module was not made
         * ahead and would not pay; decided before prepare tabulates them,
         * or the library's path would tabulate again (q09's like() over
         * 2M part names: 11 ms twice). */
        bool strings = code_has_string_op(filter);
        for (int k = 0; k < nproj && !strings; k++)
            strings = code_has_string_op(&proj[k]);
        if (strings)
            return true;
    }
    prepared pp;
    rf_cuda_trace(c, "select: before prepare");
    if (!prepare(c, filter, nproj, proj, l, l->arity, r, &pp, st))
        return false;
    rf_cuda_trace(c, "select: prepare");
    if (pp.host) {
        prepared_free(&pp);
        return true;
    }
    tmpbuf lo = {0}, off = {0};
    rf_drel res, exact;
    rf_drel_init(&res, nproj);
    rf_drel_init(&exact, nproj);
    rf_cg_plan plan;
    memset(&plan, 0, sizeof plan);
    int planned = 0;
    uint64_t n = l->nrows, kept = 0;
    /* The rows first (a JOIN's candidate pairs), since the plan is chosen
     * from a sample of them. */
    if (r && !join_candidates(c, l, r, join_keys, &lo, &off, &n, st))
        goto fail;
    rf_cuda_trace(c, "select: candidates");
    rf_cols lc = rf_cols_of(l), rc = rf_cols_of(r ? r : l);
    const uint64_t *lop = lo.p, *offp = off.p;
    uint64_t nl = l->nrows;
    /* Row ids between the parts of a split plan are 32 bits. */
    bool allow_split = n <= UINT32_MAX;
    if (n > 0 && (planned = plan_filter(c, pp.filter, r != NULL, l->arity, lc, rc, lop, offp, nl, n, allow_split,
                                        &plan, st)) < 0)
        goto fail;
    rf_cuda_trace(c, "select: plan");
    char *chosen = NULL; /* the chosen plan's source, when it runs */
    if (planned && !plan_is_identity(&plan)) {
        chosen = rf_codegen_select_source(r != NULL, l->arity, pp.filter, nproj, pp.proj, &plan);
        defer_plan(c, &plan, chosen);
        if (plan.deferred) {
            free(chosen);
            chosen = NULL;
        }
        rf_cuda_trace(c, "select: deferral");
    }
    rf_cg_plan ident; /* a deferred plan's stand-in: shares plan's conjuncts */
    if (planned && plan.deferred)
        rf_cg_plan_identity_of(&plan, allow_split, &ident);
    const rf_cg_plan *run_plan = !planned ? NULL : plan.deferred ? &ident : &plan;
    void *fns[RF_CG_MAX_PARTS];
    int nparts = run_plan ? run_plan->nparts : 1;
    bool loaded = false;
    rf_cg_key key = {0};
    if (!chosen) {
        /* the unchanged filter's module, made ahead with the program's, found
         * by what its source is made from: no source made and hashed */
        const char *names[RF_CG_MAX_PARTS];
        for (int q = 0; q < nparts && q < RF_CG_MAX_PARTS; q++)
            names[q] = rf_codegen_select_name(nparts, q);
        rf_cg_key_select(&key, r != NULL, l->arity, pp.filter, nproj, pp.proj, run_plan);
        rf_cuda_trace(c, "select: key");
        loaded = nparts <= RF_CG_MAX_PARTS && rf_codegen_module_by_key(c, &key, nparts, names, fns);
    }
    if (!loaded) {
        char *src = chosen ? chosen
                           : rf_codegen_select_source(r != NULL, l->arity, pp.filter, nproj, pp.proj, run_plan);
        /* A lone select (optional) whose module is neither loaded nor worth
         * loading for what it saves: the library's kernels. (With string
         * functions that was decided by its rows before prepare: declining
         * now would make the library's path tabulate them again.) */
        if (src && c->codegen_optional && !pp.owned && !rf_codegen_pays(c, src, RF_LONE_GAIN_NS(n))) {
            free(src);
            src = NULL;
        }
        if (src && key.len)
            rf_codegen_memo(c, &key, src);
        loaded = select_kernels(c, src, run_plan, fns, &nparts);
    }
    rf_cg_key_free(&key);
    if (!loaded) {
        /* no generated code: the library's path */
        tmp_put(c, &lo), tmp_put(c, &off);
        prepared_free(&pp);
        rf_cg_plan_free(&plan);
        return true;
    }
    rf_cuda_trace(c, "select: source, module");
    if (planned)
        note_plan(c, what, &plan);
    if (planned && getenv("RF_WEAVE_SELPLAN_SWEEP") &&
        !sweep_plans(c, r != NULL, l->arity, pp.filter, nproj, pp.proj, &plan, lc, rc, lop, offp, nl, n, allow_split,
                     what, st))
        goto fail;
    if (n > 0 && !select_run(c, fns, nparts, lc, rc, lop, offp, nl, n, nproj, &res, &kept, what, st))
        goto fail;
    rf_cuda_trace(c, "select: kernels and read back");
    res.nrows = (size_t)kept;
    if (keep_exact(c, res.cap, kept, nproj)) {
        if (!rf_drel_copy(c, &exact, &res, what, st))
            goto fail;
        rf_drel_move(c, &res, &exact);
        rf_cuda_trace(c, "select: exact copy");
    }
    tmp_put(c, &lo), tmp_put(c, &off);
    prepared_free(&pp);
    rf_cg_plan_free(&plan);
    rf_drel_move(c, out, &res);
    out->arity = nproj;
    *done = true;
    c->select_passes++;
    return true;
fail:
    tmp_put(c, &lo), tmp_put(c, &off);
    prepared_free(&pp);
    rf_cg_plan_free(&plan);
    rf_drel_free(c, &res);
    rf_drel_free(c, &exact);
    return false;
}

typedef struct sweep_ctx {
    rf_selplan *plans;
    int n, cap;
} sweep_ctx;

static void sweep_collect(const rf_selplan *p, void *ctx)
{
    sweep_ctx *s = ctx;
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 64;
        s->plans = rf_realloc(s->plans, (size_t)s->cap * sizeof *s->plans);
    }
    s->plans[s->n++] = *p;
}

static bool sweep_plans(rf_cuda_ctx *c, bool join, int al, const rf_code *filter, int nproj, const rf_code *proj,
                        const rf_cg_plan *chosen, rf_cols lc, rf_cols rc, const uint64_t *lo, const uint64_t *off,
                        uint64_t nl, uint64_t n, bool allow_split, const char *what, rf_status *st)
{
    const char *spec = getenv("RF_WEAVE_SELPLAN_SWEEP");
    int reps = atoi(spec);
    if (reps < 1)
        reps = 1;
    if (strstr(spec, "nosplit")) /* "3:nosplit": the plans without | (fewer kernels to compile) */
        allow_split = false;
    sweep_ctx all = {NULL, 0, 0};
    if (rf_selplan_enumerate(chosen->split.conj, chosen->split.n, allow_split, sweep_collect, &all) < 0) {
        free(all.plans);
        return true; /* too many conjuncts to enumerate: nothing swept */
    }
    char chosen_text[RF_SELPLAN_FMT_MAX];
    rf_selplan_format(&chosen->plan, chosen_text, sizeof chosen_text);
    cudaEvent_t e0 = NULL, e1 = NULL;
    bool ok = rf_cuda_check(c, cudaEventCreate(&e0), "sweep", st) && rf_cuda_check(c, cudaEventCreate(&e1), "sweep", st);
    uint64_t want = UINT64_MAX;
    /* The chosen plan first: the others' rows are checked against it. */
    for (int k = -1; ok && k < all.n; k++) {
        rf_cg_plan pl = *chosen;   /* the split is shared, never freed here */
        char text[RF_SELPLAN_FMT_MAX];
        if (k >= 0) {
            pl.plan = all.plans[k];
            pl.forced = true;
            pl.nparts = 1;
            pl.part_start[0] = 0;
            for (int i = 0; i + 1 < pl.plan.n; i++)
                if (pl.plan.conn[i] == RF_SEL_SPLIT)
                    pl.part_start[pl.nparts++] = i + 1;
            pl.part_start[pl.nparts] = pl.plan.n;
            if (strcmp(rf_selplan_format(&pl.plan, text, sizeof text), chosen_text) == 0)
                continue; /* timed first */
        } else {
            rf_selplan_format(&pl.plan, text, sizeof text);
        }
        void *fns[RF_CG_MAX_PARTS];
        int nparts = 1;
        if (pl.nparts > RF_CG_MAX_PARTS ||
            !select_kernels(c, rf_codegen_select_source(join, al, filter, nproj, proj, &pl), &pl, fns, &nparts)) {
            fprintf(stderr, "redfox: selplan sweep: %s %s - - (no generated code)\n", what, text);
            continue;
        }
        float best = -1;
        uint64_t kept = 0;
        for (int rep = 0; ok && rep < reps; rep++) {
            rf_drel res;
            rf_drel_init(&res, nproj);
            float ms = 0;
            ok = rf_cuda_check(c, cudaEventRecord(e0, c->stream), "sweep", st) &&
                 select_run(c, fns, nparts, lc, rc, lo, off, nl, n, nproj, &res, &kept, what, st) &&
                 rf_cuda_check(c, cudaEventRecord(e1, c->stream), "sweep", st) &&
                 rf_cuda_check(c, cudaEventSynchronize(e1), "sweep", st) &&
                 rf_cuda_check(c, cudaEventElapsedTime(&ms, e0, e1), "sweep", st);
            rf_drel_free(c, &res);
            if (ok && (best < 0 || ms < best))
                best = ms;
        }
        if (!ok)
            break;
        if (k < 0)
            want = kept;
        else if (kept != want)
            ok = rf_fail(st, RF_EXIT_RUNTIME_ERROR,
                         "select plan sweep: plan %s kept %" PRIu64 " rows of %s, the chosen plan %s kept %" PRIu64,
                         text, kept, what, chosen_text, want);
        if (ok)
            fprintf(stderr, "redfox: selplan sweep: %s %s %.6f %" PRIu64 "%s\n", what, text, best, kept,
                    k < 0 ? " chosen" : "");
    }
    if (e0)
        cudaEventDestroy(e0);
    if (e1)
        cudaEventDestroy(e1);
    free(all.plans);
    return ok;
}

bool rf_cuda_select_many(rf_cuda_ctx *c, const rf_drel *in, int nb, const rf_code *const *filters,
                         const int *nprojs, const rf_code *const *projs, rf_drel *const *outs, bool *done,
                         const char *what, rf_status *st)
{
    *done = false;
    if (nb < 2 || nb > RF_SELECT_MANY_MAX || in->nrows == 0)
        return true;
    if (!check_arity(in, what, st))
        return false;
    /* String functions: each branch's tables would take the one table
     * buffer (c->tab) in turn; the branches then run one by one. */
    for (int x = 0; x < nb; x++) {
        bool strings = code_has_string_op(filters[x]);
        for (int p = 0; p < nprojs[x] && !strings; p++)
            strings = code_has_string_op(&projs[x][p]);
        if (strings)
            return true;
    }
    prepared pp[RF_SELECT_MANY_MAX];
    const rf_code *pf[RF_SELECT_MANY_MAX], *pj[RF_SELECT_MANY_MAX];
    int made = 0;
    bool ok = true, host = false;
    for (; made < nb && ok && !host; made++) {
        ok = prepare(c, filters[made], nprojs[made], projs[made], in, in->arity, NULL, &pp[made], st);
        host = ok && pp[made].host;
        pf[made] = pp[made].filter;
        pj[made] = pp[made].proj;
    }
    rf_cuda_trace(c, "select many: prepare");
    const char *name = "rf_select_many";
    void *fn = NULL;
    bool loaded = false;
    if (ok && !host) {
        /* the module made ahead, found by what its source is made from;
         * else the source made, and its module */
        rf_cg_key key = {0};
        rf_cg_key_select_many(&key, in->arity, nb, pf, nprojs, pj);
        rf_cuda_trace(c, "select many: key");
        loaded = rf_codegen_module_by_key(c, &key, 1, &name, &fn);
        if (!loaded) {
            char *src = rf_codegen_select_many_source(in->arity, nb, pf, nprojs, pj);
            rf_cuda_trace(c, "select many: source");
            rf_codegen_memo(c, &key, src);
            loaded = src && rf_codegen_module(c, src, 1, &name, &fn);
            free(src);
        }
        rf_cg_key_free(&key);
    }
    for (int x = 0; x < made; x++)
        prepared_free(&pp[x]);
    if (!ok)
        return false;
    if (!loaded)
        return true;
    rf_cuda_trace(c, "select many: module");
    uint64_t n = in->nrows, ntiles = (n + RF_SELECT_TILE_ROWS - 1) / RF_SELECT_TILE_ROWS;
    uint64_t kept[RF_SELECT_MANY_MAX];
    tmpbuf status = {0};
    rf_drel res[RF_SELECT_MANY_MAX];
    for (int x = 0; x < nb; x++)
        rf_drel_init(&res[x], nprojs[x]);
    if (!tmp_get(c, &status, ((size_t)nb * ntiles + 1) * 8, "selection", st))
        goto fail;
    rf_cuda_trace(c, "select many: status words");
    for (int x = 0; x < nb; x++)
        if (!rf_drel_alloc(c, &res[x], n, what, st))
            goto fail;
    rf_cuda_trace(c, "select many: outputs");
    CK(cudaMemsetAsync(status.p, 0, ((size_t)nb * ntiles + 1) * 8, c->stream), "selection");
    {
        rf_cols lc = rf_cols_of(in);
        rf_denv env = {c->rank, c->nrank, c->err, c->tab};
        rf_wcols oc[RF_SELECT_MANY_MAX];
        unsigned long long *st_words = status.p, *next = (unsigned long long *)status.p + (size_t)nb * ntiles;
        void *params[3 + RF_SELECT_MANY_MAX + 3];
        int np = 0;
        params[np++] = &lc;
        params[np++] = &n;
        params[np++] = &env;
        for (int x = 0; x < nb; x++) {
            oc[x] = rf_wcols_of(&res[x]);
            params[np++] = &oc[x];
        }
        params[np++] = &st_words;
        params[np++] = &next;
        params[np++] = &ntiles;
        rf_cuda_trace(c, "select many: alloc+clear");
        if (!rf_codegen_launch_grid(c, fn, (size_t)ntiles * 256, sm_count(c) * 8, params, st))
            goto fail;
        rf_cuda_trace(c, "select many: kernel");
        const uint64_t *last[RF_SELECT_MANY_MAX];
        for (int x = 0; x < nb; x++)
            last[x] = (const uint64_t *)status.p + (size_t)x * ntiles + ntiles - 1;
        if (!read_fault_and_words(c, nb, last, kept, st))
            goto fail;
        for (int x = 0; x < nb; x++)
            kept[x] &= ((uint64_t)1 << 62) - 1;
        rf_cuda_trace(c, "select many: read back");
    }
    for (int x = 0; x < nb; x++) {
        res[x].nrows = (size_t)kept[x];
        if (keep_exact(c, n, kept[x], nprojs[x])) {
            rf_drel exact;
            rf_drel_init(&exact, nprojs[x]);
            if (!rf_drel_copy(c, &exact, &res[x], what, st))
                goto fail;
            rf_drel_move(c, &res[x], &exact);
        }
    }
    tmp_put(c, &status);
    for (int x = 0; x < nb; x++) {
        rf_drel_move(c, outs[x], &res[x]);
        outs[x]->arity = nprojs[x];
    }
    *done = true;
    c->select_passes++;
    return true;
fail:
    tmp_put(c, &status);
    for (int x = 0; x < nb; x++)
        rf_drel_free(c, &res[x]);
    return false;
}

size_t rf_cuda_select_passes(const rf_cuda_ctx *c) { return c->select_passes; }

void rf_cuda_sort_order_stats(const rf_cuda_ctx *c, size_t *in_order, size_t *by_first, size_t *merge_unions)
{
    *in_order = c->sorts_in_order;
    *by_first = c->sorts_by_first;
    *merge_unions = c->merge_unions;
}

/* ---- The reducing gather as one generated kernel ---- */

/* Whether every aggregate is one rf_reduce folds exactly whatever the
 * order: count, and total / avg / min / max of integer, date or decimal
 * words (the rule of rf_cuda_aggregate_hash). */
static bool reduce_applies(int naggs, const rf_aggfn *fns, const rf_code *args)
{
    for (int j = 0; j < naggs; j++) {
        if (fns[j] == RF_AGG_COUNT)
            continue;
        rf_type t = args[j].n > 0 ? (rf_type)args[j].ins[args[j].n - 1].type : RF_TYPE_INT64;
        bool sum = fns[j] == RF_AGG_TOTAL || fns[j] == RF_AGG_AVG;
        bool minmax = fns[j] == RF_AGG_MIN || fns[j] == RF_AGG_MAX;
        if (!(sum || minmax) || !rf_type_is_signed_word(t) || t == RF_TYPE_FLOAT64)
            return false;
    }
    return true;
}

bool rf_cuda_fused_reduce(rf_cuda_ctx *c, const rf_drel *l, const rf_drel *r, int join_keys, const rf_code *filter,
                          int nproj, const rf_code *proj, int nkeys, int naggs, const rf_aggfn *fns,
                          const rf_type *result_types, const rf_code *args, rf_drel *out, bool *done,
                          bool *many_groups, const char *what, rf_status *st)
{
    *done = false;
    *many_groups = false;
    if (naggs < 1 || nkeys + naggs > RF_CUDA_MAX_COLS || nkeys > nproj || !reduce_applies(naggs, fns, args))
        return true;
    if (r ? !check_join(l, r, join_keys, what, st) : !check_arity(l, what, st))
        return false;
    if (l->nrows == 0 || (r && r->nrows == 0))
        return true; /* nothing to fold: the caller's path is as quick */
    /* The values each row makes: the projections, then the aggregates'
     * arguments (over the row as well). */
    rf_code vals[2 * RF_CUDA_MAX_COLS];
    int arg_val[RF_CUDA_MAX_COLS], nvals = nproj;
    if (nproj > RF_CUDA_MAX_COLS)
        return true;
    memcpy(vals, proj, (size_t)nproj * sizeof *vals);
    for (int j = 0; j < naggs; j++) {
        arg_val[j] = -1;
        if (fns[j] != RF_AGG_COUNT) {
            arg_val[j] = nvals;
            vals[nvals++] = args[j];
        }
    }
    prepared pp;
    rf_cuda_trace(c, "reduce: before prepare");
    if (!prepare(c, filter, nvals, vals, l, l->arity, r, &pp, st))
        return false;
    rf_cuda_trace(c, "reduce: prepare");
    rf_reduce_layout lay;
    rf_reduce_layout_of(nkeys, naggs, fns, &lay);
    if (pp.host || !lay.shared_slots) { /* the host's, or too wide for the generated kernel */
        prepared_free(&pp);
        return true;
    }

    tmpbuf lo = {0}, off = {0}, keys = {0}, state = {0}, ctr = {0}, acc = {0}, flags = {0}, pos = {0}, dense = {0},
           counts = {0}, group_of = {0};
    rf_drel res, sorted;
    rf_drel_init(&res, nkeys + naggs);
    rf_drel_init(&sorted, nkeys + naggs);
    rf_cg_plan plan;
    memset(&plan, 0, sizeof plan);
    void *fn = NULL;
    uint64_t total = l->nrows;
    /* The rows first (a JOIN's candidate pairs): the filter's plan is
     * chosen from a sample of them. One kernel, so no split plans. */
    if (r && !join_candidates(c, l, r, join_keys, &lo, &off, &total, st))
        goto fail;
    if (total == 0) {
        *done = false;
        goto out;
    }
    rf_cols lc = rf_cols_of(l), rc = rf_cols_of(r ? r : l);
    const uint64_t *lop = lo.p, *offp = off.p;
    uint64_t nl = l->nrows;
    int planned = plan_filter(c, pp.filter, r != NULL, l->arity, lc, rc, lop, offp, nl, total, false, &plan, st);
    if (planned < 0)
        goto fail;
    {
        rf_cg_plan ident; /* a deferred plan's stand-in: shares plan's conjuncts */
        const rf_cg_plan *run_plan = planned ? &plan : NULL;
        char *src = NULL;
        if (planned && !plan_is_identity(&plan)) {
            src = rf_codegen_reduce_source(r != NULL, l->arity, pp.filter, nvals, pp.proj, nkeys, naggs, fns,
                                           arg_val, &plan);
            defer_plan(c, &plan, src);
            if (plan.deferred) {
                rf_cg_plan_identity_of(&plan, false, &ident);
                run_plan = &ident;
                free(src);
                src = NULL;
            }
        }
        const char *name = "rf_reduce";
        bool loaded = false;
        rf_cg_key key = {0};
        if (!src) {
            /* made ahead: found by what its source is made from */
            rf_cg_key_reduce(&key, r != NULL, l->arity, pp.filter, nvals, pp.proj, nkeys, naggs, fns, arg_val,
                             run_plan);
            loaded = rf_codegen_module_by_key(c, &key, 1, &name, &fn);
            if (!loaded) {
                src = rf_codegen_reduce_source(r != NULL, l->arity, pp.filter, nvals, pp.proj, nkeys, naggs, fns,
                                               arg_val, run_plan);
                rf_codegen_memo(c, &key, src);
            }
        }
        if (!loaded)
            loaded = src && rf_codegen_module(c, src, 1, &name, &fn);
        rf_cg_key_free(&key);
        free(src);
        if (!loaded)
            goto out; /* no generated code: the caller's path */
        if (planned)
            note_plan(c, what, &plan);
        rf_cuda_trace(c, "reduce: plan, source, module");
    }
    rf_denv env = {c->rank, c->nrank, c->err, c->tab};
    size_t max_blocks = rf_codegen_resident_blocks(c, fn, sm_count(c) * 8); /* one wave */
    /* RF_CUDA_HASH_SLOTS (tests): a smaller table, so that groups overflow
     * it and the caller's other path runs. */
    size_t max_slots = RF_HASH_AGG_MAX_SLOTS;
    const char *envs = getenv("RF_CUDA_HASH_SLOTS");
    if (envs && atol(envs) >= 2)
        max_slots = (size_t)atol(envs);
    /* The table for a sample's groups first, then for the estimate. */
    size_t cap = 2; /* without group keys: the one group */
    while (nkeys > 0 && cap < 2 * total && cap < 2 * RF_HASH_AGG_SAMPLE && cap * 2 <= max_slots)
        cap *= 2;
    size_t kw = (size_t)(nkeys > 0 ? nkeys : 1);
    uint64_t counter[2] = {0, 0};
    int sample = 1;
    if (total > RF_HASH_AGG_SAMPLE && nkeys > 0) {
        /* Many groups (over one in 16 sampled rows) make hashing no
         * cheaper than sorting: give up before the full pass. (Without
         * group keys there is one group: nothing to sample.) */
        uint64_t stride = total / RF_HASH_AGG_SAMPLE, n = RF_HASH_AGG_SAMPLE;
        if (!tmp_get(c, &keys, cap * 8 * kw, "reducing gather", st) ||
            !tmp_get(c, &state, cap * 4, "reducing gather", st) || !tmp_get(c, &ctr, 16, "reducing gather", st))
            goto fail;
        CK(cudaMemsetAsync(state.p, 0, cap * 4, c->stream), "reducing gather");
        CK(cudaMemsetAsync(ctr.p, 0, 16, c->stream), "reducing gather");
        void *params[] = {&lc, &rc, &lop, &offp, &nl, &n, &stride, &env, &keys.p, &state.p, &cap, &ctr.p, &acc.p,
                          &sample};
        if (!rf_codegen_launch_grid(c, fn, n, max_blocks, params, st) || !check_fault(c, st) ||
            !rf_cuda_read_back(c, ctr.p, counter, 16, st))
            goto fail;
        rf_cuda_trace(c, "reduce: sample");
        if (counter[1] || counter[0] > RF_HASH_AGG_SAMPLE / 16) {
            *many_groups = true;
            goto out; /* not done */
        }
        size_t want = 2;
        while (want < 32 * (counter[0] > 32 ? counter[0] : 32) && want * 2 <= max_slots)
            want *= 2;
        if (want > cap) {
            tmp_put(c, &keys), tmp_put(c, &state);
            cap = want;
        }
    }
    sample = 0;
    if ((!keys.p && !tmp_get(c, &keys, cap * 8 * kw, "reducing gather", st)) ||
        (!state.p && !tmp_get(c, &state, cap * 4, "reducing gather", st)) ||
        (!ctr.p && !tmp_get(c, &ctr, 16, "reducing gather", st)) ||
        !tmp_get(c, &acc, cap * 8 * (size_t)lay.words, "reducing gather", st))
        goto fail;
    CK(cudaMemsetAsync(state.p, 0, cap * 4, c->stream), "reducing gather");
    CK(cudaMemsetAsync(ctr.p, 0, 16, c->stream), "reducing gather");
    CK(cudaMemsetAsync(acc.p, 0, cap * 8 * (size_t)lay.words, c->stream), "reducing gather");
    for (int j = 0; j < naggs; j++)
        if (lay.kind[j] == RF_REDUCE_MIN || lay.kind[j] == RF_REDUCE_MAX)
            CK(rf_k_fill(c->stream, (uint64_t *)acc.p + (size_t)lay.off[j] * cap, cap,
                         lay.kind[j] == RF_REDUCE_MIN ? (uint64_t)INT64_MAX : (uint64_t)INT64_MIN),
               "reducing gather");
    rf_cuda_trace(c, "reduce: alloc+clear");
    {
        uint64_t one = 1;
        void *params[] = {&lc, &rc, &lop, &offp, &nl, &total, &one, &env, &keys.p, &state.p, &cap, &ctr.p, &acc.p,
                          &sample};
        if (!rf_codegen_launch_grid(c, fn, total, max_blocks, params, st))
            goto fail;
        rf_cuda_trace(c, "reduce: kernel");
        /* Without group keys the one group cannot overflow the table, and
         * the fault (sticky: the first one stays) is read with the group's
         * count at the end: one host wait for the whole tail instead of
         * four (~25 us each). */
        if (nkeys > 0 && (!check_fault(c, st) || !rf_cuda_read_back(c, ctr.p, counter, 16, st)))
            goto fail;
        rf_cuda_trace(c, "reduce: read back");
    }
    if (counter[1]) {
        *many_groups = true;
        goto out; /* the groups overflowed the table: not done */
    }
    tmp_put(c, &lo), tmp_put(c, &off);
    uint64_t g = 1;
    /* Where the finish reads each group's count and an aggregate's words:
     * without group keys the one group is global slot 0 (region-major, so
     * slot 0 of a region is its first words) and is read in place; with
     * keys the slots in use are gathered into groups 0..g-1 first. */
    const unsigned long long *count_src = acc.p;
    if (nkeys == 0) {
        if (!rf_drel_alloc(c, &res, 1, what, st))
            goto fail;
    } else {
        /* The slots in use, in slot order, become groups 0..g-1. */
        if (!tmp_get(c, &flags, cap, "reducing gather", st) ||
            !tmp_get(c, &pos, (cap + 1) * 8, "reducing gather", st))
            goto fail;
        CK(rf_k_slot_flags(c->stream, state.p, cap, flags.p), "reducing gather");
        if (!rf_cub_flag_scan(c, flags.p, pos.p, cap, st) || !read_word(c, (uint64_t *)pos.p + cap, &g, st))
            goto fail;
        rf_cuda_trace(c, "reduce: slots");
        if (g == 0)
            goto out; /* no row passed: the caller's path says what that gives */
        if (!rf_drel_alloc(c, &res, (size_t)g, what, st) || !tmp_get(c, &counts, g * 8, "reducing gather", st) ||
            !tmp_get(c, &dense, g * 16, "reducing gather", st) ||
            !tmp_get(c, &group_of, cap * 8, "reducing gather", st))
            goto fail;
        rf_wcols kc = rf_wcols_of(&res);
        CK(rf_k_slot_groups(c->stream, flags.p, pos.p, keys.p, cap, nkeys, group_of.p, kc), "reducing gather");
        CK(rf_k_gather_slots(c->stream, flags.p, pos.p, acc.p, cap, 1, counts.p), "reducing gather");
        count_src = counts.p;
    }
    rf_wcols oc = rf_wcols_of(&res);
    for (int j = 0; j < naggs; j++) {
        uint64_t *result = oc.c[nkeys + j];
        const unsigned long long *region = (const unsigned long long *)acc.p + (size_t)lay.off[j] * cap;
        switch (lay.kind[j]) {
        case RF_REDUCE_COUNT:
            CK(cudaMemcpyAsync(result, count_src, g * 8, cudaMemcpyDeviceToDevice, c->stream), "count");
            break;
        case RF_REDUCE_MIN:
        case RF_REDUCE_MAX:
            if (nkeys == 0)
                CK(cudaMemcpyAsync(result, region, 8, cudaMemcpyDeviceToDevice, c->stream), "min/max");
            else
                CK(rf_k_gather_slots(c->stream, flags.p, pos.p, region, cap, 1, (unsigned long long *)result),
                   "min/max");
            break;
        default: {
            const unsigned long long *sums = region;
            if (nkeys > 0) {
                CK(rf_k_gather_slots(c->stream, flags.p, pos.p, region, cap, 2, dense.p), "total");
                sums = dense.p;
            }
            rf_type t = (rf_type)args[j].ins[args[j].n - 1].type;
            if (fns[j] == RF_AGG_AVG) {
                CK(rf_k_hash_avg_finish(c->stream, sums, count_src, g,
                                        rf_type_is_decimal(t) ? rf_decimal_scale(t) : 0, result), "avg");
            } else {
                CK(rf_k_seg_total_finish(c->stream, sums, g, (int)result_types[j], c->err, result), "total");
                if (nkeys > 0 && !check_fault(c, st))
                    goto fail;
            }
        }
        }
    }
    if (nkeys == 0) { /* the kernel's and the finish's faults, and whether any row passed */
        uint64_t rows = 0;
        const uint64_t *cp = (const uint64_t *)count_src;
        if (!read_fault_and_words(c, 1, &cp, &rows, st))
            goto fail;
        if (rows == 0)
            goto out; /* no row passed: the caller's path says what that gives */
    }
    rf_cuda_trace(c, "reduce: groups");
    res.nrows = (size_t)g;
    if (g == 1) { /* one group (no keys, or one key value): sorted and distinct as it is */
        rf_drel_move(c, out, &res);
    } else {
        if (!rf_cuda_sort_unique(c, &res, &sorted, what, st))
            goto fail;
        rf_cuda_trace(c, "reduce: sort");
        rf_drel_move(c, out, &sorted);
    }
    out->arity = nkeys + naggs;
    *done = true;
out:
    tmp_put(c, &lo), tmp_put(c, &off), tmp_put(c, &keys), tmp_put(c, &state), tmp_put(c, &ctr), tmp_put(c, &acc);
    tmp_put(c, &flags), tmp_put(c, &pos), tmp_put(c, &dense), tmp_put(c, &counts), tmp_put(c, &group_of);
    rf_drel_free(c, &res);
    rf_drel_free(c, &sorted);
    prepared_free(&pp);
    rf_cg_plan_free(&plan);
    return true;
fail:
    prepared_free(&pp);
    rf_cg_plan_free(&plan);
    tmp_put(c, &lo), tmp_put(c, &off), tmp_put(c, &keys), tmp_put(c, &state), tmp_put(c, &ctr), tmp_put(c, &acc);
    tmp_put(c, &flags), tmp_put(c, &pos), tmp_put(c, &dense), tmp_put(c, &counts), tmp_put(c, &group_of);
    rf_drel_free(c, &res);
    rf_drel_free(c, &sorted);
    return false;
}

bool rf_cuda_aggregate(rf_cuda_ctx *c, const rf_drel *in, int nkeys, rf_aggfn fn,
                       rf_type result_type, const rf_code *arg, rf_drel *out,
                       const char *what, rf_status *st)
{
    rf_code none = {0, NULL};
    return rf_cuda_aggregate_multi(c, in, nkeys, 1, &fn, &result_type, arg ? arg : &none, out, what, st);
}

/* ---- Floors for the benchmarks ---- */

bool rf_cuda_measure_floors(rf_cuda_ctx *c, size_t bytes, size_t n, double *copy_gbs,
                            double *sort_keys_per_s, rf_status *st)
{
    bool ok = false;
    void *a = NULL, *b = NULL, *k0 = NULL, *k1 = NULL, *k2 = NULL;
    uint64_t *h = NULL;
    float ms = 0;
    const int reps = 10;
    bytes &= ~(size_t)255;
    if (!(a = rf_cuda_alloc(c, bytes, "floors", st)) || !(b = rf_cuda_alloc(c, bytes, "floors", st)))
        goto done;
    CK(cudaMemsetAsync(a, 0x5a, bytes, c->stream), "floors");
    CK(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, c->stream), "floors"); /* warm-up */
    CK(cudaEventRecord(c->ev_start, c->stream), "floors");
    for (int i = 0; i < reps; i++)
        CK(cudaMemcpyAsync(i & 1 ? a : b, i & 1 ? b : a, bytes, cudaMemcpyDeviceToDevice, c->stream), "floors");
    CK(cudaEventRecord(c->ev_stop, c->stream), "floors");
    CK(cudaEventSynchronize(c->ev_stop), "floors");
    CK(cudaEventElapsedTime(&ms, c->ev_start, c->ev_stop), "floors");
    *copy_gbs = 2.0 * (double)bytes * reps / (ms / 1000.0) / 1e9;
    rf_cuda_free(c, a, bytes);
    rf_cuda_free(c, b, bytes);
    a = b = NULL;

    /* Random 64-bit keys (splitmix64), uploaded once, re-copied before
     * each timed sort. */
    h = rf_malloc(rf_mul_size(n, 8));
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (size_t i = 0; i < n; i++) {
        uint64_t z = (x += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        h[i] = z ^ (z >> 31);
    }
    if (!(k0 = rf_cuda_alloc(c, n * 8, "floors", st)) || !(k1 = rf_cuda_alloc(c, n * 8, "floors", st)) ||
        !(k2 = rf_cuda_alloc(c, n * 8, "floors", st)))
        goto done;
    CK(cudaMemcpyAsync(k0, h, n * 8, cudaMemcpyHostToDevice, c->stream), "floors");   /* (after what c->stream freed) */
    double best = 0;
    for (int i = 0; i < 4; i++) {
        CK(cudaMemcpyAsync(k1, k0, n * 8, cudaMemcpyDeviceToDevice, c->stream), "floors");
        CK(cudaEventRecord(c->ev_start, c->stream), "floors");
        if (!rf_cub_sort_keys(c, k1, k2, n, 64, st))
            goto done;
        CK(cudaEventRecord(c->ev_stop, c->stream), "floors");
        CK(cudaEventSynchronize(c->ev_stop), "floors");
        CK(cudaEventElapsedTime(&ms, c->ev_start, c->ev_stop), "floors");
        double rate = (double)n / (ms / 1000.0);
        if (i > 0 && rate > best) /* the first run warms up */
            best = rate;
    }
    *sort_keys_per_s = best;
    ok = true;
done:
fail:
    free(h);
    rf_cuda_free(c, a, bytes);
    rf_cuda_free(c, b, bytes);
    rf_cuda_free(c, k0, n * 8);
    rf_cuda_free(c, k1, n * 8);
    rf_cuda_free(c, k2, n * 8);
    cudaStreamSynchronize(c->stream);
    return ok;
}

bool rf_cuda_measure_pcie(rf_cuda_ctx *c, size_t bytes, double *d2h_gbs, double *h2d_gbs, rf_status *st)
{
    bytes = (bytes + RF_STAGE_CHUNK - 1) / RF_STAGE_CHUNK * RF_STAGE_CHUNK;
    char *dev = rf_cuda_alloc(c, bytes, "PCIe floor", st);
    bool ok = dev != NULL;
    for (int dir = 0; ok && dir < 2; dir++) {
        double best = 0;
        for (int rep = 0; ok && rep < 3; rep++) {
            ok = rf_cuda_sync(c, st);
            double t0 = rf_now();
            for (size_t off = 0; ok && off < bytes; off += RF_STAGE_CHUNK) {
                char *buf = c->stage_region + (off / RF_STAGE_CHUNK % (size_t)c->nstage) * RF_STAGE_CHUNK;
                ok = rf_cuda_check(c, dir == 0 ? cudaMemcpyAsync(buf, dev + off, RF_STAGE_CHUNK, cudaMemcpyDeviceToHost,
                                                                 c->stream)
                                               : cudaMemcpyAsync(dev + off, buf, RF_STAGE_CHUNK, cudaMemcpyHostToDevice,
                                                                 c->stream),
                                   "PCIe floor", st);
            }
            ok = ok && rf_cuda_sync(c, st);
            double gbs = (double)bytes / (rf_now() - t0) / 1e9;
            if (rep > 0 && gbs > best) /* the first run warms up */
                best = gbs;
        }
        *(dir == 0 ? d2h_gbs : h2d_gbs) = best;
    }
    rf_cuda_free(c, dev, bytes);
    return ok;
}

/* The best of three timings of moving bytes, as GB/s. */
static double best_rate(size_t bytes, double seconds[3])
{
    double best = 0;
    for (int i = 0; i < 3; i++)
        if (seconds[i] > 0 && (double)bytes / seconds[i] / 1e9 > best)
            best = (double)bytes / seconds[i] / 1e9;
    return best;
}

/* The library's upload of t into d and download back into t, timed. */
static bool library_moves(rf_cuda_ctx *c, rf_drel *d, rf_table *t, size_t bytes, double *up, double *down,
                          rf_status *st)
{
    double sec[3];
    bool ok = true;
    for (int dir = 0; ok && dir < 2; dir++) {
        for (int rep = 0; ok && rep < 3; rep++) {
            double t0 = rf_now();
            ok = dir == 0 ? rf_drel_upload(c, d, t, "move rates", st) : rf_drel_download_at(c, d, t, 0, st);
            sec[rep] = rf_now() - t0;
        }
        *(dir == 0 ? up : down) = best_rate(bytes, sec);
    }
    return ok;
}

bool rf_cuda_measure_moves(rf_cuda_ctx *c, size_t bytes, rf_move_rates *m, rf_status *st)
{
    memset(m, 0, sizeof *m);
    size_t rows = bytes / 16 ? bytes / 16 : 1;
    bytes = rows * 16;
    rf_table t;
    rf_table_init(&t, 2);
    rf_table_resize(&t, rows);
    for (int k = 0; k < 2; k++)
        for (size_t i = 0; i < rows; i++)
            t.cols[k][i] = i * 2 + (size_t)k;
    rf_drel d;
    rf_drel_init(&d, 2);
    double sec[3];
    bool ok = library_moves(c, &d, &t, bytes, &m->staged_up, &m->staged_down, st);   /* staged: pageable */
    for (int rep = 0; ok && rep < 3; rep++) {
        rf_table f;
        rf_table_init(&f, 2);
        rf_table_reserve(&f, rows);
        double t0 = rf_now();
        ok = rf_drel_download_at(c, &d, &f, 0, st);
        sec[rep] = rf_now() - t0;
        rf_table_free(&f);
    }
    m->staged_down_fresh = best_rate(bytes, sec);
    for (int rep = 0; ok && rep < 3; rep++) {   /* pinning what is faulted */
        double t0 = rf_now();
        for (int k = 0; ok && k < 2; k++)
            ok = rf_cuda_check(c, cudaHostRegister(t.cols[k], rows * 8, cudaHostRegisterDefault), "host register", st);
        sec[rep] = rf_now() - t0;
        if (ok && rep < 2)
            for (int k = 0; k < 2; k++)
                cudaHostUnregister(t.cols[k]);
    }
    m->host_register = best_rate(bytes, sec);
    for (int dir = 0; ok && dir < 2; dir++) {   /* pinned (t's columns, registered) */
        for (int rep = 0; ok && rep < 3; rep++) {
            ok = rf_cuda_sync(c, st);
            double t0 = rf_now();
            for (int k = 0; ok && k < 2; k++)
                ok = rf_cuda_check(c, dir == 0 ? cudaMemcpyAsync(d.data + (size_t)k * d.cap, t.cols[k], rows * 8,
                                                                 cudaMemcpyHostToDevice, c->stream)
                                               : cudaMemcpyAsync(t.cols[k], d.data + (size_t)k * d.cap, rows * 8,
                                                                 cudaMemcpyDeviceToHost, c->stream),
                                   "pinned move", st);
            ok = ok && rf_cuda_sync(c, st);
            sec[rep] = rf_now() - t0;
        }
        *(dir == 0 ? &m->pinned_up : &m->pinned_down) = best_rate(bytes, sec);
    }
    for (int k = 0; k < 2; k++)
        cudaHostUnregister(t.cols[k]);
    (void)cudaGetLastError();
    for (int rep = 0; ok && rep < 3; rep++) {
        void *p = NULL;
        double t0 = rf_now();
        ok = rf_cuda_check(c, cudaHostAlloc(&p, bytes, cudaHostAllocDefault), "host alloc", st);
        if (ok)
            cudaFreeHost(p);
        sec[rep] = rf_now() - t0;
    }
    m->host_alloc = best_rate(bytes, sec);
    rf_table a;   /* in the arena */
    rf_table_init(&a, 2);
    rf_table_reserve_pooled(&a, rows);
    rf_table_resize(&a, rows);
    if (ok && rf_cuda_host_pinned(a.cols[0], rows * 8)) {
        for (int k = 0; k < 2; k++)
            memcpy(a.cols[k], t.cols[k], rows * 8);
        ok = library_moves(c, &d, &a, bytes, &m->arena_up, &m->arena_down, st);
    }
    rf_table_free(&a);
    rf_drel_free(c, &d);
    rf_table_free(&t);
    return ok;
}

bool rf_drel_add_to_columns(rf_cuda_ctx *c, rf_drel *r, const uint64_t *add, rf_status *st)
{
    for (int k = 0; k < r->arity && r->nrows > 0; k++)
        if (add[k] && !rf_cuda_check(c, rf_k_add_const(c->stream, r->data + (size_t)k * r->cap, r->nrows, add[k]),
                                     "row positions shifted", st))
            return false;
    return true;
}

bool rf_drel_column_sign_uniform(rf_cuda_ctx *c, const rf_drel *r, int col)
{
    if (col < 0 || col >= r->arity || r->nrows == 0)
        return true;
    rf_status st;
    rf_status_init(&st);
    uint64_t *m = rf_cuda_alloc(c, 8, "column maximum", &st);
    uint64_t mx = UINT64_MAX;
    bool ok = m && rf_cub_max(c, r->data + (size_t)col * r->cap, r->nrows, m, &st) && read_word(c, m, &mx, &st);
    if (m)
        rf_cuda_free(c, m, 8);
    /* All below 2^63 (non-negative ids): uniform. Otherwise unknown. */
    return ok && mx < ((uint64_t)1 << 63);
}
