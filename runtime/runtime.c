/* The Harmony runtime's interpreter: walks the kernel CFG, owns variable
 * lifetimes (create on first definition, free after last use, COPY as a
 * move when the source dies), runs LOADs itself and hands every other
 * kernel to the backend; then writes the outputs. See runtime.h. */
#include "runtime.h"
#include "rf_outfile.h"
#include "download_copy.h"
#include "ooc.h"
#include "rf_prims.h"
#include "trace.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct kstat {
    size_t calls, rows_in[2], rows_out;
    double seconds;
    double be_seconds;       /* the backend's own time (GPU: device events) */
    size_t bytes;            /* bytes moved, as the backend counts them */
} kstat;

typedef struct rt {
    const rf_hprogram *p;
    const rf_run_options *opt;
    rf_backend *be;
    FILE *out, *err;
    rf_dvar **dv;            /* [nvars] storage, NULL until defined */
    bool *keep;              /* outputs: never freed before HALT */
    bool **needed;           /* [nvars] columns a LOAD parses (rf_needed_columns) */
    bool *positions;         /* [nvars] pruned, and readers see row positions */
    kstat **ks;              /* [block][kernel] */
    size_t *entries;         /* [block] times entered */
    bool *loop_header;       /* [block] target of a back edge */
    double *loop_start;      /* [block] when the loop was entered */
    size_t *loop_iter;       /* [block] iterations since the loop was entered */
    bool progress_shown;
    double progress_last;    /* when the last progress line was printed */
    double output_seconds;   /* download, typed sort and writing at HALT */
    double write_seconds;    /* of which writing the TSV text */
    double load_seconds;     /* LOAD kernels: reading inputs, making them resident */
    rf_run_info info;
    /* --profile (trace.h); NULL when off */
    rf_trace *trace;
    bool gpu;                /* the backend's kernels run on a GPU stream */
    int block;               /* the block being interpreted */
    int *loop_of;            /* [block] header of the innermost loop holding it, -1 */
    int *closes;             /* [block] header its back edge returns to, -1 */
    double *iter_start;      /* [block] when the header's current iteration began */
    rf_par_activity *activity; /* [RF_PAR_ACTIVITY_SLOTS] the pool's threads during a kernel */
    /* --join=auto's run-time choices, per BRANCH_JOIN block (--stats) */
    size_t *chose_wcoj, *chose_binary;
    rf_join_choice *last_choice;
    double *choice_seconds;
    /* --device-memory (spill.c's job, in this file): variables held in host
     * memory between uses while the backend's relations would exceed the
     * limit; spilled[v] non-NULL (and dv[v] NULL) while v is. */
    size_t mem_limit;        /* 0: no limit */
    rf_table **spilled;      /* [nvars] */
    size_t *last_use;        /* [nvars] use_clock when last read or written */
    size_t use_clock;
    size_t spills, reloads, spill_bytes, reload_bytes, oom_reruns;
    /* Out-of-core traffic: parts' rows up and outputs down (spills and
     * reloads are above), the seconds spent in every move between host
     * and device memory, and in cutting host tables into parts: what the
     * PCIe floor of a run is compared with (bench/ooc_bench.py). */
    size_t part_up_bytes, part_down_bytes;
    double move_seconds, cut_seconds, parts_seconds;
    /* Out-of-core kernels (ooc.h): run in parts after running out of
     * memory (or always in ooc_force parts: RF_TEST_OOC_PARTS, tests) */
    int in_parts;            /* a part is running: no parts inside it */
    int kernel_at;           /* the running kernel's index in its block (r->block) */
    /* A semi-naive step's UNION run with the DIFF before it, part by part
     * (run_parts): skipped when reached, its output already in place. */
    const rf_kernel *union_done;
    rf_kernel_stats union_stats;
    size_t unions_with_diff;
    /* The UNIONs run so, each reading the DIFF's output: made once, so
     * that a backend's notes on a kernel (kept by its address) stay its. */
    struct union_copy { const rf_kernel *un; rf_kernel *copy; } *union_copies;
    int nunion_copies;
    const rf_kernel *part_kernel; /* a plain kernel or MULTIJOIN running in parts: */
    rf_dvar **part_in;       /* its inputs by position (NULL: as usual) */
    int ooc_force;
    bool ooc_copy_parts;     /* RF_OOC_DOWNLOAD_AT=off: never the backend's download_at */
    bool pooled;             /* host tables that cross made in the host pool (be->pooled_tables) */
    bool pool_always;        /* from the first (RF_TEST_HOST_POOL), not from the first kernel run in parts: pool_now */
    size_t ooc_kernels, ooc_parts, ooc_splits;
    size_t parts_ahead;      /* parts uploaded while the one before ran (the backend's upload_ahead) */
    size_t downloads_ahead;  /* part outputs still crossing (download_at_ahead) until moves_wait */
    struct ooc_hint { const rf_kernel *k; size_t parts, rows; } *ooc_hints;
    int nooc_hints;
} rt;

static bool kernel_frees(const rf_kernel *k, int var)
{
    for (int i = 0; i < k->nfree; i++)
        if (k->frees[i] == var)
            return true;
    return false;
}

/* Whether a host table that will cross to the device is made in the host
 * pool (pinned on the GPU: it then crosses at the bus's speed, but pinning
 * costs more than a staged copy, once for the arena's size). Only once a
 * kernel has run in parts: then the run is out of core and its loop will
 * send tables across again and again, reusing the arena (a run that spills
 * once and runs one kernel in parts, SG p2p-Gnutella09 under 1G on an H200,
 * lost 0.1 s pinning 2 GB it used once). RF_TEST_HOST_POOL: always. */
static bool pool_now(const rt *r) { return r->pooled && (r->ooc_kernels > 0 || r->pool_always); }

static void drop_spilled(rt *r, int v)
{
    if (r->spilled && r->spilled[v]) {
        rf_table_free(r->spilled[v]);
        free(r->spilled[v]);
        r->spilled[v] = NULL;
    }
}

static void free_var(rt *r, int v)
{
    if (v < 0 || v >= r->p->nvars || r->keep[v])
        return;
    drop_spilled(r, v);
    if (!r->dv[v])
        return;
    r->be->var_free(r->be, r->dv[v]);
    r->dv[v] = NULL;
}

/* ---- --device-memory: spilling ----
 * After each kernel, while the backend holds more than the limit, the
 * variable used longest ago is downloaded into host memory and freed in
 * the backend; a kernel (or a test, a join choice) that reads a spilled
 * variable uploads it again first. Rows keep their order both ways, so a
 * reloaded variable reads as it was (what the backend knew of it beyond
 * its rows, such as a dense set or a stamp, is made again or lost: only
 * speed depends on it). A kernel whose own inputs and output exceed the
 * limit still runs whole (out-of-core kernels are not built). */
static size_t var_rows_of(rt *r, int v)
{
    if (r->spilled && r->spilled[v])
        return r->spilled[v]->nrows;
    return r->dv[v] ? r->be->var_rows(r->be, r->dv[v]) : 0;
}

static void touch(rt *r, int v)
{
    if (r->last_use && v >= 0)
        r->last_use[v] = ++r->use_clock;
}

static bool unspill(rt *r, int v, rf_status *st)
{
    if (v < 0 || !r->spilled || !r->spilled[v])
        return true;
    rf_table *t = r->spilled[v];
    r->spilled[v] = NULL;
    r->dv[v] = r->be->var_new(r->be, r->p->vars[v].arity, st);
    bool ok = r->dv[v] != NULL;
    if (ok && r->be->var_describe)
        r->be->var_describe(r->be, r->dv[v], &r->p->vars[v]);
    double t0 = rf_now();
    ok = ok && r->be->upload(r->be, r->dv[v], t, st);
    r->move_seconds += rf_now() - t0;
    if (!ok) {   /* (out of memory: the rows stay in host memory) */
        if (r->dv[v])
            r->be->var_free(r->be, r->dv[v]);
        r->dv[v] = NULL;
        r->spilled[v] = t;
        return false;
    }
    r->reloads++;
    r->reload_bytes += t->nrows * (size_t)t->arity * sizeof(rf_word);
    rf_table_free(t);
    free(t);
    touch(r, v);
    return true;
}

static bool spill_var(rt *r, int v, rf_status *st)
{
    rf_table *t = rf_calloc(1, sizeof *t);
    rf_table_init(t, r->p->vars[v].arity);
    if (pool_now(r))   /* (what is spilled crosses back whole or in parts) */
        rf_table_reserve_pooled(t, r->be->var_rows(r->be, r->dv[v]));
    double t0 = rf_now();
    bool ok = r->be->download(r->be, r->dv[v], t, st);
    r->move_seconds += rf_now() - t0;
    if (!ok) {
        rf_table_free(t);
        free(t);
        return false;
    }
    r->be->var_free(r->be, r->dv[v]);
    r->dv[v] = NULL;
    r->spilled[v] = t;
    r->spills++;
    r->spill_bytes += t->nrows * (size_t)t->arity * sizeof(rf_word);
    return true;
}

/* Whether v is among the nread variables in reads. */
static bool among(const int *reads, int nread, int v)
{
    for (int i = 0; i < nread; i++)
        if (reads[i] == v)
            return true;
    return false;
}

/* Spills least recently used variables until the backend holds at most
 * the limit, or nothing with rows is left to spill; what the next kernel
 * (or the block's test) reads goes last. */
static bool keep_under_limit(rt *r, const int *next_reads, int nnext, rf_status *st)
{
    while (r->mem_limit && r->be->bytes_in_use(r->be) > r->mem_limit) {
        int victim = -1;
        for (int pass = 0; pass < 2 && victim < 0; pass++)
            for (int v = 0; v < r->p->nvars; v++)
                if (r->dv[v] && r->be->var_rows(r->be, r->dv[v]) > 0 &&
                    (pass == 1 || !among(next_reads, nnext, v)) &&
                    (victim < 0 || r->last_use[v] < r->last_use[victim]))
                    victim = v;
        if (victim < 0)
            return true;
        if (!spill_var(r, victim, st))
            return false;
    }
    return true;
}

static const char *var_label(const rf_hvar *v) { return v->pred ? v->pred : v->name ? v->name : "?"; }

static rf_dvar *ensure_var(rt *r, int v, rf_status *st)
{
    if (r->spilled && r->spilled[v] && !unspill(r, v, st))   /* (a LOAD appends) */
        return NULL;
    if (!r->dv[v]) {
        r->dv[v] = r->be->var_new(r->be, r->p->vars[v].arity, st);
        if (r->dv[v] && r->be->var_describe)
            r->be->var_describe(r->be, r->dv[v], &r->p->vars[v]);
    }
    return r->dv[v];
}

void rf_status_locate(rf_status *st, const char *where, const char *note)
{
    if (!st->code || st->placed || strstr(st->message, ": error: "))
        return;
    char *msg;
    if (where && note)
        msg = rf_sprintf("%s: error: %s\n%s: note: %s", where, st->message, where, note);
    else if (where)
        msg = rf_sprintf("%s: error: %s", where, st->message);
    else if (note)
        msg = rf_sprintf("%s (%s)", st->message, note);
    else
        return;
    size_t n = strlen(msg);
    if (n >= sizeof st->message)
        n = sizeof st->message - 1;
    memcpy(st->message, msg, n);
    st->message[n] = '\0';
    st->placed = true;
    free(msg);
}

/* LOAD: inline facts ∪ the input file (--input overrides the directive's),
 * sorted and deduplicated, uploaded. Of the file only the columns the
 * program reads are parsed (r->needed), the others are 0. */
static bool load_columns(rt *r, int v, const bool *needed, size_t *rows_read, rf_status *st);

static bool run_load(rt *r, int v, rf_status *st)
{
    /* A fingerprinted file row holds a fingerprint where a column is
     * unread, an inline fact its value: equal rows of the two would stay
     * apart (count() over `e(_)` with e(-1) inline and -1 in the file
     * counted it twice), so such a load keeps every column. */
    if (r->needed[v] && r->positions[v] && r->p->vars[v].nfacts > 0) {
        free(r->needed[v]);
        r->needed[v] = NULL;   /* (--stats: not pruned) */
    }
    const bool *needed = r->needed[v];
    size_t rows_read = 0;
    if (!load_columns(r, v, needed, &rows_read, st))
        return false;
    /* Where a reader tells rows apart by position (a count/total/avg
     * body's row identity), rows that differ only in unread columns must
     * not become one: such a load keeps a fingerprint of the unread fields
     * (load_columns), and when deduplication still merged rows (equal
     * rows, or a fingerprint collision) it loads every column instead. */
    if (needed && r->positions[v] && r->be->var_rows(r->be, r->dv[v]) < rows_read) {
        free(r->needed[v]);
        r->needed[v] = NULL;   /* (--stats: not pruned) */
        return load_columns(r, v, NULL, &rows_read, st);
    }
    return true;
}

/* Rows from memory (rf_memory_input) join the inline facts. Columns the
 * program does not read are 0, as a pruned file load stores them, unless
 * readers see row positions: then every column is kept, so that
 * deduplication merges only equal rows (what the fingerprint of a file
 * load approximates). */
static void append_memory_rows(rt *r, int v, const rf_table *rows, const bool *needed, rf_table *t)
{
    size_t at = t->nrows;
    rf_table_resize(t, at + rows->nrows);
    bool prune = needed && !r->positions[v];
    for (int c = 0; c < t->arity; c++) {
        if (prune && !needed[c])
            memset(t->cols[c] + at, 0, rows->nrows * sizeof(rf_word));
        else if (rows->nrows)
            memcpy(t->cols[c] + at, rows->cols[c], rows->nrows * sizeof(rf_word));
    }
}

/* Whether this process reads only its share of v's input file (a
 * distributed run: rf_backend.input_share): a regular TBL or TSV file (a
 * CSV record may span lines) of a set variable with no string column read
 * (every process interns every input string in the same order). Every
 * process decides alike: the same program and file. */
static bool load_in_shares(rt *r, int v, const bool *needed, const char *path, rf_file_format fmt, int *part,
                           int *nparts)
{
    const rf_hvar *hv = &r->p->vars[v];
    if (!r->be->input_share || !r->be->input_share(r->be, part, nparts) || *nparts < 2 || !path ||
        fmt == RF_FORMAT_CSV || hv->arity < 1 || !hv->sorted || !rf_regular_file(path))
        return false;
    for (int c = 0; c < hv->arity; c++)
        if (hv->types[c] == RF_TYPE_STRING && (!needed || needed[c]))
            return false;
    return true;
}

