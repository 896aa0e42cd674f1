/* Pinned host memory for tables that cross the bus whole or in parts (the
 * out-of-core kernels' parts and outputs, spilled variables): one arena a
 * process, installed as the tables' host pool (common/rf_table.h).
 *
 * Why: a copy between the device and pageable memory goes through the
 * staging buffers, a host memcpy a chunk (~7 GB/s a thread on an H200's
 * host, 8.9-16.5 GB/s with eight threads in an out-of-core run, and slower
 * into fresh pages, which fault), where a copy from pinned memory runs at
 * the bus's 53-55 GB/s with no host thread at all. Pinning costs more than
 * a copy (cudaHostRegister 12-25 GB/s, cudaHostAlloc ~2 GB/s: `rf_gpu_floors
 * --moves`), so memory is pinned once, in large regions, and reused: an
 * out-of-core loop frees and makes tables of similar sizes every iteration.
 *
 * Regions are mapped, advised for huge pages, faulted in by threads and
 * registered (portable: every device's context may copy them). Columns are
 * extents of a region, first fit, merged with free neighbours when freed.
 * Regions are never given back (the process's end does it). The arena
 * pins at most RF_CUDA_PINNED_MAX bytes (default: half the host's memory,
 * shared among the processes an MPI launch put on the host; 0 turns it
 * off); beyond that, and for columns under 1 MB (which cross in one plain
 * copy anyway), tables live in the heap as before. (TC on p2p-Gnutella31
 * under --device-memory 2G on an H200, 128 GB host: 53.3 s with a quarter,
 * 32 GB, pinned, 43.4 s with 64 GB.) */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS, madvise */
#include "cuda_internal.h"
#include "../rf_prims.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define ARENA_REGIONS 64
#define ARENA_EXTENTS 4096
#define ARENA_ALIGN ((size_t)2 << 20)         /* a huge page */
#define ARENA_MIN_COLUMN ((size_t)1 << 20)    /* smaller columns stay in the heap (RF_CUDA_PINNED_MIN: tests) */
#define ARENA_MIN_REGION ((size_t)256 << 20)

typedef struct extent {
    char *p;
    size_t n;
    int region;
    bool used;
} extent;

static struct {
    pthread_mutex_t mu;
    atomic_bool ready;            /* installed as the tables' pool */
    size_t limit, pinned;
    size_t min_column;
    bool no_register;             /* rf_cuda_host_arena_test_start: the extents' logic without a device */
    atomic_int nregions;          /* regions are only added: read without the lock */
    struct { char *p; size_t n; } regions[ARENA_REGIONS];
    int nextents;                 /* sorted by address */
    extent extents[ARENA_EXTENTS];
} g = {.mu = PTHREAD_MUTEX_INITIALIZER};

static void arena_limit(void)
{
    const char *m = getenv("RF_CUDA_PINNED_MIN");   /* (tests: small tables pinned too, their copies ahead) */
    g.min_column = m && *m ? (size_t)strtoull(m, NULL, 10) : ARENA_MIN_COLUMN;
    const char *e = getenv("RF_CUDA_PINNED_MAX");
    if (e && *e) {
        char *end;
        unsigned long long v = strtoull(e, &end, 10);
        size_t unit = *end == 'G' || *end == 'g' ? (size_t)1 << 30 : *end == 'M' || *end == 'm' ? (size_t)1 << 20 : 1;
        g.limit = (size_t)v * unit;
        return;
    }
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    const char *local = getenv("OMPI_COMM_WORLD_LOCAL_SIZE");   /* (processes sharing the host) */
    long ranks_here = local ? strtol(local, NULL, 10) : 1;
    g.limit = pages > 0 && page > 0 ? (size_t)pages * (size_t)page / 2 / (size_t)(ranks_here > 1 ? ranks_here : 1) : 0;
}

typedef struct fault_job {
    char *p;
    size_t n;
} fault_job;

#define FAULT_CHUNK ((size_t)64 << 20)

static void fault_piece(void *ctx, int i)
{
    fault_job *j = ctx;
    size_t off = (size_t)i * FAULT_CHUNK, n = j->n - off < FAULT_CHUNK ? j->n - off : FAULT_CHUNK;
    memset(j->p + off, 0, n);
}

/* A new region of at least `bytes`; false where the limit or the host
 * says no. Called with g.mu held. */
