/* Checking and lowering: syntax tree -> rf_program. Declarations are read
 * first (so a predicate may be used above its declaration), then
 * directives, facts and rules in source order. Each error is reported where
 * it is found and checking goes on with the next clause, so one run shows
 * as many problems as possible. */
#include "check.h"

#include <inttypes.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Types of literals not yet fixed by their context (beyond the rf_types):
 *  TY_INTLIT   an integer literal, or an expression of them: it becomes the
 *              type of whatever it meets (int32, int64, float64, decimal[s]),
 *              or int64 when it meets only other literals;
 *  TY_FRAC(k)  a literal written with k fraction digits in plain digits
 *              (0.05: k = 2), or an expression of them and integer
 *              literals: float64, except where it meets a decimal, where it
 *              is the exact decimal[k] (then widened like one). */
#define TY_INTLIT ((int)RF_TYPE_COUNT_)
#define TY_FRAC(k) (TY_INTLIT + (k))

static bool is_frac(int t) { return t > TY_INTLIT && t <= TY_FRAC(RF_DECIMAL_MAX_SCALE); }
static bool is_flex(int t) { return t == TY_INTLIT || is_frac(t); }
static bool is_dec(int t) { return t > 0 && t < (int)RF_TYPE_COUNT_ && rf_type_is_decimal((rf_type)t); }
static bool is_intty(int t) { return t == RF_TYPE_INT32 || t == RF_TYPE_INT64 || t == TY_INTLIT; }
/* Numbers: ints, float64, decimals (rf_type_is_numeric) and the literal types. */
static bool is_num(int t) { return is_intty(t) || t == RF_TYPE_FLOAT64 || is_dec(t) || is_frac(t); }
static bool numeric_or_lit(int t) { return is_num(t); }
/* The scale of a number as a decimal: ints 0, decimal[s] s, TY_FRAC(k) k. */
static int scale_of(int t) { return is_dec(t) ? rf_decimal_scale((rf_type)t) : is_frac(t) ? t - TY_INTLIT : 0; }

static const uint64_t pow10_u64[RF_DECIMAL_MAX_SCALE + 1] = {
    1ull, 10ull, 100ull, 1000ull, 10000ull, 100000ull, 1000000ull, 10000000ull, 100000000ull,
    1000000000ull, 10000000000ull, 100000000000ull, 1000000000000ull, 10000000000000ull,
    100000000000000ull, 1000000000000000ull, 10000000000000000ull, 100000000000000000ull,
    1000000000000000000ull,
};

/* Where an inline fact of a functional predicate came from. */
typedef struct fact_ref {
    int pred;
    size_t row;
    rf_loc loc;
} fact_ref;

typedef struct checker {
    rf_program *prog;
    rf_diag *diag;
    int preds_cap;
    size_t *facts_cap;     /* [npreds] */
    const ast_clause **decls; /* [npreds]: the declaration (column names) */
    rf_loc *order_loc, *limit_loc; /* [npreds]: the @order / @limit, line 0: none */
    RF_VEC(fact_ref) ffacts; /* facts of functional predicates, source order */
} checker;

static const char *type_desc(int t)
{
    return t == TY_INTLIT ? "integer" : is_frac(t) ? "float64" : rf_type_name((rf_type)t);
}

/* ---------------------------------------------------------------- preds */

static bool same_signature(const rf_pred *p, int arity, const rf_type *types, bool functional)
{
    if (p->arity != arity || p->functional != functional)
        return false;
    for (int i = 0; i < arity; i++)
        if (p->types[i] != types[i])
            return false;
    return true;
}

/* edge(x, y) -> int32(x), int32(y).  The head names the attributes, the
 * type atoms give each one a type (in any order). */
static void declare(checker *ck, const ast_clause *c)
{
    const ast_atom *h = c->head;
    int n = h->nargs;
    rf_type *types = rf_calloc(n > 0 ? (size_t)n : 1, sizeof *types);
    bool ok = true;
    for (int i = 0; i < n; i++) {
        const ast_expr *a = h->args[i];
        if (a->kind != AST_VAR) {
            rf_diag_error(ck->diag, a->loc, "declaration arguments must be variables");
            ok = false;
            continue;
        }
        for (int j = 0; j < i; j++)
            if (h->args[j]->kind == AST_VAR && strcmp(h->args[j]->text, a->text) == 0) {
                rf_diag_error(ck->diag, a->loc, "variable '%s' appears twice in the declaration",
                              a->text);
                ok = false;
            }
    }
    for (int k = 0; k < c->nbody; k++) {
        const ast_atom *t = c->types[k];
        rf_type ty = RF_TYPE_INVALID;
        if (strcmp(t->name, "decimal") == 0) {
            /* decimal[s](x): the scale is part of the type */
            const ast_expr *s = t->nparams == 1 ? t->params[0] : NULL;
            if (!t->has_params)
                rf_diag_error(ck->diag, t->loc, "decimal needs a scale: decimal[s](x)");
            else if (!s || s->kind != AST_INT || s->negative || s->too_big ||
                     s->magnitude > RF_DECIMAL_MAX_SCALE)
                rf_diag_error(ck->diag, s ? s->loc : t->name_loc, "decimal scale must be 0 to %d",
                              RF_DECIMAL_MAX_SCALE);
            else
                ty = rf_type_decimal((int)s->magnitude);
            if (ty == RF_TYPE_INVALID) {
                ok = false;
                continue;
            }
        } else if (t->has_params) {
            rf_diag_error(ck->diag, t->name_loc, "only decimal takes a scale, as in decimal[2](x)");
            ok = false;
            continue;
        } else {
            ty = rf_type_from_name(t->name);
        }
        if (ty == RF_TYPE_INVALID) {
            rf_diag_error(ck->diag, t->name_loc, "unknown type '%s'", t->name);
            ok = false;
            continue;
        }
        if (t->functional || t->nargs != 1 || t->args[0]->kind != AST_VAR) {
            rf_diag_error(ck->diag, t->loc, "a type constraint takes one variable, as in %s(x)",
                          rf_type_name(ty));
            ok = false;
            continue;
        }
        const ast_expr *v = t->args[0];
        int i = 0;
        while (i < n && !(h->args[i]->kind == AST_VAR && strcmp(h->args[i]->text, v->text) == 0))
            i++;
        if (i == n) {
            rf_diag_error(ck->diag, v->loc, "variable '%s' does not appear in the declared atom",
                          v->text);
            ok = false;
        } else if (types[i] != RF_TYPE_INVALID) {
            rf_diag_error(ck->diag, v->loc, "variable '%s' already has a type", v->text);
            ok = false;
        } else {
            types[i] = ty;
        }
    }
    for (int i = 0; i < n && ok; i++)
        if (types[i] == RF_TYPE_INVALID) {
            rf_diag_error(ck->diag, h->args[i]->loc, "variable '%s' has no type", h->args[i]->text);
            ok = false;
        }
    int old = rf_program_find_pred(ck->prog, h->name);
    if (old >= 0) {
        const rf_pred *p = &ck->prog->preds[old];
        if (ok && same_signature(p, n, types, h->functional))
            rf_diag_error(ck->diag, h->name_loc, "duplicate declaration of '%s'", h->name);
        else
            rf_diag_error(ck->diag, h->name_loc, "conflicting declaration of '%s'", h->name);
        rf_diag_note(ck->diag, p->loc, "'%s' was declared here", h->name);
        ok = false;
    }
    if (!ok) {
        free(types);
        return;
    }
    rf_program *prog = ck->prog;
    if (prog->npreds == ck->preds_cap) {
        ck->preds_cap = ck->preds_cap ? 2 * ck->preds_cap : 16;
        prog->preds = rf_realloc(prog->preds, rf_mul_size((size_t)ck->preds_cap, sizeof *prog->preds));
        ck->facts_cap = rf_realloc(ck->facts_cap, rf_mul_size((size_t)ck->preds_cap, sizeof(size_t)));
        ck->decls = rf_realloc(ck->decls, rf_mul_size((size_t)ck->preds_cap, sizeof *ck->decls));
        ck->order_loc = rf_realloc(ck->order_loc, rf_mul_size((size_t)ck->preds_cap, sizeof(rf_loc)));
        ck->limit_loc = rf_realloc(ck->limit_loc, rf_mul_size((size_t)ck->preds_cap, sizeof(rf_loc)));
    }
    rf_pred *p = &prog->preds[prog->npreds];
    memset(p, 0, sizeof *p);
    p->name = rf_strdup(h->name);
    p->arity = n;
    p->types = types;
    p->functional = h->functional;
    p->loc = h->name_loc;
    p->limit = -1;
    ck->facts_cap[prog->npreds] = 0;
    ck->decls[prog->npreds] = c;
    memset(&ck->order_loc[prog->npreds], 0, sizeof(rf_loc));
    memset(&ck->limit_loc[prog->npreds], 0, sizeof(rf_loc));
    prog->npreds++;
}

/* Finds the predicate an atom names and checks its shape; -1 after an
 * error. */
static int resolve_atom(checker *ck, const ast_atom *a)
{
    int idx = rf_program_find_pred(ck->prog, a->name);
    if (idx < 0) {
        rf_diag_error(ck->diag, a->name_loc, "unknown predicate '%s'", a->name);
        return -1;
    }
    const rf_pred *p = &ck->prog->preds[idx];
    if (a->functional && !p->functional) {
        rf_diag_error(ck->diag, a->loc, "'%s' is not functional: write %s(...)", a->name, a->name);
        return -1;
    }
    if (a->nargs != p->arity) {
        rf_diag_error(ck->diag, a->loc, "arity mismatch: '%s' has %d argument%s, found %d",
                      a->name, p->arity, p->arity == 1 ? "" : "s", a->nargs);
        return -1;
    }
    return idx;
}

/* ------------------------------------------------------------- literals */

/* date("1995-03-15"): a call of date with one string literal. */
static bool is_date_literal(const ast_expr *e)
{
    return e->kind == AST_CALL && !e->has_params && strcmp(e->text, "date") == 0 && e->nargs == 1 &&
           e->args[0]->kind == AST_STRING;
}

/* The value of a date literal; reports a bad date. */
static bool date_literal_word(checker *ck, const ast_expr *e, rf_word *out)
{
    const ast_expr *s = e->args[0];
    const char *why;
    if (!rf_value_parse(RF_TYPE_DATE, s->text, s->textlen, out, &why)) {
        rf_diag_error(ck->diag, s->loc, "bad date literal '%s'", s->text);
        return false;
    }
    return true;
}

/* The exact value of a number literal (integer, or plain digits with a
 * fraction) as decimal[s]: 0, or 1 when it is out of range (|value| must be
 * below 2^63 after scaling), or 2 when it has more than s fraction digits
 * that are not zeros. */
static int decimal_literal(const ast_expr *e, int s, rf_word *out)
{
    uint64_t mag = e->magnitude;
    int k = e->kind == AST_INT ? 0 : e->dec_scale;
    if (e->kind == AST_INT && e->too_big)
        return 1;
    if (k > s) {
        uint64_t d = pow10_u64[k - s];
        if (mag % d)
            return 2;
        mag /= d;
    } else {
        uint64_t m = pow10_u64[s - k];
        if (mag > (uint64_t)INT64_MAX / m)
            return 1;
        mag *= m;
    }
    *out = e->negative ? (rf_word)(0 - mag) : (rf_word)mag;
    return 0;
}

/* Encodes a literal (or a date literal) as a value of type t, reporting a
 * type mismatch or an out-of-range value. */
