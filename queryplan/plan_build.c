/* Checked program -> query plan.
 *
 * Every predicate gets one full relation. Block 0 loads the initial tuples;
 * then each stratum becomes one block (non-recursive) or an init block and
 * a semi-naive loop block (recursive); the last block halts.
 *
 * A rule body is compiled left-deep: the first atom is scanned (constants
 * and repeated variables as filters), every further atom is scanned the
 * same way and joined on the variables it shares with what is bound so
 * far. Equalities count as shared variables: variables of one type that a
 * filter equates are unified before planning (unify_rule), and an equality
 * between an expression of what is bound and an expression of the next
 * atom's variables becomes a join key, on a computed column where a side
 * is not a plain variable (eq_key, join_step);
 * neither happens with optimize off, which plans the rule as written.
 * After each command only the variables that something later still
 * needs are kept. Filters run in the first command where all their
 * variables are bound, assignments become computed projection columns,
 * negated atoms become anti-joins once their variables are bound, and the
 * last command projects the head. */
#include "plan_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct bblock {
    char *label;
    RF_VEC(rf_plan_cmd) cmds;
} bblock;

typedef struct builder {
    const rf_program *prog;
    bool optimize;
    rf_join_mode join;  /* how bodies of several atoms are joined */
    RF_VEC(rf_plan_rel) rels;
    RF_VEC(bblock) blocks;
    int *full;          /* per predicate: its full relation */
    int *delta;         /* per predicate: delta relation or -1 */
    int *fresh;         /* per predicate: "new" relation or -1 */
    int next_temp;
    int unit;           /* the one-empty-tuple relation, -1 until needed */
    int nchoices;       /* --join=auto run-time choices made (block labels) */
    rf_origin origin;   /* given to every command emitted (the current rule) */
} builder;

/* ---- Relations and commands ---- */

static bool name_taken(const builder *b, const char *name)
{
    for (size_t i = 0; i < b->rels.len; i++)
        if (strcmp(b->rels.items[i].name, name) == 0)
            return true;
    return rf_program_find_pred(b->prog, name) >= 0;
}

static int add_rel(builder *b, char *name, int arity, const rf_type *types,
                   rf_relkind kind, int pred)
{
    rf_plan_rel r;
    memset(&r, 0, sizeof r);
    r.name = name;
    r.arity = arity;
    r.types = rf_malloc(rf_mul_size((size_t)arity, sizeof *r.types));
    if (arity > 0)
        memcpy(r.types, types, (size_t)arity * sizeof *types);
    r.kind = kind;
    r.pred = pred;
    r.limit = -1;
    RF_PUSH(b->rels, r);
    return (int)b->rels.len - 1;
}

static int new_temp(builder *b, int arity, const rf_type *types)
{
    char *name = NULL;
    for (;;) {
        name = rf_sprintf("t%d", b->next_temp++);
        if (!name_taken(b, name))
            break;
        free(name);
    }
    return add_rel(b, name, arity, types, RF_REL_TEMP, -1);
}

/* Undoes the most recent new_temp (when the command it was for vanished). */
static void drop_last_temp(builder *b, int rel)
{
    if (rel != (int)b->rels.len - 1 || b->rels.items[rel].kind != RF_REL_TEMP)
        return;
    free(b->rels.items[rel].name);
    free(b->rels.items[rel].types);
    b->rels.len--;
    b->next_temp--;
}

static int arity_of(const builder *b, int rel) { return b->rels.items[rel].arity; }

static void start_block(builder *b, char *label)
{
    bblock blk;
    memset(&blk, 0, sizeof blk);
    blk.label = label;
    RF_PUSH(b->blocks, blk);
}

static rf_plan_cmd *emit(builder *b, rf_cmdkind kind, int dst, int s0, int s1)
{
    rf_plan_cmd c;
    memset(&c, 0, sizeof c);
    c.kind = kind;
    c.dst = dst;
    c.src[0] = s0;
    c.src[1] = s1;
    c.target = c.target_else = -1;
    c.origin = rf_origin_dup(b->origin);
    bblock *blk = &b->blocks.items[b->blocks.len - 1];
    RF_PUSH(blk->cmds, c);
    return &blk->cmds.items[blk->cmds.len - 1];
}

static int *int_dup(const int *a, int n)
{
    int *d = rf_malloc(rf_mul_size((size_t)(n > 0 ? n : 1), sizeof *d));
    if (n > 0)
        memcpy(d, a, (size_t)n * sizeof *a);
    return d;
}

/* The origin of the commands emitted next; `what` is taken over. */
static void set_origin(builder *b, rf_loc loc, char *what)
{
    rf_origin_release(&b->origin);
    if (loc.src && loc.line > 0)
        b->origin.where = rf_sprintf("%s:%d:%d", loc.src->path, loc.line, loc.col);
    b->origin.what = what;
}

/* ---- Rule text for comments ---- */

static void print_args(FILE *f, int n, rf_expr *const *args, const char *const *names)
{
    for (int i = 0; i < n; i++) {
        if (i)
            fputs(", ", f);
        if (args[i])
            rf_expr_print(args[i], f, names);
        else
            fputc('_', f);
    }
}

static char *rule_text(const rf_program *p, const rf_rule *r, int delta_lit)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        rf_out_of_memory(0);
    const char *const *names = (const char *const *)r->var_names;
    const rf_pred *head = &p->preds[r->head];
    fprintf(f, "%s(", head->name);
    print_args(f, head->arity - r->naggs, r->head_args, names);
    for (int j = 0; j < r->naggs; j++) {
        fprintf(f, "%s%s(", head->arity - r->naggs + j > 0 ? ", " : "", rf_plan_aggfn_name(r->aggs[j]));
        if (r->agg_args[j])
            rf_expr_print(r->agg_args[j], f, names);
        fputc(')', f);
    }
    fputs(") <-", f);
    for (int i = 0; i < r->nbody; i++) {
        const rf_literal *l = &r->body[i];
        fputs(i ? ", " : " ", f);
        switch (l->kind) {
        case RF_LIT_NEGATED:
            fputc('!', f);
            /* fallthrough */
        case RF_LIT_ATOM:
            fprintf(f, "%s(", p->preds[l->pred].name);
            print_args(f, l->nargs, l->args, names);
            fputc(')', f);
            if (i == delta_lit)
                fputs("@delta", f);
            break;
        case RF_LIT_FILTER:
            rf_expr_print(l->expr, f, names);
            break;
        case RF_LIT_ASSIGN:
            fprintf(f, "%s = ", names ? names[l->var] : "v");
            rf_expr_print(l->expr, f, names);
            break;
        }
    }
    fclose(f);
    return buf;
}

/* ---- Rule compilation ---- */

typedef struct rule_ctx {
    builder *b;
    const rf_rule *r;
    int delta_lit;           /* body literal read from its delta, or -1 */
    char *comment;           /* given to the rule's first command */
    bool *done;              /* per literal: joined / applied / resolved */
    bool *bound;             /* per variable */
    const rf_expr **assign;  /* per variable: its ASSIGN value once resolved */
    int *col;                /* per variable: column of cur, or -1 */
    int cur;                 /* relation holding the bindings so far */
    int ncur;
    int *curvar;             /* [ncur]: variable of each column */
    /* What the body must deliver at the end (expressions over variables). */
    int nfinal;
    rf_expr **final;
    const rf_type *final_types;
    int final_dst;           /* relation the last command writes (-1: made
                                by the last command, identities appended) */
    /* Bag body (count/total/avg range over every binding of the body):
     * commands keep only the variables something later needs, plus row
     * identities (columns whose curvar is -1) so that no two bindings
     * ever become one row. See identities(). */
    bool bag;
} rule_ctx;

static void mark_vars(const rf_expr *e, bool *set)
{
    if (!e)
        return;
    if (e->op == RF_EX_VAR)
        set[e->index] = true;
    mark_vars(e->a, set);
    mark_vars(e->b, set);
    mark_vars(e->c, set);
}

static bool vars_bound(const rf_expr *e, const bool *bound)
{
    if (!e)
        return true;
    if (e->op == RF_EX_VAR && !bound[e->index])
        return false;
    return vars_bound(e->a, bound) && vars_bound(e->b, bound) && vars_bound(e->c, bound);
}

static bool args_bound(const rf_literal *l, const bool *bound)
{
    for (int i = 0; i < l->nargs; i++)
        if (!vars_bound(l->args[i], bound))
            return false;
    return true;
}

/* Rewrites variables into columns: colmap[v] >= 0 is a column, otherwise
 * the variable must be a resolved assignment, whose value is substituted. */
static rf_expr *translate(const rule_ctx *c, const rf_expr *e, const int *colmap)
{
    if (!e)
        return NULL;
    if (e->op == RF_EX_VAR) {
        int v = e->index;
        if (colmap[v] >= 0)
            return rf_expr_leaf(RF_EX_COL, e->type, colmap[v]);
        if (!c->assign[v]) {
            fprintf(stderr, "redfox: internal error: variable %d unbound in plan\n", v);
            abort();
        }
        return translate(c, c->assign[v], colmap);
    }
    rf_expr *t = rf_malloc(sizeof *t);
    *t = *e;
    t->a = translate(c, e->a, colmap);
    t->b = translate(c, e->b, colmap);
    t->c = translate(c, e->c, colmap);
    return t;
}

static rf_expr *and_expr(rf_expr *a, rf_expr *b)
{
    if (!a)
        return b;
    if (!b)
        return a;
    return rf_expr_binary(RF_EX_AND, RF_TYPE_BOOL, a, b);
}

static rf_expr *col_eq(rf_type t, int col, rf_expr *rhs)
{
    return rf_expr_binary(RF_EX_EQ, RF_TYPE_BOOL, rf_expr_leaf(RF_EX_COL, t, col), rhs);
}

/* Can e be computed from the columns colmap gives? Resolved assignments
 * are expanded, as translate does. */
static bool computable(const rule_ctx *c, const rf_expr *e, const int *colmap)
{
    if (!e)
        return true;
    if (e->op == RF_EX_VAR)
        return colmap[e->index] >= 0 ||
               (c->assign[e->index] && computable(c, c->assign[e->index], colmap));
    return computable(c, e->a, colmap) && computable(c, e->b, colmap) && computable(c, e->c, colmap);
}

/* Whether e's own operation never fails, its operands aside: comparisons,
 * && || and not, the string tests and date parts, widening casts (int32
 * -> int64, int -> float64, decimal -> float64); integer + - * and
 * negation too where integer_arithmetic (checked: they can overflow). */
static bool op_cannot_fail(const rf_expr *e, bool integer_arithmetic)
{
    switch (e->op) {
    case RF_EX_VAR:
    case RF_EX_CONST:
    case RF_EX_COL:
    case RF_EX_NOT:
    case RF_EX_AND:
    case RF_EX_OR:
    case RF_EX_EQ:
    case RF_EX_NE:
    case RF_EX_LT:
    case RF_EX_LE:
    case RF_EX_GT:
    case RF_EX_GE:
    case RF_EX_YEAR:
    case RF_EX_MONTH:
    case RF_EX_DAY:
    case RF_EX_STRLEN:
    case RF_EX_LIKE:
    case RF_EX_STARTS_WITH:
    case RF_EX_ENDS_WITH:
    case RF_EX_CONTAINS:
        return true;
    case RF_EX_CAST:
        return e->a->type == e->type ||
               (rf_type_is_integer(e->a->type) && (e->type == RF_TYPE_INT64 || e->type == RF_TYPE_FLOAT64)) ||
               (rf_type_is_decimal(e->a->type) && e->type == RF_TYPE_FLOAT64);
    case RF_EX_NEG:
    case RF_EX_ADD:
    case RF_EX_SUB:
    case RF_EX_MUL:
        return integer_arithmetic && rf_type_is_integer(e->type);
    default:
        return false;
    }
}

