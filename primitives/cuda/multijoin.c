/* RF_K_MULTIJOIN on the GPU: a breadth-first leapfrog triejoin (thesis
 * ch. 5). The bindings of the first variable are the values every input
 * holds in its first column (a thread a value of the shortest input);
 * each further level extends every partial binding by the next
 * variable's values, counted first, then written in place after a scan,
 * so a level is exactly as large as it must be. Every input gets a
 * directory on its first column where its values are dense enough
 * (RF_GPU_LFTJ_DIRECTORY=off: never). A level's work is cut into items
 * (a chunk of a binding's driver range each: multijoin.cu), which a team
 * of lanes sized to the level's mean range takes (RF_GPU_LFTJ_TEAM and
 * RF_GPU_LFTJ_CHUNK force the team size and the chunk, for tests; the
 * count pass records which driver values matched in a bitmap, which the
 * write pass reads instead of searching again (RF_GPU_LFTJ_BITS=off: it
 * searches);
 * RF_GPU_LFTJ_TRACE=1 prints each level's sizes and times to stderr). The
 * long ranges of an input's second column (a skewed graph's hubs) get
 * bitmaps, so that a value's membership in one is a bit, not a binary
 * search (hubs_of; RF_GPU_LFTJ_HUBS=off|always); a level of two inputs
 * narrows its other searched ranges by the team's pivots before the lanes'
 * searches (RF_GPU_LFTJ_PIVOTS=N|off). When a level would not fit the memory budget its bindings are
 * split in halves and each is expanded on its own, down to the last level
 * (rounds, depth-first over halves): the largest level is never held
 * whole. The last level's bindings go through the filter and projections
 * (rf_cuda_map) piece by piece; the pieces are concatenated.
 *
 * Budget: a quarter of the device's memory, or RF_GPU_LFTJ_BUDGET bytes
 * (tests force rounds with a small one). */
#include "cuda_internal.h"
#include "multijoin.h"

#include <stdio.h>
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
    bool count_only;          /* the last level counted, not written */
    uint64_t counted;         /* count_only: the bindings so far */
    /* the inputs' first-column directories, one per distinct column */
    int ndirs;
    const uint64_t *dir_col[RF_MULTIJOIN_MAX_IN];
    rf_mj_dir dirs[RF_MULTIJOIN_MAX_IN];
    size_t dir_bytes[RF_MULTIJOIN_MAX_IN];
    /* the inputs' hub bitmaps (rf_mj_hubs), one set per distinct input */
    int nhubs;
    const uint64_t *hub_col[RF_MULTIJOIN_MAX_IN];
    rf_mj_hubs hubs[RF_MULTIJOIN_MAX_IN];
    size_t hub_slot_bytes[RF_MULTIJOIN_MAX_IN], hub_bits_bytes[RF_MULTIJOIN_MAX_IN];
    int hubs_mode;            /* RF_GPU_LFTJ_HUBS: 0 off, 1 auto, 2 always */
    int hub_min_log2;         /* ranges of 2^this values or more (auto) */
    int force_team;           /* 0: from the mean range */
    uint64_t force_chunk;     /* 0: team x 16 */
    bool trace;               /* RF_GPU_LFTJ_TRACE: a line a level on stderr */
    bool no_bits;             /* RF_GPU_LFTJ_BITS=off: the write searches again */
    uint64_t pivots;          /* rf_mj_items.pivots (RF_GPU_LFTJ_PIVOTS=N, off: 0) */
    int unroll;               /* rf_mj_items.unroll (RF_GPU_LFTJ_UNROLL=off: 0) */
    rf_status *st;
} mj_run;

/* A directory costs 4 bytes a value of its span: made when the span is at
 * most this many times the rows (plus a little), so it never costs much
 * more than the column itself. */
#define RF_MJ_DIR_SPAN_PER_ROW 4

