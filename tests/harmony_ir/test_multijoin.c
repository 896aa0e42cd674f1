/* Worst-case-optimal joins (RF_CMD_MULTIJOIN / RF_K_MULTIJOIN, issue 9):
 * the planner's choice, lowering, the verifier's rules for malformed
 * multiway kernels, the .rfx round trip and version check, and the CPU
 * leapfrog itself against a triangle count computed another way, with one
 * thread and with several (same rows, same order). */
#include "frontend.h"
#include "hir.h"
#include "../../primitives/rf_prims.h"

#include <CUnit/Basic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *triangle_src =
    "e(x, y) -> int32(x), int32(y).\n"
    "tri(x, y, z) -> int32(x), int32(y), int32(z).\n"
    "e(1, 2). e(2, 3). e(1, 3). e(3, 4). e(2, 4).\n"
    "tri(x, y, z) <- e(x, y), e(y, z), e(x, z).\n"
    "@output(tri).\n";

static const char *path_src =   /* acyclic: binary joins are optimal */
    "e(x, y) -> int32(x), int32(y).\n"
    "p3(x, y, z, w) -> int32(x), int32(y), int32(z), int32(w).\n"
    "e(1, 2). e(2, 3). e(3, 4).\n"
    "p3(x, y, z, w) <- e(x, y), e(y, z), e(z, w).\n"
    "@output(p3).\n";

static rf_plan *plan_of(const char *src, rf_join_mode join, rf_program **prog_out)
{
    rf_diag d;
    rf_diag_init(&d, stderr);
    rf_program *prog = rf_compile_string("t.lql", src, &d);
    CU_ASSERT_PTR_NOT_NULL_FATAL(prog);
    rf_plan_options opt = {.optimize = true, .join = join};
    rf_plan *plan = rf_plan_build(prog, &opt);
    CU_ASSERT_PTR_NOT_NULL_FATAL(plan);
    rf_status st;
    rf_status_init(&st);
    CU_ASSERT_TRUE(rf_plan_verify(plan, &st));
    *prog_out = prog;
    return plan;
}

static int count_multijoins(const rf_plan *plan, const rf_plan_cmd **last)
{
    int n = 0;
    for (int b = 0; b < plan->nblocks; b++)
        for (int i = 0; i < plan->blocks[b].ncmds; i++)
            if (plan->blocks[b].cmds[i].kind == RF_CMD_MULTIJOIN) {
                n++;
                if (last)
                    *last = &plan->blocks[b].cmds[i];
            }
    return n;
}

static void test_planner_choice(void)
{
    struct { const char *src; rf_join_mode join; int want; } cases[] = {
        {triangle_src, RF_JOIN_AUTO, 1},   /* cyclic: both plans, chosen at run time */
        {triangle_src, RF_JOIN_BINARY, 0},
        {triangle_src, RF_JOIN_WCOJ, 1},
        {path_src, RF_JOIN_AUTO, 0},       /* acyclic */
        {path_src, RF_JOIN_WCOJ, 1},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        rf_program *prog;
        rf_plan *plan = plan_of(cases[c].src, cases[c].join, &prog);
        const rf_plan_cmd *mj = NULL;
        CU_ASSERT_EQUAL(count_multijoins(plan, &mj), cases[c].want);
        if (mj) {
            CU_ASSERT_PTR_NOT_NULL(mj->why);   /* explain --plan says why */
            CU_ASSERT_EQUAL(mj->nins, 3);
        }
        rf_plan_free(plan);
        rf_program_free(prog);
    }
}

/* --join=auto on a cyclic body: a BranchJoin ending the block, its
 * targets the MultiJoin's block and the binary joins' block, both writing
 * the rule's relation, and the wcoj block jumping over the binary one. */