/* May e (over colmap, as computable) be computed ahead of the filters that
 * would have guarded it (as a key column, or as a filter moved into a
 * scan)? Comparisons, && || and not, widening casts (int32 -> int64, int ->
 * float64, decimal -> float64) and the string tests never fail. Division,
 * float and decimal arithmetic and most functions can fail and stay after
 * the join. Integer + - * can overflow (arithmetic is checked) but are
 * allowed, so that `y + 1 = y2` is a join key rather than a cross product:
 * the key is computed on the rows of its own atom, and an overflow there
 * stops the run even when another condition of the rule would have
 * removed that row (docs/language.md, "Equalities are joins"). */
static bool cannot_fail(const rule_ctx *c, const rf_expr *e, const int *colmap)
{
    if (!e)
        return true;
    if (e->op == RF_EX_VAR)
        return colmap[e->index] >= 0 || cannot_fail(c, c->assign[e->index], colmap);
    return op_cannot_fail(e, true) && cannot_fail(c, e->a, colmap) && cannot_fail(c, e->b, colmap) &&
           cannot_fail(c, e->c, colmap);
}
/* Column of each variable of atom `lit` in its relation (the first
 * occurrence), -1 for the other variables. */
static void atom_colmap(const rule_ctx *c, int lit, int *acol)
{
    const rf_literal *l = &c->r->body[lit];
    for (int v = 0; v < c->r->nvars; v++)
        acol[v] = -1;
    for (int j = l->nargs - 1; j >= 0; j--)
        if (l->args[j] && l->args[j]->op == RF_EX_VAR)
            acol[l->args[j]->index] = j;
}

/* An equality filter `a = b` that can join cur with an atom: one side
 * computable from cur's columns, the other from the atom's alone (a filter
 * over one side only runs in that side's scan instead), both of one type
 * (words are canonical, so the typed equality is the equality of words)
 * and neither able to fail. acol is atom_colmap's. */
typedef struct eqkey {
    int lit;
    const rf_expr *cur_side, *atom_side;
} eqkey;

static bool eq_key(const rule_ctx *c, int i, const int *acol, eqkey *k)
{
    const rf_literal *l = &c->r->body[i];
    if (c->done[i] || l->kind != RF_LIT_FILTER || l->expr->op != RF_EX_EQ ||
        l->expr->a->type != l->expr->b->type)
        return false;
    if (computable(c, l->expr, acol) || computable(c, l->expr, c->col))
        return false;
    for (int side = 0; side < 2; side++) {
        const rf_expr *x = side ? l->expr->b : l->expr->a;
        const rf_expr *y = side ? l->expr->a : l->expr->b;
        if (computable(c, x, c->col) && computable(c, y, acol) && cannot_fail(c, x, c->col) &&
            cannot_fail(c, y, acol)) {
            k->lit = i;
            k->cur_side = x;
            k->atom_side = y;
            return true;
        }
    }
    return false;
}

/* Variables that something not yet done still needs. */
static void compute_need(const rule_ctx *c, bool *need)
{
    const rf_rule *r = c->r;
    memset(need, 0, (size_t)r->nvars * sizeof *need);
    for (int i = 0; i < r->nbody; i++) {
        const rf_literal *l = &r->body[i];
        if (c->done[i])
            continue;
        if (l->kind == RF_LIT_ATOM || l->kind == RF_LIT_NEGATED)
            for (int j = 0; j < l->nargs; j++)
                mark_vars(l->args[j], need);
        else
            mark_vars(l->expr, need);
    }
    for (int i = 0; i < c->nfinal; i++)
        mark_vars(c->final[i], need);
}

static bool pending(const rule_ctx *c, rf_lit_kind kind)
{
    for (int i = 0; i < c->r->nbody; i++)
        if (!c->done[i] && c->r->body[i].kind == kind)
            return true;
    return false;
}

static void set_cur(rule_ctx *c, int rel, int n, const int *vars)
{
    free(c->curvar);
    c->cur = rel;
    c->ncur = n;
    c->curvar = int_dup(vars, n);
    for (int v = 0; v < c->r->nvars; v++)
        c->col[v] = -1;
    for (int i = 0; i < n; i++)
        if (vars[i] >= 0)
            c->col[vars[i]] = i;
}

/* One input of a command, for row identities: the variable of each of its
 * columns (-1 for an identity column) from column `base` on, and which
 * input it is (RF_EX_ROWID's index). */
typedef struct idsrc {
    const int *vars;
    int n, base, input;
} idsrc;

/* The identity columns a command of a bag body appends to its output, in
 * out[] (returns how many). A row of an input stays apart from the other
 * rows of that input when the output keeps every one of its variables:
 * then its identity columns are kept as they are. Otherwise the output
 * gets the row's position in the input instead (which identifies the
 * whole row, identities included). Inputs are sets, or bags whose rows
 * are each one binding, so a position never merges two bindings. */
static int identities(const idsrc *in, int nin, const bool *kept, rf_expr **out)
{
    int n = 0;
    for (int s = 0; s < nin; s++) {
        bool whole = true;
        for (int k = 0; k < in[s].n && whole; k++)
            whole = in[s].vars[k] < 0 || kept[in[s].vars[k]];
        if (!whole) {
            out[n++] = rf_expr_leaf(RF_EX_ROWID, RF_TYPE_INT64, in[s].input);
            continue;
        }
        for (int k = 0; k < in[s].n; k++)
            if (in[s].vars[k] < 0)
                out[n++] = rf_expr_leaf(RF_EX_COL, RF_TYPE_INT64, in[s].base + k);
    }
    return n;
}

/* Identity columns an input can contribute at most (see identities). */
static int max_identities(const idsrc *in, int nin)
{
    int n = 0;
    for (int s = 0; s < nin; s++) {
        int ids = 0;
        for (int k = 0; k < in[s].n; k++)
            ids += in[s].vars[k] < 0;
        n += ids > 1 ? ids : 1;
    }
    return n;
}

static void give_comment(rule_ctx *c, rf_plan_cmd *cmd)
{
    if (c->comment) {
        cmd->comment = c->comment;
        c->comment = NULL;
    }
}

/* Fills cmd's projection and destination: the final expressions when
 * nothing is left to do, else the needed bound variables; in a bag body
 * followed by the identity columns for the command's inputs in[0..nin).
 * On return vars[0..*nvars) names the columns of the result (when not
 * final; -1 for an identity column). */
static void project(rule_ctx *c, rf_plan_cmd *cmd, const int *colmap, bool final,
                    int *vars, int *nvars, const idsrc *in, int nin)
{
    const rf_rule *r = c->r;
    *nvars = 0;
    int maxids = c->bag ? max_identities(in, nin) : 0;
    bool *kept = rf_calloc((size_t)r->nvars + 1, sizeof *kept);
    if (final) {
        cmd->proj = rf_malloc(rf_mul_size((size_t)c->nfinal + (size_t)maxids + 1, sizeof *cmd->proj));
        for (int i = 0; i < c->nfinal; i++) {
            cmd->proj[i] = translate(c, c->final[i], colmap);
            if (c->final[i]->op == RF_EX_VAR)
                kept[c->final[i]->index] = true;
        }
        cmd->nproj = c->nfinal;
        if (c->bag) {
            cmd->nproj += identities(in, nin, kept, cmd->proj + c->nfinal);
            rf_type *types = rf_malloc(((size_t)cmd->nproj + 1) * sizeof *types);
            for (int i = 0; i < cmd->nproj; i++)
                types[i] = i < c->nfinal ? c->final_types[i] : RF_TYPE_INT64;
            c->final_dst = new_temp(c->b, cmd->nproj, types);
            free(types);
        }
        cmd->dst = c->final_dst;
        free(kept);
        return;
    }
    bool *need = rf_calloc((size_t)r->nvars + 1, sizeof *need);
    compute_need(c, need);
    rf_type *types = rf_malloc(((size_t)r->nvars + (size_t)maxids + 1) * sizeof *types);
    cmd->proj = rf_malloc(((size_t)r->nvars + (size_t)maxids + 1) * sizeof *cmd->proj);
    for (int v = 0; v < r->nvars; v++) {
        if (!need[v] || !c->bound[v])
            continue;
        rf_expr leaf = { .op = RF_EX_VAR, .type = r->var_types[v], .index = v };
        cmd->proj[*nvars] = translate(c, &leaf, colmap);
        types[*nvars] = r->var_types[v];
        kept[v] = true;
        vars[(*nvars)++] = v;
    }
    if (c->bag) {
        int nid = identities(in, nin, kept, cmd->proj + *nvars);
        for (int k = 0; k < nid; k++) {
            types[*nvars] = RF_TYPE_INT64;
            vars[(*nvars)++] = -1;
        }
    }
    cmd->nproj = *nvars;
    cmd->dst = new_temp(c->b, *nvars, types);
    free(types);
    free(need);
    free(kept);
}

/* Resolves assignments whose inputs are bound, and collects the filters
 * that become applicable, in source order (so `y != 0, x / y > 1` keeps
 * its short-circuit protection). */
static rf_expr *ready_filters(rule_ctx *c, const int *colmap)
{
    const rf_rule *r = c->r;
    for (bool changed = true; changed;) {
        changed = false;
        for (int i = 0; i < r->nbody; i++) {
            const rf_literal *l = &r->body[i];
            if (!c->done[i] && l->kind == RF_LIT_ASSIGN && vars_bound(l->expr, c->bound)) {
                c->done[i] = true;
                c->bound[l->var] = true;
                c->assign[l->var] = l->expr;
                changed = true;
            }
        }
    }
    rf_expr *filter = NULL;
    for (int i = 0; i < r->nbody; i++) {
        const rf_literal *l = &r->body[i];
        if (!c->done[i] && l->kind == RF_LIT_FILTER && vars_bound(l->expr, c->bound)) {
            c->done[i] = true;
            filter = and_expr(filter, translate(c, l->expr, colmap));
        }
    }
    return filter;
}

/* Scan of one atom: filters for its constants and repeated variables.
 * vars_out gets the distinct variables in argument order, firstcol their
 * column in the relation. Returns the filter (NULL if none). */
static rf_expr *atom_conditions(const rule_ctx *c, const rf_literal *l, int rel,
                                int *vars_out, int *firstcol, int *nv)
{
    const rf_type *types = c->b->rels.items[rel].types;
    rf_expr *filter = NULL;
    *nv = 0;
    for (int j = 0; j < l->nargs; j++) {
        const rf_expr *a = l->args[j];
        if (!a)
            continue;
        if (a->op != RF_EX_VAR) {
            filter = and_expr(filter, col_eq(types[j], j, rf_expr_clone(a)));
            continue;
        }
        int k = 0;
        while (k < *nv && vars_out[k] != a->index)
            k++;
        if (k < *nv) {
            filter = and_expr(filter, col_eq(types[j], j, rf_expr_leaf(RF_EX_COL, types[j], firstcol[k])));
        } else {
            vars_out[*nv] = a->index;
            firstcol[(*nv)++] = j;
        }
    }
    return filter;
}

