/* Internals of the GPU library shared by the C orchestration (prims.c), the
 * kernels (kernels.cu) and the CUB shim (cub_shim.cu). Valid C and C++. */
#ifndef RF_CUDA_INTERNAL_H
#define RF_CUDA_INTERNAL_H

#include <cuda_runtime_api.h>
#include <pthread.h>
#include <string.h>

#include "rf_cuda_prims.h"
#include "../../common/rf_scalar_ops.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Column pointers passed by value to kernels. */
typedef struct rf_cols {
    const uint64_t *c[RF_CUDA_MAX_COLS];
} rf_cols;
typedef struct rf_wcols {
    uint64_t *c[RF_CUDA_MAX_COLS];
} rf_wcols;

static inline rf_cols rf_cols_of(const rf_drel *r)
{
    rf_cols k;
    memset(&k, 0, sizeof k);
    for (int i = 0; i < r->arity && i < RF_CUDA_MAX_COLS; i++)
        k.c[i] = r->data ? r->data + (size_t)i * r->cap : NULL;
    return k;
}

static inline rf_wcols rf_wcols_of(rf_drel *r)
{
    rf_wcols k;
    memset(&k, 0, sizeof k);
    for (int i = 0; i < r->arity && i < RF_CUDA_MAX_COLS; i++)
        k.c[i] = r->data ? r->data + (size_t)i * r->cap : NULL;
    return k;
}

/* The packing of a dense set's rows into bit positions (see rf_dset):
 * key = sum over columns j of (v_j - lo[j]) << shift[j], each offset at
 * most mask[j]. */
typedef struct rf_dframe {
    int ncols;
    int shift[RF_CUDA_MAX_COLS];
    uint64_t lo[RF_CUDA_MAX_COLS];
    uint64_t mask[RF_CUDA_MAX_COLS];
} rf_dframe;
/* The frame of a planned set (dense_set.c). */
rf_dframe rf_dset_frame(const rf_dset *s);
/* s (planned, without words) gets its words, all clear; nothing is left
 * allocated on failure. */
bool rf_dset_alloc_clear(rf_cuda_ctx *c, rf_dset *s, const char *what, rf_status *st);

/* One compute-code instruction on the device. sc marks the first
 * instruction of the right operand of && (1) or || (2): when the left value
 * already decides, execution jumps past the operator at `skip` (short
 * circuit, so `y != 0 && x / y > 1` never divides by zero). For
 * if(c, x, y): sc 3 marks x's first instruction (c is popped there; when it
 * is false execution jumps to y's first instruction, at `skip`), sc 4 marks
 * y's first instruction (reached after x: jump past the IF at `skip`); the
 * IF itself then does nothing. */
typedef struct rf_dins {
    uint8_t op, type, arg_type, sc;
    int32_t index;
    uint64_t value;
    int32_t skip;
    int32_t pad_;
} rf_dins;

/* First run-time fault of a kernel (first writer wins). */
typedef struct rf_derr {
    int code;            /* RF_SERR_* (common/rf_scalar_ops.h) */
    int aux;             /* types: from | to << 8; op | type << 8 | arg type << 16 */
    uint64_t value;      /* the (first) operand */
    uint64_t value2;     /* the second operand (overflow faults) */
} rf_derr;

/* Fault codes: RF_SERR_* of common/rf_scalar_ops.h (messages by
 * rf_scalar_fail, common/rf_expr.c). */

/* A device-only instruction (never in rf_code from the IR): the value of a
 * string subexpression tabulated on the host (prims.c, "String tables"):
 * it pops a dictionary id and pushes table `index`'s entry for it, that is
 * tab[tab[2 * index] + id] (tab[2 * index + 1] is the table's length; an id
 * beyond it faults, which tabulation rules out). A table of a boolean
 * subexpression has RF_TAB_BITS set in its length and holds a bit per id,
 * (tab[tab[2 * index] + id / 64] >> id % 64) & 1: q13's like() over 14.1M
 * comment ids at SF 10 is then 1.8 MB to write, upload and probe (it stays
 * in L2) instead of 113 MB. */
#define RF_DOP_LOOKUP 250
#define RF_TAB_BITS (1ull << 63)

/* Compute stages of one kernel: a filter (filter_n instructions at 0, or 0
 * for none) and nproj expressions at [off[p], off[p+1]). */
typedef struct rf_dprog {
    const rf_dins *ins;
    const uint32_t *rank;      /* string ranks, or NULL */
    uint64_t nrank;
    rf_derr *err;
    const uint64_t *tab;       /* string tables (RF_DOP_LOOKUP), or NULL */
    int filter_n;
    int nproj;
    int off[RF_CUDA_MAX_COLS + 1];
} rf_dprog;

/* Aggregation kinds of the segmented reduce. */
enum {
    RF_RED_MIN_I64 = 0, RF_RED_MAX_I64,   /* (integer totals: rf_k_seg_sum128) */
    RF_RED_MIN_U64, RF_RED_MAX_U64,
    RF_RED_MIN_F64, RF_RED_MAX_F64,
    RF_RED_MIN_STR, RF_RED_MAX_STR
};

