/* The portable operator library: the relational primitives on host tables
 * (rf_table), each O(n log n) or better, multi-threaded where it pays.
 * The GPU library (primitives/cuda/) mirrors these entry points. All
 * functions return false and fill st on a run-time fault (division by zero
 * in compute code); results are written to `out`, which is (re)initialised. */
#ifndef RF_PRIMS_H
#define RF_PRIMS_H

#include "../common/rf_table.h"
#include "../harmony_ir/hir.h"

/* Sets the number of worker threads (<= 0: one per core). */
void rf_prims_set_threads(int n);
/* One per core, unless rf_prims_set_threads was called already. */
void rf_prims_default_threads(void);
int rf_prims_threads(void);
/* Runs fn(ctx, 0..n-1) on up to rf_prims_threads() threads of a pool
 * started once (the caller's thread included); pieces are handed out
 * dynamically. Also used by the GPU library for host-side copies. */
typedef void (*rf_task_fn)(void *ctx, int piece);
void rf_par_for(int n, rf_task_fn fn, void *ctx);
/* Starts the pool's workers for `threads` threads (<= 0: one per core) now,
 * so that the first rf_par_for (reading the inputs) does not pay for making
 * them; the CLI calls it before the device's start-up. */
void rf_par_prestart(int threads);
/* Whether the calling thread is running pieces of an rf_par_for (as its
 * caller or as a pool worker). libredfox must not longjmp out of one: the
 * other threads would go on with the job's memory. */
bool rf_par_running_here(void);
/* What each thread did for rf_par_for while recording (`redfox run
 * --profile`: a slice per kernel on each thread that ran pieces of it).
 * Slot 0 is the thread that called rf_par_activity_start, slot w + 1 pool
 * worker w; other threads are not recorded. Times are rf_now() seconds:
 * when the thread's first piece began and its last ended, and the time
 * inside pieces. Recording costs two clock reads a piece. */
typedef struct rf_par_activity {
    double first, last, busy;
    int pieces;              /* 0: the thread ran none */
} rf_par_activity;
#define RF_PAR_ACTIVITY_SLOTS 257
/* One recording at a time in a process (the slots are global). */
void rf_par_activity_start(void);   /* clears every slot */
void rf_par_activity_stop(void);
/* Copies up to cap slots (RF_PAR_ACTIVITY_SLOTS hold them all) and clears
 * them; returns the number copied. Call from the recording thread, between
 * rf_par_for calls. */
int rf_par_activity_take(rf_par_activity *slots, int cap);

/* out := { proj(t) | t in in, filter(t) } (unsorted). */
bool rf_prim_map(const rf_table *in, const rf_code *filter, int nproj,
                 const rf_code *proj, rf_table *out, rf_status *st);
/* Several MAPs over one input in one pass (the branches of a fused group
 * of several outputs): outs[i] gets exactly the rows, in the same order,
 * that rf_prim_map(in, maps[i].filter, maps[i].nproj, maps[i].proj)
 * gives; outs[i] is initialised here. On a fault, false and st set, and
 * which map's fault is reported is not that of running them one after
 * the other (the caller then does that). No code may intern strings
 * (rf_code_interns): one pass would number them in another order. */
typedef struct rf_map_spec {
    const rf_code *filter;
    int nproj;
    const rf_code *proj;
} rf_map_spec;
bool rf_prim_map_many(const rf_table *in, int nmaps, const rf_map_spec *maps, rf_table *outs, rf_status *st);
/* src's rows written over dst's from row at on (dst->cap >= at +
 * src->nrows; dst->nrows untouched), by all threads for large tables. */
void rf_copy_rows_at(rf_table *dst, size_t at, const rf_table *src);
/* out := in's rows sorted lexicographically (unsigned words), duplicates
 * dropped; out is initialised here. */
void rf_prim_sort(const rf_table *in, rf_table *out);
/* The same, in place. */
void rf_prim_sort_unique(rf_table *t);
/* Sorts (rf_prim_sort) of two columns found in the order of their second
 * column, then first, and so sorted by the first column's bits alone
 * (since the process started). */
size_t rf_prim_sorts_by_first(void);
/* in0, in1 sorted; join on first nkeys cols; out := proj(l++r) if filter. */
bool rf_prim_join(const rf_table *l, const rf_table *r, int nkeys,
                  const rf_code *filter, int nproj, const rf_code *proj,
                  rf_table *out, rf_status *st);
/* The same rows as rf_prim_join with l in any order (r sorted): each row
 * of l is looked up in r (Kernel Weaver's probe edge, the SORT of l
 * skipped); the output comes in l's order, a row position of l is its
 * place in l as given. */
