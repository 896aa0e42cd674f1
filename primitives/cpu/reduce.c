/* A MAP and the aggregation of its rows in one pass: Kernel Weaver's
 * reducing gather on the CPU. Each piece of the input (one per thread)
 * goes batch by batch through the MAP's filter and projections (the group
 * keys first) and the aggregates' arguments (over the input row), and its
 * rows fold at once into the piece's own hash table of groups; no row of
 * the MAP is stored. The pieces' tables then merge into one, whose groups
 * come out sorted by key: the result of MAP, SORT and AGG run one by one. */
#include "emit.h"

#include "rf_agg_ops.h"
#include "rf_scalar_ops.h" /* RF_SERR_TOTAL_RANGE */

#include <stdlib.h>
#include <string.h>

/* One piece's groups: an open-addressing index over group numbers, and
 * per group its keys, row count and each aggregate's state. */
typedef struct groups {
    int nkeys, naggs;
    size_t n, cap;            /* groups; index slots (a power of two) */
    size_t *slot;             /* group + 1, 0 empty */
    RF_VEC(rf_word) keys;     /* n * nkeys */
    RF_VEC(uint64_t) count;
    RF_VEC(rf_sum128) sum;    /* n * naggs (total, avg) */
    RF_VEC(rf_word) best;     /* n * naggs (min, max) */
} groups;

static uint64_t hash_words(const rf_word *k, int n)
{
    uint64_t h = 0x9e3779b97f4a7c15ull;
    for (int c = 0; c < n; c++) {
        h ^= k[c];
        h *= 0xff51afd7ed558ccdull;
        h ^= h >> 32;
    }
    return h;
}

/* Group x's keys (NULL without keys: nothing to point into). */
static const rf_word *group_keys(const groups *g, size_t x)
{
    return g->nkeys > 0 ? g->keys.items + x * (size_t)g->nkeys : NULL;
}

static bool same_words(const rf_word *a, const rf_word *b, int n)
{
    for (int c = 0; c < n; c++)
        if (a[c] != b[c])
            return false;
    return true;
}

static void groups_init(groups *g, int nkeys, int naggs)
{
    memset(g, 0, sizeof *g);
    g->nkeys = nkeys;
    g->naggs = naggs;
    g->cap = 64;
    g->slot = rf_calloc(g->cap, sizeof *g->slot);
}

static void groups_free(groups *g)
{
    free(g->slot);
    RF_VEC_FREE(g->keys);
    RF_VEC_FREE(g->count);
    RF_VEC_FREE(g->sum);
    RF_VEC_FREE(g->best);
}

static void groups_grow(groups *g)
{
    free(g->slot);
    g->cap *= 2;
    g->slot = rf_calloc(g->cap, sizeof *g->slot);
    for (size_t x = 0; x < g->n; x++) {
        size_t h = (size_t)hash_words(group_keys(g, x), g->nkeys) & (g->cap - 1);
        while (g->slot[h])
            h = (h + 1) & (g->cap - 1);
        g->slot[h] = x + 1;
    }
}

/* The group of keys k, made (empty) when new. */
static size_t groups_find(groups *g, const rf_word *k)
{
    size_t h = (size_t)hash_words(k, g->nkeys) & (g->cap - 1);
    for (; g->slot[h]; h = (h + 1) & (g->cap - 1)) {
        size_t x = g->slot[h] - 1;
        if (same_words(group_keys(g, x), k, g->nkeys))
            return x;
    }
    size_t x = g->n++;
    g->slot[h] = x + 1;
    for (int c = 0; c < g->nkeys; c++)
        RF_PUSH(g->keys, k[c]);
    RF_PUSH(g->count, 0);
    for (int j = 0; j < g->naggs; j++) {
        RF_PUSH(g->sum, ((rf_sum128){0, 0}));
        RF_PUSH(g->best, 0);
    }
    if (2 * g->n > g->cap)
        groups_grow(g);
    return x;
}

/* Folds value v (the first of its group when the group's count is 0) of
 * aggregate j into group x. */
static void fold(groups *g, size_t x, int j, rf_aggfn fn, rf_type t, rf_word v, bool first)
{
    size_t at = x * (size_t)g->naggs + (size_t)j;
    if (fn == RF_AGG_MIN || fn == RF_AGG_MAX) {
        int c = first ? 0 : rf_value_compare(t, v, g->best.items[at]);
        if (first || (fn == RF_AGG_MIN ? c < 0 : c > 0))
            g->best.items[at] = v;
    } else if (fn == RF_AGG_TOTAL || fn == RF_AGG_AVG) {
        rf_sum128_add(&g->sum.items[at], rf_word_to_int(v));
    }
}

