/* Writes seed .rfx files for the fuzzer: transitive closure with a string
 * column and a filter, lowered from a hand-built plan (no planner needed),
 * and (second file) fused groups: a scan, sort and aggregate woven into a
 * reducing group, a chain of two scans across two blocks whose middle
 * predicate is internal, two scans of one input as a group of two
 * outputs, and a join into a sorted predicate (its JOIN and SORT as a
 * group with a set gather), and (third file) a triangle query as a
 * multiway join, with the second variable order lowering gives it.
 * Usage: fuzz_hir_seed OUT.rfx [OUT_FUSED.rfx [OUT_MULTIJOIN.rfx]] */
#include "hir.h"
#include "weaver.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rel(rf_plan *p, const char *name, rf_relkind kind, bool out)
{
    rf_plan_rel *r = &p->rels[p->nrels];
    memset(r, 0, sizeof *r);
    r->name = rf_strdup(name);
    r->arity = 2;
    r->types = rf_calloc(2, sizeof *r->types);
    r->types[0] = RF_TYPE_STRING;
    r->types[1] = RF_TYPE_STRING;
    r->kind = kind;
    r->is_output = out;
    r->limit = -1;
    return p->nrels++;
}

/* p's n blocks, labelled prefix0.., each with room for 8 commands. */
static void blocks(rf_plan *p, int n, const char *prefix)
{
    p->nblocks = n;
    p->blocks = rf_calloc((size_t)n, sizeof *p->blocks);
    for (int i = 0; i < n; i++) {
        p->blocks[i].label = rf_sprintf("%s%d", prefix, i);
        p->blocks[i].cmds = rf_calloc(8, sizeof(rf_plan_cmd));
    }
}

static rf_plan_cmd *cmd(rf_plan_block *b, rf_cmdkind kind, int dst, int s0, int s1)
{
    rf_plan_cmd *c = &b->cmds[b->ncmds++];
    memset(c, 0, sizeof *c);
    c->kind = kind;
    c->dst = dst;
    c->src[0] = s0;
    c->src[1] = s1;
    return c;
}

static rf_expr *col(int i) { return rf_expr_leaf(RF_EX_COL, RF_TYPE_STRING, i); }

/* A filter of src into dst: $c != "z", every column kept. */
static void filter_cmd(rf_plan_block *b, int dst, int src, int c)
{
    rf_plan_cmd *m = cmd(b, RF_CMD_MAPFILTER, dst, src, -1);
    m->filter = rf_expr_binary(RF_EX_NE, RF_TYPE_BOOL, col(c), rf_expr_const(RF_TYPE_STRING, rf_str_intern("z", 1)));
    m->nproj = 2;
    m->proj = rf_calloc(2, sizeof *m->proj);
    m->proj[0] = col(0);
    m->proj[1] = col(1);
}

/* out := count per $0 of MAP edge [filter $0 != "z"; $1, $0]; mid and
 * then (next block) o2 := filters of edge, then of mid; o3, o4 := filters
 * of edge; woven. */
