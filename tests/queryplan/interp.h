/* A deliberately naive reference interpreter of rf_plan for the tests:
 * relations are sorted duplicate-free row arrays, joins are nested loops,
 * expressions go through rf_expr_eval. Slow and obviously right. */
#ifndef INTERP_H
#define INTERP_H

#include "plan.h"

typedef struct irel {
    int arity;
    size_t n;
    rf_word *rows;    /* n * arity, sorted, no duplicates */
} irel;

typedef struct interp {
    const rf_plan *plan;
    irel *rels;       /* [plan->nrels] */
    long steps;       /* commands executed */
    long join_choices; /* --join=auto choices met: they alternate, wcoj first,
                          so that both plans of a body run */
    rf_status st;
} interp;

/* Runs the plan from block 0 to HALT; false (with it->st filled) on a
 * run-time fault or after max_steps commands (a plan that never halts). */
bool interp_run(interp *it, const rf_plan *plan, long max_steps);
void interp_free(interp *it);
/* The final value of the relation named `name`, NULL if none. */
const irel *interp_rel(const interp *it, const char *name);

/* Sorts and deduplicates rows in place (also used for expected sets). */
void irel_normalize(irel *r);
bool irel_equal(const irel *a, const irel *b);
void irel_print(const irel *r, FILE *out);

#endif
