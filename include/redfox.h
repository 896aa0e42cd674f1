/* libredfox: Red Fox as a C library (docs/api.md).
 *
 * Compile a Datalog program (LogiQL .lql, or the Soufflé dialect .dl) from
 * text or a file, give it facts from memory as typed columns, run it on the
 * CPU or the GPU, and read the outputs back: iterated value by value or
 * copied out a column at a time.
 *
 *   redfox_program *prog;
 *   redfox_program_new(&prog);
 *   if (redfox_program_compile_text(prog, "tc.lql", source) != REDFOX_OK)
 *       fputs(redfox_program_diagnostics(prog), stderr);
 *   redfox_run *run;
 *   redfox_run_new(prog, &run);
 *   redfox_column cols[2] = {{REDFOX_COLUMN_INT64, from}, {REDFOX_COLUMN_INT64, to}};
 *   redfox_run_add_facts(run, "edge", nedges, 2, cols);
 *   redfox_run_execute(run);
 *   redfox_run_result_rows(run, "path", &n);
 *   redfox_run_copy_int64(run, "path", 0, xs, n);
 *   redfox_run_free(run);
 *   redfox_program_free(prog);
 *
 * Rules of the interface:
 * - Handles are opaque. Every call returns a redfox_status; REDFOX_OK is 0.
 *   A failing call's message is redfox_last_error() (this thread's last
 *   failure) and also the handle's redfox_program_error/redfox_run_error.
 * - A NULL, freed or wrongly typed handle is REDFOX_ERROR_INVALID_HANDLE,
 *   found without touching the memory it points to (live handles are kept
 *   in a registry); a freed handle whose address a new handle has taken is
 *   the one case this cannot tell.
 * - The library never prints and never exits: out of memory in the
 *   calling thread is REDFOX_ERROR_OUT_OF_MEMORY (what the failed call had
 *   allocated is leaked); docs/api.md says what remains.
 * - Separate handles may be used from separate threads. One handle must
 *   not be used by two threads at once. Compiling and running take a
 *   process-wide lock (the string dictionary and the CPU thread pool are
 *   process-wide): runs in two threads are correct but take turns; adding
 *   facts and reading results do not take it.
 * - Strings are UTF-8 (any bytes but NUL); strings the library returns stay
 *   valid until the handle that returned them is freed or, for results,
 *   the run executes again. */
#ifndef REDFOX_H
#define REDFOX_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define REDFOX_VERSION_MAJOR 0
#define REDFOX_VERSION_MINOR 1

typedef enum redfox_status {
    REDFOX_OK = 0,
    REDFOX_ERROR_INVALID_HANDLE,    /* NULL, freed, or a handle of the other kind */
    REDFOX_ERROR_INVALID_ARGUMENT,  /* a NULL pointer, an unknown enum value, an index out of range */
    REDFOX_ERROR_STATE,             /* not now: compiling twice, a run of an uncompiled program,
                                       results before a successful run */
    REDFOX_ERROR_COMPILE,           /* the program has errors: redfox_program_diagnostics */
    REDFOX_ERROR_UNKNOWN_PREDICATE, /* no such predicate (or, for results, no such output) */
    REDFOX_ERROR_ARITY,             /* a number of columns unlike the predicate's */
    REDFOX_ERROR_TYPE,              /* a column kind the declared type does not take */
    REDFOX_ERROR_VALUE,             /* a value its type cannot hold, or text it cannot parse */
    REDFOX_ERROR_RUNTIME,           /* the run failed: division by zero, an unreadable input file,
                                       a functional dependency violated, --max-iterations */
    REDFOX_ERROR_BACKEND,           /* REDFOX_BACKEND_GPU and no usable GPU */
    REDFOX_ERROR_OUT_OF_MEMORY,
    REDFOX_ERROR_INTERNAL           /* the compiler produced an invalid program (a bug) */
} redfox_status;

/* "REDFOX_OK", "REDFOX_ERROR_ARITY", ...; "unknown status" otherwise. */
const char *redfox_status_name(redfox_status status);
/* The message of the calling thread's last failed call ("" before any). */
const char *redfox_last_error(void);
/* "0.1" */
const char *redfox_version(void);

typedef struct redfox_program redfox_program;
typedef struct redfox_run redfox_run;

/* ---- Programs ---- */

