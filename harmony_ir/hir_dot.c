/* `redfox explain --dot --ir`: the Harmony kernel CFG as Graphviz DOT. One
 * node per block, an HTML-like table with a row per kernel: its op, what
 * it writes and reads, its compute code (shortened), and a row estimate
 * (rf_dot.h says how rough); a FUSED kernel (a Kernel Weaver group) is a
 * shaded table of its members in execution order with its gather and its
 * internal variables. Edges for fall-through, jumps and both sides of each
 * branch; fixpoint loops as red dashed clusters (common/rf_dot.c). */
#include "hir.h"
#include "rf_dot.h"

#include <stdlib.h>
#include <string.h>

/* Longest compute code and comment a row shows (whole in --ir). */
#define CODE_CHARS 80
#define COMMENT_CHARS 80

static const char *const gather_names[] = {"none", "compact", "merge", "reduce", "set"};
static const char *const agg_names[] = {"none", "count", "total", "min", "max", "avg", "count_distinct"};

typedef struct hir_dot {
    const rf_hprogram *p;
    rf_rowest *est;          /* [nvars]: the estimate of its last write so far */
    bool *in_loop;           /* [nblocks] */
    rf_rowest **rows;        /* [block][kernel]: what the kernel writes */
    rf_rowest ***member_rows;/* [block][kernel][member] for FUSED kernels */
} hir_dot;

static const char *var_name(const rf_hprogram *p, int v)
{
    return v >= 0 && v < p->nvars && p->vars[v].name ? p->vars[v].name : "?";
}

static rf_rowest var_est(const hir_dot *d, int v)
{
    return v >= 0 && v < d->p->nvars ? d->est[v] : (rf_rowest){RF_ROWS_UNKNOWN, false, 0};
}

/* What plain kernel k writes, given what its inputs hold (rf_dot.h). */
static rf_rowest kernel_estimate(const hir_dot *d, const rf_kernel *k)
{
    rf_rowest a = var_est(d, k->in[0]), b = var_est(d, k->in[1]);
    rf_rowest unknown = {RF_ROWS_UNKNOWN, false, 0};
    switch (k->op) {
    case RF_K_LOAD: {
        const rf_hvar *hv = &d->p->vars[k->out];
        return rf_rowest_input(hv->nfacts, hv->input_path);
    }
    case RF_K_MAP:
    case RF_K_SORT:
    case RF_K_ANTIJOIN:
    case RF_K_DIFF:
        return rf_rowest_at_most(a);
    case RF_K_JOIN:
        if (k->nkeys > 0)
            return unknown;
        return k->filter.n > 0 ? rf_rowest_at_most(rf_rowest_product(a, b)) : rf_rowest_product(a, b);
    case RF_K_UNION:
        return rf_rowest_sum(a, b);
    case RF_K_AGG:
        return k->nkeys == 0 ? rf_rowest_at_most(rf_rowest_exact(1)) : rf_rowest_at_most(a);
    case RF_K_COPY:
        return a;
    case RF_K_CLEAR:
        return rf_rowest_exact(0);
    case RF_K_CHECK_KEYS:
        return a;   /* writes nothing: the rows it checks */
    default:
        return unknown;
    }
}

static void set_est(hir_dot *d, int v, rf_rowest e)
{
    if (v >= 0 && v < d->p->nvars)
        d->est[v] = e;
}

/* "filter: ($0 > 5); proj: $1, $3", "count(), total($2)": the compute
 * stage of a MAP, JOIN or AGG; NULL for other ops. malloc'd. */
