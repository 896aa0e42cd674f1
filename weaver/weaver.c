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
 * dependences a hash reduction removes). A chain headed by a JOIN whose
 * rows go into a SORT and nowhere else (`t := JOIN ...; s := SORT t`,
 * the semi-naive step's join and dedup, in a loop's body as anywhere)
 * takes the SORT as a set gather: the backend may set the rows as bits
 * of a dense set, which is the SORT's result, without writing them (the
 * GPU's "join into a dense set", the CPU's join-and-sort in one pass);
 * the IR states the pair, so no backend looks at the kernel after a
 * JOIN to find it. A variable inside a group must
 * have that one writer and that one reader in the whole program and be
 * nothing the user sees or supplies (an output, facts, an input file): a
 * predicate that only one rule reads qualifies.
 *
 * Groups form over straight-line code, not only within a block: the
 * blocks of a run (each falling through to the next, which no other block
 * enters, none on a loop) execute one after the other exactly once, as
 * one block would, so a variable written in one stratum and read in the
 * next, a predicate included, can be internal to a group spanning both.
 * Nothing crosses into or out of a fixpoint loop: a loop's blocks are
 * runs of their own, so a loop body's groups are per iteration, and a
 * variable read again after the loop, or by its exit test, is read twice
 * and so never internal.
 *
 * Then groups with several outputs (horizontal fusion, thesis Fig. 24 d):
 * MAPs of the same input, anywhere in a run, become the branches of one
 * group that reads the input once, where the later one stood. Only plain
 * MAPs join (a branch that is itself a chain stays the group it is: the
 * GPU runs a group of several outputs as its members until it generates
 * code for one, and would lose the chain's composed kernel).
 *
 * The FUSED kernel takes the place of the group's last member (in that
 * member's block); the group is kept only if no kernel in between writes
 * what an earlier member reads (that member would otherwise read a later
 * value), reads or writes what an earlier member writes for the rest of
 * the program, or could fail or intern strings where that member could
 * too (the first error and the strings' numbering would then differ from
 * --no-fuse, which runs the member first). A chain that cannot move whole
 * keeps its longest prefix that can. */
#include "weaver.h"

#include <stdlib.h>
#include <string.h>

typedef struct wctx {
    rf_hprogram *p;
    int *reads, *writes;     /* per variable, whole program */
} wctx;

/* The kernels of one run of blocks, in execution order, each with the
 * block it stands in: grouping works on this sequence as on one block,
 * and the kernels go back to their blocks afterwards. */
typedef struct seq {
    int nkernels;
    rf_kernel *kernels;
    int *block;
} seq;

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

/* Whether v can live inside a group: one writer and one reader in the
 * whole program, and nothing the user sees or supplies (an output, facts,
 * an input file). A predicate that only its one reader reads qualifies:
 * its name stays for explain and errors. */
static bool can_be_internal(const wctx *w, int v)
{
    if (v < 0)
        return false;
    const rf_hvar *hv = &w->p->vars[v];
    return w->reads[v] == 1 && w->writes[v] == 1 && !hv->is_output && !hv->input_path && hv->nfacts == 0 &&
           !hv->internal;
}

/* The index after `from` in s of the kernel that reads v, or -1. */
static int reader_of(const seq *s, int from, int v)
{
    for (int i = from + 1; i < s->nkernels; i++) {
        const rf_kernel *k = &s->kernels[i];
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

/* Whether running k may stop the run with an error (checked arithmetic,
 * casts, a total that overflows, a bad input file, a functional
 * dependency) or intern strings (numbered in the order they come): two
 * such kernels must keep their order. */
static bool has_effects(const rf_kernel *k)
{
    switch (k->op) {
    case RF_K_SORT: case RF_K_ANTIJOIN: case RF_K_UNION: case RF_K_DIFF: case RF_K_COPY: case RF_K_CLEAR:
        return false;
    case RF_K_MAP:
    case RF_K_JOIN:
    case RF_K_MULTIJOIN:
        for (int j = -1; j < k->nproj; j++)
            if (rf_code_may_fault(j < 0 ? &k->filter : &k->proj[j]))
                return true;
        return false;
    case RF_K_AGG:
        for (int j = 0; j < k->naggs; j++)
            if (k->aggfn[j] == RF_AGG_TOTAL || k->aggfn[j] == RF_AGG_AVG || rf_code_may_fault(&k->agg_arg[j]))
                return true;
        return false;
    case RF_K_FUSED:
        for (int m = 0; m < k->fused->nmembers; m++)
            if (has_effects(&k->fused->members[m]))
                return true;
        return false;
    default:   /* LOAD, CHECK_KEYS */
        return true;
    }
}

/* Whether kernel mk may move down past kernel k: k does not write what
 * mk reads, does not read or write what mk writes, and the two do not
 * both have effects. */
static bool can_pass(const rf_kernel *mk, const rf_kernel *k)
{
    int vars[2 * RF_KERNEL_VARS_MAX], mvars[RF_KERNEL_VARS_MAX];
    int nw = rf_kernel_writes(k, vars), nmr = rf_kernel_reads(mk, mvars);
    for (int j = 0; j < nw; j++)
        for (int x = 0; x < nmr; x++)
            if (vars[j] == mvars[x])
                return false;
    int nmw = rf_kernel_writes(mk, mvars), nkv = nw + rf_kernel_reads(k, vars + nw);
    for (int x = 0; x < nmw; x++)
        for (int j = 0; j < nkv; j++)
            if (vars[j] == mvars[x])
                return false;
    return !(has_effects(mk) && has_effects(k));
}

/* Whether the members of a chain at idx[0..n-1] can all run at idx[n-1]:
 * each earlier member may pass every kernel in between that is not a
 * member. Their results are internal (only the next member reads them),
 * so what they write is nobody else's business. */
static bool can_move(const seq *s, const int *idx, int n)
{
    for (int m = 0; m + 1 < n; m++) {
        rf_kernel mk = s->kernels[idx[m]];
        mk.out = -1;
        for (int i = idx[m] + 1; i < idx[n - 1]; i++) {
            bool member = false;
            for (int x = 0; x < n; x++)
                member = member || idx[x] == i;
            if (!member && !can_pass(&mk, &s->kernels[i]))
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

/* Removes the kernel at i of s (moved out: nothing freed). */
static void seq_remove(seq *s, int i)
{
    memmove(s->kernels + i, s->kernels + i + 1, (size_t)(s->nkernels - i - 1) * sizeof *s->kernels);
    memmove(s->block + i, s->block + i + 1, (size_t)(s->nkernels - i - 1) * sizeof *s->block);
    s->nkernels--;
}

/* A FUSED kernel holding `members` (taken over, in order; their free
 * lists dropped: the group frees as one kernel). Edges join a member's
 * input to the earlier member that wrote it, marking it internal; the
 * other inputs are the group's, and the results no member reads are its
 * outputs, in member order. gather: REDUCE or SET, else RF_GATHER_NONE
 * for the last member's own. */
static rf_kernel new_group(rf_hprogram *p, rf_kernel *members, int n, rf_gather gather)
{
    rf_fused *f = rf_calloc(1, sizeof *f);
    f->nmembers = n;
    f->members = members;
    f->edges = rf_calloc((size_t)2 * (size_t)n, sizeof *f->edges);
    f->in = rf_calloc((size_t)2 * (size_t)n, sizeof *f->in);
    f->out = rf_calloc((size_t)n, sizeof *f->out);
    for (int m = 0; m < n; m++) {
        rf_kernel *k = &f->members[m];
        free(k->frees);
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
    for (int m = 0; m < n; m++)
        if (!p->vars[f->members[m].out].internal)
            f->out[f->nout++] = f->members[m].out;

    rf_kernel fk;
    memset(&fk, 0, sizeof fk);
    fk.op = RF_K_FUSED;
    fk.out = f->out[0];
    fk.in[0] = fk.in[1] = -1;
    fk.partition = f->members[0].partition;
    fk.gather = gather != RF_GATHER_NONE ? gather : f->members[n - 1].gather;
    fk.origin = rf_origin_dup(f->members[n - 1].origin);
    fk.fused = f;
    return fk;
}

/* Replaces the kernels at idx[0..n-1] of s by one FUSED kernel at
 * idx[n-1] (in that kernel's block). */
static void make_group(rf_hprogram *p, seq *s, const int *idx, int n, rf_gather gather)
{
    rf_kernel *members = rf_calloc((size_t)n, sizeof *members);
    for (int m = 0; m < n; m++)
        members[m] = s->kernels[idx[m]];
    rf_kernel fk = new_group(p, members, n, gather);
    /* Remove the members, last first, then put the group where the last was. */
    int at = idx[n - 1];
    for (int m = n - 2; m >= 0; m--) {
        seq_remove(s, idx[m]);
        at--;
    }
    s->kernels[at] = fk;
}

/* Grows a group from head kernel h of s; returns its size (>= 2 when
 * worth making), its kernel indices in idx, and in *gather how it ends:
 * REDUCE (SORT -> AGG), SET (a JOIN chain's SORT) or NONE. */
static int grow(const wctx *w, const seq *s, int h, const rf_weave_opts *o, int *idx, rf_gather *gather)
{
    const rf_kernel *head = &s->kernels[h];
    int n = 0;
    idx[n++] = h;
    *gather = RF_GATHER_NONE;
    if (head->op != RF_K_MAP && head->op != RF_K_JOIN)
        return n;
    while (n < RF_FUSED_MAX) {
        const rf_kernel *last = &s->kernels[idx[n - 1]];
        if (!can_be_internal(w, last->out))
            break;
        int c = reader_of(s, idx[n - 1], last->out);
        if (c < 0)
            break;
        const rf_kernel *cons = &s->kernels[c];
        if (classify(last, cons) == RF_DEP_THREAD && cons->in[0] == last->out &&
            !(head->op == RF_K_JOIN && reads_rowid(cons))) {
            idx[n++] = c;
            continue;
        }
        if (cons->op != RF_K_SORT)
            break;
        /* a reducing gather: t -> SORT -> AGG */
        int a = o->reduce && n + 2 <= RF_FUSED_MAX && can_be_internal(w, cons->out) ? reader_of(s, c, cons->out)
                                                                                     : -1;
        if (a >= 0 && s->kernels[a].op == RF_K_AGG) {
            idx[n++] = c;
            idx[n++] = a;
            *gather = RF_GATHER_REDUCE;
        } else if (o->set && head->op == RF_K_JOIN) {
            /* a set gather: the SORT is the only reader of the rows (the
             * loop's test above), whose result is the group's */
            idx[n++] = c;
            *gather = RF_GATHER_SET;
        }
        break;
    }
    return n;
}

/* Whether variable x's rows are distinct (rf_hir_rows_distinct) as far
 * as the sequence s shows before position `before`: a sorted variable,
 * or one written once, by a MAP there that projects its row position
 * (x written in an earlier run of blocks: not known here, so no). */
static bool rows_distinct_here(const wctx *w, const seq *s, int before, int x)
{
    if (x < 0 || x >= w->p->nvars)
        return false;
    if (w->p->vars[x].sorted)
        return true;
    if (w->writes[x] != 1)
        return false;
    for (int i = before - 1; i >= 0; i--) {
        const rf_kernel *k = &s->kernels[i];
        if (k->op == RF_K_FUSED && k->fused) {
            for (int m = 0; m < k->fused->nmembers; m++)
                if (k->fused->members[m].out == x)
                    return rf_map_projects_position(&k->fused->members[m]);
        } else if (k->out == x) {
            return rf_map_projects_position(k);
        }
    }
    return false;
}

/* A set gather headed by JOIN idx[0] (milestone 6 of docs/weaver.md:
 * probe edges): the SORT that makes one of the JOIN's inputs and that
 * nothing else reads joins the group in front, the JOIN's operands
 * swapped when it fed the second input, so that it is the probe side
 * (rf_fused_probe_sort: a backend may then join the SORT's input as it
 * comes). The second input's SORT is preferred: the lowering puts the
 * larger, streamed relation there (q03's filtered lineitem). Returns the
 * new size, n when no SORT qualifies or the group could not move. */
static int add_probe_sort(const wctx *w, seq *s, int *idx, int n)
{
    rf_kernel *join = &s->kernels[idx[0]];
    if (join->op != RF_K_JOIN || join->nkeys < 1 || n + 1 > RF_FUSED_MAX)
        return n;
    for (int side = 1; side >= 0; side--) {
        int v = join->in[side];
        if (v < 0 || v == join->in[1 - side] || !can_be_internal(w, v))
            continue;
        int q = -1;
        for (int i = idx[0] - 1; i >= 0 && q < 0; i--)
            if (s->kernels[i].op != RF_K_FUSED && s->kernels[i].out == v)
                q = i;
        if (q < 0 || s->kernels[q].op != RF_K_SORT)
            continue;
        if (side == 1)
            rf_join_swap_sides(w->p, join);
        int grown[RF_FUSED_MAX];
        grown[0] = q;
        memcpy(grown + 1, idx, (size_t)n * sizeof *idx);
        /* the group as it would be: rf_fused_probe_sort decides (a
         * position of the probe side read only as an identity column,
         * and only where the SORT's input rows are distinct) */
        rf_kernel members[RF_FUSED_MAX];
        for (int m = 0; m < n + 1; m++)
            members[m] = s->kernels[grown[m]];
        rf_fused as_group = {n + 1, members, 0, NULL, 0, NULL, 0, NULL};
        if (rf_fused_probe_shape(&as_group, rows_distinct_here(w, s, q, s->kernels[q].in[0])) &&
            can_move(s, grown, n + 1)) {
            memcpy(idx, grown, (size_t)(n + 1) * sizeof *idx);
            return n + 1;
        }
        if (side == 1)
            rf_join_swap_sides(w->p, join);   /* back as it was */
    }
    return n;
}

/* The chains (groups of one output) of s; in_loop: s is a loop's body. */
static void weave_chains(const wctx *w, seq *s, const rf_weave_opts *o, bool in_loop, rf_weave_info *info)
{
    rf_hprogram *p = w->p;
    for (int h = 0; h < s->nkernels; h++) {
        int idx[RF_FUSED_MAX];
        rf_gather gather;
        int n = grow(w, s, h, o, idx, &gather);
        if (gather == RF_GATHER_REDUCE) {
            /* The verifier's rule decides (aggregates, duplicates). */
            rf_fused probe = {n, NULL, 0, NULL, 0, NULL, 0, NULL};
            rf_kernel *ks = rf_calloc((size_t)n, sizeof *ks);
            for (int m = 0; m < n; m++)
                ks[m] = s->kernels[idx[m]];
            probe.members = ks;
            bool legal = rf_fused_reduce_legal(p, &probe);
            free(ks);
            if (!legal) {
                /* the SORT may still end a JOIN chain as a set gather */
                n -= 1;
                gather = o->set && s->kernels[idx[0]].op == RF_K_JOIN ? RF_GATHER_SET : RF_GATHER_NONE;
                n -= gather == RF_GATHER_NONE;
            }
        }
        while (n >= 2 && !can_move(s, idx, n)) {
            n -= gather == RF_GATHER_REDUCE ? 2 : 1;   /* a reducing gather goes whole */
            gather = RF_GATHER_NONE;
        }
        if (n < 2)
            continue;
        /* Outside loops only for now: in a loop body the GPU's set
         * gather (its join into a dense set, pending sorts) works on the
         * two-member group, and runs a longer one as its members. */
        int probe = 0;
        if (gather == RF_GATHER_SET && o->probe && !in_loop) {
            int grown = add_probe_sort(w, s, idx, n);
            probe = grown > n;
            n = grown;
        }
        make_group(p, s, idx, n, gather);
        info->groups++;
        info->members += n;
        info->reduces += gather == RF_GATHER_REDUCE;
        info->sets += gather == RF_GATHER_SET;
        info->probes += probe;
        if (probe)
            h--;   /* the SORT before the head left s too */
        /* h now holds the kernel that followed the head (or the group) */
        h--;
    }
}

/* The input a kernel can share as a branch of a group of several outputs
 * (a plain MAP, or such a group already made: MAPs of one input), or -1. */
static int branch_input(const rf_kernel *k)
{
    if (k->op == RF_K_MAP)
        return k->in[0];
    if (k->op != RF_K_FUSED || k->gather == RF_GATHER_REDUCE || k->fused->nedges != 0 || k->fused->nin != 1)
        return -1;
    for (int m = 0; m < k->fused->nmembers; m++)
        if (k->fused->members[m].op != RF_K_MAP)
            return -1;
    return k->fused->in[0];
}

static int member_count(const rf_kernel *k) { return k->op == RF_K_FUSED ? k->fused->nmembers : 1; }

/* Merges the branches at a < b of s (same input) into one group at b's
 * place: a's members first, so that run as members they keep the
 * unfused order. */
static void join_branches(rf_hprogram *p, seq *s, int a, int b)
{
    int n = member_count(&s->kernels[a]) + member_count(&s->kernels[b]), m = 0;
    rf_kernel *members = rf_calloc((size_t)n, sizeof *members);
    int ends[2] = {a, b};
    for (int e = 0; e < 2; e++) {
        rf_kernel *k = &s->kernels[ends[e]];
        if (k->op != RF_K_FUSED) {
            members[m++] = *k;
            continue;
        }
        for (int x = 0; x < k->fused->nmembers; x++)
            members[m++] = k->fused->members[x];
        k->fused->nmembers = 0;   /* moved out */
        rf_kernel_free(k);
    }
    rf_kernel fk = new_group(p, members, n, RF_GATHER_NONE);
    seq_remove(s, a);
    s->kernels[b - 1] = fk;
}

/* Whether k reads or writes one of vars[0..n-1]. */
static bool touches(const rf_kernel *k, const int *vars, int n)
{
    int kv[2 * RF_KERNEL_VARS_MAX];
    int nk = rf_kernel_reads(k, kv);
    nk += rf_kernel_writes(k, kv + nk);
    for (int i = 0; i < nk; i++)
        for (int j = 0; j < n; j++)
            if (kv[i] == vars[j])
                return true;
    return false;
}

/* The groups of several outputs of s: each plain MAP (or such group)
 * joins the next kernel that reads the same input as a branch, when it
 * can move down to it: it may pass every kernel in between (none writes
 * what it reads, touches what it writes, or has effects where it has),
 * and that kernel does not read or write what it writes. Never the later
 * one up: its result would then be held longer, and a backend that runs
 * the group as its members (the GPU for now) would gain nothing for the
 * memory. */
static void weave_branches(const wctx *w, seq *s, rf_weave_info *info)
{
    for (int a = 0; a < s->nkernels; a++) {
        int x = branch_input(&s->kernels[a]);
        if (x < 0)
            continue;
        for (int b = a + 1; b < s->nkernels; b++) {
            const rf_kernel *ka = &s->kernels[a], *kb = &s->kernels[b];
            if (branch_input(kb) != x || member_count(ka) + member_count(kb) > RF_FUSED_MAX)
                continue;
            int outs[RF_KERNEL_VARS_MAX], nouts = rf_kernel_writes(ka, outs);
            bool movable = !touches(kb, outs, nouts);
            for (int i = a + 1; i < b && movable; i++)
                movable = can_pass(ka, &s->kernels[i]);
            if (!movable)
                continue;
            int made = 1 - (ka->op == RF_K_FUSED) - (kb->op == RF_K_FUSED);
            info->groups += made;
            info->shared += made;
            info->members += (ka->op != RF_K_FUSED) + (kb->op != RF_K_FUSED);
            join_branches(w->p, s, a, b);
            a--;   /* the kernel now at a followed the old one */
            break;
        }
    }
}

/* The block control goes to unconditionally after b (falling through or
 * jumping), or -1. */
static int next_block(const rf_hprogram *p, int b)
{
    const rf_hblock *hb = &p->blocks[b];
    int t = hb->term == RF_TERM_FALLTHROUGH ? b + 1 : hb->term == RF_TERM_JUMP ? hb->target : -1;
    return t >= 0 && t < p->nblocks ? t : -1;
}

static int successors(const rf_hprogram *p, int b, int s[2])
{
    const rf_hblock *hb = &p->blocks[b];
    int n = 0, t[2] = {-1, -1};
    if (hb->term == RF_TERM_BRANCH_EMPTY || hb->term == RF_TERM_BRANCH_JOIN) {
        t[0] = hb->target;
        t[1] = hb->target_else;
    } else {
        t[0] = next_block(p, b);
    }
    for (int i = 0; i < 2; i++)
        if (t[i] >= 0 && t[i] < p->nblocks)
            s[n++] = t[i];
    return n;
}

/* Splits the CFG into runs: run_next[b] is the block that continues b's
 * run (control always goes there next, and only from b; neither lies on
 * a cycle), else -1; starts[b] whether a run begins at b. */
static void find_runs(const rf_hprogram *p, int *run_next, bool *starts, bool *cyclic)
{
    int nb = p->nblocks;
    int *npred = rf_calloc((size_t)nb + 1, sizeof *npred), *stack = rf_calloc((size_t)nb + 1, sizeof *stack);
    bool *on_cycle = rf_calloc((size_t)nb + 1, 1), *seen = rf_calloc((size_t)nb + 1, 1);
    for (int b = 0; b < nb; b++) {
        int s[2], ns = successors(p, b, s);
        for (int i = 0; i < ns; i++)
            npred[s[i]]++;
    }
    /* b lies on a cycle when it is reachable from its successors */
    for (int b = 0; b < nb; b++) {
        memset(seen, 0, (size_t)nb);
        int top = 0, s[2], ns = successors(p, b, s);
        for (int i = 0; i < ns; i++)
            if (!seen[s[i]]) {
                seen[s[i]] = true;
                stack[top++] = s[i];
            }
        while (top > 0 && !seen[b]) {
            int x = stack[--top];
            ns = successors(p, x, s);
            for (int i = 0; i < ns; i++)
                if (!seen[s[i]]) {
                    seen[s[i]] = true;
                    stack[top++] = s[i];
                }
        }
        on_cycle[b] = seen[b];
    }
    for (int b = 0; b < nb; b++)
        starts[b] = true;
    for (int b = 0; b < nb; b++) {
        int t = next_block(p, b);
        run_next[b] = t >= 0 && npred[t] == 1 && !on_cycle[b] && !on_cycle[t] ? t : -1;
        if (run_next[b] >= 0)
            starts[t] = false;
    }
    memcpy(cyclic, on_cycle, (size_t)nb);
    free(npred);
    free(stack);
    free(on_cycle);
    free(seen);
}

void rf_weave(rf_hprogram *p, const rf_weave_opts *o, rf_weave_info *info)
{
    rf_weave_info local;
    memset(&local, 0, sizeof local);
    wctx w = {p, rf_calloc((size_t)p->nvars + 1, sizeof *w.reads), rf_calloc((size_t)p->nvars + 1, sizeof *w.writes)};
    count_uses(&w);
    int nb = p->nblocks;
    int *run_next = rf_calloc((size_t)nb + 1, sizeof *run_next);
    bool *starts = rf_calloc((size_t)nb + 1, 1), *cyclic = rf_calloc((size_t)nb + 1, 1);
    find_runs(p, run_next, starts, cyclic);
    for (int b0 = 0; b0 < nb; b0++) {
        if (!starts[b0])
            continue;
        /* the run's kernels as one sequence, taken out of their blocks */
        seq s = {0, NULL, NULL};
        for (int b = b0; b >= 0; b = run_next[b])
            s.nkernels += p->blocks[b].nkernels;
        s.kernels = rf_calloc((size_t)s.nkernels + 1, sizeof *s.kernels);
        s.block = rf_calloc((size_t)s.nkernels + 1, sizeof *s.block);
        int n = 0;
        for (int b = b0; b >= 0; b = run_next[b]) {
            rf_hblock *hb = &p->blocks[b];
            for (int i = 0; i < hb->nkernels; i++, n++) {
                s.kernels[n] = hb->kernels[i];
                s.block[n] = b;
            }
            hb->nkernels = 0;
        }
        weave_chains(&w, &s, o, cyclic[b0], &local);
        weave_branches(&w, &s, &local);
        /* back into their blocks, in order: a group stands in its last
         * member's block, so no block gets more kernels than it had */
        for (int i = 0; i < s.nkernels; i++) {
            rf_hblock *hb = &p->blocks[s.block[i]];
            hb->kernels[hb->nkernels++] = s.kernels[i];
        }
        free(s.kernels);
        free(s.block);
    }
    free(run_next);
    free(starts);
    free(cyclic);
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