typedef struct reduce_job {
    const rf_table *in;
    const rf_code *filter;
    int nvals;                /* the emitter's projections: keys, other values, arguments */
    const rf_code *vals;
    int nkeys, naggs;
    const rf_aggfn *fns;
    const rf_type *result_types;
    const int *arg_val;       /* aggregate j's value among vals, -1 for a count */
    int npieces;
    groups *g;                /* [piece] */
    rf_status *sts;           /* [piece] */
} reduce_job;

static void reduce_piece(void *ctx, int p)
{
    reduce_job *j = ctx;
    size_t n = j->in->nrows;
    size_t b = n * (size_t)p / (size_t)j->npieces, e = n * (size_t)(p + 1) / (size_t)j->npieces;
    groups *g = &j->g[p];
    groups_init(g, j->nkeys, j->naggs);
    rf_emitter em;
    rf_emitter_init(&em, j->filter, j->nvals, j->vals);
    rf_table batch;
    rf_table_init(&batch, j->nvals);
    rf_word *key = rf_malloc((size_t)(j->nkeys > 0 ? j->nkeys : 1) * sizeof *key);
    /* The previous row's group: rows of one group often come together (a
     * relation sorted on the keys: q18's lineitem by orderkey, four rows a
     * group), and then need no hash lookup. */
    size_t last = SIZE_MAX;
    for (size_t base = b; base < e; base += RF_BATCH) {
        int cnt = e - base < RF_BATCH ? (int)(e - base) : RF_BATCH;
        batch.nrows = 0;
        if (!rf_emit_batch(&em, j->in->cols, base, cnt, &batch, &j->sts[p]))
            break;
        for (size_t r = 0; r < batch.nrows; r++) {
            for (int c = 0; c < j->nkeys; c++)
                key[c] = batch.cols[c][r];
            size_t x = last != SIZE_MAX && same_words(group_keys(g, last), key, j->nkeys) ? last : groups_find(g, key);
            last = x;
            bool first = g->count.items[x]++ == 0;
            for (int a = 0; a < j->naggs; a++)
                if (j->arg_val[a] >= 0)
                    fold(g, x, a, j->fns[a], j->result_types[a], batch.cols[j->arg_val[a]][r], first);
        }
    }
    free(key);
    rf_table_free(&batch);
    rf_emitter_free(&em);
}

/* Piece q's groups into piece 0's. */
static void merge_into(const reduce_job *j, groups *to, const groups *from)
{
    for (size_t y = 0; y < from->n; y++) {
        size_t x = groups_find(to, group_keys(from, y));
        bool first = to->count.items[x] == 0;
        to->count.items[x] += from->count.items[y];
        for (int a = 0; a < j->naggs; a++) {
            size_t at = x * (size_t)to->naggs + (size_t)a, bt = y * (size_t)from->naggs + (size_t)a;
            if (j->fns[a] == RF_AGG_TOTAL || j->fns[a] == RF_AGG_AVG)
                rf_sum128_merge(&to->sum.items[at], from->sum.items[bt]);
            else if (j->fns[a] == RF_AGG_MIN || j->fns[a] == RF_AGG_MAX)
                fold(to, x, a, j->fns[a], j->result_types[a], from->best.items[bt], first);
        }
    }
}

