/* `redfox explain --ir`: the Harmony IR as text. One line per variable, then
 * one line per kernel:
 *   t5 := JOIN[keys=1] edge.by0, path.delta  partition=key-range
 *         compute={filter: true; proj: $1, $3} gather=compact  free: t4
 * Also used by the tests to compare programs (a round trip through the
 * binary form must print identically), so the output is deterministic. */
#include "hir.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

static const char *var_name(const rf_hprogram *p, int v)
{
    return (v >= 0 && v < p->nvars && p->vars[v].name) ? p->vars[v].name : "?";
}

/* Start index of the expression whose last instruction is `end`, or -1. */
static int expr_start(const rf_code *c, int end, int depth)
{
    if (end < 0 || end >= c->n || depth > 10000)
        return -1;
    int start = end;
    for (int i = rf_expr_arity((rf_exop)c->ins[end].op); i > 0; i--) {
        start = expr_start(c, start - 1, depth + 1);
        if (start < 0)
            return -1;
    }
    return start;
}

static void print_string(FILE *out, const char *s)
{
    fputc('"', out);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fprintf(out, "\\%c", *s);
        else if (*s == '\n')
            fputs("\\n", out);
        else if (*s == '\t')
            fputs("\\t", out);
        else
            fputc(*s, out);
    }
    fputc('"', out);
}

static void print_value(FILE *out, rf_type t, rf_word w)
{
    if (t == RF_TYPE_STRING) {
        print_string(out, w < rf_str_count() ? rf_str_get(w) : "?");
    } else {
        char buf[64];
        rf_value_format(t, w, buf, sizeof buf);
        fputs(buf, out);
    }
}

/* Prints the expression ending at instruction `end` in infix form. */
static void print_expr(FILE *out, const rf_code *c, int end, int depth)
{
    if (end < 0 || end >= c->n || depth > 10000) {
        fputs("?", out);
        return;
    }
    const rf_instr *in = &c->ins[end];
    rf_exop op = (rf_exop)in->op;
    switch (op) {
    case RF_EX_CONST:
        print_value(out, (rf_type)in->type, in->value);
        return;
    case RF_EX_COL:
    case RF_EX_VAR:
        fprintf(out, "$%d", (int)in->index);
        return;
    case RF_EX_ROWID:
        fprintf(out, "rowid(%d)", (int)in->index);
        return;
    case RF_EX_NEG:
    case RF_EX_NOT:
        fputs(rf_exop_symbol(op), out);
        print_expr(out, c, end - 1, depth + 1);
        return;
    case RF_EX_CAST:
        fprintf(out, "%s(", rf_type_name((rf_type)in->type));
        print_expr(out, c, end - 1, depth + 1);
        fputc(')', out);
        return;
    default:
        if (op >= RF_EX_COUNT_) {
            fputs("?", out);
            return;
        }
        if (rf_exop_is_function(op)) { /* name(a, b, c) */
            int n = rf_expr_arity(op), ends[3], e = end - 1;
            for (int i = n - 1; i >= 0; i--) {
                ends[i] = e;
                e = expr_start(c, e, depth + 1) - 1;
            }
            fprintf(out, "%s(", rf_exop_symbol(op));
            for (int i = 0; i < n; i++) {
                if (i)
                    fputs(", ", out);
                print_expr(out, c, ends[i], depth + 1);
            }
            fputc(')', out);
            return;
        }
        int rs = expr_start(c, end - 1, depth + 1);
        fputc('(', out);
        print_expr(out, c, rs - 1, depth + 1);
        fprintf(out, " %s ", rf_exop_symbol(op));
        print_expr(out, c, end - 1, depth + 1);
        fputc(')', out);
        return;
    }
}

static void print_code(FILE *out, const rf_code *c, const char *absent)
{
    if (c->n <= 0 || !c->ins)
        fputs(absent, out);
    else
        print_expr(out, c, c->n - 1, 0);
}

void rf_code_print(FILE *out, const rf_code *c) { print_code(out, c, "true"); }

