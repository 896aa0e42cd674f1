/* Out-of-core kernels (runtime/ooc.c): which kernels split into key-range
 * parts and by which input columns, on programs lowered (and woven) as
 * `redfox run` does; and the cutting of host tables into ranges against a
 * row-by-row reference, on uniform, skewed and duplicate-heavy columns.
 * The end-to-end answers with parts are checked by the golden, random and
 * TPC-H suites run with RF_TEST_OOC_PARTS and tests/cli/out_of_core.sh. */
#include <CUnit/Basic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend.h"
#include "ooc.h"
#include "rf_prims.h"
#include "weaver.h"

static rf_hprogram *lower_text(const char *text, bool weave)
{
    rf_diag d;
    rf_diag_init(&d, stderr);
    rf_program *prog = rf_compile_string("t.lql", text, &d);
    CU_ASSERT_PTR_NOT_NULL_FATAL(prog);
    rf_plan_options po = {.optimize = true};
    rf_plan *plan = rf_plan_build(prog, &po);
    rf_hprogram *h = rf_hir_lower(plan);
    rf_plan_free(plan);
    rf_program_free(prog);
    if (weave) {
        rf_weave_opts o = {.reduce = true, .set = true, .probe = true};   /* as `redfox run` */
        rf_weave_info wi;
        rf_weave(h, &o, &wi);
    }
    return h;
}

static int var_named(const rf_hprogram *h, const char *name)
{
    for (int v = 0; v < h->nvars; v++)
        if ((h->vars[v].name && strcmp(h->vars[v].name, name) == 0) ||
            (h->vars[v].pred && strcmp(h->vars[v].pred, name) == 0 && !h->vars[v].name))
            return v;
    return -1;
}

/* The kernel of h that writes variable `out` (the first found, members of
 * a group included when `member`). */
static const rf_kernel *writer(const rf_hprogram *h, const char *out, bool member)
{
    int v = var_named(h, out);
    CU_ASSERT_FATAL(v >= 0);
    for (int b = 0; b < h->nblocks; b++)
        for (int i = 0; i < h->blocks[b].nkernels; i++) {
            const rf_kernel *k = &h->blocks[b].kernels[i];
            if (!member && k->out == v)
                return k;
            for (int m = 0; member && k->op == RF_K_FUSED && m < k->fused->nmembers; m++)
                if (k->fused->members[m].out == v)
                    return &k->fused->members[m];
        }
    CU_FAIL_FATAL("no writer");
    return NULL;
}

/* The column s bounds variable `var` by, at its first position (-3: not read). */
static int col_of(const rf_hprogram *h, const rf_ooc_split *s, const char *var)
{
    int v = var_named(h, var);
    for (int i = 0; i < s->npos; i++)
        if (s->var[i] == v)
            return s->col[i];
    return -3;
}

static const char *g_sg = "edge(x, y) -> int32(x), int32(y).\n"
                          "sg(x, y) -> int32(x), int32(y).\n"
                          "@output(sg).\n"
                          "sg(x, y) <- edge(p, x), edge(p, y), x != y.\n"
                          "sg(x, y) <- edge(a, x), sg(a, b), edge(b, y).\n";

