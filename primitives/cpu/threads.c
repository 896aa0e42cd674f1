/* Worker threads for the CPU primitives: a pool started on first use and
 * kept for the life of the process. A semi-naive loop with hundreds of
 * iterations runs thousands of small parallel operators; creating and
 * joining threads for each (tens of microseconds apiece) was a fixed cost
 * that showed up next to the real work. rf_par_for posts the job, the
 * helpers it needs take pieces through an atomic counter alongside the
 * caller, and the caller waits until every helper has let go of the job.
 *
 * One job at a time: a call made while the pool is busy (from another
 * thread, or nested inside a piece) runs its pieces serially in the
 * caller, which is always correct. */
#include "prims_internal.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

#define MAX_THREADS 256

/* Atomic: a GPU backend made on a thread of its own (backend_hybrid.c,
 * arriving devices) asks for its default while kernels run. */
static atomic_int g_threads = 1;
static atomic_bool g_threads_set;   /* rf_prims_set_threads was called */
/* > 0 while this thread runs pieces of a job (workers: always). */
static _Thread_local int tl_par_depth;

bool rf_par_running_here(void) { return tl_par_depth > 0; }

void rf_prims_set_threads(int n)
{
    if (n <= 0) {
        long c = sysconf(_SC_NPROCESSORS_ONLN);
        n = c > 0 ? (int)c : 1;
    }
    atomic_store(&g_threads, n > MAX_THREADS ? MAX_THREADS : n);
    atomic_store(&g_threads_set, true);
}

void rf_prims_default_threads(void)
{
    if (!atomic_load(&g_threads_set))
        rf_prims_set_threads(0);
}

int rf_prims_threads(void) { return g_threads; }

int rf_pieces_for(size_t rows, int per_thread)
{
    if (g_threads <= 1 || rows < RF_PAR_MIN_ROWS)
        return 1;
    size_t n = (size_t)g_threads * (size_t)per_thread;
    size_t most = rows / (RF_PAR_MIN_ROWS / 4); /* pieces of >= 16K rows */
    if (n > most)
        n = most;
    return n < 1 ? 1 : (int)n;
}

typedef struct par_job {
    rf_task_fn fn;
    void *ctx;
    int n;
    atomic_int next;
} par_job;

/* Activity recording for `redfox run --profile` (rf_par_activity_*):
 * slot 0 is the thread that started recording (the interpreter), slot
 * w + 1 pool worker w; any other thread (-1) is not recorded. Each slot is
 * written only by its own thread and read by the recording thread after
 * rf_par_for returned (the pool's mutex orders the two). A call nested
 * inside a piece is timed as part of that piece. */
_Static_assert(RF_PAR_ACTIVITY_SLOTS == MAX_THREADS + 1, "a slot per pool worker and one for the caller");
static atomic_bool g_recording;
static rf_par_activity g_activity[MAX_THREADS + 1];
static _Thread_local int tl_slot = -1;
static _Thread_local int tl_depth;

static void run_pieces(par_job *j)
{
    int i;
    bool record = atomic_load_explicit(&g_recording, memory_order_relaxed) && tl_slot >= 0 && tl_depth == 0;
    if (!record) {
        tl_depth++;
        while ((i = atomic_fetch_add(&j->next, 1)) < j->n)
            j->fn(j->ctx, i);
        tl_depth--;
        return;
    }
    rf_par_activity *a = &g_activity[tl_slot];
    tl_depth++;
    while ((i = atomic_fetch_add(&j->next, 1)) < j->n) {
        double t0 = rf_now();
        j->fn(j->ctx, i);
        double t1 = rf_now();
        if (a->pieces++ == 0)
            a->first = t0;
        a->last = t1;
        a->busy += t1 - t0;
    }
    tl_depth--;
}

void rf_par_activity_start(void)
{
    memset(g_activity, 0, sizeof g_activity);
    tl_slot = 0;
    atomic_store(&g_recording, true);
}

