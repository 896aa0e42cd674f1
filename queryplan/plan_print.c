/* `redfox explain --plan`: relations first, then the blocks in the style of
 * the thesis' Figure 3, one command a line:
 *
 *   t3 := MapJoin path.delta, edge on ($1 = $0) project ($0, $3)  // rule */
#include "plan_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *rel_name(const rf_plan *plan, int r)
{
    return r >= 0 && r < plan->nrels ? plan->rels[r].name : "?";
}

static const char *block_label(const rf_plan *plan, int b)
{
    return b >= 0 && b < plan->nblocks ? plan->blocks[b].label : "?";
}

static void print_types(const rf_plan_rel *r, FILE *out)
{
    fputc('(', out);
    for (int i = 0; i < r->arity; i++)
        fprintf(out, "%s%s", i ? ", " : "", rf_type_name(r->types[i]));
    fputc(')', out);
}

static void print_keys(const rf_plan_cmd *c, int nleft, FILE *out)
{
    fputs(" on (", out);
    for (int i = 0; i < c->nkeys; i++)
        fprintf(out, "%s$%d = $%d", i ? ", " : "", c->lkeys[i], nleft + c->rkeys[i]);
    fputc(')', out);
}

static void print_proj(const rf_plan_cmd *c, FILE *out)
{
    fputs(" project (", out);
    for (int i = 0; i < c->nproj; i++) {
        if (i)
            fputs(", ", out);
        rf_expr_print(c->proj[i], out, NULL);
    }
    fputc(')', out);
}

char *rf_plan_cmd_text(const rf_plan *plan, const rf_plan_cmd *c)
{
    char *line = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&line, &len);
    if (!f)
        rf_out_of_memory(0);
    const char *dst = rel_name(plan, c->dst);
    const char *s0 = rel_name(plan, c->src[0]), *s1 = rel_name(plan, c->src[1]);
    int left = c->src[0] >= 0 && c->src[0] < plan->nrels ? plan->rels[c->src[0]].arity : 0;
    switch (c->kind) {
    case RF_CMD_LOAD:
        fprintf(f, "%s := Load", dst);
        break;
    case RF_CMD_MAPFILTER:
        fprintf(f, "%s := MapFilter %s", dst, s0);
        break;
    case RF_CMD_MAPJOIN:
        fprintf(f, "%s := MapJoin %s, %s", dst, s0, s1);
        if (c->nkeys > 0)
            print_keys(c, left, f);
        else
            fputs(" cross", f);
        break;
    case RF_CMD_ANTIJOIN:
        fprintf(f, "%s := AntiJoin %s, %s", dst, s0, s1);
        if (c->nkeys > 0)
            print_keys(c, left, f);
        else
            fputs(" if empty", f);
        break;
    case RF_CMD_UNION:
        fprintf(f, "%s := Union %s, %s", dst, s0, s1);
        break;
    case RF_CMD_DIFFERENCE:
        fprintf(f, "%s := Difference %s, %s", dst, s0, s1);
        break;
    case RF_CMD_AGGREGATE:
        fprintf(f, "%s := Aggregate %s by (", dst, s0);
        for (int i = 0; i < c->nkeys; i++)
            fprintf(f, "%s$%d", i ? ", " : "", c->lkeys[i]);
        fputc(')', f);
        for (int i = 0; i < c->naggs; i++) {
            fprintf(f, "%s%s(", i ? ", " : " ", rf_plan_aggfn_name(c->aggfn[i]));
            if (c->agg_arg[i])
                rf_expr_print(c->agg_arg[i], f, NULL);
            fputc(')', f);
        }
        break;
    case RF_CMD_COPY:
        fprintf(f, "%s := Copy %s", dst, s0);
        break;
    case RF_CMD_CLEAR:
        fprintf(f, "%s := Clear", dst);
        break;
    case RF_CMD_JUMP:
        fprintf(f, "goto %s", block_label(plan, c->target));
        break;
    case RF_CMD_BRANCH_EMPTY:
        fputs("if empty(", f);
        for (int i = 0; i < c->nconds; i++)
            fprintf(f, "%s%s", i ? ", " : "", rel_name(plan, c->conds[i]));
        fprintf(f, ") goto %s else goto %s", block_label(plan, c->target),
                block_label(plan, c->target_else));
        break;
    case RF_CMD_HALT:
        fputs("halt", f);
        break;
    case RF_CMD_BRANCH_JOIN:
        /* "if rows(uedge join uedge on ($1 = $0)) grown over 3 variables >
         * ratio x 3 atoms x (rows(uedge) + rows(uedge)) / 2 goto auto0.wcoj
         * else goto auto0.binary": decided at run time (plan.h says how) */
        fprintf(f, "if rows(%s join %s on (", s0, s1);
        for (int i = 0; i < c->nkeys && c->lkeys && c->rkeys; i++)
            fprintf(f, "%s$%d = $%d", i ? ", " : "", c->lkeys[i], c->rkeys[i]);
        fprintf(f, ")) grown over %d variables > ratio x %d atoms x (rows(%s) + rows(%s)) / 2 goto %s else goto %s",
                c->nvars, c->nins, s0, s1, block_label(plan, c->target), block_label(plan, c->target_else));
        break;
    case RF_CMD_MULTIJOIN:
        /* "MultiJoin uedge($0, $1), uedge($1, $2), uedge($0, $2)": each
         * source with the variable each of its columns binds ($k: the
         * k-th variable the join binds) */
        fprintf(f, "%s := MultiJoin", dst);
        for (int i = 0; i < c->nins && c->ins && c->in_first && c->in_vars; i++) {
            fprintf(f, "%s%s(", i ? ", " : " ", rel_name(plan, c->ins[i]));
            for (int j = c->in_first[i]; j < c->in_first[i + 1]; j++)
                fprintf(f, "%s$%d", j > c->in_first[i] ? ", " : "", c->in_vars[j]);
            fputc(')', f);
        }
        break;
    case RF_CMD_CHECK_KEYS:
        fprintf(f, "CheckKeys %s key (", s0);
        for (int i = 0; i < c->nkeys; i++)
            fprintf(f, "%s$%d", i ? ", " : "", i);
        fputc(')', f);
        break;
    }
    if (c->kind == RF_CMD_MAPFILTER || c->kind == RF_CMD_MAPJOIN || c->kind == RF_CMD_ANTIJOIN ||
        c->kind == RF_CMD_MULTIJOIN) {
        if (c->filter) {
            fputs(" filter ", f);
            rf_expr_print(c->filter, f, NULL);
        }
        print_proj(c, f);
    }
    fclose(f);
    return line;
}

