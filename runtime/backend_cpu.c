/* The CPU backend: variables are host rf_tables (held as shared runs, see
 * rf_dvar), kernels are calls into the CPU operator library
 * (primitives/cpu). Tracks the bytes held by variables (in use and peak)
 * for --stats.
 *
 * A sorted variable may also (or instead) be held as a dense set (a bitmap
 * over its packed rows, rf_dense): once the full relation of a semi-naive
 * loop covers a good part of its column ranges, `new − full` becomes one
 * probe per new row and `full ∪ new` a bitmap copy plus one bit per new
 * row, instead of two passes over the whole relation every iteration. The
 * table form is rebuilt from the bitmap (in row order) only when some other
 * kernel, or the output, reads the variable.
 *
 * A JOIN whose rows only a SORT reads comes as one FUSED kernel with a set
 * gather (Kernel Weaver): join and sort-unique then run as one pass into a
 * bitmap when the output's ranges are dense (cpu_run_set). That replaces
 * the backend's former deferred joins (a JOIN's output held unrun until
 * the kernel after it turned out to be its SORT): the IR states the pair,
 * so unfused (--no-fuse) the JOIN and the SORT run apart. */
#include "backend.h"
#include "rf_prims.h"
#include "weaver.h"
#include "selplan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A run: an immutable, sorted, duplicate-free table (or, for an unsorted
 * variable, its one table), shared by reference count between variables
 * (COPY and UNION share instead of copying). Column ranges are computed
 * once, on demand, for the dense-set decision. */
typedef struct run {
    rf_table t;
    int refs;
    size_t counted;   /* bytes of t in the backend's in_use (t may grow while a taken run is written) */
    bool has_range;
    rf_word *lo, *hi; /* per column, valid when has_range and t.nrows */
} run;

struct rf_dvar {
    int arity;
    /* The rows as runs, valid when has_runs. A sorted variable's runs are
     * pairwise disjoint and ordered by size, each more than twice the next
     * (an LSM, binary-counter merging): `full ∪ new` adds a run and merges
     * only runs of comparable size, `new − full` probes each run. An
     * unsorted variable has at most one run. Kernels that read a variable
     * as one table merge its runs into one (kept until the next write). */
    run **runs;
    int nruns, caprun;
    bool has_runs;
    rf_table empty;   /* what a variable with no run reads as */
    rf_dense *dense;  /* the same set as a bitmap, or NULL (sorted vars only) */
    int *dense_refs;  /* holders of dense when shared (COPY, a lending UNION); NULL: v's alone */
    /* Rows dense holds that v does not, or NULL: a UNION of v and a few
     * new rows lent v's bitmap to its output, which added them in place
     * (dense_union). Erased, in a copy if the bitmap is still shared,
     * before v is read (dense_resolve); usually v is overwritten first. */
    struct run *undo;
    bool dense_tried; /* dense_of already found it too sparse */
    size_t nrows;
    size_t bytes;     /* accounted size of dense (runs account themselves) */
    /* Contents version: a new stamp at every write (process-unique), kept
     * by COPY (same contents). disjoint_from: the stamp of a version known
     * to share no row with these contents (a DIFF's right input), 0 if
     * none; lets the semi-naive `full ∪ (new − full)` skip re-probing. */
    uint64_t stamp, disjoint_from;
};

/* A sorted relation is worth a bitmap when the bitmap has at most this
 * many bits per row (32: 4 bytes a row against the table's 8 per column). */
#define DENSE_BITS_PER_ROW 32
/* A set gather goes through a bitmap only when the join gives at least
 * one row per this many input rows (finding the ranges reads them all). */
#define DENSE_JOIN_MIN_SHARE 8
/* A set gather of at most this many rows runs its join and sort directly. */
#define SMALL_SET_GATHER_ROWS 4096
/* Below this a merge is cheap and a bitmap not worth building. */
#define RF_DENSE_MIN_ROWS 65536

/* Variables kept for reuse: a loop of tiny deltas frees and makes a few
 * each iteration (moves leave their sources empty). */
#define SPARE_VARS 16

/* Runs kept for reuse with their storage: a loop of one-row deltas makes
 * and drops a few tiny runs every iteration (a set gather's rows, a DIFF's),
 * and their malloc/free was a fifth of its time. Only runs of at most
 * SPARE_RUN_ROWS rows of room are kept, so the pool stays a few KiB. */
#define SPARE_RUNS 32
#define SPARE_RUN_ROWS 256

/* Set gathers' composed chains, kept for the program's run (set_gather_chain). */
#define CHAIN_CACHE 32

typedef struct chain_entry {
    const rf_kernel *fk;
    bool ok;          /* rf_fused_compose succeeded (else: run the members) */
    rf_kernel chain;  /* valid when ok */
} chain_entry;

typedef struct cpu_impl {
    rf_dvar *spare[SPARE_VARS];
    int nspare;
    run *spare_runs[SPARE_RUNS]; /* refs 0, no rows, storage kept */
    int nspare_runs;
    const rf_hprogram *chain_prog; /* the program the chains belong to */
    chain_entry chains[CHAIN_CACHE];
    int nchains;
    size_t in_use, peak;
    /* Tests of --device-memory's rerun (RF_TEST_OOM_BYTES=N): a kernel
     * started while variables other than its own hold more than N bytes
     * fails as out of memory, as on a device full of them (the runtime
     * then spills them and runs it again). 0: never. */
    size_t oom_above;
    /* Tests of out-of-core kernels (RF_TEST_OOM_ROWS=N): a kernel whose
     * first output has more than N rows fails as out of memory after it
     * ran, as one whose result does not fit a device would. 0: never. */
    size_t oom_rows;
    uint64_t stamps;  /* last stamp handed out */
    size_t set_dense, set_sorted; /* set gathers through a bitmap in one pass / written and sorted */
    size_t set_probed;            /* of the written ones, joined with their first input unsorted */
    size_t set_semijoins;         /* set gathers keeping one input's rows whole, as semi-joins */
    size_t mj_planned, mj_alt;    /* multiway joins with a second order run in the planned one / the second */
    int *dest_scratch;  /* split_rows: each row's rank (kept, grown only) */
    size_t dest_cap;
} cpu_impl;

static void add_bytes(rf_backend *be, size_t add, size_t sub)
{
    cpu_impl *im = be->impl;
    im->in_use = im->in_use - sub + add;
    if (im->in_use > im->peak)
        im->peak = im->in_use;
}

static void account(rf_backend *be, rf_dvar *v)
{
    size_t now = v->dense ? rf_dense_bytes(v->dense) : 0;
    add_bytes(be, now, v->bytes);
    v->bytes = now;
}

static void run_unref(rf_backend *be, run *r);

/* Drops v's hold on its bitmap (freed with its last holder). */
static void dense_release(rf_backend *be, rf_dvar *v)
{
    if (v->dense && !(v->dense_refs && --*v->dense_refs > 0)) {
        rf_dense_free(v->dense);
        free(v->dense_refs);
    }
    v->dense = NULL;
    v->dense_refs = NULL;
    run_unref(be, v->undo);
    v->undo = NULL;
}

/* Whether v may change its bitmap in place: no other variable holds it. */
static bool dense_sole(const rf_dvar *v) { return v->dense && (!v->dense_refs || *v->dense_refs == 1); }

/* v's bitmap, to be held by one more variable (*refs: its count). */
static rf_dense *dense_share(rf_dvar *v, int **refs)
{
    if (!v->dense_refs) {
        v->dense_refs = rf_malloc(sizeof *v->dense_refs);
        *v->dense_refs = 1;
    }
    ++*v->dense_refs;
    *refs = v->dense_refs;
    return v->dense;
}

/* Makes v's bitmap its own set again before v is read (undo's rows
 * erased; from a copy while another variable holds the bitmap). */
static void dense_resolve(rf_backend *be, rf_dvar *v)
{
    if (!v || !v->undo)
        return;
    if (!dense_sole(v)) {
        rf_dense *d = rf_dense_clone(v->dense);
        --*v->dense_refs;
        v->dense = d;
        v->dense_refs = NULL;
    }
    rf_dense_erase(v->dense, &v->undo->t);
    run_unref(be, v->undo);
    v->undo = NULL;
    account(be, v);
}

/* The clock for stats->seconds, read only when the runtime wants kernel
 * times (--stats, --profile): a clock read costs about 60 ns on a VM, as
 * much as the whole of a one-row kernel. */
static double kernel_clock(const rf_backend *be) { return be->time_kernels ? rf_now() : 0.0; }

/* ---- runs ---- */

/* A run holding t's rows (taking t's storage; t is left holding nothing,
 * safe to rf_table_free). */
static run *run_new(rf_backend *be, rf_table *t)
{
    run *r = rf_calloc(1, sizeof *r);
    r->t = *t;
    t->cols = NULL;
    t->arity = 0;
    t->nrows = t->cap = 0;
    r->refs = 1;
    r->counted = rf_table_bytes(&r->t);
    add_bytes(be, r->counted, 0);
    return r;
}

/* An empty run of the arity to write rows into (then run_written): a
 * spare one, storage and all, when there is one. */
static run *run_take(rf_backend *be, int arity)
{
    cpu_impl *im = be->impl;
    for (int i = im->nspare_runs - 1; i >= 0; i--)
        if (im->spare_runs[i]->t.arity == arity) {
            run *r = im->spare_runs[i];
            im->spare_runs[i] = im->spare_runs[--im->nspare_runs];
            r->refs = 1;
            return r;
        }
    run *r = rf_calloc(1, sizeof *r);
    rf_table_init(&r->t, arity);
    r->refs = 1;
    return r;
}

/* Accounts a taken run's storage once its rows are written. */
static void run_written(rf_backend *be, run *r)
{
    size_t now = rf_table_bytes(&r->t);
    add_bytes(be, now, r->counted);
    r->counted = now;
}

