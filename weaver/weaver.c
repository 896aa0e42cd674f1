/* The structural half of Kernel Weaver: which kernels become one.
 *
 * Dependence classification (thesis 4.3.1), for an edge "kernel C reads
 * the variable kernel P wrote":
 *   thread  P is a MAP or JOIN and C a MAP reading P's rows one by one:
 *           the row never needs to leave the thread that made it;
 *   kernel  C needs all of P's result first (a SORT, an AGG over sorted
 *           input, a JOIN's or set operation's sorted operand).
 * (CTA dependence, a JOIN probing with rows another JOIN makes, needs the
 * probe-side sort elided first: docs/weaver.md s. 4.1, not formed yet.)
 *
 * Candidate groups (thesis Alg. 1, adapted: we cut edges, not operators):
 * a kernel heads a group when it is a MAP or JOIN; the group follows thread
 * edges while each next kernel is the only reader of the last one's
 * result, and then, when the rows go into `s := SORT t; a := AGG s` whose
 * aggregates do not depend on the order and the rows hold no duplicates,
 * takes the SORT and AGG too as a reducing gather (the two kernel
 * dependences a hash reduction removes). A variable inside a group must
 * have that one writer and that one reader in the whole program and be
 * nothing the program or its user names (a predicate, an output).
 *
 * The FUSED kernel takes the place of the group's last member; the group
 * is kept only if no kernel in between writes what an earlier member
 * reads (that member would otherwise read a later value). */
#include "weaver.h"

#include <stdlib.h>
#include <string.h>

typedef struct wctx {
    rf_hprogram *p;
    int *reads, *writes;     /* per variable, whole program */
} wctx;

static void count_uses(wctx *w)
{
    rf_hprogram *p = w->p;
    for (int b = 0; b < p->nblocks; b++) {
        const rf_hblock *hb = &p->blocks[b];
        for (int i = 0; i < hb->nkernels; i++) {
            int vars[RF_KERNEL_VARS_MAX];
            const rf_kernel *k = &hb->kernels[i];
            int n = rf_kernel_reads(k, vars);
            for (int j = 0; j < n; j++)
                w->reads[vars[j]]++;
            n = rf_kernel_writes(k, vars);
            for (int j = 0; j < n; j++)
                w->writes[vars[j]]++;
        }
        for (int i = 0; i < hb->nconds; i++)
            w->reads[hb->conds[i]]++;
    }
}

/* Whether v can live inside a group: one writer, one reader, unnamed. */
static bool can_be_internal(const wctx *w, int v)
{
    const rf_hvar *hv = &w->p->vars[v];
    return v >= 0 && w->reads[v] == 1 && w->writes[v] == 1 && !hv->pred && !hv->is_output && !hv->input_path &&
           hv->nfacts == 0 && !hv->internal;
}

/* The index after `from` in block hb of the kernel that reads v, or -1. */
static int reader_of(const rf_hblock *hb, int from, int v)
{
    for (int i = from + 1; i < hb->nkernels; i++) {
        const rf_kernel *k = &hb->kernels[i];
        if (k->op != RF_K_FUSED && (k->in[0] == v || k->in[1] == v))
            return i;
    }
    return -1;
}

static bool reads_rowid(const rf_kernel *k)
{
    for (int j = -1; j < k->nproj; j++) {
        const rf_code *c = j < 0 ? &k->filter : &k->proj[j];
        for (int i = 0; i < c->n; i++)
            if (c->ins[i].op == RF_EX_ROWID)
                return true;
    }
    return false;
}

static rf_dep classify(const rf_kernel *prod, const rf_kernel *cons)
{
    if ((prod->op == RF_K_MAP || prod->op == RF_K_JOIN) && cons->op == RF_K_MAP)
        return RF_DEP_THREAD;
    return RF_DEP_KERNEL;
}

/* Whether moving the members at idx[0..n-2] down to idx[n-1] keeps their
 * inputs' values: nothing in between writes them. */
static bool can_move(const rf_hblock *hb, const int *idx, int n)
{
    for (int m = 0; m + 1 < n; m++) {
        const rf_kernel *mk = &hb->kernels[idx[m]];
        for (int i = idx[m] + 1; i < idx[n - 1]; i++) {
            bool member = false;
            for (int x = 0; x < n; x++)
                member = member || idx[x] == i;
            if (member)
                continue;
            int vars[RF_KERNEL_VARS_MAX], nw = rf_kernel_writes(&hb->kernels[i], vars);
            for (int j = 0; j < nw; j++)
                if (vars[j] == mk->in[0] || vars[j] == mk->in[1])
                    return false;
        }
    }
    return true;
}

static void push_unique(int *v, int *n, int x)
{
    for (int i = 0; i < *n; i++)
        if (v[i] == x)
            return;
    v[(*n)++] = x;
}

/* Replaces the kernels at idx[0..n-1] of hb by one FUSED kernel at
 * idx[n-1]. */
