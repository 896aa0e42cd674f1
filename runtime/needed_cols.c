/* Input column pruning (runtime.h, rf_needed_columns): which columns of a
 * loaded variable the program can observe, so that the loader parses only
 * those and fills the others with 0.
 *
 * Filling with 0 happens BEFORE the load deduplicates, so rows that differ
 * only in unread columns collapse into one. That is exact only while every
 * reader sees the rows' values and never their number or identity:
 *  - a MAP or JOIN whose codes are plain functions of the columns they
 *    read (CONST, COL and the scalar operators) sees only the columns
 *    counted here, and its output is unsorted: by the layout invariant
 *    (hir.h, checked by rf_hir_verify) it reaches anything that counts or
 *    sums rows (AGG) only through a SORT, which deduplicates. So only the
 *    SET of projected rows matters, and projecting onto the read columns
 *    gives the same set whether the unread ones hold their values or 0.
 *    (Aggregation rules keep their multiset that way: the planner gives
 *    every `_` of a count/total/avg body a variable of its own, so such a
 *    body projects, and here marks, every column of its atoms.)
 *  - RF_EX_ROWID (the planner's row identity in count/total/avg bodies,
 *    plan_build.c) reads no value but tells rows apart: collapsed rows
 *    would count once. It marks no column; the variable is flagged in
 *    `positions`: its load keeps a fingerprint of the unread fields in
 *    the first unread column (rf_read_facts_fingerprinted), and the
 *    runtime loads it again with every column when deduplication still
 *    merged rows (run_load), so the rows stay exactly the file's distinct
 *    rows.
 *  - a code with any other operator could tell collapsed rows apart in
 *    ways not judged here: every column of that kernel's loaded inputs is
 *    needed. So is every
 *    column for every other reader (SORT, UNION, DIFF, AGG, COPY,
 *    CHECK_KEYS, the in0 of an ANTIJOIN, an output, a --print, a loop
 *    condition), which sees or counts whole rows.
 * A variable that is also written by other kernels only adds readers,
 * which is conservative.
 *
 * What pruning may still change, and why that is accepted:
 *  - string ids: the strings of unread columns are never interned, so
 *    later strings get smaller ids (their relative order only changes when
 *    a string first occurred in an unread column), and the loaded relation,
 *    sorted with 0 in the unread columns, may reach a MAP in another row
 *    order (so strings that concat or substr make may be interned in
 *    another order). Ids are never written: answers are in text order. A
 *    float64 total adds a group's rows in their sorted order, so its last
 *    bits can differ where a string column orders those rows.
 *  - which row a run-time error names when several rows fault (the same
 *    row order; the error is real either way). */
#include "runtime.h"

#include <stdlib.h>

/* Whether op computes from the values of its operands alone, so that
 * rows equal on the columns a code reads give it equal results. Listed,
 * not assumed: an operator added later lands in `default` and so keeps
 * every column until it is judged here. */
static bool op_reads_values_only(rf_exop op)
{
    switch (op) {
    case RF_EX_CONST:
    case RF_EX_COL:
    case RF_EX_NEG:
    case RF_EX_NOT:
    case RF_EX_CAST:
    case RF_EX_ADD:
    case RF_EX_SUB:
    case RF_EX_MUL:
    case RF_EX_DIV:
    case RF_EX_MOD:
    case RF_EX_EQ:
    case RF_EX_NE:
    case RF_EX_LT:
    case RF_EX_LE:
    case RF_EX_GT:
    case RF_EX_GE:
    case RF_EX_AND:
    case RF_EX_OR:
    case RF_EX_IF:
    case RF_EX_YEAR:
    case RF_EX_MONTH:
    case RF_EX_DAY:
    case RF_EX_ADD_MONTHS:
    case RF_EX_ADD_YEARS:
    case RF_EX_SUBSTR:
    case RF_EX_STRLEN:
    case RF_EX_CONCAT:
    case RF_EX_LIKE:
    case RF_EX_STARTS_WITH:
    case RF_EX_ENDS_WITH:
    case RF_EX_CONTAINS:
    case RF_EX_TO_STRING:
    case RF_EX_TO_NUMBER:
        return true;
    default:
        return false;
    }
}

/* Marks the columns [from, from + arity) that code c reads (as columns of
 * the variable, from 0), and *positions when it reads the row positions of
 * the variable (its kernel input `input`). False when c uses an operator
 * that may see more than values (op_reads_values_only): the caller then
 * needs every column. */
