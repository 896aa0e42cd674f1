/* The worst-case-optimal multiway join (RF_K_MULTIJOIN): a leapfrog
 * triejoin (Veldhuizen 2014; thesis ch. 5) over sorted columnar tables.
 *
 * Each input is sorted with its columns in the variable order, so the rows
 * that agree on the columns bound so far are one contiguous range, and
 * the values of its next column within that range are sorted: a trie
 * level without building a trie (the thesis' TrieArray is the same data
 * with the levels deduplicated). Binding variable d intersects the next
 * column of every input that has one for d, each within its range, by
 * leapfrogging: every list seeks (galloping search) to the largest value
 * seen, until all agree. A binding of every variable is one result; the
 * bindings go through the filter and projections a batch at a time (the
 * MAP/JOIN emitter), so intermediate results are never stored.
 *
 * Threads take pieces of the first variable's values (split at evenly
 * spaced rows of its largest input); each piece's rows are appended to its
 * own table and the tables are concatenated in piece order, so the output
 * order does not depend on the thread count.
 *
 * Hubs (a skewed graph's high-degree vertices): where an input's range by
 * its first column is long, a bitmap of its second column's values there
 * makes a value's membership one bit; a variable bound with such a range
 * among its lists is bound by walking its shortest list and testing the
 * others (a bit, or a seek forward where there is no bitmap) instead of
 * leapfrogging (the GPU's hub bitmaps, primitives/cuda/multijoin.c). */
#include "emit.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MAXV RF_MULTIJOIN_MAX_VARS
#define MAXIN RF_MULTIJOIN_MAX_IN

/* An input's hub bitmaps: the ranges of one first-column value of at
 * least `least` rows, rows start[h] .. end[h] - 1, have bitmap h of the
 * second column's values (bit v - min), words 64-bit words each. */
typedef struct lftj_hubs {
    const rf_table *t;
    size_t n, least, words;
    size_t *start, *end;
    uint64_t *bits;
    rf_word min;
} lftj_hubs;

#define NO_HUB SIZE_MAX

typedef struct lftj_job {
    int nin, nvars;
    /* each input's hub bitmaps (hub_of[i] indexes hubs; -1: none) */
    lftj_hubs hubs[MAXIN];
    int nhubs, hub_of[MAXIN];
    bool with_hubs;          /* some input has bitmaps */
    const rf_table *const *ins;
    /* per variable: the inputs with a column binding it, and the column */
    int npart[MAXV];
    int part_in[MAXV][MAXIN];
    int part_col[MAXV][MAXIN];
    const rf_code *filter, *proj;
    int nproj;
    /* the first variable's values: piece p covers [bound[p], bound[p+1]),
     * the last piece every value from bound[npieces-1] up */
    int npieces;
    rf_word *bound;
    rf_table *pieces;
    rf_status *sts;
    size_t *counts;          /* count-only: bindings per piece (no filter) */
} lftj_job;

typedef struct lftj_state {
    const lftj_job *j;
    size_t lo[MAXV + 1][MAXIN], hi[MAXV + 1][MAXIN];
    rf_word binding[MAXV];   /* the values bound so far */
    rf_word *batch[MAXV];    /* bindings waiting for the emitter, by variable */
    int nbatch;
    size_t count;
    rf_emitter em;
    rf_table *out;
    rf_status *st;
    bool failed;
} lftj_state;

/* First index in [lo, hi) of sorted col with a value >= key (strictly
 * greater when `after`); hi if none. Gallops from lo: a seek that skips d
 * values costs O(log d), which is what makes the intersection of a short
 * list with a long one cheap. */
static inline size_t seek(const rf_word *col, size_t lo, size_t hi, rf_word key, bool after)
{
#define BEFORE(i) (after ? col[i] <= key : col[i] < key)
    if (lo >= hi || !BEFORE(lo))
        return lo;
    size_t step = 1, prev = lo;
    size_t probe = lo + 1;
    while (probe < hi && BEFORE(probe)) {
        prev = probe;
        step <<= 1;
        probe = lo + step;
    }
    if (probe > hi)
        probe = hi;
    /* col[prev] is before key, col[probe] (or hi) is not */
    size_t a = prev + 1, b = probe;
    while (a < b) {
        size_t m = a + (b - a) / 2;
        if (BEFORE(m))
            a = m + 1;
        else
            b = m;
    }
    return a;
#undef BEFORE
}