static void run_unref(rf_backend *be, run *r)
{
    if (!r || --r->refs > 0)
        return;
    add_bytes(be, 0, r->counted);
    r->counted = 0;
    free(r->lo);
    free(r->hi);
    r->lo = r->hi = NULL;
    r->has_range = false;
    cpu_impl *im = be->impl;
    if (r->t.arity > 0 && r->t.cap <= SPARE_RUN_ROWS && im->nspare_runs < SPARE_RUNS) {
        r->t.nrows = 0;
        im->spare_runs[im->nspare_runs++] = r;
        return;
    }
    rf_table_free(&r->t);
    free(r);
}

/* Fills r's column ranges (once); false for an empty run. */
static bool run_range(run *r)
{
    if (r->t.nrows == 0 || r->t.arity < 1)
        return false;
    if (r->has_range)
        return true;
    int ar = r->t.arity;
    r->lo = rf_malloc((size_t)ar * sizeof *r->lo);
    r->hi = rf_malloc((size_t)ar * sizeof *r->hi);
    for (int c = 0; c < ar; c++) {
        const rf_word *col = r->t.cols[c];
        rf_word lo = col[0], hi = col[0];
        if (c == 0) { /* sorted on column 0 (unsorted runs never get here) */
            hi = col[r->t.nrows - 1];
        } else {
            for (size_t i = 1; i < r->t.nrows; i++) {
                lo = col[i] < lo ? col[i] : lo;
                hi = col[i] > hi ? col[i] : hi;
            }
        }
        r->lo[c] = lo;
        r->hi[c] = hi;
    }
    r->has_range = true;
    return true;
}

/* The merge of two disjoint sorted runs (ranges carried over when known). */
static run *run_merge(rf_backend *be, const run *a, const run *b)
{
    run *r;
    if (a->t.nrows + b->t.nrows <= SPARE_RUN_ROWS) { /* the LSM's small merges: into a spare run */
        r = run_take(be, a->t.arity);
        rf_prim_union_into(&a->t, &b->t, &r->t);
        run_written(be, r);
    } else {
        rf_table m;
        rf_prim_union(&a->t, &b->t, &m);
        r = run_new(be, &m);
    }
    if (a->has_range && b->has_range) {
        int ar = r->t.arity;
        r->lo = rf_malloc((size_t)ar * sizeof *r->lo);
        r->hi = rf_malloc((size_t)ar * sizeof *r->hi);
        for (int c = 0; c < ar; c++) {
            r->lo[c] = a->lo[c] < b->lo[c] ? a->lo[c] : b->lo[c];
            r->hi[c] = a->hi[c] > b->hi[c] ? a->hi[c] : b->hi[c];
        }
        r->has_range = true;
    }
    return r;
}

/* A list of runs under construction (holding one reference each). */
/* (The first RUNLIST_LOCAL in local: a list is made and dropped by most
 * kernels, and a variable rarely has more runs.) */
#define RUNLIST_LOCAL 8
typedef struct runlist {
    run **r;          /* local, or the heap once it outgrew it; NULL when empty */
    int n, cap;
    run *local[RUNLIST_LOCAL];
} runlist;

static void rl_push(runlist *l, run *r)
{
    if (!l->r) {
        l->r = l->local;
        l->cap = RUNLIST_LOCAL;
    }
    if (l->n == l->cap) {
        l->cap *= 2;
        if (l->r == l->local) {
            l->r = rf_malloc((size_t)l->cap * sizeof *l->r);
            memcpy(l->r, l->local, sizeof l->local);
        } else {
            l->r = rf_realloc(l->r, (size_t)l->cap * sizeof *l->r);
        }
    }
    l->r[l->n++] = r;
}

/* Adds a new run (disjoint from the others) at the small end and merges
 * while the run above is at most twice its size: sizes stay geometric, so
 * a row is merged O(log n) times over its life. */
static void rl_add_lsm(rf_backend *be, runlist *l, run *r)
{
    if (r->t.nrows == 0) {
        run_unref(be, r);
        return;
    }
    rl_push(l, r);
    while (l->n >= 2 && l->r[l->n - 2]->t.nrows <= 2 * l->r[l->n - 1]->t.nrows) {
        run *m = run_merge(be, l->r[l->n - 2], l->r[l->n - 1]);
        run_unref(be, l->r[l->n - 1]);
        run_unref(be, l->r[l->n - 2]);
        l->n -= 2;
        l->r[l->n++] = m;
    }
}

static rf_dvar *cpu_var_new(rf_backend *be, int arity, rf_status *st)
{
    (void)st;
    cpu_impl *im = be->impl;
    for (int i = im->nspare - 1; i >= 0; i--) /* one of the arity, with its run array */
        if (im->spare[i]->arity == arity) {
            rf_dvar *v = im->spare[i];
            im->spare[i] = im->spare[--im->nspare];
            return v;
        }
    rf_dvar *v = rf_calloc(1, sizeof *v);
    v->arity = arity;
    rf_table_init(&v->empty, arity);
    v->has_runs = true;
    return v;
}

static void clear_runs(rf_backend *be, rf_dvar *v)
{
    for (int i = 0; i < v->nruns; i++)
        run_unref(be, v->runs[i]);
    v->nruns = 0;
}

static void cpu_var_free(rf_backend *be, rf_dvar *v)
{
    if (!v)
        return;
    clear_runs(be, v);
    dense_release(be, v);
    account(be, v);
    cpu_impl *im = be->impl;
    if (im->nspare < SPARE_VARS) {
        /* As cpu_var_new leaves a new one (runs, dense, undo and bytes
         * are cleared above), field by field: a memset of the whole
         * struct (`rep stos`) was 4% of a loop of one-row deltas. */
        v->has_runs = true;
        v->dense_tried = false;
        v->nrows = 0;
        v->stamp = v->disjoint_from = 0;
        im->spare[im->nspare++] = v;
        return;
    }
    free(v->runs);
    rf_table_free(&v->empty);
    free(v);
}

static size_t cpu_var_rows(rf_backend *be, const rf_dvar *v)
{
    (void)be;
    return v ? v->nrows : 0;
}

/* Replaces v's contents with the runs of l (taken over; l is emptied) and
 * the bitmap d (taken over, may be NULL). */
static void set_runs_from(rf_backend *be, rf_dvar *v, run *const *rs, int n, rf_dense *d);

static void set_runs(rf_backend *be, rf_dvar *v, runlist *l, rf_dense *d)
{
    set_runs_from(be, v, l->r, l->n, d);
    if (l->r != l->local)
        free(l->r);
    l->r = NULL;
    l->n = l->cap = 0;
}

/* set_runs of the n runs rs[] (their references taken over). */
static void set_runs_from(rf_backend *be, rf_dvar *v, run *const *rs, int n, rf_dense *d)
{
    clear_runs(be, v);
    if (n > v->caprun) {
        v->caprun = n;
        v->runs = rf_realloc(v->runs, (size_t)v->caprun * sizeof *v->runs);
    }
    v->nrows = 0;
    for (int i = 0; i < n; i++) {
        v->runs[i] = rs[i];
        v->nrows += rs[i]->t.nrows;
    }
    v->nruns = n;
    v->has_runs = true;
    dense_release(be, v);
    v->dense = d;
    if (d)
        v->nrows = rf_dense_rows(d);
    v->dense_tried = false;
    v->stamp = ++((cpu_impl *)be->impl)->stamps;
    v->disjoint_from = 0;
    account(be, v);
}

/* Replaces v's contents with t (taking t's storage). */
static void set_table(rf_backend *be, rf_dvar *v, rf_table *t)
{
    run *r = t->nrows > 0 ? run_new(be, t) : NULL;
    rf_table_free(t);
    set_runs_from(be, v, &r, r != NULL, NULL);
}

/* Replaces v's contents with the rows of r (taken from run_take and
 * written: its reference is taken over). */
static void set_run(rf_backend *be, rf_dvar *v, run *r)
{
    run_written(be, r);
    if (r->t.nrows == 0) {
        run_unref(be, r);
        r = NULL;
    }
    set_runs_from(be, v, &r, r != NULL, NULL);
}

/* Replaces v's contents with the dense set d (taken over). */
static void set_dense(rf_backend *be, rf_dvar *v, rf_dense *d)
{
    runlist l = {0};
    set_runs(be, v, &l, d);
    v->has_runs = false;
}

/* v's rows as one table: rebuilt from the bitmap, or its runs merged into
 * one (and kept) if need be. */
static const rf_table *table_of(rf_backend *be, rf_dvar *v)
{
    if (!v->has_runs) {
        rf_table t;
        rf_dense_to_table(v->dense, &t);
        if (t.nrows > 0) {
            if (v->nruns + 1 > v->caprun) {
                v->caprun = v->nruns + 1;
                v->runs = rf_realloc(v->runs, (size_t)v->caprun * sizeof *v->runs);
            }
            v->runs[v->nruns++] = run_new(be, &t);
        }
        rf_table_free(&t);
        v->has_runs = true;
    }
    /* Smallest first: each merge is of runs of comparable size. */
    while (v->nruns > 1) {
        run *a = v->runs[v->nruns - 2], *b = v->runs[v->nruns - 1];
        run *m = run_merge(be, a, b);
        run_unref(be, a);
        run_unref(be, b);
        v->nruns--;
        v->runs[v->nruns - 1] = m;
    }
    return v->nruns ? &v->runs[0]->t : &v->empty;
}

/* v's bitmap, built from its runs (and kept) when v is sorted and dense
 * enough; NULL otherwise. */
