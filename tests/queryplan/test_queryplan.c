/* Query planner tests: programs built by hand (tb.h) are planned, verified,
 * and run by a naive interpreter (interp.h); the result relations must be
 * exactly the expected sets, with and without the optimisation passes. */
#include <CUnit/Basic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend.h"
#include "interp.h"
#include "tb.h"

#define ROWS(...) (const int64_t[]){ __VA_ARGS__ }, (int)(sizeof((int64_t[]){ __VA_ARGS__ }) / sizeof(int64_t))
#define NO_ROWS NULL, 0

/* One program planned four ways and run: optimize off, on, off with the
 * passes then applied one by one (verified after each, twice over), and on
 * with every body of several atoms as one multiway join (--join=wcoj). */
enum { NPLANS = 4 };
typedef struct run {
    rf_program *prog;
    rf_plan *plan[NPLANS];
    interp it[NPLANS];
    bool ok;
} run;

static void run_start(run *r, rf_program *prog)
{
    memset(r, 0, sizeof *r);
    r->prog = prog;
    r->ok = true;
    for (int o = 0; o < NPLANS; o++) {
        rf_plan_options opt = { .optimize = o == 1 || o == 3, .join = o == 3 ? RF_JOIN_WCOJ : RF_JOIN_AUTO };
        r->plan[o] = rf_plan_build(prog, &opt);
        rf_status st;
        rf_status_init(&st);
        bool verified = true;
        for (int round = 0; o == 2 && round < 2; round++) {
            bool (*const passes[])(rf_plan *) = { rf_plan_pass_dead_rels, rf_plan_pass_cse,
                                                  rf_plan_pass_pushdown, rf_plan_pass_union_into_empty };
            for (int k = 0; k < 4 && verified; k++) {
                passes[k](r->plan[o]);
                verified = rf_plan_verify(r->plan[o], &st);
                /* A pass reaches its own fixpoint in one run. */
                CU_ASSERT_FALSE(passes[k](r->plan[o]));
            }
        }
        verified = verified && rf_plan_verify(r->plan[o], &st);
        if (!verified) {
            fprintf(stderr, "\nverify (optimize=%d): %s\n", o, st.message);
            rf_plan_print(r->plan[o], stderr);
        }
        CU_ASSERT_TRUE(verified);
        bool ran = interp_run(&r->it[o], r->plan[o], 100000);
        if (!ran)
            fprintf(stderr, "\nrun (optimize=%d): %s\n", o, r->it[o].st.message);
        CU_ASSERT_TRUE(ran);
        r->ok = r->ok && verified && ran;
    }
}

static void run_end(run *r)
{
    for (int o = 0; o < NPLANS; o++) {
        interp_free(&r->it[o]);
        rf_plan_free(r->plan[o]);
    }
    rf_program_free(r->prog);
}

/* The relation `name` holds exactly the given rows, in both plans. */
static void expect_rel(run *r, const char *name, int arity, const int64_t *rows, int nwords)
{
    irel want = { arity, arity ? (size_t)nwords / (size_t)arity : (size_t)nwords, NULL };
    want.rows = rf_malloc(((size_t)nwords + 1) * sizeof *want.rows);
    for (int i = 0; i < nwords; i++)
        want.rows[i] = (rf_word)rows[i];
    irel_normalize(&want);
    for (int o = 0; o < NPLANS && r->ok; o++) {
        const irel *got = interp_rel(&r->it[o], name);
        CU_ASSERT_PTR_NOT_NULL_FATAL(got);
        bool same = irel_equal(got, &want);
        if (!same) {
            fprintf(stderr, "\n%s (optimize=%d): got ", name, o);
            irel_print(got, stderr);
            fprintf(stderr, "  want ");
            irel_print(&want, stderr);
            rf_plan_print(r->plan[o], stderr);
        }
        CU_ASSERT_TRUE(same);
    }
    free(want.rows);
}

static int count_cmds(const rf_plan *p, rf_cmdkind kind)
{
    int n = 0;
    for (int b = 0; b < p->nblocks; b++)
        for (int i = 0; i < p->blocks[b].ncmds; i++)
            n += p->blocks[b].cmds[i].kind == kind;
    return n;
}

static int find_rel(const rf_plan *p, const char *name)
{
    for (int i = 0; i < p->nrels; i++)
        if (strcmp(p->rels[i].name, name) == 0)
            return i;
    return -1;
}

static tb *graph(const int64_t *edges, int nedges)
{
    tb *b = tb_new();
    tb_pred(b, "edge", "ii");
    tb_pred(b, "path", "ii");
    tb_facts(b, "edge", nedges, edges);
    tb_output(b, "path");
    return b;
}

static const int64_t small_edges[] = { 1, 2, 2, 3, 3, 4, 4, 2, 5, 6 };
#define SMALL_PATHS ROWS(1, 2, 1, 3, 1, 4, 2, 2, 2, 3, 2, 4, 3, 2, 3, 3, 3, 4, 4, 2, 4, 3, 4, 4, 5, 6)

static void test_tc_small(void)
{
    tb *b = graph(small_edges, 5);
    tb_rule(b, "path(x, y) :- edge(x, y)");
    tb_rule(b, "path(x, z) :- path(x, y), edge(y, z)");
    tb_stratum(b, "path");
    run r;
    run_start(&r, tb_finish(b));
    expect_rel(&r, "path", 2, SMALL_PATHS);
    /* Semi-naive shape: a delta and a new relation, one loop. */
    CU_ASSERT_TRUE(find_rel(r.plan[1], "path.delta") >= 0);
    CU_ASSERT_TRUE(find_rel(r.plan[1], "path.new") >= 0);
    CU_ASSERT_EQUAL(count_cmds(r.plan[1], RF_CMD_BRANCH_EMPTY), 1);
    CU_ASSERT_EQUAL(count_cmds(r.plan[1], RF_CMD_HALT), 1);
    run_end(&r);
}

static void test_nonlinear(void)
{
    tb *b = graph(small_edges, 5);
    tb_rule(b, "path(x, y) :- edge(x, y)");
    tb_rule(b, "path(x, z) :- path(x, y), path(y, z)");
    tb_stratum(b, "path");
    run r;
    run_start(&r, tb_finish(b));
    expect_rel(&r, "path", 2, SMALL_PATHS);
    /* Two variants: each path atom reads the delta once. */
    const rf_plan *p = r.plan[0];
    int delta = find_rel(p, "path.delta"), joins_on_delta = 0;
    for (int bl = 0; bl < p->nblocks; bl++)
        for (int i = 0; i < p->blocks[bl].ncmds; i++) {
            const rf_plan_cmd *c = &p->blocks[bl].cmds[i];
            if (c->kind == RF_CMD_MAPJOIN && (c->src[0] == delta || c->src[1] == delta))
                joins_on_delta++;
        }
    CU_ASSERT_EQUAL(joins_on_delta, 2);
    run_end(&r);
}

/* Random graphs against Warshall's closure, three rule shapes. */
static void test_tc_random(void)
{
    const char *recursive[] = {
        "path(x, z) :- path(x, y), edge(y, z)",
        "path(x, z) :- edge(x, y), path(y, z)",
        "path(x, z) :- path(x, y), path(y, z)",
        /* the join written as an equality */
        "path(x, z) :- path(x, y), edge(y2, z), y = y2",
        "path(x, z) :- path(x, y), path(y2, z), y2 = y",
    };
    enum { NSHAPES = sizeof recursive / sizeof recursive[0] };
    unsigned seed = 12345;
    for (int trial = 0; trial < 2 * NSHAPES; trial++) {
        enum { N = 9 };
        bool reach[N][N] = { { false } };
        int64_t edges[40];
        int ne = 0;
        for (int k = 0; k < 14; k++) {
            seed = seed * 1103515245u + 12345u;
            int x = (int)((seed >> 8) % N);
            seed = seed * 1103515245u + 12345u;
            int y = (int)((seed >> 8) % N);
            edges[2 * ne] = x;
            edges[2 * ne + 1] = y;
            ne++;
            reach[x][y] = true;
        }
        for (int k = 0; k < N; k++)
            for (int i = 0; i < N; i++)
                for (int j = 0; j < N; j++)
                    reach[i][j] = reach[i][j] || (reach[i][k] && reach[k][j]);
        int64_t want[2 * N * N];
        int nw = 0;
        for (int i = 0; i < N; i++)
            for (int j = 0; j < N; j++)
                if (reach[i][j]) {
                    want[nw++] = i;
                    want[nw++] = j;
                }
        tb *b = graph(edges, ne);
        tb_rule(b, "path(x, y) :- edge(x, y)");
        tb_rule(b, recursive[trial % NSHAPES]);
        tb_stratum(b, "path");
        run r;
        run_start(&r, tb_finish(b));
        expect_rel(&r, "path", 2, want, nw);
        run_end(&r);
    }
}

