/* Plan -> Harmony IR. The plan is logical (which columns join); here every
 * relation gets a physical layout. Plan relations become sorted variables
 * (they are sets), and every command becomes the kernels that realise it on
 * sorted inputs: re-orderings (MAP) that put key columns first, SORTs that
 * restore the layout invariant, then the operator itself.
 *
 * Re-orderings of a relation that a loop never writes are computed once, in
 * the loop's preheader, and shared by every command of the same region that
 * needs the same column order (transitive closure re-keys `edge` once, not
 * once per iteration). */
#include "hir.h"

#include <stdlib.h>
#include <string.h>

typedef RF_VEC(rf_kernel) kvec;

/* A re-keyed copy of a relation, reusable within one region. */
typedef struct rekey_entry {
    int region;      /* plan block b (in-block) or -(h + 1) (hoisted to h) */
    int rel;
    int nperm;
    int *perm;
    bool keyproj;    /* a projection to key columns (antijoin right side) */
    int var;
} rekey_entry;

typedef struct lower {
    const rf_plan *plan;
    int nb;                  /* plan blocks */
    RF_VEC(rf_hvar) vars;
    kvec *body;              /* [nb] kernels of each plan block */
    kvec *hoist;             /* [nb] kernels hoisted before loop header h */
    RF_VEC(rekey_entry) cache;
    /* CFG of the plan */
    int *term;               /* rf_term per block */
    int *target, *target_else;
    bool *in_loop;           /* [h * nb + x]: x in the natural loop of h */
    bool *is_header;
    int ntemps;
    const char *comment;     /* for the first kernel of the current command */
    kvec *cur;               /* the block being lowered (comments go there) */
    const rf_origin *origin; /* of the command being lowered: every kernel */
} lower;

/* ---- variables ---- */

static bool name_taken(lower *L, const char *name)
{
    for (size_t i = 0; i < L->vars.len; i++)
        if (L->vars.items[i].name && strcmp(L->vars.items[i].name, name) == 0)
            return true;
    return false;
}

/* Adds a variable; `name` (owned) is made unique by a numeric suffix, and
 * a NULL name becomes the next free "tN" (plan temporaries may already use
 * some of those names). */
static int new_var(lower *L, char *name, int arity, const rf_type *types, bool sorted)
{
    if (!name) {
        do {
            free(name);
            name = rf_sprintf("t%d", L->ntemps++);
        } while (name_taken(L, name));
    }
    for (int n = 2; name_taken(L, name); n++) {
        char *base = rf_strdup(name);
        char *dot = strrchr(base, '#');
        if (dot)
            *dot = 0;
        free(name);
        name = rf_sprintf("%s#%d", base, n);
        free(base);
    }
    rf_hvar v;
    memset(&v, 0, sizeof v);
    v.name = name;
    v.arity = arity;
    v.types = rf_calloc(arity > 0 ? (size_t)arity : 1, sizeof *v.types);
    v.limit = -1;
    if (arity > 0)
        memcpy(v.types, types, (size_t)arity * sizeof *types);
    v.sorted = sorted;
    RF_PUSH(L->vars, v);
    return (int)L->vars.len - 1;
}

static int var_arity(lower *L, int v) { return L->vars.items[v].arity; }

/* ---- kernels ---- */

static rf_kernel *emit(lower *L, kvec *kv, rf_kop op, int out, int in0, int in1)
{
    rf_kernel k;
    memset(&k, 0, sizeof k);
    k.op = op;
    k.out = out;
    k.in[0] = in0;
    k.in[1] = in1;
    switch (op) {
    case RF_K_MAP: k.partition = RF_PART_EVEN; k.gather = RF_GATHER_COMPACT; break;
    case RF_K_SORT: k.partition = RF_PART_EVEN; k.gather = RF_GATHER_MERGE; break;
    case RF_K_JOIN:
    case RF_K_ANTIJOIN:
    case RF_K_UNION:
    case RF_K_DIFF: k.partition = RF_PART_KEY_RANGE; k.gather = RF_GATHER_COMPACT; break;
    case RF_K_AGG: k.partition = RF_PART_GROUP; k.gather = RF_GATHER_COMPACT; break;
    /* pieces of the first variable's values, so no binding straddles two */
    case RF_K_MULTIJOIN: k.partition = RF_PART_KEY_RANGE; k.gather = RF_GATHER_COMPACT; break;
    default: k.partition = RF_PART_NONE; k.gather = RF_GATHER_NONE; break;
    }
    if (L->comment && kv == L->cur) {
        k.comment = rf_strdup(L->comment);
        L->comment = NULL;
    }
    if (L->origin)
        k.origin = rf_origin_dup(*L->origin);
    RF_PUSH(*kv, k);
    return &kv->items[kv->len - 1];
}

/* Flattens e and renumbers its column reads through map[0..nmap); a column
 * outside the map becomes -1, which the verifier rejects. */
static void code_mapped(rf_code *out, const rf_expr *e, const int *map, int nmap)
{
    rf_code_from_expr(out, e);
    for (int i = 0; i < out->n; i++) {
        rf_instr *in = &out->ins[i];
        if (in->op == RF_EX_COL)
            in->index = (in->index >= 0 && in->index < nmap) ? map[in->index] : -1;
    }
}

/* A MAP whose projection is columns perm[0..n) of its input. */
static void set_col_proj(rf_kernel *k, const int *perm, int n, const rf_type *in_types)
{
    k->nproj = n;
    k->proj = rf_calloc(n > 0 ? (size_t)n : 1, sizeof *k->proj);
    for (int i = 0; i < n; i++) {
        rf_code *c = &k->proj[i];
        c->n = 1;
        c->ins = rf_calloc(1, sizeof *c->ins);
        c->ins[0].op = RF_EX_COL;
        c->ins[0].type = (uint8_t)in_types[perm[i]];
        c->ins[0].arg_type = (uint8_t)in_types[perm[i]];
        c->ins[0].index = perm[i];
    }
}

static bool is_identity(const int *perm, int n, int arity)
{
    if (n != arity)
        return false;
    for (int i = 0; i < n; i++)
        if (perm[i] != i)
            return false;
    return true;
}

/* ---- loops ---- */

static int nsuccs(lower *L, int b, int s[2])
{
    switch (L->term[b]) {
    case RF_TERM_FALLTHROUGH: s[0] = b + 1; return 1;
    case RF_TERM_JUMP: s[0] = L->target[b]; return 1;
    case RF_TERM_BRANCH_EMPTY:
    case RF_TERM_BRANCH_JOIN: s[0] = L->target[b]; s[1] = L->target_else[b]; return 2;
    default: return 0;
    }
}

