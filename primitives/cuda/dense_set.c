/* Dense sets on the device (rf_cuda_prims.h): planning a frame, building,
 * probing, inserting into a copy, expanding back into sorted rows. The
 * kernels are in dense_set.cu. Each operation synchronises once, to read
 * the count that sizes its output or tells whether rows fell outside. */
#include "cuda_internal.h"

#include <stdint.h>
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

rf_dframe rf_dset_frame(const rf_dset *s)
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

/* Column j of the frame covers [lo, hi]; anchored at 0 when that costs no
 * bit, which leaves room below and makes frames of related relations
 * (a join's output, the full relation it is compared with) agree. */
static void frame_column(rf_dset *s, int j, uint64_t lo, uint64_t hi)
{
    int bits = bit_width(hi - lo);
    if (bit_width(hi) == bits)
        lo = 0;
    s->lo[j] = lo;
    s->bits[j] = bits;
}

bool rf_dset_same_frame(const rf_dset *a, const rf_dset *b)
{
    if (a->arity != b->arity || a->total_bits != b->total_bits || a->total_bits < 0)
        return false;
    for (int j = 0; j < a->arity; j++)
        if (a->lo[j] != b->lo[j] || a->bits[j] != b->bits[j])
            return false;
    return true;
}

bool rf_dset_plan_join(rf_cuda_ctx *c, const rf_drel *l, const rf_drel *r, int nproj, const int *src,
                       const rf_dset *hint, int max_bits, rf_dset *s, bool *fits, rf_status *st)
{
    rf_dset_init(s);
    *fits = false;
    int al = l->arity, ar = r->arity, n = al + ar;
    if (nproj < 1 || nproj > RF_CUDA_MAX_COLS || al < 1 || ar < 1 || l->nrows == 0 || r->nrows == 0)
        return true;
    uint64_t host[4 * RF_CUDA_MAX_COLS];
    uint64_t *mm = rf_cuda_alloc(c, (size_t)n * 16, "dense-set frame", st);
    if (!mm)
        return false;
    /* Layout: l's minima, l's maxima, r's minima, r's maxima. */
    CK(rf_k_fill(c->stream, mm, (size_t)al, ~(uint64_t)0), "dense-set frame");
    CK(cudaMemsetAsync(mm + al, 0, (size_t)al * 8, c->stream), "dense-set frame");
    CK(rf_k_fill(c->stream, mm + 2 * al, (size_t)ar, ~(uint64_t)0), "dense-set frame");
    CK(cudaMemsetAsync(mm + 2 * al + ar, 0, (size_t)ar * 8, c->stream), "dense-set frame");
    CK(rf_k_col_minmax(c->stream, rf_cols_of(l), al, l->nrows, mm), "dense-set frame");
    CK(rf_k_col_minmax(c->stream, rf_cols_of(r), ar, r->nrows, mm + 2 * al), "dense-set frame");
    if (!rf_cuda_read_back(c, mm, host, (size_t)n * 16, st))
        goto fail;
    rf_cuda_free(c, mm, (size_t)n * 16);
    uint64_t lo[RF_CUDA_MAX_COLS], hi[RF_CUDA_MAX_COLS];
    for (int p = 0; p < nproj; p++) {
        if (src[p] < 0 || src[p] >= n)
            return rf_fail(st, RF_EXIT_RUNTIME_ERROR, "join projection reads column %d of %d", src[p], n);
        lo[p] = src[p] < al ? host[src[p]] : host[2 * al + (src[p] - al)];
        hi[p] = src[p] < al ? host[al + src[p]] : host[2 * al + ar + (src[p] - al)];
    }
    /* The hint's frame when it holds every output row: the set can then be
     * compared with the hint's owner word by word. */
    if (hint && hint->total_bits >= 0 && hint->arity == nproj) {
        bool covers = true;
        for (int p = 0; p < nproj && covers; p++) {
            uint64_t mask = hint->bits[p] ? (~(uint64_t)0 >> (64 - hint->bits[p])) : 0;
            covers = lo[p] >= hint->lo[p] && hi[p] - hint->lo[p] <= mask;
        }
        if (covers) {
            *s = *hint;
            s->words = NULL;
            s->nwords = 0;
            s->nrows = 0;
            *fits = true;
            return true;
        }
    }
    s->arity = nproj;
    int total = 0;
    for (int p = 0; p < nproj; p++) {
        frame_column(s, p, lo[p], hi[p]);
        total += s->bits[p];
    }
    if (total > max_bits)
        return true;
    s->total_bits = total;
    *fits = true;
    return true;
fail:
    rf_cuda_free(c, mm, (size_t)n * 16);
    return false;
}