static const char *const part_names[] = {"none", "even", "key-range", "group"};
static const char *const gather_names[] = {"none", "compact", "merge", "reduce", "set"};
static const char *const dep_names[] = {"thread", "cta", "kernel"};
static const char *const agg_names[] = {"none", "count", "total", "min", "max", "avg", "count_distinct"};

static void print_kernel(FILE *out, const rf_hprogram *p, const rf_kernel *k, const char *indent);

/* A fused group: its external variables on the first line, then each
 * member as it would print unfused, then the internal edges. */
static void print_fused(FILE *out, const rf_hprogram *p, const rf_kernel *k, const char *indent)
{
    const rf_fused *f = k->fused;
    fprintf(out, "%s  ", indent);
    for (int i = 0; i < f->nout; i++)
        fprintf(out, "%s%s", i ? ", " : "", var_name(p, f->out[i]));
    fprintf(out, " := FUSED[%d]", f->nmembers);
    for (int i = 0; i < f->nin; i++)
        fprintf(out, "%s%s", i ? ", " : " ", var_name(p, f->in[i]));
    fprintf(out, "  partition=%s gather=%s",
            (unsigned)k->partition <= RF_PART_GROUP ? part_names[k->partition] : "?",
            (unsigned)k->gather <= RF_GATHER_SET ? gather_names[k->gather] : "?");
    if (k->nfree > 0) {
        fputs("  free:", out);
        for (int i = 0; i < k->nfree; i++)
            fprintf(out, "%s %s", i ? "," : "", var_name(p, k->frees[i]));
    }
    fputc('\n', out);
    char inner[64];
    snprintf(inner, sizeof inner, "%s  |", indent);
    for (int i = 0; i < f->nmembers && f->members; i++)
        print_kernel(out, p, &f->members[i], inner);
    /* what the group's own gather does with its last members */
    int at = f->nmembers - (k->gather == RF_GATHER_SET ? 1 : 2);   /* the SORT a gather takes over */
    const rf_kernel *sort = at >= 0 && f->members ? &f->members[at] : NULL;
    if (sort && sort->op == RF_K_SORT && k->gather == RF_GATHER_SET)
        fprintf(out, "%s  | gather=set: %s's rows go into a dense set (%s: sorted, distinct) when their value ranges "
                     "fit one, else are written and sorted\n",
                indent, var_name(p, sort->in[0]), var_name(p, sort->out));
    else if (sort && sort->op == RF_K_SORT && k->gather == RF_GATHER_REDUCE)
        fprintf(out, "%s  | gather=reduce: %s's rows fold into their groups as they are made, never sorted\n",
                indent, var_name(p, sort->in[0]));
    if (k->gather == RF_GATHER_SET && rf_fused_probe_sort(p, f))
        fprintf(out, "%s  | probe: %s only orders the JOIN's probe side: %s's rows are joined as they come, each "
                     "looked up in %s, and never sorted (the CPU sorts them when they are far from key order)\n",
                indent, var_name(p, f->members[0].out), var_name(p, f->members[0].in[0]),
                var_name(p, f->members[1].in[1]));
    fprintf(out, "%s  | internal:%s", indent, f->nedges > 0 ? "" : " none (branches sharing their inputs)");
    for (int e = 0; e < f->nedges && f->edges; e++)
        fprintf(out, "%s %s (%d->%d %s)", e ? "," : "", var_name(p, f->edges[e].var), f->edges[e].from,
                f->edges[e].to, (unsigned)f->edges[e].dep < RF_DEP_COUNT_ ? dep_names[f->edges[e].dep] : "?");
    fputc('\n', out);
}

