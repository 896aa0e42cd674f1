/* The Harmony IR: a CFG of side-effect-free kernels over managed variables
 * (thesis ch. 3, Figure 4). This is the physical level: every variable has a
 * known layout (sorted or not), and every kernel is an operator of the
 * primitive library with its partition / compute / gather stages spelled
 * out. The runtime interprets it; `redfox compile` serialises it.
 *
 * Layout invariant: a variable with `sorted` set holds rows in lexicographic
 * order of their words (unsigned compare, column 0 first) with no duplicate
 * rows. Kernels that need sorted inputs (JOIN, ANTIJOIN, UNION, DIFF, AGG)
 * take only sorted variables; the verifier checks this. */
#ifndef RF_HIR_H
#define RF_HIR_H

#include "../queryplan/plan.h"

/* ---- Compute-stage code: one expression in postfix form ---- */
typedef struct rf_instr {
    uint8_t op;          /* rf_exop; RF_EX_COL reads input column `index`,
                            RF_EX_ROWID the row's position in input `index`
                            (MAP: 0; JOIN: 0 left, 1 right) */
    uint8_t type;        /* rf_type of the result */
    uint8_t arg_type;    /* rf_type of the operand(s): comparisons, CAST */
    uint8_t pad_;
    int32_t index;       /* RF_EX_COL */
    rf_word value;       /* RF_EX_CONST */
} rf_instr;

typedef struct rf_code {
    int n;               /* 0 = absent (a filter that is always true) */
    rf_instr *ins;
} rf_code;

void rf_code_from_expr(rf_code *out, const rf_expr *e); /* e may be NULL */
void rf_code_free(rf_code *c);
/* If the code is a single column read, returns its index, else -1 (the
 * backends' fast path for pure projections). */
int rf_code_as_column(const rf_code *c);
/* out := a copy of c whose column reads read column map[i] where c reads
 * column i (a MULTIJOIN's code in another variable order). */
void rf_code_copy_mapped(rf_code *out, const rf_code *c, const int *map);
/* Whether the code makes new strings (interns into the one dictionary):
 * concat, and substr except where it is only compared (= or !=) with a
 * string constant, which the evaluators do on the bytes. The dictionary
 * is not thread-safe and numbers strings in the order they come, so the
 * backends evaluate such code on one thread. */
bool rf_code_interns(const rf_code *c);
/* Whether the code reads a row's position (RF_EX_ROWID). */
bool rf_code_reads_rowid(const rf_code *c);
/* For instruction k of c: whether it is `substr(...) = CONST` or
 * `CONST = substr(...)` (or !=) over strings; *sub and *cst get the two
 * operands' instructions. */
bool rf_code_substr_compare(const rf_code *c, const int *start, int k, int *sub, int *cst);
/* Deepest stack the code needs; -1 if malformed (stack underflow, leftover
 * values, bad op/type, column out of range given `ncols`). */
int rf_code_check(const rf_code *c, int ncols);

