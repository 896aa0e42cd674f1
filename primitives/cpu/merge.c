/* The operators over sorted inputs: merge join, antijoin, union and
 * difference. All walk both inputs once, galloping (exponential search)
 * over runs, so that a small input against a big one costs
 * O(small * log(big / small)) rather than O(big): the semi-naive loop's
 * `new - full` and `full + new` are exactly that case. Threads work on key
 * ranges (rf_split_key_ranges). */
#include "emit.h"

#include <stdlib.h>
#include <string.h>

size_t rf_gallop_lower(const rf_table *t, size_t lo, size_t hi, const rf_table *kt, size_t kr, int k)
{
    if (lo >= hi || rf_rowcmp(t, lo, kt, kr, k) >= 0)
        return lo;
    size_t good = lo, step = 1; /* t[good] < key */
    while (good + step < hi && rf_rowcmp(t, good + step, kt, kr, k) < 0) {
        good += step;
        step *= 2;
    }
    size_t L = good + 1, R = good + step < hi ? good + step : hi;
    while (L < R) {
        size_t m = L + (R - L) / 2;
        if (rf_rowcmp(t, m, kt, kr, k) < 0)
            L = m + 1;
        else
            R = m;
    }
    return L;
}

size_t rf_gallop_upper(const rf_table *t, size_t lo, size_t hi, const rf_table *kt, size_t kr, int k)
{
    if (lo >= hi || rf_rowcmp(t, lo, kt, kr, k) > 0)
        return lo;
    size_t good = lo, step = 1; /* t[good] <= key */
    while (good + step < hi && rf_rowcmp(t, good + step, kt, kr, k) <= 0) {
        good += step;
        step *= 2;
    }
    size_t L = good + 1, R = good + step < hi ? good + step : hi;
    while (L < R) {
        size_t m = L + (R - L) / 2;
        if (rf_rowcmp(t, m, kt, kr, k) <= 0)
            L = m + 1;
        else
            R = m;
    }
    return L;
}

/* Binary search: first row of t in [lo, hi) with prefix >= row kr of kt. */
static size_t lower_bound(const rf_table *t, size_t lo, size_t hi, const rf_table *kt, size_t kr, int k)
{
    while (lo < hi) {
        size_t m = lo + (hi - lo) / 2;
        if (rf_rowcmp(t, m, kt, kr, k) < 0)
            lo = m + 1;
        else
            hi = m;
    }
    return lo;
}

/* The next row of t at or after key row kr of kt, from lo: by binary
 * search when t is far bigger than the side walking it (the next match is
 * then far away: log2(n) probes, against galloping's 2 log2(distance)),
 * else by galloping. */
static inline size_t seek_lower(const rf_table *t, size_t lo, size_t hi, const rf_table *kt, size_t kr, int k,
                                bool far)
{
    return far ? lower_bound(t, lo, hi, kt, kr, k) : rf_gallop_lower(t, lo, hi, kt, kr, k);
}

/* Whether big's rows are so many more than small's that a walk over both
 * should binary-search big. */
static inline bool far_apart(size_t big, size_t small) { return big / 64 > small; }

void rf_split_key_ranges(const rf_table *a, const rf_table *b, int k, int n, size_t *as, size_t *bs)
{
    /* Split the bigger input evenly, find the cut in the other. */
    bool swap = b->nrows > a->nrows;
    const rf_table *big = swap ? b : a, *small = swap ? a : b;
    size_t *bigs = swap ? bs : as, *smalls = swap ? as : bs;
    bigs[0] = smalls[0] = 0;
    for (int p = 1; p < n; p++) {
        size_t s = big->nrows * (size_t)p / (size_t)n;
        if (s < bigs[p - 1])
            s = bigs[p - 1];
        if (s >= big->nrows) {
            bigs[p] = big->nrows;
            smalls[p] = small->nrows;
            continue;
        }
        /* Back to the first row of s's key group. */
        s = lower_bound(big, bigs[p - 1], s, big, s, k);
        bigs[p] = s;
        smalls[p] = lower_bound(small, smalls[p - 1], small->nrows, big, s, k);
    }
    bigs[n] = big->nrows;
    smalls[n] = small->nrows;
}

/* The work of walking sorted a and b together by galloping: a small side
 * against a big one costs about small * log2(big / small) probes, not
 * big (the semi-naive loop's one-row delta against a whole relation).
 * Pieces are chosen from this, so a tiny input never wakes the pool. */
static size_t gallop_work(size_t a, size_t b)
{
    size_t small = a < b ? a : b, big = a < b ? b : a;
    if (small == 0)
        return 0;
    if (big / 16 <= small)
        return big;
    int lg = 1;
    for (size_t q = big / small; q > 1; q >>= 1)
        lg++;
    return small * (size_t)lg;
}

/* The walk every serial join here shares: the pairs of row ranges
 * [i, ie) of l and [x, xe) of r that agree on their first k columns, in
 * key order, found by galloping seeks (a tiny side searches the large one
 * instead of scanning it). on_group sees each; static inline, so each
 * caller's walk compiles with its own on_group inlined. */