static void print_cmd(const rf_plan *plan, const rf_plan_cmd *c, FILE *out)
{
    /* Made as a string first so that comments line up. */
    char *line = rf_plan_cmd_text(plan, c);
    size_t len = strlen(line);
    fprintf(out, "  %s", line);
    if (c->comment)
        fprintf(out, "%*s// %s", len < 60 ? (int)(62 - len) : 2, "", c->comment);
    fputc('\n', out);
    if (c->why)   /* the planner's choice of join, and the estimate behind it */
        fprintf(out, "      // join: %s\n", c->why);
    free(line);
}

void rf_plan_print(const rf_plan *plan, FILE *out)
{
    int width = 4;
    for (int i = 0; i < plan->nrels; i++) {
        int n = (int)strlen(plan->rels[i].name);
        if (n > width)
            width = n;
    }
    fprintf(out, "relations (%d):\n", plan->nrels);
    for (int i = 0; i < plan->nrels; i++) {
        const rf_plan_rel *r = &plan->rels[i];
        fprintf(out, "  %-*s  %-7s  ", width, r->name, rf_plan_relkind_name(r->kind));
        print_types(r, out);
        if (r->nfacts)
            fprintf(out, "  facts: %zu", r->nfacts);
        if (r->input_path)
            fprintf(out, "  file: %s (%s)", r->input_path,
                    r->input_format == RF_FORMAT_CSV ? "csv" : "tsv");
        if (r->is_output)
            fputs("  output", out);
        if (r->norder > 0) {
            fputs("  order by ", out);
            for (int k = 0; k < r->norder; k++)
                fprintf(out, "%s$%d%s", k ? ", " : "", r->order_cols[k], r->order_desc[k] ? " desc" : "");
        }
        if (r->limit >= 0)
            fprintf(out, "  limit %" PRId64, r->limit);
        fputc('\n', out);
    }
    for (int b = 0; b < plan->nblocks; b++) {
        const rf_plan_block *blk = &plan->blocks[b];
        fprintf(out, "\n%s:\n", blk->label);
        for (int i = 0; i < blk->ncmds; i++)
            print_cmd(plan, &blk->cmds[i], out);
        bool ends = blk->ncmds > 0 && rf_plan_cmd_is_control(blk->cmds[blk->ncmds - 1].kind);
        if (!ends && b + 1 < plan->nblocks)
            fprintf(out, "  (falls through to %s)\n", plan->blocks[b + 1].label);
    }
}
