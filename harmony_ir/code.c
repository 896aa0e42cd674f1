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

/* Whether instruction i over constant operands is evaluated here: unary
 * and binary operators other than string functions (those intern, into
 * the run's dictionary) and the conditional ones (if's laziness). */
static bool foldable(const rf_instr *i)
{
    int ar = rf_expr_arity((rf_exop)i->op);
    return (ar == 1 || ar == 2) && i->op < RF_EX_COUNT_ && !rf_exop_is_string_op((rf_exop)i->op);
}

/* Constant subexpressions (no column, no row position) evaluated once,
 * here, as every backend would for each row: q06's `shipdate <
 * add_years(1994-01-01, 1)` made the date again for each of lineitem's
 * rows, q19's `quantity <= 1.00 + 10.00` the sum. The scalar operators
 * are the backends' own (common/rf_scalar_ops.h), so the word is the one
 * they would make; one that faults (1 / 0) is left as it was, to fault
 * only if a row reaches it. Postfix in place: a stack of where each
 * operand's instructions begin and whether it is one constant. */
static void fold_constants(rf_code *c)
{
    int n = c->n, len = 0, sp = 0;
    int *at = rf_malloc((size_t)n * sizeof *at);
    bool *cst = rf_malloc((size_t)n);
    for (int k = 0; k < n; k++) {
        rf_instr in = c->ins[k];
        int ar = rf_expr_arity((rf_exop)in.op);
        if (ar > sp) {   /* not a well-formed code: leave the rest alone */
            for (; k < n; k++)
                c->ins[len++] = c->ins[k];
            break;
        }
        int first = ar > 0 ? at[sp - ar] : len;
        bool all = ar > 0;
        for (int a = 0; a < ar; a++)
            all = all && cst[sp - ar + a];
        sp -= ar;
        rf_word v = 0;
        bool folded = false;
        if (all && foldable(&in)) {
            rf_status st;
            rf_status_init(&st);
            rf_word x = c->ins[first].value, y = ar == 2 ? c->ins[first + 1].value : 0;
            if (ar == 1)
                folded = rf_scalar_unary((rf_exop)in.op, (rf_type)in.arg_type, (rf_type)in.type, x, &v, &st);
            else
                folded = rf_scalar_binary2((rf_exop)in.op,
                                           rf_exop_is_comparison((rf_exop)in.op) ? (rf_type)in.arg_type
                                                                                 : (rf_type)in.type,
                                           (rf_type)in.arg_type, x, y, &v, &st);
        }
        if (folded) {
            len = first;
            rf_instr k2;
            memset(&k2, 0, sizeof k2);
            k2.op = RF_EX_CONST;
            k2.type = k2.arg_type = in.type;
            k2.value = v;
            c->ins[len++] = k2;
        } else {
            c->ins[len++] = in;
        }
        at[sp] = first;
        cst[sp] = folded || in.op == RF_EX_CONST;
        sp++;
    }
    c->n = len;
    free(at);
    free(cst);
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
    fold_constants(out);
}

void rf_code_free(rf_code *c)
{
    free(c->ins);
    c->ins = NULL;
    c->n = 0;
}

bool rf_code_substr_compare(const rf_code *c, const int *start, int k, int *sub, int *cst)
{
    const rf_instr *in = &c->ins[k];
    if ((in->op != RF_EX_EQ && in->op != RF_EX_NE) || in->arg_type != RF_TYPE_STRING || k < 2)
        return false;
    int right = k - 1, left = start[right] - 1;
    if (left < 0)
        return false;
    if (c->ins[left].op == RF_EX_SUBSTR && c->ins[right].op == RF_EX_CONST) {
        *sub = left;
        *cst = right;
        return true;
    }
    if (c->ins[right].op == RF_EX_SUBSTR && c->ins[left].op == RF_EX_CONST) {
        *sub = right;
        *cst = left;
        return true;
    }
    return false;
}

bool rf_code_interns(const rf_code *c)
{
    bool any = false;
    for (int k = 0; c && k < c->n; k++)
        any |= c->ins[k].op == RF_EX_SUBSTR || c->ins[k].op == RF_EX_CONCAT || c->ins[k].op == RF_EX_TO_STRING;
    if (!any)
        return false;
    /* Subtree starts (postfix), then which substrs are only compared. */
    int *start = rf_malloc((size_t)c->n * sizeof *start);
    bool *compared = rf_calloc((size_t)c->n, 1), interns = false;
    for (int k = 0; k < c->n; k++) {
        int ar = rf_expr_arity((rf_exop)c->ins[k].op), s = k;
        for (int a = 0; a < ar && s > 0; a++)
            s = start[s - 1];
        start[k] = s;
        int sub, cst;
        if (rf_code_substr_compare(c, start, k, &sub, &cst))
            compared[sub] = true;
    }
    for (int k = 0; k < c->n && !interns; k++)
        interns = c->ins[k].op == RF_EX_CONCAT || c->ins[k].op == RF_EX_TO_STRING ||
                  (c->ins[k].op == RF_EX_SUBSTR && !compared[k]);
    free(start);
    free(compared);
    return interns;
}

void rf_code_copy_mapped(rf_code *out, const rf_code *c, const int *map)
{
    out->n = c->n;
    out->ins = NULL;
    if (c->n <= 0)
        return;
    out->ins = rf_malloc((size_t)c->n * sizeof *out->ins);
    memcpy(out->ins, c->ins, (size_t)c->n * sizeof *out->ins);
    for (int k = 0; k < c->n; k++)
        if (out->ins[k].op == RF_EX_COL)
            out->ins[k].index = map[out->ins[k].index];
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
        "CHECK_KEYS", "FUSED", "MULTIJOIN",
    };
    return (unsigned)op < RF_K_COUNT_ ? names[op] : "?";
}

bool rf_code_reads_rowid(const rf_code *c)
{
    for (int i = 0; c && i < c->n; i++)
        if (c->ins[i].op == RF_EX_ROWID)
            return true;
    return false;
}