typedef enum redfox_language {
    REDFOX_LANGUAGE_AUTO = 0,   /* from the name: .dl is Soufflé, anything else LogiQL */
    REDFOX_LANGUAGE_LOGIQL,
    REDFOX_LANGUAGE_SOUFFLE
} redfox_language;

/* Declared types of predicate columns (docs/language.md). */
typedef enum redfox_type {
    REDFOX_TYPE_INT32 = 1,
    REDFOX_TYPE_INT64,
    REDFOX_TYPE_FLOAT64,
    REDFOX_TYPE_BOOL,
    REDFOX_TYPE_STRING,
    REDFOX_TYPE_DATE,           /* days since 1970-01-01 */
    REDFOX_TYPE_DECIMAL         /* exact, with a scale (fraction digits) 0..18 */
} redfox_type;

redfox_status redfox_program_new(redfox_program **out);
/* Frees the program (NULL: nothing). Runs made from it stay usable; the
 * memory goes with the last of them. */
void redfox_program_free(redfox_program *program);

/* Options, before compiling. */
redfox_status redfox_program_set_language(redfox_program *program, redfox_language language);
/* Soufflé programs: where relative .input files are read (Soufflé's -F;
 * default: the current folder). NULL resets. */
redfox_status redfox_program_set_fact_dir(redfox_program *program, const char *dir);
/* Kernel Weaver fusion (default on; 0 = `redfox run --no-fuse`). */
redfox_status redfox_program_set_fuse(redfox_program *program, int fuse);
/* Makes `predicate` an output too (`redfox run --print`); checked when
 * compiling. Without any output, a LogiQL program outputs every predicate
 * defined by rules; a Soufflé program its .output and .printsize ones. */
redfox_status redfox_program_add_output(redfox_program *program, const char *predicate);

/* Compiles source text; `name` (NULL: "<text>") is its file name in
 * messages, chooses the dialect under REDFOX_LANGUAGE_AUTO, and relative
 * LogiQL @input paths are taken from its folder. A program compiles once:
 * again is REDFOX_ERROR_STATE. Errors: REDFOX_ERROR_COMPILE with every
 * message in redfox_program_diagnostics. */
redfox_status redfox_program_compile_text(redfox_program *program, const char *name, const char *text);
redfox_status redfox_program_compile_file(redfox_program *program, const char *path);
/* The compiler's messages (file:line:col: error: ..., the source line, a
 * caret), "" when there are none. */
const char *redfox_program_diagnostics(const redfox_program *program);
/* The message of this handle's last failed call ("" if none; NULL for an
 * invalid handle). */
const char *redfox_program_error(const redfox_program *program);

/* The compiled program's predicates, in declaration order. */
redfox_status redfox_program_predicate_count(const redfox_program *program, int *count);
redfox_status redfox_program_predicate_name(const redfox_program *program, int index, const char **name);
redfox_status redfox_program_arity(const redfox_program *program, const char *predicate, int *arity);
/* decimal_scale may be NULL; it is 0 for types other than decimal. */
redfox_status redfox_program_column_type(const redfox_program *program, const char *predicate, int column,
                                         redfox_type *type, int *decimal_scale);
/* The outputs a run produces, in the order results are kept. */
redfox_status redfox_program_output_count(const redfox_program *program, int *count);
redfox_status redfox_program_output_name(const redfox_program *program, int index, const char **name);

/* ---- Runs: facts in, results out ---- */

typedef enum redfox_backend {
    REDFOX_BACKEND_AUTO = 0,    /* the GPU when one is usable, else the CPU */
    REDFOX_BACKEND_CPU,
    REDFOX_BACKEND_GPU
} redfox_backend;

/* Memory layouts of a column of facts. */
typedef enum redfox_column_kind {
    REDFOX_COLUMN_INT64 = 1,    /* const int64_t[] */
    REDFOX_COLUMN_FLOAT64,      /* const double[] */
    REDFOX_COLUMN_BOOL,         /* const uint8_t[]: 0 false, anything else true */
    REDFOX_COLUMN_STRING        /* const char *const []: NUL-terminated */
} redfox_column_kind;

/* Which kinds a declared type takes:
 *   int32, int64   INT64 (int32: in range), STRING (decimal text)
 *   float64        FLOAT64 (not NaN or infinite), STRING
 *   bool           BOOL, STRING ("true"/"false")
 *   string         STRING
 *   date           INT64 (days since 1970-01-01, years 1..9999), STRING (YYYY-MM-DD)
 *   decimal[s]     STRING (at most s fraction digits)
 * Text is parsed as a field of an input file (docs/design.md, "Input files"). */
