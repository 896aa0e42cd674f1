/* The backend boundary: what the Harmony runtime needs from a processor.
 * The CPU backend (runtime/backend_cpu.c over primitives/cpu) and the GPU
 * backend (runtime/backend_gpu.c over primitives/cuda) implement the same
 * table of functions; the interpreter (runtime.c) knows nothing else.
 * Relations live in backend memory as opaque rf_dvar handles and cross to
 * the host only through upload/download (inputs and outputs). */
#ifndef RF_BACKEND_H
#define RF_BACKEND_H

#include <stdio.h>

#include "../common/rf_table.h"
#include "../harmony_ir/hir.h"

typedef struct rf_dvar rf_dvar;

typedef struct rf_kernel_stats {
    double seconds;          /* wall (CPU) or device-event (GPU) time */
    size_t rows_in[2];
    size_t rows_out;
    size_t bytes_moved;      /* bytes read + written, for bandwidth */
} rf_kernel_stats;

/* What `run` did. RF_RUN_MEMBERS, for a FUSED kernel only: the backend
 * did not run the group as one (it cannot, or it stopped on an error and
 * left st clear); the runtime runs its members one by one instead, which
 * gives the same rows, and for a failing group the error --no-fuse gives. */
typedef enum rf_run_result { RF_RUN_FAILED = 0, RF_RUN_DONE = 1, RF_RUN_MEMBERS = 2 } rf_run_result;

/* A move of a relation between ranks (move_rows below; dist_backend.c
 * says which moves a kernel needs). Afterwards this rank's part is, in
 * order, the rows from ranks 0..rank-1, its own rows that stay, the rows
 * from ranks rank+1..size-1 (each rank's in their order there), or when
 * `set` that union sorted and deduplicated: what a move through host
 * tables gives. */
struct rf_comm;
typedef enum rf_move_to {
    RF_MOVE_HASH,            /* row to rank rf_dist_row_rank_cols(its nkeys columns cols, or first nkeys) */
    RF_MOVE_ALL,             /* every row to every rank */
    RF_MOVE_ROOT             /* every row to rank 0 */
} rf_move_to;
typedef struct rf_move_rows {
    rf_move_to to;
    int nkeys;               /* RF_MOVE_HASH: how many columns are hashed (>= 1) */
    const int *cols;         /* RF_MOVE_HASH: those columns, in order (NULL: the prefix 0..nkeys-1) */
    bool from_all;           /* every rank holds every row now: keep this rank's, send nothing */
    bool set;
    struct rf_comm *comm;
    /* Filled by the move (this rank's): rows and words sent to other
     * ranks, and communicator calls made. */
    size_t rows_sent, words_sent, collectives;
} rf_move_rows;

typedef struct rf_backend rf_backend;
struct rf_backend {
    const char *name;        /* "cpu", "gpu" */
    char device[256];        /* "NVIDIA H100 80GB HBM3", "16 threads" */
    /* Set by the runtime: whether run() must fill stats->seconds (--stats,
     * --profile). When false a backend may leave it 0 and skip its clock
     * reads (the CPU backend does: in a loop of one-row deltas they cost
     * as much as the kernels' work). */
    bool time_kernels;
    /* Set by the backend: host tables it takes or fills whole (spilled
     * variables, out-of-core parts and outputs) cross fastest when made in
     * the host pool (rf_table_reserve_pooled: the GPU's pinned arena). */
    bool pooled_tables;

