/* Fact files (docs/design.md "Input files"): TSV (tab separated; string
 * fields unescape \t \n \r \\ \# and \e, exactly what the output writes,
 * any other escape is an error), CSV (comma separated, "..." quoting
 * with "" for a quote, quoted fields may span lines; no backslash escapes)
 * and TBL (dbgen's: every field followed by '|', so each line ends with
 * '|'; no quoting, no escapes, no comment lines; errors name the byte
 * column of the field). Blank lines and (but in TBL) lines starting with
 * '#' are skipped, except that a blank line is the empty tuple of a
 * zero-arity relation. The whole file is read at once (by several
 * threads) and parsed in place, TBL and TSV by several threads in pieces
 * of whole lines ("Parsing in pieces" below); lines of numbers take a
 * fast path straight into the columns ("The fast path" below), and
 * integers, decimals and dates have fast parsers on the general path too.
 * Columns the program never reads (rf_needed_columns) are checked but not
 * kept. */
#include "runtime.h"
#include "rf_prims.h"
#include "rf_strdict.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

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
    RF_VEC(size_t) offs;    /* CSV: fields living in scratch: offset, else SIZE_MAX */
} parser;

static void scratch_put(parser *ps, char c)
{
    if (ps->scratch_len == ps->scratch_cap) {
        ps->scratch_cap = ps->scratch_cap ? 2 * ps->scratch_cap : 256;
        ps->scratch = rf_realloc(ps->scratch, ps->scratch_cap);
    }
    ps->scratch[ps->scratch_len++] = c;
}

static inline void add_field(parser *ps, const char *s, size_t len, size_t off)
{
    field f = {s, len};
    RF_PUSH(ps->fields, f);
    if (ps->fmt == RF_FORMAT_CSV)
        RF_PUSH(ps->offs, off);
}

/* The first sep in [s, e), or e. Eight bytes a step where the byte order
 * allows: fields are short, and a memchr call per field cost more than the
 * scan itself. */
static inline const char *find_sep(const char *s, const char *e, char sep)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
    const uint64_t pat = ones * (unsigned char)sep;
    for (; e - s >= 8; s += 8) {
        uint64_t w;
        memcpy(&w, s, 8);
        w ^= pat; /* bytes equal to sep are now 0 */
        uint64_t z = (w - ones) & ~w & highs; /* its lowest set bit marks the first 0 byte */
        if (z)
            return s + (__builtin_ctzll(z) >> 3);
    }
#endif
    while (s < e && *s != sep)
        s++;
    return s;
}

