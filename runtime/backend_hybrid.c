/* Kernel placement between a device backend and the host (backend.h:
 * rf_backend_hybrid_new). A GPU kernel costs tens of microseconds however
 * little it does (a launch, and a wait for the size of its result before
 * the next can be allocated); a semi-naive loop whose deltas stay tiny
 * (reachability along a chain: 100,001 iterations of one-row deltas) is
 * all such kernels, while the host's kernels on a few rows take about a
 * microsecond. So each kernel runs where it is cheaper: on the host when
 * its work is a few rows (the rows it must touch: a join or union of a
 * tiny relation with a large one searches or shares the large one, so
 * only the small side counts; and its last result was small too) and
 * either its inputs are on the host already, or it has been that small
 * many runs in a row (a loop in its steady state: bringing a large input
 * such as the edge relation to the host once pays off over the remaining
 * iterations) and the rows to bring are not too many. A kernel's first
 * runs never move large inputs, so short loops (a dozen iterations) stay
 * on the device, whose transfers would cost more than its launches.
 *
 * A variable is held on either side or both: each side has its own
 * variable of its backend, and a flag says whether it holds the current
 * rows. A kernel's inputs are brought to its side (download from one,
 * upload to the other; the copy stays valid until the variable is written
 * again), its outputs are written there, and the other side's stale copy
 * is freed. Both backends give the same rows in the same (sorted) order,
 * so where a kernel ran never changes an answer; the differential tests
 * run this wrapper over two CPU backends with placements flipping at
 * every size to check that.
 *
 * The device may also arrive during the run (rf_backend_hybrid_new_arriving):
 * starting the GPU (driver, context, NVRTC) takes 0.1-0.3 s, longer than
 * the whole run of many programs on the host's cores. Its backend is then
 * made on a thread of its own while the kernels run on the host; a kernel
 * too large for the host (RF_HOST_WAIT_ROWS rows of work) waits for it,
 * and once it is there the rules above place every kernel. The start
 * itself may wait until the run has gone on a while (start_after): a
 * process that ends while the driver is starting still waits for the call
 * in flight to return (~0.1 s on the H100 machine), so a run that the host
 * finishes in a few tens of milliseconds is better off never starting it.
 * A run that ends before the device is there never waits for it
 * otherwise (the CLI ends the process: rf_backend_hybrid_device_starting). */
#include "backend.h"
#include "download_copy.h"
#include "../primitives/rf_prims.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { DEV = 0, HOST = 1 };

struct rf_dvar {
    int arity;
    rf_dvar *side[2];        /* NULL until first needed */
    bool valid[2];           /* side[s] holds the current rows */
};

/* What placement remembers of a kernel between its runs (a loop runs the
 * same kernels every iteration). */
typedef struct kernel_memo {
    const rf_kernel *k;      /* NULL: a free slot */
    size_t small_streak;     /* consecutive runs with little work */
    size_t last_out;         /* rows its last run made (a union: beyond its
                                larger input, which it shares) */
} kernel_memo;

/* A device backend being made on a thread of its own. */
typedef struct arrival {
    pthread_t thread;
    rf_backend *(*start)(rf_status *st);
    rf_backend *device;      /* the thread's result (NULL: no device) */
    rf_status st;
    atomic_bool done;        /* the thread has finished */
    bool started, threaded, joined;
    double created;          /* rf_now() when the run began */
    double start_after;      /* seconds of the run before the device is started */
    double begun, ready;     /* rf_now() at the device's start and its end */
    int host_threads;        /* the host's threads before the start (one fewer meanwhile); 0: unchanged */
    size_t host_kernels;     /* kernels run on the host before it was joined */
} arrival;