static void make_group(rf_hprogram *p, rf_hblock *hb, const int *idx, int n, bool reduce)
{
    rf_fused *f = rf_calloc(1, sizeof *f);
    f->nmembers = n;
    f->members = rf_calloc((size_t)n, sizeof *f->members);
    f->edges = rf_calloc((size_t)2 * (size_t)n, sizeof *f->edges);
    f->in = rf_calloc((size_t)2 * (size_t)n, sizeof *f->in);
    f->out = rf_calloc(1, sizeof *f->out);
    for (int m = 0; m < n; m++) {
        rf_kernel *k = &f->members[m];
        *k = hb->kernels[idx[m]];
        free(k->frees);   /* the group frees as one kernel */
        k->frees = NULL;
        k->nfree = 0;
    }
    for (int m = 0; m < n; m++) {
        const rf_kernel *k = &f->members[m];
        for (int j = 0; j < 2; j++) {
            int v = k->in[j];
            if (v < 0)
                continue;
            int from = -1;
            for (int x = 0; x < m; x++)
                if (f->members[x].out == v)
                    from = x;
            if (from >= 0) {
                f->edges[f->nedges++] = (rf_fedge){v, from, m, classify(&f->members[from], k)};
                p->vars[v].internal = true;
            } else {
                push_unique(f->in, &f->nin, v);
            }
        }
    }
    f->out[0] = f->members[n - 1].out;
    f->nout = 1;

    rf_kernel fk;
    memset(&fk, 0, sizeof fk);
    fk.op = RF_K_FUSED;
    fk.out = f->out[0];
    fk.in[0] = fk.in[1] = -1;
    fk.partition = f->members[0].partition;
    fk.gather = reduce ? RF_GATHER_REDUCE : f->members[n - 1].gather;
    fk.origin = rf_origin_dup(f->members[n - 1].origin);
    fk.fused = f;
    /* Remove the members, last first, then put the group where the last was. */
    int at = idx[n - 1];
    for (int m = n - 2; m >= 0; m--) {
        memmove(hb->kernels + idx[m], hb->kernels + idx[m] + 1,
                (size_t)(hb->nkernels - idx[m] - 1) * sizeof *hb->kernels);
        hb->nkernels--;
        at--;
    }
    hb->kernels[at] = fk;
}

/* Grows a group from head kernel h of block hb; returns its size (>= 2
 * when worth making), its kernel indices in idx, and whether it ends in a
 * reducing gather. */
static int grow(const wctx *w, const rf_hblock *hb, int h, const rf_weave_opts *o, int *idx, bool *reduce)
{
    const rf_kernel *head = &hb->kernels[h];
    int n = 0;
    idx[n++] = h;
    *reduce = false;
    if (head->op != RF_K_MAP && head->op != RF_K_JOIN)
        return n;
    while (n < RF_FUSED_MAX) {
        const rf_kernel *last = &hb->kernels[idx[n - 1]];
        if (!can_be_internal(w, last->out))
            break;
        int c = reader_of(hb, idx[n - 1], last->out);
        if (c < 0)
            break;
        const rf_kernel *cons = &hb->kernels[c];
        if (classify(last, cons) == RF_DEP_THREAD && cons->in[0] == last->out &&
            !(head->op == RF_K_JOIN && reads_rowid(cons))) {
            idx[n++] = c;
            continue;
        }
        /* a reducing gather: t -> SORT -> AGG */
        if (!o->reduce || cons->op != RF_K_SORT || n + 2 > RF_FUSED_MAX || !can_be_internal(w, cons->out))
            break;
        int a = reader_of(hb, c, cons->out);
        if (a < 0 || hb->kernels[a].op != RF_K_AGG)
            break;
        idx[n++] = c;
        idx[n++] = a;
        *reduce = true;
        break;
    }
    return n;
}

void rf_weave(rf_hprogram *p, const rf_weave_opts *o, rf_weave_info *info)
{
    rf_weave_info local = {0, 0, 0};
    wctx w = {p, rf_calloc((size_t)p->nvars + 1, sizeof *w.reads), rf_calloc((size_t)p->nvars + 1, sizeof *w.writes)};
    count_uses(&w);
    for (int b = 0; b < p->nblocks; b++) {
        rf_hblock *hb = &p->blocks[b];
        for (int h = 0; h < hb->nkernels; h++) {
            int idx[RF_FUSED_MAX];
            bool reduce;
            int n = grow(&w, hb, h, o, idx, &reduce);
            if (reduce) {
                /* The verifier's rule decides (aggregates, duplicates). */
                rf_fused probe = {n, NULL, 0, NULL, 0, NULL, 0, NULL};
                rf_kernel *ks = rf_calloc((size_t)n, sizeof *ks);
                for (int m = 0; m < n; m++)
                    ks[m] = hb->kernels[idx[m]];
                probe.members = ks;
                bool legal = rf_fused_reduce_legal(p, &probe);
                free(ks);
                if (!legal) {
                    n -= 2;
                    reduce = false;
                }
            }
            if (n < 2 || !can_move(hb, idx, n))
                continue;
            make_group(p, hb, idx, n, reduce);
            local.groups++;
            local.members += n;
            local.reduces += reduce;
            /* h now holds the kernel that followed the head (or the group) */
            h--;
        }
    }
    free(w.reads);
    free(w.writes);
    rf_hir_liveness(p);
    if (info)
        *info = local;
}

void rf_unweave(rf_hprogram *p)
{
    bool any = false;
    for (int b = 0; b < p->nblocks; b++) {
        rf_hblock *hb = &p->blocks[b];
        for (int i = 0; i < hb->nkernels; i++) {
            rf_kernel *k = &hb->kernels[i];
            if (k->op != RF_K_FUSED || !k->fused)
                continue;
            rf_fused *f = k->fused;
            int n = f->nmembers;
            hb->kernels = rf_realloc(hb->kernels, (size_t)(hb->nkernels + n - 1) * sizeof *hb->kernels);
            k = &hb->kernels[i];
            rf_kernel fk = *k;
            memmove(hb->kernels + i + n, hb->kernels + i + 1, (size_t)(hb->nkernels - i - 1) * sizeof *hb->kernels);
            for (int m = 0; m < n; m++)
                hb->kernels[i + m] = f->members[m];
            hb->nkernels += n - 1;
            for (int e = 0; e < f->nedges; e++)
                p->vars[f->edges[e].var].internal = false;
            f->nmembers = 0;   /* moved out */
            rf_kernel_free(&fk);
            i += n - 1;
            any = true;
        }
    }
    if (any)
        rf_hir_liveness(p);
}