static const rf_dense *dense_of(rf_backend *be, rf_dvar *v, bool sorted)
{
    if (v->dense || !sorted || v->nrows < RF_DENSE_MIN_ROWS || v->dense_tried || !v->has_runs || v->arity < 1)
        return v->dense;
    int max_bits = 0;
    size_t r = v->nrows * DENSE_BITS_PER_ROW;
    while (max_bits < RF_DENSE_MAX_BITS && ((size_t)2 << max_bits) <= r)
        max_bits++;
    /* The ranges of the runs (each computed once in its life). */
    int ar = v->arity;
    rf_word *lo = rf_malloc((size_t)ar * sizeof *lo), *hi = rf_malloc((size_t)ar * sizeof *hi);
    int *width = rf_malloc((size_t)ar * sizeof *width);
    bool any = false;
    for (int i = 0; i < v->nruns; i++) {
        run *rn = v->runs[i];
        if (!run_range(rn))
            continue;
        for (int c = 0; c < ar; c++) {
            lo[c] = !any || rn->lo[c] < lo[c] ? rn->lo[c] : lo[c];
            hi[c] = !any || rn->hi[c] > hi[c] ? rn->hi[c] : hi[c];
        }
        any = true;
    }
    int bits = 0;
    for (int c = 0; c < ar && any; c++) {
        width[c] = hi[c] - lo[c] ? 64 - __builtin_clzll(hi[c] - lo[c]) : 0;
        bits += width[c];
    }
    rf_dense *d = NULL;
    if (any && bits <= max_bits) {
        d = rf_dense_new_layout(ar, lo, width);
        for (int i = 0; i < v->nruns; i++)
            (void)rf_dense_insert_ex(d, &v->runs[i]->t, true, true); /* laid out for v */
        v->dense = d;
        account(be, v);
    } else {
        v->dense_tried = true; /* until the contents change */
    }
    free(lo);
    free(hi);
    free(width);
    return d;
}

static bool cpu_upload(rf_backend *be, rf_dvar *v, const rf_table *t, rf_status *st)
{
    if (t->arity != v->arity)
        return rf_fail(st, RF_EXIT_RUNTIME_ERROR, "upload: arity %d into a variable of arity %d",
                       t->arity, v->arity);
    rf_table c;
    rf_table_init(&c, t->arity);
    rf_table_copy(&c, t);
    set_table(be, v, &c);
    return true;
}

static bool cpu_download(rf_backend *be, const rf_dvar *cv, rf_table *t, rf_status *st)
{
    (void)st;
    rf_dvar *v = (rf_dvar *)cv; /* same rows, another representation */
    dense_resolve(be, v);
    if (!v->has_runs) {
        rf_table_free(t);
        rf_dense_to_table(v->dense, t);
    } else {
        rf_table_copy(t, table_of(be, v));
    }
    return true;
}

/* (Moves here are copies in host memory, done when they return.) */
static bool cpu_moves_wait(rf_backend *be, rf_status *st)
{
    (void)be;
    (void)st;
    return true;
}

static bool cpu_download_at(rf_backend *be, const rf_dvar *cv, rf_table *t, size_t at, size_t *rows_out,
                            rf_status *st)
{
    rf_dvar *v = (rf_dvar *)cv;
    dense_resolve(be, v);
    rf_table rows;
    const rf_table *from;
    if (!v->has_runs) {   /* a bitmap: its rows made first */
        rf_table_init(&rows, t->arity);
        rf_dense_to_table(v->dense, &rows);
        from = &rows;
    } else {
        from = table_of(be, v);
    }
    size_t n = from->nrows;
    bool ok = from->arity == t->arity && at <= t->cap && n <= t->cap - at;
    if (ok)
        rf_copy_rows_at(t, at, from);
    if (!v->has_runs)
        rf_table_free(&rows);
    *rows_out = ok ? n : 0;
    return ok || rf_fail(st, RF_EXIT_RUNTIME_ERROR, "download of %zu rows at row %zu of a table of %zu", n, at, t->cap);
}

/* UNION with a bitmap: a copy of one input's bitmap plus the other's rows.
 * False when neither input has (or merits) a bitmap, or the other's rows
 * fall outside its ranges. */
static bool dense_union(rf_backend *be, const rf_hprogram *p, const rf_kernel *k, rf_dvar *out,
                        rf_dvar *in0, rf_dvar *in1)
{
    if (!p->vars[k->out].sorted || !in0 || !in1)
        return false;
    rf_dvar *big = in0, *small = in1;
    if (!big->dense && small->dense) {
        big = in1;
        small = in0;
    }
    if (!big->dense) {
        /* Neither has one yet: build it for the bigger input if it merits
         * one on the union's size. */
        if (in1->nrows > in0->nrows) {
            big = in1;
            small = in0;
        }
        if (!dense_of(be, big, true)) /* UNION inputs are sorted (verifier) */
            return false;
    }
    const rf_table *s = table_of(be, small);
    int *refs = NULL;
    rf_dense *d;
    bool disjoint = small->disjoint_from != 0 && small->disjoint_from == big->stamp && small->nruns == 1;
    if (out != big && out != small && out->dense && out->dense == big->dense) {
        dense_release(be, out); /* out's old contents die here: its hold must not stop the lending */
        account(be, out);
    }
    if (dense_sole(big) && !big->undo && big != small &&
        (disjoint || s->nrows < rf_dense_bytes(big->dense) / 64)) {
        /* Lend big's bitmap instead of copying it (a semi-naive `full ∪
         * new` would copy the whole bitmap each iteration for a few new
         * rows): the new rows go into it in place, and big keeps them as
         * its undo in case it is read again. The semi-naive new rows are
         * known to be disjoint from big: their run is the undo; else
         * (few rows) those not yet in the bitmap are found first. */
        run *added;
        if (disjoint) {
            added = small->runs[0];
            added->refs++;
        } else {
            rf_table t;
            rf_dense_difference(s, big->dense, &t);
            added = run_new(be, &t);
            rf_table_free(&t);
        }
        if (!rf_dense_insert(big->dense, &added->t, true)) { /* outside its ranges: unchanged */
            run_unref(be, added);
            return false;
        }
        d = dense_share(big, &refs);
        if (added->t.nrows > 0 && !big->has_runs) {
            big->undo = added;
        } else {
            if (added->t.nrows > 0) { /* its runs still hold exactly its rows */
                dense_release(be, big);
                account(be, big);
            }
            run_unref(be, added);
        }
    } else {
        d = rf_dense_clone(big->dense);
        if (!rf_dense_insert(d, s, true)) {
            rf_dense_free(d);
            return false;
        }
    }
    set_dense(be, out, d);
    out->dense_refs = refs;
    return true;
}

/* The projection columns of a JOIN that has no filter and projects plain
 * columns (into cols[], nproj entries), else false. */
static bool join_is_direct(const rf_kernel *k, int *cols)
{
    if (k->op != RF_K_JOIN || k->nkeys < 1 || k->filter.n != 0 || k->nproj < 1)
        return false;
    for (int i = 0; i < k->nproj; i++)
        if ((cols[i] = rf_code_as_column(&k->proj[i])) < 0)
            return false;
    return true;
}

/* DIFF / ANTIJOIN against a variable held as several runs: a row survives
 * iff it survives every run. out is initialised here. */
static void diff_runs_to(const rf_table *a, const rf_dvar *b, int nkeys, rf_table *out, bool reuse)
{
    const rf_table *small[16], **runs = b->nruns <= 16 ? small : rf_malloc((size_t)b->nruns * sizeof *runs);
    for (int i = 0; i < b->nruns; i++)
        runs[i] = &b->runs[i]->t;
    if (reuse)
        rf_prim_antijoin_runs_into(a, runs, b->nruns, nkeys, out);
    else
        rf_prim_antijoin_runs(a, runs, b->nruns, nkeys, out);
    if (runs != small)
        free(runs);
}

static void diff_runs(const rf_table *a, const rf_dvar *b, int nkeys, rf_table *out)
{
    diff_runs_to(a, b, nkeys, out, false);
}

/* The same into out, an initialised table of a's arity whose storage is
 * reused. */
static void diff_runs_into(const rf_table *a, const rf_dvar *b, int nkeys, rf_table *out)
{
    diff_runs_to(a, b, nkeys, out, true);
}

/* UNION into a sorted output by runs: the smaller input, less what the
 * bigger one already holds (probed run by run), becomes a new run on top of
 * the bigger input's runs, which are shared, not copied. O(|small| * runs *
 * log) plus the amortised merging. False when not applicable. */
static bool lsm_union(rf_backend *be, const rf_hprogram *p, const rf_kernel *k, rf_dvar *out,
                      rf_dvar *in0, rf_dvar *in1)
{
    if (!p->vars[k->out].sorted || !in0 || !in1 || out->arity < 1)
        return false;
    rf_dvar *big = in0, *small = in1;
    if (in1->nrows > in0->nrows || (in1->nrows == in0->nrows && in1->nruns > in0->nruns)) {
        big = in1;
        small = in0;
    }
    if (!big->has_runs)
        return false;
    const rf_table *s = table_of(be, small);
    bool disjoint = small->disjoint_from != 0 && small->disjoint_from == big->stamp;
    runlist l = {0};
    for (int i = 0; i < big->nruns; i++) {
        big->runs[i]->refs++;
        rl_push(&l, big->runs[i]);
    }
    if (disjoint && small->nruns == 1) {
        /* The semi-naive `full ∪ (new − full)`: new's run is shared. */
        small->runs[0]->refs++;
        rl_add_lsm(be, &l, small->runs[0]);
    } else if (s->nrows > 0) {
        rf_table cur;
        if (disjoint) {
            rf_table_init(&cur, s->arity);
            rf_table_copy(&cur, s);
        } else {
            diff_runs(s, big, s->arity, &cur);
        }
        rl_add_lsm(be, &l, run_new(be, &cur));
        rf_table_free(&cur);
    }
    set_runs(be, out, &l, NULL);
    return true;
}


/* RF_WEAVE_SELPLAN on the CPU (docs/weaver.md s. 5): the filter's
 * conjuncts in the forced plan's order, as one && chain. The CPU evaluates
 * a row at a time, so `&` and `|` run as && here: only the order is the
 * plan's. Same rows, and the guard (rf_selplan_legal) keeps every error
 * --no-fuse reports; an illegal plan is an error. *use is filter or
 * *planned (the caller frees it). Without the variable, or for a filter
 * of another number of conjuncts, the filter as written: the CPU does not
 * plan by itself. */
static bool cpu_forced_filter(const rf_code *filter, rf_code *planned, const rf_code **use, rf_status *st)
{
    *use = filter;
    memset(planned, 0, sizeof *planned);
    const char *env = getenv("RF_WEAVE_SELPLAN");
    if (!env || !*env || !filter || filter->n == 0)
        return true;
    rf_selsplit split;
    if (!rf_selplan_split(filter, &split, st))
        return false;
    rf_selplan plan;
    int rc = split.n >= 2 && split.n <= RF_SELPLAN_MAX ? rf_selplan_from_env(split.conj, split.n, &plan, st) : 0;
    if (rc == 1) {
        rf_selplan_rebuild(split.conj, plan.order, plan.n, planned);
        *use = planned;
    }
    rf_selsplit_free(&split);
    return rc >= 0;
}