typedef struct hybrid_impl {
    rf_backend *be[2];       /* DEV, HOST; owned (DEV NULL while it arrives, or none came) */
    arrival *arr;            /* NULL: the device was given */
    size_t wait_rows;        /* while the device arrives: a kernel of more work waits for it */
    const rf_hprogram *begun;   /* program_begins, told to the device when it arrives */
    size_t work_rows;        /* host when a kernel's work is at most this */
    size_t move_rows;        /* ... and it moves at most this many rows there */
    size_t streak_runs;      /* ... once it has been small this many runs */
    kernel_memo *memo;       /* open addressing on the kernel's address */
    size_t memo_cap, memo_len;
    size_t kernels[2];       /* kernels run on each side */
    size_t moved_rows[2];    /* rows brought to each side */
    size_t moves[2];
} hybrid_impl;

static hybrid_impl *impl_of(rf_backend *be) { return be->impl; }

static void *arrival_main(void *ctx)
{
    arrival *a = ctx;
    rf_status_init(&a->st);
    a->device = a->start(&a->st);
    a->ready = rf_now();
    atomic_store(&a->done, true);
    return NULL;
}

/* Starts making the device. The host's kernels give the starting thread a
 * core meanwhile: a pool of one worker per core, each of whose jobs waits
 * for every worker, stalls on the one the scheduler has put aside (same
 * generation on luxembourg_osm: 0.15 s alone, 0.2-0.3 s beside a start). */
static void arrival_start(arrival *a)
{
    a->started = true;
    a->begun = rf_now();
    int t = rf_prims_threads();
    if (t > 2) {
        a->host_threads = t;
        rf_prims_set_threads(t - 1);
    }
    a->threaded = pthread_create(&a->thread, NULL, arrival_main, a) == 0;
    if (!a->threaded)
        arrival_main(a);   /* no thread: made here */
}

/* The device backend: NULL while it is not there yet (unless wait: then
 * it is started if it was not, and waited for), or when none came. It is
 * started once the run has gone on start_after seconds. Once made, it is
 * told of the program and announced as the CLI announces a device. */
static rf_backend *device_of(rf_backend *be, bool wait)
{
    hybrid_impl *h = impl_of(be);
    arrival *a = h->arr;
    if (h->be[DEV] || !a || a->joined)
        return h->be[DEV];
    if (!a->started && (wait || rf_now() - a->created >= a->start_after))
        arrival_start(a);
    if (!a->started || (!wait && !atomic_load(&a->done)))
        return NULL;
    if (a->threaded)
        pthread_join(a->thread, NULL);
    a->joined = true;
    if (a->host_threads && rf_prims_threads() == a->host_threads - 1)
        rf_prims_set_threads(a->host_threads);
    a->host_kernels = h->kernels[HOST];
    rf_backend *d = a->device;
    if (!d)
        return NULL;   /* no device: the host runs everything */
    h->be[DEV] = d;
    snprintf(be->device, sizeof be->device, "%.200s; tiny kernels on the host", d->device);
    be->wcoj_auto_ratio = d->wcoj_auto_ratio;
    fprintf(stderr, "redfox: using GPU: %s\n", d->device);
    if (h->begun && d->program_begins)
        d->program_begins(d, h->begun);
    return d;
}

static rf_dvar *hy_var_new(rf_backend *be, int arity, rf_status *st)
{
    (void)be;
    (void)st;
    rf_dvar *v = rf_calloc(1, sizeof *v);
    v->arity = arity;
    return v;
}

static void drop_side(rf_backend *be, rf_dvar *v, int s)
{
    if (v->side[s])
        impl_of(be)->be[s]->var_free(impl_of(be)->be[s], v->side[s]);
    v->side[s] = NULL;
    v->valid[s] = false;
}

static void hy_var_free(rf_backend *be, rf_dvar *v)
{
    if (!v)
        return;
    drop_side(be, v, DEV);
    drop_side(be, v, HOST);
    free(v);
}

/* The side holding v's rows (the host when both do); -1: never written. */
static int held_on(const rf_dvar *v)
{
    return !v ? -1 : v->valid[HOST] ? HOST : v->valid[DEV] ? DEV : -1;
}

