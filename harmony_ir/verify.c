/* Structural checks of a Harmony IR program. The loader runs this on every
 * .rfx file, so nothing here may trust a count or an index it has not
 * checked itself: every access below is preceded by its bounds check. */
#include "hir.h"
#include "rf_scalar_ops.h" /* date range */

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct vctx {
    const rf_hprogram *p;
    rf_status *st;
    int b, k, m;             /* where we are (m: member of a fused kernel) */
} vctx;

static bool bad(vctx *c, const char *fmt, ...) RF_PRINTF(2, 3);
static bool bad(vctx *c, const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    const char *label = NULL;
    if (c->b >= 0)
        label = c->p->blocks[c->b].label;
    if (c->b >= 0 && c->k >= 0 && c->m >= 0)
        return rf_fail(c->st, RF_EXIT_COMPILE_ERROR, "invalid Harmony IR: block %d (%s), kernel %d, member %d: %s",
                       c->b, label ? label : "?", c->k, c->m, msg);
    if (c->b >= 0 && c->k >= 0)
        return rf_fail(c->st, RF_EXIT_COMPILE_ERROR, "invalid Harmony IR: block %d (%s), kernel %d: %s",
                       c->b, label ? label : "?", c->k, msg);
    if (c->b >= 0)
        return rf_fail(c->st, RF_EXIT_COMPILE_ERROR, "invalid Harmony IR: block %d (%s): %s",
                       c->b, label ? label : "?", msg);
    return rf_fail(c->st, RF_EXIT_COMPILE_ERROR, "invalid Harmony IR: %s", msg);
}

static bool valid_type(int t) { return t > RF_TYPE_INVALID && t < RF_TYPE_COUNT_; }
static bool valid_var(const rf_hprogram *p, int v) { return v >= 0 && v < p->nvars; }

static bool check_word(rf_type t, rf_word w)
{
    switch (t) {
    case RF_TYPE_INT32: return (rf_word)(int64_t)(int32_t)w == w;
    case RF_TYPE_BOOL: return w <= 1;
    case RF_TYPE_STRING: return w < rf_str_count();
    case RF_TYPE_FLOAT64: {
        double d = rf_word_to_double(w);
        return !isnan(d) && !isinf(d) && w != (rf_word)1 << 63;
    }
    case RF_TYPE_DATE:
        return (int64_t)w >= RF_DATE_MIN_DAYS && (int64_t)w <= RF_DATE_MAX_DAYS;
    default:
        return !rf_type_is_decimal(t) || w != (rf_word)1 << 63; /* decimals are symmetric */
    }
}

static bool check_var(vctx *c, int i)
{
    const rf_hvar *v = &c->p->vars[i];
    if (!v->name)
        return bad(c, "variable %d has no name", i);
    if (v->arity < 0 || (v->arity > 0 && !v->types))
        return bad(c, "variable %s: bad arity %d", v->name, v->arity);
    for (int j = 0; j < v->arity; j++)
        if (!valid_type(v->types[j]))
            return bad(c, "variable %s: column %d has an invalid type", v->name, j);
    if ((unsigned)v->input_format > RF_FORMAT_TBL)
        return bad(c, "variable %s: bad input format", v->name);
    if (v->arity == 0 && v->nfacts > 1)
        return bad(c, "variable %s: %zu facts of arity 0", v->name, v->nfacts);
    if (v->nfacts > 0 && v->arity > 0) {
        if (!v->facts)
            return bad(c, "variable %s: facts missing", v->name);
        for (size_t r = 0; r < v->nfacts; r++)
            for (int j = 0; j < v->arity; j++)
                if (!check_word(v->types[j], v->facts[r * (size_t)v->arity + (size_t)j]))
                    return bad(c, "variable %s: fact %zu column %d is not a valid %s", v->name, r, j,
                               rf_type_name(v->types[j]));
    }
    if (v->limit < -1 || v->norder < 0 || v->norder > v->arity ||
        (v->norder > 0 && (!v->order_cols || !v->order_desc)))
        return bad(c, "variable %s: bad output order or limit", v->name);
    for (int j = 0; j < v->norder; j++) {
        if (v->order_cols[j] < 0 || v->order_cols[j] >= v->arity)
            return bad(c, "variable %s: order column %d out of range", v->name, v->order_cols[j]);
        for (int k = 0; k < j; k++)
            if (v->order_cols[k] == v->order_cols[j])
                return bad(c, "variable %s: order column %d named twice", v->name, v->order_cols[j]);
    }
    return true;
}

/* Checks code over `ncols` input columns of `types`; `want` is the result
 * type or RF_TYPE_INVALID for any. */