static bool cpu_run_plain(rf_backend *be, const rf_hprogram *p, const rf_kernel *k, rf_dvar *out,
                          rf_dvar *in0, rf_dvar *in1, rf_kernel_stats *stats, rf_status *st)
{
    double t0 = kernel_clock(be);
    rf_table res = {0}, empty0, empty1; /* (res stays {0} when diff_run holds the rows) */
    int oar = p->vars[k->out].arity;
    /* A variable never defined reads as empty. */
    int a_ar = k->in[0] >= 0 ? p->vars[k->in[0]].arity : 0, b_ar = k->in[1] >= 0 ? p->vars[k->in[1]].arity : 0;
    /* (made only for an absent input: an allocation saved per kernel) */
    rf_table_init(&empty0, in0 ? 0 : a_ar);
    rf_table_init(&empty1, in1 ? 0 : b_ar);
    bool ok = true;
    memset(stats, 0, sizeof *stats);
    stats->rows_in[0] = in0 && k->in[0] >= 0 ? in0->nrows : 0;
    stats->rows_in[1] = in1 && k->in[1] >= 0 ? in1->nrows : 0;
    if ((k->op == RF_K_UNION && dense_union(be, p, k, out, in0, in1)) ||
        (k->op == RF_K_UNION && lsm_union(be, p, k, out, in0, in1))) {
        rf_table_free(&empty0);
        rf_table_free(&empty1);
        goto done;
    }
    if (k->op == RF_K_COPY && in0) {
        rf_table_free(&empty0);
        rf_table_free(&empty1);
        if (out == in0)
            goto done;
        /* Share the runs and the bitmap. */
        runlist l = {0};
        for (int i = 0; in0->has_runs && i < in0->nruns; i++) {
            in0->runs[i]->refs++;
            rl_push(&l, in0->runs[i]);
        }
        int *refs = NULL;
        rf_dense *d = in0->dense ? dense_share(in0, &refs) : NULL;
        set_runs(be, out, &l, d);
        out->dense_refs = refs;
        out->has_runs = in0->has_runs;
        out->stamp = in0->stamp;
        out->disjoint_from = in0->disjoint_from;
        goto done;
    }
    /* The bitmap of a DIFF's right input: big full relations only. */
    const rf_dense *bd = k->op == RF_K_DIFF && in1 ? dense_of(be, in1, true) : NULL;
    /* A right input of DIFF / ANTIJOIN held as several runs is probed run
     * by run rather than merged. */
    const rf_table *a = in0 ? table_of(be, in0) : &empty0;
    bool by_runs = (k->op == RF_K_DIFF || k->op == RF_K_ANTIJOIN) && !bd && in1 && in1->has_runs && in1->nruns > 1 && a->nrows * 4 < in1->nrows;
    const rf_table *b = &empty1;
    if (in1 && !bd && !by_runs)
        b = table_of(be, in1);
    rf_code planned;
    const rf_code *filter = &k->filter;
    run *diff_run = NULL; /* a DIFF's rows, when written into a spare run */
    if ((k->op == RF_K_MAP || k->op == RF_K_JOIN) && !cpu_forced_filter(&k->filter, &planned, &filter, st)) {
        rf_table_free(&empty0);
        rf_table_free(&empty1);
        return false;
    }
    switch (k->op) {
    case RF_K_MAP:
        ok = rf_prim_map(a, filter, k->nproj, k->proj, &res, st);
        break;
    case RF_K_SORT:
        rf_prim_sort(a, &res);
        break;
    case RF_K_JOIN:
        ok = rf_prim_join(a, b, k->nkeys, filter, k->nproj, k->proj, &res, st);
        break;
    case RF_K_ANTIJOIN:
        if (by_runs)
            diff_runs(a, in1, k->nkeys, &res);
        else
            rf_prim_antijoin(a, b, k->nkeys, &res);
        break;
    case RF_K_UNION:
        rf_prim_union(a, b, &res);
        break;
    case RF_K_DIFF:
        if ((bd || by_runs) && a->nrows <= SPARE_RUN_ROWS) {
            /* A delta's few rows: written into a spare run's storage. */
            diff_run = run_take(be, a->arity);
            if (bd)
                rf_dense_difference_into(a, bd, &diff_run->t);
            else
                diff_runs_into(a, in1, a->arity, &diff_run->t);
        } else if (bd)
            rf_dense_difference(a, bd, &res);
        else if (by_runs)
            diff_runs(a, in1, a->arity, &res);
        else
            rf_prim_difference(a, b, &res);
        break;
    case RF_K_AGG:
        ok = rf_prim_aggregate_multi(a, k->nkeys, k->naggs, k->aggfn, p->vars[k->out].types + k->nkeys,
                                     k->agg_arg, &res, st);
        break;
    case RF_K_COPY: /* of an undefined variable: empty */
        rf_table_init(&res, a->arity);
        break;
    case RF_K_CLEAR:
        rf_table_init(&res, oar);
        break;
    default:
        ok = rf_fail(st, RF_EXIT_RUNTIME_ERROR, "cpu backend: cannot run a %s kernel",
                     rf_kop_name(k->op));
        rf_table_init(&res, oar);
        break;
    }
    rf_table_free(&empty0);
    rf_table_free(&empty1);
    if (filter != &k->filter)
        rf_code_free(&planned);
    int res_arity = diff_run ? diff_run->t.arity : res.arity;
    if (!ok || res_arity != out->arity) {
        rf_table_free(&res);
        if (diff_run)
            run_unref(be, diff_run);
        if (!ok)
            return false;
        return rf_fail(st, RF_EXIT_RUNTIME_ERROR, "cpu backend: %s produced arity %d for a variable of arity %d",
                       rf_kop_name(k->op), res_arity, out->arity);
    }
    if (diff_run) {
        set_run(be, out, diff_run);
    } else {
        set_table(be, out, &res);
    }
    if (k->op == RF_K_DIFF && in1)
        out->disjoint_from = in1->stamp;
done:
    stats->rows_out = out->nrows;
    stats->bytes_moved = (stats->rows_in[0] * (size_t)a_ar + stats->rows_in[1] * (size_t)b_ar +
                          out->nrows * (size_t)oar) * sizeof(rf_word);
    stats->seconds = kernel_clock(be) - t0;
    return true;
}

/* Rows sampled to choose between hashing and sorting a reduction
 * (RF_CPU_HASH_SAMPLE: fewer, so that tests on small data take both
 * paths). */
static size_t hash_sample(void)
{
    const char *env = getenv("RF_CPU_HASH_SAMPLE");
    return env && atol(env) >= 16 ? (size_t)atol(env) : (size_t)1 << 16;
}

/* The input of the group that variable v is (NULL: never written). */
static rf_dvar *group_input(const rf_kernel *fk, rf_dvar *const *ins, int v)
{
    for (int i = 0; i < fk->fused->nin; i++)
        if (fk->fused->in[i] == v)
            return ins[i];
    return NULL;
}

/* Whether a MAP's or JOIN's code makes new strings. */
static bool kernel_interns(const rf_kernel *k)
{
    for (int j = -1; j < k->nproj; j++)
        if (rf_code_interns(j < 0 ? &k->filter : &k->proj[j]))
            return true;
    return false;
}

/* A group of several outputs in one pass over its input: each branch
 * composed into the one MAP it equals, all of them reading the shared
 * input batch by batch (rf_prim_map_many), so each output gets the rows,
 * in the order, that its MAP alone would give. Other branch shapes, code
 * that interns strings (one pass would number the strings in another
 * order), or any error (the fault reported first could be another
 * branch's) are left to the members. */
static rf_run_result cpu_run_branches(rf_backend *be, const rf_hprogram *p, const rf_kernel *fk,
                                      rf_dvar *const *outs, rf_dvar *const *ins, rf_kernel_stats *stats)
{
    const rf_fused *f = fk->fused;
    int ends[RF_KERNEL_VARS_MAX];
    int nb = rf_fused_branches(fk, ends), made = 0;
    if (nb < 2)
        return RF_RUN_MEMBERS;
    rf_kernel *maps = rf_calloc((size_t)nb, sizeof *maps);
    rf_map_spec *specs = rf_calloc((size_t)nb, sizeof *specs);
    int *slot = rf_calloc((size_t)nb, sizeof *slot);   /* output index of each branch */
    bool ok = true;
    for (int i = 0; i < nb && ok; i++) {
        ok = rf_fused_compose(p, fk, i ? ends[i - 1] + 1 : 0, ends[i], &maps[i]);
        made += ok;
        ok = ok && maps[i].op == RF_K_MAP && maps[i].in[0] == maps[0].in[0] &&
             !kernel_interns(&maps[i]);
        for (slot[i] = 0; ok && slot[i] < f->nout && f->out[slot[i]] != maps[i].out; slot[i]++)
            ;
        ok = ok && slot[i] < f->nout && maps[i].nproj == outs[slot[i]]->arity;
        specs[i] = (rf_map_spec){&maps[i].filter, maps[i].nproj, maps[i].proj};
    }
    if (ok) {
        double t0 = kernel_clock(be);
        rf_dvar *in = group_input(fk, ins, maps[0].in[0]);
        rf_table empty;
        rf_table_init(&empty, p->vars[maps[0].in[0]].arity);   /* a variable never defined reads as empty */
        const rf_table *t = in ? table_of(be, in) : &empty;
        rf_table *res = rf_calloc((size_t)nb, sizeof *res);
        rf_status local;
        rf_status_init(&local);
        ok = rf_prim_map_many(t, nb, specs, res, &local);
        memset(stats, 0, sizeof *stats);
        stats->rows_in[0] = t->nrows;
        size_t words = t->nrows * (size_t)t->arity;
        for (int i = 0; i < nb; i++) {
            if (ok) {
                words += res[i].nrows * (size_t)res[i].arity;
                set_table(be, outs[slot[i]], &res[i]);
                stats->rows_out += outs[slot[i]]->nrows;
            } else {
                rf_table_free(&res[i]);
            }
        }
        stats->bytes_moved = words * sizeof(rf_word);
        stats->seconds = kernel_clock(be) - t0;
        rf_table_free(&empty);
        free(res);
    }
    for (int i = 0; i < made; i++)
        rf_kernel_free(&maps[i]);
    free(maps);
    free(specs);
    free(slot);
    return ok ? RF_RUN_DONE : RF_RUN_MEMBERS;
}