typedef enum rf_kop {
    RF_K_LOAD,     /* out := inline facts of the var ∪ its input file; sorted */
    RF_K_MAP,      /* out := { proj(t) | t in in0, filter(t) }; unsorted */
    RF_K_SORT,     /* out := in0 sorted, duplicates removed */
    RF_K_JOIN,     /* in0, in1 sorted; rows equal on their first nkeys
                      columns; out := proj(l ++ r) where filter(l ++ r);
                      unsorted. nkeys = 0: cross product */
    RF_K_ANTIJOIN, /* in0, in1 sorted; out := rows of in0 whose first nkeys
                      columns match no row of in1 (first nkeys cols); sorted */
    RF_K_UNION,    /* in0, in1 sorted; out := in0 ∪ in1; sorted */
    RF_K_DIFF,     /* in0, in1 sorted; out := in0 − in1; sorted */
    RF_K_AGG,      /* in0 sorted; groups = equal first nkeys columns;
                      out row := keys ++ aggfn[0](agg_arg[0]) ++ ... ++
                      aggfn[naggs-1](agg_arg[naggs-1]) over the group's
                      rows; sorted. count/total/avg take every row,
                      count_distinct the distinct argument values; float64
                      sums add in row order (the sorted order), integer and
                      decimal sums are exact (avg: from a 128-bit total).
                      nkeys = 0 (one group): an empty input gives one row
                      of zeros when every aggfn is count or count_distinct,
                      else no row */
    RF_K_COPY,     /* out := in0 (same layout) */
    RF_K_CLEAR,    /* out := ∅ */
    RF_K_CHECK_KEYS, /* in0 sorted; fails the run if two rows agree on their
                      first nkeys columns (equal keys are adjacent) and
                      differ in the rest. No output: out = -1. Run by the
                      runtime itself (download + host scan), never by a
                      backend's `run` */
    RF_K_FUSED,    /* a group of member kernels run as one (Kernel Weaver,
                      docs/weaver.md): `fused` holds them; in[] = -1 and
                      out = fused->out[0]. Its members' results that only
                      other members read (internal variables) never exist
                      outside it */
    RF_K_MULTIJOIN, /* worst-case-optimal join (leapfrog triejoin, thesis
                      ch. 5) of mj->nin sorted inputs over mj->nvars
                      variables numbered in the order the join binds them:
                      column j of input i binds variable
                      mj->in_vars[mj->in_first[i] + j], strictly
                      increasing along each input (each input is a trie
                      in the variable order); out := proj(b) for every
                      binding b of all variables that every input holds,
                      where filter(b); column reads of filter and proj
                      are variable numbers. Unsorted. in[] = -1.
                      mj->count: out := one row, the number of bindings
                      (int64; filter empty, no projections): a keyless
                      count() of the bindings, none of them made
                      (lower.c, count_multijoins) */
    RF_K_COUNT_
} rf_kop;

/* Partition stage: how the input is split into independent pieces. */
typedef enum rf_partition {
    RF_PART_NONE,       /* single piece (LOAD, CLEAR, COPY) */
    RF_PART_EVEN,       /* equal row ranges of in0 (MAP, SORT blocks) */
    RF_PART_KEY_RANGE,  /* merge-path split of in0 and in1 on the key prefix,
                           so equal keys never straddle pieces (JOIN,
                           ANTIJOIN, UNION, DIFF) */
    RF_PART_GROUP       /* row ranges aligned to group boundaries (AGG) */
} rf_partition;

/* Gather stage: how the per-piece results become the output. */
typedef enum rf_gather {
    RF_GATHER_NONE,     /* output written in place */
    RF_GATHER_COMPACT,  /* per-piece counts -> prefix sum -> concatenation */
    RF_GATHER_MERGE,    /* per-piece sorted runs merged (SORT) */
    RF_GATHER_REDUCE,   /* FUSED only, ending SORT -> AGG: the rows fold into
                           per-group accumulators as they are made, without
                           the sort (every aggregate order-insensitive and
                           the SORT's input duplicate-free; see verify.c) */
    RF_GATHER_SET       /* FUSED only, ending `s := SORT t` where t is the
                           unsorted result of the member before (a JOIN
                           chain): the backend may set t's rows as bits of
                           a dense set over their value ranges, which is s
                           (sorted and distinct by construction), so t is
                           never written; or, when no frame fits, write t
                           and run the SORT. Numbered after REDUCE so that
                           the earlier gathers keep their numbers */
} rf_gather;

/* How a member of a fused group depends on the member that made its input
 * (thesis ch. 4.3.1): thread, row by row (MAP, JOIN -> MAP): the value can
 * stay in registers; CTA, on a partition of rows (JOIN, set operations
 * after the same partitioning); kernel, on the whole input (SORT, a
 * reduction over everything). */
typedef enum rf_dep { RF_DEP_THREAD, RF_DEP_CTA, RF_DEP_KERNEL, RF_DEP_COUNT_ } rf_dep;

/* An internal variable of a fused group: written by member `from`, read by
 * member `to` (one edge per reading member). */
typedef struct rf_fedge {
    int var, from, to;
    rf_dep dep;
} rf_fedge;

/* RF_FUSED_MAX: the most members one group holds. */
#define RF_FUSED_MAX 16

/* The most inputs and variables of one RF_K_MULTIJOIN: RF_MULTIJOIN_MAX_IN
 * and RF_MULTIJOIN_MAX_VARS (plan.h). */
