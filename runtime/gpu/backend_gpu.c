/* The GPU backend: rf_backend (backend.h) over the CUDA operator library
 * (primitives/cuda). Relations stay in device memory from upload to
 * download; every kernel of the Harmony IR is one library call, timed with
 * device events. */
#define _GNU_SOURCE /* sched_setaffinity, CPU_SET: bind_near_device */
#include "../backend.h"
#include "../download_copy.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rf_cuda_prims.h"
#include "cuda_internal.h" /* rf_codegen_source */
#include "codegen_plan.h"
#include "selplan.h"
#include "../../primitives/rf_prims.h"
#include "weaver.h"
#include "../dist_comm.h"

/* A sorted, deduplicated piece of a relation held as runs: immutable once
 * made, shared (counted) by every variable whose rows include it. */
typedef struct rel_run {
    rf_drel rel;
    int refs;
    /* The run whose allocation holds rel's rows, where rel is a section of
     * a buffer several runs share (the sections of a set gathered to rank
     * 0 that arrived in one buffer); NULL: rel owns its storage. */
    struct rel_run *storage;
} rel_run;

/* A variable is a table (rel), a dense set (set, see rf_dset), or runs,
 * sometimes a table too. The semi-naive DIFF and UNION against a large full
 * relation keep it as a set (dense keys) or as runs (any keys) and never
 * rewrite it whole: a set takes the new rows' bits; runs are an LSM as in
 * the CPU backend (disjoint sorted runs whose sizes at least halve from one
 * to the next: `full ∪ new` shares full's runs and adds `new − full` as a
 * run, merged only with runs of comparable size, so a row is merged
 * O(log n) times in its life instead of once per iteration; `new − full`
 * probes every run). The table is made from the set or the runs when some
 * other kernel, a download or a size test needs it; made from runs, they
 * are merged into one run and rel is a view of it (rel_is_view: its storage
 * is the run's, never freed or written through rel).
 *
 * stamp names the contents: every write gives a new one (a COPY the
 * source's), and a DIFF's result records the stamp of what it subtracted
 * (minus_stamp), so `full ∪ (new − full)` knows its sides disjoint. */
struct rf_dvar {
    rf_drel rel;
    bool table_ok;           /* rel holds the rows */
    bool has_set;            /* set holds the rows */
    rf_dset set;
    rel_run **runs;          /* nruns > 0: the runs hold the rows, largest first */
    int nruns, caprun;
    bool rel_is_view;        /* table_ok and rel is runs[0]'s storage (nruns == 1) */
    uint64_t stamp, minus_stamp;
    /* What the dense-set rule said of these rows as a DIFF's right side
     * (maybe_make_set), kept by a COPY and a UNION (whose rows include
     * them): set_never, the frame is too wide for a set, and any superset's
     * is too; set_retry > 0, a set will be tried again from that many
     * rows. Runs are taken only where no set is coming. */
    bool set_never;
    size_t set_retry;
    /* rel's rows are sorted and distinct already: a MULTIJOIN's bindings
     * projected in variable order. A SORT of them is a copy. Cleared
     * whenever the variable is written. */
    bool sorted_set;
    /* rel's rows are distinct, in any order: the result of a SORT, UNION or
     * DIFF, or of a MAP that keeps every column of distinct rows (the
     * semi-naive delta re-keyed for the next join by swapping columns). */
    bool distinct;
    /* A SORT of distinct rows left undone ("pending sorts"): rel holds the
     * rows, distinct but not in order. Only the probe side of a join reads
     * rows in any order (each row searches the other side); every other
     * reader sorts them first (sort_pending). The semi-naive step re-keys
     * its delta with MAP and SORT only for the join: the sort (and its host
     * waits) is saved every iteration. RF_CUDA_PENDING_SORT=off. */
    bool pending_sort;
    /* Copies still crossing beside the kernels (gpu_upload_ahead,
     * gpu_download_at_ahead): the device work that reads rel waits for
     * up_done first, and its storage is freed only after down_done
     * (settle). */
    rf_cuda_done *up_done, *down_done;
};

/* When to hold the full relation of a semi-naive UNION as runs
 * (RF_CUDA_RUNS=off|auto|always): auto from this many rows of its larger
 * side (below it one merge is cheap); always at any size (tests use it to
 * reach the path with small data). */
#define RF_RUNS_MIN_ROWS ((size_t)1 << 20)

/* When to hold a relation as a dense set (RF_CUDA_DENSE=off|auto|always):
 * auto when the right side of a DIFF has at least this many rows and the
 * bitmap is at most RF_DSET_MAX_BITS bits and no larger than
 * RF_DENSE_RATIO times the table (or RF_DENSE_SMALL bytes); always drops
 * the row and size tests (tests use it to reach the path with small
 * data). */
#define RF_DENSE_MIN_ROWS ((size_t)1 << 16)
#define RF_DENSE_RATIO 4
#define RF_DENSE_SMALL ((size_t)64 << 20)

/* A DIFF kernel the dense path turned down, and below how many rows of its
 * right side it is not worth asking again (the frame only grows, so a
 * frame too wide stays too wide: SIZE_MAX). */
typedef struct dense_refusal {
    const rf_kernel *k;
    size_t retry_rows;
} dense_refusal;

/* The frame of the full relation's dense set as the last DIFF whose left
 * side is variable `var` saw it (`t3 := DIFF path.new, path`): a set
 * gather whose result is `var` (`path.new := SORT t2`, the semi-naive
 * step's join and dedup) plans its set in this frame, so the DIFF compares
 * the two bitmaps word by word. Keyed by the variable, not by the kernel
 * after the group: nothing here depends on where kernels stand. */
typedef struct diff_frame {
    int var;
    rf_dset frame;           /* words NULL: the frame only */
} diff_frame;

/* What a set gather made the last time it wrote its rows: the JOIN's rows
 * and the distinct rows the SORT kept (keyed by the gather's output). */
typedef struct set_history {
    int var;
    size_t join_rows, set_rows;
    bool rows_too_many;      /* its rows once ran out of memory: a dense set from then on */
} set_history;

typedef struct gpu_impl {
    rf_cuda_ctx *ctx;
    char bound[320];         /* bind_near_device's note ("" when it did nothing) */
    int dense_mode;          /* 0 off, 1 auto, 2 always */
    double dense_dup_ratio;  /* auto: a set gather whose JOIN made this many rows per
                                distinct row last time goes into a dense set (RF_CUDA_SET_DUP; 0: never) */
    set_history *set_hist;
    int nset_hist;
    dense_refusal *refused;
    int nrefused, caprefused;
    diff_frame *frames;
    int nframes, capframes;
    size_t dense_diffs, dense_unions, dense_expands, dense_fallbacks;
    size_t dense_joins, dense_set_diffs;
    size_t set_gathers_sorted; /* set gathers that wrote their rows and sorted them instead */
    size_t mj_planned, mj_alt; /* multiway joins with a second order run in the planned one / the second */
    size_t set_gathers_probed; /* of those, probing with their JOIN's first input unsorted */
    size_t set_gathers_other_side; /* of those, probing with the other input's rows (probe_with_other_side) */
    bool semijoins;            /* set gathers keeping one side's rows whole run as semi-joins (RF_CUDA_SEMIJOIN) */
    bool lone_selects;         /* lone MAPs over many rows as one generated pass (RF_CUDA_LONE_SELECT) */
    size_t semijoins_run;
    size_t dense_after_oom;    /* set gathers whose rows ran out of memory, made a dense set instead */
    bool memory_short;         /* the device ran out of memory once: relations held as runs may become sets */
    size_t sets_of_runs;       /* relations held as runs given a dense set (memory_short) */
    bool codegen;            /* RF_CUDA_CODEGEN: every MAP/JOIN stage NVRTC-generated */
    bool fuse_codegen;       /* fused groups generated (RF_CUDA_FUSE_CODEGEN, default on) */
    int runs_mode;           /* 0 off, 1 auto, 2 always (RF_CUDA_RUNS) */
    uint64_t last_stamp;
    size_t runs_unions, runs_merges, runs_diffs, runs_disjoint, runs_tables; /* --stats */
    size_t runs_kept_gathered; /* sets gathered to rank 0 kept as runs: too large to merge there */
    size_t sets_gathered_as_bitmaps; /* sets gathered to rank 0 as their dense sets' bitmaps */
    size_t runs_merges_put_off; /* merges of runs that ran out of memory: the runs stayed */
    size_t runs_hashed_apart;   /* --count answers of runs hashed a key range at a time */
    size_t runs_downloaded_apart; /* answers of runs merged and downloaded a key range at a time */
    size_t fused_generated, fused_library; /* reducing gathers run as one generated kernel, or not */
    bool pending_sorts;      /* SORTs of distinct rows left for a join's probe side (RF_CUDA_PENDING_SORT) */
    size_t sorts_left, sorts_done_later; /* --stats */
    /* Variables freed while their rows still cross to the host
     * (gpu_download_at_ahead): freed once the copy is done (reap), so the
     * next part's kernels need not wait for it. */
    RF_VEC(rf_dvar *) crossing;
} gpu_impl;

static rf_cuda_ctx *ctx_of(rf_backend *be) { return ((gpu_impl *)be->impl)->ctx; }
static gpu_impl *impl_of(rf_backend *be) { return be->impl; }

static rf_dvar *gpu_var_new(rf_backend *be, int arity, rf_status *st)
{
    (void)be;
    if (arity > RF_CUDA_MAX_COLS) {
        rf_fail(st, RF_EXIT_RUNTIME_ERROR, "a relation of arity %d exceeds the GPU backend's limit of %d",
                arity, RF_CUDA_MAX_COLS);
        return NULL;
    }
    rf_dvar *v = rf_calloc(1, sizeof *v);
    rf_drel_init(&v->rel, arity);
    v->table_ok = true;
    rf_dset_init(&v->set);
    v->stamp = ++impl_of(be)->last_stamp;
    return v;
}

/* ---- runs ---- */

static void run_unref(rf_backend *be, rel_run *r)
{
    if (r && --r->refs == 0) {
        if (r->storage)
            run_unref(be, r->storage);
        else
            rf_drel_free(ctx_of(be), &r->rel);
        free(r);
    }
}

/* A run taking over src's storage (src becomes empty). */
static rel_run *run_take(rf_backend *be, rf_drel *src)
{
    rel_run *r = rf_calloc(1, sizeof *r);
    rf_drel_init(&r->rel, src->arity);
    rf_drel_move(ctx_of(be), &r->rel, src);
    r->rel.arity = src->arity;
    r->refs = 1;
    return r;
}

static void runs_push(rf_dvar *v, rel_run *r)
{
    if (v->nruns == v->caprun) {
        v->caprun = v->caprun ? 2 * v->caprun : 8;
        v->runs = rf_realloc(v->runs, (size_t)v->caprun * sizeof *v->runs);
    }
    v->runs[v->nruns++] = r;
}

static size_t runs_rows(const rf_dvar *v)
{
    size_t n = 0;
    for (int i = 0; i < v->nruns; i++)
        n += v->runs[i]->rel.nrows;
    return n;
}

/* v holds no runs any more (an empty table when rel was their view). */
static void drop_runs(rf_backend *be, rf_dvar *v)
{
    if (v->rel_is_view) {
        rf_drel_init(&v->rel, v->rel.arity);
        v->rel_is_view = false;
    }
    for (int i = 0; i < v->nruns; i++)
        run_unref(be, v->runs[i]);
    v->nruns = 0;
}

/* v's last two runs merged into one (disjoint, sorted: the union keeps
 * every row of both, in order). */
static bool merge_last_runs(rf_backend *be, rf_dvar *v, rf_status *st)
{
    rel_run *a = v->runs[v->nruns - 2], *b = v->runs[v->nruns - 1];
    rf_drel m;
    rf_drel_init(&m, a->rel.arity);
    if (!rf_cuda_union(ctx_of(be), &a->rel, &b->rel, &m, "a relation held as runs", st)) {
        rf_drel_free(ctx_of(be), &m);
        return false;
    }
    rel_run *r = run_take(be, &m);
    run_unref(be, a);
    run_unref(be, b);
    v->nruns -= 2;
    runs_push(v, r);
    impl_of(be)->runs_merges++;
    return true;
}

static void drop_set(rf_backend *be, rf_dvar *v)
{
    if (v->has_set)
        rf_dset_free(ctx_of(be), &v->set);
    v->has_set = false;
}

/* Work queued from now on (kernels, copies, frees) comes after v's copies
 * started ahead. Every entry that touches a variable's storage settles it
 * first, so a copy ahead is never raced, whatever the runtime does next. */
static void settle(rf_backend *be, const rf_dvar *cv)
{
    rf_dvar *v = (rf_dvar *)cv;
    if (!v)
        return;
    rf_cuda_wait_done(ctx_of(be), v->up_done);
    rf_cuda_wait_done(ctx_of(be), v->down_done);
    v->up_done = v->down_done = NULL;
}

static void var_free_now(rf_backend *be, rf_dvar *v)
{
    settle(be, v);
    drop_runs(be, v);
    rf_drel_free(ctx_of(be), &v->rel);
    drop_set(be, v);
    free(v->runs);
    free(v);
}

/* Frees the crossing variables whose copies are done (all: waits for
 * them); at most `keep` may stay (the oldest are waited for). */
static void reap(rf_backend *be, int keep)
{
    gpu_impl *g = impl_of(be);
    size_t kept = 0, n = g->crossing.len;
    for (size_t i = 0; i < n; i++) {
        rf_dvar *v = g->crossing.items[i];
        /* (waits where more than `keep` would stay: those after this one, and those kept) */
        bool wait = (int)(n - i + kept) > keep;
        if (rf_cuda_done_finished(v->down_done, wait)) {
            rf_cuda_done_release(v->down_done);
            v->down_done = NULL;
            var_free_now(be, v);
        } else {
            g->crossing.items[kept++] = v;
        }
    }
    g->crossing.len = kept;
}

static void gpu_var_free(rf_backend *be, rf_dvar *v)
{
    if (!v)
        return;
    if (v->down_done) {   /* its storage stays until its rows have crossed */
        RF_PUSH(impl_of(be)->crossing, v);
        return;
    }
    var_free_now(be, v);
}

static size_t gpu_var_rows(rf_backend *be, const rf_dvar *v)
{
    (void)be;
    return v->table_ok ? v->rel.nrows : v->nruns > 0 ? runs_rows(v) : v->set.nrows;
}

/* The table of v, expanded from its set or its runs merged into one when
 * it has none yet (a cache: the rows do not change, hence the const). */
static bool ensure_table(rf_backend *be, const rf_dvar *cv, rf_status *st)
{
    rf_dvar *v = (rf_dvar *)cv;
    if (!v || v->table_ok)
        return true;
    if (v->nruns > 0) {
        /* Smallest first: each merge is of runs of comparable size. */
        while (v->nruns > 1)
            if (!merge_last_runs(be, v, st))
                return false;
        rf_drel_free(ctx_of(be), &v->rel);
        v->rel = v->runs[0]->rel;
        v->rel_is_view = true;
        v->table_ok = true;
        impl_of(be)->runs_tables++;
        return true;
    }
    if (!rf_dset_expand(ctx_of(be), &v->set, &v->rel, "a relation held as a dense set", st))
        return false;
    impl_of(be)->dense_expands++;
    v->table_ok = true;
    return true;
}

/* v is about to be overwritten by a kernel that writes a table. */
static void becomes_table(rf_backend *be, rf_dvar *v)
{
    drop_set(be, v);
    drop_runs(be, v);
    v->table_ok = true;
    v->sorted_set = false;
    v->distinct = false;
    v->pending_sort = false;
}

/* Sorts the rows of a SORT left pending (struct rf_dvar), in place. */
static bool sort_pending(rf_backend *be, const rf_dvar *cv, rf_status *st)
{
    rf_dvar *v = (rf_dvar *)cv;
    if (!v || !v->pending_sort)
        return true;
    if (!rf_cuda_sort_unique(ctx_of(be), &v->rel, &v->rel, "a relation sorted late", st))
        return false;
    v->pending_sort = false;
    impl_of(be)->sorts_done_later++;
    return true;
}

/* Whether MAP k keeps every column of its input as a plain column, so that
 * distinct rows stay distinct. */
static bool map_keeps_columns(const rf_kernel *k, int arity)
{
    bool seen[RF_CUDA_MAX_COLS] = {false};
    int kept = 0;
    if (arity > RF_CUDA_MAX_COLS)
        return false;
    for (int j = 0; j < k->nproj; j++) {
        int c = rf_code_as_column(&k->proj[j]);
        if (c >= 0 && c < arity && !seen[c]) {
            seen[c] = true;
            kept++;
        }
    }
    return kept == arity;
}

/* Whether a JOIN's code reads a row position of either side. */
static bool join_reads_rowid(const rf_kernel *j)
{
    bool reads = rf_code_reads_rowid(&j->filter);
    for (int q = 0; q < j->nproj && !reads; q++)
        reads = rf_code_reads_rowid(&j->proj[q]);
    return reads;
}

/* Whether kernel k may read variable v's rows in any order: v is the probe
 * (left) side of a JOIN, or of the JOIN that heads a set gather (or of the
 * probe-side SORT before it, which gpu_run_set leaves out), and not also
 * its other side, and no code of the JOIN reads row numbers (which follow
 * the order). */
static bool reads_in_any_order(const rf_hprogram *p, const rf_kernel *k, int v)
{
    const rf_kernel *j = k;
    if (k->op == RF_K_FUSED) {
        const rf_fused *f = k->fused;
        if (k->gather != RF_GATHER_SET || f->nmembers < 2)
            return false;
        if (rf_fused_probe_sort(p, f)) {   /* the sorted side's rows by position: none (rf_fused_probe_sort) */
            /* x, whose SORT gpu_run_set leaves out, or y, the JOIN's other
             * side, which gpu_run_set sorts itself unless it probes with
             * y's rows (probe_with_other_side) */
            const rf_kernel *join = &f->members[1];
            bool x = f->members[0].in[0] == v, y = !x && join->in[1] == v && !join_reads_rowid(join);
            if (!x && !y)
                return false;
            for (int m = x ? 1 : 2; m < f->nmembers; m++)
                if (f->members[m].in[0] == v || f->members[m].in[1] == v)
                    return false;
            return true;
        }
        j = &f->members[0];
    }
    if (j->op != RF_K_JOIN || j->in[0] != v || j->in[1] == v || rf_code_reads_rowid(&j->filter))
        return false;
    for (int q = 0; q < j->nproj; q++)
        if (rf_code_reads_rowid(&j->proj[q]))
            return false;
    return true;
}

/* v about to take new rows (an upload): what it was goes. */
static bool upload_begins(rf_backend *be, rf_dvar *v, const rf_table *t, rf_status *st)
{
    if (t->arity != v->rel.arity)
        return rf_fail(st, RF_EXIT_RUNTIME_ERROR, "upload of arity %d into a relation of arity %d",
                       t->arity, v->rel.arity);
    settle(be, v);
    becomes_table(be, v);
    v->stamp = ++impl_of(be)->last_stamp;
    v->minus_stamp = 0;
    v->set_never = false;
    v->set_retry = 0;
    return true;
}

static bool gpu_upload(rf_backend *be, rf_dvar *v, const rf_table *t, rf_status *st)
{
    return upload_begins(be, v, t, st) && rf_drel_upload(ctx_of(be), &v->rel, t, "an input relation", st);
}

/* Double buffering of out-of-core parts (backend.h): the next part's rows
 * cross on the upload copy stream while the kernels of this one run. */
static bool gpu_upload_ahead(rf_backend *be, rf_dvar *v, const rf_table *t, rf_status *st)
{
    return upload_begins(be, v, t, st) &&
           rf_drel_upload_ahead(ctx_of(be), &v->rel, t, "an out-of-core part", &v->up_done, st);
}

/* An input file's rows, in file order: uploaded as they are, then sorted
 * and deduplicated on the device. */
static bool gpu_upload_unsorted(rf_backend *be, rf_dvar *v, const rf_table *t, rf_status *st)
{
    if (!upload_begins(be, v, t, st))
        return false;
    rf_cuda_ctx *c = ctx_of(be);
    rf_drel raw;
    rf_drel_init(&raw, t->arity);
    bool ok = rf_drel_upload(c, &raw, t, "an input relation", st) &&
              rf_cuda_sort_unique(c, &raw, &v->rel, "an input relation", st);
    v->distinct = ok;
    rf_drel_free(c, &raw);
    return ok;
}

/* A relation held as runs too large to merge on the device (out-of-core
 * runs spill such relations): its runs downloaded one by one and merged
 * on the host (disjoint and sorted, so the union is their merge). */
static bool download_runs(rf_backend *be, const rf_dvar *v, rf_table *t, rf_status *st)
{
    rf_table acc, run, merged;
    rf_table_init(&acc, t->arity);
    bool ok = true;
    for (int i = v->nruns; ok && i-- > 0;) {   /* smallest first */
        rf_table_init(&run, t->arity);
        ok = rf_drel_download(ctx_of(be), &v->runs[i]->rel, &run, st);
        if (ok && acc.nrows == 0) {   /* the first run is the merge so far: no copy */
            rf_table_free(&acc);
            acc = run;
            rf_table_init(&run, t->arity);
        } else if (ok) {
            rf_prim_union(&acc, &run, &merged);
            rf_table_free(&acc);
            acc = merged;
        }
        rf_table_free(&run);
    }
    if (ok)
        rf_table_move(t, &acc);
    rf_table_free(&acc);
    return ok;
}