/* Fields of a TBL or TSV line [s, e), separated by sep. */
static void split_line(parser *ps, const char *s, const char *e, char sep)
{
    for (;;) {
        const char *fe = find_sep(s, e, sep);
        add_field(ps, s, (size_t)(fe - s), SIZE_MAX);
        if (fe == e)
            break;
        s = fe + 1;
    }
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
            split_line(ps, line, line + len - 1, '|');
            ps->p = nl ? nl + 1 : ps->end;
            ps->line++;
            return 1;
        }
        if (ps->fmt == RF_FORMAT_TSV) {
            /* Fields stay raw here: string fields are unescaped by their
             * column (rf_parse_facts), numbers never contain a backslash. */
            split_line(ps, line, line + len, '\t');
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

/* Decimal fast path: [-]digits[.digits], at most `scale` fraction digits,
 * at most 18 digits with the padding (so no overflow), nothing else;
 * anything else goes to rf_value_parse, which also words the errors. */
static inline bool fast_decimal(const char *s, size_t len, int scale, rf_word *out)
{
    bool neg = len && s[0] == '-';
    size_t i = neg, i0 = i;
    int64_t v = 0;
    while (i < len && (unsigned)(s[i] - '0') <= 9 && i - i0 < 18)
        v = v * 10 + (s[i++] - '0');
    size_t nint = i - i0;
    if (nint == 0 || nint + (size_t)scale > 18)
        return false;
    int nfrac = 0;
    if (i < len && s[i] == '.') {
        i++;
        while (i < len && (unsigned)(s[i] - '0') <= 9 && nfrac < scale) {
            v = v * 10 + (s[i++] - '0');
            nfrac++;
        }
        if (nfrac == 0)
            return false;
    }
    if (i != len)
        return false;
    for (; nfrac < scale; nfrac++)
        v *= 10;
    *out = rf_word_from_int(neg ? -v : v);
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

/* ---- Parsing in pieces ----
 * The text is cut at line starts into pieces that threads parse at once
 * (TBL and TSV; CSV's quoted fields may span lines, so it is one piece).
 * Newlines are counted first, so each piece knows its first line number
 * and a bound on its rows: it writes them straight into the table at its
 * own offset, and the rows are moved together afterwards only when some
 * lines were not rows (blank lines, TSV comments). Each piece stops at its
 * first error; the error of the earliest failing piece is the one a
 * sequential parse meets first, and the pieces after it are dropped.
 * Strings: with several pieces each interns into a local dictionary, and
 * the local dictionaries go into the global one in piece order (the same
 * ids as a sequential parse; rf_strdict.h); a single piece interns into
 * the global dictionary directly. */
#define PAR_MIN_BYTES ((size_t)512 << 10)   /* smaller texts: one piece (a graph of 10^5 edges is ~1.4 MB) */
#define PIECE_MIN_BYTES ((size_t)128 << 10)
/* The two above, unless a test (the fact files' fuzzer) set smaller ones
 * to cut texts of a few bytes into pieces (rf_set_parse_pieces). */
static _Atomic size_t g_par_min = PAR_MIN_BYTES, g_piece_min = PIECE_MIN_BYTES;

void rf_set_parse_pieces(size_t par_min, size_t piece_min)
{
    atomic_store(&g_par_min, par_min ? par_min : PAR_MIN_BYTES);
    atomic_store(&g_piece_min, piece_min ? piece_min : PIECE_MIN_BYTES);
}
#define PIECES_PER_THREAD 4                 /* dynamic hand-out evens out slow pieces */
#define STOP_CHECK_ROWS 1024                /* how often a piece looks for an earlier failure */

typedef struct piece {
    const char *begin, *end;   /* whole lines */
    size_t lines;              /* newlines in [begin, end) */
    size_t cap;                /* most rows it can hold */
    int first_line;
    size_t base;               /* its first row in the table */
    size_t rows;               /* rows parsed (those before its first error) */
    rf_strdict *dict;          /* NULL: strings go to the global dictionary */
    rf_word *ids;              /* dict's local ids -> global ids */
    rf_status st;
} piece;

typedef struct load_job {
    const char *name;
    rf_file_format fmt;
    int arity;
    const rf_type *types;
    const bool *needed;        /* NULL: every column */
    rf_word **cols;            /* the table's columns */
    piece *pieces;
    int npieces;
    int used;                  /* pieces 0..used-1 make the result */
    bool zeroed;               /* the table's new rows are all 0 already */
    bool fast;                 /* lines may take the fast path (fast_path_applies) */
    int print_col;             /* -1, or the unread column that gets a
                                  fingerprint of the row's unread fields */
    atomic_int first_failed;   /* earliest piece known to have failed */
    int first_line;            /* the text's first line's number (a share of a file: not 1) */
} load_job;

/* Strings wait in a short queue before they are interned, in their order
 * (so they get the ids of interning each at once): each one's slot is
 * prefetched when it is queued and is mostly in cache when the queue is
 * drained. Interning at once waited for a cache miss per new string,
 * which was most of the time spent on millions of distinct comments. */
#define PENDING_MAX 32

typedef struct pending {
    const char *s;             /* in the text: stays valid */
    size_t len;
    uint64_t hash;
    rf_word *dst;              /* where its id goes */
} pending;

/* Per-thread state of a piece's parse. */
typedef struct conv {
    const load_job *j;
    piece *pc;
    parser *ps;
    char *unesc;               /* an unescaped TSV string field */
    size_t unesc_cap;
    int npend;
    pending pend[PENDING_MAX];
    uint64_t print;            /* fingerprint of the record's unread fields */
} conv;

/* Folds the value of unread field c (a string's bytes by their hash,
 * another type's canonical word) into the record's fingerprint: equal
 * rows get equal fingerprints, whatever their text ("1.5" and "1.50"). */
static void fold_unread(conv *cv, int c, uint64_t value)
{
    uint64_t x = cv->print ^ (value + 0x9e3779b97f4a7c15ull * (uint64_t)(c + 1));
    x ^= x >> 31;
    x *= 0xbf58476d1ce4e5b9ull;
    cv->print = x ^ (x >> 29);
}

static bool column_needed(const load_job *j, int c) { return !j->needed || j->needed[c]; }

static void flush_strings(conv *cv)
{
    rf_strdict *d = cv->pc->dict;
    for (int i = 0; i < cv->npend; i++) {
        const pending *q = &cv->pend[i];
        *q->dst = d ? rf_strdict_add_hashed(d, q->s, q->len, q->hash, false) : rf_str_intern_hashed(q->s, q->len, q->hash);
    }
    cv->npend = 0;
}

/* s lies in the text: queued. */
static void queue_string(conv *cv, const char *s, size_t len, rf_word *dst)
{
    if (cv->npend == PENDING_MAX)
        flush_strings(cv);
    uint64_t h = rf_str_hash(s, len);
    if (cv->pc->dict)
        rf_strdict_prefetch(cv->pc->dict, h);
    else
        rf_str_prefetch(h);
    cv->pend[cv->npend++] = (pending){s, len, h, dst};
}

/* s lies in a scratch buffer (unescaped, unquoted): interned now, after
 * the queued ones, and copied. */
static rf_word intern_now(conv *cv, const char *s, size_t len)
{
    flush_strings(cv);
    if (cv->pc->dict)
        return rf_strdict_add(cv->pc->dict, s, len, true);
    return rf_str_intern(s, len);
}

/* A TSV string field with a backslash: unescaped (even when the column is
 * not needed: a bad escape is an error either way). */
static bool unescape_field(conv *cv, int c, int lineno, const char *s, size_t len, rf_word *dst, rf_status *st)
{
    if (len > cv->unesc_cap) {
        cv->unesc_cap = len > 2 * cv->unesc_cap ? len : 2 * cv->unesc_cap;
        cv->unesc = rf_realloc(cv->unesc, cv->unesc_cap);
    }
    size_t n, bad;
    if (rf_str_unescape(s, len, cv->unesc, &n, &bad)) {
        if (column_needed(cv->j, c))
            *dst = intern_now(cv, cv->unesc, n);
        else if (cv->j->print_col >= 0)
            fold_unread(cv, c, rf_str_hash(cv->unesc, n));
        return true;
    }
    char whybuf[32], loc[512];
    const char *why = whybuf;
    if (bad + 1 >= len)
        why = "bad escape: '\\' at the end of the field";
    else if (s[bad + 1] == 'e')
        why = "bad escape '\\e' ('\\e' stands alone for the empty string)";
    else
        snprintf(whybuf, sizeof whybuf, "bad escape '\\%c'", s[bad + 1]);
    return rf_fail(st, RF_EXIT_RUNTIME_ERROR, "%s: error: field %d: %s: '%.*s'",
                   where(cv->ps, lineno, c, loc, sizeof loc), c + 1, why, (int)(len > 200 ? 200 : len), s);
}

/* Converts field c of the current record to its word in *dst (a string's
 * id may arrive later: flush_strings); a column that is not needed is
 * checked the same way but left alone (parse_piece zeroes it; its strings
 * are not interned). False, with st filled, on a bad value. */
static bool convert_field(conv *cv, int c, int lineno, rf_word *dst, rf_status *st)
{
    const load_job *j = cv->j;
    const parser *ps = cv->ps;
    field f = ps->fields.items[c];
    const char *s = f.s;
    bool quoted = ps->fmt == RF_FORMAT_CSV && ps->offs.items[c] != SIZE_MAX;
    if (quoted) /* a quoted CSV field; "" may find no scratch yet */
        s = ps->scratch ? ps->scratch + ps->offs.items[c] : "";
    rf_type ty = j->types[c];
    bool need = column_needed(j, c);
    if (ty == RF_TYPE_STRING) {
        if (j->fmt == RF_FORMAT_TSV && memchr(s, '\\', f.len))
            return unescape_field(cv, c, lineno, s, f.len, dst, st);
        if (!need) {
            if (j->print_col >= 0)
                fold_unread(cv, c, rf_str_hash(s, f.len));
            return true;
        }
        if (quoted)
            *dst = intern_now(cv, s, f.len);
        else
            queue_string(cv, s, f.len, dst);
        return true;
    }
    rf_word w;
    int64_t days;
    const char *why = "bad value";
    if ((rf_type_is_integer(ty) && fast_int(s, f.len, ty, &w)) ||
        (rf_type_is_decimal(ty) && fast_decimal(s, f.len, rf_decimal_scale(ty), &w))) {
        /* the common forms, without rf_value_parse's generality */
    } else if (ty == RF_TYPE_DATE && f.len == 10 && rf_date_parse(s, f.len, &days, &why)) {
        w = rf_word_from_int(days);
    } else if (!rf_value_parse(ty, s, f.len, &w, &why)) {
        char loc[512];
        int n = (int)(f.len > 200 ? 200 : f.len);
        if (strncmp(why, "has ", 4) == 0) /* "12.345 has more than 2 decimal places" */
            return rf_fail(st, RF_EXIT_RUNTIME_ERROR, "%s: error: field %d: %.*s %s",
                           where(ps, lineno, c, loc, sizeof loc), c + 1, n, s, why);
        return rf_fail(st, RF_EXIT_RUNTIME_ERROR, "%s: error: field %d: %s: '%.*s'",
                       where(ps, lineno, c, loc, sizeof loc), c + 1, why, n, s);
    }
    if (need)
        *dst = w;
    else if (j->print_col >= 0)
        fold_unread(cv, c, w);
    return true;
}

/* ---- The fast path ----
 * Most fact files are TSV or TBL lines of numbers (edge lists, TPC-H keys
 * and dates). For those, fast_rows reads the values of a line straight into
 * the columns: no fields vector, no memchr for the line end, no type
 * dispatch through convert_field. It takes a line only when every field
 * has the common form (the form fast_int, fast_decimal and a 10-byte
 * rf_date_parse accept, each followed by exactly the separator the general
 * path would split at) and gives the line back untouched otherwise: blank
 * and comment lines, a wrong field count, a value in another form (a
 * bad one included), an escape. The general path then parses that line as
 * it always did, so the rows, the errors and their wording are its own.
 * Only loads whose columns are all int32, int64, date or decimal, or
 * strings the program never reads (checked for escapes and folded into
 * the fingerprint, never interned), take it (load_job.fast). */
static atomic_bool g_fast_path = true;

void rf_set_parse_fast_path(bool on) { atomic_store(&g_fast_path, on); }

static bool fast_path_applies(const load_job *j)
{
    if (!atomic_load(&g_fast_path) || j->arity == 0 || (j->fmt != RF_FORMAT_TSV && j->fmt != RF_FORMAT_TBL))
        return false;
    for (int c = 0; c < j->arity; c++) {
        rf_type ty = j->types[c];
        bool number = rf_type_is_integer(ty) || rf_type_is_decimal(ty) || ty == RF_TYPE_DATE;
        if (!number && !(ty == RF_TYPE_STRING && !column_needed(j, c)))
            return false;
    }
    return true;
}

/* Where the digits from s stop: the first byte in [s, end) that is not
 * '0'..'9' (end if none). */
static inline const char *skip_digits(const char *s, const char *end)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    /* Eight bytes a step: a byte is a digit iff its high nibble is 3 and
     * adding 6 leaves it 3 (0x30..0x39). Adding 6 carries out of a byte
     * only when it is no digit, and the carry only spoils later bytes. */
    const uint64_t highs = 0xF0F0F0F0F0F0F0F0ull, threes = 0x3030303030303030ull, sixes = 0x0606060606060606ull;
    for (; end - s >= 8; s += 8) {
        uint64_t w;
        memcpy(&w, s, 8);
        uint64_t odd = ((w & highs) ^ threes) | (((w + sixes) & highs) ^ threes); /* non-zero byte: no digit */
        if (odd)
            return s + (__builtin_ctzll(odd) >> 3);
    }
#endif
    while (s < end && (unsigned)(*s - '0') <= 9)
        s++;
    return s;
}

/* The value of n decimal digits at s, 1 <= n <= 18. Eight at a time where
 * the byte order allows: each step adds neighbouring digits, pairs and
 * quads (the classic SWAR conversion), without a branch per digit. */
static inline int64_t digits_value(const char *s, size_t n)
{
    int64_t v = 0;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, s, 8);
        w -= 0x3030303030303030ull;
        w = (w * 10 + (w >> 8)) & 0x00FF00FF00FF00FFull;
        w = (w * 100 + (w >> 16)) & 0x0000FFFF0000FFFFull;
        w = (w * 10000 + (w >> 32)) & 0xFFFFFFFFull;
        v = v * 100000000 + (int64_t)w;
        s += 8;
        n -= 8;
    }
