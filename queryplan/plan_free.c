#include "plan_internal.h"

#include <stdlib.h>
#include <string.h>

void rf_plan_cmd_release(rf_plan_cmd *c)
{
    free(c->lkeys);
    free(c->rkeys);
    rf_expr_free(c->filter);
    for (int i = 0; i < c->nproj; i++)
        rf_expr_free(c->proj[i]);
    free(c->proj);
    for (int i = 0; i < c->naggs; i++)
        rf_expr_free(c->agg_arg[i]);
    free(c->agg_arg);
    free(c->aggfn);
    free(c->conds);
    free(c->ins);
    free(c->in_first);
    free(c->in_vars);
    free(c->why);
    free(c->comment);
    rf_origin_release(&c->origin);
    memset(c, 0, sizeof *c);
}


int rf_plan_cmd_nsrcs(rf_cmdkind k)
{
    switch (k) {
    case RF_CMD_MAPFILTER:
    case RF_CMD_AGGREGATE:
    case RF_CMD_COPY:
    case RF_CMD_CHECK_KEYS:
        return 1;
    case RF_CMD_MAPJOIN:
    case RF_CMD_ANTIJOIN:
    case RF_CMD_UNION:
    case RF_CMD_DIFFERENCE:
    case RF_CMD_BRANCH_JOIN:
        return 2;
    default:
        return 0;
    }
}

const char *rf_plan_cmd_name(rf_cmdkind k)
{
    static const char *const names[] = {
        [RF_CMD_LOAD] = "Load", [RF_CMD_MAPFILTER] = "MapFilter",
        [RF_CMD_MAPJOIN] = "MapJoin", [RF_CMD_ANTIJOIN] = "AntiJoin",
        [RF_CMD_UNION] = "Union", [RF_CMD_DIFFERENCE] = "Difference",
        [RF_CMD_AGGREGATE] = "Aggregate", [RF_CMD_COPY] = "Copy",
        [RF_CMD_CLEAR] = "Clear", [RF_CMD_JUMP] = "Jump",
        [RF_CMD_BRANCH_EMPTY] = "BranchEmpty", [RF_CMD_HALT] = "Halt",
        [RF_CMD_CHECK_KEYS] = "CheckKeys", [RF_CMD_MULTIJOIN] = "MultiJoin",
        [RF_CMD_BRANCH_JOIN] = "BranchJoin",
    };
    return (unsigned)k <= RF_CMD_BRANCH_JOIN ? names[k] : "?";
}

int *rf_plan_cmd_sources(rf_plan_cmd *c, int *n)
{
    if (c->kind == RF_CMD_MULTIJOIN) {
        *n = c->ins ? c->nins : 0;
        return c->ins;
    }
    *n = rf_plan_cmd_nsrcs(c->kind);
    return c->src;
}

const int *rf_plan_cmd_sources_c(const rf_plan_cmd *c, int *n)
{
    return rf_plan_cmd_sources((rf_plan_cmd *)c, n);
}

bool rf_join_mode_parse(const char *s, rf_join_mode *out)
{
    if (strcmp(s, "auto") == 0)
        *out = RF_JOIN_AUTO;
    else if (strcmp(s, "binary") == 0)
        *out = RF_JOIN_BINARY;
    else if (strcmp(s, "wcoj") == 0)
        *out = RF_JOIN_WCOJ;
    else
        return false;
    return true;
}

const char *rf_plan_relkind_name(rf_relkind k)
{
    static const char *const names[] = {
        [RF_REL_INPUT] = "input", [RF_REL_DERIVED] = "derived",
        [RF_REL_DELTA] = "delta", [RF_REL_NEW] = "new", [RF_REL_TEMP] = "temp",
    };
    return (unsigned)k <= RF_REL_TEMP ? names[k] : "?";
}

const char *rf_plan_aggfn_name(rf_aggfn f)
{
    static const char *const names[] = {
        [RF_AGG_NONE] = "none", [RF_AGG_COUNT] = "count", [RF_AGG_TOTAL] = "total",
        [RF_AGG_MIN] = "min", [RF_AGG_MAX] = "max", [RF_AGG_AVG] = "avg",
        [RF_AGG_COUNT_DISTINCT] = "count_distinct",
    };
    return (unsigned)f <= RF_AGG_LAST ? names[f] : "?";
}

void rf_plan_free(rf_plan *plan)
{
    if (!plan)
        return;
    for (int i = 0; i < plan->nrels; i++) {
        free(plan->rels[i].name);
        free(plan->rels[i].types);
        free(plan->rels[i].facts);
        free(plan->rels[i].input_path);
        free(plan->rels[i].input_where);
        free(plan->rels[i].order_cols);
        free(plan->rels[i].order_desc);
    }
    free(plan->rels);
    for (int b = 0; b < plan->nblocks; b++) {
        for (int i = 0; i < plan->blocks[b].ncmds; i++)
            rf_plan_cmd_release(&plan->blocks[b].cmds[i]);
        free(plan->blocks[b].cmds);
        free(plan->blocks[b].label);
    }
    free(plan->blocks);
    free(plan);
}