bool rf_prim_join_probe(const rf_table *l, const rf_table *r, int nkeys, const rf_code *filter, int nproj,
                        const rf_code *proj, rf_table *out, rf_status *st);
void rf_prim_antijoin(const rf_table *l, const rf_table *r, int nkeys, rf_table *out);
/* out := rows of a whose first nkeys columns match no row of any of
 * runs[0..nruns) (a and each run sorted; nkeys = arity: the difference
 * a − ∪ runs). A small a (a semi-naive delta against the runs of a full
 * relation) is probed row by row into each run, never passing over one;
 * a big one merges run by run. out is initialised here. */
void rf_prim_antijoin_runs(const rf_table *a, const rf_table *const *runs, int nruns, int nkeys, rf_table *out);
/* The same into out, an initialised table (of a's arity, else remade)
 * whose storage is reused: a caller that recycles small tables saves the
 * allocations. */
void rf_prim_antijoin_runs_into(const rf_table *a, const rf_table *const *runs, int nruns, int nkeys,
                                rf_table *out);
void rf_prim_union(const rf_table *a, const rf_table *b, rf_table *out);
/* The same into out, an initialised table (of a's arity, else remade)
 * whose storage is reused and never shrunk. */
void rf_prim_union_into(const rf_table *a, const rf_table *b, rf_table *out);
void rf_prim_difference(const rf_table *a, const rf_table *b, rf_table *out);
/* in sorted; group on first nkeys columns; out := keys ++ one column per
 * aggregate (fns[j] of args[j], result type result_types[j]; count's arg
 * absent). Semantics: hir.h, RF_K_AGG; avg's arithmetic: rf_agg_ops.h. */
bool rf_prim_aggregate_multi(const rf_table *in, int nkeys, int naggs, const rf_aggfn *fns,
                             const rf_type *result_types, const rf_code *args, rf_table *out,
                             rf_status *st);
/* The same over an unsorted input that holds no duplicate row, by hashing
 * the keys instead of sorting the rows (Kernel Weaver's reducing gather);
 * only aggregates whose result does not depend on the rows' order: no
 * count_distinct, no total/avg of float64 (fails otherwise). Same output,
 * sorted by key. */
bool rf_prim_aggregate_unsorted(const rf_table *in, int nkeys, int naggs, const rf_aggfn *fns,
                                const rf_type *result_types, const rf_code *args, rf_table *out,
                                rf_status *st);
/* A MAP of in and the aggregation of its rows in one pass, no row of the
 * MAP stored (Kernel Weaver's reducing gather; reduce.c): the MAP's
 * projections proj (its first nkeys are the group keys) and args[j], the
 * aggregates' arguments over in's rows (not over the projections). The
 * aggregates rf_prim_aggregate_unsorted takes; the same output: the result
 * of the MAP, a SORT and the AGG. */
bool rf_prim_map_reduce(const rf_table *in, const rf_code *filter, int nproj, const rf_code *proj, int nkeys,
                        int naggs, const rf_aggfn *fns, const rf_type *result_types, const rf_code *args,
                        rf_table *out, rf_status *st);
/* Distinct keys (first nkeys columns) among `sample` rows of in taken at
 * an even stride: whether hashing pays (few groups) or sorting does. */
size_t rf_prim_sample_groups(const rf_table *in, int nkeys, size_t sample);
/* The same with one aggregate. */
bool rf_prim_aggregate(const rf_table *in, int nkeys, rf_aggfn fn, rf_type result_type,
                       const rf_code *arg, rf_table *out, rf_status *st);

/* Dense sets (dense.c): a set of rows over small integer column ranges as
 * a bitmap of packed rows (bit order = row order). Used by the sort for
 * dense key ranges and by the CPU backend to hold a big recursive relation
 * whose rows cover a good part of its ranges. At most RF_DENSE_MAX_BITS key
 * bits (2^32 bits = 512 MiB). */
#define RF_DENSE_MAX_BITS 32
typedef struct rf_dense rf_dense;
/* An empty set whose ranges are those of a's (and b's, may be NULL) rows,
 * or NULL if they need more than max_bits bits, arity is 0 or both are
 * empty. */
rf_dense *rf_dense_new_for(const rf_table *a, const rf_table *b, int max_bits);
/* An empty set with explicit ranges: column c spans min[c] + [0, 2^width[c]). */
rf_dense *rf_dense_new_layout(int arity, const rf_word *min, const int *width);
rf_dense *rf_dense_clone(const rf_dense *d);
void rf_dense_free(rf_dense *d);
size_t rf_dense_rows(const rf_dense *d);
int rf_dense_arity(const rf_dense *d);
size_t rf_dense_bytes(const rf_dense *d);
/* Adds t's rows (sorted: t is sorted, which lets threads skip atomics).
 * False, with d unchanged, if a row lies outside d's ranges. */
