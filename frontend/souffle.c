/* The Soufflé dialect: the parse driver (tokens -> Lemon, error recovery,
 * unsupported constructs) and the translation of the Soufflé-shaped tree
 * (souffle.h) into the LogiQL syntax tree, which the LogiQL checker then
 * checks and lowers like any other program. docs/souffle.md describes the
 * mapping; the comments here say how each piece is built. */
#include "souffle.h"
#include "check.h"
#include "frontend.h"
#include "parse.h"
#include "souffle_parser.h"

#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Lemon's entry points (souffle_parser.c, generated). */
void *rf_SouffleParseAlloc(void *(*alloc)(size_t));
void rf_SouffleParse(void *parser, int major, rf_token minor, sf_parse_state *ps);
void rf_SouffleParseFree(void *parser, void (*dealloc)(void *));

static void *parser_alloc(size_t n) { return rf_malloc(n); }

/* ------------------------------------------------------------ cloning */

static ast_expr *expr_clone(const ast_expr *e)
{
    if (!e)
        return NULL;
    ast_expr *c = rf_malloc(sizeof *c);
    *c = *e;
    if (e->text) {
        c->text = rf_malloc(e->textlen + 1);
        memcpy(c->text, e->text, e->textlen + 1);
    }
    c->a = expr_clone(e->a);
    c->b = expr_clone(e->b);
    if (e->nargs) {
        c->args = rf_malloc((size_t)e->nargs * sizeof *c->args);
        for (int i = 0; i < e->nargs; i++)
            c->args[i] = expr_clone(e->args[i]);
    } else {
        c->args = NULL;
    }
    if (e->nparams) {
        c->params = rf_malloc((size_t)e->nparams * sizeof *c->params);
        for (int i = 0; i < e->nparams; i++)
            c->params[i] = expr_clone(e->params[i]);
    } else {
        c->params = NULL;
    }
    return c;
}

static ast_atom *atom_clone(const ast_atom *a)
{
    ast_atom *c = rf_malloc(sizeof *c);
    *c = *a;
    c->name = rf_strdup(a->name);
    c->args = a->nargs ? rf_malloc((size_t)a->nargs * sizeof *c->args) : NULL;
    for (int i = 0; i < a->nargs; i++)
        c->args[i] = expr_clone(a->args[i]);
    c->params = NULL;
    c->nparams = 0;
    return c;
}

static ast_literal *literal_clone(const ast_literal *l)
{
    ast_literal *c = rf_malloc(sizeof *c);
    *c = *l;
    c->atom = l->atom ? atom_clone(l->atom) : NULL;
    c->cond = expr_clone(l->cond);
    return c;
}

static ast_list *literals_clone(const ast_list *l)
{
    ast_list *c = ast_list_new();
    for (int i = 0; i < l->len; i++)
        ast_list_push(c, literal_clone(l->items[i]));
    return c;
}

/* ------------------------------------------------ bodies (the grammar's) */

static void conj_free_any(void *c) { ast_list_free(c, ast_literal_free_any); }

sf_body *sf_body_single(ast_literal *lit)
{
    sf_body *b = rf_calloc(1, sizeof *b);
    b->disjuncts = ast_list_new();
    ast_list *conj = ast_list_new();
    ast_list_push(conj, lit);
    ast_list_push(b->disjuncts, conj);
    return b;
}

/* (a1; a2), (b1; b2) = a1 b1; a1 b2; a2 b1; a2 b2 (each conjunction copied). */
sf_body *sf_body_and(sf_parse_state *ps, sf_body *a, sf_body *b)
{
    int na = a->disjuncts->len, nb = b->disjuncts->len;
    if ((long)na * nb > SF_MAX_DISJUNCTS) {
        if (!ps->failed) {
            ast_list *first = b->disjuncts->items[0];
            ast_literal *l = first->len ? first->items[0] : NULL;
            sf_unsupported(ps, l ? l->loc : ps->cur_loc,
                           "this body expands into more than %d disjuncts (each ';' multiplies them)",
                           SF_MAX_DISJUNCTS);
        }
        sf_body_free(b);
        return a;
    }
    sf_body *r = rf_calloc(1, sizeof *r);
    r->disjuncts = ast_list_new();
    for (int i = 0; i < na; i++)
        for (int j = 0; j < nb; j++) {
            ast_list *conj = literals_clone(a->disjuncts->items[i]);
            ast_list *tail = b->disjuncts->items[j];
            for (int k = 0; k < tail->len; k++)
                ast_list_push(conj, literal_clone(tail->items[k]));
            ast_list_push(r->disjuncts, conj);
        }
    sf_body_free(a);
    sf_body_free(b);
    return r;
}

sf_body *sf_body_or(sf_body *a, sf_body *b)
{
    for (int i = 0; i < b->disjuncts->len; i++)
        ast_list_push(a->disjuncts, b->disjuncts->items[i]);
    b->disjuncts->len = 0;
    sf_body_free(b);
    return a;
}

void sf_body_free(sf_body *b)
{
    if (!b)
        return;
    ast_list_free(b->disjuncts, conj_free_any);
    free(b);
}

static void free_plain(void *p) { free(p); }

static void attr_free_any(void *p)
{
    sf_attr *a = p;
    free(a->name);
    free(a->type);
    free(a);
}

static void kvp_free_any(void *p)
{
    sf_kvp *k = p;
    free(k->key);
    free(k->value);
    free(k);
}

void sf_clause_free(sf_clause *c)
{
    if (!c)
        return;
    free(c->name);
    ast_list_free(c->attrs, attr_free_any);
    ast_list_free(c->quals, free_plain);
    ast_list_free(c->members, free_plain);
    ast_list_free(c->rels, free_plain);
    ast_list_free(c->kvps, kvp_free_any);
    ast_list_free(c->heads, ast_atom_free_any);
    sf_body_free(c->body);
    free(c);
}

static void clause_free_any(void *c) { sf_clause_free(c); }

void sf_agg_free(sf_agg *a)
{
    if (!a)
        return;
    ast_expr_free(a->target);
    sf_body_free(a->body);
    free(a);
}

static void agg_free_any(void *a) { sf_agg_free(a); }

void sf_unsupported(sf_parse_state *ps, rf_loc loc, const char *fmt, ...)
{
    if (ps->failed)
        return;
    ps->failed = true;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    rf_diag_error(ps->diag, loc, "%s", msg);
}

/* --------------------------------------------------------- the driver */

