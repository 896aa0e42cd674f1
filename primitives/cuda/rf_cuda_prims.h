/* The GPU operator library: the relational primitives of rf_prims.h on
 * device-resident columnar relations. Plain C interface; CUDA, CUB and NVRTC
 * stay behind it. Every function returns false and fills st on a fault:
 * a CUDA error, device out-of-memory (RF_EXIT_OUT_OF_MEMORY, naming the
 * relation `what` and the size), or a run-time error of compute code
 * (division by zero, ...; the same messages as rf_scalar_binary/unary).
 *
 * Semantics mirror primitives/rf_prims.h exactly: words compare as unsigned
 * 64-bit integers, sorted relations are lexicographic and duplicate-free,
 * compute code follows rf_expr.h bit for bit (strings compare by text through
 * a rank table, see rf_cuda_set_string_ranks). All work runs in order on the
 * context's one stream; results are whole when a function returns true. */
#ifndef RF_CUDA_PRIMS_H
#define RF_CUDA_PRIMS_H

#include <stdio.h>

#include "../../common/rf_table.h"
#include "../../harmony_ir/hir.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Widest relation the GPU kernels take (column pointers travel as kernel
 * parameters: 64 of them are 512 bytes, far below the parameter limit) and
 * deepest compute-code stack of the interpreter. 64 columns because
 * aggregation rules keep every body variable (bag semantics): TPC-H's Q7
 * and Q8 join relations 38 columns wide. */
#define RF_CUDA_MAX_COLS 64
#define RF_CUDA_MAX_STACK 32

typedef struct rf_cuda_ctx rf_cuda_ctx;

/* A relation in device memory: column c is data + c*cap (one allocation).
 * Arity 0: nrows is 0 or 1 and data stays NULL. */
typedef struct rf_drel {
    int arity;
    size_t nrows;
    size_t cap;
    rf_word *data;
} rf_drel;

/* Number of usable CUDA devices; 0 when there is none or no driver. */
int rf_cuda_device_count(void);
/* The PCI bus id of device `device` ("0000:1b:00.0", lower case) into
 * buf; false when there is none. */
bool rf_cuda_pci_bus_id(int device, char *buf, size_t len);
/* Context on device `device`: a stream, the memory pool, scratch space. */
rf_cuda_ctx *rf_cuda_ctx_new(int device, rf_status *st);
/* The most device memory the pool's prime at start-up (prims.c) takes in
 * contexts made after this call: a process given a device memory budget
 * (--device-memory) reserves no more than that; SIZE_MAX: no cap. */
void rf_cuda_set_prime_cap(size_t bytes);
void rf_cuda_ctx_free(rf_cuda_ctx *c);
/* The code of the kernels a program will launch that the start-up
 * rehearsal does not run, loaded on a thread of their own while the
 * program loads its inputs (lazy module loading would load each at its
 * first launch, ~0.1 ms inside the query's time): RF_CUDA_LOAD_MULTIJOIN,
 * the multiway join's; RF_CUDA_LOAD_JOIN_SIZE, --join=auto's statistic's
 * and the variable order estimate's.
 * Once a context; RF_CUDA_LOAD_AHEAD=off: not at all. */
enum { RF_CUDA_LOAD_MULTIJOIN = 1, RF_CUDA_LOAD_JOIN_SIZE = 2 };
void rf_cuda_load_ahead(rf_cuda_ctx *c, unsigned what);
const char *rf_cuda_device_name(const rf_cuda_ctx *c);
/* Bytes of device memory held by live relations and scratch, and the peak. */
size_t rf_cuda_bytes_in_use(const rf_cuda_ctx *c);
size_t rf_cuda_bytes_peak(const rf_cuda_ctx *c);
/* Device-event timer around a region of stream work (milliseconds). */
bool rf_cuda_timer_start(rf_cuda_ctx *c, rf_status *st);
bool rf_cuda_timer_stop(rf_cuda_ctx *c, double *seconds, rf_status *st);
/* Host<->device traffic (host-clock seconds from queueing the copy to its
 * completion), pool allocations and host waits of one context. */