/* A MAP chain and its reducing gather in one pass (rf_prim_map_reduce: no
 * row of the chain stored, every core folding its piece), when the chain's
 * rows over an even sample of the input show few groups (at most one in
 * 16; else the rows are made and sorted, as below). *done false: not
 * tried (too many groups, an argument over a row position). A false
 * return is a failure (st set). */
static bool reduce_one_pass(rf_backend *be, const rf_hprogram *p, const rf_kernel *chain, const rf_kernel *agg,
                            rf_dvar *in, rf_dvar *out, bool *done, rf_status *st)
{
    *done = false;
    const rf_table *t = table_of(be, in);
    size_t sample = hash_sample();
    if (t->nrows > sample) {
        rf_table some, made;
        rf_table_init(&some, t->arity);
        rf_table_resize(&some, sample);
        size_t stride = t->nrows / sample;
        for (int c = 0; c < t->arity; c++)
            for (size_t r = 0; r < sample; r++)
                some.cols[c][r] = t->cols[c][r * stride];
        rf_status quiet;
        rf_status_init(&quiet);
        /* An estimate only: a fault here (rows taken out of their places)
         * just leaves the decision to the path below. */
        bool few = rf_prim_map(&some, &chain->filter, chain->nproj, chain->proj, &made, &quiet) &&
                   rf_prim_sample_groups(&made, agg->nkeys, made.nrows) <= sample / 16;
        rf_table_free(&some);
        rf_table_free(&made);
        if (!few)
            return true;
    }
    rf_code *args = rf_calloc((size_t)agg->naggs + 1, sizeof *args);
    bool composed = true;
    for (int j = 0; j < agg->naggs && composed; j++)
        if (agg->aggfn[j] != RF_AGG_COUNT)
            composed = rf_fused_compose_arg(chain, &agg->agg_arg[j], &args[j]);
    rf_code planned;
    const rf_code *filter = &chain->filter;
    bool ok = true;
    if (composed && !cpu_forced_filter(&chain->filter, &planned, &filter, st))
        ok = composed = false;
    if (composed) {
        rf_table res;
        ok = rf_prim_map_reduce(t, filter, chain->nproj, chain->proj, agg->nkeys, agg->naggs, agg->aggfn,
                                p->vars[agg->out].types + agg->nkeys, args, &res, st);
        if (filter != &chain->filter)
            rf_code_free(&planned);
        if (ok)
            set_table(be, out, &res);
        else
            rf_table_free(&res);
        *done = ok;
    }
    for (int j = 0; j < agg->naggs; j++)
        rf_code_free(&args[j]);
    free(args);
    return ok;
}

static void clear_chains(cpu_impl *im)
{
    for (int i = 0; i < im->nchains; i++)
        if (im->chains[i].ok)
            rf_kernel_free(&im->chains[i].chain);
    im->nchains = 0;
    im->chain_prog = NULL;
}

/* Told of each program before its first kernel (the runtime's
 * program_begins): composed chains of the last one go. */
static void cpu_program_begins(rf_backend *be, const rf_hprogram *p)
{
    clear_chains(be->impl);
    ((cpu_impl *)be->impl)->chain_prog = p;
}

/* The composed chain (members 0..last) of set gather fk, or NULL when its
 * members do not compose. Kept per kernel for the program's run: a loop of
 * tiny deltas runs one group 100,000 times, and composing it each time
 * (codes rebuilt, origins copied) cost about a tenth of an iteration.
 * Kernels of another program clear the cache (the runtime also clears it
 * at every program's start, so a program freed and another allocated at
 * its address cannot meet stale chains). */
static const rf_kernel *set_gather_chain(rf_backend *be, const rf_hprogram *p, const rf_kernel *fk, int last)
{
    cpu_impl *im = be->impl;
    if (im->chain_prog != p) {
        clear_chains(im);
        im->chain_prog = p;
    }
    for (int i = 0; i < im->nchains; i++)
        if (im->chains[i].fk == fk)
            return im->chains[i].ok ? &im->chains[i].chain : NULL;
    if (im->nchains == CHAIN_CACHE) {
        clear_chains(im);
        im->chain_prog = p;
    }
    chain_entry *e = &im->chains[im->nchains++];
    e->fk = fk;
    e->ok = rf_fused_compose(p, fk, 0, last, &e->chain);
    return e->ok ? &e->chain : NULL;
}

/* A set gather (`t := JOIN ...[; MAPs]; s := SORT t`): the chain composed
 * into the one JOIN it equals; when that JOIN has no filter and projects
 * plain columns whose value ranges are dense enough, join and
 * sort-unique run as one pass into a bitmap (rf_prim_join_sort_dense:
 * the join's rows are never written); else the chain's rows are made and
 * sorted, the SORT member's work. Any error is left to the members (the
 * one --no-fuse reports). */
/* Whether t's rows come nearly in the order of their first column (a scan
 * of a sorted relation, filtered: at most one row in 16 goes down), the
 * case where probing row by row costs a gallop step a row; in any other
 * order each probe is a search, and sorting then merging is cheaper on
 * the CPU (TPC-H q13: orders by customer, 12 ms probing against 6 ms). */
/* A side this small next to x (at most 1/64 of its rows, and few enough
 * to stay in cache) makes a search for each of x's rows, in any order, a
 * few cached comparisons, cheaper than sorting x: q17 at SF 0.1, 600K
 * lineitem rows against the 18 parts that pass, 148 ms sorting first, 12
 * ms probing. Not q13's 150K orders against 15K customers (probing 12 ms,
 * sorting 6 ms). */
#define RF_PROBE_SMALL_SIDE 65536
#define RF_PROBE_SMALL_RATIO 64

static bool side_small_for_probes(const rf_table *x, const rf_table *y)
{
    return y->nrows <= RF_PROBE_SMALL_SIDE && y->nrows * RF_PROBE_SMALL_RATIO <= x->nrows;
}

static bool nearly_in_key_order(const rf_table *t)
{
    if (t->arity < 1 || t->nrows < 2)
        return true;
    const rf_word *c = t->cols[0];
    size_t down = 0, limit = t->nrows / 16;
    for (size_t i = 1; i < t->nrows; i++)
        if (c[i] < c[i - 1] && ++down > limit)
            return false;
    return true;
}

/* The set gather of a JOIN chain that keeps input `side`'s rows whole
 * (rf_join_kept_side): the chain's passing pairs give only that input's
 * row positions (a one-column join of rowid(side)), which mark its rows;
 * the marked rows, in the input's order, are the set. No rows of pairs
 * are written and nothing is sorted (q21's other_supplier at SF 0.1: the
 * JOIN made 2.4M pairs of 2 words and sorted them for 578K rows). l may
 * come in any order (probe: looked up row by row) when side is 1. False
 * on an error of the filter (out then empty). */
static bool cpu_semijoin(const rf_table *l, const rf_table *r, const rf_kernel *chain, int side, bool probe,
                         rf_table *out, rf_status *st)
{
    rf_instr pos;
    memset(&pos, 0, sizeof pos);
    pos.op = RF_EX_ROWID;
    pos.type = pos.arg_type = RF_TYPE_INT64;
    pos.index = side;
    rf_code proj = {1, &pos};
    rf_table ids;
    const rf_table *from = side ? r : l;
    rf_table_init(out, from->arity);
    bool ok = probe ? rf_prim_join_probe(l, r, chain->nkeys, &chain->filter, 1, &proj, &ids, st)
                    : rf_prim_join(l, r, chain->nkeys, &chain->filter, 1, &proj, &ids, st);
    if (!ok) {
        rf_table_free(&ids);
        return false;
    }
    uint8_t *keep = rf_calloc(from->nrows + 1, 1);
    for (size_t i = 0; i < ids.nrows; i++)
        keep[ids.cols[0][i]] = 1;
    rf_table_free(&ids);
    size_t n = 0;
    for (size_t i = 0; i < from->nrows; i++)
        n += keep[i];
    rf_table_resize(out, n);
    for (int c = 0; c < from->arity; c++) {
        size_t k = 0;
        for (size_t i = 0; i < from->nrows; i++)
            if (keep[i])
                out->cols[c][k++] = from->cols[c][i];
    }
    free(keep);
    return true;
}

/* A set gather that begins with its JOIN's probe-side SORT
 * (`s := SORT x; t := JOIN s, y; ...; o := SORT t'`, rf_fused_probe_sort):
 * x's rows are joined as they are, each looked up in y
 * (rf_prim_join_probe), and the rows made are sorted and deduplicated
 * once, by the gather; x is never sorted. Where x's rows are not nearly
 * in key order (*unordered: the caller sorts them and goes on fused), and
 * on any error, the members run. */