static void apply_negations(rule_ctx *c);

/* The scan of the first atom (or of the unit relation for a body without
 * atoms): one MAPFILTER. */
static void first_step(rule_ctx *c, int lit, int rel)
{
    const rf_rule *r = c->r;
    int *colmap = rf_malloc(((size_t)r->nvars + 1) * sizeof *colmap);
    int *vars = rf_malloc(((size_t)r->nvars + 2) * sizeof *vars);
    int *first = rf_malloc(((size_t)r->nvars + 1) * sizeof *first);
    for (int v = 0; v < r->nvars; v++)
        colmap[v] = -1;
    rf_expr *filter = NULL;
    int natom = 0;
    if (lit >= 0) {
        int nv;
        filter = atom_conditions(c, &r->body[lit], rel, vars, first, &nv);
        natom = nv;
        for (int k = 0; k < nv; k++) {
            colmap[vars[k]] = first[k];
            c->bound[vars[k]] = true;
        }
        c->done[lit] = true;
    }
    filter = and_expr(filter, ready_filters(c, colmap));
    bool final = !pending(c, RF_LIT_ATOM) && !pending(c, RF_LIT_NEGATED);
    rf_plan_cmd *cmd = emit(c->b, RF_CMD_MAPFILTER, -1, rel, -1);
    cmd->filter = filter;
    int nout;
    /* The atom's rows: its distinct variables (the unit relation has one
     * row, which needs no identity). */
    int *atom_vars = int_dup(vars, lit >= 0 ? natom : 0);
    idsrc in = { atom_vars, lit >= 0 ? natom : 0, 0, 0 };
    project(c, cmd, colmap, final, vars, &nout, &in, lit >= 0 ? 1 : 0);
    free(atom_vars);
    /* A scan that neither filters nor drops columns is the relation itself. */
    bool identity = !final && !filter && cmd->nproj == arity_of(c->b, rel);
    for (int i = 0; identity && i < cmd->nproj; i++)
        identity = cmd->proj[i]->op == RF_EX_COL && cmd->proj[i]->index == i;
    if (identity) {
        int dst = cmd->dst;
        bblock *blk = &c->b->blocks.items[c->b->blocks.len - 1];
        rf_plan_cmd_release(cmd);
        blk->cmds.len--;
        drop_last_temp(c->b, dst);
        set_cur(c, rel, nout, vars);
    } else {
        give_comment(c, cmd);
        set_cur(c, cmd->dst, nout, vars);
    }
    free(colmap);
    free(vars);
    free(first);
    apply_negations(c);
}

/* Scans atom `lit` on its own (constants, repeated variables, filters over
 * its variables alone) keeping the variables needed later or shared with
 * cur; returns the relation and its column variables. The nkeyx
 * expressions keyx (over the relation's columns; taken over) are join key
 * columns: keycol[k] gets the column of the result holding keyx[k], either
 * a kept variable's or a computed one after the nvars variable columns. */
static int prescan(rule_ctx *c, int lit, int rel, int *vars, int *nvars, int nkeyx, rf_expr **keyx,
                   int *keycol)
{
    const rf_rule *r = c->r;
    const rf_literal *l = &r->body[lit];
    int *avars = rf_malloc(((size_t)l->nargs + 1) * sizeof *avars);
    int *first = rf_malloc(((size_t)l->nargs + 1) * sizeof *first);
    int *colmap = rf_malloc(((size_t)r->nvars + 1) * sizeof *colmap);
    bool *mine = rf_calloc((size_t)r->nvars + 1, sizeof *mine);
    int nv;
    rf_expr *filter = atom_conditions(c, l, rel, avars, first, &nv);
    for (int v = 0; v < r->nvars; v++)
        colmap[v] = -1;
    for (int k = 0; k < nv; k++) {
        colmap[avars[k]] = first[k];
        mine[avars[k]] = true;
    }
    c->done[lit] = true;
    /* Filters over this atom's variables alone run in its scan (with
     * resolved assignments expanded where that cannot fail). */
    for (int i = 0; i < r->nbody; i++) {
        const rf_literal *f = &r->body[i];
        if (!c->done[i] && f->kind == RF_LIT_FILTER &&
            (vars_bound(f->expr, mine) ||
             (c->b->optimize && computable(c, f->expr, colmap) && cannot_fail(c, f->expr, colmap)))) {
            c->done[i] = true;
            filter = and_expr(filter, translate(c, f->expr, colmap));
        }
    }
    bool *need = rf_calloc((size_t)r->nvars + 1, sizeof *need);
    compute_need(c, need);
    rf_plan_cmd cmd;
    memset(&cmd, 0, sizeof cmd);
    cmd.proj = rf_malloc(((size_t)nv + nkeyx + 2) * sizeof *cmd.proj);
    rf_type *types = rf_malloc(((size_t)nv + nkeyx + 2) * sizeof *types);
    *nvars = 0;
    const rf_type *rtypes = c->b->rels.items[rel].types;
    bool identity = !filter && nv == l->nargs;
    for (int k = 0; k < nv; k++) {
        int v = avars[k];
        /* (a key that is one of the atom's columns keeps its variable) */
        bool key = false;
        for (int x = 0; x < nkeyx && !key; x++)
            key = keyx[x]->op == RF_EX_COL && keyx[x]->index == first[k];
        if (!need[v] && c->col[v] < 0 && !key) {
            identity = false;
            continue;
        }
        if (first[k] != *nvars)
            identity = false;
        cmd.proj[*nvars] = rf_expr_leaf(RF_EX_COL, rtypes[first[k]], first[k]);
        types[*nvars] = rtypes[first[k]];
        vars[(*nvars)++] = v;
    }
    /* In a bag body, a scan that drops variables keeps each row apart by
     * its position (see identities). */
    if (c->bag && *nvars < nv) {
        identity = false;
        cmd.proj[*nvars] = rf_expr_leaf(RF_EX_ROWID, RF_TYPE_INT64, 0);
        types[*nvars] = RF_TYPE_INT64;
        vars[(*nvars)++] = -1;
    }
    int ncols = *nvars;
    for (int k = 0; k < nkeyx; k++) {
        keycol[k] = -1;
        for (int j = 0; j < ncols && keycol[k] < 0; j++)
            if (rf_expr_equal(keyx[k], cmd.proj[j]))
                keycol[k] = j;
        if (keycol[k] >= 0) {
            rf_expr_free(keyx[k]);
            continue;
        }
        identity = false;
        keycol[k] = ncols;
        types[ncols] = keyx[k]->type;
        cmd.proj[ncols++] = keyx[k];
    }
    int result = rel;
    if (identity) {
        for (int k = 0; k < ncols; k++)
            rf_expr_free(cmd.proj[k]);
        free(cmd.proj);
    } else {
        rf_plan_cmd *p = emit(c->b, RF_CMD_MAPFILTER, new_temp(c->b, ncols, types), rel, -1);
        p->filter = filter;
        p->nproj = ncols;
        p->proj = cmd.proj;
        give_comment(c, p);
        result = p->dst;
    }
    free(types);
    free(need);
    free(mine);
    free(colmap);
    free(first);
    free(avars);
    return result;
}

/* Joins cur with atom `lit` (read from rel) on the variables they share and
 * on the equalities eq_key finds; a key side that is not a plain column is
 * computed first, by the atom's scan or by a map of cur. */
static void join_step(rule_ctx *c, int lit, int rel)
{
    const rf_rule *r = c->r;
    builder *b = c->b;
    size_t nv = (size_t)r->nvars + 1;
    int *acol = rf_malloc(nv * sizeof *acol);
    eqkey *eq = rf_malloc(((size_t)r->nbody + 1) * sizeof *eq);
    int neq = 0;
    atom_colmap(c, lit, acol);
    if (b->optimize)
        for (int i = 0; i < r->nbody; i++)
            neq += eq_key(c, i, acol, &eq[neq]);
    rf_expr **keyx = rf_malloc(((size_t)neq + 1) * sizeof *keyx);
    int *rkeyx = rf_malloc(((size_t)neq + 1) * sizeof *rkeyx);
    int *lkeyx = rf_malloc(((size_t)neq + 1) * sizeof *lkeyx);
    rf_expr **lx = rf_malloc(((size_t)neq + 1) * sizeof *lx);
    int nlx = 0;
    for (int k = 0; k < neq; k++) {
        c->done[eq[k].lit] = true;
        keyx[k] = translate(c, eq[k].atom_side, acol);
        rf_expr *t = translate(c, eq[k].cur_side, c->col);
        if (t->op == RF_EX_COL) {
            lkeyx[k] = t->index;
            rf_expr_free(t);
        } else {
            lkeyx[k] = c->ncur + nlx;
            lx[nlx++] = t;
        }
    }

    int *rvars = rf_malloc((nv + 1) * sizeof *rvars);
    int nr;
    int right = prescan(c, lit, rel, rvars, &nr, neq, keyx, rkeyx);

    /* Computed key columns of cur: a map appending them (the pushdown pass
     * fuses it into the command that made cur). */
    int left = c->cur, nleft = c->ncur;
    if (nlx > 0) {
        nleft = c->ncur + nlx;
        rf_type *types = rf_malloc(((size_t)nleft + 1) * sizeof *types);
        rf_expr **proj = rf_malloc(((size_t)nleft + 1) * sizeof *proj);
        const rf_type *ct = b->rels.items[c->cur].types;
        for (int j = 0; j < c->ncur; j++) {
            types[j] = ct[j];
            proj[j] = rf_expr_leaf(RF_EX_COL, ct[j], j);
        }
        for (int k = 0; k < nlx; k++) {
            types[c->ncur + k] = lx[k]->type;
            proj[c->ncur + k] = lx[k];
        }
        rf_plan_cmd *m = emit(b, RF_CMD_MAPFILTER, new_temp(b, nleft, types), c->cur, -1);
        m->nproj = nleft;
        m->proj = proj;
        give_comment(c, m);
        left = m->dst;
        free(types);
    }

    int *colmap = rf_malloc(nv * sizeof *colmap);
    int *lkeys = rf_malloc(((size_t)nr + neq + 1) * sizeof *lkeys);
    int *rkeys = rf_malloc(((size_t)nr + neq + 1) * sizeof *rkeys);
    int nkeys = 0;
    for (int v = 0; v < r->nvars; v++)
        colmap[v] = c->col[v];
    for (int j = 0; j < nr; j++) {
        int v = rvars[j];
        if (v < 0)
            continue;   /* the right side's identity */
        if (c->col[v] >= 0) {
            lkeys[nkeys] = c->col[v];
            rkeys[nkeys++] = j;
        } else {
            colmap[v] = nleft + j;
            c->bound[v] = true;
        }
    }
    for (int k = 0; k < neq; k++) {
        lkeys[nkeys] = lkeyx[k];
        rkeys[nkeys++] = rkeyx[k];
    }
    rf_expr *filter = ready_filters(c, colmap);
    bool final = !pending(c, RF_LIT_ATOM) && !pending(c, RF_LIT_NEGATED);
    rf_plan_cmd *cmd = emit(b, RF_CMD_MAPJOIN, -1, left, right);
    cmd->nkeys = nkeys;
    cmd->lkeys = lkeys;
    cmd->rkeys = rkeys;
    cmd->filter = filter;
    give_comment(c, cmd);
    int *vars = rf_malloc((nv + 2) * sizeof *vars);
    int nout;
    idsrc in[2] = { { c->curvar, c->ncur, 0, 0 }, { rvars, nr, nleft, 1 } };
    project(c, cmd, colmap, final, vars, &nout, in, 2);
    set_cur(c, cmd->dst, nout, vars);
    free(vars);
    free(colmap);
    free(rvars);
    free(lx);
    free(lkeyx);
    free(rkeyx);
    free(keyx);
    free(eq);
    free(acol);
    apply_negations(c);
}

