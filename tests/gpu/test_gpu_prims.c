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
#include "rf_cuda_prims.h"
#include "../../primitives/rf_prims.h"

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
    rf_instr *i = &ins[(*pos)++];
    memset(i, 0, sizeof *i);
    i->op = (uint8_t)e->op;
    i->type = (uint8_t)e->type;
    i->arg_type = (uint8_t)(e->a ? e->a->type : e->type);
    i->index = e->op == RF_EX_COL ? e->index : 0;
    i->value = e->op == RF_EX_CONST ? e->value : 0;
}

static int count_nodes(const rf_expr *e) { return e ? 1 + count_nodes(e->a) + count_nodes(e->b) : 0; }

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
    static const size_t sizes[] = {0, 1, 2, 7, 1000, 65537, 300000};
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

static void test_setops(rf_cuda_ctx *c)
{
    int runs = 0;
    for (int iter = 0; iter < 120; iter++) {
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
        rf_word *ra = table_rows(&ta), *rb = table_rows(&tb);
        size_t n = ta.nrows + tb.nrows;
        rf_word *u = rf_malloc(rf_mul_size(n ? n : 1, (size_t)(ar ? ar : 1) * 8));
        size_t nu = 0, nd = 0, nj = 0;
        /* union */
        memcpy(u, ra, ta.nrows * (size_t)ar * 8);
        memcpy(u + ta.nrows * ar, rb, tb.nrows * (size_t)ar * 8);
        nu = ref_sort_unique(u, n, ar);
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
        rf_drel_free(c, &da);
        rf_drel_free(c, &db);
        rf_drel_free(c, &out);
        rf_table_free(&ta);
        rf_table_free(&tb);
        runs++;
    }
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
    int runs = 0, outside = 0, too_wide = 0;
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
    CHECK(runs > 100 && outside > 0 && too_wide > 0, "dense sets: %d cases, %d outside, %d too wide", runs, outside,
          too_wide);
    printf("dense sets: %d cases (%d unions outside the frame, %d frames too wide)\n", runs, outside, too_wide);
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

static void test_join(rf_cuda_ctx *c, int iters)
{
    int runs = 0, set_runs = 0, hinted_runs = 0;
    for (int iter = 0; iter < iters; iter++) {
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
    printf("join: %d cases, %d into a dense set (%d in a given frame)\n", runs, set_runs, hinted_runs);
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
            for (size_t r = i; r < j && ref_ok; r++) {
                rf_word v = 0;
                if (arg && !(ref_ok = rf_expr_eval(arg, rows + r * g_ncols, &v, &st_ref)))
                    break;
                if (fn == RF_AGG_COUNT)
                    acc++;
                else if (fn == RF_AGG_TOTAL && t == RF_TYPE_FLOAT64)
                    facc = r == i ? rf_word_to_double(v) : facc + rf_word_to_double(v);
                else if (fn == RF_AGG_TOTAL)
                    acc = r == i ? v : acc + v;
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
            if (fn == RF_AGG_TOTAL && t == RF_TYPE_INT32)
                acc = rf_word_from_int((int32_t)(uint32_t)acc);
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
            CHECK(strcmp(st_ref.message, st_gpu.message) == 0, "aggregate multi %d: '%s' vs '%s'", iter,
                  st_ref.message, st_gpu.message);
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
    bool ok = be->upload(be, v[0], &edges, &st);
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
    ok = ok && be->run(be, &p, &k, v[1], v[0], NULL, &ks, &st);
    k.op = RF_K_COPY; k.out = 2;
    ok = ok && be->run(be, &p, &k, v[2], v[0], NULL, &ks, &st);
    int iters = 0;
    double total_s = 0;
    while (ok && be->var_rows(be, v[2]) > 0 && iters < 1000) {
        iters++;
        k = (rf_kernel){0};
        k.op = RF_K_MAP; k.out = 3; k.nproj = 2; k.proj = swap;
        ok = ok && be->run(be, &p, &k, v[3], v[2], NULL, &ks, &st);
        total_s += ks.seconds;
        k.op = RF_K_SORT; k.out = 2; k.nproj = 0; k.proj = NULL;
        ok = ok && be->run(be, &p, &k, v[2], v[3], NULL, &ks, &st);
        k.op = RF_K_JOIN; k.out = 3; k.nkeys = 1; k.nproj = 2; k.proj = joinproj;
        ok = ok && be->run(be, &p, &k, v[3], v[2], v[0], &ks, &st);
        k.op = RF_K_SORT; k.out = 2; k.nkeys = 0; k.nproj = 0; k.proj = NULL;
        ok = ok && be->run(be, &p, &k, v[2], v[3], NULL, &ks, &st);
        k.op = RF_K_DIFF; k.out = 3;
        ok = ok && be->run(be, &p, &k, v[3], v[2], v[1], &ks, &st);
        k.op = RF_K_COPY; k.out = 2;
        ok = ok && be->run(be, &p, &k, v[2], v[3], NULL, &ks, &st);
        k.op = RF_K_UNION; k.out = 3;
        ok = ok && be->run(be, &p, &k, v[3], v[1], v[2], &ks, &st);
        k.op = RF_K_COPY; k.out = 1;
        ok = ok && be->run(be, &p, &k, v[1], v[3], NULL, &ks, &st);
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
    for (size_t i = 0; i < ns; i++) /* insertion sort by text: few strings */
        for (size_t j = i; j > 0 && rf_value_compare(RF_TYPE_STRING, ids[j - 1], ids[j]) > 0; j--) {
            rf_word x = ids[j];
            ids[j] = ids[j - 1];
            ids[j - 1] = x;
        }
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

int main(int argc, char **argv)
{
    size_t bench_n = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--bench") == 0 && i + 1 < argc)
            bench_n = (size_t)strtoull(argv[++i], NULL, 10);
        else
            g_rng = strtoull(argv[i], NULL, 10) | 1;
    }
    if (rf_cuda_device_count() <= 0) {
        printf("skipped: no CUDA device\n");
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

    if (bench_n) {
        bench(c, bench_n);
    } else {
        test_sort(c);
        test_setops(c);
        test_dense_sets(c);
        test_join(c, 150);
        test_map_exprs(c, strs, 10, 300);
        test_aggregate(c, strs, 10);
        test_aggregate_multi(c, strs, 10);
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