static bool add_region(size_t bytes)
{
    if (g.nregions == ARENA_REGIONS || g.nextents + 1 > ARENA_EXTENTS)
        return false;
    /* A quarter of what is pinned, at least: few regions, and little
     * pinned beyond what is asked for (pinning costs more than a copy). */
    size_t want = bytes > g.pinned / 4 ? bytes : g.pinned / 4;
    if (want < ARENA_MIN_REGION)
        want = ARENA_MIN_REGION;
    if (want > g.limit - g.pinned)
        want = g.limit - g.pinned;
    want = want / ARENA_ALIGN * ARENA_ALIGN;
    if (want < bytes)
        return false;
    void *p = mmap(NULL, want, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
        return false;
#ifdef MADV_HUGEPAGE
    (void)madvise(p, want, MADV_HUGEPAGE);
#endif
    fault_job j = {.p = p, .n = want};
    rf_par_for((int)((want + FAULT_CHUNK - 1) / FAULT_CHUNK), fault_piece, &j);
    if (!g.no_register && cudaHostRegister(p, want, cudaHostRegisterPortable) != cudaSuccess) {
        (void)cudaGetLastError();
        munmap(p, want);
        g.limit = g.pinned;   /* (the host will not pin more: stop asking) */
        return false;
    }
    int r = atomic_load(&g.nregions);
    g.regions[r].p = p;
    g.regions[r].n = want;
    atomic_store_explicit(&g.nregions, r + 1, memory_order_release);
    g.pinned += want;
    /* Its one free extent, in address order. */
    int at = 0;
    while (at < g.nextents && g.extents[at].p < (char *)p)
        at++;
    memmove(&g.extents[at + 1], &g.extents[at], (size_t)(g.nextents - at) * sizeof *g.extents);
    g.extents[at] = (extent){.p = p, .n = want, .region = r, .used = false};
    g.nextents++;
    return true;
}

static void *take_fit(size_t n)
{
    for (int i = 0; i < g.nextents; i++) {
        extent *e = &g.extents[i];
        if (e->used || e->n < n)
            continue;
        if (e->n > n) {   /* split: the rest stays free after it */
            if (g.nextents == ARENA_EXTENTS)
                return NULL;
            memmove(&g.extents[i + 2], &g.extents[i + 1], (size_t)(g.nextents - i - 1) * sizeof *g.extents);
            g.extents[i + 1] = (extent){.p = e->p + n, .n = e->n - n, .region = e->region, .used = false};
            g.nextents++;
            e->n = n;
        }
        e->used = true;
        return e->p;
    }
    return NULL;
}

static void *arena_alloc(size_t bytes)
{
    if (bytes < g.min_column || bytes == 0)
        return NULL;
    size_t n = (bytes + ARENA_ALIGN - 1) / ARENA_ALIGN * ARENA_ALIGN;
    pthread_mutex_lock(&g.mu);
    void *p = take_fit(n);
    if (!p && add_region(n))
        p = take_fit(n);
    pthread_mutex_unlock(&g.mu);
    return p;
}

/* The region holding p, or -1. */
static int region_of(const void *p, size_t n)
{
    const char *c = p;
    int n_regions = atomic_load_explicit(&g.nregions, memory_order_acquire);
    for (int r = 0; r < n_regions; r++)
        if (c >= g.regions[r].p && c < g.regions[r].p + g.regions[r].n)
            return c + n <= g.regions[r].p + g.regions[r].n ? r : -1;
    return -1;
}

static bool arena_owns(const void *p)
{
    return region_of(p, 1) >= 0;
}

static void arena_free(void *p)
{
    pthread_mutex_lock(&g.mu);
    int i = 0;
    while (i < g.nextents && g.extents[i].p != (char *)p)
        i++;
    if (i < g.nextents && g.extents[i].used) {
        g.extents[i].used = false;
        if (i + 1 < g.nextents && !g.extents[i + 1].used && g.extents[i + 1].region == g.extents[i].region) {
            g.extents[i].n += g.extents[i + 1].n;
            memmove(&g.extents[i + 1], &g.extents[i + 2], (size_t)(g.nextents - i - 2) * sizeof *g.extents);
            g.nextents--;
        }
        if (i > 0 && !g.extents[i - 1].used && g.extents[i - 1].region == g.extents[i].region) {
            g.extents[i - 1].n += g.extents[i].n;
            memmove(&g.extents[i], &g.extents[i + 1], (size_t)(g.nextents - i - 1) * sizeof *g.extents);
            g.nextents--;
        }
    }
    pthread_mutex_unlock(&g.mu);
}

/* p's extent cut to bytes (rounded up to the alignment); the tail freed,
 * merged with a free neighbour after it. */
static void arena_shrink(void *p, size_t bytes)
{
    size_t n = (bytes + ARENA_ALIGN - 1) / ARENA_ALIGN * ARENA_ALIGN;
    pthread_mutex_lock(&g.mu);
    int i = 0;
    while (i < g.nextents && g.extents[i].p != (char *)p)
        i++;
    extent *e = i < g.nextents ? &g.extents[i] : NULL;
    if (e && e->used && n < e->n) {
        size_t tail = e->n - n;
        if (i + 1 < g.nextents && !g.extents[i + 1].used && g.extents[i + 1].region == e->region) {
            g.extents[i + 1].p -= tail;
            g.extents[i + 1].n += tail;
            e->n = n;
        } else if (g.nextents < ARENA_EXTENTS) {
            memmove(&g.extents[i + 2], &g.extents[i + 1], (size_t)(g.nextents - i - 1) * sizeof *g.extents);
            g.extents[i + 1] = (extent){.p = e->p + n, .n = tail, .region = e->region, .used = false};
            g.nextents++;
            e->n = n;
        }
    }
    pthread_mutex_unlock(&g.mu);
}

static const rf_host_pool arena_pool = {
    .alloc = arena_alloc, .owns = arena_owns, .free = arena_free, .shrink = arena_shrink};

void rf_cuda_host_arena_start(void)
{
    pthread_mutex_lock(&g.mu);
    if (!atomic_load(&g.ready)) {
        arena_limit();
        if (g.limit >= ARENA_MIN_REGION && rf_host_pool_set(&arena_pool))   /* (not under a test's pool) */
            atomic_store_explicit(&g.ready, true, memory_order_release);
    }
    pthread_mutex_unlock(&g.mu);
}

void rf_cuda_host_arena_test_start(size_t limit, size_t min_column)
{
    pthread_mutex_lock(&g.mu);
    if (!atomic_load(&g.ready)) {
        g.limit = limit;
        g.min_column = min_column;
        g.no_register = true;
        if (rf_host_pool_set(&arena_pool))
            atomic_store_explicit(&g.ready, true, memory_order_release);
    }
    pthread_mutex_unlock(&g.mu);
}

bool rf_cuda_host_pinned(const void *p, size_t bytes)
{
    return bytes && region_of(p, bytes) >= 0;
}

size_t rf_cuda_host_pinned_bytes(void)
{
    pthread_mutex_lock(&g.mu);
    size_t n = g.pinned;
    pthread_mutex_unlock(&g.mu);
    return n;
}