/* Anti-joins every negated atom whose variables are now bound. */
static void apply_negations(rule_ctx *c)
{
    const rf_rule *r = c->r;
    builder *b = c->b;
    for (int i = 0; i < r->nbody; i++) {
        const rf_literal *l = &r->body[i];
        if (c->done[i] || l->kind != RF_LIT_NEGATED || !args_bound(l, c->bound))
            continue;
        int neg = b->full[l->pred];
        int *nvars = rf_malloc(((size_t)l->nargs + 1) * sizeof *nvars);
        int *first = rf_malloc(((size_t)l->nargs + 1) * sizeof *first);
        int nv;
        rf_expr *filter = atom_conditions(c, l, neg, nvars, first, &nv);
        bool identity = !filter && nv == l->nargs;
        for (int k = 0; k < nv; k++)
            identity = identity && first[k] == k;
        if (!identity) {
            const rf_type *rt = b->rels.items[neg].types;
            rf_type *types = rf_malloc(((size_t)nv + 1) * sizeof *types);
            for (int k = 0; k < nv; k++)
                types[k] = rt[first[k]];
            rf_plan_cmd *s = emit(b, RF_CMD_MAPFILTER, new_temp(b, nv, types), neg, -1);
            s->filter = filter;
            s->nproj = nv;
            s->proj = rf_malloc(((size_t)nv + 1) * sizeof *s->proj);
            for (int k = 0; k < nv; k++)
                s->proj[k] = rf_expr_leaf(RF_EX_COL, types[k], first[k]);
            give_comment(c, s);
            neg = s->dst;
            free(types);
        }
        c->done[i] = true;
        rf_plan_cmd *cmd = emit(b, RF_CMD_ANTIJOIN, -1, c->cur, neg);
        cmd->nkeys = nv;
        cmd->lkeys = rf_malloc(((size_t)nv + 1) * sizeof *cmd->lkeys);
        cmd->rkeys = rf_malloc(((size_t)nv + 1) * sizeof *cmd->rkeys);
        for (int k = 0; k < nv; k++) {
            cmd->lkeys[k] = c->col[nvars[k]];
            cmd->rkeys[k] = k;
        }
        give_comment(c, cmd);
        bool final = !pending(c, RF_LIT_ATOM) && !pending(c, RF_LIT_NEGATED);
        int *vars = rf_malloc(((size_t)r->nvars + 3) * sizeof *vars);
        int nout;
        int *curvar = int_dup(c->curvar, c->ncur);
        idsrc in = { curvar, c->ncur, 0, 0 };
        project(c, cmd, c->col, final, vars, &nout, &in, 1);
        free(curvar);
        set_cur(c, cmd->dst, nout, vars);
        free(vars);
        free(nvars);
        free(first);
    }
}

/* How attractive atom `lit` is as the next one to join: higher is better. */
static int atom_score(const rule_ctx *c, int lit)
{
    const rf_literal *l = &c->r->body[lit];
    const rf_program *p = c->b->prog;
    int shared = 0, consts = 0, repeats = 0;
    for (int j = 0; j < l->nargs; j++) {
        const rf_expr *a = l->args[j];
        if (!a)
            continue;
        if (a->op != RF_EX_VAR) {
            consts++;
            continue;
        }
        if (c->bound[a->index])
            shared++;
        for (int k = 0; k < j; k++)
            if (l->args[k] && l->args[k]->op == RF_EX_VAR && l->args[k]->index == a->index)
                repeats++;
    }
    /* Equalities with what is bound join like shared variables. */
    int *acol = rf_malloc(((size_t)c->r->nvars + 1) * sizeof *acol);
    atom_colmap(c, lit, acol);
    for (int i = 0; i < c->r->nbody; i++) {
        eqkey k;
        shared += eq_key(c, i, acol, &k);
    }
    free(acol);
    int score = 0;
    if (lit == c->delta_lit)
        score += 1 << 20;           /* deltas are small: drive the join */
    if (shared > 0)
        score += 1 << 16 | shared << 12; /* never a cross product if avoidable */
    score += (consts + repeats) << 8;
    if (!p->preds[l->pred].has_rules)
        score += 1 << 4;            /* base facts: usually smaller, known early */
    return score;
}

static int pick_atom(const rule_ctx *c)
{
    int best = -1, best_score = -1;
    for (int i = 0; i < c->r->nbody; i++) {
        if (c->done[i] || c->r->body[i].kind != RF_LIT_ATOM)
            continue;
        if (!c->b->optimize)
            return i;   /* source order */
        int s = atom_score(c, i);
        if (s > best_score) {
            best = i;
            best_score = s;
        }
    }
    return best;
}

static int atom_rel(const rule_ctx *c, int lit)
{
    const rf_literal *l = &c->r->body[lit];
    return lit == c->delta_lit ? c->b->delta[l->pred] : c->b->full[l->pred];
}

static int unit_rel(builder *b)
{
    if (b->unit < 0) {
        char *name = rf_strdup("unit");
        for (int k = 1; name_taken(b, name); k++) {
            free(name);
            name = rf_sprintf("unit%d", k);
        }
        b->unit = add_rel(b, name, 0, NULL, RF_REL_TEMP, -1);
        b->rels.items[b->unit].nfacts = 1;
        /* Loaded in block 0 so that bodies without atoms have one binding. */
        rf_plan_cmd *cmd = emit(b, RF_CMD_LOAD, b->unit, -1, -1);
        cmd->comment = rf_strdup("the empty tuple, for bodies without atoms");
        /* emit() appended to the current block; move it to block 0. */
        bblock *cur = &b->blocks.items[b->blocks.len - 1];
        if (cur != &b->blocks.items[0]) {
            rf_plan_cmd c = cur->cmds.items[--cur->cmds.len];
            RF_PUSH(b->blocks.items[0].cmds, c);
        }
    }
    return b->unit;
}

/* ---- Worst-case-optimal joins (RF_CMD_MULTIJOIN) ----
 *
 * A body of several atoms can be joined all at once by a leapfrog
 * triejoin over a variable order instead of atom by atom. On a cyclic body
 * (triangle, clique, k-cycle) the binary plan materialises intermediates
 * (every 2-path of a triangle query) that can be far larger than the
 * answer; the multiway join never holds more than one binding per thread.
 * On an acyclic body binary joins in a good order are already optimal
 * (Yannakakis), so `--join=auto` keeps them.
 *
 * Which of the two is faster on a cyclic body depends on the data: on low,
 * even degrees (road networks, uniform random graphs) the binary plan's
 * intermediates stay near the size of its inputs and its plain merge
 * joins win on the GPU; on skewed degrees they explode (and can exhaust
 * memory) while the multiway join does not. The inputs are often computed
 * relations, unknown until run time, so under `--join=auto` a cyclic body
 * gets both plans, each in a block of its own, behind a BRANCH_JOIN that
 * measures the binary plan's first join at run time (auto_join). */

typedef struct mj_body {
    int natoms;
    int atoms[RF_MULTIJOIN_MAX_IN];      /* body literal of each source */
    uint32_t edges[RF_MULTIJOIN_MAX_IN]; /* its distinct variables (local numbers) */
    int nv;
    int var[RF_MULTIJOIN_MAX_VARS];      /* rule variable of each local number */
} mj_body;

/* The body's positive atoms when a MULTIJOIN can take them: the rule
 * planned with optimize on and not as a bag (row identities are a binary
 * plan's), 2..RF_MULTIJOIN_MAX_IN atoms each binding a variable, at most
 * RF_MULTIJOIN_MAX_VARS variables among them, none also assigned. */
static bool multijoin_body(const rule_ctx *c, mj_body *m)
{
    const rf_rule *r = c->r;
    if (!c->b->optimize || c->bag)
        return false;
    memset(m, 0, sizeof *m);
    for (int i = 0; i < r->nbody; i++) {
        const rf_literal *l = &r->body[i];
        if (c->done[i] || l->kind != RF_LIT_ATOM)
            continue;
        if (m->natoms == RF_MULTIJOIN_MAX_IN)
            return false;
        uint32_t e = 0;
        for (int j = 0; j < l->nargs; j++) {
            const rf_expr *a = l->args[j];
            if (!a || a->op != RF_EX_VAR)
                continue;
            int k = 0;
            while (k < m->nv && m->var[k] != a->index)
                k++;
            if (k == m->nv) {
                if (m->nv == RF_MULTIJOIN_MAX_VARS)
                    return false;
                m->var[m->nv++] = a->index;
            }
            e |= 1u << k;
        }
        if (!e)
            return false;
        m->atoms[m->natoms] = i;
        m->edges[m->natoms++] = e;
    }
    /* `y = x + 2` where an atom binds y too is an equality the binary
     * planner makes a join key (eq_key); here it would read as the
     * assignment of an already bound variable: leave such bodies binary. */
    for (int i = 0; i < r->nbody; i++) {
        const rf_literal *l = &r->body[i];
        for (int k = 0; !c->done[i] && l->kind == RF_LIT_ASSIGN && k < m->nv; k++)
            if (m->var[k] == l->var)
                return false;
    }
    return m->natoms >= 2;
}

/* GYO reduction: a hypergraph is acyclic iff repeatedly deleting vertices
 * of one edge only and edges inside another edge empties it. */
static bool body_acyclic(const mj_body *m)
{
    uint32_t e[RF_MULTIJOIN_MAX_IN];
    bool alive[RF_MULTIJOIN_MAX_IN];
    for (int i = 0; i < m->natoms; i++) {
        e[i] = m->edges[i];
        alive[i] = true;
    }
    for (bool changed = true; changed;) {
        changed = false;
        for (int v = 0; v < m->nv; v++) {
            int n = 0, last = -1;
            for (int i = 0; i < m->natoms; i++)
                if (alive[i] && (e[i] >> v & 1)) {
                    n++;
                    last = i;
                }
            if (n == 1) {
                e[last] &= ~(1u << v);
                changed = true;
            }
        }
        for (int i = 0; i < m->natoms; i++) {
            if (!alive[i])
                continue;
            bool inside = e[i] == 0;
            for (int j = 0; j < m->natoms && !inside; j++)
                inside = j != i && alive[j] && (e[i] & ~e[j]) == 0 && (e[i] != e[j] || j < i);
            if (inside) {
                alive[i] = false;
                changed = true;
            }
        }
    }
    for (int i = 0; i < m->natoms; i++)
        if (alive[i])
            return false;
    return true;
}

/* The variable order: first the variable in most atoms, then each time
 * the one in most atoms with a variable already bound (it is intersected
 * the most, so bindings shrink fastest), then in most atoms. */