static bool runs_download_apart(rf_backend *be, const rf_dvar *v, rf_table *t, rf_status *st);

static bool gpu_download(rf_backend *be, const rf_dvar *v, rf_table *t, rf_status *st)
{
    settle(be, v);
    bool apart = !v->table_ok && v->nruns > 1 && getenv("RF_TEST_GPU_RUNS_APART");
    if (apart || (!v->table_ok && v->nruns > 1 && !ensure_table(be, v, st))) {
        if (!apart && st->code != RF_EXIT_OUT_OF_MEMORY)
            return false;
        /* the runs do not fit merged: merged and downloaded a key range at
         * a time, else (a piece did not fit either) merged on the host */
        rf_status_init(st);
        if (runs_download_apart(be, v, t, st))
            return true;
        if (st->code != RF_EXIT_OUT_OF_MEMORY)
            return false;
        rf_status_init(st);
        int arity = t->arity;
        rf_table_free(t); /* its storage too: the host merge needs the memory */
        rf_table_init(t, arity);
        return download_runs(be, v, t, st);
    }
    return ensure_table(be, v, st) && sort_pending(be, v, st) && rf_drel_download(ctx_of(be), &v->rel, t, st);
}

/* Straight into t from row at on (the out-of-core parts' outputs, each in
 * its place in the whole output): the staging threads fault the pages in
 * once. A relation held as runs that do not merge on the device goes the
 * long way (a table of its own, then copied over). */
/* ahead: its rows cross on the download copy stream while the next part's
 * kernels run (in t once gpu_moves_wait returns). */
static bool download_at(rf_backend *be, const rf_dvar *cv, rf_table *t, size_t at, size_t *rows, bool ahead,
                        rf_status *st)
{
    rf_dvar *v = (rf_dvar *)cv;
    *rows = 0;
    if (ahead)
        reap(be, 2);   /* (two parts' outputs at most still on the device) */
    settle(be, v);
    if (!v->table_ok && v->nruns > 1)
        return rf_download_copy_at(be, v, t, at, rows, st);
    rf_cuda_ctx *c = ctx_of(be);
    if (!ensure_table(be, v, st) || !sort_pending(be, v, st) ||
        !(ahead ? rf_drel_download_at_ahead(c, &v->rel, t, at, &v->down_done, st)
                : rf_drel_download_at(c, &v->rel, t, at, st)))
        return false;
    *rows = v->rel.nrows;
    return true;
}

static bool gpu_download_at(rf_backend *be, const rf_dvar *v, rf_table *t, size_t at, size_t *rows, rf_status *st)
{
    return download_at(be, v, t, at, rows, false, st);
}

static bool gpu_download_at_ahead(rf_backend *be, const rf_dvar *v, rf_table *t, size_t at, size_t *rows,
                                  rf_status *st)
{
    return download_at(be, v, t, at, rows, true, st);
}

static bool gpu_moves_wait(rf_backend *be, rf_status *st)
{
    bool ok = rf_cuda_copies_wait(ctx_of(be), st);
    reap(be, 0);
    return ok;
}

/* ---- String order: ranks of dictionary ids by text, for typed compares ---- */

static bool code_compares_strings(const rf_code *c)
{
    for (int i = 0; c && i < c->n; i++)
        if (c->ins[i].op >= RF_EX_LT && c->ins[i].op <= RF_EX_GE && c->ins[i].arg_type == RF_TYPE_STRING)
            return true;
    return false;
}

static bool needs_string_order(const rf_kernel *k)
{
    if (code_compares_strings(&k->filter))
        return true;
    for (int i = 0; i < k->nproj; i++)
        if (code_compares_strings(&k->proj[i]))
            return true;
    for (int j = 0; k->op == RF_K_AGG && j < k->naggs; j++) {
        const rf_code *arg = &k->agg_arg[j];
        if ((k->aggfn[j] == RF_AGG_MIN || k->aggfn[j] == RF_AGG_MAX) && arg->n > 0 &&
            arg->ins[arg->n - 1].type == RF_TYPE_STRING)
            return true;
        if (code_compares_strings(arg))
            return true;
    }
    return false;
}

/* The dictionary only grows, so the table is rebuilt only when it has new
 * strings (rf_cuda_update_string_ranks). */
static bool refresh_string_order(rf_cuda_ctx *ctx, rf_status *st) { return rf_cuda_update_string_ranks(ctx, st); }

static size_t rel_bytes(const rf_dvar *v) { return v && v->table_ok ? v->rel.nrows * (size_t)v->rel.arity * 8 : 0; }

static dense_refusal *find_refusal(gpu_impl *g, const rf_kernel *k)
{
    for (int i = 0; i < g->nrefused; i++)
        if (g->refused[i].k == k)
            return &g->refused[i];
    return NULL;
}

static void refuse(gpu_impl *g, const rf_kernel *k, size_t retry_rows)
{
    dense_refusal *r = find_refusal(g, k);
    if (!r) {
        if (g->nrefused == g->caprefused) {
            g->caprefused = g->caprefused ? 2 * g->caprefused : 8;
            g->refused = rf_realloc(g->refused, (size_t)g->caprefused * sizeof *g->refused);
        }
        r = &g->refused[g->nrefused++];
        r->k = k;
    }
    r->retry_rows = retry_rows;
}

static const rf_drel **run_rels(const rf_dvar *v);

/* Once the device has run out of memory, a relation held as runs (a
 * loop's full relation) is given a dense set when the set is much smaller
 * than its rows (same generation on p2p-Gnutella31: 3.7G rows, 30 GB of
 * runs, a 512 MB bitmap): the DIFF then probes bits, and the UNION into
 * it makes a set alone, so the runs go. Its frame covers the incoming
 * set's, so that the DIFF compares the two bitmaps word by word. Only
 * under memory pressure: where everything fits, runs measured faster
 * (docs/performance.md). Declining is never an error. */
static bool set_of_runs(rf_backend *be, rf_dvar *full, const rf_dvar *incoming, rf_status *st)
{
    gpu_impl *g = impl_of(be);
    if (full->set_never || full->nruns < 1)
        return true;
    const rf_drel **rr = run_rels(full);
    rf_dset plan;
    bool fits = false;
    const rf_dset *cover = incoming && incoming->has_set ? &incoming->set : NULL;
    bool ok = rf_dset_plan_runs(ctx_of(be), rr, full->nruns, cover, RF_DSET_MAX_BITS, &plan, &fits, st);
    size_t rows_bytes = runs_rows(full) * (size_t)full->rel.arity * 8;
    if (ok && !fits) {
        full->set_never = true;
    } else if (ok && rf_dset_bytes(&plan) * RF_DENSE_RATIO <= rows_bytes) {
        rf_status quiet;
        rf_status_init(&quiet);
        if (rf_dset_build_runs(ctx_of(be), rr, full->nruns, &plan, "a dense set", &quiet)) {
            full->set = plan;
            full->has_set = true;
            g->sets_of_runs++;
        } else if (quiet.code != RF_EXIT_OUT_OF_MEMORY) {
            ok = rf_fail(st, quiet.code, "%s", quiet.message);
        }
    }
    free(rr);
    return ok;
}

/* Gives `full` (the right side of DIFF kernel k: a table, or runs once
 * the device is short of memory, set_of_runs) a dense set when the size
 * rule (RF_DENSE_RATIO, RF_DENSE_SMALL) says so. The frame covers `incoming` too, the rows the
 * next UNION will add, so that the set need not be rebuilt. Failing to
 * make one (a frame too wide, no memory for the bitmap) is not an error:
 * the merge path runs instead. */
static bool maybe_make_set(rf_backend *be, const rf_kernel *k, rf_dvar *full, const rf_dvar *incoming,
                           rf_status *st)
{
    gpu_impl *g = impl_of(be);
    if (g->dense_mode == 0 || full->has_set)
        return true;
    if (full->nruns > 0)
        return g->memory_short ? set_of_runs(be, full, incoming, st) : true;
    if (!full->table_ok || full->rel.arity < 1 || full->rel.nrows == 0)
        return true;
    bool always = g->dense_mode == 2;
    if (!always) {
        if (full->rel.nrows < RF_DENSE_MIN_ROWS)
            return true;
        dense_refusal *r = find_refusal(g, k);
        if (r && full->rel.nrows < r->retry_rows) {
            full->set_never = r->retry_rows == SIZE_MAX;
            full->set_retry = r->retry_rows == SIZE_MAX ? 0 : r->retry_rows;
            return true;
        }
    }
    rf_dset plan;
    bool fits;
    if (!rf_dset_plan(ctx_of(be), &full->rel, incoming && incoming->table_ok ? &incoming->rel : NULL,
                      RF_DSET_MAX_BITS, &plan, &fits, st))
        return false;
    if (!fits) {
        refuse(g, k, SIZE_MAX);
        full->set_never = true;
        return true;
    }
    size_t table = full->rel.nrows * (size_t)full->rel.arity * 8, bitmap = rf_dset_bytes(&plan);
    if (!always && bitmap > RF_DENSE_SMALL && bitmap > RF_DENSE_RATIO * table) {
        size_t retry = bitmap / (RF_DENSE_RATIO * (size_t)full->rel.arity * 8) + 1;
        refuse(g, k, retry);
        full->set_retry = retry;
        return true;
    }
    rf_status quiet = {0};
    if (!rf_dset_build(ctx_of(be), &full->rel, &plan, "a dense set", &quiet)) {
        if (quiet.code != RF_EXIT_OUT_OF_MEMORY)
            return rf_fail(st, quiet.code, "%s", quiet.message);
        refuse(g, k, 2 * full->rel.nrows);
        return true;
    }
    full->set = plan;
    full->has_set = true;
    return true;
}

static diff_frame *find_frame(gpu_impl *g, int var)
{
    for (int i = 0; i < g->nframes; i++)
        if (g->frames[i].var == var)
            return &g->frames[i];
    return NULL;
}

static void remember_frame(gpu_impl *g, int var, const rf_dset *s)
{
    diff_frame *f = find_frame(g, var);
    if (!f) {
        if (g->nframes == g->capframes) {
            g->capframes = g->capframes ? 2 * g->capframes : 8;
            g->frames = rf_realloc(g->frames, (size_t)g->capframes * sizeof *g->frames);
        }
        f = &g->frames[g->nframes++];
        f->var = var;
    }
    f->frame = *s;
    f->frame.words = NULL;
    f->frame.nwords = 0;
}

/* DIFF out := a - b through b's dense set; false in *done when b has none. */
static bool dense_diff(rf_backend *be, const rf_kernel *k, rf_dvar *out, rf_dvar *a, rf_dvar *b, const char *what,
                       bool *done, rf_kernel_stats *stats, rf_status *st)
{
    *done = false;
    gpu_impl *g = impl_of(be);
    /* Short of memory, a set a and b held as runs: b's set first, in a
     * frame covering a's, so that a is never expanded. */
    if (g->memory_short && a->has_set && !a->table_ok && b->nruns > 0 && !maybe_make_set(be, k, b, a, st))
        return false;
    /* Both sides bitmaps in one frame (a from a join into a set planned in
     * b's frame): expand the bits of a that b lacks, nothing else. */
    if (a->has_set && !a->table_ok && b->has_set && rf_dset_same_frame(&a->set, &b->set)) {
        rf_drel res;
        rf_drel_init(&res, a->rel.arity);
        if (!rf_dset_difference_sets(ctx_of(be), &a->set, &b->set, &res, what, st))
            return false;
        becomes_table(be, out);
        rf_drel_move(ctx_of(be), &out->rel, &res);
        g->dense_diffs++;
        g->dense_set_diffs++;
        remember_frame(g, k->in[0], &b->set);
        stats->bytes_moved = 2 * rf_dset_bytes(&a->set) + rel_bytes(out);
        *done = true;
        return true;
    }
    if (!ensure_table(be, a, st) || !maybe_make_set(be, k, b, a, st))
        return false;
    if (!b->has_set)
        return true;
    remember_frame(g, k->in[0], &b->set);
    becomes_table(be, out);
    if (!rf_dset_difference(ctx_of(be), &a->rel, &b->set, &out->rel, what, st))
        return false;
    impl_of(be)->dense_diffs++;
    /* Reads a, one bitmap word per row of a, a flag and position per row,
     * writes out. */
    stats->bytes_moved = rel_bytes(a) + a->rel.nrows * (8 + 1 + 8) + rel_bytes(out);
    *done = true;
    return true;
}

/* UNION out := a + b where one side has a dense set: the set is copied and
 * the other side's rows are set in it. false in *done when neither has a
 * set or a row falls outside the frame (the merge path runs instead). */
static bool dense_union(rf_backend *be, rf_dvar *out, rf_dvar *a, rf_dvar *b, const char *what, bool *done,
                        rf_kernel_stats *stats, rf_status *st)
{
    *done = false;
    /* The set of the larger side (the full relation) takes the other's
     * rows: never the full relation made rows to go into the small one. */
    rf_dvar *s = a->has_set && (!b->has_set || gpu_var_rows(be, a) >= gpu_var_rows(be, b)) ? a
                 : b->has_set                                                              ? b
                                                                                            : NULL;
    if (!s || impl_of(be)->dense_mode == 0)
        return true;
    rf_dvar *o = s == a ? b : a;
    if (o->nruns > 0 && !o->table_ok && !o->has_set && impl_of(be)->memory_short)
        return true; /* no merging of a large relation's runs when short of memory: the runs union */
    if (!ensure_table(be, o, st))
        return false;
    rf_dset res;
    rf_dset_init(&res);
    bool fits;
    if (!rf_dset_union(ctx_of(be), &s->set, &o->rel, &res, &fits, what, st))
        return false;
    if (!fits) {
        impl_of(be)->dense_fallbacks++;
        return true;
    }
    rf_drel_free(ctx_of(be), &out->rel);
    drop_set(be, out);
    out->set = res;
    out->has_set = true;
    out->table_ok = false;
    impl_of(be)->dense_unions++;
    stats->bytes_moved = 2 * rf_dset_bytes(&res) + rel_bytes(o) + o->rel.nrows * 8;
    *done = true;
    return true;
}

/* String functions in a join's filter keep it off the dense path (their
 * tables, or the host, are the plain join's business). */
static bool filter_has_string_function(const rf_code *c)
{
    for (int i = 0; c && i < c->n; i++)
        if (c->ins[i].op < RF_EX_COUNT_ && rf_exop_is_string_op((rf_exop)c->ins[i].op))
            return true;
    return false;
}

static bool kernel_frees(const rf_kernel *k, int var)
{
    for (int i = 0; i < k->nfree; i++)
        if (k->frees[i] == var)
            return true;
    return false;
}

/* A set gather's JOIN into a dense set: its pairs set bits instead of
 * being written, and the set is `out`, the result of the group's SORT
 * (sorted and distinct by construction; the rows are internal to the
 * group, so their order and repetitions are nobody's business). Needs
 * plain-column projections and a frame of at most RF_DSET_MAX_BITS bits.
 * Run only with RF_CUDA_DENSE=always (gpu_run_set says why; the bitmap-size
 * rule below is the former auto mode's). `hint`: the frame the DIFF reading `out` last saw (or NULL), in
 * which the set is planned when it fits, so that the DIFF compares
 * bitmaps. Declining is never an error: *done stays false and the caller
 * writes the rows and sorts them. */
static bool dense_join(rf_backend *be, const rf_kernel *k, rf_dvar *out, rf_dvar *l, rf_dvar *r,
                       const rf_dset *hint, bool any_size, const char *what, bool *done, rf_kernel_stats *stats,
                       rf_status *st)
{
    *done = false;
    gpu_impl *g = impl_of(be);
    if (g->dense_mode == 0 || k->op != RF_K_JOIN || !l || !r || k->nproj < 1 || k->nproj > RF_CUDA_MAX_COLS ||
        filter_has_string_function(&k->filter))
        return true;
    int src[RF_CUDA_MAX_COLS];
    for (int i = 0; i < k->nproj; i++) {
        const rf_code *c = &k->proj[i];
        if (c->n != 1 || c->ins[0].op != RF_EX_COL)
            return true;
        src[i] = c->ins[0].index;
    }
    if (!ensure_table(be, l, st) || !ensure_table(be, r, st))
        return false;
    if (l->rel.nrows == 0 || r->rel.nrows == 0)
        return true;
    rf_dset plan;
    bool fits;
    if (!rf_dset_plan_join(ctx_of(be), &l->rel, &r->rel, k->nproj, src, hint, RF_DSET_MAX_BITS, &plan, &fits, st))
        return false;
    size_t bitmap = rf_dset_bytes(&plan);
    if (!fits || (g->dense_mode != 2 && !any_size && bitmap > RF_DENSE_SMALL && bitmap / 16 > l->rel.nrows))
        return true;
    rf_status quiet = {0};
    if (!rf_cuda_join_to_set(ctx_of(be), &l->rel, &r->rel, k->nkeys, &k->filter, src, &plan, what, &quiet)) {
        if (quiet.code != RF_EXIT_OUT_OF_MEMORY)
            return rf_fail(st, quiet.code, "%s", quiet.message);
        return true; /* no room for the bitmap: the sort path runs */
    }
    rf_drel_free(ctx_of(be), &out->rel);
    rf_drel_init(&out->rel, k->nproj);
    drop_set(be, out);
    out->set = plan;
    out->has_set = true;
    out->table_ok = false;
    g->dense_joins++;
    stats->rows_in[0] = l->rel.nrows;
    stats->rows_in[1] = r->rel.nrows;
    stats->bytes_moved = rel_bytes(l) + rel_bytes(r) + 2 * bitmap;
    *done = true;
    return true;
}

/* SORT of a variable held only as a set: the set is the answer (sorted and
 * distinct by construction); taken over when the SORT frees its input. */
static bool sort_of_set(rf_backend *be, const rf_kernel *k, rf_dvar *out, rf_dvar *in, const char *what,
                        bool *done, rf_kernel_stats *stats, rf_status *st)
{
    *done = false;
    if (!in->has_set || in->table_ok || in == out)
        return true;
    rf_dset res;
    rf_dset_init(&res);
    if (kernel_frees(k, k->in[0])) {
        res = in->set;
        rf_dset_init(&in->set);
        in->has_set = false;
        in->table_ok = true; /* empty, and freed right after */
    } else if (!rf_dset_copy(ctx_of(be), &in->set, &res, what, st)) {
        return false;
    }
    rf_drel_free(ctx_of(be), &out->rel);
    rf_drel_init(&out->rel, res.arity);
    drop_set(be, out);
    out->set = res;
    out->has_set = true;
    out->table_ok = false;
    stats->bytes_moved = 0;
    *done = true;
    return true;
}

/* MAP of a variable held only as a set, with no filter and plain-column
 * projections: the set expands straight into the projected columns (one
 * write of the output instead of expanding, reading and writing again). */
static bool map_of_set(rf_backend *be, const rf_kernel *k, rf_dvar *out, rf_dvar *in, const char *what, bool *done,
                       rf_kernel_stats *stats, rf_status *st)
{
    *done = false;
    if (!in->has_set || in->table_ok || in == out || k->filter.n > 0 || k->nproj < 1 ||
        k->nproj > RF_CUDA_MAX_COLS)
        return true;
    int src[RF_CUDA_MAX_COLS];
    for (int i = 0; i < k->nproj; i++) {
        const rf_code *c = &k->proj[i];
        if (c->n != 1 || c->ins[0].op != RF_EX_COL || c->ins[0].index >= in->set.arity)
            return true;
        src[i] = c->ins[0].index;
    }
    rf_drel res;
    rf_drel_init(&res, k->nproj);
    if (!rf_dset_expand_proj(ctx_of(be), &in->set, k->nproj, src, &res, what, st))
        return false;
    becomes_table(be, out);
    rf_drel_move(ctx_of(be), &out->rel, &res);
    impl_of(be)->dense_expands++;
    stats->bytes_moved = rf_dset_bytes(&in->set) + rel_bytes(out);
    *done = true;
    return true;
}

/* The run storage of rels of v's runs, for the difference. */
static const rf_drel **run_rels(const rf_dvar *v)
{
    const rf_drel **rr = rf_malloc((size_t)v->nruns * sizeof *rr);
    for (int i = 0; i < v->nruns; i++)
        rr[i] = &v->runs[i]->rel;
    return rr;
}

/* UNION out := a + b with the larger side (the full relation) as runs:
 * out shares its runs and adds the other side's new rows as one run,
 * merged with the runs of comparable size. The larger side is made runs
 * here when it has none (its table becomes its one run; it keeps a view).
 * False in *done when the path does not apply (RF_CUDA_RUNS=off, a side
 * held as a dense set, a small full side under auto). */
