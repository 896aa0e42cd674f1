/* The CPU operator library against naive references on random inputs:
 * sizes 0, 1, small and big enough to be split across threads, duplicates,
 * multi-column keys, wide (> 64-bit) rows; threads=1 and threads=4 must give
 * identical tables. Plus the evaluator's short-circuit and division by
 * zero, and aggregate edge cases. */
#include <CUnit/Basic.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rf_prims.h"
#include "rf_agg_ops.h"

static uint64_t g_seed = 88172645463325252ull;
static uint64_t rnd(void)
{
    g_seed ^= g_seed << 13;
    g_seed ^= g_seed >> 7;
    g_seed ^= g_seed << 17;
    return g_seed;
}

/* domain 0 = full 64-bit words */
static void rand_table(rf_table *t, int arity, size_t n, uint64_t domain)
{
    rf_table_init(t, arity);
    rf_table_resize(t, n);
    for (int c = 0; c < arity; c++)
        for (size_t i = 0; i < n; i++)
            t->cols[c][i] = domain ? rnd() % domain : rnd();
}

static int g_arity;
static int cmp_rows(const void *a, const void *b)
{
    const rf_word *x = a, *y = b;
    for (int c = 0; c < g_arity; c++)
        if (x[c] != y[c])
            return x[c] < y[c] ? -1 : 1;
    return 0;
}

/* Reference: row-major copy, qsort, dedupe -> table. */
static void ref_sort(const rf_table *in, rf_table *out)
{
    int a = in->arity;
    size_t n = in->nrows;
    rf_word *rows = rf_malloc((n * (size_t)a + 1) * sizeof *rows);
    for (size_t i = 0; i < n; i++)
        for (int c = 0; c < a; c++)
            rows[i * (size_t)a + (size_t)c] = in->cols[c][i];
    g_arity = a;
    if (a > 0)
        qsort(rows, n, (size_t)a * sizeof *rows, cmp_rows);
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (m == 0 || cmp_rows(&rows[(m - 1) * (size_t)a], &rows[i * (size_t)a]) != 0) {
            memmove(&rows[m * (size_t)a], &rows[i * (size_t)a], (size_t)a * sizeof *rows);
            m++;
        }
    if (a == 0)
        m = n > 0;
    rf_table_from_rows(out, a, rows, m);
    free(rows);
}

static bool tables_equal(const rf_table *a, const rf_table *b)
{
    if (a->arity != b->arity || a->nrows != b->nrows)
        return false;
    for (int c = 0; c < a->arity; c++)
        if (a->nrows && memcmp(a->cols[c], b->cols[c], a->nrows * sizeof(rf_word)) != 0)
            return false;
    return true;
}

static const size_t sizes[] = {0, 1, 2, 17, 1000, 150000};
#define NSIZES (sizeof sizes / sizeof sizes[0])

/* Sorts in with 1 and with 4 threads, each against the reference, which
 * is left in *ref (the caller frees it). */
static void check_sort_threads(const rf_table *in, rf_table *ref)
{
    rf_table got1, got4;
    ref_sort(in, ref);
    rf_prims_set_threads(1);
    rf_prim_sort(in, &got1);
    rf_prims_set_threads(4);
    rf_prim_sort(in, &got4);
    CU_ASSERT_TRUE(tables_equal(ref, &got1));
    CU_ASSERT_TRUE(tables_equal(ref, &got4));
    rf_table_free(&got1);
    rf_table_free(&got4);
}

/* Two columns in the order of the second, then the first (a sorted
 * relation with its columns swapped) are sorted by the first column alone
 * (rf_prim_sorts_by_first counts it); a row repeated stays one, two rows
 * exchanged take the full sort. Each against the reference, 1 and 4
 * threads. */
static void test_sort_by_second(void)
{
    const size_t ns[] = {1000, 150000};
    const uint64_t domains[] = {1u << 20, 1u << 30};
    for (size_t si = 0; si < 2; si++)
        for (size_t d = 0; d < 2; d++)
            for (int variant = 0; variant < 3; variant++) {   /* swapped; a row repeated; two rows exchanged */
                rf_table raw, sorted;
                rand_table(&raw, 2, ns[si], domains[d]);
                ref_sort(&raw, &sorted);
                size_t n = sorted.nrows;
                rf_table in;
                rf_table_init(&in, 2);
                rf_table_resize(&in, n);
                for (size_t i = 0; i < n; i++) {
                    in.cols[0][i] = sorted.cols[1][i];
                    in.cols[1][i] = sorted.cols[0][i];
                }
                if (variant == 1) {
                    in.cols[0][n / 2] = in.cols[0][n / 2 - 1];
                    in.cols[1][n / 2] = in.cols[1][n / 2 - 1];
                } else if (variant == 2) {
                    rf_word x0 = in.cols[0][n / 2], x1 = in.cols[1][n / 2];
                    in.cols[0][n / 2] = in.cols[0][n / 2 + 1];
                    in.cols[1][n / 2] = in.cols[1][n / 2 + 1];
                    in.cols[0][n / 2 + 1] = x0;
                    in.cols[1][n / 2 + 1] = x1;
                }
                rf_table ref;
                size_t before = rf_prim_sorts_by_first();
                check_sort_threads(&in, &ref);
                CU_ASSERT_EQUAL(rf_prim_sorts_by_first() - before, variant == 2 ? 0u : 2u);
                if (variant == 1)
                    CU_ASSERT_EQUAL(ref.nrows, n - 1);
                rf_table_free(&raw);
                rf_table_free(&sorted);
                rf_table_free(&in);
                rf_table_free(&ref);
            }
}

/* ---- sort ---- */
static void test_sort(void)
{
    const uint64_t domains[] = {3, 1000, 1u << 30, 0};
    for (int arity = 1; arity <= 3; arity++)
        for (size_t si = 0; si < NSIZES; si++)
            for (size_t d = 0; d < 4; d++) {
                rf_table in, ref;
                rand_table(&in, arity, sizes[si], domains[d]);
                check_sort_threads(&in, &ref);
                if (sizes[si] > 100 && domains[d] == 3)
                    CU_ASSERT_TRUE(ref.nrows < sizes[si]); /* duplicates were there */
                rf_table_free(&in);
                rf_table_free(&ref);
            }
    /* In place, already sorted, and nullary. */
    rf_table t, r;
    rand_table(&t, 2, 5000, 50);
    ref_sort(&t, &r);
    rf_prim_sort_unique(&t);
    CU_ASSERT_TRUE(tables_equal(&t, &r));
    rf_prim_sort_unique(&t);
    CU_ASSERT_TRUE(tables_equal(&t, &r));
    rf_table_free(&t);
    rf_table_free(&r);
    rf_table_init(&t, 0);
    t.nrows = 5;
    rf_prim_sort_unique(&t);
    CU_ASSERT_EQUAL(t.nrows, 1);
    rf_table_free(&t);
    /* Negative ints sort as unsigned words (set order). */
    rf_word rows[] = {(rf_word)-1, 5, 0, (rf_word)-1};
    rf_table_from_rows(&t, 1, rows, 4);
    rf_prim_sort_unique(&t);
    CU_ASSERT_EQUAL(t.nrows, 3);
    CU_ASSERT_EQUAL(t.cols[0][0], 0);
    CU_ASSERT_EQUAL(t.cols[0][1], 5);
    CU_ASSERT_EQUAL(t.cols[0][2], (rf_word)-1);
    rf_table_free(&t);
}

/* ---- expressions ---- */
static rf_expr *col(int i) { return rf_expr_leaf(RF_EX_COL, RF_TYPE_INT64, i); }
static rf_expr *cst(int64_t v) { return rf_expr_const(RF_TYPE_INT64, rf_word_from_int(v)); }
static rf_expr *bin(rf_exop op, rf_expr *a, rf_expr *b)
{
    rf_type t = (rf_exop_is_comparison(op) || op == RF_EX_AND || op == RF_EX_OR) ? RF_TYPE_BOOL : RF_TYPE_INT64;
    return rf_expr_binary(op, t, a, b);
}

/* Reference map/join output: row by row with the tree evaluator. Returns
 * false on a fault. */
static bool ref_emit(const rf_word *row, const rf_expr *filter, int nproj, rf_expr **proj,
                     rf_table *out, rf_status *st)
{
    rf_word f = 1, v[8];
    if (filter && !rf_expr_eval(filter, row, &f, st))
        return false;
    if (!f)
        return true;
    for (int j = 0; j < nproj; j++)
        if (!rf_expr_eval(proj[j], row, &v[j], st))
            return false;
    rf_table_append_row(out, v);
    return true;
}

typedef struct codeset {
    rf_code filter;
    rf_code proj[8];
} codeset;

static void to_code(codeset *cs, const rf_expr *filter, int nproj, rf_expr **proj)
{
    rf_code_from_expr(&cs->filter, filter);
    for (int j = 0; j < nproj; j++)
        rf_code_from_expr(&cs->proj[j], proj[j]);
}

static void free_code(codeset *cs, int nproj)
{
    rf_code_free(&cs->filter);
    for (int j = 0; j < nproj; j++)
        rf_code_free(&cs->proj[j]);
}