/* The inputs of an RF_K_MULTIJOIN (the backend boundary's n inputs). */
typedef struct rf_multijoin {
    int nvars;               /* 1..RF_MULTIJOIN_MAX_VARS */
    int nin;                 /* 1..RF_MULTIJOIN_MAX_IN */
    int *in;                 /* [nin] sorted variables */
    int *in_first;           /* [nin + 1]: input i's columns are entries
                                in_first[i] .. in_first[i + 1] - 1 of
                                in_vars (in_first[nin] = their total) */
    int *in_vars;            /* the variable each input column binds */
    bool count;              /* out is the number of bindings (RF_K_MULTIJOIN) */
    /* NULL, or [nvars]: a second order the backend may bind the variables
     * in, chosen at run time (alt_order[k] is the variable bound k-th).
     * The inputs are tries in the variable numbering above; the backend
     * that takes alt_order makes re-keyed copies of them for it. Lowering
     * sets it to the order reversed where each order's last level is a
     * triangle of binary inputs (rf_mj_last_level), so that the work of
     * that level can be estimated from the inputs before either runs
     * (docs/design.md, "Variable orders"). The rows are the same either
     * way; the listing is unsorted in any case. */
    int *alt_order;
} rf_multijoin;

/* The last level of a multiway join bound in `order` (NULL: 0, 1, ...,
 * nvars - 1; else order[k] is the variable bound k-th), when it is a
 * triangle: the last variable v, two variables p, q bound before it, and
 * binary inputs over exactly {p, q}, {p, v} and {q, v}. Its work is about
 * the sum over the rows (a, b) of the {p, q} input of min(rows of the
 * {p, v} input holding a as p, rows of the {q, v} input holding b as q):
 * each binding of p and q intersects two lists of v and drives the
 * shorter. Columns are those of the inputs as given (in_vars numbering).
 * Of several such triangles, the one of the latest-bound p, q. */
typedef struct rf_mj_last {
    int pairs, pairs_p, pairs_q;   /* the {p, q} input and its columns of p and q */
    int list_p, list_p_col;        /* the {p, v} input and its column of p */
    int list_q, list_q_col;        /* the {q, v} input and its column of q */
} rf_mj_last;
bool rf_mj_last_level(int nin, const int *in_first, const int *in_vars, int nvars, const int *order,
                      rf_mj_last *out);
/* The inputs re-keyed for `order` (as above): newnum[x] := the position of
 * variable x in order; input i's column j in the new layout is its column
 * col_perm[in_first[i] + j] now, binding new_in_vars[in_first[i] + j]
 * (increasing within an input). Arrays of in_first[nin] entries. */
void rf_mj_reorder(int nin, const int *in_first, const int *in_vars, int nvars, const int *order, int *newnum,
                   int *col_perm, int *new_in_vars);
/* Whether binding the variables in `order` brings in each variable after
 * the first together with one bound before it (some input holds both), so
 * that no level is a cross product. */
bool rf_mj_order_connected(int nin, const int *in_first, const int *in_vars, int nvars, const int *order);

typedef struct rf_kernel rf_kernel;
typedef struct rf_fused {
    int nmembers;            /* 2..RF_FUSED_MAX, in execution order */
    rf_kernel *members;      /* plain kernels (no LOAD, COPY, CLEAR,
                                CHECK_KEYS or FUSED); their free lists are
                                empty: the group frees as one kernel */
    int nedges;
    rf_fedge *edges;
    int nin, *in;            /* external variables read, in member order */
    int nout, *out;          /* external variables written */
} rf_fused;

struct rf_kernel {
    rf_kop op;
    int out;
    int in[2];               /* variable indices, -1 when unused */
    int nkeys;
    rf_partition partition;
    rf_code filter;          /* MAP, JOIN */
    int nproj;               /* MAP, JOIN: == arity(out) */
    rf_code *proj;
    int naggs;               /* AGG: aggregates (>= 1); arity(out) = nkeys + naggs */
    rf_aggfn *aggfn;         /* AGG: [naggs] */
    rf_code *agg_arg;        /* AGG: [naggs], absent (n = 0) for count */
    rf_gather gather;
    /* Liveness: variables whose last use is this kernel; the runtime frees
     * them right after it runs. */
    int nfree;
    int *frees;
    char *comment;           /* provenance (plan command), may be NULL */
    rf_origin origin;        /* the rule it computes, for run-time errors */
    rf_fused *fused;         /* RF_K_FUSED only */
    rf_multijoin *mj;        /* RF_K_MULTIJOIN only */
};