static void test_auto_plans_both(void)
{
    rf_program *prog;
    rf_plan *plan = plan_of(triangle_src, RF_JOIN_AUTO, &prog);
    const rf_plan_cmd *br = NULL;
    int brb = -1;
    for (int b = 0; b < plan->nblocks; b++) {
        const rf_plan_block *blk = &plan->blocks[b];
        if (blk->ncmds > 0 && blk->cmds[blk->ncmds - 1].kind == RF_CMD_BRANCH_JOIN) {
            CU_ASSERT_PTR_NULL(br);   /* one cyclic body, one choice */
            br = &blk->cmds[blk->ncmds - 1];
            brb = b;
        }
    }
    CU_ASSERT_PTR_NOT_NULL_FATAL(br);
    /* e(x, y), e(y, z): the first join is on y, column 1 with column 0 */
    CU_ASSERT_EQUAL(br->nkeys, 1);
    CU_ASSERT_EQUAL(br->nvars, 3);
    CU_ASSERT_EQUAL(br->nins, 3);
    CU_ASSERT_EQUAL(br->lkeys[0], 1);
    CU_ASSERT_EQUAL(br->rkeys[0], 0);
    CU_ASSERT_STRING_EQUAL(plan->rels[br->src[0]].name, "e");
    const rf_plan_block *w = &plan->blocks[br->target], *bin = &plan->blocks[br->target_else];
    CU_ASSERT_TRUE(br->target > brb && br->target_else > br->target);
    int mj = 0, joins = 0, wdst = -1, bdst = -2;
    for (int i = 0; i < w->ncmds; i++)
        if (w->cmds[i].kind == RF_CMD_MULTIJOIN) {
            mj++;
            wdst = w->cmds[i].dst;
        }
    for (int i = 0; i < bin->ncmds; i++)
        if (bin->cmds[i].kind == RF_CMD_MAPJOIN) {
            joins++;
            bdst = bin->cmds[i].dst;
        }
    CU_ASSERT_EQUAL(mj, 1);
    CU_ASSERT_EQUAL(joins, 2);
    CU_ASSERT_EQUAL(wdst, bdst);   /* both plans write the rule's relation, */
    CU_ASSERT_STRING_EQUAL(plan->rels[wdst].name, "tri");   /* its empty predicate directly */
    for (int b = 0; b < plan->nblocks; b++)
        for (int i = 0; i < plan->blocks[b].ncmds; i++)
            CU_ASSERT_NOT_EQUAL(plan->blocks[b].cmds[i].kind, RF_CMD_UNION);   /* no union afterwards */
    CU_ASSERT_EQUAL(w->cmds[w->ncmds - 1].kind, RF_CMD_JUMP);
    CU_ASSERT_EQUAL(w->cmds[w->ncmds - 1].target, br->target_else + 1);
    /* lowered: a BRANCH_JOIN terminator over e and e */
    rf_hprogram *h = rf_hir_lower(plan);
    CU_ASSERT_PTR_NOT_NULL_FATAL(h);
    int terms = 0;
    for (int b = 0; b < h->nblocks; b++)
        if (h->blocks[b].term == RF_TERM_BRANCH_JOIN) {
            terms++;
            CU_ASSERT_EQUAL(h->blocks[b].nconds, 2);
            CU_ASSERT_STRING_EQUAL(h->vars[h->blocks[b].conds[0]].name, "e");
        }
    CU_ASSERT_EQUAL(terms, 1);
    rf_status st;
    rf_status_init(&st);
    CU_ASSERT_TRUE(rf_hir_verify(h, &st));
    rf_hir_free(h);
    rf_plan_free(plan);
    rf_program_free(prog);
}

static rf_hprogram *lowered_triangles(rf_kernel **mj_out)
{
    rf_program *prog;
    rf_plan *plan = plan_of(triangle_src, RF_JOIN_AUTO, &prog);
    rf_hprogram *h = rf_hir_lower(plan);
    rf_plan_free(plan);
    rf_program_free(prog);
    CU_ASSERT_PTR_NOT_NULL_FATAL(h);
    *mj_out = NULL;
    for (int b = 0; b < h->nblocks; b++)
        for (int i = 0; i < h->blocks[b].nkernels; i++)
            if (h->blocks[b].kernels[i].op == RF_K_MULTIJOIN)
                *mj_out = &h->blocks[b].kernels[i];
    CU_ASSERT_PTR_NOT_NULL_FATAL(*mj_out);
    return h;
}

static bool verifies(const rf_hprogram *h)
{
    rf_status st;
    rf_status_init(&st);
    return rf_hir_verify(h, &st);
}