static void check_map(const rf_table *in, rf_expr *filter, int nproj, rf_expr **proj, bool expect_ok)
{
    rf_table ref;
    rf_table_init(&ref, nproj);
    rf_status rst, st1, st4;
    rf_status_init(&rst);
    rf_status_init(&st1);
    rf_status_init(&st4);
    bool rok = true;
    rf_word row[8];
    for (size_t i = 0; i < in->nrows && rok; i++) {
        for (int c = 0; c < in->arity; c++)
            row[c] = in->cols[c][i];
        rok = ref_emit(row, filter, nproj, proj, &ref, &rst);
    }
    codeset cs;
    to_code(&cs, filter, nproj, proj);
    rf_table g1, g4;
    rf_prims_set_threads(1);
    bool ok1 = rf_prim_map(in, &cs.filter, nproj, cs.proj, &g1, &st1);
    rf_prims_set_threads(4);
    bool ok4 = rf_prim_map(in, &cs.filter, nproj, cs.proj, &g4, &st4);
    CU_ASSERT_EQUAL(rok, expect_ok);
    CU_ASSERT_EQUAL(ok1, rok);
    CU_ASSERT_EQUAL(ok4, rok);
    if (rok && ok1 && ok4) {
        CU_ASSERT_TRUE(tables_equal(&ref, &g1));
        CU_ASSERT_TRUE(tables_equal(&ref, &g4));
    } else if (!ok1 && !ok4) {
        CU_ASSERT_STRING_EQUAL(st1.message, rst.message);
        CU_ASSERT_STRING_EQUAL(st4.message, rst.message);
    }
    free_code(&cs, nproj);
    rf_table_free(&ref);
    rf_table_free(&g1);
    rf_table_free(&g4);
}

static void test_map(void)
{
    for (size_t si = 0; si < NSIZES; si++) {
        rf_table in;
        rand_table(&in, 3, sizes[si], 50);
        /* y != 0 && x / y > 1: safe although y is often 0 */
        rf_expr *f = bin(RF_EX_AND, bin(RF_EX_NE, col(1), cst(0)), bin(RF_EX_GT, bin(RF_EX_DIV, col(0), col(1)), cst(1)));
        rf_expr *p[3] = {col(1), bin(RF_EX_DIV, col(0), col(1)), bin(RF_EX_SUB, cst(7), col(2))};
        check_map(&in, f, 3, p, true);
        /* || short-circuits too */
        rf_expr *f2 = bin(RF_EX_OR, bin(RF_EX_EQ, col(1), cst(0)), bin(RF_EX_LT, bin(RF_EX_MOD, col(0), col(1)), cst(3)));
        rf_expr *p2[2] = {col(2), col(0)};
        check_map(&in, f2, 2, p2, true);
        /* The weaver's composed filters: lazy ANDs if(if(a, b, false), c,
         * false) and left-nested ANDs, run by the emitter as a chain of
         * conjuncts; the division is reached only where y != 0. */
        rf_expr *lz = rf_expr_ternary(
            RF_EX_IF, RF_TYPE_BOOL,
            rf_expr_ternary(RF_EX_IF, RF_TYPE_BOOL, bin(RF_EX_NE, col(1), cst(0)),
                            bin(RF_EX_GT, bin(RF_EX_DIV, col(0), col(1)), cst(1)),
                            rf_expr_const(RF_TYPE_BOOL, 0)),
            bin(RF_EX_LT, col(2), cst(40)), rf_expr_const(RF_TYPE_BOOL, 0));
        check_map(&in, lz, 3, p, true);
        rf_expr *la = bin(RF_EX_AND, bin(RF_EX_AND, bin(RF_EX_NE, col(1), cst(0)), bin(RF_EX_GE, col(2), cst(10))),
                          bin(RF_EX_LT, bin(RF_EX_MOD, col(0), col(1)), cst(2)));
        check_map(&in, la, 3, p, true);
        /* ... and one whose later conjunct faults on a row the earlier ones keep */
        if (sizes[si] >= 1000) {
            rf_expr *lf = bin(RF_EX_AND, bin(RF_EX_GE, col(2), cst(0)),
                              bin(RF_EX_GT, bin(RF_EX_DIV, col(0), col(1)), cst(1)));
            check_map(&in, lf, 3, p, false);
            rf_expr_free(lf);
        }
        rf_expr_free(lz);
        rf_expr_free(la);
        /* no filter: pure projection fast path, including a column twice */
        rf_expr *p3[3] = {col(2), col(2), bin(RF_EX_MUL, col(0), cst(-3))};
        check_map(&in, NULL, 3, p3, true);
        /* division by zero is an error when a zero divisor is reached */
        if (sizes[si] >= 1000) {
            rf_expr *f4 = bin(RF_EX_GT, bin(RF_EX_DIV, col(0), col(1)), cst(1));
            rf_expr *p4[1] = {col(0)};
            check_map(&in, f4, 1, p4, false);
            rf_expr_free(f4);
            rf_expr_free(p4[0]);
        }
        rf_expr_free(f);
        rf_expr_free(f2);
        for (int j = 0; j < 3; j++) {
            rf_expr_free(p[j]);
            rf_expr_free(p3[j]);
        }
        rf_expr_free(p2[0]);
        rf_expr_free(p2[1]);
        rf_table_free(&in);
    }
}

static void test_div_zero_message(void)
{
    rf_word rows[] = {4, 2, 5, 0};
    rf_table in, out;
    rf_table_from_rows(&in, 2, rows, 2);
    rf_expr *e = bin(RF_EX_DIV, col(0), col(1));
    rf_code c;
    rf_code_from_expr(&c, e);
    rf_status st;
    rf_status_init(&st);
    CU_ASSERT_FALSE(rf_prim_map(&in, NULL, 1, &c, &out, &st));
    CU_ASSERT_STRING_EQUAL(st.message, "division by zero");
    CU_ASSERT_EQUAL(st.code, RF_EXIT_RUNTIME_ERROR);
    rf_table_free(&out);
    /* The filter excludes the zero row: its projection is never computed. */
    rf_expr *f = bin(RF_EX_NE, col(1), cst(0));
    rf_code fc;
    rf_code_from_expr(&fc, f);
    rf_status_init(&st);
    CU_ASSERT_TRUE(rf_prim_map(&in, &fc, 1, &c, &out, &st));
    CU_ASSERT_EQUAL(out.nrows, 1);
    CU_ASSERT_EQUAL(out.cols[0][0], 2);
    rf_table_free(&out);
    /* rf_code_eval_batch evaluates every row */
    rf_word dst[2];
    rf_status_init(&st);
    CU_ASSERT_FALSE(rf_code_eval_batch(&c, in.cols, 0, 2, dst, &st));
    rf_status_init(&st);
    CU_ASSERT_TRUE(rf_code_eval_batch(&c, in.cols, 0, 1, dst, &st));
    CU_ASSERT_EQUAL(dst[0], 2);
    rf_code_free(&c);
    rf_code_free(&fc);
    rf_expr_free(e);
    rf_expr_free(f);
    rf_table_free(&in);
}

/* ---- join ---- */
static void ref_join(const rf_table *l, const rf_table *r, int nkeys, rf_expr *filter, int nproj,
                     rf_expr **proj, rf_table *out)
{
    rf_table_init(out, nproj);
    rf_status st;
    rf_status_init(&st);
    rf_word row[16];
    for (size_t i = 0; i < l->nrows; i++)
        for (size_t j = 0; j < r->nrows; j++) {
            bool eq = true;
            for (int k = 0; k < nkeys; k++)
                eq = eq && l->cols[k][i] == r->cols[k][j];
            if (!eq)
                continue;
            for (int c = 0; c < l->arity; c++)
                row[c] = l->cols[c][i];
            for (int c = 0; c < r->arity; c++)
                row[l->arity + c] = r->cols[c][j];
            CU_ASSERT_TRUE(ref_emit(row, filter, nproj, proj, out, &st));
        }
}

static void test_join(void)
{
    const size_t jsizes[] = {0, 1, 2, 40, 700, 3000};
    for (int nkeys = 0; nkeys <= 2; nkeys++)
        for (size_t a = 0; a < 6; a++)
            for (size_t b = 0; b < 6; b++) {
                if (nkeys == 0 && jsizes[a] * jsizes[b] > 200000)
                    continue;
                rf_table l0, r0, l, r;
                rand_table(&l0, 2, jsizes[a], nkeys == 2 ? 6 : 200);
                rand_table(&r0, 3, jsizes[b], nkeys == 2 ? 6 : 200);
                rf_prim_sort(&l0, &l);
                rf_prim_sort(&r0, &r);
                for (int variant = 0; variant < 2; variant++) {
                    rf_expr *f = variant ? bin(RF_EX_LT, col(1), col(4)) : NULL;
                    rf_expr *p[2];
                    p[0] = col(1);
                    p[1] = variant ? bin(RF_EX_ADD, col(3), col(4)) : col(4);
                    rf_table ref, g1, g4;
                    ref_join(&l, &r, nkeys, f, 2, p, &ref);
                    codeset cs;
                    to_code(&cs, f, 2, p);
                    rf_status st;
                    rf_status_init(&st);
                    rf_prims_set_threads(1);
                    CU_ASSERT_TRUE(rf_prim_join(&l, &r, nkeys, &cs.filter, 2, cs.proj, &g1, &st));
                    rf_prims_set_threads(4);
                    CU_ASSERT_TRUE(rf_prim_join(&l, &r, nkeys, &cs.filter, 2, cs.proj, &g4, &st));
                    CU_ASSERT_TRUE(tables_equal(&ref, &g1));
                    CU_ASSERT_TRUE(tables_equal(&ref, &g4));
                    free_code(&cs, 2);
                    rf_expr_free(f);
                    rf_expr_free(p[0]);
                    rf_expr_free(p[1]);
                    rf_table_free(&ref);
                    rf_table_free(&g1);
                    rf_table_free(&g4);
                }
                rf_table_free(&l0);
                rf_table_free(&r0);
                rf_table_free(&l);
                rf_table_free(&r);
            }
}

