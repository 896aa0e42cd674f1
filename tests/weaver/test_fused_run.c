/* Fused groups run on the CPU backend (cpu_run_fused): a chain across
 * strata and a group of two outputs run as one kernel each, giving what
 * the unfused kernels give, and on a fault the group runs as its members
 * and reports the error --no-fuse reports. Programs come from source
 * text (front end, planner, lowering, weaver). */
#define _POSIX_C_SOURCE 200809L
#include <CUnit/Basic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend.h"
#include "runtime.h"
#include "weaver.h"

typedef struct outcome {
    bool ok;
    char *out;               /* the printed outputs */
    char *stats;             /* what --stats printed */
    char *error;             /* st.message when !ok */
    rf_run_info info;
    int groups;              /* FUSED kernels in the program run */
} outcome;

static rf_hprogram *lower_text(const char *text)
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
    return h;
}

/* Weaves h (when fuse) and runs it on the CPU backend; frees h. */
static outcome run_program(rf_hprogram *h, bool fuse)
{
    outcome r;
    memset(&r, 0, sizeof r);
    if (fuse) {
        rf_weave_opts o = {.reduce = true, .set = true};   /* as `redfox run` */
        rf_weave_info wi;
        rf_weave(h, &o, &wi);
        r.groups = wi.groups;
    }
    rf_status st;
    rf_status_init(&st);
    bool valid = rf_hir_verify(h, &st);
    if (!valid)
        fprintf(stderr, "\n  %s\n", st.message);
    CU_ASSERT_TRUE_FATAL(valid);
    size_t len = 0, elen = 0;
    FILE *out = open_memstream(&r.out, &len), *err = open_memstream(&r.stats, &elen);
    rf_backend *be = rf_backend_cpu_new(2);
    rf_run_options ro = {.backend = be, .out = out, .err = err, .stats = true};
    r.ok = rf_run_ex(h, &ro, &r.info, &st);
    fclose(out);
    fclose(err);
    r.error = r.ok ? NULL : rf_strdup(st.message);
    be->destroy(be);
    rf_hir_free(h);
    return r;
}

static outcome run_text(const char *text, bool fuse) { return run_program(lower_text(text), fuse); }

static void outcome_free(outcome *r)
{
    free(r->out);
    free(r->stats);
    free(r->error);
}

/* Fused and unfused runs of text agree; the fused run had `groups` groups
 * and ran `as_members` of them as their members. */
static void same_both_ways(const char *text, int groups, size_t as_members)
{
    outcome f = run_text(text, true), u = run_text(text, false);
    CU_ASSERT_EQUAL(f.ok, u.ok);
    CU_ASSERT_STRING_EQUAL(f.out, u.out);
    if (!f.ok && !u.ok)
        CU_ASSERT_STRING_EQUAL(f.error, u.error);
    CU_ASSERT_EQUAL(f.groups, groups);
    CU_ASSERT_EQUAL(f.info.fused_run_as_members, as_members);
    CU_ASSERT_EQUAL(u.info.fused_run_as_members, 0);
    outcome_free(&f);
    outcome_free(&u);
}

/* Thesis pattern (a): three selections in three strata, one composed MAP. */
static void test_chain_across_strata(void)
{
    static const char text[] = "t(id, v) -> int64(id), int64(v).\n"
                               "sel1(id, v) -> int64(id), int64(v).\n"
                               "sel2(id, v) -> int64(id), int64(v).\n"
                               "sel3(id, v) -> int64(id), int64(v).\n"
                               "t(1, 50). t(2, 150). t(3, 250). t(4, 950). t(5, 500). t(6, 899).\n"
                               "@output(sel3).\n"
                               "sel1(id, v) <- t(id, v), v >= 100.\n"
                               "sel2(id, v) <- sel1(id, v), v < 900.\n"
                               "sel3(id, v) <- sel2(id, v), v >= 200.\n";
    outcome f = run_text(text, true);
    CU_ASSERT_TRUE(f.ok);
    CU_ASSERT_STRING_EQUAL(f.out, "# sel3 (3 tuples)\n3\t250\n5\t500\n6\t899\n");
    CU_ASSERT_EQUAL(f.info.fused_run_as_members, 0);
    outcome u = run_text(text, false);
    CU_ASSERT_EQUAL(f.info.kernels_run + 2, u.info.kernels_run);   /* three MAPs became one */
    outcome_free(&f);
    outcome_free(&u);
    same_both_ways(text, 1, 0);
}

/* Thesis pattern (d): two selections of one input in one pass; with a
 * projection that computes (a SORT after its MAP) too. */