static bool check_code(vctx *c, const rf_code *code, int ncols, int ninputs, const rf_type *types,
                       rf_type want, const char *what)
{
    if (code->n < 0 || (code->n > 0 && !code->ins))
        return bad(c, "%s: bad code", what);
    if (code->n == 0)
        return true;
    if (rf_code_check(code, ncols) < 0)
        return bad(c, "%s: malformed code (over %d columns)", what, ncols);
    for (int i = 0; i < code->n; i++) {
        const rf_instr *in = &code->ins[i];
        if (in->pad_ != 0)
            return bad(c, "%s: malformed instruction", what);
        if (in->op == RF_EX_COL && in->type != types[in->index])
            return bad(c, "%s: column $%d is %s, code says %s", what, (int)in->index,
                       rf_type_name(types[in->index]), rf_type_name((rf_type)in->type));
        if (in->op == RF_EX_ROWID && in->index >= ninputs)
            return bad(c, "%s: row position of input %d of %d", what, (int)in->index, ninputs);
        if (in->op == RF_EX_CONST && !check_word((rf_type)in->type, in->value))
            return bad(c, "%s: invalid %s constant", what, rf_type_name((rf_type)in->type));
    }
    rf_type got = (rf_type)code->ins[code->n - 1].type;
    if (want != RF_TYPE_INVALID && got != want)
        return bad(c, "%s: result is %s, expected %s", what, rf_type_name(got), rf_type_name(want));
    return true;
}

static bool same_types(const rf_hvar *a, const rf_hvar *b, int n)
{
    if (n > a->arity || n > b->arity)
        return false;
    return n == 0 || memcmp(a->types, b->types, (size_t)n * sizeof *a->types) == 0;
}

/* A MAP whose projection is every column of in0 in order. */
static bool map_is_identity(const rf_kernel *k, int arity)
{
    if (k->nproj != arity)
        return false;
    for (int i = 0; i < k->nproj; i++)
        if (rf_code_as_column(&k->proj[i]) != i)
            return false;
    return true;
}

static bool check_fused(vctx *c, const rf_kernel *k);

/* A MULTIJOIN: n sorted inputs, each a trie in the variable order (its
 * columns bind strictly increasing variables), every variable bound by
 * some input with one type, code over the variables, unsorted output; or,
 * counting its bindings (mj->count), no code and one int64 column (one
 * row: sorted or not). */
static bool check_multijoin(vctx *c, const rf_kernel *k)
{
    const rf_hprogram *p = c->p;
    const rf_multijoin *mj = k->mj;
    if (!valid_var(p, k->out) || p->vars[k->out].internal)
        return bad(c, "MULTIJOIN: output variable %d out of range or internal", k->out);
    const rf_hvar *out = &p->vars[k->out];
    if (mj->count && (out->arity != 1 || !out->types || out->types[0] != RF_TYPE_INT64 || k->nproj != 0 ||
                      k->filter.n != 0))
        return bad(c, "MULTIJOIN: counts its bindings into %s, which takes one int64 column and no code", out->name);
    if (out->sorted && !mj->count)
        return bad(c, "MULTIJOIN: writes sorted variable %s but its result is not sorted", out->name);
    if (k->in[0] != -1 || k->in[1] != -1)
        return bad(c, "MULTIJOIN: inputs belong in its input list, not in[]");
    if (mj->nin < 1 || mj->nin > RF_MULTIJOIN_MAX_IN || !mj->in || !mj->in_first || !mj->in_vars)
        return bad(c, "MULTIJOIN: %d inputs (1..%d)", mj->nin, RF_MULTIJOIN_MAX_IN);
    if (mj->nvars < 1 || mj->nvars > RF_MULTIJOIN_MAX_VARS)
        return bad(c, "MULTIJOIN: %d variables (1..%d)", mj->nvars, RF_MULTIJOIN_MAX_VARS);
    if (k->nkeys != 0 || k->naggs != 0 || k->aggfn || k->agg_arg)
        return bad(c, "MULTIJOIN: has keys or an aggregate");
    rf_type types[RF_MULTIJOIN_MAX_VARS];
    for (int x = 0; x < mj->nvars; x++)
        types[x] = RF_TYPE_INVALID;
    if (mj->in_first[0] != 0)
        return bad(c, "MULTIJOIN: variable list does not start at 0");
    for (int i = 0; i < mj->nin; i++) {
        int v = mj->in[i];
        if (!valid_var(p, v))
            return bad(c, "MULTIJOIN: input %d is variable %d, out of range", i, v);
        const rf_hvar *hv = &p->vars[v];
        if (!hv->sorted || hv->internal || v == k->out)
            return bad(c, "MULTIJOIN: input %s is %s", hv->name,
                       !hv->sorted ? "not sorted" : hv->internal ? "internal to a fused kernel" : "its output");
        if (hv->arity < 1 || mj->in_first[i + 1] - mj->in_first[i] != hv->arity)
            return bad(c, "MULTIJOIN: input %s (arity %d) binds %d variables", hv->name, hv->arity,
                       mj->in_first[i + 1] - mj->in_first[i]);
        for (int j = 0; j < hv->arity; j++) {
            int x = mj->in_vars[mj->in_first[i] + j];
            if (x < 0 || x >= mj->nvars || (j > 0 && x <= mj->in_vars[mj->in_first[i] + j - 1]))
                return bad(c, "MULTIJOIN: input %s column %d binds variable %d: out of range or not "
                              "after the column before (each input is a trie in the variable order)",
                           hv->name, j, x);
            if (types[x] != RF_TYPE_INVALID && types[x] != hv->types[j])
                return bad(c, "MULTIJOIN: variable %d is %s and %s", x, rf_type_name(types[x]),
                           rf_type_name(hv->types[j]));
            types[x] = hv->types[j];
        }
    }
    for (int x = 0; x < mj->nvars; x++)
        if (types[x] == RF_TYPE_INVALID)
            return bad(c, "MULTIJOIN: variable %d is bound by no input", x);
    if (mj->alt_order) {
        /* a permutation of the variables that never makes a cross product */
        unsigned seen = 0;
        for (int k = 0; k < mj->nvars; k++) {
            int x = mj->alt_order[k];
            if (x < 0 || x >= mj->nvars || (seen >> x & 1))
                return bad(c, "MULTIJOIN: its second variable order is not a permutation of its %d variables",
                           mj->nvars);
            seen |= 1u << x;
        }
        if (!rf_mj_order_connected(mj->nin, mj->in_first, mj->in_vars, mj->nvars, mj->alt_order))
            return bad(c, "MULTIJOIN: its second variable order brings in a variable that no input links to "
                          "one bound before it");
    }
    if (mj->count)
        return true;
    if (k->nproj != out->arity || (k->nproj > 0 && !k->proj))
        return bad(c, "MULTIJOIN: %d projections for %s of arity %d", k->nproj, out->name, out->arity);
    /* (no input row has a position: its rows are bindings) */
    if (!check_code(c, &k->filter, mj->nvars, 0, types, RF_TYPE_BOOL, "filter"))
        return false;
    for (int i = 0; i < k->nproj; i++) {
        char what[32];
        snprintf(what, sizeof what, "projection %d", i);
        if (k->proj[i].n == 0)
            return bad(c, "MULTIJOIN: %s is empty", what);
        if (!check_code(c, &k->proj[i], mj->nvars, 0, types, out->types[i], what))
            return false;
    }
    return true;
}