bool rf_prim_map_reduce(const rf_table *in, const rf_code *filter, int nproj, const rf_code *proj, int nkeys,
                        int naggs, const rf_aggfn *fns, const rf_type *result_types, const rf_code *args,
                        rf_table *out, rf_status *st)
{
    if (nkeys > nproj || naggs < 1)
        return rf_fail(st, RF_EXIT_RUNTIME_ERROR, "a reduction of %d keys over %d columns", nkeys, nproj);
    for (int j = 0; j < naggs; j++) {
        bool float_sum = (fns[j] == RF_AGG_TOTAL || fns[j] == RF_AGG_AVG) && args[j].n > 0 &&
                         args[j].ins[args[j].n - 1].type == RF_TYPE_FLOAT64;
        if (fns[j] == RF_AGG_COUNT_DISTINCT || float_sum)
            return rf_fail(st, RF_EXIT_RUNTIME_ERROR, "hash aggregation of an order-sensitive aggregate");
    }
    /* The values each row makes: the keys, the computed projections (which
     * may fault: evaluated on the rows the MAP evaluates them on, as
     * unfused), then the arguments. Column projections are never read. */
    rf_code *vals = rf_calloc((size_t)(nproj + naggs + 1), sizeof *vals);
    int *arg_val = rf_calloc((size_t)naggs, sizeof *arg_val), nvals = 0;
    for (int c = 0; c < nproj; c++)
        if (c < nkeys || rf_code_as_column(&proj[c]) < 0)
            vals[nvals++] = proj[c];
    for (int j = 0; j < naggs; j++) {
        arg_val[j] = -1;
        if (fns[j] != RF_AGG_COUNT) {
            arg_val[j] = nvals;
            vals[nvals++] = args[j];
        }
    }
    /* At least one value: the emitter counts a batch's rows by the rows it
     * makes, and a nullary result only records that one exists. */
    static const rf_instr zero = {RF_EX_CONST, RF_TYPE_INT64, RF_TYPE_INT64, 0, 0, 0};
    if (nvals == 0)
        vals[nvals++] = (rf_code){1, (rf_instr *)&zero};
    reduce_job j = {in, filter, nvals, vals, nkeys, naggs, fns, result_types, arg_val, 1, NULL, NULL};
    j.npieces = rf_codes_intern(filter, nvals, vals) ? 1 : rf_pieces_for(in->nrows, 1);
    j.g = rf_calloc((size_t)j.npieces, sizeof *j.g);
    j.sts = rf_calloc((size_t)j.npieces, sizeof *j.sts);
    rf_par_for(j.npieces, reduce_piece, &j);
    bool ok = rf_pieces_status(j.sts, j.npieces, st);
    groups *all = &j.g[0];
    for (int p = 1; ok && p < j.npieces; p++)
        merge_into(&j, all, &j.g[p]);
    rf_table_init(out, nkeys + naggs);
    if (ok && all->n == 0) {
        /* No row: what the AGG makes of none (a keyless count is one row
         * of 0, a keyless total none). */
        rf_table none;
        rf_table_init(&none, in->arity > nkeys ? in->arity : nkeys);
        rf_table_free(out);
        ok = rf_prim_aggregate_multi(&none, nkeys, naggs, fns, result_types, args, out, st);
        rf_table_free(&none);
    } else if (ok) {
        /* The groups in key order (the AGG result is sorted): keys and group
         * number, sorted (the keys are distinct, so the key order). */
        size_t ng = all->n;
        rf_table keys, sorted;
        rf_table_init(&keys, nkeys + 1);
        rf_table_resize(&keys, ng);
        for (size_t x = 0; x < ng; x++) {
            for (int c = 0; c < nkeys; c++)
                keys.cols[c][x] = all->keys.items[x * (size_t)nkeys + (size_t)c];
            keys.cols[nkeys][x] = x;
        }
        rf_prim_sort(&keys, &sorted);
        rf_table_free(&keys);
        rf_table_resize(out, ng);
        for (size_t r = 0; r < ng && ok; r++) {
            size_t x = sorted.cols[nkeys][r];
            for (int c = 0; c < nkeys; c++)
                out->cols[c][r] = sorted.cols[c][r];
            for (int a = 0; a < naggs && ok; a++) {
                size_t at = x * (size_t)naggs + (size_t)a;
                rf_word *res = &out->cols[nkeys + a][r];
                if (fns[a] == RF_AGG_COUNT) {
                    *res = (rf_word)all->count.items[x];
                } else if (fns[a] == RF_AGG_MIN || fns[a] == RF_AGG_MAX) {
                    *res = all->best.items[at];
                } else if (fns[a] == RF_AGG_AVG) {
                    rf_type t = (rf_type)args[a].ins[args[a].n - 1].type;
                    int scale = rf_type_is_decimal(t) ? rf_decimal_scale(t) : 0;
                    *res = rf_word_from_double(rf_avg_exact(all->sum.items[at], all->count.items[x], scale));
                } else {
                    int64_t v;
                    rf_sum128 s = all->sum.items[at];
                    if (rf_sum128_to_i64(s, &v) && rf_total_fits(result_types[a], v))
                        *res = rf_word_from_int(v);
                    else
                        ok = rf_scalar_fail2(st, RF_SERR_TOTAL_RANGE, s.lo, (uint64_t)s.hi, (int)result_types[a]);
                }
            }
        }
        rf_table_free(&sorted);
    }
    if (!ok)
        rf_table_clear(out);
    for (int p = 0; p < j.npieces; p++)
        groups_free(&j.g[p]);
    free(j.g);
    free(j.sts);
    free(vals);
    free(arg_val);
    return ok;
}