typedef struct rf_cuda_io_stats {
    size_t upload_bytes, download_bytes;
    double upload_seconds, download_seconds;
    size_t pinned_up_bytes, pinned_down_bytes;   /* of those, straight from and into pinned tables */
    double copies_wait_seconds;                  /* the host waiting for copies started ahead */
    size_t allocs, syncs;
    double init_seconds;       /* context creation (driver, pool, buffers) */
} rf_cuda_io_stats;
void rf_cuda_get_io_stats(const rf_cuda_ctx *c, rf_cuda_io_stats *out);
/* The two floors of the benchmarks: device-to-device copy bandwidth (GB/s,
 * bytes read + written) over `bytes`-sized buffers, and the radix-sort rate
 * of the library's sort (64-bit keys, all bits, keys/s) over n keys. */
bool rf_cuda_measure_floors(rf_cuda_ctx *c, size_t bytes, size_t n, double *copy_gbs,
                            double *sort_keys_per_s, rf_status *st);
/* Host<->device bandwidth through pinned memory (GB/s), in chunks as the
 * downloads use them: the floor of moving an answer to the host. */
bool rf_cuda_measure_pcie(rf_cuda_ctx *c, size_t bytes, double *d2h_gbs, double *h2d_gbs, rf_status *st);
/* What moving a two-column table of `bytes` between host and device costs
 * by each path an out-of-core part could take (GB/s, best of 3): the
 * staged copies of rf_drel_upload / rf_drel_download_at from and into
 * pageable memory (faulted in, and fresh), one copy a column from and into
 * pinned memory, and pinning itself: cudaHostRegister (with its
 * unregister) of faulted pageable memory and cudaHostAlloc (with its
 * free); and the library's own upload and download of a table made in the
 * pinned arena. For bench/gpu_floors.c --moves. */
typedef struct rf_move_rates {
    double staged_up, staged_down, staged_down_fresh, pinned_up, pinned_down, host_register, host_alloc;
    double arena_up, arena_down;   /* rf_drel_upload / _download_at of a table in the arena (0: none) */
} rf_move_rates;
bool rf_cuda_measure_moves(rf_cuda_ctx *c, size_t bytes, rf_move_rates *m, rf_status *st);
/* The pinned host arena (host_arena.c): started with the first context
 * (unless RF_CUDA_PINNED_MAX is 0), it holds tables made with
 * rf_table_reserve_pooled, which cross the bus without staging. Whether
 * [p, p + bytes) lies in it; the bytes it has pinned. */
void rf_cuda_host_arena_start(void);
bool rf_cuda_host_pinned(const void *p, size_t bytes);
size_t rf_cuda_host_pinned_bytes(void);
/* Tests: the arena started without a device, its regions mapped but not
 * registered (its extents' logic only), pinning at most limit bytes in
 * columns of min_column bytes or more; a no-op once the arena started. */
void rf_cuda_host_arena_test_start(size_t limit, size_t min_column);
/* Waits for all queued work. */
bool rf_cuda_sync(rf_cuda_ctx *c, rf_status *st);

/* Device memory from the pool (stream-ordered, cached between uses).
 * `what` names the owner in the out-of-memory message. */
void *rf_cuda_alloc(rf_cuda_ctx *c, size_t bytes, const char *what, rf_status *st);
void rf_cuda_free(rf_cuda_ctx *c, void *p, size_t bytes);

