#include "ast.h"

#include <stdlib.h>
#include <string.h>

ast_list *ast_list_new(void)
{
    return rf_calloc(1, sizeof(ast_list));
}

void ast_list_push(ast_list *l, void *item)
{
    if (l->len == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 4;
        l->items = rf_realloc(l->items, rf_mul_size((size_t)l->cap, sizeof *l->items));
    }
    l->items[l->len++] = item;
}

void **ast_list_take(ast_list *l, int *len)
{
    void **items = l->items;
    *len = l->len;
    free(l);
    return items;
}

void ast_list_free(ast_list *l, void (*free_item)(void *))
{
    if (!l)
        return;
    for (int i = 0; i < l->len; i++)
        free_item(l->items[i]);
    free(l->items);
    free(l);
}

rf_loc ast_loc_span(rf_loc a, rf_loc b)
{
    rf_loc r = a;
    if (b.line == a.line && b.col + b.len > a.col)
        r.len = b.col + b.len - a.col;
    else if (b.line > a.line)
        r.len = 1 << 20; /* runs to the end of a's line; rf_diag clips it */
    return r;
}

ast_expr *ast_expr_new(ast_expr_kind kind, rf_loc loc)
{
    ast_expr *e = rf_calloc(1, sizeof *e);
    e->kind = kind;
    e->depth = 1;
    e->loc = loc;
    return e;
}

ast_expr *ast_expr_binary(rf_exop op, ast_expr *a, ast_expr *b)
{
    ast_expr *e = ast_expr_new(AST_BINARY, ast_loc_span(a->loc, b->loc));
    e->op = op;
    e->a = a;
    e->b = b;
    e->depth = 1 + (a->depth > b->depth ? a->depth : b->depth);
    return e;
}

/* A minus in front of a number literal is part of the literal, so that
 * -2147483648 is a valid int32 and facts may be written with negative
 * numbers; elsewhere it is the NEG operator. */
ast_expr *ast_expr_negate(ast_expr *a, rf_loc minus)
{
    rf_loc loc = ast_loc_span(minus, a->loc);
    if (a->kind == AST_INT && !a->negative) {
        a->negative = true;
        a->loc = loc;
        return a;
    }
    if (a->kind == AST_FLOAT && a->fval >= 0) {
        a->fval = -a->fval;
        a->negative = !a->negative;
        a->loc = loc;
        return a;
    }
    ast_expr *e = ast_expr_new(AST_UNARY, loc);
    e->op = RF_EX_NEG;
    e->a = a;
    e->depth = 1 + a->depth;
    return e;
}

ast_expr *ast_expr_call(char *name, rf_loc name_loc, ast_list *params, ast_list *args, rf_loc end)
{
    ast_expr *e = ast_expr_new(AST_CALL, ast_loc_span(name_loc, end));
    e->text = name;
    e->textlen = strlen(name);
    e->name_loc = name_loc;
    if (params) {
        e->has_params = true;
        e->params = (ast_expr **)ast_list_take(params, &e->nparams);
    }
    e->args = (ast_expr **)ast_list_take(args, &e->nargs);
    for (int i = 0; i < e->nargs; i++)
        if (e->args[i]->depth + 1 > e->depth)
            e->depth = e->args[i]->depth + 1;
    return e;
}

int ast_expr_nkids(const ast_expr *e)
{
    switch (e->kind) {
    case AST_UNARY: return 1;
    case AST_BINARY: return 2;
    case AST_CALL: return e->nargs;
    default: return 0;
    }
}

ast_expr *ast_expr_kid(const ast_expr *e, int i)
{
    return e->kind == AST_CALL ? e->args[i] : i == 0 ? e->a : e->b;
}

ast_atom *ast_atom_from_call(ast_expr *call)
{
    ast_atom *a = rf_calloc(1, sizeof *a);
    a->name = call->text;
    a->name_loc = call->name_loc;
    a->loc = call->loc;
    a->nargs = call->nargs;
    a->args = call->args;
    call->text = NULL;
    call->args = NULL;
    call->nargs = 0;
    ast_expr_free(call);
    return a;
}

