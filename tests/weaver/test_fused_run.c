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
    char *error;             /* st.message when !ok */
    rf_run_info info;
    int groups;              /* FUSED kernels in the program run */
} outcome;

static outcome run_text(const char *text, bool fuse)
{
    rf_diag d;
    rf_diag_init(&d, stderr);
    rf_program *prog = rf_compile_string("t.lql", text, &d);
    CU_ASSERT_PTR_NOT_NULL_FATAL(prog);
    rf_plan_options po = {true};
    rf_plan *plan = rf_plan_build(prog, &po);
    rf_hprogram *h = rf_hir_lower(plan);
    rf_plan_free(plan);
    rf_program_free(prog);
    outcome r;
    memset(&r, 0, sizeof r);
    if (fuse) {
        rf_weave_opts o = {.reduce = true};
        rf_weave_info wi;
        rf_weave(h, &o, &wi);
        r.groups = wi.groups;
    }
    rf_status st;
    rf_status_init(&st);
    CU_ASSERT_TRUE_FATAL(rf_hir_verify(h, &st));
    size_t len = 0;
    FILE *out = open_memstream(&r.out, &len);
    rf_backend *be = rf_backend_cpu_new(2);
    rf_run_options ro = {.backend = be, .out = out};
    r.ok = rf_run_ex(h, &ro, &r.info, &st);
    fclose(out);
    r.error = r.ok ? NULL : rf_strdup(st.message);
    be->destroy(be);
    rf_hir_free(h);
    return r;
}

static void outcome_free(outcome *r)
{
    free(r->out);
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

int main(void)
{
    if (CU_initialize_registry() != CUE_SUCCESS)
        return 1;
    CU_pSuite s = CU_add_suite("fused groups on the CPU backend", NULL, NULL);
    CU_add_test(s, "a chain across strata", test_chain_across_strata);
    CU_add_test(s, "a group of two outputs", test_two_outputs);
    CU_add_test(s, "a fault in a group of two outputs", test_two_outputs_fault);
    CU_basic_set_mode(CU_BRM_VERBOSE);
    CU_basic_run_tests();
    unsigned failed = CU_get_number_of_failures() + CU_get_number_of_tests_failed();
    CU_cleanup_registry();
    return failed ? 1 : 0;
}
