/* The distribution layer (docs/design.md, "Distribution"): a backend that
 * wraps another one (the CPU backend today) and runs the same program in
 * every rank of a communicator (dist_comm.h), each rank holding a part of
 * every relation. Before it hands a kernel to the inner backend it brings
 * the kernel's inputs to a placement under which the kernel, run on each
 * rank's parts alone, gives the parts of the whole answer: both sides of a
 * join hashed on their keys (or one side everywhere), both sides of a set
 * operation hashed alike, an aggregate's input hashed on its group keys.
 * Moving a relation: the inner backend splits the rank's part by
 * destination (split_rows), only the rows for other ranks are packed and
 * sent, and what arrives joins the rows that stayed (merge_rows); a
 * backend without those entries moves through host tables (download,
 * send each row to its rank(s), upload what arrived). On one rank
 * nothing ever moves: every call goes straight to the inner backend.
 *
 * Every rank runs the same interpreter over the same program, so every
 * collective call below is reached by every rank in the same order: no
 * decision that leads to one may depend on a rank's own rows, only on the
 * program and on global values (var_rows is a global count). A kernel
 * that fails on one rank fails on all, with the message of the first
 * failing kernel (then of the lowest rank), as one process would fail;
 * but the ranks agree on it late (settle_failures): at the next global
 * count, which a loop's test makes every iteration anyway, at a download
 * and before the outputs. Until then the failed rank keeps joining every
 * collective with empty relations and runs no kernel. (An agreement after
 * every kernel was a collective each: 12 an iteration of same
 * generation's loop, 7,078 calls of ~40 us over NCCL on usroads.
 * RF_DIST_AGREE=kernel brings it back, for measuring.)
 *
 * String values are ids in a per-process dictionary. Every rank reads every
 * input file whole, in the same order, so the ids the inputs and the
 * program's constants get are the same on every rank; they differ only once
 * kernels make new strings (concat, substr, to_string: rf_code_interns),
 * in whatever order each rank's rows make them. So where no kernel of the
 * program makes strings (string_ids: TPC-H's queries but q22), string
 * columns hash and travel as their ids, like any other word (the GPU moves
 * such relations device to device); the ranks check that their
 * dictionaries agree once the inputs are read (a fingerprint, one
 * all-reduce). Else rows hash string columns by their text and carry them
 * as text, interned again where they arrive. RF_DIST_STRING_IDS=0: text
 * always. */
#include "dist_backend.h"
#include "download_copy.h"

#include "rf_prims.h"
#include "rf_agg_ops.h"
#include "rf_scalar_ops.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

typedef enum placement {
    PLACE_HASH,        /* each row on rank rf_dist_row_rank(prefix of nkeys columns) */
    PLACE_REPLICATED,  /* every rank holds every row */
    PLACE_SPLIT        /* each row on exactly one rank, no known function */
} placement;

/* Hashed columns a placement that is not a prefix lists (a projection
 * that moves hashed columns elsewhere keeps the hash this way); more than
 * this many: split. */
#define DIST_MAX_LISTED 8

typedef struct dist {
    placement kind;
    int nkeys;         /* PLACE_HASH: the hashed columns (1..arity; 0 for arity 0) */
    /* PLACE_HASH: hashed on cols[0..nkeys), in that order, rather than on
     * the prefix 0..nkeys-1. Projections make such placements (a row's
     * rank is that of the input row it came from), and one move does
     * (move_var_cols, for hash_for_keys); every other move hashes a
     * prefix. */
    bool listed;
    int cols[DIST_MAX_LISTED];
} dist;

struct rf_dvar {
    rf_dvar *inner;    /* this rank's part, in the inner backend */
    int arity;
    const rf_type *types;   /* NULL until described: no string columns known */
    bool sorted;       /* a set: parts are merged with sort+dedup */
    dist d;
    bool gathered;     /* an output after outputs_ready: all rows on rank 0,
                          downloads and counts are this rank's alone */
    /* The relation's rows, all ranks together, as dist_var_rows last
     * counted them; forgotten whenever the part changes (a kernel's
     * output, an upload, a move). A runtime COPY hands the same variable
     * over, so the loop test of a delta just copied costs no collective. */
    bool rows_known;
    size_t rows;
    const rf_hvar *hv; /* the program variable it holds (var_describe), or NULL */
};

typedef struct dist_impl {
    rf_backend *inner;
    rf_comm *comm;
    /* One rank: every relation is whole on it, nothing ever moves; the
     * layer hands everything straight to the inner backend (fused groups
     * included), with no collective call. */
    bool solo;
    size_t exchanges;       /* relations moved */
    size_t rows_sent;       /* rows this rank sent to other ranks */
    size_t words_sent;
    size_t collectives;     /* every call into the communicator */
    size_t replicate_rows;  /* join_inputs: the smaller side everywhere up to this many rows (0: never) */
    double move_seconds;    /* wall time of the moves (--stats) */
    /* Per variable of the program: a set every reader of which is a set
     * gather (left_split_ok); and how often one was left where it was
     * made (--stats). RF_DIST_SETS_STAY=0 turns it off. */
    bool *set_may_stay;
    int nvars;
    bool sets_stay;
    const rf_hprogram *prog;  /* the program running (program_begins) */
    bool trace;             /* RF_DIST_TRACE=1: a line a move and a kernel run on rank 0 alone */
    bool string_ids;        /* strings hash and move as ids (the top of this file) */
    size_t join_counts;     /* --join=auto's statistic counted where the rows are */
    bool fused_whole;       /* fused groups run whole on each rank where they can (RF_DIST_FUSED_WHOLE=0: off) */
    bool input_shares;      /* input files read in shares (RF_DIST_INPUT_SHARES=0: whole on every rank) */
    size_t input_shares_read;
    size_t fused_whole_runs, fused_as_members;
    size_t sets_left;
    bool fold;              /* keyless aggregates folded per rank (RF_DIST_FOLD=0: off) */
    size_t mj_copies;       /* MULTIJOINs whose input 0 stayed split beside a copy of it */
    size_t mj_counts;       /* counting MULTIJOINs whose ranks' counts were summed */
    bool outputs_per_rank;  /* outputs_local ran: each rank wrote its own rows */
    bool mj_copy;           /* a MULTIJOIN's self-join positions read a copy sent everywhere,
                               input 0 stays split (RF_DIST_MULTIJOIN_COPY=0: the relation
                               itself goes everywhere, as before) */
    bool fold_keyed;        /* and aggregates with keys (RF_DIST_FOLD_KEYED=0: off) */
    bool fold_keyed_all;    /* ... every one, not only those with a string key (=all) */
    size_t fold_keyed_rows; /* ... where their partial rows are at most this many */
    size_t folded, folded_keyed, fold_declined;
    int output_threads;     /* rank 0, after the gather (-1: leave as is) */
    /* Failures agreed on late (the top of this file). */
    bool agree_each;        /* RF_DIST_AGREE=kernel: after every kernel instead */
    uint64_t kernel_seq;    /* kernels run: the same sequence on every rank */
    bool failed;            /* a kernel failed on this rank: the first one's number and message */
    uint64_t fail_seq;
    rf_status fail_st;
    bool fail_agreed;       /* every rank knows: fail_st is the run's error */
    double control_seconds; /* counts and agreements (--stats) */
    bool connected;         /* dist_inputs_loaded waited for the communicator */
    /* Kept from move to move (grown only), so that a loop's exchanges do
     * not fault in fresh pages every iteration: the rows leaving this
     * rank, their ranks, the words sent and received, the rows arriving. */
    rf_table away, before, after;
    int *dests;
    uint64_t *send, *recv;
    size_t send_cap, recv_cap;
} dist_impl;

/* ---- placement functions (also used by tests/runtime/test_dist.c) ---- */

static uint64_t mix64(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    h *= 0xbf58476d1ce4e5b9ull;
    return h ^ (h >> 31);
}

static bool is_string(const rf_type *types, int c) { return types && types[c] == RF_TYPE_STRING; }

int rf_dist_row_rank(const rf_table *t, size_t row, int nkeys, const rf_type *types, int size)
{
    return rf_dist_row_rank_cols(t, row, nkeys, NULL, types, size);
}

int rf_dist_row_rank_cols(const rf_table *t, size_t row, int nkeys, const int *cols, const rf_type *types, int size)
{
    uint64_t h = 0x6a09e667f3bcc909ull;
    for (int k = 0; k < nkeys; k++) {
        int c = cols ? cols[k] : k;
        rf_word w = t->cols[c][row];
        if (is_string(types, c))
            w = rf_str_hash(rf_str_get(w), rf_str_len(w));
        h = mix64(h, w);
    }
    h ^= h >> 29;
    return (int)((h * 0x94d049bb133111ebull >> 32) % (uint64_t)size);
}

static size_t row_words(const rf_table *t, size_t row, const rf_type *types)
{
    size_t n = 0;
    for (int c = 0; c < t->arity; c++)
        n += is_string(types, c) ? 1 + (rf_str_len(t->cols[c][row]) + 7) / 8 : 1;
    return n;
}

static size_t put_row(uint64_t *out, const rf_table *t, size_t row, const rf_type *types)
{
    size_t n = 0;
    for (int c = 0; c < t->arity; c++) {
        rf_word w = t->cols[c][row];
        if (!is_string(types, c)) {
            out[n++] = w;
            continue;
        }
        size_t len = rf_str_len(w);
        out[n++] = len;
        if (len) {
            out[n + (len - 1) / 8] = 0;   /* the last word's padding */
            memcpy(out + n, rf_str_get(w), len);
        }
        n += (len + 7) / 8;
    }
    return n;
}

/* *buf with room for n words: NULL or a malloc'd buffer of *cap words,
 * replaced by a larger one (a quarter to spare) when too small. */
static uint64_t *grow_words(uint64_t **buf, size_t *cap, size_t n)
{
    if (!*buf || *cap < n) {
        free(*buf);
        *cap = n + n / 4;
        *buf = rf_malloc(rf_mul_size(*cap, sizeof **buf));
    }
    return *buf;
}

static bool has_strings(const rf_type *types, int arity)
{
    for (int c = 0; c < arity; c++)
        if (is_string(types, c))
            return true;
    return false;
}

/* rf_dist_pack of rows of arity words each (no string column). */
static size_t pack_fixed(const rf_table *t, const int *dest, int size, uint64_t **buf, size_t *cap,
                         size_t *counts)
{
    int ar = t->arity;
    size_t *rows = rf_calloc((size_t)size + 1, sizeof *rows);   /* rows[size]: to every rank */
    for (size_t i = 0; i < t->nrows; i++)
        rows[dest[i] < 0 ? size : dest[i]]++;
    size_t total = 0;
    size_t *at = rf_calloc((size_t)size, sizeof *at);
    for (int d = 0; d < size; d++) {
        rows[d] += rows[size];
        counts[d] = 1 + rows[d] * (size_t)ar;
        at[d] = total;
        total += counts[d];
    }
    uint64_t *out = grow_words(buf, cap, total + 1);
    for (int d = 0; d < size; d++)
        out[at[d]++] = rows[d];
    for (size_t i = 0; i < t->nrows; i++) {
        int lo = dest[i] < 0 ? 0 : dest[i], hi = dest[i] < 0 ? size - 1 : dest[i];
        for (int d = lo; d <= hi; d++) {
            uint64_t *o = out + at[d];
            for (int c = 0; c < ar; c++)
                o[c] = t->cols[c][i];
            at[d] += (size_t)ar;
        }
    }
    free(at);
    free(rows);
    return total;
}

/* rf_dist_pack into *buf, NULL or a malloc'd buffer of *cap words
 * (replaced by a larger one when too small). */
static size_t pack_to(const rf_table *t, const rf_type *types, const int *dest, int size, uint64_t **buf,
                      size_t *cap, size_t *counts)
{
    /* Per destination: a row count, then the rows. dest[i] < 0: every rank. */
    for (int d = 0; d < size; d++)
        counts[d] = 1;
    if (!has_strings(types, t->arity))
        return pack_fixed(t, dest, size, buf, cap, counts);
    size_t *rows = rf_calloc((size_t)size, sizeof *rows);
    for (size_t i = 0; i < t->nrows; i++) {
        size_t w = row_words(t, i, types);
        for (int d = 0; d < size; d++)
            if (dest[i] < 0 || dest[i] == d) {
                counts[d] += w;
                rows[d]++;
            }
    }
    size_t total = 0;
    size_t *at = rf_calloc((size_t)size, sizeof *at);
    for (int d = 0; d < size; d++) {
        at[d] = total;
        total += counts[d];
    }
    uint64_t *out = grow_words(buf, cap, total + 1);
    for (int d = 0; d < size; d++)
        out[at[d]++] = rows[d];
    for (size_t i = 0; i < t->nrows; i++)
        for (int d = 0; d < size; d++)
            if (dest[i] < 0 || dest[i] == d)
                at[d] += put_row(out + at[d], t, i, types);
    free(at);
    free(rows);
    return total;
}

size_t rf_dist_pack(const rf_table *t, const rf_type *types, const int *dest, int size, uint64_t **buf,
                    size_t *counts)
{
    size_t cap = 0;
    *buf = NULL;
    return pack_to(t, types, dest, size, buf, &cap, counts);
}

bool rf_dist_unpack(const uint64_t *buf, const size_t *counts, int size, const rf_type *types, rf_table *t)
{
    size_t at = 0;
    if (t->arity > 0 && !has_strings(types, t->arity)) {   /* rows of arity words: column by column */
        int ar = t->arity;
        for (int s = 0; s < size; s++) {
            if (counts[s] == 0 || (counts[s] - 1) / (size_t)ar != buf[at] || (counts[s] - 1) % (size_t)ar)
                return false;
            size_t n = (size_t)buf[at++], base = t->nrows;
            rf_table_resize(t, base + n);
            for (int c = 0; c < ar; c++) {
                rf_word *col = t->cols[c] + base;
                const uint64_t *src = buf + at + c;
                for (size_t r = 0; r < n; r++)
                    col[r] = src[r * (size_t)ar];
            }
            at += n * (size_t)ar;
        }
        return true;
    }
    rf_word *row = rf_malloc(((size_t)t->arity + 1) * sizeof *row);
    bool ok = true;
    for (int s = 0; s < size && ok; s++) {
        size_t end = at + counts[s];
        if (counts[s] == 0) {
            ok = false;
            break;
        }
        uint64_t nrows = buf[at++];
        rf_table_reserve(t, t->nrows + (size_t)nrows);
        for (uint64_t r = 0; r < nrows && ok; r++) {
            for (int c = 0; c < t->arity && ok; c++) {
                if (at >= end) {
                    ok = false;
                    break;
                }
                if (!is_string(types, c)) {
                    row[c] = buf[at++];
                    continue;
                }
                uint64_t len = buf[at++];
                if (len > (end - at) * 8) {
                    ok = false;
                    break;
                }
                row[c] = rf_str_intern((const char *)(buf + at), (size_t)len);
                at += (size_t)((len + 7) / 8);
            }
            if (ok)
                rf_table_append_row(t, row);
        }
        ok = ok && at == end;
    }
    free(row);
    return ok;
}

/* ---- communicator calls; a failing one ends the job (every rank waits
 * in a collective that the failing rank will never join) ---- */

static void comm_failed(dist_impl *im, const char *err)
{
    fprintf(stderr, "redfox: error: rank %d of %d: %s\n", im->comm->rank, im->comm->size, err);
    im->comm->abort(im->comm, RF_EXIT_RUNTIME_ERROR);
}

/* A collective of a few words that decides something (a count, an
 * agreement), timed for --stats. */
static void control_allreduce(dist_impl *im, uint64_t *vals, int n, rf_comm_op op)
{
    char err[256];
    double t0 = rf_now();
    im->collectives++;
    if (!im->comm->allreduce_u64(im->comm, vals, n, op, err, sizeof err))
        comm_failed(im, err);
    double waited = rf_now() - t0;
    im->control_seconds += waited;
    if (im->trace && waited > 1e-3)   /* (a rank behind the others shows as the others' waits) */
        fprintf(stderr, "redfox: rank %d waited %.2f ms in an all-reduce (kernel %llu)\n", im->comm->rank, waited * 1e3,
                (unsigned long long)im->kernel_seq);
}

/* Every rank takes the status of rank `root`. */
static void control_bcast_status(dist_impl *im, rf_status *st, int root)
{
    char err[256];
    double t0 = rf_now();
    im->collectives++;
    if (!im->comm->bcast(im->comm, st, sizeof *st, root, err, sizeof err))
        comm_failed(im, err);
    im->control_seconds += rf_now() - t0;
    st->message[sizeof st->message - 1] = '\0';
    if (!st->code)
        st->code = RF_EXIT_RUNTIME_ERROR;
}

/* Every rank learns the first failure (the lowest kernel number, then the
 * lowest rank) and takes its message: fail_agreed. A collective. */
