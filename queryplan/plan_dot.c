/* `redfox explain --dot --plan`: the plan's CFG as Graphviz DOT. One node
 * per block, an HTML-like table with a row per command (its text as
 * `explain --plan` prints it, the rule it comes from, and a row estimate
 * of what it writes); edges for fall-through, jumps and both sides of
 * each branch; semi-naive loops as red dashed clusters (common/rf_dot.c).
 * The estimates are the simple ones rf_dot.h documents. */
#include "plan_internal.h"
#include "rf_dot.h"

#include <stdlib.h>
#include <string.h>

/* Longest command text and comment a row shows (whole in --plan). */
#define CMD_CHARS 90
#define COMMENT_CHARS 80

typedef struct plan_dot {
    const rf_plan *plan;
    rf_rowest **cmd_rows;    /* [block][cmd]: the estimate of what it writes */
} plan_dot;

static rf_rowest rel_est(const rf_rowest *est, const rf_plan *plan, int r)
{
    return r >= 0 && r < plan->nrels ? est[r] : (rf_rowest){RF_ROWS_UNKNOWN, false, 0};
}

/* What command c writes, given what its sources hold (rf_dot.h). */
static rf_rowest cmd_estimate(const rf_plan *plan, const rf_plan_cmd *c, const rf_rowest *est)
{
    rf_rowest a = rel_est(est, plan, c->src[0]), b = rel_est(est, plan, c->src[1]);
    rf_rowest unknown = {RF_ROWS_UNKNOWN, false, 0};
    switch (c->kind) {
    case RF_CMD_LOAD: {
        const rf_plan_rel *r = &plan->rels[c->dst];
        return rf_rowest_input(r->nfacts, r->input_path);
    }
    case RF_CMD_MAPFILTER:
    case RF_CMD_ANTIJOIN:
    case RF_CMD_DIFFERENCE:
        return rf_rowest_at_most(a);
    case RF_CMD_MAPJOIN:
        if (c->nkeys > 0)
            return unknown;
        return c->filter ? rf_rowest_at_most(rf_rowest_product(a, b)) : rf_rowest_product(a, b);
    case RF_CMD_UNION:
        return rf_rowest_sum(a, b);
    case RF_CMD_AGGREGATE:
        return c->nkeys == 0 ? rf_rowest_at_most(rf_rowest_exact(1)) : rf_rowest_at_most(a);
    case RF_CMD_COPY:
        return a;
    case RF_CMD_CLEAR:
        return rf_rowest_exact(0);
    case RF_CMD_CHECK_KEYS:
        return a;   /* writes nothing: the rows it checks */
    default:
        return unknown;
    }
}

static void write_node(FILE *out, int b, void *ctx)
{
    const plan_dot *d = ctx;
    const rf_plan_block *blk = &d->plan->blocks[b];
    fprintf(out, "b%d [label=<<TABLE BORDER=\"1\" CELLBORDER=\"0\" CELLSPACING=\"0\" CELLPADDING=\"3\" "
                 "BGCOLOR=\"white\" COLOR=\"#34495e\">\n",
            b);
    fputs("  <TR><TD COLSPAN=\"2\" ALIGN=\"LEFT\" BGCOLOR=\"#dfe6ee\"><B>", out);
    rf_dot_html(out, blk->label, 60);
    fprintf(out, "</B>  (block %d)</TD></TR>\n", b);
    for (int i = 0; i < blk->ncmds; i++) {
        const rf_plan_cmd *c = &blk->cmds[i];
        bool control = rf_plan_cmd_is_control(c->kind);
        char *text = rf_plan_cmd_text(d->plan, c);
        fputs("  <HR/><TR><TD ALIGN=\"LEFT\" BALIGN=\"LEFT\">", out);
        fputs(control ? "<I>" : "", out);
        rf_dot_html(out, text, CMD_CHARS);
        fputs(control ? "</I>" : "", out);
        if (c->comment) {
            fputs("<BR/><FONT POINT-SIZE=\"8\" COLOR=\"#666666\">", out);
            rf_dot_html(out, c->comment, COMMENT_CHARS);
            fputs("</FONT>", out);
        }
        fputs("</TD><TD ALIGN=\"RIGHT\" VALIGN=\"TOP\">", out);
        if (!control) {   /* (Graphviz refuses an empty FONT) */
            char rows[64];
            rf_rowest_format(d->cmd_rows[b][i], rows, sizeof rows);
            fputs("<FONT COLOR=\"#1f618d\">", out);
            rf_dot_html(out, rows, 0);
            fputs("</FONT>", out);
        }
        fputs("</TD></TR>\n", out);
        free(text);
    }
    bool ends = blk->ncmds > 0 && rf_plan_cmd_is_control(blk->cmds[blk->ncmds - 1].kind);
    if (!ends && b + 1 < d->plan->nblocks)
        fputs("  <HR/><TR><TD COLSPAN=\"2\" ALIGN=\"LEFT\"><I>falls through</I></TD></TR>\n", out);
    fputs("</TABLE>>];\n", out);
}