ast_atom *ast_atom_new(char *name, rf_loc name_loc, ast_list *args, bool functional)
{
    ast_atom *a = rf_calloc(1, sizeof *a);
    a->name = name;
    a->name_loc = name_loc;
    a->loc = name_loc;
    a->functional = functional;
    a->args = (ast_expr **)ast_list_take(args, &a->nargs);
    return a;
}

ast_literal *ast_literal_new(ast_lit_kind kind, ast_atom *atom, ast_expr *cond)
{
    ast_literal *l = rf_calloc(1, sizeof *l);
    l->kind = kind;
    l->atom = atom;
    l->cond = cond;
    l->loc = atom ? atom->loc : cond->loc;
    return l;
}

ast_clause *ast_clause_new(ast_clause_kind kind, rf_loc loc)
{
    ast_clause *c = rf_calloc(1, sizeof *c);
    c->kind = kind;
    c->loc = loc;
    return c;
}

void ast_program_add(ast_program *p, ast_clause *c)
{
    if (p->nclauses == p->cap) {
        p->cap = p->cap ? 2 * p->cap : 16;
        p->clauses = rf_realloc(p->clauses, rf_mul_size((size_t)p->cap, sizeof *p->clauses));
    }
    p->clauses[p->nclauses++] = c;
}

void ast_expr_free(ast_expr *e)
{
    if (!e)
        return;
    ast_expr_free(e->a);
    ast_expr_free(e->b);
    for (int i = 0; i < e->nargs; i++)
        ast_expr_free(e->args[i]);
    for (int i = 0; i < e->nparams; i++)
        ast_expr_free(e->params[i]);
    free(e->args);
    free(e->params);
    free(e->text);
    free(e);
}

void ast_atom_free(ast_atom *a)
{
    if (!a)
        return;
    for (int i = 0; i < a->nargs; i++)
        ast_expr_free(a->args[i]);
    for (int i = 0; i < a->nparams; i++)
        ast_expr_free(a->params[i]);
    free(a->args);
    free(a->params);
    free(a->name);
    free(a);
}

void ast_literal_free(ast_literal *l)
{
    if (!l)
        return;
    ast_atom_free(l->atom);
    ast_expr_free(l->cond);
    free(l);
}

void ast_expr_free_any(void *e) { ast_expr_free(e); }
void ast_atom_free_any(void *a) { ast_atom_free(a); }
void ast_literal_free_any(void *l) { ast_literal_free(l); }

void ast_darg_free_any(void *p)
{
    ast_darg *d = p;
    if (d) {
        free(d->text);
        free(d->wrapper);
        free(d);
    }
}

void ast_agg_free_any(void *p)
{
    ast_agg *a = p;
    if (!a)
        return;
    free(a->var);
    free(a->fn);
    for (int i = 0; i < a->nargs; i++)
        ast_expr_free(a->args[i]);
    free(a->args);
    free(a);
}

void ast_clause_free(ast_clause *c)
{
    if (!c)
        return;
    ast_atom_free(c->head);
    if (c->types)
        for (int i = 0; i < c->nbody; i++)
            ast_atom_free(c->types[i]);
    if (c->body)
        for (int i = 0; i < c->nbody; i++)
            ast_literal_free(c->body[i]);
    free(c->types);
    free(c->body);
    for (int i = 0; i < c->naggs; i++)
        ast_agg_free_any(c->aggs[i]);
    free(c->aggs);
    free(c->dir_name);
    for (int i = 0; i < c->nargs; i++)
        ast_darg_free_any(c->dargs[i]);
    free(c->dargs);
    free(c);
}

void ast_program_free(ast_program *p)
{
    for (int i = 0; i < p->nclauses; i++)
        ast_clause_free(p->clauses[i]);
    free(p->clauses);
    p->clauses = NULL;
    p->nclauses = p->cap = 0;
}
