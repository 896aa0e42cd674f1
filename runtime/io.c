/* Fact files (docs/design.md "Input files"): TSV (tab separated; string
 * fields unescape \t \n \r \\ \# and \e, exactly what the output writes,
 * any other escape is an error), CSV (comma separated, "..." quoting
 * with "" for a quote, quoted fields may span lines; no backslash escapes)
 * and TBL (dbgen's: every field followed by '|', so each line ends with
 * '|'; no quoting, no escapes, no comment lines; errors name the byte
 * column of the field). Blank lines and (but in TBL) lines starting with
 * '#' are skipped, except that a blank line is the empty tuple of a
 * zero-arity relation. The whole file is read
 * at once and parsed in place; integers take a hand-written fast path (no
 * strtoll, no copy), so large files parse at memory speed. */
#include "runtime.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

rf_file_format rf_format_from_path(const char *path)
{
    size_t n = strlen(path);
    if (n >= 4 && strcasecmp(path + n - 4, ".csv") == 0)
        return RF_FORMAT_CSV;
    if (n >= 4 && strcasecmp(path + n - 4, ".tbl") == 0)
        return RF_FORMAT_TBL;
    return RF_FORMAT_TSV;
}

typedef struct field {
    const char *s;
    size_t len;
} field;

typedef struct parser {
    const char *name;
    const char *p, *end;
    const char *line_start; /* of the current record (TBL columns) */
    int line;
    rf_file_format fmt;
    bool zero_arity;        /* a blank line is the tuple () */
    char *scratch;          /* unescaped/unquoted text of the current record */
    size_t scratch_cap, scratch_len;
    RF_VEC(field) fields;
    RF_VEC(size_t) offs;    /* fields living in scratch: offset, else SIZE_MAX */
} parser;

static void scratch_put(parser *ps, char c)
{
    if (ps->scratch_len == ps->scratch_cap) {
        ps->scratch_cap = ps->scratch_cap ? 2 * ps->scratch_cap : 256;
        ps->scratch = rf_realloc(ps->scratch, ps->scratch_cap);
    }
    ps->scratch[ps->scratch_len++] = c;
}

static void add_field(parser *ps, const char *s, size_t len, size_t off)
{
    field f = {s, len};
    RF_PUSH(ps->fields, f);
    RF_PUSH(ps->offs, off);
}

/* Splits the next record into fields. Returns 0 at end of input, 1 for a
 * record, -1 on a syntax error (st filled). *line_out = its first line. */
