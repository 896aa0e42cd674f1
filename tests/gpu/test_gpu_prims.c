/* GPU operator library and backend against host references.
 * Every primitive runs on fresh random inputs (several sizes, value widths
 * that exercise both the packed and the multi-pass sort) and is compared
 * row for row with a plain host implementation; compute code is checked
 * against rf_expr_eval (the scalar semantics of common/rf_expr.c) on random
 * typed expressions. Without a CUDA device it prints "skipped" and exits 0.
 * Usage: test_gpu_prims [seed] [--bench N] */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../runtime/backend.h"
#include "../../common/rf_agg_ops.h"
#include "../../common/rf_scalar_ops.h"
#include "cuda_internal.h" /* rf_codegen_source, rf_codegen_compile_only, RF_DOP_LOOKUP */
#include "codegen_plan.h"
#include "joinsize.h" /* RF_JS_SAMPLE_ROWS */
#include "../../primitives/rf_prims.h" /* host references */
#include "rf_cuda_prims.h"
#include "../../runtime/dist_backend.h" /* rf_dist_row_rank: the reference of rank splits */
#include "../../primitives/rf_prims.h"


/* One plain kernel through the backend boundary (arrays of outputs and
 * inputs since fused kernels). */
static bool run_plain(rf_backend *be, const rf_hprogram *p, const rf_kernel *k, rf_dvar *out, rf_dvar *in0,
                      rf_dvar *in1, rf_kernel_stats *ks, rf_status *st)
{
    rf_dvar *outs[1] = {out}, *ins[2] = {in0, in1};
    return be->run(be, p, k, outs, ins, ks, st) == RF_RUN_DONE;
}

static int g_fail = 0, g_checks = 0;
static uint64_t g_rng = 88172645463325252ull;

static uint64_t rnd(void)
{
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return g_rng;
}

#define CHECK(cond, ...)                                                                 \
    do {                                                                                 \
        g_checks++;                                                                      \
        if (!(cond)) {                                                                   \
            g_fail++;                                                                    \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                         \
            fprintf(stderr, __VA_ARGS__);                                                \
            fputc('\n', stderr);                                                         \
        }                                                                                \
    } while (0)

/* ---- Host reference helpers (row-major arrays) ---- */
static int g_cmp_arity;
static int cmp_row(const void *x, const void *y)
{
    const rf_word *a = x, *b = y;
    for (int i = 0; i < g_cmp_arity; i++)
        if (a[i] != b[i])
            return a[i] < b[i] ? -1 : 1;
    return 0;
}

/* Sorts rows and removes duplicates; returns the new count. */
static size_t ref_sort_unique(rf_word *rows, size_t n, int ar)
{
    if (ar == 0)
        return n ? 1 : 0;
    g_cmp_arity = ar;
    qsort(rows, n, (size_t)ar * 8, cmp_row);
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (m == 0 || cmp_row(rows + (m - 1) * ar, rows + i * ar) != 0)
            memmove(rows + (m++) * ar, rows + i * ar, (size_t)ar * 8);
    return m;
}

static rf_word *table_rows(const rf_table *t)
{
    rf_word *r = rf_malloc(rf_mul_size(t->nrows * (size_t)(t->arity ? t->arity : 1), 8));
    for (size_t i = 0; i < t->nrows; i++)
        for (int c = 0; c < t->arity; c++)
            r[i * t->arity + c] = t->cols[c][i];
    return r;
}

/* Random relation: n rows, values drawn below 2^bits (64 = full words,
 * negative ints included); sorted+unique when asked. */
static void random_table(rf_table *t, int ar, size_t n, int bits, bool sorted)
{
    rf_word *rows = rf_malloc(rf_mul_size(n ? n : 1, (size_t)(ar ? ar : 1) * 8));
    for (size_t i = 0; i < n * (size_t)ar; i++)
        rows[i] = bits >= 64 ? rnd() : rnd() & ((1ull << bits) - 1);
    if (sorted)
        n = ref_sort_unique(rows, n, ar);
    rf_table_init(t, ar);
    rf_table_from_rows(t, ar, rows, n);
    if (ar == 0)
        t->nrows = n;
    free(rows);
}

static bool same_rows(const rf_word *a, const rf_word *b, size_t n, int ar)
{
    return n == 0 || ar == 0 || memcmp(a, b, n * (size_t)ar * 8) == 0;
}

/* Downloads d and compares with the expected rows (sorting both first when
 * the order is unspecified). */
static void expect_rel(rf_cuda_ctx *c, const rf_drel *d, rf_word *exp, size_t nexp, int ar,
                       bool any_order, const char *what)
{
    rf_status st;
    rf_status_init(&st);
    rf_table t;
    rf_table_init(&t, ar);
    bool ok = rf_drel_download(c, d, &t, &st);
    CHECK(ok, "%s: download: %s", what, st.message);
    if (!ok)
        return;
    rf_word *got = table_rows(&t);
    size_t ngot = t.nrows;
    if (any_order && ar > 0) {
        g_cmp_arity = ar;
        qsort(got, ngot, (size_t)ar * 8, cmp_row);
        qsort(exp, nexp, (size_t)ar * 8, cmp_row);
    }
    CHECK(d->arity == ar, "%s: arity %d, expected %d", what, d->arity, ar);
    CHECK(ngot == nexp, "%s: %zu rows, expected %zu", what, ngot, nexp);
    if (ngot == nexp) {
        bool same = same_rows(got, exp, nexp, ar);
        CHECK(same, "%s: rows differ", what);
        if (!same)
            for (size_t i = 0; i < nexp; i++)
                if (memcmp(got + i * ar, exp + i * ar, (size_t)ar * 8)) {
                    fprintf(stderr, "  first difference at row %zu: got %" PRIx64 " want %" PRIx64 "\n", i,
                            got[i * ar], exp[i * ar]);
                    break;
                }
    }
    free(got);
    rf_table_free(&t);
}

static void upload(rf_cuda_ctx *c, rf_drel *d, const rf_table *t)
{
    rf_status st;
    rf_status_init(&st);
    rf_drel_init(d, t->arity);
    if (!rf_drel_upload(c, d, t, "test input", &st)) {
        fprintf(stderr, "upload failed: %s\n", st.message);
        exit(1);
    }
}

/* ---- Expressions: trees for the reference, postfix code for the GPU ---- */
static void emit_code(const rf_expr *e, rf_instr *ins, int *pos)
{
    if (!e)
        return;
    emit_code(e->a, ins, pos);
    emit_code(e->b, ins, pos);
    emit_code(e->c, ins, pos);
    rf_instr *i = &ins[(*pos)++];
    memset(i, 0, sizeof *i);
    i->op = (uint8_t)e->op;
    i->type = (uint8_t)e->type;
    i->arg_type = (uint8_t)(e->a ? e->a->type : e->type);
    i->index = e->op == RF_EX_COL ? e->index : 0;
    i->value = e->op == RF_EX_CONST ? e->value : 0;
}

static int count_nodes(const rf_expr *e)
{
    return e ? 1 + count_nodes(e->a) + count_nodes(e->b) + count_nodes(e->c) : 0;
}

static rf_code to_code(const rf_expr *e)
{
    rf_code c = {0, NULL};
    if (!e)
        return c;
    c.n = count_nodes(e);
    c.ins = rf_calloc((size_t)c.n, sizeof *c.ins);
    int pos = 0;
    emit_code(e, c.ins, &pos);
    return c;
}

/* Column types of the expression tests' input. */
static rf_type g_coltypes[RF_CUDA_MAX_COLS];
static int g_ncols;

static rf_expr *col_of_type(rf_type t)
{
    int idx[RF_CUDA_MAX_COLS], n = 0;
    for (int i = 0; i < g_ncols; i++)
        if (g_coltypes[i] == t)
            idx[n++] = i;
    if (n == 0)
        return NULL;
    return rf_expr_leaf(RF_EX_COL, t, idx[rnd() % n]);
}

static rf_word rnd_double_word(void)
{
    double d = (double)(int64_t)(rnd() % 2001 - 1000) / (double)(1 + rnd() % 7);
    return rf_word_from_double(d);
}

static rf_expr *gen(rf_type t, int depth)
{
    if (depth <= 0 || rnd() % 4 == 0) {
        rf_expr *col = (rnd() % 3) ? col_of_type(t) : NULL;
        if (col)
            return col;
        switch (t) {
        case RF_TYPE_INT32: return rf_expr_const(t, rf_word_from_int((int32_t)(rnd() % 41) - 20));
        case RF_TYPE_INT64: return rf_expr_const(t, rnd() % 8 == 0 ? rnd() : rf_word_from_int((int64_t)(rnd() % 41) - 20));
        case RF_TYPE_FLOAT64: return rf_expr_const(t, rnd_double_word());
        case RF_TYPE_BOOL: return rf_expr_const(t, rnd() % 2);
        default: {
            rf_expr *s = col_of_type(RF_TYPE_STRING);
            return s ? s : rf_expr_const(t, 0);
        }
        }
    }
    static const rf_exop arith[] = {RF_EX_ADD, RF_EX_SUB, RF_EX_MUL, RF_EX_DIV, RF_EX_MOD};
    static const rf_exop cmps[] = {RF_EX_EQ, RF_EX_NE, RF_EX_LT, RF_EX_LE, RF_EX_GT, RF_EX_GE};
    switch (t) {
    case RF_TYPE_INT32:
    case RF_TYPE_INT64:
    case RF_TYPE_FLOAT64: {
        unsigned k = rnd() % 10;
        if (k == 0)
            return rf_expr_unary(RF_EX_NEG, t, gen(t, depth - 1));
        if (k == 1) {
            rf_type from = t == RF_TYPE_FLOAT64 ? (rnd() % 2 ? RF_TYPE_INT32 : RF_TYPE_INT64)
                                                : (rnd() % 2 ? RF_TYPE_FLOAT64 : (t == RF_TYPE_INT32 ? RF_TYPE_INT64 : RF_TYPE_INT32));
            return rf_expr_unary(RF_EX_CAST, t, gen(from, depth - 1));
        }
        return rf_expr_binary(arith[rnd() % 5], t, gen(t, depth - 1), gen(t, depth - 1));
    }
    case RF_TYPE_BOOL: {
        unsigned k = rnd() % 8;
        if (k == 0)
            return rf_expr_unary(RF_EX_NOT, t, gen(t, depth - 1));
        if (k <= 2)
            return rf_expr_binary(k == 1 ? RF_EX_AND : RF_EX_OR, t, gen(t, depth - 1), gen(t, depth - 1));
        static const rf_type ct[] = {RF_TYPE_INT32, RF_TYPE_INT64, RF_TYPE_FLOAT64, RF_TYPE_STRING, RF_TYPE_BOOL};
        rf_type a = ct[rnd() % 5];
        return rf_expr_binary(cmps[rnd() % 6], t, gen(a, depth - 1), gen(a, depth - 1));
    }
    default:
        return gen(t, 0);
    }
}

/* Input for expression tests: int64 small, int64 any, float64, int32,
 * string, bool. */
static void expr_input(rf_table *t, size_t n, const rf_word *strs, int nstrs)
{
    static const rf_type types[] = {RF_TYPE_INT64, RF_TYPE_INT64, RF_TYPE_FLOAT64, RF_TYPE_INT32, RF_TYPE_STRING, RF_TYPE_BOOL};
    g_ncols = 6;
    memcpy(g_coltypes, types, sizeof types);
    rf_table_init(t, g_ncols);
    rf_table_resize(t, n);
    for (size_t i = 0; i < n; i++) {
        t->cols[0][i] = rf_word_from_int((int64_t)(rnd() % 201) - 100);
        t->cols[1][i] = rnd() % 4 == 0 ? rnd() : rf_word_from_int((int64_t)(rnd() % 2000001) - 1000000);
        t->cols[2][i] = rnd_double_word();
        t->cols[3][i] = rf_word_from_int((int32_t)rnd());
        t->cols[4][i] = strs[rnd() % (uint64_t)nstrs];
        t->cols[5][i] = rnd() % 2;
    }
}

/* Host reference of MAP; returns false (and the message) on a fault. */
static bool ref_map(const rf_table *in, const rf_expr *filter, int nproj, rf_expr *const *proj, rf_word **rows_out,
                    size_t *n_out, rf_status *st)
{
    rf_word *rows = rf_malloc(rf_mul_size(in->nrows ? in->nrows : 1, (size_t)(nproj ? nproj : 1) * 8));
    rf_word row[RF_CUDA_MAX_COLS];
    size_t m = 0;
    for (size_t i = 0; i < in->nrows; i++) {
        for (int c = 0; c < in->arity; c++)
            row[c] = in->cols[c][i];
        rf_word keep = 1;
        if (filter && !rf_expr_eval(filter, row, &keep, st))
            goto fail;
        if (!keep)
            continue;
        for (int p = 0; p < nproj; p++)
            if (!rf_expr_eval(proj[p], row, &rows[m * nproj + p], st))
                goto fail;
        m++;
    }
    *rows_out = rows;
    *n_out = m;
    return true;
fail:
    free(rows);
    return false;
}

static void test_map_exprs(rf_cuda_ctx *c, const rf_word *strs, int nstrs, int iters)
{
    int agree_fail = 0, agree_ok = 0;
    for (int iter = 0; iter < iters; iter++) {
        if (getenv("RF_GPU_TEST_PROGRESS"))
            fprintf(stderr, "map case %d\n", iter);
        size_t n = iter % 10 == 0 ? 0 : 1 + rnd() % 3000;
        rf_table in;
        expr_input(&in, n, strs, nstrs);
        rf_expr *filter = rnd() % 4 ? gen(RF_TYPE_BOOL, 4) : NULL;
        int nproj = 1 + (int)(rnd() % 3);
        rf_expr *proj[3];
        rf_type pt[3];
        static const rf_type outt[] = {RF_TYPE_INT32, RF_TYPE_INT64, RF_TYPE_FLOAT64, RF_TYPE_BOOL, RF_TYPE_STRING};
        for (int p = 0; p < nproj; p++) {
            pt[p] = outt[rnd() % 5];
            proj[p] = gen(pt[p], 3);
        }
        rf_code fc = to_code(filter), pc[3];
        for (int p = 0; p < nproj; p++)
            pc[p] = to_code(proj[p]);
        rf_status st_ref, st_gpu;
        rf_status_init(&st_ref);
        rf_status_init(&st_gpu);
        rf_word *exp = NULL;
        size_t nexp = 0;
        bool ref_ok = ref_map(&in, filter, nproj, proj, &exp, &nexp, &st_ref);
        rf_drel din, dout;
        upload(c, &din, &in);
        rf_drel_init(&dout, 0);
        bool gpu_ok = rf_cuda_map(c, &din, &fc, nproj, pc, &dout, "map out", &st_gpu);
        CHECK(ref_ok == gpu_ok, "map expr %d: reference %s, GPU %s (%s | %s)", iter, ref_ok ? "ok" : "failed",
              gpu_ok ? "ok" : "failed", st_ref.message, st_gpu.message);
        /* Both failing is agreement: which failing row reports first may
         * differ (rows run in parallel), so messages are not compared. */
        if (!ref_ok && !gpu_ok)
            agree_fail++;
        if (ref_ok && gpu_ok) {
            agree_ok++;
            expect_rel(c, &dout, exp, nexp, nproj, false, "map expr");
        }
        if (ref_ok != gpu_ok) {
            fprintf(stderr, "  filter: ");
            rf_expr_print(filter, stderr, NULL);
            for (int p = 0; p < nproj; p++) {
                fprintf(stderr, "\n  proj %d: ", p);
                rf_expr_print(proj[p], stderr, NULL);
            }
            fputc('\n', stderr);
        }
        free(exp);
        rf_drel_free(c, &din);
        rf_drel_free(c, &dout);
        free(fc.ins);
        rf_expr_free(filter);
        for (int p = 0; p < nproj; p++) {
            rf_expr_free(proj[p]);
            free(pc[p].ins);
        }
        rf_table_free(&in);
    }
    printf("map: %d random expression programs (%d agreed results, %d agreed faults)\n", iters, agree_ok, agree_fail);
}

/* ---- Set primitives ---- */
static const int kBits[] = {4, 12, 20, 40, 64};

static void test_sort(rf_cuda_ctx *c)
{
    /* 2-8192 rows: the one-block sort (rf_k_small_sort_unique) up to its
     * limits (8192 rows, 16384 words: 4096 rows of 4 columns) */
    static const size_t sizes[] = {0, 1, 2, 7, 33, 513, 1000, 1024, 1025, 2049, 4096, 4097, 8192, 8193, 65537, 300000};
    int runs = 0;
    for (int ar = 0; ar <= 4; ar++)
        for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++)
            for (size_t bi = 0; bi < sizeof kBits / sizeof *kBits; bi++) {
                rf_table t;
                random_table(&t, ar, sizes[si], kBits[bi], false);
                rf_word *exp = table_rows(&t);
                size_t nexp = ref_sort_unique(exp, t.nrows, ar);
                rf_drel d;
                upload(c, &d, &t);
                rf_status st;
                rf_status_init(&st);
                bool ok = rf_cuda_sort_unique(c, &d, &d, "sorted", &st);
                CHECK(ok, "sort arity %d n %zu bits %d: %s", ar, sizes[si], kBits[bi], st.message);
                if (ok)
                    expect_rel(c, &d, exp, nexp, ar, false, "sort");
                free(exp);
                rf_drel_free(c, &d);
                rf_table_free(&t);
                runs++;
            }
    printf("sort+unique: %d cases\n", runs);
}

/* Sorts of two columns that look at the rows' order first
 * (rf_cuda_sort_unique): rows in order are copied, rows ascending by
 * (second, first) column sorted by the first alone where both fit 32 bits,
 * anything else (a pair of rows out of place, a repeated row, 33 bits or
 * more) the general sort; each against the reference, and which path ran
 * (rf_cuda_sort_order_stats) counted exactly. */
static void test_sort_orders(rf_cuda_ctx *c)
{
    static const size_t sizes[] = {8193, 65537, 300000};
    static const int bitss[] = {14, 20, 32, 33, 64};
    int runs = 0;
    for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++)
        for (size_t bi = 0; bi < sizeof bitss / sizeof *bitss; bi++)
            for (int variant = 0; variant < 4; variant++) {
                /* 0 in order; 1 swapped (second-column order); 2 swapped,
                 * two rows exchanged; 3 swapped, a row repeated */
                rf_table t;
                random_table(&t, 2, sizes[si], bitss[bi], true);
                size_t n = t.nrows;
                if (n <= RF_SMALL_SORT_ROWS) {   /* (the one-block sort's: 4 bits make 256 rows at most) */
                    rf_table_free(&t);
                    continue;
                }
                if (variant > 0)
                    for (size_t i = 0; i < n; i++) {
                        rf_word x = t.cols[0][i];
                        t.cols[0][i] = t.cols[1][i];
                        t.cols[1][i] = x;
                    }
                if (variant == 2) {
                    rf_word x0 = t.cols[0][n / 2], x1 = t.cols[1][n / 2];
                    t.cols[0][n / 2] = t.cols[0][n / 2 + 1];
                    t.cols[1][n / 2] = t.cols[1][n / 2 + 1];
                    t.cols[0][n / 2 + 1] = x0;
                    t.cols[1][n / 2 + 1] = x1;
                } else if (variant == 3) {
                    t.cols[0][n / 3] = t.cols[0][n / 3 - 1];
                    t.cols[1][n / 3] = t.cols[1][n / 3 - 1];
                }
                rf_word *exp = table_rows(&t);
                size_t nexp = ref_sort_unique(exp, n, 2);
                rf_drel d;
                upload(c, &d, &t);
                size_t in0, by0, in1, by1, mu;
                rf_cuda_sort_order_stats(c, &in0, &by0, &mu);
                rf_status st;
                rf_status_init(&st);
                bool ok = rf_cuda_sort_unique(c, &d, &d, "sorted", &st);
                CHECK(ok, "sort orders n %zu bits %d variant %d: %s", n, bitss[bi], variant, st.message);
                if (ok)
                    expect_rel(c, &d, exp, nexp, 2, false, "sort orders");
                rf_cuda_sort_order_stats(c, &in1, &by1, &mu);
                size_t want_in = variant == 0, want_by = variant == 1 && bitss[bi] <= 32;
                CHECK(in1 - in0 == want_in && by1 - by0 == want_by,
                      "sort orders n %zu bits %d variant %d: %zu copied, %zu by the first column (want %zu, %zu)", n,
                      bitss[bi], variant, in1 - in0, by1 - by0, want_in, want_by);
                free(exp);
                rf_drel_free(c, &d);
                rf_table_free(&t);
                runs++;
            }
    printf("sort orders: %d cases\n", runs);
}

/* The union of two tables' rows (ar columns each), sorted and
 * deduplicated, in *out (the caller frees it): its row count. */
static size_t union_reference(const rf_word *ra, size_t na, const rf_word *rb, size_t nb, int ar, rf_word **out)
{
    size_t n = na + nb;
    rf_word *u = rf_malloc(rf_mul_size(n ? n : 1, (size_t)(ar ? ar : 1) * 8));
    memcpy(u, ra, na * (size_t)ar * 8);
    memcpy(u + na * ar, rb, nb * (size_t)ar * 8);
    *out = u;
    return ref_sort_unique(u, n, ar);
}

/* The two sides of a set-operation case, host and device, and its result. */
static void free_sides(rf_cuda_ctx *c, rf_drel *da, rf_drel *db, rf_drel *out, rf_table *ta, rf_table *tb)
{
    rf_drel_free(c, da);
    rf_drel_free(c, db);
    rf_drel_free(c, out);
    rf_table_free(ta);
    rf_table_free(tb);
}

/* The string order's upload waits for the stream's queued kernels: memory
 * freed on c->stream while a kernel that reads it is still queued there
 * may come back from the pool for the rank table at once, so a copy not
 * ordered on c->stream (the legacy stream's cudaMemcpy did so) writes it
 * under that kernel. Here a spinning kernel holds the stream, a copy of X
 * is queued behind it, X freed, and the ranks set (the same size, so the
 * pool hands X back where it reuses): the copy must still read X's
 * values, and the table must hold the ranks. (Seen as empty strings in a
 * differential program's outputs with 14 processes on one H200.) */
