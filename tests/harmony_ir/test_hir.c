/* Harmony IR unit tests: lowering of hand-built plans (exact kernel
 * sequences, hoisting, sharing, layouts), liveness, the verifier, the text
 * dump, and the binary form (round trips, truncation, corruption). Plans are
 * built by hand so these tests do not depend on the query planner. */
#define _GNU_SOURCE /* memmem */
#include "hir.h"

#include <CUnit/Basic.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- plan construction ---- */

static rf_plan *plan_new(void) { return rf_calloc(1, sizeof(rf_plan)); }

static int add_rel_t(rf_plan *p, const char *name, int arity, const rf_type *types,
                     rf_relkind kind, bool output)
{
    p->rels = rf_realloc(p->rels, (size_t)(p->nrels + 1) * sizeof *p->rels);
    rf_plan_rel *r = &p->rels[p->nrels];
    memset(r, 0, sizeof *r);
    r->name = rf_strdup(name);
    r->arity = arity;
    r->types = rf_calloc((size_t)arity + 1, sizeof *r->types);
    memcpy(r->types, types, (size_t)arity * sizeof *types);
    r->kind = kind;
    r->pred = kind == RF_REL_TEMP ? -1 : 0;
    r->is_output = output;
    r->limit = -1;
    return p->nrels++;
}

static int add_rel(rf_plan *p, const char *name, int arity, rf_relkind kind, bool output)
{
    rf_type t[8] = {RF_TYPE_INT64, RF_TYPE_INT64, RF_TYPE_INT64, RF_TYPE_INT64,
                    RF_TYPE_INT64, RF_TYPE_INT64, RF_TYPE_INT64, RF_TYPE_INT64};
    return add_rel_t(p, name, arity, t, kind, output);
}

static void set_facts(rf_plan *p, int rel, size_t n, const rf_word *w)
{
    rf_plan_rel *r = &p->rels[rel];
    r->nfacts = n;
    r->facts = rf_calloc(n * (size_t)r->arity + 1, sizeof *r->facts);
    memcpy(r->facts, w, n * (size_t)r->arity * sizeof *w);
}

static int add_block(rf_plan *p, const char *label)
{
    p->blocks = rf_realloc(p->blocks, (size_t)(p->nblocks + 1) * sizeof *p->blocks);
    rf_plan_block *b = &p->blocks[p->nblocks];
    memset(b, 0, sizeof *b);
    b->label = rf_strdup(label);
    return p->nblocks++;
}

static rf_plan_cmd *add_cmd(rf_plan *p, int b, rf_cmdkind kind, int dst, int s0, int s1)
{
    rf_plan_block *pb = &p->blocks[b];
    pb->cmds = rf_realloc(pb->cmds, (size_t)(pb->ncmds + 1) * sizeof *pb->cmds);
    rf_plan_cmd *c = &pb->cmds[pb->ncmds++];
    memset(c, 0, sizeof *c);
    c->kind = kind;
    c->dst = dst;
    c->src[0] = s0;
    c->src[1] = s1;
    c->target = c->target_else = -1;
    return c;
}

static int *ints(int n, const int *v)
{
    int *r = rf_calloc((size_t)n + 1, sizeof *r);
    memcpy(r, v, (size_t)n * sizeof *v);
    return r;
}

static void set_keys(rf_plan_cmd *c, int n, const int *l, const int *r)
{
    c->nkeys = n;
    c->lkeys = ints(n, l);
    c->rkeys = r ? ints(n, r) : NULL;
}

static rf_expr *col(int i) { return rf_expr_leaf(RF_EX_COL, RF_TYPE_INT64, i); }
static rf_expr *num(int64_t v) { return rf_expr_const(RF_TYPE_INT64, rf_word_from_int(v)); }
static rf_expr *bin(rf_exop op, rf_expr *a, rf_expr *b)
{
    return rf_expr_binary(op, rf_exop_is_comparison(op) ? RF_TYPE_BOOL : a->type, a, b);
}

static void set_proj(rf_plan_cmd *c, int n, const int *cols)
{
    c->nproj = n;
    c->proj = rf_calloc((size_t)n + 1, sizeof *c->proj);
    for (int i = 0; i < n; i++)
        c->proj[i] = col(cols[i]);
}

static void branch(rf_plan *p, int b, int cond, int target, int target_else)
{
    rf_plan_cmd *c = add_cmd(p, b, RF_CMD_BRANCH_EMPTY, -1, -1, -1);
    c->nconds = 1;
    c->conds = ints(1, &cond);
    c->target = target;
    c->target_else = target_else;
}

/* ---- inspection helpers ---- */

static char *dump(const rf_hprogram *p)
{
    char *s = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&s, &n);
    rf_hir_print(p, f);
    fclose(f);
    return s;
}

static int var(const rf_hprogram *p, const char *name)
{
    for (int i = 0; i < p->nvars; i++)
        if (strcmp(p->vars[i].name, name) == 0)
            return i;
    return -1;
}

/* "OP OP OP" of a block's kernels. */
static char *ops(const rf_hblock *b)
{
    char *s = rf_calloc(1, (size_t)b->nkernels * 12 + 1);
    for (int i = 0; i < b->nkernels; i++) {
        if (i)
            strcat(s, " ");
        strcat(s, rf_kop_name(b->kernels[i].op));
    }
    return s;
}

#define CHECK_OPS(blk, want)                                                   \
    do {                                                                       \
        char *got_ = ops(blk);                                                 \
        if (strcmp(got_, want) != 0)                                           \
            fprintf(stderr, "\nops: got '%s' want '%s'\n", got_, want);        \
        CU_ASSERT_STRING_EQUAL(got_, want);                                    \
        free(got_);                                                            \
    } while (0)

/* The names in a free list as "a b c". */
static char *names(const rf_hprogram *p, int n, const int *v)
{
    char *s = rf_calloc(1, 1);
    for (int i = 0; i < n; i++) {
        char *t = rf_sprintf("%s%s%s", s, i ? " " : "", p->vars[v[i]].name);
        free(s);
        s = t;
    }
    return s;
}

#define CHECK_FREES(p, k, want)                                                \
    do {                                                                       \
        char *got_ = names(p, (k)->nfree, (k)->frees);                         \
        if (strcmp(got_, want) != 0)                                           \
            fprintf(stderr, "\nfrees: got '%s' want '%s'\n", got_, want);      \
        CU_ASSERT_STRING_EQUAL(got_, want);                                    \
        free(got_);                                                            \
    } while (0)

static void check_verifies(const rf_hprogram *p)
{
    rf_status st;
    rf_status_init(&st);
    bool ok = rf_hir_verify(p, &st);
    if (!ok)
        fprintf(stderr, "\nverify: %s\n", st.message);
    CU_ASSERT_TRUE(ok);
}

/* ---- the transitive-closure plan ----
 *   init:  edge := LOAD; path := edge; path.delta := path
 *   loop:  path.new := π(x,z)(edge(x,y) ⋈ path.delta(y,z))
 *          path.new := path.new − path; path := path ∪ path.new;
 *          path.delta := path.new; if empty(path.delta) exit else loop
 *   exit:  halt */
