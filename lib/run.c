/* redfox_run: facts from memory in, a run on a backend, results out
 * (include/redfox.h). Facts are kept as words of their declared types,
 * strings as the handle's own copies (interned only when the run starts,
 * under the engine lock: the string dictionary is process-wide). Results
 * are the handle's copies, strings included, so reading them needs no
 * lock. */
#include "internal.h"

#include "../primitives/rf_prims.h"
#include "../runtime/runtime.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Facts of one predicate: string columns hold indexes into `strings`. */
typedef struct fact_set {
    int pred;                /* index in the program's predicates */
    rf_table rows;
    RF_VEC(char *) strings;
} fact_set;

/* One output's rows, copied out of the run. */
typedef struct result {
    const char *pred;        /* the program's name */
    int arity;
    const rf_type *types;    /* the program's */
    size_t nrows;
    rf_word **cols;          /* [arity][nrows] */
    const char ***strings;   /* [arity]: for string columns the texts, else NULL */
    char **text;             /* [arity]: where those texts are kept */
} result;

struct redfox_run {
    rfl_error error;
    redfox_program *program;
    RF_VEC(fact_set) facts;
    redfox_backend backend;
    int threads;
    uint64_t max_iterations;
    bool has_results;
    RF_VEC(result) results;
    redfox_stats stats;
    char *stats_text;
    char backend_name[16];
    char device[256];
};

#define CHECK_RUN(r)                                                                                       \
    do {                                                                                                   \
        if (!rfl_is_live((r), RFL_RUN))                                                                    \
            return rfl_bad_handle(__func__, "run");                                                        \
    } while (0)

/* ---- Handles ---- */
typedef struct new_job {
    redfox_program *program;
    redfox_run **out;
} new_job;

static redfox_status new_run(void *ctx)
{
    new_job *job = ctx;
    redfox_run *r = rf_calloc(1, sizeof *r);
    r->program = job->program;
    rfl_registry_lock();
    job->program->runs++;
    rfl_registry_unlock();
    rfl_register(r, RFL_RUN);
    *job->out = r;
    return REDFOX_OK;
}

RFL_API redfox_status redfox_run_new(redfox_program *program, redfox_run **out)
{
    if (!out)
        return rfl_fail(NULL, REDFOX_ERROR_INVALID_ARGUMENT, "redfox_run_new: out is NULL");
    *out = NULL;
    if (!rfl_is_live(program, RFL_PROGRAM))
        return rfl_bad_handle(__func__, "program");
    if (!program->compiled)
        return rfl_fail(&program->error, REDFOX_ERROR_STATE, "redfox_run_new: the program is not compiled");
    new_job job = {program, out};
    return rfl_guarded(false, new_run, &job, &program->error);
}

static void free_results(redfox_run *r)
{
    for (size_t i = 0; i < r->results.len; i++) {
        result *res = &r->results.items[i];
        for (int c = 0; c < res->arity; c++) {
            free(res->cols[c]);
            free(res->strings[c]);
            free(res->text[c]);
        }
        free(res->cols);
        free(res->strings);
        free(res->text);
    }
    RF_VEC_FREE(r->results);
    r->has_results = false;
}

static void free_facts(redfox_run *r)
{
    for (size_t i = 0; i < r->facts.len; i++) {
        fact_set *fs = &r->facts.items[i];
        rf_table_free(&fs->rows);
        for (size_t k = 0; k < fs->strings.len; k++)
            free(fs->strings.items[k]);
        RF_VEC_FREE(fs->strings);
    }
    RF_VEC_FREE(r->facts);
}

RFL_API void redfox_run_free(redfox_run *r)
{
    if (!rfl_is_live(r, RFL_RUN))
        return;
    rfl_unregister(r);
    free_results(r);
    free_facts(r);
    free(r->stats_text);
    redfox_program *p = r->program;
    rfl_registry_lock();
    bool last = --p->runs == 0 && p->freed;
    rfl_registry_unlock();
    if (last)
        rfl_program_destroy(p);
    free(r);
}

RFL_API const char *redfox_run_error(const redfox_run *r) { return rfl_is_live(r, RFL_RUN) ? r->error.message : NULL; }