static void settle_failures(dist_impl *im)
{
    rf_comm *c = im->comm;
    uint64_t first = im->failed ? im->fail_seq * (uint64_t)c->size + (uint64_t)c->rank : UINT64_MAX;
    control_allreduce(im, &first, 1, RF_COMM_MIN);
    if (first == UINT64_MAX)
        return;
    rf_status theirs = im->fail_st;
    control_bcast_status(im, &theirs, (int)(first % (uint64_t)c->size));
    im->fail_st = theirs;
    im->fail_agreed = true;
}

/* False, with the run's error in st, when a kernel failed on any rank (a
 * collective unless that is known already). */
static bool settled_ok(dist_impl *im, rf_status *st)
{
    if (im->solo || im->agree_each)
        return true;   /* nothing left to agree on */
    if (!im->fail_agreed)
        settle_failures(im);
    if (!im->fail_agreed)
        return true;
    *st = im->fail_st;
    return false;
}

/* A global count; whether any rank has failed travels with it. */
static uint64_t global_sum(dist_impl *im, uint64_t v)
{
    uint64_t w[2] = {v, im->failed};
    control_allreduce(im, w, im->agree_each ? 1 : 2, RF_COMM_SUM);
    if (!im->agree_each && w[1] && !im->fail_agreed)
        settle_failures(im);
    return w[0];
}

/* Packs each row of t for rank dest[row] (-1: every rank) and exchanges
 * the words with every rank: into im->recv; returns the counts (malloc'd,
 * 2 x size: words sent to each rank, then words received from each). */
static size_t *send_packed(dist_impl *im, const rf_table *t, const rf_type *types, const int *dest)
{
    rf_comm *c = im->comm;
    size_t *counts = rf_calloc((size_t)c->size * 2, sizeof *counts);
    pack_to(t, types, dest, c->size, &im->send, &im->send_cap, counts);
    for (int d = 0; d < c->size; d++)
        im->words_sent += d == c->rank ? 0 : counts[d];
    char err[256];
    im->collectives += 2;
    if (!c->alltoallv(c, im->send, counts, &im->recv, &im->recv_cap, counts + c->size, err, sizeof err))
        comm_failed(im, err);
    return counts;
}

/* Sends each row of t to dest[row] (-1: to every rank) and returns what
 * this rank received, deduplicated when `set`. */
static void exchange_rows(dist_impl *im, const rf_table *t, const int *dest, const rf_type *types, bool set,
                          rf_table *got)
{
    rf_comm *c = im->comm;
    for (size_t i = 0; i < t->nrows; i++)
        im->rows_sent += dest[i] != c->rank;
    size_t *counts = send_packed(im, t, types, dest);
    rf_table_init(got, t->arity);
    if (!rf_dist_unpack(im->recv, counts + c->size, c->size, types, got))
        comm_failed(im, "internal error: a malformed exchange buffer");
    free(counts);
    if (set)
        rf_prim_sort_unique(got);
}

/* ---- moving a relation ---- */

typedef enum target_kind { TO_HASH, TO_ALL, TO_ROOT } target_kind;

/* The placement a move to `to` leaves (cols: TO_HASH on those columns,
 * in that order, rather than on the prefix of nkeys; at most
 * DIST_MAX_LISTED of them, which move_var_cols' callers keep to). */
static dist placed(target_kind to, int nkeys, const int *cols)
{
    dist d = {to == TO_HASH ? PLACE_HASH : to == TO_ALL ? PLACE_REPLICATED : PLACE_SPLIT, to == TO_HASH ? nkeys : 0,
              false, {0}};
    bool prefix = true;
    for (int i = 0; to == TO_HASH && cols && i < nkeys && i < DIST_MAX_LISTED; i++) {
        d.cols[i] = cols[i];
        prefix = prefix && cols[i] == i;
    }
    d.listed = to == TO_HASH && cols && !prefix;
    return d;
}

/* d hashes the prefix of some length (returned; 0: it does not). */
static int hash_prefix(dist d) { return d.kind == PLACE_HASH && !d.listed ? d.nkeys : 0; }

static bool same_dist(dist a, dist b)
{
    if (a.kind != b.kind)
        return false;
    if (a.kind != PLACE_HASH)
        return true;
    if (a.nkeys != b.nkeys || a.listed != b.listed)
        return false;
    for (int i = 0; a.listed && i < a.nkeys; i++)
        if (a.cols[i] != b.cols[i])
            return false;
    return true;
}

static bool inner_fail(rf_status *st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char msg[512];
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return rf_fail(st, RF_EXIT_RUNTIME_ERROR, "%s", msg);
}

/* A move's destinations, for the inner backend's split_rows: row i of t
 * goes to row_dest(t, i, &how) (-1: every rank). */
typedef struct dest_of {
    target_kind to;
    int nkeys;
    const int *cols;   /* TO_HASH: the hashed columns (NULL: the prefix) */
    const rf_type *types;
    int size;
} dest_of;

static int row_dest(const rf_table *t, size_t i, const void *ctx)
{
    const dest_of *d = ctx;
    return d->to == TO_ALL ? -1 : d->to == TO_ROOT ? 0 : rf_dist_row_rank_cols(t, i, d->nkeys, d->cols, d->types, d->size);
}

/* t emptied for rows of the arity (its storage kept when the arity is
 * the same). */
static void reuse_table(rf_table *t, int arity)
{
    if (t->arity == arity) {
        rf_table_clear(t);
        return;
    }
    rf_table_free(t);
    rf_table_init(t, arity);
}

/* move_var through the inner backend's split_rows and merge_rows: the
 * rows that stay on this rank never leave it; only the others are packed
 * and sent, and what arrives from the ranks before this one goes before
 * its own rows, from the ranks after it after them (the order a move
 * through the host gives). */
static void move_inside(dist_impl *im, rf_dvar *v, target_kind to, int nkeys, const int *cols)
{
    rf_backend *in = im->inner;
    rf_comm *c = im->comm;
    rf_status st;
    rf_status_init(&st);
    dest_of how = {to, nkeys, cols, v->types, c->size};
    bool from_all = v->d.kind == PLACE_REPLICATED;   /* keep this rank's rows, no messages */
    rf_table *away = &im->away, *before = &im->before, *after = &im->after;
    reuse_table(away, v->arity);
    if (!in->split_rows(in, v->inner, row_dest, &how, c->rank, from_all ? NULL : away, &im->dests, &st))
        comm_failed(im, st.message);
    if (from_all)
        return;
    im->exchanges++;
    im->rows_sent += away->nrows;
    size_t *counts = send_packed(im, away, v->types, im->dests);
    /* from the ranks before this one, and after it (its own word to
     * itself is a row count of 0, or for every rank its own rows, which
     * it kept) */
    size_t skip = 0;
    for (int s = 0; s <= c->rank; s++)
        skip += counts[c->size + s];
    reuse_table(before, v->arity);
    reuse_table(after, v->arity);
    if (!rf_dist_unpack(im->recv, counts + c->size, c->rank, v->types, before) ||
        !rf_dist_unpack(im->recv + skip, counts + c->size + c->rank + 1, c->size - c->rank - 1, v->types, after))
        comm_failed(im, "internal error: a malformed exchange buffer");
    free(counts);
    if (!in->merge_rows(in, v->inner, before, after, v->sorted, &st))
        comm_failed(im, st.message);
}

/* move_var through the inner backend's move_rows: the rows go from
 * device memory to device memory (the NCCL communicator), as many words
 * as through the host, none of them through it. */
static void move_on_device(dist_impl *im, rf_dvar *v, target_kind to, int nkeys, const int *cols)
{
    rf_backend *in = im->inner;
    rf_status st;
    rf_status_init(&st);
    rf_move_rows how = {
        .to = to == TO_HASH ? RF_MOVE_HASH : to == TO_ALL ? RF_MOVE_ALL : RF_MOVE_ROOT,
        .nkeys = nkeys,
        .cols = to == TO_HASH ? cols : NULL,
        .from_all = v->d.kind == PLACE_REPLICATED,
        .set = v->sorted,
        .comm = im->comm,
    };
    bool ok = in->move_rows(in, v->inner, &how, &st);
    im->collectives += how.collectives;
    if (!ok)
        comm_failed(im, st.message);
    if (how.from_all)
        return;
    im->exchanges++;
    im->rows_sent += how.rows_sent;
    im->words_sent += how.words_sent;
}

/* Replaces v's part by the rows the target placement gives this rank.
 * The relation (the union of the parts) stays the same, so a kernel's
 * input may be moved in place; it stays moved, which is what a loop wants
 * (an input joined every iteration moves once). From replicated, no
 * message is needed: each rank keeps its own rows of its copy. */
static void move_var_now(rf_backend *be, rf_dvar *v, target_kind to, int nkeys, const int *cols);

/* Whether v moves device to device (move_on_device) rather than through
 * host tables: a backend and communicator that can, and no string column
 * travelling as text. */
static bool moves_on_device(const dist_impl *im, const rf_dvar *v)
{
    return im->inner->move_rows && im->comm->alltoallv_device && v->arity >= 1 && !has_strings(v->types, v->arity);
}

/* A relation's name for RF_DIST_TRACE (the planner's, e.g. path.new or t4). */
static const char *var_name(const rf_dvar *v)
{
    return v && v->hv && v->hv->name ? v->hv->name : "a relation";
}

/* move_var to rows hashed on columns cols[0..nkeys) of v, in that order
 * (NULL: the prefix of nkeys): the placement a projection of v that puts
 * those columns first leaves hashed on its prefix. */
static void move_var_cols(rf_backend *be, rf_dvar *v, target_kind to, int nkeys, const int *cols)
{
    dist_impl *im = be->impl;
    if ((to == TO_HASH && same_dist(v->d, placed(TO_HASH, nkeys, cols))) || (to == TO_ALL && v->d.kind == PLACE_REPLICATED))
        return;
    double t0 = rf_now();
    size_t sent = im->rows_sent;
    move_var_now(be, v, to, nkeys, cols);
    im->move_seconds += rf_now() - t0;
    if (im->trace) {   /* which relation, where to, which way (the GPU backend's own line has the phases) */
        rf_backend *in = im->inner;
        bool text = has_strings(v->types, v->arity), device = moves_on_device(im, v);
        char where[48];
        if (to == TO_HASH && v->d.listed) {
            int at = snprintf(where, sizeof where, "hashed on column%s", nkeys == 1 ? "" : "s");
            for (int i = 0; i < nkeys && at > 0 && (size_t)at < sizeof where; i++)
                at += snprintf(where + at, sizeof where - (size_t)at, "%s %d", i ? "," : "", cols[i]);
        } else if (to == TO_HASH)
            snprintf(where, sizeof where, "hashed on %d column%s", nkeys, nkeys == 1 ? "" : "s");
        else
            snprintf(where, sizeof where, "%s", to == TO_ALL ? "everywhere" : "to rank 0");
        fprintf(stderr, "redfox: rank %d moved %s %s (%s): sent %zu rows, %zu here now, %.2f ms\n", im->comm->rank,
                var_name(v), where,
                device ? "device to device" : text ? "through host memory, strings as text" : "through host memory",
                im->rows_sent - sent, in->var_rows(in, v->inner), (rf_now() - t0) * 1e3);
    }
}

static void move_var(rf_backend *be, rf_dvar *v, target_kind to, int nkeys)
{
    move_var_cols(be, v, to, nkeys, NULL);
}

static void move_var_now(rf_backend *be, rf_dvar *v, target_kind to, int nkeys, const int *cols)
{
    dist_impl *im = be->impl;
    rf_backend *in = im->inner;
    rf_comm *c = im->comm;
    v->rows_known = false;   /* a set deduplicated where it lands, or copied everywhere */
    if (moves_on_device(im, v)) {
        move_on_device(im, v, to, nkeys, cols);
        v->d = placed(to, nkeys, cols);
        return;
    }
    if (in->split_rows && in->merge_rows) {
        move_inside(im, v, to, nkeys, cols);
        v->d = placed(to, nkeys, cols);
        return;
    }
    rf_status st;
    rf_status_init(&st);
    rf_table t;
    rf_table_init(&t, v->arity);
    if (!in->download(in, v->inner, &t, &st))
        comm_failed(im, st.message);
    int *dest = rf_malloc(rf_mul_size(t.nrows + 1, sizeof *dest));
    for (size_t i = 0; i < t.nrows; i++)
        dest[i] = to == TO_ALL ? -1 : to == TO_ROOT ? 0 : rf_dist_row_rank_cols(&t, i, nkeys, cols, v->types, c->size);
    rf_table part;
    if (v->d.kind == PLACE_REPLICATED) {   /* keep this rank's rows, no messages */
        rf_table_init(&part, v->arity);
        rf_word *row = rf_malloc(((size_t)v->arity + 1) * sizeof *row);
        for (size_t i = 0; i < t.nrows; i++) {
            if (dest[i] != c->rank)
                continue;
            for (int k = 0; k < v->arity; k++)
                row[k] = t.cols[k][i];
            rf_table_append_row(&part, row);
        }
        free(row);
    } else {
        im->exchanges++;
        exchange_rows(im, &t, dest, v->types, v->sorted, &part);
    }
    free(dest);
    rf_table_free(&t);
    if (!in->upload(in, v->inner, &part, &st))
        comm_failed(im, st.message);
    rf_table_free(&part);
    v->d = placed(to, nkeys, cols);
}

static dist hashed(int nkeys) { return (dist){PLACE_HASH, nkeys, false, {0}}; }

/* The placement a relation gets when nothing asks for another (loaded,
 * deduplicated, cleared): hashed on its first column. Keys come first
 * (the planner sorts join inputs keys first), so the sets of a loop then
 * mostly meet their joins and set operations without moving (in tc, once
 * its edge is replicated by join_inputs, nothing moves). The price: a first column
 * with few distinct values spreads badly (hashing on every column would
 * spread evenly but move the join inputs every iteration). */
static int default_prefix(int arity) { return arity > 0 ? 1 : 0; }
static dist replicated(void) { return (dist){PLACE_REPLICATED, 0, false, {0}}; }
static dist split(void) { return (dist){PLACE_SPLIT, 0, false, {0}}; }

/* ---- the backend table ---- */

static rf_dvar *dist_var_new(rf_backend *be, int arity, rf_status *st)
{
    dist_impl *im = be->impl;
    rf_dvar *inner = im->inner->var_new(im->inner, arity, st);
    if (!inner)
        return NULL;
    rf_dvar *v = rf_calloc(1, sizeof *v);
    v->inner = inner;
    v->arity = arity;
    v->d = hashed(default_prefix(arity));   /* empty: any placement holds */
    return v;
}

static void dist_var_free(rf_backend *be, rf_dvar *v)
{
    dist_impl *im = be->impl;
    if (!v)
        return;
    im->inner->var_free(im->inner, v->inner);
    free(v);
}

static void dist_var_describe(rf_backend *be, rf_dvar *v, const rf_hvar *hv)
{
    dist_impl *im = be->impl;
    v->types = im->string_ids ? NULL : hv->types;   /* (NULL: every column a word) */
    v->sorted = hv->sorted;
    v->hv = hv;
}

/* The relation's rows, all ranks together (a collective unless known
 * since the part last changed). A replicated relation's count is this
 * rank's, once every rank knows that none has failed (a failed rank's copy
 * is empty, and the runtime decides from the count). */
static size_t dist_var_rows(rf_backend *be, const rf_dvar *cv)
{
    dist_impl *im = be->impl;
    rf_dvar *v = (rf_dvar *)cv;   /* (only its count is kept) */
    size_t local = v ? im->inner->var_rows(im->inner, v->inner) : 0;
    if (im->solo || (v && v->gathered))
        return local;
    if (v && v->d.kind == PLACE_REPLICATED) {
        if (!im->agree_each && !im->fail_agreed)
            settle_failures(im);
        return local;
    }
    if (v && v->rows_known)
        return v->rows;
    size_t rows = (size_t)global_sum(im, local);
    if (v) {
        v->rows_known = true;
        v->rows = rows;
    }
    return rows;
}

/* This rank's part's rows (--stats). */
static size_t dist_var_rows_here(rf_backend *be, const rf_dvar *v)
{
    dist_impl *im = be->impl;
    return v ? im->inner->var_rows(im->inner, v->inner) : 0;
}

/* The inputs are read: the communicator is made ready now (a first
 * collective waits for it), so that the wait counts as loading. */
static void dist_inputs_loaded(rf_backend *be)
{
    dist_impl *im = be->impl;
    if (im->solo || im->connected)
        return;
    /* (the first collective: it also waits for the communicator) Where
     * strings travel as ids, every rank's dictionary must be the same:
     * the largest of each word and of its complement are the word itself
     * on every rank only when all ranks agree. Inputs are placed by their
     * strings' ids already, so a difference is an internal error, not a
     * wrong answer. */
    uint64_t count = rf_str_count(), print = rf_str_fingerprint();
    uint64_t w[4] = {count, ~count, print, ~print};
    control_allreduce(im, w, im->string_ids ? 4 : 1, RF_COMM_MAX);
    if (im->string_ids && (w[0] != count || w[1] != ~count || w[2] != print || w[3] != ~print)) {
        /* every rank knows: rank 0 says so before any rank aborts the job
         * (one more collective), so that the message is never lost to an
         * abort from another rank */
        if (im->comm->rank == 0)
            fprintf(stderr, "redfox: error: rank 0 of %d: internal error: the ranks' string dictionaries differ "
                            "after reading the inputs (RF_DIST_STRING_IDS=0 moves strings as text)\n",
                    im->comm->size);
        uint64_t said = 0;
        control_allreduce(im, &said, 1, RF_COMM_SUM);
        im->comm->abort(im->comm, RF_EXIT_RUNTIME_ERROR);
    }
    im->connected = true;
}