static bool check_kernel(vctx *c, const rf_kernel *k)
{
    const rf_hprogram *p = c->p;
    if ((unsigned)k->op >= RF_K_COUNT_)
        return bad(c, "bad op %d", (int)k->op);
    const char *name = rf_kop_name(k->op);
    if ((unsigned)k->partition > RF_PART_GROUP || (unsigned)k->gather > RF_GATHER_SET ||
        ((k->gather == RF_GATHER_REDUCE || k->gather == RF_GATHER_SET) && k->op != RF_K_FUSED))
        return bad(c, "%s: bad partition/gather stage", name);
    if ((k->op == RF_K_FUSED) != (k->fused != NULL))
        return bad(c, "%s: %s", name, k->fused ? "holds fused members" : "has no members");
    if (k->nfree < 0 || (k->nfree > 0 && !k->frees))
        return bad(c, "%s: bad free list", name);
    for (int i = 0; i < k->nfree; i++)
        if (!valid_var(p, k->frees[i]) || p->vars[k->frees[i]].is_output)
            return bad(c, "%s: frees variable %d, out of range or an output", name, k->frees[i]);
    if (k->op == RF_K_FUSED)
        return check_fused(c, k);
    if ((k->op == RF_K_MULTIJOIN) != (k->mj != NULL))
        return bad(c, "%s: %s", name, k->mj ? "holds a multiway join's inputs" : "has no input list");
    if (k->op == RF_K_MULTIJOIN)
        return check_multijoin(c, k);
    bool check = k->op == RF_K_CHECK_KEYS;   /* the one op without an output */
    if (check ? k->out != -1 : !valid_var(p, k->out))
        return bad(c, "%s: output variable %d out of range", name, k->out);
    if (check && (k->partition != RF_PART_NONE || k->gather != RF_GATHER_NONE))
        return bad(c, "%s: partition and gather must be none", name);
    int nin;
    switch (k->op) {
    case RF_K_LOAD: case RF_K_CLEAR: nin = 0; break;
    case RF_K_MAP: case RF_K_SORT: case RF_K_AGG: case RF_K_COPY: case RF_K_CHECK_KEYS: nin = 1; break;
    default: nin = 2; break;
    }
    if (c->m < 0) {                     /* a plain kernel never sees inside a group */
        for (int j = 0; j < 2; j++)
            if (valid_var(p, k->in[j]) && p->vars[k->in[j]].internal)
                return bad(c, "%s: reads %s, internal to a fused kernel", name, p->vars[k->in[j]].name);
        if (valid_var(p, k->out) && p->vars[k->out].internal)
            return bad(c, "%s: writes %s, internal to a fused kernel", name, p->vars[k->out].name);
    }
    for (int j = 0; j < 2; j++) {
        if (j < nin && !valid_var(p, k->in[j]))
            return bad(c, "%s: input %d is variable %d, out of range", name, j, k->in[j]);
        if (j >= nin && k->in[j] != -1)
            return bad(c, "%s: unexpected input %d", name, j);
        if (j < nin && k->in[j] == k->out && k->op != RF_K_COPY)
            return bad(c, "%s: output %s is also an input", name, p->vars[k->out].name);
    }
    if (k->nproj < 0 || (k->nproj > 0 && !k->proj))
        return bad(c, "%s: bad projection", name);
    bool uses_proj = k->op == RF_K_MAP || k->op == RF_K_JOIN;
    if (!uses_proj && (k->nproj != 0 || k->filter.n != 0))
        return bad(c, "%s: has a filter or projection", name);
    if (k->op != RF_K_AGG && (k->naggs != 0 || k->aggfn || k->agg_arg))
        return bad(c, "%s: has an aggregate", name);
    if (k->op == RF_K_AGG && (k->naggs < 1 || !k->aggfn || !k->agg_arg))
        return bad(c, "%s: no aggregate", name);
    bool keyed = k->op == RF_K_JOIN || k->op == RF_K_ANTIJOIN || k->op == RF_K_AGG || check;
    if (k->nkeys < 0 || (!keyed && k->nkeys != 0))
        return bad(c, "%s: bad key count %d", name, k->nkeys);

    const rf_hvar *in0 = nin > 0 ? &p->vars[k->in[0]] : NULL;
    const rf_hvar *in1 = nin > 1 ? &p->vars[k->in[1]] : NULL;
    bool need_sorted = k->op == RF_K_JOIN || k->op == RF_K_ANTIJOIN || k->op == RF_K_UNION ||
                       k->op == RF_K_DIFF || k->op == RF_K_AGG || check;
    if (need_sorted && (!in0->sorted || (in1 && !in1->sorted)))
        return bad(c, "%s: input %s is not sorted", name, !in0->sorted ? in0->name : in1->name);
    if (k->nkeys > 0 && (k->nkeys > in0->arity || (in1 && k->nkeys > in1->arity)))
        return bad(c, "%s: %d keys exceed the input arity", name, k->nkeys);
    if (in1 && k->op != RF_K_UNION && k->op != RF_K_DIFF && !same_types(in0, in1, k->nkeys))
        return bad(c, "%s: key columns of %s and %s differ in type", name, in0->name, in1->name);
    if (check)
        return k->nkeys < in0->arity ? true
                                     : bad(c, "%s: %d keys leave %s no value column", name, k->nkeys, in0->name);
    const rf_hvar *out = &p->vars[k->out];

    if (uses_proj) {
        int ncols = in0->arity + (in1 ? in1->arity : 0);
        rf_type *types = rf_calloc((size_t)ncols + 1, sizeof *types);
        if (in0->arity)
            memcpy(types, in0->types, (size_t)in0->arity * sizeof *types);
        if (in1 && in1->arity)
            memcpy(types + in0->arity, in1->types, (size_t)in1->arity * sizeof *types);
        bool ok = check_code(c, &k->filter, ncols, in1 ? 2 : 1, types, RF_TYPE_BOOL, "filter");
        if (ok && k->nproj != out->arity)
            ok = bad(c, "%s: %d projections for %s of arity %d", name, k->nproj, out->name, out->arity);
        for (int i = 0; ok && i < k->nproj; i++) {
            char what[32];
            snprintf(what, sizeof what, "projection %d", i);
            if (k->proj[i].n == 0)
                ok = bad(c, "%s: %s is empty", name, what);
            else
                ok = check_code(c, &k->proj[i], ncols, in1 ? 2 : 1, types, out->types[i], what);
        }
        free(types);
        if (!ok)
            return false;
    }

    bool sorted_result = true;
    switch (k->op) {
    case RF_K_LOAD:
    case RF_K_CLEAR:
        break;
    case RF_K_MAP:
        sorted_result = in0->sorted && map_is_identity(k, in0->arity);
        break;
    case RF_K_JOIN:
        sorted_result = false;
        break;
    case RF_K_SORT:
    case RF_K_COPY:
    case RF_K_ANTIJOIN:
        if (out->arity != in0->arity || !same_types(out, in0, out->arity))
            return bad(c, "%s: %s and %s differ in arity or types", name, out->name, in0->name);
        sorted_result = k->op != RF_K_COPY || in0->sorted;
        break;
    case RF_K_UNION:
    case RF_K_DIFF:
        if (out->arity != in0->arity || in1->arity != in0->arity ||
            !same_types(out, in0, out->arity) || !same_types(in1, in0, in0->arity))
            return bad(c, "%s: %s, %s and %s differ in arity or types", name, out->name,
                       in0->name, in1->name);
        break;
    case RF_K_AGG: {
        if (k->naggs > out->arity || out->arity != k->nkeys + k->naggs || !same_types(out, in0, k->nkeys))
            return bad(c, "AGG: %s must be the %d key columns of %s plus %d results", out->name,
                       k->nkeys, in0->name, k->naggs);
        for (int j = 0; j < k->naggs; j++) {
            rf_aggfn fn = k->aggfn[j];
            const rf_code *arg = &k->agg_arg[j];
            rf_type rt = out->types[k->nkeys + j];
            if (fn < RF_AGG_COUNT || fn > RF_AGG_LAST)
                return bad(c, "AGG: bad aggregate function %d", (int)fn);
            if (fn == RF_AGG_COUNT) {
                if (rt != RF_TYPE_INT64)
                    return bad(c, "AGG: count produces int64");
                if (arg->n != 0)
                    return bad(c, "AGG: count takes no argument");
                continue;
            }
            if (arg->n == 0)
                return bad(c, "AGG: aggregate argument missing");
            if (fn == RF_AGG_TOTAL && !rf_type_is_numeric(rt))
                return bad(c, "AGG: total of a %s", rf_type_name(rt));
            if (fn == RF_AGG_AVG && rt != RF_TYPE_FLOAT64)
                return bad(c, "AGG: avg produces float64");
            if (fn == RF_AGG_COUNT_DISTINCT && rt != RF_TYPE_INT64)
                return bad(c, "AGG: count_distinct produces int64");
            bool own = fn == RF_AGG_AVG || fn == RF_AGG_COUNT_DISTINCT;
            if (!check_code(c, arg, in0->arity, 0, in0->types, own ? RF_TYPE_INVALID : rt, "aggregate argument"))
                return false;
            rf_type at = (rf_type)arg->ins[arg->n - 1].type;
            if (fn == RF_AGG_AVG && !rf_type_is_numeric(at))
                return bad(c, "AGG: avg of a %s", rf_type_name(at));
        }
        break;
    }
    default:
        break;
    }
    if (out->sorted && !sorted_result)
        return bad(c, "%s: writes sorted variable %s but its result is not sorted", name, out->name);
    return true;
}