static void test_two_outputs(void)
{
    static const char text[] = "t(id, v) -> int64(id), int64(v).\n"
                               "o1(id, v) -> int64(id), int64(v).\n"
                               "o2(id, v) -> int64(id), int64(v).\n"
                               "t(1, 50). t(2, 150). t(3, 250). t(4, 950). t(5, 500).\n"
                               "@output(o1). @output(o2).\n"
                               "o1(id, v) <- t(id, v), v < 300.\n"
                               "o2(id, v) <- t(id, v), v >= 200.\n";
    outcome f = run_text(text, true);
    CU_ASSERT_TRUE(f.ok);
    CU_ASSERT_STRING_EQUAL(f.out, "# o1 (3 tuples)\n1\t50\n2\t150\n3\t250\n"
                                  "# o2 (3 tuples)\n3\t250\n4\t950\n5\t500\n");
    CU_ASSERT_EQUAL(f.info.fused_run_as_members, 0);
    outcome_free(&f);
    same_both_ways(text, 1, 0);
    same_both_ways("t(id, v) -> int64(id), int64(v).\n"
                   "o1(id, v) -> int64(id), int64(v).\n"
                   "o2(v, w) -> int64(v), int64(w).\n"
                   "t(1, 50). t(2, 150). t(3, 250). t(4, 950). t(5, 500).\n"
                   "@output(o1). @output(o2).\n"
                   "o1(id, v) <- t(id, v), v < 300.\n"
                   "o2(v, w) <- t(_, v), v >= 200, w = v * 2.\n",
                   1, 0);
}

/* A fault in a group of two outputs: the members run, one after the
 * other, and the error is that of the first member that fails unfused. */
static void test_two_outputs_fault(void)
{
    static const char second[] = "t(id, v) -> int64(id), int64(v).\n"
                                 "o1(id, v) -> int64(id), int64(v).\n"
                                 "o2(id, v) -> int64(id), int64(v).\n"
                                 "t(1, 50). t(2, 0). t(3, 250).\n"
                                 "@output(o1). @output(o2).\n"
                                 "o1(id, v) <- t(id, v), v < 300.\n"
                                 "o2(id, v) <- t(id, v), 1000 / v > 3.\n";
    same_both_ways(second, 1, 1);
    static const char both[] = "t(id, v) -> int64(id), int64(v).\n"
                               "o1(id, v) -> int64(id), int64(v).\n"
                               "o2(id, v) -> int64(id), int64(v).\n"
                               "t(1, 50). t(2, 0). t(3, 250).\n"
                               "@output(o1). @output(o2).\n"
                               "o1(id, v) <- t(id, v), 100 / v > 1.\n"
                               "o2(id, v) <- t(id, v), 1000 / v > 3.\n";
    outcome f = run_text(both, true);
    CU_ASSERT_FALSE(f.ok);
    CU_ASSERT_TRUE(f.error && strstr(f.error, "t.lql:6:1: error: division by zero"));
    outcome_free(&f);
    same_both_ways(both, 1, 1);
}

/* ---- set gathers: a JOIN and the SORT of its rows ---- */

/* A graph of n vertices and m edges from a fixed LCG, vertex v written as
 * v * scale (a large scale spreads the values too wide for a bitmap). */
typedef struct graph {
    int n, m;
    int *src, *dst;
} graph;

static graph make_graph(int n, int m, unsigned seed)
{
    graph g = {n, m, calloc((size_t)m, sizeof(int)), calloc((size_t)m, sizeof(int))};
    unsigned x = seed;
    for (int i = 0; i < m; i++) {
        x = x * 1103515245u + 12345u;
        g.src[i] = (int)((x >> 8) % (unsigned)n);
        x = x * 1103515245u + 12345u;
        g.dst[i] = (int)((x >> 8) % (unsigned)n);
    }
    return g;
}

static char *graph_program(const graph *g, long scale, const char *rules)
{
    size_t len = 0;
    char *text = NULL;
    FILE *f = open_memstream(&text, &len);
    fputs("edge(x, y) -> int32(x), int32(y).\n", f);
    for (int i = 0; i < g->m; i++)
        fprintf(f, "edge(%ld, %ld).\n", g->src[i] * scale, g->dst[i] * scale);
    fputs(rules, f);
    fclose(f);
    return text;
}

/* The transitive closure by a search from every vertex (the oracle), as
 * redfox prints `path`: sorted by (x, y), scaled. */