static void multijoin_order(const mj_body *m, int *order)
{
    uint32_t bound = 0;
    for (int k = 0; k < m->nv; k++) {
        int best = -1, best_con = -1, best_deg = -1;
        for (int v = 0; v < m->nv; v++) {
            if (bound >> v & 1)
                continue;
            int con = 0, deg = 0;
            for (int i = 0; i < m->natoms; i++)
                if (m->edges[i] >> v & 1) {
                    deg++;
                    con += (m->edges[i] & bound) != 0;
                }
            if (con > best_con || (con == best_con && deg > best_deg)) {
                best = v;
                best_con = con;
                best_deg = deg;
            }
        }
        order[k] = best;
        bound |= 1u << best;
    }
}

/* Joins every positive atom in one MULTIJOIN: each atom is scanned on its
 * own (constants, repeated variables and filters over its variables
 * alone), the join binds the variables in `order`, and the filters,
 * assignments and head follow as after the last binary join. */
static void multijoin_step(rule_ctx *c, const mj_body *m, const int *order, char *why)
{
    const rf_rule *r = c->r;
    builder *b = c->b;
    size_t nv = (size_t)r->nvars + 1;
    int *colmap = rf_malloc(nv * sizeof *colmap);
    int pos[RF_MULTIJOIN_MAX_VARS];
    for (int v = 0; v < r->nvars; v++)
        colmap[v] = -1;
    for (int k = 0; k < m->nv; k++)
        pos[order[k]] = k;
    int ins[RF_MULTIJOIN_MAX_IN], in_first[RF_MULTIJOIN_MAX_IN + 1];
    int *in_vars = rf_malloc(((size_t)m->natoms * RF_MULTIJOIN_MAX_VARS + 1) * sizeof *in_vars);
    in_first[0] = 0;
    for (int a = 0; a < m->natoms; a++)
        c->done[m->atoms[a]] = true;
    for (int a = 0; a < m->natoms; a++) {
        int lit = m->atoms[a];
        const rf_literal *l = &r->body[lit];
        int rel = atom_rel(c, lit);
        int *avars = rf_malloc(((size_t)l->nargs + 1) * sizeof *avars);
        int *first = rf_malloc(((size_t)l->nargs + 1) * sizeof *first);
        bool *mine = rf_calloc(nv, sizeof *mine);
        int *acol = rf_malloc(nv * sizeof *acol);
        int na;
        rf_expr *filter = atom_conditions(c, l, rel, avars, first, &na);
        for (int v = 0; v < r->nvars; v++)
            acol[v] = -1;
        for (int k = 0; k < na; k++) {
            mine[avars[k]] = true;
            acol[avars[k]] = first[k];
        }
        for (int i = 0; i < r->nbody; i++) {
            const rf_literal *f = &r->body[i];
            if (!c->done[i] && f->kind == RF_LIT_FILTER && vars_bound(f->expr, mine)) {
                c->done[i] = true;
                filter = and_expr(filter, translate(c, f->expr, acol));
            }
        }
        bool identity = !filter && na == arity_of(b, rel);
        for (int k = 0; k < na; k++)
            identity = identity && first[k] == k;
        if (!identity) {
            const rf_type *rt = b->rels.items[rel].types;
            rf_type *types = rf_malloc(((size_t)na + 1) * sizeof *types);
            for (int k = 0; k < na; k++)
                types[k] = rt[first[k]];
            rf_plan_cmd *s = emit(b, RF_CMD_MAPFILTER, new_temp(b, na, types), rel, -1);
            s->filter = filter;
            s->nproj = na;
            s->proj = rf_malloc(((size_t)na + 1) * sizeof *s->proj);
            for (int k = 0; k < na; k++)
                s->proj[k] = rf_expr_leaf(RF_EX_COL, types[k], first[k]);
            give_comment(c, s);
            rel = s->dst;
            free(types);
        }
        ins[a] = rel;
        for (int k = 0; k < na; k++) {
            int local = 0;
            while (m->var[local] != avars[k])
                local++;
            in_vars[in_first[a] + k] = pos[local];
        }
        in_first[a + 1] = in_first[a] + na;
        free(avars);
        free(first);
        free(mine);
        free(acol);
    }
    for (int k = 0; k < m->nv; k++) {
        colmap[m->var[order[k]]] = k;
        c->bound[m->var[order[k]]] = true;
    }
    rf_expr *filter = ready_filters(c, colmap);
    bool final = !pending(c, RF_LIT_NEGATED);
    rf_plan_cmd *cmd = emit(b, RF_CMD_MULTIJOIN, -1, -1, -1);
    cmd->nins = m->natoms;
    cmd->ins = int_dup(ins, m->natoms);
    cmd->in_first = int_dup(in_first, m->natoms + 1);
    cmd->in_vars = int_dup(in_vars, in_first[m->natoms]);
    cmd->nvars = m->nv;
    cmd->filter = filter;
    cmd->why = why;
    give_comment(c, cmd);
    int *vars = rf_malloc((nv + 2) * sizeof *vars);
    int nout;
    project(c, cmd, colmap, final, vars, &nout, NULL, 0);
    set_cur(c, cmd->dst, nout, vars);
    free(vars);
    free(in_vars);
    free(colmap);
    apply_negations(c);
}

/* The binary plan of the body's atoms: the first atom scanned, every
 * further one joined (MapJoin chains). lits[0..1] get the first two atoms
 * joined (-1 where there are fewer); `why` (owned, may be NULL) goes to
 * the last MapJoin for explain. */
static void binary_joins(rule_ctx *c, char *why, int lits[2])
{
    builder *b = c->b;
    bblock *blk = &b->blocks.items[b->blocks.len - 1];
    size_t from = blk->cmds.len;
    int first = pick_atom(c);
    lits[0] = first;
    lits[1] = -1;
    if (first < 0)
        first_step(c, -1, unit_rel(b));
    else
        first_step(c, first, atom_rel(c, first));
    for (int lit; (lit = pick_atom(c)) >= 0;) {
        if (lits[1] < 0)
            lits[1] = lit;
        join_step(c, lit, atom_rel(c, lit));
    }
    rf_plan_cmd *last = NULL;
    for (size_t i = from; i < blk->cmds.len; i++)
        if (blk->cmds.items[i].kind == RF_CMD_MAPJOIN)
            last = &blk->cmds.items[i];
    if (last && !last->why) {
        last->why = why;
        why = NULL;
    }
    free(why);
}

/* What planning a body changes in its rule_ctx, so that auto_join can plan
 * the same body twice from the same start. */
typedef struct rule_state {
    bool *done, *bound;
    const rf_expr **assign;
    int *col, cur, ncur, *curvar, final_dst;
    char *comment;
} rule_state;

static void save_state(const rule_ctx *c, rule_state *s)
{
    size_t nv = (size_t)c->r->nvars + 1, nb = (size_t)c->r->nbody + 1;
    s->done = rf_malloc(nb * sizeof *s->done);
    memcpy(s->done, c->done, nb * sizeof *s->done);
    s->bound = rf_malloc(nv * sizeof *s->bound);
    memcpy(s->bound, c->bound, nv * sizeof *s->bound);
    s->assign = rf_malloc(nv * sizeof *s->assign);
    memcpy(s->assign, c->assign, nv * sizeof *s->assign);
    s->col = rf_malloc(nv * sizeof *s->col);
    memcpy(s->col, c->col, nv * sizeof *s->col);
    s->cur = c->cur;
    s->ncur = c->ncur;
    s->curvar = c->curvar ? int_dup(c->curvar, c->ncur) : NULL;
    s->final_dst = c->final_dst;
    s->comment = c->comment ? rf_strdup(c->comment) : NULL;
}

/* Puts the saved state back (and frees the saved copy). */
static void restore_state(rule_ctx *c, rule_state *s)
{
    size_t nv = (size_t)c->r->nvars + 1, nb = (size_t)c->r->nbody + 1;
    memcpy(c->done, s->done, nb * sizeof *s->done);
    memcpy(c->bound, s->bound, nv * sizeof *s->bound);
    memcpy(c->assign, s->assign, nv * sizeof *s->assign);
    memcpy(c->col, s->col, nv * sizeof *s->col);
    c->cur = s->cur;
    c->ncur = s->ncur;
    free(c->curvar);
    c->curvar = s->curvar;
    c->final_dst = s->final_dst;
    free(c->comment);
    c->comment = s->comment;
    free(s->done);
    free(s->bound);
    free(s->assign);
    free(s->col);
}

/* --join=auto on a cyclic body: both plans, chosen at run time.
 *
 *   current block:  ... if rows(A join B on keys) > ratio x (rows(A) +
 *                       rows(B)) goto autoN.wcoj else goto autoN.binary
 *   autoN.wcoj:     the MultiJoin (and the rest of the body); goto autoN.end
 *   autoN.binary:   the MapJoin chain (and the rest of the body)
 *   autoN.end:      what follows the body (both wrote the same relation)
 *
 * A and B are the relations of the binary plan's first two atoms and the
 * keys the columns of the variables they share: the size J of that first
 * join (sum over key values of the rows of A times the rows of B holding
 * it; the atoms' own filters not applied, so an upper bound) is the
 * binary plan's first intermediate, and J / (|A| + |B|) how much a join
 * that brings in a new variable grows the bindings. Near 1 or below,
 * degrees are low and even and binary joins are cheap; far above, every
 * further variable multiplies the bindings again (a body of v variables:
 * about (|A| + |B|) x (J / (|A| + |B|))^(v - 2) at the largest) while the
 * multiway join stays within the AGM bound, its cost mostly its inputs,
 * one re-keyed sorted copy an atom (about n x (|A| + |B|) / 2 rows for n
 * atoms). The runtime compares the first with ratio x the second, the
 * ratio the backend's (runtime/join_choice.c: RF_WCOJ_AUTO_RATIO). */
static void auto_join(rule_ctx *c, const mj_body *m, const int *order)
{
    builder *b = c->b;
    int choice = b->nchoices++;
    int from = (int)b->blocks.len - 1;
    emit(b, RF_CMD_BRANCH_JOIN, -1, -1, -1)->comment =
        rf_sprintf("--join=auto, at run time: the binary plan's largest intermediate, ~N x (J/N)^%d (J: rows of "
                   "that join, N: of its inputs), against the multiway join's inputs", m->nv - 2);
    size_t branch_at = b->blocks.items[from].cmds.len - 1;
    rule_state saved;
    save_state(c, &saved);

    int wcoj_block = (int)b->blocks.len;
    start_block(b, rf_sprintf("auto%d.wcoj", choice));
    multijoin_step(c, m, order, rf_strdup("wcoj, chosen at run time (--join=auto): the binary plan's first "
                                          "join would be large against its inputs"));
    emit(b, RF_CMD_JUMP, -1, -1, -1);
    size_t jump_at = b->blocks.items[b->blocks.len - 1].cmds.len - 1;
    int jump_block = (int)b->blocks.len - 1;

    restore_state(c, &saved);
    int binary_block = (int)b->blocks.len;
    start_block(b, rf_sprintf("auto%d.binary", choice));
    int lits[2];
    binary_joins(c, rf_strdup("binary, chosen at run time (--join=auto): its first join stays near the "
                              "size of its inputs"), lits);
    int end_block = (int)b->blocks.len;
    start_block(b, rf_sprintf("auto%d.end", choice));
    b->blocks.items[jump_block].cmds.items[jump_at].target = end_block;

    rf_plan_cmd *br = &b->blocks.items[from].cmds.items[branch_at];
    br->target = wcoj_block;
    br->target_else = binary_block;
    /* A cyclic body has two atoms or more, and the second one picked
     * shares a variable with the first when any does. */
    int la = lits[0], lb = lits[1] >= 0 ? lits[1] : lits[0];
    br->nvars = m->nv;
    br->nins = m->natoms;
    br->src[0] = atom_rel(c, la);
    br->src[1] = atom_rel(c, lb);
    const rf_literal *A = &c->r->body[la], *B = &c->r->body[lb];
    br->lkeys = rf_malloc(((size_t)A->nargs + 1) * sizeof *br->lkeys);
    br->rkeys = rf_malloc(((size_t)A->nargs + 1) * sizeof *br->rkeys);
    uint64_t seen = 0;   /* a variable repeated in A is one key */
    for (int i = 0; i < A->nargs; i++) {
        const rf_expr *x = A->args[i];
        if (!x || x->op != RF_EX_VAR || (x->index < 64 && (seen >> x->index & 1)))
            continue;
        for (int j = 0; j < B->nargs; j++) {
            const rf_expr *y = B->args[j];
            if (y && y->op == RF_EX_VAR && y->index == x->index) {
                br->lkeys[br->nkeys] = i;
                br->rkeys[br->nkeys++] = j;
                if (x->index < 64)
                    seen |= 1ull << x->index;
                break;
            }
        }
    }
}