static void test_split_same_generation(void)
{
    rf_hprogram *h = lower_text(g_sg, true);
    rf_ooc_split s;
    const char *why = NULL;
    /* The step's first group: sg.delta(a, b) joined with edge(a, x) makes
     * (b, x), sorted: each part takes the delta's rows whose b lies in its
     * range, and all of edge. */
    const rf_kernel *step = writer(h, "t1.by1", false);
    CU_ASSERT_EQUAL(step->op, RF_K_FUSED);
    CU_ASSERT_TRUE(rf_ooc_split_of(h, step, &s, &why));
    CU_ASSERT_EQUAL(col_of(h, &s, "sg.delta"), 1);
    CU_ASSERT_EQUAL(col_of(h, &s, "edge"), -1);
    /* The second: t1.by1(b, x) with edge(b, y) makes (x, y): bounded by x. */
    const rf_kernel *second = writer(h, "sg.new", false);
    CU_ASSERT_TRUE(rf_ooc_split_of(h, second, &s, &why));
    CU_ASSERT_EQUAL(col_of(h, &s, "t1.by1"), 1);
    CU_ASSERT_EQUAL(col_of(h, &s, "edge"), -1);
    /* Set operations: both sides by their first column. */
    const rf_kernel *diff = writer(h, "t7", false);
    CU_ASSERT_EQUAL(diff->op, RF_K_DIFF);
    CU_ASSERT_TRUE(rf_ooc_split_of(h, diff, &s, &why));
    CU_ASSERT_EQUAL(s.col[0], 0);
    CU_ASSERT_EQUAL(s.col[1], 0);
    const rf_kernel *uni = writer(h, "t8", false);
    CU_ASSERT_TRUE(rf_ooc_split_of(h, uni, &s, &why));
    CU_ASSERT_EQUAL(s.col[0], 0);
    CU_ASSERT_EQUAL(s.col[1], 0);
    /* The base rule joins edge with itself on p and keeps x from the left
     * side: as a group it reads edge bounded and whole, which its members'
     * variables cannot tell apart, so the group does not split ... */
    const rf_kernel *base = writer(h, "t0", false);
    CU_ASSERT_EQUAL(base->op, RF_K_FUSED);
    why = NULL;
    CU_ASSERT_FALSE(rf_ooc_split_of(h, base, &s, &why));
    CU_ASSERT_PTR_NOT_NULL(why);
    CU_ASSERT_PTR_NOT_NULL(why ? strstr(why, "two ways") : NULL);
    /* ... but its JOIN does, by position: left by column 1, right whole. */
    const rf_kernel *join = writer(h, "t2", true);
    CU_ASSERT_EQUAL(join->op, RF_K_JOIN);
    CU_ASSERT_TRUE(rf_ooc_split_of(h, join, &s, &why));
    CU_ASSERT_EQUAL(s.npos, 2);
    CU_ASSERT_EQUAL(s.col[0], 1);
    CU_ASSERT_EQUAL(s.col[1], -1);
    rf_hir_free(h);
}