static int next_record(parser *ps, int *line_out, rf_status *st)
{
    for (;;) {
        if (ps->p >= ps->end)
            return 0;
        const char *nl = memchr(ps->p, '\n', (size_t)(ps->end - ps->p));
        const char *eol = nl ? nl : ps->end;
        const char *line = ps->p;
        size_t len = (size_t)(eol - line);
        if (len && line[len - 1] == '\r')
            len--;
        int lineno = ps->line;
        ps->fields.len = ps->offs.len = 0;
        ps->scratch_len = 0;
        if (len == 0 && ps->zero_arity) { /* the empty tuple, as the output writes it */
            *line_out = lineno;
            ps->p = nl ? nl + 1 : ps->end;
            ps->line++;
            return 1;
        }
        if (len == 0 || (line[0] == '#' && ps->fmt != RF_FORMAT_TBL)) {
            ps->p = nl ? nl + 1 : ps->end;
            ps->line++;
            continue;
        }
        *line_out = lineno;
        ps->line_start = line;
        if (ps->fmt == RF_FORMAT_TBL) {
            /* f1|f2|...|fn| : the last '|' ends the last field. */
            if (line[len - 1] != '|') {
                rf_fail(st, RF_EXIT_RUNTIME_ERROR, "%s:%d:%zu: error: the line does not end with '|' (tbl format)",
                        ps->name, lineno, len + 1);
                return -1;
            }
            const char *s = line, *e = line + len - 1;
            for (;;) {
                const char *bar = memchr(s, '|', (size_t)(e - s));
                const char *fe = bar ? bar : e;
                add_field(ps, s, (size_t)(fe - s), SIZE_MAX);
                if (!bar)
                    break;
                s = bar + 1;
            }
            ps->p = nl ? nl + 1 : ps->end;
            ps->line++;
            return 1;
        }
        if (ps->fmt == RF_FORMAT_TSV) {
            /* Fields stay raw here: string fields are unescaped by their
             * column (rf_parse_facts), numbers never contain a backslash. */
            const char *s = line, *e = line + len;
            for (;;) {
                const char *tab = memchr(s, '\t', (size_t)(e - s));
                const char *fe = tab ? tab : e;
                add_field(ps, s, (size_t)(fe - s), SIZE_MAX);
                if (!tab)
                    break;
                s = tab + 1;
            }
            ps->p = nl ? nl + 1 : ps->end;
            ps->line++;
            return 1;
        }
        /* CSV: a quoted field may contain commas and newlines. */
        const char *q = line;
        for (;;) {
            size_t off = ps->scratch_len;
            if (q < ps->end && *q == '"') {
                q++;
                for (;;) {
                    if (q >= ps->end) {
                        rf_fail(st, RF_EXIT_RUNTIME_ERROR, "%s:%d: error: unterminated quoted field",
                                ps->name, lineno);
                        return -1;
                    }
                    if (*q == '"') {
                        if (q + 1 < ps->end && q[1] == '"') {
                            scratch_put(ps, '"');
                            q += 2;
                            continue;
                        }
                        q++;
                        break;
                    }
                    if (*q == '\n')
                        ps->line++;
                    scratch_put(ps, *q++);
                }
                add_field(ps, NULL, ps->scratch_len - off, off);
                if (q < ps->end && *q == '\r')
                    q++;
                if (q < ps->end && *q != ',' && *q != '\n') {
                    rf_fail(st, RF_EXIT_RUNTIME_ERROR,
                            "%s:%d: error: field %zu: unexpected text after a closing quote",
                            ps->name, lineno, ps->fields.len);
                    return -1;
                }
            } else {
                const char *s = q;
                while (q < ps->end && *q != ',' && *q != '\n')
                    q++;
                size_t flen = (size_t)(q - s);
                if (flen && s[flen - 1] == '\r' && (q >= ps->end || *q == '\n'))
                    flen--;
                add_field(ps, s, flen, SIZE_MAX);
            }
            if (q < ps->end && *q == ',') {
                q++;
                continue;
            }
            break; /* end of line or input */
        }
        ps->p = q < ps->end ? q + 1 : ps->end;
        ps->line++;
        return 1;
    }
}

/* Integer fast path: optional '-', up to 18 digits, nothing else. */
static bool fast_int(const char *s, size_t len, rf_type t, rf_word *out)
{
    bool neg = false;
    if (len && *s == '-') {
        neg = true;
        s++;
        len--;
    }
    if (len == 0 || len > 18)
        return false;
    int64_t v = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned d = (unsigned)(s[i] - '0');
        if (d > 9)
            return false;
        v = v * 10 + (int64_t)d;
    }
    if (neg)
        v = -v;
    if (t == RF_TYPE_INT32 && (v < INT32_MIN || v > INT32_MAX))
        return false;
    *out = rf_word_from_int(v);
    return true;
}

/* "FILE:LINE" or, for TBL, "FILE:LINE:COL" with the byte column of field c
 * (c < 0: column 1). */
static const char *where(const parser *ps, int lineno, int c, char *buf, size_t cap)
{
    if (ps->fmt != RF_FORMAT_TBL)
        snprintf(buf, cap, "%s:%d", ps->name, lineno);
    else
        snprintf(buf, cap, "%s:%d:%zu", ps->name, lineno,
                 c < 0 ? (size_t)1 : (size_t)(ps->fields.items[c].s - ps->line_start) + 1);
    return buf;
}

