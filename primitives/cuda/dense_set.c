/* Dense sets on the device (rf_cuda_prims.h): planning a frame, building,
 * probing, inserting into a copy, expanding back into sorted rows. The
 * kernels are in dense_set.cu. Each operation synchronises once, to read
 * the count that sizes its output or tells whether rows fell outside. */
#include "cuda_internal.h"

#include <stdlib.h>
#include <string.h>

#define CK(call, where)                                                                 \
    do {                                                                                \
        if (!rf_cuda_check(c, (call), (where), st))                                     \
            goto fail;                                                                  \
    } while (0)

static int bit_width(uint64_t v)
{
    int b = 0;
    while (v) {
        b++;
        v >>= 1;
    }
    return b;
}

void rf_dset_init(rf_dset *s)
{
    memset(s, 0, sizeof *s);
    s->total_bits = -1;
}

void rf_dset_free(rf_cuda_ctx *c, rf_dset *s)
{
    if (s->words)
        rf_cuda_free(c, s->words, s->nwords * 8);
    s->words = NULL;
    s->nwords = 0;
    s->nrows = 0;
}

size_t rf_dset_bytes(const rf_dset *s)
{
    if (s->total_bits < 0)
        return 0;
    return s->total_bits <= 6 ? 8 : ((size_t)1 << (s->total_bits - 6)) * 8;
}

static rf_dframe frame_of(const rf_dset *s)
{
    rf_dframe f;
    memset(&f, 0, sizeof f);
    f.ncols = s->arity;
    int shift = 0;
    for (int j = s->arity - 1; j >= 0; j--) {
        f.shift[j] = shift;
        f.lo[j] = s->lo[j];
        f.mask[j] = s->bits[j] ? (~(uint64_t)0 >> (64 - s->bits[j])) : 0;
        shift += s->bits[j];
    }
    return f;
}

bool rf_dset_plan(rf_cuda_ctx *c, const rf_drel *a, const rf_drel *b, int max_bits, rf_dset *s,
                  bool *fits, rf_status *st)
{
    rf_dset_init(s);
    *fits = false;
    int ar = a->arity;
    if (ar < 1 || ar > RF_CUDA_MAX_COLS || (b && b->arity != ar) || (a->nrows == 0 && (!b || b->nrows == 0)))
        return true;
    uint64_t host[2 * RF_CUDA_MAX_COLS];
    uint64_t *mm = rf_cuda_alloc(c, (size_t)ar * 16, "dense-set frame", st);
    if (!mm)
        return false;
    CK(rf_k_fill(c->stream, mm, (size_t)ar, ~(uint64_t)0), "dense-set frame");
    CK(cudaMemsetAsync(mm + ar, 0, (size_t)ar * 8, c->stream), "dense-set frame");
    CK(rf_k_col_minmax(c->stream, rf_cols_of(a), ar, a->nrows, mm), "dense-set frame");
    if (b)
        CK(rf_k_col_minmax(c->stream, rf_cols_of(b), ar, b->nrows, mm), "dense-set frame");
    if (!rf_cuda_read_back(c, mm, host, (size_t)ar * 16, st))
        goto fail;
    rf_cuda_free(c, mm, (size_t)ar * 16);
    s->arity = ar;
    int total = 0;
    for (int j = 0; j < ar; j++) {
        uint64_t lo = host[j], hi = host[ar + j];
        int bits = bit_width(hi - lo);
        /* Anchoring at 0 costs nothing when the range already needs as
         * many bits as the largest value, and leaves room below. */
        if (bit_width(hi) == bits)
            lo = 0;
        s->lo[j] = lo;
        s->bits[j] = bits;
        total += bits;
    }
    if (total > max_bits)
        return true;
    s->total_bits = total;
    *fits = true;
    return true;
fail:
    rf_cuda_free(c, mm, (size_t)ar * 16);
    return false;
}

/* Inserts b's rows into words; returns false on a CUDA error. */
static bool insert_rows(rf_cuda_ctx *c, const rf_dset *s, uint64_t *words, const rf_drel *b, uint64_t counts[2],
                        rf_status *st)
{
    counts[0] = counts[1] = 0;
    if (b->nrows == 0)
        return true;
    uint64_t *ctr = rf_cuda_alloc(c, 16, "dense-set counters", st);
    if (!ctr)
        return false;
    CK(cudaMemsetAsync(ctr, 0, 16, c->stream), "dense-set insert");
    CK(rf_k_dset_insert(c->stream, rf_cols_of(b), b->nrows, frame_of(s), words, ctr), "dense-set insert");
    if (!rf_cuda_read_back(c, ctr, counts, 16, st))
        goto fail;
    rf_cuda_free(c, ctr, 16);
    return true;
fail:
    rf_cuda_free(c, ctr, 16);
    return false;
}