static bool ck(mj_run *r, cudaError_t e, const char *where)
{
    return rf_cuda_check(r->c, e, where, r->st);
}

/* The last level's bindings b (every variable) through filter and
 * projections, kept as one piece of the output: b itself (moved) where
 * the filter is true and the projections are the variables in order. */
static bool emit_piece(mj_run *r, rf_drel *b)
{
    rf_drel piece;
    rf_drel_init(&piece, r->nproj);
    bool same = (!r->filter || r->filter->n == 0) && r->nproj == r->nvars && b->arity == r->nvars;
    for (int j = 0; same && j < r->nproj; j++)
        same = rf_code_as_column(&r->proj[j]) == j;
    if (same) {
        rf_drel_move(r->c, &piece, b);
        RF_PUSH(r->pieces, piece);
        return true;
    }
    if (!rf_cuda_map(r->c, b, r->filter, r->nproj, r->proj, &piece, r->what, r->st)) {
        rf_drel_free(r->c, &piece);
        return false;
    }
    RF_PUSH(r->pieces, piece);
    return true;
}

/* A level's work items and what they need on the device. */
typedef struct mj_items_mem {
    rf_mj_items items;
    uint64_t *row, *istart, *doff;
    uint32_t *bits;
    size_t nbind, nitems, bit_words;
} mj_items_mem;

static void free_items(mj_run *r, mj_items_mem *m)
{
    size_t per_binding = (m->nbind + 1) * sizeof(uint64_t);
    if (m->istart)
        rf_cuda_free(r->c, m->istart, per_binding);
    if (m->doff)
        rf_cuda_free(r->c, m->doff, per_binding);
    if (m->row)
        rf_cuda_free(r->c, m->row, m->nitems * sizeof(uint64_t));
    if (m->bits)
        rf_cuda_free(r->c, m->bits, m->bit_words * sizeof(uint32_t));
    memset(m, 0, sizeof *m);
}

/* The work items of bindings `rows` at level lv, and the bitmap of their
 * driver values' matches when it fits an eighth of the budget. */
