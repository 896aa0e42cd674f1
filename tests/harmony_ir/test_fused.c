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
    rf_plan_options opt = {.optimize = true};
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

/* h written to the binary form and read back: the copy, which must print
 * as `text` (h's dump) does. */
static rf_hprogram *round_trip(const rf_hprogram *h, const char *text)
{
    rf_status st;
    rf_status_init(&st);
    size_t len;
    uint8_t *bytes = rf_hir_serialize(h, &len);
    rf_hprogram *back = rf_hir_deserialize(bytes, len, &st);
    free(bytes);
    CU_ASSERT_PTR_NOT_NULL_FATAL(back);
    char *text2 = dump(back);
    CU_ASSERT_STRING_EQUAL(text, text2);
    free(text2);
    return back;
}

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

static rf_hprogram *woven_tc(void);

/* Formats 4 (no fused groups) to 9 (no second variable orders): compile it
 * again. */
static void test_old_format_rejected(void)
{
    rf_hprogram *h = woven_tc();
    size_t len;
    uint8_t *bytes = rf_hir_serialize(h, &len);
    rf_status st;
    for (int old = 4; old <= 9; old++) {
        bytes[8] = (uint8_t)old;
        rf_status_init(&st);
        CU_ASSERT_PTR_NULL(rf_hir_deserialize(bytes, len, &st));
        char *want = rf_sprintf("compiled by another version of redfox (format %d, this one reads 10): compile it again",
                                old);
        CU_ASSERT_STRING_EQUAL(st.message, want);
        free(want);
    }
    free(bytes);
    rf_hir_free(h);
}

/* Thesis pattern (a): three selections, one predicate (and stratum) each. */
static const char *selects_src =
    "t(id, v) -> int64(id), int64(v).\n"
    "sel1(id, v) -> int64(id), int64(v).\n"
    "sel2(id, v) -> int64(id), int64(v).\n"
    "sel3(id, v) -> int64(id), int64(v).\n"
    "t(1, 50). t(2, 150). t(3, 250). t(4, 950). t(5, 500).\n"
    "@output(sel3).\n"
    "sel1(id, v) <- t(id, v), v >= 100.\n"
    "sel2(id, v) <- sel1(id, v), v < 900.\n"
    "sel3(id, v) <- sel2(id, v), v >= 200.\n";

static int var_named(const rf_hprogram *h, const char *name)
{
    for (int v = 0; v < h->nvars; v++)
        if (strcmp(h->vars[v].name, name) == 0)
            return v;
    return -1;
}

static int count_fused(const rf_hprogram *h)
{
    int n = 0;
    while (find_fused((rf_hprogram *)h, n, NULL))
        n++;
    return n;
}

/* Whether any free list (after a kernel, on entry to a block) names v. */
static bool freed_anywhere(const rf_hprogram *h, int v)
{
    for (int b = 0; b < h->nblocks; b++) {
        for (int i = 0; i < h->blocks[b].nfree_entry; i++)
            if (h->blocks[b].free_entry[i] == v)
                return true;
        for (int k = 0; k < h->blocks[b].nkernels; k++)
            for (int i = 0; i < h->blocks[b].kernels[k].nfree; i++)
                if (h->blocks[b].kernels[k].frees[i] == v)
                    return true;
    }
    return false;
}

/* Each predicate written straight by its rule's MAP, in a block of its
 * own; woven, one group of the three MAPs, across the blocks, with the
 * two intermediate predicates internal; the binary form keeps it; and
 * unweaving gives back the three MAPs, in order. */