static bool runs_union(rf_backend *be, const rf_kernel *k, rf_dvar *out, rf_dvar *a, rf_dvar *b,
                       const char *what, bool *done, rf_kernel_stats *stats, rf_status *st)
{
    gpu_impl *g = impl_of(be);
    rf_cuda_ctx *ctx = ctx_of(be);
    *done = false;
    if (g->runs_mode == 0 || a == b || out == a || out == b || a->rel.arity != b->rel.arity || a->rel.arity == 0)
        return true;
    /* The full side: the one held as runs, else the one the other side was
     * subtracted from (`full ∪ (new − full)`), else the larger (a first
     * iteration's new rows can outnumber the relation they extend). */
    size_t na = gpu_var_rows(be, a), nb = gpu_var_rows(be, b);
    rf_dvar *full = (a->nruns > 0) != (b->nruns > 0) ? (a->nruns > 0 ? a : b)
                    : b->minus_stamp != 0 && b->minus_stamp == a->stamp ? a
                    : a->minus_stamp != 0 && a->minus_stamp == b->stamp ? b
                    : na >= nb ? a : b;
    rf_dvar *news = full == a ? b : a;
    int news_var = full == a ? k->in[1] : k->in[0];
    if (full->has_set || (news->has_set && full->nruns == 0))
        return true; /* the dense set's business (it declined: the merge below) */
    if (full->nruns == 0 && g->dense_mode != 0 &&
        ((full->set_retry > 0 && !full->set_never) || (news->set_retry > 0 && !news->set_never)))
        return true; /* a dense set is tried again as the rows grow: it wins where it fits */
    if (full->nruns == 0 && g->runs_mode == 1 && full->rel.nrows < RF_RUNS_MIN_ROWS)
        return true;
    /* A relation held as one run or none, whose new rows (not known
     * disjoint from it) would be merged into it at once by the rule below
     * (it has at most twice their rows), gains nothing from runs: the plain
     * UNION's one merge drops the repeated rows itself, where the runs
     * would first subtract them (a search a row and a compaction: 0.3 ms of
     * R-MAT 20's `uedge` on an H200) and then merge. */
    bool disjoint = news->minus_stamp != 0 && news->minus_stamp == full->stamp;
    if (full->nruns <= 1 && g->runs_mode == 1 && !disjoint && gpu_var_rows(be, full) <= 2 * gpu_var_rows(be, news))
        return true;
    if (!ensure_table(be, news, st))
        return false;
    if (full->nruns == 0) {
        /* Same rows, same stamp: only the representation changes. */
        rel_run *r = run_take(be, &full->rel);
        runs_push(full, r);
        full->rel = r->rel;
        full->rel_is_view = true;
        full->table_ok = true;
    }
    rf_drel fresh;
    rf_drel_init(&fresh, news->rel.arity);
    if (disjoint) {
        /* news = something − full: nothing to remove. Its storage is taken
         * when the runtime frees it right after this kernel. */
        if (news_var >= 0 && kernel_frees(k, news_var) && !news->rel_is_view)
            rf_drel_move(ctx, &fresh, &news->rel);
        else if (!rf_drel_copy(ctx, &fresh, &news->rel, what, st))
            return false;
        fresh.arity = news->rel.arity;
        g->runs_disjoint++;
    } else {
        const rf_drel **rr = run_rels(full);
        bool ok = rf_cuda_difference_runs(ctx, &news->rel, rr, full->nruns, &fresh, what, st);
        free(rr);
        if (!ok) {
            rf_drel_free(ctx, &fresh);
            return false;
        }
    }
    size_t fresh_rows = fresh.nrows;
    becomes_table(be, out);
    rf_drel_free(ctx, &out->rel);
    for (int i = 0; i < full->nruns; i++) {
        full->runs[i]->refs++;
        runs_push(out, full->runs[i]);
    }
    if (fresh.nrows > 0)
        runs_push(out, run_take(be, &fresh));
    else
        rf_drel_free(ctx, &fresh);
    /* Binary-counter merging: the new run joins the one above while that
     * one is at most twice its size (the sizes then at least halve from
     * one run to the next: O(log n) runs). */
    size_t merged_rows = 0;
    while (out->nruns >= 2 && out->runs[out->nruns - 2]->rel.nrows <= 2 * out->runs[out->nruns - 1]->rel.nrows) {
        size_t both = out->runs[out->nruns - 2]->rel.nrows + out->runs[out->nruns - 1]->rel.nrows;
        if (!merge_last_runs(be, out, st)) {
            if (st->code != RF_EXIT_OUT_OF_MEMORY)
                return false;
            /* No room to merge beside them (same generation on usroads on
             * an 80 GB card): the runs stay as they are, one more for the
             * DIFF to probe; they merge when there is room again. */
            rf_status_init(st);
            g->memory_short = true;
            g->runs_merges_put_off++;
            break;
        }
        merged_rows += both;
    }
    out->table_ok = out->nruns == 0;
    if (out->nruns == 1) {
        out->rel = out->runs[0]->rel;
        out->rel_is_view = true;
        out->table_ok = true;
    }
    g->runs_unions++;
    size_t row_bytes = (size_t)news->rel.arity * 8;
    /* news read once per run probed (or copied), the new run written, each
     * merge reading both runs and writing their rows. */
    stats->bytes_moved = news->rel.nrows * row_bytes * (size_t)(full->nruns + 1) + fresh_rows * row_bytes +
                         2 * merged_rows * row_bytes;
    *done = true;
    return true;
}

/* DIFF out := a − b with b held as runs: a probes every run (one
 * compaction), b is never merged. */
static bool runs_diff(rf_backend *be, rf_dvar *out, rf_dvar *a, rf_dvar *b, const char *what, bool *done,
                      rf_kernel_stats *stats, rf_status *st)
{
    *done = false;
    if (b->nruns == 0 || a == b || out == a || out == b || a->rel.arity != b->rel.arity)
        return true;
    if (!ensure_table(be, a, st))
        return false;
    rf_drel res;
    rf_drel_init(&res, a->rel.arity);
    const rf_drel **rr = run_rels(b);
    bool ok = rf_cuda_difference_runs(ctx_of(be), &a->rel, rr, b->nruns, &res, what, st);
    free(rr);
    if (!ok) {
        rf_drel_free(ctx_of(be), &res);
        return false;
    }
    becomes_table(be, out);
    rf_drel_move(ctx_of(be), &out->rel, &res);
    out->rel.arity = a->rel.arity;
    impl_of(be)->runs_diffs++;
    stats->bytes_moved = rel_bytes(a) * (size_t)(b->nruns + 1) + a->rel.nrows * (1 + 8) + rel_bytes(out);
    *done = true;
    return true;
}

/* COPY out := a with a held as runs: the runs are shared, not copied. */
static bool runs_copy(rf_backend *be, rf_dvar *out, rf_dvar *a, bool *done)
{
    *done = false;
    if (a->nruns == 0 || out == a)
        return true;
    becomes_table(be, out);
    rf_drel_free(ctx_of(be), &out->rel);
    for (int i = 0; i < a->nruns; i++) {
        a->runs[i]->refs++;
        runs_push(out, a->runs[i]);
    }
    out->table_ok = a->table_ok;
    if (a->table_ok) { /* one run, viewed */
        out->rel = out->runs[0]->rel;
        out->rel_is_view = true;
    }
    *done = true;
    return true;
}

static bool gpu_run_plain(rf_backend *be, const rf_hprogram *p, const rf_kernel *k, rf_dvar *out,
                          rf_dvar *in0, rf_dvar *in1, rf_kernel_stats *stats, rf_status *st)
{
    rf_cuda_ctx *ctx = ctx_of(be);
    const char *what = (k->out >= 0 && k->out < p->nvars && p->vars[k->out].name) ? p->vars[k->out].name : "?";
    memset(stats, 0, sizeof *stats);
    /* A variable never defined reads as empty (as on the CPU backend). */
    rf_dvar empty0, empty1;
    if (!in0 && k->in[0] >= 0 && k->in[0] < p->nvars) {
        memset(&empty0, 0, sizeof empty0);
        rf_drel_init(&empty0.rel, p->vars[k->in[0]].arity);
        empty0.table_ok = true;
        in0 = &empty0;
    }
    if (!in1 && k->in[1] >= 0 && k->in[1] < p->nvars) {
        memset(&empty1, 0, sizeof empty1);
        rf_drel_init(&empty1.rel, p->vars[k->in[1]].arity);
        empty1.table_ok = true;
        in1 = &empty1;
    }
    if ((k->op != RF_K_CLEAR && !in0) ||
        ((k->op == RF_K_JOIN || k->op == RF_K_ANTIJOIN || k->op == RF_K_UNION || k->op == RF_K_DIFF) && !in1))
        return rf_fail(st, RF_EXIT_RUNTIME_ERROR, "kernel op %d for %s lacks an input", (int)k->op, what);
    if (k->op == RF_K_COPY && out == in0)
        return true;
    stats->rows_in[0] = in0 ? gpu_var_rows(be, in0) : 0;
    stats->rows_in[1] = in1 ? gpu_var_rows(be, in1) : 0;
    if (needs_string_order(k) && !refresh_string_order(ctx, st))
        return false;
    if (!rf_cuda_timer_start(ctx, st))
        return false;
    bool ok = true, done = false;
    if (k->op == RF_K_DIFF && in0->rel.arity == in1->rel.arity && impl_of(be)->dense_mode != 0)
        ok = dense_diff(be, k, out, in0, in1, what, &done, stats, st);
    else if (k->op == RF_K_UNION && in0->rel.arity == in1->rel.arity)
        ok = dense_union(be, out, in0, in1, what, &done, stats, st);
    else if (k->op == RF_K_SORT)
        ok = sort_of_set(be, k, out, in0, what, &done, stats, st);
    else if (k->op == RF_K_MAP)
        ok = map_of_set(be, k, out, in0, what, &done, stats, st);
    if (ok && !done && k->op == RF_K_UNION)
        ok = runs_union(be, k, out, in0, in1, what, &done, stats, st);
    else if (ok && !done && k->op == RF_K_DIFF)
        ok = runs_diff(be, out, in0, in1, what, &done, stats, st);
    else if (ok && !done && k->op == RF_K_COPY)
        ok = runs_copy(be, out, in0, &done);
    if (ok && !done) {
        /* Every other kernel reads and writes tables. */
        ok = ensure_table(be, in0, st) && ensure_table(be, in1, st);
        if (ok && k->op != RF_K_CLEAR)
            becomes_table(be, out);
        size_t bytes_in = rel_bytes(in0) + rel_bytes(in1);
        if (ok) {
            switch (k->op) {
            case RF_K_MAP:
                ok = rf_cuda_map(ctx, &in0->rel, &k->filter, k->nproj, k->proj, &out->rel, what, st);
                break;
            case RF_K_SORT:
                if (in0 && in0->sorted_set) {
                    /* moved where this SORT frees its input (a MULTIJOIN's
                     * listing sorted for its relation: R-MAT 20's 3.4 GB
                     * copied took 1.6 ms of its 36 ms triangle count on an
                     * H200) */
                    if (in0 != out && !in0->rel_is_view && k->in[0] >= 0 && kernel_frees(k, k->in[0]))
                        rf_drel_move(ctx, &out->rel, &in0->rel);
                    else
                        ok = rf_drel_copy(ctx, &out->rel, &in0->rel, what, st);
                } else if (in0 && in0 != out && in0->distinct && !in0->pending_sort && !in0->rel_is_view &&
                           impl_of(be)->pending_sorts) {
                    /* Left pending (struct rf_dvar): the rows are taken as
                     * they are, moved when the input is freed after this. */
                    if (k->in[0] >= 0 && kernel_frees(k, k->in[0]))
                        rf_drel_move(ctx, &out->rel, &in0->rel);
                    else
                        ok = rf_drel_copy(ctx, &out->rel, &in0->rel, what, st);
                    out->pending_sort = ok;
                    impl_of(be)->sorts_left += ok;
                } else {
                    ok = rf_cuda_sort_unique(ctx, &in0->rel, &out->rel, what, st);
                }
                break;
            case RF_K_JOIN:
                ok = rf_cuda_join(ctx, &in0->rel, &in1->rel, k->nkeys, &k->filter, k->nproj, k->proj,
                                  &out->rel, what, st);
                break;
            case RF_K_ANTIJOIN:
                ok = rf_cuda_antijoin(ctx, &in0->rel, &in1->rel, k->nkeys, &out->rel, what, st);
                break;
            case RF_K_UNION:
                ok = rf_cuda_union(ctx, &in0->rel, &in1->rel, &out->rel, what, st);
                break;
            case RF_K_DIFF:
                ok = rf_cuda_difference(ctx, &in0->rel, &in1->rel, &out->rel, what, st);
                break;
            case RF_K_AGG: {
                if (k->out < 0 || k->out >= p->nvars || !p->vars[k->out].types ||
                    k->nkeys + k->naggs != p->vars[k->out].arity) {
                    ok = rf_fail(st, RF_EXIT_RUNTIME_ERROR, "aggregate into %s of another arity", what);
                    break;
                }
                ok = rf_cuda_aggregate_multi(ctx, &in0->rel, k->nkeys, k->naggs, k->aggfn,
                                             p->vars[k->out].types + k->nkeys, k->agg_arg, &out->rel, what, st);
                break;
            }
            case RF_K_COPY:
                ok = rf_drel_copy(ctx, &out->rel, &in0->rel, what, st);
                break;
            case RF_K_CLEAR: {
                int arity = out->rel.arity;
                rf_drel_free(ctx, &out->rel);
                rf_drel_init(&out->rel, arity);
                becomes_table(be, out);
                break;
            }
            default:
                ok = rf_fail(st, RF_EXIT_RUNTIME_ERROR, "the GPU backend cannot run kernel op %d", (int)k->op);
                break;
            }
        }
        stats->bytes_moved = bytes_in + rel_bytes(out);
    }
    double secs = 0;
    /* Stop the timer even after a failure so the next start pairs up. */
    bool timed = rf_cuda_timer_stop(ctx, &secs, ok ? st : &(rf_status){0});
    if (!ok || !timed)
        return false;
    stats->seconds = secs;
    stats->rows_out = gpu_var_rows(be, out);
    return true;
}

/* The input of the group that variable v is (NULL: never written). */
static rf_dvar *group_input(const rf_kernel *fk, rf_dvar *const *ins, int v)
{
    for (int i = 0; i < fk->fused->nin; i++)
        if (fk->fused->in[i] == v)
            return ins[i];
    return NULL;
}

/* The reducing gather's arguments over the composed chain's input rows
 * (args[j] empty for a count); false when one cannot be (the caller's
 * other path then runs). */
static bool reduce_args(const rf_kernel *chain, const rf_kernel *agg, rf_code *args)
{
    if (agg->naggs > RF_CUDA_MAX_COLS)
        return false;
    for (int j = 0; j < agg->naggs; j++) {
        args[j] = (rf_code){0, NULL};
        if (agg->aggfn[j] != RF_AGG_COUNT && !rf_fused_compose_arg(chain, &agg->agg_arg[j], &args[j])) {
            for (int x = 0; x < j; x++)
                rf_code_free(&args[x]);
            return false;
        }
    }
    return true;
}

/* A group of several outputs: MAPs of one input (each branch composed)
 * in one generated pass, rf_cuda_select_many; anything else, or any
 * error, runs as the members. */
static rf_run_result gpu_run_branches(rf_backend *be, const rf_hprogram *p, const rf_kernel *fk,
                                      rf_dvar *const *outs, rf_dvar *const *ins, rf_kernel_stats *stats)
{
    gpu_impl *g = impl_of(be);
    const rf_fused *f = fk->fused;
    int ends[RF_KERNEL_VARS_MAX];
    int nb = rf_fused_branches(fk, ends), made = 0;
    if (!g->fuse_codegen || nb < 2 || nb > RF_SELECT_MANY_MAX)
        return RF_RUN_MEMBERS;
    rf_kernel maps[RF_SELECT_MANY_MAX];
    const rf_code *filters[RF_SELECT_MANY_MAX], *projs[RF_SELECT_MANY_MAX];
    int nprojs[RF_SELECT_MANY_MAX];
    rf_drel *rels[RF_SELECT_MANY_MAX];
    bool ok = true;
    for (int x = 0; x < nb && ok; x++) {
        ok = rf_fused_compose(p, fk, x ? ends[x - 1] + 1 : 0, ends[x], &maps[x]);
        made += ok;
        int slot = 0;
        while (ok && slot < f->nout && f->out[slot] != maps[x].out)
            slot++;
        ok = ok && maps[x].op == RF_K_MAP && maps[x].in[0] == maps[0].in[0] && slot < f->nout &&
             maps[x].nproj == p->vars[maps[x].out].arity;
        if (ok) {
            filters[x] = &maps[x].filter;
            projs[x] = maps[x].proj;
            nprojs[x] = maps[x].nproj;
            rels[x] = &outs[slot]->rel;
        }
    }
    rf_status local;
    rf_status_init(&local);
    rf_dvar *in = ok ? group_input(fk, ins, maps[0].in[0]) : NULL;
    bool done = false;
    double secs = 0;
    /* String comparisons read the ranks of the dictionary's strings, which
     * must cover the strings interned since they were last made (as for an
     * unfused MAP: gpu_run_plain). */
    for (int x = 0; x < nb && ok; x++)
        if (needs_string_order(&maps[x]))
            ok = refresh_string_order(ctx_of(be), &local);
    if (ok && in && ensure_table(be, in, &local) && rf_cuda_timer_start(ctx_of(be), &local)) {
        ok = rf_cuda_select_many(ctx_of(be), &in->rel, nb, filters, nprojs, projs, rels, &done,
                                 p->vars[f->out[0]].name ? p->vars[f->out[0]].name : "?", &local);
        bool timed = rf_cuda_timer_stop(ctx_of(be), &secs, ok ? &local : &(rf_status){0});
        done = ok && timed && done;
    }
    if (done) {
        memset(stats, 0, sizeof *stats);
        stats->seconds = secs;
        stats->rows_in[0] = gpu_var_rows(be, in);
        stats->bytes_moved = rel_bytes(in);
        for (int x = 0; x < f->nout; x++) {
            becomes_table(be, outs[x]);
            stats->rows_out += gpu_var_rows(be, outs[x]);
            stats->bytes_moved += rel_bytes(outs[x]);
        }
    }
    for (int x = 0; x < made; x++)
        rf_kernel_free(&maps[x]);
    return done ? RF_RUN_DONE : RF_RUN_MEMBERS;
}

/* A set gather (`t := JOIN ...[; MAPs]; s := SORT t`, the semi-naive
 * step's join and dedup): the chain composed into the one JOIN it equals,
 * its rows written and sorted by the SORT member: a lone JOIN exactly as
 * unfused, a longer chain as the generated kernel of a thread chain. With
 * RF_CUDA_DENSE=always the pairs go straight into a dense set that is s
 * when the frame fits (dense_join). Not by default: on the H100 (session
 * 21, docs/performance.md) writing and sorting was faster than the set on
 * 13 of 14 tc/sg runs, by up to 1.8x (the set's atomics on the hot words of
 * skewed graphs, and the expansions of the set that the next JOIN and DIFF
 * need); choosing per call by the gather's own measured time did not help
 * (the expansions are paid elsewhere), and even planning the set's frame
 * costs a host wait per iteration. Any error is left to the members, which
 * give the one --no-fuse gives. */
static set_history *set_history_of(gpu_impl *g, int var)
{
    for (int i = 0; i < g->nset_hist; i++)
        if (g->set_hist[i].var == var)
            return &g->set_hist[i];
    g->set_hist = rf_realloc(g->set_hist, (size_t)(g->nset_hist + 1) * sizeof *g->set_hist);
    g->set_hist[g->nset_hist] = (set_history){.var = var};
    return &g->set_hist[g->nset_hist++];
}

/* Auto: whether a set gather goes into a dense set. Writing and sorting
 * costs about a row's bytes for every row the JOIN makes, the set an
 * atomic OR per row and then expansions; where the JOIN makes many rows
 * per distinct one (dense social graphs: same generation on ego-Facebook,
 * 9.6 GB of rows written at its peak), the set wins. Judged from the
 * gather's last written call, so the first call writes. The default
 * ratio, 8, was measured on the H100 (docs/performance.md, 2026-11-27
 * third session): sg ego-Facebook 0.134 -> 0.080 s, tc wiki-Vote 0.058 ->
 * 0.042 s; at 8 no other shared graph's TC or SG took the set (16 missed
 * ego's largest iterations; 4 helped loc-Brightkite more but was not
 * measured on the large graphs). RF_DENSE_DUP_MIN_ROWS: small joins keep
 * writing (no host wait to plan a frame). */
#define RF_DENSE_DUP_MIN_ROWS (1u << 22)
static bool set_gather_dense(gpu_impl *g, int var)
{
    if (g->dense_mode == 2)
        return true;
    if (g->dense_mode == 0 || g->dense_dup_ratio <= 0)
        return false;
    const set_history *h = set_history_of(g, var);
    if (h->rows_too_many)
        return true;
    return h->join_rows >= RF_DENSE_DUP_MIN_ROWS &&
           (double)h->join_rows >= g->dense_dup_ratio * (double)(h->set_rows ? h->set_rows : 1);
}

/* The member a set gather's row chain starts at: 1 after its JOIN's
 * probe-side SORT (rf_fused_probe_sort), which the GPU does not run: its
 * join searches the other side for each probe row, in any order
 * (join_candidates), and the gather's SORT orders and deduplicates the
 * rows made. */
static int set_gather_first(const rf_hprogram *p, const rf_fused *f)
{
    return rf_fused_probe_sort(p, f) ? 1 : 0;
}

