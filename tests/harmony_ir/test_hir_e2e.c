/* Harmony IR over real plans: source -> front end -> planner -> lowering.
 * Every program of the golden cases that compiles must lower to IR that
 * verifies and survives the binary round trip; transitive closure must
 * re-key `edge` once, outside its loop.
 * Usage: test_harmony_ir_e2e GOLDEN_CASES_DIR */
#include "frontend.h"
#include "hir.h"

#include <CUnit/Basic.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *cases_dir;

static char *dump(const rf_hprogram *p)
{
    char *s = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&s, &n);
    rf_hir_print(p, f);
    fclose(f);
    return s;
}

static rf_hprogram *lower_source(const char *name, const char *text, rf_plan **plan_out,
                                 rf_program **prog_out)
{
    rf_diag d;
    rf_diag_init(&d, stderr);
    rf_program *prog = text ? rf_compile_string(name, text, &d) : rf_compile_file(name, &d);
    if (!prog)
        return NULL;
    rf_plan_options opt = {.optimize = true};
    rf_plan *plan = rf_plan_build(prog, &opt);
    *plan_out = plan;
    *prog_out = prog;
    return plan ? rf_hir_lower(plan) : NULL;
}

static void test_tc_hoisted(void)
{
    const char *src =
        "edge(x, y) -> int32(x), int32(y).\n"
        "path(x, y) -> int32(x), int32(y).\n"
        "edge(1, 2). edge(2, 3). edge(3, 4).\n"
        "path(x, y) <- edge(x, y).\n"
        "path(x, z) <- edge(x, y), path(y, z).\n"
        "@output(path).\n";
    rf_plan *plan = NULL;
    rf_program *prog = NULL;
    rf_hprogram *h = lower_source("tc.lql", src, &plan, &prog);
    CU_ASSERT_PTR_NOT_NULL_FATAL(h);
    rf_status st;
    rf_status_init(&st);
    CU_ASSERT_TRUE(rf_hir_verify(h, &st));
    int edge = -1;
    for (int i = 0; i < h->nvars; i++)
        if (strcmp(h->vars[i].name, "edge") == 0)
            edge = i;
    CU_ASSERT_TRUE_FATAL(edge >= 0);
    /* Every kernel reading edge runs outside any self-looping block, and
     * at most one re-keys it. */
    int maps = 0, loops = 0;
    for (int b = 0; b < h->nblocks; b++) {
        const rf_hblock *hb = &h->blocks[b];
        bool self_loop = hb->term == RF_TERM_BRANCH_EMPTY &&
                         (hb->target == b || hb->target_else == b);
        loops += self_loop;
        for (int k = 0; k < hb->nkernels; k++) {
            const rf_kernel *kn = &hb->kernels[k];
            if (kn->in[0] == edge || kn->in[1] == edge) {
                CU_ASSERT_FALSE(self_loop);
                maps += kn->op == RF_K_MAP;
            }
        }
    }
    CU_ASSERT_EQUAL(loops, 1);
    CU_ASSERT_EQUAL(maps, 1);
    rf_hir_free(h);
    rf_plan_free(plan);
    rf_program_free(prog);
}

static void test_golden_cases(void)
{
    DIR *d = opendir(cases_dir);
    CU_ASSERT_PTR_NOT_NULL_FATAL(d);
    struct dirent *e;
    int lowered = 0;
    while ((e = readdir(d))) {
        size_t n = strlen(e->d_name);
        if (n < 4 || strcmp(e->d_name + n - 4, ".lql") != 0)
            continue;
        char *path = rf_sprintf("%s/%s", cases_dir, e->d_name);
        FILE *quiet = fopen("/dev/null", "w");
        rf_diag diag;
        rf_diag_init(&diag, quiet);
        rf_program *prog = rf_compile_file(path, &diag);
        fclose(quiet);
        if (prog) {
            rf_plan_options opt = {.optimize = true};
            rf_plan *plan = rf_plan_build(prog, &opt);
            CU_ASSERT_PTR_NOT_NULL(plan);
            if (plan) {
                rf_hprogram *h = rf_hir_lower(plan);
                rf_status st;
                rf_status_init(&st);
                bool ok = rf_hir_verify(h, &st);
                if (!ok)
                    fprintf(stderr, "\n%s: %s\n", e->d_name, st.message);
                CU_ASSERT_TRUE(ok);
                size_t len;
                uint8_t *bytes = rf_hir_serialize(h, &len);
                rf_hprogram *back = rf_hir_deserialize(bytes, len, &st);
                CU_ASSERT_PTR_NOT_NULL(back);
                if (back) {
                    char *a = dump(h), *b = dump(back);
                    CU_ASSERT_STRING_EQUAL(a, b);
                    free(a);
                    free(b);
                }
                rf_hir_free(back);
                free(bytes);
                rf_hir_free(h);
                rf_plan_free(plan);
                lowered++;
            }
            rf_program_free(prog);
        }
        free(path);
    }
    closedir(d);
    CU_ASSERT_TRUE(lowered >= 5);
}

int main(int argc, char **argv)
{
    cases_dir = argc > 1 ? argv[1] : "tests/golden/cases";
    if (CU_initialize_registry() != CUE_SUCCESS)
        return 1;
    CU_pSuite s = CU_add_suite("harmony_ir_e2e", NULL, NULL);
    CU_add_test(s, "tc hoisted", test_tc_hoisted);
    CU_add_test(s, "golden cases", test_golden_cases);
    CU_basic_set_mode(CU_BRM_VERBOSE);
    CU_basic_run_tests();
    unsigned failed = CU_get_number_of_failures() + CU_get_number_of_tests_failed();
    CU_cleanup_registry();
    rf_str_reset();
    return failed ? 1 : 0;
}