static rf_run_result cpu_run_probe_set(rf_backend *be, const rf_hprogram *p, const rf_kernel *fk,
                                       rf_dvar *const *outs, rf_dvar *const *ins, rf_kernel_stats *stats,
                                       bool *unordered)
{
    *unordered = false;
    const rf_fused *f = fk->fused;
    int last = f->nmembers - 2;
    rf_kernel chain;
    if (f->nout != 1 || rf_fused_chain_end_from(p, fk, 1) < last || !rf_fused_compose(p, fk, 1, last, &chain))
        return RF_RUN_MEMBERS;
    rf_dvar *x = group_input(fk, ins, f->members[0].in[0]);
    rf_dvar *y = chain.in[1] >= 0 ? group_input(fk, ins, chain.in[1]) : NULL;
    if (!x || !y || chain.op != RF_K_JOIN) {
        rf_kernel_free(&chain);
        return RF_RUN_MEMBERS;
    }
    double t0 = kernel_clock(be);
    rf_status local;
    rf_status_init(&local);
    const rf_table *l = table_of(be, x), *r = table_of(be, y);
    if (!side_small_for_probes(l, r) && !nearly_in_key_order(l)) {   /* x sorted, then merged (cpu_run_set) */
        rf_kernel_free(&chain);
        *unordered = true;
        return RF_RUN_MEMBERS;
    }
    rf_table rows;
    memset(stats, 0, sizeof *stats);
    cpu_impl *im = be->impl;
    /* keeping y's rows whole: a semi-join (y sorted, x in any order) */
    bool semi = rf_join_kept_side(&chain, l->arity, r->arity) == 1;
    bool ok = semi ? cpu_semijoin(l, r, &chain, 1, true, &rows, &local)
                   : rf_prim_join_probe(l, r, chain.nkeys, &chain.filter, chain.nproj, chain.proj, &rows, &local);
    rf_kernel_free(&chain);
    if (!ok) {
        rf_table_free(&rows);
        return RF_RUN_MEMBERS;
    }
    size_t made = rows.nrows, width = (size_t)rows.arity;
    if (!semi)
        rf_prim_sort_unique(&rows);
    set_table(be, outs[0], &rows);
    im->set_semijoins += semi;
    im->set_sorted += !semi;
    im->set_probed += !semi;
    stats->rows_in[0] = l->nrows;
    stats->rows_in[1] = r->nrows;
    stats->rows_out = outs[0]->nrows;
    stats->bytes_moved = (l->nrows * (size_t)l->arity + r->nrows * (size_t)r->arity + 2 * made * width) *
                         sizeof(rf_word);
    stats->seconds = kernel_clock(be) - t0;
    return RF_RUN_DONE;
}

/* The set gather from member `first` on (1 after a probe side's SORT,
 * whose sorted rows are then `sorted_probe`). */
static rf_run_result cpu_run_set_from(rf_backend *be, const rf_hprogram *p, const rf_kernel *fk, int first,
                                      rf_dvar *sorted_probe, rf_dvar *const *outs, rf_dvar *const *ins,
                                      rf_kernel_stats *stats);

static rf_run_result cpu_run_set(rf_backend *be, const rf_hprogram *p, const rf_kernel *fk, rf_dvar *const *outs,
                                 rf_dvar *const *ins, rf_kernel_stats *stats)
{
    if (!rf_fused_probe_sort(p, fk->fused))
        return cpu_run_set_from(be, p, fk, 0, NULL, outs, ins, stats);
    bool unordered;
    rf_run_result res = cpu_run_probe_set(be, p, fk, outs, ins, stats, &unordered);
    if (res != RF_RUN_MEMBERS || !unordered)
        return res;
    /* Rows out of key order: sorted here (the SORT member), then the set
     * gather as without the probe edge. */
    const rf_kernel *sortk = &fk->fused->members[0];
    rf_status local;
    rf_status_init(&local);
    rf_kernel_stats ss;
    double t0 = kernel_clock(be);
    rf_dvar *sorted = cpu_var_new(be, p->vars[sortk->out].arity, &local);
    bool ok = sorted && cpu_run_plain(be, p, sortk, sorted, group_input(fk, ins, sortk->in[0]), NULL, &ss, &local);
    res = ok ? cpu_run_set_from(be, p, fk, 1, sorted, outs, ins, stats) : RF_RUN_MEMBERS;
    if (sorted)
        cpu_var_free(be, sorted);
    stats->seconds = kernel_clock(be) - t0;
    return res;
}

static rf_run_result cpu_run_set_from(rf_backend *be, const rf_hprogram *p, const rf_kernel *fk, int first,
                                      rf_dvar *sorted_probe, rf_dvar *const *outs, rf_dvar *const *ins,
                                      rf_kernel_stats *stats)
{
    const rf_fused *f = fk->fused;
    int last = f->nmembers - 2;   /* the rows' chain ends here; the SORT follows */
    if (f->nout != 1 || last < first || rf_fused_chain_end_from(p, fk, first) < last)
        return RF_RUN_MEMBERS;
    rf_kernel owned;
    const rf_kernel *composed = NULL;
    if (first == 0)
        composed = set_gather_chain(be, p, fk, last);
    else if (rf_fused_compose(p, fk, first, last, &owned))
        composed = &owned;
    if (!composed)
        return RF_RUN_MEMBERS;
    const rf_kernel chain = *composed; /* (a shallow copy: the cache or `owned` owns it) */
    double t0 = kernel_clock(be);
    rf_status local;
    rf_status_init(&local);
    rf_dvar *in0 = sorted_probe ? sorted_probe : chain.in[0] >= 0 ? group_input(fk, ins, chain.in[0]) : NULL;
    rf_dvar *in1 = chain.in[1] >= 0 ? group_input(fk, ins, chain.in[1]) : NULL;
    int cols[64];
    bool ok = true, done = false;
    memset(stats, 0, sizeof *stats);
    if (in0 && in1 && chain.nproj <= 64 && join_is_direct(&chain, cols)) {
        const rf_table *l = table_of(be, in0), *r = table_of(be, in1);
        rf_table res;
        stats->rows_in[0] = l->nrows;
        stats->rows_in[1] = r->nrows;
        /* A side of a few rows against a big one (a tiny delta's join):
         * one search walk finds the matching key groups, which give the
         * count and, below, the rows. */
        bool by_groups = rf_prim_join_by_groups(l, r, chain.nkeys);
        rf_join_groups groups;
        if (by_groups)
            rf_prim_join_groups(l, r, chain.nkeys, &groups);
        size_t join_rows = by_groups ? groups.rows : rf_prim_join_count(l, r, chain.nkeys);
        /* The bitmap pass reads every row of both inputs to find the
         * output's ranges; a join far smaller than its inputs (a small
         * delta against the full relation) is cheaper written and sorted. */
        if (join_rows >= (l->nrows + r->nrows) / DENSE_JOIN_MIN_SHARE &&
            rf_prim_join_sort_dense(l, r, chain.nkeys, chain.nproj, cols, join_rows, &res)) {
            set_table(be, outs[0], &res);
            done = true;
            ((cpu_impl *)be->impl)->set_dense++;
        } else if (join_rows <= SMALL_SET_GATHER_ROWS) {
            /* A small join (a delta's): joined and sorted here, without
             * the intermediate variable and the kernels' set-up. The
             * join has no filter, so it cannot fail. */
            if (by_groups) { /* a few rows, into a spare run */
                run *rows = run_take(be, chain.nproj);
                rf_prim_join_groups_write(l, r, &groups, chain.nproj, cols, &rows->t);
                rf_prim_sort_unique(&rows->t);
                set_run(be, outs[0], rows);
            } else {
                rf_table rows;
                ok = rf_prim_join(l, r, chain.nkeys, &chain.filter, chain.nproj, chain.proj, &rows, &local);
                rf_prim_sort_unique(&rows);
                set_table(be, outs[0], &rows);
            }
            done = true;
            ((cpu_impl *)be->impl)->set_sorted++;
        }
        if (by_groups)
            rf_join_groups_free(&groups);
        if (done)
            stats->bytes_moved = (l->nrows * (size_t)l->arity + r->nrows * (size_t)r->arity +
                                  outs[0]->nrows * (size_t)outs[0]->arity) * sizeof(rf_word);
    }
    if (!done && in0 && in1) {
        /* keeping one input's rows whole: a semi-join (in0 is sorted here) */
        const rf_table *l = table_of(be, in0), *r = table_of(be, in1);
        int side = rf_join_kept_side(&chain, l->arity, r->arity);
        rf_table res;
        if (side >= 0 && cpu_semijoin(l, r, &chain, side, false, &res, &local)) {
            set_table(be, outs[0], &res);
            done = true;
            ((cpu_impl *)be->impl)->set_semijoins++;
            stats->rows_in[0] = l->nrows;
            stats->rows_in[1] = r->nrows;
            stats->bytes_moved = (l->nrows * (size_t)l->arity + r->nrows * (size_t)r->arity +
                                  outs[0]->nrows * (size_t)outs[0]->arity) * sizeof(rf_word);
        } else if (side >= 0) {   /* the filter failed: the path below fails the same way */
            rf_table_free(&res);
            rf_status_init(&local);
        }
    }
    if (!done) {
        rf_kernel_stats rs, ss;
        rf_dvar *rows = cpu_var_new(be, p->vars[chain.out].arity, &local);
        ok = cpu_run_plain(be, p, &chain, rows, in0, in1, &rs, &local) &&
             cpu_run_plain(be, p, &f->members[last + 1], outs[0], rows, NULL, &ss, &local);
        cpu_var_free(be, rows);
        ((cpu_impl *)be->impl)->set_sorted += ok;
        if (ok) {
            stats->rows_in[0] = rs.rows_in[0];
            stats->rows_in[1] = rs.rows_in[1];
            stats->bytes_moved = rs.bytes_moved + ss.bytes_moved;
        }
    }
    stats->rows_out = ok ? outs[0]->nrows : 0;
    stats->seconds = kernel_clock(be) - t0;
    if (first > 0)
        rf_kernel_free(&owned);
    return ok ? RF_RUN_DONE : RF_RUN_MEMBERS;
}

/* A FUSED kernel in one pass: its thread chain (a MAP or JOIN and the MAPs
 * after it) as the one kernel it equals, so no intermediate table is made;
 * a reducing gather then folds the chain's rows into their groups by
 * hashing instead of sorting them; a set gather joins and sorts in one
 * pass; a group of several outputs reads its input once for all of them.
 * Any other shape, or any error (whose row and message could differ from
 * the unfused order of evaluation), is left to the members. */
