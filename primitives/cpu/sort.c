/* SORT + UNIQUE. Rows are compared lexicographically as unsigned words.
 * Fast path: subtract each column's minimum and count the bits its values
 * need; if the whole row fits in 64 bits (graph node ids: two columns of
 * 14..30 bits), pack each row into one word, whose unsigned order is the
 * row order, and LSD-radix-sort the words over just those bits (parallel
 * histogram + scatter), then drop adjacent duplicates while unpacking.
 * Rows wider than 64 bits sort a row permutation column by column (LSD,
 * stable counting passes). Both are O(n * bits / 11). */
#include "prims_internal.h"

#include <stdlib.h>
#include <string.h>

#define DIGIT_MAX 11
/* Sort through a bitmap when the key range has at most this many possible
 * keys per input row. */
#define DENSE_ROWS_FACTOR 64

typedef struct colinfo {
    rf_word min;
    int width, shift;
} colinfo;

static int bits_of(uint64_t v) { return v ? 64 - __builtin_clzll(v) : 0; }

/* ---- parallel LSD radix sort of 64-bit keys ---- */
typedef struct radix_job {
    uint64_t *src, *dst;
    size_t n;
    int npieces, shift, nb;
    size_t *hist; /* [npieces][nb] counts, then offsets */
} radix_job;

static void radix_count(void *ctx, int p)
{
    radix_job *j = ctx;
    size_t b = j->n * (size_t)p / (size_t)j->npieces, e = j->n * (size_t)(p + 1) / (size_t)j->npieces;
    size_t *h = j->hist + (size_t)p * (size_t)j->nb;
    memset(h, 0, (size_t)j->nb * sizeof *h);
    uint64_t mask = (uint64_t)j->nb - 1;
    for (size_t i = b; i < e; i++)
        h[(j->src[i] >> j->shift) & mask]++;
}

static void radix_scatter(void *ctx, int p)
{
    radix_job *j = ctx;
    size_t b = j->n * (size_t)p / (size_t)j->npieces, e = j->n * (size_t)(p + 1) / (size_t)j->npieces;
    size_t *h = j->hist + (size_t)p * (size_t)j->nb;
    uint64_t mask = (uint64_t)j->nb - 1;
    for (size_t i = b; i < e; i++) {
        uint64_t k = j->src[i];
        j->dst[h[(k >> j->shift) & mask]++] = k;
    }
}

/* Sorts keys[0..n) stably on their bits [lo_bit, bits); tmp is scratch of
 * n words. Returns the array holding the result (keys or tmp). */
static uint64_t *radix_sort64(uint64_t *keys, uint64_t *tmp, size_t n, int lo_bit, int bits)
{
    if (bits <= lo_bit || n < 2)
        return keys;
    int passes = (bits - lo_bit + DIGIT_MAX - 1) / DIGIT_MAX;
    int dbits = (bits - lo_bit + passes - 1) / passes;
    radix_job j = {.n = n, .nb = 1 << dbits};
    j.npieces = rf_pieces_for(n, 1);
    j.hist = rf_malloc(rf_mul_size((size_t)j.npieces * (size_t)j.nb, sizeof *j.hist));
    uint64_t *src = keys, *dst = tmp;
    for (int pass = 0; pass < passes; pass++) {
        j.src = src;
        j.dst = dst;
        j.shift = lo_bit + pass * dbits;
        rf_par_for(j.npieces, radix_count, &j);
        /* Offsets: bucket-major, piece-minor, so the scatter is stable. */
        size_t sum = 0;
        bool trivial = false;
        for (int d = 0; d < j.nb; d++) {
            size_t tot = 0;
            for (int p = 0; p < j.npieces; p++) {
                size_t *h = &j.hist[(size_t)p * (size_t)j.nb + (size_t)d];
                size_t c = *h;
                *h = sum;
                sum += c;
                tot += c;
            }
            if (tot == n)
                trivial = true; /* every key has this digit: pass is a no-op */
        }
        if (trivial)
            continue;
        rf_par_for(j.npieces, radix_scatter, &j);
        uint64_t *t = src;
        src = dst;
        dst = t;
    }
    free(j.hist);
    return src;
}