/* Plans the body's atoms as one MULTIJOIN when the join mode says so, or
 * (--join=auto, cyclic body) as both plans behind a run-time choice;
 * returns true when it planned the body's atoms. */
static bool try_multijoin(rule_ctx *c)
{
    mj_body m;
    if (c->b->join == RF_JOIN_BINARY || !multijoin_body(c, &m))
        return false;
    int order[RF_MULTIJOIN_MAX_VARS];
    multijoin_order(&m, order);
    if (c->b->join == RF_JOIN_WCOJ) {
        multijoin_step(c, &m, order, rf_strdup("wcoj (--join=wcoj)"));
        return true;
    }
    if (body_acyclic(&m))
        return false;   /* binary joins are optimal on acyclic bodies */
    auto_join(c, &m, order);
    return true;
}

/* Whether a keyless count() over c's body would count the bindings of a
 * multiway join: the body, planned with every variable (not as a bag),
 * is one the join mode plans as a MULTIJOIN (--join=wcoj: any it takes;
 * auto: a cyclic one). */
static bool counted_by_multijoin(const rule_ctx *c)
{
    rule_ctx every = *c;
    every.bag = false;
    mj_body m;
    if (c->b->join == RF_JOIN_BINARY || !multijoin_body(&every, &m))
        return false;
    return c->b->join == RF_JOIN_WCOJ || !body_acyclic(&m);
}

/* ---- Equalities between variables ---- */

/* A filter `a = b` between two variables that positive atoms bind and that
 * have the same type says that the two are one variable: the rule is
 * rewritten with every variable replaced by the representative of its class
 * (union-find, so chains `y = y2, y2 = y3` collapse too), and the filters
 * are dropped. Shared variables then become join keys (or, within one atom,
 * a repeated-variable filter of its scan) like any other. The rewrite is
 * exact: values are canonical words of one type, so `a = b` holds exactly
 * when the words are equal. Variables of different types (`y = y2` with y
 * int32 and y2 int64 compares CAST(y) = y2) are left to join_step's
 * expression keys; assigned variables are not renamed either. */

static int uf_root(int *parent, int v)
{
    while (parent[v] != v)
        v = parent[v] = parent[parent[v]];
    return v;
}

static void mark_atom_vars(const rf_rule *r, bool *set)
{
    for (int i = 0; i < r->nbody; i++)
        if (r->body[i].kind == RF_LIT_ATOM)
            for (int j = 0; j < r->body[i].nargs; j++)
                mark_vars(r->body[i].args[j], set);
}

/* The filter literal l equates two atom-bound variables of one type: sets
 * *x and *y to them. */
static bool var_equality(const rf_rule *r, const rf_literal *l, const bool *in_atom, int *x, int *y)
{
    if (l->kind != RF_LIT_FILTER || l->expr->op != RF_EX_EQ)
        return false;
    const rf_expr *a = l->expr->a, *b = l->expr->b;
    if (a->op != RF_EX_VAR || b->op != RF_EX_VAR || !in_atom[a->index] || !in_atom[b->index] ||
        r->var_types[a->index] != r->var_types[b->index])
        return false;
    *x = a->index;
    *y = b->index;
    return true;
}

static void rename_leaf(rf_expr *leaf, void *ctx)
{
    const int *rep = ctx;
    if (leaf->op == RF_EX_VAR)
        leaf->index = rep[leaf->index];
}

static rf_expr *renamed(const rf_expr *e, int *rep)
{
    rf_expr *t = e ? rf_expr_clone(e) : NULL;
    rf_expr_visit_leaves(t, rename_leaf, rep);
    return t;
}

/* Returns r rewritten with equated variables unified, marking the dropped
 * equalities in done[]; NULL (and done untouched) when r has none. The copy
 * shares var_names and var_types with r; free it with free_unified. Body
 * literals keep their indices (delta positions refer to them). */
static rf_rule *unify_rule(const rf_rule *r, int head_arity, bool *done)
{
    size_t nv = (size_t)r->nvars + 1;
    bool *in_atom = rf_calloc(nv, sizeof *in_atom);
    int *rep = rf_malloc(nv * sizeof *rep);
    mark_atom_vars(r, in_atom);
    for (int v = 0; v < r->nvars; v++)
        rep[v] = v;
    bool any = false;
    for (int i = 0; i < r->nbody; i++) {
        int x, y;
        if (!var_equality(r, &r->body[i], in_atom, &x, &y))
            continue;
        x = uf_root(rep, x);
        y = uf_root(rep, y);
        if (x < y)
            rep[y] = x;
        else
            rep[x] = y;
        any = true;
    }
    rf_rule *u = NULL;
    if (any) {
        for (int v = 0; v < r->nvars; v++)
            rep[v] = uf_root(rep, v);
        for (int i = 0; i < r->nbody; i++) {
            int x, y;
            if (var_equality(r, &r->body[i], in_atom, &x, &y))
                done[i] = true;
        }
        u = rf_malloc(sizeof *u);
        *u = *r;
        u->body = rf_calloc((size_t)r->nbody + 1, sizeof *u->body);
        for (int i = 0; i < r->nbody; i++) {
            const rf_literal *l = &r->body[i];
            rf_literal *m = &u->body[i];
            *m = *l;
            m->expr = renamed(l->expr, rep);
            m->args = NULL;
            if (l->kind == RF_LIT_ATOM || l->kind == RF_LIT_NEGATED) {
                m->args = rf_calloc((size_t)l->nargs + 1, sizeof *m->args);
                for (int j = 0; j < l->nargs; j++)
                    m->args[j] = renamed(l->args[j], rep);
            }
        }
        u->head_args = rf_calloc((size_t)head_arity + 1, sizeof *u->head_args);
        for (int j = 0; j < head_arity; j++)
            u->head_args[j] = renamed(r->head_args[j], rep);
        u->agg_args = rf_calloc((size_t)r->naggs + 1, sizeof *u->agg_args);
        for (int j = 0; j < r->naggs; j++)
            u->agg_args[j] = renamed(r->agg_args[j], rep);
    }
    free(in_atom);
    free(rep);
    return u;
}

static void free_unified(rf_rule *u, int head_arity)
{
    if (!u)
        return;
    for (int i = 0; i < u->nbody; i++) {
        rf_literal *l = &u->body[i];
        rf_expr_free(l->expr);
        for (int j = 0; l->args && j < l->nargs; j++)
            rf_expr_free(l->args[j]);
        free(l->args);
    }
    free(u->body);
    for (int j = 0; j < head_arity; j++)
        rf_expr_free(u->head_args[j]);
    free(u->head_args);
    for (int j = 0; j < u->naggs; j++)
        rf_expr_free(u->agg_args[j]);
    free(u->agg_args);
    free(u);
}

/* ---- Scan filters implied by a disjunction (q19, q07) ----
 *
 * A filter `(a1 && b1 && ...) || (a2 && b2 && ...) || ...` over several
 * atoms stays where all its variables are bound (after the joins), so
 * every row of every atom reaches the joins. For each positive atom A,
 * the disjunction of, per disjunct, the conjuncts over A's variables
 * alone is implied by the filter: where every disjunct has one, it is
 * added as a filter of its own, which the planner moves into A's scan
 * (the original stays). Q19's lineitem is then scanned with `(shipmode =
 * "AIR" || ...) && shipinstruct = "DELIVER IN PERSON" && qty >= 1 && ...`
 * or-ed over its three disjuncts, and its part with the brands,
 * containers and sizes: 1 row in 28 of lineitem reaches the join instead
 * of all. Only conjuncts that cannot fail are taken (a scan filter runs on
 * rows the original would never have evaluated it on): comparisons, the
 * string tests, widening casts and constant subexpressions that evaluate. */

static void flatten_op(const rf_expr *e, rf_exop op, const rf_expr ***items, int *n, int *cap)
{
    if (e->op == op) {
        flatten_op(e->a, op, items, n, cap);
        flatten_op(e->b, op, items, n, cap);
        return;
    }
    if (*n == *cap) {
        *cap = *cap ? 2 * *cap : 8;
        *items = rf_realloc(*items, (size_t)*cap * sizeof **items);
    }
    (*items)[(*n)++] = e;
}

static bool has_var(const rf_expr *e)
{
    return e && (e->op == RF_EX_VAR || has_var(e->a) || has_var(e->b) || has_var(e->c));
}

/* e has a variable, and every one is in set. */
static bool vars_in(const rf_expr *e, const bool *set) { return has_var(e) && vars_bound(e, set); }

static bool never_fails(const rf_expr *e)
{
    if (!e)
        return true;
    if (!has_var(e)) {   /* a constant subexpression: it fails everywhere or nowhere */
        rf_word w;
        rf_status st;
        rf_status_init(&st);
        return rf_expr_eval(e, NULL, &w, &st);
    }
    return op_cannot_fail(e, false) && never_fails(e->a) && never_fails(e->b) && never_fails(e->c);
}

/* The filter implied for the atom whose variables are `mine` by the
 * disjunction (disjuncts d[0..nd)), or NULL. */
static rf_expr *implied_filter(const rf_expr *const *d, int nd, const bool *mine)
{
    rf_expr *any = NULL;
    const rf_expr **conj = NULL;
    int nc = 0, cap = 0;
    for (int i = 0; i < nd; i++) {
        nc = 0;
        flatten_op(d[i], RF_EX_AND, &conj, &nc, &cap);
        rf_expr *all = NULL;
        for (int k = 0; k < nc; k++)
            if (vars_in(conj[k], mine) && never_fails(conj[k]))
                all = and_expr(all, rf_expr_clone(conj[k]));
        if (!all) {   /* this disjunct says nothing of the atom */
            rf_expr_free(any);
            any = NULL;
            break;
        }
        any = any ? rf_expr_binary(RF_EX_OR, RF_TYPE_BOOL, any, all) : all;
    }
    free(conj);
    return any;
}

/* r with the implied scan filters appended as filter literals (body
 * literals keep their indices), or NULL when there are none. Free with
 * free_derived(copy, r->nbody). */
