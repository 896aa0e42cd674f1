#include "plan.h"

#include <stdlib.h>

static void free_cmd(rf_plan_cmd *c)
{
    free(c->lkeys);
    free(c->rkeys);
    rf_expr_free(c->filter);
    for (int i = 0; i < c->nproj; i++)
        rf_expr_free(c->proj[i]);
    free(c->proj);
    rf_expr_free(c->agg_arg);
    free(c->conds);
    free(c->comment);
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
    }
    free(plan->rels);
    for (int b = 0; b < plan->nblocks; b++) {
        for (int i = 0; i < plan->blocks[b].ncmds; i++)
            free_cmd(&plan->blocks[b].cmds[i]);
        free(plan->blocks[b].cmds);
        free(plan->blocks[b].label);
    }
    free(plan->blocks);
    free(plan);
}