static size_t hy_var_rows(rf_backend *be, const rf_dvar *v)
{
    int s = held_on(v);
    return s < 0 ? 0 : impl_of(be)->be[s]->var_rows(impl_of(be)->be[s], v->side[s]);
}

/* Side s's variable of v, made when missing. */
static bool side_var(rf_backend *be, rf_dvar *v, int s, rf_status *st)
{
    if (!v->side[s])
        v->side[s] = impl_of(be)->be[s]->var_new(impl_of(be)->be[s], v->arity, st);
    return v->side[s] != NULL;
}

/* v's rows valid on side s too (a no-op for a variable never written:
 * it reads as empty on either side). */
static bool bring(rf_backend *be, rf_dvar *v, int s, rf_status *st)
{
    if (!v || v->valid[s] || !v->valid[!s])
        return true;
    hybrid_impl *h = impl_of(be);
    rf_table t;
    rf_table_init(&t, v->arity);
    bool ok = h->be[!s]->download(h->be[!s], v->side[!s], &t, st) && side_var(be, v, s, st) &&
              h->be[s]->upload(h->be[s], v->side[s], &t, st);
    if (ok) {
        v->valid[s] = true;
        h->moved_rows[s] += t.nrows;
        h->moves[s]++;
    }
    rf_table_free(&t);
    return ok;
}

/* v now holds rows written on side s only. */
static void written_on(rf_backend *be, rf_dvar *v, int s)
{
    v->valid[s] = true;
    drop_side(be, v, !s);
}

/* Where rows uploaded go: the device, unless it is still arriving and
 * they are few enough for the host (or none came). */
static int upload_side(rf_backend *be, size_t rows)
{
    return device_of(be, rows > impl_of(be)->wait_rows) ? DEV : HOST;
}

static bool hy_upload(rf_backend *be, rf_dvar *v, const rf_table *t, rf_status *st)
{
    hybrid_impl *h = impl_of(be);
    int s = upload_side(be, t->nrows);
    if (!side_var(be, v, s, st) || !h->be[s]->upload(h->be[s], v->side[s], t, st))
        return false;
    written_on(be, v, s);
    return true;
}

static bool hy_upload_unsorted(rf_backend *be, rf_dvar *v, const rf_table *t, rf_status *st)
{
    hybrid_impl *h = impl_of(be);
    int s = upload_side(be, t->nrows);
    if (s == DEV && h->be[DEV]->upload_unsorted) {
        if (!side_var(be, v, DEV, st) || !h->be[DEV]->upload_unsorted(h->be[DEV], v->side[DEV], t, st))
            return false;
        written_on(be, v, DEV);
        return true;
    }
    rf_table sorted;   /* what the runtime does for a backend without upload_unsorted */
    rf_table_init(&sorted, t->arity);
    rf_table_copy(&sorted, t);
    rf_prim_sort_unique(&sorted);
    bool ok = side_var(be, v, s, st) && h->be[s]->upload(h->be[s], v->side[s], &sorted, st);
    rf_table_free(&sorted);
    if (ok)
        written_on(be, v, s);
    return ok;
}

static bool hy_download(rf_backend *be, const rf_dvar *v, rf_table *t, rf_status *st)
{
    int s = held_on(v);
    if (s < 0) {
        rf_table_free(t);
        rf_table_init(t, v->arity);
        return true;
    }
    return impl_of(be)->be[s]->download(impl_of(be)->be[s], v->side[s], t, st);
}

static bool hy_download_at(rf_backend *be, const rf_dvar *v, rf_table *t, size_t at, size_t *rows, rf_status *st)
{
    int s = held_on(v);
    *rows = 0;
    if (s < 0)
        return true;   /* no rows */
    rf_backend *b = impl_of(be)->be[s];
    return b->download_at ? b->download_at(b, v->side[s], t, at, rows, st)
                          : rf_download_copy_at(b, v->side[s], t, at, rows, st);
}

/* Double buffering of out-of-core parts (backend.h): the device's, where
 * the rows go there and it has it; declined otherwise (the part is then
 * uploaded when it runs). */