/* ---- fused kernels ---- */

static bool listed(const int *v, int n, int x)
{
    for (int i = 0; i < n; i++)
        if (v[i] == x)
            return true;
    return false;
}

/* Whether the code is exactly a read of input `input`'s row position. */
static bool code_is_rowid(const rf_code *c, int input)
{
    return c->n == 1 && c->ins[0].op == RF_EX_ROWID && c->ins[0].index == input;
}

/* Whether the projection of MAP/JOIN k keeps the identity of the rows of
 * input `input` (columns from..from+arity): a plain rowid(input), or every
 * column of it as a plain column read. */
static bool keeps_identity(const rf_kernel *k, int input, int from, int arity)
{
    for (int j = 0; j < k->nproj; j++)
        if (code_is_rowid(&k->proj[j], input))
            return true;
    bool *col = rf_calloc((size_t)arity + 1, 1), all = true;
    for (int j = 0; j < k->nproj; j++) {
        int x = rf_code_as_column(&k->proj[j]) - from;
        if (x >= 0 && x < arity)
            col[x] = true;
    }
    for (int x = 0; x < arity; x++)
        all = all && col[x];
    free(col);
    return all;
}

/* Whether variable v, as member `before` of group f sees it, can hold no
 * duplicate row: a sorted variable, or the result of a MAP (JOIN) member
 * whose inputs hold none and whose projection keeps their identities. */
