/* Compute-stage code: expression trees flattened to postfix instructions,
 * the form that backends interpret (CPU) or translate to CUDA (GPU). */
#include "hir.h"

#include <stdlib.h>
#include <string.h>

static void count_nodes(const rf_expr *e, int *n)
{
    if (!e)
        return;
    count_nodes(e->a, n);
    count_nodes(e->b, n);
    count_nodes(e->c, n);
    (*n)++;
}

static void emit(const rf_expr *e, rf_instr *ins, int *pos)
{
    if (!e)
        return;
    emit(e->a, ins, pos);
    emit(e->b, ins, pos);
    emit(e->c, ins, pos);
    rf_instr *i = &ins[(*pos)++];
    memset(i, 0, sizeof *i);
    i->op = (uint8_t)e->op;
    i->type = (uint8_t)e->type;
    i->arg_type = (uint8_t)(e->a ? e->a->type : e->type);
    i->index = (e->op == RF_EX_COL || e->op == RF_EX_VAR || e->op == RF_EX_ROWID) ? e->index : 0;
    if (e->op == RF_EX_VAR)
        i->op = RF_EX_COL; /* code reads columns only */
    i->value = e->op == RF_EX_CONST ? e->value : 0;
}

void rf_code_from_expr(rf_code *out, const rf_expr *e)
{
    out->n = 0;
    out->ins = NULL;
    if (!e)
        return;
    count_nodes(e, &out->n);
    out->ins = rf_calloc((size_t)out->n, sizeof *out->ins);
    int pos = 0;
    emit(e, out->ins, &pos);
}

void rf_code_free(rf_code *c)
{
    free(c->ins);
    c->ins = NULL;
    c->n = 0;
}

int rf_code_as_column(const rf_code *c)
{
    return (c->n == 1 && c->ins[0].op == RF_EX_COL) ? c->ins[0].index : -1;
}

int rf_code_check(const rf_code *c, int ncols)
{
    if (c->n < 0 || (c->n > 0 && !c->ins))
        return -1;
    int depth = 0, max = 0;
    for (int k = 0; k < c->n; k++) {
        const rf_instr *i = &c->ins[k];
        if (i->op >= RF_EX_COUNT_ || i->op == RF_EX_VAR)
            return -1;
        if (i->type <= RF_TYPE_INVALID || i->type >= RF_TYPE_COUNT_ ||
            i->arg_type <= RF_TYPE_INVALID || i->arg_type >= RF_TYPE_COUNT_)
            return -1;
        if (i->op == RF_EX_COL && (i->index < 0 || i->index >= ncols))
            return -1;
        if (i->op == RF_EX_ROWID && (i->index < 0 || i->index > 1 || i->type != RF_TYPE_INT64))
            return -1;
        int arity = rf_expr_arity((rf_exop)i->op);
        if (depth < arity)
            return -1;
        depth = depth - arity + 1;
        if (depth > max)
            max = depth;
    }
    if (c->n > 0 && depth != 1)
        return -1;
    return max;
}

const char *rf_kop_name(rf_kop op)
{
    static const char *const names[RF_K_COUNT_] = {
        "LOAD", "MAP", "SORT", "JOIN", "ANTIJOIN", "UNION", "DIFF", "AGG", "COPY", "CLEAR",
        "CHECK_KEYS",
    };
    return (unsigned)op < RF_K_COUNT_ ? names[op] : "?";
}