/* ---- Relations ---- */
void rf_drel_init(rf_drel *r, int arity);
/* Makes room for `rows` rows; contents are lost when it reallocates. */
bool rf_drel_alloc(rf_cuda_ctx *c, rf_drel *r, size_t rows, const char *what, rf_status *st);
void rf_drel_free(rf_cuda_ctx *c, rf_drel *r);
/* dst takes src's storage; src becomes empty. */
void rf_drel_move(rf_cuda_ctx *c, rf_drel *dst, rf_drel *src);
bool rf_drel_copy(rf_cuda_ctx *c, rf_drel *dst, const rf_drel *src, const char *what, rf_status *st);
bool rf_drel_upload(rf_cuda_ctx *c, rf_drel *r, const rf_table *t, const char *what, rf_status *st);
/* t must be initialised with r's arity. */
bool rf_drel_download(rf_cuda_ctx *c, const rf_drel *r, rf_table *t, rf_status *st);
/* r's rows into rows [at, at + r->nrows) of t (same arity, room for them:
 * t->cap; t->nrows is the caller's), for a table downloaded in pieces. */
bool rf_drel_download_at(rf_cuda_ctx *c, const rf_drel *r, rf_table *t, size_t at, rf_status *st);
/* Copies that run beside the kernels (double buffering of out-of-core
 * parts): where t's columns are pinned (the arena), each starts the copy
 * on a copy stream of its direction, after the work queued on the
 * context's stream so far, and returns at once with *done, the mark of its
 * end (else *done stays NULL: the caller copies as before). The upload's
 * rows are r's; nothing on the stream waits for them until
 * rf_cuda_wait_done(c, done); t stays untouched until then. The
 * download's rows are in t's [at, at + r->nrows) once rf_cuda_copies_wait
 * returns; r's storage is freed only after its copy finished
 * (rf_cuda_done_finished) or rf_cuda_wait_done(c, done). */
typedef struct rf_cuda_done rf_cuda_done;
bool rf_drel_upload_ahead(rf_cuda_ctx *c, rf_drel *r, const rf_table *t, const char *what, rf_cuda_done **done,
                          rf_status *st);
bool rf_drel_download_at_ahead(rf_cuda_ctx *c, const rf_drel *r, rf_table *t, size_t at, rf_cuda_done **done,
                               rf_status *st);
/* Work queued on the context's stream from now on waits for done, which is
 * released (NULL: nothing). */
void rf_cuda_wait_done(rf_cuda_ctx *c, rf_cuda_done *done);
/* Whether done's copy has finished (block: the host waits for it first);
 * then release it. */
bool rf_cuda_done_finished(rf_cuda_done *done, bool block);
void rf_cuda_done_release(rf_cuda_done *done);
/* The host waits for every copy started ahead (the first error, if any). */
bool rf_cuda_copies_wait(rf_cuda_ctx *c, rf_status *st);
/* row[0..arity) := row i of r (one host wait; for a few rows, such as the
 * bounds of a binary search). */
bool rf_drel_read_row(rf_cuda_ctx *c, const rf_drel *r, size_t i, uint64_t *row, rf_status *st);
size_t rf_drel_bytes(const rf_drel *r);
/* True when every value of column col has the same top bit (false also on
 * a CUDA error, which only costs the caller a host scan). */
bool rf_drel_column_sign_uniform(rf_cuda_ctx *c, const rf_drel *r, int col);
/* Column k of r += add[k] (wrapping; add[k] == 0 leaves it), in place, on
 * the context's stream (no host wait). */
bool rf_drel_add_to_columns(rf_cuda_ctx *c, rf_drel *r, const uint64_t *add, rf_status *st);

/* String order for typed comparisons and min/max on strings: rank[id] is the
 * position of string `id` in bytewise text order (the caller computes it
 * from the dictionary; ids >= n compare by id). */
bool rf_cuda_set_string_ranks(rf_cuda_ctx *c, const uint32_t *rank, size_t n, rf_status *st);
/* Number of ranks uploaded so far (the caller refreshes when it grew). */
size_t rf_cuda_string_ranks(const rf_cuda_ctx *c);
/* Ranks of the whole dictionary, rebuilt (sorted on the host, uploaded)
 * only when the dictionary grew since the last upload. */
bool rf_cuda_update_string_ranks(rf_cuda_ctx *c, rf_status *st);