/* Terminators of the plan blocks, then dominators and natural loops. */
static void analyse_cfg(lower *L)
{
    const rf_plan *P = L->plan;
    int nb = L->nb;
    L->term = rf_calloc((size_t)nb + 1, sizeof *L->term);
    L->target = rf_calloc((size_t)nb + 1, sizeof *L->target);
    L->target_else = rf_calloc((size_t)nb + 1, sizeof *L->target_else);
    for (int b = 0; b < nb; b++) {
        const rf_plan_block *pb = &P->blocks[b];
        L->term[b] = b + 1 < nb ? RF_TERM_FALLTHROUGH : RF_TERM_HALT;
        L->target[b] = L->target_else[b] = -1;
        for (int i = 0; i < pb->ncmds; i++) {
            const rf_plan_cmd *c = &pb->cmds[i];
            if (c->kind == RF_CMD_JUMP) {
                L->term[b] = RF_TERM_JUMP;
                L->target[b] = c->target;
            } else if (c->kind == RF_CMD_BRANCH_EMPTY || c->kind == RF_CMD_BRANCH_JOIN) {
                L->term[b] = c->kind == RF_CMD_BRANCH_EMPTY ? RF_TERM_BRANCH_EMPTY : RF_TERM_BRANCH_JOIN;
                L->target[b] = c->target;
                L->target_else[b] = c->target_else;
            } else if (c->kind == RF_CMD_HALT) {
                L->term[b] = RF_TERM_HALT;
            } else {
                continue;
            }
            break; /* the first control command ends the block */
        }
        /* A target out of range: leave it for the verifier, but keep the
         * analysis below in bounds. */
    }

    /* Dominators by the iterative algorithm; nb is small. */
    size_t n2 = rf_mul_size((size_t)nb, (size_t)nb);
    bool *dom = rf_calloc(n2 + 1, 1);      /* dom[x*nb + d]: d dominates x */
    bool *reach = rf_calloc((size_t)nb + 1, 1);
    int *stack = rf_calloc((size_t)nb * 2 + 2, sizeof *stack);
    int sp = 0;
    if (nb > 0) {
        reach[0] = true;
        stack[sp++] = 0;
    }
    while (sp > 0) {
        int b = stack[--sp], s[2];
        int ns = nsuccs(L, b, s);
        for (int i = 0; i < ns; i++)
            if (s[i] >= 0 && s[i] < nb && !reach[s[i]]) {
                reach[s[i]] = true;
                stack[sp++] = s[i];
            }
    }
    for (int x = 0; x < nb; x++)
        for (int d = 0; d < nb; d++)
            dom[(size_t)x * nb + d] = x == 0 ? d == 0 : true;
    bool changed = true;
    bool *tmp = rf_calloc((size_t)nb + 1, 1);
    while (changed) {
        changed = false;
        for (int x = 1; x < nb; x++) {
            if (!reach[x])
                continue;
            for (int d = 0; d < nb; d++)
                tmp[d] = true;
            for (int p = 0; p < nb; p++) {
                int s[2], ns = reach[p] ? nsuccs(L, p, s) : 0;
                for (int i = 0; i < ns; i++)
                    if (s[i] == x)
                        for (int d = 0; d < nb; d++)
                            tmp[d] = tmp[d] && dom[(size_t)p * nb + d];
            }
            tmp[x] = true;
            for (int d = 0; d < nb; d++)
                if (dom[(size_t)x * nb + d] != tmp[d]) {
                    dom[(size_t)x * nb + d] = tmp[d];
                    changed = true;
                }
        }
    }

    /* Natural loops: for each back edge b -> h (h dominates b), h plus all
     * blocks that reach b without passing through h. */
    L->in_loop = rf_calloc(n2 + 1, 1);
    L->is_header = rf_calloc((size_t)nb + 1, 1);
    for (int b = 0; b < nb; b++) {
        int s[2], ns = reach[b] ? nsuccs(L, b, s) : 0;
        for (int i = 0; i < ns; i++) {
            int h = s[i];
            if (h < 0 || h >= nb || !dom[(size_t)b * nb + h])
                continue;
            bool *in = &L->in_loop[(size_t)h * nb];
            L->is_header[h] = true;
            in[h] = true;
            sp = 0;
            if (!in[b]) {
                in[b] = true;
                stack[sp++] = b;
            }
            while (sp > 0) {
                int x = stack[--sp];
                for (int p = 0; p < nb; p++) {
                    int t[2], nt = reach[p] ? nsuccs(L, p, t) : 0;
                    for (int j = 0; j < nt; j++)
                        if (t[j] == x && !in[p]) {
                            in[p] = true;
                            stack[sp++] = p;
                        }
                }
            }
        }
    }
    free(tmp);
    free(dom);
    free(reach);
    free(stack);
}

static bool loop_writes(lower *L, int h, int rel)
{
    for (int b = 0; b < L->nb; b++) {
        if (!L->in_loop[(size_t)h * L->nb + b])
            continue;
        const rf_plan_block *pb = &L->plan->blocks[b];
        for (int i = 0; i < pb->ncmds; i++)
            if (pb->cmds[i].dst == rel)
                return true;
    }
    return false;
}

static int loop_size(lower *L, int h)
{
    int n = 0;
    for (int b = 0; b < L->nb; b++)
        n += L->in_loop[(size_t)h * L->nb + b];
    return n;
}

/* The outermost loop around block b that never writes rel, or -1. */
static int hoist_header(lower *L, int b, int rel)
{
    int best = -1, best_size = 0;
    for (int h = 0; h < L->nb; h++) {
        if (!L->is_header[h] || !L->in_loop[(size_t)h * L->nb + b] || loop_writes(L, h, rel))
            continue;
        int n = loop_size(L, h);
        if (n > best_size) {
            best = h;
            best_size = n;
        }
    }
    return best;
}

/* ---- re-keying ---- */

/* Forgets in-block re-keyed copies of rel: block b has just written it. */
static void invalidate(lower *L, int b, int rel)
{
    for (size_t i = 0; i < L->cache.len; i++) {
        rekey_entry *e = &L->cache.items[i];
        if (e->region == b && e->rel == rel)
            e->rel = -1;
    }
}

static char *rekey_name(lower *L, int rel, const int *perm, int nkeys, bool keyproj)
{
    size_t cap = 64 + strlen(L->plan->rels[rel].name) + (size_t)nkeys * 12;
    char *s = rf_malloc(cap);
    int n = snprintf(s, cap, "%s.%s", L->plan->rels[rel].name, keyproj ? "keys" : "by");
    for (int i = 0; i < nkeys; i++)
        n += snprintf(s + n, cap - (size_t)n, i ? "_%d" : "%d", perm[i]);
    if (nkeys == 0)
        snprintf(s + n, cap - (size_t)n, "none");
    return s;
}

/* Returns a sorted variable holding { perm(t) | t in rel } (the first nkeys
 * entries of perm are the key columns, used for the name). Without a
 * filter the copy is cached per region and, when no loop around block b
 * writes rel, computed once before the outermost such loop. */