static void test_split_refusals(void)
{
    const char *text = "edge(x, y) -> int32(x), int32(y).\n"
                       "shifted(x, y) -> int32(x), int32(y).\n"
                       "sums(s, z) -> int32(s), int32(z).\n"
                       "outdeg[x] = n -> int32(x), int64(n).\n"
                       "nedges[] = n -> int64(n).\n"
                       "@output(shifted). @output(sums). @output(outdeg). @output(nedges).\n"
                       "shifted(x + 1, y) <- edge(x, y).\n"
                       "sums(x + y, z) <- edge(x, y), edge(y, z).\n"
                       "three(c) -> int32(c).\n"
                       "@output(three).\n"
                       "three(3) <- edge(_, _), !edge(7, 7).\n"
                       "outdeg[x] = n <- agg<<n = count()>> edge(x, _).\n"
                       "nedges[] = n <- agg<<n = count()>> edge(_, _).\n"
                       "edge(1, 2). edge(1, 3). edge(2, 3).\n";
    rf_hprogram *h = lower_text(text, false);
    rf_ooc_split s;
    const char *why = NULL;
    /* A computed first column comes from no input column: a JOIN's
     * output is then bounded by none of its inputs' ... */
    const rf_kernel *map = NULL, *join = NULL;
    for (int b = 0; b < h->nblocks; b++)
        for (int i = 0; i < h->blocks[b].nkernels; i++) {
            const rf_kernel *k = &h->blocks[b].kernels[i];
            if (k->nproj < 1 || (k->in[0] >= 0 && h->vars[k->in[0]].arity == 0))
                continue;
            if (k->op == RF_K_MAP && rf_code_as_column(&k->proj[0]) < 0 && k->proj[0].ins[0].op != RF_EX_ROWID)
                map = k;
            if (k->op == RF_K_JOIN && rf_code_as_column(&k->proj[0]) < 0)
                join = k;
        }
    CU_ASSERT_FATAL(map != NULL && join != NULL);
    CU_ASSERT_FALSE(rf_ooc_split_of(h, join, &s, &why));
    CU_ASSERT_PTR_NOT_NULL(why ? strstr(why, "computed") : NULL);
    /* ... but a MAP makes its rows one by one into an unsorted output, so
     * its sorted input's first column bounds a share of them (the parts
     * views into it). */
    why = NULL;
    CU_ASSERT_TRUE(rf_ooc_split_of(h, map, &s, &why));
    CU_ASSERT_EQUAL(s.col[0], 0);
    CU_ASSERT_EQUAL(s.var[0], var_named(h, "edge"));
    /* A MAP over a relation of no columns (`three(3) <- ..., !edge(7, 7)`:
     * the constant made from a nullary test) has none to split by. */
    int nullary_maps = 0;
    for (int b = 0; b < h->nblocks; b++)
        for (int i = 0; i < h->blocks[b].nkernels; i++) {
            const rf_kernel *k = &h->blocks[b].kernels[i];
            if (k->op == RF_K_MAP && k->in[0] >= 0 && h->vars[k->in[0]].arity == 0) {
                nullary_maps++;
                CU_ASSERT_FALSE(rf_ooc_split_of(h, k, &s, &why));
            }
        }
    CU_ASSERT_EQUAL(nullary_maps, 1);
    /* Row identities (count bodies) would restart in every part; a keyless
     * aggregate's one row comes from every row. */
    int rowid_maps = 0, keyless = 0;
    for (int b = 0; b < h->nblocks; b++)
        for (int i = 0; i < h->blocks[b].nkernels; i++) {
            const rf_kernel *k = &h->blocks[b].kernels[i];
            why = NULL;
            if (k->op == RF_K_MAP && k->nproj == 2 && k->proj[1].n == 1 && k->proj[1].ins[0].op == RF_EX_ROWID) {
                rowid_maps++;
                CU_ASSERT_FALSE(rf_ooc_split_of(h, k, &s, &why));
                CU_ASSERT_PTR_NOT_NULL(why ? strstr(why, "row positions") : NULL);
            }
            if (k->op == RF_K_AGG && k->nkeys == 0) {
                keyless++;
                CU_ASSERT_FALSE(rf_ooc_split_of(h, k, &s, &why));
            }
            if (k->op == RF_K_AGG && k->nkeys == 1) {   /* grouped: by its key */
                CU_ASSERT_TRUE(rf_ooc_split_of(h, k, &s, &why));
                CU_ASSERT_EQUAL(s.col[0], 0);
            }
        }
    CU_ASSERT_EQUAL(rowid_maps, 1);
    CU_ASSERT_EQUAL(keyless, 1);
    rf_hir_free(h);
}

/* ---- Ranges and cuts ---- */
static uint64_t g_rng = 88172645463325252ull;
static uint64_t next_rand(void)
{
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return g_rng;
}

static int cmp_rows2(const void *a, const void *b)
{
    const rf_word *x = a, *y = b;
    return x[0] != y[0] ? (x[0] < y[0] ? -1 : 1) : x[1] != y[1] ? (x[1] < y[1] ? -1 : 1) : 0;
}

/* A 2-column table of n rows: kind 0 uniform, 1 skewed (90% one value),
 * 2 few values (many duplicates), 3 huge words; sorted by words when sorted. */
static void make_table(rf_table *t, size_t n, int kind, bool sorted)
{
    rf_word *rows = malloc(2 * n * sizeof *rows + 16);
    for (size_t i = 0; i < n; i++) {
        rf_word v = kind == 0 ? next_rand() % 100000
                  : kind == 1 ? (next_rand() % 10 ? 42 : next_rand() % 1000)
                  : kind == 2 ? next_rand() % 5
                              : UINT64_MAX - next_rand() % 3;
        rows[2 * i] = v;
        rows[2 * i + 1] = next_rand() % 1000;
    }
    if (sorted)
        qsort(rows, n, 2 * sizeof *rows, cmp_rows2);
    rf_table_from_rows(t, 2, rows, n);
    free(rows);
}

