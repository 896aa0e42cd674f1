#include "rf_expr.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static rf_expr *node(rf_exop op, rf_type t)
{
    rf_expr *e = rf_calloc(1, sizeof *e);
    e->op = op;
    e->type = t;
    e->index = -1;
    return e;
}

rf_expr *rf_expr_const(rf_type t, rf_word v)
{
    rf_expr *e = node(RF_EX_CONST, t);
    e->value = v;
    return e;
}

rf_expr *rf_expr_leaf(rf_exop op, rf_type t, int index)
{
    rf_expr *e = node(op, t);
    e->index = index;
    return e;
}

rf_expr *rf_expr_unary(rf_exop op, rf_type t, rf_expr *a)
{
    rf_expr *e = node(op, t);
    e->a = a;
    return e;
}

rf_expr *rf_expr_binary(rf_exop op, rf_type t, rf_expr *a, rf_expr *b)
{
    rf_expr *e = node(op, t);
    e->a = a;
    e->b = b;
    return e;
}

rf_expr *rf_expr_clone(const rf_expr *e)
{
    if (!e)
        return NULL;
    rf_expr *c = rf_malloc(sizeof *c);
    *c = *e;
    c->a = rf_expr_clone(e->a);
    c->b = rf_expr_clone(e->b);
    return c;
}

void rf_expr_free(rf_expr *e)
{
    if (!e)
        return;
    rf_expr_free(e->a);
    rf_expr_free(e->b);
    free(e);
}

bool rf_expr_equal(const rf_expr *a, const rf_expr *b)
{
    if (!a || !b)
        return a == b;
    if (a->op != b->op || a->type != b->type)
        return false;
    if (a->op == RF_EX_CONST && a->value != b->value)
        return false;
    if ((a->op == RF_EX_VAR || a->op == RF_EX_COL) && a->index != b->index)
        return false;
    return rf_expr_equal(a->a, b->a) && rf_expr_equal(a->b, b->b);
}

int rf_expr_arity(rf_exop op)
{
    switch (op) {
    case RF_EX_CONST:
    case RF_EX_VAR:
    case RF_EX_COL:
        return 0;
    case RF_EX_NEG:
    case RF_EX_NOT:
    case RF_EX_CAST:
        return 1;
    default:
        return 2;
    }
}

const char *rf_exop_symbol(rf_exop op)
{
    static const char *const sym[RF_EX_COUNT_] = {
        [RF_EX_CONST] = "const", [RF_EX_VAR] = "var", [RF_EX_COL] = "col",
        [RF_EX_NEG] = "-", [RF_EX_NOT] = "!", [RF_EX_CAST] = "cast",
        [RF_EX_ADD] = "+", [RF_EX_SUB] = "-", [RF_EX_MUL] = "*",
        [RF_EX_DIV] = "/", [RF_EX_MOD] = "%", [RF_EX_EQ] = "=",
        [RF_EX_NE] = "!=", [RF_EX_LT] = "<", [RF_EX_LE] = "<=",
        [RF_EX_GT] = ">", [RF_EX_GE] = ">=", [RF_EX_AND] = "&&", [RF_EX_OR] = "||",
    };
    return (unsigned)op < RF_EX_COUNT_ ? sym[op] : "?";
}

bool rf_exop_is_comparison(rf_exop op) { return op >= RF_EX_EQ && op <= RF_EX_GE; }

void rf_expr_visit_leaves(rf_expr *e, void (*fn)(rf_expr *leaf, void *ctx), void *ctx)
{
    if (!e)
        return;
    if (e->op == RF_EX_VAR || e->op == RF_EX_COL)
        fn(e, ctx);
    rf_expr_visit_leaves(e->a, fn, ctx);
    rf_expr_visit_leaves(e->b, fn, ctx);
}