/* The variables a kernel reads and writes as the rest of the program sees
 * them: a plain kernel's in[0..1] / out where set, a FUSED kernel's
 * external in / out, a MULTIJOIN's mj->in. Returns the count (at most
 * RF_KERNEL_VARS_MAX). */
#define RF_KERNEL_VARS_MAX (2 * RF_FUSED_MAX)
int rf_kernel_reads(const rf_kernel *k, int *vars);
int rf_kernel_writes(const rf_kernel *k, int *vars);
void rf_kernel_free(rf_kernel *k);     /* its contents, members included */
void rf_fused_free(rf_fused *f);
void rf_multijoin_free(rf_multijoin *mj);

typedef enum rf_term {
    RF_TERM_FALLTHROUGH,     /* to the next block */
    RF_TERM_JUMP,
    RF_TERM_BRANCH_EMPTY,    /* all of conds empty ? target : target_else */
    RF_TERM_HALT,
    RF_TERM_BRANCH_JOIN      /* --join=auto's run-time choice (plan.h,
                                RF_CMD_BRANCH_JOIN says how): nconds = 2;
                                J = the rows conds[0] joined with conds[1]
                                on column pairs (lkeys[i], rkeys[i]),
                                i < nkeys, would make, N = rows(conds[0])
                                + rows(conds[1]); N x (J / N)^(nvars - 2)
                                > ratio x natoms x N / 2 ? target (the
                                MULTIJOIN) : target_else (binary joins).
                                The backend counts J (join_size); the
                                ratio is the backend's or
                                RF_WCOJ_AUTO_RATIO's (join_choice.c) */
} rf_term;

typedef struct rf_hblock {
    char *label;
    int nkernels;
    rf_kernel *kernels;
    rf_term term;
    int target, target_else;
    int nconds;
    int *conds;
    int nkeys;               /* BRANCH_JOIN: key column pairs (0: cross) */
    int nvars;               /* BRANCH_JOIN: the body's variables (>= 2) */
    int natoms;              /* BRANCH_JOIN: the body's atoms (>= 2) */
    int *lkeys, *rkeys;      /* [nkeys] columns of conds[0], conds[1] */
    /* Liveness: variables to free on entry to this block (dead on every
     * path from here but possibly live on the edge that came in). */
    int nfree_entry;
    int *free_entry;
} rf_hblock;

typedef struct rf_hvar {
    char *name;
    int arity;
    rf_type *types;
    bool sorted;             /* layout invariant above */
    /* Data sources and sinks, named by predicate (for --input / output). */
    char *pred;              /* predicate name or NULL */
    size_t nfacts;           /* LOAD: inline facts, row-major */
    rf_word *facts;
    char *input_path;        /* LOAD: default input file or NULL */
    rf_file_format input_format;
    bool is_output;          /* value at HALT is the output of `pred` */
    bool internal;           /* lives only inside one FUSED kernel */
    char *input_where;       /* LOAD: "prog.lql:3:1", the @input directive
                                that named input_path (for its errors) */
    /* Output order and limit (@order / @limit): the runtime writes the
     * rows sorted by order_cols (descending where order_desc), then by the
     * other columns ascending, in typed order; at most `limit` (-1: all). */
    int norder;
    int *order_cols;         /* [norder] */
    bool *order_desc;        /* [norder] */
    int64_t limit;
} rf_hvar;

typedef struct rf_hprogram {
    int nvars;
    rf_hvar *vars;
    int nblocks;
    rf_hblock *blocks;       /* entry is block 0 */
    bool woven;              /* Kernel Weaver ran on it (rf_pipeline_weave with
                                fusion on; not serialised): a backend may then
                                also run a lone kernel's stages as one
                                generated kernel */
} rf_hprogram;

/* Plan -> Harmony IR (inserts the re-orderings and sorts that joins and set
 * operations need, hoists loop-invariant sorts), then liveness. */
rf_hprogram *rf_hir_lower(const rf_plan *plan);
void rf_hir_liveness(rf_hprogram *p);   /* fills frees / free_entry */
void rf_hir_free(rf_hprogram *p);