static void check_cut(const rf_table *t, bool sorted, int n)
{
    rf_ooc_range whole = {0, UINT64_MAX};
    rf_ooc_range ranges[64 + 3];
    int got = rf_ooc_ranges(t, 0, whole, n, ranges);
    CU_ASSERT_TRUE(got >= 1 && got <= (n < 3 ? 3 : n));
    /* consecutive, covering everything, none empty as a range */
    CU_ASSERT_EQUAL(ranges[0].lo, 0);
    CU_ASSERT_EQUAL(ranges[got - 1].hi, UINT64_MAX);
    for (int i = 0; i < got; i++) {
        CU_ASSERT_TRUE(ranges[i].lo <= ranges[i].hi);
        if (i > 0)
            CU_ASSERT_EQUAL(ranges[i].lo, ranges[i - 1].hi + 1);
    }
    rf_table parts[64 + 3];
    bool views;
    rf_ooc_cut(t, 0, sorted, ranges, got, false, parts, &views);
    CU_ASSERT_EQUAL(views, sorted);
    /* Reference: row by row, each row to its range, in order. */
    size_t *at = calloc(got > 0 ? (size_t)got : 1, sizeof *at), total = 0;
    bool same = true;
    for (size_t i = 0; i < t->nrows; i++) {
        int r = 0;
        while (t->cols[0][i] > ranges[r].hi)
            r++;
        size_t j = at[r]++;
        same = same && j < parts[r].nrows && parts[r].cols[0][j] == t->cols[0][i] &&
               parts[r].cols[1][j] == t->cols[1][i];
    }
    for (int r = 0; r < got; r++) {
        same = same && at[r] == parts[r].nrows;
        total += parts[r].nrows;
    }
    CU_ASSERT_TRUE(same);
    CU_ASSERT_EQUAL(total, t->nrows);
    /* Cutting one part in two again covers exactly its rows. */
    for (int r = 0; r < got; r++) {
        rf_ooc_range sub[3];
        int ns = rf_ooc_ranges(&parts[r], 0, ranges[r], 2, sub);
        CU_ASSERT_TRUE(ns >= 1 && ns <= 3);
        CU_ASSERT_EQUAL(sub[0].lo, ranges[r].lo);
        CU_ASSERT_EQUAL(sub[ns - 1].hi, ranges[r].hi);
        bool one_value = true, inside = true;
        for (size_t i = 1; i < parts[r].nrows; i++)
            one_value = one_value && parts[r].cols[0][i] == parts[r].cols[0][0];
        if (ns == 1)   /* only when the part holds one value (or none) */
            CU_ASSERT_TRUE(one_value);
        rf_table sp[3];
        bool sv;
        rf_ooc_cut(&parts[r], 0, sorted, sub, ns, false, sp, &sv);
        size_t n2 = 0;
        for (int i = 0; i < ns; i++) {
            for (size_t j = 0; j < sp[i].nrows; j++)
                inside = inside && sp[i].cols[0][j] >= sub[i].lo && sp[i].cols[0][j] <= sub[i].hi;
            n2 += sp[i].nrows;
        }
        CU_ASSERT_TRUE(inside);
        CU_ASSERT_EQUAL(n2, parts[r].nrows);
        rf_ooc_parts_free(sp, ns, sv);
    }
    rf_ooc_parts_free(parts, got, views);
    free(at);
}

static void test_ranges_and_cuts(void)
{
    const size_t sizes[] = {0, 1, 7, 1000, 300000};
    const int counts[] = {1, 2, 3, 7, 64};
    for (int kind = 0; kind < 4; kind++)
        for (int sorted = 0; sorted < 2; sorted++)
            for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++)
                for (size_t ci = 0; ci < sizeof counts / sizeof *counts; ci++) {
                    rf_table t;
                    make_table(&t, sizes[si], kind, sorted);
                    check_cut(&t, sorted, counts[ci]);
                    rf_table_free(&t);
                }
}

/* Uniform values cut in 8 come out in parts of about equal rows. */
static void test_ranges_balance(void)
{
    rf_table t;
    make_table(&t, 400000, 0, false);
    rf_ooc_range ranges[8 + 3];
    int got = rf_ooc_ranges(&t, 0, (rf_ooc_range){0, UINT64_MAX}, 8, ranges);
    CU_ASSERT_EQUAL(got, 8);
    rf_table parts[11];
    bool views;
    rf_ooc_cut(&t, 0, false, ranges, got, false, parts, &views);
    for (int r = 0; r < got; r++)
        CU_ASSERT_TRUE(parts[r].nrows > 400000 / 8 * 8 / 10 && parts[r].nrows < 400000 / 8 * 12 / 10);
    rf_ooc_parts_free(parts, got, views);
    rf_table_free(&t);
}