/* ---- packing ---- */
typedef struct pack_job {
    const rf_table *in;
    rf_table *out;
    const colinfo *ci;
    uint64_t *keys;
    size_t n, *starts, *counts;
    int npieces;
    bool *by_second;   /* two columns: piece p's rows ascend by (second, first) */
} pack_job;

static _Atomic size_t g_sorts_by_first;

size_t rf_prim_sorts_by_first(void) { return g_sorts_by_first; }

static void pack_piece(void *ctx, int p)
{
    pack_job *j = ctx;
    size_t b = j->n * (size_t)p / (size_t)j->npieces, e = j->n * (size_t)(p + 1) / (size_t)j->npieces;
    if (j->by_second) {   /* (with the row before the piece) */
        const rf_word *c0 = j->in->cols[0], *c1 = j->in->cols[1];
        bool ok = true;
        for (size_t i = b > 0 ? b : 1; i < e && ok; i++)
            ok = c1[i - 1] < c1[i] || (c1[i - 1] == c1[i] && c0[i - 1] <= c0[i]);
        j->by_second[p] = ok;
    }
    for (size_t i = b; i < e; i++)
        j->keys[i] = 0;
    for (int c = 0; c < j->in->arity; c++) {
        const rf_word *col = j->in->cols[c];
        rf_word min = j->ci[c].min;
        int sh = j->ci[c].shift;
        if (j->ci[c].width == 0)
            continue;
        for (size_t i = b; i < e; i++)
            j->keys[i] |= (col[i] - min) << sh;
    }
}

/* Unique keys of piece p: counted first (dedup against the previous key,
 * which may lie in the previous piece), then unpacked at their offset. */
static void unique_count(void *ctx, int p)
{
    pack_job *j = ctx;
    size_t b = j->n * (size_t)p / (size_t)j->npieces, e = j->n * (size_t)(p + 1) / (size_t)j->npieces;
    size_t cnt = 0;
    for (size_t i = b; i < e; i++)
        cnt += i == 0 || j->keys[i] != j->keys[i - 1];
    j->counts[p] = cnt;
}

static void unpack_piece(void *ctx, int p)
{
    pack_job *j = ctx;
    size_t b = j->n * (size_t)p / (size_t)j->npieces, e = j->n * (size_t)(p + 1) / (size_t)j->npieces;
    for (int c = 0; c < j->out->arity; c++) {
        rf_word *dst = j->out->cols[c];
        rf_word min = j->ci[c].min;
        int sh = j->ci[c].shift, w = j->ci[c].width;
        uint64_t mask = w >= 64 ? ~(uint64_t)0 : (((uint64_t)1 << w) - 1);
        size_t pos = j->starts[p];
        for (size_t i = b; i < e; i++) {
            if (i > 0 && j->keys[i] == j->keys[i - 1])
                continue;
            dst[pos++] = w == 0 ? min : ((j->keys[i] >> sh) & mask) + min;
        }
    }
}