static bool make_items(mj_run *r, const rf_mj_level *lv, rf_mj_rows rows, bool want_bits, mj_items_mem *m)
{
    rf_cuda_ctx *c = r->c;
    size_t n = rows.n, bytes = (n + 1) * sizeof(uint64_t);
    memset(m, 0, sizeof *m);
    m->nbind = n;
    uint64_t *len = rf_cuda_alloc(c, bytes, r->what, r->st);
    m->doff = len ? rf_cuda_alloc(c, bytes, r->what, r->st) : NULL;
    m->istart = m->doff ? rf_cuda_alloc(c, bytes, r->what, r->st) : NULL;
    uint64_t total_len = 0, nitems = 0;
    bool ok = m->istart && ck(r, rf_k_mj_driver_len(c->stream, lv, rows, len), "multijoin ranges") &&
              rf_cub_count_scan(c, len, m->doff, n, r->st) &&
              rf_cuda_read_back(c, m->doff + n, &total_len, sizeof total_len, r->st);
    rf_mj_items *items = &m->items;
    if (ok) {
        /* lanes a team: half the mean driver range, rounded up to 4..32
         * (measured: a team a little short of the range, looping twice,
         * beats one with idle lanes) */
        double mean = (double)total_len / (double)n;
        int team = mean <= 8 ? 4 : mean <= 16 ? 8 : mean <= 32 ? 16 : 32;
        if (r->force_team)
            team = r->force_team;
        items->team = team;
        items->chunk = r->force_chunk ? r->force_chunk : (uint64_t)team * 16;
        items->pivots = r->pivots;
        items->unroll = r->unroll;
        ok = ck(r, rf_k_mj_chunks(c->stream, len, n, items->chunk), "multijoin chunks") &&
             rf_cub_count_scan(c, len, m->istart, n, r->st) &&
             rf_cuda_read_back(c, m->istart + n, &nitems, sizeof nitems, r->st);
    }
    if (len)
        rf_cuda_free(c, len, bytes);
    if (ok && nitems > 0) {
        m->row = rf_cuda_alloc(c, nitems * sizeof(uint64_t), r->what, r->st);
        m->nitems = m->row ? nitems : 0;
        ok = m->row && ck(r, rf_k_mj_items(c->stream, m->istart, n, m->row), "multijoin items");
    }
    /* +2 words: a team's bits may spill into the word after the last */
    size_t words = (size_t)(total_len / 32) + 2;
    if (ok && nitems > 0 && words * sizeof(uint32_t) <= r->budget / 8 && !r->no_bits && want_bits) {
        m->bits = rf_cuda_alloc(c, words * sizeof(uint32_t), r->what, r->st);
        m->bit_words = m->bits ? words : 0;
        ok = m->bits && ck(r, cudaMemsetAsync(m->bits, 0, words * sizeof(uint32_t), c->stream), "multijoin bits");
    }
    if (!ok) {
        free_items(r, m);
        return false;
    }
    items->row = m->row;
    items->istart = m->istart;
    items->n = nitems;
    items->doff = m->doff;
    items->bits = m->bits;
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
    double t0 = r->trace ? rf_now() : 0;
    mj_items_mem m;
    /* (a counted last level has no write pass to read match bits) */
    if (!make_items(r, lv, rows, !(r->count_only && d + 1 == r->nvars), &m))
        return false;
    const rf_mj_items items = m.items;
    double t1 = r->trace ? rf_now() : 0;
    size_t cbytes = (items.n + 1) * sizeof(uint64_t);
    uint64_t *counts = rf_cuda_alloc(c, cbytes, r->what, r->st);
    uint64_t *pos = counts ? rf_cuda_alloc(c, cbytes, r->what, r->st) : NULL;
    uint64_t total = 0;
    bool ok = pos && ck(r, rf_k_mj_count(c->stream, lv, rows, items, counts), "multijoin count") &&
              rf_cub_count_scan(c, counts, pos, items.n, r->st) &&
              rf_cuda_read_back(c, pos + items.n, &total, sizeof total, r->st);
    if (counts)
        rf_cuda_free(c, counts, cbytes);
    counts = NULL;
    double t2 = r->trace ? rf_now() : 0;
    if (ok && r->count_only && d + 1 == r->nvars) {
        /* the last level's extensions are the bindings: counted, none
         * written (so no round is needed for their memory either) */
        r->counted += total;
        rf_cuda_free(c, pos, cbytes);
        free_items(r, &m);
        if (r->trace)
            fprintf(stderr, "redfox: multijoin level %d: %zu bindings, %llu items, %llu extensions counted; "
                            "items %.3f ms, count %.3f ms\n",
                    d, n, (unsigned long long)items.n, (unsigned long long)total, (t1 - t0) * 1e3, (t2 - t1) * 1e3);
        return true;
    }
    size_t need = (size_t)total * (size_t)(d + 1) * sizeof(uint64_t);
    if (ok && need > r->budget && n > 1) {
        /* a round of each half: neither level is held whole */
        rf_cuda_free(c, pos, cbytes);
        free_items(r, &m);
        return expand(r, d, in, first, n / 2) && expand(r, d, in, first + n / 2, n - n / 2);
    }
    rf_drel next;
    rf_drel_init(&next, d + 1);
    ok = ok && (total == 0 || (rf_drel_alloc(c, &next, total, r->what, r->st) &&
                               ck(r, rf_k_mj_write(c->stream, lv, rows, items, pos, next.data, next.cap),
                                  "multijoin write")));
    if (pos)
        rf_cuda_free(c, pos, cbytes);
    bool had_bits = m.bits != NULL;
    free_items(r, &m);
    if (r->trace && ok) {
        ok = rf_cuda_check(c, cudaStreamSynchronize(c->stream), "multijoin trace", r->st);
        fprintf(stderr,
                "redfox: multijoin level %d: %zu bindings, %llu items (team %d, chunk %llu%s), %llu extensions; "
                "items %.3f ms, count %.3f ms, write %.3f ms\n",
                d, n, (unsigned long long)items.n, items.team, (unsigned long long)items.chunk,
                had_bits ? ", match bits" : "", (unsigned long long)total, (t1 - t0) * 1e3, (t2 - t1) * 1e3,
                (rf_now() - t2) * 1e3);
    }
    if (ok && total > 0)
        ok = d + 1 == r->nvars ? emit_piece(r, &next) : expand(r, d + 1, &next, 0, total);
    rf_drel_free(c, &next);
    return ok;
}