static rf_plan *tc_plan(void)
{
    rf_plan *p = plan_new();
    int edge = add_rel(p, "edge", 2, RF_REL_INPUT, false);
    int path = add_rel(p, "path", 2, RF_REL_DERIVED, true);
    int delta = add_rel(p, "path.delta", 2, RF_REL_DELTA, false);
    int nw = add_rel(p, "path.new", 2, RF_REL_NEW, false);
    rf_word facts[] = {1, 2, 2, 3, 3, 4};
    set_facts(p, edge, 3, facts);
    p->rels[edge].input_path = rf_strdup("edge.tsv");
    int b0 = add_block(p, "init"), b1 = add_block(p, "loop"), b2 = add_block(p, "exit");
    add_cmd(p, b0, RF_CMD_LOAD, edge, -1, -1);
    add_cmd(p, b0, RF_CMD_COPY, path, edge, -1);
    add_cmd(p, b0, RF_CMD_COPY, delta, path, -1);
    rf_plan_cmd *j = add_cmd(p, b1, RF_CMD_MAPJOIN, nw, edge, delta);
    set_keys(j, 1, (int[]){1}, (int[]){0});
    set_proj(j, 2, (int[]){0, 3});
    j->comment = rf_strdup("path(x, z) <- edge(x, y), path(y, z).");
    add_cmd(p, b1, RF_CMD_DIFFERENCE, nw, nw, path);
    add_cmd(p, b1, RF_CMD_UNION, path, path, nw);
    add_cmd(p, b1, RF_CMD_COPY, delta, nw, -1);
    branch(p, b1, delta, b2, b1);
    add_cmd(p, b2, RF_CMD_HALT, -1, -1, -1);
    return p;
}

static void test_tc_lowering(void)
{
    rf_plan *plan = tc_plan();
    rf_hprogram *p = rf_hir_lower(plan);
    check_verifies(p);
    CU_ASSERT_EQUAL_FATAL(p->nblocks, 3);
    /* the re-key of edge (never written in the loop) runs once, before it */
    CHECK_OPS(&p->blocks[0], "LOAD COPY COPY MAP SORT");
    CHECK_OPS(&p->blocks[1], "JOIN SORT DIFF COPY UNION COPY COPY");
    CHECK_OPS(&p->blocks[2], "");
    int edge = var(p, "edge"), path = var(p, "path"), delta = var(p, "path.delta");
    int nw = var(p, "path.new"), by1 = var(p, "edge.by1");
    CU_ASSERT_EQUAL(edge, 0);
    CU_ASSERT_EQUAL(path, 1);
    CU_ASSERT_EQUAL(delta, 2);
    CU_ASSERT_EQUAL(nw, 3);
    CU_ASSERT_TRUE_FATAL(by1 >= 4);
    for (int i = 0; i < 4; i++)
        CU_ASSERT_TRUE(p->vars[i].sorted);
    CU_ASSERT_TRUE(p->vars[by1].sorted);
    CU_ASSERT_STRING_EQUAL(p->vars[edge].pred, "edge");
    CU_ASSERT_STRING_EQUAL(p->vars[edge].input_path, "edge.tsv");
    CU_ASSERT_EQUAL(p->vars[edge].nfacts, 3);
    CU_ASSERT_EQUAL(p->vars[edge].facts[5], 4);
    CU_ASSERT_TRUE(p->vars[path].is_output);
    CU_ASSERT_FALSE(p->vars[edge].is_output);

    const rf_kernel *map = &p->blocks[0].kernels[3], *sort = &p->blocks[0].kernels[4];
    CU_ASSERT_EQUAL(map->in[0], edge);
    CU_ASSERT_FALSE(p->vars[map->out].sorted);
    CU_ASSERT_EQUAL(map->nproj, 2);
    CU_ASSERT_EQUAL(rf_code_as_column(&map->proj[0]), 1);
    CU_ASSERT_EQUAL(rf_code_as_column(&map->proj[1]), 0);
    CU_ASSERT_EQUAL(map->filter.n, 0);
    CU_ASSERT_EQUAL(map->partition, RF_PART_EVEN);
    CU_ASSERT_EQUAL(map->gather, RF_GATHER_COMPACT);
    CU_ASSERT_EQUAL(sort->out, by1);
    CU_ASSERT_EQUAL(sort->in[0], map->out);
    CU_ASSERT_EQUAL(sort->gather, RF_GATHER_MERGE);

    const rf_hblock *loop = &p->blocks[1];
    const rf_kernel *j = &loop->kernels[0];
    CU_ASSERT_EQUAL(j->in[0], by1);
    CU_ASSERT_EQUAL(j->in[1], delta);
    CU_ASSERT_EQUAL(j->nkeys, 1);
    CU_ASSERT_EQUAL(j->partition, RF_PART_KEY_RANGE);
    CU_ASSERT_EQUAL(j->nproj, 2);
    CU_ASSERT_EQUAL(rf_code_as_column(&j->proj[0]), 1); /* edge.x moved to column 1 */
    CU_ASSERT_EQUAL(rf_code_as_column(&j->proj[1]), 3); /* path.z: 2 + 1 */
    CU_ASSERT_FALSE(p->vars[j->out].sorted);
    CU_ASSERT_EQUAL(loop->kernels[1].out, nw);
    /* path.new := path.new − path goes through a temporary */
    CU_ASSERT_EQUAL(loop->kernels[2].in[0], nw);
    CU_ASSERT_EQUAL(loop->kernels[2].in[1], path);
    CU_ASSERT_NOT_EQUAL(loop->kernels[2].out, nw);
    CU_ASSERT_EQUAL(loop->kernels[3].out, nw);
    CU_ASSERT_EQUAL(loop->kernels[3].in[0], loop->kernels[2].out);
    CU_ASSERT_EQUAL(loop->kernels[5].out, path);
    CU_ASSERT_EQUAL(loop->kernels[6].out, delta);
    CU_ASSERT_EQUAL(loop->kernels[6].in[0], nw);
    CU_ASSERT_STRING_EQUAL(j->comment, "path(x, z) <- edge(x, y), path(y, z).");

    CU_ASSERT_EQUAL(p->blocks[0].term, RF_TERM_FALLTHROUGH);
    CU_ASSERT_EQUAL(loop->term, RF_TERM_BRANCH_EMPTY);
    CU_ASSERT_EQUAL(loop->target, 2);
    CU_ASSERT_EQUAL(loop->target_else, 1);
    CU_ASSERT_EQUAL(loop->nconds, 1);
    CU_ASSERT_EQUAL(loop->conds[0], delta);
    CU_ASSERT_EQUAL(p->blocks[2].term, RF_TERM_HALT);

    /* the dump shows the join as documented */
    char *text = dump(p);
    CU_ASSERT_PTR_NOT_NULL(strstr(text,
        "  t1 := JOIN[keys=1] edge.by1, path.delta  partition=key-range "
        "compute={filter: true; proj: $1, $3} gather=compact  free: path.delta\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "  if empty(path.delta) jump block 2 else block 1\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "  edge(int64, int64) sorted, pred edge, input \"edge.tsv\" tsv, "
                                        "3 facts {(1, 2), (2, 3), (3, 4)}\n"));
    free(text);
    rf_hir_free(p);
    rf_plan_free(plan);
}