static void test_cross_block_chain(void)
{
    rf_hprogram *h = lower_text(selects_src);
    int sel[4] = {var_named(h, "t"), var_named(h, "sel1"), var_named(h, "sel2"), var_named(h, "sel3")};
    int home[4] = {-1, -1, -1, -1};   /* block of the MAP writing sel[i] */
    for (int b = 0; b < h->nblocks; b++)
        for (int k = 0; k < h->blocks[b].nkernels; k++) {
            const rf_kernel *kn = &h->blocks[b].kernels[k];
            CU_ASSERT_NOT_EQUAL(kn->op, RF_K_UNION);   /* no union into the empty predicates */
            CU_ASSERT_NOT_EQUAL(kn->op, RF_K_COPY);
            for (int i = 1; i < 4; i++)
                if (kn->op == RF_K_MAP && kn->out == sel[i] && kn->in[0] == sel[i - 1])
                    home[i] = b;
        }
    CU_ASSERT_TRUE_FATAL(home[1] >= 0 && home[1] < home[2] && home[2] < home[3]);

    rf_weave_opts o = {.reduce = true};
    rf_weave_info info;
    rf_weave(h, &o, &info);
    CU_ASSERT_EQUAL(info.groups, 1);
    CU_ASSERT_EQUAL(info.members, 3);
    CU_ASSERT_EQUAL(info.shared, 0);
    rf_status st;
    rf_status_init(&st);
    CU_ASSERT_TRUE_FATAL(rf_hir_verify(h, &st));
    CU_ASSERT_EQUAL(count_fused(h), 1);
    int b = -1;
    rf_kernel *fk = find_fused(h, 0, &b);
    CU_ASSERT_PTR_NOT_NULL_FATAL(fk);
    CU_ASSERT_EQUAL(b, home[3]);   /* where its last member stood: after every writer */
    const rf_fused *f = fk->fused;
    CU_ASSERT_EQUAL_FATAL(f->nmembers, 3);
    for (int m = 0; m < 3; m++) {
        CU_ASSERT_EQUAL(f->members[m].op, RF_K_MAP);
        CU_ASSERT_EQUAL(f->members[m].in[0], sel[m]);
        CU_ASSERT_EQUAL(f->members[m].out, sel[m + 1]);
    }
    CU_ASSERT_EQUAL(f->nin, 1);
    CU_ASSERT_EQUAL(f->in[0], sel[0]);
    CU_ASSERT_EQUAL(f->nout, 1);
    CU_ASSERT_EQUAL(f->out[0], sel[3]);
    CU_ASSERT_EQUAL(f->nedges, 2);
    for (int i = 1; i <= 2; i++) {
        CU_ASSERT_TRUE(h->vars[sel[i]].internal);
        CU_ASSERT_PTR_NOT_NULL(h->vars[sel[i]].pred);   /* a predicate inside the group */
        CU_ASSERT_FALSE(freed_anywhere(h, sel[i]));
    }
    CU_ASSERT_FALSE(h->vars[sel[3]].internal);
    for (int x = home[1]; x < home[3]; x++)   /* the blocks it took members from are empty */
        CU_ASSERT_EQUAL(h->blocks[x].nkernels, 0);
    /* the composed kernel: one MAP of t */
    rf_kernel one;
    CU_ASSERT_EQUAL(rf_fused_chain_end(h, fk), 2);
    CU_ASSERT_TRUE_FATAL(rf_fused_compose(h, fk, 0, 2, &one));
    CU_ASSERT_EQUAL(one.op, RF_K_MAP);
    CU_ASSERT_EQUAL(one.in[0], sel[0]);
    CU_ASSERT_EQUAL(one.out, sel[3]);
    rf_kernel_free(&one);

    char *text = dump(h);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "sel3 := FUSED[3] t"));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "internal: sel1 (0->1 thread), sel2 (1->2 thread)"));
    size_t len;
    uint8_t *bytes = rf_hir_serialize(h, &len);
    rf_hprogram *back = rf_hir_deserialize(bytes, len, &st);
    CU_ASSERT_PTR_NOT_NULL_FATAL(back);
    char *text2 = dump(back);
    CU_ASSERT_STRING_EQUAL(text, text2);

    /* --no-fuse of the compiled program: the members, in order, at the group's place */
    rf_unweave(back);
    CU_ASSERT_TRUE(rf_hir_verify(back, &st));
    CU_ASSERT_EQUAL(count_fused(back), 0);
    CU_ASSERT_EQUAL_FATAL(back->blocks[home[3]].nkernels, 3);
    for (int m = 0; m < 3; m++) {
        const rf_kernel *k = &back->blocks[home[3]].kernels[m];
        CU_ASSERT_TRUE(k->op == RF_K_MAP && k->in[0] == sel[m] && k->out == sel[m + 1]);
    }
    for (int v = 0; v < back->nvars; v++)
        CU_ASSERT_FALSE(back->vars[v].internal);
    CU_ASSERT_TRUE(freed_anywhere(back, sel[1]));   /* stored again, so freed again */
    free(text);
    free(text2);
    free(bytes);
    rf_hir_free(back);
    rf_hir_free(h);
}

/* No group takes a variable the user sees (an output predicate), nor
 * crosses a fixpoint loop, nor moves a member that may fail past another
 * kernel that may (the first error would change). */