/* A join big enough to be split into key ranges (>= 64K rows). */
static void test_join_parallel(void)
{
    rf_table l0, r0, l, r, g1, g4;
    rand_table(&l0, 2, 200000, 50000);
    rand_table(&r0, 2, 200000, 50000);
    rf_prim_sort(&l0, &l);
    rf_prim_sort(&r0, &r);
    rf_code p[2];
    rf_expr *e0 = col(1), *e1 = col(3);
    rf_code_from_expr(&p[0], e0);
    rf_code_from_expr(&p[1], e1);
    rf_code none = {0, NULL};
    rf_status st;
    rf_status_init(&st);
    rf_prims_set_threads(1);
    CU_ASSERT_TRUE(rf_prim_join(&l, &r, 1, &none, 2, p, &g1, &st));
    rf_prims_set_threads(4);
    CU_ASSERT_TRUE(rf_prim_join(&l, &r, 1, &none, 2, p, &g4, &st));
    CU_ASSERT_TRUE(tables_equal(&g1, &g4));
    /* Count check against a counting merge. */
    size_t expect = 0;
    for (size_t i = 0, j = 0; i < l.nrows && j < r.nrows;) {
        rf_word k = l.cols[0][i];
        if (k < r.cols[0][j]) { i++; continue; }
        if (k > r.cols[0][j]) { j++; continue; }
        size_t ie = i, je = j;
        while (ie < l.nrows && l.cols[0][ie] == k) ie++;
        while (je < r.nrows && r.cols[0][je] == k) je++;
        expect += (ie - i) * (je - j);
        i = ie;
        j = je;
    }
    CU_ASSERT_EQUAL(g1.nrows, expect);
    CU_ASSERT_TRUE(expect > 100000);
    rf_code_free(&p[0]);
    rf_code_free(&p[1]);
    rf_expr_free(e0);
    rf_expr_free(e1);
    rf_table_free(&l0); rf_table_free(&r0); rf_table_free(&l); rf_table_free(&r);
    rf_table_free(&g1); rf_table_free(&g4);
}

/* ---- antijoin, union, difference ---- */
static bool row_in(const rf_table *t, const rf_table *s, size_t i, int k)
{
    for (size_t j = 0; j < t->nrows; j++) {
        bool eq = true;
        for (int c = 0; c < k && eq; c++)
            eq = t->cols[c][j] == s->cols[c][i];
        if (eq)
            return true;
    }
    return false;
}

static void test_setops(void)
{
    const size_t ssizes[] = {0, 1, 3, 500, 2000, 120000};
    for (int arity = 1; arity <= 3; arity++)
        for (size_t a = 0; a < 6; a++)
            for (size_t b = 0; b < 6; b++) {
                uint64_t dom = ssizes[a] > 10000 || ssizes[b] > 10000 ? 400 : 12;
                rf_table a0, b0, A, B;
                rand_table(&a0, arity, ssizes[a], dom);
                rand_table(&b0, arity, ssizes[b], dom);
                rf_prim_sort(&a0, &A);
                rf_prim_sort(&b0, &B);
                bool naive_ok = A.nrows * B.nrows < 5000000;
                /* union: reference = sort(a ++ b) */
                rf_table cat, ref;
                rf_table_init(&cat, arity);
                rf_table_resize(&cat, A.nrows + B.nrows);
                for (int c = 0; c < arity; c++) {
                    if (A.nrows) memcpy(cat.cols[c], A.cols[c], A.nrows * sizeof(rf_word));
                    if (B.nrows) memcpy(cat.cols[c] + A.nrows, B.cols[c], B.nrows * sizeof(rf_word));
                }
                ref_sort(&cat, &ref);
                for (int th = 1; th <= 4; th += 3) {
                    rf_prims_set_threads(th);
                    rf_table u, d, aj;
                    rf_prim_union(&A, &B, &u);
                    CU_ASSERT_TRUE(tables_equal(&u, &ref));
                    rf_prim_difference(&A, &B, &d);
                    rf_prim_antijoin(&A, &B, 1, &aj);
                    if (naive_ok) {
                        rf_table rd, raj;
                        rf_table_init(&rd, arity);
                        rf_table_init(&raj, arity);
                        rf_word row[4];
                        for (size_t i = 0; i < A.nrows; i++) {
                            for (int c = 0; c < arity; c++)
                                row[c] = A.cols[c][i];
                            if (!row_in(&B, &A, i, arity))
                                rf_table_append_row(&rd, row);
                            if (!row_in(&B, &A, i, 1))
                                rf_table_append_row(&raj, row);
                        }
                        CU_ASSERT_TRUE(tables_equal(&d, &rd));
                        CU_ASSERT_TRUE(tables_equal(&aj, &raj));
                        rf_table_free(&rd);
                        rf_table_free(&raj);
                    } else {
                        /* |a - b| + |a ∩ b| = |a|, |a ∪ b| = |b| + |a - b| */
                        CU_ASSERT_EQUAL(u.nrows, B.nrows + d.nrows);
                    }
                    /* keyless antijoin: a if b is empty, else nothing */
                    rf_table k0;
                    rf_prim_antijoin(&A, &B, 0, &k0);
                    CU_ASSERT_EQUAL(k0.nrows, B.nrows ? 0 : A.nrows);
                    rf_table_free(&k0);
                    rf_table_free(&u);
                    rf_table_free(&d);
                    rf_table_free(&aj);
                }
                rf_table_free(&cat);
                rf_table_free(&ref);
                rf_table_free(&a0); rf_table_free(&b0); rf_table_free(&A); rf_table_free(&B);
            }
}

/* ---- dense sets (bitmaps over packed rows) ---- */
static void add_offset(rf_table *t, rf_word off)
{
    for (int c = 0; c < t->arity; c++)
        for (size_t i = 0; i < t->nrows; i++)
            t->cols[c][i] += off;
}

static void test_dense(void)
{
    /* Offsets: small ids, ids near the sign bit, negative ints (huge words). */
    const rf_word offs[] = {0, ((rf_word)1 << 63) - 100, (rf_word)-5000};
    const size_t dsizes[] = {1, 17, 3000, 200000};
    for (int arity = 1; arity <= 3; arity++)
        for (size_t oi = 0; oi < 3; oi++)
            for (size_t si = 0; si < 4; si++) {
                uint64_t dom = arity == 3 ? 60 : 700;
                rf_table a0, b0, c0, A, C, ref, cat;
                rand_table(&a0, arity, dsizes[si], dom);
                rand_table(&b0, arity, dsizes[si] / 2 + 1, dom);
                rand_table(&c0, arity, dsizes[si], dom);
                add_offset(&a0, offs[oi]);
                add_offset(&b0, offs[oi]);
                add_offset(&c0, offs[oi]);
                /* The sort's dense path must agree with the reference. */
                ref_sort(&a0, &A);
                for (int th = 1; th <= 4; th += 3) {
                    rf_table got;
                    rf_prims_set_threads(th);
                    rf_prim_sort(&a0, &got);
                    CU_ASSERT_TRUE(tables_equal(&got, &A));
                    rf_table_free(&got);
                }
                ref_sort(&c0, &C);
                rf_table_init(&cat, arity);
                rf_table_resize(&cat, A.nrows + b0.nrows);
                for (int c = 0; c < arity; c++) {
                    memcpy(cat.cols[c], A.cols[c], A.nrows * sizeof(rf_word));
                    memcpy(cat.cols[c] + A.nrows, b0.cols[c], b0.nrows * sizeof(rf_word));
                }
                ref_sort(&cat, &ref);
                for (int th = 1; th <= 4; th += 3) {
                    rf_prims_set_threads(th);
                    rf_dense *d = rf_dense_new_for(&A, &b0, RF_DENSE_MAX_BITS);
                    CU_ASSERT_PTR_NOT_NULL_FATAL(d);
                    CU_ASSERT_TRUE(rf_dense_insert(d, &A, true));
                    CU_ASSERT_EQUAL(rf_dense_rows(d), A.nrows);
                    rf_table back;
                    rf_dense_to_table(d, &back);
                    CU_ASSERT_TRUE(tables_equal(&back, &A));
                    rf_table_free(&back);
                    /* a − d against the merge difference */
                    rf_table dd, md;
                    rf_dense_difference(&C, d, &dd);
                    rf_prim_difference(&C, &A, &md);
                    CU_ASSERT_TRUE(tables_equal(&dd, &md));
                    rf_table_free(&dd);
                    rf_table_free(&md);
                    /* unsorted insert with duplicates: the union */
                    rf_dense *e = rf_dense_clone(d);
                    CU_ASSERT_TRUE(rf_dense_insert(e, &b0, false));
                    CU_ASSERT_EQUAL(rf_dense_rows(e), ref.nrows);
                    rf_dense_to_table(e, &back);
                    CU_ASSERT_TRUE(tables_equal(&back, &ref));
                    rf_table_free(&back);
                    CU_ASSERT_EQUAL(rf_dense_rows(d), A.nrows); /* clone is separate */
                    /* a row outside the ranges: refused, set unchanged */
                    rf_table out;
                    rf_table_init(&out, arity);
                    rf_word row[3] = {offs[oi] + 5, offs[oi] + 5, offs[oi] + 5};
                    rf_table_append_row(&out, row);
                    row[arity - 1] = offs[oi] + (1u << 20);
                    rf_table_append_row(&out, row);
                    size_t before = rf_dense_rows(e);
                    CU_ASSERT_FALSE(rf_dense_insert(e, &out, false));
                    CU_ASSERT_EQUAL(rf_dense_rows(e), before);
                    CU_ASSERT_FALSE(rf_dense_contains(e, row));
                    rf_word in_row[3] = {ref.cols[0][0], arity > 1 ? ref.cols[1][0] : 0,
                                         arity > 2 ? ref.cols[2][0] : 0};
                    CU_ASSERT_TRUE(rf_dense_contains(e, in_row));
                    /* rows outside the ranges are kept by the difference */
                    rf_dense_difference(&out, e, &dd);
                    CU_ASSERT_TRUE(dd.nrows >= 1);
                    rf_table_free(&dd);
                    rf_table_free(&out);
                    rf_dense_free(e);
                    rf_dense_free(d);
                }
                rf_table_free(&a0); rf_table_free(&b0); rf_table_free(&c0);
                rf_table_free(&A); rf_table_free(&C); rf_table_free(&ref); rf_table_free(&cat);
            }
    /* Too wide for a bitmap: refused. */
    rf_table w;
    rand_table(&w, 2, 100, 0);
    CU_ASSERT_PTR_NULL(rf_dense_new_for(&w, NULL, RF_DENSE_MAX_BITS));
    rf_table_free(&w);
}

