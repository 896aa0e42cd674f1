#include "interp.h"
#include "rf_agg_ops.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static int cmp_arity;

static int row_cmp(const void *a, const void *b)
{
    const rf_word *x = a, *y = b;
    for (int i = 0; i < cmp_arity; i++)
        if (x[i] != y[i])
            return x[i] < y[i] ? -1 : 1;
    return 0;
}

void irel_normalize(irel *r)
{
    if (r->arity == 0) {
        r->n = r->n > 0;
        return;
    }
    size_t w = (size_t)r->arity * sizeof(rf_word);
    cmp_arity = r->arity;
    qsort(r->rows, r->n, w, row_cmp);
    size_t out = 0;
    for (size_t i = 0; i < r->n; i++) {
        rf_word *row = r->rows + i * (size_t)r->arity;
        if (out > 0 && memcmp(r->rows + (out - 1) * (size_t)r->arity, row, w) == 0)
            continue;
        memmove(r->rows + out * (size_t)r->arity, row, w);
        out++;
    }
    r->n = out;
}

bool irel_equal(const irel *a, const irel *b)
{
    return a->arity == b->arity && a->n == b->n &&
           (a->n == 0 || a->arity == 0 ||
            memcmp(a->rows, b->rows, a->n * (size_t)a->arity * sizeof(rf_word)) == 0);
}

void irel_print(const irel *r, FILE *out)
{
    fprintf(out, "{");
    for (size_t i = 0; i < r->n; i++) {
        fprintf(out, "%s(", i ? ", " : "");
        for (int j = 0; j < r->arity; j++)
            fprintf(out, "%s%" PRId64, j ? "," : "", (int64_t)r->rows[i * (size_t)r->arity + j]);
        fprintf(out, ")");
    }
    fprintf(out, "}\n");
}

/* A result under construction. */
typedef struct rowbuf {
    int arity;
    size_t n, cap;
    rf_word *rows;
} rowbuf;

static void push_row(rowbuf *b, const rf_word *row)
{
    if (b->n == b->cap) {
        b->cap = b->cap ? 2 * b->cap : 16;
        b->rows = rf_realloc(b->rows, b->cap * ((size_t)b->arity + 1) * sizeof(rf_word));
    }
    memcpy(b->rows + b->n * (size_t)b->arity, row, (size_t)b->arity * sizeof(rf_word));
    b->n++;
}

static void store(interp *it, int dst, rowbuf *b)
{
    irel *r = &it->rels[dst];
    free(r->rows);
    r->rows = b->rows ? b->rows : rf_malloc(sizeof(rf_word));
    r->n = b->n;
    irel_normalize(r);
}

static bool contains(const irel *r, const rf_word *row)
{
    for (size_t i = 0; i < r->n; i++)
        if (memcmp(r->rows + i * (size_t)r->arity, row, (size_t)r->arity * sizeof(rf_word)) == 0)
            return true;
    return false;
}

/* rowids: the row's position in each input (RF_EX_ROWID) */
static bool eval_bool(interp *it, const rf_expr *e, const rf_word *row, const rf_word *rowids, bool *ok)
{
    if (!e)
        return true;
    rf_word w;
    if (!rf_expr_eval_at(e, row, rowids, &w, &it->st)) {
        *ok = false;
        return false;
    }
    return w != 0;
}

static bool project_row(interp *it, const rf_plan_cmd *c, const rf_word *row, const rf_word *rowids,
                        rowbuf *out)
{
    rf_word tmp[64];
    for (int i = 0; i < c->nproj; i++)
        if (!rf_expr_eval_at(c->proj[i], row, rowids, &tmp[i], &it->st))
            return false;
    push_row(out, tmp);
    return true;
}

static const rf_word *row_at(const irel *r, size_t i) { return r->rows + i * (size_t)r->arity; }

static bool keys_match(const rf_plan_cmd *c, const rf_word *l, const rf_word *r)
{
    for (int k = 0; k < c->nkeys; k++)
        if (l[c->lkeys[k]] != r[c->rkeys[k]])
            return false;
    return true;
}