static void test_string_ranks_ordered(rf_cuda_ctx *c)
{
    const size_t n = 1 << 16;
    rf_status st;
    rf_status_init(&st);
    uint32_t *vals = rf_malloc(n * 4), *ranks = rf_malloc(n * 4), *got = rf_malloc(n * 4);
    for (size_t i = 0; i < n; i++) {
        vals[i] = (uint32_t)(0x5a5a0000u + i);
        ranks[i] = (uint32_t)(n - 1 - i);
    }
    int reused = 0, cases = 0;
    for (int round = 0; round < 4; round++) {
        CHECK(rf_cuda_set_string_ranks(c, NULL, 0, &st), "ranks cleared: %s", st.message);
        uint32_t *x = rf_cuda_alloc(c, n * 4, "test", &st), *y = rf_cuda_alloc(c, n * 4, "test", &st);
        CHECK(x && y, "allocations: %s", st.message);
        if (!x || !y)
            break;
        CHECK(cudaMemcpyAsync(x, vals, n * 4, cudaMemcpyHostToDevice, c->stream) == cudaSuccess &&
                  rf_cuda_sync(c, &st),
              "upload");
        CHECK(rf_k_test_delay(c->stream, 20000000LL) == cudaSuccess, "delay kernel");   /* ~10 ms */
        CHECK(cudaMemcpyAsync(y, x, n * 4, cudaMemcpyDeviceToDevice, c->stream) == cudaSuccess, "copy");
        rf_cuda_free(c, x, n * 4);
        CHECK(rf_cuda_set_string_ranks(c, ranks, n, &st), "ranks set: %s", st.message);
        reused += (void *)c->rank == (void *)x;
        CHECK(rf_cuda_sync(c, &st), "sync: %s", st.message);
        CHECK(cudaMemcpy(got, y, n * 4, cudaMemcpyDeviceToHost) == cudaSuccess, "download");
        size_t bad = 0;
        for (size_t i = 0; i < n; i++)
            bad += got[i] != vals[i];
        CHECK(bad == 0, "round %d: the queued copy read %zu values of the rank table (x %s reused)", round, bad,
              (void *)c->rank == (void *)x ? "was" : "was not");
        CHECK(cudaMemcpy(got, c->rank, n * 4, cudaMemcpyDeviceToHost) == cudaSuccess, "download ranks");
        bad = 0;
        for (size_t i = 0; i < n; i++)
            bad += got[i] != ranks[i];
        CHECK(bad == 0, "round %d: %zu ranks wrong", round, bad);
        rf_cuda_free(c, y, n * 4);
        cases++;
    }
    /* The real table back: the primitives tested next read c->rank as
     * they find it (the backend refreshes it before a kernel comparing
     * strings; a test calling them directly does not). */
    CHECK(rf_cuda_set_string_ranks(c, NULL, 0, &st) && rf_cuda_update_string_ranks(c, &st),
          "ranks restored: %s", st.message);
    CHECK(rf_cuda_string_ranks(c) == rf_str_count(), "ranks restored: %zu of %zu strings", rf_cuda_string_ranks(c),
          rf_str_count());
    free(vals);
    free(ranks);
    free(got);
    printf("string order uploads behind queued kernels: %d rounds, the freed memory reused in %d\n", cases, reused);
}

/* Unions of one and two columns by merge path (rf_cuda_union's
 * union_by_merge): both sides drawn from one sorted
 * set, each row in a, in b or in both (a share of rows in both from none
 * to all), at sizes about the tiles' 2,048 merged rows and far beyond,
 * values of few bits (many equal first columns) and of 64; each against
 * the reference, and the merge path counted as taken. */
static void test_union_merge(rf_cuda_ctx *c)
{
    static const size_t sizes[] = {1, 3, 2047, 2048, 2049, 4097, 100000, 300000};
    static const int shares[] = {0, 10, 50, 100};   /* percent of rows in both */
    bool saved = c->union_merge;
    int runs = 0;
    c->union_merge = true;
    for (int ar = 1; ar <= 2; ar++)
        for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++)
            for (int bi = 0; bi < 2; bi++)
                for (size_t hi = 0; hi < sizeof shares / sizeof *shares; hi++) {
                    rf_table all;
                    random_table(&all, ar, sizes[si] * 2, bi ? 64 : 12, true);
                    size_t m = all.nrows, na = 0, nb = 0;
                    rf_word *ra = rf_malloc(rf_mul_size(m ? m : 1, (size_t)ar * 8)),
                            *rb = rf_malloc(rf_mul_size(m ? m : 1, (size_t)ar * 8));
                    for (size_t i = 0; i < m; i++) {
                        unsigned r = (unsigned)(rnd() % 100);
                        bool in_a, in_b;
                        if (r < (unsigned)shares[hi])
                            in_a = in_b = true;
                        else
                            in_a = !(in_b = rnd() & 1);
                        for (int k = 0; k < ar; k++) {
                            if (in_a)
                                ra[na * ar + k] = all.cols[k][i];
                            if (in_b)
                                rb[nb * ar + k] = all.cols[k][i];
                        }
                        na += in_a;
                        nb += in_b;
                    }
                    rf_table ta, tb;
                    rf_table_init(&ta, ar);
                    rf_table_init(&tb, ar);
                    rf_table_from_rows(&ta, ar, ra, na);
                    rf_table_from_rows(&tb, ar, rb, nb);
                    rf_word *u;
                    size_t nu = union_reference(ra, na, rb, nb, ar, &u);
                    rf_drel da, db, out;
                    upload(c, &da, &ta);
                    upload(c, &db, &tb);
                    rf_drel_init(&out, 0);
                    size_t x, y, mu0, mu1;
                    rf_cuda_sort_order_stats(c, &x, &y, &mu0);
                    rf_status st;
                    rf_status_init(&st);
                    bool ok = rf_cuda_union(c, &da, &db, &out, "union", &st);
                    CHECK(ok, "union merge ar %d n %zu/%zu: %s", ar, na, nb, st.message);
                    if (ok)
                        expect_rel(c, &out, u, nu, ar, false, "union by merge path");
                    rf_cuda_sort_order_stats(c, &x, &y, &mu1);
                    CHECK(mu1 - mu0 == (na > 0 && nb > 0 ? 1u : 0u), "union merge ar %d n %zu/%zu: %zu merges", ar, na,
                          nb, mu1 - mu0);
                    free(u);
                    free(ra);
                    free(rb);
                    free_sides(c, &da, &db, &out, &ta, &tb);
                    rf_table_free(&all);
                    runs++;
                }
    c->union_merge = saved;
    printf("union by merge path: %d cases\n", runs);
}

static void test_setops(rf_cuda_ctx *c)
{
    /* unions by their searches (of one or two columns they merge by merge
     * path, which test_union_merge checks) */
    int runs = 0;
    bool saved_merge = c->union_merge;
    c->union_merge = false;
    for (int iter = 0; iter < 240; iter++) {
        /* the second half: unions search in windows however small
         * (rf_cuda_union: RF_TEST_UNION_WINDOWS) */
        if (iter == 120)
            setenv("RF_TEST_UNION_WINDOWS", "always", 1);
        int ar = (int)(rnd() % 4);
        int bits = kBits[rnd() % 3];
        size_t na = iter % 7 == 0 ? 0 : rnd() % 5000, nb = iter % 11 == 0 ? 0 : rnd() % 5000;
        rf_table ta, tb;
        random_table(&ta, ar, na, bits, true);
        random_table(&tb, ar, nb, bits, true);
        rf_drel da, db, out;
        upload(c, &da, &ta);
        upload(c, &db, &tb);
        rf_drel_init(&out, 0);
        rf_word *ra = table_rows(&ta), *rb = table_rows(&tb), *u;
        size_t nu = union_reference(ra, ta.nrows, rb, tb.nrows, ar, &u), nd = 0, nj = 0;
        if (ar == 0)
            nu = (ta.nrows || tb.nrows) ? 1 : 0;
        rf_status st;
        rf_status_init(&st);
        bool ok = rf_cuda_union(c, &da, &db, &out, "union", &st);
        CHECK(ok, "union: %s", st.message);
        if (ok)
            expect_rel(c, &out, u, nu, ar, false, "union");
        /* difference and antijoin on a key prefix */
        int nk = ar ? (int)(rnd() % (unsigned)(ar + 1)) : 0;
        rf_word *d = rf_malloc(rf_mul_size(ta.nrows ? ta.nrows : 1, (size_t)(ar ? ar : 1) * 8));
        rf_word *aj = rf_malloc(rf_mul_size(ta.nrows ? ta.nrows : 1, (size_t)(ar ? ar : 1) * 8));
        for (size_t i = 0; i < ta.nrows; i++) {
            bool in_b = false, key_in_b = false;
            for (size_t j = 0; j < tb.nrows; j++) {
                if (memcmp(ra + i * ar, rb + j * ar, (size_t)ar * 8) == 0)
                    in_b = true;
                if (memcmp(ra + i * ar, rb + j * ar, (size_t)nk * 8) == 0)
                    key_in_b = true;
            }
            if (!in_b)
                memcpy(d + (nd++) * ar, ra + i * ar, (size_t)ar * 8);
            if (!key_in_b)
                memcpy(aj + (nj++) * ar, ra + i * ar, (size_t)ar * 8);
        }
        ok = rf_cuda_difference(c, &da, &db, &out, "diff", &st);
        CHECK(ok, "diff: %s", st.message);
        if (ok)
            expect_rel(c, &out, d, nd, ar, false, "difference");
        ok = rf_cuda_antijoin(c, &da, &db, nk, &out, "antijoin", &st);
        CHECK(ok, "antijoin: %s", st.message);
        if (ok)
            expect_rel(c, &out, aj, nj, ar, false, "antijoin");
        free(u);
        free(d);
        free(aj);
        free(ra);
        free(rb);
        free_sides(c, &da, &db, &out, &ta, &tb);
        runs++;
    }
    unsetenv("RF_TEST_UNION_WINDOWS");
    /* Unions of many rows, searched whole and in windows
     * (rf_k_union_bounds; by default from 4M rows): sides of unequal sizes,
     * key widths and overlaps, each side first. */
    static const struct { size_t na, nb; int bits, ar; } big[] = {
        {1000000, 700000, 20, 2}, {300000, 2000000, 22, 1}, {1500000, 1500000, 21, 2}, {800000, 5, 40, 3},
        {70000, 1, 64, 1}};
    for (size_t t = 0; t < sizeof big / sizeof *big; t++) {
        rf_table ta, tb;
        random_table(&ta, big[t].ar, big[t].na, big[t].bits, true);
        random_table(&tb, big[t].ar, big[t].nb, big[t].bits, true);
        int ar = big[t].ar;
        rf_drel da, db, out;
        upload(c, &da, &ta);
        upload(c, &db, &tb);
        rf_drel_init(&out, 0);
        rf_word *ra = table_rows(&ta), *rb = table_rows(&tb), *u;
        size_t nu = union_reference(ra, ta.nrows, rb, tb.nrows, ar, &u);
        rf_status st;
        rf_status_init(&st);
        for (int mode = 0; mode < 4; mode++) {
            int swap = mode & 1;
            if (mode == 2)
                setenv("RF_TEST_UNION_WINDOWS", "always", 1);
            bool ok = rf_cuda_union(c, swap ? &db : &da, swap ? &da : &db, &out, "union", &st);
            CHECK(ok, "union of %zu and %zu rows (%s): %s", big[t].na, big[t].nb, mode >= 2 ? "windows" : "default",
                  st.message);
            if (ok)
                expect_rel(c, &out, u, nu, ar, false, "union of many rows");
            runs++;
        }
        unsetenv("RF_TEST_UNION_WINDOWS");
        free(u);
        free(ra);
        free(rb);
        free_sides(c, &da, &db, &out, &ta, &tb);
    }
    c->union_merge = saved_merge;
    printf("union/difference/antijoin: %d cases\n", runs);
}

/* Rows of a that are not in b (both sorted, duplicate-free): the reference
 * for differences. */
static size_t ref_minus(const rf_word *a, size_t na, const rf_word *b, size_t nb, int ar, rf_word *out)
{
    size_t n = 0, j = 0;
    g_cmp_arity = ar;
    for (size_t i = 0; i < na; i++) {
        while (j < nb && cmp_row(b + j * ar, a + i * ar) < 0)
            j++;
        if (j < nb && cmp_row(b + j * ar, a + i * ar) == 0)
            continue;
        memcpy(out + (n++) * ar, a + i * ar, (size_t)ar * 8);
    }
    return n;
}

/* Dense sets against the host: frames (anchored at 0 or at the minimum),
 * build + expand, difference, union, rows outside the frame, frames too
 * wide. */
static void test_dense_sets(rf_cuda_ctx *c)
{
    int runs = 0, outside = 0, too_wide = 0, runs_sets = 0;
    for (int iter = 0; iter < 200; iter++) {
        int ar = 1 + (int)(rnd() % 3);
        int bits = 1 + (int)(rnd() % (ar == 1 ? 20 : ar == 2 ? 12 : 8));
        uint64_t base = iter % 3 == 0 ? 0 : iter % 3 == 1 ? rnd() % 100000 : (rnd() | (1ull << 63));
        size_t nf = rnd() % 6000, nn = rnd() % 3000;
        rf_table tf, tn;
        random_table(&tf, ar, nf, bits, true);
        random_table(&tn, ar, nn, bits, true);
        for (int k = 0; k < ar; k++) {
            for (size_t i = 0; i < tf.nrows; i++)
                tf.cols[k][i] += base;
            for (size_t i = 0; i < tn.nrows; i++)
                tn.cols[k][i] += base;
        }
        bool plant_outside = iter % 5 == 4 && tn.nrows > 0; /* a new row beyond the frame of full alone */
        if (plant_outside) /* the last row, far beyond every frame: stays sorted and unique */
            tn.cols[0][tn.nrows - 1] = base + (1ull << 40);
        rf_drel df, dn, out;
        upload(c, &df, &tf);
        upload(c, &dn, &tn);
        rf_drel_init(&out, ar);
        rf_status st;
        rf_status_init(&st);
        rf_dset s, u;
        rf_dset_init(&s);
        rf_dset_init(&u);
        bool fits = false;
        bool ok = rf_dset_plan(c, &df, plant_outside ? NULL : &dn, RF_DSET_MAX_BITS, &s, &fits, &st);
        CHECK(ok, "dense plan: %s", st.message);
        if (ok && fits && tf.nrows > 0) {
            ok = rf_dset_build(c, &df, &s, "dense full", &st);
            CHECK(ok && s.nrows == tf.nrows, "dense build: %s (%zu rows, expected %zu)", st.message, s.nrows,
                  tf.nrows);
            rf_word *rf_ = table_rows(&tf), *rn = table_rows(&tn);
            if (ok && rf_dset_expand(c, &s, &out, "dense expand", &st))
                expect_rel(c, &out, rf_, tf.nrows, ar, false, "dense expand");
            rf_word *d = rf_malloc(rf_mul_size(tn.nrows + 1, (size_t)ar * 8));
            size_t nd = ref_minus(rn, tn.nrows, rf_, tf.nrows, ar, d);
            ok = rf_dset_difference(c, &dn, &s, &out, "dense diff", &st);
            CHECK(ok, "dense difference: %s", st.message);
            if (ok)
                expect_rel(c, &out, d, nd, ar, false, "dense difference");
            bool ufits = false;
            ok = rf_dset_union(c, &s, &dn, &u, &ufits, "dense union", &st);
            CHECK(ok, "dense union: %s", st.message);
            /* Without the new rows in the plan, some usually fall outside;
             * with them, none may. */
            if (ok && !plant_outside)
                CHECK(ufits, "dense union: rows outside a frame planned for them");
            if (ok && ufits) {
                size_t n = tf.nrows + tn.nrows;
                rf_word *all = rf_malloc(rf_mul_size(n + 1, (size_t)ar * 8));
                memcpy(all, rf_, tf.nrows * (size_t)ar * 8);
                memcpy(all + tf.nrows * ar, rn, tn.nrows * (size_t)ar * 8);
                size_t nu = ref_sort_unique(all, n, ar);
                CHECK(u.nrows == nu, "dense union: %zu rows counted, expected %zu", u.nrows, nu);
                if (rf_dset_expand(c, &u, &out, "dense union expand", &st))
                    expect_rel(c, &out, all, nu, ar, false, "dense union");
                free(all);
            } else if (ok) {
                outside++;
                CHECK(u.words == NULL, "dense union that did not fit left a result");
            }
            /* The same rows as two runs (a relation held as runs): one
             * set of their union, in a frame that covers s's; where s was
             * planned for both, the same frame. */
            const rf_drel *rr[2] = {&df, &dn};
            rf_dset r2;
            bool rfits = false;
            ok = rf_dset_plan_runs(c, rr, 2, &s, RF_DSET_MAX_BITS, &r2, &rfits, &st);
            CHECK(ok, "dense plan of runs: %s", st.message);
            if (ok && rfits) {
                if (!plant_outside)
                    CHECK(rf_dset_same_frame(&r2, &s), "the runs' frame differs from the frame planned for both");
                ok = rf_dset_build_runs(c, rr, 2, &r2, "dense runs", &st);
                CHECK(ok, "dense build of runs: %s", st.message);
                size_t n = tf.nrows + tn.nrows;
                rf_word *all = rf_malloc(rf_mul_size(n + 1, (size_t)ar * 8));
                memcpy(all, rf_, tf.nrows * (size_t)ar * 8);
                memcpy(all + tf.nrows * ar, rn, tn.nrows * (size_t)ar * 8);
                size_t nu = ref_sort_unique(all, n, ar);
                CHECK(!ok || r2.nrows == nu, "dense runs: %zu rows counted, expected %zu", r2.nrows, nu);
                if (ok && rf_dset_expand(c, &r2, &out, "dense runs expand", &st))
                    expect_rel(c, &out, all, nu, ar, false, "dense runs");
                free(all);
                runs_sets++;
            }
            rf_dset_free(c, &r2);
            free(d);
            free(rf_);
            free(rn);
            runs++;
        } else if (ok && !fits && tf.nrows > 0) {
            too_wide++;
        }
        rf_dset_free(c, &s);
        rf_dset_free(c, &u);
        rf_drel_free(c, &df);
        rf_drel_free(c, &dn);
        rf_drel_free(c, &out);
        rf_table_free(&tf);
        rf_table_free(&tn);
    }
    /* A frame wider than the limit is refused, not built. */
    rf_table w;
    random_table(&w, 2, 100, 20, true);
    rf_drel dw;
    upload(c, &dw, &w);
    rf_status st;
    rf_status_init(&st);
    rf_dset s;
    bool fits = true;
    CHECK(rf_dset_plan(c, &dw, NULL, 16, &s, &fits, &st) && !fits, "a 40-bit frame fit in 16 bits");
    if (!fits)
        too_wide++;
    rf_drel_free(c, &dw);
    rf_table_free(&w);
    CHECK(runs > 100 && outside > 0 && too_wide > 0 && runs_sets > 100,
          "dense sets: %d cases, %d outside, %d too wide, %d of runs", runs, outside, too_wide, runs_sets);
    printf("dense sets: %d cases (%d unions outside the frame, %d frames too wide, %d sets of two runs)\n", runs,
           outside, too_wide, runs_sets);
}

/* rf_cuda_join_to_set against the reference rows of the same join, made
 * distinct and sorted; then again in the frame of a set holding every
 * other of those rows (the semi-naive DIFF's situation), whose difference
 * of two sets must give the rest. */
static void join_to_set_case(rf_cuda_ctx *c, int iter, const rf_drel *dl, const rf_drel *dr, int nk,
                             const rf_code *fc, int nproj, const rf_code *pc, const rf_word *exp, size_t m,
                             int *runs, int *hinted)
{
    int src[3];
    for (int p = 0; p < nproj; p++)
        src[p] = pc[p].ins[0].index;
    rf_status st;
    rf_status_init(&st);
    rf_dset s, full, s2;
    rf_dset_init(&s);
    rf_dset_init(&full);
    rf_dset_init(&s2);
    rf_drel out, half;
    rf_drel_init(&out, nproj);
    rf_drel_init(&half, nproj);
    bool fits = false;
    bool ok = rf_dset_plan_join(c, dl, dr, nproj, src, NULL, RF_DSET_MAX_BITS, &s, &fits, &st);
    CHECK(ok, "join-to-set %d: plan: %s", iter, st.message);
    if (!ok || !fits)
        return;
    size_t nu = m;
    rf_word *uniq = rf_malloc(rf_mul_size(m + 1, (size_t)nproj * 8));
    memcpy(uniq, exp, m * (size_t)nproj * 8);
    nu = ref_sort_unique(uniq, m, nproj);
    ok = rf_cuda_join_to_set(c, dl, dr, nk, fc, src, &s, "join set", &st);
    CHECK(ok, "join-to-set %d: %s", iter, st.message);
    if (ok) {
        CHECK(s.nrows == nu, "join-to-set %d: %zu rows counted, expected %zu", iter, s.nrows, nu);
        if (rf_dset_expand(c, &s, &out, "join set expand", &st))
            expect_rel(c, &out, uniq, nu, nproj, false, "join into a set");
        /* Expanded into reversed columns (plus column 0 again): the rows in
         * the set's order, projected. */
        int rev[4];
        for (int p = 0; p < nproj; p++)
            rev[p] = nproj - 1 - p;
        rev[nproj] = 0;
        rf_word *proj = rf_malloc(rf_mul_size(nu + 1, (size_t)(nproj + 1) * 8));
        for (size_t i = 0; i < nu; i++)
            for (int p = 0; p <= nproj; p++)
                proj[i * (nproj + 1) + p] = uniq[i * nproj + rev[p]];
        rf_drel pr;
        rf_drel_init(&pr, nproj + 1);
        ok = rf_dset_expand_proj(c, &s, nproj + 1, rev, &pr, "projected expand", &st);
        CHECK(ok, "join-to-set %d: projected expansion: %s", iter, st.message);
        if (ok)
            expect_rel(c, &pr, proj, nu, nproj + 1, false, "projected expansion of a set");
        rf_drel_free(c, &pr);
        free(proj);
        (*runs)++;
    }
    /* The full relation: every other distinct row, in a frame that holds
     * the join's (one bit wider in column 0 when there is room, so that it
     * differs from the frame the join would plan for itself). */
    rf_table th;
    rf_table_init(&th, nproj);
    for (size_t i = 0; i < nu; i += 2)
        rf_table_append_row(&th, uniq + i * nproj);
    full = s;
    full.words = NULL;
    full.nwords = 0;
    full.nrows = 0;
    if (full.total_bits < RF_DSET_MAX_BITS) {
        full.bits[0]++;
        full.total_bits++;
    }
    if (ok && nu > 0 && rf_drel_upload(c, &half, &th, "half", &st) && rf_dset_build(c, &half, &full, "full set", &st)) {
        ok = rf_dset_plan_join(c, dl, dr, nproj, src, &full, RF_DSET_MAX_BITS, &s2, &fits, &st) && fits;
        CHECK(ok && rf_dset_same_frame(&s2, &full), "join-to-set %d: the hint's frame was not adopted", iter);
        if (ok && rf_cuda_join_to_set(c, dl, dr, nk, fc, src, &s2, "join set 2", &st)) {
            size_t nrest = 0;
            rf_word *rest = rf_malloc(rf_mul_size(nu / 2 + 1, (size_t)nproj * 8));
            for (size_t i = 1; i < nu; i += 2)
                memcpy(rest + (nrest++) * nproj, uniq + i * nproj, (size_t)nproj * 8);
            ok = rf_dset_difference_sets(c, &s2, &full, &out, "set difference", &st);
            CHECK(ok, "join-to-set %d: difference of sets: %s", iter, st.message);
            if (ok)
                expect_rel(c, &out, rest, nrest, nproj, false, "difference of two sets");
            free(rest);
            (*hinted)++;
        } else {
            CHECK(false, "join-to-set %d (in a hinted frame): %s", iter, st.message);
        }
    }
    rf_table_free(&th);
    free(uniq);
    rf_dset_free(c, &s);
    rf_dset_free(c, &s2);
    rf_dset_free(c, &full);
    rf_drel_free(c, &out);
    rf_drel_free(c, &half);
}

/* rf_cuda_semijoin for both sides against nested loops: each side's rows
 * (sorted sets) with a key match passing the filter, in order (any_order
 * false: the order is part of the contract); a filter that faults on some
 * pair fails both. */