static bool dup_free(const rf_hprogram *p, const rf_fused *f, int v, int before, int depth)
{
    if (!valid_var(p, v) || depth > RF_FUSED_MAX)
        return false;
    if (p->vars[v].sorted)
        return true;
    for (int i = before - 1; i >= 0; i--) {
        const rf_kernel *m = &f->members[i];
        if (m->out != v)
            continue;
        if (m->op == RF_K_MAP)
            return dup_free(p, f, m->in[0], i, depth + 1) &&
                   keeps_identity(m, 0, 0, p->vars[m->in[0]].arity);
        if (m->op == RF_K_JOIN) {
            int a0 = p->vars[m->in[0]].arity;
            return keeps_identity(m, 0, 0, a0) && keeps_identity(m, 1, a0, p->vars[m->in[1]].arity);
        }
        return false;
    }
    return false;
}

/* RF_GATHER_REDUCE: the group ends `s := SORT t; a := AGG s` and the
 * aggregates give the same result whatever order the rows come in, so the
 * rows can be folded into their groups as they are made. The SORT
 * deduplicated; with t duplicate-free there is nothing to remove. */
static bool check_reduce(vctx *c, const rf_fused *f)
{
    const rf_hprogram *p = c->p;
    if (f->nmembers < 2)
        return bad(c, "FUSED: a reducing gather needs a SORT and an AGG");
    const rf_kernel *sort = &f->members[f->nmembers - 2], *agg = &f->members[f->nmembers - 1];
    if (sort->op != RF_K_SORT || agg->op != RF_K_AGG || agg->in[0] != sort->out)
        return bad(c, "FUSED: a reducing gather must end with SORT then AGG of its result");
    if (!dup_free(p, f, sort->in[0], f->nmembers - 2, 0))
        return bad(c, "FUSED: a reducing gather needs duplicate-free rows, and %s may hold duplicates",
                   p->vars[sort->in[0]].name);
    for (int j = 0; j < agg->naggs; j++) {
        rf_aggfn fn = agg->aggfn[j];
        if (fn == RF_AGG_COUNT_DISTINCT)
            return bad(c, "FUSED: a reducing gather cannot count distinct values");
        if ((fn == RF_AGG_TOTAL || fn == RF_AGG_AVG) && agg->agg_arg[j].n > 0 &&
            agg->agg_arg[j].ins[agg->agg_arg[j].n - 1].type == RF_TYPE_FLOAT64)
            return bad(c, "FUSED: a reducing gather cannot add float64 values (their sum depends on the order)");
    }
    return true;
}

