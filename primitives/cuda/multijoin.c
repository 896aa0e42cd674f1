/* RF_K_MULTIJOIN on the GPU: a breadth-first leapfrog triejoin (thesis
 * ch. 5). The bindings of the first variable are the values every input
 * holds in its first column (a thread a value of the shortest input);
 * each further level extends every partial binding by the next
 * variable's values (multijoin.cu: a warp a binding), counted first, then
 * written in place after a scan, so a level is exactly as large as it
 * must be. When a level would not fit the memory budget its bindings are
 * split in halves and each is expanded on its own, down to the last level
 * (rounds, depth-first over halves): the largest level is never held
 * whole. The last level's bindings go through the filter and projections
 * (rf_cuda_map) piece by piece; the pieces are concatenated.
 *
 * Budget: a quarter of the device's memory, or RF_GPU_LFTJ_BUDGET bytes
 * (tests force rounds with a small one). */
#include "cuda_internal.h"
#include "multijoin.h"

#include <stdlib.h>
#include <string.h>

typedef struct mj_run {
    rf_cuda_ctx *c;
    int nvars;
    rf_mj_level lv[RF_MULTIJOIN_MAX_VARS];
    const rf_code *filter, *proj;
    int nproj;
    const char *what;
    size_t budget;
    RF_VEC(rf_drel) pieces;   /* outputs of the last level, in order */
    rf_status *st;
} mj_run;

static bool ck(mj_run *r, cudaError_t e, const char *where)
{
    return rf_cuda_check(r->c, e, where, r->st);
}

/* The last level's bindings b (every variable) through filter and
 * projections, kept as one piece of the output. */
static bool emit_piece(mj_run *r, const rf_drel *b)
{
    rf_drel piece;
    rf_drel_init(&piece, r->nproj);
    if (!rf_cuda_map(r->c, b, r->filter, r->nproj, r->proj, &piece, r->what, r->st)) {
        rf_drel_free(r->c, &piece);
        return false;
    }
    RF_PUSH(r->pieces, piece);
    return true;
}

/* Extends bindings `in` (d columns, a view: rows from `first`) by
 * variable d, and on to the last level. */
static bool expand(mj_run *r, int d, const rf_drel *in, size_t first, size_t n)
{
    if (n == 0)
        return true;
    rf_cuda_ctx *c = r->c;
    const rf_mj_level *lv = &r->lv[d];
    rf_mj_rows rows = {in->data + first, in->cap, n};
    size_t cbytes = (n + 1) * sizeof(uint64_t);
    uint64_t *counts = rf_cuda_alloc(c, cbytes, r->what, r->st);
    uint64_t *pos = counts ? rf_cuda_alloc(c, cbytes, r->what, r->st) : NULL;
    uint64_t total = 0;
    bool ok = pos && ck(r, rf_k_mj_count(c->stream, lv, rows, counts), "multijoin count") &&
              rf_cub_count_scan(c, counts, pos, n, r->st) &&
              rf_cuda_read_back(c, pos + n, &total, sizeof total, r->st);
    if (counts)
        rf_cuda_free(c, counts, cbytes);
    counts = NULL;
    size_t need = (size_t)total * (size_t)(d + 1) * sizeof(uint64_t);
    if (ok && need > r->budget && n > 1) {
        /* a round of each half: neither level is held whole */
        rf_cuda_free(c, pos, cbytes);
        return expand(r, d, in, first, n / 2) && expand(r, d, in, first + n / 2, n - n / 2);
    }
    rf_drel next;
    rf_drel_init(&next, d + 1);
    ok = ok && (total == 0 || (rf_drel_alloc(c, &next, total, r->what, r->st) &&
                               ck(r, rf_k_mj_write(c->stream, lv, rows, pos, next.data, next.cap),
                                  "multijoin write")));
    if (pos)
        rf_cuda_free(c, pos, cbytes);
    if (ok && total > 0)
        ok = d + 1 == r->nvars ? emit_piece(r, &next) : expand(r, d + 1, &next, 0, total);
    rf_drel_free(c, &next);
    return ok;
}

/* The first variable's values: those of the shortest input's first column
 * that every input taking part holds. */
