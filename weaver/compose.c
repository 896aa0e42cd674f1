/* A thread-dependent chain of kernels as the one kernel it equals: each
 * member's code is rewritten over the chain's inputs by substituting the
 * previous member's projections for its column reads. This is what a
 * fused kernel of such a chain computes with its intermediates held in
 * registers; expressed as a plain MAP/JOIN, both backends run it with
 * their ordinary operators (and the GPU's NVRTC code generator). */
#include "weaver.h"

#include <stdlib.h>
#include <string.h>

typedef RF_VEC(rf_instr) ivec;

bool rf_code_may_fault(const rf_code *c)
{
    for (int i = 0; i < c->n; i++) {
        switch ((rf_exop)c->ins[i].op) {
        case RF_EX_CONST: case RF_EX_COL: case RF_EX_ROWID: case RF_EX_NOT:
        case RF_EX_EQ: case RF_EX_NE: case RF_EX_LT: case RF_EX_LE: case RF_EX_GT: case RF_EX_GE:
        case RF_EX_AND: case RF_EX_OR: case RF_EX_IF:
        case RF_EX_YEAR: case RF_EX_MONTH: case RF_EX_DAY: case RF_EX_STRLEN:
        case RF_EX_LIKE: case RF_EX_STARTS_WITH: case RF_EX_ENDS_WITH: case RF_EX_CONTAINS:
            break;
        default:   /* checked arithmetic, casts, date arithmetic, substr, concat */
            return true;
        }
    }
    return false;
}

static void push(ivec *v, rf_exop op, rf_type type, rf_type arg_type, int index, rf_word value)
{
    rf_instr in;
    memset(&in, 0, sizeof in);
    in.op = (uint8_t)op;
    in.type = (uint8_t)type;
    in.arg_type = (uint8_t)arg_type;
    in.index = index;
    in.value = value;
    RF_PUSH(*v, in);
}

static void append(ivec *v, const rf_code *c)
{
    for (int i = 0; i < c->n; i++)
        RF_PUSH(*v, c->ins[i]);
}

static rf_code to_code(ivec *v)
{
    rf_code c = {(int)v->len, v->items};
    if (!v->len) {
        RF_VEC_FREE(*v);
        c.ins = NULL;
    }
    v->items = NULL;
    v->len = v->cap = 0;
    return c;
}

/* c over the columns of the previous member's result, rewritten over that
 * member's inputs (its projections `proj`). A row position of the result
 * is the position of the input row that made it, which identifies the
 * row as well (a MAP makes at most one row per input row). */
static bool substitute(const rf_code *c, const rf_code *proj, int nproj, bool single_input, rf_code *out)
{
    ivec v = {0};
    for (int i = 0; i < c->n; i++) {
        const rf_instr *in = &c->ins[i];
        if (in->op == RF_EX_COL) {
            if (in->index < 0 || in->index >= nproj)
                goto fail;
            append(&v, &proj[in->index]);
        } else if (in->op == RF_EX_ROWID) {
            if (!single_input || in->index != 0)
                goto fail;
            RF_PUSH(v, *in);
        } else {
            RF_PUSH(v, *in);
        }
    }
    *out = to_code(&v);
    return true;
fail:
    RF_VEC_FREE(v);
    return false;
}

/* a, then b only where a holds: IF(a, b, false); either may be absent. */
static rf_code lazy_and(rf_code a, rf_code b)
{
    if (a.n == 0)
        return b;
    if (b.n == 0)
        return a;
    ivec v = {0};
    append(&v, &a);
    append(&v, &b);
    push(&v, RF_EX_CONST, RF_TYPE_BOOL, RF_TYPE_BOOL, 0, 0);
    push(&v, RF_EX_IF, RF_TYPE_BOOL, RF_TYPE_BOOL, 0, 0);
    rf_code_free(&a);
    rf_code_free(&b);
    return to_code(&v);
}

/* Evaluates each projection that may fault and yields true: the rows
 * that would compute those columns unfused still compute them when a
 * later member does not read them. Values never differ from themselves
 * (no NaN among floats), so `e == e` holds wherever e does not fault. */
static rf_code fault_guard(const rf_kernel *k, const rf_hvar *out)
{
    ivec v = {0};
    int n = 0;
    for (int j = 0; j < k->nproj; j++) {
        if (!rf_code_may_fault(&k->proj[j]))
            continue;
        append(&v, &k->proj[j]);
        append(&v, &k->proj[j]);
        push(&v, RF_EX_EQ, RF_TYPE_BOOL, out->types[j], 0, 0);
        if (n++ > 0)
            push(&v, RF_EX_AND, RF_TYPE_BOOL, RF_TYPE_BOOL, 0, 0);
    }
    return to_code(&v);
}

static rf_code copy_code(const rf_code *c)
{
    ivec v = {0};
    append(&v, c);
    return to_code(&v);
}