static void flush(lftj_state *s)
{
    if (s->nbatch == 0 || s->failed)
        return;
    if (!rf_emit_batch(&s->em, s->batch, 0, s->nbatch, s->out, s->st))
        s->failed = true;
    s->nbatch = 0;
}

/* The hub bitmap of input i's range [lo, hi) where it has one, else
 * NO_HUB. Only ranges long enough are looked up. */
static size_t hub_slot(const lftj_job *j, int i, size_t lo, size_t hi)
{
    if (j->hub_of[i] < 0)
        return NO_HUB;
    const lftj_hubs *h = &j->hubs[j->hub_of[i]];
    if (hi - lo < h->least)
        return NO_HUB;
    size_t a = 0, b = h->n;
    while (a < b) {
        size_t m = a + (b - a) / 2;
        if (h->start[m] < lo)
            a = m + 1;
        else
            b = m;
    }
    return a < h->n && h->start[a] == lo && h->end[a] == hi ? a : NO_HUB;
}

static bool hub_has(const lftj_hubs *h, size_t slot, rf_word v)
{
    if (v < h->min)
        return false;
    rf_word b = v - h->min;
    return b / 64 < h->words && ((h->bits[slot * h->words + b / 64] >> (b % 64)) & 1u);
}

static void bind(lftj_state *s, int d);

/* Binds variable d by walking list drv (the shortest) and testing each of
 * its values in the others: a bit where slot[x] names a bitmap, else a
 * seek forward. The same bindings in the same order as leapfrogging. */
static void bind_by_walk(lftj_state *s, int d, int k, int drv, const rf_word *const *col, size_t *cur,
                         const size_t *end, const size_t *slot)
{
    const lftj_job *j = s->j;
    bool last = d + 1 == j->nvars;   /* no ranges needed below */
    for (size_t jd = cur[drv]; jd < end[drv];) {
        rf_word key = col[drv][jd];
        size_t jnext = seek(col[drv], jd + 1, end[drv], key, true);
        bool ok = true;
        for (int x = 0; ok && x < k; x++) {
            if (x == drv)
                continue;
            if (slot[x] != NO_HUB) {
                ok = hub_has(&j->hubs[j->hub_of[j->part_in[d][x]]], slot[x], key);
                continue;
            }
            cur[x] = seek(col[x], cur[x], end[x], key, false);
            if (cur[x] == end[x])
                return;   /* no later value of drv is in list x */
            ok = col[x][cur[x]] == key;
        }
        if (ok) {
            for (int x = 0; x < k && !last; x++) {
                int i = j->part_in[d][x];
                size_t from = x == drv ? jd : seek(col[x], cur[x], end[x], key, false);
                size_t to = x == drv ? jnext : seek(col[x], from + 1, end[x], key, true);
                s->lo[d + 1][i] = from;
                s->hi[d + 1][i] = to;
                cur[x] = to;
            }
            s->binding[d] = key;
            bind(s, d + 1);
            if (s->failed)
                return;
        }
        jd = jnext;
    }
}