static bool mark_code(const rf_code *c, bool *mark, int from, int arity, int input, bool *positions)
{
    for (int i = 0; i < c->n; i++) {
        if (c->ins[i].op == RF_EX_ROWID) {
            *positions |= c->ins[i].index == input;
            continue;
        }
        if (!op_reads_values_only((rf_exop)c->ins[i].op))
            return false;
        if (c->ins[i].op == RF_EX_COL) {
            int col = c->ins[i].index - from;
            if (col >= 0 && col < arity)
                mark[col] = true;
        }
    }
    return true;
}

static void mark_all(bool *mark, int arity)
{
    for (int c = 0; c < arity; c++)
        mark[c] = true;
}

/* Marks the columns of v read by the codes of MAP/JOIN kernel k, whose
 * column indices are offset by `from` (JOIN's in1: arity of in0); all of
 * them when a code may see more than the values it reads. */
static void mark_codes(const rf_kernel *k, bool *mark, int from, int arity, int input, bool *positions)
{
    bool values_only = mark_code(&k->filter, mark, from, arity, input, positions);
    for (int j = 0; j < k->nproj && values_only; j++)
        values_only = mark_code(&k->proj[j], mark, from, arity, input, positions);
    if (!values_only)
        mark_all(mark, arity);
}

static void mark_keys(bool *mark, int nkeys, int arity)
{
    for (int c = 0; c < nkeys && c < arity; c++)
        mark[c] = true;
}

/* What kernel k reads of the loaded variables (need[v] non-NULL). */
static void mark_kernel(const rf_hprogram *p, const rf_kernel *k, bool **need, bool *positions)
{
    for (int m = 0; k->fused && m < k->fused->nmembers; m++)   /* a group reads what its members read */
        mark_kernel(p, &k->fused->members[m], need, positions);
    /* every column of a multiway join's input binds a variable: a key */
    for (int i = 0; k->op == RF_K_MULTIJOIN && k->mj && i < k->mj->nin; i++) {
        int v = k->mj->in[i];
        if (v >= 0 && v < p->nvars && need[v])
            mark_all(need[v], p->vars[v].arity);
    }
    for (int s = 0; s < 2; s++) {
        int v = k->in[s];
        if (v < 0 || v >= p->nvars || !need[v])
            continue;
        int ar = p->vars[v].arity;
        switch (k->op) {
        case RF_K_MAP:
            if (s == 0)
                mark_codes(k, need[v], 0, ar, 0, &positions[v]);
            else
                mark_all(need[v], ar);
            break;
        case RF_K_JOIN:
            mark_keys(need[v], k->nkeys, ar);
            mark_codes(k, need[v], s == 0 ? 0 : p->vars[k->in[0]].arity, ar, s, &positions[v]);
            break;
        case RF_K_ANTIJOIN:
            if (s == 1)
                mark_keys(need[v], k->nkeys, ar);
            else
                mark_all(need[v], ar);
            break;
        case RF_K_LOAD:
        case RF_K_CLEAR:
            break; /* read nothing */
        default:
            mark_all(need[v], ar);
            break;
        }
    }
}

bool **rf_needed_columns(const rf_hprogram *p, const bool *keep, bool *positions)
{
    bool **need = rf_calloc((size_t)p->nvars + 1, sizeof *need);
    bool *pos = rf_calloc((size_t)p->nvars + 1, sizeof *pos);
    for (int b = 0; b < p->nblocks; b++)
        for (int i = 0; i < p->blocks[b].nkernels; i++) {
            const rf_kernel *k = &p->blocks[b].kernels[i];
            if (k->op == RF_K_LOAD && k->out >= 0 && k->out < p->nvars && !need[k->out])
                need[k->out] = rf_calloc((size_t)p->vars[k->out].arity + 1, sizeof **need);
        }
    for (int b = 0; b < p->nblocks; b++) {
        const rf_hblock *blk = &p->blocks[b];
        for (int i = 0; i < blk->nkernels; i++)
            mark_kernel(p, &blk->kernels[i], need, pos);
        for (int i = 0; i < blk->nconds; i++) {
            int v = blk->conds[i];
            if (v >= 0 && v < p->nvars && need[v])
                mark_all(need[v], p->vars[v].arity);
        }
    }
    for (int v = 0; v < p->nvars; v++) {
        if (!need[v])
            continue;
        if (p->vars[v].is_output || (keep && keep[v]))
            mark_all(need[v], p->vars[v].arity);
        bool all = true;
        for (int c = 0; c < p->vars[v].arity; c++)
            all &= need[v][c];
        if (all) {
            free(need[v]);
            need[v] = NULL;
        }
    }
    for (int v = 0; v < p->nvars && positions; v++)
        positions[v] = pos[v] && need[v];
    free(pos);
    return need;
}

void rf_needed_columns_free(bool **need, int nvars)
{
    if (!need)
        return;
    for (int v = 0; v < nvars; v++)
        free(need[v]);
    free(need);
}