static void test_lower_and_verify(void)
{
    rf_kernel *k;
    rf_hprogram *h = lowered_triangles(&k);
    CU_ASSERT_TRUE(verifies(h));
    CU_ASSERT_EQUAL(k->mj->nin, 3);
    CU_ASSERT_EQUAL(k->mj->nvars, 3);
    CU_ASSERT_EQUAL(k->in[0], -1);
    int vars[RF_KERNEL_VARS_MAX];
    CU_ASSERT_EQUAL(rf_kernel_reads(k, vars), 3);
    for (int i = 0; i < k->mj->nin; i++) {
        CU_ASSERT_TRUE(h->vars[k->mj->in[i]].sorted);
        /* each input a trie in the variable order */
        CU_ASSERT_TRUE(k->mj->in_vars[k->mj->in_first[i]] < k->mj->in_vars[k->mj->in_first[i] + 1]);
    }
    /* a triangle's second order: the planned one reversed, whose last
     * level is again a triangle (x last: pairs (y, z), lists of y and z) */
    CU_ASSERT_PTR_NOT_NULL_FATAL(k->mj->alt_order);
    CU_ASSERT_TRUE(k->mj->alt_order[0] == 2 && k->mj->alt_order[1] == 1 && k->mj->alt_order[2] == 0);
    rf_mj_last a, z;
    CU_ASSERT_TRUE(rf_mj_last_level(k->mj->nin, k->mj->in_first, k->mj->in_vars, 3, NULL, &a));
    CU_ASSERT_TRUE(rf_mj_last_level(k->mj->nin, k->mj->in_first, k->mj->in_vars, 3, k->mj->alt_order, &z));
    CU_ASSERT_TRUE(a.pairs != a.list_p && a.pairs != a.list_q && a.list_p != a.list_q);
    CU_ASSERT_TRUE(z.pairs != z.list_p && z.pairs != z.list_q && z.list_p != z.list_q);
    CU_ASSERT_TRUE(a.pairs != z.pairs);
    rf_hir_free(h);
    /* bodies whose last level is no triangle get one order */
    const char *no_triangle[] = {
        path_src,
        "e(x, y) -> int32(x), int32(y).\n"   /* a 4-cycle */
        "c4(x, y, z, w) -> int32(x), int32(y), int32(z), int32(w).\n"
        "e(1, 2). e(2, 3). e(3, 4). e(1, 4).\n"
        "c4(x, y, z, w) <- e(x, y), e(y, z), e(z, w), e(x, w).\n"
        "@output(c4).\n",
    };
    for (int i = 0; i < 2; i++) {
        rf_program *prog;
        rf_plan *plan = plan_of(no_triangle[i], RF_JOIN_WCOJ, &prog);
        rf_hprogram *hp = rf_hir_lower(plan);
        CU_ASSERT_PTR_NOT_NULL_FATAL(hp);
        int found = 0;
        for (int b = 0; b < hp->nblocks; b++)
            for (int j = 0; j < hp->blocks[b].nkernels; j++)
                if (hp->blocks[b].kernels[j].op == RF_K_MULTIJOIN) {
                    found++;
                    CU_ASSERT_PTR_NULL(hp->blocks[b].kernels[j].mj->alt_order);
                }
        CU_ASSERT_EQUAL(found, 1);
        CU_ASSERT_TRUE(verifies(hp));
        rf_hir_free(hp);
        rf_plan_free(plan);
        rf_program_free(prog);
    }
}

/* Each mutation of the multiway kernel must be rejected. */
static void test_verifier_rejects(void)
{
    for (int m = 0; m < 10; m++) {
        rf_kernel *k;
        rf_hprogram *h = lowered_triangles(&k);
        rf_multijoin *mj = k->mj;
        switch (m) {
        case 8: mj->alt_order[1] = mj->alt_order[0]; break;   /* second order: not a permutation */
        case 9: mj->alt_order[2] = 3; break;                  /* a variable out of range */
        case 0: { /* columns not in variable order */
            int t = mj->in_vars[0];
            mj->in_vars[0] = mj->in_vars[1];
            mj->in_vars[1] = t;
            break;
        }
        case 1: mj->nvars = 4; break;                       /* variable 3 bound by no input */
        case 2: h->vars[mj->in[1]].sorted = false; break;   /* unsorted input */
        case 3: k->in[0] = mj->in[0]; break;                /* inputs outside the list */
        case 4: k->nproj--; break;                          /* projections vs. output arity */
        case 5: mj->in[2] = h->nvars; break;                /* input out of range */
        case 6: mj->in_vars[mj->in_first[1]] = 7; break;    /* variable out of range */
        case 7: /* a row position: a binding has none */
            k->proj[0].ins[0].op = RF_EX_ROWID;
            k->proj[0].ins[0].type = RF_TYPE_INT64;
            k->proj[0].ins[0].index = 0;
            break;
        }
        CU_ASSERT_FALSE(verifies(h));
        if (m == 4)
            k->nproj++;   /* (so that freeing frees every projection) */
        rf_hir_free(h);
    }
}

static rf_hblock *choice_block(rf_hprogram *h)
{
    for (int b = 0; b < h->nblocks; b++)
        if (h->blocks[b].term == RF_TERM_BRANCH_JOIN)
            return &h->blocks[b];
    return NULL;
}

/* Each malformed run-time join choice must be rejected. */
static void test_verifier_rejects_bad_choice(void)
{
    rf_kernel *k;
    for (int m = 0; m < 9; m++) {
        rf_hprogram *h = lowered_triangles(&k);
        rf_hblock *hb = choice_block(h);
        CU_ASSERT_PTR_NOT_NULL_FATAL(hb);
        CU_ASSERT_TRUE(verifies(h));
        int saved_key = hb->lkeys[0];
        switch (m) {
        case 0: hb->target = h->nblocks; break;           /* target out of range */
        case 1: hb->target_else = -1; break;
        case 2: hb->nconds = 1; break;                    /* one relation */
        case 3: hb->conds[1] = h->nvars; break;           /* relation out of range */
        case 4: hb->lkeys[0] = 2; break;                  /* key column out of range (arity 2) */
        case 5: hb->nkeys = 3; break;                     /* more keys than columns */
        case 7: hb->nvars = 1; break;                     /* a body of one variable */
        case 8: hb->natoms = 1; break;                    /* of one atom */
        case 6: {                                         /* keys of different types */
            rf_hvar *v = &h->vars[hb->conds[1]];
            rf_type t = v->types[hb->rkeys[0]];
            v->types[hb->rkeys[0]] = RF_TYPE_STRING;
            CU_ASSERT_FALSE(verifies(h));
            v->types[hb->rkeys[0]] = t;
            break;
        }
        }
        if (m != 6)
            CU_ASSERT_FALSE(verifies(h));
        hb->lkeys[0] = saved_key;
        rf_hir_free(h);
    }
    /* the cross product (no key) is a valid choice */
    rf_hprogram *h = lowered_triangles(&k);
    choice_block(h)->nkeys = 0;
    CU_ASSERT_TRUE(verifies(h));
    rf_hir_free(h);
}