static bool literal_word(checker *ck, const ast_expr *e, rf_type t, rf_word *out)
{
    int lt;
    if (rf_type_is_decimal(t) && (e->kind == AST_INT || (e->kind == AST_FLOAT && e->dec_ok))) {
        int s = rf_decimal_scale(t);
        switch (decimal_literal(e, s, out)) {
        case 0:
            return true;
        case 1:
            rf_diag_error(ck->diag, e->loc, "%s literal out of range for %s",
                          e->kind == AST_INT ? "integer" : "decimal", rf_type_name(t));
            return false;
        default:
            rf_diag_error(ck->diag, e->loc, "literal %s%s has more than %d decimal place%s for %s",
                          e->negative ? "-" : "", e->text, s, s == 1 ? "" : "s", rf_type_name(t));
            return false;
        }
    }
    if (is_date_literal(e)) {
        if (t == RF_TYPE_DATE)
            return date_literal_word(ck, e, out);
        rf_diag_error(ck->diag, e->loc, "type mismatch: expected %s, found date", rf_type_name(t));
        return false;
    }
    switch (e->kind) {
    case AST_INT:
        if (t == RF_TYPE_FLOAT64) {
            double d = (double)e->magnitude;
            *out = rf_word_from_double(e->negative ? -d : d);
            return true;
        }
        if (rf_type_is_integer(t)) {
            uint64_t max = t == RF_TYPE_INT32 ? (uint64_t)INT32_MAX : (uint64_t)INT64_MAX;
            if (e->negative)
                max++;
            if (e->too_big || e->magnitude > max) {
                rf_diag_error(ck->diag, e->loc, "integer literal out of range for %s", rf_type_name(t));
                return false;
            }
            *out = e->negative ? (rf_word)(0 - e->magnitude) : (rf_word)e->magnitude;
            return true;
        }
        lt = TY_INTLIT;
        break;
    case AST_FLOAT:
        if (t == RF_TYPE_FLOAT64) {
            if (e->too_big || !isfinite(e->fval)) {
                rf_diag_error(ck->diag, e->loc, "float literal out of range for float64");
                return false;
            }
            *out = rf_word_from_double(e->fval);
            return true;
        }
        lt = RF_TYPE_FLOAT64;
        break;
    case AST_STRING:
        if (t == RF_TYPE_STRING) {
            *out = rf_str_intern(e->text, e->textlen);
            return true;
        }
        lt = RF_TYPE_STRING;
        break;
    case AST_BOOL:
        if (t == RF_TYPE_BOOL) {
            *out = e->bval ? 1 : 0;
            return true;
        }
        lt = RF_TYPE_BOOL;
        break;
    default:
        rf_diag_error(ck->diag, e->loc, "expected a constant");
        return false;
    }
    rf_diag_error(ck->diag, e->loc, "type mismatch: expected %s, found %s", rf_type_name(t),
                  type_desc(lt));
    return false;
}

static bool is_literal(const ast_expr *e)
{
    return e->kind == AST_INT || e->kind == AST_FLOAT || e->kind == AST_STRING || e->kind == AST_BOOL ||
           is_date_literal(e);
}

/* An argument of an atom that is neither a variable, a constant nor '_'. */
static bool is_expression(const ast_expr *e);

static void add_fact(checker *ck, const ast_clause *c)
{
    const ast_atom *a = c->head;
    int idx = resolve_atom(ck, a);
    if (idx < 0)
        return;
    rf_pred *p = &ck->prog->preds[idx];
    rf_word *row = rf_malloc(rf_mul_size(p->arity > 0 ? (size_t)p->arity : 1, sizeof *row));
    bool ok = true;
    for (int i = 0; i < p->arity; i++) {
        const ast_expr *e = a->args[i];
        if (!is_literal(e)) {
            rf_diag_error(ck->diag, e->loc, "fact arguments must be constants");
            ok = false;
        } else if (!literal_word(ck, e, p->types[i], &row[i])) {
            ok = false;
        }
    }
    if (ok) {
        size_t *cap = &ck->facts_cap[idx];
        if (p->nfacts == *cap) {
            *cap = *cap ? 2 * *cap : 8;
            p->facts = rf_realloc(p->facts, rf_mul_size(rf_mul_size(*cap, (size_t)(p->arity > 0 ? p->arity : 1)),
                                                        sizeof *p->facts));
        }
        memcpy(p->facts + p->nfacts * (size_t)p->arity, row, (size_t)p->arity * sizeof *row);
        if (p->functional) {
            fact_ref fr = { idx, p->nfacts, a->loc };
            RF_PUSH(ck->ffacts, fr);
        }
        p->nfacts++;
    }
    free(row);
}

/* --------------------------------------------- functional dependencies */

/* qsort has no context argument: the comparison reads these. */
static const rf_program *fd_prog;

static int fd_compare(const void *x, const void *y)
{
    const fact_ref *a = x, *b = y;
    if (a->pred != b->pred)
        return a->pred < b->pred ? -1 : 1;
    const rf_pred *p = &fd_prog->preds[a->pred];
    const rf_word *ra = p->facts + a->row * (size_t)p->arity, *rb = p->facts + b->row * (size_t)p->arity;
    for (int i = 0; i < p->arity - 1; i++)
        if (ra[i] != rb[i])
            return ra[i] < rb[i] ? -1 : 1;
    return a->row < b->row ? -1 : a->row > b->row;   /* source order within a key */
}

static int loc_compare(const void *x, const void *y)
{
    const fact_ref *a = x, *b = y;
    if (a->loc.line != b->loc.line)
        return a->loc.line < b->loc.line ? -1 : 1;
    return (a->loc.col > b->loc.col) - (a->loc.col < b->loc.col);
}

static void append_value(char *buf, size_t cap, rf_type t, rf_word w)
{
    size_t n = strlen(buf);
    if (t == RF_TYPE_STRING)
        snprintf(buf + n, cap - n, "\"%s\"", rf_str_get(w));
    else
        rf_value_format(t, w, buf + n, cap - n);
}

/* Inline facts of a functional predicate with equal keys must have equal
 * values (identical facts are one tuple). Reported at each later fact that
 * disagrees with the first one of its key, in source order. */
static void check_fact_keys(checker *ck)
{
    size_t n = ck->ffacts.len;
    if (n < 2)
        return;
    fact_ref *v = ck->ffacts.items;
    fd_prog = ck->prog;
    qsort(v, n, sizeof *v, fd_compare);
    RF_VEC(fact_ref) bad = { NULL, 0, 0 };   /* pairs: the fact, then the first of its key */
    for (size_t g = 0, i; g < n; g = i) {
        const rf_pred *p = &ck->prog->preds[v[g].pred];
        const rf_word *first = p->facts + v[g].row * (size_t)p->arity;
        for (i = g + 1; i < n && v[i].pred == v[g].pred; i++) {
            const rf_word *cur = p->facts + v[i].row * (size_t)p->arity;
            if (memcmp(first, cur, (size_t)(p->arity - 1) * sizeof *cur) != 0)
                break;   /* the next key */
            if (first[p->arity - 1] != cur[p->arity - 1]) {
                RF_PUSH(bad, v[i]);
                RF_PUSH(bad, v[g]);
            }
        }
    }
    /* Report in source order (sort the pairs by the later fact). */
    fact_ref *pairs = bad.items;
    size_t np = bad.len / 2;
    for (size_t i = 1; i < np; i++)   /* insertion sort on pairs: few errors */
        for (size_t j = i; j > 0 && loc_compare(&pairs[2 * j], &pairs[2 * (j - 1)]) < 0; j--) {
            fact_ref t0 = pairs[2 * j], t1 = pairs[2 * j + 1];
            pairs[2 * j] = pairs[2 * (j - 1)];
            pairs[2 * j + 1] = pairs[2 * (j - 1) + 1];
            pairs[2 * (j - 1)] = t0;
            pairs[2 * (j - 1) + 1] = t1;
        }
    for (size_t i = 0; i < np; i++) {
        const fact_ref *later = &pairs[2 * i], *first = &pairs[2 * i + 1];
        const rf_pred *p = &ck->prog->preds[later->pred];
        const rf_word *row = p->facts + first->row * (size_t)p->arity;
        char key[512] = "", val[256] = "";
        for (int c = 0; c < p->arity - 1; c++) {
            if (c)
                strncat(key, ", ", sizeof key - strlen(key) - 1);
            append_value(key, sizeof key, p->types[c], row[c]);
        }
        append_value(val, sizeof val, p->types[p->arity - 1], row[p->arity - 1]);
        rf_diag_error(ck->diag, later->loc, "functional dependency violated: %s[%s] already has value %s",
                      p->name, key, val);
        rf_diag_note(ck->diag, first->loc, "%s[%s] = %s is stated here", p->name, key, val);
    }
    RF_VEC_FREE(bad);
}

/* ----------------------------------------------------------- directives */