/* ---- Facts ---- */
static const char *kind_name(redfox_column_kind k)
{
    switch (k) {
    case REDFOX_COLUMN_INT64: return "INT64";
    case REDFOX_COLUMN_FLOAT64: return "FLOAT64";
    case REDFOX_COLUMN_BOOL: return "BOOL";
    case REDFOX_COLUMN_STRING: return "STRING";
    }
    return "unknown";
}

/* Whether a declared type takes a column kind (include/redfox.h). */
static bool type_takes(rf_type t, redfox_column_kind k)
{
    if (k == REDFOX_COLUMN_STRING)
        return true;
    switch (t) {
    case RF_TYPE_INT32: case RF_TYPE_INT64: case RF_TYPE_DATE: return k == REDFOX_COLUMN_INT64;
    case RF_TYPE_FLOAT64: return k == REDFOX_COLUMN_FLOAT64;
    case RF_TYPE_BOOL: return k == REDFOX_COLUMN_BOOL;
    default: return false;   /* string and decimal: text only */
    }
}

typedef struct facts_job {
    redfox_run *r;
    const char *pred;
    size_t nrows;
    int ncols;
    const redfox_column *cols;
} facts_job;

/* The days of 0001-01-01 and 9999-12-31, the dates a date column holds. */
static void date_bounds(int64_t *lo, int64_t *hi)
{
    const char *why;
    rf_date_parse("0001-01-01", 10, lo, &why);
    rf_date_parse("9999-12-31", 10, hi, &why);
}

/* Column c of the job into dst (nrows words); strings copied into fs. */
static redfox_status convert_column(facts_job *job, const rf_pred *pd, int c, fact_set *fs, rf_word *dst)
{
    redfox_run *r = job->r;
    rf_type t = pd->types[c];
    const redfox_column *col = &job->cols[c];
    int64_t lo, hi;
    date_bounds(&lo, &hi);
    for (size_t i = 0; i < job->nrows; i++) {
        switch (col->kind) {
        case REDFOX_COLUMN_INT64: {
            int64_t v = ((const int64_t *)col->data)[i];
            if (t == RF_TYPE_INT32 && (v < INT32_MIN || v > INT32_MAX))
                return rfl_fail(&r->error, REDFOX_ERROR_VALUE, "'%s' column %d row %zu: %lld is out of range for int32",
                                pd->name, c, i, (long long)v);
            if (t == RF_TYPE_DATE && (v < lo || v > hi))
                return rfl_fail(&r->error, REDFOX_ERROR_VALUE,
                                "'%s' column %d row %zu: day %lld is not a date of the years 1..9999", pd->name, c, i,
                                (long long)v);
            dst[i] = rf_word_from_int(v);
            break;
        }
        case REDFOX_COLUMN_FLOAT64: {
            double d = ((const double *)col->data)[i];
            if (isnan(d) || isinf(d))
                return rfl_fail(&r->error, REDFOX_ERROR_VALUE, "'%s' column %d row %zu: %s is not a float64 value",
                                pd->name, c, i, isnan(d) ? "NaN" : "an infinity");
            dst[i] = rf_word_from_double(d);
            break;
        }
        case REDFOX_COLUMN_BOOL:
            dst[i] = ((const uint8_t *)col->data)[i] != 0;
            break;
        case REDFOX_COLUMN_STRING: {
            const char *s = ((const char *const *)col->data)[i];
            if (!s)
                return rfl_fail(&r->error, REDFOX_ERROR_VALUE, "'%s' column %d row %zu: the string is NULL", pd->name,
                                c, i);
            if (t == RF_TYPE_STRING) {
                dst[i] = fs->strings.len;
                RF_PUSH(fs->strings, rf_strdup(s));
                break;
            }
            const char *why = "bad value";
            if (!rf_value_parse(t, s, strlen(s), &dst[i], &why)) {
                if (strncmp(why, "has ", 4) == 0)   /* "12.345 has more than 2 decimal places" */
                    return rfl_fail(&r->error, REDFOX_ERROR_VALUE, "'%s' column %d row %zu: %s %s", pd->name, c, i, s,
                                    why);
                return rfl_fail(&r->error, REDFOX_ERROR_VALUE, "'%s' column %d row %zu: %s: '%s'", pd->name, c, i, why,
                                s);
            }
            break;
        }
        }
    }
    return REDFOX_OK;
}

