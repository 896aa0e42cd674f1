#include "rf_table.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

static const rf_host_pool *_Atomic g_pool;

bool rf_host_pool_set(const rf_host_pool *pool)
{
    const rf_host_pool *none = NULL;
    return atomic_compare_exchange_strong(&g_pool, &none, pool) || none == pool;
}

bool rf_host_pool_owns(const void *p)
{
    const rf_host_pool *pool = atomic_load(&g_pool);
    return p && pool && pool->owns(p);
}

static void column_free(void *p)
{
    const rf_host_pool *pool = atomic_load(&g_pool);
    if (p && pool && pool->owns(p))
        pool->free(p);
    else
        free(p);
}

/* A column of `bytes` holding the first `keep` bytes of old (freed): in
 * the pool when asked or when old is there (a pooled table stays pooled as
 * it grows), else by the heap's realloc (which may remap, not copy). */
static rf_word *column_remake(rf_word *old, size_t keep, size_t bytes, bool pooled)
{
    const rf_host_pool *pool = atomic_load(&g_pool);
    if (!pool || (!pooled && !pool->owns(old)))
        return rf_realloc(old, bytes);
    rf_word *p = pool->alloc(bytes);
    if (!p)
        p = rf_malloc(bytes);
    if (old && keep)
        memcpy(p, old, keep);
    column_free(old);
    return p;
}

void rf_table_init(rf_table *t, int arity)
{
    t->arity = arity;
    t->nrows = 0;
    t->cap = 0;
    t->cols = arity > 0 ? rf_calloc((size_t)arity, sizeof *t->cols) : NULL;
}

static void reserve(rf_table *t, size_t rows, bool pooled)
{
    if (rows <= t->cap)
        return;
    size_t cap = t->cap ? t->cap : 16;
    while (cap < rows)
        cap = cap > SIZE_MAX / 2 ? rows : cap * 2;
    size_t bytes = rf_mul_size(cap, sizeof(rf_word));
    for (int c = 0; c < t->arity; c++)
        t->cols[c] = column_remake(t->cols[c], t->cap * sizeof(rf_word), bytes, pooled);
    t->cap = cap;
}

void rf_table_reserve(rf_table *t, size_t rows) { reserve(t, rows, false); }

void rf_table_reserve_pooled(rf_table *t, size_t rows) { reserve(t, rows, true); }

void rf_table_shrink(rf_table *t, size_t rows)
{
    if (rows < t->nrows)
        rows = t->nrows;
    if (rows >= t->cap)
        return;
    const rf_host_pool *pool = atomic_load(&g_pool);
    size_t bytes = (rows ? rows : 1) * sizeof(rf_word);
    for (int c = 0; c < t->arity; c++) {
        if (pool && pool->owns(t->cols[c]))
            pool->shrink(t->cols[c], bytes);
        else
            t->cols[c] = rf_realloc(t->cols[c], bytes);
    }
    t->cap = rows;
}

void rf_table_resize(rf_table *t, size_t rows)
{
    rf_table_reserve(t, rows);
    t->nrows = rows;
}

void rf_table_append_row(rf_table *t, const rf_word *row)
{
    rf_table_reserve(t, t->nrows + 1);
    for (int c = 0; c < t->arity; c++)
        t->cols[c][t->nrows] = row[c];
    t->nrows++;
}

void rf_table_clear(rf_table *t) { t->nrows = 0; }

void rf_table_free(rf_table *t)
{
    for (int c = 0; c < t->arity; c++)
        column_free(t->cols[c]);
    free(t->cols);
    t->cols = NULL;
    t->nrows = t->cap = 0;
}

void rf_table_move(rf_table *dst, rf_table *src)
{
    rf_table_free(dst);
    *dst = *src;
    src->cols = NULL;
    src->nrows = src->cap = 0;
    rf_table_init(src, src->arity);
}

void rf_table_copy(rf_table *dst, const rf_table *src)
{
    rf_table_free(dst);
    rf_table_init(dst, src->arity);
    rf_table_resize(dst, src->nrows);
    for (int c = 0; c < src->arity; c++)
        if (src->nrows)
            memcpy(dst->cols[c], src->cols[c], src->nrows * sizeof(rf_word));
}

size_t rf_table_bytes(const rf_table *t) { return (size_t)t->arity * t->cap * sizeof(rf_word); }

void rf_table_from_rows(rf_table *t, int arity, const rf_word *rows, size_t nrows)
{
    rf_table_init(t, arity);
    rf_table_resize(t, nrows);
    for (size_t r = 0; r < nrows; r++)
        for (int c = 0; c < arity; c++)
            t->cols[c][r] = rows[r * (size_t)arity + (size_t)c];
}