static inline void walk_groups(const rf_table *l, const rf_table *r, int k,
                               void (*on_group)(void *ctx, size_t i, size_t ie, size_t x, size_t xe), void *ctx)
{
    size_t i = 0, i1 = l->nrows, x = 0, x1 = r->nrows;
    bool far_l = far_apart(l->nrows, r->nrows), far_r = far_apart(r->nrows, l->nrows);
    while (i < i1 && x < x1) {
        int c = rf_rowcmp(l, i, r, x, k);
        if (c < 0) {
            i = seek_lower(l, i + 1, i1, r, x, k, far_l);
        } else if (c > 0) {
            x = seek_lower(r, x + 1, x1, l, i, k, far_r);
        } else {
            size_t ie = rf_gallop_upper(l, i + 1, i1, l, i, k);
            size_t xe = rf_gallop_upper(r, x + 1, x1, r, x, k);
            on_group(ctx, i, ie, x, xe);
            i = ie;
            x = xe;
        }
    }
}

static void count_group(void *ctx, size_t i, size_t ie, size_t x, size_t xe)
{
    *(size_t *)ctx += (ie - i) * (xe - x);
}

/* Rows of the join of l and r on k keys, counted in the calling thread
 * (one galloping walk, no allocation). */
static size_t join_count_serial(const rf_table *l, const rf_table *r, int k)
{
    size_t cnt = 0;
    walk_groups(l, r, k, count_group, &cnt);
    return cnt;
}

/* ---- JOIN ---- */

#define PAIRS 2048

typedef struct join_job {
    const rf_table *l, *r;
    int nkeys;
    const rf_code *filter, *proj;
    int nproj, npieces;
    size_t *ls, *rs;
    bool cross;
    bool probe;              /* l unsorted: each row looked up in r (rf_prim_join_probe) */
    size_t pairs_hint;       /* known output rows (0: unknown), to size the pair buffers */
    rf_table *pieces;
    rf_status *sts;
} join_job;

typedef struct join_state {
    join_job *j;
    rf_table *out;
    rf_status *st;
    rf_emitter em;
    bool direct;              /* no filter and column projections only */
    int ncols;                /* arity(l) + arity(r) */
    bool *used;               /* columns read by filter/projections */
    rf_word **gbuf;           /* gathered columns of l ++ r, RF_BATCH each */
    rf_word *rows[2];         /* RF_EX_ROWID: the batch's rows of l and r */
    size_t *li, *ri;          /* PAIRS each (malloc: a one-row join must not zero 32 KiB) */
    int npairs, pairs_cap;
    bool failed;
} join_state;

static void mark_used(const rf_code *c, bool *used)
{
    for (int i = 0; i < c->n; i++)
        if (c->ins[i].op == RF_EX_COL)
            used[c->ins[i].index] = true;
}

static void flush_pairs(join_state *s)
{
    const rf_table *l = s->j->l, *r = s->j->r;
    int la = l->arity, n = s->npairs;
    s->npairs = 0;
    if (s->failed || n == 0)
        return;
    rf_table *out = s->out;
    if (s->direct) {
        if (out->arity == 0) {
            rf_table_resize(out, 1);
            return;
        }
        size_t pos = out->nrows, cap = out->cap;
        rf_table_reserve(out, pos + (size_t)n);
        if (out->cap != cap)
            rf_table_advise(out);
        for (int jx = 0; jx < s->em.nproj; jx++) {
            int c = s->em.projcol[jx];
            rf_word *dst = out->cols[jx] + pos;
            if (c < la) {
                const rf_word *src = l->cols[c];
                for (int i = 0; i < n; i++)
                    dst[i] = src[s->li[i]];
            } else {
                const rf_word *src = r->cols[c - la];
                for (int i = 0; i < n; i++)
                    dst[i] = src[s->ri[i]];
            }
        }
        out->nrows = pos + (size_t)n;
        return;
    }
    /* Gather the columns the code reads into batch buffers, then run the
     * shared filter/projection stage over the concatenated rows. */
    for (int base = 0; base < n; base += RF_BATCH) {
        int cnt = n - base < RF_BATCH ? n - base : RF_BATCH;
        for (int c = 0; c < s->ncols; c++) {
            if (!s->used[c])
                continue;
            rf_word *dst = s->gbuf[c];
            if (c < la) {
                const rf_word *src = l->cols[c];
                for (int i = 0; i < cnt; i++)
                    dst[i] = src[s->li[base + i]];
            } else {
                const rf_word *src = r->cols[c - la];
                for (int i = 0; i < cnt; i++)
                    dst[i] = src[s->ri[base + i]];
            }
        }
        if (s->em.uses_rows)
            for (int i = 0; i < cnt; i++) {
                s->rows[0][i] = s->li[base + i];
                s->rows[1][i] = s->ri[base + i];
            }
        if (!rf_emit_batch(&s->em, s->gbuf, 0, cnt, out, s->st)) {
            s->failed = true;
            return;
        }
    }
}

static void join_groups(join_state *s, size_t l0, size_t l1, size_t r0, size_t r1)
{
    for (size_t i = l0; i < l1 && !s->failed; i++)
        for (size_t k = r0; k < r1; k++) {
            s->li[s->npairs] = i;
            s->ri[s->npairs] = k;
            if (++s->npairs == s->pairs_cap)
                flush_pairs(s);
        }
}

