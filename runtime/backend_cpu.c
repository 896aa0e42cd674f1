/* The CPU backend: variables are host rf_tables, kernels are calls into the
 * CPU operator library (primitives/cpu). Tracks the bytes held by
 * variables (in use and peak) for --stats.
 *
 * A sorted variable may also (or instead) be held as a dense set (a bitmap
 * over its packed rows, rf_dense): once the full relation of a semi-naive
 * loop covers a good part of its column ranges, `new − full` becomes one
 * probe per new row and `full ∪ new` a bitmap copy plus one bit per new
 * row, instead of two passes over the whole relation every iteration. The
 * table form is rebuilt from the bitmap (in row order) only when some other
 * kernel, or the output, reads the variable. */
#include "backend.h"
#include "rf_prims.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct rf_dvar {
    rf_table t;       /* the rows, valid when has_table */
    bool has_table;
    rf_dense *dense;  /* the same set as a bitmap, or NULL (sorted vars only) */
    bool dense_tried; /* dense_of already found the table too sparse */
    /* A JOIN not yet run (its output is unsorted and usually only sorted
     * next): the inputs are held (refs) until a SORT runs join and sort as
     * one pass into a bitmap, or anything else needs the rows. */
    bool pending;
    rf_dvar *pin[2];
    const rf_kernel *pk;
    int refs;         /* pending joins holding this variable */
    bool dead;        /* freed by the runtime while still held */
    struct rf_dvar *next_pending;
    size_t nrows;
    size_t bytes;     /* accounted size of t and dense */
};

/* A sorted relation is worth a bitmap when the bitmap has at most this
 * many bits per row (32: 4 bytes a row against the table's 8 per column). */
#define DENSE_BITS_PER_ROW 32
/* Below this a merge is cheap and a bitmap not worth building. */
#define RF_DENSE_MIN_ROWS 65536

typedef struct cpu_impl {
    size_t in_use, peak;
    rf_dvar *pending; /* list of variables holding a pending join */
} cpu_impl;

static void materialise(rf_backend *be, rf_dvar *v);

static void account(rf_backend *be, rf_dvar *v)
{
    cpu_impl *im = be->impl;
    size_t now = (v->has_table ? rf_table_bytes(&v->t) : 0) + (v->dense ? rf_dense_bytes(v->dense) : 0);
    im->in_use = im->in_use - v->bytes + now;
    v->bytes = now;
    if (im->in_use > im->peak)
        im->peak = im->in_use;
}

static rf_dvar *cpu_var_new(rf_backend *be, int arity, rf_status *st)
{
    rf_dvar *v = rf_calloc(1, sizeof *v);
    rf_table_init(&v->t, arity);
    v->has_table = true;
    return v;
}

static void cpu_var_free(rf_backend *be, rf_dvar *v);

/* Forgets v's pending join (if any), releasing its inputs. */
static void drop_pending(rf_backend *be, rf_dvar *v)
{
    if (!v->pending)
        return;
    cpu_impl *im = be->impl;
    for (rf_dvar **pp = &im->pending; *pp; pp = &(*pp)->next_pending)
        if (*pp == v) {
            *pp = v->next_pending;
            break;
        }
    v->pending = false;
    v->next_pending = NULL;
    for (int i = 0; i < 2; i++) {
        rf_dvar *in = v->pin[i];
        v->pin[i] = NULL;
        if (in && --in->refs == 0 && in->dead)
            cpu_var_free(be, in);
    }
}

/* Before v's contents change, every pending join reading v runs. */
static void before_change(rf_backend *be, rf_dvar *v)
{
    cpu_impl *im = be->impl;
    drop_pending(be, v);
    while (v->refs > 0) {
        rf_dvar *h = im->pending;
        while (h && h->pin[0] != v && h->pin[1] != v)
            h = h->next_pending;
        if (!h)
            break;
        materialise(be, h);
    }
}

static void cpu_var_free(rf_backend *be, rf_dvar *v)
{
    if (!v)
        return;
    if (v->refs > 0) { /* a pending join still reads it */
        v->dead = true;
        return;
    }
    cpu_impl *im = be->impl;
    drop_pending(be, v);
    im->in_use -= v->bytes;
    rf_table_free(&v->t);
    rf_dense_free(v->dense);
    free(v);
}

static size_t cpu_var_rows(rf_backend *be, const rf_dvar *v) { return v ? v->nrows : 0; }

/* Replaces v's contents with t (taking t's storage). */
static void set_table(rf_backend *be, rf_dvar *v, rf_table *t)
{
    before_change(be, v);
    rf_table_free(&v->t);
    rf_dense_free(v->dense);
    v->dense = NULL;
    v->dense_tried = false;
    v->t = *t;
    v->has_table = true;
    v->nrows = t->nrows;
    account(be, v);
}