static void test_tc_liveness(void)
{
    rf_plan *plan = tc_plan();
    rf_hprogram *p = rf_hir_lower(plan);
    const rf_hblock *b0 = &p->blocks[0], *loop = &p->blocks[1], *exitb = &p->blocks[2];
    CHECK_FREES(p, &b0->kernels[0], "");
    CHECK_FREES(p, &b0->kernels[1], "");
    CHECK_FREES(p, &b0->kernels[2], "");
    CHECK_FREES(p, &b0->kernels[3], "edge");
    CHECK_FREES(p, &b0->kernels[4], "t0");
    CHECK_FREES(p, &loop->kernels[0], "path.delta");
    CHECK_FREES(p, &loop->kernels[1], "t1");
    CHECK_FREES(p, &loop->kernels[2], "path.new");
    CHECK_FREES(p, &loop->kernels[3], "t2");
    CHECK_FREES(p, &loop->kernels[4], "");        /* path is an output */
    CHECK_FREES(p, &loop->kernels[5], "t3");
    CHECK_FREES(p, &loop->kernels[6], "path.new"); /* the COPY becomes a move */
    char *s = names(p, b0->nfree_entry, b0->free_entry);
    CU_ASSERT_STRING_EQUAL(s, "");
    free(s);
    s = names(p, loop->nfree_entry, loop->free_entry);
    CU_ASSERT_STRING_EQUAL(s, "");
    free(s);
    /* leaving the loop frees what was live around the back edge */
    s = names(p, exitb->nfree_entry, exitb->free_entry);
    CU_ASSERT_STRING_EQUAL(s, "path.delta edge.by1");
    free(s);
    /* outputs are never freed; edge.by1 (live around the back edge) is not
     * freed inside the loop */
    int by1 = var(p, "edge.by1");
    for (int b = 0; b < p->nblocks; b++) {
        for (int k = 0; k < p->blocks[b].nkernels; k++)
            for (int i = 0; i < p->blocks[b].kernels[k].nfree; i++) {
                int v = p->blocks[b].kernels[k].frees[i];
                CU_ASSERT_FALSE(p->vars[v].is_output);
                CU_ASSERT_FALSE(b == 1 && v == by1);
            }
        for (int i = 0; i < p->blocks[b].nfree_entry; i++)
            CU_ASSERT_FALSE(p->vars[p->blocks[b].free_entry[i]].is_output);
    }
    /* liveness is idempotent */
    char *before = dump(p);
    rf_hir_liveness(p);
    char *after = dump(p);
    CU_ASSERT_STRING_EQUAL(before, after);
    free(before);
    free(after);
    rf_hir_free(p);
    rf_plan_free(plan);
}

/* A loop whose header is the entry block and has two outside edges: the
 * hoisted re-key needs a new preheader block. */
static void test_preheader_block(void)
{
    rf_plan *p = plan_new();
    int e = add_rel(p, "e", 2, RF_REL_INPUT, false);
    int r = add_rel(p, "r", 2, RF_REL_DERIVED, true);
    int d = add_rel(p, "r.delta", 2, RF_REL_DELTA, false);
    int b0 = add_block(p, "entry"), b1 = add_block(p, "loop"), b2 = add_block(p, "exit");
    add_cmd(p, b0, RF_CMD_LOAD, e, -1, -1);
    branch(p, b0, e, b2, b1); /* entry -> loop or exit */
    rf_plan_cmd *j = add_cmd(p, b1, RF_CMD_MAPJOIN, d, d, e);
    set_keys(j, 1, (int[]){0}, (int[]){1});
    set_proj(j, 2, (int[]){2, 1});
    add_cmd(p, b1, RF_CMD_UNION, r, r, d);
    branch(p, b1, d, b2, b1);
    add_cmd(p, b2, RF_CMD_HALT, -1, -1, -1);
    rf_hprogram *h = rf_hir_lower(p);
    check_verifies(h);
    CU_ASSERT_EQUAL_FATAL(h->nblocks, 4);
    CU_ASSERT_STRING_EQUAL(h->blocks[1].label, "loop.preheader");
    CHECK_OPS(&h->blocks[0], "LOAD");
    CHECK_OPS(&h->blocks[1], "MAP SORT");
    CHECK_OPS(&h->blocks[2], "JOIN SORT UNION COPY");
    CU_ASSERT_EQUAL(h->blocks[0].term, RF_TERM_BRANCH_EMPTY);
    CU_ASSERT_EQUAL(h->blocks[0].target, 3);
    CU_ASSERT_EQUAL(h->blocks[0].target_else, 1); /* into the preheader */
    CU_ASSERT_EQUAL(h->blocks[1].term, RF_TERM_FALLTHROUGH);
    CU_ASSERT_EQUAL(h->blocks[2].target, 3);
    CU_ASSERT_EQUAL(h->blocks[2].target_else, 2);  /* back edge skips it */
    CU_ASSERT_EQUAL(h->blocks[1].kernels[1].out, var(h, "e.by1"));
    /* e is still needed at the branch of entry, then only as e.by1 */
    CHECK_FREES(h, &h->blocks[1].kernels[0], "e");
    char *s = names(h, h->blocks[3].nfree_entry, h->blocks[3].free_entry);
    CU_ASSERT_STRING_EQUAL(s, "e r.delta e.by1");
    free(s);
    rf_hir_free(h);
    rf_plan_free(p);
}

/* Two joins of the same relations on the same keys share the re-keyed
 * copies; filters and projections are renumbered to the new layouts. */
static void test_join_rekey_shared(void)
{
    rf_plan *p = plan_new();
    int a = add_rel(p, "a", 3, RF_REL_INPUT, false);
    int b = add_rel(p, "b", 2, RF_REL_INPUT, false);
    int j1 = add_rel(p, "j1", 2, RF_REL_DERIVED, true);
    int j2 = add_rel(p, "j2", 1, RF_REL_DERIVED, true);
    int x = add_rel(p, "x", 5, RF_REL_DERIVED, true);
    int b0 = add_block(p, "main");
    add_cmd(p, b0, RF_CMD_LOAD, a, -1, -1);
    add_cmd(p, b0, RF_CMD_LOAD, b, -1, -1);
    rf_plan_cmd *c = add_cmd(p, b0, RF_CMD_MAPJOIN, j1, a, b);
    set_keys(c, 1, (int[]){2}, (int[]){1});
    c->filter = bin(RF_EX_LT, col(0), bin(RF_EX_ADD, col(3), num(1)));
    set_proj(c, 2, (int[]){0, 4});
    c = add_cmd(p, b0, RF_CMD_MAPJOIN, j2, a, b);
    set_keys(c, 1, (int[]){2}, (int[]){1});
    set_proj(c, 1, (int[]){1});
    c = add_cmd(p, b0, RF_CMD_MAPJOIN, x, a, b); /* cross product */
    set_proj(c, 5, (int[]){0, 1, 2, 3, 4});
    add_cmd(p, b0, RF_CMD_HALT, -1, -1, -1);
    rf_hprogram *h = rf_hir_lower(p);
    check_verifies(h);
    CU_ASSERT_EQUAL_FATAL(h->nblocks, 1);
    CHECK_OPS(&h->blocks[0], "LOAD LOAD MAP SORT MAP SORT JOIN SORT JOIN SORT JOIN SORT");
    const rf_kernel *k = h->blocks[0].kernels;
    int aby = var(h, "a.by2"), bby = var(h, "b.by1");
    CU_ASSERT_TRUE_FATAL(aby >= 0 && bby >= 0);
    CU_ASSERT_EQUAL(k[3].out, aby);
    CU_ASSERT_EQUAL(k[5].out, bby);
    CU_ASSERT_EQUAL(k[2].nproj, 3);
    CU_ASSERT_EQUAL(rf_code_as_column(&k[2].proj[0]), 2);
    CU_ASSERT_EQUAL(rf_code_as_column(&k[2].proj[1]), 0);
    CU_ASSERT_EQUAL(rf_code_as_column(&k[2].proj[2]), 1);
    CU_ASSERT_EQUAL(k[6].in[0], aby);
    CU_ASSERT_EQUAL(k[6].in[1], bby);
    CU_ASSERT_EQUAL(k[8].in[0], aby); /* shared */
    CU_ASSERT_EQUAL(k[8].in[1], bby);
    CU_ASSERT_EQUAL(k[10].in[0], a);  /* cross product: layouts as they are */
    CU_ASSERT_EQUAL(k[10].in[1], b);
    CU_ASSERT_EQUAL(k[10].nkeys, 0);
    char *text = dump(h);
    /* a.by2 = (z, x, y), b.by1 = (w, v): $0 -> $1, $3 (v) -> $4, $4 (w) -> $3 */
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "  t2 := JOIN[keys=1] a.by2, b.by1  partition=key-range "
                                        "compute={filter: ($1 < ($4 + 1)); proj: $1, $3} gather=compact\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "  t3 := JOIN[keys=1] a.by2, b.by1  partition=key-range "
                                        "compute={filter: true; proj: $2} gather=compact  free: a.by2, b.by1\n"));
    free(text);
    CHECK_FREES(h, &k[11], "t4");
    CHECK_FREES(h, &k[10], "a b"); /* a and b last used by the cross product */
    rf_hir_free(h);
    rf_plan_free(p);
}