static char *closure_output(const graph *g, long scale)
{
    int n = g->n;
    bool *adj = calloc((size_t)n * (size_t)n, 1), *seen = calloc((size_t)n, 1);
    int *stack = calloc((size_t)n + 1, sizeof(int));
    for (int i = 0; i < g->m; i++)
        adj[(size_t)g->src[i] * (size_t)n + (size_t)g->dst[i]] = true;
    size_t len = 0, count = 0;
    char *rows = NULL, *text = NULL;
    FILE *f = open_memstream(&rows, &len);
    for (int x = 0; x < n; x++) {
        memset(seen, 0, (size_t)n);
        int top = 0;
        for (int y = 0; y < n; y++)
            if (adj[(size_t)x * (size_t)n + (size_t)y] && !seen[y]) {
                seen[y] = true;
                stack[top++] = y;
            }
        while (top > 0) {
            int v = stack[--top];
            for (int y = 0; y < n; y++)
                if (adj[(size_t)v * (size_t)n + (size_t)y] && !seen[y]) {
                    seen[y] = true;
                    stack[top++] = y;
                }
        }
        for (int y = 0; y < n; y++)
            if (seen[y]) {
                fprintf(f, "%ld\t%ld\n", x * scale, y * scale);
                count++;
            }
    }
    fclose(f);
    text = rf_sprintf("# path (%zu tuples)\n%s", count, rows);
    free(rows);
    free(adj);
    free(seen);
    free(stack);
    return text;
}

static const char tc_rules[] = "path(x, y) -> int32(x), int32(y).\n"
                               "@output(path).\n"
                               "path(x, y) <- edge(x, y).\n"
                               "path(x, z) <- path(x, y), edge(y, z).\n";

/* How many set gathers the CPU backend ran each way, from --stats. */
static void set_counts(const outcome *r, size_t *dense, size_t *sorted)
{
    const char *line = r->stats ? strstr(r->stats, "cpu: set gathers (JOIN -> SORT): ") : NULL;
    *dense = *sorted = (size_t)-1;
    if (line)
        CU_ASSERT_EQUAL(sscanf(line, "cpu: set gathers (JOIN -> SORT): %zu joined and sorted in one pass through "
                                     "a bitmap, %zu written and sorted", dense, sorted), 2);
}

/* tc in a loop: the group of its JOIN and SORT runs once per iteration,
 * through the bitmap on values of narrow range (the former deferred join)
 * and written and sorted on values spread too wide for one; both give the
 * oracle's closure, as the unfused kernels do. */
static void test_set_gather_tc(void)
{
    graph g = make_graph(160, 260, 7);
    long scales[2] = {1, 13000000};   /* 159 * 13e6 < 2^31 */
    for (int i = 0; i < 2; i++) {
        char *text = graph_program(&g, scales[i], tc_rules), *want = closure_output(&g, scales[i]);
        outcome f = run_text(text, true), u = run_text(text, false);
        CU_ASSERT_TRUE(f.ok && u.ok);
        CU_ASSERT_STRING_EQUAL(f.out, want);
        CU_ASSERT_STRING_EQUAL(u.out, want);
        CU_ASSERT_EQUAL(f.groups, 1);
        CU_ASSERT_EQUAL(f.info.fused_run_as_members, 0);
        CU_ASSERT_TRUE(f.info.loop_iterations > 3);
        CU_ASSERT_EQUAL(f.info.loop_iterations, u.info.loop_iterations);
        size_t dense, sorted, udense, usorted;
        set_counts(&f, &dense, &sorted);
        set_counts(&u, &udense, &usorted);
        /* once per iteration; unfused, never */
        CU_ASSERT_EQUAL(dense + sorted, f.info.loop_iterations);
        CU_ASSERT_TRUE(udense == 0 && usorted == 0);
        if (i == 0) {
            CU_ASSERT_TRUE(dense > 0);   /* the big middle iterations */
        } else {
            CU_ASSERT_EQUAL(dense, 0);
        }
        outcome_free(&f);
        outcome_free(&u);
        free(text);
        free(want);
    }
    free(g.src);
    free(g.dst);
}

/* sg: its first JOIN has a filter (never through the bitmap), the loop's
 * two project their key away (rows repeat, which a set does not mind). */