#endif
    for (size_t i = 0; i < n; i++)
        v = v * 10 + (s[i] - '0');
    return v;
}

/* The digits from d (1 to 18 of them, the most fast_int takes) as a
 * value in *v; returns their end, or NULL where there are none or more. */
static inline const char *fast_digits(const char *d, const char *end, int64_t *v)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    /* The common case, fewer than 8 digits with 8 bytes to read, without a
     * branch on the count. With '0' subtracted from each byte, a byte is a
     * digit iff it is below 10: neither its high bit nor that of it + 0x76
     * is set. Subtracting borrows, and adding 0x76 carries, only out of a
     * byte that is no digit, so only into bytes after the first non-digit,
     * which do not matter. The digits' bytes shifted to the top of the
     * word (the rest shifted out) then convert as 8 digits with leading
     * zeros. */
    if (end - d >= 8) {
        uint64_t w;
        memcpy(&w, d, 8);
        uint64_t x = w - 0x3030303030303030ull;
        uint64_t odd = (x | (x + 0x7676767676767676ull)) & 0x8080808080808080ull; /* high bit: no digit */
        if (odd) {
            unsigned n = (unsigned)__builtin_ctzll(odd) >> 3;
            if (n == 0)
                return NULL;
            x <<= 64 - 8 * n;
            x = (x * 10 + (x >> 8)) & 0x00FF00FF00FF00FFull;
            x = (x * 100 + (x >> 16)) & 0x0000FFFF0000FFFFull;
            x = (x * 10000 + (x >> 32)) & 0xFFFFFFFFull;
            *v = (int64_t)x;
            return d + n;
        }
    }