bool rf_parse_facts(const char *name, const char *text, size_t len, rf_file_format fmt, int arity,
                    const rf_type *types, rf_table *t, rf_status *st)
{
    parser ps = {.name = name, .p = text, .end = text + len, .line = 1, .fmt = fmt, .zero_arity = arity == 0};
    char *unesc = NULL; /* an unescaped TSV string field */
    size_t unesc_cap = 0;
    bool ok = true;
    int lineno = 0, r;
    char loc[512];
    while ((r = next_record(&ps, &lineno, st)) == 1) {
        if ((int)ps.fields.len != arity) {
            ok = rf_fail(st, RF_EXIT_RUNTIME_ERROR, "%s: error: expected %d field%s, found %zu",
                         where(&ps, lineno, -1, loc, sizeof loc), arity, arity == 1 ? "" : "s", ps.fields.len);
            break;
        }
        size_t row = t->nrows;
        if (arity > 0) {
            if (row == t->cap)
                rf_table_reserve(t, row + 1);
        } else {
            t->nrows = 1; /* a nullary relation holds at most () */
            continue;
        }
        for (int c = 0; c < arity && ok; c++) {
            field f = ps.fields.items[c];
            const char *s = f.s;
            if (ps.offs.items[c] != SIZE_MAX) /* a quoted CSV field; "" may find no scratch yet */
                s = ps.scratch ? ps.scratch + ps.offs.items[c] : "";
            rf_word w;
            const char *why = "bad value";
            char whybuf[32];
            size_t bad;
            if (types[c] == RF_TYPE_STRING && fmt == RF_FORMAT_TSV && memchr(s, '\\', f.len)) {
                if (f.len > unesc_cap) {
                    unesc_cap = f.len > 2 * unesc_cap ? f.len : 2 * unesc_cap;
                    unesc = rf_realloc(unesc, unesc_cap);
                }
                size_t n;
                if (rf_str_unescape(s, f.len, unesc, &n, &bad)) {
                    t->cols[c][row] = rf_str_intern(unesc, n);
                } else {
                    why = whybuf;
                    if (bad + 1 >= f.len)
                        why = "bad escape: '\\' at the end of the field";
                    else if (s[bad + 1] == 'e')
                        why = "bad escape '\\e' ('\\e' stands alone for the empty string)";
                    else
                        snprintf(whybuf, sizeof whybuf, "bad escape '\\%c'", s[bad + 1]);
                    ok = rf_fail(st, RF_EXIT_RUNTIME_ERROR, "%s: error: field %d: %s: '%.*s'",
                                 where(&ps, lineno, c, loc, sizeof loc), c + 1, why,
                                 (int)(f.len > 200 ? 200 : f.len), s);
                }
            } else if (rf_type_is_integer(types[c]) && fast_int(s, f.len, types[c], &w)) {
                t->cols[c][row] = w;
            } else if (rf_value_parse(types[c], s, f.len, &w, &why)) {
                t->cols[c][row] = w;
            } else if (strncmp(why, "has ", 4) == 0) { /* "12.345 has more than 2 decimal places" */
                ok = rf_fail(st, RF_EXIT_RUNTIME_ERROR, "%s: error: field %d: %.*s %s",
                             where(&ps, lineno, c, loc, sizeof loc), c + 1, (int)(f.len > 200 ? 200 : f.len), s, why);
            } else {
                ok = rf_fail(st, RF_EXIT_RUNTIME_ERROR, "%s: error: field %d: %s: '%.*s'",
                             where(&ps, lineno, c, loc, sizeof loc), c + 1, why, (int)(f.len > 200 ? 200 : f.len), s);
            }
        }
        if (!ok)
            break;
        t->nrows = row + 1;
    }
    if (r < 0)
        ok = false;
    free(ps.scratch);
    free(unesc);
    RF_VEC_FREE(ps.fields);
    RF_VEC_FREE(ps.offs);
    return ok;
}

bool rf_read_facts(const char *path, rf_file_format fmt, int arity, const rf_type *types,
                   rf_table *t, rf_status *st)
{
    size_t len = 0;
    char *text = rf_read_file(path, &len, st);
    if (!text)
        return false;
    bool ok = rf_parse_facts(path, text, len, fmt, arity, types, t, st);
    free(text);
    return ok;
}