/* Thesis Listing 3.1, int32 columns; even has an inline fact. */
static void test_even_odd(void)
{
    tb *b = tb_new();
    tb_pred(b, "number", "n");
    tb_pred(b, "next", "nn");
    tb_pred(b, "even", "n");
    tb_pred(b, "odd", "n");
    for (int64_t i = 0; i < 10; i++) {
        tb_facts(b, "number", 1, &i);
        int64_t nx[2] = { i, i + 1 };
        tb_facts(b, "next", 1, nx);
    }
    tb_facts(b, "even", 1, (const int64_t[]){ 0 });
    tb_rule(b, "even(n) :- number(n), next(m, n), odd(m)");
    tb_rule(b, "odd(n) :- next(m, n), even(m)");
    tb_output(b, "even");
    tb_output(b, "odd");
    tb_stratum(b, "even odd");
    run r;
    run_start(&r, tb_finish(b));
    expect_rel(&r, "even", 1, ROWS(0, 2, 4, 6, 8));
    /* next(9, 10) exists, but 9 is not even: no 10 in odd. */
    expect_rel(&r, "odd", 1, ROWS(1, 3, 5, 7, 9));
    run_end(&r);
}

static void test_same_generation(void)
{
    tb *b = tb_new();
    tb_pred(b, "parent", "ii");
    tb_pred(b, "sg", "ii");
    tb_facts(b, "parent", 5, (const int64_t[]){ 2, 1, 3, 1, 4, 2, 5, 2, 6, 3 });
    tb_rule(b, "sg(x, y) :- parent(x, p), parent(y, p), x != y");
    tb_rule(b, "sg(x, y) :- parent(x, xp), sg(xp, yp), parent(y, yp)");
    tb_output(b, "sg");
    tb_stratum(b, "sg");
    run r;
    run_start(&r, tb_finish(b));
    expect_rel(&r, "sg", 2, ROWS(2, 3, 3, 2, 4, 5, 5, 4, 4, 6, 6, 4, 5, 6, 6, 5));
    run_end(&r);
}

static void test_mutual_recursion(void)
{
    tb *b = tb_new();
    tb_pred(b, "e", "ii");
    tb_pred(b, "a", "ii");
    tb_pred(b, "b", "ii");
    tb_facts(b, "e", 4, (const int64_t[]){ 1, 2, 2, 3, 3, 4, 4, 5 });
    tb_rule(b, "a(x, y) :- e(x, y)");
    tb_rule(b, "b(x, z) :- a(x, y), e(y, z)");
    tb_rule(b, "a(x, z) :- b(x, y), e(y, z)");
    tb_output(b, "a");
    tb_output(b, "b");
    tb_stratum(b, "a b");
    run r;
    run_start(&r, tb_finish(b));
    expect_rel(&r, "a", 2, ROWS(1, 2, 2, 3, 3, 4, 4, 5, 1, 4, 2, 5));
    expect_rel(&r, "b", 2, ROWS(1, 3, 2, 4, 3, 5, 1, 5));
    CU_ASSERT_EQUAL(count_cmds(r.plan[1], RF_CMD_BRANCH_EMPTY), 1);
    CU_ASSERT_EQUAL(r.plan[1]->blocks[r.plan[1]->nblocks - 2].cmds[r.plan[1]->blocks[r.plan[1]->nblocks - 2].ncmds - 1].nconds, 2);
    run_end(&r);
}

static void test_negation(void)
{
    tb *b = tb_new();
    tb_pred(b, "node", "i");
    tb_pred(b, "edge", "ii");
    tb_pred(b, "start", "i");
    tb_pred(b, "reach", "i");
    tb_pred(b, "unreach", "i");
    tb_pred(b, "not_to3", "i");
    tb_pred(b, "lonely", "i");
    tb_pred(b, "oneway", "ii");
    tb_facts(b, "node", 7, (const int64_t[]){ 1, 2, 3, 4, 5, 6, 7 });
    tb_facts(b, "edge", 5, (const int64_t[]){ 1, 2, 2, 3, 3, 1, 4, 5, 5, 3 });
    tb_facts(b, "start", 1, (const int64_t[]){ 1 });
    tb_rule(b, "reach(x) :- start(x)");
    tb_rule(b, "reach(y) :- reach(x), edge(x, y)");
    tb_rule(b, "unreach(x) :- node(x), !reach(x)");
    tb_rule(b, "not_to3(x) :- node(x), !edge(x, 3)");
    tb_rule(b, "lonely(x) :- node(x), !edge(x, _), !edge(_, x)");
    tb_rule(b, "oneway(x, y) :- edge(x, y), !edge(y, x), !reach(x)");
    tb_output(b, "unreach");
    tb_output(b, "not_to3");
    tb_output(b, "lonely");
    tb_output(b, "oneway");
    tb_stratum(b, "reach");
    tb_stratum(b, "unreach not_to3 lonely oneway");
    run r;
    run_start(&r, tb_finish(b));
    expect_rel(&r, "unreach", 1, ROWS(4, 5, 6, 7));
    expect_rel(&r, "not_to3", 1, ROWS(1, 3, 4, 6, 7));
    expect_rel(&r, "lonely", 1, ROWS(6, 7));
    expect_rel(&r, "oneway", 2, ROWS(4, 5, 5, 3));
    CU_ASSERT_TRUE(count_cmds(r.plan[1], RF_CMD_ANTIJOIN) >= 5);
    run_end(&r);
}

static void test_constants_repeated(void)
{
    tb *b = tb_new();
    tb_pred(b, "e", "ii");
    tb_pred(b, "t", "iii");
    tb_pred(b, "self", "i");
    tb_pred(b, "from1", "i");
    tb_pred(b, "tx", "ii");
    tb_pred(b, "both", "i");
    tb_facts(b, "e", 6, (const int64_t[]){ 1, 2, 1, 3, 2, 2, 3, 3, 3, 1, 4, -1 });
    tb_facts(b, "t", 5, (const int64_t[]){ 1, 1, 5, 1, 2, 5, 2, 2, 5, 3, 3, 6, 4, 4, 5 });
    tb_rule(b, "self(x) :- e(x, x)");
    tb_rule(b, "from1(y) :- e(1, y)");
    tb_rule(b, "tx(x, y) :- t(x, x, 5), e(x, y)");
    tb_rule(b, "both(x) :- e(x, x), e(x, 1)");
    tb_rule(b, "both(x) :- e(x, -1)");
    tb_output(b, "self");
    tb_output(b, "from1");
    tb_output(b, "tx");
    tb_output(b, "both");
    tb_stratum(b, "self from1 tx both");
    run r;
    run_start(&r, tb_finish(b));
    expect_rel(&r, "self", 1, ROWS(2, 3));
    expect_rel(&r, "from1", 1, ROWS(2, 3));
    expect_rel(&r, "tx", 2, ROWS(1, 2, 1, 3, 2, 2, 4, -1));
    expect_rel(&r, "both", 1, ROWS(3, 4));
    run_end(&r);
}