static void join_piece(void *ctx, int p)
{
    join_job *j = ctx;
    join_state *s = rf_calloc(1, sizeof *s);
    size_t pairs = j->pairs_hint < PAIRS ? (j->pairs_hint ? j->pairs_hint : 1) : PAIRS;
    s->li = rf_malloc(2 * pairs * sizeof *s->li);
    s->ri = s->li + pairs;
    s->pairs_cap = (int)pairs;
    s->j = j;
    s->out = &j->pieces[p];
    s->st = &j->sts[p];
    rf_table_init(s->out, j->nproj);
    rf_emitter_init(&s->em, j->filter, j->nproj, j->proj);
    s->ncols = j->l->arity + j->r->arity;
    s->direct = s->em.filter == NULL;
    for (int k = 0; k < j->nproj; k++)
        if (s->em.projcol[k] < 0)
            s->direct = false;
    s->used = rf_calloc((size_t)s->ncols + 1, sizeof *s->used);
    s->gbuf = rf_calloc((size_t)s->ncols + 1, sizeof *s->gbuf);
    if (!s->direct) {
        if (j->filter)
            mark_used(j->filter, s->used);
        for (int k = 0; k < j->nproj; k++)
            mark_used(&j->proj[k], s->used);
        for (int c = 0; c < s->ncols; c++)
            if (s->used[c])
                s->gbuf[c] = rf_malloc(RF_BATCH * sizeof(rf_word));
        if (s->em.uses_rows) {
            s->rows[0] = rf_malloc(RF_BATCH * sizeof(rf_word));
            s->rows[1] = rf_malloc(RF_BATCH * sizeof(rf_word));
            rf_emitter_set_rows(&s->em, s->rows[0], s->rows[1]);
        }
    }
    const rf_table *l = j->l, *r = j->r;
    int k = j->nkeys;
    if (j->cross) {
        size_t n = l->nrows;
        join_groups(s, n * (size_t)p / (size_t)j->npieces, n * (size_t)(p + 1) / (size_t)j->npieces,
                    0, r->nrows);
    } else if (j->probe) {
        /* l's rows in their order, each looked up in r: from the last
         * match onward by galloping (rows that come nearly in key order,
         * a scan of a sorted table, cost a step each), else from r's
         * start; a run of equal keys in l is one group. */
        size_t n = l->nrows, i = n * (size_t)p / (size_t)j->npieces, i1 = n * (size_t)(p + 1) / (size_t)j->npieces;
        size_t x = 0, nr = r->nrows;
        while (i < i1 && !s->failed) {
            size_t xl = x < nr && rf_rowcmp(l, i, r, x, k) >= 0 ? rf_gallop_lower(r, x, nr, l, i, k)
                                                                 : rf_gallop_lower(r, 0, x, l, i, k);
            size_t ie = i + 1;
            while (ie < i1 && rf_rowcmp(l, ie, l, i, k) == 0)
                ie++;
            if (xl < nr && rf_rowcmp(l, i, r, xl, k) == 0)
                join_groups(s, i, ie, xl, rf_gallop_upper(r, xl + 1, nr, r, xl, k));
            i = ie;
            x = xl;
        }
    } else {
        size_t i = j->ls[p], i1 = j->ls[p + 1], x = j->rs[p], x1 = j->rs[p + 1];
        while (i < i1 && x < x1 && !s->failed) {
            int c = rf_rowcmp(l, i, r, x, k);
            if (c < 0) {
                i = rf_gallop_lower(l, i + 1, i1, r, x, k);
            } else if (c > 0) {
                x = rf_gallop_lower(r, x + 1, x1, l, i, k);
            } else {
                size_t ie = rf_gallop_upper(l, i + 1, i1, l, i, k);
                size_t xe = rf_gallop_upper(r, x + 1, x1, r, x, k);
                join_groups(s, i, ie, x, xe);
                i = ie;
                x = xe;
            }
        }
    }
    flush_pairs(s);
    for (int c = 0; c < s->ncols; c++)
        free(s->gbuf[c]);
    free(s->gbuf);
    free(s->rows[0]);
    free(s->rows[1]);
    free(s->used);
    free(s->li);
    rf_emitter_free(&s->em);
    free(s);
}

/* ---- JOIN of a small side by its matching key groups ---- */

static size_t *groups_at(rf_join_groups *g) { return g->heap ? g->heap : g->local; }

static void groups_push(rf_join_groups *g, size_t i, size_t ie, size_t x, size_t xe)
{
    if (g->n == g->cap) {
        size_t cap = 2 * g->cap;
        if (g->heap) {
            g->heap = rf_realloc(g->heap, cap * 4 * sizeof *g->heap);
        } else {
            g->heap = rf_malloc(cap * 4 * sizeof *g->heap);
            memcpy(g->heap, g->local, sizeof g->local);
        }
        g->cap = cap;
    }
    size_t *at = groups_at(g) + 4 * g->n++;
    at[0] = i;
    at[1] = ie;
    at[2] = x;
    at[3] = xe;
}

static void push_group(void *ctx, size_t i, size_t ie, size_t x, size_t xe)
{
    rf_join_groups *g = ctx;
    groups_push(g, i, ie, x, xe);
    g->rows += (ie - i) * (xe - x);
}