static uint64_t share_lines_before(void *ctx, uint64_t lines)
{
    rf_backend *be = ctx;
    uint64_t before = 0;
    (void)be->share_count(be, lines, &before);
    return before;
}

/* *rows_read: the rows read (facts, memory and file), before deduplication. */
static bool load_columns(rt *r, int v, const bool *needed, size_t *rows_read, rf_status *st)
{
    const rf_hvar *hv = &r->p->vars[v];
    rf_table t;
    rf_table_from_rows(&t, hv->arity, hv->facts, hv->nfacts);
    const char *path = hv->input_path;
    rf_file_format fmt = hv->input_format;
    const rf_input_override *option = NULL;
    for (int i = 0; i < r->opt->ninputs; i++)
        if (hv->pred && strcmp(r->opt->inputs[i].pred, hv->pred) == 0) {
            option = &r->opt->inputs[i];
            path = option->path;
            fmt = rf_format_from_path(path);
        }
    const rf_memory_input *memory = NULL;
    for (int i = 0; i < r->opt->nmemory_inputs; i++)
        if (hv->pred && strcmp(r->opt->memory_inputs[i].pred, hv->pred) == 0) {
            memory = &r->opt->memory_inputs[i];
            path = NULL;   /* the rows in memory replace the file */
        }
    if (memory)
        append_memory_rows(r, v, memory->rows, needed, &t);
    bool ok = true;
    int part = 0, nparts = 1;
    bool shares = !memory && load_in_shares(r, v, needed, path, fmt, &part, &nparts);
    if (shares) {
        if (part != 0)   /* (the inline facts once, with the first share) */
            rf_table_resize(&t, 0);
        ok = rf_read_facts_share(path, fmt, hv->arity, hv->types, needed, needed && r->positions[v], part, nparts,
                                 share_lines_before, r->be, &t, st);
        ok = r->be->share_settle(r->be, ok, st);   /* (every process: the first failure's status) */
    } else if (path)
        ok = needed && r->positions[v]
                 ? rf_read_facts_fingerprinted(path, fmt, hv->arity, hv->types, needed, &t, st)
                 : rf_read_facts(path, fmt, hv->arity, hv->types, needed, &t, st);
    *rows_read = t.nrows;
    if (shares && ok && needed && r->positions[v]) {   /* (every process's rows: run_load compares them with v's) */
        uint64_t before = 0;
        *rows_read = r->be->share_count(r->be, t.nrows, &before);
    }
    if (!ok && option) {
        char *note = rf_sprintf("from --input %s=%s", option->pred, option->path);
        rf_status_locate(st, NULL, note);
        free(note);
    } else if (!ok) {
        char *note = rf_sprintf("the @input file of '%s'", var_label(hv));
        rf_status_locate(st, hv->input_where, note);
        free(note);
    }
    if (ok && shares) {
        ok = ensure_var(r, v, st) && r->be->upload_share(r->be, r->dv[v], &t, st);
    } else if (ok && r->be->upload_unsorted) {
        ok = ensure_var(r, v, st) && r->be->upload_unsorted(r->be, r->dv[v], &t, st);
    } else if (ok) {
        rf_prim_sort_unique(&t);
        ok = ensure_var(r, v, st) && r->be->upload(r->be, r->dv[v], &t, st);
    }
    rf_table_free(&t);
    return ok;
}

/* Appends "v1, v2" (columns from..to of row i, typed) to a message. */
static void append_values(char *buf, size_t cap, const rf_table *t, const rf_type *types, size_t i, int from,
                          int to)
{
    for (int c = from; c < to; c++) {
        size_t n = strlen(buf);
        if (c > from && n + 2 < cap) {
            strcpy(buf + n, ", ");
            n += 2;
        }
        if (n < cap)
            rf_value_format(types[c], t->cols[c][i], buf + n, cap - n);
    }
}

/* CHECK_KEYS: in0 is sorted by words, so rows with equal keys (the first
 * nkeys columns) are adjacent; two adjacent rows equal on the key violate
 * the functional dependency (rows are distinct, so their values differ). */
static bool run_check_keys(rt *r, const rf_kernel *k, rf_kernel_stats *s, rf_status *st)
{
    const rf_hvar *hv = &r->p->vars[k->in[0]];
    if (!unspill(r, k->in[0], st))
        return false;
    const rf_dvar *dv = r->dv[k->in[0]];
    if (!dv || r->be->var_rows(r->be, dv) < 2)
        return true;
    rf_table t;
    rf_table_init(&t, hv->arity);
    bool ok = r->be->download(r->be, dv, &t, st);
    s->rows_in[0] = t.nrows;
    for (size_t i = 1; ok && i < t.nrows; i++) {
        int c = 0;
        while (c < k->nkeys && t.cols[c][i] == t.cols[c][i - 1])
            c++;
        if (c < k->nkeys)
            continue;
        char key[512] = "", a[512] = "", b[512] = "";
        append_values(key, sizeof key, &t, hv->types, i, 0, k->nkeys);
        append_values(a, sizeof a, &t, hv->types, i - 1, k->nkeys, hv->arity);
        append_values(b, sizeof b, &t, hv->types, i, k->nkeys, hv->arity);
        ok = rf_fail(st, RF_EXIT_RUNTIME_ERROR, "functional dependency violated: %s[%s] has values %s and %s",
                     hv->pred ? hv->pred : hv->name ? hv->name : "?", key, a, b);
    }
    rf_table_free(&t);
    return ok;
}

/* A compute kernel through the backend. A FUSED kernel the backend
 * declines (or could not finish: it wrote nothing anyone sees) runs as its
 * members, one by one, exactly as unfused, with its internal variables
 * allocated for the while; so its errors are the ones `--no-fuse` gives. */
/* After kernel k failed for want of memory, spilling on (a limit given,
 * or a device: rf_run_options.spill_on_oom): spills
 * every variable k neither reads nor writes and clears st, so that the
 * backend runs k once more; false (st kept) when there was nothing to
 * spill. */
static bool spill_for_rerun(rt *r, const rf_kernel *k, rf_status *st)
{
    if (!r->spilled || st->code != RF_EXIT_OUT_OF_MEMORY)
        return false;
    int reads[2 * RF_KERNEL_VARS_MAX];
    int nreads = rf_kernel_reads(k, reads);
    nreads += rf_kernel_writes(k, reads + nreads);
    size_t spilled = 0;
    rf_status local;
    rf_status_init(&local);
    for (int v = 0; v < r->p->nvars; v++)
        if (r->dv[v] && !among(reads, nreads, v) && r->be->var_rows(r->be, r->dv[v]) > 0) {
            if (!spill_var(r, v, &local)) {
                *st = local;
                return false;
            }
            spilled++;
        }
    if (!spilled)
        return false;
    rf_status_init(st);
    r->oom_reruns++;
    return true;
}

static bool run_compute(rt *r, const rf_kernel *k, rf_kernel_stats *s, rf_status *st);
static bool run_members(rt *r, const rf_kernel *k, rf_kernel_stats *s, rf_status *st);

static bool run_compute_whole(rt *r, const rf_kernel *k, rf_kernel_stats *s, rf_status *st)
{
    int outs_v[RF_KERNEL_VARS_MAX], ins_v[RF_KERNEL_VARS_MAX];
    rf_dvar *outs[RF_KERNEL_VARS_MAX], *ins[RF_KERNEL_VARS_MAX];
    int no = rf_kernel_writes(k, outs_v), ni;
    if (k->op == RF_K_FUSED || k->op == RF_K_MULTIJOIN) {
        ni = rf_kernel_reads(k, ins_v);
    } else {  /* positions matter: in[1] may be set with in[0] unset */
        ni = 2;
        ins_v[0] = k->in[0];
        ins_v[1] = k->in[1];
    }
    /* A plain kernel running in parts reads its parts by position. */
    rf_dvar *const *over = r->part_kernel == k ? r->part_in : NULL;
    if (r->spilled) {
        for (int i = 0; i < ni; i++)
            if (!(over && over[i]) && !unspill(r, ins_v[i], st))
                return false;
        for (int i = 0; i < no; i++) {
            drop_spilled(r, outs_v[i]);   /* overwritten (an output read too was reloaded above) */
            touch(r, outs_v[i]);
        }
        for (int i = 0; i < ni; i++)
            touch(r, ins_v[i]);
    }
    for (int i = 0; i < no; i++)
        if (!(outs[i] = ensure_var(r, outs_v[i], st)))
            return false;
    for (int i = 0; i < ni; i++)
        ins[i] = over && over[i] ? over[i] : ins_v[i] >= 0 ? r->dv[ins_v[i]] : NULL;
    rf_run_result res = r->be->run(r->be, r->p, k, outs, ins, s, st);
    if (res == RF_RUN_FAILED && spill_for_rerun(r, k, st)) {
        memset(s, 0, sizeof *s);   /* (k's own variables stay: outs and ins hold) */
        res = r->be->run(r->be, r->p, k, outs, ins, s, st);
    }
    if (res == RF_RUN_DONE)
        return true;
    if (res == RF_RUN_FAILED || k->op != RF_K_FUSED) {
        if (res != RF_RUN_FAILED)
            rf_fail(st, RF_EXIT_RUNTIME_ERROR, "backend %s: %s kernel not run", r->be->name, rf_kop_name(k->op));
        rf_status_locate(st, k->origin.where, k->origin.what ? k->origin.what : k->comment);
        return false;
    }
    return run_members(r, k, s, st);
}

/* FUSED kernel k as its members, one by one, exactly as unfused. */
static bool run_members(rt *r, const rf_kernel *k, rf_kernel_stats *s, rf_status *st)
{
    const rf_fused *f = k->fused;
    bool ok = true;
    r->info.fused_run_as_members++;
    for (int m = 0; ok && m < f->nmembers; m++) {
        rf_kernel_stats ms;
        memset(&ms, 0, sizeof ms);
        ok = run_compute(r, &f->members[m], &ms, st);
        if (m == 0) {
            s->rows_in[0] = ms.rows_in[0];
            s->rows_in[1] = ms.rows_in[1];
        }
        s->seconds += ms.seconds;
        s->bytes_moved += ms.bytes_moved;
        s->rows_out = ms.rows_out;
        /* Internal variables die with their last reader. */
        for (int e = 0; e < f->nedges; e++) {
            bool last = f->edges[e].to == m;
            for (int x = 0; x < f->nedges; x++)
                last = last && !(f->edges[x].var == f->edges[e].var && f->edges[x].to > m);
            if (last)
                free_var(r, f->edges[e].var);
        }
    }
    for (int e = 0; e < f->nedges; e++)   /* after an error */
        free_var(r, f->edges[e].var);
    return ok;
}

/* ---- Out-of-core kernels (ooc.h) ----
 * A kernel that ran out of memory with every other variable spilled runs
 * in parts: the variables that bound its first output column (ooc.h) are
 * cut into key ranges in host memory, and for each range, in increasing
 * order, the runtime uploads their rows, runs the kernel as usual (its
 * other inputs whole), and appends what it made to the output, which is
 * left in host memory (spilled) for its readers. A part that runs out of
 * memory too is cut in two, down to a single key value. A kernel that
 * needed parts starts in parts the next time (in as many as its inputs'
 * growth calls for), without trying whole first. */
static struct ooc_hint *ooc_hint_of(rt *r, const rf_kernel *k)
{
    for (int i = 0; i < r->nooc_hints; i++)
        if (r->ooc_hints[i].k == k)
            return &r->ooc_hints[i];
    return NULL;
}

/* Parts a kernel starts in: as many as last time, scaled by the rows of
 * its largest bounded input since (1: try whole). */
static size_t ooc_start_parts(rt *r, const rf_kernel *k, size_t rows)
{
    if (r->ooc_force)
        return (size_t)r->ooc_force;
    struct ooc_hint *h = ooc_hint_of(r, k);
    if (!h || !h->rows)
        return 1;
    double n = (double)h->parts * (double)rows / (double)h->rows;
    return n <= 1.0 ? 1 : n >= 4096.0 ? 4096 : (size_t)(n + 0.999);
}

static void ooc_remember(rt *r, const rf_kernel *k, size_t parts, size_t rows)
{
    struct ooc_hint *h = ooc_hint_of(r, k);
    if (!h) {
        r->ooc_hints = rf_realloc(r->ooc_hints, (size_t)(r->nooc_hints + 1) * sizeof *r->ooc_hints);
        h = &r->ooc_hints[r->nooc_hints++];
        h->k = k;
    }
    h->parts = parts;
    h->rows = rows;
}

/* --device-memory: the parts a kernel should run in so that each part's
 * bounded inputs and output (bytes, as rows x columns x 8) fit the limit
 * beside its whole inputs (whole: their bytes). 1: whole. */
static size_t parts_for_limit(rt *r, double own, double whole)
{
    double room = (double)r->mem_limit - whole;
    if (room < (double)r->mem_limit / 4)
        room = (double)r->mem_limit / 4;
    double n = own / room;
    return n <= 1.0 ? 1 : n >= 4096.0 ? 4096 : (size_t)n + 1;
}

static double var_bytes_of(rt *r, int v)
{
    return v < 0 ? 0.0 : (double)var_rows_of(r, v) * (double)r->p->vars[v].arity * 8.0;
}

/* Appends v's rows to t, the output of a kernel run in parts: straight
 * into their place where the backend can (download_at), else through a
 * table of their own. t's capacity doubles as it fills (its large
 * columns are remapped by realloc, not copied). (Before, each part's
 * output was downloaded into a table of its own and all were copied into
 * one at the end: two passes over host memory, each faulting in fresh
 * pages.) */
/* Waits for the part outputs still crossing (download_at_ahead) and for
 * uploads ahead, whose host rows may then be freed. st keeps an earlier
 * failure; false if this one fails. */
static bool moves_wait(rt *r, rf_status *st)
{
    if (!r->be->moves_wait)
        return true;
    r->downloads_ahead = 0;
    rf_status mine;
    rf_status_init(&mine);
    double t0 = rf_now();
    bool ok = r->be->moves_wait(r->be, &mine);
    r->move_seconds += rf_now() - t0;
    if (!ok && !st->code)
        *st = mine;
    return ok;
}