/* The set gather's probe side in key order, for the dense join (which is
 * not tested on rows out of order) and for the JOIN searching it when the
 * sides are swapped (probe_with_other_side): a pending SORT done, or, after
 * a probe-side SORT left out, that SORT (member 0) run into *sorted (the
 * caller frees it) and done there too: a SORT of distinct rows is left
 * pending by gpu_run_plain, and a search of its rows as they came missed
 * matches (wcoj_diff.py seed 41's program 5 lost 2 of its 3 rows). */
static bool probe_side_in_order(rf_backend *be, const rf_hprogram *p, const rf_kernel *fk, int first, rf_dvar **in0,
                                rf_dvar **sorted, rf_status *st)
{
    if (first == 0)
        return sort_pending(be, *in0, st);
    if (*sorted)
        return true;
    const rf_kernel *sortk = &fk->fused->members[0];
    rf_kernel_stats ss;
    memset(&ss, 0, sizeof ss);
    *sorted = gpu_var_new(be, p->vars[sortk->out].arity, st);
    if (!*sorted || !sort_pending(be, *in0, st) || !gpu_run_plain(be, p, sortk, *sorted, *in0, NULL, &ss, st) ||
        !sort_pending(be, *sorted, st))
        return false;
    *in0 = *sorted;
    return true;
}

/* The side whose rows a set gather's JOIN chain keeps whole
 * (rf_join_kept_side), or -1: its set is those of the side's rows that
 * have a passing match, in the side's order, each once (rf_cuda_semijoin:
 * no pair written, nothing sorted). Q21's other_supplier and other_late
 * (SF 10: 240M pairs made and sorted for 58M rows). Not with string
 * functions in the filter (rf_cuda_semijoin tabulates none). */
static int semijoin_side(const rf_hprogram *p, const rf_kernel *chain, int in0_var, int in1_var)
{
    if (in0_var < 0 || in1_var < 0 || filter_has_string_function(&chain->filter))
        return -1;
    return rf_join_kept_side(chain, p->vars[in0_var].arity, p->vars[in1_var].arity);
}

/* The set gather as a semi-join (semijoin_side), where it applies:
 * *done. The first input's rows must be in key order when they are the
 * ones kept (not a probe side left unsorted, not a pending SORT). */
static bool semijoin_set(rf_backend *be, const rf_hprogram *p, const rf_kernel *chain, int first, int probe_var,
                         rf_dvar *out, rf_dvar *in0, rf_dvar *in1, const char *what, bool *done,
                         rf_kernel_stats *stats, rf_status *st)
{
    *done = false;
    if (!impl_of(be)->semijoins)
        return true;
    int side = semijoin_side(p, chain, probe_var, chain->in[1]);
    if (side < 0 || !in0 || !in1 || out == in0 || out == in1 || (side == 0 && (first || in0->pending_sort)))
        return true;
    rf_cuda_ctx *ctx = ctx_of(be);
    if (!ensure_table(be, in0, st) || !ensure_table(be, in1, st) || !rf_cuda_timer_start(ctx, st))
        return false;
    becomes_table(be, out);
    bool ok = rf_cuda_semijoin(ctx, &in0->rel, &in1->rel, chain->nkeys, &chain->filter, side, &out->rel, what, st);
    double secs = 0;
    bool timed = rf_cuda_timer_stop(ctx, &secs, ok ? st : &(rf_status){0});
    if (!ok || !timed)
        return false;
    stats->seconds = secs;
    stats->rows_in[0] = gpu_var_rows(be, in0);
    stats->rows_in[1] = gpu_var_rows(be, in1);
    stats->bytes_moved = rel_bytes(in0) + rel_bytes(in1) + rel_bytes(out);
    impl_of(be)->semijoins_run++;
    *done = true;
    return true;
}

/* Whether a set gather whose probe-side SORT is left out (x's rows
 * probing the JOIN's other side y, rf_fused_probe_sort) should rather sort
 * x and probe with y's rows: where y's are not sorted yet (a SORT left
 * pending) and are at least twice as many, sorting x costs less than
 * sorting y (q16 at SF 10: 297K part rows against 8M partsupp rows, 0.6 ms
 * of sorting partsupp, which the unfused JOIN probing with them never
 * did). Not where the JOIN reads row positions (they follow the orders).
 * RF_GPU_PROBE_OTHER_SIDE=off: never (for measuring). */
static bool probe_with_other_side(rf_backend *be, const rf_kernel *join, const rf_dvar *x, const rf_dvar *y)
{
    const char *env = getenv("RF_GPU_PROBE_OTHER_SIDE");
    if ((env && strcmp(env, "off") == 0) || !x || !y || !y->pending_sort || join_reads_rowid(join))
        return false;
    return gpu_var_rows(be, y) >= 2 * gpu_var_rows(be, x);
}

static rf_run_result gpu_run_set(rf_backend *be, const rf_hprogram *p, const rf_kernel *fk, rf_dvar *const *outs,
                                 rf_dvar *const *ins, rf_kernel_stats *stats, rf_status *st)
{
    gpu_impl *g = impl_of(be);
    rf_cuda_ctx *ctx = ctx_of(be);
    const rf_fused *f = fk->fused;
    int first = set_gather_first(p, f);
    int last = f->nmembers - 2;   /* the rows' chain ends here; the SORT follows */
    rf_kernel chain;
    if (f->nout != 1 || last < first || rf_fused_chain_end_from(p, fk, first) < last ||
        !rf_fused_compose(p, fk, first, last, &chain))
        return RF_RUN_MEMBERS;
    if (last > first && !rf_selplan_env_check(&chain.filter, st)) {   /* as gpu_run_fused: a composed chain */
        rf_kernel_free(&chain);
        return RF_RUN_FAILED;
    }
    const rf_kernel *sortk = &f->members[last + 1];
    const char *what = p->vars[sortk->out].name ? p->vars[sortk->out].name : "?";
    rf_status local;
    rf_status_init(&local);
    /* after a probe-side SORT left out, the JOIN probes with that SORT's input */
    int probe_var = first ? f->members[0].in[0] : chain.in[0];
    rf_dvar *in0 = probe_var >= 0 ? group_input(fk, ins, probe_var) : NULL;
    rf_dvar *in1 = chain.in[1] >= 0 ? group_input(fk, ins, chain.in[1]) : NULL;
    rf_dvar *sorted_probe = NULL;
    if (first && (!in0 || !in1 || chain.op != RF_K_JOIN)) {
        rf_kernel_free(&chain);
        return RF_RUN_MEMBERS;
    }
    memset(stats, 0, sizeof *stats);
    bool done = false;
    bool other_side = first && probe_with_other_side(be, &chain, in0, in1);
    /* the other side left unsorted for this (reads_in_any_order) is sorted
     * now unless its rows probe */
    bool ok = other_side || !in1 || sort_pending(be, in1, &local);
    ok = ok && (!needs_string_order(&chain) || refresh_string_order(ctx, &local));
    if (ok && other_side) {
        /* x's few rows sorted (the SORT member), y's many probing them as
         * they come: the JOIN's sides swapped, the same rows made */
        ok = probe_side_in_order(be, p, fk, first, &in0, &sorted_probe, &local);
        rf_join_swap_sides(p, &chain);
        rf_dvar *t = in0;
        in0 = in1;
        in1 = t;
        g->set_gathers_other_side += ok;
    }
    if (ok && !other_side)
        ok = semijoin_set(be, p, &chain, first, probe_var, outs[0], in0, in1, what, &done, stats, &local);
    bool dense = !done && !other_side && set_gather_dense(g, sortk->out);
    if (ok && dense)
        ok = probe_side_in_order(be, p, fk, first, &in0, &sorted_probe, &local);
    if (ok && dense && (ok = rf_cuda_timer_start(ctx, &local))) {
        const diff_frame *hint = find_frame(g, sortk->out);
        ok = dense_join(be, &chain, outs[0], in0, in1, hint ? &hint->frame : NULL, false, what, &done, stats,
                        &local);
        double secs = 0;
        bool timed = rf_cuda_timer_stop(ctx, &secs, ok ? &local : &(rf_status){0});
        ok = ok && timed;
        stats->seconds = secs;
    }
    if (ok && !done) {
        rf_kernel_stats rs, ss;
        memset(&rs, 0, sizeof rs);
        memset(&ss, 0, sizeof ss);
        rf_dvar *rows = gpu_var_new(be, p->vars[chain.out].arity, &local);
        /* a chain of several members as its generated kernel (as any thread
         * chain); a lone JOIN as the unfused one runs */
        rf_cuda_set_codegen(ctx, g->codegen || (last > first && g->fuse_codegen));
        ok = rows && gpu_run_plain(be, p, &chain, rows, in0, in1, &rs, &local);
        rf_cuda_set_codegen(ctx, g->codegen);
        ok = ok && gpu_run_plain(be, p, sortk, outs[0], rows, NULL, &ss, &local);
        gpu_var_free(be, rows);
        stats->rows_in[0] = rs.rows_in[other_side ? 1 : 0];   /* the group's inputs in its order */
        stats->rows_in[1] = rs.rows_in[other_side ? 0 : 1];
        stats->seconds += rs.seconds + ss.seconds;
        stats->bytes_moved = rs.bytes_moved + ss.bytes_moved;
        /* RF_TEST_GPU_SET_ROWS=N (a test hook): a set gather whose JOIN
         * made more than N rows fails as if they had not fit, so that small
         * data reaches the dense fallback below */
        const char *cap = getenv("RF_TEST_GPU_SET_ROWS");
        if (ok && cap && *cap && rs.rows_out > (size_t)strtoull(cap, NULL, 10)) {
            ok = false;
            rf_fail(&local, RF_EXIT_OUT_OF_MEMORY, "GPU out of memory (RF_TEST_GPU_SET_ROWS): %zu rows of %s",
                    rs.rows_out, what);
        }
        g->set_gathers_sorted += ok;
        g->set_gathers_probed += ok && first;
        if (ok) {
            set_history *h = set_history_of(g, sortk->out);
            h->join_rows = rs.rows_out;
            h->set_rows = gpu_var_rows(be, outs[0]);
        }
        /* The JOIN's rows did not fit the device: a dense set holds each
         * distinct row as one bit and never makes them (same generation on
         * p2p-Gnutella31: tens of GB of rows a step, a 512 MB bitmap), at
         * whatever size its frame fits; this gather stays a set from then
         * on. (Where no frame fits, the members run, and the runtime's
         * out-of-memory path takes over.) */
        if (!ok && local.code == RF_EXIT_OUT_OF_MEMORY && g->dense_mode != 0 && !other_side) {
            rf_status dense_st;
            rf_status_init(&dense_st);
            const diff_frame *hint = find_frame(g, sortk->out);
            bool dok = probe_side_in_order(be, p, fk, first, &in0, &sorted_probe, &dense_st) &&
                       dense_join(be, &chain, outs[0], in0, in1, hint ? &hint->frame : NULL, true, what, &done, stats,
                                  &dense_st);
            if (dok && done) {
                ok = true;
                set_history_of(g, sortk->out)->rows_too_many = true;
                g->dense_after_oom++;
                g->memory_short = true;
            }
        }
    }
    stats->rows_out = ok ? gpu_var_rows(be, outs[0]) : 0;
    if (sorted_probe)
        gpu_var_free(be, sorted_probe);
    rf_kernel_free(&chain);
    return ok ? RF_RUN_DONE : RF_RUN_MEMBERS;
}

/* A FUSED kernel: its thread chain (a MAP or JOIN and the MAPs after it)
 * as the one kernel it equals, NVRTC-compiled (the intermediates stay in
 * registers); a reducing gather as one generated kernel that folds the
 * chain's rows into their groups as it makes them (rf_cuda_fused_reduce:
 * no rows written). Where that does not apply (no NVRTC, string functions
 * in an argument, too many groups) the chain's rows are made and folded by
 * hashing (rf_cuda_aggregate_hash), or, with many groups, sorted and
 * aggregated as unfused. Any other shape, or any error (a fault's row
 * could differ from the unfused order), is left to the members, which then
 * run exactly as unfused. */
static rf_run_result gpu_run_fused(rf_backend *be, const rf_hprogram *p, const rf_kernel *fk, rf_dvar *const *outs,
                                   rf_dvar *const *ins, rf_kernel_stats *stats, rf_status *st)
{
    (void)st;
    gpu_impl *g = impl_of(be);
    const rf_fused *f = fk->fused;
    if (f->nout > 1)
        return gpu_run_branches(be, p, fk, outs, ins, stats);
    if (fk->gather == RF_GATHER_SET)
        return gpu_run_set(be, p, fk, outs, ins, stats, st);
    bool reduce = fk->gather == RF_GATHER_REDUCE;
    int last = reduce ? f->nmembers - 3 : f->nmembers - 1;
    if (last < 0 || rf_fused_chain_end(p, fk) < last)
        return RF_RUN_MEMBERS;
    rf_kernel chain;
    if (!rf_fused_compose(p, fk, 0, last, &chain))
        return RF_RUN_MEMBERS;
    if (!rf_selplan_env_check(&chain.filter, st)) { /* an illegal forced plan: an error, not the members */
        rf_kernel_free(&chain);
        return RF_RUN_FAILED;
    }
    rf_status local;
    rf_status_init(&local);
    rf_dvar *in0 = chain.in[0] >= 0 ? group_input(fk, ins, chain.in[0]) : NULL;
    rf_dvar *in1 = chain.in[1] >= 0 ? group_input(fk, ins, chain.in[1]) : NULL;
    bool ok, done = true;
    rf_cuda_set_codegen(ctx_of(be), g->codegen || g->fuse_codegen);
    if (!reduce) {
        /* with code generation on: rf_cuda_select_one_pass */
        ok = gpu_run_plain(be, p, &chain, outs[0], in0, in1, stats, &local);
    } else {
        const rf_kernel *agg = &f->members[f->nmembers - 1];
        const char *what = p->vars[agg->out].name ? p->vars[agg->out].name : "?";
        const rf_type *result_types = p->vars[agg->out].types + agg->nkeys;
        double secs = 0;
        bool many_groups = false;
        done = false;
        ok = ensure_table(be, in0, &local) && (!in1 || ensure_table(be, in1, &local));
        /* the string ranks, as gpu_run_plain makes them for an unfused kernel */
        if (ok && (needs_string_order(&chain) || needs_string_order(agg)))
            ok = refresh_string_order(ctx_of(be), &local);
        rf_code args[RF_CUDA_MAX_COLS];
        bool composed = reduce_args(&chain, agg, args);
        if (ok && composed && g->fuse_codegen && (ok = rf_cuda_timer_start(ctx_of(be), &local))) {
            ok = rf_cuda_fused_reduce(ctx_of(be), &in0->rel, in1 ? &in1->rel : NULL, chain.nkeys, &chain.filter,
                                      chain.nproj, chain.proj, agg->nkeys, agg->naggs, agg->aggfn, result_types, args,
                                      &outs[0]->rel, &done, &many_groups, what, &local);
            bool timed = rf_cuda_timer_stop(ctx_of(be), &secs, ok ? &local : &(rf_status){0});
            ok = ok && timed;
            stats->seconds = secs;
            if (ok && done) {
                becomes_table(be, outs[0]);
                stats->bytes_moved = rel_bytes(in0) + (in1 ? rel_bytes(in1) : 0) + rel_bytes(outs[0]);
                g->fused_generated++;
            }
        }
        if (composed)
            for (int j = 0; j < agg->naggs; j++)
                rf_code_free(&args[j]);
        if (ok && !done) {
            g->fused_library++;
            rf_dvar *rows = gpu_var_new(be, p->vars[chain.out].arity, &local);
            ok = rows && gpu_run_plain(be, p, &chain, rows, in0, in1, stats, &local) && ensure_table(be, rows, &local);
            done = true;
            /* (where the generated kernel found too many groups to hash,
             * hashing would only sample them again: they are sorted) */
            if (ok && many_groups)
                done = false;
            else if (ok && (ok = rf_cuda_timer_start(ctx_of(be), &local))) {
                ok = rf_cuda_aggregate_hash(ctx_of(be), &rows->rel, agg->nkeys, agg->naggs, agg->aggfn, result_types,
                                            agg->agg_arg, &outs[0]->rel, &done, what, &local);
                bool timed = rf_cuda_timer_stop(ctx_of(be), &secs, ok ? &local : &(rf_status){0});
                ok = ok && timed;
            }
            if (ok && done)
                becomes_table(be, outs[0]);
            stats->seconds += secs;
            if (ok && !done) {
                /* Too many groups for hashing to pay: sort and aggregate the
                 * rows already made (the SORT and AGG members), not the whole
                 * group again. */
                const rf_kernel *sortk = &f->members[f->nmembers - 2];
                rf_kernel_stats s2, s3;
                memset(&s2, 0, sizeof s2);
                memset(&s3, 0, sizeof s3);
                rf_dvar *sorted = gpu_var_new(be, p->vars[sortk->out].arity, &local);
                ok = sorted && gpu_run_plain(be, p, sortk, sorted, rows, NULL, &s2, &local) &&
                     gpu_run_plain(be, p, agg, outs[0], sorted, NULL, &s3, &local);
                done = ok;
                gpu_var_free(be, sorted);
                stats->seconds += s2.seconds + s3.seconds;
                stats->bytes_moved += s2.bytes_moved + s3.bytes_moved;
            }
            stats->bytes_moved += rows ? rel_bytes(rows) : 0;
            gpu_var_free(be, rows);
        }
        stats->rows_out = ok && done ? gpu_var_rows(be, outs[0]) : 0;
    }
    rf_cuda_set_codegen(ctx_of(be), g->codegen);
    rf_kernel_free(&chain);
    return ok && done ? RF_RUN_DONE : RF_RUN_MEMBERS;
}

/* The plan `explain --cuda` shows for a chain's filter (no device, no
 * data: no sample): the one RF_WEAVE_SELPLAN forces, else the unchanged
 * filter's order (identity: original order, all &&), which a run replaces
 * by the model's choice for a sample of its input. The line describing it
 * goes to out. 0: no plan (fewer than 2 conjuncts), 1: *pl. */
static int explain_plan(const rf_code *filter, bool allow_split, rf_cg_plan *pl, FILE *out)
{
    rf_status st;
    rf_status_init(&st);
    int nc = rf_cg_plan_split(filter, pl, &st);
    if (nc < 2) {
        rf_cg_plan_free(pl);
        return 0;
    }
    int forced = rf_cg_plan_forced(pl, allow_split, &st);
    rf_selcalib cal;
    rf_selcalib_defaults(&cal);
    if (forced < 0) {
        fprintf(out, "// %s (a run stops with this error)\n", st.message);
        rf_status_init(&st);
    }
    if (forced <= 0)
        rf_cg_plan_choose(pl, NULL, 0, 0, allow_split, &cal, &st);
    char text[RF_SELPLAN_FMT_MAX];
    rf_selplan_format(&pl->plan, text, sizeof text);
    if (forced > 0)
        fprintf(out, "// select plan %s of the filter's %d conjuncts: forced by RF_WEAVE_SELPLAN%s\n", text, nc,
                pl->splits_dropped ? " (its | run as &&: one kernel)" : "");
    else
        fprintf(out, "// select plan %s of the filter's %d conjuncts: the unchanged filter's order (no data here;\n"
                     "// a run chooses the plan by the cost model from a 64K-row sample of its input, or\n"
                     "// RF_WEAVE_SELPLAN forces one; --stats prints the plan chosen)\n", text, nc);
    return 1;
}

/* How the GPU runs a FUSED kernel as generated code, and with what source
 * (the one gpu_run_fused makes at run time when no string function is
 * tabulated into it). */
typedef enum fused_code {
    FUSED_MEMBERS,     /* no generated code: the members run */
    FUSED_SELECT_MANY, /* rf_select_many: the MAPs of one input */
    FUSED_REDUCE,      /* rf_reduce: the chain and its reducing gather */
    FUSED_SELECT,      /* rf_select: the chain and its compaction */
    FUSED_STAGES,      /* the chain's stages (rf_codegen_source), then library kernels */
    FUSED_SET_LIBRARY  /* a set gather over a lone JOIN: library kernels only */
} fused_code;

static bool code_list_has_string_op(const rf_code *codes, int n)
{
    for (int i = 0; i < n; i++)
        if (filter_has_string_function(&codes[i]))
            return true;
    return false;
}

/* The CUDA source of FUSED kernel fk (*src; NULL for FUSED_MEMBERS), how it
 * runs, and whether some of its code holds a string function (whose run-time
 * source then differs: tabulated into lookup tables). A chain's filter of 2
 * or more conjuncts is emitted with the plan explain_plan gives (forced by
 * RF_WEAVE_SELPLAN, else the unchanged filter's order); then *plan_line
 * (unless NULL) gets explain's comment on it, *nparts (unless NULL) the
 * plan's kernels, and *sample_src (unless NULL), when no plan is forced,
 * the selectivity sample kernel's source: a run chooses the plan from the
 * sample, so that kernel is the one known ahead. key and sample_key (unless
 * NULL) get what the two sources are made from (rf_cg_key), as a run makes
 * them, so that it finds the modules made ahead without their sources. */
