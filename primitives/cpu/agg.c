/* AGG: one pass over a sorted input; a group is a run of rows equal on the
 * first nkeys columns, so the output is sorted too. */
#include "prims_internal.h"

#include <stdlib.h>

bool rf_prim_aggregate(const rf_table *in, int nkeys, rf_aggfn fn, rf_type result_type,
                       const rf_code *arg, rf_table *out, rf_status *st)
{
    rf_table_init(out, nkeys + 1);
    size_t n = in->nrows;
    if (n == 0) {
        /* A keyless count over nothing is the single row (0). */
        if (nkeys == 0 && fn == RF_AGG_COUNT) {
            rf_word zero = 0;
            rf_table_append_row(out, &zero);
        }
        return true;
    }
    rf_word *vals = NULL;
    if (fn != RF_AGG_COUNT) {
        if (!arg || arg->n == 0)
            return rf_fail(st, RF_EXIT_RUNTIME_ERROR, "aggregate without an argument");
        vals = rf_malloc(rf_mul_size(n, sizeof *vals));
        if (!rf_code_eval_batch(arg, in->cols, 0, n, vals, st)) {
            free(vals);
            return false;
        }
    }
    size_t g = 0;
    while (g < n) {
        size_t e = rf_gallop_upper(in, g + 1, n, in, g, nkeys);
        rf_word acc = 0;
        if (fn == RF_AGG_COUNT) {
            acc = (rf_word)(e - g);
        } else {
            acc = vals[g];
            for (size_t i = g + 1; i < e; i++) {
                int c;
                switch (fn) {
                case RF_AGG_TOTAL:
                    if (!rf_scalar_binary(RF_EX_ADD, result_type, acc, vals[i], &acc, st)) {
                        free(vals);
                        rf_table_clear(out);
                        return false;
                    }
                    break;
                case RF_AGG_MIN:
                    c = rf_value_compare(result_type, vals[i], acc);
                    if (c < 0)
                        acc = vals[i];
                    break;
                default:
                    c = rf_value_compare(result_type, vals[i], acc);
                    if (c > 0)
                        acc = vals[i];
                    break;
                }
            }
        }
        size_t pos = out->nrows;
        rf_table_resize(out, pos + 1);
        for (int c = 0; c < nkeys; c++)
            out->cols[c][pos] = in->cols[c][g];
        out->cols[nkeys][pos] = acc;
        g = e;
    }
    free(vals);
    return true;
}
