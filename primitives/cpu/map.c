/* MAP (filter + projection) and the batch emitter that JOIN shares: given a
 * batch of rows (as column pointers + base), keep those passing the filter
 * and append their projections to an output table. */
#include "emit.h"

#include <stdlib.h>
#include <string.h>

/* The conjuncts of the subtree of c ending at instruction k (start[]: each
 * subtree's first instruction), left to right, as [first, last] ranges:
 * AND(a, b) and if(a, b, false) are a's then b's; anything else is one. */
static void split_conjuncts(const rf_code *c, const int *start, int k, int *ranges, int *n)
{
    const rf_instr *in = &c->ins[k];
    if (in->op == RF_EX_AND) {
        split_conjuncts(c, start, start[k - 1] - 1, ranges, n);
        split_conjuncts(c, start, k - 1, ranges, n);
        return;
    }
    if (in->op == RF_EX_IF && c->ins[k - 1].op == RF_EX_CONST && c->ins[k - 1].value == 0) {
        int second = start[k - 1] - 1;
        split_conjuncts(c, start, start[second] - 1, ranges, n);
        split_conjuncts(c, start, second, ranges, n);
        return;
    }
    ranges[2 * *n] = start[k];
    ranges[2 * *n + 1] = k;
    (*n)++;
}

/* Why: a filter that the weaver composed from a chain of selections is a
 * nest of lazy ANDs, if(if(a, b, false), c, false); evaluated as one
 * expression each level passes over every row of the batch again (pattern
 * (a) at 10^6 rows: 7-9 ms on one thread against 2.6-4.4 ms for the three
 * MAPs unfused). As a chain each conjunct sees only the rows still alive,
 * as the unfused MAPs did, and the same rows as the expression (the same
 * faults). */
static void split_filter(rf_emitter *em, const rf_code *filter)
{
    int *start = rf_calloc((size_t)filter->n, sizeof *start);
    for (int k = 0; k < filter->n; k++) {
        int s = k;
        for (int a = 0; a < rf_expr_arity((rf_exop)filter->ins[k].op); a++)
            s = start[s - 1];
        start[k] = s;
    }
    int *ranges = rf_calloc((size_t)filter->n * 2, sizeof *ranges), n = 0;
    split_conjuncts(filter, start, filter->n - 1, ranges, &n);
    if (n >= 2) {
        em->nconj = n;
        em->conj_code = rf_calloc((size_t)n, sizeof *em->conj_code);
        em->conj = rf_calloc((size_t)n, sizeof *em->conj);
        for (int i = 0; i < n; i++) {
            em->conj_code[i].n = ranges[2 * i + 1] - ranges[2 * i] + 1;
            em->conj_code[i].ins = filter->ins + ranges[2 * i];
            em->conj[i] = rf_eval_new(&em->conj_code[i]);
        }
    }
    free(ranges);
    free(start);
}

void rf_emitter_init(rf_emitter *em, const rf_code *filter, int nproj, const rf_code *proj)
{
    memset(em, 0, sizeof *em);
    em->filter = filter && filter->n > 0 ? rf_eval_new(filter) : NULL;
    if (em->filter)
        split_filter(em, filter);
    em->nproj = nproj;
    em->projcol = rf_calloc((size_t)(nproj > 0 ? nproj : 1), sizeof *em->projcol);
    em->proj = rf_calloc((size_t)(nproj > 0 ? nproj : 1), sizeof *em->proj);
    for (int j = 0; j < nproj; j++) {
        em->projcol[j] = rf_code_as_column(&proj[j]);
        if (em->projcol[j] < 0)
            em->proj[j] = rf_eval_new(&proj[j]);
        for (int i = 0; i < proj[j].n; i++)
            em->uses_rows |= proj[j].ins[i].op == RF_EX_ROWID;
    }
    for (int i = 0; filter && i < filter->n; i++)
        em->uses_rows |= filter->ins[i].op == RF_EX_ROWID;
}

void rf_emitter_set_rows(rf_emitter *em, const rf_word *row0, const rf_word *row1)
{
    if (em->filter)
        rf_eval_set_rows(em->filter, row0, row1);
    for (int i = 0; i < em->nconj; i++)
        rf_eval_set_rows(em->conj[i], row0, row1);
    for (int j = 0; j < em->nproj; j++)
        if (em->proj[j])
            rf_eval_set_rows(em->proj[j], row0, row1);
}