static rf_run_result cpu_run_fused(rf_backend *be, const rf_hprogram *p, const rf_kernel *fk, rf_dvar *const *outs,
                                   rf_dvar *const *ins, rf_kernel_stats *stats, rf_status *st)
{
    const rf_fused *f = fk->fused;
    if (f->nout > 1)
        return cpu_run_branches(be, p, fk, outs, ins, stats);
    if (fk->gather == RF_GATHER_SET)
        return cpu_run_set(be, p, fk, outs, ins, stats);
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
    double t0 = kernel_clock(be);
    rf_status local;
    rf_status_init(&local);
    rf_dvar *in0 = chain.in[0] >= 0 ? group_input(fk, ins, chain.in[0]) : NULL;
    rf_dvar *in1 = chain.in[1] >= 0 ? group_input(fk, ins, chain.in[1]) : NULL;
    bool ok;
    if (!reduce) {
        ok = cpu_run_plain(be, p, &chain, outs[0], in0, in1, stats, &local);
    } else {
        const rf_kernel *agg = &f->members[f->nmembers - 1];
        bool done = false;
        if (chain.op == RF_K_MAP && in0 && !reduce_one_pass(be, p, &chain, agg, in0, outs[0], &done, &local)) {
            rf_kernel_free(&chain);
            return RF_RUN_MEMBERS;
        }
        if (done) {
            rf_kernel_free(&chain);
            stats->rows_out = outs[0]->nrows;
            stats->seconds = kernel_clock(be) - t0;
            return RF_RUN_DONE;
        }
        rf_dvar *rows = cpu_var_new(be, p->vars[chain.out].arity, &local);
        ok = rows && cpu_run_plain(be, p, &chain, rows, in0, in1, stats, &local);
        rf_table res;
        rf_table_init(&res, 0);
        const rf_table *t = ok ? table_of(be, rows) : NULL;
        /* Many groups (over one in 16 of a sample): the parallel sort then
         * the aggregate over its runs beat one thread's hash table. */
        size_t sample = hash_sample();
        if (ok && t->nrows > sample && rf_prim_sample_groups(t, agg->nkeys, sample) > sample / 16) {
            rf_table sorted;
            rf_prim_sort(t, &sorted);
            ok = rf_prim_aggregate_multi(&sorted, agg->nkeys, agg->naggs, agg->aggfn,
                                         p->vars[agg->out].types + agg->nkeys, agg->agg_arg, &res, &local);
            rf_table_free(&sorted);
        } else if (ok) {
            ok = rf_prim_aggregate_unsorted(t, agg->nkeys, agg->naggs, agg->aggfn, p->vars[agg->out].types + agg->nkeys,
                                            agg->agg_arg, &res, &local);
        }
        if (ok)
            set_table(be, outs[0], &res);
        else
            rf_table_free(&res);
        if (rows)
            cpu_var_free(be, rows);
        stats->rows_out = outs[0]->nrows;
    }
    rf_kernel_free(&chain);
    stats->seconds = kernel_clock(be) - t0;
    return ok ? RF_RUN_DONE : RF_RUN_MEMBERS;
}

/* A MULTIJOIN: every input as one sorted table, then the leapfrog. */
static bool cpu_run_multijoin(rf_backend *be, const rf_hprogram *p, const rf_kernel *k, rf_dvar *out,
                              rf_dvar *const *ins, rf_kernel_stats *stats, rf_status *st)
{
    double t0 = rf_now();
    const rf_multijoin *mj = k->mj;
    const rf_table *tabs[RF_MULTIJOIN_MAX_IN];
    rf_table empty[RF_MULTIJOIN_MAX_IN];
    memset(stats, 0, sizeof *stats);
    size_t words_in = 0;
    for (int i = 0; i < mj->nin; i++) {
        /* a variable never defined reads as empty */
        rf_table_init(&empty[i], p->vars[mj->in[i]].arity);
        tabs[i] = ins[i] ? table_of(be, ins[i]) : &empty[i];
        words_in += tabs[i]->nrows * (size_t)tabs[i]->arity;
        if (i < 2)
            stats->rows_in[i] = tabs[i]->nrows;
    }
    /* The variable order: the planner's, or its second (alt_order) where
     * that one's last level is estimated cheaper (ordercost.c). */
    const int *in_vars = mj->in_vars;
    const rf_code *code_filter = &k->filter, *proj = k->proj;
    rf_mj_alt alt;
    bool use_alt = false;
    double est_planned = 0, est_alt = 0;
    if (mj->alt_order &&
        rf_prim_order_estimates(mj->nin, tabs, mj->in_first, mj->in_vars, mj->nvars, mj->alt_order, &est_planned,
                                &est_alt) &&
        rf_order_take_alt(est_planned, est_alt)) {
        use_alt = true;
        rf_mj_alt_make(&alt, mj->nin, tabs, mj->in_first, mj->in_vars, mj->nvars, mj->alt_order, &k->filter,
                       k->nproj, k->proj);
        for (int i = 0; i < mj->nin; i++)
            tabs[i] = alt.in[i];
        in_vars = alt.rc.in_vars;
        code_filter = &alt.rc.filter;
        proj = alt.rc.proj;
    }
    if (mj->alt_order)
        *(use_alt ? &((cpu_impl *)be->impl)->mj_alt : &((cpu_impl *)be->impl)->mj_planned) += 1;
    if (mj->alt_order)
        rf_order_trace(p->vars[k->out].name, est_planned, est_alt, use_alt);
    rf_code planned;
    const rf_code *filter = code_filter;
    rf_table res;
    bool ran = false;   /* res is initialised by the join, even when it fails */
    bool ok = cpu_forced_filter(code_filter, &planned, &filter, st);
    if (ok && mj->count) {   /* one row: the number of bindings, none made */
        ran = true;
        rf_word n = (rf_word)rf_prim_multijoin_count(mj->nin, tabs, mj->in_first, in_vars, mj->nvars);
        rf_table_init(&res, 1);
        rf_table_append_row(&res, &n);
    } else if (ok) {
        ran = true;
        ok = rf_prim_multijoin(mj->nin, tabs, mj->in_first, in_vars, mj->nvars, filter, k->nproj, proj, &res, st);
    }
    if (filter != code_filter)
        rf_code_free(&planned);
    if (use_alt)
        rf_mj_alt_free(&alt);
    for (int i = 0; i < mj->nin; i++)
        rf_table_free(&empty[i]);
    if (!ok) {
        if (ran)
            rf_table_free(&res);
        return false;
    }
    set_table(be, out, &res);
    stats->rows_out = out->nrows;
    stats->bytes_moved = (words_in + out->nrows * (size_t)p->vars[k->out].arity) * sizeof(rf_word);
    stats->seconds = rf_now() - t0;
    return true;
}

/* The bytes v holds (its runs whether shared or not, and its bitmap). */
static size_t var_bytes(const rf_dvar *v)
{
    size_t n = v ? v->bytes : 0;
    for (int i = 0; v && i < v->nruns; i++)
        n += v->runs[i]->counted;
    return n;
}

static rf_run_result cpu_run(rf_backend *be, const rf_hprogram *p, const rf_kernel *k, rf_dvar *const *outs,
                             rf_dvar *const *ins, rf_kernel_stats *stats, rf_status *st)
{
    cpu_impl *im = be->impl;
    int nin = k->op == RF_K_FUSED ? k->fused->nin : k->op == RF_K_MULTIJOIN ? k->mj->nin : 2;
    if (im->oom_above) {
        size_t own = 0;
        for (int i = 0; i < nin; i++)
            own += var_bytes(ins[i]);
        for (int i = 0; i < (k->op == RF_K_FUSED ? k->fused->nout : 1); i++)
            own += var_bytes(outs[i]);
        if (im->in_use > own && im->in_use - own > im->oom_above)
            return rf_fail(st, RF_EXIT_OUT_OF_MEMORY, "out of memory (RF_TEST_OOM_BYTES: %zu bytes of other variables)",
                           im->in_use - own),
                   RF_RUN_FAILED;
    }
    for (int i = 0; i < nin; i++)
        dense_resolve(be, ins[i]);
    rf_run_result res;
    if (k->op == RF_K_MULTIJOIN)
        res = cpu_run_multijoin(be, p, k, outs[0], ins, stats, st) ? RF_RUN_DONE : RF_RUN_FAILED;
    else if (k->op == RF_K_FUSED)
        res = cpu_run_fused(be, p, k, outs, ins, stats, st);
    else
        res = cpu_run_plain(be, p, k, outs[0], ins[0], ins[1], stats, st) ? RF_RUN_DONE : RF_RUN_FAILED;
    if (res == RF_RUN_DONE && im->oom_rows && k->op != RF_K_COPY && k->op != RF_K_CLEAR &&
        cpu_var_rows(be, outs[0]) > im->oom_rows)
        return rf_fail(st, RF_EXIT_OUT_OF_MEMORY, "out of memory (RF_TEST_OOM_ROWS: a result of %zu rows)",
                       cpu_var_rows(be, outs[0])),
               RF_RUN_FAILED;
    return res;
}

/* --join=auto's statistic: the size of the binary plan's first join. */
static bool cpu_join_size(rf_backend *be, const rf_dvar *l, const rf_dvar *r, int nkeys, const int *lkeys,
                          const int *rkeys, uint64_t *rows, rf_status *st)
{
    (void)st;
    /* table_of merges a variable's runs into one table, as every kernel
     * reading it does: the contents stay the same */
    *rows = rf_prim_join_size(table_of(be, (rf_dvar *)l), lkeys, table_of(be, (rf_dvar *)r), rkeys, nkeys);
    return true;
}

/* ---- moving rows between ranks (the distribution layer, backend.h) ---- */

/* v's one run when v may change it in place: rows held as a table no
 * other variable shares (NULL otherwise). */
static run *sole_run(rf_dvar *v)
{
    if (!v->has_runs || v->dense || v->nruns != 1 || v->runs[0]->refs != 1)
        return NULL;
    return v->runs[0];
}

/* Replaces v's contents with its run r, changed in place. */
static void run_changed(rf_backend *be, rf_dvar *v, run *r)
{
    free(r->lo);
    free(r->hi);
    r->lo = r->hi = NULL;
    r->has_range = false;
    r->refs++;   /* set_runs_from drops v's reference */
    run_written(be, r);
    if (r->t.nrows == 0) {
        set_runs_from(be, v, NULL, 0, NULL);
        run_unref(be, r);
        return;
    }
    set_runs_from(be, v, &r, 1, NULL);
}