static int rekey(lower *L, int b, int rel, const int *perm, int nperm, int nkeys,
                 bool keyproj, const rf_expr *filter)
{
    const rf_plan_rel *r = &L->plan->rels[rel];
    if (!filter && is_identity(perm, nperm, r->arity))
        return rel;
    int region = b;
    kvec *kv = &L->body[b];
    if (!filter) {
        int h = hoist_header(L, b, rel);
        if (h >= 0) {
            region = -(h + 1);
            kv = &L->hoist[h];
        }
        for (size_t i = 0; i < L->cache.len; i++) {
            rekey_entry *e = &L->cache.items[i];
            if (e->region == region && e->rel == rel && e->keyproj == keyproj &&
                e->nperm == nperm && memcmp(e->perm, perm, (size_t)nperm * sizeof *perm) == 0)
                return e->var;
        }
    }
    rf_type *types = rf_calloc((size_t)nperm + 1, sizeof *types);
    for (int i = 0; i < nperm; i++)
        types[i] = (perm[i] >= 0 && perm[i] < r->arity) ? r->types[perm[i]] : RF_TYPE_INVALID;
    int out = new_var(L, rekey_name(L, rel, perm, nkeys, keyproj), nperm, types, true);
    int mid = out;
    if (!is_identity(perm, nperm, r->arity))
        mid = new_var(L, NULL, nperm, types, false);
    rf_kernel *k = emit(L, kv, RF_K_MAP, mid, rel, -1);
    if (region < 0) {
        const char *label = L->plan->blocks[-region - 1].label;
        k->comment = rf_sprintf("loop-invariant: re-key %s once before %s", r->name,
                                label ? label : "the loop");
    }
    int *ident = rf_calloc((size_t)r->arity + 1, sizeof *ident);
    for (int i = 0; i < r->arity; i++)
        ident[i] = i;
    code_mapped(&k->filter, filter, ident, r->arity);
    free(ident);
    /* A key outside rel (malformed plan) becomes column -1, which the
     * verifier rejects. */
    int *safe = rf_calloc((size_t)nperm + 1, sizeof *safe);
    for (int i = 0; i < nperm; i++)
        safe[i] = (perm[i] >= 0 && perm[i] < r->arity) ? perm[i] : 0;
    set_col_proj(k, safe, nperm, r->types);
    for (int i = 0; i < nperm; i++)
        if (safe[i] != perm[i])
            k->proj[i].ins[0].index = -1;
    free(safe);
    if (mid != out)
        emit(L, kv, RF_K_SORT, out, mid, -1);
    free(types);
    if (!filter) {
        rekey_entry e = {region, rel, nperm, rf_calloc((size_t)nperm + 1, sizeof(int)), keyproj, out};
        memcpy(e.perm, perm, (size_t)nperm * sizeof *perm);
        RF_PUSH(L->cache, e);
    }
    return out;
}

/* Key columns first (in key order), then the remaining columns in order.
 * Returns the layout's arity; pos[c] is where original column c lands. */
static int key_first(const int *keys, int nkeys, int arity, int *perm, int *pos)
{
    int n = 0;
    for (int c = 0; c < arity; c++)
        pos[c] = -1;
    for (int i = 0; i < nkeys; i++) {
        perm[n] = keys[i];
        if (keys[i] >= 0 && keys[i] < arity && pos[keys[i]] < 0)
            pos[keys[i]] = n;
        n++;
    }
    for (int c = 0; c < arity; c++)
        if (pos[c] < 0) {
            pos[c] = n;
            perm[n++] = c;
        }
    return n;
}

/* ---- commands ---- */

static int rel_arity(lower *L, int rel) { return L->plan->rels[rel].arity; }
static bool valid_rel(lower *L, int rel) { return rel >= 0 && rel < L->plan->nrels; }

/* Emits op into dst, through a temporary when dst is also an input (a kernel
 * may not write its own input; the COPY becomes a move in the runtime). */
static rf_kernel *emit_into(lower *L, int b, rf_kop op, int dst, int in0, int in1)
{
    if (dst != in0 && dst != in1)
        return emit(L, &L->body[b], op, dst, in0, in1);
    int t = new_var(L, NULL, var_arity(L, dst), L->vars.items[dst].types, L->vars.items[dst].sorted);
    emit(L, &L->body[b], op, t, in0, in1);
    emit(L, &L->body[b], RF_K_COPY, dst, t, -1);
    return &L->body[b].items[L->body[b].len - 2];
}

static void proj_codes(rf_kernel *k, rf_expr **proj, int nproj, const int *map, int nmap)
{
    k->nproj = nproj;
    k->proj = rf_calloc(nproj > 0 ? (size_t)nproj : 1, sizeof *k->proj);
    for (int i = 0; i < nproj; i++)
        code_mapped(&k->proj[i], proj[i], map, nmap);
}

static bool proj_is_identity(rf_expr **proj, int nproj, int arity)
{
    if (nproj != arity)
        return false;
    for (int i = 0; i < nproj; i++)
        if (!proj[i] || proj[i]->op != RF_EX_COL || proj[i]->index != i)
            return false;
    return true;
}

static void lower_mapfilter(lower *L, int b, const rf_plan_cmd *c)
{
    int src = c->src[0], dst = c->dst;
    int a = rel_arity(L, src);
    int *ident = rf_calloc((size_t)a + 1, sizeof *ident);
    for (int i = 0; i < a; i++)
        ident[i] = i;
    if (proj_is_identity(c->proj, c->nproj, a) && rel_arity(L, dst) == a) {
        /* A pure filter of a sorted set is sorted and duplicate-free. */
        if (!c->filter) {
            if (dst != src)
                emit(L, &L->body[b], RF_K_COPY, dst, src, -1);
        } else {
            rf_kernel *k = emit_into(L, b, RF_K_MAP, dst, src, -1);
            code_mapped(&k->filter, c->filter, ident, a);
            proj_codes(k, c->proj, c->nproj, ident, a);
        }
    } else {
        int t = new_var(L, NULL, rel_arity(L, dst), L->plan->rels[dst].types, false);
        rf_kernel *k = emit(L, &L->body[b], RF_K_MAP, t, src, -1);
        code_mapped(&k->filter, c->filter, ident, a);
        proj_codes(k, c->proj, c->nproj, ident, a);
        emit(L, &L->body[b], RF_K_SORT, dst, t, -1);
    }
    free(ident);
}

