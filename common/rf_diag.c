#include "rf_diag.h"

#include <stdlib.h>
#include <string.h>

void rf_diag_init(rf_diag *d, FILE *out)
{
    d->out = out;
    d->errors = 0;
    d->max_errors = 50;
}

/* One character of text at p (< end): a whole UTF-8 sequence, or a single
 * byte that does not start one. Returns its length in bytes and sets *cp to
 * its code point (-1 for a byte that is not UTF-8); *escape is set for what
 * must not reach a terminal as it is: C0 controls, DEL, the C1 controls
 * U+0080..U+009F and bytes that are not UTF-8. */
static size_t next_char(const unsigned char *p, const unsigned char *end, bool *escape, long *cp)
{
    unsigned c = p[0];
    if (c < 0x80) {
        *escape = c < 0x20 || c == 0x7f;
        *cp = (long)c;
        return 1;
    }
    size_t n = 0;
    unsigned lo = 0x80, hi = 0xbf;   /* range of the second byte */
    if (c >= 0xc2 && c <= 0xdf)
        n = 2;
    else if (c >= 0xe0 && c <= 0xef) {
        n = 3;
        lo = c == 0xe0 ? 0xa0 : 0x80;  /* no overlong forms */
        hi = c == 0xed ? 0x9f : 0xbf;  /* no surrogates */
    } else if (c >= 0xf0 && c <= 0xf4) {
        n = 4;
        lo = c == 0xf0 ? 0x90 : 0x80;
        hi = c == 0xf4 ? 0x8f : 0xbf;  /* nothing past U+10FFFF */
    }
    bool ok = n > 0 && (size_t)(end - p) >= n && p[1] >= lo && p[1] <= hi;
    for (size_t i = 2; ok && i < n; i++)
        ok = (p[i] & 0xc0) == 0x80;
    if (!ok) {
        *escape = true;
        *cp = -1;
        return 1;
    }
    long v = (long)(c & (0xffu >> (n + 1)));
    for (size_t i = 1; i < n; i++)
        v = v << 6 | (long)(p[i] & 0x3f);
    *cp = v;
    *escape = v < 0xa0;
    return n;
}

/* Terminal columns of a printable code point: 0 for the common combining
 * marks and zero-width characters, 2 for East Asian wide and fullwidth
 * characters and emoji (after Markus Kuhn's wcwidth), 1 otherwise. An
 * approximation: the caret lines up in common cases. */
static int char_width(long cp)
{
    if ((cp >= 0x300 && cp <= 0x36f) || (cp >= 0x1ab0 && cp <= 0x1aff) ||
        (cp >= 0x1dc0 && cp <= 0x1dff) || (cp >= 0x200b && cp <= 0x200f) ||
        (cp >= 0x20d0 && cp <= 0x20ff) || (cp >= 0xfe00 && cp <= 0xfe0f) ||
        (cp >= 0xfe20 && cp <= 0xfe2f) || cp == 0xfeff)
        return 0;
    if ((cp >= 0x1100 && cp <= 0x115f) || cp == 0x2329 || cp == 0x232a ||
        (cp >= 0x2e80 && cp <= 0xa4cf && cp != 0x303f) || (cp >= 0xac00 && cp <= 0xd7a3) ||
        (cp >= 0xf900 && cp <= 0xfaff) || (cp >= 0xfe10 && cp <= 0xfe19) ||
        (cp >= 0xfe30 && cp <= 0xfe6f) || (cp >= 0xff00 && cp <= 0xff60) ||
        (cp >= 0xffe0 && cp <= 0xffe6) || (cp >= 0x1f300 && cp <= 0x1f64f) ||
        (cp >= 0x1f900 && cp <= 0x1f9ff) || (cp >= 0x20000 && cp <= 0x2fffd) ||
        (cp >= 0x30000 && cp <= 0x3fffd))
        return 2;
    return 1;
}

/* Writes text with what next_char flags as \xNN, byte by byte; a tab is
 * kept as it is where keep_tab (the echoed source line). */
static void put_text(FILE *out, const char *text, size_t len, bool keep_tab)
{
    const unsigned char *p = (const unsigned char *)text, *end = p + len;
    while (p < end) {
        bool escape;
        long cp;
        size_t n = next_char(p, end, &escape, &cp);
        if (escape && !(keep_tab && *p == '\t'))
            for (size_t i = 0; i < n; i++)
                fprintf(out, "\\x%02x", p[i]);
        else
            fwrite(p, 1, n, out);
        p += n;
    }
}

/* The bounds of line `line` (1-based) of src's text, without its '\n';
 * false if there is no such text. */