static redfox_status add_facts(void *ctx)
{
    facts_job *job = ctx;
    redfox_run *r = job->r;
    const rf_program *prog = r->program->prog;
    int k = -1;
    redfox_status s = rfl_find_pred(r->program, job->pred, &r->error, &k);
    if (s != REDFOX_OK)
        return s;
    const rf_pred *pd = &prog->preds[k];
    if (pd->has_rules && pd->nfacts == 0 && !pd->input_path)
        return rfl_fail(&r->error, REDFOX_ERROR_STATE,
                        "'%s' is computed by rules and has no input: it takes no facts (give it an input, or put "
                        "the facts in a predicate of their own)", pd->name);
    if (job->ncols != pd->arity)
        return rfl_fail(&r->error, REDFOX_ERROR_ARITY, "'%s' has %d column%s, the facts given %d", pd->name, pd->arity,
                        pd->arity == 1 ? "" : "s", job->ncols);
    if (job->ncols > 0 && !job->cols)
        return rfl_fail(&r->error, REDFOX_ERROR_INVALID_ARGUMENT, "redfox_run_add_facts: columns is NULL");
    for (int c = 0; c < job->ncols; c++) {
        redfox_column_kind kind = job->cols[c].kind;
        if (kind != REDFOX_COLUMN_INT64 && kind != REDFOX_COLUMN_FLOAT64 && kind != REDFOX_COLUMN_BOOL &&
            kind != REDFOX_COLUMN_STRING)
            return rfl_fail(&r->error, REDFOX_ERROR_INVALID_ARGUMENT, "'%s' column %d: unknown column kind %d",
                            pd->name, c, (int)kind);
        if (!type_takes(pd->types[c], kind))
            return rfl_fail(&r->error, REDFOX_ERROR_TYPE, "'%s' column %d is %s: it does not take a %s column",
                            pd->name, c, rf_type_name(pd->types[c]), kind_name(kind));
        if (job->nrows > 0 && !job->cols[c].data)
            return rfl_fail(&r->error, REDFOX_ERROR_INVALID_ARGUMENT, "'%s' column %d: data is NULL", pd->name, c);
    }
    fact_set *fs = NULL;
    for (size_t i = 0; i < r->facts.len && !fs; i++)
        if (r->facts.items[i].pred == k)
            fs = &r->facts.items[i];
    if (!fs) {
        fact_set fresh = {.pred = k};
        rf_table_init(&fresh.rows, pd->arity);
        RF_PUSH(r->facts, fresh);
        fs = &r->facts.items[r->facts.len - 1];
    }
    /* Converted into room past the table's rows, which become rows only
     * when every value is good (or out of memory left them half done). */
    size_t at = fs->rows.nrows, strings_at = fs->strings.len;
    if (job->nrows > SIZE_MAX - at)
        rf_out_of_memory(SIZE_MAX);
    rf_table_reserve(&fs->rows, at + job->nrows);
    for (int c = 0; c < pd->arity && s == REDFOX_OK; c++)
        s = convert_column(job, pd, c, fs, fs->rows.cols[c] + at);
    if (s != REDFOX_OK) {
        for (size_t i = strings_at; i < fs->strings.len; i++)
            free(fs->strings.items[i]);
        fs->strings.len = strings_at;
        return s;
    }
    /* A predicate of no columns holds at most the one empty row. */
    fs->rows.nrows = pd->arity == 0 ? (at + job->nrows > 0) : at + job->nrows;
    rfl_clear(&r->error);
    return REDFOX_OK;
}

RFL_API redfox_status redfox_run_add_facts(redfox_run *r, const char *predicate, size_t nrows, int ncols,
                                           const redfox_column *columns)
{
    CHECK_RUN(r);
    facts_job job = {r, predicate, nrows, ncols, columns};
    return rfl_guarded(false, add_facts, &job, &r->error);
}

RFL_API redfox_status redfox_run_clear_facts(redfox_run *r)
{
    CHECK_RUN(r);
    free_facts(r);
    rfl_clear(&r->error);
    return REDFOX_OK;
}

