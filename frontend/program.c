#include "program.h"

#include <stdlib.h>
#include <string.h>

static void free_args(int n, rf_expr **args)
{
    for (int i = 0; i < n; i++)
        rf_expr_free(args[i]);
    free(args);
}

void rf_program_free(rf_program *p)
{
    if (!p)
        return;
    /* Rules first: a rule's head arity is its predicate's. */
    for (int i = 0; i < p->nrules; i++) {
        rf_rule *r = &p->rules[i];
        free_args(r->head >= 0 && r->head < p->npreds ? p->preds[r->head].arity : 0, r->head_args);
        for (int j = 0; j < r->nbody; j++) {
            free_args(r->body[j].nargs, r->body[j].args);
            rf_expr_free(r->body[j].expr);
        }
        free(r->body);
        for (int j = 0; j < r->nvars; j++)
            free(r->var_names[j]);
        free(r->var_names);
        free(r->var_types);
        free_args(r->naggs, r->agg_args);
        free(r->aggs);
    }
    free(p->rules);
    for (int i = 0; i < p->nsouffle_outputs; i++) {
        free(p->souffle_outputs[i].pred);
        free(p->souffle_outputs[i].file);
    }
    free(p->souffle_outputs);
    for (int i = 0; i < p->npreds; i++) {
        rf_pred *pr = &p->preds[i];
        free(pr->name);
        free(pr->types);
        free(pr->input_path);
        free(pr->facts);
        free(pr->order_cols);
        free(pr->order_desc);
    }
    free(p->preds);
    for (int i = 0; i < p->nstrata; i++) {
        free(p->strata[i].preds);
        free(p->strata[i].rules);
    }
    free(p->strata);
    if (p->source) {
        free(p->source->path);
        free(p->source->text);
        free(p->source);
    }
    free(p);
}

int rf_program_find_pred(const rf_program *p, const char *name)
{
    for (int i = 0; i < p->npreds; i++)
        if (strcmp(p->preds[i].name, name) == 0)
            return i;
    return -1;
}
