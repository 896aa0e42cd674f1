/* Plan passes. Construction already orders joins and pushes selections and
 * projections into each atom's scan; these passes clean up what rule-at-a-
 * time construction cannot see: scans that copy a relation unchanged,
 * a scan feeding a single later map, the same scan shared by two rules,
 * a rule's result unioned into a predicate that is still empty, and whole
 * predicates nothing needs.
 *
 * The passes rely on what construction guarantees about TEMP relations:
 * each is written by one command; they check it rather than assume it. */
#include "plan_internal.h"

#include <stdlib.h>
#include <string.h>

/* ---- Def/use helpers ---- */

static bool reads(const rf_plan_cmd *c, int rel)
{
    int ns;
    const int *src = rf_plan_cmd_sources_c(c, &ns);
    for (int i = 0; i < ns; i++)
        if (src[i] == rel)
            return true;
    for (int i = 0; i < c->nconds; i++)
        if (c->conds[i] == rel)
            return true;
    return false;
}

static bool writes(const rf_plan_cmd *c, int rel)
{
    return rf_plan_cmd_has_dst(c->kind) && c->dst == rel;
}

static int count_writes(const rf_plan *p, int rel)
{
    int n = 0;
    for (int b = 0; b < p->nblocks; b++)
        for (int i = 0; i < p->blocks[b].ncmds; i++)
            n += writes(&p->blocks[b].cmds[i], rel);
    return n;
}

static int count_reads(const rf_plan *p, int rel)
{
    int n = 0;
    for (int b = 0; b < p->nblocks; b++)
        for (int i = 0; i < p->blocks[b].ncmds; i++)
            n += reads(&p->blocks[b].cmds[i], rel);
    return n;
}

/* A temp written once, by block b's command i, and read only later in b. */
static bool local_temp(const rf_plan *p, int rel, int b, int i)
{
    if (p->rels[rel].kind != RF_REL_TEMP || count_writes(p, rel) != 1)
        return false;
    for (int bb = 0; bb < p->nblocks; bb++)
        for (int k = 0; k < p->blocks[bb].ncmds; k++)
            if (reads(&p->blocks[bb].cmds[k], rel) && (bb != b || k <= i))
                return false;
    return true;
}

/* Does any command of block b in (from, to) write rel? */
static bool written_between(const rf_plan_block *blk, int from, int to, int rel)
{
    for (int k = from + 1; k < to; k++)
        if (writes(&blk->cmds[k], rel))
            return true;
    return false;
}

static void replace_reads(rf_plan *p, int from, int to)
{
    for (int b = 0; b < p->nblocks; b++)
        for (int i = 0; i < p->blocks[b].ncmds; i++) {
            rf_plan_cmd *c = &p->blocks[b].cmds[i];
            int ns;
            int *src = rf_plan_cmd_sources(c, &ns);
            for (int k = 0; k < ns; k++)
                if (src[k] == from)
                    src[k] = to;
            for (int k = 0; k < c->nconds; k++)
                if (c->conds[k] == from)
                    c->conds[k] = to;
        }
}

static void remove_cmd(rf_plan_block *blk, int i)
{
    rf_plan_cmd_release(&blk->cmds[i]);
    memmove(&blk->cmds[i], &blk->cmds[i + 1], (size_t)(blk->ncmds - i - 1) * sizeof *blk->cmds);
    blk->ncmds--;
}

static bool is_identity_map(const rf_plan *p, const rf_plan_cmd *c)
{
    if (c->kind != RF_CMD_MAPFILTER || c->filter || c->nproj != p->rels[c->src[0]].arity)
        return false;
    for (int i = 0; i < c->nproj; i++)
        if (c->proj[i]->op != RF_EX_COL || c->proj[i]->index != i)
            return false;
    return true;
}

/* Replaces every column leaf $k of e by a copy of cols[k]. */
static rf_expr *substitute(const rf_expr *e, rf_expr *const *cols)
{
    if (!e)
        return NULL;
    if (e->op == RF_EX_COL)
        return rf_expr_clone(cols[e->index]);
    rf_expr *t = rf_malloc(sizeof *t);
    *t = *e;
    t->a = substitute(e->a, cols);
    t->b = substitute(e->b, cols);
    t->c = substitute(e->c, cols);
    return t;
}

/* ---- Pushdown ---- */