/* Every rank has read the same input, whole: each keeps its hash part
 * (default_prefix).
 * (All ranks read the files rather than rank 0 scattering them: no
 * rank-dependent path at loading, a bad file fails every rank alike, and
 * every input string gets the same dictionary id on every rank.) */
/* The rows of t that hash to this rank (its part at loading), in t's
 * order, into part: pieces of rows in parallel mark and count theirs, then
 * each column is gathered into place. (Row by row on one thread, the 60M
 * rows of TPC-H SF 10's lineitem took 50-75 s a rank on the GPU machine;
 * one process loads it in 2 s.) */
typedef struct keep_job {
    const rf_table *t;
    const rf_type *types;
    int nkeys, size, rank, npieces;
    uint8_t *keep;
    size_t *start;           /* [npieces + 1]: kept rows before each piece, then in all */
    rf_table *part;
} keep_job;

/* The first row of piece p (p == npieces: the end). */
static size_t piece_row(const keep_job *j, int p)
{
    size_t q = j->t->nrows / (size_t)j->npieces, r = j->t->nrows % (size_t)j->npieces;
    return q * (size_t)p + ((size_t)p < r ? (size_t)p : r);
}

static void keep_mark(void *ctx, int piece)
{
    keep_job *j = ctx;
    size_t kept = 0;
    for (size_t i = piece_row(j, piece), end = piece_row(j, piece + 1); i < end; i++) {
        uint8_t k = rf_dist_row_rank(j->t, i, j->nkeys, j->types, j->size) == j->rank;
        j->keep[i] = k;
        kept += k;
    }
    j->start[piece + 1] = kept;
}

static void keep_gather(void *ctx, int piece)
{
    keep_job *j = ctx;
    size_t from = piece_row(j, piece), end = piece_row(j, piece + 1);
    for (int c = 0; c < j->t->arity; c++) {
        const rf_word *src = j->t->cols[c];
        rf_word *dst = j->part->cols[c] + j->start[piece];
        for (size_t i = from; i < end; i++)
            if (j->keep[i])
                *dst++ = src[i];
    }
}

static void keep_part(const rf_table *t, int nkeys, const rf_type *types, int size, int rank, rf_table *part)
{
    rf_table_init(part, t->arity);
    if (t->nrows == 0)
        return;
    size_t pieces = (size_t)rf_prims_threads() * 4, most = t->nrows / 16384;   /* pieces of >= 16K rows */
    if (pieces > most)
        pieces = most;
    keep_job j = {t, types, nkeys, size, rank, pieces < 1 ? 1 : (int)pieces, NULL, NULL, part};
    j.keep = rf_malloc(t->nrows);
    j.start = rf_calloc((size_t)j.npieces + 1, sizeof *j.start);
    rf_par_for(j.npieces, keep_mark, &j);
    for (int p = 0; p < j.npieces; p++)
        j.start[p + 1] += j.start[p];
    rf_table_resize(part, j.start[j.npieces]);
    if (t->arity > 0)
        rf_par_for(j.npieces, keep_gather, &j);
    free(j.keep);
    free(j.start);
}

/* An upload's check, and the placement it gives: hashed on the first
 * column. */
static bool upload_begins(rf_dvar *v, const rf_table *t, rf_status *st)
{
    if (t->arity != v->arity)
        return rf_fail(st, RF_EXIT_RUNTIME_ERROR, "upload: arity %d into a variable of arity %d", t->arity,
                       v->arity);
    v->d = hashed(default_prefix(t->arity));
    v->rows_known = false;
    return true;
}

static bool dist_upload(rf_backend *be, rf_dvar *v, const rf_table *t, rf_status *st)
{
    dist_impl *im = be->impl;
    if (!upload_begins(v, t, st))
        return false;
    if (im->solo)
        return im->inner->upload(im->inner, v->inner, t, st);
    rf_table part;
    keep_part(t, default_prefix(t->arity), v->types, im->comm->size, im->comm->rank, &part);
    bool ok = im->inner->upload(im->inner, v->inner, &part, st);
    rf_table_free(&part);
    return ok;
}

/* An input as read (neither sorted nor deduplicated): each rank keeps its
 * hash part first, then sorts only that (on the device where the inner
 * backend can). Equal rows hash alike, so deduplicating the parts
 * deduplicates the whole. (The runtime sorts a whole input on the host for
 * a backend without this entry: 60M rows of TPC-H SF 10's lineitem took a
 * GPU rank 50-75 s to load, against 2 s for one GPU.) */
/* t's rows (unsorted, duplicates allowed) as v's part: sorted and
 * deduplicated by the inner backend where it can, else on the host (in
 * own, a table the caller lets it sort in place, or in a copy of t). */
static bool inner_upload_unsorted(dist_impl *im, rf_dvar *v, const rf_table *t, rf_table *own, rf_status *st)
{
    if (im->inner->upload_unsorted)
        return im->inner->upload_unsorted(im->inner, v->inner, own ? own : t, st);
    rf_table copy;
    if (!own) {
        rf_table_init(&copy, t->arity);
        rf_table_copy(&copy, t);
    }
    rf_table *s = own ? own : &copy;
    rf_prim_sort_unique(s);
    bool ok = im->inner->upload(im->inner, v->inner, s, st);
    if (!own)
        rf_table_free(&copy);
    return ok;
}

static bool dist_upload_unsorted(rf_backend *be, rf_dvar *v, const rf_table *t, rf_status *st)
{
    dist_impl *im = be->impl;
    if (!upload_begins(v, t, st))
        return false;
    if (im->solo)
        return inner_upload_unsorted(im, v, t, NULL, st);
    rf_table part;
    keep_part(t, default_prefix(t->arity), v->types, im->comm->size, im->comm->rank, &part);
    bool ok = inner_upload_unsorted(im, v, &part, &part, st);
    rf_table_free(&part);
    return ok;
}

/* The whole relation on every rank (an all-gather), so that whatever the
 * runtime decides from downloaded rows (CHECK_KEYS) every rank decides
 * alike; outputs are then written by rank 0 alone (the CLI). */
static bool dist_download(rf_backend *be, const rf_dvar *cv, rf_table *t, rf_status *st)
{
    dist_impl *im = be->impl;
    rf_backend *in = im->inner;
    /* (every rank downloads alike, but an output gathered to rank 0: rank 0 alone) */
    if (!im->solo && !cv->gathered && !settled_ok(im, st))
        return false;
    if (im->solo || cv->d.kind == PLACE_REPLICATED || cv->gathered)
        return in->download(in, cv->inner, t, st);
    rf_table part;
    rf_table_init(&part, cv->arity);
    if (!in->download(in, cv->inner, &part, st))
        comm_failed(im, st->message);
    int *dest = rf_malloc(rf_mul_size(part.nrows + 1, sizeof *dest));
    for (size_t i = 0; i < part.nrows; i++)
        dest[i] = -1;
    rf_table all;
    exchange_rows(im, &part, dest, cv->types, cv->sorted, &all);
    free(dest);
    rf_table_free(&part);
    rf_table_move(t, &all);
    rf_table_free(&all);
    return true;
}

/* Row positions (RF_EX_ROWID, the row identities of bag bodies, design.md
 * "Row identities") are per rank: 0.. in each rank's part. A kernel that
 * outputs them as whole columns (proj[c] is `rowid(k)`) gets them made
 * global after it runs, each rank adding the rows of input k on the ranks
 * before it (rowid_offsets), which keeps them unique as one process's
 * are. One that reads them otherwise (in a filter, an expression, an
 * aggregate) runs on rank 0 alone, over all of its inputs. */
typedef enum rowid_use { ROWID_NONE, ROWID_PROJECTED, ROWID_OTHER } rowid_use;

static rowid_use kernel_rowid_use(const rf_kernel *k)
{
    if (rf_code_reads_rowid(&k->filter))
        return ROWID_OTHER;
    for (int i = 0; k->agg_arg && i < k->naggs; i++)
        if (rf_code_reads_rowid(&k->agg_arg[i]))
            return ROWID_OTHER;
    rowid_use use = ROWID_NONE;
    for (int i = 0; i < k->nproj; i++) {
        if (!rf_code_reads_rowid(&k->proj[i]))
            continue;
        if (k->proj[i].n != 1 || k->proj[i].ins[0].index < 0 || k->proj[i].ins[0].index > 1)
            return ROWID_OTHER;
        use = ROWID_PROJECTED;
    }
    return use;
}

/* offset[i]: the rows of input i on the ranks before this one (a
 * collective: each rank's counts, summed into one vector). */
static void rowid_offsets(dist_impl *im, rf_dvar *const *ins, uint64_t offset[2])
{
    rf_comm *c = im->comm;
    uint64_t *counts = rf_calloc((size_t)c->size * 2, sizeof *counts);
    for (int i = 0; i < 2; i++)
        counts[c->rank * 2 + i] = ins[i] ? im->inner->var_rows(im->inner, ins[i]->inner) : 0;
    char err[256];
    im->collectives++;
    if (!c->allreduce_u64(c, counts, c->size * 2, RF_COMM_SUM, err, sizeof err))
        comm_failed(im, err);
    offset[0] = offset[1] = 0;
    for (int r = 0; r < c->rank; r++)
        for (int i = 0; i < 2; i++)
            offset[i] += counts[r * 2 + i];
    free(counts);
}

/* add[c] added to column c of v's part here: in the backend where it can
 * (the GPU's rows never cross to the host and back: TPC-H q03's positions
 * cost rank 1 54 ms so at SF 10 on an H200), else through a host table. */
static bool add_to_columns(rf_backend *in, rf_dvar *v, const uint64_t *add, rf_status *st)
{
    return in->add_to_columns ? in->add_to_columns(in, v->inner, add, st)
                              : rf_add_to_columns_copy(in, v->inner, v->arity, add, st);
}

/* Adds the offsets to the position columns of this rank's output. */
static bool shift_rowids(dist_impl *im, const rf_kernel *k, rf_dvar *out, const uint64_t offset[2], rf_status *st)
{
    rf_backend *in = im->inner;
    if ((offset[0] == 0 && offset[1] == 0) || in->var_rows(in, out->inner) == 0)
        return true;
    uint64_t *add = rf_calloc((size_t)out->arity + 1, sizeof *add);
    for (int c = 0; c < k->nproj && c < out->arity; c++)
        if (rf_code_reads_rowid(&k->proj[c]))
            add[c] = offset[k->proj[c].ins[0].index];
    bool ok = add_to_columns(in, out, add, st);
    free(add);
    return ok;
}

/* Adds to each column c of this rank's output that holds row positions
 * (pos[c] >= 0) the rows of external input pos[c] on the ranks before
 * this one (a fused group run whole: run_fused_whole). Rows keep their
 * order: a set stays sorted and distinct. */
static bool shift_positions(dist_impl *im, rf_dvar *out, const int64_t *pos, const uint64_t *before, rf_status *st)
{
    rf_backend *in = im->inner;
    bool any = false;
    for (int c = 0; c < out->arity; c++)
        any |= pos[c] >= 0 && before[pos[c]] != 0;
    if (!any || in->var_rows(in, out->inner) == 0)
        return true;
    uint64_t *add = rf_calloc((size_t)out->arity + 1, sizeof *add);
    for (int c = 0; c < out->arity; c++)
        add[c] = pos[c] >= 0 ? before[pos[c]] : 0;
    bool ok = add_to_columns(in, out, add, st);
    free(add);
    return ok;
}

/* The placement a projection keeps: when the output has every hashed
 * column of one input as a plain column (first_col: where that input's
 * columns start among the kernel's, l ++ r for a JOIN), each output row
 * is on the rank of the input row it came from, which is the hash of
 * those columns of its own: hashed on the prefix where they stay in
 * place, else on the list of where they went (tc's delta re-keyed for its
 * join, `(y, x)` from `(x, y)` hashed on x, is hashed on column 1, so
 * neither its SORT nor the join's output moves). Else split. */
static dist projected(const rf_kernel *k, const rf_dvar *side, int first_col)
{
    const dist *sd = &side->d;
    if (sd->kind != PLACE_HASH || sd->nkeys < 1)
        return split();
    dist d = {PLACE_HASH, sd->nkeys, false, {0}};
    bool prefix = true;
    for (int i = 0; i < sd->nkeys; i++) {
        int in_col = first_col + (sd->listed ? sd->cols[i] : i), out = -1;
        if (i < k->nproj && rf_code_as_column(&k->proj[i]) == in_col)
            out = i;   /* in place first: a prefix stays a prefix */
        for (int j = 0; out < 0 && j < k->nproj; j++)
            if (rf_code_as_column(&k->proj[j]) == in_col)
                out = j;
        if (out < 0)
            return split();
        if (i < DIST_MAX_LISTED)
            d.cols[i] = out;
        prefix = prefix && out == i;
    }
    if (prefix)
        return d;
    if (sd->nkeys > DIST_MAX_LISTED)
        return split();
    d.listed = true;
    return d;
}

/* A JOIN's output placement: where the rows of its left side are, or of
 * its right side (a replicated side: the other one's). */
static dist joined(const rf_kernel *k, const rf_dvar *a, const rf_dvar *b)
{
    dist d = a->d.kind == PLACE_REPLICATED ? split() : projected(k, a, 0);
    if (d.kind == PLACE_SPLIT && b->d.kind != PLACE_REPLICATED)
        d = projected(k, b, a->arity);
    return d;
}

/* Both sides of a keyed operation hashed alike on a prefix of at most
 * nkeys columns (one already hashed so keeps its hash; else nkeys); a
 * replicated side moves for free. */
static void co_hash(rf_backend *be, rf_dvar *a, rf_dvar *b, int nkeys)
{
    int j = nkeys, pa = hash_prefix(a->d), pb = hash_prefix(b->d);
    if (pa >= 1 && pa <= nkeys)
        j = pa;
    else if (pb >= 1 && pb <= nkeys)
        j = pb;
    move_var(be, a, TO_HASH, j);
    move_var(be, b, TO_HASH, j);
}

/* Rows up to which the smaller side of a JOIN that would move is
 * replicated instead (RF_DIST_REPLICATE_ROWS; 0: never). */
#define DIST_REPLICATE_ROWS_DEFAULT ((size_t)1 << 22)

/* Brings a JOIN's sides (neither replicated) together: nothing where they
 * are hashed alike on a prefix of its keys already; else the smaller side
 * everywhere when it has at most im->replicate_rows rows (a copy per
 * rank, which stays: a loop's invariant side, tc's edge, moves once, and
 * the side that changes every iteration never moves for this join); else
 * both hashed alike (co_hash). Decided on global counts: alike on every
 * rank. */
static void join_inputs(rf_backend *be, rf_dvar *a, rf_dvar *b, int nkeys)
{
    dist_impl *im = be->impl;
    int pa = hash_prefix(a->d), pb = hash_prefix(b->d);
    if (pa >= 1 && pa <= nkeys && pa == pb)
        return;
    if (im->replicate_rows) {
        size_t ra = dist_var_rows(be, a), rb = dist_var_rows(be, b);
        if ((ra < rb ? ra : rb) <= im->replicate_rows) {
            move_var(be, rb <= ra ? b : a, TO_ALL, 0);
            return;
        }
    }
    co_hash(be, a, b, nkeys);
}

static bool set_empty(rf_backend *in, rf_dvar *v, rf_status *st)
{
    rf_table e;
    rf_table_init(&e, v->arity);
    bool ok = in->upload(in, v->inner, &e, st);
    rf_table_free(&e);
    v->rows_known = false;
    return ok;
}

/* A kernel's outcome on this rank (ok, else st) becomes the run's: false
 * on every rank when it failed on any. With RF_DIST_AGREE=kernel the
 * ranks agree now (the lowest failing rank's message); else a failure is
 * kept (the first on this rank, placed where kernel k comes from, as the
 * runtime would place it), k's outputs are left empty, this rank runs no
 * kernel from here on, and the ranks agree at the next count
 * (settle_failures): every rank goes on with true until then. */