static void test_arithmetic(void)
{
    tb *b = tb_new();
    tb_pred(b, "num", "i");
    tb_pred(b, "sq", "ii");
    tb_pred(b, "half", "ii");
    tb_pred(b, "succ", "ii");
    tb_pred(b, "shift", "ii");
    tb_pred(b, "safe", "ii");
    tb_facts(b, "num", 7, (const int64_t[]){ 0, 1, 2, 3, 4, 5, 6 });
    tb_rule(b, "sq(x, y) :- num(x), y = x * x, y > 10");
    tb_rule(b, "half(x, h) :- num(x), x % 2 = 0, h = x / 2");
    tb_rule(b, "succ(x, x + 1) :- num(x), x < 3");
    /* An assigned variable used as a join key. */
    tb_rule(b, "shift(x, z) :- num(x), y = x + 2, num(y), z = y * 10");
    /* Short-circuit: the guard protects the division by zero. */
    tb_rule(b, "safe(x, y) :- num(x), num(y), y != 0 && x / y = 2");
    tb_output(b, "sq");
    tb_output(b, "half");
    tb_output(b, "succ");
    tb_output(b, "shift");
    tb_output(b, "safe");
    tb_stratum(b, "sq half succ shift safe");
    run r;
    run_start(&r, tb_finish(b));
    expect_rel(&r, "sq", 2, ROWS(4, 16, 5, 25, 6, 36));
    expect_rel(&r, "half", 2, ROWS(0, 0, 2, 1, 4, 2, 6, 3));
    expect_rel(&r, "succ", 2, ROWS(0, 1, 1, 2, 2, 3));
    expect_rel(&r, "shift", 2, ROWS(0, 20, 1, 30, 2, 40, 3, 50, 4, 60));
    expect_rel(&r, "safe", 2, ROWS(2, 1, 4, 2, 5, 2, 6, 3));
    run_end(&r);
}

static void test_division_by_zero_is_reported(void)
{
    tb *b = tb_new();
    tb_pred(b, "num", "i");
    tb_pred(b, "q", "i");
    tb_facts(b, "num", 2, (const int64_t[]){ 0, 4 });
    tb_rule(b, "q(y) :- num(x), y = 8 / x");
    tb_output(b, "q");
    tb_stratum(b, "q");
    rf_program *prog = tb_finish(b);
    rf_plan *plan = rf_plan_build(prog, NULL);
    interp it;
    CU_ASSERT_FALSE(interp_run(&it, plan, 1000));
    CU_ASSERT_PTR_NOT_NULL(strstr(it.st.message, "division by zero"));
    interp_free(&it);
    rf_plan_free(plan);
    rf_program_free(prog);
}

static void test_aggregation(void)
{
    tb *b = tb_new();
    tb_pred(b, "w", "iii");       /* from, to, cost */
    tb_pred(b, "none", "i");
    tb_pred(b, "outdeg", "ii");
    tb_pred(b, "cost", "ii");
    tb_pred(b, "cheapest", "ii");
    tb_pred(b, "dearest", "ii");
    tb_pred(b, "nedges", "i");
    tb_pred(b, "grand", "i");
    tb_pred(b, "nnone", "i");
    tb_pred(b, "tnone", "i");
    tb_pred(b, "mnone", "i");
    tb_pred(b, "bucket", "ii");
    tb_pred(b, "cost2", "ii");
    tb_facts(b, "w", 6, (const int64_t[]){ 1, 2, 5, 1, 3, 5, 1, 4, -2, 2, 3, 7, 3, 1, 1, 3, 1, 4 });
    tb_agg_rule(b, "outdeg(x, n) :- w(x, y, c)", RF_AGG_COUNT, NULL);
    tb_agg_rule(b, "cost(x, s) :- w(x, y, c)", RF_AGG_TOTAL, "c");
    tb_agg_rule(b, "cheapest(x, m) :- w(x, y, c)", RF_AGG_MIN, "c");
    tb_agg_rule(b, "dearest(x, m) :- w(x, y, c)", RF_AGG_MAX, "c");
    tb_agg_rule(b, "nedges(n) :- w(x, y, c)", RF_AGG_COUNT, NULL);
    tb_agg_rule(b, "grand(s) :- w(x, y, c)", RF_AGG_TOTAL, "c * 2");
    tb_agg_rule(b, "nnone(n) :- none(x)", RF_AGG_COUNT, NULL);
    tb_agg_rule(b, "tnone(n) :- none(x)", RF_AGG_TOTAL, "x");
    tb_agg_rule(b, "mnone(n) :- none(x)", RF_AGG_MAX, "x");
    /* Group key computed from the body. */
    tb_agg_rule(b, "bucket(x % 2, n) :- w(x, y, c)", RF_AGG_COUNT, NULL);
    /* total over distinct (x, y) bindings, the value an assignment. */
    tb_agg_rule(b, "cost2(x, s) :- w(x, y, _), d = y * 100", RF_AGG_TOTAL, "d");
    const char *outs[] = { "outdeg", "cost", "cheapest", "dearest", "nedges", "grand",
                           "nnone", "tnone", "mnone", "bucket", "cost2" };
    for (size_t i = 0; i < sizeof outs / sizeof outs[0]; i++)
        tb_output(b, outs[i]);
    tb_stratum(b, "outdeg cost cheapest dearest nedges grand nnone tnone mnone bucket cost2");
    run r;
    run_start(&r, tb_finish(b));
    expect_rel(&r, "outdeg", 2, ROWS(1, 3, 2, 1, 3, 2));
    /* 1 -> 5 + 5 - 2: equal costs on different bindings both count. */
    expect_rel(&r, "cost", 2, ROWS(1, 8, 2, 7, 3, 5));
    expect_rel(&r, "cheapest", 2, ROWS(1, -2, 2, 7, 3, 1));
    expect_rel(&r, "dearest", 2, ROWS(1, 5, 2, 7, 3, 4));
    expect_rel(&r, "nedges", 1, ROWS(6));
    expect_rel(&r, "grand", 1, ROWS(40));
    expect_rel(&r, "nnone", 1, ROWS(0));
    expect_rel(&r, "tnone", 1, NO_ROWS);
    expect_rel(&r, "mnone", 1, NO_ROWS);
    expect_rel(&r, "bucket", 2, ROWS(0, 1, 1, 5));
    /* 1: y = 2, 3, 4 -> 900; 2: 300; 3: y = 1 (twice, one binding) -> 100 */
    expect_rel(&r, "cost2", 2, ROWS(1, 900, 2, 300, 3, 100));
    CU_ASSERT_EQUAL(count_cmds(r.plan[0], RF_CMD_AGGREGATE), 11);
    run_end(&r);
}

#define F(x) ((int64_t)rf_word_from_double(x))

