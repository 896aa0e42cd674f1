/* Large relations are hundreds of MB per column and are allocated afresh by
 * every kernel; with 4 KB pages the first touch of each page is a fault
 * (and the kernel's zeroing), which dominated the semi-naive loop's union.
 * Asking for transparent huge pages on the big arrays cuts the faults by
 * 512x. Only a hint: where unsupported it does nothing. */
#define _DEFAULT_SOURCE
#include "prims_internal.h"

#include <string.h>
#include <sys/mman.h>

#define HUGE_MIN (8u << 20)
#define HUGE_PAGE ((uintptr_t)2 << 20)

void rf_advise_huge(void *p, size_t bytes)
{
#ifdef MADV_HUGEPAGE
    if (!p || bytes < HUGE_MIN)
        return;
    uintptr_t b = ((uintptr_t)p + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
    uintptr_t e = ((uintptr_t)p + bytes) & ~(HUGE_PAGE - 1);
    if (e > b)
        (void)madvise((void *)b, e - b, MADV_HUGEPAGE);
#else
    (void)p;
    (void)bytes;
#endif
}

void rf_table_advise(rf_table *t)
{
    for (int c = 0; c < t->arity; c++)
        rf_advise_huge(t->cols[c], t->cap * sizeof(rf_word));
}

/* rf_copy_rows_at: every (column, chunk) a task, so that the fresh pages
 * of dst are faulted in by all the threads at once (~2.7 us a 4 KB page
 * on these VMs: one thread faults ~1.5 GB/s). */
#define COPY_CHUNK_ROWS ((size_t)1 << 19)   /* 4 MB of a column */

typedef struct copy_job {
    rf_table *dst;
    const rf_table *src;
    size_t at, chunks;
} copy_job;

static void copy_chunk(void *ctx, int task)
{
    copy_job *j = ctx;
    int c = (int)((size_t)task / j->chunks);
    size_t from = ((size_t)task % j->chunks) * COPY_CHUNK_ROWS;
    size_t n = j->src->nrows - from < COPY_CHUNK_ROWS ? j->src->nrows - from : COPY_CHUNK_ROWS;
    memcpy(j->dst->cols[c] + j->at + from, j->src->cols[c] + from, n * sizeof(rf_word));
}

void rf_copy_rows_at(rf_table *dst, size_t at, const rf_table *src)
{
    if (!src->nrows || src->arity == 0)
        return;
    copy_job j = {.dst = dst, .src = src, .at = at, .chunks = (src->nrows + COPY_CHUNK_ROWS - 1) / COPY_CHUNK_ROWS};
    size_t tasks = j.chunks * (size_t)src->arity;
    if (tasks == 1 || src->nrows * (size_t)src->arity < ((size_t)1 << 17)) {   /* < 1 MB: one thread */
        for (int c = 0; c < src->arity; c++)
            memcpy(dst->cols[c] + at, src->cols[c], src->nrows * sizeof(rf_word));
        return;
    }
    rf_par_for((int)tasks, copy_chunk, &j);
}
