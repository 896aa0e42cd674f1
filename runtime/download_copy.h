/* A backend's download_at where it has no direct path: v's rows downloaded
 * into a table of their own, then copied into t from row at on (on all
 * threads; t has room for var_rows(v) rows there, a bound checked again
 * here). Shared by the runtime's fallback and the backends' long ways. */
#ifndef RF_DOWNLOAD_COPY_H
#define RF_DOWNLOAD_COPY_H

#include "backend.h"
#include "../primitives/rf_prims.h"

static inline bool rf_download_copy_at(rf_backend *b, const rf_dvar *v, rf_table *t, size_t at, size_t *rows,
                                       rf_status *st)
{
    rf_table tmp;
    rf_table_init(&tmp, t->arity);
    bool ok = b->download(b, v, &tmp, st);
    if (ok && (at > t->cap || tmp.nrows > t->cap - at))
        ok = rf_fail(st, RF_EXIT_RUNTIME_ERROR, "download of %zu rows at row %zu of a table of %zu", tmp.nrows, at,
                     t->cap);
    if (ok)
        rf_copy_rows_at(t, at, &tmp);
    *rows = ok ? tmp.nrows : 0;
    rf_table_free(&tmp);
    return ok;
}

/* A backend's add_to_columns where it has none: v's rows (arity columns)
 * downloaded, the constants added on the host, the rows uploaded again
 * (the CPU backend's way: its download and upload are copies). */
static inline bool rf_add_to_columns_copy(rf_backend *b, rf_dvar *v, int arity, const uint64_t *add, rf_status *st)
{
    if (b->var_rows(b, v) == 0)
        return true;
    rf_table t;
    rf_table_init(&t, arity);
    bool ok = b->download(b, v, &t, st);
    for (int c = 0; ok && c < arity; c++)
        for (size_t i = 0; add[c] && i < t.nrows; i++)
            t.cols[c][i] += add[c];
    ok = ok && b->upload(b, v, &t, st);
    rf_table_free(&t);
    return ok;
}

#endif