static bool hy_upload_ahead(rf_backend *be, rf_dvar *v, const rf_table *t, rf_status *st)
{
    hybrid_impl *h = impl_of(be);
    int s = upload_side(be, t->nrows);
    rf_backend *b = h->be[s];
    if (s != DEV || !b->upload_ahead)
        return rf_fail(st, RF_EXIT_RUNTIME_ERROR, "no upload ahead on this side");
    if (!side_var(be, v, s, st) || !b->upload_ahead(b, v->side[s], t, st))
        return false;
    written_on(be, v, s);
    return true;
}

static bool hy_download_at_ahead(rf_backend *be, const rf_dvar *v, rf_table *t, size_t at, size_t *rows,
                                 rf_status *st)
{
    int s = held_on(v);
    rf_backend *b = s < 0 ? NULL : impl_of(be)->be[s];
    if (b && b->download_at_ahead)
        return b->download_at_ahead(b, v->side[s], t, at, rows, st);
    return hy_download_at(be, v, t, at, rows, st);
}

static bool hy_moves_wait(rf_backend *be, rf_status *st)
{
    hybrid_impl *h = impl_of(be);
    bool ok = true;
    for (int s = 0; s < 2; s++)
        if (h->be[s] && h->be[s]->moves_wait)
            ok = h->be[s]->moves_wait(h->be[s], st) && ok;
    return ok;
}

static bool hy_column_sign_uniform(rf_backend *be, const rf_dvar *v, int col)
{
    int s = held_on(v);
    rf_backend *b = s < 0 ? NULL : impl_of(be)->be[s];
    return b && b->column_sign_uniform && b->column_sign_uniform(b, v->side[s], col);
}

static bool hy_block_hashes(rf_backend *be, const rf_dvar *v, size_t block_rows, uint64_t seed, uint64_t **hashes,
                            size_t *nrows, rf_status *st)
{
    int s = held_on(v);
    rf_backend *b = s < 0 ? NULL : impl_of(be)->be[s];
    if (!b || !b->block_hashes)   /* on the host already: downloading is a copy */
        return false;
    return b->block_hashes(b, v->side[s], block_rows, seed, hashes, nrows, st);
}

/* On the device where the rows are there (and it adds in place), else on
 * the side holding them, through a host table; the other side's copy is
 * stale after. */
static bool hy_add_to_columns(rf_backend *be, rf_dvar *v, const uint64_t *add, rf_status *st)
{
    hybrid_impl *h = impl_of(be);
    int s = v && v->valid[DEV] && h->be[DEV] && h->be[DEV]->add_to_columns ? DEV : held_on(v);
    if (s < 0)
        return true;   /* no rows */
    rf_backend *b = h->be[s];
    bool ok = b->add_to_columns ? b->add_to_columns(b, v->side[s], add, st)
                                : rf_add_to_columns_copy(b, v->side[s], v->arity, add, st);
    if (ok)
        written_on(be, v, s);
    return ok;
}

static bool has_member(const rf_kernel *k, rf_kop op)
{
    for (int i = 0; k->op == RF_K_FUSED && i < k->fused->nmembers; i++)
        if (k->fused->members[i].op == op)
            return true;
    return k->op == op;
}

/* k's memo (made on first sight). */
static kernel_memo *memo_of(hybrid_impl *h, const rf_kernel *k)
{
    if (2 * (h->memo_len + 1) > h->memo_cap) {
        size_t cap = h->memo_cap ? 2 * h->memo_cap : 64;
        kernel_memo *m = rf_calloc(cap, sizeof *m);
        for (size_t i = 0; i < h->memo_cap; i++)
            if (h->memo[i].k) {
                size_t j = ((uintptr_t)h->memo[i].k >> 4) & (cap - 1);
                while (m[j].k)
                    j = (j + 1) & (cap - 1);
                m[j] = h->memo[i];
            }
        free(h->memo);
        h->memo = m;
        h->memo_cap = cap;
    }
    size_t j = ((uintptr_t)k >> 4) & (h->memo_cap - 1);
    while (h->memo[j].k && h->memo[j].k != k)
        j = (j + 1) & (h->memo_cap - 1);
    if (!h->memo[j].k) {
        h->memo[j].k = k;
        h->memo_len++;
    }
    return &h->memo[j];
}