static fused_code fused_source(const rf_hprogram *p, const rf_kernel *fk, char **src, bool *strings, char **plan_line,
                               char **sample_src, int *nparts, rf_cg_key *key, rf_cg_key *sample_key)
{
    const rf_fused *f = fk->fused;
    *src = NULL;
    *strings = false;
    if (plan_line)
        *plan_line = NULL;
    if (sample_src)
        *sample_src = NULL;
    if (nparts)
        *nparts = 1;
    if (!f)
        return FUSED_MEMBERS;
    if (f->nout > 1) {
        int ends[RF_KERNEL_VARS_MAX], nb = rf_fused_branches(fk, ends), made = 0;
        rf_kernel maps[RF_SELECT_MANY_MAX];
        const rf_code *filters[RF_SELECT_MANY_MAX], *projs[RF_SELECT_MANY_MAX];
        int nprojs[RF_SELECT_MANY_MAX];
        bool ok = nb >= 2 && nb <= RF_SELECT_MANY_MAX;
        for (int x = 0; ok && x < nb; x++) {
            ok = rf_fused_compose(p, fk, x ? ends[x - 1] + 1 : 0, ends[x], &maps[x]);
            made += ok;
            ok = ok && maps[x].op == RF_K_MAP && maps[x].in[0] == maps[0].in[0];
            if (ok) {
                filters[x] = &maps[x].filter;
                projs[x] = maps[x].proj;
                nprojs[x] = maps[x].nproj;
                *strings = *strings || filter_has_string_function(&maps[x].filter) ||
                           code_list_has_string_op(maps[x].proj, maps[x].nproj);
            }
        }
        int al = ok ? p->vars[maps[0].in[0]].arity : 0;
        *src = ok ? rf_codegen_select_many_source(al, nb, filters, nprojs, projs) : NULL;
        if (*src && key)
            rf_cg_key_select_many(key, al, nb, filters, nprojs, projs);
        for (int x = 0; x < made; x++)
            rf_kernel_free(&maps[x]);
        return *src ? FUSED_SELECT_MANY : FUSED_MEMBERS;
    }
    bool reduce = fk->gather == RF_GATHER_REDUCE, set = fk->gather == RF_GATHER_SET;
    int first = set ? set_gather_first(p, f) : 0;
    int last = reduce ? f->nmembers - 3 : set ? f->nmembers - 2 : f->nmembers - 1;
    rf_kernel chain;
    if (!(last >= first && rf_fused_chain_end_from(p, fk, first) >= last &&
          rf_fused_compose(p, fk, first, last, &chain)))
        return FUSED_MEMBERS;
    if (set && last == first) {   /* gpu_run_set: the JOIN as unfused, no generated code */
        rf_kernel_free(&chain);
        return FUSED_SET_LIBRARY;
    }
    fused_code how = FUSED_MEMBERS;
    int al = chain.in[0] >= 0 ? p->vars[chain.in[0]].arity : 0;
    *strings = filter_has_string_function(&chain.filter) || code_list_has_string_op(chain.proj, chain.nproj);
    const rf_kernel *agg = reduce ? &f->members[f->nmembers - 1] : NULL;
    /* A reducing gather is one kernel: no split plans. */
    rf_cg_plan plan;
    char *line = NULL;
    size_t line_len = 0;
    FILE *pf = open_memstream(&line, &line_len);
    int planned = explain_plan(&chain.filter, !reduce, &plan, pf);
    fclose(pf);
    rf_code args[RF_CUDA_MAX_COLS];
    if (agg && reduce_args(&chain, agg, args)) {
        /* the values as rf_cuda_fused_reduce lays them out */
        rf_code vals[2 * RF_CUDA_MAX_COLS];
        int arg_val[RF_CUDA_MAX_COLS], nvals = chain.nproj;
        if (chain.nproj <= RF_CUDA_MAX_COLS) {
            memcpy(vals, chain.proj, (size_t)chain.nproj * sizeof *vals);
            for (int j = 0; j < agg->naggs; j++) {
                arg_val[j] = agg->aggfn[j] == RF_AGG_COUNT ? -1 : nvals;
                if (arg_val[j] >= 0)
                    vals[nvals++] = args[j];
            }
            *strings = *strings || code_list_has_string_op(vals, nvals);
            *src = rf_codegen_reduce_source(chain.op == RF_K_JOIN, al, &chain.filter, nvals, vals, agg->nkeys,
                                            agg->naggs, agg->aggfn, arg_val, planned ? &plan : NULL);
            how = *src ? FUSED_REDUCE : how;
            if (*src && key)
                rf_cg_key_reduce(key, chain.op == RF_K_JOIN, al, &chain.filter, nvals, vals, agg->nkeys, agg->naggs,
                                 agg->aggfn, arg_val, planned ? &plan : NULL);
        }
        for (int j = 0; j < agg->naggs; j++)
            rf_code_free(&args[j]);
    }
    if (!*src && !reduce &&
        (*src = rf_codegen_select_source(chain.op == RF_K_JOIN, al, &chain.filter, chain.nproj, chain.proj,
                                         planned ? &plan : NULL))) {
        how = FUSED_SELECT;
        if (key)
            rf_cg_key_select(key, chain.op == RF_K_JOIN, al, &chain.filter, chain.nproj, chain.proj,
                             planned ? &plan : NULL);
    }
    if (!*src && (*src = rf_codegen_source(chain.op == RF_K_JOIN, al, &chain.filter, chain.nproj, chain.proj)))
        how = FUSED_STAGES;
    bool applied = planned && (how == FUSED_SELECT || how == FUSED_REDUCE); /* the library path plans nothing */
    if (plan_line && applied) {
        *plan_line = line;
        line = NULL;
    }
    if (nparts && applied)
        *nparts = plan.nparts;
    if (sample_src && applied && !plan.forced) {
        *sample_src = rf_codegen_selsample_source(chain.op == RF_K_JOIN, al, &plan);
        if (*sample_src && sample_key)
            rf_cg_key_sample(sample_key, chain.op == RF_K_JOIN, al, &plan);
    }
    free(line);
    if (planned)
        rf_cg_plan_free(&plan);
    rf_kernel_free(&chain);
    return how;
}

/* A reducing gather's chain as the select that runs when its generated
 * kernel hands back (too many groups: gpu_run_fused makes the chain's rows,
 * through gpu_run_plain): its source, key, parts and sample kernel as that
 * run makes them, so that they can be made ahead too (q11's partsupp by
 * part: its module's load was ~0.5 ms of the query's time). *src NULL:
 * none (not a reducing gather, string functions, no source). */
static void reduce_fallback_select(const rf_hprogram *p, const rf_kernel *fk, char **src, rf_cg_key *key, int *nparts,
                                   char **sample, rf_cg_key *sample_key)
{
    const rf_fused *f = fk->fused;
    *src = *sample = NULL;
    *nparts = 1;
    int last = f ? f->nmembers - 3 : -1;
    rf_kernel chain;
    if (!f || f->nout > 1 || fk->gather != RF_GATHER_REDUCE || last < 0 || rf_fused_chain_end(p, fk) < last ||
        !rf_fused_compose(p, fk, 0, last, &chain))
        return;
    if (!filter_has_string_function(&chain.filter) && !code_list_has_string_op(chain.proj, chain.nproj)) {
        bool join = chain.op == RF_K_JOIN;
        int al = chain.in[0] >= 0 ? p->vars[chain.in[0]].arity : 0;
        rf_cg_plan plan;
        char *line = NULL;
        size_t line_len = 0;
        FILE *pf = open_memstream(&line, &line_len);
        int planned = explain_plan(&chain.filter, true, &plan, pf);
        fclose(pf);
        free(line);
        *src = rf_codegen_select_source(join, al, &chain.filter, chain.nproj, chain.proj, planned ? &plan : NULL);
        if (*src) {
            rf_cg_key_select(key, join, al, &chain.filter, chain.nproj, chain.proj, planned ? &plan : NULL);
            if (planned) {
                *nparts = plan.nparts;
                if (!plan.forced && (*sample = rf_codegen_selsample_source(join, al, &plan)))
                    rf_cg_key_sample(sample_key, join, al, &plan);
            }
        }
        if (planned)
            rf_cg_plan_free(&plan);
    }
    rf_kernel_free(&chain);
}

char *rf_gpu_fused_source(const rf_hprogram *p, const rf_kernel *fk)
{
    const rf_fused *f = fk->fused;
    if (!f)
        return NULL;
    bool reduce = fk->gather == RF_GATHER_REDUCE, set = fk->gather == RF_GATHER_SET, strings;
    int last = reduce ? f->nmembers - 3 : set ? f->nmembers - 2 : f->nmembers - 1;
    char *head = NULL, *src = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&head, &len);
    fprintf(out, "// FUSED[%d] -> %s:", f->nmembers, p->vars[fk->out].name ? p->vars[fk->out].name : "?");
    for (int m = 0; m < f->nmembers; m++)
        fprintf(out, " %s%s", m ? "-> " : "", rf_kop_name(f->members[m].op));
    fputc('\n', out);
    char *plan_line = NULL;
    fused_code how = fused_source(p, fk, &src, &strings, &plan_line, NULL, NULL, NULL, NULL);
    int first = set ? set_gather_first(p, f) : 0;
    const char *chain_op = f->nmembers > first ? rf_kop_name(f->members[first].op) : "?";
    rf_kernel semi_chain;
    if (set && last >= first && rf_fused_compose(p, fk, first, last, &semi_chain)) {
        int side = semijoin_side(p, &semi_chain, first ? f->members[0].in[0] : semi_chain.in[0], semi_chain.in[1]);
        if (side >= 0 && !(side == 0 && first))
            fprintf(out, "// semi-join: the JOIN's rows are its %s input's rows whole, so the set is the rows of\n"
                         "// that input with a passing match, in its order (library kernels k_semi_flags, k_compact:\n"
                         "// no pair written, nothing sorted; RF_CUDA_SEMIJOIN=off writes and sorts)\n",
                    side ? "second" : "first");
        rf_kernel_free(&semi_chain);
    }
    if (first && how != FUSED_MEMBERS)
        fputs("// probe side: member 0, the SORT that orders the JOIN's first input, is left out; the JOIN\n"
              "// searches its second input for each of that SORT's input rows as they come, and the\n"
              "// gather's SORT orders and deduplicates what it makes (the dense set sorts them first)\n",
              out);
    if (set && how != FUSED_MEMBERS && how != FUSED_SET_LIBRARY)
        fprintf(out, "// set gather: the composed JOIN's pairs set bits of a dense set, the SORT's result (library\n"
                     "// kernel rf_cuda_join_to_set), when its projections are plain columns and the frame fits;\n"
                     "// else the kernel below writes its rows and the SORT (member %d) sorts them\n",
                last + 1);
    switch (how) {
    case FUSED_MEMBERS:
        fputs("// no generated code: the group runs as its members\n", out);
        break;
    case FUSED_SET_LIBRARY:
        fputs("// set gather: the JOIN's pairs set bits of a dense set, the SORT's result (library kernel\n"
              "// rf_cuda_join_to_set), when its projections are plain columns and the frame fits; else the\n"
              "// JOIN runs as unfused and the SORT member sorts its rows. No generated code\n",
              out);
        break;
    case FUSED_SELECT_MANY:
        fprintf(out, "// %d MAPs of one input (each branch's code composed) as one kernel, rf_select_many:\n"
                     "// the input read once, each branch's kept rows written in input order\n",
                rf_fused_branches(fk, (int[RF_KERNEL_VARS_MAX]){0}));
        break;
    case FUSED_REDUCE:
        fprintf(out, "// members 0..%d (their code composed over the group's inputs) and the reducing gather\n"
                     "// as one kernel, rf_reduce: each row that passes the filter makes its values in\n"
                     "// registers (the projections, the first %d of them the group keys, then the\n"
                     "// aggregates' arguments) and folds them into its group's slot (a per-block\n"
                     "// shared-memory table, then the global one); no rows are written. The groups\n"
                     "// are sorted once at the end.\n",
                last, f->members[f->nmembers - 1].nkeys);
        break;
    case FUSED_SELECT:
        fprintf(out, "// members %d..%d: one %s, their code composed over the group's inputs, as one kernel,\n"
                     "// rf_select: each row (candidate pair) made once, intermediates in registers, the kept\n"
                     "// rows written in order (a decoupled look-back over tiles gives each tile its place)\n",
                first, last, chain_op);
        break;
    case FUSED_STAGES:
        fprintf(out, "// members %d..%d: one %s kernel, their code composed over the group's inputs%s\n", first,
                last, chain_op,
                reduce ? ";\n// then the reducing gather: its rows fold into per-group accumulators by hashing the\n"
                         "// keys (library kernels k_hash_groups, k_hash_fold: an aggregate is beyond the\n"
                         "// generated kernel), sorted once per group"
                       : "");
        break;
    }
    if (plan_line) {
        fputs(plan_line, out);
        free(plan_line);
    }
    if (src) {
        if (how != FUSED_SELECT_MANY)
            fputs("// string functions appear as the host-only fault here: at run time they are tabulated\n"
                  "// into lookup tables (rf_lookup) before the code is compiled\n", out);
        const char *body = strstr(src, RF_CODEGEN_STAGES_MARK);
        fputs(body ? body + strlen(RF_CODEGEN_STAGES_MARK) : src, out);
    }
    fclose(out);
    free(src);
    return head;
}

/* The sources gpu_program_begins hands to rf_codegen_prefetch: each with
 * the names of its kernels. */
typedef struct prefetch_list {
    int n, cap;
    char **srcs;
    const char *const **names;
    int *nnames;
    rf_cg_key *keys;
} prefetch_list;

/* Appends src (taken; NULL: nothing) with its kernels' names and what it was
 * made from (*key, taken: emptied here; NULL or empty: none). */
static void prefetch_add(prefetch_list *l, char *src, const char *const *names, int nnames, rf_cg_key *key)
{
    if (!src) {
        if (key)
            rf_cg_key_free(key);
        return;
    }
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 8;
        l->srcs = rf_realloc(l->srcs, (size_t)l->cap * sizeof *l->srcs);
        l->names = rf_realloc(l->names, (size_t)l->cap * sizeof *l->names);
        l->nnames = rf_realloc(l->nnames, (size_t)l->cap * sizeof *l->nnames);
        l->keys = rf_realloc(l->keys, (size_t)l->cap * sizeof *l->keys);
    }
    l->srcs[l->n] = src;
    l->names[l->n] = names;
    l->keys[l->n] = key ? *key : (rf_cg_key){0};
    if (key)
        memset(key, 0, sizeof *key);
    l->nnames[l->n++] = nnames;
}

/* Before the first kernel (the LOADs included): the program's generated
 * kernels are compiled, or read from the disk cache, and loaded on a thread
 * of their own, so that neither NVRTC (0.1-0.3 s a kernel on a fresh
 * machine) nor a module load (~0.3 ms) falls inside a kernel's time. Only
 * sources known before the data: a group whose code holds a string
 * function is made when it runs (its tables are part of its source). */
static void gpu_program_begins(rf_backend *be, const rf_hprogram *p)
{
    gpu_impl *g = impl_of(be);
    /* The multiway join's kernels and --join=auto's statistic's are not in
     * the start-up rehearsal (most programs use neither): a program that
     * does has their code loaded while its inputs load. */
    unsigned load = 0;
    for (int b = 0; b < p->nblocks; b++) {
        if (p->blocks[b].term == RF_TERM_BRANCH_JOIN)
            load |= RF_CUDA_LOAD_JOIN_SIZE;
        for (int i = 0; i < p->blocks[b].nkernels; i++)
            if (p->blocks[b].kernels[i].op == RF_K_MULTIJOIN) {
                load |= RF_CUDA_LOAD_MULTIJOIN;
                if (p->blocks[b].kernels[i].mj && p->blocks[b].kernels[i].mj->alt_order)
                    load |= RF_CUDA_LOAD_JOIN_SIZE;   /* the order estimate's kernels (joinsize.cu) */
            }
    }
    rf_cuda_load_ahead(ctx_of(be), load);
    if (!g->fuse_codegen || getenv("RF_CUDA_NO_PREFETCH"))
        return;
    /* the select planner's constants (a look for a calibration file) read
     * now, not in the first planned kernel's time */
    (void)rf_codegen_selcalib(ctx_of(be));
    prefetch_list l = {0};
    static const char *const select_names[] = {"rf_select"}, *const reduce_names[] = {"rf_reduce"},
                             *const many_names[] = {"rf_select_many"}, *const sample_names[] = {"rf_selsample"};
    static const char *const part_names[RF_CG_MAX_PARTS] = {"rf_select_p0", "rf_select_p1", "rf_select_p2",
                                                            "rf_select_p3", "rf_select_p4", "rf_select_p5",
                                                            "rf_select_p6", "rf_select_p7"};
    for (int b = 0; b < p->nblocks; b++)
        for (int i = 0; i < p->blocks[b].nkernels; i++) {
            const rf_kernel *k = &p->blocks[b].kernels[i];
            if (k->op != RF_K_FUSED)
                continue;
            char *src, *sample;
            bool strings;
            int nparts;
            rf_cg_key key = {0}, sample_key = {0};
            fused_code how = fused_source(p, k, &src, &strings, NULL, &sample, &nparts, &key, &sample_key);
            if (strings || (how != FUSED_SELECT && how != FUSED_REDUCE && how != FUSED_SELECT_MANY)) {
                free(src);
                free(sample);
                rf_cg_key_free(&key);
                rf_cg_key_free(&sample_key);
                continue;
            }
            /* A filter the model plans at run time: the sample's kernel is
             * made ahead, and the unchanged filter's (src: the identity
             * plan), which runs while a chosen plan's module does not pay
             * for itself (prims.c, defer_plan). */
            prefetch_add(&l, sample, sample_names, 1, &sample_key);
            prefetch_add(&l, src,
                         how == FUSED_SELECT   ? (nparts > 1 ? part_names : select_names)
                         : how == FUSED_REDUCE ? reduce_names
                                               : many_names,
                         how != FUSED_SELECT ? 1 : nparts, &key);
            if (how == FUSED_REDUCE) {
                /* and the select its rows are made by where the groups turn out many */
                reduce_fallback_select(p, k, &src, &key, &nparts, &sample, &sample_key);
                prefetch_add(&l, sample, sample_names, 1, &sample_key);
                prefetch_add(&l, src, nparts > 1 ? part_names : select_names, nparts, &key);
            }
        }
    /* The MAPs that may run as lone selects (lone_select: known only from
     * their rows, at run time) in a program without loops (a recursive
     * program's time is in its loop, over deltas mostly small; a MAP
     * outside it runs once, and NVRTC started for it measured slower: TC
     * cal.cedge 0.068 -> 0.126 s on a fresh cache), without string
     * functions (whose source holds the tables the data gives): made ahead
     * as the run would make them, the identity plan and the sample's kernel
     * where the filter is planned. One that turns out small costs only this
     * thread's work. */
    bool loops = false;
    for (int b = 0; b < p->nblocks && !loops; b++)
        loops = p->blocks[b].target == b || p->blocks[b].target_else == b;
    for (int b = 0; b < p->nblocks && !loops && p->woven && g->lone_selects && !g->codegen; b++) {
        const rf_hblock *blk = &p->blocks[b];
        for (int i = 0; i < blk->nkernels; i++) {
            const rf_kernel *k = &blk->kernels[i];
            if (k->op != RF_K_MAP || k->in[0] < 0 || k->nproj < 1 || k->nproj > RF_CUDA_MAX_COLS ||
                filter_has_string_function(&k->filter) || code_list_has_string_op(k->proj, k->nproj))
                continue;
            bool copies = k->filter.n == 0;
            for (int q = 0; copies && q < k->nproj; q++)
                copies = rf_code_as_column(&k->proj[q]) >= 0;
            if (copies)
                continue; /* column copies: the library's path, no kernel */
            int al = p->vars[k->in[0]].arity;
            rf_cg_plan plan;
            char *line = NULL;
            size_t line_len = 0;
            FILE *pf = open_memstream(&line, &line_len);
            int planned = explain_plan(&k->filter, true, &plan, pf);
            fclose(pf);
            free(line);
            int nparts = planned ? plan.nparts : 1;
            rf_cg_key key = {0};
            if (planned && !plan.forced)
                rf_cg_key_sample(&key, false, al, &plan);
            prefetch_add(&l, planned && !plan.forced ? rf_codegen_selsample_source(false, al, &plan) : NULL,
                         sample_names, 1, &key);
            char *src = rf_codegen_select_source(false, al, &k->filter, k->nproj, k->proj, planned ? &plan : NULL);
            if (src)
                rf_cg_key_select(&key, false, al, &k->filter, k->nproj, k->proj, planned ? &plan : NULL);
            prefetch_add(&l, src, nparts > 1 ? part_names : select_names, nparts, &key);
            if (planned)
                rf_cg_plan_free(&plan);
        }
    }
    if (l.n > 0 && !rf_codegen_prefetch(ctx_of(be), l.n, l.srcs, l.names, l.nnames, l.keys))
        for (int i = 0; i < l.n; i++) {
            free(l.srcs[i]);
            rf_cg_key_free(&l.keys[i]);
        }
    free(l.keys);
    free(l.srcs);
    free(l.names);
    free(l.nnames);
}

/* An output about to be written lets go of the runs it held: their
 * storage may be shared, and a view of one must never be written through.
 * (No output aliases an input but a COPY's onto itself, which writes
 * nothing.) */
static void release_output(rf_backend *be, rf_dvar *out, rf_dvar *const *ins, int nin)
{
    if (!out || out->nruns == 0)
        return;
    for (int i = 0; i < nin; i++)
        if (ins[i] == out)
            return;
    drop_runs(be, out);
    out->table_ok = true;
}