bool rf_dense_insert(rf_dense *d, const rf_table *t, bool sorted);
/* The same; in_range: the caller knows every row lies in d's ranges (d was
 * laid out for t), which skips the checking pass. */
bool rf_dense_insert_ex(rf_dense *d, const rf_table *t, bool sorted, bool in_range);
/* out := d's rows, sorted, duplicate-free; out is initialised here. */
void rf_dense_to_table(const rf_dense *d, rf_table *out);
/* out := a − d, a sorted (so out is); out is initialised here. */
void rf_dense_difference(const rf_table *a, const rf_dense *d, rf_table *out);
/* The same into out, an initialised table (of a's arity, else remade)
 * whose storage is reused (and, when small, not shrunk). */
void rf_dense_difference_into(const rf_table *a, const rf_dense *d, rf_table *out);
bool rf_dense_contains(const rf_dense *d, const rf_word *row);
/* Removes t's rows from d (rows outside its ranges or absent are
 * ignored); one probe a row, serial: meant for a few rows (the CPU
 * backend's undo of a bitmap lent to a UNION's output). */
void rf_dense_erase(rf_dense *d, const rf_table *t);
/* The bitmap's words (bit i of word w = packed row 64 w + i). */
uint64_t *rf_dense_words(rf_dense *d);

/* The matching key groups of the join of sorted l and r on their first
 * nkeys columns, found by one serial search walk (for a side of a few rows
 * against a big one: rf_prim_join_by_groups), so that a small join is counted and
 * written without searching twice. Group q covers rows at[4q]..at[4q+1]
 * of l and at[4q+2]..at[4q+3] of r; rows is the join's row count. */
#define RF_JOIN_GROUPS_LOCAL 16
typedef struct rf_join_groups {
    size_t rows;                             /* sum of the groups' products */
    size_t n, cap;                           /* groups found, room for them */
    size_t *heap;                            /* NULL while local holds them */
    size_t local[4 * RF_JOIN_GROUPS_LOCAL];
} rf_join_groups;
void rf_prim_join_groups(const rf_table *l, const rf_table *r, int nkeys, rf_join_groups *g);
/* out := the join's rows from its groups, projected to columns projcol[]
 * of l ++ r, in the order rf_prim_join gives them (groups in key order,
 * each left row with each right row). out is an initialised table: its
 * storage is reused when it has nproj columns (else it is remade). */
void rf_prim_join_groups_write(const rf_table *l, const rf_table *r, const rf_join_groups *g, int nproj,
                               const int *projcol, rf_table *out);
void rf_join_groups_free(rf_join_groups *g);
/* Whether the join of l and r is the case rf_prim_join_groups is for: a
 * side of at most RF_JOIN_GROUPS_LOCAL rows (a semi-naive delta of a few
 * rows) and work for one thread. Bigger sides count in one walk and join
 * in another, which costs less than recording many groups. */
bool rf_prim_join_by_groups(const rf_table *l, const rf_table *r, int nkeys);

/* Rows of the join of sorted l and r on their first nkeys columns (before
 * any filter). */
size_t rf_prim_join_count(const rf_table *l, const rf_table *r, int nkeys);
/* out := SORT(JOIN(l, r)) for a join with no filter whose projections are
 * the columns projcol[] of l ++ r and which gives join_rows rows
 * (rf_prim_join_count), computed through a bitmap without materialising the
 * join, when the output columns' ranges are dense enough for that. Returns
 * false, doing nothing, otherwise. out is initialised when true. */
bool rf_prim_join_sort_dense(const rf_table *l, const rf_table *r, int nkeys, int nproj,
                             const int *projcol, size_t join_rows, rf_table *out);

/* The worst-case-optimal multiway join (RF_K_MULTIJOIN, lftj.c): input i
 * (sorted) has columns binding variables in_vars[in_first[i] ..
 * in_first[i+1]), strictly increasing; out := proj(b) for every binding b
 * of the nvars variables that every input holds, where filter(b) (code
 * columns are variables). Unsorted, without duplicate bindings; the order
 * does not depend on the thread count. */
bool rf_prim_multijoin(int nin, const rf_table *const *ins, const int *in_first, const int *in_vars, int nvars,
                       const rf_code *filter, int nproj, const rf_code *proj, rf_table *out, rf_status *st);
/* The number of bindings of the same join (no filter), none stored. */
size_t rf_prim_multijoin_count(int nin, const rf_table *const *ins, const int *in_first, const int *in_vars,
                               int nvars);

