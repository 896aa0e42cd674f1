/* Dense sets: a relation over small integer ranges held as a bitmap over
 * its packed rows (each column shifted by its minimum, column 0 in the high
 * bits, as in sort.c), so bit order is the relation's row order.
 *
 * Why: in a semi-naive loop over a graph with a few ten thousand vertices
 * the full relation quickly covers a sizeable fraction of all (x, y)
 * pairs. As sorted columns it costs 16 bytes a row and every iteration's
 * `new - full` and `full + new` stream through all of it; as a bitmap it
 * costs 1 bit per possible pair, membership is one probe, and a union only
 * touches the new rows. Sorting with duplicate removal over such a range is
 * likewise one bit set per row plus a scan, instead of several radix
 * passes. Callers choose the representation by density (rf_dense_new_for's
 * max_bits and the checks in sort.c and the CPU backend). */
#include "prims_internal.h"

#include <stdlib.h>
#include <string.h>

struct rf_dense {
    int arity, bits;
    rf_word *min;
    int *width, *shift;
    uint64_t *w;
    size_t nwords, nrows;
};

static int bits_of(uint64_t v) { return v ? 64 - __builtin_clzll(v) : 0; }

/* Portable popcount: the build targets baseline x86-64, where the builtin
 * is a library call. */
static inline size_t popcount64(uint64_t x)
{
    x = x - ((x >> 1) & 0x5555555555555555ull);
    x = (x & 0x3333333333333333ull) + ((x >> 2) & 0x3333333333333333ull);
    x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0full;
    return (size_t)((x * 0x0101010101010101ull) >> 56);
}

static rf_dense *dense_alloc(int arity, const rf_word *min, const int *width)
{
    rf_dense *d = rf_calloc(1, sizeof *d);
    d->arity = arity;
    d->min = rf_calloc((size_t)arity, sizeof *d->min);
    d->width = rf_calloc((size_t)arity, sizeof *d->width);
    d->shift = rf_calloc((size_t)arity, sizeof *d->shift);
    int bits = 0;
    for (int c = arity - 1; c >= 0; c--) {
        d->min[c] = min[c];
        d->width[c] = width[c];
        d->shift[c] = bits;
        bits += width[c];
    }
    d->bits = bits;
    d->nwords = bits >= 6 ? (size_t)1 << (bits - 6) : 1;
    /* calloc of a big block maps zero pages: only touched pages cost. */
    d->w = rf_calloc(d->nwords, sizeof *d->w);
    rf_advise_huge(d->w, d->nwords * sizeof *d->w);
    return d;
}

rf_dense *rf_dense_new_layout(int arity, const rf_word *min, const int *width)
{
    return dense_alloc(arity, min, width);
}

rf_dense *rf_dense_new_for(const rf_table *a, const rf_table *b, int max_bits)
{
    int arity = a->arity;
    if (arity < 1 || (b && b->arity != arity) || max_bits > RF_DENSE_MAX_BITS)
        return NULL;
    if (a->nrows == 0 && (!b || b->nrows == 0))
        return NULL;
    rf_word *min = rf_calloc((size_t)arity, sizeof *min);
    int *width = rf_calloc((size_t)arity, sizeof *width);
    int bits = 0;
    for (int c = 0; c < arity; c++) {
        rf_word lo = ~(rf_word)0, hi = 0;
        for (int k = 0; k < 2; k++) {
            const rf_table *t = k ? b : a;
            if (!t || t->nrows == 0)
                continue;
            const rf_word *col = t->cols[c];
            for (size_t i = 0; i < t->nrows; i++) {
                lo = col[i] < lo ? col[i] : lo;
                hi = col[i] > hi ? col[i] : hi;
            }
        }
        min[c] = lo;
        width[c] = bits_of(hi - lo);
        bits += width[c];
    }
    rf_dense *d = bits <= max_bits ? dense_alloc(arity, min, width) : NULL;
    free(min);
    free(width);
    return d;
}