#endif
    const char *e = skip_digits(d, end);
    size_t n = (size_t)(e - d);
    if (n == 0 || n > 18)
        return NULL;
    *v = digits_value(d, n);
    return e;
}

/* An integer field from s: [-]digits as fast_int takes them. Returns its
 * end (the byte after the last digit), or NULL for any other form. */
static inline const char *fast_int_at(const char *s, const char *end, rf_type ty, rf_word *out)
{
    bool neg = s < end && *s == '-';
    int64_t v;
    const char *e = fast_digits(s + neg, end, &v);
    if (!e)
        return NULL;
    if (neg)
        v = -v;
    if (ty == RF_TYPE_INT32 && (v < INT32_MIN || v > INT32_MAX))
        return NULL; /* the general path words the error */
    *out = rf_word_from_int(v);
    return e;
}

/* Any other fast field from s (a date, a decimal): the bytes up to the
 * next sep or line end, when fast_decimal or rf_date_parse take them
 * whole. Returns the field's end or NULL. */
static inline const char *fast_other_at(const char *s, const char *end, rf_type ty, char sep, rf_word *out)
{
    const char *e = s;
    while (e < end && *e != sep && *e != '\n' && *e != '\r')
        e++;
    size_t len = (size_t)(e - s);
    int64_t days;
    const char *why;
    if (ty == RF_TYPE_DATE) {
        if (len != 10 || !rf_date_parse(s, len, &days, &why))
            return NULL;
        *out = rf_word_from_int(days);
        return e;
    }
    return fast_decimal(s, len, rf_decimal_scale(ty), out) ? e : NULL;
}

/* An unread string field from s: its end, the first sep or line end (or,
 * in TSV, where a backslash makes the general path unescape it: NULL).
 * SSE2 (every x86-64) tests 16 bytes a step: comments are long. */
static inline const char *fast_skip_string(const char *s, const char *end, char sep, bool tsv)
{
#if defined(__SSE2__)
    const __m128i vs = _mm_set1_epi8(sep), nl = _mm_set1_epi8('\n'), cr = _mm_set1_epi8('\r'),
                  bs = _mm_set1_epi8(tsv ? '\\' : '\n');
    for (; end - s >= 16; s += 16) {
        __m128i b = _mm_loadu_si128((const __m128i *)(const void *)s);
        __m128i hit = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(b, vs), _mm_cmpeq_epi8(b, nl)),
                                   _mm_or_si128(_mm_cmpeq_epi8(b, cr), _mm_cmpeq_epi8(b, bs)));
        int mask = _mm_movemask_epi8(hit);
        if (mask) {
            s += __builtin_ctz((unsigned)mask);
            break;
        }
    }
#endif
    while (s < end && *s != sep && *s != '\n' && *s != '\r' && !(tsv && *s == '\\'))
        s++;
    return s < end && *s == '\\' && tsv ? NULL : s;
}

/* The end of the line whose last field ends at e: e past the line's
 * newline, or the text's end, when the line ends there the way the
 * general path cuts it (TBL: the closing '|' first; one '\r' before the
 * newline or the end is not part of the line); NULL otherwise. */
static inline const char *fast_line_end(const char *e, const char *end, bool tbl)
{
    if (tbl) {
        if (e == end || *e != '|')
            return NULL;
        e++;
    }
    if (e < end && *e == '\r')
        e++;
    if (e == end)
        return e;
    return *e == '\n' ? e + 1 : NULL;
}

/* What the fast path does with column c, worked out once a piece. */
typedef struct fast_col {
    rf_type type;
    bool integer;              /* int32 or int64: fast_int_at */
    bool string;               /* an unread string: fast_skip_string; else fast_other_at */
    bool fold;                 /* not needed, folded into the fingerprint */
    rf_word *dst;              /* the column at the piece's first row; NULL: not kept */
} fast_col;

static void plan_fast_cols(const load_job *j, const piece *pc, fast_col *fc)
{
    for (int c = 0; c < j->arity; c++) {
        rf_type ty = j->types[c];
        bool need = column_needed(j, c);
        fc[c] = (fast_col){.type = ty, .integer = rf_type_is_integer(ty), .string = ty == RF_TYPE_STRING,
                           .fold = !need && j->print_col >= 0,
                           .dst = need ? j->cols[c] + pc->base : NULL};
    }
}

/* Parses the line at s into row `row` of the piece, if it has the common
 * form: returns the start of the next line, or NULL (the row's columns may
 * have been written: the general path writes them again). */