/* Tables in a host pool (the test pool: rf_ooc_test_pool_install): made
 * there when asked, kept there as they grow (rows kept), cut in place, and
 * freed through it, however the table is moved; cut copies made there when
 * pooled; heap tables untouched. The test pool's columns are heap blocks
 * offset by 64 bytes, so a column the heap freed would abort here. */
static void test_host_pool(void)
{
    rf_ooc_test_pool_install();
    size_t live0 = rf_ooc_test_pool_live();
    rf_table t;
    rf_table_init(&t, 2);
    rf_table_reserve_pooled(&t, 1000);
    CU_ASSERT_TRUE(rf_host_pool_owns(t.cols[0]) && rf_host_pool_owns(t.cols[1]));
    CU_ASSERT_EQUAL(rf_ooc_test_pool_live(), live0 + 2);
    rf_table_resize(&t, 1000);
    for (size_t i = 0; i < 1000; i++) {
        t.cols[0][i] = i;
        t.cols[1][i] = 7 * i;
    }
    rf_table_reserve(&t, 5000);   /* grown: still pooled, rows kept */
    CU_ASSERT_TRUE(t.cap >= 5000 && rf_host_pool_owns(t.cols[0]) && rf_host_pool_owns(t.cols[1]));
    CU_ASSERT_EQUAL(rf_ooc_test_pool_live(), live0 + 2);
    bool kept = true;
    for (size_t i = 0; i < 1000; i++)
        kept = kept && t.cols[0][i] == i && t.cols[1][i] == 7 * i;
    CU_ASSERT_TRUE(kept);
    rf_table_shrink(&t, 10);   /* (never below nrows) */
    CU_ASSERT_EQUAL(t.cap, 1000);
    CU_ASSERT_TRUE(rf_host_pool_owns(t.cols[0]));
    rf_ooc_range ranges[4 + 3];
    int got = rf_ooc_ranges(&t, 0, (rf_ooc_range){0, UINT64_MAX}, 4, ranges);
    rf_table parts[4 + 3];
    bool views;
    rf_ooc_cut(&t, 0, false, ranges, got, true, parts, &views);
    CU_ASSERT_FALSE(views);
    size_t rows = 0;
    for (int r = 0; r < got; r++) {
        rows += parts[r].nrows;
        CU_ASSERT_TRUE(parts[r].nrows == 0 || rf_host_pool_owns(parts[r].cols[0]));
    }
    CU_ASSERT_EQUAL(rows, 1000);
    rf_ooc_parts_free(parts, got, views);
    rf_table moved;
    rf_table_init(&moved, 2);
    rf_table_move(&moved, &t);   /* freed through the pool from its new owner */
    rf_table_free(&t);
    rf_table_free(&moved);
    CU_ASSERT_EQUAL(rf_ooc_test_pool_live(), live0);
    rf_table h;   /* the heap's, as before */
    rf_table_init(&h, 1);
    rf_table_resize(&h, 100);
    CU_ASSERT_FALSE(rf_host_pool_owns(h.cols[0]));
    rf_table_shrink(&h, 100);
    rf_table_free(&h);
    CU_ASSERT_EQUAL(rf_ooc_test_pool_live(), live0);
}

int main(void)
{
    rf_prims_set_threads(3);
    if (CU_initialize_registry() != CUE_SUCCESS)
        return 1;
    CU_pSuite s = CU_add_suite("ooc", NULL, NULL);
    CU_add_test(s, "same generation: how each kernel splits", test_split_same_generation);
    CU_add_test(s, "computed columns, row identities, keyless aggregates", test_split_refusals);
    CU_add_test(s, "ranges and cuts against a row-by-row reference", test_ranges_and_cuts);
    CU_add_test(s, "ranges balance uniform values", test_ranges_balance);
    CU_add_test(s, "tables in a host pool", test_host_pool);
    CU_basic_set_mode(CU_BRM_VERBOSE);
    CU_basic_run_tests();
    unsigned failed = CU_get_number_of_failures();
    CU_cleanup_registry();
    return failed ? 1 : 0;
}
