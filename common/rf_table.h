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
void rf_table_resize(rf_table *t, size_t rows);        /* nrows := rows */
void rf_table_append_row(rf_table *t, const rf_word *row);
void rf_table_clear(rf_table *t);                      /* nrows := 0 */
void rf_table_free(rf_table *t);
void rf_table_move(rf_table *dst, rf_table *src);      /* dst takes src's data */
void rf_table_copy(rf_table *dst, const rf_table *src);
size_t rf_table_bytes(const rf_table *t);
/* Row-major words -> table. */
void rf_table_from_rows(rf_table *t, int arity, const rf_word *rows, size_t nrows);

#endif