static void sort_packed(const rf_table *in, const colinfo *ci, int bits, rf_table *out)
{
    size_t n = in->nrows;
    pack_job j = {.in = in, .out = out, .ci = ci, .n = n};
    j.npieces = rf_pieces_for(n, 1);
    j.keys = rf_malloc(rf_mul_size(n, sizeof *j.keys));
    rf_advise_huge(j.keys, n * sizeof *j.keys);
    /* Two columns in the order of the second, then the first (what
     * swapping a sorted relation's columns makes: a semi-naive delta
     * re-keyed, a multiway join's input for its second variable order) are
     * sorted by the first column's bits alone: a stable sort keeps each
     * first value's rows in their second values' order. */
    bool by_second = in->arity == 2 && ci[0].width > 0 && ci[1].width > 0;
    if (by_second)
        j.by_second = rf_calloc((size_t)j.npieces, sizeof *j.by_second);
    rf_par_for(j.npieces, pack_piece, &j);
    for (int p = 0; p < j.npieces && by_second; p++)
        by_second = j.by_second[p];
    free(j.by_second);
    bool sorted = true;
    for (size_t i = 1; i < n && sorted; i++)
        sorted = j.keys[i - 1] <= j.keys[i];
    uint64_t *tmp = NULL;
    if (!sorted) {
        tmp = rf_malloc(rf_mul_size(n, sizeof *tmp));
        rf_advise_huge(tmp, n * sizeof *tmp);
        if (by_second)
            g_sorts_by_first++;
        uint64_t *res = radix_sort64(j.keys, tmp, n, by_second ? ci[1].width : 0, bits);
        if (res == tmp) {
            tmp = j.keys;
            j.keys = res;
        }
        free(tmp);
    }
    j.starts = rf_calloc((size_t)j.npieces, sizeof *j.starts);
    j.counts = rf_calloc((size_t)j.npieces, sizeof *j.counts);
    rf_par_for(j.npieces, unique_count, &j);
    size_t total = 0;
    for (int p = 0; p < j.npieces; p++) {
        j.starts[p] = total;
        total += j.counts[p];
    }
    rf_table_resize(out, total);
    rf_table_advise(out);
    rf_par_for(j.npieces, unpack_piece, &j);
    free(j.starts);
    free(j.counts);
    free(j.keys);
}

/* Rows wider than 64 bits: stable LSD counting sort of a permutation,
 * least significant column first. */
static void sort_perm(const rf_table *in, const colinfo *ci, rf_table *out)
{
    size_t n = in->nrows;
    size_t *perm = rf_malloc(rf_mul_size(n, sizeof *perm));
    size_t *tmp = rf_malloc(rf_mul_size(n, sizeof *tmp));
    size_t *hist = rf_malloc(((size_t)1 << DIGIT_MAX) * sizeof *hist);
    for (size_t i = 0; i < n; i++)
        perm[i] = i;
    for (int c = in->arity - 1; c >= 0; c--) {
        const rf_word *col = in->cols[c];
        rf_word min = ci[c].min;
        for (int sh = 0; sh < ci[c].width; sh += DIGIT_MAX) {
            size_t nb = (size_t)1 << DIGIT_MAX, mask = nb - 1;
            memset(hist, 0, nb * sizeof *hist);
            for (size_t i = 0; i < n; i++)
                hist[((col[perm[i]] - min) >> sh) & mask]++;
            size_t sum = 0;
            for (size_t d = 0; d < nb; d++) {
                size_t cnt = hist[d];
                hist[d] = sum;
                sum += cnt;
            }
            for (size_t i = 0; i < n; i++)
                tmp[hist[((col[perm[i]] - min) >> sh) & mask]++] = perm[i];
            size_t *t = perm;
            perm = tmp;
            tmp = t;
        }
    }
    rf_table_resize(out, n);
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (i > 0 && rf_rowcmp(in, perm[i], in, perm[i - 1], in->arity) == 0)
            continue;
        for (int c = 0; c < in->arity; c++)
            out->cols[c][m] = in->cols[c][perm[i]];
        m++;
    }
    out->nrows = m;
    free(perm);
    free(tmp);
    free(hist);
}

/* Tiny inputs (a semi-naive delta of a few rows): an insertion sort of
 * the row numbers and a copy, no ranges, bitmaps, radix passes or pool; a
 * sort of a handful of rows then costs nanoseconds, not the fixed costs of
 * the paths above. */
#define TINY_SORT_ROWS 32

