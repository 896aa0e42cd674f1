/* The GPU backend: rf_backend (backend.h) over the CUDA operator library
 * (primitives/cuda). Relations stay in device memory from upload to
 * download; every kernel of the Harmony IR is one library call, timed with
 * device events. */
#include "../backend.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rf_cuda_prims.h"

struct rf_dvar {
    rf_drel rel;
};

typedef struct gpu_impl {
    rf_cuda_ctx *ctx;
} gpu_impl;

static rf_cuda_ctx *ctx_of(rf_backend *be) { return ((gpu_impl *)be->impl)->ctx; }

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
    return v;
}

static void gpu_var_free(rf_backend *be, rf_dvar *v)
{
    if (!v)
        return;
    rf_drel_free(ctx_of(be), &v->rel);
    free(v);
}

static size_t gpu_var_rows(rf_backend *be, const rf_dvar *v)
{
    (void)be;
    return v->rel.nrows;
}

static bool gpu_upload(rf_backend *be, rf_dvar *v, const rf_table *t, rf_status *st)
{
    if (t->arity != v->rel.arity)
        return rf_fail(st, RF_EXIT_RUNTIME_ERROR, "upload of arity %d into a relation of arity %d",
                       t->arity, v->rel.arity);
    return rf_drel_upload(ctx_of(be), &v->rel, t, "an input relation", st);
}

static bool gpu_download(rf_backend *be, const rf_dvar *v, rf_table *t, rf_status *st)
{
    return rf_drel_download(ctx_of(be), &v->rel, t, st);
}

/* ---- String order: ranks of dictionary ids by text, for typed compares ---- */

static int cmp_str_ids(const void *x, const void *y)
{
    rf_word a = *(const rf_word *)x, b = *(const rf_word *)y;
    size_t la = rf_str_len(a), lb = rf_str_len(b);
    int c = memcmp(rf_str_get(a), rf_str_get(b), la < lb ? la : lb);
    if (c)
        return c < 0 ? -1 : 1;
    return (la > lb) - (la < lb);
}

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
    if (k->op == RF_K_AGG && (k->aggfn == RF_AGG_MIN || k->aggfn == RF_AGG_MAX) && k->agg_arg.n > 0 &&
        k->agg_arg.ins[k->agg_arg.n - 1].type == RF_TYPE_STRING)
        return true;
    return code_compares_strings(&k->agg_arg);
}

/* The dictionary only grows (facts are loaded before kernels run), so the
 * table is rebuilt only when it has new strings. */
static bool refresh_string_order(rf_cuda_ctx *ctx, rf_status *st)
{
    size_t n = rf_str_count();
    if (n == rf_cuda_string_ranks(ctx))
        return true;
    if (n > UINT32_MAX)
        return rf_fail(st, RF_EXIT_RUNTIME_ERROR, "too many strings for the GPU string order");
    rf_word *ids = rf_malloc(rf_mul_size(n ? n : 1, sizeof *ids));
    uint32_t *rank = rf_malloc(rf_mul_size(n ? n : 1, sizeof *rank));
    for (size_t i = 0; i < n; i++)
        ids[i] = i;
    qsort(ids, n, sizeof *ids, cmp_str_ids);
    for (size_t i = 0; i < n; i++)
        rank[ids[i]] = (uint32_t)i;
    bool ok = rf_cuda_set_string_ranks(ctx, rank, n, st);
    free(ids);
    free(rank);
    return ok;
}

static size_t rel_bytes(const rf_dvar *v) { return v ? v->rel.nrows * (size_t)v->rel.arity * 8 : 0; }

