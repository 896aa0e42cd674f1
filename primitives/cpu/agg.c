/* AGG: one pass over a sorted input; a group is a run of rows equal on the
 * first nkeys columns, so the output is sorted too. Each aggregate fills its
 * own result column (hir.h, RF_K_AGG, has the semantics). */
#include "prims_internal.h"

#include "rf_agg_ops.h"
#include "rf_scalar_ops.h" /* RF_SERR_TOTAL_RANGE */

#include <stdlib.h>
#include <string.h>

/* The argument's values, one per input row (NULL after a fault). */
static rf_word *arg_values(const rf_table *in, const rf_code *arg, rf_status *st)
{
    size_t n = in->nrows;
    rf_word *vals = rf_malloc(rf_mul_size(n, sizeof *vals));
    if (!rf_code_eval_batch(arg, in->cols, 0, n, vals, st)) {
        free(vals);
        return NULL;
    }
    return vals;
}

/* count_distinct: the distinct (group, value) pairs, counted per group. */
static void count_distinct(const rf_word *vals, size_t n, const size_t *starts, size_t ng, rf_word *res)
{
    rf_table pairs;
    rf_table_init(&pairs, 2);
    rf_table_resize(&pairs, n);
    for (size_t g = 0; g < ng; g++)
        for (size_t i = starts[g]; i < starts[g + 1]; i++) {
            pairs.cols[0][i] = g;
            pairs.cols[1][i] = vals[i];
        }
    rf_prim_sort_unique(&pairs);
    memset(res, 0, ng * sizeof *res);
    for (size_t i = 0; i < pairs.nrows; i++)
        res[pairs.cols[0][i]]++;
    rf_table_free(&pairs);
}

/* One aggregate over every group: res[g] for g < ng. */
static bool aggregate_one(const rf_table *in, const size_t *starts, size_t ng, rf_aggfn fn,
                          rf_type result_type, const rf_code *arg, rf_word *res, rf_status *st)
{
    if (fn == RF_AGG_COUNT) {
        for (size_t g = 0; g < ng; g++)
            res[g] = (rf_word)(starts[g + 1] - starts[g]);
        return true;
    }
    if (!arg || arg->n == 0)
        return rf_fail(st, RF_EXIT_RUNTIME_ERROR, "aggregate without an argument");
    rf_word *vals = arg_values(in, arg, st);
    if (!vals)
        return false;
    rf_type at = (rf_type)arg->ins[arg->n - 1].type;
    bool ok = true;
    if (fn == RF_AGG_COUNT_DISTINCT) {
        count_distinct(vals, in->nrows, starts, ng, res);
        free(vals);
        return true;
    }
    for (size_t g = 0; g < ng && ok; g++) {
        size_t b = starts[g], e = starts[g + 1];
        rf_word acc = vals[b];
        switch (fn) {
        case RF_AGG_TOTAL:
            if (result_type == RF_TYPE_FLOAT64) {
                /* In row order: the float sum depends on it (rf_agg_ops.h). */
                for (size_t i = b + 1; i < e && ok; i++)
                    ok = rf_scalar_binary(RF_EX_ADD, result_type, acc, vals[i], &acc, st);
            } else {
                /* Exact, then checked once: no order-dependent overflow. */
                rf_sum128 s = {0, 0};
                for (size_t i = b; i < e; i++)
                    rf_sum128_add(&s, rf_word_to_int(vals[i]));
                int64_t v;
                if (rf_sum128_to_i64(s, &v) && rf_total_fits(result_type, v))
                    acc = rf_word_from_int(v);
                else
                    ok = rf_scalar_fail2(st, RF_SERR_TOTAL_RANGE, s.lo, (uint64_t)s.hi, (int)result_type);
            }
            break;
        case RF_AGG_MIN:
            for (size_t i = b + 1; i < e; i++)
                if (rf_value_compare(result_type, vals[i], acc) < 0)
                    acc = vals[i];
            break;
        case RF_AGG_MAX:
            for (size_t i = b + 1; i < e; i++)
                if (rf_value_compare(result_type, vals[i], acc) > 0)
                    acc = vals[i];
            break;
        case RF_AGG_AVG:
            if (at == RF_TYPE_FLOAT64) {
                /* In row order, as total() adds (overflow is its error). */
                for (size_t i = b + 1; i < e && ok; i++)
                    ok = rf_scalar_binary(RF_EX_ADD, RF_TYPE_FLOAT64, acc, vals[i], &acc, st);
                acc = rf_word_from_double(rf_avg_float(rf_word_to_double(acc), e - b));
            } else {
                rf_sum128 s = {0, 0};
                for (size_t i = b; i < e; i++)
                    rf_sum128_add(&s, rf_word_to_int(vals[i]));
                int scale = rf_type_is_decimal(at) ? rf_decimal_scale(at) : 0;
                acc = rf_word_from_double(rf_avg_exact(s, e - b, scale));
            }
            break;
        default:
            ok = rf_fail(st, RF_EXIT_RUNTIME_ERROR, "bad aggregate function %d", (int)fn);
            break;
        }
        res[g] = acc;
    }
    free(vals);
    return ok;
}