void rf_prim_join_groups(const rf_table *l, const rf_table *r, int nkeys, rf_join_groups *g)
{
    g->rows = g->n = 0;
    g->cap = RF_JOIN_GROUPS_LOCAL;
    g->heap = NULL;
    if (nkeys < 1) { /* a cross product: one group of everything */
        if (l->nrows && r->nrows)
            groups_push(g, 0, l->nrows, 0, r->nrows);
        g->rows = l->nrows * r->nrows;
        return;
    }
    walk_groups(l, r, nkeys, push_group, g);
}

void rf_prim_join_groups_write(const rf_table *l, const rf_table *r, const rf_join_groups *g, int nproj,
                               const int *projcol, rf_table *out)
{
    if (out->arity != nproj || (nproj > 0 && !out->cols)) {
        rf_table_free(out);
        rf_table_init(out, nproj);
    }
    out->nrows = 0;
    if (nproj == 0) {
        out->nrows = g->rows > 0;
        return;
    }
    rf_table_reserve(out, g->rows);
    int la = l->arity;
    const size_t *at = g->heap ? g->heap : g->local;
    size_t pos = 0;
    for (size_t q = 0; q < g->n; q++, at += 4) {
        size_t i = at[0], ie = at[1], x = at[2], xe = at[3];
        size_t n = (ie - i) * (xe - x);
        for (int c = 0; c < nproj; c++) {
            rf_word *dst = out->cols[c] + pos;
            if (projcol[c] < la) { /* each left row repeated over the right group */
                const rf_word *src = l->cols[projcol[c]];
                for (size_t a = i; a < ie; a++)
                    for (size_t b = x; b < xe; b++)
                        *dst++ = src[a];
            } else {
                const rf_word *src = r->cols[projcol[c] - la];
                for (size_t a = i; a < ie; a++)
                    for (size_t b = x; b < xe; b++)
                        *dst++ = src[b];
            }
        }
        pos += n;
    }
    out->nrows = pos;
}

void rf_join_groups_free(rf_join_groups *g)
{
    free(g->heap);
    g->heap = NULL;
    g->n = g->rows = 0;
}

bool rf_prim_join_by_groups(const rf_table *l, const rf_table *r, int nkeys)
{
    size_t small = l->nrows < r->nrows ? l->nrows : r->nrows;
    return nkeys > 0 && small <= RF_JOIN_GROUPS_LOCAL && rf_pieces_for(gallop_work(l->nrows, r->nrows), 2) == 1;
}

/* join_direct_serial's place in its output, for write_group. */
typedef struct direct_join {
    const rf_table *l, *r;
    int nproj;
    const int *projcol;
    rf_table *out;
    size_t pos;
} direct_join;

static void write_group(void *ctx, size_t i, size_t ie, size_t x, size_t xe)
{
    direct_join *d = ctx;
    int la = d->l->arity;
    for (size_t a = i; a < ie; a++)
        for (size_t b = x; b < xe; b++, d->pos++)
            for (int q = 0; q < d->nproj; q++)
                d->out->cols[q][d->pos] =
                    d->projcol[q] < la ? d->l->cols[d->projcol[q]][a] : d->r->cols[d->projcol[q] - la][b];
}

/* A join with no filter whose projections are plain columns, of `rows`
 * output rows (counted): one walk writing the projected columns straight
 * into out, without a piece's state (emitter, pair buffers), which for a
 * one-row delta costs more than the join itself. */
static void join_direct_serial(const rf_table *l, const rf_table *r, int k, int nproj, const int *projcol,
                               size_t rows, rf_table *out)
{
    rf_table_init(out, nproj);
    if (nproj == 0) {
        out->nrows = rows > 0;
        return;
    }
    rf_table_reserve(out, rows);
    direct_join d = {l, r, nproj, projcol, out, 0};
    walk_groups(l, r, k, write_group, &d);
    out->nrows = d.pos;
}

/* Tiny joins go the direct way when their projections allow. */
#define DIRECT_JOIN_MAX_PROJ 16

