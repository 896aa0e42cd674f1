/* Output: typed sort order and TSV writing. Typed order is obtained by
 * mapping each column to an order-preserving unsigned key (sign bit flip
 * for ints, dates and decimals, the IEEE trick for doubles, the rank of the text for strings),
 * radix-sorting those with the primitive sort, and mapping back: O(n), no
 * comparison callbacks over 47M rows. */
#include "runtime.h"
#include "rf_prims.h"

#include <stdlib.h>
#include <string.h>

#define SIGN ((uint64_t)1 << 63)

static int cmp_str_ids(const void *a, const void *b)
{
    return rf_value_compare(RF_TYPE_STRING, *(const rf_word *)a, *(const rf_word *)b);
}

void rf_sort_typed(rf_table *t, const rf_type *types)
{
    rf_word *order = NULL, *rank = NULL; /* string id <-> rank */
    for (int c = 0; c < t->arity; c++)
        if (types[c] == RF_TYPE_STRING && !order) {
            size_t n = rf_str_count();
            order = rf_malloc(rf_mul_size(n + 1, sizeof *order));
            rank = rf_malloc(rf_mul_size(n + 1, sizeof *rank));
            for (size_t i = 0; i < n; i++)
                order[i] = i;
            qsort(order, n, sizeof *order, cmp_str_ids);
            for (size_t i = 0; i < n; i++)
                rank[order[i]] = i;
        }
    for (int c = 0; c < t->arity; c++) {
        rf_word *col = t->cols[c];
        if (rf_type_is_signed_word(types[c])) {
            for (size_t i = 0; i < t->nrows; i++)
                col[i] ^= SIGN;
            continue;
        }
        switch (types[c]) {
        case RF_TYPE_FLOAT64:
            for (size_t i = 0; i < t->nrows; i++)
                col[i] = (col[i] & SIGN) ? ~col[i] : (col[i] | SIGN);
            break;
        case RF_TYPE_STRING:
            for (size_t i = 0; i < t->nrows; i++)
                col[i] = rank[col[i]];
            break;
        default:
            break;
        }
    }
    rf_prim_sort_unique(t);
    for (int c = 0; c < t->arity; c++) {
        rf_word *col = t->cols[c];
        if (rf_type_is_signed_word(types[c])) {
            for (size_t i = 0; i < t->nrows; i++)
                col[i] ^= SIGN;
            continue;
        }
        switch (types[c]) {
        case RF_TYPE_FLOAT64:
            for (size_t i = 0; i < t->nrows; i++)
                col[i] = (col[i] & SIGN) ? (col[i] & ~SIGN) : ~col[i];
            break;
        case RF_TYPE_STRING:
            for (size_t i = 0; i < t->nrows; i++)
                col[i] = order[col[i]];
            break;
        default:
            break;
        }
    }
    free(order);
    free(rank);
}

/* A big output buffer: values are formatted straight into it. */
typedef struct wbuf {
    FILE *f;
    char *b;
    size_t len, cap;
    bool err;
} wbuf;

static void wflush(wbuf *w)
{
    if (w->len && fwrite(w->b, 1, w->len, w->f) != w->len)
        w->err = true;
    w->len = 0;
}

static char *wreserve(wbuf *w, size_t n)
{
    if (w->len + n > w->cap)
        wflush(w);
    if (n > w->cap) {
        w->cap = n;
        w->b = rf_realloc(w->b, n);
    }
    return w->b + w->len;
}

static void put_int(wbuf *w, int64_t v)
{
    char tmp[24], *e = tmp + sizeof tmp, *p = e;
    uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
    do {
        *--p = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0)
        *--p = '-';
    size_t n = (size_t)(e - p);
    memcpy(wreserve(w, n), p, n);
    w->len += n;
}

static void put_value(wbuf *w, rf_type t, rf_word v)
{
    if (rf_type_is_integer(t) || t == RF_TYPE_DECIMAL0) {
        put_int(w, rf_word_to_int(v));
        return;
    }
    if (t == RF_TYPE_STRING) {
        size_t n = rf_str_len(v);
        w->len += rf_str_escape(rf_str_get(v), n, wreserve(w, RF_STR_ESCAPED_MAX(n)));
        return;
    }
    char *d = wreserve(w, 64);
    int n = rf_value_format(t, v, d, 64);
    w->len += n > 0 && n < 64 ? (size_t)n : 0;
}

static bool write_rows(FILE *f, const rf_table *t, const rf_type *types, char delimiter, bool souffle)
{
    wbuf w = {.f = f, .cap = 1 << 20};
    w.b = rf_malloc(w.cap);
    for (size_t r = 0; r < t->nrows; r++) {
        if (souffle && t->arity == 0) {
            memcpy(wreserve(&w, 2), "()", 2);
            w.len += 2;
        }
        for (int c = 0; c < t->arity; c++) {
            if (c)
                *wreserve(&w, 1) = delimiter, w.len++;
            put_value(&w, types[c], t->cols[c][r]);
        }
        *wreserve(&w, 1) = '\n';
        w.len++;
    }
    wflush(&w);
    free(w.b);
    return !w.err;
}

bool rf_write_tsv(FILE *f, const rf_table *t, const rf_type *types)
{
    return write_rows(f, t, types, '\t', false);
}

bool rf_write_delimited(FILE *f, const rf_table *t, const rf_type *types, char delimiter)
{
    return write_rows(f, t, types, delimiter, true);
}
