/* The plan's own invariants, checked after building and after each pass in
 * tests: a bad plan is a compiler bug, caught here before the Harmony IR. */
#include "plan_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct vctx {
    const rf_plan *plan;
    rf_status *st;
    int block, cmd;
} vctx;

#define FAIL(v, ...) fail_at(v, rf_sprintf(__VA_ARGS__))

static bool fail_at(vctx *v, char *msg)
{
    if (v->block >= 0)
        rf_fail(v->st, RF_EXIT_RUNTIME_ERROR, "plan: block %d (%s) command %d: %s", v->block,
                v->plan->blocks[v->block].label, v->cmd, msg);
    else
        rf_fail(v->st, RF_EXIT_RUNTIME_ERROR, "plan: %s", msg);
    free(msg);
    return false;
}

static bool rel_ok(vctx *v, int r, const char *what)
{
    if (r < 0 || r >= v->plan->nrels)
        return FAIL(v, "%s relation %d out of range", what, r);
    return true;
}

/* Every column leaf is within ncols and has the column's type. */
/* ninputs: how many inputs have a row position (RF_EX_ROWID) here. */
static bool expr_ok(vctx *v, const rf_expr *e, int ncols, int ninputs, const rf_type *types, const char *what)
{
    if (!e)
        return true;
    if (e->op == RF_EX_VAR)
        return FAIL(v, "%s uses a rule variable", what);
    if ((unsigned)e->op >= RF_EX_COUNT_ || e->type <= RF_TYPE_INVALID || e->type >= RF_TYPE_COUNT_)
        return FAIL(v, "%s has a bad operator or type", what);
    if (e->op == RF_EX_COL) {
        if (e->index < 0 || e->index >= ncols)
            return FAIL(v, "%s reads column $%d of %d", what, e->index, ncols);
        if (types[e->index] != e->type)
            return FAIL(v, "%s reads $%d as %s, column is %s", what, e->index,
                        rf_type_name(e->type), rf_type_name(types[e->index]));
    }
    if (e->op == RF_EX_ROWID && (e->index < 0 || e->index >= ninputs || e->type != RF_TYPE_INT64))
        return FAIL(v, "%s reads the row position of input %d of %d", what, e->index, ninputs);
    int ar = rf_expr_arity(e->op);
    if ((ar >= 1) != (e->a != NULL) || (ar >= 2) != (e->b != NULL) || (ar == 3) != (e->c != NULL))
        return FAIL(v, "%s has a malformed node", what);
    return expr_ok(v, e->a, ncols, ninputs, types, what) && expr_ok(v, e->b, ncols, ninputs, types, what) &&
           expr_ok(v, e->c, ncols, ninputs, types, what);
}

static bool same_shape(vctx *v, int a, int b)
{
    const rf_plan_rel *x = &v->plan->rels[a], *y = &v->plan->rels[b];
    if (x->arity != y->arity)
        return FAIL(v, "%s has arity %d, %s has %d", x->name, x->arity, y->name, y->arity);
    for (int i = 0; i < x->arity; i++)
        if (x->types[i] != y->types[i])
            return FAIL(v, "column %d: %s is %s, %s is %s", i, x->name,
                        rf_type_name(x->types[i]), y->name, rf_type_name(y->types[i]));
    return true;
}

static bool proj_ok(vctx *v, const rf_plan_cmd *c, int ncols, const rf_type *types)
{
    /* (a MULTIJOIN's rows are bindings: no input row has a position) */
    int ninputs = c->kind == RF_CMD_MULTIJOIN ? 0 : c->kind == RF_CMD_MAPJOIN ? 2 : 1;
    const rf_plan_rel *d = &v->plan->rels[c->dst];
    if (c->nproj != d->arity)
        return FAIL(v, "%d projections for %s of arity %d", c->nproj, d->name, d->arity);
    for (int i = 0; i < c->nproj; i++) {
        if (!c->proj[i])
            return FAIL(v, "projection %d missing", i);
        if (c->proj[i]->type != d->types[i])
            return FAIL(v, "projection %d is %s, %s column is %s", i,
                        rf_type_name(c->proj[i]->type), d->name, rf_type_name(d->types[i]));
        if (!expr_ok(v, c->proj[i], ncols, ninputs, types, "projection"))
            return false;
    }
    if (c->filter && c->filter->type != RF_TYPE_BOOL)
        return FAIL(v, "filter is not bool");
    return expr_ok(v, c->filter, ncols, ninputs, types, "filter");
}

