/* A relation in host memory: columnar, one array of words per attribute.
 * Whether rows are sorted/unique is the owner's knowledge (see hir.h). */
#ifndef RF_TABLE_H
#define RF_TABLE_H

#include "rf_value.h"

typedef struct rf_table {
    int arity;
    size_t nrows;
    size_t cap;              /* rows allocated in every column */
    rf_word **cols;          /* [arity]; for arity 0 a table is {} or {()} */
} rf_table;

void rf_table_init(rf_table *t, int arity);
void rf_table_reserve(rf_table *t, size_t rows);       /* capacity >= rows */
/* Capacity >= rows, the columns (re)made in the host pool where there is
 * one (below): for tables a device copies to and from whole. */
void rf_table_reserve_pooled(rf_table *t, size_t rows);
/* Capacity := rows (>= nrows): the room beyond given back, in place (the
 * heap's realloc remaps large columns; the pool cuts its extent). */
void rf_table_shrink(rf_table *t, size_t rows);
void rf_table_resize(rf_table *t, size_t rows);        /* nrows := rows */
void rf_table_append_row(rf_table *t, const rf_word *row);
void rf_table_clear(rf_table *t);                      /* nrows := 0 */
void rf_table_free(rf_table *t);
void rf_table_move(rf_table *dst, rf_table *src);      /* dst takes src's data */
void rf_table_copy(rf_table *dst, const rf_table *src);
size_t rf_table_bytes(const rf_table *t);
/* Host memory outside the C heap that tables' columns may live in: the GPU
 * backend's pinned arena (primitives/cuda/host_arena.c), which the device
 * copies to and from at the bus's speed, where a copy from the heap goes
 * through staging buffers. Tables do not say where their columns live:
 * rf_table_free and rf_table_reserve ask the pool whether it owns a column
 * (so a table moved or copied as a struct frees right). Code that frees or
 * reallocates columns itself must do the same (rf_host_pool_owns). One pool
 * a process, the first installed; none: the heap. */
typedef struct rf_host_pool {
    void *(*alloc)(size_t bytes);   /* NULL where it has no room (the heap is used) */
    bool (*owns)(const void *p);
    void (*free)(void *p);
    void (*shrink)(void *p, size_t bytes);   /* keeps the first bytes of p's allocation, in place */
} rf_host_pool;
/* Installs pool where none is yet (false: another is, and stays). */
bool rf_host_pool_set(const rf_host_pool *pool);
bool rf_host_pool_owns(const void *p);
/* Row-major words -> table. */
void rf_table_from_rows(rf_table *t, int arity, const rf_word *rows, size_t nrows);

#endif