static void semijoin_case(rf_cuda_ctx *c, int iter, const rf_table *tl, const rf_table *tr, const rf_drel *dl,
                          const rf_drel *dr, int nk, const rf_expr *filter, const rf_code *fc, int *cases)
{
    uint8_t *keep[2] = {rf_calloc(tl->nrows + 1, 1), rf_calloc(tr->nrows + 1, 1)};
    rf_status st_ref;
    rf_status_init(&st_ref);
    bool ref_ok = true;
    rf_word row[8];
    for (size_t i = 0; i < tl->nrows && ref_ok; i++)
        for (size_t j = 0; j < tr->nrows && ref_ok; j++) {
            bool eq = true;
            for (int k = 0; k < nk; k++)
                eq = eq && tl->cols[k][i] == tr->cols[k][j];
            if (!eq)
                continue;
            for (int k = 0; k < tl->arity; k++)
                row[k] = tl->cols[k][i];
            for (int k = 0; k < tr->arity; k++)
                row[tl->arity + k] = tr->cols[k][j];
            rf_word pass = 1;
            ref_ok = !filter || rf_expr_eval(filter, row, &pass, &st_ref);
            if (ref_ok && pass)
                keep[0][i] = keep[1][j] = 1;
        }
    for (int side = 0; side < 2; side++) {
        const rf_table *t = side ? tr : tl;
        rf_word *exp = rf_malloc((t->nrows + 1) * (size_t)t->arity * 8);
        size_t m = 0;
        for (size_t i = 0; i < t->nrows; i++)
            if (keep[side][i]) {
                for (int k = 0; k < t->arity; k++)
                    exp[m * (size_t)t->arity + (size_t)k] = t->cols[k][i];
                m++;
            }
        rf_drel out;
        rf_drel_init(&out, 0);
        rf_status st;
        rf_status_init(&st);
        bool ok = rf_cuda_semijoin(c, dl, dr, nk, fc, side, &out, "semi-join", &st);
        CHECK(ok == ref_ok, "semi-join %d side %d: reference %s, GPU %s (%s)", iter, side, ref_ok ? "ok" : "failed",
              ok ? "ok" : "failed", st.message);
        if (ok && ref_ok)
            expect_rel(c, &out, exp, m, t->arity, false, side ? "semi-join (second side)" : "semi-join (first side)");
        rf_drel_free(c, &out);
        free(exp);
        (*cases)++;
    }
    free(keep[0]);
    free(keep[1]);
}

static void test_join(rf_cuda_ctx *c, int iters)
{
    int runs = 0, set_runs = 0, hinted_runs = 0, semi_runs = 0;
    for (int iter = 0; iter < iters; iter++) {
        if (getenv("RF_GPU_TEST_PROGRESS"))
            fprintf(stderr, "join case %d\n", iter);
        int al = 1 + (int)(rnd() % 3), ar = 1 + (int)(rnd() % 3);
        int nk = (int)(rnd() % (unsigned)((al < ar ? al : ar) + 1));
        int bits = iter % 5 == 0 ? 64 : 3 + (int)(rnd() % 6);
        size_t nl = iter % 13 == 0 ? 0 : rnd() % (nk ? 3000 : 200);
        size_t nr = rnd() % (nk ? 3000 : 200);
        rf_table tl, tr;
        random_table(&tl, al, nl, bits, true);
        random_table(&tr, ar, nr, bits, true);
        /* filter and projections over l ++ r, all int64 columns */
        g_ncols = al + ar;
        for (int i = 0; i < g_ncols; i++)
            g_coltypes[i] = RF_TYPE_INT64;
        rf_expr *filter = rnd() % 2 ? gen(RF_TYPE_BOOL, 3) : NULL;
        int nproj = 1 + (int)(rnd() % 3);
        rf_expr *proj[3];
        /* Every other case projects plain columns only: the join into a
         * dense set takes those. */
        bool cols_only = iter % 2 == 0;
        for (int p = 0; p < nproj; p++)
            proj[p] = cols_only || rnd() % 2 ? rf_expr_leaf(RF_EX_COL, RF_TYPE_INT64, (int)(rnd() % (unsigned)g_ncols))
                                             : gen(RF_TYPE_INT64, 2);
        rf_code fc = to_code(filter), pc[3];
        for (int p = 0; p < nproj; p++)
            pc[p] = to_code(proj[p]);
        /* reference: nested loops */
        rf_status st_ref, st_gpu;
        rf_status_init(&st_ref);
        rf_status_init(&st_gpu);
        size_t cap = 16, m = 0;
        rf_word *exp = rf_malloc(cap * (size_t)nproj * 8), row[8];
        bool ref_ok = true;
        for (size_t i = 0; i < tl.nrows && ref_ok; i++)
            for (size_t j = 0; j < tr.nrows && ref_ok; j++) {
                bool eq = true;
                for (int k = 0; k < nk; k++)
                    eq = eq && tl.cols[k][i] == tr.cols[k][j];
                if (!eq)
                    continue;
                for (int k = 0; k < al; k++)
                    row[k] = tl.cols[k][i];
                for (int k = 0; k < ar; k++)
                    row[al + k] = tr.cols[k][j];
                rf_word keep = 1;
                if (filter && !rf_expr_eval(filter, row, &keep, &st_ref)) {
                    ref_ok = false;
                    break;
                }
                if (!keep)
                    continue;
                if (m == cap) {
                    cap *= 2;
                    exp = rf_realloc(exp, cap * (size_t)nproj * 8);
                }
                for (int p = 0; p < nproj && ref_ok; p++)
                    ref_ok = rf_expr_eval(proj[p], row, &exp[m * nproj + p], &st_ref);
                m++;
            }
        rf_drel dl, dr, out;
        upload(c, &dl, &tl);
        upload(c, &dr, &tr);
        rf_drel_init(&out, 0);
        /* Both algorithms (merge join, hash join on r) against the reference. */
        for (int mode = 1; mode <= 2; mode++) {
            rf_status_init(&st_gpu);
            rf_cuda_set_join_mode(c, mode);
            bool gpu_ok = rf_cuda_join(c, &dl, &dr, nk, &fc, nproj, pc, &out, "join out", &st_gpu);
            CHECK(ref_ok == gpu_ok, "join %d (%s): reference %s, GPU %s (%s | %s)", iter,
                  mode == 1 ? "merge" : "hash", ref_ok ? "ok" : "failed", gpu_ok ? "ok" : "failed",
                  st_ref.message, st_gpu.message);
            if (ref_ok && gpu_ok)
                expect_rel(c, &out, exp, m, nproj, true, mode == 1 ? "merge join" : "hash join");
        }
        /* both algorithms again for the semi-join's candidate pairs */
        if (nk > 0) {
            rf_cuda_set_join_mode(c, 1 + iter % 2);
            semijoin_case(c, iter, &tl, &tr, &dl, &dr, nk, filter, &fc, &semi_runs);
        }
        rf_cuda_set_join_mode(c, 0);
        if (cols_only && ref_ok)
            join_to_set_case(c, iter, &dl, &dr, nk, &fc, nproj, pc, exp, m, &set_runs, &hinted_runs);
        free(exp);
        free(fc.ins);
        rf_expr_free(filter);
        for (int p = 0; p < nproj; p++) {
            free(pc[p].ins);
            rf_expr_free(proj[p]);
        }
        rf_drel_free(c, &dl);
        rf_drel_free(c, &dr);
        rf_drel_free(c, &out);
        rf_table_free(&tl);
        rf_table_free(&tr);
        runs++;
    }
    CHECK(set_runs > iters / 8 && hinted_runs > iters / 16, "join into a set: only %d cases (%d hinted)", set_runs,
          hinted_runs);
    CHECK(semi_runs > iters / 2, "semi-join: only %d cases", semi_runs);
    printf("join: %d cases, %d into a dense set (%d in a given frame), %d semi-joins\n", runs, set_runs, hinted_runs,
           semi_runs);
}

static void test_aggregate(rf_cuda_ctx *c, const rf_word *strs, int nstrs)
{
    int runs = 0;
    static const rf_type argt[] = {RF_TYPE_INT32, RF_TYPE_INT64, RF_TYPE_FLOAT64, RF_TYPE_STRING, RF_TYPE_BOOL};
    for (int iter = 0; iter < 150; iter++) {
        size_t n = iter % 9 == 0 ? 0 : rnd() % 4000;
        rf_table raw;
        expr_input(&raw, n, strs, nstrs);
        /* group keys: column 0 reduced to few values; sort rows (keys first) */
        for (size_t i = 0; i < n; i++)
            raw.cols[0][i] = rnd() % 5;
        rf_word *rows = table_rows(&raw);
        n = ref_sort_unique(rows, n, g_ncols);
        rf_table in;
        rf_table_init(&in, g_ncols);
        rf_table_from_rows(&in, g_ncols, rows, n);
        int nk = (int)(rnd() % 2);
        rf_aggfn fn = (rf_aggfn)(RF_AGG_COUNT + rnd() % 4);
        rf_type t = argt[rnd() % 5];
        if (fn == RF_AGG_TOTAL && (t == RF_TYPE_STRING || t == RF_TYPE_BOOL))
            t = RF_TYPE_INT64;
        rf_expr *arg = fn == RF_AGG_COUNT ? NULL : (rnd() % 2 ? col_of_type(t) : gen(t, 2));
        rf_code ac = to_code(arg);
        rf_type rt = fn == RF_AGG_COUNT ? RF_TYPE_INT64 : t;
        /* reference */
        rf_status st_ref, st_gpu;
        rf_status_init(&st_ref);
        rf_status_init(&st_gpu);
        rf_word *exp = rf_malloc((n + 1) * (size_t)(nk + 1) * 8);
        size_t m = 0;
        bool ref_ok = true;
        for (size_t i = 0; i < n && ref_ok;) {
            size_t j = i;
            while (j < n && (nk == 0 || rows[j * g_ncols] == rows[i * g_ncols]))
                j++;
            rf_word acc = 0;
            double facc = 0;
            rf_sum128 exact = {0, 0}; /* integer totals: exact, checked at the end */
            for (size_t r = i; r < j && ref_ok; r++) {
                rf_word v = 0;
                if (arg && !(ref_ok = rf_expr_eval(arg, rows + r * g_ncols, &v, &st_ref)))
                    break;
                if (fn == RF_AGG_COUNT)
                    acc++;
                else if (fn == RF_AGG_TOTAL && t == RF_TYPE_FLOAT64)
                    facc = r == i ? rf_word_to_double(v) : facc + rf_word_to_double(v);
                else if (fn == RF_AGG_TOTAL)
                    rf_sum128_add(&exact, rf_word_to_int(v));
                else if (r == i)
                    acc = v;
                else {
                    int cmp = rf_value_compare(t, v, acc);
                    if ((fn == RF_AGG_MIN && cmp < 0) || (fn == RF_AGG_MAX && cmp > 0))
                        acc = v;
                }
            }
            if (fn == RF_AGG_TOTAL && t == RF_TYPE_FLOAT64)
                acc = rf_word_from_double(facc);
            if (ref_ok && fn == RF_AGG_TOTAL && t != RF_TYPE_FLOAT64) {
                int64_t sum;
                if (rf_sum128_to_i64(exact, &sum) && (t != RF_TYPE_INT32 || (sum >= INT32_MIN && sum <= INT32_MAX)))
                    acc = rf_word_from_int(sum);
                else
                    ref_ok = rf_fail(&st_ref, RF_EXIT_RUNTIME_ERROR, "total out of range");
            }
            if (!ref_ok)
                break;
            if (nk)
                exp[m * 2] = rows[i * g_ncols];
            exp[m * (nk + 1) + nk] = acc;
            m++;
            i = j;
        }
        if (n == 0 && nk == 0 && fn == RF_AGG_COUNT)
            exp[m++] = 0;
        rf_drel din, out;
        upload(c, &din, &in);
        rf_drel_init(&out, 0);
        bool gpu_ok = rf_cuda_aggregate(c, &din, nk, fn, rt, &ac, &out, "agg out", &st_gpu);
        CHECK(ref_ok == gpu_ok, "aggregate %d: reference %s, GPU %s (%s | %s)", iter, ref_ok ? "ok" : "failed",
              gpu_ok ? "ok" : "failed", st_ref.message, st_gpu.message);
        if (ref_ok && gpu_ok)
            expect_rel(c, &out, exp, m, nk + 1, false, "aggregate");
        free(exp);
        free(rows);
        free(ac.ins);
        rf_expr_free(arg);
        rf_drel_free(c, &din);
        rf_drel_free(c, &out);
        rf_table_free(&in);
        rf_table_free(&raw);
        runs++;
    }
    printf("aggregate: %d cases\n", runs);
}

/* Several aggregates per kernel (count, total, min, max, avg,
 * count_distinct) against the CPU primitive: the same bits, avg included
 * (rf_agg_ops.h; float64 sums in row order), and the same failures. */
static void test_aggregate_multi(rf_cuda_ctx *c, const rf_word *strs, int nstrs)
{
    int runs = 0;
    static const rf_type argt[] = {RF_TYPE_INT32, RF_TYPE_INT64, RF_TYPE_FLOAT64, RF_TYPE_STRING, RF_TYPE_BOOL,
                                   RF_TYPE_DECIMAL0 + 2};
    for (int iter = 0; iter < 120; iter++) {
        /* now and then one big group: long in-order float64 sums */
        size_t n = iter % 10 == 0 ? 0 : iter % 7 == 0 ? 200000 : rnd() % 5000;
        rf_table raw;
        expr_input(&raw, n, strs, nstrs);
        for (size_t i = 0; i < n; i++)
            raw.cols[0][i] = iter % 7 == 0 ? 1 : rnd() % 5;
        rf_word *rows = table_rows(&raw);
        n = ref_sort_unique(rows, n, g_ncols);
        rf_table in;
        rf_table_init(&in, g_ncols);
        rf_table_from_rows(&in, g_ncols, rows, n);
        int nk = (int)(rnd() % 3);
        int naggs = 1 + (int)(rnd() % 4);
        rf_aggfn fns[4];
        rf_type rts[4];
        rf_expr *args[4];
        rf_code codes[4];
        for (int j = 0; j < naggs; j++) {
            rf_aggfn fn = (rf_aggfn)(RF_AGG_COUNT + rnd() % 6);
            rf_type t = argt[rnd() % 6];
            if ((fn == RF_AGG_TOTAL || fn == RF_AGG_AVG) && (t == RF_TYPE_STRING || t == RF_TYPE_BOOL))
                t = RF_TYPE_INT64;
            rf_expr *arg = NULL;
            if (fn != RF_AGG_COUNT)
                arg = rf_type_is_decimal(t) ? rf_expr_leaf(RF_EX_COL, t, 1)
                    : rnd() % 2 ? col_of_type(t) : gen(t, 2);
            fns[j] = fn;
            args[j] = arg;
            codes[j] = to_code(arg);
            rts[j] = fn == RF_AGG_COUNT || fn == RF_AGG_COUNT_DISTINCT ? RF_TYPE_INT64
                   : fn == RF_AGG_AVG ? RF_TYPE_FLOAT64 : t;
        }
        rf_status st_ref, st_gpu;
        rf_status_init(&st_ref);
        rf_status_init(&st_gpu);
        rf_table exp;
        bool ref_ok = rf_prim_aggregate_multi(&in, nk, naggs, fns, rts, codes, &exp, &st_ref);
        rf_drel din, out;
        upload(c, &din, &in);
        rf_drel_init(&out, 0);
        bool gpu_ok = rf_cuda_aggregate_multi(c, &din, nk, naggs, fns, rts, codes, &out, "agg out", &st_gpu);
        CHECK(ref_ok == gpu_ok, "aggregate multi %d: reference %s, GPU %s (%s | %s)", iter,
              ref_ok ? "ok" : "failed", gpu_ok ? "ok" : "failed", st_ref.message, st_gpu.message);
        if (ref_ok && gpu_ok) {
            rf_word *e = table_rows(&exp);
            expect_rel(c, &out, e, exp.nrows, nk + naggs, false, "aggregate multi");
            free(e);
        } else if (!ref_ok && !gpu_ok) {
            /* Both fault. The device evaluates rows in parallel and reports
             * whichever faulting row got there first, the CPU the first in
             * row order, so the two may name different rows (or faults). */
            CHECK(st_ref.message[0] && st_gpu.message[0], "aggregate multi %d: a fault without a message", iter);
        }
        for (int j = 0; j < naggs; j++) {
            free(codes[j].ins);
            rf_expr_free(args[j]);
        }
        rf_table_free(&exp);
        free(rows);
        rf_drel_free(c, &din);
        rf_drel_free(c, &out);
        rf_table_free(&in);
        rf_table_free(&raw);
        runs++;
    }
    printf("aggregate (several): %d cases\n", runs);
}

/* ---- Backend: kernels of a small hand-made Harmony IR program ---- */
/* dense: the RF_CUDA_DENSE mode the backend runs under ("always" takes
 * the dense-set path at this size). */
static void test_backend(const char *dense)
{
    rf_status st;
    rf_status_init(&st);
    setenv("RF_CUDA_DENSE", dense, 1);
    rf_backend *be = rf_backend_gpu_new(&st);
    unsetenv("RF_CUDA_DENSE");
    CHECK(be != NULL, "rf_backend_gpu_new: %s", st.message);
    if (!be)
        return;
    printf("backend device: %s\n", be->device);
    rf_hvar vars[4];
    memset(vars, 0, sizeof vars);
    rf_type t2[2] = {RF_TYPE_INT64, RF_TYPE_INT64};
    const char *names[4] = {"edge", "path", "delta", "tmp"};
    for (int i = 0; i < 4; i++) {
        vars[i].name = (char *)names[i];
        vars[i].arity = 2;
        vars[i].types = t2;
    }
    rf_hprogram p;
    memset(&p, 0, sizeof p);
    p.nvars = 4;
    p.vars = vars;
    /* Transitive closure of a random graph by semi-naive iteration, every
     * step a backend kernel; compared with a host fixpoint. */
    size_t nodes = 300, nedges = 600;
    rf_table edges;
    random_table(&edges, 2, 0, 8, true);
    rf_word *er = rf_malloc(nedges * 16);
    for (size_t i = 0; i < nedges; i++) {
        er[2 * i] = rnd() % nodes;
        er[2 * i + 1] = rnd() % nodes;
    }
    size_t ne = ref_sort_unique(er, nedges, 2);
    rf_table_from_rows(&edges, 2, er, ne);
    rf_dvar *v[4];
    for (int i = 0; i < 4; i++)
        v[i] = be->var_new(be, 2, &st);
    /* As a LOAD uploads facts: sorted on the device, so the backend knows
     * the rows distinct, and the delta's re-keying SORT (of a MAP that
     * swaps the columns of distinct rows) is left pending for the JOIN. */
    bool ok = be->upload_unsorted(be, v[0], &edges, &st);
    CHECK(ok, "upload: %s", st.message);
    rf_kernel k;
    rf_kernel_stats ks;
    memset(&k, 0, sizeof k);
    /* path := edge; delta := edge (sorted by source already). Join needs
     * delta keyed on its target: swap with MAP then SORT. */
    rf_instr col0 = {RF_EX_COL, RF_TYPE_INT64, RF_TYPE_INT64, 0, 0, 0};
    rf_instr col1 = {RF_EX_COL, RF_TYPE_INT64, RF_TYPE_INT64, 0, 1, 0};
    rf_instr col3 = {RF_EX_COL, RF_TYPE_INT64, RF_TYPE_INT64, 0, 3, 0};
    rf_code swap[2] = {{1, &col1}, {1, &col0}};
    rf_code joinproj[2] = {{1, &col1}, {1, &col3}}; /* (y,x) ⋈ (y,z) -> (x,z) */
    k.op = RF_K_COPY; k.out = 1;
    ok = ok && run_plain(be, &p, &k, v[1], v[0], NULL, &ks, &st);
    k.op = RF_K_COPY; k.out = 2;
    ok = ok && run_plain(be, &p, &k, v[2], v[0], NULL, &ks, &st);
    int iters = 0;
    double total_s = 0;
    while (ok && be->var_rows(be, v[2]) > 0 && iters < 1000) {
        iters++;
        k = (rf_kernel){0};
        k.op = RF_K_MAP; k.out = 3; k.nproj = 2; k.proj = swap;
        ok = ok && run_plain(be, &p, &k, v[3], v[2], NULL, &ks, &st);
        total_s += ks.seconds;
        k.op = RF_K_SORT; k.out = 2; k.nproj = 0; k.proj = NULL;
        ok = ok && run_plain(be, &p, &k, v[2], v[3], NULL, &ks, &st);
        k.op = RF_K_JOIN; k.out = 3; k.nkeys = 1; k.nproj = 2; k.proj = joinproj;
        ok = ok && run_plain(be, &p, &k, v[3], v[2], v[0], &ks, &st);
        k.op = RF_K_SORT; k.out = 2; k.nkeys = 0; k.nproj = 0; k.proj = NULL;
        ok = ok && run_plain(be, &p, &k, v[2], v[3], NULL, &ks, &st);
        k.op = RF_K_DIFF; k.out = 3;
        ok = ok && run_plain(be, &p, &k, v[3], v[2], v[1], &ks, &st);
        k.op = RF_K_COPY; k.out = 2;
        ok = ok && run_plain(be, &p, &k, v[2], v[3], NULL, &ks, &st);
        k.op = RF_K_UNION; k.out = 3;
        ok = ok && run_plain(be, &p, &k, v[3], v[1], v[2], &ks, &st);
        k.op = RF_K_COPY; k.out = 1;
        ok = ok && run_plain(be, &p, &k, v[1], v[3], NULL, &ks, &st);
        total_s += ks.seconds;
    }
    CHECK(ok, "backend fixpoint: %s", st.message);
    /* host fixpoint: boolean reachability matrix */
    unsigned char *reach = rf_calloc(nodes * nodes, 1);
    for (size_t i = 0; i < ne; i++)
        reach[er[2 * i] * nodes + er[2 * i + 1]] = 1;
    for (size_t m = 0; m < nodes; m++)
        for (size_t i = 0; i < nodes; i++)
            if (reach[i * nodes + m])
                for (size_t j = 0; j < nodes; j++)
                    if (reach[m * nodes + j])
                        reach[i * nodes + j] = 1;
    size_t nexp = 0;
    rf_word *exp = rf_malloc(nodes * nodes * 16);
    for (size_t i = 0; i < nodes; i++)
        for (size_t j = 0; j < nodes; j++)
            if (reach[i * nodes + j]) {
                exp[2 * nexp] = i;
                exp[2 * nexp + 1] = j;
                nexp++;
            }
    rf_table out;
    rf_table_init(&out, 2);
    ok = ok && be->download(be, v[1], &out, &st);
    CHECK(ok, "download: %s", st.message);
    if (ok) {
        rf_word *got = table_rows(&out);
        CHECK(out.nrows == nexp && same_rows(got, exp, nexp, 2), "transitive closure: %zu rows, expected %zu",
              out.nrows, nexp);
        free(got);
    }
    printf("backend (dense sets %s): transitive closure of %zu edges in %d iterations, %zu paths; peak device "
           "memory %zu bytes\n", dense, ne, iters, out.nrows, be->bytes_peak(be));
    /* The mode must have taken effect: the stats count dense differences. */
    char *buf = NULL;
    size_t len = 0;
    FILE *mf = open_memstream(&buf, &len);
    if (mf) {
        be->print_stats(be, mf);
        fclose(mf);
        const char *at = buf ? strstr(buf, "dense sets (") : NULL;
        size_t ndiff = 0;
        CHECK(at && sscanf(strchr(at, ':') + 1, "%zu", &ndiff) == 1, "no dense-set line in the stats");
        if (strcmp(dense, "always") == 0)
            CHECK(ndiff > 0, "RF_CUDA_DENSE=always ran no dense difference");
        else if (strcmp(dense, "off") == 0)
            CHECK(ndiff == 0, "RF_CUDA_DENSE=off ran %zu dense differences", ndiff);
        const char *off = getenv("RF_CUDA_PENDING_SORT");
        const char *ps = buf ? strstr(buf, "pending sorts (on): ") : NULL;
        size_t left = 0;
        if (!(off && strcmp(off, "off") == 0))
            CHECK(ps && sscanf(ps + strlen("pending sorts (on): "), "%zu", &left) == 1 && left >= (size_t)iters,
                  "the delta's SORT was not left pending for the JOIN (%zu of %d iterations)", left, iters);
        free(buf);
    }
    CHECK(be->bytes_peak(be) > 0, "peak memory not tracked");
    rf_table_free(&out);
    for (int i = 0; i < 4; i++)
        be->var_free(be, v[i]);
    CHECK(be->bytes_in_use(be) < 4096 * 1024, "relations freed, still %zu bytes in use", be->bytes_in_use(be));
    free(reach);
    free(exp);
    free(er);
    rf_table_free(&edges);
    be->destroy(be);
}