/* h (its frees made) serialised into *bytes, and read back. */
static rf_hprogram *round_trip(rf_hprogram *h, uint8_t **bytes, size_t *len)
{
    rf_hir_liveness(h);
    *bytes = rf_hir_serialize(h, len);
    rf_status st;
    rf_status_init(&st);
    return rf_hir_deserialize(*bytes, *len, &st);
}

static void test_rfx_round_trip(void)
{
    rf_kernel *k;
    rf_hprogram *h = lowered_triangles(&k);
    size_t len;
    uint8_t *bytes;
    rf_hprogram *back = round_trip(h, &bytes, &len);
    rf_status st;
    CU_ASSERT_PTR_NOT_NULL_FATAL(back);
    size_t len2;
    uint8_t *again = rf_hir_serialize(back, &len2);
    CU_ASSERT_EQUAL(len, len2);
    CU_ASSERT_TRUE(len == len2 && memcmp(bytes, again, len) == 0);
    free(again);
    rf_hblock *hb = choice_block(back);   /* the run-time choice survives */
    CU_ASSERT_PTR_NOT_NULL_FATAL(hb);
    CU_ASSERT_EQUAL(hb->nkeys, 1);
    CU_ASSERT_EQUAL(hb->lkeys[0], 1);
    CU_ASSERT_EQUAL(hb->rkeys[0], 0);
    CU_ASSERT_EQUAL(hb->nvars, 3);
    CU_ASSERT_EQUAL(hb->natoms, 3);
    const rf_kernel *bk = NULL;   /* and the second variable order */
    for (int b = 0; b < back->nblocks; b++)
        for (int i = 0; i < back->blocks[b].nkernels; i++)
            if (back->blocks[b].kernels[i].op == RF_K_MULTIJOIN)
                bk = &back->blocks[b].kernels[i];
    CU_ASSERT_PTR_NOT_NULL_FATAL(bk);
    CU_ASSERT_PTR_NOT_NULL_FATAL(bk->mj->alt_order);
    CU_ASSERT_TRUE(memcmp(bk->mj->alt_order, k->mj->alt_order, 3 * sizeof(int)) == 0);
    rf_hir_free(back);
    /* files of the formats before multiway joins (6), before the run-time
     * choice (7), before counted multiway joins (8) and before second
     * variable orders (9) are compiled again */
    uint8_t *old = malloc(len);
    for (int v = 6; v <= 9; v++) {
        memcpy(old, bytes, len);
        old[8] = (uint8_t)v;
        rf_status_init(&st);
        CU_ASSERT_PTR_NULL(rf_hir_deserialize(old, len, &st));
        CU_ASSERT_PTR_NOT_NULL(strstr(st.message, "compile it again"));
    }
    free(old);
    /* every truncation is rejected, never read past */
    for (size_t cut = 0; cut < len; cut += 7) {
        rf_status_init(&st);
        rf_hprogram *p = rf_hir_deserialize(bytes, cut, &st);
        CU_ASSERT_PTR_NULL(p);
        rf_hir_free(p);
    }
    free(bytes);
    rf_hir_free(h);
}

/* ---- counted multiway joins (lower.c, count_multijoins) ---- */

static const char *count_src =
    "e(x, y) -> int32(x), int32(y).\n"
    "tri(x, y, z) -> int32(x), int32(y), int32(z).\n"
    "n[] = c -> int64(c).\n"
    "e(1, 2). e(2, 3). e(1, 3). e(3, 4). e(2, 4).\n"
    "tri(x, y, z) <- e(x, y), e(y, z), e(x, z).\n"
    "n[] = c <- agg<<c = count()>> tri(x, y, z).\n"
    "@output(n).\n";

static int var_named(const rf_hprogram *h, const char *name)
{
    for (int v = 0; v < h->nvars; v++)
        if (h->vars[v].name && strcmp(h->vars[v].name, name) == 0)
            return v;
    return -1;
}