/* "empty(path.delta, ...)": a branch's condition for its edges. */
static char *branch_condition(const rf_plan *plan, const rf_plan_cmd *c)
{
    char *s = rf_strdup("empty(");
    for (int i = 0; i < c->nconds; i++) {
        const char *name = c->conds[i] >= 0 && c->conds[i] < plan->nrels ? plan->rels[c->conds[i]].name : "?";
        char *t = rf_sprintf("%s%s%s", s, i ? ", " : "", name);
        free(s);
        s = t;
    }
    char *t = rf_sprintf("%s)", s);
    free(s);
    return t;
}

void rf_plan_write_dot(const rf_plan *plan, FILE *out)
{
    int nb = plan->nblocks;
    rf_dot_block *blocks = rf_calloc((size_t)nb + 1, sizeof *blocks);
    char **conds = rf_calloc((size_t)nb + 1, sizeof *conds);
    for (int b = 0; b < nb; b++) {
        const rf_plan_block *blk = &plan->blocks[b];
        const rf_plan_cmd *last = blk->ncmds > 0 ? &blk->cmds[blk->ncmds - 1] : NULL;
        blocks[b] = (rf_dot_block){blk->label, {b + 1 < nb ? b + 1 : -1, -1}, NULL};
        if (last && last->kind == RF_CMD_JUMP) {
            blocks[b].next[0] = last->target;
        } else if (last && last->kind == RF_CMD_BRANCH_EMPTY) {
            blocks[b].next[0] = last->target;
            blocks[b].next[1] = last->target_else;
            blocks[b].cond = conds[b] = branch_condition(plan, last);
        } else if (last && last->kind == RF_CMD_BRANCH_JOIN) {
            blocks[b].next[0] = last->target;
            blocks[b].next[1] = last->target_else;
            blocks[b].cond = conds[b] = rf_strdup("binary intermediate > ratio x inputs");
        } else if (last && last->kind == RF_CMD_HALT) {
            blocks[b].next[0] = -1;
        }
    }
    /* A block inside a loop (t..s with a back edge s -> t) computes
     * something else each iteration: its estimates are unknown. */
    bool *in_loop = rf_calloc((size_t)nb + 1, sizeof *in_loop);
    for (int b = 0; b < nb; b++)
        for (int i = 0; i < 2; i++)
            for (int t = blocks[b].next[i]; t >= 0 && t <= b; t++)
                in_loop[t] = true;
    rf_rowest *est = rf_calloc((size_t)plan->nrels + 1, sizeof *est);
    for (int r = 0; r < plan->nrels; r++)
        est[r] = rf_rowest_exact(0);   /* a relation not yet written is empty */
    plan_dot d = {plan, rf_calloc((size_t)nb + 1, sizeof *d.cmd_rows)};
    for (int b = 0; b < nb; b++) {
        const rf_plan_block *blk = &plan->blocks[b];
        d.cmd_rows[b] = rf_calloc((size_t)blk->ncmds + 1, sizeof **d.cmd_rows);
        for (int i = 0; i < blk->ncmds; i++) {
            const rf_plan_cmd *c = &blk->cmds[i];
            rf_rowest e = in_loop[b] ? (rf_rowest){RF_ROWS_UNKNOWN, false, 0} : cmd_estimate(plan, c, est);
            d.cmd_rows[b][i] = e;
            if (c->dst >= 0 && c->dst < plan->nrels && rf_plan_cmd_has_dst(c->kind))
                est[c->dst] = e;
        }
    }
    rf_dot_write_cfg(out, "plan", nb, blocks, write_node, &d);
    for (int b = 0; b < nb; b++) {
        free(d.cmd_rows[b]);
        free(conds[b]);
    }
    free(d.cmd_rows);
    free(est);
    free(in_loop);
    free(conds);
    free(blocks);
}