rf_dense *rf_dense_clone(const rf_dense *d)
{
    rf_dense *e = rf_calloc(1, sizeof *e);
    *e = *d;
    e->min = rf_malloc((size_t)d->arity * sizeof *e->min);
    e->width = rf_malloc((size_t)d->arity * sizeof *e->width);
    e->shift = rf_malloc((size_t)d->arity * sizeof *e->shift);
    memcpy(e->min, d->min, (size_t)d->arity * sizeof *e->min);
    memcpy(e->width, d->width, (size_t)d->arity * sizeof *e->width);
    memcpy(e->shift, d->shift, (size_t)d->arity * sizeof *e->shift);
    e->w = rf_malloc(d->nwords * sizeof *e->w);
    rf_advise_huge(e->w, d->nwords * sizeof *e->w);
    memcpy(e->w, d->w, d->nwords * sizeof *e->w);
    return e;
}

void rf_dense_free(rf_dense *d)
{
    if (!d)
        return;
    free(d->min);
    free(d->width);
    free(d->shift);
    free(d->w);
    free(d);
}

size_t rf_dense_rows(const rf_dense *d) { return d->nrows; }
uint64_t *rf_dense_words(rf_dense *d) { return d->w; }
int rf_dense_arity(const rf_dense *d) { return d->arity; }
size_t rf_dense_bytes(const rf_dense *d) { return d->nwords * sizeof *d->w; }

/* Packed key of row i, or false if a column is outside d's range. */
static inline bool dense_key(const rf_dense *d, rf_word *const *cols, size_t i, uint64_t *key)
{
    uint64_t k = 0;
    for (int c = 0; c < d->arity; c++) {
        uint64_t v = cols[c][i] - d->min[c]; /* below min wraps to huge */
        if (d->width[c] < 64 && (v >> d->width[c]) != 0)
            return false;
        k |= v << d->shift[c];
    }
    *key = k;
    return true;
}

/* ---- insertion ---- */
typedef struct ins_job {
    rf_dense *d;
    const rf_table *t;
    int npieces;
    bool atomic, sorted, by_key;
    size_t *starts, *added;
    bool *outside;
} ins_job;

static void range_piece(void *ctx, int p)
{
    ins_job *j = ctx;
    size_t b = j->starts[p], e = j->starts[p + 1];
    uint64_t key;
    for (size_t i = b; i < e; i++)
        if (!dense_key(j->d, j->t->cols, i, &key)) {
            j->outside[p] = true;
            return;
        }
}

/* Sets the bit of key (atomically when pieces may share words); returns
 * 1 if it was clear. */
static inline size_t set_bit(uint64_t *w, uint64_t key, bool atomic)
{
    uint64_t bit = (uint64_t)1 << (key & 63);
    if (atomic)
        return !(__atomic_fetch_or(&w[key >> 6], bit, __ATOMIC_RELAXED) & bit);
    size_t was_clear = !(w[key >> 6] & bit);
    w[key >> 6] |= bit;
    return was_clear;
}

/* Unsorted rows hit the bitmap at random: fetch the word PF rows ahead so
 * the cache misses overlap instead of queueing. */
#define PF 16

static void insert_piece(void *ctx, int p)
{
    ins_job *j = ctx;
    const rf_dense *d = j->d;
    uint64_t *w = d->w;
    size_t b = j->starts[p], e = j->starts[p + 1], added = 0;
    bool atomic = j->atomic, pf = !j->sorted;
    rf_word *const *cols = j->t->cols;
    if (d->arity == 2) { /* the common case, without the column loop */
        const rf_word *c0 = cols[0], *c1 = cols[1];
        rf_word m0 = d->min[0], m1 = d->min[1];
        int s0 = d->shift[0];
        for (size_t i = b; i < e; i++) {
            if (pf && i + PF < e)
                __builtin_prefetch(&w[(((c0[i + PF] - m0) << s0) | (c1[i + PF] - m1)) >> 6], 1);
            added += set_bit(w, ((c0[i] - m0) << s0) | (c1[i] - m1), atomic);
        }
    } else {
        uint64_t key = 0, pk = 0;
        for (size_t i = b; i < e; i++) {
            if (pf && i + PF < e) {
                (void)dense_key(d, cols, i + PF, &pk);
                __builtin_prefetch(&w[pk >> 6], 1);
            }
            (void)dense_key(d, cols, i, &key); /* range checked before */
            added += set_bit(w, key, atomic);
        }
    }
    j->added[p] = added;
}

