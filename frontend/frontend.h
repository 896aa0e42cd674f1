/* The front end: source text -> checked program.
 * Lexer (frontend/lexer.re, re2c) -> parser (frontend/parser.y, Lemon) ->
 * AST (ast.h) -> checks and lowering (check.c) -> rf_program.
 * All errors are reported through the rf_diag as file:line:col messages;
 * on any error the result is NULL. */
#ifndef RF_FRONTEND_H
#define RF_FRONTEND_H

#include "program.h"

/* Takes ownership of src. */
rf_program *rf_compile_source(rf_source *src, rf_diag *diag);
/* Reads the file; an unreadable file is a diagnostic without location. */
rf_program *rf_compile_file(const char *path, rf_diag *diag);
/* For tests: compiles a string as if it were file `name`. */
rf_program *rf_compile_string(const char *name, const char *text, rf_diag *diag);

#endif