/* Replaces v's contents with the dense set d (taken over). */
static void set_dense(rf_backend *be, rf_dvar *v, rf_dense *d)
{
    before_change(be, v);
    rf_table_free(&v->t);
    rf_table_init(&v->t, rf_dense_arity(d));
    rf_dense_free(v->dense);
    v->dense = d;
    v->dense_tried = false;
    v->has_table = false;
    v->nrows = rf_dense_rows(d);
    account(be, v);
}

/* v's rows as a table, rebuilt from the bitmap (and kept) if need be. */
static const rf_table *table_of(rf_backend *be, rf_dvar *v)
{
    if (v->pending)
        materialise(be, v);
    if (!v->has_table) {
        rf_table_free(&v->t);
        rf_dense_to_table(v->dense, &v->t);
        v->has_table = true;
        account(be, v);
    }
    return &v->t;
}

/* v's bitmap, built from its table (and kept) when v is sorted and dense
 * enough; NULL otherwise. */
static const rf_dense *dense_of(rf_backend *be, rf_dvar *v, bool sorted)
{
    if (v->dense || !sorted || v->nrows < RF_DENSE_MIN_ROWS || v->dense_tried)
        return v->dense;
    v->dense_tried = true; /* the contents never change: decide once */
    int max_bits = 0;
    size_t r = v->nrows * DENSE_BITS_PER_ROW;
    while (max_bits < RF_DENSE_MAX_BITS && ((size_t)2 << max_bits) <= r)
        max_bits++;
    rf_dense *d = rf_dense_new_for(&v->t, NULL, max_bits);
    if (!d)
        return NULL;
    (void)rf_dense_insert_ex(d, &v->t, true, true); /* laid out for v */
    v->dense = d;
    account(be, v);
    return d;
}

static bool cpu_upload(rf_backend *be, rf_dvar *v, const rf_table *t, rf_status *st)
{
    if (t->arity != v->t.arity)
        return rf_fail(st, RF_EXIT_RUNTIME_ERROR, "upload: arity %d into a variable of arity %d",
                       t->arity, v->t.arity);
    rf_table c;
    rf_table_init(&c, t->arity);
    rf_table_copy(&c, t);
    set_table(be, v, &c);
    return true;
}