bool rf_prim_aggregate_multi(const rf_table *in, int nkeys, int naggs, const rf_aggfn *fns,
                             const rf_type *result_types, const rf_code *args, rf_table *out,
                             rf_status *st)
{
    rf_table_init(out, nkeys + naggs);
    size_t n = in->nrows;
    if (n == 0) {
        /* Keyless over nothing: one row of zeros when every aggregate is a
         * count, else no row. */
        bool counts = nkeys == 0;
        for (int j = 0; j < naggs; j++)
            counts &= fns[j] == RF_AGG_COUNT || fns[j] == RF_AGG_COUNT_DISTINCT;
        if (counts) {
            rf_table_resize(out, 1);
            for (int j = 0; j < naggs; j++)
                out->cols[j][0] = 0;
        }
        return true;
    }
    RF_VEC(size_t) starts = { NULL, 0, 0 };
    for (size_t g = 0; g < n; g = rf_gallop_upper(in, g + 1, n, in, g, nkeys))
        RF_PUSH(starts, g);
    size_t ng = starts.len;
    RF_PUSH(starts, n);
    rf_table_resize(out, ng);
    for (int c = 0; c < nkeys; c++)
        for (size_t g = 0; g < ng; g++)
            out->cols[c][g] = in->cols[c][starts.items[g]];
    bool ok = true;
    for (int j = 0; j < naggs && ok; j++)
        ok = aggregate_one(in, starts.items, ng, fns[j], result_types[j], args ? &args[j] : NULL,
                           out->cols[nkeys + j], st);
    RF_VEC_FREE(starts);
    if (!ok)
        rf_table_clear(out);
    return ok;
}

bool rf_prim_aggregate(const rf_table *in, int nkeys, rf_aggfn fn, rf_type result_type,
                       const rf_code *arg, rf_table *out, rf_status *st)
{
    return rf_prim_aggregate_multi(in, nkeys, 1, &fn, &result_type, arg, out, st);
}

/* ---- Hash aggregation (Kernel Weaver's reducing gather) ---- */

static uint64_t hash_keys(const rf_table *in, int nkeys, size_t row)
{
    uint64_t h = 0x9e3779b97f4a7c15ull;
    for (int c = 0; c < nkeys; c++) {
        h ^= in->cols[c][row];
        h *= 0xff51afd7ed558ccdull;
        h ^= h >> 32;
    }
    return h;
}

static bool same_keys(const rf_table *in, int nkeys, size_t a, size_t b)
{
    for (int c = 0; c < nkeys; c++)
        if (in->cols[c][a] != in->cols[c][b])
            return false;
    return true;
}

/* The rows as they are (a MAP of their columns) folded by reduce.c: every
 * core hashes its piece into its own table of groups, then they merge. */
bool rf_prim_aggregate_unsorted(const rf_table *in, int nkeys, int naggs, const rf_aggfn *fns,
                                const rf_type *result_types, const rf_code *args, rf_table *out,
                                rf_status *st)
{
    if (nkeys > in->arity)
        return rf_fail(st, RF_EXIT_RUNTIME_ERROR, "an aggregate of %d keys over %d columns", nkeys, in->arity);
    rf_code *cols = rf_calloc((size_t)(nkeys > 0 ? nkeys : 1), sizeof *cols);
    rf_instr *ins = rf_calloc((size_t)(nkeys > 0 ? nkeys : 1), sizeof *ins);
    for (int c = 0; c < nkeys; c++) {
        ins[c].op = RF_EX_COL;
        ins[c].type = ins[c].arg_type = RF_TYPE_INT64; /* a column copy: the type is not read */
        ins[c].index = c;
        cols[c] = (rf_code){1, &ins[c]};
    }
    bool ok = rf_prim_map_reduce(in, NULL, nkeys, cols, nkeys, naggs, fns, result_types, args, out, st);
    free(cols);
    free(ins);
    return ok;
}

size_t rf_prim_sample_groups(const rf_table *in, int nkeys, size_t sample)
{
    size_t n = in->nrows;
    if (sample == 0 || n == 0)
        return 0;
    if (sample > n)
        sample = n;
    size_t cap = 16;
    while (cap < 2 * sample)
        cap *= 2;
    size_t *slot = rf_malloc(rf_mul_size(cap, sizeof *slot)), distinct = 0, stride = n / sample;
    for (size_t i = 0; i < cap; i++)
        slot[i] = SIZE_MAX;
    for (size_t s = 0; s < sample; s++) {
        size_t row = s * stride, h = (size_t)hash_keys(in, nkeys, row) & (cap - 1);
        while (slot[h] != SIZE_MAX && !same_keys(in, nkeys, slot[h], row))
            h = (h + 1) & (cap - 1);
        if (slot[h] == SIZE_MAX) {
            slot[h] = row;
            distinct++;
        }
    }
    free(slot);
    return distinct;
}
