/* A multiway join's variable order chosen at run time (hir.h, alt_order):
 * the estimate of each order's last level and the choice between them.
 * Both backends take the same rows of the {p, q} input as the sample and
 * count exactly how many rows of each list input hold the sampled keys, so
 * their estimates, and so their choices, are the same (the GPU's is
 * rf_cuda_order_cost, joinsize.cu). */
#include "prims_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

uint64_t rf_order_sample_rows(uint64_t nrows)
{
    return nrows < RF_ORDER_SAMPLES ? nrows : RF_ORDER_SAMPLES;
}

uint64_t rf_order_sample_row(uint64_t i, uint64_t m, uint64_t nrows)
{
    /* row floor(i x n / m): spread over the sorted input, so over its
     * keys (i < m <= RF_ORDER_SAMPLES: no term overflows) */
    return i * (nrows / m) + i * (nrows % m) / m;
}

static int cmp_word(const void *a, const void *b)
{
    rf_word x = *(const rf_word *)a, y = *(const rf_word *)b;
    return x < y ? -1 : x > y;
}

/* The first position of sorted a[0..n) whose value is >= key (upper:
 * > key). */
static size_t bound(const rf_word *a, size_t n, rf_word key, bool upper)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (a[mid] < key || (upper && a[mid] == key))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Position of key in the sorted distinct keys[0..n), or -1. */
static long find_key(const rf_word *keys, size_t n, rf_word key)
{
    size_t at = bound(keys, n, key, false);
    return at < n && keys[at] == key ? (long)at : -1;
}

typedef struct count_job {
    const rf_word *col;
    size_t n;
    const rf_word *keys;
    size_t nkeys;
    uint64_t *counts;        /* [pieces][nkeys] */
    int pieces;
} count_job;

static void count_piece(void *ctx, int piece)
{
    count_job *j = ctx;
    size_t from = j->n * (size_t)piece / (size_t)j->pieces, to = j->n * ((size_t)piece + 1) / (size_t)j->pieces;
    uint64_t *c = j->counts + (size_t)piece * j->nkeys;
    for (size_t i = from; i < to; i++) {
        long at = find_key(j->keys, j->nkeys, j->col[i]);
        if (at >= 0)
            c[at]++;
    }
}

/* counts[k] := rows of column col of t holding keys[k] (sorted, distinct).
 * Column 0 of a sorted input is sorted: two binary searches a key; any
 * other column is scanned. */
static void count_keys(const rf_table *t, int col, const rf_word *keys, size_t nkeys, uint64_t *counts)
{
    memset(counts, 0, nkeys * sizeof *counts);
    if (t->nrows == 0 || nkeys == 0)
        return;
    const rf_word *c = t->cols[col];
    if (col == 0) {
        for (size_t k = 0; k < nkeys; k++)
            counts[k] = bound(c, t->nrows, keys[k], true) - bound(c, t->nrows, keys[k], false);
        return;
    }
    int pieces = rf_prims_threads() * 4;
    if ((size_t)pieces > t->nrows / 4096 + 1)
        pieces = (int)(t->nrows / 4096 + 1);
    count_job j = {c, t->nrows, keys, nkeys, rf_calloc((size_t)pieces * nkeys, sizeof(uint64_t)), pieces};
    rf_par_for(pieces, count_piece, &j);
    for (int p = 0; p < pieces; p++)
        for (size_t k = 0; k < nkeys; k++)
            counts[k] += j.counts[(size_t)p * nkeys + k];
    free(j.counts);
}

/* The sampled keys of column col of pairs, sorted and distinct. */
static rf_word *sample_keys(const rf_table *pairs, int col, uint64_t m, size_t *n)
{
    rf_word *k = rf_malloc((size_t)(m ? m : 1) * sizeof *k);
    for (uint64_t i = 0; i < m; i++)
        k[i] = pairs->cols[col][rf_order_sample_row(i, m, pairs->nrows)];
    qsort(k, (size_t)m, sizeof *k, cmp_word);
    size_t d = 0;
    for (uint64_t i = 0; i < m; i++)
        if (d == 0 || k[d - 1] != k[i])
            k[d++] = k[i];
    *n = d;
    return k;
}

double rf_prim_order_cost(const rf_table *pairs, int pairs_p, int pairs_q, const rf_table *list_p, int list_p_col,
                          const rf_table *list_q, int list_q_col)
{
    uint64_t m = rf_order_sample_rows(pairs->nrows);
    if (m == 0)
        return 0;
    size_t np, nq;
    rf_word *kp = sample_keys(pairs, pairs_p, m, &np), *kq = sample_keys(pairs, pairs_q, m, &nq);
    uint64_t *cp = rf_malloc(np * sizeof *cp), *cq = rf_malloc(nq * sizeof *cq);
    count_keys(list_p, list_p_col, kp, np, cp);
    count_keys(list_q, list_q_col, kq, nq, cq);
    uint64_t sum = 0;
    for (uint64_t i = 0; i < m; i++) {
        uint64_t r = rf_order_sample_row(i, m, pairs->nrows);
        uint64_t a = cp[find_key(kp, np, pairs->cols[pairs_p][r])];
        uint64_t b = cq[find_key(kq, nq, pairs->cols[pairs_q][r])];
        sum += a < b ? a : b;
    }
    free(kp);
    free(kq);
    free(cp);
    free(cq);
    return rf_order_cost_scaled(sum, m, pairs->nrows);
}

