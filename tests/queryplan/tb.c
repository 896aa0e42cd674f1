#include "tb.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct tb {
    RF_VEC(rf_pred) preds;
    RF_VEC(rf_rule) rules;
    RF_VEC(rf_stratum) strata;
};

static RF_NORETURN void die(const char *what, const char *text)
{
    fprintf(stderr, "tb: %s in \"%s\"\n", what, text);
    abort();
}

tb *tb_new(void) { return rf_calloc(1, sizeof(tb)); }

static int find(tb *b, const char *name, size_t len)
{
    for (size_t i = 0; i < b->preds.len; i++)
        if (strlen(b->preds.items[i].name) == len && strncmp(b->preds.items[i].name, name, len) == 0)
            return (int)i;
    return -1;
}

static rf_pred *pred(tb *b, const char *name)
{
    int i = find(b, name, strlen(name));
    if (i < 0)
        die("unknown predicate", name);
    return &b->preds.items[i];
}

int tb_pred(tb *b, const char *name, const char *types)
{
    rf_pred p;
    memset(&p, 0, sizeof p);
    p.name = rf_strdup(name);
    p.arity = (int)strlen(types);
    p.types = rf_malloc(((size_t)p.arity + 1) * sizeof *p.types);
    p.limit = -1;
    for (int i = 0; i < p.arity; i++) {
        switch (types[i]) {
        case 'i': p.types[i] = RF_TYPE_INT64; break;
        case 'n': p.types[i] = RF_TYPE_INT32; break;
        case 's': p.types[i] = RF_TYPE_STRING; break;
        case 'f': p.types[i] = RF_TYPE_FLOAT64; break;
        case 'b': p.types[i] = RF_TYPE_BOOL; break;
        default: die("bad type letter", types);
        }
    }
    RF_PUSH(b->preds, p);
    return (int)b->preds.len - 1;
}

void tb_output(tb *b, const char *name) { pred(b, name)->is_output = true; }

void tb_order(tb *b, const char *name, int n, const int *cols, const bool *desc)
{
    rf_pred *p = pred(b, name);
    free(p->order_cols);
    free(p->order_desc);
    p->norder = n;
    p->order_cols = rf_malloc(((size_t)n + 1) * sizeof *p->order_cols);
    p->order_desc = rf_malloc(((size_t)n + 1) * sizeof *p->order_desc);
    for (int i = 0; i < n; i++) {
        p->order_cols[i] = cols[i];
        p->order_desc[i] = desc ? desc[i] : false;
    }
}

void tb_limit(tb *b, const char *name, int64_t limit) { pred(b, name)->limit = limit; }

void tb_facts(tb *b, const char *name, int nrows, const int64_t *rows)
{
    rf_pred *p = pred(b, name);
    size_t old = p->nfacts * (size_t)p->arity, add = (size_t)nrows * (size_t)p->arity;
    p->facts = rf_realloc(p->facts, (old + add + 1) * sizeof *p->facts);
    for (size_t i = 0; i < add; i++)
        p->facts[old + i] = (rf_word)rows[i];
    p->nfacts += (size_t)nrows;
}

void tb_input_file(tb *b, const char *name, const char *path)
{
    rf_pred *p = pred(b, name);
    free(p->input_path);
    p->input_path = rf_strdup(path);
}

/* ---- The rule parser ---- */

typedef struct parser {
    tb *b;
    const char *text, *s;
    rf_rule *r;
    bool *bound;      /* [64] variables bound by earlier literals */
} parser;

static void skip(parser *p)
{
    while (isspace((unsigned char)*p->s))
        p->s++;
}

static bool accept(parser *p, const char *tok)
{
    skip(p);
    size_t n = strlen(tok);
    if (strncmp(p->s, tok, n) != 0)
        return false;
    p->s += n;
    return true;
}

static void expect(parser *p, const char *tok)
{
    if (!accept(p, tok))
        die("syntax error", p->text);
}

static size_t ident_len(const char *s)
{
    size_t n = 0;
    if (isalpha((unsigned char)*s))
        while (isalnum((unsigned char)s[n]) || s[n] == '_')
            n++;
    return n;
}