/* While the device arrives: whether kernel k would make too much for the
 * host to make it (a join's output can be far larger than its inputs: the
 * first iteration of same generation joins the edges with themselves).
 * A join of two input variables is counted (the host's join_size, a pass
 * over both); a multiway join, or a join whose input another member of
 * its group makes, cannot be, and waits unless its inputs are tiny. */
static bool too_large_for_host(rf_backend *be, const rf_kernel *k, rf_dvar *const *ins, int nin, size_t largest_in)
{
    hybrid_impl *h = impl_of(be);
    rf_backend *host = h->be[HOST];
    if (k->op == RF_K_MULTIJOIN)
        return largest_in > h->work_rows;
    const rf_kernel *join = k->op == RF_K_JOIN ? k : NULL;
    const int *ext = k->op == RF_K_FUSED ? k->fused->in : k->in;
    for (int i = 0; !join && k->op == RF_K_FUSED && i < k->fused->nmembers; i++)
        if (k->fused->members[i].op == RF_K_JOIN)
            join = &k->fused->members[i];
    if (!join)
        return false;
    rf_dvar *side[2] = {NULL, NULL};
    for (int j = 0; j < 2; j++)
        for (int i = 0; i < nin && !side[j]; i++)
            if (ext[i] == join->in[j])
                side[j] = ins[i] ? ins[i] : (rf_dvar *)-1;   /* -1: never written, empty */
    if (!side[0] || !side[1])
        return largest_in > h->work_rows;   /* an input made inside the group */
    if (side[0] == (rf_dvar *)-1 || side[1] == (rf_dvar *)-1)
        return false;   /* an empty side: nothing to make */
    if (!side[0]->valid[HOST] || !side[1]->valid[HOST] || !host->join_size)
        return largest_in > h->work_rows;
    int *keys = rf_malloc(sizeof *keys * (size_t)(join->nkeys > 0 ? join->nkeys : 1));
    for (int c = 0; c < join->nkeys; c++)
        keys[c] = c;   /* a JOIN's keys are its inputs' leading columns */
    uint64_t rows = 0;
    rf_status st;
    rf_status_init(&st);
    bool counted = host->join_size(host, side[0]->side[HOST], side[1]->side[HOST], join->nkeys, keys, keys, &rows, &st);
    free(keys);
    return !counted || rows > h->wait_rows;   /* (not counted: the device decides) */
}

/* Where kernel k runs (the rule at the top of this file). */
static int place(rf_backend *be, const rf_kernel *k, rf_dvar *const *outs, rf_dvar *const *ins, int nin,
                 size_t *largest_in)
{
    hybrid_impl *h = impl_of(be);
    *largest_in = 0;
    int nowhere = device_of(be, false) ? DEV : HOST;   /* for variables never written */
    if (k->op == RF_K_COPY)   /* no work: where its source is */
        return held_on(ins[0]) == HOST ? HOST : held_on(ins[0]) == DEV ? DEV : held_on(outs[0]) == HOST ? HOST : nowhere;
    if (k->op == RF_K_CLEAR)
        return held_on(outs[0]) == HOST ? HOST : nowhere;
    size_t sum = 0, max = 0, moved = 0;
    for (int i = 0; i < nin; i++) {
        size_t rows = hy_var_rows(be, ins[i]);
        sum += rows;
        max = rows > max ? rows : max;
        if (ins[i] && !ins[i]->valid[HOST])
            moved += rows;
    }
    *largest_in = max;
    size_t work = sum;
    if (k->op == RF_K_DIFF || k->op == RF_K_ANTIJOIN)
        work = hy_var_rows(be, ins[0]);   /* each left row probes the right */
    else if ((has_member(k, RF_K_JOIN) || has_member(k, RF_K_UNION)) && nin > 1)
        work = sum - max;                 /* the large side searched or shared */
    /* (A group reading one variable joins it with itself: all of it is work.) */
    /* The device still arriving: the host runs what it can meanwhile (the
     * largest input counts: a join searching a large relation still walks
     * it on the host); more than wait_rows of work waits for the device. */
    if (!device_of(be, false) &&
        !device_of(be, (work > max ? work : max) > h->wait_rows || too_large_for_host(be, k, ins, nin, max)))
        return HOST;
    kernel_memo *m = memo_of(h, k);
    bool small = work <= h->work_rows && m->last_out <= h->work_rows;
    m->small_streak = small ? m->small_streak + 1 : 0;
    bool steady = m->small_streak > h->streak_runs;
    return small && (moved == 0 || (steady && moved <= h->move_rows)) ? HOST : DEV;
}