/* The directory of column col (n rows, sorted), shared by the inputs that
 * are the same relation; left without one (off NULL) when its values are
 * too sparse or too many. */
static bool directory_of(mj_run *r, const uint64_t *col, uint64_t n, rf_mj_dir *out)
{
    memset(out, 0, sizeof *out);
    if (!col || n == 0 || n >= UINT32_MAX)
        return true;
    for (int i = 0; i < r->ndirs; i++)
        if (r->dir_col[i] == col) {
            *out = r->dirs[i];
            return true;
        }
    const char *env = getenv("RF_GPU_LFTJ_DIRECTORY");
    if (env && strcmp(env, "off") == 0)
        return true;
    rf_cuda_ctx *c = r->c;
    uint64_t lo = 0, hi = 0;
    if (!rf_cuda_read_back(c, col, &lo, sizeof lo, r->st) ||
        !rf_cuda_read_back(c, col + n - 1, &hi, sizeof hi, r->st))
        return false;
    uint64_t span = hi - lo;
    if (span > RF_MJ_DIR_SPAN_PER_ROW * n + 4096)
        return true;
    size_t bytes = (size_t)(span + 2) * sizeof(uint32_t);
    uint32_t *off = rf_cuda_alloc(c, bytes, r->what, r->st);
    if (!off || !ck(r, rf_k_mj_directory(c->stream, col, n, lo, span, off), "multijoin directory")) {
        if (off)
            rf_cuda_free(c, off, bytes);
        return false;
    }
    rf_mj_dir d = {off, lo, span};
    int i = r->ndirs++;
    r->dir_col[i] = col;
    r->dirs[i] = d;
    r->dir_bytes[i] = bytes;
    *out = d;
    return true;
}

/* Hub bitmaps: what a range's bitmap must save to be made. A range of
 * fewer values is searched in a few loads that stay in cache; the analysis
 * of R-MAT 20's triangles (docs/performance.md) put 85% of the searches'
 * cost in ranges longer than 512. Made only for inputs of at least
 * RF_MJ_HUB_MIN_ROWS rows (below, a few read-backs cost more than the
 * searches), within RF_MJ_HUB_BUDGET_SHARE of the level budget: the
 * longest ranges first. RF_GPU_LFTJ_HUBS=always makes them for every range
 * of any input (tests), off never. */
/* Searched ranges of this many rows or more (and more than the team's
 * lanes) are narrowed by the team's pivots first (multijoin.cu, narrow):
 * R-MAT 20's and 21's triangle counts 4% and 3% less level-2 count time at
 * 32 or 64 (H200, docs/performance.md). RF_GPU_LFTJ_PIVOTS=N another, off
 * never. */
#define RF_MJ_PIVOTS_MIN_LEN 32
#define RF_MJ_HUB_MIN_LEN 512   /* RF_GPU_LFTJ_HUB_MIN (measuring): another */
#define RF_MJ_HUB_MIN_ROWS ((uint64_t)1 << 18)
#define RF_MJ_HUB_BUDGET_SHARE 8

/* The bitmaps of input `in`'s long ranges by its first column (which has
 * directory `dir`), shared by the inputs that are the same relation; none
 * (slot NULL) where they would not pay. */
