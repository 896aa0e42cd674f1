/* Source text -> syntax tree (lexer + Lemon parser). */
#ifndef RF_PARSE_H
#define RF_PARSE_H

#include "ast.h"

/* Expressions deeper than this are rejected, so that the recursive passes
 * after parsing cannot run out of stack. */
#define RF_MAX_EXPR_DEPTH 200

typedef struct rf_parse_state {
    ast_program *prog;       /* clauses are appended as they are reduced */
    rf_diag *diag;
    const rf_source *src;
    rf_loc cur_loc;          /* of the token being parsed */
    bool failed;             /* syntax error in the current clause */
    bool too_deep_reported;
} rf_parse_state;

/* Parses the whole source into prog, reporting syntax and lexical errors
 * (or, for text with control bytes, one "not a text file" error);
 * after a syntax error it skips the rest of the clause (one syntax error
 * per clause) and resumes at the next one. Returns true if no error was
 * reported. */
bool rf_parse(const rf_source *src, rf_diag *diag, ast_program *prog);

/* Is the source text (no control bytes but tab, LF, VT, FF, CR)? If not,
 * reports one "not a text file" error. Shared with the Soufflé front end. */
bool rf_parse_is_text(const rf_source *src, rf_diag *diag);

#endif