static bool append_download(rt *r, const rf_dvar *d, rf_table *t, rf_status *st)
{
    size_t most = r->be->var_rows(r->be, d), rows = 0;
    if (!most)
        return true;
    if (t->cap < t->nrows + most && r->downloads_ahead && !moves_wait(r, st))   /* (t moves as it grows) */
        return false;
    rf_table_reserve(t, t->nrows + most);
    bool ok;
    if (r->be->download_at_ahead && !r->ooc_copy_parts) {
        ok = r->be->download_at_ahead(r->be, d, t, t->nrows, &rows, st);
        r->downloads_ahead++;
    } else if (r->be->download_at && !r->ooc_copy_parts)
        ok = r->be->download_at(r->be, d, t, t->nrows, &rows, st);
    else
        ok = rf_download_copy_at(r->be, d, t, t->nrows, &rows, st);
    t->nrows += rows;
    r->part_down_bytes += rows * (size_t)t->arity * sizeof(rf_word);
    return ok;
}

/* The room the doublings left given back (in place: large columns are
 * remapped, pinned ones cut). */
static void table_fit(rf_table *t)
{
    if (t->nrows && t->cap > t->nrows + t->nrows / 4)
        rf_table_shrink(t, t->nrows);
}

/* One part: a key range and each bounded input position's rows in it. */
typedef struct ooc_part {
    rf_ooc_range range;
    rf_table rows[RF_KERNEL_VARS_MAX];
    bool views[RF_KERNEL_VARS_MAX];   /* rows[i] is a view into a table not its own */
} ooc_part;

static bool bounded_pos(const rf_ooc_split *sp, int i) { return sp->var[i] >= 0 && sp->col[i] >= 0; }

static void ooc_part_free(ooc_part *pt, const rf_ooc_split *sp)
{
    for (int i = 0; i < sp->npos; i++)
        if (bounded_pos(sp, i))
            rf_ooc_parts_free(&pt->rows[i], 1, pt->views[i]);
}

/* Cuts each bounded position's rows of whole[i] (the whole tables, or a
 * part's) into n parts by ranges. */
static void ooc_cut(rt *r, const rf_ooc_split *sp, rf_table *const *whole, const rf_ooc_range *ranges, int n,
                    ooc_part *parts)
{
    double t0 = rf_now();
    rf_table *cut = rf_calloc((size_t)n, sizeof *cut);
    for (int i = 0; i < sp->npos; i++) {
        if (!bounded_pos(sp, i))
            continue;
        bool views;
        rf_ooc_cut(whole[i], sp->col[i], r->p->vars[sp->var[i]].sorted, ranges, n, pool_now(r), cut,
                   &views);
        for (int j = 0; j < n; j++) {
            parts[j].rows[i] = cut[j];
            parts[j].views[i] = views;
        }
    }
    for (int j = 0; j < n; j++)
        parts[j].range = ranges[j];
    free(cut);
    r->cut_seconds += rf_now() - t0;
}

/* Sets st's message to its own plus a note. */
static void add_note(rf_status *st, const char *note)
{
    size_t n = strlen(st->message);
    snprintf(st->message + n, sizeof st->message - n, " (%s)", note);
}

/* v's rows t in a new backend variable: ahead, where the backend can, for
 * a part uploaded while the one before runs. */
static rf_dvar *upload_new(rt *r, int v, const rf_table *t, bool ahead, rf_status *st)
{
    rf_dvar *d = r->be->var_new(r->be, r->p->vars[v].arity, st);
    if (d && r->be->var_describe)
        r->be->var_describe(r->be, d, &r->p->vars[v]);
    double t0 = rf_now();
    bool ok = d && (ahead && r->be->upload_ahead ? r->be->upload_ahead(r->be, d, t, st) : r->be->upload(r->be, d, t, st));
    r->move_seconds += rf_now() - t0;
    if (ok)
        r->part_up_bytes += t->nrows * (size_t)t->arity * sizeof(rf_word);
    if (d && !ok) {
        r->be->var_free(r->be, d);
        d = NULL;
    }
    return d;
}

static void free_handles(rt *r, rf_dvar **h, int n)
{
    for (int i = 0; i < n; i++)
        if (h[i]) {
            r->be->var_free(r->be, h[i]);
            h[i] = NULL;
        }
}

static bool run_parts(rt *r, const rf_kernel *k, size_t nparts, rf_kernel_stats *s, rf_status *st);

/* The semi-naive step after a DIFF d := n - f that runs in parts, as the
 * lowering writes it (queryplan/seminaive): `b := COPY d` (freeing d),
 * then `c := UNION f, b`. Both read f, and the UNION reads the DIFF's
 * output, in the same key ranges, so the two run together part by part:
 * f's part crosses to the device once, not twice, and d's part not at all
 * (docs/distributed.md). Returns the UNION, and in u a copy of it that
 * reads d where it reads b; NULL where the step is not of this shape or
 * its kernels do not split alike (every input by its first column). */
static const rf_kernel *union_after_diff(rt *r, const rf_kernel *k, const rf_ooc_split *sp, const rf_kernel **u)
{
    const rf_hblock *blk = &r->p->blocks[r->block];
    if (k->op != RF_K_DIFF || r->kernel_at + 2 >= blk->nkernels || &blk->kernels[r->kernel_at] != k ||
        getenv("RF_OOC_UNION_APART"))
        return NULL;
    const rf_kernel *cp = &blk->kernels[r->kernel_at + 1], *un = &blk->kernels[r->kernel_at + 2];
    int d = k->out, n = k->in[0], f = k->in[1], b = cp->out;
    if (cp->op != RF_K_COPY || cp->in[0] != d || !kernel_frees(cp, d) || r->keep[d] || b == f ||
        un->op != RF_K_UNION || !((un->in[0] == f && un->in[1] == b) || (un->in[0] == b && un->in[1] == f)) ||
        un->out == f || un->out == b || un->out == d || un->out == n || n < 0 || f < 0 || n == f)
        return NULL;
    rf_ooc_split su;
    if (sp->npos != 2 || !rf_ooc_split_of(r->p, un, &su, NULL) || su.npos != 2)
        return NULL;
    for (int i = 0; i < 2; i++)
        if (sp->col[i] != 0 || su.col[i] != 0 || sp->var[i] < 0 || su.var[i] < 0)
            return NULL;
    for (int i = 0; i < r->nunion_copies; i++)
        if (r->union_copies[i].un == un) {
            *u = r->union_copies[i].copy;
            return un;
        }
    rf_kernel *c = rf_malloc(sizeof *c);
    *c = *un;
    c->nfree = 0;   /* (the UNION's own frees happen when it is reached) */
    for (int i = 0; i < 2; i++)
        if (c->in[i] == b)
            c->in[i] = d;
    r->union_copies = rf_realloc(r->union_copies, (size_t)(r->nunion_copies + 1) * sizeof *r->union_copies);
    r->union_copies[r->nunion_copies++] = (struct union_copy){un, c};
    *u = c;
    return un;
}

static bool run_in_parts(rt *r, const rf_kernel *k, size_t nparts, rf_kernel_stats *s, rf_status *st)
{
    double t0 = rf_now();
    bool ok = run_parts(r, k, nparts, s, st);
    r->parts_seconds += rf_now() - t0;
    return ok;
}

