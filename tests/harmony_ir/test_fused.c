/* Fused kernels (Kernel Weaver): the pass makes the groups it should, the
 * verifier accepts them and rejects each malformed variant with its
 * message, the binary form round-trips them, and rf_unweave restores the
 * program as it was before. Programs come from source text (front end,
 * planner, lowering). */
#include "frontend.h"
#include "hir.h"
#include "weaver.h"

#include <CUnit/Basic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *dump(const rf_hprogram *p)
{
    char *s = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&s, &n);
    rf_hir_print(p, f);
    fclose(f);
    return s;
}

static rf_hprogram *lower_text(const char *text)
{
    rf_diag d;
    rf_diag_init(&d, stderr);
    rf_program *prog = rf_compile_string("t.lql", text, &d);
    CU_ASSERT_PTR_NOT_NULL_FATAL(prog);
    rf_plan_options opt = {true};
    rf_plan *plan = rf_plan_build(prog, &opt);
    CU_ASSERT_PTR_NOT_NULL_FATAL(plan);
    rf_hprogram *h = rf_hir_lower(plan);
    rf_plan_free(plan);
    rf_program_free(prog);
    return h;
}

/* A filtered scan into a grouped total and count (q01's shape), and a
 * join into a keyless count (a thread-free group with a JOIN head). */
static const char *src =
    "r(k, v, w) -> int32(k), int64(v), int64(w).\n"
    "r(1, 2, 3). r(1, 4, 5). r(2, 6, 7). r(2, 6, 1). r(3, 1, 9).\n"
    "s(k, n) -> int32(k), int64(n).\n"
    "s(1, 10). s(2, 20).\n"
    "a[k] = x -> int32(k), int64(x).\n"
    "a[k] = x <- agg<<x = total(v)>> r(k, v, w), w > 2.\n"
    "c[] = x -> int64(x).\n"
    "c[] = x <- agg<<x = count()>> r(k, _, _), s(k, _).\n";

static rf_kernel *find_fused(rf_hprogram *h, int nth, int *block)
{
    for (int b = 0; b < h->nblocks; b++)
        for (int i = 0; i < h->blocks[b].nkernels; i++)
            if (h->blocks[b].kernels[i].op == RF_K_FUSED && nth-- == 0) {
                if (block)
                    *block = b;
                return &h->blocks[b].kernels[i];
            }
    return NULL;
}

static rf_hprogram *woven(void)
{
    rf_hprogram *h = lower_text(src);
    rf_weave_opts o = {.reduce = true};
    rf_weave_info info;
    rf_weave(h, &o, &info);
    CU_ASSERT_EQUAL(info.groups, 2);
    CU_ASSERT_EQUAL(info.reduces, 2);
    return h;
}

static void test_weave_and_roundtrip(void)
{
    rf_hprogram *plain = lower_text(src);
    char *before = dump(plain);
    rf_hprogram *h = woven();
    rf_status st;
    rf_status_init(&st);
    CU_ASSERT_TRUE_FATAL(rf_hir_verify(h, &st));
    rf_kernel *fk = find_fused(h, 0, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(fk);
    CU_ASSERT_EQUAL(fk->gather, RF_GATHER_REDUCE);
    CU_ASSERT_EQUAL(fk->fused->nmembers, 3);
    CU_ASSERT_EQUAL(fk->fused->members[0].op, RF_K_MAP);
    CU_ASSERT_EQUAL(fk->fused->members[1].op, RF_K_SORT);
    CU_ASSERT_EQUAL(fk->fused->members[2].op, RF_K_AGG);
    CU_ASSERT_TRUE(h->vars[fk->fused->edges[0].var].internal);
    rf_kernel *jk = find_fused(h, 1, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(jk);
    CU_ASSERT_EQUAL(jk->fused->members[0].op, RF_K_JOIN);
    CU_ASSERT_EQUAL(jk->fused->nin, 2);
    char *text = dump(h);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, ":= FUSED[3]"));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "gather=reduce"));

    /* binary round trip: prints identically */
    size_t len;
    uint8_t *bytes = rf_hir_serialize(h, &len);
    rf_hprogram *back = rf_hir_deserialize(bytes, len, &st);
    CU_ASSERT_PTR_NOT_NULL_FATAL(back);
    char *text2 = dump(back);
    CU_ASSERT_STRING_EQUAL(text, text2);

    /* unweaving gives the program before fusion */
    rf_unweave(back);
    CU_ASSERT_TRUE(rf_hir_verify(back, &st));
    char *after = dump(back);
    CU_ASSERT_STRING_EQUAL(before, after);
    free(before);
    free(after);
    free(text);
    free(text2);
    free(bytes);
    rf_hir_free(back);
    rf_hir_free(h);
    rf_hir_free(plain);
}

/* Each mutation of a freshly woven program must be rejected with a message
 * containing `want`. */
typedef void (*mutation)(rf_hprogram *h, rf_kernel *fk, int block);