static bool agree_on(rf_backend *be, const rf_kernel *k, rf_dvar *const *outs, int nout, bool ok, rf_status *st)
{
    dist_impl *im = be->impl;
    rf_comm *c = im->comm;
    if (im->agree_each) {
        uint64_t first = ok ? (uint64_t)c->size : (uint64_t)c->rank;
        control_allreduce(im, &first, 1, RF_COMM_MIN);
        if (first >= (uint64_t)c->size)
            return true;
        control_bcast_status(im, st, (int)first);
        return false;
    }
    if (ok)
        return true;
    if (!im->failed) {
        im->failed = true;
        im->fail_seq = im->kernel_seq;
        rf_status_locate(st, k->origin.where, k->origin.what ? k->origin.what : k->comment);
        st->placed = true;
        im->fail_st = *st;
    }
    rf_status_init(st);
    for (int i = 0; i < nout; i++)
        if (outs[i]) {
            rf_status ignored;
            rf_status_init(&ignored);
            (void)set_empty(im->inner, outs[i], &ignored);
        }
    return true;
}

/* One rank: the kernel as it is (a fused group too: the inner backend
 * runs it or declines it, RF_RUN_MEMBERS, as it would alone). */
static rf_run_result solo_run(dist_impl *im, const rf_hprogram *p, const rf_kernel *k, rf_dvar *const *outs,
                              rf_dvar *const *ins, rf_kernel_stats *stats, rf_status *st)
{
    int nout = k->op == RF_K_FUSED ? k->fused->nout : 1;
    int nin = k->op == RF_K_FUSED ? k->fused->nin : k->op == RF_K_MULTIJOIN ? k->mj->nin : 2;
    rf_dvar *inner_outs[RF_KERNEL_VARS_MAX], *inner_ins[RF_KERNEL_VARS_MAX];
    for (int i = 0; i < nout; i++)
        inner_outs[i] = outs[i] ? outs[i]->inner : NULL;
    for (int i = 0; i < nin; i++)
        inner_ins[i] = ins[i] ? ins[i]->inner : NULL;
    return im->inner->run(im->inner, p, k, inner_outs, inner_ins, stats, st);
}

/* A FUSED kernel: the semi-naive set gather `t := JOIN a, b; s := SORT t`
 * (also with a probe side's SORT of a first: rf_fused_probe_sort) runs
 * fused when its JOIN's inputs can be brought together (both hashed
 * on its keys): each rank joins its parts and deduplicates what it made
 * in one pass, as one process does; a set made where the join key lives
 * holds duplicates of other ranks' rows only when the JOIN's output is
 * not hashed on a prefix it keeps, and then it moves (hashed on its first
 * column, as the SORT member's input would) and is deduplicated again
 * where it lands, which is the same set. Any other group, or one that
 * the inner backend declines on any rank, runs as its members, each with
 * its own placement. */
static rf_run_result run_set_gather(rf_backend *be, const rf_hprogram *p, const rf_kernel *k, rf_dvar *const *outs,
                                    rf_dvar *const *ins, rf_kernel_stats *stats, rf_status *st)
{
    dist_impl *im = be->impl;
    rf_backend *in = im->inner;
    const rf_fused *f = k->fused;
    /* (a probe side's SORT first: its input is the JOIN's left side, as
     * it comes; the inner backend probes with it or sorts it) */
    int probe = rf_fused_probe_sort(p, f) ? 1 : 0;
    if (k->gather != RF_GATHER_SET || f->nmembers != 2 + probe || f->nout != 1 || f->nin != 2)
        return RF_RUN_MEMBERS;
    const rf_kernel *join = &f->members[probe], *sort = &f->members[probe + 1];
    int left = probe ? f->members[0].in[0] : join->in[0];
    rf_dvar *a = ins[0], *b = ins[1], *out = outs[0];
    if (join->op != RF_K_JOIN || sort->op != RF_K_SORT || sort->in[0] != join->out || join->nkeys < 1 ||
        f->in[0] != left || f->in[1] != join->in[1] || f->out[0] != sort->out || !a || !b ||
        !out->sorted || kernel_rowid_use(join) != ROWID_NONE ||
        (a->d.kind == PLACE_REPLICATED && b->d.kind == PLACE_REPLICATED))
        return RF_RUN_MEMBERS;
    if (a->d.kind != PLACE_REPLICATED && b->d.kind != PLACE_REPLICATED)
        join_inputs(be, a, b, join->nkeys);
    /* (a self-join replicated: every rank makes the whole set) */
    dist rows = a->d.kind == PLACE_REPLICATED && b->d.kind == PLACE_REPLICATED ? replicated() : joined(join, a, b);
    rf_dvar *inner_outs[1] = {out->inner}, *inner_ins[2] = {a->inner, b->inner};
    /* (a rank that failed before runs nothing: agree_on empties out) */
    rf_run_result res = im->failed ? RF_RUN_FAILED : in->run(in, p, k, inner_outs, inner_ins, stats, st);
    /* declined on some rank: the members, on every rank (they overwrite
     * whatever the group wrote; its inputs are as they were) */
    uint64_t declined = res == RF_RUN_MEMBERS;
    control_allreduce(im, &declined, 1, RF_COMM_MAX);
    if (declined)
        return RF_RUN_MEMBERS;
    if (!agree_on(be, k, outs, 1, res == RF_RUN_DONE, st))
        return RF_RUN_FAILED;
    out->rows_known = false;
    if (rows.kind == PLACE_HASH || rows.kind == PLACE_REPLICATED) {
        out->d = rows;
    } else {
        out->d = split();
        int v = f->out[0];
        if (im->sets_stay && v >= 0 && v < im->nvars && im->set_may_stay[v])
            im->sets_left++;   /* deduplicated again by every reader (set_may_stay) */
        else
            move_var(be, out, TO_HASH, default_prefix(out->arity));
    }
    return RF_RUN_DONE;
}

/* ---- Fused groups run whole on each rank ----
 * A fused group (Kernel Weaver) whose internal variables never have to
 * move runs whole on each rank over its part, as in one process. Its
 * members are walked in order with the placement each internal variable
 * would have (a MAP keeps its input's hash where it projects the hashed
 * columns, a JOIN its sides', a SORT, AGG or DIFF its input's), and each
 * member's need is met: a SORT's equal rows on one rank (hashed or
 * replicated), a JOIN's, ANTIJOIN's, UNION's or DIFF's matching rows on
 * one rank (sides hashed alike on a prefix of their keys, or one
 * replicated), a keyed AGG's groups on one rank. An external input not
 * read by an earlier member may move for it (as it would for the member
 * alone: both sides external, join_inputs; one, hashed as the other side
 * is, or everywhere when small); an internal one cannot, and the group
 * then runs as its members, one by one, each moving what it needs.
 *
 * Row positions (RF_EX_ROWID: a bag body's row identities) are per rank:
 * where a member projects them, or copies a column that holds them, the
 * walk follows each output column to the external input whose rows bound
 * the positions (a position in a MAP's, SORT's, AGG's or DIFF's output is
 * below its input's rows); after the run each rank adds the rows of that
 * input on the ranks before it, as shift_rowids does for a lone kernel,
 * so that they stay unique: rows holding positions are never equal on two
 * ranks, so a SORT of them deduplicates where they are, placed as they
 * may be. A filter, an aggregate or an expression other
 * than a copy reading them, a key or a set operation over them, or
 * positions in a JOIN's output: as members. Before, every fused group but
 * the set gathers ran as its members: TPC-H on two GPUs lost fusion's
 * 1.6-6x (docs/performance.md). */
static bool pair_meets(dist a, dist b, int nkeys)
{
    if (a.kind == PLACE_REPLICATED || b.kind == PLACE_REPLICATED)
        return true;
    int pa = hash_prefix(a), pb = hash_prefix(b);
    return nkeys > 0 && pa >= 1 && pa <= nkeys && pa == pb;
}

/* Whether member mk, run on each rank's parts of a and b (b NULL for one
 * input) as they are placed, makes the parts of its whole answer (the
 * needs in the table of docs/design.md, "Distribution"). apart: a's rows
 * hold row positions, so no two ranks hold equal ones. */
static bool member_need_met(const rf_kernel *mk, dist a, const dist *b, bool apart)
{
    switch (mk->op) {
    case RF_K_MAP:
        return true;
    case RF_K_SORT:   /* equal rows on one rank */
        return a.kind != PLACE_SPLIT || apart;
    case RF_K_AGG:    /* a group's rows on one rank */
        return a.kind == PLACE_REPLICATED || (mk->nkeys > 0 && hash_prefix(a) >= 1 && hash_prefix(a) <= mk->nkeys);
    case RF_K_JOIN:   /* each matching pair on one rank */
        return b && pair_meets(a, *b, mk->nkeys);
    case RF_K_ANTIJOIN:   /* every row of b a row of a could match, where that row is */
        return b && (b->kind == PLACE_REPLICATED || (a.kind != PLACE_REPLICATED && pair_meets(a, *b, mk->nkeys)));
    case RF_K_UNION:
    case RF_K_DIFF:   /* equal rows of both sides on one rank */
        return b && ((mk->op == RF_K_DIFF && b->kind == PLACE_REPLICATED) ||
                     (a.kind == PLACE_REPLICATED && b->kind == PLACE_REPLICATED) ||
                     (a.kind == PLACE_HASH && same_dist(a, *b)));
    default:
        return false;
    }
}

/* Moves the external input e so that its rows meet the other side's (a
 * placement d) on the first nkeys columns; false where that cannot be. */
static bool meet(rf_backend *be, rf_dvar *e, dist d, int nkeys)
{
    dist_impl *im = be->impl;
    int p = hash_prefix(d);
    if (p >= 1 && p <= nkeys) {
        move_var(be, e, TO_HASH, p);
        return true;
    }
    if (im->replicate_rows && dist_var_rows(be, e) <= im->replicate_rows) {
        move_var(be, e, TO_ALL, 0);
        return true;
    }
    return false;
}

/* The columns of a member's code that read row positions: -1 none, -2
 * some way other than a copy; else the "bound" it copies (below). */
typedef struct fw_var {
    rf_dvar view;        /* d and arity: the placement the walk gives it */
    int bound;           /* the external input (index into f->in) whose rows bound a position here, -1 none */
    int64_t *pos;        /* [arity]: column c holds positions bounded by external input pos[c], or -1 */
} fw_var;

/* Where output column j of member mk takes positions from: code c over
 * the inputs' columns (cols: the inputs' pos arrays laid end to end, l ++
 * r), and the bounds of its inputs (rowid(i) reads input i's). -1: none;
 * -2: it reads positions other than by copying them (the group runs as
 * members). */
static int64_t code_pos(const rf_code *c, const int64_t *cols, int ncols, const int bound_of[2])
{
    int col = rf_code_as_column(c);
    if (col >= 0)
        return col < ncols ? cols[col] : -2;
    if (c->n == 1 && c->ins[0].op == RF_EX_ROWID)
        return c->ins[0].index >= 0 && c->ins[0].index <= 1 && bound_of[c->ins[0].index] >= 0 ? bound_of[c->ins[0].index]
                                                                                                  : -2;
    for (int k = 0; k < c->n; k++) {
        if (c->ins[k].op == RF_EX_ROWID)
            return -2;
        if (c->ins[k].op == RF_EX_COL && (c->ins[k].index >= ncols || cols[c->ins[k].index] != -1))
            return -2;
    }
    return -1;
}

/* The members of f reading variable v. */
static int group_readers(const rf_fused *f, int v)
{
    int n = 0;
    for (int m = 0; m < f->nmembers; m++)
        n += (f->members[m].in[0] == v) + (f->members[m].in[1] == v);
    return n;
}

/* A group that ends in a keyed AGG over a chain of members that carry
 * columns through (a SORT; a MAP's plain columns; a JOIN's columns of one
 * side, its other side replicated): the AGG needs its groups' rows on one
 * rank, and the walk below can only have an external input moved for the
 * member that reads it first, which needs nothing (a MAP) or the JOIN's
 * keys. So before the walk, the AGG's key columns are followed back to
 * the external input e they come from, and e is moved hashed on those
 * columns, in key order (a listed hash: move_var_cols), the JOIN's other
 * side everywhere (where it is small): the chain's projections then carry
 * the hash to the AGG's key prefix (projected). Nothing moves where the
 * placements as they are already meet every need of the chain. TPC-H
 * q13's MAP -> SORT -> AGG and q08's JOIN -> SORT -> AGG ran as their
 * members before (q15's, q17's and q20's still do: their MAPs filter or
 * narrow lineitem, below). */
static void hash_for_keys(rf_backend *be, const rf_hprogram *p, const rf_fused *f, rf_dvar *const *ins)
{
    dist_impl *im = be->impl;
    const rf_kernel *agg = &f->members[f->nmembers - 1];
    if (agg->op != RF_K_AGG || agg->nkeys < 1 || agg->nkeys > DIST_MAX_LISTED)
        return;
    int need[DIST_MAX_LISTED], chain[RF_FUSED_MAX], nchain = 0, other[RF_FUSED_MAX], sides[RF_FUSED_MAX], e = -1;
    for (int k = 0; k < agg->nkeys; k++)
        need[k] = k;
    other[0] = -1;
    sides[0] = 0;
    chain[nchain++] = f->nmembers - 1;
    int var = agg->in[0];
    for (int m = f->nmembers - 2; e < 0; m--) {
        for (int x = 0; x < f->nin && e < 0; x++)
            if (f->in[x] == var && ins[x])
                e = x;
        if (e >= 0)
            break;
        while (m >= 0 && f->members[m].out != var)
            m--;
        if (m < 0 || group_readers(f, var) != 1)
            return;
        const rf_kernel *mk = &f->members[m];
        int side = 0;
        other[nchain] = -1;
        /* Moving e costs as much as moving what the members would move
         * instead only where each MAP keeps every row and is no narrower
         * than its input (else e crosses with rows or columns the MAP
         * drops: TPC-H q15's date filter keeps 4% of lineitem) and a JOIN
         * reads e itself (below: e would move for the JOIN anyway). */
        if (mk->op == RF_K_MAP && (mk->filter.n > 0 || mk->in[0] < 0 ||
                                   p->vars[mk->out].arity < p->vars[mk->in[0]].arity))
            return;
        if (nchain > 1 && f->members[chain[nchain - 1]].op == RF_K_JOIN)
            return;   /* a JOIN only at the chain's head */
        if (mk->op == RF_K_MAP || mk->op == RF_K_JOIN) {
            int na = mk->op == RF_K_JOIN && mk->in[0] >= 0 ? p->vars[mk->in[0]].arity : INT32_MAX;
            for (int k = 0; k < agg->nkeys; k++) {
                int c = need[k] < mk->nproj ? rf_code_as_column(&mk->proj[need[k]]) : -1;
                if (c < 0 || (k > 0 && (c >= na) != side))
                    return;
                side = c >= na;
                need[k] = side ? c - na : c;
            }
            if (mk->op == RF_K_JOIN) {   /* the other side: an external input, replicated below */
                int ov = mk->in[1 - side];
                for (int x = 0; x < f->nin && other[nchain] < 0; x++)
                    if (f->in[x] == ov && ins[x] && group_readers(f, ov) == 1)
                        other[nchain] = x;
                if (other[nchain] < 0)
                    return;
            }
        } else if (mk->op != RF_K_SORT) {
            return;
        }
        sides[nchain] = side;
        chain[nchain++] = m;
        var = mk->in[side];
    }
    if (group_readers(f, f->in[e]) != 1)
        return;
    /* the placements as they are, carried down the chain: every need met? */
    rf_dvar here;
    memset(&here, 0, sizeof here);
    here.d = ins[e]->d;
    here.arity = ins[e]->arity;
    bool met = true, head_met = false;
    for (int i = nchain - 1; i >= 0 && met; i--) {
        const rf_kernel *mk = &f->members[chain[i]];
        if (mk->op == RF_K_JOIN) {
            const rf_dvar *o = ins[other[i]], *l = sides[i] ? o : &here, *r = sides[i] ? &here : o;
            met = head_met = member_need_met(mk, l->d, &r->d, false);   /* (a JOIN is the head) */
            here.d = l->d.kind == PLACE_REPLICATED && r->d.kind == PLACE_REPLICATED ? replicated() : joined(mk, l, r);
        } else {
            met = member_need_met(mk, here.d, NULL, false);
            if (mk->op == RF_K_MAP)
                here.d = here.d.kind == PLACE_REPLICATED ? replicated() : projected(mk, &here, 0);
        }
        here.arity = p->vars[mk->out].arity;
    }
    /* (a JOIN whose sides meet as they are: the members move only its
     * output, which may be the smaller) */
    if (met || head_met)
        return;
    for (int i = 0; i < nchain; i++)
        if (other[i] >= 0 && ins[other[i]]->d.kind != PLACE_REPLICATED &&
            !(im->replicate_rows && dist_var_rows(be, ins[other[i]]) <= im->replicate_rows))
            return;   /* a side too large to copy everywhere: the walk decides */
    for (int i = 0; i < nchain; i++)
        if (other[i] >= 0)
            move_var(be, ins[other[i]], TO_ALL, 0);
    move_var_cols(be, ins[e], TO_HASH, agg->nkeys, need);
}