/* Device out-of-memory must be a clean error naming the relation. */
static void test_oom(rf_cuda_ctx *c)
{
    rf_status st;
    rf_status_init(&st);
    rf_drel d;
    rf_drel_init(&d, 4);
    bool ok = rf_drel_alloc(c, &d, (size_t)1 << 40, "huge_relation", &st);
    CHECK(!ok && st.code == RF_EXIT_OUT_OF_MEMORY && strstr(st.message, "huge_relation"),
          "out of memory not reported: code %d '%s'", st.code, st.message);
    printf("out of memory: %s\n", st.message);
    rf_drel_free(c, &d);
    /* the context still works afterwards */
    rf_table t;
    random_table(&t, 2, 1000, 20, false);
    rf_drel x;
    upload(c, &x, &t);
    rf_status_init(&st);
    CHECK(rf_cuda_sort_unique(c, &x, &x, "after oom", &st), "sort after OOM: %s", st.message);
    rf_drel_free(c, &x);
    rf_table_free(&t);
}

static rf_cuda_ctx *ctx_with_ranks(rf_status *st);

/* NVRTC-generated compute stages against the same references: a cold pass
 * (fresh cache folder: every stage compiled), then a new context over the
 * same folder (every stage loaded from disk). */
static void test_codegen(const rf_word *strs, int nstrs)
{
    char dir[] = "/tmp/rf_cuda_cache_XXXXXX";
    if (!mkdtemp(dir)) {
        CHECK(false, "mkdtemp failed");
        return;
    }
    setenv("RF_CUDA_CACHE", dir, 1);
    uint64_t seed = g_rng;
    for (int pass = 0; pass < 2; pass++) {
        rf_status st;
        rf_status_init(&st);
        rf_cuda_ctx *c = ctx_with_ranks(&st);
        if (!c) {
            CHECK(false, "context: %s", st.message);
            return;
        }
        rf_cuda_set_codegen(c, true);
        g_rng = seed;
        double t0 = rf_now();
        test_join(c, 25);
        test_map_exprs(c, strs, nstrs, 40);
        double wall = rf_now() - t0;
        rf_cuda_codegen_stats cs;
        rf_cuda_codegen_get_stats(c, &cs);
        printf("codegen %s: %zu compiled (%.3f s, %.1f ms each), %zu loaded from disk, %zu memory hits, "
               "%zu failures, load %.2f ms total; pass wall %.2f s\n",
               pass == 0 ? "cold" : "warm", cs.compiled, cs.compile_seconds,
               cs.compiled ? cs.compile_seconds * 1e3 / (double)cs.compiled : 0.0, cs.cache_hits, cs.mem_hits,
               cs.failures, cs.load_seconds * 1e3, wall);
        CHECK(cs.failures == 0 && cs.compiled + cs.cache_hits + cs.mem_hits > 0, "code generation did not run");
        if (pass == 1)
            CHECK(cs.compiled == 0, "warm pass recompiled %zu stages", cs.compiled);
        rf_cuda_ctx_free(c);
    }
}

/* Throughput of the building blocks on large random inputs. */
static void bench(rf_cuda_ctx *c, size_t n)
{
    rf_status st;
    rf_status_init(&st);
    for (int bits = 20; bits <= 64; bits += 44) {
        rf_table t;
        random_table(&t, 2, n, bits, false);
        rf_drel d, s, o;
        upload(c, &d, &t);
        rf_drel_init(&s, 2);
        rf_drel_init(&o, 0);
        double sec = 0;
        rf_cuda_sort_unique(c, &d, &s, "warm", &st);
        rf_cuda_timer_start(c, &st);
        rf_cuda_sort_unique(c, &d, &s, "bench", &st);
        rf_cuda_timer_stop(c, &sec, &st);
        printf("bench: sort+unique %zu rows x 2 cols (%d-bit values): %.3f ms, %.0f Mrows/s\n", n, bits,
               sec * 1e3, n / sec / 1e6);
        rf_cuda_timer_start(c, &st);
        rf_cuda_union(c, &s, &s, &o, "bench", &st);
        rf_cuda_timer_stop(c, &sec, &st);
        printf("bench: union %zu + %zu rows: %.3f ms\n", s.nrows, s.nrows, sec * 1e3);
        rf_instr c0 = {RF_EX_COL, RF_TYPE_INT64, RF_TYPE_INT64, 0, 0, 0};
        rf_instr c3 = {RF_EX_COL, RF_TYPE_INT64, RF_TYPE_INT64, 0, 3, 0};
        rf_code pj[2] = {{1, &c0}, {1, &c3}};
        rf_cuda_timer_start(c, &st);
        bool ok = rf_cuda_join(c, &s, &s, 1, NULL, 2, pj, &o, "bench", &st);
        rf_cuda_timer_stop(c, &sec, &st);
        printf("bench: join %zu x %zu rows on 1 key: %zu out, %.3f ms %s\n", s.nrows, s.nrows, o.nrows, sec * 1e3,
               ok ? "" : st.message);
        /* Merge against hash join: the large sorted s probing a small r
         * (every 2^k-th row of s), the case the size rule sends to hash. */
        rf_table ts;
        rf_table_init(&ts, 2);
        rf_drel_download(c, &s, &ts, &st);
        for (size_t div = 4; div <= 4096; div *= 8) {
            rf_table tr;
            rf_table_init(&tr, 2);
            for (size_t i = 0; i < ts.nrows; i += div) /* a subsequence stays sorted */
                rf_table_append_row(&tr, (rf_word[]){ts.cols[0][i], ts.cols[1][i]});
            rf_drel dr;
            upload(c, &dr, &tr);
            double ms[3] = {0, 0, 0};
            size_t rows[3] = {0, 0, 0};
            for (int mode = 1; mode <= 2; mode++) {
                rf_cuda_set_join_mode(c, mode);
                rf_cuda_join(c, &s, &dr, 1, NULL, 2, pj, &o, "warm", &st);
                rf_cuda_timer_start(c, &st);
                rf_cuda_join(c, &s, &dr, 1, NULL, 2, pj, &o, "bench", &st);
                rf_cuda_timer_stop(c, &sec, &st);
                ms[mode] = sec * 1e3;
                rows[mode] = o.nrows;
            }
            rf_cuda_set_join_mode(c, 0);
            printf("bench: join %zu x %zu rows on 1 key (%d-bit): merge %.3f ms, hash %.3f ms (%zu/%zu out)\n",
                   s.nrows, dr.nrows, bits, ms[1], ms[2], rows[1], rows[2]);
            rf_drel_free(c, &dr);
            rf_table_free(&tr);
        }
        rf_table_free(&ts);
        rf_drel_free(c, &d);
        rf_drel_free(c, &s);
        rf_drel_free(c, &o);
        rf_table_free(&t);
    }
    printf("bench: peak device memory %zu bytes\n", rf_cuda_bytes_peak(c));
}

/* A context with the string order of the dictionary uploaded. */
static int compare_string_ids(const void *a, const void *b)
{
    return rf_value_compare(RF_TYPE_STRING, *(const rf_word *)a, *(const rf_word *)b);
}

static rf_cuda_ctx *ctx_with_ranks(rf_status *st)
{
    rf_cuda_ctx *c = rf_cuda_ctx_new(0, st);
    if (!c)
        return NULL;
    size_t ns = rf_str_count();
    rf_word *ids = rf_malloc((ns + 1) * 8);
    uint32_t *rank = rf_malloc((ns + 1) * 4);
    for (size_t i = 0; i < ns; i++)
        ids[i] = i;
    /* By text. (An insertion sort here took minutes once the earlier
     * tests had interned some 10^5 strings: the suite ran past its time.) */
    qsort(ids, ns, sizeof *ids, compare_string_ids);
    for (size_t i = 0; i < ns; i++)
        rank[ids[i]] = (uint32_t)i;
    bool ok = rf_cuda_set_string_ranks(c, rank, ns, st);
    free(ids);
    free(rank);
    if (!ok) {
        rf_cuda_ctx_free(c);
        return NULL;
    }
    return c;
}

/* ---- Business-query operators: dates, decimals, if, string functions ---- */
static rf_expr *ecst(rf_type t, int64_t v) { return rf_expr_const(t, rf_word_from_int(v)); }
static rf_expr *ecol(rf_type t, int i) { return rf_expr_leaf(RF_EX_COL, t, i); }
static rf_expr *estr(const char *s) { return rf_expr_const(RF_TYPE_STRING, rf_str_intern(s, strlen(s))); }
static rf_expr *e2(rf_exop op, rf_type t, rf_expr *a, rf_expr *b) { return rf_expr_binary(op, t, a, b); }
static rf_expr *e1(rf_exop op, rf_type t, rf_expr *a) { return rf_expr_unary(op, t, a); }
static rf_expr *e3(rf_exop op, rf_type t, rf_expr *a, rf_expr *b, rf_expr *c)
{
    return rf_expr_ternary(op, t, a, b, c);
}
static int64_t day_of(const char *text)
{
    int64_t d = 0;
    const char *why;
    if (!rf_date_parse(text, strlen(text), &d, &why))
        abort();
    return d;
}
static rf_type dec(int s) { return rf_type_decimal(s); }

/* Columns of the business-query input: 0 id int64, 1 s string, 2 t string,
 * 3 d date, 4 x decimal[2], 5 n int32 (small, often 0). */
enum { BQ_ID, BQ_S, BQ_T, BQ_D, BQ_X, BQ_N, BQ_NCOLS };
static rf_expr *bq(int c)
{
    static const rf_type t[] = {RF_TYPE_INT64, RF_TYPE_STRING, RF_TYPE_STRING, RF_TYPE_DATE, 0, RF_TYPE_INT32};
    return ecol(c == BQ_X ? dec(2) : t[c], c);
}

/* Projections over the business-query input, each with the type it has;
 * host[i]: needs the host (two string columns). */
#define BQ_NPROJ 26
static void bq_projections(rf_expr **p, bool *host)
{
    rf_type I = RF_TYPE_INT32, L = RF_TYPE_INT64, B = RF_TYPE_BOOL, S = RF_TYPE_STRING, T = RF_TYPE_DATE,
            F = RF_TYPE_FLOAT64;
    int k = 0;
    /* if(n != 0, id / n, -1): no division by zero where n = 0 */
    p[k++] = e3(RF_EX_IF, L, e2(RF_EX_NE, B, bq(BQ_N), ecst(I, 0)),
                e2(RF_EX_DIV, L, bq(BQ_ID), e1(RF_EX_CAST, L, bq(BQ_N))), ecst(L, -1));
    p[k++] = e1(RF_EX_YEAR, I, bq(BQ_D));
    p[k++] = e1(RF_EX_MONTH, I, bq(BQ_D));
    p[k++] = e1(RF_EX_DAY, I, bq(BQ_D));
    p[k++] = e2(RF_EX_ADD_MONTHS, T, bq(BQ_D), bq(BQ_N));
    p[k++] = e2(RF_EX_ADD_YEARS, T, bq(BQ_D), bq(BQ_N));
    p[k++] = e2(RF_EX_SUB, T, bq(BQ_D), ecst(I, 90));
    p[k++] = e2(RF_EX_SUB, L, bq(BQ_D), ecst(T, day_of("1995-01-01")));
    p[k++] = e2(RF_EX_ADD, dec(2), bq(BQ_X), bq(BQ_X));
    p[k++] = e2(RF_EX_MUL, dec(4), bq(BQ_X), e2(RF_EX_SUB, dec(2), ecst(dec(2), 100), bq(BQ_X)));
    p[k++] = e1(RF_EX_CAST, dec(0), bq(BQ_X));                        /* rounds half away */
    p[k++] = e1(RF_EX_CAST, F, bq(BQ_X));
    p[k++] = e1(RF_EX_CAST, dec(1), e1(RF_EX_CAST, F, bq(BQ_X)));      /* float -> decimal rounds */
    p[k++] = e1(RF_EX_CAST, L, bq(BQ_X));                             /* truncates */
    p[k++] = e2(RF_EX_LIKE, B, bq(BQ_S), estr("%an%"));
    p[k++] = e3(RF_EX_SUBSTR, S, bq(BQ_S), ecst(L, 2), ecst(L, 3));
    p[k++] = e2(RF_EX_ADD, L, e1(RF_EX_STRLEN, L, bq(BQ_S)), bq(BQ_ID));
    p[k++] = e2(RF_EX_CONCAT, S, bq(BQ_S), estr("!"));
    p[k++] = e2(RF_EX_OR, B, e2(RF_EX_STARTS_WITH, B, bq(BQ_S), estr("a")),
                e2(RF_EX_ENDS_WITH, B, bq(BQ_S), estr("e")));
    p[k++] = e2(RF_EX_CONTAINS, B, bq(BQ_T), estr("p"));
    p[k++] = e3(RF_EX_IF, S, e2(RF_EX_GT, B, e1(RF_EX_STRLEN, L, bq(BQ_S)), ecst(L, 3)),
                e3(RF_EX_SUBSTR, S, bq(BQ_S), ecst(L, 1), ecst(L, 3)), bq(BQ_S));
    /* a fresh string (substr's) compared by text with another column */
    p[k++] = e2(RF_EX_LT, B, e3(RF_EX_SUBSTR, S, bq(BQ_S), ecst(L, 2), ecst(L, 2)), bq(BQ_T));
    /* a constant string expression */
    p[k++] = e2(RF_EX_CONCAT, S, estr("ab"), estr("cd"));
    /* if over dates and decimals */
    p[k++] = e3(RF_EX_IF, T, e2(RF_EX_LT, B, bq(BQ_X), ecst(dec(2), 0)), bq(BQ_D), ecst(T, day_of("2000-02-29")));
    for (int i = 0; i < k; i++)
        host[i] = false;
    host[k] = true; /* two string columns: the host */
    p[k++] = e2(RF_EX_CONCAT, S, bq(BQ_S), bq(BQ_T));
    host[k] = true;
    p[k++] = e2(RF_EX_LIKE, B, bq(BQ_T), bq(BQ_S));
    if (k != BQ_NPROJ)
        abort();
}

/* The generated CUDA of business-query stages compiles with NVRTC (no
 * device needed: runs wherever libnvrtc loads), the string functions as the
 * device gets them: tabulated (COL, RF_DOP_LOOKUP). */
static void test_codegen_compiles(void)
{
    rf_expr *p[BQ_NPROJ];
    bool host[BQ_NPROJ];
    bq_projections(p, host);
    rf_code codes[BQ_NPROJ];
    int n = 0;
    for (int i = 0; i < BQ_NPROJ; i++)
        if (!host[i])
            codes[n++] = to_code(p[i]);
    /* A tabulated like(s, ...) in a filter, and a lookup in a join stage. */
    rf_instr look[4] = {
        {RF_EX_COL, RF_TYPE_STRING, RF_TYPE_STRING, 0, BQ_S, 0},
        {RF_DOP_LOOKUP, RF_TYPE_BOOL, RF_TYPE_STRING, 0, 0, 0},
        {RF_EX_COL, RF_TYPE_BOOL, RF_TYPE_BOOL, 0, 0, 0},
        {RF_EX_AND, RF_TYPE_BOOL, RF_TYPE_BOOL, 0, 0, 0},
    };
    look[2].op = RF_EX_CONST;
    look[2].value = 1;
    rf_code filter = {4, look};
    rf_expr *checked = e2(RF_EX_MUL, RF_TYPE_INT64, bq(BQ_ID), e1(RF_EX_NEG, RF_TYPE_INT64, bq(BQ_ID)));
    codes[n++] = to_code(checked);
    int compiled = 0;
    for (int pass = 0; pass < 2; pass++) {
        /* pass 0: one MAP stage per projection (the string ones as the
         * library would leave them: generation must not fail either);
         * pass 1: a JOIN stage with all of them */
        for (int i = 0; i < (pass == 0 ? n : 1); i++) {
            char *src = pass == 0 ? rf_codegen_source(false, BQ_NCOLS, &filter, 1, &codes[i])
                                  : rf_codegen_source(true, 3, &filter, n < RF_CUDA_MAX_COLS ? n : RF_CUDA_MAX_COLS,
                                                      codes);
            char *log = NULL;
            int rc = rf_codegen_compile_only(src, "sm_90", &log);
            if (rc < 0) {
                printf("codegen compile check: skipped (no NVRTC)\n");
                free(src);
                goto done;
            }
            CHECK(rc == 1, "NVRTC rejected a generated stage (%s %d):\n%s", pass ? "join" : "map", i,
                  log ? log : "");
            compiled += rc == 1;
            free(log);
            free(src);
        }
    }
    /* The reducing gather as one kernel (rf_reduce): MAP and JOIN chains,
     * one or two keys or none, every aggregate kind, an argument that is
     * checked arithmetic (may fault), a tabulated string function. */
    {
        rf_instr prod[3] = {{RF_EX_COL, RF_TYPE_INT64, RF_TYPE_INT64, 0, 0, 0},
                            {RF_EX_COL, RF_TYPE_INT64, RF_TYPE_INT64, 0, 1, 0},
                            {RF_EX_MUL, RF_TYPE_INT64, RF_TYPE_INT64, 0, 0, 0}};
        rf_aggfn fns[5] = {RF_AGG_COUNT, RF_AGG_TOTAL, RF_AGG_MIN, RF_AGG_MAX, RF_AGG_AVG};
        int arg_val[5] = {-1, 3, 0, 1, 3};
        rf_code vals[4];
        rf_instr pc[3];
        for (int k = 0; k < 3; k++) {
            pc[k] = (rf_instr){RF_EX_COL, RF_TYPE_INT64, RF_TYPE_INT64, 0, k, 0};
            vals[k] = (rf_code){1, &pc[k]};
        }
        vals[3] = (rf_code){3, prod};
        for (int v = 0; v < 4; v++) {
            bool join = v & 1;
            int nkeys = v >> 1 ? 2 : v == 1 ? 1 : 0;
            char *src = rf_codegen_reduce_source(join, 2, v == 0 ? &filter : NULL, 4, vals, nkeys, 5, fns, arg_val, NULL);
            CHECK(src != NULL, "no reducing-gather source (variant %d)", v);
            if (!src)
                continue;
            CHECK(strstr(src, "rf_reduce(") != NULL, "the reducing gather has no rf_reduce kernel");
            char *log = NULL;
            int rc = rf_codegen_compile_only(src, "sm_90", &log);
            CHECK(rc == 1, "NVRTC rejected a generated reducing gather (variant %d):\n%s", v, log ? log : "");
            compiled += rc == 1;
            free(log);
            free(src);
        }
        /* The selection with its compaction (rf_select). */
        for (int v = 0; v < 3; v++) {
            char *src = rf_codegen_select_source(v == 2, BQ_NCOLS, v ? &filter : NULL, v ? 4 : 1, vals, NULL);
            CHECK(src && strstr(src, "rf_select("), "no selection source (variant %d)", v);
            char *log = NULL;
            int rc = src ? rf_codegen_compile_only(src, "sm_90", &log) : 0;
            CHECK(rc == 1, "NVRTC rejected a generated selection (variant %d):\n%s", v, log ? log : "");
            compiled += rc == 1;
            free(log);
            free(src);
        }
        /* Two and three selections of one input in one pass (rf_select_many). */
        for (int nb = 2; nb <= 3; nb++) {
            const rf_code *fl[3] = {&filter, NULL, &filter}, *pj[3] = {vals, vals + 1, vals};
            int np[3] = {4, 2, 1};
            char *src = rf_codegen_select_many_source(BQ_NCOLS, nb, fl, np, pj);
            CHECK(src && strstr(src, "rf_select_many("), "no selections source (%d branches)", nb);
            char *log = NULL;
            int rc = src ? rf_codegen_compile_only(src, "sm_90", &log) : 0;
            CHECK(rc == 1, "NVRTC rejected generated selections (%d branches):\n%s", nb, log ? log : "");
            compiled += rc == 1;
            free(log);
            free(src);
        }
        /* An argument that is not among the values: no source. */
        int bad[1] = {7};
        rf_aggfn total = RF_AGG_TOTAL;
        char *none = rf_codegen_reduce_source(false, 2, NULL, 4, vals, 1, 1, &total, bad, NULL);
        CHECK(none == NULL, "an aggregate of a value out of range was generated");
        free(none);
    }
    printf("codegen compile check: %d generated stages compiled with NVRTC (sm_90)\n", compiled);
done:
    for (int i = 0; i < BQ_NPROJ; i++)
        rf_expr_free(p[i]);
    for (int i = 0; i < n; i++)
        free(codes[i].ins);
    rf_expr_free(checked);
}

/* ---- A host model of the device interpreter (kernels.cu, eval) ----
 * The same loop over the instructions prims.c assembles (sc/skip short
 * circuits, IF, RF_DOP_LOOKUP), with the scalar operators of the host (the
 * shared rf_scalar_ops.h): runs without a device, so that the assembly and
 * the string tables are checked against rf_expr_eval everywhere. */