/* Binds variable d within the ranges lo[d], hi[d] and recurses. */
static void bind(lftj_state *s, int d)
{
    const lftj_job *j = s->j;
    if (d == j->nvars) {
        if (j->counts) {
            s->count++;
            return;
        }
        if (s->nbatch == RF_BATCH)
            flush(s);
        for (int v = 0; v < j->nvars; v++)
            s->batch[v][s->nbatch] = s->binding[v];
        s->nbatch++;
        return;
    }
    int k = j->npart[d];
    const rf_word *col[MAXIN];
    size_t cur[MAXIN], end[MAXIN];
    for (int x = 0; x < k; x++) {
        int i = j->part_in[d][x];
        col[x] = j->ins[i]->cols[j->part_col[d][x]];
        cur[x] = s->lo[d][i];
        end[x] = s->hi[d][i];
        if (cur[x] >= end[x])
            return;
    }
    /* inputs without variable d keep their ranges below */
    memcpy(s->lo[d + 1], s->lo[d], (size_t)j->nin * sizeof s->lo[d][0]);
    memcpy(s->hi[d + 1], s->hi[d], (size_t)j->nin * sizeof s->hi[d][0]);
    if (j->with_hubs && k > 1) {
        size_t slot[MAXIN];
        int drv = 0;
        bool any = false;
        for (int x = 0; x < k; x++) {
            if (end[x] - cur[x] < end[drv] - cur[drv])
                drv = x;
            slot[x] = j->part_col[d][x] == 1 ? hub_slot(j, j->part_in[d][x], cur[x], end[x]) : NO_HUB;
        }
        for (int x = 0; x < k; x++)
            any = any || (x != drv && slot[x] != NO_HUB);
        if (any) {
            bind_by_walk(s, d, k, drv, col, cur, end, slot);
            return;
        }
    }
    for (;;) {
        rf_word key = col[0][cur[0]];
        for (int x = 1; x < k; x++)
            if (col[x][cur[x]] > key)
                key = col[x][cur[x]];
        /* leapfrog: each list in turn seeks to key; a larger value found
         * becomes key, until k lists in a row agree */
        for (int x = 0, agree = 0; agree < k; x = x + 1 == k ? 0 : x + 1) {
            cur[x] = seek(col[x], cur[x], end[x], key, false);
            if (cur[x] == end[x])
                return;
            if (col[x][cur[x]] == key) {
                agree++;
            } else {
                key = col[x][cur[x]];
                agree = 1;
            }
        }
        /* key is in every list: below, each input's rows equal to it */
        for (int x = 0; x < k; x++) {
            int i = j->part_in[d][x];
            size_t next = seek(col[x], cur[x] + 1, end[x], key, true);
            s->lo[d + 1][i] = cur[x];
            s->hi[d + 1][i] = next;
            cur[x] = next;
        }
        s->binding[d] = key;
        bind(s, d + 1);
        if (s->failed)
            return;
        for (int x = 0; x < k; x++)
            if (cur[x] == end[x])
                return;
    }
}

static void lftj_piece(void *ctx, int p)
{
    lftj_job *j = ctx;
    lftj_state *s = rf_calloc(1, sizeof *s);
    s->j = j;
    s->st = &j->sts[p];
    s->out = &j->pieces[p];
    rf_table_init(s->out, j->nproj);
    if (!j->counts) {
        rf_emitter_init(&s->em, j->filter, j->nproj, j->proj);
        for (int v = 0; v < j->nvars; v++)
            s->batch[v] = rf_malloc(RF_BATCH * sizeof *s->batch[v]);
    }
    for (int i = 0; i < j->nin; i++) {
        s->lo[0][i] = 0;
        s->hi[0][i] = j->ins[i]->nrows;
    }
    /* this piece's values of the first variable */
    for (int x = 0; x < j->npart[0]; x++) {
        int i = j->part_in[0][x];
        const rf_word *c0 = j->ins[i]->cols[0];
        size_t n = j->ins[i]->nrows;
        s->lo[0][i] = p == 0 ? 0 : seek(c0, 0, n, j->bound[p], false);
        s->hi[0][i] = p + 1 == j->npieces ? n : seek(c0, 0, n, j->bound[p + 1], false);
    }
    bind(s, 0);
    if (!j->counts) {
        flush(s);
        for (int v = 0; v < j->nvars; v++)
            free(s->batch[v]);
        rf_emitter_free(&s->em);
    } else {
        j->counts[p] = s->count;
    }
    free(s);
}

/* Hub bitmaps are made for ranges of at least RF_LFTJ_HUB_MIN rows (the
 * least power of two from there at which they fit RF_LFTJ_HUB_SPACE times
 * the input's own bytes, longest first), for inputs of RF_LFTJ_HUB_ROWS
 * rows or more. RF_CPU_LFTJ_HUBS=off: never; always: every range of every
 * input (tests). RF_CPU_LFTJ_HUB_MIN=N: another least length (measuring). */