static rf_run_result run_fused_whole(rf_backend *be, const rf_hprogram *p, const rf_kernel *k, rf_dvar *const *outs,
                                     rf_dvar *const *ins, rf_kernel_stats *stats, rf_status *st)
{
    dist_impl *im = be->impl;
    rf_backend *in = im->inner;
    const rf_fused *f = k->fused;
    if (!im->fused_whole || f->nin > RF_KERNEL_VARS_MAX)
        return RF_RUN_MEMBERS;
    for (int m = 0; m < f->nmembers; m++)
        if (f->members[m].op == RF_K_MULTIJOIN || kernel_rowid_use(&f->members[m]) == ROWID_OTHER)
            return RF_RUN_MEMBERS;
    hash_for_keys(be, p, f, ins);   /* (every rank alike, failed or not: its moves are collectives) */
    fw_var *mv = rf_calloc((size_t)f->nmembers, sizeof *mv);   /* each member's output */
    fw_var *ev = rf_calloc((size_t)f->nin, sizeof *ev);        /* each external input */
    bool *read = rf_calloc((size_t)f->nin, sizeof *read);      /* by a member walked */
    for (int e = 0; e < f->nin; e++) {
        int ar = p->vars[f->in[e]].arity;
        ev[e].pos = rf_malloc(((size_t)ar + 1) * sizeof *ev[e].pos);
        for (int c = 0; c < ar; c++)
            ev[e].pos[c] = -1;
        ev[e].bound = e;
    }
    bool ok = true, positions = false;
    for (int m = 0; ok && m < f->nmembers; m++) {
        const rf_kernel *mk = &f->members[m];
        fw_var *side[2] = {NULL, NULL};
        int ext[2] = {-1, -1};
        for (int i = 0; i < 2 && ok; i++) {
            if (mk->in[i] < 0)
                continue;
            for (int e = 0; e < f->nin && ext[i] < 0; e++)
                if (f->in[e] == mk->in[i] && ins[e])
                    ext[i] = e;
            for (int j = m - 1; ext[i] < 0 && !side[i] && j >= 0; j--)
                if (f->members[j].out == mk->in[i])
                    side[i] = &mv[j];
            if (ext[i] >= 0) {
                side[i] = &ev[ext[i]];
                side[i]->view = *ins[ext[i]];
            }
            ok = side[i] != NULL;
        }
        if (!ok)
            break;
        /* an external side not read before may move: as the member alone would */
        bool mov[2] = {ext[0] >= 0 && !read[ext[0]], ext[1] >= 0 && !read[ext[1]]};
        fw_var *a = side[0], *b = side[1];
        bool apart = false;   /* (a SORT's rows holding row positions: see the top) */
        for (int c = 0; c < a->view.arity; c++)
            apart |= a->pos[c] >= 0;
        bool met = member_need_met(mk, a->view.d, b ? &b->view.d : NULL, apart);
        switch (met ? RF_K_COUNT_ : mk->op) {
        case RF_K_SORT:
            if (mov[0])
                move_var(be, ins[ext[0]], TO_HASH, default_prefix(a->view.arity));
            break;
        case RF_K_AGG:
            if (mov[0])
                move_var(be, ins[ext[0]], mk->nkeys ? TO_HASH : TO_ALL, mk->nkeys);
            break;
        case RF_K_JOIN:
        case RF_K_ANTIJOIN:
        case RF_K_UNION:
        case RF_K_DIFF: {
            bool keyed = mk->op == RF_K_JOIN || mk->op == RF_K_ANTIJOIN;
            if (mov[0] && mov[1] && ins[ext[0]] != ins[ext[1]]) {
                rf_dvar *x = ins[ext[0]], *y = ins[ext[1]];
                if (keyed && mk->nkeys == 0) {   /* a cross product, an antijoin with no keys */
                    size_t rx = dist_var_rows(be, x), ry = dist_var_rows(be, y);
                    move_var(be, mk->op == RF_K_ANTIJOIN || ry <= rx ? y : x, TO_ALL, 0);
                } else if (mk->op == RF_K_JOIN) {
                    join_inputs(be, x, y, mk->nkeys);
                } else if (keyed) {
                    co_hash(be, x, y, mk->nkeys);
                } else {   /* as a lone UNION or DIFF: hashed as one of them is, else on the first column */
                    int j = hash_prefix(x->d) ? hash_prefix(x->d) : hash_prefix(y->d) ? hash_prefix(y->d)
                                                                                      : default_prefix(x->arity);
                    move_var(be, x, TO_HASH, j);
                    move_var(be, y, TO_HASH, j);
                }
            } else if (mov[1]) {   /* to the other side as it is */
                (void)meet(be, ins[ext[1]], a->view.d, keyed ? mk->nkeys : hash_prefix(a->view.d));
            } else if (mov[0]) {
                (void)meet(be, ins[ext[0]], b->view.d, keyed ? mk->nkeys : hash_prefix(b->view.d));
            }
            break;
        }
        default:   /* (met, or a MAP: nothing to move) */
            break;
        }
        /* the sides as they are now, and the need checked again */
        for (int i = 0; i < 2; i++)
            if (ext[i] >= 0) {
                side[i]->view = *ins[ext[i]];
                read[ext[i]] = true;
            }
        ok = member_need_met(mk, a->view.d, b ? &b->view.d : NULL, apart);
        if (!ok)
            break;
        dist out = a->view.d;   /* (SORT, AGG, ANTIJOIN, UNION, DIFF: their first input's) */
        if (mk->op == RF_K_MAP)
            out = a->view.d.kind == PLACE_REPLICATED ? replicated() : projected(mk, &a->view, 0);
        else if (mk->op == RF_K_JOIN)
            out = a->view.d.kind == PLACE_REPLICATED && b->view.d.kind == PLACE_REPLICATED ? replicated()
                                                                                          : joined(mk, &a->view, &b->view);
        /* where the output's columns take row positions from */
        int ar = p->vars[mk->out].arity, na = a->view.arity, nb = b ? b->view.arity : 0;
        mv[m].view.d = out;
        mv[m].view.arity = ar;
        mv[m].pos = rf_malloc(((size_t)ar + 1) * sizeof *mv[m].pos);
        int64_t *cols = rf_malloc(((size_t)na + (size_t)nb + 1) * sizeof *cols);
        memcpy(cols, a->pos, (size_t)na * sizeof *cols);
        if (b)
            memcpy(cols + na, b->pos, (size_t)nb * sizeof *cols);
        bool any_in = false;
        for (int c = 0; c < na + nb; c++)
            any_in |= cols[c] != -1;
        /* a position in a JOIN's output has no bound known before the run */
        int bound_of[2] = {a->bound, mk->op == RF_K_JOIN ? (b ? b->bound : -1) : -1};
        mv[m].bound = mk->op == RF_K_JOIN || mk->op == RF_K_UNION ? -1 : a->bound;
        for (int c = 0; c < ar; c++)
            mv[m].pos[c] = -1;
        switch (mk->op) {
        case RF_K_MAP:
        case RF_K_JOIN:
            ok = code_pos(&mk->filter, cols, na + nb, bound_of) == -1;
            for (int c = 0; ok && c < ar && c < mk->nproj; c++) {
                mv[m].pos[c] = code_pos(&mk->proj[c], cols, na + nb, bound_of);
                ok = mv[m].pos[c] != -2;
            }
            break;
        case RF_K_SORT:
            memcpy(mv[m].pos, a->pos, (size_t)ar * sizeof *mv[m].pos);
            break;
        case RF_K_AGG:
            for (int c = 0; ok && c < mk->nkeys; c++)
                ok = cols[c] == -1;   /* (a group a row: its position would be in the output) */
            for (int j = 0; ok && mk->agg_arg && j < mk->naggs; j++)
                ok = code_pos(&mk->agg_arg[j], cols, na, bound_of) == -1;
            break;
        default:   /* set operations over positions: rows of two inputs would meet */
            ok = !any_in;
            if (ok && b)
                memcpy(mv[m].pos, a->pos, (size_t)ar * sizeof *mv[m].pos);
            break;
        }
        for (int c = 0; ok && c < ar; c++)
            positions |= mv[m].pos[c] >= 0;
        free(cols);
    }
    /* the external outputs: their placements and position columns */
    dist made[RF_FUSED_MAX];
    int64_t *shift_of[RF_FUSED_MAX] = {0};
    for (int o = 0; ok && o < f->nout; o++) {
        int m = f->nmembers - 1;
        while (m >= 0 && f->members[m].out != f->out[o])
            m--;
        ok = m >= 0 && mv[m].pos;
        if (ok) {
            made[o] = mv[m].view.d;
            shift_of[o] = mv[m].pos;
        }
    }
    /* each external input's rows on the ranks before this one (one
     * all-reduce; only where positions reach an output) */
    uint64_t *before = NULL;
    if (ok && positions) {
        rf_comm *c = im->comm;
        uint64_t *counts = rf_calloc((size_t)c->size * (size_t)f->nin, sizeof *counts);
        for (int e = 0; e < f->nin; e++)
            counts[(size_t)c->rank * f->nin + e] = ins[e] ? in->var_rows(in, ins[e]->inner) : 0;
        control_allreduce(im, counts, c->size * f->nin, RF_COMM_SUM);
        before = rf_calloc((size_t)f->nin, sizeof *before);
        for (int r = 0; r < c->rank; r++)
            for (int e = 0; e < f->nin; e++)
                before[e] += counts[(size_t)r * f->nin + e];
        free(counts);
    }
    rf_run_result res = RF_RUN_MEMBERS;
    if (ok) {
        rf_dvar *inner_outs[RF_KERNEL_VARS_MAX], *inner_ins[RF_KERNEL_VARS_MAX];
        for (int o = 0; o < f->nout; o++)
            inner_outs[o] = outs[o]->inner;
        for (int i = 0; i < f->nin; i++)
            inner_ins[i] = ins[i] ? ins[i]->inner : NULL;
        res = im->failed ? RF_RUN_FAILED : in->run(in, p, k, inner_outs, inner_ins, stats, st);
        uint64_t declined = res == RF_RUN_MEMBERS;   /* on some rank: the members, on every rank */
        control_allreduce(im, &declined, 1, RF_COMM_MAX);
        if (declined) {
            res = RF_RUN_MEMBERS;
        } else {
            bool done = res == RF_RUN_DONE;
            for (int o = 0; done && positions && o < f->nout; o++)
                done = shift_positions(im, outs[o], shift_of[o], before, st);
            res = agree_on(be, k, outs, f->nout, done, st) ? RF_RUN_DONE : RF_RUN_FAILED;
            for (int o = 0; res == RF_RUN_DONE && o < f->nout; o++) {
                outs[o]->d = made[o];
                outs[o]->rows_known = false;
            }
            im->fused_whole_runs += res == RF_RUN_DONE;
        }
    }
    for (int m = 0; m < f->nmembers; m++)
        free(mv[m].pos);
    for (int e = 0; e < f->nin; e++)
        free(ev[e].pos);
    free(mv);
    free(ev);
    free(read);
    free(before);
    return res;
}

/* ---- Keyless aggregates folded per rank ----
 * A keyless aggregate (a count, a total) would have every row of its input
 * sent to every rank. Where each of its aggregates folds exactly from
 * partial results, each rank folds its own rows instead (the kernel as it
 * is, a fused reducing gather too), the partial rows (at most one a rank)
 * go everywhere, and every rank folds them (count -> total of the counts,
 * total, min, max of the partials): the same one row, replicated. Exact:
 * counts and integer and decimal totals add exactly (a float total's
 * result depends on the order of its rows, so it does not fold; neither do
 * avg and count-distinct). A partial total that overflows its type where
 * the whole would not, or any failure of a rank's partial, sends every
 * rank the way it went before (every row everywhere), which reports what
 * one process reports.
 *
 * With keys (a TPC-H grouping of many rows into a handful of groups would
 * otherwise send each row to its group's rank: q12 under two ranks sent
 * 7,823 rows, folded 2), each rank folds its own rows by group the
 * same way, and where the partial rows of all ranks together are few
 * (RF_DIST_FOLD_KEYED_ROWS; the environment variable of that name sets
 * another, for tests) and at most a quarter of the rows they fold, they
 * go everywhere and every rank folds them
 * by group in host memory (the CPU's aggregation over the partial rows
 * sorted by group, a row number keeping equal partial rows of two ranks
 * apart): the same rows, replicated. More partial rows than that: the
 * partial rows are dropped and the AGG runs as before. */
#define RF_DIST_FOLD_KEYED_ROWS 65536

/* Whether an avg of `arg` folds: of integers or decimals (an exact total
 * and a count fold; a float total depends on the order of its rows). */
static bool avg_folds(const rf_code *arg)
{
    if (!arg || arg->n < 1)
        return false;
    rf_type t = (rf_type)arg->ins[arg->n - 1].type;
    return t == RF_TYPE_INT32 || t == RF_TYPE_INT64 || rf_type_is_decimal(t);
}

/* Whether AGG `agg` (in program p) folds from partial results. */
static bool agg_folds(const rf_hprogram *p, const rf_kernel *agg)
{
    if (agg->op != RF_K_AGG || agg->naggs < 1 || agg->out < 0 || agg->out >= p->nvars ||
        !p->vars[agg->out].types || kernel_rowid_use(agg) != ROWID_NONE)
        return false;
    const rf_type *rt = p->vars[agg->out].types + agg->nkeys;
    for (int j = 0; j < agg->naggs; j++) {
        rf_aggfn fn = agg->aggfn[j];
        if (fn == RF_AGG_AVG && avg_folds(&agg->agg_arg[j]))
            continue;
        if (!(fn == RF_AGG_COUNT || fn == RF_AGG_MIN || fn == RF_AGG_MAX ||
              (fn == RF_AGG_TOTAL && rt[j] != RF_TYPE_FLOAT64)))
            return false;
    }
    return true;
}

static bool has_avg(const rf_kernel *agg)
{
    for (int j = 0; j < agg->naggs; j++)
        if (agg->aggfn[j] == RF_AGG_AVG)
            return true;
    return false;
}

/* Whether aggregate `agg` is folded per rank in this run. With keys, only
 * where one is a string: categorical keys (a status, a nation, a mode)
 * have few values, and rows with strings are the costly ones to move (on
 * GPUs they go through host tables); a fold that finds too many partial
 * rows has spent a local aggregation for nothing (TPC-H SF 1 q18 under two
 * CPU ranks, grouping by order keys: 0.84 -> 1.58 s when every keyed
 * aggregate was tried). RF_DIST_FOLD_KEYED=all tries every one. */
static bool folds_here(const dist_impl *im, const rf_hprogram *p, const rf_kernel *agg)
{
    if (!im->fold || !agg_folds(p, agg))
        return false;
    if (agg->nkeys == 0)
        return true;
    if (!im->fold_keyed)
        return false;
    return im->fold_keyed_all || has_strings(p->vars[agg->out].types, agg->nkeys);
}

/* s := the partial rows t (keys first) sorted by group as a SORT orders
 * rows (unsigned words), with each row's number after the keys: equal
 * partial rows of two ranks stay two rows through the sort. */
static void sort_partials(const rf_table *t, int nk, rf_table *s)
{
    rf_table u;
    rf_table_init(&u, t->arity + 1);
    rf_table_resize(&u, t->nrows);
    for (size_t i = 0; i < t->nrows; i++) {
        for (int c = 0; c < nk; c++)
            u.cols[c][i] = t->cols[c][i];
        u.cols[nk][i] = (rf_word)i;
        for (int c = nk; c < t->arity; c++)
            u.cols[c + 1][i] = t->cols[c][i];
    }
    rf_prim_sort(&u, s);
    rf_table_free(&u);
}

/* out := the partial rows t (every rank's, arity nkeys + naggs) folded by
 * group in host memory, sorted as a SORT leaves rows: a count becomes a
 * total of the counts, a total a total, a min a min. */
static bool fold_by_group(const rf_hprogram *p, const rf_kernel *agg, const rf_table *t, rf_table *out,
                          rf_status *st)
{
    int nk = agg->nkeys, na = agg->naggs;
    const rf_type *rt = p->vars[agg->out].types;
    rf_table s;
    sort_partials(t, nk, &s);
    rf_aggfn *fns = rf_malloc((size_t)na * sizeof *fns);
    rf_instr *cols = rf_calloc((size_t)na, sizeof *cols);
    rf_code *args = rf_malloc((size_t)na * sizeof *args);
    for (int j = 0; j < na; j++) {
        fns[j] = agg->aggfn[j] == RF_AGG_COUNT ? RF_AGG_TOTAL : agg->aggfn[j];
        cols[j].op = RF_EX_COL;
        cols[j].type = (uint8_t)rt[nk + j];
        cols[j].index = nk + 1 + j;
        args[j] = (rf_code){1, &cols[j]};
    }
    bool ok = rf_prim_aggregate_multi(&s, nk, na, fns, rt + nk, args, out, st);
    rf_table_free(&s);
    free(fns);
    free(cols);
    free(args);
    return ok;
}

/* The partial of an aggregate with avg: each avg a total of its argument
 * (integers as int64) and one count of the group's rows after the
 * aggregates, into a variable of its own (a copy of the program with one
 * more), so that the partial rows of all ranks fold exactly: the totals'
 * exact sum over the counts' (rf_avg_exact), as one process averages. */