bool rf_dset_plan(rf_cuda_ctx *c, const rf_drel *a, const rf_drel *b, int max_bits, rf_dset *s,
                  bool *fits, rf_status *st)
{
    const rf_drel *rels[2] = {a, b};
    return rf_dset_plan_runs(c, rels, b ? 2 : 1, NULL, max_bits, s, fits, st);
}

bool rf_dset_plan_runs(rf_cuda_ctx *c, const rf_drel *const *rels, int n, const rf_dset *cover, int max_bits,
                       rf_dset *s, bool *fits, rf_status *st)
{
    rf_dset_init(s);
    *fits = false;
    if (n < 1)
        return true;
    int ar = rels[0]->arity;
    if (ar < 1 || ar > RF_CUDA_MAX_COLS || (cover && cover->total_bits >= 0 && cover->arity != ar))
        return true;
    for (int i = 1; i < n; i++)
        if (rels[i]->arity != ar)
            return true;
    uint64_t host[2 * RF_CUDA_MAX_COLS];
    uint64_t *mm = rf_cuda_alloc(c, (size_t)ar * 16, "dense-set frame", st);
    if (!mm)
        return false;
    CK(rf_k_fill(c->stream, mm, (size_t)ar, ~(uint64_t)0), "dense-set frame");
    CK(cudaMemsetAsync(mm + ar, 0, (size_t)ar * 8, c->stream), "dense-set frame");
    for (int i = 0; i < n; i++)
        if (rels[i]->nrows > 0)
            CK(rf_k_col_minmax(c->stream, rf_cols_of(rels[i]), ar, rels[i]->nrows, mm), "dense-set frame");
    if (!rf_cuda_read_back(c, mm, host, (size_t)ar * 16, st))
        goto fail;
    rf_cuda_free(c, mm, (size_t)ar * 16);
    if (cover && cover->total_bits >= 0)
        for (int j = 0; j < ar; j++) {
            uint64_t mask = cover->bits[j] ? (~(uint64_t)0 >> (64 - cover->bits[j])) : 0;
            if (cover->lo[j] < host[j])
                host[j] = cover->lo[j];
            if (cover->lo[j] + mask > host[ar + j])
                host[ar + j] = cover->lo[j] + mask;
        }
    if (host[0] > host[ar]) /* no rows at all */
        return true;
    s->arity = ar;
    int total = 0;
    for (int j = 0; j < ar; j++) {
        frame_column(s, j, host[j], host[ar + j]);
        total += s->bits[j];
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
    CK(rf_k_dset_insert(c->stream, rf_cols_of(b), b->nrows, rf_dset_frame(s), words, ctr), "dense-set insert");
    if (!rf_cuda_read_back(c, ctr, counts, 16, st))
        goto fail;
    rf_cuda_free(c, ctr, 16);
    return true;
fail:
    rf_cuda_free(c, ctr, 16);
    return false;
}

bool rf_dset_alloc_clear(rf_cuda_ctx *c, rf_dset *s, const char *what, rf_status *st)
{
    size_t bytes = rf_dset_bytes(s);
    s->words = rf_cuda_alloc(c, bytes, what, st);
    if (!s->words)
        return false;
    s->nwords = bytes / 8;
    s->nrows = 0;
    if (!rf_cuda_check(c, cudaMemsetAsync(s->words, 0, bytes, c->stream), "dense-set clear", st)) {
        rf_dset_free(c, s);
        return false;
    }
    return true;
}

bool rf_dset_build(rf_cuda_ctx *c, const rf_drel *r, rf_dset *s, const char *what, rf_status *st)
{
    return rf_dset_build_runs(c, &r, 1, s, what, st);
}

bool rf_dset_build_runs(rf_cuda_ctx *c, const rf_drel *const *rels, int n, rf_dset *s, const char *what,
                        rf_status *st)
{
    if (s->total_bits < 0 || n < 1)
        return rf_fail(st, RF_EXIT_RUNTIME_ERROR, "dense set for %s built without a frame", what ? what : "?");
    for (int i = 0; i < n; i++)
        if (rels[i]->arity != s->arity)
            return rf_fail(st, RF_EXIT_RUNTIME_ERROR, "dense set for %s: arities %d and %d", what ? what : "?",
                           rels[i]->arity, s->arity);
    if (!rf_dset_alloc_clear(c, s, what, st))
        return false;
    for (int i = 0; i < n; i++) {
        uint64_t counts[2];
        if (!insert_rows(c, s, s->words, rels[i], counts, st)) {
            rf_dset_free(c, s);
            return false;
        }
        if (counts[1] != 0) {
            rf_dset_free(c, s);
            return rf_fail(st, RF_EXIT_RUNTIME_ERROR, "dense set for %s: %llu rows outside its frame",
                           what ? what : "?", (unsigned long long)counts[1]);
        }
        s->nrows += (size_t)counts[0];
    }
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
    CK(rf_k_dset_absent(c->stream, rf_cols_of(a), n, rf_dset_frame(s), s->words, flags), "dense-set difference");
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

/* out := the rows of words & ~minus (minus NULL: of words), in s's frame,
 * output column p being frame column src[p] (src NULL: all in order);
 * n: their number when known, else SIZE_MAX (counted, one read-back). */
static bool expand_bits(rf_cuda_ctx *c, const rf_dset *s, const uint64_t *words, const uint64_t *minus, size_t n,
                        int nout, const int *src, rf_drel *out, const char *what, rf_status *st)
{
    rf_drel res;
    rf_drel_init(&res, src ? nout : s->arity);
    size_t ng = rf_dset_groups(s->nwords);
    uint64_t *counts = NULL, *pos = NULL;
    if (n > 0) {
        counts = rf_cuda_alloc(c, ng * 8, "dense-set expansion", st);
        pos = counts ? rf_cuda_alloc(c, (ng + 1) * 8, "dense-set expansion", st) : NULL;
        if (!pos)
            goto fail;
        CK(rf_k_dset_group_counts(c->stream, words, minus, s->nwords, counts), "dense-set expansion");
        if (!rf_cub_count_scan(c, counts, pos, ng, st))
            goto fail;
        if (n == SIZE_MAX) {
            uint64_t total = 0;
            if (!rf_cuda_read_back(c, pos + ng, &total, 8, st))
                goto fail;
            n = (size_t)total;
        }
    }
    if (!rf_drel_alloc(c, &res, n, what, st))
        goto fail;
    if (n > 0)
        CK(rf_k_dset_expand(c->stream, words, minus, s->nwords, pos, rf_dset_frame(s), nout, src, rf_wcols_of(&res)),
           "dense-set expansion");
    if (counts)
        rf_cuda_free(c, counts, ng * 8);
    if (pos)
        rf_cuda_free(c, pos, (ng + 1) * 8);
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

bool rf_dset_expand(rf_cuda_ctx *c, const rf_dset *s, rf_drel *out, const char *what, rf_status *st)
{
    return expand_bits(c, s, s->words, NULL, s->nrows, 0, NULL, out, what, st);
}

bool rf_dset_expand_proj(rf_cuda_ctx *c, const rf_dset *s, int nproj, const int *src, rf_drel *out,
                         const char *what, rf_status *st)
{
    if (nproj < 0 || nproj > RF_CUDA_MAX_COLS)
        return rf_fail(st, RF_EXIT_RUNTIME_ERROR, "%d projections of a dense set", nproj);
    for (int p = 0; p < nproj; p++)
        if (src[p] < 0 || src[p] >= s->arity)
            return rf_fail(st, RF_EXIT_RUNTIME_ERROR, "projection of column %d of a dense set of arity %d", src[p],
                           s->arity);
    return expand_bits(c, s, s->words, NULL, s->nrows, nproj, src, out, what, st);
}

bool rf_dset_difference_sets(rf_cuda_ctx *c, const rf_dset *a, const rf_dset *b, rf_drel *out, const char *what,
                             rf_status *st)
{
    if (!rf_dset_same_frame(a, b) || a->nwords != b->nwords)
        return rf_fail(st, RF_EXIT_RUNTIME_ERROR, "difference of dense sets in different frames");
    return expand_bits(c, a, a->words, b->words, a->nrows ? SIZE_MAX : 0, 0, NULL, out, what, st);
}

bool rf_dset_or_words(rf_cuda_ctx *c, rf_dset *s, const uint64_t *words, int n, rf_status *st)
{
    if (n <= 0 || s->nwords == 0)
        return true;
    uint64_t *ctr = rf_cuda_alloc(c, 8, "dense-set counters", st);
    if (!ctr)
        return false;
    uint64_t bits = 0;
    CK(cudaMemsetAsync(ctr, 0, 8, c->stream), "dense-set union of parts");
    CK(rf_k_dset_or(c->stream, s->words, words, n, s->nwords, ctr), "dense-set union of parts");
    if (!rf_cuda_read_back(c, ctr, &bits, 8, st))
        goto fail;
    rf_cuda_free(c, ctr, 8);
    s->nrows = (size_t)bits;
    return true;
fail:
    rf_cuda_free(c, ctr, 8);
    return false;
}

bool rf_dset_copy(rf_cuda_ctx *c, const rf_dset *s, rf_dset *out, const char *what, rf_status *st)
{
    rf_dset res = *s;
    res.words = rf_cuda_alloc(c, s->nwords * 8, what, st);
    if (!res.words)
        return false;
    if (!rf_cuda_check(c, cudaMemcpyAsync(res.words, s->words, s->nwords * 8, cudaMemcpyDeviceToDevice, c->stream),
                       "dense-set copy", st)) {
        rf_dset_free(c, &res);
        return false;
    }
    rf_dset_free(c, out);
    *out = res;
    return true;
}
