/* redfox_program: source text -> a compiled program (include/redfox.h).
 * The compile is the command line's: frontend, then pipeline/ (plan,
 * Harmony IR, fusion), with the diagnostics captured instead of printed. */
#include "internal.h"

#include "../pipeline/pipeline.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK_PROGRAM(p)                                                                                   \
    do {                                                                                                   \
        if (!rfl_is_live((p), RFL_PROGRAM))                                                                \
            return rfl_bad_handle(__func__, "program");                                                    \
    } while (0)

static redfox_status new_program(void *ctx)
{
    redfox_program *p = rf_calloc(1, sizeof *p);
    p->fuse = true;
    p->diagnostics = rf_strdup("");
    rfl_register(p, RFL_PROGRAM);
    *(redfox_program **)ctx = p;
    return REDFOX_OK;
}

RFL_API redfox_status redfox_program_new(redfox_program **out)
{
    if (!out)
        return rfl_fail(NULL, REDFOX_ERROR_INVALID_ARGUMENT, "redfox_program_new: out is NULL");
    *out = NULL;
    return rfl_guarded(false, new_program, out, NULL);
}

void rfl_program_destroy(redfox_program *p)
{
    for (size_t i = 0; i < p->extra_outputs.len; i++)
        free(p->extra_outputs.items[i]);
    RF_VEC_FREE(p->extra_outputs);
    for (int i = 0; i < p->noutputs; i++)
        free(p->outputs[i]);
    free(p->outputs);
    if (p->hp)
        rf_hir_free(p->hp);
    if (p->prog)
        rf_program_free(p->prog);
    free(p->fact_dir);
    free(p->name);
    free(p->diagnostics);
    free(p);
}

RFL_API void redfox_program_free(redfox_program *p)
{
    if (!rfl_is_live(p, RFL_PROGRAM))
        return;
    rfl_unregister(p);
    rfl_registry_lock();
    bool last = p->runs == 0;
    p->freed = true;
    rfl_registry_unlock();
    if (last)
        rfl_program_destroy(p);
}

static redfox_status not_after_compile(redfox_program *p, const char *function)
{
    if (p->compiled)
        return rfl_fail(&p->error, REDFOX_ERROR_STATE, "%s: the program is already compiled", function);
    rfl_clear(&p->error);
    return REDFOX_OK;
}

RFL_API redfox_status redfox_program_set_language(redfox_program *p, redfox_language language)
{
    CHECK_PROGRAM(p);
    if (language != REDFOX_LANGUAGE_AUTO && language != REDFOX_LANGUAGE_LOGIQL && language != REDFOX_LANGUAGE_SOUFFLE)
        return rfl_fail(&p->error, REDFOX_ERROR_INVALID_ARGUMENT, "redfox_program_set_language: unknown language %d",
                        (int)language);
    redfox_status s = not_after_compile(p, __func__);
    if (s == REDFOX_OK)
        p->dialect = language == REDFOX_LANGUAGE_LOGIQL    ? RF_DIALECT_LOGIQL
                     : language == REDFOX_LANGUAGE_SOUFFLE ? RF_DIALECT_SOUFFLE
                                                           : RF_DIALECT_BY_NAME;
    return s;
}

typedef struct string_option {
    redfox_program *p;
    const char *value;
} string_option;

static redfox_status set_fact_dir(void *ctx)
{
    string_option *o = ctx;
    free(o->p->fact_dir);
    o->p->fact_dir = o->value ? rf_strdup(o->value) : NULL;
    return REDFOX_OK;
}

RFL_API redfox_status redfox_program_set_fact_dir(redfox_program *p, const char *dir)
{
    CHECK_PROGRAM(p);
    redfox_status s = not_after_compile(p, __func__);
    string_option o = {p, dir};
    return s != REDFOX_OK ? s : rfl_guarded(false, set_fact_dir, &o, &p->error);
}

RFL_API redfox_status redfox_program_set_fuse(redfox_program *p, int fuse)
{
    CHECK_PROGRAM(p);
    redfox_status s = not_after_compile(p, __func__);
    if (s == REDFOX_OK)
        p->fuse = fuse != 0;
    return s;
}

static redfox_status add_output(void *ctx)
{
    string_option *o = ctx;
    RF_PUSH(o->p->extra_outputs, rf_strdup(o->value));
    return REDFOX_OK;
}

RFL_API redfox_status redfox_program_add_output(redfox_program *p, const char *predicate)
{
    CHECK_PROGRAM(p);
    if (!predicate)
        return rfl_fail(&p->error, REDFOX_ERROR_INVALID_ARGUMENT, "redfox_program_add_output: predicate is NULL");
    redfox_status s = not_after_compile(p, __func__);
    string_option o = {p, predicate};
    return s != REDFOX_OK ? s : rfl_guarded(false, add_output, &o, &p->error);
}

