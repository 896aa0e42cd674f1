/* Out-of-core kernels: whether and how a kernel splits into key-range
 * parts, and cutting host tables into the parts' rows. See ooc.h. */
#include "ooc.h"
#include "rf_prims.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---- Whether a kernel splits ----
 * The walk starts at the member that writes the kernel's output, asking
 * for its rows bounded by column 0, and goes back through the members
 * that made its inputs: each op says which column of each input carries
 * the value of the output column asked for (or that the input is read
 * whole), until it reaches the kernel's own input variables. */
typedef struct split_walk {
    const rf_hprogram *p;
    const rf_fused *f;       /* NULL: a plain kernel or a MULTIJOIN */
    rf_ooc_split *s;
    bool visited[RF_FUSED_MAX];
    const char *why;
} split_walk;

static bool fail_why(split_walk *w, const char *why)
{
    if (!w->why)
        w->why = why;
    return false;
}

static bool kernel_reads_rowid(const rf_kernel *k)
{
    if (rf_code_reads_rowid(&k->filter))
        return true;
    for (int i = 0; k->proj && i < k->nproj; i++)
        if (rf_code_reads_rowid(&k->proj[i]))
            return true;
    for (int i = 0; k->agg_arg && i < k->naggs; i++)
        if (rf_code_reads_rowid(&k->agg_arg[i]))
            return true;
    return false;
}

/* The kernel's input position pos (a FUSED group: every position of
 * variable v) is read bounded by col. */
static bool need_pos(split_walk *w, int pos, int v, int col)
{
    rf_ooc_split *s = w->s;
    if (pos >= 0) {
        s->col[pos] = col;
        return true;
    }
    for (int i = 0; i < s->npos; i++)
        if (s->var[i] == v) {
            if (s->col[i] != -2 && s->col[i] != col)
                return fail_why(w, "it reads one variable in two ways");
            s->col[i] = col;
        }
    return true;
}

static bool need_rows(split_walk *w, const rf_kernel *k, int col);

/* Input variable v of a member (pos -1), or input position pos of a
 * plain kernel or a MULTIJOIN, is read bounded by col. */
static bool need_input(split_walk *w, int pos, int v, int col)
{
    if (v < 0)
        return true;
    if (w->f) {
        int from = -1, readers = 0;
        for (int e = 0; e < w->f->nedges; e++)
            if (w->f->edges[e].var == v) {
                from = w->f->edges[e].from;
                readers++;
            }
        if (from >= 0) {
            if (readers > 1)
                return fail_why(w, "a result inside its fused group has two readers");
            return need_rows(w, &w->f->members[from], col);
        }
    }
    return need_pos(w, pos, v, col);
}

