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
#include <unistd.h>

#define MAX_THREADS 256

static int g_threads = 1;

void rf_prims_set_threads(int n)
{
    if (n <= 0) {
        long c = sysconf(_SC_NPROCESSORS_ONLN);
        n = c > 0 ? (int)c : 1;
    }
    g_threads = n > MAX_THREADS ? MAX_THREADS : n;
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

static void run_pieces(par_job *j)
{
    int i;
    while ((i = atomic_fetch_add(&j->next, 1)) < j->n)
        j->fn(j->ctx, i);
}

/* The pool. Workers sleep on `wake` until `gen` changes; worker w helps
 * with the posted job when w < helpers; `outstanding` counts the workers
 * that have not yet finished with the current generation. */
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_wake = PTHREAD_COND_INITIALIZER, g_done = PTHREAD_COND_INITIALIZER;
static atomic_flag g_busy = ATOMIC_FLAG_INIT;
static int g_nworkers;
static unsigned long g_gen;
static par_job *g_job;
static int g_helpers, g_outstanding;
static unsigned long g_start_gen[MAX_THREADS]; /* g_gen when worker w started */

static void *pool_worker(void *arg)
{
    int id = (int)(intptr_t)arg;
    pthread_mutex_lock(&g_mu);
    unsigned long seen = g_start_gen[id]; /* the job it was started for is newer */
    for (;;) {
        while (g_gen == seen)
            pthread_cond_wait(&g_wake, &g_mu);
        seen = g_gen;
        par_job *j = g_job;
        bool help = id < g_helpers;
        pthread_mutex_unlock(&g_mu);
        if (help)
            run_pieces(j);
        pthread_mutex_lock(&g_mu);
        if (--g_outstanding == 0)
            pthread_cond_signal(&g_done);
    }
    return NULL;
}

/* Starts workers until there are `want` (under g_mu). */
static void grow_pool(int want)
{
    while (g_nworkers < want) {
        pthread_t tid;
        pthread_attr_t at;
        pthread_attr_init(&at);
        pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
        g_start_gen[g_nworkers] = g_gen;
        int rc = pthread_create(&tid, &at, pool_worker, (void *)(intptr_t)g_nworkers);
        pthread_attr_destroy(&at);
        if (rc != 0)
            break; /* fewer helpers */
        g_nworkers++;
    }
}

void rf_par_for(int n, rf_task_fn fn, void *ctx)
{
    int t = g_threads < n ? g_threads : n;
    par_job j = {.fn = fn, .ctx = ctx, .n = n};
    atomic_init(&j.next, 0);
    if (t <= 1 || atomic_flag_test_and_set(&g_busy)) {
        run_pieces(&j);
        return;
    }
    pthread_mutex_lock(&g_mu);
    grow_pool(t - 1);
    g_job = &j;
    g_helpers = t - 1;
    g_outstanding = g_nworkers;
    g_gen++;
    pthread_cond_broadcast(&g_wake);
    pthread_mutex_unlock(&g_mu);
    run_pieces(&j);
    pthread_mutex_lock(&g_mu);
    while (g_outstanding > 0)
        pthread_cond_wait(&g_done, &g_mu);
    g_job = NULL;
    pthread_mutex_unlock(&g_mu);
    atomic_flag_clear(&g_busy);
}