static rf_run_result hy_run(rf_backend *be, const rf_hprogram *p, const rf_kernel *k, rf_dvar *const *outs,
                            rf_dvar *const *ins, rf_kernel_stats *stats, rf_status *st)
{
    hybrid_impl *h = impl_of(be);
    int nin = k->op == RF_K_FUSED ? k->fused->nin : k->op == RF_K_MULTIJOIN ? k->mj->nin : 2;
    int nout = k->op == RF_K_FUSED ? k->fused->nout : 1;
    size_t largest_in;
    int s = place(be, k, outs, ins, nin, &largest_in);
    rf_dvar *sin[RF_FUSED_MAX + RF_MULTIJOIN_MAX_IN + 2] = {NULL};
    rf_dvar *sout[RF_FUSED_MAX + 2] = {NULL};
    bool was_valid[RF_FUSED_MAX + 2][2];
    for (int i = 0; i < nin; i++) {
        if (!bring(be, ins[i], s, st))
            return RF_RUN_FAILED;
        sin[i] = ins[i] && ins[i]->valid[s] ? ins[i]->side[s] : NULL;
    }
    for (int i = 0; i < nout; i++) {
        if (!outs[i])
            continue;
        was_valid[i][DEV] = outs[i]->valid[DEV];
        was_valid[i][HOST] = outs[i]->valid[HOST];
        if (!side_var(be, outs[i], s, st))
            return RF_RUN_FAILED;
        sout[i] = outs[i]->side[s];
    }
    h->be[s]->time_kernels = be->time_kernels;
    rf_run_result r = h->be[s]->run(h->be[s], p, k, sout, sin, stats, st);
    if (r == RF_RUN_DONE) {
        size_t rows = 0;
        for (int i = 0; i < nout; i++)
            if (outs[i]) {
                written_on(be, outs[i], s);
                rows += hy_var_rows(be, outs[i]);
            }
        /* a union shares its larger input: only the rows beyond it are made */
        if (has_member(k, RF_K_UNION))
            rows = rows > largest_in ? rows - largest_in : 0;
        memo_of(h, k)->last_out = rows;
        h->kernels[s]++;
    } else if (r == RF_RUN_MEMBERS) {   /* nothing written: the members run one by one */
        for (int i = 0; i < nout; i++)
            if (outs[i]) {
                outs[i]->valid[DEV] = was_valid[i][DEV];
                outs[i]->valid[HOST] = was_valid[i][HOST];
            }
    }
    return r;
}

/* --join=auto's statistic, counted where both relations are (the device
 * unless both are on the host already). */