#define RF_LFTJ_HUB_MIN 512
#define RF_LFTJ_HUB_ROWS ((size_t)1 << 16)
#define RF_LFTJ_HUB_SPACE 4

typedef struct hub_fill_job {
    const rf_table *t;
    lftj_hubs *h;
} hub_fill_job;

static void hub_fill(void *ctx, int slot)
{
    hub_fill_job *f = ctx;
    const lftj_hubs *h = f->h;
    uint64_t *bits = h->bits + (size_t)slot * h->words;
    const rf_word *c1 = f->t->cols[1];
    for (size_t r = h->start[slot]; r < h->end[slot]; r++) {
        rf_word b = c1[r] - h->min;
        bits[b / 64] |= (uint64_t)1 << (b % 64);
    }
}

/* Input t's hub bitmaps into h (h->n 0: none worth making). */
static void make_hubs(const rf_table *t, int mode, size_t min_len, lftj_hubs *h)
{
    memset(h, 0, sizeof *h);
    h->t = t;
    size_t n = t->nrows;
    if (t->arity < 2 || n == 0 || (mode == 1 && n < RF_LFTJ_HUB_ROWS))
        return;
    const rf_word *c0 = t->cols[0], *c1 = t->cols[1];
    size_t hist[65] = {0};
    rf_word lo = c1[0], hi = c1[0];
    for (size_t r = 0; r < n; r++) {
        lo = c1[r] < lo ? c1[r] : lo;
        hi = c1[r] > hi ? c1[r] : hi;
    }
    for (size_t r = 0; r < n;) {
        size_t e = seek(c0, r + 1, n, c0[r], true), len = e - r;
        int k = 0;
        while (k < 63 && ((size_t)1 << (k + 1)) <= len)
            k++;
        hist[k]++;
        r = e;
    }
    if (hi - lo >= ((rf_word)1 << 36))
        return;
    size_t words = (size_t)((hi - lo) / 64) + 1, per = words * sizeof(uint64_t);
    size_t cap = n * (size_t)t->arity * sizeof(rf_word) * RF_LFTJ_HUB_SPACE;
    int k = 0;
    while (mode == 1 && k < 63 && ((size_t)1 << k) < min_len)
        k++;
    size_t nhub = 0;
    for (; k < 64; k++) {
        nhub = 0;
        for (int x = k; x < 65; x++)
            nhub += hist[x];
        if (nhub == 0 || nhub <= cap / per)
            break;
    }
    if (nhub == 0 || k >= 64)
        return;
    h->least = (size_t)1 << k;
    h->words = words;
    h->min = lo;
    h->start = rf_malloc(nhub * sizeof *h->start);
    h->end = rf_malloc(nhub * sizeof *h->end);
    for (size_t r = 0; r < n;) {
        size_t e = seek(c0, r + 1, n, c0[r], true);
        if (e - r >= h->least) {
            h->start[h->n] = r;
            h->end[h->n++] = e;
        }
        r = e;
    }
    h->bits = rf_calloc(h->n * words, sizeof *h->bits);
    hub_fill_job f = {t, h};
    rf_par_for((int)h->n, hub_fill, &f);
}

/* Every input whose second column a level reads within a range of its
 * first gets its hub bitmaps (one set per distinct table). */
static void lftj_hubs_make(lftj_job *j)
{
    const char *env = getenv("RF_CPU_LFTJ_HUBS"), *least = getenv("RF_CPU_LFTJ_HUB_MIN");
    int mode = !env || !*env ? 1 : strcmp(env, "off") == 0 ? 0 : strcmp(env, "always") == 0 ? 2 : 1;
    size_t min_len = least && *least ? (size_t)strtoull(least, NULL, 10) : RF_LFTJ_HUB_MIN;
    for (int i = 0; i < j->nin; i++) {
        j->hub_of[i] = -1;
        bool second = false;
        for (int d = 0; d < j->nvars; d++)
            for (int x = 0; x < j->npart[d]; x++)
                second = second || (j->part_in[d][x] == i && j->part_col[d][x] == 1);
        if (mode == 0 || !second)
            continue;
        int made = -1;   /* the same table's, made for an input before */
        for (int h = 0; h < j->nhubs && made < 0; h++)
            if (j->hubs[h].t == j->ins[i])
                made = h;
        if (made >= 0) {
            j->hub_of[i] = j->hubs[made].n ? made : -1;
            continue;
        }
        lftj_hubs *h = &j->hubs[j->nhubs++];
        make_hubs(j->ins[i], mode, min_len, h);
        j->hub_of[i] = h->n ? j->nhubs - 1 : -1;
        j->with_hubs = j->with_hubs || h->n > 0;
    }
}