static inline const char *fast_line(conv *cv, const fast_col *fc, const char *s, const char *end, size_t row)
{
    const load_job *j = cv->j;
    bool tbl = j->fmt == RF_FORMAT_TBL;
    char sep = tbl ? '|' : '\t';
    if (*s == '\n' || *s == '\r' || *s == '#')
        return NULL; /* maybe a blank line or a comment (an unread string may be empty or start with '#') */
    cv->print = 0;
    for (int c = 0;; c++) {
        rf_word w;
        const char *e;
        if (fc[c].integer) {
            e = fast_int_at(s, end, fc[c].type, &w);
        } else if (fc[c].string) { /* never kept (fast_path_applies) */
            e = fast_skip_string(s, end, sep, !tbl);
            w = e && fc[c].fold ? rf_str_hash(s, (size_t)(e - s)) : 0;
        } else {
            e = fast_other_at(s, end, fc[c].type, sep, &w);
        }
        if (!e)
            return NULL;
        if (fc[c].dst)
            fc[c].dst[row] = w;
        else if (fc[c].fold)
            fold_unread(cv, c, w);
        if (c + 1 == j->arity) {
            const char *next = fast_line_end(e, end, tbl);
            if (next && j->print_col >= 0)
                j->cols[j->print_col][cv->pc->base + row] = cv->print;
            return next;
        }
        if (e == end || *e != sep)
            return NULL;
        s = e + 1;
    }
}

/* Parses lines on the fast path from row *row up to the next
 * STOP_CHECK_ROWS boundary or the first line it does not take. Returns
 * how many it took. */
static size_t fast_rows(conv *cv, const fast_col *fc, size_t *row)
{
    parser *ps = cv->ps;
    const char *s = ps->p, *end = ps->end;
    size_t r = *row, stop = (r / STOP_CHECK_ROWS + 1) * STOP_CHECK_ROWS;
    for (const char *next; r < stop && s < end && (next = fast_line(cv, fc, s, end, r)) != NULL; s = next)
        r++;
    size_t took = r - *row;
    ps->p = s;
    ps->line += (int)took; /* a line a row */
    *row = r;
    return took;
}

/* Records that piece p failed (keeps the earliest). */
static void note_failure(load_job *j, int p)
{
    int cur = atomic_load(&j->first_failed);
    while (p < cur && !atomic_compare_exchange_weak(&j->first_failed, &cur, p)) {
    }
}

/* Parses piece p into rows base.. of the table (rf_par_for task). */
static void parse_piece(void *ctx, int p)
{
    load_job *j = ctx;
    piece *pc = &j->pieces[p];
    parser ps = {.name = j->name, .p = pc->begin, .end = pc->end, .line = pc->first_line, .fmt = j->fmt,
                 .zero_arity = j->arity == 0};
    conv cv = {.j = j, .pc = pc, .ps = &ps};
    rf_status_init(&pc->st);
    for (int c = 0; c < j->arity && pc->cap && !j->zeroed; c++) /* one sweep, not a store per row */
        if (!column_needed(j, c))
            memset(j->cols[c] + pc->base, 0, pc->cap * sizeof(rf_word));
    for (int c = 0; c < j->arity && j->zeroed; c++) /* fresh pages that this piece fills */
        if (column_needed(j, c) || c == j->print_col)
            rf_prefault_pages(j->cols[c] + pc->base, pc->cap * sizeof(rf_word));
    size_t row = 0, misses = 0;
    int lineno = 0, r = 0;
    bool ok = true, fast = j->fast;
    fast_col *fc = fast ? rf_malloc((size_t)j->arity * sizeof *fc) : NULL;
    if (fast)
        plan_fast_cols(j, pc, fc);
    for (;;) {
        if (row % STOP_CHECK_ROWS == 0 && atomic_load_explicit(&j->first_failed, memory_order_relaxed) < p)
            break; /* an earlier piece failed: this one will be dropped */
        if (fast && fast_rows(&cv, fc, &row))
            continue;
        /* A line the fast path gave back (or the end). Where such lines
         * are common (values in a form it does not take), trying each
         * line twice would cost more than it saves: stop trying. */
        if (fast && ++misses > 64 && misses * 8 > row)
            fast = false;
        if ((r = next_record(&ps, &lineno, &pc->st)) != 1)
            break;
        if ((int)ps.fields.len != j->arity) {
            char loc[512];
            ok = rf_fail(&pc->st, RF_EXIT_RUNTIME_ERROR, "%s: error: expected %d field%s, found %zu",
                         where(&ps, lineno, -1, loc, sizeof loc), j->arity, j->arity == 1 ? "" : "s",
                         ps.fields.len);
            break;
        }
        if (j->arity == 0) {
            row = 1; /* a nullary relation holds at most () */
            continue;
        }
        cv.print = 0;
        for (int c = 0; c < j->arity && ok; c++)
            ok = convert_field(&cv, c, lineno, &j->cols[c][pc->base + row], &pc->st);
        if (ok && j->print_col >= 0)
            j->cols[j->print_col][pc->base + row] = cv.print;
        row += ok;
        if (!ok)
            break;
    }
    flush_strings(&cv); /* also on an error: the strings before it are interned, as they were */
    if (r < 0)
        ok = false;
    pc->rows = row;
    if (!ok)
        note_failure(j, p);
    free(fc);
    free(ps.scratch);
    free(cv.unesc);
    RF_VEC_FREE(ps.fields);
    RF_VEC_FREE(ps.offs);
}

static int pieces_for(size_t len, rf_file_format fmt, int arity)
{
    int threads = rf_prims_threads();
    if (threads <= 1 || len < atomic_load(&g_par_min) || fmt == RF_FORMAT_CSV || arity == 0)
        return 1;
    size_t n = (size_t)threads * PIECES_PER_THREAD, most = len / atomic_load(&g_piece_min);
    if (most < 1)
        most = 1;
    return (int)(n < most ? n : most);
}