static bool reads_rowid(const rf_expr *e)
{
    return e && (e->op == RF_EX_ROWID || reads_rowid(e->a) || reads_rowid(e->b) || reads_rowid(e->c));
}

/* A map reading its input's row positions cannot move into the command
 * that produces that input: there the position is another input's. */
static bool map_reads_rowid(const rf_plan_cmd *m)
{
    bool r = reads_rowid(m->filter);
    for (int k = 0; k < m->nproj && !r; k++)
        r = reads_rowid(m->proj[k]);
    return r;
}

/* Last command in block b at or after `from` reading rel, or -1. */
static int last_read(const rf_plan_block *blk, int from, int rel)
{
    int last = -1;
    for (int k = from; k < blk->ncmds; k++)
        if (reads(&blk->cmds[k], rel))
            last = k;
    return last;
}

bool rf_plan_pass_pushdown(rf_plan *plan)
{
    bool changed = false;
    for (int b = 0; b < plan->nblocks; b++) {
        rf_plan_block *blk = &plan->blocks[b];
        for (int i = 0; i < blk->ncmds; i++) {
            rf_plan_cmd *c = &blk->cmds[i];
            if (!rf_plan_cmd_has_dst(c->kind) || !local_temp(plan, c->dst, b, i))
                continue;
            int t = c->dst;
            int use = last_read(blk, i + 1, t);
            /* A scan that copies its source: read the source instead. */
            if (is_identity_map(plan, c)) {
                if (use >= 0 && written_between(blk, i, use + 1, c->src[0]))
                    continue;
                replace_reads(plan, t, c->src[0]);
                rf_plan_cmd *reader = &blk->cmds[i + 1];
                if (c->comment && !reader->comment) {   /* keep the rule text */
                    reader->comment = c->comment;
                    c->comment = NULL;
                }
                remove_cmd(blk, i);
                i--;
                changed = true;
                continue;
            }
            /* A map or join whose only reader is a map: fuse the two, so the
             * reader's filter and projection move into the producer. */
            if (c->kind != RF_CMD_MAPFILTER && c->kind != RF_CMD_MAPJOIN && c->kind != RF_CMD_MULTIJOIN)
                continue;
            if (use < 0 || count_reads(plan, t) != 1)
                continue;
            rf_plan_cmd *m = &blk->cmds[use];
            if (m->kind != RF_CMD_MAPFILTER || map_reads_rowid(m))
                continue;
            bool clash = false;
            for (int k = i + 1; k < use && !clash; k++) {
                const rf_plan_cmd *x = &blk->cmds[k];
                int ns;
                const int *src = rf_plan_cmd_sources_c(c, &ns);
                for (int s = 0; s < ns; s++)
                    clash = clash || writes(x, src[s]);
                clash = clash || reads(x, m->dst) || writes(x, m->dst);
            }
            if (clash)
                continue;
            rf_expr *filter = substitute(m->filter, c->proj);
            if (filter) {
                c->filter = c->filter ? rf_expr_binary(RF_EX_AND, RF_TYPE_BOOL, c->filter, filter) : filter;
            }
            rf_expr **proj = rf_malloc(((size_t)m->nproj + 1) * sizeof *proj);
            for (int k = 0; k < m->nproj; k++)
                proj[k] = substitute(m->proj[k], c->proj);
            for (int k = 0; k < c->nproj; k++)
                rf_expr_free(c->proj[k]);
            free(c->proj);
            c->proj = proj;
            c->nproj = m->nproj;
            c->dst = m->dst;
            if (!c->comment && m->comment) {
                c->comment = m->comment;
                m->comment = NULL;
            }
            remove_cmd(blk, use);
            i--;   /* the fused command may fuse again */
            changed = true;
        }
    }
    return changed;
}

/* ---- Common subexpressions ---- */

static bool same_ints(const int *a, const int *b, int n)
{
    return n == 0 || memcmp(a, b, (size_t)n * sizeof *a) == 0;
}