static void lftj_hubs_free(lftj_job *j)
{
    for (int h = 0; h < j->nhubs; h++) {
        free(j->hubs[h].start);
        free(j->hubs[h].end);
        free(j->hubs[h].bits);
    }
    j->nhubs = 0;
}

/* Sets up the job: which inputs bind each variable, and the pieces. */
static void lftj_prepare(lftj_job *j, int nin, const rf_table *const *ins, const int *in_first,
                         const int *in_vars, int nvars, bool single)
{
    j->nin = nin;
    j->nvars = nvars;
    j->ins = ins;
    for (int i = 0; i < nin; i++)
        for (int c = 0; c < in_first[i + 1] - in_first[i]; c++) {
            int v = in_vars[in_first[i] + c];
            j->part_in[v][j->npart[v]] = i;
            j->part_col[v][j->npart[v]++] = c;
        }
    /* pieces of the first variable's values, at rows of its largest input */
    int big = j->part_in[0][0];
    for (int x = 1; x < j->npart[0]; x++)
        if (ins[j->part_in[0][x]]->nrows > ins[big]->nrows)
            big = j->part_in[0][x];
    size_t n = ins[big]->nrows;
    /* Many pieces a thread, and small ones: a value's work grows with
     * its degree (and faster), so a few hubs would leave threads idle;
     * a piece costs only a binary search per input to start. */
    int threads = rf_prims_threads();
    size_t most = n / 64;
    j->npieces = single || threads <= 1 ? 1 : (int)(most < (size_t)threads * 16 ? most : (size_t)threads * 16);
    if (j->npieces < 1)
        j->npieces = 1;
    j->bound = rf_calloc((size_t)j->npieces + 1, sizeof *j->bound);
    for (int p = 1; p < j->npieces; p++)
        j->bound[p] = ins[big]->cols[0][n * (size_t)p / (size_t)j->npieces];
    j->pieces = rf_calloc((size_t)j->npieces, sizeof *j->pieces);
    j->sts = rf_calloc((size_t)j->npieces, sizeof *j->sts);
    lftj_hubs_make(j);
}

bool rf_prim_multijoin(int nin, const rf_table *const *ins, const int *in_first, const int *in_vars, int nvars,
                       const rf_code *filter, int nproj, const rf_code *proj, rf_table *out, rf_status *st)
{
    lftj_job j;
    memset(&j, 0, sizeof j);
    j.filter = filter;
    j.proj = proj;
    j.nproj = nproj;
    lftj_prepare(&j, nin, ins, in_first, in_vars, nvars, rf_codes_intern(filter, nproj, proj));
    rf_par_for(j.npieces, lftj_piece, &j);
    free(j.bound);
    lftj_hubs_free(&j);
    return rf_pieces_finish(j.pieces, j.sts, j.npieces, out, st);
}

size_t rf_prim_multijoin_count(int nin, const rf_table *const *ins, const int *in_first, const int *in_vars,
                               int nvars)
{
    lftj_job j;
    memset(&j, 0, sizeof j);
    lftj_prepare(&j, nin, ins, in_first, in_vars, nvars, false);
    j.counts = rf_calloc((size_t)j.npieces, sizeof *j.counts);
    rf_par_for(j.npieces, lftj_piece, &j);
    size_t total = 0;
    for (int p = 0; p < j.npieces; p++) {
        total += j.counts[p];
        rf_table_free(&j.pieces[p]);
    }
    free(j.counts);
    free(j.pieces);
    free(j.sts);
    free(j.bound);
    lftj_hubs_free(&j);
    return total;
}