/* ---- String functions ----
 * substr, strlen, concat, like, starts_with, ends_with and contains need
 * the host's string dictionary. Where such a function's subexpression has
 * one string column as its only non-constant input, MAP, JOIN and AGG
 * tabulate it on the host per launch (over the ids the column holds) and
 * look it up on the device; otherwise MAP and JOIN run on the host (the CPU
 * library: download, rf_prim_map / rf_prim_join, upload), as does a kernel
 * whose tabulation faults (the rows may never reach the faulting id), and
 * AGG fails with a message. */
/* Whether code runs on the device: every string function in a tabulable
 * subexpression. */
bool rf_cuda_code_on_device(const rf_code *c);
/* MAP/JOIN kernels run on the host so far. */
size_t rf_cuda_host_kernels(const rf_cuda_ctx *c);
/* String tables built so far and their entries (distinct ids tabulated). */
void rf_cuda_string_table_stats(const rf_cuda_ctx *c, size_t *tables, size_t *entries);

/* ---- Primitives (out is replaced; it must alias no input) ---- */
bool rf_cuda_map(rf_cuda_ctx *c, const rf_drel *in, const rf_code *filter, int nproj,
                 const rf_code *proj, rf_drel *out, const char *what, rf_status *st);
/* out := in sorted lexicographically (unsigned words), duplicates removed.
 * out may be in (in place). */
bool rf_cuda_sort_unique(rf_cuda_ctx *c, const rf_drel *in, rf_drel *out, const char *what,
                         rf_status *st);
/* l, r sorted; rows equal on their first nkeys columns (0: cross product);
 * out := proj(l ++ r) where filter(l ++ r); unsorted. */
/* The rows the equi-join of l and r on column pairs (lkeys[i], rkeys[i]),
 * i < nkeys, would make, none made (rf_prim_join_size is the reference;
 * joinsize.c, joinsize.cu): --join=auto's run-time statistic. */
bool rf_cuda_join_size(rf_cuda_ctx *c, const rf_drel *l, const int *lkeys, const rf_drel *r, const int *rkeys,
                       int nkeys, uint64_t *rows, rf_status *st);
/* Multiway joins' last levels estimated for variable orders (hir.h,
 * alt_order): costs[k] := rf_prim_order_cost of query k (the reference:
 * the same number from the same rows), n <= RF_ORDER_QUERIES_MAX, with one
 * wait for the host. Every input is sorted (its column 0 ascending), as a
 * multiway join's are. */
typedef struct rf_order_query {
    const rf_drel *pairs;
    int pairs_p, pairs_q;
    const rf_drel *list_p;
    int list_p_col;
    const rf_drel *list_q;
    int list_q_col;
} rf_order_query;
#define RF_ORDER_QUERIES_MAX 4
bool rf_cuda_order_costs(rf_cuda_ctx *c, int n, const rf_order_query *q, double *costs, rf_status *st);

/* The worst-case-optimal multiway join (RF_K_MULTIJOIN; rf_prim_multijoin
 * is the reference): breadth-first leapfrog triejoin (multijoin.c,
 * multijoin.cu). Same rows as the CPU primitive, possibly in another
 * order (the output is unsorted). */
bool rf_cuda_multijoin(rf_cuda_ctx *c, int nin, const rf_drel *const *ins, const int *in_first, const int *in_vars,
                       int nvars, const rf_code *filter, int nproj, const rf_code *proj, rf_drel *out,
                       const char *what, rf_status *st);
/* The number of bindings of the same join (no filter), none written: the
 * last level is counted, not written (RF_K_MULTIJOIN's count). */
bool rf_cuda_multijoin_count(rf_cuda_ctx *c, int nin, const rf_drel *const *ins, const int *in_first,
                             const int *in_vars, int nvars, uint64_t *counted, const char *what, rf_status *st);
bool rf_cuda_join(rf_cuda_ctx *c, const rf_drel *l, const rf_drel *r, int nkeys,
                  const rf_code *filter, int nproj, const rf_code *proj, rf_drel *out,
                  const char *what, rf_status *st);
