/* The CPU backend: variables are host rf_tables, kernels are calls into the
 * CPU operator library (primitives/cpu). Tracks the bytes held by
 * variables (in use and peak) for --stats. */
#include "backend.h"
#include "rf_prims.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct rf_dvar {
    rf_table t;
    size_t bytes; /* accounted size of t */
};

typedef struct cpu_impl {
    size_t in_use, peak;
} cpu_impl;

static void account(rf_backend *be, rf_dvar *v)
{
    cpu_impl *im = be->impl;
    size_t now = rf_table_bytes(&v->t);
    im->in_use = im->in_use - v->bytes + now;
    v->bytes = now;
    if (im->in_use > im->peak)
        im->peak = im->in_use;
}

static rf_dvar *cpu_var_new(rf_backend *be, int arity, rf_status *st)
{
    rf_dvar *v = rf_calloc(1, sizeof *v);
    rf_table_init(&v->t, arity);
    return v;
}

static void cpu_var_free(rf_backend *be, rf_dvar *v)
{
    if (!v)
        return;
    cpu_impl *im = be->impl;
    im->in_use -= v->bytes;
    rf_table_free(&v->t);
    free(v);
}

static size_t cpu_var_rows(rf_backend *be, const rf_dvar *v) { return v ? v->t.nrows : 0; }

/* Replaces v's table with t (taking t's storage). */
static void set_table(rf_backend *be, rf_dvar *v, rf_table *t)
{
    rf_table_free(&v->t);
    v->t = *t;
    account(be, v);
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
    rf_table_copy(t, &v->t);
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
    const rf_table *a = in0 ? &in0->t : &empty0, *b = in1 ? &in1->t : &empty1;
    bool ok = true;
    memset(stats, 0, sizeof *stats);
    stats->rows_in[0] = k->in[0] >= 0 ? a->nrows : 0;
    stats->rows_in[1] = k->in[1] >= 0 ? b->nrows : 0;
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
        rf_prim_difference(a, b, &res);
        break;
    case RF_K_AGG:
        ok = rf_prim_aggregate(a, k->nkeys, k->aggfn, p->vars[k->out].types[k->nkeys], &k->agg_arg,
                               &res, st);
        break;
    case RF_K_COPY:
        rf_table_init(&res, a->arity);
        if (out != in0)
            rf_table_copy(&res, a);
        else
            rf_table_move(&res, &in0->t);
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
    stats->rows_out = res.nrows;
    stats->bytes_moved = (stats->rows_in[0] * (size_t)a->arity + stats->rows_in[1] * (size_t)b->arity +
                          res.nrows * (size_t)oar) * sizeof(rf_word);
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
