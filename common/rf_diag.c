#include "rf_diag.h"

#include <string.h>

void rf_diag_init(rf_diag *d, FILE *out)
{
    d->out = out;
    d->errors = 0;
    d->max_errors = 50;
}

/* Prints the source line holding loc and a caret run under the offending
 * text; tabs are kept so the caret lines up in a terminal. */
static void show_line(FILE *out, rf_loc loc)
{
    if (!loc.src || !loc.src->text || loc.line <= 0)
        return;
    const char *p = loc.src->text, *end = p + loc.src->len;
    for (int line = 1; line < loc.line && p < end; p++)
        if (*p == '\n')
            line++;
    const char *eol = p;
    while (eol < end && *eol != '\n')
        eol++;
    fprintf(out, "%.*s\n", (int)(eol - p), p);
    int col = loc.col > 0 ? loc.col : 1;
    for (int i = 1; i < col && p + i - 1 < eol; i++)
        fputc(p[i - 1] == '\t' ? '\t' : ' ', out);
    int len = loc.len > 0 ? loc.len : 1;
    if (col - 1 + len > (int)(eol - p) && (int)(eol - p) >= col)
        len = (int)(eol - p) - col + 1;
    fputc('^', out);
    for (int i = 1; i < len; i++)
        fputc('~', out);
    fputc('\n', out);
}

static void report(rf_diag *d, const char *kind, rf_loc loc, const char *fmt, va_list ap)
{
    if (loc.src && loc.line > 0)
        fprintf(d->out, "%s:%d:%d: %s: ", loc.src->path, loc.line, loc.col, kind);
    else if (loc.src)
        fprintf(d->out, "%s: %s: ", loc.src->path, kind);
    else
        fprintf(d->out, "redfox: %s: ", kind);
    vfprintf(d->out, fmt, ap);
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
