/* The front end: source text -> checked program.
 * Lexer (frontend/lexer.re, re2c) -> parser (frontend/parser.y, Lemon) ->
 * AST (ast.h) -> checks and lowering (check.c) -> rf_program.
 * Soufflé programs: souffle_lexer.re -> souffle_parser.y -> souffle.c,
 * which translates them into the same AST (souffle.h).
 * All errors are reported through the rf_diag as file:line:col messages;
 * on any error the result is NULL. */
#ifndef RF_FRONTEND_H
#define RF_FRONTEND_H

#include "program.h"

/* The dialect follows the file name: `.dl` is Soufflé's (docs/souffle.md),
 * anything else LogiQL (docs/language.md). */
bool rf_is_souffle_path(const char *path);

/* Which dialect a source is in: by its name (the default), or forced
 * (libredfox compiles text whose name need not end in .dl). */
typedef enum rf_dialect { RF_DIALECT_BY_NAME = 0, RF_DIALECT_LOGIQL, RF_DIALECT_SOUFFLE } rf_dialect;

typedef struct rf_compile_options {
    /* Soufflé programs: the folder relative .input file names are read
     * from (Soufflé's -F; NULL: the current folder). */
    const char *fact_dir;
    rf_dialect dialect;
} rf_compile_options;

/* Takes ownership of src. */
rf_program *rf_compile_source(rf_source *src, rf_diag *diag);
rf_program *rf_compile_source_opts(rf_source *src, const rf_compile_options *opts, rf_diag *diag);
/* Reads the file; an unreadable file is a diagnostic without location. */
rf_program *rf_compile_file(const char *path, rf_diag *diag);
rf_program *rf_compile_file_opts(const char *path, const rf_compile_options *opts, rf_diag *diag);
/* For tests: compiles a string as if it were file `name`. */
rf_program *rf_compile_string(const char *name, const char *text, rf_diag *diag);

#endif