/* Several aggregates per rule, avg and count_distinct, empty groups. */
static void test_multi_aggregation(void)
{
    tb *b = tb_new();
    tb_pred(b, "w", "iii");       /* from, to, cost */
    tb_pred(b, "none", "i");
    tb_pred(b, "stats", "iiifiii");
    tb_pred(b, "dist", "ii");
    tb_pred(b, "ez", "ii");
    tb_pred(b, "ea", "if");
    tb_pred(b, "ek", "iii");
    tb_pred(b, "two", "iii");
    tb_facts(b, "w", 6, (const int64_t[]){ 1, 2, 5, 1, 3, 5, 1, 4, -2, 2, 3, 7, 3, 1, 1, 3, 1, 4 });
    const rf_aggfn all[6] = { RF_AGG_COUNT, RF_AGG_TOTAL, RF_AGG_AVG, RF_AGG_COUNT_DISTINCT, RF_AGG_MIN,
                              RF_AGG_MAX };
    tb_aggs_rule(b, "stats(x, n, s, a, d, lo, hi) :- w(x, y, c)", 6, all,
                 (const char *const[]){ NULL, "c", "c", "c", "c", "c" });
    /* count_distinct alone ranges over values: y = 1 twice for x = 3. */
    tb_aggs_rule(b, "dist(x, d) :- w(x, y, _)", 1, (const rf_aggfn[]){ RF_AGG_COUNT_DISTINCT },
                 (const char *const[]){ "y" });
    tb_aggs_rule(b, "ez(n, d) :- none(x)", 2, (const rf_aggfn[]){ RF_AGG_COUNT, RF_AGG_COUNT_DISTINCT },
                 (const char *const[]){ NULL, "x" });
    tb_aggs_rule(b, "ea(n, a) :- none(x)", 2, (const rf_aggfn[]){ RF_AGG_COUNT, RF_AGG_AVG },
                 (const char *const[]){ NULL, "x" });
    tb_aggs_rule(b, "ek(x, n, d) :- none(x)", 2, (const rf_aggfn[]){ RF_AGG_COUNT, RF_AGG_COUNT_DISTINCT },
                 (const char *const[]){ NULL, "x" });
    /* Two rules into one predicate: the aggregates land in temporaries
     * that CSE must not share (same source, different aggregates). */
    tb_aggs_rule(b, "two(x, n, t) :- w(x, y, c)", 2, (const rf_aggfn[]){ RF_AGG_COUNT, RF_AGG_TOTAL },
                 (const char *const[]){ NULL, "c" });
    tb_aggs_rule(b, "two(x, n, t) :- w(x, y, c)", 2, (const rf_aggfn[]){ RF_AGG_COUNT, RF_AGG_MAX },
                 (const char *const[]){ NULL, "c" });
    const char *outs[] = { "stats", "dist", "ez", "ea", "ek", "two" };
    for (size_t i = 0; i < sizeof outs / sizeof outs[0]; i++)
        tb_output(b, outs[i]);
    tb_stratum(b, "stats dist ez ea ek two");
    run r;
    run_start(&r, tb_finish(b));
    /* x = 1: costs 5, 5 (two bindings), -2. */
    expect_rel(&r, "stats", 7, ROWS(1, 3, 8, F(8.0 / 3), 2, -2, 5,
                                    2, 1, 7, F(7.0), 1, 7, 7,
                                    3, 2, 5, F(2.5), 2, 1, 4));
    expect_rel(&r, "dist", 2, ROWS(1, 3, 2, 1, 3, 1));
    expect_rel(&r, "ez", 2, ROWS(0, 0));
    expect_rel(&r, "ea", 2, NO_ROWS);
    expect_rel(&r, "ek", 3, NO_ROWS);
    expect_rel(&r, "two", 3, ROWS(1, 3, 8, 1, 3, 5, 2, 1, 7, 3, 2, 5, 3, 2, 4));
    /* one AGGREGATE a rule, all aggregates in it */
    CU_ASSERT_EQUAL(count_cmds(r.plan[0], RF_CMD_AGGREGATE), 7);
    CU_ASSERT_EQUAL(count_cmds(r.plan[1], RF_CMD_AGGREGATE), 7);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    rf_plan_print(r.plan[1], f);
    fclose(f);
    /* Planned, the body keeps x, c and a row identity (rowid). */
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "project ($0, $2, rowid(0))"));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "count(), total($1), avg($1), count_distinct($1), min($1), max($1)"));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "// stats(x, count(), total(c), avg(c), count_distinct(c), min(c), "
                                        "max(c)) <- w(x, y, c)"));
    free(text);
    /* The verifier checks every aggregate. */
    rf_plan_cmd *agg = NULL;
    for (int bl = 0; bl < r.plan[0]->nblocks && !agg; bl++)
        for (int i = 0; i < r.plan[0]->blocks[bl].ncmds; i++)
            if (r.plan[0]->blocks[bl].cmds[i].kind == RF_CMD_AGGREGATE &&
                r.plan[0]->blocks[bl].cmds[i].naggs == 6)
                agg = &r.plan[0]->blocks[bl].cmds[i];
    CU_ASSERT_PTR_NOT_NULL_FATAL(agg);
    rf_status st;
    rf_status_init(&st);
    agg->aggfn[2] = RF_AGG_TOTAL;   /* total into a float64 column */
    CU_ASSERT_FALSE(rf_plan_verify(r.plan[0], &st));
    agg->aggfn[2] = RF_AGG_AVG;
    agg->naggs = 5;                  /* arity no longer keys + aggregates */
    rf_status_init(&st);
    CU_ASSERT_FALSE(rf_plan_verify(r.plan[0], &st));
    CU_ASSERT_PTR_NOT_NULL(strstr(st.message, "with 1 keys and 5 aggregates"));
    agg->naggs = 6;
    rf_status_init(&st);
    CU_ASSERT_TRUE(rf_plan_verify(r.plan[0], &st));
    /* ... and row positions: a MapFilter has one input. */
    rf_expr *rowid = NULL;
    for (int bl = 0; bl < r.plan[1]->nblocks && !rowid; bl++)
        for (int i = 0; i < r.plan[1]->blocks[bl].ncmds && !rowid; i++) {
            rf_plan_cmd *c = &r.plan[1]->blocks[bl].cmds[i];
            for (int k = 0; c->kind == RF_CMD_MAPFILTER && k < c->nproj && !rowid; k++)
                if (c->proj[k]->op == RF_EX_ROWID)
                    rowid = c->proj[k];
        }
    CU_ASSERT_PTR_NOT_NULL_FATAL(rowid);
    rowid->index = 1;
    rf_status_init(&st);
    CU_ASSERT_FALSE(rf_plan_verify(r.plan[1], &st));
    CU_ASSERT_PTR_NOT_NULL(strstr(st.message, "row position of input 1 of 1"));
    rowid->index = 0;
    rf_status_init(&st);
    CU_ASSERT_TRUE(rf_plan_verify(r.plan[1], &st));
    run_end(&r);
}

/* @order / @limit travel from the predicate to its plan relation. */
static void test_output_order_fields(void)
{
    tb *b = graph(small_edges, 5);
    tb_rule(b, "path(x, y) :- edge(x, y)");
    tb_rule(b, "path(x, z) :- path(x, y), edge(y, z)");
    tb_output(b, "path");
    tb_order(b, "path", 2, (const int[]){ 1, 0 }, (const bool[]){ true, false });
    tb_limit(b, "path", 3);
    tb_stratum(b, "path");
    run r;
    run_start(&r, tb_finish(b));
    for (int o = 0; o < NPLANS; o++) {
        const rf_plan *p = r.plan[o];
        for (int i = 0; i < p->nrels; i++) {
            const rf_plan_rel *rel = &p->rels[i];
            if (strcmp(rel->name, "path") != 0) {
                CU_ASSERT_EQUAL(rel->norder, 0);
                CU_ASSERT_EQUAL(rel->limit, -1);
                continue;
            }
            CU_ASSERT_EQUAL_FATAL(rel->norder, 2);
            CU_ASSERT_EQUAL(rel->order_cols[0], 1);
            CU_ASSERT_TRUE(rel->order_desc[0]);
            CU_ASSERT_EQUAL(rel->order_cols[1], 0);
            CU_ASSERT_FALSE(rel->order_desc[1]);
            CU_ASSERT_EQUAL(rel->limit, 3);
        }
    }
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    rf_plan_print(r.plan[1], f);
    fclose(f);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "output  order by $1 desc, $0  limit 3\n"));
    free(text);
    rf_plan *p = r.plan[0];
    int path = -1;
    for (int i = 0; i < p->nrels; i++)
        if (strcmp(p->rels[i].name, "path") == 0)
            path = i;
    CU_ASSERT_FATAL(path >= 0);
    rf_status st;
    rf_status_init(&st);
    p->rels[path].order_cols[1] = 1;   /* named twice */
    CU_ASSERT_FALSE(rf_plan_verify(p, &st));
    p->rels[path].order_cols[1] = 2;   /* out of range */
    rf_status_init(&st);
    CU_ASSERT_FALSE(rf_plan_verify(p, &st));
    p->rels[path].order_cols[1] = 0;
    p->rels[path].limit = -2;
    rf_status_init(&st);
    CU_ASSERT_FALSE(rf_plan_verify(p, &st));
    p->rels[path].limit = 3;
    run_end(&r);
}

/* Aggregating a recursive result in a later stratum. */
static void test_aggregate_over_recursion(void)
{
    tb *b = graph(small_edges, 5);
    tb_pred(b, "nreach", "ii");
    tb_rule(b, "path(x, y) :- edge(x, y)");
    tb_rule(b, "path(x, z) :- path(x, y), edge(y, z)");
    tb_agg_rule(b, "nreach(x, n) :- path(x, y)", RF_AGG_COUNT, NULL);
    tb_output(b, "nreach");
    tb_stratum(b, "path");
    tb_stratum(b, "nreach");
    run r;
    run_start(&r, tb_finish(b));
    expect_rel(&r, "nreach", 2, ROWS(1, 3, 2, 3, 3, 3, 4, 3, 5, 1));
    run_end(&r);
}