/* ---- Options ---- */
RFL_API redfox_status redfox_run_set_backend(redfox_run *r, redfox_backend backend)
{
    CHECK_RUN(r);
    if (backend != REDFOX_BACKEND_AUTO && backend != REDFOX_BACKEND_CPU && backend != REDFOX_BACKEND_GPU)
        return rfl_fail(&r->error, REDFOX_ERROR_INVALID_ARGUMENT, "redfox_run_set_backend: unknown backend %d",
                        (int)backend);
    r->backend = backend;
    rfl_clear(&r->error);
    return REDFOX_OK;
}

RFL_API redfox_status redfox_run_set_threads(redfox_run *r, int threads)
{
    CHECK_RUN(r);
    if (threads < 0 || threads > 1024)
        return rfl_fail(&r->error, REDFOX_ERROR_INVALID_ARGUMENT,
                        "redfox_run_set_threads: %d is not a number of threads from 0 (one per core) to 1024",
                        threads);
    r->threads = threads;
    rfl_clear(&r->error);
    return REDFOX_OK;
}

RFL_API redfox_status redfox_run_set_max_iterations(redfox_run *r, uint64_t max_iterations)
{
    CHECK_RUN(r);
    r->max_iterations = max_iterations;
    rfl_clear(&r->error);
    return REDFOX_OK;
}

/* ---- Executing ---- */

/* The runtime's result callback: a copy of each output's rows. */
static bool keep_result(void *ctx, const char *pred, const rf_table *rows, const rf_type *types, rf_status *st)
{
    redfox_run *r = ctx;
    int k = rf_program_find_pred(r->program->prog, pred);
    if (k < 0)
        return rf_fail(st, RF_EXIT_RUNTIME_ERROR, "internal error: output '%s' is no predicate of the program", pred);
    result res = {
        .pred = r->program->prog->preds[k].name,
        .arity = rows->arity,
        .types = r->program->prog->preds[k].types,
        .nrows = rows->nrows,
        .cols = rf_calloc((size_t)rows->arity + 1, sizeof(rf_word *)),
        .strings = rf_calloc((size_t)rows->arity + 1, sizeof(const char **)),
        .text = rf_calloc((size_t)rows->arity + 1, sizeof(char *)),
    };
    (void)types;   /* the same as the program's */
    for (int c = 0; c < rows->arity; c++) {
        res.cols[c] = rf_malloc(rf_mul_size(rows->nrows, sizeof(rf_word)));
        if (rows->nrows)
            memcpy(res.cols[c], rows->cols[c], rows->nrows * sizeof(rf_word));
        if (res.types[c] != RF_TYPE_STRING)
            continue;
        size_t bytes = 0;
        for (size_t i = 0; i < rows->nrows; i++)
            bytes += rf_str_len(rows->cols[c][i]) + 1;
        char *text = res.text[c] = rf_malloc(bytes);
        res.strings[c] = rf_malloc(rf_mul_size(rows->nrows, sizeof(const char *)));
        for (size_t i = 0; i < rows->nrows; i++) {
            size_t n = rf_str_len(rows->cols[c][i]);
            memcpy(text, rf_str_get(rows->cols[c][i]), n);
            text[n] = '\0';
            res.strings[c][i] = text;
            text += n + 1;
        }
    }
    RF_PUSH(r->results, res);
    return true;
}

static redfox_status status_of(const rf_status *st)
{
    switch (st->code) {
    case RF_EXIT_OUT_OF_MEMORY: return REDFOX_ERROR_OUT_OF_MEMORY;
    case RF_EXIT_USAGE: return REDFOX_ERROR_INVALID_ARGUMENT;
    default: return REDFOX_ERROR_RUNTIME;
    }
}

