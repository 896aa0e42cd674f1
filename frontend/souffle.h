/* The Soufflé dialect (.dl programs; docs/souffle.md): its own lexer
 * (souffle_lexer.re, re2c) and grammar (souffle_parser.y, Lemon) build a
 * small Soufflé-shaped tree (below), which souffle.c then translates into
 * the LogiQL syntax tree (ast.h): declarations with Red Fox types, one
 * rule per head and per disjunct, aggregates as auxiliary aggregation
 * rules, .input/.output as @input/@output. Checking, stratification and
 * everything after are the LogiQL front end's.
 *
 * This header is shared by the three souffle_* sources only; the public
 * entry points are in frontend.h. */
#ifndef RF_SOUFFLE_H
#define RF_SOUFFLE_H

#include "ast.h"
#include "lexer.h"
#include "program.h"

/* ---- Lexer (souffle_lexer.re). Token codes are the SF_ constants of the
 * generated souffle_parser.h; rf_lexer and rf_token are the LogiQL
 * lexer's structures (lexer.h). */
void rf_souffle_lexer_next(rf_lexer *lx, rf_token *tok);

/* ---- The Soufflé-shaped tree the grammar builds. */

/* A body in disjunctive normal form: `disjuncts` is a list of
 * conjunctions, each an ast_list of ast_literal. `a, (b; c)` is built as
 * the two conjunctions `a, b` and `a, c`. */
typedef struct sf_body {
    ast_list *disjuncts;
} sf_body;

typedef enum sf_aggfn { SF_AGG_COUNT, SF_AGG_SUM, SF_AGG_MIN, SF_AGG_MAX, SF_AGG_MEAN } sf_aggfn;

/* `sum e : { body }`. In expressions an aggregate stands as the variable
 * "$aggN" (N = its index in sf_parse_state.aggs): the variable its
 * translation binds (souffle.c). */
typedef struct sf_agg {
    sf_aggfn fn;
    ast_expr *target;        /* NULL for count */
    sf_body *body;
    rf_loc loc;              /* the aggregate's keyword */
} sf_agg;

/* name: type, as in `.decl p(x: number)` */
typedef struct sf_attr {
    char *name, *type;
    rf_loc name_loc, type_loc;
} sf_attr;

/* key=value of .input/.output: value decoded (strings without quotes) */
typedef struct sf_kvp {
    char *key, *value;
    rf_loc key_loc, value_loc;
} sf_kvp;

typedef enum sf_clause_kind {
    SF_DECL,       /* .decl name(attrs) qualifiers */
    SF_TYPE,       /* .type name <: base | .type name = a | b | ... */
    SF_IO,         /* .input / .output / .printsize names(kvps) */
    SF_FACT,       /* head. */
    SF_RULE        /* heads :- body. */
} sf_clause_kind;

typedef enum sf_io_kind { SF_IO_INPUT, SF_IO_OUTPUT, SF_IO_PRINTSIZE } sf_io_kind;

typedef struct sf_clause {
    sf_clause_kind kind;
    rf_loc loc;
    char *name;              /* DECL, TYPE: the name declared */
    rf_loc name_loc;
    ast_list *attrs;         /* DECL: sf_attr */
    ast_list *quals;         /* DECL: rf_token copies (qualifier keywords) */
    bool subtype;            /* TYPE: `<:` (else `=`) */
    ast_list *members;       /* TYPE: rf_token copies of the type names */
    sf_io_kind io;           /* IO */
    ast_list *rels;          /* IO: rf_token copies of the relation names */
    ast_list *kvps;          /* IO: sf_kvp */
    ast_list *heads;         /* FACT, RULE: ast_atom */
    sf_body *body;           /* RULE */
} sf_clause;

typedef struct sf_parse_state {
    rf_diag *diag;
    const rf_source *src;
    rf_loc cur_loc;          /* of the token being parsed */
    bool failed;             /* error in the current clause: skip the rest */
    bool too_deep_reported;
    ast_list *clauses;       /* sf_clause, in source order */
    ast_list *aggs;          /* sf_agg, indexed by N of "$aggN" */
} sf_parse_state;

/* Helpers the grammar's actions use (souffle.c). */
sf_body *sf_body_single(ast_literal *lit);
sf_body *sf_body_and(sf_parse_state *ps, sf_body *a, sf_body *b);
sf_body *sf_body_or(sf_body *a, sf_body *b);
void sf_body_free(sf_body *b);
void sf_clause_free(sf_clause *c);
void sf_agg_free(sf_agg *a);
/* Reports an unsupported construct (once per clause) and marks the clause
 * failed, so that the driver skips the rest of it. */
void sf_unsupported(sf_parse_state *ps, rf_loc loc, const char *fmt, ...) RF_PRINTF(3, 4);

/* Parses a Soufflé program into ps (souffle.c); false on lexical or syntax
 * errors, each reported. */
bool rf_souffle_parse(const rf_source *src, rf_diag *diag, sf_parse_state *ps);
/* Parses, translates, checks and stratifies a Soufflé program (takes
 * ownership of src); NULL after errors. compile.c calls it for .dl files. */
rf_program *rf_souffle_compile(rf_source *src, const char *fact_dir, rf_diag *diag);

/* Most disjuncts one rule may expand into (`(a; b), (c; d)` is 4). */
#define SF_MAX_DISJUNCTS 1024

#endif
