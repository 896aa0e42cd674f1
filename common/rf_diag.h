/* Compile-time diagnostics: `file:line:col: error: message`, then the source
 * line and a caret under the offending text. Errors are collected (the
 * front end keeps going after the first) and counted.
 *
 * The printed column counts characters: UTF-8 code points, a byte that is
 * not UTF-8 counting as one, a tab as one. Nothing printed holds a control
 * character: in the file name, the message and the echoed line, C0 controls
 * (but a tab in the echoed line), DEL, C1 controls and bytes that are not
 * UTF-8 are written as \xNN. */
#ifndef RF_DIAG_H
#define RF_DIAG_H

#include "rf_common.h"
#include <stdio.h>

typedef struct rf_source {
    char *path;      /* as given on the command line */
    char *text;      /* whole file, NUL-terminated */
    size_t len;
} rf_source;

typedef struct rf_loc {
    const rf_source *src;
    int line, col;   /* 1-based; line 0 = no location; col counts bytes */
    int len;         /* bytes of the offending text, >= 1 for the caret run */
} rf_loc;

/* Where a compiled command comes from, so that a run-time error can name
 * it like a compile error: `where` is "prog.lql:5:1" (a rule, or the
 * declaration of a checked predicate), `what` says what stands there
 * ("rule q(z) <- p(x, y), ..."). Both NULL when unknown. Plain strings, as
 * they outlive the source text (they travel in .rfx files). */
typedef struct rf_origin {
    char *where;
    char *what;
} rf_origin;

rf_origin rf_origin_dup(rf_origin o);
void rf_origin_release(rf_origin *o);

typedef struct rf_diag {
    FILE *out;       /* stderr normally; tests use a memstream */
    int errors;
    int max_errors;  /* stop printing after this many (default 50) */
} rf_diag;

void rf_diag_init(rf_diag *d, FILE *out);
void rf_diag_error(rf_diag *d, rf_loc loc, const char *fmt, ...) RF_PRINTF(3, 4);
void rf_diag_note(rf_diag *d, rf_loc loc, const char *fmt, ...) RF_PRINTF(3, 4);
/* The column printed for loc: characters before loc.col's byte, plus one. */
int rf_diag_column(rf_loc loc);

#endif