    rf_dvar *(*var_new)(rf_backend *be, int arity, rf_status *st);
    void (*var_free)(rf_backend *be, rf_dvar *v);
    size_t (*var_rows)(rf_backend *be, const rf_dvar *v);
    /* Optional (NULL: var_rows): the rows of v held by this process, for
     * --stats (which shows each process's own kernels). The distribution
     * layer's var_rows is a collective; this never is. */
    size_t (*var_rows_here)(rf_backend *be, const rf_dvar *v);
    /* Replaces v's contents with t's rows (t keeps its data). */
    bool (*upload)(rf_backend *be, rf_dvar *v, const rf_table *t, rf_status *st);
    /* Fills t (initialised by the caller with v's arity) with v's rows. */
    bool (*download)(rf_backend *be, const rf_dvar *v, rf_table *t, rf_status *st);
    /* Optional (NULL: the runtime downloads into a table of its own and
     * copies the rows over): writes v's rows into t's columns from row at
     * on, where the caller made room for var_rows(v) of them (a bound: runs
     * that share rows count them once each), and sets *rows to how many it
     * wrote; t->nrows is left to the caller. Out-of-core kernels put each
     * part's output straight in its place in the whole output this way
     * (one pass over host memory instead of two). */
    bool (*download_at)(rf_backend *be, const rf_dvar *v, rf_table *t, size_t at, size_t *rows, rf_status *st);
    /* Optional, all three or none (NULL: upload and download_at): double
     * buffering of out-of-core parts. upload_ahead is upload that may
     * return while t's rows still cross (the next part's, while this
     * part's kernels run): the backend orders everything that touches v
     * after them, and t stays untouched until v has been read by a kernel
     * or freed, or moves_wait has returned; it may decline (false, st set:
     * the runtime then uploads the part when it runs). download_at_ahead is
     * download_at whose rows may still be crossing when it returns: they
     * are in t once moves_wait returns, and t is not freed, grown or
     * written in those rows before; v may be freed at once (the backend
     * keeps its storage until the copy is done). */
    bool (*upload_ahead)(rf_backend *be, rf_dvar *v, const rf_table *t, rf_status *st);
    bool (*download_at_ahead)(rf_backend *be, const rf_dvar *v, rf_table *t, size_t at, size_t *rows,
                              rf_status *st);
    bool (*moves_wait)(rf_backend *be, rf_status *st);
    /* Runs one kernel of p (any op but LOAD and CHECK_KEYS). A plain
     * kernel writes outs[0] and reads ins[0], ins[1] (k->in[0], k->in[1];
     * NULL for a variable never written: it reads as empty); a FUSED
     * kernel writes outs[0..nout-1] and reads ins[0..nin-1] (its fused->out
     * and fused->in); a MULTIJOIN writes outs[0] and reads ins[0..nin-1]
     * (its mj->in, any number up to RF_MULTIJOIN_MAX_IN). An output
     * aliases no input unless the op is COPY/CLEAR. Fills stats. */
    rf_run_result (*run)(rf_backend *be, const rf_hprogram *p, const rf_kernel *k,
                         rf_dvar *const *outs, rf_dvar *const *ins,
                         rf_kernel_stats *stats, rf_status *st);
    size_t (*bytes_in_use)(rf_backend *be);
    size_t (*bytes_peak)(rf_backend *be);
    void (*destroy)(rf_backend *be);
    void *impl;
    /* Optional (NULL: none): backend-specific lines for --stats (the GPU
     * backend: PCIe traffic, NVRTC compile time, pool, peak). */
    void (*print_stats)(rf_backend *be, FILE *f);
    /* Optional (NULL: unknown): true when every value of column col of v has
     * the same sign bit, so signed and unsigned orders agree on it (lets the
     * runtime skip a host scan of downloaded outputs). */
    bool (*column_sign_uniform)(rf_backend *be, const rf_dvar *v, int col);
    /* Optional (NULL: the runtime sorts on the host, then calls upload):
     * replaces v's contents with t's rows, which may be unsorted and hold
     * duplicates, sorted and deduplicated by the backend (the GPU sorts
     * large inputs far faster than the host can). */
    bool (*upload_unsorted)(rf_backend *be, rf_dvar *v, const rf_table *t, rf_status *st);
    /* Optional (NULL: nothing): told of the program before its first kernel
     * runs (the GPU backend compiles its generated kernels meanwhile). */
    void (*program_begins)(rf_backend *be, const rf_hprogram *p);
    /* Optional (NULL: nothing): called after the last LOAD of a run of
     * them, its time counted as loading. The distribution layer waits
     * there for its communicator (NCCL opens on a thread of its own while
     * the inputs are read), so that the query's time is the query's. */
    void (*inputs_loaded)(rf_backend *be);
    /* Optional (NULL: nothing): told which program variable a new v
     * stands for, right after var_new (the distribution layer hashes and
     * sends string columns by their text, and merges the parts of sorted
     * variables as sets). hv outlives v. */
    void (*var_describe)(rf_backend *be, rf_dvar *v, const rf_hvar *hv);
    /* Optional (NULL: nothing): called once, after the last kernel, with
     * the variables about to be downloaded as outputs (an entry is NULL
     * for one never written); no kernel runs after it. The distribution
     * layer gathers them to rank 0 here, all ranks together, so that
     * writing them involves no other rank; false (st) when a kernel
     * failed on some rank (the distribution layer learns of it late). */
    bool (*outputs_ready)(rf_backend *be, rf_dvar *const *vars, int n, rf_status *st);
    /* Optional (NULL: not supported), instead of outputs_ready where each
     * rank writes its own part of the outputs (rf_run_options.output_parts,
     * --output-per-rank): every output keeps this rank's rows (a relation
     * held whole on every rank: rank 0's copy alone), so that downloading
     * it involves no other rank. All ranks together; false (st) as
     * outputs_ready. */
    bool (*outputs_local)(rf_backend *be, rf_dvar *const *vars, int n, rf_status *st);
    /* Optional (NULL: ok itself): whether ok holds on every rank (all ranks
     * together): the per-rank outputs are committed or dropped together. */
    bool (*agree)(rf_backend *be, bool ok);
    /* Optional (NULL: the runtime downloads l and r and counts on the
     * host): sets *rows to the number of rows l joined with r on column
     * pairs (lkeys[i], rkeys[i]), i < nkeys, would make, without making
     * them (rf_prim_join_size is the reference). --join=auto's run-time
     * statistic (RF_TERM_BRANCH_JOIN, join_choice.c). */
    bool (*join_size)(rf_backend *be, const rf_dvar *l, const rf_dvar *r, int nkeys, const int *lkeys,
                      const int *rkeys, uint64_t *rows, rf_status *st);
    /* --join=auto on this backend: the multiway join runs when the binary
     * plan's largest intermediate, estimated from its first join, exceeds
     * wcoj_auto_ratio x the multiway join's inputs (RF_WCOJ_AUTO_RATIO
     * overrides; join_choice.c says how
     * each default was measured). */
    double wcoj_auto_ratio;
    /* Optional (NULL: the distribution layer downloads the rank's part,
     * splits it on the host and uploads what stays): the two halves of
     * moving a relation between ranks such that the rows that stay never
     * leave the backend (dist_backend.c, move_var). split_rows: dest(t, i,
     * ctx) names the rank row i of v goes to (-1: every rank), t being v's
     * rows as a host table, read only; v keeps, in order, its rows for
     * rank `keep` and for every rank; where away is not NULL (initialised
     * with v's arity) the rows for other ranks are appended to it in order
     * and *dests their ranks (*dests: NULL or a malloc'd buffer, which
     * split_rows reallocs to fit; the caller frees it). merge_rows:
     * v := before ++ v ++ after, or when set, that union sorted and
     * deduplicated (v's rows may or may not be so already). */
    bool (*split_rows)(rf_backend *be, rf_dvar *v, int (*dest)(const rf_table *t, size_t i, const void *ctx),
                       const void *ctx, int keep, rf_table *away, int **dests, rf_status *st);
    bool (*merge_rows)(rf_backend *be, rf_dvar *v, const rf_table *before, const rf_table *after, bool set,
                       rf_status *st);
    /* Optional (NULL: split_rows/merge_rows, else host tables): the whole
     * move of a relation between ranks inside the backend, the rows
     * crossing between the ranks' device memories through the
     * communicator's alltoallv_device (the distribution layer calls it
     * only for a communicator that has one, and for relations of at least
     * one column and no string column). Every rank calls it together. */
    bool (*move_rows)(rf_backend *be, rf_dvar *v, rf_move_rows *how, rf_status *st);
    /* Optional (NULL: the runtime downloads and hashes): --count's
     * fingerprint computed where v's rows are, so that they need not
     * cross to the host: (*hashes)[b] := the chain from seed over the
     * words of rows [b * block_rows, (b + 1) * block_rows) of v in its
     * order, for b below ceil(*nrows / block_rows) (*hashes malloc'd; NULL
     * for no rows). The runtime asks only for sorted variables whose typed
     * order is their word order (column_sign_uniform) and that hold no
     * strings. False with st clear: not here (the runtime downloads). */
    bool (*block_hashes)(rf_backend *be, const rf_dvar *v, size_t block_rows, uint64_t seed, uint64_t **hashes,
                         size_t *nrows, rf_status *st);
    /* Optional (NULL: rf_add_to_columns_copy, through a host table): adds
     * add[c] (wrapping) to every value of column c of v, for c below v's
     * arity, in place; add[c] == 0 leaves column c. The distribution layer
     * shifts the row positions a rank numbered by the rows of the ranks
     * before it this way. Rows keep their order: a caller whose columns
     * must stay sorted and distinct adds no more than keeps them below
     * 2^63. */
    bool (*add_to_columns)(rf_backend *be, rf_dvar *v, const uint64_t *add, rf_status *st);
    /* Optional, all four or none (NULL: every process reads each input
     * file whole): input files read in shares. input_share: true where
     * this process reads share *part of *nparts of an input's lines
     * (rf_read_facts_share) instead of the whole file. Then, all processes
     * together, for each such input in the same order:
     * share_count(mine, &before) returns the sum of every process's mine
     * and sets before to the sum over the shares before this one's (the
     * lines of the shares, once a share, also when it could not be read;
     * the rows read, where readers see row positions); share_settle(ok)
     * is true where every share was read, else
     * false with the status of the first share (in file order) that failed,
     * the same on every process; upload_share(t) makes v the union of
     * every process's t (each unsorted, duplicates allowed), deduplicated
     * and placed by the backend. */
    bool (*input_share)(rf_backend *be, int *part, int *nparts);
    uint64_t (*share_count)(rf_backend *be, uint64_t mine, uint64_t *before);
    bool (*share_settle)(rf_backend *be, bool ok, rf_status *st);
    bool (*upload_share)(rf_backend *be, rf_dvar *v, const rf_table *t, rf_status *st);
};