/* Cuts text into n pieces of about len/n bytes, each beginning at a line
 * start: piece p ends after the first newline at or after byte
 * (p + 1) * len / n. A line longer than a piece makes the pieces it
 * covers empty; one that runs to the end without a newline makes every
 * later piece empty. */
static void split_lines(const char *text, size_t len, piece *pcs, int n)
{
    const char *end = text + len, *at = text;
    for (int p = 0; p < n; p++) {
        pcs[p].begin = at;
        const char *want = text + len / (size_t)n * (size_t)(p + 1);
        if (p == n - 1) {
            at = end;
        } else if (want > at && want < end) {
            const char *nl = memchr(want, '\n', (size_t)(end - want));
            at = nl ? nl + 1 : end;
        }
        pcs[p].end = at;
    }
}

/* Newlines in [s, e), without a call a line (lines are short: a memchr
 * call per line cost more than the scan). SSE2 (every x86-64): 16 bytes
 * a step, each newline byte subtracting 1 (0xFF) from its byte counter,
 * the counters summed (psadbw) before any can wrap. Elsewhere eight bytes
 * a step where the byte order allows: each newline leaves a 1 in its byte,
 * the byte sums added up the same way. */
static size_t newlines(const char *s, const char *e)
{
    size_t n = 0;
#if defined(__SSE2__)
    const __m128i nl = _mm_set1_epi8('\n'), zero = _mm_setzero_si128();
    while (e - s >= 16) {
        __m128i counts = zero;
        for (int k = 0; k < 255 && e - s >= 16; k++, s += 16)
            counts = _mm_sub_epi8(counts, _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(const void *)s), nl));
        __m128i sums = _mm_sad_epu8(counts, zero); /* two 64-bit sums of eight counters */
        n += (size_t)_mm_cvtsi128_si64(sums) + (size_t)_mm_cvtsi128_si64(_mm_unpackhi_epi64(sums, sums));
    }
#elif defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    const uint64_t lows = 0x7F7F7F7F7F7F7F7Full, pat = 0x0A0A0A0A0A0A0A0Aull;
    while (e - s >= 8) {
        uint64_t sums = 0;
        for (int k = 0; k < 255 && e - s >= 8; k++, s += 8) {
            uint64_t w;
            memcpy(&w, s, 8);
            w ^= pat;                                     /* newline bytes are now 0 */
            uint64_t nonzero = ((w & lows) + lows) | w;   /* high bit set in each non-zero byte */
            sums += (~nonzero >> 7) & 0x0101010101010101ull;
        }
        /* The byte sums (each <= 255) added pairwise into 16-bit lanes,
         * then the lanes (their total <= 8 * 255) into the top lane. */
        uint64_t pairs = (sums & 0x00FF00FF00FF00FFull) + ((sums >> 8) & 0x00FF00FF00FF00FFull);
        n += (pairs * 0x0001000100010001ull) >> 48;
    }
#endif
    for (; s < e; s++)
        n += *s == '\n';
    return n;
}

static void count_lines(void *ctx, int p)
{
    piece *pc = &((load_job *)ctx)->pieces[p];
    pc->lines = newlines(pc->begin, pc->end);
}

/* Rewrites the string columns of piece p from local to global ids. */
static void remap_piece(void *ctx, int p)
{
    load_job *j = ctx;
    piece *pc = &j->pieces[p];
    for (int c = 0; c < j->arity; c++) {
        if (j->types[c] != RF_TYPE_STRING || !column_needed(j, c))
            continue;
        rf_word *col = j->cols[c] + pc->base;
        for (size_t i = 0; i < pc->rows; i++)
            col[i] = pc->ids[col[i]];
    }
}

/* Closes the gaps that lines without a row left between the pieces' rows
 * (one column; pieces in order, as each moves down onto space the ones
 * before it have vacated). */
static void compact_column(void *ctx, int c)
{
    load_job *j = ctx;
    rf_word *col = j->cols[c];
    size_t to = j->pieces[0].base;
    for (int p = 0; p < j->used; p++) {
        const piece *pc = &j->pieces[p];
        if (pc->base != to && pc->rows)
            memmove(col + to, col + pc->base, pc->rows * sizeof *col);
        to += pc->rows;
    }
}

static bool needs_local_dicts(const load_job *j)
{
    if (j->npieces <= 1)
        return false;
    for (int c = 0; c < j->arity; c++)
        if (j->types[c] == RF_TYPE_STRING && column_needed(j, c))
            return true;
    return false;
}

/* Splits, counts lines, places the pieces in the table (reserved here). */
static void plan_pieces(load_job *j, const char *text, size_t len, rf_table *t)
{
    split_lines(text, len, j->pieces, j->npieces);
    rf_par_for(j->npieces, count_lines, j);
    size_t at = t->nrows;
    int line = j->first_line;
    for (int p = 0; p < j->npieces; p++) {
        piece *pc = &j->pieces[p];
        pc->first_line = line;
        line += (int)pc->lines;
        /* A row is a line (a CSV record one or more): at most one per
         * newline, and one more where the text ends without a newline
         * (only the piece that holds the end can, which need not be the
         * last piece: split_lines). */
        pc->cap = pc->lines + (pc->end > pc->begin && pc->end[-1] != '\n');
        pc->base = at;
        at += pc->cap;
    }
    if (t->arity > 0 && t->cap == 0 && at > 0) {
        /* A new table: fresh zero pages (calloc knows them), so columns
         * that are not needed are never touched here. */
        for (int c = 0; c < t->arity; c++) {
            free(t->cols[c]);
            t->cols[c] = rf_calloc(at, sizeof(rf_word));
            rf_hint_huge_pages(t->cols[c], at * sizeof(rf_word)); /* filled by the pieces' threads */
        }
        t->cap = at;
        j->zeroed = true;
    } else if (t->arity > 0) {
        rf_table_reserve(t, at);
        for (int c = 0; c < t->arity; c++)
            rf_hint_huge_pages(t->cols[c], t->cap * sizeof(rf_word));
    }
    j->cols = t->cols;
}