static bool model_eval(const rf_dins *ins, int n, const rf_word *tab, const rf_word *row, rf_word *out,
                       rf_status *st)
{
    uint64_t stack[RF_CUDA_MAX_STACK];
    int sp = 0;
    bool jumped = false;
    for (int pc = 0; pc < n; pc++) {
        const rf_dins in = ins[pc];
        if (in.sc && !jumped) {
            uint64_t top = stack[sp - 1];
            if (in.sc == 1 && !top) {
                stack[sp - 1] = 0;
                pc = in.skip;
                continue;
            }
            if (in.sc == 2 && top) {
                stack[sp - 1] = 1;
                pc = in.skip;
                continue;
            }
            if (in.sc == 3) {
                sp--;
                if (!top) {
                    pc = in.skip - 1;
                    jumped = true;
                    continue;
                }
            }
            if (in.sc == 4) {
                pc = in.skip;
                continue;
            }
        }
        jumped = false;
        switch (in.op) {
        case RF_EX_CONST:
            stack[sp++] = in.value;
            break;
        case RF_EX_COL:
            stack[sp++] = row[in.index];
            break;
        case RF_EX_IF:
            break;
        case RF_DOP_LOOKUP: { /* rf_scalar.cuh's rf_lookup */
            uint64_t len = tab[2 * (uint64_t)in.index + 1], id = stack[sp - 1];
            bool bits = (len & RF_TAB_BITS) != 0;
            if (id >= (len & ~RF_TAB_BITS))
                return rf_scalar_fail(st, RF_SERR_HOST_ONLY, 0, in.op);
            uint64_t w = tab[tab[2 * (uint64_t)in.index] + (bits ? id >> 6 : id)];
            stack[sp - 1] = bits ? (w >> (id & 63)) & 1 : w;
            break;
        }
        case RF_EX_NEG:
        case RF_EX_NOT:
        case RF_EX_CAST:
        case RF_EX_YEAR:
        case RF_EX_MONTH:
        case RF_EX_DAY:
        case RF_EX_STRLEN:
            if (!rf_scalar_unary((rf_exop)in.op, (rf_type)in.arg_type, (rf_type)in.type, stack[sp - 1],
                                 &stack[sp - 1], st))
                return false;
            break;
        case RF_EX_SUBSTR:
            return rf_scalar_fail(st, RF_SERR_HOST_ONLY, 0, in.op);
        default: {
            bool cmp = in.op >= RF_EX_EQ && in.op <= RF_EX_GE;
            uint64_t b = stack[--sp];
            if (!rf_scalar_binary2((rf_exop)in.op, (rf_type)(cmp ? in.arg_type : in.type), (rf_type)in.arg_type,
                                   stack[sp - 1], b, &stack[sp - 1], st))
                return false;
            break;
        }
        }
    }
    *out = stack[0];
    return sp == 1;
}

/* Random expressions over (0 int64, 1 string, 2 string, 3 int32) with the
 * string functions, if, && and ||, faults included. */
static rf_expr *sgen(rf_type t, int depth, bool one_string_col)
{
    rf_type L = RF_TYPE_INT64, B = RF_TYPE_BOOL, S = RF_TYPE_STRING;
    static const char *pats[] = {"%a%", "a%", "%e", "_a%", "", "%", "%%", "an", "p_a%"};
    int scol = one_string_col || rnd() % 4 ? 1 : 2;
    if (depth <= 0 || rnd() % 5 == 0) {
        switch (t) {
        case RF_TYPE_STRING: return rnd() % 4 ? ecol(S, scol) : estr(pats[rnd() % 9]);
        case RF_TYPE_BOOL: return rf_expr_const(B, rnd() % 2);
        default: return rnd() % 2 ? ecol(L, 0) : ecst(L, (int64_t)(rnd() % 9) - 3);
        }
    }
    unsigned k = rnd() % 8;
    switch (t) {
    case RF_TYPE_STRING:
        if (k <= 2)
            return e3(RF_EX_SUBSTR, S, sgen(S, depth - 1, one_string_col), sgen(L, depth - 1, one_string_col),
                      rnd() % 3 ? ecst(L, (int64_t)(rnd() % 5)) : sgen(L, depth - 1, one_string_col));
        if (k <= 4)
            return e2(RF_EX_CONCAT, S, sgen(S, depth - 1, one_string_col), sgen(S, depth - 1, one_string_col));
        if (k == 5)
            return e3(RF_EX_IF, S, sgen(B, depth - 1, one_string_col), sgen(S, depth - 1, one_string_col),
                      sgen(S, depth - 1, one_string_col));
        return sgen(S, 0, one_string_col);
    case RF_TYPE_BOOL: {
        static const rf_exop preds[] = {RF_EX_LIKE, RF_EX_STARTS_WITH, RF_EX_ENDS_WITH, RF_EX_CONTAINS};
        if (k <= 2)
            return e2(preds[rnd() % 4], B, sgen(S, depth - 1, one_string_col),
                      rnd() % 3 ? estr(pats[rnd() % 9]) : sgen(S, depth - 1, one_string_col));
        if (k == 3)
            return e2(rnd() % 2 ? RF_EX_AND : RF_EX_OR, B, sgen(B, depth - 1, one_string_col),
                      sgen(B, depth - 1, one_string_col));
        if (k == 4)
            return e2(rnd() % 2 ? RF_EX_LT : RF_EX_EQ, B, sgen(S, depth - 1, one_string_col),
                      sgen(S, depth - 1, one_string_col));
        if (k == 5)
            return e3(RF_EX_IF, B, sgen(B, depth - 1, one_string_col), sgen(B, depth - 1, one_string_col),
                      sgen(B, depth - 1, one_string_col));
        return e2(RF_EX_GT, B, sgen(L, depth - 1, one_string_col), ecst(L, 1));
    }
    default:
        if (k <= 2)
            return e1(RF_EX_STRLEN, L, sgen(S, depth - 1, one_string_col));
        if (k == 3)
            return e3(RF_EX_IF, L, sgen(B, depth - 1, one_string_col), sgen(L, depth - 1, one_string_col),
                      sgen(L, depth - 1, one_string_col));
        return e2(rnd() % 3 ? RF_EX_ADD : RF_EX_DIV, L, sgen(L, depth - 1, one_string_col),
                  sgen(L, depth - 1, one_string_col));
    }
}

/* Tabulates e over in (rf_cuda_test_tabulate) and checks each row of the
 * device form, run by the model, against the host's evaluation: the same
 * value or the same fault. *host when it went to the host; *ntab the
 * words of its tables. */
static void compare_tabulated(const rf_expr *e, const rf_table *in, bool *host, size_t *ntab, int *faults)
{
    rf_code code = to_code(e);
    rf_code dev;
    rf_word *tab = NULL;
    *ntab = 0;
    *host = false;
    rf_status st;
    rf_status_init(&st);
    bool ok = rf_cuda_test_tabulate(&code, in, &dev, &tab, ntab, host, &st);
    CHECK(ok, "tabulate: %s", st.message);
    CHECK(*host || rf_cuda_code_on_device(&code), "tabulated code the device cannot run");
    if (!ok || *host)
        goto done;
    for (int i = 0; i < dev.n; i++)
        CHECK(dev.ins[i].op == RF_DOP_LOOKUP || dev.ins[i].op >= RF_EX_COUNT_ ||
                  !rf_exop_is_string_op((rf_exop)dev.ins[i].op),
              "a string function left for the device");
    rf_dins *ins = rf_calloc((size_t)(dev.n ? dev.n : 1), sizeof *ins);
    CHECK(rf_cuda_test_assemble(&dev, 4, ins, &st), "assemble: %s", st.message);
    for (size_t r = 0; r < in->nrows; r++) {
        rf_word row[4] = {in->cols[0][r], in->cols[1][r], in->cols[2][r], in->cols[3][r]}, want = 0, got = 0;
        rf_status s1, s2;
        rf_status_init(&s1);
        rf_status_init(&s2);
        bool ok1 = rf_expr_eval(e, row, &want, &s1);
        bool ok2 = model_eval(ins, dev.n, tab, row, &got, &s2);
        *faults += !ok1;
        if (ok1 != ok2 || (ok1 && want != got) || (!ok1 && strcmp(s1.message, s2.message) != 0)) {
            CHECK(false, "device model differs on row %zu: %s %" PRIx64 " '%s' vs %s %" PRIx64 " '%s'", r,
                  ok1 ? "ok" : "fault", want, s1.message, ok2 ? "ok" : "fault", got, s2.message);
            rf_expr_print(e, stderr, NULL);
            fputc('\n', stderr);
            break;
        }
    }
    free(ins);
    rf_code_free(&dev);
done:
    free(tab);
    free(code.ins);
}

static void test_device_model(void)
{
    static const char *words[] = {"apple", "banana", "pear", "", "an", "Pa", "papaya", "e", "mango"};
    rf_table in;
    rf_table_init(&in, 4);
    rf_table_resize(&in, 64);
    for (size_t i = 0; i < in.nrows; i++) {
        const char *a = words[rnd() % 9], *b = words[rnd() % 9];
        in.cols[0][i] = rf_word_from_int((int64_t)(rnd() % 7) - 3);
        in.cols[1][i] = rf_str_intern(a, strlen(a));
        in.cols[2][i] = rf_str_intern(b, strlen(b));
        in.cols[3][i] = rf_word_from_int((int64_t)(rnd() % 5));
    }
    int on_device = 0, tabulated = 0, to_host = 0, faults = 0;
    for (int it = 0; it < 3000; it++) {
        static const rf_type ts[] = {RF_TYPE_INT64, RF_TYPE_BOOL, RF_TYPE_STRING};
        rf_expr *e = sgen(ts[rnd() % 3], 1 + (int)(rnd() % 4), rnd() % 3 != 0);
        bool host = false;
        size_t ntab = 0;
        compare_tabulated(e, &in, &host, &ntab, &faults);
        to_host += host;
        on_device += !host;
        tabulated += !host && ntab > 0;
        rf_expr_free(e);
    }
    printf("device model: %d expressions on the device (%d with string tables), %d to the host; %d row faults "
           "agreed\n", on_device, tabulated, to_host, faults);
    rf_table_free(&in);
}

/* Each row's device value of a tabulated code against the host's (no
 * faults expected here): the number of rows that differ. */
static int rows_differing(const rf_code *dev, const rf_expr *e, const rf_word *tab, const rf_table *in)
{
    rf_dins *ins = rf_calloc((size_t)(dev->n ? dev->n : 1), sizeof *ins);
    rf_status st;
    rf_status_init(&st);
    int differ = 0;
    if (!rf_cuda_test_assemble(dev, 4, ins, &st)) {
        free(ins);
        return (int)in->nrows;
    }
    for (size_t r = 0; r < in->nrows; r++) {
        rf_word row[4] = {in->cols[0][r], in->cols[1][r], in->cols[2][r], in->cols[3][r]}, want = 0, got = 0;
        rf_status s1, s2;
        rf_status_init(&s1);
        rf_status_init(&s2);
        differ += !rf_expr_eval(e, row, &want, &s1) || !model_eval(ins, dev->n, tab, row, &got, &s2) || want != got;
    }
    free(ins);
    return differ;
}

/* A kernel's filter reads the interning tables of its projections where
 * the subtree is the same (q22: substr(c_phone, 1, 2) projected and
 * compared with seven constants): one table, the filter's OR tree on the
 * device over its ids. Where the filter needs a string function over the
 * shared subtree (strlen) or reads another column, it gets its own table
 * as before. The phones are one run of ids each once in increasing order
 * (as customer's were interned), which is tabulated in place. */
static void test_tabulate_shared(void)
{
    enum { ROWS = 20000 };
    rf_type L = RF_TYPE_INT64, B = RF_TYPE_BOOL, S = RF_TYPE_STRING;
    char buf[64];
    rf_table in;
    rf_table_init(&in, 4);
    rf_table_resize(&in, ROWS);
    for (size_t r = 0; r < ROWS; r++) {
        int n = snprintf(buf, sizeof buf, "%02d-%03d-shared-%05zu", 10 + (int)(rnd() % 25), (int)(rnd() % 1000), r);
        in.cols[0][r] = rf_word_from_int((int64_t)r);
        in.cols[1][r] = rf_str_intern(buf, (size_t)n);
        in.cols[3][r] = rf_word_from_int((int64_t)(rnd() % 100));
    }
    for (size_t r = 0; r < ROWS; r++) {   /* (after the phones: their ids stay one run) */
        int n = snprintf(buf, sizeof buf, "%02d-other", 10 + (int)(r % 25));
        in.cols[2][r] = rf_str_intern(buf, (size_t)n);
    }
    CHECK(in.cols[1][ROWS - 1] - in.cols[1][0] == ROWS - 1, "the phones are one run of ids");
#define CODE2(c1) e3(RF_EX_SUBSTR, S, ecol(S, c1), ecst(L, 1), ecst(L, 2))
    static const char *codes[] = {"13", "31", "23", "29", "30", "18", "17"};
    rf_expr *or_tree = NULL;
    for (int i = 0; i < 7; i++) {
        rf_expr *eq = e2(RF_EX_EQ, B, CODE2(1), estr(codes[i]));
        or_tree = or_tree ? e2(RF_EX_OR, B, or_tree, eq) : eq;
    }
    struct {
        rf_expr *filter;
        size_t tables;   /* in all, the projection's one among them */
    } cases[] = {
        {or_tree, 1},
        {e2(RF_EX_AND, B, e2(RF_EX_LT, B, CODE2(1), estr("20")), e2(RF_EX_GT, B, ecol(L, 3), ecst(L, 50))), 1},
        {e2(RF_EX_EQ, B, e1(RF_EX_STRLEN, L, CODE2(1)), ecst(L, 2)), 2},
        {e2(RF_EX_EQ, B, CODE2(2), estr("13")), 2},
    };
    rf_expr *proj[3] = {ecol(L, 0), CODE2(1), ecol(L, 3)};
    rf_code pc[3] = {to_code(proj[0]), to_code(proj[1]), to_code(proj[2])};
    int differ = 0;
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        rf_code fc = to_code(cases[c].filter), dev_f, dev_p[3];
        rf_word *tab = NULL;
        size_t ntab = 0;
        bool host = false;
        rf_status st;
        rf_status_init(&st);
        bool ok = rf_cuda_test_tabulate_kernel(&fc, 3, pc, &in, &dev_f, dev_p, &tab, &ntab, &host, &st);
        CHECK(ok && !host, "case %zu: %s", c, ok ? "went to the host" : st.message);
        if (ok && !host) {
            size_t tables = ntab ? (size_t)tab[0] / 2 : 0;   /* heads first, offsets past them */
            CHECK(tables == cases[c].tables, "case %zu: %zu tables, expected %zu", c, tables, cases[c].tables);
            for (int i = 0; i < dev_f.n; i++)
                CHECK(dev_f.ins[i].op == RF_DOP_LOOKUP || dev_f.ins[i].op >= RF_EX_COUNT_ ||
                          !rf_exop_is_string_op((rf_exop)dev_f.ins[i].op),
                      "case %zu: a string function left for the device", c);
            int d = rows_differing(&dev_f, cases[c].filter, tab, &in);
            for (int k = 0; k < 3; k++)
                d += rows_differing(&dev_p[k], proj[k], tab, &in);
            CHECK(d == 0, "case %zu: %d values differ from the host's", c, d);
            differ += d;
            rf_code_free(&dev_f);
            for (int k = 0; k < 3; k++)
                rf_code_free(&dev_p[k]);
        }
        free(tab);
        free(fc.ins);
        rf_expr_free(cases[c].filter);
    }
#undef CODE2
    for (int k = 0; k < 3; k++) {
        free(pc[k].ins);
        rf_expr_free(proj[k]);
    }
    printf("shared tables: %zu kernels, %d values differ\n", sizeof cases / sizeof *cases, differ);
    rf_table_free(&in);
}

/* The pinned arena's extents (host_arena.c), without a device: started in
 * test mode (regions mapped, not registered) with room for one region of
 * 256 MB. Columns of 1 MB or more are made there, first fit in address
 * order; freed neighbours merge; a shrunk column gives its tail back; a
 * pooled table stays in it as it grows, rows kept; what does not fit, or
 * is small, lives in the heap and is freed there. (Run first: on a device
 * machine the contexts made later find the arena started.) */
static void test_host_arena(void)
{
    const size_t MB = (size_t)1 << 20, W = MB / 8;   /* W: rows of one MB a column */
    rf_cuda_host_arena_test_start(256 * MB, MB);
    CHECK(rf_cuda_host_pinned_bytes() == 0, "the arena starts empty");
    rf_table a, b, c;
    rf_table *all[3] = {&a, &b, &c};
    for (int i = 0; i < 3; i++) {
        rf_table_init(all[i], 1);
        rf_table_reserve_pooled(all[i], 8 * W);
    }
    CHECK(rf_cuda_host_pinned_bytes() == 256 * MB, "one region: %zu", rf_cuda_host_pinned_bytes());
    CHECK(rf_cuda_host_pinned(a.cols[0], 8 * MB) && rf_host_pool_owns(a.cols[0]), "a pooled column is in the arena");
    CHECK(b.cols[0] == a.cols[0] + 8 * W && c.cols[0] == b.cols[0] + 8 * W, "first fit in address order");
    CHECK(!rf_cuda_host_pinned(c.cols[0], 300 * MB), "a range past the region is not pinned");
    rf_word *at = a.cols[0];
    rf_table_free(&a);
    rf_table_free(&b);
    rf_table d;   /* 16 MB: fits where a and b were, merged */
    rf_table_init(&d, 1);
    rf_table_reserve_pooled(&d, 16 * W);
    CHECK(d.cols[0] == at, "freed neighbours merge: %p against %p", (void *)d.cols[0], (void *)at);
    rf_table_resize(&d, 100);
    for (size_t i = 0; i < 100; i++)
        d.cols[0][i] = i * 3;
    rf_table_shrink(&d, 100);   /* 2 MB kept (a huge page), 14 MB given back */
    rf_table e;
    rf_table_init(&e, 1);
    rf_table_reserve_pooled(&e, 8 * W);   /* (capacities double from 16 rows: powers of two) */
    CHECK(e.cols[0] == at + 2 * W, "a shrunk column's tail is free: %p against %p", (void *)e.cols[0],
          (void *)(at + 2 * W));
    rf_table_reserve(&d, 4 * W);   /* grown: still in the arena, rows kept */
    bool kept = true;
    for (size_t i = 0; i < 100; i++)
        kept = kept && d.cols[0][i] == i * 3;
    CHECK(rf_host_pool_owns(d.cols[0]) && kept, "a pooled table grows in the arena with its rows");
    rf_table big, small;   /* past the limit, and under the least column: the heap */
    rf_table_init(&big, 1);
    rf_table_reserve_pooled(&big, 240 * W);
    CHECK(!rf_host_pool_owns(big.cols[0]) && !rf_cuda_host_pinned(big.cols[0], MB), "no room: the heap");
    CHECK(rf_cuda_host_pinned_bytes() == 256 * MB, "the limit holds: %zu", rf_cuda_host_pinned_bytes());
    rf_table_init(&small, 1);
    rf_table_reserve_pooled(&small, W / 2);
    CHECK(!rf_host_pool_owns(small.cols[0]), "a small column: the heap");
    rf_table_free(&big);
    rf_table_free(&small);
    rf_table_free(&c);
    rf_table_free(&d);
    rf_table_free(&e);
    rf_table whole;   /* all free again: one extent of the whole region */
    rf_table_init(&whole, 1);
    rf_table_reserve_pooled(&whole, 256 * W);
    CHECK(whole.cols[0] == at && rf_cuda_host_pinned(whole.cols[0], 256 * MB), "every extent merged back");
    rf_table_free(&whole);
    printf("host arena: extents made, merged, cut and refused (%d failures so far)\n", g_fail);
}

/* Columns of many rows whose ids cover most of the dictionary get a table
 * over every interned id (tabulate_id_range), the others one over their
 * distinct ids: both give each row the host's value or fault. */
static void test_tabulate_id_range(void)
{
    enum { ROWS = 100000, DISTINCT = 70000 };
    rf_word *ids = rf_malloc(DISTINCT * sizeof *ids);
    char buf[64];
    rf_str_intern("", 0);   /* in the dictionary, in no row */
    for (int i = 0; i < DISTINCT; i++) {
        int n = i % 3 == 0   ? snprintf(buf, sizeof buf, "%d", i - DISTINCT / 2)
                : i % 3 == 1 ? snprintf(buf, sizeof buf, "pending special r%d requests", i)
                             : snprintf(buf, sizeof buf, "w%dx", i);
        ids[i] = rf_str_intern(buf, (size_t)n);
    }
    for (int i = 0; i < 10; i++) {   /* the dictionary's last ids: in no row */
        int n = snprintf(buf, sizeof buf, "not in a row %d", i);
        rf_str_intern(buf, (size_t)n);
    }
    rf_table in;
    rf_table_init(&in, 4);
    rf_table_resize(&in, ROWS);
    for (size_t r = 0; r < in.nrows; r++) {
        in.cols[0][r] = rf_word_from_int((int64_t)(rnd() % 7));
        in.cols[1][r] = ids[r < DISTINCT ? r : rnd() % DISTINCT];
        in.cols[2][r] = ids[rnd() % 16];   /* few distinct: their own table */
        in.cols[3][r] = rf_word_from_int(0);
    }
    rf_type L = RF_TYPE_INT64, B = RF_TYPE_BOOL;
    rf_expr *es[] = {
        e2(RF_EX_LIKE, B, ecol(RF_TYPE_STRING, 1), estr("%special%requests%")),
        e1(RF_EX_STRLEN, L, ecol(RF_TYPE_STRING, 1)),
        e2(RF_EX_AND, B, e2(RF_EX_CONTAINS, B, ecol(RF_TYPE_STRING, 1), estr("7")),
           e2(RF_EX_STARTS_WITH, B, ecol(RF_TYPE_STRING, 2), estr("w"))),
        e2(RF_EX_DIV, L, ecst(L, 100), e1(RF_EX_STRLEN, L, ecol(RF_TYPE_STRING, 1))),
        e2(RF_EX_DIV, L, ecst(L, 1000), e2(RF_EX_SUB, L, e1(RF_EX_STRLEN, L, ecol(RF_TYPE_STRING, 1)), ecst(L, 4))),
        /* interning: a sample in one thread, then every core looking up
         * only, the blocks that missed again in one thread */
        e3(RF_EX_SUBSTR, RF_TYPE_STRING, ecol(RF_TYPE_STRING, 1), ecst(L, 1), ecst(L, 3)),
        e2(RF_EX_CONCAT, RF_TYPE_STRING, ecol(RF_TYPE_STRING, 1), estr("!")),
        e2(RF_EX_EQ, B, e3(RF_EX_SUBSTR, RF_TYPE_STRING, ecol(RF_TYPE_STRING, 1), ecst(L, 2), ecst(L, 2)),
           estr("en")),
    };
    rf_prims_set_threads(4);
    int faults = 0;
    for (size_t k = 0; k < sizeof es / sizeof *es; k++) {
        bool host = false;
        size_t ntab = 0;
        compare_tabulated(es[k], &in, &host, &ntab, &faults);
        /* 0-2 cover every interned id; 3 faults on the empty string,
         * which column 1 does not hold (a table of its distinct ids
         * then, up to its largest: the last 10 ids are in no row); 4
         * faults on some of column 1's ids (the host runs it); 5-7
         * intern */
        if (k == 1) /* strlen: a word per id */
            CHECK(!host && ntab >= rf_str_count(), "expression %zu: %s, a table of %zu words for %zu strings", k,
                  host ? "host" : "device", ntab, rf_str_count());
        else if (k < 3) /* booleans: a bit per id, a table a column */
            CHECK(!host && ntab >= (rf_str_count() + 63) / 64 * (k == 2 ? 2 : 1) && ntab < rf_str_count() / 16,
                  "expression %zu: %s, a bit table of %zu words for %zu strings", k, host ? "host" : "device", ntab,
                  rf_str_count());
        else if (k == 3)
            CHECK(!host && ntab > 0 && ntab < rf_str_count(), "expression 3: %s, a table of %zu words",
                  host ? "host" : "device", ntab);
        else if (k == 4)
            CHECK(host, "expression 4 faults on rows of column 1 but did not go to the host");
        else
            CHECK(!host, "expression %zu went to the host", k);
        rf_expr_free(es[k]);
    }
    /* RF_CUDA_BIT_TABLES=off: the boolean a word per id again. */
    {
        setenv("RF_CUDA_BIT_TABLES", "off", 1);
        rf_expr *like = e2(RF_EX_LIKE, B, ecol(RF_TYPE_STRING, 1), estr("%special%requests%"));
        bool host = false;
        size_t ntab = 0;
        compare_tabulated(like, &in, &host, &ntab, &faults);
        CHECK(!host && ntab >= rf_str_count(), "bit tables off: %s, a table of %zu words for %zu strings",
              host ? "host" : "device", ntab, rf_str_count());
        rf_expr_free(like);
        unsetenv("RF_CUDA_BIT_TABLES");
    }
    printf("id-range tables: %zu interned strings, %d row faults agreed\n", rf_str_count(), faults);
    /* Fewer rows than interned strings (a rank of a distributed run: the
     * whole dictionary, a part of the rows): only the ids some row holds
     * are evaluated (present_ids). 100 / strlen(s) faults on the empty
     * string, interned but in no row: over the whole range it would fall
     * back to the distinct ids (a table short of the dictionary); over
     * the present ids it is a table of every id, and each row still gets
     * the host's value. */
    size_t n = rf_str_count(), rows2 = n * 3 / 4;
    CHECK(rows2 > 65536 && rows2 < n, "present ids: %zu rows for %zu strings", rows2, n);
    rf_table in2;
    rf_table_init(&in2, 4);
    rf_table_resize(&in2, rows2);
    for (size_t r = 0; r < in2.nrows; r++) {
        in2.cols[0][r] = rf_word_from_int((int64_t)(r % 5));
        in2.cols[1][r] = ids[(r * 2) % DISTINCT];   /* every other id of ids: half of them */
        in2.cols[2][r] = ids[r % 16];
        in2.cols[3][r] = rf_word_from_int(1);
    }
    rf_expr *ps[] = {
        e2(RF_EX_LIKE, B, ecol(RF_TYPE_STRING, 1), estr("%special%requests%")),
        e2(RF_EX_DIV, L, ecst(L, 100), e1(RF_EX_STRLEN, L, ecol(RF_TYPE_STRING, 1))),
    };
    for (size_t k = 0; k < sizeof ps / sizeof *ps; k++) {
        bool host = false;
        size_t ntab = 0;
        compare_tabulated(ps[k], &in2, &host, &ntab, &faults);
        CHECK(!host && ntab >= (k == 0 ? (n + 63) / 64 : n) && (k != 0 || ntab < n / 16),
              "present ids, expression %zu: %s, a table of %zu words for %zu strings", k, host ? "host" : "device",
              ntab, n);
        rf_expr_free(ps[k]);
    }
    rf_table_free(&in2);
    free(ids);
    rf_table_free(&in);
}

