/* The query plan: typed relations plus a CFG of basic blocks whose commands
 * are relational-algebra operations (thesis ch. 3, Figure 3). Every relation
 * is a SET (no duplicates); the plan is logical: it says which columns join,
 * not how relations are sorted. Physical layout is the Harmony IR's job.
 *
 * Column references inside command expressions are RF_EX_COL leaves:
 *   MAPFILTER, AGGREGATE: columns of src[0]
 *   MAPJOIN:              columns of src[0] followed by columns of src[1]
 *                         (index arity(src0) + j is src[1]'s column j)
 *
 * Recursive strata become semi-naive loops:
 *   entry:  P := base facts/rules;  dP := P
 *   loop:   for each rule and each recursive atom: join with dP in that
 *           position -> nP (union of all candidates)
 *           nP := nP - P;  P := P + nP;  dP := nP
 *           BRANCH_EMPTY (dP, dQ, ...) -> exit, else -> loop */
#ifndef RF_PLAN_H
#define RF_PLAN_H

#include "../frontend/program.h"

typedef enum rf_relkind {
    RF_REL_INPUT,    /* a predicate with facts only (EDB) */
    RF_REL_DERIVED,  /* the full relation of a predicate with rules (IDB) */
    RF_REL_DELTA,    /* semi-naive delta of a derived relation */
    RF_REL_NEW,      /* semi-naive candidates of one iteration */
    RF_REL_TEMP      /* intermediate result of one rule */
} rf_relkind;

typedef struct rf_plan_rel {
    char *name;              /* unique: "path", "path.delta", "t12" */
    int arity;
    rf_type *types;          /* [arity] */
    rf_relkind kind;
    int pred;                /* program predicate, -1 for TEMP */
    /* For INPUT and DERIVED relations of a predicate: where initial tuples
     * come from (copied from the program). */
    size_t nfacts;
    rf_word *facts;          /* inline facts, row-major */
    char *input_path;        /* default input file or NULL */
    rf_file_format input_format;
    char *input_where;       /* "prog.lql:3:1": the @input naming it, or NULL */
    bool is_output;
    /* Output order and limit (from @order / @limit, rf_pred): rows sorted
     * by order_cols (descending where order_desc), then by the other
     * columns ascending, in typed order; at most `limit` rows (-1: all). */
    int norder;
    int *order_cols;         /* [norder] */
    bool *order_desc;        /* [norder] */
    int64_t limit;
} rf_plan_rel;

typedef enum rf_cmdkind {
    RF_CMD_LOAD,        /* dst := inline facts ∪ input file of dst's predicate
                           (the runtime applies --input overrides) */
    RF_CMD_MAPFILTER,   /* dst := { proj(t) | t in src0, filter(t) } */
    RF_CMD_MAPJOIN,     /* dst := { proj(l++r) | l in src0, r in src1,
                           l[lkeys[i]] = r[rkeys[i]] for all i, filter(l++r) };
                           nkeys = 0 is a cross product */
    RF_CMD_ANTIJOIN,    /* dst := { proj(l) | l in src0, filter(l), no r in src1
                           with l[lkeys[i]] = r[rkeys[i]] for all i } */
    RF_CMD_UNION,       /* dst := src0 ∪ src1 (same arity; dst may be src0) */
    RF_CMD_DIFFERENCE,  /* dst := src0 − src1 (same arity) */
    RF_CMD_AGGREGATE,   /* dst := group src0 by columns lkeys[0..nkeys); dst
                           row = key values ++ aggfn[0](agg_arg[0]) ++ ... ++
                           aggfn[naggs-1](agg_arg[naggs-1]) over the group's
                           rows (count/total/avg count every row of the set
                           src0, count_distinct distinct values); keyless
                           over an empty src0: one row of zeros if every
                           aggfn is count or count_distinct, else none */
    RF_CMD_COPY,        /* dst := src0 */
    RF_CMD_CLEAR,       /* dst := ∅ */
    RF_CMD_JUMP,        /* goto target */
    RF_CMD_BRANCH_EMPTY,/* if every rel in conds is empty goto target
                           else goto target_else */
    RF_CMD_HALT,
    RF_CMD_CHECK_KEYS,  /* functional dependency: no two rows of src0 agree on
                           their first nkeys columns (the key) and differ in
                           the rest (the value); fails the run otherwise.
                           Writes nothing (dst = -1); emitted once per
                           functional predicate after its stratum */
    RF_CMD_MULTIJOIN,   /* worst-case-optimal join (leapfrog triejoin) of
                           nins sources over nvars variables, numbered in
                           the order the join binds them: column j of
                           ins[i] binds variable in_vars[in_first[i] + j]
                           (distinct within a source; every variable bound
                           by some source); dst := { proj(b) | b a binding
                           of the variables that every source holds,
                           filter(b) }, column reads being variable
                           numbers. src[] = -1 */
    RF_CMD_BRANCH_JOIN  /* --join=auto's run-time choice for a cyclic body
                           of nvars variables and nins atoms (plan_build.c,
                           auto_join): J = rows of the binary plan's first
                           join, src0 join src1 on lkeys/rkeys (the atoms'
                           relations; their scans' filters not applied, so
                           an upper bound), N = |src0| + |src1|; the binary
                           plan's largest intermediate is estimated as
                           N x (J / N)^(nvars - 2) (each further variable
                           multiplies it by the first join's growth), the
                           multiway join's inputs as nins x N / 2. If the
                           first is more than ratio x the second goto
                           target (the MultiJoin) else goto target_else
                           (the binary joins). The ratio is the backend's
                           (RF_WCOJ_AUTO_RATIO overrides it); ins is NULL.
                           Ends a block */
} rf_cmdkind;