/* A multiway join's second variable order (hir.h, alt_order; ordercost.c):
 * the estimated work of an order's last level, a triangle (rf_mj_last):
 * the sum over rows (a, b) of `pairs` of min(rows of list_p whose column
 * list_p_col is a, rows of list_q whose column list_q_col is b), taken
 * over RF_ORDER_SAMPLES rows of pairs (rf_order_sample_row) and scaled to
 * all of them; exact where pairs has no more rows. Every table is sorted
 * (column 0 ascending), as a multiway join's inputs are: a list on column
 * 0 is searched, any other scanned. The GPU backend's
 * estimate (rf_cuda_order_cost) samples the same rows and counts exactly,
 * so it is the same number. */
#define RF_ORDER_SAMPLES 4096
double rf_prim_order_cost(const rf_table *pairs, int pairs_p, int pairs_q, const rf_table *list_p, int list_p_col,
                          const rf_table *list_q, int list_q_col);
uint64_t rf_order_sample_rows(uint64_t nrows);                        /* min(nrows, RF_ORDER_SAMPLES) */
uint64_t rf_order_sample_row(uint64_t i, uint64_t m, uint64_t nrows); /* floor(i x nrows / m) */
double rf_order_cost_scaled(uint64_t sampled_sum, uint64_t m, uint64_t nrows);
/* Whether the second order runs: its estimate under RF_ORDER_MARGIN times
 * the planned order's (the margin pays for re-keying every input for it,
 * which the planned order's inputs already are). RF_WCOJ_ORDER=planned or
 * alt forces either (tests); RF_WCOJ_ORDER_MARGIN (>= 0) sets the margin. */
#define RF_ORDER_MARGIN 0.75
double rf_order_margin(void);
bool rf_order_take_alt(double planned, double alt);
/* RF_WCOJ_ORDER_TRACE=1: a line on stderr with both estimates and the choice. */
void rf_order_trace(const char *join, double planned, double alt, bool take_alt);
/* Both orders' estimates over host tables (false: an order's last level
 * is no triangle, so there is nothing to compare). */
bool rf_prim_order_estimates(int nin, const rf_table *const *ins, const int *in_first, const int *in_vars, int nvars,
                             const int *alt_order, double *planned, double *alt);
/* A join's layout and code in its second order, for any backend: each
 * input's columns permuted (col_perm, as rf_mj_reorder), in_vars and the
 * code's column reads renumbered. */
typedef struct rf_mj_recode {
    int col_perm[RF_MULTIJOIN_MAX_IN * RF_MULTIJOIN_MAX_VARS];
    int in_vars[RF_MULTIJOIN_MAX_IN * RF_MULTIJOIN_MAX_VARS];
    rf_code filter;
    int nproj;
    rf_code *proj;
} rf_mj_recode;
void rf_mj_recode_make(rf_mj_recode *r, int nin, const int *in_first, const int *in_vars, int nvars,
                       const int *alt_order, const rf_code *filter, int nproj, const rf_code *proj);
void rf_mj_recode_free(rf_mj_recode *r);
/* Whether input i is re-keyed as an earlier input j (the same relation,
 * the same permutation: *j set) or not at all (the identity: *j = -1 and
 * true); false where it needs a copy of its own. */
bool rf_mj_recode_shared(const rf_mj_recode *r, const int *in_first, const void *const *ins, int i, int *j);
/* The same over host tables: the re-keyed tables (owned[i]: a copy of
 * input i's; else in[i] is an input or an earlier copy). */
typedef struct rf_mj_alt {
    int nin;
    rf_mj_recode rc;
    const rf_table *in[RF_MULTIJOIN_MAX_IN];
    rf_table tabs[RF_MULTIJOIN_MAX_IN];
    bool owned[RF_MULTIJOIN_MAX_IN];
} rf_mj_alt;
void rf_mj_alt_make(rf_mj_alt *r, int nin, const rf_table *const *ins, const int *in_first, const int *in_vars,
                    int nvars, const int *alt_order, const rf_code *filter, int nproj, const rf_code *proj);
void rf_mj_alt_free(rf_mj_alt *r);

/* The rows the equi-join of l and r on column pairs (lkeys[i], rkeys[i]),
 * i < nkeys, would make (nkeys = 0: the cross product), none made:
 * --join=auto's run-time statistic (joinsize.c). Saturates at UINT64_MAX. */
uint64_t rf_prim_join_size(const rf_table *l, const int *lkeys, const rf_table *r, const int *rkeys, int nkeys);

/* Evaluates code over rows [begin, end) of the given columns into dst
 * (vectorised interpreter shared by map and join). */
bool rf_code_eval_batch(const rf_code *c, rf_word *const *cols, size_t begin, size_t end,
                        rf_word *dst, rf_status *st);

#endif