/* The backends' default wcoj_auto_ratio (how they were measured:
 * join_choice.c and docs/performance.md). */
#define RF_WCOJ_AUTO_RATIO_CPU 0.15
#define RF_WCOJ_AUTO_RATIO_GPU 0.05

/* `redfox explain --cuda`: the CUDA source the GPU backend generates for
 * FUSED kernel fk of p (after its prelude of scalar operators), with a
 * header naming the members and how the group runs; NULL when built
 * without the GPU backend. Needs no GPU. */
char *rf_gpu_fused_source(const rf_hprogram *p, const rf_kernel *fk);

/* Kernel placement (backend_hybrid.c): a backend over `device` (the GPU)
 * that runs a kernel on `host` (the CPU backend) instead when its work and
 * its last result are at most RF_HOST_KERNEL_ROWS rows (a join or union of
 * a tiny relation with a large one counts the tiny side) and its inputs
 * are on the host already, or it has been that small for more than
 * RF_HOST_STEADY_RUNS runs in a row and would bring at most
 * RF_HOST_MOVE_ROWS rows there (defaults below). Takes both backends over. */
#define RF_HOST_KERNEL_ROWS_DEFAULT 4096
#define RF_HOST_MOVE_ROWS_DEFAULT 262144
#define RF_HOST_STEADY_RUNS_DEFAULT 32
rf_backend *rf_backend_hybrid_new(rf_backend *device, rf_backend *host);
/* The same, with the device backend made by start(st) on a thread of its
 * own while the run begins on the host: until it is there every kernel
 * runs on the host, except one of more than RF_HOST_WAIT_ROWS rows of work
 * (an upload of more rows, or a kernel whose inputs hold more), which
 * waits for it. start returning NULL (no device): the host runs it all.
 * Its name is "gpu"; the device is announced on stderr as the CLI does
 * ("redfox: using GPU: ...") when it arrives. */
