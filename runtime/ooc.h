/* Out-of-core kernels (issue 10; thesis ch. 6, "boxing"): a kernel whose
 * own inputs and output do not fit the device runs in parts. A part is the
 * kernel over the rows of some of its inputs whose value in one column lies
 * in a key range, and the rest of its inputs whole; the column is chosen so
 * that every row the kernel makes has that value as its first column. So
 * the parts' outputs are disjoint, and their concatenation in increasing
 * range order is the whole output, sorted where the whole one would be
 * (by the layout invariant, unsorted outputs are sets whose order no
 * reader sees). The runtime (runtime.c, run_in_parts) moves the parts;
 * this module decides whether and how a kernel splits, and cuts host
 * tables into the parts' rows. */
#ifndef RF_OOC_H
#define RF_OOC_H

#include "../common/rf_table.h"
#include "../harmony_ir/hir.h"

/* How k splits, by its input positions as the backend sees them (a
 * plain kernel: in[0], in[1]; a FUSED group: fused->in; a MULTIJOIN:
 * mj->in): var[i] the variable at position i (-1: none), col[i] the column
 * that bounds its rows in a part, or -1 when every part reads all of it.
 * In a FUSED group a variable is read the same way at every position
 * (its members read it by name); a plain kernel or a MULTIJOIN may read
 * one variable bounded at one position and whole at another (a join of a
 * relation with itself). */
typedef struct rf_ooc_split {
    int npos;
    int var[RF_KERNEL_VARS_MAX];
    int col[RF_KERNEL_VARS_MAX];
} rf_ooc_split;

/* Whether k (one output; a plain kernel, a FUSED group or a MULTIJOIN)
 * runs in parts: its output's first column must be a column of some input
 * read through projections, joins, sorts and set operations, each output
 * row made from rows carrying that same value; no code may read row
 * positions (RF_EX_ROWID: they would restart in every part). False with a
 * reason in *why otherwise. */
bool rf_ooc_split_of(const rf_hprogram *p, const rf_kernel *k, rf_ooc_split *s, const char **why);

/* A key range of one part: values lo..hi, both included (unsigned word
 * order, the order of sorted variables). */
typedef struct rf_ooc_range {
    rf_word lo, hi;
} rf_ooc_range;

/* Cuts r into at most n (>= 1) consecutive ranges holding about equal
 * numbers of t's rows, judged by an evenly spaced sample of column col of
 * the rows of t that lie in r (t may hold rows outside it). Returns how
 * many (1 when the sample has one value in r). */
int rf_ooc_ranges(const rf_table *t, int col, rf_ooc_range r, int n, rf_ooc_range *out);

/* The rows of t whose column col lies in ranges[i], for every i < n, into
 * parts[i] (initialised here, t's arity; rows keep their order). Where
 * sorted_by_col (col 0 of a sorted variable) the parts are views into t's
 * columns: *views set, and the caller must not free them (rf_ooc_parts_free
 * knows). Otherwise copies, made in one pass over t on the worker pool (in
 * the host pool where pooled: rf_table_reserve_pooled). n < 65535. */
void rf_ooc_cut(const rf_table *t, int col, bool sorted_by_col, const rf_ooc_range *ranges, int n, bool pooled,
                rf_table *parts, bool *views);
void rf_ooc_parts_free(rf_table *parts, int n, bool views);

/* RF_TEST_HOST_POOL=1: a host pool for the CPU backend's tests, so that
 * the pooled tables' paths (rf_table_reserve_pooled) run without a GPU:
 * its columns are heap blocks offset by 64 bytes, so one freed or
 * reallocated by the heap instead of the pool aborts (ASan names it).
 * Installed once a process; no other pool may be. */
void rf_ooc_test_pool_install(void);
/* Columns the test pool holds now. */
size_t rf_ooc_test_pool_live(void);

#endif