int rf_expr_max_index(const rf_expr *e)
{
    if (!e)
        return -1;
    int m = (e->op == RF_EX_VAR || e->op == RF_EX_COL) ? e->index : -1;
    int x = rf_expr_max_index(e->a), y = rf_expr_max_index(e->b);
    if (x > m) m = x;
    if (y > m) m = y;
    return m;
}

void rf_expr_print(const rf_expr *e, FILE *out, const char *const *var_names)
{
    if (!e) {
        fputs("true", out);
        return;
    }
    char buf[64];
    switch (e->op) {
    case RF_EX_CONST:
        if (e->type == RF_TYPE_STRING) {
            fputc('"', out);
            for (const char *s = rf_str_get(e->value); *s; s++) {
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
        } else {
            rf_value_format(e->type, e->value, buf, sizeof buf);
            fputs(buf, out);
        }
        return;
    case RF_EX_VAR:
        if (var_names)
            fputs(var_names[e->index], out);
        else
            fprintf(out, "v%d", e->index);
        return;
    case RF_EX_COL:
        fprintf(out, "$%d", e->index);
        return;
    case RF_EX_NEG:
    case RF_EX_NOT:
        fputs(rf_exop_symbol(e->op), out);
        rf_expr_print(e->a, out, var_names);
        return;
    case RF_EX_CAST:
        fprintf(out, "%s(", rf_type_name(e->type));
        rf_expr_print(e->a, out, var_names);
        fputc(')', out);
        return;
    default:
        fputc('(', out);
        rf_expr_print(e->a, out, var_names);
        fprintf(out, " %s ", rf_exop_symbol(e->op));
        rf_expr_print(e->b, out, var_names);
        fputc(')', out);
        return;
    }
}

/* Wraps an int64 result to the width of t. */
static rf_word wrap_int(rf_type t, uint64_t v)
{
    if (t == RF_TYPE_INT32)
        return rf_word_from_int((int64_t)(int32_t)(uint32_t)v);
    return (rf_word)v;
}

bool rf_scalar_binary(rf_exop op, rf_type t, rf_word a, rf_word b, rf_word *out, rf_status *st)
{
    if (rf_exop_is_comparison(op)) {
        int c;
        if (op == RF_EX_EQ || op == RF_EX_NE)
            c = (a == b) ? 0 : 1; /* words are canonical: equality is bitwise */
        else
            c = rf_value_compare(t, a, b);
        bool r;
        switch (op) {
        case RF_EX_EQ: r = c == 0; break;
        case RF_EX_NE: r = c != 0; break;
        case RF_EX_LT: r = c < 0; break;
        case RF_EX_LE: r = c <= 0; break;
        case RF_EX_GT: r = c > 0; break;
        default: r = c >= 0; break;
        }
        *out = r;
        return true;
    }
    if (op == RF_EX_AND) { *out = (a && b); return true; }
    if (op == RF_EX_OR) { *out = (a || b); return true; }
    if (t == RF_TYPE_FLOAT64) {
        double x = rf_word_to_double(a), y = rf_word_to_double(b), r;
        switch (op) {
        case RF_EX_ADD: r = x + y; break;
        case RF_EX_SUB: r = x - y; break;
        case RF_EX_MUL: r = x * y; break;
        case RF_EX_DIV:
            if (y == 0.0)
                return rf_fail(st, RF_EXIT_RUNTIME_ERROR, "division by zero");
            r = x / y;
            break;
        case RF_EX_MOD:
            if (y == 0.0)
                return rf_fail(st, RF_EXIT_RUNTIME_ERROR, "division by zero");
            r = fmod(x, y);
            break;
        default:
            return rf_fail(st, RF_EXIT_RUNTIME_ERROR, "bad float operator");
        }
        if (!isfinite(r))
            return rf_fail(st, RF_EXIT_RUNTIME_ERROR, "float64 overflow");
        *out = rf_word_from_double(r);
        return true;
    }
    uint64_t x = a, y = b;
    int64_t sx = (int64_t)a, sy = (int64_t)b;
    switch (op) {
    case RF_EX_ADD: *out = wrap_int(t, x + y); return true;
    case RF_EX_SUB: *out = wrap_int(t, x - y); return true;
    case RF_EX_MUL: *out = wrap_int(t, x * y); return true;
    case RF_EX_DIV:
    case RF_EX_MOD:
        if (sy == 0)
            return rf_fail(st, RF_EXIT_RUNTIME_ERROR, "division by zero");
        if (sy == -1) /* avoids INT64_MIN / -1 overflow; wraps like + */
            *out = op == RF_EX_DIV ? wrap_int(t, 0 - x) : 0;
        else
            *out = wrap_int(t, (uint64_t)(op == RF_EX_DIV ? sx / sy : sx % sy));
        return true;
    default:
        return rf_fail(st, RF_EXIT_RUNTIME_ERROR, "bad integer operator");
    }
}

bool rf_scalar_unary(rf_exop op, rf_type from, rf_type to, rf_word a, rf_word *out, rf_status *st)
{
    switch (op) {
    case RF_EX_NOT:
        *out = !a;
        return true;
    case RF_EX_NEG:
        if (to == RF_TYPE_FLOAT64)
            *out = rf_word_from_double(-rf_word_to_double(a));
        else
            *out = wrap_int(to, 0 - (uint64_t)a);
        return true;
    case RF_EX_CAST:
        if (from == to || (rf_type_is_integer(from) && to == RF_TYPE_INT64)) {
            *out = a;
            return true;
        }
        if (rf_type_is_integer(from) && to == RF_TYPE_FLOAT64) {
            *out = rf_word_from_double((double)rf_word_to_int(a));
            return true;
        }
        if (from == RF_TYPE_INT64 && to == RF_TYPE_INT32) {
            int64_t v = rf_word_to_int(a);
            if (v < INT32_MIN || v > INT32_MAX)
                return rf_fail(st, RF_EXIT_RUNTIME_ERROR, "value %" PRId64 " out of range for int32", v);
            *out = a;
            return true;
        }
        if (from == RF_TYPE_FLOAT64 && rf_type_is_integer(to)) {
            double d = trunc(rf_word_to_double(a));
            double lo = to == RF_TYPE_INT32 ? (double)INT32_MIN : -9223372036854775808.0;
            double hi = to == RF_TYPE_INT32 ? (double)INT32_MAX : 9223372036854775807.0;
            if (!(d >= lo && d < hi + (to == RF_TYPE_INT32 ? 1.0 : 0.0)))
                return rf_fail(st, RF_EXIT_RUNTIME_ERROR, "value %g out of range for %s",
                               rf_word_to_double(a), rf_type_name(to));
            *out = rf_word_from_int((int64_t)d);
            return true;
        }
        return rf_fail(st, RF_EXIT_RUNTIME_ERROR, "cannot convert %s to %s", rf_type_name(from),
                       rf_type_name(to));
    default:
        return rf_fail(st, RF_EXIT_RUNTIME_ERROR, "bad unary operator");
    }
}

bool rf_expr_eval(const rf_expr *e, const rf_word *row, rf_word *out, rf_status *st)
{
    rf_word a, b;
    switch (rf_expr_arity(e->op)) {
    case 0:
        *out = e->op == RF_EX_CONST ? e->value : row[e->index];
        return true;
    case 1:
        if (!rf_expr_eval(e->a, row, &a, st))
            return false;
        return rf_scalar_unary(e->op, e->a->type, e->type, a, out, st);
    default:
        if (!rf_expr_eval(e->a, row, &a, st))
            return false;
        /* && and || short-circuit so that `y != 0 && x / y > 1` is safe. */
        if (e->op == RF_EX_AND && !a) { *out = 0; return true; }
        if (e->op == RF_EX_OR && a) { *out = 1; return true; }
        if (!rf_expr_eval(e->b, row, &b, st))
            return false;
        return rf_scalar_binary(e->op, rf_exop_is_comparison(e->op) ? e->a->type : e->type, a, b, out, st);
    }
}