static void test_strings_and_cross_product(void)
{
    int64_t alice = (int64_t)rf_str_intern("alice", 5), bob = (int64_t)rf_str_intern("bob", 3);
    int64_t carol = (int64_t)rf_str_intern("carol", 5);
    tb *b = tb_new();
    tb_pred(b, "person", "si");
    tb_pred(b, "color", "i");
    tb_pred(b, "adult", "s");
    tb_pred(b, "combo", "si");
    tb_pred(b, "notbob", "s");
    tb_facts(b, "person", 3, (const int64_t[]){ alice, 30, bob, 12, carol, 40 });
    tb_facts(b, "color", 2, (const int64_t[]){ 7, 8 });
    tb_rule(b, "adult(n) :- person(n, a), a >= 18");
    tb_rule(b, "combo(n, c) :- adult(n), color(c)");
    tb_rule(b, "notbob(n) :- person(n, _), n != \"bob\", n < \"carol\"");
    tb_output(b, "combo");
    tb_output(b, "notbob");
    tb_stratum(b, "adult");
    tb_stratum(b, "combo notbob");
    run r;
    run_start(&r, tb_finish(b));
    expect_rel(&r, "combo", 2, ROWS(alice, 7, alice, 8, carol, 7, carol, 8));
    expect_rel(&r, "notbob", 1, ROWS(alice));
    run_end(&r);
}

static void test_body_without_atoms(void)
{
    tb *b = tb_new();
    tb_pred(b, "num", "i");
    tb_pred(b, "seven", "ii");
    tb_facts(b, "num", 2, (const int64_t[]){ 1, 2 });
    /* Predicates named like the planner's own relations. */
    tb_pred(b, "t0", "i");
    tb_pred(b, "unit", "i");
    tb_rule(b, "seven(x, y) :- x = 7, y = x * 2");
    tb_rule(b, "t0(y) :- num(x), y = x + 1, x > 1");
    tb_rule(b, "unit(x) :- t0(x), num(z), z < x");
    tb_output(b, "seven");
    tb_output(b, "unit");
    tb_stratum(b, "seven t0");
    tb_stratum(b, "unit");
    run r;
    run_start(&r, tb_finish(b));
    expect_rel(&r, "seven", 2, ROWS(7, 14));
    expect_rel(&r, "unit", 1, ROWS(3));
    run_end(&r);
}

/* ---- Passes and plan structure ---- */

static void test_dead_relations(void)
{
    tb *b = graph(small_edges, 5);
    tb_pred(b, "unused_in", "i");
    tb_pred(b, "unused", "ii");
    tb_facts(b, "unused_in", 1, (const int64_t[]){ 1 });
    tb_rule(b, "path(x, y) :- edge(x, y)");
    tb_rule(b, "unused(x, y) :- edge(x, y), unused_in(x)");
    tb_stratum(b, "path unused");
    run r;
    run_start(&r, tb_finish(b));
    expect_rel(&r, "path", 2, ROWS(1, 2, 2, 3, 3, 4, 4, 2, 5, 6));
    CU_ASSERT_TRUE(find_rel(r.plan[0], "unused") >= 0);
    CU_ASSERT_TRUE(find_rel(r.plan[0], "unused_in") >= 0);
    CU_ASSERT_EQUAL(find_rel(r.plan[1], "unused"), -1);
    CU_ASSERT_EQUAL(find_rel(r.plan[1], "unused_in"), -1);
    CU_ASSERT_TRUE(find_rel(r.plan[1], "edge") >= 0);
    CU_ASSERT_EQUAL(count_cmds(r.plan[1], RF_CMD_LOAD), 1);
    run_end(&r);
}

static void test_dead_loop_is_skipped(void)
{
    tb *b = graph(small_edges, 5);
    tb_pred(b, "other", "ii");
    tb_rule(b, "path(x, y) :- edge(x, y)");
    tb_rule(b, "other(x, y) :- edge(x, y)");
    tb_rule(b, "other(x, z) :- other(x, y), edge(y, z)");
    tb_stratum(b, "path");
    tb_stratum(b, "other");
    run r;
    run_start(&r, tb_finish(b));
    expect_rel(&r, "path", 2, ROWS(1, 2, 2, 3, 3, 4, 4, 2, 5, 6));
    CU_ASSERT_EQUAL(find_rel(r.plan[1], "other.delta"), -1);
    CU_ASSERT_EQUAL(count_cmds(r.plan[1], RF_CMD_BRANCH_EMPTY), 0);
    CU_ASSERT_EQUAL(count_cmds(r.plan[1], RF_CMD_MAPJOIN), 0);
    run_end(&r);
}

static int count_mapfilters_of(const rf_plan *p, const char *src)
{
    int rel = find_rel(p, src), n = 0;
    for (int bl = 0; bl < p->nblocks; bl++)
        for (int i = 0; i < p->blocks[bl].ncmds; i++)
            n += p->blocks[bl].cmds[i].kind == RF_CMD_MAPFILTER && p->blocks[bl].cmds[i].src[0] == rel;
    return n;
}

static void test_cse(void)
{
    tb *b = tb_new();
    tb_pred(b, "e", "ii");
    tb_pred(b, "a", "ii");
    tb_pred(b, "c", "i");
    tb_pred(b, "d", "i");
    tb_facts(b, "e", 4, (const int64_t[]){ 1, 2, 1, 3, 2, 3, 3, 1 });
    tb_rule(b, "c(y) :- e(1, y), e(y, 3)");
    tb_rule(b, "d(y) :- e(1, y), e(y, 1)");
    tb_output(b, "c");
    tb_output(b, "d");
    tb_stratum(b, "c d");
    run r;
    run_start(&r, tb_finish(b));
    expect_rel(&r, "c", 1, ROWS(2));
    expect_rel(&r, "d", 1, ROWS(3));
    /* e(1, y) is scanned by both rules; after CSE only once. */
    CU_ASSERT_EQUAL(count_mapfilters_of(r.plan[0], "e"), 4);
    CU_ASSERT_EQUAL(count_mapfilters_of(r.plan[1], "e"), 3);
    run_end(&r);
}

/* Join order: the atom with a constant goes first, and no atom joins
 * without a shared variable while a connected one is available. */
static void test_join_order(void)
{
    tb *b = tb_new();
    tb_pred(b, "r", "ii");
    tb_pred(b, "s", "ii");
    tb_pred(b, "t", "ii");
    tb_pred(b, "q", "ii");
    tb_facts(b, "r", 2, (const int64_t[]){ 1, 2, 5, 6 });
    tb_facts(b, "s", 2, (const int64_t[]){ 2, 3, 6, 7 });
    tb_facts(b, "t", 2, (const int64_t[]){ 3, 9, 7, 9 });
    tb_rule(b, "q(a, d) :- r(a, b), t(c, d), s(b, c), a = 1");
    tb_output(b, "q");
    tb_stratum(b, "q");
    run r;
    run_start(&r, tb_finish(b));
    expect_rel(&r, "q", 2, ROWS(1, 9));
    const rf_plan *p = r.plan[1];
    for (int bl = 0; bl < p->nblocks; bl++)
        for (int i = 0; i < p->blocks[bl].ncmds; i++)
            if (p->blocks[bl].cmds[i].kind == RF_CMD_MAPJOIN)
                CU_ASSERT_TRUE(p->blocks[bl].cmds[i].nkeys > 0);
    run_end(&r);
}

static void test_print(void)
{
    tb *b = graph(small_edges, 5);
    tb_rule(b, "path(x, y) :- edge(x, y)");
    tb_rule(b, "path(x, z) :- path(x, y), edge(y, z), x != 3");
    tb_stratum(b, "path");
    rf_program *prog = tb_finish(b);
    rf_plan *plan = rf_plan_build(prog, NULL);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    rf_plan_print(plan, f);
    fclose(f);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "relations ("));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "path.delta"));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "stratum1.loop:"));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "t0 := MapFilter path.delta filter ($0 != 3) project ($0, $1)"));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "path.new := MapJoin t0, edge on ($1 = $2) project ($0, $3)"));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "// path(x, z) <- path(x, y)@delta, edge(y, z), (x != 3)"));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "if empty(path.delta) goto halt else goto stratum1.loop"));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "path.new := Difference path.new, path"));
    if (getenv("RF_SHOW_PLAN"))
        fputs(text, stderr);
    free(text);
    rf_plan_free(plan);
    rf_program_free(prog);
}