static int word_cmp(const void *a, const void *b)
{
    rf_word x = *(const rf_word *)a, y = *(const rf_word *)b;
    return (x > y) - (x < y);
}

/* One aggregate over the rows in[0..n) of a group (n >= 1). */
static bool aggregate_group(interp *it, const rf_plan_cmd *c, int j, const rf_word *const *in, size_t n,
                            rf_word *res)
{
    rf_aggfn fn = c->aggfn[j];
    const rf_expr *arg = c->agg_arg[j];
    if (fn == RF_AGG_COUNT) {
        *res = (rf_word)n;
        return true;
    }
    rf_word *v = rf_malloc((n + 1) * sizeof *v);
    bool ok = true;
    for (size_t i = 0; i < n && ok; i++)
        ok = rf_expr_eval(arg, in[i], &v[i], &it->st);
    rf_type t = arg->type;
    rf_word acc = v[0];
    rf_sum128 sum = {0, 0};
    for (size_t i = 0; i < n && ok; i++) {
        switch (fn) {
        case RF_AGG_TOTAL:
            if (i > 0)
                ok = rf_scalar_binary(RF_EX_ADD, t, acc, v[i], &acc, &it->st);
            break;
        case RF_AGG_MIN:
            if (rf_value_compare(t, v[i], acc) < 0)
                acc = v[i];
            break;
        case RF_AGG_MAX:
            if (rf_value_compare(t, v[i], acc) > 0)
                acc = v[i];
            break;
        case RF_AGG_AVG:
            if (t == RF_TYPE_FLOAT64) {
                if (i > 0)
                    ok = rf_scalar_binary(RF_EX_ADD, t, acc, v[i], &acc, &it->st);
            } else {
                rf_sum128_add(&sum, (int64_t)v[i]);
            }
            break;
        case RF_AGG_COUNT_DISTINCT:
            break;
        default:
            ok = false;
        }
    }
    if (ok && fn == RF_AGG_AVG)
        acc = rf_word_from_double(t == RF_TYPE_FLOAT64 ? rf_avg_float(rf_word_to_double(acc), n)
                                                       : rf_avg_exact(sum, n, rf_type_is_decimal(t)
                                                                                  ? rf_decimal_scale(t) : 0));
    if (ok && fn == RF_AGG_COUNT_DISTINCT) {
        qsort(v, n, sizeof *v, word_cmp);
        acc = 0;
        for (size_t i = 0; i < n; i++)
            acc += i == 0 || v[i] != v[i - 1];
    }
    free(v);
    *res = acc;
    return ok;
}

/* Groups in the order of their first row; the rows of a group in order. */
static bool aggregate(interp *it, const rf_plan_cmd *c, rowbuf *out)
{
    const irel *s = &it->rels[c->src[0]];
    bool *seen = rf_calloc(s->n + 1, sizeof *seen);
    const rf_word **grp = rf_malloc((s->n + 1) * sizeof *grp);
    rf_word row[64];
    bool ok = true;
    for (size_t g = 0; g < s->n && ok; g++) {
        if (seen[g])
            continue;
        const rf_word *first = row_at(s, g);
        size_t n = 0;
        for (size_t i = g; i < s->n; i++) {
            const rf_word *r = row_at(s, i);
            bool same = true;
            for (int k = 0; k < c->nkeys; k++)
                same = same && r[c->lkeys[k]] == first[c->lkeys[k]];
            if (same) {
                seen[i] = true;
                grp[n++] = r;
            }
        }
        for (int k = 0; k < c->nkeys; k++)
            row[k] = first[c->lkeys[k]];
        for (int j = 0; j < c->naggs && ok; j++)
            ok = aggregate_group(it, c, j, grp, n, &row[c->nkeys + j]);
        if (ok)
            push_row(out, row);
    }
    /* Keyless over nothing: zeros when every aggregate counts. */
    bool counts = c->nkeys == 0 && s->n == 0;
    for (int j = 0; j < c->naggs; j++)
        counts = counts && (c->aggfn[j] == RF_AGG_COUNT || c->aggfn[j] == RF_AGG_COUNT_DISTINCT);
    if (counts) {
        for (int j = 0; j < c->naggs; j++)
            row[j] = 0;
        push_row(out, row);
    }
    free(grp);
    free(seen);
    return ok;
}