static void test_set_gather_sg(void)
{
    graph g = make_graph(120, 200, 3);
    char *text = graph_program(&g, 1, "sg(x, y) -> int32(x), int32(y).\n"
                                      "@output(sg).\n"
                                      "sg(x, y) <- edge(p, x), edge(p, y), x != y.\n"
                                      "sg(x, y) <- edge(a, x), sg(a, b), edge(b, y).\n");
    outcome f = run_text(text, true);
    size_t dense, sorted;
    set_counts(&f, &dense, &sorted);
    CU_ASSERT_EQUAL(dense + sorted, 1 + 2 * f.info.loop_iterations);
    CU_ASSERT_TRUE(sorted >= 1);
    CU_ASSERT_TRUE(strstr(f.out, "# sg (") == f.out && strlen(f.out) > 100);
    outcome_free(&f);
    same_both_ways(text, 3, 0);
    free(text);
    free(g.src);
    free(g.dst);
}

/* tc's program with a MAP swapping the columns of the loop's join rows
 * before their SORT (`t := JOIN; m := MAP t; s := SORT m`: the planner
 * makes no such chain today, a join projects what it needs): the set
 * gather then ends a chain of two members, composed into one JOIN. */
static rf_hprogram *tc_with_swap(const char *text)
{
    rf_hprogram *h = lower_text(text);
    for (int b = 0; b < h->nblocks; b++) {
        rf_hblock *hb = &h->blocks[b];
        for (int i = 0; i + 1 < hb->nkernels; i++) {
            if (hb->kernels[i].op != RF_K_JOIN || hb->kernels[i + 1].op != RF_K_SORT ||
                hb->kernels[i + 1].in[0] != hb->kernels[i].out || hb->term != RF_TERM_BRANCH_EMPTY)
                continue;
            int t = hb->kernels[i].out, m = h->nvars;
            h->vars = rf_realloc(h->vars, (size_t)(m + 1) * sizeof *h->vars);
            memset(&h->vars[m], 0, sizeof h->vars[m]);
            h->vars[m].name = rf_strdup("swapped");
            h->vars[m].arity = 2;
            h->vars[m].types = rf_calloc(2, sizeof *h->vars[m].types);
            h->vars[m].types[0] = h->vars[t].types[1];
            h->vars[m].types[1] = h->vars[t].types[0];
            h->vars[m].limit = -1;
            h->nvars++;
            rf_kernel map;
            memset(&map, 0, sizeof map);
            map.op = RF_K_MAP;
            map.out = m;
            map.in[0] = t;
            map.in[1] = -1;
            map.partition = RF_PART_EVEN;
            map.gather = RF_GATHER_COMPACT;
            map.nproj = 2;
            map.proj = rf_calloc(2, sizeof *map.proj);
            for (int j = 0; j < 2; j++) {
                map.proj[j].n = 1;
                map.proj[j].ins = rf_calloc(1, sizeof *map.proj[j].ins);
                map.proj[j].ins[0].op = RF_EX_COL;
                map.proj[j].ins[0].type = map.proj[j].ins[0].arg_type = (uint8_t)h->vars[m].types[j];
                map.proj[j].ins[0].index = 1 - j;
            }
            hb->kernels = rf_realloc(hb->kernels, (size_t)(hb->nkernels + 1) * sizeof *hb->kernels);
            memmove(&hb->kernels[i + 2], &hb->kernels[i + 1], (size_t)(hb->nkernels - i - 1) * sizeof *hb->kernels);
            hb->kernels[i + 1] = map;
            hb->nkernels++;
            hb->kernels[i + 2].in[0] = m;
            rf_hir_liveness(h);
            return h;
        }
    }
    CU_FAIL("no JOIN -> SORT in a loop");
    return h;
}

static void test_set_gather_chain(void)
{
    graph g = make_graph(160, 260, 7);
    char *text = graph_program(&g, 1, tc_rules);
    rf_hprogram *h = tc_with_swap(text);
    rf_weave_opts o = {.reduce = true, .set = true};
    rf_weave_info wi;
    rf_weave(h, &o, &wi);
    CU_ASSERT_EQUAL(wi.sets, 1);
    CU_ASSERT_EQUAL(wi.members, 3);
    rf_unweave(h);
    rf_hir_free(h);
    outcome f = run_program(tc_with_swap(text), true), u = run_program(tc_with_swap(text), false);
    CU_ASSERT_TRUE(f.ok && u.ok);
    CU_ASSERT_STRING_EQUAL(f.out, u.out);
    CU_ASSERT_EQUAL(f.groups, 1);
    CU_ASSERT_EQUAL(f.info.fused_run_as_members, 0);
    CU_ASSERT_TRUE(strlen(f.out) > 1000);
    size_t dense, sorted;
    set_counts(&f, &dense, &sorted);
    CU_ASSERT_TRUE(dense > 0 && dense + sorted == f.info.loop_iterations);
    outcome_free(&f);
    outcome_free(&u);
    free(text);
    free(g.src);
    free(g.dst);
}