void rf_emitter_use_bits(rf_emitter *em, const rf_id_bits *tabs, int ntabs)
{
    if (em->filter)
        rf_eval_use_bits(em->filter, tabs, ntabs);
    for (int i = 0; i < em->nconj; i++)
        rf_eval_use_bits(em->conj[i], tabs, ntabs);
    for (int j = 0; j < em->nproj; j++)
        if (em->proj[j])
            rf_eval_use_bits(em->proj[j], tabs, ntabs);
}

void rf_emitter_free(rf_emitter *em)
{
    rf_eval_free(em->filter);
    for (int i = 0; i < em->nconj; i++)
        rf_eval_free(em->conj[i]);
    free(em->conj);
    free(em->conj_code);
    for (int j = 0; j < em->nproj; j++)
        rf_eval_free(em->proj[j]);
    free(em->proj);
    free(em->projcol);
}

bool rf_emit_batch(rf_emitter *em, rf_word *const *cols, size_t base, int n, rf_table *out,
                   rf_status *st)
{
    const uint16_t *sel = rf_iota16;
    int nsel = n;
    if (em->nconj >= 2) {
        /* conjunct by conjunct, each on the rows the ones before kept */
        uint16_t *bufs[2] = {em->sel, em->sel2};
        for (int c = 0; c < em->nconj && nsel > 0; c++) {
            const rf_word *f = rf_eval_run(em->conj[c], cols, base, sel, nsel, st);
            if (!f)
                return false;
            uint16_t *next = bufs[c & 1];
            int m = 0;
            for (int i = 0; i < nsel; i++) {
                int r = sel[i];
                next[m] = (uint16_t)r;
                m += f[r] != 0; /* branch-free compaction */
            }
            sel = next;
            nsel = m;
        }
    } else if (em->filter) {
        const rf_word *f = rf_eval_run(em->filter, cols, base, rf_iota16, n, st);
        if (!f)
            return false;
        nsel = 0;
        for (int i = 0; i < n; i++) {
            em->sel[nsel] = (uint16_t)i;
            nsel += f[i] != 0; /* branch-free compaction */
        }
        sel = em->sel;
    }
    if (nsel == 0)
        return true;
    size_t pos = out->nrows;
    if (out->arity == 0) { /* a nullary result only records that a row exists */
        rf_table_resize(out, 1);
        return true;
    }
    rf_table_reserve(out, pos + (size_t)nsel);
    /* Projections are evaluated only on the rows that passed the filter. */
    for (int j = 0; j < em->nproj; j++) {
        rf_word *dst = out->cols[j] + pos;
        const rf_word *src;
        if (em->projcol[j] >= 0)
            src = cols[em->projcol[j]] + base;
        else if (!(src = rf_eval_run(em->proj[j], cols, base, sel, nsel, st)))
            return false;
        if (sel == rf_iota16)
            memcpy(dst, src, (size_t)nsel * sizeof *dst);
        else
            for (int i = 0; i < nsel; i++)
                dst[i] = src[sel[i]];
    }
    out->nrows = pos + (size_t)nsel;
    return true;
}

typedef struct map_job {
    const rf_table *in;
    const rf_code *filter, *proj;
    int nproj, npieces;
    rf_table *pieces;
    rf_status *sts;
    const rf_id_bits *tabs;
    int ntabs;
} map_job;

/* ---- String predicates tabulated over a range of ids ---- */
#define MAX_STRING_TABLES 4
#define TABLE_MIN_ROWS ((size_t)1 << 16)
#define TABLE_BLOCK 1024   /* ids a step, a multiple of 64: pieces write whole words */

typedef struct table_job {
    rf_like_pattern lp;
    rf_word lo;
    size_t n, per;
    uint64_t *bits;
} table_job;

static void table_piece(void *ctx, int p)
{
    table_job *j = ctx;
    size_t b = (size_t)p * j->per, e = b + j->per < j->n ? b + j->per : j->n;
    const char *text[TABLE_BLOCK];
    size_t len[TABLE_BLOCK];
    bool hold[TABLE_BLOCK];
    for (size_t at = b; at < e; at += TABLE_BLOCK) {
        size_t cnt = e - at < TABLE_BLOCK ? e - at : TABLE_BLOCK;
        if (!rf_str_texts(j->lo + at, cnt, text, len))
            return;   /* (checked before: every id is in the dictionary) */
        rf_like_run_many(&j->lp, text, len, cnt, hold);
        for (size_t i = 0; i < cnt; i++)
            j->bits[(at + i) / 64] |= (uint64_t)hold[i] << ((at + i) % 64);
    }
}

