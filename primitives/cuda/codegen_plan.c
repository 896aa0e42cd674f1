/* Select planning applied to a generated kernel's filter: the conjuncts of
 * the device code, the forced or chosen plan, and the note --stats prints
 * (codegen_plan.h). Host C only; no device needed. */
#include "codegen_plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int rf_cg_plan_split(const rf_code *filter, rf_cg_plan *pl, rf_status *st)
{
    memset(pl, 0, sizeof *pl);
    if (!filter || filter->n == 0)
        return 0;
    /* The planning view: each RF_DOP_LOOKUP as strlen, a unary string
     * function that neither faults nor interns (see codegen_plan.h), so
     * that the IR's splitter and cost classes apply; positions unchanged. */
    rf_code view = {filter->n, rf_malloc((size_t)filter->n * sizeof *filter->ins)};
    memcpy(view.ins, filter->ins, (size_t)filter->n * sizeof *filter->ins);
    for (int k = 0; k < view.n; k++)
        if (view.ins[k].op == RF_DOP_LOOKUP) {
            view.ins[k].op = RF_EX_STRLEN;
            view.ins[k].index = 0;
        }
    bool ok = rf_selplan_split(&view, &pl->split, st);
    rf_code_free(&view);
    if (!ok)
        return -1;
    /* Each conjunct's code as the device runs it (its lookups back). */
    for (int i = 0; i < pl->split.n; i++) {
        rf_selconj *c = &pl->split.conj[i];
        memcpy(c->code.ins, filter->ins + c->first, (size_t)c->code.n * sizeof *c->code.ins);
    }
    if (pl->split.n > RF_SELPLAN_MAX) { /* never planned: emitted as it is */
        rf_selsplit_free(&pl->split);
        return 1;
    }
    return pl->split.n;
}

/* Kernel boundaries of the plan; `|`s beyond RF_CG_MAX_PARTS - 1, or any
 * when !allow_split, become && (always legal: the guard accepts && wherever
 * it accepts |). */
static void set_parts(rf_cg_plan *pl, bool allow_split)
{
    rf_selplan *p = &pl->plan;
    pl->nparts = 1;
    pl->part_start[0] = 0;
    for (int i = 0; i + 1 < p->n; i++) {
        if (p->conn[i] != RF_SEL_SPLIT)
            continue;
        if (!allow_split || pl->nparts == RF_CG_MAX_PARTS) {
            p->conn[i] = RF_SEL_BRANCH;
            pl->splits_dropped = true;
            continue;
        }
        pl->part_start[pl->nparts++] = i + 1;
    }
    pl->part_start[pl->nparts] = p->n;
}

int rf_cg_plan_forced(rf_cg_plan *pl, bool allow_split, rf_status *st)
{
    int rc = rf_selplan_from_env(pl->split.conj, pl->split.n, &pl->plan, st);
    if (rc != 1)
        return rc;
    pl->forced = true;
    set_parts(pl, allow_split);
    return 1;
}

void rf_cg_plan_identity_of(const rf_cg_plan *pl, bool allow_split, rf_cg_plan *out)
{
    *out = *pl;
    rf_selplan_identity(pl->split.n, &out->plan);
    out->splits_dropped = false;
    set_parts(out, allow_split);
}

bool rf_cg_plan_choose(rf_cg_plan *pl, const double *sel, double sample_rows, double rows, bool allow_split,
                       const rf_selcalib *cal, rf_status *st)
{
    int n = pl->split.n;
    pl->rows = rows;
    pl->calibrated = cal->calibrated;
    rf_selplan identity;
    rf_selplan_identity(n, &identity);
    if (!sel) {
        pl->plan = identity;
        set_parts(pl, allow_split);
        return true;
    }
    memcpy(pl->sel, sel, (size_t)n * sizeof *sel);
    pl->sample_rows = sample_rows;
    pl->sampled = true;
    rf_selprob q = {n, pl->split.conj, pl->sel, NULL, rows, allow_split};
    if (!rf_selplan_choose(&q, cal, &pl->plan, st))
        return false;
    set_parts(pl, allow_split);
    pl->model_ns = rf_selplan_cost(&pl->plan, &q, cal);
    pl->identity_ns = rf_selplan_cost(&identity, &q, cal);
    return true;
}

char *rf_cg_plan_note(const rf_cg_plan *pl)
{
    char text[RF_SELPLAN_FMT_MAX];
    rf_selplan_format(&pl->plan, text, sizeof text);
    char *sels = rf_strdup("");
    for (int i = 0; pl->sampled && i < pl->split.n; i++) {
        char *t = rf_sprintf("%s %.3f", sels, pl->sel[i]);
        free(sels);
        sels = t;
    }
    char *note;
    const char *dropped = pl->deferred         ? "; deferred: the unchanged filter ran (made ahead with the "
                                                 "program), the plan's saving not yet paying for making its module"
                          : pl->splits_dropped ? "; its | run as && (one kernel)"
                                               : "";
    if (pl->forced)
        note = rf_sprintf("%s (forced by RF_WEAVE_SELPLAN%s)", text, dropped);
    else if (pl->sampled)
        note = rf_sprintf("%s (chosen: sampled sel%s of %.0f rows; model %.3f ms, unchanged filter %.3f ms, "
                          "%.0f rows; calibration %s%s)",
                          text, sels, pl->sample_rows, pl->model_ns / 1e6, pl->identity_ns / 1e6, pl->rows,
                          pl->calibrated ? "measured" : "defaults", dropped);
    else if (pl->bound_ns > 0)
        note = rf_sprintf("%s (the unchanged filter: not sampled, no plan could save more than %.3f ms of %.0f "
                          "rows, less than loading its module)",
                          text, pl->bound_ns / 1e6, pl->rows);
    else
        note = rf_sprintf("%s (the unchanged filter: no sample)", text);
    free(sels);
    return note;
}

void rf_cg_plan_free(rf_cg_plan *pl)
{
    rf_selsplit_free(&pl->split);
    memset(pl, 0, sizeof *pl);
}