typedef struct redfox_column {
    redfox_column_kind kind;
    const void *data;           /* nrows values */
} redfox_column;

/* A run of a compiled program (else REDFOX_ERROR_STATE). */
redfox_status redfox_run_new(redfox_program *program, redfox_run **out);
void redfox_run_free(redfox_run *run);

/* Appends nrows facts of `predicate` (ncols columns, its arity), copied:
 * the arrays may be reused once this returns. Duplicates are fine (facts
 * are a set). They replace the predicate's @input/.input file; its inline
 * facts stay. A predicate computed by rules and without an input takes no
 * facts (REDFOX_ERROR_STATE). Nothing is added when the call fails. */
redfox_status redfox_run_add_facts(redfox_run *run, const char *predicate, size_t nrows, int ncols,
                                   const redfox_column *columns);
/* Forgets every fact added (the results stay). */
redfox_status redfox_run_clear_facts(redfox_run *run);

redfox_status redfox_run_set_backend(redfox_run *run, redfox_backend backend);
/* Host worker threads (the CPU backend's kernels, reading input files);
 * 0 (default): one per core. At most 1024. */
redfox_status redfox_run_set_threads(redfox_run *run, int threads);
/* > 0: a recursive loop running more iterations fails the run (0: no limit). */
redfox_status redfox_run_set_max_iterations(redfox_run *run, uint64_t max_iterations);

/* Runs the program over the facts added (and its input files); replaces
 * any earlier results. On failure there are no results. */
redfox_status redfox_run_execute(redfox_run *run);
const char *redfox_run_error(const redfox_run *run);

/* After a successful execute. */
typedef struct redfox_stats {
    double seconds;             /* the whole run */
    uint64_t kernels_run;       /* kernels executed, loads included */
    uint64_t loop_iterations;   /* summed over the program's loops */
    uint64_t bytes_peak;        /* the backend's peak memory */
    uint64_t fused_run_as_members;
    uint64_t copies_moved;
} redfox_stats;
redfox_status redfox_run_stats(const redfox_run *run, redfox_stats *stats);
/* The `redfox run --stats` table (per-kernel times, rows, loops). */
redfox_status redfox_run_stats_text(const redfox_run *run, const char **text);
/* "cpu" or "gpu", and the device ("16 threads", "NVIDIA H100 ...") */
redfox_status redfox_run_backend_used(const redfox_run *run, const char **name, const char **device);

/* Results: each output predicate's rows, sorted as `redfox run` writes
 * them (typed order, or @order) and cut to its @limit. */
redfox_status redfox_run_result_rows(const redfox_run *run, const char *predicate, size_t *nrows);
/* One value. int64: int32, int64, bool (0/1), date (days) and decimal (the
 * value times 10^scale) columns; float64: float64 columns; string: string
 * columns. Another type is REDFOX_ERROR_TYPE. */
redfox_status redfox_run_get_int64(const redfox_run *run, const char *predicate, size_t row, int column,
                                   int64_t *value);
redfox_status redfox_run_get_float64(const redfox_run *run, const char *predicate, size_t row, int column,
                                     double *value);
redfox_status redfox_run_get_string(const redfox_run *run, const char *predicate, size_t row, int column,
                                    const char **value);
/* Any value as text, as the output files write it (strings unescaped):
 * copies at most cap-1 bytes and a NUL into buf (buf may be NULL when cap
 * is 0); *length (may be NULL) is the whole text's length. */
redfox_status redfox_run_format_value(const redfox_run *run, const char *predicate, size_t row, int column,
                                      char *buf, size_t cap, size_t *length);
/* A whole column into dst, which has room for `capacity` values (at least
 * the result's rows, else REDFOX_ERROR_INVALID_ARGUMENT); types as the
 * getters. */
redfox_status redfox_run_copy_int64(const redfox_run *run, const char *predicate, int column, int64_t *dst,
                                    size_t capacity);
redfox_status redfox_run_copy_float64(const redfox_run *run, const char *predicate, int column, double *dst,
                                      size_t capacity);
redfox_status redfox_run_copy_string(const redfox_run *run, const char *predicate, int column, const char **dst,
                                     size_t capacity);

#ifdef __cplusplus
}
#endif

#endif