static bool same_cmd(const rf_plan_cmd *a, const rf_plan_cmd *b)
{
    if (a->kind != b->kind || a->src[0] != b->src[0] || a->src[1] != b->src[1] ||
        a->nkeys != b->nkeys || a->nproj != b->nproj || a->naggs != b->naggs)
        return false;
    for (int i = 0; i < a->naggs; i++)
        if (a->aggfn[i] != b->aggfn[i] || !rf_expr_equal(a->agg_arg[i], b->agg_arg[i]))
            return false;
    if (!same_ints(a->lkeys, b->lkeys, a->nkeys))
        return false;
    if ((a->kind == RF_CMD_MAPJOIN || a->kind == RF_CMD_ANTIJOIN) && !same_ints(a->rkeys, b->rkeys, a->nkeys))
        return false;
    if (a->kind == RF_CMD_MULTIJOIN &&
        (a->nins != b->nins || a->nvars != b->nvars || !same_ints(a->ins, b->ins, a->nins) ||
         !same_ints(a->in_first, b->in_first, a->nins + 1) ||
         !same_ints(a->in_vars, b->in_vars, a->in_first[a->nins])))
        return false;
    if (!rf_expr_equal(a->filter, b->filter))
        return false;
    for (int i = 0; i < a->nproj; i++)
        if (!rf_expr_equal(a->proj[i], b->proj[i]))
            return false;
    return true;
}

bool rf_plan_pass_cse(rf_plan *plan)
{
    bool changed = false;
    for (int b = 0; b < plan->nblocks; b++) {
        rf_plan_block *blk = &plan->blocks[b];
        for (bool again = true; again;) {
            again = false;
            for (int i = 0; i < blk->ncmds && !again; i++) {
                rf_plan_cmd *c = &blk->cmds[i];
                if (c->kind != RF_CMD_MAPFILTER && c->kind != RF_CMD_MAPJOIN &&
                    c->kind != RF_CMD_ANTIJOIN && c->kind != RF_CMD_AGGREGATE &&
                    c->kind != RF_CMD_MULTIJOIN)
                    continue;
                if (plan->rels[c->dst].kind != RF_REL_TEMP || count_writes(plan, c->dst) != 1)
                    continue;
                for (int j = i + 1; j < blk->ncmds; j++) {
                    rf_plan_cmd *d = &blk->cmds[j];
                    if (!same_cmd(c, d))
                        continue;
                    int ns;
                    const int *src = rf_plan_cmd_sources_c(c, &ns);
                    bool stale = false;
                    for (int k = 0; k < ns; k++)
                        stale = stale || written_between(blk, i, j, src[k]);
                    if (stale || plan->rels[d->dst].kind != RF_REL_TEMP || count_writes(plan, d->dst) != 1)
                        continue;
                    replace_reads(plan, d->dst, c->dst);
                    remove_cmd(blk, j);
                    again = changed = true;
                    break;
                }
            }
        }
    }
    return changed;
}

/* ---- A union into a predicate that holds nothing yet ---- */

/* `p := Union p, t` where p is empty until this command and nothing else
 * ever writes it is `p := t`: the command that made t writes p instead
 * and the union goes. Lowering then gives p the layout every relation
 * gets (a filter of a sorted set written in place; a SORT after a
 * projection or a join, deduplicating as the union did), so a rule's
 * result is no longer copied once more into its predicate. p is empty
 * before: a derived predicate with no inline facts and no input file
 * (those come from a LOAD, which would be a second write), written by
 * this union only; no command between t's writer and the union reads p
 * (it would see the empty p). Recursive predicates are written several
 * times (the loop's unions and copies) and so never qualify.
 *
 * Under --join=auto a cyclic rule's t is written twice, once by each plan
 * of a BranchJoin (plan_build.c, auto_join), and the union follows where
 * the two branches meet: then both writers write p instead (only one of
 * them runs), see branch_writers. */

/* Whether t's writers are the last commands of the two branches of one
 * BranchJoin, each branch going on to block b only (a jump to it, or
 * falling through into it), and b entered from nowhere else. Sets the
 * writers' blocks wb[] and positions wi[]. */