static char *compute_text(const rf_kernel *k)
{
    if (k->op != RF_K_MAP && k->op != RF_K_JOIN && k->op != RF_K_AGG && k->op != RF_K_MULTIJOIN)
        return NULL;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        rf_out_of_memory(0);
    if (k->op == RF_K_MULTIJOIN && k->mj && k->mj->count) {
        fputs("count()", f);
    } else if (k->op == RF_K_AGG) {
        for (int j = 0; j < k->naggs && k->aggfn && k->agg_arg; j++) {
            fprintf(f, "%s%s(", j ? ", " : "", (unsigned)k->aggfn[j] <= RF_AGG_LAST ? agg_names[k->aggfn[j]] : "?");
            if (k->agg_arg[j].n > 0)
                rf_code_print(f, &k->agg_arg[j]);
            fputc(')', f);
        }
    } else {
        if (k->filter.n > 0) {
            fputs("filter: ", f);
            rf_code_print(f, &k->filter);
            fputs("; ", f);
        }
        fputs("proj: ", f);
        for (int i = 0; i < k->nproj && k->proj; i++) {
            if (i)
                fputs(", ", f);
            rf_code_print(f, &k->proj[i]);
        }
    }
    fclose(f);
    return text;
}

/* One kernel's two cells: "<B>JOIN</B>[keys=1] t2 := a, b" with its
 * compute code and rule below, and its row estimate. */
static void write_kernel_cells(FILE *out, const hir_dot *d, const rf_kernel *k, rf_rowest rows, const char *prefix)
{
    const rf_hprogram *p = d->p;
    fputs("<TD ALIGN=\"LEFT\" BALIGN=\"LEFT\">", out);
    rf_dot_html(out, prefix, 0);
    if (k->op != RF_K_CHECK_KEYS) {
        rf_dot_html(out, var_name(p, k->out), 40);
        fputs(" := ", out);
    }
    fprintf(out, "<B>%s</B>", rf_kop_name(k->op));
    if (k->op == RF_K_JOIN || k->op == RF_K_ANTIJOIN || k->op == RF_K_AGG || k->op == RF_K_CHECK_KEYS)
        fprintf(out, "[keys=%d]", k->nkeys);
    for (int j = 0; j < 2; j++)
        if (k->in[j] >= 0) {
            fputs(j ? ", " : " ", out);
            rf_dot_html(out, var_name(p, k->in[j]), 40);
        }
    for (int i = 0; k->op == RF_K_MULTIJOIN && k->mj && i < k->mj->nin && k->mj->in; i++) {
        fputs(i ? ", " : " ", out);
        rf_dot_html(out, var_name(p, k->mj->in[i]), 40);
    }
    if (k->gather == RF_GATHER_MERGE)
        fputs(" <FONT COLOR=\"#666666\">(merge)</FONT>", out);
    char *code = compute_text(k);
    if (code) {
        fputs("<BR/><FONT POINT-SIZE=\"8\">", out);
        rf_dot_html(out, code, CODE_CHARS);
        fputs("</FONT>", out);
        free(code);
    }
    if (k->comment) {
        fputs("<BR/><FONT POINT-SIZE=\"8\" COLOR=\"#666666\"># ", out);
        rf_dot_html(out, k->comment, COMMENT_CHARS);
        fputs("</FONT>", out);
    }
    char text[64];
    rf_rowest_format(rows, text, sizeof text);
    fputs("</TD><TD ALIGN=\"RIGHT\" VALIGN=\"TOP\"><FONT COLOR=\"#1f618d\">", out);
    rf_dot_html(out, text, 0);
    fputs("</FONT></TD>", out);
}