static void bq_input(rf_table *t, size_t rows)
{
    static const char *words[] = {"apple", "banana", "pear", "", "mango", "an", "plane", "kiwi", "grape", "a"};
    rf_table_init(t, BQ_NCOLS);
    rf_table_resize(t, rows);
    int64_t lo = day_of("1990-01-01"), hi = day_of("2000-12-31");
    for (size_t i = 0; i < rows; i++) {
        t->cols[BQ_ID][i] = rf_word_from_int((int64_t)i);
        const char *a = words[rnd() % 10], *b = words[rnd() % 10];
        t->cols[BQ_S][i] = rf_str_intern(a, strlen(a));
        t->cols[BQ_T][i] = rf_str_intern(b, strlen(b));
        t->cols[BQ_D][i] = rf_word_from_int(lo + (int64_t)(rnd() % (uint64_t)(hi - lo + 1)));
        t->cols[BQ_X][i] = rf_word_from_int((int64_t)(rnd() % 200001) - 100000);
        t->cols[BQ_N][i] = rf_word_from_int((int64_t)(rnd() % 11) - 5);
    }
}

/* One MAP over the business-query input against the host reference:
 * results, or the same fault message when want_msg is set. */
static void bq_map(rf_cuda_ctx *c, const rf_table *in, rf_expr *filter, int nproj, rf_expr **proj, const char *what)
{
    rf_code fc = to_code(filter), pc[RF_CUDA_MAX_COLS];
    for (int i = 0; i < nproj; i++)
        pc[i] = to_code(proj[i]);
    rf_status st_ref, st_gpu;
    rf_status_init(&st_ref);
    rf_status_init(&st_gpu);
    rf_word *exp = NULL;
    size_t nexp = 0;
    bool ref_ok = ref_map(in, filter, nproj, proj, &exp, &nexp, &st_ref);
    rf_drel din, dout;
    upload(c, &din, in);
    rf_drel_init(&dout, 0);
    bool gpu_ok = rf_cuda_map(c, &din, &fc, nproj, pc, &dout, "bq out", &st_gpu);
    CHECK(ref_ok == gpu_ok, "%s: reference %s, GPU %s (%s | %s)", what, ref_ok ? "ok" : "failed",
          gpu_ok ? "ok" : "failed", st_ref.message, st_gpu.message);
    if (ref_ok && gpu_ok)
        expect_rel(c, &dout, exp, nexp, nproj, false, what);
    if (!ref_ok && !gpu_ok)
        CHECK(strcmp(st_ref.message, st_gpu.message) == 0, "%s: fault '%s' on the GPU, '%s' on the host", what,
              st_gpu.message, st_ref.message);
    free(exp);
    free(fc.ins);
    for (int i = 0; i < nproj; i++)
        free(pc[i].ins);
    rf_drel_free(c, &din);
    rf_drel_free(c, &dout);
}

static void test_business_ops(rf_cuda_ctx *c)
{
    rf_table in;
    bq_input(&in, 3000);
    rf_expr *p[BQ_NPROJ];
    bool host[BQ_NPROJ];
    bq_projections(p, host);
    char what[64];
    /* each projection alone, on the device (tables) or the host */
    for (int i = 0; i < BQ_NPROJ; i++) {
        size_t before = rf_cuda_host_kernels(c);
        snprintf(what, sizeof what, "business op %d", i);
        bq_map(c, &in, NULL, 1, &p[i], what);
        CHECK(rf_cuda_host_kernels(c) - before == (host[i] ? 1u : 0u), "%s: %zu kernels on the host, expected %d",
              what, rf_cuda_host_kernels(c) - before, host[i]);
    }
    /* all device ones together under a filter mixing dates, decimals and
     * a tabulated like */
    rf_expr *f = e2(RF_EX_OR, RF_TYPE_BOOL,
                    e2(RF_EX_AND, RF_TYPE_BOOL, e2(RF_EX_GE, RF_TYPE_BOOL, bq(BQ_D), ecst(RF_TYPE_DATE, day_of("1994-01-01"))),
                       e2(RF_EX_LIKE, RF_TYPE_BOOL, bq(BQ_S), estr("%a%"))),
                    e2(RF_EX_GT, RF_TYPE_BOOL, bq(BQ_X), ecst(dec(2), 50000)));
    bq_map(c, &in, f, 16, p, "business ops under a filter");
    bq_map(c, &in, f, 8, p + 16, "string ops under a filter");
    /* A tabulation that faults for some id sends the kernel to the host,
     * which finds no fault: the branch is never taken. */
    size_t before = rf_cuda_host_kernels(c);
    rf_expr *guarded = e3(RF_EX_IF, RF_TYPE_STRING, e2(RF_EX_GT, RF_TYPE_BOOL, bq(BQ_N), ecst(RF_TYPE_INT32, 100)),
                          e3(RF_EX_SUBSTR, RF_TYPE_STRING, bq(BQ_S), ecst(RF_TYPE_INT64, 1), ecst(RF_TYPE_INT64, -1)),
                          bq(BQ_T));
    bq_map(c, &in, NULL, 1, &guarded, "substr with a negative length, never reached");
    CHECK(rf_cuda_host_kernels(c) == before + 1, "a faulting tabulation must run on the host");
    /* Faults: the same message as the host (one row: deterministic). */
    rf_table one;
    rf_table_init(&one, BQ_NCOLS);
    rf_table_resize(&one, 1);
    for (int k = 0; k < BQ_NCOLS; k++)
        one.cols[k][0] = in.cols[k][5];
    one.cols[BQ_ID][0] = rf_word_from_int(3);
    one.cols[BQ_N][0] = rf_word_from_int(0);
    one.cols[BQ_D][0] = rf_word_from_int(day_of("9999-12-15"));
    one.cols[BQ_X][0] = rf_word_from_int(INT64_MAX - 5);
    rf_expr *faults[] = {
        e2(RF_EX_MUL, RF_TYPE_INT64, bq(BQ_ID), ecst(RF_TYPE_INT64, 4611686018427387904)),
        e2(RF_EX_DIV, RF_TYPE_INT64, bq(BQ_ID), e1(RF_EX_CAST, RF_TYPE_INT64, bq(BQ_N))),
        e2(RF_EX_ADD_MONTHS, RF_TYPE_DATE, bq(BQ_D), ecst(RF_TYPE_INT32, 1)),
        e2(RF_EX_ADD, RF_TYPE_DATE, bq(BQ_D), ecst(RF_TYPE_INT32, 17)),
        e2(RF_EX_ADD, dec(2), bq(BQ_X), ecst(dec(2), 6)),
        e1(RF_EX_CAST, dec(3), bq(BQ_X)),
        e1(RF_EX_CAST, RF_TYPE_INT32, bq(BQ_X)),
        e2(RF_EX_ADD, RF_TYPE_INT32, ecst(RF_TYPE_INT32, INT32_MAX), e1(RF_EX_NEG, RF_TYPE_INT32, bq(BQ_N))),
        e1(RF_EX_NEG, RF_TYPE_INT32, e2(RF_EX_SUB, RF_TYPE_INT32, ecst(RF_TYPE_INT32, INT32_MIN), bq(BQ_N))),
    };
    for (size_t i = 0; i < sizeof faults / sizeof *faults; i++) {
        snprintf(what, sizeof what, "fault %zu", i);
        bq_map(c, &one, NULL, 1, &faults[i], what);
        rf_expr_free(faults[i]);
    }
    /* JOIN: tabulated string functions of either side, and a projection
     * over both sides' strings (the host) */
    rf_table l, r;
    rf_table_init(&l, 2);
    rf_table_init(&r, 2);
    for (int64_t k = 0; k < 200; k++) {
        rf_table_append_row(&l, (rf_word[]){rf_word_from_int(k % 50), in.cols[BQ_S][k]});
        rf_table_append_row(&r, (rf_word[]){rf_word_from_int(k % 40), in.cols[BQ_T][k]});
    }
    rf_prim_sort_unique(&l);
    rf_prim_sort_unique(&r);
    rf_expr *jf = e2(RF_EX_AND, RF_TYPE_BOOL, e2(RF_EX_LIKE, RF_TYPE_BOOL, ecol(RF_TYPE_STRING, 1), estr("%a%")),
                     e1(RF_EX_NOT, RF_TYPE_BOOL, e2(RF_EX_CONTAINS, RF_TYPE_BOOL, ecol(RF_TYPE_STRING, 3), estr("i"))));
    rf_expr *jp[2][2] = {
        {ecol(RF_TYPE_INT64, 0), e3(RF_EX_SUBSTR, RF_TYPE_STRING, ecol(RF_TYPE_STRING, 3), ecst(RF_TYPE_INT64, 1),
                                    ecst(RF_TYPE_INT64, 2))},
        {ecol(RF_TYPE_INT64, 0), e2(RF_EX_CONCAT, RF_TYPE_STRING, ecol(RF_TYPE_STRING, 1), ecol(RF_TYPE_STRING, 3))},
    };
    rf_drel dl, dr;
    upload(c, &dl, &l);
    upload(c, &dr, &r);
    for (int v = 0; v < 2; v++) {
        rf_code fc = to_code(jf), pc[2] = {to_code(jp[v][0]), to_code(jp[v][1])};
        rf_table ref;
        rf_status st;
        rf_status_init(&st);
        CHECK(rf_prim_join(&l, &r, 1, &fc, 2, pc, &ref, &st), "host join: %s", st.message);
        rf_word *exp = table_rows(&ref);
        size_t before_j = rf_cuda_host_kernels(c);
        rf_drel out;
        rf_drel_init(&out, 0);
        bool ok = rf_cuda_join(c, &dl, &dr, 1, &fc, 2, pc, &out, "bq join", &st);
        CHECK(ok, "business join %d: %s", v, st.message);
        if (ok)
            expect_rel(c, &out, exp, ref.nrows, 2, true, v ? "join, host" : "join, tables");
        CHECK(rf_cuda_host_kernels(c) - before_j == (size_t)v, "join %d: %zu kernels on the host", v,
              rf_cuda_host_kernels(c) - before_j);
        free(exp);
        rf_table_free(&ref);
        rf_drel_free(c, &out);
        free(fc.ins);
        free(pc[0].ins);
        free(pc[1].ins);
        rf_expr_free(jp[v][0]);
        rf_expr_free(jp[v][1]);
    }
    rf_expr_free(jf);
    rf_drel_free(c, &dl);
    rf_drel_free(c, &dr);
    /* AGG with a tabulated argument: max(strlen(s)) per id % 7, and the
     * greatest substr by text (strings the table made, in the rank order) */
    rf_table g;
    rf_table_init(&g, 2);
    for (size_t i = 0; i < in.nrows; i++)
        rf_table_append_row(&g, (rf_word[]){rf_word_from_int((int64_t)(i % 7)), in.cols[BQ_S][i]});
    rf_prim_sort_unique(&g);
    rf_expr *args[2] = {e1(RF_EX_STRLEN, RF_TYPE_INT64, ecol(RF_TYPE_STRING, 1)),
                        e3(RF_EX_SUBSTR, RF_TYPE_STRING, ecol(RF_TYPE_STRING, 1), ecst(RF_TYPE_INT64, 2),
                           ecst(RF_TYPE_INT64, 9))};
    rf_type at[2] = {RF_TYPE_INT64, RF_TYPE_STRING};
    rf_drel dg;
    upload(c, &dg, &g);
    for (int v = 0; v < 2; v++) {
        rf_code ac = to_code(args[v]);
        rf_table ref;
        rf_status st;
        rf_status_init(&st);
        CHECK(rf_prim_aggregate(&g, 1, RF_AGG_MAX, at[v], &ac, &ref, &st), "host aggregate: %s", st.message);
        rf_word *exp = table_rows(&ref);
        rf_drel out;
        rf_drel_init(&out, 0);
        bool ok = rf_cuda_aggregate(c, &dg, 1, RF_AGG_MAX, at[v], &ac, &out, "bq agg", &st);
        CHECK(ok, "business aggregate %d: %s", v, st.message);
        if (ok)
            expect_rel(c, &out, exp, ref.nrows, 2, false, "aggregate with a tabulated argument");
        free(exp);
        rf_table_free(&ref);
        rf_drel_free(c, &out);
        free(ac.ins);
        rf_expr_free(args[v]);
    }
    rf_drel_free(c, &dg);
    rf_table_free(&g);
    for (int i = 0; i < BQ_NPROJ; i++)
        rf_expr_free(p[i]);
    rf_expr_free(f);
    rf_expr_free(guarded);
    rf_table_free(&one);
    rf_table_free(&l);
    rf_table_free(&r);
    rf_table_free(&in);
    size_t ntab = 0, nent = 0;
    rf_cuda_string_table_stats(c, &ntab, &nent);
    printf("business ops: %d projections, %zu string tables, %zu kernels on the host\n", BQ_NPROJ, ntab,
           rf_cuda_host_kernels(c));
}

/* ---- Select planning in generated code (codegen_plan.h) ---- */

/* Appends code b to *a joined by &&. */
static void and_code(rf_code *a, const rf_code *b)
{
    a->ins = rf_realloc(a->ins, (size_t)(a->n + b->n + 1) * sizeof *a->ins);
    memcpy(a->ins + a->n, b->ins, (size_t)b->n * sizeof *b->ins);
    a->n += b->n;
    if (a->n > b->n) {
        rf_instr *x = &a->ins[a->n++];
        memset(x, 0, sizeof *x);
        x->op = RF_EX_AND;
        x->type = x->arg_type = RF_TYPE_BOOL;
    }
}

/* The planner's test filter over the business-query columns, as the device
 * gets it: 0 id < 1000; 1 like(s, ...) tabulated (COL s, RF_DOP_LOOKUP);
 * 2 n != 0; 3 id / n > 1 (can fault: pinned after 0, 1, 2). */
static rf_code selplan_test_filter(void)
{
    rf_code f = {0, NULL};
    rf_expr *c0 = e2(RF_EX_LT, RF_TYPE_BOOL, bq(BQ_ID), ecst(RF_TYPE_INT64, 1000));
    rf_code x = to_code(c0);
    and_code(&f, &x);
    free(x.ins);
    rf_expr_free(c0);
    rf_instr look[2] = {{RF_EX_COL, RF_TYPE_STRING, RF_TYPE_STRING, 0, BQ_S, 0},
                        {RF_DOP_LOOKUP, RF_TYPE_BOOL, RF_TYPE_STRING, 0, 0, 0}};
    rf_code l = {2, look};
    and_code(&f, &l);
    rf_expr *c2 = e2(RF_EX_NE, RF_TYPE_BOOL, bq(BQ_N), ecst(RF_TYPE_INT32, 0));
    rf_expr *c3 = e2(RF_EX_GT, RF_TYPE_BOOL,
                     e2(RF_EX_DIV, RF_TYPE_INT64, bq(BQ_ID), e1(RF_EX_CAST, RF_TYPE_INT64, bq(BQ_N))),
                     ecst(RF_TYPE_INT64, 1));
    rf_expr *es[2] = {c2, c3};
    for (int i = 0; i < 2; i++) {
        x = to_code(es[i]);
        and_code(&f, &x);
        free(x.ins);
        rf_expr_free(es[i]);
    }
    return f;
}

/* Where `what` first occurs in src at or after `from`, -1 if not. */
static long find_from(const char *src, long from, const char *what)
{
    const char *p = from >= 0 ? strstr(src + from, what) : NULL;
    return p ? (long)(p - src) : -1;
}

/* Sampling -> plan -> source without a device: the conjuncts of the device
 * code, forced plans emitted as they say (groups branch-free, && as early
 * outs, | as row-id kernels), illegal plans refused with the guard's
 * message, the model's choice legal, and every source compiles. */