static void print_kernel(FILE *out, const rf_hprogram *p, const rf_kernel *k, const char *indent)
{
    if (k->comment)
        fprintf(out, "%s  # %s\n", indent, k->comment);
    if (k->op == RF_K_FUSED && k->fused) {
        print_fused(out, p, k, indent);
        return;
    }
    if (k->op == RF_K_CHECK_KEYS)   /* no output variable */
        fprintf(out, "%s  %s", indent, rf_kop_name(k->op));
    else
        fprintf(out, "%s  %s := %s", indent, var_name(p, k->out), rf_kop_name(k->op));
    if (k->op == RF_K_JOIN || k->op == RF_K_ANTIJOIN || k->op == RF_K_AGG || k->op == RF_K_CHECK_KEYS)
        fprintf(out, "[keys=%d]", k->nkeys);
    for (int j = 0; j < 2; j++)
        if (k->in[j] >= 0)
            fprintf(out, "%s%s", j ? ", " : " ", var_name(p, k->in[j]));
    /* a multiway join's inputs, each with the variables its columns bind:
     * "MULTIJOIN[vars=3] e.by0_1($0, $1), e.by0_1($1, $2), ..."; one that
     * counts its bindings: "MULTIJOIN[vars=3, count] ..."; one with a
     * second order the backend may take at run time: "[vars=3, or order
     * $2 $1 $0]" */
    if (k->op == RF_K_MULTIJOIN && k->mj) {
        const rf_multijoin *mj = k->mj;
        fprintf(out, "[vars=%d%s", mj->nvars, mj->count ? ", count" : "");
        for (int x = 0; mj->alt_order && x < mj->nvars; x++)
            fprintf(out, "%s$%d", x ? " " : ", or order ", mj->alt_order[x]);
        fputc(']', out);
        for (int i = 0; i < mj->nin && mj->in && mj->in_first && mj->in_vars; i++) {
            fprintf(out, "%s%s(", i ? ", " : " ", var_name(p, mj->in[i]));
            for (int j = mj->in_first[i]; j < mj->in_first[i + 1]; j++)
                fprintf(out, "%s$%d", j > mj->in_first[i] ? ", " : "", mj->in_vars[j]);
            fputc(')', out);
        }
    }
    fprintf(out, "  partition=%s",
            (unsigned)k->partition <= RF_PART_GROUP ? part_names[k->partition] : "?");
    if (k->op == RF_K_MULTIJOIN && k->mj && k->mj->count) {
        fputs(" compute={count()}", out);
    } else if (k->op == RF_K_MAP || k->op == RF_K_JOIN || k->op == RF_K_MULTIJOIN) {
        fputs(" compute={filter: ", out);
        print_code(out, &k->filter, "true");
        fputs("; proj: ", out);
        if (k->nproj == 0)
            fputs("()", out);
        for (int i = 0; i < k->nproj && k->proj; i++) {
            if (i)
                fputs(", ", out);
            print_code(out, &k->proj[i], "?");
        }
        fputs("}", out);
    } else if (k->op == RF_K_AGG) {
        fputs(" compute={", out);
        for (int j = 0; j < k->naggs && k->aggfn && k->agg_arg; j++) {
            fprintf(out, "%s%s(", j ? ", " : "",
                    (unsigned)k->aggfn[j] <= RF_AGG_LAST ? agg_names[k->aggfn[j]] : "?");
            print_code(out, &k->agg_arg[j], "");
            fputc(')', out);
        }
        fputs("}", out);
    }
    fprintf(out, " gather=%s",
            (unsigned)k->gather <= RF_GATHER_SET ? gather_names[k->gather] : "?");
    if (k->nfree > 0) {
        fputs("  free:", out);
        for (int i = 0; i < k->nfree; i++)
            fprintf(out, "%s %s", i ? "," : "", var_name(p, k->frees[i]));
    }
    fputc('\n', out);
}