/* After the parallel parse: strings into the global dictionary (pieces in
 * order), local ids rewritten, rows moved together. Returns the rows. */
static size_t gather_pieces(load_job *j)
{
    bool dicts = j->pieces[0].dict != NULL;
    size_t total = 0; /* at most this many new strings: the table grows once */
    for (int p = 0; dicts && p < j->used; p++)
        total += rf_strdict_count(j->pieces[p].dict);
    rf_str_reserve(total);
    for (int p = 0; dicts && p < j->used; p++) {
        piece *pc = &j->pieces[p];
        pc->ids = rf_malloc(rf_mul_size(rf_strdict_count(pc->dict) + 1, sizeof *pc->ids));
        rf_strdict_to_global(pc->dict, pc->ids);
    }
    if (dicts)
        rf_par_for(j->used, remap_piece, j);
    size_t rows = 0;
    bool gaps = false;
    for (int p = 0; p < j->used; p++) {
        gaps |= j->pieces[p].base != j->pieces[0].base + rows;
        rows += j->pieces[p].rows;
    }
    if (gaps && j->arity > 0)
        rf_par_for(j->arity, compact_column, j);
    return rows;
}

static bool parse_facts(const char *name, const char *text, size_t len, rf_file_format fmt, int arity,
                        const rf_type *types, const bool *needed, bool fingerprint, int first_line, rf_table *t,
                        rf_status *st)
{
    load_job j = {.name = name, .fmt = fmt, .arity = arity, .types = types, .needed = needed, .print_col = -1,
                  .first_line = first_line};
    for (int c = 0; fingerprint && needed && c < arity && j.print_col < 0; c++)
        if (!needed[c])
            j.print_col = c;
    j.npieces = pieces_for(len, fmt, arity);
    j.pieces = rf_calloc((size_t)j.npieces, sizeof *j.pieces);
    j.fast = fast_path_applies(&j);
    atomic_init(&j.first_failed, j.npieces);
    plan_pieces(&j, text, len, t);
    bool dicts = needs_local_dicts(&j);
    for (int p = 0; dicts && p < j.npieces; p++)
        j.pieces[p].dict = rf_strdict_new();
    rf_par_for(j.npieces, parse_piece, &j);
    int failed = atomic_load(&j.first_failed);
    j.used = failed < j.npieces ? failed + 1 : j.npieces;
    size_t rows = gather_pieces(&j);
    if (arity > 0)
        t->nrows += rows;
    else if (rows > 0)
        t->nrows = 1;
    if (failed < j.npieces)
        rf_fail(st, j.pieces[failed].st.code, "%s", j.pieces[failed].st.message);
    for (int p = 0; p < j.npieces; p++) {
        rf_strdict_free(j.pieces[p].dict);
        free(j.pieces[p].ids);
    }
    free(j.pieces);
    return failed >= j.npieces;
}

/* ---- Reading the file ----
 * One allocation of the file's size and reads by several threads at once
 * (each copies from the page cache and faults in its part of the buffer),
 * for any regular file, small ones included: stdio's growing buffer cost a
 * copy and fresh page faults a doubling, 2 ms on a 1.4 MB graph where the
 * parse took 2. Anything but a regular file whose size holds still (a
 * pipe, a /proc file of size 0) goes through rf_read_file. */
#define READ_CHUNK_MIN ((size_t)256 << 10) /* a thread's start costs more than reading less */
#define READ_CHUNK_MAX ((size_t)16 << 20)

typedef struct read_job {
    int fd;
    char *buf;
    size_t from;               /* the file offset of buf[0] */
    size_t len;
    size_t chunk;              /* bytes a task */
    int nchunks;
    atomic_int short_read;     /* the file changed (or a read failed) */
    atomic_int err;            /* errno of a failed read */
} read_job;

static void read_chunk(void *ctx, int k)
{
    read_job *rj = ctx;
    size_t off = (size_t)k * rj->chunk, end = off + rj->chunk < rj->len ? off + rj->chunk : rj->len;
    while (off < end) {
        ssize_t got = pread(rj->fd, rj->buf + off, end - off, (off_t)(rj->from + off));
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0) {
            if (got < 0)
                atomic_store(&rj->err, errno);
            atomic_store(&rj->short_read, 1);
            return;
        }
        off += (size_t)got;
    }
}

/* A chunk for each thread, within [READ_CHUNK_MIN, READ_CHUNK_MAX], whole
 * pages (each page is faulted in by one thread). */
static size_t read_chunk_bytes(size_t len)
{
    size_t threads = (size_t)rf_prims_threads(), chunk = (len + threads - 1) / (threads ? threads : 1);
    chunk = (chunk + 4095) & ~(size_t)4095;
    return chunk < READ_CHUNK_MIN ? READ_CHUNK_MIN : chunk > READ_CHUNK_MAX ? READ_CHUNK_MAX : chunk;
}

/* Bytes [from, from + len) of fd into a new buffer (NUL-terminated), read
 * by several threads at once; *err an errno, or -1 for a short read (the
 * file changed), or 0. */
static char *read_range(int fd, size_t from, size_t len, int *err)
{
    read_job rj = {.fd = fd, .from = from, .len = len};
    rj.buf = rf_malloc(rj.len + 1);
    rf_hint_huge_pages(rj.buf, rj.len + 1);
    rj.chunk = read_chunk_bytes(rj.len ? rj.len : 1);
    rj.nchunks = (int)((rj.len + rj.chunk - 1) / rj.chunk);
    atomic_init(&rj.short_read, 0);
    atomic_init(&rj.err, 0);
    rf_par_for(rj.nchunks, read_chunk, &rj);
    rj.buf[rj.len] = '\0';
    *err = atomic_load(&rj.err) ? atomic_load(&rj.err) : atomic_load(&rj.short_read) ? -1 : 0;
    return rj.buf;
}

