/* Kernels as the rest of the program sees them: what a kernel reads and
 * writes (a FUSED kernel: only its external variables), and freeing. */
#include "hir.h"

#include <stdlib.h>

int rf_kernel_reads(const rf_kernel *k, int *vars)
{
    int n = 0;
    if (k->op == RF_K_FUSED) {
        for (int i = 0; k->fused && i < k->fused->nin && n < RF_KERNEL_VARS_MAX; i++)
            vars[n++] = k->fused->in[i];
        return n;
    }
    if (k->op == RF_K_MULTIJOIN) {
        for (int i = 0; k->mj && i < k->mj->nin && n < RF_KERNEL_VARS_MAX; i++)
            vars[n++] = k->mj->in[i];
        return n;
    }
    for (int j = 0; j < 2; j++)
        if (k->in[j] >= 0)
            vars[n++] = k->in[j];
    return n;
}

int rf_kernel_writes(const rf_kernel *k, int *vars)
{
    int n = 0;
    if (k->op == RF_K_FUSED) {
        for (int i = 0; k->fused && i < k->fused->nout && n < RF_KERNEL_VARS_MAX; i++)
            vars[n++] = k->fused->out[i];
        return n;
    }
    if (k->out >= 0)
        vars[n++] = k->out;
    return n;
}

void rf_fused_free(rf_fused *f)
{
    if (!f)
        return;
    for (int i = 0; i < f->nmembers && f->members; i++)
        rf_kernel_free(&f->members[i]);
    free(f->members);
    free(f->edges);
    free(f->in);
    free(f->out);
    free(f);
}

void rf_multijoin_free(rf_multijoin *mj)
{
    if (!mj)
        return;
    free(mj->in);
    free(mj->in_first);
    free(mj->in_vars);
    free(mj->alt_order);
    free(mj);
}

void rf_kernel_free(rf_kernel *k)
{
    rf_code_free(&k->filter);
    for (int i = 0; i < k->nproj && k->proj; i++)
        rf_code_free(&k->proj[i]);
    free(k->proj);
    for (int i = 0; i < k->naggs && k->agg_arg; i++)
        rf_code_free(&k->agg_arg[i]);
    free(k->agg_arg);
    free(k->aggfn);
    free(k->frees);
    free(k->comment);
    rf_origin_release(&k->origin);
    rf_fused_free(k->fused);
    k->fused = NULL;
    rf_multijoin_free(k->mj);
    k->mj = NULL;
}

static bool reads_rowid_of(const rf_code *c, int side)
{
    for (int i = 0; i < c->n; i++)
        if (c->ins[i].op == RF_EX_ROWID && c->ins[i].index == side)
            return true;
    return false;
}

/* Whether JOIN k reads a row position of its input `side` other than as
 * a plain projected column (in its filter, or computed with). */
static bool reads_rowid_beyond_identity(const rf_kernel *k, int side)
{
    if (reads_rowid_of(&k->filter, side))
        return true;
    for (int j = 0; j < k->nproj; j++)
        if (reads_rowid_of(&k->proj[j], side) && k->proj[j].n != 1)
            return true;
    return false;
}

bool rf_hir_rows_distinct(const rf_hprogram *p, int v)
{
    if (!p || v < 0 || v >= p->nvars)
        return false;
    if (p->vars[v].sorted)
        return true;
    const rf_kernel *writer = NULL;
    int writers = 0;
    for (int b = 0; b < p->nblocks; b++)
        for (int i = 0; i < p->blocks[b].nkernels; i++) {
            const rf_kernel *k = &p->blocks[b].kernels[i];
            int n = k->op == RF_K_FUSED && k->fused ? k->fused->nmembers : 1;
            for (int m = 0; m < n; m++) {
                const rf_kernel *w = k->op == RF_K_FUSED && k->fused ? &k->fused->members[m] : k;
                if (w->out == v) {
                    writers++;
                    writer = w;
                }
            }
        }
    return writers == 1 && rf_map_projects_position(writer);
}

/* c's column reads of a JOIN's `l ++ r` rewritten for `r ++ l`, and its
 * row positions of either side for the other's (a0, a1: the arities). */
static void swap_code_sides(rf_code *c, int a0, int a1)
{
    for (int i = 0; i < c->n; i++) {
        rf_instr *in = &c->ins[i];
        if (in->op == RF_EX_COL)
            in->index = in->index < a0 ? in->index + a1 : in->index - a0;
        else if (in->op == RF_EX_ROWID)
            in->index = 1 - in->index;
    }
}

void rf_join_swap_sides(const rf_hprogram *p, rf_kernel *k)
{
    int a0 = p->vars[k->in[0]].arity, a1 = p->vars[k->in[1]].arity;
    swap_code_sides(&k->filter, a0, a1);
    for (int j = 0; j < k->nproj; j++)
        swap_code_sides(&k->proj[j], a0, a1);
    int t = k->in[0];
    k->in[0] = k->in[1];
    k->in[1] = t;
}

bool rf_fused_probe_sort(const rf_hprogram *p, const rf_fused *f)
{
    /* the program is walked only for a group that reads the probe side's
     * positions (backends ask this on every run of every set gather) */
    if (rf_fused_probe_shape(f, false))
        return true;
    return rf_fused_probe_shape(f, true) && rf_hir_rows_distinct(p, f->members[0].in[0]);
}

bool rf_map_projects_position(const rf_kernel *k)
{
    if (!k || k->op != RF_K_MAP)
        return false;
    for (int j = 0; j < k->nproj; j++)
        if (k->proj[j].n == 1 && k->proj[j].ins[0].op == RF_EX_ROWID && k->proj[j].ins[0].index == 0)
            return true;
    return false;
}

bool rf_fused_probe_shape(const rf_fused *f, bool x_distinct)
{
    if (!f || f->nmembers < 3 || !f->members)
        return false;
    const rf_kernel *sort = &f->members[0], *join = &f->members[1], *last = &f->members[f->nmembers - 1];
    if (sort->op != RF_K_SORT || join->op != RF_K_JOIN || last->op != RF_K_SORT || join->in[0] != sort->out ||
        join->in[1] == sort->out || join->nkeys < 1)
        return false;
    for (int m = 2; m < f->nmembers; m++)
        if (f->members[m].in[0] == sort->out || f->members[m].in[1] == sort->out)
            return false;
    /* A position of the probe side only as an identity column, and only
     * where x's rows are distinct: each row of x is then a row of s, and
     * its place in x names it as its place in s would. */
    if (reads_rowid_beyond_identity(join, 0))
        return false;
    bool identity = false;
    for (int j = 0; j < join->nproj; j++)
        identity = identity || reads_rowid_of(&join->proj[j], 0);
    return !identity || x_distinct;
}