static bool cpu_download(rf_backend *be, const rf_dvar *v, rf_table *t, rf_status *st)
{
    if (v->pending)
        materialise(be, (rf_dvar *)v); /* same rows, another representation */
    if (v->has_table) {
        rf_table_copy(t, &v->t);
    } else {
        rf_table_free(t);
        rf_dense_to_table(v->dense, t);
    }
    return true;
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
    rf_dense *d = rf_dense_clone(big->dense);
    if (!rf_dense_insert(d, table_of(be, small), true)) {
        rf_dense_free(d);
        return false;
    }
    set_dense(be, out, d);
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

/* Runs v's pending join into v's table. */
static void materialise(rf_backend *be, rf_dvar *v)
{
    if (!v->pending)
        return;
    const rf_kernel *k = v->pk;
    rf_table res;
    rf_status st;
    rf_status_init(&st);
    /* A direct join cannot fault (no code beyond column reads). */
    (void)rf_prim_join(table_of(be, v->pin[0]), table_of(be, v->pin[1]), k->nkeys, &k->filter,
                       k->nproj, k->proj, &res, &st);
    set_table(be, v, &res); /* drops the pending state */
}

/* JOIN whose output is unsorted: defer it (see rf_dvar.pending). The row
 * count is exact, for var_rows. */
static bool defer_join(rf_backend *be, const rf_hprogram *p, const rf_kernel *k, rf_dvar *out,
                       rf_dvar *in0, rf_dvar *in1)
{
    int cols[64];
    if (p->vars[k->out].sorted || !in0 || !in1 || k->nproj > 64 || !join_is_direct(k, cols) ||
        in0->pending || in1->pending || out->refs > 0)
        return false;
    size_t rows = rf_prim_join_count(table_of(be, in0), table_of(be, in1), k->nkeys);
    rf_table empty;
    rf_table_init(&empty, p->vars[k->out].arity);
    set_table(be, out, &empty);
    cpu_impl *im = be->impl;
    out->pending = true;
    out->pk = k;
    out->pin[0] = in0;
    out->pin[1] = in1;
    in0->refs++;
    in1->refs++;
    out->nrows = rows;
    out->next_pending = im->pending;
    im->pending = out;
    return true;
}

/* SORT of a pending join: both in one pass through a bitmap when dense. */
static bool sort_pending(rf_backend *be, rf_dvar *out, rf_dvar *in0)
{
    int cols[64];
    const rf_kernel *k = in0->pk;
    if (!join_is_direct(k, cols))
        return false;
    rf_table res;
    if (!rf_prim_join_sort_dense(table_of(be, in0->pin[0]), table_of(be, in0->pin[1]), k->nkeys,
                                 k->nproj, cols, in0->nrows, &res))
        return false;
    set_table(be, out, &res);
    return true;
}

static bool cpu_run(rf_backend *be, const rf_hprogram *p, const rf_kernel *k, rf_dvar *out,
                    rf_dvar *in0, rf_dvar *in1, rf_kernel_stats *stats, rf_status *st)
{
    double t0 = rf_now();
    rf_table res, empty0, empty1;
    int oar = p->vars[k->out].arity;
    /* A variable never defined reads as empty. */
    rf_table_init(&empty0, k->in[0] >= 0 ? p->vars[k->in[0]].arity : 0);
    rf_table_init(&empty1, k->in[1] >= 0 ? p->vars[k->in[1]].arity : 0);
    bool ok = true;
    memset(stats, 0, sizeof *stats);
    stats->rows_in[0] = in0 && k->in[0] >= 0 ? in0->nrows : 0;
    stats->rows_in[1] = in1 && k->in[1] >= 0 ? in1->nrows : 0;
    int a_ar = empty0.arity, b_ar = empty1.arity;
    if ((k->op == RF_K_JOIN && defer_join(be, p, k, out, in0, in1)) ||
        (k->op == RF_K_SORT && in0 && in0->pending && sort_pending(be, out, in0))) {
        rf_table_free(&empty0);
        rf_table_free(&empty1);
        goto done;
    }
    if (k->op == RF_K_UNION && dense_union(be, p, k, out, in0, in1)) {
        rf_table_free(&empty0);
        rf_table_free(&empty1);
        goto done;
    }
    if (k->op == RF_K_COPY && in0) {
        rf_table_free(&empty0);
        rf_table_free(&empty1);
        if (out == in0)
            goto done;
        if (in0->pending)
            materialise(be, in0);
        rf_dense *d = in0->dense ? rf_dense_clone(in0->dense) : NULL;
        if (in0->has_table) {
            rf_table_init(&res, in0->t.arity);
            rf_table_copy(&res, &in0->t);
            set_table(be, out, &res);
            if (d) {
                out->dense = d;
                account(be, out);
            }
        } else {
            set_dense(be, out, d);
        }
        goto done;
    }
    /* The bitmap of a DIFF's right input: big full relations only. */
    const rf_dense *bd = k->op == RF_K_DIFF && in1 ? dense_of(be, in1, true) : NULL;
    const rf_table *a = in0 ? table_of(be, in0) : &empty0;
    const rf_table *b = in1 && !bd ? table_of(be, in1) : in1 && in1->has_table ? &in1->t : &empty1;
    switch (k->op) {
    case RF_K_MAP:
        ok = rf_prim_map(a, &k->filter, k->nproj, k->proj, &res, st);
        break;
    case RF_K_SORT:
        rf_prim_sort(a, &res);
        break;
    case RF_K_JOIN:
        ok = rf_prim_join(a, b, k->nkeys, &k->filter, k->nproj, k->proj, &res, st);
        break;
    case RF_K_ANTIJOIN:
        rf_prim_antijoin(a, b, k->nkeys, &res);
        break;
    case RF_K_UNION:
        rf_prim_union(a, b, &res);
        break;
    case RF_K_DIFF:
        if (bd)
            rf_dense_difference(a, bd, &res);
        else
            rf_prim_difference(a, b, &res);
        break;
    case RF_K_AGG:
        ok = rf_prim_aggregate(a, k->nkeys, k->aggfn, p->vars[k->out].types[k->nkeys], &k->agg_arg,
                               &res, st);
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
    if (!ok) {
        rf_table_free(&res);
        return false;
    }
    if (res.arity != out->t.arity) {
        rf_table_free(&res);
        return rf_fail(st, RF_EXIT_RUNTIME_ERROR, "cpu backend: %s produced arity %d for a variable of arity %d",
                       rf_kop_name(k->op), res.arity, out->t.arity);
    }
    set_table(be, out, &res);
done:
    stats->rows_out = out->nrows;
    stats->bytes_moved = (stats->rows_in[0] * (size_t)a_ar + stats->rows_in[1] * (size_t)b_ar +
                          out->nrows * (size_t)oar) * sizeof(rf_word);
    stats->seconds = rf_now() - t0;
    return true;
}

static size_t cpu_bytes_in_use(rf_backend *be) { return ((cpu_impl *)be->impl)->in_use; }
static size_t cpu_bytes_peak(rf_backend *be) { return ((cpu_impl *)be->impl)->peak; }

static void cpu_destroy(rf_backend *be)
{
    if (!be)
        return;
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
    be->run = cpu_run;
    be->bytes_in_use = cpu_bytes_in_use;
    be->bytes_peak = cpu_bytes_peak;
    be->destroy = cpu_destroy;
    be->impl = rf_calloc(1, sizeof(cpu_impl));
    return be;
}
