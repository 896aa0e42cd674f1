/* The size of an equi-join without making it, on the device: --join=auto's
 * run-time statistic (rf_cuda_join_size; the kernels and the method are in
 * joinsize.cu, the reference is rf_prim_join_size): exact up to
 * RF_JS_SAMPLE_ROWS rows on the larger side, estimated from a sample of
 * them beyond. Only the answer, one word, crosses to the host. */
#include "cuda_internal.h"
#include "joinsize.h"
#include "../rf_prims.h"

#include <stdlib.h>
#include <string.h>

static rf_js_side side_of(const rf_drel *t, const int *keys, int nkeys)
{
    rf_js_side s;
    memset(&s, 0, sizeof s);
    s.nkeys = nkeys < RF_JS_MAX_KEYS ? nkeys : RF_JS_MAX_KEYS;   /* more: a coarser key, a larger count */
    s.n = t->nrows;
    for (int k = 0; k < s.nkeys; k++)
        s.cols[k] = t->data + (size_t)keys[k] * t->cap;
    return s;
}

bool rf_cuda_join_size(rf_cuda_ctx *c, const rf_drel *l, const int *lkeys, const rf_drel *r, const int *rkeys,
                       int nkeys, uint64_t *rows, rf_status *st)
{
    *rows = 0;
    if (l->nrows == 0 || r->nrows == 0)
        return true;
    if (nkeys <= 0) {
        *rows = l->nrows > UINT64_MAX / r->nrows ? UINT64_MAX : (uint64_t)l->nrows * r->nrows;
        return true;
    }
    /* Larger inputs: a sample of the larger side's rows against the whole
     * smaller side, one kernel and one word back (the exact count builds a
     * table of the smaller side: a memset of it, two passes of atomics, 2.3
     * ms on 10^7 rows on the H200). The choice it feeds compares the growth
     * J / N with a threshold that the two plans' times cross slowly, so a
     * few per cent of sampling error cannot matter there. The sample is
     * every (n / m)-th row: the rows are mostly sorted, so it is spread
     * over the key range. RF_GPU_JOIN_SIZE=exact (tests) counts exactly. */
    size_t big = l->nrows > r->nrows ? l->nrows : r->nrows;
    const char *how = getenv("RF_GPU_JOIN_SIZE");
    if (big > RF_JS_SAMPLE_ROWS && !(how && strcmp(how, "exact") == 0)) {
        const rf_drel *sampled = l->nrows >= r->nrows ? l : r, *probe = sampled == l ? r : l;
        const int *skeys = sampled == l ? lkeys : rkeys, *pkeys = sampled == l ? rkeys : lkeys;
        uint64_t m = RF_JS_SAMPLE_ROWS, stride = sampled->nrows / m;
        unsigned long long *total = rf_cuda_scratch(c, sizeof *total, st), sum = 0;
        int sms = 0;
        if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, c->device) != cudaSuccess || sms <= 0) {
            (void)cudaGetLastError();
            sms = 16;
        }
        if (!total ||
            !rf_cuda_check(c, cudaMemsetAsync(total, 0, sizeof *total, c->stream), "join size sample", st) ||
            !rf_cuda_check(c, rf_k_js_sample(c->stream, side_of(sampled, skeys, nkeys), m, stride,
                                             side_of(probe, pkeys, nkeys), total, (unsigned)sms * 4),
                           "join size sample", st) ||
            !rf_cuda_read_back(c, total, &sum, sizeof sum, st))
            return false;
        double est = (double)sum * ((double)sampled->nrows / (double)m);
        *rows = est >= 1.8e19 ? UINT64_MAX : (uint64_t)(est + 0.5);
        return true;
    }
    if (l->nrows > r->nrows) {   /* the table holds the smaller side */
        const rf_drel *t = l;
        l = r;
        r = t;
        const int *k = lkeys;
        lkeys = rkeys;
        rkeys = k;
    }
    size_t cap = 16;
    while (cap < 2 * l->nrows)
        cap *= 2;
    /* keys[cap], counts[cap + 1] (the last for the key ~0), the total */
    size_t bytes = (2 * cap + 2) * sizeof(unsigned long long);
    unsigned long long *mem = rf_cuda_alloc(c, bytes, "join size count (--join=auto)", st);
    if (!mem)
        return false;
    unsigned long long *keys = mem, *counts = mem + cap, *total = mem + 2 * cap + 1;
    unsigned long long sum = 0;
    bool ok = rf_cuda_check(c, cudaMemsetAsync(keys, 0xff, cap * sizeof *keys, c->stream), "join size count", st) &&
              rf_cuda_check(c, cudaMemsetAsync(counts, 0, (cap + 2) * sizeof *counts, c->stream), "join size count",
                            st) &&
              rf_cuda_check(c, rf_k_js_count(c->stream, side_of(l, lkeys, nkeys), keys, counts, cap - 1),
                            "join size count", st) &&
              rf_cuda_check(c, rf_k_js_probe(c->stream, side_of(r, rkeys, nkeys), keys, counts, cap - 1, total),
                            "join size count", st) &&
              rf_cuda_read_back(c, total, &sum, sizeof sum, st);
    rf_cuda_free(c, mem, bytes);
    if (ok)
        *rows = sum;
    return ok;
}