static int var_index(parser *p, const char *name, size_t len)
{
    rf_rule *r = p->r;
    for (int i = 0; i < r->nvars; i++)
        if (strlen(r->var_names[i]) == len && strncmp(r->var_names[i], name, len) == 0)
            return i;
    if (r->nvars == 64)
        die("too many variables", p->text);
    r->var_names = rf_realloc(r->var_names, ((size_t)r->nvars + 1) * sizeof *r->var_names);
    r->var_types = rf_realloc(r->var_types, ((size_t)r->nvars + 1) * sizeof *r->var_types);
    r->var_names[r->nvars] = rf_strndup(name, len);
    r->var_types[r->nvars] = RF_TYPE_INVALID;
    return r->nvars++;
}

static rf_expr *parse_expr(parser *p);

static rf_expr *parse_primary(parser *p)
{
    skip(p);
    if (accept(p, "(")) {
        rf_expr *e = parse_expr(p);
        expect(p, ")");
        return e;
    }
    if (accept(p, "-"))
        return rf_expr_unary(RF_EX_NEG, RF_TYPE_INVALID, parse_primary(p));
    if (accept(p, "!"))
        return rf_expr_unary(RF_EX_NOT, RF_TYPE_BOOL, parse_primary(p));
    if (isdigit((unsigned char)*p->s)) {
        char *end;
        long long v = strtoll(p->s, &end, 10);
        p->s = end;
        return rf_expr_const(RF_TYPE_INT64, rf_word_from_int(v));
    }
    if (*p->s == '"') {
        const char *start = ++p->s;
        while (*p->s && *p->s != '"')
            p->s++;
        rf_expr *e = rf_expr_const(RF_TYPE_STRING, rf_str_intern(start, (size_t)(p->s - start)));
        expect(p, "\"");
        return e;
    }
    size_t n = ident_len(p->s);
    if (n == 0)
        die("expected an expression", p->text);
    int v = var_index(p, p->s, n);
    p->s += n;
    return rf_expr_leaf(RF_EX_VAR, RF_TYPE_INVALID, v);
}

static const struct { const char *tok; rf_exop op; int prec; } binops[] = {
    { "||", RF_EX_OR, 1 }, { "&&", RF_EX_AND, 2 },
    { "!=", RF_EX_NE, 3 }, { "<=", RF_EX_LE, 3 }, { ">=", RF_EX_GE, 3 },
    { "=", RF_EX_EQ, 3 }, { "<", RF_EX_LT, 3 }, { ">", RF_EX_GT, 3 },
    { "+", RF_EX_ADD, 4 }, { "-", RF_EX_SUB, 4 },
    { "*", RF_EX_MUL, 5 }, { "/", RF_EX_DIV, 5 }, { "%", RF_EX_MOD, 5 },
};

static rf_expr *parse_binary(parser *p, int min_prec)
{
    rf_expr *left = parse_primary(p);
    for (;;) {
        skip(p);
        int k = -1;
        for (size_t i = 0; i < sizeof binops / sizeof binops[0]; i++)
            if (strncmp(p->s, binops[i].tok, strlen(binops[i].tok)) == 0) {
                k = (int)i;
                break;
            }
        if (k < 0 || binops[k].prec < min_prec)
            return left;
        p->s += strlen(binops[k].tok);
        rf_expr *right = parse_binary(p, binops[k].prec + 1);
        left = rf_expr_binary(binops[k].op, RF_TYPE_INVALID, left, right);
    }
}

static rf_expr *parse_expr(parser *p) { return parse_binary(p, 1); }

/* Fills in result types bottom-up once variable types are known. */
static void type_expr(rf_rule *r, rf_expr *e)
{
    if (!e)
        return;
    type_expr(r, e->a);
    type_expr(r, e->b);
    if (e->op == RF_EX_VAR)
        e->type = r->var_types[e->index];
    else if (rf_exop_is_comparison(e->op) || e->op == RF_EX_AND || e->op == RF_EX_OR || e->op == RF_EX_NOT)
        e->type = RF_TYPE_BOOL;
    else if (e->op != RF_EX_CONST)
        e->type = e->a->type;
}

/* Integer constants take the type of the column or variable they meet. */
static void retype_consts(rf_expr *e, rf_type t)
{
    if (!e)
        return;
    if (e->op == RF_EX_CONST && e->type == RF_TYPE_INT64 && (t == RF_TYPE_INT32 || t == RF_TYPE_INT64))
        e->type = t;
}

