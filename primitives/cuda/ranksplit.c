/* Moving rows between ranks on the device (runtime/gpu/backend_gpu.c's
 * move_rows, for the distribution layer): a relation's rows regrouped by
 * the rank each goes to (rf_cuda_rank_split; kernels in ranksplit.cu),
 * and sections of rows laid end to end into a relation
 * (rf_cuda_concat_sections). Only the per-block counts cross to the host. */
#include "ranksplit.h"

#include <stdlib.h>
#include <string.h>

/* Blocks of a split: a few per SM, each taking whole tiles of rows. */
static unsigned split_blocks(rf_cuda_ctx *c, size_t n, uint64_t *chunk)
{
    int sms = 0;
    if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, c->device) != cudaSuccess || sms <= 0) {
        (void)cudaGetLastError();
        sms = 16;
    }
    const uint64_t tile = 256;
    uint64_t tiles = (n + tile - 1) / tile, nb = (uint64_t)sms * 4;
    if (nb > tiles)
        nb = tiles ? tiles : 1;
    *chunk = (tiles + nb - 1) / nb * tile;
    return (unsigned)((n + *chunk - 1) / *chunk);
}

bool rf_cuda_rank_split(rf_cuda_ctx *c, const rf_drel *r, int nkeys, const int *cols, int size, uint64_t *packed,
                        size_t *rows, rf_status *st)
{
    memset(rows, 0, (size_t)size * sizeof *rows);
    bool cols_ok = true;
    for (int k = 0; cols && k < nkeys && k < RF_CUDA_MAX_COLS; k++)
        cols_ok = cols_ok && cols[k] >= 0 && cols[k] < r->arity;
    if (size < 1 || size > RF_CUDA_MAX_RANKS || nkeys < 0 || nkeys > r->arity || nkeys > RF_CUDA_MAX_COLS ||
        r->arity < 1 || !cols_ok)
        return rf_fail(st, RF_EXIT_RUNTIME_ERROR, "internal error: rank split of %d ranks on %d of %d columns", size,
                       nkeys, r->arity);
    if (r->nrows == 0)
        return true;
    rf_rs_shape sh;
    memset(&sh, 0, sizeof sh);
    sh.cols = rf_cols_of(r);
    sh.keys = sh.cols;
    for (int k = 0; cols && k < nkeys; k++)
        sh.keys.c[k] = sh.cols.c[cols[k]];
    sh.arity = r->arity;
    sh.nkeys = nkeys;
    sh.size = size;
    sh.n = r->nrows;
    unsigned nb = split_blocks(c, r->nrows, &sh.chunk);
    size_t nmeta = (size_t)nb * (size_t)size + 2 * (size_t)size;
    unsigned long long *meta = rf_cuda_alloc(c, nmeta * sizeof *meta, "rows moving between ranks", st);
    unsigned long long *host = malloc(nmeta * sizeof *host);
    bool ok = meta && host &&
              rf_cuda_check(c, rf_k_rs_count(c->stream, sh, nb, meta), "rank split count", st) &&
              rf_cuda_read_back(c, meta, host, (size_t)nb * (size_t)size * sizeof *host, st);
    if (ok) {
        /* base: each block's first row within its rank's section; then
         * rows and start per rank */
        unsigned long long *total = host + (size_t)nb * size, *start = total + size;
        for (int d = 0; d < size; d++) {
            unsigned long long at = 0;
            for (unsigned b = 0; b < nb; b++) {
                unsigned long long k = host[(size_t)b * size + d];
                host[(size_t)b * size + d] = at;
                at += k;
            }
            total[d] = at;
            start[d] = d ? start[d - 1] + total[d - 1] : 0;
            rows[d] = (size_t)at;
        }
        ok = rf_cuda_check(c, cudaMemcpyAsync(meta, host, nmeta * sizeof *host, cudaMemcpyHostToDevice, c->stream),
                           "rank split offsets", st) &&
             rf_cuda_check(c, rf_k_rs_scatter(c->stream, sh, nb, meta, packed), "rank split", st);
    }
    if (meta)
        rf_cuda_free(c, meta, nmeta * sizeof *meta);
    if (!host)
        ok = ok && rf_fail(st, RF_EXIT_OUT_OF_MEMORY, "out of host memory for a rank split");
    free(host);
    return ok;
}

bool rf_cuda_concat_sections(rf_cuda_ctx *c, int n, const rf_row_section *sec, rf_drel *out, const char *what,
                             rf_status *st)
{
    size_t total = 0;
    for (int s = 0; s < n; s++)
        total += sec[s].rows;
    if (!rf_drel_alloc(c, out, total, what, st))
        return false;
    size_t at = 0;
    for (int s = 0; s < n; s++) {
        for (int col = 0; col < out->arity && sec[s].rows; col++)
            if (!rf_cuda_check(c, cudaMemcpyAsync(out->data + (size_t)col * out->cap + at,
                                                  sec[s].data + (size_t)col * sec[s].stride,
                                                  sec[s].rows * sizeof(rf_word), cudaMemcpyDeviceToDevice, c->stream),
                               what, st))
                return false;
        at += sec[s].rows;
    }
    return true;
}

bool rf_cuda_pack_rows(rf_cuda_ctx *c, const rf_drel *r, uint64_t *packed, rf_status *st)
{
    for (int col = 0; col < r->arity && r->nrows; col++)
        if (!rf_cuda_check(c, cudaMemcpyAsync(packed + (size_t)col * r->nrows, r->data + (size_t)col * r->cap,
                                              r->nrows * sizeof(rf_word), cudaMemcpyDeviceToDevice, c->stream),
                           "rows moving between ranks", st))
            return false;
    return true;
}