static void test_cross_block_limits(void)
{
    rf_weave_opts o = {.reduce = true, .set = true};
    rf_weave_info info;
    rf_status st;
    rf_status_init(&st);

    /* sel2 is an output too: it stays a stored variable, so sel1 -> sel2
     * is the group and sel3's MAP reads sel2 on its own */
    char *text = rf_sprintf("%s@output(sel2).\n", selects_src);
    rf_hprogram *h = lower_text(text);
    rf_weave(h, &o, &info);
    CU_ASSERT_TRUE(rf_hir_verify(h, &st));
    CU_ASSERT_EQUAL(info.groups, 1);
    CU_ASSERT_EQUAL(info.members, 2);
    CU_ASSERT_FALSE(h->vars[var_named(h, "sel2")].internal);
    CU_ASSERT_TRUE(h->vars[var_named(h, "sel1")].internal);
    rf_hir_free(h);
    free(text);

    /* s1 is computed before r's loop, s2 after it: no group takes them;
     * the one group is r's JOIN and SORT inside the loop */
    h = lower_text("t(x, y) -> int32(x), int32(y).\n"
                   "s1(x, y) -> int32(x), int32(y).\n"
                   "r(x, y) -> int32(x), int32(y).\n"
                   "s2(x, y) -> int32(x), int32(y).\n"
                   "t(1, 2). t(2, 3). t(3, 4).\n"
                   "@output(s2). @output(r).\n"
                   "s1(x, y) <- t(x, y), x < 3.\n"
                   "r(x, y) <- t(x, y).\n"
                   "r(x, z) <- r(x, y), t(y, z).\n"
                   "s2(x, y) <- s1(x, y), y > 2.\n");
    rf_weave(h, &o, &info);
    CU_ASSERT_TRUE(rf_hir_verify(h, &st));
    CU_ASSERT_EQUAL(info.groups, 1);
    CU_ASSERT_EQUAL(info.sets, 1);
    CU_ASSERT_FALSE(h->vars[var_named(h, "s1")].internal);
    rf_hir_free(h);

    /* s1 and u may both divide by zero, and u's stratum lies between s1's
     * and s2's: s1's MAP cannot wait for s2 (u's error would come first) */
    h = lower_text("t(x, y) -> int32(x), int32(y).\n"
                   "s1(x, q) -> int32(x), int32(q).\n"
                   "u(x, q) -> int32(x), int32(q).\n"
                   "s2(x, q) -> int32(x), int32(q).\n"
                   "t(1, 2). t(2, 4).\n"
                   "@output(s2). @output(u).\n"
                   "s1(x, y) <- t(x, y), 10 / y > 1.\n"
                   "u(x, q) <- t(x, y), q = 20 / y.\n"
                   "s2(x, y) <- s1(x, y), y > 2.\n");
    rf_weave(h, &o, &info);
    CU_ASSERT_TRUE(rf_hir_verify(h, &st));
    CU_ASSERT_FALSE(h->vars[var_named(h, "s1")].internal);
    rf_hir_free(h);
    /* the same with u's division unable to fail: s1 -> s2 is one group */
    h = lower_text("t(x, y) -> int32(x), int32(y).\n"
                   "s1(x, q) -> int32(x), int32(q).\n"
                   "u(x, q) -> int32(x), int32(q).\n"
                   "s2(x, q) -> int32(x), int32(q).\n"
                   "t(1, 2). t(2, 4).\n"
                   "@output(s2). @output(u).\n"
                   "s1(x, y) <- t(x, y), 10 / y > 1.\n"
                   "u(x, y) <- t(x, y), y > 1.\n"
                   "s2(x, y) <- s1(x, y), y > 2.\n");
    rf_weave(h, &o, &info);
    CU_ASSERT_TRUE(rf_hir_verify(h, &st));
    CU_ASSERT_TRUE(h->vars[var_named(h, "s1")].internal);
    rf_hir_free(h);
}

/* Thesis pattern (d): two selections of one input, in two strata. */
static const char *shared_src =
    "t(id, v) -> int64(id), int64(v).\n"
    "o1(id, v) -> int64(id), int64(v).\n"
    "o2(id, v) -> int64(id), int64(v).\n"
    "t(1, 50). t(2, 150). t(3, 250). t(4, 950). t(5, 500).\n"
    "@output(o1). @output(o2).\n"
    "o1(id, v) <- t(id, v), v < 300.\n"
    "o2(id, v) <- t(id, v), v >= 200.\n";

static rf_hprogram *woven_shared(void)
{
    rf_hprogram *h = lower_text(shared_src);
    rf_weave_opts o = {.reduce = true};
    rf_weave_info info;
    rf_weave(h, &o, &info);
    CU_ASSERT_EQUAL(info.groups, 1);
    CU_ASSERT_EQUAL(info.shared, 1);
    CU_ASSERT_EQUAL(info.members, 2);
    return h;
}

/* One group, two MAPs of t, two outputs (in the members' order), no
 * internal variable; the binary form keeps it; unweaving gives the two
 * MAPs back. */