/* ---- Compiling ---- */
typedef struct compile_job {
    redfox_program *p;
    const char *name;
    const char *text;        /* NULL: read the file `name` */
} compile_job;

/* After the front end: outputs as `redfox run` makes them (--print ones,
 * a Soufflé program's .printsize ones, else the default), then the back
 * half of the compiler. */
static redfox_status finish_compile(redfox_program *p)
{
    rf_program *prog = p->prog;
    for (size_t i = 0; i < p->extra_outputs.len; i++) {
        int k = rf_program_find_pred(prog, p->extra_outputs.items[i]);
        if (k < 0)
            return rfl_fail(&p->error, REDFOX_ERROR_UNKNOWN_PREDICATE,
                            "redfox_program_add_output: the program has no predicate '%s'", p->extra_outputs.items[i]);
        prog->preds[k].is_output = true;
    }
    for (int i = 0; i < prog->nsouffle_outputs; i++) {
        int k = rf_program_find_pred(prog, prog->souffle_outputs[i].pred);
        if (k >= 0)
            prog->preds[k].is_output = true;
    }
    rf_pipeline_default_outputs(prog);
    rf_status st;
    rf_status_init(&st);
    if (!(p->hp = rf_pipeline_lower(prog, p->fuse, RF_JOIN_AUTO, &st)))
        return rfl_fail(&p->error, REDFOX_ERROR_INTERNAL, "internal error: %s", st.message);
    p->outputs = rf_calloc((size_t)prog->npreds + 1, sizeof *p->outputs);
    for (int i = 0; i < prog->npreds; i++)
        if (prog->preds[i].is_output)
            p->outputs[p->noutputs++] = rf_strdup(prog->preds[i].name);
    return REDFOX_OK;
}

static redfox_status compile(void *ctx)
{
    compile_job *job = ctx;
    redfox_program *p = job->p;
    char *messages = NULL;
    size_t messages_len = 0;
    FILE *diag_out = open_memstream(&messages, &messages_len);
    if (!diag_out)
        return rfl_fail(&p->error, REDFOX_ERROR_OUT_OF_MEMORY, "cannot capture the compiler's messages");
    rf_diag diag;
    rf_diag_init(&diag, diag_out);
    rf_compile_options co = {.fact_dir = p->fact_dir, .dialect = p->dialect};
    rf_program *prog;
    if (job->text) {
        rf_source *src = rf_calloc(1, sizeof *src);
        src->path = rf_strdup(job->name);
        src->len = strlen(job->text);
        src->text = rf_strndup(job->text, src->len);
        prog = rf_compile_source_opts(src, &co, &diag);
    } else {
        prog = rf_compile_file_opts(job->name, &co, &diag);
    }
    fclose(diag_out);
    free(p->diagnostics);
    p->diagnostics = messages ? messages : rf_strdup("");
    if (prog && diag.errors > 0) {
        rf_program_free(prog);
        prog = NULL;
    }
    free(p->name);
    p->name = rf_strdup(job->name);
    if (!prog)
        return rfl_fail(&p->error, REDFOX_ERROR_COMPILE, "%s: %d error%s (redfox_program_diagnostics has them)",
                        job->name, diag.errors, diag.errors == 1 ? "" : "s");
    p->prog = prog;
    redfox_status s = finish_compile(p);
    if (s != REDFOX_OK) {
        if (p->hp)
            rf_hir_free(p->hp);
        p->hp = NULL;
        rf_program_free(p->prog);
        p->prog = NULL;
        return s;
    }
    p->compiled = true;
    rfl_clear(&p->error);
    return REDFOX_OK;
}

RFL_API redfox_status redfox_program_compile_text(redfox_program *p, const char *name, const char *text)
{
    CHECK_PROGRAM(p);
    if (!text)
        return rfl_fail(&p->error, REDFOX_ERROR_INVALID_ARGUMENT, "redfox_program_compile_text: text is NULL");
    redfox_status s = not_after_compile(p, __func__);
    compile_job job = {p, name ? name : "<text>", text};
    return s != REDFOX_OK ? s : rfl_guarded(true, compile, &job, &p->error);
}

RFL_API redfox_status redfox_program_compile_file(redfox_program *p, const char *path)
{
    CHECK_PROGRAM(p);
    if (!path)
        return rfl_fail(&p->error, REDFOX_ERROR_INVALID_ARGUMENT, "redfox_program_compile_file: path is NULL");
    redfox_status s = not_after_compile(p, __func__);
    compile_job job = {p, path, NULL};
    return s != REDFOX_OK ? s : rfl_guarded(true, compile, &job, &p->error);
}

RFL_API const char *redfox_program_diagnostics(const redfox_program *p)
{
    return rfl_is_live(p, RFL_PROGRAM) ? p->diagnostics : NULL;
}