/* Most download staging buffers (and host threads copying out of them). */
#define RF_MAX_STAGE 8

struct rf_cuda_ctx {
    int device;
    char name[256];
    size_t total_mem;   /* the device's memory (bytes) */
    cudaStream_t stream;
    cudaMemPool_t pool;
    cudaEvent_t ev_start, ev_stop;
    size_t in_use, peak;
    /* Scratch reused by consecutive steps (CUB temp storage). */
    void *scratch;
    size_t scratch_bytes;
    /* Compute-code buffer and the fault slot. */
    rf_dins *code;
    size_t code_cap;
    rf_derr *err;
    /* Small pinned buffer for counts read back. */
    uint64_t *host_small;
    uint32_t *rank;
    size_t nrank;
    /* String tables of the current launch (RF_DOP_LOOKUP), in words. */
    uint64_t *tab;
    size_t tab_cap;
    /* Kernels run on the host (string functions the device cannot do),
     * tables built and their entries. */
    size_t host_kernels, string_tables, string_table_entries;
    /* Run-time code generation (codegen.c). */
    bool codegen;
    bool codegen_optional; /* a lone select (rf_cuda_set_codegen_optional): the library's
                              kernels unless the pass's module is loaded or pays */
    void *cg;
    size_t select_passes;   /* MAPs/JOINs run as one generated pass (rf_cuda_select_one_pass) */
    /* Host<->device traffic and pool activity (rf_cuda_get_io_stats). */
    rf_cuda_io_stats io;
    /* Pinned staging for downloads (prims.c, "Downloads"): nstage
     * buffers of RF_STAGE_CHUNK bytes in one region, each with its own
     * stream, so that as many host threads overlap DMA and host copies. */
    char *stage_region;
    size_t stage_region_bytes;
    bool stage_registered;     /* cudaHostRegister'ed (else cudaMallocHost) */
    int nstage;
    cudaStream_t stage_stream[RF_MAX_STAGE];
    /* Copies of pinned tables that run beside the kernels (rf_drel_upload_ahead,
     * rf_drel_download_at_ahead): one stream a direction (the two copy
     * engines), made on first use. */
    cudaStream_t up_stream, down_stream;
    /* Join algorithm: 0 chosen by size (rf_cuda_join), 1 merge, 2 hash. */
    int join_mode;
    bool small_sort;         /* sorts of a few rows by one block (RF_CUDA_SMALL_SORT=off: never) */
    /* Sorts of two columns that look at the rows' order first
     * (rf_cuda_sort_unique; RF_CUDA_SORT_ORDER=off: never): rows already in
     * order are copied, rows in the order of their second column then
     * first are sorted by the first alone; how many of each. */
    bool sort_order;
    /* Unions of one or two columns by merge path (rf_cuda_union; false:
     * RF_CUDA_UNION_MERGE=off, by searches); and how many ran so. */
    bool union_merge;
    size_t merge_unions;
    size_t sorts_in_order, sorts_by_first;
    /* Rows of more than 64 key bits one sort takes: 2^32 - 1, the ids of
     * its 32-bit permutation (RF_CUDA_WIDE_SORT_MAX lowers it, for tests). */
    uint64_t wide_sort_max;
    size_t hash_joins, merge_joins;
    /* RF_CUDA_TRACE=1: where a kernel's time goes, phase by phase
     * (rf_cuda_trace; the stream is synchronised at each mark, so traced
     * runs are slower: for finding fixed costs, not for timing). */
    bool trace;
    /* RF_CUDA_TRACE=host: the marks without waiting for the stream, so a
     * phase's time is the host's alone (what the device idles through
     * before a launch, and the launch's own cost) */
    bool trace_nosync;
    double trace_t;
    /* The pool primed in the background at start-up (prims.c, prime_pool):
     * the thread, and whether it is yet to be joined (under prime_lock);
     * prime_stop (read and set with __atomic builtins) ends it after the
     * piece it is allocating. */
    pthread_t prime_thread;
    pthread_mutex_t prime_lock;
    bool priming;
    int prime_stop;
    /* The program's library kernels whose code is loaded ahead
     * (rf_cuda_load_ahead): the thread, joined when the context goes. */
    pthread_t loader_thread;
    bool loading;
    unsigned load_what;
};

/* Under RF_CUDA_TRACE: waits for the stream and prints the wall time since
 * the previous mark (or the kernel's start) to stderr as `trace PHASE US`. */
void rf_cuda_trace(rf_cuda_ctx *c, const char *phase);

/* Layout twin of RfEnv (rf_scalar.cuh) for generated kernels' parameters. */
typedef struct rf_denv {
    const uint32_t *rank;
    uint64_t nrank;
    rf_derr *err;
    const uint64_t *tab;
} rf_denv;