/* RF_GATHER_SET: the group ends `s := SORT t`, t being the rows the member
 * before it makes (a MAP or JOIN: unsorted) and internal to the group, so
 * that nothing but the SORT ever sees t. Then t's rows may go straight
 * into a dense set over their value ranges: a set is sorted and holds no
 * duplicate, which is what the SORT makes of t whatever order and
 * repetitions the rows come in, so no duplicate-freedom is needed (unlike
 * REDUCE, which counts rows). The backend may also write t and sort it. */
static bool check_set(vctx *c, const rf_fused *f)
{
    const rf_kernel *rows = &f->members[f->nmembers - 2], *sort = &f->members[f->nmembers - 1];
    if (sort->op != RF_K_SORT || (rows->op != RF_K_MAP && rows->op != RF_K_JOIN) || sort->in[0] != rows->out)
        return bad(c, "FUSED: a set gather must end with a SORT of the rows the member before it (a MAP or JOIN) "
                      "makes");
    if (!c->p->vars[rows->out].internal)
        return bad(c, "FUSED: a set gather's rows (%s) must be internal to the group", c->p->vars[rows->out].name);
    return true;
}

bool rf_fused_reduce_legal(const rf_hprogram *p, const rf_fused *f)
{
    rf_status st;
    rf_status_init(&st);
    vctx c = {p, &st, -1, -1, -1};
    return check_reduce(&c, f);
}

static bool check_fused(vctx *c, const rf_kernel *k)
{
    const rf_hprogram *p = c->p;
    const rf_fused *f = k->fused;
    if (k->in[0] != -1 || k->in[1] != -1 || k->nkeys != 0 || k->filter.n != 0 || k->nproj != 0 ||
        k->naggs != 0 || k->aggfn || k->agg_arg || k->proj)
        return bad(c, "FUSED: has inputs, keys or code of its own");
    if (f->nmembers < 2 || f->nmembers > RF_FUSED_MAX || !f->members)
        return bad(c, "FUSED: %d members (2 to %d)", f->nmembers, RF_FUSED_MAX);
    /* no edge: a group of branches that only share inputs (several outputs) */
    if (f->nedges < 0 || (f->nedges > 0 && !f->edges) || f->nin < 0 || (f->nin > 0 && !f->in) || f->nout < 1 ||
        !f->out || f->nin > RF_KERNEL_VARS_MAX || f->nout > RF_KERNEL_VARS_MAX)
        return bad(c, "FUSED: bad edge, input or output list");
    if (k->out != f->out[0])
        return bad(c, "FUSED: its output is not the group's first output");
    for (int i = 0; i < f->nin; i++)
        if (!valid_var(p, f->in[i]) || p->vars[f->in[i]].internal || listed(f->in, i, f->in[i]))
            return bad(c, "FUSED: input %d is out of range, internal or listed twice", f->in[i]);
    for (int i = 0; i < f->nout; i++)
        if (!valid_var(p, f->out[i]) || p->vars[f->out[i]].internal || listed(f->out, i, f->out[i]) ||
            listed(f->in, f->nin, f->out[i]))
            return bad(c, "FUSED: output %d is out of range, internal, an input or listed twice", f->out[i]);
    for (int e = 0; e < f->nedges; e++) {
        const rf_fedge *ed = &f->edges[e];
        if (!valid_var(p, ed->var) || !p->vars[ed->var].internal)
            return bad(c, "FUSED: edge %d carries variable %d, which is not internal", e, ed->var);
        if (ed->from < 0 || ed->to <= ed->from || ed->to >= f->nmembers || (unsigned)ed->dep >= RF_DEP_COUNT_)
            return bad(c, "FUSED: edge %d (%s) goes from member %d to %d", e, p->vars[ed->var].name, ed->from,
                       ed->to);
        const rf_kernel *from = &f->members[ed->from], *to = &f->members[ed->to];
        if (from->out != ed->var || (to->in[0] != ed->var && to->in[1] != ed->var))
            return bad(c, "FUSED: edge %d: member %d does not write %s or member %d does not read it", e,
                       ed->from, p->vars[ed->var].name, ed->to);
        for (int x = 0; x < e; x++)
            if (f->edges[x].var == ed->var && f->edges[x].to == ed->to)
                return bad(c, "FUSED: edge %d repeats edge %d", e, x);
    }
    bool written[RF_KERNEL_VARS_MAX] = {false};
    for (int i = 0; i < f->nmembers; i++) {
        const rf_kernel *m = &f->members[i];
        c->m = i;
        if (m->op == RF_K_LOAD || m->op == RF_K_COPY || m->op == RF_K_CLEAR || m->op == RF_K_CHECK_KEYS ||
            m->op == RF_K_FUSED || m->op == RF_K_MULTIJOIN || (unsigned)m->op >= RF_K_COUNT_ || m->fused ||
            m->mj)
            return bad(c, "a %s kernel cannot be a member of a fused kernel", rf_kop_name(m->op));
        if (m->nfree != 0 || m->gather == RF_GATHER_REDUCE || m->gather == RF_GATHER_SET)
            return bad(c, "a member has its own free list or a group's gather");
        if (!check_kernel(c, m))
            return false;
        for (int j = 0; j < 2; j++) {
            int v = m->in[j];
            if (v < 0)
                continue;
            bool fed = false;
            for (int e = 0; e < f->nedges; e++)
                fed = fed || (f->edges[e].var == v && f->edges[e].to == i);
            if (p->vars[v].internal ? !fed : !listed(f->in, f->nin, v))
                return bad(c, "reads %s, neither an input of the group nor made by an earlier member",
                           p->vars[v].name);
        }
        int v = m->out;
        if (p->vars[v].internal) {
            for (int x = 0; x < i; x++)
                if (f->members[x].out == v)
                    return bad(c, "writes %s, which member %d wrote", p->vars[v].name, x);
            bool read = false;
            for (int e = 0; e < f->nedges; e++)
                read = read || (f->edges[e].var == v && f->edges[e].from == i);
            if (!read)
                return bad(c, "writes internal %s, which no later member reads", p->vars[v].name);
        } else {
            int o = 0;
            while (o < f->nout && f->out[o] != v)
                o++;
            if (o == f->nout || written[o])
                return bad(c, "writes %s, not an output of the group or written twice", p->vars[v].name);
            written[o] = true;
        }
    }
    c->m = -1;
    for (int o = 0; o < f->nout; o++)
        if (!written[o])
            return bad(c, "FUSED: no member writes output %s", p->vars[f->out[o]].name);
    for (int i = 0; i < f->nin; i++) {
        bool read = false;
        for (int m = 0; m < f->nmembers; m++)
            read = read || f->members[m].in[0] == f->in[i] || f->members[m].in[1] == f->in[i];
        if (!read)
            return bad(c, "FUSED: no member reads input %s", p->vars[f->in[i]].name);
    }
    if (k->gather == RF_GATHER_REDUCE)
        return check_reduce(c, f);
    if (k->gather == RF_GATHER_SET)
        return check_set(c, f);
    if (k->gather != f->members[f->nmembers - 1].gather)
        return bad(c, "FUSED: gather %d is neither the last member's nor reduce or set", (int)k->gather);
    return true;
}