static void parse_atom_args(parser *p, rf_literal *l)
{
    const rf_pred *pr = &p->b->preds.items[l->pred];
    l->nargs = pr->arity;
    l->args = rf_calloc((size_t)pr->arity + 1, sizeof *l->args);
    expect(p, "(");
    for (int j = 0; j < pr->arity; j++) {
        if (j)
            expect(p, ",");
        skip(p);
        if (*p->s == '_' && !isalnum((unsigned char)p->s[1])) {
            p->s++;
            continue;
        }
        rf_expr *a = parse_primary(p);
        if (a->op == RF_EX_NEG && a->a->op == RF_EX_CONST) {  /* -3 */
            rf_expr *c = rf_expr_const(RF_TYPE_INT64, (rf_word)-(int64_t)a->a->value);
            rf_expr_free(a);
            a = c;
        }
        if (a->op == RF_EX_VAR && p->r->var_types[a->index] == RF_TYPE_INVALID)
            p->r->var_types[a->index] = pr->types[j];
        retype_consts(a, pr->types[j]);
        a->type = a->op == RF_EX_VAR ? p->r->var_types[a->index] : a->type;
        l->args[j] = a;
    }
    expect(p, ")");
}

static int atom_pred(parser *p)
{
    skip(p);
    size_t n = ident_len(p->s);
    const char *after = p->s + n;
    while (isspace((unsigned char)*after))
        after++;
    if (n == 0 || *after != '(')
        return -1;
    int i = find(p->b, p->s, n);
    if (i >= 0)
        p->s += n;
    return i;
}

static void mark_bound(bool *bound, const rf_expr *e)
{
    if (!e)
        return;
    if (e->op == RF_EX_VAR)
        bound[e->index] = true;
    mark_bound(bound, e->a);
    mark_bound(bound, e->b);
}

static void parse_rule(tb *b, const char *text, rf_rule *r)
{
    bool bound[64] = { false };
    parser p = { b, text, text, r, bound };
    memset(r, 0, sizeof *r);
    int head = atom_pred(&p);
    if (head < 0)
        die("bad head", text);
    r->head = head;
    const rf_pred *hp = &b->preds.items[head];
    /* Head arguments are parsed as expressions, typed after the body. */
    r->head_args = rf_calloc((size_t)hp->arity + 1, sizeof *r->head_args);
    expect(&p, "(");
    for (int j = 0; j < hp->arity; j++) {
        if (j)
            expect(&p, ",");
        r->head_args[j] = parse_expr(&p);
    }
    expect(&p, ")");
    RF_VEC(rf_literal) body = { 0 };
    if (accept(&p, ":-")) {
        do {
            rf_literal l;
            memset(&l, 0, sizeof l);
            l.var = -1;
            l.pred = -1;
            bool neg = accept(&p, "!");
            int pi = atom_pred(&p);
            if (neg && pi < 0)
                die("negation of a non-atom", text);
            if (pi >= 0) {
                l.kind = neg ? RF_LIT_NEGATED : RF_LIT_ATOM;
                l.pred = pi;
                parse_atom_args(&p, &l);
                if (!neg)
                    for (int j = 0; j < l.nargs; j++)
                        mark_bound(bound, l.args[j]);
            } else {
                rf_expr *e = parse_expr(&p);
                if (e->op == RF_EX_EQ && e->a->op == RF_EX_VAR && !bound[e->a->index]) {
                    l.kind = RF_LIT_ASSIGN;
                    l.var = e->a->index;
                    l.expr = e->b;
                    e->b = NULL;
                    rf_expr_free(e);
                    type_expr(r, l.expr);
                    r->var_types[l.var] = l.expr->type;
                    bound[l.var] = true;
                } else {
                    l.kind = RF_LIT_FILTER;
                    l.expr = e;
                }
            }
            RF_PUSH(body, l);
        } while (accept(&p, ","));
    }
    skip(&p);
    if (*p.s)
        die("trailing text", text);
    r->nbody = (int)body.len;
    r->body = body.items;
    for (int j = 0; j < hp->arity; j++)
        if (r->head_args[j]->op == RF_EX_VAR && r->var_types[r->head_args[j]->index] == RF_TYPE_INVALID)
            r->var_types[r->head_args[j]->index] = hp->types[j];
    for (int j = 0; j < hp->arity; j++) {
        type_expr(r, r->head_args[j]);
        retype_consts(r->head_args[j], hp->types[j]);
    }
    for (int i = 0; i < r->nbody; i++)
        if (r->body[i].kind == RF_LIT_FILTER)
            type_expr(r, r->body[i].expr);
}

