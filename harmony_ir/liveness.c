/* Liveness: which variables the runtime may free, and where. Backward
 * dataflow over the block CFG; a variable is live where some path ahead
 * reads it before writing it. Kernels read in[0..1] and write `out`
 * entirely (a FUSED kernel: its external inputs and outputs; its internal
 * variables live and die inside it); BRANCH_EMPTY and BRANCH_JOIN read their conditions; at HALT the outputs are
 * live. Output variables are never freed.
 *
 * Frees happen at two kinds of place:
 *  - after a kernel: the kernel's inputs (and its output, if never read)
 *    that are dead right after it;
 *  - on entry to a block: variables held at the end of some predecessor
 *    (live there, or read by its branch) but dead on entry here. Freeing a
 *    variable that holds nothing is a no-op for the runtime, so a block
 *    with several predecessors may list a variable only one of them holds.
 * A variable live around a loop back edge is live everywhere in the loop,
 * so nothing inside the loop frees it. */
#include "hir.h"

#include <stdlib.h>
#include <string.h>

static int succs(const rf_hprogram *p, int b, int s[2])
{
    const rf_hblock *hb = &p->blocks[b];
    int n = 0;
    switch (hb->term) {
    case RF_TERM_FALLTHROUGH: s[n++] = b + 1; break;
    case RF_TERM_JUMP: s[n++] = hb->target; break;
    case RF_TERM_BRANCH_EMPTY:
    case RF_TERM_BRANCH_JOIN: s[n++] = hb->target; s[n++] = hb->target_else; break;
    default: break;
    }
    int m = 0;
    for (int i = 0; i < n; i++)
        if (s[i] >= 0 && s[i] < p->nblocks)
            s[m++] = s[i];
    return m;
}

static bool valid_var(const rf_hprogram *p, int v) { return v >= 0 && v < p->nvars; }

/* live := live before the terminator of block b, given live = live-out. */
static void through_term(const rf_hprogram *p, const rf_hblock *hb, bool *live)
{
    if (hb->term == RF_TERM_BRANCH_EMPTY || hb->term == RF_TERM_BRANCH_JOIN)
        for (int i = 0; i < hb->nconds; i++)
            if (valid_var(p, hb->conds[i]))
                live[hb->conds[i]] = true;
}

static void through_kernel(const rf_hprogram *p, const rf_kernel *k, bool *live)
{
    int vars[RF_KERNEL_VARS_MAX], n = rf_kernel_writes(k, vars);
    for (int j = 0; j < n; j++)
        if (valid_var(p, vars[j]))
            live[vars[j]] = false;
    n = rf_kernel_reads(k, vars);
    for (int j = 0; j < n; j++)
        if (valid_var(p, vars[j]))
            live[vars[j]] = true;
}

typedef RF_VEC(int) ivec;

static void set_list(int *n, int **items, ivec *v)
{
    free(*items);
    *n = (int)v->len;
    *items = v->len ? v->items : NULL;
    if (!v->len)
        RF_VEC_FREE(*v);
    v->items = NULL;
    v->len = v->cap = 0;
}

void rf_hir_liveness(rf_hprogram *p)
{
    int nb = p->nblocks, nv = p->nvars;
    size_t sz = rf_mul_size((size_t)nb, (size_t)nv) + 1;
    bool *in = rf_calloc(sz, 1), *out = rf_calloc(sz, 1);
    bool *live = rf_calloc((size_t)nv + 1, 1);

    bool changed = true;
    while (changed) {
        changed = false;
        for (int b = nb - 1; b >= 0; b--) {
            const rf_hblock *hb = &p->blocks[b];
            bool *lo = &out[(size_t)b * nv], *li = &in[(size_t)b * nv];
            if (hb->term == RF_TERM_HALT) {
                for (int v = 0; v < nv; v++)
                    lo[v] = p->vars[v].is_output;
            } else {
                int s[2], ns = succs(p, b, s);
                for (int v = 0; v < nv; v++) {
                    bool x = false;
                    for (int i = 0; i < ns; i++)
                        x = x || in[(size_t)s[i] * nv + v];
                    lo[v] = x;
                }
            }
            memcpy(live, lo, (size_t)nv);
            through_term(p, hb, live);
            for (int i = hb->nkernels - 1; i >= 0; i--)
                through_kernel(p, &hb->kernels[i], live);
            if (memcmp(live, li, (size_t)nv) != 0) {
                memcpy(li, live, (size_t)nv);
                changed = true;
            }
        }
    }

    ivec list = {0};
    bool *held = rf_calloc((size_t)nv + 1, 1);
    for (int b = 0; b < nb; b++) {
        rf_hblock *hb = &p->blocks[b];
        memcpy(live, &out[(size_t)b * nv], (size_t)nv);
        through_term(p, hb, live);
        for (int i = hb->nkernels - 1; i >= 0; i--) {
            rf_kernel *k = &hb->kernels[i];
            /* live = live right after k */
            int cand[2 * RF_KERNEL_VARS_MAX];
            int nc = rf_kernel_reads(k, cand);
            nc += rf_kernel_writes(k, cand + nc);
            for (int j = 0; j < nc; j++) {
                int v = cand[j];
                if (!valid_var(p, v) || live[v] || p->vars[v].is_output)
                    continue;
                bool dup = false;
                for (size_t m = 0; m < list.len; m++)
                    dup = dup || list.items[m] == v;
                if (!dup)
                    RF_PUSH(list, v);
            }
            /* ascending order, so dumps are stable */
            for (size_t a = 1; a < list.len; a++)
                for (size_t c = a; c > 0 && list.items[c - 1] > list.items[c]; c--) {
                    int t = list.items[c];
                    list.items[c] = list.items[c - 1];
                    list.items[c - 1] = t;
                }
            set_list(&k->nfree, &k->frees, &list);
            through_kernel(p, k, live);
        }
    }

    /* free on entry: held at the end of a predecessor, dead here */
    for (int b = 0; b < nb; b++) {
        memset(held, 0, (size_t)nv);
        for (int q = 0; q < nb; q++) {
            int s[2], ns = succs(p, q, s);
            bool pred = false;
            for (int i = 0; i < ns; i++)
                pred = pred || s[i] == b;
            if (!pred)
                continue;
            memcpy(live, &out[(size_t)q * nv], (size_t)nv);
            through_term(p, &p->blocks[q], live);
            for (int v = 0; v < nv; v++)
                held[v] = held[v] || live[v];
        }
        for (int v = 0; v < nv; v++)
            if (held[v] && !in[(size_t)b * nv + v] && !p->vars[v].is_output)
                RF_PUSH(list, v);
        set_list(&p->blocks[b].nfree_entry, &p->blocks[b].free_entry, &list);
    }
    free(held);
    free(in);
    free(out);
    free(live);
}