static bool hy_join_size(rf_backend *be, const rf_dvar *l, const rf_dvar *r, int nkeys, const int *lkeys,
                         const int *rkeys, uint64_t *rows, rf_status *st)
{
    hybrid_impl *h = impl_of(be);
    int s = (!l || l->valid[HOST] || !l->valid[DEV]) && (!r || r->valid[HOST] || !r->valid[DEV]) ? HOST : DEV;
    rf_dvar *lv = (rf_dvar *)l, *rv = (rf_dvar *)r;
    if (!bring(be, lv, s, st) || !bring(be, rv, s, st))
        return false;
    if (!h->be[s]->join_size)
        return rf_fail(st, RF_EXIT_RUNTIME_ERROR, "join size on a backend without it");
    return h->be[s]->join_size(h->be[s], lv && lv->valid[s] ? lv->side[s] : NULL,
                               rv && rv->valid[s] ? rv->side[s] : NULL, nkeys, lkeys, rkeys, rows, st);
}

/* The device's memory (the host's while there is none). */
static size_t hy_bytes_in_use(rf_backend *be)
{
    hybrid_impl *h = impl_of(be);
    rf_backend *b = h->be[DEV] ? h->be[DEV] : h->be[HOST];
    return b->bytes_in_use(b);
}

static size_t hy_bytes_peak(rf_backend *be)
{
    hybrid_impl *h = impl_of(be);
    rf_backend *b = h->be[DEV] ? h->be[DEV] : h->be[HOST];
    return b->bytes_peak(b);
}

static void hy_print_stats(rf_backend *be, FILE *f)
{
    hybrid_impl *h = impl_of(be);
    if (h->be[DEV] && h->be[DEV]->print_stats)
        h->be[DEV]->print_stats(h->be[DEV], f);
    if (h->arr) {
        if (!h->arr->started)
            fprintf(f, "  placement: the run ended within %.3f s, before the device was started (after %.3f s "
                       "of the run, RF_DEVICE_START_MS); every kernel ran on the host\n",
                    rf_now() - h->arr->created, h->arr->start_after);
        else if (!h->arr->joined)
            fprintf(f, "  placement: the device was still starting when the run ended (%.3f s so far); every "
                       "kernel ran on the host\n", rf_now() - h->arr->begun);
        else if (!h->be[DEV])
            fprintf(f, "  placement: no device came (%s); every kernel ran on the host\n",
                    h->arr->st.message[0] ? h->arr->st.message : "none");
        else
            fprintf(f, "  placement: the device was started %.3f s into the run and ready %.3f s later; %zu kernels "
                       "ran on the host before (RF_HOST_WAIT_ROWS %zu: larger ones waited for it)\n",
                    h->arr->begun - h->arr->created, h->arr->ready - h->arr->begun, h->arr->host_kernels,
                    h->wait_rows);
    }
    fprintf(f,
            "  placement: %zu kernels on the device, %zu on the host (work <= %zu rows; moving up to %zu rows "
            "after %zu small runs: RF_HOST_KERNEL_ROWS, RF_HOST_MOVE_ROWS, RF_HOST_STEADY_RUNS); %zu rows brought "
            "to the host in %zu copies, %zu to the device in %zu\n",
            h->kernels[DEV], h->kernels[HOST], h->work_rows, h->move_rows, h->streak_runs, h->moved_rows[HOST],
            h->moves[HOST], h->moved_rows[DEV], h->moves[DEV]);
}

static void hy_program_begins(rf_backend *be, const rf_hprogram *p)
{
    hybrid_impl *h = impl_of(be);
    h->begun = p;   /* a device still arriving is told when it comes */
    for (int s = 0; s < 2; s++)
        if (h->be[s] && h->be[s]->program_begins)
            h->be[s]->program_begins(h->be[s], p);
}

static void hy_destroy(rf_backend *be)
{
    hybrid_impl *h = impl_of(be);
    if (h->arr) {
        if (h->arr->started && !h->arr->joined) {   /* not needed any more, but its thread must end */
            if (h->arr->threaded)
                pthread_join(h->arr->thread, NULL);
            h->arr->joined = true;
            h->be[DEV] = h->arr->device;
        }
        free(h->arr);
    }
    if (h->be[DEV])
        h->be[DEV]->destroy(h->be[DEV]);
    h->be[HOST]->destroy(h->be[HOST]);
    free(h->memo);
    free(h);
    free(be);
}