static void test_verify_rejects(void)
{
    tb *b = graph(small_edges, 5);
    tb_rule(b, "path(x, y) :- edge(x, y)");
    tb_rule(b, "path(x, z) :- path(x, y), edge(y, z)");
    tb_stratum(b, "path");
    rf_program *prog = tb_finish(b);
    rf_plan_options opt = { .optimize = false };
    rf_plan *plan = rf_plan_build(prog, &opt);
    rf_status st;
    rf_status_init(&st);
    CU_ASSERT_TRUE(rf_plan_verify(plan, &st));
    /* A projection reading past the join's columns. */
    rf_plan_cmd *join = NULL;
    for (int bl = 0; bl < plan->nblocks && !join; bl++)
        for (int i = 0; i < plan->blocks[bl].ncmds; i++)
            if (plan->blocks[bl].cmds[i].kind == RF_CMD_MAPJOIN)
                join = &plan->blocks[bl].cmds[i];
    CU_ASSERT_PTR_NOT_NULL_FATAL(join);
    int saved = join->proj[0]->index;
    join->proj[0]->index = 4;
    rf_status_init(&st);
    CU_ASSERT_FALSE(rf_plan_verify(plan, &st));
    CU_ASSERT_PTR_NOT_NULL(strstr(st.message, "column $4"));
    join->proj[0]->index = saved;
    /* A key pair out of range. */
    join->rkeys[0] = 7;
    rf_status_init(&st);
    CU_ASSERT_FALSE(rf_plan_verify(plan, &st));
    join->rkeys[0] = 0;
    /* A branch to nowhere. */
    rf_plan_block *last_loop = &plan->blocks[plan->nblocks - 2];
    rf_plan_cmd *br = &last_loop->cmds[last_loop->ncmds - 1];
    CU_ASSERT_EQUAL_FATAL(br->kind, RF_CMD_BRANCH_EMPTY);
    br->target = 99;
    rf_status_init(&st);
    CU_ASSERT_FALSE(rf_plan_verify(plan, &st));
    br->target = plan->nblocks - 1;
    /* A union of relations of different arity. */
    rf_status_init(&st);
    CU_ASSERT_TRUE(rf_plan_verify(plan, &st));
    plan->rels[0].arity = 1;
    rf_status_init(&st);
    CU_ASSERT_FALSE(rf_plan_verify(plan, &st));
    plan->rels[0].arity = 2;
    rf_plan_free(plan);
    rf_program_free(prog);
}

/* Integration with the real front end (the other tests build programs by
 * hand and do not need it). */
static void test_from_source(void)
{
    static const char text[] =
        "edge(x, y) -> int32(x), int32(y).\n"
        "path(x, y) -> int32(x), int32(y).\n"
        "number(n) -> int32(n).\n"
        "even(n) -> int32(n).\n"
        "odd(n) -> int32(n).\n"
        "edge(1, 2). edge(2, 3). edge(3, 4). edge(4, 2). edge(5, 6).\n"
        "number(0). number(1). number(2). number(3). number(4).\n"
        "even(0).\n"
        "@output(path). @output(even). @output(odd).\n"
        "path(x, y) <- edge(x, y).\n"
        "path(x, z) <- path(x, y), edge(y, z).\n"
        "even(n) <- number(n), odd(m), n = m + 1.\n"
        "odd(n) <- number(n), even(m), n = m + 1.\n";
    char *msgs = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&msgs, &len);
    rf_diag diag;
    rf_diag_init(&diag, f);
    rf_program *prog = rf_compile_string("test.lql", text, &diag);
    fclose(f);
    if (!prog)
        fprintf(stderr, "\nfront end: %s\n", msgs);
    free(msgs);
    CU_ASSERT_PTR_NOT_NULL_FATAL(prog);
    run r;
    run_start(&r, prog);
    expect_rel(&r, "path", 2, SMALL_PATHS);
    expect_rel(&r, "even", 1, ROWS(0, 2, 4));
    expect_rel(&r, "odd", 1, ROWS(1, 3));
    /* No functional predicate: no check. */
    for (int o = 0; o < NPLANS; o++)
        CU_ASSERT_EQUAL(count_cmds(r.plan[o], RF_CMD_CHECK_KEYS), 0);
    run_end(&r);
}

static rf_program *compile_text(const char *text)
{
    char *msgs = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&msgs, &len);
    rf_diag diag;
    rf_diag_init(&diag, f);
    rf_program *prog = rf_compile_string("test.lql", text, &diag);
    fclose(f);
    if (!prog)
        fprintf(stderr, "\nfront end: %s\n", msgs);
    free(msgs);
    return prog;
}

/* A disjunction over two atoms gives each atom's scan the filter it
 * implies for that atom (plan_build.c derive_scan_filters) when
 * optimizing; the answers of every plan agree; a condition that could
 * fail stays after the join, and a disjunct that says nothing of an atom
 * gives it none. */
static void test_or_scan_filters(void)
{
    static const char text[] =
        "item(id, part, qty, kind) -> int32(id), int32(part), int32(qty), int32(kind).\n"
        "part(part, brand, size) -> int32(part), int32(brand), int32(size).\n"
        "item(1, 10, 2, 1). item(2, 10, 7, 1). item(3, 20, 2, 2). item(4, 20, 5, 2).\n"
        "item(5, 40, 9, 3). item(6, 30, 4, 1). item(7, 40, 1, 1).\n"
        "part(10, 100, 1). part(20, 100, 3). part(30, 200, 8). part(40, 300, 2).\n"
        "picked(id) -> int32(id).\n"
        "safe(id) -> int32(id).\n"
        "picked(id) <- item(id, p, qty, kind), part(p, brand, size),\n"
        "    (brand = 100 && qty >= 1 && qty <= 3 && kind = 1 && size < 5)\n"
        "    || (brand = 200 && qty >= 4 && qty <= 6 && (kind = 2 || kind = 1) && size > 5).\n"
        "safe(id) <- item(id, p, qty, _), part(p, brand, _),\n"
        "    (brand = 200 && 1 / (qty - 9) = 0) || (brand = 100 && qty > 1) || qty = 1.\n"
        "@output(picked). @output(safe).\n";
    rf_program *prog = compile_text(text);
    CU_ASSERT_PTR_NOT_NULL_FATAL(prog);
    run r;
    run_start(&r, prog);
    expect_rel(&r, "picked", 1, ROWS(1, 6));
    expect_rel(&r, "safe", 1, ROWS(1, 2, 3, 4, 6, 7));
    char *text_opt = NULL, *text_plain = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text_opt, &len);
    rf_plan_print(r.plan[1], f);
    fclose(f);
    f = open_memstream(&text_plain, &len);
    rf_plan_print(r.plan[0], f);
    fclose(f);
    /* picked: item's scan keeps qty and kind per disjunct, part's brand and size */
    CU_ASSERT_PTR_NOT_NULL(strstr(text_opt, "MapFilter item filter (((($2 >= 1) && ($2 <= 3)) && ($3 = 1)) || "
                                            "((($2 >= 4) && ($2 <= 6)) && (($3 = 2) || ($3 = 1))))"));
    CU_ASSERT_PTR_NOT_NULL(strstr(text_opt, "MapFilter part filter ((($1 = 100) && ($2 < 5)) || (($1 = 200) && "
                                            "($2 > 5)))"));
    /* safe: the third disjunct says nothing of part, the division may fail */
    CU_ASSERT_PTR_NULL(strstr(text_opt, "MapFilter part filter (($1 = 200) || ($1 = 100))"));
    for (const char *at = text_opt; (at = strstr(at, "MapFilter item")) != NULL; at++) {
        const char *end = strstr(at, "//"), *eol = strchr(at, '\n'), *div = strstr(at, "1 /");
        if (!end || (eol && eol < end))
            end = eol;   /* the command, not its comment (the rule's text) */
        CU_ASSERT_TRUE(!div || (end && div > end));   /* no division in an item scan */
    }
    CU_ASSERT_PTR_NULL(strstr(text_opt, "MapFilter item filter (($2 > 1) || ($2 = 1))"));
    /* not without optimizing */
    CU_ASSERT_PTR_NULL(strstr(text_plain, "MapFilter item filter ("));
    free(text_opt);
    free(text_plain);
    run_end(&r);
}

/* Index of the block labelled `label`, -1 if none. */
static int find_block(const rf_plan *p, const char *label)
{
    for (int b = 0; b < p->nblocks; b++)
        if (strcmp(p->blocks[b].label, label) == 0)
            return b;
    return -1;
}

/* Functional predicates get one CheckKeys each, after the stratum that
 * completes them: after the LOAD (input only), at the end of a plain
 * stratum, in a block after a fixpoint loop; none for a predicate defined
 * by one aggregation only. Dead-relation elimination keeps a check (and
 * the relation) nothing else needs; CSE does not merge checks. */