static bool find_line(const rf_source *src, int line, const char **start, const char **eol)
{
    if (!src || !src->text || line <= 0)
        return false;
    const char *p = src->text, *end = p + src->len;
    for (int l = 1; l < line && p < end; l++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        p = nl ? nl + 1 : end;
    }
    const char *e = memchr(p, '\n', (size_t)(end - p));
    *start = p;
    *eol = e ? e : end;
    return true;
}

int rf_diag_column(rf_loc loc)
{
    const char *start, *eol;
    if (loc.col <= 0 || !find_line(loc.src, loc.line, &start, &eol))
        return loc.col;
    size_t off = (size_t)loc.col - 1, linelen = (size_t)(eol - start);
    const unsigned char *p = (const unsigned char *)start, *end = (const unsigned char *)eol;
    const unsigned char *at = p + (off < linelen ? off : linelen);
    int col = 1;
    while (p < at) {
        bool escape;
        long cp;
        p += next_char(p, end, &escape, &cp);
        col++;
    }
    if (off > linelen)   /* past the end of the line: one column a byte */
        col += (int)(off - linelen);
    return col;
}

/* Prints the source line holding loc and a caret run under the offending
 * text. Control characters and bytes that are not UTF-8 are shown as \xNN
 * (four columns wide), a CR that ends the line is left out; tabs are kept,
 * in the caret line too, so the caret lines up in a terminal whatever its
 * tab stops; wide characters take two columns of the caret line. */
static void show_line(FILE *out, rf_loc loc)
{
    const char *start, *eol;
    if (!find_line(loc.src, loc.line, &start, &eol))
        return;
    if (eol > start && eol[-1] == '\r')
        eol--;
    put_text(out, start, (size_t)(eol - start), true);
    fputc('\n', out);
    const unsigned char *p = (const unsigned char *)start, *end = (const unsigned char *)eol;
    size_t linelen = (size_t)(end - p);
    size_t off = loc.col > 0 ? (size_t)loc.col - 1 : 0;
    size_t len = loc.len > 0 ? (size_t)loc.len : 1;
    const unsigned char *at = p + (off < linelen ? off : linelen);
    const unsigned char *run_end = (size_t)(end - at) > len ? at + len : end;
    bool caret = false;
    while (p < end && p < run_end) {
        bool escape;
        long cp;
        size_t n = next_char(p, end, &escape, &cp);
        int width = escape ? 4 * (int)n : char_width(cp);
        if (p + n <= at) {   /* before the offending text */
            if (*p == '\t')
                fputc('\t', out);
            else
                fprintf(out, "%*s", width, "");
        } else if (*p == '\t') {
            fputc(caret ? '\t' : '^', out);
            caret = true;
        } else {
            for (int i = 0; i < width || !caret; i++) {
                fputc(caret ? '~' : '^', out);
                caret = true;
            }
        }
        p += n;
    }
    if (!caret)   /* at the end of the line */
        fputc('^', out);
    fputc('\n', out);
}

static void report(rf_diag *d, const char *kind, rf_loc loc, const char *fmt, va_list ap)
{
    if (loc.src) {
        put_text(d->out, loc.src->path, strlen(loc.src->path), false);
        if (loc.line > 0)
            fprintf(d->out, ":%d:%d", loc.line, rf_diag_column(loc));
        fprintf(d->out, ": %s: ", kind);
    } else {
        fprintf(d->out, "redfox: %s: ", kind);
    }
    va_list aq;
    va_copy(aq, ap);
    int n = vsnprintf(NULL, 0, fmt, aq);
    va_end(aq);
    if (n > 0) {
        char *msg = rf_malloc((size_t)n + 1);
        vsnprintf(msg, (size_t)n + 1, fmt, ap);
        put_text(d->out, msg, (size_t)n, false);
        free(msg);
    }
    fputc('\n', d->out);
    show_line(d->out, loc);
}

void rf_diag_error(rf_diag *d, rf_loc loc, const char *fmt, ...)
{
    d->errors++;
    if (d->errors > d->max_errors)
        return;
    va_list ap;
    va_start(ap, fmt);
    report(d, "error", loc, fmt, ap);
    va_end(ap);
    if (d->errors == d->max_errors)
        fprintf(d->out, "redfox: too many errors, stopping here\n");
}

void rf_diag_note(rf_diag *d, rf_loc loc, const char *fmt, ...)
{
    if (d->errors > d->max_errors)
        return;
    va_list ap;
    va_start(ap, fmt);
    report(d, "note", loc, fmt, ap);
    va_end(ap);
}

rf_origin rf_origin_dup(rf_origin o)
{
    rf_origin d = {o.where ? rf_strdup(o.where) : NULL, o.what ? rf_strdup(o.what) : NULL};
    return d;
}

void rf_origin_release(rf_origin *o)
{
    free(o->where);
    free(o->what);
    o->where = o->what = NULL;
}