static void test_two_outputs(void)
{
    rf_hprogram *h = woven_shared();
    rf_status st;
    rf_status_init(&st);
    CU_ASSERT_TRUE_FATAL(rf_hir_verify(h, &st));
    CU_ASSERT_EQUAL(count_fused(h), 1);
    rf_kernel *fk = find_fused(h, 0, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(fk);
    const rf_fused *f = fk->fused;
    int t = var_named(h, "t"), o1 = var_named(h, "o1"), o2 = var_named(h, "o2");
    CU_ASSERT_EQUAL_FATAL(f->nout, 2);
    CU_ASSERT_EQUAL(f->out[0], o1);
    CU_ASSERT_EQUAL(f->out[1], o2);
    CU_ASSERT_EQUAL(fk->out, o1);
    CU_ASSERT_EQUAL(f->nin, 1);
    CU_ASSERT_EQUAL(f->in[0], t);
    CU_ASSERT_EQUAL(f->nedges, 0);
    CU_ASSERT_EQUAL_FATAL(f->nmembers, 2);
    CU_ASSERT_TRUE(f->members[0].op == RF_K_MAP && f->members[0].in[0] == t && f->members[0].out == o1);
    CU_ASSERT_TRUE(f->members[1].op == RF_K_MAP && f->members[1].in[0] == t && f->members[1].out == o2);
    int ends[RF_KERNEL_VARS_MAX];
    CU_ASSERT_EQUAL(rf_fused_branches(fk, ends), 2);
    CU_ASSERT_TRUE(ends[0] == 0 && ends[1] == 1);
    int vars[RF_KERNEL_VARS_MAX];
    CU_ASSERT_EQUAL(rf_kernel_writes(fk, vars), 2);
    CU_ASSERT_EQUAL(rf_kernel_reads(fk, vars), 1);

    char *text = dump(h);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "o1, o2 := FUSED[2] t"));
    size_t len;
    uint8_t *bytes = rf_hir_serialize(h, &len);
    rf_hprogram *back = rf_hir_deserialize(bytes, len, &st);
    CU_ASSERT_PTR_NOT_NULL_FATAL(back);
    char *text2 = dump(back);
    CU_ASSERT_STRING_EQUAL(text, text2);
    rf_kernel *bk = find_fused(back, 0, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(bk);
    CU_ASSERT_EQUAL(bk->fused->nout, 2);
    CU_ASSERT_EQUAL(bk->fused->nedges, 0);

    rf_unweave(back);
    CU_ASSERT_TRUE(rf_hir_verify(back, &st));
    CU_ASSERT_EQUAL(count_fused(back), 0);
    int maps = 0;
    for (int b = 0; b < back->nblocks; b++)
        for (int k = 0; k < back->blocks[b].nkernels; k++)
            maps += back->blocks[b].kernels[k].op == RF_K_MAP && back->blocks[b].kernels[k].in[0] == t;
    CU_ASSERT_EQUAL(maps, 2);
    free(text);
    free(text2);
    free(bytes);
    rf_hir_free(back);
    rf_hir_free(h);
}

/* Malformed groups of two outputs, each rejected with its message. */
static void rejects_shared(mutation m, const char *want)
{
    rf_hprogram *h = woven_shared();
    int b = -1;
    rf_kernel *fk = find_fused(h, 0, &b);
    CU_ASSERT_PTR_NOT_NULL_FATAL(fk);
    m(h, fk, b);
    rf_status st;
    rf_status_init(&st);
    bool ok = rf_hir_verify(h, &st);
    CU_ASSERT_FALSE(ok);
    if (!ok && !strstr(st.message, want)) {
        fprintf(stderr, "\n  message \"%s\" lacks \"%s\"\n", st.message, want);
        CU_FAIL("wrong message");
    }
    rf_hir_free(h);
}

static void member_reads_output(rf_hprogram *h, rf_kernel *fk, int b)
{
    /* the second branch reads the first one's result, which the group
     * only hands out at its end */
    (void)h, (void)b;
    fk->fused->members[1].in[0] = fk->fused->out[0];
}

static void output_also_input(rf_hprogram *h, rf_kernel *fk, int b)
{
    (void)h, (void)b;
    fk->fused->members[1].in[0] = fk->fused->out[0];
    fk->fused->in[fk->fused->nin++] = fk->fused->out[0];   /* room: allocated for 2 per member */
}

static void output_twice(rf_hprogram *h, rf_kernel *fk, int b)
{
    (void)h, (void)b;
    fk->fused->out[1] = fk->fused->out[0];
}

static void output_missing(rf_hprogram *h, rf_kernel *fk, int b)
{
    (void)h, (void)b;
    fk->fused->nout = 1;
}

static void first_output_not_kernel_out(rf_hprogram *h, rf_kernel *fk, int b)
{
    (void)h, (void)b;
    fk->out = fk->fused->out[1];
}

static void test_two_outputs_rejected(void)
{
    rejects_shared(member_reads_output, "neither an input of the group nor made by an earlier member");
    rejects_shared(output_also_input, "an input or listed twice");
    rejects_shared(output_twice, "listed twice");
    rejects_shared(output_missing, "not an output of the group");
    rejects_shared(first_output_not_kernel_out, "not the group's first output");
}

/* Transitive closure: the semi-naive loop's body is MAP (swap), SORT,
 * JOIN, SORT, DIFF, UNION and COPYs. */
static const char *tc_src = "edge(x, y) -> int32(x), int32(y).\n"
                            "path(x, y) -> int32(x), int32(y).\n"
                            "edge(1, 2). edge(2, 3). edge(3, 1). edge(3, 4).\n"
                            "@output(path).\n"
                            "path(x, y) <- edge(x, y).\n"
                            "path(x, z) <- path(x, y), edge(y, z).\n";