static bool gpu_run(rf_backend *be, const rf_hprogram *p, const rf_kernel *k, rf_dvar *out,
                    rf_dvar *in0, rf_dvar *in1, rf_kernel_stats *stats, rf_status *st)
{
    rf_cuda_ctx *ctx = ctx_of(be);
    const char *what = (k->out >= 0 && k->out < p->nvars && p->vars[k->out].name) ? p->vars[k->out].name : "?";
    memset(stats, 0, sizeof *stats);
    /* A variable never defined reads as empty (as on the CPU backend). */
    rf_dvar empty0, empty1;
    if (!in0 && k->in[0] >= 0 && k->in[0] < p->nvars) {
        rf_drel_init(&empty0.rel, p->vars[k->in[0]].arity);
        in0 = &empty0;
    }
    if (!in1 && k->in[1] >= 0 && k->in[1] < p->nvars) {
        rf_drel_init(&empty1.rel, p->vars[k->in[1]].arity);
        in1 = &empty1;
    }
    if ((k->op != RF_K_CLEAR && !in0) ||
        ((k->op == RF_K_JOIN || k->op == RF_K_ANTIJOIN || k->op == RF_K_UNION || k->op == RF_K_DIFF) && !in1))
        return rf_fail(st, RF_EXIT_RUNTIME_ERROR, "kernel op %d for %s lacks an input", (int)k->op, what);
    stats->rows_in[0] = in0 ? in0->rel.nrows : 0;
    stats->rows_in[1] = in1 ? in1->rel.nrows : 0;
    size_t bytes_in = rel_bytes(in0) + rel_bytes(in1);
    if (needs_string_order(k) && !refresh_string_order(ctx, st))
        return false;
    if (!rf_cuda_timer_start(ctx, st))
        return false;
    bool ok;
    switch (k->op) {
    case RF_K_MAP:
        ok = rf_cuda_map(ctx, &in0->rel, &k->filter, k->nproj, k->proj, &out->rel, what, st);
        break;
    case RF_K_SORT:
        ok = rf_cuda_sort_unique(ctx, &in0->rel, &out->rel, what, st);
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
        rf_type rt = RF_TYPE_INT64;
        if (k->out >= 0 && k->out < p->nvars && p->vars[k->out].types && k->nkeys < p->vars[k->out].arity)
            rt = p->vars[k->out].types[k->nkeys];
        ok = rf_cuda_aggregate(ctx, &in0->rel, k->nkeys, k->aggfn, rt, &k->agg_arg, &out->rel, what, st);
        break;
    }
    case RF_K_COPY:
        ok = out == in0 || rf_drel_copy(ctx, &out->rel, &in0->rel, what, st);
        break;
    case RF_K_CLEAR: {
        int arity = out->rel.arity;
        rf_drel_free(ctx, &out->rel);
        rf_drel_init(&out->rel, arity);
        ok = true;
        break;
    }
    default:
        ok = rf_fail(st, RF_EXIT_RUNTIME_ERROR, "the GPU backend cannot run kernel op %d", (int)k->op);
        break;
    }
    double secs = 0;
    /* Stop the timer even after a failure so the next start pairs up. */
    bool timed = rf_cuda_timer_stop(ctx, &secs, ok ? st : &(rf_status){0});
    if (!ok || !timed)
        return false;
    stats->seconds = secs;
    stats->rows_out = out->rel.nrows;
    stats->bytes_moved = bytes_in + rel_bytes(out);
    return true;
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
    fprintf(f, "  gpu: %zu pool allocations, %zu host waits; peak device memory %.1f MiB\n", io.allocs, io.syncs,
            (double)rf_cuda_bytes_peak(ctx) / (1024.0 * 1024.0));
    size_t nmerge = 0, nhash = 0;
    rf_cuda_join_counts(ctx, &nmerge, &nhash);
    fprintf(f, "  gpu: joins with keys: %zu merge (binary search), %zu hash\n", nmerge, nhash);
    fprintf(f, "  gpu: NVRTC %s: %zu compiled (%.3f s), %zu disk-cache hits, %zu memory hits, %zu failures, load %.3f s\n",
            getenv("RF_CUDA_CODEGEN") && strcmp(getenv("RF_CUDA_CODEGEN"), "0") ? "on" : "off", cg.compiled,
            cg.compile_seconds, cg.cache_hits, cg.mem_hits, cg.failures, cg.load_seconds);
}

static bool gpu_column_sign_uniform(rf_backend *be, const rf_dvar *v, int col)
{
    return rf_drel_column_sign_uniform(ctx_of(be), &v->rel, col);
}

static void gpu_destroy(rf_backend *be)
{
    if (!be)
        return;
    gpu_impl *g = be->impl;
    if (g) {
        rf_cuda_ctx_free(g->ctx);
        free(g);
    }
    free(be);
}

rf_backend *rf_backend_gpu_new(rf_status *st)
{
    if (rf_cuda_device_count() <= 0) {
        rf_fail(st, RF_EXIT_RUNTIME_ERROR, "no CUDA device found (the GPU backend needs an NVIDIA GPU and driver)");
        return NULL;
    }
    rf_cuda_ctx *ctx = rf_cuda_ctx_new(0, st);
    if (!ctx)
        return NULL;
    /* RF_CUDA_CODEGEN=1 runs MAP/JOIN compute stages as NVRTC-generated
     * kernels instead of the interpreter. */
    const char *cg = getenv("RF_CUDA_CODEGEN");
    if (cg && *cg && strcmp(cg, "0") != 0)
        rf_cuda_set_codegen(ctx, true);
    rf_backend *be = rf_calloc(1, sizeof *be);
    gpu_impl *g = rf_calloc(1, sizeof *g);
    g->ctx = ctx;
    be->name = "gpu";
    snprintf(be->device, sizeof be->device, "%s", rf_cuda_device_name(ctx));
    be->var_new = gpu_var_new;
    be->var_free = gpu_var_free;
    be->var_rows = gpu_var_rows;
    be->upload = gpu_upload;
    be->download = gpu_download;
    be->run = gpu_run;
    be->bytes_in_use = gpu_bytes_in_use;
    be->bytes_peak = gpu_bytes_peak;
    be->destroy = gpu_destroy;
    be->print_stats = gpu_print_stats;
    be->column_sign_uniform = gpu_column_sign_uniform;
    be->impl = g;
    return be;
}