static bool keys_ok(vctx *v, const rf_plan_cmd *c)
{
    const rf_plan_rel *l = &v->plan->rels[c->src[0]], *r = &v->plan->rels[c->src[1]];
    if (c->nkeys < 0 || (c->nkeys > 0 && (!c->lkeys || !c->rkeys)))
        return FAIL(v, "bad key list");
    for (int i = 0; i < c->nkeys; i++) {
        if (c->lkeys[i] < 0 || c->lkeys[i] >= l->arity || c->rkeys[i] < 0 || c->rkeys[i] >= r->arity)
            return FAIL(v, "key pair %d ($%d, $%d) out of range", i, c->lkeys[i], c->rkeys[i]);
        if (l->types[c->lkeys[i]] != r->types[c->rkeys[i]])
            return FAIL(v, "key pair %d joins %s with %s", i, rf_type_name(l->types[c->lkeys[i]]),
                        rf_type_name(r->types[c->rkeys[i]]));
    }
    return true;
}

/* A MULTIJOIN: sources in range, each column binding a variable in range
 * (distinct within a source, of one type across sources), every variable
 * bound; then filter and projections over the variables. */
static bool multijoin_ok(vctx *v, const rf_plan_cmd *c)
{
    const rf_plan *p = v->plan;
    if (c->nins < 1 || c->nins > RF_MULTIJOIN_MAX_IN || !c->ins || !c->in_first || !c->in_vars)
        return FAIL(v, "MultiJoin of %d sources (1..%d)", c->nins, RF_MULTIJOIN_MAX_IN);
    if (c->nvars < 1 || c->nvars > RF_MULTIJOIN_MAX_VARS)
        return FAIL(v, "MultiJoin over %d variables (1..%d)", c->nvars, RF_MULTIJOIN_MAX_VARS);
    rf_type types[RF_MULTIJOIN_MAX_VARS];
    for (int x = 0; x < c->nvars; x++)
        types[x] = RF_TYPE_INVALID;
    if (c->in_first[0] != 0)
        return FAIL(v, "MultiJoin variable list does not start at 0");
    for (int i = 0; i < c->nins; i++) {
        if (!rel_ok(v, c->ins[i], "source"))
            return false;
        const rf_plan_rel *r = &p->rels[c->ins[i]];
        if (c->in_first[i + 1] - c->in_first[i] != r->arity || r->arity < 1)
            return FAIL(v, "MultiJoin source %s (arity %d) binds %d variables", r->name, r->arity,
                        c->in_first[i + 1] - c->in_first[i]);
        for (int j = 0; j < r->arity; j++) {
            int x = c->in_vars[c->in_first[i] + j];
            if (x < 0 || x >= c->nvars)
                return FAIL(v, "MultiJoin source %s column %d binds variable %d of %d", r->name, j, x, c->nvars);
            for (int k = 0; k < j; k++)
                if (c->in_vars[c->in_first[i] + k] == x)
                    return FAIL(v, "MultiJoin source %s binds variable %d twice", r->name, x);
            if (types[x] != RF_TYPE_INVALID && types[x] != r->types[j])
                return FAIL(v, "MultiJoin variable %d is %s and %s", x, rf_type_name(types[x]),
                            rf_type_name(r->types[j]));
            types[x] = r->types[j];
        }
    }
    for (int x = 0; x < c->nvars; x++)
        if (types[x] == RF_TYPE_INVALID)
            return FAIL(v, "MultiJoin variable %d bound by no source", x);
    return proj_ok(v, c, c->nvars, types);
}

