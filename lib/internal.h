/* libredfox's internals shared by its files: the handles' structures, the
 * registry of live handles, error recording and the guard that turns out
 * of memory into a status. Not installed. */
#ifndef RFL_INTERNAL_H
#define RFL_INTERNAL_H

#include "../include/redfox.h"

#include "../common/rf_common.h"
#include "../common/rf_table.h"
#include "../frontend/frontend.h"
#include "../harmony_ir/hir.h"

#include <stdbool.h>

/* Exported from the shared library: everything else stays hidden
 * (-fvisibility=hidden, and the version script lib/redfox.map). */
#define RFL_API __attribute__((visibility("default")))

typedef enum rfl_kind { RFL_PROGRAM = 1, RFL_RUN = 2 } rfl_kind;

/* ---- Registry (support.c): a handle is valid while registered. ---- */
void rfl_register(const void *handle, rfl_kind kind);
void rfl_unregister(const void *handle);
/* Whether handle is a live one of this kind; never dereferences it. */
bool rfl_is_live(const void *handle, rfl_kind kind);
/* A mutex for the few fields two handles share (a program's count of
 * runs). */
void rfl_registry_lock(void);
void rfl_registry_unlock(void);

/* ---- Errors ---- */
typedef struct rfl_error {
    char message[1024];
} rfl_error;

/* Records a failure in the thread's last error and in `on` (may be NULL);
 * returns status. */
redfox_status rfl_fail(rfl_error *on, redfox_status status, const char *fmt, ...) RF_PRINTF(3, 4);
/* A call succeeded: the handle's message is cleared (the thread's stays). */
void rfl_clear(rfl_error *on);
/* REDFOX_ERROR_INVALID_HANDLE for `what` ("program", "run"). */
redfox_status rfl_bad_handle(const char *function, const char *what);

/* ---- The guard: the engine lock, and out of memory as a status ----
 * Runs fn(ctx) holding the process-wide engine lock (when `engine`), with
 * the calling thread's out-of-memory jump armed: an allocation failure
 * inside comes back as REDFOX_ERROR_OUT_OF_MEMORY (recorded in `on`). */
redfox_status rfl_guarded(bool engine, redfox_status (*fn)(void *ctx), void *ctx, rfl_error *on);

/* ---- Handles ---- */
struct redfox_program {
    rfl_error error;
    rf_dialect dialect;
    char *fact_dir;
    bool fuse;
    RF_VEC(char *) extra_outputs;      /* redfox_program_add_output */
    bool compiled;
    bool freed;                        /* redfox_program_free called; runs remain */
    int runs;                          /* live runs holding it (registry lock) */
    char *name;                        /* of the source, for traces and messages */
    char *diagnostics;                 /* "" or the compiler's messages */
    rf_program *prog;                  /* the checked program: predicates, types */
    rf_hprogram *hp;                   /* what runs */
    int noutputs;
    char **outputs;                    /* [noutputs] names, program order */
};

/* Frees the memory of a program no handle uses any more. */
void rfl_program_destroy(redfox_program *p);
/* The predicate's index in p->prog, or a failure recorded on `on`. */
redfox_status rfl_find_pred(const redfox_program *p, const char *pred, rfl_error *on, int *index);

#endif