static bool has_suffix(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* Input paths are relative to the folder of the program file. */
static char *resolve_path(const char *program_path, const char *path)
{
    const char *slash = program_path ? strrchr(program_path, '/') : NULL;
    if (path[0] == '/' || !slash)
        return rf_strdup(path);
    return rf_sprintf("%.*s/%s", (int)(slash - program_path), program_path, path);
}

static int directive_pred(checker *ck, const ast_darg *d, const char *dir)
{
    if (d->is_string) {
        rf_diag_error(ck->diag, d->loc, "@%s expects a predicate name, not a string", dir);
        return -1;
    }
    if (d->is_number || d->wrapper) {
        rf_diag_error(ck->diag, d->loc, "@%s expects a predicate name", dir);
        return -1;
    }
    int idx = rf_program_find_pred(ck->prog, d->text);
    if (idx < 0)
        rf_diag_error(ck->diag, d->loc, "unknown predicate '%s'", d->text);
    return idx;
}

/* A second @order / @limit for one predicate: an error with a note at the
 * first. *first has line 0 when there was none (then it becomes this one). */
static bool first_directive(checker *ck, const ast_clause *c, int idx, rf_loc *first)
{
    const char *name = ck->prog->preds[idx].name;
    if (first->line > 0) {
        rf_diag_error(ck->diag, c->dir_loc, "duplicate @%s for '%s'", c->dir_name, name);
        rf_diag_note(ck->diag, *first, "the first @%s for '%s' is here", c->dir_name, name);
        return false;
    }
    *first = c->dir_loc;
    return true;
}

/* @order(PRED, col, desc(col2), asc(col3)): columns named by the variables
 * of PRED's declaration; rf_pred.order_cols / order_desc. */
static void order_directive(checker *ck, const ast_clause *c)
{
    if (c->nargs < 2) {
        rf_diag_error(ck->diag, c->dir_loc, "@order takes a predicate and one or more columns");
        return;
    }
    int idx = directive_pred(ck, c->dargs[0], "order");
    if (idx < 0)
        return;
    rf_pred *p = &ck->prog->preds[idx];
    const ast_atom *decl = ck->decls[idx]->head;
    int n = c->nargs - 1;
    int *cols = rf_calloc((size_t)n, sizeof *cols);
    bool *desc = rf_calloc((size_t)n, sizeof *desc);
    bool ok = true;
    for (int i = 0; i < n; i++) {
        const ast_darg *d = c->dargs[i + 1];
        if (d->is_string || d->is_number) {
            rf_diag_error(ck->diag, d->loc, "@order expects a column name, asc(column) or desc(column)");
            ok = false;
            continue;
        }
        if (d->wrapper && strcmp(d->wrapper, "asc") != 0 && strcmp(d->wrapper, "desc") != 0) {
            rf_diag_error(ck->diag, d->loc, "unknown order '%s' (expected asc or desc)", d->wrapper);
            ok = false;
            continue;
        }
        int col = -1;
        for (int j = 0; j < decl->nargs && col < 0; j++)
            if (strcmp(decl->args[j]->text, d->text) == 0)
                col = j;
        if (col < 0) {
            char list[512] = "";
            for (int j = 0; j < decl->nargs; j++) {
                size_t len = strlen(list);
                snprintf(list + len, sizeof list - len, "%s%s", j ? ", " : "", decl->args[j]->text);
            }
            rf_diag_error(ck->diag, d->loc, "unknown column '%s' of '%s' (columns: %s)", d->text, p->name,
                          decl->nargs ? list : "none");
            ok = false;
            continue;
        }
        for (int j = 0; j < i; j++)
            if (ok && cols[j] == col) {
                rf_diag_error(ck->diag, d->loc, "column '%s' of '%s' is named twice in @order", d->text,
                              p->name);
                ok = false;
            }
        cols[i] = col;
        desc[i] = d->wrapper && strcmp(d->wrapper, "desc") == 0;
    }
    if (ok && first_directive(ck, c, idx, &ck->order_loc[idx])) {
        p->norder = n;
        p->order_cols = cols;
        p->order_desc = desc;
        return;
    }
    free(cols);
    free(desc);
}

/* @limit(PRED, N): at most N >= 0 rows of PRED's output (after @order). */
static void limit_directive(checker *ck, const ast_clause *c)
{
    if (c->nargs != 2) {
        rf_diag_error(ck->diag, c->dir_loc, "@limit takes a predicate and a row count");
        return;
    }
    int idx = directive_pred(ck, c->dargs[0], "limit");
    const ast_darg *d = c->dargs[1];
    bool digits = d->is_number && d->textlen > 0;
    for (size_t i = d->text[0] == '-'; digits && i < d->textlen; i++)
        digits = d->text[i] >= '0' && d->text[i] <= '9';
    if (!digits) {
        rf_diag_error(ck->diag, d->loc, "@limit expects a row count (an integer of 0 or more), found %s%s%s",
                      d->is_string ? "a string" : "'", d->is_string ? "" : d->text, d->is_string ? "" : "'");
        return;
    }
    if (d->text[0] == '-') {
        rf_diag_error(ck->diag, d->loc, "@limit row count must not be negative, found %s", d->text);
        return;
    }
    int64_t n = 0;
    for (size_t i = 0; i < d->textlen; i++) {
        int digit = d->text[i] - '0';
        if (n > (INT64_MAX - digit) / 10) {
            rf_diag_error(ck->diag, d->loc, "@limit row count %s is out of range", d->text);
            return;
        }
        n = n * 10 + digit;
    }
    if (idx >= 0 && first_directive(ck, c, idx, &ck->limit_loc[idx]))
        ck->prog->preds[idx].limit = n;
}

static void directive(checker *ck, const ast_clause *c)
{
    if (strcmp(c->dir_name, "input") == 0) {
        if (c->nargs < 2 || c->nargs > 3) {
            rf_diag_error(ck->diag, c->dir_loc,
                          "@input takes a predicate, a file name and an optional format");
            return;
        }
        int idx = directive_pred(ck, c->dargs[0], "input");
        const ast_darg *file = c->dargs[1];
        if (!file->is_string) {
            rf_diag_error(ck->diag, file->loc, "@input expects a file name in double quotes");
            return;
        }
        rf_file_format format = has_suffix(file->text, ".csv") ? RF_FORMAT_CSV
                              : has_suffix(file->text, ".tbl") ? RF_FORMAT_TBL : RF_FORMAT_TSV;
        if (c->nargs == 3) {
            const ast_darg *f = c->dargs[2];
            if (strcmp(f->text, "csv") == 0)
                format = RF_FORMAT_CSV;
            else if (strcmp(f->text, "tsv") == 0)
                format = RF_FORMAT_TSV;
            else if (strcmp(f->text, "tbl") == 0)
                format = RF_FORMAT_TBL;
            else {
                rf_diag_error(ck->diag, f->loc, "unknown input format '%s' (expected tsv, csv or tbl)",
                              f->text);
                return;
            }
        }
        if (idx < 0)
            return;
        rf_pred *p = &ck->prog->preds[idx];
        if (p->input_path) {
            rf_diag_error(ck->diag, c->dargs[0]->loc, "duplicate @input for '%s'", p->name);
            rf_diag_note(ck->diag, p->input_loc, "the first @input for '%s' is here", p->name);
            return;
        }
        p->input_path = resolve_path(ck->prog->source->path, file->text);
        p->input_format = format;
        p->input_loc = c->dir_loc;
    } else if (strcmp(c->dir_name, "output") == 0) {
        if (c->nargs != 1) {
            rf_diag_error(ck->diag, c->dir_loc, "@output takes one predicate name");
            return;
        }
        int idx = directive_pred(ck, c->dargs[0], "output");
        if (idx >= 0)
            ck->prog->preds[idx].is_output = true;
    } else if (strcmp(c->dir_name, "order") == 0) {
        order_directive(ck, c);
    } else if (strcmp(c->dir_name, "limit") == 0) {
        limit_directive(ck, c);
    } else {
        rf_diag_error(ck->diag, c->dir_loc,
                      "unknown directive '@%s' (expected @input, @output, @order or @limit)", c->dir_name);
    }
}

/* ----------------------------------------------------------------- rules */

typedef struct rule_var {
    char *name;
    int type;         /* rf_type, or a literal type until resolve_literal_vars */
    bool bound;       /* by a positive atom or an assignment */
    bool fresh;       /* made for a wildcard: no name lookups find it */
    bool emitted;     /* bound by a literal already placed in the body */
    /* Variables of literal type (assigned an expression of literals and
     * such variables): a union-find of the ones computed together, the
     * narrowest type a use asks for, the type a negated atom demands. */
    int parent;
    int want;         /* RF_TYPE_INVALID: none */
    int exact;        /* RF_TYPE_INVALID: none */
    int floor;        /* the widest literal type of the group (its root) */
} rule_var;

/* A literal made by the checker for an expression written as an atom
 * argument: `r(y + 1)` becomes `r($1), $1 = y + 1` (a filter) and
 * `!r(y + 1)` becomes `$1 = y + 1, !r($1)` (an assignment). */
typedef struct synth_lit {
    ast_literal lit;
    ast_expr eq, var;
    char name[24];
} synth_lit;

typedef struct body_item {
    const ast_literal *ast;
    rf_lit_kind kind;
    bool valid;
    bool resolved;    /* COND: classified as FILTER or ASSIGN */
    bool placed;
    int pred;
    int var;          /* ASSIGN */
    ast_expr *value;  /* ASSIGN: the side that computes the value */
    /* Made for an expression argument (synth_lit): the atom's item, the
     * column, and for a negated atom the column's type (the assigned
     * variable gets exactly this type). */
    int parent;       /* -1 for literals written in the source */
    int col;
    int fixed_type;   /* RF_TYPE_INVALID: from the value */
    rf_literal out;
} body_item;

typedef struct rule_ctx {
    checker *ck;
    const ast_clause *clause;
    RF_VEC(rule_var) vars;
    body_item *items;
    int nitems;
    int nfresh;
    bool atom_failed; /* a positive atom had an error: what it would have
                         bound is unknown, so unbound-variable errors would
                         only be its echoes and are not reported */
} rule_ctx;

static void unbound_error(rule_ctx *rc, const ast_expr *var, const char *fmt)
{
    if (!rc->atom_failed)
        rf_diag_error(rc->ck->diag, var->loc, fmt, var->text);
}

static int find_var(rule_ctx *rc, const char *name)
{
    for (size_t i = 0; i < rc->vars.len; i++)
        if (!rc->vars.items[i].fresh && strcmp(rc->vars.items[i].name, name) == 0)
            return (int)i;
    return -1;
}

static int add_var(rule_ctx *rc, char *name, int type, bool fresh)
{
    rule_var v = { name, type, true, fresh, false, (int)rc->vars.len, RF_TYPE_INVALID,
                   RF_TYPE_INVALID, RF_TYPE_INVALID };
    RF_PUSH(rc->vars, v);
    return (int)rc->vars.len - 1;
}

static rf_expr *with_loc(rf_expr *e, rf_loc loc)
{
    e->loc = loc;
    return e;
}

/* The first variable in e that nothing binds (yet), or NULL. */
static const ast_expr *first_unbound(rule_ctx *rc, const ast_expr *e)
{
    if (!e)
        return NULL;
    if (e->kind == AST_VAR) {
        int v = find_var(rc, e->text);
        return v >= 0 && rc->vars.items[v].bound ? NULL : e;
    }
    for (int i = 0; i < ast_expr_nkids(e); i++) {
        const ast_expr *u = first_unbound(rc, ast_expr_kid(e, i));
        if (u)
            return u;
    }
    return NULL;
}

/* Every variable of e already bound by a literal placed before? */
static bool all_emitted(rule_ctx *rc, const ast_expr *e)
{
    if (!e)
        return true;
    if (e->kind == AST_VAR) {
        int v = find_var(rc, e->text);
        return v >= 0 && rc->vars.items[v].emitted;
    }
    for (int i = 0; i < ast_expr_nkids(e); i++)
        if (!all_emitted(rc, ast_expr_kid(e, i)))
            return false;
    return true;
}

static const ast_expr *find_wildcard(const ast_expr *e)
{
    if (!e)
        return NULL;
    if (e->kind == AST_WILDCARD)
        return e;
    for (int i = 0; i < ast_expr_nkids(e); i++) {
        const ast_expr *w = find_wildcard(ast_expr_kid(e, i));
        if (w)
            return w;
    }
    return NULL;
}

/* The type two numbers are combined in by + and -, compared in, and that
 * if() gives two numeric branches: the wider one, where an integer is
 * decimal[0], a decimal meets a decimal in the larger scale, and a literal
 * takes the other side's type (a fraction literal meeting an int makes
 * float64, as any float does). */
static int num_join(int a, int b)
{
    if (a == b)
        return a;
    if (a == TY_INTLIT)
        return b;
    if (b == TY_INTLIT)
        return a;
    if (a == RF_TYPE_FLOAT64 || b == RF_TYPE_FLOAT64)
        return RF_TYPE_FLOAT64;
    bool da = is_dec(a) || is_frac(a), db = is_dec(b) || is_frac(b);
    if (da && db) {
        int s = scale_of(a) > scale_of(b) ? scale_of(a) : scale_of(b);
        return is_frac(a) && is_frac(b) ? TY_FRAC(s) : (int)rf_type_decimal(s);
    }
    if (is_frac(a) || is_frac(b))
        return RF_TYPE_FLOAT64;
    if (da)
        return a;
    if (db)
        return b;
    return RF_TYPE_INT64;
}

/* The type both sides of a comparison (already checked) are compared in. */
static int compare_join(int a, int b)
{
    return is_num(a) && is_num(b) ? num_join(a, b) : a;
}

/* The type a flexible (literal) type takes where want is asked for: the
 * type itself for the others. */
static rf_type concrete(int t, rf_type want)
{
    bool num_want = want == RF_TYPE_INT32 || want == RF_TYPE_INT64 || want == RF_TYPE_FLOAT64 ||
                    rf_type_is_decimal(want);
    if (t == TY_INTLIT)
        return num_want ? want : RF_TYPE_INT64;
    if (is_frac(t))
        return rf_type_is_decimal(want) ? want : RF_TYPE_FLOAT64;
    return (rf_type)t;
}

/* Implicit conversions: widening only (int32 -> int64 -> decimal[s] ->
 * float64, ints -> float64, decimal[s1] -> decimal[s2] with s2 >= s1), and
 * literals to any type they fit (e is the expression, for a bare fraction
 * literal, which a decimal of fewer digits takes when it is exact). */
static bool assignable(const ast_expr *e, int from, rf_type to)
{
    if (from == (int)to)
        return true;
    if (from == TY_INTLIT)
        return to == RF_TYPE_INT32 || to == RF_TYPE_INT64 || to == RF_TYPE_FLOAT64 || rf_type_is_decimal(to);
    if (is_frac(from))
        return to == RF_TYPE_FLOAT64 ||
               (rf_type_is_decimal(to) && (scale_of(from) <= rf_decimal_scale(to) || e->kind == AST_FLOAT));
    if (from == RF_TYPE_INT32 && to == RF_TYPE_INT64)
        return true;
    if (is_intty(from))
        return to == RF_TYPE_FLOAT64 || rf_type_is_decimal(to);
    if (is_dec(from))
        return to == RF_TYPE_FLOAT64 || (rf_type_is_decimal(to) && rf_decimal_scale(to) >= scale_of(from));
    return false;
}

/* ------------------------------------------------------------ functions */

/* Argument kinds of functions. */
enum { A_DATE = 1, A_INT, A_STR, A_BOOL, A_NUM, A_ANY };
#define R_COMMON (-1)   /* if(): the branches' common type */
#define R_SCALE (-2)    /* decimal[s](e): decimal[s] */

typedef struct fn_def {
    const char *name;
    rf_exop op;          /* RF_EX_CAST: a conversion; RF_EX_CONST: date("...") */
    int nargs;
    int arg[3];
    int result;          /* rf_type, R_COMMON or R_SCALE */
} fn_def;

static const fn_def functions[] = {
    { "year", RF_EX_YEAR, 1, { A_DATE }, RF_TYPE_INT32 },
    { "month", RF_EX_MONTH, 1, { A_DATE }, RF_TYPE_INT32 },
    { "day", RF_EX_DAY, 1, { A_DATE }, RF_TYPE_INT32 },
    { "add_days", RF_EX_ADD, 2, { A_DATE, A_INT }, RF_TYPE_DATE },
    { "add_months", RF_EX_ADD_MONTHS, 2, { A_DATE, A_INT }, RF_TYPE_DATE },
    { "add_years", RF_EX_ADD_YEARS, 2, { A_DATE, A_INT }, RF_TYPE_DATE },
    { "substr", RF_EX_SUBSTR, 3, { A_STR, A_INT, A_INT }, RF_TYPE_STRING },
    { "strlen", RF_EX_STRLEN, 1, { A_STR }, RF_TYPE_INT64 },
    { "concat", RF_EX_CONCAT, 2, { A_STR, A_STR }, RF_TYPE_STRING },
    { "like", RF_EX_LIKE, 2, { A_STR, A_STR }, RF_TYPE_BOOL },
    { "starts_with", RF_EX_STARTS_WITH, 2, { A_STR, A_STR }, RF_TYPE_BOOL },
    { "ends_with", RF_EX_ENDS_WITH, 2, { A_STR, A_STR }, RF_TYPE_BOOL },
    { "contains", RF_EX_CONTAINS, 2, { A_STR, A_STR }, RF_TYPE_BOOL },
    { "to_string", RF_EX_TO_STRING, 1, { A_NUM }, RF_TYPE_STRING },
    { "to_number", RF_EX_TO_NUMBER, 1, { A_STR }, RF_TYPE_INT64 },
    { "if", RF_EX_IF, 3, { A_BOOL, A_ANY, A_ANY }, R_COMMON },
    { "not", RF_EX_NOT, 1, { A_BOOL }, RF_TYPE_BOOL },
    { "int32", RF_EX_CAST, 1, { A_NUM }, RF_TYPE_INT32 },
    { "int64", RF_EX_CAST, 1, { A_NUM }, RF_TYPE_INT64 },
    { "float64", RF_EX_CAST, 1, { A_NUM }, RF_TYPE_FLOAT64 },
    { "decimal", RF_EX_CAST, 1, { A_NUM }, R_SCALE },
    { "date", RF_EX_CONST, 1, { A_STR }, RF_TYPE_DATE },
};

static const fn_def *find_function(const char *name)
{
    for (size_t i = 0; i < sizeof functions / sizeof functions[0]; i++)
        if (strcmp(functions[i].name, name) == 0)
            return &functions[i];
    return NULL;
}

static const char *kind_name(int k)
{
    switch (k) {
    case A_DATE: return "date";
    case A_INT: return "int";
    case A_STR: return "string";
    case A_BOOL: return "bool";
    case A_NUM: return "number";
    default: return "T";
    }
}

static bool kind_accepts(int k, int t)
{
    switch (k) {
    case A_DATE: return t == RF_TYPE_DATE;
    case A_INT: return is_intty(t);
    case A_STR: return t == RF_TYPE_STRING;
    case A_BOOL: return t == RF_TYPE_BOOL;
    case A_NUM: return is_num(t);
    default: return true;
    }
}

/* The type a function's argument of kind k is lowered as (ints: int64). */
static rf_type kind_type(int k)
{
    switch (k) {
    case A_DATE: return RF_TYPE_DATE;
    case A_INT: return RF_TYPE_INT64;
    case A_STR: return RF_TYPE_STRING;
    case A_BOOL: return RF_TYPE_BOOL;
    default: return RF_TYPE_INVALID;
    }
}

/* The target type of decimal[s](...) (checked by infer_call). */
static rf_type call_scale_type(const ast_expr *e)
{
    return rf_type_decimal((int)e->params[0]->magnitude);
}

static int infer(rule_ctx *rc, ast_expr *e);

/* 'substr' expects (string, int, int), found (string, string, int) */
static void call_mismatch(rule_ctx *rc, const ast_expr *e, const fn_def *f)
{
    char want[96] = "", found[256] = "";
    for (int i = 0; i < f->nargs; i++) {
        size_t n = strlen(want);
        snprintf(want + n, sizeof want - n, "%s%s", i ? ", " : "", kind_name(f->arg[i]));
    }
    for (int i = 0; i < e->nargs; i++) {
        int t = e->args[i]->type;
        size_t n = strlen(found);
        snprintf(found + n, sizeof found - n, "%s%s", i ? ", " : "", t == TY_INTLIT ? "int" : type_desc(t));
    }
    rf_diag_error(rc->ck->diag, e->loc, "'%s' expects (%s), found (%s)", e->text, want, found);
}

/* Types a call: a function, a conversion or a date literal. */
static int infer_call(rule_ctx *rc, ast_expr *e)
{
    rf_diag *diag = rc->ck->diag;
    const fn_def *f = find_function(e->text);
    if (!f) {
        rf_diag_error(diag, e->name_loc, "unknown function '%s'", e->text);
        return RF_TYPE_INVALID;
    }
    if (f->result == R_SCALE) {
        const ast_expr *s = e->nparams == 1 ? e->params[0] : NULL;
        if (!e->has_params) {
            rf_diag_error(diag, e->name_loc, "decimal needs a scale: decimal[s](x)");
            return RF_TYPE_INVALID;
        }
        if (!s || s->kind != AST_INT || s->negative || s->too_big || s->magnitude > RF_DECIMAL_MAX_SCALE) {
            rf_diag_error(diag, s ? s->loc : e->name_loc, "decimal scale must be 0 to %d", RF_DECIMAL_MAX_SCALE);
            return RF_TYPE_INVALID;
        }
    } else if (e->has_params) {
        rf_diag_error(diag, e->name_loc, "only decimal takes a scale, as in decimal[2](x)");
        return RF_TYPE_INVALID;
    }
    if (f->op == RF_EX_CONST) {   /* date("1995-03-15") */
        rf_word w;
        if (!is_date_literal(e)) {
            rf_diag_error(diag, e->loc, "'date' expects a string literal, as in date(\"1995-03-15\")");
            return RF_TYPE_INVALID;
        }
        return date_literal_word(rc->ck, e, &w) ? RF_TYPE_DATE : RF_TYPE_INVALID;
    }
    bool ok = true;
    for (int i = 0; i < e->nargs; i++)
        ok &= infer(rc, e->args[i]) != RF_TYPE_INVALID;
    if (!ok)
        return RF_TYPE_INVALID;
    bool match = e->nargs == f->nargs;
    for (int i = 0; i < e->nargs && match; i++)
        match = kind_accepts(f->arg[i], e->args[i]->type);
    int t = f->result;
    if (match && t == R_COMMON) {   /* if(c, a, b) */
        int ta = e->args[1]->type, tb = e->args[2]->type;
        if (is_num(ta) && is_num(tb))
            t = num_join(ta, tb);
        else if (ta == tb)
            t = ta;
        else
            match = false;
    }
    if (!match) {
        call_mismatch(rc, e, f);
        return RF_TYPE_INVALID;
    }
    return t == R_SCALE ? (int)call_scale_type(e) : t;
}

/* The type of arithmetic a op b (both typed); reports a mismatch. */
static int arith_type(rule_ctx *rc, const ast_expr *e, int ta, int tb)
{
    rf_diag *diag = rc->ck->diag;
    const char *sym = rf_exop_symbol(e->op);
    if (ta == RF_TYPE_DATE || tb == RF_TYPE_DATE) {
        /* date + int, int + date, date - int: date; date - date: days */
        if (e->op == RF_EX_ADD && ((ta == RF_TYPE_DATE && is_intty(tb)) || (is_intty(ta) && tb == RF_TYPE_DATE)))
            return RF_TYPE_DATE;
        if (e->op == RF_EX_SUB && ta == RF_TYPE_DATE && is_intty(tb))
            return RF_TYPE_DATE;
        if (e->op == RF_EX_SUB && ta == RF_TYPE_DATE && tb == RF_TYPE_DATE)
            return RF_TYPE_INT64;
        rf_diag_error(diag, e->loc, "type mismatch: cannot apply '%s' to %s and %s", sym, type_desc(ta),
                      type_desc(tb));
        return RF_TYPE_INVALID;
    }
    const ast_expr *bad = !is_num(ta) ? e->a : !is_num(tb) ? e->b : NULL;
    if (bad) {
        rf_diag_error(diag, bad->loc, "type mismatch: '%s' needs numbers, found %s", sym,
                      type_desc(bad == e->a ? ta : tb));
        return RF_TYPE_INVALID;
    }
    bool da = is_dec(ta) || is_frac(ta), db = is_dec(tb) || is_frac(tb);
    switch (e->op) {
    case RF_EX_MUL: {
        if (ta == RF_TYPE_FLOAT64 || tb == RF_TYPE_FLOAT64 || (!da && !db))
            return num_join(ta, tb);
        if ((is_frac(ta) && !is_flex(tb) && !db) || (is_frac(tb) && !is_flex(ta) && !da))
            return RF_TYPE_FLOAT64;   /* a fraction literal times an int column */
        int s = scale_of(ta) + scale_of(tb);
        if (is_flex(ta) && is_flex(tb))
            return s <= RF_DECIMAL_MAX_SCALE ? TY_FRAC(s) : RF_TYPE_FLOAT64;
        if (s > RF_DECIMAL_MAX_SCALE) {
            rf_diag_error(diag, e->loc, "decimal scale %d exceeds %d; convert with decimal[s](...)", s,
                          RF_DECIMAL_MAX_SCALE);
            return RF_TYPE_INVALID;
        }
        return rf_type_decimal(s);
    }
    case RF_EX_DIV:
        /* decimal division is not exact: float64 */
        return da || db ? RF_TYPE_FLOAT64 : num_join(ta, tb);
    case RF_EX_MOD:
        if (is_dec(ta) || is_dec(tb)) {
            rf_diag_error(diag, e->loc, "type mismatch: '%%' does not apply to %s",
                          type_desc(is_dec(ta) ? ta : tb));
            return RF_TYPE_INVALID;
        }
        return da || db ? RF_TYPE_FLOAT64 : num_join(ta, tb);
    default:
        return num_join(ta, tb);
    }
}

/* Computes the type of every node of e bottom-up (into e->type); returns
 * RF_TYPE_INVALID after reporting an error. Variables must be bound. */
static int infer(rule_ctx *rc, ast_expr *e)
{
    rf_diag *diag = rc->ck->diag;
    int t = RF_TYPE_INVALID;
    switch (e->kind) {
    case AST_INT:
        /* A literal too big for int32 makes its expression int64. */
        t = e->too_big || e->magnitude > (uint64_t)INT32_MAX + e->negative ? RF_TYPE_INT64 : TY_INTLIT;
        break;
    case AST_FLOAT: t = e->dec_ok && e->dec_scale > 0 ? TY_FRAC(e->dec_scale) : RF_TYPE_FLOAT64; break;
    case AST_STRING: t = RF_TYPE_STRING; break;
    case AST_BOOL: t = RF_TYPE_BOOL; break;
    case AST_VAR: {
        int v = find_var(rc, e->text);
        t = v >= 0 ? (int)rc->vars.items[v].type : RF_TYPE_INVALID;
        break;
    }
    case AST_WILDCARD:
        rf_diag_error(diag, e->loc, "'_' cannot be used in an expression");
        break;
    case AST_UNARY:
        t = infer(rc, e->a);
        if (t != RF_TYPE_INVALID && !numeric_or_lit(t)) {
            rf_diag_error(diag, e->loc, "type mismatch: '-' needs a number, found %s", type_desc(t));
            t = RF_TYPE_INVALID;
        }
        break;
    case AST_BINARY: {
        int ta = infer(rc, e->a), tb = infer(rc, e->b);
        if (ta == RF_TYPE_INVALID || tb == RF_TYPE_INVALID)
            break;
        if (e->op == RF_EX_AND || e->op == RF_EX_OR) {
            const ast_expr *bad = ta != RF_TYPE_BOOL ? e->a : tb != RF_TYPE_BOOL ? e->b : NULL;
            if (bad)
                rf_diag_error(diag, bad->loc, "type mismatch: '%s' needs bools, found %s",
                              rf_exop_symbol(e->op), type_desc(bad == e->a ? ta : tb));
            else
                t = RF_TYPE_BOOL;
        } else if (rf_exop_is_comparison(e->op)) {
            if ((is_num(ta) && is_num(tb)) || ta == tb)
                t = RF_TYPE_BOOL;
            else
                rf_diag_error(diag, e->loc, "type mismatch: cannot compare %s with %s", type_desc(ta),
                              type_desc(tb));
        } else {
            t = arith_type(rc, e, ta, tb);
        }
        break;
    }
    case AST_CALL:
        t = infer_call(rc, e);
        break;
    }
    e->type = t;
    return t;
}

static rf_expr *lower(rule_ctx *rc, const ast_expr *e, rf_type want);

static rf_expr *free2(rf_expr *a, rf_expr *b)
{
    rf_expr_free(a);
    rf_expr_free(b);
    return NULL;
}

/* A binary node computed in type t (its own type made concrete): the
 * operands of arithmetic have the node's type, except that date
 * arithmetic takes a date and an int64 (or two dates), and that decimal *
 * multiplies the words of operands of their own scales (an int is
 * decimal[0]) into the sum of the scales (lower casts that up where a
 * wider scale is wanted); the sides of a comparison share the type they
 * are compared in (e->a->type after lowering). */
static rf_expr *lower_binary(rule_ctx *rc, const ast_expr *e, rf_type t)
{
    rf_type ta = t, tb = t;
    if (rf_exop_is_comparison(e->op)) {
        ta = tb = concrete(compare_join(e->a->type, e->b->type), RF_TYPE_INVALID);
        t = RF_TYPE_BOOL;
    } else if (e->op == RF_EX_AND || e->op == RF_EX_OR) {
        ta = tb = RF_TYPE_BOOL;
    } else if (e->a->type == RF_TYPE_DATE || e->b->type == RF_TYPE_DATE) {
        ta = e->a->type == RF_TYPE_DATE ? RF_TYPE_DATE : RF_TYPE_INT64;
        tb = e->b->type == RF_TYPE_DATE ? RF_TYPE_DATE : RF_TYPE_INT64;
    } else if (e->op == RF_EX_MUL && rf_type_is_decimal(t)) {
        int sa = scale_of(e->a->type), sb = scale_of(e->b->type);
        ta = rf_type_decimal(sa);
        tb = rf_type_decimal(sb);
        t = rf_type_decimal(sa + sb);
    } else if (e->type == TY_INTLIT && rf_type_is_decimal(t) && (e->op == RF_EX_DIV || e->op == RF_EX_MOD)) {
        /* integer literals divide as integers, then become the decimal */
        ta = tb = t = RF_TYPE_INT64;
    }
    rf_expr *a = lower(rc, e->a, ta), *b = a ? lower(rc, e->b, tb) : NULL;
    if (!a || !b)
        return free2(a, b);
    return rf_expr_binary(e->op, t, a, b);
}

static rf_expr *lower_call(rule_ctx *rc, const ast_expr *e, rf_type t)
{
    const fn_def *f = find_function(e->text);
    if (f->op == RF_EX_CONST) {
        rf_word w;
        return literal_word(rc->ck, e, RF_TYPE_DATE, &w) ? rf_expr_const(RF_TYPE_DATE, w) : NULL;
    }
    if (f->op == RF_EX_CAST) {
        /* A literal argument the target can hold exactly is made in the
         * target type; anything else is converted (checked, rounding or
         * truncating as common/rf_expr.h says). */
        const ast_expr *x = e->args[0];
        int xt = x->type;
        if (xt == TY_INTLIT || (is_frac(xt) && (t == RF_TYPE_FLOAT64 ||
                                                 (rf_type_is_decimal(t) && scale_of(xt) <= rf_decimal_scale(t)))))
            return lower(rc, x, t);
        rf_type from = concrete(xt, is_frac(xt) && rf_type_is_decimal(t) ? rf_type_decimal(scale_of(xt))
                                                                        : RF_TYPE_INVALID);
        rf_expr *a = lower(rc, x, from);
        if (!a || a->type == t)
            return a;
        return rf_expr_unary(RF_EX_CAST, t, a);
    }
    rf_expr *k[3] = { NULL, NULL, NULL };
    for (int i = 0; i < f->nargs; i++) {
        rf_type want = f->arg[i] == A_ANY ? t : kind_type(f->arg[i]);
        if (!(k[i] = lower(rc, e->args[i], want))) {
            for (int j = 0; j < i; j++)
                rf_expr_free(k[j]);
            return NULL;
        }
    }
    switch (f->nargs) {
    case 1: return rf_expr_unary(f->op, t, k[0]);
    case 2: return rf_expr_binary(f->op, t, k[0], k[1]);
    default: return rf_expr_ternary(f->op, t, k[0], k[1], k[2]);
    }
}

/* Builds the typed expression for e (already inferred) as a value of type
 * want, inserting casts where an operand is narrower. NULL after an error
 * (only literal range errors are left to find here). */
static rf_expr *lower(rule_ctx *rc, const ast_expr *e, rf_type want)
{
    rf_expr *r = NULL;
    rf_type t = concrete(e->type, want);
    switch (e->kind) {
    case AST_INT:
    case AST_FLOAT:
    case AST_STRING:
    case AST_BOOL: {
        rf_word w;
        if (!literal_word(rc->ck, e, t, &w))
            return NULL;
        r = rf_expr_const(t, w);
        break;
    }
    case AST_VAR: {
        int v = find_var(rc, e->text);
        r = rf_expr_leaf(RF_EX_VAR, (rf_type)rc->vars.items[v].type, v);
        break;
    }
    case AST_UNARY: {
        rf_expr *a = lower(rc, e->a, t);
        if (!a)
            return NULL;
        r = rf_expr_unary(RF_EX_NEG, t, a);
        break;
    }
    case AST_BINARY:
        r = lower_binary(rc, e, t);
        break;
    case AST_CALL:
        r = lower_call(rc, e, t);
        break;
    case AST_WILDCARD:
        return NULL;
    }
    if (!r)
        return NULL;
    r = with_loc(r, e->loc);
    if (r->type != want && want != RF_TYPE_INVALID)
        r = with_loc(rf_expr_unary(RF_EX_CAST, want, r), e->loc);
    return r;
}

/* An overflow found by evaluating a constant subexpression (the run-time
 * messages of common/rf_expr.c). */
static bool is_overflow_message(const char *m)
{
    return strncmp(m, "integer overflow", 16) == 0 || strncmp(m, "decimal overflow", 16) == 0;
}

/* Evaluates every constant subexpression of e (innermost first) and
 * reports the first one that overflows. Returns whether e is constant;
 * sets *failed after an error. */
static bool check_constants(rule_ctx *rc, const rf_expr *e, bool *failed)
{
    if (e->op == RF_EX_VAR || e->op == RF_EX_COL)
        return false;
    if (e->op == RF_EX_CONST)
        return true;
    bool constant = true;
    const rf_expr *kids[3] = { e->a, e->b, e->c };
    for (int i = 0; i < 3; i++)
        if (kids[i] && !check_constants(rc, kids[i], failed))
            constant = false;
    if (!constant || *failed)
        return false;
    rf_word w;
    rf_status st;
    rf_status_init(&st);
    if (!rf_expr_eval(e, NULL, &w, &st) && is_overflow_message(st.message)) {
        rf_diag_error(rc->ck->diag, e->loc, "integer overflow in constant expression");
        *failed = true;
        return false;
    }
    return true;
}

/* Lowered expressions are checked for constant overflow: NULL after it. */
static rf_expr *checked_constants(rule_ctx *rc, rf_expr *r)
{
    bool failed = false;
    if (r)
        check_constants(rc, r, &failed);
    if (failed) {
        rf_expr_free(r);
        return NULL;
    }
    return r;
}

/* Checks that e (already inferred) can be a value of type want and lowers
 * it; NULL after an error. */
static rf_expr *lower_as(rule_ctx *rc, const ast_expr *e, rf_type want)
{
    if (e->type == RF_TYPE_INVALID)
        return NULL;
    if (!assignable(e, e->type, want)) {
        rf_diag_error(rc->ck->diag, e->loc, "type mismatch: expected %s, found %s", rf_type_name(want),
                      is_frac(e->type) && rf_type_is_decimal(want) ? rf_type_name(rf_type_decimal(scale_of(e->type)))
                                                                   : type_desc(e->type));
        return NULL;
    }
    return checked_constants(rc, lower(rc, e, want));
}

/* A body literal written as an atom whose name is no predicate but a
 * function, like(s, "%x") or !starts_with(s, "a"): the condition it reads
 * as (a call, under not() when negated). */
typedef struct call_lit {
    ast_literal lit;
    ast_expr call, neg;
    ast_expr *neg_arg;
} call_lit;

static void make_call_lit(call_lit *cl, const ast_literal *l)
{
    const ast_atom *a = l->atom;
    ast_expr *e = &cl->call;
    e->kind = AST_CALL;
    e->text = a->name;
    e->textlen = strlen(a->name);
    e->name_loc = a->name_loc;
    e->loc = a->loc;
    e->nargs = a->nargs;
    e->args = a->args;
    e->depth = 1;
    for (int i = 0; i < a->nargs; i++)
        if (a->args[i]->depth + 1 > e->depth)
            e->depth = a->args[i]->depth + 1;
    if (l->kind == AST_LIT_NEGATED) {
        cl->neg_arg = e;
        e = &cl->neg;
        e->kind = AST_CALL;
        e->text = (char *)"not";
        e->textlen = 3;
        e->name_loc = l->loc;
        e->loc = l->loc;
        e->nargs = 1;
        e->args = &cl->neg_arg;
        e->depth = cl->call.depth + 1;
    }
    cl->lit.kind = AST_LIT_COND;
    cl->lit.cond = e;
    cl->lit.loc = l->loc;
}

/* The literal made for the expression in column col of the atom of it. */
static const body_item *synth_for(rule_ctx *rc, const body_item *it, int col)
{
    int parent = (int)(it - rc->items);
    for (int i = 0; i < rc->nitems; i++)
        if (rc->items[i].parent == parent && rc->items[i].col == col)
            return &rc->items[i];
    abort(); /* every expression argument has one (add_rule) */
}

/* Positive atom: binds its variables (the column's type), keeps constants,
 * turns wildcards into fresh variables in aggregation rules, binds a
 * variable for each expression argument (see synth_lit). */
static void bind_atom(rule_ctx *rc, body_item *it)
{
    const ast_atom *a = it->ast->atom;
    checker *ck = rc->ck;
    int idx = resolve_atom(ck, a);
    if (idx < 0)
        return;
    const rf_pred *p = &ck->prog->preds[idx];
    it->pred = idx;
    it->out.nargs = p->arity;
    it->out.args = rf_calloc(p->arity > 0 ? (size_t)p->arity : 1, sizeof(rf_expr *));
    bool ok = true;
    for (int i = 0; i < p->arity; i++) {
        const ast_expr *e = a->args[i];
        rf_type t = p->types[i];
        if (e->kind == AST_VAR) {
            int v = find_var(rc, e->text);
            if (v < 0)
                v = add_var(rc, rf_strdup(e->text), t, false);
            else if (rc->vars.items[v].type != (int)t) {
                rf_diag_error(ck->diag, e->loc,
                              "type mismatch: variable '%s' is %s, but column %d of '%s' is %s",
                              e->text, type_desc(rc->vars.items[v].type), i + 1, p->name,
                              rf_type_name(t));
                ok = false;
                continue;
            }
            it->out.args[i] = with_loc(rf_expr_leaf(RF_EX_VAR, t, v), e->loc);
        } else if (is_expression(e)) {
            /* r(y + 1): the column binds a variable of its own, compared
             * with the expression by the filter made for it. */
            const body_item *s = synth_for(rc, it, i);
            int v = add_var(rc, rf_strdup(s->ast->cond->a->text), t, false);
            it->out.args[i] = with_loc(rf_expr_leaf(RF_EX_VAR, t, v), e->loc);
        } else if (e->kind == AST_WILDCARD) {
            if (rc->clause->has_agg) {
                int v = add_var(rc, rf_sprintf("_%d", ++rc->nfresh), t, true);
                it->out.args[i] = with_loc(rf_expr_leaf(RF_EX_VAR, t, v), e->loc);
            }
        } else if (is_literal(e)) {
            rf_word w;
            if (literal_word(ck, e, t, &w))
                it->out.args[i] = with_loc(rf_expr_const(t, w), e->loc);
            else
                ok = false;
        } else {
            rf_diag_error(ck->diag, e->loc, "atom arguments must be variables, constants or '_'");
            ok = false;
        }
    }
    it->valid = ok;
}

/* Negated atom: every variable must already be bound and have exactly the
 * column's type (as in a positive atom); an expression argument reads the
 * variable its assignment binds (see synth_lit). The predicate is resolved
 * earlier (add_rule); it->pred < 0 after an error. */
static void check_negated(rule_ctx *rc, body_item *it)
{
    const ast_atom *a = it->ast->atom;
    checker *ck = rc->ck;
    if (it->pred < 0)
        return;
    const rf_pred *p = &ck->prog->preds[it->pred];
    it->out.nargs = p->arity;
    it->out.args = rf_calloc(p->arity > 0 ? (size_t)p->arity : 1, sizeof(rf_expr *));
    bool ok = true;
    for (int i = 0; i < p->arity; i++) {
        const ast_expr *e = a->args[i];
        rf_type t = p->types[i];
        if (e->kind == AST_VAR) {
            int v = find_var(rc, e->text);
            if (v < 0 || !rc->vars.items[v].bound) {
                unbound_error(rc, e, "variable '%s' is not bound by a positive atom");
                ok = false;
            } else if (rc->vars.items[v].type != (int)t) {
                rf_diag_error(ck->diag, e->loc,
                              "type mismatch: variable '%s' is %s, but column %d of '%s' is %s",
                              e->text, type_desc(rc->vars.items[v].type), i + 1, p->name,
                              rf_type_name(t));
                ok = false;
            } else {
                it->out.args[i] = with_loc(rf_expr_leaf(RF_EX_VAR, t, v), e->loc);
            }
        } else if (e->kind == AST_WILDCARD) {
            /* NULL: any value */
        } else if (is_literal(e)) {
            rf_word w;
            if (literal_word(ck, e, t, &w))
                it->out.args[i] = with_loc(rf_expr_const(t, w), e->loc);
            else
                ok = false;
        } else {
            const body_item *s = synth_for(rc, it, i);
            int v = find_var(rc, s->ast->cond->a->text);
            if (!s->valid || v < 0)
                ok = false; /* reported with the assignment */
            else
                it->out.args[i] = with_loc(rf_expr_leaf(RF_EX_VAR, t, v), e->loc);
        }
    }
    it->valid = ok;
}

/* Decides which comparisons bind a variable: `x = expr` where nothing else
 * binds x and expr's variables are bound becomes an assignment. Repeats
 * until nothing changes, so chains (y = x + 1, z = y * 2) resolve in any
 * order. Returns false if some comparison stays unresolvable. */
static void classify_conditions(rule_ctx *rc, body_item *items, int n)
{
    bool changed = true;
    while (changed) {
        changed = false;
        for (int i = 0; i < n; i++) {
            body_item *it = &items[i];
            if (it->ast->kind != AST_LIT_COND || it->resolved || !it->valid)
                continue;
            ast_expr *c = it->ast->cond;
            if (!first_unbound(rc, c)) {
                it->kind = RF_LIT_FILTER;
                it->resolved = changed = true;
                continue;
            }
            if (c->kind != AST_BINARY || c->op != RF_EX_EQ)
                continue;
            for (int side = 0; side < 2; side++) {
                ast_expr *target = side == 0 ? c->a : c->b;
                ast_expr *value = side == 0 ? c->b : c->a;
                if (target->kind != AST_VAR || first_unbound(rc, target) != target ||
                    first_unbound(rc, value))
                    continue;
                int t = infer(rc, value);
                if (t == RF_TYPE_INVALID) {
                    it->valid = false;
                    break;
                }
                /* A value of literals only (TY_INTLIT) leaves the variable's
                 * type to its uses: resolve_literal_vars. */
                int vt = it->fixed_type != RF_TYPE_INVALID ? it->fixed_type : t;
                int v = find_var(rc, target->text);
                if (v < 0)
                    v = add_var(rc, rf_strdup(target->text), vt, false);
                rc->vars.items[v].type = vt;
                rc->vars.items[v].bound = true;
                it->kind = RF_LIT_ASSIGN;
                it->var = v;
                it->value = value;
                it->resolved = changed = true;
                break;
            }
        }
    }
    for (int i = 0; i < n; i++) {
        body_item *it = &items[i];
        if (it->ast->kind != AST_LIT_COND || it->resolved || !it->valid)
            continue;
        /* (for an expression argument, a variable of the expression) */
        const ast_expr *c = it->ast->cond;
        unbound_error(rc, first_unbound(rc, it->parent >= 0 ? c->b : c),
                      "variable '%s' is not bound by a positive atom");
        it->valid = false;
    }
}

/* Types a classified condition (filters; assignments were typed when
 * classified). For the filter made for an expression argument of a
 * positive atom, a value the column cannot be compared with is reported as
 * a mismatch with the column. */
static void infer_condition(rule_ctx *rc, body_item *it)
{
    ast_expr *c = it->ast->cond;
    if (it->kind != RF_LIT_FILTER)
        return;
    if (it->parent >= 0) {
        int tv = infer(rc, c->b);
        int tc = rc->vars.items[find_var(rc, c->a->text)].type;
        if (tv == RF_TYPE_INVALID) {
            it->valid = false;
            return;
        }
        if (tv != tc && !(numeric_or_lit(tv) && numeric_or_lit(tc))) {
            rf_diag_error(rc->ck->diag, c->b->loc, "type mismatch: expected %s, found %s",
                          type_desc(tc), type_desc(tv));
            it->valid = false;
            return;
        }
    }
    int t = infer(rc, c);
    if (t == RF_TYPE_INVALID) {
        it->valid = false;
    } else if (t != RF_TYPE_BOOL) {
        rf_diag_error(rc->ck->diag, c->loc, "type mismatch: a condition must be bool, found %s", type_desc(t));
        it->valid = false;
    }
}

static void lower_condition(rule_ctx *rc, body_item *it)
{
    if (it->kind == RF_LIT_FILTER) {
        infer(rc, it->ast->cond);
        if (!(it->out.expr = checked_constants(rc, lower(rc, it->ast->cond, RF_TYPE_BOOL))))
            it->valid = false;
    } else {
        it->out.var = it->var;
        infer(rc, it->value);
        if (!(it->out.expr = lower_as(rc, it->value, (rf_type)rc->vars.items[it->var].type)))
            it->valid = false;
    }
}

/* ------------------------------------------- variables of literal type */

static int uf_find(rule_ctx *rc, int v)
{
    while (rc->vars.items[v].parent != v)
        v = rc->vars.items[v].parent = rc->vars.items[rc->vars.items[v].parent].parent;
    return v;
}

/* Unites the variables of literal type in e (an expression of literal
 * type: they are computed in one type) with rep; returns the group, or -1
 * when there are none and rep is -1. */
static int unite_literal_vars(rule_ctx *rc, const ast_expr *e, int rep)
{
    if (!e)
        return rep;
    if (e->kind == AST_VAR) {
        int v = find_var(rc, e->text);
        if (v < 0 || !is_flex(rc->vars.items[v].type))
            return rep;
        v = uf_find(rc, v);
        if (rep >= 0 && rep != v)
            rc->vars.items[v].parent = rep;
        return rep >= 0 ? rep : v;
    }
    for (int i = 0; i < ast_expr_nkids(e); i++)
        rep = unite_literal_vars(rc, ast_expr_kid(e, i), rep);
    return rep;
}

/* Narrower numeric types first: int32, int64, decimal[0..18], float64. */
static int numeric_rank(int t)
{
    return t == RF_TYPE_INT32 ? 0 : t == RF_TYPE_INT64 ? 1 : is_dec(t) ? 2 + scale_of(t) : 3 + RF_DECIMAL_MAX_SCALE;
}

static bool concrete_numeric(int t)
{
    return t == RF_TYPE_INT32 || t == RF_TYPE_INT64 || t == RF_TYPE_FLOAT64 || is_dec(t);
}

/* Records what the uses of e (inferred) ask of its variables of literal
 * type: ctx is the type e is used as (a column, the other operand), or
 * RF_TYPE_INVALID. A part of e made of literals only takes the type its
 * context gives it, like a literal does. */
static void constrain(rule_ctx *rc, const ast_expr *e, int ctx)
{
    if (!e || e->type == RF_TYPE_INVALID)
        return;
    if (is_flex(e->type)) {
        int g = unite_literal_vars(rc, e, -1);
        if (g >= 0 && concrete_numeric(ctx)) {
            rule_var *rv = &rc->vars.items[g];
            if (rv->want == RF_TYPE_INVALID || numeric_rank(ctx) < numeric_rank(rv->want))
                rv->want = ctx;
        }
        return;
    }
    if (e->kind == AST_BINARY) {
        int ta = e->type, tb = e->type;
        if (rf_exop_is_comparison(e->op))
            ta = tb = compare_join(e->a->type, e->b->type);
        else if (e->op == RF_EX_MUL && is_dec(e->type)) {   /* operands of their own scales */
            ta = is_frac(e->a->type) ? (int)rf_type_decimal(scale_of(e->a->type)) : RF_TYPE_INT64;
            tb = is_frac(e->b->type) ? (int)rf_type_decimal(scale_of(e->b->type)) : RF_TYPE_INT64;
        }
        else if (e->a->type == RF_TYPE_DATE || e->b->type == RF_TYPE_DATE) {
            ta = e->a->type == RF_TYPE_DATE ? RF_TYPE_DATE : RF_TYPE_INT64;
            tb = e->b->type == RF_TYPE_DATE ? RF_TYPE_DATE : RF_TYPE_INT64;
        }
        constrain(rc, e->a, ta);
        constrain(rc, e->b, tb);
    } else if (e->kind == AST_UNARY) {
        constrain(rc, e->a, e->type);
    } else if (e->kind == AST_CALL) {
        const fn_def *f = find_function(e->text);
        for (int i = 0; f && i < e->nargs && i < f->nargs; i++) {
            int k = f->arg[i];
            constrain(rc, e->args[i], k == A_ANY ? e->type : k == A_NUM ? e->type : (int)kind_type(k));
        }
    }
}

/* Gives each variable of literal type a type: the one a negated atom
 * column demands, else the narrowest one its uses ask for (the wider uses
 * accept it by widening), else int64. Then retypes the expressions. */
static void resolve_literal_vars(rule_ctx *rc, body_item *items, int n, const rf_rule *r,
                                 const rf_pred *head)
{
    bool any = false;
    for (size_t i = 0; i < rc->vars.len; i++)
        any |= is_flex(rc->vars.items[i].type);
    if (!any)
        return;
    const ast_clause *c = rc->clause;
    for (int i = 0; i < n; i++) {
        body_item *it = &items[i];
        if (!it->valid || it->ast->kind != AST_LIT_COND || !it->resolved)
            continue;
        if (it->kind == RF_LIT_FILTER) {
            constrain(rc, it->ast->cond, RF_TYPE_INVALID);
        } else {
            int t = rc->vars.items[it->var].type;
            if (is_flex(t)) {
                int g = unite_literal_vars(rc, it->value, -1);
                int v = uf_find(rc, it->var);
                if (g >= 0 && g != v)
                    rc->vars.items[g].parent = v;
            } else {
                constrain(rc, it->value, t);
            }
        }
    }
    if (head)
        for (int i = 0; i < head->arity; i++)
            constrain(rc, c->head->args[i], head->types[i]);
    for (int j = 0; head && j < r->naggs; j++)
        if (c->aggs[j]->nargs > 0) {
            rf_aggfn fn = r->aggs[j];
            bool own = fn == RF_AGG_AVG || fn == RF_AGG_COUNT_DISTINCT;
            constrain(rc, c->aggs[j]->args[0], own ? RF_TYPE_INVALID : head->types[head->arity - r->naggs + j]);
        }
    /* Merge the wishes into the groups' roots. */
    for (size_t i = 0; i < rc->vars.len; i++) {
        rule_var *v = &rc->vars.items[i];
        if (!is_flex(v->type))
            continue;
        rule_var *g = &rc->vars.items[uf_find(rc, (int)i)];
        /* and the literal types: a group with a fraction literal of k
         * digits needs float64 or a decimal of at least k digits */
        if (v->type > g->floor)
            g->floor = v->type;
        if (v->want == RF_TYPE_INVALID)
            continue;
        if (g->want == RF_TYPE_INVALID || numeric_rank(v->want) < numeric_rank(g->want))
            g->want = v->want;
    }
    /* Negated atoms, in source order: the first one decides. */
    for (int i = 0; i < n; i++) {
        const body_item *it = &items[i];
        if (it->ast->kind != AST_LIT_NEGATED || it->pred < 0)
            continue;
        const rf_pred *p = &rc->ck->prog->preds[it->pred];
        for (int j = 0; j < p->arity; j++) {
            const ast_expr *e = it->ast->atom->args[j];
            int v = e->kind == AST_VAR ? find_var(rc, e->text) : -1;
            if (v < 0 || !is_flex(rc->vars.items[v].type) || !concrete_numeric(p->types[j]))
                continue;
            rule_var *g = &rc->vars.items[uf_find(rc, v)];
            if (g->exact == RF_TYPE_INVALID)
                g->exact = p->types[j];
        }
    }
    for (size_t i = 0; i < rc->vars.len; i++) {
        rule_var *v = &rc->vars.items[i];
        if (!is_flex(v->type))
            continue;
        const rule_var *g = &rc->vars.items[uf_find(rc, (int)i)];
        if (g->exact != RF_TYPE_INVALID)
            v->type = g->exact;
        else if (!is_frac(g->floor))
            v->type = g->want != RF_TYPE_INVALID ? g->want : RF_TYPE_INT64;
        else if (is_dec(g->want))
            v->type = rf_type_decimal(scale_of(g->want) > scale_of(g->floor) ? scale_of(g->want)
                                                                              : scale_of(g->floor));
        else
            v->type = RF_TYPE_FLOAT64;
    }
}

/* May the literal be placed now, i.e. are its inputs bound by the literals
 * placed before it? */
static bool ready(rule_ctx *rc, const body_item *it)
{
    switch (it->kind) {
    case RF_LIT_ATOM:
        return true;
    case RF_LIT_NEGATED:
        for (int i = 0; i < it->out.nargs; i++)
            if (it->out.args[i] && it->out.args[i]->op == RF_EX_VAR &&
                !rc->vars.items[it->out.args[i]->index].emitted)
                return false;
        return true;
    case RF_LIT_FILTER:
        return all_emitted(rc, it->ast->cond);
    case RF_LIT_ASSIGN:
        return all_emitted(rc, it->value);
    }
    return true;
}

static void mark_emitted(rule_ctx *rc, const body_item *it)
{
    if (it->kind == RF_LIT_ATOM)
        for (int i = 0; i < it->out.nargs; i++)
            if (it->out.args[i] && it->out.args[i]->op == RF_EX_VAR)
                rc->vars.items[it->out.args[i]->index].emitted = true;
    if (it->kind == RF_LIT_ASSIGN)
        rc->vars.items[it->var].emitted = true;
}

/* Body literals in source order, except that a literal waits until the
 * variables it reads are bound by literals before it. */
static rf_literal *order_body(rule_ctx *rc, body_item *items, int n, int *nplaced)
{
    rf_literal *body = rf_calloc(n > 0 ? (size_t)n : 1, sizeof *body);
    int placed = 0;
    for (int upto = 0; upto < n; upto++) {
        bool progress = true;
        while (progress) {
            progress = false;
            for (int i = 0; i <= upto; i++) {
                body_item *it = &items[i];
                if (it->placed || !ready(rc, it))
                    continue;
                it->placed = true;
                mark_emitted(rc, it);
                it->out.kind = it->kind;
                it->out.pred = it->pred;
                body[placed++] = it->out;
                memset(&it->out, 0, sizeof it->out);
                progress = true;
                break;
            }
        }
    }
    *nplaced = placed;
    return body;
}

static bool expr_mentions(const ast_expr *e, const char *name)
{
    if (!e)
        return false;
    if (e->kind == AST_VAR && strcmp(e->text, name) == 0)
        return true;
    for (int i = 0; i < ast_expr_nkids(e); i++)
        if (expr_mentions(ast_expr_kid(e, i), name))
            return true;
    return false;
}

static bool literal_mentions(const ast_literal *l, const char *name)
{
    if (l->cond)
        return expr_mentions(l->cond, name);
    for (int i = 0; i < l->atom->nargs; i++)
        if (expr_mentions(l->atom->args[i], name))
            return true;
    return false;
}

static rf_aggfn agg_from_name(const char *name)
{
    if (strcmp(name, "count") == 0) return RF_AGG_COUNT;
    if (strcmp(name, "total") == 0) return RF_AGG_TOTAL;
    if (strcmp(name, "min") == 0) return RF_AGG_MIN;
    if (strcmp(name, "max") == 0) return RF_AGG_MAX;
    if (strcmp(name, "avg") == 0) return RF_AGG_AVG;
    if (strcmp(name, "count_distinct") == 0) return RF_AGG_COUNT_DISTINCT;
    return RF_AGG_NONE;
}

/* The type an aggregate's argument is lowered to: the result column's for
 * total/min/max, its own for avg and count_distinct (an integer literal
 * alone: int64). */
static rf_type agg_arg_type(rf_aggfn fn, int arg_type, rf_type column)
{
    if (fn != RF_AGG_AVG && fn != RF_AGG_COUNT_DISTINCT)
        return column;
    return concrete(arg_type, RF_TYPE_INVALID);
}

/* Aggregation: checks agg<<v1 = f1(a1), ...>>, binds v1..vn (the head's
 * last n arguments, in order) and types the arguments. Returns false after
 * an error. */
static bool check_aggregate(rule_ctx *rc, rf_rule *r, const rf_pred *head)
{
    const ast_clause *c = rc->clause;
    checker *ck = rc->ck;
    bool ok = true;
    int n = c->naggs;
    r->naggs = n;
    r->aggs = rf_calloc((size_t)n, sizeof *r->aggs);
    r->agg_args = rf_calloc((size_t)n, sizeof *r->agg_args);
    for (int j = 0; j < n; j++) {
        const ast_agg *g = c->aggs[j];
        rf_aggfn fn = r->aggs[j] = agg_from_name(g->fn);
        if (fn == RF_AGG_NONE) {
            rf_diag_error(ck->diag, g->fn_loc,
                          "unknown aggregate function '%s' (expected count, total, min, max, avg or "
                          "count_distinct)", g->fn);
            ok = false;
        } else if (fn == RF_AGG_COUNT && g->nargs > 0) {
            rf_diag_error(ck->diag, g->args[0]->loc, "count() takes no argument");
            ok = false;
        } else if (fn != RF_AGG_COUNT && g->nargs == 0) {
            rf_diag_error(ck->diag, g->fn_loc, "%s() needs an argument", g->fn);
            ok = false;
        } else if (g->nargs > 1) {
            rf_diag_error(ck->diag, g->args[1]->loc, "%s() takes one argument", g->fn);
            ok = false;
        }
        for (int i = 0; i < j; i++)
            if (strcmp(c->aggs[i]->var, g->var) == 0) {
                rf_diag_error(ck->diag, g->var_loc, "duplicate aggregate result '%s'", g->var);
                ok = false;
                break;
            }
    }
    if (!ok)
        return false;
    /* The head ends with the results, in order. */
    const ast_atom *h = c->head;
    int nkeys = h->nargs - n;
    for (int j = 0; j < n; j++) {
        const ast_agg *g = c->aggs[j];
        const ast_expr *at = nkeys + j >= 0 ? h->args[nkeys + j] : NULL;
        if (at && at->kind == AST_VAR && strcmp(at->text, g->var) == 0)
            continue;
        if (n == 1) {
            rf_diag_error(ck->diag, at ? at->loc : h->loc,
                          "the last head argument must be the aggregate's result '%s'", g->var);
        } else {
            char list[512] = "";
            for (int i = 0; i < n; i++) {
                size_t len = strlen(list);
                snprintf(list + len, sizeof list - len, "%s'%s'", i ? ", " : "", c->aggs[i]->var);
            }
            rf_diag_error(ck->diag, at ? at->loc : h->loc,
                          "the last %d head arguments must be the aggregates' results %s, in this order", n,
                          list);
        }
        return false;
    }
    for (int j = 0; j < n; j++) {
        const ast_agg *g = c->aggs[j];
        /* (not in the body either: agg_result_in_body) */
        for (int i = 0; i < nkeys; i++)
            if (expr_mentions(h->args[i], g->var)) {
                rf_diag_error(ck->diag, h->args[i]->loc, "aggregate result '%s' cannot be a group key",
                              g->var);
                return false;
            }
    }
    for (int j = 0; j < n; j++) {
        const ast_agg *g = c->aggs[j];
        rf_aggfn fn = r->aggs[j];
        rf_type want = head->types[nkeys + j];
        const ast_expr *res = h->args[nkeys + j];
        if (fn == RF_AGG_COUNT || fn == RF_AGG_COUNT_DISTINCT || fn == RF_AGG_AVG) {
            rf_type makes = fn == RF_AGG_AVG ? RF_TYPE_FLOAT64 : RF_TYPE_INT64;
            if (want != makes) {
                rf_diag_error(ck->diag, res->loc, "type mismatch: %s() produces %s, but '%s' is %s", g->fn,
                              rf_type_name(makes), g->var, rf_type_name(want));
                ok = false;
            }
        }
        if (fn == RF_AGG_COUNT)
            continue;
        ast_expr *arg = g->args[0];
        const ast_expr *u = first_unbound(rc, arg);
        if (u && u->kind == AST_VAR) {
            unbound_error(rc, u, "variable '%s' is not bound by a positive atom");
            ok = false;
            continue;
        }
        int t = infer(rc, arg);
        if (t == RF_TYPE_INVALID) {
            ok = false;
            continue;
        }
        if (fn == RF_AGG_TOTAL && !rf_type_is_numeric(want)) {
            rf_diag_error(ck->diag, res->loc, "type mismatch: total() needs numbers, but '%s' is %s", g->var,
                          rf_type_name(want));
            ok = false;
        }
        if (fn == RF_AGG_AVG && !numeric_or_lit(t)) {
            rf_diag_error(ck->diag, arg->loc, "type mismatch: avg() needs numbers, found %s", type_desc(t));
            ok = false;
        }
        /* lowered by add_rule once variables of literal type are typed */
    }
    for (int j = 0; j < n; j++)
        add_var(rc, rf_strdup(c->aggs[j]->var), head->types[nkeys + j], false);
    return ok;
}

static void free_items(body_item *items, int n)
{
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < items[i].out.nargs; j++)
            rf_expr_free(items[i].out.args[j]);
        free(items[i].out.args);
        rf_expr_free(items[i].out.expr);
    }
    free(items);
}