static void test_antijoin(void)
{
    rf_plan *p = plan_new();
    int a = add_rel(p, "a", 3, RF_REL_INPUT, false);
    int b = add_rel(p, "b", 2, RF_REL_INPUT, false);
    int c = add_rel(p, "c", 1, RF_REL_DERIVED, true);
    int d = add_rel(p, "d", 3, RF_REL_DERIVED, true);
    int b0 = add_block(p, "main");
    add_cmd(p, b0, RF_CMD_LOAD, a, -1, -1);
    add_cmd(p, b0, RF_CMD_LOAD, b, -1, -1);
    rf_plan_cmd *k = add_cmd(p, b0, RF_CMD_ANTIJOIN, c, a, b);
    set_keys(k, 1, (int[]){1}, (int[]){1});
    k->filter = bin(RF_EX_GT, col(2), num(5));
    set_proj(k, 1, (int[]){0});
    /* keys already leading on both sides, identity projection: one kernel */
    k = add_cmd(p, b0, RF_CMD_ANTIJOIN, d, a, b);
    set_keys(k, 1, (int[]){0}, (int[]){0});
    set_proj(k, 3, (int[]){0, 1, 2});
    add_cmd(p, b0, RF_CMD_HALT, -1, -1, -1);
    rf_hprogram *h = rf_hir_lower(p);
    check_verifies(h);
    CHECK_OPS(&h->blocks[0], "LOAD LOAD MAP SORT MAP SORT ANTIJOIN MAP SORT ANTIJOIN");
    const rf_kernel *kk = h->blocks[0].kernels;
    char *text = dump(h);
    /* the filter is applied while re-keying the left side */
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "  t0 := MAP a  partition=even compute={filter: ($2 > 5); "
                                        "proj: $1, $0, $2} gather=compact\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "  t1 := MAP b  partition=even compute={filter: true; proj: $1} "
                                        "gather=compact\n"));
    free(text);
    CU_ASSERT_EQUAL(kk[3].out, var(h, "a.by1"));
    CU_ASSERT_EQUAL(kk[5].out, var(h, "b.keys1"));
    CU_ASSERT_EQUAL(h->vars[var(h, "b.keys1")].arity, 1);
    CU_ASSERT_EQUAL(kk[6].nkeys, 1);
    CU_ASSERT_EQUAL(kk[6].partition, RF_PART_KEY_RANGE);
    CU_ASSERT_TRUE(h->vars[kk[6].out].sorted);
    CU_ASSERT_EQUAL(rf_code_as_column(&kk[7].proj[0]), 1); /* a.x is column 1 of a.by1 */
    CU_ASSERT_EQUAL(kk[8].out, c);
    CU_ASSERT_EQUAL(kk[9].out, d);
    CU_ASSERT_EQUAL(kk[9].in[0], a);
    CU_ASSERT_EQUAL(kk[9].in[1], b);
    rf_hir_free(h);
    rf_plan_free(p);
}

/* One aggregate fn(arg) on an AGGREGATE command. */
static void set_agg(rf_plan_cmd *c, rf_aggfn fn, rf_expr *arg)
{
    c->naggs = 1;
    c->aggfn = rf_malloc(sizeof *c->aggfn);
    c->agg_arg = rf_malloc(sizeof *c->agg_arg);
    c->aggfn[0] = fn;
    c->agg_arg[0] = arg;
}

static void test_aggregate(void)
{
    rf_plan *p = plan_new();
    int a = add_rel(p, "a", 3, RF_REL_INPUT, false);
    int s = add_rel(p, "s", 2, RF_REL_DERIVED, true);
    int n = add_rel(p, "n", 1, RF_REL_DERIVED, true);
    int m = add_rel(p, "m", 2, RF_REL_DERIVED, true);
    int b0 = add_block(p, "main");
    add_cmd(p, b0, RF_CMD_LOAD, a, -1, -1);
    rf_plan_cmd *c = add_cmd(p, b0, RF_CMD_AGGREGATE, s, a, -1);
    set_keys(c, 1, (int[]){2}, NULL);
    set_agg(c, RF_AGG_TOTAL, bin(RF_EX_MUL, col(0), col(1)));
    c = add_cmd(p, b0, RF_CMD_AGGREGATE, n, a, -1); /* keyless count */
    set_agg(c, RF_AGG_COUNT, NULL);
    c = add_cmd(p, b0, RF_CMD_AGGREGATE, m, a, -1); /* keys already first */
    set_keys(c, 1, (int[]){0}, NULL);
    set_agg(c, RF_AGG_MIN, col(2));
    add_cmd(p, b0, RF_CMD_HALT, -1, -1, -1);
    rf_hprogram *h = rf_hir_lower(p);
    check_verifies(h);
    CHECK_OPS(&h->blocks[0], "LOAD MAP SORT AGG AGG AGG");
    const rf_kernel *k = h->blocks[0].kernels;
    CU_ASSERT_EQUAL(k[3].in[0], var(h, "a.by2"));
    CU_ASSERT_EQUAL(k[3].out, s);
    CU_ASSERT_EQUAL(k[3].nkeys, 1);
    CU_ASSERT_EQUAL(k[3].naggs, 1);
    CU_ASSERT_EQUAL(k[3].aggfn[0], RF_AGG_TOTAL);
    CU_ASSERT_EQUAL(k[3].partition, RF_PART_GROUP);
    CU_ASSERT_EQUAL(k[3].gather, RF_GATHER_COMPACT);
    CU_ASSERT_EQUAL(k[4].in[0], a);
    CU_ASSERT_EQUAL(k[4].nkeys, 0);
    CU_ASSERT_EQUAL(k[4].agg_arg[0].n, 0);
    CU_ASSERT_EQUAL(k[5].in[0], a);
    char *text = dump(h);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "  s := AGG[keys=1] a.by2  partition=group "
                                        "compute={total(($1 * $2))} gather=compact  free: a.by2\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "  n := AGG[keys=0] a  partition=group compute={count()} gather=compact\n"));
    free(text);
    rf_hir_free(h);
    rf_plan_free(p);
}

static void expect_invalid(rf_hprogram *h, const char *fragment);

/* CHECK_KEYS: lowered in place from the plan command, no output, reads its
 * sorted input (liveness frees it after the check when nothing else reads
 * it), printed, verified and serialised. */