/* An internal variable belongs to exactly one fused kernel and is seen by
 * nothing else: no block condition, no free list, no data source or sink.
 * It may be a predicate's variable (one that only its one reader reads). */
static bool check_internal(vctx *c)
{
    const rf_hprogram *p = c->p;
    int *owner = rf_calloc((size_t)p->nvars + 1, sizeof *owner); /* 1 + flat kernel index, -1: two */
    int flat = 0;
    for (int b = 0; b < p->nblocks; b++) {
        const rf_hblock *hb = &p->blocks[b];
        /* (conditions are checked only where a branch reads them) */
        for (int i = 0; (hb->term == RF_TERM_BRANCH_EMPTY || hb->term == RF_TERM_BRANCH_JOIN) && i < hb->nconds; i++)
            if (valid_var(p, hb->conds[i]) && p->vars[hb->conds[i]].internal)
                owner[hb->conds[i]] = -1;
        for (int i = 0; i < hb->nfree_entry; i++)
            if (valid_var(p, hb->free_entry[i]) && p->vars[hb->free_entry[i]].internal)
                owner[hb->free_entry[i]] = -1;
        for (int k = 0; k < hb->nkernels; k++, flat++) {
            const rf_kernel *kn = &hb->kernels[k];
            for (int i = 0; i < kn->nfree; i++)
                if (valid_var(p, kn->frees[i]) && p->vars[kn->frees[i]].internal)
                    owner[kn->frees[i]] = -1;
            for (int m = 0; kn->fused && m < kn->fused->nmembers; m++) {
                const rf_kernel *mk = &kn->fused->members[m];
                int vs[3] = {mk->in[0], mk->in[1], mk->out};
                for (int j = 0; j < 3; j++)
                    if (valid_var(p, vs[j]) && p->vars[vs[j]].internal)
                        owner[vs[j]] = owner[vs[j]] == 0 || owner[vs[j]] == flat + 1 ? flat + 1 : -1;
            }
        }
    }
    bool ok = true;
    for (int v = 0; v < p->nvars && ok; v++) {
        const rf_hvar *hv = &p->vars[v];
        if (hv->internal && (owner[v] <= 0 || hv->is_output || hv->input_path || hv->nfacts))
            ok = bad(c, "internal variable %s is %s", hv->name,
                     owner[v] == 0 ? "used by no fused kernel"
                     : owner[v] < 0 ? "seen outside its fused kernel"
                                    : "an output or a data source");
    }
    free(owner);
    return ok;
}