static rf_rule *derive_scan_filters(const rf_rule *r)
{
    size_t nv = (size_t)r->nvars + 1;
    rf_literal *extra = NULL;
    int nextra = 0, capextra = 0;
    bool *mine = rf_calloc(nv, sizeof *mine);
    for (int i = 0; i < r->nbody; i++) {
        const rf_literal *f = &r->body[i];
        if (f->kind != RF_LIT_FILTER || f->expr->op != RF_EX_OR)
            continue;
        const rf_expr **d = NULL;
        int nd = 0, cap = 0;
        flatten_op(f->expr, RF_EX_OR, &d, &nd, &cap);
        for (int a = 0; a < r->nbody; a++) {
            const rf_literal *at = &r->body[a];
            if (at->kind != RF_LIT_ATOM)
                continue;
            memset(mine, 0, nv * sizeof *mine);
            for (int j = 0; j < at->nargs; j++)
                mark_vars(at->args[j], mine);
            if (vars_bound(f->expr, mine))   /* the whole filter goes to this scan anyway */
                continue;
            rf_expr *implied = implied_filter(d, nd, mine);
            if (!implied)
                continue;
            if (nextra == capextra) {
                capextra = capextra ? 2 * capextra : 4;
                extra = rf_realloc(extra, (size_t)capextra * sizeof *extra);
            }
            extra[nextra++] = (rf_literal){.kind = RF_LIT_FILTER, .expr = implied, .loc = f->loc};
        }
        free(d);
    }
    free(mine);
    if (!nextra) {
        free(extra);
        return NULL;
    }
    rf_rule *u = rf_malloc(sizeof *u);
    *u = *r;
    u->nbody = r->nbody + nextra;
    u->body = rf_calloc((size_t)u->nbody + 1, sizeof *u->body);
    memcpy(u->body, r->body, (size_t)r->nbody * sizeof *u->body);
    memcpy(u->body + r->nbody, extra, (size_t)nextra * sizeof *extra);
    free(extra);
    return u;
}

static void free_derived(rf_rule *u, int first_extra)
{
    if (!u)
        return;
    for (int i = first_extra; i < u->nbody; i++)
        rf_expr_free(u->body[i].expr);
    free(u->body);
    free(u);
}

/* Compiles rule `ri` so that its result is written to dst (a relation of the
 * head's arity); lit delta_lit reads its predicate's delta. */
static void compile_rule(builder *b, int ri, int delta_lit, int dst)
{
    const rf_program *p = b->prog;
    const rf_rule *r = &p->rules[ri];
    const rf_pred *head = &p->preds[r->head];
    rule_ctx c;
    memset(&c, 0, sizeof c);
    c.b = b;
    c.r = r;
    c.delta_lit = delta_lit;
    c.comment = rule_text(p, r, delta_lit);
    char *text = rule_text(p, r, -1);
    set_origin(b, r->loc, rf_sprintf("rule %s", text));
    free(text);
    size_t nv = (size_t)r->nvars + 1;
    c.done = rf_calloc((size_t)r->nbody + 1, sizeof *c.done);
    /* The planner proper works on the rule with equated variables unified
     * (the comment above keeps the rule as written). */
    rf_rule *unified = b->optimize ? unify_rule(r, head->arity, c.done) : NULL;
    if (unified)
        r = c.r = unified;
    int written_nbody = r->nbody;
    rf_rule *derived = b->optimize ? derive_scan_filters(r) : NULL;
    if (derived) {
        c.done = rf_realloc(c.done, ((size_t)derived->nbody + 1) * sizeof *c.done);
        memset(c.done + written_nbody, 0, ((size_t)(derived->nbody - written_nbody) + 1) * sizeof *c.done);
        r = c.r = derived;
    }
    c.bound = rf_calloc(nv, sizeof *c.bound);
    c.assign = rf_calloc(nv, sizeof *c.assign);
    c.col = rf_malloc(nv * sizeof *c.col);
    for (int v = 0; v < r->nvars; v++)
        c.col[v] = -1;

    /* The body's output: the head, or for aggregation the group keys
     * followed by the variables the aggregates range over. */
    rf_type *final_types = NULL;
    int *aggvars = NULL, naggvars = 0;
    if (r->naggs == 0) {
        c.nfinal = head->arity;
        c.final = rf_malloc(((size_t)c.nfinal + 1) * sizeof *c.final);
        for (int i = 0; i < c.nfinal; i++)
            c.final[i] = rf_expr_clone(r->head_args[i]);
        c.final_types = head->types;
        c.final_dst = dst;
    } else {
        int nkeys = head->arity - r->naggs;
        bool *use = rf_calloc(nv, sizeof *use);
        bool bag = false;
        for (int j = 0; j < r->naggs; j++) {
            mark_vars(r->agg_args[j], use);
            bag |= r->aggs[j] == RF_AGG_COUNT || r->aggs[j] == RF_AGG_TOTAL || r->aggs[j] == RF_AGG_AVG;
        }
        /* count, total and avg range over distinct bindings of every
         * variable (one of them makes the rows those bindings: min, max and
         * count_distinct are the same over them as over their values).
         * Planned, the body carries row identities instead of every
         * variable (rule_ctx.bag); as written, every variable. */
        c.bag = bag && b->optimize;
        /* A keyless count() alone over a body a multiway join takes: every
         * variable, as written, so the join lists the bindings and the
         * count is their number (lower.c, count_multijoins, then counts
         * them without making them). */
        if (c.bag && nkeys == 0 && r->naggs == 1 && r->aggs[0] == RF_AGG_COUNT && counted_by_multijoin(&c))
            c.bag = false;
        for (int i = 0; bag && i < r->nbody; i++) {
            const rf_literal *l = &r->body[i];
            if (l->kind != RF_LIT_ATOM)
                continue;
            /* A row identity would tell apart rows that differ only under
             * a don't-care argument (no variable): one binding. Such an
             * atom keeps its variables instead. */
            bool dont_care = false;
            for (int j = 0; j < l->nargs; j++)
                dont_care |= l->args[j] == NULL;
            if (!c.bag || dont_care)
                for (int j = 0; j < l->nargs; j++)
                    mark_vars(l->args[j], use);
        }
        aggvars = rf_malloc(nv * sizeof *aggvars);
        for (int v = 0; v < r->nvars; v++)
            if (use[v])
                aggvars[naggvars++] = v;
        free(use);
        c.nfinal = nkeys + naggvars;
        c.final = rf_malloc(((size_t)c.nfinal + 1) * sizeof *c.final);
        final_types = rf_malloc(((size_t)c.nfinal + 1) * sizeof *final_types);
        for (int i = 0; i < nkeys; i++) {
            c.final[i] = rf_expr_clone(r->head_args[i]);
            final_types[i] = head->types[i];
        }
        for (int k = 0; k < naggvars; k++) {
            int v = aggvars[k];
            c.final[nkeys + k] = rf_expr_leaf(RF_EX_VAR, r->var_types[v], v);
            final_types[nkeys + k] = r->var_types[v];
        }
        c.final_types = final_types;
        c.final_dst = c.bag ? -1 : new_temp(b, c.nfinal, final_types);
    }

    if (!try_multijoin(&c)) {
        int lits[2];
        binary_joins(&c, NULL, lits);
    }

    if (r->naggs > 0) {
        int nkeys = head->arity - r->naggs;
        rf_plan_cmd *cmd = emit(b, RF_CMD_AGGREGATE, dst, c.final_dst, -1);
        cmd->naggs = r->naggs;
        cmd->aggfn = rf_malloc((size_t)r->naggs * sizeof *cmd->aggfn);
        cmd->agg_arg = rf_calloc((size_t)r->naggs, sizeof *cmd->agg_arg);
        cmd->nkeys = nkeys;
        cmd->lkeys = rf_malloc(((size_t)nkeys + 1) * sizeof *cmd->lkeys);
        for (int i = 0; i < nkeys; i++)
            cmd->lkeys[i] = i;
        int *colmap = rf_malloc(nv * sizeof *colmap);
        for (int v = 0; v < r->nvars; v++)
            colmap[v] = -1;
        for (int k = 0; k < naggvars; k++)
            colmap[aggvars[k]] = nkeys + k;
        for (int j = 0; j < r->naggs; j++) {
            cmd->aggfn[j] = r->aggs[j];
            cmd->agg_arg[j] = translate(&c, r->agg_args[j], colmap);
        }
        free(colmap);
        give_comment(&c, cmd);
    }

    for (int i = 0; i < c.nfinal; i++)
        rf_expr_free(c.final[i]);
    free(c.final);
    free(final_types);
    free(aggvars);
    free(c.comment);
    /* (the origin stays set for the caller's union of the rule's rows
     * into its head: end_rule releases it) */
    free_derived(derived, written_nbody);
    free_unified(unified, head->arity);
    free(c.done);
    free(c.bound);
    free(c.assign);
    free(c.col);
    free(c.curvar);
}

/* ---- Strata ---- */

static bool in_stratum(const rf_stratum *s, int pred)
{
    for (int i = 0; i < s->npreds; i++)
        if (s->preds[i] == pred)
            return true;
    return false;
}

static bool is_recursive_atom(const rf_stratum *s, const rf_literal *l)
{
    return l->kind == RF_LIT_ATOM && in_stratum(s, l->pred);
}

static void union_into(builder *b, int dst, int src, const char *why)
{
    rf_plan_cmd *cmd = emit(b, RF_CMD_UNION, dst, dst, src);
    if (why)
        cmd->comment = rf_strdup(why);
}

/* A functional predicate needs its key checked unless its only source is
 * one aggregation rule (unique per group by construction). */
static bool needs_key_check(const rf_program *p, int pr)
{
    const rf_pred *pd = &p->preds[pr];
    if (!pd->functional || pd->arity < 1)
        return false;
    if (pd->nfacts > 0 || pd->input_path || !pd->has_rules)
        return true;
    int nrules = 0;
    bool agg = false;
    for (int i = 0; i < p->nrules; i++)
        if (p->rules[i].head == pr) {
            nrules++;
            agg = p->rules[i].naggs > 0;
        }
    return !(nrules == 1 && agg);
}

/* "where f's tuples come from": what a violation's message points to. */
static char *key_check_sources(const rf_program *p, int pr)
{
    const rf_pred *pd = &p->preds[pr];
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        rf_out_of_memory(0);
    fprintf(f, "functional predicate %s declared here; its tuples come from", pd->name);
    const char *sep = " ";
    for (int i = 0; i < p->nrules; i++)
        if (p->rules[i].head == pr) {
            fprintf(f, "%sthe rule at line %d", sep, p->rules[i].loc.line);
            sep = ", ";
        }
    if (pd->nfacts > 0) {
        fprintf(f, "%sfacts", sep);
        sep = ", ";
    }
    if (pd->input_path)
        fprintf(f, "%sits input file", sep);
    fclose(f);
    return buf;
}

static void emit_key_check(builder *b, int pr)
{
    set_origin(b, b->prog->preds[pr].loc, key_check_sources(b->prog, pr));
    rf_plan_cmd *cmd = emit(b, RF_CMD_CHECK_KEYS, -1, b->full[pr], -1);
    rf_origin_release(&b->origin);
    cmd->nkeys = b->prog->preds[pr].arity - 1;
    cmd->comment = rf_sprintf("functional dependency of %s", b->prog->preds[pr].name);
}

/* Checks for the stratum's functional predicates, once it is complete. */
static void emit_stratum_checks(builder *b, const rf_stratum *s)
{
    for (int k = 0; k < s->npreds; k++)
        if (needs_key_check(b->prog, s->preds[k]))
            emit_key_check(b, s->preds[k]);
}