/* Join algorithm for rf_cuda_join: 0 by size (the default; the rule is at
 * rf_cuda_join in prims.c), 1 merge (binary search), 2 hash (table on r).
 * The environment variable RF_CUDA_JOIN=merge|hash sets it at creation. */
void rf_cuda_set_join_mode(rf_cuda_ctx *c, int mode);
/* How many joins with keys ran each way on c. */
void rf_cuda_join_counts(const rf_cuda_ctx *c, size_t *merge, size_t *hash);
/* The rows of one side (side 0: l, 1: r) that have a key match on the
 * other side for which filter (over l's columns then r's) holds, each
 * once, in that side's order: the set gather of a JOIN whose rows are
 * that side's rows whole (l sorted for side 0; r is always). No string
 * functions in filter. */
bool rf_cuda_semijoin(rf_cuda_ctx *c, const rf_drel *l, const rf_drel *r, int nkeys, const rf_code *filter,
                      int side, rf_drel *out, const char *what, rf_status *st);
/* l, r sorted; rows of l whose first nkeys columns match no row of r. */
bool rf_cuda_antijoin(rf_cuda_ctx *c, const rf_drel *l, const rf_drel *r, int nkeys,
                      rf_drel *out, const char *what, rf_status *st);
bool rf_cuda_union(rf_cuda_ctx *c, const rf_drel *a, const rf_drel *b, rf_drel *out,
                   const char *what, rf_status *st);
bool rf_cuda_difference(rf_cuda_ctx *c, const rf_drel *a, const rf_drel *b, rf_drel *out,
                        const char *what, rf_status *st);
/* a minus the union of runs (sorted, deduplicated, of a's arity): one pass
 * over a per nonempty run, one compaction. */
bool rf_cuda_difference_runs(rf_cuda_ctx *c, const rf_drel *a, const rf_drel *const *runs, int nruns,
                             rf_drel *out, const char *what, rf_status *st);
/* in sorted; groups of equal first nkeys columns; out row := keys ++ one
 * column per aggregate: fns[j] of args[j] (count: int64, args[j] absent),
 * result type result_types[j]; the semantics of rf_prim_aggregate_multi
 * (hir.h, RF_K_AGG). nkeys = 0 and empty input: one row of zeros when
 * every aggregate is count or count_distinct, else nothing. Sums of
 * float64 add in row order (bit-identical to a sequential host sum), avg
 * follows rf_agg_ops.h. */
bool rf_cuda_aggregate_multi(rf_cuda_ctx *c, const rf_drel *in, int nkeys, int naggs, const rf_aggfn *fns,
                             const rf_type *result_types, const rf_code *args, rf_drel *out,
                             const char *what, rf_status *st);
/* The same over an unsorted input holding no duplicate row, by hashing the
 * keys (Kernel Weaver's reducing gather): only count, and total / avg /
 * min / max of integer, date or decimal values. *done = false (and true
 * returned) when it does not apply, or when the groups would not fit its
 * table: the caller then sorts and runs rf_cuda_aggregate_multi. A false
 * return is a failure (a fault, out of memory) with st set. */
bool rf_cuda_aggregate_hash(rf_cuda_ctx *c, const rf_drel *in, int nkeys, int naggs, const rf_aggfn *fns,
                            const rf_type *result_types, const rf_code *args, rf_drel *out, bool *done,
                            const char *what, rf_status *st);
/* A MAP of l (r NULL) or a JOIN of l and r on join_keys as one generated
 * kernel (NVRTC) that makes each row (candidate pair) once and writes the
 * kept rows in order: the same relation as the library's filter, scan and
 * emit kernels. rf_cuda_map and rf_cuda_join run it when code generation
 * is on (rf_cuda_set_codegen: RF_CUDA_CODEGEN=1, and every Kernel Weaver
 * group's composed chain). *done = false (true returned) when it does not
 * apply (no NVRTC, a MAP that only copies columns, string functions the
 * device cannot run). A false return is a failure with st set. */