typedef struct rf_plan_cmd {
    rf_cmdkind kind;
    int dst;                 /* relation index, -1 for control commands */
    int src[2];              /* -1 when unused */
    int nkeys;               /* MAPJOIN/ANTIJOIN/BRANCH_JOIN: key pairs; AGGREGATE: group keys;
                                CHECK_KEYS: key columns (a prefix) */
    int *lkeys;              /* [nkeys] columns of src0 (AGGREGATE: the keys) */
    int *rkeys;              /* [nkeys] columns of src1 */
    rf_expr *filter;         /* NULL = true */
    int nproj;               /* == arity(dst) for MAPFILTER/MAPJOIN/ANTIJOIN */
    rf_expr **proj;
    int naggs;               /* AGGREGATE: aggregates (>= 1); dst arity = nkeys + naggs */
    rf_aggfn *aggfn;         /* AGGREGATE: [naggs] */
    rf_expr **agg_arg;       /* AGGREGATE: [naggs], NULL entries for count */
    int target, target_else; /* JUMP, BRANCH_EMPTY, BRANCH_JOIN: block indices */
    int nconds;
    int *conds;              /* BRANCH_EMPTY: relation indices */
    /* MULTIJOIN only (the plan's boundary grows from two sources to n) */
    int nins;                /* 1..RF_MULTIJOIN_MAX_IN sources (BRANCH_JOIN:
                                the body's atoms, with ins NULL) */
    int *ins;                /* [nins] relation indices */
    int *in_first;           /* [nins + 1]: source i's columns' variables
                                are in_vars[in_first[i] .. in_first[i+1]) */
    int *in_vars;
    int nvars;               /* variables, 1..RF_MULTIJOIN_MAX_VARS (also
                                BRANCH_JOIN: the body's variables) */
    char *why;               /* the planner's estimate behind the choice
                                (explain --plan prints it), or NULL */
    char *comment;           /* why the command exists (rule text), or NULL */
    rf_origin origin;        /* for run-time errors (division by zero, ...);
                                empty for unions and loop control */
} rf_plan_cmd;

typedef struct rf_plan_block {
    char *label;             /* "stratum2.loop" */
    int ncmds;
    rf_plan_cmd *cmds;       /* the last command is JUMP, BRANCH_EMPTY or HALT;
                                a block not ending so falls through to the next */
} rf_plan_block;

typedef struct rf_plan {
    int nrels;
    rf_plan_rel *rels;
    int nblocks;
    rf_plan_block *blocks;   /* entry is block 0 */
} rf_plan;

/* How rule bodies of several atoms are joined (`--join=`). */
typedef enum rf_join_mode {
    RF_JOIN_AUTO = 0,        /* a cyclic body gets both plans, a MULTIJOIN
                                and binary joins, behind a BRANCH_JOIN
                                that picks one at run time from the sizes
                                of the actual inputs */
    RF_JOIN_BINARY,          /* binary joins only (MAPJOIN chains) */
    RF_JOIN_WCOJ             /* a MULTIJOIN for every body it can take
                                (two atoms or more, cyclic or not) */
} rf_join_mode;

/* The limits of one MULTIJOIN (the same as the Harmony IR's). */
#define RF_MULTIJOIN_MAX_IN 16
#define RF_MULTIJOIN_MAX_VARS 16

/* Builds the plan (strata in order, semi-naive loops) and runs the passes. */
typedef struct rf_plan_options {
    bool optimize;           /* order joins, turn equalities into join keys,
                                run the passes (default true); off, rules
                                are planned as written (tests compare) */
    rf_join_mode join;       /* with optimize only; zero: RF_JOIN_AUTO */
} rf_plan_options;

/* Parses "binary" / "wcoj" / "auto"; false for anything else. */
bool rf_join_mode_parse(const char *s, rf_join_mode *out);

/* The sources a command reads: src[0..1] of a plain command (as many as
 * its kind has), ins[0..nins) of a MULTIJOIN. Returns a pointer into the
 * command (writable: the passes rename sources) and the count in *n. */
int *rf_plan_cmd_sources(rf_plan_cmd *c, int *n);
const int *rf_plan_cmd_sources_c(const rf_plan_cmd *c, int *n);

rf_plan *rf_plan_build(const rf_program *prog, const rf_plan_options *opt);
void rf_plan_free(rf_plan *plan);

/* Passes (each returns true if it changed the plan). */
bool rf_plan_pass_pushdown(rf_plan *plan);     /* filters/projections before joins */
bool rf_plan_pass_cse(rf_plan *plan);          /* share identical commands */
bool rf_plan_pass_union_into_empty(rf_plan *plan); /* a rule's result written into
                                                      its still empty predicate */
bool rf_plan_pass_dead_rels(rf_plan *plan);    /* remove unused relations/commands */

/* `redfox explain --plan` */
void rf_plan_print(const rf_plan *plan, FILE *out);
/* `redfox explain --dot --plan`: the CFG as Graphviz DOT (plan_dot.c). */
void rf_plan_write_dot(const rf_plan *plan, FILE *out);

/* Checks the plan's own invariants (indices in range, arities agree,
 * column references valid); returns false with a message. */
bool rf_plan_verify(const rf_plan *plan, rf_status *st);

#endif