bool rf_prim_join(const rf_table *l, const rf_table *r, int nkeys, const rf_code *filter,
                  int nproj, const rf_code *proj, rf_table *out, rf_status *st)
{
    join_job j = {.l = l, .r = r, .nkeys = nkeys, .filter = filter, .proj = proj, .nproj = nproj};
    j.cross = nkeys == 0;
    size_t big = l->nrows > r->nrows ? l->nrows : r->nrows;
    if (j.cross)
        big = l->nrows * (r->nrows ? 1 : 0) * 4 > big ? l->nrows * 4 : big;
    j.pairs_hint = PAIRS;
    if (!j.cross && gallop_work(l->nrows, r->nrows) < big) {
        /* One side much smaller (a semi-naive delta): the walk is cheap,
         * so count the output first; only a big output is worth the pool
         * (and the pair buffers are sized to it). */
        /* A side of a few rows (a one-row delta): one search walk finds
         * the matching key groups, which give the count, and a direct
         * join writes its rows from them without searching again. Bigger
         * ones count in a walk and join in another (recording many groups
         * costs more than the second walk). */
        bool by_groups = rf_prim_join_by_groups(l, r, nkeys);
        rf_join_groups g;
        if (by_groups)
            rf_prim_join_groups(l, r, nkeys, &g);
        size_t rows = by_groups ? g.rows : join_count_serial(l, r, nkeys);
        big = gallop_work(l->nrows, r->nrows) + rows;
        j.pairs_hint = rows;
        int projcol[DIRECT_JOIN_MAX_PROJ];
        bool direct = (!filter || filter->n == 0) && nproj <= DIRECT_JOIN_MAX_PROJ && rf_pieces_for(big, 4) == 1;
        for (int q = 0; q < nproj && direct; q++)
            direct = (projcol[q] = rf_code_as_column(&proj[q])) >= 0;
        if (direct && by_groups) {
            rf_table_init(out, nproj);
            rf_prim_join_groups_write(l, r, &g, nproj, projcol, out);
        } else if (direct) {
            join_direct_serial(l, r, nkeys, nproj, projcol, rows, out);
        }
        if (by_groups)
            rf_join_groups_free(&g);
        if (direct)
            return true;
    }
    j.npieces = rf_codes_intern(filter, nproj, proj) ? 1 : rf_pieces_for(big, 4);
    if (j.cross && (size_t)j.npieces > l->nrows)
        j.npieces = l->nrows > 0 ? (int)l->nrows : 1;
    j.ls = rf_calloc((size_t)j.npieces + 1, sizeof *j.ls);
    j.rs = rf_calloc((size_t)j.npieces + 1, sizeof *j.rs);
    if (!j.cross)
        rf_split_key_ranges(l, r, nkeys, j.npieces, j.ls, j.rs);
    j.pieces = rf_calloc((size_t)j.npieces, sizeof *j.pieces);
    j.sts = rf_calloc((size_t)j.npieces, sizeof *j.sts);
    rf_par_for(j.npieces, join_piece, &j);
    free(j.ls);
    free(j.rs);
    return rf_pieces_finish(j.pieces, j.sts, j.npieces, out, st);
}

/* ---- UNION, DIFFERENCE, ANTIJOIN ---- */

enum { M_UNION, M_ANTI };

typedef struct merge_job {
    int mode, k, npieces;
    const rf_table *a, *b;
    size_t *as, *bs, *counts, *offs;
    rf_table *out;
    bool write;
} merge_job;

static inline void copy_rows(rf_table *out, size_t pos, const rf_table *t, size_t from, size_t n,
                             bool write)
{
    if (write && n)
        for (int c = 0; c < t->arity; c++)
            memcpy(out->cols[c] + pos, t->cols[c] + from, n * sizeof(rf_word));
}

static void merge_piece(void *ctx, int p)
{
    merge_job *j = ctx;
    const rf_table *a = j->a, *b = j->b;
    size_t i = j->as[p], i1 = j->as[p + 1], x = j->bs[p], x1 = j->bs[p + 1];
    size_t pos = j->offs[p], start = pos;
    int k = j->k;
    bool w = j->write;
    rf_table *out = j->out;
    if (j->mode == M_UNION) {
        while (i < i1 && x < x1) {
            int c = rf_rowcmp(a, i, b, x, k);
            if (c < 0) {
                size_t e = rf_gallop_lower(a, i + 1, i1, b, x, k);
                copy_rows(out, pos, a, i, e - i, w);
                pos += e - i;
                i = e;
            } else if (c > 0) {
                size_t e = rf_gallop_lower(b, x + 1, x1, a, i, k);
                copy_rows(out, pos, b, x, e - x, w);
                pos += e - x;
                x = e;
            } else {
                copy_rows(out, pos, a, i, 1, w);
                pos++;
                i++;
                x++;
            }
        }
        copy_rows(out, pos, a, i, i1 - i, w);
        pos += i1 - i;
        copy_rows(out, pos, b, x, x1 - x, w);
        pos += x1 - x;
    } else {
        while (i < i1) {
            if (x >= x1) {
                copy_rows(out, pos, a, i, i1 - i, w);
                pos += i1 - i;
                break;
            }
            int c = rf_rowcmp(a, i, b, x, k);
            if (c < 0) {
                size_t e = rf_gallop_lower(a, i + 1, i1, b, x, k);
                copy_rows(out, pos, a, i, e - i, w);
                pos += e - i;
                i = e;
            } else if (c > 0) {
                x = rf_gallop_lower(b, x + 1, x1, a, i, k);
            } else {
                i = rf_gallop_upper(a, i + 1, i1, b, x, k); /* the whole matching key group */
            }
        }
    }
    j->counts[p] = pos - start;
}

/* One pass: each piece writes at an offset that cannot overlap the next
 * piece's (its start in a, plus its start in b for a union, since a piece
 * never produces more than its inputs), then the pieces are closed up. With
 * no duplicates across the inputs (the semi-naive union) nothing moves. */
static void merge_op_to(int mode, const rf_table *a, const rf_table *b, int k, rf_table *out, bool reuse);

static void merge_op(int mode, const rf_table *a, const rf_table *b, int k, rf_table *out)
{
    rf_table_init(out, a->arity);
    merge_op_to(mode, a, b, k, out, false);
}

/* merge_op into out, an initialised table; reuse: its storage is kept
 * (remade if of another arity) and never shrunk, for callers that recycle
 * small tables. */