/* ---- Run-time code generation (codegen.c) ----
 * Generation is pure text: the CUDA source of a MAP (join = false) or JOIN
 * compute stage, two kernels with one signature for both:
 *   rf_filter(RfCols l, RfCols r, const u64 *lo, const u64 *off, u64 nl,
 *             u64 total, RfEnv env, u8 *flags)
 *   rf_emit(RfCols l, RfCols r, const u64 *lo, const u64 *off, u64 nl,
 *           u64 total, const u8 *flags, const u64 *pos, RfEnv env, RfWCols out)
 * (MAP: row o of l; JOIN: candidate pair o as in rf_k_join_filter). The
 * Kernel Weaver can fuse stages at this text level. */
char *rf_codegen_source(bool join, int al, const rf_code *filter, int nproj, const rf_code *proj);
/* Where the generated stages and kernels begin, after the prelude (the
 * scalar operators): `explain --cuda` prints from here. */
#define RF_CODEGEN_STAGES_MARK "// ---- compute stages and kernels ----\n"
/* The reducing gather's accumulators, as the generated rf_reduce kernel
 * (codegen.c) and its launcher (prims.c, rf_cuda_fused_reduce) lay them
 * out: per group slot a row count, then per aggregate j a 128-bit sum
 * (total, avg: 2 words), one word (min, max) or nothing (count: the slot's
 * count). A block's shared table is slot-major (slot s, aggregate j at
 * acc[s * words + off[j]]); the global table region-major (acc[off[j] * cap
 * + s * width[j]], the count at acc[s]), so that each region gathers into
 * a group-ordered array with one kernel. */
typedef struct rf_reduce_layout {
    int kind[RF_CUDA_MAX_COLS];   /* RF_REDUCE_COUNT.. */
    int width[RF_CUDA_MAX_COLS];
    int off[RF_CUDA_MAX_COLS];
    int words;                    /* per slot: 1 + the widths */
    int shared_slots;             /* of a block's table (a power of two); 0: too wide for shared memory */
} rf_reduce_layout;
enum { RF_REDUCE_COUNT = 0, RF_REDUCE_SUM = 1, RF_REDUCE_MIN = 2, RF_REDUCE_MAX = 3 };
void rf_reduce_layout_of(int nkeys, int naggs, const rf_aggfn *fns, rf_reduce_layout *lay);
/* A thread chain and its reducing gather as one kernel, rf_reduce(RfCols l,
 * RfCols r, const u64 *lo, const u64 *off, u64 nl, u64 total, u64 stride,
 * RfEnv env, u64 *keys, unsigned *state, u64 cap, u64 *counters, u64 *acc,
 * int sample): rows (or candidate pairs) o * stride for o < total that pass
 * the filter make their values vals[] (the group keys are the first nkeys;
 * aggregate j folds value arg_val[j], -1 for a count) and fold into their
 * group's slot; see the kernel's comment. NULL when the layout does not
 * fit the kernel (too many aggregates for shared memory). */
struct rf_cg_plan; /* codegen_plan.h */
/* plan (may be NULL: the filter as one stage) must be of one part. */
char *rf_codegen_reduce_source(bool join, int al, const rf_code *filter, int nvals, const rf_code *vals, int nkeys,
                               int naggs, const rf_aggfn *fns, const int *arg_val, const struct rf_cg_plan *plan);
/* A MAP or JOIN with its compaction as one kernel, rf_select(RfCols l,
 * RfCols r, const u64 *lo, const u64 *off, u64 nl, u64 n, RfEnv env,
 * RfWCols out, u64 *status, u64 *next_tile, u64 ntiles, const u32 *rid_in,
 * u32 *rid_out): one pass over the rows (candidate pairs), the kept ones
 * written in order (the same rows and places as rf_filter, a scan and
 * rf_emit), out sized for n rows; see the kernel's comment. With a plan
 * (codegen_plan.h; NULL: the filter as one stage) the filter is emitted as
 * the plan says; a plan of several parts gives one kernel per part
 * (rf_codegen_select_name): part 0 over the rows, writing the kept rows'
 * ids to rid_out; part q > 0 over the n ids in rid_in; the last part
 * writes the projections. NULL without projections. */
char *rf_codegen_select_source(bool join, int al, const rf_code *filter, int nproj, const rf_code *proj,
                               const struct rf_cg_plan *plan);
#define RF_SELECT_TILE_ROWS 2048 /* ITEMS x BLOCK of rf_select */
/* rf_select for nb (2..RF_SELECT_MANY_MAX) MAPs of one input, one pass:
 * rf_select_many(RfCols l, u64 n, RfEnv env, RfWCols out0, .., outNB-1,
 * u64 *status (nb * ntiles words), u64 *next_tile, u64 ntiles). */
#define RF_SELECT_MANY_MAX 4
char *rf_codegen_select_many_source(int al, int nb, const rf_code *const *filters, const int *nprojs,
                                    const rf_code *const *projs);
/* Compiles (or finds in the memory or disk cache) and loads src; false when
 * code generation is unavailable (no NVRTC/driver) or failed: the caller
 * falls back to the interpreter. */