/* Executes one non-control command. */
/* CHECK_KEYS: relations are sorted and duplicate-free, so equal keys are
 * adjacent and two such rows differ in their value. */
static bool check_keys(interp *it, const rf_plan_cmd *c)
{
    const irel *s = &it->rels[c->src[0]];
    for (size_t i = 1; i < s->n; i++)
        if (memcmp(row_at(s, i - 1), row_at(s, i), (size_t)c->nkeys * sizeof(rf_word)) == 0)
            return rf_fail(&it->st, RF_EXIT_RUNTIME_ERROR, "functional dependency violated: %s",
                           it->plan->rels[c->src[0]].name);
    return true;
}

/* MULTIJOIN, naively: every combination of source rows that agrees on the
 * variables (source by source, nested), then filter and projections over
 * the binding. */
static bool multijoin_rec(interp *it, const rf_plan_cmd *c, int src, rf_word *binding, bool *bound,
                          rowbuf *out)
{
    if (src == c->nins) {
        rf_word at[2] = { 0, 0 };
        bool ok = true;
        if (eval_bool(it, c->filter, binding, at, &ok) && ok)
            ok = project_row(it, c, binding, at, out);
        return ok;
    }
    const irel *s = &it->rels[c->ins[src]];
    const int *vars = c->in_vars + c->in_first[src];
    for (size_t i = 0; i < s->n; i++) {
        const rf_word *row = row_at(s, i);
        bool fits = true, newly[64] = { false };
        for (int j = 0; j < s->arity && fits; j++) {
            if (bound[vars[j]]) {
                fits = binding[vars[j]] == row[j];
            } else {
                binding[vars[j]] = row[j];
                bound[vars[j]] = newly[j] = true;
            }
        }
        bool ok = !fits || multijoin_rec(it, c, src + 1, binding, bound, out);
        for (int j = 0; j < s->arity; j++)
            if (newly[j])
                bound[vars[j]] = false;
        if (!ok)
            return false;
    }
    return true;
}