static void lower_join(lower *L, int b, const rf_plan_cmd *c)
{
    int l = c->src[0], r = c->src[1];
    int la = rel_arity(L, l), ra = rel_arity(L, r), nk = c->nkeys;
    int *lperm = rf_calloc((size_t)(la + nk) + 1, sizeof(int));
    int *rperm = rf_calloc((size_t)(ra + nk) + 1, sizeof(int));
    int *lpos = rf_calloc((size_t)la + 1, sizeof(int));
    int *rpos = rf_calloc((size_t)ra + 1, sizeof(int));
    int lnew = key_first(c->lkeys, nk, la, lperm, lpos);
    int rnew = key_first(c->rkeys, nk, ra, rperm, rpos);
    int lv = rekey(L, b, l, lperm, lnew, nk, false, NULL);
    int rv = rekey(L, b, r, rperm, rnew, nk, false, NULL);
    /* Column c of l ++ r in the re-keyed layouts. */
    int *map = rf_calloc((size_t)(la + ra) + 1, sizeof(int));
    for (int i = 0; i < la; i++)
        map[i] = lpos[i];
    for (int i = 0; i < ra; i++)
        map[la + i] = lnew + rpos[i];
    int t = new_var(L, NULL, rel_arity(L, c->dst), L->plan->rels[c->dst].types, false);
    rf_kernel *k = emit(L, &L->body[b], RF_K_JOIN, t, lv, rv);
    k->nkeys = nk;
    code_mapped(&k->filter, c->filter, map, la + ra);
    proj_codes(k, c->proj, c->nproj, map, la + ra);
    emit(L, &L->body[b], RF_K_SORT, c->dst, t, -1);
    free(lperm);
    free(rperm);
    free(lpos);
    free(rpos);
    free(map);
}

static void lower_antijoin(lower *L, int b, const rf_plan_cmd *c)
{
    int l = c->src[0], r = c->src[1];
    int la = rel_arity(L, l), ra = rel_arity(L, r), nk = c->nkeys;
    int *lperm = rf_calloc((size_t)(la + nk) + 1, sizeof(int));
    int *lpos = rf_calloc((size_t)la + 1, sizeof(int));
    int lnew = key_first(c->lkeys, nk, la, lperm, lpos);
    int lv = rekey(L, b, l, lperm, lnew, nk, false, c->filter);
    /* The right side only needs its key columns; it is usable as is when
     * they are already its leading columns. */
    bool prefix = nk <= ra;
    for (int i = 0; i < nk && prefix; i++)
        prefix = c->rkeys[i] == i;
    int rv = prefix ? r : rekey(L, b, r, c->rkeys, nk, nk, true, NULL);
    if (proj_is_identity(c->proj, c->nproj, la) && is_identity(lperm, lnew, la)) {
        emit_into(L, b, RF_K_ANTIJOIN, c->dst, lv, rv)->nkeys = nk;
    } else {
        rf_type *types = L->vars.items[lv].types;
        int anti = new_var(L, NULL, lnew, types, true);
        emit(L, &L->body[b], RF_K_ANTIJOIN, anti, lv, rv)->nkeys = nk;
        int t = new_var(L, NULL, rel_arity(L, c->dst), L->plan->rels[c->dst].types, false);
        rf_kernel *k = emit(L, &L->body[b], RF_K_MAP, t, anti, -1);
        proj_codes(k, c->proj, c->nproj, lpos, la);
        emit(L, &L->body[b], RF_K_SORT, c->dst, t, -1);
    }
    free(lperm);
    free(lpos);
}

/* The second order a multiway join may run in (hir.h, alt_order): the
 * planner's reversed, where both orders' last levels are triangles whose
 * work the backend can estimate (rf_mj_last_level) and the reverse never
 * binds a variable unlinked to those before it. Else NULL: one order. */
static int *reversed_order(const rf_multijoin *mj)
{
    int rev[RF_MULTIJOIN_MAX_VARS];
    rf_mj_last a, z;
    if (mj->nvars < 3 || mj->nvars > RF_MULTIJOIN_MAX_VARS)
        return NULL;
    for (int k = 0; k < mj->nvars; k++)
        rev[k] = mj->nvars - 1 - k;
    if (!rf_mj_last_level(mj->nin, mj->in_first, mj->in_vars, mj->nvars, NULL, &a) ||
        !rf_mj_last_level(mj->nin, mj->in_first, mj->in_vars, mj->nvars, rev, &z) ||
        !rf_mj_order_connected(mj->nin, mj->in_first, mj->in_vars, mj->nvars, rev))
        return NULL;
    int *alt = rf_malloc((size_t)mj->nvars * sizeof *alt);
    memcpy(alt, rev, (size_t)mj->nvars * sizeof *alt);
    return alt;
}

/* Each source re-keyed so that its columns follow the variable order (a
 * trie in that order: the leapfrog intersects a column's values within
 * the rows that agree on the columns before), then the join into an
 * unsorted temporary and a SORT into dst. Re-keyings of loop-invariant
 * sources are hoisted and shared like a binary join's. */
static void lower_multijoin(lower *L, int b, const rf_plan_cmd *c)
{
    rf_multijoin *mj = rf_calloc(1, sizeof *mj);
    mj->nvars = c->nvars;
    mj->nin = c->nins;
    mj->in = rf_calloc((size_t)c->nins + 1, sizeof *mj->in);
    mj->in_first = rf_calloc((size_t)c->nins + 1, sizeof *mj->in_first);
    mj->in_vars = rf_calloc((size_t)c->in_first[c->nins] + 1, sizeof *mj->in_vars);
    for (int i = 0; i < c->nins; i++) {
        int a = rel_arity(L, c->ins[i]);
        const int *vars = c->in_vars + c->in_first[i];
        int *perm = rf_calloc((size_t)a + 1, sizeof *perm);
        /* columns by increasing variable (insertion sort: a few columns) */
        for (int j = 0; j < a; j++) {
            int k = j;
            while (k > 0 && vars[perm[k - 1]] > vars[j]) {
                perm[k] = perm[k - 1];
                k--;
            }
            perm[k] = j;
        }
        mj->in[i] = rekey(L, b, c->ins[i], perm, a, a, false, NULL);
        mj->in_first[i + 1] = mj->in_first[i] + a;
        for (int j = 0; j < a; j++)
            mj->in_vars[mj->in_first[i] + j] = vars[perm[j]];
        free(perm);
    }
    mj->alt_order = reversed_order(mj);
    int *ident = rf_calloc((size_t)c->nvars + 1, sizeof *ident);
    for (int x = 0; x < c->nvars; x++)
        ident[x] = x;
    int t = new_var(L, NULL, rel_arity(L, c->dst), L->plan->rels[c->dst].types, false);
    rf_kernel *k = emit(L, &L->body[b], RF_K_MULTIJOIN, t, -1, -1);
    k->mj = mj;
    code_mapped(&k->filter, c->filter, ident, c->nvars);
    proj_codes(k, c->proj, c->nproj, ident, c->nvars);
    emit(L, &L->body[b], RF_K_SORT, c->dst, t, -1);
    free(ident);
}