bool rf_backend_hybrid_device_starting(const rf_backend *be)
{
    const hybrid_impl *h = be && be->destroy == hy_destroy ? be->impl : NULL;
    return h && h->arr && h->arr->started && !h->arr->joined && !atomic_load(&h->arr->done);
}

/* A row count from the environment (a decimal number), else def. */
static size_t env_rows(const char *name, size_t def)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return def;
    char *end;
    unsigned long long n = strtoull(v, &end, 10);
    return *end || v[0] == '-' ? def : (size_t)n;
}

/* The wrapper over host (and device, when given). */
static rf_backend *hybrid_over(rf_backend *device, rf_backend *host, arrival *arr)
{
    hybrid_impl *h = rf_calloc(1, sizeof *h);
    h->be[DEV] = device;
    h->be[HOST] = host;
    h->arr = arr;
    h->work_rows = env_rows("RF_HOST_KERNEL_ROWS", RF_HOST_KERNEL_ROWS_DEFAULT);
    h->move_rows = env_rows("RF_HOST_MOVE_ROWS", RF_HOST_MOVE_ROWS_DEFAULT);
    h->streak_runs = env_rows("RF_HOST_STEADY_RUNS", RF_HOST_STEADY_RUNS_DEFAULT);
    h->wait_rows = env_rows("RF_HOST_WAIT_ROWS", RF_HOST_WAIT_ROWS_DEFAULT);
    rf_backend *be = rf_calloc(1, sizeof *be);
    be->name = "gpu";   /* the run is the device's; tiny kernels go to the host */
    if (device)
        snprintf(be->device, sizeof be->device, "%.200s; tiny kernels on the host", device->device);
    else
        snprintf(be->device, sizeof be->device, "device starting; kernels on the host meanwhile");
    be->var_new = hy_var_new;
    be->var_free = hy_var_free;
    be->var_rows = hy_var_rows;
    be->upload = hy_upload;
    be->pooled_tables = true;   /* (the device's, once it is there: the heap until) */
    be->download = hy_download;
    be->download_at = hy_download_at;
    if (!device || device->upload_ahead) {   /* (an arriving device: the GPU's, once there) */
        be->upload_ahead = hy_upload_ahead;
        be->download_at_ahead = hy_download_at_ahead;
        be->moves_wait = hy_moves_wait;
    }
    be->run = hy_run;
    be->bytes_in_use = hy_bytes_in_use;
    be->bytes_peak = hy_bytes_peak;
    be->destroy = hy_destroy;
    be->print_stats = hy_print_stats;
    be->column_sign_uniform = hy_column_sign_uniform;
    be->block_hashes = hy_block_hashes;
    be->add_to_columns = hy_add_to_columns;
    be->upload_unsorted = !device || device->upload_unsorted ? hy_upload_unsorted : NULL;
    be->program_begins = hy_program_begins;
    be->join_size = (!device || device->join_size) && host->join_size ? hy_join_size : NULL;
    /* the device decides the plans' speeds (the GPU's until it is there) */
    be->wcoj_auto_ratio = device ? device->wcoj_auto_ratio : RF_WCOJ_AUTO_RATIO_GPU;
    be->impl = h;
    return be;
}

rf_backend *rf_backend_hybrid_new(rf_backend *device, rf_backend *host)
{
    return hybrid_over(device, host, NULL);
}

rf_backend *rf_backend_hybrid_new_arriving(rf_backend *(*start)(rf_status *st), rf_backend *host, double start_after)
{
    arrival *a = rf_calloc(1, sizeof *a);
    a->start = start;
    a->created = rf_now();
    a->start_after = start_after > 0 ? start_after : 0;
    atomic_init(&a->done, false);
    rf_backend *be = hybrid_over(NULL, host, a);
    if (a->start_after == 0)
        arrival_start(a);
    return be;
}