bool rf_cuda_select_one_pass(rf_cuda_ctx *c, const rf_drel *l, const rf_drel *r, int join_keys,
                             const rf_code *filter, int nproj, const rf_code *proj, rf_drel *out, bool *done,
                             const char *what, rf_status *st);
size_t rf_cuda_select_passes(const rf_cuda_ctx *c);
/* Sorts of two columns that found their rows in order already (copied)
 * and in the order of their second column then first (sorted by the first
 * alone): rf_cuda_sort_unique; unions merged by tiles (rf_cuda_union). */
void rf_cuda_sort_order_stats(const rf_cuda_ctx *c, size_t *in_order, size_t *by_first, size_t *merge_unions);
/* The select plans the generated kernels applied (docs/weaver.md s. 5): a
 * filter of 2 or more conjuncts is evaluated in the order and grouping the
 * planner chose from a sample of its input (or RF_WEAVE_SELPLAN forced),
 * one line per output and plan, for --stats. */
void rf_cuda_print_select_plans(const rf_cuda_ctx *c, FILE *f);
/* nb (2..4) MAPs of one input in one generated pass (Kernel Weaver's group
 * of several outputs: the input read once): outs[x] the relation MAP x
 * makes alone. *done as rf_cuda_select_one_pass. */
bool rf_cuda_select_many(rf_cuda_ctx *c, const rf_drel *in, int nb, const rf_code *const *filters,
                         const int *nprojs, const rf_code *const *projs, rf_drel *const *outs, bool *done,
                         const char *what, rf_status *st);
/* Kernel Weaver's reducing gather as one generated kernel (NVRTC): a MAP
 * of l (r NULL) or a JOIN of l and r on join_keys, with filter and
 * projections proj (the group keys are the first nkeys), folded into the
 * groups' aggregates in one pass, no rows written. args[j] is aggregate j's
 * argument over the MAP's or JOIN's input row (not over the projections:
 * weaver's rf_fused_compose_arg rewrites it), unused for a count. The same
 * answer as the kernels run one by one; *done = false (true returned) when
 * it does not apply (no code generation, an aggregate it cannot fold
 * exactly, too many groups for its table): the caller runs its other path;
 * *many_groups tells it which of the reasons was the groups (a sample of
 * the rows held more than hashing pays for, or the table overflowed), so
 * that it sorts them rather than hash them again. A false return is a
 * failure (a fault, out of memory) with st set. */
bool rf_cuda_fused_reduce(rf_cuda_ctx *c, const rf_drel *l, const rf_drel *r, int join_keys, const rf_code *filter,
                          int nproj, const rf_code *proj, int nkeys, int naggs, const rf_aggfn *fns,
                          const rf_type *result_types, const rf_code *args, rf_drel *out, bool *done,
                          bool *many_groups, const char *what, rf_status *st);
/* The same with one aggregate. */
bool rf_cuda_aggregate(rf_cuda_ctx *c, const rf_drel *in, int nkeys, rf_aggfn fn,
                       rf_type result_type, const rf_code *arg, rf_drel *out,
                       const char *what, rf_status *st);

/* ---- Dense sets (dense_set.c) ----
 * A sorted, duplicate-free relation held as a bitmap over its packed rows:
 * column j's value v maps to the offset v - lo[j] < 2^bits[j], the offsets
 * concatenate (column 0 in the high bits) into a key of total_bits bits,
 * and the set holds bit `key`. Bit order is row order. The semi-naive
 * steps against the full relation, new - full and full + delta, become a
 * probe per new row and a bit set per delta row (plus a copy of the
 * bitmap), instead of merges that read and write all of full every
 * iteration. */