static bool is_chain_link(const rf_hprogram *p, const rf_kernel *prev, const rf_kernel *m, bool head_is_map)
{
    (void)p;
    if (m->op != RF_K_MAP || m->in[0] != prev->out || m->in[1] != -1)
        return false;
    /* A row position of a JOIN's result would be a pair of positions. */
    if (!head_is_map) {
        for (int j = -1; j < m->nproj; j++) {
            const rf_code *c = j < 0 ? &m->filter : &m->proj[j];
            for (int i = 0; i < c->n; i++)
                if (c->ins[i].op == RF_EX_ROWID)
                    return false;
        }
    }
    return true;
}

int rf_fused_chain_end(const rf_hprogram *p, const rf_kernel *fk) { return rf_fused_chain_end_from(p, fk, 0); }

int rf_fused_chain_end_from(const rf_hprogram *p, const rf_kernel *fk, int first)
{
    const rf_fused *f = fk->fused;
    if (!f || first < 0 || f->nmembers <= first)
        return -1;
    const rf_kernel *head = &f->members[first];
    if (head->op != RF_K_MAP && head->op != RF_K_JOIN)
        return -1;
    int last = first;
    while (last + 1 < f->nmembers &&
           is_chain_link(p, &f->members[last], &f->members[last + 1], head->op == RF_K_MAP))
        last++;
    return last;
}

int rf_fused_branches(const rf_kernel *fk, int ends[RF_KERNEL_VARS_MAX])
{
    const rf_fused *f = fk->fused;
    if (!f || f->nout < 1 || f->nout > RF_KERNEL_VARS_MAX)
        return -1;
    int o = 0;
    for (int m = 0; m < f->nmembers && o < f->nout; m++)
        if (f->members[m].out == f->out[o])
            ends[o++] = m;
    return o == f->nout && ends[o - 1] == f->nmembers - 1 ? o : -1;
}

bool rf_fused_compose(const rf_hprogram *p, const rf_kernel *fk, int first, int last, rf_kernel *out)
{
    const rf_fused *f = fk->fused;
    if (!f || first < 0 || last >= f->nmembers || first > last)
        return false;
    const rf_kernel *head = &f->members[first];
    if (head->op != RF_K_MAP && head->op != RF_K_JOIN)
        return false;
    for (int j = first + 1; j <= last; j++)
        if (!is_chain_link(p, &f->members[j - 1], &f->members[j], head->op == RF_K_MAP))
            return false;
    memset(out, 0, sizeof *out);
    out->op = head->op;
    out->in[0] = head->in[0];
    out->in[1] = head->in[1];
    out->nkeys = head->nkeys;
    out->partition = head->partition;
    out->gather = head->gather;
    out->filter = copy_code(&head->filter);
    out->nproj = head->nproj;
    out->proj = rf_calloc((size_t)head->nproj + 1, sizeof *out->proj);
    for (int j = 0; j < head->nproj; j++)
        out->proj[j] = copy_code(&head->proj[j]);
    out->out = head->out;
    out->origin = rf_origin_dup(f->members[last].origin);
    bool single = head->op == RF_K_MAP;
    for (int m = first + 1; m <= last; m++) {
        const rf_kernel *k = &f->members[m], *prev = &f->members[m - 1];
        /* the previous member's projections, as composed so far */
        rf_code guard = fault_guard(out, &p->vars[prev->out]), filt = {0, NULL};
        rf_code *proj = rf_calloc((size_t)k->nproj + 1, sizeof *proj);
        bool ok = substitute(&k->filter, out->proj, out->nproj, single, &filt);
        for (int j = 0; ok && j < k->nproj; j++)
            ok = substitute(&k->proj[j], out->proj, out->nproj, single, &proj[j]);
        if (!ok) {
            rf_code_free(&guard);
            rf_code_free(&filt);
            for (int j = 0; j < k->nproj; j++)
                rf_code_free(&proj[j]);
            free(proj);
            rf_kernel_free(out);
            return false;
        }
        out->filter = lazy_and(lazy_and(out->filter, guard), filt);
        for (int j = 0; j < out->nproj; j++)
            rf_code_free(&out->proj[j]);
        free(out->proj);
        out->proj = proj;
        out->nproj = k->nproj;
        out->out = k->out;
    }
    return true;
}

bool rf_fused_compose_arg(const rf_kernel *chain, const rf_code *c, rf_code *out)
{
    for (int i = 0; i < c->n; i++)
        if (c->ins[i].op == RF_EX_ROWID)
            return false;
    return substitute(c, chain->proj, chain->nproj, chain->op == RF_K_MAP, out);
}

int rf_join_kept_side(const rf_kernel *chain, int al, int ar)
{
    if (chain->op != RF_K_JOIN || chain->nkeys < 1)
        return -1;
    for (int side = 0; side < 2; side++) {
        int base = side ? al : 0, arity = side ? ar : al;
        bool whole = chain->nproj == arity && arity > 0;
        for (int j = 0; whole && j < chain->nproj; j++)
            whole = rf_code_as_column(&chain->proj[j]) == base + j;
        if (whole)
            return side;
    }
    return -1;
}