bool rf_codegen_kernels(rf_cuda_ctx *c, const char *src, void **filter_fn, void **emit_fn);
/* The same for any kernels: fns[k] := the function names[k] of src. */
bool rf_codegen_module(rf_cuda_ctx *c, const char *src, int n, const char *const *names, void **fns);
/* Whether src's module is worth making for a plan that saves gain_ns a
 * run over the code that is loaded: true once it is loaded (or being
 * made), else once the gains offered for it so far add up to what making
 * it costs (a load from the disk cache, or a compilation): a plan a query
 * runs once rarely pays for its module; a loop's kernel soon does. */
bool rf_codegen_pays(rf_cuda_ctx *c, const char *src, double gain_ns);
/* The same accumulation for a choice not yet tied to one module: the
 * gains offered under key (the caller's hash of what it decides on) so
 * far, gain_ns added, against cost_ns. */
bool rf_codegen_offer(rf_cuda_ctx *c, uint64_t key, double gain_ns, double cost_ns);
/* What making a module costs the run that needs it: read from the disk
 * cache and loaded (~0.15-0.35 ms on the H100 in traces, docs/performance.md),
 * or compiled by NVRTC first (0.2-2 s). */
#define RF_CG_LOAD_NS 4e5
#define RF_CG_COMPILE_NS 3e8
/* Launches a generated kernel over n threads' work in blocks of 256:
 * grid = the blocks n needs, at most max_blocks (0: no limit but the
 * device's). */
/* What a generated source is made from, as bytes (the generator's name and
 * every argument it reads: codes instruction by instruction, the plan's
 * order, connectors and parts): the generators are functions of their
 * arguments, so two equal keys stand for equal sources, and a module found
 * by its key needs no source made and hashed (a 47 KB source took 60-80 us
 * on the H100's host, docs/performance.md). Keys are compared whole, never
 * by a hash alone. */
typedef struct rf_cg_key {
    unsigned char *bytes;
    size_t len, cap;
} rf_cg_key;
struct rf_cg_plan;
void rf_cg_key_select(rf_cg_key *k, bool join, int al, const rf_code *filter, int nproj, const rf_code *proj,
                      const struct rf_cg_plan *plan);
void rf_cg_key_select_many(rf_cg_key *k, int al, int nb, const rf_code *const *filters, const int *nprojs,
                           const rf_code *const *projs);
void rf_cg_key_reduce(rf_cg_key *k, bool join, int al, const rf_code *filter, int nvals, const rf_code *vals,
                      int nkeys, int naggs, const rf_aggfn *fns, const int *arg_val, const struct rf_cg_plan *plan);
void rf_cg_key_sample(rf_cg_key *k, bool join, int al, const struct rf_cg_plan *plan);
void rf_cg_key_free(rf_cg_key *k);
/* The module made from the source of key k, when one is loaded (or being
 * made: waits for it): fns[i] := its kernels, as rf_codegen_module with the
 * same names gives them. False: none known; make the source and call
 * rf_codegen_module, then rf_codegen_memo. */
bool rf_codegen_module_by_key(rf_cuda_ctx *c, const rf_cg_key *k, int n, const char *const *names, void **fns);
/* Remembers that src is the source of key k (copied). */
void rf_codegen_memo(rf_cuda_ctx *c, const rf_cg_key *k, const char *src);
/* Compiles (or finds in the disk cache) and loads the modules of srcs on a
 * thread of its own while the caller goes on (the kernels of a program,
 * before its first kernel runs: a later rf_codegen_module of the same
 * source finds it made, or waits for it). Takes srcs[i] (freed when done);
 * names[i][0..nnames[i]-1] are the kernels of srcs[i] (copied); keys (NULL,
 * or n keys, taken, an empty one for none): what srcs[i] was made from,
 * remembered (rf_codegen_memo) so that the run finds the module by it. One
 * prefetch per context; false when none started (the sources and keys are
 * then the caller's to free). */
bool rf_codegen_prefetch(rf_cuda_ctx *c, int n, char **srcs, const char *const *const *names, const int *nnames,
                         rf_cg_key *keys);
bool rf_codegen_launch(rf_cuda_ctx *c, void *fn, size_t n, void **params, rf_status *st);
bool rf_codegen_launch_grid(rf_cuda_ctx *c, void *fn, size_t n, size_t max_blocks, void **params, rf_status *st);
/* The blocks of 256 threads of generated kernel fn that the device holds at
 * once (the driver's occupancy for its registers and shared memory, times
 * the SMs): the grid of a grid-stride kernel, so that it runs as one wave
 * (1.6 waves, the second a partial one, cost rf_reduce ~20% on the H100).
 * fallback when the driver does not say. */
size_t rf_codegen_resident_blocks(rf_cuda_ctx *c, void *fn, size_t fallback);
/* Test hooks (prims.c), no device needed: the string tables of one code
 * over the rows of a host table (as a launch over that input would build
 * them: out, *tab of *ntab words, *host when the kernel would run on the
 * host), and the device instructions of a code (sc/skip marked). */