/* ---- aggregate ---- */
static void test_aggregate(void)
{
    rf_table in, out;
    rf_status st;
    rf_status_init(&st);
    rf_code none = {0, NULL}, arg;
    rf_expr *e = col(1);
    rf_code_from_expr(&arg, e);
    /* Empty keyless: count -> (0), total/min/max -> nothing. */
    rf_table_init(&in, 2);
    CU_ASSERT_TRUE(rf_prim_aggregate(&in, 0, RF_AGG_COUNT, RF_TYPE_INT64, &none, &out, &st));
    CU_ASSERT_EQUAL(out.arity, 1);
    CU_ASSERT_EQUAL(out.nrows, 1);
    CU_ASSERT_EQUAL(out.cols[0][0], 0);
    rf_table_free(&out);
    for (rf_aggfn fn = RF_AGG_TOTAL; fn <= RF_AGG_MAX; fn++) {
        CU_ASSERT_TRUE(rf_prim_aggregate(&in, 0, fn, RF_TYPE_INT64, &arg, &out, &st));
        CU_ASSERT_EQUAL(out.nrows, 0);
        rf_table_free(&out);
    }
    /* Empty keyed count: no groups, no rows. */
    CU_ASSERT_TRUE(rf_prim_aggregate(&in, 1, RF_AGG_COUNT, RF_TYPE_INT64, &none, &out, &st));
    CU_ASSERT_EQUAL(out.nrows, 0);
    rf_table_free(&out);
    rf_table_free(&in);
    /* Groups with negative values: min/max are signed, not word order. */
    rf_word rows[] = {1, (rf_word)-5, 1, 3, 1, 7, 2, (rf_word)-1, 4, 10, 4, (rf_word)-20};
    rf_table_from_rows(&in, 2, rows, 6);
    rf_prim_sort_unique(&in);
    struct { rf_aggfn fn; int64_t expect[3]; } cases[] = {
        {RF_AGG_COUNT, {3, 1, 2}}, {RF_AGG_TOTAL, {5, -1, -10}},
        {RF_AGG_MIN, {-5, -1, -20}}, {RF_AGG_MAX, {7, -1, 10}},
    };
    for (int i = 0; i < 4; i++) {
        CU_ASSERT_TRUE(rf_prim_aggregate(&in, 1, cases[i].fn, RF_TYPE_INT64,
                                         cases[i].fn == RF_AGG_COUNT ? &none : &arg, &out, &st));
        CU_ASSERT_EQUAL(out.nrows, 3);
        CU_ASSERT_EQUAL(out.arity, 2);
        if (out.nrows == 3)
            for (int g = 0; g < 3; g++) {
                CU_ASSERT_EQUAL(out.cols[0][g], g == 0 ? 1 : g == 1 ? 2 : 4);
                CU_ASSERT_EQUAL(rf_word_to_int(out.cols[1][g]), cases[i].expect[g]);
            }
        rf_table_free(&out);
    }
    /* keyless over all rows */
    CU_ASSERT_TRUE(rf_prim_aggregate(&in, 0, RF_AGG_MIN, RF_TYPE_INT64, &arg, &out, &st));
    CU_ASSERT_EQUAL(out.nrows, 1);
    CU_ASSERT_EQUAL(rf_word_to_int(out.cols[0][0]), -20);
    rf_table_free(&out);
    /* Argument faults propagate. */
    rf_expr *bad = bin(RF_EX_DIV, col(0), bin(RF_EX_SUB, col(0), col(0)));
    rf_code badc;
    rf_code_from_expr(&badc, bad);
    CU_ASSERT_FALSE(rf_prim_aggregate(&in, 1, RF_AGG_TOTAL, RF_TYPE_INT64, &badc, &out, &st));
    CU_ASSERT_STRING_EQUAL(st.message, "division by zero");
    rf_table_free(&out);
    rf_code_free(&badc);
    rf_expr_free(bad);
    /* int32 totals are checked: overflow is a fault, not a wrap */
    rf_word big[] = {0, 2147483647, 0, 1};
    rf_table in2;
    rf_table_from_rows(&in2, 2, big, 2);
    rf_status_init(&st);
    CU_ASSERT_FALSE(rf_prim_aggregate(&in2, 0, RF_AGG_TOTAL, RF_TYPE_INT32, &arg, &out, &st));
    CU_ASSERT_STRING_EQUAL(st.message, "integer overflow: the total 2147483648 does not fit int32");
    CU_ASSERT_EQUAL(out.nrows, 0);
    rf_table_free(&out);
    /* float min uses float order */
    rf_word fl[] = {0, rf_word_from_double(-2.5), 0, rf_word_from_double(1.0), 0, rf_word_from_double(-0.5)};
    rf_table in3;
    rf_table_from_rows(&in3, 2, fl, 3);
    rf_prim_sort_unique(&in3);
    CU_ASSERT_TRUE(rf_prim_aggregate(&in3, 1, RF_AGG_MIN, RF_TYPE_FLOAT64, &arg, &out, &st));
    CU_ASSERT_EQUAL(out.nrows, 1);
    CU_ASSERT_EQUAL(rf_word_to_double(out.cols[1][0]), -2.5);
    rf_table_free(&out);
    CU_ASSERT_TRUE(rf_prim_aggregate(&in3, 1, RF_AGG_MAX, RF_TYPE_FLOAT64, &arg, &out, &st));
    CU_ASSERT_EQUAL(rf_word_to_double(out.cols[1][0]), 1.0);
    rf_table_free(&out);
    rf_table_free(&in2);
    rf_table_free(&in3);
    rf_table_free(&in);
    rf_code_free(&arg);
    rf_expr_free(e);
}

/* ---- several aggregates, avg and count_distinct ---- */
static rf_code typed_col(int i, rf_type t)
{
    rf_expr *e = rf_expr_leaf(RF_EX_COL, t, i);
    rf_code c;
    rf_code_from_expr(&c, e);
    rf_expr_free(e);
    return c;
}