static void sort_tiny(const rf_table *in, rf_table *out)
{
    size_t n = in->nrows, perm[TINY_SORT_ROWS];
    for (size_t i = 0; i < n; i++) {
        size_t j = i;
        while (j > 0 && rf_rowcmp(in, perm[j - 1], in, i, in->arity) > 0) {
            perm[j] = perm[j - 1];
            j--;
        }
        perm[j] = i;
    }
    rf_table_reserve(out, n);
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (m > 0 && rf_rowcmp(in, perm[i], in, perm[i - 1], in->arity) == 0)
            continue;
        for (int c = 0; c < in->arity; c++)
            out->cols[c][m] = in->cols[c][perm[i]];
        m++;
    }
    out->nrows = m;
}

void rf_prim_sort(const rf_table *in, rf_table *out)
{
    rf_table_init(out, in->arity);
    size_t n = in->nrows;
    if (in->arity == 0) {
        out->nrows = n > 0;
        return;
    }
    if (n == 0)
        return;
    if (n <= TINY_SORT_ROWS) {
        sort_tiny(in, out);
        return;
    }
    colinfo *ci = rf_calloc((size_t)in->arity, sizeof *ci);
    int bits = 0;
    for (int c = in->arity - 1; c >= 0; c--) {
        const rf_word *col = in->cols[c];
        rf_word lo = col[0], hi = col[0];
        for (size_t i = 1; i < n; i++) {
            lo = col[i] < lo ? col[i] : lo;
            hi = col[i] > hi ? col[i] : hi;
        }
        ci[c].min = lo;
        ci[c].width = bits_of(hi - lo);
        ci[c].shift = bits; /* last column in the low bits */
        bits += ci[c].width;
    }
    if (bits <= RF_DENSE_MAX_BITS && ((size_t)1 << bits) <= DENSE_ROWS_FACTOR * n) {
        /* Dense key range: one bit per possible row (at most 8 bytes per
         * input row, half the input's size), set per row and scanned in
         * order, beats the radix passes by several times. */
        rf_word *mins = rf_malloc((size_t)in->arity * sizeof *mins);
        int *widths = rf_malloc((size_t)in->arity * sizeof *widths);
        for (int c = 0; c < in->arity; c++) {
            mins[c] = ci[c].min;
            widths[c] = ci[c].width;
        }
        rf_dense *d = rf_dense_new_layout(in->arity, mins, widths);
        (void)rf_dense_insert_ex(d, in, false, true); /* laid out for in */
        rf_table_free(out);
        rf_dense_to_table(d, out);
        rf_dense_free(d);
        free(mins);
        free(widths);
    } else if (bits <= 64)
        sort_packed(in, ci, bits, out);
    else
        sort_perm(in, ci, out);
    free(ci);
}

/* sort_tiny in place: the rows moved within t's own columns (no table
 * made; a one-row delta's set gather then allocates nothing to sort). */
static void sort_tiny_in_place(rf_table *t)
{
    size_t n = t->nrows;
    int ar = t->arity;
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && rf_rowcmp(t, j - 1, t, j, ar) > 0; j--)
            for (int c = 0; c < ar; c++) {
                rf_word w = t->cols[c][j];
                t->cols[c][j] = t->cols[c][j - 1];
                t->cols[c][j - 1] = w;
            }
    size_t m = n > 0;
    for (size_t i = 1; i < n; i++) {
        if (rf_rowcmp(t, i, t, m - 1, ar) == 0)
            continue;
        if (m != i)
            for (int c = 0; c < ar; c++)
                t->cols[c][m] = t->cols[c][i];
        m++;
    }
    t->nrows = m;
}

void rf_prim_sort_unique(rf_table *t)
{
    if (t->arity > 0 && t->nrows <= TINY_SORT_ROWS) {
        sort_tiny_in_place(t);
        return;
    }
    rf_table s;
    rf_prim_sort(t, &s);
    rf_table_free(t);
    *t = s;
}