static rf_hprogram *woven_tc(void)
{
    rf_hprogram *h = lower_text(tc_src);
    rf_weave_opts o = {.reduce = true, .set = true};
    rf_weave_info info;
    rf_weave(h, &o, &info);
    CU_ASSERT_EQUAL(info.groups, 1);
    CU_ASSERT_EQUAL(info.sets, 1);
    CU_ASSERT_EQUAL(info.members, 2);
    return h;
}

/* The block that branches back to itself (a fixpoint loop's body), or -1. */
static int loop_block(const rf_hprogram *h)
{
    for (int b = 0; b < h->nblocks; b++)
        if (h->blocks[b].term == RF_TERM_BRANCH_EMPTY && (h->blocks[b].target == b || h->blocks[b].target_else == b))
            return b;
    return -1;
}

/* The semi-naive step's JOIN and the SORT of its rows, inside the loop:
 * one group with a set gather, the join's rows internal, the SORT's result
 * (path.new, which the DIFF after it reads) its output; the binary form
 * keeps it; unweaving gives the program before fusion; without set
 * gathers nothing is grouped. */
static void test_recursive_set(void)
{
    rf_hprogram *plain = lower_text(tc_src);
    char *before = dump(plain);
    rf_hprogram *h = woven_tc();
    rf_status st;
    rf_status_init(&st);
    CU_ASSERT_TRUE_FATAL(rf_hir_verify(h, &st));
    int b = -1;
    rf_kernel *fk = find_fused(h, 0, &b);
    CU_ASSERT_PTR_NOT_NULL_FATAL(fk);
    CU_ASSERT_TRUE(b >= 0 && b == loop_block(h));
    CU_ASSERT_EQUAL(fk->gather, RF_GATHER_SET);
    const rf_fused *f = fk->fused;
    CU_ASSERT_EQUAL_FATAL(f->nmembers, 2);
    CU_ASSERT_EQUAL(f->members[0].op, RF_K_JOIN);
    CU_ASSERT_EQUAL(f->members[1].op, RF_K_SORT);
    int t = f->members[0].out, pnew = var_named(h, "path.new");
    CU_ASSERT_TRUE(h->vars[t].internal);
    CU_ASSERT_FALSE(h->vars[t].sorted);
    CU_ASSERT_FALSE(freed_anywhere(h, t));
    CU_ASSERT_EQUAL(f->members[1].in[0], t);
    CU_ASSERT_EQUAL_FATAL(f->nout, 1);
    CU_ASSERT_EQUAL(f->out[0], pnew);
    CU_ASSERT_EQUAL(f->nin, 2);
    CU_ASSERT_EQUAL(f->in[0], var_named(h, "path.delta.by1"));
    CU_ASSERT_EQUAL(f->in[1], var_named(h, "edge"));
    CU_ASSERT_EQUAL_FATAL(f->nedges, 1);
    CU_ASSERT_TRUE(f->edges[0].var == t && f->edges[0].from == 0 && f->edges[0].to == 1 &&
                   f->edges[0].dep == RF_DEP_KERNEL);
    /* the DIFF against the full relation still follows the group */
    CU_ASSERT_TRUE(fk + 1 < h->blocks[b].kernels + h->blocks[b].nkernels && fk[1].op == RF_K_DIFF &&
                   fk[1].in[0] == pnew);

    char *text = dump(h);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "path.new := FUSED[2] path.delta.by1, edge  partition=key-range gather=set"));
    char *internal = rf_sprintf("internal: %s (0->1 kernel)", h->vars[t].name);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, internal));
    char *gather = rf_sprintf("gather=set: %s's rows go into a dense set (path.new: sorted, distinct)", h->vars[t].name);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, gather));
    size_t len;
    uint8_t *bytes = rf_hir_serialize(h, &len);
    rf_hprogram *back = rf_hir_deserialize(bytes, len, &st);
    CU_ASSERT_PTR_NOT_NULL_FATAL(back);
    char *text2 = dump(back);
    CU_ASSERT_STRING_EQUAL(text, text2);
    CU_ASSERT_EQUAL(find_fused(back, 0, NULL)->gather, RF_GATHER_SET);
    rf_unweave(back);
    CU_ASSERT_TRUE(rf_hir_verify(back, &st));
    char *after = dump(back);
    CU_ASSERT_STRING_EQUAL(before, after);

    rf_hprogram *n = lower_text(tc_src);
    rf_weave_opts no_set = {.reduce = true};
    rf_weave_info info;
    rf_weave(n, &no_set, &info);
    CU_ASSERT_EQUAL(info.groups, 0);
    free(internal);
    free(gather);
    free(text);
    free(text2);
    free(after);
    free(before);
    free(bytes);
    rf_hir_free(n);
    rf_hir_free(back);
    rf_hir_free(h);
    rf_hir_free(plain);
}

/* Same generation: the first rule's JOIN (with a filter, projecting its
 * key away: its rows may repeat, which a set gather does not mind) and
 * both JOINs of the loop body, each with the SORT of its rows. */