bool rf_cuda_test_tabulate(const rf_code *code, const rf_table *in, rf_code *out, rf_word **tab, size_t *ntab,
                           bool *host, rf_status *st);
/* The same for a kernel's filter and projections together (the filter
 * reading the projections' interning tables, tabulate_kernel); out_proj
 * holds nproj codes. */
bool rf_cuda_test_tabulate_kernel(const rf_code *filter, int nproj, const rf_code *proj, const rf_table *in,
                                  rf_code *out_filter, rf_code *out_proj, rf_word **tab, size_t *ntab, bool *host,
                                  rf_status *st);
bool rf_cuda_test_assemble(const rf_code *code, int ncols, rf_dins *ins, rf_status *st);

/* Compiles src with NVRTC for `arch` ("sm_90") as rf_codegen_kernels
 * would, without a device (tests): 1 compiled, 0 failed (*log says why),
 * -1 NVRTC unavailable. *log (may be NULL) is the caller's to free. */
int rf_codegen_compile_only(const char *src, const char *arch, char **log);
extern const char rf_scalar_cuh_text[];
extern const char rf_scalar_ops_text[];

/* Fills st from a CUDA error (out of memory -> RF_EXIT_OUT_OF_MEMORY). */
bool rf_cuda_check(rf_cuda_ctx *c, cudaError_t e, const char *where, rf_status *st);
/* Copies bytes of device memory to the host, waiting for the stream. */
bool rf_cuda_read_back(rf_cuda_ctx *c, const void *dev, void *host, size_t bytes, rf_status *st);
/* Scratch of at least `bytes`, valid until the next call. */
void *rf_cuda_scratch(rf_cuda_ctx *c, size_t bytes, rf_status *st);

/* ---- CUB shim (cub_shim.cu) ---- */
/* Stable sort of (keys, vals) on bits [0, end_bit); results end in
 * keys/vals (the *_alt buffers are the double-buffer partners). */
bool rf_cub_sort_pairs(rf_cuda_ctx *c, uint64_t *keys, uint64_t *keys_alt, uint32_t *vals,
                       uint32_t *vals_alt, size_t n, int end_bit, rf_status *st);
bool rf_cub_sort_keys(rf_cuda_ctx *c, uint64_t *keys, uint64_t *keys_alt, size_t n,
                      int end_bit, rf_status *st);
/* Sorts keys[0..n) on bits [0, end_bit) and writes their distinct values,
 * in order, to *out (keys or keys_alt: the buffer the sort did not end in;
 * the other is free after it), their number to *count_dev on the device.
 * Any n (64-bit counts throughout). */
bool rf_cub_sort_unique_keys(rf_cuda_ctx *c, uint64_t *keys, uint64_t *keys_alt, size_t n,
                             int end_bit, unsigned long long *count_dev, uint64_t **out,
                             rf_status *st);
/* pos[i] = sum of flags[0..i), for i in [0, n]: pos has n+1 entries, the
 * total is pos[n]. */
bool rf_cub_flag_scan(rf_cuda_ctx *c, const uint8_t *flags, uint64_t *pos, size_t n,
                      rf_status *st);
/* out[i] = exclusive sum of counts, n+1 entries. */
bool rf_cub_count_scan(rf_cuda_ctx *c, const uint64_t *counts, uint64_t *out, size_t n,
                       rf_status *st);
bool rf_cub_max(rf_cuda_ctx *c, const uint64_t *in, size_t n, uint64_t *out_dev, rf_status *st);
/* A stable sort of 32-bit keys (bits [0, end_bit)) with 32-bit values;
 * the sorted keys and values end in *keys_out and *vals_out (one buffer of
 * each pair: no copy back). */
bool rf_cub_sort_pairs32(rf_cuda_ctx *c, uint32_t *keys, uint32_t *keys_alt, uint32_t *vals, uint32_t *vals_alt,
                         size_t n, int end_bit, uint32_t **keys_out, uint32_t **vals_out, rf_status *st);
bool rf_cub_segmented_reduce(rf_cuda_ctx *c, int kind, const uint64_t *vals, size_t nsegs,
                             const uint64_t *starts, uint64_t *out, rf_status *st);

/* ---- Kernels (kernels.cu); each returns the launch error ---- */
cudaError_t rf_k_iota(cudaStream_t s, uint32_t *perm, size_t n);
/* keys[i] = concatenation of columns [first, first+ncols) of row perm[i]
 * (perm may be NULL: row i); column first+j is shifted left by shift[j]. */
cudaError_t rf_k_pack(cudaStream_t s, rf_cols cols, int first, int ncols, const int *shift_host,
                      const uint32_t *perm, size_t n, uint64_t *keys);
/* Unpacks keys[i] into dst row i (the inverse of rf_k_pack). */
cudaError_t rf_k_unpack(cudaStream_t s, const uint64_t *keys, size_t n, int ncols,
                        const int *shift_host, const int *bits_host, rf_wcols dst);