static bool fused_seed(const char *path, rf_status *st)
{
    rf_plan *p = rf_calloc(1, sizeof *p);
    p->rels = rf_calloc(8, sizeof *p->rels);
    int e = rel(p, "edge", RF_REL_INPUT, false), t1 = rel(p, "t1", RF_REL_TEMP, false);
    int o = rel(p, "out", RF_REL_DERIVED, true), mid = rel(p, "mid", RF_REL_DERIVED, false);
    int o2 = rel(p, "o2", RF_REL_DERIVED, true), o3 = rel(p, "o3", RF_REL_DERIVED, true);
    int o4 = rel(p, "o4", RF_REL_DERIVED, true), o5 = rel(p, "o5", RF_REL_DERIVED, true);
    p->rels[t1].pred = -1;
    p->rels[e].nfacts = 1;
    p->rels[e].facts = rf_calloc(2, sizeof(rf_word));
    p->rels[e].facts[0] = rf_str_intern("a", 1);
    p->rels[e].facts[1] = rf_str_intern("b", 1);
    blocks(p, 3, "f");
    cmd(&p->blocks[0], RF_CMD_LOAD, e, -1, -1);
    rf_plan_cmd *m1 = cmd(&p->blocks[0], RF_CMD_MAPFILTER, t1, e, -1);
    m1->filter = rf_expr_binary(RF_EX_NE, RF_TYPE_BOOL, col(0), rf_expr_const(RF_TYPE_STRING, rf_str_intern("z", 1)));
    m1->nproj = 2;
    m1->proj = rf_calloc(2, sizeof *m1->proj);
    m1->proj[0] = col(1);
    m1->proj[1] = col(0);
    /* out := per $0, count(): a scan, a sort and an aggregate, woven into
     * one reducing group */
    rf_plan_cmd *a = cmd(&p->blocks[0], RF_CMD_AGGREGATE, o, t1, -1);
    a->nkeys = 1;
    a->lkeys = rf_calloc(1, sizeof(int));
    a->naggs = 1;
    a->aggfn = rf_calloc(1, sizeof *a->aggfn);
    a->aggfn[0] = RF_AGG_COUNT;
    a->agg_arg = rf_calloc(1, sizeof *a->agg_arg);
    p->rels[o].types[1] = RF_TYPE_INT64;
    filter_cmd(&p->blocks[0], mid, e, 1);
    filter_cmd(&p->blocks[1], o2, mid, 0);
    filter_cmd(&p->blocks[1], o3, e, 0);
    filter_cmd(&p->blocks[1], o4, e, 1);
    /* o5 := edge joined with itself on $1 = $0: a JOIN, then the SORT of
     * its rows into the sorted predicate */
    rf_plan_cmd *j = cmd(&p->blocks[1], RF_CMD_MAPJOIN, o5, e, e);
    j->nkeys = 1;
    j->lkeys = rf_calloc(1, sizeof(int));
    j->rkeys = rf_calloc(1, sizeof(int));
    j->lkeys[0] = 1;
    j->nproj = 2;
    j->proj = rf_calloc(2, sizeof *j->proj);
    j->proj[0] = col(0);
    j->proj[1] = col(3);
    cmd(&p->blocks[2], RF_CMD_HALT, -1, -1, -1);
    rf_hprogram *h = rf_hir_lower(p);
    rf_weave_opts wo = {.reduce = true, .set = true};
    rf_weave_info info;
    memset(&info, 0, sizeof info);
    rf_weave(h, &wo, &info);
    bool ok = info.groups == 4 && info.shared == 1 && info.sets == 1
                  ? rf_hir_verify(h, st) && rf_hir_save(h, path, st)
                  : rf_fail(st, RF_EXIT_RUNTIME_ERROR, "the fused seed lacks a fused kernel (%d groups)", info.groups);
    rf_hir_free(h);
    rf_plan_free(p);
    return ok;
}

/* tri(x, y, z) <- edge(x, y), edge(y, z), edge(x, z): one MULTIJOIN,
 * lowered with its second variable order (z, y, x). */
static bool multijoin_seed(const char *path, rf_status *st)
{
    rf_plan *p = rf_calloc(1, sizeof *p);
    p->rels = rf_calloc(2, sizeof *p->rels);
    int e = rel(p, "edge", RF_REL_INPUT, false), t = rel(p, "tri", RF_REL_DERIVED, true);
    p->rels[t].arity = 3;
    p->rels[t].types = rf_realloc(p->rels[t].types, 3 * sizeof *p->rels[t].types);
    p->rels[t].types[2] = RF_TYPE_STRING;
    static const char *const facts[] = {"a", "b", "b", "c", "a", "c"};
    p->rels[e].nfacts = 3;
    p->rels[e].facts = rf_calloc(6, sizeof(rf_word));
    for (int i = 0; i < 6; i++)
        p->rels[e].facts[i] = rf_str_intern(facts[i], 1);
    blocks(p, 2, "m");
    cmd(&p->blocks[0], RF_CMD_LOAD, e, -1, -1);
    rf_plan_cmd *m = cmd(&p->blocks[0], RF_CMD_MULTIJOIN, t, -1, -1);
    static const int first[] = {0, 2, 4, 6}, vars[] = {0, 1, 1, 2, 0, 2};
    m->nins = 3;
    m->ins = rf_calloc(3, sizeof *m->ins);
    m->ins[0] = m->ins[1] = m->ins[2] = e;
    m->in_first = rf_calloc(4, sizeof *m->in_first);
    memcpy(m->in_first, first, sizeof first);
    m->in_vars = rf_calloc(6, sizeof *m->in_vars);
    memcpy(m->in_vars, vars, sizeof vars);
    m->nvars = 3;
    m->nproj = 3;
    m->proj = rf_calloc(3, sizeof *m->proj);
    for (int i = 0; i < 3; i++)
        m->proj[i] = col(i);
    cmd(&p->blocks[1], RF_CMD_HALT, -1, -1, -1);
    rf_hprogram *h = rf_hir_lower(p);
    bool has_alt = false;
    for (int b = 0; b < h->nblocks; b++)
        for (int i = 0; i < h->blocks[b].nkernels; i++)
            has_alt = has_alt || (h->blocks[b].kernels[i].op == RF_K_MULTIJOIN && h->blocks[b].kernels[i].mj->alt_order);
    bool ok = has_alt ? rf_hir_verify(h, st) && rf_hir_save(h, path, st)
                      : rf_fail(st, RF_EXIT_RUNTIME_ERROR, "the multiway join seed lacks its second variable order");
    rf_hir_free(h);
    rf_plan_free(p);
    return ok;
}

