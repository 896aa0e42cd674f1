/* Internal interfaces between the front end's passes. */
#ifndef RF_CHECK_H
#define RF_CHECK_H

#include "ast.h"
#include "program.h"

/* Resolves names, checks types and lowers the syntax tree into prog (whose
 * source is already set): predicates, facts, directives, normalised rules.
 * Returns false if it reported an error. */
bool rf_check(rf_program *prog, const ast_program *ast, rf_diag *diag);

/* Splits the checked program into strata (Tarjan's SCC algorithm on the
 * predicate dependency graph) and rejects negation or aggregation through
 * recursion. Returns false if it reported an error. */
bool rf_stratify(rf_program *prog, rf_diag *diag);

#endif