bool rf_dset_build(rf_cuda_ctx *c, const rf_drel *r, rf_dset *s, const char *what, rf_status *st)
{
    if (s->total_bits < 0 || r->arity != s->arity)
        return rf_fail(st, RF_EXIT_RUNTIME_ERROR, "dense set for %s built without a frame", what ? what : "?");
    size_t bytes = rf_dset_bytes(s);
    s->words = rf_cuda_alloc(c, bytes, what, st);
    if (!s->words)
        return false;
    s->nwords = bytes / 8;
    uint64_t counts[2];
    if (!rf_cuda_check(c, cudaMemsetAsync(s->words, 0, bytes, c->stream), "dense-set build", st) ||
        !insert_rows(c, s, s->words, r, counts, st)) {
        rf_dset_free(c, s);
        return false;
    }
    if (counts[1] != 0) {
        rf_dset_free(c, s);
        return rf_fail(st, RF_EXIT_RUNTIME_ERROR, "dense set for %s: %llu rows outside its frame", what ? what : "?",
                       (unsigned long long)counts[1]);
    }
    s->nrows = (size_t)counts[0];
    return true;
}

bool rf_dset_difference(rf_cuda_ctx *c, const rf_drel *a, const rf_dset *s, rf_drel *out, const char *what,
                        rf_status *st)
{
    size_t n = a->nrows;
    rf_drel res;
    rf_drel_init(&res, a->arity);
    if (a->arity != s->arity)
        return rf_fail(st, RF_EXIT_RUNTIME_ERROR, "difference of arities %d and %d", a->arity, s->arity);
    if (n == 0) {
        rf_drel_move(c, out, &res);
        return true;
    }
    uint8_t *flags = rf_cuda_alloc(c, n, "difference flags", st);
    uint64_t *pos = flags ? rf_cuda_alloc(c, (n + 1) * 8, "difference positions", st) : NULL;
    uint64_t kept = 0;
    if (!pos)
        goto fail;
    CK(rf_k_dset_absent(c->stream, rf_cols_of(a), n, frame_of(s), s->words, flags), "dense-set difference");
    if (!rf_cub_flag_scan(c, flags, pos, n, st) || !rf_cuda_read_back(c, pos + n, &kept, 8, st) ||
        !rf_drel_alloc(c, &res, (size_t)kept, what, st))
        goto fail;
    CK(rf_k_compact(c->stream, rf_cols_of(a), a->arity, flags, pos, n, rf_wcols_of(&res)), "dense-set difference");
    rf_cuda_free(c, flags, n);
    rf_cuda_free(c, pos, (n + 1) * 8);
    rf_drel_move(c, out, &res);
    return true;
fail:
    if (flags)
        rf_cuda_free(c, flags, n);
    if (pos)
        rf_cuda_free(c, pos, (n + 1) * 8);
    rf_drel_free(c, &res);
    return false;
}

bool rf_dset_union(rf_cuda_ctx *c, const rf_dset *s, const rf_drel *b, rf_dset *out, bool *fits, const char *what,
                   rf_status *st)
{
    *fits = false;
    if (b->arity != s->arity)
        return rf_fail(st, RF_EXIT_RUNTIME_ERROR, "union of arities %d and %d", s->arity, b->arity);
    rf_dset res = *s;
    res.words = rf_cuda_alloc(c, s->nwords * 8, what, st);
    if (!res.words)
        return false;
    uint64_t counts[2];
    if (!rf_cuda_check(c, cudaMemcpyAsync(res.words, s->words, s->nwords * 8, cudaMemcpyDeviceToDevice, c->stream),
                       "dense-set union", st) ||
        !insert_rows(c, &res, res.words, b, counts, st)) {
        rf_dset_free(c, &res);
        return false;
    }
    if (counts[1] != 0) {
        rf_dset_free(c, &res);
        return true;
    }
    res.nrows = s->nrows + (size_t)counts[0];
    rf_dset_free(c, out);
    *out = res;
    *fits = true;
    return true;
}

bool rf_dset_expand(rf_cuda_ctx *c, const rf_dset *s, rf_drel *out, const char *what, rf_status *st)
{
    rf_drel res;
    rf_drel_init(&res, s->arity);
    size_t ng = rf_dset_groups(s->nwords);
    uint64_t *counts = NULL, *pos = NULL;
    if (!rf_drel_alloc(c, &res, s->nrows, what, st))
        return false;
    if (s->nrows > 0) {
        counts = rf_cuda_alloc(c, ng * 8, "dense-set expansion", st);
        pos = counts ? rf_cuda_alloc(c, (ng + 1) * 8, "dense-set expansion", st) : NULL;
        if (!pos)
            goto fail;
        CK(rf_k_dset_group_counts(c->stream, s->words, s->nwords, counts), "dense-set expansion");
        if (!rf_cub_count_scan(c, counts, pos, ng, st))
            goto fail;
        CK(rf_k_dset_expand(c->stream, s->words, s->nwords, pos, frame_of(s), rf_wcols_of(&res)),
           "dense-set expansion");
        rf_cuda_free(c, counts, ng * 8);
        rf_cuda_free(c, pos, (ng + 1) * 8);
    }
    rf_drel_move(c, out, &res);
    return true;
fail:
    if (counts)
        rf_cuda_free(c, counts, ng * 8);
    if (pos)
        rf_cuda_free(c, pos, (ng + 1) * 8);
    rf_drel_free(c, &res);
    return false;
}