static void lower_aggregate(lower *L, int b, const rf_plan_cmd *c)
{
    int src = c->src[0], a = rel_arity(L, src), nk = c->nkeys;
    int *perm = rf_calloc((size_t)(a + nk) + 1, sizeof(int));
    int *pos = rf_calloc((size_t)a + 1, sizeof(int));
    int n = key_first(c->lkeys, nk, a, perm, pos);
    int v = rekey(L, b, src, perm, n, nk, false, c->filter);
    rf_kernel *k = emit_into(L, b, RF_K_AGG, c->dst, v, -1);
    k->nkeys = nk;
    k->naggs = c->naggs;
    k->aggfn = rf_malloc((size_t)c->naggs * sizeof *k->aggfn);
    k->agg_arg = rf_calloc((size_t)c->naggs, sizeof *k->agg_arg);
    for (int j = 0; j < c->naggs; j++) {
        k->aggfn[j] = c->aggfn[j];
        code_mapped(&k->agg_arg[j], c->agg_arg[j], pos, a);
    }
    free(perm);
    free(pos);
}

static void lower_cmd(lower *L, int b, const rf_plan_cmd *c)
{
    bool ok = true;
    switch (c->kind) {
    case RF_CMD_LOAD:
    case RF_CMD_CLEAR:
        ok = valid_rel(L, c->dst);
        break;
    case RF_CMD_MAPFILTER:
    case RF_CMD_AGGREGATE:
    case RF_CMD_COPY:
        ok = valid_rel(L, c->dst) && valid_rel(L, c->src[0]);
        break;
    case RF_CMD_MAPJOIN:
    case RF_CMD_ANTIJOIN:
    case RF_CMD_UNION:
    case RF_CMD_DIFFERENCE:
        ok = valid_rel(L, c->dst) && valid_rel(L, c->src[0]) && valid_rel(L, c->src[1]);
        break;
    case RF_CMD_CHECK_KEYS:
        ok = valid_rel(L, c->src[0]) && c->nkeys >= 0;
        break;
    case RF_CMD_MULTIJOIN:
        ok = valid_rel(L, c->dst) && c->nins >= 1 && c->nins <= RF_MULTIJOIN_MAX_IN && c->ins &&
             c->in_first && c->in_vars && c->nvars >= 1 && c->nvars <= RF_MULTIJOIN_MAX_VARS &&
             c->in_first[0] == 0;
        for (int i = 0; ok && i < c->nins; i++) {
            ok = valid_rel(L, c->ins[i]) && c->in_first[i + 1] - c->in_first[i] == rel_arity(L, c->ins[i]);
            for (int j = c->in_first[i]; ok && j < c->in_first[i + 1]; j++)
                ok = c->in_vars[j] >= 0 && c->in_vars[j] < c->nvars;
        }
        break;
    default:
        return;
    }
    if (ok && c->kind != RF_CMD_CHECK_KEYS && (c->nkeys < 0 || (c->nkeys > 0 && (!c->lkeys ||
               (c->kind != RF_CMD_AGGREGATE && !c->rkeys)))))
        ok = false;
    if (ok && (c->nproj < 0 || (c->nproj > 0 && !c->proj)))
        ok = false;
    if (!ok) {
        /* A malformed command: keep a kernel the verifier will reject. */
        emit(L, &L->body[b], RF_K_COPY, -1, -1, -1);
        return;
    }
    L->comment = c->comment;
    L->origin = &c->origin;
    L->cur = &L->body[b];
    switch (c->kind) {
    case RF_CMD_LOAD: emit(L, &L->body[b], RF_K_LOAD, c->dst, -1, -1); break;
    case RF_CMD_CLEAR: emit(L, &L->body[b], RF_K_CLEAR, c->dst, -1, -1); break;
    case RF_CMD_COPY:
        if (c->dst != c->src[0])
            emit(L, &L->body[b], RF_K_COPY, c->dst, c->src[0], -1);
        break;
    case RF_CMD_MAPFILTER: lower_mapfilter(L, b, c); break;
    case RF_CMD_MAPJOIN: lower_join(L, b, c); break;
    case RF_CMD_MULTIJOIN: lower_multijoin(L, b, c); break;
    case RF_CMD_ANTIJOIN: lower_antijoin(L, b, c); break;
    case RF_CMD_AGGREGATE: lower_aggregate(L, b, c); break;
    case RF_CMD_UNION: emit_into(L, b, RF_K_UNION, c->dst, c->src[0], c->src[1]); break;
    case RF_CMD_DIFFERENCE: emit_into(L, b, RF_K_DIFF, c->dst, c->src[0], c->src[1]); break;
    case RF_CMD_CHECK_KEYS: emit(L, &L->body[b], RF_K_CHECK_KEYS, -1, c->src[0], -1)->nkeys = c->nkeys; break;
    default: break;
    }
    L->comment = NULL;
    L->origin = NULL;
    invalidate(L, b, c->dst);
}

/* ---- assembly ---- */

static void move_kernels(rf_hblock *hb, kvec *a, kvec *b)
{
    size_t n = a->len + (b ? b->len : 0);
    hb->nkernels = (int)n;
    hb->kernels = rf_calloc(n + 1, sizeof *hb->kernels);
    if (a->len)
        memcpy(hb->kernels, a->items, a->len * sizeof *a->items);
    if (b && b->len)
        memcpy(hb->kernels + a->len, b->items, b->len * sizeof *b->items);
    RF_VEC_FREE(*a);
    if (b)
        RF_VEC_FREE(*b);
}

static void elide_resorts(rf_hprogram *p); /* below */
static void count_multijoins(rf_hprogram *p); /* below */

/* RF_WCOJ_COUNT=0: counted multiway joins make their bindings (for tests
 * and measuring; count_multijoins). */
static bool count_multijoins_on(void)
{
    const char *e = getenv("RF_WCOJ_COUNT");
    return !(e && strcmp(e, "0") == 0);
}