/* The backend the run asks for, made as `redfox run --backend` makes it. */
static rf_backend *make_backend(redfox_run *r, redfox_status *s)
{
    rf_backend *be = NULL;
    if (r->backend != REDFOX_BACKEND_CPU) {
        rf_status gst;
        rf_status_init(&gst);
        be = rf_backend_gpu_new(&gst);
        if (!be && r->backend == REDFOX_BACKEND_GPU) {
            *s = rfl_fail(&r->error, REDFOX_ERROR_BACKEND, "%s", gst.message);
            return NULL;
        }
        if (be)   /* the GPU backend's host work: reading inputs, copies */
            rf_prims_set_threads(r->threads);
        /* auto on the GPU: kernels of a few rows on the host, as the
         * command line does (runtime/backend_hybrid.c) */
        const char *host_kernels = getenv("RF_HOST_KERNELS");
        if (be && r->backend == REDFOX_BACKEND_AUTO && !(host_kernels && strcmp(host_kernels, "off") == 0))
            be = rf_backend_hybrid_new(be, rf_backend_cpu_new(r->threads));
    }
    return be ? be : rf_backend_cpu_new(r->threads);
}

static redfox_status execute(void *ctx)
{
    redfox_run *r = ctx;
    const redfox_program *p = r->program;
    free_results(r);
    memset(&r->stats, 0, sizeof r->stats);
    free(r->stats_text);
    r->stats_text = NULL;
    /* Facts as the runtime takes them: strings interned. */
    rf_table *tables = rf_calloc(r->facts.len + 1, sizeof *tables);
    rf_memory_input *inputs = rf_calloc(r->facts.len + 1, sizeof *inputs);
    for (size_t i = 0; i < r->facts.len; i++) {
        const fact_set *fs = &r->facts.items[i];
        const rf_pred *pd = &p->prog->preds[fs->pred];
        rf_table_copy(&tables[i], &fs->rows);
        for (int c = 0; c < pd->arity; c++)
            if (pd->types[c] == RF_TYPE_STRING)
                for (size_t row = 0; row < tables[i].nrows; row++) {
                    const char *s = fs->strings.items[fs->rows.cols[c][row]];
                    tables[i].cols[c][row] = rf_str_intern(s, strlen(s));
                }
        inputs[i] = (rf_memory_input){pd->name, &tables[i]};
    }
    redfox_status s = REDFOX_OK;
    rf_backend *be = make_backend(r, &s);
    char *stats_text = NULL;
    size_t stats_len = 0;
    FILE *stats_out = be ? open_memstream(&stats_text, &stats_len) : NULL;
    if (be && !stats_out)
        s = rfl_fail(&r->error, REDFOX_ERROR_OUT_OF_MEMORY, "cannot capture the run's statistics");
    if (s == REDFOX_OK) {
        rf_run_options ro = {
            .backend = be,
            .out = stats_out,   /* nothing is printed with a result callback; just in case */
            .err = stats_out,
            .stats = true,
            .progress = RF_PROGRESS_NONE,
            .max_iterations = (size_t)r->max_iterations,
            .program_name = p->name,
            .nmemory_inputs = (int)r->facts.len,
            .memory_inputs = inputs,
            .result_callback = keep_result,
            .result_ctx = r,
        };
        rf_run_info info;
        memset(&info, 0, sizeof info);
        rf_status st;
        rf_status_init(&st);
        if (rf_run_ex(p->hp, &ro, &info, &st)) {
            r->has_results = true;
            r->stats = (redfox_stats){info.seconds, info.kernels_run, info.loop_iterations, info.bytes_peak,
                                      info.fused_run_as_members, info.copies_moved};
        } else {
            free_results(r);
            s = rfl_fail(&r->error, status_of(&st), "%s", st.message);
        }
        snprintf(r->backend_name, sizeof r->backend_name, "%s", be->name);
        snprintf(r->device, sizeof r->device, "%s", be->device);
    }
    if (stats_out) {
        fclose(stats_out);
        r->stats_text = stats_text;
    }
    if (be)
        be->destroy(be);
    for (size_t i = 0; i < r->facts.len; i++)
        rf_table_free(&tables[i]);
    free(tables);
    free(inputs);
    if (s == REDFOX_OK)
        rfl_clear(&r->error);
    return s;
}

RFL_API redfox_status redfox_run_execute(redfox_run *r)
{
    CHECK_RUN(r);
    return rfl_guarded(true, execute, r, &r->error);
}