static void test_check_keys(void)
{
    rf_plan *p = plan_new();
    int f = add_rel(p, "f", 2, RF_REL_INPUT, false);
    int g = add_rel(p, "g", 3, RF_REL_DERIVED, true);
    int b0 = add_block(p, "main");
    add_cmd(p, b0, RF_CMD_LOAD, f, -1, -1);
    rf_plan_cmd *c = add_cmd(p, b0, RF_CMD_CHECK_KEYS, -1, f, -1);
    c->nkeys = 1;
    c->comment = rf_strdup("functional dependency of f");
    add_cmd(p, b0, RF_CMD_LOAD, g, -1, -1);
    add_cmd(p, b0, RF_CMD_CHECK_KEYS, -1, g, -1)->nkeys = 2;
    add_cmd(p, b0, RF_CMD_HALT, -1, -1, -1);
    rf_status st;
    rf_status_init(&st);
    CU_ASSERT_TRUE(rf_plan_verify(p, &st));
    rf_hprogram *h = rf_hir_lower(p);
    rf_hir_liveness(h);
    check_verifies(h);
    CHECK_OPS(&h->blocks[0], "LOAD CHECK_KEYS LOAD CHECK_KEYS");
    const rf_kernel *k = h->blocks[0].kernels;
    CU_ASSERT_EQUAL(k[1].op, RF_K_CHECK_KEYS);
    CU_ASSERT_EQUAL(k[1].out, -1);
    CU_ASSERT_EQUAL(k[1].in[0], f);
    CU_ASSERT_EQUAL(k[1].in[1], -1);
    CU_ASSERT_EQUAL(k[1].nkeys, 1);
    CU_ASSERT_EQUAL(k[1].partition, RF_PART_NONE);
    CU_ASSERT_EQUAL(k[1].gather, RF_GATHER_NONE);
    CHECK_FREES(h, &k[1], "f");
    CU_ASSERT_EQUAL(k[3].in[0], g);
    CU_ASSERT_EQUAL(k[3].nkeys, 2);
    CHECK_FREES(h, &k[3], "");
    char *text = dump(h);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "  # functional dependency of f\n"
                                        "  CHECK_KEYS[keys=1] f  partition=none gather=none  free: f\n"));
    CU_ASSERT_STRING_EQUAL(rf_kop_name(RF_K_CHECK_KEYS), "CHECK_KEYS");

    /* round trip keeps the op */
    size_t len;
    uint8_t *data = rf_hir_serialize(h, &len);
    rf_status_init(&st);
    rf_hprogram *back = rf_hir_deserialize(data, len, &st);
    CU_ASSERT_PTR_NOT_NULL_FATAL(back);
    char *text2 = dump(back);
    CU_ASSERT_STRING_EQUAL(text, text2);
    CU_ASSERT_EQUAL(back->blocks[0].kernels[1].op, RF_K_CHECK_KEYS);
    free(text2);
    free(text);
    free(data);
    rf_hir_free(back);

    /* out = -1 only for CHECK_KEYS; it needs an input, a sorted one, and a
     * value column */
    rf_kernel *ck = &h->blocks[0].kernels[1];
    ck->out = f;
    expect_invalid(h, "output variable");
    ck->out = -1;
    ck->nkeys = 2;
    expect_invalid(h, "no value column");
    ck->nkeys = 1;
    ck->in[0] = -1;
    expect_invalid(h, "out of range");
    ck->in[0] = f;
    h->vars[f].sorted = false;
    expect_invalid(h, "not sorted");
    h->vars[f].sorted = true;
    ck->partition = RF_PART_EVEN;
    expect_invalid(h, "partition");
    ck->partition = RF_PART_NONE;
    rf_kernel *ld = &h->blocks[0].kernels[0];
    ld->out = -1;
    expect_invalid(h, "output variable");
    ld->out = f;
    check_verifies(h);
    rf_hir_free(h);
    rf_plan_free(p);
}

static void test_mapfilter_union_diff(void)
{
    rf_plan *p = plan_new();
    int a = add_rel(p, "a", 2, RF_REL_INPUT, false);
    int b = add_rel(p, "b", 2, RF_REL_INPUT, false);
    int f = add_rel(p, "f", 2, RF_REL_DERIVED, true);
    int g = add_rel(p, "g", 2, RF_REL_DERIVED, true);
    int c = add_rel(p, "c", 2, RF_REL_DERIVED, true);
    int u = add_rel(p, "u", 2, RF_REL_DERIVED, true);
    int d = add_rel(p, "d", 2, RF_REL_DERIVED, true);
    int b0 = add_block(p, "main");
    add_cmd(p, b0, RF_CMD_LOAD, a, -1, -1);
    add_cmd(p, b0, RF_CMD_LOAD, b, -1, -1);
    rf_plan_cmd *k = add_cmd(p, b0, RF_CMD_MAPFILTER, f, a, -1); /* pure filter */
    k->filter = bin(RF_EX_NE, col(0), col(1));
    set_proj(k, 2, (int[]){0, 1});
    k = add_cmd(p, b0, RF_CMD_MAPFILTER, g, a, -1);               /* swap */
    set_proj(k, 2, (int[]){1, 0});
    k = add_cmd(p, b0, RF_CMD_MAPFILTER, c, a, -1);               /* identity */
    set_proj(k, 2, (int[]){0, 1});
    add_cmd(p, b0, RF_CMD_UNION, u, a, b);
    add_cmd(p, b0, RF_CMD_DIFFERENCE, d, u, b);
    add_cmd(p, b0, RF_CMD_UNION, u, u, g);
    add_cmd(p, b0, RF_CMD_CLEAR, g, -1, -1);
    add_cmd(p, b0, RF_CMD_HALT, -1, -1, -1);
    rf_hprogram *h = rf_hir_lower(p);
    check_verifies(h);
    CHECK_OPS(&h->blocks[0], "LOAD LOAD MAP MAP SORT COPY UNION DIFF UNION COPY CLEAR");
    const rf_kernel *kk = h->blocks[0].kernels;
    CU_ASSERT_EQUAL(kk[2].out, f); /* a filter of a set stays a set */
    CU_ASSERT_EQUAL(kk[2].in[0], a);
    CU_ASSERT_FALSE(h->vars[kk[3].out].sorted);
    CU_ASSERT_EQUAL(kk[4].out, g);
    CU_ASSERT_EQUAL(kk[5].out, c);
    CU_ASSERT_EQUAL(kk[6].out, u);
    CU_ASSERT_EQUAL(kk[7].out, d);
    CU_ASSERT_EQUAL(kk[7].partition, RF_PART_KEY_RANGE);
    CU_ASSERT_NOT_EQUAL(kk[8].out, u);
    CU_ASSERT_TRUE(h->vars[kk[8].out].sorted);
    CU_ASSERT_EQUAL(kk[9].out, u);
    CU_ASSERT_EQUAL(kk[9].partition, RF_PART_NONE);
    CU_ASSERT_EQUAL(kk[10].partition, RF_PART_NONE);
    CU_ASSERT_EQUAL(kk[10].gather, RF_GATHER_NONE);
    rf_hir_free(h);
    rf_plan_free(p);
}

/* ---- verifier ---- */

static void expect_invalid(rf_hprogram *h, const char *fragment)
{
    rf_status st;
    rf_status_init(&st);
    CU_ASSERT_FALSE(rf_hir_verify(h, &st));
    if (!strstr(st.message, fragment))
        fprintf(stderr, "\nverify message '%s' lacks '%s'\n", st.message, fragment);
    CU_ASSERT_PTR_NOT_NULL(strstr(st.message, fragment));
}