rf_hprogram *rf_hir_lower(const rf_plan *plan)
{
    lower L;
    memset(&L, 0, sizeof L);
    L.plan = plan;
    L.nb = plan->nblocks;
    int nb = L.nb;

    for (int i = 0; i < plan->nrels; i++) {
        const rf_plan_rel *r = &plan->rels[i];
        int v = new_var(&L, rf_strdup(r->name), r->arity, r->types, true);
        rf_hvar *hv = &L.vars.items[v];
        if (r->pred >= 0 && (r->kind == RF_REL_INPUT || r->kind == RF_REL_DERIVED))
            hv->pred = rf_strdup(r->name);
        /* A nullary relation holds at most the empty tuple (a set). */
        hv->nfacts = r->arity > 0 ? r->nfacts : (r->nfacts > 0);
        if (r->nfacts && r->arity > 0) {
            size_t n = rf_mul_size(r->nfacts, (size_t)r->arity);
            hv->facts = rf_calloc(n, sizeof *hv->facts);
            memcpy(hv->facts, r->facts, n * sizeof *hv->facts);
        }
        hv->input_path = r->input_path ? rf_strdup(r->input_path) : NULL;
        hv->input_where = r->input_where ? rf_strdup(r->input_where) : NULL;
        hv->input_format = r->input_format;
        hv->is_output = r->is_output;
        hv->norder = r->norder;
        if (r->norder > 0) {
            hv->order_cols = rf_malloc((size_t)r->norder * sizeof *hv->order_cols);
            hv->order_desc = rf_malloc((size_t)r->norder * sizeof *hv->order_desc);
            memcpy(hv->order_cols, r->order_cols, (size_t)r->norder * sizeof *hv->order_cols);
            memcpy(hv->order_desc, r->order_desc, (size_t)r->norder * sizeof *hv->order_desc);
        }
        hv->limit = r->limit;
    }

    analyse_cfg(&L);
    L.body = rf_calloc((size_t)nb + 1, sizeof *L.body);
    L.hoist = rf_calloc((size_t)nb + 1, sizeof *L.hoist);
    for (int b = 0; b < nb; b++)
        for (int i = 0; i < plan->blocks[b].ncmds; i++) {
            const rf_plan_cmd *c = &plan->blocks[b].cmds[i];
            if (c->kind == RF_CMD_JUMP || c->kind == RF_CMD_BRANCH_EMPTY || c->kind == RF_CMD_HALT ||
                c->kind == RF_CMD_BRANCH_JOIN)
                break;
            lower_cmd(&L, b, c);
        }

    /* Hoisted kernels go to the end of the loop's unique outside
     * predecessor when it leads only to the header; otherwise to a new
     * preheader block placed right before the header. */
    int *pre = rf_calloc((size_t)nb + 1, sizeof *pre);     /* append-to block or -1 */
    bool *newpre = rf_calloc((size_t)nb + 1, 1);
    int nnew = 0;
    for (int h = 0; h < nb; h++) {
        pre[h] = -1;
        if (!L.hoist[h].len)
            continue;
        int outside = -1, count = 0;
        for (int p = 0; p < nb; p++) {
            int s[2], ns = nsuccs(&L, p, s);
            for (int i = 0; i < ns; i++)
                if (s[i] == h && !L.in_loop[(size_t)h * nb + p]) {
                    outside = p;
                    count++;
                }
        }
        int s[2];
        if (count == 1 && nsuccs(&L, outside, s) == 1 && !L.is_header[outside]) {
            pre[h] = outside;
        } else {
            newpre[h] = true;
            nnew++;
        }
    }
    /* New indices. */
    int *idx = rf_calloc((size_t)nb + 1, sizeof *idx);
    int *preidx = rf_calloc((size_t)nb + 1, sizeof *preidx);
    int n = 0;
    for (int b = 0; b < nb; b++) {
        preidx[b] = newpre[b] ? n++ : -1;
        idx[b] = n++;
    }

    rf_hprogram *p = rf_calloc(1, sizeof *p);
    p->nblocks = n;
    p->blocks = rf_calloc((size_t)n + 1, sizeof *p->blocks);
    for (int b = 0; b < nb; b++) {
        const char *label = plan->blocks[b].label ? plan->blocks[b].label : "block";
        if (newpre[b]) {
            rf_hblock *hb = &p->blocks[preidx[b]];
            hb->label = rf_sprintf("%s.preheader", label);
            move_kernels(hb, &L.hoist[b], NULL);
            hb->term = RF_TERM_FALLTHROUGH;
            hb->target = hb->target_else = -1;
        }
        rf_hblock *hb = &p->blocks[idx[b]];
        hb->label = rf_strdup(label);
        kvec *extra = NULL;
        for (int h = 0; h < nb; h++)
            if (pre[h] == b)
                extra = &L.hoist[h]; /* a block leads to one header only */
        move_kernels(hb, &L.body[b], extra);
        hb->term = (rf_term)L.term[b];
        hb->target = hb->target_else = -1;
        /* Edge b -> t: to t's new preheader when entering t's loop. */
#define EDGE(t) ((t) < 0 || (t) >= nb ? -1 \
                 : (newpre[t] && !L.in_loop[(size_t)(t) * nb + b]) ? preidx[t] : idx[t])
        if (hb->term == RF_TERM_JUMP) {
            hb->target = EDGE(L.target[b]);
        } else if (hb->term == RF_TERM_BRANCH_EMPTY || hb->term == RF_TERM_BRANCH_JOIN) {
            hb->target = EDGE(L.target[b]);
            hb->target_else = EDGE(L.target_else[b]);
        } else if (hb->term == RF_TERM_FALLTHROUGH && b + 1 < nb && EDGE(b + 1) != idx[b] + 1) {
            hb->term = RF_TERM_JUMP;
            hb->target = EDGE(b + 1);
        }
#undef EDGE
        if (hb->term == RF_TERM_BRANCH_EMPTY) {
            for (int i = 0; i < plan->blocks[b].ncmds; i++) {
                const rf_plan_cmd *c = &plan->blocks[b].cmds[i];
                if (c->kind != RF_CMD_BRANCH_EMPTY)
                    continue;
                hb->nconds = c->nconds > 0 ? c->nconds : 0;
                hb->conds = rf_calloc((size_t)hb->nconds + 1, sizeof *hb->conds);
                if (hb->nconds)
                    memcpy(hb->conds, c->conds, (size_t)hb->nconds * sizeof *hb->conds);
                break;
            }
        }
        if (hb->term == RF_TERM_BRANCH_JOIN) {
            /* plan relations are the first variables, numbered alike */
            const rf_plan_cmd *c = &plan->blocks[b].cmds[plan->blocks[b].ncmds - 1];
            int nk = c->kind == RF_CMD_BRANCH_JOIN && c->nkeys > 0 ? c->nkeys : 0;
            hb->nconds = 2;
            hb->conds = rf_calloc(3, sizeof *hb->conds);
            hb->conds[0] = c->src[0];
            hb->conds[1] = c->src[1];
            hb->nkeys = nk;
            hb->nvars = c->nvars;
            hb->natoms = c->nins;
            hb->lkeys = rf_calloc((size_t)nk + 1, sizeof *hb->lkeys);
            hb->rkeys = rf_calloc((size_t)nk + 1, sizeof *hb->rkeys);
            if (nk) {
                memcpy(hb->lkeys, c->lkeys, (size_t)nk * sizeof *hb->lkeys);
                memcpy(hb->rkeys, c->rkeys, (size_t)nk * sizeof *hb->rkeys);
            }
        }
    }
    for (int b = 0; b < nb; b++) {
        RF_VEC_FREE(L.body[b]);
        RF_VEC_FREE(L.hoist[b]);
    }
    p->nvars = (int)L.vars.len;
    p->vars = L.vars.items;
    for (size_t i = 0; i < L.cache.len; i++)
        free(L.cache.items[i].perm);
    RF_VEC_FREE(L.cache);
    free(L.body);
    free(L.hoist);
    free(L.term);
    free(L.target);
    free(L.target_else);
    free(L.in_loop);
    free(L.is_header);
    free(pre);
    free(newpre);
    free(idx);
    free(preidx);
    elide_resorts(p);
    if (count_multijoins_on())
        count_multijoins(p);
    rf_hir_liveness(p);
    return p;
}