typedef struct avg_partial {
    rf_hprogram prog;
    rf_type *types;
    rf_aggfn *fns;
    rf_code *args;
    rf_kernel agg;
    rf_kernel *members;
    rf_fused fused;
    int fout[1];
    rf_kernel k;             /* what runs: the AGG, or the group around it */
} avg_partial;

static void avg_partial_make(const rf_hprogram *p, const rf_kernel *k, const rf_kernel *agg, avg_partial *ap)
{
    memset(ap, 0, sizeof *ap);
    int nk = agg->nkeys, na = agg->naggs, v = p->nvars;
    const rf_type *rt = p->vars[agg->out].types;
    ap->types = rf_malloc((size_t)(nk + na + 1) * sizeof *ap->types);
    ap->fns = rf_malloc((size_t)(na + 1) * sizeof *ap->fns);
    ap->args = rf_calloc((size_t)(na + 1), sizeof *ap->args);
    memcpy(ap->types, rt, (size_t)nk * sizeof *rt);
    for (int j = 0; j < na; j++) {
        ap->fns[j] = agg->aggfn[j];
        ap->args[j] = agg->agg_arg[j];
        ap->types[nk + j] = rt[nk + j];
        if (agg->aggfn[j] == RF_AGG_AVG) {
            rf_type at = (rf_type)agg->agg_arg[j].ins[agg->agg_arg[j].n - 1].type;
            ap->fns[j] = RF_AGG_TOTAL;
            ap->types[nk + j] = rf_type_is_decimal(at) ? at : RF_TYPE_INT64;
        }
    }
    ap->fns[na] = RF_AGG_COUNT;
    ap->types[nk + na] = RF_TYPE_INT64;
    ap->prog = *p;
    ap->prog.vars = rf_malloc((size_t)(v + 1) * sizeof *ap->prog.vars);
    memcpy(ap->prog.vars, p->vars, (size_t)v * sizeof *p->vars);
    ap->prog.vars[v] = p->vars[agg->out];
    ap->prog.vars[v].arity = nk + na + 1;
    ap->prog.vars[v].types = ap->types;
    ap->prog.vars[v].is_output = false;
    ap->prog.nvars = v + 1;
    ap->agg = *agg;
    ap->agg.naggs = na + 1;
    ap->agg.aggfn = ap->fns;
    ap->agg.agg_arg = ap->args;
    ap->agg.out = v;
    ap->k = ap->agg;
    if (k != agg) {   /* the group's last member */
        ap->fused = *k->fused;
        ap->members = rf_malloc((size_t)ap->fused.nmembers * sizeof *ap->members);
        memcpy(ap->members, k->fused->members, (size_t)ap->fused.nmembers * sizeof *ap->members);
        ap->members[ap->fused.nmembers - 1] = ap->agg;
        ap->fused.members = ap->members;
        ap->fout[0] = v;
        ap->fused.nout = 1;
        ap->fused.out = ap->fout;
        ap->k = *k;
        ap->k.fused = &ap->fused;
        ap->k.out = v;
    }
}

static void avg_partial_free(avg_partial *ap)
{
    free(ap->types);
    free(ap->fns);
    free(ap->args);
    free(ap->prog.vars);
    free(ap->members);
}

/* out := avg_partial's rows t (every rank's: keys, the partial values, the
 * count) folded by group in host memory, sorted as a SORT leaves rows. */
static bool fold_avg_partials(const rf_hprogram *p, const rf_kernel *agg, const rf_table *t, rf_table *out,
                              rf_status *st)
{
    int nk = agg->nkeys, na = agg->naggs;
    const rf_type *rt = p->vars[agg->out].types;
    rf_table s;
    sort_partials(t, nk, &s);
    rf_table_init(out, nk + na);
    rf_word *row = rf_malloc((size_t)(nk + na + 1) * sizeof *row);
    bool ok = true;
    for (size_t b = 0; ok && b < s.nrows;) {
        size_t e = b + 1;
        while (e < s.nrows) {
            bool same = true;
            for (int c = 0; same && c < nk; c++)
                same = s.cols[c][e] == s.cols[c][b];
            if (!same)
                break;
            e++;
        }
        for (int c = 0; c < nk; c++)
            row[c] = s.cols[c][b];
        rf_sum128 rows = {0, 0};
        for (size_t i = b; i < e; i++)
            rf_sum128_add(&rows, rf_word_to_int(s.cols[nk + 1 + na][i]));
        for (int j = 0; ok && j < na; j++) {
            const rf_word *col = s.cols[nk + 1 + j];
            rf_type ty = rt[nk + j];
            rf_word acc = col[b];
            rf_sum128 sum = {0, 0};
            int64_t v;
            switch (agg->aggfn[j]) {
            case RF_AGG_MIN:
            case RF_AGG_MAX:
                for (size_t i = b + 1; i < e; i++) {
                    int cmp = rf_value_compare(ty, col[i], acc);
                    if (agg->aggfn[j] == RF_AGG_MIN ? cmp < 0 : cmp > 0)
                        acc = col[i];
                }
                break;
            case RF_AGG_COUNT:
            case RF_AGG_TOTAL:
                for (size_t i = b; i < e; i++)
                    rf_sum128_add(&sum, rf_word_to_int(col[i]));
                if (rf_sum128_to_i64(sum, &v) && rf_total_fits(ty, v))
                    acc = rf_word_from_int(v);
                else
                    ok = rf_scalar_fail2(st, RF_SERR_TOTAL_RANGE, sum.lo, (uint64_t)sum.hi, (int)ty);
                break;
            case RF_AGG_AVG: {
                rf_type at = (rf_type)agg->agg_arg[j].ins[agg->agg_arg[j].n - 1].type;
                for (size_t i = b; i < e; i++)
                    rf_sum128_add(&sum, rf_word_to_int(col[i]));
                int64_t n = 0;
                (void)rf_sum128_to_i64(rows, &n);
                acc = rf_word_from_double(rf_avg_exact(sum, (uint64_t)n, rf_type_is_decimal(at) ? rf_decimal_scale(at) : 0));
                break;
            }
            default:
                ok = rf_fail(st, RF_EXIT_RUNTIME_ERROR, "aggregate %d does not fold", (int)agg->aggfn[j]);
                break;
            }
            row[nk + j] = acc;
        }
        if (ok)
            rf_table_append_row(out, row);
        b = e;
    }
    free(row);
    rf_table_free(&s);
    return ok;
}

/* Whether every aggregate of `agg` is a min or a max (they fold from
 * partial results whatever rows repeat across ranks). */
static bool only_min_max(const rf_kernel *agg)
{
    for (int j = 0; j < agg->naggs; j++)
        if (agg->aggfn[j] != RF_AGG_MIN && agg->aggfn[j] != RF_AGG_MAX)
            return false;
    return true;
}

/* The AGG of group k when k folds per rank as a whole: a reducing gather
 * of exactly `t := MAP in | JOIN in0, in1 (keys); s := SORT t; AGG s`,
 * keyless and folding (agg_folds), whose MAP or JOIN projects row
 * positions (bag semantics: no row of one rank equals one of another, so
 * the ranks' SORTs deduplicate nothing the whole would not; min/max alone
 * need not), reads them nowhere else, and whose aggregates do not read
 * them (the positions are the rank's own, 0.. in its part). Else NULL. */
static const rf_kernel *folding_group_agg(const rf_hprogram *p, const rf_kernel *k)
{
    const rf_fused *f = k->fused;
    if (k->gather != RF_GATHER_REDUCE || !f || f->nmembers != 3 || f->nout != 1)
        return NULL;
    const rf_kernel *head = &f->members[0], *sort = &f->members[1], *agg = &f->members[2];
    bool map = head->op == RF_K_MAP && f->nin == 1 && head->in[0] == f->in[0];
    bool join = head->op == RF_K_JOIN && head->nkeys >= 1 && f->nin == 2 && head->in[0] == f->in[0] &&
                head->in[1] == f->in[1];
    if (!(map || join) || sort->op != RF_K_SORT || sort->in[0] != head->out || agg->in[0] != sort->out ||
        agg->out != f->out[0] || !agg_folds(p, agg))
        return NULL;
    rowid_use use = kernel_rowid_use(head);
    if (use == ROWID_OTHER || (use == ROWID_NONE && !only_min_max(agg)))
        return NULL;
    for (int j = 0; j < agg->naggs; j++) {
        const rf_code *arg = &agg->agg_arg[j];
        for (int i = 0; i < arg->n; i++)
            if (arg->ins[i].op == RF_EX_COL &&
                (arg->ins[i].index >= head->nproj || rf_code_reads_rowid(&head->proj[arg->ins[i].index])))
                return NULL;
    }
    return agg;
}

/* Whether the rows group k's head makes on different ranks never meet in
 * one process's SORT: its projected row positions name a side each rank
 * holds a part of (not a copy), so that the rows of one such input row
 * are all made on its rank; min/max alone need no such thing. */
static bool sides_tell_rows_apart(const rf_kernel *k, const rf_dvar *a, const rf_dvar *b)
{
    const rf_kernel *head = &k->fused->members[0], *agg = &k->fused->members[2];
    if (only_min_max(agg))
        return true;
    bool side[2] = {false, false};
    for (int i = 0; i < head->nproj; i++)
        for (int j = 0; j < head->proj[i].n; j++)
            if (head->proj[i].ins[j].op == RF_EX_ROWID && head->proj[i].ins[j].index >= 0 &&
                head->proj[i].ins[j].index <= 1)
                side[head->proj[i].ins[j].index] = true;
    if (side[0] && side[1])
        return true;   /* pairs of positions: distinct wherever they are made */
    return (side[0] && a && a->d.kind != PLACE_REPLICATED) || (side[1] && b && b->d.kind != PLACE_REPLICATED);
}

/* Brings group k's inputs where each rank's run of the whole group makes
 * its share of the rows and no other rank's: a MAP's input split or
 * hashed; a JOIN's as the JOIN kernel has them (one side replicated, or
 * both hashed on its keys). False (nothing moved): both sides replicated
 * (every rank would make every row), or a MAP's input replicated. */
static bool folding_group_inputs(rf_backend *be, const rf_kernel *k, rf_dvar *const *ins)
{
    const rf_kernel *head = &k->fused->members[0];
    rf_dvar *a = ins[0], *b = head->op == RF_K_JOIN ? ins[1] : NULL;
    if (!a || a->d.kind == PLACE_REPLICATED) {
        if (head->op != RF_K_JOIN || !a || !b || b->d.kind == PLACE_REPLICATED)
            return false;
        return sides_tell_rows_apart(k, a, b);   /* a everywhere, b's parts: each pair once */
    }
    if (head->op == RF_K_JOIN) {
        if (!b)
            return false;
        if (b->d.kind != PLACE_REPLICATED)
            join_inputs(be, a, b, head->nkeys);
        /* (a self-join whose side went everywhere: every rank would make
         * the whole answer) */
        if (a->d.kind == PLACE_REPLICATED && b->d.kind == PLACE_REPLICATED)
            return false;
    }
    return sides_tell_rows_apart(k, a, b);
}

static rf_run_result run_folded_rest(rf_backend *be, const rf_hprogram *p, const rf_kernel *agg, rf_dvar *out,
                                     rf_dvar *const *ins, int nin, rf_dvar *part, bool ok, bool avg, rf_status *st);

/* Runs k (AGG `agg`, or a group ending in it) folded per rank into out;
 * RF_RUN_MEMBERS: it did not (on some rank), nothing written: the caller
 * runs it as before. */
static rf_run_result run_folded(rf_backend *be, const rf_hprogram *p, const rf_kernel *k, const rf_kernel *agg,
                                rf_dvar *out, rf_dvar *const *ins, int nin, rf_kernel_stats *stats, rf_status *st)
{
    dist_impl *im = be->impl;
    rf_backend *in = im->inner;
    rf_status quiet;
    rf_status_init(&quiet);
    bool avg = has_avg(agg);
    avg_partial ap;
    if (avg)
        avg_partial_make(p, k, agg, &ap);
    rf_dvar *part = im->failed ? NULL : dist_var_new(be, out->arity + (avg ? 1 : 0), &quiet);
    bool ok = part != NULL;
    if (ok) {
        part->types = avg && !im->string_ids ? ap.types : out->types;
        part->sorted = false;
        rf_dvar *inner_outs[1] = {part->inner}, *inner_ins[RF_KERNEL_VARS_MAX] = {0};
        for (int i = 0; i < nin; i++)
            inner_ins[i] = ins[i] ? ins[i]->inner : NULL;
        ok = in->run(in, avg ? &ap.prog : p, avg ? &ap.k : k, inner_outs, inner_ins, stats, &quiet) == RF_RUN_DONE;
    }
    rf_run_result res = run_folded_rest(be, p, agg, out, ins, nin, part, ok, avg, st);
    if (avg)
        avg_partial_free(&ap);
    return res;
}

/* run_folded after each rank's partial rows are in part (ok: made). */
static rf_run_result run_folded_rest(rf_backend *be, const rf_hprogram *p, const rf_kernel *agg, rf_dvar *out,
                                     rf_dvar *const *ins, int nin, rf_dvar *part, bool ok, bool avg, rf_status *st)
{
    dist_impl *im = be->impl;
    rf_backend *in = im->inner;
    /* (a rank that failed before says so too); with keys, the partial
     * rows of all ranks together, and the rows they fold (the largest
     * input's: a reducing gather's own rows are never made), of which
     * they must be at most a quarter to be worth gathering everywhere
     * (TPC-H q03's 11K groups of 30K rows were not) */
    uint64_t bad[3] = {!ok, 0, 0};
    for (int i = 0; ok && agg->nkeys > 0 && i < nin; i++) {
        uint64_t rows = ins[i] ? (uint64_t)in->var_rows(in, ins[i]->inner) : 0;
        bad[2] = rows > bad[2] ? rows : bad[2];
    }
    if (ok && agg->nkeys > 0)
        bad[1] = (uint64_t)in->var_rows(in, part->inner);
    control_allreduce(im, bad, agg->nkeys > 0 ? 3 : 1, RF_COMM_SUM);
    if (bad[0] || bad[1] > im->fold_keyed_rows || bad[1] > bad[2] / 4) {
        im->fold_declined += !bad[0];
        dist_var_free(be, part);
        return RF_RUN_MEMBERS;
    }
    part->d = split();
    move_var(be, part, TO_ALL, 0);
    if (agg->nkeys > 0 || avg) {
        rf_table t, r;
        rf_table_init(&t, part->arity);
        rf_table_init(&r, 0);   /* (made again by the fold) */
        bool done = in->download(in, part->inner, &t, st) &&
                    (avg ? fold_avg_partials(p, agg, &t, &r, st) : fold_by_group(p, agg, &t, &r, st)) &&
                    in->upload(in, out->inner, &r, st);
        rf_table_free(&t);
        rf_table_free(&r);
        dist_var_free(be, part);
        if (!agree_on(be, agg, &out, 1, done, st))
            return RF_RUN_FAILED;
        out->d = replicated();
        out->rows_known = false;
        im->folded_keyed += agg->nkeys > 0;
        im->folded += agg->nkeys == 0;
        return RF_RUN_DONE;
    }
    /* Every rank folds the partial rows: count -> total of the counts */
    rf_aggfn *fns = rf_malloc((size_t)agg->naggs * sizeof *fns);
    rf_instr *cols = rf_calloc((size_t)agg->naggs, sizeof *cols);
    rf_code *args = rf_malloc((size_t)agg->naggs * sizeof *args);
    rf_kernel fold = *agg;
    fold.in[0] = agg->out;   /* (the partial rows have the output's types) */
    fold.in[1] = -1;
    fold.nfree = 0;
    fold.frees = NULL;
    fold.fused = NULL;
    fold.mj = NULL;
    fold.aggfn = fns;
    fold.agg_arg = args;
    const rf_type *rt = p->vars[agg->out].types;
    for (int j = 0; j < agg->naggs; j++) {
        fns[j] = agg->aggfn[j] == RF_AGG_COUNT ? RF_AGG_TOTAL : agg->aggfn[j];
        cols[j].op = RF_EX_COL;
        cols[j].type = (uint8_t)rt[j];
        cols[j].index = j;
        args[j] = (rf_code){1, &cols[j]};
    }
    rf_dvar *inner_outs[1] = {out->inner}, *inner_ins[2] = {part->inner, NULL};
    rf_kernel_stats folded;
    memset(&folded, 0, sizeof folded);
    rf_run_result res = in->run(in, p, &fold, inner_outs, inner_ins, &folded, st);
    free(fns);
    free(cols);
    free(args);
    dist_var_free(be, part);
    if (!agree_on(be, agg, &out, 1, res == RF_RUN_DONE, st))
        return RF_RUN_FAILED;
    out->d = replicated();
    out->rows_known = false;
    im->folded++;
    return RF_RUN_DONE;
}