static void test_check_keys(void)
{
    static const char text[] =
        "edge(x, y) -> int32(x), int32(y).\n"
        "fin[x] = y -> int32(x), int32(y).\n"        /* input only, unused */
        "fin2[x] = y -> int32(x), int32(y).\n"       /* input only, unused */
        "h[x] = y -> int32(x), int32(y).\n"          /* plain stratum */
        "d[x] = n -> int32(x), int32(n).\n"          /* recursive */
        "cnt[x] = n -> int32(x), int64(n).\n"        /* aggregation only */
        "edge(1, 2). edge(2, 3). edge(5, 6).\n"
        "fin[1] = 2. fin[2] = 2. fin2[1] = 2. fin2[2] = 2.\n"
        "@output(h). @output(d). @output(cnt).\n"
        "h[x] = y <- edge(x, y).\n"
        "d[x] = n <- edge(x, _), !edge(_, x), n = 0.\n"
        "d[y] = n <- d[x] = m, edge(x, y), n = m + 1.\n"
        "cnt[x] = n <- agg<<n = count()>> edge(x, _).\n";
    rf_program *prog = compile_text(text);
    CU_ASSERT_PTR_NOT_NULL_FATAL(prog);
    run r;
    run_start(&r, prog);
    expect_rel(&r, "h", 2, ROWS(1, 2, 2, 3, 5, 6));
    expect_rel(&r, "d", 2, ROWS(1, 0, 2, 1, 3, 2, 5, 0, 6, 1));
    for (int o = 0; o < NPLANS && r.ok; o++) {
        const rf_plan *p = r.plan[o];
        CU_ASSERT_EQUAL(count_cmds(p, RF_CMD_CHECK_KEYS), 4);
        /* after each input's Load */
        const rf_plan_block *load = &p->blocks[find_block(p, "load")];
        int seen = 0;
        for (int i = 0; i < load->ncmds; i++) {
            const rf_plan_cmd *c = &load->cmds[i];
            if (c->kind != RF_CMD_CHECK_KEYS)
                continue;
            CU_ASSERT_TRUE(i > 0 && load->cmds[i - 1].kind == RF_CMD_LOAD &&
                           load->cmds[i - 1].dst == c->src[0]);
            CU_ASSERT_EQUAL(c->dst, -1);
            CU_ASSERT_EQUAL(c->nkeys, 1);
            const char *name = p->rels[c->src[0]].name;
            CU_ASSERT_TRUE(strcmp(name, "fin") == 0 || strcmp(name, "fin2") == 0);
            seen++;
        }
        CU_ASSERT_EQUAL(seen, 2);
        CU_ASSERT_TRUE(find_rel(p, "fin") >= 0 && find_rel(p, "fin2") >= 0);
        /* h: the last command of its stratum */
        int hb = -1;
        for (int b = 0; b < p->nblocks && hb < 0; b++)
            for (int i = 0; i < p->blocks[b].ncmds; i++)
                if (p->blocks[b].cmds[i].kind == RF_CMD_CHECK_KEYS &&
                    p->blocks[b].cmds[i].src[0] == find_rel(p, "h")) {
                    CU_ASSERT_EQUAL(i, p->blocks[b].ncmds - 1);
                    hb = b;
                }
        CU_ASSERT_TRUE(hb > 0);
        /* d: alone in the block the loop exits to */
        int loop = -1;
        for (int b = 0; b < p->nblocks; b++)
            if (p->blocks[b].ncmds > 0 && p->blocks[b].cmds[p->blocks[b].ncmds - 1].kind == RF_CMD_BRANCH_EMPTY)
                loop = b;
        CU_ASSERT_TRUE_FATAL(loop >= 0);
        const rf_plan_cmd *br = &p->blocks[loop].cmds[p->blocks[loop].ncmds - 1];
        const rf_plan_block *exit = &p->blocks[br->target];
        CU_ASSERT_PTR_NOT_NULL(strstr(exit->label, ".check"));
        CU_ASSERT_EQUAL(exit->ncmds, 1);
        CU_ASSERT_EQUAL(exit->cmds[0].kind, RF_CMD_CHECK_KEYS);
        CU_ASSERT_EQUAL(exit->cmds[0].src[0], find_rel(p, "d"));
    }
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    rf_plan_print(r.plan[1], f);
    fclose(f);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "CheckKeys d key ($0)"));
    free(out);
    run_end(&r);

    /* A violation stops the (reference) run. */
    rf_program *bad = compile_text("p(x, y) -> int32(x), int32(y).\n"
                                   "f[x] = y -> int32(x), int32(y).\n"
                                   "p(1, 2). p(1, 3).\n"
                                   "f[x] = y <- p(x, y).\n");
    CU_ASSERT_PTR_NOT_NULL_FATAL(bad);
    rf_plan *plan = rf_plan_build(bad, NULL);
    interp it;
    CU_ASSERT_FALSE(interp_run(&it, plan, 1000));
    CU_ASSERT_PTR_NOT_NULL(strstr(it.st.message, "functional dependency violated: f"));
    interp_free(&it);
    rf_plan_free(plan);
    rf_program_free(bad);
}

/* Every MapJoin of p joins on at least one key pair. */
static bool no_cross_products(const rf_plan *p)
{
    for (int bl = 0; bl < p->nblocks; bl++)
        for (int i = 0; i < p->blocks[bl].ncmds; i++)
            if (p->blocks[bl].cmds[i].kind == RF_CMD_MAPJOIN && p->blocks[bl].cmds[i].nkeys == 0)
                return false;
    return true;
}

static char *plan_text(const rf_plan *p)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    rf_plan_print(p, f);
    fclose(f);
    return text;
}

/* Equalities between variables (and between a variable and an expression
 * of the other side) are join keys: no cross product in the optimised
 * plan, same results as the plan of the rules as written (optimize off,
 * cross products and filters) run by the reference interpreter. */
static void test_equality_joins(void)
{
    static const char text[] =
        "edge(x, y) -> int32(x), int32(y).\n"
        "path(x, y) -> int32(x), int32(y).\n"
        "path2(x, y) -> int32(x), int32(y).\n"
        "p(x) -> int32(x).\n"
        "q(x) -> int32(x).\n"
        "big(x) -> int64(x).\n"
        "tri(x, z, w) -> int32(x), int32(z), int32(w).\n"
        "next(x, z) -> int32(x), int32(z).\n"
        "twin(x) -> int32(x).\n"
        "sq(x) -> int32(x).\n"
        "wide(x) -> int32(x).\n"
        "wide2(x) -> int64(x).\n"
        "cnt[x] = n -> int32(x), int64(n).\n"
        "edge(1, 2). edge(2, 3). edge(3, 4). edge(4, 2). edge(5, 6).\n"
        "p(1). p(2). p(3). p(-1).\n"
        "big(2). big(3). big(4294967298).\n"
        "@output(path). @output(path2). @output(q). @output(tri). @output(next).\n"
        "@output(twin). @output(sq). @output(wide). @output(wide2). @output(cnt).\n"
        "path(x, y) <- edge(x, y).\n"
        "path(x, z) <- path(x, y), edge(y2, z), y = y2.\n"
        /* both atoms recursive: each reads the delta in turn */
        "path2(x, y) <- edge(x, y).\n"
        "path2(x, z) <- path2(x, y), path2(y2, z), y = y2.\n"
        "q(x) <- p(x), p(y), y = x.\n"
        /* a chain: y, y2, y3 are one variable */
        "tri(x, z, w) <- edge(x, y), edge(y2, z), edge(y3, w), y2 = y3, y3 = y.\n"
        /* an expression of the bound side against the next atom's variable */
        "next(x, z) <- edge(x, y), edge(y2, z), y + 1 = y2.\n"
        "twin(x) <- edge(x, y), edge(x2, y2), x = x2, y2 = y.\n"
        "sq(x) <- p(x), p(y), y = x * x.\n"
        /* int32 against int64: compared exactly in int64 (2 is not
         * 4294967298 = 2^32 + 2), the cast computed on either side */
        "wide(x) <- p(x), big(y), x = y.\n"
        "wide2(y) <- big(y), p(x), y = x.\n"
        /* count ranges over distinct bindings: (x, y) with y = x is one */
        "cnt[x] = n <- agg<<n = count()>> p(x), p(y), x = y.\n";
    rf_program *prog = compile_text(text);
    CU_ASSERT_PTR_NOT_NULL_FATAL(prog);
    run r;
    run_start(&r, prog);
    expect_rel(&r, "path", 2, SMALL_PATHS);
    expect_rel(&r, "path2", 2, SMALL_PATHS);
    expect_rel(&r, "q", 1, ROWS(1, 2, 3, -1));
    expect_rel(&r, "tri", 3, ROWS(1, 3, 3, 2, 4, 4, 3, 2, 2, 4, 3, 3));
    expect_rel(&r, "next", 2, ROWS(1, 4, 2, 2, 3, 6, 4, 4));
    expect_rel(&r, "twin", 1, ROWS(1, 2, 3, 4, 5));
    expect_rel(&r, "sq", 1, ROWS(1, -1));
    expect_rel(&r, "wide", 1, ROWS(2, 3));
    expect_rel(&r, "wide2", 1, ROWS(2, 3));
    expect_rel(&r, "cnt", 2, ROWS(1, 1, 2, 1, 3, 1, -1, 1));
    /* The rules as written join without keys; planned, never. */
    CU_ASSERT_FALSE(no_cross_products(r.plan[0]));
    CU_ASSERT_TRUE(no_cross_products(r.plan[1]));
    char *plan = plan_text(r.plan[1]);
    CU_ASSERT_PTR_NOT_NULL(strstr(plan, "path.new := MapJoin path.delta, edge on ($1 = $2) project ($0, $3)"));
    CU_ASSERT_PTR_NOT_NULL(strstr(plan, " := MapJoin p, p on ($0 = $1) project ($0)"));
    CU_ASSERT_PTR_NOT_NULL(strstr(plan, "project ($0, $1, ($1 + 1))"));   /* next: the key column */
    if (getenv("RF_SHOW_PLAN"))
        fputs(plan, stderr);
    free(plan);
    run_end(&r);
}