/* A JOIN whose projection can overflow, into a SORT: the group fails, its
 * members run and report what --no-fuse reports. */
/* Q21's shapes: a set gather whose JOIN keeps its first input's rows
 * whole, and one (after a probe side's SORT) keeping its second input's:
 * both semi-joins on the CPU, the rows exact; a filter that faults gives
 * the unfused error. */
static void test_set_gather_semijoin(void)
{
    static const char text[] = "supplies(o, s) -> int64(o), int64(s).\n"
                               "odd(o, s) -> int64(o), int64(s).\n"
                               "other(o, s) -> int64(o), int64(s).\n"
                               "other_odd(o, s) -> int64(o), int64(s).\n"
                               "supplies(1, 10). supplies(1, 11). supplies(2, 20). supplies(3, 30).\n"
                               "supplies(3, 31). supplies(3, 32). supplies(4, 40).\n"
                               "@output(other). @output(other_odd).\n"
                               "odd(o, s) <- supplies(o, s), s % 2 = 1.\n"
                               "other(o, s) <- supplies(o, s), supplies(o, t), t != s.\n"
                               "other_odd(o, s) <- supplies(o, s), odd(o, t), t != s.\n";
    outcome f = run_text(text, true);
    CU_ASSERT_TRUE(f.ok);
    CU_ASSERT_STRING_EQUAL(f.out, "# other (5 tuples)\n1\t10\n1\t11\n3\t30\n3\t31\n3\t32\n"
                                  "# other_odd (3 tuples)\n1\t10\n3\t30\n3\t32\n");
    CU_ASSERT_PTR_NOT_NULL(strstr(f.stats, "2 as semi-joins"));
    if (!strstr(f.stats, "2 as semi-joins"))
        fprintf(stderr, "\n%s\n", f.stats);
    outcome_free(&f);
    same_both_ways(text, 2, 0);
    static const char fault[] = "supplies(o, s) -> int64(o), int64(s).\n"
                                "other(o, s) -> int64(o), int64(s).\n"
                                "supplies(1, 10). supplies(1, 11). supplies(2, 20). supplies(2, 21).\n"
                                "@output(other).\n"
                                "other(o, s) <- supplies(o, s), supplies(o, t), 100 / (t - 21) != s.\n";
    outcome e = run_text(fault, true);
    CU_ASSERT_FALSE(e.ok);
    CU_ASSERT_PTR_NOT_NULL(e.error && strstr(e.error, "division by zero"));
    outcome_free(&e);
    same_both_ways(fault, 1, 1);
}

static void test_set_gather_fault(void)
{
    static const char text[] = "a(x, y) -> int32(x), int32(y).\n"
                               "b(x, y) -> int32(x), int32(y).\n"
                               "q(x, w) -> int32(x), int32(w).\n"
                               "a(1, 2). a(2, 3). b(2, 5). b(3, 2000000000).\n"
                               "@output(q).\n"
                               "q(x, w) <- a(x, y), b(y, z), w = z * 2.\n";
    outcome f = run_text(text, true);
    CU_ASSERT_FALSE(f.ok);
    CU_ASSERT_TRUE(f.error && strstr(f.error, "t.lql:6:1: error:"));
    outcome_free(&f);
    same_both_ways(text, 1, 1);
}

int main(void)
{
    if (CU_initialize_registry() != CUE_SUCCESS)
        return 1;
    CU_pSuite s = CU_add_suite("fused groups on the CPU backend", NULL, NULL);
    CU_add_test(s, "a chain across strata", test_chain_across_strata);
    CU_add_test(s, "a group of two outputs", test_two_outputs);
    CU_add_test(s, "a fault in a group of two outputs", test_two_outputs_fault);
    CU_add_test(s, "set gather: tc against its closure", test_set_gather_tc);
    CU_add_test(s, "set gathers: sg", test_set_gather_sg);
    CU_add_test(s, "a set gather ending a chain (JOIN, MAP, SORT)", test_set_gather_chain);
    CU_add_test(s, "a fault in a set gather", test_set_gather_fault);
    CU_add_test(s, "set gathers keeping one input's rows: semi-joins", test_set_gather_semijoin);
    CU_basic_set_mode(CU_BRM_VERBOSE);
    CU_basic_run_tests();
    unsigned failed = CU_get_number_of_failures() + CU_get_number_of_tests_failed();
    CU_cleanup_registry();
    return failed ? 1 : 0;
}