/* A copy of relation v (program variable var), every row on every rank,
 * or NULL where it could not be made on some rank (st set on that rank:
 * the kernel then fails on every rank). Each rank copies its part, the
 * ranks agree that every copy was made (one MAX all-reduce: the move is
 * a collective), then the copy goes everywhere. */
static rf_dvar *copy_everywhere(rf_backend *be, const rf_hprogram *p, int var, rf_dvar *v, rf_status *st)
{
    dist_impl *im = be->impl;
    rf_backend *in = im->inner;
    rf_dvar *c = dist_var_new(be, v->arity, st);
    bool ok = c != NULL;
    if (ok) {
        c->types = v->types;
        c->sorted = v->sorted;
        c->d = v->d;
        if (in->var_describe)
            in->var_describe(in, c->inner, &p->vars[var]);
        rf_kernel copy;
        memset(&copy, 0, sizeof copy);
        copy.op = RF_K_COPY;
        copy.in[0] = var;
        copy.in[1] = -1;
        copy.out = var;
        rf_kernel_stats ks;
        rf_dvar *outs[1] = {c->inner}, *ins[RF_KERNEL_VARS_MAX] = {v->inner};
        ok = in->run(in, p, &copy, outs, ins, &ks, st) == RF_RUN_DONE;
    }
    uint64_t bad = !ok;
    control_allreduce(im, &bad, 1, RF_COMM_MAX);
    if (bad) {
        dist_var_free(be, c);
        return NULL;
    }
    move_var(be, c, TO_ALL, 0);
    return c;
}

/* A MULTIJOIN counting its bindings over each rank's rows of its first
 * input (the others everywhere): each rank's one row is its share; every
 * rank takes their sum, the count of one process (replicated). */
static rf_run_result sum_counts(rf_backend *be, const rf_kernel *k, rf_dvar *out, rf_status *st)
{
    dist_impl *im = be->impl;
    rf_backend *in = im->inner;
    rf_table t;
    rf_table_init(&t, 1);
    bool ok = in->download(in, out->inner, &t, st);
    if (ok && t.nrows != 1)
        ok = inner_fail(st, "a counting multiway join made %zu rows on rank %d", t.nrows, im->comm->rank);
    uint64_t n[1] = {ok ? (uint64_t)t.cols[0][0] : 0};
    rf_table_free(&t);
    control_allreduce(im, n, 1, RF_COMM_SUM);
    rf_table r;
    rf_table_init(&r, 1);
    rf_word w = (rf_word)n[0];
    rf_table_append_row(&r, &w);
    ok = ok && in->upload(in, out->inner, &r, st);
    rf_table_free(&r);
    if (!agree_on(be, k, &out, 1, ok, st))
        return RF_RUN_FAILED;
    out->d = replicated();
    out->rows_known = false;
    im->mj_counts++;
    return RF_RUN_DONE;
}

static rf_run_result dist_run(rf_backend *be, const rf_hprogram *p, const rf_kernel *k, rf_dvar *const *outs,
                              rf_dvar *const *ins, rf_kernel_stats *stats, rf_status *st)
{
    dist_impl *im = be->impl;
    rf_backend *in = im->inner;
    in->time_kernels = be->time_kernels;
    if (im->solo)
        return solo_run(im, p, k, outs, ins, stats, st);
    im->kernel_seq++;
    if (im->fail_agreed) {   /* the ranks know of a failure: the run ends with it */
        *st = im->fail_st;
        return RF_RUN_FAILED;
    }
    if (im->fold && k->op == RF_K_FUSED) {
        const rf_kernel *agg = folding_group_agg(p, k);
        if (agg && folds_here(im, p, agg) && folding_group_inputs(be, k, ins)) {
            rf_run_result r = run_folded(be, p, k, agg, outs[0], ins, k->fused->nin, stats, st);
            if (r != RF_RUN_MEMBERS)
                return r;
        }
    }
    if (k->op == RF_K_AGG && ins[0] && ins[0]->d.kind != PLACE_REPLICATED && folds_here(im, p, k)) {
        rf_run_result r = run_folded(be, p, k, k, outs[0], ins, 1, stats, st);
        if (r != RF_RUN_MEMBERS)
            return r;
    }
    if (k->op == RF_K_FUSED) {
        rf_run_result r = run_set_gather(be, p, k, outs, ins, stats, st);
        if (r == RF_RUN_MEMBERS)
            r = run_fused_whole(be, p, k, outs, ins, stats, st);
        if (r == RF_RUN_MEMBERS) {
            im->fused_as_members++;
            if (im->trace) {
                fprintf(stderr, "redfox: rank %d: fused group %s runs as its members:", im->comm->rank,
                        var_name(outs[0]));
                for (int m = 0; m < k->fused->nmembers; m++)
                    fprintf(stderr, " %s", rf_kop_name(k->fused->members[m].op));
                fputc('\n', stderr);
            }
        }
        return r;
    }
    int nin = k->op == RF_K_MULTIJOIN ? k->mj->nin : 2, nout = 1;
    rf_dvar *a = ins[0], *b = nin > 1 ? ins[1] : NULL;
    dist out = split();
    bool root_only = false;
    rf_dvar *everywhere = NULL;   /* a MULTIJOIN's input 0, copied to every rank */
    bool copy_failed = false;
    rowid_use rowids = ROWID_NONE;
    switch (k->op) {
    case RF_K_COPY:
        out = a ? a->d : hashed(default_prefix(outs[0]->arity));
        break;
    case RF_K_CLEAR:
        out = hashed(default_prefix(outs[0]->arity));
        break;
    case RF_K_MAP:
        rowids = kernel_rowid_use(k);
        if (rowids == ROWID_OTHER) {
            root_only = true;
        } else if (rowids == ROWID_PROJECTED && a) {   /* each row on one rank, numbered there */
            if (a->d.kind == PLACE_REPLICATED)
                move_var(be, a, TO_HASH, default_prefix(a->arity));
            out = projected(k, a, 0);
        } else {
            out = !a ? split() : a->d.kind == PLACE_REPLICATED ? replicated() : projected(k, a, 0);
        }
        break;
    case RF_K_SORT:   /* dedup: equal rows on one rank */
        if (a && a->d.kind == PLACE_SPLIT)
            move_var(be, a, TO_HASH, default_prefix(a->arity));
        out = a ? a->d : hashed(default_prefix(outs[0]->arity));
        break;
    case RF_K_JOIN:
        rowids = kernel_rowid_use(k);
        if (rowids == ROWID_OTHER || (rowids == ROWID_PROJECTED && k->nkeys == 0)) {
            root_only = true;
        } else if (!a || !b) {
            out = split();   /* empty */
        } else if (rowids == ROWID_PROJECTED) {   /* no side replicated: each pair on one rank */
            co_hash(be, a, b, k->nkeys);
            out = joined(k, a, b);
        } else if (a->d.kind == PLACE_REPLICATED && b->d.kind == PLACE_REPLICATED) {
            out = replicated();
        } else if (a->d.kind == PLACE_REPLICATED || b->d.kind == PLACE_REPLICATED) {
            out = joined(k, a, b);
        } else {
            if (k->nkeys == 0) {   /* cross product: the smaller side everywhere */
                size_t ra = dist_var_rows(be, a), rb = dist_var_rows(be, b);
                move_var(be, rb <= ra ? b : a, TO_ALL, 0);
            } else {
                join_inputs(be, a, b, k->nkeys);
            }
            /* (a self-join whose side went everywhere: every rank makes
             * the whole answer) */
            out = a->d.kind == PLACE_REPLICATED && b->d.kind == PLACE_REPLICATED ? replicated() : joined(k, a, b);
        }
        break;
    case RF_K_ANTIJOIN:
        if (!a || !b || b->d.kind == PLACE_REPLICATED) {
            /* in0 as it is */
        } else if (k->nkeys == 0) {
            move_var(be, b, TO_ALL, 0);
        } else {
            co_hash(be, a, b, k->nkeys);
        }
        out = a ? a->d : hashed(default_prefix(outs[0]->arity));
        break;
    case RF_K_UNION:
    case RF_K_DIFF:
        if (a && b && !(k->op == RF_K_DIFF && b->d.kind == PLACE_REPLICATED) &&
            !(a->d.kind == PLACE_REPLICATED && b->d.kind == PLACE_REPLICATED) &&
            !(a->d.kind == PLACE_HASH && same_dist(a->d, b->d))) {
            int j = hash_prefix(a->d) ? hash_prefix(a->d)
                    : hash_prefix(b->d) ? hash_prefix(b->d) : default_prefix(a->arity);
            move_var(be, a, TO_HASH, j);
            move_var(be, b, TO_HASH, j);
        }
        out = a ? a->d : b && k->op == RF_K_UNION ? b->d : hashed(default_prefix(outs[0]->arity));
        break;
    case RF_K_AGG:
        if (kernel_rowid_use(k) != ROWID_NONE) {
            root_only = true;
        } else if (k->nkeys == 0) {   /* one group: every rank aggregates all rows */
            if (a)
                move_var(be, a, TO_ALL, 0);
            out = replicated();
        } else if (!a) {
            out = hashed(k->nkeys);
        } else {
            if (!(a->d.kind == PLACE_REPLICATED || (hash_prefix(a->d) >= 1 && hash_prefix(a->d) <= k->nkeys)))
                move_var(be, a, TO_HASH, k->nkeys);
            out = a->d;
        }
        break;
    case RF_K_MULTIJOIN:
        if (kernel_rowid_use(k) != ROWID_NONE) {
            root_only = true;
            break;
        }
        /* Input 0 stays as it is; every other input goes everywhere, so
         * each rank finds the bindings of its rows of input 0. Where
         * another position reads input 0's relation itself (triangles
         * over one edge relation), it reads a copy sent everywhere:
         * sending the relation itself would leave every rank all of
         * input 0, each making the whole answer. */
        for (int i = 1; i < nin; i++) {
            if (!ins[i])
                continue;
            if (ins[i] == ins[0] && ins[0]->d.kind != PLACE_REPLICATED && im->mj_copy) {
                if (!everywhere && !copy_failed) {
                    if ((everywhere = copy_everywhere(be, p, k->mj->in[0], ins[0], st)))
                        im->mj_copies++;
                    else
                        copy_failed = true;
                }
                continue;
            }
            move_var(be, ins[i], TO_ALL, 0);
        }
        out = ins[0] && ins[0]->d.kind == PLACE_REPLICATED ? replicated() : split();
        break;
    default:
        rf_fail(st, RF_EXIT_RUNTIME_ERROR, "distributed runs do not support %s kernels", rf_kop_name(k->op));
        return RF_RUN_FAILED;
    }
    if (root_only) {
        if (im->trace)
            fprintf(stderr, "redfox: rank %d: %s %s runs on rank 0 alone (it reads row positions)\n", im->comm->rank,
                    rf_kop_name(k->op), var_name(outs[0]));
        for (int i = 0; i < nin; i++)
            if (ins[i])
                move_var(be, ins[i], TO_ROOT, 0);
        out = split();
    }
    uint64_t offset[2] = {0, 0};
    bool shift = rowids == ROWID_PROJECTED && !root_only;
    if (shift)
        rowid_offsets(im, ins, offset);
    rf_dvar *inner_outs[RF_KERNEL_VARS_MAX], *inner_ins[RF_KERNEL_VARS_MAX];
    for (int i = 0; i < nout; i++)
        inner_outs[i] = outs[i]->inner;
    for (int i = 0; i < nin; i++)
        inner_ins[i] = ins[i] ? ins[i]->inner : NULL;
    for (int i = 1; everywhere && i < nin; i++)
        if (ins[i] == ins[0])
            inner_ins[i] = everywhere->inner;
    bool ok;
    if (im->failed || copy_failed) {
        ok = false;   /* a rank that failed before runs nothing (agree_on empties the outputs) */
    } else if (root_only && im->comm->rank != 0) {
        ok = set_empty(in, outs[0], st);
    } else {
        rf_run_result res = in->run(in, p, k, inner_outs, inner_ins, stats, st);
        ok = res == RF_RUN_DONE;
        if (res == RF_RUN_MEMBERS)
            ok = inner_fail(st, "backend %s: %s kernel not run", in->name, rf_kop_name(k->op));
    }
    if (ok && shift)
        ok = shift_rowids(im, k, outs[0], offset, st);
    dist_var_free(be, everywhere);
    if (!agree_on(be, k, outs, nout, ok, st))
        return RF_RUN_FAILED;
    if (k->op == RF_K_MULTIJOIN && k->mj->count && out.kind == PLACE_SPLIT)
        return sum_counts(be, k, outs[0], st);
    for (int i = 0; i < nout; i++) {
        outs[i]->d = out;
        outs[i]->rows_known = false;
    }
    return RF_RUN_DONE;
}

/* The outputs to rank 0, in the order given (the same on every rank). */
static bool dist_outputs_ready(rf_backend *be, rf_dvar *const *vars, int n, rf_status *st)
{
    dist_impl *im = be->impl;
    if (im->solo)   /* already whole on rank 0 */
        return true;
    if (!settled_ok(im, st))   /* a kernel failed somewhere: its message is the run's */
        return false;
    for (int i = 0; i < n; i++)
        if (vars[i] && !vars[i]->gathered) {
            move_var(be, vars[i], TO_ROOT, 0);
            vars[i]->gathered = true;
        }
    /* Rank 0 alone works from here on (writing, --count's hash) */
    if (im->comm->rank == 0 && im->output_threads >= 0)
        rf_prims_set_threads(im->output_threads);
    return true;
}

/* Whether ok holds on every rank (one MAX all-reduce; all ranks together). */
/* ---- Input files read in shares ----
 * Each rank reads one share of an input's lines (rf_read_facts_share) and
 * the rows go where they are placed (hashed on the first columns, as a
 * whole file's rows are kept by keep_part), instead of every rank reading
 * the whole file and keeping its rows: on one host the ranks share its
 * cores, so reading the whole file on each took TPC-H SF 10's q03 3.9 s
 * to load on two H200s against 1.6 s on one. Only inputs without string
 * columns (every rank must intern every string in the same order: strings
 * as ids) and, in the runtime, neither CSV nor rows from memory (inline
 * facts go with rank 0's share). By default where relations move device
 * to device (dist_program_begins says why); RF_DIST_INPUT_SHARES=1 on
 * every backend (the CPU's tests), =0 never. */
static bool dist_input_share(rf_backend *be, int *part, int *nparts)
{
    dist_impl *im = be->impl;
    *part = im->comm->rank;
    *nparts = im->comm->size;
    return !im->solo && im->input_shares;
}

static uint64_t dist_share_count(rf_backend *be, uint64_t mine, uint64_t *before)
{
    dist_impl *im = be->impl;
    rf_comm *c = im->comm;
    uint64_t *per = rf_calloc((size_t)c->size, sizeof *per), total = 0;
    per[c->rank] = mine;
    control_allreduce(im, per, c->size, RF_COMM_SUM);
    *before = 0;
    for (int r = 0; r < c->size; r++) {
        *before += r < c->rank ? per[r] : 0;
        total += per[r];
    }
    free(per);
    return total;
}

static bool dist_share_settle(rf_backend *be, bool ok, rf_status *st)
{
    dist_impl *im = be->impl;
    rf_comm *c = im->comm;
    uint64_t first = ok ? (uint64_t)c->size : (uint64_t)c->rank;   /* shares in rank order: the lowest fails first */
    control_allreduce(im, &first, 1, RF_COMM_MIN);
    if (first >= (uint64_t)c->size)
        return true;
    control_bcast_status(im, st, (int)first);
    return false;
}

static bool dist_upload_share(rf_backend *be, rf_dvar *v, const rf_table *t, rf_status *st)
{
    dist_impl *im = be->impl;
    if (!upload_begins(v, t, st))
        return false;
    bool ok = inner_upload_unsorted(im, v, t, NULL, st);
    if (!dist_share_settle(be, ok, st))   /* (the first rank that failed: its status everywhere) */
        return false;
    /* each rank's share is a set: equal rows of two shares meet where
     * they are hashed to, and the move merges them as a set */
    v->d = split();
    move_var(be, v, TO_HASH, default_prefix(t->arity));
    im->input_shares_read++;
    return true;
}

static bool dist_agree(rf_backend *be, bool ok)
{
    dist_impl *im = be->impl;
    if (im->solo)
        return ok;
    uint64_t bad = !ok;
    control_allreduce(im, &bad, 1, RF_COMM_MAX);
    return !bad;
}

/* --output-per-rank: every output stays where it is, each rank writing
 * its own rows (a relation on every rank: rank 0 writes it, the others
 * write empty parts). Marked gathered, so that its download is this
 * rank's alone. */
static bool dist_outputs_local(rf_backend *be, rf_dvar *const *vars, int n, rf_status *st)
{
    dist_impl *im = be->impl;
    if (im->solo)
        return true;
    if (!settled_ok(im, st))
        return false;
    bool ok = true;
    for (int i = 0; i < n; i++) {
        if (!vars[i] || vars[i]->gathered)
            continue;
        if (ok && vars[i]->d.kind == PLACE_REPLICATED && im->comm->rank != 0)
            ok = set_empty(im->inner, vars[i], st);
        vars[i]->gathered = true;
    }
    bool all = dist_agree(be, ok);   /* all ranks go on to write, or none */
    if (ok && !all)
        ok = inner_fail(st, "another rank could not keep its part of the outputs");
    im->outputs_per_rank = true;
    return ok;
}

