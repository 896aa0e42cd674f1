/* The front end's entry points: parse, check, stratify. */
#include "check.h"
#include "frontend.h"
#include "parse.h"
#include "souffle.h"

#include <stdlib.h>
#include <string.h>

bool rf_is_souffle_path(const char *path)
{
    size_t n = path ? strlen(path) : 0;
    return n >= 3 && strcmp(path + n - 3, ".dl") == 0;
}

rf_program *rf_compile_source(rf_source *src, rf_diag *diag)
{
    return rf_compile_source_opts(src, NULL, diag);
}

rf_program *rf_compile_source_opts(rf_source *src, const rf_compile_options *opts, rf_diag *diag)
{
    rf_dialect dialect = opts ? opts->dialect : RF_DIALECT_BY_NAME;
    if (dialect == RF_DIALECT_SOUFFLE || (dialect == RF_DIALECT_BY_NAME && rf_is_souffle_path(src->path)))
        return rf_souffle_compile(src, opts ? opts->fact_dir : NULL, diag);
    int errors_before = diag->errors;
    rf_program *prog = rf_calloc(1, sizeof *prog);
    prog->source = src;
    ast_program ast = { 0, 0, NULL };
    /* After a syntax error the tree has holes; checking it would mostly
     * report their consequences, so only lexical and syntax errors are
     * shown then. */
    if (rf_parse(src, diag, &ast) && rf_check(prog, &ast, diag))
        rf_stratify(prog, diag);
    ast_program_free(&ast);
    if (diag->errors != errors_before) {
        rf_program_free(prog);
        return NULL;
    }
    return prog;
}

rf_program *rf_compile_file(const char *path, rf_diag *diag)
{
    return rf_compile_file_opts(path, NULL, diag);
}

rf_program *rf_compile_file_opts(const char *path, const rf_compile_options *opts, rf_diag *diag)
{
    rf_status st;
    rf_status_init(&st);
    size_t len = 0;
    char *text = rf_read_file(path, &len, &st);
    if (!text) {
        rf_diag_error(diag, (rf_loc){ NULL, 0, 0, 0 }, "%s", st.message);
        return NULL;
    }
    rf_source *src = rf_calloc(1, sizeof *src);
    src->path = rf_strdup(path);
    src->text = text;
    src->len = len;
    return rf_compile_source_opts(src, opts, diag);
}

rf_program *rf_compile_string(const char *name, const char *text, rf_diag *diag)
{
    rf_source *src = rf_calloc(1, sizeof *src);
    src->path = rf_strdup(name);
    src->len = strlen(text);
    src->text = rf_strndup(text, src->len);
    return rf_compile_source(src, diag);
}