double rf_order_cost_scaled(uint64_t sampled_sum, uint64_t m, uint64_t nrows)
{
    return m == 0 ? 0 : (double)sampled_sum * ((double)nrows / (double)m);
}

double rf_order_margin(void)
{
    const char *env = getenv("RF_WCOJ_ORDER_MARGIN");
    if (env && *env) {
        char *end;
        double v = strtod(env, &end);
        if (*end == '\0' && v >= 0)
            return v;
    }
    return RF_ORDER_MARGIN;
}

bool rf_order_take_alt(double planned, double alt)
{
    const char *force = getenv("RF_WCOJ_ORDER");
    if (force && strcmp(force, "planned") == 0)
        return false;
    if (force && strcmp(force, "alt") == 0)
        return true;
    return alt < rf_order_margin() * planned;
}

bool rf_prim_order_estimates(int nin, const rf_table *const *ins, const int *in_first, const int *in_vars, int nvars,
                             const int *alt_order, double *planned, double *alt)
{
    rf_mj_last a, z;
    if (!rf_mj_last_level(nin, in_first, in_vars, nvars, NULL, &a) ||
        !rf_mj_last_level(nin, in_first, in_vars, nvars, alt_order, &z))
        return false;
    *planned = rf_prim_order_cost(ins[a.pairs], a.pairs_p, a.pairs_q, ins[a.list_p], a.list_p_col, ins[a.list_q],
                                  a.list_q_col);
    *alt = rf_prim_order_cost(ins[z.pairs], z.pairs_p, z.pairs_q, ins[z.list_p], z.list_p_col, ins[z.list_q],
                              z.list_q_col);
    return true;
}

void rf_mj_recode_make(rf_mj_recode *r, int nin, const int *in_first, const int *in_vars, int nvars,
                       const int *alt_order, const rf_code *filter, int nproj, const rf_code *proj)
{
    memset(r, 0, sizeof *r);
    int newnum[RF_MULTIJOIN_MAX_VARS];
    rf_mj_reorder(nin, in_first, in_vars, nvars, alt_order, newnum, r->col_perm, r->in_vars);
    if (filter)
        rf_code_copy_mapped(&r->filter, filter, newnum);
    r->nproj = nproj;
    r->proj = nproj > 0 ? rf_calloc((size_t)nproj, sizeof *r->proj) : NULL;
    for (int i = 0; i < nproj; i++)
        rf_code_copy_mapped(&r->proj[i], &proj[i], newnum);
}

void rf_mj_recode_free(rf_mj_recode *r)
{
    rf_code_free(&r->filter);
    for (int i = 0; i < r->nproj && r->proj; i++)
        rf_code_free(&r->proj[i]);
    free(r->proj);
    memset(r, 0, sizeof *r);
}

bool rf_mj_recode_shared(const rf_mj_recode *r, const int *in_first, const void *const *ins, int i, int *j)
{
    const int *perm = r->col_perm + in_first[i];
    int a = in_first[i + 1] - in_first[i];
    for (*j = 0; *j < i; (*j)++)
        if (ins[*j] == ins[i] && memcmp(r->col_perm + in_first[*j], perm, (size_t)a * sizeof *perm) == 0)
            return true;
    *j = -1;
    for (int k = 0; k < a; k++)
        if (perm[k] != k)
            return false;
    return true;
}

void rf_mj_alt_free(rf_mj_alt *r)
{
    for (int i = 0; i < r->nin; i++)
        if (r->owned[i])
            rf_table_free(&r->tabs[i]);
    rf_mj_recode_free(&r->rc);
    memset(r, 0, sizeof *r);
}

void rf_mj_alt_make(rf_mj_alt *r, int nin, const rf_table *const *ins, const int *in_first, const int *in_vars,
                    int nvars, const int *alt_order, const rf_code *filter, int nproj, const rf_code *proj)
{
    memset(r, 0, sizeof *r);
    r->nin = nin;
    rf_mj_recode_make(&r->rc, nin, in_first, in_vars, nvars, alt_order, filter, nproj, proj);
    for (int i = 0; i < nin; i++) {
        int j;
        if (rf_mj_recode_shared(&r->rc, in_first, (const void *const *)ins, i, &j)) {
            r->in[i] = j >= 0 ? r->in[j] : ins[i];
            continue;
        }
        const int *perm = r->rc.col_perm + in_first[i];
        int a = in_first[i + 1] - in_first[i];
        rf_table t;   /* input i's columns in the new order, borrowed for the sort (which copies) */
        rf_table_init(&t, a);
        for (int k = 0; k < a; k++)
            t.cols[k] = ins[i]->cols[perm[k]];
        t.nrows = t.cap = ins[i]->nrows;
        rf_prim_sort(&t, &r->tabs[i]);
        for (int k = 0; k < a; k++)
            t.cols[k] = NULL;
        t.nrows = t.cap = 0;
        rf_table_free(&t);
        r->owned[i] = true;
        r->in[i] = &r->tabs[i];
    }
}

void rf_order_trace(const char *join, double planned, double alt, bool take_alt)
{
    if (getenv("RF_WCOJ_ORDER_TRACE"))
        fprintf(stderr, "redfox: multiway join %s: last level ~%.4g tests in the planned order, ~%.4g in the second; %s\n",
                join ? join : "?", planned, alt, take_alt ? "the second runs" : "the planned one runs");
}