/* What an SF_UNSUPPORTED token stands for (docs/souffle.md lists them). */
static const char *unsupported_what(const rf_token *t)
{
    static const struct {
        const char *text, *what;
    } table[] = {
        { ".comp", "components (.comp) are not supported" },
        { ".init", "component instances (.init) are not supported" },
        { ".functor", "user-defined functors (.functor) are not supported" },
        { ".pragma", ".pragma is not supported (give options on the command line)" },
        { ".plan", "query plans (.plan) are not supported: Red Fox plans every rule itself" },
        { ".limitsize", ".limitsize is not supported" },
        { ".override", ".override (components) is not supported" },
        { ".lattice", "lattices (.lattice) are not supported" },
        { "choice-domain", "choice-domain is not supported" },
        { "[", "records ([...]) are not supported" },
        { "]", "records ([...]) are not supported" },
        { "nil", "records (nil) are not supported" },
        { "$", "'$' (autoincrement, or an algebraic data type's branch $Name(...)) is not supported" },
        { "@", "user-defined functors (@name(...)) are not supported" },
        { "as", "type casts as(x, T) are not supported" },
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if ((size_t)t->len == strlen(table[i].text) && memcmp(t->start, table[i].text, (size_t)t->len) == 0)
            return table[i].what;
    return "bitwise and logical operators (band, bor, bxor, bshl, bshr, bnot, land, lor, lxor, lnot) "
           "are not supported";
}

static bool is_directive_token(const rf_token *t)
{
    return t->type == SF_DECL || t->type == SF_TYPE || t->type == SF_IODIR ||
           (t->type == SF_UNSUPPORTED && t->len > 1 && t->start[0] == '.');
}

static int bracket_step(int depth, const rf_token *t)
{
    switch (t->type) {
    case SF_LPAREN: case SF_LBRACE:
        return depth + 1;
    case SF_RPAREN: case SF_RBRACE:
        return depth > 0 ? depth - 1 : 0;
    case SF_UNSUPPORTED:
        if (t->len == 1 && t->start[0] == '[')
            return depth + 1;
        if (t->len == 1 && t->start[0] == ']')
            return depth > 0 ? depth - 1 : 0;
        return depth;
    default:
        return depth;
    }
}

typedef struct sf_driver {
    rf_lexer lx;
    rf_token prev;           /* the last token read (type 0 before the first) */
    rf_token pending;        /* read ahead while skipping */
    bool have_pending;
} sf_driver;

static void next_token(sf_driver *d, rf_token *tok)
{
    if (d->have_pending) {
        *tok = d->pending;
        d->have_pending = false;
    } else {
        rf_souffle_lexer_next(&d->lx, tok);
    }
}

/* After an error in a clause, skips the rest of it: a rule or fact ends at
 * its '.' (outside brackets, followed by a later line, a name or a
 * directive), a directive (which has no terminator) at the next line that
 * starts with a name at bracket depth 0; a directive keyword at the start
 * of a line always begins a new clause, and a component (.comp) ends at its
 * closing brace. The token that resumes parsing is left pending. */
static void skip_clause(sf_driver *d, rf_token tok, bool in_directive)
{
    bool component = tok.type == SF_UNSUPPORTED && tok.len == 5 && memcmp(tok.start, ".comp", 5) == 0;
    int depth = bracket_step(0, &tok);
    bool opened = false;
    rf_token cur = tok;
    d->have_pending = true;
    for (;;) {
        if (cur.type == 0) {
            d->pending = cur;
            return;
        }
        rf_token next;
        rf_souffle_lexer_next(&d->lx, &next);
        d->pending = next;
        if (next.type == 0)
            return;
        bool line_start = next.loc.line > cur.loc.line;
        if (component) {
            if (!opened && line_start && is_directive_token(&next))
                return; /* a .comp without its braces */
            depth = bracket_step(depth, &next);
            opened |= next.type == SF_LBRACE;
            if (opened && depth == 0) {
                rf_souffle_lexer_next(&d->lx, &d->pending);
                return;
            }
            cur = next;
            continue;
        }
        if (depth == 0 && cur.type == SF_DOT && (line_start || next.type == SF_IDENT || is_directive_token(&next)))
            return;
        if (line_start && is_directive_token(&next))
            return;
        if (in_directive && line_start && depth == 0 && next.type == SF_IDENT)
            return;
        depth = bracket_step(depth, &next);
        cur = next;
    }
}

bool rf_souffle_parse(const rf_source *src, rf_diag *diag, sf_parse_state *ps)
{
    if (!rf_parse_is_text(src, diag))
        return false;
    int errors_before = diag->errors;
    sf_driver d = { 0 };
    rf_lexer_init(&d.lx, src, diag);
    void *parser = rf_SouffleParseAlloc(parser_alloc);
    bool clause_start = true, in_directive = false, seen_if = false;
    int depth = 0, fed = 0; /* tokens the current parser was given */
    rf_token tok;
    for (;;) {
        next_token(&d, &tok);
        bool line_start = d.prev.type == 0 || tok.loc.line > d.prev.loc.line;
        if (is_directive_token(&tok) || (clause_start && tok.type != 0)) {
            in_directive = is_directive_token(&tok);
            seen_if = false;
            clause_start = false;
            depth = 0;
        } else if (in_directive && line_start && depth == 0 && tok.type == SF_IDENT) {
            in_directive = false; /* a fact or rule after a directive */
            seen_if = false;
        }
        ps->cur_loc = tok.loc;
        if (tok.type == SF_UNSUPPORTED) {
            sf_unsupported(ps, tok.loc, "'%.*s': %s", tok.len, tok.start, unsupported_what(&tok));
        } else if (tok.type == SF_LBRACE && d.prev.type != SF_COLON) {
            sf_unsupported(ps, tok.loc, "'{': algebraic data types (.type T = Branch {...}) are not supported");
        } else if (tok.type == SF_LE && !seen_if && !in_directive && depth == 0) {
            sf_unsupported(ps, tok.loc, "'<=': subsumptive rules (a <= b :- ...) are not supported");
        } else {
            seen_if |= tok.type == SF_IF;
            depth = bracket_step(depth, &tok);
            rf_SouffleParse(parser, tok.type, tok, ps);
            fed++;
        }
        d.prev = tok;
        if (ps->failed) {
            /* One error per clause: drop the rest of it, start afresh. A
             * supported directive keyword that broke the clause before it
             * (a missing '.') begins the next clause itself. */
            if ((tok.type == SF_DECL || tok.type == SF_TYPE || tok.type == SF_IODIR) && fed > 1) {
                d.pending = tok;
                d.have_pending = true;
                d.prev = (rf_token){ 0 };
            } else {
                skip_clause(&d, tok, in_directive);
            }
            rf_SouffleParseFree(parser, free);
            parser = rf_SouffleParseAlloc(parser_alloc);
            ps->failed = false;
            clause_start = true;
            depth = fed = 0;
            continue;
        }
        if (tok.type == SF_DOT && depth == 0)
            clause_start = true;
        if (tok.type == 0)
            break;
    }
    rf_SouffleParseFree(parser, free);
    return diag->errors == errors_before;
}

/* ------------------------------------------------------- translation */

/* The Soufflé types Red Fox maps its values onto (docs/souffle.md):
 * number and unsigned are int64, float is float64, symbol is string. */
typedef struct sf_typedef {
    const sf_clause *def;     /* NULL for the built-in types */
    const char *name;
    rf_type base;             /* RF_TYPE_INVALID until resolved */
    bool resolving, failed;
} sf_typedef;

typedef struct sf_rel {
    const char *name;
    int arity;
    rf_type *types;
} sf_rel;

typedef struct sf_tr {
    sf_parse_state *ps;
    rf_diag *diag;
    ast_program *out;
    const char *fact_dir;
    RF_VEC(sf_typedef) types;
    RF_VEC(sf_rel) rels;
    RF_VEC(rf_souffle_output) outputs;
    RF_VEC(char *) output_directive;  /* relations given one @output */
    int naux;                         /* auxiliary relations made */
} sf_tr;

static const char *type_name(rf_type t)
{
    switch (t) {
    case RF_TYPE_INT64: return "int64";
    case RF_TYPE_FLOAT64: return "float64";
    case RF_TYPE_STRING: return "string";
    case RF_TYPE_BOOL: return "bool";
    default: return "?";
    }
}

/* The Soufflé base type a Red Fox type stands for, for messages. */
static const char *souffle_type_name(rf_type t)
{
    return t == RF_TYPE_INT64 ? "number" : t == RF_TYPE_FLOAT64 ? "float" : "symbol";
}

static sf_typedef *find_type(sf_tr *tr, const char *name)
{
    for (size_t i = 0; i < tr->types.len; i++)
        if (strcmp(tr->types.items[i].name, name) == 0)
            return &tr->types.items[i];
    return NULL;
}

static rf_type resolve_type(sf_tr *tr, const char *name, rf_loc at)
{
    sf_typedef *t = find_type(tr, name);
    if (!t) {
        rf_diag_error(tr->diag, at, "unknown type '%s' (expected number, unsigned, float, symbol or a .type)",
                      name);
        return RF_TYPE_INVALID;
    }
    if (t->base != RF_TYPE_INVALID || t->failed)
        return t->base;
    if (t->resolving) {
        rf_diag_error(tr->diag, t->def->name_loc, "type '%s' is defined in terms of itself", name);
        t->failed = true;
        return RF_TYPE_INVALID;
    }
    t->resolving = true;
    rf_type base = RF_TYPE_INVALID;
    const ast_list *members = t->def->members;
    for (int i = 0; i < members->len && !t->failed; i++) {
        const rf_token *m = members->items[i];
        char *mname = rf_strndup(m->start, (size_t)m->len);
        rf_type b = resolve_type(tr, mname, m->loc);
        free(mname);
        if (b == RF_TYPE_INVALID) {
            t->failed = true;
        } else if (base != RF_TYPE_INVALID && b != base) {
            rf_diag_error(tr->diag, m->loc,
                          "union type '%s' mixes %s and %s values: Red Fox unions need one base type", name,
                          souffle_type_name(base), souffle_type_name(b));
            t->failed = true;
        } else {
            base = b;
        }
    }
    t->resolving = false;
    t->base = t->failed ? RF_TYPE_INVALID : base;
    return t->base;
}

static sf_rel *find_rel(sf_tr *tr, const char *name)
{
    for (size_t i = 0; i < tr->rels.len; i++)
        if (strcmp(tr->rels.items[i].name, name) == 0)
            return &tr->rels.items[i];
    return NULL;
}

static ast_expr *var_expr(const char *name, rf_loc loc)
{
    ast_expr *e = ast_expr_new(AST_VAR, loc);
    e->text = rf_strdup(name);
    e->textlen = strlen(name);
    return e;
}

static ast_expr *int_expr(uint64_t v, rf_loc loc)
{
    ast_expr *e = ast_expr_new(AST_INT, loc);
    e->magnitude = v;
    return e;
}

static ast_expr *call_expr(const char *name, rf_loc loc, int nargs, ast_expr **args)
{
    ast_list *l = ast_list_new();
    for (int i = 0; i < nargs; i++)
        ast_list_push(l, args[i]);
    return ast_expr_call(rf_strdup(name), loc, NULL, l, loc);
}

/* `name(a1, ..., an) -> t1(a1), ..., tn(an).` */
static void emit_decl(sf_tr *tr, const char *name, rf_loc loc, int arity, char **attr_names, const rf_type *types)
{
    ast_list *args = ast_list_new();
    for (int i = 0; i < arity; i++)
        ast_list_push(args, var_expr(attr_names[i], loc));
    ast_clause *c = ast_clause_new(AST_DECL, loc);
    c->head = ast_atom_new(rf_strdup(name), loc, args, false);
    c->head->loc = loc;
    if (arity > 0) {
        c->nbody = arity;
        c->types = rf_calloc((size_t)arity, sizeof *c->types);
        for (int i = 0; i < arity; i++) {
            ast_list *targ = ast_list_new();
            ast_list_push(targ, var_expr(attr_names[i], loc));
            c->types[i] = ast_atom_new(rf_strdup(type_name(types[i])), loc, targ, false);
        }
    }
    ast_program_add(tr->out, c);
    sf_rel r = { rf_strdup(name), arity, rf_malloc(((size_t)arity + 1) * sizeof(rf_type)) };
    memcpy(r.types, types, (size_t)arity * sizeof(rf_type));
    RF_PUSH(tr->rels, r);
}

static ast_darg *darg_new(const char *text, bool is_string, rf_loc loc)
{
    ast_darg *d = rf_calloc(1, sizeof *d);
    d->text = rf_strdup(text);
    d->textlen = strlen(text);
    d->is_string = is_string;
    d->loc = loc;
    return d;
}

static void emit_directive(sf_tr *tr, const char *name, rf_loc loc, int nargs, ast_darg **args)
{
    ast_clause *c = ast_clause_new(AST_DIRECTIVE, loc);
    c->dir_name = rf_strdup(name);
    c->dir_loc = loc;
    c->nargs = nargs;
    c->dargs = rf_malloc((size_t)nargs * sizeof *c->dargs);
    memcpy(c->dargs, args, (size_t)nargs * sizeof *args);
    ast_program_add(tr->out, c);
}

static void add_rule(sf_tr *tr, ast_atom *head, ast_list *body, ast_agg *agg, rf_loc loc)
{
    ast_clause *c = ast_clause_new(AST_RULE, loc);
    c->head = head;
    c->body = (ast_literal **)ast_list_take(body, &c->nbody);
    if (agg) {
        c->has_agg = true;
        c->naggs = 1;
        c->aggs = rf_malloc(sizeof *c->aggs);
        c->aggs[0] = agg;
    }
    ast_program_add(tr->out, c);
}

/* ---- .decl */

static void translate_decl(sf_tr *tr, const sf_clause *c)
{
    if (find_rel(tr, c->name)) {
        rf_diag_error(tr->diag, c->name_loc, "relation '%s' is declared twice", c->name);
        return;
    }
    int arity = c->attrs->len;
    rf_type *types = rf_calloc((size_t)arity + 1, sizeof *types);
    char **names = rf_calloc((size_t)arity + 1, sizeof *names);
    bool ok = true, eqrel = false;
    for (int i = 0; i < arity; i++) {
        const sf_attr *a = c->attrs->items[i];
        names[i] = a->name;
        types[i] = resolve_type(tr, a->type, a->type_loc);
        ok &= types[i] != RF_TYPE_INVALID;
    }
    for (int i = 0; i < c->quals->len; i++) {
        const rf_token *q = c->quals->items[i];
        char *word = rf_strndup(q->start, (size_t)q->len);
        if (strcmp(word, "inline") == 0) {
            rf_diag_error(tr->diag, q->loc, "'inline': inline relations are not supported");
            ok = false;
        } else if (strcmp(word, "eqrel") == 0) {
            eqrel = true;
            if (arity != 2 || types[0] != types[1]) {
                rf_diag_error(tr->diag, q->loc, "'eqrel' needs a binary relation whose two attributes have one type");
                ok = false;
            }
        } else if (strcmp(word, "input") == 0 || strcmp(word, "output") == 0 || strcmp(word, "printsize") == 0) {
            rf_diag_error(tr->diag, q->loc,
                          "'%s' as a qualifier of .decl is not supported: write .%s %s (Soufflé 2 deprecated "
                          "the qualifier)", word, word, c->name);
            ok = false;
        }
        /* btree, brie, btree_delete, magic, no_magic, no_inline and
         * overridable choose representations or rewrites: nothing to do. */
        free(word);
    }
    if (ok) {
        emit_decl(tr, c->name, c->name_loc, arity, names, types);
        if (eqrel) {
            /* An equivalence relation: the reflexive, symmetric and
             * transitive closure of what the rules and facts give. */
            const char *n = c->name;
            rf_loc l = c->name_loc;
            ast_expr *a[3];
            ast_list *body;
            /* n(x, y) :- n(y, x). */
            a[0] = var_expr("y", l), a[1] = var_expr("x", l);
            body = ast_list_new();
            ast_list_push(body, ast_literal_new(AST_LIT_ATOM, ast_atom_from_call(call_expr(n, l, 2, a)), NULL));
            a[0] = var_expr("x", l), a[1] = var_expr("y", l);
            add_rule(tr, ast_atom_from_call(call_expr(n, l, 2, a)), body, NULL, l);
            /* n(x, z) :- n(x, y), n(y, z). */
            body = ast_list_new();
            a[0] = var_expr("x", l), a[1] = var_expr("y", l);
            ast_list_push(body, ast_literal_new(AST_LIT_ATOM, ast_atom_from_call(call_expr(n, l, 2, a)), NULL));
            a[0] = var_expr("y", l), a[1] = var_expr("z", l);
            ast_list_push(body, ast_literal_new(AST_LIT_ATOM, ast_atom_from_call(call_expr(n, l, 2, a)), NULL));
            a[0] = var_expr("x", l), a[1] = var_expr("z", l);
            add_rule(tr, ast_atom_from_call(call_expr(n, l, 2, a)), body, NULL, l);
            /* n(x, x) :- n(x, _). */
            body = ast_list_new();
            a[0] = var_expr("x", l), a[1] = ast_expr_new(AST_WILDCARD, l);
            ast_list_push(body, ast_literal_new(AST_LIT_ATOM, ast_atom_from_call(call_expr(n, l, 2, a)), NULL));
            a[0] = var_expr("x", l), a[1] = var_expr("x", l);
            add_rule(tr, ast_atom_from_call(call_expr(n, l, 2, a)), body, NULL, l);
        }
    }
    free(types);
    free(names);
}

/* ---- .input / .output / .printsize */

static const sf_kvp *find_kvp(const sf_clause *c, const char *key)
{
    for (int i = 0; i < c->kvps->len; i++) {
        const sf_kvp *k = c->kvps->items[i];
        if (strcmp(k->key, key) == 0)
            return k;
    }
    return NULL;
}

/* Soufflé reads a relative fact-file name from the fact directory (-F,
 * default the current one); the LogiQL checker would resolve it against
 * the program's folder, so the path handed over is absolute. */
static char *fact_path(sf_tr *tr, const char *filename)
{
    if (filename[0] == '/')
        return rf_strdup(filename);
    const char *dir = tr->fact_dir && tr->fact_dir[0] ? tr->fact_dir : ".";
    char *joined = rf_sprintf("%s/%s", dir, filename);
    if (joined[0] == '/')
        return joined;
    char cwd[4096];
    char *abs = getcwd(cwd, sizeof cwd) ? rf_sprintf("%s/%s", cwd, joined) : rf_strdup(joined);
    free(joined);
    return abs;
}

static void translate_io(sf_tr *tr, const sf_clause *c)
{
    static const char *const allowed[] = { "IO", "filename", "delimiter", NULL };
    bool ok = true;
    for (int i = 0; i < c->kvps->len; i++) {
        const sf_kvp *k = c->kvps->items[i];
        bool known = false;
        for (int j = 0; allowed[j]; j++)
            known |= strcmp(k->key, allowed[j]) == 0;
        if (!known || c->io == SF_IO_PRINTSIZE) {
            rf_diag_error(tr->diag, k->key_loc, "unsupported parameter '%s' of .%s (supported: %s)", k->key,
                          c->io == SF_IO_INPUT ? "input" : c->io == SF_IO_OUTPUT ? "output" : "printsize",
                          c->io == SF_IO_PRINTSIZE ? "none" : "IO, filename, delimiter");
            ok = false;
        }
    }
    const sf_kvp *io = find_kvp(c, "IO"), *file = find_kvp(c, "filename"), *delim = find_kvp(c, "delimiter");
    bool to_stdout = false;
    if (io && strcmp(io->value, "file") != 0) {
        if (c->io == SF_IO_OUTPUT && strcmp(io->value, "stdout") == 0) {
            to_stdout = true;
        } else {
            rf_diag_error(tr->diag, io->value_loc, "IO=%s is not supported (supported: file%s)", io->value,
                          c->io == SF_IO_OUTPUT ? ", stdout" : "");
            ok = false;
        }
    }
    char delimiter = '\t';
    if (delim) {
        if (strlen(delim->value) != 1 || (c->io == SF_IO_INPUT && strcmp(delim->value, "\t") != 0 &&
                                          strcmp(delim->value, ",") != 0)) {
            rf_diag_error(tr->diag, delim->value_loc,
                          c->io == SF_IO_INPUT ? "unsupported delimiter for .input: Red Fox reads tab- and "
                                                 "comma-separated facts only"
                                               : "the delimiter must be one character");
            ok = false;
        } else {
            delimiter = delim->value[0];
        }
    }
    if (c->rels->len > 1 && file) {
        rf_diag_error(tr->diag, file->key_loc, "one filename for %d relations: give each its own .%s",
                      c->rels->len, c->io == SF_IO_INPUT ? "input" : "output");
        ok = false;
    }
    for (int i = 0; i < c->rels->len && ok; i++) {
        const rf_token *rt = c->rels->items[i];
        char *rel = rf_strndup(rt->start, (size_t)rt->len);
        if (!find_rel(tr, rel)) {
            rf_diag_error(tr->diag, rt->loc, "unknown relation '%s'", rel);
        } else if (c->io == SF_IO_INPUT) {
            char *name = file ? rf_strdup(file->value) : rf_sprintf("%s.facts", rel);
            char *path = fact_path(tr, name);
            ast_darg *args[3] = { darg_new(rel, false, rt->loc), darg_new(path, true, c->loc),
                                  darg_new(delimiter == ',' ? "csv" : "tsv", false, c->loc) };
            emit_directive(tr, "input", ast_loc_span(c->loc, rt->loc), 3, args);
            free(name);
            free(path);
        } else {
            rf_souffle_output o = { rf_strdup(rel), RF_SOUFFLE_FILE, NULL, delimiter };
            if (c->io == SF_IO_PRINTSIZE)
                o.kind = RF_SOUFFLE_SIZE;
            else if (to_stdout)
                o.kind = RF_SOUFFLE_STDOUT;
            else
                o.file = file ? rf_strdup(file->value) : rf_sprintf("%s.csv", rel);
            RF_PUSH(tr->outputs, o);
            /* .output relations are outputs (also for --count); the
             * command line makes .printsize ones outputs when it prints. */
            bool have_directive = c->io == SF_IO_PRINTSIZE;
            for (size_t k = 0; k < tr->output_directive.len; k++)
                have_directive |= strcmp(tr->output_directive.items[k], rel) == 0;
            if (!have_directive) {
                RF_PUSH(tr->output_directive, rf_strdup(rel));
                ast_darg *args[1] = { darg_new(rel, false, rt->loc) };
                emit_directive(tr, "output", ast_loc_span(c->loc, rt->loc), 1, args);
            }
        }
        free(rel);
    }
}

/* ---- expressions and literals */

/* match(regex, s) as a LIKE pattern, where the regex is made of plain
 * characters, '.', '.*', '.+' and escaped punctuation (std::regex_match
 * and LIKE both match the whole string). NULL where the regex needs more
 * (classes, groups, alternatives, other repetitions) or holds a '%' or '_',
 * which LIKE would read as wildcards. */
static char *regex_to_like(const char *re, size_t len)
{
    char *out = rf_malloc(2 * len + 1);
    size_t n = 0;
    for (size_t i = 0; i < len;) {
        char c = re[i];
        if (c == '.') {
            if (i + 1 < len && re[i + 1] == '*') {
                out[n++] = '%';
                i += 2;
            } else if (i + 1 < len && re[i + 1] == '+') {
                out[n++] = '_';
                out[n++] = '%';
                i += 2;
            } else {
                out[n++] = '_';
                i++;
            }
            continue;
        }
        char lit = c;
        if (c == '\\') {
            if (i + 1 >= len)
                goto fail;
            lit = re[i + 1];
            if ((lit >= 'a' && lit <= 'z') || (lit >= 'A' && lit <= 'Z') || (lit >= '0' && lit <= '9'))
                goto fail; /* \d, \w, \1, ... */
            i += 2;
        } else if (strchr("[](){}|?*+^$", c)) {
            goto fail;
        } else {
            i++;
        }
        if (lit == '%' || lit == '_' || (i < len && strchr("*+?{", re[i])))
            goto fail;
        out[n++] = lit;
    }
    out[n] = '\0';
    return out;
fail:
    free(out);
    return NULL;
}

static bool is_name(const ast_expr *e, const char *name)
{
    return e->text && strcmp(e->text, name) == 0;
}

/* Most nodes min/max may expand into (each argument copies the ones
 * before it). */
#define SF_MAX_EXPANDED_NODES 4096

/* Nodes of e, counting up to `cap` at most. */
static int expr_size(const ast_expr *e, int cap)
{
    if (!e || cap <= 0)
        return 0;
    int n = 1;
    for (int i = 0; i < ast_expr_nkids(e) && n < cap; i++)
        n += expr_size(ast_expr_kid(e, i), cap - n);
    return n;
}

static ast_expr *lower_call(sf_tr *tr, ast_expr *e, bool *ok);

/* Soufflé functors -> Red Fox functions (docs/souffle.md, "Functors").
 * Returns the expression to use in place of e (e may be freed). The
 * expansions (cat, min, max) nest deeper than what was written: past
 * RF_MAX_EXPR_DEPTH they are an error, as in the parser. */
static ast_expr *lower_expr(sf_tr *tr, ast_expr *e, bool *ok)
{
    e = lower_call(tr, e, ok);
    if (e && e->depth > RF_MAX_EXPR_DEPTH && *ok) {
        rf_diag_error(tr->diag, e->loc, "expression nested too deeply (more than %d levels)", RF_MAX_EXPR_DEPTH);
        *ok = false;
    }
    return e;
}

static ast_expr *lower_call(sf_tr *tr, ast_expr *e, bool *ok)
{
    if (!e)
        return NULL;
    if (e->kind == AST_UNARY || e->kind == AST_BINARY) {
        e->a = lower_expr(tr, e->a, ok);
        e->b = lower_expr(tr, e->b, ok);
        int da = e->a ? e->a->depth : 0, db = e->b ? e->b->depth : 0;
        e->depth = 1 + (da > db ? da : db);
        return e;
    }
    if (e->kind != AST_CALL)
        return e;
    for (int i = 0; i < e->nargs; i++) {
        e->args[i] = lower_expr(tr, e->args[i], ok);
        if (e->args[i]->depth + 1 > e->depth)
            e->depth = e->args[i]->depth + 1;
    }
    if (is_name(e, "cat")) {
        if (e->nargs == 0) {
            rf_diag_error(tr->diag, e->loc, "cat() needs at least one argument");
            *ok = false;
            return e;
        }
        ast_expr *acc = e->args[0];
        for (int i = 1; i < e->nargs; i++) {
            ast_expr *pair[2] = { acc, e->args[i] };
            acc = call_expr("concat", e->loc, 2, pair);
            acc->loc = ast_loc_span(e->loc, e->args[i]->loc);
        }
        e->nargs = 0;
        ast_expr_free(e);
        return acc;
    }
    if (is_name(e, "strlen") || is_name(e, "to_number") || is_name(e, "to_string"))
        return e;
    if (is_name(e, "substr")) {
        /* Soufflé counts from 0, Red Fox's substr (SQL's) from 1. */
        if (e->nargs == 3)
            e->args[1] = ast_expr_binary(RF_EX_ADD, e->args[1], int_expr(1, e->args[1]->loc));
        return e;
    }
    static const char *const to_float[] = { "to_float", "itof", "utof", NULL };
    static const char *const to_int[] = { "to_unsigned", "ftoi", "ftou", "itou", "utoi", NULL };
    for (int k = 0; k < 2; k++)
        for (const char *const *n = k ? to_int : to_float; *n; n++)
            if (is_name(e, *n)) {
                free(e->text);
                e->text = rf_strdup(k ? "int64" : "float64");
                e->textlen = strlen(e->text);
                return e;
            }
    if ((is_name(e, "min") || is_name(e, "max")) && e->nargs >= 2) {
        /* min(a, b, c) = if(a <= b, a, b) then with c: the first of equals.
         * Each step copies what came before: bounded, as nesting is. */
        bool is_min = is_name(e, "min");
        ast_expr *acc = e->args[0];
        for (int i = 1; i < e->nargs; i++) {
            ast_expr *b = e->args[i];
            if (expr_size(acc, SF_MAX_EXPANDED_NODES) + expr_size(b, SF_MAX_EXPANDED_NODES) >=
                SF_MAX_EXPANDED_NODES / 2) {
                if (*ok)
                    rf_diag_error(tr->diag, e->loc, "this %s(...) expands into more than %d operations",
                                  e->text, SF_MAX_EXPANDED_NODES);
                e->args[0] = acc;
                for (int k = 1; k < i; k++)
                    e->args[k] = int_expr(0, e->loc);
                *ok = false;
                return e;
            }
            ast_expr *three[3] = { ast_expr_binary(is_min ? RF_EX_LE : RF_EX_GE, expr_clone(acc), expr_clone(b)),
                                   acc, b };
            acc = call_expr("if", e->loc, 3, three);
        }
        e->nargs = 0;
        ast_expr_free(e);
        return acc;
    }
    if (is_name(e, "contains") || is_name(e, "match")) {
        rf_diag_error(tr->diag, e->name_loc, "'%s' is a constraint: write it alone as a body literal", e->text);
    } else if (is_name(e, "ord")) {
        rf_diag_error(tr->diag, e->name_loc, "'ord' is not supported (symbol ids are not values in Red Fox)");
    } else if (is_name(e, "range")) {
        rf_diag_error(tr->diag, e->name_loc, "'range' is not supported (a functor with many results)");
    } else if (is_name(e, "autoinc")) {
        rf_diag_error(tr->diag, e->name_loc, "'autoinc' is not supported");
    } else {
        rf_diag_error(tr->diag, e->name_loc,
                      "unknown functor '%s' (expected cat, strlen, substr, min, max, to_float, ftoi, ...; "
                      "user-defined functors are not supported)", e->text);
    }
    *ok = false;
    return e;
}

/* contains and match, written as literals, become conditions; everything
 * else keeps its kind with its expressions lowered. */
static bool lower_literal(sf_tr *tr, ast_literal *l)
{
    bool ok = true;
    if (l->kind == AST_LIT_COND) {
        l->cond = lower_expr(tr, l->cond, &ok);
        return ok;
    }
    ast_atom *a = l->atom;
    for (int i = 0; i < a->nargs; i++)
        a->args[i] = lower_expr(tr, a->args[i], &ok);
    bool contains = strcmp(a->name, "contains") == 0, match = strcmp(a->name, "match") == 0;
    if (!ok || (!contains && !match) || find_rel(tr, a->name))
        return ok;
    if (a->nargs != 2) {
        rf_diag_error(tr->diag, a->loc, "'%s' takes 2 arguments, found %d", a->name, a->nargs);
        return false;
    }
    ast_expr *cond;
    if (contains) {
        /* Soufflé's contains(sub, s): s contains sub. */
        ast_expr *args[2] = { a->args[1], a->args[0] };
        cond = call_expr("contains", a->loc, 2, args);
    } else {
        ast_expr *re = a->args[0];
        char *like = re->kind == AST_STRING ? regex_to_like(re->text, re->textlen) : NULL;
        if (!like) {
            rf_diag_error(tr->diag, re->loc,
                          "match: only a constant pattern of plain characters, '.', '.*' and '.+' is supported "
                          "(Red Fox matches with LIKE, not regular expressions)");
            return false;
        }
        free(re->text);
        re->text = like;
        re->textlen = strlen(like);
        ast_expr *args[2] = { a->args[1], re };
        cond = call_expr("like", a->loc, 2, args);
    }
    a->nargs = 0;
    if (l->kind == AST_LIT_NEGATED)
        cond = call_expr("not", l->loc, 1, &cond);
    ast_atom_free(a);
    l->atom = NULL;
    l->kind = AST_LIT_COND;
    l->cond = cond;
    return true;
}

/* ---- variables, their types, aggregates */

/* ast_list_free's item function for lists of borrowed pointers. */
static void borrowed(void *item) { (void)item; }

static bool list_has(const ast_list *l, const char *name)
{
    for (int i = 0; i < l->len; i++)
        if (strcmp(l->items[i], name) == 0)
            return true;
    return false;
}

/* Appends the variable names of e not yet in names (borrowed strings). */
static void collect_vars(const ast_expr *e, ast_list *names)
{
    if (!e)
        return;
    if (e->kind == AST_VAR && !list_has(names, e->text))
        ast_list_push(names, e->text);
    for (int i = 0; i < ast_expr_nkids(e); i++)
        collect_vars(ast_expr_kid(e, i), names);
}

static void collect_literal_vars(const ast_literal *l, ast_list *names)
{
    if (l->atom)
        for (int i = 0; i < l->atom->nargs; i++)
            collect_vars(l->atom->args[i], names);
    collect_vars(l->cond, names);
}

/* The aggregates an expression stands for ("$aggN" variables), as N + 1. */
static void collect_aggs(const ast_expr *e, ast_list *ids)
{
    if (!e)
        return;
    if (e->kind == AST_VAR && strncmp(e->text, "$agg", 4) == 0) {
        intptr_t id = strtol(e->text + 4, NULL, 10) + 1;
        bool seen = false;
        for (int i = 0; i < ids->len; i++)
            seen |= (intptr_t)ids->items[i] == id;
        if (!seen)
            ast_list_push(ids, (void *)id);
    }
    for (int i = 0; i < ast_expr_nkids(e); i++)
        collect_aggs(ast_expr_kid(e, i), ids);
}

typedef struct sf_vtype {
    const char *name;
    rf_type type;
} sf_vtype;

typedef RF_VEC(sf_vtype) sf_env;

static rf_type env_get(const sf_env *env, const char *name)
{
    for (size_t i = 0; i < env->len; i++)
        if (strcmp(env->items[i].name, name) == 0)
            return env->items[i].type;
    return RF_TYPE_INVALID;
}

static rf_type infer_expr(const ast_expr *e, const sf_env *env)
{
    switch (e->kind) {
    case AST_INT: return RF_TYPE_INT64;
    case AST_FLOAT: return RF_TYPE_FLOAT64;
    case AST_STRING: return RF_TYPE_STRING;
    case AST_BOOL: return RF_TYPE_BOOL;
    case AST_VAR: return env_get(env, e->text);
    case AST_UNARY: return infer_expr(e->a, env);
    case AST_BINARY: {
        if (e->op >= RF_EX_EQ && e->op <= RF_EX_OR)
            return RF_TYPE_BOOL;
        rf_type a = infer_expr(e->a, env), b = infer_expr(e->b, env);
        if (a == RF_TYPE_FLOAT64 || b == RF_TYPE_FLOAT64)
            return RF_TYPE_FLOAT64;
        return a != RF_TYPE_INVALID && b != RF_TYPE_INVALID ? a : RF_TYPE_INVALID;
    }
    case AST_CALL:
        if (is_name(e, "concat") || is_name(e, "substr") || is_name(e, "to_string"))
            return RF_TYPE_STRING;
        if (is_name(e, "strlen") || is_name(e, "int64") || is_name(e, "to_number"))
            return RF_TYPE_INT64;
        if (is_name(e, "float64"))
            return RF_TYPE_FLOAT64;
        if (is_name(e, "if") && e->nargs == 3) {
            rf_type a = infer_expr(e->args[1], env), b = infer_expr(e->args[2], env);
            return a == RF_TYPE_FLOAT64 || b == RF_TYPE_FLOAT64 ? RF_TYPE_FLOAT64 : a;
        }
        return RF_TYPE_BOOL;
    default:
        return RF_TYPE_INVALID;
    }
}

/* Types of a body's variables: from the columns of the atoms that bind
 * them, then from assignments `v = e`, until nothing changes. */
static void infer_env(sf_tr *tr, const ast_list *lits, sf_env *env)
{
    for (bool changed = true; changed;) {
        changed = false;
        for (int i = 0; i < lits->len; i++) {
            const ast_literal *l = lits->items[i];
            if (l->kind == AST_LIT_ATOM) {
                const sf_rel *r = find_rel(tr, l->atom->name);
                for (int k = 0; r && k < l->atom->nargs && k < r->arity; k++) {
                    const ast_expr *a = l->atom->args[k];
                    if (a->kind == AST_VAR && env_get(env, a->text) == RF_TYPE_INVALID) {
                        RF_PUSH(*env, ((sf_vtype){ a->text, r->types[k] }));
                        changed = true;
                    }
                }
            } else if (l->kind == AST_LIT_COND && l->cond->kind == AST_BINARY && l->cond->op == RF_EX_EQ) {
                for (int side = 0; side < 2; side++) {
                    const ast_expr *v = side ? l->cond->b : l->cond->a, *x = side ? l->cond->a : l->cond->b;
                    rf_type t;
                    if (v->kind == AST_VAR && env_get(env, v->text) == RF_TYPE_INVALID &&
                        (t = infer_expr(x, env)) != RF_TYPE_INVALID) {
                        RF_PUSH(*env, ((sf_vtype){ v->text, t }));
                        changed = true;
                    }
                }
            }
        }
    }
}

/* Is `name` bound in lits by a positive atom (as an argument of its own)
 * or by an equality? Soufflé's grounding, as far as aggregates need it. */
static bool grounded(const ast_list *lits, const char *name, bool equalities)
{
    for (int i = 0; i < lits->len; i++) {
        const ast_literal *l = lits->items[i];
        if (l->kind == AST_LIT_ATOM) {
            for (int k = 0; k < l->atom->nargs; k++)
                if (l->atom->args[k]->kind == AST_VAR && strcmp(l->atom->args[k]->text, name) == 0)
                    return true;
        } else if (equalities && l->kind == AST_LIT_COND && l->cond->kind == AST_BINARY &&
                   l->cond->op == RF_EX_EQ) {
            for (int side = 0; side < 2; side++) {
                const ast_expr *v = side ? l->cond->b : l->cond->a;
                if (v->kind == AST_VAR && strcmp(v->text, name) == 0)
                    return true;
            }
        }
    }
    return false;
}

/* pred(k1, ..., kn, value), or pred(k1, ..., kn) without a value. */
static ast_atom *aux_atom(const char *pred, const ast_list *keys, ast_expr *value, rf_loc loc)
{
    ast_list *args = ast_list_new();
    for (int i = 0; i < keys->len; i++)
        ast_list_push(args, var_expr(keys->items[i], loc));
    if (value)
        ast_list_push(args, value);
    ast_atom *a = ast_atom_new(rf_strdup(pred), loc, args, false);
    a->loc = loc;
    return a;
}

/* How one aggregate of a rule is joined in: the auxiliary relation's atom
 * aux(keys, $aggN), and for count and sum (which are 0 over nothing, where
 * Red Fox's groups do not exist) the alternative !aux(keys, _), $aggN = 0. */
typedef struct sf_aggjoin {
    ast_literal *pos;
    ast_literal *neg, *zero;     /* NULL for min, max, mean */
} sf_aggjoin;

static void translate_conj(sf_tr *tr, ast_atom *head, ast_list *lits, ast_agg *agg, rf_loc loc, bool lowered);

/* Soufflé lets an aggregate's body constrain a variable it takes from
 * outside without binding it (`c = count : { e(y), y < x }`). The groups
 * then come from the rest of the rule, its context:
 *   $contextM(k1, ..., kn) <- the rule's literals that use no aggregate.
 * and the aggregate's body starts with $contextM(k1, ..., kn). Its columns
 * are the group keys, so it adds no binding of its own: counts and sums
 * are those of the body as written. */
static bool add_context(sf_tr *tr, const sf_agg *a, const ast_list *lits, const ast_list *keys, ast_list *inner)
{
    ast_list *ctx = ast_list_new(), *ids = ast_list_new();
    for (int i = 0; i < lits->len; i++) {
        const ast_literal *l = lits->items[i];
        ids->len = 0;
        if (l->atom)
            for (int k = 0; k < l->atom->nargs; k++)
                collect_aggs(l->atom->args[k], ids);
        collect_aggs(l->cond, ids);
        if (ids->len == 0)
            ast_list_push(ctx, literal_clone(l));
    }
    ast_list_free(ids, borrowed);
    sf_env env = { 0 };
    infer_env(tr, ctx, &env);
    rf_type *types = rf_calloc((size_t)keys->len + 1, sizeof *types);
    char **names = rf_calloc((size_t)keys->len + 1, sizeof *names);
    bool ok = true;
    for (int i = 0; i < keys->len && ok; i++) {
        names[i] = keys->items[i];
        types[i] = env_get(&env, names[i]);
        if (!grounded(ctx, names[i], true) || types[i] == RF_TYPE_INVALID) {
            rf_diag_error(tr->diag, a->loc,
                          "variable '%s' is used in the aggregate and outside it, but neither an atom inside "
                          "the aggregate nor the rest of the body (without its aggregates) binds it", names[i]);
            ok = false;
        }
    }
    if (ok) {
        char *pred = rf_sprintf("$context%d", tr->naux++);
        emit_decl(tr, pred, a->loc, keys->len, names, types);
        translate_conj(tr, aux_atom(pred, keys, NULL, a->loc), ctx, NULL, a->loc, true);
        ctx = NULL;
        ast_list_push(inner, NULL);
        memmove(inner->items + 1, inner->items, (size_t)(inner->len - 1) * sizeof *inner->items);
        inner->items[0] = ast_literal_new(AST_LIT_ATOM, aux_atom(pred, keys, NULL, a->loc), NULL);
        free(pred);
    }
    if (ctx)
        ast_list_free(ctx, ast_literal_free_any);
    RF_VEC_FREE(env);
    free(types);
    free(names);
    return ok;
}

/* Builds the auxiliary relation of aggregate `id` used in a rule whose
 * head and body are (head, lits):
 *   .decl $aggregateM(k1, ..., kn, $value)
 *   $aggregateM(k1, ..., kn, $value) <- agg<<$value = f(target)>> inner body.
 * k1..kn (the group keys) are the variables of the aggregate that the rule
 * uses outside it: Soufflé's "bound from outside" variables. */
static bool build_aggregate(sf_tr *tr, int id, const ast_atom *head, const ast_list *lits, sf_aggjoin *join)
{
    const sf_agg *a = tr->ps->aggs->items[id];
    if (a->body->disjuncts->len != 1) {
        rf_diag_error(tr->diag, a->loc, "';' (disjunction) inside an aggregate's body is not supported");
        return false;
    }
    bool ok = true;
    ast_list *inner = literals_clone(a->body->disjuncts->items[0]);
    for (int i = 0; i < inner->len; i++)
        ok &= lower_literal(tr, inner->items[i]);
    ast_expr *target = a->target ? lower_expr(tr, expr_clone(a->target), &ok) : NULL;
    ast_list *outer = ast_list_new(), *inside = ast_list_new(), *keys = ast_list_new();
    bool need_context = false;
    for (int i = 0; i < head->nargs; i++)
        collect_vars(head->args[i], outer);
    for (int i = 0; i < lits->len; i++)
        collect_literal_vars(lits->items[i], outer);
    for (int i = 0; i < inner->len; i++)
        collect_literal_vars(inner->items[i], inside);
    collect_vars(target, inside);
    for (int i = 0; i < inside->len && ok; i++) {
        const char *v = inside->items[i];
        if (!list_has(outer, v))
            continue;
        if (!grounded(lits, v, true)) {
            rf_diag_error(tr->diag, a->loc,
                          "variable '%s' of the aggregate is not bound outside it (it must be grounded by "
                          "the rest of the body)", v);
            ok = false;
        }
        need_context |= !grounded(inner, v, false);
        ast_list_push(keys, (void *)v);
    }
    if (ok && need_context)
        ok = add_context(tr, a, lits, keys, inner);
    sf_env env = { 0 };
    rf_type *types = rf_calloc((size_t)keys->len + 1, sizeof *types);
    if (ok) {
        infer_env(tr, inner, &env);
        for (int i = 0; i < keys->len; i++)
            types[i] = env_get(&env, keys->items[i]);
        rf_type vt = a->fn == SF_AGG_COUNT ? RF_TYPE_INT64
                     : a->fn == SF_AGG_MEAN ? RF_TYPE_FLOAT64
                                           : infer_expr(target, &env);
        if (vt == RF_TYPE_INVALID || vt == RF_TYPE_BOOL) {
            rf_diag_error(tr->diag, target ? target->loc : a->loc,
                          "cannot tell the type of the aggregated value (write it over variables of atoms "
                          "inside the aggregate)");
            ok = false;
        }
        types[keys->len] = vt;
    }
    if (!ok) {
        RF_VEC_FREE(env);
        free(types);
        ast_expr_free(target);
        ast_list_free(inner, ast_literal_free_any);
        ast_list_free(keys, borrowed);
        ast_list_free(inside, borrowed);
        ast_list_free(outer, borrowed);
        return false;
    }
    char *pred = rf_sprintf("$aggregate%d", tr->naux++);
    char **names = rf_calloc((size_t)keys->len + 1, sizeof *names);
    for (int i = 0; i < keys->len; i++)
        names[i] = keys->items[i];
    names[keys->len] = "$value";
    emit_decl(tr, pred, a->loc, keys->len + 1, names, types);
    free(names);
    free(types);
    RF_VEC_FREE(env);

    static const char *const fn_names[] = { "count", "total", "min", "max", "avg" };
    ast_agg *def = rf_calloc(1, sizeof *def);
    def->var = rf_strdup("$value");
    def->var_loc = a->loc;
    def->fn = rf_strdup(fn_names[a->fn]);
    def->fn_loc = a->loc;
    if (target) {
        def->nargs = 1;
        def->args = rf_malloc(sizeof *def->args);
        def->args[0] = target;
    }
    char value_name[32];
    snprintf(value_name, sizeof value_name, "$agg%d", id);
    join->pos = ast_literal_new(AST_LIT_ATOM, aux_atom(pred, keys, var_expr(value_name, a->loc), a->loc), NULL);
    join->neg = join->zero = NULL;
    if (a->fn == SF_AGG_COUNT || a->fn == SF_AGG_SUM) {
        join->neg = ast_literal_new(AST_LIT_NEGATED, aux_atom(pred, keys, ast_expr_new(AST_WILDCARD, a->loc), a->loc),
                                    NULL);
        join->zero = ast_literal_new(AST_LIT_COND, NULL,
                                     ast_expr_binary(RF_EX_EQ, var_expr(value_name, a->loc), int_expr(0, a->loc)));
    }
    ast_atom *aux_head = aux_atom(pred, keys, var_expr("$value", a->loc), a->loc);
    /* keys borrow names from outer/inside, which the recursion outlives */
    translate_conj(tr, aux_head, inner, def, a->loc, true);
    free(pred);
    ast_list_free(keys, borrowed);
    ast_list_free(inside, borrowed);
    ast_list_free(outer, borrowed);
    return true;
}

/* Most count/sum aggregates in one rule: each doubles its variants. */
#define SF_MAX_ZERO_AGGREGATES 6

/* Emits the rule head :- lits (consumed), or with agg an aggregation rule
 * (agg<<$value = f(e)>>), after lowering functors (unless `lowered`) and
 * joining in the relations of the aggregates the rule uses. */
static void translate_conj(sf_tr *tr, ast_atom *head, ast_list *lits, ast_agg *agg, rf_loc loc, bool lowered)
{
    bool ok = true;
    if (!lowered) {
        for (int i = 0; i < lits->len; i++)
            ok &= lower_literal(tr, lits->items[i]);
        for (int i = 0; i < head->nargs; i++)
            head->args[i] = lower_expr(tr, head->args[i], &ok);
    }
    ast_list *ids = ast_list_new();
    for (int i = 0; i < head->nargs; i++)
        collect_aggs(head->args[i], ids);
    for (int i = 0; i < lits->len; i++) {
        const ast_literal *l = lits->items[i];
        if (l->atom)
            for (int k = 0; k < l->atom->nargs; k++)
                collect_aggs(l->atom->args[k], ids);
        collect_aggs(l->cond, ids);
    }
    sf_aggjoin *joins = rf_calloc((size_t)ids->len + 1, sizeof *joins);
    int nzero = 0;
    for (int i = 0; i < ids->len && ok; i++) {
        ok = build_aggregate(tr, (int)(intptr_t)ids->items[i] - 1, head, lits, &joins[i]);
        nzero += ok && joins[i].neg;
    }
    if (ok && nzero > 0 && agg) {
        rf_diag_error(tr->diag, loc, "count or sum inside another aggregate's body is not supported");
        ok = false;
    } else if (ok && nzero > SF_MAX_ZERO_AGGREGATES) {
        rf_diag_error(tr->diag, loc, "more than %d count or sum aggregates in one rule", SF_MAX_ZERO_AGGREGATES);
        ok = false;
    }
    if (ok) {
        /* One rule per choice, for each count and sum, between a group
         * that exists and the value 0 where it does not. */
        for (long mask = 0; mask < 1L << nzero; mask++) {
            ast_list *body = literals_clone(lits);
            for (int i = 0, z = 0; i < ids->len; i++) {
                bool zero = joins[i].neg && (mask >> z++ & 1);
                if (zero) {
                    ast_list_push(body, literal_clone(joins[i].neg));
                    ast_list_push(body, literal_clone(joins[i].zero));
                } else {
                    ast_list_push(body, literal_clone(joins[i].pos));
                }
            }
            add_rule(tr, mask + 1 < 1L << nzero ? atom_clone(head) : head, body, agg, loc);
        }
        head = NULL;
        agg = NULL;
    }
    for (int i = 0; i < ids->len; i++) {
        ast_literal_free(joins[i].pos);
        ast_literal_free(joins[i].neg);
        ast_literal_free(joins[i].zero);
    }
    free(joins);
    ast_list_free(ids, borrowed);
    ast_list_free(lits, ast_literal_free_any);
    if (head)
        ast_atom_free(head);
    if (agg)
        ast_agg_free_any(agg);
}

static void translate_fact(sf_tr *tr, const sf_clause *c)
{
    ast_atom *h = atom_clone(c->heads->items[0]);
    bool ok = true;
    ast_list *ids = ast_list_new();
    for (int i = 0; i < h->nargs; i++) {
        h->args[i] = lower_expr(tr, h->args[i], &ok);
        collect_aggs(h->args[i], ids);
    }
    if (ok && ids->len) {
        rf_diag_error(tr->diag, h->loc, "an aggregate in a fact is not supported");
        ok = false;
    }
    ast_list_free(ids, borrowed);
    if (!ok) {
        ast_atom_free(h);
        return;
    }
    ast_clause *f = ast_clause_new(AST_FACT, h->loc);
    f->head = h;
    ast_program_add(tr->out, f);
}

static void translate_rule(sf_tr *tr, const sf_clause *c)
{
    const ast_list *disjuncts = c->body->disjuncts;
    if ((long)disjuncts->len * c->heads->len > SF_MAX_DISJUNCTS) {
        rf_diag_error(tr->diag, c->loc, "this rule expands into more than %d rules (heads times disjuncts)",
                      SF_MAX_DISJUNCTS);
        return;
    }
    for (int d = 0; d < disjuncts->len; d++)
        for (int h = 0; h < c->heads->len; h++) {
            ast_atom *head = atom_clone(c->heads->items[h]);
            translate_conj(tr, head, literals_clone(disjuncts->items[d]), NULL, head->loc, false);
        }
}

/* Translates the whole program: types first (they may be used before they
 * are defined), then declarations, directives, facts and rules in order. */
static void translate(sf_tr *tr)
{
    static const struct {
        const char *name;
        rf_type type;
    } builtin[] = {
        { "number", RF_TYPE_INT64 }, { "unsigned", RF_TYPE_INT64 },
        { "float", RF_TYPE_FLOAT64 }, { "symbol", RF_TYPE_STRING },
    };
    for (size_t i = 0; i < sizeof builtin / sizeof builtin[0]; i++)
        RF_PUSH(tr->types, ((sf_typedef){ NULL, builtin[i].name, builtin[i].type, false, false }));
    const ast_list *cl = tr->ps->clauses;
    for (int i = 0; i < cl->len; i++) {
        const sf_clause *c = cl->items[i];
        if (c->kind != SF_TYPE)
            continue;
        if (find_type(tr, c->name)) {
            rf_diag_error(tr->diag, c->name_loc, "type '%s' is defined twice%s", c->name,
                          find_type(tr, c->name)->def ? "" : " (it is built in)");
            continue;
        }
        RF_PUSH(tr->types, ((sf_typedef){ c, c->name, RF_TYPE_INVALID, false, false }));
    }
    for (size_t i = 0; i < tr->types.len; i++)
        if (tr->types.items[i].def)
            resolve_type(tr, tr->types.items[i].name, tr->types.items[i].def->name_loc);
    for (int i = 0; i < cl->len; i++)
        if (((const sf_clause *)cl->items[i])->kind == SF_DECL)
            translate_decl(tr, cl->items[i]);
    for (int i = 0; i < cl->len; i++) {
        const sf_clause *c = cl->items[i];
        if (c->kind == SF_IO)
            translate_io(tr, c);
        else if (c->kind == SF_FACT)
            translate_fact(tr, c);
        else if (c->kind == SF_RULE)
            translate_rule(tr, c);
    }
}

rf_program *rf_souffle_compile(rf_source *src, const char *fact_dir, rf_diag *diag)
{
    int errors_before = diag->errors;
    rf_program *prog = rf_calloc(1, sizeof *prog);
    prog->source = src;
    prog->souffle = true;
    sf_parse_state ps = { .diag = diag, .src = src, .clauses = ast_list_new(), .aggs = ast_list_new() };
    ast_program ast = { 0, 0, NULL };
    sf_tr tr = { .ps = &ps, .diag = diag, .out = &ast, .fact_dir = fact_dir };
    /* As in the LogiQL front end: after syntax errors, no checks (they
     * would mostly report the errors' consequences). */
    if (rf_souffle_parse(src, diag, &ps)) {
        translate(&tr);
        if (diag->errors == errors_before && rf_check(prog, &ast, diag))
            rf_stratify(prog, diag);
    }
    prog->nsouffle_outputs = (int)tr.outputs.len;
    prog->souffle_outputs = tr.outputs.items;
    for (size_t i = 0; i < tr.rels.len; i++) {
        free((char *)tr.rels.items[i].name);
        free(tr.rels.items[i].types);
    }
    RF_VEC_FREE(tr.rels);
    RF_VEC_FREE(tr.types);
    for (size_t i = 0; i < tr.output_directive.len; i++)
        free(tr.output_directive.items[i]);
    RF_VEC_FREE(tr.output_directive);
    ast_program_free(&ast);
    ast_list_free(ps.clauses, clause_free_any);
    ast_list_free(ps.aggs, agg_free_any);
    if (diag->errors != errors_before) {
        rf_program_free(prog);
        return NULL;
    }
    return prog;
}