/* ---- sorts nothing needs ---- */

/* Kernels reading (or, writes = true, writing) variable v, anywhere;
 * a block condition counts as a read. */
static int uses(const rf_hprogram *p, int v, bool writes)
{
    int n = 0;
    for (int b = 0; b < p->nblocks; b++) {
        const rf_hblock *hb = &p->blocks[b];
        for (int i = 0; i < hb->nkernels; i++) {
            const rf_kernel *k = &hb->kernels[i];
            if (writes) {
                n += k->out == v;
                continue;
            }
            int vars[RF_KERNEL_VARS_MAX];
            int nr = rf_kernel_reads(k, vars);
            for (int j = 0; j < nr; j++)
                n += vars[j] == v;
        }
        for (int i = 0; !writes && i < hb->nconds; i++)
            n += hb->conds[i] == v;
    }
    return n;
}

static void remove_kernel(rf_hblock *hb, int i)
{
    rf_kernel_free(&hb->kernels[i]);
    memmove(hb->kernels + i, hb->kernels + i + 1, (size_t)(hb->nkernels - i - 1) * sizeof *hb->kernels);
    hb->nkernels--;
}

/* A join or map whose result is sorted into a set that only a re-keying
 * map reads, which re-sorts it in another order:
 *     t := K(...); s := SORT t; ...; u := MAP s [columns]; v := SORT u
 * becomes  u := K(...) [K's projections re-ordered]; ...; v := SORT u.
 * The first sort only removed duplicates, which v's sort removes as well
 * (and in bag bodies there are none: rows carry their identities). Each
 * join step of a multi-way join then sorts once instead of twice. */
static void elide_resorts(rf_hprogram *p)
{
    for (int b = 0; b < p->nblocks; b++) {
        rf_hblock *hb = &p->blocks[b];
        for (int i = 1; i < hb->nkernels; i++) {
            rf_kernel *sort = &hb->kernels[i], *k = &hb->kernels[i - 1];
            if (sort->op != RF_K_SORT || (k->op != RF_K_JOIN && k->op != RF_K_MAP && k->op != RF_K_MULTIJOIN) ||
                k->out != sort->in[0])
                continue;
            int t = k->out, s = sort->out;
            const rf_hvar *sv = &p->vars[s];
            if (sv->pred || sv->is_output || uses(p, t, false) != 1 || uses(p, t, true) != 1 ||
                uses(p, s, false) != 1 || uses(p, s, true) != 1)
                continue;
            int m = i + 1;
            while (m < hb->nkernels && hb->kernels[m].in[0] != s && hb->kernels[m].in[1] != s)
                m++;
            if (m + 1 >= hb->nkernels)
                continue;
            rf_kernel *map = &hb->kernels[m], *resort = &hb->kernels[m + 1];
            bool columns = map->op == RF_K_MAP && map->in[0] == s && map->filter.n == 0 &&
                           resort->op == RF_K_SORT && resort->in[0] == map->out &&
                           uses(p, map->out, false) == 1 && uses(p, map->out, true) == 1;
            for (int j = 0; columns && j < map->nproj; j++)
                columns = rf_code_as_column(&map->proj[j]) >= 0 &&
                          rf_code_as_column(&map->proj[j]) < k->nproj;
            if (!columns)
                continue;
            rf_code *proj = rf_calloc((size_t)map->nproj + 1, sizeof *proj);
            for (int j = 0; j < map->nproj; j++) {
                const rf_code *from = &k->proj[rf_code_as_column(&map->proj[j])];
                proj[j].n = from->n;
                proj[j].ins = rf_malloc((size_t)(from->n > 0 ? from->n : 1) * sizeof *proj[j].ins);
                memcpy(proj[j].ins, from->ins, (size_t)from->n * sizeof *from->ins);
            }
            for (int j = 0; j < k->nproj; j++)
                rf_code_free(&k->proj[j]);
            free(k->proj);
            k->proj = proj;
            k->nproj = map->nproj;
            k->out = map->out;
            remove_kernel(hb, m);   /* the map (after the sort: index first) */
            remove_kernel(hb, i);   /* the first sort */
            i--;
        }
    }
}

/* ---- counts of multiway joins ---- */

/* Where variable v is written: the one kernel writing it (its block and
 * index; false unless exactly one writes it). */
static bool sole_writer(const rf_hprogram *p, int v, int *b_out, int *i_out)
{
    int n = 0;
    for (int b = 0; b < p->nblocks; b++)
        for (int i = 0; i < p->blocks[b].nkernels; i++)
            if (p->blocks[b].kernels[i].out == v) {
                *b_out = b;
                *i_out = i;
                n++;
            }
    return n == 1;
}

/* Whether block b lies in a loop: some block at or after it jumps back to
 * it or before it. */
static bool in_loop(const rf_hprogram *p, int b)
{
    for (int x = b; x < p->nblocks; x++) {
        const rf_hblock *hb = &p->blocks[x];
        bool jumps = hb->term == RF_TERM_JUMP || hb->term == RF_TERM_BRANCH_EMPTY || hb->term == RF_TERM_BRANCH_JOIN;
        if (jumps && (hb->target <= b || ((hb->term != RF_TERM_JUMP) && hb->target_else <= b)))
            return true;
    }
    return false;
}

/* Whether a kernel other than `except`, or a block condition, in blocks
 * from..to (in order; from's kernels from index i0 on) reads v. */
static bool read_between(const rf_hprogram *p, int v, int from, int i0, int to, const rf_kernel *except)
{
    for (int b = from; b <= to; b++) {
        const rf_hblock *hb = &p->blocks[b];
        for (int i = b == from ? i0 : 0; i < hb->nkernels; i++) {
            const rf_kernel *k = &hb->kernels[i];
            int vars[RF_KERNEL_VARS_MAX], nr = k == except ? 0 : rf_kernel_reads(k, vars);
            for (int j = 0; j < nr; j++)
                if (vars[j] == v)
                    return true;
        }
        for (int i = 0; i < hb->nconds; i++)
            if (hb->conds[i] == v)
                return true;
    }
    return false;
}

/* The MULTIJOIN t := MULTIJOIN(...) [every variable once, in any order,
 * no filter] sorted into r (r := SORT t, t read by nothing else) in block
 * b: its index (-1: not so). Its bindings are distinct, so r's rows are
 * they, as many. */
static int listing_into(const rf_hprogram *p, int r, int b)
{
    const rf_hblock *hb = &p->blocks[b];
    for (int i = 0; i < hb->nkernels; i++) {
        const rf_kernel *sort = &hb->kernels[i];
        if (sort->out != r || sort->op != RF_K_SORT || uses(p, sort->in[0], false) != 1 ||
            uses(p, sort->in[0], true) != 1)
            continue;
        for (int a = 0; a < i; a++) {
            const rf_kernel *k = &hb->kernels[a];
            if (k->out != sort->in[0])
                continue;
            bool listing = k->op == RF_K_MULTIJOIN && k->mj && !k->mj->count && k->filter.n == 0 &&
                           k->nproj == k->mj->nvars;
            uint32_t seen = 0;   /* (at most RF_MULTIJOIN_MAX_VARS variables) */
            for (int j = 0; listing && j < k->nproj; j++) {
                int col = rf_code_as_column(&k->proj[j]);
                listing = col >= 0 && col < k->mj->nvars && !(seen & (1u << col));
                seen |= listing ? 1u << col : 0;
            }
            return listing ? a : -1;
        }
    }
    return -1;
}