/* --join=auto's statistic, the size of the binary plan's first join,
 * counted on the device (rf_cuda_join_size: a hash table of the smaller
 * side's keys; only the count comes back). */
static bool gpu_join_size(rf_backend *be, const rf_dvar *l, const rf_dvar *r, int nkeys, const int *lkeys,
                          const int *rkeys, uint64_t *rows, rf_status *st)
{
    settle(be, l);
    settle(be, r);
    if (!ensure_table(be, l, st) || !ensure_table(be, r, st) || !sort_pending(be, l, st) || !sort_pending(be, r, st))
        return false;
    return rf_cuda_join_size(ctx_of(be), &l->rel, lkeys, &r->rel, rkeys, nkeys, rows, st);
}

/* A multiway join in its second variable order on the device (hir.h,
 * alt_order): each input re-keyed (its columns permuted by a MAP, then
 * sorted; one copy where two inputs are one relation re-keyed alike, none
 * where the permutation is the identity), in_vars and the code renumbered
 * (the CPU's rf_mj_alt_make, on drels). */
typedef struct gpu_mj_alt {
    int nin;
    rf_mj_recode rc;
    const rf_drel *in[RF_MULTIJOIN_MAX_IN];
    rf_drel rels[RF_MULTIJOIN_MAX_IN];
    bool owned[RF_MULTIJOIN_MAX_IN];
} gpu_mj_alt;

static void gpu_mj_alt_free(rf_cuda_ctx *ctx, gpu_mj_alt *a)
{
    for (int i = 0; i < a->nin; i++)
        if (a->owned[i])
            rf_drel_free(ctx, &a->rels[i]);
    rf_mj_recode_free(&a->rc);
    memset(a, 0, sizeof *a);
}

static bool gpu_mj_alt_make(rf_cuda_ctx *ctx, const rf_hprogram *p, const rf_kernel *k, const rf_drel *const *rels,
                            gpu_mj_alt *a, rf_status *st)
{
    const rf_multijoin *mj = k->mj;
    memset(a, 0, sizeof *a);
    a->nin = mj->nin;
    rf_mj_recode_make(&a->rc, mj->nin, mj->in_first, mj->in_vars, mj->nvars, mj->alt_order, &k->filter, k->nproj,
                      k->proj);
    bool ok = true;
    for (int i = 0; i < mj->nin && ok; i++) {
        int j;
        if (rf_mj_recode_shared(&a->rc, mj->in_first, (const void *const *)rels, i, &j)) {
            a->in[i] = j >= 0 ? a->in[j] : rels[i];
            continue;
        }
        const int *perm = a->rc.col_perm + mj->in_first[i];
        int ar = mj->in_first[i + 1] - mj->in_first[i];
        const rf_type *types = p->vars[mj->in[i]].types;
        rf_code cols[RF_MULTIJOIN_MAX_VARS];   /* the columns in the new order, then sorted */
        rf_instr ins[RF_MULTIJOIN_MAX_VARS];
        for (int c = 0; c < ar; c++) {
            memset(&ins[c], 0, sizeof ins[c]);
            ins[c].op = RF_EX_COL;
            ins[c].type = (uint8_t)(types ? types[perm[c]] : RF_TYPE_INT64);
            ins[c].index = perm[c];
            cols[c] = (rf_code){1, &ins[c]};
        }
        rf_drel mid;
        rf_drel_init(&mid, ar);
        rf_drel_init(&a->rels[i], ar);
        a->owned[i] = true;
        ok = rf_cuda_map(ctx, rels[i], &(rf_code){0, NULL}, ar, cols, &mid, "multiway join input, re-keyed", st) &&
             rf_cuda_sort_unique(ctx, &mid, &a->rels[i], "multiway join input, re-keyed", st);
        rf_drel_free(ctx, &mid);
        a->in[i] = &a->rels[i];
    }
    if (!ok)
        gpu_mj_alt_free(ctx, a);
    return ok;
}

/* Whether the join runs in its second variable order: both orders' last
 * levels estimated on the device (rf_cuda_order_costs), compared as on the
 * CPU (rf_order_take_alt). Where the planned order's {p, q} input has
 * fewer than RF_GPU_ORDER_MIN_ROWS rows the planned order runs unasked:
 * there the estimate's launches and wait (~0.1-0.3 ms on an H200) are
 * 10-15% of a 1.5-2 ms query (triangles of CA-HepTh, usroads,
 * p2p-Gnutella31) and either order's last level takes well under a
 * millisecond. RF_GPU_ORDER_MIN_ROWS=N sets the bound. */
#define RF_GPU_ORDER_MIN_ROWS ((size_t)1 << 20)

static bool gpu_mj_take_alt(rf_cuda_ctx *ctx, const rf_hprogram *p, const rf_kernel *k, const rf_drel *const *rels,
                            bool *take, rf_status *st)
{
    const rf_multijoin *mj = k->mj;
    rf_mj_last a, z;
    *take = false;
    if (!mj->alt_order || !rf_mj_last_level(mj->nin, mj->in_first, mj->in_vars, mj->nvars, NULL, &a) ||
        !rf_mj_last_level(mj->nin, mj->in_first, mj->in_vars, mj->nvars, mj->alt_order, &z))
        return true;
    const char *force = getenv("RF_WCOJ_ORDER");
    bool forced = force && (strcmp(force, "planned") == 0 || strcmp(force, "alt") == 0);
    const char *min_env = getenv("RF_GPU_ORDER_MIN_ROWS");   /* (tests: 0 estimates every join) */
    size_t min_rows = min_env && *min_env ? (size_t)strtoull(min_env, NULL, 10) : RF_GPU_ORDER_MIN_ROWS;
    if (!forced && rels[a.pairs]->nrows < min_rows)
        return true;
    rf_order_query q[2] = {
        {rels[a.pairs], a.pairs_p, a.pairs_q, rels[a.list_p], a.list_p_col, rels[a.list_q], a.list_q_col},
        {rels[z.pairs], z.pairs_p, z.pairs_q, rels[z.list_p], z.list_p_col, rels[z.list_q], z.list_q_col},
    };
    double costs[2] = {0, 0};
    if (!forced && !rf_cuda_order_costs(ctx, 2, q, costs, st))
        return false;
    *take = rf_order_take_alt(costs[0], costs[1]);
    rf_order_trace(p->vars[k->out].name, costs[0], costs[1], *take);
    return true;
}

/* A MULTIJOIN: the leapfrog triejoin on the device (rf_cuda_multijoin:
 * breadth-first, one level of bindings at a time, each level counted
 * before it is written); RF_GPU_LFTJ=host runs it on the host instead
 * (the inputs downloaded, the CPU primitive, the result uploaded), the
 * reference the device kernel is tested against. */
static bool gpu_run_multijoin(rf_backend *be, const rf_hprogram *p, const rf_kernel *k, rf_dvar *out,
                              rf_dvar *const *ins, rf_kernel_stats *stats, rf_status *st)
{
    rf_cuda_ctx *ctx = ctx_of(be);
    const rf_multijoin *mj = k->mj;
    const char *what = p->vars[k->out].name ? p->vars[k->out].name : "?";
    memset(stats, 0, sizeof *stats);
    rf_dvar empty[RF_MULTIJOIN_MAX_IN];
    const rf_drel *rels[RF_MULTIJOIN_MAX_IN];
    size_t bytes_in = 0;
    bool ok = true;
    for (int i = 0; i < mj->nin && ok; i++) {
        rf_dvar *in = ins[i];
        if (!in) {   /* a variable never defined reads as empty */
            memset(&empty[i], 0, sizeof empty[i]);
            rf_drel_init(&empty[i].rel, p->vars[mj->in[i]].arity);
            empty[i].table_ok = true;
            in = &empty[i];
        }
        ok = ensure_table(be, in, st);
        rels[i] = &in->rel;
        bytes_in += rel_bytes(in);
        if (i < 2)
            stats->rows_in[i] = gpu_var_rows(be, in);
    }
    if (!ok)
        return false;
    const char *mode = getenv("RF_GPU_LFTJ");
    if (mode && strcmp(mode, "host") == 0) {
        double t0 = rf_now();
        rf_table tabs[RF_MULTIJOIN_MAX_IN], res;
        const rf_table *tp[RF_MULTIJOIN_MAX_IN] = {NULL};
        int got = 0;
        for (; got < mj->nin && ok; got++) {
            rf_table_init(&tabs[got], rels[got]->arity);
            ok = rf_drel_download(ctx, rels[got], &tabs[got], st);
            tp[got] = &tabs[got];
        }
        if (ok && mj->count) {
            rf_word n = (rf_word)rf_prim_multijoin_count(mj->nin, tp, mj->in_first, mj->in_vars, mj->nvars);
            rf_table_init(&res, 1);
            rf_table_append_row(&res, &n);
            ok = gpu_upload(be, out, &res, st);
            rf_table_free(&res);
        } else if (ok) {   /* res is initialised by the join, even when it fails */
            ok = rf_prim_multijoin(mj->nin, tp, mj->in_first, mj->in_vars, mj->nvars, &k->filter, k->nproj,
                                   k->proj, &res, st) &&
                 gpu_upload(be, out, &res, st);
            rf_table_free(&res);
        }
        for (int i = 0; i < got; i++)
            rf_table_free(&tabs[i]);
        stats->seconds = rf_now() - t0;
    } else {
        if (needs_string_order(k) && !refresh_string_order(ctx, st))
            return false;
        if (!rf_cuda_timer_start(ctx, st))
            return false;
        /* the planned variable order, or the second where it is estimated
         * cheaper (its re-keying timed with the join) */
        bool take_alt = false;
        gpu_mj_alt alt;
        const int *in_vars = mj->in_vars;
        const rf_code *filter = &k->filter, *proj = k->proj;
        const rf_drel *const *use = rels;
        ok = gpu_mj_take_alt(ctx, p, k, rels, &take_alt, st) &&
             (!take_alt || gpu_mj_alt_make(ctx, p, k, rels, &alt, st));
        if (ok && mj->alt_order)
            *(take_alt ? &impl_of(be)->mj_alt : &impl_of(be)->mj_planned) += 1;
        if (ok && take_alt) {
            use = alt.in;
            in_vars = alt.rc.in_vars;
            filter = &alt.rc.filter;
            proj = alt.rc.proj;
        }
        if (!ok) {
            take_alt = false;
        } else if (mj->count) {   /* one row: the number of bindings, none written */
            uint64_t n = 0;
            rf_table t;
            rf_table_init(&t, 1);
            ok = rf_cuda_multijoin_count(ctx, mj->nin, use, mj->in_first, in_vars, mj->nvars, &n, what, st);
            if (ok) {
                rf_word w = (rf_word)n;
                rf_table_append_row(&t, &w);
                ok = gpu_upload(be, out, &t, st);
            }
            rf_table_free(&t);
        } else {
            becomes_table(be, out);
            ok = rf_cuda_multijoin(ctx, mj->nin, use, mj->in_first, in_vars, mj->nvars, filter, k->nproj, proj,
                                   &out->rel, what, st);
        }
        if (take_alt)
            gpu_mj_alt_free(ctx, &alt);
        double secs = 0;
        bool timed = rf_cuda_timer_stop(ctx, &secs, ok ? st : &(rf_status){0});
        ok = ok && timed;
        stats->seconds = secs;
    }
    if (!ok)
        return false;
    stats->rows_out = gpu_var_rows(be, out);
    stats->bytes_moved = bytes_in + rel_bytes(out);
    return true;
}

/* Whether a MAP outside any group runs as one generated kernel (filter,
 * compaction and projections in one pass: rf_cuda_select_one_pass) rather
 * than the library's three (flags, scan, emit; the filter interpreted):
 * in a woven program (with --no-fuse every kernel runs as the library's),
 * over inputs of at least RF_LONE_SELECT_ROWS rows, where the pass's fixed
 * costs (source, module lookup, the select plan's sample: ~0.1 ms) are
 * small against the rows; loops over small deltas keep the library's.
 * Q19 at SF 10 filters 60M lineitem rows by its disjunction's implied scan
 * filter in such a MAP (16 ms interpreted). RF_CUDA_LONE_SELECT=off: never
 * (for measuring). */
#define RF_LONE_SELECT_ROWS ((size_t)1 << 20)

static bool lone_select(const gpu_impl *g, const rf_hprogram *p, const rf_kernel *k, const rf_dvar *in0)
{
    return g->lone_selects && p->woven && g->fuse_codegen && !g->codegen && k->op == RF_K_MAP && in0 &&
           in0->table_ok && in0->rel.nrows >= RF_LONE_SELECT_ROWS;
}

static rf_run_result gpu_run_kernel(rf_backend *be, const rf_hprogram *p, const rf_kernel *k, rf_dvar *const *outs,
                                    rf_dvar *const *ins, rf_kernel_stats *stats, rf_status *st)
{
    gpu_impl *g = impl_of(be);
    {
        /* Rows of a pending SORT are put in order first, unless this kernel
         * reads them as a join's probe side. */
        const int *in_vars = k->op == RF_K_FUSED ? k->fused->in : k->op == RF_K_MULTIJOIN ? NULL : k->in;
        int nin = k->op == RF_K_FUSED ? k->fused->nin : k->op == RF_K_MULTIJOIN ? k->mj->nin : 2;
        for (int i = 0; i < nin; i++)
            if (ins[i] && ins[i]->pending_sort && !(in_vars && reads_in_any_order(p, k, in_vars[i])) &&
                !sort_pending(be, ins[i], st))
                return RF_RUN_FAILED;
    }
    for (int i = 0; i < (k->op == RF_K_FUSED ? k->fused->nout : 1); i++)
        if (outs[i])
            outs[i]->sorted_set = false;
    if (k->op == RF_K_MULTIJOIN) {
        release_output(be, outs[0], ins, k->mj->nin);
        if (!gpu_run_multijoin(be, p, k, outs[0], ins, stats, st))
            return RF_RUN_FAILED;
        if (outs[0]) {
            /* the bindings come level by level in order, each distinct */
            bool in_order = k->nproj == k->mj->nvars && k->filter.n == 0;
            for (int j = 0; in_order && j < k->nproj; j++)
                in_order = rf_code_as_column(&k->proj[j]) == j;
            outs[0]->sorted_set = in_order && outs[0]->table_ok;
            outs[0]->stamp = ++g->last_stamp;
            outs[0]->minus_stamp = 0;
            outs[0]->set_never = false;
            outs[0]->set_retry = 0;
        }
        return RF_RUN_DONE;
    }
    if (k->op == RF_K_FUSED) {
        for (int i = 0; i < k->fused->nout; i++)
            release_output(be, outs[i], ins, k->fused->nin);
        rf_run_result r = gpu_run_fused(be, p, k, outs, ins, stats, st);
        if (r == RF_RUN_DONE)
            for (int i = 0; i < k->fused->nout; i++)
                if (outs[i]) {
                    outs[i]->distinct = k->gather == RF_GATHER_SET && !outs[i]->pending_sort;
                    outs[i]->stamp = ++g->last_stamp;
                    outs[i]->minus_stamp = 0;
                    outs[i]->set_never = false;
                    outs[i]->set_retry = 0;
                }
        return r;
    }
    rf_dvar *out = outs[0], *in0 = ins[0], *in1 = ins[1];
    release_output(be, out, ins, 2);
    bool lone = lone_select(g, p, k, in0);
    if (lone) {
        rf_cuda_set_codegen(ctx_of(be), true);
        rf_cuda_set_codegen_optional(ctx_of(be), true);
    }
    bool ran = gpu_run_plain(be, p, k, out, in0, in1, stats, st);
    if (lone) {
        rf_cuda_set_codegen(ctx_of(be), g->codegen);
        rf_cuda_set_codegen_optional(ctx_of(be), false);
    }
    if (!ran)
        return RF_RUN_FAILED;
    if (out && !(k->op == RF_K_COPY && out == in0)) {
        /* Distinct rows (struct rf_dvar): sets, subsets of them, and MAPs
         * of them that keep every column. */
        out->distinct = k->op == RF_K_SORT || k->op == RF_K_UNION || k->op == RF_K_DIFF ||
                        ((k->op == RF_K_COPY || k->op == RF_K_ANTIJOIN) && in0 && in0->distinct) ||
                        (k->op == RF_K_MAP && in0 && in0->distinct && map_keeps_columns(k, in0->rel.arity));
        /* Contents named (struct rf_dvar): a COPY keeps its source's
         * name, a DIFF remembers what it subtracted. */
        out->stamp = k->op == RF_K_COPY && in0 ? in0->stamp : ++g->last_stamp;
        out->minus_stamp = k->op == RF_K_COPY && in0 ? in0->minus_stamp
                           : k->op == RF_K_DIFF && in1 ? in1->stamp
                                                       : 0;
        if (k->op == RF_K_COPY && in0) {
            out->set_never = in0->set_never;
            out->set_retry = in0->set_retry;
        } else if (k->op == RF_K_UNION && in0 && in1) {
            out->set_never = in0->set_never || in1->set_never;
            out->set_retry = in0->set_retry > in1->set_retry ? in0->set_retry : in1->set_retry;
        } else {
            out->set_never = false;
            out->set_retry = 0;
        }
    }
    return RF_RUN_DONE;
}

/* A kernel that ran out of memory (the runtime spills and runs it again,
 * or in parts) marks the device short of memory from then on. */
static rf_run_result gpu_run(rf_backend *be, const rf_hprogram *p, const rf_kernel *k, rf_dvar *const *outs,
                             rf_dvar *const *ins, rf_kernel_stats *stats, rf_status *st)
{
    int no = k->op == RF_K_FUSED ? k->fused->nout : 1;
    int ni = k->op == RF_K_FUSED ? k->fused->nin : k->op == RF_K_MULTIJOIN ? k->mj->nin : 2;
    for (int i = 0; i < no; i++)
        settle(be, outs[i]);
    for (int i = 0; i < ni; i++)
        settle(be, ins[i]);
    rf_run_result r = gpu_run_kernel(be, p, k, outs, ins, stats, st);
    if (r == RF_RUN_FAILED && st->code == RF_EXIT_OUT_OF_MEMORY)
        impl_of(be)->memory_short = true;
    return r;
}

static size_t gpu_bytes_in_use(rf_backend *be) { return rf_cuda_bytes_in_use(ctx_of(be)); }
static size_t gpu_bytes_peak(rf_backend *be) { return rf_cuda_bytes_peak(ctx_of(be)); }

static void gpu_print_stats(rf_backend *be, FILE *f)
{
    rf_cuda_ctx *ctx = ctx_of(be);
    rf_cuda_io_stats io;
    rf_cuda_codegen_stats cg;
    rf_cuda_get_io_stats(ctx, &io);
    rf_cuda_codegen_get_stats(ctx, &cg);
    fprintf(f, "  gpu: context %.3f s; PCIe upload %.1f MB in %.4f s (%.1f GB/s), download %.1f MB in %.4f s (%.1f GB/s)\n",
            io.init_seconds, io.upload_bytes / 1e6, io.upload_seconds,
            io.upload_seconds > 0 ? io.upload_bytes / io.upload_seconds / 1e9 : 0.0, io.download_bytes / 1e6,
            io.download_seconds, io.download_seconds > 0 ? io.download_bytes / io.download_seconds / 1e9 : 0.0);
    if (io.pinned_up_bytes || io.pinned_down_bytes)
        fprintf(f, "  gpu: of those, %.1f MB up and %.1f MB down straight from and into pinned host tables (arena %.1f "
                   "MB); %.4f s waiting for copies run beside the kernels (their seconds above are only their starts)\n",
                io.pinned_up_bytes / 1e6, io.pinned_down_bytes / 1e6, rf_cuda_host_pinned_bytes() / 1e6,
                io.copies_wait_seconds);
    if (impl_of(be)->bound[0])
        fprintf(f, "  gpu: %s\n", impl_of(be)->bound);
    fprintf(f, "  gpu: %zu pool allocations, %zu host waits; peak device memory %.1f MiB\n", io.allocs, io.syncs,
            (double)rf_cuda_bytes_peak(ctx) / (1024.0 * 1024.0));
    size_t nmerge = 0, nhash = 0;
    rf_cuda_join_counts(ctx, &nmerge, &nhash);
    fprintf(f, "  gpu: joins with keys: %zu merge (binary search), %zu hash\n", nmerge, nhash);
    gpu_impl *g = impl_of(be);
    fprintf(f, "  gpu: dense sets (%s): %zu differences (%zu of two sets), %zu unions, %zu joins into a set, "
               "%zu expansions, %zu unions fell back; %zu set gathers written and sorted instead (%zu probing with "
               "their first input unsorted, %zu with the other input's rows), %zu as semi-joins, %zu into a set after their rows ran out of memory, "
               "%zu relations held as runs given a set, %zu gathered to rank 0 as bitmaps\n",
            g->dense_mode == 0 ? "off" : g->dense_mode == 2 ? "always" : "auto", g->dense_diffs, g->dense_set_diffs,
            g->dense_unions, g->dense_joins, g->dense_expands, g->dense_fallbacks, g->set_gathers_sorted,
            g->set_gathers_probed, g->set_gathers_other_side, g->semijoins_run, g->dense_after_oom, g->sets_of_runs, g->sets_gathered_as_bitmaps);
    if (g->mj_planned + g->mj_alt)
        fprintf(f, "  gpu: multiway joins with a second variable order: %zu ran in the planned order, %zu in the second\n",
                g->mj_planned, g->mj_alt);
    fprintf(f, "  gpu: runs (%s): %zu unions added a run (%zu known disjoint), %zu merges, %zu differences over "
               "runs, %zu tables made from runs, %zu sets gathered to rank 0 kept as runs, %zu merges put off "
               "(out of memory), %zu answers hashed and %zu downloaded a key range at a time\n",
            g->runs_mode == 0 ? "off" : g->runs_mode == 2 ? "always" : "auto", g->runs_unions, g->runs_disjoint,
            g->runs_merges, g->runs_diffs, g->runs_tables, g->runs_kept_gathered, g->runs_merges_put_off,
            g->runs_hashed_apart, g->runs_downloaded_apart);
    fprintf(f, "  gpu: pending sorts (%s): %zu sorts of distinct rows left to a join's probe side, %zu of them "
               "sorted later for another reader\n",
            g->pending_sorts ? "on" : "off", g->sorts_left, g->sorts_done_later);
    size_t sorts_in_order = 0, sorts_by_first = 0, merge_unions = 0;
    rf_cuda_sort_order_stats(ctx, &sorts_in_order, &sorts_by_first, &merge_unions);
    fprintf(f, "  gpu: sorts of two columns: %zu found in order (copied), %zu in second-column order (sorted by "
               "the first alone); %zu unions merged by tiles\n",
            sorts_in_order, sorts_by_first, merge_unions);
    size_t ntab = 0, nent = 0;
    rf_cuda_string_table_stats(ctx, &ntab, &nent);
    fprintf(f, "  gpu: string functions: %zu tables (%zu ids tabulated on the host); %zu kernels ran on the host "
               "(string functions the device cannot run)\n",
            ntab, nent, rf_cuda_host_kernels(ctx));
    fprintf(f, "  gpu: NVRTC (every stage %s, fused groups %s): %zu compiled (%.3f s), %zu disk-cache hits, %zu memory "
               "hits, %zu failures, load %.3f s\n",
            g->codegen ? "on" : "off", g->fuse_codegen ? "on" : "off", cg.compiled, cg.compile_seconds, cg.cache_hits,
            cg.mem_hits, cg.failures, cg.load_seconds);
    fprintf(f, "  gpu: generated kernels: %zu selections in one pass; reducing gathers: %zu as one kernel, %zu by "
               "the library's kernels\n",
            rf_cuda_select_passes(ctx), g->fused_generated, g->fused_library);
    rf_cuda_print_select_plans(ctx, f);
}