/* A probe side's SORT (docs/weaver.md milestone 6): outside loops, a set
 * gather takes the SORT that only orders its JOIN's probe side, swapping
 * the JOIN's operands when that SORT fed the second input (q03's second
 * join: lineitem's filtered rows probe the first join's result); never in
 * a loop's body; rf_fused_probe_sort says which groups are such. */
static const char *probe_src = "o(k, c, d) -> int32(k), int32(c), int32(d).\n"
                               "l(k, p, s) -> int32(k), int32(p), int32(s).\n"
                               "c(c, m) -> int32(c), int32(m).\n"
                               "o(1, 7, 3). o(2, 8, 4). o(3, 7, 5).\n"
                               "l(1, 10, 9). l(1, 11, 2). l(3, 12, 9). l(4, 13, 9).\n"
                               "c(7, 1). c(8, 2).\n"
                               "r(k, d, p) -> int32(k), int32(d), int32(p).\n"
                               "@output(r).\n"
                               "r(k, d, p) <- c(c, 1), o(k, c, d), l(k, p, s), s > 5.\n";

static void test_probe_sort(void)
{
    rf_status st;
    rf_status_init(&st);
    rf_weave_info info;
    rf_weave_opts with = {.reduce = true, .set = true, .probe = true}, without = {.reduce = true, .set = true};
    rf_hprogram *h = lower_text(probe_src), *plain = lower_text(probe_src);
    rf_weave(h, &with, &info);
    rf_weave(plain, &without, NULL);
    CU_ASSERT_TRUE_FATAL(rf_hir_verify(h, &st));
    CU_ASSERT_TRUE(info.probes >= 1);
    int probes = 0;
    for (int g = 0; find_fused(h, g, NULL); g++) {
        const rf_kernel *fk = find_fused(h, g, NULL);
        const rf_fused *f = fk->fused;
        if (!rf_fused_probe_sort(h, f))
            continue;
        probes++;
        CU_ASSERT_EQUAL(fk->gather, RF_GATHER_SET);
        CU_ASSERT_EQUAL(f->members[0].op, RF_K_SORT);
        CU_ASSERT_EQUAL(f->members[1].op, RF_K_JOIN);
        CU_ASSERT_EQUAL(f->members[1].in[0], f->members[0].out);
        CU_ASSERT_TRUE(h->vars[f->members[0].out].internal);
        /* the SORT's input is the group's; what it sorted never leaves it */
        CU_ASSERT_TRUE(f->in[0] == f->members[0].in[0] || f->in[1] == f->members[0].in[0]);
    }
    CU_ASSERT_EQUAL(probes, info.probes);
    char *text = dump(h);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "| probe: "));
    /* the binary form keeps the group; unwoven it verifies and has the
     * kernels of the plain program (the JOIN maybe with its operands swapped) */
    rf_hprogram *back = round_trip(h, text);
    rf_unweave(back);
    CU_ASSERT_TRUE(rf_hir_verify(back, &st));
    rf_unweave(plain);
    int nk = 0, nplain = 0;
    for (int b = 0; b < back->nblocks; b++)
        nk += back->blocks[b].nkernels;
    for (int b = 0; b < plain->nblocks; b++)
        nplain += plain->blocks[b].nkernels;
    CU_ASSERT_EQUAL(nk, nplain);
    free(text);
    rf_hir_free(back);
    rf_hir_free(plain);
    rf_hir_free(h);

    /* never in a loop's body (tc's step keeps its two members) */
    h = lower_text(tc_src);
    rf_weave(h, &with, &info);
    CU_ASSERT_EQUAL(info.probes, 0);
    CU_ASSERT_EQUAL(info.sets, 1);
    rf_hir_free(h);

    /* the predicate itself: a SORT, the JOIN probing with its rows, the
     * gather's SORT; not when the JOIN reads a position of the probe side
     * (it would be the row's place in the unsorted input), unless only as
     * a projected identity of rows known distinct */
    rf_kernel m[3];
    memset(m, 0, sizeof m);
    rf_instr rowid0 = {.op = RF_EX_ROWID, .index = 0}, rowid1 = {.op = RF_EX_ROWID, .index = 1};
    rf_instr rowid0_plus[3] = {{.op = RF_EX_ROWID, .index = 0}, {.op = RF_EX_CONST}, {.op = RF_EX_ADD}};
    rf_code proj = {1, &rowid1};
    m[0].op = RF_K_SORT, m[0].out = 5, m[0].in[0] = 1, m[0].in[1] = -1;
    m[1].op = RF_K_JOIN, m[1].out = 6, m[1].in[0] = 5, m[1].in[1] = 2, m[1].nkeys = 1, m[1].nproj = 1;
    m[1].proj = &proj;
    m[2].op = RF_K_SORT, m[2].out = 7, m[2].in[0] = 6, m[2].in[1] = -1;
    rf_fused f = {3, m, 0, NULL, 0, NULL, 0, NULL};
    CU_ASSERT_TRUE(rf_fused_probe_sort(NULL, &f));
    proj.ins = &rowid0;
    CU_ASSERT_FALSE(rf_fused_probe_sort(NULL, &f));
    proj.ins = &rowid1;
    m[1].in[0] = 2, m[1].in[1] = 5;   /* the SORT feeds the second input */
    CU_ASSERT_FALSE(rf_fused_probe_sort(NULL, &f));
    m[1].in[0] = 5, m[1].in[1] = 2;
    m[2].op = RF_K_AGG;                 /* no set gather after it */
    CU_ASSERT_FALSE(rf_fused_probe_sort(NULL, &f));
    m[2].op = RF_K_SORT;

    /* x (variable 1) written by one MAP that projects its row position:
     * distinct rows, so the probe side's position may be an identity */
    rf_hprogram *px = lower_text("r(a, b) -> int32(a), int32(b).\n"
                                 "s(a) -> int32(a).\n"
                                 "n[] = c -> int64(c).\n"
                                 "r(1, 2). r(1, 3). s(1).\n"
                                 "n[] = c <- agg<<c = count()>> r(a, _), s(a).\n");
    int xv = -1, other = -1;
    for (int b = 0; b < px->nblocks && xv < 0; b++)
        for (int i = 0; i < px->blocks[b].nkernels; i++) {
            const rf_kernel *k = &px->blocks[b].kernels[i];
            bool ids = false;
            for (int j = 0; k->op == RF_K_MAP && j < k->nproj; j++)
                ids = ids || (k->proj[j].n == 1 && k->proj[j].ins[0].op == RF_EX_ROWID);
            if (ids && xv < 0)
                xv = k->out;
        }
    for (int v = 0; v < px->nvars && other < 0; v++)
        if (!px->vars[v].sorted && v != xv)
            other = v;
    CU_ASSERT_TRUE_FATAL(xv >= 0);
    CU_ASSERT_TRUE(rf_hir_rows_distinct(px, xv));
    m[0].in[0] = xv;
    proj.ins = &rowid0;
    CU_ASSERT_TRUE(rf_fused_probe_sort(px, &f));
    CU_ASSERT_FALSE(rf_fused_probe_sort(NULL, &f));
    proj.n = 3, proj.ins = rowid0_plus;   /* computed with: not an identity */
    CU_ASSERT_FALSE(rf_fused_probe_sort(px, &f));
    proj.n = 1, proj.ins = &rowid0;
    m[1].filter = (rf_code){1, &rowid0};   /* read by the filter */
    CU_ASSERT_FALSE(rf_fused_probe_sort(px, &f));
    m[1].filter = (rf_code){0, NULL};
    if (other >= 0) {                      /* rows not known distinct */
        CU_ASSERT_FALSE(rf_hir_rows_distinct(px, other));
        m[0].in[0] = other;
        CU_ASSERT_FALSE(rf_fused_probe_sort(px, &f));
    }
    rf_hir_free(px);
}