/* k's output is needed with its rows bounded by column col (-1: all). */
static bool need_rows(split_walk *w, const rf_kernel *k, int col)
{
    if (w->f) {
        int m = (int)(k - w->f->members);
        if (w->visited[m])
            return fail_why(w, "a member of its fused group is read twice");
        w->visited[m] = true;
    }
    if (kernel_reads_rowid(k))
        return fail_why(w, "it reads row positions, which would restart in every part");
    if (k->op == RF_K_MULTIJOIN && k->mj->count)
        return fail_why(w, "it counts its bindings into one row, which parts would each make");
    if (k->op == RF_K_MULTIJOIN) {
        int var = col;
        if (col >= 0 && (var = rf_code_as_column(&k->proj[col])) < 0)
            return fail_why(w, "its first column is computed");
        for (int i = 0; i < k->mj->nin; i++) {
            int c = -1;
            for (int j = k->mj->in_first[i]; var >= 0 && j < k->mj->in_first[i + 1]; j++)
                if (k->mj->in_vars[j] == var)
                    c = j - k->mj->in_first[i];
            if (!need_input(w, w->f ? -1 : i, k->mj->in[i], c))
                return false;
        }
        return true;
    }
    int p0 = w->f ? -1 : 0, p1 = w->f ? -1 : 1;   /* positions of in[0], in[1] */
    if (col < 0)
        return need_input(w, p0, k->in[0], -1) && need_input(w, p1, k->in[1], -1);
    switch (k->op) {
    case RF_K_SORT:
        return need_input(w, p0, k->in[0], col);
    case RF_K_MAP: {
        int j = rf_code_as_column(&k->proj[col]);
        return j >= 0 ? need_input(w, p0, k->in[0], j) : fail_why(w, "its first column is computed");
    }
    case RF_K_AGG:
        return col < k->nkeys ? need_input(w, p0, k->in[0], col)
                              : fail_why(w, "its first column is an aggregate over every row");
    case RF_K_UNION:
    case RF_K_DIFF:
        return need_input(w, p0, k->in[0], col) && need_input(w, p1, k->in[1], col);
    case RF_K_ANTIJOIN:
        return need_input(w, p0, k->in[0], col) && need_input(w, p1, k->in[1], col < k->nkeys ? col : -1);
    case RF_K_JOIN: {
        int j = rf_code_as_column(&k->proj[col]);
        if (j < 0)
            return fail_why(w, "its first column is computed");
        int left_arity = w->p->vars[k->in[0]].arity, lc, rc;
        if (j < left_arity) {
            lc = j;
            rc = j < k->nkeys ? j : -1;
        } else {
            rc = j - left_arity;
            lc = rc < k->nkeys ? rc : -1;
        }
        return need_input(w, p0, k->in[0], lc) && need_input(w, p1, k->in[1], rc);
    }
    default:
        return fail_why(w, "no part of it makes a bounded share of its rows");
    }
}

bool rf_ooc_split_of(const rf_hprogram *p, const rf_kernel *k, rf_ooc_split *s, const char **why)
{
    split_walk w = {.p = p, .s = s};
    memset(s, 0, sizeof *s);
    const rf_kernel *last = k;
    bool ok = true;
    if (k->op == RF_K_FUSED) {
        w.f = k->fused;
        last = NULL;
        s->npos = w.f->nin;
        for (int i = 0; i < w.f->nin; i++) {
            s->var[i] = w.f->in[i];
            s->col[i] = -2;   /* not reached yet */
        }
        if (w.f->nout != 1)
            ok = fail_why(&w, "its fused group writes more than one variable");
        for (int m = 0; ok && m < w.f->nmembers; m++)
            if (w.f->members[m].out == w.f->out[0])
                last = &w.f->members[m];
        if (ok && !last)
            ok = fail_why(&w, "its fused group's output has no writer");
    } else if (k->op == RF_K_MULTIJOIN && k->mj->count) {
        ok = fail_why(&w, "it counts its bindings into one row, which parts would each make");
    } else if (k->op == RF_K_MULTIJOIN) {
        s->npos = k->mj->nin;
        for (int i = 0; i < k->mj->nin; i++)
            s->var[i] = k->mj->in[i];
    } else if (k->op == RF_K_JOIN || k->op == RF_K_MAP || k->op == RF_K_SORT || k->op == RF_K_AGG ||
               k->op == RF_K_UNION || k->op == RF_K_DIFF || k->op == RF_K_ANTIJOIN) {
        s->npos = 2;
        s->var[0] = k->in[0];
        s->var[1] = k->in[1];
    } else {
        ok = fail_why(&w, "no part of it makes a bounded share of its rows");
    }
    for (int i = s->npos; i-- > 0;)
        if (k->op != RF_K_FUSED)
            s->col[i] = -1;
    if (ok && (k->out < 0 || p->vars[k->out].arity < 1))
        ok = fail_why(&w, "its output has no column");
    /* A MAP's rows are made one by one and its output is unsorted (a set
     * whose order no reader sees), so any column of its input bounds a
     * share of its rows: the input's first, where that is its sort order,
     * so that the parts are views into it instead of copies (TC's step
     * MAP t1(y, x) := path.delta(x, y) was cut by y, a pass over the
     * delta's rows per iteration). RF_OOC_MAP_VIEWS=off cuts it by its
     * output's column as before, for measuring. */
    const char *views = getenv("RF_OOC_MAP_VIEWS");
    if (ok && k->op == RF_K_MAP && !(views && strcmp(views, "off") == 0) && k->in[0] >= 0 && p->vars[k->in[0]].arity >= 1 && p->vars[k->in[0]].sorted &&
        !kernel_reads_rowid(k)) {
        s->col[0] = 0;
        return true;
    }
    ok = ok && need_rows(&w, last, 0);
    for (int m = 0; ok && w.f && m < w.f->nmembers; m++)
        if (!w.visited[m])
            ok = fail_why(&w, "a member of its fused group does not lead to its output");
    bool bounded = false;
    for (int i = 0; ok && i < s->npos; i++) {
        if (s->col[i] == -2)
            s->col[i] = -1;
        bounded = bounded || (s->col[i] >= 0 && s->var[i] >= 0);
    }
    if (ok && !bounded)
        ok = fail_why(&w, "no input bounds its first column");
    if (!ok && why)
        *why = w.why;
    return ok;
}