static bool cmd_ok(vctx *v, const rf_plan_cmd *c, bool last)
{
    const rf_plan *p = v->plan;
    bool control = rf_plan_cmd_is_control(c->kind);
    if ((unsigned)c->kind > RF_CMD_BRANCH_JOIN)
        return FAIL(v, "unknown command kind %d", (int)c->kind);
    if (control && !last)
        return FAIL(v, "%s in the middle of a block", rf_plan_cmd_name(c->kind));
    if (rf_plan_cmd_has_dst(c->kind) && !rel_ok(v, c->dst, "destination"))
        return false;
    int ns = rf_plan_cmd_nsrcs(c->kind);
    for (int i = 0; i < ns; i++)
        if (!rel_ok(v, c->src[i], "source"))
            return false;
    const rf_plan_rel *d = rf_plan_cmd_has_dst(c->kind) ? &p->rels[c->dst] : NULL;
    const rf_plan_rel *s0 = ns >= 1 ? &p->rels[c->src[0]] : NULL;
    const rf_plan_rel *s1 = ns >= 2 ? &p->rels[c->src[1]] : NULL;
    switch (c->kind) {
    case RF_CMD_LOAD:
        if (d->pred < 0 && d->nfacts == 0)
            return FAIL(v, "load of %s, which has no predicate and no facts", d->name);
        return true;
    case RF_CMD_MAPFILTER:
        return proj_ok(v, c, s0->arity, s0->types);
    case RF_CMD_MAPJOIN: {
        if (!keys_ok(v, c))
            return false;
        int n = s0->arity + s1->arity;
        rf_type *types = rf_malloc(((size_t)n + 1) * sizeof *types);
        for (int i = 0; i < s0->arity; i++)
            types[i] = s0->types[i];
        for (int i = 0; i < s1->arity; i++)
            types[s0->arity + i] = s1->types[i];
        bool ok = proj_ok(v, c, n, types);
        free(types);
        return ok;
    }
    case RF_CMD_ANTIJOIN:
        return keys_ok(v, c) && proj_ok(v, c, s0->arity, s0->types);
    case RF_CMD_UNION:
    case RF_CMD_DIFFERENCE:
        return same_shape(v, c->dst, c->src[0]) && same_shape(v, c->dst, c->src[1]);
    case RF_CMD_COPY:
        return same_shape(v, c->dst, c->src[0]);
    case RF_CMD_CLEAR:
        return true;
    case RF_CMD_AGGREGATE:
        if (c->naggs < 1 || !c->aggfn || !c->agg_arg)
            return FAIL(v, "aggregate without aggregates");
        if (d->arity != c->nkeys + c->naggs)
            return FAIL(v, "aggregate into %s of arity %d with %d keys and %d aggregates", d->name, d->arity,
                        c->nkeys, c->naggs);
        for (int i = 0; i < c->nkeys; i++) {
            if (c->lkeys[i] < 0 || c->lkeys[i] >= s0->arity)
                return FAIL(v, "group key $%d out of range", c->lkeys[i]);
            if (s0->types[c->lkeys[i]] != d->types[i])
                return FAIL(v, "group key %d type differs from %s", i, d->name);
        }
        for (int j = 0; j < c->naggs; j++) {
            rf_aggfn fn = c->aggfn[j];
            const rf_expr *arg = c->agg_arg[j];
            rf_type rt = d->types[c->nkeys + j];
            if (fn < RF_AGG_COUNT || fn > RF_AGG_LAST)
                return FAIL(v, "bad aggregate function");
            if (fn == RF_AGG_COUNT) {
                if (arg)
                    return FAIL(v, "count takes no argument");
                if (rt != RF_TYPE_INT64)
                    return FAIL(v, "count into a column of type %s", rf_type_name(rt));
                continue;
            }
            if (!arg)
                return FAIL(v, "%s needs an argument", rf_plan_aggfn_name(fn));
            if (fn == RF_AGG_COUNT_DISTINCT || fn == RF_AGG_AVG) {
                rf_type want = fn == RF_AGG_AVG ? RF_TYPE_FLOAT64 : RF_TYPE_INT64;
                if (rt != want)
                    return FAIL(v, "%s into a column of type %s", rf_plan_aggfn_name(fn), rf_type_name(rt));
                if (fn == RF_AGG_AVG && !rf_type_is_numeric(arg->type))
                    return FAIL(v, "avg of a %s", rf_type_name(arg->type));
            } else if (arg->type != rt) {
                return FAIL(v, "aggregate argument is %s, result column is %s", rf_type_name(arg->type),
                            rf_type_name(rt));
            } else if (fn == RF_AGG_TOTAL && !rf_type_is_numeric(rt)) {
                return FAIL(v, "total of a %s", rf_type_name(rt));
            }
            if (!expr_ok(v, arg, s0->arity, 0, s0->types, "aggregate argument"))
                return false;
        }
        return true;
    case RF_CMD_JUMP:
        if (c->target < 0 || c->target >= p->nblocks)
            return FAIL(v, "jump target %d out of range", c->target);
        return true;
    case RF_CMD_BRANCH_EMPTY:
        if (c->target < 0 || c->target >= p->nblocks || c->target_else < 0 || c->target_else >= p->nblocks)
            return FAIL(v, "branch targets %d/%d out of range", c->target, c->target_else);
        if (c->nconds < 1)
            return FAIL(v, "branch without conditions");
        for (int i = 0; i < c->nconds; i++)
            if (!rel_ok(v, c->conds[i], "branch condition"))
                return false;
        return true;
    case RF_CMD_HALT:
        return true;
    case RF_CMD_BRANCH_JOIN:
        if (c->target < 0 || c->target >= p->nblocks || c->target_else < 0 || c->target_else >= p->nblocks)
            return FAIL(v, "branch targets %d/%d out of range", c->target, c->target_else);
        if (c->nvars < 2 || c->nvars > RF_MULTIJOIN_MAX_VARS || c->nins < 2 || c->nins > RF_MULTIJOIN_MAX_IN)
            return FAIL(v, "BranchJoin over %d variables (2..%d) and %d atoms (2..%d)", c->nvars,
                        RF_MULTIJOIN_MAX_VARS, c->nins, RF_MULTIJOIN_MAX_IN);
        return keys_ok(v, c);
    case RF_CMD_MULTIJOIN:
        return multijoin_ok(v, c);
    case RF_CMD_CHECK_KEYS:
        if (c->dst != -1)
            return FAIL(v, "CheckKeys writes no relation (dst %d)", c->dst);
        if (c->nkeys < 0 || c->nkeys >= s0->arity)
            return FAIL(v, "CheckKeys of %s (arity %d) with %d key columns", s0->name, s0->arity, c->nkeys);
        return true;
    }
    return true;
}