static bool exec(interp *it, const rf_plan_cmd *c)
{
    const rf_plan *p = it->plan;
    if (c->kind == RF_CMD_CHECK_KEYS)
        return check_keys(it, c);
    rowbuf out = { p->rels[c->dst].arity, 0, 0, NULL };
    const irel *s0 = c->src[0] >= 0 ? &it->rels[c->src[0]] : NULL;
    const irel *s1 = c->src[1] >= 0 ? &it->rels[c->src[1]] : NULL;
    bool ok = true;
    rf_word row[128];
    switch (c->kind) {
    case RF_CMD_LOAD: {
        const rf_plan_rel *r = &p->rels[c->dst];
        for (size_t i = 0; i < r->nfacts; i++)
            push_row(&out, r->arity ? r->facts + i * (size_t)r->arity : row);
        break;
    }
    case RF_CMD_MAPFILTER:
        for (size_t i = 0; i < s0->n && ok; i++) {
            rf_word at[2] = { i, 0 };
            if (eval_bool(it, c->filter, row_at(s0, i), at, &ok) && ok)
                ok = project_row(it, c, row_at(s0, i), at, &out);
        }
        break;
    case RF_CMD_MAPJOIN: {
        for (size_t i = 0; i < s0->n && ok; i++)
            for (size_t j = 0; j < s1->n && ok; j++) {
                const rf_word *l = row_at(s0, i), *r = row_at(s1, j);
                if (!keys_match(c, l, r))
                    continue;
                memcpy(row, l, (size_t)s0->arity * sizeof *row);
                memcpy(row + s0->arity, r, (size_t)s1->arity * sizeof *row);
                rf_word at[2] = { i, j };
                if (eval_bool(it, c->filter, row, at, &ok) && ok)
                    ok = project_row(it, c, row, at, &out);
            }
        break;
    }
    case RF_CMD_ANTIJOIN: {
        for (size_t i = 0; i < s0->n && ok; i++) {
            const rf_word *l = row_at(s0, i);
            bool found = false;
            for (size_t j = 0; j < s1->n && !found; j++)
                found = keys_match(c, l, row_at(s1, j));
            rf_word at[2] = { i, 0 };
            if (!found && eval_bool(it, c->filter, l, at, &ok) && ok)
                ok = project_row(it, c, l, at, &out);
        }
        break;
    }
    case RF_CMD_UNION:
    case RF_CMD_DIFFERENCE:
    case RF_CMD_COPY:
        for (size_t i = 0; i < s0->n; i++) {
            const rf_word *r = row_at(s0, i);
            if (c->kind != RF_CMD_DIFFERENCE || !contains(s1, r))
                push_row(&out, r);
        }
        if (c->kind == RF_CMD_UNION)
            for (size_t i = 0; i < s1->n; i++)
                push_row(&out, row_at(s1, i));
        break;
    case RF_CMD_AGGREGATE:
        ok = aggregate(it, c, &out);
        break;
    case RF_CMD_CLEAR:
        break;
    case RF_CMD_MULTIJOIN: {
        rf_word binding[64] = { 0 };
        bool bound[64] = { false };
        ok = multijoin_rec(it, c, 0, binding, bound, &out);
        break;
    }
    default:
        ok = rf_fail(&it->st, RF_EXIT_RUNTIME_ERROR, "interp: unexpected command");
    }
    if (!ok) {
        free(out.rows);
        return false;
    }
    store(it, c->dst, &out);
    return true;
}

bool interp_run(interp *it, const rf_plan *plan, long max_steps)
{
    memset(it, 0, sizeof *it);
    it->plan = plan;
    rf_status_init(&it->st);
    it->rels = rf_calloc((size_t)plan->nrels + 1, sizeof *it->rels);
    for (int i = 0; i < plan->nrels; i++) {
        it->rels[i].arity = plan->rels[i].arity;
        it->rels[i].rows = rf_malloc(sizeof(rf_word));
    }
    int b = 0;
    for (;;) {
        const rf_plan_block *blk = &plan->blocks[b];
        int next = b + 1;
        for (int i = 0; i < blk->ncmds; i++) {
            const rf_plan_cmd *c = &blk->cmds[i];
            if (++it->steps > max_steps)
                return rf_fail(&it->st, RF_EXIT_RUNTIME_ERROR, "interp: no halt after %ld steps", max_steps);
            if (c->kind == RF_CMD_HALT)
                return true;
            if (c->kind == RF_CMD_JUMP) {
                next = c->target;
            } else if (c->kind == RF_CMD_BRANCH_EMPTY) {
                bool empty = true;
                for (int k = 0; k < c->nconds; k++)
                    empty = empty && it->rels[c->conds[k]].n == 0;
                next = empty ? c->target : c->target_else;
            } else if (c->kind == RF_CMD_BRANCH_JOIN) {
                /* either plan gives the same rows: take both in turn */
                next = it->join_choices++ % 2 == 0 ? c->target : c->target_else;
            } else if (!exec(it, c)) {
                return false;
            }
        }
        if (next >= plan->nblocks)
            return rf_fail(&it->st, RF_EXIT_RUNTIME_ERROR, "interp: fell off the end");
        b = next;
    }
}

void interp_free(interp *it)
{
    if (!it->rels)
        return;
    for (int i = 0; i < it->plan->nrels; i++)
        free(it->rels[i].rows);
    free(it->rels);
    it->rels = NULL;
}

const irel *interp_rel(const interp *it, const char *name)
{
    for (int i = 0; i < it->plan->nrels; i++)
        if (strcmp(it->plan->rels[i].name, name) == 0)
            return &it->rels[i];
    return NULL;
}