/* A Kernel Weaver group: a shaded table of its members. */
static void write_fused(FILE *out, const hir_dot *d, const rf_kernel *k, rf_rowest rows, rf_rowest *member_rows)
{
    const rf_hprogram *p = d->p;
    const rf_fused *f = k->fused;
    fputs("<TD COLSPAN=\"2\" ALIGN=\"LEFT\"><TABLE BORDER=\"1\" CELLBORDER=\"0\" CELLSPACING=\"0\" "
          "CELLPADDING=\"2\" BGCOLOR=\"#fdebd0\" COLOR=\"#d35400\">",
          out);
    fputs("<TR><TD ALIGN=\"LEFT\" BALIGN=\"LEFT\"><B>FUSED</B>", out);
    fprintf(out, "[%d] ", f->nmembers);
    for (int i = 0; i < f->nout; i++) {
        fputs(i ? ", " : "", out);
        rf_dot_html(out, var_name(p, f->out[i]), 40);
    }
    fputs(" := ", out);
    for (int i = 0; i < f->nin; i++) {
        fputs(i ? ", " : "", out);
        rf_dot_html(out, var_name(p, f->in[i]), 40);
    }
    fprintf(out, "<BR/><FONT POINT-SIZE=\"8\">one kernel (Kernel Weaver), gather=%s</FONT>",
            (unsigned)k->gather <= RF_GATHER_SET ? gather_names[k->gather] : "?");
    if (k->comment) {
        fputs("<BR/><FONT POINT-SIZE=\"8\" COLOR=\"#666666\"># ", out);
        rf_dot_html(out, k->comment, COMMENT_CHARS);
        fputs("</FONT>", out);
    }
    char text[64];
    rf_rowest_format(rows, text, sizeof text);
    fputs("</TD><TD ALIGN=\"RIGHT\" VALIGN=\"TOP\"><FONT COLOR=\"#1f618d\">", out);
    rf_dot_html(out, text, 0);
    fputs("</FONT></TD></TR>", out);
    for (int m = 0; m < f->nmembers && f->members; m++) {
        char prefix[32];
        snprintf(prefix, sizeof prefix, "%d. ", m + 1);
        fputs("<TR>", out);
        write_kernel_cells(out, d, &f->members[m], member_rows[m], prefix);
        fputs("</TR>", out);
    }
    fputs("<TR><TD COLSPAN=\"2\" ALIGN=\"LEFT\"><FONT POINT-SIZE=\"8\">internal: ", out);
    if (f->nedges == 0)
        fputs("none (branches sharing their inputs)", out);
    for (int e = 0; e < f->nedges && f->edges; e++) {
        fputs(e ? ", " : "", out);
        rf_dot_html(out, var_name(p, f->edges[e].var), 40);
        fprintf(out, " (%d&#8594;%d)", f->edges[e].from + 1, f->edges[e].to + 1);
    }
    fputs("</FONT></TD></TR></TABLE></TD>", out);
}

static void write_node(FILE *out, int b, void *ctx)
{
    const hir_dot *d = ctx;
    const rf_hblock *hb = &d->p->blocks[b];
    fprintf(out, "b%d [label=<<TABLE BORDER=\"1\" CELLBORDER=\"0\" CELLSPACING=\"0\" CELLPADDING=\"3\" "
                 "BGCOLOR=\"white\" COLOR=\"#34495e\">\n",
            b);
    fprintf(out, "  <TR><TD COLSPAN=\"2\" ALIGN=\"LEFT\" BGCOLOR=\"#dfe6ee\"><B>block %d</B>  ", b);
    rf_dot_html(out, hb->label ? hb->label : "", 60);
    fputs("</TD></TR>\n", out);
    for (int i = 0; i < hb->nkernels; i++) {
        const rf_kernel *k = &hb->kernels[i];
        fputs("  <HR/><TR>", out);
        if (k->op == RF_K_FUSED && k->fused)
            write_fused(out, d, k, d->rows[b][i], d->member_rows[b][i]);
        else
            write_kernel_cells(out, d, k, d->rows[b][i], "");
        fputs("</TR>\n", out);
    }
    const char *end = hb->term == RF_TERM_HALT ? "halt" : hb->term == RF_TERM_FALLTHROUGH ? "falls through" : NULL;
    if (end)
        fprintf(out, "  <HR/><TR><TD COLSPAN=\"2\" ALIGN=\"LEFT\"><I>%s</I></TD></TR>\n", end);
    fputs("</TABLE>>];\n", out);
}

static char *branch_condition(const rf_hprogram *p, const rf_hblock *hb)
{
    char *s = rf_strdup("empty(");
    for (int i = 0; i < hb->nconds; i++) {
        char *t = rf_sprintf("%s%s%s", s, i ? ", " : "", var_name(p, hb->conds[i]));
        free(s);
        s = t;
    }
    char *t = rf_sprintf("%s)", s);
    free(s);
    return t;
}