static bool is_expression(const ast_expr *e)
{
    return e->kind == AST_UNARY || e->kind == AST_BINARY || (e->kind == AST_CALL && !is_date_literal(e));
}

/* An aggregate's result used in the body (an error at the first literal
 * that mentions it): true after reporting it. */
static bool agg_result_in_body(checker *ck, const ast_clause *c)
{
    for (int j = 0; j < c->naggs; j++)
        for (int i = 0; i < c->nbody; i++)
            if (literal_mentions(c->body[i], c->aggs[j]->var)) {
                rf_diag_error(ck->diag, c->body[i]->loc, "aggregate result '%s' must not appear in the body",
                              c->aggs[j]->var);
                return true;
            }
    return false;
}

static void add_rule(checker *ck, const ast_clause *c)
{
    if (c->has_agg && agg_result_in_body(ck, c))
        return;   /* its other errors would be echoes ("not bound") */
    int errors_before = ck->diag->errors;
    rule_ctx rc = { ck, c, { 0 }, NULL, 0, 0, false };
    rf_rule r;
    memset(&r, 0, sizeof r);
    r.loc = c->loc;
    r.head = resolve_atom(ck, c->head);

    /* The literals as they read: an atom naming a function is a condition. */
    const ast_literal **body = rf_calloc(c->nbody > 0 ? (size_t)c->nbody : 1, sizeof *body);
    call_lit *calls = rf_calloc(c->nbody > 0 ? (size_t)c->nbody : 1, sizeof *calls);
    for (int i = 0; i < c->nbody; i++) {
        const ast_literal *l = c->body[i];
        body[i] = l;
        if (l->atom && !l->atom->functional && rf_program_find_pred(ck->prog, l->atom->name) < 0 &&
            find_function(l->atom->name)) {
            make_call_lit(&calls[i], l);
            body[i] = &calls[i].lit;
        }
    }

    /* The body items: the written literals, plus one made for each
     * expression argument of an atom (see synth_lit), placed after a
     * positive atom and before a negated one. */
    int nsynth = 0;
    for (int i = 0; i < c->nbody; i++)
        if (body[i]->atom)
            for (int j = 0; j < body[i]->atom->nargs; j++)
                nsynth += is_expression(body[i]->atom->args[j]);
    synth_lit *synth = rf_calloc(nsynth > 0 ? (size_t)nsynth : 1, sizeof *synth);
    int n = c->nbody + nsynth;
    body_item *items = rf_calloc(n > 0 ? (size_t)n : 1, sizeof *items);
    rc.items = items;
    rc.nitems = n;
    int k = 0, ks = 0;
    for (int i = 0; i < c->nbody; i++) {
        const ast_literal *l = body[i];
        bool negated = l->kind == AST_LIT_NEGATED;
        int nx = 0;
        if (l->atom)
            for (int j = 0; j < l->atom->nargs; j++)
                nx += is_expression(l->atom->args[j]);
        int at = negated ? k + nx : k;     /* the atom's own item */
        int next = negated ? k : k + 1;    /* its first synthetic item */
        items[at].ast = l;
        items[at].parent = -1;
        for (int j = 0; l->atom && j < l->atom->nargs; j++) {
            ast_expr *e = l->atom->args[j];
            if (!is_expression(e))
                continue;
            synth_lit *sl = &synth[ks++];
            snprintf(sl->name, sizeof sl->name, "$%d", ks);
            sl->var.kind = AST_VAR;
            sl->var.text = sl->name;
            sl->var.textlen = strlen(sl->name);
            sl->var.depth = 1;
            sl->var.loc = e->loc;
            sl->eq.kind = AST_BINARY;
            sl->eq.op = RF_EX_EQ;
            sl->eq.a = &sl->var;
            sl->eq.b = e;
            sl->eq.depth = e->depth + 1;
            sl->eq.loc = e->loc;
            sl->lit.kind = AST_LIT_COND;
            sl->lit.cond = &sl->eq;
            sl->lit.loc = e->loc;
            items[next].ast = &sl->lit;
            items[next].parent = at;
            items[next].col = j;
            next++;
        }
        k += 1 + nx;
    }
    for (int i = 0; i < n; i++) {
        items[i].pred = -1;
        items[i].var = -1;
        items[i].fixed_type = RF_TYPE_INVALID;
        items[i].out.loc = items[i].ast->loc;
        items[i].valid = true;
    }
    for (int i = 0; i < n; i++)
        if (items[i].ast->kind == AST_LIT_ATOM) {
            items[i].kind = RF_LIT_ATOM;
            items[i].valid = false;
            bind_atom(&rc, &items[i]);
            if (!items[i].valid)
                rc.atom_failed = true;
        } else if (items[i].ast->kind == AST_LIT_NEGATED) {
            items[i].kind = RF_LIT_NEGATED;
            items[i].pred = resolve_atom(ck, items[i].ast->atom);
        }
    for (int i = 0; i < n; i++) {
        body_item *it = &items[i];
        if (it->ast->kind != AST_LIT_COND)
            continue;
        const body_item *owner = it->parent >= 0 ? &items[it->parent] : NULL;
        if (owner && (owner->kind == RF_LIT_ATOM ? !owner->valid : owner->pred < 0)) {
            it->valid = false; /* the atom's error says it all */
            continue;
        }
        if (owner && owner->kind == RF_LIT_NEGATED)
            it->fixed_type = ck->prog->preds[owner->pred].types[it->col];
        const ast_expr *w = find_wildcard(it->ast->cond);
        if (w) {
            bool cmp = it->ast->cond->kind == AST_BINARY && rf_exop_is_comparison(it->ast->cond->op) &&
                       (it->ast->cond->a == w || it->ast->cond->b == w);
            rf_diag_error(ck->diag, w->loc, !owner && cmp ? "'_' cannot be used in a comparison"
                                                          : "'_' cannot be used in an expression");
            it->valid = false;
        }
    }
    classify_conditions(&rc, items, n);
    for (int i = 0; i < n; i++)
        if (items[i].ast->kind == AST_LIT_COND && items[i].valid)
            infer_condition(&rc, &items[i]);

    /* Head and aggregate: checked and typed here, lowered below. */
    const rf_pred *hp = r.head >= 0 ? &ck->prog->preds[r.head] : NULL;
    bool head_ok = hp && (!c->has_agg || check_aggregate(&rc, &r, hp));
    if (hp) {
        r.head_args = rf_calloc(hp->arity > 0 ? (size_t)hp->arity : 1, sizeof(rf_expr *));
        for (int i = 0; i < hp->arity && head_ok; i++) {
            ast_expr *e = c->head->args[i];
            const ast_expr *w = find_wildcard(e);
            const ast_expr *u = first_unbound(&rc, e);
            e->type = RF_TYPE_INVALID;
            if (w)
                rf_diag_error(ck->diag, w->loc, "'_' cannot be used in a rule head");
            else if (u)
                unbound_error(&rc, u, "head variable '%s' is not bound in the body");
            else
                infer(&rc, e);
        }
    }

    resolve_literal_vars(&rc, items, n, &r, head_ok ? hp : NULL);

    for (int i = 0; i < n; i++) {
        body_item *it = &items[i];
        if (it->ast->kind == AST_LIT_COND && it->valid)
            lower_condition(&rc, it);
    }
    for (int i = 0; i < n; i++)
        if (items[i].ast->kind == AST_LIT_NEGATED) {
            items[i].valid = false;
            check_negated(&rc, &items[i]);
        }
    if (head_ok) {
        for (int i = 0; i < hp->arity; i++) {
            ast_expr *e = c->head->args[i];
            if (e->type != RF_TYPE_INVALID && infer(&rc, e) != RF_TYPE_INVALID)
                r.head_args[i] = lower_as(&rc, e, hp->types[i]);
        }
        for (int j = 0; j < r.naggs; j++) {
            ast_expr *arg = c->aggs[j]->nargs ? c->aggs[j]->args[0] : NULL;
            int t = arg ? infer(&rc, arg) : RF_TYPE_INVALID;
            if (t != RF_TYPE_INVALID)
                r.agg_args[j] = lower_as(&rc, arg, agg_arg_type(r.aggs[j], t,
                                                                hp->types[hp->arity - r.naggs + j]));
        }
    }

    if (ck->diag->errors == errors_before) {
        r.body = order_body(&rc, items, n, &r.nbody);
        r.nvars = (int)rc.vars.len;
        r.var_names = rf_calloc(rc.vars.len ? rc.vars.len : 1, sizeof(char *));
        r.var_types = rf_calloc(rc.vars.len ? rc.vars.len : 1, sizeof(rf_type));
        for (size_t i = 0; i < rc.vars.len; i++) {
            r.var_names[i] = rc.vars.items[i].name;
            r.var_types[i] = (rf_type)rc.vars.items[i].type;
        }
        rf_program *prog = ck->prog;
        prog->rules = rf_realloc(prog->rules, rf_mul_size((size_t)prog->nrules + 1, sizeof *prog->rules));
        prog->rules[prog->nrules++] = r;
        prog->preds[r.head].has_rules = true;
    } else {
        if (r.head >= 0)
            for (int i = 0; i < ck->prog->preds[r.head].arity; i++)
                rf_expr_free(r.head_args[i]);
        free(r.head_args);
        for (int j = 0; j < r.naggs; j++)
            rf_expr_free(r.agg_args[j]);
        free(r.aggs);
        free(r.agg_args);
        for (size_t i = 0; i < rc.vars.len; i++)
            free(rc.vars.items[i].name);
    }
    free_items(items, n);
    free(synth);
    free(body);
    free(calls);
    RF_VEC_FREE(rc.vars);
}

/* ------------------------------------------------------------------ main */

bool rf_check(rf_program *prog, const ast_program *ast, rf_diag *diag)
{
    int errors_before = diag->errors;
    checker ck = { prog, diag, 0, NULL, NULL, NULL, NULL, { NULL, 0, 0 } };
    for (int i = 0; i < ast->nclauses; i++)
        if (ast->clauses[i]->kind == AST_DECL)
            declare(&ck, ast->clauses[i]);
    for (int i = 0; i < ast->nclauses; i++) {
        const ast_clause *c = ast->clauses[i];
        switch (c->kind) {
        case AST_DECL: break;
        case AST_FACT: add_fact(&ck, c); break;
        case AST_RULE: add_rule(&ck, c); break;
        case AST_DIRECTIVE: directive(&ck, c); break;
        }
    }
    check_fact_keys(&ck);
    RF_VEC_FREE(ck.ffacts);
    free(ck.facts_cap);
    free(ck.decls);
    free(ck.order_loc);
    free(ck.limit_loc);
    return diag->errors == errors_before;
}