/* Whether group f begins with a SORT that only orders the probe side of
 * the JOIN after it and ends in a set gather (`s := SORT x; t := JOIN s,
 * y; ...; o := SORT t'`, s internal and read only as that JOIN's first
 * input): a backend may join x's rows as they come, looking each one up
 * in y, and skip the SORT; the set gather sorts and deduplicates the
 * result, so it is the same. The JOIN reads no row position of s, except
 * as a projected identity column (a bag body's, design.md "Row
 * identities") where x's rows are distinct (rf_hir_rows_distinct; p may
 * be NULL: then none): the row's place in x then names it as its place in
 * s would. */
bool rf_fused_probe_sort(const rf_hprogram *p, const rf_fused *f);

/* k := JOIN in1, in0 with the same output rows: both sides' first nkeys
 * columns are the keys, so only the code's column reads and row positions
 * move (the weaver's probe edges; the GPU's probe side chosen by rows). */
void rf_join_swap_sides(const rf_hprogram *p, rf_kernel *k);

/* The same, x_distinct saying whether the SORT's input rows are distinct
 * (the weaver's test, made while the program's blocks are taken apart). */
bool rf_fused_probe_shape(const rf_fused *f, bool x_distinct);

/* Whether variable v's rows are distinct wherever it is written: a sorted
 * variable, or one whose only writer is a MAP projecting its input's row
 * position as a column (one row for each input row it keeps). */
bool rf_hir_rows_distinct(const rf_hprogram *p, int v);
/* Whether k is a MAP projecting its input's row position as a column. */
bool rf_map_projects_position(const rf_kernel *k);

/* Whether group f may end in RF_GATHER_REDUCE (the verifier's rule). */
bool rf_fused_reduce_legal(const rf_hprogram *p, const rf_fused *f);

/* `redfox explain --ir` */
void rf_hir_print(const rf_hprogram *p, FILE *out);
/* `redfox explain --dot --ir`: the kernel CFG as Graphviz DOT (hir_dot.c). */
void rf_hir_write_dot(const rf_hprogram *p, FILE *out);
/* One code as explain --ir prints it (infix; "true" when absent). */
void rf_code_print(FILE *out, const rf_code *c);

/* Structural checks: indices in range, arities and types agree, sorted
 * inputs where required, code well-formed, CFG targets valid. */
bool rf_hir_verify(const rf_hprogram *p, rf_status *st);

/* Binary form (.rfx): magic "RFOXHIR\0", format version, string table,
 * variables, blocks. The writer writes to a temporary file and renames it,
 * so the output is whole or absent. The reader validates every field and
 * then runs rf_hir_verify; it never trusts a length or an index. */
#define RF_HIR_MAGIC "RFOXHIR"
#define RF_HIR_VERSION 10  /* 10: a MULTIJOIN's alt_order (a format-9 file
                              binds every join in the planner's order, so it
                              is compiled again); 9: a MULTIJOIN's count flag (a format-8 file
                              makes a counted body's bindings, so it is
                              compiled again); 8: RF_TERM_BRANCH_JOIN (--join=auto chooses
                              at run time; a format-7 file chose at plan
                              time without statistics, so it is compiled
                              again); 7: RF_K_MULTIJOIN (worst-case-optimal
                              joins; a format-6 file plans cyclic bodies as
                              binary joins, so it is compiled again); 2: RF_K_CHECK_KEYS; 3: origins, input paths
                              relative to the .rfx, several aggregates per
                              AGG, output order and limit; 4: RF_EX_ROWID
                              (operator numbers moved); 5: RF_K_FUSED,
                              RF_GATHER_REDUCE, internal variables; 6:
                              RF_GATHER_SET (a format-5 file has its JOIN ->
                              SORT pairs unwoven, and the GPU backend now
                              joins into a dense set only through that
                              gather: such a file would run correctly but
                              without it, so it is compiled again) */
bool rf_hir_save(const rf_hprogram *p, const char *path, rf_status *st);
uint8_t *rf_hir_serialize(const rf_hprogram *p, size_t *len_out);
rf_hprogram *rf_hir_deserialize(const uint8_t *data, size_t len, rf_status *st);
rf_hprogram *rf_hir_load(const char *path, rf_status *st);

const char *rf_kop_name(rf_kop op);

#endif