static void merge_op_to(int mode, const rf_table *a, const rf_table *b, int k, rf_table *out, bool reuse)
{
    if (out->arity != a->arity) {
        rf_table_free(out);
        rf_table_init(out, a->arity);
    }
    out->nrows = 0;
    if (k == 0) {
        /* Nullary union: {} or {()}. Keyless antijoin: a if b is empty. */
        if (mode == M_UNION)
            out->nrows = (a->nrows || b->nrows) ? 1 : 0;
        else if (b->nrows == 0)
            rf_table_copy(out, a);
        return;
    }
    merge_job j = {.mode = mode, .k = k, .a = a, .b = b, .out = out, .write = true};
    /* Work: a union copies both inputs; a difference copies a and
     * gallops through b (about a few probes per row of a when b is much
     * bigger), so a small a against a big b stays on one thread. */
    size_t work = a->nrows > b->nrows ? a->nrows : b->nrows;
    if (mode != M_UNION && a->nrows < b->nrows) /* a is copied; b is galloped over */
        work = gallop_work(a->nrows, b->nrows);
    j.npieces = rf_pieces_for(work, 2);
    /* A single piece (tiny inputs) needs no allocation for its bounds. */
    size_t one[6];
    bool single = j.npieces == 1;
    j.as = single ? one : rf_calloc((size_t)j.npieces + 1, sizeof *j.as);
    j.bs = single ? one + 2 : rf_calloc((size_t)j.npieces + 1, sizeof *j.bs);
    j.counts = single ? one + 4 : rf_calloc((size_t)j.npieces, sizeof *j.counts);
    j.offs = single ? one + 5 : rf_calloc((size_t)j.npieces, sizeof *j.offs);
    rf_split_key_ranges(a, b, k, j.npieces, j.as, j.bs);
    for (int p = 0; p < j.npieces; p++)
        j.offs[p] = j.as[p] + (mode == M_UNION ? j.bs[p] : 0);
    rf_table_resize(out, a->nrows + (mode == M_UNION ? b->nrows : 0));
    rf_table_advise(out);
    if (single)
        merge_piece(&j, 0);
    else
        rf_par_for(j.npieces, merge_piece, &j);
    size_t total = 0;
    for (int p = 0; p < j.npieces; p++) {
        if (j.offs[p] != total && j.counts[p])
            for (int c = 0; c < out->arity; c++)
                memmove(out->cols[c] + total, out->cols[c] + j.offs[p], j.counts[p] * sizeof(rf_word));
        total += j.counts[p];
    }
    out->nrows = total;
    if (total < out->cap / 2 && !reuse) { /* give back what duplicates did not use */
        for (int c = 0; c < out->arity; c++)
            out->cols[c] = rf_realloc(out->cols[c], (total ? total : 1) * sizeof(rf_word));
        out->cap = total ? total : 1;
    }
    if (!single) {
        free(j.as);
        free(j.bs);
        free(j.counts);
        free(j.offs);
    }
}

void rf_prim_union(const rf_table *a, const rf_table *b, rf_table *out)
{
    merge_op(M_UNION, a, b, a->arity, out);
}

void rf_prim_union_into(const rf_table *a, const rf_table *b, rf_table *out)
{
    merge_op_to(M_UNION, a, b, a->arity, out, true);
}

void rf_prim_difference(const rf_table *a, const rf_table *b, rf_table *out)
{
    merge_op(M_ANTI, a, b, a->arity, out);
}

bool rf_prim_join_probe(const rf_table *l, const rf_table *r, int nkeys, const rf_code *filter, int nproj,
                        const rf_code *proj, rf_table *out, rf_status *st)
{
    join_job j = {.l = l, .r = r, .nkeys = nkeys, .filter = filter, .proj = proj, .nproj = nproj, .probe = true};
    j.pairs_hint = PAIRS;
    j.npieces = rf_codes_intern(filter, nproj, proj) || nkeys < 1 ? 1 : rf_pieces_for(l->nrows, 4);
    j.pieces = rf_calloc((size_t)j.npieces, sizeof *j.pieces);
    j.sts = rf_calloc((size_t)j.npieces, sizeof *j.sts);
    if (nkeys < 1) {   /* (not a probe: every pair) */
        j.probe = false;
        j.cross = true;
    }
    rf_par_for(j.npieces, join_piece, &j);
    return rf_pieces_finish(j.pieces, j.sts, j.npieces, out, st);
}

void rf_prim_antijoin(const rf_table *l, const rf_table *r, int nkeys, rf_table *out)
{
    merge_op(M_ANTI, l, r, nkeys, out);
}

/* Rows of a left by probing: a is small against the runs, so each row is
 * looked up in each run by galloping from that run's cursor (a is
 * sorted, so the cursors only move forward): O(|a| * runs * log), no
 * pass over any run, one output allocation. */