static bool hubs_of(mj_run *r, const rf_drel *in, const rf_mj_dir *dir, rf_mj_hubs *out)
{
    memset(out, 0, sizeof *out);
    if (r->hubs_mode == 0 || !dir->off || in->arity < 2 || in->nrows == 0 ||
        (r->hubs_mode == 1 && in->nrows < RF_MJ_HUB_MIN_ROWS))
        return true;
    for (int i = 0; i < r->nhubs; i++)
        if (r->hub_col[i] == in->data) {
            *out = r->hubs[i];
            return true;
        }
    rf_cuda_ctx *c = r->c;
    double t0 = r->trace ? rf_now() : 0;
    const uint64_t *col0 = in->data, *col1 = in->data + in->cap;
    uint64_t span = dir->span, stats[66];
    uint64_t *dstats = rf_cuda_alloc(c, sizeof stats, r->what, r->st);
    bool ok = dstats && ck(r, cudaMemsetAsync(dstats, 0, sizeof stats, c->stream), "multijoin hubs") &&
              ck(r, cudaMemsetAsync(dstats, 0xff, sizeof stats[0], c->stream), "multijoin hubs") &&
              ck(r, rf_k_mj_hub_stats(c->stream, col1, in->nrows, dir->off, span, dstats), "multijoin hubs") &&
              rf_cuda_read_back(c, dstats, stats, sizeof stats, r->st);
    if (dstats)
        rf_cuda_free(c, dstats, sizeof stats);
    if (!ok)
        return false;
    uint64_t lo = stats[0], hi = stats[1];
    if (hi - lo >= ((uint64_t)1 << 36))   /* values too sparse for bitmaps */
        return true;
    uint64_t words = (hi - lo) / 32 + 1;
    size_t cap = r->budget / RF_MJ_HUB_BUDGET_SHARE, per = (size_t)words * sizeof(uint32_t);
    /* the least range length: a power of two, from RF_MJ_HUB_MIN_LEN (1
     * always) up until the bitmaps of the ranges as long fit */
    int k = r->hubs_mode == 2 ? 0 : r->hub_min_log2;
    uint64_t nhub = 0;
    for (; k < 64; k++) {
        nhub = 0;
        for (int j = k; j < 64; j++)
            nhub += stats[2 + j];
        if (nhub == 0 || (nhub < RF_MJ_NO_HUB && nhub <= cap / per))
            break;
    }
    if (nhub == 0 || k >= 64)
        return true;
    uint64_t least = (uint64_t)1 << k;
    size_t slot_bytes = (size_t)(span + 1) * sizeof(uint32_t), bits_bytes = (size_t)nhub * per;
    size_t fbytes = (size_t)(span + 1), pbytes = (size_t)(span + 2) * sizeof(uint64_t);
    /* An aid, not a need: where its memory is not there, no bitmaps. */
    rf_status quiet;
    rf_status_init(&quiet);
    uint8_t *flags = rf_cuda_alloc(c, fbytes, r->what, &quiet);
    uint64_t *pos = flags ? rf_cuda_alloc(c, pbytes, r->what, &quiet) : NULL;
    uint32_t *slot = pos ? rf_cuda_alloc(c, slot_bytes, r->what, &quiet) : NULL;
    uint32_t *bits = slot ? rf_cuda_alloc(c, bits_bytes, r->what, &quiet) : NULL;
    if (!bits) {
        if (flags)
            rf_cuda_free(c, flags, fbytes);
        if (pos)
            rf_cuda_free(c, pos, pbytes);
        if (slot)
            rf_cuda_free(c, slot, slot_bytes);
        return true;
    }
    rf_mj_hubs h = {slot, bits, lo, words};
    ok = ck(r, rf_k_mj_hub_flags(c->stream, dir->off, span, least, flags), "multijoin hubs") &&
         rf_cub_flag_scan(c, flags, pos, (size_t)span + 1, r->st) &&
         ck(r, rf_k_mj_hub_slots(c->stream, flags, pos, span, slot), "multijoin hubs") &&
         ck(r, cudaMemsetAsync(bits, 0, bits_bytes, c->stream), "multijoin hubs") &&
         ck(r, rf_k_mj_hub_fill(c->stream, col0, col1, in->nrows, dir->min, &h, bits), "multijoin hubs");
    if (flags)
        rf_cuda_free(c, flags, fbytes);
    if (pos)
        rf_cuda_free(c, pos, pbytes);
    if (!ok) {
        if (slot)
            rf_cuda_free(c, slot, slot_bytes);
        if (bits)
            rf_cuda_free(c, bits, bits_bytes);
        return false;
    }
    int i = r->nhubs++;
    r->hub_col[i] = in->data;
    r->hubs[i] = h;
    r->hub_slot_bytes[i] = slot_bytes;
    r->hub_bits_bytes[i] = bits_bytes;
    *out = h;
    if (r->trace) {
        ok = rf_cuda_check(c, cudaStreamSynchronize(c->stream), "multijoin trace", r->st);
        fprintf(stderr, "redfox: multijoin hubs: %llu ranges of %llu values or more as bitmaps (%.1f MB), %.3f ms\n",
                (unsigned long long)nhub, (unsigned long long)least, (double)bits_bytes / 1e6, (rf_now() - t0) * 1e3);
    }
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

/* rf_cuda_multijoin, or with counted non-NULL rf_cuda_multijoin_count
 * (*counted := the bindings; out, filter and proj unused). */
static bool multijoin_run(rf_cuda_ctx *c, int nin, const rf_drel *const *ins, const int *in_first,
                          const int *in_vars, int nvars, const rf_code *filter, int nproj, const rf_code *proj,
                          rf_drel *out, uint64_t *counted, const char *what, rf_status *st)
{
    mj_run *r = rf_calloc(1, sizeof *r);
    r->c = c;
    r->count_only = counted != NULL;
    r->nvars = nvars;
    r->filter = filter;
    r->proj = proj;
    r->nproj = nproj;
    r->what = what;
    r->st = st;
    const char *env = getenv("RF_GPU_LFTJ_BUDGET");
    r->budget = env && *env ? (size_t)strtoull(env, NULL, 10) : c->total_mem / 4;
    const char *team = getenv("RF_GPU_LFTJ_TEAM"), *chunk = getenv("RF_GPU_LFTJ_CHUNK");
    if (team && *team) {
        int t = atoi(team);
        r->force_team = t == 4 || t == 8 || t == 16 || t == 32 ? t : 0;
    }
    if (chunk && *chunk)
        r->force_chunk = strtoull(chunk, NULL, 10);
    const char *trace = getenv("RF_GPU_LFTJ_TRACE");
    r->trace = trace && *trace && strcmp(trace, "0") != 0;
    const char *bits = getenv("RF_GPU_LFTJ_BITS");
    r->no_bits = bits && strcmp(bits, "off") == 0;
    const char *unroll = getenv("RF_GPU_LFTJ_UNROLL");
    r->unroll = !(unroll && strcmp(unroll, "off") == 0);
    const char *pivots = getenv("RF_GPU_LFTJ_PIVOTS");
    r->pivots = !pivots || !*pivots ? RF_MJ_PIVOTS_MIN_LEN
                : strcmp(pivots, "off") == 0 ? 0 : strtoull(pivots, NULL, 10);
    const char *hubs = getenv("RF_GPU_LFTJ_HUBS");
    r->hubs_mode = !hubs || !*hubs ? 1 : strcmp(hubs, "off") == 0 ? 0 : strcmp(hubs, "always") == 0 ? 2 : 1;
    const char *hub_min = getenv("RF_GPU_LFTJ_HUB_MIN");
    uint64_t least = hub_min && *hub_min ? strtoull(hub_min, NULL, 10) : RF_MJ_HUB_MIN_LEN;
    while (r->hub_min_log2 < 63 && ((uint64_t)1 << r->hub_min_log2) < least)
        r->hub_min_log2++;
    /* RF_GPU_LFTJ_REPEATS=always: every level skips repeated values, as
     * where a later column repeats them (for measuring the test's cost) */
    const char *repeats = getenv("RF_GPU_LFTJ_REPEATS");
    bool always_repeats = repeats && strcmp(repeats, "always") == 0;
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
            lv->distinct[x] = j == in->arity - 1 && !always_repeats;
            lv->nrows[x] = in->nrows;
            for (int k = 0; k <= j; k++) {
                lv->cols[x][k] = in->data ? in->data + (size_t)k * in->cap : NULL;
                lv->prefix_var[x][k] = in_vars[in_first[i] + k];
            }
        }
    }
    bool ok = true;
    for (int i = 0; i < nin && ok && !any_empty; i++) {
        rf_mj_dir dir;
        rf_mj_hubs hub;
        ok = directory_of(r, ins[i]->data, ins[i]->nrows, &dir) && hubs_of(r, ins[i], &dir, &hub);
        for (int j = 0; ok && j < in_first[i + 1] - in_first[i]; j++) {
            rf_mj_level *lv = &r->lv[in_vars[in_first[i] + j]];
            for (int x = 0; x < lv->npart; x++)
                if (lv->cols[x][0] == ins[i]->data && lv->col[x] == j) {
                    lv->dir[x] = dir;
                    if (j == 1)
                        lv->hub[x] = hub;
                }
        }
    }
    if (ok && !any_empty) {
        rf_drel first;
        rf_drel_init(&first, 1);
        ok = first_level(r, &first);
        if (ok && first.nrows > 0 && nvars == 1 && r->count_only)
            r->counted = first.nrows;
        else if (ok && first.nrows > 0)
            ok = nvars == 1 ? emit_piece(r, &first) : expand(r, 1, &first, 0, first.nrows);
        rf_drel_free(c, &first);
    }
    if (r->count_only) {
        if (ok)
            *counted = r->counted;
    } else if (ok && r->pieces.len == 0) {
        rf_drel_free(c, out);
        rf_drel_init(out, nproj);
    } else if (ok) {
        ok = concat_pieces(r, out);
    }
    for (size_t i = 0; i < r->pieces.len; i++)
        rf_drel_free(c, &r->pieces.items[i]);
    for (int i = 0; i < r->ndirs; i++)
        rf_cuda_free(c, (void *)r->dirs[i].off, r->dir_bytes[i]);
    for (int i = 0; i < r->nhubs; i++) {
        rf_cuda_free(c, (void *)r->hubs[i].slot, r->hub_slot_bytes[i]);
        rf_cuda_free(c, (void *)r->hubs[i].bits, r->hub_bits_bytes[i]);
    }
    free(r->pieces.items);
    free(r);
    return ok;
}

bool rf_cuda_multijoin(rf_cuda_ctx *c, int nin, const rf_drel *const *ins, const int *in_first, const int *in_vars,
                       int nvars, const rf_code *filter, int nproj, const rf_code *proj, rf_drel *out,
                       const char *what, rf_status *st)
{
    return multijoin_run(c, nin, ins, in_first, in_vars, nvars, filter, nproj, proj, out, NULL, what, st);
}

bool rf_cuda_multijoin_count(rf_cuda_ctx *c, int nin, const rf_drel *const *ins, const int *in_first,
                             const int *in_vars, int nvars, uint64_t *counted, const char *what, rf_status *st)
{
    *counted = 0;
    return multijoin_run(c, nin, ins, in_first, in_vars, nvars, NULL, 0, NULL, NULL, counted, what, st);
}