#define RF_DSET_MAX_BITS 32
typedef struct rf_dset {
    int arity;
    int total_bits;
    int bits[RF_CUDA_MAX_COLS];
    uint64_t lo[RF_CUDA_MAX_COLS];
    uint64_t *words;           /* device: max(1, 2^total_bits / 64) words */
    size_t nwords;
    size_t nrows;              /* bits set */
} rf_dset;
void rf_dset_init(rf_dset *s);
void rf_dset_free(rf_cuda_ctx *c, rf_dset *s);
/* The frame of a set holding the rows of a and of b (b may be NULL):
 * per column the value range, anchored at 0 when that costs no bit.
 * *fits is false when it would take more than max_bits bits. */
bool rf_dset_plan(rf_cuda_ctx *c, const rf_drel *a, const rf_drel *b, int max_bits, rf_dset *s,
                  bool *fits, rf_status *st);
size_t rf_dset_bytes(const rf_dset *s);
/* The frame of a set holding the rows of every relation in rels (a
 * relation held as sorted runs) and, when cover is given, every row of
 * cover's frame too (so that a set planned in cover's frame compares with
 * it word by word). */
bool rf_dset_plan_runs(rf_cuda_ctx *c, const rf_drel *const *rels, int n, const rf_dset *cover, int max_bits,
                       rf_dset *s, bool *fits, rf_status *st);
/* s (planned) := the rows of every relation in rels; they must lie in the frame. */
bool rf_dset_build_runs(rf_cuda_ctx *c, const rf_drel *const *rels, int n, rf_dset *s, const char *what,
                        rf_status *st);
/* s (planned) := the rows of r; r's rows must lie in the frame. */
bool rf_dset_build(rf_cuda_ctx *c, const rf_drel *r, rf_dset *s, const char *what, rf_status *st);
/* out := rows of a (sorted) not in s, sorted. */
bool rf_dset_difference(rf_cuda_ctx *c, const rf_drel *a, const rf_dset *s, rf_drel *out,
                        const char *what, rf_status *st);
/* out := s + rows of b, in s's frame. *fits is false (out untouched) when
 * a row of b lies outside the frame. */
bool rf_dset_union(rf_cuda_ctx *c, const rf_dset *s, const rf_drel *b, rf_dset *out, bool *fits,
                   const char *what, rf_status *st);
/* out := the rows of s, sorted. */
bool rf_dset_expand(rf_cuda_ctx *c, const rf_dset *s, rf_drel *out, const char *what, rf_status *st);
/* out := the rows of s with output column p = column src[p] of s, in
 * s's order (the MAP of a set by a column projection, in one pass). */
bool rf_dset_expand_proj(rf_cuda_ctx *c, const rf_dset *s, int nproj, const int *src, rf_drel *out,
                         const char *what, rf_status *st);
/* Same arity, bits and origins: bit i means the same row in both. */
bool rf_dset_same_frame(const rf_dset *a, const rf_dset *b);
/* out := rows of a not in b (same frame), sorted: one pass over both
 * bitmaps, no third one. */
bool rf_dset_difference_sets(rf_cuda_ctx *c, const rf_dset *a, const rf_dset *b, rf_drel *out, const char *what,
                             rf_status *st);
/* s's bitmap ORed with n others of its frame, each s->nwords words, one
 * after the other in `words` (device memory: the parts of a relation
 * gathered from other ranks); s->nrows recounted. */
bool rf_dset_or_words(rf_cuda_ctx *c, rf_dset *s, const uint64_t *words, int n, rf_status *st);
/* out := a copy of s. */
bool rf_dset_copy(rf_cuda_ctx *c, const rf_dset *s, rf_dset *out, const char *what, rf_status *st);
/* The frame of the set that a join's output would fill (rf_cuda_join_to_set):
 * output column p is column src[p] of (l ++ r), and gets that input
 * column's value range. When `hint` (a planned or built set, may be NULL)
 * has a frame that holds all those ranges, s gets hint's frame, so that the
 * join's set and hint's set compare word by word. *fits is false when the
 * frame would take more than max_bits bits (or an input is empty). */