static void rejects(mutation m, const char *want)
{
    rf_hprogram *h = woven();
    int b = -1;
    rf_kernel *fk = find_fused(h, 0, &b);
    CU_ASSERT_PTR_NOT_NULL_FATAL(fk);
    int nmembers = fk->fused->nmembers;
    m(h, fk, b);
    rf_status st;
    rf_status_init(&st);
    bool ok = rf_hir_verify(h, &st);
    fk->fused->nmembers = nmembers;   /* so that every member is freed */
    CU_ASSERT_FALSE(ok);
    if (!ok && !strstr(st.message, want)) {
        fprintf(stderr, "\n  message \"%s\" lacks \"%s\"\n", st.message, want);
        CU_FAIL("wrong message");
    }
    rf_hir_free(h);
}

static void one_member(rf_hprogram *h, rf_kernel *fk, int b)
{
    (void)h, (void)b;
    fk->fused->nmembers = 1;
}

static void internal_is_output(rf_hprogram *h, rf_kernel *fk, int b)
{
    (void)b;
    h->vars[fk->fused->edges[0].var].is_output = true;
}

static void read_outside(rf_hprogram *h, rf_kernel *fk, int b)
{
    /* the first plain kernel with an input (the other aggregate's scan)
     * reads an internal variable instead */
    (void)b;
    for (int x = 0; x < h->nblocks; x++)
        for (int i = 0; i < h->blocks[x].nkernels; i++) {
            rf_kernel *k = &h->blocks[x].kernels[i];
            if (k->op != RF_K_FUSED && k->in[0] >= 0) {
                k->in[0] = fk->fused->edges[1].var;
                return;
            }
        }
}

static void nested(rf_hprogram *h, rf_kernel *fk, int b)
{
    (void)h, (void)b;
    fk->fused->members[1].op = RF_K_FUSED;
}

static void count_distinct(rf_hprogram *h, rf_kernel *fk, int b)
{
    (void)h, (void)b;
    fk->fused->members[2].aggfn[0] = RF_AGG_COUNT_DISTINCT;
}

static void duplicates(rf_hprogram *h, rf_kernel *fk, int b)
{
    /* the row identity rowid(0) becomes a plain value column: the rows
     * going into the reduction may repeat */
    (void)h, (void)b;
    rf_kernel *map = &fk->fused->members[0];
    for (int j = 0; j < map->nproj; j++)
        if (map->proj[j].n == 1 && map->proj[j].ins[0].op == RF_EX_ROWID) {
            map->proj[j].ins[0].op = RF_EX_COL;
            map->proj[j].ins[0].index = 1; /* v, int64 like the rowid */
        }
}

static void backward_edge(rf_hprogram *h, rf_kernel *fk, int b)
{
    (void)h, (void)b;
    fk->fused->edges[0].from = fk->fused->edges[0].to;
}

static void member_frees(rf_hprogram *h, rf_kernel *fk, int b)
{
    (void)h, (void)b;
    rf_kernel *m = &fk->fused->members[0];
    m->frees = rf_calloc(1, sizeof *m->frees);
    m->frees[0] = fk->fused->in[0];
    m->nfree = 1;
}

static void branch_on_internal(rf_hprogram *h, rf_kernel *fk, int b)
{
    /* the group's block branches on whether an internal variable is empty */
    rf_hblock *hb = &h->blocks[b];
    hb->conds = rf_realloc(hb->conds, (size_t)(hb->nconds + 1) * sizeof *hb->conds);
    hb->conds[hb->nconds++] = fk->fused->edges[0].var;
    hb->term = RF_TERM_BRANCH_EMPTY;
    hb->target = hb->target_else = b + 1 < h->nblocks ? b + 1 : b;
}

static void wrong_input_list(rf_hprogram *h, rf_kernel *fk, int b)
{
    (void)h, (void)b;
    fk->fused->nin = 0;
}

static void test_verifier_rejects(void)
{
    rejects(one_member, "members");
    rejects(internal_is_output, "internal variable");
    rejects(read_outside, "internal to a fused kernel");
    rejects(nested, "cannot be a member");
    rejects(count_distinct, "count distinct");
    rejects(duplicates, "duplicates");
    rejects(backward_edge, "goes from member");
    rejects(member_frees, "free list");
    rejects(branch_on_internal, "seen outside its fused kernel");
    rejects(wrong_input_list, "neither an input of the group");
}

static void test_old_format_rejected(void)
{
    rf_hprogram *h = woven();
    size_t len;
    uint8_t *bytes = rf_hir_serialize(h, &len);
    bytes[8] = 4;
    rf_status st;
    rf_status_init(&st);
    CU_ASSERT_PTR_NULL(rf_hir_deserialize(bytes, len, &st));
    CU_ASSERT_STRING_EQUAL(st.message,
                           "compiled by another version of redfox (format 4, this one reads 5): compile it again");
    free(bytes);
    rf_hir_free(h);
}

int main(void)
{
    if (CU_initialize_registry() != CUE_SUCCESS)
        return 1;
    CU_pSuite s = CU_add_suite("fused kernels", NULL, NULL);
    CU_add_test(s, "weave, round trip, unweave", test_weave_and_roundtrip);
    CU_add_test(s, "verifier rejects malformed groups", test_verifier_rejects);
    CU_add_test(s, "old format rejected", test_old_format_rejected);
    CU_basic_set_mode(CU_BRM_VERBOSE);
    CU_basic_run_tests();
    unsigned failed = CU_get_number_of_failures() + CU_get_number_of_tests_failed();
    CU_cleanup_registry();
    return failed ? 1 : 0;
}