cudaError_t rf_k_gather(cudaStream_t s, rf_cols src, int ncols, const uint32_t *perm, size_t n,
                        rf_wcols dst);
/* Over the n rows of two columns: out[0], out[1] := the columns' maxima;
 * out[2] := 0 when the rows are strictly ascending in (second, first)
 * column order, out[3] := 0 when strictly ascending in (first, second).
 * out (4 words) zeroed by the caller. */
cudaError_t rf_k_pair_stats(cudaStream_t s, rf_cols cols, size_t n, unsigned long long *out);
/* Tests: the stream held by one thread spinning `cycles` clock cycles. */
cudaError_t rf_k_test_delay(cudaStream_t s, long long cycles);
/* keys[i], vals[i] := columns 0 and 1 of row i, as 32 bits (both below
 * 2^32); and back: dst row i := (keys[i], vals[i]). */
cudaError_t rf_k_narrow_pairs(cudaStream_t s, rf_cols cols, size_t n, uint32_t *keys, uint32_t *vals);
cudaError_t rf_k_widen_pairs(cudaStream_t s, const uint32_t *keys, const uint32_t *vals, size_t n, rf_wcols dst);
/* One block sorts and deduplicates the n rows of a small relation (n <=
 * RF_SMALL_SORT_ROWS, n rounded up to a power of two times arity <=
 * RF_SMALL_SORT_WORDS: shared memory, with a key and an index a row) into
 * out (room for n rows), in the order of the general sort; *total := the
 * rows written. */
#define RF_SMALL_SORT_ROWS 8192
#define RF_SMALL_SORT_WORDS 16384
cudaError_t rf_k_small_sort_unique(cudaStream_t s, rf_cols in, int arity, size_t n, rf_wcols out,
                                   unsigned long long *total);
/* flags[i] = first row or row i differs from row i-1 on the first k cols. */
cudaError_t rf_k_row_heads(cudaStream_t s, rf_cols cols, int k, size_t n, uint8_t *flags);
/* For flagged i (flags NULL: all), dst row pos[i] (pos NULL: i) := src row i. */
cudaError_t rf_k_semi_flags(cudaStream_t s, const uint64_t *lo, const uint64_t *off, size_t nl,
                            const uint8_t *flags, int side, uint8_t *keep);
cudaError_t rf_k_compact(cudaStream_t s, rf_cols src, int ncols, const uint8_t *flags,
                         const uint64_t *pos, size_t n, rf_wcols dst);
/* lo[i], cnt[i]: the range of r rows matching l row i on the first k cols. */
cudaError_t rf_k_join_ranges(cudaStream_t s, rf_cols l, size_t nl, rf_cols r, size_t nr, int k,
                             uint64_t *lo, uint64_t *cnt);
/* Over the candidate pairs [0, total): flags[o] = filter(l_i ++ r_j). */
/* The same (lo, cnt) through a hash table on r (slots: 2 * (mask + 1)
 * words, mask + 1 a power of two above r's distinct keys). */
cudaError_t rf_k_hash_ranges(cudaStream_t s, rf_cols l, size_t nl, rf_cols r, size_t nr, int k,
                             uint64_t *slots, uint64_t mask, uint64_t *lo, uint64_t *cnt);
cudaError_t rf_k_join_filter(cudaStream_t s, rf_cols l, int al, rf_cols r, const uint64_t *lo,
                             const uint64_t *off, size_t nl, size_t total, rf_dprog prog,
                             uint8_t *flags);
/* Writes proj(l_i ++ r_j) of kept pairs at pos[o] (flags NULL: all, at o). */
cudaError_t rf_k_join_emit(cudaStream_t s, rf_cols l, int al, rf_cols r, const uint64_t *lo,
                           const uint64_t *off, size_t nl, size_t total, const uint8_t *flags,
                           const uint64_t *pos, rf_dprog prog, rf_wcols out);
/* Sets, for every kept pair (flags NULL: all), the bit of its projected
 * row: output column p is (l ++ r) column src_host[p], placed by frame f
 * (f.ncols output columns). counters[0] += bits newly set, counters[1] +=
 * rows outside the frame (not inserted). */
cudaError_t rf_k_join_insert(cudaStream_t s, rf_cols l, int al, rf_cols r, const uint64_t *lo,
                             const uint64_t *off, size_t nl, size_t total, const uint8_t *flags,
                             const int *src_host, rf_dframe f, uint64_t *words, uint64_t *counters);
cudaError_t rf_k_map_filter(cudaStream_t s, rf_cols in, size_t n, rf_dprog prog, uint8_t *flags);
cudaError_t rf_k_map_emit(cudaStream_t s, rf_cols in, size_t n, const uint8_t *flags,
                          const uint64_t *pos, rf_dprog prog, rf_wcols out);
/* flags[i] = l row i has no match in r on the first k columns. */
cudaError_t rf_k_absent(cudaStream_t s, rf_cols l, size_t nl, rf_cols r, size_t nr, int k,
                        uint8_t *flags);