/* For each like/contains of a column against a constant in filter (at
 * most MAX_STRING_TABLES), where the column's ids span a range no wider
 * than the rows: its value for every id of the range, a bit each, made on
 * every core over the ids in order, so that the texts are read as they lie
 * in the dictionary (back to back: rf_like_run_many) and each row then
 * looks up one bit. Returns how many were made (tabs[i].bits malloc'd). */
static int string_tables(const rf_table *in, const rf_code *filter, rf_id_bits *tabs)
{
    int ntabs = 0;
    if (!filter || in->nrows < TABLE_MIN_ROWS)
        return 0;
    for (int k = 2; k < filter->n && ntabs < MAX_STRING_TABLES; k++) {
        const rf_instr *op = &filter->ins[k], *pat = &filter->ins[k - 1], *col = &filter->ins[k - 2];
        if ((op->op != RF_EX_LIKE && op->op != RF_EX_CONTAINS) || pat->op != RF_EX_CONST || col->op != RF_EX_COL ||
            col->index < 0 || col->index >= in->arity)
            continue;
        const rf_word *ids = in->cols[col->index];
        rf_word lo = ids[0], hi = ids[0];
        for (size_t i = 1; i < in->nrows; i++) {
            lo = ids[i] < lo ? ids[i] : lo;
            hi = ids[i] > hi ? ids[i] : hi;
        }
        if (hi - lo >= in->nrows || hi >= rf_str_count())
            continue;   /* sparse ids: matching each row's text costs less */
        table_job j = {.lo = lo, .n = (size_t)(hi - lo) + 1};
        const char *p = rf_str_get(pat->value);
        size_t m = rf_str_len(pat->value);
        if (op->op == RF_EX_LIKE)
            rf_like_compile(&j.lp, p, m);
        else
            rf_contains_compile(&j.lp, p, m);
        int pieces = rf_prims_threads() * 4;
        j.per = (j.n + (size_t)pieces - 1) / (size_t)pieces;
        j.per = (j.per + TABLE_BLOCK - 1) / TABLE_BLOCK * TABLE_BLOCK;
        j.bits = rf_calloc((j.n + 63) / 64, sizeof *j.bits);
        rf_par_for((int)((j.n + j.per - 1) / j.per), table_piece, &j);
        tabs[ntabs++] = (rf_id_bits){op, lo, j.n, j.bits};
    }
    return ntabs;
}

static void map_piece(void *ctx, int p)
{
    map_job *j = ctx;
    size_t n = j->in->nrows;
    size_t b = n * (size_t)p / (size_t)j->npieces, e = n * (size_t)(p + 1) / (size_t)j->npieces;
    rf_emitter em;
    rf_emitter_init(&em, j->filter, j->nproj, j->proj);
    rf_emitter_use_bits(&em, j->tabs, j->ntabs);
    rf_table_init(&j->pieces[p], j->nproj);
    rf_table *cols_src = (rf_table *)j->in;
    for (size_t base = b; base < e; base += RF_BATCH) {
        int cnt = e - base < RF_BATCH ? (int)(e - base) : RF_BATCH;
        if (!rf_emit_batch(&em, cols_src->cols, base, cnt, &j->pieces[p], &j->sts[p]))
            break;
    }
    rf_emitter_free(&em);
}

bool rf_codes_intern(const rf_code *filter, int nproj, const rf_code *proj)
{
    bool r = filter && rf_code_interns(filter);
    for (int j = 0; j < nproj && !r; j++)
        r = rf_code_interns(&proj[j]);
    return r;
}

bool rf_pieces_status(rf_status *sts, int n, rf_status *st)
{
    for (int p = 0; p < n; p++)
        if (rf_status_failed(&sts[p])) {
            rf_fail(st, sts[p].code, "%s", sts[p].message);
            return false;
        }
    return true;
}

bool rf_pieces_finish(rf_table *pieces, rf_status *sts, int n, rf_table *out, rf_status *st)
{
    bool ok = rf_pieces_status(sts, n, st);
    rf_concat_pieces(pieces, n, out);
    if (!ok)
        rf_table_clear(out);
    free(pieces);
    free(sts);
    return ok;
}