/* A keyless count() of the rows of r, where r is a multiway join's listing
 * read by nothing else:
 *     t := MULTIJOIN(...); r := SORT t; ...; u := MAP r [rowid]; w := SORT u;
 *     n := AGG[keys=0] w [count()]
 * (a count over the listing's relation), or  ...; n := AGG[keys=0] r [count()]
 * (a count over the body itself, which the planner then plans with every
 * variable: plan_build.c, counted_by_multijoin)
 * becomes  n := MULTIJOIN[count](...): the bindings are counted, none made
 * (a triangle count of R-MAT 20 made 140M rows, 3.4 GB, for one number).
 * Under --join=auto the listing is made in one arm of a BRANCH_JOIN and
 * the binary joins make r in the other: that arm counts, and the MAP, SORT
 * and AGG move to the end of the binary arm. Outside loops only, where
 * nothing between reads n. */
static void count_multijoins(rf_hprogram *p)
{
    for (int be = 0; be < p->nblocks; be++) {
        rf_hblock *hb = &p->blocks[be];
        for (int ie = 0; ie < hb->nkernels; ie++) {
            rf_kernel *agg = &hb->kernels[ie];
            int n = agg->out;
            if (agg->op != RF_K_AGG || agg->nkeys != 0 || agg->naggs != 1 || agg->aggfn[0] != RF_AGG_COUNT ||
                p->vars[n].arity != 1 || !p->vars[n].types || p->vars[n].types[0] != RF_TYPE_INT64 ||
                uses(p, n, true) != 1)
                continue;
            /* the count's kernels (the AGG last) and the relation counted */
            int w = agg->in[0], r = w, chain[3], nchain = 0, bd = -1, id = -1, bc = -1, ic = -1;
            if (w < 0 || uses(p, w, false) != 1)
                continue;
            if (sole_writer(p, w, &bd, &id) && bd == be && id < ie && hb->kernels[id].op == RF_K_SORT &&
                uses(p, hb->kernels[id].in[0], false) == 1 && sole_writer(p, hb->kernels[id].in[0], &bc, &ic) &&
                bc == be && ic < id) {
                const rf_kernel *map = &hb->kernels[ic];
                if (map->op == RF_K_MAP && map->filter.n == 0 && map->nproj == 1 && map->proj[0].n == 1 &&
                    map->proj[0].ins[0].op == RF_EX_ROWID) {
                    r = map->in[0];
                    chain[nchain++] = ic;
                    chain[nchain++] = id;
                }
            }
            chain[nchain++] = ie;
            if (r < 0 || p->vars[r].is_output || uses(p, r, false) != 1)
                continue;
            /* r's writers: one block with the listing, or the two arms of
             * a BRANCH_JOIN (the listing in its target) */
            int wb[2], nw = 0, arm = -1;
            for (int b = 0; b < p->nblocks && nw <= 2; b++)
                for (int i = 0; i < p->blocks[b].nkernels; i++)
                    if (p->blocks[b].kernels[i].out == r) {
                        if (nw < 2)
                            wb[nw] = b;
                        nw++;
                        break;
                    }
            if (nw == 0 || nw > 2 || uses(p, r, true) != nw)
                continue;
            int bl = wb[0], first = wb[0];
            if (nw == 2) {
                int bj = -1;
                for (int b = 0; b < p->nblocks; b++)
                    if (p->blocks[b].term == RF_TERM_BRANCH_JOIN && p->blocks[b].target == wb[0] &&
                        p->blocks[b].target_else == wb[1])
                        bj = b;
                if (bj < 0 || wb[1] >= be)
                    continue;
                arm = wb[1];
                first = bj;
            }
            int ia = listing_into(p, r, bl);
            if (ia < 0 || bl > be || (bl == be && ia > chain[0]) || in_loop(p, first) || in_loop(p, be) ||
                read_between(p, n, bl, ia, be, agg))
                continue;
            /* the listing becomes the count */
            rf_kernel *k = &p->blocks[bl].kernels[ia];
            int t = k->out, is = -1;
            for (int i = ia + 1; i < p->blocks[bl].nkernels && is < 0; i++)
                if (p->blocks[bl].kernels[i].op == RF_K_SORT && p->blocks[bl].kernels[i].in[0] == t)
                    is = i;
            for (int j = 0; j < k->nproj; j++)
                rf_code_free(&k->proj[j]);
            free(k->proj);
            k->proj = NULL;
            k->nproj = 0;
            k->out = n;
            k->mj->count = true;
            /* the count's kernels: gone, or to the end of the binary arm
             * (first: in one block they come after the listing's SORT) */
            rf_kernel moved[3];
            for (int x = nchain - 1; x >= 0; x--) {
                moved[x] = hb->kernels[chain[x]];
                if (arm < 0)
                    rf_kernel_free(&hb->kernels[chain[x]]);
                memmove(hb->kernels + chain[x], hb->kernels + chain[x] + 1,
                        (size_t)(hb->nkernels - chain[x] - 1) * sizeof *hb->kernels);
                hb->nkernels--;
            }
            if (arm >= 0) {
                rf_hblock *ab = &p->blocks[arm];
                ab->kernels = rf_realloc(ab->kernels, (size_t)(ab->nkernels + nchain) * sizeof *ab->kernels);
                for (int x = 0; x < nchain; x++)
                    ab->kernels[ab->nkernels++] = moved[x];
            }
            remove_kernel(&p->blocks[bl], is);
            ie = -1; /* this block again, from the start */
        }
    }
}


void rf_hir_free(rf_hprogram *p)
{
    if (!p)
        return;
    for (int i = 0; i < p->nvars && p->vars; i++) {
        rf_hvar *v = &p->vars[i];
        free(v->name);
        free(v->types);
        free(v->pred);
        free(v->facts);
        free(v->input_path);
        free(v->input_where);
        free(v->order_cols);
        free(v->order_desc);
    }
    free(p->vars);
    for (int b = 0; b < p->nblocks && p->blocks; b++) {
        rf_hblock *hb = &p->blocks[b];
        for (int i = 0; i < hb->nkernels && hb->kernels; i++)
            rf_kernel_free(&hb->kernels[i]);
        free(hb->kernels);
        free(hb->label);
        free(hb->conds);
        free(hb->lkeys);
        free(hb->rkeys);
        free(hb->free_entry);
    }
    free(p->blocks);
    free(p);
}