/* A key side is computed for every row of its side, before the join, so
 * only sides that cannot fail become keys: `y = 10 / w` stays a filter,
 * and with pe empty nothing divides by zero (the rule as written has no
 * pair to evaluate it on). */
static void test_equality_that_can_fail(void)
{
    static const char text[] =
        "z(w) -> int32(w).\n"
        "pe(y) -> int32(y).\n"
        "r(y) -> int32(y).\n"
        "z(0). z(5).\n"
        "@output(r).\n"
        "r(y) <- z(w), pe(y), y = 10 / w.\n";
    rf_program *prog = compile_text(text);
    CU_ASSERT_PTR_NOT_NULL_FATAL(prog);
    run r;
    run_start(&r, prog);
    expect_rel(&r, "r", 1, NO_ROWS);
    CU_ASSERT_FALSE(no_cross_products(r.plan[1]));
    run_end(&r);
}

/* Commands writing relation `name` (-1 if it is gone), by kind. */
static int count_writes_of(const rf_plan *p, const char *name, rf_cmdkind kind)
{
    int rel = find_rel(p, name), n = 0;
    for (int bl = 0; bl < p->nblocks; bl++)
        for (int i = 0; i < p->blocks[bl].ncmds; i++)
            n += p->blocks[bl].cmds[i].kind == kind && p->blocks[bl].cmds[i].dst == rel;
    return rel < 0 ? -1 : n;
}

/* A predicate defined by one rule, with no facts of its own, gets the
 * rule's result directly (no union into the empty predicate); one with
 * two rules, inline facts or recursion keeps its unions. */
static void test_union_into_empty(void)
{
    static const char text[] =
        "e(x, y) -> int32(x), int32(y).\n"
        "one(x, y) -> int32(x), int32(y).\n"
        "proj(x) -> int32(x).\n"
        "two(x) -> int32(x).\n"
        "seeded(x) -> int32(x).\n"
        "path(x, y) -> int32(x), int32(y).\n"
        "e(1, 2). e(2, 3). e(3, 1). e(5, 2).\n"
        "seeded(9).\n"
        "@output(one). @output(proj). @output(two). @output(seeded). @output(path).\n"
        "one(x, y) <- e(x, y), x < 3.\n"
        "proj(y) <- one(_, y).\n"
        "two(x) <- e(x, _).\n"
        "two(y) <- e(_, y).\n"
        "seeded(x) <- e(x, 2).\n"
        "path(x, y) <- e(x, y).\n"
        "path(x, z) <- path(x, y), e(y, z).\n";
    rf_program *prog = compile_text(text);
    CU_ASSERT_PTR_NOT_NULL_FATAL(prog);
    run r;
    run_start(&r, prog);
    expect_rel(&r, "one", 2, ROWS(1, 2, 2, 3));
    expect_rel(&r, "proj", 1, ROWS(2, 3));
    expect_rel(&r, "two", 1, ROWS(1, 2, 3, 5));
    expect_rel(&r, "seeded", 1, ROWS(1, 5, 9));
    expect_rel(&r, "path", 2, ROWS(1, 1, 1, 2, 1, 3, 2, 1, 2, 2, 2, 3, 3, 1, 3, 2, 3, 3, 5, 1, 5, 2, 5, 3));
    for (int o = 0; o < NPLANS; o++)
        CU_ASSERT_EQUAL(count_writes_of(r.plan[o], "one", RF_CMD_UNION), o == 0 ? 1 : 0);
    CU_ASSERT_EQUAL(count_writes_of(r.plan[1], "one", RF_CMD_MAPFILTER), 1);
    CU_ASSERT_EQUAL(count_writes_of(r.plan[1], "proj", RF_CMD_UNION), 0);
    CU_ASSERT_EQUAL(count_writes_of(r.plan[1], "two", RF_CMD_UNION), 2);
    CU_ASSERT_EQUAL(count_writes_of(r.plan[1], "seeded", RF_CMD_UNION), 1);
    CU_ASSERT_TRUE(count_writes_of(r.plan[1], "path", RF_CMD_UNION) >= 1);
    run_end(&r);
}

int main(void)
{
    if (CU_initialize_registry() != CUE_SUCCESS)
        return 1;
    CU_pSuite s = CU_add_suite("queryplan", NULL, NULL);
    CU_add_test(s, "transitive closure (small)", test_tc_small);
    CU_add_test(s, "non-linear recursion", test_nonlinear);
    CU_add_test(s, "transitive closure (random vs Warshall)", test_tc_random);
    CU_add_test(s, "even/odd (thesis Listing 3.1)", test_even_odd);
    CU_add_test(s, "same generation", test_same_generation);
    CU_add_test(s, "mutual recursion", test_mutual_recursion);
    CU_add_test(s, "stratified negation", test_negation);
    CU_add_test(s, "constants and repeated variables", test_constants_repeated);
    CU_add_test(s, "arithmetic assignments and filters", test_arithmetic);
    CU_add_test(s, "division by zero", test_division_by_zero_is_reported);
    CU_add_test(s, "aggregation", test_aggregation);
    CU_add_test(s, "aggregation over recursion", test_aggregate_over_recursion);
    CU_add_test(s, "several aggregates, avg, count_distinct", test_multi_aggregation);
    CU_add_test(s, "output order and limit fields", test_output_order_fields);
    CU_add_test(s, "strings and cross products", test_strings_and_cross_product);
    CU_add_test(s, "body without atoms", test_body_without_atoms);
    CU_add_test(s, "dead relations", test_dead_relations);
    CU_add_test(s, "dead loop", test_dead_loop_is_skipped);
    CU_add_test(s, "common subexpressions", test_cse);
    CU_add_test(s, "join order", test_join_order);
    CU_add_test(s, "equalities as join keys", test_equality_joins);
    CU_add_test(s, "equalities that can fail stay filters", test_equality_that_can_fail);
    CU_add_test(s, "print", test_print);
    CU_add_test(s, "verify rejects broken plans", test_verify_rejects);
    CU_add_test(s, "from source (front end)", test_from_source);
    CU_add_test(s, "functional key checks", test_check_keys);
    CU_add_test(s, "scan filters implied by a disjunction", test_or_scan_filters);
    CU_add_test(s, "a rule's result into its empty predicate", test_union_into_empty);
    CU_basic_set_mode(CU_BRM_VERBOSE);
    CU_basic_run_tests();
    unsigned failed = CU_get_number_of_failures() + CU_get_number_of_tests_failed();
    CU_cleanup_registry();
    rf_str_reset();
    return failed ? 1 : 0;
}