/* The row positions a rank numbered shifted by the rows of the ranks before
 * it (the distribution layer), on the device: one pass over the columns
 * named, instead of the rows down to the host and back. The rows keep
 * their order and their distinctness; a table made from runs is copied
 * first (the runs are shared and immutable). */
static bool gpu_add_to_columns(rf_backend *be, rf_dvar *v, const uint64_t *add, rf_status *st)
{
    settle(be, v);
    rf_cuda_ctx *ctx = ctx_of(be);
    if (!ensure_table(be, v, st) || !sort_pending(be, v, st))
        return false;
    bool distinct = v->distinct, sorted_set = v->sorted_set;
    if (v->rel_is_view) {
        rf_drel own;
        rf_drel_init(&own, v->rel.arity);
        if (!rf_drel_copy(ctx, &own, &v->rel, "row positions shifted", st)) {
            rf_drel_free(ctx, &own);
            return false;
        }
        becomes_table(be, v);   /* (the runs dropped: rel, their view, reset) */
        v->rel = own;
    } else {
        becomes_table(be, v);   /* (a dense set of the old rows dropped; rel stays) */
    }
    v->distinct = distinct;
    v->sorted_set = sorted_set;
    v->stamp = ++impl_of(be)->last_stamp;
    v->minus_stamp = 0;
    return rf_drel_add_to_columns(ctx, &v->rel, add, st);
}

static bool gpu_column_sign_uniform(rf_backend *be, const rf_dvar *v, int col)
{
    settle(be, v);
    if (!v->table_ok && v->nruns > 1) {
        /* each run's words below 2^63, so their union's: not merged here
         * (it may not fit: runs_block_hashes) */
        for (int i = 0; i < v->nruns; i++)
            if (!rf_drel_column_sign_uniform(ctx_of(be), &v->runs[i]->rel, col))
                return false;
        return true;
    }
    rf_status ignored = {0};
    return ensure_table(be, v, &ignored) && rf_drel_column_sign_uniform(ctx_of(be), &v->rel, col);
}

/* ---- Moving a relation between ranks (the distribution layer over
 * NCCL, `redfox run --gpus N`): rows regrouped by rank on the device,
 * sent and received device to device, the part laid out again; nothing
 * crosses to the host but counts ---- */

/* rows_of[s * size + d]: the rows rank s sends rank d, every rank's row
 * of the matrix summed over all ranks (one all-reduce). */
static bool move_counts(rf_move_rows *how, uint64_t *rows_of, rf_status *st)
{
    rf_comm *c = how->comm;
    char err[256];
    how->collectives++;
    if (!c->allreduce_u64(c, rows_of, c->size * c->size, RF_COMM_SUM, err, sizeof err))
        return rf_fail(st, RF_EXIT_RUNTIME_ERROR, "%s", err);
    return true;
}

/* out := the union of the sections, each sorted and deduplicated (as
 * sets; a merge per section, where sorting their concatenation would
 * redo the work each rank did). */
static bool merge_sections(rf_cuda_ctx *ctx, int n, const rf_row_section *sec, rf_drel *out, rf_status *st)
{
    int ar = out->arity;
    rf_drel cur;
    rf_drel_init(&cur, ar);
    bool owned = false, ok = true;
    for (int s = 0; ok && s < n; s++) {
        if (sec[s].rows == 0)
            continue;
        rf_drel view = {ar, sec[s].rows, sec[s].stride, (rf_word *)sec[s].data};
        if (!cur.data) {
            cur = view;
            continue;
        }
        rf_drel next;
        rf_drel_init(&next, ar);
        ok = rf_cuda_union(ctx, &cur, &view, &next, "a relation moved between ranks", st);
        if (owned)
            rf_drel_free(ctx, &cur);
        cur = next;
        owned = true;
        if (!ok)
            break;
    }
    if (ok && !owned)   /* one section or none: a copy of it */
        return cur.data ? rf_drel_copy(ctx, out, &cur, "a relation moved between ranks", st)
                        : rf_drel_alloc(ctx, out, 0, "a relation moved between ranks", st);
    if (ok) {
        rf_drel_free(ctx, out);
        rf_drel_move(ctx, out, &cur);
    } else if (owned) {
        rf_drel_free(ctx, &cur);
    }
    return ok;
}

/* A dense set's frame, as a number: equal on two ranks when bit i of
 * their sets means the same row (never 0 or ~0: move_set_as_bitmap's
 * agreement keeps those). */
static uint64_t frame_print(const rf_dset *s)
{
    uint64_t h = 0xcbf29ce484222325ull;
    uint64_t w[3 + 2 * RF_CUDA_MAX_COLS];
    int n = 0;
    w[n++] = (uint64_t)s->arity;
    w[n++] = (uint64_t)s->total_bits;
    w[n++] = (uint64_t)s->nwords;
    for (int j = 0; j < s->arity && j < RF_CUDA_MAX_COLS; j++) {
        w[n++] = (uint64_t)s->bits[j];
        w[n++] = s->lo[j];
    }
    for (int i = 0; i < n; i++) {
        h ^= w[i] + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
        h *= 0xbf58476d1ce4e5b9ull;
    }
    return h == 0 || h == ~0ull ? 1 : h;
}

/* A set gathered to rank 0 (an answer) whose parts are dense sets in one
 * frame on every rank goes as its bitmaps: rank 0 ORs the others' into its
 * own. Rows would be expanded from every part, sent and merged: TC on
 * R-MAT 16 over two H100s, 199M rows a rank, 17 ms to expand, 9 ms to send
 * 3.2 GB, 9 ms to merge; its bitmap is 512 MB and the OR one pass. Only
 * where no rank's bitmap is larger than its rows. Every rank calls this
 * for every move (the ranks agree in one all-reduce of the frames'
 * prints); *done false: the rows are to move instead. RF_DIST_SET_BITMAPS=0
 * turns it off (measurements). */
static bool move_set_as_bitmap(rf_backend *be, rf_dvar *v, rf_move_rows *how, bool *done, rf_status *st)
{
    *done = false;
    rf_comm *c = how->comm;
    const char *env = getenv("RF_DIST_SET_BITMAPS");
    if (how->to != RF_MOVE_ROOT || !how->set || how->from_all || c->size < 2 || (env && strcmp(env, "0") == 0))
        return true;
    rf_cuda_ctx *ctx = ctx_of(be);
    int me = c->rank, size = c->size;
    size_t rows = gpu_var_rows(be, v), nwords = v->set.nwords;
    bool fit = v->has_set && v->nruns == 0 && v->set.words && nwords > 0 &&
               nwords <= rf_mul_size(rows, (size_t)(v->set.arity > 0 ? v->set.arity : 1));
    uint64_t *inbox = NULL;
    size_t inbox_bytes = 0;
    if (fit && me == 0) {
        rf_status quiet;
        rf_status_init(&quiet);
        inbox_bytes = rf_mul_size(rf_mul_size((size_t)(size - 1), nwords), 8);
        inbox = rf_cuda_alloc(ctx, inbox_bytes, "dense sets arriving from other ranks", &quiet);
        fit = inbox != NULL;
    }
    uint64_t print = fit ? frame_print(&v->set) : 0, agree[2] = {print, ~print};
    char err[256];
    how->collectives++;
    if (!c->allreduce_u64(c, agree, 2, RF_COMM_MAX, err, sizeof err)) {
        if (inbox)
            rf_cuda_free(ctx, inbox, inbox_bytes);
        return rf_fail(st, RF_EXIT_RUNTIME_ERROR, "%s", err);
    }
    /* max(p) and max(~p) = ~min(p): every rank's print is the same, and
     * none is 0 (a rank that does not fit) */
    if (agree[0] == 0 || agree[1] != ~agree[0]) {
        if (inbox)
            rf_cuda_free(ctx, inbox, inbox_bytes);
        return true;
    }
    *done = true;
    const char *trace_env = getenv("RF_DIST_TRACE");
    bool trace = trace_env && *trace_env && strcmp(trace_env, "0") != 0;
    double t0 = trace ? rf_now() : 0;
    const uint64_t **send = rf_calloc((size_t)size, sizeof *send);
    uint64_t **recv = rf_calloc((size_t)size, sizeof *recv);
    size_t *sendw = rf_calloc((size_t)size, sizeof *sendw), *recvw = rf_calloc((size_t)size, sizeof *recvw);
    for (int s = 0; s < size; s++) {
        if (me == 0 && s != 0) {
            recv[s] = inbox + (size_t)(s - 1) * nwords;
            recvw[s] = nwords;
        } else if (me != 0 && s == 0) {
            send[0] = v->set.words;
            sendw[0] = nwords;
        }
    }
    /* the bitmap's writes are done before NCCL reads it */
    bool ok = rf_cuda_sync(ctx, st);
    if (ok) {
        how->collectives++;
        if (!c->alltoallv_device(c, send, sendw, recv, recvw, err, sizeof err))
            ok = rf_fail(st, RF_EXIT_RUNTIME_ERROR, "%s", err);
    }
    if (me != 0) {
        how->rows_sent += rows;
        how->words_sent += nwords;
    }
    if (ok && me == 0) {
        ok = rf_dset_or_words(ctx, &v->set, inbox, size - 1, st);
        if (ok) {   /* the set holds the gathered rows; a table of this rank's alone is stale */
            if (!v->rel_is_view)
                rf_drel_free(ctx, &v->rel);
            rf_drel_init(&v->rel, v->rel.arity);
            v->rel_is_view = false;
            v->table_ok = false;
        }
    } else if (ok) {   /* this rank's rows are rank 0's now */
        becomes_table(be, v);
        rf_drel_free(ctx, &v->rel);
        ok = rf_drel_alloc(ctx, &v->rel, 0, "a relation moved to rank 0", st);
    }
    if (inbox)
        rf_cuda_free(ctx, inbox, inbox_bytes);
    if (ok) {
        v->sorted_set = false;
        v->pending_sort = false;
        v->distinct = true;
        v->stamp = ++impl_of(be)->last_stamp;
        v->minus_stamp = 0;
        v->set_never = false;
        v->set_retry = 0;
        impl_of(be)->sets_gathered_as_bitmaps++;
    }
    if (trace && ok && rf_cuda_sync(ctx, st))
        fprintf(stderr, "redfox: rank %d move (root, set as a bitmap): %zu rows -> %zu, %zu words; %.2f ms\n", me,
                rows, gpu_var_rows(be, v), nwords, (rf_now() - t0) * 1e3);
    free(send);
    free(recv);
    free(sendw);
    free(recvw);
    return ok;
}

static bool gpu_move_rows(rf_backend *be, rf_dvar *v, rf_move_rows *how, rf_status *st)
{
    settle(be, v);
    rf_cuda_ctx *ctx = ctx_of(be);
    rf_comm *c = how->comm;
    int size = c->size, me = c->rank, ar = v->rel.arity;
    const char *trace_env = getenv("RF_DIST_TRACE");
    bool trace = trace_env && *trace_env && strcmp(trace_env, "0") != 0;
    double t_start = trace ? rf_now() : 0, t_split = t_start, t_counts = t_start, t_sent = 0;   /* (from_all: no split, no counts) */
    if (size > RF_CUDA_MAX_RANKS || ar < 1)
        return rf_fail(st, RF_EXIT_RUNTIME_ERROR, "internal error: a device move of %d columns over %d ranks", ar,
                       size);
    bool as_bitmap = false;
    if (!move_set_as_bitmap(be, v, how, &as_bitmap, st))
        return false;
    if (as_bitmap)
        return true;
    /* (a failure below still joins the count all-reduce: every rank must) */
    bool ok = ensure_table(be, v, st);
    size_t n = ok ? v->rel.nrows : 0;
    bool was_pending = v->pending_sort, was_distinct = v->distinct;
    /* The rows for each rank: sections of packed (a hash move), or the
     * whole part for every other rank (to all, to rank 0). */
    size_t *rows = rf_calloc((size_t)size, sizeof *rows);
    uint64_t *rows_of = rf_calloc((size_t)size * (size_t)size, sizeof *rows_of);
    const uint64_t **send = rf_calloc((size_t)size, sizeof *send);
    uint64_t **recv = rf_calloc((size_t)size, sizeof *recv);
    size_t *sendw = rf_calloc((size_t)size, sizeof *sendw), *recvw = rf_calloc((size_t)size, sizeof *recvw);
    rf_row_section *sec = rf_calloc((size_t)size, sizeof *sec);
    uint64_t *packed = NULL, *inbox = NULL;
    size_t packed_bytes = 0, inbox_bytes = 0;
    rf_drel out;
    rf_drel_init(&out, ar);
    rf_row_section own = {v->rel.data, n, v->rel.cap};   /* the rows that stay */
    bool unsorted = how->set && was_pending, merged = false, kept_as_runs = false;
    /* Rows distinct on every rank are distinct overall (a variable's parts
     * are disjoint unless it is replicated, and a replicated one only
     * keeps its own rows here), so they stay distinct wherever they go:
     * the semi-naive delta re-keyed for its join keeps its SORT pending. */
    bool all_distinct = was_distinct;
    if (how->to == RF_MOVE_HASH) {
        packed_bytes = rf_mul_size(rf_mul_size(n, (size_t)ar), 8);
        packed = n ? rf_cuda_alloc(ctx, packed_bytes, "rows moving between ranks", st) : NULL;
        ok = ok && (!n || packed) && rf_cuda_rank_split(ctx, &v->rel, how->nkeys, how->cols, size, packed, rows, st);
        size_t at = 0;
        for (int d = 0; ok && d < size; d++) {
            if (d == me)
                own = (rf_row_section){packed + at * (size_t)ar, rows[d], rows[d]};
            else
                send[d] = packed + at * (size_t)ar;
            at += rows[d];
        }
    } else if (!how->from_all) {
        bool sends = how->to == RF_MOVE_ALL || me != 0;
        if (sends && n && v->rel.cap != n) {   /* the part packed once, sent to each */
            packed_bytes = rf_mul_size(rf_mul_size(n, (size_t)ar), 8);
            packed = rf_cuda_alloc(ctx, packed_bytes, "rows moving between ranks", st);
            ok = ok && packed && rf_cuda_pack_rows(ctx, &v->rel, packed, st);
        }
        for (int d = 0; d < size; d++)
            if (d != me && (how->to == RF_MOVE_ALL || d == 0)) {
                rows[d] = n;
                send[d] = packed ? packed : v->rel.data;
            }
        if (how->to == RF_MOVE_ROOT && me != 0)
            own.rows = 0;
    }
    if (how->from_all) {   /* a copy of every row is here: keep ours, send nothing */
        if (how->to == RF_MOVE_ROOT && me != 0)
            own.rows = 0;
        ok = ok && rf_cuda_concat_sections(ctx, 1, &own, &out, "a relation's rows for this rank", st);
    } else {
        for (int d = 0; d < size; d++)
            if (d != me)
                rows_of[(size_t)me * size + d] = rows[d];
        /* every rank reaches this all-reduce, failed or not, so that none
         * waits for another: a failed one sends nothing (its error ends
         * the run after the exchange) */
        /* the diagonal: 1 this rank failed, 2 its part of a set is not
         * sorted (a SORT left pending), 4 its rows are not known distinct */
        rows_of[(size_t)me * size + me] =
            (uint64_t)!ok | (uint64_t)(how->set && was_pending) << 1 | (uint64_t)!was_distinct << 2;
        if (trace && rf_cuda_sync(ctx, st))
            t_split = rf_now();
        rf_status mine = *st;
        rf_status_init(st);
        ok = move_counts(how, rows_of, st) && ok;
        t_counts = trace ? rf_now() : 0;
        uint64_t any_failed = 0;
        for (int s = 0; s < size; s++) {
            any_failed |= rows_of[(size_t)s * size + s] & 1;
            unsorted |= (rows_of[(size_t)s * size + s] & 2) != 0;
            all_distinct &= (rows_of[(size_t)s * size + s] & 4) == 0;
        }
        if (!ok || any_failed) {
            if (mine.code)
                *st = mine;
            else if (!st->code)
                rf_fail(st, RF_EXIT_RUNTIME_ERROR, "another rank failed to move a relation");
            ok = false;
        }
        size_t got = 0;
        for (int s = 0; ok && s < size; s++)
            if (s != me)
                got += rows_of[(size_t)s * size + me];
        if (ok && got) {
            inbox_bytes = rf_mul_size(rf_mul_size(got, (size_t)ar), 8);
            inbox = rf_cuda_alloc(ctx, inbox_bytes, "rows arriving from other ranks", st);
            ok = inbox != NULL;
        }
        /* the sends' rows must be written before NCCL reads them */
        ok = ok && rf_cuda_sync(ctx, st);
        size_t at = 0;
        for (int s = 0; ok && s < size; s++) {
            size_t k = s == me ? 0 : rows_of[(size_t)s * size + me];
            sendw[s] = s == me ? 0 : rows[s] * (size_t)ar;
            recvw[s] = k * (size_t)ar;
            recv[s] = inbox ? inbox + at * (size_t)ar : NULL;
            sec[s] = s == me ? own : (rf_row_section){recv[s], k, k};
            at += k;
            how->rows_sent += s == me ? 0 : rows[s];
            how->words_sent += sendw[s];
        }
        /* Whether an exchange happens at all is the same on every rank (it
         * follows the count matrix every rank holds). */
        size_t moving = 0;
        for (size_t i = 0; ok && i < (size_t)size * size; i++)
            moving += i % ((size_t)size + 1) ? rows_of[i] : 0;
        if (ok && moving) {
            char err[256];
            how->collectives++;
            if (!c->alltoallv_device(c, send, sendw, recv, recvw, err, sizeof err))
                ok = rf_fail(st, RF_EXIT_RUNTIME_ERROR, "%s", err);
        }
        t_sent = trace ? rf_now() : 0;
        /* A set whose parts were sorted everywhere: the sections merged
         * (each is a sorted subsequence of a sorted part) */
        merged = ok && how->set && !unsorted;
        if (merged) {
            /* RF_TEST_GPU_GATHER_RUNS=1: every set gathered to rank 0 is
             * taken as too large to merge there (the tests' small graphs) */
            const char *forced = how->to == RF_MOVE_ROOT ? getenv("RF_TEST_GPU_GATHER_RUNS") : NULL;
            if (forced && *forced == '1')
                ok = rf_fail(st, RF_EXIT_OUT_OF_MEMORY, "a set gathered to rank 0 (RF_TEST_GPU_GATHER_RUNS)");
            else
                ok = merge_sections(ctx, size, sec, &out, st);
            /* Rank 0 gathering a set too large to merge beside its parts
             * (same generation on p2p-Gnutella31 over two H200s: two 30 GB
             * parts, a 59 GB union; on usroads over four, a 50 GB union of
             * four parts): the parts stay runs, sorted and disjoint (a
             * hash-placed set's parts share no row), merged where they are
             * read (a count hashes them a key range at a time, a download
             * merges them on the host). */
            int arriving = 0;
            for (int s = 0; s < size; s++)
                arriving += s != me && sec[s].rows > 0;
            if (!ok && st->code == RF_EXIT_OUT_OF_MEMORY && how->to == RF_MOVE_ROOT && arriving >= 1 &&
                own.data == v->rel.data && own.rows == v->rel.nrows) {
                rf_status_init(st);
                ok = kept_as_runs = true;
            }
        } else {
            ok = ok && rf_cuda_concat_sections(ctx, size, sec, &out, "a relation's rows for this rank", st);
        }
    }
    /* Else a set is sorted and deduplicated again, unless it is this
     * rank's own sorted rows alone (a subsequence of sorted rows). */
    bool resort = how->set && !merged && (out.nrows != own.rows || was_pending);
    ok = ok && (!resort || rf_cuda_sort_unique(ctx, &out, &out, "a relation moved between ranks", st));
    if (packed)
        rf_cuda_free(ctx, packed, packed_bytes);
    if (inbox && !kept_as_runs)   /* (else it becomes a run of v, below) */
        rf_cuda_free(ctx, inbox, inbox_bytes);
    if (trace && ok && rf_cuda_sync(ctx, st)) {   /* RF_DIST_TRACE=1: each move's phases */
        double end = rf_now();
        static const char *const to_name[] = {"hash", "all", "root"};
        fprintf(stderr, "redfox: rank %d move (%s%s%s): %zu rows -> %zu, sent %zu; split %.2f ms, counts %.2f ms, "
                "exchange %.2f ms, %s %.2f ms\n", me, to_name[how->to], how->from_all ? ", from all" : "",
                how->set ? ", set" : "", n, out.nrows, how->rows_sent, (t_split - t_start) * 1e3,
                (t_counts - t_split) * 1e3, (t_sent - t_counts) * 1e3,
                merged ? "merge" : resort ? "concat+sort" : "concat", (end - (t_sent ? t_sent : t_start)) * 1e3);
    }
    if (!ok && kept_as_runs && inbox)
        rf_cuda_free(ctx, inbox, inbox_bytes);
    if (ok && kept_as_runs) {
        /* v's own rows become its first run (they are one already when
         * v was held as runs), each other rank's section one more: views
         * of the one buffer they arrived in, which the last of them frees */
        if (v->nruns == 0)
            runs_push(v, run_take(be, &v->rel));
        if (v->rel_is_view) {
            rf_drel_init(&v->rel, ar);
            v->rel_is_view = false;
        }
        size_t inbox_rows = inbox_bytes / ((size_t)ar * 8);
        rf_drel arrived = {ar, inbox_rows, inbox_rows, (rf_word *)inbox};
        inbox = NULL;
        rel_run *buffer = run_take(be, &arrived);
        buffer->refs = 0;
        for (int s = 0; s < size; s++) {
            if (s == me || sec[s].rows == 0)
                continue;
            rel_run *r = rf_calloc(1, sizeof *r);
            r->rel = (rf_drel){ar, sec[s].rows, sec[s].stride, (rf_word *)sec[s].data};
            r->refs = 1;
            r->storage = buffer;
            buffer->refs++;
            runs_push(v, r);
        }
        v->table_ok = false;
        impl_of(be)->runs_kept_gathered++;
    }
    if (ok) {
        if (!kept_as_runs) {
            becomes_table(be, v);
            rf_drel_free(ctx, &v->rel);
            v->rel = out;
        }
        v->distinct = how->set || all_distinct;
        v->stamp = ++impl_of(be)->last_stamp;
        v->minus_stamp = 0;
        v->set_never = false;
        v->set_retry = 0;
    } else {
        rf_drel_free(ctx, &out);
    }
    free(rows);
    free(rows_of);
    free(send);
    free(recv);
    free(sendw);
    free(recvw);
    free(sec);
    return ok;
}