/* Multiway joins' last levels estimated on the device (the reference and
 * the method: rf_prim_order_cost, ordercost.c; the kernels: joinsize.cu):
 * the same sampled rows and exact counts of their keys, so the same
 * numbers. A list on an input's first column (sorted) is searched, not
 * scanned; two lists on one column are counted in one pass; the n
 * estimates' words cross to the host together. */
bool rf_cuda_order_costs(rf_cuda_ctx *c, int n, const rf_order_query *q, double *costs, rf_status *st)
{
    uint64_t slots = 16;
    for (int k = 0; k < n; k++) {
        costs[k] = 0;
        while (slots < 2 * rf_order_sample_rows(q[k].pairs->nrows))
            slots *= 2;
    }
    size_t per = 4 * slots + 2, bytes = ((size_t)n * per + (size_t)n) * sizeof(unsigned long long);
    unsigned long long *mem = rf_cuda_alloc(c, bytes, "variable order estimate (multiway join)", st);
    if (!mem)
        return false;
    unsigned long long *totals = mem + (size_t)n * per, sums[RF_ORDER_QUERIES_MAX] = {0};
    bool ok = n <= RF_ORDER_QUERIES_MAX &&
              rf_cuda_check(c, cudaMemsetAsync(totals, 0, (size_t)n * sizeof *totals, c->stream), "order estimate", st);
    for (int k = 0; k < n && ok; k++) {
        unsigned long long *m0 = mem + (size_t)k * per;
        const rf_drel *pr = q[k].pairs, *lp = q[k].list_p, *lq = q[k].list_q;
        rf_oc_query oq = {
            {pr->data + (size_t)q[k].pairs_p * pr->cap, pr->nrows, false},
            {pr->data + (size_t)q[k].pairs_q * pr->cap, pr->nrows, false},
            {lp->data + (size_t)q[k].list_p_col * lp->cap, lp->nrows, q[k].list_p_col == 0},
            {lq->data + (size_t)q[k].list_q_col * lq->cap, lq->nrows, q[k].list_q_col == 0},
        };
        ok = rf_cuda_check(c, cudaMemsetAsync(m0, 0xff, 2 * slots * sizeof *m0, c->stream), "order estimate", st) &&
             rf_cuda_check(c, cudaMemsetAsync(m0 + 2 * slots, 0, (2 * slots + 2) * sizeof *m0, c->stream),
                           "order estimate", st) &&
             rf_cuda_check(c, rf_k_oc_estimate(c->stream, oq, rf_order_sample_rows(pr->nrows), m0, slots - 1,
                                               &totals[k]),
                           "order estimate", st);
    }
    ok = ok && rf_cuda_read_back(c, totals, sums, (size_t)n * sizeof *totals, st);
    rf_cuda_free(c, mem, bytes);
    for (int k = 0; ok && k < n; k++)
        costs[k] = rf_order_cost_scaled(sums[k], rf_order_sample_rows(q[k].pairs->nrows), q[k].pairs->nrows);
    return ok;
}