static bool cpu_split_rows(rf_backend *be, rf_dvar *v, int (*dest)(const rf_table *t, size_t i, const void *ctx),
                           const void *ctx, int keep, rf_table *away, int **dests, rf_status *st)
{
    (void)st;
    cpu_impl *im = be->impl;
    dense_resolve(be, v);
    const rf_table *t = table_of(be, v);
    size_t n = t->nrows, nkeep = 0, naway = 0;
    if (n == 0)
        return true;
    if (n > im->dest_cap) {
        free(im->dest_scratch);
        im->dest_cap = n + n / 4;
        im->dest_scratch = rf_malloc(im->dest_cap * sizeof *im->dest_scratch);
    }
    int *to = im->dest_scratch;
    for (size_t i = 0; i < n; i++) {
        to[i] = dest(t, i, ctx);
        nkeep += to[i] < 0 || to[i] == keep;
        naway += to[i] != keep;
    }
    int ar = v->arity;
    if (away && naway) {
        size_t at = away->nrows;
        rf_table_resize(away, at + naway);
        int *ds = *dests = rf_realloc(*dests, naway * sizeof *ds);
        size_t j = 0;
        for (size_t i = 0; i < n; i++)
            if (to[i] != keep)
                ds[j++] = to[i];
        for (int c = 0; c < ar; c++) {
            const rf_word *src = t->cols[c];
            rf_word *out = away->cols[c] + at;
            size_t k = 0;
            for (size_t i = 0; i < n; i++)
                if (to[i] != keep)
                    out[k++] = src[i];
        }
    }
    if (nkeep == n)
        return true;
    /* v keeps a subsequence of its rows (a set stays one): in place when
     * its run is its own */
    run *r = sole_run(v);
    rf_table kept;
    if (!r) {
        rf_table_init(&kept, ar);
        rf_table_resize(&kept, nkeep);
    }
    for (int c = 0; c < ar; c++) {
        const rf_word *src = t->cols[c];
        rf_word *out = r ? r->t.cols[c] : kept.cols[c];
        size_t k = 0;
        for (size_t i = 0; i < n; i++)
            if (to[i] < 0 || to[i] == keep)
                out[k++] = src[i];
    }
    if (r) {
        r->t.nrows = nkeep;
        run_changed(be, v, r);
    } else {
        set_table(be, v, &kept);
    }
    return true;
}

/* Whether t's rows are strictly increasing (sorted, no duplicates). */
static bool strictly_sorted(const rf_table *t)
{
    for (size_t i = 1; i < t->nrows; i++) {
        int c = 0;
        while (c < t->arity && t->cols[c][i - 1] == t->cols[c][i])
            c++;
        if (c == t->arity || t->cols[c][i - 1] > t->cols[c][i])
            return false;
    }
    return true;
}

/* Rows that arrive in a move are each sending rank's rows for this one, in
 * its part's order: a part of a set is a sorted set, so they are at most
 * one strictly ascending run a rank. Where t is a few such runs, t := their
 * union by merges (a pass a run) instead of a sort (TPC-H SF 1 lineitem's
 * move between two ranks sorted 1.5M rows that were in order); false,
 * with t as it was, where it holds more runs than that. */
#define RF_MERGE_RUNS_MAX 16
static bool union_of_runs(rf_table *t)
{
    size_t starts[RF_MERGE_RUNS_MAX + 1];
    int nruns = 0;
    for (size_t i = 0; i < t->nrows; i++) {
        bool ascends = i > 0;
        if (ascends) {
            int c = 0;
            while (c < t->arity && t->cols[c][i - 1] == t->cols[c][i])
                c++;
            ascends = c < t->arity && t->cols[c][i - 1] < t->cols[c][i];
        }
        if (!ascends) {
            if (nruns == RF_MERGE_RUNS_MAX)
                return false;
            starts[nruns++] = i;
        }
    }
    if (nruns <= 1 || t->arity == 0)
        return nruns <= 1;
    starts[nruns] = t->nrows;
    rf_word **cols = rf_malloc((size_t)t->arity * sizeof *cols);
    rf_table acc;
    rf_table_init(&acc, t->arity);
    for (int r = 0; r < nruns; r++) {
        for (int c = 0; c < t->arity; c++)
            cols[c] = t->cols[c] + starts[r];
        rf_table run = {t->arity, starts[r + 1] - starts[r], starts[r + 1] - starts[r], cols};
        rf_table u;
        rf_prim_union(&acc, &run, &u);
        rf_table_free(&acc);
        acc = u;
    }
    free(cols);
    rf_table_free(t);
    *t = acc;
    return true;
}

static void append_rows(rf_table *t, const rf_table *a)
{
    if (!a || a->nrows == 0)
        return;
    size_t at = t->nrows;
    rf_table_resize(t, at + a->nrows);
    for (int c = 0; c < t->arity; c++)
        memcpy(t->cols[c] + at, a->cols[c], a->nrows * sizeof *a->cols[c]);
}

static bool cpu_merge_rows(rf_backend *be, rf_dvar *v, const rf_table *before, const rf_table *after, bool set,
                           rf_status *st)
{
    (void)st;
    dense_resolve(be, v);
    size_t nb = before ? before->nrows : 0, na = after ? after->nrows : 0;
    const rf_table *mine = table_of(be, v);
    rf_table all;
    rf_table_init(&all, v->arity);
    if (!set) {
        if (nb + na == 0) {
            rf_table_free(&all);
            return true;
        }
        run *r = sole_run(v);
        if (r) {   /* in place: v's rows move up by nb */
            rf_table_free(&all);
            size_t nm = r->t.nrows;
            rf_table_resize(&r->t, nb + nm + na);
            for (int c = 0; c < v->arity; c++) {
                rf_word *col = r->t.cols[c];
                if (nb) {
                    memmove(col + nb, col, nm * sizeof *col);
                    memcpy(col, before->cols[c], nb * sizeof *col);
                }
                if (na)
                    memcpy(col + nb + nm, after->cols[c], na * sizeof *col);
            }
            run_changed(be, v, r);
            return true;
        }
        rf_table_reserve(&all, nb + mine->nrows + na);
        append_rows(&all, before);
        append_rows(&all, mine);
        append_rows(&all, after);
        set_table(be, v, &all);
        return true;
    }
    bool mine_set = strictly_sorted(mine);
    if (nb + na == 0 && mine_set) {
        rf_table_free(&all);
        return true;
    }
    rf_table_reserve(&all, nb + na + (mine_set ? 0 : mine->nrows));
    append_rows(&all, before);
    append_rows(&all, after);
    if (!mine_set)
        append_rows(&all, mine);
    if (!union_of_runs(&all))
        rf_prim_sort_unique(&all);
    if (mine_set && mine->nrows > 0) {
        rf_table u;
        rf_prim_union(mine, &all, &u);
        rf_table_free(&all);
        all = u;
    }
    set_table(be, v, &all);
    return true;
}

static size_t cpu_bytes_in_use(rf_backend *be) { return ((cpu_impl *)be->impl)->in_use; }
static size_t cpu_bytes_peak(rf_backend *be) { return ((cpu_impl *)be->impl)->peak; }

static void cpu_print_stats(rf_backend *be, FILE *f)
{
    const cpu_impl *im = be->impl;
    fprintf(f, "  cpu: set gathers (JOIN -> SORT): %zu joined and sorted in one pass through a bitmap, %zu written "
               "and sorted (%zu of them probing with their first input unsorted), %zu as semi-joins\n",
            im->set_dense, im->set_sorted, im->set_probed, im->set_semijoins);
    if (im->mj_planned + im->mj_alt)
        fprintf(f, "  cpu: multiway joins with a second variable order: %zu ran in the planned order, %zu in the second\n",
                im->mj_planned, im->mj_alt);
}

static void cpu_destroy(rf_backend *be)
{
    if (!be)
        return;
    cpu_impl *im = be->impl;
    clear_chains(im);
    free(im->dest_scratch);
    for (int i = 0; i < im->nspare_runs; i++) {
        rf_table_free(&im->spare_runs[i]->t);
        free(im->spare_runs[i]);
    }
    for (int i = 0; i < im->nspare; i++) {
        free(im->spare[i]->runs);
        rf_table_free(&im->spare[i]->empty);
        free(im->spare[i]);
    }
    free(be->impl);
    free(be);
}

rf_backend *rf_backend_cpu_new(int threads)
{
    rf_prims_set_threads(threads);
    rf_backend *be = rf_calloc(1, sizeof *be);
    be->name = "cpu";
    snprintf(be->device, sizeof be->device, "%d thread%s", rf_prims_threads(),
             rf_prims_threads() == 1 ? "" : "s");
    be->var_new = cpu_var_new;
    be->var_free = cpu_var_free;
    be->var_rows = cpu_var_rows;
    be->upload = cpu_upload;
    be->download = cpu_download;
    be->download_at = cpu_download_at;
    if (getenv("RF_TEST_MOVES_AHEAD")) {   /* the runtime's double buffering of parts, for its tests */
        be->upload_ahead = cpu_upload;
        be->download_at_ahead = cpu_download_at;
        be->moves_wait = cpu_moves_wait;
    }
    be->run = cpu_run;
    be->bytes_in_use = cpu_bytes_in_use;
    be->bytes_peak = cpu_bytes_peak;
    be->destroy = cpu_destroy;
    be->print_stats = cpu_print_stats;
    be->program_begins = cpu_program_begins;
    be->join_size = cpu_join_size;
    be->split_rows = cpu_split_rows;
    be->merge_rows = cpu_merge_rows;
    be->wcoj_auto_ratio = RF_WCOJ_AUTO_RATIO_CPU;
    cpu_impl *im = rf_calloc(1, sizeof(cpu_impl));
    const char *oom = getenv("RF_TEST_OOM_BYTES");
    im->oom_above = oom ? (size_t)strtoull(oom, NULL, 10) : 0;
    const char *oom_rows = getenv("RF_TEST_OOM_ROWS");
    im->oom_rows = oom_rows ? (size_t)strtoull(oom_rows, NULL, 10) : 0;
    be->impl = im;
    return be;
}