bool rf_dset_plan_join(rf_cuda_ctx *c, const rf_drel *l, const rf_drel *r, int nproj, const int *src,
                       const rf_dset *hint, int max_bits, rf_dset *s, bool *fits, rf_status *st);

/* The same join, its output rows deduplicated into a dense set instead of
 * written out (the Kernel-Weaver-style fusion of JOIN with the SORT that
 * follows it: the pairs never reach memory, duplicates disappear as bits
 * are set). Output column p is column src[p] of (l ++ r) (projections must
 * be plain columns); s comes planned (rf_dset_plan_join) and gets its
 * bitmap and row count. */
bool rf_cuda_join_to_set(rf_cuda_ctx *c, const rf_drel *l, const rf_drel *r, int nkeys, const rf_code *filter,
                         const int *src, rf_dset *s, const char *what, rf_status *st);
/* ---- Moving rows between ranks (the distribution layer, ranksplit.c) ---- */
#define RF_CUDA_MAX_RANKS 64
/* r's rows regrouped by rank into packed (room for r->nrows * arity
 * words): the rank of a row is rf_dist_row_rank_cols's hash (runtime/
 * dist_backend.c) of its columns cols[0..nkeys) in that order (cols NULL:
 * its first nkeys) as words, so no column of them may hold strings; rank
 * d's rows, in r's order, make the section at packed + arity * (rows[0] +
 * ... + rows[d-1]), column c of it at c * rows[d] from there. rows: size
 * entries. size <= RF_CUDA_MAX_RANKS, arity >= 1. */
bool rf_cuda_rank_split(rf_cuda_ctx *c, const rf_drel *r, int nkeys, const int *cols, int size, uint64_t *packed,
                        size_t *rows, rf_status *st);
/* Rows of device memory: column c at data + c * stride. */
typedef struct rf_row_section {
    const uint64_t *data;
    size_t rows, stride;
} rf_row_section;
/* out (its arity set) := the n sections' rows, one after the other. */
bool rf_cuda_concat_sections(rf_cuda_ctx *c, int n, const rf_row_section *sec, rf_drel *out, const char *what,
                             rf_status *st);
/* packed (room for r->nrows * arity words) := r's rows, column c at
 * c * r->nrows. */
bool rf_cuda_pack_rows(rf_cuda_ctx *c, const rf_drel *r, uint64_t *packed, rf_status *st);
/* --count's fingerprint where the rows are: hashes[b] := the chain from
 * seed over the words of rows [b * block_rows, (b + 1) * block_rows) of r,
 * row by row, column by column (runtime.c, answer_hash), for b below
 * ceil(nrows / block_rows). */
bool rf_cuda_block_hashes(rf_cuda_ctx *c, const rf_drel *r, size_t block_rows, uint64_t seed, uint64_t *hashes,
                          rf_status *st);
/* ---- Run-time code generation (NVRTC) for compute stages ----
 * Off by default; rf_cuda_set_codegen(c, true) makes MAP and JOIN compute
 * stages run generated kernels (cached on disk by content hash in
 * $RF_CUDA_CACHE or ~/.cache/redfox), falling back to the interpreter when
 * NVRTC or the driver API is unavailable. */
void rf_cuda_set_codegen(rf_cuda_ctx *c, bool on);
/* With codegen on: a selection may run as one generated pass
 * (rf_cuda_select_one_pass) only when its module is loaded, or the time the
 * pass saves over the library's kernels pays for making it
 * (rf_codegen_pays); else *done stays false (the backend's lone selects). */
void rf_cuda_set_codegen_optional(rf_cuda_ctx *c, bool on);
typedef struct rf_cuda_codegen_stats {
    size_t compiled, cache_hits, mem_hits, failures;
    double compile_seconds, load_seconds;
} rf_cuda_codegen_stats;
void rf_cuda_codegen_get_stats(const rf_cuda_ctx *c, rf_cuda_codegen_stats *out);

#ifdef __cplusplus
}
#endif

#endif
