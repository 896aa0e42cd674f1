/* Worker threads for the CPU primitives. Each parallel operator creates its
 * threads, hands out pieces through an atomic counter and joins them: no
 * pool to keep alive, and an operator big enough to be split amortises the
 * start-up (tens of microseconds) easily. */
#include "prims_internal.h"

#include <pthread.h>
#include <stdatomic.h>
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

static void *worker(void *arg)
{
    par_job *j = arg;
    int i;
    while ((i = atomic_fetch_add(&j->next, 1)) < j->n)
        j->fn(j->ctx, i);
    return NULL;
}

void rf_par_for(int n, rf_task_fn fn, void *ctx)
{
    int t = g_threads < n ? g_threads : n;
    if (t <= 1) {
        for (int i = 0; i < n; i++)
            fn(ctx, i);
        return;
    }
    par_job j = {.fn = fn, .ctx = ctx, .n = n};
    atomic_init(&j.next, 0);
    pthread_t tid[MAX_THREADS];
    int started = 0;
    for (int k = 1; k < t; k++)
        if (pthread_create(&tid[started], NULL, worker, &j) == 0)
            started++; /* a failed create just means fewer helpers */
    worker(&j);
    for (int k = 0; k < started; k++)
        pthread_join(tid[k], NULL);
}