#define RF_HOST_WAIT_ROWS_DEFAULT 1000000
/* The device is started once the run has gone on start_after seconds (0:
 * at once), or earlier when a kernel waits for it. */
rf_backend *rf_backend_hybrid_new_arriving(rf_backend *(*start)(rf_status *st), rf_backend *host, double start_after);
/* True when be is such a backend whose device is still being made: the
 * run needed none of it. Destroying be would wait for the start to end
 * (0.1-0.3 s of driver and context set-up); a process that is done may
 * instead flush its streams and _exit. */
bool rf_backend_hybrid_device_starting(const rf_backend *be);

/* threads <= 0: one per core. */
rf_backend *rf_backend_cpu_new(int threads);
/* NULL with a message in st when no usable GPU (or built without CUDA). */
rf_backend *rf_backend_gpu_new(rf_status *st);
/* A process's device memory budget (--device-memory), before its GPU
 * backends are made: what they reserve ahead stays within it. */
void rf_backend_gpu_set_memory_budget(size_t bytes);

/* Gives an error that has no place yet (a message without "FILE:LINE:")
 * the place it comes from: `where` becomes its location, `note` a second
 * line. Messages that already carry a location (a bad row of a fact file)
 * are kept as they are. The runtime places a failing kernel's error by
 * the kernel's origin; the distribution layer, which may learn of a
 * kernel's failure on another rank only later, places it where it
 * happened (runtime.c). */
void rf_status_locate(rf_status *st, const char *where, const char *note);

#endif