/* The kernels writing v: how many, and the block of the last. */
static int writers(const rf_hprogram *h, int v, int op, int *block)
{
    int n = 0;
    for (int b = 0; b < h->nblocks; b++)
        for (int i = 0; i < h->blocks[b].nkernels; i++)
            if (h->blocks[b].kernels[i].out == v && (op < 0 || (int)h->blocks[b].kernels[i].op == op)) {
                n++;
                *block = b;
            }
    return n;
}

static void test_counted_multijoin(void)
{
    const char *shared = "e(x, y) -> int32(x), int32(y).\n"
                         "tri(x, y, z) -> int32(x), int32(y), int32(z).\n"
                         "n[] = c -> int64(c).\n"
                         "e(1, 2). e(2, 3). e(1, 3).\n"
                         "tri(x, y, z) <- e(x, y), e(y, z), e(x, z).\n"
                         "n[] = c <- agg<<c = count()>> tri(x, y, z).\n"
                         "@output(n).\n";
    const char *direct = "e(x, y) -> int32(x), int32(y).\n"
                         "n[] = c -> int64(c).\n"
                         "e(1, 2). e(2, 3). e(1, 3).\n"
                         "n[] = c <- agg<<c = count()>> e(x, y), e(y, z), e(x, z).\n"
                         "@output(n).\n";
    struct { const char *src, *extra; rf_join_mode join; bool counted; } cases[] = {
        {direct, "", RF_JOIN_WCOJ, true},       /* the body written in the aggregate */
        {direct, "", RF_JOIN_AUTO, true},
        {direct, "", RF_JOIN_BINARY, false},    /* row identities, as before */
        {count_src, "", RF_JOIN_WCOJ, true},
        {count_src, "", RF_JOIN_AUTO, true},    /* the MULTIJOIN arm counts, the binary arm's AGG moves */
        {count_src, "", RF_JOIN_BINARY, false},
        {shared, "@output(tri).\n", RF_JOIN_WCOJ, false},   /* the listing is an output */
        {shared, "m(x) -> int32(x).\nm(x) <- tri(x, _, _).\n@output(m).\n", RF_JOIN_WCOJ, false}, /* read twice */
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        char src[1024];
        snprintf(src, sizeof src, "%s%s", cases[c].src, cases[c].extra);
        rf_program *prog;
        rf_plan *plan = plan_of(src, cases[c].join, &prog);
        rf_hprogram *h = rf_hir_lower(plan);
        rf_plan_free(plan);
        rf_program_free(prog);
        CU_ASSERT_PTR_NOT_NULL_FATAL(h);
        CU_ASSERT_TRUE(verifies(h));
        int n = var_named(h, "n"), bm = -1, ba = -1;
        CU_ASSERT_FATAL(n >= 0);
        int mj = writers(h, n, RF_K_MULTIJOIN, &bm), agg = writers(h, n, RF_K_AGG, &ba);
        if (!cases[c].counted) {
            CU_ASSERT_EQUAL(mj, 0);
            CU_ASSERT_EQUAL(agg, 1);
        } else if (cases[c].join == RF_JOIN_WCOJ) {
            CU_ASSERT_EQUAL(mj, 1);
            CU_ASSERT_EQUAL(agg, 0);
        } else {   /* auto: the MULTIJOIN in the choice's target, the AGG at the end of its other arm */
            CU_ASSERT_EQUAL(mj, 1);
            CU_ASSERT_EQUAL(agg, 1);
            rf_hblock *hb = choice_block(h);
            CU_ASSERT_PTR_NOT_NULL_FATAL(hb);
            CU_ASSERT_EQUAL(bm, hb->target);
            CU_ASSERT_EQUAL(ba, hb->target_else);
            const rf_hblock *arm = &h->blocks[ba];
            CU_ASSERT_EQUAL(arm->kernels[arm->nkernels - 1].op, RF_K_AGG);
        }
        if (mj == 1 && bm >= 0) {
            for (int i = 0; i < h->blocks[bm].nkernels; i++) {
                rf_kernel *k = &h->blocks[bm].kernels[i];
                if (k->op != RF_K_MULTIJOIN)
                    continue;
                CU_ASSERT_TRUE(k->mj->count);
                CU_ASSERT_EQUAL(k->nproj, 0);
                /* a counted join writes one int64 column and has no code */
                h->vars[n].types[0] = RF_TYPE_INT32;
                CU_ASSERT_FALSE(verifies(h));
                h->vars[n].types[0] = RF_TYPE_INT64;
                k->filter.n = 1;
                k->filter.ins = calloc(1, sizeof *k->filter.ins);
                CU_ASSERT_FALSE(verifies(h));
                rf_code_free(&k->filter);
                memset(&k->filter, 0, sizeof k->filter);
                CU_ASSERT_TRUE(verifies(h));
                /* the flag survives the .rfx round trip */
                size_t len;
                uint8_t *bytes;
                rf_hprogram *back = round_trip(h, &bytes, &len);
                CU_ASSERT_PTR_NOT_NULL_FATAL(back);
                int b2 = -1;
                CU_ASSERT_EQUAL(writers(back, n, RF_K_MULTIJOIN, &b2), 1);
                for (int j = 0; b2 >= 0 && j < back->blocks[b2].nkernels; j++)
                    if (back->blocks[b2].kernels[j].op == RF_K_MULTIJOIN)
                        CU_ASSERT_TRUE(back->blocks[b2].kernels[j].mj->count);
                rf_hir_free(back);
                free(bytes);
            }
        }
        rf_hir_free(h);
    }
}