/* Unsorted rows, several threads: atomic ORs on shared words cost more
 * than they save, so thread p instead reads every row and sets only the
 * keys in its share of the key space (word-aligned), with plain stores.
 * Reading the rows twice is cheap next to the random bitmap writes. */
static void insert_by_key(void *ctx, int p)
{
    ins_job *j = ctx;
    const rf_dense *d = j->d;
    uint64_t *w = d->w;
    size_t n = j->t->nrows, added = 0;
    uint64_t lo = (uint64_t)(d->nwords * (size_t)p / (size_t)j->npieces) << 6,
             hi = (uint64_t)(d->nwords * (size_t)(p + 1) / (size_t)j->npieces) << 6;
    rf_word *const *cols = j->t->cols;
    if (d->arity == 2) {
        const rf_word *c0 = cols[0], *c1 = cols[1];
        rf_word m0 = d->min[0], m1 = d->min[1];
        int s0 = d->shift[0];
        for (size_t i = 0; i < n; i++) {
            if (i + PF < n) {
                uint64_t k = ((c0[i + PF] - m0) << s0) | (c1[i + PF] - m1);
                if (k >= lo && k < hi)
                    __builtin_prefetch(&w[k >> 6], 1);
            }
            uint64_t key = ((c0[i] - m0) << s0) | (c1[i] - m1);
            if (key >= lo && key < hi)
                added += set_bit(w, key, false);
        }
    } else {
        uint64_t key = 0;
        for (size_t i = 0; i < n; i++) {
            (void)dense_key(d, cols, i, &key); /* range checked before */
            if (key >= lo && key < hi)
                added += set_bit(w, key, false);
        }
    }
    j->added[p] = added;
}

bool rf_dense_insert(rf_dense *d, const rf_table *t, bool sorted)
{
    return rf_dense_insert_ex(d, t, sorted, false);
}

bool rf_dense_insert_ex(rf_dense *d, const rf_table *t, bool sorted, bool in_range)
{
    if (t->arity != d->arity)
        return false;
    size_t n = t->nrows;
    if (n == 0)
        return true;
    ins_job j = {.d = d, .t = t, .sorted = sorted};
    j.npieces = rf_pieces_for(n, 1);
    /* One piece (a delta's few rows, every iteration of a long loop):
     * its bounds on the stack, not three allocations. */
    size_t one_starts[2], one_added[1];
    bool one_outside[1] = {false};
    bool single = j.npieces == 1;
    j.starts = single ? one_starts : rf_calloc((size_t)j.npieces + 1, sizeof *j.starts);
    j.added = single ? one_added : rf_calloc((size_t)j.npieces, sizeof *j.added);
    j.outside = single ? one_outside : rf_calloc((size_t)j.npieces, sizeof *j.outside);
    one_added[0] = 0;
    for (int p = 0; p <= j.npieces; p++)
        j.starts[p] = n * (size_t)p / (size_t)j.npieces;
    if (!in_range)
        rf_par_for(j.npieces, range_piece, &j);
    bool ok = true;
    for (int p = 0; p < j.npieces; p++)
        ok = ok && !j.outside[p];
    if (ok) {
        /* Sorted rows: move each cut forward past rows whose key shares a
         * word with the previous row, so pieces never share a word and plain
         * stores suffice. Unsorted rows need atomic ORs. */
        j.atomic = false;
        j.by_key = !sorted && j.npieces > 1;
        if (j.by_key)
            j.npieces = rf_prims_threads() < j.npieces ? rf_prims_threads() : j.npieces;
        if (sorted)
            for (int p = 1; p < j.npieces; p++) {
                size_t s = j.starts[p] < j.starts[p - 1] ? j.starts[p - 1] : j.starts[p];
                uint64_t kp = 0, k = 0;
                while (s > 0 && s < n) {
                    (void)dense_key(d, t->cols, s - 1, &kp);
                    (void)dense_key(d, t->cols, s, &k);
                    if (kp >> 6 != k >> 6)
                        break;
                    s++;
                }
                j.starts[p] = s;
            }
        rf_par_for(j.npieces, j.by_key ? insert_by_key : insert_piece, &j);
        for (int p = 0; p < j.npieces; p++)
            d->nrows += j.added[p];
    }
    if (!single) {
        free(j.starts);
        free(j.added);
        free(j.outside);
    }
    return ok;
}