cudaError_t rf_k_absent_and(cudaStream_t s, rf_cols l, size_t nl, rf_cols r, size_t nr, int k,
                            uint8_t *flags);
/* Union of sorted, duplicate-free a and b: keep[j] = b_j not in a,
 * lba[j] = rank of b_j in a. Each side's rows are looked up in the other
 * within the windows that rf_k_union_bounds finds for its chunks of
 * RF_UNION_CHUNK rows (bounds: (rows + RF_UNION_CHUNK - 1) /
 * RF_UNION_CHUNK + 1 words), or in all of it (bounds NULL). */
#define RF_UNION_CHUNK 256
cudaError_t rf_k_union_bounds(cudaStream_t s, rf_cols r, size_t nr, rf_cols l, size_t nl, int arity,
                              uint64_t *bounds);
cudaError_t rf_k_union_probe(cudaStream_t s, rf_cols a, size_t na, rf_cols b, size_t nb,
                             int arity, const uint64_t *bounds, uint64_t *lba, uint8_t *keep);
cudaError_t rf_k_union_scatter_a(cudaStream_t s, rf_cols a, size_t na, rf_cols b, size_t nb,
                                 int arity, const uint64_t *bounds, const uint64_t *kpre, rf_wcols out);
cudaError_t rf_k_union_scatter_b(cudaStream_t s, rf_cols b, size_t nb, int arity,
                                 const uint64_t *lba, const uint8_t *keep, const uint64_t *kpre,
                                 rf_wcols out);
/* Union of sorted, duplicate-free a and b of one or two columns by merge
 * path (kernels.cu says how): tiles of the merged order, split[t] = a's
 * rows among the first t tiles (split: tiles + 1 words); counts[t] = tile
 * t's kept rows (tiles + 1 words, for rf_cub_count_scan), then written
 * from offsets[t]. */
uint64_t rf_k_merge_tiles_of(size_t na, size_t nb);
cudaError_t rf_k_merge_split(cudaStream_t s, rf_cols a, size_t na, rf_cols b, size_t nb, int arity, uint64_t *split);
cudaError_t rf_k_merge_count(cudaStream_t s, rf_cols a, size_t na, rf_cols b, size_t nb, int arity,
                             const uint64_t *split, uint64_t *counts);
cudaError_t rf_k_merge_write(cudaStream_t s, rf_cols a, size_t na, rf_cols b, size_t nb, int arity,
                             const uint64_t *split, const uint64_t *offsets, rf_wcols out);
/* starts[pos[i]] = i for head rows; starts[G] = n is set by the caller. */
cudaError_t rf_k_seg_starts(cudaStream_t s, const uint8_t *flags, const uint64_t *pos, size_t n,
                            uint64_t *starts);
/* vals[i] = expression 0 of prog over row i. */
cudaError_t rf_k_eval(cudaStream_t s, rf_cols in, size_t n, rf_dprog prog, uint64_t *vals);
cudaError_t rf_k_seg_count(cudaStream_t s, const uint64_t *starts, size_t g, uint64_t *out);
/* Float64 sum per segment, in row order, one thread a segment. */
cudaError_t rf_k_seg_fsum(cudaStream_t s, const uint64_t *vals, const uint64_t *starts, size_t g,
                          rf_derr *err, uint64_t *out);
/* avg per segment of float64 values (in-order sum, as rf_k_seg_fsum;
 * rf_agg_ops.h). */
cudaError_t rf_k_seg_favg(cudaStream_t s, const uint64_t *vals, const uint64_t *starts, size_t g,
                          rf_derr *err, uint64_t *out);
/* Exact 128-bit sums per segment of integer/decimal words: sums[2g] and
 * sums[2g + 1] (zeroed by the caller) receive the low word and the high
 * word of group g's sum; flags/pos: the group heads and their exclusive
 * scan. Order-independent (rf_agg_ops.h). */
cudaError_t rf_k_seg_sum128(cudaStream_t s, const uint64_t *vals, const uint8_t *flags, const uint64_t *pos,
                            size_t n, unsigned long long *sums);
/* total: out[g] = the sum if it fits `type`, else an RF_SERR_TOTAL_RANGE fault. */
cudaError_t rf_k_seg_total_finish(cudaStream_t s, const unsigned long long *sums, size_t g, int type,
                                  rf_derr *err, uint64_t *out);
/* avg of integer/decimal[scale] words from the sums (rf_avg_exact). */
cudaError_t rf_k_seg_iavg_finish(cudaStream_t s, const unsigned long long *sums, const uint64_t *starts,
                                 size_t g, int scale, uint64_t *out);
/* gid[i] = the segment of row i (starts[gid] <= i < starts[gid + 1]). */
cudaError_t rf_k_row_groups(cudaStream_t s, const uint64_t *starts, size_t g, size_t n, uint64_t *gid);
/* out[gid[i]] += 1 for every i (out zeroed by the caller). */
cudaError_t rf_k_count_by_group(cudaStream_t s, const uint64_t *gid, size_t n, uint64_t *out);
cudaError_t rf_k_gather_rows(cudaStream_t s, rf_cols src, int ncols, const uint64_t *rows,
                             size_t n, rf_wcols dst);