/* ---- the CPU leapfrog ---- */

static int cmp_pair(const void *a, const void *b)
{
    const rf_word *x = a, *y = b;
    return x[0] != y[0] ? (x[0] < y[0] ? -1 : 1) : x[1] != y[1] ? (x[1] < y[1] ? -1 : 1) : 0;
}

/* A random graph with some hubs, as uedge: x < y, sorted, distinct. */
static void random_uedge(rf_table *t, int nodes, int edges, unsigned seed)
{
    rf_word *rows = malloc((size_t)edges * 2 * sizeof *rows);
    srand(seed);
    int n = 0;
    for (int i = 0; i < edges; i++) {
        rf_word x = (rf_word)(rand() % (i % 5 == 0 ? 40 : nodes)), y = (rf_word)(rand() % nodes);
        if (x == y)
            continue;
        rows[2 * n] = x < y ? x : y;
        rows[2 * n + 1] = x < y ? y : x;
        n++;
    }
    qsort(rows, (size_t)n, 2 * sizeof *rows, cmp_pair);
    int m = 0;
    for (int i = 0; i < n; i++)
        if (m == 0 || cmp_pair(&rows[2 * i], &rows[2 * (m - 1)]) != 0) {
            rows[2 * m] = rows[2 * i];
            rows[2 * m + 1] = rows[2 * i + 1];
            m++;
        }
    rf_table_from_rows(t, 2, rows, (size_t)m);
    free(rows);
}

/* Triangles by intersecting sorted neighbour lists (of larger neighbours). */
static size_t triangles_by_lists(const rf_table *t)
{
    size_t n = t->nrows, count = 0;
    const rf_word *x = t->cols[0], *y = t->cols[1];
    for (size_t i = 0; i < n; i++) {
        /* neighbours of x[i] after y[i], and neighbours of y[i] */
        size_t a = i + 1, b = 0;
        while (b < n && x[b] < y[i])
            b++;
        while (a < n && x[a] == x[i] && b < n && x[b] == y[i]) {
            if (y[a] == y[b]) {
                count++;
                a++;
                b++;
            } else if (y[a] < y[b]) {
                a++;
            } else {
                b++;
            }
        }
    }
    return count;
}

/* proj[c] := variable c, for c < n (free each proj[c].ins). */
static void variable_projections(rf_code *proj, int n)
{
    for (int c = 0; c < n; c++) {
        proj[c].n = 1;
        proj[c].ins = calloc(1, sizeof *proj[c].ins);
        proj[c].ins[0].op = RF_EX_COL;
        proj[c].ins[0].type = proj[c].ins[0].arg_type = RF_TYPE_INT64;
        proj[c].ins[0].index = c;
    }
}

static void test_cpu_leapfrog(void)
{
    rf_table e;
    random_uedge(&e, 3000, 60000, 7);
    const rf_table *ins[3] = {&e, &e, &e};
    /* tri(x, y, z) <- e(x, y), e(y, z), e(x, z) in the order x, y, z */
    int in_first[4] = {0, 2, 4, 6}, in_vars[6] = {0, 1, 1, 2, 0, 2};
    rf_code proj[3];
    variable_projections(proj, 3);
    rf_code none = {0, NULL};
    size_t want = triangles_by_lists(&e);
    CU_ASSERT_TRUE(want > 1000);
    rf_table one, many;
    rf_status st;
    rf_status_init(&st);
    rf_prims_set_threads(1);
    CU_ASSERT_TRUE(rf_prim_multijoin(3, ins, in_first, in_vars, 3, &none, 3, proj, &one, &st));
    rf_prims_set_threads(4);   /* many pieces of the first variable's values */
    CU_ASSERT_TRUE(rf_prim_multijoin(3, ins, in_first, in_vars, 3, &none, 3, proj, &many, &st));
    CU_ASSERT_EQUAL(one.nrows, want);
    CU_ASSERT_EQUAL(many.nrows, want);
    CU_ASSERT_EQUAL(rf_prim_multijoin_count(3, ins, in_first, in_vars, 3), want);
    bool same = one.nrows == many.nrows;
    for (int c = 0; c < 3 && same; c++)
        same = memcmp(one.cols[c], many.cols[c], one.nrows * sizeof(rf_word)) == 0;
    CU_ASSERT_TRUE(same);   /* the order does not depend on the thread count */
    for (size_t i = 0; i < one.nrows; i++)
        if (!(one.cols[0][i] < one.cols[1][i] && one.cols[1][i] < one.cols[2][i])) {
            CU_FAIL("a row that is not a triangle x < y < z");
            break;
        }
    rf_table_free(&one);
    rf_table_free(&many);
    for (int c = 0; c < 3; c++)
        free(proj[c].ins);
    rf_table_free(&e);
}