static bool run_parts(rt *r, const rf_kernel *k, size_t nparts, rf_kernel_stats *s, rf_status *st)
{
    rf_ooc_split sp;
    const char *why = NULL;
    if (!rf_ooc_split_of(r->p, k, &sp, &why)) {
        char note[256];
        snprintf(note, sizeof note, "it cannot run in parts: %s", why ? why : "?");
        add_note(st, note);
        return false;
    }
    rf_status first = *st;   /* the failure that brought it here, if any */
    rf_status_init(st);
    /* Every bounded variable's rows to host memory, held here (full) while
     * parts of them stand in for them. */
    int nv = r->p->nvars;
    rf_table **full = rf_calloc((size_t)nv + 1, sizeof *full);
    bool *owned = rf_calloc((size_t)nv + 1, sizeof *owned);   /* made here: never written, empty */
    rf_table *whole[RF_KERNEL_VARS_MAX] = {0};
    int pivot = -1;
    bool ok = true;
    for (int i = 0; ok && i < sp.npos; i++) {
        int v = sp.var[i];
        if (!bounded_pos(&sp, i))
            continue;
        if (!full[v]) {
            if (r->dv[v] && !(ok = spill_var(r, v, st)))
                break;
            if (r->spilled[v]) {
                full[v] = r->spilled[v];
                r->spilled[v] = NULL;
            } else {
                full[v] = rf_calloc(1, sizeof *full[v]);
                rf_table_init(full[v], r->p->vars[v].arity);
                owned[v] = true;
            }
        }
        whole[i] = full[v];
        if (pivot < 0 || full[v]->nrows > whole[pivot]->nrows)
            pivot = i;
    }
    /* A plain kernel or a MULTIJOIN gets its parts by position (one
     * variable may be bounded at one and whole at another: uploaded whole
     * once, for all parts); a FUSED group's members read by variable. */
    bool by_var = k->op == RF_K_FUSED;
    rf_dvar *over[RF_KERNEL_VARS_MAX] = {0}, *whole_dv[RF_KERNEL_VARS_MAX] = {0};
    const rf_kernel *u = NULL;
    const rf_kernel *un = ok && !by_var ? union_after_diff(r, k, &sp, &u) : NULL;
    int f_pos = un ? (sp.var[0] == k->in[1] ? 0 : 1) : -1;   /* the DIFF's position of f */
    rf_kernel_stats us;
    memset(&us, 0, sizeof us);
    for (int i = 0; ok && !by_var && i < sp.npos; i++)
        if (sp.var[i] >= 0 && !bounded_pos(&sp, i) && full[sp.var[i]])
            ok = (whole_dv[i] = upload_new(r, sp.var[i], full[sp.var[i]], false, st)) != NULL;
    int out = k->out, out2 = un ? un->out : -1;
    for (int o = 0; ok && o < 2; o++) {
        int v = o ? out2 : out;
        if (v < 0)
            continue;
        drop_spilled(r, v);
        if (r->dv[v]) {
            r->be->var_free(r->be, r->dv[v]);
            r->dv[v] = NULL;
        }
    }
    /* Room in the output for as many rows as the inputs hold (a union's,
     * a sort's bound; a difference's is its first input's; a join may need
     * more, and doubles it), the rest given back at the end: in the heap
     * address space only until the parts' rows arrive; in the host pool
     * pinned at once, so the bound is kept tight. Grown by doubling from
     * nothing, columns of up to tens of MB are copied at each step (glibc
     * remaps only larger ones): on the CPU backend, TC p2p-Gnutella09 at
     * 64M lost ~1 s. */
    size_t out_bound = 0, diff_bound = 0;
    for (int i = 0; ok && i < sp.npos; i++) {
        int v = sp.var[i];
        bool first = v >= 0;   /* each variable once: one column of it is at most what the host holds */
        for (int j = 0; first && j < i; j++)
            first = sp.var[j] != v;
        size_t rows = first ? (full[v] ? full[v]->nrows : var_rows_of(r, v)) : 0;
        out_bound += rows;
        if (first && k->op == RF_K_DIFF && v == k->in[0])
            diff_bound = rows;
    }
    /* The parts still to run, in increasing range order. */
    size_t cap = 0, nq = 0, head = 0, pivot_rows = 0;
    bool one_value = false;  /* a part of a single key value ran out of memory */
    ooc_part *q = NULL;
    if (ok) {
        if (nparts > 4096)
            nparts = 4096;
        rf_ooc_range *ranges = rf_malloc((nparts + 3) * sizeof *ranges);
        int n = rf_ooc_ranges(whole[pivot], sp.col[pivot], (rf_ooc_range){0, UINT64_MAX}, (int)nparts, ranges);
        cap = (size_t)n + 16;
        q = rf_calloc(cap, sizeof *q);
        ooc_cut(r, &sp, whole, ranges, n, q);
        nq = (size_t)n;
        free(ranges);
        pivot_rows = whole[pivot]->nrows;
        /* A variable that dies here and was cut into copies is not needed
         * whole again: host memory holds it once, not twice. */
        for (int i = 0; i < sp.npos; i++) {
            int v = sp.var[i];
            bool copies = bounded_pos(&sp, i) && full[v] && !owned[v] && kernel_frees(k, v) && !r->keep[v];
            for (int j = 0; copies && j < sp.npos; j++)
                copies = sp.var[j] != v || !bounded_pos(&sp, j) || !q[0].views[j];
            if (copies) {
                rf_table_free(full[v]);
                free(full[v]);
                full[v] = NULL;
            }
        }
    }
    rf_table *acc = rf_calloc(1, sizeof *acc), *acc2 = NULL;
    rf_table_init(acc, r->p->vars[out].arity);
    void (*reserve)(rf_table *, size_t) = pool_now(r) ? rf_table_reserve_pooled : rf_table_reserve;
    if (ok)
        reserve(acc, k->op == RF_K_DIFF ? diff_bound : out_bound);
    if (un) {   /* the union: f's rows and the difference's */
        acc2 = rf_calloc(1, sizeof *acc2);
        rf_table_init(acc2, r->p->vars[out2].arity);
        if (ok)
            reserve(acc2, out_bound);
    }
    size_t ran = 0;
    double own_bytes = 0, whole_bytes = 0;
    for (int i = 0; i < sp.npos; i++)
        if (!bounded_pos(&sp, i) && sp.var[i] >= 0)
            whole_bytes += var_bytes_of(r, sp.var[i]);
    r->ooc_kernels++;
    /* Double buffering: the next part's inputs, uploaded ahead while this
     * part runs (next_for: the part they are for; SIZE_MAX: none). */
    rf_dvar *next[RF_KERNEL_VARS_MAX] = {0};
    size_t next_for = SIZE_MAX;
    while (ok && head < nq) {
        ooc_part *pt = &q[head];
        for (int i = 0; ok && i < sp.npos; i++) {
            over[i] = whole_dv[i];
            if (bounded_pos(&sp, i) && next_for == head) {
                over[i] = next[i];
                next[i] = NULL;
            } else if (bounded_pos(&sp, i)) {
                ok = (over[i] = upload_new(r, sp.var[i], &pt->rows[i], false, st)) != NULL;
            }
            if (ok && by_var && bounded_pos(&sp, i))
                r->dv[sp.var[i]] = over[i];
        }
        next_for = SIZE_MAX;
        if (ok && r->be->upload_ahead && head + 1 < nq) {   /* the next part's, beside this one's kernels */
            bool all = true;
            rf_status ahead_st;
            rf_status_init(&ahead_st);
            for (int i = 0; all && i < sp.npos; i++)
                if (bounded_pos(&sp, i))
                    all = (next[i] = upload_new(r, sp.var[i], &q[head + 1].rows[i], true, &ahead_st)) != NULL;
            if (all) {
                next_for = head + 1;
                r->parts_ahead++;
            } else {   /* (no room for two parts: it is uploaded when it runs) */
                free_handles(r, next, sp.npos);
            }
        }
        rf_kernel_stats ps;
        memset(&ps, 0, sizeof ps);
        r->in_parts++;
        const rf_kernel *was = r->part_kernel;
        r->part_kernel = by_var ? NULL : k;
        r->part_in = over;
        ok = ok && run_compute(r, k, &ps, st);
        rf_kernel_stats ps2;
        memset(&ps2, 0, sizeof ps2);
        if (ok && un) {   /* c's part := f's part UNION the difference's */
            rf_dvar *over2[RF_KERNEL_VARS_MAX] = {0};
            for (int i = 0; i < 2; i++)
                over2[i] = u->in[i] == out ? r->dv[out] : over[f_pos];
            if (!over2[0] || !over2[1])   /* (ensure_var made the difference's; f's part was uploaded) */
                ok = rf_fail(st, RF_EXIT_RUNTIME_ERROR, "internal error: a union's part has no input");
            r->part_kernel = u;
            r->part_in = over2;
            ok = ok && run_compute(r, u, &ps2, st);
            r->part_in = over;
        }
        r->part_kernel = was;
        r->in_parts--;
        if (ok) {
            for (int i = 0; i < sp.npos; i++)
                if (bounded_pos(&sp, i))
                    own_bytes += (double)pt->rows[i].nrows * (double)pt->rows[i].arity * 8.0;
            own_bytes += var_bytes_of(r, out) + (un ? var_bytes_of(r, out2) : 0.0);
        }
        size_t had = acc->nrows, had2 = acc2 ? acc2->nrows : 0;
        if (ok && r->dv[out]) {
            double t0 = rf_now();
            ok = append_download(r, r->dv[out], acc, st);
            r->move_seconds += rf_now() - t0;
        }
        if (ok && un && r->dv[out2]) {
            double t0 = rf_now();
            ok = append_download(r, r->dv[out2], acc2, st);
            r->move_seconds += rf_now() - t0;
        }
        if (!ok) {   /* the part runs again, cut in two: nothing of it kept */
            acc->nrows = had;
            if (acc2)
                acc2->nrows = had2;
        }
        for (int o = 0; o < 2; o++) {
            int v = o ? out2 : out;
            if (v >= 0 && r->dv[v]) {
                r->be->var_free(r->be, r->dv[v]);
                r->dv[v] = NULL;
            }
        }
        for (int i = 0; i < sp.npos; i++)
            if (bounded_pos(&sp, i)) {
                if (by_var)
                    r->dv[sp.var[i]] = NULL;
                if (over[i])
                    r->be->var_free(r->be, over[i]);
                over[i] = NULL;
            }
        if (ok) {
            ran++;
            s->rows_in[0] += ps.rows_in[0];
            s->rows_in[1] += ps.rows_in[1];
            s->rows_out += ps.rows_out;
            s->seconds += ps.seconds;
            s->bytes_moved += ps.bytes_moved;
            us.rows_in[0] += ps2.rows_in[0];
            us.rows_in[1] += ps2.rows_in[1];
            us.rows_out += ps2.rows_out;
            us.seconds += ps2.seconds;
            us.bytes_moved += ps2.bytes_moved;
            if (!r->be->upload_ahead)   /* (else its host rows go after moves_wait: a copy may still read them) */
                ooc_part_free(pt, &sp);
            head++;
            continue;
        }
        free_handles(r, next, sp.npos);   /* (the queue changes: the next part is uploaded again) */
        next_for = SIZE_MAX;
        if (st->code != RF_EXIT_OUT_OF_MEMORY)
            break;
        /* Too large still: cut the part in two (by its own rows). */
        rf_ooc_range sub[3];
        int n = rf_ooc_ranges(&pt->rows[pivot], sp.col[pivot], pt->range, 2, sub);
        if (n < 2) {
            one_value = true;
            break;
        }
        rf_status_init(st);
        ok = true;
        if (r->be->upload_ahead && !moves_wait(r, st)) {   /* (the part's rows go below: no copy may read them) */
            ok = false;
            break;
        }
        r->ooc_splits++;
        if (nq + (size_t)n > cap) {
            cap = 2 * cap + (size_t)n;
            q = rf_realloc(q, cap * sizeof *q);
            pt = &q[head];
        }
        ooc_part parent = *pt;
        rf_table *from[RF_KERNEL_VARS_MAX];
        for (int i = 0; i < sp.npos; i++)
            from[i] = &parent.rows[i];
        memmove(&q[head + (size_t)n], &q[head + 1], (nq - head - 1) * sizeof *q);
        memset(&q[head], 0, (size_t)n * sizeof *q);
        ooc_cut(r, &sp, from, sub, n, &q[head]);
        /* Views of a view still point into the whole table; copies cut
         * from a copy leave it to be freed. */
        ooc_part_free(&parent, &sp);
        nq += (size_t)n - 1;
    }
    r->part_in = NULL;
    free_handles(r, next, sp.npos);
    if (!moves_wait(r, st))   /* (before the parts' host rows go and the outputs are read) */
        ok = false;
    for (size_t j = r->be->upload_ahead ? 0 : head; j < nq; j++)
        ooc_part_free(&q[j], &sp);
    free(q);
    free_handles(r, whole_dv, sp.npos);
    r->ooc_parts += ran;
    for (int v = 0; v < nv; v++) {
        if (!full[v])
            continue;
        if (owned[v]) {
            rf_table_free(full[v]);
            free(full[v]);
        } else {
            r->spilled[v] = full[v];   /* the inputs stay in host memory */
        }
    }
    free(full);
    free(owned);
    if (!ok) {
        rf_table_free(acc);
        free(acc);
        if (acc2) {
            rf_table_free(acc2);
            free(acc2);
        }
        if (one_value) {
            if (first.code)
                *st = first;
            add_note(st, "nor in parts: the rows of one key value alone do not fit");
        }
        return false;
    }
    table_fit(acc);
    r->spilled[out] = acc;
    touch(r, out);
    size_t want = r->mem_limit ? parts_for_limit(r, own_bytes, whole_bytes) : 0;
    ooc_remember(r, k, want > ran ? want : ran, pivot_rows);
    if (un) {
        table_fit(acc2);
        r->spilled[out2] = acc2;
        touch(r, out2);
        r->union_done = un;
        r->union_stats = us;
        r->unions_with_diff++;
        ooc_remember(r, un, want > ran ? want : ran, pivot_rows);   /* (should it run alone) */
    }
    return true;
}

/* A compute kernel: whole, or in parts where it ran out of memory (the
 * last time, or now with everything else spilled). A COPY of rows in host
 * memory copies them there. */
static bool run_compute(rt *r, const rf_kernel *k, rf_kernel_stats *s, rf_status *st)
{
    if (r->spilled && k->op == RF_K_COPY && k->in[0] >= 0 && k->in[0] != k->out) {
        if (!r->spilled[k->in[0]]) {
            if (run_compute_whole(r, k, s, st))
                return true;
            if (st->code != RF_EXIT_OUT_OF_MEMORY || r->in_parts || !r->dv[k->in[0]])
                return false;
            rf_status_init(st);   /* copy it in host memory instead */
            if (!spill_var(r, k->in[0], st))
                return false;
        }
        if (r->dv[k->out]) {
            r->be->var_free(r->be, r->dv[k->out]);
            r->dv[k->out] = NULL;
        }
        rf_table *t = rf_calloc(1, sizeof *t);
        rf_table_init(t, r->p->vars[k->out].arity);
        rf_table_copy(t, r->spilled[k->in[0]]);
        drop_spilled(r, k->out);
        r->spilled[k->out] = t;
        s->rows_in[0] = s->rows_out = t->nrows;
        touch(r, k->out);
        return true;
    }
    bool splits = r->spilled && !r->in_parts && k->op != RF_K_COPY && k->op != RF_K_CLEAR;
    if (splits && (r->ooc_force || ooc_hint_of(r, k))) {   /* (no walk for kernels never split) */
        rf_ooc_split sp;
        size_t rows = 0;
        if (rf_ooc_split_of(r->p, k, &sp, NULL))
            for (int i = 0; i < sp.npos; i++)
                if (bounded_pos(&sp, i) && var_rows_of(r, sp.var[i]) > rows)
                    rows = var_rows_of(r, sp.var[i]);
        size_t n = rows ? ooc_start_parts(r, k, rows) : 1;
        if (n > 1)
            return run_in_parts(r, k, n, s, st);
    }
    if (run_compute_whole(r, k, s, st)) {
        /* Under --device-memory, a kernel whose own rows exceeded the limit
         * runs in parts from its next run on: when the backend holds more
         * than the limit after it (what its output shares with an input,
         * as a union into a relation held as runs does, is not counted
         * twice there) and its inputs and output, counted as rows, do too. */
        rf_ooc_split sp;
        if (splits && r->mem_limit && r->be->bytes_in_use(r->be) > r->mem_limit &&
            rf_ooc_split_of(r->p, k, &sp, NULL)) {
            double own = var_bytes_of(r, k->out), whole = 0;
            size_t rows = 0;
            for (int i = 0; i < sp.npos; i++) {
                if (bounded_pos(&sp, i)) {
                    own += var_bytes_of(r, sp.var[i]);
                    rows = var_rows_of(r, sp.var[i]) > rows ? var_rows_of(r, sp.var[i]) : rows;
                } else {
                    whole += var_bytes_of(r, sp.var[i]);
                }
            }
            size_t n = parts_for_limit(r, own, whole);
            if (n > 1 && rows)
                ooc_remember(r, k, n, rows);
        }
        return true;
    }
    if (!splits || st->code != RF_EXIT_OUT_OF_MEMORY)
        return false;
    memset(s, 0, sizeof *s);
    rf_ooc_split sp;
    if (k->op == RF_K_FUSED && !rf_ooc_split_of(r->p, k, &sp, NULL)) {
        /* A group that does not split as one: its members may. */
        rf_status_init(st);
        return run_members(r, k, s, st);
    }
    return run_in_parts(r, k, 4, s, st);
}

/* "JOIN t2", "CHECK_KEYS p": a kernel's name in the trace. */
static char *kernel_title(const rt *r, const rf_kernel *k)
{
    int v = k->op == RF_K_CHECK_KEYS ? k->in[0] : k->out;
    return rf_sprintf("%s %s", rf_kop_name(k->op), v >= 0 ? var_label(&r->p->vars[v]) : "?");
}

/* --profile: the kernel's slice on the interpreter's track (wall clock),
 * one on each pool worker that ran pieces of it (from its first piece to
 * its last), and for a GPU backend's kernel one on the GPU stream: its
 * device time, placed to end when the host saw the kernel finish (the
 * backend waits for each kernel's events). */
static void trace_kernel(rt *r, const rf_kernel *k, const rf_kernel_stats *s, double t0, double t1,
                         bool as_members, bool moved)
{
    const rf_hblock *blk = &r->p->blocks[r->block];
    int kernel = (int)(k - blk->kernels);
    char *title = kernel_title(r, k);
    char *label = rf_json_string(blk->label ? blk->label : "");
    int loop = r->loop_of[r->block];
    char iteration[48] = "";
    if (loop >= 0)
        snprintf(iteration, sizeof iteration, "\"iteration\": %zu, ", r->loop_iter[loop]);
    size_t bytes = s->bytes_moved;
    if (k->op == RF_K_LOAD)   /* what was made resident */
        bytes = s->rows_out * (size_t)r->p->vars[k->out].arity * sizeof(rf_word);
    char *args = rf_sprintf("%s\"block\": %d, \"block_label\": %s, \"kernel\": %d, \"rows_in0\": %zu, "
                            "\"rows_in1\": %zu, \"rows_out\": %zu, \"bytes\": %zu, \"backend_seconds\": %.9f%s%s",
                            iteration, r->block, label, kernel, s->rows_in[0], s->rows_in[1], s->rows_out, bytes,
                            s->seconds, as_members ? ", \"ran_as_members\": true" : "",
                            moved ? ", \"moved\": true" : "");
    const char *cat = k->op == RF_K_LOAD ? "load" : "kernel";
    rf_trace_slice(r->trace, RF_TRACK_MAIN, title, cat, t0, t1, rf_strdup(args));
    int n = rf_par_activity_take(r->activity, RF_PAR_ACTIVITY_SLOTS), helped = 0;
    for (int i = 1; i < n; i++)
        helped += r->activity[i].pieces > 0;
    /* This thread's own share is shown only beside the workers' (alone,
     * it is the kernel's slice again). */
    for (int i = helped ? 0 : 1; i < n; i++) {
        const rf_par_activity *a = &r->activity[i];
        if (a->pieces == 0)
            continue;
        char *wargs = rf_sprintf("%s\"pieces\": %d, \"busy_seconds\": %.9f", iteration, a->pieces, a->busy);
        /* slot 0 is this thread: its pieces nest inside the kernel's slice */
        rf_trace_slice(r->trace, i == 0 ? RF_TRACK_MAIN : RF_TRACK_WORKER + i - 1, i == 0 ? "pieces" : title,
                       "cpu", a->first, a->last, wargs);
    }
    if (r->gpu && s->seconds > 0 && k->op != RF_K_LOAD && k->op != RF_K_CHECK_KEYS && !moved) {
        double start = t1 - s->seconds < t0 ? t0 : t1 - s->seconds;
        rf_trace_slice(r->trace, RF_TRACK_GPU, title, "gpu", start, t1, rf_strdup(args));
    }
    free(args);
    free(label);
    free(title);
}