/* ---- Answers held as runs that do not fit merged ----
 * SG on usroads ends with its answer as two runs (50 GB) that the device
 * cannot merge whole; downloading them and merging on the host took 36 s
 * of a 41 s query (docs/performance.md). Instead the runs are merged on
 * the device a key range at a time, and each piece is hashed where it is
 * (--count: the blocks of the hash, runtime.c answer_hash, are counted
 * from the answer's first row, so the rows of an unfinished block are
 * carried into the next piece) or downloaded to its place. */

/* Rows [from, to) of r, sharing its storage (not to be freed). */
static rf_drel drel_view(const rf_drel *r, size_t from, size_t to)
{
    rf_drel v = *r;
    v.data = r->data ? r->data + from : NULL;
    v.nrows = to - from;
    return v;
}

/* *pos := the first row of sorted r not below key (all columns compared as
 * words, as the runs are ordered): a binary search reading one row a step. */
static bool run_lower_bound(rf_backend *be, const rf_drel *r, const uint64_t *key, size_t *pos, rf_status *st)
{
    uint64_t row[RF_CUDA_MAX_COLS];
    size_t lo = 0, hi = r->nrows;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (!rf_drel_read_row(ctx_of(be), r, mid, row, st))
            return false;
        int c = 0;
        for (int k = 0; k < r->arity && c == 0; k++)
            c = row[k] < key[k] ? -1 : row[k] > key[k] ? 1 : 0;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    *pos = lo;
    return true;
}

/* Rows of a piece of the merged runs: about 1 GiB (RF_TEST_GPU_RUNS_APART=ROWS
 * sets it, and takes this path for every output held as several runs, for
 * tests on small data). */
static size_t run_piece_rows(int arity)
{
    const char *t = getenv("RF_TEST_GPU_RUNS_APART");
    size_t rows = t && *t ? (size_t)strtoull(t, NULL, 10) : 0;
    return rows ? rows : ((size_t)1 << 30) / ((size_t)arity * 8);
}

/* v's runs cut into key ranges: *npieces of them, piece p's rows of run i
 * being [bound[p * nruns + i], bound[(p + 1) * nruns + i]) (bound malloc'd).
 * The pieces split at rows of the largest run, the same keys found in the
 * others by binary search. */
static bool runs_pieces(rf_backend *be, const rf_dvar *v, size_t *npieces, size_t **bound, rf_status *st)
{
    int nr = v->nruns, big = 0;
    for (int i = 1; i < nr; i++)
        if (v->runs[i]->rel.nrows > v->runs[big]->rel.nrows)
            big = i;
    const rf_drel *b = &v->runs[big]->rel;
    size_t piece = run_piece_rows(b->arity), n = (runs_rows(v) + piece - 1) / piece;
    n = n < 1 ? 1 : n > b->nrows ? b->nrows : n;
    size_t *at = rf_calloc((n + 1) * (size_t)nr, sizeof *at);
    bool ok = true;
    uint64_t key[RF_CUDA_MAX_COLS];
    for (size_t p = 1; ok && p < n; p++) {
        ok = rf_drel_read_row(ctx_of(be), b, p * b->nrows / n, key, st);
        for (int i = 0; ok && i < nr; i++)
            ok = run_lower_bound(be, &v->runs[i]->rel, key, &at[p * (size_t)nr + i], st);
    }
    for (int i = 0; i < nr; i++)
        at[n * (size_t)nr + i] = v->runs[i]->rel.nrows;
    if (!ok) {
        free(at);
        return false;
    }
    *npieces = n;
    *bound = at;
    return true;
}

/* *merged := piece p's rows of every run, merged (the runs are disjoint and
 * sorted, so the union is their merge): a view of a run where only one has
 * rows in the piece (*owned false), else a relation of its own. */
static bool runs_piece(rf_backend *be, const rf_dvar *v, const size_t *bound, size_t p, rf_drel *merged, bool *owned,
                       rf_status *st)
{
    int nr = v->nruns;
    rf_drel_init(merged, v->runs[0]->rel.arity);
    *owned = false;
    for (int i = 0; i < nr; i++) {
        size_t from = bound[p * (size_t)nr + i], to = bound[(p + 1) * (size_t)nr + i];
        if (to <= from)
            continue;
        rf_drel part = drel_view(&v->runs[i]->rel, from, to);
        if (merged->nrows == 0 && !*owned) {
            *merged = part;
            continue;
        }
        rf_drel m;
        rf_drel_init(&m, part.arity);
        bool ok = rf_cuda_union(ctx_of(be), merged, &part, &m, "a relation held as runs", st);
        if (*owned)
            rf_drel_free(ctx_of(be), merged);
        *merged = m;
        *owned = true;
        if (!ok)
            return false;
    }
    return true;
}

static bool runs_block_hashes(rf_backend *be, const rf_dvar *v, size_t block_rows, uint64_t seed, uint64_t **hashes,
                              size_t *nrows, rf_status *st)
{
    rf_cuda_ctx *ctx = ctx_of(be);
    int arity = v->runs[0]->rel.arity;
    size_t npieces, *bound, nh = 0, done = 0;
    if (!runs_pieces(be, v, &npieces, &bound, st))
        return false;
    uint64_t *h = rf_malloc((runs_rows(v) / block_rows + 2) * sizeof *h);
    rf_drel tail; /* the rows of the block not yet complete */
    rf_drel_init(&tail, arity);
    bool ok = true;
    for (size_t p = 0; ok && p < npieces; p++) {
        rf_drel merged, cat;
        bool owned = false;
        rf_drel_init(&cat, arity);
        ok = runs_piece(be, v, bound, p, &merged, &owned, st);
        /* the carried rows first */
        const rf_drel *rows = &merged;
        if (ok && tail.nrows > 0) {
            rf_row_section sec[2] = {{tail.data, tail.nrows, tail.cap}, {merged.data, merged.nrows, merged.cap}};
            ok = rf_cuda_concat_sections(ctx, merged.nrows ? 2 : 1, sec, &cat, "a relation held as runs", st);
            rows = &cat;
        }
        size_t nfull = ok ? rows->nrows / block_rows : 0;
        if (ok && nfull > 0) {
            rf_drel full = drel_view(rows, 0, nfull * block_rows);
            ok = rf_cuda_block_hashes(ctx, &full, block_rows, seed, h + nh, st);
            nh += nfull;
        }
        rf_drel rest;
        rf_drel_init(&rest, arity);
        if (ok && rows->nrows > nfull * block_rows) {
            rf_row_section sec = {rows->data + nfull * block_rows, rows->nrows - nfull * block_rows, rows->cap};
            ok = rf_cuda_concat_sections(ctx, 1, &sec, &rest, "a relation held as runs", st);
        }
        if (ok)
            done += merged.nrows;
        rf_drel_free(ctx, &tail);
        tail = rest;
        rf_drel_free(ctx, &cat);
        if (owned)
            rf_drel_free(ctx, &merged);
    }
    if (ok && tail.nrows > 0) {
        ok = rf_cuda_block_hashes(ctx, &tail, block_rows, seed, h + nh, st);
        nh++;
    }
    rf_drel_free(ctx, &tail);
    free(bound);
    if (!ok) {
        free(h);
        return false;
    }
    impl_of(be)->runs_hashed_apart++;
    *hashes = h;
    *nrows = done; /* the runs' rows (disjoint runs; a row in two would count once) */
    return true;
}

/* t := v's runs merged on the device a key range at a time, each piece
 * downloaded to its place: no merge on the host (SG usroads: 10-24 s for
 * 50 GB, faulting in host memory for a second copy as it went). */
static bool runs_download_apart(rf_backend *be, const rf_dvar *v, rf_table *t, rf_status *st)
{
    size_t npieces, *bound, at = 0;
    if (!runs_pieces(be, v, &npieces, &bound, st))
        return false;
    rf_table_resize(t, runs_rows(v));
    bool ok = true;
    for (size_t p = 0; ok && p < npieces; p++) {
        rf_drel merged;
        bool owned = false;
        ok = runs_piece(be, v, bound, p, &merged, &owned, st) && rf_drel_download_at(ctx_of(be), &merged, t, at, st);
        if (ok)
            at += merged.nrows;
        if (owned)
            rf_drel_free(ctx_of(be), &merged);
    }
    free(bound);
    if (!ok)
        return false;
    t->nrows = at;
    impl_of(be)->runs_downloaded_apart++;
    return true;
}

static bool gpu_block_hashes(rf_backend *be, const rf_dvar *v, size_t block_rows, uint64_t seed, uint64_t **hashes,
                             size_t *nrows, rf_status *st)
{
    settle(be, v);
    *hashes = NULL;
    *nrows = 0;
    bool apart = !v->table_ok && v->nruns > 1 && getenv("RF_TEST_GPU_RUNS_APART");
    bool ok = !apart && ensure_table(be, v, st) && sort_pending(be, v, st);
    if (!ok && (apart || st->code == RF_EXIT_OUT_OF_MEMORY) && !v->table_ok && v->nruns > 1) {
        /* the runs do not fit merged: hashed a key range at a time */
        rf_status_init(st);
        if (runs_block_hashes(be, v, block_rows, seed, hashes, nrows, st))
            return true;
    }
    size_t n = ok ? v->rel.nrows : 0, nblocks = n ? (n + block_rows - 1) / block_rows : 0;
    if (ok && nblocks) {
        *hashes = rf_malloc(nblocks * sizeof **hashes);
        ok = rf_cuda_block_hashes(ctx_of(be), &v->rel, block_rows, seed, *hashes, st);
    }
    if (ok) {
        *nrows = n;
        return true;
    }
    free(*hashes);
    *hashes = NULL;
    /* Out of memory (runs too large to merge here, say): not here; the
     * runtime downloads, which merges such runs on the host. */
    if (st->code == RF_EXIT_OUT_OF_MEMORY)
        rf_status_init(st);
    return false;
}

static void gpu_destroy(rf_backend *be)
{
    if (!be)
        return;
    gpu_impl *g = be->impl;
    if (g) {
        reap(be, 0);
        RF_VEC_FREE(g->crossing);
        rf_cuda_ctx_free(g->ctx);
        free(g->refused);
        free(g->frames);
        free(g->set_hist);
        free(g);
    }
    free(be);
}

/* The CPUs next to CUDA device `device` (its PCIe root's NUMA node:
 * /sys/bus/pci/devices/BUS/local_cpulist, "0-15,32-47") into list; *bus
 * gets the device's bus id. False where the system does not say. */
static bool device_cpulist(int device, char *list, size_t cap, char *bus, size_t bus_cap)
{
    char path[160];
    if (!rf_cuda_pci_bus_id(device, bus, bus_cap))
        return false;
    snprintf(path, sizeof path, "/sys/bus/pci/devices/%s/local_cpulist", bus);
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    bool got = fgets(list, (int)cap, f) != NULL;
    fclose(f);
    list[strcspn(list, "\n")] = '\0';
    return got && list[0];
}

/* A rank of `redfox run --gpus N` (RF_NCCL_RANK set) keeps its threads on
 * the CPUs next to its device, so that its launches, host waits and
 * pinned copies do not cross between sockets, when no other rank's device
 * hangs off the same node (ranks sharing one would share its cores: each
 * rank's thread pool is sized for its share of all of them). Threads made
 * later (the pool, the pool's prime, the downloads' helpers) inherit it;
 * those the first CUDA call made keep theirs. RF_GPU_BIND=0: off. One
 * process alone keeps every core. Writes what it did into note. */
static void bind_near_device(int device, char *note, size_t cap)
{
    note[0] = '\0';
    const char *env = getenv("RF_GPU_BIND"), *rank_s = getenv("RF_NCCL_RANK"), *size_s = getenv("RF_NCCL_SIZE");
    if (!rank_s || !size_s || (env && strcmp(env, "0") == 0))
        return;
    int rank = atoi(rank_s), size = atoi(size_s);
    char list[512], other[512], bus[64], other_bus[64];
    if (size < 2 || !device_cpulist(device, list, sizeof list, bus, sizeof bus))
        return;
    for (int q = 0; q < size; q++)   /* the ranks' devices are device - rank + q */
        if (q != rank && device_cpulist(device - rank + q, other, sizeof other, other_bus, sizeof other_bus) &&
            strcmp(other, list) == 0) {
            snprintf(note, cap, "threads not bound: devices %d and %d hang off the same CPUs (%.160s)", device,
                     device - rank + q, list);
            return;
        }
    cpu_set_t set;
    CPU_ZERO(&set);
    int ncpus = 0;
    for (char *p = list; *p;) {
        char *end;
        long lo = strtol(p, &end, 10), hi = lo;
        if (end == p)
            return;
        if (*end == '-')
            hi = strtol(end + 1, &end, 10);
        if (*end && *end != ',')
            return;
        for (long c = lo; c >= 0 && c <= hi && c < CPU_SETSIZE; c++, ncpus++)
            CPU_SET((int)c, &set);
        p = *end == ',' ? end + 1 : end;
    }
    if (ncpus == 0 || sched_setaffinity(0, sizeof set, &set) != 0)
        return;
    snprintf(note, cap, "threads on CPUs %.160s (%d, next to device %d at %.32s)", list, ncpus, device, bus);
}

void rf_backend_gpu_set_memory_budget(size_t bytes) { rf_cuda_set_prime_cap(bytes ? bytes : SIZE_MAX); }

rf_backend *rf_backend_gpu_new(rf_status *st)
{
    if (rf_cuda_device_count() <= 0) {
        rf_fail(st, RF_EXIT_RUNTIME_ERROR, "no CUDA device found (the GPU backend needs an NVIDIA GPU and driver)");
        return NULL;
    }
    /* RF_CUDA_DEVICE: which device (a rank of `redfox run --gpus N` gets
     * its own; default 0). */
    const char *dev_env = getenv("RF_CUDA_DEVICE");
    int device = dev_env && *dev_env ? atoi(dev_env) : 0;
    char bound[320];
    bind_near_device(device, bound, sizeof bound);
    rf_cuda_ctx *ctx = rf_cuda_ctx_new(device, st);
    if (!ctx)
        return NULL;
    /* Host-side work of this backend (download copies out of the pinned
     * staging buffers, the typed order of outputs) uses every core, unless
     * a number was set already (--threads, or the CPU backend beside it). */
    rf_prims_default_threads();
    /* RF_CUDA_CODEGEN=1 runs MAP/JOIN compute stages as NVRTC-generated
     * kernels instead of the interpreter. */
    const char *cg = getenv("RF_CUDA_CODEGEN");
    bool codegen = cg && *cg && strcmp(cg, "0") != 0;
    rf_cuda_set_codegen(ctx, codegen);
    rf_backend *be = rf_calloc(1, sizeof *be);
    gpu_impl *g = rf_calloc(1, sizeof *g);
    g->ctx = ctx;
    snprintf(g->bound, sizeof g->bound, "%s", bound);
    g->codegen = codegen;
    /* Fused groups run as generated kernels unless RF_CUDA_FUSE_CODEGEN=0
     * (then as the library's kernels: for comparison). */
    const char *fcg = getenv("RF_CUDA_FUSE_CODEGEN");
    g->fuse_codegen = !(fcg && strcmp(fcg, "0") == 0);
    const char *dm = getenv("RF_CUDA_DENSE");
    g->dense_mode = dm && strcmp(dm, "off") == 0 ? 0 : dm && strcmp(dm, "always") == 0 ? 2 : 1;
    const char *dup = getenv("RF_CUDA_SET_DUP");
    g->dense_dup_ratio = dup ? atof(dup) : 8.0;
    const char *rm = getenv("RF_CUDA_RUNS");
    g->runs_mode = rm && strcmp(rm, "off") == 0 ? 0 : rm && strcmp(rm, "always") == 0 ? 2 : 1;
    const char *ps = getenv("RF_CUDA_PENDING_SORT");
    g->pending_sorts = !(ps && strcmp(ps, "off") == 0);
    const char *sj = getenv("RF_CUDA_SEMIJOIN");
    g->semijoins = !(sj && strcmp(sj, "off") == 0);
    const char *ls = getenv("RF_CUDA_LONE_SELECT");
    g->lone_selects = !(ls && strcmp(ls, "off") == 0);
    be->name = "gpu";
    snprintf(be->device, sizeof be->device, "%s", rf_cuda_device_name(ctx));
    be->var_new = gpu_var_new;
    be->var_free = gpu_var_free;
    be->var_rows = gpu_var_rows;
    be->upload = gpu_upload;
    be->pooled_tables = true;   /* (the pinned arena: host_arena.c) */
    be->upload_unsorted = gpu_upload_unsorted;
    be->download = gpu_download;
    be->download_at = gpu_download_at;
    const char *ahead = getenv("RF_CUDA_MOVES_AHEAD");   /* off: parts' copies in turn with their kernels */
    if (!(ahead && strcmp(ahead, "off") == 0)) {
        be->upload_ahead = gpu_upload_ahead;
        be->download_at_ahead = gpu_download_at_ahead;
        be->moves_wait = gpu_moves_wait;
    }
    be->run = gpu_run;
    be->bytes_in_use = gpu_bytes_in_use;
    be->bytes_peak = gpu_bytes_peak;
    be->destroy = gpu_destroy;
    be->print_stats = gpu_print_stats;
    be->program_begins = gpu_program_begins;
    be->join_size = gpu_join_size;
    be->wcoj_auto_ratio = RF_WCOJ_AUTO_RATIO_GPU;
    be->column_sign_uniform = gpu_column_sign_uniform;
    be->move_rows = gpu_move_rows;
    be->block_hashes = gpu_block_hashes;
    be->add_to_columns = gpu_add_to_columns;
    be->impl = g;
    return be;
}