static void test_verify_rejects(void)
{
    rf_plan *plan = tc_plan();
    rf_hprogram *h = rf_hir_lower(plan);
    rf_kernel *j = &h->blocks[1].kernels[0];
    int by1 = j->in[0];

    h->vars[by1].sorted = false;
    expect_invalid(h, "not sorted");
    h->vars[by1].sorted = true;

    j->nproj = 1;
    expect_invalid(h, "1 projections");
    j->nproj = 2;

    j->proj[1].ins[0].index = 4; /* JOIN has 2 + 2 columns */
    expect_invalid(h, "malformed code");
    j->proj[1].ins[0].index = 3;

    /* Row positions: a JOIN has inputs 0 and 1, and they are int64. */
    rf_instr saved_ins = j->proj[1].ins[0];
    j->proj[1].ins[0].op = RF_EX_ROWID;
    j->proj[1].ins[0].index = 2;
    j->proj[1].ins[0].type = RF_TYPE_INT64;
    expect_invalid(h, "malformed code");
    j->proj[1].ins[0].index = 1;
    j->proj[1].ins[0].type = RF_TYPE_INT32;
    expect_invalid(h, "malformed code");
    j->proj[1].ins[0] = saved_ins;

    j->in[1] = 99;
    expect_invalid(h, "out of range");
    j->in[1] = var(h, "path.delta");

    h->blocks[1].target = 7;
    expect_invalid(h, "branch target");
    h->blocks[1].target = 2;

    h->blocks[2].term = RF_TERM_FALLTHROUGH;
    expect_invalid(h, "last block falls through");
    h->blocks[2].term = RF_TERM_HALT;

    h->blocks[1].kernels[1].frees[0] = var(h, "path");
    expect_invalid(h, "an output");
    h->blocks[1].kernels[1].frees[0] = var(h, "t1");

    rf_kernel *diff = &h->blocks[1].kernels[2];
    int saved = diff->out;
    diff->out = diff->in[0];
    expect_invalid(h, "also an input");
    diff->out = saved;

    /* a JOIN may not write a sorted variable directly */
    int t = j->out;
    j->out = var(h, "path.new");
    expect_invalid(h, "not sorted");
    j->out = t;

    check_verifies(h);
    rf_hir_free(h);
    rf_plan_free(plan);
}

/* ---- binary form ---- */

/* An AGG with several aggregates and an ordered, limited output: lowered,
 * printed, verified, and through the .rfx form and back. */
static void test_aggregates_and_order(void)
{
    rf_plan *p = plan_new();
    int a = add_rel(p, "a", 3, RF_REL_INPUT, false);
    rf_type st_types[4] = {RF_TYPE_INT64, RF_TYPE_INT64, RF_TYPE_FLOAT64, RF_TYPE_INT64};
    int s = add_rel_t(p, "s", 4, st_types, RF_REL_DERIVED, true);
    p->rels[s].norder = 2;
    p->rels[s].order_cols = rf_malloc(2 * sizeof(int));
    p->rels[s].order_desc = rf_malloc(2 * sizeof(bool));
    p->rels[s].order_cols[0] = 2;
    p->rels[s].order_desc[0] = true;
    p->rels[s].order_cols[1] = 0;
    p->rels[s].order_desc[1] = false;
    p->rels[s].limit = 10;
    set_facts(p, a, 2, (const rf_word[]){1, 2, 3, 4, 5, 6});
    int b0 = add_block(p, "main");
    add_cmd(p, b0, RF_CMD_LOAD, a, -1, -1);
    rf_plan_cmd *c = add_cmd(p, b0, RF_CMD_AGGREGATE, s, a, -1);
    set_keys(c, 1, (int[]){2}, NULL);
    c->naggs = 3;
    c->aggfn = rf_malloc(3 * sizeof *c->aggfn);
    c->agg_arg = rf_calloc(3, sizeof *c->agg_arg);
    c->aggfn[0] = RF_AGG_COUNT;
    c->aggfn[1] = RF_AGG_AVG;
    c->agg_arg[1] = col(0);
    c->aggfn[2] = RF_AGG_COUNT_DISTINCT;
    c->agg_arg[2] = bin(RF_EX_ADD, col(0), col(1));
    add_cmd(p, b0, RF_CMD_HALT, -1, -1, -1);
    rf_status st;
    rf_status_init(&st);
    CU_ASSERT_TRUE(rf_plan_verify(p, &st));
    rf_hprogram *h = rf_hir_lower(p);
    check_verifies(h);
    char *text = dump(h);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "compute={count(), avg($1), count_distinct(($1 + $2))}"));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, ", output, order by $2 desc, $0, limit 10\n"));
    const rf_hvar *sv = &h->vars[var(h, "s")];
    CU_ASSERT_EQUAL(sv->norder, 2);
    CU_ASSERT_EQUAL(sv->limit, 10);
    CU_ASSERT_EQUAL(h->vars[var(h, "a")].limit, -1);
    size_t len;
    uint8_t *data = rf_hir_serialize(h, &len);
    rf_hprogram *back = rf_hir_deserialize(data, len, &st);
    CU_ASSERT_PTR_NOT_NULL_FATAL(back);
    char *text2 = dump(back);
    CU_ASSERT_STRING_EQUAL(text, text2);
    const rf_hvar *bv = &back->vars[var(back, "s")];
    CU_ASSERT_EQUAL_FATAL(bv->norder, 2);
    CU_ASSERT_EQUAL(bv->order_cols[0], 2);
    CU_ASSERT_TRUE(bv->order_desc[0]);
    CU_ASSERT_EQUAL(bv->order_cols[1], 0);
    CU_ASSERT_FALSE(bv->order_desc[1]);
    CU_ASSERT_EQUAL(bv->limit, 10);
    for (size_t n = 0; n < len; n++) {
        rf_status_init(&st);
        rf_hprogram *x = rf_hir_deserialize(data, n, &st);
        CU_ASSERT_PTR_NULL(x);
        rf_hir_free(x);
    }
    /* The verifier's aggregate and order checks. */
    rf_kernel *agg = NULL;
    for (int i = 0; i < back->blocks[0].nkernels; i++)
        if (back->blocks[0].kernels[i].op == RF_K_AGG)
            agg = &back->blocks[0].kernels[i];
    CU_ASSERT_PTR_NOT_NULL_FATAL(agg);
    agg->aggfn[1] = RF_AGG_TOTAL;     /* total of an int64 into a float64 */
    rf_status_init(&st);
    CU_ASSERT_FALSE(rf_hir_verify(back, &st));
    agg->aggfn[1] = RF_AGG_COUNT;     /* count with an argument */
    rf_status_init(&st);
    CU_ASSERT_FALSE(rf_hir_verify(back, &st));
    agg->aggfn[1] = RF_AGG_AVG;
    agg->naggs = 2;                   /* arity no longer keys + results */
    rf_status_init(&st);
    CU_ASSERT_FALSE(rf_hir_verify(back, &st));
    agg->naggs = 3;
    rf_hvar *ov = &back->vars[var(back, "s")];
    ov->order_cols[1] = 2;            /* a column named twice */
    rf_status_init(&st);
    CU_ASSERT_FALSE(rf_hir_verify(back, &st));
    ov->order_cols[1] = 4;            /* out of range */
    rf_status_init(&st);
    CU_ASSERT_FALSE(rf_hir_verify(back, &st));
    ov->order_cols[1] = 0;
    ov->limit = -5;
    rf_status_init(&st);
    CU_ASSERT_FALSE(rf_hir_verify(back, &st));
    ov->limit = 10;
    rf_status_init(&st);
    CU_ASSERT_TRUE(rf_hir_verify(back, &st));
    free(text);
    free(text2);
    free(data);
    rf_hir_free(back);
    rf_hir_free(h);
    rf_plan_free(p);
}