/* A variable's rows for --stats: this process's part (no collective in a
 * distributed run, where a count of all the parts would also wait for
 * every rank's device to finish what it was given). */
static size_t rows_here(rt *r, const rf_dvar *v)
{
    return r->be->var_rows_here ? r->be->var_rows_here(r->be, v) : r->be->var_rows(r->be, v);
}

/* Runs k; next: the kernel after it in its block, or NULL (then the
 * block's test reads conds[0..nconds-1]). */
static bool run_kernel(rt *r, const rf_kernel *k, const rf_kernel *next, const int *conds, int nconds, kstat *ks,
                       rf_status *st)
{
    if (r->trace)   /* forget the pool's work between kernels */
        rf_par_activity_take(r->activity, RF_PAR_ACTIVITY_SLOTS);
    /* Kernel times only for --stats and --profile: two clock reads a
     * kernel are a measurable share of a loop of tiny deltas. */
    bool timed = r->opt->stats || r->trace;
    double t0 = timed || k->op == RF_K_LOAD ? rf_now() : 0.0;
    rf_kernel_stats s;
    memset(&s, 0, sizeof s);
    size_t as_members = r->info.fused_run_as_members, moved = r->info.copies_moved;
    r->info.kernels_run++;
    if (r->union_done && k != r->union_done && k->op != RF_K_COPY)
        r->union_done = NULL;   /* (not reached as planned: run as usual) */
    if (k == r->union_done && r->spilled && r->spilled[k->out]) {   /* run already, with the DIFF before it */
        r->union_done = NULL;
        s = r->union_stats;
        touch(r, k->out);
        goto ran;
    }
    if (k->op == RF_K_CHECK_KEYS) {
        if (!run_check_keys(r, k, &s, st)) {
            rf_status_locate(st, k->origin.where, k->origin.what);
            return false;
        }
    } else if (k->op == RF_K_LOAD) {
        if (!run_load(r, k->out, st))
            return false;
        touch(r, k->out);
        s.rows_out = rows_here(r, r->dv[k->out]);
        if (r->be->inputs_loaded && (!next || next->op != RF_K_LOAD))
            r->be->inputs_loaded(r->be);
    } else if (k->op == RF_K_COPY && k->in[0] != k->out && kernel_frees(k, k->in[0]) &&
               !r->keep[k->in[0]]) {
        /* The source dies here: hand its storage over instead of copying
         * (rows in host memory stay there). */
        drop_spilled(r, k->out);
        touch(r, k->out);
        if (r->spilled && r->spilled[k->in[0]]) {
            if (r->dv[k->out])
                r->be->var_free(r->be, r->dv[k->out]);
            r->dv[k->out] = NULL;
            r->spilled[k->out] = r->spilled[k->in[0]];
            r->spilled[k->in[0]] = NULL;
            s.rows_in[0] = s.rows_out = r->spilled[k->out]->nrows;
            r->info.copies_moved++;
            goto ran;
        }
        if (!r->dv[k->in[0]] && !ensure_var(r, k->in[0], st))
            return false;
        if (r->dv[k->out])
            r->be->var_free(r->be, r->dv[k->out]);
        r->dv[k->out] = r->dv[k->in[0]];
        r->dv[k->in[0]] = NULL;
        s.rows_in[0] = s.rows_out = rows_here(r, r->dv[k->out]);
        r->info.copies_moved++;
    } else if (!run_compute(r, k, &s, st)) {
        return false;
    }
ran:;
    double t1 = timed || k->op == RF_K_LOAD ? rf_now() : 0.0;
    if (r->trace)
        trace_kernel(r, k, &s, t0, t1, r->info.fused_run_as_members > as_members, r->info.copies_moved > moved);
    ks->calls++;
    ks->rows_in[0] += s.rows_in[0];
    ks->rows_in[1] += s.rows_in[1];
    ks->rows_out += s.rows_out;
    ks->seconds += t1 - t0;
    if (k->op == RF_K_LOAD)
        r->load_seconds += t1 - t0;
    ks->be_seconds += s.seconds;
    ks->bytes += s.bytes_moved;
    for (int i = 0; i < k->nfree; i++)
        free_var(r, k->frees[i]);
    if (!r->mem_limit)
        return true;
    int next_reads[RF_KERNEL_VARS_MAX];
    int nnext = next ? rf_kernel_reads(next, next_reads) : 0;
    return keep_under_limit(r, next ? next_reads : conds, next ? nnext : nconds, st);
}

static bool all_empty(rt *r, const rf_hblock *b)
{
    for (int i = 0; i < b->nconds; i++) {
        int v = b->conds[i];
        if (var_rows_of(r, v) > 0)
            return false;
    }
    return true;
}

static void show_progress(rt *r, const rf_hblock *b, int header, bool terminal)
{
    double now = rf_now(), el = now - r->loop_start[header];
    if (el < 1.0 || (!terminal && now - r->progress_last < 1.0))
        return;
    r->progress_last = now;
    fprintf(r->err, "%sredfox: %s: iteration %zu (%.1fs)", terminal ? "\r" : "",
            r->p->blocks[header].label ? r->p->blocks[header].label : "loop", r->loop_iter[header], el);
    for (int i = 0; i < b->nconds; i++) {
        int v = b->conds[i];
        fprintf(r->err, " %s=%zu", r->p->vars[v].name ? r->p->vars[v].name : "?", var_rows_of(r, v));
    }
    fputs(terminal ? "    " : "\n", r->err);
    fflush(r->err);
    r->progress_shown = terminal;
}

static void end_progress(rt *r)
{
    if (r->progress_shown) {
        fputc('\n', r->err);
        r->progress_shown = false;
    }
}

/* --profile: block `tail`'s terminator ended an iteration of the loop
 * headed by `header`, and the loop too unless `next` goes round again. */
static void trace_iteration(rt *r, const rf_hblock *tail, int header, int next)
{
    const rf_hprogram *p = r->p;
    double now = rf_now();
    size_t delta = 0;
    for (int i = 0; i < tail->nconds; i++) {
        int v = tail->conds[i];
        delta += var_rows_of(r, v);
    }
    const char *label = p->blocks[header].label ? p->blocks[header].label : "loop";
    char *label_json = rf_json_string(label);
    char *name = rf_sprintf("%s iteration %zu", label, r->loop_iter[header]);
    rf_trace_slice(r->trace, RF_TRACK_MAIN, name, "iteration", r->iter_start[header], now,
                   rf_sprintf("\"loop\": %s, \"iteration\": %zu, \"delta_rows\": %zu", label_json,
                              r->loop_iter[header], delta));
    free(name);
    if (next != header) {
        name = rf_sprintf("loop %s", label);
        rf_trace_slice(r->trace, RF_TRACK_MAIN, name, "loop", r->loop_start[header], now,
                       rf_sprintf("\"loop\": %s, \"iterations\": %zu", label_json, r->loop_iter[header]));
        free(name);
    }
    free(label_json);
}

/* --join=auto: block b's BRANCH_JOIN picks the multiway join or the
 * binary joins from the sizes of its relations as they are now. Returns
 * the next block, or -2 when the backend failed. */
static int choose_join(rt *r, const rf_hblock *blk, int b, rf_status *st)
{
    const rf_hprogram *p = r->p;
    int l = blk->conds[0], rr = blk->conds[1];
    rf_join_choice jc;
    if (!unspill(r, l, st) || !unspill(r, rr, st) ||
        !rf_join_choose(r->be, blk, r->dv[l], r->dv[rr], p->vars[l].arity, p->vars[rr].arity, &jc, st))
        return -2;
    (jc.wcoj ? r->chose_wcoj : r->chose_binary)[b]++;
    r->last_choice[b] = jc;
    r->choice_seconds[b] += jc.seconds;
    if (r->trace) {
        double now = rf_now();
        char *name = rf_sprintf("join choice %s: %s", blk->label ? blk->label : "?", jc.wcoj ? "wcoj" : "binary");
        rf_trace_slice(r->trace, RF_TRACK_MAIN, name, "join choice", now - jc.seconds, now,
                       rf_sprintf("\"chose\": \"%s\", \"first_join_rows\": %" PRIu64 ", \"input_rows\": %zu, "
                                  "\"largest_intermediate_estimate\": %.6g, \"multiway_inputs_estimate\": %.6g, "
                                  "\"ratio\": %g",
                                  jc.wcoj ? "wcoj" : "binary", jc.first_join, jc.inputs, jc.estimate, jc.budget,
                                  jc.ratio));
        free(name);
    }
    return jc.wcoj ? blk->target : blk->target_else;
}

static bool interpret(rt *r, rf_status *st)
{
    const rf_hprogram *p = r->p;
    bool terminal = isatty(fileno(r->err));
    bool progress = r->opt->progress == RF_PROGRESS_ALWAYS ||
                    (r->opt->progress == RF_PROGRESS_TERMINAL && terminal);
    int b = 0, from = -1;
    while (b >= 0 && b < p->nblocks) {
        const rf_hblock *blk = &p->blocks[b];
        r->entries[b]++;
        if (r->loop_header[b] && !(from >= b)) { /* entered from outside the loop */
            r->loop_start[b] = rf_now();
            r->loop_iter[b] = 0;
        }
        if (r->loop_header[b] && r->trace)
            r->iter_start[b] = rf_now();
        r->block = b;
        if (r->loop_header[b] && ++r->loop_iter[b] > r->opt->max_iterations && r->opt->max_iterations) {
            end_progress(r);
            return rf_fail(st, RF_EXIT_RUNTIME_ERROR,
                           "loop '%s' did not reach a fixpoint within %zu iterations (--max-iterations %zu)",
                           blk->label ? blk->label : "?", r->opt->max_iterations, r->opt->max_iterations);
        }
        for (int i = 0; i < blk->nfree_entry; i++)
            free_var(r, blk->free_entry[i]);
        for (int i = 0; i < blk->nkernels; i++) {
            r->kernel_at = i;
            if (!run_kernel(r, &blk->kernels[i], i + 1 < blk->nkernels ? &blk->kernels[i + 1] : NULL, blk->conds,
                            blk->nconds, &r->ks[b][i], st))
                return false;
        }
        from = b;
        switch (blk->term) {
        case RF_TERM_FALLTHROUGH:
            b = b + 1;
            break;
        case RF_TERM_JUMP:
            b = blk->target;
            break;
        case RF_TERM_BRANCH_EMPTY:
            b = all_empty(r, blk) ? blk->target : blk->target_else;
            if (progress && b <= from && r->loop_header[b])
                show_progress(r, blk, b, terminal);
            else if (b > from)
                end_progress(r);
            break;
        case RF_TERM_HALT:
            b = -1;
            break;
        case RF_TERM_BRANCH_JOIN:
            b = choose_join(r, blk, from, st);
            if (b == -2) {
                end_progress(r);
                return false;
            }
            break;
        }
        if (r->trace && r->closes[from] >= 0)
            trace_iteration(r, blk, r->closes[from], b);
    }
    end_progress(r);
    return true;
}


/* The variable that holds predicate `name` for --print: the output one, else
 * the one named like the predicate, else the first with that predicate. */
static int find_pred_var(const rf_hprogram *p, const char *name)
{
    int first = -1, named = -1;
    for (int v = 0; v < p->nvars; v++) {
        if (!p->vars[v].pred || strcmp(p->vars[v].pred, name) != 0)
            continue;
        if (p->vars[v].is_output)
            return v;
        if (named < 0 && p->vars[v].name && strcmp(p->vars[v].name, name) == 0)
            named = v;
        if (first < 0)
            first = v;
    }
    return named >= 0 ? named : first;
}

/* mkdir -p DIR. *created is set to the outermost folder this made (NULL
 * when DIR existed), so that a failed run can remove what it made. */
static bool make_dir(const char *dir, char **created, rf_status *st)
{
    *created = NULL;
    struct stat sb;
    if (stat(dir, &sb) == 0) {
        if (S_ISDIR(sb.st_mode))
            return true;
        return rf_fail(st, RF_EXIT_RUNTIME_ERROR, "output '%s' is not a directory", dir);
    }
    char *d = rf_strdup(dir);
    size_t n = strlen(d);
    for (size_t i = 1; i <= n; i++) {
        if (d[i] != '/' && d[i] != '\0')
            continue;
        char c = d[i];
        d[i] = '\0';
        if (mkdir(d, 0777) == 0) {
            if (!*created)
                *created = rf_strdup(d);
        } else if (errno != EEXIST) {
            rf_fail(st, RF_EXIT_RUNTIME_ERROR, "cannot create directory '%s': %s", d, strerror(errno));
            d[i] = c;
            free(d);
            return false;
        }
        d[i] = c;
    }
    free(d);
    return true;
}

/* Undoes make_dir: removes dir and its parents up to `created` (each only
 * if empty, which they are: nothing was written). */
static void unmake_dir(const char *dir, const char *created)
{
    if (!created)
        return;
    char *d = rf_strdup(dir);
    size_t stop = strlen(created);
    for (;;) {
        rmdir(d);
        char *slash = strrchr(d, '/');
        if (strlen(d) <= stop || !slash)
            break;
        *slash = '\0';
    }
    free(d);
}

/* A sorted variable is already in typed order when every column is of a
 * signed-word type (ints, dates, decimals) and its values all share the sign bit (so the signed and
 * unsigned orders of that column agree): typical of node ids, and it saves
 * re-sorting tens of millions of output rows. */
static bool typed_order_is_word_order(const rf_table *t, const rf_hvar *hv)
{
    if (!hv->sorted)
        return false;
    for (int c = 0; c < t->arity; c++) {
        if (!rf_type_is_signed_word(hv->types[c]))
            return false;
        const rf_word *col = t->cols[c];
        rf_word any = 0, all = ~(rf_word)0;
        for (size_t i = 0; i < t->nrows; i++) {
            any |= col[i];
            all &= col[i];
        }
        const rf_word sign = (rf_word)1 << 63;
        if (t->nrows && (any & sign) && !(all & sign))
            return false;
    }
    return true;
}

/* The same answer from the backend when it can tell without a host scan
 * (the GPU backend reduces on the device). */