/* ---- Key ranges from a sample ---- */
static int cmp_word(const void *a, const void *b)
{
    rf_word x = *(const rf_word *)a, y = *(const rf_word *)b;
    return x < y ? -1 : x > y;
}

int rf_ooc_ranges(const rf_table *t, int col, rf_ooc_range r, int n, rf_ooc_range *out)
{
    out[0] = r;
    if (n < 2 || r.lo == r.hi || t->nrows == 0)
        return 1;
    size_t want = 64 * (size_t)n + 1024;
    size_t step = t->nrows / want ? t->nrows / want : 1;
    rf_word *sample = rf_malloc((t->nrows / step + 1) * sizeof *sample);
    size_t ns = 0;
    for (size_t i = 0; i < t->nrows; i += step) {
        rf_word v = t->cols[col][i];
        if (v >= r.lo && v <= r.hi)
            sample[ns++] = v;
    }
    qsort(sample, ns, sizeof *sample, cmp_word);
    int count = 0;
    rf_word lo = r.lo;
    if (ns && sample[0] == sample[ns - 1]) {
        /* One value sampled: it alone, and whatever lies either side. */
        rf_word v = sample[0];
        if (v > r.lo)
            out[count++] = (rf_ooc_range){r.lo, v - 1};
        out[count++] = (rf_ooc_range){v, v};
        if (v < r.hi)
            out[count++] = (rf_ooc_range){v + 1, r.hi};
        free(sample);
        return count;
    }
    for (int i = 1; i < n && ns; i++) {
        size_t at = (size_t)i * ns / (size_t)n;
        while (at < ns && sample[at] <= lo)
            at++;   /* a value filling more than its share: one range, and on */
        if (at == ns)
            break;
        rf_word b = sample[at];
        out[count++] = (rf_ooc_range){lo, b - 1};
        lo = b;
    }
    out[count++] = (rf_ooc_range){lo, r.hi};
    free(sample);
    return count;
}

/* ---- Cutting a table into the ranges' rows ----
 * Two passes over the cut column, each on the worker pool a chunk at a
 * time: the first finds each row's range (a branch-free binary search over
 * the ranges' lower ends, the compare a conditional move) and counts the
 * rows a chunk gives each range; the second copies every row to its place
 * in its range's part, by the range the first pass noted (2 bytes a row),
 * not searched again. */
enum { CUT_CHUNK = 1 << 18, CUT_NONE = 0xFFFF };

typedef struct cut_job {
    const rf_table *t;
    int col, n, nchunks;
    const rf_ooc_range *ranges;
    rf_word *los;            /* [n]: the ranges' lower ends, in order */
    uint16_t *which;         /* [rows]: each row's range, CUT_NONE outside them all */
    size_t *counts;          /* [nchunks][n]: rows of chunk c in range i, then where they go */
    rf_table *parts;
} cut_job;