static void test_selplan_codegen(void)
{
    rf_code filter = selplan_test_filter();
    rf_status st;
    rf_status_init(&st);
    rf_cg_plan pl;
    int nc = rf_cg_plan_split(&filter, &pl, &st);
    CHECK(nc == 4, "test filter: %d conjuncts, expected 4 (%s)", nc, st.message);
    if (nc != 4) {
        free(filter.ins);
        return;
    }
    CHECK(!rf_selconj_pinned(&pl.split.conj[0]) && !rf_selconj_pinned(&pl.split.conj[1]) &&
              !rf_selconj_pinned(&pl.split.conj[2]) && pl.split.conj[3].can_fault,
          "pinned conjuncts: only the division may fault (a lookup does not)");
    CHECK(pl.split.conj[1].code.n == 2 && pl.split.conj[1].code.ins[1].op == RF_DOP_LOOKUP,
          "the lookup conjunct keeps its device code");
    CHECK(pl.split.conj[1].ops[RF_SELOP_STR] == 1, "a lookup costs as a string function");
    rf_cg_plan_free(&pl);

    /* A forced split plan: kernel 0 evaluates 2, then (under a branch) 1 & 0
     * branch-free; kernel 1 evaluates 3 over the row ids. */
    rf_code proj[2];
    rf_expr *pe[2] = {bq(BQ_ID), bq(BQ_D)};
    for (int i = 0; i < 2; i++)
        proj[i] = to_code(pe[i]);
    int compiled = 0;
    setenv("RF_WEAVE_SELPLAN", "2&&1&0|3", 1);
    rf_cg_plan_split(&filter, &pl, &st);
    CHECK(rf_cg_plan_forced(&pl, true, &st) == 1 && pl.forced && pl.nparts == 2 && pl.part_start[1] == 3,
          "forced 2&&1&0|3: %s (%d parts)", st.message, pl.nparts);
    char *src = rf_codegen_select_source(false, BQ_NCOLS, &filter, 2, proj, &pl);
    CHECK(src != NULL, "no planned selection source");
    if (src) {
        long p0 = find_from(src, 0, "bool stage_filter_p0("), p1 = find_from(src, 0, "bool stage_filter_p1(");
        CHECK(find_from(src, 0, "// select plan 2&&1&0|3") >= 0, "the plan is not named in the source");
        CHECK(p0 >= 0 && p1 > p0, "no filter per kernel of the plan");
        long c2 = find_from(src, p0, "stage_c2("), out0 = find_from(src, p0, "if (!g) return true; // &&");
        long g10 = find_from(src, p0, "g = 1; // 1 & 0\n"), c1 = find_from(src, p0, "stage_c1(");
        long c0 = find_from(src, p0, "stage_c0("), c3 = find_from(src, p0, "stage_c3(");
        CHECK(c2 > p0 && out0 > c2 && g10 > out0 && c1 > g10 && c0 > c1 && c0 < p1 && c3 > p1,
              "kernel 0 must test 2, return early, then 1 & 0 as one group; conjunct 3 only in kernel 1");
        CHECK(find_from(src, g10, "if (!g) return true;") > c0, "1 & 0: no branch between them");
        CHECK(find_from(src, 0, "rf_select_p0(") >= 0 && find_from(src, 0, "rf_select_p1(") >= 0 &&
                  find_from(src, 0, "rid_out[dst] = (uint32_t)o;") >= 0 &&
                  find_from(src, 0, "(uint64_t)rid_in[t]") >= 0,
              "a split plan needs a kernel per part passing row ids");
        char *log = NULL;
        int rc = rf_codegen_compile_only(src, "sm_90", &log);
        CHECK(rc != 0, "NVRTC rejected a planned selection (split):\n%s", log ? log : "");
        compiled += rc == 1;
        free(log);
        free(src);
    }
    /* The reducing gather is one kernel: the forced | runs as &&. */
    rf_cg_plan_free(&pl);
    rf_cg_plan_split(&filter, &pl, &st);
    CHECK(rf_cg_plan_forced(&pl, false, &st) == 1 && pl.nparts == 1 && pl.splits_dropped,
          "a forced | without splits: one kernel, noted");
    {
        rf_aggfn fns[2] = {RF_AGG_COUNT, RF_AGG_TOTAL};
        int arg_val[2] = {-1, 0};
        src = rf_codegen_reduce_source(false, BQ_NCOLS, &filter, 2, proj, 1, 2, fns, arg_val, &pl);
        CHECK(src && find_from(src, 0, "bool stage_filter(") >= 0 && find_from(src, 0, "stage_filter_p") < 0 &&
                  find_from(src, 0, "// select plan 2&&1&0&&3") >= 0,
              "planned reducing gather: one filter of the plan with its | as &&");
        char *log = NULL;
        int rc = src ? rf_codegen_compile_only(src, "sm_90", &log) : 0;
        CHECK(rc != 0, "NVRTC rejected a planned reducing gather:\n%s", log ? log : "");
        compiled += rc == 1;
        free(log);
        free(src);
    }
    rf_cg_plan_free(&pl);
    /* Branch-free first: 2 & 0 (both computed), then 1, then 3. */
    setenv("RF_WEAVE_SELPLAN", "2&0&&1&&3", 1);
    rf_cg_plan_split(&filter, &pl, &st);
    CHECK(rf_cg_plan_forced(&pl, true, &st) == 1 && pl.nparts == 1, "forced 2&0&&1&&3: %s", st.message);
    rf_status_init(&st);
    src = rf_codegen_select_source(true, 3, &filter, 2, proj, &pl);
    if (src) {
        long f = find_from(src, 0, "bool stage_filter(");
        long g = find_from(src, f, "g = 1; // 2 & 0\n"), a = find_from(src, g, "stage_c2(");
        long b = find_from(src, a, "stage_c0("), br = find_from(src, g, "if (!g) return true;");
        CHECK(f >= 0 && g > f && a > g && b > a && br > b && find_from(src, 0, "rf_select(") >= 0,
              "2&0: one group, 2 before 0, no branch between");
        char *log = NULL;
        int rc = rf_codegen_compile_only(src, "sm_90", &log);
        CHECK(rc != 0, "NVRTC rejected a planned selection (join):\n%s", log ? log : "");
        compiled += rc == 1;
        free(log);
        free(src);
    } else {
        CHECK(false, "no planned join selection source");
    }
    /* The sampling kernel: every conjunct on its own. */
    src = rf_codegen_selsample_source(false, BQ_NCOLS, &pl);
    CHECK(src && find_from(src, 0, "rf_selsample(") >= 0 && find_from(src, 0, "#define NC 4") >= 0 &&
              find_from(src, 0, "stage_c3(l, i, r, j, env, &v) && v") >= 0,
          "sampling source");
    if (src) {
        char *log = NULL;
        int rc = rf_codegen_compile_only(src, "sm_90", &log);
        CHECK(rc != 0, "NVRTC rejected the sampling kernel:\n%s", log ? log : "");
        compiled += rc == 1;
        free(log);
        free(src);
    }
    rf_cg_plan_free(&pl);
    /* The guard: illegal forced plans are errors that say why. */
    static const struct { const char *plan, *why; } bad[] = {
        {"3&&0&&1&&2", "conjunct 3 can fault"},
        {"0&&1&&2&3", "not &"},
        {"0&&3&&1&&2", "conjunct 3 can fault"},
        {"0&&1&&2", NULL}, /* another number of conjuncts: not this filter's, ignored */
        {"0&&x", "expected a conjunct number"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        setenv("RF_WEAVE_SELPLAN", bad[i].plan, 1);
        rf_status_init(&st);
        rf_cg_plan_split(&filter, &pl, &st);
        int rc = rf_cg_plan_forced(&pl, true, &st);
        if (bad[i].why)
            CHECK(rc == -1 && strstr(st.message, bad[i].why) && strstr(st.message, "RF_WEAVE_SELPLAN"),
                  "plan %s: rc %d, message '%s' (expected '%s')", bad[i].plan, rc, st.message, bad[i].why);
        else
            CHECK(rc == 0, "plan %s names 3 conjuncts: not forced on a filter of 4 (rc %d)", bad[i].plan, rc);
        rf_cg_plan_free(&pl);
    }
    unsetenv("RF_WEAVE_SELPLAN");
    /* No sample: the unchanged filter; a sample: the model's legal choice,
     * the selective cheap conjunct early, the division after 0 only. */
    rf_selcalib cal;
    rf_selcalib_defaults(&cal);
    rf_cg_plan_split(&filter, &pl, &st);
    CHECK(rf_cg_plan_forced(&pl, true, &st) == 0, "RF_WEAVE_SELPLAN unset: nothing forced");
    CHECK(rf_cg_plan_choose(&pl, NULL, 0, 1e8, true, &cal, &st), "identity: %s", st.message);
    char text[RF_SELPLAN_FMT_MAX];
    CHECK(strcmp(rf_selplan_format(&pl.plan, text, sizeof text), "0&&1&&2&&3") == 0, "no sample: %s", text);
    double sel[4] = {0.9, 0.5, 0.05, 0.5};
    CHECK(rf_cg_plan_choose(&pl, sel, 65536, 1e8, true, &cal, &st), "choose: %s", st.message);
    CHECK(rf_selplan_legal(&pl.plan, pl.split.conj, &st) && pl.plan.order[3] == 3 && pl.sampled &&
              pl.model_ns <= pl.identity_ns * (1 + 1e-9),
          "the model's plan %s: legal, the division at its place, no dearer than the unchanged filter",
          rf_selplan_format(&pl.plan, text, sizeof text));
    char *note = rf_cg_plan_note(&pl);
    CHECK(strstr(note, "chosen: sampled sel 0.900 0.500 0.050 0.500 of 65536 rows") != NULL, "note: %s", note);
    free(note);
    src = rf_codegen_select_source(false, BQ_NCOLS, &filter, 2, proj, &pl);
    if (src) {
        char *log = NULL;
        int rc = rf_codegen_compile_only(src, "sm_90", &log);
        CHECK(rc != 0, "NVRTC rejected the model's planned selection:\n%s", log ? log : "");
        compiled += rc == 1;
        free(log);
        free(src);
    }
    rf_cg_plan_free(&pl);
    for (int i = 0; i < 2; i++) {
        free(proj[i].ins);
        rf_expr_free(pe[i]);
    }
    free(filter.ins);
    printf("select planning codegen: %d planned sources compiled with NVRTC (sm_90)\n", compiled);
}

/* Every legal plan of a filter with a faulting conjunct, forced on the
 * device, gives the library's rows in the library's order (rf_prim_map on
 * the host), and the sampled choice too; an illegal forced plan fails
 * with the guard's message. Rows where y = 0 fault if the division runs
 * before y != 0 holds. The same for a keyless count (the reducing gather:
 * one-part plans). */
/* d holds exactly want's rows in want's order. */
static void expect_table(rf_cuda_ctx *c, const rf_drel *d, const char *what, const rf_table *want)
{
    rf_word *exp = table_rows(want);
    expect_rel(c, d, exp, want->nrows, want->arity, false, what);
    free(exp);
}

typedef struct plan_list {
    char text[256][RF_SELPLAN_FMT_MAX];
    int n;
} plan_list;

static void list_plan(const rf_selplan *p, void *ctx)
{
    plan_list *l = ctx;
    if (l->n < 256)
        rf_selplan_format(p, l->text[l->n++], RF_SELPLAN_FMT_MAX);
}

static void test_selplan_device(rf_cuda_ctx *c)
{
    rf_type L = RF_TYPE_INT64, B = RF_TYPE_BOOL;
    /* columns: 0 a, 1 y (0 on a fifth of the rows), 2 b */
    size_t n = 300000;
    rf_table t;
    rf_table_init(&t, 3);
    rf_table_resize(&t, n);
    for (size_t i = 0; i < n; i++) {
        t.cols[0][i] = rf_word_from_int((int64_t)(rnd() % 1000));
        t.cols[1][i] = rf_word_from_int((int64_t)(rnd() % 5));
        t.cols[2][i] = rf_word_from_int((int64_t)(rnd() % 100));
    }
    rf_expr *es[4] = {
        e2(RF_EX_NE, B, ecol(L, 1), ecst(L, 0)),
        e2(RF_EX_GT, B, e2(RF_EX_DIV, L, ecol(L, 0), ecol(L, 1)), ecst(L, 100)),
        e2(RF_EX_LT, B, ecol(L, 2), ecst(L, 30)),
        e2(RF_EX_GE, B, ecol(L, 0), ecst(L, 200)),
    };
    rf_code filter = {0, NULL};
    for (int i = 0; i < 4; i++) {
        rf_code x = to_code(es[i]);
        and_code(&filter, &x);
        free(x.ins);
        rf_expr_free(es[i]);
    }
    rf_expr *pe[2] = {ecol(L, 2), ecol(L, 0)};
    rf_code proj[2] = {to_code(pe[0]), to_code(pe[1])};
    rf_status st;
    rf_status_init(&st);
    rf_table want;
    bool ok = rf_prim_map(&t, &filter, 2, proj, &want, &st);
    CHECK(ok, "host reference: %s", st.message);
    rf_drel din;
    upload(c, &din, &t);
    rf_cuda_set_codegen(c, true);
    rf_selsplit split;
    rf_selplan_split(&filter, &split, &st);
    plan_list *plans = rf_calloc(1, sizeof *plans);
    int all = rf_selplan_enumerate(split.conj, split.n, true, list_plan, plans);
    /* 0 and 1 first (the division after y != 0, joined by && or |), 2 and 3 in
     * either order after them, any connectors: 2 x 2 x 3 x 3 */
    CHECK(all == plans->n && all == 36, "legal plans of the test filter: %d, expected 36", all);
    int runs = 0;
    for (int k = -1; ok && k < plans->n; k++) {
        if (k >= 0)
            setenv("RF_WEAVE_SELPLAN", plans->text[k], 1);
        else
            unsetenv("RF_WEAVE_SELPLAN"); /* sampled: the model's choice */
        rf_drel dout;
        rf_drel_init(&dout, 2);
        rf_status_init(&st);
        bool gpu_ok = rf_cuda_map(c, &din, &filter, 2, proj, &dout, "selplan out", &st);
        CHECK(gpu_ok, "plan %s: %s", k >= 0 ? plans->text[k] : "(chosen)", st.message);
        if (gpu_ok)
            expect_table(c, &dout, k >= 0 ? plans->text[k] : "chosen plan", &want);
        rf_drel_free(c, &dout);
        runs++;
        /* The reducing gather: a count of the rows kept. */
        rf_aggfn cnt = RF_AGG_COUNT;
        rf_type rt = L;
        rf_code none = {0, NULL};
        rf_drel dred;
        rf_drel_init(&dred, 1);
        bool done = false, many = false;
        rf_status_init(&st);
        gpu_ok = rf_cuda_fused_reduce(c, &din, NULL, 0, &filter, 2, proj, 0, 1, &cnt, &rt, &none, &dred, &done,
                                      &many, "selplan count", &st);
        CHECK(gpu_ok, "reduce, plan %s: %s", k >= 0 ? plans->text[k] : "(chosen)", st.message);
        if (gpu_ok && done) {
            rf_table got;
            rf_table_init(&got, 1);
            CHECK(rf_drel_download(c, &dred, &got, &st) && got.nrows == 1 &&
                      rf_word_to_int(got.cols[0][0]) == (int64_t)want.nrows,
                  "reduce, plan %s: count %" PRId64 ", expected %zu", k >= 0 ? plans->text[k] : "(chosen)",
                  got.nrows ? rf_word_to_int(got.cols[0][0]) : -1, want.nrows);
            rf_table_free(&got);
        }
        rf_drel_free(c, &dred);
    }
    /* Illegal: the division before y != 0 holds. */
    setenv("RF_WEAVE_SELPLAN", "1&&0&&2&&3", 1);
    rf_drel dout;
    rf_drel_init(&dout, 2);
    rf_status_init(&st);
    CHECK(!rf_cuda_map(c, &din, &filter, 2, proj, &dout, "selplan out", &st) &&
              strstr(st.message, "RF_WEAVE_SELPLAN") && strstr(st.message, "can fault"),
          "an illegal forced plan must fail with the guard's message (got '%s')", st.message);
    rf_drel_free(c, &dout);
    unsetenv("RF_WEAVE_SELPLAN");
    rf_cuda_print_select_plans(c, stdout);
    printf("select plans on the device: %d runs (every legal plan and the chosen one), %zu rows kept of %zu\n", runs,
           want.nrows, n);
    rf_cuda_set_codegen(c, false);
    free(plans);
    rf_selsplit_free(&split);
    rf_drel_free(c, &din);
    rf_table_free(&want);
    rf_table_free(&t);
    free(filter.ins);
    for (int i = 0; i < 2; i++) {
        free(proj[i].ins);
        rf_expr_free(pe[i]);
    }
}

/* --join=auto's statistic on the device: the size of an equi-join, exact
 * (a table of the smaller side; RF_GPU_JOIN_SIZE=exact, and any input of
 * at most RF_JS_SAMPLE_ROWS rows) equal to the host's count, and sampled
 * (larger inputs) within 25% of it on uniform and on skewed keys. */
static void test_join_size(rf_cuda_ctx *c)
{
    static const size_t sizes[][2] = {{1, 1}, {700, 900}, {1024, 5000}, {60000, 20000}, {400000, 400000}};
    for (int skew = 0; skew < 2; skew++)
        for (size_t z = 0; z < sizeof sizes / sizeof sizes[0]; z++) {
            rf_table t[2];
            rf_drel d[2];
            for (int side = 0; side < 2; side++) {
                size_t n = sizes[z][side];
                rf_table_init(&t[side], 2);
                rf_table_resize(&t[side], n);
                for (size_t i = 0; i < n; i++) {
                    uint64_t a = rnd() % 5000, b = rnd() % 5000;
                    /* skewed: a key's frequency falls off as 1/key (min of two uniforms, squared) */
                    int64_t k = skew ? (int64_t)((a < b ? a : b) * (a < b ? a : b) / 5000) : (int64_t)a;
                    t[side].cols[0][i] = rf_word_from_int(k);
                    t[side].cols[1][i] = rf_word_from_int((int64_t)(i % 3));
                }
                upload(c, &d[side], &t[side]);
            }
            for (int nk = 1; nk <= 2; nk++) {
                int lk[2] = {0, 1}, rk[2] = {0, 1};
                uint64_t want = rf_prim_join_size(&t[0], lk, &t[1], rk, nk), exact = 0, sampled = 0;
                rf_status st;
                rf_status_init(&st);
                setenv("RF_GPU_JOIN_SIZE", "exact", 1);
                bool ok = rf_cuda_join_size(c, &d[0], lk, &d[1], rk, nk, &exact, &st);
                unsetenv("RF_GPU_JOIN_SIZE");
                ok = ok && rf_cuda_join_size(c, &d[0], lk, &d[1], rk, nk, &sampled, &st);
                CHECK(ok, "join size: %s", st.message);
                CHECK(exact == want, "join size %zu x %zu rows, %d keys, skew %d: exact %" PRIu64 ", host %" PRIu64,
                      sizes[z][0], sizes[z][1], nk, skew, exact, want);
                size_t big = sizes[z][0] > sizes[z][1] ? sizes[z][0] : sizes[z][1];
                double rel = want ? ((double)sampled - (double)want) / (double)want : (double)sampled;
                if (big <= RF_JS_SAMPLE_ROWS)
                    CHECK(sampled == want, "join size %zu x %zu rows: %" PRIu64 " without sampling, host %" PRIu64,
                          sizes[z][0], sizes[z][1], sampled, want);
                else
                    CHECK(rel > -0.25 && rel < 0.25,
                          "join size %zu x %zu rows, %d keys, skew %d: sampled %" PRIu64 ", host %" PRIu64 " (%+.1f%%)",
                          sizes[z][0], sizes[z][1], nk, skew, sampled, want, 100 * rel);
                if (big > RF_JS_SAMPLE_ROWS)
                    printf("join size %zu x %zu, %d keys, skew %d: sampled %+.2f%% off\n", sizes[z][0], sizes[z][1], nk,
                           skew, 100 * rel);
            }
            for (int side = 0; side < 2; side++) {
                rf_drel_free(c, &d[side]);
                rf_table_free(&t[side]);
            }
        }
}

/* A multiway join's variable order estimate on the device equals the
 * host's (rf_prim_order_cost: the same sampled rows, exact counts of their
 * keys) for every pairing of columns, on tables of fewer rows than the
 * sample (all rows taken) and of many more, uniform and skewed, with the
 * key ~0 present (a free slot's mark in the device's tables). */
static void test_order_cost(rf_cuda_ctx *c)
{
    static const size_t sizes[] = {0, 1, 3000, RF_ORDER_SAMPLES + 1, 250000};
    for (int skew = 0; skew < 2; skew++)
        for (size_t z = 0; z < sizeof sizes / sizeof sizes[0]; z++) {
            size_t n = sizes[z];
            rf_table t;
            rf_drel d;
            rf_table_init(&t, 2);
            rf_table_resize(&t, n);
            for (size_t i = 0; i < n; i++)
                for (int col = 0; col < 2; col++) {
                    uint64_t a = rnd() % 20000, b = rnd() % 20000;
                    uint64_t k = skew ? (a < b ? a : b) * (a < b ? a : b) / 20000 : a;
                    t.cols[col][i] = i % 997 == 5 ? ~(rf_word)0 : (rf_word)k;
                }
            rf_prim_sort_unique(&t);   /* a multiway join's inputs are sorted */
            upload(c, &d, &t);
            for (int pp = 0; pp < 2; pp++)
                for (int lc = 0; lc < 4; lc++) {
                    int lp = lc & 1, lq = lc >> 1;
                    double want = rf_prim_order_cost(&t, pp, 1 - pp, &t, lp, &t, lq), got = -1;
                    rf_status st;
                    rf_status_init(&st);
                    rf_order_query q = {&d, pp, 1 - pp, &d, lp, &d, lq};
                    bool ok = rf_cuda_order_costs(c, 1, &q, &got, &st);
                    CHECK(ok, "order cost: %s", st.message);
                    CHECK(got == want, "order cost, %zu rows, skew %d, pairs (%d, %d), lists %d %d: device %.17g, "
                          "host %.17g", n, skew, pp, 1 - pp, lp, lq, got, want);
                }
            rf_drel_free(c, &d);
            rf_table_free(&t);
        }
}

/* A keyless count and total (one group) over rows that fill the grid many
 * times over, again and again: every block folds its shared slot into the
 * one global group at the end, at nearly the same moment. They raced for
 * the global slot's claim, and a block that lost saw the table full and
 * dropped its rows, unreported (1.6M triangles of ego-Facebook counted
 * short in about one run of four on the H100). */
/* rf_codegen_pays (deferred select plans): a module that is loaded is always
 * worth running; one that no cache holds becomes worth making only once the
 * savings offered for it add up to a compilation (0.3 s), and savings offered
 * for another source do not count towards it. */
static void test_codegen_pays(rf_cuda_ctx *c)
{
    rf_expr *fe = e2(RF_EX_LT, RF_TYPE_BOOL, ecol(RF_TYPE_INT64, 0), ecst(RF_TYPE_INT64, 7)),
            *pe = ecol(RF_TYPE_INT64, 1);
    rf_code filter = to_code(fe), proj = to_code(pe);
    char *base = rf_codegen_source(false, 2, &filter, 1, &proj);
    void *fns[2];
    const char *names[2] = {"rf_filter", "rf_emit"};
    CHECK(base && rf_codegen_module(c, base, 2, names, fns), "pays: the base module did not load");
    CHECK(base && rf_codegen_pays(c, base, 0.0), "pays: a loaded module was not worth running");
    /* Sources no cache can hold (a comment with this run's time). */
    char *fresh = rf_sprintf("%s// pays %.9f\n", base ? base : "", rf_now());
    char *other = rf_sprintf("%s// other %.9f\n", base ? base : "", rf_now());
    CHECK(!rf_codegen_pays(c, fresh, 1e8), "pays: 0.1 s of savings paid for a compilation");
    CHECK(!rf_codegen_pays(c, other, 2.5e8), "pays: another source's savings counted");
    CHECK(!rf_codegen_pays(c, fresh, 1e8), "pays: 0.2 s of savings paid for a compilation");
    CHECK(rf_codegen_pays(c, fresh, 1e8), "pays: 0.3 s of savings did not pay for a compilation");
    CHECK(!rf_codegen_pays(c, other, -1e9), "pays: a negative saving was counted");
    /* offers under a key (rf_codegen_offer): summed per key against the cost named */
    uint64_t key = (uint64_t)(rf_now() * 1e9), key2 = key + 1;
    CHECK(!rf_codegen_offer(c, key, 2e5, 4e5), "offer: 0.2 ms paid for 0.4 ms");
    CHECK(!rf_codegen_offer(c, key2, 3e5, 4e5), "offer: 0.3 ms paid for 0.4 ms");
    CHECK(!rf_codegen_offer(c, key, -1e9, 4e5), "offer: a negative offer paid");
    CHECK(rf_codegen_offer(c, key, 2e5, 4e5), "offer: 0.4 ms under one key did not pay for 0.4 ms");
    CHECK(!rf_codegen_offer(c, key2, 0, 4e5), "offer: another key's offers counted");
    free(base);
    free(fresh);
    free(other);
    free(filter.ins);
    free(proj.ins);
    rf_expr_free(fe);
    rf_expr_free(pe);
}

/* The selectivity sample is skipped while no plan could pay for its
 * module (rf_selplan_gain_bound, offered under the filter's key): a filter
 * whose conjuncts read three columns of 10^6 rows can save ~7 us a launch
 * by the default model, so its first launches run the unchanged filter
 * unsampled and, once the offers add up to a module's load (0.4 ms), later
 * ones are sampled; one whose conjuncts all read one column (nothing to
 * save but compute) is never sampled in as many launches. Every launch
 * keeps the host's rows. */
static bool plan_notes_have(rf_cuda_ctx *c, const char *what, const char *text)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    rf_cuda_print_select_plans(c, f);
    fclose(f);
    bool found = false;
    for (char *line = buf; line && *line && !found;) {
        char *end = strchr(line, '\n');
        if (end)
            *end = '\0';
        found = strstr(line, what) && strstr(line, text);
        line = end ? end + 1 : NULL;
    }
    free(buf);
    return found;
}

static void test_sample_bound(rf_cuda_ctx *c)
{
    rf_type L = RF_TYPE_INT64, B = RF_TYPE_BOOL;
    size_t n = 1000000;
    rf_table t;
    rf_table_init(&t, 3);
    rf_table_resize(&t, n);
    for (size_t i = 0; i < n; i++)
        for (int k = 0; k < 3; k++)
            t.cols[k][i] = rf_word_from_int((int64_t)(rnd() % 1000));
    rf_drel din;
    upload(c, &din, &t);
    rf_cuda_set_codegen(c, true);
    for (int shape = 0; shape < 2; shape++) {
        /* shape 0: a < 500 && b < 700 && c < 600; shape 1: a >= 5 && a < 900 && a >= 10 */
        rf_expr *es[3] = {
            e2(shape ? RF_EX_GE : RF_EX_LT, B, ecol(L, 0), ecst(L, shape ? 5 : 500)),
            e2(RF_EX_LT, B, ecol(L, shape ? 0 : 1), ecst(L, shape ? 900 : 700)),
            e2(shape ? RF_EX_GE : RF_EX_LT, B, ecol(L, shape ? 0 : 2), ecst(L, shape ? 10 : 600)),
        };
        rf_code filter = {0, NULL};
        for (int i = 0; i < 3; i++) {
            rf_code x = to_code(es[i]);
            and_code(&filter, &x);
            free(x.ins);
            rf_expr_free(es[i]);
        }
        rf_expr *pe = ecol(L, 2);
        rf_code proj = to_code(pe);
        rf_status st;
        rf_status_init(&st);
        rf_table want;
        bool ok = rf_prim_map(&t, &filter, 1, &proj, &want, &st);
        CHECK(ok, "sample bound, host reference: %s", st.message);
        const char *what = shape ? "bound test one column" : "bound test three columns";
        int wrong = 0;
        for (int k = 0; ok && k < 100; k++) {
            rf_drel dout;
            rf_drel_init(&dout, 1);
            rf_status_init(&st);
            bool gpu_ok = rf_cuda_map(c, &din, &filter, 1, &proj, &dout, what, &st);
            CHECK(gpu_ok, "%s, launch %d: %s", what, k, st.message);
            if (gpu_ok && (k == 0 || k == 99))
                expect_table(c, &dout, what, &want);
            wrong += gpu_ok && dout.nrows != want.nrows;
            rf_drel_free(c, &dout);
        }
        CHECK(wrong == 0, "%s: %d launches kept another number of rows than the host", what, wrong);
        CHECK(plan_notes_have(c, what, "not sampled, no plan could save"), "%s: the first launches were sampled",
              what);
        if (shape == 0)
            CHECK(plan_notes_have(c, what, "sampled sel"), "%s: no launch was sampled after 100 offers", what);
        else
            CHECK(!plan_notes_have(c, what, "sampled sel"), "%s: sampled, though no plan can save a load", what);
        rf_table_free(&want);
        free(filter.ins);
        free(proj.ins);
        rf_expr_free(pe);
    }
    rf_cuda_set_codegen(c, false);
    rf_drel_free(c, &din);
    rf_table_free(&t);
}

