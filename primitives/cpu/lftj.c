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
 * order does not depend on the thread count. */
#include "emit.h"

#include <stdlib.h>
#include <string.h>

#define MAXV RF_MULTIJOIN_MAX_VARS
#define MAXIN RF_MULTIJOIN_MAX_IN

typedef struct lftj_job {
    int nin, nvars;
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
    return total;
}