static int range_of(const cut_job *j, rf_word v)
{
    const rf_word *lo = j->los;
    size_t base = 0, len = (size_t)j->n;
    while (len > 1) {   /* the last range whose lo <= v */
        size_t half = len / 2;
        base = lo[base + half] <= v ? base + half : base;
        len -= half;
    }
    return v >= lo[0] && v <= j->ranges[base].hi ? (int)base : -1;
}

static void cut_count(void *ctx, int c)
{
    cut_job *j = ctx;
    size_t *cnt = j->counts + (size_t)c * (size_t)j->n;
    size_t end = ((size_t)c + 1) * CUT_CHUNK < j->t->nrows ? ((size_t)c + 1) * CUT_CHUNK : j->t->nrows;
    const rf_word *v = j->t->cols[j->col];
    for (size_t i = (size_t)c * CUT_CHUNK; i < end; i++) {
        int r = range_of(j, v[i]);
        j->which[i] = r < 0 ? CUT_NONE : (uint16_t)r;
        if (r >= 0)
            cnt[r]++;
    }
}

static void cut_write(void *ctx, int c)
{
    cut_job *j = ctx;
    size_t *at = j->counts + (size_t)c * (size_t)j->n;
    size_t end = ((size_t)c + 1) * CUT_CHUNK < j->t->nrows ? ((size_t)c + 1) * CUT_CHUNK : j->t->nrows;
    int arity = j->t->arity;
    for (size_t i = (size_t)c * CUT_CHUNK; i < end; i++) {
        unsigned r = j->which[i];
        if (r == CUT_NONE)
            continue;
        rf_table *part = &j->parts[r];
        size_t to = at[r]++;
        for (int a = 0; a < arity; a++)
            part->cols[a][to] = j->t->cols[a][i];
    }
}

/* The first row of sorted t (by column 0) whose column 0 is >= v. */
static size_t lower_bound(const rf_table *t, rf_word v)
{
    size_t a = 0, b = t->nrows;
    while (a < b) {
        size_t m = a + (b - a) / 2;
        if (t->cols[0][m] < v)
            a = m + 1;
        else
            b = m;
    }
    return a;
}

void rf_ooc_cut(const rf_table *t, int col, bool sorted_by_col, const rf_ooc_range *ranges, int n, bool pooled,
                rf_table *parts, bool *views)
{
    *views = sorted_by_col && col == 0;
    if (*views) {
        for (int i = 0; i < n; i++) {
            size_t from = lower_bound(t, ranges[i].lo);
            size_t to = ranges[i].hi == UINT64_MAX ? t->nrows : lower_bound(t, ranges[i].hi + 1);
            parts[i].arity = t->arity;
            parts[i].nrows = parts[i].cap = to - from;
            parts[i].cols = rf_malloc((size_t)t->arity * sizeof *parts[i].cols);
            for (int a = 0; a < t->arity; a++)
                parts[i].cols[a] = t->cols[a] + from;
        }
        return;
    }
    cut_job j = {.t = t, .col = col, .n = n, .ranges = ranges, .parts = parts};
    j.nchunks = (int)((t->nrows + CUT_CHUNK - 1) / CUT_CHUNK);
    j.counts = rf_calloc((size_t)(j.nchunks ? j.nchunks : 1) * (size_t)n, sizeof *j.counts);
    j.los = rf_malloc((size_t)n * sizeof *j.los);
    for (int i = 0; i < n; i++)
        j.los[i] = ranges[i].lo;
    j.which = rf_malloc((t->nrows ? t->nrows : 1) * sizeof *j.which);
    rf_par_for(j.nchunks, cut_count, &j);
    for (int i = 0; i < n; i++) {
        size_t total = 0;
        for (int c = 0; c < j.nchunks; c++) {   /* counts -> each chunk's first row in part i */
            size_t k = j.counts[(size_t)c * (size_t)n + (size_t)i];
            j.counts[(size_t)c * (size_t)n + (size_t)i] = total;
            total += k;
        }
        rf_table_init(&parts[i], t->arity);
        if (pooled)
            rf_table_reserve_pooled(&parts[i], total);
        rf_table_resize(&parts[i], total);
    }
    rf_par_for(j.nchunks, cut_write, &j);
    free(j.counts);
    free(j.los);
    free(j.which);
}