static void test_recursive_sg(void)
{
    rf_hprogram *h = lower_text("edge(x, y) -> int32(x), int32(y).\n"
                                "sg(x, y) -> int32(x), int32(y).\n"
                                "edge(1, 2). edge(1, 3). edge(2, 4). edge(3, 5).\n"
                                "@output(sg).\n"
                                "sg(x, y) <- edge(p, x), edge(p, y), x != y.\n"
                                "sg(x, y) <- edge(a, x), sg(a, b), edge(b, y).\n");
    rf_weave_opts o = {.reduce = true, .set = true};
    rf_weave_info info;
    rf_weave(h, &o, &info);
    CU_ASSERT_EQUAL(info.groups, 3);
    CU_ASSERT_EQUAL(info.sets, 3);
    rf_status st;
    rf_status_init(&st);
    CU_ASSERT_TRUE_FATAL(rf_hir_verify(h, &st));
    int in_loop = 0;
    for (int i = 0; i < 3; i++) {
        int b = -1;
        rf_kernel *fk = find_fused(h, i, &b);
        CU_ASSERT_PTR_NOT_NULL_FATAL(fk);
        CU_ASSERT_EQUAL(fk->gather, RF_GATHER_SET);
        CU_ASSERT_TRUE(fk->fused->nmembers == 2 && fk->fused->members[0].op == RF_K_JOIN &&
                       fk->fused->members[1].op == RF_K_SORT);
        in_loop += b == loop_block(h);
    }
    CU_ASSERT_EQUAL(in_loop, 2);
    rf_hir_free(h);
}

/* Malformed set gathers and recursive groups, each rejected with its
 * message: mutations of the woven tc program. */
static void rejects_tc(mutation m, const char *want)
{
    rf_hprogram *h = woven_tc();
    int b = -1;
    rf_kernel *fk = find_fused(h, 0, &b);
    CU_ASSERT_PTR_NOT_NULL_FATAL(fk);
    m(h, fk, b);
    rf_status st;
    rf_status_init(&st);
    bool ok = rf_hir_verify(h, &st);
    CU_ASSERT_FALSE(ok);
    if (!ok && !strstr(st.message, want)) {
        fprintf(stderr, "\n  message \"%s\" lacks \"%s\"\n", st.message, want);
        CU_FAIL("wrong message");
    }
    rf_hir_free(h);
}