RFL_API const char *redfox_program_error(const redfox_program *p)
{
    return rfl_is_live(p, RFL_PROGRAM) ? p->error.message : NULL;
}

/* ---- What the compiled program holds ---- */
static redfox_status need_compiled(const redfox_program *p, const char *function)
{
    if (!p->compiled)
        return rfl_fail((rfl_error *)&p->error, REDFOX_ERROR_STATE, "%s: the program is not compiled", function);
    return REDFOX_OK;
}

redfox_status rfl_find_pred(const redfox_program *p, const char *pred, rfl_error *on, int *index)
{
    if (!pred)
        return rfl_fail(on, REDFOX_ERROR_INVALID_ARGUMENT, "the predicate name is NULL");
    int k = rf_program_find_pred(p->prog, pred);
    if (k < 0)
        return rfl_fail(on, REDFOX_ERROR_UNKNOWN_PREDICATE, "the program has no predicate '%s'", pred);
    *index = k;
    return REDFOX_OK;
}

#define CHECK_COMPILED(p, out)                                                                             \
    do {                                                                                                   \
        CHECK_PROGRAM(p);                                                                                  \
        if (!(out))                                                                                        \
            return rfl_fail((rfl_error *)&(p)->error, REDFOX_ERROR_INVALID_ARGUMENT, "%s: %s is NULL",    \
                            __func__, #out);                                                               \
        redfox_status s_ = need_compiled(p, __func__);                                                     \
        if (s_ != REDFOX_OK)                                                                               \
            return s_;                                                                                     \
    } while (0)

RFL_API redfox_status redfox_program_predicate_count(const redfox_program *p, int *count)
{
    CHECK_COMPILED(p, count);
    *count = p->prog->npreds;
    return REDFOX_OK;
}

RFL_API redfox_status redfox_program_predicate_name(const redfox_program *p, int index, const char **name)
{
    CHECK_COMPILED(p, name);
    if (index < 0 || index >= p->prog->npreds)
        return rfl_fail((rfl_error *)&p->error, REDFOX_ERROR_INVALID_ARGUMENT,
                        "redfox_program_predicate_name: index %d is not in 0..%d", index, p->prog->npreds - 1);
    *name = p->prog->preds[index].name;
    return REDFOX_OK;
}

RFL_API redfox_status redfox_program_arity(const redfox_program *p, const char *predicate, int *arity)
{
    CHECK_COMPILED(p, arity);
    int k = -1;
    redfox_status s = rfl_find_pred(p, predicate, (rfl_error *)&p->error, &k);
    if (s == REDFOX_OK)
        *arity = p->prog->preds[k].arity;
    return s;
}

RFL_API redfox_status redfox_program_column_type(const redfox_program *p, const char *predicate, int column,
                                                 redfox_type *type, int *decimal_scale)
{
    CHECK_COMPILED(p, type);
    int k = -1;
    redfox_status s = rfl_find_pred(p, predicate, (rfl_error *)&p->error, &k);
    if (s != REDFOX_OK)
        return s;
    const rf_pred *pd = &p->prog->preds[k];
    if (column < 0 || column >= pd->arity)
        return rfl_fail((rfl_error *)&p->error, REDFOX_ERROR_INVALID_ARGUMENT,
                        "redfox_program_column_type: '%s' has %d columns, not a column %d", predicate, pd->arity,
                        column);
    rf_type t = pd->types[column];
    int scale = 0;
    switch (t) {
    case RF_TYPE_INT32: *type = REDFOX_TYPE_INT32; break;
    case RF_TYPE_INT64: *type = REDFOX_TYPE_INT64; break;
    case RF_TYPE_FLOAT64: *type = REDFOX_TYPE_FLOAT64; break;
    case RF_TYPE_BOOL: *type = REDFOX_TYPE_BOOL; break;
    case RF_TYPE_STRING: *type = REDFOX_TYPE_STRING; break;
    case RF_TYPE_DATE: *type = REDFOX_TYPE_DATE; break;
    default:
        *type = REDFOX_TYPE_DECIMAL;
        scale = rf_decimal_scale(t);
        break;
    }
    if (decimal_scale)
        *decimal_scale = scale;
    return REDFOX_OK;
}

RFL_API redfox_status redfox_program_output_count(const redfox_program *p, int *count)
{
    CHECK_COMPILED(p, count);
    *count = p->noutputs;
    return REDFOX_OK;
}

RFL_API redfox_status redfox_program_output_name(const redfox_program *p, int index, const char **name)
{
    CHECK_COMPILED(p, name);
    if (index < 0 || index >= p->noutputs)
        return rfl_fail((rfl_error *)&p->error, REDFOX_ERROR_INVALID_ARGUMENT,
                        "redfox_program_output_name: index %d is not in 0..%d", index, p->noutputs - 1);
    *name = p->outputs[index];
    return REDFOX_OK;
}