static void test_roundtrip(void)
{
    rf_plan *plan = tc_plan();
    rf_hprogram *h = rf_hir_lower(plan);
    size_t len;
    uint8_t *data = rf_hir_serialize(h, &len);
    CU_ASSERT_EQUAL(memcmp(data, "RFOXHIR\0", 8), 0);
    CU_ASSERT_EQUAL(data[8], RF_HIR_VERSION);
    rf_status st;
    rf_status_init(&st);
    rf_hprogram *back = rf_hir_deserialize(data, len, &st);
    CU_ASSERT_PTR_NOT_NULL_FATAL(back);
    char *a = dump(h), *b = dump(back);
    CU_ASSERT_STRING_EQUAL(a, b);
    size_t len2;
    uint8_t *data2 = rf_hir_serialize(back, &len2);
    CU_ASSERT_EQUAL(len, len2);
    CU_ASSERT_EQUAL(memcmp(data, data2, len), 0);
    free(a);
    free(b);
    free(data2);
    rf_hir_free(back);

    /* wrong magic, wrong version, trailing bytes */
    data[0] = 'X';
    rf_status_init(&st);
    CU_ASSERT_PTR_NULL(rf_hir_deserialize(data, len, &st));
    CU_ASSERT_STRING_EQUAL(st.message, "not a compiled Red Fox program (its first bytes are not \"RFOXHIR\")");
    data[0] = 'R';
    data[8] = 11;
    rf_status_init(&st);
    CU_ASSERT_PTR_NULL(rf_hir_deserialize(data, len, &st));
    CU_ASSERT_STRING_EQUAL(st.message,
                           "compiled by another version of redfox (format 11, this one reads 10): compile it again");
    data[8] = 4; /* the format before fused kernels */
    rf_status_init(&st);
    CU_ASSERT_PTR_NULL(rf_hir_deserialize(data, len, &st));
    CU_ASSERT_STRING_EQUAL(st.message,
                           "compiled by another version of redfox (format 4, this one reads 10): compile it again");
    data[8] = 5; /* the format before set gathers */
    rf_status_init(&st);
    CU_ASSERT_PTR_NULL(rf_hir_deserialize(data, len, &st));
    CU_ASSERT_STRING_EQUAL(st.message,
                           "compiled by another version of redfox (format 5, this one reads 10): compile it again");
    data[8] = 6; /* the format before multiway joins */
    rf_status_init(&st);
    CU_ASSERT_PTR_NULL(rf_hir_deserialize(data, len, &st));
    CU_ASSERT_STRING_EQUAL(st.message,
                           "compiled by another version of redfox (format 6, this one reads 10): compile it again");
    data[8] = 7; /* the format before --join=auto's run-time choice */
    rf_status_init(&st);
    CU_ASSERT_PTR_NULL(rf_hir_deserialize(data, len, &st));
    CU_ASSERT_STRING_EQUAL(st.message,
                           "compiled by another version of redfox (format 7, this one reads 10): compile it again");
    data[8] = 8; /* the format before counted multiway joins */
    rf_status_init(&st);
    CU_ASSERT_PTR_NULL(rf_hir_deserialize(data, len, &st));
    CU_ASSERT_STRING_EQUAL(st.message,
                           "compiled by another version of redfox (format 8, this one reads 10): compile it again");
    data[8] = 9; /* the format before second variable orders */
    rf_status_init(&st);
    CU_ASSERT_PTR_NULL(rf_hir_deserialize(data, len, &st));
    CU_ASSERT_STRING_EQUAL(st.message,
                           "compiled by another version of redfox (format 9, this one reads 10): compile it again");
    data[8] = RF_HIR_VERSION;
    uint8_t *longer = rf_calloc(len + 1, 1);
    memcpy(longer, data, len);
    rf_status_init(&st);
    CU_ASSERT_PTR_NULL(rf_hir_deserialize(longer, len + 1, &st));
    CU_ASSERT_PTR_NOT_NULL(strstr(st.message, "trailing"));
    free(longer);

    /* every truncation is rejected, an empty file by name */
    for (size_t n = 0; n < len; n++) {
        rf_status_init(&st);
        rf_hprogram *x = rf_hir_deserialize(data, n, &st);
        CU_ASSERT_PTR_NULL(x);
        if (n == 0) {
            CU_ASSERT_STRING_EQUAL(st.message, "empty file, not a compiled Red Fox program");
        } else {
            CU_ASSERT_TRUE(strncmp(st.message, "truncated .rfx file", 19) == 0 ||
                           strncmp(st.message, "malformed .rfx file", 19) == 0);
        }
        rf_hir_free(x);
    }
    free(data);
    rf_hir_free(h);
    rf_plan_free(plan);
}

/* A program with string facts and a string constant, for the dictionary. */
static rf_plan *string_plan(void)
{
    rf_plan *p = plan_new();
    rf_type t[2] = {RF_TYPE_STRING, RF_TYPE_INT64};
    int a = add_rel_t(p, "name", 2, t, RF_REL_INPUT, false);
    int f = add_rel_t(p, "bob", 2, t, RF_REL_DERIVED, true);
    rf_word facts[4] = {rf_str_intern("alice", 5), 1, rf_str_intern("bob", 3), 2};
    set_facts(p, a, 2, facts);
    int b0 = add_block(p, "main");
    add_cmd(p, b0, RF_CMD_LOAD, a, -1, -1);
    rf_plan_cmd *c = add_cmd(p, b0, RF_CMD_MAPFILTER, f, a, -1);
    c->filter = rf_expr_binary(RF_EX_EQ, RF_TYPE_BOOL, rf_expr_leaf(RF_EX_COL, RF_TYPE_STRING, 0),
                               rf_expr_const(RF_TYPE_STRING, rf_str_intern("bob", 3)));
    c->nproj = 2;
    c->proj = rf_calloc(2, sizeof *c->proj);
    c->proj[0] = rf_expr_leaf(RF_EX_COL, RF_TYPE_STRING, 0);
    c->proj[1] = col(1);
    add_cmd(p, b0, RF_CMD_HALT, -1, -1, -1);
    return p;
}

