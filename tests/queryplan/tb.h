/* Test builder: makes a checked rf_program by hand, without the front end,
 * from rules written in a tiny Datalog syntax:
 *
 *   tb_rule(b, "path(x, z) :- path(x, y), edge(y, z), x != z");
 *   tb_rule(b, "big(x, w) :- edge(x, y), w = y * 10, !small(w)");
 *
 * Body literals: atoms `p(args)` (args: variables, integers, "strings",
 * `_`), negated atoms `!p(args)`, `v = expr` with v not bound by an
 * earlier literal (an assignment), any other expression (a filter).
 * Variables are int64 unless an atom's column says otherwise. */
#ifndef TB_H
#define TB_H

#include "program.h"

typedef struct tb tb;

tb *tb_new(void);
/* types: one letter per column: i int64, n int32, s string, f float64, b bool */
int tb_pred(tb *b, const char *name, const char *types);
void tb_output(tb *b, const char *name);
/* nrows rows of the predicate's arity, as int64 values (strings: ids). */
void tb_facts(tb *b, const char *name, int nrows, const int64_t *rows);
void tb_input_file(tb *b, const char *name, const char *path);
void tb_rule(tb *b, const char *text);
/* Aggregation rule: the head's last argument names the result; arg is an
 * expression over the body's variables, NULL for count. */
void tb_agg_rule(tb *b, const char *text, rf_aggfn fn, const char *arg);
/* The same with naggs aggregates: the head's last naggs arguments name the
 * results; args[j] NULL for count (args NULL: all). */
void tb_aggs_rule(tb *b, const char *text, int naggs, const rf_aggfn *fns, const char *const *args);
/* @order(name, ...): columns cols[0..n), descending where desc[i] (desc
 * NULL: all ascending); @limit(name, limit). */
void tb_order(tb *b, const char *name, int n, const int *cols, const bool *desc);
void tb_limit(tb *b, const char *name, int64_t limit);
/* The next stratum: space-separated predicate names. Predicates without
 * rules go to an implicit first stratum. */
void tb_stratum(tb *b, const char *preds);
/* Computes has_rules, strata rule lists and recursive flags; frees b. */
rf_program *tb_finish(tb *b);

#endif