void rf_par_activity_stop(void)
{
    atomic_store(&g_recording, false);
    tl_slot = -1;   /* another thread may record next time */
}

int rf_par_activity_take(rf_par_activity *slots, int cap)
{
    int n = cap < MAX_THREADS + 1 ? cap : MAX_THREADS + 1;
    memcpy(slots, g_activity, (size_t)n * sizeof *slots);
    memset(g_activity, 0, sizeof g_activity);
    return n;
}

/* The pool. Workers sleep on `wake` until a job is posted that they are
 * asked to help with (worker w helps when w < helpers). A worker that takes
 * the job counts itself in `active` while it runs pieces; the poster, once
 * its own run_pieces found no piece left, waits only until `active` is 0,
 * then withdraws the job under the mutex, so a worker that wakes late finds
 * no job and sleeps again. A descheduled worker that never took the job
 * therefore stalls nobody (every worker used to acknowledge every job). */
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_wake = PTHREAD_COND_INITIALIZER, g_done = PTHREAD_COND_INITIALIZER;
static atomic_flag g_busy = ATOMIC_FLAG_INIT;
static int g_nworkers;
static unsigned long g_gen;
static par_job *g_job;
static int g_helpers, g_active;

static void *pool_worker(void *arg)
{
    int id = (int)(intptr_t)arg;
    tl_slot = id + 1;
    tl_par_depth = 1;
    unsigned long seen = 0;
    pthread_mutex_lock(&g_mu);
    for (;;) {
        while (!g_job || g_gen == seen || id >= g_helpers)
            pthread_cond_wait(&g_wake, &g_mu);
        seen = g_gen;
        par_job *j = g_job;
        g_active++;
        pthread_mutex_unlock(&g_mu);
        run_pieces(j);
        pthread_mutex_lock(&g_mu);
        if (--g_active == 0)
            pthread_cond_signal(&g_done);
    }
    return NULL;
}

/* Starts workers until there are `want` (under g_mu). */
static void grow_pool(int want)
{
    if (want > MAX_THREADS - 1)
        want = MAX_THREADS - 1;
    while (g_nworkers < want) {
        pthread_t tid;
        pthread_attr_t at;
        pthread_attr_init(&at);
        pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
        int rc = pthread_create(&tid, &at, pool_worker, (void *)(intptr_t)g_nworkers);
        pthread_attr_destroy(&at);
        if (rc != 0)
            break; /* fewer helpers */
        g_nworkers++;
    }
}

void rf_par_prestart(int threads)
{
    if (threads <= 0) {
        long c = sysconf(_SC_NPROCESSORS_ONLN);
        threads = c > 0 ? (int)c : 1;
    }
    pthread_mutex_lock(&g_mu);
    grow_pool(threads - 1);
    pthread_mutex_unlock(&g_mu);
}

void rf_par_for(int n, rf_task_fn fn, void *ctx)
{
    int t = g_threads < n ? g_threads : n;
    par_job j = {.fn = fn, .ctx = ctx, .n = n};
    atomic_init(&j.next, 0);
    tl_par_depth++;
    if (t <= 1 || atomic_flag_test_and_set(&g_busy)) {
        run_pieces(&j);
        tl_par_depth--;
        return;
    }
    pthread_mutex_lock(&g_mu);
    grow_pool(t - 1);
    g_job = &j;
    g_helpers = t - 1;
    g_gen++;
    pthread_cond_broadcast(&g_wake);
    pthread_mutex_unlock(&g_mu);
    run_pieces(&j);
    /* Every piece is taken; those still running belong to active workers. */
    pthread_mutex_lock(&g_mu);
    while (g_active > 0)
        pthread_cond_wait(&g_done, &g_mu);
    g_job = NULL;
    pthread_mutex_unlock(&g_mu);
    atomic_flag_clear(&g_busy);
    tl_par_depth--;
}