/* pos[n] = pos[n-1] + flags[n-1] (n >= 1): completes a flag scan. */
cudaError_t rf_k_scan_tail(cudaStream_t s, const uint8_t *flags, uint64_t *pos, size_t n);
cudaError_t rf_k_fill(cudaStream_t s, uint64_t *p, size_t n, uint64_t v);
/* p[i] += v (wrapping), i < n. */
cudaError_t rf_k_add_const(cudaStream_t s, uint64_t *p, size_t n, uint64_t v);
/* Loads (lazy module loading: on first launch, ~0.1-0.2 ms each) the
 * library kernels that run after a generated kernel: a reducing gather's
 * slots, groups and finishes, the hash aggregate's folds. The start-up
 * rehearsal calls it (prims.c, rehearse). */
void rf_k_load_tails(void);
/* Hash aggregation (kernels.cu): groups by hashing key columns, then one
 * fold per aggregate (kind 0 count, 1 exact sum, 2 min, 3 max). */
cudaError_t rf_k_hash_groups(cudaStream_t s, rf_cols in, int nkeys, size_t n, size_t stride, uint64_t *keys,
                             unsigned *state, size_t cap, unsigned long long *claimed, unsigned *overflow,
                             uint64_t *gid);
cudaError_t rf_k_slot_flags(cudaStream_t s, const unsigned *state, size_t cap, uint8_t *flags);
cudaError_t rf_k_slot_groups(cudaStream_t s, const uint8_t *flags, const uint64_t *pos, const uint64_t *keys,
                             size_t cap, int nkeys, uint64_t *group_of, rf_wcols out);
cudaError_t rf_k_renumber(cudaStream_t s, uint64_t *gid, const uint64_t *group_of, size_t n);
cudaError_t rf_k_hash_fold(cudaStream_t s, int kind, const uint64_t *vals, const uint64_t *gid, size_t n,
                           size_t groups, unsigned long long *acc);
cudaError_t rf_k_hash_avg_finish(cudaStream_t s, const unsigned long long *sums, const unsigned long long *counts,
                                 size_t g, int scale, uint64_t *out);
/* flags[col[i]] = 1 for every row (flags zeroed by the caller, as long as
 * the column's largest value + 1); out[pos[v]] = v for the flagged v. */
cudaError_t rf_k_mark_values(cudaStream_t s, const uint64_t *col, size_t n, uint8_t *flags);
cudaError_t rf_k_flagged_values(cudaStream_t s, const uint8_t *flags, const uint64_t *pos, size_t n, uint64_t *out);
/* dst[pos[s] * width + w] = src[s * width + w] for the slots s with flags[s]. */
cudaError_t rf_k_gather_slots(cudaStream_t s, const uint8_t *flags, const uint64_t *pos,
                              const unsigned long long *src, size_t cap, int width, unsigned long long *dst);

/* ---- Dense-set kernels (dense_set.cu) ---- */
/* Sets the bits of b's rows; counters[0] += bits newly set, counters[1]
 * += rows outside the frame (not inserted). */
cudaError_t rf_k_dset_insert(cudaStream_t s, rf_cols b, size_t n, rf_dframe f, uint64_t *words,
                             uint64_t *counters);
/* flags[i] = row i of a is not in the set. */
cudaError_t rf_k_dset_absent(cudaStream_t s, rf_cols a, size_t n, rf_dframe f, const uint64_t *words,
                             uint8_t *flags);
/* Expansion in groups of words: counts[g] = bits set in group g; then
 * the rows of group g are written from row pos[g] on, in bit order. With
 * minus (same frame and size), the bits of words & ~minus. Output column p
 * is frame column src_host[p] (src_host NULL: all frame columns in order). */
size_t rf_dset_groups(size_t nwords);
cudaError_t rf_k_dset_group_counts(cudaStream_t s, const uint64_t *words, const uint64_t *minus, size_t nwords,
                                   uint64_t *counts);
cudaError_t rf_k_dset_expand(cudaStream_t s, const uint64_t *words, const uint64_t *minus, size_t nwords,
                             const uint64_t *pos, rf_dframe f, int nout, const int *src_host, rf_wcols out);
/* dst[w] |= src[i * nwords + w] for i < n; *counter += bits set in dst
 * after (the caller zeroes it). */
cudaError_t rf_k_dset_or(cudaStream_t s, uint64_t *dst, const uint64_t *src, int n, size_t nwords,
                         uint64_t *counter);
/* mm[j] min and mm[ncols + j] max of column j, folded into what mm holds. */
cudaError_t rf_k_col_minmax(cudaStream_t s, rf_cols c, int ncols, size_t n, uint64_t *mm);

#ifdef __cplusplus
}
#endif

#endif
