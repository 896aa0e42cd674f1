/* Loading input files fast without changing what is loaded:
 *  - the parallel parse of TBL and TSV text (pieces, local string
 *    dictionaries) gives exactly the rows, row order, string ids and
 *    dictionary of the sequential one, and exactly its first error (line,
 *    column, message) wherever the bad line lies, and the same table and
 *    dictionary up to it;
 *  - the `needed` mask: unread columns are 0, their strings not interned,
 *    their bad values still errors;
 *  - the fast path for lines of numbers: the general path's table and
 *    errors, whatever odd lines the file holds;
 *  - rf_needed_columns on hand-built kernels (each kernel's rule) and on a
 *    compiled program, and a run that prunes (same answer, stats line). */
#define _POSIX_C_SOURCE 200809L
#include <CUnit/Basic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "frontend.h"
#include "rf_prims.h"
#include "rf_strdict.h"
#include "runtime.h"

static uint64_t g_rng = 0x5eed;

static uint64_t rnd(void) /* splitmix64 */
{
    uint64_t z = (g_rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* ---- generated files ----
 * Columns: int32 key, string flag (3 values), decimal[2] price, date,
 * string comment (repeats across the whole file, so pieces share strings),
 * int64. About 9 MB: with 4 threads the parser cuts it into pieces. */
#define NCOLS 6
static const rf_type g_types[NCOLS] = {RF_TYPE_INT32, RF_TYPE_STRING, RF_TYPE_DECIMAL0 + 2,
                                       RF_TYPE_DATE,  RF_TYPE_STRING, RF_TYPE_INT64};
#define GEN_ROWS 150000

typedef RF_VEC(char) text_buf;

static void put(text_buf *b, const char *s)
{
    while (*s)
        RF_PUSH(*b, *s++);
}

/* The comment of a row: from a pool of GEN_ROWS/3 texts; in TSV some carry
 * escapes (their local dictionary entry is a copy) or are long. */
static void comment(char *buf, size_t cap, bool tsv)
{
    uint64_t k = rnd() % (GEN_ROWS / 3);
    if (tsv && k % 97 == 0)
        snprintf(buf, cap, "tab\\there \\\\ %llu", (unsigned long long)k);
    else if (tsv && k % 89 == 0)
        snprintf(buf, cap, "\\#hash %llu", (unsigned long long)k);
    else if (tsv && k == 5)
        snprintf(buf, cap, "\\e");
    else if (k % 1000 == 7)
        snprintf(buf, cap, "long comment %llu %0900llu", (unsigned long long)k, (unsigned long long)k);
    else
        snprintf(buf, cap, "carefully final deposits %llu", (unsigned long long)k);
}

/* TBL (sep '|', every field followed by one) or TSV; blank lines (and in
 * TSV '#' comment lines) now and then, a CRLF line now and then. */
static char *gen_text(bool tsv, size_t rows, size_t *len)
{
    static const char *const flags[] = {"N", "O", "F"};
    text_buf b = {0};
    char line[2048], com[1200];
    for (size_t i = 0; i < rows; i++) {
        if (i % 4999 == 17)
            put(&b, "\n");
        if (tsv && i % 3001 == 5)
            put(&b, "# a comment line\n");
        comment(com, sizeof com, tsv);
        uint64_t r = rnd();
        int y = 1992 + (int)(r % 7), m = 1 + (int)((r >> 8) % 12), d = 1 + (int)((r >> 16) % 28);
        char sep = tsv ? '\t' : '|';
        snprintf(line, sizeof line, "%zu%c%s%c%llu.%02llu%c%04d-%02d-%02d%c%s%c%lld%s%s", i + 1, sep,
                 flags[r % 3], sep, (unsigned long long)(r >> 20) % 100000, (unsigned long long)(r >> 40) % 100,
                 sep, y, m, d, sep, com, sep, (long long)(r >> 3) - (long long)(r >> 5), tsv ? "" : "|",
                 i % 777 == 3 ? "\r\n" : "\n");
        put(&b, line);
    }
    RF_PUSH(b, '\0');
    *len = b.len - 1;
    return b.items;
}

/* ---- parsing and comparing ---- */
typedef struct snapshot {
    bool ok;
    rf_status st;
    rf_table t;
    size_t nstr;
    char **strs;             /* the whole dictionary after the parse */
} snapshot;

/* Parses with `threads` threads into a fresh dictionary that already holds
 * two strings (one of them occurs in the files). */
static void parse_snap(const char *name, const char *text, size_t len, rf_file_format fmt, const bool *needed,
                       int threads, snapshot *s)
{
    rf_str_reset();
    rf_str_intern("seed", 4);
    rf_str_intern("O", 1);
    rf_prims_set_threads(threads);
    rf_status_init(&s->st);
    rf_table_init(&s->t, NCOLS);
    s->ok = rf_parse_facts(name, text, len, fmt, NCOLS, g_types, needed, &s->t, &s->st);
    s->nstr = rf_str_count();
    s->strs = rf_calloc(s->nstr + 1, sizeof *s->strs);
    for (size_t i = 0; i < s->nstr; i++)
        s->strs[i] = rf_strndup(rf_str_get(i), rf_str_len(i));
}

static void snap_free(snapshot *s)
{
    for (size_t i = 0; i < s->nstr; i++)
        free(s->strs[i]);
    free(s->strs);
    rf_table_free(&s->t);
}

/* Same result, same table word for word, same dictionary id for id. */
static void check_same(const snapshot *a, const snapshot *b)
{
    CU_ASSERT_EQUAL(a->ok, b->ok);
    CU_ASSERT_STRING_EQUAL(a->st.message, b->st.message);
    CU_ASSERT_EQUAL_FATAL(a->t.nrows, b->t.nrows);
    size_t diff = 0;
    for (int c = 0; c < NCOLS; c++)
        for (size_t i = 0; i < a->t.nrows; i++)
            diff += a->t.cols[c][i] != b->t.cols[c][i];
    CU_ASSERT_EQUAL(diff, 0);
    CU_ASSERT_EQUAL_FATAL(a->nstr, b->nstr);
    for (size_t i = 0; i < a->nstr; i++)
        if (strcmp(a->strs[i], b->strs[i]) != 0) {
            CU_FAIL("string ids differ");
            break;
        }
}

/* The parse with 4 threads against the sequential one; returns the
 * sequential snapshot's message (static). */
static const char *compare_parses(const char *name, const char *text, size_t len, rf_file_format fmt,
                                  const bool *needed)
{
    static char msg[1024];
    snapshot seq, par;
    parse_snap(name, text, len, fmt, needed, 1, &seq);
    parse_snap(name, text, len, fmt, needed, 4, &par);
    check_same(&seq, &par);
    snprintf(msg, sizeof msg, "%s", seq.ok ? "" : seq.st.message);
    if (strcmp(seq.st.message, par.st.message) != 0)
        fprintf(stderr, "\n  sequential: %s\n  parallel:   %s\n", seq.st.message, par.st.message);
    snap_free(&seq);
    snap_free(&par);
    return msg;
}

static void test_parallel_equals_sequential(void)
{
    for (int tsv = 0; tsv < 2; tsv++) {
        size_t len;
        char *text = gen_text(tsv, GEN_ROWS, &len);
        CU_ASSERT(len > 8 * ((size_t)1 << 20)); /* big enough to be cut into pieces */
        snapshot s;
        parse_snap("f", text, len, tsv ? RF_FORMAT_TSV : RF_FORMAT_TBL, NULL, 4, &s);
        CU_ASSERT_TRUE(s.ok);
        if (!s.ok)
            fprintf(stderr, "\n  %s\n", s.st.message);
        CU_ASSERT_EQUAL(s.t.nrows, GEN_ROWS);
        CU_ASSERT_EQUAL(s.t.cols[0][0], 1); /* file order */
        CU_ASSERT_EQUAL(s.t.cols[0][GEN_ROWS - 1], GEN_ROWS);
        CU_ASSERT_EQUAL(s.t.cols[1][0] <= 4, true); /* "seed", "O", then the first row's flag */
        snap_free(&s);
        CU_ASSERT_STRING_EQUAL(compare_parses("f", text, len, tsv ? RF_FORMAT_TSV : RF_FORMAT_TBL, NULL), "");
        free(text);
    }
}

/* Rows appended to a table that already holds rows (inline facts). */
static void test_parallel_appends(void)
{
    size_t len;
    char *text = gen_text(false, GEN_ROWS, &len);
    rf_table t[2];
    size_t nstr[2];
    for (int k = 0; k < 2; k++) {
        rf_str_reset();
        rf_prims_set_threads(k ? 4 : 1);
        rf_word row[NCOLS] = {7, rf_str_intern("x", 1), 1, 2, rf_str_intern("y", 1), 3};
        rf_table_init(&t[k], NCOLS);
        rf_table_append_row(&t[k], row);
        rf_status st;
        rf_status_init(&st);
        CU_ASSERT_TRUE(rf_parse_facts("a.tbl", text, len, RF_FORMAT_TBL, NCOLS, g_types, NULL, &t[k], &st));
        CU_ASSERT_EQUAL(t[k].nrows, GEN_ROWS + 1);
        nstr[k] = rf_str_count();
    }
    CU_ASSERT_EQUAL(nstr[0], nstr[1]);
    CU_ASSERT_EQUAL_FATAL(t[0].nrows, t[1].nrows);
    for (int c = 0; c < NCOLS; c++)
        CU_ASSERT_EQUAL(memcmp(t[0].cols[c], t[1].cols[c], t[0].nrows * sizeof(rf_word)), 0);
    CU_ASSERT_EQUAL(t[1].cols[0][0], 7);
    CU_ASSERT_EQUAL(t[1].cols[0][1], 1);
    rf_table_free(&t[0]);
    rf_table_free(&t[1]);
    free(text);
}

/* Text whose end is one very long line (longer than several pieces):
 * the pieces it covers are empty, and when it has no newline the piece
 * holding it is not the last piece. Compared with and without a needed
 * mask, into a fresh table and after a row already there (the parser then
 * zeroes unread columns itself), and with a bad value in the long line. */
static char *gen_long_tail(bool newline_then_short, bool bad, size_t *len)
{
    size_t head_len;
    char *head = gen_text(false, GEN_ROWS / 3, &head_len);
    text_buf b = {0};
    put(&b, head);
    put(&b, bad ? "999999|N|1.00|1996-02-30|" : "999999|N|1.00|1996-02-03|");
    for (size_t i = 0; i < ((size_t)5 << 20); i++)
        RF_PUSH(b, (char)('a' + i % 26));
    put(&b, "|42|");
    if (newline_then_short)
        put(&b, "\n1000000|F|2.00|1997-01-01|short|7|");
    RF_PUSH(b, '\0');
    *len = b.len - 1;
    free(head);
    return b.items;
}

static void test_long_last_line(void)
{
    const bool need[NCOLS] = {true, false, true, false, false, true};
    for (int variant = 0; variant < 2; variant++) {
        size_t len;
        char *text = gen_long_tail(variant == 1, false, &len);
        CU_ASSERT(len > 8 * ((size_t)1 << 20));
        CU_ASSERT_STRING_EQUAL(compare_parses("l.tbl", text, len, RF_FORMAT_TBL, NULL), "");
        CU_ASSERT_STRING_EQUAL(compare_parses("l.tbl", text, len, RF_FORMAT_TBL, need), "");
        snapshot s;
        parse_snap("l.tbl", text, len, RF_FORMAT_TBL, need, 4, &s);
        CU_ASSERT_EQUAL(s.t.nrows, GEN_ROWS / 3 + 1 + (size_t)variant);
        if (s.t.nrows == GEN_ROWS / 3 + 1 + (size_t)variant) {
            size_t last = s.t.nrows - 1 - (size_t)variant;
            CU_ASSERT_EQUAL(s.t.cols[0][last], 999999);
            CU_ASSERT_EQUAL(s.t.cols[3][last], 0); /* not needed */
            CU_ASSERT_EQUAL(s.t.cols[5][last], 42);
        }
        snap_free(&s);
        /* after a row already in the table */
        rf_table t[2];
        for (int k = 0; k < 2; k++) {
            rf_str_reset();
            rf_prims_set_threads(k ? 4 : 1);
            rf_word row[NCOLS] = {7, rf_str_intern("x", 1), 1, 2, rf_str_intern("y", 1), 3};
            rf_table_init(&t[k], NCOLS);
            rf_table_append_row(&t[k], row);
            rf_status st;
            rf_status_init(&st);
            CU_ASSERT_TRUE(rf_parse_facts("l.tbl", text, len, RF_FORMAT_TBL, NCOLS, g_types, need, &t[k], &st));
        }
        CU_ASSERT_EQUAL_FATAL(t[0].nrows, t[1].nrows);
        for (int c = 0; c < NCOLS; c++)
            CU_ASSERT_EQUAL(memcmp(t[0].cols[c], t[1].cols[c], t[0].nrows * sizeof(rf_word)), 0);
        rf_table_free(&t[0]);
        rf_table_free(&t[1]);
        free(text);
        /* a bad date in the long line: its line number and column */
        text = gen_long_tail(variant == 1, true, &len);
        const char *long_line = strstr(text, "\n999999|") + 1;
        size_t line = 1;
        for (const char *c = text; c < long_line; c++)
            line += *c == '\n';
        char want[256];
        snprintf(want, sizeof want, "l.tbl:%zu:%zu: error: field 4: day out of range for its month: '1996-02-30'",
                 line, strlen("999999|N|1.00|") + 1);
        CU_ASSERT_STRING_EQUAL(compare_parses("l.tbl", text, len, RF_FORMAT_TBL, need), want);
        free(text);
    }
}

/* ---- errors ---- */
/* Line number `line`'s start (1-based), or NULL past the end. */
static char *line_at(char *text, size_t len, size_t line)
{
    char *p = text, *end = text + len;
    for (size_t l = 1; l < line; l++) {
        p = memchr(p, '\n', (size_t)(end - p));
        if (!p)
            return NULL;
        p++;
    }
    return p < end ? p : NULL;
}

static bool is_data_line(const char *p, bool tsv) { return *p != '\n' && *p != '\r' && !(tsv && *p == '#'); }

/* The first data line at or after line `line` (its number). */
static size_t data_line(char *text, size_t len, size_t line, bool tsv)
{
    for (char *p; (p = line_at(text, len, line)) != NULL; line++)
        if (is_data_line(p, tsv))
            return line;
    return 0;
}

/* The number of the line that begins after the first newline at or after
 * byte `off`: where the parser starts a piece when it cuts there. */
static size_t line_after(const char *text, size_t len, size_t off)
{
    size_t line = 2;
    for (size_t i = 0; i < off && i < len; i++)
        line += text[i] == '\n';
    return line;
}

/* Rows before line `line` (its data lines). */
static size_t rows_before(char *text, size_t len, size_t line, bool tsv)
{
    size_t rows = 0, l = 1;
    for (const char *p = text, *end = text + len; p < end && l < line; l++) {
        rows += is_data_line(p, tsv);
        p = memchr(p, '\n', (size_t)(end - p)) + 1;
    }
    return rows;
}

/* Start of field f (0-based) of the line at p. */
static char *field_at(char *p, int f, char sep)
{
    for (int k = 0; k < f; k++)
        p = strchr(p, sep) + 1;
    return p;
}

/* Overwrites the date (field 4) of data line `line` with a bad one;
 * returns the message a parse gives for it. */
static const char *plant_bad_date(char *text, size_t len, size_t line, bool tsv, const char *name)
{
    static char msg[512];
    char *p = line_at(text, len, line), *f = field_at(p, 3, tsv ? '\t' : '|');
    memcpy(f, "1996-02-30", 10);
    if (tsv)
        snprintf(msg, sizeof msg, "%s:%zu: error: field 4: day out of range for its month: '1996-02-30'", name, line);
    else
        snprintf(msg, sizeof msg, "%s:%zu:%zu: error: field 4: day out of range for its month: '1996-02-30'", name,
                 line, (size_t)(f - p) + 1);
    return msg;
}

/* compare_parses, and the rows the sequential parse kept. */
static size_t g_rows_kept;

static const char *compare_parses_rows(const char *name, const char *text, size_t len, rf_file_format fmt,
                                       const bool *needed)
{
    static char msg[1024];
    snapshot seq, par;
    parse_snap(name, text, len, fmt, needed, 1, &seq);
    parse_snap(name, text, len, fmt, needed, 4, &par);
    check_same(&seq, &par);
    if (strcmp(seq.st.message, par.st.message) != 0)
        fprintf(stderr, "\n  sequential: %s\n  parallel:   %s\n", seq.st.message, par.st.message);
    snprintf(msg, sizeof msg, "%s", seq.ok ? "" : seq.st.message);
    g_rows_kept = seq.t.nrows;
    snap_free(&seq);
    snap_free(&par);
    return msg;
}

/* A bad date on one line, at the start, in the middle, at the end and on
 * the first line of where pieces begin: the same message (line and byte
 * column exact) and the same table and dictionary up to it. */
static void test_error_anywhere(void)
{
    for (int tsv = 0; tsv < 2; tsv++) {
        const char *name = tsv ? "e.tsv" : "e.tbl";
        rf_file_format fmt = tsv ? RF_FORMAT_TSV : RF_FORMAT_TBL;
        size_t len;
        char *orig = gen_text(tsv, GEN_ROWS, &len);
        size_t nlines = 0;
        for (size_t i = 0; i < len; i++)
            nlines += orig[i] == '\n';
        /* Where rf_parse_facts cuts with 4 threads (io.c: 4 pieces a thread,
         * at least 1 MB each): the first line of every piece. Should those
         * constants change, these are still errors at many places. */
        size_t pieces = len >> 20 < 16 ? len >> 20 : 16;
        size_t lines[24], n = 0;
        lines[n++] = 1;
        lines[n++] = nlines / 3;
        lines[n++] = nlines;
        for (size_t k = 1; k < pieces && n < 24; k++)
            lines[n++] = line_after(orig, len, len / pieces * k);
        for (size_t i = 0; i < n; i++) {
            size_t line = data_line(orig, len, lines[i] ? lines[i] : 1, tsv);
            if (!line)
                line = data_line(orig, len, 1, tsv);
            char *text = rf_strndup(orig, len);
            char want[512];
            snprintf(want, sizeof want, "%s", plant_bad_date(text, len, line, tsv, name));
            CU_ASSERT_STRING_EQUAL(compare_parses_rows(name, text, len, fmt, NULL), want);
            CU_ASSERT_EQUAL(g_rows_kept, rows_before(text, len, line, tsv));
            free(text);
        }
        free(orig);
    }
}

/* Two bad lines: the earlier one is reported, whatever its kind. Other
 * kinds of error in a late piece. */
static void test_error_kinds(void)
{
    size_t len;
    char *orig = gen_text(false, GEN_ROWS, &len);
    size_t early = data_line(orig, len, line_after(orig, len, len / 8), false);
    size_t late = data_line(orig, len, line_after(orig, len, len / 8 * 7), false);
    char want[512];
    /* an early bad date and a late line without its final '|' */
    char *text = rf_strndup(orig, len);
    snprintf(want, sizeof want, "%s", plant_bad_date(text, len, early, false, "k.tbl"));
    char *p = line_at(text, len, late), *nl = strchr(p, '\n');
    nl[nl[-1] == '\r' ? -2 : -1] = 'x';
    CU_ASSERT_STRING_EQUAL(compare_parses_rows("k.tbl", text, len, RF_FORMAT_TBL, NULL), want);
    /* now the late one alone */
    plant_bad_date(text, len, early, false, "k.tbl");
    memcpy(field_at(line_at(text, len, early), 3, '|'), "1996-02-28", 10);
    size_t linelen = (size_t)(nl - p) - (nl[-1] == '\r');
    snprintf(want, sizeof want, "k.tbl:%zu:%zu: error: the line does not end with '|' (tbl format)", late,
             linelen + 1);
    CU_ASSERT_STRING_EQUAL(compare_parses_rows("k.tbl", text, len, RF_FORMAT_TBL, NULL), want);
    free(text);
    /* a late line with a field too few */
    text = rf_strndup(orig, len);
    *strchr(line_at(text, len, late), '|') = ',';
    snprintf(want, sizeof want, "k.tbl:%zu:1: error: expected 6 fields, found 5", late);
    CU_ASSERT_STRING_EQUAL(compare_parses_rows("k.tbl", text, len, RF_FORMAT_TBL, NULL), want);
    free(text);
    /* a late decimal with too many places (the '.' moved left) */
    text = rf_strndup(orig, len);
    char *price = field_at(line_at(text, len, late), 2, '|'), *dot = strchr(price, '.');
    CU_ASSERT_FATAL(dot > price + 1);
    dot[0] = dot[-1];
    dot[-1] = '.';
    char *bar = strchr(price, '|');
    snprintf(want, sizeof want, "k.tbl:%zu:%zu: error: field 3: %.*s has more than 2 decimal places", late,
             (size_t)(price - line_at(text, len, late)) + 1, (int)(bar - price), price);
    CU_ASSERT_STRING_EQUAL(compare_parses_rows("k.tbl", text, len, RF_FORMAT_TBL, NULL), want);
    free(text);
    free(orig);
    /* TSV: a late bad escape */
    orig = gen_text(true, GEN_ROWS, &len);
    late = data_line(orig, len, line_after(orig, len, len / 8 * 7), true);
    text = rf_strndup(orig, len);
    char *com = field_at(line_at(text, len, late), 4, '\t');
    memcpy(com, "\\q", 2);
    snprintf(want, sizeof want, "k.tsv:%zu: error: field 5: bad escape '\\q': '", late);
    const char *got = compare_parses_rows("k.tsv", text, len, RF_FORMAT_TSV, NULL);
    CU_ASSERT_EQUAL(strncmp(got, want, strlen(want)), 0);
    free(text);
    free(orig);
}

/* ---- the needed mask ---- */
static void test_needed_mask(void)
{
    const bool need[NCOLS] = {true, false, false, true, false, true};
    for (int tsv = 0; tsv < 2; tsv++) {
        rf_file_format fmt = tsv ? RF_FORMAT_TSV : RF_FORMAT_TBL;
        size_t len;
        char *text = gen_text(tsv, GEN_ROWS, &len);
        snapshot full, seq, par;
        parse_snap("m", text, len, fmt, NULL, 4, &full);
        parse_snap("m", text, len, fmt, need, 1, &seq);
        parse_snap("m", text, len, fmt, need, 4, &par);
        check_same(&seq, &par);
        CU_ASSERT_TRUE(seq.ok);
        CU_ASSERT_EQUAL(seq.nstr, 2); /* the seeds only: no string of the file was interned */
        CU_ASSERT_EQUAL_FATAL(seq.t.nrows, full.t.nrows);
        size_t bad = 0;
        for (int c = 0; c < NCOLS; c++)
            for (size_t i = 0; i < seq.t.nrows; i++)
                bad += seq.t.cols[c][i] != (need[c] ? full.t.cols[c][i] : 0);
        CU_ASSERT_EQUAL(bad, 0);
        snap_free(&full);
        snap_free(&seq);
        snap_free(&par);
        /* An unread column is still checked: a bad date (column 4) in a
         * late line, with only column 1 read. */
        const bool only0[NCOLS] = {true, false, false, false, false, false};
        size_t late = data_line(text, len, line_after(text, len, len / 8 * 7), tsv);
        char want[512];
        snprintf(want, sizeof want, "%s", plant_bad_date(text, len, late, tsv, "m"));
        CU_ASSERT_STRING_EQUAL(compare_parses_rows("m", text, len, fmt, only0), want);
        CU_ASSERT_STRING_EQUAL(compare_parses_rows("m", text, len, fmt, NULL), want);
        free(text);
    }
    /* An unread TSV string with a bad escape is still an error (sequential
     * and parallel), one without is not interned. */
    rf_str_reset();
    rf_prims_set_threads(1);
    const char *t2 = "1\tok\\tfine\n2\tbad\\q\n";
    const rf_type ty2[] = {RF_TYPE_INT32, RF_TYPE_STRING};
    const bool n2[] = {true, false};
    rf_table t;
    rf_table_init(&t, 2);
    rf_status st;
    rf_status_init(&st);
    CU_ASSERT_FALSE(rf_parse_facts("s.tsv", t2, strlen(t2), RF_FORMAT_TSV, 2, ty2, n2, &t, &st));
    CU_ASSERT_STRING_EQUAL(st.message, "s.tsv:2: error: field 2: bad escape '\\q': 'bad\\q'");
    CU_ASSERT_EQUAL(t.nrows, 1);
    CU_ASSERT_EQUAL(t.cols[1][0], 0);
    CU_ASSERT_EQUAL(rf_str_count(), 0);
    rf_table_free(&t);
}

/* ---- the local dictionary ---- */
static void test_strdict(void)
{
    rf_str_reset();
    rf_str_intern("b", 1);
    rf_strdict *d = rf_strdict_new();
    char tmp[8] = "zz";
    CU_ASSERT_EQUAL(rf_strdict_add(d, "a", 1, false), 0);
    CU_ASSERT_EQUAL(rf_strdict_add(d, "b", 1, false), 1);
    CU_ASSERT_EQUAL(rf_strdict_add(d, tmp, 2, true), 2);
    tmp[0] = 'q'; /* a copy does not see it */
    CU_ASSERT_EQUAL(rf_strdict_add(d, "a", 1, false), 0);
    CU_ASSERT_EQUAL(rf_strdict_add(d, "zz", 2, false), 2);
    CU_ASSERT_EQUAL(rf_strdict_add(d, "", 0, false), 3);
    for (int i = 0; i < 5000; i++) { /* grows */
        char s[32];
        int n = snprintf(s, sizeof s, "s%d", i);
        CU_ASSERT_EQUAL(rf_strdict_add(d, s, (size_t)n, true), (uint32_t)(4 + i));
    }
    CU_ASSERT_EQUAL(rf_strdict_count(d), 5004);
    size_t n;
    const char *s = rf_strdict_get(d, 2, &n);
    CU_ASSERT(n == 2 && memcmp(s, "zz", 2) == 0);
    rf_word *ids = rf_calloc(rf_strdict_count(d), sizeof *ids);
    rf_strdict_to_global(d, ids);
    CU_ASSERT_EQUAL(ids[0], 1); /* "a" new after "b" */
    CU_ASSERT_EQUAL(ids[1], 0); /* "b" was there */
    CU_ASSERT_EQUAL(ids[2], 2);
    CU_ASSERT_EQUAL(ids[3], 3);
    CU_ASSERT_EQUAL(ids[5003], 5003);
    CU_ASSERT_STRING_EQUAL(rf_str_get(ids[4 + 4999]), "s4999");
    CU_ASSERT_EQUAL(rf_str_intern("zz", 2), 2);
    CU_ASSERT_EQUAL(rf_str_count(), 5004);
    free(ids);
    rf_strdict_free(d);
    rf_str_reset();
}

/* ---- which columns a program reads (rf_needed_columns) ---- */
static rf_code code_of_cols(int n, const int *cols)
{
    rf_expr *e = rf_expr_leaf(RF_EX_COL, RF_TYPE_INT64, cols[0]);
    for (int i = 1; i < n; i++)
        e = rf_expr_binary(RF_EX_ADD, RF_TYPE_INT64, e, rf_expr_leaf(RF_EX_COL, RF_TYPE_INT64, cols[i]));
    rf_code c;
    rf_code_from_expr(&c, e);
    rf_expr_free(e);
    return c;
}

static void check_mask(bool **need, int v, int arity, const char *want)
{
    if (!want) {
        CU_ASSERT_PTR_NULL(need[v]);
        return;
    }
    CU_ASSERT_PTR_NOT_NULL_FATAL(need[v]);
    char got[32] = "";
    for (int c = 0; c < arity; c++)
        got[c] = need[v][c] ? '1' : '0';
    CU_ASSERT_STRING_EQUAL(got, want);
    if (strcmp(got, want) != 0)
        fprintf(stderr, "\n  var %d: columns %s, expected %s\n", v, got, want);
}

/* One kernel of each kind over loaded variables, in one block. */
static void test_needed_kernels(void)
{
    enum { R, S, T, U, Q, W, C, Y, X, Z, SELF, O, NV };
    static const int arity[NV] = {4, 3, 2, 3, 3, 2, 2, 3, 3, 5, 4, 3};
    rf_hvar vars[NV];
    memset(vars, 0, sizeof vars);
    for (int v = 0; v < NV; v++)
        vars[v].arity = arity[v];
    vars[Y].is_output = true;
    rf_kernel k[32];
    memset(k, 0, sizeof k);
    int nk = 0;
    for (int v = 0; v < O; v++) /* every variable but O is loaded */
        k[nk++] = (rf_kernel){.op = RF_K_LOAD, .out = v, .in = {-1, -1}};
    /* r: a MAP filters on column 2 and keeps column 0 */
    k[nk++] = (rf_kernel){.op = RF_K_MAP, .out = O, .in = {R, -1}, .filter = code_of_cols(1, (int[]){2}),
                          .nproj = 1, .proj = (rf_code[]){code_of_cols(1, (int[]){0})}};
    /* s JOIN t on 1 key: the codes index s ++ t (s has 3 columns) */
    k[nk++] = (rf_kernel){.op = RF_K_JOIN, .out = O, .in = {S, T}, .nkeys = 1,
                          .filter = code_of_cols(1, (int[]){2}), .nproj = 1,
                          .proj = (rf_code[]){code_of_cols(1, (int[]){4})}};
    /* q ANTIJOIN u on 2 keys: q whole, u its keys */
    k[nk++] = (rf_kernel){.op = RF_K_ANTIJOIN, .out = O, .in = {Q, U}, .nkeys = 2};
    /* x sorted: whole rows */
    k[nk++] = (rf_kernel){.op = RF_K_SORT, .out = O, .in = {X, -1}};
    /* z: the keys of an ANTIJOIN and a column of a MAP */
    k[nk++] = (rf_kernel){.op = RF_K_ANTIJOIN, .out = O, .in = {O, Z}, .nkeys = 1};
    k[nk++] = (rf_kernel){.op = RF_K_MAP, .out = O, .in = {Z, -1}, .nproj = 1,
                          .proj = (rf_code[]){code_of_cols(1, (int[]){3})}};
    /* self JOIN self: filter reads l's column 1, projection r's column 2 */
    k[nk++] = (rf_kernel){.op = RF_K_JOIN, .out = O, .in = {SELF, SELF}, .nkeys = 1,
                          .filter = code_of_cols(1, (int[]){1}), .nproj = 2,
                          .proj = (rf_code[]){code_of_cols(1, (int[]){4 + 2}), code_of_cols(1, (int[]){0})}};
    /* w read by a MAP of one column but kept (--print); c a loop condition */
    k[nk++] = (rf_kernel){.op = RF_K_MAP, .out = O, .in = {W, -1}, .nproj = 1,
                          .proj = (rf_code[]){code_of_cols(1, (int[]){0})}};
    k[nk++] = (rf_kernel){.op = RF_K_MAP, .out = O, .in = {C, -1}, .nproj = 1,
                          .proj = (rf_code[]){code_of_cols(1, (int[]){0})}};
    int conds[] = {C};
    rf_hblock blk = {.nkernels = nk, .kernels = k, .term = RF_TERM_HALT, .nconds = 1, .conds = conds};
    rf_hprogram p = {.nvars = NV, .vars = vars, .nblocks = 1, .blocks = &blk};
    bool keep[NV] = {false};
    keep[W] = true;
    bool **need = rf_needed_columns(&p, keep, NULL);
    check_mask(need, R, 4, "1010");
    check_mask(need, S, 3, "101");
    check_mask(need, T, 2, NULL);       /* key + column 1: all */
    check_mask(need, U, 3, "110");
    check_mask(need, Q, 3, NULL);
    check_mask(need, X, 3, NULL);
    check_mask(need, Z, 5, "10010");
    check_mask(need, SELF, 4, "1110");
    check_mask(need, W, 2, NULL);
    check_mask(need, C, 2, NULL);
    check_mask(need, Y, 3, NULL);       /* an output, only loaded */
    check_mask(need, O, 3, NULL);       /* not loaded */
    rf_needed_columns_free(need, NV);
    /* without keep, w is read in column 0 only */
    need = rf_needed_columns(&p, NULL, NULL);
    check_mask(need, W, 2, "10");
    rf_needed_columns_free(need, NV);
    for (int i = 0; i < nk; i++) {
        rf_code_free(&k[i].filter);
        for (int j = 0; j < k[i].nproj; j++)
            rf_code_free(&k[i].proj[j]);
    }
}

/* A code with an operator that needed_cols.c has not judged to read values
 * only (RF_EX_VAR stands in for one that reads a row's position): every
 * column of the kernel's loaded inputs is needed, since rows that differ
 * only in unread columns are merged by the load and such a code could
 * tell them apart. */
static void test_needed_unknown_operator(void)
{
    enum { R, S, T, O, NV };
    static const int arity[NV] = {3, 2, 2, 2};
    rf_hvar vars[NV];
    memset(vars, 0, sizeof vars);
    for (int v = 0; v < NV; v++)
        vars[v].arity = arity[v];
    rf_instr other[] = {{.op = RF_EX_VAR, .type = RF_TYPE_INT64, .index = 0}};
    rf_code other_code = {.n = 1, .ins = other};
    rf_code col0 = code_of_cols(1, (int[]){0}), col1 = code_of_cols(1, (int[]){1});
    rf_kernel k[] = {
        {.op = RF_K_LOAD, .out = R, .in = {-1, -1}},
        {.op = RF_K_LOAD, .out = S, .in = {-1, -1}},
        {.op = RF_K_LOAD, .out = T, .in = {-1, -1}},
        /* r: column 0 and the other operator (in the filter) */
        {.op = RF_K_MAP, .out = O, .in = {R, -1}, .filter = other_code, .nproj = 2,
         .proj = (rf_code[]){col0, col0}},
        /* s JOIN t on 1 key, the other operator in a projection */
        {.op = RF_K_JOIN, .out = O, .in = {S, T}, .nkeys = 1, .nproj = 2,
         .proj = (rf_code[]){col0, other_code}},
    };
    rf_hblock blk = {.nkernels = (int)(sizeof k / sizeof k[0]), .kernels = k, .term = RF_TERM_HALT};
    rf_hprogram p = {.nvars = NV, .vars = vars, .nblocks = 1, .blocks = &blk};
    bool **need = rf_needed_columns(&p, NULL, NULL);
    check_mask(need, R, 3, NULL);
    check_mask(need, S, 2, NULL);
    check_mask(need, T, 2, NULL);
    rf_needed_columns_free(need, NV);
    /* the same kernels with plain column reads prune */
    k[3].filter = (rf_code){0};
    k[4].proj = (rf_code[]){col0, col1};
    need = rf_needed_columns(&p, NULL, NULL);
    check_mask(need, R, 3, "100");
    check_mask(need, S, 2, NULL); /* key and column 1 */
    check_mask(need, T, 2, "10"); /* the key */
    rf_needed_columns_free(need, NV);
    rf_code_free(&col0);
    rf_code_free(&col1);
}

/* A compiled program that reads two of four columns: the mask, then runs
 * over a file whose unread columns hold strings (not interned) and, in a
 * second file, a bad date (still an error). */
static const char *g_prog =
    "r(a, b, c, d) -> int32(a), string(b), date(c), int32(d).\n"
    "q(a, d) -> int32(a), int32(d).\n"
    "q(a, d) <- r(a, _, _, d), d > 0.\n"
    "@output(q).\n";

static char *run_pruned(const rf_hprogram *hp, const char *path, rf_status *st, char **stats)
{
    char *out = NULL, *err = NULL;
    size_t outlen = 0, errlen = 0;
    FILE *fo = open_memstream(&out, &outlen), *fe = open_memstream(&err, &errlen);
    rf_backend *be = rf_backend_cpu_new(2);
    rf_input_override in = {"r", path};
    rf_run_options o = {.backend = be, .ninputs = 1, .inputs = &in, .out = fo, .err = fe, .stats = true};
    rf_status_init(st);
    bool ok = rf_run(hp, &o, st);
    be->destroy(be);
    fclose(fo);
    fclose(fe);
    *stats = err;
    if (!ok) {
        free(out);
        return NULL;
    }
    return out;
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fputs(text, f);
    fclose(f);
}

static void test_pruned_run(void)
{
    rf_str_reset();
    rf_diag diag;
    rf_diag_init(&diag, stderr);
    rf_program *prog = rf_compile_string("p.lql", g_prog, &diag);
    CU_ASSERT_PTR_NOT_NULL_FATAL(prog);
    rf_plan_options po = {.optimize = true};
    rf_plan *plan = rf_plan_build(prog, &po);
    rf_hprogram *hp = rf_hir_lower(plan);
    rf_hir_liveness(hp);
    int r = -1;
    for (int v = 0; v < hp->nvars; v++)
        if (hp->vars[v].pred && strcmp(hp->vars[v].pred, "r") == 0 && !hp->vars[v].is_output)
            r = v;
    CU_ASSERT_FATAL(r >= 0);
    bool **need = rf_needed_columns(hp, NULL, NULL);
    check_mask(need, r, 4, "1001");
    rf_needed_columns_free(need, hp->nvars);

    char dir[] = "/tmp/rf_test_load.XXXXXX";
    CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
    char good[64], bad[64];
    snprintf(good, sizeof good, "%s/r.tsv", dir);
    snprintf(bad, sizeof bad, "%s/bad.tsv", dir);
    write_file(good, "1\tx\t2000-01-01\t5\n1\ty\t2000-01-02\t5\n2\tz\t2000-01-03\t-1\n3\tw\t2000-01-04\t7\n");
    write_file(bad, "1\tx\t2000-01-01\t5\n1\ty\t2000-01-02\t5\n2\tz\t2000-02-30\t-1\n");
    size_t nstr = rf_str_count();
    rf_status st;
    char *stats = NULL;
    char *out = run_pruned(hp, good, &st, &stats);
    CU_ASSERT_PTR_NOT_NULL(out);
    if (out)
        CU_ASSERT_STRING_EQUAL(out, "# q (2 tuples)\n1\t5\n3\t7\n");
    CU_ASSERT_EQUAL(rf_str_count(), nstr); /* x, y, z, w never interned */
    CU_ASSERT_PTR_NOT_NULL(strstr(stats, "  input r: parsed 2 of 4 columns (0, 3)\n"));
    free(out);
    free(stats);
    out = run_pruned(hp, bad, &st, &stats);
    CU_ASSERT_PTR_NULL(out);
    char want[256];
    snprintf(want, sizeof want, "%s:3: error: field 3: day out of range for its month: '2000-02-30'", bad);
    CU_ASSERT_PTR_NOT_NULL(strstr(st.message, want));
    free(stats);
    unlink(good);
    unlink(bad);
    rmdir(dir);
    rf_hir_free(hp);
    rf_plan_free(plan);
    rf_program_free(prog);
    rf_str_reset();
}

/* rf_read_facts_fingerprinted: the first unread column holds a
 * fingerprint of the unread fields, equal for equal values ("1.5" and
 * "1.50", a string escaped or not) and different where they differ. */
static void test_fingerprint(void)
{
    char path[] = "/tmp/rf_fp_XXXXXX";
    int fd = mkstemp(path);
    CU_ASSERT_FATAL(fd >= 0);
    const char *text = "1\tx\t1.5\t7\n"     /* rows 0 and 1: equal values */
                       "1\tx\t1.50\t7\n"
                       "1\ty\t1.5\t7\n"     /* another string */
                       "1\tx\t2.5\t7\n"     /* another decimal */
                       "2\tx\t1.5\t7\n";    /* another read value, same unread */
    CU_ASSERT_EQUAL(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    const rf_type types[4] = {RF_TYPE_INT32, RF_TYPE_STRING, RF_TYPE_DECIMAL0 + 2, RF_TYPE_INT32};
    const bool needed[4] = {true, false, false, true};
    rf_table t;
    rf_table_init(&t, 4);
    rf_status st;
    rf_status_init(&st);
    CU_ASSERT_TRUE_FATAL(rf_read_facts_fingerprinted(path, RF_FORMAT_TSV, 4, types, needed, &t, &st));
    CU_ASSERT_EQUAL_FATAL(t.nrows, 5);
    const rf_word *fp = t.cols[1];
    CU_ASSERT_EQUAL(fp[0], fp[1]);
    CU_ASSERT_NOT_EQUAL(fp[0], fp[2]);
    CU_ASSERT_NOT_EQUAL(fp[0], fp[3]);
    CU_ASSERT_NOT_EQUAL(fp[2], fp[3]);
    CU_ASSERT_EQUAL(fp[0], fp[4]);      /* only the unread fields count */
    for (size_t i = 0; i < t.nrows; i++)
        CU_ASSERT_EQUAL(t.cols[2][i], 0); /* the other unread column: 0 */
    CU_ASSERT_EQUAL(t.cols[3][0], rf_word_from_int(7));
    rf_table_free(&t);
    unlink(path);
}

/* ---- The fast path (io.c) against the general path ----
 * Files of numbers, mostly in the fast path's forms, with every kind of
 * line it must give back mixed in: both paths, sequential and in pieces,
 * must load the same table and stop at the same error with the same
 * message. */
enum { ODD_NONE, ODD_OK, ODD_ERROR };

/* One field of type ty: mostly plain, now and then an odd form that is
 * still a value (-0, leading zeros, a long int64) or not one. */
static void gen_field(text_buf *b, rf_type ty, int odd)
{
    char f[64];
    uint64_t r = rnd();
    if (odd == ODD_ERROR && r % 4 == 0) {
        static const char *const bad[] = {"abc", "+5", " 5", "5 ", "", "-", "1.5", "2147483648", "-2147483649",
                                          "99999999999999999999", "1\\t2", "0x10", "12-3"};
        put(b, bad[(r >> 8) % (sizeof bad / sizeof *bad)]);
        return;
    }
    if (ty == RF_TYPE_STRING) { /* an unread one: the fast path skips it */
        static const char *const ok[] = {"", "#x", "a\\tb", "\\e", "x\ry", "1", "plain words", "1|2"};
        static const char *const bad[] = {"a\\qb", "end\\"};
        if (odd == ODD_OK)
            put(b, ok[(r >> 8) % (sizeof ok / sizeof *ok)]);
        else if (odd == ODD_ERROR)
            put(b, bad[(r >> 8) % (sizeof bad / sizeof *bad)]);
        else
            put(b, (r >> 8) % 2 ? "carefully final deposits" : "quick brown fox jumps");
        return;
    }
    if (ty == RF_TYPE_DATE) {
        snprintf(f, sizeof f, "%04d-%02d-%02d", 1 + (int)(r % 9999), 1 + (int)((r >> 16) % 12),
                 1 + (int)((r >> 24) % 28));
        if (odd == ODD_ERROR && (r >> 40) % 3 == 0)
            snprintf(f, sizeof f, "2021-02-%02d", 29 + (int)((r >> 42) % 3)); /* no such day */
    } else if (rf_type_is_decimal(ty)) {
        snprintf(f, sizeof f, "%s%llu.%02llu", r & 1 ? "-" : "", (unsigned long long)(r >> 8) % 1000000,
                 (unsigned long long)(r >> 32) % 100);
        if (odd == ODD_OK && (r >> 40) % 2)
            snprintf(f, sizeof f, "%llu", (unsigned long long)(r >> 8) % 1000); /* no fraction */
        if (odd == ODD_ERROR && (r >> 40) % 3 == 0)
            snprintf(f, sizeof f, "1.234"); /* too many places */
    } else {
        /* Lengths 1..19: the fast path takes up to 18 digits; int32 mostly
         * in range, now and then just out of it (an error). */
        int digits = 1 + (int)((r >> 4) % (ty == RF_TYPE_INT32 ? 10 : 19));
        uint64_t v = (r >> 12) % 10000000000000000000ull;
        char d[32];
        snprintf(d, sizeof d, "%019llu", (unsigned long long)v);
        const char *s = d + 19 - digits;
        if (odd == ODD_OK && (r >> 50) % 2)
            s = d + 19 - (digits < 3 ? 3 : digits); /* leading zeros */
        snprintf(f, sizeof f, "%s%s", (r >> 2) % 3 == 0 ? "-" : "", s);
        if (ty == RF_TYPE_INT32 && odd != ODD_ERROR) {
            long long x = strtoll(f, NULL, 10);
            if (x < INT32_MIN || x > INT32_MAX)
                snprintf(f, sizeof f, "%lld", x % 2147483647);
        }
    }
    put(b, f);
}

/* A file of `rows` lines of the given columns; odd lines (one in every
 * `every`) are blank, comments, CRLF, or (with errors) wrong field counts
 * and bad values; `last_nl`: the last line ends with a newline. */
static char *gen_numbers(bool tbl, int arity, const rf_type *types, size_t rows, int every, bool errors,
                         bool last_nl, size_t *len)
{
    text_buf b = {0};
    char sep = tbl ? '|' : '\t';
    for (size_t i = 0; i < rows; i++) {
        uint64_t r = rnd();
        int odd = every && r % (uint64_t)every == 0 ? (errors && (r >> 20) % 2 ? ODD_ERROR : ODD_OK) : ODD_NONE;
        int kind = (int)((r >> 24) % 6);
        if (odd && kind == 0) { /* blank line (TBL: an error) */
            put(&b, (r >> 30) % 2 ? "\n" : "\r\n");
            continue;
        }
        if (odd && kind == 1) { /* a comment (TBL: an error) */
            put(&b, "# 1\t2|\n");
            continue;
        }
        int fields = arity;
        if (odd == ODD_ERROR && kind == 2)
            fields += (r >> 30) % 2 ? 1 : -1; /* a wrong field count */
        for (int c = 0; c < fields; c++) {
            if (c > 0 || (odd == ODD_ERROR && kind == 5 && (r >> 33) % 2))
                RF_PUSH(b, sep); /* TBL: an empty first field */
            gen_field(&b, types[c < arity ? c : 0], c == (int)((r >> 36) % (unsigned)arity) ? odd : ODD_NONE);
        }
        if (tbl && !(odd == ODD_ERROR && kind == 3))
            RF_PUSH(b, '|');
        if (odd && kind == 4)
            put(&b, "\r");
        if (odd == ODD_ERROR && kind == 3 && !tbl)
            put(&b, "\r\r"); /* two: only one is stripped */
        if (i + 1 < rows || last_nl)
            RF_PUSH(b, '\n');
    }
    RF_PUSH(b, '\0');
    *len = b.len - 1;
    return b.items;
}

typedef struct parse_result {
    bool ok;
    rf_status st;
    rf_table t;
} parse_result;

static void parse_with(const char *text, size_t len, bool tbl, int arity, const rf_type *types, const bool *needed,
                       bool fast, int threads, parse_result *out)
{
    rf_set_parse_fast_path(fast);
    rf_prims_set_threads(threads);
    rf_status_init(&out->st);
    rf_table_init(&out->t, arity);
    out->ok = rf_parse_facts(tbl ? "n.tbl" : "n.tsv", text, len, tbl ? RF_FORMAT_TBL : RF_FORMAT_TSV, arity, types,
                             needed, &out->t, &out->st);
    rf_set_parse_fast_path(true);
}

/* Same outcome, same message, same table word for word. */
static bool same_result(const parse_result *a, const parse_result *b)
{
    bool same = a->ok == b->ok && strcmp(a->st.message, b->st.message) == 0 && a->t.nrows == b->t.nrows;
    for (int c = 0; same && c < a->t.arity; c++)
        same = memcmp(a->t.cols[c], b->t.cols[c], a->t.nrows * sizeof(rf_word)) == 0;
    if (!same)
        fprintf(stderr, "\n  general: %d %zu rows '%s'\n  fast:    %d %zu rows '%s'\n", a->ok, a->t.nrows,
                a->st.message, b->ok, b->t.nrows, b->st.message);
    return same;
}

/* The general path sequentially, against the fast path sequentially and
 * in pieces. Returns whether the general path loaded it all. */
static bool compare_fast(const char *text, size_t len, bool tbl, int arity, const rf_type *types, const bool *needed)
{
    parse_result general, fast1, fast4;
    parse_with(text, len, tbl, arity, types, needed, false, 1, &general);
    parse_with(text, len, tbl, arity, types, needed, true, 1, &fast1);
    parse_with(text, len, tbl, arity, types, needed, true, 4, &fast4);
    CU_ASSERT_TRUE(same_result(&general, &fast1));
    CU_ASSERT_TRUE(same_result(&general, &fast4));
    bool ok = general.ok;
    rf_table_free(&general.t);
    rf_table_free(&fast1.t);
    rf_table_free(&fast4.t);
    return ok;
}

static void test_fast_path(void)
{
    static const rf_type ints[2] = {RF_TYPE_INT32, RF_TYPE_INT32};
    static const rf_type mixed[4] = {RF_TYPE_INT64, RF_TYPE_DATE, RF_TYPE_DECIMAL0 + 2, RF_TYPE_INT32};
    static const bool need_some[4] = {false, true, false, true};
    /* Unread strings (with a read column, and alone: blank and comment
     * lines must not become rows). */
    static const rf_type strs[3] = {RF_TYPE_INT32, RF_TYPE_STRING, RF_TYPE_INT64};
    static const bool need_strs[3] = {true, false, true}, need_none[1] = {false};
    static const rf_type *const type_sets[4] = {ints, mixed, strs, strs + 1};
    static const bool *const need_sets[4] = {NULL, need_some, need_strs, need_none};
    static const int arities[4] = {2, 4, 3, 1};
    int loaded = 0, failed = 0;
    for (int tbl = 0; tbl < 2; tbl++)
        for (int m = 0; m < 4; m++) {
            int arity = arities[m];
            const rf_type *types = type_sets[m];
            const bool *need = m >= 2 ? need_sets[m] : NULL; /* strings must be unread */
            /* Big files (cut into pieces with 4 threads), odd lines that
             * are no errors only, and each line end. */
            for (int last_nl = 0; last_nl < 2; last_nl++) {
                size_t len;
                char *text = gen_numbers(tbl, arity, types, 60000, tbl ? 0 : 50, false, last_nl, &len);
                loaded += compare_fast(text, len, tbl, arity, types, need);
                loaded += compare_fast(text, len, tbl, arity, types, need_sets[m]);
                free(text);
            }
            /* Small files with errors: each stops at its first one. */
            for (int k = 0; k < 150; k++) {
                size_t len;
                char *text = gen_numbers(tbl, arity, types, 40, 7, true, k % 3 != 0, &len);
                failed += !compare_fast(text, len, tbl, arity, types, k % 2 ? need_sets[m] : need);
                free(text);
            }
        }
    CU_ASSERT(loaded >= 16); /* the big files load */
    CU_ASSERT(failed > 800); /* most small ones meet an error */
    /* Edge cases by hand. */
    static const char *const tsv[] = {
        "1\t2",   "1\t2\r",     "1\t2\r\n", "-0\t007\n", "\n\n1\t2\n\n", "# c\n1\t2\n", "1\t2\t\n",
        "1\t\n",  "\t1\n",      "1\t2\n3\n", "2147483647\t-2147483648\n", "2147483648\t1\n", "1\t-2147483649",
        "1\t2\n\r\n", "12345678\t123456789\n", "1234567\t1\n", "1\t2\r\r\n", "1\t2\r\r", "1\r\t2\n",
    };
    for (size_t i = 0; i < sizeof tsv / sizeof *tsv; i++)
        compare_fast(tsv[i], strlen(tsv[i]), false, 2, ints, NULL);
    static const char *const tblt[] = {"1|2|", "1|2|\r", "1|2|\r\n", "1|2\n", "1|2||\n", "|1|2|\n", "\n1|2|\n",
                                       "# c\n", "1|2|3|\n", "1|99999999999|\n", "1|2|\r\r\n", "1|2\r|\n"};
    for (size_t i = 0; i < sizeof tblt / sizeof *tblt; i++)
        compare_fast(tblt[i], strlen(tblt[i]), true, 2, ints, NULL);
}

/* The fingerprint of the unread fields is the same on both paths. */
static void test_fast_path_fingerprint(void)
{
    static const rf_type types[4] = {RF_TYPE_INT32, RF_TYPE_DECIMAL0 + 2, RF_TYPE_DATE, RF_TYPE_STRING};
    static const bool needed[4] = {true, false, false, false};
    size_t len;
    char *text = gen_numbers(false, 4, types, 3000, 40, false, true, &len);
    char path[] = "/tmp/rf_fast_XXXXXX";
    int fd = mkstemp(path);
    CU_ASSERT_FATAL(fd >= 0);
    CU_ASSERT_EQUAL(write(fd, text, len), (ssize_t)len);
    close(fd);
    parse_result r[2];
    for (int fast = 0; fast < 2; fast++) {
        rf_set_parse_fast_path(fast);
        rf_prims_set_threads(1);
        rf_status_init(&r[fast].st);
        rf_table_init(&r[fast].t, 4);
        r[fast].ok = rf_read_facts_fingerprinted(path, RF_FORMAT_TSV, 4, types, needed, &r[fast].t, &r[fast].st);
        rf_set_parse_fast_path(true);
    }
    CU_ASSERT_TRUE(r[0].ok);
    CU_ASSERT_TRUE(same_result(&r[0], &r[1]));
    rf_table_free(&r[0].t);
    rf_table_free(&r[1].t);
    unlink(path);
    free(text);
}

int main(void)
{
    if (CU_initialize_registry() != CUE_SUCCESS)
        return 1;
    CU_pSuite s = CU_add_suite("load", NULL, NULL);
    CU_add_test(s, "local string dictionary", test_strdict);
    CU_add_test(s, "parallel parse = sequential parse", test_parallel_equals_sequential);
    CU_add_test(s, "parallel parse appends", test_parallel_appends);
    CU_add_test(s, "a last line longer than a piece", test_long_last_line);
    CU_add_test(s, "first error, wherever it lies", test_error_anywhere);
    CU_add_test(s, "kinds of errors, the earliest wins", test_error_kinds);
    CU_add_test(s, "needed mask", test_needed_mask);
    CU_add_test(s, "columns each kernel reads", test_needed_kernels);
    CU_add_test(s, "an operator that may see more than values", test_needed_unknown_operator);
    CU_add_test(s, "a run that prunes", test_pruned_run);
    CU_add_test(s, "fingerprint of the unread fields", test_fingerprint);
    CU_add_test(s, "fast path = general path", test_fast_path);
    CU_add_test(s, "fast path: the same fingerprint", test_fast_path_fingerprint);
    CU_basic_set_mode(CU_BRM_VERBOSE);
    CU_basic_run_tests();
    unsigned failed = CU_get_number_of_failures();
    CU_cleanup_registry();
    rf_str_reset();
    return failed ? 1 : 0;
}