static void antijoin_probe(const rf_table *a, const rf_table *const *runs, int nruns, int k, rf_table *out)
{
    size_t cursor_small[16], *cursor = nruns <= 16 ? cursor_small : rf_calloc((size_t)nruns, sizeof *cursor);
    for (int q = 0; q < nruns && nruns <= 16; q++)
        cursor[q] = 0;
    rf_table_reserve(out, a->nrows);
    size_t m = 0;
    for (size_t i = 0; i < a->nrows; i++) {
        bool found = false;
        for (int q = 0; q < nruns && !found; q++) {
            /* The cursor's row and the run's last row first: an LSM's runs
             * often cover disjoint ranges (a chain's reach), so most runs
             * are passed with one or two comparisons instead of a search. */
            const rf_table *t = runs[q];
            size_t n = t->nrows, cur = cursor[q];
            if (cur >= n)
                continue;
            int c = rf_rowcmp(t, cur, a, i, k);
            if (c > 0) /* rows before cur are below an earlier row of a: absent */
                continue;
            if (c < 0) {
                if (rf_rowcmp(t, n - 1, a, i, k) < 0) {
                    cursor[q] = n; /* past the run's end, and so are a's later rows */
                    continue;
                }
                cur = seek_lower(t, cur + 1, n, a, i, k, far_apart(n, a->nrows));
                cursor[q] = cur;
                found = cur < n && rf_rowcmp(t, cur, a, i, k) == 0;
            } else {
                found = true;
            }
        }
        if (found)
            continue;
        for (int c = 0; c < a->arity; c++)
            out->cols[c][m] = a->cols[c][i];
        m++;
    }
    out->nrows = m;
    if (cursor != cursor_small)
        free(cursor);
}

void rf_prim_antijoin_runs(const rf_table *a, const rf_table *const *runs, int nruns, int nkeys, rf_table *out)
{
    rf_table_init(out, a->arity);
    rf_prim_antijoin_runs_into(a, runs, nruns, nkeys, out);
}

void rf_prim_antijoin_runs_into(const rf_table *a, const rf_table *const *runs, int nruns, int nkeys, rf_table *out)
{
    size_t work = 0;
    for (int q = 0; q < nruns; q++)
        work += gallop_work(a->nrows, runs[q]->nrows);
    if (out->arity != a->arity) {
        rf_table_free(out);
        rf_table_init(out, a->arity);
    }
    out->nrows = 0;
    if (nkeys > 0 && rf_pieces_for(work, 2) == 1 && a->nrows <= RF_PAR_MIN_ROWS / 16) {
        antijoin_probe(a, runs, nruns, nkeys, out);
        return;
    }
    /* Big inputs: a merge pass per run (parallel), each over what the
     * previous runs left. */
    rf_table cur, nxt;
    rf_table_init(&cur, a->arity);
    rf_table_copy(&cur, a);
    for (int q = 0; q < nruns && cur.nrows > 0; q++) {
        merge_op(M_ANTI, &cur, runs[q], nkeys, &nxt);
        rf_table_free(&cur);
        cur = nxt;
    }
    rf_table_free(out);
    *out = cur;
}

/* ---- JOIN straight into a sorted set ---- */

/* Rows of the join of sorted l and r on their first k columns (sum over
 * equal key groups of the product of the group sizes), by key ranges. */
typedef struct jcount_job {
    const rf_table *l, *r;
    int k, npieces;
    size_t *ls, *rs, *counts;
} jcount_job;

static void jcount_piece(void *ctx, int p)
{
    jcount_job *j = ctx;
    const rf_table *l = j->l, *r = j->r;
    int k = j->k;
    size_t i = j->ls[p], i1 = j->ls[p + 1], x = j->rs[p], x1 = j->rs[p + 1], cnt = 0;
    while (i < i1 && x < x1) {
        int c = rf_rowcmp(l, i, r, x, k);
        if (c < 0) {
            i = rf_gallop_lower(l, i + 1, i1, r, x, k);
        } else if (c > 0) {
            x = rf_gallop_lower(r, x + 1, x1, l, i, k);
        } else {
            size_t ie = rf_gallop_upper(l, i + 1, i1, l, i, k);
            size_t xe = rf_gallop_upper(r, x + 1, x1, r, x, k);
            cnt += (ie - i) * (xe - x);
            i = ie;
            x = xe;
        }
    }
    j->counts[p] = cnt;
}

size_t rf_prim_join_count(const rf_table *l, const rf_table *r, int nkeys)
{
    if (nkeys == 0)
        return l->nrows * r->nrows;
    if (rf_pieces_for(gallop_work(l->nrows, r->nrows), 2) == 1)
        return join_count_serial(l, r, nkeys);
    jcount_job j = {.l = l, .r = r, .k = nkeys};
    j.npieces = rf_pieces_for(l->nrows > r->nrows ? l->nrows : r->nrows, 2);
    j.ls = rf_calloc((size_t)j.npieces + 1, sizeof *j.ls);
    j.rs = rf_calloc((size_t)j.npieces + 1, sizeof *j.rs);
    j.counts = rf_calloc((size_t)j.npieces, sizeof *j.counts);
    rf_split_key_ranges(l, r, nkeys, j.npieces, j.ls, j.rs);
    rf_par_for(j.npieces, jcount_piece, &j);
    size_t total = 0;
    for (int p = 0; p < j.npieces; p++)
        total += j.counts[p];
    free(j.ls);
    free(j.rs);
    free(j.counts);
    return total;
}

typedef struct jdense_job {
    const rf_table *l, *r;
    int k, nproj, npieces;
    const int *projcol;
    size_t *ls, *rs;
    uint64_t **bitmaps;      /* one per piece (piece 0: the result's) */
    const rf_word *min;
    const int *shift;
} jdense_job;