static bool backend_says_word_order(rt *r, int v, const rf_hvar *hv)
{
    if (!hv->sorted || !r->be->column_sign_uniform || !r->dv[v])
        return false;
    for (int c = 0; c < hv->arity; c++)
        if (!rf_type_is_signed_word(hv->types[c]) ||
            !r->be->column_sign_uniform(r->be, r->dv[v], c))
            return false;
    return true;
}

/* @order: rows compared on the order columns (descending where asked),
 * then on the other columns ascending, all in typed order. */
typedef struct row_order {
    const rf_table *t;
    const rf_type *types;
    int ncols;
    int *cols;
    bool *desc;
    rf_word **rank;   /* [column]: a string column's rows as the ranks of their texts (else NULL;
                         rank_strings) */
} row_order;

static int row_order_cmp(const row_order *o, size_t a, size_t b)
{
    for (int k = 0; k < o->ncols; k++) {
        int c = o->cols[k];
        rf_word x = o->t->cols[c][a], y = o->t->cols[c][b];
        if (x == y)   /* words are canonical: equal words, equal values */
            continue;
        int r;
        if (o->rank[c])
            r = o->rank[c][a] < o->rank[c][b] ? -1 : 1;
        else
            r = rf_value_compare(o->types[c], x, y);
        if (r)
            return o->desc[k] ? -r : r;
    }
    return 0;
}

/* Merge sort of idx[0..n) by o (tmp: n more entries); returns the array
 * holding the result (idx or tmp). */
static size_t *sort_indices(const row_order *o, size_t *idx, size_t *tmp, size_t n)
{
    for (size_t w = 1; w < n; w *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * w) {
            size_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            size_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi)
                tmp[k++] = row_order_cmp(o, idx[j], idx[i]) < 0 ? idx[j++] : idx[i++];
            while (i < mid)
                tmp[k++] = idx[i++];
            while (j < hi)
                tmp[k++] = idx[j++];
        }
        size_t *s = idx;
        idx = tmp;
        tmp = s;
    }
    return idx;
}

/* o->rank[c] for every string column c, where each holds few distinct
 * strings (at most a quarter of the rows: q16's brands and types): ranking
 * d strings costs d log d text compares, which then saves the n log n of
 * the row sort. False, none made, where a column holds more: ranking
 * them could cost more than the compares the row sort would make, most of
 * which an earlier column decides. */
static bool rank_strings(row_order *o, size_t n)
{
    for (int c = 0; c < o->t->arity; c++) {
        if (o->types[c] != RF_TYPE_STRING || n < 2)
            continue;
        rf_str_ranks sr;
        const rf_word *one[1] = {o->t->cols[c]};
        bool few = rf_str_ranks_make(&sr, one, 1, n, n / 4);
        if (few) {
            o->rank[c] = rf_malloc(rf_mul_size(n, sizeof(rf_word)));
            for (size_t i = 0; i < n; i++)
                o->rank[c][i] = rf_str_ranks_of(&sr, o->t->cols[c][i]);
            rf_str_ranks_free(&sr);
        }
        if (!few) {
            for (int k = 0; k < c; k++) {
                free(o->rank[k]);
                o->rank[k] = NULL;
            }
            return false;
        }
    }
    return true;
}

/* idx[0..m) := t's distinct rows in o's order; returns m. One radix sort
 * (the primitive sort) of the columns as words whose unsigned order is o's:
 * signs flipped, doubles by the IEEE trick, strings as ranks, descending
 * columns complemented; the row's place last. A merge sort comparing typed
 * values took 8 ms for q16's 27,840 rows on the device's host. Needs
 * o->rank for every string column (rank_strings). */
static size_t whole_order(const row_order *o, size_t n, size_t *idx)
{
    const rf_word sign = (rf_word)1 << 63;
    rf_table k;
    rf_table_init(&k, o->ncols + 1);
    rf_table_resize(&k, n);
    for (int j = 0; j < o->ncols; j++) {
        int c = o->cols[j];
        const rf_word *col = o->rank[c] ? o->rank[c] : o->t->cols[c];
        rf_word *key = k.cols[j], flip = o->desc[j] ? ~(rf_word)0 : 0;
        rf_type ty = o->types[c];
        for (size_t i = 0; i < n; i++) {
            rf_word w = col[i];
            if (rf_type_is_signed_word(ty))
                w ^= sign;
            else if (ty == RF_TYPE_FLOAT64)
                w = (w & sign) ? ~w : (w | sign);
            key[i] = w ^ flip;
        }
    }
    for (size_t i = 0; i < n; i++)
        k.cols[o->ncols][i] = i;
    rf_prim_sort_unique(&k);
    size_t m = 0;
    for (size_t i = 0; i < k.nrows; i++) {   /* equal rows differ in their place alone: keep the first */
        bool same = m > 0;
        for (int j = 0; j < o->ncols && same; j++)
            same = k.cols[j][i] == k.cols[j][i - 1];
        if (!same)
            idx[m++] = k.cols[o->ncols][i];
    }
    rf_table_free(&k);
    return m;
}

/* The `limit` first rows of t in o's order, into idx[0..limit) (a max-heap
 * of the best rows so far: n log(limit) compares, not n log n). */
static void first_rows(const row_order *o, size_t n, size_t limit, size_t *idx)
{
    size_t h = 0;
    for (size_t i = 0; i < n; i++) {
        if (h < limit) {   /* push, sift up */
            size_t k = h++;
            idx[k] = i;
            while (k > 0 && row_order_cmp(o, idx[(k - 1) / 2], idx[k]) < 0) {
                size_t p = (k - 1) / 2, x = idx[p];
                idx[p] = idx[k];
                idx[k] = x;
                k = p;
            }
        } else if (row_order_cmp(o, i, idx[0]) < 0) {   /* replace the worst, sift down */
            idx[0] = i;
            for (size_t k = 0;;) {
                size_t l = 2 * k + 1, r = l + 1, m = k;
                if (l < h && row_order_cmp(o, idx[l], idx[m]) > 0)
                    m = l;
                if (r < h && row_order_cmp(o, idx[r], idx[m]) > 0)
                    m = r;
                if (m == k)
                    break;
                size_t x = idx[m];
                idx[m] = idx[k];
                idx[k] = x;
                k = m;
            }
        }
    }
}

/* Sorts t's rows by @order (hv->order_cols / order_desc), dropping
 * duplicate rows: a merge sort of row indices, then the columns gathered.
 * With a @limit well below the rows, only the first rows are selected and
 * sorted (the rows of a relation are distinct, so they are the first rows
 * of the whole order; if duplicates showed up, the whole sort runs). */
static void order_rows(rf_table *t, const rf_hvar *hv)
{
    size_t n = t->nrows;
    int ar = t->arity;
    row_order o = { t, hv->types, 0, rf_malloc(((size_t)ar + 1) * sizeof(int)),
                    rf_calloc((size_t)ar + 1, sizeof(bool)), rf_calloc((size_t)ar + 1, sizeof(rf_word *)) };
    bool *named = rf_calloc((size_t)ar + 1, sizeof *named);
    for (int k = 0; k < hv->norder; k++) {
        o.cols[o.ncols] = hv->order_cols[k];
        o.desc[o.ncols++] = hv->order_desc[k];
        named[hv->order_cols[k]] = true;
    }
    for (int c = 0; c < ar; c++)
        if (!named[c])
            o.cols[o.ncols++] = c;
    size_t *idx = rf_malloc(rf_mul_size(n + 1, sizeof *idx));
    size_t *tmp = rf_malloc(rf_mul_size(n + 1, sizeof *tmp));
    size_t m = 0, sorted = n;
    if (hv->limit > 0 && (size_t)hv->limit < n / 8) {
        sorted = (size_t)hv->limit;
        first_rows(&o, n, sorted, idx);
        size_t *res = sort_indices(&o, idx, tmp, sorted);
        for (size_t i = 0; i < sorted; i++)
            if (m == 0 || row_order_cmp(&o, res[m - 1], res[i]) != 0)
                res[m++] = res[i];
        if (res != idx)
            memcpy(idx, res, m * sizeof *idx);
        if (m < sorted)
            sorted = n, m = 0;   /* duplicates: the whole order below */
    }
    if (sorted == n && rank_strings(&o, n))
        m = whole_order(&o, n, idx);
    else if (sorted == n) {   /* many distinct strings: compared as texts where rows tie before them */
        for (size_t i = 0; i < n; i++)
            idx[i] = i;
        size_t *res = sort_indices(&o, idx, tmp, n);
        if (res != idx) {
            tmp = idx;
            idx = res;
        }
        for (size_t i = 0; i < n; i++)   /* distinct rows, in order */
            if (m == 0 || row_order_cmp(&o, idx[m - 1], idx[i]) != 0)
                idx[m++] = idx[i];
    }
    rf_word *col = rf_malloc(rf_mul_size(m + 1, sizeof *col));
    for (int c = 0; c < ar && m > 0; c++) {   /* (an empty table may have no storage) */
        for (size_t i = 0; i < m; i++)
            col[i] = t->cols[c][idx[i]];
        memcpy(t->cols[c], col, m * sizeof *col);
    }
    t->nrows = m;
    free(col);
    free(idx);
    free(tmp);
    free(named);
    for (int c = 0; c < ar; c++)
        free(o.rank[c]);
    free(o.rank);
    free(o.cols);
    free(o.desc);
}

/* Typed order (or @order's), then @limit: the rows an output shows. */
static void output_rows(rt *r, int v, rf_table *t, const rf_hvar *hv)
{
    if (hv->norder > 0)
        order_rows(t, hv);
    else if (!backend_says_word_order(r, v, hv) && !typed_order_is_word_order(t, hv))
        rf_sort_typed(t, hv->types);
    if (hv->limit >= 0 && t->nrows > (size_t)hv->limit)
        t->nrows = (size_t)hv->limit;
}

/* --count's fingerprint of an answer: a 64-bit hash of its rows in output
 * order, strings by their text (dictionary ids differ between processes),
 * other values by their word. Two runs print the same hash exactly when
 * they would have written the same file (barring collisions), so the
 * benchmarks compare backends on answers of billions of bytes without
 * writing them. Up to HASH_BLOCK_ROWS rows the hash is one chain over the
 * rows' words; a larger answer is cut into blocks of that many rows, each
 * hashed as such a chain on a thread of its own, and its hash is a chain
 * over its row count and the blocks' hashes in order. (One chain over the
 * 884M rows of TC on p2p-Gnutella31 took 7 s, three times the query.) */
#define HASH_BLOCK_ROWS ((size_t)1 << 16)
#define HASH_SEED 0x243f6a8885a308d3ull

static uint64_t mix64(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    h *= 0xbf58476d1ce4e5b9ull;
    return h ^ (h >> 31);
}

static uint64_t rows_hash(const rf_table *t, const rf_type *types, size_t from, size_t to)
{
    uint64_t h = HASH_SEED ^ (uint64_t)t->arity;
    for (size_t i = from; i < to; i++)
        for (int c = 0; c < t->arity; c++) {
            rf_word w = t->cols[c][i];
            if (types[c] == RF_TYPE_STRING) {
                const unsigned char *sv = (const unsigned char *)rf_str_get(w);
                size_t n = rf_str_len(w);
                uint64_t sh = 0xcbf29ce484222325ull;
                for (size_t k = 0; k < n; k++)
                    sh = (sh ^ sv[k]) * 0x100000001b3ull;
                w = sh ^ n;
            }
            h = mix64(h, w);
        }
    return h;
}

typedef struct hash_job {
    const rf_table *t;
    const rf_type *types;
    size_t nblocks, blocks_per_piece;
    uint64_t *block_hash;
} hash_job;

static void hash_piece(void *ctx, int piece)
{
    hash_job *j = ctx;
    size_t b0 = (size_t)piece * j->blocks_per_piece;
    for (size_t b = b0; b < b0 + j->blocks_per_piece && b < j->nblocks; b++) {
        size_t to = (b + 1) * HASH_BLOCK_ROWS;
        j->block_hash[b] = rows_hash(j->t, j->types, b * HASH_BLOCK_ROWS, to < j->t->nrows ? to : j->t->nrows);
    }
}

static uint64_t answer_hash(const rf_table *t, const rf_type *types)
{
    if (t->nrows <= HASH_BLOCK_ROWS)
        return rows_hash(t, types, 0, t->nrows);
    hash_job j = {.t = t, .types = types, .nblocks = (t->nrows + HASH_BLOCK_ROWS - 1) / HASH_BLOCK_ROWS};
    j.block_hash = rf_malloc(j.nblocks * sizeof *j.block_hash);
    size_t pieces = (size_t)rf_prims_threads() * 4;
    if (pieces > j.nblocks)
        pieces = j.nblocks;
    j.blocks_per_piece = (j.nblocks + pieces - 1) / pieces;
    rf_par_for((int)((j.nblocks + j.blocks_per_piece - 1) / j.blocks_per_piece), hash_piece, &j);
    uint64_t h = mix64(HASH_SEED ^ (uint64_t)t->arity, (uint64_t)t->nrows);
    for (size_t b = 0; b < j.nblocks; b++)
        h = mix64(h, j.block_hash[b]);
    free(j.block_hash);
    return h;
}

/* answer_hash of output v computed by the backend where its rows are
 * (backend.h, block_hashes), when it can and they would need no host
 * work first: no @order or @limit, no strings, typed order = word order.
 * False with st clear: the caller downloads and hashes. */
static bool hash_in_backend(rt *r, int v, const rf_hvar *hv, size_t *nrows, uint64_t *hash, rf_status *st)
{
    if (!r->be->block_hashes || !r->dv[v] || (r->spilled && r->spilled[v]) || hv->norder > 0 || hv->limit >= 0 ||
        hv->arity < 1 || !backend_says_word_order(r, v, hv))
        return false;
    uint64_t *blocks = NULL;
    if (!r->be->block_hashes(r->be, r->dv[v], HASH_BLOCK_ROWS, HASH_SEED ^ (uint64_t)hv->arity, &blocks, nrows,
                             st))
        return false;
    size_t nblocks = (*nrows + HASH_BLOCK_ROWS - 1) / HASH_BLOCK_ROWS;
    if (*nrows <= HASH_BLOCK_ROWS) {
        *hash = nblocks ? blocks[0] : HASH_SEED ^ (uint64_t)hv->arity;
    } else {
        *hash = mix64(HASH_SEED ^ (uint64_t)hv->arity, (uint64_t)*nrows);
        for (size_t b = 0; b < nblocks; b++)
            *hash = mix64(*hash, blocks[b]);
    }
    free(blocks);
    return true;
}

