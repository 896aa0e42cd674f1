/* Output: typed sort order and TSV writing. Typed order is obtained by
 * mapping each column to an order-preserving unsigned key (sign bit flip
 * for ints, dates and decimals, the IEEE trick for doubles, the rank of the text among
 * the strings the rows hold for strings),
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

/* The place of id among r's distinct ids (sorted by id). */
static size_t id_place(const rf_str_ranks *r, rf_word id)
{
    size_t lo = 0, hi = r->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (r->ids[mid] < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

bool rf_str_ranks_make(rf_str_ranks *r, const rf_word *const *cols, int ncols, size_t nrows, size_t max_distinct)
{
    rf_table d;
    rf_table_init(&d, 1);
    rf_table_resize(&d, rf_mul_size((size_t)ncols, nrows));
    for (int c = 0; c < ncols && nrows > 0; c++)   /* (an empty table may have no storage) */
        memcpy(d.cols[0] + (size_t)c * nrows, cols[c], nrows * sizeof(rf_word));
    rf_prim_sort_unique(&d);   /* the distinct ids, by id */
    size_t n = d.nrows;
    if (n > max_distinct) {
        rf_table_free(&d);
        return false;
    }
    r->n = n;
    r->ids = rf_malloc(rf_mul_size(n + 1, sizeof(rf_word)));
    r->by_text = rf_malloc(rf_mul_size(n + 1, sizeof(rf_word)));
    r->rank_of = rf_malloc(rf_mul_size(n + 1, sizeof(rf_word)));
    if (n > 0) {
        memcpy(r->ids, d.cols[0], n * sizeof(rf_word));
        memcpy(r->by_text, d.cols[0], n * sizeof(rf_word));
    }
    rf_table_free(&d);
    qsort(r->by_text, n, sizeof(rf_word), cmp_str_ids);
    for (size_t k = 0; k < n; k++)
        r->rank_of[id_place(r, r->by_text[k])] = k;
    return true;
}

rf_word rf_str_ranks_of(const rf_str_ranks *r, rf_word id)
{
    return r->rank_of[id_place(r, id)];
}

void rf_str_ranks_free(rf_str_ranks *r)
{
    free(r->ids);
    free(r->rank_of);
    free(r->by_text);
}

void rf_sort_typed(rf_table *t, const rf_type *types)
{
    const rf_word **strcols = rf_malloc(((size_t)t->arity + 1) * sizeof *strcols);
    int nstr = 0;
    for (int c = 0; c < t->arity; c++)
        if (types[c] == RF_TYPE_STRING)
            strcols[nstr++] = t->cols[c];
    rf_str_ranks sr = {0};
    if (nstr > 0)
        (void)rf_str_ranks_make(&sr, strcols, nstr, t->nrows, SIZE_MAX);
    free(strcols);
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
                col[i] = rf_str_ranks_of(&sr, col[i]);
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
                col[i] = sr.by_text[col[i]];
            break;
        default:
            break;
        }
    }
    if (nstr > 0)
        rf_str_ranks_free(&sr);
}

/* A big output buffer: values are formatted straight into it. With a file
 * it is written out whenever full; without one (f NULL) it grows. */
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
    if (w->len + n > w->cap && w->f)
        wflush(w);
    if (w->len + n > w->cap) {
        w->cap = w->len + n > 2 * w->cap ? w->len + n : 2 * w->cap;
        w->b = rf_realloc(w->b, w->cap);
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

static void format_rows(wbuf *w, const rf_table *t, const rf_type *types, char delimiter, bool souffle, size_t from,
                        size_t to)
{
    for (size_t r = from; r < to; r++) {
        if (souffle && t->arity == 0) {
            memcpy(wreserve(w, 2), "()", 2);
            w->len += 2;
        }
        for (int c = 0; c < t->arity; c++) {
            if (c)
                *wreserve(w, 1) = delimiter, w->len++;
            put_value(w, types[c], t->cols[c][r]);
        }
        *wreserve(w, 1) = '\n';
        w->len++;
    }
}

/* Big outputs are formatted in blocks of WRITE_BLOCK_ROWS rows, a round of
 * blocks at a time on the worker threads, each into a buffer of its own,
 * and written in order: the bytes are those of one thread formatting
 * them all (TC on p2p-Gnutella09, 207 MB: 0.63 s on one thread). */
#define WRITE_BLOCK_ROWS ((size_t)1 << 16)

typedef struct write_job {
    const rf_table *t;
    const rf_type *types;
    char delimiter;
    bool souffle;
    size_t first;            /* the round's first block */
    wbuf *bufs;              /* one per block of the round */
} write_job;

static void format_block(void *ctx, int i)
{
    write_job *j = ctx;
    size_t from = (j->first + (size_t)i) * WRITE_BLOCK_ROWS, to = from + WRITE_BLOCK_ROWS;
    j->bufs[i].len = 0;
    format_rows(&j->bufs[i], j->t, j->types, j->delimiter, j->souffle, from, to < j->t->nrows ? to : j->t->nrows);
}

static bool write_rows(FILE *f, const rf_table *t, const rf_type *types, char delimiter, bool souffle)
{
    size_t nblocks = (t->nrows + WRITE_BLOCK_ROWS - 1) / WRITE_BLOCK_ROWS;
    int round = 2 * rf_prims_threads();
    if (nblocks < 2 || round < 4) {
        wbuf w = {.f = f, .cap = 1 << 20};
        w.b = rf_malloc(w.cap);
        format_rows(&w, t, types, delimiter, souffle, 0, t->nrows);
        wflush(&w);
        free(w.b);
        return !w.err;
    }
    write_job j = {.t = t, .types = types, .delimiter = delimiter, .souffle = souffle};
    j.bufs = rf_calloc((size_t)round, sizeof *j.bufs);
    bool err = false;
    for (j.first = 0; j.first < nblocks && !err; j.first += (size_t)round) {
        int n = nblocks - j.first < (size_t)round ? (int)(nblocks - j.first) : round;
        rf_par_for(n, format_block, &j);
        for (int i = 0; i < n && !err; i++)
            err = j.bufs[i].len && fwrite(j.bufs[i].b, 1, j.bufs[i].len, f) != j.bufs[i].len;
    }
    for (int i = 0; i < round; i++)
        free(j.bufs[i].b);
    free(j.bufs);
    return !err;
}

bool rf_write_tsv(FILE *f, const rf_table *t, const rf_type *types)
{
    return write_rows(f, t, types, '\t', false);
}

bool rf_write_delimited(FILE *f, const rf_table *t, const rf_type *types, char delimiter)
{
    return write_rows(f, t, types, delimiter, true);
}
