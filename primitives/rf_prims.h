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
int rf_prims_threads(void);

/* out := { proj(t) | t in in, filter(t) } (unsorted). */
bool rf_prim_map(const rf_table *in, const rf_code *filter, int nproj,
                 const rf_code *proj, rf_table *out, rf_status *st);
/* out := in's rows sorted lexicographically (unsigned words), duplicates
 * dropped; out is initialised here. */
void rf_prim_sort(const rf_table *in, rf_table *out);
/* The same, in place. */
void rf_prim_sort_unique(rf_table *t);
/* in0, in1 sorted; join on first nkeys cols; out := proj(l++r) if filter. */
bool rf_prim_join(const rf_table *l, const rf_table *r, int nkeys,
                  const rf_code *filter, int nproj, const rf_code *proj,
                  rf_table *out, rf_status *st);
void rf_prim_antijoin(const rf_table *l, const rf_table *r, int nkeys, rf_table *out);
void rf_prim_union(const rf_table *a, const rf_table *b, rf_table *out);
void rf_prim_difference(const rf_table *a, const rf_table *b, rf_table *out);
/* in sorted; group on first nkeys columns. */
bool rf_prim_aggregate(const rf_table *in, int nkeys, rf_aggfn fn, rf_type result_type,
                       const rf_code *arg, rf_table *out, rf_status *st);

/* Evaluates code over rows [begin, end) of the given columns into dst
 * (vectorised interpreter shared by map and join). */
bool rf_code_eval_batch(const rf_code *c, rf_word *const *cols, size_t begin, size_t end,
                        rf_word *dst, rf_status *st);

#endif