/* ---- bitmap -> sorted table ---- */
typedef struct ext_job {
    const rf_dense *d;
    rf_table *out;
    int npieces;
    size_t *counts;
} ext_job;

static void ext_count(void *ctx, int p)
{
    ext_job *j = ctx;
    size_t b = j->d->nwords * (size_t)p / (size_t)j->npieces,
           e = j->d->nwords * (size_t)(p + 1) / (size_t)j->npieces, cnt = 0;
    for (size_t i = b; i < e; i++)
        cnt += j->d->w[i] ? popcount64(j->d->w[i]) : 0;
    j->counts[p] = cnt;
}

static void ext_write(void *ctx, int p)
{
    ext_job *j = ctx;
    const rf_dense *d = j->d;
    size_t b = d->nwords * (size_t)p / (size_t)j->npieces, e = d->nwords * (size_t)(p + 1) / (size_t)j->npieces;
    size_t pos = j->counts[p];
    rf_word *const *cols = j->out->cols;
    int ar = d->arity;
    if (ar == 2) { /* the common case, without the column loop */
        rf_word m0 = d->min[0], m1 = d->min[1];
        int s0 = d->shift[0];
        uint64_t mask1 = d->width[1] >= 64 ? ~(uint64_t)0 : (((uint64_t)1 << d->width[1]) - 1);
        rf_word *c0 = cols[0], *c1 = cols[1];
        for (size_t i = b; i < e; i++) {
            uint64_t x = d->w[i];
            while (x) {
                uint64_t key = (i << 6) | (uint64_t)__builtin_ctzll(x);
                x &= x - 1;
                c0[pos] = (key >> s0) + m0;
                c1[pos] = (key & mask1) + m1;
                pos++;
            }
        }
        return;
    }
    for (size_t i = b; i < e; i++) {
        uint64_t x = d->w[i];
        while (x) {
            uint64_t key = (i << 6) | (uint64_t)__builtin_ctzll(x);
            x &= x - 1;
            for (int c = 0; c < ar; c++) {
                int wd = d->width[c];
                uint64_t mask = wd >= 64 ? ~(uint64_t)0 : (((uint64_t)1 << wd) - 1);
                cols[c][pos] = ((key >> d->shift[c]) & mask) + d->min[c];
            }
            pos++;
        }
    }
}

void rf_dense_to_table(const rf_dense *d, rf_table *out)
{
    rf_table_init(out, d->arity);
    ext_job j = {.d = d, .out = out};
    j.npieces = rf_pieces_for(d->nwords, 2);
    j.counts = rf_calloc((size_t)j.npieces, sizeof *j.counts);
    rf_par_for(j.npieces, ext_count, &j);
    size_t total = 0;
    for (int p = 0; p < j.npieces; p++) {
        size_t c = j.counts[p];
        j.counts[p] = total;
        total += c;
    }
    rf_table_resize(out, total);
    rf_table_advise(out);
    rf_par_for(j.npieces, ext_write, &j);
    free(j.counts);
}

/* ---- a − d for a sorted table a ---- */
typedef struct diff_job {
    const rf_table *a;
    const rf_dense *d;
    rf_table *out;
    int npieces;
    size_t *counts;
} diff_job;

/* Piece p keeps its rows at its own start in out (it never keeps more rows
 * than it reads), so one allocation serves all pieces; the gaps are closed
 * afterwards. */