/* An answer's string values must be ids the dictionary has. One that is
 * not is a backend's bug (a device copy that overtook the kernels before
 * it wrote rank words into a relation, the thirty-third session), and it
 * would print as empty text and hash as a wrong answer: it fails the run
 * instead. One pass over the string columns, next to formatting them. */
static bool check_string_ids(rt *r, int v, const rf_table *t, rf_status *st)
{
    const rf_hvar *hv = &r->p->vars[v];
    size_t nstr = rf_str_count();
    for (int c = 0; c < t->arity && c < hv->arity; c++) {
        if (hv->types[c] != RF_TYPE_STRING)
            continue;
        const rf_word *col = t->cols[c];
        for (size_t i = 0; i < t->nrows; i++)
            if (col[i] >= nstr)
                return rf_fail(st, RF_EXIT_RUNTIME_ERROR,
                               "internal error: '%s' came back from the %s backend with string id %llu in row %zu, "
                               "column %d, which no string has (%zu strings): a bug, please report it",
                               var_label(hv), r->be->name, (unsigned long long)col[i], i, c + 1, nstr);
    }
    return true;
}

/* An output's rows into t (initialised with its arity): downloaded, or
 * from host memory where --device-memory spilled it: taken over where
 * nothing reads it after (take), else copied (two sinks may write one
 * predicate). (A copy of TC's 21M rows on p2p-Gnutella09 into fresh pages
 * was most of a 64M out-of-core run's 0.3 s of output.) */
static bool fetch_output(rt *r, int v, rf_table *t, bool take, rf_status *st)
{
    if (r->spilled && r->spilled[v] && take) {
        rf_table_move(t, r->spilled[v]);
        drop_spilled(r, v);
        return check_string_ids(r, v, t, st);
    }
    if (r->spilled && r->spilled[v]) {
        rf_table_copy(t, r->spilled[v]);
        return check_string_ids(r, v, t, st);
    }
    return !r->dv[v] || (r->be->download(r->be, r->dv[v], t, st) && check_string_ids(r, v, t, st));
}

/* Writes the outputs. With --output DIR, whole or not at all: every file
 * is opened (each path validated: a directory in the way fails here,
 * before anything is written), then written, then all are committed
 * together; on failure no file is changed and a DIR this run created is
 * removed again. */
static bool write_outputs(rt *r, const int *outs, int nouts, rf_status *st)
{
    const rf_hprogram *p = r->p;
    const char *dir = r->opt->output_dir;
    rf_outfile *files = rf_calloc((size_t)nouts + 1, sizeof *files);
    char *created = NULL;
    bool ok = !dir || make_dir(dir, &created, st);
    int opened = 0;
    int parts = r->opt->output_parts;
    for (int i = 0; parts > 0 && ok && i < nouts; i++)
        if (p->vars[outs[i]].limit >= 0)
            ok = rf_fail(st, RF_EXIT_USAGE, "output '%s' has a @limit, which needs all of its rows in one place: "
                                            "it cannot be written per rank", var_label(&p->vars[outs[i]]));
    for (; dir && ok && opened < nouts; opened++) {
        char *path = parts > 0 ? rf_sprintf("%s/%s.part-%d-of-%d.tsv", dir, var_label(&p->vars[outs[opened]]),
                                            r->opt->output_part + 1, parts)
                               : rf_sprintf("%s/%s.tsv", dir, var_label(&p->vars[outs[opened]]));
        ok = rf_outfile_open(&files[opened], path, st);
        free(path);
        if (!ok)
            break;
    }
    for (int i = 0; i < nouts && ok; i++) {
        const rf_hvar *hv = &p->vars[outs[i]];
        double d0 = rf_now();
        if (!dir && r->opt->count_only) {   /* hashed where the rows are, if the backend can */
            size_t nrows = 0;
            uint64_t hash = 0;
            if (hash_in_backend(r, outs[i], hv, &nrows, &hash, st)) {
                fprintf(r->out, "# %s (%zu tuples, hash %016" PRIx64 ")\n", var_label(hv), nrows, hash);
                r->write_seconds += rf_now() - d0;
                continue;
            }
            if (st->code) {
                ok = false;
                break;
            }
        }
        rf_table t;
        rf_table_init(&t, hv->arity);
        ok = fetch_output(r, outs[i], &t, true, st);   /* (outs holds each variable once) */
        if (r->trace) {
            char *name = rf_sprintf("download %s", var_label(hv));
            rf_trace_slice(r->trace, RF_TRACK_MAIN, name, "download", d0, rf_now(),
                           rf_sprintf("\"rows\": %zu, \"bytes\": %zu", t.nrows,
                                      t.nrows * (size_t)hv->arity * sizeof(rf_word)));
            free(name);
        }
        if (ok) {
            output_rows(r, outs[i], &t, hv);
            double w0 = rf_now();
            if (dir) {
                if (!rf_write_tsv(files[i].f, &t, hv->types))
                    ok = rf_fail(st, RF_EXIT_RUNTIME_ERROR, "cannot write '%s': %s", files[i].path,
                                 strerror(errno));
            } else if (r->opt->count_only) {
                fprintf(r->out, "# %s (%zu tuples, hash %016" PRIx64 ")\n", var_label(hv), t.nrows,
                        answer_hash(&t, hv->types));
            } else {
                fprintf(r->out, "# %s (%zu tuples)\n", var_label(hv), t.nrows);
                if (!rf_write_tsv(r->out, &t, hv->types))
                    ok = rf_fail(st, RF_EXIT_RUNTIME_ERROR, "cannot write the output: %s", strerror(errno));
            }
            r->write_seconds += rf_now() - w0;
            if (r->trace) {
                char *name = rf_sprintf("write %s", var_label(hv));
                rf_trace_slice(r->trace, RF_TRACK_MAIN, name, "output", w0, rf_now(),
                               rf_sprintf("\"rows\": %zu", t.nrows));
                free(name);
            }
        }
        rf_table_free(&t);
    }
    const char *fail_part = getenv("RF_TEST_PART_FAIL");   /* tests: this part (1..N) fails to write */
    if (dir && ok && parts > 0 && fail_part && atoi(fail_part) == r->opt->output_part + 1)
        ok = rf_fail(st, RF_EXIT_RUNTIME_ERROR, "cannot write part %d (RF_TEST_PART_FAIL)", r->opt->output_part + 1);
    bool parts_dropped = false;   /* (every rank alike) */
    if (dir && parts > 0 && r->be->agree) {
        /* every rank's parts, or none: committed once all were written */
        parts_dropped = !r->be->agree(r->be, ok);
        if (ok && parts_dropped)
            ok = rf_fail(st, RF_EXIT_RUNTIME_ERROR, "another rank could not write its part of the outputs, so "
                                                    "none was written (RF_DIST_VERBOSE=1 shows its message)");
    }
    if (dir) {
        if (ok) {
            ok = rf_outfile_commit_all(files, opened, st);
        } else {
            for (int i = 0; i < opened; i++)
                rf_outfile_abort(&files[i]);
        }
        if (parts_dropped)   /* every rank's unfinished parts gone before the folder a rank made goes */
            (void)r->be->agree(r->be, true);
        if (!ok)
            unmake_dir(dir, created);
    } else {
        fflush(r->out);
    }
    free(created);
    free(files);
    return ok;
}

/* Soufflé-style outputs (rf_run_options.sinks): the files are opened
 * first and committed together at the end, as in write_outputs. */
static bool write_sinks(rt *r, const int *outs, int nouts, rf_status *st)
{
    const rf_hprogram *p = r->p;
    const rf_run_options *o = r->opt;
    const char *dir = o->output_dir ? o->output_dir : ".";
    int *var_of = rf_calloc((size_t)o->nsinks + 1, sizeof *var_of);
    bool ok = true, any_file = false;
    for (int s = 0; s < o->nsinks && ok; s++) {
        var_of[s] = -1;
        for (int i = 0; i < nouts; i++)
            if (strcmp(var_label(&p->vars[outs[i]]), o->sinks[s].pred) == 0)
                var_of[s] = outs[i];
        if (var_of[s] < 0)
            ok = rf_fail(st, RF_EXIT_RUNTIME_ERROR, "internal error: '%s' is not an output", o->sinks[s].pred);
        any_file |= o->sinks[s].kind == RF_SINK_FILE;
    }
    rf_outfile *files = rf_calloc((size_t)o->nsinks + 1, sizeof *files);
    char *created = NULL;
    if (ok && any_file)
        ok = make_dir(dir, &created, st);
    int opened = 0;
    for (int s = 0; s < o->nsinks && ok; s++) {
        if (o->sinks[s].kind != RF_SINK_FILE)
            continue;
        const char *f = o->sinks[s].file;
        char *path = f[0] == '/' ? rf_strdup(f) : rf_sprintf("%s/%s", dir, f);
        ok = rf_outfile_open(&files[opened], path, st);
        free(path);
        if (ok)
            opened++;
    }
    for (int s = 0, k = 0; s < o->nsinks && ok; s++) {
        const rf_output_sink *sk = &o->sinks[s];
        const rf_hvar *hv = &p->vars[var_of[s]];
        rf_table t;
        rf_table_init(&t, hv->arity);
        ok = fetch_output(r, var_of[s], &t, false, st);
        if (ok) {
            output_rows(r, var_of[s], &t, hv);
            double w0 = rf_now();
            if (sk->kind == RF_SINK_FILE) {
                if (!rf_write_delimited(files[k].f, &t, hv->types, sk->delimiter))
                    ok = rf_fail(st, RF_EXIT_RUNTIME_ERROR, "cannot write '%s': %s", files[k].path,
                                 strerror(errno));
                k++;
            } else if (sk->kind == RF_SINK_STDOUT) {
                fprintf(r->out, "---------------\n%s\n===============\n", sk->pred);
                if (!rf_write_delimited(r->out, &t, hv->types, sk->delimiter))
                    ok = rf_fail(st, RF_EXIT_RUNTIME_ERROR, "cannot write the output: %s", strerror(errno));
                fputs("===============\n", r->out);
            } else {
                fprintf(r->out, "%s\t%zu\n", sk->pred, t.nrows);
            }
            r->write_seconds += rf_now() - w0;
        }
        rf_table_free(&t);
    }
    if (ok) {
        ok = rf_outfile_commit_all(files, opened, st);
    } else {
        for (int i = 0; i < opened; i++)
            rf_outfile_abort(&files[i]);
    }
    if (!ok)
        unmake_dir(dir, created);
    fflush(r->out);
    free(created);
    free(files);
    free(var_of);
    return ok;
}

/* In-memory outputs (rf_run_options.result_callback): the rows the files
 * would hold, handed over instead of written. */
static bool give_results(rt *r, const int *outs, int nouts, rf_status *st)
{
    bool ok = true;
    for (int i = 0; i < nouts && ok; i++) {
        const rf_hvar *hv = &r->p->vars[outs[i]];
        rf_table t;
        rf_table_init(&t, hv->arity);
        ok = fetch_output(r, outs[i], &t, false, st);
        if (ok) {
            output_rows(r, outs[i], &t, hv);
            ok = r->opt->result_callback(r->opt->result_ctx, var_label(hv), &t, hv->types, st);
        }
        rf_table_free(&t);
    }
    return ok;
}

/* "input lineitem: parsed 5 of 16 columns (4, 5, 6, 7, 10)" for every
 * loaded variable the program reads only partly. */
static void print_pruned_inputs(rt *r)
{
    for (int v = 0; v < r->p->nvars; v++) {
        const bool *need = r->needed[v];
        if (!need)
            continue;
        int ar = r->p->vars[v].arity, n = 0;
        for (int c = 0; c < ar; c++)
            n += need[c];
        fprintf(r->err, "  input %s: parsed %d of %d columns (", var_label(&r->p->vars[v]), n, ar);
        for (int c = 0, k = 0; c < ar; c++)
            if (need[c])
                fprintf(r->err, "%s%d", k++ ? ", " : "", c);
        fputs(")\n", r->err);
    }
}