static bool first_level(mj_run *r, rf_drel *out)
{
    rf_cuda_ctx *c = r->c;
    const rf_mj_level *lv = &r->lv[0];
    int drv = 0;
    for (int x = 1; x < lv->npart; x++)
        if (lv->nrows[x] < lv->nrows[drv])
            drv = x;
    size_t n = lv->nrows[drv];
    uint8_t *flags = rf_cuda_alloc(c, n + 1, r->what, r->st);
    uint64_t *pos = flags ? rf_cuda_alloc(c, (n + 1) * sizeof *pos, r->what, r->st) : NULL;
    uint64_t total = 0;
    bool ok = pos && ck(r, rf_k_mj_first(c->stream, lv, drv, flags), "multijoin first level") &&
              rf_cub_flag_scan(c, flags, pos, n, r->st) &&
              rf_cuda_read_back(c, pos + n, &total, sizeof total, r->st) &&
              (total == 0 || (rf_drel_alloc(c, out, total, r->what, r->st) &&
                              ck(r, rf_k_mj_first_write(c->stream, lv, drv, flags, pos, out->data),
                                 "multijoin first level")));
    if (flags)
        rf_cuda_free(c, flags, n + 1);
    if (pos)
        rf_cuda_free(c, pos, (n + 1) * sizeof *pos);
    if (ok)
        out->nrows = total;
    return ok;
}

/* The pieces, in order, as one relation. */
static bool concat_pieces(mj_run *r, rf_drel *out)
{
    rf_cuda_ctx *c = r->c;
    rf_drel_free(c, out);
    rf_drel_init(out, r->nproj);
    if (r->pieces.len == 1) {
        rf_drel_move(c, out, &r->pieces.items[0]);
        return true;
    }
    size_t total = 0;
    for (size_t i = 0; i < r->pieces.len; i++)
        total += r->pieces.items[i].nrows;
    if (r->nproj == 0) {   /* a nullary result: whether a row exists */
        out->nrows = total > 0;
        return true;
    }
    if (total == 0)
        return true;
    if (!rf_drel_alloc(c, out, total, r->what, r->st))
        return false;
    size_t at = 0;
    for (size_t i = 0; i < r->pieces.len; i++) {
        const rf_drel *p = &r->pieces.items[i];
        for (int col = 0; col < r->nproj && p->nrows > 0; col++)
            if (!ck(r, cudaMemcpyAsync(out->data + (size_t)col * out->cap + at, p->data + (size_t)col * p->cap,
                                       p->nrows * sizeof(uint64_t), cudaMemcpyDeviceToDevice, c->stream),
                    "multijoin concatenation"))
                return false;
        at += p->nrows;
    }
    return true;
}

bool rf_cuda_multijoin(rf_cuda_ctx *c, int nin, const rf_drel *const *ins, const int *in_first, const int *in_vars,
                       int nvars, const rf_code *filter, int nproj, const rf_code *proj, rf_drel *out,
                       const char *what, rf_status *st)
{
    mj_run *r = rf_calloc(1, sizeof *r);
    r->c = c;
    r->nvars = nvars;
    r->filter = filter;
    r->proj = proj;
    r->nproj = nproj;
    r->what = what;
    r->st = st;
    const char *env = getenv("RF_GPU_LFTJ_BUDGET");
    r->budget = env && *env ? (size_t)strtoull(env, NULL, 10) : c->total_mem / 4;
    bool any_empty = false;
    /* the levels: which inputs take part in each variable, and how */
    for (int d = 0; d < nvars; d++)
        r->lv[d].d = d;
    for (int i = 0; i < nin; i++) {
        const rf_drel *in = ins[i];
        any_empty |= in->nrows == 0;
        int ncols = in_first[i + 1] - in_first[i];
        for (int j = 0; j < ncols; j++) {
            rf_mj_level *lv = &r->lv[in_vars[in_first[i] + j]];
            int x = lv->npart++;
            lv->col[x] = j;
            lv->nrows[x] = in->nrows;
            for (int k = 0; k <= j; k++) {
                lv->cols[x][k] = in->data ? in->data + (size_t)k * in->cap : NULL;
                lv->prefix_var[x][k] = in_vars[in_first[i] + k];
            }
        }
    }
    bool ok = true;
    if (!any_empty) {
        rf_drel first;
        rf_drel_init(&first, 1);
        ok = first_level(r, &first);
        if (ok && first.nrows > 0)
            ok = nvars == 1 ? emit_piece(r, &first) : expand(r, 1, &first, 0, first.nrows);
        rf_drel_free(c, &first);
    }
    if (ok && r->pieces.len == 0) {
        rf_drel_free(c, out);
        rf_drel_init(out, nproj);
    } else if (ok) {
        ok = concat_pieces(r, out);
    }
    for (size_t i = 0; i < r->pieces.len; i++)
        rf_drel_free(c, &r->pieces.items[i]);
    free(r->pieces.items);
    free(r);
    return ok;
}