/* rows of column col of t holding key */
static uint64_t rows_holding(const rf_table *t, int col, rf_word key)
{
    uint64_t n = 0;
    for (size_t i = 0; i < t->nrows; i++)
        n += t->cols[col][i] == key;
    return n;
}

/* The last level's estimate (ordercost.c) against counts made row by row
 * over the same sampled rows: exact on a table of at most RF_ORDER_SAMPLES
 * rows, the sampled rows' sum scaled beyond; and the two orders of a
 * triangle query on a graph whose hubs are the low ids (random_uedge:
 * every fifth edge from one of the first 40 vertices), where binding x
 * last intersects the shorter lists. */
static void test_order_cost(void)
{
    for (int big = 0; big < 2; big++) {
        rf_table e;
        random_uedge(&e, big ? 3000 : 300, big ? 60000 : 2000, 5 + big);
        CU_ASSERT_TRUE(big ? e.nrows > RF_ORDER_SAMPLES : e.nrows <= RF_ORDER_SAMPLES);
        /* z last: pairs (x, y) = e, lists of z by x (e's column 0) and by y
         * (column 0); x last: pairs (y, z) = e, lists of x by y (column 1)
         * and by z (column 1) */
        for (int o = 0; o < 2; o++) {
            int lc = o == 0 ? 0 : 1;
            uint64_t m = rf_order_sample_rows(e.nrows), sum = 0;
            for (uint64_t i = 0; i < m; i++) {
                size_t r = (size_t)rf_order_sample_row(i, m, e.nrows);
                uint64_t a = rows_holding(&e, lc, e.cols[0][r]), b = rows_holding(&e, lc, e.cols[1][r]);
                sum += a < b ? a : b;
            }
            double want = (double)sum * ((double)e.nrows / (double)m);
            double got = rf_prim_order_cost(&e, 0, 1, &e, lc, &e, lc);
            CU_ASSERT_DOUBLE_EQUAL(got, want, 1e-6 * want + 1e-9);
            CU_ASSERT_TRUE(got > 0);
        }
        const rf_table *ins[3] = {&e, &e, &e};
        int in_first[4] = {0, 2, 4, 6}, in_vars[6] = {0, 1, 1, 2, 0, 2}, rev[3] = {2, 1, 0};
        double planned, alt;
        CU_ASSERT_TRUE(rf_prim_order_estimates(3, ins, in_first, in_vars, 3, rev, &planned, &alt));
        /* the planned order's last level: each edge (x, y) drives the
         * shorter of the upper lists of x and y; the reverse's: each edge
         * (y, z) the shorter of the lower lists of y and z (exact where
         * every row is sampled) */
        if (!big) {
            double want_planned = 0, want_alt = 0;
            for (size_t r = 0; r < e.nrows; r++) {
                uint64_t a = rows_holding(&e, 0, e.cols[0][r]), b = rows_holding(&e, 0, e.cols[1][r]);
                uint64_t c = rows_holding(&e, 1, e.cols[0][r]), d = rows_holding(&e, 1, e.cols[1][r]);
                want_planned += (double)(a < b ? a : b);
                want_alt += (double)(c < d ? c : d);
            }
            CU_ASSERT_DOUBLE_EQUAL(planned, want_planned, 1e-9);
            CU_ASSERT_DOUBLE_EQUAL(alt, want_alt, 1e-9);
            CU_ASSERT_TRUE(planned != alt);
        }
        rf_table_free(&e);
    }
    rf_table none;
    rf_table_init(&none, 2);
    CU_ASSERT_EQUAL(rf_prim_order_cost(&none, 0, 1, &none, 0, &none, 0), 0);
    rf_table_free(&none);
}

/* The join run in its second order (rf_mj_alt_make: inputs re-keyed, code
 * renumbered) makes the same rows, whose columns are still the planned
 * variables, and the same count. */