/* What a generated source is made from (rf_cg_key): equal for equal
 * arguments in other allocations, different where the source would differ
 * (a constant, a projection, the plan's order or parts, the generator), the
 * sample's key blind to the plan's order (its source is). No device. */
static bool key_eq(const rf_cg_key *a, const rf_cg_key *b)
{
    return a->len == b->len && memcmp(a->bytes, b->bytes, a->len) == 0;
}

static void test_codegen_keys(void)
{
    rf_type L = RF_TYPE_INT64, B = RF_TYPE_BOOL;
    rf_code f[3], pj[2];
    for (int v = 0; v < 3; v++) { /* v 0 and 1 equal, 2 with another constant */
        rf_expr *e = e2(RF_EX_AND, B, e2(RF_EX_LT, B, ecol(L, 0), ecst(L, v == 2 ? 8 : 7)),
                        e2(RF_EX_GE, B, ecol(L, 1), ecst(L, 3)));
        f[v] = to_code(e);
        rf_expr_free(e);
    }
    for (int q = 0; q < 2; q++) {
        rf_expr *e = ecol(L, q);
        pj[q] = to_code(e);
        rf_expr_free(e);
    }
    rf_status st;
    rf_status_init(&st);
    rf_cg_plan pa, pb;
    rf_selcalib cal;
    rf_selcalib_defaults(&cal);
    CHECK(rf_cg_plan_split(&f[0], &pa, &st) == 2 && rf_cg_plan_split(&f[1], &pb, &st) == 2, "keys: split");
    rf_cg_plan_choose(&pa, NULL, 0, 100, true, &cal, &st);
    rf_cg_plan_choose(&pb, NULL, 0, 100, true, &cal, &st);
    rf_cg_key k[8];
    memset(k, 0, sizeof k);
    rf_cg_key_select(&k[0], false, 2, &f[0], 2, pj, &pa);
    rf_cg_key_select(&k[1], false, 2, &f[1], 2, pj, &pb);
    rf_cg_key_select(&k[2], false, 2, &f[2], 2, pj, &pa);
    rf_cg_key_select(&k[3], false, 2, &f[0], 1, pj, &pa);
    rf_cg_key_select(&k[4], true, 2, &f[0], 2, pj, &pa);
    rf_cg_key_sample(&k[5], false, 2, &pa);
    CHECK(k[0].len > 0 && key_eq(&k[0], &k[1]), "keys: equal arguments, other allocations, other keys");
    CHECK(!key_eq(&k[0], &k[2]), "keys: another constant, the same key");
    CHECK(!key_eq(&k[0], &k[3]), "keys: fewer projections, the same key");
    CHECK(!key_eq(&k[0], &k[4]), "keys: a join's and a map's select, the same key");
    CHECK(!key_eq(&k[0], &k[5]), "keys: a sample's and a select's, the same key");
    pb.plan.order[0] = 1, pb.plan.order[1] = 0; /* another plan of the same filter */
    rf_cg_key_select(&k[6], false, 2, &f[1], 2, pj, &pb);
    CHECK(!key_eq(&k[0], &k[6]), "keys: another plan order, the same key");
    rf_cg_key_sample(&k[7], false, 2, &pb);
    CHECK(key_eq(&k[5], &k[7]), "keys: a sample's key depends on the plan's order");
    rf_cg_key_select(&k[6], false, 2, &f[0], 2, pj, NULL);
    CHECK(!key_eq(&k[0], &k[6]), "keys: planned and unplanned, the same key");
    for (int i = 0; i < 8; i++)
        rf_cg_key_free(&k[i]);
    rf_cg_plan_free(&pa);
    rf_cg_plan_free(&pb);
    for (int v = 0; v < 3; v++)
        free(f[v].ins);
    for (int q = 0; q < 2; q++)
        free(pj[q].ins);
}

/* A module remembered under its key (rf_codegen_memo) is found by it with
 * the functions rf_codegen_module gave; an unknown key finds nothing. */
static void test_codegen_memo(rf_cuda_ctx *c)
{
    rf_type L = RF_TYPE_INT64;
    /* a constant of this run's time: a key no earlier test made */
    rf_expr *fe = e2(RF_EX_LT, RF_TYPE_BOOL, ecol(L, 0), ecst(L, (int64_t)(rf_now() * 1e6))), *pe = ecol(L, 1);
    rf_code filter = to_code(fe), proj = to_code(pe);
    rf_cg_key key = {0};
    rf_cg_key_select(&key, false, 2, &filter, 1, &proj, NULL);
    const char *name = "rf_select";
    void *fn = NULL, *fn2 = NULL;
    CHECK(!rf_codegen_module_by_key(c, &key, 1, &name, &fn), "memo: an unknown key found a module");
    char *src = rf_codegen_select_source(false, 2, &filter, 1, &proj, NULL);
    rf_codegen_memo(c, &key, src);
    CHECK(src && rf_codegen_module(c, src, 1, &name, &fn), "memo: the select module did not load");
    CHECK(rf_codegen_module_by_key(c, &key, 1, &name, &fn2) && fn2 == fn,
          "memo: the module was not found by its key");
    free(src);
    rf_cg_key_free(&key);
    free(filter.ins);
    free(proj.ins);
    rf_expr_free(fe);
    rf_expr_free(pe);
}

static void test_reduce_keyless(rf_cuda_ctx *c)
{
    rf_type L = RF_TYPE_INT64, B = RF_TYPE_BOOL;
    size_t n = 3000000;
    rf_table t;
    rf_table_init(&t, 1);
    rf_table_resize(&t, n);
    int64_t want_total = 0;
    size_t want_count = 0;
    for (size_t i = 0; i < n; i++) {
        int64_t v = (int64_t)(rnd() % 1000);
        t.cols[0][i] = rf_word_from_int(v);
        if (v < 900)
            want_count++, want_total += v;
    }
    rf_expr *fe = e2(RF_EX_LT, B, ecol(L, 0), ecst(L, 900)), *pe = ecol(L, 0);
    rf_code filter = to_code(fe), proj = to_code(pe);
    rf_drel din;
    upload(c, &din, &t);
    rf_cuda_set_codegen(c, true);
    rf_aggfn fns[2] = {RF_AGG_COUNT, RF_AGG_TOTAL};
    rf_type rt[2] = {L, L};
    rf_code args[2] = {{0, NULL}, proj};
    int runs = 0, wrong = 0;
    for (int k = 0; k < 40; k++) {
        rf_drel dred;
        rf_drel_init(&dred, 2);
        bool done = false, many = true;
        rf_status st;
        rf_status_init(&st);
        bool ok = rf_cuda_fused_reduce(c, &din, NULL, 0, &filter, 1, &proj, 0, 2, fns, rt, args, &dred, &done,
                                       &many, "keyless count", &st);
        CHECK(ok && done && !many, "keyless reduce, run %d: %s (done %d, many groups %d)", k, st.message, (int)done,
              (int)many);
        if (ok && done) {
            rf_table got;
            rf_table_init(&got, 2);
            bool down = rf_drel_download(c, &dred, &got, &st);
            bool right = down && got.nrows == 1 && rf_word_to_int(got.cols[0][0]) == (int64_t)want_count &&
                         rf_word_to_int(got.cols[1][0]) == want_total;
            wrong += !right;
            CHECK(right, "keyless reduce, run %d: count %" PRId64 " total %" PRId64 ", expected %zu and %" PRId64, k,
                  got.nrows ? rf_word_to_int(got.cols[0][0]) : -1, got.nrows ? rf_word_to_int(got.cols[1][0]) : -1,
                  want_count, want_total);
            rf_table_free(&got);
            runs++;
        }
        rf_drel_free(c, &dred);
    }
    printf("keyless reduce: %d runs over %zu rows, %d wrong\n", runs, n, wrong);
    rf_cuda_set_codegen(c, false);
    rf_drel_free(c, &din);
    rf_table_free(&t);
    free(filter.ins);
    free(proj.ins);
    rf_expr_free(fe);
    rf_expr_free(pe);
}

/* The keyed reducing gather's verdict on its groups: 10 groups are folded
 * (each group's count and total right), distinct keys over 300,000 rows are
 * refused as too many groups for hashing (*many_groups, so the backend
 * sorts them without sampling them again). */
static void test_reduce_many_groups(rf_cuda_ctx *c)
{
    rf_type L = RF_TYPE_INT64, B = RF_TYPE_BOOL;
    size_t n = 300000;
    for (int distinct = 0; distinct < 2; distinct++) {
        rf_table t;
        rf_table_init(&t, 2);
        rf_table_resize(&t, n);
        int64_t want_count[10] = {0}, want_total[10] = {0};
        for (size_t i = 0; i < n; i++) {
            int64_t key = distinct ? (int64_t)i : (int64_t)(i % 10), v = (int64_t)(rnd() % 1000);
            t.cols[0][i] = rf_word_from_int(key);
            t.cols[1][i] = rf_word_from_int(v);
            if (!distinct)
                want_count[key]++, want_total[key] += v;
        }
        rf_expr *fe = e2(RF_EX_GE, B, ecol(L, 1), ecst(L, 0)), *ke = ecol(L, 0), *ve = ecol(L, 1);
        rf_code filter = to_code(fe), proj[2] = {to_code(ke), to_code(ve)};
        rf_drel din;
        upload(c, &din, &t);
        rf_cuda_set_codegen(c, true);
        rf_aggfn fns[2] = {RF_AGG_COUNT, RF_AGG_TOTAL};
        rf_type rt[2] = {L, L};
        rf_code args[2] = {{0, NULL}, proj[1]};
        rf_drel dred;
        rf_drel_init(&dred, 3);
        bool done = false, many = false;
        rf_status st;
        rf_status_init(&st);
        bool ok = rf_cuda_fused_reduce(c, &din, NULL, 0, &filter, 2, proj, 1, 2, fns, rt, args, &dred, &done, &many,
                                       "keyed count", &st);
        CHECK(ok, "keyed reduce (%s keys): %s", distinct ? "distinct" : "10", st.message);
        if (distinct) {
            CHECK(ok && !done && many, "keyed reduce, distinct keys: done %d, many groups %d (expected 0, 1)",
                  (int)done, (int)many);
        } else {
            CHECK(ok && done && !many, "keyed reduce, 10 keys: done %d, many groups %d (expected 1, 0)", (int)done,
                  (int)many);
            if (ok && done) {
                rf_table got;
                rf_table_init(&got, 3);
                bool right = rf_drel_download(c, &dred, &got, &st) && got.nrows == 10;
                for (size_t r = 0; right && r < got.nrows; r++) {
                    int64_t k = rf_word_to_int(got.cols[0][r]);
                    right = k >= 0 && k < 10 && rf_word_to_int(got.cols[1][r]) == want_count[k] &&
                            rf_word_to_int(got.cols[2][r]) == want_total[k];
                }
                CHECK(right, "keyed reduce, 10 keys: %zu groups, or a group's count or total wrong", got.nrows);
                rf_table_free(&got);
            }
        }
        rf_drel_free(c, &dred);
        rf_cuda_set_codegen(c, false);
        rf_drel_free(c, &din);
        rf_table_free(&t);
        free(filter.ins);
        free(proj[0].ins);
        free(proj[1].ins);
        rf_expr_free(fe);
        rf_expr_free(ke);
        rf_expr_free(ve);
    }
    printf("keyed reduce: 10 groups folded, distinct keys refused as many groups\n");
}

/* rf_cuda_rank_split against rf_dist_row_rank: every rank's section holds
 * exactly the rows the host sends there, in their order (uniform, skewed
 * and duplicate keys; 1 and 2 hashed columns; 2 to 64 ranks; sizes around
 * the block and tile boundaries), and the sections laid end to end again
 * give a permutation of the input. */
static void test_rank_split(rf_cuda_ctx *c)
{
    static const size_t sizes[] = {1, 255, 256, 257, 5000, 300001};
    static const int ranks[] = {2, 3, 5, 64};
    int cases = 0;
    for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++)
        for (int shape = 0; shape < 3; shape++) {
            size_t n = sizes[si];
            int arity = 1 + shape;
            rf_table t;
            rf_table_init(&t, arity);
            rf_table_resize(&t, n);
            for (size_t i = 0; i < n; i++)
                for (int col = 0; col < arity; col++) {
                    uint64_t r = rnd();
                    /* shape 0 uniform, 1 skewed (most rows one key), 2 few keys */
                    t.cols[col][i] = shape == 0 ? r : shape == 1 ? (r % 10 < 8 ? 7 : r % 1000) : r % 5;
                }
            rf_drel d;
            upload(c, &d, &t);
            for (size_t ri = 0; ri < sizeof ranks / sizeof *ranks; ri++)
                for (int nkeys = 1, variant = 0; nkeys <= arity && nkeys <= 2; variant = !variant, nkeys += !variant) {
                    int size = ranks[ri];
                    rf_status st;
                    rf_status_init(&st);
                    size_t rows[RF_CUDA_MAX_RANKS];
                    uint64_t *packed = rf_cuda_alloc(c, n * (size_t)arity * 8, "test", &st);
                    /* the second variant hashes the same number of columns listed
                     * backwards (the last first), as a projection's placement does */
                    int listed[2] = {arity - 1, arity - 2};
                    const int *cols = variant ? listed : NULL;
                    bool ok = packed && rf_cuda_rank_split(c, &d, nkeys, cols, size, packed, rows, &st);
                    CHECK(ok, "rank split n %zu ranks %d: %s", n, size, st.message);
                    if (!ok)
                        continue;
                    uint64_t *got = malloc(n * (size_t)arity * 8);
                    CHECK(rf_cuda_read_back(c, packed, got, n * (size_t)arity * 8, &st), "read back");
                    size_t at = 0, bad = 0;
                    for (int r = 0; r < size; r++) {
                        size_t k = 0;
                        for (size_t i = 0; i < n; i++) {
                            if (rf_dist_row_rank_cols(&t, i, nkeys, cols, NULL, size) != r)
                                continue;
                            for (int col = 0; col < arity && k < rows[r]; col++)
                                bad += got[at * (size_t)arity + (size_t)col * rows[r] + k] != t.cols[col][i];
                            k++;
                        }
                        bad += k != rows[r];
                        at += rows[r];
                    }
                    CHECK(bad == 0 && at == n, "rank split n %zu arity %d keys %d ranks %d: %zu wrong, %zu rows", n,
                          arity, nkeys, size, bad, at);
                    /* laid end to end again: the sections as rows */
                    rf_row_section sec[RF_CUDA_MAX_RANKS];
                    size_t off = 0;
                    for (int r = 0; r < size; r++) {
                        sec[r] = (rf_row_section){packed + off * (size_t)arity, rows[r], rows[r]};
                        off += rows[r];
                    }
                    rf_drel back;
                    rf_drel_init(&back, arity);
                    rf_table tb, ts;
                    rf_table_init(&tb, arity);
                    rf_table_init(&ts, arity);
                    ok = rf_cuda_concat_sections(c, size, sec, &back, "test", &st) && rf_drel_download(c, &back, &tb, &st);
                    CHECK(ok && tb.nrows == n, "concat sections: %s", st.message);
                    if (ok) {
                        rf_table_copy(&ts, &t);
                        rf_prim_sort_unique(&ts);
                        rf_prim_sort_unique(&tb);
                        size_t diff = ts.nrows != tb.nrows;
                        for (int col = 0; !diff && col < arity; col++)
                            diff += memcmp(ts.cols[col], tb.cols[col], ts.nrows * sizeof(rf_word)) != 0;
                        CHECK(diff == 0, "concat sections: another set of rows");
                    }
                    rf_table_free(&tb);
                    rf_table_free(&ts);
                    rf_drel_free(c, &back);
                    rf_cuda_free(c, packed, n * (size_t)arity * 8);
                    free(got);
                    cases++;
                }
            rf_drel_free(c, &d);
            rf_table_free(&t);
        }
    printf("rank split: %d cases\n", cases);
}

static uint64_t ref_mix64(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    h *= 0xbf58476d1ce4e5b9ull;
    return h ^ (h >> 31);
}

/* rf_cuda_block_hashes (--count's hash on the device) against the chain
 * written out here: block sizes 1, 7 and 65,536, row counts around them,
 * 1, 2, 3 and 5 columns. */
static void test_block_hashes(rf_cuda_ctx *c)
{
    static const size_t sizes[] = {1, 6, 7, 8, 65535, 65536, 65537, 300000};
    static const size_t blocks[] = {1, 7, 65536};
    int cases = 0;
    for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++)
        for (int arity = 1; arity <= 5; arity += arity == 3 ? 2 : 1) {
            size_t n = sizes[si];
            rf_table t;
            rf_table_init(&t, arity);
            rf_table_resize(&t, n);
            for (size_t i = 0; i < n; i++)
                for (int col = 0; col < arity; col++)
                    t.cols[col][i] = rnd();
            rf_drel d;
            upload(c, &d, &t);
            for (size_t bi = 0; bi < sizeof blocks / sizeof *blocks; bi++) {
                size_t br = blocks[bi], nb = (n + br - 1) / br;
                if (nb > 100000)
                    continue;
                uint64_t seed = 0x243f6a8885a308d3ull ^ (uint64_t)arity;
                uint64_t *got = calloc(nb, sizeof *got);
                rf_status st;
                rf_status_init(&st);
                bool ok = rf_cuda_block_hashes(c, &d, br, seed, got, &st);
                size_t bad = 0;
                for (size_t b = 0; ok && b < nb; b++) {
                    uint64_t h = seed;
                    for (size_t i = b * br; i < (b + 1) * br && i < n; i++)
                        for (int col = 0; col < arity; col++)
                            h = ref_mix64(h, t.cols[col][i]);
                    bad += h != got[b];
                }
                CHECK(ok && bad == 0, "block hashes: %zu rows, arity %d, blocks of %zu: %zu wrong (%s)", n, arity, br,
                      bad, st.message);
                free(got);
                cases++;
            }
            rf_drel_free(c, &d);
            rf_table_free(&t);
        }
    printf("block hashes: %d cases\n", cases);
}

int main(int argc, char **argv)
{
    size_t bench_n = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--bench") == 0 && i + 1 < argc)
            bench_n = (size_t)strtoull(argv[++i], NULL, 10);
        else
            g_rng = strtoull(argv[i], NULL, 10) | 1;
    }
    test_host_arena();       /* host memory only */
    test_codegen_compiles(); /* NVRTC only: no device needed */
    test_selplan_codegen();
    test_device_model();
    test_tabulate_id_range();
    test_tabulate_shared();
    test_codegen_keys();
    if (rf_cuda_device_count() <= 0) {
        printf("skipped: no CUDA device\n");
        if (g_fail)
            return 1;
        rf_status st;
        rf_status_init(&st);
        rf_backend *be = rf_backend_gpu_new(&st);
        if (be || st.code == 0) {
            fprintf(stderr, "FAIL: rf_backend_gpu_new without a device must fail with a message\n");
            return 1;
        }
        printf("(rf_backend_gpu_new: %s)\n", st.message);
        return 0;
    }
    rf_status st;
    rf_status_init(&st);
    /* Strings whose id order differs from their text order. */
    static const char *words[] = {"pear", "apple", "zebra", "Apple", "", "apples", "mango", "b", "a b", "zz"};
    rf_word strs[10];
    for (int i = 0; i < 10; i++)
        strs[i] = rf_str_intern(words[i], strlen(words[i]));
    rf_cuda_ctx *c = ctx_with_ranks(&st);
    if (!c) {
        fprintf(stderr, "FAIL: context: %s\n", st.message);
        return 1;
    }
    printf("device: %s (seed %" PRIu64 ")\n", rf_cuda_device_name(c), g_rng);

    /* RF_GPU_TEST_ONLY=moves: the distribution layer's kernels alone (rank
     * split, block hashes), for compute-sanitizer runs */
    const char *only = getenv("RF_GPU_TEST_ONLY");
    if (only && strcmp(only, "moves") == 0) {
        test_rank_split(c);
        test_block_hashes(c);
        rf_cuda_ctx_free(c);
        printf("%d checks, %d failures\n", g_checks, g_fail);
        return g_fail ? 1 : 0;
    }
    /* RF_GPU_TEST_ONLY=union: the unions by merge path alone (their shared
     * memory tiles, for racecheck) */
    if (only && strcmp(only, "union") == 0) {
        test_union_merge(c);
        rf_cuda_ctx_free(c);
        printf("%d checks, %d failures\n", g_checks, g_fail);
        return g_fail ? 1 : 0;
    }
    /* RF_GPU_TEST_ONLY=codegen: the generated kernels' cold and warm passes alone */
    if (only && strcmp(only, "codegen") == 0) {
        rf_cuda_ctx_free(c);
        test_codegen(strs, 10);
        printf("%d checks, %d failures\n", g_checks, g_fail);
        return g_fail ? 1 : 0;
    }
    if (bench_n) {
        bench(c, bench_n);
    } else {
        test_sort(c);
        test_sort_orders(c);
        test_union_merge(c);
        test_string_ranks_ordered(c);
        test_setops(c);
        test_dense_sets(c);
        test_join(c, 150);
        test_map_exprs(c, strs, 10, 300);
        test_aggregate(c, strs, 10);
        test_aggregate_multi(c, strs, 10);
        test_business_ops(c);
        test_selplan_device(c);
        test_reduce_keyless(c);
        test_reduce_many_groups(c);
        test_codegen_pays(c);
        test_sample_bound(c);
        test_codegen_memo(c);
        test_join_size(c);
        test_order_cost(c);
        test_rank_split(c);
        test_block_hashes(c);
        if (!getenv("RF_GPU_TEST_SKIP_OOM")) /* sanitizers report the planted OOM */
            test_oom(c);
    }
    printf("device memory: in use %zu bytes, peak %zu bytes\n", rf_cuda_bytes_in_use(c), rf_cuda_bytes_peak(c));
    rf_cuda_ctx_free(c);
    if (!bench_n) {
        test_backend("off");
        test_backend("auto");
        test_backend("always");
        test_codegen(strs, 10);
    }
    printf("%d checks, %d failures\n", g_checks, g_fail);
    return g_fail ? 1 : 0;
}
