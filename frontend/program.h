/* The checked program: what the front end hands to the query planner.
 * Every name is resolved, every expression typed, rules are normalised
 * (wildcards explicit, constants and repeated variables allowed in atoms,
 * equalities that bind a fresh variable turned into assignments), and the
 * predicates are split into strata in dependency order. */
#ifndef RF_PROGRAM_H
#define RF_PROGRAM_H

#include "../common/rf_expr.h"

typedef enum rf_file_format {
    RF_FORMAT_TSV,
    RF_FORMAT_CSV,
    RF_FORMAT_TBL      /* dbgen's: '|'-separated, every line ending in '|' */
} rf_file_format;

typedef enum rf_aggfn {
    RF_AGG_NONE = 0,
    RF_AGG_COUNT,    /* int64 */
    RF_AGG_TOTAL,    /* sum; type of the argument (ints: rf_scalar_binary's +) */
    RF_AGG_MIN,
    RF_AGG_MAX,
    RF_AGG_AVG,            /* float64: total / count (see docs/language.md) */
    RF_AGG_COUNT_DISTINCT  /* int64: distinct values of the argument */
} rf_aggfn;
#define RF_AGG_LAST RF_AGG_COUNT_DISTINCT   /* the largest valid rf_aggfn */

typedef struct rf_pred {
    char *name;
    int arity;
    rf_type *types;          /* [arity] */
    bool functional;         /* f[k1..kn] = v : last attribute is the value */
    rf_loc loc;              /* of the declaration */
    /* Input: facts may come inline (facts below) and/or from a file. */
    char *input_path;        /* from the @input directive, resolved relative
                                to the program's directory; NULL if none */
    rf_file_format input_format;
    rf_loc input_loc;        /* of the @input directive (its run-time errors) */
    bool is_output;          /* @output directive */
    /* Output order (@order) and limit (@limit): rows sorted by the columns
     * order_cols[0..norder) (descending where order_desc[i]), then by the
     * remaining columns ascending; at most `limit` rows (-1: all). */
    int norder;
    int *order_cols;
    bool *order_desc;
    int64_t limit;
    bool has_rules;          /* defined by at least one rule (IDB) */
    size_t nfacts;
    rf_word *facts;          /* nfacts * arity words, row-major */
} rf_pred;

typedef enum rf_lit_kind {
    RF_LIT_ATOM,      /* p(args): args are VAR or CONST, NULL = wildcard */
    RF_LIT_NEGATED,   /* !p(args): every VAR is bound by a positive literal */
    RF_LIT_FILTER,    /* cond: a bool expression over bound variables */
    RF_LIT_ASSIGN     /* var = expr: binds `var`, expr over bound variables */
} rf_lit_kind;

typedef struct rf_literal {
    rf_lit_kind kind;
    int pred;                /* ATOM, NEGATED */
    int nargs;
    rf_expr **args;          /* ATOM, NEGATED: [nargs] */
    rf_expr *expr;           /* FILTER: condition; ASSIGN: value */
    int var;                 /* ASSIGN: the variable bound */
    rf_loc loc;
} rf_literal;

typedef struct rf_rule {
    int head;                /* predicate index */
    rf_expr **head_args;     /* [arity of head]: expressions over variables */
    int nbody;
    rf_literal *body;        /* in source order; ASSIGNs placed after the
                                literals that bind their inputs */
    int nvars;
    char **var_names;        /* [nvars], for messages and explain */
    rf_type *var_types;      /* [nvars] */
    /* Aggregation rule (naggs > 0): agg<<v1 = f1(e1), ..., vn = fn(en)>>.
     * The head is the group keys (head_args[0 .. arity-naggs)) followed by
     * the n results v1..vn in that order (head_args[arity-naggs+j] is the
     * VAR of vj; none of them is a body variable). aggs[j] is fj and
     * agg_args[j] its argument (NULL for count()): typed as the result
     * column for total/min/max, in its own type for avg (a numeric type)
     * and count_distinct (any type). count, total and avg range over the
     * distinct bindings of all body variables (in aggregation rules the
     * front end replaces each wildcard of a positive atom by a fresh
     * variable, so `agg<<n = count()>> edge(x, _)` is x's out-degree);
     * min, max and count_distinct over the values of their argument. A
     * keyed group exists only where the body has a solution; a keyless rule
     * over an empty body gives one row (all zeros) only when every
     * aggregate is count or count_distinct, else no row.
     * naggs = 0, aggs = agg_args = NULL for other rules. */
    int naggs;
    rf_aggfn *aggs;          /* [naggs] */
    rf_expr **agg_args;      /* [naggs]; NULL entries for count() */
    rf_loc loc;
} rf_rule;

typedef struct rf_stratum {
    int npreds;
    int *preds;
    int nrules;
    int *rules;              /* rules whose head is in this stratum */
    bool recursive;          /* some rule's body uses a predicate of this
                                stratum positively */
} rf_stratum;

/* Where a Soufflé program (.dl) writes a relation: a .output to a file
 * (FILE: `file` as written, relative to the output directory unless
 * absolute, fields separated by `delimiter`) or to stdout in Soufflé's
 * framed form (IO=stdout, or the output directory "-"), or .printsize's
 * "name<TAB>count" line (SIZE). See docs/souffle.md. */
typedef enum rf_souffle_output_kind { RF_SOUFFLE_FILE, RF_SOUFFLE_STDOUT, RF_SOUFFLE_SIZE } rf_souffle_output_kind;

typedef struct rf_souffle_output {
    char *pred;
    rf_souffle_output_kind kind;
    char *file;              /* FILE only */
    char delimiter;
} rf_souffle_output;

typedef struct rf_program {
    rf_source *source;       /* owned */
    /* Written in the Soufflé dialect: its .output/.printsize directives in
     * program order (a .output relation is also is_output; the command
     * line makes a .printsize one an output when it prints its size). */
    bool souffle;
    int nsouffle_outputs;
    rf_souffle_output *souffle_outputs;
    int npreds;
    rf_pred *preds;
    int nrules;
    rf_rule *rules;
    int nstrata;
    rf_stratum *strata;      /* dependency order: a stratum uses only
                                itself and earlier strata */
} rf_program;

void rf_program_free(rf_program *p);
int rf_program_find_pred(const rf_program *p, const char *name); /* -1 */

#endif