/* After a rule's commands and the union of its rows into the head: what
 * is emitted next comes from no rule. */
static void end_rule(builder *b) { rf_origin_release(&b->origin); }

static void build_plain_stratum(builder *b, int si)
{
    const rf_stratum *s = &b->prog->strata[si];
    start_block(b, rf_sprintf("stratum%d", si));
    for (int k = 0; k < s->nrules; k++) {
        int ri = s->rules[k];
        int head = b->prog->rules[ri].head;
        const rf_plan_rel *h = &b->rels.items[b->full[head]];
        int t = new_temp(b, h->arity, h->types);
        compile_rule(b, ri, -1, t);
        union_into(b, b->full[head], t, NULL);
        end_rule(b);
    }
    emit_stratum_checks(b, s);
}

static void build_recursive_stratum(builder *b, int si)
{
    const rf_program *p = b->prog;
    const rf_stratum *s = &p->strata[si];
    for (int k = 0; k < s->npreds; k++) {
        int pr = s->preds[k];
        const rf_plan_rel *full = &b->rels.items[b->full[pr]];
        int arity = full->arity;
        /* Copied: adding relations may move the array full points into. */
        const rf_type *ft = full->types;
        rf_type *copy = rf_malloc(((size_t)arity + 1) * sizeof *copy);
        if (arity > 0)
            memcpy(copy, ft, (size_t)arity * sizeof *copy);
        b->delta[pr] = add_rel(b, rf_sprintf("%s.delta", p->preds[pr].name), arity, copy, RF_REL_DELTA, pr);
        b->fresh[pr] = add_rel(b, rf_sprintf("%s.new", p->preds[pr].name), arity, copy, RF_REL_NEW, pr);
        free(copy);
    }

    /* Base rules once; the delta starts as everything known so far, so
     * loaded facts seed the iteration too. */
    start_block(b, rf_sprintf("stratum%d.init", si));
    for (int k = 0; k < s->nrules; k++) {
        int ri = s->rules[k];
        const rf_rule *r = &p->rules[ri];
        bool base = true;
        for (int i = 0; i < r->nbody; i++)
            base = base && !is_recursive_atom(s, &r->body[i]);
        if (!base)
            continue;
        const rf_plan_rel *h = &b->rels.items[b->full[r->head]];
        int t = new_temp(b, h->arity, h->types);
        compile_rule(b, ri, -1, t);
        union_into(b, b->full[r->head], t, NULL);
        end_rule(b);
    }
    for (int k = 0; k < s->npreds; k++) {
        int pr = s->preds[k];
        emit(b, RF_CMD_COPY, b->delta[pr], b->full[pr], -1)->comment =
            rf_strdup("semi-naive: the first delta is the whole relation");
    }

    /* One iteration: every rule once per recursive atom, that atom reading
     * the delta; the first candidate set of a predicate is written to its
     * new relation directly, later ones are unioned in. */
    int loop = (int)b->blocks.len;
    start_block(b, rf_sprintf("stratum%d.loop", si));
    bool *written = rf_calloc((size_t)p->npreds + 1, sizeof *written);
    for (int k = 0; k < s->nrules; k++) {
        int ri = s->rules[k];
        const rf_rule *r = &p->rules[ri];
        for (int i = 0; i < r->nbody; i++) {
            if (!is_recursive_atom(s, &r->body[i]))
                continue;
            int nrel = b->fresh[r->head];
            if (!written[r->head]) {
                compile_rule(b, ri, i, nrel);
                written[r->head] = true;
            } else {
                const rf_plan_rel *h = &b->rels.items[nrel];
                int t = new_temp(b, h->arity, h->types);
                compile_rule(b, ri, i, t);
                union_into(b, nrel, t, NULL);
            }
            end_rule(b);
        }
    }
    for (int k = 0; k < s->npreds; k++) {
        int pr = s->preds[k];
        if (!written[pr])
            emit(b, RF_CMD_CLEAR, b->fresh[pr], -1, -1)->comment =
                rf_sprintf("%s has no recursive rule", p->preds[pr].name);
    }
    for (int k = 0; k < s->npreds; k++) {
        int pr = s->preds[k];
        int full = b->full[pr], fresh = b->fresh[pr], delta = b->delta[pr];
        /* (their run-time errors, out of memory, point at the predicate) */
        set_origin(b, p->preds[pr].loc, rf_sprintf("the semi-naive step of recursive predicate %s", p->preds[pr].name));
        emit(b, RF_CMD_DIFFERENCE, fresh, fresh, full)->comment =
            rf_strdup("semi-naive: keep only tuples not known before");
        union_into(b, full, fresh, NULL);
        emit(b, RF_CMD_COPY, delta, fresh, -1);
        end_rule(b);
    }
    rf_plan_cmd *br = emit(b, RF_CMD_BRANCH_EMPTY, -1, -1, -1);
    br->nconds = s->npreds;
    br->conds = rf_malloc(((size_t)s->npreds + 1) * sizeof *br->conds);
    for (int k = 0; k < s->npreds; k++)
        br->conds[k] = b->delta[s->preds[k]];
    br->target = (int)b->blocks.len;   /* the block after the loop: next stratum or halt */
    br->target_else = loop;
    br->comment = rf_strdup("fixpoint when no delta has tuples");
    free(written);
    /* After the fixpoint (the branch's exit target is this block). */
    bool check = false;
    for (int k = 0; k < s->npreds; k++)
        check = check || needs_key_check(p, s->preds[k]);
    if (check) {
        start_block(b, rf_sprintf("stratum%d.check", si));
        emit_stratum_checks(b, s);
    }
}

/* Renames temporaries t0, t1, ... in the order the plan first writes them,
 * so that explain output reads top to bottom. Every temporary but the
 * loaded unit relation is written by some command, so all get new names
 * and old and new names never collide in the end. */
static void name_temps(rf_plan *plan, const rf_program *prog)
{
    int next = 0;
    bool *named = rf_calloc((size_t)plan->nrels + 1, sizeof *named);
    for (int b = 0; b < plan->nblocks; b++)
        for (int i = 0; i < plan->blocks[b].ncmds; i++) {
            const rf_plan_cmd *c = &plan->blocks[b].cmds[i];
            if (!rf_plan_cmd_has_dst(c->kind) || named[c->dst] ||
                plan->rels[c->dst].kind != RF_REL_TEMP || plan->rels[c->dst].nfacts > 0)
                continue;
            named[c->dst] = true;
            char *name;
            for (;;) {
                name = rf_sprintf("t%d", next++);
                bool clash = rf_program_find_pred(prog, name) >= 0;
                for (int r = 0; r < plan->nrels && !clash; r++)
                    clash = plan->rels[r].kind != RF_REL_TEMP && strcmp(plan->rels[r].name, name) == 0;
                if (!clash)
                    break;
                free(name);
            }
            free(plan->rels[c->dst].name);
            plan->rels[c->dst].name = name;
        }
    free(named);
}

rf_plan *rf_plan_build(const rf_program *prog, const rf_plan_options *opt)
{
    builder b;
    memset(&b, 0, sizeof b);
    b.prog = prog;
    b.optimize = opt ? opt->optimize : true;
    b.join = opt ? opt->join : RF_JOIN_AUTO;
    b.unit = -1;
    size_t np = (size_t)prog->npreds + 1;
    b.full = rf_malloc(np * sizeof *b.full);
    b.delta = rf_malloc(np * sizeof *b.delta);
    b.fresh = rf_malloc(np * sizeof *b.fresh);

    for (int i = 0; i < prog->npreds; i++) {
        const rf_pred *pr = &prog->preds[i];
        b.full[i] = add_rel(&b, rf_strdup(pr->name), pr->arity, pr->types,
                            pr->has_rules ? RF_REL_DERIVED : RF_REL_INPUT, i);
        b.delta[i] = b.fresh[i] = -1;
        rf_plan_rel *r = &b.rels.items[b.full[i]];
        r->nfacts = pr->nfacts;
        size_t words = rf_mul_size(pr->nfacts, (size_t)pr->arity);
        r->facts = rf_malloc(rf_mul_size(words ? words : 1, sizeof *r->facts));
        if (words)
            memcpy(r->facts, pr->facts, words * sizeof *r->facts);
        r->input_path = pr->input_path ? rf_strdup(pr->input_path) : NULL;
        r->input_format = pr->input_format;
        if (pr->input_path && pr->input_loc.src)
            r->input_where = rf_sprintf("%s:%d:%d", pr->input_loc.src->path, pr->input_loc.line,
                                        pr->input_loc.col);
        r->is_output = pr->is_output;
        r->norder = pr->norder;
        if (pr->norder > 0) {
            r->order_cols = rf_malloc((size_t)pr->norder * sizeof *r->order_cols);
            r->order_desc = rf_malloc((size_t)pr->norder * sizeof *r->order_desc);
            memcpy(r->order_cols, pr->order_cols, (size_t)pr->norder * sizeof *r->order_cols);
            memcpy(r->order_desc, pr->order_desc, (size_t)pr->norder * sizeof *r->order_desc);
        }
        r->limit = pr->limit;
    }

    /* Every relation starts empty; block 0 loads the initial tuples. An
     * input relation is always loaded: --input may supply its file. */
    start_block(&b, rf_strdup("load"));
    for (int i = 0; i < prog->npreds; i++) {
        const rf_pred *pr = &prog->preds[i];
        if (pr->has_rules && pr->nfacts == 0 && !pr->input_path)
            continue;
        rf_plan_cmd *cmd = emit(&b, RF_CMD_LOAD, b.full[i], -1, -1);
        if (pr->input_path)
            cmd->comment = rf_sprintf("inline facts: %zu, file: %s", pr->nfacts, pr->input_path);
        else
            cmd->comment = rf_sprintf("inline facts: %zu", pr->nfacts);
        if (!pr->has_rules && needs_key_check(prog, i))
            emit_key_check(&b, i);
    }

    for (int si = 0; si < prog->nstrata; si++) {
        const rf_stratum *s = &prog->strata[si];
        if (s->nrules == 0)
            continue;
        if (s->recursive)
            build_recursive_stratum(&b, si);
        else
            build_plain_stratum(&b, si);
    }
    start_block(&b, rf_strdup("halt"));
    emit(&b, RF_CMD_HALT, -1, -1, -1);

    rf_plan *plan = rf_calloc(1, sizeof *plan);
    plan->nrels = (int)b.rels.len;
    plan->rels = b.rels.items;
    plan->nblocks = (int)b.blocks.len;
    plan->blocks = rf_malloc(rf_mul_size(b.blocks.len, sizeof *plan->blocks));
    for (size_t i = 0; i < b.blocks.len; i++) {
        plan->blocks[i].label = b.blocks.items[i].label;
        plan->blocks[i].ncmds = (int)b.blocks.items[i].cmds.len;
        plan->blocks[i].cmds = b.blocks.items[i].cmds.items;
    }
    free(b.blocks.items);
    free(b.full);
    free(b.delta);
    free(b.fresh);

    if (b.optimize) {
        rf_plan_pass_pushdown(plan);
        rf_plan_pass_cse(plan);
        rf_plan_pass_union_into_empty(plan);
        rf_plan_pass_dead_rels(plan);
    }
    name_temps(plan, prog);
    return plan;
}