/* The block after the loop copies the join's rows out. */
static void read_after_loop(rf_hprogram *h, rf_kernel *fk, int b)
{
    rf_hblock *after = &h->blocks[h->blocks[b].target == b ? h->blocks[b].target_else : h->blocks[b].target];
    after->kernels = rf_realloc(after->kernels, (size_t)(after->nkernels + 1) * sizeof *after->kernels);
    rf_kernel *k = &after->kernels[after->nkernels++];
    memset(k, 0, sizeof *k);
    k->op = RF_K_COPY;
    k->out = var_named(h, "path.delta");
    k->in[0] = fk->fused->members[0].out;
    k->in[1] = -1;
}

/* The loop's exit test asks whether the join's rows are empty. */
static void exit_test_reads_internal(rf_hprogram *h, rf_kernel *fk, int b)
{
    rf_hblock *hb = &h->blocks[b];
    hb->conds = rf_realloc(hb->conds, (size_t)(hb->nconds + 1) * sizeof *hb->conds);
    hb->conds[hb->nconds++] = fk->fused->members[0].out;
}

static void freed_after_loop(rf_hprogram *h, rf_kernel *fk, int b)
{
    rf_hblock *after = &h->blocks[h->blocks[b].target == b ? h->blocks[b].target_else : h->blocks[b].target];
    after->free_entry = rf_realloc(after->free_entry, (size_t)(after->nfree_entry + 1) * sizeof *after->free_entry);
    after->free_entry[after->nfree_entry++] = fk->fused->members[0].out;
}

/* The DIFF after the group claims a set gather of its own. */
static void set_on_plain_kernel(rf_hprogram *h, rf_kernel *fk, int b)
{
    (void)h, (void)b;
    fk[1].gather = RF_GATHER_SET;
}

static void set_on_member(rf_hprogram *h, rf_kernel *fk, int b)
{
    (void)h, (void)b;
    fk->fused->members[1].gather = RF_GATHER_SET;
}

/* The join's rows become a stored variable while the group says its
 * edge carries them. */
static void rows_not_internal(rf_hprogram *h, rf_kernel *fk, int b)
{
    (void)b;
    h->vars[fk->fused->members[0].out].internal = false;
}

/* The SORT sorts the group's input instead of the join's rows. */
static void sort_of_input(rf_hprogram *h, rf_kernel *fk, int b)
{
    (void)h, (void)b;
    fk->fused->members[1].in[0] = fk->fused->in[0];
    fk->fused->edges[0].to = 0;
    fk->fused->nedges = 0;
}

/* The scan -> sort -> aggregate group with a set gather: its last member
 * is no SORT. */
static void set_ending_in_agg(rf_hprogram *h, rf_kernel *fk, int b)
{
    (void)h, (void)b;
    fk->gather = RF_GATHER_SET;
}

static void test_recursive_rejected(void)
{
    rejects_tc(read_after_loop, "internal to a fused kernel");
    rejects_tc(exit_test_reads_internal, "seen outside its fused kernel");
    rejects_tc(freed_after_loop, "seen outside its fused kernel");
    rejects_tc(set_on_plain_kernel, "bad partition/gather stage");
    rejects_tc(set_on_member, "a member has its own free list or a group's gather");
    rejects_tc(rows_not_internal, "which is not internal");
    rejects_tc(sort_of_input, "no later member reads");
    rejects(set_ending_in_agg, "a set gather must end with a SORT of the rows the member before it");
}

int main(void)
{
    if (CU_initialize_registry() != CUE_SUCCESS)
        return 1;
    CU_pSuite s = CU_add_suite("fused kernels", NULL, NULL);
    CU_add_test(s, "weave, round trip, unweave", test_weave_and_roundtrip);
    CU_add_test(s, "verifier rejects malformed groups", test_verifier_rejects);
    CU_add_test(s, "old format rejected", test_old_format_rejected);
    CU_add_test(s, "a chain across strata", test_cross_block_chain);
    CU_add_test(s, "what a chain across strata may not take", test_cross_block_limits);
    CU_add_test(s, "a group of two outputs", test_two_outputs);
    CU_add_test(s, "malformed groups of two outputs rejected", test_two_outputs_rejected);
    CU_add_test(s, "a set gather in a fixpoint loop (tc)", test_recursive_set);
    CU_add_test(s, "set gathers in and before a loop (sg)", test_recursive_sg);
    CU_add_test(s, "malformed set gathers and recursive groups rejected", test_recursive_rejected);
    CU_add_test(s, "a probe side's SORT in a set gather", test_probe_sort);
    CU_basic_set_mode(CU_BRM_VERBOSE);
    CU_basic_run_tests();
    unsigned failed = CU_get_number_of_failures() + CU_get_number_of_tests_failed();
    CU_cleanup_registry();
    return failed ? 1 : 0;
}
