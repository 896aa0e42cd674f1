/* The lexer (lexer.re, turned into C by re2c at build time). Token codes
 * are the TK_ constants Lemon generates from parser.y. */
#ifndef RF_LEXER_H
#define RF_LEXER_H

#include "../common/rf_diag.h"

typedef struct rf_token {
    int type;                 /* TK_..., 0 at the end of the input */
    const char *start;        /* into the source text */
    int len;
    rf_loc loc;
    bool unterminated;        /* TK_STRING without its closing quote */
} rf_token;

typedef struct rf_lexer {
    const rf_source *src;
    rf_diag *diag;
    const char *cur, *lim;    /* lim = text + len (a NUL is there) */
    const char *line_start;
    int line;
    rf_loc last_end;          /* just after the last token (line 0: none yet) */
} rf_lexer;

void rf_lexer_init(rf_lexer *lx, const rf_source *src, rf_diag *diag);
/* Scans the next token. Lexical errors (bad character, unclosed string or
 * comment, bad escape) are reported here and scanning goes on, so the
 * parser sees a plausible token stream. The end-of-input token (type 0) is
 * placed just after the last token, so that "unexpected end of input"
 * points where the missing text belongs, not past trailing blanks and
 * comments. */
void rf_lexer_next(rf_lexer *lx, rf_token *tok);

/* Decodes the body of a string token (without its quotes) whose escapes the
 * lexer already checked. Returns a malloc'd NUL-terminated copy. */
char *rf_lexer_decode_string(const char *body, size_t len, size_t *out_len);

#endif