bool rf_plan_verify(const rf_plan *plan, rf_status *st)
{
    vctx v = { plan, st, -1, -1 };
    if (plan->nblocks < 1)
        return FAIL(&v, "no blocks");
    for (int i = 0; i < plan->nrels; i++) {
        const rf_plan_rel *r = &plan->rels[i];
        if (!r->name || r->arity < 0 || (r->arity > 0 && !r->types))
            return FAIL(&v, "relation %d malformed", i);
        for (int j = 0; j < r->arity; j++)
            if (r->types[j] <= RF_TYPE_INVALID || r->types[j] >= RF_TYPE_COUNT_)
                return FAIL(&v, "relation %s column %d has no type", r->name, j);
        if ((r->kind == RF_REL_TEMP) != (r->pred < 0))
            return FAIL(&v, "relation %s: kind %s with predicate %d", r->name,
                        rf_plan_relkind_name(r->kind), r->pred);
        if (r->nfacts > 0 && r->arity > 0 && !r->facts)
            return FAIL(&v, "relation %s has facts but no storage", r->name);
        if (r->limit < -1 || r->norder < 0 || r->norder > r->arity ||
            (r->norder > 0 && (!r->order_cols || !r->order_desc)))
            return FAIL(&v, "relation %s: bad output order or limit", r->name);
        for (int j = 0; j < r->norder; j++) {
            if (r->order_cols[j] < 0 || r->order_cols[j] >= r->arity)
                return FAIL(&v, "relation %s: order column %d out of range", r->name, r->order_cols[j]);
            for (int k = 0; k < j; k++)
                if (r->order_cols[k] == r->order_cols[j])
                    return FAIL(&v, "relation %s: order column %d named twice", r->name, r->order_cols[j]);
        }
        for (int j = 0; j < i; j++)
            if (strcmp(plan->rels[j].name, r->name) == 0)
                return FAIL(&v, "two relations named %s", r->name);
    }
    for (int b = 0; b < plan->nblocks; b++) {
        const rf_plan_block *blk = &plan->blocks[b];
        v.block = b;
        for (int i = 0; i < blk->ncmds; i++) {
            v.cmd = i;
            if (!cmd_ok(&v, &blk->cmds[i], i == blk->ncmds - 1))
                return false;
        }
        bool ends = blk->ncmds > 0 && rf_plan_cmd_is_control(blk->cmds[blk->ncmds - 1].kind);
        if (!ends && b == plan->nblocks - 1)
            return FAIL(&v, "the last block falls off the end of the plan");
    }
    return true;
}
