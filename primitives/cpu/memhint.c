/* Large relations are hundreds of MB per column and are allocated afresh by
 * every kernel; with 4 KB pages the first touch of each page is a fault
 * (and the kernel's zeroing), which dominated the semi-naive loop's union.
 * Asking for transparent huge pages on the big arrays cuts the faults by
 * 512x. Only a hint: where unsupported it does nothing. */
#define _DEFAULT_SOURCE
#include "prims_internal.h"

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