static void test_strings_remapped(void)
{
    rf_str_reset();
    rf_plan *plan = string_plan();
    rf_hprogram *h = rf_hir_lower(plan);
    check_verifies(h);
    char *before = dump(h);
    CU_ASSERT_PTR_NOT_NULL(strstr(before, "compute={filter: ($0 = \"bob\"); proj: $0, $1}"));
    size_t len;
    uint8_t *data = rf_hir_serialize(h, &len);
    rf_hir_free(h);
    rf_plan_free(plan);

    /* A fresh process that interned other strings first. */
    rf_str_reset();
    rf_str_intern("zed", 3);
    rf_str_intern("bob", 3);
    rf_status st;
    rf_status_init(&st);
    rf_hprogram *back = rf_hir_deserialize(data, len, &st);
    CU_ASSERT_PTR_NOT_NULL_FATAL(back);
    char *after = dump(back);
    CU_ASSERT_STRING_EQUAL(before, after);
    CU_ASSERT_STRING_EQUAL(rf_str_get(back->vars[0].facts[0]), "alice");
    CU_ASSERT_STRING_EQUAL(rf_str_get(back->vars[0].facts[2]), "bob");
    CU_ASSERT_EQUAL(back->vars[0].facts[2], 1); /* this process's id for bob */
    const rf_code *fc = &back->blocks[0].kernels[1].filter;
    CU_ASSERT_EQUAL(fc->ins[1].op, RF_EX_CONST);
    CU_ASSERT_EQUAL(fc->ins[1].value, 1);
    free(before);
    free(after);
    free(data);
    rf_hir_free(back);
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static void test_corruption(void)
{
    rf_plan *plans[3] = {tc_plan(), string_plan(), NULL};
    int accepted = 0, rejected = 0;
    for (int pi = 0; plans[pi]; pi++) {
        rf_hprogram *h = rf_hir_lower(plans[pi]);
        size_t len;
        uint8_t *data = rf_hir_serialize(h, &len);
        uint8_t *copy = rf_malloc(len);
        for (int iter = 0; iter < 3000; iter++) {
            memcpy(copy, data, len);
            size_t at = rng() % len;
            uint8_t v = (uint8_t)rng();
            if (v == copy[at])
                v ^= 1;
            copy[at] = v;
            rf_status st;
            rf_status_init(&st);
            rf_hprogram *x = rf_hir_deserialize(copy, len, &st);
            if (x) {
                rf_status vs;
                rf_status_init(&vs);
                CU_ASSERT_TRUE(rf_hir_verify(x, &vs));
                char *text = dump(x); /* printing a loaded program is safe */
                free(text);
                accepted++;
            } else {
                CU_ASSERT_TRUE(st.code != 0 && st.message[0] != 0);
                rejected++;
            }
            rf_hir_free(x);
        }
        free(copy);
        free(data);
        rf_hir_free(h);
        rf_plan_free(plans[pi]);
    }
    CU_ASSERT_TRUE(rejected > 0);
    CU_ASSERT_TRUE(accepted > 0); /* e.g. a changed fact value or comment */
}

static void test_save_load(void)
{
    char dir[] = "/tmp/rf_hir_test.XXXXXX";
    CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
    char *path = rf_sprintf("%s/tc.rfx", dir);
    rf_plan *plan = tc_plan();
    rf_hprogram *h = rf_hir_lower(plan);
    rf_status st;
    rf_status_init(&st);
    CU_ASSERT_TRUE(rf_hir_save(h, path, &st));
    rf_hprogram *back = rf_hir_load(path, &st);
    CU_ASSERT_PTR_NOT_NULL_FATAL(back);
    /* "edge.tsv" was relative to the working directory: stored resolved */
    int edge = -1;
    for (int v = 0; v < back->nvars; v++)
        if (back->vars[v].input_path)
            edge = v;
    CU_ASSERT_FATAL(edge >= 0);
    char *cwd = getcwd(NULL, 0);
    char *expect = rf_sprintf("%s/edge.tsv", cwd);
    CU_ASSERT_STRING_EQUAL(back->vars[edge].input_path, expect);
    free(back->vars[edge].input_path);
    back->vars[edge].input_path = rf_strdup("edge.tsv");
    char *a = dump(h), *b = dump(back);
    CU_ASSERT_STRING_EQUAL(a, b);
    free(a);
    free(b);
    rf_hir_free(back);
    /* a file inside the .rfx's folder is stored relative to it, so the
     * folder can move: the bytes name "data/edge.tsv", not the folder */
    char *saved_input = h->vars[edge].input_path;
    h->vars[edge].input_path = rf_sprintf("%s/./data/../data/edge.tsv", dir);
    CU_ASSERT_TRUE(rf_hir_save(h, path, &st));
    size_t flen;
    char *bytes = rf_read_file(path, &flen, &st);
    CU_ASSERT_PTR_NOT_NULL_FATAL(bytes);
    CU_ASSERT_PTR_NOT_NULL(memmem(bytes, flen, "data/edge.tsv", 13));
    CU_ASSERT_PTR_NULL(memmem(bytes, flen, dir, strlen(dir)));
    free(bytes);
    char *moved_dir = rf_sprintf("%s.moved", dir);
    CU_ASSERT_EQUAL(rename(dir, moved_dir), 0);
    char *moved = rf_sprintf("%s/tc.rfx", moved_dir);
    back = rf_hir_load(moved, &st);
    CU_ASSERT_PTR_NOT_NULL_FATAL(back);
    free(expect);
    expect = rf_sprintf("%s/data/edge.tsv", moved_dir);
    CU_ASSERT_STRING_EQUAL(back->vars[edge].input_path, expect);
    rf_hir_free(back);
    CU_ASSERT_EQUAL(rename(moved_dir, dir), 0);
    free(h->vars[edge].input_path);
    h->vars[edge].input_path = saved_input;
    free(moved);
    free(moved_dir);
    free(expect);
    free(cwd);
    /* only the file itself is left: no temporaries */
    DIR *d = opendir(dir);
    int entries = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            entries++;
    closedir(d);
    CU_ASSERT_EQUAL(entries, 1);
    /* a garbage file is rejected with the path in the message */
    FILE *f = fopen(path, "wb");
    fputs("hello", f);
    fclose(f);
    rf_status_init(&st);
    CU_ASSERT_PTR_NULL(rf_hir_load(path, &st));
    CU_ASSERT_PTR_NOT_NULL(strstr(st.message, "tc.rfx: not a compiled Red Fox program"));
    /* an unwritable place fails cleanly */
    char *bad = rf_sprintf("%s/no/such/dir/x.rfx", dir);
    rf_status_init(&st);
    CU_ASSERT_FALSE(rf_hir_save(h, bad, &st));
    CU_ASSERT_PTR_NOT_NULL(strstr(st.message, "cannot write"));
    free(bad);
    unlink(path);
    rmdir(dir);
    free(path);
    rf_hir_free(h);
    rf_plan_free(plan);
}

int main(void)
{
    /* RF_HIR_DUMP=1 shows the lowered transitive closure, for reading. */
    if (getenv("RF_HIR_DUMP")) {
        rf_plan *plan = tc_plan();
        rf_hprogram *h = rf_hir_lower(plan);
        rf_hir_print(h, stdout);
        rf_hir_free(h);
        rf_plan_free(plan);
    }
    if (CU_initialize_registry() != CUE_SUCCESS)
        return 1;
    CU_pSuite s = CU_add_suite("harmony_ir", NULL, NULL);
    CU_add_test(s, "tc lowering", test_tc_lowering);
    CU_add_test(s, "tc liveness", test_tc_liveness);
    CU_add_test(s, "preheader block", test_preheader_block);
    CU_add_test(s, "join re-key shared", test_join_rekey_shared);
    CU_add_test(s, "antijoin", test_antijoin);
    CU_add_test(s, "aggregate", test_aggregate);
    CU_add_test(s, "check keys", test_check_keys);
    CU_add_test(s, "mapfilter union diff", test_mapfilter_union_diff);
    CU_add_test(s, "verify rejects", test_verify_rejects);
    CU_add_test(s, "roundtrip", test_roundtrip);
    CU_add_test(s, "several aggregates, output order", test_aggregates_and_order);
    CU_add_test(s, "strings remapped", test_strings_remapped);
    CU_add_test(s, "corruption", test_corruption);
    CU_add_test(s, "save load", test_save_load);
    CU_basic_set_mode(CU_BRM_VERBOSE);
    CU_basic_run_tests();
    unsigned failed = CU_get_number_of_failures() + CU_get_number_of_tests_failed();
    CU_cleanup_registry();
    rf_str_reset();
    return failed ? 1 : 0;
}