/* ---- Results ---- */
static redfox_status need_results(const redfox_run *r, const char *function, void *out)
{
    if (!out)
        return rfl_fail((rfl_error *)&r->error, REDFOX_ERROR_INVALID_ARGUMENT, "%s: the output pointer is NULL",
                        function);
    if (!r->has_results)
        return rfl_fail((rfl_error *)&r->error, REDFOX_ERROR_STATE, "%s: no results (the run has not executed, or "
                        "it failed)", function);
    return REDFOX_OK;
}

#define CHECK_RESULTS(r, out)                                                                              \
    do {                                                                                                   \
        CHECK_RUN(r);                                                                                      \
        redfox_status s_ = need_results(r, __func__, (void *)(out));                                      \
        if (s_ != REDFOX_OK)                                                                               \
            return s_;                                                                                     \
    } while (0)

RFL_API redfox_status redfox_run_stats(const redfox_run *r, redfox_stats *stats)
{
    CHECK_RESULTS(r, stats);
    *stats = r->stats;
    return REDFOX_OK;
}

RFL_API redfox_status redfox_run_stats_text(const redfox_run *r, const char **text)
{
    CHECK_RESULTS(r, text);
    *text = r->stats_text ? r->stats_text : "";
    return REDFOX_OK;
}

RFL_API redfox_status redfox_run_backend_used(const redfox_run *r, const char **name, const char **device)
{
    CHECK_RESULTS(r, name);
    *name = r->backend_name;
    if (device)
        *device = r->device;
    return REDFOX_OK;
}

static redfox_status find_result(const redfox_run *r, const char *pred, const result **out)
{
    if (!pred)
        return rfl_fail((rfl_error *)&r->error, REDFOX_ERROR_INVALID_ARGUMENT, "the predicate name is NULL");
    for (size_t i = 0; i < r->results.len; i++)
        if (strcmp(r->results.items[i].pred, pred) == 0) {
            *out = &r->results.items[i];
            return REDFOX_OK;
        }
    return rfl_fail((rfl_error *)&r->error, REDFOX_ERROR_UNKNOWN_PREDICATE,
                    "'%s' is not an output of the program (redfox_program_add_output makes it one)", pred);
}

RFL_API redfox_status redfox_run_result_rows(const redfox_run *r, const char *predicate, size_t *nrows)
{
    CHECK_RESULTS(r, nrows);
    const result *res = NULL;
    redfox_status s = find_result(r, predicate, &res);
    if (s == REDFOX_OK)
        *nrows = res->nrows;
    return s;
}

typedef enum getter { GET_INT64, GET_FLOAT64, GET_STRING, GET_ANY } getter;

static bool getter_takes(getter g, rf_type t)
{
    switch (g) {
    case GET_INT64: return t != RF_TYPE_FLOAT64 && t != RF_TYPE_STRING;
    case GET_FLOAT64: return t == RF_TYPE_FLOAT64;
    case GET_STRING: return t == RF_TYPE_STRING;
    case GET_ANY: return true;
    }
    return false;
}

/* The result and column a getter reads (row checked when check_row). */
static redfox_status locate(const redfox_run *r, const char *function, const char *pred, size_t row, bool check_row,
                            int col, getter g, const result **out)
{
    static const char *const getter_names[] = {"int64", "float64", "string", "any"};
    const result *res = NULL;
    redfox_status s = find_result(r, pred, &res);
    if (s != REDFOX_OK)
        return s;
    rfl_error *on = (rfl_error *)&r->error;
    if (col < 0 || col >= res->arity)
        return rfl_fail(on, REDFOX_ERROR_INVALID_ARGUMENT, "%s: '%s' has %d column%s, not a column %d", function, pred,
                        res->arity, res->arity == 1 ? "" : "s", col);
    if (check_row && row >= res->nrows)
        return rfl_fail(on, REDFOX_ERROR_INVALID_ARGUMENT, "%s: '%s' has %zu rows, not a row %zu", function, pred,
                        res->nrows, row);
    if (!getter_takes(g, res->types[col]))
        return rfl_fail(on, REDFOX_ERROR_TYPE, "%s: '%s' column %d is %s, not read as %s", function, pred, col,
                        rf_type_name(res->types[col]), getter_names[g]);
    *out = res;
    return REDFOX_OK;
}