static void print_var(FILE *out, const rf_hvar *v)
{
    fprintf(out, "  %s(", v->name ? v->name : "?");
    for (int j = 0; j < v->arity; j++)
        fprintf(out, "%s%s", j ? ", " : "", rf_type_name(v->types[j]));
    fprintf(out, ") %s", v->sorted ? "sorted" : "unsorted");
    if (v->pred)
        fprintf(out, ", pred %s", v->pred);
    if (v->input_path) {
        fputs(", input ", out);
        print_string(out, v->input_path);
        fputs(v->input_format == RF_FORMAT_CSV ? " csv" : v->input_format == RF_FORMAT_TBL ? " tbl" : " tsv", out);
    }
    if (v->nfacts > 0) {
        fprintf(out, ", %zu fact%s", v->nfacts, v->nfacts == 1 ? "" : "s");
        /* A few rows help reading small programs; the count says the rest. */
        size_t show = v->nfacts < 3 ? v->nfacts : 3;
        fputs(" {", out);
        for (size_t r = 0; r < show; r++) {
            fputs(r ? ", (" : "(", out);
            for (int j = 0; j < v->arity && v->facts; j++) {
                if (j)
                    fputs(", ", out);
                print_value(out, v->types[j], v->facts[r * (size_t)v->arity + (size_t)j]);
            }
            fputc(')', out);
        }
        fputs(show < v->nfacts ? ", ...}" : "}", out);
    }
    if (v->is_output)
        fputs(", output", out);
    if (v->internal)
        fputs(", internal", out);
    if (v->norder > 0) {
        fputs(", order by ", out);
        for (int k = 0; k < v->norder; k++)
            fprintf(out, "%s$%d%s", k ? ", " : "", v->order_cols[k], v->order_desc[k] ? " desc" : "");
    }
    if (v->limit >= 0)
        fprintf(out, ", limit %" PRId64, v->limit);
    fputc('\n', out);
}

void rf_hir_print(const rf_hprogram *p, FILE *out)
{
    fprintf(out, "variables (%d):\n", p->nvars);
    for (int i = 0; i < p->nvars; i++)
        print_var(out, &p->vars[i]);
    for (int b = 0; b < p->nblocks; b++) {
        const rf_hblock *hb = &p->blocks[b];
        fprintf(out, "\nblock %d (%s):\n", b, hb->label ? hb->label : "");
        if (hb->nfree_entry > 0) {
            fputs("  free on entry:", out);
            for (int i = 0; i < hb->nfree_entry; i++)
                fprintf(out, "%s %s", i ? "," : "", var_name(p, hb->free_entry[i]));
            fputc('\n', out);
        }
        for (int k = 0; k < hb->nkernels; k++)
            print_kernel(out, p, &hb->kernels[k], "");
        switch (hb->term) {
        case RF_TERM_FALLTHROUGH:
            fprintf(out, "  -> block %d\n", b + 1);
            break;
        case RF_TERM_JUMP:
            fprintf(out, "  jump block %d\n", hb->target);
            break;
        case RF_TERM_BRANCH_EMPTY:
            fputs("  if empty(", out);
            for (int i = 0; i < hb->nconds; i++)
                fprintf(out, "%s%s", i ? ", " : "", var_name(p, hb->conds[i]));
            fprintf(out, ") jump block %d else block %d\n", hb->target, hb->target_else);
            break;
        case RF_TERM_BRANCH_JOIN:
            /* --join=auto: "if rows(uedge join uedge on ($1 = $0)) grown
             * over 3 variables > ratio x 3 atoms x (rows(uedge) +
             * rows(uedge)) / 2 jump block 3 (wcoj) else block 4 (binary)"
             * (hir.h says how) */
            fprintf(out, "  if rows(%s join %s on (", var_name(p, hb->conds[0]), var_name(p, hb->conds[1]));
            for (int i = 0; i < hb->nkeys; i++)
                fprintf(out, "%s$%d = $%d", i ? ", " : "", hb->lkeys[i], hb->rkeys[i]);
            fprintf(out,
                    ")) grown over %d variables > ratio x %d atoms x (rows(%s) + rows(%s)) / 2 jump block %d (wcoj) "
                    "else block %d (binary)\n",
                    hb->nvars, hb->natoms, var_name(p, hb->conds[0]), var_name(p, hb->conds[1]), hb->target,
                    hb->target_else);
            break;
        default:
            fputs("  halt\n", out);
            break;
        }
    }
}