static void print_stats(rt *r, double total)
{
    const rf_hprogram *p = r->p;
    FILE *e = r->err;
    fprintf(e, "redfox: stats (backend %s, %s)\n", r->be->name, r->be->device);
    fprintf(e, "  %-5s %-9s %-22s %8s %10s %12s %12s %12s %10s %10s %8s\n", "block", "op", "out", "calls",
            "time(s)", "rows in0", "rows in1", "rows out", "be time(s)", "MB moved", "GB/s");
    for (int b = 0; b < p->nblocks; b++)
        for (int i = 0; i < p->blocks[b].nkernels; i++) {
            const rf_kernel *k = &p->blocks[b].kernels[i];
            const kstat *s = &r->ks[b][i];
            if (!s->calls)
                continue;
            int v = k->out >= 0 ? k->out : k->in[0];   /* CHECK_KEYS has no output */
            const char *name = p->vars[v].name ? p->vars[v].name : "?";
            fprintf(e, "  %-5d %-9s %-22.22s %8zu %10.6f %12zu %12zu %12zu %10.6f %10.1f %8.1f\n", b,
                    rf_kop_name(k->op), name, s->calls, s->seconds, s->rows_in[0], s->rows_in[1], s->rows_out,
                    s->be_seconds, (double)s->bytes / 1e6,
                    s->be_seconds > 0 ? (double)s->bytes / s->be_seconds / 1e9 : 0.0);
        }
    print_pruned_inputs(r);
    /* "join choice stratum2 (block 2): wcoj 1x, binary 0x; last: binary
     * plan's first join 100005 rows from 51946 input rows, largest
     * intermediate ~1e+05 > 0.15 x multiway join's inputs ~7.792e+04 =
     * 1.169e+04 -> wcoj (0.000404 s)" */
    for (int b = 0; b < p->nblocks; b++) {
        if (!r->chose_wcoj[b] && !r->chose_binary[b])
            continue;
        const rf_join_choice *c = &r->last_choice[b];
        fprintf(e,
                "  join choice %s (block %d): wcoj %zux, binary %zux; last: binary plan's first join %" PRIu64
                " rows from %zu input rows, largest intermediate ~%.4g %s %g x multiway join's inputs ~%.4g = %.4g -> "
                "%s (%.6f s)\n",
                p->blocks[b].label ? p->blocks[b].label : "?", b, r->chose_wcoj[b], r->chose_binary[b],
                c->first_join, c->inputs, c->estimate, c->wcoj ? ">" : "<=", c->ratio, c->budget,
                c->ratio * c->budget, c->wcoj ? "wcoj" : "binary", r->choice_seconds[b]);
    }
    for (int b = 0; b < p->nblocks; b++)
        if (r->loop_header[b])
            fprintf(e, "  loop %s (block %d): %zu iterations\n",
                    p->blocks[b].label ? p->blocks[b].label : "?", b, r->entries[b]);
    if (r->mem_limit || r->spills) {
        if (r->mem_limit)
            fprintf(e, "  device memory limit %zu bytes:", r->mem_limit);
        else
            fprintf(e, "  device memory (no limit given):");
        fprintf(e, " %zu variables spilled to host memory (%.1f MB), %zu reloaded (%.1f MB); %zu kernels run again "
                   "after running out of memory\n",
                r->spills, (double)r->spill_bytes / 1e6, r->reloads, (double)r->reload_bytes / 1e6, r->oom_reruns);
        if (r->ooc_kernels)
            fprintf(e, "  out of core: %zu kernel runs in key-range parts, %zu parts (%zu cut in two after running out "
                       "of memory); %zu semi-naive unions run with their difference, part by part\n",
                    r->ooc_kernels, r->ooc_parts, r->ooc_splits, r->unions_with_diff);
        if (r->ooc_kernels && r->be->upload_ahead)
            fprintf(e, "  out of core: %zu parts' inputs uploaded while the part before ran, outputs downloaded while "
                       "the part after ran\n",
                    r->parts_ahead);
        if (r->ooc_kernels || r->spills)
            fprintf(e, "  host<->device: %.1f MB to the device, %.1f MB back (parts %.1f up, %.1f down); %.6f s in "
                       "moves, %.6f s cutting parts, %.6f s in kernels run in parts (moves and cuts included)\n",
                    (double)(r->reload_bytes + r->part_up_bytes) / 1e6, (double)(r->spill_bytes + r->part_down_bytes) / 1e6,
                    (double)r->part_up_bytes / 1e6, (double)r->part_down_bytes / 1e6, r->move_seconds, r->cut_seconds,
                    r->parts_seconds);
    }
    fprintf(e, "  output %.6f s (writing %.6f s); answers in host memory after %.6f s\n", r->output_seconds,
            r->write_seconds, total - r->write_seconds);
    /* The split benchmarks report (bench/tpch.py): input files to resident
     * relations, and resident relations to answers in host memory. */
    fprintf(e, "  load %.6f s (inputs read and resident), query %.6f s (resident inputs to answers in host memory)\n",
            r->load_seconds, total - r->write_seconds - r->load_seconds);
    if (r->be->print_stats)
        r->be->print_stats(r->be, e);
    fprintf(e, "  total %.3f s, peak memory %.1f MiB\n", total,
            (double)r->be->bytes_peak(r->be) / (1024.0 * 1024.0));
}

bool rf_run_ex(const rf_hprogram *p, const rf_run_options *opt, rf_run_info *info, rf_status *st)
{
    double t0 = rf_now();
    rt r;
    memset(&r, 0, sizeof r);
    r.p = p;
    r.opt = opt;
    r.be = opt->backend;
    r.out = opt->out ? opt->out : stdout;
    r.err = opt->err ? opt->err : stderr;
    if (!r.be)
        return rf_fail(st, RF_EXIT_RUNTIME_ERROR, "no backend");
    /* --input and --print must name predicates of the program. */
    for (int i = 0; i < opt->ninputs; i++)
        if (find_pred_var(p, opt->inputs[i].pred) < 0)
            return rf_fail(st, RF_EXIT_USAGE, "--input: unknown predicate '%s'", opt->inputs[i].pred);
    for (int i = 0; i < opt->nmemory_inputs; i++) {
        int v = find_pred_var(p, opt->memory_inputs[i].pred);
        if (v < 0)
            return rf_fail(st, RF_EXIT_USAGE, "unknown predicate '%s'", opt->memory_inputs[i].pred);
        if (opt->memory_inputs[i].rows->arity != p->vars[v].arity)
            return rf_fail(st, RF_EXIT_USAGE, "'%s' has %d columns, the facts given %d", opt->memory_inputs[i].pred,
                           p->vars[v].arity, opt->memory_inputs[i].rows->arity);
    }
    r.keep = rf_calloc((size_t)p->nvars + 1, sizeof *r.keep);
    for (int v = 0; v < p->nvars; v++)
        r.keep[v] = p->vars[v].is_output;
    for (int i = 0; i < opt->nprint; i++) {
        int v = find_pred_var(p, opt->print[i]);
        if (v < 0) {
            free(r.keep);
            return rf_fail(st, RF_EXIT_USAGE, "--print: unknown predicate '%s'", opt->print[i]);
        }
        if (p->vars[v].internal) {   /* never stored: only the members would make it */
            free(r.keep);
            return rf_fail(st, RF_EXIT_USAGE, "--print: '%s' exists only inside a fused kernel of this program "
                           "(run it unfused: rf_unweave, --no-fuse)", opt->print[i]);
        }
        r.keep[v] = true;
    }
    if (opt->profile_path && !(r.trace = rf_trace_new(t0, opt->profile_path, st))) {
        free(r.keep);   /* the trace's path cannot be written: fail before the run */
        return false;
    }
    r.positions = rf_calloc((size_t)p->nvars + 1, sizeof *r.positions);
    r.needed = rf_needed_columns(p, r.keep, r.positions);
    r.dv = rf_calloc((size_t)p->nvars + 1, sizeof *r.dv);
    if (opt->device_memory || opt->spill_on_oom) {
        r.mem_limit = opt->device_memory;
        r.spilled = rf_calloc((size_t)p->nvars + 1, sizeof *r.spilled);
        r.last_use = rf_calloc((size_t)p->nvars + 1, sizeof *r.last_use);
        /* Tests: every kernel that splits runs in this many parts. */
        const char *force = getenv("RF_TEST_OOC_PARTS");
        if (force && atoi(force) > 1)
            r.ooc_force = atoi(force) > 4096 ? 4096 : atoi(force);
        /* Parts' outputs through a table of their own each, then copied
         * into place (for measuring, and the tests of that path). */
        const char *at = getenv("RF_OOC_DOWNLOAD_AT");
        r.ooc_copy_parts = at && strcmp(at, "off") == 0;
        const char *pool = getenv("RF_TEST_HOST_POOL");
        r.pool_always = pool && strcmp(pool, "1") == 0;
        if (r.pool_always)
            rf_ooc_test_pool_install();
        r.pooled = r.be->pooled_tables || r.pool_always;
    }
    r.ks = rf_calloc((size_t)p->nblocks + 1, sizeof *r.ks);
    r.entries = rf_calloc((size_t)p->nblocks + 1, sizeof *r.entries);
    r.loop_header = rf_calloc((size_t)p->nblocks + 1, sizeof *r.loop_header);
    r.loop_start = rf_calloc((size_t)p->nblocks + 1, sizeof *r.loop_start);
    r.loop_iter = rf_calloc((size_t)p->nblocks + 1, sizeof *r.loop_iter);
    r.loop_of = rf_calloc((size_t)p->nblocks + 1, sizeof *r.loop_of);
    r.closes = rf_calloc((size_t)p->nblocks + 1, sizeof *r.closes);
    r.iter_start = rf_calloc((size_t)p->nblocks + 1, sizeof *r.iter_start);
    r.chose_wcoj = rf_calloc((size_t)p->nblocks + 1, sizeof *r.chose_wcoj);
    r.chose_binary = rf_calloc((size_t)p->nblocks + 1, sizeof *r.chose_binary);
    r.last_choice = rf_calloc((size_t)p->nblocks + 1, sizeof *r.last_choice);
    r.choice_seconds = rf_calloc((size_t)p->nblocks + 1, sizeof *r.choice_seconds);
    for (int b = 0; b < p->nblocks; b++)
        r.loop_of[b] = r.closes[b] = -1;
    for (int b = 0; b < p->nblocks; b++) {
        const rf_hblock *blk = &p->blocks[b];
        r.ks[b] = rf_calloc((size_t)blk->nkernels + 1, sizeof **r.ks);
        if (blk->term == RF_TERM_JUMP || blk->term == RF_TERM_BRANCH_EMPTY) {
            if (blk->target >= 0 && blk->target <= b && blk->target < p->nblocks)
                r.loop_header[blk->target] = true;
            if (blk->term == RF_TERM_BRANCH_EMPTY && blk->target_else >= 0 && blk->target_else <= b &&
                blk->target_else < p->nblocks)
                r.loop_header[blk->target_else] = true;
        }
    }
    /* Loops are the block ranges header..tail of back edges; a block's
     * innermost loop is the one with the latest header. */
    for (int b = 0; b < p->nblocks; b++) {
        const rf_hblock *blk = &p->blocks[b];
        int back = -1;
        if ((blk->term == RF_TERM_JUMP || blk->term == RF_TERM_BRANCH_EMPTY) && blk->target >= 0 &&
            blk->target <= b)
            back = blk->target;
        if (blk->term == RF_TERM_BRANCH_EMPTY && blk->target_else >= 0 && blk->target_else <= b)
            back = blk->target_else;
        r.closes[b] = back;
        for (int t = back; t >= 0 && t <= b; t++)
            if (r.loop_of[t] < back)
                r.loop_of[t] = back;
    }
    if (r.trace) {
        r.gpu = strcmp(r.be->name, "gpu") == 0;
        r.activity = rf_calloc(RF_PAR_ACTIVITY_SLOTS, sizeof *r.activity);
        rf_par_activity_start();
    }
    r.be->time_kernels = opt->stats || r.trace;
    if (r.be->program_begins) {
        double b0 = rf_now();
        r.be->program_begins(r.be, p);
        if (r.trace)
            rf_trace_slice(r.trace, RF_TRACK_MAIN, "program begins (backend setup)", "setup", b0, rf_now(), NULL);
    }
    double i0 = rf_now();
    bool ok = interpret(&r, st);
    if (r.trace)
        rf_trace_slice(r.trace, RF_TRACK_MAIN, "kernels", "phase", i0, rf_now(),
                       rf_sprintf("\"kernels_run\": %zu", r.info.kernels_run));
    if (ok) {
        int nouts = 0;
        int *outs = rf_calloc((size_t)p->nvars + 1, sizeof *outs);
        for (int v = 0; v < p->nvars; v++)
            if (r.keep[v])
                outs[nouts++] = v;
        bool per_rank = opt->output_parts > 0 && !opt->discard_outputs && !opt->result_callback;
        if (per_rank && !r.be->outputs_local) {
            ok = rf_fail(st, RF_EXIT_USAGE, "outputs written per rank need a distributed run (mpirun, --gpus or "
                                            "--distribute)");
        } else if (per_rank || r.be->outputs_ready) {
            rf_dvar **dvs = rf_calloc((size_t)nouts + 1, sizeof *dvs);
            for (int i = 0; i < nouts; i++)
                dvs[i] = r.dv[outs[i]];
            ok = per_rank ? r.be->outputs_local(r.be, dvs, nouts, st) : r.be->outputs_ready(r.be, dvs, nouts, st);
            free(dvs);
        }
        double w0 = rf_now();
        if (ok && opt->result_callback && !opt->discard_outputs)
            ok = give_results(&r, outs, nouts, st);
        else if (ok && !opt->discard_outputs)
            ok = opt->nsinks > 0 && !opt->count_only ? write_sinks(&r, outs, nouts, st)
                                                     : write_outputs(&r, outs, nouts, st);
        r.output_seconds = rf_now() - w0;
        if (r.trace)
            rf_trace_slice(r.trace, RF_TRACK_MAIN, "outputs (download, order, write)", "phase", w0, rf_now(),
                           rf_sprintf("\"outputs\": %d", nouts));
        free(outs);
    }
    r.info.seconds = rf_now() - t0;
    r.info.bytes_peak = r.be->bytes_peak(r.be);
    for (int b = 0; b < p->nblocks; b++)
        if (r.loop_header[b])
            r.info.loop_iterations += r.entries[b];
    if (r.trace) {
        rf_par_activity_stop();
        rf_trace_slice(r.trace, RF_TRACK_MAIN, "run", "phase", t0, rf_now(),
                       rf_sprintf("\"ok\": %s, \"kernels_run\": %zu, \"loop_iterations\": %zu",
                                  ok ? "true" : "false", r.info.kernels_run, r.info.loop_iterations));
        /* Also after a failed run (it shows where it stopped); then the
         * run's error is the one reported. */
        rf_status tst;
        rf_status_init(&tst);
        if (!rf_trace_write(r.trace, opt->program_name, r.be->name, &tst) && ok) {
            *st = tst;
            ok = false;
        }
        rf_trace_free(r.trace);
        free(r.activity);
    }
    if (opt->stats)
        print_stats(&r, r.info.seconds);
    for (int v = 0; v < p->nvars; v++) {
        if (r.dv[v])
            r.be->var_free(r.be, r.dv[v]);
        drop_spilled(&r, v);
    }
    free(r.spilled);
    free(r.ooc_hints);
    for (int i = 0; i < r.nunion_copies; i++)
        free(r.union_copies[i].copy);
    free(r.union_copies);
    free(r.last_use);
    for (int b = 0; b < p->nblocks; b++)
        free(r.ks[b]);
    free(r.ks);
    free(r.dv);
    free(r.keep);
    rf_needed_columns_free(r.needed, p->nvars);
    free(r.positions);
    free(r.entries);
    free(r.loop_header);
    free(r.loop_start);
    free(r.loop_iter);
    free(r.loop_of);
    free(r.closes);
    free(r.iter_start);
    free(r.chose_wcoj);
    free(r.chose_binary);
    free(r.last_choice);
    free(r.choice_seconds);
    if (info)
        *info = r.info;
    return ok;
}

bool rf_run(const rf_hprogram *p, const rf_run_options *opt, rf_status *st)
{
    return rf_run_ex(p, opt, NULL, st);
}