void rf_hir_write_dot(const rf_hprogram *p, FILE *out)
{
    int nb = p->nblocks;
    rf_dot_block *blocks = rf_calloc((size_t)nb + 1, sizeof *blocks);
    char **conds = rf_calloc((size_t)nb + 1, sizeof *conds);
    for (int b = 0; b < nb; b++) {
        const rf_hblock *hb = &p->blocks[b];
        blocks[b] = (rf_dot_block){hb->label ? hb->label : "", {-1, -1}, NULL};
        switch (hb->term) {
        case RF_TERM_FALLTHROUGH:
            blocks[b].next[0] = b + 1 < nb ? b + 1 : -1;
            break;
        case RF_TERM_JUMP:
            blocks[b].next[0] = hb->target;
            break;
        case RF_TERM_BRANCH_EMPTY:
            blocks[b].next[0] = hb->target;
            blocks[b].next[1] = hb->target_else;
            blocks[b].cond = conds[b] = branch_condition(p, hb);
            break;
        case RF_TERM_BRANCH_JOIN:
            blocks[b].next[0] = hb->target;
            blocks[b].next[1] = hb->target_else;
            blocks[b].cond = conds[b] = rf_strdup("binary intermediate > ratio x inputs");
            break;
        case RF_TERM_HALT:
            break;
        }
    }
    hir_dot d = {p, rf_calloc((size_t)p->nvars + 1, sizeof *d.est), rf_calloc((size_t)nb + 1, sizeof *d.in_loop),
                 rf_calloc((size_t)nb + 1, sizeof *d.rows), rf_calloc((size_t)nb + 1, sizeof *d.member_rows)};
    /* A block inside a loop computes something else each iteration: its
     * estimates are unknown. */
    for (int b = 0; b < nb; b++)
        for (int i = 0; i < 2; i++)
            for (int t = blocks[b].next[i]; t >= 0 && t <= b; t++)
                d.in_loop[t] = true;
    for (int v = 0; v < p->nvars; v++)
        d.est[v] = rf_rowest_exact(0);   /* a variable never written reads as empty */
    rf_rowest unknown = {RF_ROWS_UNKNOWN, false, 0};
    for (int b = 0; b < nb; b++) {
        const rf_hblock *hb = &p->blocks[b];
        d.rows[b] = rf_calloc((size_t)hb->nkernels + 1, sizeof **d.rows);
        d.member_rows[b] = rf_calloc((size_t)hb->nkernels + 1, sizeof **d.member_rows);
        for (int i = 0; i < hb->nkernels; i++) {
            const rf_kernel *k = &hb->kernels[i];
            if (k->op == RF_K_FUSED && k->fused) {
                const rf_fused *f = k->fused;
                rf_rowest *mr = d.member_rows[b][i] = rf_calloc((size_t)f->nmembers + 1, sizeof *mr);
                for (int m = 0; m < f->nmembers && f->members; m++) {
                    mr[m] = d.in_loop[b] ? unknown : kernel_estimate(&d, &f->members[m]);
                    set_est(&d, f->members[m].out, mr[m]);
                }
                d.rows[b][i] = var_est(&d, f->nout > 0 ? f->out[0] : -1);
                for (int o = 0; o < f->nout && d.in_loop[b]; o++)
                    set_est(&d, f->out[o], unknown);
            } else {
                d.rows[b][i] = d.in_loop[b] ? unknown : kernel_estimate(&d, k);
                if (k->op != RF_K_CHECK_KEYS)
                    set_est(&d, k->out, d.rows[b][i]);
            }
        }
    }
    rf_dot_write_cfg(out, "harmony_ir", nb, blocks, write_node, &d);
    for (int b = 0; b < nb; b++) {
        for (int i = 0; i < p->blocks[b].nkernels; i++)
            free(d.member_rows[b][i]);
        free(d.member_rows[b]);
        free(d.rows[b]);
        free(conds[b]);
    }
    free(d.member_rows);
    free(d.rows);
    free(d.in_loop);
    free(d.est);
    free(conds);
    free(blocks);
}