void tb_rule(tb *b, const char *text)
{
    rf_rule r;
    parse_rule(b, text, &r);
    RF_PUSH(b->rules, r);
}

void tb_aggs_rule(tb *b, const char *text, int naggs, const rf_aggfn *fns, const char *const *args)
{
    rf_rule r;
    parse_rule(b, text, &r);
    r.naggs = naggs;
    r.aggs = rf_malloc(((size_t)naggs + 1) * sizeof *r.aggs);
    r.agg_args = rf_calloc((size_t)naggs + 1, sizeof *r.agg_args);
    for (int j = 0; j < naggs; j++) {
        r.aggs[j] = fns[j];
        if (args && args[j]) {
            bool bound[64] = { false };
            parser p = { b, args[j], args[j], &r, bound };
            r.agg_args[j] = parse_expr(&p);
            type_expr(&r, r.agg_args[j]);
        }
    }
    RF_PUSH(b->rules, r);
}

void tb_agg_rule(tb *b, const char *text, rf_aggfn fn, const char *arg)
{
    tb_aggs_rule(b, text, 1, &fn, &arg);
}

static void add_stratum(tb *b, int *preds, int n)
{
    rf_stratum s;
    memset(&s, 0, sizeof s);
    s.npreds = n;
    s.preds = preds;
    RF_PUSH(b->strata, s);
}

void tb_stratum(tb *b, const char *names)
{
    int *preds = rf_malloc(16 * sizeof *preds);
    int n = 0;
    for (const char *s = names; *s;) {
        while (*s == ' ')
            s++;
        size_t len = strcspn(s, " ");
        if (len == 0)
            break;
        int i = find(b, s, len);
        if (i < 0 || n == 16)
            die("bad stratum", names);
        preds[n++] = i;
        s += len;
    }
    add_stratum(b, preds, n);
}

rf_program *tb_finish(tb *b)
{
    rf_program *prog = rf_calloc(1, sizeof *prog);
    for (size_t i = 0; i < b->rules.len; i++)
        b->preds.items[b->rules.items[i].head].has_rules = true;
    /* Facts-only predicates first, as the front end does. */
    int *base = rf_malloc((b->preds.len + 1) * sizeof *base);
    int nbase = 0;
    for (size_t i = 0; i < b->preds.len; i++)
        if (!b->preds.items[i].has_rules)
            base[nbase++] = (int)i;
    rf_stratum s0 = { nbase, base, 0, NULL, false };
    RF_PUSH(b->strata, s0);
    memmove(b->strata.items + 1, b->strata.items, (b->strata.len - 1) * sizeof s0);
    b->strata.items[0] = s0;
    for (size_t k = 0; k < b->strata.len; k++) {
        rf_stratum *s = &b->strata.items[k];
        s->rules = rf_malloc((b->rules.len + 1) * sizeof *s->rules);
        for (size_t ri = 0; ri < b->rules.len; ri++) {
            const rf_rule *r = &b->rules.items[ri];
            bool mine = false;
            for (int i = 0; i < s->npreds; i++)
                mine = mine || s->preds[i] == r->head;
            if (!mine)
                continue;
            s->rules[s->nrules++] = (int)ri;
            for (int j = 0; j < r->nbody; j++)
                for (int i = 0; i < s->npreds; i++)
                    if (r->body[j].kind == RF_LIT_ATOM && r->body[j].pred == s->preds[i])
                        s->recursive = true;
        }
    }
    prog->npreds = (int)b->preds.len;
    prog->preds = b->preds.items;
    prog->nrules = (int)b->rules.len;
    prog->rules = b->rules.items;
    prog->nstrata = (int)b->strata.len;
    prog->strata = b->strata.items;
    free(b);
    return prog;
}