static void test_cpu_leapfrog_second_order(void)
{
    rf_table e;
    random_uedge(&e, 2000, 40000, 9);
    const rf_table *ins[3] = {&e, &e, &e};
    int in_first[4] = {0, 2, 4, 6}, in_vars[6] = {0, 1, 1, 2, 0, 2}, rev[3] = {2, 1, 0};
    rf_code proj[3];
    variable_projections(proj, 3);
    rf_code none = {0, NULL};
    rf_status st;
    rf_status_init(&st);
    rf_table want, got, ws, gs;
    CU_ASSERT_TRUE(rf_prim_multijoin(3, ins, in_first, in_vars, 3, &none, 3, proj, &want, &st));
    rf_mj_alt alt;
    rf_mj_alt_make(&alt, 3, ins, in_first, in_vars, 3, rev, &none, 3, proj);
    CU_ASSERT_TRUE(alt.in[0] == alt.in[1] && alt.in[1] == alt.in[2]);   /* one copy, re-keyed (y, x) */
    CU_ASSERT_TRUE(alt.in[0] != &e);
    CU_ASSERT_TRUE(
        rf_prim_multijoin(3, alt.in, in_first, alt.rc.in_vars, 3, &alt.rc.filter, 3, alt.rc.proj, &got, &st));
    CU_ASSERT_EQUAL(rf_prim_multijoin_count(3, alt.in, in_first, alt.rc.in_vars, 3), triangles_by_lists(&e));
    rf_mj_alt_free(&alt);
    CU_ASSERT_TRUE(want.nrows > 1000);
    CU_ASSERT_EQUAL(got.nrows, want.nrows);
    rf_prim_sort(&want, &ws);
    rf_prim_sort(&got, &gs);
    bool same = ws.nrows == gs.nrows;
    for (int c = 0; c < 3 && same; c++)
        same = memcmp(ws.cols[c], gs.cols[c], ws.nrows * sizeof(rf_word)) == 0;
    CU_ASSERT_TRUE(same);
    rf_table_free(&want);
    rf_table_free(&got);
    rf_table_free(&ws);
    rf_table_free(&gs);
    for (int c = 0; c < 3; c++)
        free(proj[c].ins);
    rf_table_free(&e);
}

/* The join-size count against a nested loop, on one and two key columns,
 * with the sides either way round, and the cross product. */
static void test_join_size(void)
{
    rf_table e;
    random_uedge(&e, 500, 4000, 11);
    int k1[1] = {1}, k0[1] = {0};
    uint64_t want = 0, want2 = 0;
    for (size_t i = 0; i < e.nrows; i++)
        for (size_t j = 0; j < e.nrows; j++) {
            want += e.cols[1][i] == e.cols[0][j];
            want2 += e.cols[1][i] == e.cols[0][j] && e.cols[0][i] == e.cols[1][j];
        }
    CU_ASSERT_TRUE(want > 1000);
    CU_ASSERT_EQUAL(rf_prim_join_size(&e, k1, &e, k0, 1), want);
    CU_ASSERT_EQUAL(rf_prim_join_size(&e, k0, &e, k1, 1), want);
    int l2[2] = {1, 0}, r2[2] = {0, 1};
    CU_ASSERT_EQUAL(rf_prim_join_size(&e, l2, &e, r2, 2), want2);
    CU_ASSERT_EQUAL(rf_prim_join_size(&e, NULL, &e, NULL, 0), (uint64_t)e.nrows * e.nrows);
    /* values spread too wide for the array of counts: the hash table */
    rf_table wide;
    rf_table_init(&wide, 2);
    rf_table_copy(&wide, &e);
    for (int c = 0; c < 2; c++)
        for (size_t i = 0; i < wide.nrows; i++)
            wide.cols[c][i] = wide.cols[c][i] * 1000000007ull + 3;
    CU_ASSERT_EQUAL(rf_prim_join_size(&wide, k1, &wide, k0, 1), want);
    rf_table_free(&wide);
    rf_table none;
    rf_table_init(&none, 2);
    CU_ASSERT_EQUAL(rf_prim_join_size(&e, k1, &none, k0, 1), 0);
    rf_table_free(&none);
    rf_table_free(&e);
}

int main(void)
{
    if (CU_initialize_registry() != CUE_SUCCESS)
        return 1;
    CU_pSuite s = CU_add_suite("multijoin", NULL, NULL);
    CU_add_test(s, "planner choice", test_planner_choice);
    CU_add_test(s, "--join=auto plans both, chosen at run time", test_auto_plans_both);
    CU_add_test(s, "verifier rejects malformed join choices", test_verifier_rejects_bad_choice);
    CU_add_test(s, "join size count", test_join_size);
    CU_add_test(s, "lower and verify", test_lower_and_verify);
    CU_add_test(s, "verifier rejects malformed kernels", test_verifier_rejects);
    CU_add_test(s, ".rfx round trip", test_rfx_round_trip);
    CU_add_test(s, "counted multiway joins", test_counted_multijoin);
    CU_add_test(s, "CPU leapfrog", test_cpu_leapfrog);
    CU_add_test(s, "variable order estimates", test_order_cost);
    CU_add_test(s, "CPU leapfrog in the second order", test_cpu_leapfrog_second_order);
    CU_basic_set_mode(CU_BRM_VERBOSE);
    CU_basic_run_tests();
    unsigned failed = CU_get_number_of_failures() + CU_get_number_of_tests_failed();
    CU_cleanup_registry();
    rf_str_reset();
    return failed ? 1 : 0;
}