static void test_aggregate_multi(void)
{
    rf_status st;
    rf_status_init(&st);
    rf_table in, out;
    rf_code none = {0, NULL};
    /* 128-bit exact total: two INT64_MAX average to INT64_MAX. */
    rf_word big[] = {0, 1, (rf_word)INT64_MAX, 0, 2, (rf_word)INT64_MAX, 1, 1, (rf_word)-1, 1, 2, (rf_word)-2};
    rf_table_from_rows(&in, 3, big, 4);
    rf_code v = typed_col(2, RF_TYPE_INT64);
    rf_aggfn fa[3] = {RF_AGG_AVG, RF_AGG_COUNT, RF_AGG_COUNT_DISTINCT};
    rf_type ta[3] = {RF_TYPE_FLOAT64, RF_TYPE_INT64, RF_TYPE_INT64};
    rf_code aa[3] = {v, none, v};
    CU_ASSERT_TRUE_FATAL(rf_prim_aggregate_multi(&in, 1, 3, fa, ta, aa, &out, &st));
    CU_ASSERT_EQUAL_FATAL(out.nrows, 2);
    CU_ASSERT_EQUAL(out.arity, 4);
    CU_ASSERT_EQUAL(rf_word_to_double(out.cols[1][0]), 9223372036854775807.0);
    CU_ASSERT_EQUAL(out.cols[2][0], 2);
    CU_ASSERT_EQUAL(out.cols[3][0], 1);   /* one distinct value, two rows */
    CU_ASSERT_EQUAL(rf_word_to_double(out.cols[1][1]), -1.5);
    CU_ASSERT_EQUAL(out.cols[3][1], 2);
    rf_table_free(&out);
    rf_table_free(&in);
    /* decimal[2]: 0.10 and 0.20 -> 0.15; 0.01 and 0.02 -> 0.015 (the
     * doubles nearest to them: one division of the exact total). */
    rf_type d2 = rf_type_decimal(2);
    rf_word dec[] = {0, 10, 0, 20, 1, 1, 1, 2};
    rf_table_from_rows(&in, 2, dec, 4);
    rf_code dv = typed_col(1, d2);
    rf_aggfn fd = RF_AGG_AVG;
    rf_type td = RF_TYPE_FLOAT64;
    CU_ASSERT_TRUE_FATAL(rf_prim_aggregate_multi(&in, 1, 1, &fd, &td, &dv, &out, &st));
    CU_ASSERT_EQUAL_FATAL(out.nrows, 2);
    CU_ASSERT_EQUAL(rf_word_to_double(out.cols[1][0]), 0.15);
    CU_ASSERT_EQUAL(rf_word_to_double(out.cols[1][1]), 0.015);
    rf_table_free(&out);
    rf_table_free(&in);
    /* float64: added in row order (1e16 + 1 + 1 = 1e16), then divided. */
    rf_word fl[] = {0, 1, rf_word_from_double(1e16), 0, 2, rf_word_from_double(1.0), 0, 3,
                    rf_word_from_double(1.0)};
    rf_table_from_rows(&in, 3, fl, 3);
    rf_code fv = typed_col(2, RF_TYPE_FLOAT64);
    rf_aggfn ff[3] = {RF_AGG_AVG, RF_AGG_TOTAL, RF_AGG_COUNT_DISTINCT};
    rf_type tf[3] = {RF_TYPE_FLOAT64, RF_TYPE_FLOAT64, RF_TYPE_INT64};
    rf_code af[3] = {fv, fv, fv};
    CU_ASSERT_TRUE_FATAL(rf_prim_aggregate_multi(&in, 1, 3, ff, tf, af, &out, &st));
    CU_ASSERT_EQUAL(rf_word_to_double(out.cols[1][0]), 3333333333333333.5);
    CU_ASSERT_EQUAL(rf_word_to_double(out.cols[2][0]), 1e16);
    CU_ASSERT_EQUAL(out.cols[3][0], 2);
    rf_table_free(&out);
    /* float64 overflow in avg's sum is total's error. */
    rf_word fo[] = {0, 1, rf_word_from_double(1e308), 0, 2, rf_word_from_double(1e308)};
    rf_table in2;
    rf_table_from_rows(&in2, 3, fo, 2);
    CU_ASSERT_FALSE(rf_prim_aggregate_multi(&in2, 1, 1, ff, tf, af, &out, &st));
    CU_ASSERT_STRING_EQUAL(st.message, "float64 overflow");
    rf_table_free(&out);
    rf_table_free(&in2);
    rf_table_free(&in);
    /* Keyless over nothing: counts give (0, 0); any other aggregate, no row. */
    rf_status_init(&st);
    rf_table_init(&in, 2);
    rf_aggfn fc[2] = {RF_AGG_COUNT_DISTINCT, RF_AGG_COUNT};
    rf_type tc[2] = {RF_TYPE_INT64, RF_TYPE_INT64};
    rf_code ac[2] = {v, none};
    CU_ASSERT_TRUE(rf_prim_aggregate_multi(&in, 0, 2, fc, tc, ac, &out, &st));
    CU_ASSERT_EQUAL_FATAL(out.nrows, 1);
    CU_ASSERT_EQUAL(out.cols[0][0], 0);
    CU_ASSERT_EQUAL(out.cols[1][0], 0);
    rf_table_free(&out);
    rf_aggfn fm[2] = {RF_AGG_COUNT, RF_AGG_MIN};
    rf_code am[2] = {none, v};
    CU_ASSERT_TRUE(rf_prim_aggregate_multi(&in, 0, 2, fm, tc, am, &out, &st));
    CU_ASSERT_EQUAL(out.nrows, 0);
    CU_ASSERT_EQUAL(out.arity, 2);
    rf_table_free(&out);
    /* Keyed over nothing: no group, no row. */
    CU_ASSERT_TRUE(rf_prim_aggregate_multi(&in, 1, 2, fc, tc, ac, &out, &st));
    CU_ASSERT_EQUAL(out.nrows, 0);
    rf_table_free(&out);
    rf_table_free(&in);
    rf_code_free(&v);
    rf_code_free(&dv);
    rf_code_free(&fv);
}

/* ---- MAP and aggregation in one pass (rf_prim_map_reduce) ----
 * Against the kernels one by one: MAP (filter, keys and a computed value),
 * SORT, then the AGG over the sorted rows; one thread and four (pieces
 * whose tables merge), with few groups and with many, and over nothing. */
static void test_map_reduce(void)
{
    rf_status st;
    rf_status_init(&st);
    size_t n = 300000;
    rf_table in;
    rf_table_init(&in, 3);
    rf_table_resize(&in, n);
    uint64_t x = 12345;
    for (size_t i = 0; i < n; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        in.cols[0][i] = i;
        in.cols[1][i] = (x >> 33) % 1000;                    /* value */
        in.cols[2][i] = rf_word_from_int((int64_t)(x >> 40) % 200001 - 100000);
    }
    rf_code id = typed_col(0, RF_TYPE_INT64), v1 = typed_col(1, RF_TYPE_INT64), v2 = typed_col(2, RF_TYPE_INT64);
    for (int many = 0; many < 2; many++) {
        /* keys: v1 mod 7 (few groups) or v1 (1000 groups); filter v1 < 900 */
        rf_expr *key = many ? rf_expr_leaf(RF_EX_COL, RF_TYPE_INT64, 1)
                            : rf_expr_binary(RF_EX_MOD, RF_TYPE_INT64, rf_expr_leaf(RF_EX_COL, RF_TYPE_INT64, 1),
                                             rf_expr_const(RF_TYPE_INT64, 7));
        rf_expr *filter = rf_expr_binary(RF_EX_LT, RF_TYPE_BOOL, rf_expr_leaf(RF_EX_COL, RF_TYPE_INT64, 1),
                                         rf_expr_const(RF_TYPE_INT64, 900));
        rf_expr *prod = rf_expr_binary(RF_EX_MUL, RF_TYPE_INT64, rf_expr_leaf(RF_EX_COL, RF_TYPE_INT64, 2),
                                       rf_expr_const(RF_TYPE_INT64, 3));
        rf_code fc, kc, pc;
        rf_code_from_expr(&fc, filter);
        rf_code_from_expr(&kc, key);
        rf_code_from_expr(&pc, prod);
        /* the MAP: key, id (the rows stay distinct), the product */
        rf_code proj[3] = {kc, id, pc};
        rf_aggfn fns[5] = {RF_AGG_COUNT, RF_AGG_TOTAL, RF_AGG_MIN, RF_AGG_MAX, RF_AGG_AVG};
        rf_type types[5] = {RF_TYPE_INT64, RF_TYPE_INT64, RF_TYPE_INT64, RF_TYPE_INT64, RF_TYPE_FLOAT64};
        rf_code none = {0, NULL};
        rf_code over_map[5] = {none, typed_col(2, RF_TYPE_INT64), typed_col(2, RF_TYPE_INT64),
                               typed_col(1, RF_TYPE_INT64), typed_col(2, RF_TYPE_INT64)};
        rf_code over_row[5] = {none, pc, pc, id, pc}; /* the same values over the input row */
        rf_table made, sorted, want;
        CU_ASSERT_TRUE_FATAL(rf_prim_map(&in, &fc, 3, proj, &made, &st));
        rf_prim_sort(&made, &sorted);
        CU_ASSERT_TRUE_FATAL(rf_prim_aggregate_multi(&sorted, 1, 5, fns, types, over_map, &want, &st));
        CU_ASSERT_EQUAL(want.nrows, many ? 900u : 7u);
        for (int th = 1; th <= 4; th += 3) {
            rf_prims_set_threads(th);
            rf_table got;
            CU_ASSERT_TRUE_FATAL(rf_prim_map_reduce(&in, &fc, 3, proj, 1, 5, fns, types, over_row, &got, &st));
            CU_ASSERT_EQUAL_FATAL(got.nrows, want.nrows);
            CU_ASSERT_EQUAL_FATAL(got.arity, 6);
            for (int c = 0; c < 6; c++)
                for (size_t r = 0; r < got.nrows; r++)
                    CU_ASSERT_EQUAL(got.cols[c][r], want.cols[c][r]);
            rf_table_free(&got);
        }
        /* Nothing passes: keyed, no row; keyless count, one row of 0. */
        rf_expr *never = rf_expr_binary(RF_EX_LT, RF_TYPE_BOOL, rf_expr_leaf(RF_EX_COL, RF_TYPE_INT64, 1),
                                        rf_expr_const(RF_TYPE_INT64, 0));
        rf_code nc;
        rf_code_from_expr(&nc, never);
        rf_table got;
        CU_ASSERT_TRUE(rf_prim_map_reduce(&in, &nc, 3, proj, 1, 5, fns, types, over_row, &got, &st));
        CU_ASSERT_EQUAL(got.nrows, 0);
        rf_table_free(&got);
        CU_ASSERT_TRUE(rf_prim_map_reduce(&in, &nc, 3, proj, 0, 1, fns, types, over_row, &got, &st));
        CU_ASSERT_EQUAL_FATAL(got.nrows, 1);
        CU_ASSERT_EQUAL(got.cols[0][0], 0);
        rf_table_free(&got);
        /* A keyless count over no projection counts every row kept. */
        CU_ASSERT_TRUE(rf_prim_map_reduce(&in, &fc, 0, NULL, 0, 1, fns, types, over_row, &got, &st));
        CU_ASSERT_EQUAL_FATAL(got.nrows, 1);
        CU_ASSERT_EQUAL(got.cols[0][0], made.nrows);
        rf_table_free(&got);
        rf_code_free(&nc);
        rf_expr_free(never);
        for (int a = 1; a < 5; a++)
            rf_code_free(&over_map[a]);
        rf_table_free(&made);
        rf_table_free(&sorted);
        rf_table_free(&want);
        rf_code_free(&fc);
        rf_code_free(&kc);
        rf_code_free(&pc);
        rf_expr_free(key);
        rf_expr_free(filter);
        rf_expr_free(prod);
    }
    /* An exact total out of int64's range fails with its message. */
    rf_table big;
    rf_word rows[] = {0, (rf_word)INT64_MAX, 1, (rf_word)INT64_MAX};
    rf_table_from_rows(&big, 2, rows, 2);
    rf_code b0 = typed_col(0, RF_TYPE_INT64), b1 = typed_col(1, RF_TYPE_INT64);
    rf_aggfn tot = RF_AGG_TOTAL;
    rf_type ti = RF_TYPE_INT64;
    rf_code bp[2] = {b0, b1};
    rf_table got;
    CU_ASSERT_FALSE(rf_prim_map_reduce(&big, NULL, 2, bp, 0, 1, &tot, &ti, &b1, &got, &st));
    CU_ASSERT_PTR_NOT_NULL(strstr(st.message, "total"));
    rf_table_free(&got);
    rf_table_free(&big);
    rf_code_free(&b0);
    rf_code_free(&b1);
    rf_prims_set_threads(1);
    rf_code_free(&id);
    rf_code_free(&v1);
    rf_code_free(&v2);
    rf_table_free(&in);
}