int main(int argc, char **argv)
{
    if (argc < 2 || argc > 4) {
        fprintf(stderr, "usage: %s OUT.rfx [OUT_FUSED.rfx [OUT_MULTIJOIN.rfx]]\n", argv[0]);
        return 64;
    }
    rf_plan *p = rf_calloc(1, sizeof *p);
    p->rels = rf_calloc(4, sizeof *p->rels);
    int e = rel(p, "edge", RF_REL_INPUT, false), t = rel(p, "path", RF_REL_DERIVED, true);
    int d = rel(p, "path.delta", RF_REL_DELTA, false), n = rel(p, "path.new", RF_REL_NEW, false);
    p->rels[e].nfacts = 2;
    p->rels[e].facts = rf_calloc(4, sizeof(rf_word));
    p->rels[e].facts[0] = rf_str_intern("a", 1);
    p->rels[e].facts[1] = p->rels[e].facts[2] = rf_str_intern("b", 1);
    p->rels[e].facts[3] = rf_str_intern("c", 1);
    blocks(p, 3, "b");
    cmd(&p->blocks[0], RF_CMD_LOAD, e, -1, -1);
    cmd(&p->blocks[0], RF_CMD_COPY, t, e, -1);
    cmd(&p->blocks[0], RF_CMD_COPY, d, t, -1);
    rf_plan_cmd *j = cmd(&p->blocks[1], RF_CMD_MAPJOIN, n, e, d);
    j->nkeys = 1;
    j->lkeys = rf_calloc(1, sizeof(int));
    j->rkeys = rf_calloc(1, sizeof(int));
    j->lkeys[0] = 1;
    j->filter = rf_expr_binary(RF_EX_NE, RF_TYPE_BOOL, col(0),
                               rf_expr_const(RF_TYPE_STRING, rf_str_intern("z", 1)));
    j->nproj = 2;
    j->proj = rf_calloc(2, sizeof *j->proj);
    j->proj[0] = col(0);
    j->proj[1] = col(3);
    cmd(&p->blocks[1], RF_CMD_DIFFERENCE, n, n, t);
    cmd(&p->blocks[1], RF_CMD_UNION, t, t, n);
    cmd(&p->blocks[1], RF_CMD_COPY, d, n, -1);
    rf_plan_cmd *br = cmd(&p->blocks[1], RF_CMD_BRANCH_EMPTY, -1, -1, -1);
    br->nconds = 1;
    br->conds = rf_calloc(1, sizeof(int));
    br->conds[0] = d;
    br->target = 2;
    br->target_else = 1;
    cmd(&p->blocks[2], RF_CMD_HALT, -1, -1, -1);
    rf_hprogram *h = rf_hir_lower(p);
    rf_status st;
    rf_status_init(&st);
    bool ok = rf_hir_verify(h, &st) && rf_hir_save(h, argv[1], &st);
    if (ok && argc >= 3)
        ok = fused_seed(argv[2], &st);
    if (ok && argc == 4)
        ok = multijoin_seed(argv[3], &st);
    if (!ok)
        fprintf(stderr, "fuzz_hir_seed: %s\n", st.message);
    rf_hir_free(h);
    rf_plan_free(p);
    rf_str_reset();
    return ok ? 0 : 1;
}