static void jdense_piece(void *ctx, int p)
{
    jdense_job *j = ctx;
    const rf_table *l = j->l, *r = j->r;
    int k = j->k, la = l->arity, np = j->nproj;
    uint64_t *w = j->bitmaps[p];
    size_t i = j->ls[p], i1 = j->ls[p + 1], x = j->rs[p], x1 = j->rs[p + 1];
    while (i < i1 && x < x1) {
        int c = rf_rowcmp(l, i, r, x, k);
        if (c < 0) {
            i = rf_gallop_lower(l, i + 1, i1, r, x, k);
        } else if (c > 0) {
            x = rf_gallop_lower(r, x + 1, x1, l, i, k);
        } else {
            size_t ie = rf_gallop_upper(l, i + 1, i1, l, i, k);
            size_t xe = rf_gallop_upper(r, x + 1, x1, r, x, k);
            for (size_t a = i; a < ie; a++) {
                /* The left row's share of the key is fixed over the group. */
                uint64_t base = 0;
                for (int q = 0; q < np; q++)
                    if (j->projcol[q] < la)
                        base |= (l->cols[j->projcol[q]][a] - j->min[q]) << j->shift[q];
                for (size_t b = x; b < xe; b++) {
                    uint64_t key = base;
                    for (int q = 0; q < np; q++)
                        if (j->projcol[q] >= la)
                            key |= (r->cols[j->projcol[q] - la][b] - j->min[q]) << j->shift[q];
                    w[key >> 6] |= (uint64_t)1 << (key & 63);
                }
            }
            i = ie;
            x = xe;
        }
    }
}

typedef struct or_job {
    uint64_t **bitmaps;
    int nmaps, npieces;
    size_t nwords;
} or_job;

static void or_piece(void *ctx, int p)
{
    or_job *j = ctx;
    size_t b = j->nwords * (size_t)p / (size_t)j->npieces, e = j->nwords * (size_t)(p + 1) / (size_t)j->npieces;
    uint64_t *dst = j->bitmaps[0];
    for (int m = 1; m < j->nmaps; m++)
        for (size_t i = b; i < e; i++)
            dst[i] |= j->bitmaps[m][i];
}

bool rf_prim_join_sort_dense(const rf_table *l, const rf_table *r, int nkeys, int nproj,
                             const int *projcol, size_t join_rows, rf_table *out)
{
    if (nkeys < 1 || nproj < 1 || join_rows == 0)
        return false;
    int la = l->arity;
    rf_word *min = rf_calloc((size_t)nproj, sizeof *min);
    int *width = rf_calloc((size_t)nproj, sizeof *width), *shift = rf_calloc((size_t)nproj, sizeof *shift);
    int bits = 0;
    /* Each output column spans (at most) its source column's range. */
    for (int q = nproj - 1; q >= 0; q--) {
        const rf_table *t = projcol[q] < la ? l : r;
        const rf_word *col = t->cols[projcol[q] < la ? projcol[q] : projcol[q] - la];
        rf_word lo = col[0], hi = col[0];
        for (size_t i = 1; i < t->nrows; i++) {
            lo = col[i] < lo ? col[i] : lo;
            hi = col[i] > hi ? col[i] : hi;
        }
        min[q] = lo;
        width[q] = hi - lo ? 64 - __builtin_clzll(hi - lo) : 0;
        shift[q] = bits;
        bits += width[q];
    }
    bool dense = bits <= RF_DENSE_MAX_BITS && ((size_t)1 << bits) <= 64 * join_rows;
    if (dense) {
        rf_dense *d = rf_dense_new_layout(nproj, min, width);
        jdense_job j = {.l = l, .r = r, .k = nkeys, .nproj = nproj, .projcol = projcol,
                        .min = min, .shift = shift};
        /* One bitmap per piece, ORed at the end: plain stores, no sharing.
         * Extra bitmaps only while they cost less than the join output
         * they replace (16+ bytes a row). */
        size_t bytes = rf_dense_bytes(d);
        j.npieces = rf_pieces_for(l->nrows > r->nrows ? l->nrows : r->nrows, 1);
        while (j.npieces > 1 && (size_t)j.npieces * bytes > 8 * join_rows)
            j.npieces--;
        j.ls = rf_calloc((size_t)j.npieces + 1, sizeof *j.ls);
        j.rs = rf_calloc((size_t)j.npieces + 1, sizeof *j.rs);
        j.bitmaps = rf_calloc((size_t)j.npieces, sizeof *j.bitmaps);
        rf_split_key_ranges(l, r, nkeys, j.npieces, j.ls, j.rs);
        j.bitmaps[0] = rf_dense_words(d);
        for (int p = 1; p < j.npieces; p++) {
            j.bitmaps[p] = rf_calloc(bytes / sizeof(uint64_t), sizeof(uint64_t));
            rf_advise_huge(j.bitmaps[p], bytes);
        }
        rf_par_for(j.npieces, jdense_piece, &j);
        if (j.npieces > 1) {
            or_job o = {.bitmaps = j.bitmaps, .nmaps = j.npieces, .nwords = bytes / sizeof(uint64_t)};
            o.npieces = rf_pieces_for(o.nwords, 1);
            rf_par_for(o.npieces, or_piece, &o);
        }
        for (int p = 1; p < j.npieces; p++)
            free(j.bitmaps[p]);
        rf_dense_to_table(d, out);
        rf_dense_free(d);
        free(j.ls);
        free(j.rs);
        free(j.bitmaps);
    }
    free(min);
    free(width);
    free(shift);
    return dense;
}