RFL_API redfox_status redfox_run_get_int64(const redfox_run *r, const char *predicate, size_t row, int column,
                                           int64_t *value)
{
    CHECK_RESULTS(r, value);
    const result *res = NULL;
    redfox_status s = locate(r, __func__, predicate, row, true, column, GET_INT64, &res);
    if (s == REDFOX_OK)
        *value = rf_word_to_int(res->cols[column][row]);
    return s;
}

RFL_API redfox_status redfox_run_get_float64(const redfox_run *r, const char *predicate, size_t row, int column,
                                             double *value)
{
    CHECK_RESULTS(r, value);
    const result *res = NULL;
    redfox_status s = locate(r, __func__, predicate, row, true, column, GET_FLOAT64, &res);
    if (s == REDFOX_OK)
        *value = rf_word_to_double(res->cols[column][row]);
    return s;
}

RFL_API redfox_status redfox_run_get_string(const redfox_run *r, const char *predicate, size_t row, int column,
                                            const char **value)
{
    CHECK_RESULTS(r, value);
    const result *res = NULL;
    redfox_status s = locate(r, __func__, predicate, row, true, column, GET_STRING, &res);
    if (s == REDFOX_OK)
        *value = res->strings[column][row];
    return s;
}

RFL_API redfox_status redfox_run_format_value(const redfox_run *r, const char *predicate, size_t row, int column,
                                              char *buf, size_t cap, size_t *length)
{
    CHECK_RUN(r);
    redfox_status s = need_results(r, __func__, buf || cap == 0 ? (void *)r : NULL);
    if (s != REDFOX_OK)
        return s;
    const result *res = NULL;
    if ((s = locate(r, __func__, predicate, row, true, column, GET_ANY, &res)) != REDFOX_OK)
        return s;
    size_t n;
    if (res->types[column] == RF_TYPE_STRING) {
        const char *text = res->strings[column][row];
        n = strlen(text);
        if (cap > 0) {
            size_t k = n < cap - 1 ? n : cap - 1;
            memcpy(buf, text, k);
            buf[k] = '\0';
        }
    } else {
        char small[64];
        n = (size_t)rf_value_format(res->types[column], res->cols[column][row], small, sizeof small);
        if (cap > 0)
            snprintf(buf, cap, "%s", small);
    }
    if (length)
        *length = n;
    return REDFOX_OK;
}

static redfox_status copy_column(const redfox_run *r, const char *function, const char *pred, int col, getter g,
                                 void *dst, size_t capacity)
{
    const result *res = NULL;
    redfox_status s = locate(r, function, pred, 0, false, col, g, &res);
    if (s != REDFOX_OK)
        return s;
    if (capacity < res->nrows)
        return rfl_fail((rfl_error *)&r->error, REDFOX_ERROR_INVALID_ARGUMENT,
                        "%s: '%s' has %zu rows, room was given for %zu", function, pred, res->nrows, capacity);
    for (size_t i = 0; i < res->nrows; i++) {
        rf_word w = res->cols[col][i];
        if (g == GET_INT64)
            ((int64_t *)dst)[i] = rf_word_to_int(w);
        else if (g == GET_FLOAT64)
            ((double *)dst)[i] = rf_word_to_double(w);
        else
            ((const char **)dst)[i] = res->strings[col][i];
    }
    return REDFOX_OK;
}

RFL_API redfox_status redfox_run_copy_int64(const redfox_run *r, const char *predicate, int column, int64_t *dst,
                                            size_t capacity)
{
    CHECK_RESULTS(r, dst);
    return copy_column(r, __func__, predicate, column, GET_INT64, dst, capacity);
}

RFL_API redfox_status redfox_run_copy_float64(const redfox_run *r, const char *predicate, int column, double *dst,
                                              size_t capacity)
{
    CHECK_RESULTS(r, dst);
    return copy_column(r, __func__, predicate, column, GET_FLOAT64, dst, capacity);
}

RFL_API redfox_status redfox_run_copy_string(const redfox_run *r, const char *predicate, int column,
                                             const char **dst, size_t capacity)
{
    CHECK_RESULTS(r, dst);
    return copy_column(r, __func__, predicate, column, GET_STRING, dst, capacity);
}