/* The 128-bit sum and its conversion (common/rf_agg_ops.h). */
static void test_sum128(void)
{
    rf_sum128 s = {0, 0};
    rf_sum128_add(&s, -1);
    CU_ASSERT_EQUAL(s.hi, -1);
    CU_ASSERT_EQUAL(s.lo, UINT64_MAX);
    CU_ASSERT_EQUAL(rf_sum128_to_double(s), -1.0);
    rf_sum128_add(&s, 1);
    CU_ASSERT_EQUAL(s.hi, 0);
    CU_ASSERT_EQUAL(s.lo, 0);
    for (int i = 0; i < 4; i++)
        rf_sum128_add(&s, INT64_MIN);
    CU_ASSERT_EQUAL(s.hi, -2);
    CU_ASSERT_EQUAL(s.lo, 0);
    CU_ASSERT_EQUAL(rf_sum128_to_double(s), -36893488147419103232.0);   /* -2^65 */
    CU_ASSERT_EQUAL(rf_avg_exact(s, 4, 0), -9223372036854775808.0);
    /* Rounded once, to nearest, ties to even (as Python's float(int)). */
    rf_sum128 u = {4097, 2};                                 /* 2^65 + 4097 */
    CU_ASSERT_EQUAL(rf_sum128_to_double(u), 36893488147419111424.0);   /* 2^65 + 8192 */
    u.lo = 4096;                                             /* a tie: even */
    CU_ASSERT_EQUAL(rf_sum128_to_double(u), 36893488147419103232.0);
    u.lo = 1;
    u.hi = 1;                                                /* 2^64 + 1 */
    CU_ASSERT_EQUAL(rf_sum128_to_double(u), 18446744073709551616.0);
    rf_sum128 w = {0, 0};                                    /* -(2^65 + 4097) */
    for (int i = 0; i < 4; i++)
        rf_sum128_add(&w, INT64_MIN);
    rf_sum128_add(&w, -4097);
    CU_ASSERT_EQUAL(rf_sum128_to_double(w), -36893488147419111424.0);
    rf_sum128 t = {7, 0};
    CU_ASSERT_EQUAL(rf_avg_exact(t, 2, 1), 0.35);
    CU_ASSERT_EQUAL(rf_avg_float(1.0, 4), 0.25);
}

/* ---- issue 14: tiny deltas against big sorted relations ---- */

/* A sorted table of n rows whose first column is skewed: a third of the
 * rows share key `hot`, the rest spread over [0, dom); duplicates kept
 * out by the sort. */
static void skewed_sorted(rf_table *out, int arity, size_t n, uint64_t dom, rf_word hot)
{
    rf_table t;
    rand_table(&t, arity, n, dom);
    for (size_t i = 0; i < n; i += 3)
        t.cols[0][i] = hot;
    rf_prim_sort(&t, out);
    rf_table_free(&t);
}

/* Sorts of every size around the insertion-sort cut (32 rows), with
 * duplicates, several arities and full 64-bit words, against the
 * reference. */
static void test_sort_tiny(void)
{
    for (int arity = 1; arity <= 3; arity++)
        for (size_t n = 0; n <= 40; n++)
            for (int wide = 0; wide < 2; wide++) {
                rf_table in, ref, got;
                rand_table(&in, arity, n, wide ? 0 : 5);
                if (wide && n > 2)    /* duplicates among full words too */
                    for (int c = 0; c < arity; c++)
                        in.cols[c][n - 1] = in.cols[c][0];
                ref_sort(&in, &ref);
                rf_prim_sort(&in, &got);
                CU_ASSERT_TRUE(tables_equal(&got, &ref));
                rf_table_free(&in);
                rf_table_free(&ref);
                rf_table_free(&got);
            }
}

/* A join of a tiny side (0..60 rows, duplicate keys, keys absent from the
 * big side, the hot key) with a big sorted side (skewed keys) in both
 * orders, direct projections and a filter, threads 1 and 4: the galloping
 * paths (count first, direct write, no pool) against the nested-loop
 * reference. */
static void test_join_tiny_vs_big(void)
{
    const size_t tiny[] = {0, 1, 2, 7, 60};
    rf_table big;
    skewed_sorted(&big, 2, 150000, 60000, 777);
    for (size_t ti = 0; ti < 5; ti++)
        for (int order = 0; order < 2; order++)
            for (int variant = 0; variant < 2; variant++) {
                rf_table t0, small;
                rand_table(&t0, 2, tiny[ti], 61000);  /* some keys beyond the big side's */
                for (size_t i = 0; i + 1 < t0.nrows; i += 4) {
                    t0.cols[0][i] = 777;                 /* the hot key: a big output */
                    t0.cols[0][i + 1] = big.cols[0][(i * 7919) % big.nrows]; /* keys that match */
                }
                rf_prim_sort(&t0, &small);
                const rf_table *l = order ? &big : &small, *r = order ? &small : &big;
                rf_expr *f = variant ? bin(RF_EX_LT, col(1), col(3)) : NULL;
                rf_expr *p[2] = {col(1), col(3)};
                rf_table ref, g1, g4;
                ref_join(l, r, 1, f, 2, p, &ref);
                codeset cs;
                to_code(&cs, f, 2, p);
                rf_status st;
                rf_status_init(&st);
                rf_prims_set_threads(1);
                CU_ASSERT_TRUE(rf_prim_join(l, r, 1, &cs.filter, 2, cs.proj, &g1, &st));
                rf_prims_set_threads(4);
                CU_ASSERT_TRUE(rf_prim_join(l, r, 1, &cs.filter, 2, cs.proj, &g4, &st));
                CU_ASSERT_TRUE(tables_equal(&ref, &g1));
                CU_ASSERT_TRUE(tables_equal(&ref, &g4));
                if (!variant)
                    CU_ASSERT_EQUAL(rf_prim_join_count(l, r, 1), ref.nrows);
                if (tiny[ti] >= 7)
                    CU_ASSERT_TRUE(ref.nrows > 0);
                free_code(&cs, 2);
                rf_expr_free(f);
                rf_expr_free(p[0]);
                rf_expr_free(p[1]);
                rf_table_free(&ref);
                rf_table_free(&g1);
                rf_table_free(&g4);
                rf_table_free(&t0);
                rf_table_free(&small);
            }
    rf_table_free(&big);
}

/* rf_prim_join_probe (Kernel Weaver's probe edge: the left side in any
 * order, each row looked up in the sorted right side) makes the rows
 * rf_prim_join makes of the sorted left side: compared as sets (its rows
 * come in the left side's order), for left sides shuffled, sorted,
 * reversed and with runs of equal keys, against a right side with a hot
 * key, with and without a filter, on 1 and 4 threads; the reference is
 * the merge join of the sorted left side. */