static bool branch_writers(const rf_plan *p, int t, int b, int wb[2], int wi[2])
{
    int n = 0;
    for (int x = 0; x < p->nblocks; x++)
        for (int k = 0; k < p->blocks[x].ncmds; k++)
            if (writes(&p->blocks[x].cmds[k], t)) {
                if (n == 2)
                    return false;
                wb[n] = x;
                wi[n++] = k;
            }
    if (n != 2 || wb[0] == wb[1] || wb[0] == b || wb[1] == b)
        return false;
    bool paired = false;
    for (int x = 0; x < p->nblocks && !paired; x++) {
        const rf_plan_block *blk = &p->blocks[x];
        const rf_plan_cmd *c = blk->ncmds > 0 ? &blk->cmds[blk->ncmds - 1] : NULL;
        paired = c && c->kind == RF_CMD_BRANCH_JOIN &&
                 ((c->target == wb[0] && c->target_else == wb[1]) || (c->target == wb[1] && c->target_else == wb[0]));
    }
    if (!paired)
        return false;
    for (int j = 0; j < 2; j++) {
        const rf_plan_block *blk = &p->blocks[wb[j]];
        int rest = blk->ncmds - 1 - wi[j];
        bool onward = rest == 0 ? wb[j] + 1 == b
                                : rest == 1 && blk->cmds[wi[j] + 1].kind == RF_CMD_JUMP && blk->cmds[wi[j] + 1].target == b;
        if (!onward)
            return false;
    }
    for (int x = 0; x < p->nblocks; x++) {   /* no other way into b */
        if (x == wb[0] || x == wb[1])
            continue;
        const rf_plan_block *blk = &p->blocks[x];
        const rf_plan_cmd *c = blk->ncmds > 0 ? &blk->cmds[blk->ncmds - 1] : NULL;
        bool control = c && rf_plan_cmd_is_control(c->kind);
        if ((!control && x + 1 == b) || (control && c->kind != RF_CMD_HALT && (c->target == b || c->target_else == b)))
            return false;
    }
    return true;
}

bool rf_plan_pass_union_into_empty(rf_plan *plan)
{
    bool changed = false;
    for (int b = 0; b < plan->nblocks; b++) {
        rf_plan_block *blk = &plan->blocks[b];
        for (int i = 0; i < blk->ncmds; i++) {
            rf_plan_cmd *u = &blk->cmds[i];
            int p = u->dst, t = u->src[1];
            if (u->kind != RF_CMD_UNION || u->src[0] != p || t == p)
                continue;
            const rf_plan_rel *pr = &plan->rels[p];
            if (pr->kind != RF_REL_DERIVED || pr->nfacts > 0 || pr->input_path || count_writes(plan, p) != 1 ||
                count_reads(plan, t) != 1)
                continue;
            int w = i - 1;
            while (w >= 0 && !writes(&blk->cmds[w], t))
                w--;
            int wb[2], wi[2];
            if (w < 0 && plan->rels[t].kind == RF_REL_TEMP && branch_writers(plan, t, b, wb, wi)) {
                bool seen = false;   /* (the branches end in their writers) */
                for (int k = 0; k < i && !seen; k++)
                    seen = reads(&blk->cmds[k], p);
                if (seen)
                    continue;
                for (int j = 0; j < 2; j++) {
                    rf_plan_cmd *c = &plan->blocks[wb[j]].cmds[wi[j]];
                    c->dst = p;
                    if (!c->comment && u->comment)
                        c->comment = rf_strdup(u->comment);
                }
                remove_cmd(blk, i);
                i--;
                changed = true;
                continue;
            }
            if (w < 0 || !local_temp(plan, t, b, w))
                continue;
            bool seen = false;
            for (int k = w; k < i && !seen; k++)
                seen = reads(&blk->cmds[k], p);
            if (seen)
                continue;
            rf_plan_cmd *c = &blk->cmds[w];
            c->dst = p;
            if (!c->comment && u->comment) {
                c->comment = u->comment;
                u->comment = NULL;
            }
            remove_cmd(blk, i);
            i--;
            changed = true;
        }
    }
    return changed;
}

/* ---- Dead commands and relations ---- */