bool rf_prim_map(const rf_table *in, const rf_code *filter, int nproj, const rf_code *proj,
                 rf_table *out, rf_status *st)
{
    map_job j = {.in = in, .filter = filter, .proj = proj, .nproj = nproj};
    rf_id_bits tabs[MAX_STRING_TABLES];
    j.ntabs = getenv("RF_CPU_STRING_TABLES") && strcmp(getenv("RF_CPU_STRING_TABLES"), "off") == 0
                  ? 0 : string_tables(in, filter, tabs);   /* (off: for measuring) */
    j.tabs = tabs;
    j.npieces = rf_codes_intern(filter, nproj, proj) ? 1 : rf_pieces_for(in->nrows, 1);
    j.pieces = rf_calloc((size_t)j.npieces, sizeof *j.pieces);
    j.sts = rf_calloc((size_t)j.npieces, sizeof *j.sts);
    rf_par_for(j.npieces, map_piece, &j);
    for (int i = 0; i < j.ntabs; i++)
        free((void *)tabs[i].bits);
    return rf_pieces_finish(j.pieces, j.sts, j.npieces, out, st);
}

typedef struct map_many_job {
    const rf_table *in;
    int nmaps, npieces;
    const rf_map_spec *maps;
    rf_table *pieces;        /* [piece * nmaps + map] */
    rf_status *sts;
} map_many_job;

/* One piece of the input through every map, batch by batch: each batch
 * is read once, while it is in cache, by all of them. */
static void map_many_piece(void *ctx, int p)
{
    map_many_job *j = ctx;
    size_t n = j->in->nrows;
    size_t b = n * (size_t)p / (size_t)j->npieces, e = n * (size_t)(p + 1) / (size_t)j->npieces;
    rf_emitter *em = rf_calloc((size_t)j->nmaps, sizeof *em);
    rf_table *out = &j->pieces[(size_t)p * (size_t)j->nmaps];
    for (int m = 0; m < j->nmaps; m++) {
        rf_emitter_init(&em[m], j->maps[m].filter, j->maps[m].nproj, j->maps[m].proj);
        rf_table_init(&out[m], j->maps[m].nproj);
    }
    bool ok = true;
    for (size_t base = b; base < e && ok; base += RF_BATCH) {
        int cnt = e - base < RF_BATCH ? (int)(e - base) : RF_BATCH;
        for (int m = 0; m < j->nmaps && ok; m++)
            ok = rf_emit_batch(&em[m], j->in->cols, base, cnt, &out[m], &j->sts[p]);
    }
    for (int m = 0; m < j->nmaps; m++)
        rf_emitter_free(&em[m]);
    free(em);
}

bool rf_prim_map_many(const rf_table *in, int nmaps, const rf_map_spec *maps, rf_table *outs, rf_status *st)
{
    map_many_job j = {.in = in, .nmaps = nmaps, .maps = maps};
    j.npieces = rf_pieces_for(in->nrows, 1);
    j.pieces = rf_calloc((size_t)j.npieces * (size_t)nmaps, sizeof *j.pieces);
    j.sts = rf_calloc((size_t)j.npieces, sizeof *j.sts);
    rf_par_for(j.npieces, map_many_piece, &j);
    bool ok = rf_pieces_status(j.sts, j.npieces, st);
    rf_table *pieces = rf_calloc((size_t)j.npieces, sizeof *pieces);
    for (int m = 0; m < nmaps; m++) {
        for (int p = 0; p < j.npieces; p++)
            pieces[p] = j.pieces[(size_t)p * (size_t)nmaps + (size_t)m];
        rf_concat_pieces(pieces, j.npieces, &outs[m]);
        if (!ok)
            rf_table_clear(&outs[m]);
    }
    free(pieces);
    free(j.pieces);
    free(j.sts);
    return ok;
}

void rf_concat_pieces(rf_table *pieces, int n, rf_table *out)
{
    if (n == 1) {
        *out = pieces[0];
        return;
    }
    int arity = pieces[0].arity;
    size_t total = 0;
    for (int p = 0; p < n; p++)
        total += pieces[p].nrows;
    rf_table_init(out, arity);
    if (arity == 0) {
        out->nrows = total > 0;
    } else {
        rf_table_resize(out, total);
        rf_table_advise(out);
        size_t pos = 0;
        for (int p = 0; p < n; p++) {
            for (int c = 0; c < arity; c++)
                if (pieces[p].nrows)
                    memcpy(out->cols[c] + pos, pieces[p].cols[c], pieces[p].nrows * sizeof(rf_word));
            pos += pieces[p].nrows;
        }
    }
    for (int p = 0; p < n; p++)
        rf_table_free(&pieces[p]);
}