void rf_ooc_parts_free(rf_table *parts, int n, bool views)
{
    for (int i = 0; i < n; i++) {
        if (views) {
            free(parts[i].cols);
            parts[i].cols = NULL;
            parts[i].nrows = parts[i].cap = 0;
        } else {
            rf_table_free(&parts[i]);
        }
    }
}

/* ---- The test host pool (RF_TEST_HOST_POOL) ----
 * Live columns in an open-addressing set of their addresses; a removed
 * one leaves a mark (the set's own address) until the next rehash. */
#define TEST_POOL_OFFSET 64

static struct {
    pthread_mutex_t mu;
    void **slots;
    size_t cap, live, used;   /* used: live and marks */
} tp = {.mu = PTHREAD_MUTEX_INITIALIZER};

static size_t tp_slot(const void *p, size_t cap) { return ((uintptr_t)p >> 6) * 11400714819323198485ull & (cap - 1); }

static bool tp_mark(const void *s) { return s == (const void *)&tp; }

static void tp_insert(void *p)
{
    if (2 * (tp.used + 1) > tp.cap) {   /* rehash the live columns into room for four times as many */
        size_t cap = 256;
        while (cap < 4 * (tp.live + 1))
            cap *= 2;
        void **slots = rf_calloc(cap, sizeof *slots);
        for (size_t i = 0; i < tp.cap; i++)
            if (tp.slots[i] && !tp_mark(tp.slots[i])) {
                size_t j = tp_slot(tp.slots[i], cap);
                while (slots[j])
                    j = (j + 1) & (cap - 1);
                slots[j] = tp.slots[i];
            }
        free(tp.slots);
        tp.slots = slots;
        tp.cap = cap;
        tp.used = tp.live;
    }
    size_t j = tp_slot(p, tp.cap);
    while (tp.slots[j])
        j = (j + 1) & (tp.cap - 1);
    tp.slots[j] = p;
    tp.live++;
    tp.used++;
}

/* p's slot, or -1. */
static long tp_find(const void *p)
{
    if (!tp.cap)
        return -1;
    for (size_t j = tp_slot(p, tp.cap); tp.slots[j]; j = (j + 1) & (tp.cap - 1))
        if (tp.slots[j] == p)
            return (long)j;
    return -1;
}

static void *tp_alloc(size_t bytes)
{
    char *block = rf_malloc(bytes + TEST_POOL_OFFSET);
    pthread_mutex_lock(&tp.mu);
    tp_insert(block + TEST_POOL_OFFSET);
    pthread_mutex_unlock(&tp.mu);
    return block + TEST_POOL_OFFSET;
}

static bool tp_owns(const void *p)
{
    pthread_mutex_lock(&tp.mu);
    bool in = tp_find(p) >= 0;
    pthread_mutex_unlock(&tp.mu);
    return in;
}

static void tp_free(void *p)
{
    pthread_mutex_lock(&tp.mu);
    long j = tp_find(p);
    if (j >= 0) {
        tp.slots[j] = (void *)&tp;
        tp.live--;
    }
    pthread_mutex_unlock(&tp.mu);
    if (j >= 0)
        free((char *)p - TEST_POOL_OFFSET);
}

static void tp_shrink(void *p, size_t bytes)
{
    (void)p;   /* (the block keeps its size: still "the first bytes, in place") */
    (void)bytes;
}

static const rf_host_pool test_pool = {.alloc = tp_alloc, .owns = tp_owns, .free = tp_free, .shrink = tp_shrink};

static void test_pool_set(void) { (void)rf_host_pool_set(&test_pool); }

void rf_ooc_test_pool_install(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, test_pool_set);
}

size_t rf_ooc_test_pool_live(void)
{
    pthread_mutex_lock(&tp.mu);
    size_t n = tp.live;
    pthread_mutex_unlock(&tp.mu);
    return n;
}