static void test_join_probe(void)
{
    const size_t sizes[] = {0, 1, 50, 5000, 40000};
    rf_table big;
    skewed_sorted(&big, 2, 150000, 60000, 777);
    int cases = 0;
    for (size_t si = 0; si < 5; si++)
        for (int order = 0; order < 3; order++)
            for (int variant = 0; variant < 2; variant++) {
                rf_table t0, sorted;
                rand_table(&t0, 2, sizes[si], 61000);
                for (size_t i = 0; i + 1 < t0.nrows; i += 4) {
                    if (i < 64)
                        t0.cols[0][i] = 777;   /* the hot key, a few times */
                    rf_word key = big.cols[0][(i * 7919) % big.nrows];   /* keys that match */
                    t0.cols[0][i + 1] = key == 777 ? 778 : key;
                }
                rf_prim_sort(&t0, &sorted);
                rf_table probe;   /* sorted's rows in another order */
                rf_table_init(&probe, 2);
                rf_table_resize(&probe, sorted.nrows);
                for (size_t i = 0; i < sorted.nrows; i++) {
                    size_t from = order == 0 ? i : sorted.nrows - 1 - i;
                    for (int c = 0; c < 2; c++)
                        probe.cols[c][i] = sorted.cols[c][from];
                }
                for (size_t i = sorted.nrows; order == 2 && i > 1; i--) {   /* shuffled */
                    size_t j = rnd() % i;
                    for (int c = 0; c < 2; c++) {
                        rf_word w = probe.cols[c][i - 1];
                        probe.cols[c][i - 1] = probe.cols[c][j];
                        probe.cols[c][j] = w;
                    }
                }
                rf_expr *f = variant ? bin(RF_EX_LT, col(1), col(3)) : NULL;
                rf_expr *p[3] = {col(0), col(1), col(3)};
                rf_table ref, g1, g4;
                codeset cs;
                to_code(&cs, f, 3, p);
                rf_status st;
                rf_status_init(&st);
                /* the merge join of the sorted rows (itself checked against
                 * the nested-loop reference above) */
                CU_ASSERT_TRUE(rf_prim_join(&sorted, &big, 1, &cs.filter, 3, cs.proj, &ref, &st));
                rf_prims_set_threads(1);
                CU_ASSERT_TRUE(rf_prim_join_probe(&probe, &big, 1, &cs.filter, 3, cs.proj, &g1, &st));
                rf_prims_set_threads(4);
                CU_ASSERT_TRUE(rf_prim_join_probe(&probe, &big, 1, &cs.filter, 3, cs.proj, &g4, &st));
                CU_ASSERT_EQUAL(g1.nrows, ref.nrows);   /* every pair once, duplicates of l included */
                CU_ASSERT_EQUAL(g4.nrows, ref.nrows);
                rf_prim_sort_unique(&ref);
                rf_prim_sort_unique(&g1);
                rf_prim_sort_unique(&g4);
                CU_ASSERT_TRUE(tables_equal(&ref, &g1));
                CU_ASSERT_TRUE(tables_equal(&ref, &g4));
                if (sizes[si] >= 50)
                    CU_ASSERT_TRUE(ref.nrows > 0);
                cases++;
                free_code(&cs, 3);
                rf_expr_free(f);
                for (int q = 0; q < 3; q++)
                    rf_expr_free(p[q]);
                rf_table_free(&ref);
                rf_table_free(&g1);
                rf_table_free(&g4);
                rf_table_free(&t0);
                rf_table_free(&sorted);
                rf_table_free(&probe);
            }
    rf_table_free(&big);
    CU_ASSERT_EQUAL(cases, 30);
}

/* rf_prim_antijoin_runs: a small a probed into several runs (and a big a
 * merged run by run) equals the naive a − ∪ runs, on the whole row and on
 * the first column, with empty runs, duplicates across runs and skew. */
static void test_antijoin_runs(void)
{
    const size_t asizes[] = {0, 1, 5, 300, 4000, 70000};
    const size_t rsizes[] = {0, 3, 900, 20000, 120000};
    for (size_t ai = 0; ai < 6; ai++)
        for (int nruns = 0; nruns <= 4; nruns++)
            for (int arity = 1; arity <= 2; arity++) {
                uint64_t dom = 3000;
                rf_table a, runs[4];
                const rf_table *rp[4];
                skewed_sorted(&a, arity, asizes[ai], dom, 42);
                for (int q = 0; q < nruns; q++) {
                    skewed_sorted(&runs[q], arity, rsizes[(ai + (size_t)q * 2) % 5], dom, q == 1 ? 42 : 7);
                    rp[q] = &runs[q];
                }
                for (int keys = 1; keys <= arity; keys++) {
                    /* reference: one merge pass per run */
                    rf_table ref, nxt;
                    rf_table_init(&ref, arity);
                    rf_table_copy(&ref, &a);
                    for (int q = 0; q < nruns; q++) {
                        rf_prim_antijoin(&ref, &runs[q], keys, &nxt);
                        rf_table_free(&ref);
                        ref = nxt;
                    }
                    /* and naively where small enough */
                    if (asizes[ai] <= 300) {
                        size_t keep = 0;
                        for (size_t i = 0; i < a.nrows; i++) {
                            bool hit = false;
                            for (int q = 0; q < nruns && !hit; q++)
                                hit = row_in(&runs[q], &a, i, keys);
                            keep += !hit;
                        }
                        CU_ASSERT_EQUAL(ref.nrows, keep);
                    }
                    for (int th = 1; th <= 4; th += 3) {
                        rf_prims_set_threads(th);
                        rf_table got;
                        rf_prim_antijoin_runs(&a, rp, nruns, keys, &got);
                        CU_ASSERT_TRUE(tables_equal(&got, &ref));
                        rf_table_free(&got);
                    }
                    rf_table_free(&ref);
                }
                rf_table_free(&a);
                for (int q = 0; q < nruns; q++)
                    rf_table_free(&runs[q]);
            }
}

/* rf_dense_erase undoes an insert row for row (rows absent or outside the
 * ranges ignored), as the CPU backend's lent bitmaps need. */
static void test_dense_erase(void)
{
    rf_table base0, extra0, base, extra, back, ref;
    rand_table(&base0, 2, 5000, 300);
    rand_table(&extra0, 2, 40, 300);
    rf_prim_sort(&base0, &base);
    rf_prim_sort(&extra0, &extra);
    rf_table added;   /* extra − base: what an insert of extra adds */
    rf_prim_difference(&extra, &base, &added);
    rf_dense *d = rf_dense_new_for(&base, &extra, RF_DENSE_MAX_BITS);
    CU_ASSERT_PTR_NOT_NULL_FATAL(d);
    CU_ASSERT_TRUE(rf_dense_insert(d, &base, true));
    CU_ASSERT_TRUE(rf_dense_insert(d, &extra, true));
    CU_ASSERT_EQUAL(rf_dense_rows(d), base.nrows + added.nrows);
    rf_dense_erase(d, &added);
    rf_word outside[2] = {1000000, 5};
    rf_table far;
    rf_table_from_rows(&far, 2, outside, 1);
    rf_dense_erase(d, &far);      /* outside the ranges: ignored */
    rf_dense_erase(d, &added);    /* already absent: ignored */
    CU_ASSERT_EQUAL(rf_dense_rows(d), base.nrows);
    rf_dense_to_table(d, &back);
    ref_sort(&base, &ref);
    CU_ASSERT_TRUE(tables_equal(&back, &ref));
    rf_dense_free(d);
    rf_table_free(&base0); rf_table_free(&extra0); rf_table_free(&base); rf_table_free(&extra);
    rf_table_free(&added); rf_table_free(&far); rf_table_free(&back); rf_table_free(&ref);
}

/* ---- issue 14 (chain CPU): one search walk, reused outputs ---- */

/* A table of another arity and stale rows, as a recycled output arrives. */
static void dirty_table(rf_table *t, int arity, size_t rows)
{
    rand_table(t, arity, rows, 0);
}

/* rf_prim_join_groups + rf_prim_join_groups_write: the same rows, in the
 * same order, as the nested-loop reference and rf_prim_join, for tiny and
 * big sides in both orders, one and two keys, duplicates and a hot key,
 * more groups than the local room (heap growth), and outputs that arrive
 * fresh, dirty of the same arity, or of another arity. */
static void test_join_groups(void)
{
    const size_t lsizes[] = {0, 1, 3, 40, 500};
    rf_table big;
    skewed_sorted(&big, 2, 20000, 3000, 777);
    for (size_t li = 0; li < 5; li++)
        for (int order = 0; order < 2; order++)
            for (int nkeys = 1; nkeys <= 2; nkeys++) {
                rf_table t0, small;
                rand_table(&t0, 2, lsizes[li], 3100);    /* some keys beyond the big side's */
                for (size_t i = 0; i + 2 < t0.nrows; i += 3) {
                    t0.cols[0][i] = 777;                  /* the hot key */
                    t0.cols[0][i + 1] = big.cols[0][(i * 7919) % big.nrows];
                    t0.cols[1][i + 1] = big.cols[1][(i * 7919) % big.nrows]; /* a two-key match */
                    t0.cols[0][i + 2] = t0.cols[0][i + 1]; /* a duplicate key on the small side */
                }
                rf_prim_sort(&t0, &small);
                const rf_table *l = order ? &big : &small, *r = order ? &small : &big;
                /* projections: a right column, a left one, a key twice */
                rf_expr *p[4] = {col(3), col(1), col(0), col(0)};
                const int projcol[4] = {3, 1, 0, 0};
                for (int nproj = 1; nproj <= 4; nproj += 3) {
                    rf_table ref, via_prim;
                    ref_join(l, r, nkeys, NULL, nproj, p, &ref);
                    codeset cs;
                    to_code(&cs, NULL, nproj, p);
                    rf_status st;
                    rf_status_init(&st);
                    rf_prims_set_threads(2);
                    CU_ASSERT_TRUE(rf_prim_join(l, r, nkeys, &cs.filter, nproj, cs.proj, &via_prim, &st));
                    CU_ASSERT_TRUE(tables_equal(&ref, &via_prim));
                    rf_join_groups g;
                    rf_prim_join_groups(l, r, nkeys, &g);
                    CU_ASSERT_EQUAL(g.rows, ref.nrows);
                    CU_ASSERT_EQUAL(g.rows, rf_prim_join_count(l, r, nkeys));
                    /* (with one key the 40 rows share 14 keys: fewer groups than the local room) */
                    if (lsizes[li] >= 500 || (lsizes[li] >= 40 && nkeys == 2))
                        CU_ASSERT_TRUE(g.n > RF_JOIN_GROUPS_LOCAL && g.heap != NULL);
                    if (lsizes[li] >= 40)
                        CU_ASSERT_TRUE(g.rows > 0);
                    for (int start = 0; start < 3; start++) {
                        rf_table out;
                        if (start == 0)
                            rf_table_init(&out, nproj);
                        else
                            dirty_table(&out, start == 1 ? nproj : nproj + 1, 50);
                        rf_prim_join_groups_write(l, r, &g, nproj, projcol, &out);
                        CU_ASSERT_TRUE(tables_equal(&ref, &out));
                        rf_table_free(&out);
                    }
                    rf_join_groups_free(&g);
                    free_code(&cs, nproj);
                    rf_table_free(&ref);
                    rf_table_free(&via_prim);
                }
                for (int q = 0; q < 4; q++)
                    rf_expr_free(p[q]);
                rf_table_free(&t0);
                rf_table_free(&small);
            }
    /* a cross product (no keys) is one group of everything */
    rf_table a, b;
    rand_table(&a, 1, 3, 10);
    rand_table(&b, 1, 4, 10);
    rf_join_groups g;
    rf_prim_join_groups(&a, &b, 0, &g);
    CU_ASSERT_EQUAL(g.rows, 12);
    const int pc[2] = {0, 1};
    rf_table out;
    rf_table_init(&out, 2);
    rf_prim_join_groups_write(&a, &b, &g, 2, pc, &out);
    CU_ASSERT_EQUAL(out.nrows, 12);
    CU_ASSERT_EQUAL(out.cols[0][5], a.cols[0][1]);
    CU_ASSERT_EQUAL(out.cols[1][5], b.cols[0][1]);
    rf_join_groups_free(&g);
    rf_table_free(&out);
    rf_table_free(&a);
    rf_table_free(&b);
    rf_table_free(&big);
}