void rf_backend_dist_set_output_threads(rf_backend *be, int threads)
{
    dist_impl *im = be->impl;
    im->output_threads = threads < 0 ? -1 : threads;
}

static size_t dist_bytes_in_use(rf_backend *be)
{
    dist_impl *im = be->impl;
    return im->inner->bytes_in_use(im->inner);
}

static size_t dist_bytes_peak(rf_backend *be)
{
    dist_impl *im = be->impl;
    return im->inner->bytes_peak(im->inner);
}

static void dist_print_stats(rf_backend *be, FILE *f)
{
    dist_impl *im = be->impl;
    fprintf(f, "  distributed: %d ranks over %s; rank %d moved %zu relations in %.3f s, sent %zu rows (%.1f MB), "
            "%zu collective calls (%.3f s in counts and agreements)\n", im->comm->size, im->comm->name,
            im->comm->rank, im->exchanges, im->move_seconds, im->rows_sent, (double)im->words_sent * 8 / 1e6,
            im->collectives, im->control_seconds);
    if (im->sets_left)
        fprintf(f, "  distributed: %zu sets left where they were made (every reader deduplicates again)\n",
                im->sets_left);
    if (im->folded)
        fprintf(f, "  distributed: %zu keyless aggregates folded on each rank, then their partial rows\n",
                im->folded);
    if (im->folded_keyed || im->fold_declined)
        fprintf(f, "  distributed: %zu aggregates with keys folded on each rank, then their partial rows by group "
                   "on every rank (%zu not: more than %zu partial rows, or a quarter of their input's)\n",
                im->folded_keyed, im->fold_declined, im->fold_keyed_rows);
    if (im->outputs_per_rank)
        fprintf(f, "  distributed: outputs written per rank, none gathered\n");
    if (im->mj_copies || im->mj_counts)
        fprintf(f, "  distributed: %zu multiway joins over their first input's parts beside a copy of it sent "
                   "everywhere (self-joins), %zu counts of bindings summed over the ranks\n",
                im->mj_copies, im->mj_counts);
    if (im->string_ids)
        fprintf(f, "  distributed: strings hashed and moved as dictionary ids (no kernel makes strings; every "
                   "rank's dictionary the same)\n");
    if (im->input_shares_read)
        fprintf(f, "  distributed: %zu input files read in shares (a share of the lines on each rank)\n",
                im->input_shares_read);
    if (im->fused_whole_runs || im->fused_as_members)
        fprintf(f, "  distributed: %zu fused groups run whole on each rank, %zu as their members\n",
                im->fused_whole_runs, im->fused_as_members);
    if (im->join_counts)
        fprintf(f, "  distributed: %zu join sizes for --join=auto counted on each rank and summed\n", im->join_counts);
    if (im->inner->print_stats)
        im->inner->print_stats(im->inner, f);
}

/* Whether a set gather's output, made split (each rank's rows deduplicated
 * on that rank only), may stay split with rows repeated across ranks
 * instead of moving to be deduplicated where its hash puts it: when every
 * kernel that reads it is a set gather. A set gather's answer is the set
 * of its JOIN's rows, which repeated input rows only repeat; its own rows
 * are deduplicated on the rank its placement gives them (moving there if
 * split), so it is the same set. Not an output, not a branch's condition
 * (whose emptiness would be the same, but is read as rows elsewhere).
 * Same generation's t1.by1 := delta JOIN edge, read only by the next
 * step's set gather: one move of two an iteration (docs/distributed.md). */
static void find_sets_that_may_stay(dist_impl *im, const rf_hprogram *p)
{
    free(im->set_may_stay);
    im->nvars = p->nvars;
    im->set_may_stay = rf_calloc((size_t)(p->nvars > 0 ? p->nvars : 1), sizeof *im->set_may_stay);
    int *readers = rf_calloc((size_t)(p->nvars > 0 ? p->nvars : 1), sizeof *readers);
    bool *other = rf_calloc((size_t)(p->nvars > 0 ? p->nvars : 1), sizeof *other);
    for (int b = 0; b < p->nblocks; b++) {
        const rf_hblock *blk = &p->blocks[b];
        for (int c = 0; c < blk->nconds; c++)
            if (blk->conds[c] >= 0 && blk->conds[c] < p->nvars)
                other[blk->conds[c]] = true;
        for (int i = 0; i < blk->nkernels; i++) {
            const rf_kernel *k = &blk->kernels[i];
            int vars[RF_KERNEL_VARS_MAX];
            int n = rf_kernel_reads(k, vars);
            bool gather = k->op == RF_K_FUSED && k->gather == RF_GATHER_SET;
            for (int j = 0; j < n; j++) {
                if (vars[j] < 0 || vars[j] >= p->nvars)
                    continue;
                readers[vars[j]]++;
                if (!gather)
                    other[vars[j]] = true;
            }
        }
    }
    for (int v = 0; v < p->nvars; v++)
        im->set_may_stay[v] = readers[v] > 0 && !other[v] && !p->vars[v].is_output;
    free(readers);
    free(other);
}

/* Whether some kernel of p makes new strings (the top of this file). */
static bool kernel_makes_strings(const rf_kernel *k)
{
    bool any = rf_code_interns(&k->filter);
    for (int i = 0; i < k->nproj && !any; i++)
        any = rf_code_interns(&k->proj[i]);
    for (int i = 0; k->agg_arg && i < k->naggs && !any; i++)
        any = rf_code_interns(&k->agg_arg[i]);
    for (int i = 0; k->fused && i < k->fused->nmembers && !any; i++)
        any = kernel_makes_strings(&k->fused->members[i]);
    return any;
}

static bool program_makes_strings(const rf_hprogram *p)
{
    for (int b = 0; b < p->nblocks; b++)
        for (int i = 0; i < p->blocks[b].nkernels; i++)
            if (kernel_makes_strings(&p->blocks[b].kernels[i]))
                return true;
    return false;
}

static void dist_program_begins(rf_backend *be, const rf_hprogram *p)
{
    dist_impl *im = be->impl;
    im->prog = p;
    const char *ids = getenv("RF_DIST_STRING_IDS");
    im->string_ids = !im->solo && !(ids && strcmp(ids, "0") == 0) && !program_makes_strings(p);
    if (im->comm->rank == 1 && getenv("RF_TEST_DIST_STRING_SKEW"))   /* tests: rank 1's ids shifted by one */
        (void)rf_str_intern("\x01skew", 5);
    const char *whole = getenv("RF_DIST_FUSED_WHOLE");
    im->fused_whole = !(whole && strcmp(whole, "0") == 0);
    /* input files in shares where rows move device to device (the GPUs);
     * moved through host tables, the rows cost more than the parse saved
     * (TPC-H SF 1 q03, two CPU ranks: load 7.2-12.3 s against 6.2-6.8 s;
     * lineitem's move 2.0 s). RF_DIST_INPUT_SHARES=1: always, =0: never. */
    const char *shares = getenv("RF_DIST_INPUT_SHARES");
    im->input_shares = shares && *shares ? strcmp(shares, "0") != 0
                                         : im->inner->move_rows != NULL && im->comm->alltoallv_device != NULL;
    const char *trace = getenv("RF_DIST_TRACE");
    im->trace = trace && *trace && strcmp(trace, "0") != 0;
    find_sets_that_may_stay(im, p);
    im->inner->time_kernels = be->time_kernels;
    if (im->inner->program_begins)
        im->inner->program_begins(im->inner, p);
}

/* The inner backend's answer where this rank's part is the relation: one
 * rank, a replicated relation, an output gathered to rank 0 (the rank
 * that writes it; the others' parts are empty). Else unknown, and the
 * runtime scans what it downloaded. */
static bool dist_column_sign_uniform(rf_backend *be, const rf_dvar *v, int col)
{
    dist_impl *im = be->impl;
    return (im->solo || v->gathered || v->d.kind == PLACE_REPLICATED) &&
           im->inner->column_sign_uniform(im->inner, v->inner, col);
}

/* --count's hash where this rank's part is the relation (as above). */
static bool dist_block_hashes(rf_backend *be, const rf_dvar *v, size_t block_rows, uint64_t seed, uint64_t **hashes,
                              size_t *nrows, rf_status *st)
{
    dist_impl *im = be->impl;
    if (!(im->solo || v->gathered || v->d.kind == PLACE_REPLICATED))
        return false;
    return im->inner->block_hashes(im->inner, v->inner, block_rows, seed, hashes, nrows, st);
}

/* --join=auto's statistic, the rows of the binary plan's first join
 * (join_choice.c), counted where the rows are, each rank's count of its
 * pairs summed: as they are where each pair of matching rows meets on
 * exactly one rank (a side replicated, the other's rows each on one rank;
 * or both hashed on the same prefix of their keys); else beside a copy of
 * the smaller side sent everywhere (the multiway join that may follow
 * makes the same copy of a self-join's relation) and dropped after. Before,
 * both relations were gathered to every rank through the host and counted
 * there: a second on two GPUs for R-MAT 20's 10^7 edges, 30x the query.
 * A collective; where the copy cannot be made (out of memory on some
 * rank), the gather as before. */
static bool keys_are_prefix(const rf_dvar *v, int nkeys, const int *keys)
{
    int p = hash_prefix(v->d);
    if (p < 1 || p > nkeys)
        return false;
    for (int i = 0; i < p; i++)
        if (keys[i] != i)
            return false;
    return true;
}

static bool join_size_gathered(rf_backend *be, const rf_dvar *l, const rf_dvar *r, int nkeys, const int *lkeys,
                               const int *rkeys, uint64_t *rows, rf_status *st)
{
    rf_table tl, tr;
    rf_table_init(&tl, l->arity);
    rf_table_init(&tr, r->arity);
    bool ok = dist_download(be, l, &tl, st) && dist_download(be, r, &tr, st);
    if (ok)
        *rows = rf_prim_join_size(&tl, lkeys, &tr, rkeys, nkeys);
    rf_table_free(&tl);
    rf_table_free(&tr);
    return ok;
}

static bool dist_join_size(rf_backend *be, const rf_dvar *l, const rf_dvar *r, int nkeys, const int *lkeys,
                           const int *rkeys, uint64_t *rows, rf_status *st)
{
    dist_impl *im = be->impl;
    rf_backend *in = im->inner;
    if (!settled_ok(im, st))
        return false;
    bool lrep = l->d.kind == PLACE_REPLICATED, rrep = r->d.kind == PLACE_REPLICATED;
    rf_dvar *copy = NULL;
    const rf_dvar *lh = l, *rh = r;   /* the variables counted here */
    if (!lrep && !rrep && !(nkeys > 0 && hash_prefix(l->d) == hash_prefix(r->d) && keys_are_prefix(l, nkeys, lkeys) &&
                            keys_are_prefix(r, nkeys, rkeys))) {
        bool copy_l = dist_var_rows(be, l) <= dist_var_rows(be, r);
        const rf_dvar *side = copy_l ? l : r;
        const rf_hprogram *p = im->prog;
        if (!side->hv || !p || side->hv < p->vars || side->hv >= p->vars + p->nvars)
            return join_size_gathered(be, l, r, nkeys, lkeys, rkeys, rows, st);
        copy = copy_everywhere(be, p, (int)(side->hv - p->vars), (rf_dvar *)side, st);
        if (!copy) {   /* agreed on every rank: the gather instead */
            rf_status_init(st);
            return join_size_gathered(be, l, r, nkeys, lkeys, rkeys, rows, st);
        }
        if (copy_l)
            lh = copy;
        else
            rh = copy;
    }
    uint64_t here = 0;
    bool ok = in->join_size(in, lh->inner, rh->inner, nkeys, lkeys, rkeys, &here, st);
    dist_var_free(be, copy);
    im->join_counts++;
    if (lrep && rrep) {   /* every rank counted all of it */
        uint64_t bad = !ok;
        control_allreduce(im, &bad, 1, RF_COMM_MAX);
        *rows = here;
        if (bad && ok)
            return rf_fail(st, RF_EXIT_RUNTIME_ERROR, "another rank failed to count a join's rows");
        return ok;
    }
    uint64_t w[2] = {ok ? here : 0, !ok};
    control_allreduce(im, w, 2, RF_COMM_SUM);
    *rows = w[0];
    if (w[1] && ok)
        return rf_fail(st, RF_EXIT_RUNTIME_ERROR, "another rank failed to count a join's rows");
    return ok;
}

/* One rank only (rf_backend_dist_new sets them then): the inner
 * backend's optional entries. */

static bool solo_join_size(rf_backend *be, const rf_dvar *l, const rf_dvar *r, int nkeys, const int *lkeys,
                           const int *rkeys, uint64_t *rows, rf_status *st)
{
    dist_impl *im = be->impl;
    return im->inner->join_size(im->inner, l ? l->inner : NULL, r ? r->inner : NULL, nkeys, lkeys, rkeys, rows,
                                st);
}

static void dist_destroy(rf_backend *be)
{
    dist_impl *im = be->impl;
    im->inner->destroy(im->inner);
    rf_table_free(&im->away);
    rf_table_free(&im->before);
    rf_table_free(&im->after);
    free(im->dests);
    free(im->send);
    free(im->recv);
    free(im->set_may_stay);
    free(im);
    free(be);
}

rf_backend *rf_backend_dist_new(rf_backend *inner, rf_comm *comm)
{
    rf_backend *be = rf_calloc(1, sizeof *be);
    dist_impl *im = rf_calloc(1, sizeof *im);
    im->inner = inner;
    im->comm = comm;
    im->output_threads = -1;
    const char *rep = getenv("RF_DIST_REPLICATE_ROWS");
    im->replicate_rows = rep && *rep ? (size_t)strtoull(rep, NULL, 10) : DIST_REPLICATE_ROWS_DEFAULT;
    const char *stay = getenv("RF_DIST_SETS_STAY");
    im->sets_stay = !(stay && strcmp(stay, "0") == 0);
    const char *fold = getenv("RF_DIST_FOLD");
    im->fold = !(fold && strcmp(fold, "0") == 0);
    const char *keyed = getenv("RF_DIST_FOLD_KEYED");
    im->fold_keyed = !(keyed && strcmp(keyed, "0") == 0);
    im->fold_keyed_all = keyed && strcmp(keyed, "all") == 0;
    const char *keyed_rows = getenv("RF_DIST_FOLD_KEYED_ROWS");
    im->fold_keyed_rows = keyed_rows && *keyed_rows ? (size_t)strtoull(keyed_rows, NULL, 10) : RF_DIST_FOLD_KEYED_ROWS;
    const char *agree = getenv("RF_DIST_AGREE");
    im->agree_each = agree && strcmp(agree, "kernel") == 0;
    const char *mj_copy = getenv("RF_DIST_MULTIJOIN_COPY");
    im->mj_copy = !(mj_copy && strcmp(mj_copy, "0") == 0);
    rf_table_init(&im->away, 0);
    rf_table_init(&im->before, 0);
    rf_table_init(&im->after, 0);
    be->name = inner->name;   /* the kernels are the inner backend's */
    snprintf(be->device, sizeof be->device, "%.200s, rank %d of %d", inner->device, comm->rank, comm->size);
    be->var_new = dist_var_new;
    be->var_free = dist_var_free;
    be->var_rows = dist_var_rows;
    be->var_rows_here = dist_var_rows_here;
    be->inputs_loaded = dist_inputs_loaded;
    be->upload = dist_upload;
    be->upload_unsorted = dist_upload_unsorted;
    be->download = dist_download;
    be->run = dist_run;
    be->bytes_in_use = dist_bytes_in_use;
    be->bytes_peak = dist_bytes_peak;
    be->destroy = dist_destroy;
    be->impl = im;
    be->print_stats = dist_print_stats;
    be->program_begins = dist_program_begins;
    be->var_describe = dist_var_describe;
    be->outputs_ready = dist_outputs_ready;
    be->outputs_local = dist_outputs_local;
    be->agree = dist_agree;
    be->input_share = dist_input_share;
    be->share_count = dist_share_count;
    be->share_settle = dist_share_settle;
    be->upload_share = dist_upload_share;
    /* --join=auto's statistic: each rank counts its pairs, the counts
     * summed (dist_join_size: the same count, so the same choice, on every
     * rank), with the inner backend's ratio */
    be->wcoj_auto_ratio = inner->wcoj_auto_ratio;
    im->solo = comm->size == 1;
    be->column_sign_uniform = inner->column_sign_uniform ? dist_column_sign_uniform : NULL;
    be->block_hashes = inner->block_hashes ? dist_block_hashes : NULL;
    be->join_size = !inner->join_size ? NULL : im->solo ? solo_join_size : dist_join_size;
    return be;
}
