/* libFuzzer target: fact files (runtime/io.c), where a user's data enters.
 * Any bytes must parse to rows or to one error that names the file and a
 * line, never to a crash or a sanitizer report; and the parser's variants,
 * which must agree row for row, are made to disagree if they can:
 *
 *   1. one piece, the fast path for numeric lines on (a small file as read);
 *   2. the fast path off and the text cut into pieces of a few bytes, parsed
 *      by several threads (what a file of many megabytes gets): the same
 *      outcome, message, rows and string ids;
 *   3. only some columns needed (a program that reads only those): the same
 *      outcome and message (an unread field's bad value is still an error),
 *      the read columns' words the same, the others 0;
 *   4. rows of a TSV file that parsed, written as output files are written
 *      and parsed again: the same rows (docs/language.md, "Values in files":
 *      whatever a run writes, a later run reads as the same tuples; -0.0 is
 *      written as 0).
 *
 * Input layout: byte 0 picks the format (TSV, CSV, TBL), byte 1 the arity
 * (0-4), byte 2 the needed columns of (3) as bits, then one byte per column
 * for its type; the rest is the file's text. */
#define _POSIX_C_SOURCE 200809L   /* open_memstream */
#include "runtime.h"
#include "rf_prims.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const rf_type kTypes[] = {
    RF_TYPE_INT32, RF_TYPE_INT64, RF_TYPE_FLOAT64, RF_TYPE_BOOL, RF_TYPE_STRING,
    RF_TYPE_DATE,  RF_TYPE_DECIMAL0, RF_TYPE_DECIMAL0 + 2, RF_TYPE_DECIMAL0 + 18,
};
#define NTYPES ((int)(sizeof kTypes / sizeof kTypes[0]))
#define MAX_ARITY 4

typedef struct outcome {
    bool ok;
    rf_status st;
    rf_table t;
} outcome;

static void parse(outcome *o, const char *name, const char *text, size_t len, rf_file_format fmt, int arity,
                  const rf_type *types, const bool *needed)
{
    rf_status_init(&o->st);
    rf_table_init(&o->t, arity);
    o->ok = rf_parse_facts(name, text, len, fmt, arity, types, needed, &o->t, &o->st);
}

/* The message of a failed parse names the file, then a line number. */
static void check_message(const outcome *o, const char *name)
{
    size_t n = strlen(name);
    if (o->ok) {
        if (o->st.code)
            abort();
        return;
    }
    if (!o->st.code || strncmp(o->st.message, name, n) != 0 || o->st.message[n] != ':' ||
        o->st.message[n + 1] < '1' || o->st.message[n + 1] > '9')
        abort();
}

/* Columns where keep[c] (NULL: all) hold the same words; the others are 0
 * in b. With types, a float64 -0.0 in a may be 0 in b. */
static void same_rows(const rf_table *a, const rf_table *b, const bool *keep, const rf_type *types)
{
    if (a->nrows != b->nrows || a->arity != b->arity)
        abort();
    for (int c = 0; c < a->arity; c++)
        for (size_t i = 0; i < a->nrows; i++) {
            rf_word x = a->cols[c][i], y = b->cols[c][i];
            if (keep && !keep[c] ? y != 0 : x != y) {
                if (types && types[c] == RF_TYPE_FLOAT64 && rf_word_to_double(x) == 0.0 &&
                    rf_word_to_double(y) == 0.0)
                    continue;
                abort();
            }
        }
}

static void same_outcome(const outcome *a, const outcome *b, const bool *keep)
{
    if (a->ok != b->ok || a->st.code != b->st.code || strcmp(a->st.message, b->st.message) != 0) {
        fprintf(stderr, "fuzz_facts: parsed %s / %s: '%s' / '%s'\n", a->ok ? "ok" : "failed",
                b->ok ? "ok" : "failed", a->st.message, b->st.message);
        abort();
    }
    same_rows(&a->t, &b->t, keep, NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 3)
        return 0;
    static const rf_file_format formats[] = {RF_FORMAT_TSV, RF_FORMAT_CSV, RF_FORMAT_TBL};
    static const char *names[] = {"fuzz.tsv", "fuzz.csv", "fuzz.tbl"};
    int f = data[0] % 3, arity = data[1] % (MAX_ARITY + 1);
    if (size < 3 + (size_t)arity)
        return 0;
    rf_type types[MAX_ARITY];
    bool needed[MAX_ARITY];
    for (int c = 0; c < arity; c++) {
        types[c] = kTypes[data[3 + c] % NTYPES];
        needed[c] = (data[2] >> c) & 1;
    }
    const char *text = (const char *)data + 3 + arity;
    size_t len = size - 3 - (size_t)arity;
    rf_file_format fmt = formats[f];

    static bool threads_set;
    if (!threads_set) {   /* pieces parsed at once, even on one core */
        rf_prims_set_threads(4);
        threads_set = true;
    }
    outcome whole, pieces, some;
    parse(&whole, names[f], text, len, fmt, arity, types, NULL);
    check_message(&whole, names[f]);

    rf_set_parse_fast_path(false);
    rf_set_parse_pieces(1, 4);
    parse(&pieces, names[f], text, len, fmt, arity, types, NULL);
    rf_set_parse_pieces(0, 0);
    rf_set_parse_fast_path(true);
    same_outcome(&whole, &pieces, NULL);

    if (arity > 0) {
        parse(&some, names[f], text, len, fmt, arity, types, needed);
        same_outcome(&whole, &some, needed);
        rf_table_free(&some.t);
    }

    if (whole.ok && fmt == RF_FORMAT_TSV && arity > 0) {
        char *out = NULL;
        size_t outlen = 0;
        FILE *mem = open_memstream(&out, &outlen);
        if (!mem)
            abort();
        bool wrote = rf_write_tsv(mem, &whole.t, types);
        if (fclose(mem) != 0 || !wrote)
            abort();
        outcome again;
        parse(&again, names[f], out, outlen, fmt, arity, types, NULL);
        if (!again.ok)
            abort();
        same_rows(&whole.t, &again.t, NULL, types);
        rf_table_free(&again.t);
        free(out);
    }
    rf_table_free(&whole.t);
    rf_table_free(&pieces.t);
    rf_str_reset();
    return 0;
}