/* rf_prim_sort_unique in place (tiny inputs take an in-place insertion
 * sort): every size around the cut, with duplicates, equals the reference. */
static void test_sort_unique_tiny(void)
{
    for (int arity = 1; arity <= 3; arity++)
        for (size_t n = 0; n <= 40; n++) {
            rf_table t, ref;
            rand_table(&t, arity, n, 4);   /* many duplicates */
            ref_sort(&t, &ref);
            rf_prim_sort_unique(&t);
            CU_ASSERT_TRUE(tables_equal(&t, &ref));
            rf_table_free(&t);
            rf_table_free(&ref);
        }
}

/* The _into variants (outputs whose storage is reused) give exactly the
 * rows of the fresh ones from dirty outputs of the same and another arity;
 * the probe of runs covering disjoint ranges (an LSM over a chain's reach:
 * rows past a run's end, before its cursor, inside it) equals the merge
 * reference. */
static void test_outputs_reused(void)
{
    /* runs over disjoint ranges, like a chain's reach: [0,64), [64,96), ... */
    rf_table runs[5];
    const rf_table *rp[5];
    size_t lo = 0, len = 64;
    for (int q = 0; q < 5; q++) {
        rf_table_init(&runs[q], 1);
        rf_table_resize(&runs[q], len);
        for (size_t i = 0; i < len; i++)
            runs[q].cols[0][i] = (rf_word)(lo + 2 * i); /* even values only: odd ones fall inside but absent */
        rp[q] = &runs[q];
        lo += 2 * len;
        len = len / 2 > 1 ? len / 2 : 1;
    }
    for (size_t n = 0; n <= 40; n++) {
        rf_table raw, a;
        rand_table(&raw, 1, n, lo + 8);
        rf_prim_sort(&raw, &a);
        rf_table ref, nxt;
        rf_table_init(&ref, 1);
        rf_table_copy(&ref, &a);
        for (int q = 0; q < 5; q++) {
            rf_prim_antijoin(&ref, &runs[q], 1, &nxt);
            rf_table_free(&ref);
            ref = nxt;
        }
        size_t odd_or_beyond = 0;
        for (size_t i = 0; i < a.nrows; i++)
            odd_or_beyond += (a.cols[0][i] & 1) || a.cols[0][i] >= lo;
        CU_ASSERT_EQUAL(ref.nrows, odd_or_beyond);
        for (int start = 0; start < 3; start++) {
            rf_table got, un, un_ref;
            if (start == 0)
                rf_table_init(&got, 1);
            else
                dirty_table(&got, start, 30);
            rf_prim_antijoin_runs_into(&a, rp, 5, 1, &got);
            CU_ASSERT_TRUE(tables_equal(&got, &ref));
            /* union of a with a run, into the same (now used) table */
            rf_prim_union(&a, &runs[1], &un_ref);
            un = got;
            rf_prim_union_into(&a, &runs[1], &un);
            CU_ASSERT_TRUE(tables_equal(&un, &un_ref));
            rf_table_free(&un);
            rf_table_free(&un_ref);
        }
        /* the bitmap difference, into a dirty table */
        rf_dense *d = rf_dense_new_for(&runs[0], &a, RF_DENSE_MAX_BITS);
        CU_ASSERT_PTR_NOT_NULL_FATAL(d);
        CU_ASSERT_TRUE(rf_dense_insert(d, &runs[0], true));
        rf_table dref, dgot;
        rf_prim_difference(&a, &runs[0], &dref);
        dirty_table(&dgot, 2, 30);
        rf_dense_difference_into(&a, d, &dgot);
        CU_ASSERT_TRUE(tables_equal(&dgot, &dref));
        rf_dense_free(d);
        rf_table_free(&dref);
        rf_table_free(&dgot);
        rf_table_free(&ref);
        rf_table_free(&raw);
        rf_table_free(&a);
    }
    for (int q = 0; q < 5; q++)
        rf_table_free(&runs[q]);
}

/* ---- The worker pool (primitives/cpu/threads.c) ----
 * Every piece of every job runs exactly once, whatever the helpers asked
 * for, workers started beyond them (rf_par_prestart), pieces of uneven
 * length (workers that take a job late find it done or gone), and a second
 * thread posting jobs at the same time (its jobs run in the caller). */
enum { POOL_MAX_PIECES = 16 };

typedef struct pool_job {
    atomic_int ran[POOL_MAX_PIECES];
    int slow_piece;
} pool_job;

static void pool_piece(void *ctx, int p)
{
    pool_job *j = ctx;
    if (p == j->slow_piece) {
        struct timespec ts = {0, 20000};
        nanosleep(&ts, NULL);
    }
    atomic_fetch_add(&j->ran[p], 1);
}

static int pool_jobs(int njobs, unsigned seed)
{
    int bad = 0;
    for (int i = 0; i < njobs; i++) {
        seed = seed * 1103515245u + 12345u;
        int n = 1 + (int)((seed >> 8) % POOL_MAX_PIECES);
        pool_job j;
        for (int p = 0; p < POOL_MAX_PIECES; p++)
            atomic_init(&j.ran[p], 0);
        j.slow_piece = i % 7 == 0 ? (int)((seed >> 16) % (unsigned)n) : -1;
        rf_par_for(n, pool_piece, &j);
        for (int p = 0; p < POOL_MAX_PIECES; p++)
            bad += atomic_load(&j.ran[p]) != (p < n ? 1 : 0);
    }
    return bad;
}

static void *pool_other_thread(void *arg)
{
    *(int *)arg = pool_jobs(3000, 77);
    return NULL;
}

static void test_pool(void)
{
    rf_par_prestart(8);
    int bad = 0;
    for (int t = 1; t <= 6; t++) {   /* helpers from none to more than the cores */
        rf_prims_set_threads(t);
        bad += pool_jobs(1500, (unsigned)t);
    }
    rf_prims_set_threads(4);
    int other_bad = -1;
    pthread_t th;
    CU_ASSERT_EQUAL_FATAL(pthread_create(&th, NULL, pool_other_thread, &other_bad), 0);
    bad += pool_jobs(3000, 5);
    pthread_join(th, NULL);
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT_EQUAL(other_bad, 0);
    rf_prims_set_threads(1);
}

int main(void)
{
    if (CU_initialize_registry() != CUE_SUCCESS)
        return 1;
    CU_pSuite s = CU_add_suite("primitives", NULL, NULL);
    CU_add_test(s, "sort", test_sort);
    CU_add_test(s, "sort by the first column (rows in second-column order)", test_sort_by_second);
    CU_add_test(s, "map", test_map);
    CU_add_test(s, "division by zero", test_div_zero_message);
    CU_add_test(s, "join", test_join);
    CU_add_test(s, "join parallel", test_join_parallel);
    CU_add_test(s, "set operations", test_setops);
    CU_add_test(s, "aggregate", test_aggregate);
    CU_add_test(s, "aggregate: several, avg, count_distinct", test_aggregate_multi);
    CU_add_test(s, "aggregate: 128-bit sums", test_sum128);
    CU_add_test(s, "map and aggregate in one pass", test_map_reduce);
    CU_add_test(s, "dense sets", test_dense);
    CU_add_test(s, "sort: tiny inputs", test_sort_tiny);
    CU_add_test(s, "join: tiny side against a big skewed one", test_join_tiny_vs_big);
    CU_add_test(s, "antijoin against several runs", test_antijoin_runs);
    CU_add_test(s, "join probing with an unsorted left side", test_join_probe);
    CU_add_test(s, "dense sets: erase", test_dense_erase);
    CU_add_test(s, "join: one search walk by key groups", test_join_groups);
    CU_add_test(s, "sort: tiny inputs in place", test_sort_unique_tiny);
    CU_add_test(s, "outputs reused: antijoin of runs, union, bitmap difference", test_outputs_reused);
    CU_add_test(s, "worker pool: every piece once, late and extra workers, two posting threads", test_pool);
    CU_basic_set_mode(CU_BRM_VERBOSE);
    CU_basic_run_tests();
    unsigned failed = CU_get_number_of_failures();
    CU_cleanup_registry();
    return failed ? 1 : 0;
}