static char *read_text(const char *path, size_t *len, rf_status *st)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0) {
        rf_fail(st, RF_EXIT_RUNTIME_ERROR, "cannot open '%s': %s", path, strerror(errno));
        return NULL;
    }
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode) || sb.st_size <= 0) {
        close(fd);
        return rf_read_file(path, len, st);
    }
    int err = 0;
    char *buf = read_range(fd, 0, (size_t)sb.st_size, &err), probe;
    bool grew = pread(fd, &probe, 1, (off_t)sb.st_size) == 1;
    close(fd);
    if (err > 0) {
        rf_fail(st, RF_EXIT_RUNTIME_ERROR, "cannot read '%s': %s", path, strerror(err));
        free(buf);
        return NULL;
    }
    if (err < 0 || grew) { /* changed while read: read it the plain way */
        free(buf);
        return rf_read_file(path, len, st);
    }
    *len = (size_t)sb.st_size;
    return buf;
}

bool rf_parse_facts(const char *name, const char *text, size_t len, rf_file_format fmt, int arity,
                    const rf_type *types, const bool *needed, rf_table *t, rf_status *st)
{
    return parse_facts(name, text, len, fmt, arity, types, needed, false, 1, t, st);
}

static bool read_facts(const char *path, rf_file_format fmt, int arity, const rf_type *types,
                       const bool *needed, bool fingerprint, rf_table *t, rf_status *st)
{
    size_t len = 0;
    char *text = read_text(path, &len, st);
    if (!text)
        return false;
    bool ok = parse_facts(path, text, len, fmt, arity, types, needed, fingerprint, 1, t, st);
    free(text);
    return ok;
}

bool rf_read_facts(const char *path, rf_file_format fmt, int arity, const rf_type *types,
                   const bool *needed, rf_table *t, rf_status *st)
{
    return read_facts(path, fmt, arity, types, needed, false, t, st);
}

bool rf_read_facts_fingerprinted(const char *path, rf_file_format fmt, int arity, const rf_type *types,
                                 const bool *needed, rf_table *t, rf_status *st)
{
    return read_facts(path, fmt, arity, types, needed, true, t, st);
}

/* ---- One share of a file's lines (distributed runs) ----
 * Share k of n begins after the first newline at or after byte
 * len / n * k (k > 0; the file's start for k = 0) and ends where share
 * k + 1 begins, as split_lines cuts pieces: the shares cover every line
 * once, in order. */
static bool share_start(int fd, size_t len, int k, int n, size_t *at)
{
    if (k <= 0) {
        *at = 0;
        return true;
    }
    if (k >= n) {
        *at = len;
        return true;
    }
    char block[65536];
    for (size_t off = len / (size_t)n * (size_t)k; off < len;) {
        ssize_t got = pread(fd, block, sizeof block < len - off ? sizeof block : len - off, (off_t)off);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            return false;
        const char *nl = memchr(block, '\n', (size_t)got);
        if (nl) {
            *at = off + (size_t)(nl - block) + 1;
            return true;
        }
        off += (size_t)got;
    }
    *at = len;
    return true;
}

bool rf_regular_file(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_size > 0;
}

bool rf_read_facts_share(const char *path, rf_file_format fmt, int arity, const rf_type *types, const bool *needed,
                         bool fingerprint, int part, int nparts, uint64_t (*lines_before)(void *ctx, uint64_t lines),
                         void *ctx, rf_table *t, rf_status *st)
{
    char *text = NULL;
    size_t from = 0, to = 0;
    int fd = open(path, O_RDONLY);
    struct stat sb;
    bool ok = fd >= 0;
    if (!ok)
        rf_fail(st, RF_EXIT_RUNTIME_ERROR, "cannot open '%s': %s", path, strerror(errno));
    else if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode))
        ok = rf_fail(st, RF_EXIT_RUNTIME_ERROR, "cannot read '%s' in shares: not a regular file", path);
    errno = 0;
    if (ok && !(share_start(fd, (size_t)sb.st_size, part, nparts, &from) &&
                share_start(fd, (size_t)sb.st_size, part + 1, nparts, &to)))
        ok = rf_fail(st, RF_EXIT_RUNTIME_ERROR, "cannot read '%s': %s", path, errno ? strerror(errno) : "short read");
    size_t len = to > from ? to - from : 0;
    if (ok) {
        int err = 0;
        text = read_range(fd, from, len, &err);
        if (err)
            ok = rf_fail(st, RF_EXIT_RUNTIME_ERROR, "cannot read '%s': %s", path,
                         err > 0 ? strerror(err) : "it changed while read");
    }
    if (fd >= 0)
        close(fd);
    /* Parsed first, its lines counted from 1, and only then the lines of
     * the shares before it asked for (every process asks, read or not: a
     * collective in a distributed run, whose first one waits for the
     * communicator to open, meanwhile); a share that failed is parsed
     * again from its line in the file, so that the message names it. */
    size_t had = t->nrows;
    bool parsed = ok && parse_facts(path, text, len, fmt, arity, types, needed, fingerprint, 1, t, st);
    uint64_t before = lines_before(ctx, ok ? newlines(text, text + len) : 0);
    if (ok && !parsed && before > 0) {
        rf_table_resize(t, had);
        rf_status_init(st);
        parsed = parse_facts(path, text, len, fmt, arity, types, needed, fingerprint,
                             before < (uint64_t)INT_MAX ? (int)before + 1 : INT_MAX, t, st);
    }
    free(text);
    return ok && parsed;
}