/* --join=auto's run-time choice: two targets, two variables to count the
 * join of (neither internal to a fused group: the runtime reads them),
 * key columns in range and of one type on both sides. */
static bool check_branch_join(vctx *c, const rf_hblock *hb)
{
    const rf_hprogram *p = c->p;
    if (hb->target < 0 || hb->target >= p->nblocks || hb->target_else < 0 || hb->target_else >= p->nblocks)
        return bad(c, "join choice: branch target out of range");
    if (hb->nconds != 2 || !hb->conds || !valid_var(p, hb->conds[0]) || !valid_var(p, hb->conds[1]))
        return bad(c, "join choice: needs two variables in range, has %d", hb->nconds);
    if (hb->nvars < 2 || hb->nvars > RF_MULTIJOIN_MAX_VARS || hb->natoms < 2 || hb->natoms > RF_MULTIJOIN_MAX_IN)
        return bad(c, "join choice: a body of %d variables (2..%d) and %d atoms (2..%d)", hb->nvars,
                   RF_MULTIJOIN_MAX_VARS, hb->natoms, RF_MULTIJOIN_MAX_IN);
    const rf_hvar *l = &p->vars[hb->conds[0]], *r = &p->vars[hb->conds[1]];
    if (hb->nkeys < 0 || (hb->nkeys > 0 && (!hb->lkeys || !hb->rkeys)) || hb->nkeys > l->arity ||
        hb->nkeys > r->arity)
        return bad(c, "join choice: %d key pairs for %s and %s", hb->nkeys, l->name, r->name);
    for (int i = 0; i < hb->nkeys; i++) {
        int a = hb->lkeys[i], b = hb->rkeys[i];
        if (a < 0 || a >= l->arity || b < 0 || b >= r->arity)
            return bad(c, "join choice: key pair %d ($%d, $%d) out of range", i, a, b);
        if (l->types[a] != r->types[b])
            return bad(c, "join choice: key pair %d joins %s with %s", i, rf_type_name(l->types[a]),
                       rf_type_name(r->types[b]));
    }
    return true;
}

bool rf_hir_verify(const rf_hprogram *p, rf_status *st)
{
    vctx c = {p, st, -1, -1, -1};
    if (!p)
        return bad(&c, "no program");
    if (p->nvars < 0 || (p->nvars > 0 && !p->vars))
        return bad(&c, "bad variable table");
    if (p->nblocks < 1 || !p->blocks)
        return bad(&c, "no blocks");
    for (int i = 0; i < p->nvars; i++)
        if (!check_var(&c, i))
            return false;
    for (int b = 0; b < p->nblocks; b++) {
        const rf_hblock *hb = &p->blocks[b];
        c.b = b;
        c.k = -1;
        if (hb->nkernels < 0 || (hb->nkernels > 0 && !hb->kernels))
            return bad(&c, "bad kernel list");
        switch (hb->term) {
        case RF_TERM_FALLTHROUGH:
            if (b + 1 >= p->nblocks)
                return bad(&c, "the last block falls through");
            break;
        case RF_TERM_JUMP:
            if (hb->target < 0 || hb->target >= p->nblocks)
                return bad(&c, "jump target %d out of range", hb->target);
            break;
        case RF_TERM_BRANCH_EMPTY:
            if (hb->target < 0 || hb->target >= p->nblocks ||
                hb->target_else < 0 || hb->target_else >= p->nblocks)
                return bad(&c, "branch target out of range");
            if (hb->nconds < 0 || (hb->nconds > 0 && !hb->conds))
                return bad(&c, "bad branch conditions");
            for (int i = 0; i < hb->nconds; i++)
                if (!valid_var(p, hb->conds[i]))
                    return bad(&c, "branch condition %d out of range", hb->conds[i]);
            break;
        case RF_TERM_HALT:
            break;
        case RF_TERM_BRANCH_JOIN:
            if (!check_branch_join(&c, hb))
                return false;
            break;
        default:
            return bad(&c, "bad terminator");
        }
        if (hb->nfree_entry < 0 || (hb->nfree_entry > 0 && !hb->free_entry))
            return bad(&c, "bad free list");
        for (int i = 0; i < hb->nfree_entry; i++)
            if (!valid_var(p, hb->free_entry[i]) || p->vars[hb->free_entry[i]].is_output)
                return bad(&c, "frees variable %d, out of range or an output", hb->free_entry[i]);
        for (int k = 0; k < hb->nkernels; k++) {
            c.k = k;
            if (!check_kernel(&c, &hb->kernels[k]))
                return false;
        }
    }
    c.b = c.k = -1;
    return check_internal(&c);
}