bool rf_plan_pass_dead_rels(rf_plan *plan)
{
    int n = plan->nrels;
    bool *live = rf_calloc((size_t)n + 1, sizeof *live);
    bool any_output = false;
    for (int r = 0; r < n; r++)
        any_output = any_output || plan->rels[r].is_output;
    /* Without output directives every derived predicate is printed. */
    for (int r = 0; r < n; r++)
        live[r] = any_output ? plan->rels[r].is_output : plan->rels[r].kind == RF_REL_DERIVED;
    /* A functional-dependency check must run, so what it reads is live;
     * so must --join=auto's choice (its branches read the same relations,
     * but the choice must not depend on that). */
    for (int b = 0; b < plan->nblocks; b++)
        for (int i = 0; i < plan->blocks[b].ncmds; i++) {
            const rf_plan_cmd *c = &plan->blocks[b].cmds[i];
            if (c->kind == RF_CMD_CHECK_KEYS)
                live[c->src[0]] = true;
            if (c->kind == RF_CMD_BRANCH_JOIN)
                live[c->src[0]] = live[c->src[1]] = true;
        }

    /* A relation is live if a live relation is computed from it; loop
     * conditions alone keep nothing alive (a loop nobody needs can stop). */
    for (bool grew = true; grew;) {
        grew = false;
        for (int b = 0; b < plan->nblocks; b++)
            for (int i = 0; i < plan->blocks[b].ncmds; i++) {
                const rf_plan_cmd *c = &plan->blocks[b].cmds[i];
                if (!rf_plan_cmd_has_dst(c->kind) || !live[c->dst])
                    continue;
                int ns;
                const int *src = rf_plan_cmd_sources_c(c, &ns);
                for (int k = 0; k < ns; k++)
                    if (!live[src[k]])
                        live[src[k]] = grew = true;
            }
    }

    bool changed = false;
    for (int b = 0; b < plan->nblocks; b++) {
        rf_plan_block *blk = &plan->blocks[b];
        for (int i = 0; i < blk->ncmds; i++) {
            rf_plan_cmd *c = &blk->cmds[i];
            if (rf_plan_cmd_has_dst(c->kind) && !live[c->dst]) {
                remove_cmd(blk, i--);
                changed = true;
            } else if (c->kind == RF_CMD_BRANCH_EMPTY) {
                int m = 0;
                for (int k = 0; k < c->nconds; k++)
                    if (live[c->conds[k]])
                        c->conds[m++] = c->conds[k];
                changed = changed || m != c->nconds;
                c->nconds = m;
                if (m == 0) {
                    /* Nothing the loop computes is needed: leave at once. */
                    free(c->conds);
                    c->conds = NULL;
                    c->kind = RF_CMD_JUMP;
                    c->target_else = -1;
                    free(c->comment);
                    c->comment = rf_strdup("loop removed: nothing needs its results");
                }
            }
        }
    }

    /* Drop relations no command mentions (outputs stay) and renumber. */
    bool *used = rf_calloc((size_t)n + 1, sizeof *used);
    for (int r = 0; r < n; r++)
        used[r] = plan->rels[r].is_output;
    for (int b = 0; b < plan->nblocks; b++)
        for (int i = 0; i < plan->blocks[b].ncmds; i++) {
            const rf_plan_cmd *c = &plan->blocks[b].cmds[i];
            if (rf_plan_cmd_has_dst(c->kind))
                used[c->dst] = true;
            int ns;
            const int *src = rf_plan_cmd_sources_c(c, &ns);
            for (int k = 0; k < ns; k++)
                used[src[k]] = true;
            for (int k = 0; k < c->nconds; k++)
                used[c->conds[k]] = true;
        }
    int *map = rf_malloc(((size_t)n + 1) * sizeof *map);
    int m = 0;
    for (int r = 0; r < n; r++) {
        if (used[r]) {
            map[r] = m;
            plan->rels[m++] = plan->rels[r];
        } else {
            map[r] = -1;
            free(plan->rels[r].name);
            free(plan->rels[r].types);
            free(plan->rels[r].facts);
            free(plan->rels[r].input_path);
            free(plan->rels[r].input_where);
            free(plan->rels[r].order_cols);
            free(plan->rels[r].order_desc);
        }
    }
    changed = changed || m != n;
    plan->nrels = m;
    for (int b = 0; b < plan->nblocks; b++)
        for (int i = 0; i < plan->blocks[b].ncmds; i++) {
            rf_plan_cmd *c = &plan->blocks[b].cmds[i];
            if (rf_plan_cmd_has_dst(c->kind))
                c->dst = map[c->dst];
            int ns;
            int *src = rf_plan_cmd_sources(c, &ns);
            for (int k = 0; k < ns; k++)
                src[k] = map[src[k]];
            for (int k = 0; k < c->nconds; k++)
                c->conds[k] = map[c->conds[k]];
        }
    free(map);
    free(used);
    free(live);
    return changed;
}