static void diff_piece(void *ctx, int p)
{
    diff_job *j = ctx;
    const rf_table *a = j->a;
    const rf_dense *d = j->d;
    const uint64_t *w = d->w;
    size_t b = a->nrows * (size_t)p / (size_t)j->npieces, e = a->nrows * (size_t)(p + 1) / (size_t)j->npieces;
    size_t m = b;
    if (a->arity == 2) {
        const rf_word *a0 = a->cols[0], *a1 = a->cols[1];
        rf_word *o0 = j->out->cols[0], *o1 = j->out->cols[1];
        rf_word m0 = d->min[0], m1 = d->min[1];
        int s0 = d->shift[0], w0 = d->width[0], w1 = d->width[1];
        for (size_t i = b; i < e; i++) {
            uint64_t v0 = a0[i] - m0, v1 = a1[i] - m1;
            if ((v0 >> w0) == 0 && (v1 >> w1) == 0) {
                uint64_t key = (v0 << s0) | v1;
                if ((w[key >> 6] >> (key & 63)) & 1)
                    continue;
            }
            o0[m] = a0[i];
            o1[m] = a1[i];
            m++;
        }
    } else {
        uint64_t key;
        for (size_t i = b; i < e; i++) {
            if (dense_key(d, a->cols, i, &key) && ((w[key >> 6] >> (key & 63)) & 1))
                continue;
            for (int c = 0; c < a->arity; c++)
                j->out->cols[c][m] = a->cols[c][i];
            m++;
        }
    }
    j->counts[p] = m - b;
}

void rf_dense_difference(const rf_table *a, const rf_dense *d, rf_table *out)
{
    rf_table_init(out, a->arity);
    rf_dense_difference_into(a, d, out);
}

/* Below this room an output keeps what it has (it is a reused one's). */
#define KEEP_ROOM_ROWS 1024

void rf_dense_difference_into(const rf_table *a, const rf_dense *d, rf_table *out)
{
    if (out->arity != a->arity) {
        rf_table_free(out);
        rf_table_init(out, a->arity);
    }
    out->nrows = 0;
    if (a->arity != d->arity || a->nrows == 0 || d->arity < 1) {
        rf_table_copy(out, a);
        return;
    }
    diff_job j = {.a = a, .d = d, .out = out};
    j.npieces = rf_pieces_for(a->nrows, 1);
    j.counts = rf_calloc((size_t)j.npieces, sizeof *j.counts);
    rf_table_resize(out, a->nrows);
    rf_par_for(j.npieces, diff_piece, &j);
    size_t total = 0;
    for (int p = 0; p < j.npieces; p++) {
        size_t b = a->nrows * (size_t)p / (size_t)j.npieces;
        if (b != total && j.counts[p])
            for (int c = 0; c < a->arity; c++)
                memmove(out->cols[c] + total, out->cols[c] + b, j.counts[p] * sizeof(rf_word));
        total += j.counts[p];
    }
    out->nrows = total;
    if (total < out->cap / 2 && out->cap > KEEP_ROOM_ROWS) { /* most rows were known: give the rest back */
        for (int c = 0; c < out->arity; c++)
            out->cols[c] = rf_realloc(out->cols[c], (total ? total : 1) * sizeof(rf_word));
        out->cap = total ? total : 1;
    }
    free(j.counts);
}

void rf_dense_erase(rf_dense *d, const rf_table *t)
{
    uint64_t key;
    for (size_t i = 0; t->arity == d->arity && i < t->nrows; i++)
        if (dense_key(d, t->cols, i, &key) && ((d->w[key >> 6] >> (key & 63)) & 1)) {
            d->w[key >> 6] &= ~((uint64_t)1 << (key & 63));
            d->nrows--;
        }
}

bool rf_dense_contains(const rf_dense *d, const rf_word *row)
{
    uint64_t k = 0;
    for (int c = 0; c < d->arity; c++) {
        uint64_t v = row[c] - d->min[c];
        if (d->width[c] < 64 && (v >> d->width[c]) != 0)
            return false;
        k |= v << d->shift[c];
    }
    return (d->w[k >> 6] >> (k & 63)) & 1;
}
